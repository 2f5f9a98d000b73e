#!/usr/bin/python3
"""bench/streaming/streaming.py -- the timed part of bench/streaming/run.sh
(issue #3's benchmark): end-to-end changes/s from a MariaDB binlog backlog to
a consumer, binlog_fdw side by side with the anchors, rounds interleaved.

Tools (each reads the whole workload binlog from its first byte, best of
--runs, order rotated every round):
  fdw-get-client   binlog_fdw worker from 'earliest'; one client loops
                   COPY (SELECT * FROM binlog_fdw.get('src', 10000, 1000)) TO
                   STDOUT + ack(): every column of every change reaches the
                   client (text), as a Canal-style consumer gets it
  fdw-get-large    the same with get('src', 1000000, 1000) and the changes
                   counted in the server (SELECT max(batch_id), count(*) FROM
                   get(): every change, BEGIN and COMMIT too, until the
                   workload's last): large batches, nothing shipped
  fdw-get-json-client, fdw-get-json-large
                   the same two with get_json(): row images as json text
                   (the decoder's), no jsonb built or printed
  fdw-jsonl-client binlog_fdw worker from 'earliest'; one client loops
                   SELECT ... lines FROM binlog_fdw.get_jsonl('src', 10000,
                   1000) + ack(): each batch reaches the client as one text
                   value of JSON lines (fetched as bytes; the lines of the
                   first batches counted)
  fdw-jsonl-large  get_jsonl('src', 1000000, 1000) (batches of up to
                   binlog_fdw.jsonl_max_bytes of text) + ack(), the text made
                   in the server but not shipped: the rate of get in
                   PostgreSQL itself
  fdw-jsonl-psycopg  the client recipe clients/python/binlog_fdw_stream.py
                   (psycopg 3, libpq pipeline mode): get_jsonl('src',
                   --pipe-batch, 1000) with --pipe-depth gets in flight, acks
                   sent behind them; each batch's text reaches the client
                   as bytes, its changes counted
  fdw-jsonl-node   the same with clients/node/binlog_fdw_stream.mjs
                   (node-postgres; bench/streaming/recipe_node.mjs), the
                   text as JS strings
  mariadb-binlog   mariadb-binlog -R --base64-output=decode-rows --verbose
                   (read from the server, rows decoded) > /dev/null
  zongji           zongji@0.5.1, rows decoded to JS values, counted
  vlasky-zongji    @vlasky/zongji@0.9.0, the same
  replica-io       a MariaDB replica's IO thread (SQL thread stopped): time
                   until Read_Master_Log_Pos reaches the end of the binlog
"""
import argparse
import io
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import benchlib as B  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ALL_TOOLS = ['fdw-get-client', 'fdw-get-large', 'fdw-get-json-client', 'fdw-get-json-large',
             'fdw-jsonl-client', 'fdw-jsonl-large', 'fdw-jsonl-psycopg', 'fdw-jsonl-node',
             'mariadb-binlog', 'zongji', 'vlasky-zongji', 'replica-io']
DEFAULT_TOOLS = ['fdw-get-client', 'fdw-get-large', 'fdw-jsonl-client', 'fdw-jsonl-large',
                 'fdw-jsonl-psycopg', 'fdw-jsonl-node',
                 'mariadb-binlog', 'zongji', 'vlasky-zongji', 'replica-io']      # run.sh's default
LABELS = {
    'fdw-get-client': 'binlog_fdw get+ack, 10k batches to the client',
    'fdw-get-large': 'binlog_fdw get+ack, large batches counted in the server',
    'fdw-get-json-client': 'binlog_fdw get_json+ack, 10k batches to the client',
    'fdw-get-json-large': 'binlog_fdw get_json+ack, large batches counted in the server',
    'fdw-jsonl-client': 'binlog_fdw get_jsonl+ack, 10k batches to the client',
    'fdw-jsonl-large': 'binlog_fdw get_jsonl+ack, large batches in the server',
    'fdw-jsonl-psycopg': 'binlog_fdw pipelined get_jsonl+ack, Python psycopg 3 recipe',
    'fdw-jsonl-node': 'binlog_fdw pipelined get_jsonl+ack, node-postgres recipe',
    'mariadb-binlog': 'mariadb-binlog -R --verbose decode-rows',
    'zongji': 'zongji 0.5.1',
    'vlasky-zongji': '@vlasky/zongji 0.9.0',
    'replica-io': 'MariaDB replica IO thread',
}
SHORT = {
    'fdw-get-client': 'binlog_fdw\nget+ack client',
    'fdw-get-large': 'binlog_fdw\nget large, count',
    'fdw-get-json-client': 'binlog_fdw\nget_json+ack client',
    'fdw-get-json-large': 'binlog_fdw\nget_json large, count',
    'fdw-jsonl-client': 'binlog_fdw\nget_jsonl+ack client',
    'fdw-jsonl-large': 'binlog_fdw\nget_jsonl large',
    'fdw-jsonl-psycopg': 'binlog_fdw pipelined\npsycopg 3 client',
    'fdw-jsonl-node': 'binlog_fdw pipelined\nnode-postgres client',
    'mariadb-binlog': 'mariadb-binlog -R\n-v decode-rows',
    'zongji': 'zongji\n0.5.1',
    'vlasky-zongji': '@vlasky/zongji\n0.9.0',
    'replica-io': 'MariaDB replica\nIO thread',
}
TARGET_X_ZONGJI = 3.0


