--
-- binlog_fdw.read_binlog(): binlog files decoded on the server.
--
-- Reads ../shared/binlog-samples (BLF_SAMPLES) and the binlogs of
-- test/regress/workload.sql on a fresh MariaDB (BLF_REGRESS_BINLOGS);
-- test/suites/20-regress.sh sets both.  Without them this test fails.
--
\getenv samples BLF_SAMPLES
\getenv binlogs BLF_REGRESS_BINLOGS
\set rust :samples '/rust_mysql_common/test-data/binlogs'
CREATE EXTENSION binlog_fdw;

-- reading server files needs pg_read_server_files, like pg_read_file()
CREATE ROLE blf_reader;
GRANT USAGE ON SCHEMA binlog_fdw TO blf_reader;
SET ROLE blf_reader;
SELECT count(*) FROM binlog_fdw.read_binlog(:'rust' || '/json.binlog.000001');
RESET ROLE;
GRANT EXECUTE ON FUNCTION binlog_fdw.read_binlog(text, boolean) TO blf_reader;
SET ROLE blf_reader;
SELECT count(*) FROM binlog_fdw.read_binlog(:'rust' || '/json.binlog.000001');
RESET ROLE;
GRANT pg_read_server_files TO blf_reader;
SET ROLE blf_reader;
SELECT count(*) FROM binlog_fdw.read_binlog(:'rust' || '/json.binlog.000001');
RESET ROLE;

-- MySQL 8.0 binary JSON, an update, and a partial JSON update
SELECT pos, event_type, op, row_index, before, after
  FROM binlog_fdw.read_binlog(:'rust' || '/json.binlog.000001')
 WHERE op IS NOT NULL AND (row_index = 1 OR event_type = 'WRITE_ROWS_V2')
 ORDER BY pos, row_index;

-- every event is there, once
SELECT event_type, count(*)
  FROM binlog_fdw.read_binlog(:'rust' || '/json.binlog.000001')
 WHERE op IS NULL OR row_index = 1
 GROUP BY 1 ORDER BY 1;

-- zstd-compressed transactions (MySQL 8.0.28 and 8.0.32)
SELECT event_type, info->>'in_payload' AS in_payload, schema_name, table_name, op, after
  FROM binlog_fdw.read_binlog(:'rust' || '/transaction_compression.000001')
 WHERE event_type NOT IN ('FORMAT_DESCRIPTION', 'ROTATE');
SELECT op, before->>'@2' AS title_before, after->>'@2' AS title_after,
       (SELECT count(*) FROM jsonb_object_keys(after)) AS ncols
  FROM binlog_fdw.read_binlog(:'samples' || '/mysql-binlog-connector-java/src/test/resources/mysql-bin.compressed')
 WHERE op IS NOT NULL;

-- tagged GTIDs (MySQL 9.6) and the GTID set that opens the file
SELECT event_type, gtid, info->>'gtid_set' AS gtid_set, after
  FROM binlog_fdw.read_binlog(:'rust' || '/binlog_transaction_with_GTID_TAG.000001')
 WHERE event_type IN ('PREVIOUS_GTIDS', 'GTID_TAGGED', 'WRITE_ROWS_V2');

-- ENUM / SET strings, BIT, TIME2, VECTOR
SELECT op, after->>'f3' AS f3, after->'f4' AS f4, before->>'f3' AS before_f3
  FROM binlog_fdw.read_binlog(:'rust' || '/mysql-enum-string-set.000001')
 WHERE op IS NOT NULL;
SELECT after FROM binlog_fdw.read_binlog(:'rust' || '/mysql_type_bit.000001') WHERE op IS NOT NULL;
SELECT after FROM binlog_fdw.read_binlog(:'rust' || '/time_issue.000001') WHERE op IS NOT NULL;
SELECT table_name, after FROM binlog_fdw.read_binlog(:'rust' || '/vector.binlog')
 WHERE op = 'insert' ORDER BY pos, row_index LIMIT 2;

