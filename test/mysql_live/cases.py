#!/usr/bin/python3
"""test/mysql_live/cases.py -- binlog_fdw's MySQL paths against the MySQL
test source (test/mysql_source), which serves real MySQL 8.0 / 8.4 / 9.x
binlogs from ../shared/binlog-samples.  One "ok - mysql/NAME" or
"not ok - mysql/NAME: reason" line per case (test/run.sh's protocol).

Cases:
  binlogcat-samples   ./binlogcat live (the client library, COM_BINLOG_DUMP)
                      prints exactly the JSON lines it prints for the same
                      files offline, for every MySQL 8.0/8.4/9.x sample
                      (fake ROTATE and HEARTBEAT aside): TRANSACTION_PAYLOAD,
                      PARTIAL_UPDATE_ROWS, tagged GTIDs, FULL and MINIMAL
                      metadata (MINIMAL: names from the source's
                      information_schema, live and offline alike)
  binlogcat-auth      the same with caching_sha2_password by RSA key exchange,
                      then its fast path, and mysql_native_password; a wrong
                      password is refused
  binlogcat-tls       caching_sha2_password full authentication over TLS
                      (password in clear), mysql_native_password over TLS,
                      verify-full / verify-ca against a CA made with openssl,
                      a wrong CA refused
  setup-80, setup-84  the setup queries as MySQL 8.0 and 8.4 answer them
                      (pymysql as a second client): SHOW MASTER STATUS gone
                      on 8.4, SHOW BINARY LOG STATUS only from 8.2;
                      binlogcat --start current takes the right one on each
  binlogcat-gtid-start  --start gtid:SET starts at the first transaction
                      not in the set (tagged sets too)
  source-dump-gtid    the test source's COM_BINLOG_DUMP_GTID, which
                      Connector/C cannot send, checked byte for byte with
                      pymysql's raw command API
  source-stream       a binlog_fdw source streams each sample: get_json()'s
                      changes equal the offline decode, with their GTIDs
  source-gtid-start   start => 'gtid:SET' (untagged and tagged)
  source-restart      PostgreSQL restarted after a partial ack: the rest
                      comes once, nothing acked comes again
  source-live         a source that is "written to" while the worker waits
                      (held transactions revealed one by one), heartbeats
                      while idle, the connections killed in between
  source-checks       missing REPLICATION SLAVE / REPLICATION CLIENT, a
                      STATEMENT binlog_format and a server_id clash stop the
                      source with the error that names the fix
  resume-gtid, resume-gtid-tagged, payload-gtid, failover-gtid, failover-order,
  resume-anonymous, failover-no-set
                      resuming by GTID set (COM_BINLOG_DUMP_GTID) after a
                      PostgreSQL restart, a source restart, and on another
                      host of a host list: see gtid_resume.py
  snapshot-lock-tables, snapshot-lock-global, load-lock-chunks,
  snapshot-lock-refused
                      a copy's snapshot locks exactly its tables (LOCK
                      TABLES on a second connection), no FLUSH TABLES WITH
                      READ LOCK; refused and timed-out locks: see
                      snapshot_lock.py
"""

import collections
import json
import os
import subprocess
import sys
import time
import traceback
from decimal import Decimal

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from source import Source, make_certs, sample  # noqa: E402

import psycopg2  # noqa: E402
import pymysql  # noqa: E402

ROOT = os.environ.get('BLF_ROOT') or os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
BINLOGCAT = os.path.join(ROOT, 'binlogcat')
TMP = os.environ.get('BLF_SUITE_TMP') or '/tmp/blf-mysql-live'
POSTGRES_SH = os.path.join(ROOT, 'scripts', 'postgres.sh')
os.makedirs(TMP, exist_ok=True)

SOURCES = []

# samples: (file, version the source reports, its schema for MINIMAL metadata)
SCHEMAS = {
    'binlog_transaction_with_GTID_TAG.000001': {'test': {'orders': [
        {'name': 'id', 'data_type': 'int', 'column_type': 'int', 'key': 'PRI', 'nullable': False},
        {'name': 'qty', 'data_type': 'int', 'column_type': 'int'},
        {'name': 'amount', 'data_type': 'decimal', 'column_type': 'decimal(10,2)'}]}},
    'transaction_compression.000001': {'test': {'tb1': [
        {'name': 'c1', 'data_type': 'int', 'column_type': 'int'}]}},
    'minimal_row_metadata.000001': {'noria': {'t1': [
        {'name': 'id', 'data_type': 'int', 'column_type': 'int', 'key': 'PRI', 'nullable': False},
        {'name': 'b', 'data_type': 'blob', 'column_type': 'blob'},
        {'name': 's', 'data_type': 'char', 'column_type': 'char(2)', 'charset': 'utf8mb4'},
        {'name': 'i', 'data_type': 'int', 'column_type': 'int'},
        {'name': 'u', 'data_type': 'int', 'column_type': 'int unsigned'}]}},
}
# MINIMAL samples whose binlog holds the table's CREATE TABLE: the schema
# history names the columns from it (binlogcat offline prints @1, @2, ...)
HISTORY_NAMES = {
    'json.binlog.000001': {('mysql', 't'): ['id', 'json_col', 'name', 'age']},
}


