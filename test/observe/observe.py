#!/usr/bin/python3
"""
test/observe/observe.py -- control and observability, live (issue #13):
MariaDB main -> binlog_fdw sources on PostgreSQL main, in a database of
this suite's own (blf_observe).  Run by test/suites/88-observe.sh; prints
"ok - observe/NAME" or "not ok - observe/NAME: reason" per case.

Cases:
  origins     apply() and the continuous worker mark their transactions with
              the source's replication origin: pg_replication_origin_status
              shows it with the acknowledged position as remote_lsn, and
              test_decoding's only-local option skips binlog_fdw's writes
              while it keeps the local ones
  wait-for    wait_for() with a MariaDB GTID, a binlog position and NULL (the
              source's current end): false before the changes are applied
              (timeout), true at once after; under a running writer with the
              continuous worker, the rows MariaDB committed up to the target
              are visible once it returns; bad targets are clear errors

  exporter    Debian's prometheus-postgres-exporter with docs/metrics/
              binlog_fdw.yaml, connected as a role granted only the status
              view: its HTTP /metrics serves every binlog_fdw_source_* metric
              with the values of binlog_fdw.status, labelled by source
  stats       binlog_fdw.source_stats and table_stats count transactions,
              rows by operation, conflicts by kind, failed applies, bytes
              read and a reconnect (Binlog Dump thread killed), equal to
              what was done; they survive a crash (immediate shutdown)
              exactly; reset_stats() starts them afresh; a rename carries
              them, a drop removes them (its conflict log stays)
  verify      verify() at a binlog position: changes committed after the
              snapshot() are applied up to the position first; a value
              changed, a row deleted and a row added directly in PostgreSQL
              are reported with their keys and both rows; an equal table
              reports nothing; under a concurrent writer it applies exactly
              up to its position (source_state ends there, the written
              table compares equal); refused while the continuous worker
              applies

Environment: BLF_OBSERVE_CASES (a comma-separated subset).
"""

import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'apply_cases'))

import psycopg2                                     # noqa: E402

import harness                                      # noqa: E402
from harness import (Fail, Source, check, expect_error, log, mdb, mdb_fresh, mx, q, q1,  # noqa: E402
                     short, wait_for)

PGDB = 'blf_observe'
MDB_DB = 'blf_obs'


def pg(db=PGDB):
    return harness.pg(db=db)


def origin_lsn(file, pos):
    """binlog_fdw's pseudo-LSN of a binlog position (src/apply/origin.c)."""
    number = int(file.rsplit('.', 1)[1])
    v = (number << 40) | pos
    return '%X/%X' % (v >> 32, v & 0xFFFFFFFF)


