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

  load-ranges
      one table of 50000 rows loaded by three loaders, each copying the
      chunks of another key range at the same time, under a writer and the
      continuous worker; a loader killed with -9 mid-way and load() again
      (each range goes on at its next chunk); see case_load_ranges.

  load-ranges-tuple
      the same for a primary key of two integer columns (a, b): the ranges'
      bounds are whole keys MariaDB picks by rows; see case_load_ranges_tuple.

  load-ranges-resplit
      keys crowding one range: the loaders whose ranges are done split the
      rest of the crowded one again; see case_load_ranges_resplit.

  load-ranges-text
      a VARCHAR key of a case-insensitive collation: one pass whatever
      parallel asks; see case_load_ranges_text.
"""

import os
import random
import signal
import threading
import time

from harness import (Source, check, expect_error, log, mdb, mdb_fresh, mx, pg, q, q1, short, status, wait_for)

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


RDB = 'blf_ac_rng'


class KeySet:
    """The keys of a MariaDB table as the writer changed them, for picking
    present and absent keys."""

    def __init__(self, keys, rnd):
        self.keys = list(keys)
        self.pos = {k: i for i, k in enumerate(self.keys)}
        self.rnd = rnd

    def pick(self):
        return self.keys[self.rnd.randrange(len(self.keys))]

    def absent(self, lo, hi):
        while True:
            k = self.rnd.randint(lo, hi)
            if k not in self.pos:
                return k

    def add(self, k):
        self.pos[k] = len(self.keys)
        self.keys.append(k)

    def remove(self, k):
        i = self.pos.pop(k)
        last = self.keys.pop()
        if last != k:
            self.keys[i] = last
            self.pos[last] = i


def range_of(split, k):
    """The 0-based key range of k under load_split (ints)."""
    for i, b in enumerate(split):
        if k <= b:
            return i
    return len(split)


def case_load_ranges(conn, m):
    """
    load-ranges: one table of 50000 rows loaded by three loaders at once,
    each copying chunks of another key range, while a writer inserts,
    updates (some over many rows), deletes rows not copied yet and moves
    keys across the ranges' borders, and the continuous worker applies;
    sync_progress shows two or more loaders copying the table at the same
    time; one background loader is killed with -9 in the middle (PostgreSQL
    restarts); load() again continues each range at its next chunk (the
    chunks committed before are kept); in the end the table equals
    MariaDB's, load_status shows every range complete and load_progress
    the table complete with the rows of its chunks.
    """
    mdb_fresh(m, RDB)
    q(conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % RDB)
    mx(m, 'CREATE TABLE %s.r (id BIGINT NOT NULL PRIMARY KEY, v INT NOT NULL, pad VARCHAR(40), KEY (v))' % RDB)
    # 50000 rows, even keys 2..100000: the odd ones are free for moves
    mx(m, "INSERT INTO %s.r SELECT 2 * seq, seq, REPEAT('x', seq %% 37) FROM %s.seq_1_to_50000" % (RDB, RDB))
    src = Source(conn, 'ac_rng', r'^%s\.' % RDB, unmapped='skip', continuous='true')
    halt = threading.Event()
    errors = []
    counts = {'moves': 0, 'deletes': 0, 'inserts': 0, 'updates': 0, 'ranged': 0}
    rnd = random.Random(8511)
    keys = KeySet(range(2, 100001, 2), rnd)
    moved = []

    def writer():
        w = mdb(db=RDB)
        try:
            while not halt.is_set():
                op = rnd.random()
                if op < 0.25:
                    mx(w, 'UPDATE r SET v = v + 1 WHERE id = %d' % keys.pick())
                    counts['updates'] += 1
                elif op < 0.40:
                    k = keys.pick()
                    mx(w, 'DELETE FROM r WHERE id = %d' % k)
                    keys.remove(k)
                    counts['deletes'] += 1
                elif op < 0.55:
                    k = keys.absent(1, 130000)
                    mx(w, "INSERT INTO r VALUES (%d, %d, 'new')" % (k, op * 1000))
                    keys.add(k)
                    counts['inserts'] += 1
                elif op < 0.90:
                    # a key moved anywhere: mostly into another range, both ways
                    k = keys.pick()
                    to = -k if op < 0.45 else keys.absent(1, 130000)
                    if to in keys.pos:
                        continue
                    mx(w, "UPDATE r SET id = %d, pad = 'moved' WHERE id = %d" % (to, k))
                    keys.remove(k)
                    keys.add(to)
                    moved.append((k, to))
                    counts['moves'] += 1
                else:
                    a = rnd.randint(1, 100000)
                    mx(w, 'UPDATE r SET v = v + 1 WHERE id BETWEEN %d AND %d' % (a, a + 60))
                    counts['ranged'] += 1
                time.sleep(0.002)
        except Exception as e:                      # noqa: BLE001
            errors.append(e)
        finally:
            w.close()

    seen = {'max': 0, 'pids': set(), 'loaders': set()}

    def watch():
        c = None
        while not halt.is_set():
            try:
                if c is None:
                    c = pg()
                rows = q(c, "SELECT pid FROM binlog_fdw.sync_progress WHERE server = 'ac_rng' "
                            "AND source = %s AND phase = 'copying'", ('%s.r' % RDB,))
                seen['max'] = max(seen['max'], len(rows))
                seen['pids'].update(r[0] for r in rows)
                for (p,) in q(c, "SELECT pid FROM pg_stat_activity WHERE backend_type = 'binlog_fdw loader'"):
                    seen['loaders'].add(p)
            except Exception:                       # noqa: BLE001
                c = None                            # PostgreSQL restarting
                time.sleep(0.2)
            time.sleep(0.01)
        if c is not None:
            c.close()

    def state(c):
        return q(c, 'SELECT load_key_hi, load_range, load_split FROM binlog_fdw.table_mapping '
                    "WHERE server_name = 'ac_rng' AND source_table = 'r'")[0]

    threads = [threading.Thread(target=writer, daemon=True), threading.Thread(target=watch, daemon=True)]
    try:
        src.start()
        wait_for('the apply worker of ac_rng', lambda: (status(conn, 'ac_rng') or {}).get('apply_pid'), 30)
        for th in threads:
            th.start()
        time.sleep(0.3)

        # the first call, one of its background loaders killed with -9 mid-way
        res = {}
        caller = pg()

        def run():
            try:
                q(caller, 'CALL binlog_fdw.load(%s, %s, 500, parallel => 3)', ('ac_rng', ['%s.r' % RDB]))
            except Exception as e:                  # noqa: BLE001
                res['error'] = e
        tl = threading.Thread(target=run)
        tl.start()
        # once the first chunk has created the target, each row waits a
        # little: the chunks of the ranges take long enough to be seen at once
        wait_for('the target r', lambda: q1(conn, 'SELECT to_regclass(%s) IS NOT NULL', ('%s.r' % RDB,)), 60, 0.01)
        q(conn, 'CREATE FUNCTION %s.slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN '
                'PERFORM pg_sleep(0.0003); RETURN NEW; END $$' % RDB)
        q(conn, 'CREATE TRIGGER slow BEFORE INSERT ON %s.r FOR EACH ROW EXECUTE FUNCTION %s.slow()' % (RDB, RDB))
        wait_for('30 chunks of r', lambda: len((q(conn, "SELECT load_key_hi FROM binlog_fdw.table_mapping "
                                                    "WHERE server_name = 'ac_rng' AND source_table = 'r'")
                                               or [[None]])[0][0] or []) >= 30 or not tl.is_alive(), 120, 0.02)
        check(tl.is_alive(), 'the load ended before the kill: %s' % res)
        lpid = q1(conn, "SELECT pid FROM pg_stat_activity WHERE backend_type = 'binlog_fdw loader' LIMIT 1")
        check(lpid, 'no background loader runs')
        os.kill(lpid, signal.SIGKILL)
        tl.join(60)
        try:
            caller.close()
        except Exception:                           # noqa: BLE001
            pass
        check('error' in res, 'load() ended without an error after its loader was killed')
        time.sleep(1)
        wait_for('PostgreSQL back', lambda: q1(pg(), 'SELECT 1'), 60, 0.2)
        conn2 = pg()
        src.conn = conn2
        wait_for('ac_rng streaming again',
                 lambda: (status(conn2, 'ac_rng') or {}).get('state') == 'streaming', 60, 0.2)
        his, rngs, split = state(conn2)
        log('loader %d killed after %d chunks; split %s; chunks per range %s; at most %d loaders copying r at once'
            % (lpid, len(his), split, [rngs.count(i + 1) for i in range(len(split) + 1)], seen['max']))
        # 1 + 3 ranges, and more if a loader split a crowded one again
        check(split and len(split) >= 3, 'r was not split into 1 + 3 ranges: %s' % split)
        before = (his, rngs, split)

        # again: each range goes on at its next chunk
        t0 = time.monotonic()
        q(conn2, 'CALL binlog_fdw.load(%s, %s, 500, parallel => 3)', ('ac_rng', ['%s.r' % RDB]))
        log('the second load() took %.1fs' % (time.monotonic() - t0))
        time.sleep(0.5)
        halt.set()
        for th in threads:
            th.join(30)
        check(not errors, 'writer: %s' % errors)
        log('writer: %s' % counts)

        his, rngs, split = state(conn2)
        # a range split again renumbers those above it: the chunks' bounds are kept
        check(his[:len(before[0])] == before[0] and set(before[2]) <= set(split),
              'the chunks or bounds committed before the kill changed')
        bounds = [int(b) for b in split]
        check(bounds == sorted(bounds) and len(set(bounds)) == len(bounds), 'range bounds %s' % bounds)
        # each range: its chunks in key order, inside it, the last to its end
        for r in range(len(bounds) + 1):
            mine = [h for h, g in zip(his, rngs) if g == r + 1]
            check(mine and mine[-1] is None and None not in mine[:-1],
                  'range %d: chunks %s do not end with the range\'s last' % (r + 1, short(mine, 200)))
            ks = [int(h) for h in mine[:-1]]
            lo = bounds[r - 1] if r > 0 else None
            hi = bounds[r] if r < len(bounds) else None
            check(ks == sorted(ks) and len(set(ks)) == len(ks) and all((lo is None or k > lo) and
                                                                      (hi is None or k <= hi) for k in ks),
                  'range %d (%s, %s]: chunk bounds %s' % (r + 1, lo, hi, short(ks, 300)))
        per = [rngs.count(i + 1) for i in range(len(bounds) + 1)]
        log('r: %d chunks, per range %s, split %s; at most %d loaders copying r at once (%d backends)'
            % (len(his), per, bounds, seen['max'], len(seen['pids'])))
        check(seen['max'] >= 2, 'sync_progress never showed two loaders copying r at once (%s)' % seen)
        # the chunk that completed the table built the source's index
        ix = q(conn2, "SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND tablename = 'r' "
                      "AND indexdef LIKE '%%(v)'", (RDB,))
        check(len(ix) == 1, 'the index on r (v) was not built: %s' % ix)
        # (a range split again near the end may hold a chunk or two)
        check(sum(1 for n in per[1:] if n >= 5) >= 3, 'a range was copied in few chunks: %s' % per)
        crossing = sum(1 for a, b in moved if range_of(bounds, a) != range_of(bounds, b))
        log('%d of %d moves crossed a range border' % (crossing, len(moved)))
        check(crossing >= 20, 'only %d moves crossed a range border' % crossing)

        mx(m, "INSERT INTO %s.r VALUES (999999999, 0, 'marker')" % RDB)
        wait_for('the marker row in PostgreSQL',
                 lambda: q1(conn2, 'SELECT count(*) FROM %s.r WHERE id = 999999999' % RDB), 60, 0.1)
        st = status(conn2, 'ac_rng')
        check(not st.get('apply_error'), 'the apply worker had an error: %s' % short(st.get('apply_error'), 600))
        got = q(conn2, 'SELECT id, v, pad FROM %s.r ORDER BY id' % RDB)
        exp = [tuple(x) for x in mx(m, 'SELECT id, v, pad FROM %s.r ORDER BY id' % RDB)]
        check(got == exp, 'r differs after the parallel load: PostgreSQL %d rows, MariaDB %d; only in PostgreSQL '
              '%s, only in MariaDB %s' % (len(got), len(exp), short(sorted(set(got) - set(exp))[:5], 300),
                                        short(sorted(set(exp) - set(got))[:5], 300)))
        ls = q(conn2, 'SELECT chunks, complete, ranges, ranges_complete, rows_copied FROM binlog_fdw.load_status '
                      "WHERE server = 'ac_rng'")
        rows = q1(conn2, "SELECT sum(x) FROM binlog_fdw.table_mapping, unnest(load_rows) AS x "
                         "WHERE server_name = 'ac_rng'")
        check(ls == [(len(his), True, len(bounds) + 1, len(bounds) + 1, rows)], 'load_status of r: %s' % ls)
        lp = q(conn2, "SELECT tables, tables_complete, rows_copied FROM binlog_fdw.load_progress "
                      "WHERE server = 'ac_rng'")
        check(lp == [(1, 1, rows)], 'load_progress: %s (rows %s)' % (lp, rows))
        check(abs(rows - 50000) < 5000, 'the chunks hold %d rows' % rows)
        # loaded: a third call copies nothing
        q(conn2, 'CALL binlog_fdw.load(%s, %s, 500, parallel => 3)', ('ac_rng', ['%s.r' % RDB]))
        check(len(state(conn2)[0]) == len(his), 'load() of a loaded table copied again')
    finally:
        halt.set()
        src.conn = pg()
        src.drop()
        q(src.conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % RDB)
        src.conn.close()


TDB = 'blf_ac_rngt'


def case_load_ranges_tuple(conn, m):
    """
    load-ranges-tuple: a table whose primary key is two integer columns
    (a, b), 30000 rows, loaded by three loaders at once, each copying chunks
    of another key range whose bounds are whole (a, b) keys read by MariaDB
    (LIMIT 1 OFFSET over the key), while a writer inserts, updates, deletes
    and moves keys (a and b) across the ranges' borders and the continuous
    worker applies; one background loader killed with -9 mid-way
    (PostgreSQL restarts) and load() again goes on at each range's next
    chunk; in the end the table equals MariaDB's row by row, load_status
    shows 1 + 3 ranges, all complete, and each range's chunk bounds lie
    inside it, in key order.  Before, a key of several columns kept one
    range (load_split NULL).
    """
    mdb_fresh(m, TDB)
    q(conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % TDB)
    mx(m, 'CREATE TABLE %s.t (a INT NOT NULL, b BIGINT NOT NULL, v INT NOT NULL, pad VARCHAR(40), '
          'PRIMARY KEY (a, b))' % TDB)
    # 30000 rows: a 1..200, b even 2..300 (odd b and a above 200 free for moves)
    mx(m, "INSERT INTO %s.t SELECT 1 + (seq - 1) DIV 150, 2 * (1 + (seq - 1) %% 150), seq, "
          "REPEAT('y', seq %% 29) FROM %s.seq_1_to_30000" % (TDB, TDB))
    # the split counts rows from the source's estimate
    mx(m, 'ANALYZE TABLE %s.t' % TDB)
    src = Source(conn, 'ac_rngt', r'^%s\.' % TDB, unmapped='skip', continuous='true')
    halt = threading.Event()
    errors = []
    counts = {'moves': 0, 'deletes': 0, 'inserts': 0, 'updates': 0, 'ranged': 0}
    rnd = random.Random(8512)
    keys = KeySet([(a, b) for a in range(1, 201) for b in range(2, 301, 2)], rnd)
    moved = []

    def absent():
        while True:
            k = (rnd.randint(-5, 230), rnd.randint(1, 320))
            if k not in keys.pos:
                return k

    def writer():
        w = mdb(db=TDB)
        try:
            while not halt.is_set():
                op = rnd.random()
                if op < 0.25:
                    mx(w, 'UPDATE t SET v = v + 1 WHERE a = %d AND b = %d' % keys.pick())
                    counts['updates'] += 1
                elif op < 0.40:
                    k = keys.pick()
                    mx(w, 'DELETE FROM t WHERE a = %d AND b = %d' % k)
                    keys.remove(k)
                    counts['deletes'] += 1
                elif op < 0.55:
                    k = absent()
                    mx(w, "INSERT INTO t VALUES (%d, %d, %d, 'new')" % (k[0], k[1], op * 1000))
                    keys.add(k)
                    counts['inserts'] += 1
                elif op < 0.90:
                    # a key moved: its a (mostly into another range), or only its b
                    k = keys.pick()
                    to = (k[0], rnd.randint(1, 320)) if op < 0.60 else absent()
                    if to in keys.pos:
                        continue
                    mx(w, "UPDATE t SET a = %d, b = %d, pad = 'moved' WHERE a = %d AND b = %d"
                       % (to[0], to[1], k[0], k[1]))
                    keys.remove(k)
                    keys.add(to)
                    moved.append((k, to))
                    counts['moves'] += 1
                else:
                    a = rnd.randint(1, 200)
                    mx(w, 'UPDATE t SET v = v + 1 WHERE a = %d AND b BETWEEN %d AND %d'
                       % (a, rnd.randint(1, 200), rnd.randint(200, 320)))
                    counts['ranged'] += 1
                time.sleep(0.002)
        except Exception as e:                      # noqa: BLE001
            errors.append(e)
        finally:
            w.close()

    seen = {'max': 0}

    def watch():
        c = None
        while not halt.is_set():
            try:
                if c is None:
                    c = pg()
                n = q1(c, "SELECT count(*) FROM binlog_fdw.sync_progress WHERE server = 'ac_rngt' "
                          "AND source = %s AND phase = 'copying'", ('%s.t' % TDB,))
                seen['max'] = max(seen['max'], n)
            except Exception:                       # noqa: BLE001
                c = None                            # PostgreSQL restarting
                time.sleep(0.2)
            time.sleep(0.01)
        if c is not None:
            c.close()

    def state(c):
        return q(c, 'SELECT load_key_hi, load_range, load_split FROM binlog_fdw.table_mapping '
                    "WHERE server_name = 'ac_rngt' AND source_table = 't'")[0]

    def tup(s):
        return tuple(int(x) for x in s.split(','))

    def range_of_key(bounds, k):
        for i, b in enumerate(bounds):
            if k <= b:
                return i
        return len(bounds)

    threads = [threading.Thread(target=writer, daemon=True), threading.Thread(target=watch, daemon=True)]
    try:
        src.start()
        wait_for('the apply worker of ac_rngt', lambda: (status(conn, 'ac_rngt') or {}).get('apply_pid'), 30)
        for th in threads:
            th.start()
        time.sleep(0.3)

        res = {}
        caller = pg()

        def run():
            try:
                q(caller, 'CALL binlog_fdw.load(%s, %s, 500, parallel => 3)', ('ac_rngt', ['%s.t' % TDB]))
            except Exception as e:                  # noqa: BLE001
                res['error'] = e
        tl = threading.Thread(target=run)
        tl.start()
        wait_for('the target t', lambda: q1(conn, 'SELECT to_regclass(%s) IS NOT NULL', ('%s.t' % TDB,)), 60, 0.01)
        q(conn, 'CREATE FUNCTION %s.slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN '
                'PERFORM pg_sleep(0.0003); RETURN NEW; END $$' % TDB)
        q(conn, 'CREATE TRIGGER slow BEFORE INSERT ON %s.t FOR EACH ROW EXECUTE FUNCTION %s.slow()' % (TDB, TDB))
        wait_for('20 chunks of t', lambda: len((q(conn, "SELECT load_key_hi FROM binlog_fdw.table_mapping "
                                                    "WHERE server_name = 'ac_rngt' AND source_table = 't'")
                                               or [[None]])[0][0] or []) >= 20 or not tl.is_alive(), 120, 0.02)
        check(tl.is_alive(), 'the load ended before the kill: %s' % res)
        his, rngs, split = state(conn)
        check(split and len(split) == 3, 't (key a, b) was not split into 1 + 3 ranges: load_split %s' % split)
        lpid = q1(conn, "SELECT pid FROM pg_stat_activity WHERE backend_type = 'binlog_fdw loader' LIMIT 1")
        check(lpid, 'no background loader runs')
        os.kill(lpid, signal.SIGKILL)
        tl.join(60)
        try:
            caller.close()
        except Exception:                           # noqa: BLE001
            pass
        check('error' in res, 'load() ended without an error after its loader was killed')
        time.sleep(1)
        wait_for('PostgreSQL back', lambda: q1(pg(), 'SELECT 1'), 60, 0.2)
        conn2 = pg()
        src.conn = conn2
        wait_for('ac_rngt streaming again',
                 lambda: (status(conn2, 'ac_rngt') or {}).get('state') == 'streaming', 60, 0.2)
        his, rngs, split = state(conn2)
        log('loader %d killed after %d chunks; split %s; chunks per range %s'
            % (lpid, len(his), split, [rngs.count(i + 1) for i in range(len(split) + 1)]))
        before = (his, rngs, split)
        ls = q(conn2, "SELECT complete, ranges, ranges_complete FROM binlog_fdw.load_status WHERE server = 'ac_rngt'")
        check(ls and ls[0][0] is False and ls[0][1] == 4 and ls[0][2] < 4,
              'load_status of t after the kill: %s' % ls)

        t0 = time.monotonic()
        q(conn2, 'CALL binlog_fdw.load(%s, %s, 500, parallel => 3)', ('ac_rngt', ['%s.t' % TDB]))
        log('the second load() took %.1fs' % (time.monotonic() - t0))
        time.sleep(0.5)
        halt.set()
        for th in threads:
            th.join(30)
        check(not errors, 'writer: %s' % errors)
        log('writer: %s' % counts)

        his, rngs, split = state(conn2)
        check(split == before[2], 'the split changed on restart: %s, then %s' % (before[2], split))
        check(his[:len(before[0])] == before[0] and rngs[:len(before[1])] == before[1],
              'the chunks committed before the kill changed')
        bounds = [tup(b) for b in split]
        check(bounds == sorted(bounds) and len(set(bounds)) == len(bounds), 'range bounds %s' % bounds)
        for r in range(len(bounds) + 1):
            mine = [h for h, g in zip(his, rngs) if g == r + 1]
            check(mine and mine[-1] is None and None not in mine[:-1],
                  'range %d: chunks %s do not end with the range\'s last' % (r + 1, short(mine, 200)))
            ks = [tup(h) for h in mine[:-1]]
            lo = bounds[r - 1] if r > 0 else None
            hi = bounds[r] if r < len(bounds) else None
            check(ks == sorted(ks) and len(set(ks)) == len(ks) and all((lo is None or k > lo) and
                                                                      (hi is None or k <= hi) for k in ks),
                  'range %d (%s, %s]: chunk bounds %s' % (r + 1, lo, hi, short(ks, 300)))
        per = [rngs.count(i + 1) for i in range(len(bounds) + 1)]
        log('t: %d chunks, per range %s, split %s; at most %d loaders copying t at once'
            % (len(his), per, bounds, seen['max']))
        check(seen['max'] >= 2, 'sync_progress never showed two loaders copying t at once (%s)' % seen)
        # by rows: each of the three ranges above the first chunk holds about a third
        check(all(n >= 10 for n in per[1:]), 'a range was copied in few chunks: %s' % per)
        crossing = sum(1 for a, b in moved if range_of_key(bounds, a) != range_of_key(bounds, b))
        log('%d of %d moves crossed a range border' % (crossing, len(moved)))
        check(crossing >= 20, 'only %d moves crossed a range border' % crossing)

        mx(m, "INSERT INTO %s.t VALUES (999999, 1, 0, 'marker')" % TDB)
        wait_for('the marker row in PostgreSQL',
                 lambda: q1(conn2, 'SELECT count(*) FROM %s.t WHERE a = 999999' % TDB), 60, 0.1)
        st = status(conn2, 'ac_rngt')
        check(not st.get('apply_error'), 'the apply worker had an error: %s' % short(st.get('apply_error'), 600))
        got = q(conn2, 'SELECT a, b, v, pad FROM %s.t ORDER BY a, b' % TDB)
        exp = [tuple(x) for x in mx(m, 'SELECT a, b, v, pad FROM %s.t ORDER BY a, b' % TDB)]
        check(got == exp, 't differs after the parallel load: PostgreSQL %d rows, MariaDB %d; only in PostgreSQL '
              '%s, only in MariaDB %s' % (len(got), len(exp), short(sorted(set(got) - set(exp))[:5], 300),
                                        short(sorted(set(exp) - set(got))[:5], 300)))
        ls = q(conn2, 'SELECT chunks, complete, ranges, ranges_complete FROM binlog_fdw.load_status '
                      "WHERE server = 'ac_rngt'")
        check(ls == [(len(his), True, 4, 4)], 'load_status of t: %s' % ls)
        log('t equal to MariaDB: %d rows' % len(got))
    finally:
        halt.set()
        src.conn = pg()
        src.drop()
        q(src.conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % TDB)
        src.conn.close()


SDB = 'blf_ac_rngs'


def case_load_ranges_resplit(conn, m):
    """
    load-ranges-resplit: a table whose keys crowd one of its ranges of equal
    width (20000 dense keys and one key of 10 million), loaded by three
    loaders while a writer changes and moves rows and the continuous
    worker applies: the loaders whose ranges are done split the rest of the
    crowded range (load_split gains bounds) instead of waiting; a loader
    killed with -9 mid-way and load() again goes on; in the end the table
    equals MariaDB's, the chunks of each range lie inside it and end with
    its last, load_status shows every range complete.  Before, the split
    stayed at its 1 + 3 ranges and one loader copied the crowded one.
    """
    mdb_fresh(m, SDB)
    q(conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % SDB)
    mx(m, 'CREATE TABLE %s.s (id BIGINT NOT NULL PRIMARY KEY, v INT NOT NULL, pad VARCHAR(40))' % SDB)
    mx(m, "INSERT INTO %s.s SELECT seq, seq, REPEAT('z', seq %% 31) FROM %s.seq_1_to_20000" % (SDB, SDB))
    mx(m, "INSERT INTO %s.s VALUES (10000000, 0, 'far')" % SDB)
    src = Source(conn, 'ac_rngs', r'^%s\.' % SDB, unmapped='skip', continuous='true')
    halt = threading.Event()
    errors = []
    counts = {'moves': 0, 'deletes': 0, 'inserts': 0, 'updates': 0}
    rnd = random.Random(8513)
    keys = KeySet(list(range(1, 20001)), rnd)

    def writer():
        w = mdb(db=SDB)
        try:
            while not halt.is_set():
                op = rnd.random()
                if op < 0.3:
                    mx(w, 'UPDATE s SET v = v + 1 WHERE id = %d' % keys.pick())
                    counts['updates'] += 1
                elif op < 0.45:
                    k = keys.pick()
                    mx(w, 'DELETE FROM s WHERE id = %d' % k)
                    keys.remove(k)
                    counts['deletes'] += 1
                elif op < 0.6:
                    k = keys.absent(1, 30000)
                    mx(w, "INSERT INTO s VALUES (%d, %d, 'new')" % (k, op * 1000))
                    keys.add(k)
                    counts['inserts'] += 1
                else:
                    k = keys.pick()
                    to = keys.absent(1, 30000)
                    mx(w, "UPDATE s SET id = %d, pad = 'moved' WHERE id = %d" % (to, k))
                    keys.remove(k)
                    keys.add(to)
                    counts['moves'] += 1
                time.sleep(0.002)
        except Exception as e:                      # noqa: BLE001
            errors.append(e)
        finally:
            w.close()

    def state(c):
        return q(c, 'SELECT load_key_hi, load_range, load_split FROM binlog_fdw.table_mapping '
                    "WHERE server_name = 'ac_rngs' AND source_table = 's'")[0]

    wt = threading.Thread(target=writer, daemon=True)
    try:
        src.start()
        wait_for('the apply worker of ac_rngs', lambda: (status(conn, 'ac_rngs') or {}).get('apply_pid'), 30)
        wt.start()
        time.sleep(0.3)
        res = {}
        caller = pg()

        def run():
            try:
                q(caller, 'CALL binlog_fdw.load(%s, %s, 500, parallel => 3)', ('ac_rngs', ['%s.s' % SDB]))
            except Exception as e:                  # noqa: BLE001
                res['error'] = e
        tl = threading.Thread(target=run)
        tl.start()
        wait_for('the target s', lambda: q1(conn, 'SELECT to_regclass(%s) IS NOT NULL', ('%s.s' % SDB,)), 60, 0.01)
        q(conn, 'CREATE FUNCTION %s.slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN '
                'PERFORM pg_sleep(0.0003); RETURN NEW; END $$' % SDB)
        q(conn, 'CREATE TRIGGER slow BEFORE INSERT ON %s.s FOR EACH ROW EXECUTE FUNCTION %s.slow()' % (SDB, SDB))

        def split_now():
            st = q(conn, "SELECT load_split FROM binlog_fdw.table_mapping "
                         "WHERE server_name = 'ac_rngs' AND source_table = 's'")
            return len((st or [[None]])[0][0] or [])
        wait_for('a range of s split again', lambda: split_now() >= 5 or not tl.is_alive(), 120, 0.02)
        check(tl.is_alive(), 'the load ended before the kill: %s (split %s)' % (res, state(conn)[2]))
        his, rngs, split = state(conn)
        lpid = q1(conn, "SELECT pid FROM pg_stat_activity WHERE backend_type = 'binlog_fdw loader' LIMIT 1")
        check(lpid, 'no background loader runs')
        os.kill(lpid, signal.SIGKILL)
        tl.join(60)
        try:
            caller.close()
        except Exception:                           # noqa: BLE001
            pass
        check('error' in res, 'load() ended without an error after its loader was killed')
        time.sleep(1)
        wait_for('PostgreSQL back', lambda: q1(pg(), 'SELECT 1'), 60, 0.2)
        conn2 = pg()
        src.conn = conn2
        wait_for('ac_rngs streaming again',
                 lambda: (status(conn2, 'ac_rngs') or {}).get('state') == 'streaming', 60, 0.2)
        his, rngs, split = state(conn2)
        log('loader %d killed after %d chunks; split %s; chunks per range %s'
            % (lpid, len(his), split, [rngs.count(i + 1) for i in range(len(split) + 1)]))
        before = (his, split)

        q(conn2, 'CALL binlog_fdw.load(%s, %s, 500, parallel => 3)', ('ac_rngs', ['%s.s' % SDB]))
        time.sleep(0.5)
        halt.set()
        wt.join(30)
        check(not errors, 'writer: %s' % errors)
        log('writer: %s' % counts)

        his, rngs, split = state(conn2)
        check(his[:len(before[0])] == before[0], 'the chunks committed before the kill changed')
        check(set(before[1]) <= set(split), 'bounds of the split were lost on restart: %s, then %s'
              % (before[1], split))
        bounds = [int(b) for b in split]
        check(bounds == sorted(bounds) and len(set(bounds)) == len(bounds), 'range bounds %s' % bounds)
        for r in range(len(bounds) + 1):
            mine = [h for h, g in zip(his, rngs) if g == r + 1]
            check(mine and mine[-1] is None and None not in mine[:-1],
                  'range %d: chunks %s do not end with the range\'s last' % (r + 1, short(mine, 200)))
            ks = [int(h) for h in mine[:-1]]
            lo = bounds[r - 1] if r > 0 else None
            hi = bounds[r] if r < len(bounds) else None
            check(ks == sorted(ks) and len(set(ks)) == len(ks) and all((lo is None or k > lo) and
                                                                      (hi is None or k <= hi) for k in ks),
                  'range %d (%s, %s]: chunk bounds %s' % (r + 1, lo, hi, short(ks, 300)))
        per = [rngs.count(i + 1) for i in range(len(bounds) + 1)]
        dense = [n for b, n in zip([0] + bounds, per) if b < 30000]
        log('s: %d chunks, %d ranges, per range %s, split %s' % (len(his), len(per), per, bounds))
        check(len(bounds) >= 5, 'the crowded range was not split again: split %s' % bounds)

        mx(m, "INSERT INTO %s.s VALUES (999999999, 0, 'marker')" % SDB)
        wait_for('the marker row in PostgreSQL',
                 lambda: q1(conn2, 'SELECT count(*) FROM %s.s WHERE id = 999999999' % SDB), 60, 0.1)
        st = status(conn2, 'ac_rngs')
        check(not st.get('apply_error'), 'the apply worker had an error: %s' % short(st.get('apply_error'), 600))
        got = q(conn2, 'SELECT id, v, pad FROM %s.s ORDER BY id' % SDB)
        exp = [tuple(x) for x in mx(m, 'SELECT id, v, pad FROM %s.s ORDER BY id' % SDB)]
        check(got == exp, 's differs after the parallel load: PostgreSQL %d rows, MariaDB %d; only in PostgreSQL '
              '%s, only in MariaDB %s' % (len(got), len(exp), short(sorted(set(got) - set(exp))[:5], 300),
                                        short(sorted(set(exp) - set(got))[:5], 300)))
        ls = q(conn2, 'SELECT chunks, complete, ranges, ranges_complete FROM binlog_fdw.load_status '
                      "WHERE server = 'ac_rngs'")
        check(ls == [(len(his), True, len(bounds) + 1, len(bounds) + 1)], 'load_status of s: %s' % ls)
        log('s equal to MariaDB: %d rows; chunks of the ranges below 30000: %s' % (len(got), dense))
    finally:
        halt.set()
        src.conn = pg()
        src.drop()
        q(src.conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % SDB)
        src.conn.close()


XDB = 'blf_ac_rngx'


def case_load_ranges_text(conn, m):
    """
    load-ranges-text: a table whose primary key is a VARCHAR of a
    case-insensitive PAD SPACE collation (utf8mb4_general_ci), keys of mixed
    case and trailing spaces, loaded with parallel => 3 while a writer
    inserts, deletes, and updates keys to other cases and spaces ('ab' to
    'AB ', the same key there) and the continuous worker applies: the table
    is copied in one pass (load_status: one range, complete; load_split
    NULL: apply could not place a changed key among bounds as the collation
    orders them), and ends equal to MariaDB's, byte for byte.
    """
    mdb_fresh(m, XDB)
    q(conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % XDB)
    mx(m, 'CREATE TABLE %s.x (k VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL '
          "PRIMARY KEY, v INT NOT NULL, pad VARCHAR(300) NOT NULL DEFAULT '')" % XDB)
    rnd = random.Random(8514)

    def variant(base):
        s = ''.join(c.upper() if rnd.random() < 0.5 else c for c in base)
        return s + ' ' * rnd.randint(0, 2)

    bases = ['k%06d' % i for i in range(120000)]
    present = {}
    for b in bases:
        present[b] = variant(b)
    rows = list(present.values())
    for i in range(0, len(rows), 2000):
        mx(m, 'INSERT INTO %s.x (k, v) VALUES %s' % (XDB, ', '.join("('%s', %d)" % (k, n) for n, k in
                                                                    enumerate(rows[i:i + 2000]))))
    # a pass long enough to overlap the writer
    mx(m, "UPDATE %s.x SET pad = REPEAT('p', 300)" % XDB)
    src = Source(conn, 'ac_rngx', r'^%s\.' % XDB, unmapped='skip', continuous='true')
    halt = threading.Event()
    errors = []
    counts = {'recase': 0, 'deletes': 0, 'inserts': 0, 'updates': 0}

    def writer():
        w = mdb(db=XDB)
        try:
            while not halt.is_set():
                op = rnd.random()
                b = bases[rnd.randrange(len(bases))]
                if op < 0.3 and b in present:
                    mx(w, "UPDATE x SET v = v + 1 WHERE k = '%s'" % b)
                    counts['updates'] += 1
                elif op < 0.45 and b in present:
                    mx(w, "DELETE FROM x WHERE k = '%s'" % b.upper())
                    del present[b]
                    counts['deletes'] += 1
                elif op < 0.6 and b not in present:
                    k = variant(b)
                    mx(w, "INSERT INTO x (k, v) VALUES ('%s', 7)" % k)
                    present[b] = k
                    counts['inserts'] += 1
                elif b in present:
                    # the same key under the collation, other bytes
                    k = variant(b)
                    mx(w, "UPDATE x SET k = '%s' WHERE k = '%s'" % (k, b))
                    present[b] = k
                    counts['recase'] += 1
                time.sleep(0.002)
        except Exception as e:                      # noqa: BLE001
            errors.append(e)
        finally:
            w.close()

    wt = threading.Thread(target=writer, daemon=True)
    try:
        src.start()
        wait_for('the apply worker of ac_rngx', lambda: (status(conn, 'ac_rngx') or {}).get('apply_pid'), 30)
        wt.start()
        time.sleep(0.5)
        n0 = sum(counts.values())
        t0 = time.monotonic()
        q(conn, 'CALL binlog_fdw.load(%s, %s, 500, parallel => 3)', ('ac_rngx', ['%s.x' % XDB]))
        during = sum(counts.values()) - n0
        log('load() took %.1fs, %d writes meanwhile' % (time.monotonic() - t0, during))
        check(during >= 30, 'only %d writes while the table loaded' % during)
        time.sleep(1)
        halt.set()
        wt.join(30)
        check(not errors, 'writer: %s' % errors)
        log('writer: %s' % counts)
        mx(m, "INSERT INTO %s.x (k, v) VALUES ('~marker', 0)" % XDB)
        wait_for('the marker row in PostgreSQL',
                 lambda: q1(conn, "SELECT count(*) FROM %s.x WHERE k = '~marker'" % XDB), 60, 0.1)
        st = status(conn, 'ac_rngx')
        check(not st.get('apply_error'), 'the apply worker had an error: %s' % short(st.get('apply_error'), 600))
        got = sorted(tuple(r) for r in q(conn, 'SELECT k, v, pad FROM %s.x' % XDB))
        exp = sorted(tuple(r) for r in mx(m, 'SELECT k, v, pad FROM %s.x' % XDB))
        check(got == exp, 'x differs after the load: PostgreSQL %d rows, MariaDB %d; only in PostgreSQL '
              '%s, only in MariaDB %s' % (len(got), len(exp), short(sorted(set(got) - set(exp))[:5], 300),
                                        short(sorted(set(exp) - set(got))[:5], 300)))
        spaced = sum(1 for r in got if r[0].endswith(' '))
        check(spaced > 1000 and any(r[0] != r[0].lower() for r in got), 'the keys lack trailing spaces or capitals')
        ls = q(conn, "SELECT chunks, complete, ranges, ranges_complete FROM binlog_fdw.load_status "
                     "WHERE server = 'ac_rngx'")
        check(ls == [(1, True, 1, 1)], 'load_status of x: %s' % ls)
        log('x equal to MariaDB: %d rows (%d with trailing spaces), one pass' % (len(got), spaced))
    finally:
        halt.set()
        src.drop()
        q(conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % XDB)
