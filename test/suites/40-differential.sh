#!/usr/bin/env bash
# test/suites/40-differential.sh -- live differential test of the decoder.
# test/differential/differential.py starts its own throwaway MariaDB
# instances (diff-full-full, diff-full-minimal, diff-minimal-full,
# diff-minimal-minimal, diff-full-full-zlib, diff-nolog-full on ports
# 3420-3425: binlog_row_metadata x binlog_row_image, compressed binlog
# events, no metadata), runs a seeded random workload over every column
# type, decodes the binlog with ./binlogcat (live and from the files) and
# compares the replayed change stream with what MariaDB returns, value by
# value.  The instances are destroyed at the end.
#
# Environment: BLF_DIFF_SEED (repeat a run: the seed is printed),
# BLF_DIFF_ROWS (rows inserted per configuration, default 1200),
# BLF_DIFF_CONFIGS, BLF_DIFF_JOBS, BLF_DIFF_PORT, BLF_DIFF_KEEP=1 (keep the
# instances and decoded streams), BLF_DIFF_BINLOGCAT; see the script.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"
cd "$BLF_ROOT"

if ! /usr/bin/python3 -c 'import pymysql' 2>/dev/null; then
	echo "not ok - differential: python3-pymysql is not installed (scripts/install-deps.sh)"
	exit 1
fi
if [ ! -x ./binlogcat ]; then
	echo "not ok - differential: ./binlogcat is not built (make)"
	exit 1
fi

# leave no instance behind, whatever happened to the script (the
# instances run detached, in their own sessions)
cleanup() {
	local d
	[ "${BLF_DIFF_KEEP:-0}" = 1 ] && return 0
	for d in "$BLF_RUN"/mariadb-diff-*/; do
		[ -d "$d" ] || continue
		d=${d%/}
		bash scripts/mariadb.sh destroy --name "${d##*/mariadb-}" >/dev/null 2>&1 || true
	done
	rm -f "$BLF_RUN"/mariadb-diff-*-install.log
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

rc=0
/usr/bin/python3 test/differential/differential.py || rc=$?
exit $rc
