"""
test/apply/workload.py -- the typed workload of the apply convergence tests
(test/apply/convergence.py, test/suites/80-apply-convergence.sh) and the
canonical dump that compares a MariaDB database with its PostgreSQL copy.

  SCHEMA          five tables that cover every column type MariaDB logs:
                  signed and unsigned integers at their limits, BIT, YEAR,
                  TINYINT(1), DECIMAL up to (65,30), FLOAT/DOUBLE, DATE,
                  TIME/DATETIME/TIMESTAMP with 0, 3 and 6 fractional digits
                  (zero dates too), CHAR/VARCHAR/TEXT in latin1 (cp1252),
                  utf8mb3 and utf8mb4, BINARY/VARBINARY/BLOB/LONGBLOB, ENUM,
                  SET, JSON and NULLs; keys: INT, BIGINT UNSIGNED, a
                  composite (INT, VARCHAR) and a table of markers
  ALTERS          ALTER TABLE ADD (with and without default) / DROP /
                  MODIFY (widening, INT -> BIGINT) COLUMN, run mid-stream
  TypedWriter     seeded random transactions of 1-6 statements over
                  several tables: multi-row inserts, updates of columns and
                  of primary keys, deletes; throttled; it survives a
                  MariaDB restart (reconnects and reloads its keys: what
                  matters is the final state, not its model of it)
  dump_mariadb(), dump_postgres()
                  every table as {key: row}, each value normalised by its
                  MariaDB type so that equal data compares equal: floats
                  as the exact float32/double, BIT as an integer, temporal
                  values as tuples (zero dates as NULL, binlog_fdw's
                  default zero_date), TIME as microseconds, SET as a list,
                  JSON parsed (numbers exact), binary as bytes
  compare_dumps() equal, or a description of the first differences
"""

import datetime
import decimal
import json
import random
import re
import struct
import threading
import time

import pymysql

# ---------------------------------------------------------------------------
# schema

LATIN1_CHARS = 'abcXYZ09 éèßÿÑ€œ“”\'"\\\t\n\r;-%_'
UTF8MB3_CHARS = 'abcÅΩ漢字üß\'"\\\t\n ;'
UTF8MB4_CHARS = 'abc Å漢字😀🎉𝄞ü\'"\\\t\n\r;\u0301'

# (name, kind, params); every non-key column is nullable
INT_LIMITS = {
    'tinyint': (-2**7, 2**7 - 1, 0, 2**8 - 1),
    'smallint': (-2**15, 2**15 - 1, 0, 2**16 - 1),
    'mediumint': (-2**23, 2**23 - 1, 0, 2**24 - 1),
    'int': (-2**31, 2**31 - 1, 0, 2**32 - 1),
    'bigint': (-2**63, 2**63 - 1, 0, 2**64 - 1),
}


def int_col(name, base, unsigned=False):
    lo, hi, ulo, uhi = INT_LIMITS[base]
    return (name, 'int', (ulo, uhi) if unsigned else (lo, hi))


