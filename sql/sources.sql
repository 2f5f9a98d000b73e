--
-- Sources: foreign servers of the binlog_fdw wrapper, their options, user
-- mappings and foreign tables, and the SQL functions on sources that are not
-- streaming.  No MariaDB is needed: the one source that is started points at
-- a closed port (its worker keeps trying to connect until it is stopped).
--
CREATE EXTENSION binlog_fdw;

-- ---------------------------------------------------------------------
-- Unknown options: an error listing the valid ones of the context
-- ---------------------------------------------------------------------
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (hostname '127.0.0.1');
-- a user mapping option on a server
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (user 'repl');
ALTER FOREIGN DATA WRAPPER binlog_fdw OPTIONS (ADD debug 'on');

-- ---------------------------------------------------------------------
-- Bad values: an error with the expected form
-- ---------------------------------------------------------------------
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (port '0');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (port '70000');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (port 'abc');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (port '');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (port '3306x');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (server_id '0');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (server_id '4294967296');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (server_id '-1');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (start 'nonsense');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (start 'file:3');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (start 'mysql-bin.000001:');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (start 'mysql-bin.000001:x4');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (start ':4');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (start '../mysql-bin.000001:4');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (start 'gtid:');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (start 'gtid:0-1');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (start 'gtid:0-1-x');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (start 'gtid:0-1-5,');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (start 'gtid:--,');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (start 'time:not a time');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (start 'gtid:3e11fa47-71ca-11e1-9e33-c80aa9429562:0');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (start 'gtid:3e11fa47-71ca-11e1-9e33:1-5');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (start 'gtid:3e11fa47-71ca-11e1-9e33-c80aa9429562:5-3');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (include '(');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (exclude '^shop\.[a');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (heartbeat '0');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (heartbeat '0.05');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (heartbeat '3601');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (heartbeat 'often');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (heartbeat 'nan');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (connect_timeout '0');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (ssl_mode 'maybe');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (ssl_mode 'REQUIRED');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (host '');
-- host lists: host[:port],... (IPv6 with a port in brackets)
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (host 'db1,');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (host 'db1,,db2');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (host ' , db2');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (host 'db1:0');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (host 'db1:65536');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (host 'db1:33x6');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (host 'db1:');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (host ':3306');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (host 'db 1');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (host 'db1/x:3306');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (host '[::1');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (host '[::1]3307');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (host '[db1]:3307');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (host 'db1,DB1');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (host 'db1:3307,db2,db1:3307');
-- the same server twice once the port option is applied
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (host 'db1:3307,db1', port '3307');
CREATE SERVER bad FOREIGN DATA WRAPPER binlog_fdw OPTIONS (host 'a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q');
SELECT count(*) AS bad_servers FROM pg_foreign_server WHERE srvname = 'bad';

-- ---------------------------------------------------------------------
-- Good values
-- ---------------------------------------------------------------------
CREATE SERVER s FOREIGN DATA WRAPPER binlog_fdw OPTIONS (
    host 'db1.example.com', port '3306', server_id '4294967295',
    start 'mysql-bin.000001:4', include '^shop\.(orders|customers)$',
    exclude '^shop\.tmp_', heartbeat '0.5', connect_timeout '10',
    ssl_mode 'verify-full', ssl_ca '/etc/ssl/ca.pem', ssl_cert '/etc/ssl/c.pem',
    ssl_key '/etc/ssl/c.key');
