"""
test/apply_cases/cases_images.py -- apply cases about partial row images
(binlog_row_image MINIMAL and NOBLOB, issue #10): throwaway MariaDB
instances with those settings, tables synced with snapshot() and changed
through apply() and then continuous mode, compared row for row with MariaDB.

  row-image-minimal   inserts that name few columns (the target's defaults
                      fill the others: constants of every kind, explicit
                      NULLs kept), consecutive inserts with different column
                      sets (the multi-insert buffer), updates of some columns,
                      key updates, deletes, a composite key, a keyless table;
                      the status view's row image and notice, no WARNING;
                      clear errors where a partial image cannot find or make a
                      row (a chosen key the before image lacks, overwrite of a
                      missing row, a keyless target of a keyed table)
  row-image-noblob    BLOB/TEXT columns left out of images: inserts without
                      them, updates of other columns (blobs kept), updates of
                      blobs, key updates, deletes

Instances: MariaDB "ac-minimal" (BLF_APPLY_MINIMAL_PORT, 3441) and
"ac-noblob" (BLF_APPLY_NOBLOB_PORT, 3442), destroyed at the end of each case
unless BLF_APPLY_KEEP=1.
"""

import datetime
import os
import time

from common import MARIADB_SH, RUN, sh, wait_for     # noqa: F401
from harness import (KEEP, Deadline, Fail, Source, check, gtid_seq, log, mdb,
                     mdb_fresh, mx, q, q1, short, status)

MINIMAL_PORT = int(os.environ.get('BLF_APPLY_MINIMAL_PORT', '3441'))
NOBLOB_PORT = int(os.environ.get('BLF_APPLY_NOBLOB_PORT', '3442'))


def start_instance(name, port, *args):
    """A fresh throwaway MariaDB with extra mariadbd arguments."""
    sh(['bash', MARIADB_SH, 'start', '--fresh', '--name', name, '--port', str(port), '--'] + list(args))
    return mdb(socket=os.path.join(RUN, 'mariadb-%s.sock' % name))


def destroy_instance(name):
    if not KEEP:
        sh(['bash', MARIADB_SH, 'destroy', '--name', name], check_rc=False)


def pg_rows(conn, table, exprs, order):
    return q(conn, 'SELECT %s FROM %s ORDER BY %s' % (', '.join(exprs), table, order))


def mdb_rows(m, table, exprs, order):
    return [tuple(r) for r in mx(m, 'SELECT %s FROM %s ORDER BY %s' % (', '.join(exprs), table, order))]


def same_rows(conn, m, table, cols, order, what):
    """cols: (name, MariaDB expression, PostgreSQL expression) each."""
    got = pg_rows(conn, table, [c[2] for c in cols], order)
    exp = mdb_rows(m, table, [c[1] for c in cols], order)
    if got != exp:
        diff = [(g, e) for g, e in zip(got, exp) if g != e][:3]
        raise Fail('%s: %s differs: PostgreSQL %d rows, MariaDB %d; first differences (pg, mariadb) %s; '
                   'columns %s' % (what, table, len(got), len(exp), short(diff, 1200),
                                   [c[0] for c in cols]))
    return len(got)


def wait_applied(src, m, what, timeout=60):
    """Continuous mode: wait until every transaction m committed is applied."""
    target = gtid_seq(mx(m, 'SELECT @@last_gtid')[0][0])
    d = Deadline(timeout)
    while gtid_seq(src.applied_gtid()) < target:
        if d.expired():
            raise Fail('%s: continuous apply reached GTID %s, MariaDB is at sequence %d after %ss '
                       '(status: %s)' % (what, src.applied_gtid(), target, timeout,
                                         short(status(src.conn, src.name), 800)))
        time.sleep(0.2)


def skip_row_change(conn, name, op):
    """skip_change() until it skipped a change of op (a transaction's BEGIN
    comes first)."""
    for _ in range(4):
        r = q(conn, 'SELECT * FROM binlog_fdw.skip_change(%s)', (name,))
        log('skip_change(%s): %s' % (name, r))
        if r and r[0][1] == op:
            return
    raise Fail('skip_change(%s) did not reach a change of %s' % (name, op))


