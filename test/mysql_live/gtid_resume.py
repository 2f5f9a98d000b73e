"""test/mysql_live/gtid_resume.py -- a binlog_fdw source on a MySQL server
with gtid_mode=ON resumes by GTID set (COM_BINLOG_DUMP_GTID), against the
MySQL test source.  Cases of cases.py:

  resume-gtid       MySQL 5.7 binlog with multi-row transactions (zalora's
                    gtid-fixtures): a PostgreSQL restart in the middle of a
                    transaction resumes by the set before it and skips the
                    changes already acknowledged; a restart of the source,
                    which comes back with the binlog under another file name
                    (a file:pos resume could not work), resumes by the set;
                    the changes delivered are the binlog's, once each
  resume-gtid-tagged  MySQL 8.4 tagged GTIDs: the set sent is MySQL's tagged
                    encoding ("uuid:1-13:mytag:1-2"), the tagged transaction
                    after it comes once, none of the set comes
  payload-gtid      TRANSACTION_PAYLOAD (a compressed transaction) in GTID
                    mode: the real sample with its ANONYMOUS_GTID made a GTID
                    (nothing else changed but the checksum), streamed live
                    after a source restart by the set the file's
                    PREVIOUS_GTIDS gave, and not again after a PostgreSQL
                    restart (the set then holds it)
  resume-anonymous  gtid_mode=ON with an anonymous transaction after the set
                    read (a binlog from before gtid_mode=ON): the server
                    refuses the GTID dump there, the worker resumes by file
                    and position; the anonymous and later transactions once
  failover-order    PostgreSQL restarts inside a transaction while the host
                    that served it is down; the other host's binlog has the
                    next transaction before it (a replica that committed
                    them in another order): that one is passed over, the
                    open one's acknowledged changes are skipped, the passed
                    over one comes in a new session; nothing lost or repeated
  failover-no-set   a single-host source whose position has no GTID set yet
                    (started at a file position) given a host list: refused
                    with an error naming the fix, no dump, no change
  failover-gtid     a host list of three test sources serving the same
                    transactions under other file names and server UUIDs:
                    the streaming host stops, a host that has not executed
                    the set read is passed over (no dump sent to it), the
                    next one serves the rest by GTID set, nothing lost or
                    repeated
"""

import os
import shutil
import struct
import subprocess
import uuid
import zlib

import cases
from source import SAMPLES, sample
from cases import (CaseFailure, check, collect, compare_changes, create_source, drop_source,  # noqa: F401
                   get_changes, log, q, short, source, status, wait_for)

ZALORA = os.path.join(SAMPLES, 'zalora-binlog-parser', 'data', 'gtid-fixtures', 'mysql-bin.01')
ZALORA_UUID = '10440e47-3885-11eb-ac5b-0242ac110002'
ZALORA_SCHEMA = {'test_db': {
    'buildings': [
        {'name': 'building_no', 'data_type': 'int', 'column_type': 'int', 'key': 'PRI', 'nullable': False},
        {'name': 'building_name', 'data_type': 'varchar', 'column_type': 'varchar(255)', 'charset': 'utf8mb3',
         'nullable': False},
        {'name': 'address', 'data_type': 'varchar', 'column_type': 'varchar(355)', 'charset': 'utf8mb3',
         'nullable': False}],
    'rooms': [
        {'name': 'room_no', 'data_type': 'int', 'column_type': 'int', 'key': 'PRI', 'nullable': False},
        {'name': 'room_name', 'data_type': 'varchar', 'column_type': 'varchar(255)', 'charset': 'utf8mb3',
         'nullable': False},
        {'name': 'building_no', 'data_type': 'int', 'column_type': 'int', 'nullable': False}]}}
TAG_FILE = 'binlog_transaction_with_GTID_TAG.000001'


def expected(src):
    extra = ('--host', '127.0.0.1', '--port', str(src.port), '--user', 'repl', '--password', 'sha2-secret',
             '--ssl-mode', 'disable', '--schema-from-server')
    return cases.offline_changes(cases.binlogcat_offline(src.files, extra))


