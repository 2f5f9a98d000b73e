#!/usr/bin/env bash
# bench/decoder/run.sh -- the decoder benchmark (not a test).
#
# usage: bash bench/decoder/run.sh [options]
#
# 1. Builds (or reuses) the standard workload binlog (bench/lib/common.sh,
#    shared with the streaming and apply benchmarks): a throwaway MariaDB
#    (instance "bgen", port $BENCH_GEN_PORT) runs gen_workload.py's SQL:
#    sbtest1 with 1,000,000 rows inserted, 500,000 updated, 250,000 deleted,
#    100 rows per transaction; ROW format, binlog_row_metadata=FULL,
#    binlog_row_image=FULL, CRC32 checksums.  The binlog files are cached
#    under $BLF_RUN/bench/decoder-g<version>-.../ (never committed) and reused
#    while the generator version and sizes match.  The instance is destroyed
#    after.
# 2. Times on those files, pinned to one core (taskset -c $BENCH_CPU),
#    best of $BENCH_RUNS rounds (timeit.py: the tools interleaved A B C D A B
#    C D, so bursts of load from other processes on a shared machine hit all
#    alike), by CPU time (user + system, from wait4) -- on a shared machine
#    the wall time of a run also counts the time other processes held its
#    core, its CPU time does not:
#      binlogcat --decode-only  decode every column of every row image to
#                               its bl_value (integers, temporal fields,
#                               pointers to string bytes with their charset),
#                               no text: the issue's line (a)
#      binlogcat --values       the same, and format every value as JSON text
#                               into a buffer that is never written
#      binlogcat --rows-only    JSON lines to /dev/null
#      mariadb-binlog --verbose --base64-output=decode-rows  to /dev/null
#    plus, for scale, reading the files alone (dd bs=1M to /dev/null: the
#    page-cache copy every reader pays), and one /usr/bin/time -v run of each
#    tool for the peak RSS.
# 3. Prints a table and writes bench/reports/decoder-<date>.{json,md} and
#    bench/reports/decoder.png (gnuplot).
# 4. Checks the targets of issue #2 on --decode-only: >= 5x mariadb-binlog's
#    rows/s, and >= 2,000,000 rows/s on one core (and reports the same
#    figures for --values and the JSON lines).  When a target is missed and
#    perf works, or with --profile, profiles the binlogcat modes (perf
#    record, timer sampling) into the Markdown report.
#
# options:
#   --regen           rebuild the workload binlog even if cached
#   --no-build        do not run "make -s binlogcat" first
#   --small           a 100x smaller workload (smoke test of this script;
#                     results go to $BLF_RUN/bench/reports-small)
#   --profile         always profile; --no-profile: never
#   --runs N          timed runs per tool (default 3)
#   --tables LIST     standard, wide or both (default standard,wide): the
#                     wide workload (wide40, 40 columns of mixed types with
#                     DOUBLE, DECIMAL, DATETIME(6), JSON, TEXT and BLOB;
#                     gen_workload.py --table wide) is timed after the
#                     standard one, mariadb-binlog again on its files:
#                     decoder-wide-<date>.{json,md}
# environment: BINLOGCAT (binary to time, default ./binlogcat), BENCH_CPU (0),
#   BENCH_GEN_PORT (3509), BENCH_RESULTS (bench/reports), BENCH_SCALE (N: the
#   row counts divided by N), BLF_RUN (see scripts/env.sh).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/../lib/common.sh"
cd "$ROOT"

REGEN=0
BUILD=1
SMALL=0
PROFILE=auto
RUNS=${BENCH_RUNS:-3}
TABLES=standard,wide
TABLE=
ARGS=("$@")
while [ $# -gt 0 ]; do
	case "$1" in
	--tables) TABLES=${2:?--tables needs a value}; shift ;;
	--table) TABLE=${2:?--table needs a value}; shift ;;
	--regen) REGEN=1 ;;
	--no-build) BUILD=0 ;;
	--small) SMALL=1 ;;
	--profile) PROFILE=1 ;;
	--no-profile) PROFILE=0 ;;
	--runs) RUNS=${2:?--runs needs a value}; shift ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done

