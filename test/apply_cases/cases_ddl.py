"""
test/apply_cases/cases_ddl.py -- apply cases about DDL and names: the DDL
of synced tables translated in order with the rows around it, DDL that is
not understood stopping apply until skip_change(), and hostile identifiers
(quotes, semicolons, spaces, backquotes) through snapshot, rows and DDL.
"""

import os
import re

from harness import (Source, check, col_types, expect_error, log, mdb, mdb_fresh, mq, mx, pq, q, q1,
                     short, status, table_exists, wait_for)


def rows_equal(conn, m, mtable, ptable, cols, what, pcols=None):
    """A table's rows on both sides (cols: MariaDB names; pcols: PostgreSQL
    expressions, default the same names) compared as text."""
    mrows = [tuple(None if v is None else str(v) for v in r) for r in
             mx(m, 'SELECT %s FROM %s ORDER BY 1' % (', '.join(mq(c) for c in cols), mtable))]
    prows = [tuple(r[1:]) for r in
             q(conn, 'SELECT %s, %s FROM %s ORDER BY 1' % (
                 pcols[0] if pcols else pq(cols[0]),
                 ', '.join('%s::text' % (p if pcols else pq(p)) for p in (pcols or cols)), ptable))]
    check(prows == mrows, '%s: PostgreSQL has %s, MariaDB %s' % (what, short(prows, 600), short(mrows, 600)))


# ---------------------------------------------------------------------------
# DDL

