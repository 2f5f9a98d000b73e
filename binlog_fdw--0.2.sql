/* binlog_fdw--0.2.sql: MySQL/MariaDB change data capture in PostgreSQL */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION binlog_fdw" to load this file. \quit

-- Decode binlog files on the database server: one row per row change
-- (row_index counts the rows of a rows event) and one row per other event.
CREATE FUNCTION read_binlog(
    path text,
    follow_rotate boolean DEFAULT false,
    OUT file text,
    OUT pos bigint,
    OUT next_pos bigint,
    OUT event_type text,
    OUT event_time timestamptz,
    OUT server_id bigint,
    OUT gtid text,
    OUT schema_name text,
    OUT table_name text,
    OUT op text,
    OUT row_index integer,
    OUT before jsonb,
    OUT after jsonb,
    OUT query text,
    OUT info jsonb)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'binlog_fdw_read_binlog'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION read_binlog(text, boolean) IS
  'decode a MySQL/MariaDB binlog file on the database server (needs pg_read_server_files)';

-- Reading server files is for pg_read_server_files members only; the
-- function checks that too, so granting EXECUTE alone exposes nothing.
REVOKE ALL ON FUNCTION read_binlog(text, boolean) FROM PUBLIC;

-- ---------------------------------------------------------------------
-- Sources: foreign servers of the binlog_fdw wrapper
-- ---------------------------------------------------------------------

CREATE FUNCTION binlog_fdw_handler()
RETURNS fdw_handler
AS 'MODULE_PATHNAME' LANGUAGE C STRICT;

CREATE FUNCTION binlog_fdw_validator(text[], oid)
RETURNS void
AS 'MODULE_PATHNAME' LANGUAGE C STRICT;

CREATE FOREIGN DATA WRAPPER binlog_fdw
  HANDLER binlog_fdw_handler
  VALIDATOR binlog_fdw_validator;

