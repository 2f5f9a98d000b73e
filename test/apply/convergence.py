#!/usr/bin/python3
"""
test/apply/convergence.py -- binlog_fdw's apply path end to end: MariaDB
tables copied by snapshot() and kept equal by apply(), under faults, from
pg_cron, continuously, and with a transaction far larger than the ring.

Every convergence case writes the typed workload of workload.py (every
column type, multi-table transactions, key updates, deletes, ALTER TABLE
ADD/DROP/MODIFY COLUMN mid-stream) into its own MariaDB database, takes
snapshot() of it while the writer runs (snapshot creates the PostgreSQL
tables), starts the source, applies while the writer goes on, injects its
fault, then writes a marker row and waits for it in PostgreSQL; at that
point every PostgreSQL table must equal its MariaDB table row for row
(workload.compare_dumps over canonical dumps of both sides).

Cases (one "ok - apply-convergence/NAME" line each):
  converge/loop, converge/continuous
                      no fault; apply() called in a loop by a client, or
                      the continuous apply worker (server option continuous)
  converge-minimal/*  the same with the writer's sessions at
                      binlog_row_image=MINIMAL and half the inserts naming
                      only some columns (partial images: defaults, updates
                      of some columns, key updates, deletes)
  worker-sigkill/*    kill -9 of the source's worker mid-apply (the
                      postmaster restarts the cluster)
  pg-immediate/*      pg_ctl stop -m immediate and start, mid-apply
  mariadb-restart/*   MariaDB restarted while the writer writes
  repl-killed/*       KILL of the worker's Binlog Dump thread on MariaDB
  apply-error/*       a CHECK constraint on a PostgreSQL target that one
                      MariaDB transaction violates: apply stops there with
                      a message naming the table and the binlog position
                      (checked against SHOW BINLOG EVENTS) and GTID, none
                      of that transaction is visible, later transactions
                      are not applied past it; once the constraint is
                      dropped apply resumes and converges
  load/backend-sigkill, load/pg-immediate, load/mariadb-restart,
  load/connection-killed
                      CALL binlog_fdw.load() in chunks of 100 rows of every
                      table (3000 rows each) while the writer writes and the
                      continuous worker applies; the fault strikes after 5
                      chunks (kill -9 of the loading backend, PostgreSQL
                      immediate stop, MariaDB restart, the loader's MySQL
                      connection killed); load() called again goes on at
                      the next chunk until complete; tables equal
  pg-cron             cron.schedule(...$$SELECT binlog_fdw.apply('src')$$)
                      applies two rounds of changes (job_run_details
                      'succeeded', tables equal); runs alongside the others
  latency             continuous mode, single-row transactions at ~1000/s:
                      every row arrives (a trigger NOTIFYs each applied row
                      to a listener in another process); p50/p99/max of
                      commit -> visible are printed, not asserted
  matrix/METADATA-IMAGE
                      the configuration matrix (issue #10 item 4): MariaDB
                      conv at binlog_row_metadata x binlog_row_image
                      full-full, minimal-full, nolog-minimal, full-noblob,
                      minimal-minimal (SET GLOBAL for the case's sessions),
                      the converge course (snapshot while the writer writes,
                      its ALTERs mid-stream after the source streams,
                      continuous apply)
  matrix/METADATA-IMAGE/backlog-ddl
                      the same configuration, the database created and
                      written (ALTERs included) while no source reads it:
                      under MINIMAL/NO_LOG a source starting after CREATE
                      TABLE but before the ALTERs is refused before
                      streaming (table, start position, the fixes FULL
                      metadata or a snapshot); a source starting before
                      CREATE DATABASE creates the tables and converges
  converge/parallel, converge-minimal/parallel, FAULT/parallel,
  apply-error/parallel, apply-worker-sigkill/parallel
                      the same in continuous mode with binlog_fdw.apply_workers
                      = 4 (parallel apply): it converges, transactions were
                      applied at once (binlog_fdw.parallel_apply_stats), the
                      ALTERs were barriers; apply-worker-sigkill: kill -9 of
                      an apply worker
  parallel-order      apply_workers = 4 on keyed, conflicting, keyless and
                      DDL transactions with a backlog: a reader never sees a
                      later transaction without an earlier one nor half of
                      one; tables equal MariaDB's (BLF_CONV_ORDER_TXNS)
  parallel-hint       apply_workers' default (-1: from nproc); then 4 on a
                      keyless table written by 4 sessions with group commit
                      forced: transactions of one group commit released
                      from their barrier by the commit id (hint_releases),
                      none without group commit nor for keyless updates;
                      tables equal MariaDB's (BLF_CONV_HINT_TXNS)
  big-transaction     one ~1 GB MariaDB transaction through a 16 MB ring:
                      apply fails on its last row (a CHECK constraint):
                      nothing visible; after the fix it applies whole; a
                      concurrent reader only ever counts 0 or all rows; the
                      worker's and the applying backend's RssAnon stay
                      below 64 MB (peaks printed)

usage: convergence.py [CASE...]   (default all; "converge", "loop",
                                    "apply-error/continuous" ... select)

Environment (defaults in test/suites/80-apply-convergence.sh):
  BLF_CONV_MARIADB_PORT (3481), BLF_CONV_PG_PORT (5481): the instances
                        "conv" (started by the suite)
  BLF_CONV_SEED         base seed (8080)
  BLF_CONV_SKIP_BIG=1   skip big-transaction
  BLF_CONV_BIG_MB       size of the big transaction's row images (1024)
  BLF_CONV_TXNS         transactions of a convergence case (converge: 3x)
  BLF_CONV_MATRIX_TXNS  transactions of a matrix case (300)
"""

import contextlib
import multiprocessing
import os
import random
import re
import select
import signal
import subprocess
import sys
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, '..', 'streaming_faults'))

import psycopg2  # noqa: E402
import psycopg2.extensions  # noqa: E402
import pymysql  # noqa: E402

from blfaults import (CaseFailure, MariaDB, Postgres, create_source, ensure_up, log,  # noqa: E402
                      proc_status, require, short, start_source, wait_for, PG_SOCKET_DIR)
from workload import (TABLE_NAMES, TypedWriter, compare_dumps, count_rows,  # noqa: E402
                      dump_mariadb, dump_postgres, self_check)

MDB_PORT = int(os.environ.get('BLF_CONV_MARIADB_PORT', '3481'))
PG_PORT = int(os.environ.get('BLF_CONV_PG_PORT', '5481'))
SEED = int(os.environ.get('BLF_CONV_SEED', '8080'))
SKIP_BIG = os.environ.get('BLF_CONV_SKIP_BIG', '0') not in ('', '0')
BIG_MB = int(os.environ.get('BLF_CONV_BIG_MB', '1024'))
TXNS = int(os.environ.get('BLF_CONV_TXNS', '500'))
PGDB = 'blf_conv'
RSS_LIMIT_KB = 64 * 1024

MDB = MariaDB('conv', MDB_PORT)
PG = Postgres('conv', PG_PORT)
PG.dsn = 'host=%s port=%d user=postgres dbname=%s' % (PG_SOCKET_DIR, PG_PORT, PGDB)

CASES = []
SERVER_IDS = iter(range(8801, 8999))


def case(name):
    def register(fn):
        CASES.append((name, fn))
        return fn
    return register


def pg_error_text(e):
    """Message, detail and context of a PostgreSQL error."""
    d = getattr(e, 'diag', None)
    if d is None or d.message_primary is None:
        return str(e).strip()
    parts = [d.message_primary]
    if d.message_detail:
        parts.append('DETAIL: ' + d.message_detail)
    if d.context:
        parts.append('CONTEXT: ' + d.context)
    if d.message_hint:
        parts.append('HINT: ' + d.message_hint)
    return ' '.join(parts)


def pg_up(timeout=60):
    wait_for(lambda: PG.query('SELECT 1'), timeout, 'PostgreSQL to accept connections', interval=0.2)


def status(server):
    try:
        return PG.status(server) or {}
    except psycopg2.Error:
        return {}


def drop_source(server):
    for sql in ('SELECT binlog_fdw.stop(%s)', 'SELECT binlog_fdw.reset(%s)'):
        try:
            PG.execute(sql, (server,))
        except psycopg2.Error as e:
            log('cleanup of %s: %s' % (server, str(e).strip().splitlines()[0]))
    try:
        PG.execute('DROP SERVER IF EXISTS %s CASCADE' % server)
    except psycopg2.Error as e:
        log('cleanup of %s: %s' % (server, str(e).strip().splitlines()[0]))


# ---------------------------------------------------------------------------
# apply drivers

class ApplyLoop(threading.Thread):
    """
    A client calling binlog_fdw.apply() in a loop on one session, as an
    application or a scheduler would; after an error it retries on the same
    session (a new one only if the connection is gone).
    """

    def __init__(self, server, max_changes=5000, max_seconds=1.0, wait_seconds=0.3):
        super().__init__(daemon=True)
        self.server = server
        self.args = (server, max_changes, max_seconds, wait_seconds)
        self.halt = threading.Event()
        self.calls = 0
        self.transactions = 0
        self.rows = 0
        self.errors = []            # (time, text)
        self.reconnects = 0
        self.conn = None
        self.last = None

    def stop(self):
        self.halt.set()
        self.join(30)

    def run(self):
        while not self.halt.is_set():
            try:
                if self.conn is None:
                    self.conn = PG.connect(app='blf-conv apply loop')
                with self.conn.cursor() as cur:
                    cur.execute('SELECT transactions, rows, ddl, file, pos, gtid '
                                'FROM binlog_fdw.apply(%s, %s, %s, %s)', self.args)
                    r = cur.fetchone()
                self.calls += 1
                self.transactions += r[0]
                self.rows += r[1]
                self.last = r
                if r[0] == 0:
                    time.sleep(0.05)
            except psycopg2.Error as e:
                text = pg_error_text(e)
                if not self.errors or self.errors[-1][1] != text:
                    log('apply loop %s: %s' % (self.server, short(text, 400)))
                self.errors.append((time.monotonic(), text))
                if self.conn is None or self.conn.closed or isinstance(
                        e, (psycopg2.OperationalError, psycopg2.InterfaceError)):
                    try:
                        if self.conn is not None:
                            self.conn.close()
                    except Exception:
                        pass
                    self.conn = None
                    self.reconnects += 1
                time.sleep(0.3)
        if self.conn is not None:
            self.conn.close()


