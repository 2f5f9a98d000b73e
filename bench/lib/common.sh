# bench/lib/common.sh -- shared set-up of the benchmarks (bench/decoder/run.sh,
# bench/streaming/run.sh, bench/apply/run.sh).  Source it from a run.sh.
# shellcheck shell=bash disable=SC2034
#
# What it provides:
#   the standard workload binlog of issue #2 (bench/decoder/gen_workload.py),
#   cached under $BLF_RUN/bench/decoder-g<version>-r..-u..-d..-t../ (all three
#   benchmarks read the same files), and generated on a throwaway MariaDB
#   when missing;
#   throwaway instances for the benchmarks, out of reach of test/run.sh, in
#   $BENCH_INST ($BLF_RUN/bench/inst): a MariaDB source whose binlog IS the
#   cached workload (its files copied into a fresh data directory), MariaDB
#   replicas, PostgreSQL clusters.
#
# Ports (all overridable): BENCH_SRC_PORT 3501 (source), BENCH_REPLICA_PORT
# 3502, BENCH_LAT_PORT 3503 (latency/memory source), BENCH_GEN_PORT 3509
# (workload generation), BENCH_PG_PORT 5500 (binlog_fdw's PostgreSQL),
# BENCH_PUB_PORT 5503 and BENCH_SUB_PORT 5504 (native logical replication).
# The streaming and apply benchmarks share these instances: run them one at
# a time.

BENCH_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH_LIB/../.." && pwd)
. "$ROOT/scripts/env.sh"
PY=/usr/bin/python3
GEN=$ROOT/bench/decoder/gen_workload.py

BENCH_INST=${BENCH_INST:-$BLF_RUN/bench/inst}
BENCH_SRC_PORT=${BENCH_SRC_PORT:-3501}
BENCH_REPLICA_PORT=${BENCH_REPLICA_PORT:-3502}
BENCH_LAT_PORT=${BENCH_LAT_PORT:-3503}
BENCH_GEN_PORT=${BENCH_GEN_PORT:-3509}
BENCH_PG_PORT=${BENCH_PG_PORT:-5500}
BENCH_PUB_PORT=${BENCH_PUB_PORT:-5503}
BENCH_SUB_PORT=${BENCH_SUB_PORT:-5504}
export BENCH_INST BENCH_SRC_PORT BENCH_REPLICA_PORT BENCH_LAT_PORT BENCH_PG_PORT
export BENCH_PUB_PORT BENCH_SUB_PORT

log() { echo "bench: $*" >&2; }
die() { log "$*"; exit 1; }

# mdb / pgc: scripts/mariadb.sh and scripts/postgres.sh on $BENCH_INST
mdb() { BLF_RUN=$BENCH_INST BLF_LOG_DIR=$BENCH_INST/logs "$ROOT/scripts/mariadb.sh" "$@"; }
pgc() {
	BLF_RUN=$BENCH_INST BLF_LOG_DIR=$BENCH_INST/logs BLF_PG_SOCKET_DIR=$BENCH_INST \
		BLF_PG_DATA=$BENCH_INST/pg-main BLF_PG_LOG=$BENCH_INST/pg-main/postgresql.log \
		"$ROOT/scripts/postgres.sh" "$@"
}

# ---- packages ------------------------------------------------------------------
bench_deps() {
	# bench_deps [node]: the benchmark-only packages (bench/install-deps.sh)
	local need=0
	$PY -c 'import matplotlib, psycopg2, pymysql' 2>/dev/null || need=1
	[ -x /usr/bin/time ] || need=1
	command -v mariadbd >/dev/null || need=1
	[ -x "$BLF_PG_BINDIR/postgres" ] || need=1
	if [ "${1:-}" = node ] && ! command -v npm >/dev/null; then need=1; fi
	if [ $need -eq 1 ]; then
		bash "$ROOT/bench/install-deps.sh" ${1:+"--$1"} >&2 || die "bench/install-deps.sh failed"
	fi
	[ -e "$($BLF_PG_BINDIR/pg_config --pkglibdir 2>/dev/null || pg_config --pkglibdir)/binlog_fdw.so" ] ||
		die "binlog_fdw is not installed: make && make install"
}

