"""
test/streaming_faults/blfaults.py -- the pieces of the streaming fault tests
(test/streaming_faults/faults.py, test/suites/70-streaming-faults.sh).

  MariaDB, Postgres   throwaway instances through scripts/mariadb.sh and
                      scripts/postgres.sh (start, stop, kill, restart, SQL)
  Writer              a seeded workload on MariaDB: transactions of chosen
                      sizes mixing multi-row INSERT, UPDATE and DELETE over
                      three tables (wide rows, a DECIMAL column, a
                      composite primary key); it knows how many
                      transactions and row changes it committed
  Consumer            a get -> record -> ack loop on one PostgreSQL
                      connection.  The record of each batch goes into
                      public.blf_faults_delivered in the same transaction
                      as its ack, so what the consumer holds is exactly
                      what it acknowledged, whatever crashes in between
                      (on reconnect it reloads the record).  Sleep between
                      batches, batch size and fault hooks (between get and
                      ack, right after an ack) are adjustable while it runs.
  StatusMonitor       polls binlog_fdw.status (and the worker's /proc
                      entry): states seen, ring bytes used vs total,
                      worker pids, peak RSS samples, last errors
  ground_truth()      the source's own change sequence: the binlog decoded
                      by ./binlogcat over the replication protocol from a
                      position, with transaction markers from the GTID and
                      XID events
  compare()           delivered vs ground truth: equal, or the first
                      difference with counts of missing and duplicated
                      changes

A change is the tuple (op, schema, table, gtid, primary key, before, after)
with the row images as short digests of their canonical JSON (keys
sorted, decimals kept exact), so that 200 MB of changes fit in memory;
BEGIN/COMMIT markers are (op, None, None, gtid, None, None, None).
"""

import collections
import decimal
import hashlib
import json
import os
import random
import subprocess
import threading
import time
import traceback

import psycopg2
import psycopg2.extras
import pymysql

ROOT = os.environ.get('BLF_ROOT') or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
RUN = os.environ.get('BLF_RUN', '/var/tmp/binlog_fdw')
PG_SOCKET_DIR = os.environ.get('BLF_PG_SOCKET_DIR', RUN)
BINLOGCAT = os.path.join(ROOT, 'binlogcat')
MARIADB_SH = os.path.join(ROOT, 'scripts', 'mariadb.sh')
POSTGRES_SH = os.path.join(ROOT, 'scripts', 'postgres.sh')
REPL_USER = os.environ.get('BLF_MYSQL_USER', 'repl')
REPL_PW = os.environ.get('BLF_MYSQL_PASSWORD', 'repl')

_log_lock = threading.Lock()
T0 = time.monotonic()


def log(msg):
    with _log_lock:
        for line in str(msg).splitlines() or ['']:
            print('# [%6.1fs] %s' % (time.monotonic() - T0, line), flush=True)


def short(v, n=160):
    s = repr(v)
    return s if len(s) <= n else s[:n] + '...'


def sh(args, timeout=180, check=True):
    """Run a command; raise with its output tail if it fails."""
    p = subprocess.run(args, stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=timeout)
    if check and p.returncode != 0:
        tail = (p.stdout + p.stderr).strip().splitlines()[-15:]
        raise RuntimeError('%s: exit %d\n%s' % (' '.join(args), p.returncode,
                                                '\n'.join(tail)))
    return p


class CaseFailure(Exception):
    """A case's check failed: the message is the case line's reason."""


def require(cond, msg):
    if not cond:
        raise CaseFailure(msg)


def wait_for(fn, timeout, what, interval=0.1):
    """Poll fn() until it returns a true value; CaseFailure after timeout."""
    deadline = time.monotonic() + timeout
    last_exc = None
    while True:
        try:
            v = fn()
            if v:
                return v
        except (psycopg2.Error, pymysql.Error) as e:
            last_exc = e
        if time.monotonic() >= deadline:
            raise CaseFailure('timed out after %.0fs waiting for %s%s' % (
                timeout, what, ' (last error: %s)' % str(last_exc).strip() if last_exc else ''))
        time.sleep(interval)


# ---------------------------------------------------------------------------
# instances

