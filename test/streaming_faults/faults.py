#!/usr/bin/python3
"""
test/streaming_faults/faults.py -- binlog_fdw's streaming under faults.

Each case writes a seeded workload on a throwaway MariaDB (blfaults.Writer),
consumes the source with get -> record -> ack (blfaults.Consumer) while a
fault happens, and compares the full sequence of acknowledged changes (with
BEGIN/COMMIT markers, GTIDs, primary keys and row images) with the source's
own sequence: its binlog decoded by ./binlogcat from the position the source
started at (blfaults.ground_truth).  No loss, no duplicate, same order.  The
ground truth must also agree with what the writer did (transactions, row
changes), and the comparison must notice a dropped, a duplicated and a
reordered change of that ground truth, so that no case passes vacuously.

Cases (one "ok - streaming-faults/NAME" line each, TLS one per mode):
  backpressure          1 MB ring, ~200 MB of changes, transactions larger
                        than the ring, a slow consumer at first: 'ring full'
                        is seen, ring bytes used <= total, worker RSS flat
  worker-sigkill        kill -9 of the worker twice while changes flow
  pg-immediate-stop     pg_ctl -m immediate between get and ack, and right
                        after an ack
  mariadb-restart       clean restart, then SIGKILL and start, mid-stream
  repl-connection-killed  KILL of the worker's Binlog Dump thread, twice
  purged-binlog         the acked position purged while stopped: error with
                        position and hint, nothing after the gap delivered;
                        reset + start at 'current' works
  tls/*                 verify-full, verify-ca, wrong CA, host name not in
                        the certificate, require without CA, disable
  precondition/*, checksum-none
                        each precondition a clear error naming the fix, a
                        row image that is not FULL a notice, binlog_checksum
                        NONE streaming correctly (preconditions.py)

usage: faults.py [CASE...]   (default all; a prefix such as "tls" works)

Environment (set by test/suites/70-streaming-faults.sh):
  BLF_FAULTS_MARIADB_PORT (3415), BLF_FAULTS_TLS_PORT (3416),
  BLF_FAULTS_PG_PORT (5445): the instances "faults", "faults-tls" (started
  here) and the PostgreSQL cluster "faults" (binlog_fdw.ring_size=1MB)
  BLF_FAULTS_SEED       base seed (default 7070)
  BLF_FAULTS_MB         megabytes of changes of the backpressure case (200)
  BLF_SUITE_TMP         scratch directory (certificates)
"""

import os
import threading
import random
import re
import shutil
import socket
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from blfaults import (CaseFailure, MariaDB, Postgres, StatusMonitor, Consumer,  # noqa: E402
                      BackgroundWriter, Writer, compare, create_source, ensure_up, ground_truth, log,
                      require, self_check_compare, sh, short, start_source, stop_source,
                      run_cases, stop_all, summarize, wait_for, RUN)
import psycopg2  # noqa: E402

MDB_PORT = int(os.environ.get('BLF_FAULTS_MARIADB_PORT', '3415'))
TLS_PORT = int(os.environ.get('BLF_FAULTS_TLS_PORT', '3416'))
PG_PORT = int(os.environ.get('BLF_FAULTS_PG_PORT', '5445'))
SEED = int(os.environ.get('BLF_FAULTS_SEED', '7070'))
BP_MB = int(os.environ.get('BLF_FAULTS_MB', '200'))
TMP = os.environ.get('BLF_SUITE_TMP') or os.path.join(RUN, 'tmp', 'streaming-faults')

MDB = MariaDB('faults', MDB_PORT)
PG = Postgres('faults', PG_PORT)

CASES = []


def case(name):
    def register(fn):
        CASES.append((name, fn))
        return fn
    return register


def drop_all_sources():
    try:
        for (name,) in PG.query("SELECT srvname FROM pg_foreign_server s JOIN pg_foreign_data_wrapper w "
                                "ON w.oid = s.srvfdw WHERE w.fdwname = 'binlog_fdw'"):
            stop_source(PG, name)
    except psycopg2.Error as e:
        log('cleanup: %s' % e)


# ---------------------------------------------------------------------------
# the common course of a case