TABLES = {
    't_int': {
        'ddl': '''CREATE TABLE t_int (
            id INT NOT NULL PRIMARY KEY,
            ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED,
            mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED,
            bi BIGINT, biu BIGINT UNSIGNED, b1 TINYINT(1), yr YEAR,
            bt1 BIT(1), bt13 BIT(13), bt64 BIT(64)) ENGINE=InnoDB''',
        'key': ['id'],
        'cols': [int_col('ti', 'tinyint'), int_col('tiu', 'tinyint', True),
                 int_col('si', 'smallint'), int_col('siu', 'smallint', True),
                 int_col('mi', 'mediumint'), int_col('miu', 'mediumint', True),
                 int_col('i', 'int'), int_col('iu', 'int', True),
                 int_col('bi', 'bigint'), int_col('biu', 'bigint', True),
                 ('b1', 'int', (-128, 127)), ('yr', 'year', ()),
                 ('bt1', 'bit', (1,)), ('bt13', 'bit', (13,)), ('bt64', 'bit', (64,))],
    },
    't_num': {
        'ddl': '''CREATE TABLE t_num (
            id BIGINT UNSIGNED NOT NULL PRIMARY KEY,
            d1 DECIMAL(10,2), d2 DECIMAL(65,30), d3 DECIMAL(5,0) UNSIGNED, d4 DECIMAL(38,10),
            f FLOAT, dbl DOUBLE, f2 FLOAT(30)) ENGINE=InnoDB''',
        'key': ['id'],
        'keygen': 'u64',
        'cols': [('d1', 'dec', (10, 2, False)), ('d2', 'dec', (65, 30, False)),
                 ('d3', 'dec', (5, 0, True)), ('d4', 'dec', (38, 10, False)),
                 ('f', 'float', ()), ('dbl', 'double', ()), ('f2', 'double', ())],
    },
    't_time': {
        'ddl': '''CREATE TABLE t_time (
            k1 INT NOT NULL, k2 VARCHAR(12) NOT NULL,
            dt DATE, tm TIME, tm3 TIME(3), tm6 TIME(6),
            dtt DATETIME, dtt3 DATETIME(3), dtt6 DATETIME(6),
            ts TIMESTAMP NULL DEFAULT NULL, ts3 TIMESTAMP(3) NULL DEFAULT NULL,
            ts6 TIMESTAMP(6) NULL DEFAULT NULL,
            PRIMARY KEY (k1, k2)) ENGINE=InnoDB''',
        'key': ['k1', 'k2'],
        'keygen': 'pair',
        'cols': [('dt', 'date', ()), ('tm', 'time', (0,)), ('tm3', 'time', (3,)),
                 ('tm6', 'time', (6,)), ('dtt', 'datetime', (0,)), ('dtt3', 'datetime', (3,)),
                 ('dtt6', 'datetime', (6,)), ('ts', 'timestamp', (0,)),
                 ('ts3', 'timestamp', (3,)), ('ts6', 'timestamp', (6,))],
    },
    't_str': {
        'ddl': '''CREATE TABLE t_str (
            id INT NOT NULL PRIMARY KEY,
            c_l1 CHAR(10) CHARACTER SET latin1, v_l1 VARCHAR(50) CHARACTER SET latin1,
            tx_l1 TEXT CHARACTER SET latin1,
            c_u8 CHAR(5) CHARACTER SET utf8mb4, v_u8 VARCHAR(300) CHARACTER SET utf8mb4,
            tx_u8 MEDIUMTEXT CHARACTER SET utf8mb4, v_u3 VARCHAR(20) CHARACTER SET utf8mb3,
            bn BINARY(8), vb VARBINARY(64), bl BLOB, lbl LONGBLOB,
            en ENUM('red','green','blue','ünï'), st SET('a','b','c','dé'),
            js JSON) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4''',
        'key': ['id'],
        'cols': [('c_l1', 'str', (LATIN1_CHARS, 10)), ('v_l1', 'str', (LATIN1_CHARS, 50)),
                 ('tx_l1', 'str', (LATIN1_CHARS, 3000)),
                 ('c_u8', 'str', (UTF8MB4_CHARS, 5)), ('v_u8', 'str', (UTF8MB4_CHARS, 300)),
                 ('tx_u8', 'str', (UTF8MB4_CHARS, 20000)), ('v_u3', 'str', (UTF8MB3_CHARS, 20)),
                 ('bn', 'bin', (8,)), ('vb', 'bin', (64,)), ('bl', 'bin', (20000,)),
                 ('lbl', 'bin', (150000,)),
                 ('en', 'enum', ('red', 'green', 'blue', 'ünï')),
                 ('st', 'set', ('a', 'b', 'c', 'dé')), ('js', 'json', ())],
    },
    't_mark': {
        'ddl': 'CREATE TABLE t_mark (id INT NOT NULL PRIMARY KEY, note VARCHAR(40)) ENGINE=InnoDB',
        'key': ['id'],
        'cols': [],
        'passive': True,         # only markers go there
    },
}

TABLE_NAMES = list(TABLES)
DATA_TABLES = [t for t in TABLE_NAMES if not TABLES[t].get('passive')]

# mid-stream DDL: (fraction of the run, table, statement, column spec change)
ALTERS = [
    (0.30, 't_int', "ALTER TABLE t_int ADD COLUMN added VARCHAR(30) DEFAULT 'dflt'",
     ('add', ('added', 'str', ('abcdef', 30)))),
    (0.45, 't_str', 'ALTER TABLE t_str MODIFY COLUMN v_u8 VARCHAR(500) CHARACTER SET utf8mb4',
     ('set', ('v_u8', 'str', (UTF8MB4_CHARS, 500)))),
    (0.60, 't_num', 'ALTER TABLE t_num DROP COLUMN d4', ('drop', 'd4')),
    (0.75, 't_int', 'ALTER TABLE t_int MODIFY COLUMN i BIGINT', ('set', int_col('i', 'bigint'))),
    (0.85, 't_time', 'ALTER TABLE t_time ADD COLUMN note TEXT', ('add', ('note', 'str', (UTF8MB4_CHARS, 40)))),
]


