"""
test/apply_cases/cases_parallel.py -- CALL binlog_fdw.load(..., parallel => N)
(issue 11 item 3):

  load-parallel
      five tables (three keyed, one keyless, one with a composite key of
      integers, chunked over it) loaded by three loaders while a writer
      changes them, moving rows of the composite table across its chunks; targets with a slow row trigger so that the
      loads overlap: sync_progress shows more than one loader at once; the
      tables end equal to MariaDB's after the source streams; a background
      loader's error (a table the source lacks) is the caller's error;
      parallel with truncate, and parallel out of range, are refused;
      without parallel, three tables load with one loader per table up to
      the machine's CPUs.
"""

import os
import threading
import time

from harness import (Source, check, expect_error, log, mdb, mdb_fresh, mx, pg, q, q1, short, wait_for)

DB = 'blf_ac_par'
TABLES = ['p1', 'p2', 'p3', 'pk', 'pc']
AUTO_TABLES = ['a1', 'a2', 'a3']


def case_load_parallel(conn, m):
    mdb_fresh(m, DB)
    q(conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % DB)
    q(conn, 'CREATE SCHEMA %s' % DB)
    src = Source(conn, 'ac_par', r'^%s\.' % DB)
    halt = threading.Event()
    errors = []
    try:
        for t in TABLES[:4]:
            key = 'PRIMARY KEY' if t != 'pk' else ''
            mx(m, 'CREATE TABLE %s.%s (id INT NOT NULL %s, v INT)' % (DB, t, key))
            mx(m, 'INSERT INTO %s.%s SELECT seq, seq FROM %s.seq_1_to_%d' % (DB, t, DB, 1500 if t != 'pk' else 300))
            q(conn, 'CREATE TABLE %s.%s (id int NOT NULL %s, v int)' % (DB, t, key))
        # a composite key of integers, the second column descending in no way
        # that matters: chunks range over (id, b) in MySQL's order
        mx(m, 'CREATE TABLE %s.pc (id INT NOT NULL, b BIGINT UNSIGNED NOT NULL, v INT, PRIMARY KEY (id, b))' % DB)
        mx(m, 'INSERT INTO %s.pc SELECT seq DIV 100, seq MOD 100, seq FROM %s.seq_1_to_1500' % (DB, DB))
        q(conn, 'CREATE TABLE %s.pc (id int NOT NULL, b numeric(20) NOT NULL, v int, PRIMARY KEY (id, b))' % DB)
        # every row waits a little: the loads overlap
        q(conn, 'CREATE FUNCTION %s.slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN '
                'PERFORM pg_sleep(0.001); RETURN NEW; END $$' % DB)
        for t in TABLES:
            q(conn, 'CREATE TRIGGER slow BEFORE INSERT ON %s.%s FOR EACH ROW EXECUTE FUNCTION %s.slow()'
              % (DB, t, DB))

        def writer():
            w = mdb(db=DB)
            i = 0
            try:
                while not halt.is_set():
                    i += 1
                    t = TABLES[i % 3]
                    mx(w, 'UPDATE %s SET v = v + 1 WHERE id = %d' % (t, (i * 37) % 1500 + 1))
                    mx(w, 'INSERT INTO %s VALUES (%d, 0)' % (t, 100000 + i))
                    if i % 5 == 0:
                        mx(w, 'DELETE FROM %s WHERE id = %d' % (t, (i * 53) % 1500 + 1))
                    # the composite table: rows move across its chunks both ways
                    a, b = (i * 7) % 15, (i * 13) % 100
                    if i % 3 == 0:
                        mx(w, 'UPDATE pc SET id = 14 - id, b = %d WHERE id = %d AND b = %d' % (10000 + i, a, b))
                    elif i % 3 == 1:
                        mx(w, 'DELETE FROM pc WHERE id = %d AND b = %d' % (a, b))
                    else:
                        mx(w, 'INSERT INTO pc VALUES (%d, %d, %d)' % (a, 20000 + i, i))
                    time.sleep(0.005)
            except Exception as e:                  # noqa: BLE001
                errors.append(e)
            finally:
                w.close()

        seen = {'max': 0, 'pids': set()}

        def watch():
            c = pg()
            try:
                while not halt.is_set():
                    rows = q(c, "SELECT pid FROM binlog_fdw.sync_progress WHERE server = 'ac_par'")
                    seen['max'] = max(seen['max'], len(rows))
                    seen['pids'].update(r[0] for r in rows)
                    time.sleep(0.02)
            finally:
                c.close()
        threads = [threading.Thread(target=writer, daemon=True), threading.Thread(target=watch, daemon=True)]
        for th in threads:
            th.start()
        t0 = time.monotonic()
        q(conn, 'CALL binlog_fdw.load(%s, %s, 500, false, 3)', (src.name, ['%s.%s' % (DB, t) for t in TABLES]))
        took = time.monotonic() - t0
        halt.set()
        for th in threads:
            th.join(30)
        check(not errors, 'writer: %s' % errors)
        log('load(parallel => 3) in %.1fs; at most %d loaders at once, %d backends in all'
            % (took, seen['max'], len(seen['pids'])))
        check(seen['max'] >= 2, 'sync_progress never showed two loaders at once (%s)' % seen)
        st = q(conn, "SELECT source, complete FROM binlog_fdw.load_status WHERE server = 'ac_par' ORDER BY 1")
        check(st == sorted(('%s.%s' % (DB, t), True) for t in TABLES), 'load_status: %s' % st)
        src.start()
        src.sync(m)
        chunks = q1(conn, 'SELECT chunks FROM binlog_fdw.load_status WHERE source = %s', ('%s.pc' % DB,))
        keycols = q1(conn, "SELECT load_key_columns FROM binlog_fdw.table_mapping WHERE server_name = 'ac_par' "
                           "AND source_table = 'pc'")
        log('pc: %s chunks over %s' % (chunks, keycols))
        check(chunks >= 3 and keycols == ['id', 'b'], 'the composite table pc was not chunked by (id, b): %s chunks, '
              'key %s' % (chunks, keycols))
        for t in TABLES:
            cols = 'id, b, v' if t == 'pc' else 'id, v'
            got = sorted(tuple(int(x) for x in r) for r in q(conn, 'SELECT %s FROM %s.%s' % (cols, DB, t)))
            exp = sorted(tuple(int(x) for x in r) for r in mx(m, 'SELECT %s FROM %s.%s' % (cols, DB, t)))
            check(got == exp, '%s differs after the parallel load: PostgreSQL %d rows, MariaDB %d; %s'
                  % (t, len(got), len(exp), short([x for x in got if x not in exp][:5], 300)))

        # a background loader's error is the caller's
        mx(m, 'CREATE TABLE %s.p5 (id INT PRIMARY KEY, v INT)' % DB)
        # (the caller reaches the table too: either error names it)
        expect_error(conn, 'CALL binlog_fdw.load(%s, %s, 500, false, 2)',
                     (src.name, ['%s.p5' % DB, '%s.nosuch' % DB]), 'a loader on a table the source lacks',
                     message='table %s.nosuch does not exist on source "ac_par"' % DB)
        check(q1(conn, "SELECT complete FROM binlog_fdw.load_status WHERE source = %s", ('%s.p5' % DB,)),
              'p5 was not loaded by the failed call')
        expect_error(conn, 'CALL binlog_fdw.load(%s, %s, 500, true, 2)', (src.name, ['%s.p5' % DB]),
                     'parallel with truncate', sqlstate='0A000', message='parallel > 1 cannot truncate')
        expect_error(conn, 'CALL binlog_fdw.load(%s, %s, 500, false, 0)', (src.name, ['%s.p5' % DB]),
                     'parallel 0', sqlstate='22023', message='parallel must be between 1 and 16')
        wait_for('the background loaders to exit', lambda: q1(
            conn, "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'binlog_fdw loader'") == 0, 30)

        # parallel left out: a loader per table up to the machine's CPUs
        cpus = os.cpu_count() or 1
        for t in AUTO_TABLES:
            mx(m, 'CREATE TABLE %s.%s (id INT PRIMARY KEY, v INT)' % (DB, t))
            mx(m, 'INSERT INTO %s.%s SELECT seq, seq FROM %s.seq_1_to_400' % (DB, t, DB))
            q(conn, 'CREATE TABLE %s.%s (id int PRIMARY KEY, v int)' % (DB, t))
            q(conn, 'CREATE TRIGGER slow BEFORE INSERT ON %s.%s FOR EACH ROW EXECUTE FUNCTION %s.slow()'
              % (DB, t, DB))
        halt.clear()
        seen = {'max': 0, 'pids': set()}
        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        q(conn, 'CALL binlog_fdw.load(%s, %s, 100)', (src.name, ['%s.%s' % (DB, t) for t in AUTO_TABLES]))
        halt.set()
        watcher.join(30)
        want = min(len(AUTO_TABLES), cpus, 16)
        log('load() without parallel on %d tables, %d CPUs: at most %d loaders at once, %d backends'
            % (len(AUTO_TABLES), cpus, seen['max'], len(seen['pids'])))
        check(len(seen['pids']) == want, 'load() without parallel ran %d loaders (%s), expected %d: '
              'one per table up to the %d CPUs' % (len(seen['pids']), seen, want, cpus))
        for t in AUTO_TABLES:
            got = q(conn, 'SELECT id, v FROM %s.%s ORDER BY id' % (DB, t))
            check(got == [tuple(r) for r in mx(m, 'SELECT id, v FROM %s.%s ORDER BY id' % (DB, t))],
                  '%s differs after load() without parallel' % t)
    finally:
        halt.set()
        src.drop()
        q(conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % DB)
