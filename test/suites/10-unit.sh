#!/usr/bin/env bash
# test/suites/10-unit.sh -- the C unit tests of the decoder: runs
# "make check-unit" (Makefile target; each test program prints "ok - name" /
# "not ok - name: reason" lines, which pass through to test/run.sh), then
# the same tests built without sanitizers under valgrind ("make
# check-unit-valgrind": it sees what the sanitizers do not, such as
# vsnprintf() into the buffer it reads from).  Their case lines are
# prefixed "valgrind/" so that both runs count.
# Needs ../shared/binlog-samples (test/unit reads sample binlog files).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"

rc=0
make -C "$BLF_ROOT" --no-print-directory check-unit 2>&1 || rc=$?
if [ $rc -ne 0 ]; then
	echo "# make check-unit exited with status $rc"
fi
if command -v valgrind >/dev/null; then
	vrc=0
	vlog=$(mktemp)
	make -C "$BLF_ROOT" --no-print-directory check-unit-valgrind >"$vlog" 2>&1 || vrc=$?
	sed -E 's/^(not )?ok - /\1ok - valgrind\//' "$vlog"
	rm -f "$vlog"
	if [ "$vrc" -ne 0 ]; then
		echo "not ok - valgrind: make check-unit-valgrind exited with status $vrc (valgrind reports above)"
		rc=1
	fi
else
	echo "not ok - valgrind: valgrind is not installed (scripts/install-deps.sh)"
	rc=1
fi
exit $rc
