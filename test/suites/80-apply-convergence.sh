#!/usr/bin/env bash
# test/suites/80-apply-convergence.sh -- binlog_fdw's apply path end to end
# (issue #4): a seeded typed workload on MariaDB synced to PostgreSQL with
# snapshot() + apply while writes continue must converge row for row, with
# apply() called in a loop and in continuous mode, and after each fault
# (worker kill -9, PostgreSQL immediate stop, MariaDB restart, replication
# connection killed, a transaction that violates a target constraint);
# apply from pg_cron; commit -> visible latency in continuous mode
# (p50/p99 printed, not asserted); a ~1 GB transaction through a 16 MB
# ring (atomic, RSS flat).  See test/apply/convergence.py for the cases.
#
# Instances of its own (destroyed at the end): MariaDB "conv" (port
# BLF_CONV_MARIADB_PORT, 3481) and PostgreSQL "conv" (BLF_CONV_PG_PORT,
# 5481) with binlog_fdw.ring_size=16MB and cron.database_name=blf_conv.
# Arguments select cases (e.g. "converge", "apply-error/loop", "latency"),
# and so does BLF_CONV_CASES (comma-separated, for test/run.sh);
# BLF_CONV_SKIP_BIG=1 skips the 1 GB transaction; BLF_CONV_KEEP=1 keeps
# the instances.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"
cd "$BLF_ROOT"

export BLF_CONV_MARIADB_PORT=${BLF_CONV_MARIADB_PORT:-3481}
export BLF_CONV_PG_PORT=${BLF_CONV_PG_PORT:-5481}
: "${BLF_SUITE_TMP:=$BLF_RUN/tmp/80-apply-convergence}"
export BLF_SUITE_TMP
mkdir -p "$BLF_SUITE_TMP"

fail_setup() {
	echo "not ok - apply-convergence/setup: $*"
	exit 1
}

/usr/bin/python3 -c 'import psycopg2, pymysql' 2>/dev/null ||
	fail_setup "python3-psycopg2 and python3-pymysql are needed (scripts/install-deps.sh)"
[ -f "$BLF_PG_BINDIR/../lib/pg_cron.so" ] || [ -f /usr/lib/postgresql/15/lib/pg_cron.so ] ||
	fail_setup "pg_cron is not installed (postgresql-15-cron, scripts/install-deps.sh)"

cleanup() {
	# keep the server logs for a look after a failure
	cp "$BLF_RUN/pg-conv/postgresql.log" "$BLF_SUITE_TMP/pg-conv.log" 2>/dev/null || true
	cp "$BLF_RUN/mariadb-conv/mariadbd.log" "$BLF_SUITE_TMP/mariadb-conv.log" 2>/dev/null || true
	[ "${BLF_CONV_KEEP:-0}" = 1 ] && return 0
	bash scripts/mariadb.sh destroy --name conv >/dev/null 2>&1 || true
	bash scripts/postgres.sh destroy --name conv >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

t0=$SECONDS
# fast but kill -9 safe (commits reach the OS before they return); the
# 1 GB transaction goes through the binlog cache, a temporary file in a
# directory of our own (not /tmp, which other programs may clean up)
MDB_TMP=$BLF_SUITE_TMP/mariadb-tmp
mkdir -p "$MDB_TMP"
chmod 1777 "$MDB_TMP"
bash scripts/mariadb.sh start --fresh --name conv --port "$BLF_CONV_MARIADB_PORT" -- \
	--innodb-flush-log-at-trx-commit=2 --sync-binlog=0 --innodb-buffer-pool-size=256M \
	--max-binlog-cache-size=4G --tmpdir="$MDB_TMP" \
	>"$BLF_SUITE_TMP/mariadb-start.log" 2>&1 ||
	{ cat "$BLF_SUITE_TMP/mariadb-start.log"; fail_setup "could not start MariaDB conv"; }
# the test database is pg_cron's; its launcher retries until it exists
bash scripts/postgres.sh start --fresh --name conv --port "$BLF_CONV_PG_PORT" -- \
	-c binlog_fdw.ring_size=16MB -c cron.database_name=blf_conv \
	>"$BLF_SUITE_TMP/postgres-start.log" 2>&1 ||
	{ cat "$BLF_SUITE_TMP/postgres-start.log"; fail_setup "could not start PostgreSQL conv"; }
echo "# instances started in $((SECONDS - t0))s"

rc=0
if [ -n "${BLF_CONV_CASES:-}" ]; then
	set -- ${BLF_CONV_CASES//,/ } "$@"
fi
/usr/bin/python3 test/apply/convergence.py "$@" || rc=$?
echo "# server logs: $BLF_SUITE_TMP/pg-conv.log, $BLF_SUITE_TMP/mariadb-conv.log"
exit $rc