class CountSink(io.RawIOBase):
    """COPY TO STDOUT target: counts bytes and row changes, keeps the first field."""

    def __init__(self):
        self.bytes = 0
        self.rows = 0
        self.first = None

    def writable(self):
        return True

    def write(self, b):
        b = bytes(b)
        if self.first is None:
            self.first = b[:64]
        self.bytes += len(b)
        self.rows += b.count(b'\tinsert\t') + b.count(b'\tupdate\t') + b.count(b'\tdelete\t')
        return len(b)


class Bench:
    def __init__(self, a):
        self.a = a
        self.src_pid = B.mariadbd_pid('bsrc')
        self.repl_pid = B.mariadbd_pid('brepl')
        self.profiles = {}
        # every change of the workload (gen_workload.py): two DDL statements,
        # then transactions of rows_per_transaction rows, each with its
        # BEGIN and COMMIT
        self.expected_changes = 2 + a.expected_rows + 2 * a.expected_rows // a.rows_per_txn

    # ---- binlog_fdw ----
    def fdw(self, tool, profile=None):
        a = self.a
        conn = B.pg(a.pg_port, 'bench', app='bench-streaming')
        B.q(conn, "SELECT binlog_fdw.stop('src')")
        B.q(conn, "SELECT binlog_fdw.reset('src')")
        backend = B.q1(conn, 'SELECT pg_backend_pid()')
        b0 = B.proc_cpu(backend)
        s0 = B.proc_cpu(self.src_pid)
        c0 = time.process_time()
        sampler = B.MemSampler()
        sampler.watch('backend', backend)
        sampler.start()
        total = nbytes = batches = 0
        t0 = time.perf_counter()
        wpid = B.start_source(conn, 'src')
        sampler.watch('worker', wpid)
        perfs = {}
        if profile is not None:
            perfs = {'worker': B.Perf(wpid, profile + '-worker.data'),
                     'consumer backend': B.Perf(backend, profile + '-backend.data')}
        cur = conn.cursor()
        fn = 'get_json' if tool.startswith('fdw-get-json-') else 'get'
        jsonl = tool.startswith('fdw-jsonl-')
        if jsonl:
            # the lines as bytes, as a consumer that forwards them gets them
            import psycopg2.extensions
            psycopg2.extensions.register_type(psycopg2.extensions.BYTES, cur)
        changes = 0
        while total < a.expected_rows:
            if jsonl:
                # counts every change (BEGIN, COMMIT and DDL too): the run
                # ends with the workload's last one (Bench.expected_changes)
                if tool == 'fdw-jsonl-client':
                    cur.execute("SELECT batch_id, changes, lines FROM binlog_fdw.get_jsonl('src', %s, 1000)",
                                (a.get_batch,))
                else:
                    cur.execute("SELECT batch_id, changes, NULL FROM binlog_fdw.get_jsonl('src', %s, 1000)",
                                (a.get_large,))
                row = cur.fetchone()
                if row is None:
                    continue
                bid, n, lines = row
                if lines is not None:
                    # a consumer that forwards the lines: the text checked
                    # whole (its lines counted) for the first batches only
                    # (counting bytes in Python costs more than the rest)
                    if not lines.endswith(b'\n') or (batches < 3 and lines.count(b'\n') != n):
                        raise RuntimeError('batch %d: %d lines for %d changes' % (bid, lines.count(b'\n'), n))
                    nbytes += len(lines)
                changes += n
                n = a.expected_rows - total if changes >= self.expected_changes else 0
            elif tool.endswith('-client'):
                sink = CountSink()
                cur.copy_expert("COPY (SELECT * FROM binlog_fdw.%s('src', %d, 1000)) TO STDOUT"
                                % (fn, a.get_batch), sink)
                if sink.first is None:
                    continue
                bid = int(sink.first.split(b'\t', 1)[0])
                n = sink.rows
                nbytes += sink.bytes
            else:
                # every change counted, as for get_jsonl
                cur.execute("SELECT max(batch_id), count(*) FROM binlog_fdw.%s('src', %%s, 1000)" % fn,
                            (a.get_large,))
                bid, n = cur.fetchone()
                if bid is None:
                    continue
                changes += n
                n = a.expected_rows - total if changes >= self.expected_changes else 0
            cur.execute("SELECT binlog_fdw.ack('src', %s)", (bid,))
            total += n
            batches += 1
            if time.perf_counter() - t0 > a.timeout:
                break
        secs = time.perf_counter() - t0
        for p in perfs.values():
            p.stop()
        if perfs:
            self.profiles[tool] = {k: {'self': p.top(15), 'children': p.top(12, children=True)}
                                   for k, p in perfs.items()}
        wcpu = B.proc_cpu(wpid)
        st = dict(zip(['peak', 'changes', 'state', 'error'], B.q(
            conn, "SELECT worker_peak_rss_kb, changes_total, state, last_error FROM binlog_fdw.status"
                  " WHERE server = 'src'")[0]))
        peak = sampler.stop()
        out = {
            'seconds': secs, 'rows': total, 'batches': batches, 'client_bytes': nbytes,
            'cpu_s': {'worker': wcpu, 'backend': B.proc_cpu(backend) - b0,
                      'client': time.process_time() - c0,
                      'source mariadbd': B.proc_cpu(self.src_pid) - s0},
            'peak_kb': {'worker VmHWM (status)': st['peak'],
                        'worker RssAnon': peak.get('worker', {}).get('RssAnon'),
                        'worker VmHWM': peak.get('worker', {}).get('VmHWM'),
                        'backend RssAnon': peak.get('backend', {}).get('RssAnon'),
                        'backend VmHWM': peak.get('backend', {}).get('VmHWM')},
            'worker_changes_total': st['changes'],
        }
        if total < a.expected_rows:
            out['error'] = 'only %d of %d rows after %.0f s (state %s, %s)' % (
                total, a.expected_rows, secs, st['state'], st['error'])
        elif (jsonl or tool.endswith('-large')) and changes != self.expected_changes:
            out['error'] = '%d changes, the workload has %d' % (changes, self.expected_changes)
        B.q(conn, "SELECT binlog_fdw.stop('src')")
        conn.close()
        return out

    # ---- binlog_fdw through the client recipes (clients/) ----
    def fdw_recipe(self, tool, profile=None):
        a = self.a
        conn = B.pg(a.pg_port, 'bench', app='bench-streaming')
        B.q(conn, "SELECT binlog_fdw.stop('src')")
        B.q(conn, "SELECT binlog_fdw.reset('src')")
        node = None
        if tool == 'fdw-jsonl-psycopg':
            sys.path.insert(0, os.path.join(B.ROOT, 'clients', 'python'))
            from binlog_fdw_stream import Consumer
            cons = Consumer('host=%s port=%d user=postgres dbname=bench application_name=bench-recipe'
                            % (B.INST, a.pg_port), 'src', max_changes=a.pipe_batch, timeout_ms=1000,
                            depth=a.pipe_depth)
            backend = None
        else:
            env = dict(os.environ, PGHOST=B.INST, PGPORT=str(a.pg_port), PGUSER='postgres',
                       PGDATABASE='bench', PGAPPNAME='bench-recipe')
            node = subprocess.Popen(['node', os.path.join(HERE, 'recipe_node.mjs'), str(a.pipe_batch),
                                     str(a.pipe_depth), str(self.expected_changes)],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=HERE)
            backend = json.loads(node.stdout.readline())['pid']
        sampler = B.MemSampler()
        s0 = B.proc_cpu(self.src_pid)
        c0 = time.process_time()
        t0 = time.perf_counter()
        wpid = B.start_source(conn, 'src')
        sampler.watch('worker', wpid)
        changes = nbytes = batches = 0
        t_end = None
        if node is None:
            cons.connect()      # its rollback() needs the source started
            backend = cons.backend_pid
        sampler.watch('backend', backend)
        sampler.start()
        b0 = B.proc_cpu(backend)
        perfs = {}
        if profile is not None:
            perfs = {'worker': B.Perf(wpid, profile + '-worker.data'),
                     'consumer backend': B.Perf(backend, profile + '-backend.data')}
        if node is None:
            for b in cons.batches(stop=lambda: changes >= self.expected_changes or
                                  time.perf_counter() - t0 > a.timeout):
                if batches < 3 and b.lines.count(b'\n') != b.changes:
                    raise RuntimeError('batch %d: %d lines for %d changes' % (
                        b.batch_id, b.lines.count(b'\n'), b.changes))
                changes += b.changes
                nbytes += len(b.lines)
                batches += 1
                cons.ack(b)
                if changes >= self.expected_changes:
                    t_end = time.perf_counter()     # the last change arrived
            # the acks made durable (and the gets in flight, which wait up
            # to their timeout for changes that do not come, answered): not
            # timed, as a replica's shutdown is not
            cons.sync()
        else:
            node.stdin.write(b'go\n')
            node.stdin.flush()
            line = node.stdout.readline()
            t_end = time.perf_counter()
            r = json.loads(line) if line else {}
            changes, nbytes, batches = r.get('changes', 0), r.get('bytes', 0), r.get('batches', 0)
        secs = (t_end or time.perf_counter()) - t0
        bcpu = B.proc_cpu(backend)
        for p in perfs.values():
            p.stop()
        if perfs:
            self.profiles[tool] = {k: {'self': p.top(15), 'children': p.top(12, children=True)}
                                   for k, p in perfs.items()}
        ccpu = time.process_time() - c0
        if node is not None:
            node.stdin.close()
            _, status, ru = os.wait4(node.pid, 0)
            ccpu = ru.ru_utime + ru.ru_stime
        else:
            cons.close()
        wcpu = B.proc_cpu(wpid)
        st = dict(zip(['peak', 'changes', 'state', 'error'], B.q(
            conn, "SELECT worker_peak_rss_kb, changes_total, state, last_error FROM binlog_fdw.status"
                  " WHERE server = 'src'")[0]))
        peak = sampler.stop()
        out = {
            'seconds': secs, 'rows': a.expected_rows if changes >= self.expected_changes else 0,
            'batches': batches, 'client_bytes': nbytes,
            'cpu_s': {'worker': wcpu, 'backend': (bcpu - b0) if bcpu is not None and b0 is not None else None,
                      'client': ccpu, 'source mariadbd': B.proc_cpu(self.src_pid) - s0},
            'peak_kb': {'worker VmHWM (status)': st['peak'],
                        'worker RssAnon': peak.get('worker', {}).get('RssAnon'),
                        'worker VmHWM': peak.get('worker', {}).get('VmHWM'),
                        'backend RssAnon': peak.get('backend', {}).get('RssAnon'),
                        'backend VmHWM': peak.get('backend', {}).get('VmHWM')},
            'worker_changes_total': st['changes'],
            'settings': {'max_changes': a.pipe_batch, 'depth': a.pipe_depth},
        }
        if changes != self.expected_changes:
            out['error'] = '%d changes, the workload has %d (state %s, %s)' % (
                changes, self.expected_changes, st['state'], st['error'])
        B.q(conn, "SELECT binlog_fdw.stop('src')")
        conn.close()
        return out

    # ---- external clients ----
    def external(self, tool):
        a = self.a
        if tool == 'mariadb-binlog':
            argv = ['mariadb-binlog', '--no-defaults', '-R', '-h127.0.0.1', '-P%d' % a.src_port,
                    '-urepl', '-prepl', '--base64-output=decode-rows', '--verbose',
                    '--to-last-log', 'mysql-bin.000001']
            stdout = subprocess.DEVNULL
        else:
            pkg = 'zongji' if tool == 'zongji' else '@vlasky/zongji'
            argv = ['node', os.path.join(HERE, 'zongji_count.mjs'), pkg, str(a.src_port),
                    str(a.expected_rows)]
            stdout = subprocess.PIPE
        s0 = B.proc_cpu(self.src_pid)
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.PIPE, cwd=HERE)
        outb = b''
        if stdout == subprocess.PIPE:
            outb = p.stdout.read()
        errb = p.stderr.read()
        _, status, ru = os.wait4(p.pid, 0)
        secs = time.perf_counter() - t0
        rc = os.waitstatus_to_exitcode(status)
        out = {'seconds': secs, 'rows': a.expected_rows,
               'cpu_s': {'client': ru.ru_utime + ru.ru_stime,
                         'source mariadbd': B.proc_cpu(self.src_pid) - s0},
               'peak_kb': {'client maxrss': ru.ru_maxrss}, 'command': ' '.join(argv)}
        if tool != 'mariadb-binlog':
            try:
                j = json.loads(outb.decode().strip().splitlines()[-1])
                out['rows'] = j['rows']
                out['events'] = j['events']
            except (ValueError, IndexError, KeyError):
                rc = rc or 1
        if rc != 0:
            out['error'] = 'exit %d: %s' % (rc, errb.decode(errors='replace')[-400:])
        return out

    # ---- replica IO thread ----
    def replica_io(self, tool):
        a = self.a
        c = B.mdb('brepl', dict_cursor=True)
        B.mx(c, 'STOP SLAVE')
        B.mx(c, 'RESET SLAVE ALL')
        B.mx(c, "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER='repl', "
                "MASTER_PASSWORD='repl', MASTER_LOG_FILE='mysql-bin.000001', MASTER_LOG_POS=4, "
                "MASTER_USE_GTID=no" % a.src_port)
        s0 = B.proc_cpu(self.src_pid)
        r0 = B.proc_cpu(self.repl_pid)
        t0 = time.perf_counter()
        B.mx(c, 'START SLAVE IO_THREAD')
        err = B.replica_wait(c, 'io', a.end_file, a.end_pos, a.timeout)
        secs = time.perf_counter() - t0
        out = {'seconds': secs, 'rows': a.expected_rows,
               'cpu_s': {'replica mariadbd': B.proc_cpu(self.repl_pid) - r0,
                         'source mariadbd': B.proc_cpu(self.src_pid) - s0},
               'peak_kb': {}}
        B.mx(c, 'STOP SLAVE')
        B.mx(c, 'RESET SLAVE ALL')
        c.close()
        if err:
            out['error'] = err
        return out

    def run(self, tool, rnd):
        if tool in ('fdw-jsonl-psycopg', 'fdw-jsonl-node'):
            r = self.fdw_recipe(tool)
        elif tool.startswith('fdw-'):
            r = self.fdw(tool)
        elif tool == 'replica-io':
            r = self.replica_io(tool)
        else:
            r = self.external(tool)
        r['rows_per_s'] = r['rows'] / r['seconds'] if r['seconds'] else None
        return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--runs', type=int, default=3)
    ap.add_argument('--tools', default=','.join(ALL_TOOLS))
    ap.add_argument('--pg-port', type=int, required=True)
    ap.add_argument('--src-port', type=int, required=True)
    ap.add_argument('--end-file', required=True)
    ap.add_argument('--end-pos', type=int, required=True)
    ap.add_argument('--expected-rows', type=int, required=True)
    ap.add_argument('--get-batch', type=int, default=10000)
    ap.add_argument('--get-large', type=int, default=1000000)
    ap.add_argument('--pipe-batch', type=int, default=5000,
                    help='max_changes of the pipelined recipe tools (fdw-jsonl-psycopg, fdw-jsonl-node)')
    ap.add_argument('--pipe-depth', type=int, default=2, help='gets in flight of the recipe tools')
    ap.add_argument('--timeout', type=float, default=600)
    ap.add_argument('--cache', required=True)
    ap.add_argument('--results', required=True)
    ap.add_argument('--name', default='streaming')
    ap.add_argument('--profile', choices=['auto', 'yes', 'no'], default='auto',
                    help='perf-profile one extra run of each binlog_fdw variant (auto: when a target is missed)')
    a = ap.parse_args()
    tools = [t for t in a.tools.split(',') if t]
    meta = json.load(open(os.path.join(a.cache, 'meta.json')))
    nbytes = sum(f['bytes'] for f in meta['files'])
    a.rows_per_txn = meta['workload']['rows_per_transaction']

    build = B.build_facts()     # now: run.sh has just (re)started PostgreSQL
    load_before = B.loadavg()
    B.log('timing %d rounds of %s (load average %s)' % (a.runs, ', '.join(tools), ' '.join(load_before)))
    bench = Bench(a)
    res = B.interleave(tools, a.runs, bench.run)
    load_after = B.loadavg()

    # ---- summary ----
    summary = {}
    for t in tools:
        b = B.best(res[t])
        if b:
            summary[t] = b
    zj = [summary[t]['rows_per_s'] for t in ('zongji', 'vlasky-zongji') if t in summary]
    faster_zj = max(zj) if zj else None
    io_rate = summary.get('replica-io', {}).get('rows_per_s')
    for t, b in summary.items():
        b['x_faster_zongji'] = b['rows_per_s'] / faster_zj if faster_zj else None
        b['x_replica_io'] = b['rows_per_s'] / io_rate if io_rate else None
    fdw_best_tool = max((t for t in summary if t.startswith('fdw-')),
                        key=lambda t: summary[t]['rows_per_s'], default=None)
    fdw_best = summary[fdw_best_tool] if fdw_best_tool else None
    targets = []
    for t, what in (('fdw-get-client', 'get+ack'), ('fdw-get-json-client', 'get_json+ack'),
                    ('fdw-jsonl-client', 'get_jsonl+ack'),
                    ('fdw-jsonl-psycopg', 'pipelined get_jsonl+ack, psycopg 3'),
                    ('fdw-jsonl-node', 'pipelined get_jsonl+ack, node-postgres')):
        r = summary.get(t)
        if r and faster_zj:
            targets.append({'name': 'binlog_fdw %s (client) >= 3x the faster zongji' % what,
                            'measured': round(r['x_faster_zongji'], 2), 'target': TARGET_X_ZONGJI,
                            'pass': r['x_faster_zongji'] >= TARGET_X_ZONGJI})
    for t, what in (('fdw-jsonl-psycopg', 'psycopg 3'), ('fdw-jsonl-node', 'node-postgres')):
        r = summary.get(t)
        if r and io_rate:
            targets.append({'name': 'binlog_fdw pipelined client (%s) >= the replica IO thread rate' % what,
                            'measured': round(r['x_replica_io'], 2), 'target': 1.0,
                            'pass': r['x_replica_io'] >= 1.0})
    if fdw_best and faster_zj:
        targets.append({'name': 'best binlog_fdw variant (%s) >= 3x the faster zongji' % fdw_best_tool,
                        'measured': round(fdw_best['x_faster_zongji'], 2), 'target': TARGET_X_ZONGJI,
                        'pass': fdw_best['x_faster_zongji'] >= TARGET_X_ZONGJI})
    if fdw_best and io_rate:
        targets.append({'name': 'best binlog_fdw variant (%s) >= the replica IO thread rate' % fdw_best_tool,
                        'measured': round(fdw_best['x_replica_io'], 2), 'target': 1.0,
                        'pass': fdw_best['x_replica_io'] >= 1.0})
    peak_worker = None
    for t in summary:
        if t.startswith('fdw-'):
            for r in res[t]:
                v = r.get('peak_kb', {}).get('worker VmHWM (status)')
                peak_worker = max(peak_worker or 0, v or 0)

    missed = not targets or not all(t['pass'] for t in targets)
    if a.profile == 'yes' or (a.profile == 'auto' and missed):
        if B.perf_usable():
            import tempfile
            tmpd = tempfile.mkdtemp(prefix='blf-perf-')
            for t in tools:
                if t.startswith('fdw-'):
                    B.log('profiling one more run of %s (perf record -e cpu-clock on the worker and '
                          'the consumer backend)' % t)
                    r = (bench.fdw_recipe if t in ('fdw-jsonl-psycopg', 'fdw-jsonl-node') else bench.fdw)(
                        t, profile=os.path.join(tmpd, t))
                    bench.profiles.setdefault(t, {})['run'] = {
                        'seconds': r['seconds'], 'cpu_s': r['cpu_s']}
        else:
            B.log('perf is not usable here: no profile')

    date = time.strftime('%Y-%m-%d')
    doc = {
        'benchmark': a.name, 'date': date, 'host': B.host_facts(), 'build': build,
        'workload': {'generator_version': meta['generator_version'], **meta['workload'],
                     'bytes': nbytes, 'events': meta['binlogcat_count']['events'],
                     'row_changes': a.expected_rows, 'files': meta['files'],
                     'end': '%s:%d' % (a.end_file, a.end_pos)},
        'settings': {'ring_size': B.q1(B.pg(a.pg_port, 'bench'), 'SHOW binlog_fdw.ring_size'),
                     'get_batch': a.get_batch, 'get_large': a.get_large, 'runs': a.runs,
                     'pipe_batch': a.pipe_batch, 'pipe_depth': a.pipe_depth,
                     'statistic': 'best (min) wall seconds of the runs, tools interleaved'},
        'loadavg_before': load_before, 'loadavg_after': load_after,
        'busy': B.busy_note(load_before, load_after, own=2.0),
        'results': res, 'best': summary, 'targets': targets,
        'worker_peak_rss_kb': peak_worker,
        'profiles': bench.profiles,
    }

    hdr = ['tool', 'seconds', 'rows/s', 'MB/s', 'x zongji*', 'x replica IO', 'CPU s (where)',
           'backend us/row', 'source CPU s', 'peak RSS MB']
    rows = []
    for t in tools:
        b = summary.get(t)
        if not b:
            rows.append([LABELS[t], 'failed', '', '', '', '', '', '', '', ''])
            continue
        cpu = b['cpu_s']
        where = ' + '.join('%s %.2f' % (k, v) for k, v in cpu.items()
                           if k != 'source mariadbd' and v is not None)
        pk = b.get('peak_kb', {})
        rss = pk.get('worker VmHWM (status)') or pk.get('client maxrss')
        rows.append([LABELS[t], '%.2f' % b['seconds'], B.fmt_int(b['rows_per_s']),
                     '%.0f' % (nbytes / 1e6 / b['seconds']), B.fmt(b['x_faster_zongji']),
                     B.fmt(b['x_replica_io']), where,
                     B.fmt(cpu['backend'] * 1e6 / b['rows'] if cpu.get('backend') and b.get('rows') else None),
                     B.fmt(cpu.get('source mariadbd')),
                     B.fmt(rss / 1024 if rss else None, '%.1f')])
    host = doc['host']
    print()
    print('streaming benchmark (issue #3), %s workload, %s, %s, %d CPUs' % (
        meta['workload'].get('table', 'standard'), date, host['cpu_model'], host['cpus_online']))
    print('workload: %s row changes, %.1f MB of binlog, %s events; best of %d runs, tools interleaved' % (
        B.fmt_int(a.expected_rows), nbytes / 1e6, B.fmt_int(doc['workload']['events']), a.runs))
    print('load average before %s, after %s. %s' % (' '.join(load_before), ' '.join(load_after), doc['busy']))
    print(B.table(hdr, rows))
    print('* x zongji: against the faster zongji of this run; peak RSS: the worker\'s VmHWM for '
          'binlog_fdw (it counts the ring\'s shared memory it touched), the process\'s maxrss otherwise')
    for t in targets:
        print('target %-56s %s (measured %.2fx)' % (t['name'], 'PASS' if t['pass'] else 'FAIL', t['measured']))
    print('binlog_fdw worker peak RSS (status.worker_peak_rss_kb): %s kB' % B.fmt_int(peak_worker))

    os.makedirs(a.results, exist_ok=True)
    base = os.path.join(a.results, '%s-%s' % (a.name, date))
    B.write_json(base + '.json', doc)
    png = os.path.join(a.results, '%s.png' % a.name)
    labels = [SHORT[t] for t in tools if t in summary]
    vals = [summary[t]['rows_per_s'] for t in tools if t in summary]
    colors = ['#d9822b' if t.startswith('fdw-') else '#3b75af' for t in tools if t in summary]
    hl = []
    if faster_zj:
        hl.append((TARGET_X_ZONGJI * faster_zj, 'target: 3x faster zongji', '#cc0000'))
    if io_rate:
        hl.append((io_rate, 'target: replica IO thread', '#2a8a2a'))
    have_png = B.bar_chart(png, 'MariaDB binlog backlog -> consumer, %s row changes (%s, best of %d)' % (
        B.fmt_int(a.expected_rows), date, a.runs), labels, vals, 'row changes per second', hl, colors)

    md = ['## Streaming benchmark (issue #3), %s workload, %s' % (meta['workload'].get('table', 'standard'), date), '',
          'Host: %s, %d CPUs, %s GB, %s. %s; %s; %s.' % (
              host['cpu_model'], host['cpus_online'], host['mem_gb'], host['kernel'],
              B.build_md(doc['build']), doc['build']['postgres'], doc['build']['mariadbd']), '',
          'Workload (bench/decoder/gen_workload.py v%s): %s row changes (%s inserts, %s updates, '
          '%s deletes, %d per transaction) in %s, %.1f MB of binlog, %s events, served by a MariaDB 10.11 source over TCP '
          'on loopback; every tool reads it from its first byte to its end. binlog_fdw: ring %s, the '
          'worker started with `start => earliest` when the timer starts.' % (
              meta['generator_version'], B.fmt_int(a.expected_rows), B.fmt_int(meta['workload']['inserted']),
              B.fmt_int(meta['workload']['updated']), B.fmt_int(meta['workload']['deleted']), a.rows_per_txn,
              'wide40 (40 columns: bigint, int, 7 double, float, 5 decimal, 4 datetime(6), date, time(6), '
              '3 json, 3 text, 2 blob, 4 varchar, char, 4 integers, enum, year)'
              if meta['workload'].get('table') == 'wide' else
              'sbtest1 (bigint, int, varchar, char, decimal, datetime(6), json)', nbytes / 1e6,
              B.fmt_int(doc['workload']['events']), doc['settings']['ring_size']), '',
          'Best of %d runs, tools interleaved round by round (order rotated). Load average %s before, '
          '%s after. %s' % (a.runs, ' '.join(load_before), ' '.join(load_after), doc['busy']), '',
          'Every process (servers, anchors, the Python consumer) ran with MALLOC_MMAP_THRESHOLD_=%s '
          'and MALLOC_TRIM_THRESHOLD_=%s: glibc keeps the memory it frees rather than faulting it in '
          'again (binlog_fdw\'s consumer backends set the same with mallopt()).' % (
              os.environ.get('MALLOC_MMAP_THRESHOLD_', 'unset'),
              os.environ.get('MALLOC_TRIM_THRESHOLD_', 'unset')), '',
          B.table(hdr, rows, md=True), '',
          '`x zongji`: against the faster zongji of this run. CPU: user+system seconds of each process '
          'during the run (worker = binlog_fdw\'s background worker, backend = the consumer\'s '
          'PostgreSQL backend, client = the consumer process); backend us/row: the backend\'s CPU '
          'per row change. Peak RSS: the worker\'s VmHWM '
          '(`status.worker_peak_rss_kb`, which counts the ring\'s shared memory it touched) for '
          'binlog_fdw, maxrss otherwise.', '']
    if targets:
        md += ['| target | measured | result |', '|---|---:|---|']
        md += ['| %s | %.2f× | %s |' % (t['name'], t['measured'], 'pass' if t['pass'] else '**FAIL**')
               for t in targets]
        md.append('')
    md.append('binlog_fdw worker peak RSS: %s kB (VmHWM; its own anonymous memory peaked at %s kB).' % (
        B.fmt_int(peak_worker), B.fmt_int(max((r.get('peak_kb', {}).get('worker RssAnon') or 0)
                                              for t in summary if t.startswith('fdw-') for r in res[t])
                                          if any(t.startswith('fdw-') for t in summary) else None)))
    md.append('')
    md.append('All runs (seconds): ' + '; '.join('%s: %s' % (t, ', '.join(
        ('%.2f' % r['seconds']) + (' (failed)' if r.get('error') else '') for r in res[t])) for t in tools))
    md.append('')
    if have_png:
        md.append('![streaming](%s.png)' % a.name)
        md.append('')
    md.append('Reproduce: `bash bench/streaming/run.sh --runs %d%s` (JSON: `%s`).' % (
        a.runs, '' if tools == DEFAULT_TOOLS else ' --tools ' + ','.join(tools),
        os.path.basename(base + '.json')))
    md.append('')
    for t, prof in bench.profiles.items():
        run = prof.pop('run', None)
        md += B.profile_md('Profile of %s%s' % (LABELS[t], ' (profiled run: %.1f s, CPU %s)' % (
            run['seconds'], ', '.join('%s %.2f s' % (k, v) for k, v in run['cpu_s'].items() if v is not None))
            if run else ''), prof)
        for who, p in prof.items():
            print('profile of %s, %s (self):' % (t, who))
            for x in p['self'][:10]:
                print('  %5.1f%%  %s  [%s]' % (x['percent'], x['symbol'], x['dso']))
    with open(base + '.md', 'w') as f:
        f.write('\n'.join(md) + '\n')
    print('wrote %s.json, %s.md%s' % (base, base, ', ' + png if have_png else ''))
    return 0 if targets and all(t['pass'] for t in targets) else 1


if __name__ == '__main__':
    sys.exit(main())
