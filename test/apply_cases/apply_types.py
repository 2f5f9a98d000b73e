"""
test/apply_cases/apply_types.py -- the every-type case of the apply tests: the
streaming tests' all-types table (test/streaming/values.py) copied by
snapshot() and changed through apply(), compared with MariaDB value by
value; the created column types against the README's type mapping table;
the options tinyint1_boolean, zero_date and time_type.

Canonical forms (PostgreSQL side <-> MariaDB side):
  integers, YEAR     int                   col::text        <-> SELECT col
  DECIMAL            Decimal               col::text        <-> CAST(col AS CHAR)
  FLOAT              float32 value         col::float8      <-> CAST(col AS DOUBLE)
  DOUBLE             float                 col              <-> SELECT col
  BIT(n)             n binary digits       col::text        <-> CAST(col AS UNSIGNED)
  DATE               'YYYY-MM-DD'          col::text        <-> CAST(col AS CHAR)
  TIME               microseconds          extract(epoch)   <-> CAST(col AS CHAR)
  DATETIME/TIMESTAMP 'YYYY-MM-DD HH:MM:SS.ffffff' (UTC)
  zero dates         None (zero_date null), '-infinity'
  strings, ENUM      str                   col              <-> SELECT col (utf8mb4)
  SET                list of members       text[]           <-> split at ','
  JSON (MariaDB)     parsed, exact numbers col::text        <-> SELECT col
  binary, INET6,     lowercase hex         encode(col,'hex') <-> HEX(col): BINARY(n)
  UUID                                                          padded to n bytes
  GEOMETRY           lowercase hex of EWKB encode(col,'hex') <-> HEX(col) (SRID + WKB) as EWKB
"""

import copy
import json
import os
import re
from decimal import Decimal

from harness import (Source, check, col_types, expect_error, log, mdb_fresh, mx, q, short)
import values                                       # noqa: E402  (test/streaming, via harness)

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))

# Column -> (first cell of the README's "Type mapping" row, PostgreSQL type
# of the table snapshot() creates, as format_type() prints it).
EXPECTED_TYPES = {
    'id': ('MEDIUMINT, INT', 'integer not null'),
    'ti': ('TINYINT, SMALLINT', 'smallint'),
    'tiu': ('TINYINT, SMALLINT', 'smallint'),
    'si': ('TINYINT, SMALLINT', 'smallint'),
    'siu': ('TINYINT, SMALLINT', 'integer'),
    'mi': ('MEDIUMINT, INT', 'integer'),
    'miu': ('MEDIUMINT, INT', 'integer'),
    'i': ('MEDIUMINT, INT', 'integer'),
    'iu': ('MEDIUMINT, INT', 'bigint'),
    'bi': ('BIGINT', 'bigint'),
    'biu': ('BIGINT', 'numeric(20,0)'),
    'inn': ('MEDIUMINT, INT', 'integer not null'),
    'd65': ('DECIMAL(p,s)', 'numeric(65,30)'),
    'd10': ('DECIMAL(p,s)', 'numeric(10,0)'),
    'd5': ('DECIMAL(p,s)', 'numeric(5,5)'),
    'd12': ('DECIMAL(p,s)', 'numeric(12,4)'),
    'f': ('FLOAT, DOUBLE', 'real'),
    'd': ('FLOAT, DOUBLE', 'double precision'),
    'b1': ('BIT(n)', 'bit varying(1)'),
    'b7': ('BIT(n)', 'bit varying(7)'),
    'b33': ('BIT(n)', 'bit varying(33)'),
    'b64': ('BIT(n)', 'bit varying(64)'),
    'y': ('YEAR', 'smallint'),
    'dt': ('DATE', 'date'),
    'c': ('CHAR(n), VARCHAR(n)', 'character varying(10)'),
    'v': ('CHAR(n), VARCHAR(n)', 'character varying(100)'),
    'tx': ('TINYTEXT … LONGTEXT', 'text'),
    'lt': ('TINYTEXT … LONGTEXT', 'text'),
    'cl': ('CHAR(n), VARCHAR(n)', 'character varying(10)'),
    'vl': ('CHAR(n), VARCHAR(n)', 'character varying(100)'),
    'txl': ('TINYTEXT … LONGTEXT', 'text'),
    'c3': ('CHAR(n), VARCHAR(n)', 'character varying(50)'),
    'cbin': ('CHAR(n), VARCHAR(n)', 'character varying(20)'),
    'nn': ('CHAR(n), VARCHAR(n)', 'character varying(10) not null'),
    'bn': ('BINARY, VARBINARY, BLOBs', 'bytea'),
    'cb': ('BINARY, VARBINARY, BLOBs', 'bytea'),
    'vb': ('BINARY, VARBINARY, BLOBs', 'bytea'),
    'tb': ('BINARY, VARBINARY, BLOBs', 'bytea'),
    'bl': ('BINARY, VARBINARY, BLOBs', 'bytea'),
    'mb': ('BINARY, VARBINARY, BLOBs', 'bytea'),
    'lb': ('BINARY, VARBINARY, BLOBs', 'bytea'),
    'e': ('ENUM', 'text'),
    'e1': ('ENUM', 'text not null'),
    's': ('SET', 'text[]'),
    's64': ('SET', 'text[]'),
    'j': ('JSON', 'jsonb'),
    'g': ('GEOMETRY and its subtypes', 'bytea'),
    'pt': ('GEOMETRY and its subtypes', 'bytea'),
    'ip': ('MariaDB INET6, UUID', 'bytea'),
    'u': ('MariaDB INET6, UUID', 'bytea'),
}
for _p in range(7):
    EXPECTED_TYPES['t%d' % _p] = ('TIME(n)', 'interval(%d)' % _p if _p else 'interval(0)')
    EXPECTED_TYPES['dt%d' % _p] = ('DATETIME(n)', 'timestamp(%d) without time zone' % _p)
    EXPECTED_TYPES['ts%d' % _p] = ('TIMESTAMP(n)', 'timestamp(%d) with time zone' % _p)


