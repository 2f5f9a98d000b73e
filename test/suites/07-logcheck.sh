#!/usr/bin/env bash
# test/suites/07-logcheck.sh -- the server-log checker (test/lib/logcheck.py)
# works: its self test, and a WARNING planted in PostgreSQL main's log by a
# case makes that case fail unless the case's allowlist expects it (the
# checker as test/run.sh runs it after every suite).
#
# Cases: logcheck/selftest, logcheck/planted-warning-fails,
# logcheck/planted-warning-allowed, logcheck/other-case-not-allowed.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"
cd "$BLF_ROOT"

LC=test/lib/logcheck.py
tmp=${BLF_SUITE_TMP:-$(mktemp -d)}
: "${PGHOST:=$BLF_PG_SOCKET_DIR}" "${PGPORT:=$BLF_PG_PORT}" "${PGUSER:=postgres}"
export PGHOST PGPORT PGUSER

/usr/bin/python3 "$LC" selftest

psql_q() { "$BLF_PG_BINDIR/psql" -X -q -d postgres -v ON_ERROR_STOP=1 -c "$1" >/dev/null 2>&1; }

# plant: case logcheck/planted raises a WARNING
/usr/bin/python3 "$LC" offsets "$BLF_PG_LOG" >"$tmp/planted.offsets"
psql_q "DO \$\$BEGIN RAISE LOG 'blf-case: logcheck/planted'; END\$\$"
psql_q "DO \$\$BEGIN RAISE WARNING 'planted warning for the log checker'; END\$\$"
psql_q "DO \$\$BEGIN RAISE LOG 'blf-case: -'; END\$\$"
# the server writes its log after answering: wait for the last line
for _ in $(seq 1 100); do
	grep -q "blf-case: -\$" "$BLF_PG_LOG" && break
	sleep 0.1
done

# without an allowlist the planted case fails, named
out=$(/usr/bin/python3 "$LC" check --suite planted --offsets "$tmp/planted.offsets" 2>&1 | head -n 1 || true)
echo "# without allowlist: $out"
case "$out" in
"not ok - planted/server-log postgresql.log: 1 unexpected lines"*"[logcheck/planted]"*"planted warning"*)
	echo "ok - logcheck/planted-warning-fails" ;;
*) echo "not ok - logcheck/planted-warning-fails: the checker said: $out" ;;
esac

# with this suite's allowlist (an entry for case logcheck/planted)
out=$(/usr/bin/python3 "$LC" check --suite planted --offsets "$tmp/planted.offsets" \
	--allow test/suites/07-logcheck.allow 2>&1 | head -n 1 || true)
echo "# with allowlist: $out"
case "$out" in
"ok - planted/server-log postgresql.log") echo "ok - logcheck/planted-warning-allowed" ;;
*) echo "not ok - logcheck/planted-warning-allowed: the checker said: $out" ;;
esac
