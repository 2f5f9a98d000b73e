#!/usr/bin/python3
"""bench/typed/typed.py -- typed consumption side by side with get() and
get_json() (issue 12's benchmark; not a test).  Run by bench/typed/run.sh,
which starts the instances: the standard workload's binlog on MariaDB bsrc,
a PostgreSQL cluster btyped whose ring holds all of it.

The source tsrc (start earliest, include bench.sbtest1) buffers every change
of the workload; bench.sbtest1 is imported as the typed foreign table
ft.sbtest1.  With every change in the ring, each tool reads all of them,
RUNS rounds in rotated order, in the same run:

  typed-peek   SELECT count(t) FROM ft.sbtest1 t (the whole row: every
               column converted to its type; an update is two rows)
  typed-peek-nodoc  every column but the JSON doc (no jsonb parsing)
  typed-peek-k SELECT count(k) FROM ft.sbtest1 (only k converted: a scan
               converts the columns the query reads)
  get-table    SELECT count(*) FROM get_table('tsrc', NULL::ft.sbtest1, N),
               then rollback()
  get-json     SELECT count(*) FROM get_json('tsrc', N), then rollback()
  get          SELECT count(*) FROM get('tsrc', N), then rollback() (jsonb)

Each is one statement in one backend that decodes every change and makes
its values (typed Datums, json text or jsonb) into a tuplestore or a
count; the figure is the workload's row changes (inserts + updates +
deletes, not the BEGIN/COMMIT rows get() also returns) per second of wall
time, with the backend's CPU seconds.  Writes REPORT-DATE.{json,md} into
--results.
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))

import benchlib as B                                 # noqa: E402

TOOLS = ['typed-peek', 'typed-peek-nodoc', 'typed-peek-k', 'get-table', 'get-json', 'get']


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--pg-port', type=int, required=True)
    ap.add_argument('--src-port', type=int, required=True)
    ap.add_argument('--runs', type=int, default=5)
    ap.add_argument('--tools', default=','.join(TOOLS))
    ap.add_argument('--inserts', type=int, required=True)
    ap.add_argument('--updates', type=int, required=True)
    ap.add_argument('--deletes', type=int, required=True)
    ap.add_argument('--results', required=True)
    ap.add_argument('--name', default='typed')
    ap.add_argument('--workload', default='')
    a = ap.parse_args()
    tools = [t for t in a.tools.split(',') if t]
    changes = a.inserts + a.updates + a.deletes
    typed_rows = a.inserts + 2 * a.updates + a.deletes
    conn = B.pg(a.pg_port, 'bench', app='bench-typed')
    B.q(conn, "CREATE SERVER tsrc FOREIGN DATA WRAPPER binlog_fdw OPTIONS (host '127.0.0.1', port '%d', "
              "server_id '4521', start 'earliest', include '^bench\\.sbtest1$')" % a.src_port)
    B.q(conn, "CREATE USER MAPPING FOR CURRENT_USER SERVER tsrc OPTIONS (user 'repl', password 'repl')")
    B.q(conn, 'CREATE SCHEMA ft')
    B.q(conn, 'IMPORT FOREIGN SCHEMA bench LIMIT TO (sbtest1) FROM SERVER tsrc INTO ft')
    t0 = time.monotonic()
    B.start_source(conn, 'tsrc')
    while True:
        n = B.q1(conn, 'SELECT count(*) FROM ft.sbtest1')
        if n >= typed_rows:
            break
        if time.monotonic() - t0 > 900:
            raise SystemExit('typed.py: %d of %d typed rows buffered after 900 s (ring too small? status: %s)' % (
                n, typed_rows, B.q(conn, 'SELECT state, ring_bytes_used, ring_bytes_total, last_error FROM binlog_fdw.status')))
        time.sleep(0.5)
    B.log('%d changes (%d typed rows) buffered in %.1f s' % (changes, typed_rows, time.monotonic() - t0))
    check = {
        'typed-peek': typed_rows, 'typed-peek-k': typed_rows, 'typed-peek-nodoc': typed_rows,
        'get-table': typed_rows,
        'get-json': None, 'get': None,            # + BEGIN and COMMIT rows
    }
    sql = {
        'typed-peek': 'SELECT count(t) FROM ft.sbtest1 t',
        'typed-peek-nodoc': 'SELECT count(ROW(id, k, c, pad, amount, created)) FROM ft.sbtest1',
        'typed-peek-k': 'SELECT count(k) FROM ft.sbtest1',
        'get-table': "SELECT count(*) FROM binlog_fdw.get_table('tsrc', NULL::ft.sbtest1, %d)" % (changes * 3),
        'get-json': "SELECT count(*) FROM binlog_fdw.get_json('tsrc', %d)" % (changes * 3),
        'get': "SELECT count(*) FROM binlog_fdw.get('tsrc', %d)" % (changes * 3),
    }
    backend = B.q1(conn, 'SELECT pg_backend_pid()')
    load0 = B.loadavg()

    def run(tool, r):
        c0 = B.proc_cpu(backend)
        t = time.perf_counter()
        n = B.q1(conn, sql[tool])
        secs = time.perf_counter() - t
        cpu = B.proc_cpu(backend) - c0
        if tool in ('get-table', 'get-json', 'get'):
            B.q(conn, "SELECT binlog_fdw.rollback('tsrc')")
        err = None
        if check[tool] is not None and n != check[tool]:
            err = '%s rows, want %s' % (n, check[tool])
        elif check[tool] is None and n < changes:
            err = '%s rows, want at least %s' % (n, changes)
        return {'seconds': secs, 'rows': n, 'rows_per_s': changes / secs, 'cpu_s': {'backend': cpu},
                'error': err}

    res = B.interleave(tools, a.runs, run)
    load1 = B.loadavg()
    B.q(conn, "SELECT binlog_fdw.stop('tsrc')")
    best = {t: B.best(res[t]) for t in tools}
    med = {t: sorted(r['seconds'] for r in res[t])[len(res[t]) // 2] for t in tools}
    ref = best.get('get-json')
    rows = []
    for t in tools:
        b = best[t]
        if b is None:
            rows.append([t, '-', '-', '-', '-', '-'])
            continue
        cpu = min(r['cpu_s']['backend'] for r in res[t] if not r.get('error'))
        rows.append([t, '%.3f' % b['seconds'], B.fmt_int(changes / b['seconds']),
                     B.fmt_int(changes / med[t]), '%.2f' % cpu,
                     '%.2f' % (ref['seconds'] / b['seconds']) if ref else '-'])
    headers = ['tool', 'best s', 'changes/s (best)', 'changes/s (median)', 'backend CPU s (min)',
               'speed vs get-json']
    print(B.table(headers, rows))
    date = time.strftime('%Y-%m-%d')
    busy = B.busy_note(load0, load1)
    build = B.build_facts()
    doc = {'benchmark': 'typed', 'date': date, 'host': B.host_facts(), 'build': build,
           'workload': {'inserts': a.inserts, 'updates': a.updates, 'deletes': a.deletes,
                        'changes': changes, 'typed_rows': typed_rows, 'cache': a.workload},
           'settings': {'ring_size': B.q1(conn, 'SHOW binlog_fdw.ring_size'), 'runs': a.runs},
           'loadavg_before': load0, 'loadavg_after': load1, 'results': res}
    os.makedirs(a.results, exist_ok=True)
    B.write_json(os.path.join(a.results, '%s-%s.json' % (a.name, date)), doc)
    md = ['# Typed consumption benchmark (%s)' % date, '',
          'The standard workload (bench.sbtest1: %s inserts, %s updates, %s deletes = %s row changes, '
          '%s typed rows) buffered in the ring of one source; each tool reads all of it in one statement, '
          '%d rounds in rotated order, in the same run (bench/typed/run.sh). '
          'changes/s counts the workload\'s row changes; backend CPU s is the reading backend\'s '
          'user+system time.' % (B.fmt_int(a.inserts), B.fmt_int(a.updates), B.fmt_int(a.deletes),
                                  B.fmt_int(changes), B.fmt_int(typed_rows), a.runs), '',
          B.table(headers, rows, md=True), '',
          '- typed-peek: `SELECT count(t) FROM ft.sbtest1 t` (the IMPORTed foreign table, the whole row: '
          'every value converted to its column\'s type, the JSON column `doc` parsed into jsonb; an update '
          'is two rows)',
          '- typed-peek-nodoc: `SELECT count(ROW(id, k, c, pad, amount, created)) FROM ft.sbtest1` (every '
          'column but the JSON `doc`: no jsonb parsing)',
          '- typed-peek-k: `SELECT count(k) FROM ft.sbtest1` (only `k` converted)',
          '- get-table: `get_table(\'tsrc\', NULL::ft.sbtest1, N)` then `rollback()`',
          '- get-json / get: `get_json()` / `get()` then `rollback()` (they also return the BEGIN and '
          'COMMIT rows)', '',
          'The machine has %d CPUs and is shared with other work (other sessions\' builds and tests). %s' % (
              os.cpu_count() or 0, busy), '',
          build_line(build), '']
    with open(os.path.join(a.results, '%s-%s.md' % (a.name, date)), 'w') as f:
        f.write('\n'.join(md))
    print(busy)
    bad = [t for t in tools if best[t] is None]
    return 1 if bad else 0


def build_line(b):
    return B.build_md(b) + '.'


if __name__ == '__main__':
    sys.exit(main())
