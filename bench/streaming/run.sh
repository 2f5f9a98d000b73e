#!/usr/bin/env bash
# bench/streaming/run.sh -- the streaming benchmark of issue #3 (not a test).
#
# usage: bash bench/streaming/run.sh [--runs N] [--tools a,b,...] [--tables standard,wide]
#                                    [--small] [--regen] [--keep]
#
# End-to-end row changes per second from a MariaDB binlog backlog to a
# consumer: binlog_fdw's worker streaming the standard workload of issue #2
# (bench/decoder/gen_workload.py: 1,000,000 inserts, 500,000 updates,
# 250,000 deletes, 100 rows per transaction; 1.17 GB of binlog) from its
# first byte, consumed with get()+ack(), side by side in the same run with
# the anchors reading the same binlog from the same server:
#   mariadb-binlog -R --base64-output=decode-rows --verbose > /dev/null,
#   zongji@0.5.1 and @vlasky/zongji@0.9.0 (npm, installed at run time with
#   npm ci from bench/streaming/package-lock.json into
#   bench/streaming/node_modules, never committed), and
#   a MariaDB replica's IO thread (a second mariadbd, SQL thread stopped).
# Then the same for the wide workload (issue 14: wide40, 40 columns of mixed
# types with DOUBLE, DECIMAL, DATETIME(6), JSON, TEXT and BLOB columns;
# gen_workload.py --table wide), the anchors run again on its binlog: its
# ratios are against the anchors of the same run on the same binlog
# (bench/reports/streaming-wide-<date>.{json,md}).
# Tools run round by round in rotated order; best of N.  Prints a table
# (rows/s, ratios to the faster zongji and to the replica IO thread, CPU
# seconds of each process, peak memory, load average, CPU model) and writes
# bench/reports/streaming-<date>.{json,md} and bench/reports/streaming.png.
#
# Tools: fdw-get-client, fdw-get-large, fdw-jsonl-client, fdw-jsonl-large,
# fdw-jsonl-psycopg, fdw-jsonl-node (the pipelined client recipes of
# clients/, docs/clients.md), mariadb-binlog, zongji, vlasky-zongji,
# replica-io (the default), and fdw-get-json-client, fdw-get-json-large
# (see streaming.py).
#
# Every process of the run (both MariaDB servers, PostgreSQL, the anchors
# and the Python consumer) runs with glibc's malloc told to keep freed
# memory (MALLOC_MMAP_THRESHOLD_=32 MB, MALLOC_TRIM_THRESHOLD_=64 MB): on
# virtual machines a page fault costs microseconds, and a consumer that
# gives a batch's memory back and faults it in again for the next one
# measures the kernel.  binlog_fdw's consumer backends set the same with
# mallopt() themselves.
#
# options:
#   --runs N      timed runs per tool (default 3)
#   --tools LIST  a subset of the tools, comma-separated
#   --tables LIST standard, wide or both (the default: standard,wide)
#   --small       a 100x smaller workload (smoke test; results go to
#                 $BLF_RUN/bench/reports-small)
#   --regen       rebuild the workload binlog even if cached
#   --keep        leave the instances running afterwards
#   --profile     profile one extra run of each binlog_fdw variant with perf
#                 (cpu-clock sampling of the worker and the consumer backend;
#                 default: only when a target is missed); --no-profile: never
# environment: BLF_RUN (instances in $BLF_RUN/bench/inst, the workload cache in
#   $BLF_RUN/bench), BENCH_SRC_PORT (3501), BENCH_REPLICA_PORT (3502),
#   BENCH_PG_PORT (5500), BENCH_RESULTS (bench/reports), BENCH_SCALE (N: the
#   row counts divided by N, a shorter run).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/../lib/common.sh"
cd "$ROOT"

RUNS=3
TOOLS=fdw-get-client,fdw-get-large,fdw-jsonl-client,fdw-jsonl-large,fdw-jsonl-psycopg,fdw-jsonl-node,mariadb-binlog,zongji,vlasky-zongji,replica-io
TABLES=standard,wide
SMALL=0
REGEN=0
KEEP=0
PROFILE=auto
while [ $# -gt 0 ]; do
	case "$1" in
	--runs) RUNS=${2:?--runs needs a value}; shift ;;
	--tools) TOOLS=${2:?--tools needs a value}; shift ;;
	--tables) TABLES=${2:?--tables needs a value}; shift ;;
	--small) SMALL=1 ;;
	--regen) REGEN=1 ;;
	--keep) KEEP=1 ;;
	--profile) PROFILE=yes ;;
	--no-profile) PROFILE=no ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
RESULTS=${BENCH_RESULTS:-$ROOT/bench/reports}
[ $SMALL -eq 0 ] || RESULTS=${BENCH_RESULTS:-$BLF_RUN/bench/reports-small}

bench_deps node
export MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=67108864

cleanup() {
	if [ $KEEP -eq 0 ]; then
		pgc stop --name bfdw >/dev/null 2>&1 || true
		mdb stop --name brepl >/dev/null 2>&1 || true
		mdb stop --name bsrc >/dev/null 2>&1 || true
	fi
}
trap cleanup EXIT

# ---- npm packages (the lockfile is committed, node_modules is not) ----------
case ",$TOOLS," in
*zongji*)
	if ! (cd "$HERE" && node -e 'require.resolve("zongji"); require.resolve("@vlasky/zongji")' 2>/dev/null); then
		log "npm ci (zongji@0.5.1, @vlasky/zongji@0.9.0) into bench/streaming/node_modules"
		(cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error >&2) || die "npm ci failed"
	fi ;;
esac

case ",$TOOLS," in
*fdw-jsonl-node*) bash "$ROOT/scripts/install-npm.sh" >&2 || die "npm ci of clients/node failed" ;;
esac

# ---- instances ------------------------------------------------------------------

log "PostgreSQL (restarted so that it loads the installed binlog_fdw.so)"
pg_start bfdw "$BENCH_PG_PORT"
PSQL=(pgc psql --name bfdw -q)
pg_fresh_bench_db bfdw
"${PSQL[@]}" -d bench >/dev/null <<-SQL
	CREATE EXTENSION binlog_fdw;
	CREATE SERVER src FOREIGN DATA WRAPPER binlog_fdw
	  OPTIONS (host '127.0.0.1', port '$BENCH_SRC_PORT', server_id '4501', start 'earliest');
	CREATE USER MAPPING FOR CURRENT_USER SERVER src OPTIONS (user 'repl', password 'repl');
SQL

for table in ${TABLES//,/ }; do
	workload_init $SMALL "$table"
	workload_ensure $REGEN
	source_start
	read -r END_FILE END_POS < <(source_end)
	log "$table workload: source on port $BENCH_SRC_PORT, binlog ends at $END_FILE:$END_POS"
	case ",$TOOLS," in *replica-io*) replica_start ;; esac
	name=streaming
	[ "$table" = standard ] || name=streaming-$table
	warm_source
	set +e
	$PY "$HERE/streaming.py" --runs "$RUNS" --tools "$TOOLS" --pg-port "$BENCH_PG_PORT" \
		--src-port "$BENCH_SRC_PORT" --end-file "$END_FILE" --end-pos "$END_POS" \
		--expected-rows "$EXPECTED_ROWS" --cache "$CACHE" --results "$RESULTS" --profile "$PROFILE" \
		--name "$name"
	rc=$?
	set -e
	[ $rc -le 1 ] || die "streaming.py failed (exit $rc)"
done
exit 0