-- MariaDB: GTID, GTID list, checkpoint, annotate, FULL metadata names
SELECT event_type, gtid, info->>'gtid_set' AS gtid_set, info->>'checkpoint_file' AS checkpoint,
       query, after
  FROM binlog_fdw.read_binlog(:'rust' || '/mariadb-bin.000001')
 WHERE event_type <> 'FORMAT_DESCRIPTION' AND event_type <> 'TABLE_MAP'
 ORDER BY pos LIMIT 6;

-- following ROTATE across files: 000004 -> 000005 -> 000006 -> 000007, then
-- 000008 is missing while 000009 exists: files are missing from the series,
-- an error (it used to stop there without a word)
SELECT file, count(*) AS events, min(gtid) AS first_gtid
  FROM binlog_fdw.read_binlog(:'samples' || '/mariadb-poc/mariadb-binlog/binlogs/domain_id_0/mariadb-repl-bin.000004', true)
 GROUP BY file ORDER BY file;

-- broken files: clear errors, no crash
\set VERBOSITY terse
SELECT count(*) FROM binlog_fdw.read_binlog(:'rust' || '/binlog_truncated_event.000001');
SELECT count(*) FROM binlog_fdw.read_binlog(:'rust' || '/corrupt-relay-bin.000624');
SELECT count(*) FROM binlog_fdw.read_binlog(:'rust' || '/ver_5_1-wl2325_r.001');
DO $$
BEGIN
    PERFORM binlog_fdw.read_binlog('no/such/file');
EXCEPTION WHEN undefined_file THEN
    RAISE NOTICE 'missing file: %', SQLSTATE;
END $$;
DO $$
BEGIN
    PERFORM binlog_fdw.read_binlog('PG_VERSION');
EXCEPTION WHEN data_corrupted THEN
    RAISE NOTICE 'not a binlog: %', SQLSTATE;
END $$;
\set VERBOSITY default

-- a MariaDB 10.11 binlog written by test/regress/workload.sql: every type
SELECT file, op, row_index, gtid, after
  FROM binlog_fdw.read_binlog(:'binlogs' || '/mysql-bin.000001', true)
 WHERE op = 'insert' ORDER BY file, pos, row_index;
SELECT op, before->>'status' AS status_before, after->>'status' AS status_after,
       before->'amount' AS amount_before, after->'amount' AS amount_after,
       after->'tags' AS tags_after
  FROM binlog_fdw.read_binlog(:'binlogs' || '/mysql-bin.000001')
 WHERE op = 'update';
SELECT op, before->>'id' AS id FROM binlog_fdw.read_binlog(:'binlogs' || '/mysql-bin.000001') WHERE op = 'delete';
-- the rolled-back insert never reached the binlog
SELECT count(*) FROM binlog_fdw.read_binlog(:'binlogs' || '/mysql-bin.000001', true)
 WHERE after->>'customer' = 'rolled back';
-- values keep their types in jsonb
SELECT jsonb_typeof(after->'id') AS id, jsonb_typeof(after->'amount') AS amount,
       jsonb_typeof(after->'tags') AS tags, jsonb_typeof(after->'flags') AS flags,
       (after->>'amount')::numeric AS amount_value, (after->>'raw')::bytea AS raw_bytes,
       (after->>'paid')::timestamptz AT TIME ZONE 'UTC' AS paid_utc
  FROM binlog_fdw.read_binlog(:'binlogs' || '/mysql-bin.000001')
 WHERE op = 'insert' AND row_index = 1;

-- following ROTATE to the missing successor of the last file of a series
-- (mariadb-poc's domain_id_1 has 000001-000002): a NOTICE, and the rows;
-- without following (domain_id_0's 000004 alone), no word
\set poc :samples '/mariadb-poc/mariadb-binlog/binlogs'
SELECT file, count(*) FROM binlog_fdw.read_binlog(:'poc' || '/domain_id_1/mariadb-repl-bin.000002', true)
 GROUP BY 1 ORDER BY 1;
SELECT file, count(*) FROM binlog_fdw.read_binlog(:'poc' || '/domain_id_0/mariadb-repl-bin.000004')
 GROUP BY 1 ORDER BY 1;

REVOKE USAGE ON SCHEMA binlog_fdw FROM blf_reader;
DROP EXTENSION binlog_fdw;
DROP SCHEMA binlog_fdw;
DROP ROLE blf_reader;
