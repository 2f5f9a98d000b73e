#!/usr/bin/env bash
# test/suites/65-mysql-source.sh -- binlog_fdw's MySQL paths live, against
# the MySQL test source (test/mysql_source: the MySQL 8.0/8.4 protocol in
# node, serving the real MySQL 8.0/8.4/9.x binlogs of ../shared/binlog-samples):
# binlogcat live equal to binlogcat on the files with each authentication
# (caching_sha2_password by RSA and over TLS, its fast path,
# mysql_native_password) and TLS mode, the setup queries of 8.0 and 8.4,
# GTID set starts, and binlog_fdw sources on PostgreSQL main: changes equal
# to the offline decode (TRANSACTION_PAYLOAD, tagged GTIDs), starts by GTID
# set, a live source with held transactions and killed connections, the
# replica checks, a PostgreSQL restart.  See test/mysql_live/cases.py;
# arguments select cases (e.g. "binlogcat-tls").
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"
cd "$BLF_ROOT"

: "${BLF_SUITE_TMP:=$BLF_RUN/tmp/mysql-source}"
export BLF_SUITE_TMP
mkdir -p "$BLF_SUITE_TMP"

fail_setup() {
	echo "not ok - mysql/setup: $*"
	exit 1
}

[ -d ../shared/binlog-samples ] || fail_setup "../shared/binlog-samples is missing (the MySQL binlogs served live)"
[ -x ./binlogcat ] || fail_setup "./binlogcat is not built (make)"
command -v node >/dev/null || fail_setup "node is not installed (scripts/install-deps.sh)"
command -v openssl >/dev/null || fail_setup "openssl is not installed"
/usr/bin/python3 -c 'import psycopg2, pymysql' 2>/dev/null ||
	fail_setup "python3-psycopg2 and python3-pymysql are needed (scripts/install-deps.sh)"
bash scripts/install-npm.sh >"$BLF_SUITE_TMP/install-npm.log" 2>&1 ||
	fail_setup "npm ci of test/mysql_source failed: $(tail -3 "$BLF_SUITE_TMP/install-npm.log" | tr '\n' ' ')"

rc=0
/usr/bin/python3 test/mysql_live/cases.py "$@" || rc=$?
# a GTID set of 1,000 source UUIDs with gaps through a restart
/usr/bin/python3 test/mysql_live/gtid_set_case.py || rc=$?
exit $rc
