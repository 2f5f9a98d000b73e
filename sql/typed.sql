--
-- Typed foreign tables (IMPORT FOREIGN SCHEMA, src/sql/import.c, typed.c),
-- the parts that need no MySQL: their options and columns, what a scan
-- pushes down (EXPLAIN), the errors for columns that are neither source
-- nor change columns.  The live cases (import from MariaDB, values, stale
-- definitions) are test/suites/66-typed.sh.
--
CREATE EXTENSION binlog_fdw;
CREATE SERVER ts FOREIGN DATA WRAPPER binlog_fdw OPTIONS (host '127.0.0.1', port '1');
CREATE USER MAPPING FOR current_user SERVER ts OPTIONS (user 'repl');

-- options: schema_name and table_name on the table, column_name on columns
CREATE FOREIGN TABLE t_bad (id int) SERVER ts OPTIONS (database 'shop');
CREATE FOREIGN TABLE t_bad (id int OPTIONS (name 'id')) SERVER ts OPTIONS (table_name 'o');
CREATE FOREIGN TABLE orders (
    _binlog_seq bigint, _binlog_op text, _binlog_image text,
    _binlog_commit_time timestamptz, _binlog_file text, _binlog_pos bigint,
    _binlog_gtid text, _binlog_xid bigint, _binlog_batch bigint,
    id integer OPTIONS (column_name 'id'),
    "Amount ""x""" numeric(10,2) OPTIONS (column_name 'amount x'))
  SERVER ts OPTIONS (schema_name 'shop', table_name 'orders');

-- pushed down: _binlog_op =, comparisons of _binlog_seq and _binlog_commit_time
SET timezone = 'UTC';
EXPLAIN (VERBOSE, COSTS OFF) SELECT id FROM orders
  WHERE _binlog_op = 'update' AND _binlog_seq > 5 AND _binlog_seq <= 100
    AND _binlog_commit_time >= '2026-01-01 10:15:00+00' AND id = 42;
-- not pushed: other operators, other columns, non-constant values
EXPLAIN (VERBOSE, COSTS OFF) SELECT id FROM orders
  WHERE _binlog_op <> 'insert' AND _binlog_image = 'after' AND _binlog_seq > id;
-- a join with an ordinary table plans as one
CREATE TABLE customers (id int PRIMARY KEY, name text);
EXPLAIN (COSTS OFF) SELECT c.name, o."Amount ""x""" FROM orders o JOIN customers c ON c.id = o.id
  WHERE o._binlog_op = 'insert';
RESET timezone;

-- a column that is neither a source column nor a change column
CREATE FOREIGN TABLE t_unknown (_binlog_seq bigint, extra int)
  SERVER ts OPTIONS (schema_name 'shop', table_name 'orders');
SELECT * FROM t_unknown;
-- a change column of the wrong type
CREATE FOREIGN TABLE t_type (_binlog_seq int, id int OPTIONS (column_name 'id'))
  SERVER ts OPTIONS (schema_name 'shop', table_name 'orders');
SELECT * FROM t_type;
-- table_name without schema_name
CREATE FOREIGN TABLE t_noschema (id int OPTIONS (column_name 'id'))
  SERVER ts OPTIONS (table_name 'orders');
SELECT * FROM t_noschema;
-- partial_image: error (the default) or null; _binlog_absent is text[]
CREATE FOREIGN TABLE t_pi (id int OPTIONS (column_name 'id'))
  SERVER ts OPTIONS (schema_name 'shop', table_name 'orders', partial_image 'zero');
CREATE FOREIGN TABLE t_pi (_binlog_absent text, id int OPTIONS (column_name 'id'))
  SERVER ts OPTIONS (schema_name 'shop', table_name 'orders', partial_image 'null');
SELECT * FROM t_pi;
-- 'null' needs _binlog_absent (else a NULL would be silent)
CREATE FOREIGN TABLE t_pi2 (id int OPTIONS (column_name 'id'))
  SERVER ts OPTIONS (schema_name 'shop', table_name 'orders', partial_image 'null');
SELECT * FROM t_pi2;
IMPORT FOREIGN SCHEMA shop FROM SERVER ts INTO public OPTIONS (absent 'null');
IMPORT FOREIGN SCHEMA shop FROM SERVER ts INTO public OPTIONS (partial_image 'blank');
-- a source that is not started
SELECT * FROM orders;
-- get_table(): a typed foreign table's row type only
SELECT * FROM binlog_fdw.get_table('ts', NULL::customers);
SELECT * FROM binlog_fdw.get_table('ts', NULL::orders);

SET client_min_messages = warning;
DROP EXTENSION binlog_fdw CASCADE;
DROP SCHEMA IF EXISTS binlog_fdw;
RESET client_min_messages;
DROP TABLE customers;
