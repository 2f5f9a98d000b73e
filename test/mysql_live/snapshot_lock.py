"""test/mysql_live/snapshot_lock.py -- how a copy's snapshot gets its
binlog position on MySQL (src/source/bl_mysql_snapshot.c), against the
MySQL test source, which records every query with its connection and the
tables each connection holds by LOCK TABLES at that moment:

  snapshot-lock-tables  binlog_fdw.snapshot() of a table: no FLUSH TABLES
                        WITH READ LOCK; a second connection locks exactly
                        the copied table (LOCK TABLES ... READ) and holds it
                        while the snapshot's connection runs START
                        TRANSACTION WITH CONSISTENT SNAPSHOT and reads the
                        position, then unlocks before the rows are read; the
                        copied rows equal the source's; the lock's wait is
                        the server option snapshot_lock_timeout
  snapshot-lock-global  snapshot_lock 'global': FLUSH TABLES WITH READ LOCK,
                        START, the position and UNLOCK TABLES on the one
                        connection, and the source begins with the GTID set
                        read under that lock
  load-lock-chunks      CALL binlog_fdw.load() in chunks of 2 rows: each
                        chunk's snapshot locks its table the same way,
                        on a connection of its own
  snapshot-lock-refused an account without LOCK TABLES: the error names the
                        table and the hint the grant (SQLSTATE 42501); a
                        lock that times out (55P03) names the option to
                        raise; snapshot_lock 'global' without RELOAD says
                        so and points at 'tables'; a table named twice is
                        locked once, one that does not exist not at all
                        (its copy names it)

Uses cases.py's helpers (cases.source, cases.pg, ...).
"""

import cases
import psycopg2

SCHEMA = {'shop': {
    'items': [
        {'name': 'id', 'data_type': 'int', 'column_type': 'int', 'key': 'PRI', 'nullable': False},
        {'name': 'name', 'data_type': 'varchar', 'column_type': 'varchar(40)', 'charset': 'utf8mb4',
         'octet_length': 160},
        {'name': 'qty', 'data_type': 'int', 'column_type': 'int'}],
    # not copied: never locked
    'other': [
        {'name': 'id', 'data_type': 'int', 'column_type': 'int', 'key': 'PRI', 'nullable': False}],
}}
ROWS = {'shop': {'items': [
    {'id': 3, 'name': "it's", 'qty': 7},
    {'id': 1, 'name': 'first', 'qty': None},
    {'id': 2, 'name': 'zwei \u00fc', 'qty': -4},
    {'id': 10, 'name': None, 'qty': 2147483647},
]}, 'other': {}}
REPL = ['REPLICATION SLAVE', 'REPLICATION CLIENT']
USERS = [
    {'user': 'copier', 'host': '%', 'password': 'pw', 'plugin': 'caching_sha2_password',
     'grants': REPL + ['SELECT', 'LOCK TABLES']},
    {'user': 'nolock', 'host': '%', 'password': 'pw', 'plugin': 'caching_sha2_password',
     'grants': REPL + ['SELECT']},
    {'user': 'reloader', 'host': '%', 'password': 'pw', 'plugin': 'caching_sha2_password',
     'grants': REPL + ['SELECT', 'RELOAD']},
]


def make_source(name, **kw):
    return cases.source(name, ['mysql-enum-string-set.000001'], version='8.4.3', binlog_row_metadata='FULL',
                        schema=SCHEMA, rows=ROWS, users=USERS, **kw)


def create_server(conn, name, src, user='copier', **opts):
    """A source that was never started (its first copy begins it)."""
    cases.drop_source(conn, name)
    options = {'host': '127.0.0.1', 'port': str(src.port), 'server_id': '4321', 'connect_timeout': '5',
               'ssl_mode': 'disable'}
    options.update({k: str(v) for k, v in opts.items()})
    with conn.cursor() as cur:
        opt_sql = ', '.join('%s %s' % (k, cur.mogrify('%s', (v,)).decode()) for k, v in options.items())
        cur.execute('CREATE SERVER %s FOREIGN DATA WRAPPER binlog_fdw OPTIONS (%s)' % (name, opt_sql))
        cur.execute('CREATE USER MAPPING FOR CURRENT_USER SERVER %s OPTIONS (user %%s, password \'pw\')' % name,
                    (user,))


