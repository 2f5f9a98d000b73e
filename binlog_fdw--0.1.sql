/* binlog_fdw--0.1.sql: MySQL/MariaDB change data capture in PostgreSQL */

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