# ---- the standard workload (cached) --------------------------------------------
workload_init() {
	# workload_init SMALL(0|1) [TABLE]: sets W_* and CACHE.  TABLE: standard
	# (sbtest1, the workload of issue #2) or wide (wide40: 40 columns of mixed
	# types, issue 14; a fifth of the rows).  BENCH_SCALE=N divides the row
	# counts by N (a shorter run; --small divides them by 100).
	local div=${BENCH_SCALE:-1}
	W_TABLE=${2:-standard}
	[ "${1:-0}" -eq 1 ] && div=100
	case "$W_TABLE" in
	standard) W_ROWS=$((1000000 / div)) W_UPD=$((500000 / div)) W_DEL=$((250000 / div)) W_TNAME=sbtest1 ;;
	wide) W_ROWS=$((200000 / div)) W_UPD=$((100000 / div)) W_DEL=$((50000 / div)) W_TNAME=wide40 ;;
	*) die "unknown workload table $W_TABLE (standard or wide)" ;;
	esac
	W_TXN=100
	# whole transactions
	W_ROWS=$((W_ROWS / W_TXN * W_TXN)) W_UPD=$((W_UPD / W_TXN * W_TXN)) W_DEL=$((W_DEL / W_TXN * W_TXN))
	GEN_VERSION=$($PY "$GEN" --version)
	if [ "$W_TABLE" = standard ]; then
		CACHE=$BLF_RUN/bench/decoder-g$GEN_VERSION-r$W_ROWS-u$W_UPD-d$W_DEL-t$W_TXN
		W_DDL=$SBTEST_DDL
	else
		CACHE=$BLF_RUN/bench/decoder-g$GEN_VERSION-$W_TABLE-r$W_ROWS-u$W_UPD-d$W_DEL-t$W_TXN
		# the table of the workload's schema (zongji reads information_schema)
		W_DDL="CREATE DATABASE IF NOT EXISTS bench; USE bench; $($PY "$GEN" --table wide --rows 0 --updates 0 --deletes 0 |
			sed -n '/^CREATE TABLE/,/;$/p' | sed 's/^CREATE TABLE /CREATE TABLE IF NOT EXISTS /' | tr '\n' ' ')"
	fi
	EXPECTED_ROWS=$((W_ROWS + W_UPD + W_DEL))
	export CACHE EXPECTED_ROWS W_ROWS W_UPD W_DEL W_TXN GEN_VERSION W_TABLE W_TNAME
}

workload_cache_ok() {
	[ -r "$CACHE/meta.json" ] || return 1
	$PY - "$CACHE" "$GEN_VERSION" <<-'PYEOF'
		import json, os, sys
		d, ver = sys.argv[1], sys.argv[2]
		m = json.load(open(os.path.join(d, "meta.json")))
		ok = m.get("generator_version") == ver and all(
		    os.path.getsize(os.path.join(d, f["name"])) == f["bytes"] for f in m["files"])
		sys.exit(0 if ok else 1)
	PYEOF
}

