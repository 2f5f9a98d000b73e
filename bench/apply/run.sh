#!/usr/bin/env bash
# bench/apply/run.sh -- the apply benchmark of issue #4 (not a test).
#
# usage: bash bench/apply/run.sh [--runs N] [--tools a,b] [--phases p,q] [--small] [--regen] [--keep]
#                                [--rate TX_PER_S] [--lat-seconds S] [--mem-sizes MB,MB,...]
#
# 1. throughput: MariaDB -> PostgreSQL apply of the standard workload's
#    backlog (bench/decoder/gen_workload.py: 1,000,000 inserts, 500,000
#    updates, 250,000 deletes in 100-row transactions; cached binlog shared
#    with bench/decoder and bench/streaming), round by round, best of N:
#      fdw-apply        binlog_fdw, apply() in a loop (max_changes 1,000,000)
#      fdw-continuous   binlog_fdw, continuous 'true' (the apply worker)
#      pg-logical       PostgreSQL 15 native logical replication between two
#                       clusters, the same rows/updates/deletes
#      mariadb-replica  a MariaDB replica's SQL thread on the same binlog
#      pg-copy          server-side COPY of the 1,000,000 rows (reference)
# 2. latency: continuous mode, single-row transactions at --rate (1000) tx/s
#    for --lat-seconds (30): commit -> visible p50/p90/p99.
# 3. memory: one 1 MB, 16 MB, 256 MB and 1 GB transaction through the 16 MB
#    ring: peak RssAnon/VmHWM of the worker and of the apply() backend.
# Prints a table (rows/s, ratio to logical replication, CPU seconds of each
# process, load average, CPU model); writes bench/reports/apply-<date>.{json,md}
# and bench/reports/apply.png, apply-latency.png, apply-memory.png.
#
# options:
#   --runs N        timed runs per tool (default 3)
#   --tools LIST    subset of fdw-apply,fdw-continuous,pg-logical,mariadb-replica,pg-copy,
#                   and (not by default) fdw-parallel (continuous, apply_workers = 4),
#                   mariadb-replica-parallel (slave_parallel_threads = 4, optimistic)
#   --phases LIST   subset of throughput,latency,memory (default all)
#   --rate R, --lat-seconds S, --mem-sizes LIST   latency and memory settings
#   --lat-workers LIST  binlog_fdw.apply_workers values the latency phase runs
#                   with, round by round (default 1: serial; e.g. 1,4)
#   --small         a 100x smaller workload and small memory sizes (smoke test;
#                   results go to $BLF_RUN/bench/reports-small)
#   --regen         rebuild the cached workload
#   --keep          leave the instances running afterwards
#   --tables LIST   standard, wide or both (default standard,wide): the wide
#                   workload (wide40, 40 columns of mixed types with DOUBLE,
#                   DECIMAL, DATETIME(6), JSON, TEXT and BLOB;
#                   gen_workload.py --table wide) is run after the standard
#                   one, throughput only, with the anchors that apply the
#                   same binlog (fdw-apply, fdw-continuous, mariadb-replica;
#                   there is no PostgreSQL form of it for pg-logical and
#                   pg-copy): apply-wide-<date>.{json,md}
#   --profile       profile one extra run of fdw-apply and fdw-continuous with
#                   perf (cpu-clock sampling; default: only when binlog_fdw is
#                   slower than logical replication); --no-profile: never
# environment: BLF_RUN, BENCH_SRC_PORT (3501), BENCH_REPLICA_PORT (3502),
#   BENCH_LAT_PORT (3503), BENCH_PG_PORT (5500), BENCH_PUB_PORT (5503),
#   BENCH_SUB_PORT (5504), BENCH_RESULTS (bench/reports).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/../lib/common.sh"
cd "$ROOT"

