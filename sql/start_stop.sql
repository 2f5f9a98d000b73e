--
-- start() and stop() take effect at commit; DROP SERVER stops a source at
-- commit; ALTER SERVER ... RENAME carries a source's rows along; a row of
-- source_state that no server has (an orphan) is shown and kept, and a
-- rename the extension did not see is refused rather than started from the
-- "start" option.  No MariaDB: the sources point at a closed port (their
-- workers keep trying to connect until stopped).
--
CREATE EXTENSION binlog_fdw;
CREATE SERVER c1 FOREIGN DATA WRAPPER binlog_fdw
    OPTIONS (host '127.0.0.1', port '1', server_id '9101', connect_timeout '1');
CREATE USER MAPPING FOR current_user SERVER c1 OPTIONS (user 'repl', password 'repl');

-- ---------------------------------------------------------------------
-- start() rolled back (the transaction, or a savepoint): nothing starts
-- ---------------------------------------------------------------------
BEGIN;
SELECT binlog_fdw.start('c1') IS NULL AS starts_at_commit;
SELECT count(*) AS running_before_commit FROM binlog_fdw.status;
ROLLBACK;
SELECT count(*) AS running FROM binlog_fdw.status;
SELECT count(*) AS started_rows FROM binlog_fdw.started_sources;
BEGIN;
SAVEPOINT sp;
SELECT binlog_fdw.start('c1') IS NULL AS starts_at_commit;
ROLLBACK TO sp;
COMMIT;
SELECT count(*) AS running FROM binlog_fdw.status;

-- ---------------------------------------------------------------------
-- start() in the transaction that creates the server: the worker, started
-- at commit, sees the server (it tries to connect to it)
-- ---------------------------------------------------------------------
BEGIN;
CREATE SERVER c2 FOREIGN DATA WRAPPER binlog_fdw
    OPTIONS (host '127.0.0.1', port '1', server_id '9102', connect_timeout '1');
CREATE USER MAPPING FOR current_user SERVER c2 OPTIONS (user 'repl', password 'repl');
SELECT binlog_fdw.start('c2') IS NULL AS starts_at_commit;
COMMIT;
SELECT server, state <> 'stopped' AS running FROM binlog_fdw.status;
DO $$
BEGIN
  FOR i IN 1..200 LOOP
    PERFORM 1 FROM binlog_fdw.status WHERE server = 'c2' AND last_error IS NOT NULL;
    EXIT WHEN FOUND;
    PERFORM pg_sleep(0.05);
  END LOOP;
END $$;
SELECT server, last_error LIKE 'source "c2": could not connect to 127.0.0.1:1 %' AS tried_to_connect
  FROM binlog_fdw.status;
SELECT server_name, started_by FROM binlog_fdw.started_sources;

-- ---------------------------------------------------------------------
-- stop() rolled back: the same worker runs on
-- ---------------------------------------------------------------------
CREATE TEMP TABLE pids AS SELECT worker_pid FROM binlog_fdw.status WHERE server = 'c2';
BEGIN;
SELECT binlog_fdw.stop('c2') AS stopped;
SELECT count(*) AS running_until_commit FROM binlog_fdw.status WHERE server = 'c2';
-- reset() needs the stop committed
SELECT binlog_fdw.reset('c2');
ROLLBACK;
SELECT worker_pid = (SELECT worker_pid FROM pids) AS same_worker
  FROM binlog_fdw.status WHERE server = 'c2';
SELECT count(*) AS started_rows FROM binlog_fdw.started_sources;

-- stop() and start() in one transaction: a new worker after the commit
BEGIN;
SELECT binlog_fdw.stop('c2') AS stopped, binlog_fdw.start('c2') IS NULL AS starts_at_commit;
COMMIT;
DO $$
BEGIN
  FOR i IN 1..200 LOOP
    PERFORM 1 FROM binlog_fdw.status
      WHERE server = 'c2' AND worker_pid IS NOT NULL AND worker_pid <> (SELECT worker_pid FROM pids);
    EXIT WHEN FOUND;
    PERFORM pg_sleep(0.05);
  END LOOP;
END $$;
SELECT worker_pid <> (SELECT worker_pid FROM pids) AS restarted
  FROM binlog_fdw.status WHERE server = 'c2';

-- stop(): once committed, the source is not started any more
SELECT binlog_fdw.stop('c2') AS stopped;
SELECT count(*) AS running FROM binlog_fdw.status;
SELECT * FROM binlog_fdw.get('c2');
-- reset() waits for the worker to be gone
SELECT binlog_fdw.reset('c2');
SELECT count(*) AS started_rows FROM binlog_fdw.started_sources;
SELECT binlog_fdw.stop('c2') AS stopped_again;

