--
-- Apply into PostgreSQL tables, the parts that need no MySQL: the apply
-- options of sources, map_table() and its checks, apply() / skip_change() /
-- snapshot() arguments and states, and who may call them.  The live cases
-- (rows, types, keys, conflicts, DDL ...) are test/suites/85-apply-cases.sh.
-- The one source that is started points at a closed port.
--
CREATE EXTENSION binlog_fdw;

-- ---------------------------------------------------------------------
-- Apply options of a source: bad values name the expected form
-- ---------------------------------------------------------------------
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (conflict 'ignore');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (conflict 'ERROR');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (unmapped 'drop');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (keyless 'yes');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (tinyint1_boolean 'yes');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (zero_date 'zero');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (zero_date '');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (time_type 'duration');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (schema_map 'shop');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (continuous 'maybe');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (lost_position 'resync');
-- apply options belong to servers, not to user mappings
CREATE SERVER ok FOREIGN DATA WRAPPER binlog_fdw;
CREATE USER MAPPING FOR current_user SERVER ok OPTIONS (user 'repl', conflict 'skip');
DROP SERVER ok;
SELECT count(*) AS bad_servers FROM pg_foreign_server WHERE srvname IN ('bad', 'ok');

-- every valid value
CREATE SERVER s FOREIGN DATA WRAPPER binlog_fdw OPTIONS (
    conflict 'overwrite', unmapped 'skip', keyless 'full_row', tinyint1_boolean 'true',
    zero_date '-infinity', time_type 'time', schema_map 'crm:crm_pg,shop:shop', continuous 'false',
    lost_position 'reload');
ALTER SERVER s OPTIONS (SET conflict 'skip', SET unmapped 'error', SET keyless 'error',
    SET tinyint1_boolean 'false', SET zero_date 'error', SET time_type 'interval',
    SET lost_position 'error');
ALTER SERVER s OPTIONS (SET conflict 'error', SET zero_date 'null');
ALTER SERVER s OPTIONS (SET conflict 'none');
SELECT unnest(srvoptions) AS option FROM pg_foreign_server WHERE srvname = 's';

-- ---------------------------------------------------------------------
-- map_table(): where a MySQL table goes, its key, its conflict policy
-- ---------------------------------------------------------------------
CREATE SCHEMA shop;
CREATE TABLE shop.orders (id int PRIMARY KEY, code text UNIQUE, v text);
CREATE TABLE shop.archive (code text, v text) PARTITION BY LIST (code);
CREATE VIEW shop.recent AS SELECT * FROM shop.orders;
SELECT binlog_fdw.map_table('s', 'shop.orders');
SELECT binlog_fdw.map_table('s', 'shop.old_orders', 'shop.archive', ARRAY['code'], 'overwrite');
SELECT binlog_fdw.map_table('s', 'shop.tmp', skip => true);
-- the database ends at the first dot
SELECT binlog_fdw.map_table('s', 'shop.v1.2', key_columns => ARRAY['x']);
-- schema_map: crm goes to crm_pg, which does not exist yet (no key check)
SELECT binlog_fdw.map_table('s', 'crm.contacts', key_columns => ARRAY['email']);
-- a second call replaces the mapping
SELECT binlog_fdw.map_table('s', 'shop.orders', key_columns => ARRAY['code'], conflict => 'skip');
SELECT source_schema, source_table, target_schema, target_table, key_columns, conflict, skip
  FROM binlog_fdw.table_mapping ORDER BY 1, 2;

-- checked arguments
SELECT binlog_fdw.map_table('s', 'orders');
SELECT binlog_fdw.map_table('s', '.orders');
SELECT binlog_fdw.map_table('s', 'shop.');
SELECT binlog_fdw.map_table('s', 'shop.orders', conflict => 'ignore');
SELECT binlog_fdw.map_table('s', 'shop.orders', conflict => 'SKIP');
SELECT binlog_fdw.map_table('s', 'shop.orders', 'shop.recent');
SELECT binlog_fdw.map_table('s', 'shop.orders', 'shop.nosuch');
SELECT binlog_fdw.map_table('s', 'shop.orders', key_columns => ARRAY['nosuch']);
SELECT binlog_fdw.map_table('s', 'shop.old_orders', 'shop.archive', ARRAY['id']);
SELECT binlog_fdw.map_table('s', 'shop.orders', key_columns => ARRAY[]::text[]);
SELECT binlog_fdw.map_table('s', 'shop.orders', key_columns => ARRAY['id', NULL]);
SELECT binlog_fdw.map_table('s', 'shop.orders', key_columns => ARRAY['id', 'id']);
SELECT binlog_fdw.map_table('s', 'shop.orders', key_columns => ARRAY[['id'], ['v']]);
SELECT binlog_fdw.map_table('nosuch', 'shop.orders');
SELECT binlog_fdw.map_table(NULL, 'shop.orders');
SELECT binlog_fdw.map_table('s', NULL);
CREATE FOREIGN DATA WRAPPER blf_other_fdw;
CREATE SERVER other FOREIGN DATA WRAPPER blf_other_fdw;
SELECT binlog_fdw.map_table('other', 'shop.orders');
-- nothing changed
SELECT source_schema, source_table, key_columns, conflict
  FROM binlog_fdw.table_mapping ORDER BY 1, 2;

