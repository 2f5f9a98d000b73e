#!/usr/bin/python3
"""
test/differential/differential.py -- live differential test of the decoder.

Starts throwaway MariaDB instances (scripts/mariadb.sh), one per binlog
configuration (CONFIGS: binlog_row_metadata FULL/MINIMAL x binlog_row_image
FULL/MINIMAL, FULL/FULL with compressed binlog events, and NO_LOG/FULL,
MariaDB's default), runs the same seeded random workload on each: tables
holding every MariaDB column type, inserts, updates (also of the primary
key) and deletes in multi-statement transactions, some rolled back.  Then
decodes the binlog with ./binlogcat, live over the replication protocol and
from the binlog files, replays the decoded change stream into an in-memory
model ({table: {primary key: row}}; MINIMAL images merged into the rows)
and compares it, value by value, with what MariaDB itself returns: the final
table contents, and the rows each committed transaction touched, as SELECTed
right after its COMMIT.  Also checked: before images against the model,
rolled-back transactions absent, committed ones all present and in order,
row counts per table and operation, column names, NULL/non-NULL coverage,
file mode equal to live mode.

Prints one "ok - differential/<config>/<check>" or "not ok - ...: reason"
line per check (test/run.sh's suite protocol); exits 1 if any failed.

Environment:
  BLF_DIFF_SEED     random seed (default: derived from the time, printed)
  BLF_DIFF_ROWS     rows inserted per configuration (default 1200)
  BLF_DIFF_CONFIGS  comma-separated subset of the configurations
                    (full-full, full-minimal, minimal-full, minimal-minimal,
                    full-full-zlib, nolog-full)
  BLF_DIFF_PORT     first TCP port (default 3420; one port per configuration)
  BLF_DIFF_JOBS     configurations run at the same time (default 2)
  BLF_DIFF_KEEP=1   keep the instances (and their binlogs) and the decoded
                    streams at the end (the streams of a failed
                    configuration are always kept, in $BLF_SUITE_TMP)
  BLF_DIFF_BINLOGCAT  the binlogcat to test (default $BLF_ROOT/binlogcat)
  BLF_ROOT, BLF_RUN, BLF_MYSQL_USER, BLF_MYSQL_PASSWORD  (scripts/env.sh)

Canonical forms (decoder side <-> MariaDB side), see canon_* below:
  integers, YEAR      int                     <-> SELECT col
  DECIMAL(p,s)        exact text, s digits    <-> CAST(col AS CHAR)
  FLOAT               the float32 value       <-> CAST(col AS DOUBLE)
  DOUBLE              the double value        <-> SELECT col (shortest text)
  BIT(n)              n '0'/'1' digits        <-> CAST(col AS UNSIGNED)
  DATE/TIME           text                    <-> CAST(col AS CHAR)
  DATETIME            'T' -> ' '              <-> CAST(col AS CHAR)
  TIMESTAMP           UTC, '+00:00' required  <-> CAST(col AS CHAR), time_zone +00:00
  CHAR/VARCHAR/TEXT   Unicode text            <-> SELECT col (utf8mb4 results)
  ENUM                member text             <-> CAST(col AS CHAR)
  SET                 list of members         <-> CAST(col AS CHAR) split at ','
  JSON                text (LONGTEXT)         <-> SELECT col
  binary strings      lowercase hex           <-> HEX(col)
  BINARY(n)/INET6/UUID  hex right-padded with 00 to n bytes (the binlog
                      drops trailing zero bytes of fixed-length binary
                      strings; MariaDB pads them on read)
  GEOMETRY            hex of EWKB             <-> HEX(col) (SRID + WKB) as EWKB
"""

import collections
import concurrent.futures
import datetime
import decimal
import json
import os
import random
import signal
import struct
import subprocess
import sys
import threading
import time
import traceback

import pymysql

ROOT = os.environ.get('BLF_ROOT') or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
RUN = os.environ.get('BLF_RUN', '/var/tmp/binlog_fdw')
BINLOGCAT = os.environ.get('BLF_DIFF_BINLOGCAT') or os.path.join(ROOT, 'binlogcat')
MARIADB_SH = os.path.join(ROOT, 'scripts', 'mariadb.sh')
REPL_USER = os.environ.get('BLF_MYSQL_USER', 'repl')
REPL_PW = os.environ.get('BLF_MYSQL_PASSWORD', 'repl')
DB = 'difftest'

CONFIGS = [
    # name, binlog_row_metadata, binlog_row_image, other mariadbd arguments
    ('full-full', 'FULL', 'FULL', []),
    ('full-minimal', 'FULL', 'MINIMAL', []),
    ('minimal-full', 'MINIMAL', 'FULL', []),
    ('minimal-minimal', 'MINIMAL', 'MINIMAL', []),
    # compressed binlog events (MARIA_*_ROWS_COMPRESSED, QUERY_COMPRESSED)
    ('full-full-zlib', 'FULL', 'FULL', ['--log-bin-compress=ON', '--log-bin-compress-min-len=10']),
    # MariaDB's default: no optional metadata at all (signedness, charsets
    # and names from information_schema)
    ('nolog-full', 'NO_LOG', 'FULL', []),
]

NULL_P = 0.12                   # share of NULLs in nullable columns
ROLLBACK_P = 0.08               # share of rolled-back transactions
ROLLBACK_BASE = 1000000         # row ids of rows inserted by rolled-back transactions
MAX_REPORT = 4                  # mismatches quoted per case

DEC_CTX = decimal.Context(prec=200)

_print_lock = threading.Lock()


def log(msg):
    with _print_lock:
        for line in str(msg).splitlines() or ['']:
            print('# ' + line, flush=True)


def short(v, n=70):
    """A value for a one-line report (invisible characters escaped)."""
    if isinstance(v, str):
        s = json.dumps(v, ensure_ascii=False)
    else:
        s = repr(v)
    s = ''.join(ch if ch.isprintable() else
                ('\\u%04x' % ord(ch) if ord(ch) <= 0xffff else '\\U%08x' % ord(ch)) for ch in s)
    if len(s) > n:
        s = s[:n] + '...(%d chars)' % len(s)
    return s


# ---------------------------------------------------------------------------
# Canonical forms

class Num(str):
    """A JSON number from binlogcat, kept as its exact text."""


class Raw:
    """A SQL expression used as is in a statement (not a quoted value)."""
    __slots__ = ('sql',)

    def __init__(self, sql):
        self.sql = sql

    def __repr__(self):
        return 'Raw(%s)' % short(self.sql)


def unexpected(v):
    # never equal to a canonical value of the MariaDB side
    return ('unexpected decoder value', json.dumps(v, ensure_ascii=False)[:200])


def canon_decimal(text, scale):
    d = decimal.Decimal(text)
    q = d.quantize(decimal.Decimal(1).scaleb(-scale), context=DEC_CTX)
    if q == 0:
        q = abs(q)
    return format(q, 'f')


def canon_f32(x):
    return repr(struct.unpack('<f', struct.pack('<f', float(x)))[0] + 0.0)


def canon_f64(x):
    return repr(float(x) + 0.0)


def truth_canon(c, v):
    """Canonical form of a value as MariaDB returned it (select_expr)."""
    if v is None:
        return None
    k = c.kind
    if k in ('int', 'year'):
        return int(v)
    if k == 'decimal':
        return canon_decimal(v, c.scale)
    if k == 'float':
        return canon_f32(v)
    if k == 'double':
        return canon_f64(v)
    if k == 'bit':
        return format(int(v), '0%db' % c.width)
    if k in ('date', 'time', 'datetime', 'timestamp', 'text', 'json', 'enum'):
        if isinstance(v, bytes):
            return ('bytes from MariaDB', v.hex())
        return v
    if k == 'set':
        return v.split(',') if v else []
    if k == 'binary':
        return v.lower()
    if k == 'geom':
        return mysql_geom_to_ewkb(v)
    if k == 'fixbin':
        return v.lower()
    raise ValueError('unknown kind ' + k)


def mysql_geom_to_ewkb(h):
    """MySQL's internal geometry (hex: 4-byte little-endian SRID, then WKB)
    as EWKB (hex): the SRID flag 0x20000000 in the outer type and the SRID
    after it, in the WKB's byte order; SRID 0 gives plain WKB."""
    b = bytes.fromhex(h)
    srid = struct.unpack('<I', b[:4])[0]
    wkb = b[4:]
    if srid == 0:
        return wkb.hex()
    fmt = '<I' if wkb[0] == 1 else '>I'
    typ = struct.unpack(fmt, wkb[1:5])[0] | 0x20000000
    return (wkb[:1] + struct.pack(fmt, typ) + struct.pack(fmt, srid) + wkb[5:]).hex()


def dec_canon(c, v):
    """Canonical form of a value as binlogcat printed it."""
    if v is None:
        return None
    k = c.kind
    try:
        if k in ('int', 'year'):
            if isinstance(v, Num):
                return int(v)
        elif k == 'decimal':
            if isinstance(v, Num):
                # exact text: the decoder prints the column's scale digits
                if v == canon_decimal(v, c.scale) or (c.scale == 0 and '.' not in v):
                    return canon_decimal(v, c.scale)
                return ('decimal text', str(v))
        elif k == 'float':
            if isinstance(v, Num):
                return canon_f32(float(v))
        elif k == 'double':
            if isinstance(v, Num):
                return canon_f64(float(v))
        elif k == 'bit':
            if isinstance(v, str) and not isinstance(v, Num) and \
                    len(v) == c.width and set(v) <= set('01'):
                return v
        elif k in ('date', 'time'):
            if isinstance(v, str) and not isinstance(v, Num):
                return v
        elif k == 'datetime':
            if isinstance(v, str) and not isinstance(v, Num):
                return v.replace('T', ' ', 1)
        elif k == 'timestamp':
            if isinstance(v, str) and not isinstance(v, Num) and v.endswith('+00:00'):
                return v[:-6].replace('T', ' ', 1)
        elif k in ('text', 'json', 'enum'):
            if isinstance(v, str) and not isinstance(v, Num):
                return v
        elif k == 'set':
            if isinstance(v, list) and all(isinstance(m, str) and not isinstance(m, Num) for m in v):
                return list(v)
        elif k in ('binary', 'geom'):
            if isinstance(v, str) and v.startswith('\\x'):
                return v[2:]
        elif k == 'fixbin':
            if isinstance(v, str) and v.startswith('\\x') and len(v) - 2 <= 2 * c.fixlen:
                # the binlog drops trailing zero bytes of BINARY(n): pad
                return v[2:].ljust(2 * c.fixlen, '0')
    except (ValueError, OverflowError, decimal.InvalidOperation):
        pass
    return unexpected(v)