def case_origins(conn, m):
    mdb_fresh(m, MDB_DB)
    mx(m, 'CREATE TABLE %s.t (id INT PRIMARY KEY, v TEXT)' % MDB_DB)
    q(conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % MDB_DB)
    q(conn, 'CREATE SCHEMA %s' % MDB_DB)
    q(conn, 'CREATE TABLE %s.t (id int PRIMARY KEY, v text)' % MDB_DB)
    q(conn, 'CREATE TABLE public.local_t (id int PRIMARY KEY)')
    src = Source(conn, 'obs_origin', r'^%s\.' % MDB_DB)
    srvid = q1(conn, "SELECT oid FROM pg_foreign_server WHERE srvname = 'obs_origin'")
    dboid = q1(conn, 'SELECT oid FROM pg_database WHERE datname = current_database()')
    slot = 'blf_obs_td'
    q(conn, "SELECT pg_create_logical_replication_slot(%s, 'test_decoding')", (slot,))
    try:
        src.start()
        mx(m, "INSERT INTO %s.t VALUES (1, 'from mariadb'), (2, 'two')" % MDB_DB)
        q(conn, 'INSERT INTO public.local_t VALUES (10)')
        src.sync(m)
        q(conn, 'INSERT INTO public.local_t VALUES (11)')
        # the origin and its progress
        name = 'binlog_fdw_%d_%d' % (dboid, srvid)
        rows = q(conn, 'SELECT o.roname, s.remote_lsn::text FROM pg_replication_origin o '
                       'JOIN pg_replication_origin_status s ON s.local_id = o.roident WHERE o.roname = %s',
                 (name,))
        check(len(rows) == 1, 'pg_replication_origin_status has no origin %s: %r'
              % (name, q(conn, 'SELECT * FROM pg_replication_origin')))
        st = q(conn, 'SELECT file, pos FROM binlog_fdw.source_state WHERE server_name = %s', ('obs_origin',))
        check(st and rows[0][1] == origin_lsn(st[0][0], st[0][1]),
              'origin %s: remote_lsn %s, expected %s (acknowledged %r)'
              % (name, rows[0][1], origin_lsn(st[0][0], st[0][1]) if st else None, st))
        # logical decoding downstream: only-local keeps the local inserts only
        allc = [r[0] for r in q(conn, "SELECT data FROM pg_logical_slot_peek_changes(%s, NULL, NULL)", (slot,))]
        local = [r[0] for r in q(conn, "SELECT data FROM pg_logical_slot_peek_changes(%s, NULL, NULL, "
                                       "'only-local', '1')", (slot,))]
        want_applied = ["table blf_obs.t: INSERT: id[integer]:1 v[text]:'from mariadb'",
                        "table blf_obs.t: INSERT: id[integer]:2 v[text]:'two'"]
        want_local = ['table public.local_t: INSERT: id[integer]:10', 'table public.local_t: INSERT: id[integer]:11']
        for w in want_applied + want_local:
            check(w in allc, 'decoding without only-local misses %r: %s' % (w, short(allc, 800)))
        for w in want_local:
            check(w in local, "decoding with only-local misses the local change %r: %s" % (w, short(local, 800)))
        for w in want_applied:
            check(w not in local, "only-local decodes binlog_fdw's write %r (no origin on it)" % w)
        # the continuous worker marks its writes too
        q(conn, "SELECT pg_replication_slot_advance(%s, pg_current_wal_lsn())", (slot,))
        q(conn, "ALTER SERVER obs_origin OPTIONS (ADD continuous 'true')")
        q(conn, 'SELECT binlog_fdw.stop(%s)', ('obs_origin',))
        src.start()
        mx(m, "INSERT INTO %s.t VALUES (3, 'continuous')" % MDB_DB)
        wait_for('the continuous worker to apply id 3',
                 lambda: q1(conn, 'SELECT count(*) FROM %s.t WHERE id = 3' % MDB_DB) == 1, 30)
        q(conn, 'INSERT INTO public.local_t VALUES (12)')
        allc = [r[0] for r in q(conn, "SELECT data FROM pg_logical_slot_peek_changes(%s, NULL, NULL)", (slot,))]
        local = [r[0] for r in q(conn, "SELECT data FROM pg_logical_slot_peek_changes(%s, NULL, NULL, "
                                       "'only-local', '1')", (slot,))]
        w3 = "table blf_obs.t: INSERT: id[integer]:3 v[text]:'continuous'"
        check(w3 in allc, 'decoding misses the continuous write: %s' % short(allc, 800))
        check(w3 not in local, "only-local decodes the continuous worker's write (no origin on it)")
        check('table public.local_t: INSERT: id[integer]:12' in local, 'only-local misses the local insert 12')
        st = q(conn, 'SELECT file, pos FROM binlog_fdw.source_state WHERE server_name = %s', ('obs_origin',))
        wait_for('the origin to show the continuous worker\'s position', lambda: q1(
            conn, 'SELECT s.remote_lsn::text FROM pg_replication_origin o JOIN pg_replication_origin_status s '
                  'ON s.local_id = o.roident WHERE o.roname = %s', (name,)) == origin_lsn(*q(
                      conn, 'SELECT file, pos FROM binlog_fdw.source_state WHERE server_name = %s',
                      ('obs_origin',))[0]), 10)
        # the origin goes with its server (origins hold replication state slots)
        src.drop()
        check(q1(conn, 'SELECT count(*) FROM pg_replication_origin WHERE roname = %s', (name,)) == 0,
              'origin %s outlived DROP SERVER' % name)
        # ... and with a dropped database: the next new origin cleans it up
        admin = harness.pg(db='postgres')
        q(admin, 'DROP DATABASE IF EXISTS blf_obs_gone WITH (FORCE)')
        q(admin, 'CREATE DATABASE blf_obs_gone')
        g = harness.pg(db='blf_obs_gone')
        q(g, 'CREATE EXTENSION binlog_fdw')
        q(g, 'CREATE SCHEMA %s' % MDB_DB)
        q(g, 'CREATE TABLE %s.t (id int PRIMARY KEY, v text)' % MDB_DB)
        gone = Source(g, 'obs_gone', r'^%s\.' % MDB_DB)
        gone.start()
        mx(m, "INSERT INTO %s.t VALUES (4, 'gone')" % MDB_DB)
        gone.sync(m)
        gone_name = 'binlog_fdw_%d_%d' % (q1(g, 'SELECT oid FROM pg_database WHERE datname = current_database()'),
                                         q1(g, "SELECT oid FROM pg_foreign_server WHERE srvname = 'obs_gone'"))
        q(g, 'SELECT binlog_fdw.stop(%s)', ('obs_gone',))
        g.close()
        q(admin, 'DROP DATABASE blf_obs_gone WITH (FORCE)')
        check(q1(conn, 'SELECT count(*) FROM pg_replication_origin WHERE roname = %s', (gone_name,)) == 1,
              'origin %s of the dropped database is already gone (the test proves nothing)' % gone_name)
        again = Source(conn, 'obs_origin2', r'^%s\.' % MDB_DB)
        again.start()
        mx(m, "INSERT INTO %s.t VALUES (5, 'again')" % MDB_DB)
        again.sync(m)
        check(q1(conn, 'SELECT count(*) FROM pg_replication_origin WHERE roname = %s', (gone_name,)) == 0,
              'origin %s of a dropped database outlived the next new origin' % gone_name)
        again.drop()
        # many sources one after another never run out of state slots
        slots = q1(conn, "SELECT setting::int FROM pg_settings WHERE name = 'max_replication_slots'")
        for i in range(slots + 2):
            s_i = Source(conn, 'obs_many_%d' % i, r'^%s\.' % MDB_DB)
            s_i.start()
            mx(m, "INSERT INTO %s.t VALUES (%d, 'many')" % (MDB_DB, 100 + i))
            s_i.sync(m)
            s_i.drop()
        left = q1(conn, "SELECT count(*) FROM pg_replication_origin WHERE roname LIKE 'binlog\\_fdw\\_%%'")
        check(left == 0, '%d binlog_fdw origins left after every source was dropped' % left)
    finally:
        q(conn, 'SELECT pg_drop_replication_slot(%s)', (slot,))
        src.drop()
        q(conn, 'DROP TABLE IF EXISTS public.local_t')