def snapshot_error(conn, name):
    try:
        cases.q(conn, "SELECT * FROM binlog_fdw.snapshot(%s, ARRAY['shop.items'])", (name,))
    except psycopg2.Error as e:
        return e
    raise cases.CaseFailure('the snapshot of %s did not fail' % name)


def settled(src, table='shop.items'):
    """The test source's query log once it has the rows' SELECT of table
    and nothing more comes for 0.3 s (node writes it asynchronously)."""
    db, t = table.split('.')
    seen = [-1, 0]

    def ready():
        e = src.entries('query')
        if not any(x['sql'].startswith('SELECT ') and '`%s`.`%s`' % (db, t) in x['sql'] for x in e):
            return None
        if len(e) == seen[0]:
            seen[1] += 1
        else:
            seen[0], seen[1] = len(e), 0
        return e if seen[1] >= 3 else None
    return cases.wait_for('the test source\'s query log', ready, 10, 0.1)


def lock_rounds(src, table='shop.items'):
    """Each snapshot's start in the test source's query log: the lock of
    exactly the table on a connection A held while connection B starts its
    transaction and reads the position, the unlock before B reads the rows;
    no FLUSH TABLES WITH READ LOCK anywhere.  [(A, lock index, B)]."""
    sqls = [(i, e['conn'], e['sql'], e['result'], e.get('locks', [])) for i, e in enumerate(settled(src, table))]
    cases.check(not any('FLUSH TABLES' in s.upper() for _, _, s, _, _ in sqls),
                'the copy sent FLUSH TABLES WITH READ LOCK: %s' % [s for _, _, s, _, _ in sqls if 'FLUSH' in s.upper()])
    db, t = table.split('.')
    want = 'LOCK TABLES `%s`.`%s` READ' % (db, t)
    locks = [x for x in sqls if x[2].upper().startswith('LOCK TABLES')]
    starts = [x for x in sqls if x[2].upper() == 'START TRANSACTION WITH CONSISTENT SNAPSHOT']
    cases.check(len(locks) == len(starts) and starts, '%d LOCK TABLES for %d snapshots' % (len(locks), len(starts)))
    rounds = []
    for si, b, _, _, slocks in starts:
        li, a, lsql, lres, _ = [x for x in locks if x[0] < si][-1]
        cases.check(lsql == want and lres == 'ok', 'the lock is "%s" (%s), not exactly %s' % (lsql, lres, table))
        cases.check(b != a, 'the snapshot started on the locking connection %s (START releases its lock)' % a)
        held = '%s:%s' % (a, table)
        cases.check(slocks == [held], 'START on connection %s ran without the lock held (locks %s)' % (b, slocks))
        status = [x for x in sqls if x[0] > si and x[1] == b and
                  x[2].upper() in ('SHOW BINARY LOG STATUS', 'SHOW MASTER STATUS') and x[3].endswith(' rows')]
        cases.check(status and status[0][4] == [held],
                    'the position was not read on connection %s after START with the lock held: %s' % (b, status[:1]))
        unlock = [x for x in sqls if x[0] > li and x[1] == a and x[2].upper() == 'UNLOCK TABLES']
        cases.check(unlock and unlock[0][0] > status[0][0] and unlock[0][4] == [],
                    'UNLOCK TABLES on connection %s did not come after the position: %s' % (a, unlock[:1]))
        reads = [x for x in sqls if x[0] > si and x[1] == b and x[2].startswith('SELECT ') and
                 '`%s`.`%s`' % (db, t) in x[2] and 'information_schema' not in x[2]]
        cases.check(reads and reads[0][0] > unlock[0][0] and reads[0][4] == [],
                    'the rows were not read after the unlock: %s' % reads[:1])
        cases.log('lock on %s at %d, START on %s at %d, position at %d, unlock at %d, rows at %d: %s'
                  % (a, li, b, si, status[0][0], unlock[0][0], reads[0][0], reads[0][2]))
        rounds.append((a, li, b))
    return rounds


