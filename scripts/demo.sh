#!/usr/bin/env bash
# scripts/demo.sh -- end-to-end demo on a throwaway local MariaDB (one command
# on a fresh Debian 12 machine, as root: "bash scripts/demo.sh").
#
# Installs the packages (scripts/install-deps.sh; skip with
# BLF_SKIP_INSTALL=1), builds the project (make), starts MariaDB "main"
# (scripts/mariadb.sh), resets its binlog, creates shop.orders, runs two
# transactions of inserts/updates/deletes and prints the decoded changes with
# ./binlogcat.  MariaDB stays running afterwards (stop it with
# "scripts/mariadb.sh stop").  Note that test/run.sh wipes this instance.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$BLF_ROOT"

step() { printf '\n=== %s\n' "$*"; }

# ---- packages and build ------------------------------------------------
if [ "${BLF_SKIP_INSTALL:-0}" != 1 ] && [ "$(id -u)" -eq 0 ]; then
	step "Installing packages (scripts/install-deps.sh)"
	bash scripts/install-deps.sh
fi

step "Building (make)"
blf_prepare_run
build_log=$BLF_LOG_DIR/demo-build.log
if [ -f Makefile ] && make -C "$BLF_ROOT" >"$build_log" 2>&1; then
	echo "build ok (log: $build_log)"
	if [ ! -x ./binlogcat ]; then
		make -C "$BLF_ROOT" binlogcat >>"$build_log" 2>&1 || true
	fi
elif [ ! -f Makefile ]; then
	echo "no Makefile yet: nothing to build"
else
	echo "build FAILED (full log: $build_log); last lines:"
	tail -n 20 "$build_log"
fi

# ---- MariaDB source ----------------------------------------------------
step "Starting MariaDB 10.11 on 127.0.0.1:$BLF_MARIADB_PORT (scripts/mariadb.sh start)"
bash scripts/mariadb.sh start

sql() {
	printf '%s\n' "$1" | sed -e 's/^/  mariadb> /'
	bash scripts/mariadb.sh sql --table -e "$1"
}

step "Preparing database shop (binlog reset so the demo starts from a clean log)"
sql "DROP DATABASE IF EXISTS shop;
RESET MASTER;"
sql "CREATE DATABASE shop;
CREATE TABLE shop.orders (
  id       bigint PRIMARY KEY,
  customer varchar(64) NOT NULL,
  amount   decimal(12,2) NOT NULL,
  created  datetime(6) NOT NULL,
  note     json
);"

step "Transaction 1: three new orders"
sql "BEGIN;
INSERT INTO shop.orders VALUES
  (1, 'alice', 19.99, '2024-05-01 10:00:00.123456', '{\"gift\": true, \"items\": [\"book\"]}'),
  (2, 'bob', 250.00, '2024-05-01 10:05:00.000001', NULL),
  (3, 'chloé', 7.50, '2024-05-01 10:07:30.5', '{\"coupon\": \"SPRING\"}');
COMMIT;"

step "Transaction 2: update, delete, insert"
sql "BEGIN;
UPDATE shop.orders SET amount = amount * 0.9, note = '{\"discount\": 10}' WHERE id = 2;
DELETE FROM shop.orders WHERE id = 1;
INSERT INTO shop.orders VALUES (4, 'dmitri', 1234567.89, NOW(6), '[1, 2, 3]');
COMMIT;"

sql "SELECT * FROM shop.orders ORDER BY id;
SELECT @@gtid_binlog_pos AS gtid_binlog_pos;"

# ---- decoded changes ---------------------------------------------------
step "Decoded changes: ./binlogcat --host 127.0.0.1 --port $BLF_MARIADB_PORT --user $BLF_MYSQL_USER --password ... --start earliest --until-end"
if [ ! -x ./binlogcat ]; then
	echo "binlogcat is not built yet: ./binlogcat does not exist (it is built by 'make';"
	echo "the tool may not be written yet).  MariaDB is running with the demo data:"
	echo "  scripts/mariadb.sh sql -e 'SHOW BINLOG EVENTS'"
	exit 1
fi
./binlogcat --host 127.0.0.1 --port "$BLF_MARIADB_PORT" \
	--user "$BLF_MYSQL_USER" --password "$BLF_MYSQL_PASSWORD" \
	--start earliest --until-end

step "Done.  MariaDB is still running: scripts/mariadb.sh sql, scripts/mariadb.sh stop"
