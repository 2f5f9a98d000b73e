#!/usr/bin/python3
"""bench/decoder/report.py -- table, JSON, Markdown and chart of run.sh.

  report.py --cache DIR --work DIR --results DIR --expected-rows N
      prints the table, writes RESULTS/decoder-<date>.json and .md and
      RESULTS/decoder.png (when gnuplot exists); exits 1 when a target is
      missed, 0 when all pass.
  report.py --append-profile WORK --results DIR
      adds WORK/perf-top.txt (self time) and perf-children.txt to the
      day's JSON and Markdown.

Inputs come from run.sh (environment BENCH_*).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

TARGET_RATIO = 5.0            # --values rows/s vs mariadb-binlog rows/s
TARGET_ROWS_PER_S = 2_000_000  # --values on one core

TOOLS = ["binlogcat-values", "binlogcat-jsonl", "mariadb-binlog"]
LABELS = {
    "binlogcat-values": "binlogcat --values",
    "binlogcat-jsonl": "binlogcat --rows-only (JSONL)",
    "mariadb-binlog": "mariadb-binlog -v decode-rows",
}


def sh(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return ""


def host_facts():
    lscpu = sh("lscpu")
    model = re.search(r"^Model name:\s*(.+)$", lscpu, re.M)
    mhz = re.search(r"^CPU max MHz:\s*(.+)$", lscpu, re.M)
    return {
        "cpu_model": model.group(1).strip() if model else "?",
        "cpu_max_mhz": mhz.group(1).strip() if mhz else None,
        "cpus_online": os.cpu_count(),
        "pinned_cpu": int(os.environ.get("BENCH_CPU", "0")),
        "kernel": sh("uname", "-r"),
        "os": sh("sh", "-c", ". /etc/os-release && echo $PRETTY_NAME"),
    }


def build_facts(root, binlogcat):
    head = sh("git", "-C", root, "rev-parse", "--short", "HEAD")
    dirty = sh("git", "-C", root, "status", "--porcelain", "--", "src", "Makefile")
    cc = sh("sh", "-c", "cc --version | head -1")
    facts = {
        "binary": os.path.relpath(binlogcat, root) if binlogcat.startswith(root) else binlogcat,
        "git_head": head,
        "src_dirty": bool(dirty),
        "cc": cc,
    }
    if binlogcat == os.path.join(root, "binlogcat"):
        facts["cflags"] = sh("pg_config", "--cflags")
    facts["mariadb_binlog"] = sh("mariadb-binlog", "--version")
    return facts


def read_times(work):
    """times.json of timeit.py: {tool: {best, mean, stddev, best_cpu, runs: [...]}}"""
    return json.load(open(os.path.join(work, "times.json")))["results"]


def read_time_v(path):
    txt = open(path).read()
    g = lambda pat: re.search(pat, txt, re.M)  # noqa: E731
    rss = g(r"Maximum resident set size \(kbytes\): (\d+)")
    el = g(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)")
    usr = g(r"User time \(seconds\): ([\d.]+)")
    sysm = g(r"System time \(seconds\): ([\d.]+)")
    status = g(r"Exit status: (\d+)")
    wall = None
    if el:
        h = int(el.group(1) or 0)
        wall = h * 3600 + int(el.group(2)) * 60 + float(el.group(3))
    return {
        "peak_rss_kb": int(rss.group(1)) if rss else None,
        "wall_s": wall,
        "user_s": float(usr.group(1)) if usr else None,
        "sys_s": float(sysm.group(1)) if sysm else None,
        "exit_status": int(status.group(1)) if status else None,
    }


def busy_warning(timing):
    """A note when other processes loaded the machine during the timing."""
    try:
        before = float(timing["loadavg_before"].split()[0])
        after = float(timing["loadavg_after"].split()[0])
    except (AttributeError, ValueError, IndexError, KeyError):
        return ""
    # our own single-threaded runs add about 1 to the load average
    if max(before, after - 1) > 0.5:
        return ("The machine was shared (load average up to %.1f on %d CPUs): figures may be "
                "pessimistic; compare the tools within this run, not across runs." % (
                    max(before, after), os.cpu_count() or 0))
    return ""


def fmt_int(n):
    return f"{n:,.0f}"


def chart(results, path, title):
    if not shutil.which("gnuplot"):
        return False
    base = next(r for r in results if r["tool"] == "mariadb-binlog")["rows_per_s"]
    ratio_line = TARGET_RATIO * base
    ymax = max([r["rows_per_s"] for r in results] + [TARGET_ROWS_PER_S, ratio_line]) * 1.12
    dat = path + ".dat"
    with open(dat, "w") as f:
        for r in results:
            f.write('"%s" %.0f\n' % (LABELS[r["tool"]].replace('"', ""), r["rows_per_s"]))
    script = f"""
