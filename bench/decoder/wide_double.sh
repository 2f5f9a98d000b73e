#!/usr/bin/env bash
# bench/decoder/wide_double.sh -- DOUBLE formatting benchmark (issue 14
# item 3; not a test).
#
# usage: bash bench/decoder/wide_double.sh [--rows N] [--runs N] [--regen]
#
# 1. Builds (or reuses) a binlog of a wide DOUBLE table on a throwaway
#    MariaDB (instance "bwide", port $BENCH_GEN_PORT): wide(id BIGINT PK,
#    d1 .. d40 DOUBLE), N rows (default 50,000) inserted 100 per
#    transaction; the values are deterministic pseudo-random doubles, half
#    of them needing 15-17 significant digits, a quarter two decimals, a
#    quarter integers, a few of them 0, -0, huge or subnormal.  Cached under
#    $BLF_RUN/bench/wide-double-g<version>-r<N>/ (never committed).
# 2. Times, pinned to one core, best of N interleaved rounds by CPU time
#    (timeit.py): binlogcat --rows-only (JSON lines to /dev/null) of
#    $BINLOGCAT and, when set, of $BINLOGCAT_BEFORE (an older build, for a
#    before/after comparison in the same run), binlogcat --values, and
#    mariadb-binlog --verbose --base64-output=decode-rows as the anchor.
# 3. Prints rows/s and the ratio to mariadb-binlog of each line (Markdown
#    table on stdout).
# environment: BINLOGCAT (default ./binlogcat), BINLOGCAT_BEFORE, BENCH_CPU
#   (0), BENCH_GEN_PORT (3509), BLF_RUN (scripts/env.sh).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/../lib/common.sh"
cd "$ROOT"

ROWS=50000
RUNS=${BENCH_RUNS:-3}
REGEN=0
while [ $# -gt 0 ]; do
	case "$1" in
	--rows) ROWS=${2:?--rows needs a value}; shift ;;
	--runs) RUNS=${2:?--runs needs a value}; shift ;;
	--regen) REGEN=1 ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "wide_double.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
CPU=${BENCH_CPU:-0}
BINLOGCAT=${BINLOGCAT:-$ROOT/binlogcat}
[ -x "$BINLOGCAT" ] || die "no binlogcat at $BINLOGCAT"
command -v mariadb-binlog >/dev/null || die "needs mariadb-binlog (mariadb-client)"
W_VERSION=1
WCACHE=$BLF_RUN/bench/wide-double-g$W_VERSION-r$ROWS

gen_sql() {
	$PY - "$ROWS" <<-'PYEOF'
		import random, sys
		rows = int(sys.argv[1])
		rng = random.Random(14)
		cols = 40
		print("SET SESSION sql_log_bin = 0; DROP DATABASE IF EXISTS bench; SET SESSION sql_log_bin = 1;")
		print("CREATE DATABASE bench; USE bench;")
		print("CREATE TABLE wide (id BIGINT NOT NULL PRIMARY KEY, %s) ENGINE=InnoDB;"
		      % ", ".join("d%d DOUBLE" % i for i in range(1, cols + 1)))
		special = ["0", "-0", "1e23", "1.7976931348623157e308", "4.9e-324", "2.2250738585072014e-308",
		           "0.1", "-123456789012345680"]
		def val():
		    r = rng.random()
		    if r < 0.5:
		        return repr(rng.uniform(-1, 1) * 10 ** rng.randint(-12, 12))
		    if r < 0.75:
		        return "%.2f" % rng.uniform(-100000, 100000)
		    if r < 0.999:
		        return str(rng.randint(-10 ** 9, 10 ** 9))
		    return rng.choice(special)
		n = 0
		while n < rows:
		    batch = []
		    for _ in range(min(100, rows - n)):
		        n += 1
		        batch.append("(%d,%s)" % (n, ",".join(val() for _ in range(cols))))
		    print("INSERT INTO wide VALUES %s;" % ",".join(batch))
	PYEOF
}

