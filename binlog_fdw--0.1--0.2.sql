/* binlog_fdw--0.1--0.2.sql: upgrade from 0.1 (ALTER EXTENSION binlog_fdw UPDATE) */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "ALTER EXTENSION binlog_fdw UPDATE TO '0.2'" to load this file. \quit

-- Every change to the extension's objects since 0.1 is made here too, so
-- that an updated 0.1 installation has exactly the objects of a fresh 0.2
-- one (the upgrade test compares their schema-only dumps).