def readme_type_rows():
    """{first cell: second cell} of the README's type mapping table."""
    with open(os.path.join(ROOT, 'README.md'), encoding='utf-8') as f:
        text = f.read()
    m = re.search(r'^## Type mapping.*?\n(\|.*?)\n\n', text, re.S | re.M)
    check(m, 'README.md has no "## Type mapping" table')
    rows = {}
    for line in m.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cells) == 2 and not cells[0].startswith('---'):
            rows[cells[0]] = cells[1]
    return rows


def base_type(t):
    """'character varying(10) not null' -> words to find in the README row."""
    t = t.replace(' not null', '')
    t = re.sub(r'\(\d+(,\d+)?\)', '(n)', t)
    return {'character varying(n)': 'varchar(n)', 'timestamp(n) without time zone': 'timestamp(n)',
            'timestamp(n) with time zone': 'timestamptz(n)', 'numeric(n)': 'numeric',
            'interval(n)': 'interval(n)', 'bit varying(n)': 'bit varying(n)'}.get(t, t)


def check_types(conn, schema, table, expected, readme):
    got = col_types(conn, schema, table)
    problems = []
    for col, (row, pgtype) in expected.items():
        if got.get(col) != pgtype:
            problems.append('%s: created as %s, expected %s' % (col, got.get(col), pgtype))
        cell = readme.get(row)
        if cell is None:
            problems.append('README type mapping has no row %r' % row)
        elif base_type(pgtype) not in cell and base_type(pgtype).replace('(n)', '') not in cell:
            problems.append('README row %r (%r) does not say %s' % (row, cell, base_type(pgtype)))
    extra = sorted(set(got) - set(expected))
    if extra:
        problems.append('unexpected columns %s' % extra)
    check(not problems, 'column types of %s.%s: %s' % (schema, table, '; '.join(problems[:12])))


# ---- canonical values ----

def parse_temporal(s):
    """'2024-01-02 03:04:05.5+00' -> '2024-01-02 03:04:05.500000'."""
    m = re.match(r'^(-?\d{4})-(\d\d)-(\d\d)(?:[ T](\d\d):(\d\d):(\d\d)(?:\.(\d+))?)?(?:\+00(?::00)?)?$', s)
    if not m:
        return ('unparsed', s)
    y, mo, d, h, mi, sec, frac = m.groups()
    if h is None:
        return '%s-%s-%s' % (y, mo, d)
    return '%s-%s-%s %s:%s:%s.%s' % (y, mo, d, h, mi, sec, (frac or '').ljust(6, '0'))


def time_us(s):
    m = re.match(r'^(-?)(\d+):(\d\d):(\d\d)(?:\.(\d+))?$', s)
    if not m:
        return ('unparsed', s)
    neg, h, mi, sec, frac = m.groups()
    us = ((int(h) * 60 + int(mi)) * 60 + int(sec)) * 1000000 + int((frac or '').ljust(6, '0'))
    return -us if neg else us