ALTER SERVER s OPTIONS (SET start 'current');
ALTER SERVER s OPTIONS (SET start 'earliest');
ALTER SERVER s OPTIONS (SET start 'gtid:0-1-5');
ALTER SERVER s OPTIONS (SET start 'gtid:0-1-5,1-2-300');
ALTER SERVER s OPTIONS (SET start 'time:2026-11-30 12:00:00+00');
ALTER SERVER s OPTIONS (SET start 'gtid:3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:7,5d8f2a10-0000-4000-8000-00000000ab12:tag_a:1-3');
ALTER SERVER s OPTIONS (SET ssl_mode 'disable');
ALTER SERVER s OPTIONS (SET ssl_mode 'prefer');
ALTER SERVER s OPTIONS (SET ssl_mode 'require');
ALTER SERVER s OPTIONS (SET ssl_mode 'verify-ca');
ALTER SERVER s OPTIONS (SET port '65535', SET server_id '1', SET heartbeat '3600');
ALTER SERVER s OPTIONS (SET host 'db1.example.com:3307, db2.example.com,10.0.0.3:3308');
ALTER SERVER s OPTIONS (SET host '::1');
ALTER SERVER s OPTIONS (SET host '[::1]:3307,[fe80::1%eth0],db_2');
ALTER SERVER s OPTIONS (SET host 'db1:3306,db1:3307');
-- a list that repeats a server once the port changes
ALTER SERVER s OPTIONS (SET host 'db1:3307,db1');
ALTER SERVER s OPTIONS (SET port '3307');
ALTER SERVER s OPTIONS (SET host 'db1.example.com');
-- and the checks apply to ALTER too
ALTER SERVER s OPTIONS (ADD bogus 'x');
ALTER SERVER s OPTIONS (SET port '0');
ALTER SERVER s OPTIONS (SET include '[');
SELECT unnest(srvoptions) AS option FROM pg_foreign_server WHERE srvname = 's';

-- ---------------------------------------------------------------------
-- User mappings: user and password
-- ---------------------------------------------------------------------
CREATE USER MAPPING FOR current_user SERVER s OPTIONS (username 'repl');
CREATE USER MAPPING FOR current_user SERVER s OPTIONS (user 'repl', host 'x');
CREATE USER MAPPING FOR current_user SERVER s OPTIONS (user '');
CREATE USER MAPPING FOR current_user SERVER s OPTIONS (user 'repl', password 'secret');
ALTER USER MAPPING FOR current_user SERVER s OPTIONS (ADD port '3306');

-- ---------------------------------------------------------------------
-- Foreign tables: options of imported (typed) tables only; columns are matched by name when queried
-- ---------------------------------------------------------------------
CREATE FOREIGN TABLE ft_opt (seq bigint) SERVER s OPTIONS (dbname 'orders');
CREATE FOREIGN TABLE ft_bad (seq bigint, op text, bogus text) SERVER s;
ALTER FOREIGN TABLE ft_bad ALTER COLUMN op OPTIONS (ADD colname 'x');
SELECT * FROM ft_bad;
EXPLAIN (COSTS OFF) SELECT seq FROM ft_bad;
DROP FOREIGN TABLE ft_bad;
CREATE FOREIGN TABLE changes (seq bigint, op text, schema_name text,
    table_name text, before jsonb, after jsonb) SERVER s;
-- conditions the ring scan checks itself
EXPLAIN (COSTS OFF)
SELECT seq, op FROM changes WHERE table_name = 'orders' AND op = 'insert' AND seq > 10;
EXPLAIN (COSTS OFF)
SELECT seq FROM changes WHERE schema_name = 'shop' AND seq >= 7 AND after ? 'id';
-- the source is not started
SELECT * FROM changes;

-- ---------------------------------------------------------------------
-- A source that is not started: get/ack/rollback say so, with a hint
-- ---------------------------------------------------------------------
SELECT * FROM binlog_fdw.get('s');
SELECT * FROM binlog_fdw.get('s', 10, 100);
SELECT * FROM binlog_fdw.get_json('s');
SELECT * FROM binlog_fdw.get_jsonl('s');
SELECT binlog_fdw.ack('s', 1);
SELECT binlog_fdw.rollback('s');
SELECT binlog_fdw.rollback('s', 1);
SELECT binlog_fdw.stop('s') AS stopped_something;
SELECT binlog_fdw.reset('s');
SELECT count(*) AS started_sources FROM binlog_fdw.status;

-- unknown servers
SELECT * FROM binlog_fdw.get('nosuch');
SELECT binlog_fdw.start('nosuch');

-- ---------------------------------------------------------------------
-- A server of another wrapper is refused
-- ---------------------------------------------------------------------
CREATE FOREIGN DATA WRAPPER blf_other_fdw;
CREATE SERVER other FOREIGN DATA WRAPPER blf_other_fdw;
SELECT binlog_fdw.start('other');
SELECT binlog_fdw.stop('other');
SELECT binlog_fdw.reset('other');
SELECT * FROM binlog_fdw.get('other');
SELECT binlog_fdw.ack('other', 1);
SELECT binlog_fdw.rollback('other');

