"""
test/apply_cases/cases_security.py -- apply cases about who may apply and
what readers see: privileges of the calling role, functions revoked from
PUBLIC, passwords in pg_user_mappings; multi-table transactions never half
visible to a concurrent reader, apply(max_changes) ending at transaction
boundaries, a transaction larger than a batch applied whole.
"""

import threading
import time

from harness import (Deadline, Source, check, expect_error, log, mdb, mdb_fresh, mx, pg, q, q1, short)

ROLES = ('blf_ac_writer', 'blf_ac_nopriv', 'blf_ac_plain')

# every function of the extension with arguments that would work for a
# privileged caller
FUNCTIONS = [
    ("SELECT * FROM binlog_fdw.get('ac_sec')", 'get'),
    ("SELECT binlog_fdw.ack('ac_sec', 1)", 'ack'),
    ("SELECT binlog_fdw.rollback('ac_sec')", 'rollback'),
    ("SELECT * FROM binlog_fdw.apply('ac_sec')", 'apply'),
    ("SELECT binlog_fdw.start('ac_sec')", 'start'),
    ("SELECT binlog_fdw.stop('ac_sec')", 'stop'),
    ("SELECT binlog_fdw.reset('ac_sec')", 'reset'),
    ("SELECT * FROM binlog_fdw.skip_change('ac_sec')", 'skip_change'),
    ("SELECT binlog_fdw.map_table('ac_sec', 'blf_ac_sec.t')", 'map_table'),
    ("SELECT * FROM binlog_fdw.snapshot('ac_sec', ARRAY['blf_ac_sec.t'])", 'snapshot'),
    ("SELECT binlog_fdw.sync_table('ac_sec', 'blf_ac_sec.t')", 'sync_table'),
    ('SELECT * FROM binlog_fdw.status', 'status'),
    ('SELECT * FROM binlog_fdw.sync_progress', 'sync_progress'),
    ("SELECT * FROM binlog_fdw.read_binlog('x')", 'read_binlog'),
]


def as_role(role):
    c = pg()
    q(c, 'SET ROLE %s' % role)
    return c


