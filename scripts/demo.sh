#!/usr/bin/env bash
# scripts/demo.sh -- end-to-end demo on a throwaway local MariaDB and
# PostgreSQL (one command on a fresh Debian 12 machine, as root:
# "bash scripts/demo.sh").
#
# Installs the packages (scripts/install-deps.sh; skip with
# BLF_SKIP_INSTALL=1), builds and installs the extension, starts MariaDB
# "main" and PostgreSQL "main" (scripts/mariadb.sh, scripts/postgres.sh),
# and then shows MySQL changes flowing into PostgreSQL:
#
#   1. a MariaDB database "shop" with rows;
#   2. binlog_fdw.snapshot() creates shop.orders/shop.customers in
#      PostgreSQL and copies them from one consistent snapshot;
#   3. the source starts; changes made in MariaDB are peeked at through a
#      foreign table and consumed Canal style with get()/ack() (second source);
#   4. binlog_fdw.apply() writes them into the PostgreSQL tables, exactly once;
#   5. continuous mode: an apply worker applies new changes as they come;
#   6. both sides are compared row for row.
#
# Both servers stay running afterwards (scripts/mariadb.sh stop,
# scripts/postgres.sh stop).  Note that test/run.sh wipes these instances.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$BLF_ROOT"

step() { printf '\n=== %s\n' "$*"; }

# ---- packages and build ------------------------------------------------
if [ "${BLF_SKIP_INSTALL:-0}" != 1 ] && [ "$(id -u)" -eq 0 ]; then
	step "Installing packages (scripts/install-deps.sh)"
	bash scripts/install-deps.sh
fi

step "Building and installing (make && make install)"
blf_prepare_run
build_log=$BLF_LOG_DIR/demo-build.log
if ! { make -C "$BLF_ROOT" && make -C "$BLF_ROOT" install; } >"$build_log" 2>&1; then
	echo "build FAILED (full log: $build_log); last lines:"
	tail -n 20 "$build_log"
	exit 1
fi
echo "build ok (log: $build_log)"

# ---- servers -------------------------------------------------------------
step "Starting MariaDB 10.11 on 127.0.0.1:$BLF_MARIADB_PORT and PostgreSQL 15 on port $BLF_PG_PORT"
bash scripts/mariadb.sh start
bash scripts/postgres.sh restart >/dev/null 2>&1 || bash scripts/postgres.sh start

my() {
	printf '%s\n' "$1" | sed -e 's/^/  mariadb> /'
	bash scripts/mariadb.sh sql --table -e "$1"
}
pg() {
	printf '%s\n' "$1" | sed -e 's/^/  postgres> /'
	bash scripts/postgres.sh psql -d blf_demo -q -c "$1"
}
# wait_until SQL: until the query returns t.  The demo waits on conditions,
# never on time: start() and stop() take effect when their transaction
# commits, the worker a moment later; a change is read, and applied, a
# moment after MariaDB commits it.  The limit (BLF_DEMO_TIMEOUT, 300 s) is
# only there so that a broken setup does not hang.
wait_until() {
	local _
	for _ in $(seq 1 $((${BLF_DEMO_TIMEOUT:-300} * 10))); do
		[ "$(bash scripts/postgres.sh psql -d blf_demo -Atq -c "$1")" = t ] && return 0
		sleep 0.1
	done
	echo "timed out after ${BLF_DEMO_TIMEOUT:-300}s waiting for: $1" >&2
	return 1
}
streaming() { echo "SELECT EXISTS (SELECT FROM binlog_fdw.status WHERE server = '$1' AND state = 'streaming')"; }
# master_pos: MariaDB's current binlog file and position, "'file', pos"
master_pos() {
	bash scripts/mariadb.sh sql -N -e "SHOW MASTER STATUS" | awk '{ printf "'"'"'%s'"'"', %s", $1, $2 }'
}
# wait_read SERVER: until the source's worker read everything MariaDB wrote
wait_read() {
	wait_until "SELECT EXISTS (SELECT FROM binlog_fdw.status WHERE server = '$1' AND (read_file, read_pos) >= ($(master_pos)))"
}
# wait_applied SERVER: until everything MariaDB wrote is applied (acknowledged)
wait_applied() {
	wait_until "SELECT EXISTS (SELECT FROM binlog_fdw.status WHERE server = '$1' AND (acked_file, acked_pos) >= ($(master_pos)))"
}

