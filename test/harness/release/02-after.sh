#!/usr/bin/env bash
# test/harness/release/02-after.sh -- after 01-leak.sh failed, a new source finds a free slot (see 01-leak.sh)
set -u
psql -X -q -c "DROP DATABASE IF EXISTS blf_after" -c "CREATE DATABASE blf_after"
if psql -X -q -d blf_after -c "CREATE EXTENSION binlog_fdw" -c "CREATE SERVER after1 FOREIGN DATA WRAPPER binlog_fdw OPTIONS (host '127.0.0.1', port '$BLF_MARIADB_PORT', server_id '990')" -c "CREATE USER MAPPING FOR current_user SERVER after1 OPTIONS (user 'repl', password 'repl')" -c "SELECT binlog_fdw.start('after1')" 2>&1; then
  sleep 2; psql -X -q -d blf_after -c "SELECT binlog_fdw.stop('after1')"; echo "ok - after/slot-free"
else echo "not ok - after/slot-free"; fi