class WriterThread(threading.Thread):
    def __init__(self, writer, ntxns, rate, hooks=()):
        super().__init__(daemon=True)
        self.writer = writer
        self.kw = dict(ntxns=ntxns, rate=rate, hooks=hooks)
        self.error = None

    def run(self):
        try:
            self.writer.run(**self.kw)
        except Exception as e:
            log(traceback.format_exc())
            self.error = e


# ---------------------------------------------------------------------------
# one convergence run

class Conv:
    """A database, its writer, its source and its apply driver."""

    def __init__(self, name, mode, seed, alters=True, row_image=None):
        self.name = name
        self.mode = mode
        self.db = 'cv_' + re.sub(r'[^a-z0-9]+', '_', name)
        self.server = 's_' + re.sub(r'[^a-z0-9]+', '_', name)
        self.writer = TypedWriter(MDB, self.db, seed, alters=alters, row_image=row_image)
        self.loop = None
        self.wt = None
        self.apply_errors = []      # continuous: distinct status.apply_error

    def setup(self, initial_rows=150):
        PG.execute('DROP SCHEMA IF EXISTS %s CASCADE' % self.db)
        PG.execute('DELETE FROM binlog_fdw.table_mapping WHERE server_name = %s', (self.server,))
        self.writer.create(initial_rows)
        opts = {'continuous': 'true'} if self.mode in ('continuous', 'parallel') else {}
        create_source(PG, self.server, MDB.port, next(SERVER_IDS),
                      include='^%s\\.' % self.db, **opts)

    def write(self, ntxns, rate, hooks=()):
        self.wt = WriterThread(self.writer, ntxns, rate, hooks)
        self.wt.start()

    def snapshot(self, locked=False):
        """locked: the caller holds the writer's ddl_lock."""
        t0 = time.monotonic()
        with self.writer.ddl_lock if not locked else contextlib.nullcontext():
            rows = PG.query('SELECT source, rows, snapshot_position, created '
                            'FROM binlog_fdw.snapshot(%s, %s)',
                            (self.server, ['%s.%s' % (self.db, t) for t in TABLE_NAMES]))
        require(all(r[3] for r in rows), 'snapshot() did not create every table: %s' % rows)
        log('%s: snapshot at %s of %d rows in %.1fs, writer at %d transactions' % (
            self.name, rows[0][2], sum(r[1] for r in rows), time.monotonic() - t0, self.writer.txns))
        return rows

    def start(self):
        start_source(PG, self.server)
        if self.mode == 'loop':
            self.loop = ApplyLoop(self.server)
            self.loop.start()
        else:
            wait_for(lambda: status(self.server).get('apply_pid'), 30,
                     'the apply worker of %s' % self.server)

    def applied(self):
        """Transactions applied so far (loop: by the client)."""
        if self.mode == 'loop':
            return self.loop.transactions
        return status(self.server).get('applied_transactions') or 0

    def current_apply_error(self):
        if self.mode == 'loop':
            return self.loop.errors[-1][1] if self.loop.errors else None
        e = status(self.server).get('apply_error')
        if e and (not self.apply_errors or self.apply_errors[-1] != e):
            self.apply_errors.append(e)
        return e or None

    def marker_seen(self, n):
        try:
            r = PG.query('SELECT 1 FROM %s.t_mark WHERE id = %%s' % self.db, (n,))
        except psycopg2.Error:
            return False
        return bool(r)

    def finish_writes(self, timeout=120):
        self.wt.join(timeout)
        require(not self.wt.is_alive(), 'the writer did not finish within %ds' % timeout)
        if self.wt.error:
            raise self.wt.error

    def converge(self, marker=1, timeout=120):
        """Marker row, wait for it, compare both sides."""
        gtid = self.writer.mark(marker)
        t0 = time.monotonic()
        try:
            wait_for(lambda: self.marker_seen(marker), timeout,
                     'marker %d (GTID %s) in PostgreSQL' % (marker, gtid), interval=0.2)
        except CaseFailure as e:
            st = status(self.server)
            raise CaseFailure('%s; source state %s, read %s:%s, acked %s:%s, last error %s, apply '
                              'error %s, loop errors %s' % (
                                  e, st.get('state'), st.get('read_file'), st.get('read_pos'),
                                  st.get('acked_file'), st.get('acked_pos'), st.get('last_error'),
                                  short(st.get('apply_error'), 300),
                                  short(self.loop.errors[-1][1] if self.loop and self.loop.errors else None, 300)))
        log('%s: marker %d applied %.1fs after it was written' % (self.name, marker, time.monotonic() - t0))
        self.compare()

    def compare(self):
        t0 = time.monotonic()
        want = dump_mariadb(MDB, self.db, TABLE_NAMES)
        conn = PG.connect(app='blf-conv dump')
        try:
            got = dump_postgres(conn, self.db, TABLE_NAMES, want)
        finally:
            conn.close()
        diff = compare_dumps(want, got)
        log('%s: compared %d MariaDB rows with %d PostgreSQL rows in %.1fs' % (
            self.name, count_rows(want), count_rows(got), time.monotonic() - t0))
        if diff:
            raise CaseFailure('PostgreSQL differs from MariaDB: ' + diff)
        bad = self_check(want, random.Random(count_rows(want)))
        require(bad is None, bad)
        return want

    def close(self):
        if self.wt is not None and self.wt.is_alive():
            self.writer.halt.set()
            self.wt.join(30)
        if self.loop is not None:
            self.loop.stop()
        drop_source(self.server)

    def summary(self):
        w = self.writer
        extra = ''
        if self.loop:
            extra = ', apply loop: %d calls, %d transactions, %d rows, %d errors, %d reconnects' % (
                self.loop.calls, self.loop.transactions, self.loop.rows, len(self.loop.errors),
                self.loop.reconnects)
        else:
            st = status(self.server)
            extra = ', apply worker: %s transactions, %s rows' % (
                st.get('applied_transactions'), st.get('applied_rows'))
        return ('writer: %d transactions, %d row changes, %d ALTERs, %d errors%s'
                % (w.txns, w.changes, w.ddl, len(w.errors), extra))


def set_apply_workers(n):
    """
    binlog_fdw.apply_workers of PostgreSQL conv (a reload).  1: serial,
    set as such (the default, -1, is serial only on a machine of 2 cores);
    None: the default.
    """
    if n is None:
        PG.execute('ALTER SYSTEM RESET binlog_fdw.apply_workers')
    else:
        PG.execute('ALTER SYSTEM SET binlog_fdw.apply_workers = %d' % n)
    PG.execute('SELECT pg_reload_conf()')
    want = '-1' if n is None else str(n)
    wait_for(lambda: PG.query('SHOW binlog_fdw.apply_workers')[0][0] == want, 10,
             'binlog_fdw.apply_workers to be %s' % want)


PARALLEL_WORKERS = 4

PARALLEL_STATS = ('workers', 'dispatched', 'max_in_flight', 'key_waits', 'barriers',
                  'hint_releases', 'effective_workers')


def parallel_stats(server):
    r = PG.query('SELECT %s FROM binlog_fdw.parallel_apply_stats(%%s)' % ', '.join(PARALLEL_STATS),
                 (server,))[0]
    return dict(zip(PARALLEL_STATS, r))


def run_conv(name, mode, seed, ntxns, rate, fault=None, fault_at=0.5, row_image=None):
    """
    The common course: setup, writes, snapshot at 15% of them, start,
    fault(conv) once fault_at of the writes are done, the rest, converge.
    row_image: the writer's binlog_row_image (partial images).  Mode
    "parallel": continuous with binlog_fdw.apply_workers = 4.
    """
    if mode == 'parallel':
        set_apply_workers(PARALLEL_WORKERS)
        try:
            return run_conv_mode(name, mode, seed, ntxns, rate, fault, fault_at, row_image)
        finally:
            set_apply_workers(1)
    return run_conv_mode(name, mode, seed, ntxns, rate, fault, fault_at, row_image)


def run_conv_mode(name, mode, seed, ntxns, rate, fault, fault_at, row_image):
    c = Conv(name, mode, seed, row_image=row_image)
    try:
        c.setup()
        c.write(ntxns, rate)
        wait_for(lambda: c.writer.txns >= 0.15 * ntxns + 7 or not c.wt.is_alive(), 60,
                 'the writer to make 15% of its transactions')
        c.snapshot()
        c.start()
        if fault:
            wait_for(lambda: c.writer.txns >= fault_at * ntxns + 7 or not c.wt.is_alive(), 120,
                     'the writer to reach the fault')
            wait_for(lambda: c.applied() > 0, 60, 'apply to apply something before the fault')
            fault(c)
        c.finish_writes()
        c.converge()
        log('%s: %s' % (name, c.summary()))
        if mode == 'parallel':
            ps = parallel_stats(c.server)
            log('%s: parallel apply %s' % (name, ps))
            require(ps['dispatched'] > 0 and ps['workers'] == PARALLEL_WORKERS,
                    'no transaction went to the %d apply workers: %s' % (PARALLEL_WORKERS, ps))
            require(ps['barriers'] > 0, 'the ALTERs were not barriers: %s' % ps)
            # (transactions applied at once: parallel-order, with a backlog;
            # here the writer's rate may let each one finish before the next)
        if mode in ('continuous', 'parallel'):
            # the status counters are this source's own (slots are reused)
            st = status(c.server)
            most = c.writer.txns + c.writer.ddl + len(c.writer.errors) + 1
            require(0 < (st.get('applied_transactions') or 0) <= most,
                    'status shows %s transactions applied; the source had at most %d'
                    % (st.get('applied_transactions'), most))
        return None
    finally:
        c.close()


# ---------------------------------------------------------------------------
# faults

def fault_worker_sigkill(c):
    st = status(c.server)
    pid = st.get('worker_pid')
    require(pid, 'no worker pid in status: %s' % short(st))
    with open('/proc/%d/cmdline' % pid, 'rb') as f:
        cmd = f.read().replace(b'\0', b' ').decode(errors='replace')
    require('binlog_fdw source' in cmd, 'pid %d is not a binlog_fdw source worker (%r)' % (pid, cmd))
    applied = c.applied()
    os.kill(pid, signal.SIGKILL)
    log('%s: killed worker %d (-9) with %d transactions applied, writer at %d'
        % (c.name, pid, applied, c.writer.txns))
    time.sleep(1)
    pg_up()
    wait_for(lambda: status(c.server).get('worker_pid') not in (None, 0, pid) and
             status(c.server).get('state') == 'streaming', 60, 'a new worker to stream')
    if c.mode == 'continuous':
        wait_for(lambda: status(c.server).get('apply_pid'), 60, 'the apply worker to come back')


