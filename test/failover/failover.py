#!/usr/bin/python3
"""
test/failover/failover.py -- a binlog_fdw source with a host list follows a
promoted replica (test/suites/75-failover.sh).

Each case runs on a fresh pair of MariaDB servers: A (primary, server-id 1)
and B (replica of A by GTID, server-id 2, log_slave_updates, read_only),
both with gtid_strict_mode and the row binlog.  The source has host
'A,B'; a writer (test/streaming_faults/blfaults.Writer) writes to A while a
consumer (blfaults.Consumer: get -> record -> ack) consumes.  A is killed
with SIGKILL mid-stream, B is promoted (STOP SLAVE; RESET SLAVE ALL;
read_only off) and the writer goes on on B.  What the consumer
acknowledged must equal the transactions committed, read from B's binlog
by ./binlogcat from the GTID state the source started at: per GTID domain
the same changes in the same order (nothing lost, nothing twice), and the
writer's own counts of transactions and row changes.

Cases (one "ok - failover/NAME" line each):
  switch            two GTID domains; A dies while the worker waits for ring
                    space in the middle of a 15 MB transaction (1 MB ring),
                    so the worker resumes on B by GTID state, skipping the
                    changes of that transaction it had already put; status
                    then shows B and B's binlog positions
  partial-ack       A dies while the durable position is inside a
                    transaction (acked_skip > 0) and PostgreSQL restarts
                    (immediate): the new worker finds A down and resumes on B
                    at the durable GTID state, skipping exactly the
                    acknowledged changes
  replica-behind    B's SQL thread is stopped, so B lacks the last
                    transactions the consumer acknowledged when A dies: the
                    worker reports that B is behind, delivers nothing, and
                    streams from B once B has applied them
  domain-order      B holds A's transactions (same GTIDs) with two domains
                    in another order: a domain-1 transaction before the
                    domain-0 transaction A dies inside of; the worker passes
                    the first over, finishes the second, then reads the
                    first again (no skip applied to the wrong transaction)
  lost-transaction  B stops replicating before a large transaction that the
                    consumer has partly acknowledged; A dies, B is promoted
                    and written to: the worker must not deliver B's
                    transactions (the partly delivered one is not on B) and
                    says so in last_error
  many-domains      a GTID state of 1,600 domains with the longest numbers
                    (67 kB, more than a 16-bit length): status.gtid_state
                    and source_state.gtid_state are A's @@gtid_binlog_pos,
                    whole; a PostgreSQL restart (immediate) while a round in
                    every domain is consumed resumes on A at the whole state;
                    then A dies, B is promoted and written to in every
                    domain: nothing lost or delivered twice in any domain
  rewind            an apply() of a transaction larger than the ring rolls
                    back: the worker streams again from the durable
                    position, read back from source_state with its GTID
                    state of 300 domains; the next apply() leaves exactly
                    A's rows

usage: failover.py [CASE...]

Environment (set by test/suites/75-failover.sh): BLF_FAILOVER_A_PORT
(3531), BLF_FAILOVER_B_PORT (3532), BLF_FAILOVER_PG_PORT (5531; the
cluster "failover", binlog_fdw.ring_size=1MB), BLF_FAILOVER_SEED (7575),
BLF_FAILOVER_DOMAINS (1600, the domains of many-domains),
BLF_SUITE_TMP (scratch: MariaDB data directory templates).
"""

import collections
import os
import random
import re
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..',
                                'streaming_faults'))

from blfaults import (CaseFailure, MariaDB, Postgres, StatusMonitor, Consumer,  # noqa: E402
                      BackgroundWriter, Writer, compare, create_source, ground_truth, log,
                      require, self_check_compare, sh, short, start_source, stop_source,
                      run_cases, summarize, wait_for, RUN, REPL_USER, REPL_PW)
import psycopg2  # noqa: E402
import pymysql  # noqa: E402

A_PORT = int(os.environ.get('BLF_FAILOVER_A_PORT', '3531'))
B_PORT = int(os.environ.get('BLF_FAILOVER_B_PORT', '3532'))
PG_PORT = int(os.environ.get('BLF_FAILOVER_PG_PORT', '5531'))
SEED = int(os.environ.get('BLF_FAILOVER_SEED', '7575'))
TMP = os.environ.get('BLF_SUITE_TMP') or os.path.join(RUN, 'tmp', 'failover')

A = MariaDB('fo-a', A_PORT)
B = MariaDB('fo-b', B_PORT)
PG = Postgres('failover', PG_PORT)
A_LABEL = '127.0.0.1:%d' % A_PORT
B_LABEL = '127.0.0.1:%d' % B_PORT
HOSTS = '%s,%s' % (A_LABEL, B_LABEL)
PG_LOG = os.path.join(RUN, 'pg-failover', 'postgresql.log')

# fast but kill -9 safe: commits reach the OS before they return
COMMON_ARGS = ['--innodb-buffer-pool-size=64M', '--innodb-flush-log-at-trx-commit=2',
               '--sync-binlog=0']
SERVER_ARGS = {
    A: ['--server-id=1'] + COMMON_ARGS,
    B: ['--server-id=2', '--log-slave-updates=1', '--read-only=1'] + COMMON_ARGS,
}

CASES = []


def case(name):
    def register(fn):
        CASES.append((name, fn))
        return fn
    return register


# ---------------------------------------------------------------------------
# the pair of servers

def data_dir(m):
    return os.path.join(RUN, 'mariadb-' + m.name)


def template_dir(m):
    return os.path.join(TMP, 'template-' + m.name)