class Run:
    """
    One source over one schema: writer, consumer, status monitor; then the
    ground truth and the comparison.
    """

    def __init__(self, name, seed, server_id, consumer_kw=None, mdb=MDB):
        self.name = name
        self.schema = 'f_' + name.replace('-', '_')
        self.mdb = mdb
        self.writer = Writer(mdb, self.schema, seed)
        self.writer.create_schema()
        self.server = name.replace('-', '_')
        create_source(PG, self.server, mdb.port, server_id,
                      include='^%s\\.' % self.schema)
        self.start_file, self.start_pos = start_source(PG, self.server)
        log('%s: source started at %s:%d' % (name, self.start_file, self.start_pos))
        self.monitor = StatusMonitor(PG, self.server)
        self.monitor.start()
        self.consumer = Consumer(PG, self.server, **(consumer_kw or {}))
        self.consumer.start()
        self.want = None
        self.spans = []

    def truth(self):
        t0 = time.monotonic()
        self.want = ground_truth(self.mdb.port, self.schema, self.start_file, self.start_pos,
                                 spans=self.spans)
        rows = sum(1 for c in self.want if c[0] in ('insert', 'update', 'delete'))
        begins = sum(1 for c in self.want if c[0] == 'begin')
        log('%s: ground truth %d changes (%s) in %.1fs; writer: %d transactions, %d row changes'
            % (self.name, len(self.want), summarize(self.want), time.monotonic() - t0,
               self.writer.txns, self.writer.changes))
        require(rows == self.writer.changes and begins == self.writer.txns,
                'the binlog has %d transactions with %d row changes, the writer made %d with %d'
                % (begins, rows, self.writer.txns, self.writer.changes))
        return self.want

    def finish(self, timeout=120):
        if self.want is None:
            self.truth()
        t0 = time.monotonic()
        how = self.consumer.finish(len(self.want), timeout)
        self.monitor.stop()
        stop_source(PG, self.server)
        got = self.consumer.delivered
        log('%s: consumer %s after %.1fs more: %d changes in %d batches (%d inside a transaction), '
            '%d reconnects, %d errors' % (self.name, how, time.monotonic() - t0, len(got),
                                          self.consumer.batches, self.consumer.partial_batches,
                                          self.consumer.reconnects, len(self.consumer.errors)))
        diff = compare(got, self.want)
        if diff:
            raise CaseFailure(diff + ('' if how == 'complete' else ' (consumer: %s)' % how))
        bad = self_check_compare(self.want, random.Random(len(self.want)))
        require(bad is None, bad)


def worker_pid(server):
    s = PG.status(server)
    pid = s and s['worker_pid']
    require(pid, 'source %s has no worker (status: %s)' % (server, short(s)))
    try:
        with open('/proc/%d/cmdline' % pid, 'rb') as f:
            cmd = f.read().replace(b'\0', b' ').decode(errors='replace')
    except OSError:
        cmd = ''
    require('binlog_fdw source' in cmd, 'pid %d is not a binlog_fdw worker (%r)' % (pid, cmd))
    return pid


# ---------------------------------------------------------------------------
# cases