# ---- 1. the MySQL side ---------------------------------------------------
step "1. MariaDB: database shop with customers and orders"
my "DROP DATABASE IF EXISTS shop;
CREATE DATABASE shop;
CREATE TABLE shop.customers (
  id    int PRIMARY KEY,
  name  varchar(64) NOT NULL,
  email varchar(128)
);
CREATE TABLE shop.orders (
  id       bigint PRIMARY KEY,
  customer int NOT NULL,
  amount   decimal(12,2) NOT NULL,
  status   enum('new','paid','shipped') NOT NULL DEFAULT 'new',
  created  datetime(6) NOT NULL,
  note     json
);
INSERT INTO shop.customers VALUES (1, 'alice', 'alice@example.com'), (2, 'bob', NULL), (3, 'chloé', 'chloe@example.fr');
INSERT INTO shop.orders VALUES
  (1, 1, 19.99, 'paid', '2024-05-01 10:00:00.123456', '{\"gift\": true, \"items\": [\"book\"]}'),
  (2, 2, 250.00, 'new', '2024-05-01 10:05:00.000001', NULL);"

# ---- 2. snapshot ---------------------------------------------------------
step "2. PostgreSQL: the extension, the source, and an initial snapshot"
# a previous run's sources (started again with the server) stop first
if [ "$(bash scripts/postgres.sh psql -Atq -c "SELECT count(*) FROM pg_database WHERE datname = 'blf_demo'")" = 1 ]; then
	bash scripts/postgres.sh psql -d blf_demo -Atq \
		-c "SELECT count(binlog_fdw.stop(server)) FROM binlog_fdw.status" >/dev/null 2>&1 || true
	wait_until "SELECT NOT EXISTS (SELECT FROM binlog_fdw.status WHERE worker_pid IS NOT NULL OR apply_pid IS NOT NULL)" ||
		true
fi
bash scripts/postgres.sh psql -q -c "DROP DATABASE IF EXISTS blf_demo WITH (FORCE)" -c "CREATE DATABASE blf_demo"
pg "CREATE EXTENSION binlog_fdw;
CREATE SERVER shop FOREIGN DATA WRAPPER binlog_fdw
  OPTIONS (host '127.0.0.1', port '$BLF_MARIADB_PORT', server_id '4101', include '^shop\\.');
CREATE USER MAPPING FOR CURRENT_USER SERVER shop
  OPTIONS (user '$BLF_MYSQL_USER', password '$BLF_MYSQL_PASSWORD');
CREATE SCHEMA shop;"
pg "SELECT * FROM binlog_fdw.snapshot('shop', ARRAY['shop.customers', 'shop.orders']);"
pg "\\d shop.orders"
pg "SELECT binlog_fdw.start('shop');   -- the worker starts when this commits"
wait_until "$(streaming shop)"
pg "SELECT server, state, worker_pid IS NOT NULL AS running FROM binlog_fdw.status;"

# ---- 3. changes in MariaDB, seen from PostgreSQL -------------------------
step "3. MariaDB: a transaction of inserts, updates and deletes"
my "BEGIN;
INSERT INTO shop.orders VALUES (3, 3, 7.50, 'new', '2024-05-01 10:07:30.5', '{\"coupon\": \"SPRING\"}');
UPDATE shop.orders SET status = 'shipped', amount = amount * 0.9 WHERE id = 2;
DELETE FROM shop.orders WHERE id = 1;
UPDATE shop.customers SET email = 'bob@example.com' WHERE id = 2;
COMMIT;"
wait_read shop
step "   PostgreSQL: peek at the buffered changes through a foreign table (consumes nothing)"
pg "CREATE FOREIGN TABLE shop_changes (seq bigint, op text, table_name text,
  primary_key jsonb, before jsonb, after jsonb) SERVER shop;
SELECT seq, op, table_name, primary_key, after FROM shop_changes WHERE op <> 'begin';"

# ---- 4. apply ------------------------------------------------------------
step "4. PostgreSQL: apply them into the tables, exactly once, in this transaction"
pg "SELECT * FROM binlog_fdw.apply('shop');"
pg "SELECT * FROM shop.orders ORDER BY id;"