def case_wait_for(conn, m):
    mdb_fresh(m, MDB_DB)
    mx(m, 'CREATE TABLE %s.w (id INT PRIMARY KEY, v INT)' % MDB_DB)
    q(conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % MDB_DB)
    q(conn, 'CREATE SCHEMA %s' % MDB_DB)
    q(conn, 'CREATE TABLE %s.w (id int PRIMARY KEY, v int)' % MDB_DB)
    src = Source(conn, 'obs_wait', r'^%s\.' % MDB_DB)
    try:
        src.start()
        mx(m, 'INSERT INTO %s.w VALUES (1, 1)' % MDB_DB)
        gtid = mx(m, 'SELECT @@last_gtid')[0][0]
        ms = mx(m, 'SHOW MASTER STATUS')[0]
        pos = '%s:%d' % (ms[0], int(ms[1]))
        src.wait_read(m)
        # nothing applied yet: each form times out
        for target in (gtid, pos, None):
            t0 = time.monotonic()
            r = q1(conn, 'SELECT binlog_fdw.wait_for(%s, %s, 0.3)', ('obs_wait', target))
            check(r is False, 'wait_for(%r) before apply returned %r' % (target, r))
            check(time.monotonic() - t0 >= 0.25, 'wait_for(%r, 0.3) returned after %.2fs'
                  % (target, time.monotonic() - t0))
        src.apply()
        for target in (gtid, pos, None):
            r = q1(conn, 'SELECT binlog_fdw.wait_for(%s, %s, 5)', ('obs_wait', target))
            check(r is True, 'wait_for(%r) after apply returned %r' % (target, r))
        # under load, with the continuous worker: rows up to the target are visible on return
        q(conn, "ALTER SERVER obs_wait OPTIONS (ADD continuous 'true')")
        q(conn, 'SELECT binlog_fdw.stop(%s)', ('obs_wait',))
        src.start()
        stop = threading.Event()
        errors = []

        def writer():
            w = mdb()
            try:
                i = 100
                while not stop.is_set():
                    mx(w, 'INSERT INTO %s.w VALUES (%d, %d)' % (MDB_DB, i, i))
                    i += 1
            except Exception as e:                  # noqa: BLE001
                errors.append(e)
            finally:
                w.close()
        th = threading.Thread(target=writer)
        th.start()
        try:
            for _ in range(5):
                time.sleep(0.2)
                # the rows counted are all in the GTID state read after them
                n = mx(m, 'SELECT count(*) FROM %s.w' % MDB_DB)[0][0]
                mine = mx(m, 'SELECT @@gtid_binlog_pos')[0][0]
                r = q1(conn, 'SELECT binlog_fdw.wait_for(%s, %s, 30)', ('obs_wait', mine))
                check(r is True, 'wait_for(%s) under load returned %r' % (mine, r))
                got = q1(conn, 'SELECT count(*) FROM %s.w' % MDB_DB)
                check(got >= n, 'after wait_for(%s): PostgreSQL has %d rows, MariaDB had %d before it'
                      % (mine, got, n))
        finally:
            stop.set()
            th.join()
        check(not errors, 'writer failed: %r' % errors)
        # the drain of a cut-over: writes stopped, wait_for(NULL) until all is applied
        r = q1(conn, 'SELECT binlog_fdw.wait_for(%s, NULL, 30)', ('obs_wait',))
        check(r is True, 'wait_for(NULL) after the writer stopped returned %r' % r)
        mrows = mx(m, 'SELECT id, v FROM %s.w ORDER BY id' % MDB_DB)
        prows = q(conn, 'SELECT id, v FROM %s.w ORDER BY id' % MDB_DB)
        check([tuple(r) for r in mrows] == [tuple(r) for r in prows],
              'after the drain: MariaDB has %d rows, PostgreSQL %d' % (len(mrows), len(prows)))
        expect_error(conn, 'SELECT binlog_fdw.wait_for(%s, %s)', ('obs_wait', 'not a target'),
                     'a bad target', sqlstate='22023', message='invalid wait_for() target "not a target"')
        expect_error(conn, 'SELECT binlog_fdw.wait_for(%s, %s, -1)', ('obs_wait', gtid),
                     'a negative timeout', sqlstate='22023')
    finally:
        src.drop()


