#!/usr/bin/env bash
# bench/load/run.sh -- the initial-load benchmark of issue #11 (not a test).
#
# usage: bash bench/load/run.sh [--runs N] [--tools a,b] [--tables standard,wide]
#                               [--rows N] [--chunk-rows N] [--small] [--regen] [--keep]
#
# The same MariaDB table T copied into PostgreSQL by every tool, in the same
# run, round by round (order rotated), best of N:
#   fdw-snapshot   SELECT * FROM binlog_fdw.snapshot(server, ARRAY['T'])
#                  (one transaction, one connection)
#   fdw-load       CALL binlog_fdw.load(server, ARRAY['T'], chunk_rows)
#                  (one session, a transaction per chunk)
#   fdw-load-r2    CALL load(..., parallel => 2) of T: two loaders, each on
#                  another key range of it at once
#   fdw-load-2s    two sessions CALL load() on T at once (they share its
#                  chunks)
#   fdw-load-2t    two sessions CALL load() at once, each on one half of the
#                  rows (T_h1, T_h2)
#   pgloader       Debian's pgloader (3.6), MySQL -> PostgreSQL, its default
#                  options (SBCL heap raised to 4 GB); timed: the table's data
#                  copy as pgloader reports it (its wall time is recorded too)
#   pipe           mariadb --batch --quick -e 'SELECT ...' | psql -c '\copy T FROM STDIN'
#   pg-copy        server-side COPY FROM a local file of the same rows (the
#                  ingest ceiling)
# Tables: standard, the standard one of the benchmarks (bench.sbtest1 of
# bench/decoder/gen_workload.py: id BIGINT PK, k INT, c VARCHAR(120),
# pad CHAR(60), amount DECIMAL(12,2), created DATETIME(6), doc JSON), with
# --rows (2,000,000) rows made directly on MariaDB by INSERT ... SELECT FROM
# seq_1_to_N (no binlog: sql_log_bin=0), the same generated shapes (11-digit
# groups, a JSON document per row, UTF-8 names); wide, wide.wide40 (40
# columns of mixed types, gen_workload.py --table wide; its INSERTs, 200,000
# rows).  Prints a table (rows/s, ratios to pgloader, to the pipe and to
# the COPY ceiling); writes bench/reports/load-<date>.{json,md} and
# bench/reports/load.png (wide: load-wide-<date>.{json,md}, load-wide.png).
#
# options:
#   --runs N         timed runs per tool (default 3)
#   --tools LIST     subset of fdw-snapshot,fdw-load,fdw-load-2s,fdw-load-r2,fdw-load-2t,
#                    fdw-load-p2,pgloader,pipe,pg-copy
#   --tables LIST    standard, wide or both (default standard,wide), one after
#                    the other
#   --rows N         rows of the table (default 2,000,000, wide 200,000;
#                    --small: 5,000, wide 2,000)
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
TOOLS=fdw-snapshot,fdw-load,fdw-load-2s,fdw-load-r2,fdw-load-2t,fdw-load-p2,pgloader,pipe,pg-copy
TABLES=standard,wide
TABLE=
ROWS=
CHUNK=
SMALL=0
REGEN=0
KEEP=0
ARGS=("$@")
while [ $# -gt 0 ]; do
	case "$1" in
	--runs) RUNS=${2:?--runs needs a value}; shift ;;
	--tools) TOOLS=${2:?--tools needs a value}; shift ;;
	--tables) TABLES=${2:?--tables needs a value}; shift ;;
	--table) TABLE=${2:?--table needs a value}; shift ;;
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
if [ -z "$TABLE" ]; then
	# one run per table, one after the other
	for t in ${TABLES//,/ }; do
		bash "$0" "${ARGS[@]}" --table "$t" || exit $?
	done
	exit 0
fi
case "$TABLE" in
standard) NAME=load DB=bench TNAME=sbtest1 DEF_ROWS=2000000 SMALL_ROWS=5000 ;;
wide) NAME=load-wide DB=wide TNAME=wide40 DEF_ROWS=200000 SMALL_ROWS=2000 ;;
*) die "unknown table $TABLE (standard or wide)" ;;
esac
RESULTS=${BENCH_RESULTS:-$ROOT/bench/reports}
if [ $SMALL -eq 1 ]; then
	RESULTS=${BENCH_RESULTS:-$BLF_RUN/bench/reports-small}
	: "${ROWS:=$SMALL_ROWS}" "${CHUNK:=1000}"
