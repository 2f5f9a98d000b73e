#!/usr/bin/env bash
# test/suites/60-streaming.sh -- the streaming core, live: MariaDB main ->
# binlog_fdw sources on PostgreSQL main (worker, ring, get/ack/rollback,
# foreign table, status, restart, filters, heartbeats, several sources),
# with test/streaming/streaming.py (python3-psycopg2, python3-pymysql).
#
# Cases (one "ok - streaming/NAME" line each): values, get-ack-rollback,
# consumers-race, restart-exactly-once, filters, heartbeats, two-sources,
# status, not-preloaded.  BLF_STREAM_CASES=values,status runs a subset.
#
# The suite creates and drops its own databases (PostgreSQL blf_stream;
# MariaDB blf_stream, blf_flt, blf_other), a second MariaDB instance
# "stream2" (port BLF_STREAM_SECOND_PORT, default 3407) and a PostgreSQL
# cluster "nopre" without binlog_fdw preloaded (port BLF_STREAM_NOPRE_PORT,
# default 5441); it restarts PostgreSQL main once (restart-exactly-once).
# BLF_STREAM_KEEP=1 keeps everything for inspection.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"
cd "$BLF_ROOT"

if ! /usr/bin/python3 -c 'import psycopg2, psycopg, pymysql' 2>/dev/null; then
	echo "not ok - streaming: python3-psycopg2, python3-psycopg and python3-pymysql are needed (scripts/install-deps.sh)"
	exit 1
fi

: "${PGHOST:=$BLF_PG_SOCKET_DIR}" "${PGPORT:=$BLF_PG_PORT}" "${PGUSER:=postgres}"
export PGHOST PGPORT PGUSER
: "${BLF_SUITE_TMP:=$BLF_RUN/tmp/60-streaming}"
mkdir -p "$BLF_SUITE_TMP"
chmod 1777 "$BLF_SUITE_TMP" 2>/dev/null || true
export BLF_SUITE_TMP

# whatever happens to the script, the extra instances go away
cleanup() {
	[ "${BLF_STREAM_KEEP:-0}" = 1 ] && return 0
	bash scripts/mariadb.sh destroy --name stream2 >/dev/null 2>&1 || true
	bash scripts/postgres.sh destroy --name nopre >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

rc=0
/usr/bin/python3 test/streaming/streaming.py || rc=$?
exit $rc
