"""
test/streaming/values.py -- a MariaDB table with every column type, rows of
edge values, and the canonical forms used to compare a row image of get()
(jsonb, README "Value formats") with what MariaDB returns for the row:

  integers, YEAR      JSON number                <-> SELECT col
  DECIMAL(p,s)        JSON number, exact digits  <-> CAST(col AS CHAR) (same text)
  FLOAT               number -> float32          <-> CAST(col AS DOUBLE)
  DOUBLE              number -> double           <-> SELECT col
  BIT(n)              n '0'/'1' digits           <-> CAST(col AS UNSIGNED)
  DATE, TIME          string                     <-> CAST(col AS CHAR)
  DATETIME            'T' separator              <-> CAST(col AS CHAR)
  TIMESTAMP           UTC, '+00:00'              <-> CAST(col AS CHAR), time_zone '+00:00'
  CHAR/VARCHAR/TEXT   string (NUL -> U+FFFD)     <-> SELECT col (utf8mb4)
  ENUM                string                     <-> CAST(col AS CHAR)
  SET                 array of members           <-> CAST(col AS CHAR) split at ','
  JSON (MariaDB)      string                     <-> SELECT col
  binary strings      "\\x" + lowercase hex      <-> HEX(col)
  BINARY(n), INET6, UUID  the same, right-padded with 00 to n bytes (the
                      binlog drops trailing zero bytes; MariaDB pads)
  GEOMETRY            "\\x" + hex of EWKB      <-> HEX(col) (SRID + WKB) as EWKB
"""

import struct

from common import Num


class Raw:
    """A SQL expression, used as is."""
    __slots__ = ('sql',)

    def __init__(self, sql):
        self.sql = sql

    def __repr__(self):
        return 'Raw(%s)' % self.sql


def lit(conn, v):
    if v is None:
        return 'NULL'
    if isinstance(v, Raw):
        return v.sql
    if isinstance(v, bool):
        return '1' if v else '0'
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, bytes):
        return "X'%s'" % v.hex()
    return conn.escape(v)


def latin1(b):
    return Raw("_latin1 X'%s'" % b.hex())


def geom(wkt, srid=0):
    return Raw("ST_GeomFromText('%s', %d)" % (wkt, srid))


def mysql_geom_to_ewkb(h):
    """MySQL's internal geometry (hex: 4-byte little-endian SRID, then WKB)
    as EWKB (hex), as PostGIS writes it: the SRID flag 0x20000000 in the
    outer type and the SRID after it, in the WKB's byte order; SRID 0 gives
    plain WKB."""
    b = bytes.fromhex(h)
    srid = struct.unpack('<I', b[:4])[0]
    wkb = b[4:]
    if srid == 0:
        return wkb.hex()
    fmt = '<I' if wkb[0] == 1 else '>I'
    typ = struct.unpack(fmt, wkb[1:5])[0] | 0x20000000
    return (wkb[:1] + struct.pack(fmt, typ) + struct.pack(fmt, srid) + wkb[5:]).hex()


class Col:
    def __init__(self, name, ddl, kind, values, fixlen=None, width=None):
        self.name = name
        self.ddl = ddl
        self.kind = kind
        self.values = values
        self.fixlen = fixlen
        self.width = width


def int_col(name, ddl, lo, hi):
    return Col(name, ddl, 'int', [hi, lo, None, 0, -1 if lo < 0 else 1, hi - 1, lo + 1])


def time_vals(p):
    return ['838:59:59.999999', '-838:59:59.999999', None, '00:00:00', '-00:00:00.5',
            '12:34:56.123456', '-01:02:03.000001']


def datetime_vals(p):
    return ['9999-12-31 23:59:59.999999', '1000-01-01 00:00:00', None, '0000-00-00 00:00:00',
            '2024-02-00 10:00:00.5', '2024-02-29 12:34:56.123456', '1969-12-31 23:59:59.999999']


def timestamp_vals(p):
    return ['2038-01-19 03:14:07.999999', '1970-01-01 00:00:01', None, '0000-00-00 00:00:00',
            '2000-02-29 23:59:59.5', '2021-03-28 02:30:00.123456', '1999-12-31 23:59:59.000001']


BIG = bytes(range(256)) * 256                   # 64 KiB of every byte value