EXPORTER = '/usr/bin/prometheus-postgres-exporter'


def free_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


def scrape(port):
    with urllib.request.urlopen('http://127.0.0.1:%d/metrics' % port, timeout=10) as r:
        text = r.read().decode()
    metrics = {}
    for line in text.splitlines():
        m = re.match(r'^(binlog_fdw_\w+)\{([^}]*)\} (\S+)$', line)
        if m:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
            metrics[(m.group(1), labels.get('source'))] = float(m.group(3))
    return text, metrics


def case_exporter(conn, m):
    check(os.path.exists(EXPORTER), '%s is not installed (scripts/install-deps.sh)' % EXPORTER)
    mdb_fresh(m, MDB_DB)
    mx(m, 'CREATE TABLE %s.e (id INT PRIMARY KEY)' % MDB_DB)
    q(conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % MDB_DB)
    q(conn, 'CREATE SCHEMA %s' % MDB_DB)
    q(conn, 'CREATE TABLE %s.e (id int PRIMARY KEY)' % MDB_DB)
    src = Source(conn, 'obs_exp', r'^%s\.' % MDB_DB)
    q(conn, 'DROP ROLE IF EXISTS blf_obs_metrics')
    q(conn, 'CREATE ROLE blf_obs_metrics LOGIN')
    q(conn, 'GRANT USAGE ON SCHEMA binlog_fdw TO blf_obs_metrics')
    q(conn, 'GRANT SELECT ON binlog_fdw.status TO blf_obs_metrics')
    q(conn, 'GRANT EXECUTE ON FUNCTION binlog_fdw.status() TO blf_obs_metrics')
    q(conn, 'GRANT SELECT ON binlog_fdw.source_stats TO blf_obs_metrics')
    q(conn, 'GRANT EXECUTE ON FUNCTION binlog_fdw.stats_unflushed() TO blf_obs_metrics')
    proc = None
    try:
        src.start()
        for i in range(25):
            mx(m, 'INSERT INTO %s.e VALUES (%d)' % (MDB_DB, i))
        src.wait_read(m)
        port = free_port()
        env = dict(os.environ)
        env['DATA_SOURCE_NAME'] = ('host=%s port=%s user=blf_obs_metrics dbname=%s sslmode=disable'
                                   % (harness.PGHOST, harness.PGPORT, PGDB))
        yaml = os.path.join(HERE, '..', '..', 'docs', 'metrics', 'binlog_fdw.yaml')
        logf = open(os.path.join(os.environ.get('BLF_SUITE_TMP', '/tmp'), 'exporter.log'), 'w')
        proc = subprocess.Popen([EXPORTER, '--web.listen-address=127.0.0.1:%d' % port,
                                 '--extend.query-path=%s' % yaml, '--disable-default-metrics',
                                 '--disable-settings-metrics'],
                                env=env, stdout=logf, stderr=subprocess.STDOUT)
        got = {}

        def ready():
            nonlocal got
            try:
                got = scrape(port)
            except OSError:
                return False
            return ('binlog_fdw_source_up', 'obs_exp') in got[1]
        wait_for('the exporter to serve binlog_fdw_source_up', ready, 30, 0.2)
        text, metrics = got
        st = q(conn, 'SELECT ring_bytes_total, changes_unacked, changes_total, batches_out, '
                     "state FROM binlog_fdw.status WHERE server = 'obs_exp'")[0]
        want = {'binlog_fdw_source_up': 1.0 if st[4] == 'streaming' else 0.0,
                'binlog_fdw_source_ring_bytes_total': float(st[0]),
                'binlog_fdw_source_changes_unacked': float(st[1]),
                'binlog_fdw_source_changes_total': float(st[2]),
                'binlog_fdw_source_batches_out': float(st[3]),
                'binlog_fdw_source_error': 0.0}
        for k, v in want.items():
            check(metrics.get((k, 'obs_exp')) == v, '%s{source="obs_exp"}: %r, binlog_fdw.status says %r'
                  % (k, metrics.get((k, 'obs_exp')), v))
        check(st[1] == 75, 'changes_unacked %r, expected 75 (25 transactions of 3 changes)' % st[1])
        for name in ('lag_seconds', 'ring_bytes_used', 'ring_entries', 'changes_per_sec', 'ring_full',
                     'last_error_time_seconds', 'applied_transactions', 'applied_rows',
                     'apply_lag_seconds', 'apply_error', 'worker_peak_rss_bytes'):
            check(('binlog_fdw_source_' + name, 'obs_exp') in metrics,
                  'the exporter serves no binlog_fdw_source_%s: %s' % (name, short(text, 1500)))
        check('# HELP binlog_fdw_source_lag_seconds Seconds between' in text,
              'no HELP text for binlog_fdw_source_lag_seconds')
        check('# TYPE binlog_fdw_source_changes_total counter' in text,
              'binlog_fdw_source_changes_total is not a counter')
        # applied changes move the metrics
        src.apply()
        wait_for('changes_unacked 0 in the exporter', lambda: scrape(port)[1].get(
            ('binlog_fdw_source_changes_unacked', 'obs_exp')) == 0.0, 20, 0.3)
        # and the cumulative statistics (binlog_fdw.source_stats)
        wait_for('binlog_fdw_stats_rows_inserted 25 in the exporter', lambda: scrape(port)[1].get(
            ('binlog_fdw_stats_rows_inserted', 'obs_exp')) == 25.0, 20, 0.3)
        text, metrics = scrape(port)
        ss = q(conn, "SELECT transactions, rows_inserted, rows_updated, errors, bytes_read "
                     "FROM binlog_fdw.source_stats WHERE server_name = 'obs_exp'")[0]
        for i, k in enumerate(('transactions', 'rows_inserted', 'rows_updated', 'errors', 'bytes_read')):
            check(metrics.get(('binlog_fdw_stats_' + k, 'obs_exp')) == float(ss[i]),
                  'binlog_fdw_stats_%s{source="obs_exp"}: %r, source_stats says %r'
                  % (k, metrics.get(('binlog_fdw_stats_' + k, 'obs_exp')), ss[i]))
        check(ss[0] == 25 and ss[1] == 25 and ss[4] > 0, 'source_stats of obs_exp: %s' % (ss,))
        check('# TYPE binlog_fdw_stats_bytes_read counter' in text, 'binlog_fdw_stats_bytes_read is not a counter')
    finally:
        if proc:
            proc.terminate()
            proc.wait(10)
        src.drop()
        q(conn, 'REVOKE ALL ON binlog_fdw.status FROM blf_obs_metrics')
        q(conn, 'REVOKE ALL ON FUNCTION binlog_fdw.status() FROM blf_obs_metrics')
        q(conn, 'REVOKE ALL ON binlog_fdw.source_stats FROM blf_obs_metrics')
        q(conn, 'REVOKE ALL ON FUNCTION binlog_fdw.stats_unflushed() FROM blf_obs_metrics')
        q(conn, 'REVOKE ALL ON SCHEMA binlog_fdw FROM blf_obs_metrics')
        q(conn, 'DROP ROLE IF EXISTS blf_obs_metrics')


