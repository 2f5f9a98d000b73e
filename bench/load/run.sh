#!/usr/bin/env bash
# bench/load/run.sh -- the initial-load benchmark of issue #11 (not a test).
#
# usage: bash bench/load/run.sh [--runs N] [--tools a,b] [--rows N] [--chunk-rows N]
#                               [--small] [--regen] [--keep]
#
# The same MariaDB table copied into PostgreSQL by every tool, in the same
# run, round by round (order rotated), best of N:
#   fdw-snapshot   SELECT * FROM binlog_fdw.snapshot(server, ARRAY['bench.sbtest1'])
#                  (one transaction, one connection)
#   fdw-load       CALL binlog_fdw.load(server, ARRAY['bench.sbtest1'], chunk_rows)
#                  (one session, a transaction per chunk)
#   fdw-load-2s    two sessions CALL load() on the same table at once (they
#                  share its chunks)
#   fdw-load-2t    two sessions CALL load() at once, each on one half of the
#                  rows (bench.sbtest1_h1, bench.sbtest1_h2)
#   pgloader       Debian's pgloader (3.6), MySQL -> PostgreSQL, its defaults
#                  (4 workers, concurrency 1); timed: the table's data copy as
#                  pgloader reports it (its wall time is recorded too)
#   pipe           mariadb --batch --quick -e 'SELECT ...' | psql -c '\copy ...'
#   pg-copy        server-side COPY FROM a local file of the same rows (the
#                  ingest ceiling)
# The table is the standard one of the benchmarks (bench.sbtest1 of
# bench/decoder/gen_workload.py: id BIGINT PK, k INT, c VARCHAR(120),
# pad CHAR(60), amount DECIMAL(12,2), created DATETIME(6), doc JSON), with
# --rows (2,000,000) rows made directly on MariaDB by INSERT ... SELECT FROM
# seq_1_to_N (no binlog: sql_log_bin=0), the same generated shapes (11-digit
# groups, a JSON document per row, UTF-8 names).  Prints a table (rows/s,
# ratios to pgloader and to the COPY ceiling); writes
# bench/reports/load-<date>.{json,md} and bench/reports/load.png.
#
# options:
#   --runs N         timed runs per tool (default 3)
#   --tools LIST     subset of fdw-snapshot,fdw-load,fdw-load-2s,fdw-load-2t,pgloader,pipe,pg-copy
#   --rows N         rows of the table (default 2,000,000; --small: 5,000)
#   --chunk-rows N   load()'s chunk_rows (default 100,000; --small: 1,000)
#   --small          a small table (smoke test; results go to
#                    $BLF_RUN/bench/reports-small)
#   --regen          rebuild the MariaDB table
#   --keep           leave the instances running afterwards
# environment: BLF_RUN, BENCH_LOAD_SRC_PORT (3505), BENCH_LOAD_PG_PORT (5505),
#   BENCH_RESULTS (bench/reports), BLF_SKIP_BUILD=1 (do not run make / make
#   install; with BLF_DESTDIR, as in scripts/sandbox.sh, the build is
#   installed into that tree, as test/run.sh does).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/../lib/common.sh"
cd "$ROOT"

RUNS=3
TOOLS=fdw-snapshot,fdw-load,fdw-load-2s,fdw-load-2t,pgloader,pipe,pg-copy
ROWS=
CHUNK=
SMALL=0
REGEN=0
KEEP=0
while [ $# -gt 0 ]; do
	case "$1" in
	--runs) RUNS=${2:?--runs needs a value}; shift ;;
	--tools) TOOLS=${2:?--tools needs a value}; shift ;;
	--rows) ROWS=${2:?--rows needs a value}; shift ;;
	--chunk-rows) CHUNK=${2:?--chunk-rows needs a value}; shift ;;
	--small) SMALL=1 ;;
	--regen) REGEN=1 ;;
	--keep) KEEP=1 ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
RESULTS=${BENCH_RESULTS:-$ROOT/bench/reports}
if [ $SMALL -eq 1 ]; then
	RESULTS=${BENCH_RESULTS:-$BLF_RUN/bench/reports-small}
	: "${ROWS:=5000}" "${CHUNK:=1000}"