def with_history_names(f, changes):
    names = HISTORY_NAMES.get(f)
    if not names:
        return changes
    out = []
    for c in changes:
        cols = names.get((c[3], c[4]))
        c = list(c)
        for k in range(len(c)):
            v = c[k]
            if cols and isinstance(v, list) and all(isinstance(x, tuple) and len(x) == 2 for x in v):
                c[k] = [(cols[int(n[1:]) - 1] if isinstance(n, str) and n.startswith('@') and
                         int(n[1:]) <= len(cols) else n, x) for n, x in v]
        out.append(tuple(c))
    return out


SAMPLES = [
    ('mysql-enum-string-set.000001', '8.0.28', 'FULL'),
    ('binlog-invisible-columns.000001', '8.0.26', 'FULL'),
    ('mysql_type_bit.000001', '8.0.26', 'FULL'),
    ('json.binlog.000001', '8.0.22', 'MINIMAL'),
    ('transaction_compression.000001', '8.0.32', 'MINIMAL'),
    ('mysql-bin.compressed', '8.0.28', 'MINIMAL'),
    ('minimal_row_metadata.000001', '8.0.40', 'MINIMAL'),
    ('time_issue.000001', '8.0.40', 'MINIMAL'),
    ('binlog_transaction_with_GTID_TAG.000001', '8.4.3', 'MINIMAL'),
    ('vector.binlog', '9.0.1', 'FULL'),
    ('json-opaque.binlog', '9.0.1', 'FULL'),
]
ENUM_UUID = '93e95066-a2f4-11ec-9b69-9657f0ae95e2'
TAG_UUID = '55778904-0299-11f1-b1b8-4ef0c4956feb'


class CaseFailure(Exception):
    pass


def log(msg):
    for line in str(msg).splitlines() or ['']:
        print('# ' + line, flush=True)


def check(cond, msg):
    if not cond:
        raise CaseFailure(msg)


def short(v, n=300):
    s = str(v)
    return s if len(s) <= n else s[:n] + '...'


def source(name, files, **kw):
    s = Source(TMP, name, files, **kw)
    SOURCES.append(s)
    return s.start()


def wait_for(what, fn, timeout=30, interval=0.1):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(interval)
    raise CaseFailure('timed out after %ss waiting for %s (last: %s)' % (timeout, what, short(last)))


# ---- binlogcat -------------------------------------------------------------

def binlogcat_offline(files, extra=()):
    out = []
    for f in files:
        r = subprocess.run([BINLOGCAT, '--no-follow'] + list(extra) + [f], capture_output=True,
                           text=True, timeout=60)
        check(r.returncode == 0, 'binlogcat %s failed: %s' % (f, short(r.stderr)))
        out += [line for line in r.stdout.splitlines() if line]
    return out


def binlogcat_live(src, user='repl', password='sha2-secret', start='earliest', ssl=('--ssl-mode', 'disable'),
                   extra=(), expect_rc=0):
    args = [BINLOGCAT, '--host', '127.0.0.1', '--port', str(src.port), '--user', user,
            '--password', password, '--start', start, '--until-end'] + list(ssl) + list(extra)
    r = subprocess.run(args, capture_output=True, text=True, timeout=60)
    if expect_rc is not None:
        check(r.returncode == expect_rc, 'binlogcat live (%s) exited %d, expected %d: %s' % (
            ' '.join(args[1:]), r.returncode, expect_rc, short(r.stderr)))
    return r


def live_lines(stdout):
    """Live output less what only a live stream has: fake ROTATEs and heartbeats."""
    out = []
    for line in stdout.splitlines():
        if not line:
            continue
        e = json.loads(line)
        if e.get('fake') or e['type'] in ('HEARTBEAT', 'HEARTBEAT_V2'):
            continue
        out.append(line)
    return out


def compare_lines(got, want, what):
    if got == want:
        return
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            raise CaseFailure('%s: line %d differs:\n  live    %s\n  offline %s' % (what, i + 1, short(g), short(w)))
    raise CaseFailure('%s: %d lines live, %d offline' % (what, len(got), len(want)))


def assert_live_equals_offline(src, what, extra=(), schema=False, **kw):
    """binlogcat live equals binlogcat on the files; schema: the files name
    their columns from the source's information_schema, as live does."""
    r = binlogcat_live(src, extra=extra, **kw)
    offline = binlogcat_offline(src.files, extra=('--host', '127.0.0.1', '--port', str(src.port), '--user', 'repl',
                                                  '--password', 'sha2-secret', '--ssl-mode', 'disable',
                                                  '--schema-from-server') if schema else ())
    got = live_lines(r.stdout)
    compare_lines(got, offline, what)
    return got


