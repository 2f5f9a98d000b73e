/* binlog_fdw--0.1--0.2.sql: upgrade from 0.1 (ALTER EXTENSION binlog_fdw UPDATE) */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "ALTER EXTENSION binlog_fdw UPDATE TO '0.2'" to load this file. \quit

-- Every change to the extension's objects since 0.1 is made here too, so
-- that an updated 0.1 installation has exactly the objects of a fresh 0.2
-- one (the upgrade test compares their schema-only dumps).

-- ---------------------------------------------------------------------
-- source_state: keyed by the server's name (0.1: by its OID, which
-- pg_dump/restore and pg_upgrade do not keep)
-- ---------------------------------------------------------------------

ALTER TABLE source_state DROP CONSTRAINT source_state_pkey;
-- the name of each row's server now (0.1 wrote the name at each ack only)
UPDATE source_state s SET server_name = f.srvname
  FROM pg_catalog.pg_foreign_server f
 WHERE f.oid = s.srvid AND s.server_name IS DISTINCT FROM f.srvname;
-- a row whose server is gone keeps its name, made unique: it shows as an
-- orphan in the status view and never passes for another server's
UPDATE source_state s
   SET server_name = s.server_name || ' (orphaned, server oid ' || s.srvid || ')'
 WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_foreign_server f WHERE f.oid = s.srvid)
   AND EXISTS (SELECT FROM source_state o WHERE o.server_name = s.server_name AND o.srvid <> s.srvid);
ALTER TABLE source_state ADD PRIMARY KEY (server_name);

-- ---------------------------------------------------------------------
-- started_sources: what 0.1 kept in $PGDATA/pg_binlog_fdw/autostart
-- ---------------------------------------------------------------------

CREATE TABLE started_sources (
    server_name text PRIMARY KEY,
    started_by regrole NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now()
);
REVOKE ALL ON started_sources FROM PUBLIC;

-- the sources of this database in 0.1's autostart file (its lines for
-- this database are removed when the update commits)
CREATE FUNCTION legacy_autostart(OUT srvid oid, OUT userid oid)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'binlog_fdw_legacy_autostart' LANGUAGE C;
INSERT INTO started_sources (server_name, started_by)
SELECT f.srvname, a.userid::regrole
  FROM legacy_autostart() a JOIN pg_catalog.pg_foreign_server f ON f.oid = a.srvid
ON CONFLICT (server_name) DO NOTHING;
DROP FUNCTION legacy_autostart();

COMMENT ON FUNCTION start(text) IS
  'start streaming a source when the transaction commits (it starts again with the server); returns the pid of a worker already running, else NULL';

-- ---------------------------------------------------------------------
-- Event triggers: drops forget by name, renames are followed
-- ---------------------------------------------------------------------

CREATE OR REPLACE FUNCTION forget_dropped_servers()
RETURNS event_trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT objid, address_names[1] AS name
               FROM pg_event_trigger_dropped_objects()
              WHERE object_type = 'server'
    LOOP
        DELETE FROM binlog_fdw.source_state WHERE server_name = r.name;
        DELETE FROM binlog_fdw.started_sources WHERE server_name = r.name;
        DELETE FROM binlog_fdw.table_mapping WHERE server_name = r.name;
        DELETE FROM binlog_fdw.schema_history WHERE server_name = r.name;
    END LOOP;
END
$$;
ALTER EVENT TRIGGER binlog_fdw_forget_dropped_servers ENABLE ALWAYS;

CREATE FUNCTION follow_server_renames()
RETURNS event_trigger
AS 'MODULE_PATHNAME', 'binlog_fdw_follow_server_renames' LANGUAGE C;
REVOKE ALL ON FUNCTION follow_server_renames() FROM PUBLIC;
CREATE EVENT TRIGGER binlog_fdw_follow_server_renames ON ddl_command_start
    WHEN TAG IN ('ALTER SERVER')
    EXECUTE FUNCTION follow_server_renames();
ALTER EVENT TRIGGER binlog_fdw_follow_server_renames ENABLE ALWAYS;

-- ---------------------------------------------------------------------
-- Cut-over
-- ---------------------------------------------------------------------

-- true once every change of the source up to target is applied here
-- (a MariaDB GTID list, a MySQL GTID set, FILE:POS, or NULL: the source's
-- current end of binlog), false when timeout_seconds pass first
CREATE FUNCTION wait_for(
    server text,
    target text DEFAULT NULL,
    timeout_seconds double precision DEFAULT 60)
RETURNS boolean
AS 'MODULE_PATHNAME', 'binlog_fdw_wait_for' LANGUAGE C;
COMMENT ON FUNCTION wait_for(text, text, double precision) IS
  'wait until the changes of the source up to a GTID or position (default: its current end) are applied';
REVOKE ALL ON FUNCTION wait_for(text, text, double precision) FROM PUBLIC;

-- status: binlog_row_image and source_notice (a row image that is not FULL,
-- MySQL defaults it cannot carry)
DROP VIEW status;
DROP FUNCTION status();
CREATE FUNCTION status(
    OUT server text,
    OUT worker_pid integer,
    OUT state text,
    OUT connected_since timestamptz,
    OUT source_host text,
    OUT source_version text,
    OUT binlog_format text,
    OUT read_file text,
    OUT read_pos bigint,
    OUT acked_file text,
    OUT acked_pos bigint,
    OUT acked_skip bigint,
    OUT acked_gtid text,
    OUT gtid_state text,
    OUT lag_seconds double precision,
    OUT ring_bytes_used bigint,
    OUT ring_bytes_total bigint,
    OUT ring_entries bigint,
    OUT changes_unacked bigint,
    OUT changes_per_sec double precision,
    OUT changes_total bigint,
    OUT acked_seq bigint,
    OUT batches_out integer,
    OUT last_heartbeat timestamptz,
    OUT last_error text,
    OUT last_error_time timestamptz,
    OUT worker_peak_rss_kb bigint,
    OUT apply_pid integer,
    OUT applied_transactions bigint,
    OUT applied_rows bigint,
    OUT apply_lag_seconds double precision,
    OUT apply_last_commit timestamptz,
    OUT apply_error text,
    OUT apply_error_time timestamptz,
    OUT binlog_row_image text,
    OUT source_notice text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'binlog_fdw_status' LANGUAGE C;

CREATE VIEW status AS SELECT * FROM status();
REVOKE ALL ON FUNCTION status() FROM PUBLIC;
REVOKE ALL ON status FROM PUBLIC;

-- The schema history: the definition of each captured source table at a
-- binlog position, so that rows events are decoded with the columns of
-- their own time (binlog_row_metadata MINIMAL and NO_LOG carry no column
-- names).  A row per seed (information_schema at the position a worker
-- started from, ddl NULL) and per DDL statement (written when a consumer
-- acknowledges it, in the transaction that writes source_state); the row
-- with the highest seq of a table is its definition at the durable
-- position.  definition: {"charset", "columns": [{"name", "type",
-- "unsigned", "pk", "charset", "values"}]}, {"unknown": why}, or NULL for
-- a dropped table; source_table '' holds a database's default charset.
-- Keyed by server name like source_state (dumped, renamed and dropped with
-- the server; reset() forgets it).
CREATE TABLE schema_history (
    server_name text NOT NULL,
    seq bigint NOT NULL,
    source_schema text NOT NULL,
    source_table text NOT NULL,
    binlog_file text NOT NULL,
    binlog_pos bigint NOT NULL,
    gtid text,
    ddl text,
    definition jsonb,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (server_name, seq)
);
REVOKE ALL ON schema_history FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('schema_history', '');
