#!/usr/bin/python3
"""bench/load/load.py -- the timed part of bench/load/run.sh (issue #11's
initial-load benchmark): the same MariaDB table copied into PostgreSQL by
each tool, rounds interleaved (order rotated), best of --runs.  The table:
bench.sbtest1 (--table standard, the standard table of the benchmarks) or
wide.wide40 (--table wide, the 40-column mixed-type table of
bench/decoder/gen_workload.py --table wide).  T below is that table:

  fdw-snapshot   SELECT * FROM binlog_fdw.snapshot(server, ARRAY['T'])
  fdw-load       CALL binlog_fdw.load(server, ARRAY['T'], chunk_rows)
  fdw-load-2s    two sessions CALL load() on T at once (they share its chunks)
  fdw-load-r2    one CALL load(..., parallel => 2) of T: two loaders, each
                 copying another key range of it at once
  fdw-load-p2    one CALL load(..., parallel => 2) of T_h1 and T_h2 (a
                 background loader takes the second table)
  fdw-load-2t    two sessions CALL load() at once, on T_h1 and T_h2 (the
                 two halves of the same rows)
  pgloader       pgloader (Debian) with a load file: the table only, its
                 default WITH options (SBCL heap raised with
                 --dynamic-space-size: its default heap is exhausted by 2M
                 rows); timed: its own figure for the table's data copy (the
                 summary line of T); its wall time and its other steps are
                 recorded too
  pipe           mariadb --batch --quick -e 'SELECT ...' | psql -c '\\copy T FROM STDIN'
  pg-copy        server-side COPY FROM a local file of the same rows (what
                 the pipe's mariadb client prints; the ingest ceiling)

Every round starts from no target table (dropped before, untimed); pipe and
pg-copy load into a table created beforehand (untimed) LIKE a template
INCLUDING ALL: what binlog_fdw's snapshot() made of an empty copy of the
source table (its column types and primary key); binlog_fdw and pgloader
create their targets.  Each fdw run gets a new foreign server (its load
progress starts empty).  After each run the target's count, sum(k) and the
sum of a DECIMAL column are compared with MariaDB's.

--print-source-sql prints the MariaDB SQL that makes the standard table;
--write-rows FILE writes the pipe's rows to FILE.
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

ALL_TOOLS = ['fdw-snapshot', 'fdw-load', 'fdw-load-2s', 'fdw-load-r2', 'fdw-load-2t', 'fdw-load-p2', 'pgloader',
             'pipe', 'pg-copy']
LABELS = {
    'fdw-snapshot': 'binlog_fdw snapshot() (1 transaction, 1 connection)',
    'fdw-load': 'binlog_fdw CALL load() (chunks, 1 session)',
    'fdw-load-2s': 'binlog_fdw CALL load(), 2 sessions, same table',
    'fdw-load-r2': 'binlog_fdw CALL load(parallel => 2), 1 table (2 key ranges at once)',
    'fdw-load-2t': 'binlog_fdw CALL load(), 2 sessions, 2 tables (halves)',
    'fdw-load-p2': 'binlog_fdw CALL load(parallel => 2), 2 tables (halves)',
    'pgloader': 'pgloader (data copy)',
    'pipe': 'mariadb --batch | psql \\copy',
    'pg-copy': 'COPY FROM local file (ceiling)',
}
SHORT = {
    'fdw-snapshot': 'binlog_fdw\nsnapshot()',
    'fdw-load': 'binlog_fdw\nload() 1 session',
    'fdw-load-2s': 'binlog_fdw\nload() 2 sess.\nsame table',
    'fdw-load-r2': 'binlog_fdw\nload(parallel 2)\n1 table',
    'fdw-load-2t': 'binlog_fdw\nload() 2 sess.\n2 tables',
    'fdw-load-p2': 'binlog_fdw\nload(parallel 2)\n2 tables',
    'pgloader': 'pgloader\n(data copy)',
    'pipe': 'mariadb |\npsql \\copy',
    'pg-copy': 'COPY FROM file\n(ceiling)',
}
PGBIN = os.environ.get('BLF_PG_BINDIR') or '/usr/lib/postgresql/15/bin'
COLS = 'id, k, c, pad, amount, created, doc'
WIDE_COLS = ('id,k,d1,d2,d3,d4,d5,d6,d7,f1,n1,n2,n3,n4,n5,t1,t2,t3,t4,dt,tm,j1,j2,j3,'
             'x1,x2,x3,b1,b2,v1,v2,v3,v4,c1,i1,i2,i3,i4,e1,yr').split(',')
# MariaDB database (= the PostgreSQL schema), table, the pipe's select list
# (BLOBs as bytea hex input: the client prints the backslash of '\\x'
# doubled, COPY's text format reads it back as one), the checked DECIMAL
TABLES = {
    'standard': {'db': 'bench', 'table': 'sbtest1', 'cols': COLS, 'select': COLS, 'sum': 'amount',
                 'desc': 'bench.sbtest1, the standard table of the benchmarks (id BIGINT PK, k INT, '
                         'c VARCHAR(120), pad CHAR(60), amount DECIMAL(12,2), created DATETIME(6), doc JSON)'},
    'wide': {'db': 'wide', 'table': 'wide40', 'cols': ', '.join(WIDE_COLS),
             'select': ', '.join("CONCAT('\\\\x', HEX(%s))" % c if c in ('b1', 'b2') else c for c in WIDE_COLS),
             'sum': 'n1',
             'desc': 'wide.wide40, the wide table of bench/decoder/gen_workload.py --table wide (40 columns: '
                     'bigint PK, int, 7 double, float, 5 decimal, 4 datetime(6), date, time(6), 3 json, 3 text, '
                     '2 blob, 4 varchar, char, 4 integers, enum, year)'},
}

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
    return '\n'.join([
        "SET SESSION sql_log_bin = 0;",
        "SET NAMES utf8mb4;",
        "CREATE DATABASE IF NOT EXISTS bench;",
        "USE bench;",
        "DROP TABLE IF EXISTS bench.sbtest1;",
        "CREATE TABLE bench.sbtest1 %s;" % ddl,
        "INSERT INTO bench.sbtest1 (%s) SELECT seq, 1 + MOD(seq * 48271, %d), %s, %s, "
        "MOD(seq * 69621, 10000000) / 100, "
        "TIMESTAMP'2024-01-01 00:00:00' + INTERVAL (seq * 7000000 + MOD(seq * 7907, 1000000)) MICROSECOND, "
        "%s FROM seq_1_to_%d;" % (COLS, rows, c, pad, doc, rows),
        ""])


def halves_sql(db, table, rows, marker):
    """T_h1, T_h2 (the two halves of T's rows), T_t (empty: the template),
    the marker in T's comment (set last: an interrupted run makes them again)."""
    t = '%s.%s' % (db, table)
    half = rows // 2
    return '\n'.join([
        "SET SESSION sql_log_bin = 0;",
        "DROP TABLE IF EXISTS %s_h1, %s_h2, %s_t;" % (t, t, t),
        "CREATE TABLE %s_h1 LIKE %s;" % (t, t),
        "INSERT INTO %s_h1 SELECT * FROM %s WHERE id <= %d;" % (t, t, half),
        "CREATE TABLE %s_h2 LIKE %s;" % (t, t),
        "INSERT INTO %s_h2 SELECT * FROM %s WHERE id > %d;" % (t, t, half),
        "CREATE TABLE %s_t LIKE %s;" % (t, t),
        "ANALYZE TABLE %s, %s_h1, %s_h2;" % (t, t, t),
        "ALTER TABLE %s COMMENT = '%s';" % (t, marker),
        ""])


def mariadb_cmd(port, sql):
    return ['mariadb', '--no-defaults', '--batch', '--quick', '--skip-column-names',
            '--default-character-set=utf8mb4', '-h', '127.0.0.1', '-P', str(port), '-u', 'repl', '-prepl',
            '-e', sql]


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


class Bench:
    def __init__(self, a):
        self.a = a
        self.t = TABLES[a.table]
        self.db, self.tab = self.t['db'], self.t['table']
        self.src_pid = B.mariadbd_pid('bload')
        self.n_server = 0
        m = B.mdb('bload')
        self.expected = tuple(str(x) for x in B.mx(m, 'SELECT COUNT(*), SUM(k), SUM(%s) FROM %s.%s' % (
            self.t['sum'], self.db, self.tab))[0])
        m.close()
        self.types = {}
        self.pgloader_notes = None
        # the template of pipe's and pg-copy's targets: binlog_fdw's table
        c = self.conn()
        B.q(c, 'CREATE SCHEMA IF NOT EXISTS %s' % self.db)
        B.q(c, 'DROP TABLE IF EXISTS %s.%s_t' % (self.db, self.tab))
        s = self.server(c)
        B.q(c, "SELECT * FROM binlog_fdw.snapshot(%s, ARRAY[%s])", (s, '%s.%s_t' % (self.db, self.tab)))
        B.q(c, 'DROP SERVER %s CASCADE' % s)
        c.close()

    def conn(self):
        return B.pg(self.a.pg_port, 'bench', app='bench-load')

    def fresh(self, c):
        B.q(c, 'DROP TABLE IF EXISTS {0}.{1}, {0}.{1}_h1, {0}.{1}_h2'.format(self.db, self.tab))

    def server(self, c):
        self.n_server += 1
        name = 'ld%d' % self.n_server
        B.q(c, "CREATE SERVER %s FOREIGN DATA WRAPPER binlog_fdw OPTIONS (host '127.0.0.1', port '%d', "
               "server_id '%d', include '^%s\\.')" % (name, self.a.src_port, 4600 + self.n_server, self.db))
        B.q(c, "CREATE USER MAPPING FOR CURRENT_USER SERVER %s OPTIONS (user 'repl', password 'repl')" % name)
        return name

    def target_like_template(self, c):
        B.q(c, 'CREATE TABLE {0}.{1} (LIKE {0}.{1}_t INCLUDING ALL)'.format(self.db, self.tab))

    def check(self, c, tables):
        got = B.q(c, 'SELECT COUNT(*), SUM(k), SUM(%s) FROM (%s) t' % (self.t['sum'], ' UNION ALL '.join(
            'SELECT k, %s FROM %s.%s' % (self.t['sum'], self.db, t) for t in tables)))[0]
        got = tuple(str(x) for x in got)
        if got != self.expected:
            return 'target has count/sum(k)/sum(%s) %s, MariaDB %s' % (
                self.t['sum'], '/'.join(got), '/'.join(self.expected))
        return None

    def note_types(self, tool, c, table):
        if tool in self.types:
            return
        self.types[tool] = ', '.join('%s %s' % r for r in B.q(
            c, "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
               "WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
            ('%s.%s' % (self.db, table),)))
        idx = B.q(c, "SELECT regexp_replace(indexdef, 'INDEX \\S+ ON', 'INDEX ON') FROM pg_indexes "
                     "WHERE schemaname = %s AND tablename = %s", (self.db, table))
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
            tables = [self.tab + '_h1', self.tab + '_h2'] if tool in ('fdw-load-2t', 'fdw-load-p2') else [self.tab]
            err = self.check(c, tables)
            if err:
                out['error'] = err
            else:
                self.note_types(tool, c, tables[0])
                # every value (as PostgreSQL prints the target's types): equal
                # for the tools whose targets have the same types
                # (a sum of per-row md5s: one text of 10M rows passes 1 GB)
                out['md5_rows'] = B.q1(c, "SELECT md5(count(*) || ':' || sum(('x' || substr(md5(t::text), 1, 16))"
                                          "::bit(64)::bigint::numeric)) FROM (%s) t" % (
                    ' UNION ALL '.join('SELECT * FROM %s.%s' % (self.db, x) for x in tables)))
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
        r = B.q(c, "SELECT rows FROM binlog_fdw.snapshot(%s, ARRAY[%s])", (s, '%s.%s' % (self.db, self.tab)))
        dt = time.perf_counter() - t0
        return {'seconds': dt, 'servers': [s], 'rows_reported': r[0][0] if r else None}

    def fdw_load(self, c):
        s = self.server(c)
        t0 = time.perf_counter()
        B.q(c, "CALL binlog_fdw.load(%s, ARRAY[%s], %s)", (s, '%s.%s' % (self.db, self.tab), self.a.chunk_rows))
        dt = time.perf_counter() - t0
        chunks = B.q1(c, "SELECT sum(chunks) FROM binlog_fdw.load_status WHERE server = %s", (s,))
        return {'seconds': dt, 'servers': [s], 'chunks': chunks}

    def fdw_load_r2(self, c):
        s = self.server(c)
        t0 = time.perf_counter()
        B.q(c, "CALL binlog_fdw.load(%s, ARRAY[%s], %s, false, 2)", (s, '%s.%s' % (self.db, self.tab),
                                                                    self.a.chunk_rows))
        dt = time.perf_counter() - t0
        chunks = B.q1(c, "SELECT sum(chunks) FROM binlog_fdw.load_status WHERE server = %s", (s,))
        return {'seconds': dt, 'servers': [s], 'chunks': chunks}

    def fdw_load_p2(self, c):
        s = self.server(c)
        tables = ['%s.%s_h%d' % (self.db, self.tab, i) for i in (1, 2)]
        t0 = time.perf_counter()
        B.q(c, "CALL binlog_fdw.load(%s, %s, %s, false, 2)", (s, tables, self.a.chunk_rows))
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
        t = '%s.%s' % (self.db, self.tab)
        return self.two_sessions(c, [t, t])

    def fdw_load_2t(self, c):
        t = '%s.%s' % (self.db, self.tab)
        return self.two_sessions(c, [t + '_h1', t + '_h2'])

    # ---- pgloader ----
    def pgloader(self, c):
        a = self.a
        cmd = os.path.join(a.work, 'pgloader-%s.load' % self.tab)
        with open(cmd, 'w') as f:
            f.write("LOAD DATABASE\n"
                    "  FROM mysql://repl:repl@127.0.0.1:%d/%s\n"
                    "  INTO postgresql://postgres@127.0.0.1:%d/bench\n"
                    "  INCLUDING ONLY TABLE NAMES MATCHING '%s';\n" % (a.src_port, self.db, a.pg_port, self.tab))
        logdir = os.path.join(a.work, 'pgloader-logs')
        os.makedirs(logdir, exist_ok=True)
        t0 = time.perf_counter()
        p = subprocess.run(['pgloader', '--dynamic-space-size', str(a.pgloader_heap_mb),
                            '--logfile', os.path.join(logdir, 'pgloader.log'), cmd],
                           capture_output=True, text=True, cwd=a.work)
        wall = time.perf_counter() - t0
        txt = p.stdout + p.stderr
        open(os.path.join(logdir, 'last-output-%s.txt' % self.tab), 'w').write(txt)
        if p.returncode != 0:
            return {'error': 'pgloader exit %d: %s' % (p.returncode, txt[-600:])}
        phases = parse_pgloader(txt)
        copy = None
        for name, secs in phases:
            if name == '%s.%s' % (self.db, self.tab):
                copy = secs
        if copy is None:
            return {'error': 'no copy time of %s in the pgloader summary: %s' % (self.tab, txt[-600:])}
        if self.pgloader_notes is None:
            self.pgloader_notes = phases
        return {'seconds': copy, 'wall_seconds': wall, 'phases': phases}

    # ---- the pipe and the COPY ceiling ----
    def pipe(self, c):
        a = self.a
        self.target_like_template(c)
        # mariadb --batch prints NULL as NULL and escapes tab, newline, backslash
        # and NUL as \t \n \\ \0, which COPY's text format reads back (the
        # tables have no NUL byte in a string, no string 'NULL', BLOBs in hex)
        src = mariadb_cmd(a.src_port, 'SELECT %s FROM %s.%s' % (self.t['select'], self.db, self.tab))
        dst = [os.path.join(PGBIN, 'psql'), '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-h', '127.0.0.1',
               '-p', str(a.pg_port), '-U', 'postgres', '-d', 'bench', '-c',
               "\\copy %s.%s (%s) FROM STDIN WITH (NULL 'NULL')" % (self.db, self.tab, self.t['cols'])]
        t0 = time.perf_counter()
        p1 = subprocess.Popen(src, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        p2 = subprocess.Popen(dst, stdin=p1.stdout, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        p1.stdout.close()
        o2, e2 = p2.communicate()
        e1 = p1.stderr.read()
        p1.wait()
        dt = time.perf_counter() - t0
        if p1.returncode or p2.returncode:
            return {'error': 'pipe exit %d/%d: %s %s' % (p1.returncode, p2.returncode, e1.decode()[-300:],
                                                         e2.decode()[-300:])}
        return {'seconds': dt}

    def pg_copy(self, c):
        self.target_like_template(c)
        t0 = time.perf_counter()
        B.q(c, "COPY %s.%s (%s) FROM %%s WITH (NULL 'NULL')" % (self.db, self.tab, self.t['cols']),
            (self.a.rows_file,))
        return {'seconds': time.perf_counter() - t0}


def parse_pgloader(txt):
    """The rows of pgloader's summary: [(name, seconds)] (0.123s, 123ms or 1m2.345s)."""
    out = []
    for line in txt.splitlines():
        if line.lstrip().startswith(('table name', '-')):
            continue
        m = re.match(r'^\s*(\S.*?)\s{2,}.*?\s(?:(\d+)m)?(\d+(?:\.\d+)?)(ms|s)\s*$', line)
        if m:
            v = float(m.group(3)) / (1000 if m.group(4) == 'ms' else 1) + 60 * int(m.group(2) or 0)
            out.append((m.group(1).strip(), v))
    return out


def report(a, doc, tools):
    res = doc['results']
    tdef = TABLES[a.table]
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
        summary[t] = {'seconds': b['seconds'], 'rows_per_s': v,
                      'x_pgloader': v / ref['pgloader'] if ref['pgloader'] else None,
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
    base = os.path.join(a.results, '%s-%s' % (a.name, doc['date']))
    B.write_json(base + '.json', doc)
    png = os.path.join(a.results, '%s.png' % a.name)
    ts = [t for t in tools if t in summary]
    hl = []
    if ref['pg-copy']:
        hl.append((ref['pg-copy'] * 0.9, 'target: 0.9x the COPY ceiling', '#cc0000'))
    if ref['pgloader']:
        hl.append((ref['pgloader'] * 2.5, 'target: 2.5x pgloader', '#7a3fb0'))
    chart = ts and B.bar_chart(png, 'Initial load of %s rows of %s.%s, MariaDB -> PostgreSQL (%s, best of %d)' % (
        B.fmt_int(a.rows), tdef['db'], tdef['table'], doc['date'], a.runs), [SHORT[t] for t in ts],
        [summary[t]['rows_per_s'] for t in ts], 'rows per second', hl,
        ['#d9822b' if t.startswith('fdw-') else '#3b75af' for t in ts])

    host, b = doc['host'], doc['build']
    pgl = ''
    if doc.get('pgloader_phases'):
        pgl = ('pgloader\'s own summary of its first successful run (seconds): %s. Its wall time (SBCL start, '
               'catalog queries, CREATE TABLE, the copy, the primary key built after the copy, sequences, '
               'comments) was %s s in the best run.' % (
                   '; '.join('%s %.3f' % (n, v) for n, v in doc['pgloader_phases']),
                   B.fmt((best.get('pgloader') or {}).get('wall_seconds'), '%.2f')))
    md = ['## Initial-load benchmark (issue #11), %s, %s' % (tdef['table'], doc['date']), '',
          'Host: %s, %d CPUs, %s GB, %s. %s; %s; %s; %s.' % (
              host['cpu_model'], host['cpus_online'], host['mem_gb'], host['kernel'], B.build_md(b),
              b['postgres'], b['mariadbd'], doc['pgloader_version']), '',
          'Table: %s; %s rows (%.0f MB as the pipe\'s COPY text), made on MariaDB %s. MariaDB with '
          'innodb_buffer_pool_size=2G (the table in memory), PostgreSQL with `%s`. load(): chunk_rows %s. '
          'pgloader: --dynamic-space-size %d (MB of SBCL heap), otherwise its defaults.' % (
              tdef['desc'], B.fmt_int(a.rows), doc['rows_file_bytes'] / 1e6,
              'by INSERT ... SELECT FROM seq_1_to_%d' % a.rows if a.table == 'standard' else
              'by gen_workload.py --table wide\'s INSERTs', ' '.join(doc['pg_options']),
              B.fmt_int(a.chunk_rows), a.pgloader_heap_mb), '',
          'Best of %d runs, tools interleaved round by round (order rotated). Load average %s before, %s after. '
          '%s' % (a.runs, ' '.join(doc['loadavg_before']), ' '.join(doc['loadavg_after']), doc['busy']), '',
          B.table(hdr, [[r[0].replace('|', '\\|')] + r[1:] for r in rows], md=True), '',
          'x pgloader / x pipe / x COPY: rows/s against that tool\'s best. Timed: binlog_fdw from the '
          'call to its return (target created, rows copied, ANALYZE; load() also commits each chunk with '
          'its progress); pgloader: the data copy of the table as its summary reports it; the pipe: the '
          'whole pipeline into a table created beforehand; COPY: server-side COPY FROM the file the '
          'pipe\'s mariadb client printed, into the same kind of table. Every result was checked (count, '
          'sum(k), sum(%s) equal MariaDB\'s). `!` marks a failed run.' % tdef['sum'], '']
    if pgl:
        md += [pgl, '']
    if targets:
        md += ['Targets of issue #11 (noted, not asserted): ' + '; '.join(
            '%s: %.2fx (%s)' % (t['name'], t['measured'], 'met' if t['met'] else 'not met') for t in targets) + '.', '']
    fp = {}
    for t in tools:
        for r in res[t]:
            if r.get('md5_rows'):
                fp.setdefault(r['md5_rows'], set()).add(t)
    doc['md5_rows'] = {k: sorted(v) for k, v in fp.items()}
    if fp:
        md += ['md5 of the rows (count and sum of per-row md5s of the rows as text: every value compared; equal only for equal column '
               'types): ' + '; '.join('`%s`: %s' % (k[:12], ', '.join(t for t in tools if t in v))
                                      for k, v in fp.items()) + '.', '']
    by = {}
    for t, v in doc['types'].items():
        by.setdefault(v, []).append(t)
    md += ['Target columns and indexes: ' + '; '.join(
        '**%s**: %s' % (', '.join(ts), v) for v, ts in by.items()) + '.', '']
    if chart:
        md += ['![load](%s.png)' % a.name, '']
    for t in tools:
        for r in res[t]:
            if r.get('error'):
                md.append('- %s round %d failed: `%s`' % (t, r['round'], r['error'][:300].replace('\n', ' ')))
    md.append('')
    open(base + '.md', 'w').write('\n'.join(md))
    B.log('wrote %s.{json,md}%s' % (base, ' and ' + png if chart else ''))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--print-source-sql', action='store_true')
    ap.add_argument('--print-halves-sql', action='store_true')
    ap.add_argument('--write-rows', metavar='FILE')
    ap.add_argument('--marker', default='')
    ap.add_argument('--table', choices=sorted(TABLES), default='standard')
    ap.add_argument('--rows', type=int, default=2000000)
    ap.add_argument('--chunk-rows', type=int, default=100000)
    ap.add_argument('--runs', type=int, default=3)
    ap.add_argument('--tools', default=','.join(ALL_TOOLS))
    ap.add_argument('--src-port', type=int, default=3505)
    ap.add_argument('--pg-port', type=int, default=5505)
    ap.add_argument('--pgloader-heap-mb', type=int, default=4096)
    ap.add_argument('--rows-file')
    ap.add_argument('--work')
    ap.add_argument('--results')
    ap.add_argument('--name', default='load')
    ap.add_argument('--pg-options', default='')
    a = ap.parse_args()
    t = TABLES[a.table]
    if a.print_source_sql:
        sys.stdout.write(source_sql(a.rows, a.marker))
        return 0
    if a.print_halves_sql:
        sys.stdout.write(halves_sql(t['db'], t['table'], a.rows, a.marker))
        return 0
    if a.write_rows:
        with open(a.write_rows, 'wb') as f:
            subprocess.run(mariadb_cmd(a.src_port, 'SELECT %s FROM %s.%s ORDER BY id' % (
                t['select'], t['db'], t['table'])), stdout=f, check=True)
        return 0
    tools = [x for x in a.tools.split(',') if x]
    for x in tools:
        if x not in ALL_TOOLS:
            ap.error('unknown tool %s' % x)
    tools = [x for x in ALL_TOOLS if x in tools]
    doc = {'benchmark': a.name, 'date': time.strftime('%Y-%m-%d'), 'host': B.host_facts(),
           'build': B.build_facts(), 'pgloader_version': B.sh('pgloader', '--version').replace('\n', ', '),
           'table': '%s.%s' % (t['db'], t['table']), 'rows': a.rows, 'chunk_rows': a.chunk_rows,
           'runs': a.runs, 'pg_options': a.pg_options.split(), 'pgloader_heap_mb': a.pgloader_heap_mb,
           'rows_file_bytes': os.path.getsize(a.rows_file),
           'statistic': 'best (min) seconds of the runs, tools interleaved', 'tools': tools,
           'loadavg_before': B.loadavg()}
    B.log('%s.%s: load average %s; %d rounds of %s' % (t['db'], t['table'], ' '.join(doc['loadavg_before']),
                                                       a.runs, ', '.join(tools)))
    bench = Bench(a)
    doc['results'] = B.interleave(tools, a.runs, bench.run)
    doc['loadavg_after'] = B.loadavg()
    doc['busy'] = B.busy_note(doc['loadavg_before'], doc['loadavg_after'], own=2.0)
    doc['types'] = bench.types
    doc['pgloader_phases'] = bench.pgloader_notes
    return report(a, doc, tools)


if __name__ == '__main__':
    sys.exit(main())