def case_binlogcat_samples():
    for f, version, meta in SAMPLES:
        src = source('cat-' + f.split('.')[0], [f], version=version, binlog_row_metadata=meta,
                     schema=SCHEMAS.get(f, {}))
        lines = assert_live_equals_offline(src, f, schema=f in SCHEMAS)
        types = collections.Counter(json.loads(x)['type'] for x in lines)
        # MINIMAL metadata: column names came from the source's information_schema
        if f in SCHEMAS:
            rows = [json.loads(x) for x in lines if '"rows"' in x]
            check(rows and all('@1' not in json.dumps(x['rows']) for x in rows),
                  '%s: column names not taken from information_schema: %s' % (f, short(rows)))
        # the source's log is written asynchronously
        dump = wait_for('the dump in the source\'s log', lambda: src.entries('dump'), 10)
        check(len(dump) == 1 and dump[0]['flags'] & 1, '%s: expected one non-blocking COM_BINLOG_DUMP, log has %s' % (f, dump))
        log('%s (%s, %s): %d events live = offline: %s' % (f, version, meta, len(lines), dict(types)))
        src.stop()


def auth_paths(src):
    return [e.get('auth') or e.get('result') for e in src.entries('connect')]


def case_binlogcat_auth():
    src = source('auth', ['mysql-enum-string-set.000001'], binlog_row_metadata='FULL')
    # binlogcat opens the schema connection, then the dump connection: the
    # first authenticates in full (RSA: no TLS), the second takes the fast path
    assert_live_equals_offline(src, 'caching_sha2_password over plain TCP')
    paths = auth_paths(src)
    check(paths[:2] == ['sha2-full-rsa', 'sha2-fast'], 'auth paths %s, expected sha2-full-rsa then sha2-fast' % paths)
    check(src.entries('connect')[0].get('rsa_key_sent'), 'the client did not ask for the RSA public key')
    assert_live_equals_offline(src, 'mysql_native_password', user='native', password='native-secret')
    paths = auth_paths(src)
    check(paths[2:] == ['native', 'native'], 'auth paths %s, expected native twice' % paths)
    check(all(e.get('auth_switch') == 'mysql_native_password' for e in src.entries('connect')[2:]),
          'native accounts were not switched to mysql_native_password: %s' % src.entries('connect')[2:])
    r = binlogcat_live(src, password='wrong', expect_rc=1)
    check('Access denied for user' in r.stderr and '1045' in r.stderr, 'wrong password: %s' % short(r.stderr))
    log('auth paths: %s' % auth_paths(src))
    src.stop()


def case_binlogcat_tls(certs):
    src = source('tls', ['transaction_compression.000001'], version='8.0.32',
                 tls={'cert': certs['cert'], 'key': certs['key']}, schema=SCHEMAS['transaction_compression.000001'])
    assert_live_equals_offline(src, 'caching_sha2_password over TLS (require)', ssl=('--ssl-mode', 'require'),
                               schema=True)
    conns = src.entries('connect')[:2]  # binlogcat's two; the offline decode's come after
    check(all(c['tls'] for c in conns), 'connections without TLS: %s' % conns)
    check([c.get('auth') for c in conns][:2] == ['sha2-full-tls', 'sha2-fast'],
          'TLS auth paths %s, expected sha2-full-tls then sha2-fast' % [c.get('auth') for c in conns])
    assert_live_equals_offline(src, 'native over TLS, verify-full', user='native', password='native-secret',
                               ssl=('--ssl-mode', 'verify-full', '--ssl-ca', certs['ca']), schema=True)
    assert_live_equals_offline(src, 'verify-ca', ssl=('--ssl-mode', 'verify-ca', '--ssl-ca', certs['ca']),
                               schema=True)
    r = binlogcat_live(src, ssl=('--ssl-mode', 'verify-full', '--ssl-ca', certs['other_ca']), expect_rc=1)
    check('TLS' in r.stderr and 'other-ca.pem' in r.stderr, 'wrong CA: %s' % short(r.stderr))
    log('TLS: %s' % [(c.get('auth'), c.get('cipher')) for c in src.entries('connect')])
    src.stop()
    # a source without TLS: require fails, prefer falls back to plain
    plain = source('notls', ['transaction_compression.000001'], version='8.0.32')
    r = binlogcat_live(plain, ssl=('--ssl-mode', 'require'), expect_rc=1)
    check('TLS' in r.stderr, 'require against a source without TLS: %s' % short(r.stderr))
    plain.stop()


def my(src, user='native', password='native-secret'):
    return pymysql.connect(host='127.0.0.1', port=src.port, user=user, password=password, autocommit=True)


def my_err(conn, sql):
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            return None, cur.fetchall()
    except pymysql.MySQLError as e:
        return e.args[0], e.args[1]