def case_ddl(conn, m):
    db = 'blf_ac_ddl'
    mdb_fresh(m, db)
    w = mdb(db=db)
    mx(w, 'CREATE TABLE t1 (id INT PRIMARY KEY, a VARCHAR(10), b INT)')
    mx(w, "INSERT INTO t1 VALUES (1, 'one', 1), (2, 'two', 2)")
    src = Source(conn, 'ac_ddl', r'^blf_ac_ddl\.')
    src.snapshot(['blf_ac_ddl.t1'])
    src.start()

    # rows around each ALTER TABLE land with the table's shape of their time
    for sql in [
        "INSERT INTO t1 VALUES (10, 'x', 10)",
        'ALTER TABLE t1 ADD COLUMN c INT NOT NULL DEFAULT 5',
        "INSERT INTO t1 VALUES (11, 'y', 11, 7)",
        'ALTER TABLE t1 ADD COLUMN d VARCHAR(5) NOT NULL AFTER a, ADD COLUMN e TINYINT NOT NULL',
        "UPDATE t1 SET d = 'dd', e = 3 WHERE id = 10",
        'ALTER TABLE t1 DROP COLUMN b',
        "INSERT INTO t1 (id, a, d, c, e) VALUES (12, 'z', 'd2', 9, 4)",
        'ALTER TABLE t1 MODIFY c BIGINT NOT NULL DEFAULT 6',
        'UPDATE t1 SET c = 5000000000 WHERE id = 11',
        'ALTER TABLE t1 CHANGE a aa VARCHAR(40) NULL',
        "INSERT INTO t1 (id, aa, d, e) VALUES (13, 'a value longer than ten', 'q', 1)",
        'ALTER TABLE t1 RENAME COLUMN d TO dd',
        "UPDATE t1 SET dd = 'r' WHERE id = 12",
        'ALTER TABLE t1 ALTER COLUMN e SET DEFAULT 9',
        "INSERT INTO t1 (id, dd) VALUES (14, 'dflt')",
        # CREATE / RENAME / TRUNCATE / DROP TABLE
        "CREATE TABLE t2 (id INT NOT NULL, v TEXT, j JSON, s SET('a','b'), dt DATETIME(3), "
        "u BIGINT UNSIGNED, PRIMARY KEY (id))",
        "INSERT INTO t2 VALUES (1, 'v1', '{\"k\": 1}', 'a,b', '2024-01-02 03:04:05.678', 18446744073709551615)",
        'RENAME TABLE t2 TO t3',
        "INSERT INTO t3 (id, v) VALUES (2, 'v2')",
        "UPDATE t3 SET v = 'v1b' WHERE id = 1",
        'TRUNCATE TABLE t3',
        "INSERT INTO t3 (id, v, s) VALUES (3, 'after truncate', 'b')",
        'CREATE TABLE t4 (id INT PRIMARY KEY)',
        'INSERT INTO t4 VALUES (1)',
        'DROP TABLE t4',
        # a named primary key constraint (MySQL ignores its name) is the key
        'CREATE TABLE t5 (id INT NOT NULL, v INT, CONSTRAINT t5_key PRIMARY KEY (id))',
        'INSERT INTO t5 VALUES (1, 1), (2, 2)',
        'UPDATE t5 SET v = 20 WHERE id = 2',
        # partitions: clauses that change no rows are ignored
        'CREATE TABLE tp (id INT PRIMARY KEY, v INT) PARTITION BY RANGE (id) '
        '(PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN (20))',
        'INSERT INTO tp VALUES (1, 1), (15, 15)',
        'ALTER TABLE tp ADD PARTITION (PARTITION p2 VALUES LESS THAN (30))',
        'INSERT INTO tp VALUES (25, 25)',
        'ALTER TABLE tp REORGANIZE PARTITION p0, p1 INTO (PARTITION p01 VALUES LESS THAN (20))',
        'INSERT INTO tp VALUES (5, 5)',
        # a trigger: its rows come as rows events, the trigger itself is not copied
        "CREATE TRIGGER trg AFTER INSERT ON t1 FOR EACH ROW INSERT INTO t3 (id, v) VALUES (NEW.id + 1000, 'trig')",
        "INSERT INTO t1 (id, aa, dd) VALUES (20, 'fires', 'f')",
    ]:
        mx(w, sql)
    t = src.sync(w)
    log('DDL stream applied in %d apply() calls: %s' % (t['calls'], t))
    check(t['ddl'] == 17, '%d DDL statements applied, expected 17' % t['ddl'])
    exp = {'id': 'integer not null', 'aa': 'character varying(40)', 'dd': 'character varying(5) not null',
           'c': 'bigint not null', 'e': 'smallint not null'}
    got = col_types(conn, db, 't1')
    check(got == exp, 'columns of t1 after the ALTERs: %s, expected %s' % (got, exp))
    defaults = dict(q(conn, "SELECT a.attname, pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d "
                            "JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum "
                            "WHERE d.adrelid = 'blf_ac_ddl.t1'::regclass"))
    check(defaults == {'c': '6', 'e': '9'}, 'defaults of t1: %s' % defaults)
    rows_equal(conn, m, 'blf_ac_ddl.t1', 'blf_ac_ddl.t1', ['id', 'aa', 'dd', 'c', 'e'], 't1')
    check(not table_exists(conn, db, 't2') and not table_exists(conn, db, 't4'),
          't2 (renamed) or t4 (dropped) still exist')
    exp3 = {'id': 'integer not null', 'v': 'text', 'j': 'jsonb', 's': 'text[]',
            'dt': 'timestamp(3) without time zone', 'u': 'numeric(20,0)'}
    check(col_types(conn, db, 't3') == exp3, 'columns of t3: %s' % col_types(conn, db, 't3'))
    rows_equal(conn, m, 'blf_ac_ddl.t3', 'blf_ac_ddl.t3', ['id', 'v', 's'], 't3',
               pcols=['id', 'v', "array_to_string(s, ',')"])
    rows_equal(conn, m, 'blf_ac_ddl.tp', 'blf_ac_ddl.tp', ['id', 'v'], 'tp')
    pk5 = q1(conn, "SELECT array_agg(a.attname::text ORDER BY a.attnum) FROM pg_index i JOIN pg_attribute a "
                   "ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey) "
                   "WHERE i.indrelid = 'blf_ac_ddl.t5'::regclass AND i.indisprimary")
    check(pk5 == ['id'], 'primary key of t5 (CONSTRAINT t5_key PRIMARY KEY (id)): %s' % pk5)
    rows_equal(conn, m, 'blf_ac_ddl.t5', 'blf_ac_ddl.t5', ['id', 'v'], 't5')
    check(q1(conn, "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'blf_ac_ddl.t1'::regclass") == 0,
          'the MySQL trigger was copied')
    maps = q(conn, "SELECT source_table, target_table FROM binlog_fdw.table_mapping "
                   "WHERE server_name = 'ac_ddl' ORDER BY 1")
    check(maps == [('t1', 't1')], 'table_mapping after the renames: %s' % maps)

    # DDL that is not understood: apply stops before it (rows before it are
    # applied), then fails on it, naming statement and position, until the
    # target is fixed and the statement skipped
    mx(w, "INSERT INTO t1 (id, aa, dd) VALUES (30, 'before', 'b')")
    before = mx(w, 'SHOW MASTER STATUS')[0]
    mx(w, 'ALTER TABLE tp DROP PARTITION p2')
    gtid = mx(w, 'SELECT @@last_gtid')[0][0]
    mx(w, "INSERT INTO t1 (id, aa, dd) VALUES (31, 'after', 'a')")
    src.wait_read(w)
    r = src.apply()
    check(r['ddl'] == 0 and q1(conn, 'SELECT count(*) FROM blf_ac_ddl.t1 WHERE id = 30') == 1,
          'apply() before the statement: %s, row 30 %s' % (r, q(conn, 'SELECT id FROM blf_ac_ddl.t1 WHERE id >= 30')))
    errs = []
    for attempt in range(2):
        errs.append(expect_error(
            conn, 'SELECT * FROM binlog_fdw.apply(%s)', ('ac_ddl',), 'DROP PARTITION, attempt %d' % (attempt + 1),
            sqlstate='0A000',
            message=['cannot apply DDL statement of source "ac_ddl"', 'DROP PARTITION'],
            detail='Statement: ALTER TABLE tp DROP PARTITION p2',
            hint="binlog_fdw.skip_change('ac_ddl')",
            context=['DDL statement of source "ac_ddl" at binlog %s position' % before[0], 'GTID ' + gtid]))
    pos = int(re.search(r'position (\d+)', errs[0].context).group(1))
    check(pos >= int(before[1]), 'the error names position %d, the statement is at or after %s' % (pos, before[1]))
    check(errs[0].context == errs[1].context, 'a retry failed elsewhere: %s / %s' % (errs[0].context, errs[1].context))
    check(q1(conn, 'SELECT count(*) FROM blf_ac_ddl.t1 WHERE id = 31') == 0, 'row 31 applied past the DDL')
    q(conn, 'DELETE FROM blf_ac_ddl.tp WHERE id >= 20')       # the user's fix
    sk = q(conn, "SELECT seq, op, ddl FROM binlog_fdw.skip_change('ac_ddl')")
    check(len(sk) == 1 and sk[0][1] == 'ddl' and sk[0][2] == 'ALTER TABLE tp DROP PARTITION p2',
          'skip_change() skipped %s' % (sk,))
    src.sync(w)
    rows_equal(conn, m, 'blf_ac_ddl.t1', 'blf_ac_ddl.t1', ['id', 'aa', 'dd', 'c', 'e'], 't1 after skip_change()')
    rows_equal(conn, m, 'blf_ac_ddl.tp', 'blf_ac_ddl.tp', ['id', 'v'], 'tp after skip_change()')

    # a translated statement PostgreSQL refuses: the error names both
    mx(w, "INSERT INTO t1 (id, aa, dd) VALUES (40, 'not a number', 'n')")
    mx(w, 'ALTER TABLE t1 MODIFY aa INT')
    src.wait_read(w)
    src.apply()
    expect_error(conn, 'SELECT * FROM binlog_fdw.apply(%s)', ('ac_ddl',), 'MODIFY PostgreSQL refuses',
                 sqlstate='22P02', message='invalid input syntax for type integer',
                 context=['SQL statement "ALTER TABLE blf_ac_ddl.t1', 'ALTER COLUMN aa TYPE integer',
                          'translated DDL statement of source "ac_ddl" at binlog', ': ALTER TABLE t1 MODIFY aa INT'])
    q(conn, "ALTER TABLE blf_ac_ddl.t1 ALTER COLUMN aa TYPE integer USING CASE WHEN aa IS NULL THEN NULL "
            "WHEN aa ~ '^[0-9]+$' THEN aa::integer ELSE 0 END")
    q(conn, "SELECT binlog_fdw.skip_change('ac_ddl')")
    mx(w, "UPDATE t1 SET aa = 77 WHERE id = 40")
    src.sync(w)
    rows_equal(conn, m, 'blf_ac_ddl.t1', 'blf_ac_ddl.t1', ['id', 'aa', 'dd', 'c', 'e'], 't1 after MODIFY')
    w.close()
    src.drop()
    q(conn, 'DROP SCHEMA blf_ac_ddl CASCADE')
    mx(m, 'DROP DATABASE %s' % db)