RUNS=3
TOOLS=fdw-apply,fdw-continuous,pg-logical,mariadb-replica,pg-copy
PHASES=throughput,latency,memory
SMALL=0
REGEN=0
KEEP=0
PROFILE=auto
RATE=1000
LAT_SECONDS=30
LAT_WORKERS=1
MEM_SIZES=1,16,256,1024
TABLES=standard,wide
TABLE=
ARGS=("$@")
while [ $# -gt 0 ]; do
	case "$1" in
	--tables) TABLES=${2:?--tables needs a value}; shift ;;
	--table) TABLE=${2:?--table needs a value}; shift ;;
	--runs) RUNS=${2:?--runs needs a value}; shift ;;
	--tools) TOOLS=${2:?--tools needs a value}; shift ;;
	--phases) PHASES=${2:?--phases needs a value}; shift ;;
	--rate) RATE=${2:?}; shift ;;
	--lat-seconds) LAT_SECONDS=${2:?}; shift ;;
	--lat-workers) LAT_WORKERS=${2:?}; shift ;;
	--mem-sizes) MEM_SIZES=${2:?}; shift ;;
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
if [ -z "$TABLE" ]; then
	# one run per table, one after the other
	for t in ${TABLES//,/ }; do
		bash "$0" "${ARGS[@]}" --table "$t" || exit $?
	done
	exit 0
fi
NAME=apply
if [ "$TABLE" != standard ]; then
	NAME=apply-$TABLE
	PHASES=throughput
	t=
	for x in ${TOOLS//,/ }; do
		case $x in fdw-apply | fdw-continuous | mariadb-replica) t=$t${t:+,}$x ;; esac
	done
	TOOLS=$t
	[ -n "$TOOLS" ] || exit 0
fi
RESULTS=${BENCH_RESULTS:-$ROOT/bench/reports}
if [ $SMALL -eq 1 ]; then
	RESULTS=${BENCH_RESULTS:-$BLF_RUN/bench/reports-small}
	[ "$MEM_SIZES" != 1,16,256,1024 ] || MEM_SIZES=1,4
	[ "$LAT_SECONDS" != 30 ] || LAT_SECONDS=5
fi
has() { case ",$1," in *",$2,"*) return 0 ;; *) return 1 ;; esac; }

bench_deps
workload_init $SMALL "$TABLE"
workload_ensure $REGEN

# the same workload as PostgreSQL statements and as COPY rows (cached)
PGW=$BLF_RUN/bench/pgload-g$GEN_VERSION-r$W_ROWS-u$W_UPD-d$W_DEL-t$W_TXN
if [ "$TABLE" = standard ] && has "$PHASES" throughput && { [ $REGEN -eq 1 ] || [ ! -s "$PGW/rows.tsv" ] || [ ! -s "$PGW/last.sql" ]; }; then
	log "writing the PostgreSQL form of the workload to $PGW"
	rm -rf "$PGW"
	$PY "$GEN" --rows $W_ROWS --updates $W_UPD --deletes $W_DEL --txn $W_TXN |
		$PY "$HERE/pg_workload.py" "$PGW"
fi
[ ! -d "$PGW" ] || chmod -R a+rX "$PGW"
chmod a+x "$BLF_RUN" "$BLF_RUN/bench" 2>/dev/null || true

cleanup() {
	if [ $KEEP -eq 0 ]; then
		for c in bfdw bpub bsub; do pgc stop --name $c >/dev/null 2>&1 || true; done
		for m in brepl bsrc blat; do mdb stop --name $m >/dev/null 2>&1 || true; done
	fi
}
trap cleanup EXIT

# ---- instances ------------------------------------------------------------------
source_start
read -r END_FILE END_POS < <(source_end)
LAST_COMMIT=$(source_last_commit)
log "source: port $BENCH_SRC_PORT, binlog ends at $END_FILE:$END_POS, the workload's last transaction at $LAST_COMMIT"
if has "$PHASES" throughput && { has "$TOOLS" mariadb-replica || has "$TOOLS" mariadb-replica-parallel; }; then replica_start; fi
if has "$PHASES" latency || has "$PHASES" memory; then
	# a fresh source for the latency and memory tests (their writes must not
	# extend the backlog's binlog)
	mdb start --fresh --name blat --port "$BENCH_LAT_PORT" -- \
		--innodb-buffer-pool-size=512M --innodb-log-file-size=512M \
		--innodb-flush-log-at-trx-commit=2 --sync-binlog=0 --max-binlog-size=1G \
		--skip-name-resolve >&2
fi