def renamed(path, name):
    """The binlog under another file name (the source's data dir, not the
    samples), as a server whose binlogs were rebuilt or a replica has it."""
    d = os.path.join(cases.TMP, 'renamed')
    os.makedirs(d, exist_ok=True)
    out = os.path.join(d, name)
    shutil.copyfile(path, out)
    return out


PAYLOAD_UUID = '7a3c0f1e-5b2d-4c8e-9f10-aa55cc33ee77'


def anonymous_to_gtid(src_path, name, sid, gno):
    """The binlog with its ANONYMOUS_GTID events made GTID events sid:gno,
    gno+1, ... (the same layout: flags, sid, gno; checksums recomputed)."""
    data = bytearray(open(src_path, 'rb').read())
    pos = 4
    crc = False
    while pos < len(data):
        size = struct.unpack_from('<I', data, pos + 9)[0]
        typ = data[pos + 4]
        if typ == 15:
            crc = data[pos + size - 5] == 1
        if typ == 34:
            data[pos + 4] = 33
            data[pos + 20:pos + 36] = uuid.UUID(sid).bytes
            struct.pack_into('<q', data, pos + 36, gno)
            gno += 1
            if crc:
                struct.pack_into('<I', data, pos + size - 4,
                                 zlib.crc32(bytes(data[pos:pos + size - 4])) & 0xffffffff)
        pos += size
    d = os.path.join(cases.TMP, 'rewritten')
    os.makedirs(d, exist_ok=True)
    out = os.path.join(d, name)
    with open(out, 'wb') as f:
        f.write(data)
    return out


def swapped(src_path, name, first_gtid, second_gtid):
    """The binlog with the adjacent transactions first_gtid, second_gtid
    (GTID event to XID) in the other order: log_pos and checksums
    rewritten, as a replica that committed them the other way round has it."""
    data = open(src_path, 'rb').read()
    events = []
    pos = 4
    crc = False
    while pos < len(data):
        size = struct.unpack_from('<I', data, pos + 9)[0]
        if data[pos + 4] == 15:
            crc = data[pos + size - 5] == 1
        events.append(bytearray(data[pos:pos + size]))
        pos += size

    def gtid_of(ev):
        return '%s:%d' % (uuid.UUID(bytes=bytes(ev[20:36])), struct.unpack_from('<q', ev, 36)[0])

    starts = [i for i, ev in enumerate(events) if ev[4] == 33]
    a = next(i for i in starts if gtid_of(events[i]) == first_gtid)
    b = next(i for i in starts if gtid_of(events[i]) == second_gtid)
    end = next((i for i in starts if i > b), len(events))
    events = events[:a] + events[b:end] + events[a:b] + events[end:]
    out = bytearray(data[:4])
    for ev in events:
        struct.pack_into('<I', ev, 13, len(out) + len(ev))
        if crc:
            struct.pack_into('<I', ev, len(ev) - 4, zlib.crc32(bytes(ev[:-4])) & 0xffffffff)
        out += ev
    d = os.path.join(cases.TMP, 'rewritten')
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, name)
    with open(path, 'wb') as f:
        f.write(out)
    return path


def as_file(changes, name):
    return [(name,) + c[1:] for c in changes]


def take(conn, name, n, timeout=30):
    """Row changes, one change a batch, acknowledged, until n came."""
    import time
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        got += get_changes(conn, name, max_changes=1)
    check(len(got) >= n, 'only %d of %d changes came' % (len(got), n))
    return got


def durable(conn, name):
    rows = q(conn, 'SELECT file, pos, skip, gtid, gtid_state FROM binlog_fdw.source_state '
             'WHERE server_name = %s', (name,))
    check(rows, 'no source_state for %s' % name)
    return dict(zip(('file', 'pos', 'skip', 'gtid', 'gtid_state'), rows[0]))


def drained_until(conn, name, want_state):
    """Take (and acknowledge) what is left, which must hold no row change,
    until the durable GTID state is want_state."""
    def step():
        extra = get_changes(conn, name, timeout_ms=200)
        check(extra == [], 'a change more: %s' % short(extra))
        st = durable(conn, name)
        return st if st['gtid_state'] == want_state else None
    return wait_for('the durable GTID state %s' % want_state, step)


def gtid_dumps(src):
    return src.entries('dump_gtid')


