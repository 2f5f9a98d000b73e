#!/usr/bin/python3
"""bench/decoder/report.py -- table, JSON, Markdown and chart of run.sh.

  report.py --cache DIR --work DIR --results DIR --expected-rows N
      prints the table, writes RESULTS/decoder-<date>.json and .md and
      RESULTS/decoder.png (when gnuplot exists); exits 1 when a target of
      issue #2 (on binlogcat --decode-only) is missed, 0 when both pass.
  report.py --append-profile WORK --results DIR
      adds WORK/perf-top-{decode,values,jsonl}.txt (self time) to the day's
      JSON and Markdown.

Inputs come from run.sh (environment BENCH_*).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

TARGET_RATIO = 5.0            # rows/s vs mariadb-binlog rows/s, same files
TARGET_ROWS_PER_S = 2_000_000  # on one core

# the line (a), which the targets are about
TARGET_TOOL = "binlogcat-decode"
TOOLS = ["binlogcat-decode", "binlogcat-values", "binlogcat-jsonl", "mariadb-binlog"]
FLOOR = "read-floor"
LABELS = {
    "binlogcat-decode": "binlogcat --decode-only",
    "binlogcat-values": "binlogcat --values",
    "binlogcat-jsonl": "binlogcat --rows-only (JSON lines)",
    "mariadb-binlog": "mariadb-binlog -v decode-rows",
    "read-floor": "read the files only (dd bs=1M)",
}
MEANING = {
    "binlogcat-decode": "decodes every column of every row image to its typed value "
                        "(bl_value: integers, temporal fields, DECIMAL and JSON as their "
                        "binary bytes, pointers to string bytes with their charset); no text",
    "binlogcat-values": "the same, and formats every value as JSON text (strings converted "
                        "and escaped, DECIMAL and temporal values printed) into a buffer "
                        "that is never written",
    "binlogcat-jsonl": "the JSON lines of every rows event (binlogcat's output), "
                       "written to /dev/null",
    "mariadb-binlog": "the reference decoder's text rows (`--verbose "
                      "--base64-output=decode-rows`), written to /dev/null",
    "read-floor": "copies the files from the page cache into a 1 MB buffer, nothing else: "
                  "what any reader pays",
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
        return ("Other processes loaded the machine (load average up to %.1f on %d CPUs): "
                "CPU times exclude the time they held the core, but shared caches and memory "
                "bandwidth still slow every tool somewhat; compare the tools within this run, "
                "not across runs." % (max(before, after), os.cpu_count() or 0))
    return ""


def fmt_int(n):
    return f"{n:,.0f}"


def chart(results, path, title):
    if not shutil.which("gnuplot"):
        return False
    base = next(r for r in results if r["tool"] == "mariadb-binlog")["rows_per_cpu_s"]
    ratio_line = TARGET_RATIO * base
    ymax = max([r["rows_per_cpu_s"] for r in results] + [TARGET_ROWS_PER_S, ratio_line]) * 1.15
    colors = {"mariadb-binlog": 0xd08030, FLOOR: 0xa0a0a0}
    dat = path + ".dat"
    with open(dat, "w") as f:
        for r in results:
            f.write('"%s" %.0f %d\n' % (LABELS[r["tool"]].replace('"', "").replace(" (", "\\n(")
                                        .replace("mariadb-binlog -v", "mariadb-binlog\\n-v"),
                                        r["rows_per_cpu_s"], colors.get(r["tool"], 0x3b75af)))
    script = f"""
set terminal pngcairo size 1000,540 font 'sans,10'
set output '{path}'
set title '{title}'
set style fill solid 0.85 border -1
set boxwidth 0.6
set ylabel 'row changes per CPU second (best of runs, one core)'
set format y '%.1s%c'
set yrange [0:{ymax:.0f}]
set grid ytics
set bmargin 4
set key top center horizontal
plot '{dat}' using 0:2:3:xtic(1) with boxes lc rgb variable notitle, \\
     '' using 0:2:(sprintf('%.2fM', $2/1e6)) with labels offset 0,0.8 notitle, \\
     {TARGET_ROWS_PER_S} with lines dt 2 lw 1.5 lc rgb '#cc0000' title 'target: 2M rows/s', \\
     {ratio_line:.0f} with lines dt 3 lw 1.5 lc rgb '#e08000' title 'target: 5x mariadb-binlog'
