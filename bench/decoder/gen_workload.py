#!/usr/bin/python3
"""bench/decoder/gen_workload.py -- SQL for the standard decoder workload.

Writes to stdout the SQL that, run through the mariadb client against a
server with binlog_format=ROW (autocommit on), produces the standard
binlog of the decoder benchmark:

  * sbtest1(id BIGINT PK, k INT, c VARCHAR(120), pad CHAR(60),
            amount DECIMAL(12,2), created DATETIME(6), doc JSON)
  * ROWS rows inserted by multi-row INSERTs of TXN rows (one statement =
    one autocommit transaction = TXN row changes);
  * UPDATES rows updated (k, c, amount, doc), TXN per statement
    (UPDATE ... WHERE id BETWEEN), ids 1..UPDATES;
  * DELETES rows deleted, TXN per statement (DELETE ... WHERE id BETWEEN),
    ids UPDATES+1 .. UPDATES+DELETES.

The data are pseudo-random but deterministic (fixed seed): the same
version and arguments give the same rows.  Bump GEN_VERSION whenever the
output changes, so that run.sh rebuilds its cached binlog.

With --table wide the same shape of workload goes to a 40-column
mixed-type table instead (issue 14: DOUBLE, FLOAT, DECIMAL, DATETIME(6),
DATE, TIME(6), JSON, TEXT, BLOB, VARCHAR, CHAR, integers, ENUM, YEAR;
WIDE_SCHEMA below); its UPDATEs change a DOUBLE, a DECIMAL, a DATETIME(6),
a JSON, a TEXT and a BLOB column of every row.

usage: gen_workload.py [--table standard|wide] [--rows N] [--updates N]
                       [--deletes N] [--txn N]
       gen_workload.py --version
"""
import argparse
import datetime
import random
import sys

GEN_VERSION = "1"

SCHEMA = """\
SET SESSION sql_log_bin = 0;
DROP DATABASE IF EXISTS bench;
SET SESSION sql_log_bin = 1;
CREATE DATABASE bench;
USE bench;
CREATE TABLE sbtest1 (
  id BIGINT NOT NULL PRIMARY KEY,
  k INT NOT NULL,
  c VARCHAR(120),
  pad CHAR(60),
  amount DECIMAL(12,2),
  created DATETIME(6),
  doc JSON
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
"""

WIDE_SCHEMA = """\
SET SESSION sql_log_bin = 0;
DROP DATABASE IF EXISTS bench;
SET SESSION sql_log_bin = 1;
CREATE DATABASE bench;
USE bench;
CREATE TABLE wide40 (
  id BIGINT NOT NULL PRIMARY KEY, k INT NOT NULL,
  d1 DOUBLE, d2 DOUBLE, d3 DOUBLE, d4 DOUBLE, d5 DOUBLE, d6 DOUBLE, d7 DOUBLE,
  f1 FLOAT,
  n1 DECIMAL(12,2), n2 DECIMAL(18,6), n3 DECIMAL(30,10), n4 DECIMAL(8,0), n5 DECIMAL(40,20),
  t1 DATETIME(6), t2 DATETIME(6), t3 DATETIME(6), t4 DATETIME(6),
  dt DATE, tm TIME(6),
  j1 JSON, j2 JSON, j3 JSON,
  x1 TEXT, x2 TEXT, x3 TEXT,
  b1 BLOB, b2 BLOB,
  v1 VARCHAR(64), v2 VARCHAR(64), v3 VARCHAR(64), v4 VARCHAR(64),
  c1 CHAR(16),
  i1 TINYINT, i2 SMALLINT, i3 MEDIUMINT, i4 BIGINT UNSIGNED,
  e1 ENUM('red','green','blue'), yr YEAR
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
"""
WIDE_COLS = ("id,k,d1,d2,d3,d4,d5,d6,d7,f1,n1,n2,n3,n4,n5,t1,t2,t3,t4,dt,tm,j1,j2,j3,"
             "x1,x2,x3,b1,b2,v1,v2,v3,v4,c1,i1,i2,i3,i4,e1,yr")

REGIONS = ["eu-west", "eu-central", "us-east", "us-west", "ap-south",
           "ap-northeast", "sa-east", "af-south"]