def is_zero_date(s):
    return s[:4] == '0000' or s[5:7] == '00' or s[8:10] == '00'


def json_canon(s):
    return json.loads(s, parse_float=Decimal, parse_int=Decimal)


def mdb_expr(c):
    if c.kind == 'time':
        return 'CAST(`%s` AS CHAR)' % c.name
    return values.select_expr(c)


def mdb_canon(c, v, zero='null'):
    """A value as MariaDB returned it (mdb_expr), canonical."""
    if v is None:
        return None
    k = c.kind
    if k == 'int':
        return int(v)
    if k == 'decimal':
        return Decimal(v)
    if k == 'float':
        return values.f32(v)
    if k == 'double':
        return float(v)
    if k == 'bit':
        return format(int(v), '0%db' % c.width)
    if k in ('date', 'datetime', 'timestamp'):
        if is_zero_date(v):
            return None if zero == 'null' else '-infinity'
        return parse_temporal(v)
    if k == 'time':
        return time_us(v)
    if k == 'text':
        if c.name == 'j':
            return json_canon(v)
        return v if isinstance(v, str) else ('bytes', v.hex())
    if k == 'set':
        return v.split(',') if v else []
    if k in ('binary', 'fixbin'):
        return v.lower()
    if k == 'geom':
        return values.mysql_geom_to_ewkb(v)
    raise ValueError(k)


def pg_expr(c, pgtype=None):
    n = '"%s"' % c.name
    k = c.kind
    if k in ('int', 'decimal', 'bit', 'date', 'datetime', 'timestamp'):
        return n + '::text'
    if k == 'float':
        return n + '::float8'
    if k == 'time':
        return '(extract(epoch FROM %s) * 1000000)::bigint' % n
    if k == 'text' and c.name == 'j':
        return n + '::text'
    if k in ('binary', 'fixbin', 'geom'):
        return "encode(%s, 'hex')" % n
    return n


def pg_canon(c, v):
    if v is None:
        return None
    k = c.kind
    if k == 'int':
        return int({'true': 1, 'false': 0}.get(v, v))
    if k == 'decimal':
        return Decimal(v)
    if k == 'float':
        return values.f32(v)
    if k == 'double':
        return float(v)
    if k in ('date', 'datetime', 'timestamp'):
        return v if 'infinity' in v else parse_temporal(v)
    if k == 'time':
        return int(v)
    if k == 'text' and c.name == 'j':
        return json_canon(v)
    return v


def compare_tables(conn, m, cols, mtable, ptable, what, zero='null'):
    """Every row of MariaDB's mtable equals ptable's, value by value."""
    mrows = mx(m, 'SELECT id, %s FROM %s ORDER BY id' % (', '.join(mdb_expr(c) for c in cols), mtable))
    prows = q(conn, 'SELECT id, %s FROM %s ORDER BY id' % (', '.join(pg_expr(c) for c in cols), ptable))
    check([r[0] for r in prows] == [r[0] for r in mrows], '%s: ids %s in PostgreSQL, %s in MariaDB' % (
        what, [r[0] for r in prows], [r[0] for r in mrows]))
    problems = []
    n = 0
    for mr, pr in zip(mrows, prows):
        for c, mv, pv in zip(cols, mr[1:], pr[1:]):
            e = mdb_canon(c, mv, zero)
            g = pg_canon(c, pv)
            n += 1
            if e != g:
                problems.append('%s id %s column %s: PostgreSQL has %s, MariaDB %s' % (
                    what, mr[0], c.name, short(g, 120), short(e, 120)))
    for p in problems[:30]:
        log(p)
    check(not problems, '%d value mismatches, first: %s' % (len(problems), problems[0] if problems else ''))
    log('%s: %d rows, %d values equal' % (what, len(mrows), n))


def nul_free(cols):
    """The all-types columns without NUL characters in text values
    (PostgreSQL text cannot hold them; that error is checked separately)."""
    out = copy.deepcopy(cols)
    for c in out:
        if c.kind != 'text':
            continue
        for i, v in enumerate(c.values):
            if isinstance(v, str) and '\0' in v:
                c.values[i] = v.replace('\0', '<nul>')
            if isinstance(v, values.Raw) and "X'00'" in v.sql.replace(' ', ''):
                c.values[i] = values.latin1(b'<nul>')
    return out


