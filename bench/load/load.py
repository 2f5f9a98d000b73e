#!/usr/bin/python3
"""bench/load/load.py -- the timed part of bench/load/run.sh (issue #11's
initial-load benchmark): the same MariaDB table (bench.sbtest1, the
standard table of the benchmarks) copied into PostgreSQL by each tool,
rounds interleaved (order rotated), best of --runs:

  fdw-snapshot   SELECT * FROM binlog_fdw.snapshot(server, ARRAY['bench.sbtest1'])
  fdw-load       CALL binlog_fdw.load(server, ARRAY['bench.sbtest1'], chunk_rows)
  fdw-load-2s    two sessions CALL load() on bench.sbtest1 at once (shared chunks)
  fdw-load-2t    two sessions CALL load() at once, on bench.sbtest1_h1 and
                 bench.sbtest1_h2 (the two halves of the same rows)
  pgloader       pgloader (Debian) with a load file: the table only, its
                 default WITH options; timed: its own figure for the table's
                 data copy (the summary line of bench.sbtest1); its wall time,
                 and what it does besides, are recorded too
  pipe           mariadb --batch --quick -e 'SELECT ...' | psql -c '\\copy ... FROM STDIN'
  pg-copy        server-side COPY FROM a local file of the same rows (the
                 file the mariadb client prints; the ingest ceiling)

Every round starts from no target table (dropped before, untimed); pipe and
pg-copy load into a table created beforehand (untimed) with the types
binlog_fdw gives the columns and the primary key; binlog_fdw and pgloader
create their targets.  Each fdw run gets a new foreign server (its
load progress starts empty).  After each run the target's count, sum(k)
and sum(amount) are compared with MariaDB's.

With --print-source-sql it prints the MariaDB SQL that makes the table.
"""
import argparse
import os
import re
import resource
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import benchlib as B  # noqa: E402

ALL_TOOLS = ['fdw-snapshot', 'fdw-load', 'fdw-load-2s', 'fdw-load-2t', 'pgloader', 'pipe', 'pg-copy']
LABELS = {
    'fdw-snapshot': 'binlog_fdw snapshot() (1 transaction, 1 connection)',
    'fdw-load': 'binlog_fdw CALL load() (chunks, 1 session)',
    'fdw-load-2s': 'binlog_fdw CALL load(), 2 sessions, same table',
    'fdw-load-2t': 'binlog_fdw CALL load(), 2 sessions, 2 tables (halves)',
    'pgloader': 'pgloader (data copy)',
    'pipe': 'mariadb --batch | psql \\copy',
    'pg-copy': 'COPY FROM local file (ceiling)',
}
SHORT = {
    'fdw-snapshot': 'binlog_fdw\nsnapshot()',
    'fdw-load': 'binlog_fdw\nload() 1 session',
    'fdw-load-2s': 'binlog_fdw\nload() 2 sess.\nsame table',
    'fdw-load-2t': 'binlog_fdw\nload() 2 sess.\n2 tables',
    'pgloader': 'pgloader\n(data copy)',
    'pipe': 'mariadb |\npsql \\copy',
    'pg-copy': 'COPY FROM file\n(ceiling)',
}
PGBIN = os.environ.get('BLF_PG_BINDIR') or '/usr/lib/postgresql/15/bin'
COLS = 'id, k, c, pad, amount, created, doc'

# the types binlog_fdw gives the columns (bench/apply/pg_workload.py)
PG_TABLE = """CREATE TABLE bench.%s (
  id bigint NOT NULL PRIMARY KEY,
  k integer NOT NULL,
  c character varying(120),
  pad character varying(60),
  amount numeric(12,2),
  created timestamp(6) without time zone,
  doc jsonb
)"""

NAMES = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi",
         "ivan", "judy", "mallory", "niaj", "olivia", "peggy", "rupert",
         "sybil", "trent", "victor", "walter", "\u00e9lodie", "\u5f20\u4f1f"]
REGIONS = ["eu-west", "eu-central", "us-east", "us-west", "ap-south",
           "ap-northeast", "sa-east", "af-south"]