@case('backpressure')
def backpressure(seed):
    nbytes = BP_MB * 1000 * 1000
    run = Run('backpressure', seed, 9301,
              consumer_kw=dict(max_changes=100, sleep=0.05, timeout_ms=300, deadline=420))
    w = run.writer
    # a few transactions larger than the 1 MB ring (all wide rows)
    big = [(0.05, 2500), (0.3, 6000), (0.55, 3000), (0.8, 4500)]
    bw = BackgroundWriter(w, nbytes=nbytes, big=big)
    t0 = time.monotonic()
    bw.start()
    # slow consumer until the ring has been full for a while
    wait_for(lambda: run.monitor.states['ring full'] >= 20 or not bw.is_alive(), 60,
             'the ring to fill')
    time.sleep(3)
    log('backpressure: slow phase over after %.1fs: %d changes consumed, states %s'
        % (time.monotonic() - t0, run.consumer.count(), dict(run.monitor.states)))
    run.consumer.max_changes = 5000
    run.consumer.sleep = 0
    bw.join()
    if bw.error:
        raise bw.error
    log('backpressure: writer done in %.1fs: %d transactions, %d row changes, ~%.0f MB of row images'
        % (bw.t_end - bw.t_start, w.txns, w.changes, w.bytes / 1e6))
    run.truth()
    run.finish(timeout=300)
    elapsed = time.monotonic() - t0
    mon = run.monitor
    ring = mon.total or 0
    larger = [s for s in run.spans if s[1] > ring]
    log('backpressure: %.1fs in all, %.0f changes/s; states seen %s; ring bytes used max %d of %d; '
        '%d transactions larger than the ring (binlog bytes: %s)'
        % (elapsed, len(run.want) / elapsed, dict(mon.states), mon.max_used, ring, len(larger),
           ', '.join(str(s[1]) for s in larger)))
    require(mon.states['ring full'] > 0, "status never showed state 'ring full'")
    require(not mon.violations, 'ring_bytes_used exceeded ring_bytes_total: %s' % mon.violations[:3])
    require(mon.max_used <= ring and ring > 0, 'ring bytes used %d of %d' % (mon.max_used, ring))
    require(len(larger) >= 3, 'only %d transactions were larger than the ring' % len(larger))
    require(run.consumer.partial_batches > 0,
            'no batch ended inside a transaction although some transactions exceed the ring')
    require(len(mon.pids) == 1, 'the worker restarted during the run (pids %s)' % mon.pids)
    # memory: the worker's peak RSS after a fifth of the run vs at the end
    samples = [s for s in mon.samples if s[3]]
    require(samples, 'no worker_peak_rss_kb samples')
    t_first, t_last = samples[0][0], samples[-1][0]
    early = [s for s in samples if s[0] <= t_first + (t_last - t_first) * 0.2]
    peak_early = max(s[3] for s in early)
    peak_end = samples[-1][3]
    anon = [s[4].get('RssAnon', 0) for s in samples if s[4]]
    log('backpressure: worker peak RSS (status.worker_peak_rss_kb) %d kB after 20%% of the run, '
        '%d kB at the end; RssAnon min/max %d/%d kB'
        % (peak_early, peak_end, min(anon or [0]), max(anon or [0])))
    print('# RESULT backpressure: %d changes (%.0f MB of row images) in %.0fs; worker peak RSS '
          '%d kB -> %d kB' % (len(run.want), w.bytes / 1e6, elapsed, peak_early, peak_end),
          flush=True)
    require(peak_end - peak_early <= 16 * 1024,
            "the worker's peak RSS grew from %d kB to %d kB" % (peak_early, peak_end))


@case('worker-sigkill')
def worker_sigkill(seed):
    run = Run('worker-sigkill', seed, 9302,
              consumer_kw=dict(max_changes=400, sleep=0.01, timeout_ms=300))
    w = run.writer
    killed = threading.Event()

    def gate(done):
        # the writer waits at 1000 transactions until both kills are done,
        # so that each kill happens mid-stream even when it runs ahead
        if done >= 1000 and not killed.is_set():
            killed.wait(180)

    bw = BackgroundWriter(w, ntxns=1400, big=[(0.4, 1500)], gate=gate)
    bw.start()
    kills = []
    for at in (350, 900):
        wait_for(lambda: w.txns >= at and run.consumer.count() > 0, 120,
                 'the writer to reach %d transactions' % at)
        pid = worker_pid(run.server)
        n = run.consumer.count()
        os.kill(pid, 9)
        kills.append((pid, n, w.txns))
        log('worker-sigkill: killed worker %d with %d changes consumed, writer at %d transactions'
            % (pid, n, w.txns))
        wait_for(lambda: (PG.status(run.server) or {}).get('worker_pid') not in (None, pid) and
                 (PG.status(run.server) or {}).get('state') == 'streaming', 60,
                 'a new worker to stream')
    killed.set()
    bw.join()
    if bw.error:
        raise bw.error
    run.finish()
    require(run.consumer.reconnects >= 2, 'the consumer reconnected %d times, expected 2 crashes'
            % run.consumer.reconnects)
    require(all(0 < k[1] < len(run.want) for k in kills), 'a kill was not mid-stream: %s' % kills)