def stream_dumps(src):
    """The file:pos dumps of streaming sessions: not the non-blocking ones
    (flag BINLOG_DUMP_NON_BLOCK) with which the worker reads the binlog to
    its end before it seeds its schema history."""
    return [e for e in src.entries('dump') if not e.get('flags', 0) & 1]


def case_resume_gtid(conn_box):
    conn = conn_box[0]
    src = source('pg-resume', [ZALORA], binlog_row_metadata='MINIMAL', schema=ZALORA_SCHEMA,
                 hold_transactions=2)
    want = expected(src)
    txns = {}
    for c in want:
        txns.setdefault(c[2], []).append(c)
    g20 = '%s:20' % ZALORA_UUID
    check(len(want) == 10 and len(txns[g20]) == 5, 'the sample: %d changes, %s' % (len(want), short(txns.keys())))
    visible = [c for c in want if c[2] in ('%s:19' % ZALORA_UUID, g20)]
    create_source(conn, 'my_resume', src)
    # :19 (2 rows) and 2 of the 5 rows of :20 acknowledged, a third taken only
    got = take(conn, 'my_resume', 4)
    inflight = get_changes(conn, 'my_resume', max_changes=1, ack=False)
    st = durable(conn, 'my_resume')
    check(st['gtid'] == g20 and st['skip'] > 0, 'durable position not inside %s: %s' % (g20, st))
    check(st['gtid_state'] == '%s:1-19' % ZALORA_UUID, 'durable GTID state %s' % short(st['gtid_state']))
    ndumps = len(gtid_dumps(src))
    check(ndumps == 0 and len(stream_dumps(src)) == 1,
          'the first session reads by file:pos (the set is unknown before PREVIOUS_GTIDS): %s'
          % short(stream_dumps(src) + gtid_dumps(src)))

    conn.close()
    subprocess.run(['bash', cases.POSTGRES_SH, 'restart', '--mode', 'immediate'], check=True, timeout=120,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    conn = conn_box[0] = wait_for('PostgreSQL', cases._try_pg)
    got += collect(conn, 'my_resume', visible[len(got):])
    compare_changes(got, visible, 'across the PostgreSQL restart')
    check(get_changes(conn, 'my_resume', timeout_ms=500) == [], 'a duplicate after the PostgreSQL restart')
    d = gtid_dumps(src)
    check(len(d) == 1 and d[0]['file'] == '' and d[0]['gtid_set'] == st['gtid_state'],
          'after the PostgreSQL restart: not one COM_BINLOG_DUMP_GTID at %s: %s' % (st['gtid_state'], short(d)))
    log('PostgreSQL restart inside %s (skip %s, 1 change in flight: %s): COM_BINLOG_DUMP_GTID %s; '
        'the other %d changes of it once' % (g20, st['skip'], len(inflight), d[0]['gtid_set'], len(visible) - 4))

    # the source restarts with its binlog under another name
    drained_until(conn, 'my_resume', '%s:1-20' % ZALORA_UUID)
    src.restart(files=[renamed(ZALORA, 'binlog.000007')])
    wait_for('a dump on the restarted source', lambda: len(gtid_dumps(src)) == 2, timeout=60)
    d = gtid_dumps(src)[-1]
    check(d['file'] == '' and d['gtid_set'] == '%s:1-20' % ZALORA_UUID,
          'after the source restart: COM_BINLOG_DUMP_GTID at %s' % short(d))
    check(get_changes(conn, 'my_resume', timeout_ms=1000) == [], 'changes of the set after the source restart')
    src.reveal(all_=True)
    rest = collect(conn, 'my_resume', want[len(visible):])
    compare_changes(rest, as_file(want[len(visible):], 'binlog.000007'), 'after the source restart')
    got += rest
    check(get_changes(conn, 'my_resume', timeout_ms=500) == [], 'a duplicate after the source restart')
    check(len(got) == len(want), '%d changes, the binlog has %d' % (len(got), len(want)))
    st = drained_until(conn, 'my_resume', '%s:1-22' % ZALORA_UUID)
    log('source restart (binlog renamed to binlog.000007): COM_BINLOG_DUMP_GTID %s; %d changes in all = '
        'the binlog; durable %s:%s state %s' % (d['gtid_set'], len(got), st['file'], st['pos'], st['gtid_state']))
    drop_source(conn, 'my_resume')
    src.stop()


def case_resume_gtid_tagged(conn):
    src = source('pg-resume-tag', [TAG_FILE], version='8.4.3',
                 schema=cases.SCHEMAS[TAG_FILE], hold_transactions=1)
    want = expected(src)
    tagged = '%s:mytag:3' % cases.TAG_UUID
    check(len(want) == 1 and want[0][2] == tagged, 'the sample: %s' % short(want))
    first = [cases.json.loads(line) for line in cases.binlogcat_offline(src.files)]
    gtid_pos = next(e['pos'] for e in first if e['type'] == 'GTID_TAGGED')
    create_source(conn, 'my_resume_tag', src)
    # the tagged transaction is held: the worker read up to it (PREVIOUS_GTIDS)
    wait_for('the worker to read PREVIOUS_GTIDS',
             lambda: ((status(conn, 'my_resume_tag') or {}).get('read_pos') or 0) >= gtid_pos)
    src.restart()
    wait_for('a GTID dump on the restarted source', lambda: len(gtid_dumps(src)) == 1, timeout=60)
    d = gtid_dumps(src)[0]
    check(d['gtid_set'] == '%s:1-13:mytag:1-2' % cases.TAG_UUID, 'the tagged set sent: %s' % short(d))
    src.reveal(all_=True)
    got = collect(conn, 'my_resume_tag', want)
    compare_changes(got, want, 'tagged, after the source restart')
    check(get_changes(conn, 'my_resume_tag', timeout_ms=500) == [], 'a duplicate of %s' % tagged)
    drained_until(conn, 'my_resume_tag', '%s:1-13:mytag:1-3' % cases.TAG_UUID)
    # once more: the whole set is read, nothing comes
    src.restart()
    wait_for('a second GTID dump', lambda: len(gtid_dumps(src)) == 2, timeout=60)
    d2 = gtid_dumps(src)[1]
    check(d2['gtid_set'] == '%s:1-13:mytag:1-3' % cases.TAG_UUID, 'the second set sent: %s' % short(d2))
    check(get_changes(conn, 'my_resume_tag', timeout_ms=1500) == [], 'a transaction of the set came again')
    log('tagged sets sent: %s, then %s; %s delivered once' % (d['gtid_set'], d2['gtid_set'], tagged))
    drop_source(conn, 'my_resume_tag')
    src.stop()


def case_payload_gtid(conn_box):
    conn = conn_box[0]
    f = 'transaction_compression.000001'
    path = anonymous_to_gtid(sample(f), 'payload-bin.000001', PAYLOAD_UUID, 1)
    src = source('pg-payload', [path], version='8.0.32', schema=cases.SCHEMAS[f], hold_transactions=1)
    events = [cases.json.loads(line) for line in cases.binlogcat_offline(src.files)]
    check(any(e['type'] == 'TRANSACTION_PAYLOAD' for e in events), 'no TRANSACTION_PAYLOAD in %s' % f)
    gtid_pos = next(e['pos'] for e in events if e['type'] == 'GTID')
    prev = next(e for e in events if e['type'] == 'PREVIOUS_GTIDS')
    prev_set = prev.get('gtid_set', prev.get('text'))
    check(prev_set, 'no set in PREVIOUS_GTIDS: %s' % short(prev))
    want = expected(src)
    check(len(want) == 1 and want[0][2] == PAYLOAD_UUID + ':1', 'the rewritten sample: %s' % short(want))
    create_source(conn, 'my_payload', src)
    wait_for('the worker to read PREVIOUS_GTIDS',
             lambda: ((status(conn, 'my_payload') or {}).get('read_pos') or 0) >= gtid_pos)
    check(not gtid_dumps(src), 'a GTID dump before the set was known')
    src.restart()
    wait_for('a GTID dump on the restarted source', lambda: len(gtid_dumps(src)) == 1, timeout=60)
    d = gtid_dumps(src)[0]
    check(d['gtid_set'] == prev_set, 'the set sent (the file\'s PREVIOUS_GTIDS %s): %s' % (prev_set, short(d)))
    src.reveal(all_=True)
    got = collect(conn, 'my_payload', want)
    compare_changes(got, want, 'the compressed transaction, live by GTID set')
    after = prev_set + ',' + PAYLOAD_UUID + ':1'
    drained_until(conn, 'my_payload', after)
    conn.close()
    subprocess.run(['bash', cases.POSTGRES_SH, 'restart', '--mode', 'immediate'], check=True, timeout=120,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    conn = conn_box[0] = wait_for('PostgreSQL', cases._try_pg)
    wait_for('a GTID dump after the PostgreSQL restart', lambda: len(gtid_dumps(src)) == 2, timeout=60)
    d2 = gtid_dumps(src)[1]
    check(d2['gtid_set'].replace('\n', '') == after, 'the set sent after the restart: %s' % short(d2))
    check(get_changes(conn, 'my_payload', timeout_ms=1500) == [], 'the compressed transaction came again')
    log('TRANSACTION_PAYLOAD %s: COM_BINLOG_DUMP_GTID with %s, the transaction once; '
        'after the PostgreSQL restart with %s, nothing' % (PAYLOAD_UUID + ':1', d['gtid_set'], d2['gtid_set']))
    drop_source(conn, 'my_payload')
    src.stop()


def gtid_to_anonymous(src_path, name, gtid):
    """The binlog with the GTID event of gtid made an ANONYMOUS_GTID."""
    data = bytearray(open(src_path, 'rb').read())
    pos = 4
    crc = False
    found = False
    while pos < len(data):
        size = struct.unpack_from('<I', data, pos + 9)[0]
        if data[pos + 4] == 15:
            crc = data[pos + size - 5] == 1
        if data[pos + 4] == 33 and '%s:%d' % (uuid.UUID(bytes=bytes(data[pos + 20:pos + 36])),
                                               struct.unpack_from('<q', data, pos + 36)[0]) == gtid:
            data[pos + 4] = 34
            data[pos + 20:pos + 44] = bytes(24)
            if crc:
                struct.pack_into('<I', data, pos + size - 4,
                                 zlib.crc32(bytes(data[pos:pos + size - 4])) & 0xffffffff)
            found = True
        pos += size
    check(found, 'no GTID %s in %s' % (gtid, src_path))
    d = os.path.join(cases.TMP, 'rewritten')
    os.makedirs(d, exist_ok=True)
    out = os.path.join(d, name)
    with open(out, 'wb') as f:
        f.write(data)
    return out


def case_resume_anonymous(conn):
    path = gtid_to_anonymous(ZALORA, 'anon-bin.000001', '%s:21' % ZALORA_UUID)
    src = source('pg-anon', [path], binlog_row_metadata='MINIMAL', schema=ZALORA_SCHEMA, hold_transactions=2,
                 gtid_mode='ON')
    want = expected(src)
    check([c[2] for c in want[7:]] == [None, None, '%s:22' % ZALORA_UUID], 'the rewritten sample: %s' % short(want))
    create_source(conn, 'my_anon', src)
    got = collect(conn, 'my_anon', want[:7])
    compare_changes(got, want[:7], 'before the anonymous transaction')
    st = drained_until(conn, 'my_anon', '%s:1-20' % ZALORA_UUID)
    src.kill_connections()
    wait_for('a GTID dump after the kill', lambda: gtid_dumps(src), timeout=60)
    check(gtid_dumps(src)[0]['gtid_set'] == '%s:1-20' % ZALORA_UUID, 'the set sent: %s' % short(gtid_dumps(src)))
    src.reveal(all_=True)
    rest = collect(conn, 'my_anon', want[7:], timeout=60)
    compare_changes(rest, want[7:], 'the anonymous transaction and after')
    check(get_changes(conn, 'my_anon', timeout_ms=500) == [], 'a duplicate after the fallback')
    errs = [e for e in src.entries('dump_error') if 'anonymous transaction' in e.get('error', '')]
    check(errs, 'the source did not refuse the GTID dump at the anonymous transaction')
    dumps = stream_dumps(src)
    check(len(dumps) == 2 and dumps[-1]['file'] == 'anon-bin.000001' and dumps[-1]['pos'] == st['pos'],
          'no file:pos dump at the durable position %s:%s after the refusal: %s' % (st['file'], st['pos'], dumps))
    log('COM_BINLOG_DUMP_GTID %s refused at the anonymous transaction; COM_BINLOG_DUMP at %s:%s; '
        'the 3 changes after it once' % (gtid_dumps(src)[0]['gtid_set'], dumps[-1]['file'], dumps[-1]['pos']))
    drop_source(conn, 'my_anon')
    src.stop()


def values(changes):
    """Changes without their binlog file and position (another host's)."""
    return [c[2:] for c in changes]


def case_failover_order(conn_box):
    conn = conn_box[0]
    g19, g20 = '%s:19' % ZALORA_UUID, '%s:20' % ZALORA_UUID
    common = dict(binlog_row_metadata='MINIMAL', schema=ZALORA_SCHEMA)
    a = source('fo-order-a', [ZALORA], server_id=21, **common)
    c = source('fo-order-c', [swapped(ZALORA, 'c-bin.000009', g19, g20)], server_id=23,
               server_uuid='cccccccc-0000-4000-8000-000000000023', **common)
    want = expected(a)
    on_c = expected(c)
    check([x[2] for x in on_c].index(g20) < [x[2] for x in on_c].index(g19), 'host c does not have :20 first')
    check(sorted(values(on_c)) == sorted(values(want)), 'host c does not have the same changes')
    create_source(conn, 'my_fo_order', a, host='127.0.0.1:%d,127.0.0.1:%d' % (a.port, c.port))
    # the first row of :19 acknowledged, the second taken only
    got = take(conn, 'my_fo_order', 1)
    get_changes(conn, 'my_fo_order', max_changes=1, ack=False)
    st = durable(conn, 'my_fo_order')
    check(st['gtid'] == g19 and st['skip'] > 0 and st['gtid_state'] == '%s:1-18' % ZALORA_UUID,
          'durable position not inside %s after %s:1-18: %s' % (g19, ZALORA_UUID, st))
    a.stop()
    conn.close()
    subprocess.run(['bash', cases.POSTGRES_SH, 'restart', '--mode', 'immediate'], check=True, timeout=120,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    conn = conn_box[0] = wait_for('PostgreSQL', cases._try_pg)
    rest = collect(conn, 'my_fo_order', want[1:], timeout=60)
    compare_changes(values(rest), values(want[1:]), 'after the restart, from host c')
    check(all(x[0] == 'c-bin.000009' for x in rest), 'changes not from host c: %s' % short(rest))
    check(get_changes(conn, 'my_fo_order', timeout_ms=500) == [], 'a duplicate after the failover')
    d = [x['gtid_set'] for x in gtid_dumps(c)]
    check(d[:2] == ['%s:1-18' % ZALORA_UUID, '%s:1-19' % ZALORA_UUID],
          'host c: the sets sent %s (expected the set before :19, then the one after it)' % short(d))
    drained_until(conn, 'my_fo_order', '%s:1-22' % ZALORA_UUID)
    log('PostgreSQL restart inside %s (skip %s) with host a down: host c sent %s first (passed over), then '
        'the rest of %s; a new session at %s got %s again; %d changes = the binlog, once each'
        % (g19, st['skip'], g20, g19, d[1], g20, len(got) + len(rest)))
    drop_source(conn, 'my_fo_order')
    c.stop()


def case_failover_no_set(conn):
    a = source('fo-noset-a', [ZALORA], binlog_row_metadata='MINIMAL', schema=ZALORA_SCHEMA)
    b = source('fo-noset-b', [renamed(ZALORA, 'b-bin.000001')], binlog_row_metadata='MINIMAL',
               schema=ZALORA_SCHEMA, server_uuid='bbbbbbbb-0000-4000-8000-0000000000b1')
    want = expected(a)
    start = next(e['pos'] for e in (cases.json.loads(x) for x in cases.binlogcat_offline(a.files))
                 if e['type'] == 'GTID' and e.get('gtid') == '%s:19' % ZALORA_UUID)
    create_source(conn, 'my_noset', a, start='mysql-bin.01:%d' % start)
    got = collect(conn, 'my_noset', want)
    compare_changes(got, want, 'started at a file position')
    st = durable(conn, 'my_noset')
    check(st['gtid_state'] is None and st['file'] == 'mysql-bin.01', 'the durable position: %s' % st)
    q(conn, 'SELECT binlog_fdw.stop(%s)', ('my_noset',))
    wait_for('the source to stop', lambda: (status(conn, 'my_noset') or {}).get('state', 'stopped') == 'stopped')
    ndumps = len(a.entries('dump')) + len(gtid_dumps(a))
    q(conn, "ALTER SERVER my_noset OPTIONS (SET host '127.0.0.1:%d,127.0.0.1:%d')" % (a.port, b.port))
    q(conn, 'SELECT binlog_fdw.start(%s)', ('my_noset',))
    st = wait_for('the error', lambda: (lambda x: x if x and 'has no GTID set' in (x.get('last_error') or '')
                                        else None)(status(conn, 'my_noset')))
    check('binlog_fdw.reset()' in st['last_error'] and 'single host' in st['last_error'],
          'the error does not name the fixes: %s' % st['last_error'])
    check(get_changes(conn, 'my_noset', timeout_ms=500) == [], 'changes without a GTID set')
    check(len(a.entries('dump')) + len(gtid_dumps(a)) == ndumps and not b.entries('dump') and not gtid_dumps(b),
          'a dump without a GTID set')
    log('host list on a position without a GTID set: %s' % short(st['last_error'], 250))
    drop_source(conn, 'my_noset')
    a.stop()
    b.stop()


def case_failover_gtid(conn):
    common = dict(binlog_row_metadata='MINIMAL', schema=ZALORA_SCHEMA)
    a = source('fo-a', [ZALORA], server_id=11, hold_transactions=2, **common)
    # b is behind (its last 4 transactions not written yet), c has them all
    b = source('fo-b', [renamed(ZALORA, 'b-bin.000003')], server_id=12, hold_transactions=4,
               server_uuid='bbbbbbbb-0000-4000-8000-000000000012', **common)
    c = source('fo-c', [renamed(ZALORA, 'c-bin.000042')], server_id=13, hold_transactions=2,
               server_uuid='cccccccc-0000-4000-8000-000000000013', **common)
    want = expected(a)
    visible = want[:7]
    hosts = ','.join('127.0.0.1:%d' % s.port for s in (a, b, c))
    create_source(conn, 'my_failover', a, host=hosts)
    got = collect(conn, 'my_failover', visible)
    compare_changes(got, visible, 'from host a')
    check(gtid_dumps(a), 'host a: the host list did not stream by GTID set: %s' % short(a.entries('dump')))
    log('host a: COM_BINLOG_DUMP_GTID %s' % gtid_dumps(a)[0]['gtid_set'])
    a.stop()
    wait_for('a dump on host c', lambda: gtid_dumps(c), timeout=90)
    d = gtid_dumps(c)[0]
    check(d['gtid_set'] == '%s:1-20' % ZALORA_UUID, 'host c: the set sent %s' % short(d))
    check(not b.entries('dump') and not gtid_dumps(b), 'host b (behind) got a dump: %s' % short(gtid_dumps(b)))
    check(any('gtid_executed' in s for s in b.queries()), 'host b was not asked for its gtid_executed')
    c.reveal(all_=True)
    rest = collect(conn, 'my_failover', want[len(visible):])
    compare_changes(rest, as_file(want[len(visible):], 'c-bin.000042'), 'from host c')
    check(get_changes(conn, 'my_failover', timeout_ms=500) == [], 'a duplicate after the failover')
    st = status(conn, 'my_failover')
    check(st['source_host'] == '127.0.0.1:%d' % c.port, 'status source_host %s' % st['source_host'])
    check('has not executed GTID %s:19' % ZALORA_UUID in (st['last_error'] or ''),
          'the status does not say why host b was passed over: %s' % short(st['last_error']))
    log('host a stopped; host b passed over (has not executed %s:19); host c: COM_BINLOG_DUMP_GTID %s; '
        '%d changes in all = the binlog' % (ZALORA_UUID, d['gtid_set'], len(got) + len(rest)))
    drop_source(conn, 'my_failover')
    for s in (a, b, c):
        s.stop()