# ---- the Canal-style consumer on a second source ------------------------
step "   Any client can consume changes Canal style: get(), then ack() (a second source)"
pg "BEGIN;
CREATE SERVER feed FOREIGN DATA WRAPPER binlog_fdw
  OPTIONS (host '127.0.0.1', port '$BLF_MARIADB_PORT', server_id '4102', include '^shop\\.orders\$');
CREATE USER MAPPING FOR CURRENT_USER SERVER feed
  OPTIONS (user '$BLF_MYSQL_USER', password '$BLF_MYSQL_PASSWORD');
SELECT binlog_fdw.start('feed');   -- in the transaction that creates the server
COMMIT;"
wait_until "$(streaming feed)"
my "INSERT INTO shop.orders VALUES (4, 1, 1234567.89, 'new', NOW(6), '[1, 2, 3]');"
wait_read feed
pg "SELECT batch_id, seq, op, table_name, after FROM binlog_fdw.get('feed', 100, 2000);
SELECT binlog_fdw.rollback('feed') AS batches_rolled_back;  -- un-acked batches come again
SELECT binlog_fdw.ack('feed', batch_id) AS acked
  FROM (SELECT DISTINCT batch_id FROM binlog_fdw.get('feed', 100, 2000)) b;"
pg "SELECT binlog_fdw.stop('feed') AS stopped;"

# ---- 5. continuous mode --------------------------------------------------
step "5. Continuous mode: an apply worker applies changes as they arrive"
pg "ALTER SERVER shop OPTIONS (ADD continuous 'true');"
pg "SELECT binlog_fdw.stop('shop') AS stopped, binlog_fdw.start('shop') IS NULL AS restarts_at_commit;"
wait_until "SELECT EXISTS (SELECT FROM binlog_fdw.status WHERE server = 'shop' AND state = 'streaming' AND apply_pid IS NOT NULL)"
my "INSERT INTO shop.orders VALUES (5, 2, 42.00, 'paid', NOW(6), NULL);
UPDATE shop.orders SET status = 'paid' WHERE id = 3;
INSERT INTO shop.customers VALUES (4, 'dmitri', NULL);"
wait_applied shop
pg "SELECT server, state, acked_file, acked_pos, lag_seconds, apply_pid IS NOT NULL AS applying,
       applied_transactions, applied_rows FROM binlog_fdw.status;"

# ---- 6. compare ------------------------------------------------------------
step "6. Both sides, row for row"
my "SELECT id, customer, amount, status, created FROM shop.orders ORDER BY id;
SELECT * FROM shop.customers ORDER BY id;"
pg "SELECT id, customer, amount, status, created FROM shop.orders ORDER BY id;
SELECT * FROM shop.customers ORDER BY id;"
mysum=$(bash scripts/mariadb.sh sql -N -e "SELECT CONCAT_WS('|', COUNT(*), SUM(amount), GROUP_CONCAT(CONCAT(id, ':', status) ORDER BY id)) FROM shop.orders")
pgsum=$(bash scripts/postgres.sh psql -d blf_demo -Atq -c "SELECT concat_ws('|', count(*), sum(amount), string_agg(id || ':' || status, ',' ORDER BY id)) FROM shop.orders")
if [ "$mysum" = "$pgsum" ]; then
	echo "MariaDB and PostgreSQL agree: $pgsum"
else
	echo "MISMATCH: MariaDB $mysum, PostgreSQL $pgsum"
	exit 1
fi

step "Done.  Both servers are still running:
  MariaDB    127.0.0.1:$BLF_MARIADB_PORT (socket $BLF_MARIADB_SOCKET)
             bash scripts/mariadb.sh sql                  (MariaDB shell, as root)
  PostgreSQL port $BLF_PG_PORT, socket dir $BLF_PG_SOCKET_DIR, user postgres, database blf_demo
             bash scripts/postgres.sh psql -d blf_demo    (psql)
             psql -h $BLF_PG_SOCKET_DIR -p $BLF_PG_PORT -U postgres blf_demo
  Stop them: bash scripts/mariadb.sh stop; bash scripts/postgres.sh stop
  (bash test/run.sh wipes these servers and starts its own on the same ports)"