def go_continuous(conn, src):
    q(conn, 'SELECT binlog_fdw.stop(%s)', (src.name,))
    q(conn, "ALTER SERVER %s OPTIONS (ADD continuous 'true')" % src.name)
    src.start()
    wait_for('apply worker of %s' % src.name,
             lambda: (status(conn, src.name) or {}).get('apply_pid'), 30)


def leave_continuous(conn, src):
    q(conn, 'SELECT binlog_fdw.stop(%s)', (src.name,))
    q(conn, "ALTER SERVER %s OPTIONS (SET continuous 'false')" % src.name)
    src.start()


def check_no_warning_in_log(conn, since_marker):
    """The server log has no WARNING after since_marker (a text logged by us)."""
    path = os.path.join(RUN, 'pg-main', 'postgresql.log')
    try:
        with open(path, errors='replace') as f:
            text = f.read()
    except OSError:
        log('no server log at %s: WARNING check skipped' % path)
        return
    tail = text[text.rfind(since_marker):] if since_marker in text else ''
    bad = [ln for ln in tail.splitlines() if 'WARNING:' in ln]
    check(not bad, 'unexpected WARNING lines in the server log: %s' % short(bad, 600))


# ---------------------------------------------------------------------------
# MINIMAL

T_COLS = [
    ('id', 'id', 'id'),
    ('a', 'a', 'a'),
    ('b', 'b', 'b'),
    ('s', 's', 's'),
    ('e', 'e', 'e'),
    ('st', 'st', "array_to_string(st, ',')"),
    ('d', "DATE_FORMAT(d, '%Y-%m-%d')", "to_char(d, 'YYYY-MM-DD')"),
    ('dtm', "DATE_FORMAT(dtm, '%Y-%m-%d %H:%i:%s.%f')", "to_char(dtm, 'YYYY-MM-DD HH24:MI:SS.US')"),
    ('tm', "TIME_FORMAT(tm, '%H:%i:%s')", "to_char(tm, 'HH24:MI:SS')"),
    ('bt', "LPAD(BIN(bt), 5, '0')", 'bt::text'),
    ('flag', 'flag', 'flag'),
    ('amt', 'CAST(amt AS CHAR)', 'amt::text'),
    ('ts', "DATE_FORMAT(ts, '%Y-%m-%d %H:%i:%s.%f')",
     "to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')"),
    ('u', 'u', 'u'),
    ('c', 'c', 'c'),
    ('up', "DATE_FORMAT(up, '%Y-%m-%d %H:%i:%s.%f')",
     "to_char(up AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')"),
    ('txt', 'txt', 'txt'),
    ('n', 'n', 'n'),
]
K_COLS = [('a', 'a', 'a'), ('b', 'b', 'b'), ('v', 'v', 'v'), ('w', 'w', 'w')]
NK_COLS = [('a', 'a', 'a'), ('b', 'b', 'b')]


def minimal_tables(m, db):
    mdb_fresh(m, db)
    mx(m, """CREATE TABLE %s.t (
        id INT PRIMARY KEY,
        a INT DEFAULT 5,
        b INT,
        s VARCHAR(20) DEFAULT 'it''s',
        e ENUM('x', 'y', 'z') DEFAULT 'y',
        st SET('p', 'q', 'r') DEFAULT 'p,r',
        d DATE DEFAULT '2020-01-02',
        dtm DATETIME(6) DEFAULT '2021-02-03 04:05:06.789000',
        tm TIME DEFAULT '12:34:56',
        bt BIT(5) DEFAULT b'101',
        flag TINYINT(1) DEFAULT 1,
        amt DECIMAL(8,2) DEFAULT 1.50,
        ts TIMESTAMP(6) NULL DEFAULT CURRENT_TIMESTAMP(6),
        u VARCHAR(40) DEFAULT (UUID()),
        c INT DEFAULT (1 + 1),
        up TIMESTAMP(6) NULL DEFAULT NULL ON UPDATE CURRENT_TIMESTAMP(6),
        txt TEXT,
        n INT NOT NULL DEFAULT 7)""" % db)
    mx(m, "CREATE TABLE %s.k (a INT, b VARCHAR(10), v INT DEFAULT 3, w TEXT, PRIMARY KEY (a, b))" % db)
    mx(m, "CREATE TABLE %s.nk (a INT, b VARCHAR(10) DEFAULT 'q')" % db)