STATS_COLS = ('transactions, rows_inserted, rows_updated, rows_deleted, ddl, conflicts_missing_row, '
              'conflicts_duplicate_key, conflicts_constraint_violation, errors')


def source_stats(conn, name, table='binlog_fdw.source_stats'):
    r = q(conn, 'SELECT %s, bytes_read FROM %s WHERE server_name = %%s' % (STATS_COLS, table), (name,))
    check(len(r) == 1, '%s of %s: %s' % (table, name, r))
    return r[0]


def case_stats(conn, m):
    mdb_fresh(m, MDB_DB)
    mx(m, 'CREATE TABLE %s.s (id INT PRIMARY KEY, v VARCHAR(20))' % MDB_DB)
    q(conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % MDB_DB)
    q(conn, 'CREATE SCHEMA %s' % MDB_DB)
    q(conn, 'CREATE TABLE %s.s (id int PRIMARY KEY, v text)' % MDB_DB)
    src = Source(conn, 'obs_st', r'^%s\.' % MDB_DB)
    src.start()
    q(conn, "SELECT binlog_fdw.reset_stats('obs_st')")
    t = MDB_DB + '.s'
    for i in range(1, 6):
        mx(m, "INSERT INTO %s VALUES (%d, 'v%d')" % (t, i, i))           # 5 transactions
    mx(m, "UPDATE %s SET v = 'u' WHERE id IN (1, 2)" % t)               # 1, 2 rows
    mx(m, 'DELETE FROM %s WHERE id = 5' % t)                            # 1
    src.sync(m)
    # a conflict stopping apply (error), then fixed: one error, one conflict
    q(conn, 'DELETE FROM %s WHERE id = 3' % t)
    mx(m, "UPDATE %s SET v = 'w' WHERE id = 3" % t)                     # 1
    src.apply_error(m, 'update of a missing row', sqlstate='P0002')
    st = source_stats(conn, 'obs_st')
    check(st[8] == 1, 'errors %s after a failed apply, expected 1 (%s)' % (st[8], st))
    q(conn, "INSERT INTO %s VALUES (3, 'v3')" % t)
    src.sync(m)
    # a conflict resolved by the policy skip
    q(conn, "ALTER SERVER obs_st OPTIONS (ADD conflict 'skip')")
    q(conn, "INSERT INTO %s VALUES (9, 'local')" % t)
    mx(m, "INSERT INTO %s VALUES (9, 'n')" % t)                         # 1
    src.sync(m)
    want = (9, 6, 3, 1, 0, 1, 1, 0, 1)
    st = source_stats(conn, 'obs_st')
    check(st[:9] == want, 'source_stats %s, expected %s (%s)' % (st[:9], want, STATS_COLS))
    check(st[9] > 0, 'bytes_read %s' % st[9])
    ts = q(conn, 'SELECT source_table, target_table, rows_inserted, rows_updated, rows_deleted, '
                 'conflicts_missing_row, conflicts_duplicate_key FROM binlog_fdw.table_stats '
                 "WHERE server_name = 'obs_st'")
    check(ts == [(t, t, 6, 3, 1, 1, 1)], 'table_stats %s' % ts)
    # a crash: what the tables hold comes back exactly
    stored = source_stats(conn, 'obs_st', 'binlog_fdw.stats_source')
    check(stored[:9] == want and stored[9] > 0, 'stats_source %s' % (stored,))
    conn.close()
    t0 = time.monotonic()
    subprocess.run(['bash', os.path.join(HERE, '..', '..', 'scripts', 'postgres.sh'), 'restart',
                    '--mode', 'immediate'], check=True, timeout=120, stdout=subprocess.DEVNULL)
    log('PostgreSQL restarted (immediate) in %.1fs' % (time.monotonic() - t0))
    conn = wait_for('PostgreSQL', lambda: pg(), 30)
    after = source_stats(conn, 'obs_st', 'binlog_fdw.stats_source')
    check(after == stored, 'after a crash: %s, before %s' % (after, stored))
    ts2 = q(conn, 'SELECT source_table, target_table, rows_inserted, rows_updated, rows_deleted, '
                  'conflicts_missing_row, conflicts_duplicate_key FROM binlog_fdw.table_stats '
                  "WHERE server_name = 'obs_st'")
    check(ts2 == ts, 'table_stats after a crash: %s, before %s' % (ts2, ts))
    # the source streams again: its new reads are added on
    mx(m, "INSERT INTO %s VALUES (10, 'x')" % t)
    wait_for('the source after the restart', lambda: q1(
        conn, "SELECT count(*) FROM binlog_fdw.status WHERE server = 'obs_st' AND state = 'streaming'") == 1, 60, 0.3)
    src.conn = conn
    src.sync(m)
    st = source_stats(conn, 'obs_st')
    check(st[:3] == (10, 7, 3) and st[9] > stored[9], 'after the restart and one insert: %s' % (st,))
    check(q1(conn, "SELECT reconnects FROM binlog_fdw.source_stats WHERE server_name = 'obs_st'") == 0,
          'reconnects after a restart (a new worker streams for the first time)')
    # a lost connection: the worker streams again, counted as a reconnect
    dumps = [r[0] for r in mx(m, "SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'")]
    check(dumps, 'no Binlog Dump thread on MariaDB')
    for i in dumps:
        mx(m, 'KILL %d' % i)
    wait_for('a reconnect in source_stats', lambda: q1(
        conn, "SELECT reconnects FROM binlog_fdw.source_stats WHERE server_name = 'obs_st'") == 1, 60, 0.3)
    mx(m, "INSERT INTO %s VALUES (12, 'z')" % t)
    src.sync(m)
    check(q1(conn, "SELECT reconnects FROM binlog_fdw.stats_source WHERE server_name = 'obs_st'") == 1,
          'the reconnect is not written by the next apply')
    # a clean restart without stop(): the worker writes what it counted as
    # it exits (here: bytes read and not applied yet)
    mx(m, "INSERT INTO %s VALUES (13, '%s')" % (t, 'b' * 5000))
    view_bytes = wait_for('bytes read and not written yet', lambda: (lambda r: r[0] if r[0] > r[1] else None)(
        q(conn, "SELECT v.bytes_read, t.bytes_read FROM binlog_fdw.source_stats v "
                "JOIN binlog_fdw.stats_source t USING (server_name) WHERE server_name = 'obs_st'")[0]), 30, 0.1)
    conn.close()
    subprocess.run(['bash', os.path.join(HERE, '..', '..', 'scripts', 'postgres.sh'), 'restart',
                    '--mode', 'fast'], check=True, timeout=120, stdout=subprocess.DEVNULL)
    conn = wait_for('PostgreSQL', lambda: pg(), 30)
    stored_bytes = q1(conn, "SELECT bytes_read FROM binlog_fdw.stats_source WHERE server_name = 'obs_st'")
    log('bytes_read %d before a fast restart, %d in stats_source after it' % (view_bytes, stored_bytes))
    check(stored_bytes >= view_bytes, 'after a fast restart without stop(), stats_source holds %d bytes read, '
          'the view showed %d before it' % (stored_bytes, view_bytes))
    wait_for('the source after the fast restart', lambda: q1(
        conn, "SELECT count(*) FROM binlog_fdw.status WHERE server = 'obs_st' AND state = 'streaming'") == 1, 60, 0.3)
    src.conn = conn
    src.sync(m)
    before_reset = q1(conn, "SELECT stats_reset FROM binlog_fdw.source_stats WHERE server_name = 'obs_st'")
    q(conn, "SELECT binlog_fdw.reset_stats('obs_st')")
    st = source_stats(conn, 'obs_st')
    check(st[:9] == (0,) * 9, 'after reset_stats(): %s' % (st,))
    check(q1(conn, "SELECT stats_reset > %s FROM binlog_fdw.source_stats WHERE server_name = 'obs_st'",
             (before_reset,)), 'stats_reset did not move')
    check(not q(conn, "SELECT * FROM binlog_fdw.table_stats WHERE server_name = 'obs_st'"),
          'table_stats after reset_stats()')
    # a renamed source keeps its statistics and conflicts; a dropped one's
    # statistics go (its conflict log stays)
    mx(m, "INSERT INTO %s VALUES (11, 'y')" % t)
    src.sync(m)
    nconf = q1(conn, "SELECT count(*) FROM binlog_fdw.conflict_log WHERE server_name = 'obs_st'")
    check(nconf == 2, 'conflict_log of obs_st: %s rows, expected 2' % nconf)
    q(conn, 'ALTER SERVER obs_st RENAME TO obs_st2')
    src.name = 'obs_st2'
    st = source_stats(conn, 'obs_st2')
    check(st[:2] == (1, 1), 'source_stats after the rename: %s' % (st,))
    check(q(conn, "SELECT server_name, count(*) FROM binlog_fdw.source_stats WHERE server_name LIKE 'obs_st%' "
                  "GROUP BY 1") == [('obs_st2', 1)], 'source_stats rows after the rename')
    check(q1(conn, "SELECT count(*) FROM binlog_fdw.conflict_log WHERE server_name = 'obs_st2'") == nconf,
          'conflict_log after the rename')
    src.drop()
    check(q1(conn, "SELECT count(*) FROM binlog_fdw.stats_source WHERE server_name = 'obs_st2'") == 0 and
          q1(conn, "SELECT count(*) FROM binlog_fdw.stats_table WHERE server_name = 'obs_st2'") == 0,
          'statistics of the dropped server')
    check(q1(conn, "SELECT count(*) FROM binlog_fdw.conflict_log WHERE server_name = 'obs_st2'") == nconf,
          'conflict_log of the dropped server')
    conn.close()