@case('pg-immediate-stop')
def pg_immediate_stop(seed):
    run = Run('pg-immediate-stop', seed, 9303,
              consumer_kw=dict(max_changes=300, sleep=0.01, timeout_ms=300))
    w = run.writer
    fired = {}

    def after_get(consumer, batch_id, n):
        if 'get' not in fired and consumer.count() >= 2000:
            fired['get'] = (batch_id, consumer.count(), n)
            log('pg-immediate-stop: immediate stop holding batch %d (%d changes) un-acked, '
                '%d changes acked' % (batch_id, n, consumer.count()))
            PG.stop('immediate')
            PG.start()

    def after_ack(consumer, batch_id):
        if 'get' in fired and 'ack' not in fired and consumer.count() >= fired['get'][1] + 2000:
            fired['ack'] = (batch_id, consumer.count())
            log('pg-immediate-stop: immediate stop right after acking batch %d (%d changes acked)'
                % (batch_id, consumer.count()))
            PG.stop('immediate')
            PG.start()

    run.consumer.hook_after_get = after_get
    run.consumer.hook_after_ack = after_ack
    bw = BackgroundWriter(w, ntxns=1400)
    bw.start()
    bw.join()
    if bw.error:
        raise bw.error
    run.truth()
    wait_for(lambda: 'ack' in fired or not run.consumer.is_alive(), 120, 'both stops')
    run.finish()
    require('get' in fired and 'ack' in fired, 'not every stop happened: %s' % fired)
    require(run.consumer.reconnects >= 2, 'the consumer reconnected %d times'
            % run.consumer.reconnects)


@case('pg-fast-stop-ring-full')
def pg_fast_stop_ring_full(seed):
    """A fast shutdown while the worker waits for ring space completes
    promptly (the worker gives up its wait), and nothing is lost; the waits
    are counted in source_stats.ring_wait_seconds."""
    run = Run('pg-fast-stop-ring-full', seed, 9307,
              consumer_kw=dict(max_changes=50, sleep=0.5, timeout_ms=300))
    w = run.writer
    bw = BackgroundWriter(w, nbytes=12 * 1000 * 1000)
    bw.start()
    wait_for(lambda: run.monitor.states['ring full'] >= 3, 120, 'the ring to fill')
    # the worker's waits for ring space are counted (binlog_fdw.source_stats)
    waited = []
    wait_for(lambda: waited.append(PG.query(
        'SELECT ring_wait_seconds FROM binlog_fdw.source_stats WHERE server_name = %s',
        (run.server,))[0][0]) or waited[-1] > 0, 60, 'ring_wait_seconds to count the waits')
    log('pg-fast-stop-ring-full: ring_wait_seconds %.3f' % waited[-1])
    t0 = time.monotonic()
    PG.stop('fast')
    took = time.monotonic() - t0
    log('pg-fast-stop-ring-full: fast stop with the ring full took %.1fs' % took)
    require(took < 20, 'a fast stop with the ring full took %.1fs' % took)
    PG.start()
    run.consumer.max_changes = 5000
    run.consumer.sleep = 0
    bw.join()
    if bw.error:
        raise bw.error
    run.truth()
    run.finish()
    require(run.consumer.reconnects >= 1, 'the consumer reconnected %d times'
            % run.consumer.reconnects)


@case('crash-loop-guard')
def crash_loop_guard(seed):
    """Clean restarts never stop a source; a worker that crashes again and
    again (each crash restarts the whole cluster) is left stopped once it was
    launched 5 times within 2 minutes, with a warning, until start() is
    called."""
    name = 'guard'
    create_source(PG, name, MDB_PORT, 9308)
    start_source(PG, name)
    for i in range(6):
        PG.stop('fast')
        PG.start()
        wait_for(lambda: (PG.status(name) or {}).get('state') == 'streaming', 60,
                 'the source to stream after clean restart %d' % (i + 1))
    log('crash-loop-guard: streaming after 6 clean restarts')
    crashes = 0
    while crashes < 8 and not guard_gave_up(name):
        pid = worker_pid(name)
        os.kill(pid, 9)
        crashes += 1
        # the postmaster restarts the cluster; the launcher relaunches (or not)
        time.sleep(1)
        wait_for(lambda: PG.ping(), 60, 'the cluster to come back after crash %d' % crashes)
        wait_for(lambda: (PG.status(name) or {}).get('state') == 'streaming' or
                 guard_gave_up(name), 30, 'a relaunch or the guard after crash %d' % crashes)
    log('crash-loop-guard: left stopped after %d crashes' % crashes)
    # five launches count: the one after the last clean restart and four
    # after crashes; the fifth crash finds the record full
    require(crashes == 5, 'the source stopped being relaunched after %d crashes (expected 5)'
            % crashes)
    require(PG.log_contains('was started 5 times in 120 seconds and is left stopped'),
            'no warning in the server log')
    # start() clears the record
    start_source(PG, name)
    stop_source(PG, name)