if [ $REGEN -eq 1 ] || [ ! -r "$WCACHE/files" ]; then
	log "building the wide DOUBLE binlog in $WCACHE"
	mkdir -p "$BLF_RUN/bench" "$BENCH_INST"
	chmod 755 "$BLF_RUN/bench"
	chmod 1777 "$BENCH_INST"
	mdb start --fresh --name bwide --port "$BENCH_GEN_PORT" -- \
		--innodb-flush-log-at-trx-commit=0 --sync-binlog=0 --innodb-doublewrite=0 \
		--max-binlog-size=256M --skip-name-resolve >&2
	mdb sql --name bwide -e "RESET MASTER"
	if ! gen_sql | mdb sql --name bwide >"$BENCH_INST/wide.log" 2>&1; then
		tail -c 600 "$BENCH_INST/wide.log" >&2
		mdb destroy --name bwide >&2 || true
		die "the workload failed"
	fi
	mdb sql --name bwide -e "FLUSH BINARY LOGS"
	files=$(mdb sql --name bwide -N -B -e "SHOW BINARY LOGS" | awk '{print $1}' | sed '$d')
	rm -rf "$WCACHE" "$WCACHE.tmp"
	mkdir -p "$WCACHE.tmp"
	for f in $files; do cp "$BENCH_INST/mariadb-bwide/$f" "$WCACHE.tmp/"; done
	echo "$files" >"$WCACHE.tmp/files"
	mdb destroy --name bwide >&2
	mv "$WCACHE.tmp" "$WCACHE"
else
	log "reusing $WCACHE"
fi
cd "$WCACHE"
mapfile -t FILES <files
cat "${FILES[@]}" >/dev/null

WORK=$(mktemp -d "${TMPDIR:-/tmp}/blf-bench-wide.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
LOAD_BEFORE=$(bench_loadavg)
BINLOGCAT=$BINLOGCAT BINLOGCAT_BEFORE=${BINLOGCAT_BEFORE:-} $PY - "$WORK/spec.json" "$CPU" "${FILES[@]}" <<-'PYEOF'
	import json, os, sys
	spec, cpu, files = sys.argv[1], sys.argv[2], sys.argv[3:]
	pin = ["taskset", "-c", cpu]
	cmds = []
	if os.environ["BINLOGCAT_BEFORE"]:
	    cmds.append({"name": "binlogcat-jsonl-before", "stdout": None,
	                 "argv": pin + [os.environ["BINLOGCAT_BEFORE"], "--rows-only", "--no-follow", "--quiet"] + files})
	bc = os.environ["BINLOGCAT"]
	cmds += [
	    {"name": "binlogcat-jsonl", "stdout": None,
	     "argv": pin + [bc, "--rows-only", "--no-follow", "--quiet"] + files},
	    {"name": "binlogcat-values", "stdout": None,
	     "argv": pin + [bc, "--values", "--no-follow", "--quiet"] + files},
	    {"name": "mariadb-binlog", "stdout": None,
	     "argv": pin + ["mariadb-binlog", "--no-defaults", "--verbose",
	                    "--base64-output=decode-rows"] + files},
	]
	json.dump(cmds, open(spec, "w"), indent=1)
PYEOF
log "timing: $RUNS rounds + 1 warmup, interleaved, pinned to CPU $CPU (load $LOAD_BEFORE)"
$PY "$HERE/timeit.py" --runs "$RUNS" --warmup 1 --out "$WORK/times.json" "$WORK/spec.json" >&2
LOAD_AFTER=$(bench_loadavg)
$PY - "$WORK/times.json" "$ROWS" "$LOAD_BEFORE" "$LOAD_AFTER" <<-'PYEOF'
	import json, sys
	t = json.load(open(sys.argv[1]))
	rows = int(sys.argv[2])
	best = {name: t["results"][name]["best_cpu"] for name in t["order"]}
	anchor = best["mariadb-binlog"]
	print("rows: %d x 40 DOUBLE; load average %s before, %s after" % (rows, sys.argv[3], sys.argv[4]))
	print("| line | CPU s | rows/s | x mariadb-binlog |")
	print("|---|---:|---:|---:|")
	for name, s in best.items():
	    print("| %s | %.3f | %s | %.2f |" % (name, s, format(int(rows / s), ","), anchor / s))
PYEOF
