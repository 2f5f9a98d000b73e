#!/usr/bin/python3
"""test/mysql_live/gtid_set_case.py -- case mysql/gtid-set-restart: a MySQL
source whose executed GTID set is 1,000 source UUIDs with gaps (148 kB of
text): the real binlog mysql-enum-string-set.000001 with its PREVIOUS_GTIDS
event replaced by that set (the positions and checksums of the events
after it rewritten), served by the MySQL test source (test/mysql_source)
with its last two transactions held back.  The source starts at
'earliest'; once it has acknowledged what it sees, status.gtid_state and
source_state.gtid_state must be the server's @@gtid_executed (the set plus
the file's GTIDs so far), whole; PostgreSQL restarts (immediate), the held
transactions come, and then the state must be @@gtid_executed again, with
every change delivered once.

It uses the MySQL cases' helpers (test/mysql_live/cases.py, source.py) and
runs after them in 65-mysql-source: python3 test/mysql_live/gtid_set_case.py
prints one case line."""

import os
import struct
import subprocess
import sys
import time
import uuid
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases  # noqa: E402
from cases import (ENUM_UUID, TMP, POSTGRES_SH, check, collect, compare_changes, create_source,  # noqa: E402
                   drop_source, expected_for, get_changes, log, pg, q, short, source, status,
                   wait_for, _try_pg)
from source import sample  # noqa: E402


def big_set():
    """{uuid: [(first, last), ...]}: 1,000 UUIDs, 12 intervals each."""
    out = {}
    for u in range(1000):
        key = str(uuid.UUID(int=(u * 0x9E3779B97F4A7C15 + 12345) % (1 << 128)))
        ivs = []
        g = 1000 + u
        for k in range(12):
            ivs.append((g, g + (u + k) % 7))
            g += (u + k) % 7 + 2 + k
        out[key] = ivs
    return out


def set_text(s):
    return ','.join(k + ''.join(':%d' % a if a == b else ':%d-%d' % (a, b) for a, b in v)
                    for k, v in sorted(s.items()))


def parse_set(text):
    """A MySQL GTID set's text as {key: sorted merged intervals}."""
    out = {}
    for member in (text or '').replace('\n', '').split(','):
        member = member.strip()
        if not member:
            continue
        parts = member.split(':')
        key = parts[0].lower()
        tag = None
        for p in parts[1:]:
            if p[0].isdigit():
                a, _, b = p.partition('-')
                out.setdefault(key + (':' + tag if tag else ''), []).append((int(a), int(b or a)))
            else:
                tag = p.lower()
    for k, v in out.items():
        v.sort()
        merged = []
        for a, b in v:
            if merged and a <= merged[-1][1] + 1:
                merged[-1] = (merged[-1][0], max(merged[-1][1], b))
            else:
                merged.append((a, b))
        out[k] = merged
    return out


def previous_gtids_body(s):
    body = struct.pack('<Q', len(s))
    for k, v in sorted(s.items()):
        body += uuid.UUID(k).bytes + struct.pack('<Q', len(v))
        for a, b in v:
            body += struct.pack('<QQ', a, b + 1)
    return body


def rewrite(src_path, dst_path, s):
    """The binlog with its PREVIOUS_GTIDS body replaced by s."""
    data = open(src_path, 'rb').read()
    out = bytearray(data[:4])
    pos = 4
    delta = 0
    crc = False
    while pos < len(data):
        size = struct.unpack_from('<I', data, pos + 9)[0]
        ev = bytearray(data[pos:pos + size])
        typ = ev[4]
        if typ == 15:           # FORMAT_DESCRIPTION: its checksum algorithm
            crc = ev[-5] == 1
        if typ == 35:           # PREVIOUS_GTIDS
            body = previous_gtids_body(s)
            ev = ev[:19] + body + (b'\0\0\0\0' if crc else b'')
            struct.pack_into('<I', ev, 9, len(ev))
            delta += len(ev) - size
        log_pos = struct.unpack_from('<I', ev, 13)[0]
        if log_pos:
            struct.pack_into('<I', ev, 13, log_pos + delta)
        if crc:
            struct.pack_into('<I', ev, len(ev) - 4, zlib.crc32(bytes(ev[:-4])) & 0xffffffff)
        out += ev
        pos += size
    with open(dst_path, 'wb') as f:
        f.write(out)
    return len(out)


def gtid_executed(src):
    import pymysql
    c = pymysql.connect(host='127.0.0.1', port=src.port, user='native', password='native-secret')
    try:
        with c.cursor() as cur:
            cur.execute('SELECT @@global.gtid_executed')
            return cur.fetchone()[0]
    finally:
        c.close()