def case_types(conn, m):
    db = 'blf_ac_types'
    table = db + '.vals'
    mdb_fresh(m, db)
    cols = nul_free(values.columns())
    colnames = ', '.join('`%s`' % c.name for c in cols)

    def insert(ids_sets):
        mx(m, 'INSERT INTO %s (id, %s) VALUES %s' % (table, colnames, ', '.join(
            '(%d, %s)' % (i, ', '.join(values.row_values(m, cols, r))) for i, r in ids_sets)))

    def set_clause(r):
        return ', '.join('`%s` = %s' % (c.name, v) for c, v in zip(cols, values.row_values(m, cols, r)))

    mx(m, values.create_sql(table, cols))
    insert([(1, 0), (2, 1), (3, 2), (4, 3)])
    src = Source(conn, 'ac_types', r'^blf_ac_types\.')
    r = src.snapshot([table])
    check(r == [(table, 'blf_ac_types.vals', 4, True)], 'snapshot() returned %s' % (r,))
    check_types(conn, db, 'vals', EXPECTED_TYPES, readme_type_rows())
    compare_tables(conn, m, cols, table, 'blf_ac_types.vals', 'after snapshot()')

    src.start()
    insert([(5, 4), (6, 5), (7, 6)])
    insert([(8, 3), (9, 2)])
    mx(m, 'UPDATE %s SET %s WHERE id = 1' % (table, set_clause(5)))      # every column changes
    mx(m, 'BEGIN')
    mx(m, 'UPDATE %s SET %s WHERE id = 2' % (table, set_clause(2)))      # values -> NULLs
    mx(m, 'UPDATE %s SET %s WHERE id = 3' % (table, set_clause(0)))      # NULLs -> maxima
    mx(m, 'UPDATE %s SET %s WHERE id = 5' % (table, set_clause(1)))      # minima
    mx(m, 'DELETE FROM %s WHERE id = 4' % table)
    mx(m, 'COMMIT')
    mx(m, 'UPDATE %s SET id = 60 WHERE id = 6' % table)                  # the key changes
    mx(m, 'DELETE FROM %s WHERE id IN (7, 9)' % table)
    mx(m, "UPDATE %s SET v = 'only v', tx = NULL WHERE id = 8" % table)   # two columns
    t = src.sync(m)
    log('applied: %s' % t)
    check((t['rows'], t['transactions']) == (14, 7), 'apply() reported %d rows in %d transactions, expected 14 in 7' % (t['rows'], t['transactions']))
    compare_tables(conn, m, cols, table, 'blf_ac_types.vals', 'after apply()')

    # a NUL character cannot go into text: a clear error naming the column
    mx(m, "INSERT INTO %s (id, inn, nn, e1, v) VALUES (100, 1, 'x', 'x', 'a\\0b')" % table)
    src.apply_error(m, 'NUL in a text column',
                 sqlstate='22021', message=['column "v"', 'NUL'], hint='bytea',
                 context=['INSERT of MySQL table blf_ac_types.vals', '"id":100'])
    src.drop()
    mx(m, 'DROP DATABASE %s' % db)


# ---- options: tinyint1_boolean, zero_date, time_type ----

OPT_COLS = [
    values.Col('flag', 'TINYINT(1)', 'int', [1, 0, None, 2, -1]),
    values.Col('d', 'DATE', 'date', ['2024-02-29', '0000-00-00', None, '2024-00-10', '1999-12-31']),
    values.Col('dtm', 'DATETIME(3)', 'datetime', ['2024-02-29 01:02:03.456', '0000-00-00 00:00:00', None,
                                                  '2024-05-00 10:00:00', '1000-01-01 00:00:00']),
    values.Col('ts', 'TIMESTAMP(0) NULL DEFAULT NULL', 'timestamp', ['2038-01-19 03:14:07',
                                                                      '0000-00-00 00:00:00', None,
                                                                      '1970-01-01 00:00:01', '2000-01-01 00:00:00']),
    values.Col('tm', 'TIME(2)', 'time', ['23:59:59.99', '00:00:00', None, '12:00:00.5', '07:08:09']),
]