def source_sql(rows, marker):
    """The standard table (gen_workload.py's sbtest1 and its value shapes) made
    on MariaDB by INSERT ... SELECT FROM seq_1_to_N, outside the binlog."""
    def grp(a, b):
        return "LPAD(MOD(seq * %d + %d, 100000000000), 11, '0')" % (a, b)
    c = "CONCAT_WS('-', %s)" % ', '.join(grp(2654435761 + 2 * i, 7919 * i) for i in range(10))   # 119 chars
    pad = "CONCAT_WS('-', %s)" % ', '.join(grp(40503 + 2 * i, 104729 * i) for i in range(5))     # 59 chars
    names = ', '.join("'%s'" % n for n in NAMES)
    regions = ', '.join("'%s'" % r for r in REGIONS)
    doc = ("CONCAT('{\"id\": ', seq, ', \"user\": \"', ELT(1 + MOD(seq, 21), %s), MOD(seq, 1000), "
           "'\", \"score\": ', MOD(seq * 31, 1000), '.', MOD(seq * 7, 10), ', \"active\": ', "
           "IF(seq & 1, 'true', 'false'), ', \"tags\": [\"t', MOD(seq * 17, 50), '\", \"t', MOD(seq * 13, 50), "
           "'\"], \"attrs\": {\"level\": ', MOD(seq * 11, 10), ', \"region\": \"', ELT(1 + MOD(seq * 3, 8), %s), "
           "'\"}}')" % (names, regions))
    ddl = ("(id BIGINT NOT NULL PRIMARY KEY, k INT NOT NULL, c VARCHAR(120), pad CHAR(60), "
           "amount DECIMAL(12,2), created DATETIME(6), doc JSON) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4")
    half = rows // 2
    return '\n'.join([
        "SET SESSION sql_log_bin = 0;",
        "SET NAMES utf8mb4;",
        "CREATE DATABASE IF NOT EXISTS bench;",
        "USE bench;",
        "DROP TABLE IF EXISTS bench.sbtest1, bench.sbtest1_h1, bench.sbtest1_h2;",
        "CREATE TABLE bench.sbtest1 %s;" % ddl,
        "INSERT INTO bench.sbtest1 (%s) SELECT seq, 1 + MOD(seq * 48271, %d), %s, %s, "
        "MOD(seq * 69621, 10000000) / 100, "
        "TIMESTAMP'2024-01-01 00:00:00' + INTERVAL (seq * 7000000 + MOD(seq * 7907, 1000000)) MICROSECOND, "
        "%s FROM seq_1_to_%d;" % (COLS, rows, c, pad, doc, rows),
        "CREATE TABLE bench.sbtest1_h1 %s;" % ddl,
        "INSERT INTO bench.sbtest1_h1 SELECT * FROM bench.sbtest1 WHERE id <= %d;" % half,
        "CREATE TABLE bench.sbtest1_h2 %s;" % ddl,
        "INSERT INTO bench.sbtest1_h2 SELECT * FROM bench.sbtest1 WHERE id > %d;" % half,
        "ANALYZE TABLE bench.sbtest1, bench.sbtest1_h1, bench.sbtest1_h2;",
        "ALTER TABLE bench.sbtest1 COMMENT = '%s';" % marker,
        ""])


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