def columns():
    cols = [
        int_col('ti', 'TINYINT', -128, 127),
        int_col('tiu', 'TINYINT UNSIGNED', 0, 255),
        int_col('si', 'SMALLINT', -32768, 32767),
        int_col('siu', 'SMALLINT UNSIGNED', 0, 65535),
        int_col('mi', 'MEDIUMINT', -8388608, 8388607),
        int_col('miu', 'MEDIUMINT UNSIGNED', 0, 16777215),
        int_col('i', 'INT', -2 ** 31, 2 ** 31 - 1),
        int_col('iu', 'INT UNSIGNED', 0, 2 ** 32 - 1),
        int_col('bi', 'BIGINT', -2 ** 63, 2 ** 63 - 1),
        int_col('biu', 'BIGINT UNSIGNED', 0, 2 ** 64 - 1),
        Col('inn', 'INT NOT NULL', 'int', [1, -1, 0, 2, 3, 4, 5]),
        Col('d65', 'DECIMAL(65,30)', 'decimal', [
            Raw("'99999999999999999999999999999999999.999999999999999999999999999999'"),
            Raw("'-99999999999999999999999999999999999.999999999999999999999999999999'"),
            None, Raw("'0'"), Raw("'-0.000000000000000000000000000001'"),
            Raw("'12345.678900000000000000000000000001'"), Raw("'-1.5'")]),
        Col('d10', 'DECIMAL(10,0)', 'decimal', [Raw("'9999999999'"), Raw("'-9999999999'"), None,
                                                Raw("'0'"), Raw("'-1'"), Raw("'1234567890'"), Raw("'42'")]),
        Col('d5', 'DECIMAL(5,5)', 'decimal', [Raw("'0.99999'"), Raw("'-0.99999'"), None, Raw("'0'"),
                                              Raw("'-0.00001'"), Raw("'0.5'"), Raw("'0.12345'")]),
        Col('d12', 'DECIMAL(12,4)', 'decimal', [Raw("'99999999.9999'"), Raw("'-99999999.9999'"), None,
                                                Raw("'0'"), Raw("'12.5'"), Raw("'-0.0001'"), Raw("'1.2345'")]),
        Col('f', 'FLOAT', 'float', [3.4028234663852886e38, -3.4028234663852886e38, None, 0.0,
                                    1.401298464324817e-45, 16777217.0, 0.1]),
        Col('d', 'DOUBLE', 'double', [1.7976931348623157e308, -1.7976931348623157e308, None, 0.0,
                                      5e-324, 0.30000000000000004, -2.2250738585072014e-308]),
        Col('b1', 'BIT(1)', 'bit', [1, 0, None, 1, 0, 1, 0], width=1),
        Col('b7', 'BIT(7)', 'bit', [127, 0, None, 64, 1, 85, 42], width=7),
        Col('b33', 'BIT(33)', 'bit', [2 ** 33 - 1, 0, None, 2 ** 32, 1, 12345, 5], width=33),
        Col('b64', 'BIT(64)', 'bit', [2 ** 64 - 1, 0, None, 2 ** 63, 1, 0x5555555555555555, 7], width=64),
        Col('y', 'YEAR', 'int', [2155, 1901, None, 0, 2000, 1970, 2024]),
        Col('dt', 'DATE', 'date', ['9999-12-31', '1000-01-01', None, '0000-00-00', '2024-02-00',
                                   '2024-02-29', '1970-01-01']),
    ]
    for p in range(7):
        cols.append(Col('t%d' % p, 'TIME(%d)' % p, 'time', time_vals(p)))
    for p in range(7):
        cols.append(Col('dt%d' % p, 'DATETIME(%d)' % p, 'datetime', datetime_vals(p)))
    for p in range(7):
        cols.append(Col('ts%d' % p, 'TIMESTAMP(%d) NULL DEFAULT NULL' % p, 'timestamp', timestamp_vals(p)))
    cols += [
        Col('c', 'CHAR(10)', 'text', ['x' * 10, '', None, 'a ', '😀🎉ä', 'ΩλжЖ', '\'"\\']),
        Col('v', 'VARCHAR(100)', 'text', ['😀' * 100, '', None, ' a', 'a\0b', '中文字日本語한국어',
                                          'tab\tnl\nret\r\x1b\x7f']),
        Col('tx', 'TEXT', 'text', ['x' * 3000 + '😀', '', None, 'e\u0301 \u2028 \ufeff \u200b', '\0',
                                   '{"a": 1}', 'last']),
        Col('lt', 'LONGTEXT', 'text', ['😀' * 70000, '', None, 'ü', '𠜎', '\\', 'z']),
        Col('cl', 'CHAR(10) CHARACTER SET latin1', 'text', [
            latin1(b'\xe4\xf6\xfc\xdf\xe9\xe8\xe7\xf1\xff\x80'), latin1(b''), None, latin1(b'abc'),
            latin1(b'\x81\x8d\x8f\x90\x9d'), latin1(b' x '), latin1(b'\'"\\')]),
        Col('vl', 'VARCHAR(100) CHARACTER SET latin1', 'text', [
            latin1(bytes(range(0x80, 0xa0))), latin1(b''), None, latin1(bytes(range(0xa0, 0x100))[:100]),
            latin1(b'plain'), latin1(b'\x00'), latin1(b'\xe4' * 100)]),
        Col('txl', 'TEXT CHARACTER SET latin1', 'text', [
            latin1(bytes(range(1, 256)) * 10), latin1(b''), None, latin1(b'\xa0\xa9\xae'),
            latin1(b'x'), latin1(b'\x99\x9c'), latin1(b'end')]),
        Col('c3', 'VARCHAR(50) CHARACTER SET utf8mb3', 'text', [
            'äöü€中文' * 7, '', None, 'ΩλжЖЯ', 'x', '\ufffd', '한국어']),
        Col('cbin', 'VARCHAR(20) COLLATE utf8mb4_bin', 'text', ['Zz😀', '', None, 'A', 'a', 'ß', 'ẞ']),
        Col('nn', 'VARCHAR(10) NOT NULL', 'text', ['nn', '', '', 'x', 'y', 'z', 'w']),
        Col('bn', 'BINARY(8)', 'fixbin', [bytes(range(1, 9)), b'', None, b'\x00', b'\xff\x00',
                                          b'\x00' * 8, b'a'], fixlen=8),
        Col('cb', 'CHAR(5) CHARACTER SET binary', 'fixbin', [b'abcde', b'', None, b'\x00\x01',
                                                             b' ', b'\xff' * 5, b'x\x00'], fixlen=5),
        Col('vb', 'VARBINARY(100)', 'binary', [b'\x00\xff\x10', b'', None, b'\x00', bytes(range(100)),
                                               b' ', b'a\x00']),
        Col('tb', 'TINYBLOB', 'binary', [BIG[:255], b'', None, b'\x00', b'\xff', b'\n\r', b'\xde\xad\xbe\xef']),
        Col('bl', 'BLOB', 'binary', [BIG[:65535], b'', None, b'\x00' * 3, BIG[:300], b'x', b'\x80']),
        Col('mb', 'MEDIUMBLOB', 'binary', [BIG * 4, b'', None, b'\x01', b'', BIG[:70000], b'm']),
        Col('lb', 'LONGBLOB', 'binary', [BIG * 24, b'', None, b'\x02', b'\xff' * 10, b'l', BIG[:1000]]),
        Col('e', "ENUM('a','b','ä','😀','x y')", 'text', ['x y', 'a', None, 'ä', '😀', Raw('0'), 'b']),
        Col('e1', "ENUM('x','y') CHARACTER SET latin1 NOT NULL", 'text', ['y', 'x', 'x', 'y', 'x', 'y', 'x']),
        Col('s', "SET('a','b','c','ü')", 'set', ['a,b,c,ü', '', None, 'ü', 'b,c', 'a', 'c,a']),
        Col('s64', 'SET(%s)' % ','.join("'m%02d'" % i for i in range(64)), 'set', [
            ','.join('m%02d' % i for i in range(64)), '', None, 'm63', 'm00', 'm31,m32', 'm01']),
        Col('j', 'JSON', 'text', ['{"a": [1, 2.5, "😀", null, true]}', '[]', None, '{}', '"x"', '1e308',
                                  '{"k": "v\\"q"}']),
        Col('g', 'GEOMETRY', 'geom', [
            geom('POINT(1 2)', 4326), geom('POLYGON((0 0,1 0,1 1,0 1,0 0))'), None,
            geom('LINESTRING(0 0,1 1,2 2)'), geom('GEOMETRYCOLLECTION(POINT(1 1),LINESTRING(0 0,1 1))'),
            geom('MULTIPOINT(1 1,2 2)', 3857), geom('POINT(-1.5 1e300)')]),
        Col('pt', 'POINT', 'geom', [geom('POINT(0 0)'), geom('POINT(-180 90)', 4326), None,
                                      geom('POINT(1e-300 -0.5)'), geom('POINT(3 4)'), geom('POINT(5 6)'),
                                      geom('POINT(7 8)')]),
        Col('ip', 'INET6', 'fixbin', ['::', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', None, '::1',
                                      '::ffff:192.0.2.1', 'fe80::1', '2001:db8::'], fixlen=16),
        Col('u', 'UUID', 'fixbin', ['ffffffff-ffff-ffff-ffff-ffffffffffff', '00000000-0000-0000-0000-000000000000',
                                    None, '123e4567-e89b-12d3-a456-426655440000',
                                    '00000000-0000-0000-0000-000000000001',
                                    'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '10000000-0000-0000-0000-000000000000'],
            fixlen=16),
    ]
    return cols


def create_sql(table, cols):
    return 'CREATE TABLE %s (id INT NOT NULL PRIMARY KEY, %s) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4' % (
        table, ', '.join('`%s` %s' % (c.name, c.ddl) for c in cols))


def row_values(conn, cols, r):
    """SQL literals of value set r (0..6) for every column."""
    return ['%s' % lit(conn, c.values[r]) for c in cols]


def select_expr(c):
    q = '`%s`' % c.name
    if c.kind in ('int', 'text', 'double'):
        return q
    if c.kind in ('decimal', 'date', 'time', 'datetime', 'timestamp', 'set'):
        return 'CAST(%s AS CHAR)' % q
    if c.kind == 'float':
        return 'CAST(%s AS DOUBLE)' % q
    if c.kind == 'bit':
        return 'CAST(%s AS UNSIGNED)' % q
    if c.kind in ('binary', 'fixbin', 'geom'):
        return 'HEX(%s)' % q
    raise ValueError(c.kind)


def select_sql(table, cols, ids):
    return 'SELECT id, %s FROM %s WHERE id IN (%s) ORDER BY id' % (
        ', '.join(select_expr(c) for c in cols), table, ','.join(str(i) for i in ids))


def f32(x):
    return struct.unpack('<f', struct.pack('<f', float(x)))[0] + 0.0


def truth_canon(c, v):
    """A value as MariaDB returned it, in canonical form."""
    if v is None:
        return None
    k = c.kind
    if k == 'int':
        return ('num', int(v))
    if k == 'decimal':
        return ('dec', v)
    if k == 'float':
        return ('num', repr(f32(v)))
    if k == 'double':
        return ('num', repr(float(v) + 0.0))
    if k == 'bit':
        return ('str', format(int(v), '0%db' % c.width))
    if k in ('date', 'time'):
        return ('str', v)
    if k == 'datetime':
        return ('str', v)
    if k == 'timestamp':
        return ('str', v)
    if k == 'text':
        if isinstance(v, bytes):
            return ('bytes from MariaDB', v.hex())
        return ('str', v.replace('\0', '\ufffd'))     # jsonb cannot store NUL
    if k == 'set':
        return ('list', v.split(',') if v else [])
    if k == 'binary':
        return ('str', v.lower())
    if k == 'geom':
        return ('str', mysql_geom_to_ewkb(v))
    if k == 'fixbin':
        return ('str', v.lower())
    raise ValueError(k)


def image_canon(c, v):
    """A value of a jsonb row image, in canonical form (or a mismatch marker)."""
    if v is None:
        return None
    k = c.kind
    bad = ('unexpected', repr(v)[:200])
    isnum = isinstance(v, Num)
    isstr = isinstance(v, str) and not isnum
    try:
        if k == 'int':
            return ('num', int(v)) if isnum and '.' not in v and 'e' not in v.lower() else bad
        if k == 'decimal':
            return ('dec', str(v)) if isnum else bad
        if k == 'float':
            return ('num', repr(f32(float(v)))) if isnum else bad
        if k == 'double':
            return ('num', repr(float(v) + 0.0)) if isnum else bad
        if k == 'bit':
            return ('str', v) if isstr and len(v) == c.width and set(v) <= set('01') else bad
        if k in ('date', 'time'):
            return ('str', v) if isstr else bad
        if k == 'datetime':
            return ('str', v.replace('T', ' ', 1)) if isstr and 'T' in v else bad
        if k == 'timestamp':
            if isstr and v.endswith('+00:00') and 'T' in v:
                return ('str', v[:-6].replace('T', ' ', 1))
            return bad
        if k == 'text':
            return ('str', v) if isstr else bad
        if k == 'set':
            if isinstance(v, list) and all(isinstance(m, str) and not isinstance(m, Num) for m in v):
                return ('list', list(v))
            return bad
        if k in ('binary', 'geom'):
            return ('str', v[2:]) if isstr and v.startswith('\\x') else bad
        if k == 'fixbin':
            if isstr and v.startswith('\\x') and len(v) - 2 <= 2 * c.fixlen:
                return ('str', v[2:].ljust(2 * c.fixlen, '0'))
            return bad
    except (ValueError, OverflowError):
        return bad
    raise ValueError(k)


def compare_image(cols, truth_row, image, what):
    """Mismatches (list of strings) between an image and MariaDB's row."""
    out = []
    if image is None:
        return ['%s: no image' % what]
    names = ['id'] + [c.name for c in cols]
    if set(image.keys()) != set(names):
        missing = sorted(set(names) - set(image.keys()))
        extra = sorted(set(image.keys()) - set(names))
        out.append('%s: columns differ (missing %s, extra %s)' % (what, missing, extra))
    idcol = Col('id', 'INT', 'int', [])
    for c, tv in zip([idcol] + cols, truth_row):
        if c.name not in image:
            continue
        exp = truth_canon(c, tv)
        got = image_canon(c, image[c.name])
        if exp != got:
            out.append('%s.%s: expected %s, got %s' % (what, c.name, _short(exp), _short(got)))
    return out


def _short(v, n=90):
    s = repr(v)
    return s if len(s) <= n else s[:n] + '...(%d chars)' % len(s)