def case_setup(version):
    src = source('setup-' + version, ['mysql-enum-string-set.000001'], version=version, binlog_row_metadata='FULL')
    conn = my(src)
    gtids = ENUM_UUID + ':1-5'
    v = my_err(conn, 'SELECT @@version, @@server_id, @@global.log_bin, @@global.binlog_format, '
                     '@@global.binlog_row_image, @@global.binlog_checksum, @@global.binlog_row_metadata, '
                     '@@global.gtid_mode, @@global.gtid_executed')
    check(v[0] is None and v[1][0] == (version, 1, 1, 'ROW', 'FULL', 'CRC32', 'FULL', 'ON', gtids),
          'settings: %s' % (v,))
    is84 = version.startswith('8.4')
    ms = my_err(conn, 'SHOW MASTER STATUS')
    bs = my_err(conn, 'SHOW BINARY LOG STATUS')
    want_row = ('mysql-enum-string-set.000001', 3331, '', '', gtids)
    if is84:
        check(ms[0] == 1064 and "near 'MASTER STATUS'" in ms[1], '8.4 SHOW MASTER STATUS: %s' % (ms,))
        check(bs[0] is None and bs[1][0] == want_row, '8.4 SHOW BINARY LOG STATUS: %s' % (bs,))
        check(my_err(conn, 'SHOW SLAVE HOSTS')[0] == 1064, '8.4 SHOW SLAVE HOSTS did not fail')
    else:
        check(bs[0] == 1064, '8.0 SHOW BINARY LOG STATUS: %s' % (bs,))
        check(ms[0] is None and ms[1][0] == want_row, '8.0 SHOW MASTER STATUS: %s' % (ms,))
    check(my_err(conn, 'SHOW REPLICAS')[0] is None, 'SHOW REPLICAS failed')
    bl = my_err(conn, 'SHOW BINARY LOGS')
    check(bl[1] == (('mysql-enum-string-set.000001', 3331, 'No'),), 'SHOW BINARY LOGS: %s' % (bl,))
    g = my_err(conn, 'SHOW GRANTS FOR CURRENT_USER()')
    check(g[1] == (('GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO `native`@`%`',),), 'grants: %s' % (g,))
    conn.close()
    # binlogcat --start current uses the statement this version has
    nq = len(src.queries())
    r = binlogcat_live(src, start='current')
    ev = [json.loads(x) for x in r.stdout.splitlines() if x]
    check(ev and ev[0].get('fake') and ev[0]['next_file_pos'] == 3331, 'start current: %s' % short(ev))
    # the source's log is written asynchronously: wait for binlogcat's SET
    q = wait_for('binlogcat\'s queries in the source\'s log', lambda: (lambda qq: qq if any(
        'binlog_checksum' in x and x.upper().startswith('SET') for x in qq) else None)(src.queries()[nq:]), 10)
    status_q = [x for x in q if 'STATUS' in x.upper() and x.upper().startswith('SHOW')]
    want = ['SHOW BINARY LOG STATUS'] if is84 else ['SHOW BINARY LOG STATUS', 'SHOW MASTER STATUS']
    check(status_q == want, 'position statements %s, expected %s' % (status_q, want))
    checksum = [x for x in q if 'binlog_checksum' in x and x.upper().startswith('SET')]
    check(checksum and '@source_binlog_checksum' in checksum[0] and '@master_binlog_checksum' in checksum[0],
          'checksum capability not announced: %s' % checksum)
    log('%s: position from %s' % (version, status_q[-1]))
    src.stop()


def case_binlogcat_gtid_start():
    src = source('gtidstart', ['mysql-enum-string-set.000001'], binlog_row_metadata='FULL')
    offline = [json.loads(x) for x in binlogcat_offline(src.files)]
    r = binlogcat_live(src, start='gtid:%s:1-3' % ENUM_UUID)
    got = [json.loads(x) for x in live_lines(r.stdout)]
    # FDE (and PREVIOUS_GTIDS before the start) aside, from GTID :4 on
    first = next(i for i, e in enumerate(offline) if e.get('gtid') == ENUM_UUID + ':4' and e['type'] == 'GTID')
    body = [e for e in got if e['type'] not in ('FORMAT_DESCRIPTION', 'PREVIOUS_GTIDS')]
    check(body == offline[first:], 'gtid start: got %s' % short([(e['pos'], e['type']) for e in body]))
    r = binlogcat_live(src, start='gtid:%s:1-5' % ENUM_UUID)
    check(all(json.loads(x)['type'] in ('FORMAT_DESCRIPTION', 'PREVIOUS_GTIDS') for x in live_lines(r.stdout)),
          'a set with every transaction still streamed some: %s' % short(r.stdout))
    src.stop()
    tag = source('gtidtag', ['binlog_transaction_with_GTID_TAG.000001'], version='8.4.3',
                 schema=SCHEMAS['binlog_transaction_with_GTID_TAG.000001'])
    r = binlogcat_live(tag, start='gtid:%s:1-13:mytag:1-2' % TAG_UUID)
    got = [json.loads(x) for x in live_lines(r.stdout)]
    check(any(e['type'] == 'GTID_TAGGED' and e['gtid'] == TAG_UUID + ':mytag:3' for e in got),
          'tagged gtid start: %s' % short(got))
    tag.stop()


def encode_gtid_set(members):
    """Gtid_set::encode of {uuid: [(first, last)]} (untagged format),
    written here independently of the test source."""
    import struct
    out = struct.pack('<Q', len(members))
    for uuid in sorted(members):
        out += bytes.fromhex(uuid.replace('-', ''))
        ivs = members[uuid]
        out += struct.pack('<Q', len(ivs))
        for a, b in ivs:
            out += struct.pack('<qq', a, b + 1)
    return out