def main():
    s = big_set()
    text = set_text(s)
    check(len(text) > 100000, 'the set is %d bytes' % len(text))
    os.makedirs(TMP, exist_ok=True)
    path = os.path.join(TMP, 'mysql-bin.000001')
    size = rewrite(sample('mysql-enum-string-set.000001'), path, s)
    off = subprocess.run([cases.BINLOGCAT, '--no-follow', path], capture_output=True, text=True)
    check(off.returncode == 0, 'binlogcat refuses the rewritten file: %s' % off.stderr[-500:])
    log('rewritten binlog: %d bytes, PREVIOUS_GTIDS of %d UUIDs (%d bytes of text)'
        % (size, len(s), len(text)))
    src = source('gtid-big', [path], binlog_row_metadata='FULL', hold_transactions=2)
    conn = pg()
    q(conn, 'CREATE EXTENSION IF NOT EXISTS binlog_fdw')
    try:
        want = expected_for(src, 'x')
        create_source(conn, 'my_gtidset', src)

        def state_is_executed():
            st = status(conn, 'my_gtidset')
            ex = gtid_executed(src)
            return st and st['state'] == 'streaming' and st['gtid_state'] and \
                parse_set(st['gtid_state']) == parse_set(ex) and (st, ex)

        # everything visible (all but the 2 held transactions), one change a batch
        got = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            b = get_changes(conn, 'my_gtidset', max_changes=1, timeout_ms=300)
            got += b
            if not b and state_is_executed():
                break
        st, ex = wait_for('status.gtid_state to be @@gtid_executed', state_is_executed, 30)
        check(ENUM_UUID + ':1-3' in st['gtid_state'], 'the file GTIDs are not in the state: %s'
              % short(st['gtid_state'][-200:]))
        (durable,), = q(conn, 'SELECT gtid_state FROM binlog_fdw.source_state WHERE server_name = %s',
                        ('my_gtidset',))[0:1] or [(None,)]
        check(durable == st['gtid_state'], 'source_state.gtid_state (%d bytes) is not status.gtid_state'
              % len(durable or ''))
        check(len(durable) > 100000, 'the durable state has %d bytes' % len(durable))
        log('before the restart: %d row changes, GTID state of %d bytes = @@gtid_executed (%d members)'
            % (len(got), len(durable), len(parse_set(ex))))
        # PostgreSQL restarts before the held transactions come
        conn.close()
        subprocess.run(['bash', POSTGRES_SH, 'restart', '--mode', 'immediate'], check=True, timeout=120,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        conn = wait_for('PostgreSQL', _try_pg)
        wait_for('the source to stream again', lambda: (status(conn, 'my_gtidset') or {}).get('state')
                 == 'streaming', 30)
        src.reveal(all_=True)
        got += collect(conn, 'my_gtidset', want[len(got):])
        compare_changes(got, want, 'across the restart')
        check(get_changes(conn, 'my_gtidset', timeout_ms=500) == [], 'a duplicate after the restart')
        # the restart resumed by the whole set: COM_BINLOG_DUMP_GTID, decoded by the source
        dumps = src.entries('dump_gtid')
        check(dumps and parse_set(dumps[-1]['gtid_set']) == parse_set(durable),
              'after the restart: no COM_BINLOG_DUMP_GTID with the durable set (%d bytes): %s'
              % (len(durable), short([(d['file'], d['pos'], len(d['gtid_set'])) for d in dumps])))
        st, ex = wait_for('status.gtid_state to be @@gtid_executed after the restart',
                          state_is_executed, 30)
        check(ENUM_UUID + ':1-5' in st['gtid_state'], 'the revealed GTIDs are not in the state: %s'
              % short(st['gtid_state'][-200:]))
        log('after the restart: COM_BINLOG_DUMP_GTID with the set of %d UUIDs; %d row changes = the file, '
            'GTID state of %d bytes = @@gtid_executed' % (len(parse_set(dumps[-1]['gtid_set'])), len(got),
                                                         len(st['gtid_state'])))
        drop_source(conn, 'my_gtidset')
    finally:
        src.stop()
    print('ok - mysql/gtid-set-restart', flush=True)


if __name__ == '__main__':
    try:
        main()
    except Exception as e:  # noqa: BLE001
        import traceback
        log(traceback.format_exc())
        print('not ok - mysql/gtid-set-restart: %s' % str(e).splitlines()[0], flush=True)
        sys.exit(1)
