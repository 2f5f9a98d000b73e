#!/usr/bin/python3
"""
test/operations/operations.py -- nothing is lost through what a DBA does
(issue #9): every case drives a live source on a throwaway MariaDB through
an operation on the PostgreSQL side and checks what PostgreSQL then holds
against what MariaDB holds (the typed workload of test/apply/workload.py,
compared table by table, row by row), or the exact changes delivered.

Cases (one "ok - operations/NAME" line each):
  start-in-transaction  BEGIN; CREATE SERVER; CREATE USER MAPPING; start();
                        COMMIT streams (its worker sees the server); the same
                        rolled back starts nothing, nor does start() of an
                        existing server rolled back
  stop-rolled-back      stop() rolled back: the same worker streams on; a
                        committed stop() ends it
  drop-server-at-commit DROP SERVER rolled back: the source streams on;
                        committed: its worker is gone within seconds and a
                        new server with the same server_id streams at once,
                        without a server_id clash
  drop-extension-at-commit
                        the same for DROP EXTENSION binlog_fdw CASCADE (the
                        extension's own event trigger goes with it)
  drop-create-same-name DROP SERVER, writes, CREATE SERVER of the same name:
                        it starts at its "start" option (current), never at
                        the dropped server's position (no replay, no skip
                        of what follows)
  rename                ALTER SERVER ... RENAME of a continuous source while
                        it streams; writes; a restart; the tables equal
                        MariaDB's, and position, start and table mappings
                        carry the new name
  orphan                a position whose server was dropped while the drop
                        trigger was disabled: shown as "orphaned" in the
                        status view, kept when another source starts, and
                        reported in the server log at the next start
  dump-restore          pg_dump -Fc after acknowledged changes, more writes
                        on MariaDB, pg_restore into a fresh cluster (other
                        OIDs), start(), apply(): tables equal MariaDB's
  pg-upgrade            a continuous source; clean stop; more writes;
                        pg_upgrade 15 -> 15 into a new data directory; the
                        upgraded cluster starts the source by itself and its
                        tables equal MariaDB's
  standby-promotion     a standby made with pg_basebackup -R before the
                        sources were started (two databases); the primary
                        killed while a writer writes; the standby, promoted,
                        runs both sources and its tables equal MariaDB's
  upgrade-0.1           0.1 (its SQL and library from git, prepared by
                        test/suites/78-operations.sh): a source streams; the
                        0.2 library replaces 0.1's and the server restarts
                        (the source streams on, the extension still at 0.1);
                        ALTER EXTENSION binlog_fdw UPDATE while it streams; a
                        restart; tables equal MariaDB's; and a schema-only
                        dump of an updated 0.1 equals a fresh 0.2 install

usage: operations.py [CASE...]   (default all)

Environment (set by test/suites/78-operations.sh):
  BLF_OPS_MARIADB_PORT (3471)  MariaDB "ops" (started by the suite)
  BLF_OPS_PG_PORT (5471)       PostgreSQL clusters ops-a, ops-b, ops-u on
                               this port and the next two
  BLF_OPS_TREE                 a private PostgreSQL tree for upgrade-0.1,
                               with 0.1's SQL script and library installed
  BLF_OPS_NEW_SO               the 0.2 library to swap in
  BLF_OPS_SEED                 base seed (9090)
"""

import os
import shutil
import subprocess
import sys
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'streaming_faults'))
sys.path.insert(0, os.path.join(HERE, '..', 'apply'))

import psycopg2  # noqa: E402
import psycopg2.extras  # noqa: E402

from blfaults import (CaseFailure, MariaDB, Postgres, create_source, log, require,  # noqa: E402
                      run_cases, short, wait_for, PG_SOCKET_DIR, POSTGRES_SH, RUN, LIVE)
from workload import (TABLE_NAMES, TypedWriter, compare_dumps, count_rows,  # noqa: E402
                      dump_mariadb, dump_postgres)

MDB_PORT = int(os.environ.get('BLF_OPS_MARIADB_PORT', '3471'))
PG_PORT = int(os.environ.get('BLF_OPS_PG_PORT', '5471'))
SEED = int(os.environ.get('BLF_OPS_SEED', '9090'))
BINDIR = os.environ.get('BLF_PG_BINDIR', '/usr/lib/postgresql/15/bin')
TREE = os.environ.get('BLF_OPS_TREE', '')
NEW_SO = os.environ.get('BLF_OPS_NEW_SO', '')
TMP = os.environ.get('BLF_SUITE_TMP') or os.path.join(RUN, 'tmp', '78-operations')
DB = 'blf_ops'

MDB = MariaDB('ops', MDB_PORT)
CASES = []
SERVER_IDS = iter(range(9701, 9899))


def case(name):
    def register(fn):
        CASES.append((name, fn))
        return fn
    return register


# ---------------------------------------------------------------------------
# PostgreSQL clusters

def as_postgres(args, cwd=None, timeout=600, check=True):
    """Run a PostgreSQL program as the postgres user."""
    cmd = (['runuser', '-u', 'postgres', '--'] if os.getuid() == 0 else []) + list(args)
    p = subprocess.run(cmd, cwd=cwd or '/', stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=timeout)
    if check and p.returncode != 0:
        tail = (p.stdout + p.stderr).strip().splitlines()[-25:]
        raise RuntimeError('%s: exit %d\n%s' % (' '.join(args[:2]), p.returncode, '\n'.join(tail)))
    return p