-- ---------------------------------------------------------------------
-- apply(), skip_change(), snapshot(): arguments and sources not started
-- ---------------------------------------------------------------------
SELECT * FROM binlog_fdw.apply('s');
SELECT * FROM binlog_fdw.skip_change('s');
SELECT * FROM binlog_fdw.apply('nosuch');
SELECT * FROM binlog_fdw.apply('other');
SELECT * FROM binlog_fdw.apply(NULL);
SELECT * FROM binlog_fdw.apply('s', 0);
SELECT * FROM binlog_fdw.apply('s', -5);
SELECT * FROM binlog_fdw.apply('s', max_seconds => -1);
SELECT * FROM binlog_fdw.apply('s', max_seconds => 'Infinity');
SELECT * FROM binlog_fdw.apply('s', wait_seconds => 'NaN');
SELECT * FROM binlog_fdw.apply('s', wait_seconds => 100000);
-- NULL bounds are the defaults
SELECT * FROM binlog_fdw.apply('s', NULL, NULL, NULL);
SELECT * FROM binlog_fdw.get(NULL);
SELECT binlog_fdw.rollback(NULL);
SELECT * FROM binlog_fdw.skip_change(NULL);
SELECT * FROM binlog_fdw.snapshot(NULL, ARRAY['shop.orders']);
SELECT * FROM binlog_fdw.snapshot('s', NULL);
SELECT * FROM binlog_fdw.snapshot('nosuch', ARRAY['shop.orders']);
\set VERBOSITY sqlstate
-- no user mapping
SELECT binlog_fdw.sync_table('s', 'shop.orders');
CREATE USER MAPPING FOR current_user SERVER s OPTIONS (user 'repl', password 'secret');
ALTER SERVER s OPTIONS (ADD port '1', ADD connect_timeout '1');
-- nothing listens on port 1
SELECT binlog_fdw.sync_table('s', 'shop.orders');
\set VERBOSITY default

-- a started source whose MySQL is not there: nothing to apply or skip
SELECT binlog_fdw.start('s') IS NULL AS starts_at_commit;
SELECT transactions, rows, ddl, file, pos, gtid, lag_seconds, tables FROM binlog_fdw.apply('s');
SELECT transactions, rows FROM binlog_fdw.apply('s', 10, 1, 0.2);
SELECT * FROM binlog_fdw.skip_change('s');
SELECT binlog_fdw.stop('s') AS stopped;

-- ---------------------------------------------------------------------
-- Privileges: the functions are not for PUBLIC; a role granted them needs
-- USAGE on the server, and no privileges on the extension's tables
-- ---------------------------------------------------------------------
CREATE ROLE blf_applier;
GRANT USAGE ON SCHEMA binlog_fdw TO blf_applier;
SET ROLE blf_applier;
SELECT * FROM binlog_fdw.apply('s');
SELECT * FROM binlog_fdw.skip_change('s');
SELECT binlog_fdw.map_table('s', 'shop.orders');
SELECT * FROM binlog_fdw.snapshot('s', ARRAY['shop.orders']);
SELECT binlog_fdw.sync_table('s', 'shop.orders');
SELECT count(*) FROM binlog_fdw.table_mapping;
RESET ROLE;
GRANT EXECUTE ON FUNCTION binlog_fdw.apply(text, bigint, double precision, double precision),
    binlog_fdw.map_table(text, text, regclass, text[], text, boolean) TO blf_applier;
SET ROLE blf_applier;
SELECT * FROM binlog_fdw.apply('s');
SELECT binlog_fdw.map_table('s', 'shop.orders');
RESET ROLE;
GRANT USAGE ON FOREIGN SERVER s TO blf_applier;
SET ROLE blf_applier;
SELECT * FROM binlog_fdw.apply('s');
SELECT binlog_fdw.map_table('s', 'shop.orders', conflict => 'error');
SELECT count(*) FROM binlog_fdw.table_mapping;
-- only superusers and the mapped user see a mapping's password
SELECT srvname, usename = session_user AS session_users, umoptions
  FROM pg_user_mappings WHERE srvname = 's';
RESET ROLE;
SELECT source_table, key_columns, conflict FROM binlog_fdw.table_mapping
 WHERE source_table = 'orders';

-- dropping a source forgets its mappings
SET client_min_messages = warning;
DROP SERVER s CASCADE;
RESET client_min_messages;
SELECT count(*) AS mappings FROM binlog_fdw.table_mapping;

DROP SERVER other;
DROP FOREIGN DATA WRAPPER blf_other_fdw;
SET client_min_messages = warning;
DROP SCHEMA shop CASCADE;
RESET client_min_messages;
REVOKE USAGE ON SCHEMA binlog_fdw FROM blf_applier;
DROP EXTENSION binlog_fdw;
DROP SCHEMA IF EXISTS binlog_fdw;
DROP ROLE blf_applier;
