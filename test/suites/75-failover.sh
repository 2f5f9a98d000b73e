#!/usr/bin/env bash
# test/suites/75-failover.sh -- source failover: a binlog_fdw source with a
# host list 'A,B' follows a promoted MariaDB replica without loss.  MariaDB
# A (primary, server-id 1) and B (replica of A by GTID, server-id 2,
# log_slave_updates), both with gtid_strict_mode; A is killed (SIGKILL)
# mid-stream, B promoted, the writer goes on on B; the consumer's
# acknowledged changes must equal the transactions committed, per GTID
# domain.  Also: a switch while the durable position is inside a
# transaction (skip > 0) across a PostgreSQL restart, a replica that is
# behind (the worker waits and says so), a transaction lost with A (the
# worker delivers nothing of B and says so), a GTID state of 1,600
# domains (67 kB) kept whole through a PostgreSQL restart and a failover,
# and a rolled-back apply() of a transaction larger than the ring (the
# worker rewinds to the durable position and its GTID state).
# See test/failover/failover.py for the cases.
#
# Instances of its own (destroyed at the end): MariaDB "fo-a"
# (BLF_FAILOVER_A_PORT, 3531) and "fo-b" (BLF_FAILOVER_B_PORT, 3532),
# PostgreSQL "failover" (BLF_FAILOVER_PG_PORT, 5531) with
# binlog_fdw.ring_size=1MB.  Arguments select cases; BLF_FAILOVER_KEEP=1
# keeps the instances.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"
cd "$BLF_ROOT"

export BLF_FAILOVER_A_PORT=${BLF_FAILOVER_A_PORT:-3531}
export BLF_FAILOVER_B_PORT=${BLF_FAILOVER_B_PORT:-3532}
export BLF_FAILOVER_PG_PORT=${BLF_FAILOVER_PG_PORT:-5531}
: "${BLF_SUITE_TMP:=$BLF_RUN/tmp/failover}"
export BLF_SUITE_TMP
mkdir -p "$BLF_SUITE_TMP"

fail_setup() {
	echo "not ok - failover/setup: $*"
	exit 1
}

/usr/bin/python3 -c 'import psycopg2, pymysql' 2>/dev/null ||
	fail_setup "python3-psycopg2 and python3-pymysql are needed (scripts/install-deps.sh)"
[ -x ./binlogcat ] || fail_setup "./binlogcat is not built (make)"

cleanup() {
	# keep the server logs for a look after a failure
	cp "$BLF_RUN/pg-failover/postgresql.log" "$BLF_SUITE_TMP/pg-failover.log" 2>/dev/null || true
	cp "$BLF_RUN/mariadb-fo-a/mariadbd.log" "$BLF_SUITE_TMP/mariadb-fo-a.log" 2>/dev/null || true
	cp "$BLF_RUN/mariadb-fo-b/mariadbd.log" "$BLF_SUITE_TMP/mariadb-fo-b.log" 2>/dev/null || true
	[ "${BLF_FAILOVER_KEEP:-0}" = 1 ] && return 0
	bash scripts/mariadb.sh destroy --name fo-a >/dev/null 2>&1 || true
	bash scripts/mariadb.sh destroy --name fo-b >/dev/null 2>&1 || true
	bash scripts/postgres.sh destroy --name failover >/dev/null 2>&1 || true
	rm -rf "$BLF_SUITE_TMP"/template-fo-a "$BLF_SUITE_TMP"/template-fo-b
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

t0=$SECONDS
bash scripts/postgres.sh start --fresh --name failover --port "$BLF_FAILOVER_PG_PORT" -- \
	-c binlog_fdw.ring_size=1MB >"$BLF_SUITE_TMP/postgres-start.log" 2>&1 ||
	{ cat "$BLF_SUITE_TMP/postgres-start.log"; fail_setup "could not start PostgreSQL failover"; }
echo "# PostgreSQL started in $((SECONDS - t0))s"

rc=0
/usr/bin/python3 test/failover/failover.py "$@" || rc=$?
echo "# server logs: $BLF_SUITE_TMP/pg-failover.log, $BLF_SUITE_TMP/mariadb-fo-{a,b}.log"
exit $rc