class Bench:
    def __init__(self, a):
        self.a = a
        self.src_pid = B.mariadbd_pid('bload')
        self.n_server = 0
        m = B.mdb('bload')
        self.expected = tuple(str(x) for x in B.mx(m, 'SELECT COUNT(*), SUM(k), SUM(amount) FROM bench.sbtest1')[0])
        m.close()
        self.types = {}
        self.pgloader_notes = None

    def conn(self):
        return B.pg(self.a.pg_port, 'bench', app='bench-load')

    def fresh(self, c):
        B.q(c, 'DROP TABLE IF EXISTS bench.sbtest1, bench.sbtest1_h1, bench.sbtest1_h2')

    def server(self, c):
        self.n_server += 1
        name = 'ld%d' % self.n_server
        B.q(c, "CREATE SERVER %s FOREIGN DATA WRAPPER binlog_fdw OPTIONS (host '127.0.0.1', port '%d', "
               "server_id '%d', include '^bench\\.')" % (name, self.a.src_port, 4600 + self.n_server))
        B.q(c, "CREATE USER MAPPING FOR CURRENT_USER SERVER %s OPTIONS (user 'repl', password 'repl')" % name)
        return name

    def check(self, c, tables):
        got = B.q(c, 'SELECT COUNT(*), SUM(k), SUM(amount) FROM (%s) t' % ' UNION ALL '.join(
            'SELECT k, amount FROM bench.%s' % t for t in tables))[0]
        got = tuple(str(x) for x in got)
        if got != self.expected:
            return 'target has count/sum(k)/sum(amount) %s, MariaDB %s' % ('/'.join(got), '/'.join(self.expected))
        return None

    def note_types(self, tool, c, table='sbtest1'):
        if tool in self.types:
            return
        self.types[tool] = ', '.join('%s %s' % r for r in B.q(
            c, "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
               "WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
            ('bench.' + table,)))
        idx = B.q(c, "SELECT indexdef FROM pg_indexes WHERE schemaname = 'bench' AND tablename = %s",
                  (table,))
        self.types[tool] += '; ' + '; '.join(r[0] for r in idx)

    def run(self, tool, rnd):
        c = self.conn()
        self.fresh(c)
        out = {}
        cpu0 = B.proc_cpu(self.src_pid)
        ch0 = children_cpu()
        try:
            out = getattr(self, tool.replace('-', '_'))(c)
        except Exception as e:  # noqa: BLE001 -- a failed run is reported, the others go on
            out = {'error': '%s: %s' % (type(e).__name__, e)}
        cpu1 = B.proc_cpu(self.src_pid)
        out['cpu_s'] = {'mariadbd': (cpu1 - cpu0) if cpu0 is not None and cpu1 is not None else None,
                        'client processes': children_cpu() - ch0 if tool in ('pgloader', 'pipe') else None}
        if not out.get('error'):
            tables = ['sbtest1_h1', 'sbtest1_h2'] if tool == 'fdw-load-2t' else ['sbtest1']
            err = self.check(c, tables)
            if err:
                out['error'] = err
            else:
                self.note_types(tool, c, tables[0])
            if out.get('seconds'):
                out['rows_per_s'] = self.a.rows / out['seconds']
        for s in out.pop('servers', []):
            B.q(c, 'DROP SERVER %s CASCADE' % s)
        self.fresh(c)
        c.close()
        return out

    # ---- binlog_fdw ----
    def fdw_snapshot(self, c):
        s = self.server(c)
        t0 = time.perf_counter()
        r = B.q(c, "SELECT rows FROM binlog_fdw.snapshot(%s, ARRAY['bench.sbtest1'])", (s,))
        dt = time.perf_counter() - t0
        return {'seconds': dt, 'servers': [s], 'rows_reported': r[0][0] if r else None}

    def fdw_load(self, c):
        s = self.server(c)
        t0 = time.perf_counter()
        B.q(c, "CALL binlog_fdw.load(%s, ARRAY['bench.sbtest1'], %s)", (s, self.a.chunk_rows))
        dt = time.perf_counter() - t0
        chunks = B.q1(c, "SELECT sum(chunks) FROM binlog_fdw.load_status WHERE server = %s", (s,))
        return {'seconds': dt, 'servers': [s], 'chunks': chunks}

    def two_sessions(self, c, tables):
        s = self.server(c)
        conns = [self.conn() for _ in tables]
        barrier = threading.Barrier(len(tables) + 1)
        errs = [None] * len(tables)
        ends = [None] * len(tables)

        def go(i):
            barrier.wait()
            try:
                B.q(conns[i], "CALL binlog_fdw.load(%s, ARRAY[%s], %s)", (s, tables[i], self.a.chunk_rows))
            except Exception as e:  # noqa: BLE001
                errs[i] = '%s: %s' % (type(e).__name__, e)
            ends[i] = time.perf_counter()
        th = [threading.Thread(target=go, args=(i,)) for i in range(len(tables))]
        for t in th:
            t.start()
        barrier.wait()
        t0 = time.perf_counter()
        for t in th:
            t.join()
        dt = max(ends) - t0
        for x in conns:
            x.close()
        chunks = B.q1(c, "SELECT sum(chunks) FROM binlog_fdw.load_status WHERE server = %s", (s,))
        out = {'seconds': dt, 'servers': [s], 'chunks': chunks,
               'session_seconds': [round(e - t0, 3) for e in ends]}
        if any(errs):
            out['error'] = '; '.join(e for e in errs if e)
        return out

    def fdw_load_2s(self, c):
        return self.two_sessions(c, ['bench.sbtest1', 'bench.sbtest1'])

    def fdw_load_2t(self, c):
        return self.two_sessions(c, ['bench.sbtest1_h1', 'bench.sbtest1_h2'])

    # ---- pgloader ----
    def pgloader(self, c):
        a = self.a
        cmd = os.path.join(a.work, 'pgloader.load')
        with open(cmd, 'w') as f:
            f.write("LOAD DATABASE\n"
                    "  FROM mysql://repl:repl@127.0.0.1:%d/bench\n"
                    "  INTO postgresql://postgres@127.0.0.1:%d/bench\n"
                    "  INCLUDING ONLY TABLE NAMES MATCHING 'sbtest1';\n" % (a.src_port, a.pg_port))
        logdir = os.path.join(a.work, 'pgloader-logs')
        os.makedirs(logdir, exist_ok=True)
        t0 = time.perf_counter()
        p = subprocess.run(['pgloader', '--no-ssl-cert-verification', '--logfile',
                            os.path.join(logdir, 'pgloader.log'), cmd],
                           capture_output=True, text=True, cwd=a.work)
        wall = time.perf_counter() - t0
        txt = p.stdout + p.stderr
        open(os.path.join(logdir, 'last-output.txt'), 'w').write(txt)
        if p.returncode != 0:
            return {'error': 'pgloader exit %d: %s' % (p.returncode, txt[-600:])}
        phases = parse_pgloader(txt)
        copy = None
        for name, secs in phases:
            if name.endswith('sbtest1'):
                copy = secs
        if copy is None:
            return {'error': 'no copy time of sbtest1 in the pgloader summary: %s' % txt[-600:]}
        if self.pgloader_notes is None:
            self.pgloader_notes = phases
        return {'seconds': copy, 'wall_seconds': wall, 'phases': phases}

    # ---- the pipe and the COPY ceiling ----
    def pipe(self, c):
        a = self.a
        B.q(c, PG_TABLE % 'sbtest1')
        # mariadb --batch prints NULL as NULL and escapes tab, newline, backslash
        # and NUL as \t \n \\ \0, which COPY's text format reads back (the
        # standard table has no NUL byte and no string 'NULL')
        sh = ("set -o pipefail; mariadb --no-defaults --batch --quick --skip-column-names "
              "--default-character-set=utf8mb4 -h 127.0.0.1 -P %d -u repl -prepl "
              "-e 'SELECT %s FROM bench.sbtest1' | "
              "%s/psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p %d -U postgres -d bench "
              "-c \"\\copy bench.sbtest1 (%s) FROM STDIN WITH (NULL 'NULL')\"" % (
                  a.src_port, COLS, PGBIN, a.pg_port, COLS))
        t0 = time.perf_counter()
        p = subprocess.run(['bash', '-c', sh], capture_output=True, text=True)
        dt = time.perf_counter() - t0
        if p.returncode != 0:
            return {'error': 'pipe exit %d: %s' % (p.returncode, (p.stdout + p.stderr)[-600:])}
        return {'seconds': dt}

    def pg_copy(self, c):
        B.q(c, PG_TABLE % 'sbtest1')
        t0 = time.perf_counter()
        B.q(c, "COPY bench.sbtest1 (%s) FROM %%s WITH (NULL 'NULL')" % COLS, (self.a.rows_file,))
        return {'seconds': time.perf_counter() - t0}