def dump_gtid(src, members, flags=1, server_id=77):
    """COM_BINLOG_DUMP_GTID through pymysql's raw command API: the events
    (bytes without the OK byte) until the EOF of a non-blocking dump."""
    import struct
    conn = my(src)
    with conn.cursor() as cur:
        cur.execute("SET @source_binlog_checksum = 'CRC32', @source_heartbeat_period = 1000000000")
    data = encode_gtid_set(members)
    body = struct.pack('<HII', flags, server_id, 0) + struct.pack('<Q', 4) + struct.pack('<I', len(data)) + data
    conn._execute_command(0x1e, body)
    events = []
    while True:
        pkt = conn._read_packet()
        if pkt.is_eof_packet():
            break
        events.append(pkt.get_all_data()[1:])
    conn.close()
    return events


def case_source_dump_gtid():
    """The test source's COM_BINLOG_DUMP_GTID, checked with a client of
    its own (Connector/C has no GTID dump): fake ROTATE, FORMAT_DESCRIPTION
    (created cleared: the first transaction is skipped), PREVIOUS_GTIDS, a
    HEARTBEAT at the end of the skipped transactions, then the file's own
    bytes from the first transaction not in the set; errors as MySQL's."""
    src = source('dumpgtid', ['mysql-enum-string-set.000001'], binlog_row_metadata='FULL')
    raw = open(src.files[0], 'rb').read()
    evs = dump_gtid(src, {ENUM_UUID: [(1, 3)]})
    types = [e[4] for e in evs]
    check(types[:4] == [4, 15, 35, 27], 'first events %s, expected ROTATE, FDE, PREVIOUS_GTIDS, HEARTBEAT' % types[:4])
    check(int.from_bytes(evs[0][0:4], 'little') == 0 and evs[0][27:] [:-4] == b'mysql-enum-string-set.000001',
          'fake ROTATE %s' % evs[0])
    check(int.from_bytes(evs[1][19 + 52:19 + 56], 'little') == 0, 'FDE created not cleared')
    check(int.from_bytes(evs[3][13:17], 'little') == 1560, 'heartbeat log_pos %d, expected 1560 (after :3)'
          % int.from_bytes(evs[3][13:17], 'little'))
    check(b''.join(evs[4:]) == raw[1560:], 'events after the heartbeat are not the file from GTID :4 on')
    evs = dump_gtid(src, {ENUM_UUID: [(1, 5)]})
    check([e[4] for e in evs] == [4, 15, 35, 27], 'everything in the set: %s' % [e[4] for e in evs])
    for members, text in (({ENUM_UUID: [(1, 9)]}, 'more GTIDs than the source'),):
        try:
            dump_gtid(src, members)
            raise CaseFailure('no error for %s' % members)
        except pymysql.MySQLError as e:
            check(e.args[0] == 1236 and text in e.args[1], 'error %s' % (e.args,))
    anon = source('dumpgtid-anon', ['json.binlog.000001'], gtid_mode='ON')
    try:
        dump_gtid(anon, {})
        raise CaseFailure('no error for an anonymous transaction')
    except pymysql.MySQLError as e:
        check(e.args[0] == 1236 and 'anonymous transaction' in e.args[1], 'error %s' % (e.args,))
    off = source('dumpgtid-off', ['json.binlog.000001'])
    try:
        dump_gtid(off, {})
        raise CaseFailure('no error with gtid_mode OFF')
    except pymysql.MySQLError as e:
        check(e.args[0] == 1236 and 'GTID_MODE' in e.args[1], 'error %s' % (e.args,))
    log('COM_BINLOG_DUMP_GTID from %s:1-3: %d events' % (ENUM_UUID, len(types)))


# ---- binlog_fdw sources ----------------------------------------------------

def pg():
    c = psycopg2.connect(dbname=os.environ.get('PGDATABASE', 'postgres'))
    c.autocommit = True
    return c


def q(conn, sql, args=None):
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchall() if cur.description else None


def create_source(conn, name, src, start='earliest', user='repl', password='sha2-secret', **opts):
    drop_source(conn, name)
    options = {'host': '127.0.0.1', 'port': str(src.port), 'server_id': str(4100 + len(name)), 'start': start,
               'heartbeat': '1', 'connect_timeout': '5', 'ssl_mode': 'disable'}
    options.update({k: str(v) for k, v in opts.items()})
    with conn.cursor() as cur:
        opt_sql = ', '.join('%s %s' % (k, cur.mogrify('%s', (v,)).decode()) for k, v in options.items())
        cur.execute('CREATE SERVER %s FOREIGN DATA WRAPPER binlog_fdw OPTIONS (%s)' % (name, opt_sql))
        cur.execute('CREATE USER MAPPING FOR CURRENT_USER SERVER %s OPTIONS (user %%s, password %%s)' % name,
                    (user, password))
        cur.execute('SELECT binlog_fdw.start(%s)', (name,))


def drop_source(conn, name):
    if q(conn, 'SELECT 1 FROM pg_foreign_server WHERE srvname = %s', (name,)):
        q(conn, 'SELECT binlog_fdw.stop(%s)', (name,))
        q(conn, 'SELECT binlog_fdw.reset(%s)', (name,))
        q(conn, 'DROP SERVER %s CASCADE' % name)