set terminal pngcairo size 900,480 font 'sans,10'
set output '{path}'
set title '{title}'
set style fill solid 0.8 border -1
set boxwidth 0.6
set ylabel 'row changes per second (best of runs, one core)'
set format y '%.1s%c'
set yrange [0:{ymax:.0f}]
set grid ytics
unset key
set arrow from graph 0, first {TARGET_ROWS_PER_S} to graph 1, first {TARGET_ROWS_PER_S} nohead dt 2 lc rgb '#cc0000'
set label 'target: 2M rows/s' at graph 0.01, first {TARGET_ROWS_PER_S} offset 0,0.7 tc rgb '#cc0000'
set arrow from graph 0, first {ratio_line:.0f} to graph 1, first {ratio_line:.0f} nohead dt 3 lc rgb '#e08000'
set label 'target: 5x mariadb-binlog' at graph 0.99, first {ratio_line:.0f} right offset 0,0.7 tc rgb '#e08000'
plot '{dat}' using 0:2:xtic(1) with boxes lc rgb '#3b75af', \\
     '' using 0:2:(sprintf('%.2fM', $2/1e6)) with labels offset 0,0.8
"""
    ok = subprocess.run(["gnuplot"], input=script, text=True).returncode == 0
    os.unlink(dat)
    return ok


def main_report(a):
    meta = json.load(open(os.path.join(a.cache, "meta.json")))
    runs = int(os.environ.get("BENCH_RUNS", "3"))
    date = os.environ["BENCH_DATE"]
    root = os.environ["BENCH_ROOT"]
    cmds = json.loads(os.environ["BENCH_CMDS_JSON"])
    times = read_times(a.work)
    nbytes = sum(f["bytes"] for f in meta["files"])
    rows = meta["binlogcat_count"]["rows"]
    mbc = meta["mariadb_binlog_count"]
    mb_rows = mbc["insert"] + mbc["update"] + mbc["delete"]
    vstats = None
    vp = os.path.join(a.work, "values-stats.json")
    if os.path.exists(vp) and os.path.getsize(vp):
        vstats = json.loads(open(vp).read().strip().splitlines()[-1])

    results = []
    for tool in TOOLS:
        t = times[tool]
        tv = read_time_v(os.path.join(a.work, tool + ".time"))
        results.append({
            "tool": tool,
            "command": cmds[tool],
            "seconds": round(t["best"], 4),
            "seconds_mean": round(t["mean"], 4),
            "seconds_stddev": round(t["stddev"], 4),
            "runs": [round(r["wall"], 4) for r in t["runs"]],
            "rows_per_s": rows / t["best"],
            "mb_per_s": nbytes / 1e6 / t["best"],
            "cpu_seconds": round(t["best_cpu"], 3),
            "rows_per_cpu_s": round(rows / t["best_cpu"]),
            # /usr/bin/time -v; wait4() in timeit.py also counts the forked
            # Python image before exec, so it is only an upper bound
            "peak_rss_kb": tv["peak_rss_kb"] or t["maxrss_kb"],
            "peak_rss_kb_wait4": t["maxrss_kb"],
        })
    base = next(r for r in results if r["tool"] == "mariadb-binlog")
    for r in results:
        r["speedup_vs_mariadb_binlog"] = base["seconds"] / r["seconds"]
        r["rows_per_s"] = round(r["rows_per_s"])
        r["mb_per_s"] = round(r["mb_per_s"], 1)
    vals = results[0]
    ratio = vals["speedup_vs_mariadb_binlog"]
    targets = [
        {"name": "--values rows/s >= 5x mariadb-binlog rows/s (same files)",
         "target": TARGET_RATIO, "measured": round(ratio, 2), "pass": ratio >= TARGET_RATIO},
        {"name": "--values >= 2,000,000 rows/s on one core",
         "target": TARGET_ROWS_PER_S, "measured": vals["rows_per_s"],
         "pass": vals["rows_per_s"] >= TARGET_ROWS_PER_S},
    ]
    for r in results:
        r["speedup_vs_mariadb_binlog"] = round(r["speedup_vs_mariadb_binlog"], 2)

    counts_ok = rows == a.expected_rows and mb_rows == a.expected_rows
    doc = {
        "benchmark": "decoder",
        "date": date,
        "host": host_facts(),
        "build": build_facts(root, os.environ.get("BENCH_BINLOGCAT", "")),
        "workload": {
            "generator_version": meta["generator_version"],
            **meta["workload"],
            "binlog_format": "ROW", "binlog_row_image": "FULL",
            "binlog_row_metadata": "FULL", "checksum": "CRC32",
            "files": meta["files"],
            "bytes": nbytes,
            "events": meta["binlogcat_count"]["events"],
            "row_changes": rows,
            "row_changes_expected": a.expected_rows,
            "row_changes_mariadb_binlog": mbc,
            "counts_agree": counts_ok,
        },
        "timing": {"method": "timeit.py: 1 warmup round, then rounds of the tools interleaved",
                   "runs": runs, "statistic": "best (min) wall-clock seconds, page cache warm",
                   "pinned": "taskset -c %s" % os.environ.get("BENCH_CPU", "0"),
                   "loadavg_before": os.environ.get("BENCH_LOAD_BEFORE"),
                   "loadavg_after": os.environ.get("BENCH_LOAD_AFTER")},
        "results": results,
        "binlogcat_values_internal": vstats,
        "targets": targets,
    }

    # ---- table ----
    hdr = ("tool", "seconds", "rows/s", "MB/s", "x mariadb-binlog", "CPU s", "peak RSS MB")
    lines = []
    for r in results:
        lines.append((LABELS[r["tool"]], "%.3f" % r["seconds"], fmt_int(r["rows_per_s"]),
                      "%.1f" % r["mb_per_s"], "%.2f" % r["speedup_vs_mariadb_binlog"],
                      "%.3f" % r["cpu_seconds"],
                      "%.1f" % (r["peak_rss_kb"] / 1024) if r["peak_rss_kb"] else "?"))
    w = [max(len(x[i]) for x in [hdr] + lines) for i in range(len(hdr))]
    print()
    print("decoder benchmark, %s, %s, pinned to CPU %s" % (
        date, doc["host"]["cpu_model"], doc["host"]["pinned_cpu"]))
    print("workload: %s row changes (%s inserted, %s updated, %s deleted), %s events, "
          "%.1f MB in %d files" % (fmt_int(rows), fmt_int(meta["workload"]["inserted"]),
                                    fmt_int(meta["workload"]["updated"]),
                                    fmt_int(meta["workload"]["deleted"]),
                                    fmt_int(doc["workload"]["events"]), nbytes / 1e6,
                                    len(meta["files"])))
    busy = busy_warning(doc["timing"])
    if busy:
        print("NOTE: " + busy)
    if not counts_ok:
        print("WARNING: row counts disagree: binlogcat %d, mariadb-binlog %s, expected %d"
              % (rows, mbc, a.expected_rows))
    print("  ".join(h.ljust(w[i]) if i == 0 else h.rjust(w[i]) for i, h in enumerate(hdr)))
    for ln in lines:
        print("  ".join(c.ljust(w[i]) if i == 0 else c.rjust(w[i]) for i, c in enumerate(ln)))
    if vstats:
        print("binlogcat --values own timer (excludes exec/startup): %.3f s, %s rows/s, %.1f MB/s"
              % (vstats["seconds"], fmt_int(vstats["rows_per_second"]), vstats["mb_per_second"]))
    for t in targets:
        print("target %-58s %s (measured %s)" % (t["name"], "PASS" if t["pass"] else "FAIL",
                                                 fmt_int(t["measured"]) if t["measured"] > 100
                                                 else "%.2fx" % t["measured"]))

    # ---- files ----
    base_name = os.path.join(a.results, "decoder-%s" % date)
    with open(base_name + ".json", "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    md = []
    md.append("## Decoder benchmark, %s\n" % date)
    md.append("Host: %s, pinned to one core (`taskset -c %s`), %s. binlogcat %s%s; %s.\n" % (
        doc["host"]["cpu_model"], doc["host"]["pinned_cpu"], doc["host"]["kernel"],
        doc["build"]["git_head"], " (src/ modified)" if doc["build"]["src_dirty"] else "",
        doc["build"]["mariadb_binlog"]))
    md.append("Workload (generator v%s): MariaDB 10.11, ROW, row image FULL, row metadata FULL, "
              "CRC32; sbtest1 with JSON, DECIMAL, DATETIME(6); %s row changes (%s inserts, "
              "%s updates, %s deletes; 100 per transaction), %s events, %.1f MB in %d files. "
              "Row counts %s.\n" % (
                  meta["generator_version"], fmt_int(rows), fmt_int(meta["workload"]["inserted"]),
                  fmt_int(meta["workload"]["updated"]), fmt_int(meta["workload"]["deleted"]),
                  fmt_int(doc["workload"]["events"]), nbytes / 1e6, len(meta["files"]),
                  "agree with mariadb-binlog" if counts_ok else
                  "**DISAGREE** (binlogcat %d, mariadb-binlog %d)" % (rows, mb_rows)))
    md.append("Best of %d wall-clock runs, tools interleaved round by round, page cache warm; "
              "load average %s before, %s after.%s\n" % (
                  runs, doc["timing"]["loadavg_before"], doc["timing"]["loadavg_after"],
                  (" " + busy) if busy else ""))
    md.append("| tool | seconds | rows/s | MB/s | × mariadb-binlog | CPU s (best) | peak RSS |")
    md.append("|---|---:|---:|---:|---:|---:|---:|")
    for r in results:
        md.append("| %s | %.3f | %s | %.1f | %.2f | %.3f | %.1f MB |" % (
            LABELS[r["tool"]], r["seconds"], fmt_int(r["rows_per_s"]), r["mb_per_s"],
            r["speedup_vs_mariadb_binlog"], r["cpu_seconds"], (r["peak_rss_kb"] or 0) / 1024))
    md.append("")
    if vstats:
        md.append("binlogcat --values' own timer (no exec/startup): %.3f s, %s rows/s.\n"
                  % (vstats["seconds"], fmt_int(vstats["rows_per_second"])))
    md.append("| target | measured | result |")
    md.append("|---|---:|---|")
    for t in targets:
        md.append("| %s | %s | %s |" % (
            t["name"], fmt_int(t["measured"]) if t["measured"] > 100 else "%.2f×" % t["measured"],
            "pass" if t["pass"] else "**FAIL**"))
    md.append("")
    md.append("Reproduce: `bash bench/decoder/run.sh` (JSON: `%s`)." % os.path.basename(base_name + ".json"))
    with open(base_name + ".md", "w") as f:
        f.write("\n".join(md) + "\n")
    png = os.path.join(a.results, "decoder.png")
    if chart(results, png, "binlog decoding, %s row changes, %.0f MB (%s)" % (
            fmt_int(rows), nbytes / 1e6, date)):
        print("wrote %s.json, %s.md, %s" % (base_name, base_name, png))
    else:
        print("wrote %s.json, %s.md (no chart)" % (base_name, base_name))
    return 0 if all(t["pass"] for t in targets) else 1


def parse_perf(path):
    out = []
    if not os.path.exists(path):
        return out
    for line in open(path):
        m = re.match(r"\s*([\d.]+)%\s+(?:([\d.]+)%\s+)?\S+\s+\[\.\]\s+(.+?)\s*$", line) or \
            re.match(r"\s*([\d.]+)%\s+(?:([\d.]+)%\s+)?\[[.k]\]\s+(.+?)\s*$", line)
        if m:
            sym = re.sub(r"(\s+-)+$", "", m.group(3))
            out.append({"percent": float(m.group(1)), "symbol": sym})
    return out


def main_profile(a):
    work = a.append_profile
    files = sorted(f for f in os.listdir(a.results) if re.match(r"decoder-\d{4}-\d\d-\d\d\.json$", f))
    if not files:
        return 1
    jpath = os.path.join(a.results, files[-1])
    doc = json.load(open(jpath))
    top = parse_perf(os.path.join(work, "perf-top.txt"))[:15]
    children = parse_perf(os.path.join(work, "perf-children.txt"))[:15]
    doc["profile"] = {"tool": "perf record -F 2000 -g (cpu-clock), binlogcat --values",
                      "self": top, "children": children}
    with open(jpath, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    md = ["", "### Profile of `binlogcat --values` (perf, self time, top 15)", "",
          "| self % | function |", "|---:|---|"]
    md += ["| %.1f | `%s` |" % (p["percent"], p["symbol"]) for p in top]
    with open(jpath[:-5] + ".md", "a") as f:
        f.write("\n".join(md) + "\n")
    print("profile (self):")
    for p in top:
        print("  %5.1f%%  %s" % (p["percent"], p["symbol"]))
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cache")
    ap.add_argument("--work")
    ap.add_argument("--results", required=True)
    ap.add_argument("--expected-rows", type=int)
    ap.add_argument("--append-profile", metavar="WORK")
    a = ap.parse_args()
    if a.append_profile:
        sys.exit(main_profile(a))
    sys.exit(main_report(a))


if __name__ == "__main__":
    main()