NAMES = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi",
         "ivan", "judy", "mallory", "niaj", "olivia", "peggy", "rupert",
         "sybil", "trent", "victor", "walter", "\u00e9lodie", "\u5f20\u4f1f"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--table", choices=["standard", "wide"], default="standard")
    ap.add_argument("--rows", type=int, default=1000000)
    ap.add_argument("--updates", type=int, default=500000)
    ap.add_argument("--deletes", type=int, default=250000)
    ap.add_argument("--txn", type=int, default=100, help="rows per transaction")
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--version", action="store_true",
                    help="print the generator version and exit")
    a = ap.parse_args()
    if a.version:
        print(GEN_VERSION)
        return
    if a.updates + a.deletes > a.rows:
        ap.error("updates + deletes must not exceed rows")
    for n in (a.rows, a.updates, a.deletes):
        if n % a.txn:
            ap.error("row counts must be multiples of --txn")

    rnd = random.Random(a.seed)
    out = sys.stdout
    # large writes: the client parses faster than we format
    w = out.write
    if a.table == "wide":
        wide(a, rnd, w)
        return
    w(SCHEMA)

    # sysbench-style strings: groups of 11 digits joined by '-'
    groups = ["%011d" % rnd.randrange(10 ** 11) for _ in range(4099)]
    choices = rnd.choices
    base = datetime.datetime(2024, 1, 1)
    td = datetime.timedelta

    # ---- inserts: one multi-row INSERT per transaction ----
    for first in range(1, a.rows + 1, a.txn):
        vals = []
        for i in range(first, first + a.txn):
            c = "-".join(choices(groups, k=10))            # 119 chars
            pad = "-".join(choices(groups, k=5))           # 59 chars
            k = rnd.randrange(1, a.rows + 1)
            amount = "%d.%02d" % (rnd.randrange(0, 100000), rnd.randrange(100))
            created = (base + td(seconds=i * 7, microseconds=rnd.randrange(1000000))
                       ).strftime("%Y-%m-%d %H:%M:%S.%f")
            name = NAMES[i % len(NAMES)]
            doc = ('{"id": %d, "user": "%s%d", "score": %d.%d, "active": %s, '
                   '"tags": ["t%d", "t%d"], "attrs": {"level": %d, "region": "%s"}}'
                   % (i, name, i % 1000, rnd.randrange(1000), rnd.randrange(10),
                      "true" if i & 1 else "false", rnd.randrange(50),
                      rnd.randrange(50), rnd.randrange(10),
                      REGIONS[rnd.randrange(len(REGIONS))]))
            vals.append("(%d,%d,'%s','%s',%s,'%s','%s')"
                        % (i, k, c, pad, amount, created, doc))
        w("INSERT INTO sbtest1 (id,k,c,pad,amount,created,doc) VALUES\n")
        w(",\n".join(vals))
        w(";\n")

    # ---- updates of k, c, amount, doc: 1 statement per transaction ----
    for first in range(1, a.updates + 1, a.txn):
        w("UPDATE sbtest1 SET k = k + 1, c = REVERSE(c), amount = amount + 1.25, "
          "doc = JSON_SET(doc, '$.attrs.level', MOD(k, 10), '$.rev', 1) "
          "WHERE id BETWEEN %d AND %d;\n" % (first, first + a.txn - 1))

    # ---- deletes: 1 statement per transaction ----
    start = a.updates + 1
    for first in range(start, start + a.deletes, a.txn):
        w("DELETE FROM sbtest1 WHERE id BETWEEN %d AND %d;\n"
          % (first, first + a.txn - 1))


