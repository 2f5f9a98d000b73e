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