class MariaDB:
    def __init__(self, name, port):
        self.name = name
        self.port = port
        self.socket = os.path.join(RUN, 'mariadb-%s.sock' % name)

    def _sh(self, action, *args, extra=None, timeout=180):
        cmd = ['bash', MARIADB_SH, action, '--name', self.name, '--port', str(self.port)]
        cmd += list(args)
        if extra is not None:
            cmd += ['--'] + list(extra)
        return sh(cmd, timeout=timeout)

    def start(self, extra=None):
        self._sh('start', extra=extra)

    def stop(self, kill=False):
        self._sh('stop', *(['--kill'] if kill else []))

    def destroy(self):
        self._sh('destroy')

    def connect(self, db=None, autocommit=True):
        return pymysql.connect(unix_socket=self.socket, user='root', password='',
                               database=db, autocommit=autocommit, charset='utf8mb4',
                               connect_timeout=10, read_timeout=120, write_timeout=120)

    def query(self, sql, args=None):
        conn = self.connect()
        try:
            with conn.cursor() as cur:
                cur.execute(sql, args)
                return cur.fetchall()
        finally:
            conn.close()

    def master_status(self):
        row = self.query('SHOW MASTER STATUS')[0]
        return row[0], int(row[1])

    def binlog_dump_threads(self):
        return [r[0] for r in self.query(
            "SELECT id FROM information_schema.processlist WHERE command = 'Binlog Dump'")]


class Postgres:
    def __init__(self, name, port):
        self.name = name
        self.port = port
        self.dsn = 'host=%s port=%d user=postgres dbname=postgres' % (PG_SOCKET_DIR, port)

    def _sh(self, action, *args, extra=None, timeout=180):
        cmd = ['bash', POSTGRES_SH, action, '--name', self.name, '--port', str(self.port)]
        cmd += list(args)
        if extra is not None:
            cmd += ['--'] + list(extra)
        return sh(cmd, timeout=timeout)

    def start(self, extra=None):
        self._sh('start', extra=extra)

    def stop(self, mode='fast'):
        self._sh('stop', '--mode', mode)

    def connect(self, autocommit=True, app='blf-faults'):
        conn = psycopg2.connect(self.dsn, application_name=app, connect_timeout=10)
        conn.autocommit = autocommit
        return conn

    def query(self, sql, args=None):
        conn = self.connect()
        try:
            with conn.cursor() as cur:
                cur.execute(sql, args)
                return cur.fetchall() if cur.description else None
        finally:
            conn.close()

    def execute(self, sql, args=None):
        self.query(sql, args)

    def ping(self):
        try:
            self.query('SELECT 1')
            return True
        except psycopg2.Error:
            return False

    def log_contains(self, text):
        path = os.path.join(RUN, 'pg-%s' % self.name, 'postgresql.log')
        try:
            with open(path, errors='replace') as f:
                return text in f.read()
        except OSError:
            return False

    def status(self, server):
        conn = self.connect()
        try:
            with conn.cursor(cursor_factory=psycopg2.extras.RealDictCursor) as cur:
                cur.execute('SELECT * FROM binlog_fdw.status WHERE server = %s', (server,))
                row = cur.fetchone()
                return dict(row) if row else None
        finally:
            conn.close()


def create_source(pg, name, port, server_id, include=None, start='current', host='127.0.0.1',
                  **opts):
    """A foreign server (dropped first if it exists) and a user mapping."""
    options = {'host': host, 'port': str(port), 'server_id': str(server_id),
               'start': start, 'heartbeat': '1', 'connect_timeout': '5'}
    if include:
        options['include'] = include
    options.update({k: str(v) for k, v in opts.items()})
    conn = pg.connect()
    try:
        with conn.cursor() as cur:
            cur.execute('SELECT 1 FROM pg_foreign_server WHERE srvname = %s', (name,))
            if cur.fetchone():
                cur.execute('SELECT binlog_fdw.stop(%s)', (name,))
                cur.execute('SELECT binlog_fdw.reset(%s)', (name,))
                cur.execute('DROP SERVER %s CASCADE' % name)
            opt_sql = ', '.join('%s %s' % (k, cur.mogrify('%s', (v,)).decode())
                                for k, v in options.items())
            cur.execute('CREATE SERVER %s FOREIGN DATA WRAPPER binlog_fdw OPTIONS (%s)'
                        % (name, opt_sql))
            cur.execute("CREATE USER MAPPING FOR postgres SERVER %s OPTIONS (user %%s, password %%s)"
                        % name, (REPL_USER, REPL_PW))
    finally:
        conn.close()


