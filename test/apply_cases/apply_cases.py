#!/usr/bin/python3
"""
test/apply_cases/apply_cases.py -- live tests of binlog_fdw's apply surface
(SPEC section 6 and 7, issue #4): MariaDB main -> sources on PostgreSQL
main -> snapshot() / apply() into PostgreSQL tables.  Run by
test/suites/85-apply-cases.sh; prints "ok - apply/NAME" or "not ok -
apply/NAME: reason" per case (test/run.sh's protocol).

Cases:
  types            every MariaDB column type: snapshot() creates the table
                   (column types as the README's type mapping says), inserts,
                   updates and deletes are applied; PostgreSQL equals MariaDB
                   value by value; a NUL in text is a clear error
  type-options     tinyint1_boolean, zero_date null / -infinity / error,
                   time_type interval / time, schema_map
  hostile-names    a database, table and columns named with quotes,
                   semicolons, spaces and backquotes: snapshot, rows, DDL;
                   PostgreSQL table y still exists
  keys             primary key, a unique key chosen with map_table(key_columns),
                   keyless: an error with a hint, or keyless 'full_row'
                   (identical rows: one delete removes one)
  conflicts        error | skip | overwrite per source and per table: missing
                   row on update/delete, existing key on insert; the error
                   names the table, the key and the binlog position
  conflict-log     every conflict kind under each policy in binlog_fdw.conflicts
                   (key, images, position, GTID, policy, resolution); the one
                   stopping apply shown with its skip_change() call, written
                   when skipped or passed; a rolled-back apply() leaves none
  mapping          db.table -> schema.table, schema_map, map_table() target,
                   unmapped 'error' / 'skip', map_table(skip)
  partitions       range and hash partitioned targets: rows moving between
                   partitions, a partition with another column order,
                   conflicts into partitions
  ddl              CREATE/DROP/RENAME/TRUNCATE TABLE, ALTER TABLE ADD/DROP/
                   MODIFY/CHANGE/RENAME COLUMN in order with the rows around
                   them; DDL that is not understood stops apply with the
                   statement and position; skip_change() after a fix
  security         apply() with the caller's privileges, EXECUTE revoked from
                   PUBLIC, passwords hidden in pg_user_mappings
  transactions     multi-table transactions never half visible to a
                   concurrent reader; apply(max_changes) stops at transaction
                   boundaries; a transaction larger than a batch applies whole
  triggers         AFTER ROW / STATEMENT and deferred constraint triggers, a
                   foreign key, generated columns; session_replication_role
                   origin and replica for apply(), replica in the continuous
                   worker (cases_triggers.py)
  error-status     ack()/rollback() of an unknown id name it as given;
                   last_error / apply_error stay shown after recovery, with
                   last_error_cleared / apply_error_cleared (cases_status.py)
  row-image-minimal, row-image-noblob
                   partial row images on throwaway MariaDB instances:
                   defaults, updates of some columns, keys, BLOB/TEXT columns,
                   through apply() and continuous mode (cases_images.py)
  schema-history-minimal, schema-history-nolog, schema-history-full
                   binlog_row_metadata MINIMAL / NO_LOG (throwaway instances):
                   a backlog across MODIFY ... AFTER, DROP + ADD, RENAME
                   COLUMN lands in the right columns, also across a restart
                   mid-history and from 'earliest'; a start before the DDL is
                   refused; FULL: the event's names checked against the
                   history (cases_history.py)
  schema-history-prune
                   binlog_fdw.schema_history_retention: superseded rows
                   deleted at a table's next DDL, the latest kept and used
                   after a restart; -1 keeps all (cases_history.py)
  geometry-bytea, geometry-postgis
                   GEOMETRY columns as EWKB bytea, and as PostGIS geometry
                   when the extension is in the target database
                   (cases_geometry.py)
  sync-running     sync_table() and snapshot() of tables whose changes are in
                   the ring and not applied yet (keyed and keyless, after a
                   partial apply): every table equals MariaDB's, no duplicate
  sync-continuous  sync_table() and snapshot(truncate) again and again while
                   the continuous apply worker applies a writer's changes
  snapshot-gtid    the GTID state snapshot() records is the one at its
                   position while a writer commits
  load-chunked     CALL load() in chunks while a writer moves rows between
                   chunks and the continuous worker applies; the loader's
                   MySQL connection killed, the loading backend killed -9;
                   called again it goes on at the next chunk; tables equal
                   MariaDB's (cases_load.py)
  load-table-locks load() with snapshot_lock 'tables' (MySQL's protocol:
                   LOCK TABLES of the chunk's table on a second connection
                   around the snapshot's start) while writers commit
                   two-table transactions; tables equal MariaDB's
  load-finish      secondary indexes built after the copy (snapshot(), load()
                   in chunks: the non-unique ones), those without a
                   PostgreSQL form named, ANALYZE; load_status's rows
  load-progress    sync_progress while a copy is held mid-way and while it
                   analyzes: phase, rows, rows/s, ETA (cases_finish.py)
  load-parallel    CALL load(parallel => 3) of four tables under a writer:
                   loaders overlap, the tables equal MariaDB's; a background
                   loader's error is the caller's (cases_parallel.py)
  load-ranges      CALL load(parallel => 3) of one table of 50000 rows: three
                   loaders copy chunks of its key ranges at once under a
                   writer moving keys across the ranges and the continuous
                   worker; a loader killed -9, load() again goes on at each
                   range's next chunk; equal to MariaDB's (cases_parallel.py)
  load-ranges-tuple the same for a key of two integer columns: ranges bounded
                   by whole (a, b) keys MariaDB picks by rows (cases_parallel.py)
  load-ranges-resplit keys crowding one range: the loaders done split the rest
                   of it again, a loader killed -9, load() again; equal to
                   MariaDB's (cases_parallel.py)
  load-ranges-text a VARCHAR key of a case-insensitive collation with
                   parallel => 3: one pass (not split), equal to MariaDB's
                   byte for byte under a writer changing keys' case and
                   trailing spaces (cases_parallel.py)
  filters          binlog_fdw.set_filter(): column lists, masks (value, NULL,
                   SHA-256), operation filters, per source and per table, a
                   row filter with updates moving rows into and out of it;
                   get()'s images; a missing column named (apply() and the
                   worker); filter_history's positions; a changed set
                   refused mid-transaction; a copy of a filtered table
                   equal to what the stream gave (cases_filters.py)
  filters-copy     snapshot() and load() in chunks of tables with masks, an
                   excluded column and a row filter, then followed: equal
                   to what the filter gives of MariaDB's rows, each copied
                   row masked as the stream masks it (cases_filters_copy.py)
  retention        the source's binlog retention in status against the acked
                   position: oldest file, files kept before it, expiry; the
                   WARNINGs when it is next to go and when it is gone
                   (cases_retention.py)
  lost-position-reload
                   lost_position 'reload': the acked binlog purged while the
                   source was stopped; its tables are copied again online in
                   chunks while MariaDB writes; the reloader terminated
                   mid-table goes on at the next chunk; equal to MariaDB's
                   (cases_retention.py)
  history-tables   map_history(): apply() writes every change into a history
                   table (row versions, valid_from/valid_to, op, GTID, binlog
                   position), equal to MariaDB's change sequence; "row 42 at
                   time T" in one SELECT equals MariaDB at T; a rolled-back
                   apply() writes none (cases_history_tables.py)
  history-kill     continuous mode under a writer, the apply worker killed -9
                   and PostgreSQL stopped immediate mid-stream: each change in
                   the history exactly once (cases_history_tables.py)

Environment (besides scripts/env.sh's and PG*): BLF_APPLY_CASES (a comma-
separated subset), BLF_APPLY_KEEP=1 (leave databases and sources).
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import psycopg2                                     # noqa: E402

import cases_conflicts                              # noqa: E402
import cases_filters                                # noqa: E402
import cases_filters_copy                           # noqa: E402
import cases_ddl                                    # noqa: E402
import cases_finish                                 # noqa: E402
import cases_geometry                               # noqa: E402
import cases_history                                # noqa: E402
import cases_history_tables                         # noqa: E402
import cases_images                                 # noqa: E402
import cases_keys                                   # noqa: E402
import cases_load                                   # noqa: E402
import cases_parallel                               # noqa: E402
import cases_retention                              # noqa: E402
import cases_security                               # noqa: E402
import cases_status                                 # noqa: E402
import cases_triggers                               # noqa: E402
import apply_types                                  # noqa: E402
from harness import (KEEP, MDB_PREFIX, PGDB, Runner, drop_database, log, mdb, mx, pg, q, q1, short)  # noqa: E402


def cleanup(conn_pg_admin, m):
    """Drop what an earlier run left: sources, the database, MariaDB dbs."""
    if q1(conn_pg_admin, 'SELECT count(*) FROM pg_database WHERE datname = %s', (PGDB,)):
        try:
            d = pg()
            if q1(d, "SELECT count(*) FROM pg_extension WHERE extname = 'binlog_fdw'"):
                for (name,) in q(d, 'SELECT server FROM binlog_fdw.status'):
                    q(d, 'SELECT binlog_fdw.stop(%s)', (name,))
            d.close()
        except psycopg2.Error as e:
            log('cleanup: %s' % str(e).strip())
        drop_database(conn_pg_admin, PGDB)     # once the stopped workers are gone
    q(conn_pg_admin, 'DROP DATABASE IF EXISTS %s WITH (FORCE)' % cases_geometry.GIS_DB)
    for role in ('blf_ac_writer', 'blf_ac_nopriv', 'blf_ac_plain'):
        if q1(conn_pg_admin, 'SELECT count(*) FROM pg_roles WHERE rolname = %s', (role,)):
            q(conn_pg_admin, 'DROP ROLE %s' % role)
    for (db,) in mx(m, "SHOW DATABASES LIKE '%s%%'" % MDB_PREFIX):
        mx(m, 'DROP DATABASE `%s`' % db.replace('`', '``'))


def main():
    t0 = time.monotonic()
    wanted = [x for x in os.environ.get('BLF_APPLY_CASES', '').split(',') if x]
    try:
        admin = pg(db='postgres')
        m = mdb()
        cleanup(admin, m)
        q(admin, 'CREATE DATABASE %s' % PGDB)
        conn_box = [pg()]
        q(conn_box[0], 'CREATE EXTENSION binlog_fdw')
    except Exception as e:                          # noqa: BLE001
        print('not ok - apply/setup: %s: %s' % (type(e).__name__, short(str(e).strip(), 500)))
        return 1
    runner = Runner(conn_box)
    cases = [
        ('types', lambda: apply_types.case_types(conn_box[0], m)),
        ('type-options', lambda: apply_types.case_type_options(conn_box[0], m)),
        ('hostile-names', lambda: cases_ddl.case_hostile(conn_box[0], m)),
        ('keys', lambda: cases_keys.case_keys(conn_box[0], m)),
        ('conflicts', lambda: cases_keys.case_conflicts(conn_box[0], m)),
        ('conflict-log', lambda: cases_conflicts.case_conflict_log(conn_box[0], m)),
        ('mapping', lambda: cases_keys.case_mapping(conn_box[0], m)),
        ('partitions', lambda: cases_keys.case_partitions(conn_box[0], m)),
        ('insert-rotation', lambda: cases_keys.case_insert_rotation(conn_box[0], m)),
        ('compressed-columns', lambda: cases_keys.case_compressed_columns(conn_box[0], m)),
        ('ddl', lambda: cases_ddl.case_ddl(conn_box[0], m)),
        ('snapshot-ddl-race', lambda: cases_ddl.case_snapshot_ddl_race(conn_box[0], m)),
        ('statement-format', lambda: cases_ddl.case_statement_format(conn_box[0], m)),
        ('xa', lambda: cases_ddl.case_xa(conn_box[0], m)),
        ('fk-actions', lambda: cases_ddl.case_fk_actions(conn_box[0], m)),
        ('security', lambda: cases_security.case_security(conn_box[0], m)),
        ('transactions', lambda: cases_security.case_transactions(conn_box[0], m)),
        ('savepoints', lambda: cases_security.case_savepoints(conn_box[0], m)),
        ('triggers', lambda: cases_triggers.case_triggers(conn_box[0], m)),
        ('error-status', lambda: cases_status.case_error_status(conn_box[0], m)),
        ('row-image-minimal', lambda: cases_images.case_minimal(conn_box[0], m)),
        ('row-image-noblob', lambda: cases_images.case_noblob(conn_box[0], m)),
        ('geometry-bytea', lambda: cases_geometry.case_geometry_bytea(conn_box[0], m)),
        ('schema-history-minimal', lambda: cases_history.case_minimal(conn_box[0], m)),
        ('schema-history-nolog', lambda: cases_history.case_nolog(conn_box[0], m)),
        ('schema-history-full', lambda: cases_history.case_full(conn_box[0], m)),
        ('schema-history-prune', lambda: cases_history.case_prune(conn_box[0], m)),
        ('geometry-postgis', lambda: cases_geometry.case_geometry_postgis(conn_box[0], m)),
        ('sync-running', lambda: cases_load.case_sync_running(conn_box[0], m)),
        ('sync-continuous', lambda: cases_load.case_sync_continuous(conn_box[0], m)),
        ('snapshot-gtid', lambda: cases_load.case_snapshot_gtid(conn_box[0], m)),
        ('load-chunked', lambda: cases_load.case_load_chunked(conn_box[0], m)),
        ('load-table-locks', lambda: cases_load.case_load_table_locks(conn_box[0], m)),
        ('load-finish', lambda: cases_finish.case_load_finish(conn_box[0], m)),
        ('load-progress', lambda: cases_finish.case_load_progress(conn_box[0], m)),
        ('retention', lambda: cases_retention.case_retention(conn_box[0], m)),
        ('lost-position-reload', lambda: cases_retention.case_lost_position_reload(conn_box[0], m)),
        ('load-parallel', lambda: cases_parallel.case_load_parallel(conn_box[0], m)),
        ('load-ranges', lambda: cases_parallel.case_load_ranges(conn_box[0], m)),
        ('load-ranges-tuple', lambda: cases_parallel.case_load_ranges_tuple(conn_box[0], m)),
        ('load-ranges-resplit', lambda: cases_parallel.case_load_ranges_resplit(conn_box[0], m)),
        ('load-ranges-text', lambda: cases_parallel.case_load_ranges_text(conn_box[0], m)),
        ('history-tables', lambda: cases_history_tables.case_history_tables(conn_box[0], m)),
        ('history-kill', lambda: cases_history_tables.case_history_kill(conn_box[0], m)),
        ('filters', lambda: cases_filters.case_filters(conn_box[0], m)),
        ('filters-copy', lambda: cases_filters_copy.case_filters_copy(conn_box[0], m)),
    ]
    for name, fn in cases:
        if wanted and name not in wanted:
            continue
        runner.run(name, fn)
        # a failed case may leave its sources running: stop them
        try:
            q(conn_box[0], 'RESET ROLE')
        except psycopg2.Error:
            conn_box[0] = pg()
        if not KEEP:
            for (srv,) in q(conn_box[0], 'SELECT server FROM binlog_fdw.status'):
                log('stopping %s, left by %s' % (srv, name))
                q(conn_box[0], 'SELECT binlog_fdw.stop(%s)', (srv,))
    if not KEEP:
        try:
            conn_box[0].close()
            # a case may have restarted PostgreSQL (load-chunked kills a
            # backend with -9): the admin connection may be gone
            try:
                admin.close()
            except Exception:                       # noqa: BLE001
                pass
            admin = pg(db='postgres')
            cleanup(admin, m)
        except Exception as e:                      # noqa: BLE001
            log('cleanup: %s' % e)
    log('apply cases: %d passed, %d failed in %.1fs' % (runner.passed, runner.failed, time.monotonic() - t0))
    return 1 if runner.failed else 0


if __name__ == '__main__':
    sys.exit(main())