fi
: "${ROWS:=$DEF_ROWS}" "${CHUNK:=100000}"
# whole INSERTs of gen_workload.py (100 rows each)
[ "$TABLE" = standard ] || ROWS=$((ROWS / 100 * 100))
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
MARKER="rows=$ROWS gen=1 $($PY "$GEN" --version)"
have=$(mdb sql --name bload -N -B -e "SELECT table_comment FROM information_schema.tables
	WHERE table_schema = '$DB' AND table_name = '$TNAME'" 2>/dev/null || true)
if [ $REGEN -eq 1 ] || [ "$have" != "$MARKER" ]; then
	log "making $DB.$TNAME with $ROWS rows on MariaDB"
	t0=$SECONDS
	if [ "$TABLE" = standard ]; then
		$PY "$HERE/load.py" --print-source-sql --rows "$ROWS" | mdb sql --name bload ||
			die "making the source table failed"
	else
		# the wide workload's schema and INSERTs, in database "wide", outside the binlog
		$PY "$GEN" --table wide --rows "$ROWS" --updates 0 --deletes 0 |
			sed -e '1,8{s/ bench;$/ wide;/; s/sql_log_bin = 1/sql_log_bin = 0/}' |
			mdb sql --name bload >"$BENCH_INST/load-wide.log" 2>&1 ||
			{ tail -c 600 "$BENCH_INST/load-wide.log" >&2; die "making the source table failed"; }
	fi
	$PY "$HERE/load.py" --table "$TABLE" --print-halves-sql --rows "$ROWS" --marker "$MARKER" |
		mdb sql --name bload >/dev/null || die "making the halves of the source table failed"
	log "made in $((SECONDS - t0)) s"
fi

# the rows as the pipe's mariadb client prints them (the COPY ceiling's file)
DATA=$BLF_RUN/bench/load
mkdir -p "$DATA"
chmod 755 "$DATA"
ROWSFILE=$DATA/$TNAME-$ROWS.tsv
if [ $REGEN -eq 1 ] || [ ! -s "$ROWSFILE" ] || [ "$(wc -l <"$ROWSFILE")" -ne "$ROWS" ]; then
	log "writing the rows to $ROWSFILE"
	$PY "$HERE/load.py" --table "$TABLE" --src-port "$SRC_PORT" --write-rows "$ROWSFILE.tmp" ||
		die "writing the rows failed"
	mv "$ROWSFILE.tmp" "$ROWSFILE"
fi
chmod a+r "$ROWSFILE"

# ---- PostgreSQL -------------------------------------------------------------------
log "PostgreSQL cluster (restarted so that it loads the installed binlog_fdw.so)"
pg_start bload "$PG_PORT"
pg_fresh_bench_db bload
pgc psql --name bload -q -d bench -c "CREATE EXTENSION binlog_fdw" -c "CREATE SCHEMA $DB" >/dev/null

# the source's rows in memory before the first round (the file: just written or read)
mdb sql --name bload -N -B -e "SELECT COUNT(*), SUM(LENGTH(k)) FROM $DB.$TNAME;
	SELECT COUNT(*), SUM(LENGTH(k)) FROM $DB.${TNAME}_h1; SELECT COUNT(*), SUM(LENGTH(k)) FROM $DB.${TNAME}_h2" >/dev/null
cat "$ROWSFILE" >/dev/null

set +e
$PY "$HERE/load.py" --table "$TABLE" --name "$NAME" --runs "$RUNS" --tools "$TOOLS" --rows "$ROWS" \
	--chunk-rows "$CHUNK" --src-port "$SRC_PORT" --pg-port "$PG_PORT" --rows-file "$ROWSFILE" \
	--work "$DATA" --results "$RESULTS" --pg-options "${PG_BENCH_OPTS[*]}"
rc=$?
set -e
[ $rc -le 1 ] || die "load.py failed (exit $rc)"
exit 0