def fault_pg_immediate(c):
    applied = c.applied()
    PG.stop('immediate')
    log('%s: PostgreSQL stopped (immediate) with %d transactions applied, writer at %d'
        % (c.name, applied, c.writer.txns))
    time.sleep(0.5)
    PG.start()
    pg_up()
    wait_for(lambda: status(c.server).get('state') == 'streaming', 60, 'the source to stream again')


def fault_mariadb_restart(c):
    applied = c.applied()
    w0 = c.writer.txns
    MDB.stop()
    log('%s: MariaDB stopped with %d transactions applied, writer at %d' % (c.name, applied, w0))
    time.sleep(1)
    MDB.start()
    wait_for(lambda: c.writer.txns > w0 + 5 or not c.wt.is_alive(), 60, 'the writer to go on')
    wait_for(lambda: status(c.server).get('state') == 'streaming', 60, 'the source to stream again')
    require(c.writer.errors, 'the writer saw no error: MariaDB did not restart under it')


def fault_repl_killed(c):
    ids = wait_for(MDB.binlog_dump_threads, 30, 'a Binlog Dump thread')
    for i in ids:
        try:
            MDB.query('KILL %d' % i)
        except pymysql.Error as e:
            log('KILL %d: %s' % (i, e))
    log('%s: killed Binlog Dump thread(s) %s with %d transactions applied, writer at %d'
        % (c.name, ids, c.applied(), c.writer.txns))
    wait_for(lambda: [i for i in MDB.binlog_dump_threads() if i not in ids], 30,
             'the worker to reconnect')


def apply_worker_pids():
    return [r[0] for r in PG.query("SELECT pid FROM pg_stat_activity "
                                   "WHERE backend_type = 'binlog_fdw apply worker'")]


def fault_apply_worker_sigkill(c):
    """kill -9 of an apply worker of parallel apply (the cluster restarts)."""
    pids = wait_for(apply_worker_pids, 30, 'apply workers')
    applied = c.applied()
    os.kill(pids[0], signal.SIGKILL)
    log('%s: killed apply worker %d (-9) of %s with %d transactions applied, writer at %d'
        % (c.name, pids[0], pids, applied, c.writer.txns))
    time.sleep(1)
    pg_up()
    wait_for(lambda: status(c.server).get('state') == 'streaming', 60, 'the source to stream again')
    wait_for(lambda: status(c.server).get('apply_pid'), 60, 'the apply worker to come back')


FAULTS = [
    ('worker-sigkill', fault_worker_sigkill),
    ('pg-immediate', fault_pg_immediate),
    ('mariadb-restart', fault_mariadb_restart),
    ('repl-killed', fault_repl_killed),
]

for _mode in ('loop', 'continuous', 'parallel'):
    case('converge/%s' % _mode)(
        lambda seed, _m=_mode: run_conv('converge-' + _m, _m, seed, 3 * TXNS, 120))
for _mode in ('loop', 'continuous', 'parallel'):
    case('converge-minimal/%s' % _mode)(
        lambda seed, _m=_mode: run_conv('converge-minimal-' + _m, _m, seed, TXNS, 120,
                                        row_image='MINIMAL'))
for _fname, _ffn in FAULTS + [('apply-worker-sigkill', fault_apply_worker_sigkill)]:
    for _mode in ('loop', 'continuous', 'parallel'):
        if _fname == 'apply-worker-sigkill' and _mode != 'parallel':
            continue
        case('%s/%s' % (_fname, _mode))(
            lambda seed, _m=_mode, _n=_fname, _f=_ffn: run_conv('%s-%s' % (_n, _m), _m, seed,
                                                                 TXNS, 100, fault=_f))


# ---------------------------------------------------------------------------
# the configuration matrix (issue #10 item 4): binlog_row_metadata x
# binlog_row_image of the source, each with DDL mid-stream and with a
# backlog that crosses DDL

MATRIX = [('FULL', 'FULL'), ('MINIMAL', 'FULL'), ('NO_LOG', 'MINIMAL'),
          ('FULL', 'NOBLOB'), ('MINIMAL', 'MINIMAL')]
MATRIX_TXNS = int(os.environ.get('BLF_CONV_MATRIX_TXNS', '300'))


def matrix_name(metadata, image):
    return '%s-%s' % (metadata.lower().replace('_', ''), image.lower())


class SourceConfig:
    """
    binlog_row_metadata and binlog_row_image of MariaDB "conv" for the
    sessions that connect from now on (the metadata is global only, the
    writer's sessions also set the image); back to FULL/FULL on exit.
    """

    def __init__(self, metadata, image):
        self.metadata = metadata
        self.image = image

    def __enter__(self):
        MDB.query("SET GLOBAL binlog_row_metadata = '%s'" % self.metadata)
        MDB.query("SET GLOBAL binlog_row_image = '%s'" % self.image)
        got = MDB.query('SELECT @@global.binlog_row_metadata, @@global.binlog_row_image')[0]
        require(tuple(got) == (self.metadata, self.image),
                'MariaDB conv is at %s, not %s/%s' % (got, self.metadata, self.image))
        return self

    def __exit__(self, *exc):
        try:
            MDB.query("SET GLOBAL binlog_row_metadata = 'FULL'")
            MDB.query("SET GLOBAL binlog_row_image = 'FULL'")
        except Exception as e:                      # noqa: BLE001
            log('could not set MariaDB conv back to FULL/FULL: %s' % e)
        return False


def master_position():
    r = MDB.query('SHOW MASTER STATUS')[0]
    return r[0], int(r[1])


def run_matrix(metadata, image, seed):
    """A snapshot while the writer writes (ALTERs mid-stream), then converge."""
    name = 'matrix-' + matrix_name(metadata, image)
    with SourceConfig(metadata, image):
        c = Conv(name, 'continuous', seed, row_image=None if image == 'FULL' else image)
        try:
            c.setup()
            c.write(MATRIX_TXNS, 150)
            wait_for(lambda: c.writer.txns >= 0.15 * MATRIX_TXNS + 7 or not c.wt.is_alive(), 60,
                     'the writer to make 15% of its transactions')
            # no ALTER between the snapshot and the start: under MINIMAL/NO_LOG
            # a source whose first start comes after DDL that followed its
            # snapshot's position is refused (the history is seeded from
            # information_schema at the start, not from the snapshot's
            # definitions) -- see the report of issue #10 item 4
            with c.writer.ddl_lock:
                c.snapshot(locked=True)
                c.start()
            c.finish_writes()
            require(c.writer.ddl > 0, 'the writer ran no ALTER')
            c.converge()
            log('%s: %s' % (name, c.summary()))
        finally:
            c.close()
        log('%s: the source wrote with binlog_row_metadata=%s, binlog_row_image=%s'
            % (name, metadata, image))


def run_matrix_backlog(metadata, image, seed):
    """
    A backlog across DDL: the database created and written to (ALTERs
    included) while no source reads it, then sources started at positions
    in the past.  A start at a position after the tables' CREATE TABLE but
    before the ALTERs: with MINIMAL/NO_LOG metadata refused before
    streaming (README: "A start in the past ... across DDL on a captured
    table -- except from the table's CREATE TABLE on -- is refused before
    streaming, naming the table, the DDL's position and the fixes"); with
    FULL metadata not tried (its tables would need a copy).  A start before
    CREATE DATABASE (every metadata): apply creates the tables, replays the
    ALTERs in order and converges.
    """
    name = 'matrix-' + matrix_name(metadata, image) + '-backlog'
    with SourceConfig(metadata, image):
        c = Conv(name, 'continuous', seed, row_image=None if image == 'FULL' else image)
        early = c.server + '_e'
        early_made = False
        try:
            PG.execute('DROP SCHEMA IF EXISTS %s CASCADE' % c.db)
            PG.execute('DELETE FROM binlog_fdw.table_mapping WHERE server_name IN (%s, %s)',
                       (c.server, early))
            before_create = master_position()
            c.writer.create(0)
            after_create = master_position()
            c.writer.run(MATRIX_TXNS, None)
            require(c.writer.ddl > 0 and not c.writer.alters and not c.writer.errors,
                    'the writer ran %d ALTERs, %d left, errors %s'
                    % (c.writer.ddl, len(c.writer.alters), short(c.writer.errors, 400)))
            log('%s: backlog of %d transactions and %d ALTERs from %s:%d (CREATE at %s:%d)'
                % (name, c.writer.txns, c.writer.ddl, after_create[0], after_create[1],
                   before_create[0], before_create[1]))

            if metadata != 'FULL':
                create_source(PG, early, MDB.port, next(SERVER_IDS), include='^%s\\.' % c.db,
                              start='%s:%d' % after_create, continuous='true')
                early_made = True
                PG.execute('SELECT binlog_fdw.start(%s)', (early,))
                err = wait_for(lambda: (lambda e: e if e and 'is unknown' in e else None)(
                    status(early).get('last_error')), 60, 'source %s to refuse its start' % early)
                log('%s: start at %s:%d refused: %s' % (name, after_create[0], after_create[1],
                                                         short(err, 600)))
                for want in ('at the start position %s:%d is unknown' % after_create,
                             'the table was changed at binlog', 'binlog_row_metadata=FULL',
                             'snapshot'):
                    require(want in err, 'the refusal lacks %r: %s' % (want, short(err, 800)))
                require(re.search(r'definition of table %s\.t_\w+ at' % c.db, err),
                        'the refusal names no table of %s: %s' % (c.db, short(err, 800)))
                st = status(early)
                require(not st.get('applied_transactions'),
                        'the refused source applied %s transactions' % st.get('applied_transactions'))
                require(not PG.query("SELECT 1 FROM pg_namespace WHERE nspname = %s", (c.db,)),
                        'the refused source created schema %s' % c.db)
                drop_source(early)
                early_made = False

            # from before CREATE DATABASE: apply creates schema and tables
            create_source(PG, c.server, MDB.port, next(SERVER_IDS), include='^%s\\.' % c.db,
                          start='%s:%d' % before_create, continuous='true')
            try:
                c.start()
            except CaseFailure as e:
                raise CaseFailure('%s; last error: %s' % (e, short(status(c.server).get('last_error'), 800)))
            # the tables come with the backlog's CREATE TABLEs (the marker's
            # query must not fail on a table that is not there yet)
            wait_for(lambda: PG.query('SELECT to_regclass(%s)', ('%s.t_mark' % c.db,))[0][0], 120,
                     'apply to create %s.t_mark' % c.db, interval=0.2)
            c.converge()
            log('%s: %s' % (name, c.summary()))
        finally:
            if early_made:
                drop_source(early)
            c.close()