class Cluster(Postgres):
    """A throwaway cluster (scripts/postgres.sh) of its own binaries, with
    binlog_fdw alone preloaded; connections go to database blf_ops."""

    logs = 0

    def __init__(self, name, port, bindir=BINDIR):
        super().__init__(name, port)
        self.bindir = bindir
        self.data = os.path.join(RUN, 'pg-' + name)
        self.dsn = 'host=%s port=%d user=postgres dbname=%s' % (PG_SOCKET_DIR, port, DB)

    def _sh(self, action, *args, extra=None, timeout=180):
        cmd = ['bash', POSTGRES_SH, action, '--name', self.name, '--port', str(self.port)] + list(args)
        if extra is not None:
            cmd += ['--'] + list(extra)
        env = dict(os.environ, BLF_PG_BINDIR=self.bindir, BLF_PG_PRELOAD='binlog_fdw')
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=timeout, env=env)
        if p.returncode != 0:
            tail = (p.stdout + p.stderr).strip().splitlines()[-15:]
            raise RuntimeError('postgres.sh %s %s: exit %d\n%s' % (action, self.name, p.returncode,
                                                                   '\n'.join(tail)))
        return p

    def fresh(self, extension=True):
        """A new cluster with database blf_ops (and the extension)."""
        self.keep_log()
        self._sh('start', '--fresh')
        self.admin('CREATE DATABASE %s' % DB)
        if extension:
            self.execute('CREATE EXTENSION binlog_fdw')

    def destroy(self):
        self.keep_log()
        self._sh('destroy')

    def keep_log(self):
        """A copy of the server log in the suite's directory (numbered)."""
        src = os.path.join(self.data, 'postgresql.log')
        if not os.path.exists(src):
            return
        Cluster.logs += 1
        try:
            shutil.copyfile(src, os.path.join(TMP, 'pg-%s-%02d.log' % (self.name, Cluster.logs)))
        except OSError as e:
            log('could not keep %s: %s' % (src, e))

    def admin(self, sql, args=None):
        conn = psycopg2.connect(self.dsn.replace('dbname=%s' % DB, 'dbname=postgres'))
        conn.autocommit = True
        try:
            with conn.cursor() as cur:
                cur.execute(sql, args)
                return cur.fetchall() if cur.description else None
        finally:
            conn.close()

    def connect(self, autocommit=True, app='blf-ops', db=None):
        dsn = self.dsn if db is None else self.dsn.replace('dbname=%s' % DB, 'dbname=%s' % db)
        conn = psycopg2.connect(dsn, application_name=app, connect_timeout=10)
        conn.autocommit = autocommit
        return conn

    def query(self, sql, args=None, db=None):
        conn = self.connect(db=db)
        try:
            with conn.cursor() as cur:
                cur.execute(sql, args)
                return cur.fetchall() if cur.description else None
        finally:
            conn.close()

    def execute(self, sql, args=None, db=None):
        self.query(sql, args, db=db)

    def status(self, server, db=None):
        conn = self.connect(db=db)
        try:
            with conn.cursor(cursor_factory=psycopg2.extras.RealDictCursor) as cur:
                cur.execute('SELECT * FROM binlog_fdw.status WHERE server = %s', (server,))
                row = cur.fetchone()
                return dict(row) if row else None
        finally:
            conn.close()

    def log_text(self):
        try:
            with open(os.path.join(self.data, 'postgresql.log'), errors='replace') as f:
                return f.read()
        except OSError:
            return ''

    def source_workers(self, db=None):
        """pids of the streaming workers (of a database, or all)."""
        rows = self.admin("SELECT pid, datname FROM pg_stat_activity WHERE backend_type = 'binlog_fdw source'")
        return [r[0] for r in rows if db is None or r[1] == db]

    def server_oid(self, name, db=None):
        r = self.query('SELECT oid FROM pg_foreign_server WHERE srvname = %s', (name,), db=db)
        return r[0][0] if r else None


A = Cluster('ops-a', PG_PORT)
B = Cluster('ops-b', PG_PORT + 1)
U = Cluster('ops-u', PG_PORT + 2, bindir=os.path.join(TREE, 'usr/lib/postgresql/15/bin') if TREE else BINDIR)


# ---------------------------------------------------------------------------
# helpers

def state(pg, server, db=None):
    try:
        return pg.status(server, db=db) or {}
    except psycopg2.Error:
        return {}


def wait_streaming(pg, server, timeout=60, db=None):
    def ok():
        s = state(pg, server, db)
        return s if s.get('state') == 'streaming' and s.get('worker_pid') else None
    try:
        return wait_for(ok, timeout, 'source %s to stream' % server)
    except CaseFailure:
        raise CaseFailure('source %s does not stream after %ds (status: %s)' % (
            server, timeout, short(state(pg, server, db), 500)))


