#!/usr/bin/env bash
# test/suites/10-unit.sh -- the C unit tests of the decoder: runs
# "make check-unit" (Makefile target; each test program prints "ok - name" /
# "not ok - name: reason" lines, which pass through to test/run.sh).
# Needs ../shared/binlog-samples (test/unit reads sample binlog files).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"

rc=0
make -C "$BLF_ROOT" --no-print-directory check-unit 2>&1 || rc=$?
if [ $rc -ne 0 ]; then
	echo "# make check-unit exited with status $rc"
fi
exit $rc