def case_verify(conn, m):
    mdb_fresh(m, MDB_DB)
    v1, v2 = MDB_DB + '.v1', MDB_DB + '.v2'
    mx(m, 'CREATE TABLE %s (id INT PRIMARY KEY, v VARCHAR(20), n DECIMAL(10,2), d DATETIME)' % v1)
    mx(m, 'CREATE TABLE %s (id INT PRIMARY KEY, v VARCHAR(20))' % v2)
    mx(m, "INSERT INTO %s VALUES (1, 'a', 1.50, '2026-01-02 03:04:05'), (2, 'b', 2.00, NULL), "
          "(3, 'c', NULL, '2026-12-31 23:59:59')" % v1)
    mx(m, "INSERT INTO %s VALUES (1, 'x'), (2, 'y')" % v2)
    q(conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % MDB_DB)
    src = Source(conn, 'obs_vf', r'^%s\.' % MDB_DB)
    src.snapshot([v1, v2])
    src.start()
    # committed after the snapshot, not applied yet: verify() applies them
    mx(m, "INSERT INTO %s VALUES (4, 'd', 4.25, NULL), (5, 'e', 5.00, NULL)" % v1)
    mx(m, "UPDATE %s SET v = 'y2' WHERE id = 2" % v2)
    src.wait_read(m)
    # planted divergences, directly in PostgreSQL
    q(conn, "UPDATE %s SET v = 'planted' WHERE id = 2" % v1)
    q(conn, 'DELETE FROM %s WHERE id = 3' % v1)
    q(conn, "INSERT INTO %s VALUES (100, 'extra', 0, NULL)" % v1)
    at = mx(m, 'SHOW MASTER STATUS')[0]
    r = q(conn, 'SELECT source_table, key, difference, source_row, postgresql_row, position '
                'FROM binlog_fdw.verify(%s, %s)', ('obs_vf', [v1, v2]))
    log('verify: %s' % (r,))
    want = [
        (v1, {'id': 2}, 'differs', {'id': 2, 'v': 'b', 'n': 2.0, 'd': None},
         {'id': 2, 'v': 'planted', 'n': 2.0, 'd': None}),
        (v1, {'id': 3}, 'missing_in_postgresql', {'id': 3, 'v': 'c', 'n': None, 'd': '2026-12-31T23:59:59'}, None),
        (v1, {'id': 100}, 'missing_in_source', None, {'id': 100, 'v': 'extra', 'n': 0, 'd': None}),
    ]
    got = [tuple(x[:5]) for x in r]
    check(got == want, 'verify() reported %s, expected %s' % (got, want))
    check(all(x[5] == '%s:%s' % (at[0], at[1]) for x in r), 'positions %s, MariaDB at %s' % (
        [x[5] for x in r], at[:2]))
    # it applied up to the position: the rows committed after the snapshot
    check(q(conn, 'SELECT id, v FROM %s WHERE id IN (4, 5) ORDER BY id' % v1) == [(4, 'd'), (5, 'e')],
          'rows after the snapshot not applied')
    check(q(conn, 'SELECT v FROM %s WHERE id = 2' % v2) == [('y2',)], 'v2 update not applied')
    # the equal table alone: nothing
    check(q(conn, 'SELECT * FROM binlog_fdw.verify(%s, %s)', ('obs_vf', [v2])) == [],
          'an equal table reported differences')
    # fixed by hand, then equal
    q(conn, "UPDATE %s SET v = 'b' WHERE id = 2" % v1)
    q(conn, "INSERT INTO %s VALUES (3, 'c', NULL, '2026-12-31 23:59:59')" % v1)
    q(conn, 'DELETE FROM %s WHERE id = 100' % v1)
    check(q(conn, 'SELECT * FROM binlog_fdw.verify(%s, %s)', ('obs_vf', [v1, v2])) == [],
          'after the fix, verify() still reports differences')
    # under a writer: verify() applies exactly up to its position (a row
    # applied past it would show as missing_in_source)
    q(conn, "UPDATE %s SET v = 'planted2' WHERE id = 1" % v1)
    stop = threading.Event()
    errors = []

    def writer():
        try:
            w = mdb()
            i = 1000
            while not stop.is_set():
                mx(w, "INSERT INTO %s VALUES (%d, 'w')" % (v2, i))
                i += 1
        except Exception as e:                      # noqa: BLE001
            errors.append(e)
    th = threading.Thread(target=writer)
    th.start()
    try:
        wait_for('the writer', lambda: mx(m, 'SELECT count(*) FROM %s WHERE id >= 1000' % v2)[0][0] >= 20, 30, 0.1)
        r = q(conn, 'SELECT source_table, key, difference, position FROM binlog_fdw.verify(%s, %s)',
              ('obs_vf', [v1, v2]))
        state = q(conn, "SELECT file || ':' || pos FROM binlog_fdw.source_state WHERE server_name = 'obs_vf'")
        n_pg = q1(conn, 'SELECT count(*) FROM %s WHERE id >= 1000' % v2)
    finally:
        stop.set()
        th.join(30)
    check(not errors, 'writer: %s' % errors)
    log('verify under a writer: %s; source_state %s; %d writer rows applied' % (r, state, n_pg))
    check([x[:3] for x in r] == [(v1, {'id': 1}, 'differs')], 'verify under a writer reported %s' % (r,))
    check(state == [(r[0][3],)], 'applied up to %s, verify compared at %s' % (state, r[0][3]))
    check(n_pg >= 20, 'writer rows applied: %d' % n_pg)
    q(conn, "UPDATE %s SET v = 'a' WHERE id = 1" % v1)

    # not while the continuous worker applies
    q(conn, 'SELECT binlog_fdw.stop(%s)', ('obs_vf',))
    q(conn, "ALTER SERVER obs_vf OPTIONS (ADD continuous 'true')")
    src.start()
    wait_for('the apply worker of obs_vf', lambda: q1(
        conn, "SELECT apply_pid FROM binlog_fdw.status WHERE server = 'obs_vf'"), 30, 0.2)
    expect_error(conn, 'SELECT * FROM binlog_fdw.verify(%s, %s)', ('obs_vf', [v1]), 'verify, continuous',
                 sqlstate='55006', message='continuous apply worker', hint="continuous to 'false'")
    src.drop()
    q(conn, 'DROP SCHEMA %s CASCADE' % MDB_DB)


