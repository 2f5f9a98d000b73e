"""
test/streaming/common.py -- helpers of the live streaming tests
(test/streaming/streaming.py): connections to PostgreSQL main and MariaDB
main, sources (foreign servers) started and stopped, changes fetched with
get(), waits with deadlines, and the case protocol.
"""

import json
import os
import subprocess
import sys
import time
import traceback

import psycopg2
import psycopg2.extensions
import pymysql

ROOT = os.environ.get('BLF_ROOT') or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
RUN = os.environ.get('BLF_RUN', '/var/tmp/binlog_fdw')
MARIADB_SH = os.path.join(ROOT, 'scripts', 'mariadb.sh')
POSTGRES_SH = os.path.join(ROOT, 'scripts', 'postgres.sh')
MDB_PORT = int(os.environ.get('BLF_MARIADB_PORT', '3406'))
MDB_SOCKET = os.environ.get('BLF_MARIADB_SOCKET', os.path.join(RUN, 'mariadb-main.sock'))
MDB_DATA = os.environ.get('BLF_MARIADB_DATA', os.path.join(RUN, 'mariadb-main'))
REPL_USER = os.environ.get('BLF_MYSQL_USER', 'repl')
REPL_PW = os.environ.get('BLF_MYSQL_PASSWORD', 'repl')
PGHOST = os.environ.get('PGHOST') or os.environ.get('BLF_PG_SOCKET_DIR', RUN)
PGPORT = int(os.environ.get('PGPORT') or os.environ.get('BLF_PG_PORT', '5440'))
PGUSER = os.environ.get('PGUSER', 'postgres')
TMP = os.environ.get('BLF_SUITE_TMP') or os.path.join(RUN, 'tmp', '60-streaming')
SECOND_PORT = int(os.environ.get('BLF_STREAM_SECOND_PORT', '3407'))
NOPRE_PORT = int(os.environ.get('BLF_STREAM_NOPRE_PORT', '5441'))

PGDB = 'blf_stream'              # the suite's PostgreSQL database
MDB = 'blf_stream'               # the suite's MariaDB database

GET_COLS = ('batch_id, seq, file, pos, next_pos, gtid, xid, commit_time, event_time, '
            'server_id, schema_name, table_name, op, pk_columns, primary_key::text, '
            'before::text, after::text, ddl')
# get_json(): the same columns, its json images cast to jsonb (to compare
# them with get()'s)
GET_JSON_COLS = (GET_COLS.replace('primary_key::text', 'primary_key::jsonb::text')
                 .replace('before::text', 'before::jsonb::text').replace('after::text', 'after::jsonb::text'))
GET_NAMES = ['batch_id', 'seq', 'file', 'pos', 'next_pos', 'gtid', 'xid', 'commit_time',
             'event_time', 'server_id', 'schema_name', 'table_name', 'op', 'pk_columns',
             'primary_key', 'before', 'after', 'ddl']


def log(msg):
    for line in str(msg).splitlines() or ['']:
        print('# ' + line, flush=True)


class Fail(Exception):
    """A failed assertion of a case: its message is the case's reason."""


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def short(v, n=160):
    s = v if isinstance(v, str) else repr(v)
    s = ''.join(ch if ch.isprintable() else '\\x%02x' % ord(ch) if ord(ch) < 256 else
                '\\u%04x' % ord(ch) for ch in s)
    return s if len(s) <= n else s[:n] + '...(%d chars)' % len(s)


def sh(args, check_rc=True, timeout=180, env=None):
    p = subprocess.run(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=timeout, text=True,
                       env=dict(os.environ, **(env or {})))
    if check_rc and p.returncode != 0:
        raise RuntimeError('%s failed (exit %d): %s' % (' '.join(args[:4]), p.returncode,
                                                        p.stdout.strip()[-1500:]))
    return p.stdout


class Deadline:
    def __init__(self, seconds):
        self.end = time.monotonic() + seconds

    def left(self):
        return self.end - time.monotonic()

    def expired(self):
        return self.left() <= 0


def wait_for(what, fn, timeout=20, interval=0.1):
    """Call fn until it returns something true; Fail after timeout."""
    d = Deadline(timeout)
    last = None
    while True:
        try:
            v = fn()
            last = v
            if v:
                return v
        except (psycopg2.OperationalError, psycopg2.InterfaceError) as e:
            last = e
        if d.expired():
            raise Fail('timed out after %ss waiting for %s (last: %s)' % (timeout, what, short(last)))
        time.sleep(interval)


# ---------------------------------------------------------------------------
# Connections

def pg(db=PGDB, port=None, host=None):
    c = psycopg2.connect(host=host or PGHOST, port=port or PGPORT, user=PGUSER, dbname=db,
                         application_name='60-streaming', connect_timeout=10)
    c.autocommit = True
    return c