for _md, _im in MATRIX:
    case('matrix/%s' % matrix_name(_md, _im))(
        lambda seed, _md=_md, _im=_im: run_matrix(_md, _im, seed))
    case('matrix/%s/backlog-ddl' % matrix_name(_md, _im))(
        lambda seed, _md=_md, _im=_im: run_matrix_backlog(_md, _im, seed))


# ---------------------------------------------------------------------------
# chunked loads (CALL binlog_fdw.load()) with faults

def load_chunks_done(server):
    try:
        return PG.query('SELECT coalesce(sum(chunks), 0) FROM binlog_fdw.load_status WHERE server = %s',
                        (server,))[0][0]
    except psycopg2.Error:
        return None


def run_load(name, seed, fault, ntxns=TXNS, rate=100, initial_rows=3000, chunk_rows=100):
    """
    The source streams (continuous apply) and the writer writes while
    load() copies every table in chunks; the fault strikes once some chunks
    are in; load() is called again until it completes (it goes on at the
    next chunk); then the writes end and both sides must be equal.
    """
    c = Conv(name, 'continuous', seed, alters=False)
    tables = ['%s.%s' % (c.db, t) for t in TABLE_NAMES]
    try:
        c.setup(initial_rows=initial_rows)
        # changes of a table not created yet are in its first chunk
        PG.execute("ALTER SERVER %s OPTIONS (ADD unmapped 'skip')" % c.server)
        c.start()
        c.write(ntxns, rate)
        calls, errors, result = 0, [], {}

        def call():
            conn = None
            try:
                conn = PG.connect(app='blf-conv load')
                conn.autocommit = True
                with conn.cursor() as cur:
                    cur.execute('CALL binlog_fdw.load(%s, %s, %s, parallel => 1)', (c.server, tables, chunk_rows))
                result['ok'] = True
            except psycopg2.Error as e:
                result['error'] = pg_error_text(e)
            finally:
                if conn is not None:
                    try:
                        conn.close()
                    except psycopg2.Error:
                        pass

        t = threading.Thread(target=call, daemon=True)
        t.start()
        calls += 1
        wait_for(lambda: (load_chunks_done(c.server) or 0) >= 5 or not t.is_alive(), 120,
                 'load() to commit 5 chunks', interval=0.01)
        require(t.is_alive(), 'load() ended before the fault: %s' % result)
        before = load_chunks_done(c.server)
        fault(c)
        t.join(120)
        if 'error' in result:
            errors.append(result['error'])
            log('%s: load() stopped by the fault after %s chunks: %s' % (name, before, short(result['error'], 300)))
        pg_up()
        while 'ok' not in result:
            require(calls < 6, 'load() did not complete in %d calls: %s' % (calls, errors))
            result.clear()
            call()
            calls += 1
            if 'error' in result:
                errors.append(result['error'])
                log('%s: load() call %d: %s' % (name, calls, short(result['error'], 300)))
                time.sleep(1)
        done = PG.query('SELECT source, chunks, complete FROM binlog_fdw.load_status WHERE server = %s '
                        'ORDER BY source', (c.server,))
        require(len(done) == len(tables) and all(r[2] for r in done),
                'load_status after load(): %s' % (done,))
        require(calls >= 2 or not errors, 'calls %d, errors %s' % (calls, errors))
        c.finish_writes()
        c.converge()
        log('%s: %d load() calls, chunks %s; %s' % (name, calls, [(r[0], r[1]) for r in done], c.summary()))
        return None
    finally:
        c.close()


def fault_load_backend_sigkill(c):
    pids = PG.query("SELECT pid FROM pg_stat_activity WHERE application_name = 'blf-conv load'")
    require(pids, 'no backend runs load()')
    os.kill(pids[0][0], signal.SIGKILL)
    log('%s: killed the load() backend %d (-9)' % (c.name, pids[0][0]))
    time.sleep(1)
    pg_up()
    wait_for(lambda: status(c.server).get('state') == 'streaming', 60, 'the source to stream again')


def fault_load_connection(c):
    """The loader's MySQL connections killed (not the Binlog Dump thread)."""
    killed = 0
    for _ in range(200):
        ids = [r[0] for r in MDB.query("SELECT ID FROM information_schema.PROCESSLIST WHERE "
                                       "COMMAND <> 'Binlog Dump' AND USER <> 'root'")]
        for i in ids:
            try:
                MDB.query('KILL %d' % i)
                killed += 1
            except pymysql.Error:
                pass
        if killed:
            break
        time.sleep(0.01)
    log('%s: killed %d connection(s) of the loader' % (c.name, killed))


LOAD_FAULTS = [
    ('load/backend-sigkill', fault_load_backend_sigkill),
    ('load/pg-immediate', fault_pg_immediate),
    ('load/mariadb-restart', fault_mariadb_restart),
    ('load/connection-killed', fault_load_connection),
]
for _fname, _ffn in LOAD_FAULTS:
    case(_fname)(lambda seed, _n=_fname, _f=_ffn: run_load(_n.replace('/', '-'), seed, _f))


# ---------------------------------------------------------------------------
# an error in one transaction

POISON = 'poison!'


def poison_rows_event(file, db, gtid, start=4):
    """
    (file, position) of the first rows event on db.t_str of transaction
    gtid, from the events of file after start (a transaction boundary).
    """
    in_txn, table = False, None
    conn = pymysql.connect(unix_socket=MDB.socket, user='root', password='', use_unicode=False)
    try:
        while True:
            with conn.cursor() as cur:
                cur.execute("SHOW BINLOG EVENTS IN '%s' FROM %d LIMIT 2000" % (file, start))
                evs = [(int(r[1]), r[2].decode(), int(r[4]), r[5].decode('utf-8', 'replace'))
                       for r in cur.fetchall()]
            for (p, etype, end, info) in evs:
                if etype == 'Gtid':
                    in_txn = info.endswith('GTID %s' % gtid)
                elif in_txn and etype == 'Table_map':
                    table = re.search(r'\((.*)\)$', info).group(1)
                elif in_txn and re.match(r'(Write|Update|Delete)_rows', etype) and table == '%s.t_str' % db:
                    return file, p
            if len(evs) < 2000:
                return None
            start = evs[-1][2]
    finally:
        conn.close()


def apply_error(mode, seed):
    name = 'apply-error-' + mode
    c = Conv(name, mode, seed)
    poison = {}

    def inject(w):
        """The poison transaction: rows in t_int then t_str (which fails)."""
        if w.conn is None:
            w.connect()
        k_int = w._new_key('t_int')
        k_str = w._new_key('t_str')
        with w.conn.cursor() as cur:
            cur.execute('INSERT INTO t_int (id, ti) VALUES (%s, 42)', (k_int,))
            cur.execute('INSERT INTO t_str (id, v_l1) VALUES (%s, %s)', (k_str, POISON))
        w.conn.commit()
        with w.conn.cursor() as cur:
            cur.execute('SELECT @@last_gtid')
            poison['gtid'] = cur.fetchone()[0]
        # not in the writer's key pool: these rows stay as they are
        poison['keys'] = (k_int, k_str)
        poison['at'] = w.txns
        log('%s: poison transaction %s (t_int %d, t_str %d)' % (name, poison['gtid'], k_int, k_str))

    try:
        c.setup()
        c.write(TXNS, 100, hooks=[(0.4, inject)])
        wait_for(lambda: c.writer.txns >= 0.15 * TXNS + 7, 60, 'the writer')
        c.snapshot()
        PG.execute("ALTER TABLE %s.t_str ADD CONSTRAINT blf_poison CHECK (v_l1 IS DISTINCT FROM '%s')"
                   % (c.db, POISON))
        c.start()
        try:
            err = wait_for(lambda: 'gtid' in poison and (lambda e: e if e and 'blf_poison' in e else None)(
                c.current_apply_error()), 90, 'apply to stop at the poison transaction')
        except CaseFailure as e:
            raise CaseFailure('%s; apply error: %s' % (e, short(c.current_apply_error(), 600)))
        log('%s: apply stopped: %s' % (name, short(err, 800)))
        # the message: table, target, binlog position, GTID
        m = re.search(r'binlog (\S+) position (\d+)', err)
        require(m, 'the error does not name a binlog position: %s' % err)
        require('%s.t_str' % c.db in err, 'the error does not name MySQL table %s.t_str: %s' % (c.db, err))
        require('blf_poison' in err and 'violates check constraint' in err,
                'the error is not the constraint violation: %s' % err)
        require(poison['gtid'] in err, 'the error does not name GTID %s: %s' % (poison['gtid'], err))
        file, pos = m.group(1), int(m.group(2))
        st = PG.query('SELECT file, pos FROM binlog_fdw.source_state WHERE server_name = %s',
                      (c.server,))[0]
        want = poison_rows_event(file, c.db, poison['gtid'], st[1] if st[0] == file else 4)
        require(want == (file, pos), 'the error names binlog %s position %d; the rows event of '
                'the poison transaction on %s.t_str is at %s' % (file, pos, c.db, want))
        # stuck there, whole transactions only, later ones not applied past it
        time.sleep(3 if mode == 'loop' else 6)    # the worker retries every 5 s
        k_int, k_str = poison['keys']
        require(not PG.query('SELECT 1 FROM %s.t_int WHERE id = %%s' % c.db, (k_int,)),
                'the first row of the failed transaction is visible in PostgreSQL')
        st = PG.query('SELECT file, pos FROM binlog_fdw.source_state WHERE server_name = %s',
                      (c.server,))[0]
        require((st[0], st[1]) <= (file, pos) if st[0] == file else st[0] < file,
                'the durable position %s:%s moved past the failed change at %s:%d' % (st[0], st[1], file, pos))
        if mode == 'loop':
            n_err = sum(1 for e in c.loop.errors if 'blf_poison' in e[1])
            require(n_err >= 2, 'apply() failed %d times on the same session, expected retries' % n_err)
            require(c.loop.reconnects == 0, 'the apply session reconnected')
        # the user fixes the target
        PG.execute('ALTER TABLE %s.t_str DROP CONSTRAINT blf_poison' % c.db)
        log('%s: constraint dropped with the writer at %d transactions' % (name, c.writer.txns))
        c.finish_writes()
        c.converge()
        require(PG.query('SELECT 1 FROM %s.t_int WHERE id = %%s' % c.db, (k_int,)) and
                PG.query('SELECT 1 FROM %s.t_str WHERE id = %%s AND v_l1 = %%s' % c.db, (k_str, POISON)),
                'the poison transaction was not applied after the fix')
        if mode in ('continuous', 'parallel'):
            # the error stays shown, with the time the worker recovered
            st = status(c.server)
            require(st.get('apply_error_cleared') is not None,
                    'status shows the apply error as current: %s (cleared %s)'
                    % (st.get('apply_error'), st.get('apply_error_cleared')))
        log('%s: %s' % (name, c.summary()))
    finally:
        c.close()


