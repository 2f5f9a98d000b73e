#!/usr/bin/env bash
# test/suites/78-operations.sh -- nothing lost through what a DBA does
# (issue #9): start()/stop() at commit (and rolled back), DROP SERVER and
# DROP EXTENSION ... CASCADE stopping workers at commit, a server dropped
# and created again, ALTER SERVER ... RENAME, orphaned positions, pg_dump
# and restore into a fresh cluster, pg_upgrade 15 -> 15, a physical standby
# promoted while a writer writes, and the update from 0.1 (its SQL script
# and its library from the git history) through ALTER EXTENSION UPDATE.
# See test/operations/operations.py for the cases.
#
# Instances of its own (destroyed at the end): MariaDB "ops" (port
# BLF_OPS_MARIADB_PORT, 3471) and PostgreSQL clusters ops-a, ops-b, ops-u
# (BLF_OPS_PG_PORT, 5471, and the next two).  upgrade-0.1 runs ops-u from a
# private copy of the PostgreSQL tree (under BLF_SUITE_TMP) into which 0.1's
# install script and 0.1's library, built here from commit $OLD_COMMIT, are
# installed.  Arguments select cases (e.g. "rename", "upgrade-0.1");
# BLF_OPS_KEEP=1 keeps the instances.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"
cd "$BLF_ROOT"

# the last commit of 0.1 (the next one renamed binlog_fdw--0.1.sql to 0.2)
OLD_COMMIT=78ee639

export BLF_OPS_MARIADB_PORT=${BLF_OPS_MARIADB_PORT:-3471}
export BLF_OPS_PG_PORT=${BLF_OPS_PG_PORT:-5471}
: "${BLF_SUITE_TMP:=$BLF_RUN/tmp/78-operations}"
export BLF_SUITE_TMP
mkdir -p "$BLF_SUITE_TMP"

fail_setup() {
	echo "not ok - operations/setup: $*"
	exit 1
}

/usr/bin/python3 -c 'import psycopg2, pymysql' 2>/dev/null ||
	fail_setup "python3-psycopg2 and python3-pymysql are needed (scripts/install-deps.sh)"

TREE=$BLF_SUITE_TMP/tree
cleanup() {
	local c
	for c in ops-a ops-b ops-u; do
		cp "$BLF_RUN/pg-$c/postgresql.log" "$BLF_SUITE_TMP/pg-$c.log" 2>/dev/null || true
	done
	cp "$BLF_RUN/mariadb-ops/mariadbd.log" "$BLF_SUITE_TMP/mariadb-ops.log" 2>/dev/null || true
	[ "${BLF_OPS_KEEP:-0}" = 1 ] && return 0
	bash scripts/mariadb.sh destroy --name ops >/dev/null 2>&1 || true
	for c in ops-a ops-b; do
		bash scripts/postgres.sh destroy --name "$c" >/dev/null 2>&1 || true
	done
	if [ -x "$TREE/usr/lib/postgresql/15/bin/pg_ctl" ]; then
		BLF_PG_BINDIR=$TREE/usr/lib/postgresql/15/bin bash scripts/postgres.sh destroy --name ops-u \
			>/dev/null 2>&1 || true
	fi
	rm -rf "$TREE" "$BLF_SUITE_TMP/old"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

t0=$SECONDS
# temporary tables in a directory of our own (not /tmp, which other
# programs may clean up under a running server)
MDB_TMP=$BLF_SUITE_TMP/mariadb-tmp
mkdir -p "$MDB_TMP"
chmod 1777 "$MDB_TMP"
bash scripts/mariadb.sh start --fresh --name ops --port "$BLF_OPS_MARIADB_PORT" -- \
	--innodb-flush-log-at-trx-commit=2 --sync-binlog=0 --tmpdir="$MDB_TMP" \
	>"$BLF_SUITE_TMP/mariadb-start.log" 2>&1 ||
	{ cat "$BLF_SUITE_TMP/mariadb-start.log"; fail_setup "could not start MariaDB ops"; }
echo "# MariaDB ops started in $((SECONDS - t0))s"

# ---- 0.1 for upgrade-0.1: a private PostgreSQL tree with 0.1 installed ----
# (its own tree: the library file is swapped under a running server there,
# which must not happen to the tree the other clusters load it from)
prepare_01() {
	local src_lib src_share old=$BLF_SUITE_TMP/old
	git -C "$BLF_ROOT" cat-file -e "$OLD_COMMIT^{commit}" 2>/dev/null ||
		{ echo "# commit $OLD_COMMIT (0.1) is not in the git history"; return 1; }
	rm -rf "$old" "$TREE"
	mkdir -p "$old"
	git -C "$BLF_ROOT" archive "$OLD_COMMIT" | tar -x -C "$old"
	make -C "$old" -j2 binlog_fdw.so >"$BLF_SUITE_TMP/build-0.1.log" 2>&1 ||
		{ tail -n 20 "$BLF_SUITE_TMP/build-0.1.log" | sed 's/^/# /'; return 1; }
	src_lib=$(cd "$BLF_PG_BINDIR/.." && pwd)
	src_share=${src_lib%/lib/postgresql/15}/share/postgresql/15
	[ -d "$src_share/extension" ] || { echo "# no $src_share/extension"; return 1; }
	mkdir -p "$TREE/usr/lib/postgresql" "$TREE/usr/share/postgresql"
	cp -a "$src_lib" "$TREE/usr/lib/postgresql/"
	cp -a "$src_share" "$TREE/usr/share/postgresql/"
	# the 0.2 library test/run.sh installed, for the swap
	cp "$src_lib/lib/binlog_fdw.so" "$BLF_SUITE_TMP/binlog_fdw-0.2.so"
	install -m 755 "$old/binlog_fdw.so" "$TREE/usr/lib/postgresql/15/lib/binlog_fdw.so"
	git -C "$BLF_ROOT" show "$OLD_COMMIT:binlog_fdw--0.1.sql" \
		>"$TREE/usr/share/postgresql/15/extension/binlog_fdw--0.1.sql"
	chmod -R a+rX "$TREE"
	export BLF_OPS_TREE=$TREE BLF_OPS_NEW_SO=$BLF_SUITE_TMP/binlog_fdw-0.2.so
}
want_01=1
if [ $# -gt 0 ]; then
	want_01=0
	for a in "$@"; do
		case "upgrade-0.1" in "$a"*) want_01=1 ;; esac
	done
fi
if [ $want_01 -eq 1 ]; then
	t0=$SECONDS
	if prepare_01; then
		echo "# 0.1 ($OLD_COMMIT) built and installed into $TREE in $((SECONDS - t0))s"
	else
		echo "# could not prepare 0.1 (see above): upgrade-0.1 fails"
	fi
fi

rc=0
/usr/bin/python3 test/operations/operations.py "$@" || rc=$?
echo "# server logs: $BLF_SUITE_TMP/pg-ops-*.log, $BLF_SUITE_TMP/mariadb-ops.log"
exit $rc