def start_source(pg, name, timeout=30):
    """Start a source; wait until it streams; its recorded start position."""
    pg.execute('SELECT binlog_fdw.start(%s)', (name,))
    wait_for(lambda: (pg.status(name) or {}).get('state') == 'streaming', timeout,
             'source %s to stream (status: %s)' % (name, short(pg.status(name))))
    row = pg.query('SELECT file, pos, skip FROM binlog_fdw.source_state WHERE server_name = %s',
                   (name,))
    require(row and row[0][0], 'source %s has no recorded start position' % name)
    return row[0][0], int(row[0][1])


def stop_source(pg, name):
    try:
        pg.execute('SELECT binlog_fdw.stop(%s)', (name,))
    except psycopg2.Error as e:
        log('stop(%s): %s' % (name, str(e).strip()))


# ---------------------------------------------------------------------------
# changes

def _canon_default(o):
    if isinstance(o, decimal.Decimal):
        return {'$dec': str(o)}
    raise TypeError(repr(o))


def canon(obj):
    return json.dumps(obj, sort_keys=True, separators=(',', ':'), ensure_ascii=False,
                      default=_canon_default)


def digest_obj(obj):
    if obj is None:
        return None
    return hashlib.blake2b(canon(obj).encode(), digest_size=10).hexdigest()


def loads(text):
    return None if text is None else json.loads(text, parse_float=decimal.Decimal)


def fmt_change(c):
    if c is None:
        return '(none)'
    op, schema, table, gtid, pk, bd, ad = c
    if op in ('begin', 'commit'):
        return '%s %s' % (op, gtid)
    return '%s %s.%s %s gtid %s before %s after %s' % (op, schema, table, pk, gtid, bd, ad)


def compare(got, want):
    """None if equal, else a one-line description of the first difference."""
    if got == want:
        return None
    n = min(len(got), len(want))
    i = 0
    while i < n and got[i] == want[i]:
        i += 1
    cg = collections.Counter(got)
    cw = collections.Counter(want)
    missing = sum((cw - cg).values())
    extra = sum((cg - cw).values())
    dups = sum(v - 1 for v in cg.values() if v > 1) - sum(v - 1 for v in cw.values() if v > 1)
    parts = ['delivered %d changes, the source has %d' % (len(got), len(want))]
    if missing:
        parts.append('%d missing' % missing)
    if extra:
        parts.append('%d not in the source' % extra)
    if dups > 0:
        parts.append('%d delivered twice' % dups)
    if not missing and not extra:
        parts.append('same changes in another order')
    parts.append('first difference at change #%d: got [%s], expected [%s]' % (
        i, fmt_change(got[i] if i < len(got) else None),
        fmt_change(want[i] if i < len(want) else None)))
    return '; '.join(parts)


def self_check_compare(want, rng):
    """compare() must notice a dropped, a duplicated and a reordered change."""
    if len(want) < 4:
        return 'ground truth too short (%d changes) to be meaningful' % len(want)
    i = rng.randrange(1, len(want) - 2)
    mutants = {
        'a dropped change': want[:i] + want[i + 1:],
        'a duplicated change': want[:i + 1] + want[i:],
        'two swapped changes': want[:i] + [want[i + 1], want[i]] + want[i + 2:],
    }
    for what, m in mutants.items():
        if m != want and compare(m, want) is None:
            return 'the comparison does not notice %s' % what
    return None


def summarize(changes):
    ops = collections.Counter(c[0] for c in changes)
    return ', '.join('%s %d' % kv for kv in sorted(ops.items()))


# ---------------------------------------------------------------------------
# ground truth: the binlog through ./binlogcat