def make_templates():
    """Initialize A and B once (in parallel); each case starts from copies."""
    errors = []

    def make(m):
        for attempt in (1, 2):
            try:
                t0 = time.monotonic()
                m._sh('start', '--fresh', extra=SERVER_ARGS[m])
                m.stop()
                sh(['rm', '-rf', template_dir(m)])
                sh(['cp', '-a', data_dir(m), template_dir(m)])
                log('template of MariaDB %s made in %.1fs' % (m.name, time.monotonic() - t0))
                return
            except Exception as e:
                log('making the template of MariaDB %s (attempt %d): %s' % (m.name, attempt, e))
                if attempt == 2:
                    errors.append(e)
    threads = [threading.Thread(target=make, args=(m,)) for m in (A, B)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def fresh_pair(replicate=True):
    """A and B from their templates, B replicating A by GTID."""
    for m in (A, B):
        m.destroy()
        sh(['cp', '-a', template_dir(m), data_dir(m)])
        m.start()
    if not replicate:
        return
    B.query("CHANGE MASTER TO master_host = '127.0.0.1', master_port = %s, master_user = %s, "
            "master_password = %s, master_use_gtid = slave_pos, master_connect_retry = 1",
            (A_PORT, REPL_USER, REPL_PW))
    B.query('START SLAVE')
    wait_for(lambda: (lambda s: s and s['Slave_IO_Running'] == 'Yes' and
                      s['Slave_SQL_Running'] == 'Yes')(slave_status(B)), 30,
             'B to replicate A (%s)' % short(slave_status(B)))


def slave_status(m):
    conn = m.connect()
    try:
        with conn.cursor(pymysql.cursors.DictCursor) as cur:
            cur.execute('SHOW SLAVE STATUS')
            return cur.fetchone()
    finally:
        conn.close()


def gtid_pos(m):
    return m.query('SELECT @@global.gtid_binlog_pos')[0][0] or ''


def caught_up():
    return gtid_pos(B) == gtid_pos(A)


def wait_caught_up():
    wait_for(caught_up, 60, 'B to catch up with A (A %s, B %s)' % (gtid_pos(A), gtid_pos(B)))


def promote(m):
    m.query('STOP SLAVE')
    m.query('RESET SLAVE ALL')
    m.query('SET GLOBAL read_only = 0')
    log('%s promoted: gtid_binlog_pos %s' % (m.name, short(gtid_pos(m), 300)))


def kill_a():
    A.stop(kill=True)
    log('A killed (SIGKILL)')


class DomainWriter(Writer):
    """A Writer whose transactions get GTIDs of one replication domain."""

    def __init__(self, mdb, schema, seed, domain):
        super().__init__(mdb, schema, seed)
        self.domain = domain

    def connect(self):
        super().connect()
        with self.conn.cursor() as cur:
            cur.execute('SET SESSION gtid_domain_id = %d' % self.domain)

    def move(self, mdb):
        """Go on writing on another server."""
        self.close()
        self.mdb = mdb


def wait_status(server, cond, timeout, what):
    """Poll the source's status until cond(status); its status on timeout."""
    last = {}

    def probe():
        st = PG.status(server)
        last['st'] = st
        return st if st and cond(st) else None
    try:
        return wait_for(probe, timeout, what)
    except CaseFailure as e:
        raise CaseFailure('%s (status: %s)' % (e, short(last.get('st'), 600)))


# ---------------------------------------------------------------------------
# a transaction larger than what can be in flight: A dies inside it

BLOB_ROW = 256 * 1024


def in_flight_bytes():
    """What TCP may buffer between A and the worker (both directions' maxima)."""
    total = 0
    for f in ('/proc/sys/net/ipv4/tcp_rmem', '/proc/sys/net/ipv4/tcp_wmem'):
        try:
            with open(f) as fh:
                total += int(fh.read().split()[2])
        except (OSError, ValueError, IndexError):
            total += 8 << 20
    return total


def blob_txn_bytes():
    return max(24 << 20, int(1.3 * in_flight_bytes()) + (8 << 20))


def create_blob_table(w):
    w.mdb.query('CREATE TABLE `%s`.t_blob (id INT PRIMARY KEY, b LONGTEXT NOT NULL) '
                'ENGINE=InnoDB' % w.schema)


def blob_transaction(w, nbytes):
    """One transaction of nbytes of rows of 256 kB (counted in the writer)."""
    if w.conn is None:
        w.connect()
    rows = nbytes // BLOB_ROW + 1
    t0 = time.monotonic()
    with w.conn.cursor() as cur:
        for first in range(0, rows, 8):
            batch = []
            for i in range(first, min(rows, first + 8)):
                o = (i * 7919) % 4096
                text = ('%08d' % i) + (w.blob[o:] + w.blob)[:BLOB_ROW - 8]
                batch.append((i + 1, text))
            cur.executemany('INSERT INTO t_blob (id, b) VALUES (%s, %s)', batch)
    w.conn.commit()
    w.txns += 1
    w.changes += rows
    log('%s: a transaction of %d rows, %.0f MB, in %.1fs'
        % (w.schema, rows, rows * BLOB_ROW / 1e6, time.monotonic() - t0))


def inside_blob_txn(consumer):
    """The consumer is inside a transaction of t_blob rows (3 or more)."""
    with consumer.lock:
        d = consumer.delivered
        n = 0
        for i in range(len(d) - 1, -1, -1):
            if d[i][0] == 'begin':
                return n >= 3
            if d[i][0] in ('commit', 'ddl'):
                return False
            n += d[i][2] == 't_blob'
    return False


def pg_log_size():
    try:
        return os.path.getsize(PG_LOG)
    except OSError:
        return 0


def pg_log_since(offset):
    with open(PG_LOG, 'rb') as f:
        f.seek(offset)
        return f.read().decode(errors='replace')


# ---------------------------------------------------------------------------
# consumer gate

class Gate:
    """
    Holds the consumer (in its after-ack hook, so what it holds is
    acknowledged and committed) the first time cond(consumer) is true,
    until released.
    """

    def __init__(self, cond):
        self.cond = cond
        self.reached = threading.Event()
        self.release = threading.Event()

    def hook(self, consumer, batch_id):
        if not self.reached.is_set() and self.cond(consumer):
            log('gate: consumer held with %d changes acknowledged' % consumer.count())
            self.reached.set()
            self.release.wait(180)


def open_txn_rows(consumer):
    """Row changes of the transaction the consumer is inside of (0 if none)."""
    with consumer.lock:
        d = consumer.delivered
        n = 0
        for i in range(len(d) - 1, -1, -1):
            op = d[i][0]
            if op == 'begin':
                return n
            if op in ('commit', 'ddl'):
                return 0
            n += 1
    return 0


# ---------------------------------------------------------------------------
# comparison by GTID domain

def domain_of(change):
    g = change[3] or ''
    return g.split('-')[0] if '-' in g else '?'


def compare_domains(got, want_by_domain):
    """None if got has, per GTID domain, exactly the changes of want in
    the same order; else the first difference."""
    got_d = collections.defaultdict(list)
    for c in got:
        got_d[domain_of(c)].append(c)
    for d in sorted(set(got_d) | set(want_by_domain)):
        diff = compare(got_d.get(d, []), want_by_domain.get(d, []))
        if diff:
            return 'GTID domain %s: %s' % (d, diff)
    return None


def self_check(want_by_domain, rng):
    """The comparison must notice a dropped, a duplicated, a reordered
    change and a change moved to another domain position."""
    for d, want in want_by_domain.items():
        bad = self_check_compare(want, rng)
        if bad:
            return 'domain %s: %s' % (d, bad)
    flat = [c for d in sorted(want_by_domain) for c in want_by_domain[d]]
    if compare_domains(flat, want_by_domain) is not None:
        return 'the comparison refuses the ground truth itself'
    i = rng.randrange(len(flat))
    if compare_domains(flat[:i] + flat[i + 1:], want_by_domain) is None:
        return 'the comparison does not notice a dropped change'
    if compare_domains(flat + [flat[i]], want_by_domain) is None:
        return 'the comparison does not notice a change delivered twice'
    return None


# ---------------------------------------------------------------------------
# the common course of a case

class Run:
    """A fresh pair, writers per domain, a source with host 'A,B', a
    consumer and a status monitor; then the ground truth from B and the
    comparison."""

    def __init__(self, name, seed, server_id, domains=(0,), consumer_kw=None, blob=False):
        self.name = name
        t0 = time.monotonic()
        fresh_pair()
        self.server = 'fo_' + name.replace('-', '_')
        self.writers = []
        for d in domains:
            w = DomainWriter(A, '%s_d%d' % (self.server, d), seed + d, d)
            w.create_schema()
            if blob:
                create_blob_table(w)
            self.writers.append(w)
        wait_caught_up()
        create_source(PG, self.server, A_PORT, server_id, host=HOSTS,
                      include='^%s_d[0-9]+\\.' % self.server)
        start_source(PG, self.server)
        (self.start_state,), = PG.query(
            'SELECT gtid_state FROM binlog_fdw.source_state WHERE server_name = %s',
            (self.server,))
        st = PG.status(self.server)
        log('%s: servers ready and source streaming in %.1fs, from %s at GTID state %s'
            % (name, time.monotonic() - t0, st['source_host'], self.start_state))
        require(self.start_state, 'the source recorded no GTID state at its start')
        require(st['source_host'] == A_LABEL, 'the source streams from %s, not A (%s)'
                % (st['source_host'], A_LABEL))
        self.monitor = StatusMonitor(PG, self.server)
        self.monitor.start()
        self.consumer = Consumer(PG, self.server, **(consumer_kw or {}))
        self.consumer.start()
        self.want = None

    def truth(self):
        """Ground truth per domain: B's binlog from the start state."""
        t0 = time.monotonic()
        self.want = {}
        for w in self.writers:
            t = ground_truth(B_PORT, w.schema, None, None, start='gtid:' + self.start_state)
            rows = sum(1 for c in t if c[0] in ('insert', 'update', 'delete'))
            begins = sum(1 for c in t if c[0] == 'begin')
            doms = set(domain_of(c) for c in t)
            log('%s: ground truth of %s: %d changes (%s); writer: %d transactions, %d row changes'
                % (self.name, w.schema, len(t), summarize(t), w.txns, w.changes))
            require(rows == w.changes and begins == w.txns,
                    "B's binlog has %d transactions with %d row changes of %s, the writer "
                    "committed %d with %d" % (begins, rows, w.schema, w.txns, w.changes))
            require(doms == {str(w.domain)}, 'the transactions of %s are in GTID domains %s'
                    % (w.schema, sorted(doms)))
            self.want[str(w.domain)] = t
        log('%s: ground truth in %.1fs' % (self.name, time.monotonic() - t0))
        return self.want

    def total(self):
        return sum(len(t) for t in self.want.values())

    def finish(self, timeout=120):
        if self.want is None:
            self.truth()
        t0 = time.monotonic()
        how = self.consumer.finish(self.total(), timeout)
        self.monitor.stop()
        got = self.consumer.delivered
        log('%s: consumer %s after %.1fs more: %d changes in %d batches (%d inside a '
            'transaction), %d reconnects' % (self.name, how, time.monotonic() - t0, len(got),
                                            self.consumer.batches, self.consumer.partial_batches,
                                            self.consumer.reconnects))
        diff = compare_domains(got, self.want)
        if diff:
            raise CaseFailure(diff + ('' if how == 'complete' else ' (consumer: %s)' % how))
        bad = self_check(self.want, random.Random(self.total()))
        require(bad is None, bad)

    def check_positions_on_b(self):
        """Idle after the last write: status shows B and B's own end of
        binlog as the read and the acknowledged position."""
        bfile, bpos = B.master_status()
        st = wait_status(self.server, lambda s: s['read_file'] == bfile and s['read_pos'] == bpos,
                         10, "the worker's read position to reach B's end of binlog %s:%d"
                         % (bfile, bpos))
        require(st['source_host'] == B_LABEL, 'status shows source_host %s, not B (%s)'
                % (st['source_host'], B_LABEL))
        require((st['acked_file'], st['acked_pos']) == (bfile, bpos),
                "the acknowledged position %s:%s is not B's end of binlog %s:%d"
                % (st['acked_file'], st['acked_pos'], bfile, bpos))
        require(st['gtid_state'] == gtid_pos(B), 'status gtid_state %s, B is at %s'
                % (st['gtid_state'], gtid_pos(B)))
        log('%s: status after the switch: host %s, read %s:%s, acked %s:%s, GTID state %s'
            % (self.name, st['source_host'], st['read_file'], st['read_pos'], st['acked_file'],
               st['acked_pos'], short(st['gtid_state'], 300)))


def skip_lines(text):
    """(host, state, skip, gtid) of the worker's 'streaming from host' lines."""
    out = []
    for m in re.finditer(r'streaming from host (\S+) \(\d+ of \d+\) at GTID state "([^"]*)"'
                         r'(?:, skipping the first (\d+) changes of transaction (\S+))?', text):
        out.append((m.group(1), m.group(2), int(m.group(3) or 0), m.group(4)))
    return out


# ---------------------------------------------------------------------------
# cases

@case('switch')
def case_switch(seed):
    run = Run('switch', seed, 9501, domains=(0, 1), blob=True,
              consumer_kw=dict(max_changes=500, timeout_ms=300))
    w0, w1 = run.writers
    gate = Gate(inside_blob_txn)
    run.consumer.hook_after_ack = gate.hook
    bw1 = BackgroundWriter(w1, ntxns=120)
    bw1.start()
    # domain 0: a transaction larger than the 1 MB ring plus whatever TCP
    # can hold in flight, so that A dies while the worker is inside it
    w0.run(ntxns=60)
    blob_transaction(w0, blob_txn_bytes())
    w0.run(ntxns=140)
    w0.close()
    bw1.join()
    if bw1.error:
        raise bw1.error
    wait_for(gate.reached.is_set, 60, 'the consumer to get inside the large transaction')
    wait_caught_up()
    wait_status(run.server, lambda s: s['state'] == 'ring full', 20,
                'the worker to wait for ring space')
    st = PG.status(run.server)
    log('switch: A has %s; the worker (%s) read %s:%s, %d changes acknowledged'
        % (gtid_pos(A), st['state'], st['read_file'], st['read_pos'], run.consumer.count()))
    off = pg_log_size()
    kill_a()
    promote(B)
    gate.release.set()
    for w in run.writers:
        w.move(B)
    w0.run(ntxns=100)
    w1.run(ntxns=60)
    for w in run.writers:
        w.close()
    run.finish()
    lines = skip_lines(pg_log_since(off))
    log('switch: worker: %s' % lines)
    require(any(h == B_LABEL and skip > 0 for h, _, skip, _ in lines),
            'the worker did not resume on B inside the large transaction (log: %s)' % lines)
    run.check_positions_on_b()
    require(re.search(r'(^|,)0-2-\d+', PG.status(run.server)['gtid_state']) and
            re.search(r'(^|,)1-2-\d+', PG.status(run.server)['gtid_state']),
            "the GTID state does not hold B's transactions of both domains")
    check_wait_for_streamed_host(run)


def wait_for_null(server, timeout):
    return PG.query('SELECT binlog_fdw.wait_for(%s, NULL, %s)', (server, timeout))[0][0]


def check_wait_for_streamed_host(run):
    """wait_for(server, NULL) of a source with several hosts waits for the
    end of binlog of the host the worker streams from (B), compared by GTID:
    not of the first host of the list (A), which is down and then up again
    but behind B."""
    require(wait_for_null(run.server, 10) is True,
            'wait_for(NULL) is not true with all of B acknowledged (A is down)')
    A.start()
    w = run.writers[0]
    w.run(ntxns=1)
    w.close()
    b_pos = gtid_pos(B)
    wait_status(run.server, lambda s: (s['read_file'], s['read_pos']) == B.master_status(), 20,
                "the worker to read B's new transaction")
    require(wait_for_null(run.server, 1) is False,
            "wait_for(NULL) is true before B's transaction at %s is acknowledged (A is at %s)"
            % (short(b_pos, 200), short(gtid_pos(A), 200)))
    conn = PG.connect(autocommit=False)
    try:
        with conn.cursor() as cur:
            cur.execute('SELECT batch_id FROM binlog_fdw.get(%s, 100000, 2000)', (run.server,))
            rows = cur.fetchall()
            require(rows, "get() returned nothing of B's new transaction")
            cur.execute('SELECT binlog_fdw.ack(%s, %s)', (run.server, rows[0][0]))
        conn.commit()
    finally:
        conn.close()
    require(wait_for_null(run.server, 10) is True,
            "wait_for(NULL) is not true after B's new transaction was acknowledged")
    log('switch: wait_for(NULL) follows B (%s), not A (%s)'
        % (short(b_pos, 200), short(gtid_pos(A), 200)))


@case('partial-ack')
def case_partial_ack(seed):
    run = Run('partial-ack', seed, 9502, consumer_kw=dict(max_changes=50, timeout_ms=300))
    w = run.writers[0]
    gate = Gate(lambda c: open_txn_rows(c) >= 1000)
    run.consumer.hook_after_ack = gate.hook
    w.run(ntxns=80, big=[(0.5, 1500)])
    w.close()
    wait_for(gate.reached.is_set, 60, 'the consumer to get inside the large transaction')
    wait_caught_up()
    (file, pos, skip, gtid, state), = PG.query(
        'SELECT file, pos, skip, gtid, gtid_state FROM binlog_fdw.source_state '
        'WHERE server_name = %s', (run.server,))
    log('partial-ack: durable position %s:%d skip %d in transaction %s, GTID state %s'
        % (file, pos, skip, gtid, state))
    require(skip > 0, 'the durable position is not inside a transaction (skip %d)' % skip)
    kill_a()
    promote(B)
    off = pg_log_size()
    PG.stop('immediate')
    PG.start()
    log('partial-ack: PostgreSQL restarted (immediate stop)')
    gate.release.set()
    wait_status(run.server, lambda s: s['state'] == 'streaming' and s['source_host'] == B_LABEL,
                60, 'the source to stream from B')
    w.move(B)
    w.run(ntxns=60)
    w.close()
    run.finish()
    lines = skip_lines(pg_log_since(off))
    log('partial-ack: worker: %s' % lines)
    require(lines and lines[0] == (B_LABEL, state, skip, gtid),
            'the new worker did not resume on B at the durable position (state %s, skipping '
            '%d changes of %s): %s' % (state, skip, gtid, lines))
    run.check_positions_on_b()


@case('replica-behind')
def case_replica_behind(seed):
    run = Run('replica-behind', seed, 9503, consumer_kw=dict(max_changes=500, timeout_ms=300))
    w = run.writers[0]
    w.run(ntxns=60)
    wait_caught_up()
    B.query('STOP SLAVE SQL_THREAD')
    w.run(ntxns=60)
    w.close()
    a_pos = gtid_pos(A)
    wait_for(lambda: (slave_status(B) or {}).get('Gtid_IO_Pos') == a_pos, 30,
             "B's relay log to hold A's transactions up to %s" % a_pos)
    wait_status(run.server, lambda s: s['gtid_state'] == a_pos and s['changes_unacked'] == 0,
                60, 'the consumer to acknowledge everything up to %s' % a_pos)
    n0 = run.consumer.count()
    b_pos = gtid_pos(B)
    log('replica-behind: %d changes acknowledged up to %s; B is at %s' % (n0, a_pos, b_pos))
    kill_a()
    st = wait_status(run.server, lambda s: s['last_error'] and B_LABEL in s['last_error'] and
                     'behind' in s['last_error'], 30, 'the worker to report that B is behind')
    err = st['last_error']
    log('replica-behind: state %s, last_error: %s' % (st['state'], err))
    require(a_pos in err and b_pos in err, 'last_error does not name our GTID %s and B\'s %s: %s'
            % (a_pos, b_pos, err))
    time.sleep(4)
    st = PG.status(run.server)
    require(run.consumer.count() == n0, '%d changes were delivered while B was behind: %s'
            % (run.consumer.count() - n0, short(run.consumer.delivered[n0:n0 + 3])))
    require(st['state'] in ('reconnecting', 'error', 'connecting'),
            'state %r while no host has our transactions' % st['state'])
    require(st['gtid_state'] == a_pos, 'the position moved while B was behind: %s'
            % st['gtid_state'])
    # B applies its relay log, catches up and takes over
    B.query('START SLAVE SQL_THREAD')
    wait_for(lambda: gtid_pos(B) == a_pos, 30, 'B to apply its relay log up to %s' % a_pos)
    wait_status(run.server, lambda s: s['state'] == 'streaming' and s['source_host'] == B_LABEL,
                60, 'the worker to stream from B')
    promote(B)
    w.move(B)
    w.run(ntxns=60)
    w.close()
    run.finish()
    run.check_positions_on_b()


def run_txn(m, domain, sqls, seq=None):
    """One transaction on m in a GTID domain; seq: as server 1 with that
    sequence number (replaying another server's transaction)."""
    conn = m.connect(autocommit=False)
    try:
        with conn.cursor() as cur:
            cur.execute('SET SESSION gtid_domain_id = %d' % domain)
            if seq is not None:
                cur.execute('SET SESSION server_id = 1, gtid_seq_no = %d' % seq)
            for sql in sqls:
                cur.execute(sql)
        conn.commit()
    finally:
        conn.close()


@case('domain-order')
def case_domain_order(seed):
    t0 = time.monotonic()
    fresh_pair(replicate=False)
    server = 'fo_domain_order'
    d0, d1 = server + '_d0', server + '_d1'
    for m in (A, B):
        conn = m.connect()
        try:
            with conn.cursor() as cur:
                cur.execute('SET SESSION sql_log_bin = 0')
                cur.execute('CREATE DATABASE %s' % d0)
                cur.execute('CREATE TABLE %s.t_blob (id INT PRIMARY KEY, b LONGTEXT NOT NULL)' % d0)
                cur.execute('CREATE DATABASE %s' % d1)
                cur.execute('CREATE TABLE %s.t1 (id INT PRIMARY KEY, v VARCHAR(40))' % d1)
        finally:
            conn.close()
    p0 = ["INSERT INTO %s.t_blob VALUES (0, 'p0')" % d0]
    p1 = ["INSERT INTO %s.t1 VALUES (0, 'p1')" % d1]
    t = ["INSERT INTO %s.t1 VALUES (1, 't')" % d1]
    run_txn(A, 0, p0)
    run_txn(A, 1, p1)
    run_txn(B, 0, p0, seq=1)
    run_txn(B, 1, p1, seq=1)
    require(gtid_pos(A) == gtid_pos(B) == '0-1-1,1-1-1', 'A is at %s, B at %s'
            % (gtid_pos(A), gtid_pos(B)))
    create_source(PG, server, A_PORT, 9505, host=HOSTS, include='^%s_d[01]\\.' % server)
    start_source(PG, server)
    (start_state,), = PG.query('SELECT gtid_state FROM binlog_fdw.source_state '
                               'WHERE server_name = %s', (server,))
    log('domain-order: source streaming in %.1fs at GTID state %s'
        % (time.monotonic() - t0, start_state))
    monitor = StatusMonitor(PG, server)
    monitor.start()
    consumer = Consumer(PG, server, max_changes=50, timeout_ms=300)
    gate = Gate(inside_blob_txn)
    consumer.hook_after_ack = gate.hook
    consumer.start()
    # A: X (domain 0, larger than what is in flight), then T (domain 1);
    # B: the same transactions with the same GTIDs, T first
    nbytes = blob_txn_bytes()
    wa = DomainWriter(A, d0, seed, 0)
    blob_transaction(wa, nbytes)
    wa.close()
    run_txn(A, 1, t)
    run_txn(B, 1, t, seq=2)
    wb = DomainWriter(B, d0, seed, 0)
    wb.connect()
    with wb.conn.cursor() as cur:
        cur.execute('SET SESSION server_id = 1, gtid_seq_no = 2')
    blob_transaction(wb, nbytes)
    wb.close()
    require(gtid_pos(A) == gtid_pos(B) == '0-1-2,1-1-2', 'A is at %s, B at %s'
            % (gtid_pos(A), gtid_pos(B)))
    wait_for(gate.reached.is_set, 60, 'the consumer to get inside the large transaction')
    wait_status(server, lambda s: s['state'] == 'ring full', 20, 'the worker to wait for ring space')
    off = pg_log_size()
    kill_a()
    gate.release.set()
    want = {}
    for schema, dom, n in ((d0, '0', wa.changes), (d1, '1', 1)):
        tr = ground_truth(B_PORT, schema, None, None, start='gtid:' + start_state)
        rows = sum(1 for c in tr if c[0] in ('insert', 'update', 'delete'))
        begins = sum(1 for c in tr if c[0] == 'begin')
        require(rows == n and begins == 1 and set(domain_of(c) for c in tr) == {dom},
                "B's binlog has %d transactions with %d rows of %s in domains %s, expected 1 "
                "with %d in domain %s" % (begins, rows, schema,
                                          sorted(set(domain_of(c) for c in tr)), n, dom))
        want[dom] = tr
    how = consumer.finish(sum(len(x) for x in want.values()), 120)
    monitor.stop()
    got = consumer.delivered
    log('domain-order: consumer %s: %d changes, %d reconnects' % (how, len(got), consumer.reconnects))
    diff = compare_domains(got, want)
    if diff:
        raise CaseFailure(diff + ('' if how == 'complete' else ' (consumer: %s)' % how))
    text = pg_log_since(off)
    lines = skip_lines(text)
    log('domain-order: worker: %s' % lines)
    require(any(h == B_LABEL and skip > 0 and g == '0-1-2' for h, _, skip, g in lines),
            'the worker did not resume on B inside transaction 0-1-2: %s' % lines)
    require('reconnecting to host %s for the transactions of other GTID domains' % B_LABEL
            in text, 'the worker did not come back for the domain-1 transaction it passed over')
    ix = {(c[0], c[3]): i for i, c in enumerate(got)}
    require(ix[('commit', '0-1-2')] < ix[('begin', '1-1-2')],
            'the domain-1 transaction was delivered inside the domain-0 one')
    stop_source(PG, server)


@case('lost-transaction')
def case_lost_transaction(seed):
    run = Run('lost-transaction', seed, 9504, blob=True,
              consumer_kw=dict(max_changes=50, timeout_ms=300))
    w = run.writers[0]
    gate = Gate(inside_blob_txn)
    run.consumer.hook_after_ack = gate.hook
    w.run(ntxns=30)
    wait_caught_up()
    B.query('STOP SLAVE')
    b_pos = gtid_pos(B)
    # larger than the ring and what TCP holds in flight: A dies inside it
    blob_transaction(w, blob_txn_bytes())
    w.run(ntxns=9)
    w.close()
    wait_for(gate.reached.is_set, 60, 'the consumer to get inside the large transaction')
    st = PG.status(run.server)
    lost = st['acked_gtid']
    log('lost-transaction: B stopped at %s; the consumer is inside %s (acked_skip %s); '
        'A is at %s' % (b_pos, lost, st['acked_skip'], gtid_pos(A)))
    require(st['acked_skip'] > 0, 'the acknowledged position is not inside a transaction')
    kill_a()
    promote(B)
    w.move(B)
    w.run(ntxns=20)
    w.close()
    log('lost-transaction: B wrote its own transactions up to %s' % gtid_pos(B))
    gate.release.set()
    st = wait_status(run.server, lambda s: s['last_error'] and lost in s['last_error'] and
                     'not in this server' in s['last_error'], 40,
                     'the worker to report the lost transaction %s' % lost)
    log('lost-transaction: state %s, last_error: %s' % (st['state'], st['last_error']))
    require(B_LABEL in st['last_error'], 'last_error does not name B: %s' % st['last_error'])
    time.sleep(4)
    n = run.consumer.count()
    time.sleep(2)
    st = PG.status(run.server)
    got = run.consumer.delivered
    from_b = [c for c in got if re.match(r'0-2-', c[3] or '')]
    require(not from_b, '%d changes of B\'s own transactions were delivered: %s'
            % (len(from_b), short(from_b[:3])))
    require(run.consumer.count() == n, 'changes are still being delivered')
    require(not any(c[0] == 'commit' and c[3] == lost for c in got),
            'the lost transaction %s was delivered as complete' % lost)
    require(st['state'] in ('reconnecting', 'error', 'connecting'),
            'state %r while no host has the transaction' % st['state'])
    run.monitor.stop()
    stop_source(PG, run.server)


# ---------------------------------------------------------------------------
# a GTID state of many domains

MANY_DOMAINS = int(os.environ.get('BLF_FAILOVER_DOMAINS', '1600'))
# the longest numbers MariaDB takes make GTIDs of 41 bytes: the first
# round's state of 1,600 domains is 67 kB, more than a 16-bit length holds
DOMAIN_BASE = 4000000000
SERVER_BASE = 4000000000
SEQ_BASE = 10 ** 18


def parse_state(text):
    """A MariaDB GTID state as {domain: (server, seq)}; None if it is
    malformed or names a domain twice."""
    out = {}
    for part in (text or '').split(','):
        m = re.fullmatch(r'\s*(\d+)-(\d+)-(\d+)\s*', part)
        if not m or int(m.group(1)) in out:
            return None
        out[int(m.group(1))] = (int(m.group(2)), int(m.group(3)))
    return out


class ManyDomainWriter:
    """Per round, one transaction in each of many GTID domains (domain 0
    and ndomains - 1 others) on table t_dom: two inserts, and from the
    second round on an update of a row of the round before."""

    def __init__(self, mdb, schema, ndomains):
        self.mdb = mdb
        self.schema = schema
        self.domains = [0] + [DOMAIN_BASE + 1000 * i for i in range(ndomains - 1)]
        self.rounds = 0
        self.txns = 0
        self.changes = 0
        self.error = None
        mdb.query('CREATE TABLE `%s`.t_dom (id BIGINT PRIMARY KEY, dom BIGINT NOT NULL, '
                  'r INT NOT NULL, v VARCHAR(40) NOT NULL) ENGINE=InnoDB' % schema)

    def round(self, server_ids=False, seqs=False):
        """server_ids: as servers SERVER_BASE + i (else the server's own
        id); seqs: sequence numbers from SEQ_BASE (else the next ones)."""
        r = self.rounds
        n = len(self.domains)
        t0 = time.monotonic()
        conn = self.mdb.connect(db=self.schema, autocommit=False)
        try:
            with conn.cursor() as cur:
                for i, d in enumerate(self.domains):
                    sets = ['gtid_domain_id = %d' % d]
                    if server_ids:
                        sets.append('server_id = %d' % (SERVER_BASE + i))
                    if seqs:
                        sets.append('gtid_seq_no = %d' % (SEQ_BASE + i))
                    cur.execute('SET SESSION ' + ', '.join(sets))
                    first = (r * n + i) * 2 + 1
                    cur.execute('INSERT INTO t_dom VALUES (%s, %s, %s, %s), (%s, %s, %s, %s)',
                                (first, d, r, 'a%d' % r, first + 1, d, r, 'b%d' % r))
                    changes = 2
                    if r > 0:
                        cur.execute('UPDATE t_dom SET v = %s WHERE id = %s',
                                    ('u%d' % r, ((r - 1) * n + i) * 2 + 1))
                        changes += 1
                    conn.commit()
                    self.txns += 1
                    self.changes += changes
        finally:
            conn.close()
        self.rounds += 1
        log('many-domains: round %d on %s: %d transactions in %d domains in %.1fs'
            % (r + 1, self.mdb.name, n, n, time.monotonic() - t0))

    def round_in_background(self, **kw):
        def run():
            try:
                self.round(**kw)
            except Exception as e:  # reported by the case
                self.error = e
        t = threading.Thread(target=run, daemon=True)
        t.start()
        return t


def check_whole_state(run, m, what, min_len=0):
    """Once everything is acknowledged: status.gtid_state and
    source_state.gtid_state are m's @@gtid_binlog_pos, whole."""
    want = parse_state(gtid_pos(m))
    require(want and len(want) >= MANY_DOMAINS, '%s has only %d GTID domains: %s'
            % (m.name, len(want or {}), short(gtid_pos(m))))
    last = {}

    def probe():
        st = PG.status(run.server)
        last['st'] = st
        return st if st and st['changes_unacked'] == 0 and \
            parse_state(st['gtid_state']) == want else None
    try:
        st = wait_for(probe, 180, 'the consumer to acknowledge %s (%s)' % (what, m.name))
    except CaseFailure as e:
        got = (last.get('st') or {}).get('gtid_state') or ''
        raise CaseFailure('%s: status.gtid_state has %d bytes, %s has %d (status %s ... %s)'
                          % (e, len(got), m.name, len(gtid_pos(m)), short(got[:200], 200),
                             short(got[-80:], 80)))
    (durable,), = PG.query('SELECT gtid_state FROM binlog_fdw.source_state '
                           'WHERE server_name = %s', (run.server,))
    require(durable == st['gtid_state'], 'source_state.gtid_state (%d bytes) is not '
            'status.gtid_state (%d bytes)' % (len(durable or ''), len(st['gtid_state'])))
    require(len(durable) >= min_len, 'the GTID state has %d bytes, expected %d or more'
            % (len(durable), min_len))
    doms = [int(x.split('-')[0]) for x in durable.split(',')]
    require(doms == sorted(doms), 'the GTID state does not list its domains in order')
    log('many-domains: %s: the GTID state (%d domains, %d bytes) is %s\'s @@gtid_binlog_pos'
        % (what, len(want), len(durable), m.name))


@case('many-domains')
def case_many_domains(seed):
    run = Run('many-domains', seed, 9506, consumer_kw=dict(max_changes=2000, timeout_ms=300))
    mw = ManyDomainWriter(A, run.writers[0].schema, MANY_DOMAINS)
    mw.round(server_ids=True, seqs=True)
    check_whole_state(run, A, 'the first round', min_len=1 << 16)

    # a PostgreSQL restart (immediate) while the second round is written
    # and consumed: the worker resumes on A at the durable state of all
    # domains
    n0 = run.consumer.count()
    bw = mw.round_in_background(server_ids=True)
    wait_for(lambda: run.consumer.count() >= n0 + 1500 or not bw.is_alive(), 120,
             'the consumer to get part of the second round')
    off = pg_log_size()
    PG.stop('immediate')
    PG.start()
    log('many-domains: PostgreSQL restarted (immediate) with %d changes acknowledged'
        % run.consumer.count())
    bw.join(300)
    if mw.error:
        raise mw.error
    wait_status(run.server, lambda s: s['state'] == 'streaming', 60, 'the source to stream again')
    check_whole_state(run, A, 'the second round, across the restart')
    lines = skip_lines(pg_log_since(off))
    require(lines and lines[0][0] == A_LABEL and len(parse_state(lines[0][1]) or {}) > 1000,
            'the new worker did not resume on A by the GTID state of every domain: %s'
            % short(lines, 300))

    # a failover: A dies, B is promoted and written to in every domain
    wait_caught_up()
    off = pg_log_size()
    kill_a()
    promote(B)
    mw.mdb = B
    mw.round()
    want = collections.defaultdict(list)
    for c in ground_truth(B_PORT, mw.schema, None, None, start='gtid:' + run.start_state):
        want[domain_of(c)].append(c)
    rows = sum(1 for t in want.values() for c in t if c[0] in ('insert', 'update', 'delete'))
    begins = sum(1 for t in want.values() for c in t if c[0] == 'begin')
    require(rows == mw.changes and begins == mw.txns,
            "B's binlog has %d transactions with %d row changes, the writer committed %d with %d"
            % (begins, rows, mw.txns, mw.changes))
    run.want = dict(want)
    run.finish(timeout=240)
    lines = skip_lines(pg_log_since(off))
    require(any(h == B_LABEL for h, _, _, _ in lines),
            'the worker did not resume on B: %s' % short(lines, 300))
    check_whole_state(run, B, 'the round on B, after the failover')
    run.check_positions_on_b()


@case('rewind')
def case_rewind(seed):
    """An apply() that took a transaction larger than the ring (its ring
    space released as it went) rolls back: the worker rewinds to the
    durable position, read back from source_state with its GTID state of
    many domains, and the next apply() leaves the source's rows exactly."""
    fresh_pair()
    server = 'fo_rewind'
    db = server + '_d'
    ndomains = 300
    A.query('CREATE DATABASE %s' % db)
    A.query('CREATE TABLE %s.t (id BIGINT PRIMARY KEY, dom BIGINT NOT NULL, v LONGTEXT NOT NULL) '
            'ENGINE=InnoDB' % db)
    wait_caught_up()
    create_source(PG, server, A_PORT, 9507, host=HOSTS, include='^%s\\.' % db)
    PG.execute('SELECT * FROM binlog_fdw.snapshot(%s, ARRAY[%s])', (server, db + '.t'))
    start_source(PG, server)

    def write(sqls, domain, server_id):
        conn = A.connect(db=db, autocommit=False)
        try:
            with conn.cursor() as cur:
                cur.execute('SET SESSION gtid_domain_id = %d, server_id = %d' % (domain, server_id))
                for sql, args in sqls:
                    cur.execute(sql, args)
            conn.commit()
        finally:
            conn.close()

    def apply(cur, max_seconds=30, wait=5):
        cur.execute('SELECT transactions, rows FROM binlog_fdw.apply(%s, 100000, %s, %s)',
                    (server, max_seconds, wait))
        return cur.fetchone()

    for i in range(ndomains):
        d = DOMAIN_BASE + 1000 * i
        write([("INSERT INTO t VALUES (%s, %s, 'small')", (i + 1, d))], d, SERVER_BASE + i)
    pg = PG.connect(autocommit=True)
    try:
        with pg.cursor() as cur:
            wait_for(lambda: apply(cur, wait=1) is not None and
                     len(parse_state(PG.status(server)['gtid_state']) or {}) == ndomains + 1,
                     60, 'apply() to take the %d small transactions' % ndomains)
    finally:
        pg.close()
    # larger than the 1 MB ring: apply() releases its space as it goes
    write([('INSERT INTO t VALUES (%s, 7, %s)', (100000 + k, ('%06d' % k) * 43691))
           for k in range(16)], 7, 1)
    off = pg_log_size()
    pg = PG.connect(autocommit=False)
    try:
        with pg.cursor() as cur:
            t, r = apply(cur, max_seconds=60, wait=10)
            require((t, r) == (1, 16), 'apply() of the large transaction applied %s transactions '
                    'and %s rows, expected 1 and 16' % (t, r))
        pg.rollback()
    finally:
        pg.close()
    a_pos = gtid_pos(A)
    wait_for(lambda: 'streaming again from the durable position' in pg_log_since(off), 30,
             'the worker to rewind to the durable position')
    pg = PG.connect(autocommit=True)
    try:
        with pg.cursor() as cur:
            wait_for(lambda: apply(cur, wait=1)[0] == 0 and
                     parse_state(PG.status(server)['gtid_state']) == parse_state(a_pos), 60,
                     'apply() to take the large transaction again')
    finally:
        pg.close()
    st = PG.status(server)
    (durable,), = PG.query('SELECT gtid_state FROM binlog_fdw.source_state WHERE server_name = %s',
                           (server,))
    require(durable == st['gtid_state'], 'source_state.gtid_state is not status.gtid_state')
    got = [tuple(r) for r in PG.query('SELECT id, dom, md5(v) FROM %s.t ORDER BY id' % db)]
    want = [tuple(r) for r in A.query('SELECT id, dom, MD5(v) FROM %s.t ORDER BY id' % db)]
    require(got == want, 'PostgreSQL has %d rows, A %d; first difference: %s'
            % (len(got), len(want), next(((g, w) for g, w in zip(got, want) if g != w),
                                         'in length')))
    log('rewind: %d rows equal after the rollback and the next apply(); GTID state of %d '
        'domains, %d bytes' % (len(got), ndomains + 2, len(durable)))
    stop_source(PG, server)


@case('apply-after-failover')
def case_apply_after_failover(seed):
    """A table copied by snapshot() on A, applied with apply(), then A dies
    and B is promoted: B's changes are applied, none skipped as "in the
    copy".  The copy's position is a place in A's binlog; B's binlog files
    have other names and offsets (A's were flushed past B's), so comparing
    a change on B with it by binlog position says nothing."""
    fresh_pair()
    server = 'fo_applyfo'
    db = server + '_d'
    A.query('CREATE DATABASE %s' % db)
    A.query('CREATE TABLE %s.t (id INT PRIMARY KEY, v VARCHAR(40) NOT NULL) ENGINE=InnoDB' % db)
    A.query('INSERT INTO %s.t VALUES (1, %%s), (2, %%s), (3, %%s)' % db, ('a1', 'a2', 'a3'))
    for _ in range(4):
        A.query('FLUSH BINARY LOGS')
    wait_caught_up()
    create_source(PG, server, A_PORT, 9508, host=HOSTS, include='^%s\\.' % db)
    PG.execute('SELECT * FROM binlog_fdw.snapshot(%s, ARRAY[%s])', (server, db + '.t'))
    start_source(PG, server)

    def apply_all(m):
        want = gtid_pos(m)
        pg = PG.connect(autocommit=True)
        try:
            with pg.cursor() as cur:
                def step():
                    cur.execute('SELECT transactions FROM binlog_fdw.apply(%s, 100000, 10, 1)',
                                (server,))
                    cur.fetchone()
                    return parse_state(PG.status(server)['gtid_state']) == parse_state(want)
                wait_for(step, 60, 'apply() to reach %s of %s' % (want, m.name))
        finally:
            pg.close()

    def compare(m, what):
        got = [tuple(r) for r in PG.query('SELECT id, v FROM %s.t ORDER BY id' % db)]
        want = [tuple(r) for r in m.query('SELECT id, v FROM %s.t ORDER BY id' % db)]
        require(got == want, '%s: PostgreSQL has %s, %s has %s' % (what, got, m.name, want))
        return len(got)

    A.query("INSERT INTO %s.t VALUES (4, 'a4')" % db)
    A.query("UPDATE %s.t SET v = 'a1-upd' WHERE id = 1" % db)
    # t2 is copied while the source streams, after changes of it that
    # apply() has not taken yet: by GTID, they are in the copy (applied
    # again, the inserts would meet their own rows)
    A.query('CREATE TABLE %s.t2 (id INT PRIMARY KEY, v VARCHAR(40) NOT NULL) ENGINE=InnoDB' % db)
    A.query("INSERT INTO %s.t2 VALUES (1, 'x1'), (2, 'x2')" % db)
    A.query("UPDATE %s.t2 SET v = 'x2-upd' WHERE id = 2" % db)
    a_end = A.master_status()
    wait_status(server, lambda s: (s['read_file'], s['read_pos']) == a_end, 20,
                "the worker to read A's changes of t2")
    PG.execute('SELECT * FROM binlog_fdw.snapshot(%s, ARRAY[%s])', (server, db + '.t2'))
    A.query("INSERT INTO %s.t2 VALUES (3, 'x3')" % db)
    apply_all(A)
    compare(A, 'on A')
    got2 = [tuple(r) for r in PG.query('SELECT id, v FROM %s.t2 ORDER BY id' % db)]
    want2 = [tuple(r) for r in A.query('SELECT id, v FROM %s.t2 ORDER BY id' % db)]
    require(got2 == want2, 't2 on A: PostgreSQL has %s, A has %s' % (got2, want2))
    wait_caught_up()
    (sync_file, sync_pos), = PG.query('SELECT sync_file, sync_pos FROM binlog_fdw.table_mapping '
                                      "WHERE server_name = %s AND source_table = 't'", (server,))
    kill_a()
    promote(B)
    B.query("INSERT INTO %s.t VALUES (5, 'b5')" % db)
    B.query("UPDATE %s.t SET v = 'b2-upd' WHERE id = 2" % db)
    B.query('DELETE FROM %s.t WHERE id = 3' % db)
    apply_all(B)
    st = PG.status(server)
    require(st['source_host'] == B_LABEL, 'the worker streams from %s, not B' % st['source_host'])
    n = compare(B, 'after the failover')
    B.query("UPDATE %s.t2 SET v = 'y1' WHERE id = 1" % db)
    apply_all(B)
    got2 = [tuple(r) for r in PG.query('SELECT id, v FROM %s.t2 ORDER BY id' % db)]
    want2 = [tuple(r) for r in B.query('SELECT id, v FROM %s.t2 ORDER BY id' % db)]
    require(got2 == want2, 't2 after the failover: PostgreSQL has %s, B has %s' % (got2, want2))
    log('apply-after-failover: %d rows equal to B; the copy was at %s:%s of A, B is at %s:%s'
        % (n, sync_file, sync_pos, st['read_file'], st['read_pos']))
    # verify() applies exactly up to a binlog position: refused here
    try:
        PG.query('SELECT * FROM binlog_fdw.verify(%s, ARRAY[%s])', (server, db + '.t'))
        raise CaseFailure('verify() of a source with two hosts did not fail')
    except psycopg2.Error as e:
        require(e.pgcode == '0A000' and 'needs one host' in str(e),
                'verify() of a source with two hosts: %s %s' % (e.pgcode, str(e).strip()))
    # a chunked load places changes by binlog position: refused here
    try:
        PG.execute('CALL binlog_fdw.load(%s, ARRAY[%s])', (server, db + '.t'))
        raise CaseFailure('load() of a source with two hosts did not fail')
    except psycopg2.Error as e:
        require(e.pgcode == '0A000' and 'a chunked load needs one' in str(e),
                'load() of a source with two hosts: %s %s' % (e.pgcode, str(e).strip()))
    stop_source(PG, server)


# ---------------------------------------------------------------------------

def drop_all_sources():
    try:
        for (name,) in PG.query("SELECT srvname FROM pg_foreign_server s JOIN "
                                "pg_foreign_data_wrapper w ON w.oid = s.srvfdw "
                                "WHERE w.fdwname = 'binlog_fdw'"):
            stop_source(PG, name)
    except psycopg2.Error as e:
        log('cleanup: %s' % e)


def ensure_pg():
    try:
        PG.query('SELECT 1')
    except Exception:
        log('restarting PostgreSQL "failover"')
        PG.start()


def main(argv):
    patterns = argv[1:]
    log('seed %d (BLF_FAILOVER_SEED), MariaDB A %d, B %d, PostgreSQL %d, tmp %s'
        % (SEED, A_PORT, B_PORT, PG_PORT, TMP))
    os.makedirs(TMP, exist_ok=True)
    PG.execute('CREATE EXTENSION IF NOT EXISTS binlog_fdw')
    make_templates()
    total_t0 = time.monotonic()
    failed, timings = run_cases(
        'failover', CASES, SEED,
        lambda name: not patterns or any(name.startswith(p) for p in patterns),
        lambda: (ensure_pg(), drop_all_sources()), pg=PG)
    log('timings: ' + ', '.join('%s %.0fs' % t for t in timings) +
        '; total %.0fs' % (time.monotonic() - total_t0))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