def case_snapshot_lock_tables(conn):
    # the set SHOW BINARY LOG STATUS reports has a commit more than the
    # binlog up to the position (one of another table, between the two
    # reads): the source must begin with the set at the position
    src = make_source('snap-lock', gtid_executed=cases.ENUM_UUID + ':1-6')
    create_server(conn, 'my_snap', src, snapshot_lock_timeout=7)
    cases.q(conn, 'DROP SCHEMA IF EXISTS shop CASCADE')
    cases.q(conn, 'CREATE SCHEMA shop')
    got = cases.q(conn, "SELECT source, rows, snapshot_position FROM binlog_fdw.snapshot('my_snap', ARRAY['shop.items'])")
    cases.log('snapshot: %s' % (got,))
    cases.check(len(got) == 1 and got[0][0] == 'shop.items' and got[0][1] == 4, 'snapshot() returned %s' % (got,))
    rows = cases.q(conn, 'SELECT id, name, qty FROM shop.items ORDER BY id')
    want = sorted((r['id'], r['name'], r['qty']) for r in ROWS['shop']['items'])
    cases.check(rows == want, 'copied rows %s, the source has %s' % (rows, want))

    rounds = lock_rounds(src)
    cases.check(len(rounds) == 1, 'snapshot() took %d snapshots' % len(rounds))
    a, li = rounds[0][0], rounds[0][1]
    cases.check(any(e['conn'] == a and e['sql'] == 'SET SESSION lock_wait_timeout = 7' and i < li
                    for i, e in enumerate(settled(src))),
                'connection %s did not bound its lock wait by snapshot_lock_timeout (7) before locking' % a)
    # the source begins there, with the GTID set read from the binlog up to
    # the position (a non-blocking dump of the file from its start)
    state = cases.q(conn, "SELECT file, pos, gtid_state FROM binlog_fdw.source_state WHERE server_name = 'my_snap'")
    cases.check(state == [('mysql-enum-string-set.000001', int(got[0][2].split(':')[1]), cases.ENUM_UUID + ':1-5')],
                'the source begins at %s, not at the snapshot %s with the set %s:1-5 of its binlog'
                % (state, got[0][2], cases.ENUM_UUID))
    dumps = src.entries('dump')
    cases.check(len(dumps) == 1 and dumps[0]['file'] == 'mysql-enum-string-set.000001' and dumps[0]['pos'] == 4
                and dumps[0]['server_id'] == 4321 and dumps[0]['flags'] & 1,
                'the GTID set was not read by one non-blocking dump of the file: %s' % dumps)
    cases.drop_source(conn, 'my_snap')
    cases.q(conn, 'DROP SCHEMA shop CASCADE')


def case_snapshot_lock_global(conn):
    src = make_source('snap-global')
    create_server(conn, 'my_global', src, user='reloader', snapshot_lock='global')
    cases.q(conn, 'DROP SCHEMA IF EXISTS shop CASCADE')
    cases.q(conn, 'CREATE SCHEMA shop')
    got = cases.q(conn, "SELECT source, rows, snapshot_position FROM binlog_fdw.snapshot('my_global', ARRAY['shop.items'])")
    rows = cases.q(conn, 'SELECT id, name, qty FROM shop.items ORDER BY id')
    want = sorted((r['id'], r['name'], r['qty']) for r in ROWS['shop']['items'])
    cases.check(rows == want, 'copied rows %s, the source has %s' % (rows, want))
    log = [(e['conn'], e['sql'].upper()) for e in settled(src)]
    seq = [x for x in log if x[1] in ('FLUSH TABLES WITH READ LOCK', 'START TRANSACTION WITH CONSISTENT SNAPSHOT',
                                      'SHOW BINARY LOG STATUS', 'UNLOCK TABLES')]
    cases.check(len(set(c for c, _ in seq)) == 1 and [x[1] for x in seq] ==
                ['FLUSH TABLES WITH READ LOCK', 'START TRANSACTION WITH CONSISTENT SNAPSHOT',
                 'SHOW BINARY LOG STATUS', 'UNLOCK TABLES'],
                'snapshot_lock global sent %s' % seq)
    cases.check(not any(s.startswith('LOCK TABLES') for _, s in log), 'snapshot_lock global sent LOCK TABLES')
    # under the global lock the set read is the one at the position
    state = cases.q(conn, "SELECT file, pos, gtid_state FROM binlog_fdw.source_state WHERE server_name = 'my_global'")
    my = cases.my(src, user='reloader', password='pw')
    with my.cursor() as cur:
        cur.execute('SHOW BINARY LOG STATUS')
        f, p, _, _, executed = cur.fetchone()
    my.close()
    cases.check(executed.startswith(cases.ENUM_UUID + ':') and
                state == [(f, int(p), executed)] and got[0][2] == '%s:%s' % (f, p),
                'the source begins at %s, the snapshot at %s (the source: %s:%s, set %s)'
                % (state, got[0][2], f, p, executed))
    cases.drop_source(conn, 'my_global')
    cases.q(conn, 'DROP SCHEMA shop CASCADE')