def minimal_workload(m, db, base):
    """One round of changes; ids from base up."""
    i = base
    mx(m, 'BEGIN')
    mx(m, 'INSERT INTO {0}.t (id, b) VALUES ({1}, 10)'.format(db, i + 1))        # the example
    # consecutive inserts with different column sets: one multi-insert batch
    mx(m, 'INSERT INTO {0}.t (id) VALUES ({1})'.format(db, i + 2))
    mx(m, "INSERT INTO {0}.t (id, a, s, d) VALUES ({1}, 40, 'four', '1999-12-31')".format(db, i + 3))
    mx(m, "INSERT INTO {0}.t (id, txt, n) VALUES ({1}, 'five', 0)".format(db, i + 4))
    mx(m, 'INSERT INTO {0}.t (id, a, s, e, st, d, bt, flag, amt) VALUES '
          '({1}, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)'.format(db, i + 5))  # explicit NULLs
    mx(m, "INSERT INTO {0}.t (id, b) VALUES ({1}, 1), ({2}, 2), ({3}, 3)".format(db, i + 6, i + 7, i + 8))
    mx(m, 'COMMIT')
    mx(m, 'UPDATE {0}.t SET b = 20 WHERE id = {1}'.format(db, i + 1))
    mx(m, "UPDATE {0}.t SET a = a + 1, txt = 'x' WHERE id IN ({1}, {2})".format(db, i + 2, i + 3))
    mx(m, 'UPDATE {0}.t SET id = {1} WHERE id = {2}'.format(db, i + 30, i + 2))  # key update
    mx(m, 'UPDATE {0}.t SET a = NULL WHERE id = {1}'.format(db, i + 3))
    mx(m, 'DELETE FROM {0}.t WHERE id = {1}'.format(db, i + 4))
    mx(m, "INSERT INTO {0}.k (a, b) VALUES ({1}, 'x'), ({1}, 'y')".format(db, i))
    mx(m, "INSERT INTO {0}.k (a, b, w) VALUES ({1}, 'z', 'ww')".format(db, i + 1))
    mx(m, "UPDATE {0}.k SET b = 'yy' WHERE a = {1} AND b = 'y'".format(db, i))   # part of the key
    mx(m, "UPDATE {0}.k SET v = 30 WHERE a = {1} AND b = 'x'".format(db, i))
    mx(m, "DELETE FROM {0}.k WHERE a = {1} AND b = 'z'".format(db, i + 1))
    mx(m, 'INSERT INTO {0}.nk (a) VALUES ({1}), ({1}), ({2})'.format(db, i, i + 1))
    mx(m, "UPDATE {0}.nk SET b = 'r' WHERE a = {1} LIMIT 1".format(db, i))
    mx(m, 'DELETE FROM {0}.nk WHERE a = {1}'.format(db, i + 1))


def compare_minimal(conn, m, db, what):
    n = same_rows(conn, m, '%s.t' % db, T_COLS, 'id', what)
    same_rows(conn, m, '%s.k' % db, K_COLS, 'a, b', what)
    same_rows(conn, m, '%s.nk' % db, NK_COLS, 'a, b', what)
    return n