workload_generate() {
	local t0 files tmp f
	log "building the workload binlog in $CACHE (generator v$GEN_VERSION)"
	mkdir -p "$BLF_RUN/bench" "$BENCH_INST"
	chmod 755 "$BLF_RUN/bench"
	chmod 1777 "$BENCH_INST"
	mdb start --fresh --name bgen --port "$BENCH_GEN_PORT" -- \
		--innodb-flush-log-at-trx-commit=0 --sync-binlog=0 \
		--innodb-buffer-pool-size=1G --innodb-log-file-size=512M \
		--innodb-doublewrite=0 --max-binlog-size=256M \
		--binlog-row-event-max-size=8192 --skip-name-resolve >&2
	mdb sql --name bgen -e "RESET MASTER"
	t0=$SECONDS
	if ! $PY "$GEN" --table "$W_TABLE" --rows $W_ROWS --updates $W_UPD --deletes $W_DEL --txn $W_TXN |
		mdb sql --name bgen >"$BENCH_INST/workload.log" 2>&1; then
		tail -c 600 "$BENCH_INST/workload.log" >&2
		mdb destroy --name bgen >&2 || true
		die "the workload failed"
	fi
	mdb sql --name bgen -e "FLUSH BINARY LOGS"
	log "workload ran in $((SECONDS - t0)) s"
	files=$(mdb sql --name bgen -N -B -e "SHOW BINARY LOGS" | awk '{print $1}' | sed '$d')
	tmp=$CACHE.tmp.$$
	rm -rf "$tmp"
	mkdir -p "$tmp"
	for f in $files; do
		cp "$BENCH_INST/mariadb-bgen/$f" "$tmp/"
	done
	mdb destroy --name bgen >&2
	[ -x "$ROOT/binlogcat" ] || make -C "$ROOT" -s binlogcat >&2
	# shellcheck disable=SC2086
	(cd "$tmp" && "$ROOT/binlogcat" --count --no-follow --quiet $files) >"$tmp/count.json"
	# shellcheck disable=SC2086
	(cd "$tmp" && mariadb-binlog --no-defaults --verbose --base64-output=decode-rows $files |
		awk '/^### INSERT INTO /{i++} /^### UPDATE /{u++} /^### DELETE FROM /{d++}
			END {printf "{\"insert\":%d,\"update\":%d,\"delete\":%d}\n", i, u, d}') >"$tmp/mysqlbinlog-count.json"
	# shellcheck disable=SC2086
	$PY - "$tmp" "$GEN_VERSION" $W_ROWS $W_UPD $W_DEL $W_TXN $files <<-'PYEOF'
		import json, os, sys
		d, ver = sys.argv[1], sys.argv[2]
		rows, upd, dele, txn = map(int, sys.argv[3:7])
		files = sys.argv[7:]
		meta = {
		    "generator_version": ver,
		    "workload": {"inserted": rows, "updated": upd, "deleted": dele,
		                 "rows_per_transaction": txn, "table": os.environ.get("W_TABLE", "standard"),
		                 "table_name": os.environ.get("W_TNAME", "sbtest1")},
		    "files": [{"name": f, "bytes": os.path.getsize(os.path.join(d, f))} for f in files],
		    "binlogcat_count": json.load(open(os.path.join(d, "count.json"))),
		    "mariadb_binlog_count": json.load(open(os.path.join(d, "mysqlbinlog-count.json"))),
		}
		json.dump(meta, open(os.path.join(d, "meta.json"), "w"), indent=1)
	PYEOF
	rm -rf "$CACHE"
	mv "$tmp" "$CACHE"
}

workload_ensure() {
	# workload_ensure REGEN(0|1)
	if [ "${1:-0}" -eq 1 ] || ! workload_cache_ok; then
		workload_generate
	else
		log "reusing the workload binlog in $CACHE"
	fi
	mapfile -t WFILES < <($PY -c 'import json,sys; [print(f["name"]) for f in json.load(open(sys.argv[1]))["files"]]' "$CACHE/meta.json")
}

# The empty source table (sql_log_bin=0: not in the binlog), so that clients
# that read column names from information_schema (zongji) and snapshot()
# find it.
SBTEST_DDL="CREATE DATABASE IF NOT EXISTS bench; CREATE TABLE IF NOT EXISTS bench.sbtest1 (
  id BIGINT NOT NULL PRIMARY KEY, k INT NOT NULL, c VARCHAR(120), pad CHAR(60),
  amount DECIMAL(12,2), created DATETIME(6), doc JSON) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"