def select_expr(c):
    q = '`%s`' % c.name
    k = c.kind
    if k in ('int', 'year', 'text', 'json', 'double'):
        return q
    if k in ('decimal', 'date', 'time', 'datetime', 'timestamp', 'enum', 'set'):
        return 'CAST(%s AS CHAR)' % q
    if k == 'float':
        return 'CAST(%s AS DOUBLE)' % q
    if k == 'bit':
        return 'CAST(%s AS UNSIGNED)' % q
    if k in ('binary', 'fixbin', 'geom'):
        return 'HEX(%s)' % q
    raise ValueError(k)


# ---------------------------------------------------------------------------
# Columns, tables and their value generators

class Col:
    def __init__(self, name, ddl, kind, edges, rand, width=None, scale=None, fixlen=None):
        self.name = name
        self.ddl = ddl
        self.kind = kind
        self.null = 'NOT NULL' not in ddl.upper()
        # generated columns are never written; VIRTUAL ones are not in
        # MINIMAL row images
        up = ddl.upper()
        self.generated = 'virtual' if ' VIRTUAL' in up else 'stored' if ' STORED' in up else None
        self.edges = list(edges) + ([None] if self.null else [])
        self.rand = rand
        self.width = width
        self.scale = scale
        self.fixlen = fixlen

    def value(self, rng):
        if self.null and rng.random() < NULL_P:
            return None
        if rng.random() < 0.2:
            v = rng.choice(self.edges)
            if v is not None:
                return v
        return self.rand(rng)


def int_col(name, bits, unsigned, notnull=False):
    types = {8: 'TINYINT', 16: 'SMALLINT', 24: 'MEDIUMINT', 32: 'INT', 64: 'BIGINT'}
    if unsigned:
        lo, hi = 0, 2 ** bits - 1
        edges = [0, hi, 1, hi - 1, 2 ** (bits - 1)]
    else:
        lo, hi = -2 ** (bits - 1), 2 ** (bits - 1) - 1
        edges = [lo, hi, 0, -1, 1, lo + 1, hi - 1]

    def rand(rng):
        r = rng.random()
        if r < 0.3:
            return max(lo, min(hi, rng.randint(-300, 300)))
        if r < 0.5:
            return rng.choice(edges)
        return rng.randint(lo, hi)
    ddl = types[bits] + (' UNSIGNED' if unsigned else '') + (' NOT NULL' if notnull else '')
    return Col(name, ddl, 'int', edges, rand)


def decimal_col(name, prec, scale):
    intg = prec - scale

    def digits(rng, n):
        return ''.join(rng.choice('0123456789') for _ in range(n))

    def mk(neg, ip, fp):
        s = (ip.lstrip('0') or '0')
        if scale:
            s += '.' + fp
        return ('-' if neg else '') + s

    edges = ['0', mk(False, '9' * intg, '9' * scale), mk(True, '9' * intg, '9' * scale),
             mk(False, '0', '0' * (scale - 1) + '1') if scale else '1',
             mk(True, '0', '0' * (scale - 1) + '1') if scale else '-1',
             mk(False, '1' + '0' * (intg - 1) if intg else '0', '5' * scale)]

    def rand(rng):
        ni = rng.randint(0, intg)
        nf = rng.randint(0, scale)
        ip = digits(rng, ni) or '0'
        fp = (digits(rng, nf) + '0' * scale)[:scale]
        return mk(rng.random() < 0.4, ip, fp)
    return Col(name, 'DECIMAL(%d,%d)' % (prec, scale), 'decimal',
               [Raw("'%s'" % e) for e in edges], lambda rng: Raw("'%s'" % rand(rng)), scale=scale)


F32_MAX = struct.unpack('<f', struct.pack('<I', 0x7f7fffff))[0]
F32_MIN_NORMAL = struct.unpack('<f', struct.pack('<I', 0x00800000))[0]
F32_MIN_DENORMAL = struct.unpack('<f', struct.pack('<I', 0x00000001))[0]


def rand_float32(rng):
    r = rng.random()
    if r < 0.4:
        while True:
            bits = rng.getrandbits(32)
            if (bits >> 23) & 0xff != 0xff:
                return struct.unpack('<f', struct.pack('<I', bits))[0]
    if r < 0.7:
        return round(rng.uniform(-1e6, 1e6), rng.randint(0, 4))
    return rng.uniform(-1, 1) * 10 ** rng.randint(-38, 38)


def rand_double(rng):
    r = rng.random()
    if r < 0.5:
        while True:
            bits = rng.getrandbits(64)
            if (bits >> 52) & 0x7ff != 0x7ff:
                return struct.unpack('<d', struct.pack('<Q', bits))[0]
    if r < 0.75:
        return round(rng.uniform(-1e9, 1e9), rng.randint(0, 6))
    return rng.uniform(-1, 1) * 10 ** rng.randint(-307, 307)


def bit_col(name, width):
    hi = 2 ** width - 1
    edges = [0, hi, 1, 2 ** (width - 1)]
    return Col(name, 'BIT(%d)' % width, 'bit', edges,
               lambda rng: rng.choice(edges) if rng.random() < 0.2 else rng.randint(0, hi),
               width=width)


def rand_time(rng, fsp):
    neg = rng.random() < 0.4
    h = rng.choice([0, 1, 23, 24, 100, 838, rng.randint(0, 838)])
    m, s = rng.randint(0, 59), rng.randint(0, 59)
    us = rng.randint(0, 999999)
    t = '%s%02d:%02d:%02d' % ('-' if neg else '', h, m, s)
    if rng.random() < 0.8:
        t += '.%06d' % us
    return t


def rand_date(rng):
    y = rng.choice([1000, 1969, 1970, 2000, 2038, 9999, rng.randint(1000, 9999)])
    m = rng.randint(1, 12)
    d = rng.randint(1, 28)
    if rng.random() < 0.05:
        d = 0                   # zero day: allowed without NO_ZERO_IN_DATE
    return '%04d-%02d-%02d' % (y, m, d)


def rand_datetime(rng):
    s = '%s %02d:%02d:%02d' % (rand_date(rng), rng.randint(0, 23), rng.randint(0, 59),
                               rng.randint(0, 59))
    if rng.random() < 0.8:
        s += '.%06d' % rng.randint(0, 999999)
    return s


def rand_timestamp(rng):
    # 1970-01-01 00:00:01 .. 2038-01-19 03:14:07 UTC; the session time
    # zone varies, out-of-range values become the zero timestamp
    sec = rng.randint(1, 2 ** 31 - 1)
    s = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=sec)
    t = s.strftime('%Y-%m-%d %H:%M:%S')
    if rng.random() < 0.8:
        t += '.%06d' % rng.randint(0, 999999)
    return t