def case_minimal(conn, m_main):
    name = 'ac-minimal'
    m = start_instance(name, MINIMAL_PORT, '--binlog-row-image=MINIMAL')
    db = 'blf_ac_min'
    src = None
    try:
        check(mx(m, 'SELECT @@global.binlog_row_image')[0][0] == 'MINIMAL', 'instance not MINIMAL')
        minimal_tables(m, db)
        mx(m, 'INSERT INTO %s.t (id) VALUES (1)' % db)
        mx(m, "INSERT INTO %s.k (a, b) VALUES (1, 'a')" % db)
        mx(m, 'INSERT INTO %s.nk (a) VALUES (1)' % db)
        marker = 'blf images marker %s' % os.getpid()
        q(conn, 'DO $$BEGIN RAISE LOG %s; END$$' % "'%s'" % marker)
        src = Source(conn, 'ac_min', r'^blf_ac_min\.', port=MINIMAL_PORT, keyless='full_row')
        src.snapshot(['%s.t' % db, '%s.k' % db, '%s.nk' % db])
        s = src.start()
        check(s.get('binlog_row_image') == 'MINIMAL',
              'status binlog_row_image %r, expected MINIMAL' % s.get('binlog_row_image'))
        notice = s.get('source_notice') or ''
        check('binlog_row_image is MINIMAL' in notice and "target's defaults" in notice,
              'status source_notice %r' % notice)
        check(s.get('last_error') is None, 'last_error %r' % s.get('last_error'))

        minimal_workload(m, db, 100)
        r = src.sync(m)
        log('apply(): %s' % r)
        n = compare_minimal(conn, m, db, 'apply()')
        check(n == 8, '%d rows in t, expected 8' % n)
        # the defaults really came from the target: the example
        row = q(conn, "SELECT a, b, s, d, n FROM %s.t WHERE id = 101" % db)
        check(row == [(5, 20, "it's", datetime.date(2020, 1, 2), 7)],
              'row 101 is %r' % row)

        go_continuous(conn, src)
        minimal_workload(m, db, 200)
        wait_applied(src, m, 'continuous')
        compare_minimal(conn, m, db, 'continuous mode')
        leave_continuous(conn, src)

        # a chosen key that the before image lacks: an error, never a guess
        mx(m, 'CREATE TABLE %s.uk (id INT PRIMARY KEY, code VARCHAR(10) NOT NULL UNIQUE, v INT)' % db)
        mx(m, "INSERT INTO %s.uk VALUES (1, 'one', 1)" % db)
        src.sync(m)
        q(conn, 'CREATE UNIQUE INDEX uk_code ON %s.uk (code)' % db)
        q(conn, 'ALTER TABLE %s.uk DROP CONSTRAINT uk_pkey' % db)
        q(conn, "SELECT binlog_fdw.map_table('ac_min', '%s.uk', key_columns => ARRAY['code'])" % db)
        mx(m, 'UPDATE %s.uk SET v = 2 WHERE id = 1' % db)
        src.apply_error(m, 'chosen key absent from the before image', sqlstate='22000',
                        message=['lacks key column "code"', 'uk'], hint='primary key')
        skip_row_change(conn, 'ac_min', 'update')

        # overwrite of a missing row: a partial after image is not a row
        mx(m, 'CREATE TABLE %s.ow (id INT PRIMARY KEY, a INT, b INT DEFAULT 9)' % db)
        mx(m, 'INSERT INTO %s.ow VALUES (1, 1, 1)' % db)
        src.sync(m)
        q(conn, "SELECT binlog_fdw.map_table('ac_min', '%s.ow', conflict => 'overwrite')" % db)
        q(conn, 'DELETE FROM %s.ow' % db)
        mx(m, 'UPDATE %s.ow SET a = 2 WHERE id = 1' % db)
        src.apply_error(m, 'overwrite of a missing row with a partial image', sqlstate='P0002',
                        message=['row to update not found', 'lack column "b"'],
                        detail='MINIMAL', hint='snapshot')
        check(q1(conn, 'SELECT count(*) FROM %s.ow' % db) == 0, 'a partial row was inserted')
        skip_row_change(conn, 'ac_min', 'update')

        # ... but when the images together hold every column, the row is whole
        mx(m, 'CREATE TABLE %s.ow2 (id INT PRIMARY KEY, a INT)' % db)
        mx(m, 'INSERT INTO %s.ow2 VALUES (1, 1)' % db)
        src.sync(m)
        q(conn, "SELECT binlog_fdw.map_table('ac_min', '%s.ow2', conflict => 'overwrite')" % db)
        q(conn, 'DELETE FROM %s.ow2' % db)
        mx(m, 'UPDATE %s.ow2 SET a = 2 WHERE id = 1' % db)
        src.sync(m)
        check(q(conn, 'SELECT id, a FROM %s.ow2' % db) == [(1, 2)],
              'overwrite of a missing row from before + after images: %r' % q(conn, 'SELECT * FROM %s.ow2' % db))

        # a keyless target of a keyed MySQL table: rows cannot be found
        mx(m, 'CREATE TABLE IF NOT EXISTS %s.pkx (id INT PRIMARY KEY, a INT)' % db)
        q(conn, 'CREATE TABLE %s.pkx (id int, a int)' % db)
        mx(m, 'INSERT INTO %s.pkx VALUES (1, 1), (2, 2)' % db)
        src.sync(m)
        mx(m, 'UPDATE %s.pkx SET a = 3 WHERE id = 1' % db)
        src.apply_error(m, 'keyless target, partial before image', sqlstate='22000',
                        message=['lacks column "a"', 'no key'], hint='binlog_row_image=FULL')
        check(q(conn, 'SELECT id, a FROM %s.pkx ORDER BY id' % db) == [(1, 1), (2, 2)],
              'keyless target changed')
        skip_row_change(conn, 'ac_min', 'update')
        src.sync(m)
        check_no_warning_in_log(conn, marker)
    finally:
        if src and not KEEP:
            src.drop()
        destroy_instance(name)