def case_type_options(conn, m):
    db = 'blf_ac_opts'
    mdb_fresh(m, db)
    table = db + '.o'
    mx(m, 'CREATE TABLE %s (id INT PRIMARY KEY, %s)' % (table, ', '.join(
        '`%s` %s' % (c.name, c.ddl) for c in OPT_COLS)))
    colnames = ', '.join('`%s`' % c.name for c in OPT_COLS)

    def insert(rows):
        mx(m, 'INSERT INTO %s (id, %s) VALUES %s' % (table, colnames, ', '.join(
            '(%d, %s)' % (i, ', '.join(values.row_values(m, OPT_COLS, r))) for i, r in rows)))

    insert([(1, 0), (2, 1)])
    # three sources on the same table, each into its own schema (schema_map)
    configs = [
        ('ac_opt_null', dict(zero_date='null', tinyint1_boolean='true', time_type='time'),
         {'flag': 'boolean', 'd': 'date', 'dtm': 'timestamp(3) without time zone',
          'ts': 'timestamp(0) with time zone', 'tm': 'time(2) without time zone'}),
        ('ac_opt_inf', dict(zero_date='-infinity'),
         {'flag': 'smallint', 'd': 'date', 'dtm': 'timestamp(3) without time zone',
          'ts': 'timestamp(0) with time zone', 'tm': 'interval(2)'}),
        ('ac_opt_err', dict(zero_date='error', time_type='interval'), None),
    ]
    srcs = {}
    for name, opts, types in configs:
        srcs[name] = Source(conn, name, r'^blf_ac_opts\.', schema_map='%s:%s' % (db, name), **opts)
    for name, opts, types in configs[:2]:
        srcs[name].snapshot([table])
        got = col_types(conn, name, 'o')
        for col, t in types.items():
            check(got.get(col) == t, '%s: column %s created as %s, expected %s' % (name, col, got.get(col), t))
        check(q(conn, 'SELECT flag FROM %s.o ORDER BY id' % name) ==
              ([(True,), (False,)] if name == 'ac_opt_null' else [(1,), (0,)]),
              '%s: tinyint(1) values after snapshot: %s' % (name, q(conn, 'SELECT flag FROM %s.o' % name)))
    # zero_date 'error': snapshot() stops at the zero date, naming the column
    expect_error(conn, 'SELECT * FROM binlog_fdw.snapshot(%s, %s)', ('ac_opt_err', [table]),
                 "snapshot with zero_date 'error'", sqlstate='22008',
                 message=['zero date', 'column "d"', table], hint='zero_date')
    mx(m, 'DELETE FROM %s WHERE id = 2' % table)
    srcs['ac_opt_err'].snapshot([table])
    for s in srcs.values():
        s.start()
    insert([(3, 1), (4, 2), (5, 3), (6, 4)])
    mx(m, 'UPDATE %s SET d = NULL, dtm = \'2000-01-01 00:00:00\', flag = 0 WHERE id = 1' % table)
    for name in ('ac_opt_null', 'ac_opt_inf'):
        srcs[name].sync(m)
        zero = 'null' if name == 'ac_opt_null' else '-infinity'
        cols = [c for c in OPT_COLS if c.name != 'flag']
        compare_tables(conn, m, cols, table, '%s.o' % name, name, zero=zero)
        flags = [r[0] for r in q(conn, 'SELECT flag FROM %s.o ORDER BY id' % name)]
        exp = [r[0] for r in mx(m, 'SELECT flag FROM %s ORDER BY id' % table)]
        if name == 'ac_opt_null':
            exp = [None if v is None else v != 0 for v in exp]
        check(flags == exp, '%s: tinyint(1) column %s, expected %s' % (name, flags, exp))
    # zero_date 'error': apply() stops at the row, naming column, table and row
    srcs['ac_opt_err'].apply_error(m, "apply with zero_date 'error'",
                 sqlstate='22008', message=['zero date', 'column "d"'], hint='zero_date',
                 context=["INSERT of MySQL table blf_ac_opts.o", "\"id\":3", 'binlog mysql-bin.'])
    # time_type 'time': a TIME outside 00:00..24:00 is a clear error
    mx(m, "INSERT INTO %s (id, tm) VALUES (7, '-01:00:00')" % table)
    srcs['ac_opt_null'].apply_error(m, "negative TIME into time", sqlstate='22008',
                 message=['-1:00:00', 'column "tm"', 'type time'], hint='time_type',
                 context=['"id":7'])
    for s in srcs.values():
        s.drop()
    for name in srcs:
        q(conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % name)
    mx(m, 'DROP DATABASE %s' % db)