def case_security(conn, m):
    db = 'blf_ac_sec'
    mdb_fresh(m, db)
    mx(m, 'CREATE TABLE blf_ac_sec.t (id INT PRIMARY KEY, v VARCHAR(10))')
    mx(m, 'CREATE TABLE blf_ac_sec.u (id INT PRIMARY KEY, v VARCHAR(10))')
    mx(m, "INSERT INTO blf_ac_sec.u VALUES (1, 'u1')")
    src = Source(conn, 'ac_sec', r'^blf_ac_sec\.')
    src.snapshot(['blf_ac_sec.t', 'blf_ac_sec.u'])
    src.start()
    for r in ROLES:
        q(conn, 'DROP ROLE IF EXISTS %s' % r)
        q(conn, 'CREATE ROLE %s LOGIN' % r)
        q(conn, 'GRANT USAGE ON SCHEMA binlog_fdw, blf_ac_sec TO %s' % r)
    for r in ('blf_ac_writer', 'blf_ac_nopriv'):
        q(conn, 'GRANT EXECUTE ON FUNCTION binlog_fdw.apply(text, bigint, double precision, double precision), '
                'binlog_fdw.map_table(text, text, regclass, text[], text, boolean) TO %s' % r)
        q(conn, 'GRANT USAGE ON FOREIGN SERVER ac_sec TO %s' % r)
    q(conn, 'GRANT SELECT, INSERT, UPDATE, DELETE ON blf_ac_sec.t TO blf_ac_writer')
    q(conn, 'GRANT SELECT, INSERT ON blf_ac_sec.u TO blf_ac_writer')
    q(conn, 'GRANT SELECT ON blf_ac_sec.t TO blf_ac_nopriv')

    # without INSERT on the target: permission denied, naming table and row
    mx(m, "INSERT INTO blf_ac_sec.t VALUES (10, 'a')")
    src.wait_read(m)
    nopriv = as_role('blf_ac_nopriv')
    expect_error(nopriv, 'SELECT * FROM binlog_fdw.apply(%s)', ('ac_sec',), 'apply() without INSERT',
                 sqlstate='42501', message='permission denied for table t',
                 context=['INSERT of MySQL table blf_ac_sec.t', '"id":10'])
    check(q1(conn, 'SELECT count(*) FROM blf_ac_sec.t') == 0, 'a row was applied despite the error')
    # with the privileges it works, and the position moves
    writer = as_role('blf_ac_writer')
    mx(m, "UPDATE blf_ac_sec.t SET v = 'b' WHERE id = 10")
    mx(m, "INSERT INTO blf_ac_sec.t VALUES (11, 'c')")
    mx(m, 'DELETE FROM blf_ac_sec.t WHERE id = 11')
    src.sync(m, conn=writer)
    got = q(conn, 'SELECT id, v FROM blf_ac_sec.t ORDER BY id')
    check(got == [(10, 'b')], 'applied by the granted role: %s' % got)
    # a granted role may map tables too (the mapping belongs to the extension)
    q(writer, "SELECT binlog_fdw.map_table('ac_sec', 'blf_ac_sec.t', conflict => 'skip')")
    # INSERT on u but not UPDATE
    mx(m, "UPDATE blf_ac_sec.u SET v = 'u2' WHERE id = 1")
    src.wait_read(m)
    expect_error(writer, 'SELECT * FROM binlog_fdw.apply(%s)', ('ac_sec',), 'apply() without UPDATE',
                 sqlstate='42501', message='permission denied for table u',
                 context='UPDATE of MySQL table blf_ac_sec.u')
    q(conn, 'GRANT UPDATE ON blf_ac_sec.u TO blf_ac_writer')
    # row-level security on a target: refused rather than silently filtered
    q(conn, 'ALTER TABLE blf_ac_sec.u ENABLE ROW LEVEL SECURITY')
    expect_error(writer, 'SELECT * FROM binlog_fdw.apply(%s)', ('ac_sec',), 'apply() into a table with RLS',
                 sqlstate='42501', message=['"blf_ac_writer" cannot apply changes into blf_ac_sec.u',
                                            'row-level security'])
    q(conn, 'ALTER TABLE blf_ac_sec.u DISABLE ROW LEVEL SECURITY')
    src.sync(m, conn=writer)
    check(q(conn, 'SELECT v FROM blf_ac_sec.u') == [('u2',)], 'u after the grant: %s' % q(conn, 'SELECT v FROM blf_ac_sec.u'))

    # snapshot() by granted roles: INSERT on the target is what it needs
    mx(m, 'CREATE TABLE blf_ac_sec.w (id INT PRIMARY KEY, v VARCHAR(10))')
    mx(m, "INSERT INTO blf_ac_sec.w VALUES (1, 'w1'), (2, 'w2')")
    q(conn, 'CREATE TABLE blf_ac_sec.w (id int PRIMARY KEY, v text)')
    q(conn, 'GRANT SELECT, INSERT ON blf_ac_sec.w TO blf_ac_writer')
    q(conn, 'GRANT SELECT ON blf_ac_sec.w TO blf_ac_nopriv')
    for r in ('blf_ac_writer', 'blf_ac_nopriv'):
        q(conn, 'GRANT EXECUTE ON FUNCTION binlog_fdw.snapshot(text, text[], boolean) TO %s' % r)
        q(conn, "CREATE USER MAPPING FOR %s SERVER ac_sec OPTIONS (user 'repl', password 'repl')" % r)
    expect_error(nopriv, "SELECT * FROM binlog_fdw.snapshot('ac_sec', ARRAY['blf_ac_sec.w'])", None,
                 'snapshot() without INSERT', sqlstate='42501', message='permission denied for table w')
    got = q(writer, "SELECT source, rows, created FROM binlog_fdw.snapshot('ac_sec', ARRAY['blf_ac_sec.w'])")
    check(got == [('blf_ac_sec.w', 2, False)], 'snapshot() by the granted role: %s' % got)
    q(conn, 'DROP USER MAPPING FOR blf_ac_nopriv SERVER ac_sec')

    # functions are not for PUBLIC
    plain = as_role('blf_ac_plain')
    for sql, fn in FUNCTIONS:
        expect_error(plain, sql, None, 'plain role calls %s' % fn, sqlstate='42501',
                     message='permission denied for ' + ('view ' if fn in ('status', 'sync_progress') else
                                                         'function ') + fn)
    for t in ('source_state', 'table_mapping'):
        expect_error(plain, 'SELECT * FROM binlog_fdw.%s' % t, None, 'plain role reads %s' % t,
                     sqlstate='42501', message='permission denied for table ' + t)

    # passwords: only the mapped user and superusers see the options
    q(conn, "ALTER USER MAPPING FOR blf_ac_writer SERVER ac_sec OPTIONS (SET user 'w', SET password 'secret-w')")
    sql = "SELECT usename, umoptions FROM pg_user_mappings WHERE srvname = 'ac_sec' ORDER BY usename"
    seen = {r: dict(q(c, sql)) for r, c in (('plain', plain), ('writer', writer), ('super', conn))}
    log('pg_user_mappings as each role: %s' % seen)
    check(all(v is None for v in seen['plain'].values()) and len(seen['plain']) == 2,
          'a plain role sees user mapping options: %s' % seen['plain'])
    check(seen['writer'].get('postgres') is None and 'password=secret-w' in (seen['writer'].get('blf_ac_writer') or []),
          'the mapped role sees %s' % seen['writer'])
    check('password=repl' in (seen['super'].get('postgres') or []), 'the superuser sees %s' % seen['super'])
    for c in (nopriv, writer, plain):
        c.close()
    src.drop()
    q(conn, 'DROP SCHEMA blf_ac_sec CASCADE')
    for r in ROLES:
        q(conn, 'DROP OWNED BY %s' % r)
        q(conn, 'DROP ROLE %s' % r)
    mx(m, 'DROP DATABASE %s' % db)


