#!/usr/bin/python3
"""bench/typed/typed.py -- typed consumption side by side with get() and
get_json() (issue 12's benchmark; not a test, no timed assertion).

A MariaDB table of 5 columns (int key, int, varchar, decimal, datetime(6))
gets ROWS row inserts in transactions of 1,000; with every change buffered
in the ring of a started source, each tool reads all of them, best and median of RUNS
rounds in rotated order, in the same run:

  typed-peek   SELECT count(*) FROM the imported foreign table (typed rows)
  get-table    get_table(src, NULL::ft.t, 10000000) then rollback()
  get-json     get_json(src, 10000000) then rollback()
  get          get(src, 10000000) then rollback()   (jsonb images)
  jsonb-peek   SELECT count(*) FROM a jsonb foreign table over the source

Prints rows/s (best and median) of the table's row changes (get() and get_json() also return
the BEGIN and COMMIT changes) and each tool's ratio to get-json.  Needs the
servers of test/run.sh (PGHOST/PGPORT, MariaDB main); run it as
  BLF_SUITES_DIR=<dir with a suite calling this> scripts/sandbox.sh NAME bash test/run.sh
or against running servers.  ROWS, RUNS from the environment.
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', '..', 'test', 'streaming'))

import psycopg2                                      # noqa: E402

import common                                        # noqa: E402
from common import mdb, mx, q, q1, start_source, drop_source, wait_for  # noqa: E402

ROWS = int(os.environ.get('ROWS', '100000'))
RUNS = int(os.environ.get('RUNS', '9'))
DB = 'blf_tbench'


def pg(db):
    c = psycopg2.connect(host=common.PGHOST, port=common.PGPORT, user=common.PGUSER, dbname=db)
    c.autocommit = True
    return c


def main():
    c = pg('postgres')
    q(c, 'DROP DATABASE IF EXISTS %s WITH (FORCE)' % DB)
    q(c, 'CREATE DATABASE %s' % DB)
    conn = pg(DB)
    q(conn, 'CREATE EXTENSION binlog_fdw')
    m = mdb()
    mx(m, 'DROP DATABASE IF EXISTS %s' % DB)
    mx(m, 'CREATE DATABASE %s' % DB)
    mx(m, 'USE %s' % DB)
    mx(m, 'CREATE TABLE %s.t (id INT PRIMARY KEY, a INT, b VARCHAR(32), c DECIMAL(10,2), d DATETIME(6))' % DB)
    start_source(conn, 'bsrc', 6699, include=r'^%s\.' % DB)
    q(conn, 'CREATE SCHEMA ft')
    q(conn, 'IMPORT FOREIGN SCHEMA %s FROM SERVER bsrc INTO ft' % DB)
    q(conn, 'CREATE FOREIGN TABLE jsonb_changes (seq bigint, op text, before jsonb, after jsonb) SERVER bsrc')
    for lo in range(0, ROWS, 1000):
        mx(m, "INSERT INTO %s.t SELECT seq, seq * 7, concat('value ', seq), seq / 100, "
              "'2026-01-01 10:15:00.123456' + INTERVAL seq SECOND FROM seq_%d_to_%d" % (DB, lo + 1, min(lo + 1000, ROWS)))
    wait_for('all rows buffered', lambda: q1(conn, 'SELECT count(*) FROM ft.t') == ROWS, timeout=600, interval=1)
    tools = {
        'typed-peek': 'SELECT count(*) FROM ft.t',
        'get-table': "SELECT count(*) FROM binlog_fdw.get_table('bsrc', NULL::ft.t, 10000000)",
        'get-json': "SELECT count(*) FROM binlog_fdw.get_json('bsrc', 10000000)",
        'get': "SELECT count(*) FROM binlog_fdw.get('bsrc', 10000000)",
        'jsonb-peek': "SELECT count(*) FROM jsonb_changes WHERE op = 'insert'",
    }
    best = {}
    times = {}
    names = list(tools)
    for r in range(RUNS):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            t0 = time.monotonic()
            n = q1(conn, tools[name])
            dt = time.monotonic() - t0
            if name in ('get-table', 'get-json', 'get'):
                q(conn, "SELECT binlog_fdw.rollback('bsrc')")
            best[name] = min(best.get(name, dt), dt)
            times.setdefault(name, []).append(dt)
            print('# round %d %-10s %8d rows %.3fs' % (r + 1, name, n, dt), flush=True)
    print('# %d row changes (inserts), best of %d, load %s' % (ROWS, RUNS, os.getloadavg()))
    med = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
    for name in names:
        print('# %-10s best %10.0f rows/s %.2fx get-json   median %10.0f rows/s %.2fx get-json' % (
            name, ROWS / best[name], best['get-json'] / best[name], ROWS / med[name], med['get-json'] / med[name]))
    drop_source(conn, 'bsrc')
    conn.close()
    q(c, 'DROP DATABASE IF EXISTS %s WITH (FORCE)' % DB)
    mx(m, 'DROP DATABASE IF EXISTS %s' % DB)
    print('ok - bench/typed')
    return 0


if __name__ == '__main__':
    sys.exit(main())
