#!/usr/bin/env bash
# test/suites/88-observe.sh -- control and observability, live (issue #13):
# replication origins, wait_for() (test/observe/observe.py).  Creates and
# drops its own PostgreSQL database blf_observe and MariaDB database blf_obs.
# BLF_OBSERVE_CASES=origins runs a subset.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"
cd "$BLF_ROOT"
: "${PGHOST:=$BLF_PG_SOCKET_DIR}" "${PGPORT:=$BLF_PG_PORT}" "${PGUSER:=postgres}"
export PGHOST PGPORT PGUSER
trap 'exit 143' TERM
trap 'exit 130' INT
exec /usr/bin/python3 test/observe/observe.py