source_start() {
	# source_start: MariaDB "bsrc" serving the cached workload binlog.  Reused
	# when it already serves this cache (the marker file) and is unchanged.
	local d=$BENCH_INST/mariadb-bsrc marker f
	marker="$CACHE $(stat -c %Y "$CACHE/meta.json")"
	mkdir -p "$BENCH_INST"
	chmod 1777 "$BENCH_INST"
	if [ "$(cat "$d/blf-workload" 2>/dev/null)" = "$marker" ]; then
		mdb start --name bsrc >&2 && {
			log "reusing the source instance (port $BENCH_SRC_PORT)"
			return 0
		}
	fi
	log "preparing the source instance: a fresh MariaDB whose binlog is the workload's"
	mdb start --fresh --name bsrc --port "$BENCH_SRC_PORT" -- \
		--innodb-buffer-pool-size=256M --max-binlog-size=256M --skip-name-resolve >&2
	mdb stop --name bsrc >&2
	rm -f "$d"/mysql-bin.[0-9]* "$d/mysql-bin.index" "$d/mysql-bin.state"
	: >"$d/mysql-bin.index"
	for f in "${WFILES[@]}"; do
		cp "$CACHE/$f" "$d/$f"
		echo "./$f" >>"$d/mysql-bin.index"
	done
	chown mysql: "$d"/mysql-bin.* 2>/dev/null || true
	mdb start --name bsrc >&2
	mdb sql --name bsrc -e "SET sql_log_bin = 0; $W_DDL"
	echo "$marker" >"$d/blf-workload"
}

source_end() {
	# prints "FILE POS": the end of the source's binlog (= end of the workload)
	mdb sql --name bsrc -N -B -e "SHOW MASTER STATUS" | awk '{print $1, $2}'
}

source_last_commit() {
	# prints FILE:POS, the end of the workload's last transaction (its XID event)
	local f=${WFILES[${#WFILES[@]}-1]}
	echo "$f:$(mdb sql --name bsrc -N -B -e "SHOW BINLOG EVENTS IN '$f'" | awk '$3 == "Xid" { p = $5 } END { print p }')"
}

warm_source() {
	# the binlog files in the page cache, as a replica's source has them
	cat "$BENCH_INST/mariadb-bsrc"/mysql-bin.[0-9]* >/dev/null
}

replica_start() {
	# replica_start: MariaDB "brepl", a replica of bsrc (threads stopped)
	mdb start --name brepl --port "$BENCH_REPLICA_PORT" -- --server-id=2 \
		--innodb-buffer-pool-size=1G --innodb-log-file-size=512M \
		--innodb-flush-log-at-trx-commit=2 --sync-binlog=0 --skip-slave-start \
		--relay-log=relay-bin --skip-name-resolve >&2 ||
		{ mdb restart --name brepl >&2; }
}

# PostgreSQL settings of every cluster of the benchmarks (binlog_fdw's target,
# the logical replication publisher and subscriber): the same for all.
PG_BENCH_OPTS=(-c shared_buffers=1GB -c max_wal_size=16GB -c checkpoint_timeout=30min
	-c wal_level=logical -c max_replication_slots=10 -c max_wal_senders=10)

pg_start() {
	# pg_start NAME PORT [postgres args]: (re)start, so that it loads the
	# installed binlog_fdw.so of now
	local name=$1 port=$2
	shift 2
	pgc stop --name "$name" >/dev/null 2>&1 ||
		pgc stop --name "$name" --mode immediate >/dev/null 2>&1 || true
	pgc start --name "$name" --port "$port" -- "${PG_BENCH_OPTS[@]}" "$@" >&2
}

pg_fresh_bench_db() {
	# pg_fresh_bench_db CLUSTER: an empty database "bench" (sources left
	# started by an earlier run are stopped first: their workers would keep
	# the database busy)
	local c=$1
	if pgc psql --name "$c" -qAt -d postgres -c "SELECT 1 FROM pg_database WHERE datname = 'bench'" | grep -q 1; then
		pgc psql --name "$c" -qAt -d bench -c "SELECT binlog_fdw.stop(s.srvname) FROM pg_foreign_server s
			JOIN pg_foreign_data_wrapper w ON w.oid = s.srvfdw WHERE w.fdwname = 'binlog_fdw'" \
			>/dev/null 2>&1 || true
	fi
	pgc psql --name "$c" -q -d postgres -c "DROP DATABASE IF EXISTS bench WITH (FORCE)" 2>&1 |
		grep -v 'does not exist, skipping' >&2 || true
	pgc psql --name "$c" -q -d postgres -c "CREATE DATABASE bench" >/dev/null
}

bench_loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