# ---------------------------------------------------------------------------
# transactions

NROWS = 10020               # per table: the big transaction updates 2 * (NROWS - 5) rows,
                            # more than apply() takes from the ring at once (20000)


def case_transactions(conn, m):
    db = 'blf_ac_txn'
    mdb_fresh(m, db)
    w = mdb(db=db)
    for t in ('a', 'b'):
        mx(w, 'CREATE TABLE %s (id INT PRIMARY KEY, bal INT NOT NULL)' % t)
        mx(w, 'INSERT INTO %s SELECT seq, 100 FROM seq_1_to_%d' % (t, NROWS))
    total = 2 * NROWS * 100
    src = Source(conn, 'ac_txn', r'^blf_ac_txn\.')
    src.snapshot(['blf_ac_txn.a', 'blf_ac_txn.b'])
    src.start()

    # transfers between the tables (2 rows), rows moving from a to b (2
    # rows), one transaction over every row (2 * NROWS rows), more transfers
    def transfers(n, base):
        for i in range(n):
            mx(w, 'BEGIN')
            mx(w, 'UPDATE a SET bal = bal - %d WHERE id = %d' % (i + 1, base + i))
            mx(w, 'UPDATE b SET bal = bal + %d WHERE id = %d' % (i + 1, base + 2 * i))
            mx(w, 'COMMIT')

    transfers(30, 1)
    for i in range(5):
        mx(w, 'BEGIN')
        mx(w, 'DELETE FROM a WHERE id = %d' % (NROWS - i))
        mx(w, 'INSERT INTO b VALUES (%d, 100)' % (NROWS + 1 + i))
        mx(w, 'COMMIT')
    mx(w, 'BEGIN')
    mx(w, 'UPDATE a SET bal = bal - 1')
    mx(w, 'UPDATE b SET bal = bal + 1 ORDER BY id LIMIT %d' % (NROWS - 5))
    mx(w, 'COMMIT')
    transfers(20, 100)
    src.wait_read(w, timeout=60)

    # a reader checks the invariant while apply() goes in small steps
    stop = threading.Event()
    seen = {'reads': 0, 'bad': [], 'states': set()}

    def reader():
        c = pg()
        try:
            while not stop.is_set():
                s, n = q(c, 'SELECT (SELECT sum(bal) FROM blf_ac_txn.a) + (SELECT sum(bal) FROM blf_ac_txn.b), '
                            '(SELECT count(*) FROM blf_ac_txn.a) + (SELECT count(*) FROM blf_ac_txn.b)')[0]
                seen['reads'] += 1
                seen['states'].add(q1(c, 'SELECT sum(bal) FROM blf_ac_txn.a'))
                if s != total or n != 2 * NROWS:
                    seen['bad'].append((s, n))
        except Exception as e:                      # noqa: BLE001
            seen['bad'].append('reader: %s' % e)
        finally:
            c.close()

    th = threading.Thread(target=reader)
    th.start()
    calls = []
    target = int(mx(w, 'SELECT @@last_gtid')[0][0].split('-')[2])
    d = Deadline(60)
    try:
        while int((src.applied_gtid() or '0-0-0').split('-')[2]) < target and not d.expired():
            r = src.apply(max_changes=3)
            skip = q1(conn, "SELECT skip FROM binlog_fdw.source_state WHERE server_name = 'ac_txn'")
            calls.append((r['rows'], r['transactions'], skip))
            time.sleep(0.01)
    finally:
        stop.set()
        th.join(30)
    log('apply(max_changes => 3): %d calls, rows per call %s; reader: %d reads, %d states of a' % (
        len(calls), sorted(set(c[0] for c in calls)), seen['reads'], len(seen['states'])))
    check(not d.expired(), 'apply() did not catch up within 60s: %s' % short(calls[-5:]))
    check(not seen['bad'], 'a reader saw a half-applied transaction: %s' % short(seen['bad'][:5], 400))
    check(seen['reads'] >= 20 and len(seen['states']) >= 10,
          'the reader ran %d times and saw %d states: not concurrent enough' % (seen['reads'], len(seen['states'])))
    check(all(skip == 0 for _, _, skip in calls), 'a call stopped inside a transaction: %s' % short(calls, 400))
    big = 2 * (NROWS - 5)
    small = [c for c in calls if c[0] < big]
    check(all(r <= 4 and r % 2 == 0 for r, _, _ in small),
          'apply(max_changes => 3) applied %s rows per call, expected at most two 2-row transactions'
          % sorted(set(c[0] for c in small)))
    check([c[0] for c in calls if c[0] >= big] in ([big], [big + 2]),
          'the %d-row transaction was not applied whole in one call: %s' % (big, sorted(set(c[0] for c in calls))))
    for t in ('a', 'b'):
        got = q(conn, 'SELECT id, bal FROM blf_ac_txn.%s ORDER BY id' % t)
        exp = [tuple(r) for r in mx(w, 'SELECT id, bal FROM %s ORDER BY id' % t)]
        check(got == exp, 'table %s differs (%d rows here, %d in MariaDB)' % (t, len(got), len(exp)))
    w.close()
    src.drop()
    q(conn, 'DROP SCHEMA blf_ac_txn CASCADE')
    mx(m, 'DROP DATABASE %s' % db)


