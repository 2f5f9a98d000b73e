#!/usr/bin/env bash
# test/suites/70-streaming-faults.sh -- binlog_fdw streaming under faults:
# backpressure through a 1 MB ring (~200 MB of changes), worker kill -9,
# PostgreSQL immediate shutdown between get and ack and after an ack,
# MariaDB restart (clean and SIGKILL), the replication connection killed
# on the source, a purged binlog, and the TLS modes.  Every case compares
# the acknowledged change sequence with the source's binlog decoded by
# ./binlogcat: no loss, no duplicate, same order.  See
# test/streaming_faults/faults.py for the cases and their environment.
#
# Instances of its own (destroyed at the end): MariaDB "faults" (port
# BLF_FAULTS_MARIADB_PORT, 3415), "faults-tls" (BLF_FAULTS_TLS_PORT,
# 3416) and "faults-pre" (BLF_FAULTS_PRE_PORT, 3417: preconditions,
# binlog_checksum NONE), PostgreSQL "faults" (BLF_FAULTS_PG_PORT, 5445) started with
# binlog_fdw.ring_size=1MB.  Arguments select cases (e.g. "tls",
# "backpressure"); BLF_FAULTS_KEEP=1 keeps the instances.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"
cd "$BLF_ROOT"

export BLF_FAULTS_MARIADB_PORT=${BLF_FAULTS_MARIADB_PORT:-3415}
export BLF_FAULTS_TLS_PORT=${BLF_FAULTS_TLS_PORT:-3416}
export BLF_FAULTS_PG_PORT=${BLF_FAULTS_PG_PORT:-5445}
export BLF_FAULTS_PRE_PORT=${BLF_FAULTS_PRE_PORT:-3417}
: "${BLF_SUITE_TMP:=$BLF_RUN/tmp/streaming-faults}"
export BLF_SUITE_TMP
mkdir -p "$BLF_SUITE_TMP"

fail_setup() {
	echo "not ok - streaming-faults/setup: $*"
	exit 1
}

/usr/bin/python3 -c 'import psycopg2, pymysql' 2>/dev/null ||
	fail_setup "python3-psycopg2 and python3-pymysql are needed (scripts/install-deps.sh)"
[ -x ./binlogcat ] || fail_setup "./binlogcat is not built (make)"
command -v openssl >/dev/null || fail_setup "openssl is not installed"

HOSTS_MARK='# blf-streaming-faults'
cleanup() {
	# keep the server logs for a look after a failure
	cp "$BLF_RUN/pg-faults/postgresql.log" "$BLF_SUITE_TMP/pg-faults.log" 2>/dev/null || true
	cp "$BLF_RUN/mariadb-faults/mariadbd.log" "$BLF_SUITE_TMP/mariadb-faults.log" 2>/dev/null || true
	[ "${BLF_FAULTS_KEEP:-0}" = 1 ] && return 0
	bash scripts/mariadb.sh destroy --name faults >/dev/null 2>&1 || true
	bash scripts/mariadb.sh destroy --name faults-tls >/dev/null 2>&1 || true
	bash scripts/mariadb.sh destroy --name faults-pre >/dev/null 2>&1 || true
	bash scripts/postgres.sh destroy --name faults >/dev/null 2>&1 || true
	# faults.py removes its /etc/hosts alias itself; this is for a killed run
	if grep -q -- "$HOSTS_MARK" /etc/hosts 2>/dev/null; then
		grep -v -- "$HOSTS_MARK" /etc/hosts >"$BLF_SUITE_TMP/hosts.new" &&
			cat "$BLF_SUITE_TMP/hosts.new" >/etc/hosts || true
	fi
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

t0=$SECONDS
# fast but kill -9 safe: commits reach the OS (not the disk) before they return
bash scripts/mariadb.sh start --fresh --name faults --port "$BLF_FAULTS_MARIADB_PORT" -- \
	--innodb-flush-log-at-trx-commit=2 --sync-binlog=0 --innodb-buffer-pool-size=256M \
	>"$BLF_SUITE_TMP/mariadb-start.log" 2>&1 ||
	{ cat "$BLF_SUITE_TMP/mariadb-start.log"; fail_setup "could not start MariaDB faults"; }
bash scripts/mariadb.sh destroy --name faults-tls >/dev/null 2>&1 || true
bash scripts/postgres.sh start --fresh --name faults --port "$BLF_FAULTS_PG_PORT" -- \
	-c binlog_fdw.ring_size=1MB >"$BLF_SUITE_TMP/postgres-start.log" 2>&1 ||
	{ cat "$BLF_SUITE_TMP/postgres-start.log"; fail_setup "could not start PostgreSQL faults"; }
echo "# instances started in $((SECONDS - t0))s"

rc=0
/usr/bin/python3 test/streaming_faults/faults.py "$@" || rc=$?
echo "# server logs: $BLF_SUITE_TMP/pg-faults.log, $BLF_SUITE_TMP/mariadb-faults.log"
exit $rc
