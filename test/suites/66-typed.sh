#!/usr/bin/env bash
# test/suites/66-typed.sh -- typed foreign tables, live: IMPORT FOREIGN
# SCHEMA from MariaDB main, typed rows of the buffered changes, pushdown,
# stale definitions (test/typed/typed.py, python3-psycopg2, python3-pymysql).
#
# Cases (one "ok - typed/NAME" line each): import, values, pushdown,
# get-table, scans-at-once, jsonb, get-table-large, hostile-names, stale,
# partial-image.
# The suite creates and drops its own databases (PostgreSQL and MariaDB
# blf_typed).  BLF_TYPED_KEEP=1 keeps them for inspection.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"
cd "$BLF_ROOT"

if ! /usr/bin/python3 -c 'import psycopg2, pymysql' 2>/dev/null; then
	echo "not ok - typed: python3-psycopg2 and python3-pymysql are needed (scripts/install-deps.sh)"
	exit 1
fi
: "${PGHOST:=$BLF_PG_SOCKET_DIR}" "${PGPORT:=$BLF_PG_PORT}" "${PGUSER:=postgres}"
export PGHOST PGPORT PGUSER
exec /usr/bin/python3 test/typed/typed.py