def stays(fn, seconds, what):
    """fn() must stay true for `seconds` (a window to observe a negative);
    what() says what was wrong."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not fn():
            raise CaseFailure(what())
        time.sleep(0.1)


def mdb_exec(sql, db=None):
    conn = MDB.connect(db=db)
    try:
        with conn.cursor() as cur:
            for s in ([sql] if isinstance(sql, str) else sql):
                cur.execute(s)
            return cur.fetchall()
    finally:
        conn.close()


def get_ids(pg, server, want, timeout=30, db=None):
    """get() and ack() until `want` inserted ids came (or the timeout);
    the ids of the inserts delivered, in order."""
    conn = pg.connect(db=db)
    got = []
    deadline = time.monotonic() + timeout
    try:
        while len(got) < want and time.monotonic() < deadline:
            with conn.cursor() as cur:
                cur.execute("SELECT batch_id, op, (after->>'id')::int FROM binlog_fdw.get(%s, 1000, 500)",
                            (server,))
                rows = cur.fetchall()
                for r in rows:
                    if r[1] == 'insert':
                        got.append(r[2])
                for b in sorted({r[0] for r in rows}):
                    cur.execute('SELECT binlog_fdw.ack(%s, %s)', (server, b))
    finally:
        conn.close()
    return got


def simple_table(db):
    mdb_exec(['DROP DATABASE IF EXISTS `%s`' % db, 'CREATE DATABASE `%s`' % db,
              'CREATE TABLE `%s`.t (id INT PRIMARY KEY, v INT)' % db])


def insert_ids(db, ids):
    mdb_exec('INSERT INTO `%s`.t VALUES %s' % (db, ', '.join('(%d, %d)' % (i, i) for i in ids)))


def new_source(pg, name, include, db=None, **opts):
    sid = next(SERVER_IDS)
    target = pg if db is None else _DbView(pg, db)
    create_source(target, name, MDB.port, sid, include=include, **opts)
    return sid


class _DbView:
    """A cluster seen through another database (for create_source)."""

    def __init__(self, pg, db):
        self.pg = pg
        self.db = db

    def connect(self, autocommit=True):
        return self.pg.connect(autocommit=autocommit, db=self.db)


class Typed:
    """A typed workload database on MariaDB synced into one cluster."""

    def __init__(self, pg, db, server, seed, continuous=False, pgdb=None):
        self.pg = pg
        self.db = db
        self.server = server
        self.pgdb = pgdb
        self.writer = TypedWriter(MDB, db, seed, alters=False)
        self.continuous = continuous
        self.server_id = None

    def setup(self, initial_rows=80):
        self.writer.create(initial_rows)
        opts = {'continuous': 'true'} if self.continuous else {}
        self.server_id = new_source(self.pg, self.server, '^%s\\.' % self.db, db=self.pgdb, **opts)
        rows = self.pg.query('SELECT source, rows, snapshot_position FROM binlog_fdw.snapshot(%s, %s)',
                             (self.server, ['%s.%s' % (self.db, t) for t in TABLE_NAMES]), db=self.pgdb)
        log('%s: snapshot of %d rows at %s' % (self.db, sum(r[1] for r in rows), rows[0][2]))

    def start(self):
        self.pg.execute('SELECT binlog_fdw.start(%s)', (self.server,), db=self.pgdb)
        wait_streaming(self.pg, self.server, db=self.pgdb)

    def write(self, ntxns):
        self.writer.run(ntxns=ntxns)

    def marker_seen(self, n, pg=None):
        try:
            return bool((pg or self.pg).query('SELECT 1 FROM %s.t_mark WHERE id = %%s' % self.db, (n,),
                                              db=self.pgdb))
        except psycopg2.Error:
            return False

    def apply_until(self, n, pg=None, server=None, timeout=120):
        """apply() in a loop until marker n is in PostgreSQL."""
        pg = pg or self.pg
        server = server or self.server
        deadline = time.monotonic() + timeout
        last = None
        while not self.marker_seen(n, pg):
            if time.monotonic() > deadline:
                raise CaseFailure('marker %d not applied within %ds (last apply: %s; status: %s)' % (
                    n, timeout, short(last, 300), short(state(pg, server, self.pgdb), 400)))
            try:
                last = pg.query('SELECT transactions, rows, file, pos FROM binlog_fdw.apply(%s, 100000, 5, 0.5)',
                                (server,), db=self.pgdb)
            except psycopg2.Error as e:
                last = str(e).strip()
                time.sleep(0.3)

    def wait_marker(self, n, pg=None, server=None, timeout=120):
        """Continuous mode: until marker n is in PostgreSQL."""
        pg = pg or self.pg
        server = server or self.server
        try:
            wait_for(lambda: self.marker_seen(n, pg), timeout, 'marker %d in PostgreSQL' % n, interval=0.2)
        except CaseFailure as e:
            st = state(pg, server, self.pgdb)
            raise CaseFailure('%s; status: state %s, read %s:%s, acked %s:%s, last error %s, apply error %s' % (
                e, st.get('state'), st.get('read_file'), st.get('read_pos'), st.get('acked_file'),
                st.get('acked_pos'), short(st.get('last_error'), 300), short(st.get('apply_error'), 300)))

    def mark(self, n):
        return self.writer.mark(n)

    def compare(self, pg=None):
        pg = pg or self.pg
        want = dump_mariadb(MDB, self.db, TABLE_NAMES)
        conn = pg.connect(app='blf-ops dump', db=self.pgdb)
        try:
            got = dump_postgres(conn, self.db, TABLE_NAMES, want)
        finally:
            conn.close()
        diff = compare_dumps(want, got)
        log('%s: compared %d MariaDB rows with %d PostgreSQL rows' % (self.db, count_rows(want), count_rows(got)))
        if diff:
            raise CaseFailure('PostgreSQL differs from MariaDB: ' + diff)


class WriterThread(threading.Thread):
    """The typed writer in the background (rate: transactions per second)."""

    def __init__(self, typed, ntxns, rate):
        super().__init__(daemon=True)
        self.typed = typed
        self.ntxns = ntxns
        self.rate = rate
        self.error = None
        LIVE.append(self)

    def stop(self):
        self.typed.writer.halt.set()

    def run(self):
        try:
            self.typed.writer.run(ntxns=self.ntxns, rate=self.rate)
        except Exception as e:      # reported by the case
            log(traceback.format_exc())
            self.error = e

    def finish(self, timeout=300):
        self.join(timeout)
        require(not self.is_alive(), 'the writer did not finish within %ds' % timeout)
        if self.error:
            raise self.error


def drop_sources(pg, db=None):
    """Stop and drop every binlog_fdw server of a database (if it answers)."""
    try:
        names = [r[0] for r in pg.query(
            "SELECT srvname FROM pg_foreign_server s JOIN pg_foreign_data_wrapper w ON w.oid = s.srvfdw "
            "WHERE w.fdwname = 'binlog_fdw'", db=db)]
    except psycopg2.Error:
        return
    for n in names:
        for sql in ('SELECT binlog_fdw.stop(%s)', 'SELECT binlog_fdw.reset(%s)'):
            try:
                pg.execute(sql, (n,), db=db)
            except psycopg2.Error as e:
                log('cleanup of %s: %s' % (n, str(e).strip().splitlines()[0]))
        try:
            pg.execute('DROP SERVER %s CASCADE' % n, db=db)
        except psycopg2.Error as e:
            log('cleanup of %s: %s' % (n, str(e).strip().splitlines()[0]))


# ---------------------------------------------------------------------------
# start() and stop() at commit

@case('start-in-transaction')
def start_in_transaction(seed):
    db = 'op_tx'
    simple_table(db)
    sid = next(SERVER_IDS)
    opts = "host '127.0.0.1', port '%d', server_id '%d', include '^%s\\.', heartbeat '1'" % (MDB.port, sid, db)
    conn = A.connect(autocommit=False)
    with conn.cursor() as cur:
        cur.execute('CREATE SERVER tx FOREIGN DATA WRAPPER binlog_fdw OPTIONS (%s)' % opts)
        cur.execute("CREATE USER MAPPING FOR postgres SERVER tx OPTIONS (user 'repl', password 'repl')")
        cur.execute("SELECT binlog_fdw.start('tx')")
        pid = cur.fetchone()[0]
    conn.commit()
    log('start-in-transaction: start() returned %r in the creating transaction' % (pid,))
    wait_streaming(A, 'tx', timeout=30)
    insert_ids(db, [1, 2, 3])
    got = get_ids(A, 'tx', 3)
    require(got == [1, 2, 3], 'get() after the committed start delivered %s, expected [1, 2, 3]' % got)

    # the same, rolled back: no server, nothing started
    with conn.cursor() as cur:
        cur.execute('CREATE SERVER tx_rb FOREIGN DATA WRAPPER binlog_fdw OPTIONS (%s)'
                    % opts.replace("'%d'" % sid, "'%d'" % next(SERVER_IDS)))
        cur.execute("CREATE USER MAPPING FOR postgres SERVER tx_rb OPTIONS (user 'repl', password 'repl')")
        cur.execute("SELECT binlog_fdw.start('tx_rb')")
    conn.rollback()
    tx_pid = state(A, 'tx').get('worker_pid')
    stays(lambda: not state(A, 'tx_rb') and A.source_workers(DB) == [tx_pid], 2,
          lambda: 'a rolled-back start() of a server created in the transaction left a worker: %s, workers %s'
          % (state(A, 'tx_rb'), A.source_workers(DB)))

    # start() of an existing server, rolled back
    new_source(A, 'tx2', '^%s\\.' % db)
    with conn.cursor() as cur:
        cur.execute("SELECT binlog_fdw.start('tx2')")
    conn.rollback()
    conn.close()
    stays(lambda: not state(A, 'tx2') and A.source_workers(DB) == [tx_pid], 2,
          lambda: 'a rolled-back start() started source tx2: status %s, workers %s' % (
              short(state(A, 'tx2'), 300), A.source_workers(DB)))
    require(not A.query("SELECT 1 FROM binlog_fdw.started_sources WHERE server_name = 'tx2'"),
            'a rolled-back start() left tx2 in binlog_fdw.started_sources')


@case('stop-rolled-back')
def stop_rolled_back(seed):
    db = 'op_sr'
    simple_table(db)
    new_source(A, 'sr', '^%s\\.' % db)
    A.execute("SELECT binlog_fdw.start('sr')")
    pid0 = wait_streaming(A, 'sr')['worker_pid']
    conn = A.connect(autocommit=False)
    with conn.cursor() as cur:
        cur.execute("SELECT binlog_fdw.stop('sr')")
    conn.rollback()
    stays(lambda: state(A, 'sr').get('worker_pid') == pid0 and state(A, 'sr').get('state') == 'streaming', 2,
          lambda: 'after a rolled-back stop() the source is %s (worker %s, was %d)' % (
              state(A, 'sr').get('state'), state(A, 'sr').get('worker_pid'), pid0))
    insert_ids(db, [7, 8])
    got = get_ids(A, 'sr', 2)
    require(got == [7, 8], 'after a rolled-back stop() get() delivered %s, expected [7, 8]' % got)
    with conn.cursor() as cur:
        cur.execute("SELECT binlog_fdw.stop('sr')")
    conn.commit()
    conn.close()
    wait_for(lambda: pid0 not in A.source_workers(), 10, 'the worker %d to exit after a committed stop' % pid0)
    require(not state(A, 'sr'), 'a stopped source is still in the status view: %s' % state(A, 'sr'))


def drop_then_same_server_id(what, drop_sql, pg_db, recreate):
    """A streaming source; drop_sql committed: its worker must be gone
    within seconds, and a new server with the same server_id must stream
    at once and keep streaming (no clash with a lingering worker)."""
    db = 'op_' + what.replace('-', '_')
    simple_table(db)
    sid = new_source(A, 'dr', '^%s\\.' % db, db=pg_db)
    A.execute("SELECT binlog_fdw.start('dr')", db=pg_db)
    pid0 = wait_streaming(A, 'dr', db=pg_db)['worker_pid']
    t0 = time.monotonic()
    A.execute(drop_sql, db=pg_db)
    wait_for(lambda: pid0 not in A.source_workers(), 30, 'the worker %d to exit after %s' % (pid0, what))
    gone = time.monotonic() - t0
    log('%s: the worker exited %.2fs after the commit' % (what, gone))
    require(gone < 4, 'the worker of the dropped server ran on for %.1fs after the commit' % gone)
    recreate()
    create_source(_DbView(A, pg_db), 'dr2', MDB.port, sid, include='^%s\\.' % db)
    A.execute("SELECT binlog_fdw.start('dr2')", db=pg_db)
    pid1 = wait_streaming(A, 'dr2', timeout=20, db=pg_db)['worker_pid']
    insert_ids(db, [1, 2, 3])
    got = get_ids(A, 'dr2', 3, db=pg_db)
    require(got == [1, 2, 3], 'the new server with server_id %d delivered %s, expected [1, 2, 3]' % (sid, got))
    stays(lambda: (lambda s: s.get('worker_pid') == pid1 and s.get('state') == 'streaming' and
                   not s.get('last_error'))(state(A, 'dr2', pg_db)), 3,
          lambda: 'the new server with the same server_id does not stream steadily: %s' % short(
              state(A, 'dr2', pg_db), 400))


@case('drop-server-at-commit')
def drop_server_at_commit(seed):
    db = 'op_drs'
    simple_table(db)
    new_source(A, 'drs', '^%s\\.' % db)
    A.execute("SELECT binlog_fdw.start('drs')")
    pid0 = wait_streaming(A, 'drs')['worker_pid']
    conn = A.connect(autocommit=False)
    with conn.cursor() as cur:
        cur.execute('DROP SERVER drs CASCADE')
    conn.rollback()
    conn.close()
    stays(lambda: state(A, 'drs').get('worker_pid') == pid0, 2,
          lambda: 'after a rolled-back DROP SERVER the source is %s' % short(state(A, 'drs'), 300))
    insert_ids(db, [5])
    require(get_ids(A, 'drs', 1) == [5], 'after a rolled-back DROP SERVER nothing was delivered')
    A.execute("SELECT binlog_fdw.stop('drs')")
    A.execute('DROP SERVER drs CASCADE')
    drop_then_same_server_id('drop-server', 'DROP SERVER dr CASCADE', DB, lambda: None)


@case('drop-extension-at-commit')
def drop_extension_at_commit(seed):
    xdb = 'blf_ops_x'
    A.admin('DROP DATABASE IF EXISTS %s WITH (FORCE)' % xdb)
    A.admin('CREATE DATABASE %s' % xdb)
    A.execute('CREATE EXTENSION binlog_fdw', db=xdb)
    try:
        drop_then_same_server_id('drop-extension', 'DROP EXTENSION binlog_fdw CASCADE', xdb,
                                 lambda: A.execute('CREATE EXTENSION binlog_fdw', db=xdb))
    finally:
        drop_sources(A, db=xdb)
        A.admin('DROP DATABASE IF EXISTS %s WITH (FORCE)' % xdb)


@case('drop-create-same-name')
def drop_create_same_name(seed):
    """A new server of a dropped server's name starts afresh: its start
    option applies (it never acknowledged anything), not the old position."""
    db = 'op_same'
    simple_table(db)
    sid = new_source(A, 'same', '^%s\\.' % db)
    A.execute("SELECT binlog_fdw.start('same')")
    wait_streaming(A, 'same')
    insert_ids(db, [1, 2])
    require(get_ids(A, 'same', 2) == [1, 2], 'the first server did not deliver [1, 2]')
    A.execute('DROP SERVER same CASCADE')
    require(not A.query("SELECT 1 FROM binlog_fdw.source_state WHERE server_name = 'same'"),
            'DROP SERVER left the position of "same" in binlog_fdw.source_state')
    insert_ids(db, [10, 11])
    mfile, mpos = MDB.master_status()
    create_source(A, 'same', MDB.port, sid, include='^%s\\.' % db, start='current')
    A.execute("SELECT binlog_fdw.start('same')")
    wait_streaming(A, 'same')
    st = A.query("SELECT file, pos FROM binlog_fdw.source_state WHERE server_name = 'same'")
    require(st and (st[0][0], int(st[0][1])) == (mfile, mpos),
            'the new server "same" starts at %s, expected the end of the binlog %s:%d (its start option)'
            % (st, mfile, mpos))
    insert_ids(db, [20, 21])
    got = get_ids(A, 'same', 2)
    require(got == [20, 21], 'the new server "same" delivered %s, expected [20, 21]' % got)


# ---------------------------------------------------------------------------
# the durable position: rename, orphans

@case('rename')
def rename(seed):
    ty = Typed(A, 'op_ren', 'ren', seed, continuous=True)
    ty.setup()
    ty.start()
    wait_for(lambda: state(A, 'ren').get('apply_pid'), 30, 'the apply worker of ren')
    ty.write(40)
    ty.mark(1)
    ty.wait_marker(1)
    wt = WriterThread(ty, 60, rate=40)
    wt.start()
    time.sleep(0.5)             # let the writer get going: the rename happens mid-stream
    A.execute('ALTER SERVER ren RENAME TO ren2')
    wt.finish()
    ty.mark(2)
    ty.wait_marker(2, server='ren2')
    st = state(A, 'ren2')
    require(st.get('state') == 'streaming', 'after the rename the status shows %s' % short(st, 300))
    for table, col in (('source_state', 'server_name'), ('started_sources', 'server_name'),
                       ('table_mapping', 'server_name'), ('schema_history', 'server_name')):
        names = sorted({r[0] for r in A.query('SELECT %s FROM binlog_fdw.%s' % (col, table))})
        require(names == ['ren2'], 'binlog_fdw.%s has rows of %s after the rename, expected only ren2'
                % (table, names))
    A.stop('fast')
    ty.write(40)
    A.start()
    ty.mark(3)
    ty.wait_marker(3, server='ren2')
    ty.compare()


@case('orphan')
def orphan(seed):
    db = 'op_orph'
    simple_table(db)
    new_source(A, 'orph', '^%s\\.' % db)
    A.execute("SELECT binlog_fdw.start('orph')")
    wait_streaming(A, 'orph')
    insert_ids(db, [1, 2])
    require(get_ids(A, 'orph', 2) == [1, 2], 'source orph did not deliver [1, 2]')
    row = A.query("SELECT file, pos, skip FROM binlog_fdw.source_state WHERE server_name = 'orph'")[0]
    # dropped while the drop trigger does not run (as in single-user mode)
    A.execute('ALTER EVENT TRIGGER binlog_fdw_forget_dropped_servers DISABLE')
    try:
        A.execute('DROP SERVER orph CASCADE')
    finally:
        A.execute('ALTER EVENT TRIGGER binlog_fdw_forget_dropped_servers ENABLE ALWAYS')
    st = state(A, 'orph')
    require(st.get('state') == 'orphaned', 'the status view shows %s for the orphaned position'
            % short(st, 300))
    require((st.get('acked_file'), st.get('acked_pos'), st.get('acked_skip')) == tuple(row),
            'the orphan shows %s:%s+%s, the row holds %s' % (st.get('acked_file'), st.get('acked_pos'),
                                                             st.get('acked_skip'), row))
    require('no binlog_fdw server of that name' in (st.get('last_error') or ''),
            'the orphan row does not say what it is: %r' % st.get('last_error'))
    # another source starts; the orphan stays as it was
    new_source(A, 'other', '^%s\\.' % db)
    A.execute("SELECT binlog_fdw.start('other')")
    wait_streaming(A, 'other')
    A.stop('fast')
    A.start()
    wait_streaming(A, 'other')
    left = A.query("SELECT file, pos, skip FROM binlog_fdw.source_state WHERE server_name = 'orph'")
    require(left and tuple(left[0]) == tuple(row), 'the orphaned row changed: %s, was %s' % (left, row))
    wait_for(lambda: 'binlog_fdw.source_state holds the position of "orph", but this database has no '
             'binlog_fdw server of that name' in A.log_text(), 30, 'the orphan in the server log')
    A.execute("DELETE FROM binlog_fdw.source_state WHERE server_name = 'orph'")
    A.execute("DELETE FROM binlog_fdw.started_sources WHERE server_name = 'orph'")


# ---------------------------------------------------------------------------
# dump/restore, pg_upgrade, standby

@case('dump-restore')
def dump_restore(seed):
    ty = Typed(A, 'op_dump', 'dsrc', seed)
    ty.setup()
    ty.start()
    ty.write(60)
    ty.mark(1)
    ty.apply_until(1)
    oid_a = A.server_oid('dsrc')
    dump = os.path.join(TMP, 'blf_ops.dump')
    subprocess.run([os.path.join(BINDIR, 'pg_dump'), '-h', PG_SOCKET_DIR, '-p', str(A.port), '-U', 'postgres',
                    '-Fc', '-f', dump, DB], check=True, capture_output=True, timeout=300)
    log('dump-restore: dumped %s (%d bytes) at the acknowledged position %s' % (
        DB, os.path.getsize(dump), A.query("SELECT file, pos FROM binlog_fdw.source_state")))
    # the old cluster goes away; the source writes on
    A.execute("SELECT binlog_fdw.stop('dsrc')")
    A.stop('fast')
    ty.write(60)
    B.fresh(extension=False)
    # other objects first, so that the restored server gets another OID
    for i in range(20):
        B.admin('CREATE TABLE IF NOT EXISTS public.oid_shift_%d (a int)' % i)
    p = subprocess.run([os.path.join(BINDIR, 'pg_restore'), '-h', PG_SOCKET_DIR, '-p', str(B.port),
                        '-U', 'postgres', '-d', DB, '--exit-on-error', dump],
                       capture_output=True, text=True, timeout=300)
    require(p.returncode == 0, 'pg_restore failed: %s' % p.stderr.strip()[-500:])
    hist = B.query("SELECT count(*) FROM binlog_fdw.schema_history WHERE server_name = 'dsrc'")[0][0]
    require(hist > 0, 'the schema history of dsrc was not restored (%s rows)' % hist)
    oid_b = B.server_oid('dsrc')
    log('dump-restore: server dsrc has OID %s in the dumped cluster, %s in the restored one' % (oid_a, oid_b))
    require(oid_a != oid_b, 'the restored server has the same OID %s: the case would not test the key' % oid_a)
    require(not state(B, 'dsrc'), 'the restored source runs before start() (like a restored subscription, it must not)')
    ty.pg = B
    ty.start()
    ty.mark(2)
    ty.apply_until(2)
    ty.compare()
    drop_sources(B)
    B.destroy()
    A.start()


@case('pg-upgrade')
def pg_upgrade(seed):
    A.fresh()
    ty = Typed(A, 'op_upg', 'usrc', seed, continuous=True)
    ty.setup()
    ty.start()
    ty.write(60)
    ty.mark(1)
    ty.wait_marker(1)
    oid_a = A.server_oid('usrc')
    A.stop('fast')
    ty.write(60)
    B.fresh(extension=False)
    B.admin('DROP DATABASE %s' % DB)
    B.stop('fast')
    work = os.path.join(TMP, 'pg_upgrade')
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    if os.getuid() == 0:
        shutil.chown(work, 'postgres')
    t0 = time.monotonic()
    p = as_postgres([os.path.join(BINDIR, 'pg_upgrade'), '-b', BINDIR, '-B', BINDIR, '-d', A.data,
                     '-D', B.data, '-p', str(PG_PORT + 20), '-P', str(PG_PORT + 21)], cwd=work, check=False)
    log('pg_upgrade: exit %d in %.0fs; %s' % (p.returncode, time.monotonic() - t0,
                                              ' / '.join(p.stdout.strip().splitlines()[-3:])))
    require(p.returncode == 0, 'pg_upgrade failed: %s' % (p.stdout + p.stderr).strip()[-1500:])
    B.start()
    oid_b = B.server_oid('usrc')
    log('pg-upgrade: server usrc has OID %s before the upgrade, %s after' % (oid_a, oid_b))
    # started before the upgrade: it starts again by itself
    ty.pg = B
    wait_streaming(B, 'usrc')
    ty.mark(2)
    ty.wait_marker(2)
    ty.compare()
    drop_sources(B)
    B.destroy()
    A.fresh()


@case('standby-promotion')
def standby_promotion(seed):
    A.fresh()
    shutil.rmtree(B.data, ignore_errors=True)
    as_postgres([os.path.join(BINDIR, 'pg_basebackup'), '-h', PG_SOCKET_DIR, '-p', str(A.port), '-U',
                 'postgres', '-D', B.data, '-R', '-X', 'stream', '-c', 'fast'])
    B.start()
    require(B.query('SELECT pg_is_in_recovery()')[0][0], 'the standby is not in recovery')
    # the sources are started after the base backup: only the catalog knows them
    ty = Typed(A, 'op_sb', 'sbsrc', seed, continuous=True)
    ty.setup()
    ty.start()
    A.admin('CREATE DATABASE blf_ops_b')
    A.execute('CREATE EXTENSION binlog_fdw', db='blf_ops_b')
    tb = Typed(A, 'op_sb2', 'sbsrc2', seed + 1, continuous=True, pgdb='blf_ops_b')
    tb.setup()
    tb.start()
    ty.write(30)
    ty.mark(1)
    ty.wait_marker(1)
    tb.write(20)
    tb.mark(1)
    tb.wait_marker(1)
    wt = WriterThread(ty, 150, rate=30)
    wt2 = WriterThread(tb, 100, rate=20)
    wt.start()
    wt2.start()
    wait_for(lambda: ty.writer.txns > 60, 60, 'the writer to be under way')
    require(not B.source_workers(), 'source workers run on the standby during recovery: %s' % B.source_workers())
    require(not B.query("SELECT pid FROM pg_stat_activity WHERE backend_type LIKE 'binlog_fdw%'"),
            'binlog_fdw processes run on the standby during recovery')
    lsn = A.query('SELECT pg_current_wal_lsn()::text')[0][0]
    wait_for(lambda: B.query("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (lsn,))[0][0], 60,
             'the standby to replay up to %s' % lsn)
    A.stop('immediate')
    log('standby-promotion: primary killed with the writer at %d transactions' % ty.writer.txns)
    as_postgres([os.path.join(BINDIR, 'pg_ctl'), 'promote', '-D', B.data, '-w'])
    for t in (ty, tb):
        t.pg = B
        wait_streaming(B, t.server, db=t.pgdb)
    wt.finish()
    wt2.finish()
    ty.mark(2)
    tb.mark(2)
    ty.wait_marker(2)
    tb.wait_marker(2)
    ty.compare()
    tb.compare()
    drop_sources(B, db='blf_ops_b')
    drop_sources(B)
    B.destroy()
    A.fresh()


# ---------------------------------------------------------------------------
# 0.1 -> 0.2

DUMP_NOISE = ('relfrozenxid', 'WHERE oid = ', 'binary_upgrade_create_empty_extension',
              '\\restrict ', '\\unrestrict ', 'binary_upgrade_set_next')


def extension_dump(pg, db):
    """A schema-only dump of a database holding only the extension (every
    member object: --binary-upgrade dumps them), without the OIDs and
    transaction ids such a dump records, plus pg_extension's row."""
    p = subprocess.run([os.path.join(pg.bindir, 'pg_dump'), '-h', PG_SOCKET_DIR, '-p', str(pg.port),
                        '-U', 'postgres', '--schema-only', '--binary-upgrade', db],
                       capture_output=True, text=True, timeout=300, check=True)
    lines = [ln for ln in p.stdout.splitlines() if not any(n in ln for n in DUMP_NOISE)]
    ext = pg.query("SELECT extname, extversion, extrelocatable, extnamespace::regnamespace::text, "
                   "(SELECT array_agg(c::regclass::text ORDER BY o) FROM unnest(extconfig) WITH ORDINALITY u(c, o)), "
                   "extcondition FROM pg_extension WHERE extname = 'binlog_fdw'", db=db)
    return lines + ['pg_extension: %r' % (ext,)]