-- ---------------------------------------------------------------------
-- start() needs a user mapping with a user
-- ---------------------------------------------------------------------
CREATE SERVER nomap FOREIGN DATA WRAPPER binlog_fdw OPTIONS (port '1');
\set VERBOSITY sqlstate
SELECT binlog_fdw.start('nomap');
\set VERBOSITY default
CREATE USER MAPPING FOR current_user SERVER nomap OPTIONS (password 'x');
SELECT binlog_fdw.start('nomap');
SELECT count(*) AS started_sources FROM binlog_fdw.status;

-- ---------------------------------------------------------------------
-- A started source whose MariaDB is not there (port 1): the consumer
-- functions work on it; an unknown batch id is an error
-- ---------------------------------------------------------------------
CREATE SERVER down FOREIGN DATA WRAPPER binlog_fdw
    OPTIONS (host '127.0.0.1', port '1', server_id '9002', connect_timeout '1');
CREATE USER MAPPING FOR current_user SERVER down OPTIONS (user 'repl', password 'repl');
CREATE FOREIGN TABLE down_changes (seq bigint, op text, after jsonb) SERVER down;
-- start() takes effect at commit: no worker pid yet
SELECT binlog_fdw.start('down') IS NULL AS starts_at_commit;
SELECT 1 AS started_again FROM binlog_fdw.start('down');
SELECT server, state <> 'stopped' AS running, changes_total, changes_unacked,
       ring_bytes_used, ring_entries, batches_out, acked_seq
  FROM binlog_fdw.status;