def case_savepoints(conn, m):
    """SAVEPOINT / ROLLBACK TO in the binlog.  MariaDB drops the rows a
    ROLLBACK TO undoes from the transaction before logging it, unless the
    transaction changed a non-transactional (MyISAM) table after the
    savepoint: then it logs those rows and "ROLLBACK TO `sp`", and a replica
    undoes the transactional ones.  The worker took "ROLLBACK TO" for a
    COMMIT (applying the undone rows); now a ROLLBACK TO after captured rows
    stops it with an error before anything of the transaction is applied,
    one after only uncaptured rows lets the transaction go on, and the
    transaction stays whole."""
    from harness import status
    db = 'blf_ac_sp'
    other = 'blf_ac_sp_other'
    mdb_fresh(m, db)
    mdb_fresh(m, other)
    w = mdb(db=db)
    mx(w, 'CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB')
    mx(w, 'CREATE TABLE %s.m (id INT PRIMARY KEY) ENGINE=MyISAM' % other)
    mx(w, "INSERT INTO t VALUES (1, 'a')")
    src = Source(conn, 'ac_sp', r'^blf_ac_sp\.')
    src.snapshot(['blf_ac_sp.t'])
    src.start()
    # rolled back to a savepoint after uncaptured rows only: the transaction goes on
    for sql in ['BEGIN', "INSERT INTO t VALUES (2, 'before sp')", 'SAVEPOINT a',
                'INSERT INTO %s.m VALUES (1)' % other, 'ROLLBACK TO SAVEPOINT a',
                "INSERT INTO t VALUES (3, 'after rollback to')", 'COMMIT',
                # InnoDB only: MariaDB logs no ROLLBACK TO, and not the row 5
                'BEGIN', "INSERT INTO t VALUES (4, 'kept')", 'SAVEPOINT b',
                "INSERT INTO t VALUES (5, 'undone')", 'ROLLBACK TO b', 'COMMIT']:
        mx(w, sql)
    src.sync(w)
    rows = q(conn, 'SELECT id, v FROM blf_ac_sp.t ORDER BY id')
    want = [tuple(r) for r in mx(w, 'SELECT id, v FROM t ORDER BY id')]
    check(rows == want, 'savepoints without captured rows undone: PostgreSQL has %s, MariaDB %s'
          % (short(rows), short(want)))
    # captured rows undone by ROLLBACK TO (logged: MyISAM changed after the savepoint)
    f0 = mx(w, 'SHOW MASTER STATUS')[0]
    for sql in ['BEGIN', "INSERT INTO t VALUES (6, 'kept')", 'SAVEPOINT c',
                "INSERT INTO t VALUES (7, 'undone')", 'INSERT INTO %s.m VALUES (2)' % other,
                'ROLLBACK TO c', "UPDATE t SET v = 'updated' WHERE id = 1", 'COMMIT',
                "INSERT INTO t VALUES (8, 'after')"]:
        mx(w, sql)
    ev = mx(w, "SHOW BINLOG EVENTS IN '%s' FROM %d" % (f0[0], int(f0[1])))
    rb = [e for e in ev if e[2] == 'Query' and str(e[5]).startswith('ROLLBACK TO')]
    check(len(rb) == 1, 'MariaDB logged no ROLLBACK TO: %s' % short(ev, 800))
    check(mx(w, 'SELECT id FROM t WHERE id = 7') == (), 'MariaDB kept the row undone')
    dl = Deadline(30)
    st = status(conn, 'ac_sp')
    while not (st and st['last_error']) and not dl.expired():
        time.sleep(0.1)
        st = status(conn, 'ac_sp')
    src.apply(wait=0.5)
    rows = q(conn, 'SELECT id, v FROM blf_ac_sp.t ORDER BY id')
    check(rows == want, 'after the ROLLBACK TO, PostgreSQL has %s (want %s: nothing of that transaction)'
          % (short(rows), short(want)))
    check(st and st['last_error'] and 'rolled back to a savepoint' in st['last_error'],
          'the worker did not stop at the ROLLBACK TO: %s' % short(st, 400))
    check('table blf_ac_sp.t' in st['last_error'] and ':%d' % int(rb[0][1]) in st['last_error'],
          'the error names neither the table nor the position of the ROLLBACK TO (%s): %s'
          % (rb[0][1], st['last_error']))
    log('savepoints: %s' % short(st['last_error'], 300))
    src.drop()
