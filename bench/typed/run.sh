#!/usr/bin/env bash
# bench/typed/run.sh -- the typed consumption benchmark of issue #12 (not a test).
#
# usage: bash bench/typed/run.sh [--runs N] [--tools a,b] [--scale N] [--small]
#                                [--regen] [--keep]
#
# The standard workload (bench/decoder/gen_workload.py, bench.sbtest1: id
# BIGINT PK, k INT, c VARCHAR(120), pad CHAR(60), amount DECIMAL(12,2),
# created DATETIME(6), doc JSON; inserts, updates, deletes in transactions of
# 100), a fifth of it by default (--scale 5: 200,000 inserts, 100,000
# updates, 50,000 deletes = 350,000 row changes), buffered in the ring of one
# source; then, round by round in rotated order, best of N, in the same run:
#   typed-peek   SELECT count(t) FROM the IMPORTed foreign table ft.sbtest1 t
#                (every column converted)
#   typed-peek-nodoc  every column but the JSON doc (no jsonb parsing)
#   typed-peek-k SELECT count(k) FROM ft.sbtest1 (one column converted)
#   get-table    get_table(src, NULL::ft.sbtest1, N), then rollback()
#   get-json     get_json(src, N), then rollback()
#   get          get(src, N), then rollback()
# (bench/typed/typed.py).  Prints a table (changes/s, the backend's CPU
# seconds, speed relative to get-json); writes
# bench/reports/typed-<date>.{json,md}.
#
# options:
#   --runs N     timed runs per tool (default 5)
#   --tools LIST subset of typed-peek,typed-peek-nodoc,typed-peek-k,get-table,get-json,get
#   --scale N    the standard workload divided by N (default 5; 1: the full
#                1,750,000 changes, which need a ring of about 2 GB)
#   --small      a 100x smaller workload (smoke test; results go to
#                $BLF_RUN/bench/reports-small)
#   --regen      rebuild the cached workload binlog
#   --keep       leave the instances running afterwards
# environment: BLF_RUN, BENCH_SRC_PORT (3501, the MariaDB source shared with
#   the streaming and apply benchmarks: run one at a time),
#   BENCH_TYPED_PG_PORT (5506), BENCH_TYPED_RING (binlog_fdw.ring_size,
#   default 1GB), BENCH_RESULTS (bench/reports), BLF_SKIP_BUILD=1 (do not
#   run make / make install; with BLF_DESTDIR, as in scripts/sandbox.sh, the
#   build is installed into that tree, as test/run.sh does).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/../lib/common.sh"
cd "$ROOT"

RUNS=5
TOOLS=typed-peek,typed-peek-nodoc,typed-peek-k,get-table,get-json,get
SCALE=5
SMALL=0
REGEN=0
KEEP=0
while [ $# -gt 0 ]; do
	case "$1" in
	--runs) RUNS=${2:?--runs needs a value}; shift ;;
	--tools) TOOLS=${2:?--tools needs a value}; shift ;;
	--scale) SCALE=${2:?--scale needs a value}; shift ;;
	--small) SMALL=1 ;;
	--regen) REGEN=1 ;;
	--keep) KEEP=1 ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
RESULTS=${BENCH_RESULTS:-$ROOT/bench/reports}
[ $SMALL -eq 0 ] || RESULTS=${BENCH_RESULTS:-$BLF_RUN/bench/reports-small}
PG_PORT=${BENCH_TYPED_PG_PORT:-5506}
RING=${BENCH_TYPED_RING:-1GB}

if [ "${BLF_SKIP_BUILD:-0}" != 1 ]; then
	{ make -s -C "$ROOT" && make -s -C "$ROOT" install ${BLF_DESTDIR:+DESTDIR=$BLF_DESTDIR}; } >&2 ||
		die "make or make install failed"
fi
# what this benchmark needs (no charts: not bench_deps's matplotlib)
$PY -c 'import psycopg2, pymysql' 2>/dev/null && command -v mariadbd >/dev/null &&
	[ -x "$BLF_PG_BINDIR/postgres" ] || bash "$ROOT/bench/install-deps.sh" >&2 ||
	die "bench/install-deps.sh failed"
BENCH_SCALE=$SCALE workload_init $SMALL standard
workload_ensure $REGEN

cleanup() {
	if [ $KEEP -eq 0 ]; then
		pgc stop --name btyped >/dev/null 2>&1 || true
		mdb stop --name bsrc >/dev/null 2>&1 || true
	fi
}
trap cleanup EXIT

source_start
warm_source
log "PostgreSQL cluster btyped (restarted so that it loads the installed binlog_fdw.so), ring $RING"
pg_start btyped "$PG_PORT" -c binlog_fdw.ring_size="$RING"
pg_fresh_bench_db btyped
pgc psql --name btyped -q -d bench -c "CREATE EXTENSION binlog_fdw" >/dev/null

log "load average before: $(bench_loadavg)"
$PY "$HERE/typed.py" --pg-port "$PG_PORT" --src-port "$BENCH_SRC_PORT" --runs "$RUNS" \
	--tools "$TOOLS" --inserts "$W_ROWS" --updates "$W_UPD" --deletes "$W_DEL" \
	--results "$RESULTS" --workload "$CACHE"
log "load average after: $(bench_loadavg)"