log "PostgreSQL clusters (restarted so that they load the installed binlog_fdw.so)"
pg_start bfdw "$BENCH_PG_PORT"
PSQL=(pgc psql --name bfdw -q)
pg_fresh_bench_db bfdw
"${PSQL[@]}" -d bench >/dev/null <<-SQL
	CREATE EXTENSION binlog_fdw;
	CREATE SERVER src FOREIGN DATA WRAPPER binlog_fdw
	  OPTIONS (host '127.0.0.1', port '$BENCH_SRC_PORT', server_id '4511', start 'earliest');
	CREATE SERVER srcc FOREIGN DATA WRAPPER binlog_fdw
	  OPTIONS (host '127.0.0.1', port '$BENCH_SRC_PORT', server_id '4512', start 'earliest',
	           continuous 'true');
	CREATE SERVER lat FOREIGN DATA WRAPPER binlog_fdw
	  OPTIONS (host '127.0.0.1', port '$BENCH_LAT_PORT', server_id '4513', start 'current',
	           continuous 'true', include '^latdb\.');
	CREATE USER MAPPING FOR CURRENT_USER SERVER src OPTIONS (user 'repl', password 'repl');
	CREATE USER MAPPING FOR CURRENT_USER SERVER srcc OPTIONS (user 'repl', password 'repl');
	CREATE USER MAPPING FOR CURRENT_USER SERVER lat OPTIONS (user 'repl', password 'repl');
SQL
if has "$PHASES" throughput && has "$TOOLS" pg-copy; then
	"${PSQL[@]}" -d bench -c "CREATE SCHEMA copyref" >/dev/null
	sed 's/bench\./copyref./g; /CREATE SCHEMA/d' "$PGW/schema.sql" | "${PSQL[@]}" -d bench >/dev/null
fi
if has "$PHASES" throughput && has "$TOOLS" pg-logical; then
	pg_start bpub "$BENCH_PUB_PORT"
	pg_start bsub "$BENCH_SUB_PORT"
	# a subscription left by an earlier run blocks DROP DATABASE: detach and drop it
	pgc psql --name bsub -qAt -d postgres -c "SELECT 1 FROM pg_database WHERE datname = 'bench'" | grep -q 1 &&
		pgc psql --name bsub -q -d bench >/dev/null 2>&1 <<-'SQL' || true
		ALTER SUBSCRIPTION bs DISABLE;
		ALTER SUBSCRIPTION bs SET (slot_name = NONE);
		DROP SUBSCRIPTION bs;
		SQL
	pgc psql --name bpub -q -d postgres -c \
		"SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = 'bs'" >/dev/null
	for c in bpub bsub; do
		pgc psql --name $c -q -c "DROP DATABASE IF EXISTS bench WITH (FORCE)" -c "CREATE DATABASE bench" 2>&1 |
			grep -v 'does not exist, skipping' >&2 || true
		pgc psql --name $c -q -d bench -f "$PGW/schema.sql" >/dev/null || die "schema on $c failed"
	done
	pgc psql --name bpub -q -d bench -c \
		"CREATE PUBLICATION bp FOR TABLE bench.sbtest1 WITH (publish = 'insert, update, delete')" >/dev/null
fi

warm_source
set +e
$PY "$HERE/apply.py" --runs "$RUNS" --tools "$TOOLS" --phases "$PHASES" \
	--pg-port "$BENCH_PG_PORT" --pub-port "$BENCH_PUB_PORT" --sub-port "$BENCH_SUB_PORT" \
	--src-port "$BENCH_SRC_PORT" --lat-port "$BENCH_LAT_PORT" \
	--end-file "$END_FILE" --end-pos "$END_POS" --last-commit "$LAST_COMMIT" \
	--w-rows "$W_ROWS" --w-upd "$W_UPD" --w-del "$W_DEL" \
	--rate "$RATE" --lat-seconds "$LAT_SECONDS" --lat-workers "$LAT_WORKERS" --mem-sizes "$MEM_SIZES" \
	--cache "$CACHE" --pgw "$PGW" --results "$RESULTS" --pg-options "${PG_BENCH_OPTS[*]}" --profile "$PROFILE" \
	--name "$NAME" --table-name "$W_TNAME"
rc=$?
set -e
[ $rc -le 1 ] || die "apply.py failed (exit $rc)"
exit 0