-- Where each source resumes: the start of the first transaction not fully
-- acknowledged, and how many of its changes were.  Written by ack() (and by
-- apply) in the caller's transaction.  Keyed by the server's name, which
-- pg_dump/restore and pg_upgrade keep (server OIDs they do not) and which
-- the extension follows through ALTER SERVER ... RENAME; DROP SERVER
-- forgets the row.  srvid: the OID of the server that last wrote it (a row
-- whose name matches no server but whose srvid is a server's is refused,
-- never replaced by that server's "start" option).  reload_tables: the
-- tables a reload after a lost position (server option lost_position
-- 'reload') has still to copy.
CREATE TABLE source_state (
    srvid oid NOT NULL,
    server_name text PRIMARY KEY,
    file text,
    pos bigint,
    skip bigint NOT NULL DEFAULT 0,
    gtid text,
    gtid_state text,
    updated_at timestamptz,
    reload_tables text[]
);
REVOKE ALL ON source_state FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('source_state', '');

-- The sources start() started and stop() has not stopped: the launcher
-- starts a worker for each at server start and when a standby is promoted
-- (the table is replicated and kept by pg_upgrade).  Not dumped: like a
-- subscription, a source restored from a dump is stopped until start().
CREATE TABLE started_sources (
    server_name text PRIMARY KEY,
    started_by regrole NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now()
);
REVOKE ALL ON started_sources FROM PUBLIC;

CREATE FUNCTION start(server text)
RETURNS integer
AS 'MODULE_PATHNAME', 'binlog_fdw_start' LANGUAGE C STRICT;
COMMENT ON FUNCTION start(text) IS
  'start streaming a source when the transaction commits (it starts again with the server); returns the pid of a worker already running, else NULL';

CREATE FUNCTION stop(server text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'binlog_fdw_stop' LANGUAGE C STRICT;

CREATE FUNCTION reset(server text)
RETURNS void
AS 'MODULE_PATHNAME', 'binlog_fdw_reset' LANGUAGE C STRICT;
COMMENT ON FUNCTION reset(text) IS
  'forget a stopped source''s position: its next start uses the "start" option';

-- ---------------------------------------------------------------------
-- Consuming changes: get / ack / rollback
-- ---------------------------------------------------------------------

CREATE FUNCTION get(
    server text,
    max_changes integer DEFAULT 1000,
    timeout_ms integer DEFAULT 0,
    OUT batch_id bigint,
    OUT seq bigint,
    OUT file text,
    OUT pos bigint,
    OUT next_pos bigint,
    OUT gtid text,
    OUT xid bigint,
    OUT commit_time timestamptz,
    OUT event_time timestamptz,
    OUT server_id bigint,
    OUT schema_name text,
    OUT table_name text,
    OUT op text,
    OUT pk_columns text[],
    OUT primary_key jsonb,
    OUT before jsonb,
    OUT after jsonb,
    OUT ddl text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'binlog_fdw_get' LANGUAGE C;

-- get() with primary_key/before/after as json: the decoder's JSON text as
-- it is (no jsonb parsing or building), for clients that parse it anyway
CREATE FUNCTION get_json(
    server text,
    max_changes integer DEFAULT 1000,
    timeout_ms integer DEFAULT 0,
    OUT batch_id bigint,
    OUT seq bigint,
    OUT file text,
    OUT pos bigint,
    OUT next_pos bigint,
    OUT gtid text,
    OUT xid bigint,
    OUT commit_time timestamptz,
    OUT event_time timestamptz,
    OUT server_id bigint,
    OUT schema_name text,
    OUT table_name text,
    OUT op text,
    OUT pk_columns text[],
    OUT primary_key json,
    OUT before json,
    OUT after json,
    OUT ddl text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'binlog_fdw_get_json' LANGUAGE C;

-- a batch as one row: its changes as JSON lines (one object per change,
-- the keys of get()'s columns, nulls left out) in one text value; no row
-- per change, no jsonb (the fastest way to ship changes to a client)
CREATE FUNCTION get_jsonl(
    server text,
    max_changes integer DEFAULT 1000,
    timeout_ms integer DEFAULT 0,
    OUT batch_id bigint,
    OUT first_seq bigint,
    OUT last_seq bigint,
    OUT changes integer,
    OUT lines text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'binlog_fdw_get_jsonl' LANGUAGE C;

CREATE FUNCTION ack(server text, batch_id bigint)
RETURNS bigint
AS 'MODULE_PATHNAME', 'binlog_fdw_ack' LANGUAGE C STRICT;

CREATE FUNCTION rollback(server text, batch_id bigint DEFAULT NULL)
RETURNS integer
AS 'MODULE_PATHNAME', 'binlog_fdw_rollback' LANGUAGE C;

-- One source table's changes as rows of its typed foreign table (IMPORT
-- FOREIGN SCHEMA): SELECT * FROM get_table('src', NULL::local.orders).
-- A batch as get()'s (all the source's changes); its rows of that table,
-- _binlog_batch the batch to ack().  A batch without a row of the table
-- is acknowledged in the calling transaction when it is the oldest.
CREATE FUNCTION get_table(
    server text,
    row_type anyelement,
    max_changes integer DEFAULT 1000,
    timeout_ms integer DEFAULT 0)
RETURNS SETOF anyelement
AS 'MODULE_PATHNAME', 'binlog_fdw_get_table' LANGUAGE C;
REVOKE ALL ON FUNCTION get_table(text, anyelement, integer, integer) FROM PUBLIC;

-- ---------------------------------------------------------------------
-- Status
-- ---------------------------------------------------------------------

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
    OUT source_notice text,
    OUT last_error_cleared timestamptz,
    OUT apply_error_cleared timestamptz,
    OUT source_oldest_file text,
    OUT retention_files integer,
    OUT binlog_expire_seconds bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'binlog_fdw_status' LANGUAGE C;

CREATE VIEW status AS SELECT * FROM status();

-- Functions are for the roles the owner grants them to.
REVOKE ALL ON FUNCTION start(text), stop(text), reset(text),
    get(text, integer, integer), get_json(text, integer, integer),
    get_jsonl(text, integer, integer),
    ack(text, bigint), rollback(text, bigint), status() FROM PUBLIC;
REVOKE ALL ON status FROM PUBLIC;

-- ---------------------------------------------------------------------
-- Apply into PostgreSQL tables
-- ---------------------------------------------------------------------

-- Where MySQL tables go, when not to schema.table of the same names, and
-- per-table apply settings.  sync_file/sync_pos: changes before this
-- position are already in the table (its initial load).  load_*: the chunks
-- of a chunked load (load()), in key order: chunk i holds the keys up to
-- load_key_hi[i] (NULL: all the rest, the load is complete) as of binlog
-- position load_file[i]:load_pos[i], load_rows[i] rows; load_digest: the
-- table's definition when the load began; load_created: its first chunk
-- created the target (the last builds the source's secondary indexes);
-- load_key_columns: the primary key the chunks range over (a bound holds
-- its integers comma-separated, in this order); load_estimate: the source's
-- estimate of the table's rows at its last chunk.  load_key_hi '{}': a load
-- that has copied no chunk yet (apply skips the table's changes: its first
-- chunk holds them).  history_table: the history table apply also writes
-- the table's changes into (map_history()), its quoted qualified name.
CREATE TABLE table_mapping (
    server_name text NOT NULL,
    source_schema text NOT NULL,
    source_table text NOT NULL,
    target_schema text,
    target_table text,
    key_columns text[],
    conflict text CHECK (conflict IN ('error', 'skip', 'overwrite')),
    skip boolean NOT NULL DEFAULT false,
    sync_file text,
    sync_pos bigint,
    synced_at timestamptz,
    load_key_hi text[],
    load_file text[],
    load_pos bigint[],
    load_rows bigint[],
    load_digest text,
    load_created boolean,
    load_key_columns text[],
    load_estimate bigint,
    history_table text,
    PRIMARY KEY (server_name, source_schema, source_table)
);
REVOKE ALL ON table_mapping FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('table_mapping', '');

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

CREATE FUNCTION map_table(
    server text,
    source text,
    target regclass DEFAULT NULL,
    key_columns text[] DEFAULT NULL,
    conflict text DEFAULT NULL,
    skip boolean DEFAULT false)
RETURNS void
AS 'MODULE_PATHNAME', 'binlog_fdw_map_table' LANGUAGE C;
COMMENT ON FUNCTION map_table(text, text, regclass, text[], text, boolean) IS
  'map MySQL table "db.table" to a PostgreSQL table (or skip it), with its key and conflict policy';

CREATE FUNCTION apply(
    server text,
    max_changes bigint DEFAULT 100000,
    max_seconds double precision DEFAULT 10,
    wait_seconds double precision DEFAULT 0,
    OUT transactions bigint,
    OUT rows bigint,
    OUT ddl bigint,
    OUT file text,
    OUT pos bigint,
    OUT gtid text,
    OUT lag_seconds double precision,
    OUT tables integer)
RETURNS record
AS 'MODULE_PATHNAME', 'binlog_fdw_apply' LANGUAGE C;
COMMENT ON FUNCTION apply(text, bigint, double precision, double precision) IS
  'apply a source''s changes into PostgreSQL tables in this transaction, exactly once';

CREATE FUNCTION skip_change(server text, OUT seq bigint, OUT op text, OUT ddl text)
RETURNS record
AS 'MODULE_PATHNAME', 'binlog_fdw_skip_change' LANGUAGE C STRICT;
COMMENT ON FUNCTION skip_change(text) IS
  'acknowledge the next change of a source without applying it (after fixing the target by hand)';

REVOKE ALL ON FUNCTION skip_change(text),
    apply(text, bigint, double precision, double precision),
    map_table(text, text, regclass, text[], text, boolean) FROM PUBLIC;

-- Initial load from one consistent snapshot of the source.
CREATE FUNCTION snapshot(
    server text,
    tables text[],
    truncate boolean DEFAULT false,
    OUT source text,
    OUT target text,
    OUT rows bigint,
    OUT snapshot_position text,
    OUT created boolean)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'binlog_fdw_snapshot' LANGUAGE C;
COMMENT ON FUNCTION snapshot(text, text[], boolean) IS
  'copy MySQL tables ("db.table") into PostgreSQL from one consistent snapshot; apply continues exactly after it';

CREATE FUNCTION sync_table(server text, source text, truncate boolean DEFAULT false)
RETURNS bigint
LANGUAGE sql
AS $$ SELECT rows FROM binlog_fdw.snapshot(sync_table.server, ARRAY[sync_table.source], sync_table.truncate) $$;

-- Initial load in primary-key chunks, each committed with its progress;
-- called again after a failure it goes on at the next chunk.
CREATE PROCEDURE load(server text, tables text[], chunk_rows integer DEFAULT 100000,
                      truncate boolean DEFAULT false, parallel integer DEFAULT NULL)
AS 'MODULE_PATHNAME', 'binlog_fdw_load' LANGUAGE C;
COMMENT ON PROCEDURE load(text, text[], integer, boolean, integer) IS
  'copy MySQL tables ("db.table") into PostgreSQL in primary-key chunks while the source streams, one transaction per chunk; resumes where it stopped; parallel: loaders at once (this session and parallel - 1 background workers), several tables at a time; NULL: one per table up to the CPUs of the machine (1 with truncate)';

-- The loads running now (snapshot(), sync_table(), load()), one row per
-- backend: phase copying, building indexes or analyzing; rows_per_second
-- since the table's start in that backend; eta at that rate for the rows
-- the source estimates (NULL once the estimate is passed).
CREATE FUNCTION sync_progress(
    OUT pid integer,
    OUT server text,
    OUT source text,
    OUT target text,
    OUT rows_done bigint,
    OUT rows_estimated bigint,
    OUT started timestamptz,
    OUT phase text,
    OUT rows_per_second double precision,
    OUT eta timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'binlog_fdw_sync_progress' LANGUAGE C;
CREATE VIEW sync_progress AS SELECT * FROM sync_progress();

REVOKE ALL ON FUNCTION snapshot(text, text[], boolean), sync_table(text, text, boolean),
    sync_progress() FROM PUBLIC;
REVOKE ALL ON PROCEDURE load(text, text[], integer, boolean, integer) FROM PUBLIC;

-- The chunked loads of load(), per table: chunks committed, rows they
-- hold, the key they reach (its values comma-separated), the position and
-- time of the last one, complete or not.
CREATE VIEW load_status AS
SELECT server_name AS server,
       source_schema || '.' || source_table AS source,
       cardinality(load_key_hi) AS chunks,
       (SELECT sum(r) FROM unnest(load_rows) AS r)::bigint AS rows_copied,
       (SELECT k FROM unnest(load_key_hi) WITH ORDINALITY AS u(k, i)
         WHERE k IS NOT NULL ORDER BY i DESC LIMIT 1) AS keys_to,
       cardinality(load_key_hi) > 0 AND load_key_hi[cardinality(load_key_hi)] IS NULL AS complete,
       load_file[cardinality(load_file)] || ':' || load_pos[cardinality(load_pos)] AS last_position,
       synced_at AS last_chunk_at
  FROM table_mapping
 WHERE load_key_hi IS NOT NULL;
REVOKE ALL ON load_status FROM PUBLIC;

-- Overall, per server: the tables of its chunked loads (load(), the reload
-- after a lost position), how many are complete, the rows their committed
-- chunks hold, the rows estimated (the source's estimate for a table not
-- complete, at least what it holds), the rate of its copies running now
-- (sync_progress) and the ETA at that rate.
CREATE VIEW load_progress AS
WITH t AS (
    SELECT server_name AS server,
           cardinality(load_key_hi) > 0 AND load_key_hi[cardinality(load_key_hi)] IS NULL AS complete,
           coalesce((SELECT sum(r) FROM unnest(load_rows) AS r), 0)::bigint AS rows_copied,
           load_estimate
      FROM table_mapping
     WHERE load_key_hi IS NOT NULL),
live AS (
    SELECT server, sum(rows_per_second) AS rows_per_second
      FROM sync_progress()
     GROUP BY server),
per_server AS (
    SELECT server,
           count(*) AS tables,
           count(*) FILTER (WHERE complete) AS tables_complete,
           sum(rows_copied)::bigint AS rows_copied,
           sum(CASE WHEN complete THEN rows_copied
                    ELSE greatest(coalesce(load_estimate, 0), rows_copied) END)::bigint AS rows_estimated
      FROM t
     GROUP BY server)
SELECT p.server, p.tables, p.tables_complete, p.rows_copied, p.rows_estimated,
       l.rows_per_second,
       CASE WHEN l.rows_per_second > 0
            THEN now() + make_interval(secs => greatest(p.rows_estimated - p.rows_copied, 0) / l.rows_per_second)
       END AS eta
  FROM per_server p LEFT JOIN live l USING (server);
REVOKE ALL ON load_progress FROM PUBLIC;
REVOKE ALL ON sync_progress FROM PUBLIC;

-- A dropped source: its worker stops when the DROP commits (the library
-- sees the drop itself, also that of DROP EXTENSION ... CASCADE), its
-- position, start and table mappings go with it (a new server of the same
-- name starts afresh from its "start" option, never from a stale position
-- or snapshot position).
CREATE FUNCTION forget_dropped_servers()
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
        -- a new server of the name counts afresh (conflict_log is kept)
        DELETE FROM binlog_fdw.stats_table WHERE server_name = r.name;
        DELETE FROM binlog_fdw.stats_source WHERE server_name = r.name;
        DELETE FROM binlog_fdw.schema_history WHERE server_name = r.name;
        DELETE FROM binlog_fdw.filters WHERE server_name = r.name;
        DELETE FROM binlog_fdw.filter_history WHERE server_name = r.name;
    END LOOP;
END
$$;
REVOKE ALL ON FUNCTION forget_dropped_servers() FROM PUBLIC;
CREATE EVENT TRIGGER binlog_fdw_forget_dropped_servers ON sql_drop
    EXECUTE FUNCTION forget_dropped_servers();
-- also with session_replication_role = replica
ALTER EVENT TRIGGER binlog_fdw_forget_dropped_servers ENABLE ALWAYS;

-- A renamed source: its rows in source_state, started_sources and
-- table_mapping take the new name in the renaming transaction.
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

-- ---------------------------------------------------------------------
-- Conflicts (src/apply/conflict.c)
-- ---------------------------------------------------------------------

-- Every conflict of apply: a row to update or delete missing, an inserted
-- key present, a constraint violated.  Those resolved by the policy skip
-- or overwrite are written in the apply transaction (they commit or roll
-- back with the rows); one that stopped apply (policy error) is kept in
-- shared memory while it stops it (view conflicts, resolution 'stopped'),
-- and written here when skip_change() skips it or an apply passes it.
CREATE TABLE conflict_log (
    id bigserial PRIMARY KEY,
    server_name text NOT NULL,
    source_table text NOT NULL,
    target_table text,
    operation text NOT NULL,
    kind text NOT NULL,
    key jsonb,
    before_image jsonb,
    after_image jsonb,
    binlog_file text,
    binlog_pos bigint,
    gtid text,
    policy text NOT NULL,
    resolution text NOT NULL,
    skip_call text,
    message text,
    conflict_time timestamptz NOT NULL DEFAULT now());
REVOKE ALL ON conflict_log FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('conflict_log', '');
SELECT pg_catalog.pg_extension_config_dump('conflict_log_id_seq', '');

-- the conflicts stopping apply now (policy error), one per source
CREATE FUNCTION stopped_conflicts(
    OUT server_name text,
    OUT conflict jsonb,
    OUT attempts bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'binlog_fdw_stopped_conflicts' LANGUAGE C;
REVOKE ALL ON FUNCTION stopped_conflicts() FROM PUBLIC;

CREATE VIEW conflicts AS
SELECT id, server_name, source_table, target_table, operation, kind, key,
       before_image, after_image, binlog_file, binlog_pos, gtid, policy,
       resolution, skip_call, message, conflict_time
  FROM conflict_log
UNION ALL
SELECT NULL::bigint, s.server_name, s.conflict->>'source_table',
       s.conflict->>'target_table', s.conflict->>'operation', s.conflict->>'kind',
       s.conflict->'key', s.conflict->'before_image', s.conflict->'after_image',
       s.conflict->>'binlog_file', (s.conflict->>'binlog_pos')::bigint,
       s.conflict->>'gtid', s.conflict->>'policy', 'stopped', s.conflict->>'skip_call',
       s.conflict->>'message', (s.conflict->>'conflict_time')::timestamptz
  FROM stopped_conflicts() s;
REVOKE ALL ON conflicts FROM PUBLIC;

-- ---------------------------------------------------------------------
-- Cumulative statistics (src/apply/stats.c)
-- ---------------------------------------------------------------------

-- Per source and per table, since stats_reset.  Apply's counters are
-- written in the apply transaction (exact, across crashes); the worker's
-- (bytes_read, reconnects, ring_wait_seconds) and failed applies are
-- counted in shared memory and added by the next apply transaction that
-- writes statistics (view source_stats adds what is not written yet).
CREATE TABLE stats_source (
    server_name text PRIMARY KEY,
    transactions bigint NOT NULL DEFAULT 0,
    rows_inserted bigint NOT NULL DEFAULT 0,
    rows_updated bigint NOT NULL DEFAULT 0,
    rows_deleted bigint NOT NULL DEFAULT 0,
    ddl bigint NOT NULL DEFAULT 0,
    conflicts_missing_row bigint NOT NULL DEFAULT 0,
    conflicts_duplicate_key bigint NOT NULL DEFAULT 0,
    conflicts_constraint_violation bigint NOT NULL DEFAULT 0,
    errors bigint NOT NULL DEFAULT 0,
    bytes_read bigint NOT NULL DEFAULT 0,
    reconnects bigint NOT NULL DEFAULT 0,
    ring_wait_seconds double precision NOT NULL DEFAULT 0,
    stats_reset timestamptz NOT NULL DEFAULT now());
REVOKE ALL ON stats_source FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('stats_source', '');

CREATE TABLE stats_table (
    server_name text NOT NULL,
    source_table text NOT NULL,
    target_table text,
    rows_inserted bigint NOT NULL DEFAULT 0,
    rows_updated bigint NOT NULL DEFAULT 0,
    rows_deleted bigint NOT NULL DEFAULT 0,
    conflicts_missing_row bigint NOT NULL DEFAULT 0,
    conflicts_duplicate_key bigint NOT NULL DEFAULT 0,
    conflicts_constraint_violation bigint NOT NULL DEFAULT 0,
    stats_reset timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (server_name, source_table));
REVOKE ALL ON stats_table FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('stats_table', '');

-- what the sources' slots counted and the tables do not hold yet
CREATE FUNCTION stats_unflushed(
    OUT server_name text,
    OUT bytes_read bigint,
    OUT reconnects bigint,
    OUT ring_wait_seconds double precision,
    OUT errors bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'binlog_fdw_stats_unflushed' LANGUAGE C;
REVOKE ALL ON FUNCTION stats_unflushed() FROM PUBLIC;

CREATE VIEW source_stats AS
SELECT coalesce(s.server_name, u.server_name) AS server_name,
       coalesce(s.transactions, 0) AS transactions,
       coalesce(s.rows_inserted, 0) AS rows_inserted,
       coalesce(s.rows_updated, 0) AS rows_updated,
       coalesce(s.rows_deleted, 0) AS rows_deleted,
       coalesce(s.ddl, 0) AS ddl,
       coalesce(s.conflicts_missing_row, 0) AS conflicts_missing_row,
       coalesce(s.conflicts_duplicate_key, 0) AS conflicts_duplicate_key,
       coalesce(s.conflicts_constraint_violation, 0) AS conflicts_constraint_violation,
       coalesce(s.errors, 0) + coalesce(u.errors, 0) AS errors,
       coalesce(s.bytes_read, 0) + coalesce(u.bytes_read, 0) AS bytes_read,
       coalesce(s.reconnects, 0) + coalesce(u.reconnects, 0) AS reconnects,
       coalesce(s.ring_wait_seconds, 0) + coalesce(u.ring_wait_seconds, 0) AS ring_wait_seconds,
       s.stats_reset
  FROM stats_source s FULL JOIN stats_unflushed() u ON u.server_name = s.server_name;
REVOKE ALL ON source_stats FROM PUBLIC;

CREATE VIEW table_stats AS
SELECT server_name, source_table, target_table, rows_inserted, rows_updated,
       rows_deleted, conflicts_missing_row, conflicts_duplicate_key,
       conflicts_constraint_violation, stats_reset
  FROM stats_table;
REVOKE ALL ON table_stats FROM PUBLIC;

-- start the statistics of a source (NULL: of all) afresh
CREATE FUNCTION reset_stats(server text DEFAULT NULL)
RETURNS void
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    DELETE FROM binlog_fdw.stats_table WHERE server IS NULL OR server_name = server;
    DELETE FROM binlog_fdw.stats_source WHERE server IS NULL OR server_name = server;
    INSERT INTO binlog_fdw.stats_source (server_name)
    SELECT s.srvname FROM pg_foreign_server s
      JOIN pg_foreign_data_wrapper w ON w.oid = s.srvfdw
     WHERE w.fdwname = 'binlog_fdw' AND (server IS NULL OR s.srvname = server);
$$;
COMMENT ON FUNCTION reset_stats(text) IS
  'start the cumulative statistics of a source (NULL: of all) afresh';
REVOKE ALL ON FUNCTION reset_stats(text) FROM PUBLIC;

-- are the targets equal to the source at one binlog position?  A consistent
-- snapshot of the source (position P), apply exactly up to P in this
-- transaction, then both sides compared by key (checksums per key hash
-- range, rows of the ranges that differ): one row per differing key
CREATE FUNCTION verify(
    server text,
    tables text[],
    OUT source_table text,
    OUT key jsonb,
    OUT difference text,
    OUT source_row jsonb,
    OUT postgresql_row jsonb,
    OUT "position" text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'binlog_fdw_verify' LANGUAGE C;
COMMENT ON FUNCTION verify(text, text[]) IS
  'compare target tables with the source at one binlog position, reporting the keys that differ';
REVOKE ALL ON FUNCTION verify(text, text[]) FROM PUBLIC;

-- History (system-versioned) tables: apply also writes each change of a
-- source table into its history table, in the transaction that applies it.
-- One row per row version: the target's columns as they were from
-- valid_from to valid_to (an UPDATE or DELETE closes the version it
-- replaces, valid_to = its commit time; a DELETE's row holds the deleted
-- values and the empty range [t, t)), with op, commit_time, gtid,
-- binlog_file, binlog_pos of the change that wrote it and replaces, the
-- history_id of the version it closed.  history NULL: <target>_history in
-- the target's schema; created, with the target's column types, if it does
-- not exist.  enabled false: apply stops writing it (the table stays).
CREATE FUNCTION map_history(
    server text,
    source text,
    history text DEFAULT NULL,
    enabled boolean DEFAULT true)
RETURNS regclass
AS 'MODULE_PATHNAME', 'binlog_fdw_map_history' LANGUAGE C;
COMMENT ON FUNCTION map_history(text, text, text, boolean) IS
  'write every applied change of MySQL table "db.table" into a history table too (row versions with valid_from/valid_to, op, GTID, binlog position), exactly once';
REVOKE ALL ON FUNCTION map_history(text, text, text, boolean) FROM PUBLIC;

-- Filters of a source's changes, per source (source '*': every table) and
-- per table ('db.table', whose non-NULL fields take precedence over those of
-- '*'): the columns kept (columns) or left out (exclude_columns), masked
-- columns (mask: {"col": {"value": "text" | null} | {"hash": "sha256"}}),
-- the operations kept (insert, update, delete, truncate, ddl) and a row
-- filter (a PostgreSQL boolean expression over the target's columns).  The
-- worker applies columns, masks and the operations insert / update / delete
-- / truncate before the ring, as of its start (binlog_fdw.filter_history
-- records each set with the position it took effect at); apply() applies
-- the row filter and the operation ddl.  Written by set_filter().
CREATE TABLE filters (
    server_name text NOT NULL,
    source text NOT NULL,
    columns text[],
    exclude_columns text[],
    mask jsonb,
    operations text[],
    row_filter text,
    set_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (server_name, source)
);
REVOKE ALL ON filters FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('filters', '');

-- Each set of a source's filters the worker started with, and the position
-- it took effect at (binlog_file NULL: the source's start option).
CREATE TABLE filter_history (
    server_name text NOT NULL,
    seq bigint NOT NULL,
    filters jsonb NOT NULL,
    binlog_file text,
    binlog_pos bigint,
    skip bigint,
    gtid_state text,
    took_effect_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (server_name, seq)
);
REVOKE ALL ON filter_history FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('filter_history', '');

-- set (or, with every filter argument NULL, remove) the filter of a source
-- table ('db.table') or of every table of the source (source NULL)
CREATE FUNCTION set_filter(
    server text,
    source text DEFAULT NULL,
    columns text[] DEFAULT NULL,
    exclude_columns text[] DEFAULT NULL,
    mask jsonb DEFAULT NULL,
    operations text[] DEFAULT NULL,
    row_filter text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    src text := coalesce(source, '*');
    e record;
BEGIN
    IF NOT EXISTS (SELECT FROM pg_foreign_server s
                     JOIN pg_foreign_data_wrapper w ON w.oid = s.srvfdw
                    WHERE w.fdwname = 'binlog_fdw' AND s.srvname = server) THEN
        RAISE EXCEPTION 'binlog_fdw server "%" does not exist', server
            USING ERRCODE = 'undefined_object';
    END IF;
    IF src <> '*' AND src !~ '^[^.]+\..+$' THEN
        RAISE EXCEPTION 'source table "%" is not of the form db.table (the database ends at the first dot)', src
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Name the MySQL table as database.table, or pass NULL for every table of the source.';
    END IF;
    IF columns IS NOT NULL AND exclude_columns IS NOT NULL THEN
        RAISE EXCEPTION 'filter of %: columns and exclude_columns cannot both be given', src
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF cardinality(columns) = 0 OR cardinality(exclude_columns) = 0 OR cardinality(operations) = 0
       OR array_position(columns, NULL) IS NOT NULL
       OR array_position(exclude_columns, NULL) IS NOT NULL
       OR array_position(operations, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'filter of %: columns, exclude_columns and operations must be NULL or arrays of names', src
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'An empty array or a NULL element is not a list of names.';
    END IF;
    IF EXISTS (SELECT FROM unnest(operations) o
                WHERE o NOT IN ('insert', 'update', 'delete', 'truncate', 'ddl')) THEN
        RAISE EXCEPTION 'filter of %: unknown operation in %', src, operations
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'The operations are insert, update, delete, truncate and ddl.';
    END IF;
    IF mask IS NOT NULL THEN
        IF jsonb_typeof(mask) <> 'object' OR mask = '{}' THEN
            RAISE EXCEPTION 'filter of %: mask must be a JSON object of columns', src
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'For example {"email": {"hash": "sha256"}, "phone": {"value": "***"}, "note": {"value": null}}.';
        END IF;
        FOR e IN SELECT * FROM jsonb_each(mask) LOOP
            IF NOT (jsonb_typeof(e.value) = 'object' AND
                    ((e.value ?& ARRAY['value'] AND NOT e.value ? 'hash'
                      AND jsonb_typeof(e.value->'value') IN ('string', 'null')
                      AND (SELECT count(*) FROM jsonb_object_keys(e.value)) = 1) OR
                     (e.value = '{"hash": "sha256"}'))) THEN
                RAISE EXCEPTION 'filter of %: the mask of column "%" is not {"value": text or null} or {"hash": "sha256"}', src, e.key
                    USING ERRCODE = 'invalid_parameter_value';
            END IF;
        END LOOP;
    END IF;
    IF row_filter IS NOT NULL AND src = '*' THEN
        RAISE EXCEPTION 'a row filter is per table, not for every table of source "%"', server
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Name the table as database.table.';
    END IF;
    IF columns IS NULL AND exclude_columns IS NULL AND mask IS NULL AND operations IS NULL
       AND row_filter IS NULL THEN
        DELETE FROM binlog_fdw.filters f WHERE f.server_name = server AND f.source = src;
        RETURN;
    END IF;
    INSERT INTO binlog_fdw.filters AS f
           (server_name, source, columns, exclude_columns, mask, operations, row_filter)
    VALUES (server, src, columns, exclude_columns, mask, operations, row_filter)
    ON CONFLICT ON CONSTRAINT filters_pkey DO UPDATE
       SET columns = EXCLUDED.columns, exclude_columns = EXCLUDED.exclude_columns,
           mask = EXCLUDED.mask, operations = EXCLUDED.operations,
           row_filter = EXCLUDED.row_filter, set_at = now();
END
$$;
COMMENT ON FUNCTION set_filter(text, text, text[], text[], jsonb, text[], text) IS
  'set the column, mask, operation and row filter of a source table (or of every table of the source)';
REVOKE ALL ON FUNCTION set_filter(text, text, text[], text[], jsonb, text[], text) FROM PUBLIC;

-- load(..., parallel => N) loads one table's key ranges at once: its first
-- chunk splits the keys above it into ranges (load_split: the upper bound
-- of each range but the last, which has none; NULL: one range, the chunks
-- are the prefix of the keys described above), each range copied in
-- chunks of its own by whichever loader takes it.  load_range[i]: the
-- range of chunk i (1-based; NULL: all range 1); the chunks of one range
-- are in key order, and load_key_hi[i] NULL is the rest of that range.  A
-- load is complete when each range has its last chunk.
ALTER TABLE table_mapping ADD COLUMN load_split text[], ADD COLUMN load_range integer[];

-- load_status: the chunks are complete when every range has its last one;
-- keys_to is the bound of the last chunk committed; ranges: the key ranges
-- of a parallel load, ranges_complete: those copied to their end.
CREATE OR REPLACE VIEW load_status AS
SELECT server_name AS server,
       source_schema || '.' || source_table AS source,
       cardinality(load_key_hi) AS chunks,
       (SELECT sum(r) FROM unnest(load_rows) AS r)::bigint AS rows_copied,
       (SELECT k FROM unnest(load_key_hi) WITH ORDINALITY AS u(k, i)
         WHERE k IS NOT NULL ORDER BY i DESC LIMIT 1) AS keys_to,
       cardinality(load_key_hi) > 0 AND
         (SELECT count(*) FROM unnest(load_key_hi) AS k WHERE k IS NULL) =
         coalesce(cardinality(load_split), 0) + 1 AS complete,
       load_file[cardinality(load_file)] || ':' || load_pos[cardinality(load_pos)] AS last_position,
       synced_at AS last_chunk_at,
       coalesce(cardinality(load_split), 0) + 1 AS ranges,
       (SELECT count(*) FROM unnest(load_key_hi) AS k WHERE k IS NULL)::integer AS ranges_complete
  FROM table_mapping
 WHERE load_key_hi IS NOT NULL;

CREATE OR REPLACE VIEW load_progress AS
WITH t AS (
    SELECT server_name AS server,
           cardinality(load_key_hi) > 0 AND
             (SELECT count(*) FROM unnest(load_key_hi) AS k WHERE k IS NULL) =
             coalesce(cardinality(load_split), 0) + 1 AS complete,
           coalesce((SELECT sum(r) FROM unnest(load_rows) AS r), 0)::bigint AS rows_copied,
           load_estimate
      FROM table_mapping
     WHERE load_key_hi IS NOT NULL),
live AS (
    SELECT server, sum(rows_per_second) AS rows_per_second
      FROM sync_progress()
     GROUP BY server),
per_server AS (
    SELECT server,
           count(*) AS tables,
           count(*) FILTER (WHERE complete) AS tables_complete,
           sum(rows_copied)::bigint AS rows_copied,
           sum(CASE WHEN complete THEN rows_copied
                    ELSE greatest(coalesce(load_estimate, 0), rows_copied) END)::bigint AS rows_estimated
      FROM t
     GROUP BY server)
SELECT p.server, p.tables, p.tables_complete, p.rows_copied, p.rows_estimated,
       l.rows_per_second,
       CASE WHEN l.rows_per_second > 0
            THEN now() + make_interval(secs => greatest(p.rows_estimated - p.rows_copied, 0) / l.rows_per_second)
       END AS eta
  FROM per_server p LEFT JOIN live l USING (server);

-- Parallel apply (binlog_fdw.apply_workers, -1: from the machine) of a
-- continuous source: what its coordinator did since the source started,
-- and the number of apply workers the setting means on this machine.
CREATE FUNCTION parallel_apply_stats(server text,
    OUT workers integer,
    OUT dispatched bigint,
    OUT max_in_flight integer,
    OUT key_waits bigint,
    OUT barriers bigint,
    OUT hint_releases bigint,
    OUT effective_workers integer)
RETURNS record
AS 'MODULE_PATHNAME', 'binlog_fdw_parallel_apply_stats' LANGUAGE C STRICT;
COMMENT ON FUNCTION parallel_apply_stats(text) IS
  'parallel apply of a source: apply workers, transactions dispatched to them, most applying at once, dispatches that waited for a key, transactions applied serially as barriers, transactions run beside others on the source''s own dependency hint alone, apply workers binlog_fdw.apply_workers means here (1: serial)';
REVOKE ALL ON FUNCTION parallel_apply_stats(text) FROM PUBLIC;

-- The GTID state at a copy's position (snapshot(), sync_table()): on a
-- source with several hosts, a change is in the copy if its GTID is in
-- this state (a binlog position names a place in one server's binlog).
ALTER TABLE table_mapping ADD COLUMN sync_gtid text;
