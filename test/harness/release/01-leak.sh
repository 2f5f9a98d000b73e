#!/usr/bin/env bash
# test/harness/release/01-leak.sh -- a suite that fails with 4 sources (binlog_fdw.max_sources) started in the main cluster; with 02-after.sh it checks that test/run.sh stops them after a failed suite:
#   scripts/sandbox.sh rel bash -c "BLF_SUITES_DIR=test/harness/release bash test/run.sh"
# must end "5 passed, 1 failed" (the one failure is leak/started, on purpose; on the old run.sh after/slot-free failed too). Not a CI suite.
set -u
psql -X -q -c "DROP DATABASE IF EXISTS blf_leak" -c "CREATE DATABASE blf_leak"
for i in 1 2 3 4; do
psql -X -q -d blf_leak -c "CREATE EXTENSION IF NOT EXISTS binlog_fdw" -c "CREATE SERVER leak$i FOREIGN DATA WRAPPER binlog_fdw OPTIONS (host '127.0.0.1', port '$BLF_MARIADB_PORT', server_id '$((900+i))')" -c "CREATE USER MAPPING FOR current_user SERVER leak$i OPTIONS (user 'repl', password 'repl')" -c "SELECT binlog_fdw.start('leak$i')"
done
sleep 2
psql -X -qAt -d blf_leak -c "SELECT count(*) FROM binlog_fdw.started_sources"
echo "not ok - leak/started: on purpose"