fi
: "${ROWS:=2000000}" "${CHUNK:=100000}"
SRC_PORT=${BENCH_LOAD_SRC_PORT:-3505}
PG_PORT=${BENCH_LOAD_PG_PORT:-5505}
has() { case ",$1," in *",$2,"*) return 0 ;; *) return 1 ;; esac; }

# the build, installed where this PostgreSQL loads it (test/run.sh does the same)
if [ "${BLF_SKIP_BUILD:-0}" != 1 ]; then
	{ make -s -C "$ROOT" && make -s -C "$ROOT" install ${BLF_DESTDIR:+DESTDIR=$BLF_DESTDIR}; } >&2 ||
		die "make or make install failed"
fi
bench_deps
command -v pgloader >/dev/null || ! has "$TOOLS" pgloader ||
	bash "$ROOT/bench/install-deps.sh" >&2 || die "bench/install-deps.sh failed"

cleanup() {
	if [ $KEEP -eq 0 ]; then
		pgc stop --name bload >/dev/null 2>&1 || true
		mdb stop --name bload >/dev/null 2>&1 || true
	fi
}
trap cleanup EXIT

# ---- the source table on MariaDB (kept between runs) ----------------------------
mkdir -p "$BENCH_INST"
chmod 1777 "$BENCH_INST"
chmod a+x "$BLF_RUN" "$BLF_RUN/bench" 2>/dev/null || true
mdb start --name bload --port "$SRC_PORT" -- \
	--innodb-buffer-pool-size=2G --innodb-log-file-size=512M \
	--innodb-flush-log-at-trx-commit=2 --sync-binlog=0 --skip-name-resolve >&2
MARKER="rows=$ROWS gen=1"
have=$(mdb sql --name bload -N -B -e "SELECT table_comment FROM information_schema.tables
	WHERE table_schema = 'bench' AND table_name = 'sbtest1'" 2>/dev/null || true)
if [ $REGEN -eq 1 ] || [ "$have" != "$MARKER" ]; then
	log "making bench.sbtest1 with $ROWS rows on MariaDB (INSERT ... SELECT FROM seq_1_to_$ROWS)"
	t0=$SECONDS
	$PY "$HERE/load.py" --print-source-sql --rows "$ROWS" --marker "$MARKER" | mdb sql --name bload ||
		die "making the source table failed"
	log "made in $((SECONDS - t0)) s"
fi

# the rows as the mariadb client prints them (the COPY ceiling's file)
DATA=$BLF_RUN/bench/load
mkdir -p "$DATA"
chmod 755 "$DATA"
ROWSFILE=$DATA/sbtest1-$ROWS.tsv
if [ $REGEN -eq 1 ] || [ ! -s "$ROWSFILE" ] || [ "$(wc -l <"$ROWSFILE")" -ne "$ROWS" ]; then
	log "writing the rows to $ROWSFILE"
	mdb sql --name bload --batch --quick --skip-column-names \
		-e "SELECT id, k, c, pad, amount, created, doc FROM bench.sbtest1 ORDER BY id" >"$ROWSFILE.tmp"
	mv "$ROWSFILE.tmp" "$ROWSFILE"
fi
chmod a+r "$ROWSFILE"

# ---- PostgreSQL -------------------------------------------------------------------
log "PostgreSQL cluster (restarted so that it loads the installed binlog_fdw.so)"
pg_start bload "$PG_PORT"
pg_fresh_bench_db bload
pgc psql --name bload -q -d bench -c "CREATE EXTENSION binlog_fdw" -c "CREATE SCHEMA bench" >/dev/null

# both servers' data in memory before the first round
mdb sql --name bload -N -B -e "SELECT COUNT(*), SUM(LENGTH(doc)) FROM bench.sbtest1;
	SELECT COUNT(*) FROM bench.sbtest1_h1; SELECT COUNT(*) FROM bench.sbtest1_h2" >/dev/null
cat "$ROWSFILE" >/dev/null

set +e
$PY "$HERE/load.py" --runs "$RUNS" --tools "$TOOLS" --rows "$ROWS" --chunk-rows "$CHUNK" \
	--src-port "$SRC_PORT" --pg-port "$PG_PORT" --rows-file "$ROWSFILE" --work "$DATA" \
	--results "$RESULTS" --pg-options "${PG_BENCH_OPTS[*]}" --small "$SMALL"
rc=$?
set -e
[ $rc -le 1 ] || die "load.py failed (exit $rc)"
exit 0