# ---------------------------------------------------------------------------
# values

def rand_str(rng, alphabet, maxlen):
    r = rng.random()
    if r < 0.05:
        n = 0
    elif r < 0.1:
        n = maxlen
    elif maxlen > 200 and r < 0.2:
        n = rng.randint(200, maxlen)
    else:
        n = rng.randint(1, min(maxlen, 30))
    s = ''.join(rng.choice(alphabet) for _ in range(n))
    if s and s[0] == '\u0301':      # a lone combining mark is fine, but keep it readable
        s = 'e' + s[1:]
    return s[:maxlen]


def rand_json(rng, depth=0):
    r = rng.random()
    if depth < 3 and r < 0.3:
        return {rand_str(rng, 'abk"\\ü😀 _', 6) + str(i): rand_json(rng, depth + 1)
                for i in range(rng.randint(0, 4))}
    if depth < 3 and r < 0.5:
        return [rand_json(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    r = rng.random()
    if r < 0.25:
        return rng.choice([0, -1, 1, 2**31, -2**63, 2**64 + 7, rng.randint(-10**6, 10**6)])
    if r < 0.45:
        return rng.choice([0.5, -1.25, 1e-05, 3.14159, 1e20, -2.5e-8, rng.uniform(-1e6, 1e6)])
    if r < 0.75:
        return rand_str(rng, 'ab "\\/\n\tü漢😀', 12)
    return rng.choice([True, False, None])


def rand_value(rng, kind, p):
    if kind == 'int':
        lo, hi = p
        return rng.choice([lo, hi, 0, max(lo, -1), 1, rng.randint(lo, hi), rng.randint(lo, hi)])
    if kind == 'year':
        return rng.choice([1901, 2155, 2024, 0, rng.randint(1901, 2155)])
    if kind == 'bit':
        n = p[0]
        return rng.choice([0, 2**n - 1, rng.randrange(2**n)])
    if kind == 'dec':
        prec, scale, unsigned = p
        ip = prec - scale
        r = rng.random()
        if r < 0.1:
            s = '9' * ip + ('.' + '9' * scale if scale else '')
        elif r < 0.2:
            s = '0'
        else:
            s = str(rng.randrange(10 ** rng.randint(0, ip))) if ip else '0'
            if scale:
                s += '.' + ''.join(rng.choice('0123456789') for _ in range(scale))
        if not unsigned and rng.random() < 0.4 and s != '0':
            s = '-' + s
        return s
    if kind == 'float':
        r = rng.random()
        if r < 0.15:
            return rng.choice([0.0, -0.0, 3.4028234663852886e38, -1.1754943508222875e-38, 0.1, 1.5])
        while True:
            f = struct.unpack('<f', struct.pack('<I', rng.getrandbits(32)))[0]
            if f == f and abs(f) != float('inf') and (f == 0 or 1e-37 < abs(f) < 3e38):
                return f
    if kind == 'double':
        r = rng.random()
        if r < 0.15:
            return rng.choice([0.0, 1.7976931348623157e308, -2.2250738585072014e-308, 0.1, 1 / 3])
        return rng.uniform(-1, 1) * 10.0 ** rng.randint(-300, 300)
    if kind == 'date':
        if rng.random() < 0.05:
            return '0000-00-00'
        return rng.choice([datetime.date(1000, 1, 1), datetime.date(9999, 12, 31),
                           datetime.date(1970, 1, 1) + datetime.timedelta(days=rng.randint(-300000, 2900000))]).isoformat()
    if kind == 'time':
        fsp = p[0]
        r = rng.random()
        if r < 0.1:
            h, m, s, us, neg = 838, 59, 59, 999999, rng.random() < 0.5
        else:
            h, m, s, us, neg = (rng.randint(0, 838), rng.randint(0, 59), rng.randint(0, 59),
                                rng.randrange(10**6), rng.random() < 0.3)
        us = us // 10 ** (6 - fsp) * 10 ** (6 - fsp) if fsp else 0
        return '%s%d:%02d:%02d%s' % ('-' if neg else '', h, m, s,
                                     ('.%06d' % us)[:fsp + 1] if fsp else '')
    if kind in ('datetime', 'timestamp'):
        fsp = p[0]
        if kind == 'datetime':
            if rng.random() < 0.05:
                return '0000-00-00 00:00:00'
            lo, hi = datetime.datetime(1000, 1, 1), datetime.datetime(9999, 12, 31, 23, 59, 59)
        else:
            lo, hi = datetime.datetime(1970, 1, 1, 0, 0, 1), datetime.datetime(2038, 1, 19, 3, 14, 7)
        r = rng.random()
        if r < 0.1:
            d = rng.choice([lo, hi])
        else:
            d = lo + datetime.timedelta(seconds=rng.randrange(int((hi - lo).total_seconds())))
        us = rng.randrange(10**6) // 10 ** (6 - fsp) * 10 ** (6 - fsp) if fsp else 0
        return d.strftime('%Y-%m-%d %H:%M:%S') + (('.%06d' % us)[:fsp + 1] if fsp else '')
    if kind == 'str':
        alphabet, maxlen = p
        return rand_str(rng, alphabet, maxlen)
    if kind == 'bin':
        maxlen = p[0]
        r = rng.random()
        n = 0 if r < 0.05 else maxlen if r < 0.1 else rng.randint(1, min(maxlen, 2000))
        if maxlen > 10000 and rng.random() < 0.05:
            n = rng.randint(10000, maxlen)
        b = rng.getrandbits(8 * n).to_bytes(n, 'little') if n else b''
        if n and rng.random() < 0.2:
            b = b[:-1] + b'\x00'    # trailing zero byte
        return b
    if kind == 'enum':
        return rng.choice(p)
    if kind == 'set':
        return ','.join(v for v in p if rng.random() < 0.4)
    if kind == 'json':
        doc = rand_json(rng)
        return json.dumps(doc, ensure_ascii=rng.random() < 0.3)
    raise ValueError(kind)


# ---------------------------------------------------------------------------
# the writer

class TypedWriter:
    """
    Seeded transactions over DATA_TABLES of database `db`.  run() makes
    ntxns transactions (at most rate per second), running ALTERS at their
    fraction of the run and hooks at theirs; setting halt ends it early.
    """

    def __init__(self, mdb, db, seed, alters=True, row_image=None):
        self.mdb = mdb
        self.db = db
        # binlog_row_image of the writer's sessions (MINIMAL, NOBLOB); with
        # one, half the inserts name only some columns (the others take
        # their defaults, which such images leave out)
        self.row_image = row_image
        self.rng = random.Random(seed)
        self.cols = {t: list(TABLES[t]['cols']) for t in TABLE_NAMES}
        self.keys = {t: [] for t in DATA_TABLES}
        self.keyidx = {t: {} for t in DATA_TABLES}
        self.next_key = {t: 1 for t in DATA_TABLES}
        self.alters = list(ALTERS) if alters else []
        self.txns = 0           # committed
        self.changes = 0
        self.ddl = 0
        self.errors = []        # (time, message) of failed transactions
        self.conn = None
        self.halt = threading.Event()
        # held by ALTERs; the test holds it during snapshot(): like
        # mysqldump --single-transaction, snapshot() must not race with DDL
        # (it reads table definitions outside its consistent read)
        self.ddl_lock = threading.Lock()

    # ---- schema

    def create(self, initial_rows=100):
        conn = self.mdb.connect()
        try:
            with conn.cursor() as cur:
                cur.execute('DROP DATABASE IF EXISTS `%s`' % self.db)
                cur.execute('CREATE DATABASE `%s` CHARACTER SET utf8mb4' % self.db)
                cur.execute('USE `%s`' % self.db)
                for t in TABLE_NAMES:
                    cur.execute(TABLES[t]['ddl'])
        finally:
            conn.close()
        for _ in range(initial_rows // 20):
            self.transaction(inserts_only=True)

    # ---- connection

    def connect(self):
        self.close()
        self.conn = self.mdb.connect(db=self.db, autocommit=False)
        with self.conn.cursor() as cur:
            cur.execute("SET time_zone = '+00:00'")
            if self.row_image:
                cur.execute("SET SESSION binlog_row_image = '%s'" % self.row_image)

    def close(self):
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:
                pass
            self.conn = None

    def reload_keys(self):
        """After an error: the keys that really exist."""
        conn = self.mdb.connect(db=self.db)
        try:
            with conn.cursor() as cur:
                for t in DATA_TABLES:
                    key = TABLES[t]['key']
                    cur.execute('SELECT %s FROM %s' % (', '.join(key), t))
                    ks = [r if len(key) > 1 else r[0] for r in cur.fetchall()]
                    ks = [tuple(k) if isinstance(k, (list, tuple)) else int(k) for k in ks]
                    self.keys[t] = ks
                    self.keyidx[t] = {k: i for i, k in enumerate(ks)}
                    # next_key only grows: keys of a failed transaction stay unused
                cur.execute("SELECT column_name, table_name FROM information_schema.columns "
                            "WHERE table_schema = %s", (self.db,))
                present = {(r[1], r[0]) for r in cur.fetchall()}
        finally:
            conn.close()
        # DDL that ran although its statement reported an error
        for t in DATA_TABLES:
            self.cols[t] = [c for c in self.cols[t] if (t, c[0]) in present]

    # ---- keys

    def _new_key(self, t):
        n = self.next_key[t]
        self.next_key[t] += 1
        g = TABLES[t].get('keygen')
        if g == 'u64':
            # spread over the unsigned range, the top included
            return (2**64 - 1 - n) if n % 3 == 0 else n * 7919
        if g == 'pair':
            return (n // 5, 'k%d-%s' % (n % 5, 'ü' if n % 2 else 'x'))
        return n

    def _key_where(self, t, key):
        cols = TABLES[t]['key']
        if len(cols) == 1:
            return '%s = %%s' % cols[0], (key,)
        return ' AND '.join('%s = %%s' % c for c in cols), tuple(key)

    def _add_key(self, t, k):
        self.keyidx[t][k] = len(self.keys[t])
        self.keys[t].append(k)

    def _del_key(self, t, k):
        i = self.keyidx[t].pop(k)
        last = self.keys[t].pop()
        if i < len(self.keys[t]):
            self.keys[t][i] = last
            self.keyidx[t][last] = i

    # ---- statements

    def _row(self, t):
        return [None if self.rng.random() < 0.1 else rand_value(self.rng, kind, p)
                for (_, kind, p) in self.cols[t]]

    def _statement(self, cur, t, inserts_only, added, deleted):
        """One statement on table t; added/deleted get (t, key) of its rows."""
        rng = self.rng
        r = rng.random()
        gone = {k for (tt, k) in deleted if tt == t}
        live = [k for k in self.keys[t] if k not in gone] if len(self.keys[t]) < 50 else None
        nlive = len(live) if live is not None else len(self.keys[t])
        keycols = TABLES[t]['key']
        if inserts_only or r < 0.45 or nlive < 5:
            n = rng.choice([1, 1, 1, 2, 3, 8])
            given = list(range(len(self.cols[t])))
            if self.row_image and rng.random() < 0.5:
                given = sorted(rng.sample(given, rng.randint(0, len(given))))
            names = keycols + [self.cols[t][i][0] for i in given]
            rows = []
            for _ in range(n):
                k = self._new_key(t)
                vals = self._row(t)
                rows.append((list(k) if isinstance(k, tuple) else [k]) + [vals[i] for i in given])
                added.append((t, k))
            cur.executemany('INSERT INTO %s (%s) VALUES (%s)' % (
                t, ', '.join(names), ', '.join(['%s'] * len(names))), rows)
            return n

        def pick():
            while True:
                k = rng.choice(live if live is not None else self.keys[t])
                if k not in gone:
                    return k
        if r < 0.8:
            k = pick()
            if not self.cols[t]:
                return 0
            cols = rng.sample(self.cols[t], rng.randint(1, min(4, len(self.cols[t]))))
            vals = [None if rng.random() < 0.1 else rand_value(rng, kind, p) for (_, kind, p) in cols]
            w, wargs = self._key_where(t, k)
            cur.execute('UPDATE %s SET %s WHERE %s' % (t, ', '.join('%s = %%s' % c[0] for c in cols), w),
                        tuple(vals) + wargs)
            return 1
        if r < 0.9:
            # a primary key update: the row moves to a new key
            k = pick()
            nk = self._new_key(t)
            w, wargs = self._key_where(t, k)
            newvals = list(nk) if isinstance(nk, tuple) else [nk]
            cur.execute('UPDATE %s SET %s WHERE %s' % (t, ', '.join('%s = %%s' % c for c in keycols), w),
                        tuple(newvals) + wargs)
            deleted.append((t, k))
            added.append((t, nk))
            return 1
        ks = {pick() for _ in range(rng.randint(1, 3))}
        for k in ks:
            w, wargs = self._key_where(t, k)
            cur.execute('DELETE FROM %s WHERE %s' % (t, w), wargs)
            deleted.append((t, k))
        return len(ks)

    def transaction(self, inserts_only=False, tables=None):
        """One transaction of 1-6 statements over random tables."""
        if self.conn is None:
            self.connect()
        rng = self.rng
        added, deleted = [], []
        n = 0
        cur = self.conn.cursor()
        try:
            for _ in range(rng.choice([1, 1, 2, 2, 3, 4, 6])):
                t = rng.choice(tables or DATA_TABLES)
                n += self._statement(cur, t, inserts_only, added, deleted)
            self.conn.commit()
        except Exception:
            try:
                self.conn.rollback()
            except Exception:
                pass
            raise
        finally:
            cur.close()
        # keys are never reused, so added-then-deleted keys simply go away
        gone = set(deleted)
        for t, k in added:
            if (t, k) not in gone:
                self._add_key(t, k)
        for t, k in gone:
            if k in self.keyidx[t]:
                self._del_key(t, k)
        self.txns += 1
        self.changes += n
        return n

    def run(self, ntxns, rate=None, hooks=()):
        """
        ntxns transactions, ALTERS at their fraction; survives errors.
        hooks: (fraction, fn) -- fn(writer) runs in this thread between
        transactions once that fraction of the run is done.
        """
        t0 = time.monotonic()
        start = self.txns
        alters = sorted(self.alters, key=lambda a: a[0])
        hooks = sorted(hooks, key=lambda h: h[0])
        while self.txns - start < ntxns and not self.halt.is_set():
            done = self.txns - start
            if hooks and done >= hooks[0][0] * ntxns:
                hooks.pop(0)[1](self)
                continue
            try:
                if alters and done >= alters[0][0] * ntxns and self.ddl_lock.acquire(blocking=False):
                    try:
                        a = alters.pop(0)    # not retried: DDL may have run anyway
                        self.alter(a)
                    finally:
                        self.ddl_lock.release()
                    continue
                self.transaction()
            except (pymysql.Error, OSError) as e:
                self.errors.append((time.monotonic(), str(e)))
                self.close()
                time.sleep(0.2)
                try:
                    self.reload_keys()
                except (pymysql.Error, OSError):
                    time.sleep(0.5)
                continue
            if rate:
                ahead = (self.txns - start) / rate - (time.monotonic() - t0)
                if ahead > 0:
                    time.sleep(ahead)
        self.close()

    def alter(self, a):
        _, t, sql, change = a
        if self.conn is None:
            self.connect()
        with self.conn.cursor() as cur:
            cur.execute(sql)
        self.conn.commit()
        self.ddl += 1
        self.alters = [x for x in self.alters if x is not a]
        what, spec = change
        if what == 'add':
            self.cols[t].append(spec)
        elif what == 'drop':
            self.cols[t] = [c for c in self.cols[t] if c[0] != spec]
        else:
            self.cols[t] = [spec if c[0] == spec[0] else c for c in self.cols[t]]

    def mark(self, n):
        """A marker row: once PostgreSQL has it, it has everything before."""
        conn = self.mdb.connect(db=self.db)
        try:
            with conn.cursor() as cur:
                cur.execute('INSERT INTO t_mark (id, note) VALUES (%s, %s)', (n, 'marker %d' % n))
                cur.execute('SELECT @@last_gtid')
                return cur.fetchone()[0]
        finally:
            conn.close()


# ---------------------------------------------------------------------------
# the canonical dump

def mariadb_columns(mconn, db, table):
    """[(name, data_type, column_type)] in order, and the key columns."""
    with mconn.cursor() as cur:
        cur.execute('SELECT column_name, data_type, column_type FROM information_schema.columns '
                    'WHERE table_schema = %s AND table_name = %s ORDER BY ordinal_position',
                    (db, table))
        cols = [(r[0], r[1].lower(), r[2].lower()) for r in cur.fetchall()]
        cur.execute("SELECT column_name FROM information_schema.statistics WHERE table_schema = %s "
                    "AND table_name = %s AND index_name = 'PRIMARY' ORDER BY seq_in_index",
                    (db, table))
        key = [r[0] for r in cur.fetchall()]
        # MariaDB's JSON is LONGTEXT with a json_valid() check
        cur.execute('SELECT check_clause FROM information_schema.check_constraints '
                    'WHERE constraint_schema = %s AND table_name = %s', (db, table))
        json_cols = set()
        for (clause,) in cur.fetchall():
            json_cols.update(re.findall(r'json_valid\(`((?:[^`]|``)+)`\)', clause or ''))
    cols = [(n, 'json' if n in json_cols else d, ct) for n, d, ct in cols]
    return cols, key


def _mdb_expr(name, dtype):
    q = '`%s`' % name.replace('`', '``')
    if dtype == 'float':
        return 'CAST(%s AS DOUBLE)' % q
    if dtype == 'bit':
        return 'CAST(%s AS UNSIGNED)' % q
    if dtype in ('date', 'datetime', 'timestamp', 'time', 'decimal'):
        return 'CAST(%s AS CHAR)' % q
    return q


def _pg_expr(name, dtype):
    q = '"%s"' % name.replace('"', '""')
    if dtype in ('float', 'double'):
        return '%s::float8' % q
    if dtype in ('bit', 'date', 'datetime', 'timestamp', 'decimal', 'json', 'bigint'):
        return '%s::text' % q
    if dtype == 'time':
        return '(extract(epoch FROM %s) * 1000000)::numeric(30,0)::text' % q
    return q


_TS_RE = re.compile(r'^(\d{4,})-(\d\d)-(\d\d)(?:[ T](\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?)?(?:\+00(?::00)?)?$')
_TIME_RE = re.compile(r'^(-)?(\d+):(\d\d):(\d\d)(?:\.(\d{1,6}))?$')


def _norm_temporal(v):
    if v is None:
        return None
    m = _TS_RE.match(v)
    if not m:
        return ('unparsed', v)
    y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
    if y == 0 and mo == 0 and d == 0:
        return None          # zero date: NULL (zero_date 'null', the default)
    if m.group(4) is None:
        return (y, mo, d)
    frac = int((m.group(7) or '0').ljust(6, '0'))
    return (y, mo, d, int(m.group(4)), int(m.group(5)), int(m.group(6)), frac)


def _norm_time_mariadb(v):
    if v is None:
        return None
    m = _TIME_RE.match(v)
    if not m:
        return ('unparsed', v)
    us = ((int(m.group(2)) * 60 + int(m.group(3))) * 60 + int(m.group(4))) * 10**6 + \
        int((m.group(5) or '0').ljust(6, '0'))
    return -us if m.group(1) else us


def _float32(v):
    return None if v is None else struct.unpack('<f', struct.pack('<f', float(v)))[0]


def normalise(v, dtype, side):
    """A value of a column of MariaDB type dtype, fetched from side."""
    if v is None:
        return None
    if dtype in ('tinyint', 'smallint', 'mediumint', 'int', 'bigint', 'year'):
        return int(v)
    if dtype == 'bit':
        return int(v) if side == 'mariadb' else int(v, 2) if v else 0
    if dtype == 'decimal':
        return decimal.Decimal(v)
    if dtype == 'float':
        return _float32(v)
    if dtype == 'double':
        return float(v)
    if dtype in ('date', 'datetime', 'timestamp'):
        return _norm_temporal(v)
    if dtype == 'time':
        return _norm_time_mariadb(v) if side == 'mariadb' else int(v)
    if dtype in ('binary', 'varbinary', 'tinyblob', 'blob', 'mediumblob', 'longblob'):
        return bytes(v)
    if dtype == 'set':
        if side == 'mariadb':
            return v.split(',') if v else []
        return list(v)
    if dtype == 'json':
        return json.loads(v, parse_float=decimal.Decimal)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v)
    return v


def dump_mariadb(mdb, db, tables):
    """{table: (column names, key names, {key: row})} of a MariaDB database."""
    conn = mdb.connect(db=db)
    out = {}
    try:
        with conn.cursor() as cur:
            cur.execute("SET time_zone = '+00:00'")
        for t in tables:
            cols, key = mariadb_columns(conn, db, t)
            names = [c[0] for c in cols]
            types = [c[1] for c in cols]
            kidx = [names.index(k) for k in key]
            with conn.cursor(pymysql.cursors.SSCursor) as cur:
                cur.execute('SELECT %s FROM `%s`' % (', '.join(_mdb_expr(n, d) for n, d in zip(names, types)), t))
                rows = {}
                for r in cur:
                    row = tuple(normalise(v, d, 'mariadb') for v, d in zip(r, types))
                    rows[tuple(row[i] for i in kidx)] = row
            out[t] = (names, key, rows, types)
    finally:
        conn.close()
    return out


def dump_postgres(pgconn, schema, tables, mdb_dump):
    """The same from PostgreSQL, normalised by the MariaDB column types."""
    out = {}
    with pgconn.cursor() as cur:
        cur.execute("SET timezone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET extra_float_digits = 3")
        for t in tables:
            mnames, key, _, mtypes = mdb_dump[t]
            cur.execute('SELECT a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid '
                        'JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND '
                        'c.relname = %s AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum',
                        (schema, t))
            names = [r[0] for r in cur.fetchall()]
            if not names:
                out[t] = (names, key, None, None)
                continue
            dtype = dict(zip(mnames, mtypes))
            types = [dtype.get(n, 'text') for n in names]
            cur.execute('SELECT %s FROM "%s"."%s"' % (', '.join(_pg_expr(n, d) for n, d in zip(names, types)),
                                                      schema.replace('"', '""'), t.replace('"', '""')))
            kidx = [names.index(k) if k in names else None for k in key]
            rows = {}
            for r in cur.fetchall():
                row = tuple(normalise(v, d, 'postgres') for v, d in zip(r, types))
                rows[tuple(row[i] if i is not None else None for i in kidx)] = row
            out[t] = (names, key, rows, types)
    return out


def _short(v, n=120):
    s = repr(v)
    return s if len(s) <= n else s[:n] + '...(%d chars)' % len(s)


def compare_dumps(want, got, limit=3):
    """None if equal, else a description of the first differences."""
    problems = []
    total = 0
    for t in want:
        wnames, key, wrows, _ = want[t]
        gnames, _, grows, _ = got.get(t, ([], key, None, None))
        if grows is None:
            problems.append('%s: no such table in PostgreSQL' % t)
            continue
        if wnames != gnames:
            problems.append('%s: columns differ: MariaDB %s, PostgreSQL %s' % (t, wnames, gnames))
            continue
        missing = sorted(set(wrows) - set(grows), key=repr)
        extra = sorted(set(grows) - set(wrows), key=repr)
        changed = [k for k in sorted(set(wrows) & set(grows), key=repr) if wrows[k] != grows[k]]
        total += len(wrows)
        if missing or extra or changed:
            desc = ['%s: %d rows in MariaDB, %d in PostgreSQL' % (t, len(wrows), len(grows))]
            if missing:
                desc.append('%d missing (first key %s)' % (len(missing), _short(missing[0])))
            if extra:
                desc.append('%d extra (first key %s)' % (len(extra), _short(extra[0])))
            if changed:
                k = changed[0]
                cols = [(n, a, b) for n, a, b in zip(wnames, wrows[k], grows[k]) if a != b]
                desc.append('%d differ, first key %s: %s' % (
                    len(changed), _short(k), '; '.join('%s MariaDB %s PostgreSQL %s' % (
                        n, _short(a), _short(b)) for n, a, b in cols[:limit])))
            problems.append(', '.join(desc))
    if problems:
        return ' | '.join(problems[:limit * 2])
    return None


def count_rows(dump):
    return sum(len(d[2] or {}) for d in dump.values())


def self_check(want, rng):
    """compare_dumps() must notice a changed value, a missing and an extra row."""
    tables = [t for t in want if want[t][2]]
    if not tables:
        return 'nothing to compare: all tables are empty'
    t = rng.choice(tables)
    names, key, rows, types = want[t]
    k = rng.choice(sorted(rows, key=repr))
    row = list(rows[k])
    nonkey = [i for i, n in enumerate(names) if n not in key] or [0]
    i = rng.choice(nonkey)
    row[i] = ('mutated', row[i])
    mutants = {
        'a changed value': {**rows, k: tuple(row)},
        'a missing row': {kk: v for kk, v in rows.items() if kk != k},
        'an extra row': {**rows, ('extra',): rows[k]},
    }
    for what, m in mutants.items():
        got = dict(want)
        got[t] = (names, key, m, types)
        if compare_dumps(want, got) is None:
            return 'the comparison does not notice %s' % what
    return None
