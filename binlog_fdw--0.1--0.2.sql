/* binlog_fdw--0.1--0.2.sql: upgrade from 0.1 (ALTER EXTENSION binlog_fdw UPDATE) */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "ALTER EXTENSION binlog_fdw UPDATE TO '0.2'" to load this file. \quit

-- Every change to the extension's objects since 0.1 is made here too, so
-- that an updated 0.1 installation has exactly the objects of a fresh 0.2
-- one (the upgrade test compares their schema-only dumps).

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