-- ---------------------------------------------------------------------
-- DROP SERVER: rolled back, the source runs on; committed, it stops
-- ---------------------------------------------------------------------
SELECT binlog_fdw.start('c2') IS NULL AS starts_at_commit;
BEGIN;
DROP SERVER c2 CASCADE;
SELECT count(*) AS running_until_commit FROM binlog_fdw.status;
ROLLBACK;
SELECT server FROM binlog_fdw.status;
SET client_min_messages = warning;
DROP SERVER c2 CASCADE;
RESET client_min_messages;
SELECT count(*) AS running FROM binlog_fdw.status;
SELECT count(*) AS started_rows FROM binlog_fdw.started_sources;
DO $$
BEGIN
  FOR i IN 1..200 LOOP
    EXIT WHEN NOT EXISTS (SELECT FROM pg_stat_activity
                           WHERE backend_type = 'binlog_fdw source' AND datname = current_database());
    PERFORM pg_sleep(0.05);
  END LOOP;
END $$;
SELECT count(*) AS source_workers FROM pg_stat_activity
 WHERE backend_type = 'binlog_fdw source' AND datname = current_database();

-- ---------------------------------------------------------------------
-- ALTER SERVER ... RENAME: position, start and mappings follow the server
-- ---------------------------------------------------------------------
SELECT binlog_fdw.start('c1') IS NULL AS starts_at_commit;
INSERT INTO binlog_fdw.source_state (srvid, server_name, file, pos)
  SELECT oid, srvname, 'mysql-bin.000007', 1234 FROM pg_foreign_server WHERE srvname = 'c1';
SELECT binlog_fdw.map_table('c1', 'shop.orders', NULL, NULL, 'skip');
ALTER SERVER c1 RENAME TO c1_renamed;
SELECT server FROM binlog_fdw.status;
SELECT server_name, file, pos FROM binlog_fdw.source_state;
SELECT server_name FROM binlog_fdw.started_sources;
SELECT server_name, source_schema, source_table, conflict FROM binlog_fdw.table_mapping;
-- a rename rolled back: the rows keep their name
BEGIN;
ALTER SERVER c1_renamed RENAME TO c1_other;
ROLLBACK;
SELECT server_name FROM binlog_fdw.source_state;
SELECT binlog_fdw.stop('c1_renamed') AS stopped;

-- ---------------------------------------------------------------------
-- Orphans: a position no server has is shown in the status view and kept
-- (here the drop trigger is disabled, as it would not run in single-user
-- mode)
-- ---------------------------------------------------------------------
ALTER EVENT TRIGGER binlog_fdw_forget_dropped_servers DISABLE;
SET client_min_messages = warning;
DROP SERVER c1_renamed CASCADE;
RESET client_min_messages;
ALTER EVENT TRIGGER binlog_fdw_forget_dropped_servers ENABLE ALWAYS;
SELECT server, state, worker_pid, acked_file, acked_pos, acked_skip,
       last_error LIKE 'binlog_fdw.source_state holds this position, recorded by the server with OID %' AS explained
  FROM binlog_fdw.status;
SELECT server_name, file, pos FROM binlog_fdw.source_state;

-- A rename the extension did not see (its event trigger disabled): the
-- renamed server has no row of its name, but an orphan has its OID, so its
-- start is refused rather than started from its "start" option
CREATE SERVER c3 FOREIGN DATA WRAPPER binlog_fdw
    OPTIONS (host '127.0.0.1', port '1', server_id '9103', connect_timeout '1');
CREATE USER MAPPING FOR current_user SERVER c3 OPTIONS (user 'repl', password 'repl');
INSERT INTO binlog_fdw.source_state (srvid, server_name, file, pos)
  SELECT oid, srvname, 'mysql-bin.000003', 4 FROM pg_foreign_server WHERE srvname = 'c3';
ALTER EVENT TRIGGER binlog_fdw_follow_server_renames DISABLE;
ALTER SERVER c3 RENAME TO c3_new;
ALTER EVENT TRIGGER binlog_fdw_follow_server_renames ENABLE ALWAYS;
SELECT binlog_fdw.start('c3_new');
SELECT count(*) AS running FROM binlog_fdw.status WHERE server = 'c3_new';
-- the fix the hint gives
UPDATE binlog_fdw.source_state SET server_name = 'c3_new' WHERE server_name = 'c3';
SELECT binlog_fdw.start('c3_new') IS NULL AS starts_at_commit;
SELECT binlog_fdw.stop('c3_new') AS stopped;
-- renaming a server to the name of orphaned rows is refused (they would
-- pass for its own)
ALTER SERVER c3_new RENAME TO c1_renamed;
DELETE FROM binlog_fdw.table_mapping WHERE server_name = 'c1_renamed';
ALTER SERVER c3_new RENAME TO c1_renamed;
DELETE FROM binlog_fdw.source_state WHERE server_name = 'c1_renamed';
DELETE FROM binlog_fdw.started_sources WHERE server_name = 'c1_renamed';
ALTER SERVER c3_new RENAME TO c1_renamed;
SELECT server_name, file, pos FROM binlog_fdw.source_state;
SELECT count(*) AS orphans FROM binlog_fdw.status WHERE state = 'orphaned';

SET client_min_messages = warning;
DROP EXTENSION binlog_fdw CASCADE;
DROP SCHEMA IF EXISTS binlog_fdw;
RESET client_min_messages;