def main():
    wanted = [x for x in os.environ.get('BLF_OBSERVE_CASES', '').split(',') if x]
    try:
        admin = harness.pg(db='postgres')
        m = mdb()
        if q1(admin, 'SELECT count(*) FROM pg_database WHERE datname = %s', (PGDB,)):
            q(admin, 'DROP DATABASE %s WITH (FORCE)' % PGDB)
        q(admin, 'CREATE DATABASE %s' % PGDB)
        conn = pg()
        q(conn, 'CREATE EXTENSION binlog_fdw')
    except Exception as e:                          # noqa: BLE001
        print('not ok - observe/setup: %s: %s' % (type(e).__name__, short(str(e).strip(), 500)))
        return 1
    failed = 0
    for name, fn in (('origins', case_origins), ('wait-for', case_wait_for), ('exporter', case_exporter),
                     ('verify', case_verify), ('stats', case_stats)):
        if wanted and name not in wanted:
            continue
        log('---- %s' % name)
        with conn.cursor() as cur:      # the server log's lines from now on are this case's
            harness.mark_case(cur, 'observe/' + name)
        try:
            fn(conn, m)
        except Fail as e:
            failed += 1
            print('not ok - observe/%s: %s' % (name, short(str(e), 1500)), flush=True)
        except Exception as e:                      # noqa: BLE001
            import traceback
            log(traceback.format_exc())
            failed += 1
            print('not ok - observe/%s: %s: %s' % (name, type(e).__name__, short(str(e).strip(), 800)),
                  flush=True)
        else:
            print('ok - observe/%s' % name, flush=True)
        # a case that restarts PostgreSQL (stats) leaves these connections dead
        try:
            q(conn, 'SELECT 1')
        except psycopg2.Error:
            conn = pg()
        try:
            q(admin, 'SELECT 1')
        except psycopg2.Error:
            admin = harness.pg(db='postgres')
    try:
        conn.close()
        harness.drop_database(admin, PGDB)
        mx(m, 'DROP DATABASE IF EXISTS %s' % MDB_DB)
    except Exception as e:                          # noqa: BLE001
        log('cleanup: %s' % e)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
