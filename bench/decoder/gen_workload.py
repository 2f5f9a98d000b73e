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

usage: gen_workload.py [--rows N] [--updates N] [--deletes N] [--txn N]
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

REGIONS = ["eu-west", "eu-central", "us-east", "us-west", "ap-south",
           "ap-northeast", "sa-east", "af-south"]
NAMES = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi",
         "ivan", "judy", "mallory", "niaj", "olivia", "peggy", "rupert",
         "sybil", "trent", "victor", "walter", "\u00e9lodie", "\u5f20\u4f1f"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
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


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:
        sys.exit(1)
