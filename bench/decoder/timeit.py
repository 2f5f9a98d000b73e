#!/usr/bin/python3
"""bench/decoder/timeit.py -- interleaved best-of-N timing of commands.

  timeit.py --runs N --warmup W --out FILE.json SPEC.json

SPEC.json: [{"name": ..., "argv": [...], "stdout": null | "path"}, ...]

Runs W warmup rounds and then N timed rounds; each round runs every
command once, in turn (A B C A B C ...), so that a burst of load from
other processes on a shared machine hits all commands alike instead of
all runs of one.  For each run it records wall-clock seconds and, from
wait4(), user and system CPU seconds and the peak RSS (an upper bound:
it includes the forked Python image before exec; run.sh takes the RSS it
reports from /usr/bin/time -v).  stdout goes to
/dev/null, or to the given file (overwritten each run).  A command that
exits non-zero stops everything (exit 1).  Per command it reports the best
(minimum) wall time and the best CPU time (user + system) with their runs.
"""
import argparse
import json
import os
import subprocess
import sys
import time


def run_once(cmd):
    out = open(cmd["stdout"], "wb") if cmd.get("stdout") else subprocess.DEVNULL
    try:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd["argv"], stdout=out)
        _, status, ru = os.wait4(p.pid, 0)
        t1 = time.perf_counter()
        p.returncode = os.waitstatus_to_exitcode(status)
    finally:
        if out is not subprocess.DEVNULL:
            out.close()
    return {"wall": t1 - t0, "user": ru.ru_utime, "sys": ru.ru_stime,
            "maxrss_kb": ru.ru_maxrss, "exit": p.returncode}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--out", required=True)
    ap.add_argument("spec")
    a = ap.parse_args()
    cmds = json.load(open(a.spec))
    res = {c["name"]: {"argv": c["argv"], "runs": []} for c in cmds}
    for rnd in range(a.warmup + a.runs):
        timed = rnd >= a.warmup
        for c in cmds:
            r = run_once(c)
            if r["exit"] != 0:
                print("timeit: %s exited with %s: %s" % (c["name"], r["exit"], " ".join(c["argv"])),
                      file=sys.stderr)
                sys.exit(1)
            print("  %-8s %-18s %7.3f s wall  %7.3f s user  %6.3f s sys  %7.1f MB RSS" % (
                "run %d" % (rnd - a.warmup + 1) if timed else "warmup", c["name"], r["wall"],
                r["user"], r["sys"], r["maxrss_kb"] / 1024), file=sys.stderr)
            if timed:
                res[c["name"]]["runs"].append(r)
    for v in res.values():
        runs = v["runs"]
        best = min(runs, key=lambda r: r["wall"])
        v["best"] = best["wall"]
        v["mean"] = sum(r["wall"] for r in runs) / len(runs)
        v["stddev"] = (sum((r["wall"] - v["mean"]) ** 2 for r in runs) / max(1, len(runs) - 1)) ** 0.5
        v["best_run"] = best
        # CPU time (user + system): what the run itself used, whatever else
        # ran on its core meanwhile
        cpu = [r["user"] + r["sys"] for r in runs]
        best_cpu = min(runs, key=lambda r: r["user"] + r["sys"])
        v["best_cpu"] = best_cpu["user"] + best_cpu["sys"]
        v["best_cpu_run"] = best_cpu
        v["mean_cpu"] = sum(cpu) / len(cpu)
        v["stddev_cpu"] = (sum((c - v["mean_cpu"]) ** 2 for c in cpu) / max(1, len(cpu) - 1)) ** 0.5
        v["maxrss_kb"] = max(r["maxrss_kb"] for r in runs)
    json.dump({"runs": a.runs, "warmup": a.warmup, "order": [c["name"] for c in cmds],
               "results": res}, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()
