#!/usr/bin/env bash
# bench/decoder/run.sh -- the decoder benchmark (not a test).
#
# usage: bash bench/decoder/run.sh [options]
#
# 1. Builds (or reuses) the standard workload binlog: a throwaway MariaDB
#    (instance "bench", port 3430) runs gen_workload.py's SQL: sbtest1 with
#    1,000,000 rows inserted, 500,000 updated, 250,000 deleted, 100 rows per
#    transaction; ROW format, binlog_row_metadata=FULL, binlog_row_image=FULL,
#    CRC32 checksums.  The binlog files are cached under
#    $BLF_RUN/bench/decoder-g<version>-.../ (never committed) and reused while
#    the generator version and sizes match.  The instance is destroyed after.
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
# environment: BINLOGCAT (binary to time, default ./binlogcat), BENCH_CPU (0),
#   BENCH_PORT (3430), BENCH_NAME (bench), BENCH_RESULTS (bench/reports),
#   BLF_RUN (see scripts/env.sh).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$ROOT/scripts/env.sh"
cd "$ROOT"

REGEN=0
BUILD=1
SMALL=0
PROFILE=auto
RUNS=${BENCH_RUNS:-3}
while [ $# -gt 0 ]; do
	case "$1" in
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

CPU=${BENCH_CPU:-0}
PORT=${BENCH_PORT:-3430}
NAME=${BENCH_NAME:-bench}
BINLOGCAT=${BINLOGCAT:-$ROOT/binlogcat}
RESULTS=${BENCH_RESULTS:-$ROOT/bench/reports}
GEN=$HERE/gen_workload.py
PY=/usr/bin/python3

if [ $SMALL -eq 1 ]; then
	W_ROWS=10000 W_UPD=5000 W_DEL=2500
	RESULTS=${BENCH_RESULTS:-$BLF_RUN/bench/reports-small}
else
	W_ROWS=1000000 W_UPD=500000 W_DEL=250000
fi
W_TXN=100
GEN_VERSION=$($PY "$GEN" --version)
CACHE=$BLF_RUN/bench/decoder-g$GEN_VERSION-r$W_ROWS-u$W_UPD-d$W_DEL-t$W_TXN
EXPECTED_ROWS=$((W_ROWS + W_UPD + W_DEL))

log() { echo "bench: $*" >&2; }
die() { log "$*"; exit 1; }

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
cache_ok() {
	[ -r "$CACHE/meta.json" ] || return 1
	$PY - "$CACHE" "$GEN_VERSION" <<-'EOF'
		import json, os, sys
		d, ver = sys.argv[1], sys.argv[2]
		m = json.load(open(os.path.join(d, "meta.json")))
		ok = m.get("generator_version") == ver and all(
		    os.path.getsize(os.path.join(d, f["name"])) == f["bytes"] for f in m["files"])
		sys.exit(0 if ok else 1)
	EOF
}

# The instance lives in its own run directory ($BLF_RUN/bench/mdb/mariadb-bench),
# out of reach of test/run.sh, which stops every $BLF_RUN/mariadb-* instance.
MDB_RUN=$BLF_RUN/bench/mdb
mdb() { BLF_RUN=$MDB_RUN BLF_LOG_DIR=$MDB_RUN/logs "$ROOT/scripts/mariadb.sh" "$@"; }
INSTANCE_UP=0
cleanup() {
	if [ $INSTANCE_UP -eq 1 ]; then
		mdb destroy --name "$NAME" >/dev/null 2>&1 || true
	fi
}
trap cleanup EXIT

generate() {
	local t0 files tmp f
	log "building the workload binlog in $CACHE (generator v$GEN_VERSION)"
	mkdir -p "$BLF_RUN/bench"
	chmod 755 "$BLF_RUN/bench"
	INSTANCE_UP=1
	mdb start --fresh --name "$NAME" --port "$PORT" -- \
		--innodb-flush-log-at-trx-commit=0 --sync-binlog=0 \
		--innodb-buffer-pool-size=1G --innodb-log-file-size=512M \
		--innodb-doublewrite=0 --max-binlog-size=256M \
		--binlog-row-event-max-size=8192 --skip-name-resolve >&2
	sql() { mdb sql --name "$NAME" "$@"; }
	sql -e "RESET MASTER"
	t0=$SECONDS
	log "running the workload (log: $MDB_RUN/workload.log)"
	if ! $PY "$GEN" --rows $W_ROWS --updates $W_UPD --deletes $W_DEL --txn $W_TXN |
		sql >"$MDB_RUN/workload.log" 2>&1; then
		tail -c 600 "$MDB_RUN/workload.log" >&2
		blf_log_tail "$MDB_RUN/mariadb-$NAME/mariadbd.log" 15
		die "the workload failed"
	fi
	sql -e "FLUSH BINARY LOGS"
	log "workload ran in $((SECONDS - t0)) s"
	# every binlog but the last (empty, just opened by FLUSH)
	files=$(sql -N -B -e "SHOW BINARY LOGS" | awk '{print $1}' | sed '$d')
	[ -n "$files" ] || die "no binlog files"
	tmp=$CACHE.tmp.$$
	rm -rf "$tmp"
	mkdir -p "$tmp"
	for f in $files; do
		cp "$MDB_RUN/mariadb-$NAME/$f" "$tmp/"
	done
	mdb stop --name "$NAME" >&2
	mdb destroy --name "$NAME" >&2
	INSTANCE_UP=0

	# counts: binlogcat --count, and mariadb-binlog's row lines
	log "counting rows (binlogcat --count, mariadb-binlog)"
	# shellcheck disable=SC2086
	(cd "$tmp" && "$BINLOGCAT" --count --no-follow --quiet $files) >"$tmp/count.json"
	# shellcheck disable=SC2086
	(cd "$tmp" && mariadb-binlog --no-defaults --verbose --base64-output=decode-rows $files |
		awk '/^### INSERT INTO /{i++} /^### UPDATE /{u++} /^### DELETE FROM /{d++}
			END {printf "{\"insert\":%d,\"update\":%d,\"delete\":%d}\n", i, u, d}') >"$tmp/mysqlbinlog-count.json"
	$PY - "$tmp" "$GEN_VERSION" $W_ROWS $W_UPD $W_DEL $W_TXN $files <<-'EOF'
		import json, os, sys
		d, ver = sys.argv[1], sys.argv[2]
		rows, upd, dele, txn = map(int, sys.argv[3:7])
		files = sys.argv[7:]
		cnt = json.load(open(os.path.join(d, "count.json")))
		mb = json.load(open(os.path.join(d, "mysqlbinlog-count.json")))
		meta = {
		    "generator_version": ver,
		    "workload": {"inserted": rows, "updated": upd, "deleted": dele,
		                 "rows_per_transaction": txn},
		    "files": [{"name": f, "bytes": os.path.getsize(os.path.join(d, f))} for f in files],
		    "binlogcat_count": cnt,
		    "mariadb_binlog_count": mb,
		}
		json.dump(meta, open(os.path.join(d, "meta.json"), "w"), indent=1)
	EOF
	rm -rf "$CACHE"
	mv "$tmp" "$CACHE"
}

if [ $REGEN -eq 1 ] || ! cache_ok; then
	generate
else
	log "reusing the workload binlog in $CACHE"
fi

mapfile -t FILES < <($PY -c 'import json,sys; [print(f["name"]) for f in json.load(open(sys.argv[1]))["files"]]' "$CACHE/meta.json")
cd "$CACHE"

# ---- 2. timings -------------------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/blf-bench.XXXXXX")
trap 'cleanup; rm -rf "$WORK"' EXIT

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
$PY "$HERE/report.py" --cache "$CACHE" --work "$WORK" --results "$RESULTS" --expected-rows $EXPECTED_ROWS
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
		$PY "$HERE/report.py" --append-profile "$WORK" --results "$RESULTS"
	else
		log "perf is not usable here: profile with valgrind --tool=callgrind on a --small workload"
	fi
fi
exit 0