# ---------------------------------------------------------------------------
# hostile identifiers

HDB = 'blf_ac_we"ird; db'
HT = 'x"; DROP TABLE y; --'
HT2 = 'z`"; DROP TABLE y; --'
HCOLS = ['id', 'a"b; --', "it's", 'c`d', 'sp ace']


def case_hostile(conn, m):
    q(conn, 'DROP TABLE IF EXISTS public.y')
    q(conn, 'CREATE TABLE public.y (v int)')
    q(conn, 'INSERT INTO public.y VALUES (42)')
    mdb_fresh(m, HDB)
    full = '%s.%s' % (mq(HDB), mq(HT))
    mx(m, 'CREATE TABLE %s (%s INT PRIMARY KEY, %s VARCHAR(20), %s INT, %s TEXT, %s VARCHAR(5))' % (
        full, *[mq(c) for c in HCOLS]))
    mx(m, "INSERT INTO %s VALUES (1, 'a''1\";', 1, 'x', 's1'), (2, 'b', 2, NULL, 's2')" % full)
    src = Source(conn, 'ac_hostile', '^' + re.escape(HDB) + r'\.')
    r = src.snapshot(['%s.%s' % (HDB, HT)])
    check(r == [('%s.%s' % (HDB, HT), '%s.%s' % (pq(HDB), pq(HT)), 2, True)], 'snapshot(): %s' % (r,))
    q(conn, "SELECT binlog_fdw.map_table('ac_hostile', %s, conflict => 'error')", ('%s.%s' % (HDB, HT),))
    src.start()
    cq = [mq(c) for c in HCOLS]
    mx(m, "INSERT INTO %s VALUES (3, '--;', 3, 'DROP TABLE y;', 's3')" % full)
    mx(m, "UPDATE %s SET %s = 'u\"pd', %s = 33 WHERE %s = 1" % (full, cq[1], cq[2], cq[0]))
    mx(m, 'DELETE FROM %s WHERE %s = 2' % (full, cq[0]))
    mx(m, "ALTER TABLE %s ADD COLUMN %s VARCHAR(10) DEFAULT 'q''x'" % (full, mq('new"col; --')))
    mx(m, "INSERT INTO %s (%s, %s) VALUES (4, 'n')" % (full, cq[0], mq('new"col; --')))
    mx(m, 'ALTER TABLE %s RENAME COLUMN %s TO %s' % (full, cq[4], mq('sp"ace')))
    mx(m, "UPDATE %s SET %s = 'r' WHERE %s = 3" % (full, mq('sp"ace'), cq[0]))
    full2 = '%s.%s' % (mq(HDB), mq(HT2))
    mx(m, 'CREATE TABLE %s (%s INT PRIMARY KEY, %s TEXT)' % (full2, mq('k"'), mq('v;')))
    mx(m, "INSERT INTO %s VALUES (1, ''''), (2, '\"')" % full2)
    src.sync(m)
    cols = HCOLS[:4] + ['sp"ace', 'new"col; --']
    rows_equal(conn, m, full, '%s.%s' % (pq(HDB), pq(HT)), cols, 'hostile table')
    rows_equal(conn, m, full2, '%s.%s' % (pq(HDB), pq(HT2)), ['k"', 'v;'], 'hostile table created by DDL')
    check(q(conn, 'SELECT v FROM public.y') == [(42,)], 'table y was touched: %s' % q(conn, 'SELECT v FROM public.y'))
    tables = sorted(r[0] for r in q(conn, 'SELECT tablename FROM pg_tables WHERE schemaname = %s', (HDB,)))
    check(tables == sorted([HT, HT2]), 'tables of the hostile schema: %s' % tables)
    src.drop()
    q(conn, 'DROP SCHEMA %s CASCADE' % pq(HDB))
    q(conn, 'DROP TABLE public.y')
    mx(m, 'DROP DATABASE %s' % mq(HDB))


