#!/usr/bin/python3
"""bench/apply/apply.py -- the timed part of bench/apply/run.sh (issue #4's
benchmark).  Three phases:

throughput   MariaDB -> PostgreSQL apply of the standard workload's backlog
             (1,750,000 row changes), rounds interleaved, best of --runs:
  fdw-apply        binlog_fdw: worker from 'earliest' (the binlog's own
                   CREATE DATABASE/TABLE create the target through DDL
                   translation), a session loops
                   SELECT * FROM binlog_fdw.apply('src', 1000000, 60, 1)
  fdw-continuous   binlog_fdw with continuous 'true': start() until the apply
                   worker reports every row applied (status.applied_rows)
  pg-logical       PostgreSQL 15 native logical replication between two
                   clusters: the publisher loads the same rows, updates and
                   deletes (pg_workload.py, one transaction per statement as
                   on MariaDB) while the subscription is disabled (untimed);
                   then ENABLE and time until the subscriber's origin passed
                   the last transaction (pg_replication_origin_status)
  mariadb-replica  a MariaDB replica's SQL thread (single-threaded, the
                   default) applying the same binlog, relay log fetched
                   beforehand (untimed)
  pg-copy          reference: server-side COPY of the 1,000,000 inserted rows
                   into an empty table of the same definition
latency      continuous mode, single-row transactions at --rate tx/s into
             MariaDB for --lat-seconds: commit (the INSERT returned) ->
             visible in PostgreSQL (a poller's SELECT max(id) sees it),
             p50/p90/p99/max
memory       one transaction of 1 MB, 16 MB, 256 MB, 1 GB of binlog
             (INSERT ... SELECT of 1 KB rows) through the ring (16 MB):
             peak RssAnon and VmHWM of the worker and of the backend that
             runs apply(), sampled every 50 ms
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import benchlib as B  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ALL_TOOLS = ['fdw-apply', 'fdw-continuous', 'pg-logical', 'mariadb-replica', 'pg-copy']
# parallel apply (not run by default): --tools fdw-continuous,fdw-parallel,mariadb-replica-parallel
PARALLEL = 4
EXTRA_TOOLS = ['fdw-parallel', 'mariadb-replica-parallel']
LABELS = {
    'fdw-parallel': 'binlog_fdw continuous mode, apply_workers = %d' % PARALLEL,
    'mariadb-replica-parallel': 'MariaDB replica, slave_parallel_threads = %d (optimistic)' % PARALLEL,
    'fdw-apply': 'binlog_fdw apply() loop',
    'fdw-continuous': 'binlog_fdw continuous mode',
    'pg-logical': 'PostgreSQL native logical replication',
    'mariadb-replica': 'MariaDB replica SQL thread',
    'pg-copy': 'COPY of the 1M inserted rows (reference)',
}
SHORT = {
    'fdw-parallel': 'binlog_fdw\n%d apply workers' % PARALLEL,
    'mariadb-replica-parallel': 'MariaDB replica\n%d parallel threads' % PARALLEL,
    'fdw-apply': 'binlog_fdw\napply() loop',
    'fdw-continuous': 'binlog_fdw\ncontinuous',
    'pg-logical': 'PostgreSQL\nlogical replication',
    'mariadb-replica': 'MariaDB replica\nSQL thread',
    'pg-copy': 'COPY 1M rows\n(reference)',
}
PSQL = '/usr/lib/postgresql/15/bin/psql'


def psql_file(port, path):
    subprocess.run([PSQL, '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-h', B.INST, '-p', str(port),
                    '-U', 'postgres', '-d', 'bench', '-f', path],
                   check=True, stdout=subprocess.DEVNULL)


class Bench:
    def __init__(self, a):
        self.a = a
        self.src_pid = B.mariadbd_pid('bsrc')
        self.repl_pid = B.mariadbd_pid('brepl')
        self.remaining = a.w_rows - a.w_del
        self.profiles = {}

    def fdw_conn(self):
        # after a crash of another run, wait for PostgreSQL's recovery
        t0 = time.time()
        while True:
            try:
                return B.pg(self.a.pg_port, 'bench', app='bench-apply')
            except Exception as e:  # noqa: BLE001
                if time.time() - t0 > 180 or not any(
                        w in str(e) for w in ('recovery mode', 'shutting down', 'starting up')):
                    raise
                time.sleep(1)

    def fdw_reset(self, conn):
        for s in ('src', 'srcc'):
            B.q(conn, 'SELECT binlog_fdw.stop(%s)', (s,))
            B.q(conn, 'SELECT binlog_fdw.reset(%s)', (s,))
        # the binlog's own CREATE TABLE creates the target (DDL translation);
        # its CREATE DATABASE is CREATE SCHEMA IF NOT EXISTS in newer builds,
        # ignored in older ones: the schema is made here for both
        B.q(conn, 'DROP SCHEMA IF EXISTS bench CASCADE')
        B.q(conn, 'CREATE SCHEMA bench')
        B.q(conn, 'CHECKPOINT')

    def fdw_apply(self, profile=None):
        a = self.a
        conn = self.fdw_conn()
        self.fdw_reset(conn)
        backend = B.q1(conn, 'SELECT pg_backend_pid()')
        b0 = B.proc_cpu(backend)
        s0 = B.proc_cpu(self.src_pid)
        sampler = B.MemSampler(0.1)
        sampler.watch('backend', backend)
        sampler.start()
        calls = total = 0
        t0 = time.perf_counter()
        wpid = B.start_source(conn, 'src')
        sampler.watch('worker', wpid)
        perfs = {}
        if profile:
            perfs = {'worker': B.Perf(wpid, profile + '-worker.data'),
                     'apply() backend': B.Perf(backend, profile + '-backend.data')}
        while total < a.expected_rows and time.perf_counter() - t0 < a.timeout:
            r = B.q(conn, "SELECT rows FROM binlog_fdw.apply('src', %s, 60, 1)", (a.max_changes,))
            total += r[0][0]
            calls += 1
        secs = time.perf_counter() - t0
        for p in perfs.values():
            p.stop()
        if perfs:
            self.profiles['fdw-apply'] = {k: {'self': p.top(15), 'children': p.top(12, children=True)}
                                          for k, p in perfs.items()}
        out = {'seconds': secs, 'rows': total, 'apply_calls': calls,
               'cpu_s': {'worker': B.proc_cpu(wpid), 'backend': B.proc_cpu(backend) - b0,
                         'source mariadbd': B.proc_cpu(self.src_pid) - s0}}
        peak = sampler.stop()
        out['peak_kb'] = {'%s %s' % (p, k): peak.get(p, {}).get(k) for p in ('worker', 'backend')
                          for k in ('RssAnon', 'VmHWM')}
        self.check(out, conn, 'bench.' + a.table_name)
        B.q(conn, "SELECT binlog_fdw.stop('src')")
        conn.close()
        return out

    def fdw_continuous(self, profile=None, parallel=False):
        a = self.a
        conn = self.fdw_conn()
        self.fdw_reset(conn)
        if not parallel:
            # serial whatever the machine (the default, -1, is serial on 2 cores only)
            B.q(conn, 'ALTER SYSTEM SET binlog_fdw.apply_workers = 1')
            B.q(conn, 'SELECT pg_reload_conf()')
            time.sleep(0.5)
        # done = the acknowledged position reached the end of the backlog's last
        # transaction (applied_rows alone is unreliable: builds before fc47faf
        # keep a reused slot's counters)
        last_file, last_pos = a.last_commit.rsplit(':', 1)
        last_pos = int(last_pos)
        s0 = B.proc_cpu(self.src_pid)
        sampler = B.MemSampler(0.1)
        sampler.start()
        t0 = time.perf_counter()
        wpid = B.start_source(conn, 'srcc')
        sampler.watch('worker', wpid)
        apid = None
        perfs = {}
        st = {}
        done = False
        while time.perf_counter() - t0 < a.timeout:
            r = B.q(conn, "SELECT applied_rows, apply_pid, apply_error, state, acked_file, acked_pos"
                          " FROM binlog_fdw.status WHERE server = 'srcc'")
            if r:
                st = dict(zip(['rows', 'pid', 'error', 'state', 'file', 'pos'], r[0]))
                if st['pid'] and not apid:
                    apid = st['pid']
                    sampler.watch('apply worker', apid)
                    if profile:
                        perfs = {'worker': B.Perf(wpid, profile + '-worker.data'),
                                 'apply worker': B.Perf(apid, profile + '-apply.data')}
                if st['file'] and (st['file'], st['pos'] or 0) >= (last_file, last_pos):
                    done = True
                    break
                if st['error']:
                    break
            time.sleep(0.02)
        secs = time.perf_counter() - t0
        for p in perfs.values():
            p.stop()
        if perfs:
            self.profiles['fdw-continuous'] = {k: {'self': p.top(15), 'children': p.top(12, children=True)}
                                               for k, p in perfs.items()}
        out = {'seconds': secs, 'rows': a.expected_rows if done else 0,
               'status_applied_rows': st.get('rows'),
               'cpu_s': {'worker': B.proc_cpu(wpid), 'apply worker': B.proc_cpu(apid),
                         'source mariadbd': B.proc_cpu(self.src_pid) - s0}}
        peak = sampler.stop()
        out['peak_kb'] = {'%s %s' % (p, k): peak.get(p, {}).get(k) for p in ('worker', 'apply worker')
                          for k in ('RssAnon', 'VmHWM')}
        if st.get('error'):
            out['error'] = st['error']
        self.check(out, conn, 'bench.' + a.table_name)
        if parallel:
            r = B.q(conn, "SELECT dispatched, max_in_flight, key_waits, barriers "
                          "FROM binlog_fdw.parallel_apply_stats('srcc')")
            out['parallel'] = dict(zip(['dispatched', 'max_in_flight', 'key_waits', 'barriers'], r[0]))
        B.q(conn, "SELECT binlog_fdw.stop('srcc')")
        conn.close()
        return out

    def check(self, out, conn, table):
        try:
            n = B.q1(conn, 'SELECT count(*) FROM %s' % table)
        except Exception as e:  # noqa: BLE001
            n = None
            conn.rollback() if not conn.autocommit else None
            out.setdefault('error', str(e)[:300])
        out['final_count'] = n
        if out['rows'] < self.a.expected_rows and not out.get('error'):
            out['error'] = 'only %d of %d rows' % (out['rows'], self.a.expected_rows)
        elif n != self.remaining and not out.get('error'):
            out['error'] = '%s has %s rows, expected %d' % (table, n, self.remaining)

    def pg_logical(self):
        a = self.a
        pub = B.pg(a.pub_port, 'bench')
        sub = B.pg(a.sub_port, 'bench')
        if B.q1(sub, "SELECT count(*) FROM pg_subscription WHERE subname = 'bs'"):
            B.q(sub, 'ALTER SUBSCRIPTION bs DISABLE')
            B.q(sub, 'DROP SUBSCRIPTION bs')
        B.q(pub, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = 'bs'")
        B.q(pub, 'TRUNCATE bench.sbtest1')
        B.q(sub, 'TRUNCATE bench.sbtest1')
        B.q(sub, "CREATE SUBSCRIPTION bs CONNECTION 'host=%s port=%d dbname=bench user=postgres' "
                 "PUBLICATION bp WITH (enabled = false, copy_data = false, create_slot = true, "
                 "slot_name = 'bs')" % (B.INST, a.pub_port))
        B.log('    pg-logical: loading the publisher (untimed)')
        t = time.perf_counter()
        psql_file(a.pub_port, os.path.join(a.pgw, 'load.sql'))
        lsn0 = B.q1(pub, 'SELECT pg_current_wal_insert_lsn()')
        psql_file(a.pub_port, os.path.join(a.pgw, 'last.sql'))
        B.log('    pg-logical: loaded in %.0f s; WAL %s' % (
            time.perf_counter() - t, B.q1(pub, "SELECT pg_size_pretty(pg_wal_lsn_diff("
                                               "pg_current_wal_insert_lsn(), confirmed_flush_lsn))"
                                               " FROM pg_replication_slots WHERE slot_name = 'bs'")))
        B.q(pub, 'CHECKPOINT')
        B.q(sub, 'CHECKPOINT')
        t0 = time.perf_counter()
        B.q(sub, 'ALTER SUBSCRIPTION bs ENABLE')
        wal_pid = apply_pid = None
        cpu = {}
        sampler = B.MemSampler(0.1)
        sampler.start()
        done = False
        while time.perf_counter() - t0 < a.timeout:
            if not apply_pid:
                apply_pid = B.q1(sub, "SELECT pid FROM pg_stat_subscription WHERE subname = 'bs' AND relid IS NULL")
                sampler.watch('apply worker', apply_pid)
            if not wal_pid:
                wal_pid = B.q1(pub, "SELECT active_pid FROM pg_replication_slots WHERE slot_name = 'bs'")
                sampler.watch('walsender', wal_pid)
            if B.q1(sub, 'SELECT coalesce(max(remote_lsn), %s::pg_lsn) > %s::pg_lsn '
                         'FROM pg_replication_origin_status', ('0/0', lsn0)):
                done = True
                break
            time.sleep(0.01)
        secs = time.perf_counter() - t0
        cpu = {'apply worker (subscriber)': B.proc_cpu(apply_pid) if apply_pid else None,
               'walsender (publisher)': B.proc_cpu(wal_pid) if wal_pid else None}
        peak = sampler.stop()
        out = {'seconds': secs, 'rows': a.expected_rows if done else 0, 'cpu_s': cpu,
               'peak_kb': {'%s %s' % (p, k): peak.get(p, {}).get(k)
                           for p in ('apply worker', 'walsender') for k in ('RssAnon', 'VmHWM')}}
        if not done:
            out['error'] = 'timeout'
        self.check(out, sub, 'bench.sbtest1')
        B.q(sub, 'ALTER SUBSCRIPTION bs DISABLE')
        pub.close()
        sub.close()
        return out

    def fdw_parallel(self):
        """fdw-continuous with binlog_fdw.apply_workers = PARALLEL."""
        conn = self.fdw_conn()
        B.q(conn, 'ALTER SYSTEM SET binlog_fdw.apply_workers = %d' % PARALLEL)
        B.q(conn, 'SELECT pg_reload_conf()')
        time.sleep(0.5)
        try:
            return self.fdw_continuous(parallel=True)
        finally:
            B.q(conn, 'ALTER SYSTEM RESET binlog_fdw.apply_workers')
            B.q(conn, 'SELECT pg_reload_conf()')
            conn.close()

    def mariadb_replica_parallel(self):
        """mariadb-replica with slave_parallel_threads = PARALLEL, optimistic mode."""
        return self.mariadb_replica(threads=PARALLEL)

    def mariadb_replica(self, threads=0):
        a = self.a
        c = B.mdb('brepl', dict_cursor=True)
        B.mx(c, 'STOP SLAVE')
        B.mx(c, 'RESET SLAVE ALL')
        B.mx(c, 'SET GLOBAL slave_parallel_threads = %d' % threads)
        B.mx(c, "SET GLOBAL slave_parallel_mode = '%s'" % ('optimistic' if threads else 'conservative'))
        B.mx(c, 'SET sql_log_bin = 0')
        B.mx(c, 'DROP DATABASE IF EXISTS bench')
        B.mx(c, "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER='repl', "
                "MASTER_PASSWORD='repl', MASTER_LOG_FILE='mysql-bin.000001', MASTER_LOG_POS=4, "
                "MASTER_USE_GTID=no" % a.src_port)
        B.mx(c, 'START SLAVE IO_THREAD')
        err = B.replica_wait(c, 'io', a.end_file, a.end_pos, a.timeout, poll=0.05)
        if err:
            return {'seconds': None, 'rows': 0, 'error': 'IO thread: ' + err}
        B.mx(c, 'FLUSH TABLES')
        r0 = B.proc_cpu(self.repl_pid)
        t0 = time.perf_counter()
        B.mx(c, 'START SLAVE SQL_THREAD')
        err = B.replica_wait(c, 'sql', a.end_file, a.end_pos, a.timeout)
        secs = time.perf_counter() - t0
        out = {'seconds': secs, 'rows': a.expected_rows,
               'cpu_s': {'replica mariadbd': B.proc_cpu(self.repl_pid) - r0}}
        if err:
            out['error'] = err
        B.mx(c, 'STOP SLAVE')
        n = B.mx(c, 'SELECT count(*) AS n FROM bench.%s' % a.table_name)[0]['n'] if not err else None
        out['final_count'] = n
        if n is not None and n != self.remaining:
            out['error'] = 'replica has %s rows, expected %d' % (n, self.remaining)
        c.close()
        return out

    def pg_copy(self):
        a = self.a
        conn = self.fdw_conn()
        B.q(conn, 'TRUNCATE copyref.sbtest1')
        B.q(conn, 'CHECKPOINT')
        backend = B.q1(conn, 'SELECT pg_backend_pid()')
        b0 = B.proc_cpu(backend)
        t0 = time.perf_counter()
        B.q(conn, "COPY copyref.sbtest1 FROM '%s'" % os.path.join(a.pgw, 'rows.tsv'))
        secs = time.perf_counter() - t0
        n = B.q1(conn, 'SELECT count(*) FROM copyref.sbtest1')
        out = {'seconds': secs, 'rows': n, 'cpu_s': {'backend': B.proc_cpu(backend) - b0}}
        if n != a.w_rows:
            out['error'] = 'copied %s rows' % n
        conn.close()
        return out

    def run(self, tool, rnd):
        try:
            r = {'fdw-apply': self.fdw_apply, 'fdw-continuous': self.fdw_continuous,
                 'fdw-parallel': self.fdw_parallel,
                 'mariadb-replica-parallel': self.mariadb_replica_parallel,
                 'pg-logical': self.pg_logical, 'mariadb-replica': self.mariadb_replica,
                 'pg-copy': self.pg_copy}[tool]()
        except Exception as e:  # noqa: BLE001 -- a failed tool is reported, the others go on
            r = {'seconds': None, 'rows': 0, 'error': '%s: %s' % (type(e).__name__, str(e)[:400])}
        r['rows_per_s'] = r['rows'] / r['seconds'] if r.get('seconds') else None
        return r


# ---------------------------------------------------------------------------
# latency

def writer(a):
    """--writer: single-row autocommit INSERTs at --rate for --lat-seconds;
    prints JSON lines [id, time the INSERT returned] in batches."""
    c = B.mdb('blat', db='latdb')
    cur = c.cursor()
    n = int(a.rate * a.lat_seconds)
    t0 = time.time() + 0.2
    out = []
    for i in range(1, n + 1):
        due = t0 + (i - 1) / a.rate
        d = due - time.time()
        if d > 0:
            time.sleep(d)
        cur.execute('INSERT INTO lat (id, v) VALUES (%s, 0)', (i,))
        out.append(time.time())
    json.dump({'t0': t0, 'commit': out}, sys.stdout)


def latency(a, workers=1):
    res = {'rate_target': a.rate, 'seconds': a.lat_seconds, 'apply_workers': workers}
    m = B.mdb('blat')
    B.mx(m, 'DROP DATABASE IF EXISTS latdb')
    B.mx(m, 'CREATE DATABASE latdb')
    B.mx(m, 'CREATE TABLE latdb.lat (id BIGINT PRIMARY KEY, v INT)')
    conn = B.pg(a.pg_port, 'bench', app='bench-latency')
    B.q(conn, "SELECT binlog_fdw.stop('lat')")
    B.q(conn, "SELECT binlog_fdw.reset('lat')")
    # binlog_fdw.apply_workers of the continuous worker (1: serial)
    B.q(conn, 'ALTER SYSTEM SET binlog_fdw.apply_workers = %d' % workers)
    B.q(conn, 'SELECT pg_reload_conf()')
    time.sleep(0.5)
    B.q(conn, 'DROP SCHEMA IF EXISTS latdb CASCADE')
    B.q(conn, 'CREATE SCHEMA latdb')
    B.q(conn, 'CREATE TABLE latdb.lat (id bigint PRIMARY KEY, v integer)')
    B.q(conn, "SELECT binlog_fdw.start('lat')")
    t = time.time()
    while time.time() - t < 30:
        st = B.q(conn, "SELECT state, apply_pid FROM binlog_fdw.status WHERE server = 'lat'")
        if st and st[0][0] == 'streaming' and st[0][1]:
            break
        time.sleep(0.05)
    time.sleep(1.0)
    st = B.q(conn, "SELECT worker_pid, apply_pid FROM binlog_fdw.status WHERE server = 'lat'")[0]
    c0 = {'worker': B.proc_cpu(st[0]), 'apply worker': B.proc_cpu(st[1]),
          'source mariadbd': B.proc_cpu(B.mariadbd_pid('blat'))}
    load0 = B.loadavg()
    w = subprocess.Popen([sys.executable, os.path.abspath(__file__), '--writer', '--rate', str(a.rate),
                          '--lat-seconds', str(a.lat_seconds)], stdout=subprocess.PIPE)
    polls = []          # (time, max id visible)
    last = 0
    n = int(a.rate * a.lat_seconds)
    cur = conn.cursor()
    deadline = time.time() + a.lat_seconds + 60
    npolls = 0
    while last < n and time.time() < deadline:
        cur.execute('SELECT max(id) FROM latdb.lat')
        v = cur.fetchone()[0] or 0
        tn = time.time()
        npolls += 1
        if v > last:
            polls.append((tn, v))
            last = v
        time.sleep(0.0005)
    wr = json.loads(w.communicate()[0])
    c1 = {'worker': B.proc_cpu(st[0]), 'apply worker': B.proc_cpu(st[1]),
          'source mariadbd': B.proc_cpu(B.mariadbd_pid('blat'))}
    commits = wr['commit']
    lat = []
    j = 0
    for i, tc in enumerate(commits, start=1):
        while j < len(polls) and polls[j][1] < i:
            j += 1
        if j == len(polls):
            break
        lat.append((polls[j][0] - tc) * 1000)
    lat_sorted = sorted(lat)
    # when the slow ones happened: seconds since the first commit, worst first
    worst = sorted(((lat[i], commits[i] - commits[0]) for i in range(len(lat))), reverse=True)
    stalls = []
    for ms, at in worst:
        if ms < 50 or len(stalls) >= 10:
            break
        if all(abs(at - s2[1]) > 1.0 for s2 in stalls):
            stalls.append((round(ms, 1), round(at, 2)))

    def pct(p):
        return lat_sorted[min(len(lat_sorted) - 1, int(p / 100 * len(lat_sorted)))] if lat_sorted else None
    span = commits[-1] - commits[0] if len(commits) > 1 else None
    res.update({
        'transactions': len(commits), 'visible': len(lat),
        'rate_achieved': (len(commits) - 1) / span if span else None,
        'p50_ms': pct(50), 'p90_ms': pct(90), 'p99_ms': pct(99), 'max_ms': lat_sorted[-1] if lat_sorted else None,
        'mean_ms': statistics.mean(lat) if lat else None,
        'polls': npolls, 'poll_interval_ms': (a.lat_seconds * 1000 / npolls) if npolls else None,
        'cpu_s': {k: (c1[k] - c0[k]) if c1[k] is not None and c0[k] is not None else None for k in c0},
        'loadavg_before': load0, 'loadavg_after': B.loadavg(),
        'histogram_ms': lat_sorted[::max(1, len(lat_sorted) // 400)],
        'over_50ms': sum(1 for x in lat if x >= 50), 'over_100ms': sum(1 for x in lat if x >= 100),
        'stalls_ms_at_s': stalls,
    })
    B.q(conn, "SELECT binlog_fdw.stop('lat')")
    conn.close()
    return res


# ---------------------------------------------------------------------------
# memory vs transaction size

def memory(a):
    m = B.mdb('blat')
    conn = B.pg(a.pg_port, 'bench', app='bench-memory')
    B.mx(m, 'CREATE DATABASE IF NOT EXISTS memdb')
    B.mx(m, 'USE memdb')
    B.q(conn, 'CREATE SCHEMA IF NOT EXISTS memdb')
    out = []
    for mb in [int(x) for x in a.mem_sizes.split(',') if x]:
        t = 'big_%d' % mb
        nrows = max(1, mb * 1024 * 1024 // 1060)
        srv = 'mem_%d' % mb
        B.mx(m, 'DROP TABLE IF EXISTS memdb.%s' % t)
        B.mx(m, 'CREATE TABLE memdb.%s (id BIGINT PRIMARY KEY, v VARCHAR(1024)) DEFAULT CHARSET=latin1' % t)
        B.q(conn, 'DROP TABLE IF EXISTS memdb.%s' % t)
        B.q(conn, 'CREATE TABLE memdb.%s (id bigint PRIMARY KEY, v varchar(1024))' % t)
        f0, p0 = B.mx(m, 'SHOW MASTER STATUS')[0][:2]
        t_ins = time.perf_counter()
        B.mx(m, "INSERT INTO memdb.%s SELECT seq, REPEAT(CHAR(65 + seq MOD 26), 1000) FROM seq_1_to_%d"
             % (t, nrows))
        t_ins = time.perf_counter() - t_ins
        f1, p1 = B.mx(m, 'SHOW MASTER STATUS')[0][:2]
        if f0 == f1:
            trx_bytes = p1 - p0
        else:       # the transaction filled f0, then the binlog rotated
            sizes = dict((r[0], r[1]) for r in B.mx(m, 'SHOW BINARY LOGS'))
            trx_bytes = sizes[f0] - p0 if f0 in sizes else None
        B.q(conn, "SELECT binlog_fdw.stop(srvname) FROM pg_foreign_server WHERE srvname = %s", (srv,))
        B.q(conn, 'DROP SERVER IF EXISTS %s CASCADE' % srv)
        B.q(conn, "CREATE SERVER %s FOREIGN DATA WRAPPER binlog_fdw OPTIONS (host '127.0.0.1', port '%d', "
                  "server_id '%d', start '%s:%d', include '^memdb\\.')" % (srv, a.lat_port, 4600 + mb % 1000, f0, p0))
        B.q(conn, "CREATE USER MAPPING FOR CURRENT_USER SERVER %s OPTIONS (user 'repl', password 'repl')" % srv)
        ap = B.pg(a.pg_port, 'bench', app='bench-memory-apply')
        backend = B.q1(ap, 'SELECT pg_backend_pid()')
        sampler = B.MemSampler(0.05)
        sampler.watch('backend', backend)
        base_backend = B.proc_mem(backend)
        sampler.start()
        t0 = time.perf_counter()
        wpid = B.start_source(conn, srv)
        sampler.watch('worker', wpid)
        total = 0
        err = None
        try:
            while total < nrows and time.perf_counter() - t0 < a.timeout:
                total += B.q(ap, 'SELECT rows FROM binlog_fdw.apply(%s, %s, 600, 1)', (srv, nrows * 2))[0][0]
        except Exception as e:  # noqa: BLE001
            err = str(e)[:400]
        secs = time.perf_counter() - t0
        st = B.q(conn, 'SELECT worker_peak_rss_kb FROM binlog_fdw.status WHERE server = %s', (srv,))
        peak = sampler.stop()
        r = {'size_mb': mb, 'rows': nrows, 'binlog_bytes': trx_bytes, 'mariadb_insert_s': t_ins,
             'apply_seconds': secs, 'applied_rows': total,
             'worker_peak_rss_kb_status': st[0][0] if st else None,
             'worker': peak.get('worker', {}), 'backend': peak.get('backend', {}),
             'backend_at_start': base_backend}
        if err or total != nrows:
            r['error'] = err or 'applied %d of %d rows' % (total, nrows)
        out.append(r)
        B.log('  memory: %4d MB transaction (%s bytes of binlog, %d rows) applied in %.1f s: worker RssAnon '
              '%s kB VmHWM %s kB; backend RssAnon %s kB VmHWM %s kB%s' % (
                  mb, B.fmt_int(trx_bytes), nrows, secs, B.fmt_int(r['worker'].get('RssAnon')),
                  B.fmt_int(r['worker'].get('VmHWM')), B.fmt_int(r['backend'].get('RssAnon')),
                  B.fmt_int(r['backend'].get('VmHWM')), ('  ERROR ' + r['error']) if r.get('error') else ''))
        ap.close()
        B.q(conn, 'SELECT binlog_fdw.stop(%s)', (srv,))
        B.q(conn, 'DROP SERVER %s CASCADE' % srv)
        B.q(conn, 'DROP TABLE memdb.%s' % t)
        B.mx(m, 'DROP TABLE memdb.%s' % t)
    conn.close()
    return out


# ---------------------------------------------------------------------------
# report

def report(a, doc):
    res, tools = doc['results'], doc['tools']
    summary = {t: B.best(res[t]) for t in tools if B.best(res[t])}
    lr = summary.get('pg-logical', {}).get('rows_per_s')
    for b in summary.values():
        b['x_logical'] = b['rows_per_s'] / lr if lr else None
    doc['best'] = summary
    targets = []
    for t in ('fdw-apply', 'fdw-continuous'):
        if t in summary and lr:
            targets.append({'name': '%s >= 1.0x native logical replication' % LABELS[t],
                            'measured': round(summary[t]['x_logical'], 2), 'unit': 'x',
                            'pass': summary[t]['x_logical'] >= 1.0})
    lat = doc.get('latency')
    if lat and lat.get('p99_ms') is not None:
        targets.append({'name': 'continuous p99 commit->visible < 100 ms at %d tx/s' % a.rate,
                        'measured': round(lat['p99_ms'], 1), 'unit': 'ms', 'pass': lat['p99_ms'] < 100})
    for w, x in (doc.get('latency_by_workers') or {}).items():
        if int(w) > 1 and x.get('p99_ms') is not None:
            # issue 14: with N apply workers
            targets.append({'name': 'continuous p99 commit->visible < 10 ms at %d tx/s, %s apply workers'
                            % (a.rate, w), 'measured': round(x['p99_ms'], 1), 'unit': 'ms',
                            'pass': x['p99_ms'] < 10})
    mem = doc.get('memory')
    if mem and len(mem) > 1:
        w = [r['worker'].get('RssAnon') or 0 for r in mem]
        bk = [r['backend'].get('RssAnon') or 0 for r in mem]
        flat = max(w) <= 2 * max(min(w), 1) + 16384 and max(bk) <= 2 * max(min(bk), 1) + 16384
        targets.append({'name': 'worker and backend memory flat from %d MB to %d MB transactions' % (
            mem[0]['size_mb'], mem[-1]['size_mb']), 'measured': '%s / %s kB' % (
            B.fmt_int(max(w)), B.fmt_int(max(bk))), 'unit': '', 'pass': flat})
    doc['targets'] = targets

    hdr = ['tool', 'seconds', 'rows/s', 'x logical repl.', 'CPU s (where)', 'peak RssAnon MB', 'runs (s)']
    rows = []
    for t in tools:
        b = summary.get(t)
        runs = ', '.join(('%.1f' % r['seconds'] if r.get('seconds') else '-') + ('!' if r.get('error') else '')
                         for r in res[t])
        if not b:
            err = next((r.get('error') for r in res[t] if r.get('error')), '')
            rows.append([LABELS[t], 'failed', '', '', str(err)[:60], '', runs])
            continue
        cpu = ' + '.join('%s %.2f' % (k, v) for k, v in (b.get('cpu_s') or {}).items() if v is not None)
        pk = [v for k, v in (b.get('peak_kb') or {}).items() if 'RssAnon' in k and v]
        rows.append([LABELS[t], '%.2f' % b['seconds'], B.fmt_int(b['rows_per_s']), B.fmt(b['x_logical']),
                     cpu, ' / '.join('%.0f' % (v / 1024) for v in pk) or '-', runs])
    host = doc['host']
    busy = doc['busy']
    print()
    print('apply benchmark (issue #4), %s, %s, %d CPUs' % (doc['date'], host['cpu_model'], host['cpus_online']))
    print('workload: %s row changes (%d inserts, %d updates, %d deletes; 100 per transaction); best of %d runs, '
          'tools interleaved' % (B.fmt_int(a.expected_rows), a.w_rows, a.w_upd, a.w_del, a.runs))
    print('load average before %s, after %s. %s' % (' '.join(doc['loadavg_before']),
                                                    ' '.join(doc['loadavg_after']), busy))
    if tools:
        print(B.table(hdr, rows))
    if lat:
        print('continuous mode latency at %d tx/s (achieved %.0f) for %d s, %d transactions: p50 %.1f ms, '
              'p90 %.1f ms, p99 %.1f ms, max %.1f ms (poller every %.2f ms; best of %d runs by p99, '
              'all runs p50/p99/max: %s)' % (
                  a.rate, lat['rate_achieved'] or 0, a.lat_seconds, lat['transactions'], lat['p50_ms'],
                  lat['p90_ms'], lat['p99_ms'], lat['max_ms'], lat['poll_interval_ms'],
                  len(lat['all_runs_p50_p99_max_ms']),
                  '; '.join('%s/%s/%s' % tuple(x) for x in lat['all_runs_p50_p99_max_ms'])))
    mhdr = ['transaction', 'binlog bytes', 'rows', 'apply s', 'worker RssAnon MB', 'worker VmHWM MB',
            'backend RssAnon MB', 'backend VmHWM MB', 'backend RssShmem MB']
    mrows = []
    for r in mem or []:
        mrows.append(['%d MB' % r['size_mb'] + (' (failed)' if r.get('error') else ''),
                      B.fmt_int(r['binlog_bytes']), B.fmt_int(r['rows']),
                      '%.1f' % r['apply_seconds'],
                      B.fmt((r['worker'].get('RssAnon') or 0) / 1024, '%.1f'),
                      B.fmt((r['worker'].get('VmHWM') or 0) / 1024, '%.1f'),
                      B.fmt((r['backend'].get('RssAnon') or 0) / 1024, '%.1f'),
                      B.fmt((r['backend'].get('VmHWM') or 0) / 1024, '%.1f'),
                      B.fmt((r['backend'].get('RssShmem') or 0) / 1024, '%.1f')])
    if mrows:
        print('memory vs transaction size (ring %s):' % doc['settings']['ring_size'])
        print(B.table(mhdr, mrows))
    for t in targets:
        print('target %-66s %s (measured %s%s)' % (t['name'], 'PASS' if t['pass'] else 'FAIL',
                                                   t['measured'], t['unit']))

    os.makedirs(a.results, exist_ok=True)
    base = os.path.join(a.results, '%s-%s' % (a.name, doc['date']))
    B.write_json(base + '.json', doc)
    pngs = []
    if summary:
        png = os.path.join(a.results, '%s.png' % a.name)
        ts = [t for t in tools if t in summary]
        if B.bar_chart(png, 'MariaDB -> PostgreSQL apply of a %s-change backlog (%s, best of %d)' % (
                B.fmt_int(a.expected_rows), doc['date'], a.runs),
                [SHORT[t] for t in ts], [summary[t]['rows_per_s'] for t in ts], 'rows per second',
                [(lr, 'target: native logical replication', '#cc0000')] if lr else [],
                ['#d9822b' if t.startswith('fdw-') else '#3b75af' for t in ts]):
            pngs.append(png)
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
    except ImportError:
        plt = None
    if plt and lat and lat.get('histogram_ms'):
        png = os.path.join(a.results, '%s-latency.png' % a.name)
        fig, ax = plt.subplots(figsize=(8, 4.2), dpi=100)
        h = lat['histogram_ms']
        ax.plot(h, [100.0 * i / max(1, len(h) - 1) for i in range(len(h))], color='#d9822b')
        ax.axvline(100, color='#cc0000', linestyle='--', linewidth=1)
        ax.annotate('target p99 < 100 ms', (100, 5), color='#cc0000', fontsize=9, ha='right')
        for p, k in ((50, 'p50_ms'), (99, 'p99_ms')):
            ax.plot([lat[k]], [p], 'o', color='black')
            ax.annotate(' p%d %.1f ms' % (p, lat[k]), (lat[k], p), fontsize=9, va='center')
        ax.set_xscale('log')
        ax.set_xlabel('commit in MariaDB -> visible in PostgreSQL (ms, log scale)')
        ax.set_ylabel('% of transactions')
        ax.set_title('binlog_fdw continuous mode, single-row transactions at %d/s (%s)' % (a.rate, doc['date']),
                     fontsize=10)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(png)
        plt.close(fig)
        pngs.append(png)
    if plt and mem:
        png = os.path.join(a.results, '%s-memory.png' % a.name)
        fig, ax = plt.subplots(figsize=(8, 4.2), dpi=100)
        xs = [r['size_mb'] for r in mem]
        for who, key, style in (('worker', 'RssAnon', 'o-'), ('backend', 'RssAnon', 's-'),
                                ('worker', 'VmHWM', 'o:'), ('backend', 'VmHWM', 's:'),
                                ('backend', 'RssShmem', 'x--')):
            ax.plot(xs, [(r[who].get(key) or 0) / 1024 for r in mem], style,
                    label='%s %s%s' % (who if who == 'worker' else 'apply() backend', key, {
                        'RssAnon': ' (own memory)', 'RssShmem': ' (shared buffers, ring)',
                        'VmHWM': ' (peak resident, incl. shared)'}[key]))
        ax.set_xscale('log')
        ax.set_xticks(xs)
        ax.set_xticklabels(['%d MB' % x if x < 1024 else '%d GB' % (x // 1024) for x in xs])
        ax.set_xlabel('size of one MySQL transaction (binlog)')
        ax.set_ylabel('peak MB')
        ax.set_title('memory vs transaction size, ring %s (%s)' % (doc['settings']['ring_size'], doc['date']),
                     fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(png)
        plt.close(fig)
        pngs.append(png)

    b = doc['build']
    md = ['## Apply benchmark (issue #4), %s, %s' % (a.table_name, doc['date']), '',
          'Host: %s, %d CPUs, %s GB, %s. %s; %s; %s.' % (
              host['cpu_model'], host['cpus_online'], host['mem_gb'], host['kernel'], B.build_md(b),
              b['postgres'], b['mariadbd']), '',
          'Workload (bench/decoder/gen_workload.py): %s row changes (%s inserts, %s updates, %s deletes, 100 '
          'per transaction) in %s, a backlog of %.1f MB of MariaDB binlog; the same statements for PostgreSQL '
          '(bench/apply/pg_workload.py). Every PostgreSQL cluster runs with `%s`; the MariaDB replica with '
          'innodb_buffer_pool_size=1G, innodb_flush_log_at_trx_commit=2, single-threaded SQL thread. '
          'binlog_fdw: ring %s, apply(max_changes => %d).' % (
              B.fmt_int(a.expected_rows), B.fmt_int(a.w_rows), B.fmt_int(a.w_upd), B.fmt_int(a.w_del),
              'wide40 (40 columns: bigint, int, 7 double, float, 5 decimal, 4 datetime(6), date, time(6), '
              '3 json, 3 text, 2 blob, 4 varchar, char, 4 integers, enum, year)' if a.table_name == 'wide40' else
              'sbtest1 (bigint, int, varchar, char, decimal, datetime(6), json)',
              doc['workload']['bytes'] / 1e6, ' '.join(doc['settings']['pg_options']),
              doc['settings']['ring_size'], a.max_changes), '',
          'Best of %d runs, tools interleaved round by round (order rotated). Load average %s before, %s after. '
          '%s' % (a.runs, ' '.join(doc['loadavg_before']), ' '.join(doc['loadavg_after']), busy), '']
    if tools:
        md += [B.table(hdr, rows, md=True), '',
               'Timed: binlog_fdw from start() (worker connects and streams from the binlog\'s first byte) '
               'until every row is applied; logical replication from ALTER SUBSCRIPTION ENABLE until the '
               'subscriber\'s origin passed the last commit (the publisher\'s WAL was written beforehand); '
               'the MariaDB replica from START SLAVE SQL_THREAD (relay log fetched beforehand) until '
               'Exec_Master_Log_Pos reached the end. CPU: user+system seconds of each process during the '
               'run. `!` marks a failed run.', '']
    if lat:
        md += ['**Continuous mode latency**: single-row autocommit INSERTs into MariaDB at %d tx/s '
               '(achieved %.0f/s) for %d s (%d transactions), commit (the INSERT returned) -> visible to a '
               'PostgreSQL session polling every %.2f ms: p50 **%.1f ms**, p90 %.1f ms, p99 **%.1f ms**, '
               'max %.1f ms; %d transactions took 100 ms or more (the slowest, in ms at seconds into the test: %s). '
               'Best of %d runs by p99; every run\'s p50/p99/max in ms: %s. '
               'CPU during the test: %s. Load average %s.' % (
                   a.rate, lat['rate_achieved'] or 0, a.lat_seconds, lat['transactions'],
                   lat['poll_interval_ms'], lat['p50_ms'], lat['p90_ms'], lat['p99_ms'], lat['max_ms'],
                   lat['over_100ms'], ', '.join('%s at %s s' % tuple(x) for x in lat['stalls_ms_at_s'][:5]) or 'none',
                   len(lat['all_runs_p50_p99_max_ms']),
                   '; '.join('%s/%s/%s' % tuple(x) for x in lat['all_runs_p50_p99_max_ms']),
                   ', '.join('%s %.2f s' % (k, v) for k, v in lat['cpu_s'].items() if v is not None),
                   ' '.join(lat['loadavg_after'])), '']
        byw = doc.get('latency_by_workers') or {}
        if len(byw) > 1:
            md += ['| binlog_fdw.apply_workers | p50 ms | p90 ms | p99 ms | max ms | runs p50/p99/max |',
                   '|---:|---:|---:|---:|---:|---|']
            for w, x in byw.items():
                md.append('| %s | %.1f | %.1f | %.1f | %.1f | %s |' % (
                    w, x['p50_ms'] or 0, x['p90_ms'] or 0, x['p99_ms'] or 0, x['max_ms'] or 0,
                    '; '.join('%s/%s/%s' % tuple(y) for y in x['all_runs_p50_p99_max_ms'])))
            md.append('')
    if mrows:
        md += ['**Memory vs transaction size** (one INSERT ... SELECT of 1 KB rows per transaction, ring %s; '
               'peaks sampled every 50 ms from /proc; RssAnon is the process\'s own memory, VmHWM also '
               'counts the shared memory it touched (RssShmem: the ring and the shared buffers the inserted '
               'rows went through, up to shared_buffers = 1 GB)):' % doc['settings']['ring_size'],
               '', B.table(mhdr, mrows, md=True), '']
    if targets:
        md += ['| target | measured | result |', '|---|---:|---|']
        md += ['| %s | %s%s | %s |' % (t['name'], t['measured'], t['unit'], 'pass' if t['pass'] else '**FAIL**')
               for t in targets]
        md.append('')
    for p in pngs:
        md.append('![%s](%s)' % (os.path.basename(p)[:-4], os.path.basename(p)))
    md += ['', 'Reproduce: `bash bench/apply/run.sh --runs %d` (JSON: `%s`).' % (a.runs, os.path.basename(base) + '.json'), '']
    for t, prof in (doc.get('profiles') or {}).items():
        run = (doc.get('profile_runs') or {}).get(t)
        md += B.profile_md('Profile of %s%s' % (LABELS[t], ' (profiled run: %.1f s, CPU %s)' % (
            run['seconds'], ', '.join('%s %.2f s' % (k, v) for k, v in run['cpu_s'].items() if v is not None))
            if run else ''), prof)
        for who, p in prof.items():
            print('profile of %s, %s (self):' % (t, who))
            for x in p['self'][:10]:
                print('  %5.1f%%  %s  [%s]' % (x['percent'], x['symbol'], x['dso']))
    with open(base + '.md', 'w') as f:
        f.write('\n'.join(md) + '\n')
    print('wrote %s.json, %s.md%s' % (base, base, ''.join(', ' + p for p in pngs)))
    return 0 if targets and all(t['pass'] for t in targets) else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--writer', action='store_true')
    ap.add_argument('--runs', type=int, default=3)
    ap.add_argument('--tools', default=','.join(ALL_TOOLS))
    ap.add_argument('--phases', default='throughput,latency,memory')
    ap.add_argument('--pg-port', type=int)
    ap.add_argument('--pub-port', type=int)
    ap.add_argument('--sub-port', type=int)
    ap.add_argument('--src-port', type=int)
    ap.add_argument('--lat-port', type=int)
    ap.add_argument('--end-file')
    ap.add_argument('--end-pos', type=int)
    ap.add_argument('--last-commit', help='FILE:POS, the end of the backlog\'s last transaction')
    ap.add_argument('--w-rows', type=int, default=1000000)
    ap.add_argument('--w-upd', type=int, default=500000)
    ap.add_argument('--w-del', type=int, default=250000)
    ap.add_argument('--max-changes', type=int, default=1000000)
    ap.add_argument('--rate', type=float, default=1000)
    ap.add_argument('--lat-seconds', type=float, default=30)
    ap.add_argument('--lat-workers', default='1',
                    help='binlog_fdw.apply_workers values of the latency phase, comma-separated')
    ap.add_argument('--mem-sizes', default='1,16,256,1024')
    ap.add_argument('--timeout', type=float, default=900)
    ap.add_argument('--cache')
    ap.add_argument('--pgw')
    ap.add_argument('--results')
    ap.add_argument('--pg-options', default='')
    ap.add_argument('--name', default='apply')
    ap.add_argument('--table-name', default='sbtest1', help="the workload's table (gen_workload.py --table)")
    ap.add_argument('--profile', choices=['auto', 'yes', 'no'], default='auto')
    a = ap.parse_args()
    if a.writer:
        writer(a)
        return 0
    a.expected_rows = a.w_rows + a.w_upd + a.w_del
    phases = [p for p in a.phases.split(',') if p]
    tools = [t for t in a.tools.split(',') if t] if 'throughput' in phases else []
    meta = json.load(open(os.path.join(a.cache, 'meta.json')))
    doc = {'benchmark': a.name, 'date': time.strftime('%Y-%m-%d'), 'host': B.host_facts(),
           'build': B.build_facts(),
           'workload': {'generator_version': meta['generator_version'], **meta['workload'],
                        'bytes': sum(f['bytes'] for f in meta['files']), 'row_changes': a.expected_rows},
           'settings': {'ring_size': B.q1(B.pg(a.pg_port, 'bench'), 'SHOW binlog_fdw.ring_size'),
                        'max_changes': a.max_changes, 'runs': a.runs, 'pg_options': a.pg_options.split(),
                        'statistic': 'best (min) wall seconds of the runs, tools interleaved'},
           'tools': tools, 'loadavg_before': B.loadavg()}
    B.log('load average %s' % ' '.join(doc['loadavg_before']))
    if tools:
        B.log('throughput: %d rounds of %s' % (a.runs, ', '.join(tools)))
        bench = Bench(a)
        doc['results'] = B.interleave(tools, a.runs, bench.run)
        lr = B.best(doc['results'].get('pg-logical', []))
        missed = False
        for t in ('fdw-apply', 'fdw-continuous'):
            b = B.best(doc['results'].get(t, []))
            if t in tools and (not b or (lr and b['rows_per_s'] < lr['rows_per_s'])):
                missed = True
        if a.profile == 'yes' or (a.profile == 'auto' and missed):
            if B.perf_usable():
                import tempfile
                tmpd = tempfile.mkdtemp(prefix='blf-perf-')
                for t in ('fdw-apply', 'fdw-continuous'):
                    if t in tools:
                        B.log('profiling one more run of %s with perf (cpu-clock)' % t)
                        r = (bench.fdw_apply if t == 'fdw-apply' else bench.fdw_continuous)(
                            profile=os.path.join(tmpd, t))
                        bench.profiles.setdefault(t, {})
                        doc.setdefault('profile_runs', {})[t] = {'seconds': r['seconds'], 'cpu_s': r['cpu_s']}
            else:
                B.log('perf is not usable here: no profile')
        doc['profiles'] = bench.profiles
    else:
        doc['results'] = {}
    if 'latency' in phases:
        # every --lat-workers value in turn, round by round (a burst of load
        # on the shared machine hits them alike)
        wlist = [int(x) for x in str(a.lat_workers).split(',') if x]
        by = {w: [] for w in wlist}
        for i in range(a.runs):
            for w in wlist:
                B.log('latency run %d of %d: continuous mode, apply_workers %d, %d tx/s for %d s'
                      % (i + 1, a.runs, w, a.rate, a.lat_seconds))
                by[w].append(latency(a, w))
                r = by[w][-1]
                B.log('  p50 %.1f ms, p99 %.1f ms, max %.1f ms' % (r['p50_ms'] or -1, r['p99_ms'] or -1,
                                                                r['max_ms'] or -1))
        conn = B.pg(a.pg_port, 'bench', app='bench-latency')
        B.q(conn, 'ALTER SYSTEM RESET binlog_fdw.apply_workers')
        B.q(conn, 'SELECT pg_reload_conf()')
        conn.close()
        doc['latency_by_workers'] = {}
        for w in wlist:
            runs = by[w]
            # best of N like the throughput figures (a stall of the shared
            # machine in one run shows in the others' figures below)
            best = min(runs, key=lambda r: r['p99_ms'] if r['p99_ms'] is not None else 1e9)
            best['all_runs_p50_p99_max_ms'] = [
                [round(r['p50_ms'] or 0, 1), round(r['p99_ms'] or 0, 1), round(r['max_ms'] or 0, 1)]
                for r in runs]
            doc['latency_by_workers'][str(w)] = best
        doc['latency'] = doc['latency_by_workers'][str(wlist[0])]
        for w in wlist[1:]:
            x = doc['latency_by_workers'][str(w)]
            B.log('  apply_workers %d: p50 %.1f ms, p99 %.1f ms (all runs p50/p99/max: %s)' % (
                w, x['p50_ms'] or -1, x['p99_ms'] or -1,
                '; '.join('%s/%s/%s' % tuple(y) for y in x['all_runs_p50_p99_max_ms'])))
        B.log('  p50 %.1f ms, p99 %.1f ms; %d of %d transactions >= 100 ms; worst (ms, at s): %s' % (
            doc['latency']['p50_ms'] or -1, doc['latency']['p99_ms'] or -1, doc['latency']['over_100ms'],
            doc['latency']['transactions'], doc['latency']['stalls_ms_at_s']))
    if 'memory' in phases:
        B.log('memory vs transaction size: %s MB' % a.mem_sizes)
        doc['memory'] = memory(a)
    doc['loadavg_after'] = B.loadavg()
    doc['busy'] = B.busy_note(doc['loadavg_before'], doc['loadavg_after'], own=2.0)
    return report(a, doc)


if __name__ == '__main__':
    sys.exit(main())