def wide(a, rnd, w):
    """The workload on wide40 (WIDE_SCHEMA)."""
    w(WIDE_SCHEMA)
    groups = ["%011d" % rnd.randrange(10 ** 11) for _ in range(4099)]
    choices = rnd.choices
    base = datetime.datetime(2024, 1, 1)
    td = datetime.timedelta

    def dbl():
        # shortest round-trip forms of every length and magnitude, a few
        # extremes (subnormal, near the limits), integers as doubles
        r = rnd.random()
        if r < 0.02:
            return rnd.choice(["5e-324", "2.2250738585072014e-308", "1.7976931348623157e308",
                               "-0.0", "0.1", "1e21", "123456789012345680"])
        if r < 0.2:
            return "%d" % rnd.randrange(-10 ** 6, 10 ** 6)
        return repr(rnd.uniform(-1, 1) * 10 ** rnd.randrange(-12, 15))

    def ts(i, j):
        return (base + td(seconds=i * 7 + j * 86400, microseconds=rnd.randrange(1000000))
                ).strftime("%Y-%m-%d %H:%M:%S.%f")

    def text(k):
        return "-".join(choices(groups, k=k))

    for first in range(1, a.rows + 1, a.txn):
        vals = []
        for i in range(first, first + a.txn):
            name = NAMES[i % len(NAMES)]
            v = [str(i), str(rnd.randrange(1, a.rows + 1))]
            v += [dbl() for _ in range(7)]
            v.append("%.4g" % rnd.uniform(-1000, 1000))
            v += ["%d.%02d" % (rnd.randrange(0, 10 ** 10), rnd.randrange(100)),
                  "%d.%06d" % (rnd.randrange(-10 ** 12, 10 ** 12), rnd.randrange(10 ** 6)),
                  "%d.%010d" % (rnd.randrange(10 ** 20), rnd.randrange(10 ** 10)),
                  str(rnd.randrange(-10 ** 8 + 1, 10 ** 8)),
                  "%d.%020d" % (rnd.randrange(10 ** 20), rnd.randrange(10 ** 20))]
            v += ["'%s'" % ts(i, j) for j in range(4)]
            v.append("'%s'" % (base + td(days=i % 20000)).strftime("%Y-%m-%d"))
            v.append("'%02d:%02d:%02d.%06d'" % (rnd.randrange(24), rnd.randrange(60), rnd.randrange(60),
                                                  rnd.randrange(10 ** 6)))
            v.append("'{\"id\": %d, \"user\": \"%s\", \"score\": %s, \"tags\": [\"t%d\", \"t%d\"]}'"
                     % (i, name, repr(rnd.uniform(0, 100)), rnd.randrange(50), rnd.randrange(50)))
            v.append("'{\"a\": {\"b\": [1, 2.5, null, true], \"c\": \"%s\"}, \"n\": %d}'"
                     % (REGIONS[rnd.randrange(len(REGIONS))], rnd.randrange(10 ** 9)))
            v.append("'[%s]'" % ", ".join(str(rnd.randrange(1000)) for _ in range(8)))
            v += ["'%s %s'" % (name, text(rnd.randrange(4, 16))), "'%s'" % text(3), "'%s'" % text(1)]
            v += ["0x%s" % rnd.randbytes(rnd.randrange(16, 80)).hex(), "0x%s" % rnd.randbytes(24).hex()]
            v += ["'%s'" % text(5)[:64], "'%s%d'" % (name, i), "'%s'" % REGIONS[i % len(REGIONS)], "''"]
            v.append("'%s'" % groups[i % len(groups)][:16])
            v += [str(rnd.randrange(-128, 128)), str(rnd.randrange(-32768, 32768)),
                  str(rnd.randrange(-8388608, 8388608)), str(rnd.randrange(2 ** 64))]
            v.append("'%s'" % ("red", "green", "blue")[i % 3])
            v.append(str(1901 + i % 255))
            vals.append("(" + ",".join(v) + ")")
        w("INSERT INTO wide40 (%s) VALUES\n" % WIDE_COLS)
        w(",\n".join(vals))
        w(";\n")
    for first in range(1, a.updates + 1, a.txn):
        w("UPDATE wide40 SET k = k + 1, d1 = -d1, n2 = n2 + 1.25, "
          "t1 = t1 + INTERVAL 1 SECOND, j1 = JSON_SET(j1, '$.rev', 1), x1 = REVERSE(x1), "
          "b2 = REVERSE(b2) WHERE id BETWEEN %d AND %d;\n" % (first, first + a.txn - 1))
    start = a.updates + 1
    for first in range(start, start + a.deletes, a.txn):
        w("DELETE FROM wide40 WHERE id BETWEEN %d AND %d;\n" % (first, first + a.txn - 1))


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:
        sys.exit(1)