SELECT count(*) AS changes FROM binlog_fdw.get('down', 10, 0);
SELECT count(*) AS changes FROM binlog_fdw.get('down', 10, 50);
SELECT * FROM binlog_fdw.get('down', 0);
SELECT count(*) AS changes FROM binlog_fdw.get_json('down', 10, 50);
SELECT * FROM binlog_fdw.get_json('down', 0);
SELECT count(*) AS batches FROM binlog_fdw.get_jsonl('down', 10, 50);
SELECT * FROM binlog_fdw.get_jsonl('down', 0);
-- the limit of a get_jsonl() batch's text: a size, 1 kB to 512 MB
SHOW binlog_fdw.jsonl_max_bytes;
SET binlog_fdw.jsonl_max_bytes = '0';
SET binlog_fdw.jsonl_max_bytes = '1GB';
SET binlog_fdw.jsonl_max_bytes = '64kB';
SHOW binlog_fdw.jsonl_max_bytes;
RESET binlog_fdw.jsonl_max_bytes;
-- the freed memory a consumer keeps between gets: a size, 0 to 1 GB (0:
-- glibc's defaults); a get after each change applies it
SHOW binlog_fdw.consumer_keep_memory;
SET binlog_fdw.consumer_keep_memory = '-1';
SET binlog_fdw.consumer_keep_memory = '2GB';
SET binlog_fdw.consumer_keep_memory = 0;
SHOW binlog_fdw.consumer_keep_memory;
SELECT count(*) AS changes FROM binlog_fdw.get_json('down', 10, 10);
SET binlog_fdw.consumer_keep_memory = '1GB';
SHOW binlog_fdw.consumer_keep_memory;
SELECT count(*) AS changes FROM binlog_fdw.get('down', 10, 10);
RESET binlog_fdw.consumer_keep_memory;
SELECT count(*) AS peeked FROM down_changes;
SELECT binlog_fdw.ack('down', 12345);
SELECT binlog_fdw.rollback('down') AS batches_rolled_back;
SELECT binlog_fdw.rollback('down', 12345);
SELECT binlog_fdw.reset('down');
SELECT binlog_fdw.stop('down') AS stopped;
SELECT count(*) AS started_sources FROM binlog_fdw.status;
SELECT binlog_fdw.stop('down') AS stopped_again;
SELECT * FROM binlog_fdw.get('down');
SELECT binlog_fdw.reset('down');
SELECT count(*) AS positions FROM binlog_fdw.source_state;

-- a host list of servers that are all down: the worker tries each in
-- turn; status shows the host tried and the error names it
CREATE SERVER downlist FOREIGN DATA WRAPPER binlog_fdw
    OPTIONS (host '127.0.0.1:1,127.0.0.1:2', server_id '9004', connect_timeout '1');
CREATE USER MAPPING FOR current_user SERVER downlist OPTIONS (user 'repl', password 'repl');
SELECT binlog_fdw.start('downlist') IS NULL AS starts_at_commit;
DO $$
BEGIN
  FOR i IN 1..100 LOOP
    PERFORM 1 FROM binlog_fdw.status
      WHERE server = 'downlist' AND last_error LIKE '%127.0.0.1:2%';
    EXIT WHEN FOUND;
    PERFORM pg_sleep(0.1);
  END LOOP;
END $$;
SELECT source_host IN ('127.0.0.1:1', '127.0.0.1:2') AS host_shown,
       last_error ~ '^source "downlist", host 127\.0\.0\.1:([12]): could not connect to 127\.0\.0\.1:\1 ' AS error_names_host
  FROM binlog_fdw.status WHERE server = 'downlist';
SELECT binlog_fdw.stop('downlist') AS stopped;
SELECT binlog_fdw.reset('downlist');
SET client_min_messages = warning;
DROP SERVER downlist CASCADE;
RESET client_min_messages;

-- dropping the server of a running source stops it and forgets its
-- position and table mappings (a new server of that name starts afresh)
SELECT binlog_fdw.start('down') IS NULL AS starts_at_commit;
SELECT binlog_fdw.map_table('down', 'shop.orders', NULL, NULL, 'skip');
SELECT count(*) AS positions FROM binlog_fdw.source_state;
SELECT count(*) AS mappings FROM binlog_fdw.table_mapping;
SET client_min_messages = warning;
DROP SERVER down CASCADE;
RESET client_min_messages;
SELECT server FROM binlog_fdw.status;
SELECT count(*) AS positions FROM binlog_fdw.source_state;
SELECT count(*) AS mappings FROM binlog_fdw.table_mapping;
SELECT * FROM binlog_fdw.get('down');
SELECT binlog_fdw.stop('down') AS stopped;
-- a DROP SERVER rolled back: the server stays, and so does its source
CREATE SERVER down2 FOREIGN DATA WRAPPER binlog_fdw
    OPTIONS (host '127.0.0.1', port '1', server_id '9003', connect_timeout '1');
CREATE USER MAPPING FOR current_user SERVER down2 OPTIONS (user 'repl', password 'repl');
SELECT binlog_fdw.start('down2') IS NULL AS starts_at_commit;
BEGIN;
DROP SERVER down2 CASCADE;
ROLLBACK;
SELECT srvname FROM pg_foreign_server WHERE srvname = 'down2';
SELECT count(*) AS started_sources FROM binlog_fdw.status;
SELECT count(*) AS started_rows FROM binlog_fdw.started_sources;
SELECT 1 AS started_again FROM binlog_fdw.start('down2');
SELECT binlog_fdw.stop('down2') AS stopped;
DROP SERVER down2 CASCADE;

-- ---------------------------------------------------------------------
-- The functions are not for PUBLIC
-- ---------------------------------------------------------------------
CREATE ROLE blf_nobody;
GRANT USAGE ON SCHEMA binlog_fdw TO blf_nobody;
SET ROLE blf_nobody;
SELECT * FROM binlog_fdw.get('s');
SELECT * FROM binlog_fdw.get_json('s');
SELECT * FROM binlog_fdw.get_jsonl('s');
SELECT binlog_fdw.start('s');
SELECT * FROM binlog_fdw.status;
SELECT * FROM binlog_fdw.source_state;
RESET ROLE;

REVOKE USAGE ON SCHEMA binlog_fdw FROM blf_nobody;
DROP ROLE blf_nobody;
DROP SERVER other;
DROP FOREIGN DATA WRAPPER blf_other_fdw;
SET client_min_messages = warning;
DROP EXTENSION binlog_fdw CASCADE;
DROP SCHEMA IF EXISTS binlog_fdw;
RESET client_min_messages;