case('apply-error/loop')(lambda seed: apply_error('loop', seed))
case('apply-error/continuous')(lambda seed: apply_error('continuous', seed))


def apply_error_parallel(seed):
    set_apply_workers(PARALLEL_WORKERS)
    try:
        apply_error('parallel', seed)
    finally:
        set_apply_workers(1)


case('apply-error/parallel')(apply_error_parallel)


# ---------------------------------------------------------------------------
# pg_cron (runs alongside the other cases)

class CronCase:
    JOB = 'blf-conv-apply'

    def __init__(self, seed):
        self.c = Conv('pg-cron', 'cron', seed, alters=False)
        self.schedule = None
        self.rounds = []        # (marker, time written)
        self.error = None
        self.jobid = None

    def begin(self):
        c = self.c
        PG.execute('CREATE EXTENSION IF NOT EXISTS pg_cron')
        c.setup(initial_rows=60)
        c.snapshot()
        start_source(PG, c.server)
        self.round()
        for sched in ('1 seconds', '* * * * *'):
            try:
                self.jobid = PG.query('SELECT cron.schedule(%s, %s, %s)', (
                    self.JOB, sched, "SELECT binlog_fdw.apply('%s')" % c.server))[0][0]
                self.schedule = sched
                break
            except psycopg2.Error as e:
                log('pg-cron: schedule %r refused: %s' % (sched, str(e).strip().splitlines()[0]))
        require(self.jobid, 'cron.schedule() failed')
        v = PG.query("SELECT extversion FROM pg_extension WHERE extname = 'pg_cron'")[0][0]
        log('pg-cron: pg_cron %s, job %d scheduled %r' % (v, self.jobid, self.schedule))

    def round(self):
        c = self.c
        c.writer.run(40)
        n = len(self.rounds) + 1
        c.writer.mark(n)
        self.rounds.append((n, time.time()))

    def poll(self):
        """Between cases: the second round once the first arrived."""
        if self.error or self.jobid is None or len(self.rounds) != 1:
            return
        try:
            if self.c.marker_seen(1):
                log('pg-cron: round 1 applied by pg_cron; writing round 2')
                self.round()
        except Exception as e:
            self.error = e

    def finish(self):
        c = self.c
        try:
            if self.error:
                raise self.error
            require(self.jobid, 'no job')
            # The crash cases run meanwhile restart the whole cluster (kill
            # -9, immediate stops); the crash-loop guard cannot tell whose
            # crash it was and, after 5 launches in 120 s, leaves this
            # source stopped too, with the warning that says to start it
            # again (test/suites/80-apply-convergence.allow): do that.
            if PG.log_contains('binlog_fdw source "%s" was started 5 times in 120 seconds' % c.server):
                log('pg-cron: the crash-loop guard left %s stopped during the crash cases; starting it again'
                    % c.server)
                start_source(PG, c.server)
            timeout = 75 if self.schedule != '1 seconds' else 20
            wait_for(lambda: c.marker_seen(1), timeout, 'round 1 to be applied by the pg_cron job',
                     interval=0.5)
            if len(self.rounds) == 1:
                self.round()
            wait_for(lambda: c.marker_seen(2), timeout, 'round 2 to be applied by the pg_cron job',
                     interval=0.5)
            runs = PG.query('SELECT status, return_message, start_time FROM cron.job_run_details '
                            'WHERE jobid = %s ORDER BY start_time', (self.jobid,))
            log('pg-cron: %d runs: %s' % (len(runs), ', '.join('%s (%s)' % (r[0], short(r[1], 60))
                                                                for r in runs[-6:])))
            ok = [r for r in runs if r[0] == 'succeeded']
            require(len(ok) >= 2, 'cron.job_run_details shows %d succeeded runs: %s'
                    % (len(ok), [r[:2] for r in runs[-5:]]))
            t2 = self.rounds[1][1]
            require(any(r[2].timestamp() >= t2 - 1 for r in ok),
                    'no run succeeded after round 2 was written')
            c.compare()
            log('pg-cron: %s' % c.summary())
        finally:
            try:
                PG.execute('SELECT cron.unschedule(%s)', (self.JOB,))
            except psycopg2.Error:
                pass
            drop_source(c.server)


# ---------------------------------------------------------------------------
# latency in continuous mode

def _listener(dsn, channel, n, timeout, conn_out):
    """In its own process: LISTEN, time each notification's arrival."""
    got = {}
    try:
        conn = psycopg2.connect(dsn)
        conn.set_isolation_level(psycopg2.extensions.ISOLATION_LEVEL_AUTOCOMMIT)
        with conn.cursor() as cur:
            cur.execute('LISTEN %s' % channel)
        conn_out.send('ready')
        deadline = time.time() + timeout
        while len(got) < n and time.time() < deadline:
            if select.select([conn], [], [], 0.5)[0]:
                conn.poll()
                now = time.time()
                while conn.notifies:
                    note = conn.notifies.pop(0)
                    got.setdefault(int(note.payload), now)
        conn.close()
    except Exception as e:
        conn_out.send('error: %s' % e)
        return
    conn_out.send(got)


# ---------------------------------------------------------------------------
# parallel apply: the order guarantee

ORDER_TXNS = int(os.environ.get('BLF_CONV_ORDER_TXNS', '3000'))


@case('parallel-order')
def case_parallel_order(seed):
    """
    binlog_fdw.apply_workers = 4 on a workload made for it: one writer's
    transactions each insert row i into seq_a and seq_b (keys that never
    meet: they apply in parallel), some also update row i-1 of seq_a (a
    key of the transaction before), some a hot row (conflicts), some insert
    into a keyless table (a barrier), some into a table whose target key is
    char(n) (a type whose equality is not its value's: a barrier); an ALTER
    TABLE midway (a barrier); two
    more writers insert, update and delete rows 1..40 of another table (keys
    that often meet).  The source starts with a backlog, so that the workers
    have transactions to share.  A reader in PostgreSQL counts seq_a and
    seq_b in one statement all along: a later transaction visible without
    an earlier one would show as count < max(id), half of one as counts
    that differ.  At the end every table equals MariaDB's and the counters
    show transactions applied at once, key waits and barriers.
    """
    set_apply_workers(PARALLEL_WORKERS)
    try:
        return parallel_order(seed)
    finally:
        set_apply_workers(1)