def guard_gave_up(name):
    # stopped with no worker is also what the status shows right after a
    # crash restart, before the launcher relaunches: the guard's WARNING
    # tells the two apart
    s = PG.status(name)
    return (s is None or (s.get('worker_pid') is None and s.get('state') == 'stopped')) and \
        PG.log_contains('"%s" was started 5 times in 120 seconds and is left stopped' % name)


@case('mariadb-restart')
def mariadb_restart(seed):
    run = Run('mariadb-restart', seed, 9304,
              consumer_kw=dict(max_changes=200, sleep=0.03, timeout_ms=300))
    w = run.writer
    behind = []
    for kill in (False, True):
        w.run(ntxns=450)
        w.close()
        st = PG.status(run.server)
        mfile, mpos = MDB.master_status()
        behind.append((st['state'], st['read_file'], st['read_pos'], mfile, mpos))
        log('mariadb-restart: %s with the worker %s at %s:%s, the binlog at %s:%d, %d changes consumed'
            % ('SIGKILL' if kill else 'clean restart', st['state'], st['read_file'],
               st['read_pos'], mfile, mpos, run.consumer.count()))
        require((st['read_file'], st['read_pos']) != (mfile, mpos),
                'the worker had read everything already: not mid-stream')
        MDB.stop(kill=kill)
        time.sleep(1)
        MDB.start()
    w.run(ntxns=250)
    w.close()
    run.truth()
    run.finish()
    require(run.monitor.states['reconnecting'] > 0 or len(run.monitor.errors) > 0,
            'the worker never noticed the restarts (states %s)' % dict(run.monitor.states))


@case('repl-connection-killed')
def repl_connection_killed(seed):
    run = Run('repl-connection-killed', seed, 9305,
              consumer_kw=dict(max_changes=300, sleep=0.01, timeout_ms=300))
    w = run.writer
    bw = BackgroundWriter(w, ntxns=1400)
    bw.start()
    killed = []
    for at in (350, 900):
        wait_for(lambda: w.txns >= at, 120, 'the writer to reach %d transactions' % at)
        ids = wait_for(MDB.binlog_dump_threads, 30, "the worker's Binlog Dump thread")
        for i in ids:
            MDB.query('KILL %d' % i)
        killed.append((ids, run.consumer.count()))
        log('repl-connection-killed: killed Binlog Dump thread(s) %s with %d changes consumed'
            % (ids, run.consumer.count()))
        wait_for(lambda: [i for i in MDB.binlog_dump_threads() if i not in ids], 30,
                 'the worker to reconnect')
    bw.join()
    if bw.error:
        raise bw.error
    run.finish()
    require(len(run.monitor.errors) > 0 or run.monitor.states['reconnecting'] > 0,
            'status never showed the lost connection')