def case_snapshot_ddl_race(conn, m):
    """An ALTER TABLE on a table of a snapshot while the snapshot copies
    another one: the attempt is thrown away and a new snapshot taken, so the
    target has the new shape and the stream does not replay the ALTER."""
    import threading
    import time
    db = 'blf_ac_race'
    mdb_fresh(m, db)
    w = mdb(db=db)
    mx(w, 'CREATE TABLE big (id INT PRIMARY KEY, v VARCHAR(100))')
    mx(w, "INSERT INTO big SELECT seq, REPEAT('x', 90) FROM seq_1_to_400000")
    mx(w, 'CREATE TABLE small (id INT PRIMARY KEY, x INT)')
    mx(w, 'INSERT INTO small VALUES (1, 1), (2, 2)')
    src = Source(conn, 'ac_race', r'^blf_ac_race\.')
    notices_before = len(conn.notices)
    errors = []

    def alter():
        try:
            time.sleep(0.4)
            w2 = mdb(db=db)
            mx(w2, 'ALTER TABLE small ADD COLUMN y INT NOT NULL DEFAULT 3')
            mx(w2, 'INSERT INTO small VALUES (3, 3, 33)')
            w2.close()
        except Exception as e:                      # noqa: BLE001
            errors.append(str(e))
    t = threading.Thread(target=alter)
    t.start()
    res = src.snapshot(['blf_ac_race.big', 'blf_ac_race.small'])
    t.join(60)
    check(not errors, 'the ALTER failed: %s' % errors)
    notices = [n for n in conn.notices[notices_before:] if 'taking a new snapshot' in n]
    log('snapshot: %s; retries: %d' % (res, len(notices)))
    check(notices, 'the snapshot did not notice the ALTER of small during the copy of big')
    check(col_types(conn, db, 'small') == {'id': 'integer not null', 'x': 'integer',
                                           'y': 'integer not null'},
          'small after the snapshot: %s' % col_types(conn, db, 'small'))
    src.start()
    mx(w, 'INSERT INTO small VALUES (4, 4, 44)')
    src.sync(w)
    rows_equal(conn, m, '%s.small' % db, '%s.small' % db, ['id', 'x', 'y'], 'small')
    q(conn, "SELECT binlog_fdw.stop('ac_race')")