@case('upgrade-0.1')
def upgrade_01(seed):
    require(TREE and NEW_SO, 'BLF_OPS_TREE and BLF_OPS_NEW_SO are not set (test/suites/78-operations.sh)')
    libdir = os.path.join(TREE, 'usr/lib/postgresql/15/lib')
    U.fresh(extension=False)
    U.execute("CREATE EXTENSION binlog_fdw VERSION '0.1'")
    require(U.query("SELECT extversion FROM pg_extension WHERE extname = 'binlog_fdw'")[0][0] == '0.1',
            'the extension is not at 0.1')
    ty = Typed(U, 'op_v01', 'vsrc', seed)
    ty.setup()
    # 0.1's library: start() launches the worker at once and returns its pid
    pid = U.query("SELECT binlog_fdw.start('vsrc')")[0][0]
    require(isinstance(pid, int) and pid > 0, "start() returned %r: this is not 0.1's library" % (pid,))
    wait_streaming(U, 'vsrc')
    ty.write(40)
    ty.mark(1)
    ty.apply_until(1)
    # the 0.2 library replaces 0.1's (by rename, as make install does)
    wt = WriterThread(ty, 120, rate=40)
    wt.start()
    tmp = os.path.join(libdir, 'binlog_fdw.so.swap')
    shutil.copyfile(NEW_SO, tmp)
    os.chmod(tmp, 0o755)
    os.rename(tmp, os.path.join(libdir, 'binlog_fdw.so'))
    U.stop('fast')
    U.start()
    wait_streaming(U, 'vsrc')
    # 0.2's library with 0.1's tables: it streams the sources 0.1 started,
    # and start() asks for the update
    try:
        U.execute("SELECT binlog_fdw.start('vsrc')")
        raise CaseFailure("start() worked with 0.1's tables: is this 0.2's library?")
    except psycopg2.Error as e:
        require('ALTER EXTENSION binlog_fdw UPDATE' in (e.diag.message_hint or ''),
                'start() before the update: %s (hint %r)' % (str(e).strip(), e.diag.message_hint))
    require(U.query("SELECT extversion FROM pg_extension WHERE extname = 'binlog_fdw'")[0][0] == '0.1',
            'the extension is not at 0.1 any more')
    require(U.query("SELECT to_regclass('binlog_fdw.started_sources') IS NULL")[0][0],
            'the 0.1 tables already have started_sources')
    wait_for(lambda: ty.writer.txns > 40, 60, 'the writer to be under way')
    ty.mark(2)
    ty.apply_until(2)
    # the update, while the source streams and the writer writes
    U.execute('ALTER EXTENSION binlog_fdw UPDATE')
    require(U.query("SELECT extversion FROM pg_extension WHERE extname = 'binlog_fdw'")[0][0] == '0.2',
            'ALTER EXTENSION binlog_fdw UPDATE did not reach 0.2')
    rows = U.query('SELECT server_name, started_by::text FROM binlog_fdw.started_sources')
    require(rows == [('vsrc', 'postgres')], "0.1's started source was not carried over: %s" % rows)
    st = U.query('SELECT server_name, srvid = (SELECT oid FROM pg_foreign_server WHERE srvname = %s) '
                 'FROM binlog_fdw.source_state', ('vsrc',))
    require(st == [('vsrc', True)], 'source_state after the update: %s' % st)
    wt.finish()
    ty.mark(3)
    ty.apply_until(3)
    # restarted, the source comes back from the catalog now
    autostart = os.path.join(U.data, 'pg_binlog_fdw', 'autostart')
    require(not os.path.exists(autostart) or not open(autostart).read().strip(),
            "0.1's autostart file still lists sources: %r" % (open(autostart).read() if os.path.exists(autostart) else ''))
    U.stop('fast')
    ty.write(30)
    U.start()
    wait_streaming(U, 'vsrc')
    ty.mark(4)
    ty.apply_until(4)
    ty.compare()

    # the objects: an updated 0.1 equals a fresh 0.2
    for db in ('ext_fresh', 'ext_updated'):
        U.admin('DROP DATABASE IF EXISTS %s' % db)
        U.admin('CREATE DATABASE %s' % db)
    U.execute('CREATE EXTENSION binlog_fdw', db='ext_fresh')
    U.execute("CREATE EXTENSION binlog_fdw VERSION '0.1'", db='ext_updated')
    U.execute('ALTER EXTENSION binlog_fdw UPDATE', db='ext_updated')
    fresh = extension_dump(U, 'ext_fresh')
    updated = extension_dump(U, 'ext_updated')
    if fresh != updated:
        import difflib
        diff = [ln for ln in difflib.unified_diff(fresh, updated, 'fresh 0.2', 'updated 0.1', n=0, lineterm='')]
        log('\n'.join(diff[:80]))
        raise CaseFailure('an updated 0.1 differs from a fresh 0.2: %s' % ' | '.join(
            ln for ln in diff[2:8]))
    log('upgrade-0.1: the schema-only dumps of a fresh 0.2 and an updated 0.1 are equal (%d lines)' % len(fresh))
    drop_sources(U)
    U.destroy()


# ---------------------------------------------------------------------------

def cleanup():
    for pg in (A, B, U):
        if pg is A:
            try:
                pg.query('SELECT 1')
            except psycopg2.Error:
                try:
                    pg.start()
                except Exception as e:      # noqa: BLE001
                    log('cleanup: %s' % e)
            drop_sources(pg)
        else:
            try:
                pg.destroy()
            except Exception as e:          # noqa: BLE001
                log('cleanup: %s' % e)
    try:
        MDB.query('SELECT 1')
    except Exception:
        MDB.start()


def main(argv):
    patterns = argv[1:]

    def wanted(name):
        return not patterns or any(name == p or name.startswith(p) for p in patterns)

    os.makedirs(TMP, exist_ok=True)
    log('seed %d, MariaDB %d, PostgreSQL %d..%d, tmp %s, tree %s' % (SEED, MDB_PORT, PG_PORT, PG_PORT + 2, TMP,
                                                                    TREE or '(none)'))
    A.fresh()
    t0 = time.monotonic()
    failed, timings = run_cases('operations', CASES, SEED, wanted, cleanup)
    log('timings: ' + ', '.join('%s %.0fs' % t for t in timings) + '; total %.0fs' % (time.monotonic() - t0))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