# ---------------------------------------------------------------------------
# NOBLOB

B_COLS = [('id', 'id', 'id'), ('v', 'v', 'v'), ('name', 'name', 'name'), ('txt', 'txt', 'txt'),
          ('bl', 'LOWER(HEX(bl))', "encode(bl, 'hex')"), ('note', 'note', 'note'),
          ('big', 'MD5(big)', 'md5(big)')]


def noblob_workload(m, db, i):
    mx(m, "INSERT INTO {0}.b VALUES ({1}, 1, 'n1', 'text one', x'00ff01', 'given', REPEAT('x', 70000))"
       .format(db, i + 1))
    mx(m, 'BEGIN')
    mx(m, "INSERT INTO {0}.b (id, v, name) VALUES ({1}, 2, 'n2')".format(db, i + 2))    # no blobs
    mx(m, "INSERT INTO {0}.b (id, v, txt) VALUES ({1}, 3, 'three')".format(db, i + 3))
    mx(m, "INSERT INTO {0}.b (id, bl) VALUES ({1}, x'')".format(db, i + 4))
    mx(m, 'COMMIT')
    mx(m, 'UPDATE {0}.b SET v = v + 10 WHERE id IN ({1}, {2})'.format(db, i + 1, i + 3))  # blobs kept
    mx(m, "UPDATE {0}.b SET txt = 'changed', bl = x'0102' WHERE id = {1}".format(db, i + 2))
    mx(m, "UPDATE {0}.b SET big = CONCAT(big, 'y') WHERE id = {1}".format(db, i + 1))
    mx(m, 'UPDATE {0}.b SET id = {1} WHERE id = {2}'.format(db, i + 50, i + 3))          # key update
    mx(m, "UPDATE {0}.b SET name = NULL, note = 'n' WHERE id = {1}".format(db, i + 50))
    mx(m, 'DELETE FROM {0}.b WHERE id = {1}'.format(db, i + 4))


def case_noblob(conn, m_main):
    name = 'ac-noblob'
    m = start_instance(name, NOBLOB_PORT, '--binlog-row-image=NOBLOB')
    db = 'blf_ac_noblob'
    src = None
    try:
        mdb_fresh(m, db)
        mx(m, "CREATE TABLE %s.b (id INT PRIMARY KEY, v INT, name VARCHAR(20) DEFAULT 'nm', txt TEXT, "
              "bl BLOB, note TEXT DEFAULT 'dflt', big LONGTEXT)" % db)
        mx(m, "INSERT INTO %s.b VALUES (1, 0, 'zero', 'pre', x'aa', 'pre', 'pre')" % db)
        src = Source(conn, 'ac_noblob', r'^blf_ac_noblob\.', port=NOBLOB_PORT)
        src.snapshot(['%s.b' % db])
        s = src.start()
        check(s.get('binlog_row_image') == 'NOBLOB' and
              'binlog_row_image is NOBLOB' in (s.get('source_notice') or ''),
              'status row image %r, notice %r' % (s.get('binlog_row_image'), s.get('source_notice')))
        noblob_workload(m, db, 100)
        mx(m, "UPDATE %s.b SET v = 5 WHERE id = 1" % db)
        src.sync(m)
        same_rows(conn, m, '%s.b' % db, B_COLS, 'id', 'apply()')
        go_continuous(conn, src)
        noblob_workload(m, db, 200)
        wait_applied(src, m, 'continuous')
        same_rows(conn, m, '%s.b' % db, B_COLS, 'id', 'continuous mode')
    finally:
        if src and not KEEP:
            src.drop()
        destroy_instance(name)
