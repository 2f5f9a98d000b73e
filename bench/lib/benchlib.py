"""bench/lib/benchlib.py -- helpers of the streaming and apply benchmarks:
process CPU time and memory from /proc, a memory sampler, host and build
facts, connections, interleaved rounds, the printed table, the Markdown
and JSON result files and matplotlib charts.
"""
import hashlib
import json
import os
import re
import subprocess
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
INST = os.environ.get('BENCH_INST') or os.path.join(
    os.environ.get('BLF_RUN', '/var/tmp/binlog_fdw'), 'bench', 'inst')
CLK_TCK = os.sysconf('SC_CLK_TCK')


def log(msg):
    print('bench: ' + msg, flush=True, file=__import__('sys').stderr)


# ---------------------------------------------------------------------------
# /proc

def proc_cpu(pid):
    """user+system CPU seconds of a process (all its threads), or None."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            st = f.read().rsplit(')', 1)[1].split()
        return (int(st[11]) + int(st[12])) / CLK_TCK
    except (OSError, ValueError, IndexError, TypeError):
        return None


def proc_mem(pid):
    """VmHWM, VmRSS, RssAnon, RssFile, RssShmem of a process in kB."""
    out = {}
    try:
        with open('/proc/%d/status' % pid) as f:
            for line in f:
                k, _, v = line.partition(':')
                if k in ('VmHWM', 'VmRSS', 'RssAnon', 'RssFile', 'RssShmem'):
                    out[k] = int(v.split()[0])
    except (OSError, ValueError, TypeError):
        pass
    return out


def pids_of(comm_prefix, cmdline_part=None):
    pids = []
    for d in os.listdir('/proc'):
        if not d.isdigit():
            continue
        try:
            comm = open('/proc/%s/comm' % d).read().strip()
            if not comm.startswith(comm_prefix):
                continue
            if cmdline_part:
                cl = open('/proc/%s/cmdline' % d, 'rb').read().replace(b'\0', b' ').decode('utf-8', 'replace')
                if cmdline_part not in cl:
                    continue
            pids.append(int(d))
        except OSError:
            continue
    return pids


def mariadbd_pid(name):
    try:
        return int(open(os.path.join(INST, 'mariadb-%s' % name, 'mariadbd.pid')).read().strip())
    except (OSError, ValueError):
        return None


class MemSampler(threading.Thread):
    """Samples /proc/PID/status of some processes every `interval` s and keeps
    the peak of each field (RssAnon is the process's own memory; VmRSS and
    VmHWM also count the shared memory it touched)."""

    def __init__(self, interval=0.05):
        super().__init__(daemon=True)
        self.interval = interval
        self.pids = {}
        self.peak = {}
        self.stop_ev = threading.Event()
        self.lock = threading.Lock()

    def watch(self, label, pid):
        with self.lock:
            if pid:
                self.pids[label] = pid

    def sample(self):
        with self.lock:
            items = list(self.pids.items())
        for label, pid in items:
            m = proc_mem(pid)
            if not m:
                continue
            p = self.peak.setdefault(label, {})
            for k, v in m.items():
                if v > p.get(k, -1):
                    p[k] = v

    def run(self):
        while not self.stop_ev.is_set():
            self.sample()
            self.stop_ev.wait(self.interval)

    def stop(self):
        self.sample()
        self.stop_ev.set()
        self.join()
        return self.peak


# ---------------------------------------------------------------------------
# facts

def sh(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return ''


def loadavg():
    return open('/proc/loadavg').read().split()[:3]


def host_facts():
    lscpu = sh('lscpu')
    model = re.search(r'^Model name:\s*(.+)$', lscpu, re.M)
    mem = re.search(r'^MemTotal:\s*(\d+)', open('/proc/meminfo').read(), re.M)
    return {
        'cpu_model': model.group(1).strip() if model else '?',
        'cpus_online': os.cpu_count(),
        'mem_gb': round(int(mem.group(1)) / 1048576, 1) if mem else None,
        'kernel': sh('uname', '-r'),
        'os': sh('sh', '-c', '. /etc/os-release && echo $PRETTY_NAME'),
    }


def build_facts():
    bindir = os.environ.get('BLF_PG_BINDIR') or '/usr/lib/postgresql/15/bin'
    libdir = sh(os.path.join(bindir, 'pg_config'), '--pkglibdir') or '/usr/lib/postgresql/15/lib'
    so = os.path.join(libdir, 'binlog_fdw.so')
    f = {
        'pg_bindir': bindir,
        'note': os.environ.get('BENCH_BUILD_NOTE', ''),
        'git_head': sh('git', '-C', ROOT, 'rev-parse', 'HEAD'),
        'git_status_lines': len([x for x in sh('git', '-C', ROOT, 'status', '--short').splitlines() if x]),
        'installed_so': so,
    }
    try:
        st = os.stat(so)
        f['installed_so_mtime'] = time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(st.st_mtime))
        f['installed_so_sha256'] = hashlib.sha256(open(so, 'rb').read()).hexdigest()[:16]
    except OSError:
        pass
    f['postgres'] = sh(os.path.join(bindir, 'postgres'), '--version')
    f['mariadbd'] = sh('mariadbd', '--version')
    return f


def build_md(b):
    """One sentence on the binlog_fdw build that was measured."""
    s = ('binlog_fdw at `%s` (%d uncommitted changes in the work tree), %s of %s' % (
        b['git_head'][:12], b['git_status_lines'], b['installed_so'], b.get('installed_so_mtime')))
    if b.get('note'):
        s += ' (%s)' % b['note']
    return s


def busy_note(load_before, load_after, own=1.0):
    """A sentence when other processes loaded the machine."""
    try:
        b = float(load_before[0])
        a = float(load_after[0])
    except (ValueError, IndexError, TypeError):
        return ''
    if max(b, a - own) > 0.5:
        return ('The machine was shared (1-minute load average %.2f before, %.2f after, on %d CPUs; '
                'the benchmark itself adds about %.0f): absolute figures may be pessimistic, '
                'compare the tools within this run.' % (b, a, os.cpu_count() or 0, own))
    return 'The machine was otherwise idle (1-minute load average %.2f before, %.2f after).' % (b, a)


# ---------------------------------------------------------------------------
# connections

def pg(port, db='postgres', autocommit=True, app='bench'):
    import psycopg2
    c = psycopg2.connect(host=INST, port=port, user='postgres', dbname=db, application_name=app)
    c.autocommit = autocommit
    return c


def q(conn, sql, args=None):
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchall() if cur.description else []


def q1(conn, sql, args=None):
    r = q(conn, sql, args)
    return r[0][0] if r else None


def start_source(conn, name, timeout=30):
    """binlog_fdw.start(name); its worker starts at commit: its pid once it runs."""
    q(conn, 'SELECT binlog_fdw.start(%s)', (name,))
    deadline = time.monotonic() + timeout
    while True:
        pid = q1(conn, 'SELECT worker_pid FROM binlog_fdw.status WHERE server = %s', (name,))
        if pid:
            return pid
        if time.monotonic() > deadline:
            raise RuntimeError('the worker of source %s did not start within %ds' % (name, timeout))
        time.sleep(0.005)


def mdb(name, db=None, dict_cursor=False):
    import pymysql
    kw = dict(unix_socket=os.path.join(INST, 'mariadb-%s.sock' % name), user='root',
              charset='utf8mb4', autocommit=True, database=db)
    if dict_cursor:
        kw['cursorclass'] = pymysql.cursors.DictCursor
    return pymysql.connect(**kw)


def mx(conn, sql, args=None):
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchall() if cur.description else []


def replica_wait(conn, thread, end_file, end_pos, timeout, poll=0.01):
    """
    Wait until a MariaDB replica's IO thread (thread 'io': fetched) or SQL
    thread ('sql': executed) reached end_file:end_pos; returns None, or the
    thread's error, or 'timeout'.
    """
    file_col, pos_col, err_col = {
        'io': ('Master_Log_File', 'Read_Master_Log_Pos', 'Last_IO_Error'),
        'sql': ('Relay_Master_Log_File', 'Exec_Master_Log_Pos', 'Last_SQL_Error')}[thread]
    t0 = time.perf_counter()
    while True:
        r = mx(conn, 'SHOW SLAVE STATUS')[0]
        if r[file_col] == end_file and int(r[pos_col]) >= end_pos:
            return None
        if r[err_col]:
            return r[err_col]
        if time.perf_counter() - t0 > timeout:
            return 'timeout'
        time.sleep(poll)


# ---------------------------------------------------------------------------
# rounds

def interleave(tools, runs, fn):
    """Runs fn(tool, round) for each tool, round after round, rotating the
    order each round (A B C, B C A, C A B) so that bursts of load from other
    processes hit all tools alike.  Returns {tool: [result, ...]}."""
    res = {t: [] for t in tools}
    for r in range(runs):
        k = r % len(tools)
        order = tools[k:] + tools[:k]
        for t in order:
            out = fn(t, r)
            out['round'] = r + 1
            out['loadavg'] = loadavg()[0]
            res[t].append(out)
            cpu = out.get('cpu_s') or {}
            log('  round %d  %-22s %s  %s rows/s  CPU s: %s%s' % (
                r + 1, t, fmt(out.get('seconds'), '%.3f s'), fmt_int(out.get('rows_per_s')),
                ', '.join('%s %.2f' % (k2, v) for k2, v in cpu.items() if v is not None),
                ('  ERROR ' + str(out['error'])[:300]) if out.get('error') else ''))
    return res


def best(results, key='seconds'):
    ok = [r for r in results if r.get(key) is not None and not r.get('error')]
    return min(ok, key=lambda r: r[key]) if ok else None


# ---------------------------------------------------------------------------
# output

def fmt_int(n):
    return '?' if n is None else f'{n:,.0f}'


def fmt(v, spec='%.2f'):
    return '-' if v is None else spec % v


def table(headers, rows, md=False):
    rows = [[str(c) for c in r] for r in rows]
    if md:
        out = ['| ' + ' | '.join(headers) + ' |',
               '|' + '|'.join(['---'] + ['---:'] * (len(headers) - 1)) + '|']
        out += ['| ' + ' | '.join(r) + ' |' for r in rows]
        return '\n'.join(out)
    w = [max(len(x[i]) for x in [headers] + rows) for i in range(len(headers))]
    out = ['  '.join(h.ljust(w[i]) if i == 0 else h.rjust(w[i]) for i, h in enumerate(headers))]
    out += ['  '.join(c.ljust(w[i]) if i == 0 else c.rjust(w[i]) for i, c in enumerate(r)) for r in rows]
    return '\n'.join(out)


def write_json(path, doc):
    with open(path, 'w') as f:
        json.dump(doc, f, indent=1, default=str)
        f.write('\n')


def bar_chart(path, title, labels, values, ylabel, hlines=(), colors=None, value_fmt='{:,.0f}'):
    """A horizontal-label bar chart (matplotlib, Agg) with optional target lines
    [(y, label, color)].  Returns False without matplotlib."""
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(10, 5.2), dpi=100)
    xs = range(len(labels))
    bars = ax.bar(xs, values, color=colors or '#3b75af', edgecolor='black', linewidth=0.6)
    for b, v in zip(bars, values):
        ax.annotate(value_fmt.format(v), (b.get_x() + b.get_width() / 2, b.get_height()),
                    ha='center', va='bottom', fontsize=9, xytext=(0, 2), textcoords='offset points')
    for y, lab, col in hlines:
        ax.axhline(y, color=col, linestyle='--', linewidth=1)
        ax.annotate(lab, (-0.45, y), ha='left', va='bottom', color=col, fontsize=9)
    ax.set_xticks(list(xs))
    ax.set_xticklabels(labels, fontsize=9)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=11)
    ax.grid(axis='y', alpha=0.3)
    ymax = max(list(values) + [h[0] for h in hlines] + [1]) * 1.15
    ax.set_ylim(0, ymax)
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f'{v:,.0f}'))
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


# ---------------------------------------------------------------------------
# profiles (perf, timer sampling: no hardware counters needed)

def perf_usable():
    try:
        return subprocess.run(['perf', 'record', '-e', 'cpu-clock', '-o', '/dev/null', '--', 'true'],
                              capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


GENERIC_FRAMES = {
    '__libc_start_call_main', '__libc_start_main', 'main', '_start', 'PostmasterMain', 'ServerLoop',
    'BackendStartup', 'BackendRun', 'PostgresMain', 'exec_simple_query', 'PortalRun', 'PortalRunSelect',
    'standard_ExecutorRun', 'ExecutorRun', 'StartBackgroundWorker', '__restore_rt', 'do_start_bgworker',
    'maybe_start_bgworkers', 'sigusr1_handler', 'entry_SYSCALL_64_after_hwframe', 'do_syscall_64',
}


class Perf:
    """perf record -e cpu-clock -g -p PID until stop(); top() lists the
    functions by self time (and, with children=True, by inclusive time)."""

    def __init__(self, pid, path, freq=499):
        self.path = path
        self.p = subprocess.Popen(['perf', 'record', '-e', 'cpu-clock', '-F', str(freq), '-g',
                                   '-p', str(pid), '-o', path],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop(self):
        import signal
        self.p.send_signal(signal.SIGINT)
        try:
            self.p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()

    def top(self, n=15, children=False):
        args = ['perf', 'report', '-i', self.path, '--stdio', '--sort', 'dso,symbol', '-g', 'none',
                '--children' if children else '--no-children']
        txt = subprocess.run(args, capture_output=True, text=True).stdout
        out = []
        for line in txt.splitlines():
            m = re.match(r'\s*([\d.]+)%\s+(?:([\d.]+)%\s+)?(\S+)\s+\[[.k]\]\s+(.+?)\s*$', line)
            if m:
                sym = re.sub(r'\s+-\s+-\s*$', '', m.group(4)).strip()
                # inclusive lists: skip unresolved addresses and the frames every
                # process has (main loop, executor entry points)
                if children and (re.match(r'^(0x)?[0-9a-f]+$', sym) or sym in GENERIC_FRAMES):
                    continue
                out.append({'percent': float(m.group(1)), 'dso': m.group(3), 'symbol': sym})
            if len(out) >= n:
                break
        return out


def profile_md(title, prof):
    md = ['### %s' % title, '']
    for who, p in prof.items():
        md += ['%s (perf, cpu-clock, self time):' % who, '', '| self % | function | object |',
               '|---:|---|---|']
        md += ['| %.1f | `%s` | %s |' % (x['percent'], x['symbol'], x['dso']) for x in p.get('self', [])]
        md.append('')
        if p.get('children'):
            md += ['%s, inclusive time (children):' % who, '', '| total % | function |', '|---:|---|']
            md += ['| %.1f | `%s` |' % (x['percent'], x['symbol']) for x in p['children']]
            md.append('')
    return md