def q(conn, sql, args=None):
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchall() if cur.description else []


def q1(conn, sql, args=None):
    rows = q(conn, sql, args)
    return rows[0][0] if rows else None


def mdb(port=None, socket=None, db=None, **extra):
    """A MariaDB connection; extra: more pymysql.connect() options."""
    kw = dict(user='root', password='', database=db, charset='utf8mb4', autocommit=True,
              max_allowed_packet=1 << 28, read_timeout=120, write_timeout=120)
    kw.update(extra)
    if port:
        kw.update(host='127.0.0.1', port=port)
    else:
        kw.update(unix_socket=socket or MDB_SOCKET)
    c = pymysql.connect(**kw)
    with c.cursor() as cur:
        cur.execute("SET time_zone = '+00:00', sql_mode = ''")
    return c


def mx(conn, sql, args=None):
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchall() if cur.description else []


def last_gtid(conn):
    return mx(conn, 'SELECT @@last_gtid')[0][0]


def master_status(conn):
    r = mx(conn, 'SHOW MASTER STATUS')
    return r[0][0], int(r[0][1])


# ---------------------------------------------------------------------------
# Sources

def create_source(conn, name, server_id, port=None, start='current', include=None,
                  exclude=None, heartbeat='1', extra=None):
    opts = {'host': '127.0.0.1', 'port': str(port or MDB_PORT), 'server_id': str(server_id),
            'start': start, 'heartbeat': heartbeat, 'connect_timeout': '5'}
    if include:
        opts['include'] = include
    if exclude:
        opts['exclude'] = exclude
    opts.update(extra or {})
    with conn.cursor() as cur:
        cur.execute('CREATE SERVER %s FOREIGN DATA WRAPPER binlog_fdw OPTIONS (%s)' % (
            name, ', '.join('%s %s' % (k, cur.mogrify('%s', (v,)).decode()) for k, v in opts.items())))
        cur.execute('CREATE USER MAPPING FOR current_user SERVER %s OPTIONS (user %%s, password %%s)'
                    % name, (REPL_USER, REPL_PW))


def status(conn, name):
    with conn.cursor() as cur:
        cur.execute('SELECT * FROM binlog_fdw.status WHERE server = %s', (name,))
        r = cur.fetchone()
        if r is None:
            return None
        return dict(zip([d[0] for d in cur.description], r))


def wait_streaming(conn, name, timeout=30):
    def ok():
        s = status(conn, name)
        if s and s['state'] == 'streaming' and s['acked_file']:
            return s
        return None
    try:
        return wait_for('source %s streaming' % name, ok, timeout)
    except Fail:
        raise Fail('source %s is not streaming after %ss: %s' % (name, timeout, short(status(conn, name), 600)))


def start_source(conn, name, server_id, **kw):
    create_source(conn, name, server_id, **kw)
    # the worker starts when start()'s transaction commits
    q(conn, 'SELECT binlog_fdw.start(%s)', (name,))
    return wait_streaming(conn, name)


def drop_source(conn, name):
    """Stop a source, forget its position, drop the server (no errors)."""
    for sql in ('SELECT binlog_fdw.stop(%s)', 'SELECT binlog_fdw.reset(%s)'):
        try:
            q(conn, sql, (name,))
        except psycopg2.Error as e:
            log('cleanup of %s: %s' % (name, str(e).strip()))
    try:
        q(conn, 'DROP SERVER IF EXISTS %s CASCADE' % name)
    except psycopg2.Error as e:
        log('cleanup of %s: %s' % (name, str(e).strip()))


class Change(dict):
    """A row of get() (or of a foreign table) with before/after parsed."""

    def __getattr__(self, k):
        try:
            return self[k]
        except KeyError:
            raise AttributeError(k)


class Num(str):
    """A JSON number, kept as its exact text."""


def parse_json(text):
    if text is None:
        return None
    return json.loads(text, parse_float=Num, parse_int=Num)


def to_change(names, row):
    c = Change(zip(names, row))
    for k in ('primary_key', 'before', 'after'):
        if k in c:
            c[k] = parse_json(c[k])
    return c


def get(conn, name, max_changes=1000, timeout_ms=0, fn='get'):
    """One get() (or get_json(), fn='get_json', or get_jsonl(), fn='get_jsonl'):
    the batch as a list of Change (empty if nothing)."""
    if fn == 'get_jsonl':
        return get_jsonl(conn, name, max_changes, timeout_ms)
    assert fn in ('get', 'get_json')
    with conn.cursor() as cur:
        cur.execute('SELECT %s FROM binlog_fdw.%s(%%s, %%s, %%s)' % (
            GET_JSON_COLS if fn == 'get_json' else GET_COLS, fn), (name, max_changes, timeout_ms))
        return [to_change(GET_NAMES, r) for r in cur.fetchall()]