def parse_pgloader(txt):
    """The rows of pgloader's summary: [(name, seconds)]."""
    out = []
    for line in txt.splitlines():
        m = re.match(r'^\s*(\S.*?)\s{2,}.*?\s(\d+(?:\.\d+)?)(ms|s)\s*$', line)
        if m and not line.lstrip().startswith(('table name', '-')):
            v = float(m.group(2))
            if m.group(3) == 'ms':
                v /= 1000
            else:
                # pgloader prints 1m23.456s as well
                pass
            out.append((m.group(1).strip(), v))
        m = re.match(r'^\s*(\S.*?)\s{2,}.*?\s(\d+)m(\d+(?:\.\d+)?)s\s*$', line)
        if m:
            out.append((m.group(1).strip(), int(m.group(2)) * 60 + float(m.group(3))))
    return out


def report(a, doc, tools):
    res = doc['results']
    best = {t: B.best(res.get(t, [])) for t in tools}
    ref = {k: (best.get(k) or {}).get('rows_per_s') for k in ('pgloader', 'pipe', 'pg-copy')}

    def ratio(v, r):
        return B.fmt(v / r, '%.2fx') if v and r else '-'
    hdr = ['tool', 'best s', 'rows/s', 'x pgloader', 'x pipe', 'x COPY', 'runs (s)']
    rows = []
    summary = {}
    for t in tools:
        b = best[t]
        runs = ', '.join(('!' if r.get('error') else '') + B.fmt(r.get('seconds'), '%.2f') for r in res[t])
        if not b:
            rows.append([LABELS[t], '-', '-', '-', '-', '-', runs])
            continue
        v = b['rows_per_s']
        summary[t] = {'seconds': b['seconds'], 'rows_per_s': v, 'x_pgloader': v / ref['pgloader'] if ref['pgloader'] else None,
                      'x_pipe': v / ref['pipe'] if ref['pipe'] else None,
                      'x_copy': v / ref['pg-copy'] if ref['pg-copy'] else None}
        rows.append([LABELS[t], '%.2f' % b['seconds'], B.fmt_int(v), ratio(v, ref['pgloader']),
                     ratio(v, ref['pipe']), ratio(v, ref['pg-copy']), runs])
    doc['summary'] = summary
    targets = []
    s = summary.get('fdw-snapshot')
    if s:
        for key, goal, name in (('x_pgloader', 2.5, 'snapshot() >= 2.5x pgloader'),
                                ('x_pipe', 1.0, 'snapshot() >= 1.0x the pipe'),
                                ('x_copy', 0.9, 'snapshot() >= 0.9x the COPY ceiling (one connection)')):
            if s.get(key) is not None:
                targets.append({'name': name, 'measured': round(s[key], 2), 'met': s[key] >= goal})
    doc['targets'] = targets
    print(B.table(hdr, rows))
    for t in targets:
        print('target (not asserted) %-55s %s (%.2fx)' % (t['name'], 'met' if t['met'] else 'NOT met', t['measured']))
    for t in tools:
        for r in res[t]:
            if r.get('error'):
                print('%s round %d: %s' % (t, r['round'], r['error'][:400]))

    os.makedirs(a.results, exist_ok=True)
    base = os.path.join(a.results, 'load-%s' % doc['date'])
    B.write_json(base + '.json', doc)
    png = os.path.join(a.results, 'load.png')
    ts = [t for t in tools if t in summary]
    hl = []
    if ref['pg-copy']:
        hl.append((ref['pg-copy'] * 0.9, 'target: 0.9x the COPY ceiling', '#cc0000'))
    if ref['pgloader']:
        hl.append((ref['pgloader'] * 2.5, 'target: 2.5x pgloader', '#7a3fb0'))
    chart = B.bar_chart(png, 'Initial load of %s rows of bench.sbtest1, MariaDB -> PostgreSQL (%s, best of %d)' % (
        B.fmt_int(a.rows), doc['date'], a.runs), [SHORT[t] for t in ts], [summary[t]['rows_per_s'] for t in ts],
        'rows per second', hl, ['#d9822b' if t.startswith('fdw-') else '#3b75af' for t in ts])

    host, b = doc['host'], doc['build']
    pgl = ''
    if doc.get('pgloader_phases'):
        pgl = ('pgloader\'s own summary of one run (seconds): %s; its wall time (SBCL start, catalog '
               'queries, CREATE TABLE, the copy, the index build, sequences, comments) was %s s in the '
               'best run. ' % ('; '.join('%s %.3f' % (n, v) for n, v in doc['pgloader_phases']),
                               B.fmt((best.get('pgloader') or {}).get('wall_seconds'), '%.2f')))
    md = ['## Initial-load benchmark (issue #11), %s' % doc['date'], '',
          'Host: %s, %d CPUs, %s GB, %s. %s; %s; %s; %s.' % (
              host['cpu_model'], host['cpus_online'], host['mem_gb'], host['kernel'], B.build_md(b),
              b['postgres'], b['mariadbd'], doc['pgloader_version']), '',
          'Table: bench.sbtest1, the standard table of the benchmarks (id BIGINT PK, k INT, c VARCHAR(120), '
          'pad CHAR(60), amount DECIMAL(12,2), created DATETIME(6), doc JSON), %s rows made on MariaDB by '
          'INSERT ... SELECT FROM seq_1_to_%d (%.0f MB as COPY text); MariaDB with innodb_buffer_pool_size=2G '
          '(the table in memory), PostgreSQL with `%s`. load(): chunk_rows %s.' % (
              B.fmt_int(a.rows), a.rows, doc['rows_file_bytes'] / 1e6, ' '.join(doc['pg_options']),
              B.fmt_int(a.chunk_rows)), '',
          'Best of %d runs, tools interleaved round by round (order rotated). Load average %s before, %s after. '
          '%s' % (a.runs, ' '.join(doc['loadavg_before']), ' '.join(doc['loadavg_after']), doc['busy']), '',
          B.table(hdr, [[r[0].replace('|', '\\|')] + r[1:] for r in rows], md=True), '',
          'x pgloader / x pipe / x COPY: rows/s against that tool\'s best. Timed: binlog_fdw from the '
          'call to its return (the target created, rows copied, PRIMARY KEY, ANALYZE; load() also commits '
          'each chunk with its progress); pgloader: the data copy of the table as its summary reports it; '
          'the pipe: the whole shell pipeline into a table created beforehand with its primary key; COPY: '
          'server-side COPY FROM the file the mariadb client printed, into the same kind of table. '
          'Every result was checked (count, sum(k), sum(amount) equal MariaDB\'s). `!` marks a failed run.',
          '', pgl, '']
    if targets:
        md += ['Targets of issue #11 (noted, not asserted): ' + '; '.join(
            '%s: %.2fx (%s)' % (t['name'], t['measured'], 'met' if t['met'] else 'not met') for t in targets) + '.', '']
    by = {}
    for t, v in doc['types'].items():
        by.setdefault(v, []).append(t)
    md += ['Target columns and indexes: ' + '; '.join('%s: %s' % (', '.join(ts), v) for v, ts in by.items()) + '.', '']
    if chart:
        md += ['![load](load.png)', '']
    open(base + '.md', 'w').write('\n'.join(md))
    B.log('wrote %s.{json,md}%s' % (base, ' and ' + png if chart else ''))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--print-source-sql', action='store_true')
    ap.add_argument('--marker', default='')
    ap.add_argument('--rows', type=int, default=2000000)
    ap.add_argument('--chunk-rows', type=int, default=100000)
    ap.add_argument('--runs', type=int, default=3)
    ap.add_argument('--tools', default=','.join(ALL_TOOLS))
    ap.add_argument('--src-port', type=int, default=3505)
    ap.add_argument('--pg-port', type=int, default=5505)
    ap.add_argument('--rows-file')
    ap.add_argument('--work')
    ap.add_argument('--results')
    ap.add_argument('--pg-options', default='')
    ap.add_argument('--small', type=int, default=0)
    a = ap.parse_args()
    if a.print_source_sql:
        sys.stdout.write(source_sql(a.rows, a.marker))
        return 0
    tools = [t for t in a.tools.split(',') if t]
    for t in tools:
        if t not in ALL_TOOLS:
            ap.error('unknown tool %s' % t)
    tools = [t for t in ALL_TOOLS if t in tools]
    doc = {'benchmark': 'load', 'date': time.strftime('%Y-%m-%d'), 'host': B.host_facts(),
           'build': B.build_facts(), 'pgloader_version': B.sh('pgloader', '--version').replace('\n', ', '),
           'rows': a.rows, 'chunk_rows': a.chunk_rows, 'runs': a.runs, 'pg_options': a.pg_options.split(),
           'rows_file_bytes': os.path.getsize(a.rows_file),
           'statistic': 'best (min) seconds of the runs, tools interleaved', 'tools': tools,
           'loadavg_before': B.loadavg()}
    B.log('load average %s; %d rounds of %s' % (' '.join(doc['loadavg_before']), a.runs, ', '.join(tools)))
    bench = Bench(a)
    doc['results'] = B.interleave(tools, a.runs, bench.run)
    doc['loadavg_after'] = B.loadavg()
    doc['busy'] = B.busy_note(doc['loadavg_before'], doc['loadavg_after'], own=2.0)
    doc['types'] = bench.types
    doc['pgloader_phases'] = bench.pgloader_notes
    return report(a, doc, tools)


if __name__ == '__main__':
    sys.exit(main())