# ---------------------------------------------------------------------------
# statement-based changes

def case_statement_format(conn, m):
    """A session that logs as a statement (binlog_format STATEMENT or
    MIXED, as a session opened before SET GLOBAL binlog_format = ROW keeps):
    its rows are in no rows event.  A statement on a table the source does
    not capture is passed over; one on a captured table stops the worker
    with an error at its position, and nothing after it is applied (before
    this, it was taken for DDL and ignored: the rows went missing)."""
    db = 'blf_ac_stmt'
    other = 'blf_ac_stmt_other'
    mdb_fresh(m, db)
    mdb_fresh(m, other)
    w = mdb(db=db)
    mx(w, 'CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))')
    mx(w, "INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    mx(w, 'CREATE TABLE %s.o (id INT PRIMARY KEY, v INT)' % other)
    src = Source(conn, 'ac_stmt', r'^blf_ac_stmt\.')
    src.snapshot(['blf_ac_stmt.t'])
    src.start()
    mx(w, "INSERT INTO t VALUES (3, 'c')")
    src.sync(w)
    s = mdb(db=db)
    mx(s, "SET SESSION binlog_format = 'STATEMENT'")
    # not captured: passed over, the worker goes on
    mx(s, 'INSERT INTO %s.o VALUES (1, 1)' % other)
    mx(w, "UPDATE t SET v = 'a2' WHERE id = 1")
    src.sync(w)
    rows = q(conn, 'SELECT id, v FROM blf_ac_stmt.t ORDER BY id')
    check(rows == [(1, 'a2'), (2, 'b'), (3, 'c')], 'before the statement on t: %s' % short(rows))
    st = status(conn, 'ac_stmt')
    check(st['state'] == 'streaming' and st['last_error'] is None,
          'a statement on a table not captured stopped the worker: %s' % short(st, 500))
    # captured: the worker stops at it, with the position and the fix
    mx(s, "UPDATE t SET v = 'lost' WHERE id = 2")
    mx(w, "INSERT INTO t VALUES (4, 'd')")
    st = wait_for('the worker to stop at the statement',
                  lambda: (lambda x: x if x and x['last_error'] and
                           'logged as a statement' in x['last_error'] else None)(status(conn, 'ac_stmt')),
                  30, 0.1)
    check('blf_ac_stmt.t' in st['last_error'] and 'binlog mysql-bin.' in st['last_error'],
          'the error does not name the table and the position: %s' % short(st['last_error'], 400))
    r = src.apply(wait=0.5)
    rows = q(conn, 'SELECT id, v FROM blf_ac_stmt.t ORDER BY id')
    check(rows == [(1, 'a2'), (2, 'b'), (3, 'c')],
          'after the statement, PostgreSQL has %s (apply: %s); nothing after it may be applied'
          % (short(rows), r))
    log('statement-format: passed over on %s.o; on t: %s' % (other, short(st['last_error'], 300)))
    src.drop()
    mx(s, "SET SESSION binlog_format = 'ROW'")

    # LOAD DATA logged as a statement: its rows are in a file, in no rows event
    mx(w, 'CREATE TABLE l (id INT PRIMARY KEY, v VARCHAR(20))')
    src = Source(conn, 'ac_stmt', r'^blf_ac_stmt\.')
    src.snapshot(['blf_ac_stmt.l'])
    src.start()
    path = '/tmp/blf_ac_stmt_%d.tsv' % os.getpid()
    with open(path, 'w') as f:
        f.write('1\tx\n2\ty\n')
    try:
        ld = mdb(db=db, local_infile=True)
        mx(ld, "SET SESSION binlog_format = 'STATEMENT'")
        mx(ld, "LOAD DATA LOCAL INFILE '%s' INTO TABLE l" % path)
    finally:
        os.unlink(path)
    st = wait_for('the worker to stop at the LOAD DATA',
                  lambda: (lambda x: x if x and x['last_error'] and
                           'LOAD DATA was logged as a statement' in x['last_error'] else None)(
                      status(conn, 'ac_stmt')), 30, 0.1)
    rows = q(conn, 'SELECT count(*) FROM blf_ac_stmt.l')
    check(rows == [(0,)], 'PostgreSQL has rows of the LOAD DATA: %s' % rows)
    log('statement-format: %s' % short(st['last_error'], 300))
    src.drop()


def case_xa(conn, m):
    """XA transactions: one committed in one phase is applied; a two-phase
    one prepared on a captured table stops the worker with an error at its
    XA_PREPARE, before anything of it is applied (it was committed at its
    XA END before: a later XA ROLLBACK left its rows applied); one on a
    table not captured is passed over with its outcome."""
    db = 'blf_ac_xa'
    other = 'blf_ac_xa_other'
    mdb_fresh(m, db)
    mdb_fresh(m, other)
    w = mdb(db=db)
    mx(w, 'CREATE TABLE x (id INT PRIMARY KEY, v VARCHAR(20))')
    mx(w, 'CREATE TABLE %s.o (id INT PRIMARY KEY)' % other)
    mx(w, "INSERT INTO x VALUES (1, 'a')")
    src = Source(conn, 'ac_xa', r'^blf_ac_xa\.')
    src.snapshot(['blf_ac_xa.x'])
    src.start()
    for sql in ["XA START 'one'", "INSERT INTO x VALUES (2, 'one phase')", "XA END 'one'",
                "XA COMMIT 'one' ONE PHASE",
                "XA START 'other'", 'INSERT INTO %s.o VALUES (1)' % other, "XA END 'other'",
                "XA PREPARE 'other'", "XA COMMIT 'other'",
                "INSERT INTO x VALUES (3, 'plain')"]:
        mx(w, sql)
    src.sync(w)
    rows = q(conn, 'SELECT id, v FROM blf_ac_xa.x ORDER BY id')
    check(rows == [(1, 'a'), (2, 'one phase'), (3, 'plain')], 'one phase and plain: %s' % short(rows))
    st = status(conn, 'ac_xa')
    check(st['last_error'] is None, 'an XA transaction on a table not captured stopped the worker: %s'
          % short(st, 400))
    for sql in ["XA START 'r'", "INSERT INTO x VALUES (4, 'rolled back')", "XA END 'r'",
                "XA PREPARE 'r'", "XA ROLLBACK 'r'", "INSERT INTO x VALUES (5, 'after')"]:
        mx(w, sql)
    st = wait_for('the worker to stop at the prepared XA transaction',
                  lambda: (lambda x: x if x and x['last_error'] and 'XA transaction' in x['last_error']
                           else None)(status(conn, 'ac_xa')), 30, 0.1)
    src.apply(wait=0.5)
    rows = q(conn, 'SELECT id, v FROM blf_ac_xa.x ORDER BY id')
    check(rows == [(1, 'a'), (2, 'one phase'), (3, 'plain')],
          'after the prepared XA transaction, PostgreSQL has %s' % short(rows))
    log('xa: %s' % short(st['last_error'], 300))
    src.drop()


def case_fk_actions(conn, m):
    """A foreign key whose ON DELETE / ON UPDATE action changes rows
    (CASCADE, SET NULL): InnoDB makes those changes inside the engine and
    MariaDB writes none of them to the binlog (checked here: a cascading
    DELETE logs the parent's row only).  A copy of such a child table stops
    before writing anything, and so does apply at DDL that gives a table
    one; a RESTRICT foreign key is copied and applied as before."""
    db = 'blf_ac_fk'
    mdb_fresh(m, db)
    w = mdb(db=db)
    mx(w, 'CREATE TABLE p (id INT PRIMARY KEY) ENGINE=InnoDB')
    mx(w, 'CREATE TABLE c (id INT PRIMARY KEY, pid INT, FOREIGN KEY (pid) REFERENCES p (id) '
          'ON DELETE CASCADE) ENGINE=InnoDB')
    mx(w, 'INSERT INTO p VALUES (1), (2)')
    mx(w, 'INSERT INTO c VALUES (10, 1), (20, 2)')
    # the gap itself: the cascaded delete of c's row is in no rows event
    f0 = mx(w, 'SHOW MASTER STATUS')[0]
    mx(w, 'DELETE FROM p WHERE id = 2')
    ev = mx(w, "SHOW BINLOG EVENTS IN '%s' FROM %d" % (f0[0], int(f0[1])))
    rows_events = [e for e in ev if e[2] in ('Delete_rows_v1', 'Delete_rows')]
    check(len(rows_events) == 1, 'the cascading DELETE logged %d rows events: %s' % (len(rows_events), short(ev)))
    check(mx(w, 'SELECT id FROM c ORDER BY id') == ((10,),), 'MariaDB did not cascade')
    src = Source(conn, 'ac_fk', r'^blf_ac_fk\.')
    expect_error(conn, 'SELECT * FROM binlog_fdw.snapshot(%s, %s)', ('ac_fk', ['blf_ac_fk.p', 'blf_ac_fk.c']),
                 'snapshot of a child with ON DELETE CASCADE', sqlstate='0A000',
                 message='table blf_ac_fk.c of source "ac_fk" has 1 foreign key whose ON DELETE or ON UPDATE action changes its rows',
                 detail='ON DELETE CASCADE')
    check(not table_exists(conn, db, 'p') and not table_exists(conn, db, 'c'),
          'the refused snapshot left a target table')
    src.snapshot(['blf_ac_fk.p'])
    src.start()
    # a RESTRICT foreign key: applied as before
    mx(w, 'CREATE TABLE r (id INT PRIMARY KEY, pid INT, FOREIGN KEY (pid) REFERENCES p (id)) ENGINE=InnoDB')
    mx(w, 'INSERT INTO r VALUES (1, 1)')
    src.sync(w)
    check(q(conn, 'SELECT id, pid FROM blf_ac_fk.r') == [(1, 1)], 'table r with a RESTRICT foreign key')
    # DDL that gives a table an action: apply stops at it
    mx(w, 'CREATE TABLE s (id INT PRIMARY KEY, pid INT, CONSTRAINT s_fk FOREIGN KEY (pid) '
          'REFERENCES p (id) ON UPDATE SET NULL) ENGINE=InnoDB')
    src.apply_error(w, 'CREATE TABLE with ON UPDATE SET NULL', sqlstate='0A000',
                    message='MySQL table blf_ac_fk.s of source "ac_fk" gets a foreign key whose ON DELETE or ON UPDATE action changes its rows')
    check(not table_exists(conn, db, 's'), 'apply created s')
    log('fk-actions: copy and DDL refused, RESTRICT applied')
    src.drop()