def ground_truth(port, schema, start_file, start_pos, host='127.0.0.1', server_id=None,
                 extra=(), spans=None, start=None):
    """
    The changes of `schema` in the source's binlog from start_file:start_pos
    (or from `start`, any binlogcat --start form such as 'gtid:0-1-5') to
    its current end, with BEGIN/COMMIT markers around each transaction
    that has any.  DDL statements naming the schema count as 'ddl' changes.
    spans, if a list, gets (gtid, binlog bytes, row changes) per transaction.
    """
    sid = server_id or (5000 + os.getpid() % 1000)
    cmd = [BINLOGCAT, '--host', host, '--port', str(port), '--user', REPL_USER,
           '--start', start or '%s:%d' % (start_file, start_pos), '--until-end', '--quiet',
           '--server-id', str(sid)] + list(extra)
    env = dict(os.environ, MYSQL_PWD=REPL_PW)
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, text=True, bufsize=1 << 20)
    out = []
    pkcols = {}
    txn = None
    stderr_lines = []
    t_err = threading.Thread(target=lambda: stderr_lines.extend(proc.stderr), daemon=True)
    t_err.start()
    for line in proc.stdout:
        ev = json.loads(line, parse_float=decimal.Decimal)
        t = ev.get('type')
        if t in ('MARIA_GTID', 'GTID', 'GTID_TAGGED', 'ANONYMOUS_GTID'):
            txn = None if ev.get('standalone') else {'gtid': ev.get('gtid'), 'rows': [],
                                                      'file': ev.get('file'), 'pos': ev.get('pos')}
        elif t == 'TABLE_MAP':
            cols = ev.get('columns') or []
            pkcols[(ev['schema'], ev['table'])] = [c['name'] for c in cols if c.get('primary_key')]
        elif ev.get('op') in ('insert', 'update', 'delete') and 'rows' in ev:
            if ev.get('schema') != schema:
                continue
            if txn is None:
                raise RuntimeError('binlogcat: rows event outside a transaction at %s:%s'
                                   % (ev.get('file'), ev.get('pos')))
            keys = pkcols.get((ev['schema'], ev['table']), [])
            for r in ev['rows']:
                before = r.get('before')
                after = r.get('after')
                img = after if after is not None else before
                pk = canon({k: img[k] for k in keys}) if keys else None
                txn['rows'].append((ev['op'], ev['schema'], ev['table'], ev.get('gtid'), pk,
                                    digest_obj(before), digest_obj(after)))
        elif t == 'XID' or (t == 'QUERY' and str(ev.get('sql', '')).strip().upper() == 'COMMIT'):
            if txn and txn['rows']:
                g = txn['gtid']
                out.append(('begin', None, None, g, None, None, None))
                out.extend(txn['rows'])
                out.append(('commit', None, None, g, None, None, None))
                if spans is not None and ev.get('file') == txn['file']:
                    spans.append((g, int(ev['next_pos']) - int(txn['pos']), len(txn['rows'])))
            txn = None
        elif t == 'QUERY':
            sql = str(ev.get('sql', ''))
            if sql.strip().upper() in ('BEGIN', 'XA START'):
                continue
            if ev.get('db') == schema or ('`%s`' % schema) in sql or (schema + '.') in sql:
                out.append(('ddl', schema, None, ev.get('gtid'), None, None, None))
    rc = proc.wait()
    t_err.join(5)
    if rc != 0:
        raise RuntimeError('binlogcat failed (exit %d): %s' % (rc, ''.join(stderr_lines[-5:])))
    return out


# ---------------------------------------------------------------------------
# the writer

BIG_PAD_MIN, BIG_PAD_MAX = 900, 1100