# characters for text values: ASCII, controls, quotes and backslash, Latin-1,
# Greek/Cyrillic, CJK, 4-byte characters (emoji, music, CJK ext. B), combining
# marks and a few specials
TEXT_POOLS = [
    (30, 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'),
    (8, ' '),
    (4, '\'"\\%_\0\t\n\r\x1b\x7f/{}[]<>&'),
    (6, 'äöüßéèçñÿ¡¿°±µ¶·×÷'),
    (4, 'ΩλжЖЯ€‰†™'),
    (4, '中文字日本語한국어'),
    (5, '😀🎉𝄞🀄🦀𠜎👍🏽'),
    (2, 'e\u0301\u2028\u2029\ufffd\ufeff\u200b'),
]
TEXT_POOL_LATIN1 = [(1, 'abcXYZ 09äöüßéÿ\'"\\')]
TEXT_POOL_BMP = [(w, b) for w, b in ((w, ''.join(ch for ch in p if ord(ch) <= 0xffff)) for w, p in TEXT_POOLS) if b]


def rand_text(rng, maxchars, maxbytes=None, pools=TEXT_POOLS):
    r = rng.random()
    if r < 0.1:
        n = 0
    elif r < 0.2:
        n = maxchars
    elif r < 0.9:
        n = rng.randint(1, min(maxchars, 40))
    else:
        n = rng.randint(0, maxchars)
    weights = [w for w, _ in pools]
    out = []
    for _ in range(n):
        pool = rng.choices(pools, weights)[0][1]
        out.append(rng.choice(pool))
    s = ''.join(out)
    if maxbytes is not None:
        while len(s.encode('utf-8')) > maxbytes:
            s = s[:-1]
    return s


def text_col(name, ddl, maxchars, maxbytes=None, edges=(), bmp=False, big=None, plain=False):
    pools = TEXT_POOL_LATIN1 if plain else TEXT_POOL_BMP if bmp else TEXT_POOLS
    base_edges = ['', ' ', 'a ', ' a', '\0', '\'"\\', 'x' * maxchars]
    if not bmp:
        base_edges += ['😀', ('😀' * maxchars)]
    if maxbytes is not None:
        base_edges = [e for e in base_edges if len(e.encode('utf-8')) <= maxbytes]

    def rand(rng):
        if big and rng.random() < 0.01:
            return rand_text(rng, big, maxbytes, pools) + 'x' * rng.randint(0, big)
        return rand_text(rng, maxchars, maxbytes, pools)
    return Col(name, ddl, 'text', base_edges + list(edges), rand)


def latin1_literal(b):
    return Raw("_latin1 X'%s'" % b.hex())


def latin1_col(name, ddl, maxbytes):
    # any byte: MariaDB's latin1 is cp1252 with the five undefined bytes
    # mapped to U+0081, U+008D, U+008F, U+0090, U+009D
    edges = [b'', b' ', b'a ', bytes(range(0x80, 0xa0)), bytes(range(0xa0, 0x100))[:maxbytes],
             b'\x00', b'\x80\x81\x8d\x8f\x90\x9d\xff', b'\xe4\xf6\xfc' * (maxbytes // 3)]
    edges = [latin1_literal(e[:maxbytes]) for e in edges]

    def rand(rng):
        n = rng.choice([0, 1, maxbytes, rng.randint(0, min(maxbytes, 50)), rng.randint(0, maxbytes)])
        if rng.random() < 0.5:
            b = bytes(rng.randint(1, 255) for _ in range(n))
        else:
            b = bytes(rng.choice(b'abc XYZ\xe4\xf6\xfc\xdf\x80\x99\xe9\xff') for _ in range(n))
        return latin1_literal(b)
    return Col(name, ddl, 'text', edges, rand)


def rand_bytes(rng, n):
    if rng.random() < 0.3:
        # runs of zero bytes, 0xff and spaces (padding, trailing-byte cases)
        b = bytes(rng.choice(b'\x00\xff \x01a') for _ in range(min(n, 512)))
        return (b * (n // 512 + 1))[:n]
    return rng.randbytes(n)


def binary_col(name, ddl, maxlen, edges_len=(), big=None, fixlen=None):
    edges = [b'', b'\x00', b'\xff', b' ', b'\x00' * min(maxlen, 4), b'a\x00', b'\x00a']
    edges += [(bytes(range(256)) * (n // 256 + 1))[:n] for n in edges_len]
    edges = [e for e in edges if len(e) <= maxlen]

    def rand(rng):
        if big and rng.random() < big[0]:
            return rand_bytes(rng, rng.randint(big[1] // 4, big[1]))
        r = rng.random()
        if r < 0.1:
            n = 0
        elif r < 0.2:
            n = maxlen if maxlen < 100000 else 70000
        else:
            n = rng.randint(0, min(maxlen, 300))
        return rand_bytes(rng, n)
    return Col(name, ddl, 'fixbin' if fixlen else 'binary', edges, rand, fixlen=fixlen)


def enum_col(name, ddl, members, notnull=False):
    def rand(rng):
        if rng.random() < 0.05:
            return Raw('0')     # the error value '' (index 0, non-strict mode)
        return rng.choice(members)
    return Col(name, ddl + (' NOT NULL' if notnull else ''), 'enum',
               list(members[:3]) + [members[-1], Raw('0')], rand)


def set_col(name, ddl, members):
    def rand(rng):
        k = rng.randint(0, len(members))
        return ','.join(rng.sample(members, k))
    return Col(name, ddl, 'set', ['', ','.join(members), members[0], members[-1]], rand)


def rand_json(rng, depth=0):
    r = rng.random()
    if depth > 3 or r < 0.3:
        return rng.choice([None, True, False, rng.randint(-2 ** 63, 2 ** 64 - 1),
                           rng.uniform(-1e10, 1e10), rand_text(rng, 12), 0, '', 1.5e300])
    if r < 0.65:
        return [rand_json(rng, depth + 1) for _ in range(rng.randint(0, 5))]
    return {rand_text(rng, 8): rand_json(rng, depth + 1) for _ in range(rng.randint(0, 5))}


def json_col(name):
    def rand(rng):
        doc = rand_json(rng)
        return json.dumps(doc, ensure_ascii=rng.random() < 0.3,
                          separators=rng.choice([(',', ':'), (', ', ': ')]))
    edges = ['{}', '[]', 'null', '"x"', '{"a": [1, 2.5, "😀", null, true]}', '1e308', '-0']
    return Col(name, 'JSON', 'json', edges, rand)


def rand_coord(rng):
    return repr(rng.choice([0.0, -1.5, 1e300, rng.uniform(-180, 180), float(rng.randint(-99, 99))]))


def wkt_point(rng):
    return 'POINT(%s %s)' % (rand_coord(rng), rand_coord(rng))


def wkt_polygon(rng):
    x, y = rng.uniform(-100, 100), rng.uniform(-100, 100)
    w, h = rng.uniform(0.5, 10), rng.uniform(0.5, 10)
    ring = [(x, y), (x + w, y), (x + w, y + h), (x, y + h), (x, y)]
    s = 'POLYGON((%s))' % ','.join('%r %r' % p for p in ring)
    if rng.random() < 0.3:
        ring2 = [(x + w / 4, y + h / 4), (x + w / 2, y + h / 4), (x + w / 2, y + h / 2), (x + w / 4, y + h / 4)]
        s = s[:-1] + ',(%s))' % ','.join('%r %r' % p for p in ring2)
    return s


def wkt_any(rng):
    r = rng.random()
    if r < 0.3:
        return wkt_point(rng)
    if r < 0.6:
        return wkt_polygon(rng)
    if r < 0.75:
        return 'LINESTRING(%s)' % ','.join('%s %s' % (rand_coord(rng), rand_coord(rng))
                                           for _ in range(rng.randint(2, 6)))
    if r < 0.9:
        return 'MULTIPOINT(%s)' % ','.join('%s %s' % (rand_coord(rng), rand_coord(rng))
                                           for _ in range(rng.randint(1, 4)))
    return 'GEOMETRYCOLLECTION(%s,%s)' % (wkt_point(rng), wkt_polygon(rng))


def geom_col(name, ddl, gen):
    def lit(wkt, srid=0):
        return Raw("ST_GeomFromText('%s', %d)" % (wkt, srid))
    edges = [lit('POINT(0 0)'), lit('POINT(1 2)', 4326)] if gen is not wkt_polygon else \
        [lit('POLYGON((0 0,1 0,1 1,0 1,0 0))')]
    return Col(name, ddl, 'geom', edges,
               lambda rng: lit(gen(rng), rng.choice([0, 0, 4326, 3857])))


def rand_inet6(rng):
    r = rng.random()
    if r < 0.2:
        return '::ffff:%d.%d.%d.%d' % tuple(rng.randint(0, 255) for _ in range(4))
    if r < 0.4:
        return rng.choice(['::', '::1', 'fe80::1', '2001:db8::', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'])
    return ':'.join('%x' % rng.choice([0, rng.randint(0, 0xffff)]) for _ in range(8))


def rand_uuid(rng):
    r = rng.random()
    if r < 0.15:
        return rng.choice(['00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff',
                           '123e4567-e89b-12d3-a456-426655440000'])
    h = '%032x' % rng.getrandbits(128)
    if r < 0.6:                 # version 1 / 4, RFC variant
        h = h[:12] + rng.choice('14') + h[13:16] + rng.choice('89ab') + h[17:]
    return '%s-%s-%s-%s-%s' % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])


# charsets other than latin1/utf8mb4/binary: MariaDB name -> Python codec
EXTRA_CHARSETS = [
    ('utf8mb3', 'utf-8', 'BMP'), ('ucs2', 'utf-16-be', 'BMP'), ('utf16', 'utf-16-be', None),
    ('utf16le', 'utf-16-le', None), ('utf32', 'utf-32-be', None), ('ascii', 'ascii', None),
    ('latin2', 'iso8859-2', None), ('cp1250', 'cp1250', None), ('cp1251', 'cp1251', None),
    ('cp1256', 'cp1256', None), ('cp1257', 'cp1257', None), ('koi8r', 'koi8-r', None),
    ('greek', 'iso8859-7', None), ('hebrew', 'iso8859-8', None), ('latin5', 'iso8859-9', None),
    ('latin7', 'iso8859-13', None), ('cp850', 'cp850', None), ('cp866', 'cp866', None),
    ('macroman', 'mac-roman', None), ('tis620', 'tis-620', None),
    ('gbk', 'gbk', None), ('gb2312', 'gb2312', None), ('big5', 'big5', None),
    ('sjis', 'shift_jis', None), ('cp932', 'cp932', None), ('ujis', 'euc_jp', None),
    ('eucjpms', 'euc_jp', None), ('euckr', 'euc_kr', None),
]
CHARSET_CANDIDATES = (
    'abcxyzABCXYZ0189 \'"\\_%\t\n' + ''.join(chr(c) for c in range(0xa0, 0x180)) +
    ''.join(chr(c) for c in range(0x391, 0x3ca)) + ''.join(chr(c) for c in range(0x400, 0x460)) +
    ''.join(chr(c) for c in range(0x5d0, 0x5eb)) + ''.join(chr(c) for c in range(0x621, 0x64b)) +
    ''.join(chr(c) for c in range(0xe01, 0xe3b)) + '€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ' +
    'あいうえおかきくけこアイウエオ漢字中文日本語東京大阪北京上海한국어서울표' + '①②③ⅠⅡ㈱〜～－￥' +
    '😀𠜎'
)


def known_charset_difference(cs, codec, ch):
    """
    Characters for which the decoder is documented to differ from MariaDB
    (src/decoder/bl_charset.c, "remaining differences"): they are not
    generated, so that anything else that differs fails the test.
      big5  the ETEN extension block 0xC6A1-0xC8FE (Cyrillic, kana, circled
            numbers: glibc gives private-use code points) and 0xA145,
            0xA244, 0xA246, 0xA247 (glibc: U+2027 and fullwidth yen, cent,
            pound)
      sjis  '\\': MariaDB stores it as 0x815F and reads 0x815F back as
            '\\'; the decoder gives U+FF3C
    """
    if cs == 'big5':
        b = ch.encode(codec)
        return len(b) == 2 and (0xc6a1 <= int.from_bytes(b, 'big') <= 0xc8fe or
                                b in (b'\xa1\x45', b'\xa2\x44', b'\xa2\x46', b'\xa2\x47'))
    if cs == 'sjis':
        return ch == '\\'
    return False


def charset_col(name, cs, codec, limit):
    pool = [ch for ch in CHARSET_CANDIDATES
            if (limit != 'BMP' or ord(ch) <= 0xffff) and _encodes(ch, codec) and
            not known_charset_difference(cs, codec, ch)]

    def rand(rng):
        n = rng.choice([0, 1, 20, rng.randint(0, 20)])
        return ''.join(rng.choice(pool) for _ in range(n))
    return Col(name, 'VARCHAR(20) CHARACTER SET %s' % cs, 'text',
               ['', ''.join(pool[-20:]), ''.join(pool[:20])], rand)


def _encodes(ch, codec):
    try:
        ch.encode(codec)
        return True
    except UnicodeError:
        return False


class Table:
    def __init__(self, name, keys, cols, key_fn, key_canon, options=''):
        self.name = name
        self.keys = keys                    # key columns (Col)
        self.cols = keys + cols             # all columns in table order
        self.nonkey = cols
        self.writable = [c for c in cols if not c.generated]
        self.key_fn = key_fn                # n -> tuple of key values (SQL)
        self.key_canon = key_canon          # n -> canonical key tuple
        self.options = options
        self.by_name = {c.name: c for c in self.cols}
        self.key_idx = [self.cols.index(k) for k in keys]

    def ddl(self):
        return 'CREATE TABLE `%s` (%s, PRIMARY KEY (%s)) ENGINE=InnoDB %s' % (
            self.name, ', '.join('`%s` %s' % (c.name, c.ddl) for c in self.cols),
            ', '.join('`%s`' % k.name for k in self.keys), self.options)


TIME_KEY_BASE = datetime.datetime(2001, 2, 3, 4, 5, 6)


def make_tables():
    tables = []
    cols = [int_col('ti', 8, False), int_col('tiu', 8, True), int_col('si', 16, False),
            int_col('siu', 16, True), int_col('mi', 24, False), int_col('miu', 24, True),
            int_col('i', 32, False), int_col('iu', 32, True), int_col('bi', 64, False),
            int_col('biu', 64, True), int_col('nn', 16, False, notnull=True)]
    tables.append(Table(
        't_int', [Col('id', 'BIGINT UNSIGNED NOT NULL', 'int', [], None)], cols,
        lambda n: (n * 7919 + (2 ** 63 if n % 2 else 0),),
        lambda n: (n * 7919 + (2 ** 63 if n % 2 else 0),)))

    fedges = [0.0, 1.0, -1.5, F32_MAX, -F32_MAX, F32_MIN_NORMAL, F32_MIN_DENORMAL, -F32_MIN_DENORMAL,
              16777217.0, 0.1, 3.14159274]
    dedges = [0.0, 0.1 + 0.2, 1.7976931348623157e308, -1.7976931348623157e308,
              2.2250738585072014e-308, 5e-324, -5e-324, 1e-300, 123456789.12345678, -1.0]
    cols = [decimal_col('d65', 65, 30), decimal_col('d10', 10, 0), decimal_col('d5', 5, 5),
            decimal_col('d12', 12, 4), decimal_col('d19', 19, 9), decimal_col('d38', 38, 18),
            decimal_col('d2', 2, 1),
            Col('f', 'FLOAT', 'float', fedges, rand_float32),
            Col('d', 'DOUBLE', 'double', dedges, rand_double),
            Col('dnn', 'DOUBLE NOT NULL', 'double', dedges, rand_double)]
    tables.append(Table(
        't_num', [Col('id', 'INT NOT NULL', 'int', [], None)], cols,
        lambda n: (n if n % 2 else -n,), lambda n: (n if n % 2 else -n,)))

    cols = [bit_col('b1', 1), bit_col('b7', 7), bit_col('b8', 8), bit_col('b33', 33),
            bit_col('b64', 64), bit_col('b16', 16),
            Col('y', 'YEAR', 'year', [0, 1901, 2155, 2000, 1970], lambda rng: rng.randint(1901, 2155)),
            Col('ynn', 'YEAR NOT NULL', 'year', [0, 2155], lambda rng: rng.randint(1901, 2155))]
    tables.append(Table('t_bit', [Col('id', 'MEDIUMINT UNSIGNED NOT NULL', 'int', [], None)], cols,
                        lambda n: (n,), lambda n: (n,)))

    tedges = ['-838:59:59', '838:59:59', '00:00:00', '-00:00:01', '-00:00:00.5',
              '12:34:56.123456', '-838:59:59.999999', '838:59:59.999999', '-01:00:00.000001',
              '-00:00:00.000001', '24:00:00']
    dtedges = ['0000-00-00 00:00:00', '1000-01-01 00:00:00', '9999-12-31 23:59:59.999999',
               '2024-02-29 12:00:00.5', '1969-12-31 23:59:59.999999', '2024-02-00 10:00:00',
               '1970-01-01 00:00:00.000001']
    tsedges = ['0000-00-00 00:00:00', '1970-01-01 00:00:01', '2038-01-19 03:14:07.999999',
               '2000-02-29 23:59:59.5', '2021-03-28 02:30:00', '1999-12-31 23:59:59.000001']
    cols = [Col('dt', 'DATE', 'date', ['0000-00-00', '1000-01-01', '9999-12-31', '2024-02-29',
                                       '1970-01-01', '2024-02-00', '2024-00-00'], rand_date)]
    for p in range(7):
        cols.append(Col('t%d' % p, 'TIME(%d)' % p, 'time', tedges, lambda rng, p=p: rand_time(rng, p)))
    for p in range(7):
        cols.append(Col('dt%d' % p, 'DATETIME(%d)' % p, 'datetime', dtedges, rand_datetime))
    for p in range(7):
        cols.append(Col('ts%d' % p, 'TIMESTAMP(%d) NULL DEFAULT NULL' % p, 'timestamp', tsedges,
                        rand_timestamp))
    cols.append(Col('tnn', 'TIME(3) NOT NULL', 'time', tedges, lambda rng: rand_time(rng, 3)))

    def time_key(n):
        t = TIME_KEY_BASE + datetime.timedelta(seconds=n * 3601, microseconds=(n * 7) % 1000000)
        return t.strftime('%Y-%m-%d %H:%M:%S.%f')
    tables.append(Table('t_time', [Col('id', 'DATETIME(6) NOT NULL', 'datetime', [], None)], cols,
                        lambda n: (time_key(n),), lambda n: (time_key(n),)))

    cols = [text_col('c', 'CHAR(10)', 10),
            text_col('c100', 'CHAR(100)', 100),
            text_col('v', 'VARCHAR(20)', 20),
            text_col('v300', 'VARCHAR(300)', 300),
            text_col('tt', 'TINYTEXT', 255, maxbytes=255),
            text_col('tx', 'TEXT', 2000, maxbytes=65535),
            text_col('mt', 'MEDIUMTEXT', 3000, big=100000),
            text_col('lt', 'LONGTEXT', 3000, big=300000),
            text_col('c3', 'VARCHAR(50) CHARACTER SET utf8mb3', 50, bmp=True),
            text_col('bin', 'VARCHAR(30) COLLATE utf8mb4_bin', 30),
            text_col('nn', 'VARCHAR(10) NOT NULL', 10)]
    tables.append(Table(
        't_str', [Col('k', 'VARCHAR(40) NOT NULL', 'text', [], None), Col('kn', 'INT NOT NULL', 'int', [], None)],
        cols, lambda n: ('%d-ä😀' % (n // 5), n % 5), lambda n: ('%d-ä😀' % (n // 5), n % 5),
        'DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci'))

    cols = [latin1_col('c', 'CHAR(10)', 10), latin1_col('v', 'VARCHAR(300)', 300),
            latin1_col('v100', 'VARCHAR(100)', 100), latin1_col('tx', 'TEXT', 1000),
            latin1_col('tt', 'TINYTEXT', 255), latin1_col('nn', 'CHAR(3) NOT NULL', 3)]
    tables.append(Table('t_latin', [Col('id', 'INT NOT NULL', 'int', [], None)], cols,
                        lambda n: (n,), lambda n: (n,), 'DEFAULT CHARSET=latin1'))

    # MariaDB COMPRESSED columns: each value deflated (or stored as it is
    # when that does not pay), in the binlog too
    cols = [text_col('tx', 'TEXT COMPRESSED', 2000, maxbytes=65535, big=50000),
            text_col('v', 'VARCHAR(300) COMPRESSED', 300),
            text_col('vc', 'VARCHAR(1000) CHARACTER SET utf8mb3 COMPRESSED', 1000, bmp=True),
            latin1_col('lt', 'TEXT CHARACTER SET latin1 COMPRESSED', 1000),
            binary_col('bl', 'BLOB COMPRESSED', 65535, edges_len=(255, 256, 65535)),
            binary_col('vb', 'VARBINARY(500) COMPRESSED', 500, edges_len=(500,))]
    tables.append(Table('t_colzip', [Col('id', 'INT NOT NULL', 'int', [], None)], cols,
                        lambda n: (n,), lambda n: (n,),
                        'DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci'))

    cols = [binary_col('b1', 'BINARY(1)', 1, fixlen=1),
            binary_col('b16', 'BINARY(16)', 16, edges_len=(16, 15), fixlen=16),
            binary_col('b255', 'BINARY(255)', 255, edges_len=(255,), fixlen=255),
            binary_col('vb', 'VARBINARY(10)', 10, edges_len=(10,)),
            binary_col('vb1000', 'VARBINARY(1000)', 1000, edges_len=(255, 256, 1000)),
            binary_col('tb', 'TINYBLOB', 255, edges_len=(255,)),
            binary_col('bl', 'BLOB', 65535, edges_len=(255, 256, 65535)),
            binary_col('mb', 'MEDIUMBLOB', 16777215, edges_len=(65536, 2 * 1024 * 1024 + 3),
                       big=(0.002, 3 * 1024 * 1024)),
            binary_col('lb', 'LONGBLOB', 2 ** 32 - 1, edges_len=(5 * 1024 * 1024 + 1,),
                       big=(0.002, 3 * 1024 * 1024)),
            binary_col('nn', 'VARBINARY(4) NOT NULL', 4)]
    tables.append(Table('t_bin', [Col('id', 'BINARY(8) NOT NULL', 'fixbin', [], None, fixlen=8)], cols,
                        lambda n: (struct.pack('>Q', n << 8),),
                        lambda n: (struct.pack('>Q', n << 8).hex(),)))

    big_enum = ['m%03d' % i for i in range(300)]
    set64 = ['s%02d' % i for i in range(64)]
    cols = [enum_col('e', "ENUM('a','b','c','ä','😀','x y') COLLATE utf8mb4_bin", ['a', 'b', 'c', 'ä', '😀', 'x y']),
            enum_col('e2', 'ENUM(%s) CHARACTER SET latin1' % ','.join("'%s'" % m for m in big_enum),
                     big_enum),
            set_col('s', "SET('a','b','c','d','e','f','g','h','ü')", list('abcdefghü')),
            set_col('s64', 'SET(%s)' % ','.join("'%s'" % m for m in set64), set64),
            set_col('s1', "SET('x','ÿ')", ['x', 'ÿ']),
            json_col('j'),
            geom_col('g', 'GEOMETRY', wkt_any),
            geom_col('p', 'POINT', wkt_point),
            geom_col('pg', 'POLYGON', wkt_polygon),
            Col('ip', 'INET6', 'fixbin', ['::', '::1', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'],
                rand_inet6, fixlen=16),
            Col('u', 'UUID', 'fixbin', ['00000000-0000-0000-0000-000000000000',
                                        '123e4567-e89b-12d3-a456-426655440000'], rand_uuid, fixlen=16),
            enum_col('enn', "ENUM('x','y')", ['x', 'y'], notnull=True)]
    tables.append(Table('t_misc', [Col('id', 'INT NOT NULL', 'int', [], None)], cols,
                        lambda n: (n,), lambda n: (n,)))

    cols = [int_col('a', 32, False), text_col('b', 'VARCHAR(10)', 10),
            Col('vg', 'BIGINT AS (`a` * 2) VIRTUAL', 'int', [], None),
            Col('sg', "VARCHAR(20) AS (CONCAT(`b`, 'x')) STORED", 'text', [], None),
            Col('vd', "DATETIME(3) AS (TIMESTAMPADD(SECOND, ABS(`a`) % 100000000, '2000-01-01 00:00:00.125')) VIRTUAL",
                'datetime', [], None),
            int_col('inv', 16, False),
            Col('vb', 'VARBINARY(40) AS (UNHEX(HEX(`b`))) VIRTUAL', 'binary', [], None)]
    cols[5].ddl += ' INVISIBLE'
    tables.append(Table('t_gen', [Col('id', 'INT NOT NULL', 'int', [], None)], cols,
                        lambda n: (n,), lambda n: (n,)))

    # 300 columns: packed column counts and metadata lengths above 250,
    # null bitmaps of 38 bytes
    wide = []
    for i in range(299):
        k = i % 10
        nm = 'c%03d' % i
        if k == 0:
            wide.append(int_col(nm, 32, False))
        elif k == 1:
            wide.append(int_col(nm, 16, True))
        elif k == 2:
            wide.append(text_col(nm, 'VARCHAR(8)', 8))
        elif k == 3:
            wide.append(Col(nm, 'DATE', 'date', ['0000-00-00', '9999-12-31'], rand_date))
        elif k == 4:
            wide.append(bit_col(nm, 3))
        elif k == 5:
            wide.append(decimal_col(nm, 6, 2))
        elif k == 6:
            wide.append(int_col(nm, 8, False))
        elif k == 7:
            wide.append(Col(nm, 'DOUBLE', 'double', [0.5, -1e300], rand_double))
        elif k == 8:
            wide.append(Col(nm, 'TIME(1)', 'time', ['-838:59:59', '00:00:00.1'], lambda rng: rand_time(rng, 1)))
        else:
            wide.append(text_col(nm, 'CHAR(2) CHARACTER SET latin1', 2, bmp=True, plain=True))
    tables.append(Table('t_wide', [Col('id', 'INT NOT NULL', 'int', [], None)], wide,
                        lambda n: (n if n % 2 else -n,), lambda n: (n if n % 2 else -n,)))

    cols = [charset_col('c_' + cs, cs, codec, limit) for cs, codec, limit in EXTRA_CHARSETS]
    tables.append(Table('t_charsets', [Col('id', 'INT NOT NULL', 'int', [], None)], cols,
                        lambda n: (n,), lambda n: (n,)))
    return tables


# ---------------------------------------------------------------------------
# MariaDB instances

def sh(args, check=True, timeout=300):
    p = subprocess.run(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=timeout, text=True)
    if check and p.returncode != 0:
        raise RuntimeError('%s failed (exit %d): %s' % (' '.join(args[:3]), p.returncode,
                                                        p.stdout.strip()[-2000:]))
    return p.stdout


_instances = []                 # started, for the signal handler
_instances_lock = threading.Lock()
_start_lock = threading.Lock()
_stopping = False


class Instance:
    def __init__(self, name, port, metadata, image, extra=()):
        self.name = name
        self.port = port
        self.metadata = metadata
        self.image = image
        self.extra = list(extra)
        self.datadir = os.path.join(RUN, 'mariadb-' + name)
        self.socket = os.path.join(RUN, 'mariadb-%s.sock' % name)

    def start(self):
        with _instances_lock:
            if _stopping:
                raise RuntimeError('interrupted')
            _instances.append(self)
        args = ['bash', MARIADB_SH, 'start', '--fresh', '--name', self.name, '--port', str(self.port),
                '--', '--binlog-row-metadata=' + self.metadata, '--binlog-row-image=' + self.image,
                '--innodb-flush-log-at-trx-commit=2', '--sync-binlog=0',
                '--innodb-buffer-pool-size=64M'] + self.extra
        # one initialization at a time, and one retry: mariadb-install-db
        # has been seen failing when run concurrently
        with _start_lock:
            try:
                out = sh(args)
            except RuntimeError as e:
                log('%s: start failed, retrying once: %s' % (self.name, short(str(e), 300)))
                out = sh(args)
        log(out.strip())

    def destroy(self):
        if os.environ.get('BLF_DIFF_KEEP') == '1':
            log('keeping instance %s (BLF_DIFF_KEEP=1)' % self.name)
            return
        sh(['bash', MARIADB_SH, 'stop', '--name', self.name], check=False, timeout=120)
        sh(['bash', MARIADB_SH, 'destroy', '--name', self.name], check=False, timeout=120)

    def connect(self, db=None):
        return pymysql.connect(unix_socket=self.socket, user='root', password='', database=db,
                               charset='utf8mb4', autocommit=True, max_allowed_packet=1 << 30,
                               read_timeout=600, write_timeout=600)


# ---------------------------------------------------------------------------
# The workload

def sql_lit(conn, v):
    if v is None:
        return 'NULL'
    if isinstance(v, Raw):
        return v.sql
    if isinstance(v, bool):
        return '1' if v else '0'
    if isinstance(v, float):
        r = repr(v)
        return r if ('e' in r or '.' in r) else r + 'e0'
    if isinstance(v, int):
        return str(v)
    if isinstance(v, (bytes, bytearray)):
        return "X'%s'" % bytes(v).hex()
    if isinstance(v, str):
        return conn.escape(v)
    raise TypeError(type(v))


def key_where(conn, t, keys):
    """WHERE clause selecting the rows with the given key tuples."""
    if len(t.keys) == 1:
        return '`%s` IN (%s)' % (t.keys[0].name, ','.join(sql_lit(conn, k[0]) for k in keys))
    return '(%s) IN (%s)' % (','.join('`%s`' % c.name for c in t.keys),
                             ','.join('(%s)' % ','.join(sql_lit(conn, x) for x in k) for k in keys))


def select_sql(t, where=None):
    sql = 'SELECT %s FROM `%s`' % (', '.join(select_expr(c) for c in t.cols), t.name)
    if where:
        sql += ' WHERE ' + where
    return sql


def fetch_canon(conn, t, where=None):
    """{canonical key: canonical row} as MariaDB returns them."""
    with conn.cursor() as cur:
        cur.execute(select_sql(t, where))
        rows = cur.fetchall()
    out = {}
    for r in rows:
        row = {c.name: truth_canon(c, v) for c, v in zip(t.cols, r)}
        out[tuple(row[k.name] for k in t.keys)] = row
    return out


class Workload:
    def __init__(self, inst, tables, seed, nrows):
        self.inst = inst
        self.tables = tables
        self.rng = random.Random(seed)
        self.nrows = nrows
        self.live = {t.name: [] for t in tables}        # row ids (n) present
        self.pos = {t.name: {} for t in tables}         # n -> index in live
        self.next_n = {t.name: 1 for t in tables}
        self.next_rb = {t.name: ROLLBACK_BASE for t in tables}
        self.inserted = {t.name: 0 for t in tables}     # rows inserted so far (edges first)
        self.expected_counts = collections.Counter()    # (table, op) -> rows, committed
        self.committed = []                             # gtids in commit order
        self.snapshots = {}                             # gtid -> [(table, key, row or None)]
        self.rollback_keys = {t.name: set() for t in tables}
        self.ntxn = self.nrollback = self.nstmt = 0
        self.harness_errors = []

    # live-set helpers
    def _add(self, t, n):
        self.pos[t][n] = len(self.live[t])
        self.live[t].append(n)

    def _remove(self, t, n):
        i = self.pos[t].pop(n)
        last = self.live[t].pop()
        if last != n:
            self.live[t][i] = last
            self.pos[t][last] = i

    def new_row(self, t, rollback):
        """Values of a new row: the first committed rows of a table take
        each column's edge values in turn, the others random values."""
        if rollback:
            return [c.value(self.rng) for c in t.writable]
        i = self.inserted[t.name]
        self.inserted[t.name] += 1
        row = []
        for c in t.writable:
            if i < len(c.edges):
                row.append(c.edges[i])          # every edge value once, first
            else:
                row.append(c.value(self.rng))
        return row

    def run(self):
        conn = self.inst.connect(DB)
        snap = self.inst.connect(DB)
        try:
            with snap.cursor() as cur:
                cur.execute("SET time_zone = '+00:00', character_set_results = utf8mb4")
            with conn.cursor() as cur:
                # non-strict: zero dates, the ENUM error value; no NO_ZERO_DATE
                cur.execute("SET sql_mode = 'NO_ENGINE_SUBSTITUTION'")
            total_inserted = lambda: sum(self.inserted.values())
            last_gtid = None
            # at least as many inserts per table as it has edge values: each
            # edge value (limits, NULL, zero dates, ...) appears once
            need = {t.name: max(len(c.edges) for c in t.writable) for t in self.tables}
            while total_inserted() < self.nrows or \
                    any(self.inserted[n] < k for n, k in need.items()):
                rollback = self.rng.random() < ROLLBACK_P
                last_gtid = self.transaction(conn, snap, rollback, last_gtid)
        finally:
            conn.close()
            snap.close()

    def transaction(self, conn, snap, rollback, last_gtid):
        rng = self.rng
        saved = None
        if rollback:
            saved = ({k: list(v) for k, v in self.live.items()}, {k: dict(v) for k, v in self.pos.items()})
        touched = collections.defaultdict(set)
        created = collections.defaultdict(set)
        counts = collections.Counter()
        tz = rng.choice(["'+00:00'", "'+05:30'", "'-08:00'", "'+13:00'", "'SYSTEM'"])
        with conn.cursor() as cur:
            cur.execute('SET time_zone = ' + tz)
            cur.execute('BEGIN')
            for _ in range(rng.choice([1, 1, 2, 3, 4, 6, 10])):
                t = rng.choice(self.tables)
                self.statement(conn, cur, t, rollback, touched, created, counts)
            if rollback:
                for tname, ns in created.items():
                    t = next(x for x in self.tables if x.name == tname)
                    for n in ns:
                        self.rollback_keys[tname].add(t.key_canon(n))
                cur.execute('ROLLBACK')
                self.live, self.pos = saved
                self.nrollback += 1
                return last_gtid
            cur.execute('COMMIT')
            self.ntxn += 1
            if sum(counts.values()) == 0:
                return last_gtid
            cur.execute('SELECT @@last_gtid')
            gtid = cur.fetchone()[0]
        if gtid == last_gtid:
            self.harness_errors.append('transaction %d: @@last_gtid did not change (%s)' % (self.ntxn, gtid))
            return last_gtid
        self.committed.append(gtid)
        self.expected_counts.update(counts)
        # the touched rows as MariaDB returns them now
        snaps = []
        for tname, ns in touched.items():
            t = next(x for x in self.tables if x.name == tname)
            present = [n for n in ns if n in self.pos[tname]]
            rows = fetch_canon(snap, t, key_where(snap, t, [t.key_fn(n) for n in present])) if present else {}
            for n in ns:
                key = t.key_canon(n)
                row = rows.pop(key, None)
                if (row is not None) != (n in self.pos[tname]):
                    self.harness_errors.append('%s: row %r present=%s but generator says %s' % (
                        tname, key, row is not None, n in self.pos[tname]))
                snaps.append((tname, key, row))
            if rows:
                self.harness_errors.append('%s: key canonicalisation differs: %r' % (tname, list(rows)[:2]))
        self.snapshots[gtid] = snaps
        return gtid

    def statement(self, conn, cur, t, rollback, touched, created, counts):
        rng = self.rng
        live = self.live[t.name]
        r = rng.random()
        self.nstmt += 1
        if len(live) < 4 or r < 0.45:
            k = rng.choice([1, 1, 1, 2, 3, 5, 12])
            rows = []
            for _ in range(k):
                if rollback:
                    n = self.next_rb[t.name]
                    self.next_rb[t.name] += 1
                else:
                    n = self.next_n[t.name]
                    self.next_n[t.name] += 1
                rows.append('(%s)' % ','.join(sql_lit(conn, v) for v in list(t.key_fn(n)) + self.new_row(t, rollback)))
                self._add(t.name, n)
                touched[t.name].add(n)
                created[t.name].add(n)
            cur.execute('INSERT INTO `%s` (%s) VALUES %s' % (
                t.name, ','.join('`%s`' % c.name for c in t.keys + t.writable), ','.join(rows)))
            counts[(t.name, 'insert')] += cur.rowcount
        elif r < 0.72:
            # update non-key columns of 1..3 rows (the same new values)
            ns = rng.sample(live, min(len(live), rng.choice([1, 1, 1, 2, 3])))
            ncols = rng.choice([1, 1, 2, 3, len(t.writable)])
            cols = rng.sample(t.writable, min(ncols, len(t.writable)))
            sets = ','.join('`%s`=%s' % (c.name, sql_lit(conn, c.value(rng))) for c in cols)
            cur.execute('UPDATE `%s` SET %s WHERE %s' % (t.name, sets,
                                                         key_where(conn, t, [t.key_fn(n) for n in ns])))
            counts[(t.name, 'update')] += cur.rowcount
            touched[t.name].update(ns)
        elif r < 0.84:
            # primary-key update, maybe with other columns
            old = rng.choice(live)
            new = self.next_n[t.name]
            self.next_n[t.name] += 1
            sets = ['`%s`=%s' % (c.name, sql_lit(conn, v)) for c, v in zip(t.keys, t.key_fn(new))]
            if rng.random() < 0.5:
                for c in rng.sample(t.writable, rng.randint(1, min(3, len(t.writable)))):
                    sets.append('`%s`=%s' % (c.name, sql_lit(conn, c.value(rng))))
            cur.execute('UPDATE `%s` SET %s WHERE %s' % (t.name, ','.join(sets),
                                                         key_where(conn, t, [t.key_fn(old)])))
            counts[(t.name, 'update')] += cur.rowcount
            self._remove(t.name, old)
            self._add(t.name, new)
            touched[t.name].update((old, new))
            created[t.name].add(new)
        else:
            ns = rng.sample(live, min(len(live), rng.choice([1, 1, 2, 3])))
            cur.execute('DELETE FROM `%s` WHERE %s' % (t.name, key_where(conn, t, [t.key_fn(n) for n in ns])))
            counts[(t.name, 'delete')] += cur.rowcount
            for n in ns:
                self._remove(t.name, n)
            touched[t.name].update(ns)


# ---------------------------------------------------------------------------
# Decoding and replaying

def run_binlogcat(args, out_path, timeout=600):
    t0 = time.time()
    with open(out_path, 'wb') as out, open(out_path + '.stderr', 'wb') as err:
        p = subprocess.run([BINLOGCAT] + args, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                           timeout=timeout)
    with open(out_path + '.stderr', 'r', errors='replace') as f:
        stderr = f.read()
    return p.returncode, stderr, time.time() - t0


def load_events(path, tables=None):
    events = []
    bad = []
    with open(path, 'r', encoding='utf-8', errors='strict') as f:
        for lineno, line in enumerate(f, 1):
            if line == '\n':
                continue
            try:
                ev = json.loads(line, parse_int=Num, parse_float=Num)
            except ValueError as e:
                bad.append('line %d: %s: %s' % (lineno, e, short(line)))
                continue
            if ev.get('schema') == DB and 'rows' in ev and (tables is None or ev.get('table') in tables):
                events.append(ev)
    return events, bad


class Replay:
    """The decoded change stream applied to {table: {key: row}}."""

    def __init__(self, tables, policy, snapshots, rollback_keys, check_names):
        self.tables = {t.name: t for t in tables}
        self.policy = policy
        image = policy.image
        self.image = image
        self.snapshots = snapshots
        self.rollback_keys = rollback_keys
        self.check_names = check_names
        self.model = {t.name: {} for t in tables}
        self.counts = collections.Counter()
        self.event_errors = collections.defaultdict(list)    # table -> messages
        self.event_error_count = collections.Counter()
        self.state_errors = collections.defaultdict(list)    # per-transaction checks
        self.state_error_count = collections.Counter()
        self.state_checked = collections.Counter()
        self.name_errors = []
        self.gtids = []
        self.leaked = []
        self.seen_null = collections.defaultdict(set)
        self.seen_value = collections.defaultdict(set)

    def ev_error(self, table, msg):
        self.event_error_count[table] += 1
        if len(self.event_errors[table]) < MAX_REPORT:
            self.event_errors[table].append(msg)

    def image_of(self, t, img, where):
        """Canonical {column: value} of a decoded row image."""
        out = {}
        for name, v in img.items():
            col = t.by_name.get(name)
            if col is None and name.startswith('@') and name[1:].isdigit() and \
                    1 <= int(name[1:]) <= len(t.cols):
                if self.check_names and len(self.name_errors) < MAX_REPORT:
                    self.name_errors.append('%s: column %s has no name' % (t.name, name))
                col = t.cols[int(name[1:]) - 1]
            if col is None:
                self.ev_error(t.name, '%s: unknown column %s' % (where, short(name)))
                continue
            cv = dec_canon(col, v)
            out[col.name] = cv
            if cv is None:
                self.seen_null[t.name].add(col.name)
            else:
                self.seen_value[t.name].add(col.name)
        return out

    def key_of(self, t, row, where):
        try:
            return tuple(row[k.name] for k in t.keys)
        except KeyError as e:
            self.ev_error(t.name, '%s: row image lacks key column %s' % (where, e))
            return None

    def check_leak(self, t, key, where):
        if key in self.rollback_keys[t.name] and len(self.leaked) < MAX_REPORT:
            self.leaked.append('%s %s: key %s of a rolled-back row' % (t.name, where, short(key)))

    def check_full(self, t, row, where):
        if self.image == 'FULL' and len(row) != len(t.cols):
            missing = [c.name for c in t.cols if c.name not in row]
            self.ev_error(t.name, '%s: FULL image lacks columns %s' % (where, ','.join(missing[:5])))

    def check_before(self, t, before, cur, where):
        if cur is None:
            return
        for name, v in before.items():
            if cur.get(name, '<absent>') != v:
                self.ev_error(t.name, '%s: before-image column %s: model has %s, image %s' % (
                    where, name, short(cur.get(name, '<absent>')), short(v)))
                return

    def apply(self, events):
        cur_gtid = None
        for ev in events:
            t = self.tables.get(ev.get('table'))
            if t is None:
                continue
            g = ev.get('gtid')
            if g != cur_gtid:
                self.finish(cur_gtid)
                cur_gtid = g
                self.gtids.append(g)
            op = ev.get('op')
            m = self.model[t.name]
            for i, r in enumerate(ev.get('rows', [])):
                where = 'gtid %s %s row %d' % (g, op, i)
                self.counts[(t.name, op)] += 1
                before = self.image_of(t, r['before'], where) if 'before' in r else None
                after = self.image_of(t, r['after'], where) if 'after' in r else None
                if op == 'insert':
                    if after is None:
                        self.ev_error(t.name, where + ': no after image')
                        continue
                    self.check_full(t, after, where)
                    k = self.key_of(t, after, where)
                    if k is None:
                        continue
                    self.check_leak(t, k, where)
                    if k in m:
                        self.ev_error(t.name, '%s: insert of existing key %s' % (where, short(k)))
                    m[k] = after
                elif op == 'update':
                    if before is None or after is None:
                        self.ev_error(t.name, where + ': update without before/after image')
                        continue
                    self.check_full(t, before, where + ' before')
                    self.check_full(t, after, where + ' after')
                    k = self.key_of(t, before, where)
                    if k is None:
                        continue
                    old = m.pop(k, None)
                    if old is None:
                        self.ev_error(t.name, '%s: update of unknown key %s' % (where, short(k)))
                        old = {}
                    self.check_before(t, before, old or None, where)
                    new = dict(old)
                    new.update(after)
                    nk = self.key_of(t, new, where)
                    if nk is None:
                        continue
                    self.check_leak(t, nk, where)
                    if nk in m:
                        self.ev_error(t.name, '%s: update onto existing key %s' % (where, short(nk)))
                    m[nk] = new
                elif op == 'delete':
                    if before is None:
                        self.ev_error(t.name, where + ': delete without before image')
                        continue
                    self.check_full(t, before, where)
                    k = self.key_of(t, before, where)
                    if k is None:
                        continue
                    old = m.pop(k, None)
                    if old is None:
                        self.ev_error(t.name, '%s: delete of unknown key %s' % (where, short(k)))
                    self.check_before(t, before, old, where)
                else:
                    self.ev_error(t.name, '%s: unknown op %s' % (where, short(op)))
        self.finish(cur_gtid)

    def finish(self, gtid):
        """After a transaction: the touched rows as MariaDB returned them."""
        if gtid is None:
            return
        for tname, key, exp in self.snapshots.get(gtid, ()):
            got = self.model[tname].get(key)
            self.state_checked[tname] += 1
            diffs = compare_rows(self.tables[tname], exp, got, self.policy)
            if diffs:
                self.state_error_count[tname] += 1
                if len(self.state_errors[tname]) < MAX_REPORT:
                    self.state_errors[tname].append('after %s, row %s: %s' % (gtid, short(key, 50), diffs[0]))


class Policy:
    """What a configuration is expected to decode, beyond plain equality."""

    def __init__(self, metadata, image):
        self.metadata = metadata
        self.image = image

    def adjust(self, c, v):
        """The expected canonical value of column c (MariaDB's value v)."""
        if self.metadata in ('MINIMAL', 'NO_LOG'):
            return members_from_schema(c, v)
        return v

    def in_images(self, c):
        """Does column c appear in row images (MINIMAL: VIRTUAL ones do not)?"""
        return not (self.image == 'MINIMAL' and c.generated == 'virtual')


def members_from_schema(c, v):
    """
    With binlog_row_metadata=MINIMAL the ENUM/SET member names come from
    information_schema, which MariaDB keeps in utf8mb3: a member with a
    4-byte character reads as '?' there (SHOW CREATE TABLE shows the same).
    """
    if v is None or c.kind not in ('enum', 'set'):
        return v
    fix = lambda m: ''.join('?' if ord(ch) > 0xffff else ch for ch in m)
    return fix(v) if c.kind == 'enum' else [fix(m) for m in v]


def compare_rows(t, exp, got, policy=None):
    """Differences between an expected (MariaDB) and a decoded row."""
    if exp is None and got is None:
        return []
    if exp is None:
        return ['row should not exist']
    if got is None:
        return ['row missing']
    out = []
    for c in t.cols:
        e = exp.get(c.name)
        if policy:
            if not policy.in_images(c):
                continue
            e = policy.adjust(c, e)
        g = got.get(c.name, '<absent>')
        if e != g:
            out.append('%s: expected %s, got %s' % (c.name, short(e), short(g)))
    return out


def compare_tables(t, truth, model, policy=None):
    """(number of differing rows/values, first few messages)."""
    msgs = []
    n = 0
    for k in sorted(set(truth) | set(model), key=repr):
        diffs = compare_rows(t, truth.get(k), model.get(k), policy)
        if diffs:
            n += 1
            if len(msgs) < MAX_REPORT:
                msgs.append('row %s: %s' % (short(k, 50), '; '.join(diffs[:2])))
    return n, msgs


# ---------------------------------------------------------------------------
# One configuration

class Cases:
    def __init__(self, prefix):
        self.prefix = prefix
        self.lines = []
        self.failed = 0

    def skip(self, name, reason):
        self.lines.append('ok - %s/%s # SKIP %s' % (self.prefix, name, ' '.join(str(reason).split())[:500]))

    def add(self, name, ok, reason=''):
        if ok:
            self.lines.append('ok - %s/%s' % (self.prefix, name))
        else:
            self.failed += 1
            reason = ' '.join(str(reason).split())
            self.lines.append('not ok - %s/%s: %s' % (self.prefix, name, reason[:1500]))


def check_stream(cases, label, tables, replay, truth, wl, full):
    """Cases for one decoded stream (replayed)."""
    for t in tables:
        n, msgs = compare_tables(t, truth[t.name], replay.model[t.name], replay.policy)
        cases.add('%s%s' % (label, t.name), n == 0,
                  '%d of %d rows differ from MariaDB: %s' % (n, len(truth[t.name]), ' | '.join(msgs)))
        if not full:
            continue
        errs = replay.event_errors[t.name] + replay.state_errors[t.name]
        nerr = replay.event_error_count[t.name] + replay.state_error_count[t.name]
        cases.add('%s%s/events' % (label, t.name), nerr == 0,
                  '%d problems (%d row states checked after transactions): %s' % (
                      nerr, replay.state_checked[t.name], ' | '.join(errs)))


def run_config(cfg, port, seed, nrows, tmpdir):
    name, metadata, image, extra = cfg
    cases = Cases('differential/' + name)
    inst = Instance('diff-' + name, port, metadata, image, extra)
    tables = make_tables()
    t0 = time.time()
    try:
        try:
            inst.start()
            conn = inst.connect()
            with conn.cursor() as cur:
                cur.execute('CREATE DATABASE `%s`' % DB)
                cur.execute('USE `%s`' % DB)
                for t in tables:
                    cur.execute(t.ddl())
                cur.execute('SELECT @@binlog_row_metadata, @@binlog_row_image, @@binlog_format')
                settings = cur.fetchone()
            conn.close()
            if tuple(settings) != (metadata, image, 'ROW'):
                raise RuntimeError('server runs with %r' % (settings,))
            wl = Workload(inst, tables, seed, nrows)
            wl.run()
            conn = inst.connect(DB)
            with conn.cursor() as cur:
                cur.execute("SET time_zone = '+00:00', character_set_results = utf8mb4")
            truth = {t.name: fetch_canon(conn, t) for t in tables}
            conn.close()
        except Exception as e:
            log(traceback.format_exc())
            cases.add('setup', False, 'server or workload failed: %s' % e)
            return cases
        tw = time.time() - t0
        cases.add('setup', not wl.harness_errors, '; '.join(wl.harness_errors[:MAX_REPORT]))
        log('%s: workload %.1fs: %d transactions committed (%d with row changes), %d rolled back, '
            '%d statements, %d rows in the end, row changes %s' % (
                name, tw, wl.ntxn, len(wl.committed), wl.nrollback, wl.nstmt,
                sum(len(v) for v in truth.values()), dict(sorted(
                    (op, sum(v for (tn, o), v in wl.expected_counts.items() if o == op))
                    for op in ('insert', 'update', 'delete')))))

        # ---- live mode
        out = os.path.join(tmpdir, name + '.live.jsonl')
        rc, stderr, secs = run_binlogcat(['--host', '127.0.0.1', '--port', str(port), '--user', REPL_USER,
                                          '--password', REPL_PW, '--start', 'earliest', '--until-end',
                                          '--rows-only'], out)
        events, bad = load_events(out)
        log('%s: binlogcat live: exit %d, %.1fs, %d row events, %d bytes%s' % (
            name, rc, secs, len(events), os.path.getsize(out),
            ('; stderr: ' + short(stderr.strip(), 500)) if stderr.strip() else ''))
        cases.add('live/binlogcat', rc == 0 and not bad,
                  'exit status %d%s%s' % (rc, (', stderr: ' + stderr.strip()[:300]) if stderr.strip() else '',
                                          (', unparsable output: ' + bad[0]) if bad else ''))
        policy = Policy(metadata, image)
        replay = Replay(tables, policy, wl.snapshots, wl.rollback_keys, check_names=True)
        replay.apply(events)
        check_stream(cases, 'live/', tables, replay, truth, wl, full=True)

        # transactions: committed ones all there, in order, rolled-back ones not
        problems = []
        if replay.gtids != wl.committed:
            missing = [g for g in wl.committed if g not in set(replay.gtids)]
            extra = [g for g in replay.gtids if g not in set(wl.committed)]
            problems.append('%d committed transactions, %d in the stream; missing %s; not committed %s%s' % (
                len(wl.committed), len(replay.gtids), missing[:5], extra[:5],
                '; order differs' if not missing and not extra else ''))
        problems += replay.leaked[:MAX_REPORT]
        cases.add('live/transactions', not problems,
                  '; '.join(problems) + ' (%d rolled back)' % wl.nrollback)

        diffs = []
        for key in sorted(set(wl.expected_counts) | set(replay.counts)):
            if wl.expected_counts[key] != replay.counts[key]:
                diffs.append('%s %s: MariaDB reported %d rows, stream has %d' % (
                    key[0], key[1], wl.expected_counts[key], replay.counts[key]))
        cases.add('live/row-counts', not diffs, '; '.join(diffs[:6]))
        cases.add('live/column-names', not replay.name_errors, '; '.join(replay.name_errors))

        # coverage: every column was seen NULL (if nullable) and not NULL
        gaps = []
        for t in tables:
            for c in t.cols:
                if not policy.in_images(c):
                    if c.name in replay.seen_value[t.name] or c.name in replay.seen_null[t.name]:
                        gaps.append('%s.%s (VIRTUAL) in a MINIMAL image' % (t.name, c.name))
                    continue
                if c.name not in replay.seen_value[t.name]:
                    gaps.append('%s.%s never non-NULL' % (t.name, c.name))
                if c.null and c.name not in replay.seen_null[t.name]:
                    gaps.append('%s.%s never NULL' % (t.name, c.name))
        cases.add('live/coverage', not gaps, '; '.join(gaps[:8]))

        # ---- file mode: FULL metadata alone; MINIMAL with the server's schema
        files = sorted(f for f in os.listdir(inst.datadir) if f.startswith('mysql-bin.0'))
        args = ['--rows-only', os.path.join(inst.datadir, files[0])]
        label = 'file/'
        if metadata != 'FULL':
            args = ['--schema-from-server', '--host', '127.0.0.1', '--port', str(port), '--user', REPL_USER,
                    '--password', REPL_PW] + args
            label = 'file-schema/'
        fout = os.path.join(tmpdir, name + '.file.jsonl')
        rc, stderr, secs = run_binlogcat(args, fout)
        fevents, bad = load_events(fout)
        log('%s: binlogcat %s: exit %d, %.1fs, %d row events%s' % (
            name, label.rstrip('/'), rc, secs, len(fevents),
            ('; stderr: ' + short(stderr.strip(), 500)) if stderr.strip() else ''))
        freplay = Replay(tables, policy, {}, wl.rollback_keys, check_names=True)
        freplay.apply(fevents)
        fcmp = [compare_tables(t, truth[t.name], freplay.model[t.name], policy) for t in tables]
        n_differ = sum(n for n, _ in fcmp)
        first = [m for _, msgs in fcmp for m in msgs][:MAX_REPORT]
        same = [(e.get('gtid'), e.get('table'), e.get('op'), e.get('rows')) for e in fevents] == \
               [(e.get('gtid'), e.get('table'), e.get('op'), e.get('rows')) for e in events]
        reasons = []
        if rc != 0 or bad:
            reasons.append('exit status %d %s %s' % (rc, stderr.strip()[:300], bad[:1]))
        if n_differ:
            reasons.append('%d rows differ from MariaDB: %s' % (n_differ, ' | '.join(first)))
        if not same:
            reasons.append('row events differ from live mode (%d vs %d events)' % (len(fevents), len(events)))
        if freplay.name_errors:
            reasons.append('; '.join(freplay.name_errors))
        cases.add(label.rstrip('/'), not reasons, '; '.join(reasons))

        if name in ('full-full', 'minimal-minimal'):
            check_compressed(cases, inst, policy, seed, tmpdir, name)
        if cases.failed == 0 and os.environ.get('BLF_DIFF_KEEP') != '1':
            for f in (out, out + '.stderr', fout, fout + '.stderr'):
                os.unlink(f)
        else:
            log('%s: decoded streams kept in %s' % (name, tmpdir))
        log('%s: done in %.1fs' % (name, time.time() - t0))
    except Exception as e:
        log(traceback.format_exc())
        cases.add('error', False, 'exception: %s' % e)
    finally:
        try:
            inst.destroy()
        except Exception as e:
            log('destroying %s: %s' % (inst.name, e))
    return cases


def compressed_table():
    """MariaDB's compressed columns (binlog types BLOB_COMPRESSED and
    VARCHAR_COMPRESSED: a header byte, then zlib data or the raw value)."""
    cols = [text_col('c', 'TEXT COMPRESSED', 3000, edges=('abc' * 5000, '😀' * 3000), big=100000),
            text_col('vc', 'VARCHAR(1000) COMPRESSED', 1000, edges=('xyz' * 333,)),
            binary_col('bc', 'BLOB COMPRESSED', 65535, edges_len=(65535, 1)),
            binary_col('vbc', 'VARBINARY(500) COMPRESSED', 500, edges_len=(500,)),
            latin1_col('lc', 'MEDIUMTEXT COMPRESSED CHARACTER SET latin1', 1000)]
    return Table('t_compressed', [Col('id', 'INT NOT NULL', 'int', [], None)], cols,
                 lambda n: (n,), lambda n: (n,))


def check_compressed(cases, inst, policy, seed, tmpdir, name):
    """
    Compressed columns, in a stream of their own (from the binlog position
    after the main workload): a decoder that rejects them stops there.
    Passes when the values match MariaDB's; skipped (with the reason) when
    binlogcat stops with an error that names the compressed type.
    """
    t = compressed_table()
    conn = inst.connect(DB)
    with conn.cursor() as cur:
        cur.execute('SHOW MASTER STATUS')
        binlog_file, binlog_pos = cur.fetchone()[:2]
        cur.execute(t.ddl())
    conn.close()
    wl = Workload(inst, [t], seed + 1, 60)
    wl.run()
    conn = inst.connect(DB)
    with conn.cursor() as cur:
        cur.execute("SET time_zone = '+00:00', character_set_results = utf8mb4")
    truth = fetch_canon(conn, t)
    conn.close()
    out = os.path.join(tmpdir, name + '.compressed.jsonl')
    rc, stderr, secs = run_binlogcat(['--host', '127.0.0.1', '--port', str(inst.port), '--user', REPL_USER,
                                      '--password', REPL_PW, '--start', '%s:%d' % (binlog_file, binlog_pos),
                                      '--until-end', '--rows-only'], out)
    events, bad = load_events(out, {t.name})
    log('%s: compressed columns: binlogcat exit %d, %d row events%s' % (
        name, rc, len(events), ('; stderr: ' + short(stderr.strip(), 300)) if stderr.strip() else ''))
    if rc != 0 and 'COMPRESSED' in stderr:
        cases.skip('compressed-columns', 'binlogcat stops at MariaDB compressed columns: ' + stderr.strip()[:300])
        return
    replay = Replay([t], policy, wl.snapshots, wl.rollback_keys, check_names=True)
    replay.apply(events)
    n, msgs = compare_tables(t, truth, replay.model[t.name], policy)
    errs = replay.event_errors[t.name] + replay.state_errors[t.name]
    reasons = []
    if rc != 0 or bad:
        reasons.append('binlogcat exit status %d %s %s' % (rc, stderr.strip()[:300], bad[:1]))
    if n:
        reasons.append('%d of %d rows differ from MariaDB: %s' % (n, len(truth), ' | '.join(msgs)))
    if errs:
        reasons.append(' | '.join(errs))
    cases.add('compressed-columns', not reasons, '; '.join(reasons))
    if not reasons:
        os.unlink(out)
        os.unlink(out + '.stderr')


# ---------------------------------------------------------------------------
# Self-check of the comparison: a changed value must be reported

def self_check():
    tables = make_tables()
    rng = random.Random(1)
    missed = []
    for t in tables:
        for c in t.cols:
            if c.kind in ('int', 'year'):
                a, b = 5, 6
            elif c.kind == 'decimal':
                a, b = canon_decimal('1.5', c.scale or 1), canon_decimal('2.5', c.scale or 1)
            elif c.kind == 'float':
                a, b = canon_f32(1.0), canon_f32(1.0000001)
            elif c.kind == 'double':
                a, b = canon_f64(0.1 + 0.2), canon_f64(0.3)
            elif c.kind == 'bit':
                a, b = '0' * c.width, '0' * (c.width - 1) + '1'
            elif c.kind == 'set':
                a, b = ['a'], ['a', 'b']
            elif c.kind == 'fixbin':
                a, b = dec_canon(c, '\\x00'), dec_canon(c, '\\x01')
            else:
                a, b = 'x', 'y'
            row = {x.name: rng.choice([None, 1]) for x in t.cols}
            exp = dict(row, **{c.name: a})
            got = dict(row, **{c.name: b})
            if not compare_rows(t, exp, got) or compare_rows(t, exp, dict(exp)):
                missed.append('%s.%s' % (t.name, c.name))
            key = tuple(exp[k.name] for k in t.keys)
            n, _ = compare_tables(t, {key: exp}, {key: got})
            n2, _ = compare_tables(t, {key: exp}, {})
            if n != 1 or n2 != 1:
                missed.append('%s.%s (table)' % (t.name, c.name))
    # decoder forms that must not be accepted as equal
    c = Col('x', 'TIMESTAMP', 'timestamp', [], None)
    if dec_canon(c, '2024-01-02T03:04:05') == truth_canon(c, '2024-01-02 03:04:05'):
        missed.append('timestamp without +00:00 accepted')
    c = Col('x', 'BINARY(4)', 'fixbin', [], None, fixlen=4)
    if dec_canon(c, '\\x6162') != truth_canon(c, '61620000'):
        missed.append('BINARY(n) padding')
    c = Col('x', 'INT', 'int', [], None)
    if dec_canon(c, '5') == truth_canon(c, 5):
        missed.append('string for an integer accepted')
    c = Col('x', 'FLOAT', 'float', [], None)
    if dec_canon(c, Num('0.1')) != truth_canon(c, 0.10000000149011612):
        missed.append('float32 canonical form')
    return missed


# ---------------------------------------------------------------------------

def main():
    seed = int(os.environ.get('BLF_DIFF_SEED') or (int(time.time() * 1000) % 1000000007))
    nrows = int(os.environ.get('BLF_DIFF_ROWS') or 1200)
    jobs = int(os.environ.get('BLF_DIFF_JOBS') or 2)
    base_port = int(os.environ.get('BLF_DIFF_PORT') or 3420)
    want = os.environ.get('BLF_DIFF_CONFIGS')
    configs = CONFIGS
    if want:
        names = [w.strip() for w in want.split(',') if w.strip()]
        configs = [c for c in CONFIGS if c[0] in names]
        if len(configs) != len(names):
            print('not ok - differential/configs: unknown configuration in BLF_DIFF_CONFIGS=%s' % want)
            return 1
    tmpdir = os.environ.get('BLF_SUITE_TMP') or os.path.join(RUN, 'tmp', 'differential')
    os.makedirs(tmpdir, exist_ok=True)

    log('seed %d (BLF_DIFF_SEED=%d to repeat), %d rows per configuration, %d jobs' % (seed, seed, nrows, jobs))
    for name, md, im, extra in configs:
        log('configuration %s: binlog_row_metadata=%s binlog_row_image=%s %s' % (name, md, im, ' '.join(extra)))
    if not os.access(BINLOGCAT, os.X_OK):
        print('not ok - differential/binlogcat: %s is not built (run make)' % BINLOGCAT, flush=True)
        return 1

    failed = 0
    missed = self_check()
    line = 'ok - differential/comparator-self-check' if not missed else \
        'not ok - differential/comparator-self-check: changed values not reported: ' + ', '.join(missed)
    failed += bool(missed)
    with _print_lock:
        print(line, flush=True)

    t0 = time.time()
    ports = {c[0]: base_port + i for i, c in enumerate(CONFIGS)}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        futs = [ex.submit(run_config, c, ports[c[0]], seed, nrows, tmpdir) for c in configs]
        for f in futs:
            cases = f.result()
            failed += cases.failed
            with _print_lock:
                for line in cases.lines:
                    print(line, flush=True)
    log('seed %d: %d configurations in %.1fs, %d failed' % (seed, len(configs), time.time() - t0, failed))
    return 1 if failed else 0


def _on_signal(signum, frame):
    # leave no server behind (they run detached), then exit at once: the
    # worker threads may be in the middle of a statement
    global _stopping
    signal.signal(signum, signal.SIG_IGN)
    print('# interrupted (signal %d): destroying the instances' % signum, flush=True)
    with _instances_lock:
        _stopping = True
        names = set(inst.name for inst in _instances)
    if os.environ.get('BLF_DIFF_KEEP') != '1':
        for name in sorted(names):
            try:
                subprocess.run(['bash', MARIADB_SH, 'destroy', '--name', name], stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
            except Exception:
                pass
    os._exit(128 + signum)


if __name__ == '__main__':
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    sys.exit(main())