def parallel_order(seed):
    db = 'cv_par_order'
    server = 's_par_order'
    rng = random.Random(seed)
    PG.execute('DROP SCHEMA IF EXISTS %s CASCADE' % db)
    PG.execute('DELETE FROM binlog_fdw.table_mapping WHERE server_name = %s', (server,))
    MDB.query('DROP DATABASE IF EXISTS %s' % db)
    MDB.query('CREATE DATABASE %s' % db)
    conn = MDB.connect(db)
    with conn.cursor() as cur:
        for ddl in ('CREATE TABLE seq_a (id INT NOT NULL PRIMARY KEY, v INT NOT NULL)',
                    'CREATE TABLE seq_b (id INT NOT NULL PRIMARY KEY, w VARCHAR(20))',
                    'CREATE TABLE hot (id INT NOT NULL PRIMARY KEY, n INT NOT NULL)',
                    'CREATE TABLE nokey (a INT, b VARCHAR(20))',
                    'CREATE TABLE side (id INT NOT NULL PRIMARY KEY, x INT)',
                    'CREATE TABLE padded (id CHAR(10) NOT NULL PRIMARY KEY, n INT NOT NULL)'):
            cur.execute(ddl + ' ENGINE=InnoDB')
        cur.execute('INSERT INTO hot VALUES (1, 0), (2, 0), (3, 0)')
    conn.close()
    tables = ['seq_a', 'seq_b', 'hot', 'nokey', 'side', 'padded']
    # a target whose key type takes different values as one key (char(n)
    # ignores trailing spaces): its transactions are barriers
    PG.execute('CREATE SCHEMA %s' % db)
    PG.execute('CREATE TABLE %s.padded (id character(10) PRIMARY KEY, n integer NOT NULL)' % db)
    create_source(PG, server, MDB.port, next(SERVER_IDS), include='^%s\\.' % db,
                  continuous='true', keyless='full_row')
    PG.query('SELECT source FROM binlog_fdw.snapshot(%s, %s)',
             (server, ['%s.%s' % (db, t) for t in tables]))
    halt = threading.Event()
    errors = []
    done = {'seq': 0, 'side': 0}

    def seq_writer():
        try:
            c = MDB.connect(db, autocommit=False)
            with c.cursor() as cur:
                for i in range(1, ORDER_TXNS + 1):
                    if i == ORDER_TXNS // 2:
                        cur.execute('ALTER TABLE side ADD COLUMN y INT NOT NULL DEFAULT 7')
                    cur.execute('INSERT INTO seq_a VALUES (%s, %s)', (i, i))
                    if i % 3 == 0:
                        cur.execute('UPDATE seq_a SET v = v + 1 WHERE id = %s', (i - 1,))
                    cur.execute('INSERT INTO seq_b VALUES (%s, %s)', (i, 'w%d' % i))
                    if i % 10 == 0:
                        cur.execute('UPDATE hot SET n = n + 1 WHERE id = %s', (i % 3 + 1,))
                    if i % 97 == 0:
                        cur.execute('INSERT INTO nokey VALUES (%s, %s)', (i, 'k%d' % i))
                    if i % 50 == 0:
                        cur.execute('INSERT INTO padded VALUES (%s, %s)', ('p%d' % i, i))
                    c.commit()
                    done['seq'] = i
            c.close()
        except Exception as e:                      # noqa: BLE001
            log(traceback.format_exc())
            errors.append(e)

    def side_writer(k):
        r = random.Random(seed + k)
        try:
            c = MDB.connect(db, autocommit=False)
            with c.cursor() as cur:
                while not halt.is_set():
                    try:
                        for _ in range(r.randint(1, 3)):
                            key = r.randint(1, 40)
                            op = r.random()
                            if op < 0.4:
                                cur.execute('INSERT INTO side (id, x) VALUES (%s, %s) '
                                            'ON DUPLICATE KEY UPDATE x = x + 1', (key, key))
                            elif op < 0.8:
                                cur.execute('UPDATE side SET x = x * 2 %% 1000 WHERE id = %s', (key,))
                            else:
                                cur.execute('DELETE FROM side WHERE id = %s', (key,))
                        c.commit()
                    except pymysql.err.OperationalError as e:
                        # the two side writers' rows meet: InnoDB may pick
                        # one as a deadlock victim (rolled back, not in the
                        # binlog); the writer goes on
                        if e.args[0] != 1213:
                            raise
                        c.rollback()
                        continue
                    done['side'] += 1
                    time.sleep(0.002)
            c.close()
        except Exception as e:                      # noqa: BLE001
            log(traceback.format_exc())
            errors.append(e)

    reads = {'n': 0, 'bad': [], 'last': 0}
    reader_halt = threading.Event()

    def reader():
        c = PG.connect(app='blf-conv order reader')
        try:
            while not reader_halt.is_set():
                with c.cursor() as cur:
                    cur.execute('SELECT (SELECT count(*) FROM {0}.seq_a), '
                                '(SELECT coalesce(max(id), 0) FROM {0}.seq_a), '
                                '(SELECT count(*) FROM {0}.seq_b), '
                                '(SELECT coalesce(max(id), 0) FROM {0}.seq_b)'.format(db))
                    ca, ma, cb, mb = cur.fetchone()
                reads['n'] += 1
                if not (ca == ma == cb == mb) or ca < reads['last']:
                    reads['bad'].append((ca, ma, cb, mb, reads['last']))
                reads['last'] = ca
                time.sleep(0.003)
        except psycopg2.Error as e:
            errors.append(e)
        finally:
            c.close()

    threads = [threading.Thread(target=seq_writer, daemon=True)]
    threads += [threading.Thread(target=side_writer, args=(k,), daemon=True) for k in (1, 2)]
    rd = threading.Thread(target=reader, daemon=True)
    try:
        for t in threads:
            t.start()
        # a backlog for the workers to share
        rd.start()
        wait_for(lambda: done['seq'] >= ORDER_TXNS // 4 or errors, 120, 'the writer to write a backlog')
        start_source(PG, server)
        threads[0].join(300)
        require(not threads[0].is_alive(), 'the writer did not finish')
        halt.set()
        for t in threads[1:]:
            t.join(30)
        require(not errors, 'errors: %s' % short(errors, 600))
        MDB.query('INSERT INTO %s.hot VALUES (100, 0)' % db)
        wait_for(lambda: PG.query('SELECT 1 FROM %s.hot WHERE id = 100' % db),
                 120, 'the last transaction in PostgreSQL', interval=0.2)
        reader_halt.set()
        rd.join(10)
        require(not reads['bad'], 'a reader saw transactions out of binlog order or in part '
                '(count_a, max_a, count_b, max_b, count before): %s' % short(reads['bad'], 600))
        require(reads['n'] > 20 and reads['last'] > 0,
                'the reader read %d times (last count %d)' % (reads['n'], reads['last']))
        order = {'seq_a': 'id', 'seq_b': 'id', 'hot': 'id', 'nokey': 'a, b', 'side': 'id', 'padded': 'id'}
        for t in tables:
            cols = {'side': 'id, x, y', 'padded': 'rtrim(id), n'}.get(t, '*')
            want = [tuple(str(v) for v in r) for r in
                    MDB.query('SELECT %s FROM %s.%s ORDER BY %s' % (cols, db, t, order[t]))]
            got = [tuple(str(v) for v in r) for r in
                   PG.query('SELECT %s FROM %s.%s ORDER BY %s' % (cols, db, t, order[t]))]
            if want != got:
                diff = [(w, g) for w, g in zip(want, got) if w != g][:3]
                raise CaseFailure('%s.%s differs: MariaDB %d rows, PostgreSQL %d, first '
                                  'differences %s' % (db, t, len(want), len(got), diff))
        ps = parallel_stats(server)
        log('parallel-order: %d sequence transactions, %d side transactions, %d reads, '
            'parallel apply %s' % (done['seq'], done['side'], reads['n'], ps))
        require(ps['max_in_flight'] >= 2, 'no two transactions applied at once: %s' % ps)
        require(ps['key_waits'] > 0, 'no transaction waited for a key: %s' % ps)
        # each keyless or char(n)-key insert is a barrier when the coordinator
        # meets it; the serial round a barrier starts may apply the ones
        # right after it too, uncounted (CI saw 90 of 91): three quarters at
        # least (the old code, with char(n) keys dispatched, counted 31)
        # (a keyless insert in one group commit with all that applies when
        # it comes runs beside it: a hint release, parallel-hint)
        require(ps['barriers'] + ps['hint_releases'] >= (ORDER_TXNS // 97 + ORDER_TXNS // 50) * 3 // 4,
                'the keyless inserts, the char(n) key inserts and the ALTER were not '
                'barriers: %s' % ps)
        require(ps['dispatched'] > ORDER_TXNS // 2, 'few transactions went to workers: %s' % ps)
        return 'max in flight %d, %d dispatched, %d barriers' % (
            ps['max_in_flight'], ps['dispatched'], ps['barriers'])
    finally:
        halt.set()
        reader_halt.set()
        drop_source(server)


# ---------------------------------------------------------------------------
# parallel apply: the source's own hints, the default from the machine

HINT_SESSIONS = 4
HINT_TXNS = int(os.environ.get('BLF_CONV_HINT_TXNS', '40'))     # per session


def hint_writes(db, seed, tag, group_commit, update, sessions=HINT_SESSIONS):
    """
    sessions sessions at once, HINT_TXNS transactions each, into the
    keyless table nokey (rows that repeat across sessions too) and the
    keyed table keyed; update: each transaction also updates keyless rows
    (its own and those of its session's earlier transactions of the same
    number).  group_commit: MariaDB holds each
    commit until HINT_SESSIONS are queued (binlog_commit_wait_count), so
    that the sessions' transactions commit in groups, one group commit id
    each.
    """
    if group_commit:
        MDB.query('SET GLOBAL binlog_commit_wait_usec = 500000')
        MDB.query('SET GLOBAL binlog_commit_wait_count = %d' % HINT_SESSIONS)
    errors = []

    def session(k):
        r = random.Random(seed * 10 + k)
        try:
            c = MDB.connect(db, autocommit=False)
            with c.cursor() as cur:
                # the sessions' updates skip each other's rows
                cur.execute('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED')
                for i in range(1, HINT_TXNS + 1):
                    for j in range(r.randint(1, 3)):
                        cur.execute('INSERT INTO nokey VALUES (%s, %s, %s)', (k, i, '%s-%d' % (tag, j)))
                    cur.execute('INSERT INTO nokey VALUES (0, 0, %s)', ('same',))
                    if update:
                        cur.execute('UPDATE nokey SET v = CONCAT(v, \'+\') WHERE s = %s AND i = %s',
                                    (k, i))
                    cur.execute('INSERT INTO keyed VALUES (%s, %s)', ('%s-%d-%d' % (tag, k, i), i))
                    c.commit()
            c.close()
        except Exception as e:                      # noqa: BLE001
            log(traceback.format_exc())
            errors.append(e)

    threads = [threading.Thread(target=session, args=(k,), daemon=True)
               for k in range(1, sessions + 1)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
    finally:
        MDB.query('SET GLOBAL binlog_commit_wait_count = 0')
        MDB.query('SET GLOBAL binlog_commit_wait_usec = 100000')
    require(not errors, 'writers: %s' % short(errors, 600))
    require(not any(t.is_alive() for t in threads), 'a writer did not finish')


def hint_compare(db):
    """Both tables equal MariaDB's (as multisets: rows sorted here)."""
    for t, cols in (('nokey', 's, i, v'), ('keyed', 'id, n')):
        q = 'SELECT %s FROM %s.%s' % (cols, db, t)
        want = sorted(tuple(str(v) for v in r) for r in MDB.query(q))
        got = sorted(tuple(str(v) for v in r) for r in PG.query(q))
        if want != got:
            diff = [(w, g) for w, g in zip(want, got) if w != g][:3]
            raise CaseFailure('%s.%s differs: MariaDB %d rows, PostgreSQL %d, first '
                              'differences %s' % (db, t, len(want), len(got), diff))


@case('parallel-hint')
def case_parallel_hint(seed):
    """
    apply_workers = 4 on transactions into a keyless table, which only the
    source's own hint lets apply beside others.  Four MariaDB sessions
    write at once with group commit forced (binlog_commit_wait_count):
    transactions of one group commit (one commit id) that apply when only
    their group does are released from their barrier (hint_releases > 0).
    Then one session without group commit (no commit id) and, four with
    group commit again, transactions that also update keyless rows (a row
    found by its values: never released): no release, barriers counted.
    Each time, both tables equal MariaDB's.  At the end: the default of
    binlog_fdw.apply_workers is -1, which means min(8, max(1, nproc - 1))
    apply workers (parallel_apply_stats).
    """
    db = 'cv_par_hint'
    server = 's_par_hint'
    PG.execute('DROP SCHEMA IF EXISTS %s CASCADE' % db)
    PG.execute('DELETE FROM binlog_fdw.table_mapping WHERE server_name = %s', (server,))
    MDB.query('DROP DATABASE IF EXISTS %s' % db)
    MDB.query('CREATE DATABASE %s' % db)
    MDB.query('CREATE TABLE %s.nokey (s INT, i INT, v VARCHAR(40)) ENGINE=InnoDB' % db)
    MDB.query('CREATE TABLE %s.keyed (id VARCHAR(40) NOT NULL PRIMARY KEY, n INT) ENGINE=InnoDB' % db)
    MDB.query('CREATE TABLE %s.mark (id INT NOT NULL PRIMARY KEY) ENGINE=InnoDB' % db)
    create_source(PG, server, MDB.port, next(SERVER_IDS), include='^%s\\.' % db,
                  continuous='true', keyless='full_row')
    PG.query('SELECT source FROM binlog_fdw.snapshot(%s, %s)',
             (server, ['%s.%s' % (db, t) for t in ('nokey', 'keyed', 'mark')]))
    marks = [0]

    def applied():
        marks[0] += 1
        MDB.query('INSERT INTO %s.mark VALUES (%d)' % (db, marks[0]))
        wait_for(lambda: PG.query('SELECT 1 FROM %s.mark WHERE id = %d' % (db, marks[0])),
                 120, 'mark %d in PostgreSQL' % marks[0], interval=0.2)

    try:
        set_apply_workers(PARALLEL_WORKERS)
        # group commits, inserts: released (a backlog first, then streaming)
        hint_writes(db, seed, 'g', True, False)
        start_source(PG, server)
        applied()
        hint_compare(db)
        ps = parallel_stats(server)
        log('parallel-hint: group commit, keyless inserts: %s' % ps)
        require(ps['hint_releases'] > 0, 'no transaction was released by its group commit id: %s' % ps)

        # one session, no group commit: no commit ids, no release
        before = ps
        hint_writes(db, seed + 1, 'n', False, False, sessions=1)
        applied()
        hint_compare(db)
        ps = parallel_stats(server)
        log('parallel-hint: no group commit: %s' % ps)
        require(ps['hint_releases'] == before['hint_releases'],
                'transactions without a group commit id were released: %s, before %s' % (ps, before))
        n = HINT_TXNS
        require(ps['barriers'] - before['barriers'] >= n * 3 // 4,
                '%d keyless transactions made %d barriers' % (n, ps['barriers'] - before['barriers']))

        # group commits, keyless updates: never released
        before = ps
        hint_writes(db, seed + 2, 'u', True, True)
        applied()
        hint_compare(db)
        ps = parallel_stats(server)
        log('parallel-hint: group commit, keyless updates: %s' % ps)
        require(ps['hint_releases'] == before['hint_releases'],
                'transactions updating keyless rows were released: %s, before %s' % (ps, before))
        n = HINT_SESSIONS * HINT_TXNS
        require(ps['barriers'] - before['barriers'] >= n * 3 // 4,
                '%d keyless transactions made %d barriers' % (n, ps['barriers'] - before['barriers']))
        released = ps['hint_releases']

        # the default, from the machine
        set_apply_workers(None)
        nproc = int(subprocess.run(['nproc'], capture_output=True, text=True, check=True).stdout)
        boot = PG.query("SELECT boot_val FROM pg_settings WHERE name = 'binlog_fdw.apply_workers'")[0][0]
        require(boot == '-1', 'the default of binlog_fdw.apply_workers is %s, not -1' % boot)
        ps = parallel_stats(server)
        require(ps['effective_workers'] == min(8, max(1, nproc - 1)),
                'apply_workers -1 means %s workers on %d processors' % (ps['effective_workers'], nproc))
        log('parallel-hint: apply_workers -1 means %d workers (nproc %d)' % (ps['effective_workers'], nproc))

        return '%d released by their group commit id' % released
    finally:
        MDB.query('SET GLOBAL binlog_commit_wait_count = 0')
        MDB.query('SET GLOBAL binlog_commit_wait_usec = 100000')
        set_apply_workers(1)
        drop_source(server)


@case('latency')
def latency(seed, n=2000, rate=1000.0):
    c = Conv('latency', 'continuous', seed, alters=False)
    db = c.db
    try:
        PG.execute('DROP SCHEMA IF EXISTS %s CASCADE' % db)
        PG.execute('DELETE FROM binlog_fdw.table_mapping WHERE server_name = %s', (c.server,))
        MDB.query('DROP DATABASE IF EXISTS %s' % db)
        MDB.query('CREATE DATABASE %s' % db)
        MDB.query('CREATE TABLE %s.t_lat (id INT PRIMARY KEY, t_client DOUBLE NOT NULL, '
                  'note VARCHAR(40))' % db)
        create_source(PG, c.server, MDB.port, next(SERVER_IDS), include='^%s\\.' % db,
                      continuous='true')
        PG.query('SELECT * FROM binlog_fdw.snapshot(%s, %s)', (c.server, ['%s.t_lat' % db]))
        PG.execute('''CREATE FUNCTION %s.notify() RETURNS trigger LANGUAGE plpgsql AS
                      $$BEGIN PERFORM pg_notify('blf_lat', NEW.id::text); RETURN NULL; END$$''' % db)
        PG.execute('CREATE TRIGGER t_lat_notify AFTER INSERT ON %s.t_lat FOR EACH ROW '
                   'EXECUTE FUNCTION %s.notify()' % (db, db))
        # the continuous worker runs with session_replication_role = replica
        # (as a subscription's): only ALWAYS / REPLICA triggers fire there
        PG.execute('ALTER TABLE %s.t_lat ENABLE ALWAYS TRIGGER t_lat_notify' % db)
        c.start()
        ctx = multiprocessing.get_context('fork')
        parent, child = ctx.Pipe()
        lp = ctx.Process(target=_listener, args=(PG.dsn, 'blf_lat', n, 60 + n / rate, child), daemon=True)
        lp.start()
        require(parent.poll(30) and parent.recv() == 'ready', 'the listener did not start')
        conn = MDB.connect(db=db)
        committed = {}
        t0 = time.time()
        try:
            with conn.cursor() as cur:
                for i in range(1, n + 1):
                    t = time.time()
                    cur.execute('INSERT INTO t_lat (id, t_client, note) VALUES (%s, %s, %s)',
                                (i, t, 'row %d' % i))
                    committed[i] = time.time()
                    ahead = i / rate - (time.time() - t0)
                    if ahead > 0:
                        time.sleep(ahead)
        finally:
            conn.close()
        wall = time.time() - t0
        require(parent.poll(90), 'the listener did not report')
        got = parent.recv()
        lp.join(10)
        require(isinstance(got, dict), 'the listener failed: %s' % got)
        missing = [i for i in committed if i not in got]
        lat = sorted((got[i] - committed[i]) * 1000 for i in committed if i in got)

        def pct(p):
            return lat[min(len(lat) - 1, int(p / 100.0 * len(lat)))] if lat else float('nan')
        figures = ('commit -> visible p50 %.1f ms, p99 %.1f ms, max %.1f ms over %d single-row '
                   'transactions at %.0f tx/s' % (pct(50), pct(99), lat[-1] if lat else float('nan'),
                                                   n, n / wall))
        print('# RESULT latency: %s (target %.0f tx/s)' % (figures, rate), flush=True)
        require(not missing, '%d of %d rows never arrived (first %s)' % (len(missing), n, missing[:5]))
        cnt = PG.query('SELECT count(*) FROM %s.t_lat' % db)[0][0]
        require(cnt == n, 'PostgreSQL has %d rows, MariaDB %d' % (cnt, n))
        # the apply worker's counters are this source's (slots are reused)
        wait_for(lambda: (status(c.server).get('applied_rows') or 0) >= n, 10, 'status to count the rows')
        st = status(c.server)
        require((st['applied_transactions'], st['applied_rows']) == (n, n),
                'status shows %s transactions and %s rows applied, the source had %d of each'
                % (st['applied_transactions'], st['applied_rows'], n))
        want = dump_mariadb(MDB, db, ['t_lat'])
        pc = PG.connect()
        try:
            have = dump_postgres(pc, db, ['t_lat'], want)
        finally:
            pc.close()
        diff = compare_dumps(want, have)
        require(diff is None, 'PostgreSQL differs from MariaDB: %s' % diff)
        return figures
    finally:
        c.close()


# ---------------------------------------------------------------------------
# a transaction far larger than the ring

class RssSampler(threading.Thread):
    def __init__(self, pids):
        super().__init__(daemon=True)
        self.pids = pids            # name -> fn returning the pid
        self.peak = {k: {} for k in pids}
        self.first = {k: None for k in pids}
        self.halt = threading.Event()
        self.samples = 0

    def run(self):
        while not self.halt.is_set():
            for k, fn in self.pids.items():
                try:
                    pid = fn()
                except Exception:
                    pid = None
                if not pid:
                    continue
                s = proc_status(pid)
                if not s:
                    continue
                if self.first[k] is None:
                    self.first[k] = s
                for f, v in s.items():
                    self.peak[k][f] = max(self.peak[k].get(f, 0), v)
            self.samples += 1
            self.halt.wait(0.2)

    def stop(self):
        self.halt.set()
        self.join(10)


class Reader(threading.Thread):
    """Counts the target's rows over and over: a reader must see 0 or all."""

    def __init__(self, table):
        super().__init__(daemon=True)
        self.table = table
        self.seen = {}
        self.errors = []
        self.halt = threading.Event()

    def run(self):
        conn = None
        while not self.halt.is_set():
            try:
                if conn is None:
                    conn = PG.connect(app='blf-conv reader')
                with conn.cursor() as cur:
                    cur.execute('SELECT count(*) FROM %s' % self.table)
                    n = cur.fetchone()[0]
                self.seen[n] = self.seen.get(n, 0) + 1
            except psycopg2.Error as e:
                self.errors.append(str(e).strip())
                conn = None
            self.halt.wait(0.1)
        if conn is not None:
            conn.close()

    def stop(self):
        self.halt.set()
        self.join(30)


def binlog_bytes():
    return sum(int(r[1]) for r in MDB.query('SHOW BINARY LOGS'))


def big_checksum_mariadb(db):
    return MDB.query('SELECT count(*), CAST(sum(id) AS CHAR), '
                     'CAST(sum(CONV(SUBSTR(MD5(pad), 1, 8), 16, 10)) AS CHAR) FROM %s.big' % db)[0]


def big_checksum_pg(db):
    r = PG.query("SELECT count(*), sum(id)::text, sum(('x' || substr(md5(pad), 1, 8))::bit(32)::bigint)::text "
                 'FROM %s.big' % db)[0]
    return r


@case('big-transaction')
def big_transaction(seed):
    if SKIP_BIG:
        print('ok - apply-convergence/big-transaction # SKIP BLF_CONV_SKIP_BIG is set', flush=True)
        raise SkipCase()
    db, server = 'cv_big', 's_big'
    row_bytes = 4000
    nrows = BIG_MB * 1024 * 1024 // row_bytes
    ring = PG.query("SELECT pg_size_pretty(setting::bigint * 1024) FROM pg_settings "
                    "WHERE name = 'binlog_fdw.ring_size'")[0][0]
    PG.execute('DROP SCHEMA IF EXISTS %s CASCADE' % db)
    PG.execute('DELETE FROM binlog_fdw.table_mapping WHERE server_name = %s', (server,))
    MDB.query('DROP DATABASE IF EXISTS %s' % db)
    MDB.query('CREATE DATABASE %s' % db)
    # latin1: one byte per character, so the row images are about nrows * row_bytes
    MDB.query('CREATE TABLE %s.big (id INT PRIMARY KEY, pad VARCHAR(%d) NOT NULL) CHARSET latin1'
              % (db, row_bytes))
    create_source(PG, server, MDB.port, next(SERVER_IDS), include='^%s\\.' % db)
    sampler = reader = None
    try:
        PG.query('SELECT * FROM binlog_fdw.snapshot(%s, %s)', (server, ['%s.big' % db]))
        start_source(PG, server)
        # its last row breaks a rule of the target: apply must fail there
        PG.execute('ALTER TABLE %s.big ADD CONSTRAINT blf_last_row CHECK (id <> %d)' % (db, nrows))
        binlog0 = binlog_bytes()
        ins_err = []
        ins_time = []

        def insert():
            try:
                conn = MDB.connect(db=db, autocommit=False)
                try:
                    with conn.cursor() as cur:
                        half = nrows // 2
                        # two statements, one transaction; rows as distinct as md5 makes them
                        cur.execute('INSERT INTO big SELECT seq, REPEAT(MD5(seq), %d) FROM seq_1_to_%d'
                                    % (row_bytes // 32, half))
                        cur.execute('INSERT INTO big SELECT seq, REPEAT(MD5(seq), %d) FROM seq_%d_to_%d'
                                    % (row_bytes // 32, half + 1, nrows))
                    conn.commit()
                    ins_time.append(time.monotonic())
                finally:
                    conn.close()
            except Exception as e:
                ins_err.append(e)
        t0 = time.monotonic()
        ins = threading.Thread(target=insert, daemon=True)
        ins.start()
        apconn = PG.connect(app='blf-conv big apply')
        with apconn.cursor() as cur:
            cur.execute('SELECT pg_backend_pid()')
            apid = cur.fetchone()[0]
        sampler = RssSampler({'worker': lambda: status(server).get('worker_pid'),
                              'apply backend': lambda: apid})
        sampler.start()
        reader = Reader('%s.big' % db)
        reader.start()
        # 1: fails on the last row
        err = res = None
        try:
            with apconn.cursor() as cur:
                cur.execute('SELECT * FROM binlog_fdw.apply(%s, 100000000, 900, 600)', (server,))
                res = cur.fetchone()
        except psycopg2.Error as e:
            err = pg_error_text(e)
        t1 = time.monotonic()
        ins.join(600)
        require(not ins_err, 'the big INSERT failed: %s' % (ins_err[:1],))
        mb = (binlog_bytes() - binlog0) / 1e6
        log('big-transaction: %d rows, %.0f MB of binlog, ring %s; MariaDB committed after %.1fs, '
            'apply failed after %.1fs: %s' % (nrows, mb, ring, (ins_time or [t0])[0] - t0, t1 - t0,
                                              short(err, 600)))
        require(err is not None, 'apply succeeded although the last row violates a constraint: %s' % (res,))
        require('blf_last_row' in err and '%s.big' % db in err and re.search(r'binlog \S+ position \d+', err),
                'unexpected error: %s' % err)
        require('"id":%d' % nrows in err.replace(' ', ''), 'the error does not name the last row\'s key: %s' % err)
        n = PG.query('SELECT count(*) FROM %s.big' % db)[0][0]
        require(n == 0, '%d rows of the failed transaction are visible' % n)
        # 2: fixed, applied whole
        PG.execute('ALTER TABLE %s.big DROP CONSTRAINT blf_last_row' % db)
        t2 = time.monotonic()
        with apconn.cursor() as cur:
            cur.execute('SELECT transactions, rows FROM binlog_fdw.apply(%s, 100000000, 900, 600)', (server,))
            res = cur.fetchone()
        t3 = time.monotonic()
        apconn.close()
        time.sleep(0.5)
        reader.stop()
        sampler.stop()
        log('big-transaction: applied after the fix in %.1fs: %s; the reader counted %s; %d RSS samples'
            % (t3 - t2, res, dict(sorted(reader.seen.items())), sampler.samples))
        require(res[1] == nrows, 'apply() applied %s rows, expected %d' % (res[1], nrows))
        bad = [k for k in reader.seen if k not in (0, nrows)]
        require(not bad, 'a reader saw part of the transaction: counts %s' % sorted(reader.seen))
        require(len(reader.seen) >= 1 and sum(reader.seen.values()) >= 20,
                'the reader hardly ran: %s' % reader.seen)
        a = big_checksum_mariadb(db)
        b = big_checksum_pg(db)
        require([str(x) for x in a] == [str(x) for x in b],
                'content differs: MariaDB (count, sum id, md5 sum) %s, PostgreSQL %s' % (a, b))
        figs = []
        for k in ('worker', 'apply backend'):
            pk = sampler.peak[k]
            f0 = sampler.first[k] or {}
            figs.append('%s RssAnon %d -> peak %d kB (VmHWM %d kB)' % (
                k, f0.get('RssAnon', 0), pk.get('RssAnon', 0), pk.get('VmHWM', 0)))
        print('# RESULT big-transaction: %.0f MB in one transaction through a %s ring: failed attempt '
              '%.0fs, apply after the fix %.0fs; %s' % (mb, ring, t1 - t0, t3 - t2, '; '.join(figs)),
              flush=True)
        figures = '%.0f MB through a %s ring in %.0fs; peak RssAnon: worker %d kB, apply backend %d kB' % (
            mb, ring, t3 - t2, sampler.peak['worker'].get('RssAnon', 0),
            sampler.peak['apply backend'].get('RssAnon', 0))
        for k in ('worker', 'apply backend'):
            pk = sampler.peak[k].get('RssAnon')
            require(pk is not None, 'no RSS sample of the %s' % k)
            require(pk < RSS_LIMIT_KB, "the %s's RssAnon peaked at %d kB (limit %d kB)"
                    % (k, pk, RSS_LIMIT_KB))
        return figures
    finally:
        if reader:
            reader.stop()
        if sampler:
            sampler.stop()
        drop_source(server)
        try:
            PG.execute('DROP SCHEMA IF EXISTS %s CASCADE' % db)
            MDB.query('DROP DATABASE IF EXISTS %s' % db)
        except Exception as e:
            log('big-transaction cleanup: %s' % e)


class SkipCase(Exception):
    pass


# ---------------------------------------------------------------------------

def main(argv):
    patterns = argv[1:]

    def wanted(name):
        return not patterns or any(name == p or name.startswith(p + '/') or name.split('/')[-1] == p
                                   or name.startswith(p) for p in patterns)

    log('seed %d (BLF_CONV_SEED), MariaDB %d, PostgreSQL %d (database %s), %d transactions per case'
        % (SEED, MDB_PORT, PG_PORT, PGDB, TXNS))
    admin = Postgres('conv', PG_PORT)
    if not admin.query('SELECT 1 FROM pg_database WHERE datname = %s', (PGDB,)):
        admin.execute('CREATE DATABASE %s' % PGDB)
    PG.execute('CREATE EXTENSION IF NOT EXISTS binlog_fdw')
    failed = 0
    timings = []
    t_all = time.monotonic()

    cron = None
    if wanted('pg-cron'):
        try:
            cron = CronCase(SEED + 7)
            cron.begin()
        except Exception as e:
            log(traceback.format_exc())
            print('not ok - apply-convergence/pg-cron: %s: %s' % (type(e).__name__, short(str(e), 600)),
                  flush=True)
            failed += 1
            cron = None

    for i, (name, fn) in enumerate(CASES):
        full = 'apply-convergence/' + name
        if not wanted(name):
            continue
        t0 = time.monotonic()
        seed = SEED + 100 * i
        log('---- %s (seed %d)' % (full, seed))
        try:
            # what PostgreSQL "conv" logs from now on is this case's
            # (test/lib/logcheck.py, test/suites/80-apply-convergence.allow)
            PG.execute("DO $$BEGIN RAISE LOG 'blf-case: %s'; END$$" % full)
        except Exception as e:                      # noqa: BLE001
            log('could not mark %s in the server log: %s' % (full, e))
        try:
            figures = fn(seed)
            # figures (benchmarks, not asserted) go on the case line, so
            # that test/run.sh shows them
            print('ok - %s%s' % (full, ' (%s)' % figures if figures else ''), flush=True)
        except SkipCase:
            pass
        except CaseFailure as e:
            failed += 1
            print('not ok - %s: %s' % (full, short(str(e), 1500)), flush=True)
        except Exception as e:
            failed += 1
            log(traceback.format_exc())
            print('not ok - %s: %s: %s' % (full, type(e).__name__, short(str(e).strip(), 800)),
                  flush=True)
        finally:
            try:
                ensure_up(MDB, PG)
            except Exception as e:
                log('after %s: %s' % (name, e))
        timings.append((name, time.monotonic() - t0))
        log('%s: %.1fs' % (full, timings[-1][1]))
        if cron:
            cron.poll()

    if cron:
        t0 = time.monotonic()
        log('---- apply-convergence/pg-cron')
        try:
            cron.finish()
            print('ok - apply-convergence/pg-cron', flush=True)
        except CaseFailure as e:
            failed += 1
            print('not ok - apply-convergence/pg-cron: %s' % short(str(e), 1500), flush=True)
        except Exception as e:
            failed += 1
            log(traceback.format_exc())
            print('not ok - apply-convergence/pg-cron: %s: %s' % (type(e).__name__, short(str(e), 800)),
                  flush=True)
        timings.append(('pg-cron (rest)', time.monotonic() - t0))
    log('timings: ' + ', '.join('%s %.0fs' % t for t in timings) +
        '; total %.0fs' % (time.monotonic() - t_all))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