if [ -z "$TABLE" ]; then
	# one run per table, one after the other
	for t in ${TABLES//,/ }; do
		bash "$0" "${ARGS[@]}" --table "$t" || exit $?
	done
	exit 0
fi
NAME=decoder
[ "$TABLE" = standard ] || NAME=decoder-$TABLE

CPU=${BENCH_CPU:-0}
BINLOGCAT=${BINLOGCAT:-$ROOT/binlogcat}
RESULTS=${BENCH_RESULTS:-$ROOT/bench/reports}
[ $SMALL -eq 0 ] || RESULTS=${BENCH_RESULTS:-$BLF_RUN/bench/reports-small}
workload_init $SMALL "$TABLE"

# ---- tools ----------------------------------------------------------------
apt_install() {
	# apt_install PKG...: install missing Debian packages (root only)
	[ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null || return 1
	log "installing $*"
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >/dev/null 2>&1 ||
		{ apt-get update -qq >/dev/null 2>&1 &&
			DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >/dev/null 2>&1; }
}
[ -x /usr/bin/time ] || apt_install time || die "needs /usr/bin/time (apt-get install time)"
command -v gnuplot >/dev/null || apt_install gnuplot-nox || log "no gnuplot: no PNG chart"
command -v taskset >/dev/null || die "needs taskset (util-linux)"
command -v mariadb-binlog >/dev/null || die "needs mariadb-binlog (mariadb-client)"

if [ $BUILD -eq 1 ] && [ "$BINLOGCAT" = "$ROOT/binlogcat" ]; then
	log "make -s binlogcat"
	make -s binlogcat >&2
fi
[ -x "$BINLOGCAT" ] || die "no binlogcat at $BINLOGCAT"

# ---- 1. the workload binlog (cached) ---------------------------------------
workload_ensure $REGEN
FILES=("${WFILES[@]}")
cd "$CACHE"

# ---- 2. timings -------------------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/blf-bench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

PIN=(taskset -c "$CPU")
CMD_DECODE="$BINLOGCAT --decode-only --no-follow --quiet ${FILES[*]}"
CMD_VALUES="$BINLOGCAT --values --no-follow --quiet ${FILES[*]}"
CMD_JSONL="$BINLOGCAT --rows-only --no-follow --quiet ${FILES[*]}"
CMD_MB="mariadb-binlog --no-defaults --verbose --base64-output=decode-rows ${FILES[*]}"
CMD_READ="sh -c 'for f; do dd if=\"\$f\" of=/dev/null bs=1M status=none; done' sh ${FILES[*]}"
TOOLS=(binlogcat-decode binlogcat-values binlogcat-jsonl mariadb-binlog read-floor)
CMDS=("$CMD_DECODE" "$CMD_VALUES" "$CMD_JSONL" "$CMD_MB" "$CMD_READ")

# warm the page cache
cat "${FILES[@]}" >/dev/null

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
log "timing: $RUNS rounds + 1 warmup, tools interleaved, pinned to CPU $CPU (load average $LOAD_BEFORE)"
BINLOGCAT=$BINLOGCAT $PY - "$WORK/spec.json" "$CPU" "$WORK" "${FILES[@]}" <<-'EOF'
	import json, os, sys
	spec, cpu, work, files = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
	bc = os.environ["BINLOGCAT"]
	pin = ["taskset", "-c", cpu]
	cmds = [
	    {"name": "binlogcat-decode", "stdout": os.path.join(work, "decode-stats.json"),
	     "argv": pin + [bc, "--decode-only", "--no-follow", "--quiet"] + files},
	    {"name": "binlogcat-values", "stdout": os.path.join(work, "values-stats.json"),
	     "argv": pin + [bc, "--values", "--no-follow", "--quiet"] + files},
	    {"name": "binlogcat-jsonl", "stdout": None,
	     "argv": pin + [bc, "--rows-only", "--no-follow", "--quiet"] + files},
	    {"name": "mariadb-binlog", "stdout": None,
	     "argv": pin + ["mariadb-binlog", "--no-defaults", "--verbose",
	                    "--base64-output=decode-rows"] + files},
	    {"name": "read-floor", "stdout": None,
	     "argv": pin + ["sh", "-c", 'for f; do dd if="$f" of=/dev/null bs=1M status=none; done',
	                    "sh"] + files},
	]
	json.dump(cmds, open(spec, "w"), indent=1)
EOF
$PY "$HERE/timeit.py" --runs "$RUNS" --warmup 1 --out "$WORK/times.json" "$WORK/spec.json"
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

log "peak RSS (/usr/bin/time -v), one run each"
for i in "${!TOOLS[@]}"; do
	[ "${TOOLS[$i]}" = read-floor ] && continue
	# shellcheck disable=SC2086
	/usr/bin/time -v "${PIN[@]}" ${CMDS[$i]} >/dev/null 2>"$WORK/${TOOLS[$i]}.time"
done

# ---- 3./4. report -----------------------------------------------------------
DATE=$(date +%F)
mkdir -p "$RESULTS"
export BENCH_CPU=$CPU BENCH_RUNS=$RUNS BENCH_DATE=$DATE BENCH_ROOT=$ROOT BENCH_BINLOGCAT=$BINLOGCAT
export BENCH_LOAD_BEFORE=$LOAD_BEFORE BENCH_LOAD_AFTER=$LOAD_AFTER
export BENCH_CMDS_JSON
BENCH_CMDS_JSON=$($PY -c 'import json,sys; print(json.dumps(dict(zip(sys.argv[1::2], sys.argv[2::2]))))' \
	"${TOOLS[0]}" "${PIN[*]} ${CMDS[0]}" "${TOOLS[1]}" "${PIN[*]} ${CMDS[1]}" \
	"${TOOLS[2]}" "${PIN[*]} ${CMDS[2]} > /dev/null" "${TOOLS[3]}" "${PIN[*]} ${CMDS[3]} > /dev/null" \
	"${TOOLS[4]}" "${PIN[*]} ${CMDS[4]}")
set +e
$PY "$HERE/report.py" --cache "$CACHE" --work "$WORK" --results "$RESULTS" --expected-rows $EXPECTED_ROWS \
	--name "$NAME"
REPORT_RC=$?
set -e
[ $REPORT_RC -le 1 ] || die "report failed"

# ---- 5. profile when a target is missed ---------------------------------------
if [ "$PROFILE" = 1 ] || { [ "$PROFILE" = auto ] && [ $REPORT_RC -eq 1 ]; }; then
	if command -v perf >/dev/null && perf record -o "$WORK/probe.data" -- true >/dev/null 2>&1; then
		for mode in decode values jsonl; do
			case $mode in
			decode) cmd=$CMD_DECODE ;;
			values) cmd=$CMD_VALUES ;;
			jsonl) cmd=$CMD_JSONL ;;
			esac
			log "profiling binlogcat ($mode) with perf record"
			# shellcheck disable=SC2086
			"${PIN[@]}" perf record -F 2000 -g -o "$WORK/perf.data" -- $cmd >/dev/null 2>"$WORK/perf.log" || true
			perf report -i "$WORK/perf.data" --no-children --sort symbol --stdio 2>/dev/null |
				grep -E '^ +[0-9]+\.[0-9]+%' | head -25 >"$WORK/perf-top-$mode.txt" || true
			rm -f "$WORK/perf.data"
		done
		$PY "$HERE/report.py" --append-profile "$WORK" --results "$RESULTS" --name "$NAME"
	else
		log "perf is not usable here: profile with valgrind --tool=callgrind on a --small workload"
	fi
fi
exit 0