def case_load_lock_chunks(conn):
    src = make_source('load-lock')
    create_server(conn, 'my_load', src)
    cases.q(conn, 'DROP SCHEMA IF EXISTS shop CASCADE')
    cases.q(conn, 'CREATE SCHEMA shop')
    cases.q(conn, "CALL binlog_fdw.load('my_load', ARRAY['shop.items'], chunk_rows => 2, parallel => 1)")
    rows = cases.q(conn, 'SELECT id, name, qty FROM shop.items ORDER BY id')
    want = sorted((r['id'], r['name'], r['qty']) for r in ROWS['shop']['items'])
    cases.check(rows == want, 'loaded rows %s, the source has %s' % (rows, want))
    rounds = lock_rounds(src)
    cases.check(len(rounds) >= 2, 'load() in chunks of 2 of 4 rows took %d snapshots' % len(rounds))
    # the GTID set at the position: read once, for the chunk the source begins at
    dumps = src.entries('dump')
    cases.check(len(dumps) == 1, 'load() read the binlog %d times for %d chunks' % (len(dumps), len(rounds)))
    cases.drop_source(conn, 'my_load')
    cases.q(conn, 'DROP SCHEMA shop CASCADE')


def case_snapshot_lock_refused(conn):
    src = make_source('snap-refused')
    busy = make_source('snap-busy', busy_tables=['shop.items'])
    cases.q(conn, 'DROP SCHEMA IF EXISTS shop CASCADE')
    cases.q(conn, 'CREATE SCHEMA shop')
    checks = [
        (src, dict(user='nolock'), '42501', 'could not lock table shop.items for the snapshot',
         'grant the source account LOCK TABLES and SELECT'),
        (busy, {}, '55P03', 'could not lock table shop.items for the snapshot: Lock wait timeout exceeded',
         'raise the server option snapshot_lock_timeout'),
        (src, dict(snapshot_lock='global'), '42501', 'FLUSH TABLES WITH READ LOCK',
         "set snapshot_lock to 'tables'"),
    ]
    for s, kw, code, text, hint in checks:
        create_server(conn, 'my_refused', s, **kw)
        e = snapshot_error(conn, 'my_refused')
        msg = e.diag.message_primary or ''
        h = e.diag.message_hint or ''
        cases.log('%s: %s [%s] HINT: %s' % (kw, msg, e.pgcode, h))
        cases.check(e.pgcode == code and text in msg and hint in h,
                    'expected %s "%s" with hint "%s", got %s "%s" hint "%s"' % (code, text, hint, e.pgcode, msg, h))
        cases.check(cases.q(conn, "SELECT count(*) FROM pg_class WHERE relname = 'items' AND "
                                  "relnamespace = 'shop'::regnamespace") == [(0,)],
                    'a target was created despite the refused lock')
        cases.drop_source(conn, 'my_refused')
    # a table that does not exist is not locked (LOCK TABLES would refuse
    # them all); its copy names it
    create_server(conn, 'my_refused', src)
    try:
        cases.q(conn, "SELECT * FROM binlog_fdw.snapshot('my_refused', ARRAY['shop.items', 'shop.missing', 'shop.items'])")
        e = None
    except psycopg2.Error as x:
        e = x
    locks = [x['sql'] for x in src.entries('query') if x['sql'].upper().startswith('LOCK TABLES')]
    cases.log('missing table: %s; %s' % (e and e.diag.message_primary, locks))
    cases.check(e is not None and 'shop.missing' in (e.diag.message_primary or '') and
                'could not lock' not in (e.diag.message_primary or ''),
                'the snapshot of a missing table: %s' % (e and e.diag.message_primary))
    cases.check(locks and locks[-1] == 'LOCK TABLES `shop`.`items` READ', 'locked %s' % locks)
    cases.drop_source(conn, 'my_refused')
    cases.q(conn, 'DROP SCHEMA shop CASCADE')
