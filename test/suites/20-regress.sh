#!/usr/bin/env bash
# test/suites/20-regress.sh -- the pg_regress tests (REGRESS in the Makefile:
# sql/*.sql against expected/*.out) on the running PostgreSQL main cluster.
# Prints "ok - regress/NAME" / "not ok - regress/NAME" per test and, on
# failure, regression.diffs.  pg_regress's outputs (results/, regression.diffs,
# regression.out) go to $BLF_RUN/regress (via EXTRA_REGRESS_OPTS=--outputdir),
# not into the source tree.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"

OUT=$BLF_RUN/regress
rm -rf "$OUT"
mkdir -p "$OUT"
chmod 1777 "$OUT" 2>/dev/null || true	# the server may write files there (COPY TO)

# Inputs of the tests, readable by the server (it runs as postgres):
# BLF_SAMPLES, the shared sample binlogs (copied if postgres cannot read
# them in place), and BLF_REGRESS_BINLOGS, the binlogs of a fixed workload
# on a fresh MariaDB instance "regress" (port BLF_REGRESS_MARIADB_PORT, 3411).
SAMPLES=$(cd "$BLF_ROOT/.." && pwd)/shared/binlog-samples
if [ ! -d "$SAMPLES" ]; then
	echo "not ok - regress: ../shared/binlog-samples is missing"
	exit 1
fi
if ! runuser -u postgres -- test -r "$SAMPLES/rust_mysql_common/test-data/binlogs/json.binlog.000001" 2>/dev/null; then
	mkdir -p "$OUT/samples"
	cp -r "$SAMPLES/." "$OUT/samples/"
	chmod -R a+rX "$OUT/samples"
	SAMPLES=$OUT/samples
fi
export BLF_SAMPLES=$SAMPLES

"$BLF_ROOT/scripts/mariadb.sh" start --name regress --port "${BLF_REGRESS_MARIADB_PORT:-3411}" --fresh \
	>"$OUT/mariadb.out" 2>&1
"$BLF_ROOT/scripts/mariadb.sh" sql --name regress <"$BLF_ROOT/test/regress/workload.sql"
blf_mariadb_paths regress
mkdir -p "$OUT/binlogs"
cp "$MDB_DATA"/mysql-bin.[0-9]* "$OUT/binlogs/"
chmod -R a+rX "$OUT/binlogs"
"$BLF_ROOT/scripts/mariadb.sh" destroy --name regress >>"$OUT/mariadb.out" 2>&1
export BLF_REGRESS_BINLOGS=$OUT/binlogs

rc=0
EXTRA_REGRESS_OPTS="${EXTRA_REGRESS_OPTS:+$EXTRA_REGRESS_OPTS }--outputdir=$OUT" \
	make -C "$BLF_ROOT" --no-print-directory installcheck \
	PGHOST="$BLF_PG_SOCKET_DIR" PGPORT="$BLF_PG_PORT" PGUSER=postgres \
	</dev/null >"$OUT/make.out" 2>&1 || rc=$?

# Make's and pg_regress's output as log lines (never mistaken for case lines).
sed -e 's/^/# /' "$OUT/make.out"

# One case line per test, from pg_regress's own lines:
#   PostgreSQL <= 15:  "test foo                         ... ok           12 ms"
#                      "     foo                         ... FAILED       13 ms" (parallel group)
#                      "test foo                         ... failed (ignored)"
#   PostgreSQL >= 16:  "ok 1         - foo                 12 ms", "not ok 2     + foo ..."
n=$(awk '
	/^(test |     )[^ ]+ +\.\.\. / {
		name = $0
		sub(/^(test |     )/, "", name)
		sub(/ +\.\.\. .*$/, "", name)
		res = $0
		sub(/^.*\.\.\. +/, "", res)
		if (res ~ /^ok/)                       print "ok - regress/" name
		else if (res ~ /^failed \(ignored\)/)  print "ok - regress/" name " # failure ignored"
		else                                   print "not ok - regress/" name ": failed (see regression.diffs)"
		count++
		next
	}
	/^(not )?ok +[0-9]+ +[-+] +[^ ]+/ {
		line = $0
		notok = (line ~ /^not /)
		sub(/^(not )?ok +[0-9]+ +[-+] +/, "", line)
		name = line
		sub(/ .*$/, "", name)
		if (notok) print "not ok - regress/" name ": failed (see regression.diffs)"
		else       print "ok - regress/" name
		count++
	}
	END { print count + 0 > "/dev/stderr" }
' "$OUT/make.out" 2>"$OUT/.count")
[ -z "$n" ] || printf '%s\n' "$n"
count=$(cat "$OUT/.count")

if [ "$count" -eq 0 ]; then
	if [ $rc -eq 0 ]; then
		echo "not ok - regress: no pg_regress test ran (is REGRESS set in the Makefile?)"
	else
		echo "not ok - regress: make installcheck failed with status $rc before running any test"
	fi
fi

if [ -s "$OUT/regression.diffs" ]; then
	echo "# ---- $OUT/regression.diffs (first 300 lines)"
	head -n 300 "$OUT/regression.diffs" | sed -e 's/^/# /'
fi
exit $rc