JSONL_INTS = ('seq', 'pos', 'next_pos', 'xid', 'server_id')


def get_jsonl(conn, name, max_changes=1000, timeout_ms=0, sizes=None):
    """One get_jsonl(): its lines as Change objects like get()'s rows (each
    line's objects through jsonb, as get() shows them; times as datetimes);
    checks the row's first_seq, last_seq and changes against the lines.
    sizes: a list to append the text's length to."""
    import datetime
    with conn.cursor() as cur:
        cur.execute('SELECT batch_id, first_seq, last_seq, changes, lines '
                    'FROM binlog_fdw.get_jsonl(%s, %s, %s)', (name, max_changes, timeout_ms))
        rows = cur.fetchall()
        if not rows:
            return []
        check(len(rows) == 1, 'get_jsonl() returned %d rows' % len(rows))
        batch_id, first, last, n, text = rows[0]
        check(text.endswith('\n'), 'get_jsonl() text does not end with a newline: %s' % short(text[-80:]))
        lines = text[:-1].split('\n')
        check(len(lines) == n, 'get_jsonl() changes = %d, %d lines' % (n, len(lines)))
        cur.execute('SELECT l::jsonb::text FROM unnest(%s::text[]) WITH ORDINALITY u(l, i) ORDER BY i',
                    (lines,))
        out = []
        for (norm,) in cur.fetchall():
            d = parse_json(norm)
            c = Change((k, d.get(k)) for k in GET_NAMES)
            c['batch_id'] = batch_id
            for k in JSONL_INTS:
                if c[k] is not None:
                    c[k] = int(c[k])
            for k in ('commit_time', 'event_time'):
                if c[k] is not None:
                    c[k] = datetime.datetime.fromisoformat(c[k])
            out.append(c)
        check(out[0].seq == first and out[-1].seq == last,
              'get_jsonl() first_seq %d last_seq %d, lines %d..%d' % (first, last, out[0].seq, out[-1].seq))
        if sizes is not None:
            sizes.append((len(text.encode()), len(lines[-1].encode()) + 1))
        return out


def get_batches(conn, name, nchanges, max_changes=1000, timeout=30, ack=False, fn='get'):
    """get() (or get_json()) until nchanges changes came; returns the batches
    (lists)."""
    batches = []
    n = 0
    d = Deadline(timeout)
    while n < nchanges:
        if d.expired():
            raise Fail('got %d of %d changes from %s within %ss (status: %s)' % (
                n, nchanges, name, timeout, short(status(conn, name), 600)))
        b = get(conn, name, max_changes, 300, fn=fn)
        if not b:
            continue
        batches.append(b)
        n += len(b)
        if ack:
            q(conn, 'SELECT binlog_fdw.ack(%s, %s)', (name, b[0].batch_id))
    check(n == nchanges, 'expected %d changes from %s, got %d; the last: %s' % (
        nchanges, name, n, short([(c.op, c.schema_name, c.table_name, c.ddl) for c in flat(batches)[nchanges - 2:]], 600)))
    return batches


def flat(batches):
    return [c for b in batches for c in b]


# ---------------------------------------------------------------------------
# Cases

def mark_pg_case(name):
    """What PostgreSQL main logs from now on is case name's
    (test/lib/logcheck.py, the allowlist of the suite)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
    from logcheck import mark_case
    try:
        c = psycopg2.connect(host=PGHOST, port=PGPORT, user=PGUSER, dbname='postgres', connect_timeout=10)
        c.autocommit = True
        with c.cursor() as cur:
            mark_case(cur, name)
        c.close()
    except psycopg2.Error as e:
        log('could not mark case %s in the server log: %s' % (name, e))


class Runner:
    def __init__(self):
        self.failed = 0
        self.passed = 0

    def run(self, name, fn, *args):
        t0 = time.monotonic()
        log('---- %s' % name)
        mark_pg_case('streaming/' + name)
        try:
            fn(*args)
        except Fail as e:
            self.failed += 1
            print('not ok - streaming/%s: %s' % (name, short(str(e), 1500)), flush=True)
        except Exception as e:
            self.failed += 1
            log(traceback.format_exc())
            print('not ok - streaming/%s: %s: %s' % (name, type(e).__name__, short(str(e).strip(), 800)),
                  flush=True)
        else:
            self.passed += 1
            print('ok - streaming/%s' % name, flush=True)
        log('%s: %.1fs' % (name, time.monotonic() - t0))