@case('purged-binlog')
def purged_binlog(seed):
    run = Run('purged-binlog', seed, 9306,
              consumer_kw=dict(max_changes=1000, timeout_ms=300))
    w = run.writer
    w.run(ntxns=300)
    run.finish()
    (afile, apos), = PG.query('SELECT file, pos FROM binlog_fdw.source_state WHERE server_name = %s',
                              (run.server,))
    log('purged-binlog: phase 1 ok, acked position %s:%d' % (afile, apos))
    # stopped: changes after the acked position, then that file purged
    w.run(ntxns=100)
    MDB.query('FLUSH BINARY LOGS')
    w.run(ntxns=100)
    newest = MDB.master_status()[0]

    def purged():
        MDB.query("PURGE BINARY LOGS TO '%s'" % newest)
        return afile not in [r[0] for r in MDB.query('SHOW BINARY LOGS')]
    wait_for(purged, 30, 'MariaDB to purge %s' % afile, interval=0.5)
    log('purged-binlog: binlogs before %s purged' % newest)

    PG.execute('SELECT binlog_fdw.start(%s)', (run.server,))
    st = wait_for(lambda: (lambda s: s if s and s['state'] in ('error', 'reconnecting') and
                           s['last_error'] else None)(PG.status(run.server)), 30,
                  'the source to report the purged position')
    err = st['last_error']
    log('purged-binlog: state %s, last_error: %s' % (st['state'], err))
    gap = Consumer(PG, run.server, max_changes=1000, timeout_ms=500, key='purged-binlog-gap')
    gap.start()
    time.sleep(6)       # several reconnect attempts (1 s, 2 s, 4 s)
    gap.stop()
    gap.join(30)
    st = PG.status(run.server)
    log('purged-binlog: after 6 s: state %s, read %s:%s, %d changes delivered'
        % (st['state'], st['read_file'], st['read_pos'], gap.count()))
    require(gap.count() == 0, '%d changes after the gap were delivered: %s'
            % (gap.count(), short(gap.delivered[:3])))
    require(st['state'] in ('error', 'reconnecting'), 'state %r after the gap' % st['state'])
    require(afile in err and str(apos) in err,
            'last_error does not name the missing position %s:%d: %s' % (afile, apos, err))
    require(re.search(r'(?i)hint', err) and re.search(r'(?i)purge|reset|snapshot', err),
            'last_error has no hint: %s' % err)
    require(st['read_file'] in (None, afile) or st['read_file'] < newest,
            'the worker moved on to %s' % st['read_file'])
    # reset + start from 'current'
    stop_source(PG, run.server)
    PG.execute('SELECT binlog_fdw.reset(%s)', (run.server,))
    run.start_file, run.start_pos = start_source(PG, run.server)
    log('purged-binlog: after reset, started at %s:%d' % (run.start_file, run.start_pos))
    require(run.start_file >= newest, 'reset + start began at %s, before %s'
            % (run.start_file, newest))
    run.monitor = StatusMonitor(PG, run.server)
    run.monitor.start()
    run.consumer = Consumer(PG, run.server, max_changes=1000, timeout_ms=300, key='purged-binlog-2')
    run.consumer.start()
    t0, c0 = w.txns, w.changes
    w.run(ntxns=300)
    run.want = None
    w.txns -= t0        # the ground truth covers the writes after the restart
    w.changes -= c0
    run.finish()


# ---------------------------------------------------------------------------
# TLS


# preconditions and binlog_checksum NONE (preconditions.py)
import preconditions  # noqa: E402

preconditions.register(case, PG, Run)

def make_certs(d):
    os.makedirs(d, exist_ok=True)

    def ossl(*args):
        sh(['openssl'] + list(args), timeout=60)
    ossl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', d + '/ca.key',
         '-out', d + '/ca.crt', '-days', '3', '-subj', '/CN=binlog_fdw test CA')
    ossl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', d + '/wrong-ca.key',
         '-out', d + '/wrong-ca.crt', '-days', '3', '-subj', '/CN=binlog_fdw wrong CA')
    ossl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', d + '/server.key',
         '-out', d + '/server.csr', '-subj', '/CN=localhost')
    with open(d + '/server.ext', 'w') as f:
        f.write('subjectAltName = DNS:localhost, IP:127.0.0.1\n'
                'basicConstraints = CA:FALSE\n'
                'keyUsage = digitalSignature, keyEncipherment\n'
                'extendedKeyUsage = serverAuth\n')
    ossl('x509', '-req', '-in', d + '/server.csr', '-CA', d + '/ca.crt', '-CAkey', d + '/ca.key',
         '-CAcreateserial', '-out', d + '/server.crt', '-days', '3', '-extfile', d + '/server.ext')
    for f in os.listdir(d):
        os.chmod(os.path.join(d, f), 0o644)     # mysql reads the key, postgres the CAs
    os.chmod(d, 0o755)


HOSTS_MARK = '# blf-streaming-faults'


def alias_host():
    """A name that resolves to 127.0.0.1 but is not in the certificate."""
    name = socket.gethostname()
    try:
        addrs = {ai[4][0] for ai in socket.getaddrinfo(name, None, socket.AF_INET)}
    except OSError:
        addrs = set()
    if name and name != 'localhost' and addrs == {'127.0.0.1'}:
        return name, False
    name = 'blf-tls-alias'
    with open('/etc/hosts', 'a') as f:
        f.write('127.0.0.1 %s %s\n' % (name, HOSTS_MARK))
    return name, True