"""
    ok = subprocess.run(["gnuplot"], input=script, text=True).returncode == 0
    os.unlink(dat)
    return ok


def stats_line(work, name):
    p = os.path.join(work, name)
    if os.path.exists(p) and os.path.getsize(p):
        return json.loads(open(p).read().strip().splitlines()[-1])
    return None


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
    dstats = stats_line(a.work, "decode-stats.json")
    vstats = stats_line(a.work, "values-stats.json")

    results = []
    for tool in TOOLS + [FLOOR]:
        t = times[tool]
        tvp = os.path.join(a.work, tool + ".time")
        tv = read_time_v(tvp) if os.path.exists(tvp) else {"peak_rss_kb": None}
        bc = t["best_cpu_run"]
        results.append({
            "tool": tool,
            "command": cmds[tool],
            "cpu_seconds": round(t["best_cpu"], 4),
            "user_seconds": round(bc["user"], 4),
            "sys_seconds": round(bc["sys"], 4),
            "cpu_seconds_mean": round(t["mean_cpu"], 4),
            "cpu_seconds_stddev": round(t["stddev_cpu"], 4),
            "cpu_runs": [round(r["user"] + r["sys"], 4) for r in t["runs"]],
            "rows_per_cpu_s": round(rows / t["best_cpu"]),
            "mb_per_cpu_s": round(nbytes / 1e6 / t["best_cpu"], 1),
            "wall_seconds": round(t["best"], 4),
            "wall_runs": [round(r["wall"], 4) for r in t["runs"]],
            "rows_per_wall_s": round(rows / t["best"]),
            # /usr/bin/time -v; wait4() in timeit.py also counts the forked
            # Python image before exec, so it is only an upper bound
            "peak_rss_kb": tv["peak_rss_kb"] or t["maxrss_kb"],
            "peak_rss_kb_wait4": t["maxrss_kb"],
        })
    base = next(r for r in results if r["tool"] == "mariadb-binlog")
    for r in results:
        r["x_mariadb_binlog_cpu"] = round(base["cpu_seconds"] / r["cpu_seconds"], 2)
        r["x_mariadb_binlog_wall"] = round(base["wall_seconds"] / r["wall_seconds"], 2)
    by = {r["tool"]: r for r in results}
    targets = []
    for tool in ["binlogcat-decode", "binlogcat-values", "binlogcat-jsonl"]:
        r = by[tool]
        targets.append({"tool": tool, "line": LABELS[tool], "issue_line_a": tool == TARGET_TOOL,
                        "name": "rows/s >= 5x mariadb-binlog's (same files, CPU time)",
                        "target": TARGET_RATIO, "measured": r["x_mariadb_binlog_cpu"],
                        "pass": r["x_mariadb_binlog_cpu"] >= TARGET_RATIO})
        targets.append({"tool": tool, "line": LABELS[tool], "issue_line_a": tool == TARGET_TOOL,
                        "name": ">= 2,000,000 rows/s on one core (CPU time)",
                        "target": TARGET_ROWS_PER_S, "measured": r["rows_per_cpu_s"],
                        "pass": r["rows_per_cpu_s"] >= TARGET_ROWS_PER_S})

    counts_ok = rows == a.expected_rows and mb_rows == a.expected_rows
    timing = {"method": "timeit.py: 1 warmup round, then rounds of the tools interleaved",
              "runs": runs,
              "statistic": "best (min) CPU seconds (user + system, wait4) of each tool; "
                           "best wall seconds reported alongside; page cache warm",
              "pinned": "taskset -c %s" % os.environ.get("BENCH_CPU", "0"),
              "loadavg_before": os.environ.get("BENCH_LOAD_BEFORE"),
              "loadavg_after": os.environ.get("BENCH_LOAD_AFTER")}
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
        "timing": timing,
        "meaning": MEANING,
        "results": results,
        "binlogcat_decode_internal": dstats,
        "binlogcat_values_internal": vstats,
        "targets": targets,
    }

    # ---- table ----
    hdr = ("tool", "CPU s", "user", "sys", "rows/CPU-s", "MB/CPU-s", "x mariadb-binlog",
           "wall s", "peak RSS MB")
    lines = []
    for r in results:
        lines.append((LABELS[r["tool"]], "%.3f" % r["cpu_seconds"], "%.3f" % r["user_seconds"],
                      "%.3f" % r["sys_seconds"], fmt_int(r["rows_per_cpu_s"]),
                      "%.1f" % r["mb_per_cpu_s"], "%.2f" % r["x_mariadb_binlog_cpu"],
                      "%.3f" % r["wall_seconds"],
                      "%.1f" % (r["peak_rss_kb"] / 1024) if r["peak_rss_kb"] else "-"))
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
    print("load average %s before, %s after" % (timing["loadavg_before"], timing["loadavg_after"]))
    busy = busy_warning(doc["timing"])
    if busy:
        print("NOTE: " + busy)
    if not counts_ok:
        print("WARNING: row counts disagree: binlogcat %d, mariadb-binlog %s, expected %d"
              % (rows, mbc, a.expected_rows))
    print("  ".join(h.ljust(w[i]) if i == 0 else h.rjust(w[i]) for i, h in enumerate(hdr)))
    for ln in lines:
        print("  ".join(c.ljust(w[i]) if i == 0 else c.rjust(w[i]) for i, c in enumerate(ln)))
    for t in targets:
        print("target %-36s %-55s %s (measured %s)" % (
            LABELS[t["tool"]], t["name"], "PASS" if t["pass"] else "FAIL",
            fmt_int(t["measured"]) if t["measured"] > 100 else "%.2fx" % t["measured"]))

    # ---- files ----
    base_name = os.path.join(a.results, "%s-%s" % (a.name, date))
    with open(base_name + ".json", "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    md = []
    md.append("## Decoder benchmark, %s workload, %s\n" % (meta["workload"].get("table", "standard"), date))
    md.append("Host: %s, %s CPUs, pinned to one core (`taskset -c %s`), %s. binlogcat %s%s; %s.\n" % (
        doc["host"]["cpu_model"], doc["host"]["cpus_online"], doc["host"]["pinned_cpu"],
        doc["host"]["kernel"], doc["build"]["git_head"],
        " (src/ modified)" if doc["build"]["src_dirty"] else "", doc["build"]["mariadb_binlog"]))
    md.append("Workload (generator v%s): MariaDB 10.11, ROW, row image FULL, row metadata FULL, "
              "CRC32; %s with %s row changes (%s inserts, %s updates, %s deletes; "
              "100 per transaction), %s events, %.1f MB in %d files. Row counts %s.\n" % (
                  meta["generator_version"],
                  "wide40 (40 columns: BIGINT, INT, 7 DOUBLE, FLOAT, 5 DECIMAL, 4 DATETIME(6), DATE, "
                  "TIME(6), 3 JSON, 3 TEXT, 2 BLOB, 4 VARCHAR, CHAR, 4 integers, ENUM, YEAR)"
                  if meta["workload"].get("table") == "wide" else
                  "sbtest1 (BIGINT, INT, VARCHAR(120), CHAR(60), DECIMAL(12,2), DATETIME(6), JSON)",
                  fmt_int(rows), fmt_int(meta["workload"]["inserted"]),
                  fmt_int(meta["workload"]["updated"]), fmt_int(meta["workload"]["deleted"]),
                  fmt_int(doc["workload"]["events"]), nbytes / 1e6, len(meta["files"]),
                  "agree with mariadb-binlog" if counts_ok else
                  "**DISAGREE** (binlogcat %d, mariadb-binlog %d)" % (rows, mb_rows)))
    md.append("Each figure is the best of %d runs by CPU time (user + system of the process, "
              "from wait4), the tools interleaved round by round, page cache warm; rows/s are "
              "row changes per CPU second. Load average %s before, %s after; wall times "
              "(best of the same runs) are given for reference only.%s\n" % (
                  runs, timing["loadavg_before"], timing["loadavg_after"],
                  (" " + busy) if busy else ""))
    md.append("| line | CPU s | user / sys | rows/s | MB/s | × mariadb-binlog | wall s | peak RSS |")
    md.append("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        md.append("| %s | %.3f | %.3f / %.3f | %s | %.0f | %.2f | %.3f | %s |" % (
            LABELS[r["tool"]], r["cpu_seconds"], r["user_seconds"], r["sys_seconds"],
            fmt_int(r["rows_per_cpu_s"]), r["mb_per_cpu_s"], r["x_mariadb_binlog_cpu"],
            r["wall_seconds"],
            "%.1f MB" % (r["peak_rss_kb"] / 1024) if r["peak_rss_kb"] else "-"))
    md.append("")
    for tool in TOOLS + [FLOOR]:
        md.append("- **%s**: %s." % (LABELS[tool], MEANING[tool]))
    md.append("")
    md.append("Targets of issue #2 (they are about the first line, decoding to values; the "
              "other binlogcat lines are checked against the same figures for information):\n")
    md.append("| line | target | measured | result |")
    md.append("|---|---|---:|---|")
    for t in targets:
        md.append("| %s | %s | %s | %s |" % (
            LABELS[t["tool"]] + (" (issue line a)" if t["issue_line_a"] else ""), t["name"],
            fmt_int(t["measured"]) if t["measured"] > 100 else "%.2f×" % t["measured"],
            "pass" if t["pass"] else "**fail**"))
    md.append("")
    if dstats:
        md.append("binlogcat --decode-only decoded %s values per run (value digest %s, the "
                  "same in every build that decodes alike)." % (
                      fmt_int(dstats.get("values", 0)), dstats.get("digest", "?")))
        md.append("")
    md.append("Reproduce: `bash bench/decoder/run.sh` (JSON: `%s`)." % os.path.basename(base_name + ".json"))
    with open(base_name + ".md", "w") as f:
        f.write("\n".join(md) + "\n")
    png = os.path.join(a.results, "%s.png" % a.name)
    if chart([r for r in results], png, "binlog decoding, %s row changes, %.0f MB (%s)" % (
            fmt_int(rows), nbytes / 1e6, date)):
        print("wrote %s.json, %s.md, %s" % (base_name, base_name, png))
    else:
        print("wrote %s.json, %s.md (no chart)" % (base_name, base_name))
    return 0 if all(t["pass"] for t in targets if t["issue_line_a"]) else 1


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
    files = sorted(f for f in os.listdir(a.results)
                   if re.match(re.escape(a.name) + r"-\d{4}-\d\d-\d\d\.json$", f))
    if not files:
        return 1
    jpath = os.path.join(a.results, files[-1])
    doc = json.load(open(jpath))
    doc["profile"] = {"tool": "perf record -F 2000 -g (cpu-clock timer sampling), self time"}
    md = []
    for mode, label in (("decode", "binlogcat --decode-only"), ("values", "binlogcat --values"),
                        ("jsonl", "binlogcat --rows-only (JSON lines)")):
        top = parse_perf(os.path.join(work, "perf-top-%s.txt" % mode))[:15]
        if not top:
            continue
        doc["profile"][mode] = top
        md += ["", "### Profile of `%s` (perf, self time, top 15)" % label, "",
               "| self % | function |", "|---:|---|"]
        md += ["| %.1f | `%s` |" % (p["percent"], p["symbol"]) for p in top]
        print("profile of %s (self):" % label)
        for p in top:
            print("  %5.1f%%  %s" % (p["percent"], p["symbol"]))
    with open(jpath, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    with open(jpath[:-5] + ".md", "a") as f:
        f.write("\n".join(md) + "\n")
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cache")
    ap.add_argument("--work")
    ap.add_argument("--results", required=True)
    ap.add_argument("--name", default="decoder", help="report name: NAME-<date>.{json,md}, NAME.png")
    ap.add_argument("--expected-rows", type=int)
    ap.add_argument("--append-profile", metavar="WORK")
    a = ap.parse_args()
    if a.append_profile:
        sys.exit(main_profile(a))
    sys.exit(main_report(a))


if __name__ == "__main__":
    main()
