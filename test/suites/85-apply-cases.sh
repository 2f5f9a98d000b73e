#!/usr/bin/env bash
# test/suites/85-apply-cases.sh -- the apply surface, live: MariaDB main ->
# binlog_fdw sources on PostgreSQL main -> snapshot() / apply() into
# PostgreSQL tables, case by case (issue #4), with test/apply_cases/
# (python3-psycopg2, python3-pymysql; the all-types table and the helpers of
# test/streaming).
#
# Cases (one "ok - apply/NAME" line each): types, type-options,
# hostile-names, keys, conflicts, mapping, partitions, insert-rotation,
# compressed-columns, sync-running, sync-continuous, snapshot-gtid
# (cases_load.py),
# ddl, snapshot-ddl-race, security,
# transactions, triggers, error-status, row-image-minimal, row-image-noblob (throwaway MariaDB
# instances ac-minimal and ac-noblob on BLF_APPLY_MINIMAL_PORT 3441 and
# BLF_APPLY_NOBLOB_PORT 3442), schema-history-minimal, schema-history-nolog
# (instances ac-hmin and ac-hnolog on BLF_APPLY_HMIN_PORT 3443 and
# BLF_APPLY_HNOLOG_PORT 3444), schema-history-full, geometry-bytea, geometry-postgis (database
# blf_apply_gis with PostGIS), history-tables, history-kill (history tables,
# cases_history_tables.py).  BLF_APPLY_CASES=keys,ddl runs a subset.
#
# The suite creates and drops its own databases (PostgreSQL blf_apply;
# MariaDB blf_ac_*), roles blf_ac_* and sources ac_*; it needs no other
# instance.  BLF_APPLY_KEEP=1 keeps everything for inspection.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"
cd "$BLF_ROOT"

if ! /usr/bin/python3 -c 'import psycopg2, pymysql' 2>/dev/null; then
	echo "not ok - apply: python3-psycopg2 and python3-pymysql are needed (scripts/install-deps.sh)"
	exit 1
fi

: "${PGHOST:=$BLF_PG_SOCKET_DIR}" "${PGPORT:=$BLF_PG_PORT}" "${PGUSER:=postgres}"
export PGHOST PGPORT PGUSER

trap 'exit 143' TERM
trap 'exit 130' INT

rc=0
/usr/bin/python3 test/apply_cases/apply_cases.py || rc=$?
exit $rc