def status(conn, name):
    with conn.cursor() as cur:
        cur.execute('SELECT * FROM binlog_fdw.status WHERE server = %s', (name,))
        row = cur.fetchone()
        return dict(zip([d[0] for d in cur.description], row)) if row else None


def jloads(text):
    return None if text is None else json.loads(text, object_pairs_hook=list, parse_float=Decimal)


def get_changes(conn, name, max_changes=1000, timeout_ms=200, ack=True):
    """One get_json() batch: its row changes as comparable tuples."""
    with conn.cursor() as cur:
        cur.execute('SELECT batch_id, file, pos, gtid, schema_name, table_name, op, before::text, after::text '
                    'FROM binlog_fdw.get_json(%s, %s, %s)', (name, max_changes, timeout_ms))
        rows = cur.fetchall()
    if rows and ack:
        q(conn, 'SELECT binlog_fdw.ack(%s, %s)', (name, rows[0][0]))
    return [(r[1], r[2], r[3], r[4], r[5], r[6], jloads(r[7]), jloads(r[8])) for r in rows
            if r[6] in ('insert', 'update', 'delete')]


def offline_changes(lines, gtid_filter=None):
    out = []
    for line in lines:
        e = json.loads(line, object_pairs_hook=list, parse_float=Decimal)
        d = dict(e)
        if 'rows' not in d:
            continue
        if gtid_filter and not gtid_filter(d.get('gtid')):
            continue
        for r in d['rows']:
            rd = dict(r)
            out.append((d['file'], d['pos'], d.get('gtid'), d['schema'], d['table'], d['op'],
                        rd.get('before'), rd.get('after')))
    return out


def collect(conn, name, want, timeout=30):
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < len(want) and time.monotonic() < deadline:
        got += get_changes(conn, name)
        st = status(conn, name)
        if st and st.get('last_error') and not got and 'state' in st and st['state'] == 'error':
            raise CaseFailure('source %s: %s' % (name, st['last_error']))
    return got


def compare_changes(got, want, what):
    if got == want:
        return
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            raise CaseFailure('%s: change %d differs:\n  got  %s\n  want %s' % (what, i + 1, short(g), short(w)))
    raise CaseFailure('%s: %d changes, expected %d (status: %s)' % (what, len(got), len(want), short(got[len(want):] or want[len(got):])))


def expected_for(src, f):
    extra = ()
    if f in SCHEMAS:
        extra = ('--host', '127.0.0.1', '--port', str(src.port), '--user', 'repl', '--password', 'sha2-secret',
                 '--ssl-mode', 'disable', '--schema-from-server')
    return offline_changes(binlogcat_offline(src.files, extra))


def case_source_stream(conn):
    for f, version, meta in SAMPLES:
        src = source('pg-' + f.split('.')[0], [f], version=version, binlog_row_metadata=meta,
                     schema=SCHEMAS.get(f, {}))
        want = with_history_names(f, expected_for(src, f))
        if not want:
            src.stop()
            continue
        name = 'my_stream'
        create_source(conn, name, src)
        got = collect(conn, name, want)
        st = status(conn, name)
        compare_changes(got, want, '%s (%s)' % (f, version))
        check(st['source_version'] == version, 'status source_version %s' % st['source_version'])
        time.sleep(0.3)
        extra = get_changes(conn, name, timeout_ms=300)
        check(extra == [], '%s: changes after the last one: %s' % (f, short(extra)))
        log('%s (%s): %d changes through get_json() = offline; status %s at %s:%s' % (
            f, version, len(got), st['state'], st.get('read_file'), st.get('read_pos')))
        drop_source(conn, name)
        src.stop()


def case_source_gtid_start(conn):
    src = source('pg-gtid', ['mysql-enum-string-set.000001'], binlog_row_metadata='FULL')
    want = [c for c in expected_for(src, 'x') if c[2] not in ('%s:%d' % (ENUM_UUID, i) for i in (1, 2, 3))]
    check(want, 'no changes after :3 in the sample')
    create_source(conn, 'my_gtid', src, start='gtid:%s:1-3' % ENUM_UUID)
    got = collect(conn, 'my_gtid', want)
    compare_changes(got, want, 'start gtid:%s:1-3' % ENUM_UUID)
    check(get_changes(conn, 'my_gtid', timeout_ms=500) == [], 'more changes than expected')
    drop_source(conn, 'my_gtid')
    src.stop()
    tag = source('pg-gtidtag', ['binlog_transaction_with_GTID_TAG.000001'], version='8.4.3',
                 schema=SCHEMAS['binlog_transaction_with_GTID_TAG.000001'])
    want = expected_for(tag, 'binlog_transaction_with_GTID_TAG.000001')
    create_source(conn, 'my_gtid', tag, start='gtid:%s:1-13:mytag:1-2' % TAG_UUID)
    got = collect(conn, 'my_gtid', want)
    compare_changes(got, want, 'tagged start')
    check(got[0][2] == TAG_UUID + ':mytag:3', 'tagged GTID of the change: %s' % (got[0][2],))
    drop_source(conn, 'my_gtid')
    create_source(conn, 'my_gtid', tag, start='gtid:%s:1-13:mytag:1-3' % TAG_UUID)
    wait_for('the source to stream', lambda: (status(conn, 'my_gtid') or {}).get('state') == 'streaming')
    check(get_changes(conn, 'my_gtid', timeout_ms=1000) == [], 'changes of a transaction in the set')
    drop_source(conn, 'my_gtid')
    tag.stop()