class Writer:
    """
    A seeded workload in database `schema` of a MariaDB instance.  Each
    transaction() makes about n row changes (n picked by the caller)
    through a few statements; the counts of committed transactions and row
    changes are kept in txns/changes, and bytes approximates the size of
    the row images written.
    """

    TABLES = ('t_big', 't_small', 't_pair')

    def __init__(self, mdb, schema, seed, big_share=0.6):
        self.mdb = mdb
        self.schema = schema
        self.rng = random.Random(seed)
        self.big_share = big_share
        blob_rng = random.Random(seed ^ 0x5EED)
        alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 -_'
        self.blob = ''.join(blob_rng.choice(alphabet) for _ in range(1 << 16))
        self.live = {t: [] for t in self.TABLES}     # keys, for picking
        self.index = {t: {} for t in self.TABLES}    # key -> position in live
        self.next_id = {t: 1 for t in self.TABLES}
        self.txns = 0
        self.changes = 0
        self.bytes = 0
        self.conn = None

    def create_schema(self):
        conn = self.mdb.connect()
        try:
            with conn.cursor() as cur:
                cur.execute('DROP DATABASE IF EXISTS `%s`' % self.schema)
                cur.execute('CREATE DATABASE `%s`' % self.schema)
                cur.execute('CREATE TABLE `%s`.t_big (id INT PRIMARY KEY, k INT NOT NULL, '
                            'pad VARCHAR(1200) NOT NULL) ENGINE=InnoDB' % self.schema)
                cur.execute('CREATE TABLE `%s`.t_small (id BIGINT PRIMARY KEY, a INT, '
                            'b VARCHAR(40), c DECIMAL(12,2)) ENGINE=InnoDB' % self.schema)
                cur.execute('CREATE TABLE `%s`.t_pair (a INT NOT NULL, b INT NOT NULL, '
                            'v VARCHAR(64), n INT NOT NULL, PRIMARY KEY (a, b)) ENGINE=InnoDB'
                            % self.schema)
        finally:
            conn.close()

    def connect(self):
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:
                pass
        self.conn = self.mdb.connect(db=self.schema, autocommit=False)

    def close(self):
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:
                pass
            self.conn = None

    def _pad(self):
        n = self.rng.randint(BIG_PAD_MIN, BIG_PAD_MAX)
        o = self.rng.randrange(0, len(self.blob) - n)
        return self.blob[o:o + n]

    def _add(self, t, key):
        self.index[t][key] = len(self.live[t])
        self.live[t].append(key)

    def _remove(self, t, key):
        i = self.index[t].pop(key)
        last = self.live[t].pop()
        if i < len(self.live[t]):
            self.live[t][i] = last
            self.index[t][last] = i

    def _pick(self, t, k):
        live = self.live[t]
        return self.rng.sample(live, min(k, len(live)))

    def _statement(self, cur, k, pending, big_only=False):
        """One statement of k rows at most; returns the rows it changes."""
        rng = self.rng
        t = 't_big' if big_only or rng.random() < self.big_share else rng.choice(('t_small', 't_pair'))
        r = rng.random()
        live = len(self.live[t])
        if r < 0.55 or live < 10:
            rows = []
            for _ in range(k):
                if t == 't_big':
                    key = self.next_id[t]
                    rows.append((key, rng.randint(0, 1000), self._pad()))
                elif t == 't_small':
                    key = self.next_id[t]
                    rows.append((key, rng.randint(-2**31, 2**31 - 1),
                                 self.blob[rng.randrange(60000):][:rng.randint(0, 40)],
                                 '%d.%02d' % (rng.randint(-10**9, 10**9), rng.randint(0, 99))))
                else:
                    n = self.next_id[t]
                    key = (n // 7, n % 7)
                    rows.append((key[0], key[1], self.blob[rng.randrange(60000):][:rng.randint(1, 64)], 0))
                self.next_id[t] += 1
                pending[0].append((t, key))
            if t == 't_big':
                cur.executemany('INSERT INTO t_big (id, k, pad) VALUES (%s, %s, %s)', rows)
                self.bytes += sum(len(x[2]) + 16 for x in rows)
            elif t == 't_small':
                cur.executemany('INSERT INTO t_small (id, a, b, c) VALUES (%s, %s, %s, %s)', rows)
                self.bytes += sum(len(x[2]) + 24 for x in rows)
            else:
                cur.executemany('INSERT INTO t_pair (a, b, v, n) VALUES (%s, %s, %s, %s)', rows)
                self.bytes += sum(len(x[2]) + 16 for x in rows)
            return len(rows)
        keys = [key for key in self._pick(t, k) if (t, key) not in pending[1]]
        if not keys:
            return 0
        if r < 0.85:
            if t == 't_big':
                cur.execute('UPDATE t_big SET k = k + 1, pad = %%s WHERE id IN (%s)'
                            % ','.join(str(x) for x in keys), (self._pad(),))
                self.bytes += len(keys) * 2 * (BIG_PAD_MIN + BIG_PAD_MAX) // 2
            elif t == 't_small':
                cur.execute('UPDATE t_small SET a = a DIV 2 + 1, c = c + 0.01, b = %%s WHERE id IN (%s)'
                            % ','.join(str(x) for x in keys), (self.blob[rng.randrange(60000):][:12],))
                self.bytes += len(keys) * 80
            else:
                cur.execute('UPDATE t_pair SET n = n + 1 WHERE (a, b) IN (%s)'
                            % ','.join('(%d,%d)' % x for x in keys))
                self.bytes += len(keys) * 100
            return len(keys)
        if t == 't_pair':
            cur.execute('DELETE FROM t_pair WHERE (a, b) IN (%s)' % ','.join('(%d,%d)' % x for x in keys))
        else:
            cur.execute('DELETE FROM %s WHERE id IN (%s)' % (t, ','.join(str(x) for x in keys)))
        self.bytes += len(keys) * (1000 if t == 't_big' else 60)
        for key in keys:
            pending[1].add((t, key))
        return len(keys)

    def transaction(self, n, big_only=False):
        """About n row changes in one transaction (at least 1)."""
        if self.conn is None:
            self.connect()
        pending = ([], set())     # keys added, keys deleted
        done = 0
        cur = self.conn.cursor()
        try:
            while done < n:
                k = min(n - done, self.rng.choice((1, 1, 2, 3, 5, 8, 20, 50, 100)))
                done += self._statement(cur, k, pending, big_only)
            self.conn.commit()
        except Exception:
            try:
                self.conn.rollback()
            except Exception:
                pass
            raise
        finally:
            cur.close()
        for t, key in pending[0]:
            self._add(t, key)
        for t, key in pending[1]:
            if key in self.index[t]:
                self._remove(t, key)
        self.txns += 1
        self.changes += done
        return done

    def size(self, big_every=0):
        """A transaction size: mostly small, some medium, rarely large."""
        r = self.rng.random()
        if r < 0.70:
            return self.rng.randint(1, 10)
        if r < 0.95:
            return self.rng.randint(10, 120)
        return self.rng.randint(120, 800)

    def run(self, ntxns=None, nbytes=None, big=(), stop=None, sizes=None, gate=None):
        """
        Transactions until ntxns more were made or bytes grew by nbytes; big
        is a list of (fraction of the run, size) for extra large ones; gate,
        if given, is called with the number of transactions made so far
        before each one (it may block to hold the writer back).
        """
        t0 = self.txns
        b0 = self.bytes
        big = sorted(big)
        while True:
            if stop is not None and stop.is_set():
                return
            if ntxns is not None and self.txns - t0 >= ntxns:
                break
            if nbytes is not None and self.bytes - b0 >= nbytes:
                break
            if ntxns is not None:
                frac = (self.txns - t0) / max(ntxns, 1)
            else:
                frac = (self.bytes - b0) / max(nbytes, 1)
            if gate is not None:
                gate(self.txns - t0)
            if big and frac >= big[0][0]:
                self.transaction(big.pop(0)[1], big_only=True)
                continue
            self.transaction(sizes() if sizes else self.size())
        while big:
            self.transaction(big.pop(0)[1], big_only=True)


def ensure_up(mdb, pg, timeout=60):
    """After a failed case: the MariaDB and PostgreSQL instances up again
    (each started if a query fails)."""
    try:
        mdb.query('SELECT 1')
    except Exception:
        log('restarting MariaDB "%s"' % mdb.name)
        mdb.start()
    try:
        pg.query('SELECT 1')
    except Exception:
        log('restarting PostgreSQL "%s"' % pg.name)
        pg.start()
        wait_for(lambda: pg.query('SELECT 1'), timeout, 'PostgreSQL to accept connections', interval=0.2)


# threads of the running case: stop_all() ends them after a failure
LIVE = []


def stop_all():
    for t in LIVE:
        t.stop()
    for t in LIVE:
        if t.is_alive():
            t.join(15)
    del LIVE[:]


def run_cases(prefix, cases, seed0, wanted, cleanup, pg=None):
    """
    Run each (name, fn) of cases that wanted(name) selects as fn(seed),
    printing "ok - PREFIX/NAME" or "not ok - PREFIX/NAME: reason"; after
    each, stop its threads and call cleanup().  Returns (failed, timings).
    pg: the Postgres whose log gets each case's marker (test/lib/logcheck.py).
    """
    failed = 0
    timings = []
    for i, (name, fn) in enumerate(cases):
        if not wanted(name):
            continue
        full = prefix + '/' + name
        t0 = time.monotonic()
        seed = seed0 + 100 * i
        log('---- %s (seed %d)' % (full, seed))
        if pg is not None:
            try:
                pg.execute("DO $$BEGIN RAISE LOG 'blf-case: %s'; END$$" % full)
            except Exception as e:              # noqa: BLE001
                log('could not mark %s in the server log: %s' % (full, e))
        try:
            fn(seed)
            print('ok - %s' % full, flush=True)
        except CaseFailure as e:
            failed += 1
            print('not ok - %s: %s' % (full, e), flush=True)
        except Exception as e:
            failed += 1
            log(traceback.format_exc())
            msg = str(e).strip().splitlines()
            print('not ok - %s: %s: %s' % (full, type(e).__name__, msg[-1] if msg else ''), flush=True)
        finally:
            try:
                stop_all()
                cleanup()
            except Exception as e:
                log('cleanup after %s: %s' % (name, e))
        timings.append((name, time.monotonic() - t0))
        log('%s: %.1fs' % (full, timings[-1][1]))
    return failed, timings


class BackgroundWriter(threading.Thread):
    def __init__(self, writer, **kw):
        super().__init__(daemon=True)
        self.writer = writer
        self.halt = threading.Event()
        self.kw = dict(kw, stop=self.halt)
        self.error = None
        self.t_start = None
        self.t_end = None
        LIVE.append(self)

    def stop(self):
        self.halt.set()

    def run(self):
        self.t_start = time.monotonic()
        try:
            self.writer.run(**self.kw)
        except Exception as e:  # reported by the case
            self.error = e
        self.t_end = time.monotonic()


# ---------------------------------------------------------------------------
# the consumer

RECORD_DDL = '''
CREATE TABLE IF NOT EXISTS public.blf_faults_delivered (
    server text NOT NULL,
    n bigint NOT NULL,
    batch_id bigint NOT NULL,
    op text NOT NULL,
    schema_name text,
    table_name text,
    gtid text,
    pk text,
    bd text,
    ad text,
    PRIMARY KEY (server, n))
'''

GET_SQL = ('SELECT batch_id, op, schema_name, table_name, gtid, primary_key::text, '
           'before::text, after::text FROM binlog_fdw.get(%s, %s, %s)')


def change_of_row(r):
    _, op, schema, table, gtid, pk, before, after = r
    if op in ('begin', 'commit'):
        return (op, None, None, gtid, None, None, None)
    if op == 'ddl':
        return (op, schema, None, gtid, None, None, None)
    return (op, schema, table, gtid, canon(loads(pk)) if pk is not None else None,
            digest_obj(loads(before)), digest_obj(loads(after)))


class Consumer(threading.Thread):
    """
    get -> record -> ack on one connection, reconnecting after errors.
    Finishes when stop() is called, or when it holds at least `target`
    changes and one more get() returns nothing, or at the deadline.
    """

    def __init__(self, pg, server, max_changes=2000, timeout_ms=300, sleep=0.0,
                 deadline=600.0, key=None):
        super().__init__(daemon=True)
        self.pg = pg
        self.server = server
        self.key = key or server      # the record's name in blf_faults_delivered
        self.max_changes = max_changes
        self.timeout_ms = timeout_ms
        self.sleep = sleep
        self.deadline = time.monotonic() + deadline
        self.target = None
        self.delivered = []
        self.lock = threading.Lock()
        self.hook_after_get = None      # fn(consumer, batch_id, nchanges)
        self.hook_after_ack = None      # fn(consumer, batch_id)
        self.errors = []
        self.reconnects = 0
        self.batches = 0
        self.partial_batches = 0        # batches that end inside a transaction
        self.empty_gets = 0
        self._halt = threading.Event()
        self.finished = None            # why it ended
        self.conn = None
        LIVE.append(self)
        c = self.pg.connect()
        try:
            with c.cursor() as cur:
                cur.execute(RECORD_DDL)
                cur.execute('DELETE FROM public.blf_faults_delivered WHERE server = %s', (self.key,))
        finally:
            c.close()

    def count(self):
        with self.lock:
            return len(self.delivered)

    def stop(self):
        self._halt.set()

    def _load(self, cur):
        cur.execute('SELECT op, schema_name, table_name, gtid, pk, bd, ad '
                    'FROM public.blf_faults_delivered WHERE server = %s ORDER BY n', (self.key,))
        rows = [tuple(r) for r in cur.fetchall()]
        with self.lock:
            if len(rows) != len(self.delivered):
                log('consumer %s: record reloaded: %d changes (held %d before the error)'
                    % (self.server, len(rows), len(self.delivered)))
            self.delivered = rows

    def _connect(self):
        self.conn = self.pg.connect(autocommit=False, app='blf-faults consumer')
        with self.conn.cursor() as cur:
            self._load(cur)
        self.conn.commit()

    def _drop_conn(self):
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:
                pass
        self.conn = None

    def run(self):
        while True:
            if self._halt.is_set():
                self.finished = self.finished or 'stopped'
                break
            if time.monotonic() > self.deadline:
                self.finished = 'deadline'
                break
            try:
                if self.conn is None:
                    self._connect()
                self._step()
            except psycopg2.Error as e:
                msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                if not self.errors or self.errors[-1][1] != msg:
                    log('consumer %s: %s' % (self.server, msg))
                self.errors.append((time.monotonic() - T0, msg))
                try:
                    if self.conn is not None and not self.conn.closed:
                        self.conn.rollback()
                except Exception:
                    pass
                if self.conn is None or self.conn.closed or isinstance(
                        e, (psycopg2.OperationalError, psycopg2.InterfaceError)):
                    self._drop_conn()
                    self.reconnects += 1
                time.sleep(0.2)
        self._drop_conn()

    def _step(self):
        with self.conn.cursor() as cur:
            cur.execute(GET_SQL, (self.server, self.max_changes, self.timeout_ms))
            rows = cur.fetchall()
            if not rows:
                self.conn.commit()
                self.empty_gets += 1
                if self.target is not None and self.count() >= self.target:
                    self.finished = 'complete'
                    self._halt.set()
                return
            batch_id = rows[0][0]
            changes = [change_of_row(r) for r in rows]
            self.batches += 1
            if changes[-1][0] not in ('commit', 'ddl'):
                self.partial_batches += 1
            if self.hook_after_get:
                self.hook_after_get(self, batch_id, len(changes))
            with self.lock:
                n0 = len(self.delivered)
            psycopg2.extras.execute_values(
                cur, 'INSERT INTO public.blf_faults_delivered '
                '(server, n, batch_id, op, schema_name, table_name, gtid, pk, bd, ad) VALUES %s',
                [(self.key, n0 + i, batch_id) + c for i, c in enumerate(changes)],
                page_size=1000)
            cur.execute('SELECT binlog_fdw.ack(%s, %s)', (self.server, batch_id))
            self.conn.commit()
            with self.lock:
                self.delivered.extend(changes)
        if self.hook_after_ack:
            self.hook_after_ack(self, batch_id)
        if self.sleep:
            time.sleep(self.sleep)

    def finish(self, target, timeout):
        """Set the target and wait for the consumer to reach it."""
        self.target = target
        self.deadline = min(self.deadline, time.monotonic() + timeout)
        self.join(timeout + 30)
        if self.is_alive():
            self.stop()
            self.join(30)
        return self.finished


# ---------------------------------------------------------------------------
# status monitor

def proc_status(pid):
    out = {}
    try:
        with open('/proc/%d/status' % pid) as f:
            for line in f:
                k, _, v = line.partition(':')
                if k in ('VmHWM', 'VmRSS', 'RssAnon', 'RssShmem', 'RssFile'):
                    out[k] = int(v.split()[0])
    except (OSError, ValueError):
        pass
    return out


class StatusMonitor(threading.Thread):
    def __init__(self, pg, server, interval=0.05):
        super().__init__(daemon=True)
        self.pg = pg
        self.server = server
        self.interval = interval
        self.states = collections.Counter()
        self.pids = []
        self.samples = []           # (t, used, total, peak_rss_kb, proc status)
        self.max_used = 0
        self.total = None
        self.violations = []
        self.errors = []            # distinct last_error values
        self.last = None
        self._halt = threading.Event()
        LIVE.append(self)

    def stop(self):
        self._halt.set()
        if self.is_alive():
            self.join(10)

    def run(self):
        conn = None
        while not self._halt.is_set():
            try:
                if conn is None:
                    conn = self.pg.connect(app='blf-faults monitor')
                with conn.cursor(cursor_factory=psycopg2.extras.RealDictCursor) as cur:
                    cur.execute('SELECT * FROM binlog_fdw.status WHERE server = %s', (self.server,))
                    row = cur.fetchone()
                if row:
                    self._sample(dict(row))
            except psycopg2.Error:
                if conn is not None:
                    try:
                        conn.close()
                    except Exception:
                        pass
                conn = None
                time.sleep(0.2)
            self._halt.wait(self.interval)
        if conn is not None:
            conn.close()

    def _sample(self, s):
        self.last = s
        self.states[s['state']] += 1
        pid = s['worker_pid']
        if pid and (not self.pids or self.pids[-1] != pid):
            self.pids.append(pid)
        used, total = s['ring_bytes_used'], s['ring_bytes_total']
        if used is not None and total is not None:
            self.total = total
            self.max_used = max(self.max_used, used)
            if used > total or used < 0:
                self.violations.append((used, total))
        ps = proc_status(pid) if pid else {}
        self.samples.append((time.monotonic() - T0, used, total, s['worker_peak_rss_kb'], ps))
        e = s['last_error']
        if e and (not self.errors or self.errors[-1] != e):
            self.errors.append(e)