def remove_alias():
    try:
        with open('/etc/hosts') as f:
            lines = f.readlines()
        keep = [ln for ln in lines if HOSTS_MARK not in ln]
        if keep != lines:
            with open('/etc/hosts', 'w') as f:
                f.writelines(keep)
    except OSError as e:
        log('could not clean /etc/hosts: %s' % e)


def dump_ciphers(mdb):
    """Ssl_cipher of each Binlog Dump connection (performance_schema)."""
    return mdb.query(
        "SELECT t.processlist_id, s.variable_value FROM performance_schema.threads t "
        "JOIN performance_schema.status_by_thread s ON s.thread_id = t.thread_id "
        "WHERE t.processlist_command = 'Binlog Dump' AND s.variable_name = 'Ssl_cipher'")


TLS_MODES = [
    # case, ssl_mode, CA file, host alias?, expect streaming, TLS expected /
    # the error expected; the last case uses the MariaDB without TLS
    ('verify-full', 'verify-full', 'ca.crt', False, True, True),
    ('verify-ca', 'verify-ca', 'ca.crt', False, True, True),
    ('wrong-ca-verify-full', 'verify-full', 'wrong-ca.crt', False, False, r'(?i)certificate'),
    ('wrong-ca-verify-ca', 'verify-ca', 'wrong-ca.crt', False, False, r'(?i)certificate'),
    ('host-not-in-cert-verify-full', 'verify-full', 'ca.crt', True, False, r'(?i)certificate'),
    ('host-not-in-cert-verify-ca', 'verify-ca', 'ca.crt', True, True, True),
    ('require-without-ca', 'require', None, False, True, True),
    ('disable', 'disable', None, False, True, False),
    ('require-server-without-tls', 'require', None, False, False, r'(?i)ssl|tls'),
]


def tls_cases(seed, wanted):
    tmdb = MariaDB('faults-tls', TLS_PORT)
    d = os.path.join(TMP, 'tls')
    results = []
    alias = None
    alias_error = None
    added = False
    t0 = time.monotonic()
    try:
        make_certs(d)
        tmdb.start(extra=['--ssl-ca=%s/ca.crt' % d, '--ssl-cert=%s/server.crt' % d,
                          '--ssl-key=%s/server.key' % d, '--performance-schema=ON'])
        have = dict(tmdb.query("SHOW VARIABLES LIKE 'have_ssl'"))
        require(have.get('have_ssl') == 'YES', 'MariaDB reports have_ssl=%s' % have.get('have_ssl'))
        try:
            alias, added = alias_host()
        except OSError as e:
            alias_error = 'no host name for 127.0.0.1 outside the certificate: %s' % e
        log('tls: MariaDB "faults-tls" on %d has have_ssl=YES; host alias %s%s'
            % (TLS_PORT, alias, ' (added to /etc/hosts)' if added else ''))
    except Exception as e:
        reason = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
        log(traceback.format_exc())
        for c in TLS_MODES:
            if wanted('tls/' + c[0]):
                results.append(('tls/' + c[0], 'setup failed: %s' % reason))
        return results
    try:
        for i, (cname, mode, ca, use_alias, streams, expect) in enumerate(TLS_MODES):
            full = 'tls/' + cname
            if not wanted(full):
                continue
            c0 = time.monotonic()
            if use_alias and alias is None:
                results.append((full, alias_error))
                continue
            try:
                tls_one(MDB if cname == 'require-server-without-tls' else tmdb, d, seed + i, i,
                        cname, mode, ca, alias if use_alias else '127.0.0.1', streams,
                        expect is True, None if streams else expect)
                results.append((full, None))
            except CaseFailure as e:
                results.append((full, str(e)))
            except Exception as e:
                log(traceback.format_exc())
                results.append((full, '%s: %s' % (type(e).__name__, e)))
            finally:
                stop_all()
                drop_all_sources()
            log('%s: %.1fs' % (full, time.monotonic() - c0))
    finally:
        if added:
            remove_alias()
        # its log is checked with the suite's (test/run.sh: the copies
        # mariadb-NAME.log in the scratch directory)
        try:
            shutil.copy(os.path.join(RUN, 'mariadb-faults-tls', 'mariadbd.log'),
                        os.path.join(TMP, 'mariadb-faults-tls.log'))
        except OSError as e:
            log('tls: no server log to keep: %s' % e)
        try:
            tmdb.destroy()
        except Exception as e:
            log('tls: destroy: %s' % e)
    log('tls: %.1fs in all' % (time.monotonic() - t0))
    return results