def case_source_restart(conn_box):
    conn = conn_box[0]
    src = source('pg-restart', ['mysql-enum-string-set.000001'], binlog_row_metadata='FULL')
    want = expected_for(src, 'x')
    create_source(conn, 'my_restart', src)
    # acknowledge batches of one change until the first row change is in
    got = []
    deadline = time.monotonic() + 30
    while not got and time.monotonic() < deadline:
        got += get_changes(conn, 'my_restart', max_changes=1)
    check(got, 'no change before the restart')
    acked = len(got)
    # one more batch taken but not acknowledged: it must come again
    inflight = get_changes(conn, 'my_restart', max_changes=1, ack=False)
    before = q(conn, 'SELECT file, pos, skip, gtid, gtid_state FROM binlog_fdw.source_state WHERE server_name = %s',
               ('my_restart',))
    conn.close()
    subprocess.run(['bash', POSTGRES_SH, 'restart', '--mode', 'immediate'], check=True, timeout=120,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    conn = conn_box[0] = wait_for('PostgreSQL', _try_pg)
    got += collect(conn, 'my_restart', want[len(got):])
    compare_changes(got, want, 'across the restart')
    check(get_changes(conn, 'my_restart', timeout_ms=500) == [], 'a duplicate after the restart')
    after = q(conn, 'SELECT file, pos, skip, gtid, gtid_state FROM binlog_fdw.source_state WHERE server_name = %s',
              ('my_restart',))
    log('acked %d of %d row change(s), %d more in flight; source_state before the restart %s, at the end %s' % (
        acked, len(want), len(inflight), before, after))
    dumps = src.entries('dump') + src.entries('dump_gtid')
    log('dumps: %s' % [(d['event'], d['file'], d['pos']) for d in dumps])
    drop_source(conn, 'my_restart')
    src.stop()


def _try_pg():
    try:
        c = pg()
        q(c, 'SELECT 1')
        return c
    except psycopg2.Error:
        return None


def case_source_live(conn):
    src = source('pg-live', ['mysql-enum-string-set.000001'], binlog_row_metadata='FULL', hold_transactions=2)
    want = expected_for(src, 'x')
    by_gtid = collections.OrderedDict()
    for c in want:
        by_gtid.setdefault(c[2], []).append(c)
    groups = list(by_gtid.values())
    check(len(groups) == 3, 'expected 3 row transactions in the sample, got %d' % len(groups))
    create_source(conn, 'my_live', src)
    got = collect(conn, 'my_live', groups[0])
    compare_changes(got, groups[0], 'before the held transactions')
    # idle at the end of what the source has written: heartbeats, nothing else
    st = wait_for('a heartbeat while idle', lambda: (lambda x: x if x and x.get('last_heartbeat') else None)(
        status(conn, 'my_live')), timeout=15)
    check(st['state'] == 'streaming', 'state %s while idle' % st['state'])
    check(get_changes(conn, 'my_live', timeout_ms=1500) == [], 'a held transaction was delivered')
    def all_dumps():
        return [e for e in src.entries() if e.get('event') in ('dump', 'dump_gtid')]
    hb = all_dumps()
    src.reveal()
    got += collect(conn, 'my_live', groups[1])
    src.kill_connections()
    wait_for('a new dump after the kill', lambda: len(all_dumps()) > len(hb))
    src.reveal()
    got += collect(conn, 'my_live', groups[2])
    compare_changes(got, want, 'live, with a kill in between')
    check(get_changes(conn, 'my_live', timeout_ms=500) == [], 'a duplicate after the reconnect')
    dumps = all_dumps()
    log('dumps: %s' % [(d['event'], d['file'], d['pos'], d.get('gtid_set')) for d in dumps])
    # gtid_mode ON and the set known from PREVIOUS_GTIDS: the reconnect goes by the set read
    check(len(dumps) >= 2 and dumps[0]['event'] == 'dump' and dumps[-1]['event'] == 'dump_gtid' and
          dumps[-1]['gtid_set'] == ENUM_UUID + ':1-4',
          'the reconnect did not resume at the GTID set read (%s:1-4): %s' % (ENUM_UUID, dumps))
    drop_source(conn, 'my_live')
    src.stop()


def case_source_checks(conn):
    src = source('pg-checks', ['mysql-enum-string-set.000001'], binlog_row_metadata='FULL',
                 replicas=[{'server_id': 4999, 'host': 'other-replica', 'port': 3306}])
    stmt = source('pg-stmt', ['mysql-enum-string-set.000001'], binlog_format='STATEMENT')
    cases = [
        (src, dict(user='noslave', password='pw'), 'lacks the REPLICATION SLAVE privilege'),
        (src, dict(user='noclient', password='pw'), 'lacks the REPLICATION CLIENT privilege'),
        (src, dict(server_id='4999'), 'already used by another replica'),
        (src, dict(server_id='1'), "the source's own server_id"),
        (stmt, {}, "binlog_format is STATEMENT"),
        (src, dict(password='wrong'), 'Access denied for user'),
    ]
    for s, kw, text in cases:
        create_source(conn, 'my_check', s, **kw)
        st = wait_for('the error "%s"' % text,
                      lambda: (lambda x: x if x and x.get('last_error') else None)(status(conn, 'my_check')))
        check(text in st['last_error'], 'expected "%s", got %s' % (text, st['last_error']))
        check(get_changes(conn, 'my_check', timeout_ms=100) == [], 'changes despite "%s"' % text)
        log('%s: %s' % (kw, short(st['last_error'], 200)))
        drop_source(conn, 'my_check')
    src.stop()
    stmt.stop()


def case_source_incident(conn):
    """An INCIDENT event (the source says changes may be missing from its
    binlog, bug40482-bin.000001): the worker stops at it with an error, as
    a replica's SQL thread does; it was passed over."""
    src = source('pg-incident', ['bug40482-bin.000001'], version='8.0.40', binlog_row_metadata='FULL')
    create_source(conn, 'my_incident', src)
    st = wait_for('the incident error',
                  lambda: (lambda x: x if x and x.get('last_error') and 'incident' in x['last_error']
                           else None)(status(conn, 'my_incident')))
    check('bug40482-bin.000001:106' in st['last_error'],
          'the error does not name the position: %s' % st['last_error'])
    log('incident: %s' % short(st['last_error'], 200))
    drop_source(conn, 'my_incident')
    src.stop()


def main(argv):
    # gtid_resume's cases use this module's helpers (and its SOURCES)
    sys.modules.setdefault('cases', sys.modules[__name__])
    import gtid_resume
    import snapshot_lock
    globals()['gtid_resume'] = gtid_resume
    only = set(argv)
    certs = make_certs(os.path.join(TMP, 'certs'))
    conn_box = [None]

    def with_pg(fn):
        def run():
            if conn_box[0] is None or conn_box[0].closed:
                conn_box[0] = pg()
                q(conn_box[0], 'CREATE EXTENSION IF NOT EXISTS binlog_fdw')
            return fn(conn_box[0])
        return run

    cases = [
        ('binlogcat-samples', case_binlogcat_samples),
        ('binlogcat-auth', case_binlogcat_auth),
        ('binlogcat-tls', lambda: case_binlogcat_tls(certs)),
        ('setup-80', lambda: case_setup('8.0.40')),
        ('setup-84', lambda: case_setup('8.4.3')),
        ('binlogcat-gtid-start', case_binlogcat_gtid_start),
        ('source-dump-gtid', case_source_dump_gtid),
        ('source-stream', with_pg(case_source_stream)),
        ('source-gtid-start', with_pg(case_source_gtid_start)),
        ('source-live', with_pg(case_source_live)),
        ('source-checks', with_pg(case_source_checks)),
        ('source-incident', with_pg(case_source_incident)),
        ('source-restart', with_pg(lambda c: case_source_restart(conn_box))),
        ('resume-gtid', with_pg(lambda c: gtid_resume.case_resume_gtid(conn_box))),
        ('resume-gtid-tagged', with_pg(lambda c: gtid_resume.case_resume_gtid_tagged(c))),
        ('payload-gtid', with_pg(lambda c: gtid_resume.case_payload_gtid(conn_box))),
        ('failover-gtid', with_pg(lambda c: gtid_resume.case_failover_gtid(c))),
        ('failover-order', with_pg(lambda c: gtid_resume.case_failover_order(conn_box))),
        ('resume-anonymous', with_pg(lambda c: gtid_resume.case_resume_anonymous(c))),
        ('failover-no-set', with_pg(lambda c: gtid_resume.case_failover_no_set(c))),
        ('snapshot-lock-tables', with_pg(snapshot_lock.case_snapshot_lock_tables)),
        ('snapshot-lock-global', with_pg(snapshot_lock.case_snapshot_lock_global)),
        ('load-lock-chunks', with_pg(snapshot_lock.case_load_lock_chunks)),
        ('snapshot-lock-refused', with_pg(snapshot_lock.case_snapshot_lock_refused)),
    ]
    failed = 0
    for name, fn in cases:
        if only and name not in only:
            continue
        t0 = time.monotonic()
        try:
            fn()
            print('ok - mysql/%s (%.1fs)' % (name, time.monotonic() - t0), flush=True)
        except Exception as e:  # noqa: BLE001 -- every failure is a case line
            failed += 1
            log(traceback.format_exc())
            reason = str(e).splitlines()[0] if str(e) else type(e).__name__
            print('not ok - mysql/%s: %s' % (name, reason), flush=True)
        finally:
            for s in SOURCES:
                s.stop()
            del SOURCES[:]
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