def tls_one(tmdb, d, seed, i, cname, mode, ca, host, streams, encrypted, fail_re):
    server = 'tls_' + cname.replace('-', '_')
    schema = 'f_' + server
    opts = {'ssl_mode': mode}
    if ca:
        opts['ssl_ca'] = os.path.join(d, ca)
    w = Writer(tmdb, schema, seed)
    w.create_schema()
    create_source(PG, server, tmdb.port, 9400 + i, include='^%s\\.' % schema, host=host, **opts)
    if not streams:
        PG.execute('SELECT binlog_fdw.start(%s)', (server,))
        st = wait_for(lambda: (lambda s: s if s and s['last_error'] else None)(PG.status(server)),
                      30, 'source %s to fail' % server)
        time.sleep(1.5)
        st = PG.status(server)
        err = st['last_error'] or ''
        log('%s: host %s, ssl_mode %s, CA %s: state %s, last_error: %s'
            % (cname, host, mode, ca, st['state'], err))
        require(st['state'] in ('error', 'reconnecting'), 'state %r, expected a failure' % st['state'])
        require(st['connected_since'] is None, 'the source connected')
        # what the library says after "could not connect to HOST:PORT ..."
        detail = err.split(': ', 2)[-1]
        require(re.search(fail_re, detail), 'last_error is not a clear TLS error (no /%s/): %s'
                % (fail_re, err))
        require(host in err and mode in err, 'last_error does not name the host and ssl_mode: %s' % err)
        return
    start_file, start_pos = start_source(PG, server)
    # the dump thread of a source stopped just before may linger a moment
    ciphers = wait_for(lambda: (lambda c: c if len(c) == 1 else None)(dump_ciphers(tmdb)), 15,
                       "exactly one Binlog Dump connection, the worker's")
    cipher = ciphers[0][1] or ''
    log('%s: host %s, ssl_mode %s, CA %s: streaming, Ssl_cipher of the dump connection %r'
        % (cname, host, mode, ca, cipher))
    if encrypted:
        require(cipher != '', 'the replication connection is not encrypted')
    else:
        require(cipher == '', 'the replication connection is encrypted (%s) with ssl_mode disable' % cipher)
    cons = Consumer(PG, server, max_changes=500, timeout_ms=300, deadline=60)
    cons.start()
    w.run(ntxns=20)
    w.close()
    want = ground_truth(tmdb.port, schema, start_file, start_pos)
    how = cons.finish(len(want), 30)
    stop_source(PG, server)
    diff = compare(cons.delivered, want)
    if diff:
        raise CaseFailure(diff + ('' if how == 'complete' else ' (consumer: %s)' % how))
    bad = self_check_compare(want, random.Random(i))
    require(bad is None, bad)


# ---------------------------------------------------------------------------

def main(argv):
    patterns = argv[1:]

    def wanted(name):
        if not patterns:
            return True
        return any(name == p or name.startswith(p + '/') or name.split('/')[0] == p or
                   name.startswith(p) for p in patterns)

    log('seed %d (BLF_FAULTS_SEED), MariaDB %d, MariaDB TLS %d, PostgreSQL %d, tmp %s'
        % (SEED, MDB_PORT, TLS_PORT, PG_PORT, TMP))
    PG.execute('CREATE EXTENSION IF NOT EXISTS binlog_fdw')
    total_t0 = time.monotonic()
    failed, timings = run_cases('streaming-faults', CASES, SEED, wanted,
                                lambda: (ensure_up(MDB, PG), drop_all_sources()), pg=PG)
    if any(wanted('tls/' + c[0]) for c in TLS_MODES):
        t0 = time.monotonic()
        for full, reason in tls_cases(SEED + 1000, wanted):
            full = 'streaming-faults/' + full
            if reason is None:
                print('ok - %s' % full, flush=True)
            else:
                failed += 1
                print('not ok - %s: %s' % (full, reason), flush=True)
        timings.append(('tls', time.monotonic() - t0))
    log('timings: ' + ', '.join('%s %.0fs' % t for t in timings) +
        '; total %.0fs' % (time.monotonic() - total_t0))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
