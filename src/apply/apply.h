/*
 * apply.h
 *	  Applying MySQL changes into PostgreSQL tables: the apply loop shared
 *	  by binlog_fdw.apply() and the continuous apply worker, target tables,
 *	  DDL translation, table mappings and the initial load.  Settings, value
 *	  conversion and the type mapping are src/types (types.h), shared with
 *	  the foreign tables of IMPORT FOREIGN SCHEMA (src/sql).
 *
 * Files: apply.c (the loop; apply(), skip_change()), target.c, ddl.c,
 * continuous.c (the continuous apply worker), parallel.c (its apply
 * workers: parallel apply), mapping.c (map_table()),
 * temporal.c (history tables: map_history() and their writing),
 * conflict.c (the conflict log), stats.c (source_stats,
 * table_stats), verify.c (verify()), snapshot.c (snapshot(), sync_table()),
 * load.c (CALL load(): chunked,
 * resumable), synclock.c (loads and apply kept apart), progress.c
 * (sync_progress).  Uses the store (it consumes changes through
 * blpg_consume_*), the types (src/types), the MySQL source (snapshots) and
 * the decoder.  Shared state: the store's slots (store.h's locking rules)
 * and the load progress area of progress.c (its own lock, see there); a
 * load and apply of the same table exclude each other by the lock of
 * synclock.c.
 */
#ifndef BLPG_APPLY_H
#define BLPG_APPLY_H

#include "store/store.h"
#include "types/types.h"

#include "bl_decoder.h"

#include "access/attnum.h"
#include "access/xlogdefs.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "nodes/execnodes.h"
#include "nodes/pg_list.h"
#include "utils/guc.h"
#include "utils/relcache.h"
#include "utils/timestamp.h"

/* ---- the apply loop (apply.c) ---- */

/* A target table (target.c) */
typedef struct blpg_target blpg_target;

/* Per apply call: caches of targets by source table version. */
typedef struct blpg_targets blpg_targets;

typedef struct blpg_apply_result
{
	int64		transactions;
	int64		rows;
	int			tables;
	blpg_position pos;
	double		lag_seconds;
	int64		ddl;
} blpg_apply_result;

/*
 * Apply changes of a started source in the current transaction: until
 * max_changes or max_ms, stopping only at a transaction boundary (a
 * transaction larger than that is applied whole anyway).  wait_ms: wait
 * that long for changes when none are ready.
 */
extern void blpg_apply_run(const char *server_name, int64 max_changes,
						   int64 max_ms, int64 wait_ms,
						   blpg_apply_result *result);

/*
 * Apply the changes first..last of a batch this backend holds (or, for an
 * apply worker of parallel apply, its coordinator holds), reading its
 * entries in place in the ring from start_off; *in_txn tracks BEGIN/COMMIT,
 * *stop_before gets the sequence of a DDL that must begin a call instead.
 */
extern int	blpg_entry_rows_decode(bl_decoder *dec, const blpg_entry_view *v,
								   bl_event *rows, bl_error *err);
/* continuous.c: synchronous_commit and session_replication_role of an applier */
extern void blpg_apply_session_setup(void);
extern void blpg_apply_entries(blpg_targets *ts, blpg_slot *slot, uint64 start_off,
							   uint64 first, uint64 last, const char *server_name,
							   bool *in_txn, blpg_apply_result *res,
							   int64 *commit_ts_us, uint64 *stop_before);

/* ---- parallel apply (parallel.c) ---- */

/*
 * binlog_fdw.apply_workers: 1 applies serially (the continuous worker
 * alone), -1 (default) takes the number from the machine: see
 * blpg_apply_workers_effective().
 */
extern int	blpg_apply_workers;
extern int	blpg_apply_workers_effective(void);
extern bool blpg_apply_workers_check(int *newval, void **extra, GucSource source);

/*
 * One round of the continuous worker with apply workers: as blpg_apply_run,
 * but each source transaction is applied and committed by an apply worker
 * in its own transaction, in binlog order.  *barrier: it stopped before a
 * transaction that must be applied serially (blpg_apply_run, one
 * transaction), the next change.  false: no apply worker could be started
 * (nothing was done).
 */
extern bool blpg_parallel_apply_run(const char *server_name, int64 max_changes,
									int64 max_ms, int64 wait_ms,
									blpg_apply_result *res, bool *barrier);
/* Stop the apply workers of this backend (a pool of another size next). */
extern void blpg_parallel_shutdown(void);
extern PGDLLEXPORT void blpg_parallel_worker_main(Datum main_arg);

/*
 * Parallel apply: the key of a row of target tg in a write set (hash of the
 * target and its key columns' values in row, those it lacks taken from
 * unchanged if not NULL: an update's before image), BLPG_WK_KEY.  Else why
 * it cannot have one: the target has no key (BLPG_WK_KEYLESS) or a key not
 * compared by value (BLPG_WK_INEXACT: a type or collation that takes two
 * values as one, a FLOAT/DOUBLE source column), where only a proof of the
 * source that the transactions are independent lets it run beside others;
 * or BLPG_WK_BARRIER: the key is not in the image, or the target is written
 * in a way keys do not cover (other unique indexes, triggers, history,
 * loads, partitions): a transaction with such a row is applied serially.
 */
typedef enum blpg_write_key
{
	BLPG_WK_KEY = 0,
	BLPG_WK_KEYLESS,
	BLPG_WK_INEXACT,
	BLPG_WK_BARRIER
} blpg_write_key;

extern blpg_write_key blpg_target_write_key(blpg_target *tg, const bl_row *row,
											const bl_row *unchanged, uint64 *key);

/* verify() (verify.c): apply() stops before a transaction at or after this */
extern char blpg_apply_stop_file[BLPG_FILE_LEN];
extern uint64 blpg_apply_stop_pos;

/* ---- targets (target.c) ---- */

/* (blpg_target, blpg_targets: declared with the apply loop above) */

extern blpg_targets *blpg_targets_create(const char *server_name,
										 const blpg_apply_options *opts);
extern void blpg_targets_finish(blpg_targets *ts);

/* The target of a source table (NULL: unmapped and skipped). */
extern blpg_target *blpg_target_get(blpg_targets *ts, const bl_table *t,
									const blpg_entry_view *v);
/* How many target tables got rows so far. */
extern int	blpg_targets_touched(blpg_targets *ts);

/* Write buffered inserts (done by the functions here when needed). */
extern void blpg_targets_flush(blpg_targets *ts);

/* Forget what is known of targets (after DDL). */
extern void blpg_targets_invalidate(blpg_targets *ts);

extern void blpg_target_apply_row(blpg_targets *ts, blpg_target *target,
								  bl_op op, const bl_row *before,
								  const bl_row *after, const blpg_entry_view *v);

/* Does apply() apply DDL entry v (the filter's operations keep ddl)? */
extern bool blpg_targets_keep_ddl(blpg_targets *ts, const blpg_entry_view *v);

/* ---- row filters (rowfilter.c) ---- */

/* The source's binlog_fdw.filters, read as the extension's owner. */
extern blpg_filter *blpg_apply_filters(const char *server_name);

/*
 * A row filter over rel's columns, prepared in estate's query context
 * (errors name source, the MySQL table, and the missing column); *attrs
 * gets the columns it reads (offset by FirstLowInvalidHeapAttributeNumber).
 */
extern ExprState *blpg_rowfilter_prepare(Relation rel, const char *source, const char *text,
										 EState *estate, Bitmapset **attrs);
extern bool blpg_rowfilter_eval(ExprState *state, TupleTableSlot *slot,
								ExprContext *econtext);

/*
 * The same row filter as the condition of a COPY FROM into rel (implicit
 * AND, as BeginCopyFrom takes it); *attrs as above.
 */
extern List *blpg_rowfilter_copy_where(Relation rel, const char *source, const char *text,
									   Bitmapset **attrs);

/* Should changes of this table at this position be skipped (snapshot)? */
extern bool blpg_target_before_sync(blpg_target *target, const blpg_entry_view *v);

/*
 * A table under (or after) a chunked load: which operation of a row change
 * to apply (-1: none, the copy holds it; an update may become the delete of
 * its old key or the insert of its new one).
 */
extern bool blpg_target_chunked(blpg_target *target);
extern int	blpg_target_chunk_op(blpg_target *target, const blpg_entry_view *v, bl_op op,
								 const bl_row *before, const bl_row *after);
/* An integer literal (a chunk's key bound) -> int128; false if it is not one. */
extern bool blpg_parse_int128(const char *s, int128 *out);

/*
 * Is the change v (DDL) of source table schema.table in a copy of it, that
 * is before the position of its last load?  Waits for a load of it under
 * way (synclock.c).
 */
extern bool blpg_change_in_copy(blpg_targets *ts, const char *schema, const char *table,
								const blpg_entry_view *v);

/*
 * History tables (temporal.c): the writer of a target's history table
 * (history: its quoted qualified name, from table_mapping), checked against
 * the target; record a change written into the target: old the row it
 * replaced or deleted (NULL: an insert), new the row now (NULL: a delete),
 * both in the target's row type.
 */
typedef struct blpg_history blpg_history;
extern blpg_history *blpg_history_open(Relation target, const char *history,
									   const char *source, int nkey,
									   const AttrNumber *key_attnums);
extern void blpg_history_record(blpg_history *h, const char *op, TupleTableSlot *old,
								TupleTableSlot *new, const blpg_entry_view *v);
extern void blpg_history_close(blpg_history *h);
/*
 * TRUNCATE or DROP TABLE (op) of source table db.table at v: the statements
 * that end the open versions of its history table (NIL: it has none).
 */
extern List *blpg_history_end_all(const char *server, const char *db, const char *table,
								  const char *op, const blpg_entry_view *v);

/* "db.table" into its database and table, or an error naming it (mapping.c) */
extern void blpg_split_source_table(const char *source, char **db, char **table);

/* ---- initial loads (snapshot.c, load.c) ---- */

struct bl_snapshot;

/* Columns of a primary key a chunked load ranges over, at most */
#define BLPG_CHUNK_KEY_MAX 8

/* One chunk of a chunked load (load.c), for blpg_load_table(). */
typedef struct blpg_load_chunk
{
	bool		first;			/* the first: creates, truncates or checks
								 * the target is empty, writes the mapping */
	int64		limit;			/* rows at most */
	const char *after;			/* the chunk's keys are above this one (its
								 * integers, comma-separated, in the key's
								 * order), NULL: from the start */
	const char *upto;			/* ... and at most this one (as many
								 * integers), NULL: to the end */
	int64		rows_before;	/* progress: rows of the table's earlier chunks */
	TimestampTz started;		/* the load's start in this session (0: now) */
	int64		rows_at_start;	/* rows of the chunks before that */
	/* results */
	bool		chunked;		/* false: the table has no primary key of
								 * integer columns and was copied whole */
	int64		rows;			/* rows copied (those the row filter keeps) */
	int64		rows_read;		/* rows read from the source */
	bool		created;
	char	   *target;			/* quoted schema.table */
	char	   *target_schema;
	char	   *target_table;
	char	   *last_key;		/* the key of the last row copied, NULL: none */
	int			nkey;			/* chunked: the key's columns, in order */
	const char *key_columns[BLPG_CHUNK_KEY_MAX];
	int64		estimate;		/* the source's estimate of the table's rows */
	Oid			relid;			/* the target */
} blpg_load_chunk;

/* A key bound "x,y" of nkey integers (false if not); keys in MySQL's order (target.c). */
extern bool blpg_parse_key_bound(const char *text, int nkey, int128 *out);
extern int	blpg_key_cmp(const int128 *a, const int128 *b, int n);

/* Error unless the source has one host (a chunked load places by position). */
extern void blpg_load_require_one_host(const blpg_source_config *cfg);

/*
 * The integer columns of db.table's primary key (at most
 * BLPG_CHUNK_KEY_MAX names) and the source's row estimate: how many, 0 if
 * the key is not made of integers.
 */
extern int	blpg_chunk_key_of(struct bl_snapshot *snap, const char *db, const char *table,
							  const char **names, int64 *estimate);

/*
 * Copy source ("db.table") from the open snapshot snap (at file:pos) into
 * its target in the current transaction: all of it (chunk NULL, as
 * snapshot() does) or one chunk.
 */
extern void blpg_load_table(const char *server_name, struct bl_snapshot *snap,
							const char *source, const blpg_apply_options *opts,
							bool truncate, const char *file, uint64 pos,
							blpg_load_chunk *chunk);

/* ---- loads and apply kept apart (synclock.c) ---- */

/*
 * Apply: wait for any load of source table schema.table, and keep loads of
 * it out until this transaction ends.
 */
extern void blpg_sync_lock_share(Oid serverid, const char *schema, const char *table);

/*
 * A load: lock the source tables (names: schema, table, schema, table...
 * as String nodes) against apply and other loads until this transaction
 * ends; all at once, never waiting while holding one of them.
 */
extern void blpg_sync_lock_tables(Oid serverid, List *names);

/*
 * A chunk of load(): lock source table schema.table against apply and
 * whole copies (not against other chunks) until this transaction ends.
 */
extern void blpg_sync_lock_chunk(Oid serverid, const char *schema, const char *table);

/*
 * The key range range (0-based) of a load of schema.table, for one loader
 * until this transaction ends: false if another has it and !wait.
 */
extern bool blpg_load_range_lock(Oid serverid, const char *schema, const char *table,
								 int range, bool wait);
/* ... given back before the transaction's end (load.c's re-split) */
extern void blpg_sync_unlock_chunk(Oid serverid, const char *schema, const char *table);
extern void blpg_load_range_unlock(Oid serverid, const char *schema, const char *table,
								   int range);

/* ---- DDL (ddl.c) ---- */

extern void blpg_apply_ddl(blpg_targets *ts, const blpg_entry_view *v,
						   const char *server_name);

/* ---- positions ---- */

/* Compare binlog positions: file names by their numeric suffix. */
extern int	blpg_position_cmp(const char *file_a, uint64 pos_a,
							  const char *file_b, uint64 pos_b);

/* ---- replication origins (origin.c) ---- */

/*
 * Mark what the current transaction writes with the source's replication
 * origin; the progress is the acknowledged position and the MySQL commit
 * time (us since 1970).
 */
extern void blpg_origin_begin(Oid serverid);
/* Parallel apply: the origin on writes only; blpg_origin_begin at commit */
extern bool blpg_origin_tag(Oid serverid);
extern void blpg_origin_progress(Oid serverid, const blpg_position *pos,
								 int64 commit_ts_us);
extern XLogRecPtr blpg_origin_lsn(const char *file, uint64 pos);

/* ---- conflicts (conflict.c) ---- */

/* the sequence of the change being applied (set by apply.c) */
extern uint64 blpg_apply_current_seq;

/* missing_row, duplicate_key, constraint_violation, or NULL: no conflict */
extern const char *blpg_conflict_kind_of(int sqlerrcode, const char *operation);
/* A row image as a JSON object (NULL for none). */
extern char *blpg_row_json(const bl_table *t, const bl_row *row, const bl_row *before);
/* A conflict resolved by the policy, written in this transaction. */
extern void blpg_conflict_log(const char *server, const char *source_table,
							  const char *target_table, const char *operation,
							  const char *kind, const char *key, const char *before,
							  const char *after, const blpg_entry_view *v,
							  const char *policy, const char *resolution);
/* From a row's error context callback: the row whose error is raised. */
extern void blpg_conflict_capture(const char *source_table, const char *target_table,
								  const char *operation, const char *key,
								  const char *before, const char *after,
								  const char *file, size_t file_len, uint64 pos,
								  const char *gtid, size_t gtid_len, uint64 seq,
								  const char *policy);
extern void blpg_conflict_capture_reset(void);
/* After an apply error: keep a conflict that stopped it in the slot. */
extern void blpg_conflict_stopped(blpg_slot *slot, const char *server,
								  const ErrorData *edata, uint64 first_seq);
/* Write the stopped conflict when skipped (seq) or passed (seq 0, file/pos). */
extern void blpg_conflict_resolve(blpg_slot *slot, const char *server, uint64 seq,
								  const char *file, uint64 pos);
extern const char *blpg_conflict_policy_name(blpg_conflict c);

/* ---- cumulative statistics (stats.c) ---- */

/* What an apply call did to one source table; index: insert, update, delete
 * and missing_row, duplicate_key, constraint_violation. */
typedef struct blpg_table_counts
{
	const char *source_table;
	const char *target_table;
	int64		rows[3];
	int64		conflicts[3];
} blpg_table_counts;

/* Counts of the targets that got rows or conflicts (target.c). */
extern List *blpg_targets_counts(blpg_targets *ts);
/* Add an apply call's counts and the slot's new ones, in this transaction. */
extern void blpg_stats_flush(blpg_slot *slot, const char *server,
							 const blpg_apply_result *res, List *tables);
extern bool blpg_extension_table_exists(const char *name);
extern void blpg_stats_count_conflict(blpg_slot *slot, const char *server,
									  const char *source_table,
									  const char *target_table, const char *kind);

/* ---- the continuous apply worker (continuous.c) ---- */

extern PGDLLEXPORT void blpg_apply_worker_main(Datum main_arg);

/* binlog_fdw.continuous_synchronous_commit (a SYNCHRONOUS_COMMIT_* value) */
extern int	blpg_continuous_synchronous_commit;
extern const struct config_enum_entry blpg_synchronous_commit_options[];

/*
 * After the copy of source into target (relid, quoted target): its
 * secondary indexes when the copy created the target (read over snap;
 * unique ones only if consistent, one snapshot of the whole table), then
 * ANALYZE; progress shows both phases (snapshot.c).
 */
extern void blpg_snapshot_finish_target(const char *server_name, struct bl_snapshot *snap,
										const char *source, Oid relid, const char *target,
										bool created, bool consistent, int64 rows,
										int64 estimate, TimestampTz started,
										int64 rows_at_start);

/*
 * Load sources[0..n-1] chunk by chunk from sources[first] on, wrapping
 * around, each chunk committed by commit() (load.c); quiet: no NOTICEs.
 * ranges: the key ranges a table's first chunk splits the rest of its
 * keys into (1: none); loader: this loader's number (0: the caller), the
 * range it begins with.
 */
struct bl_source_options;
extern void blpg_load_tables(const char *server_name, Oid serverid,
							 const struct bl_source_options *so,
							 const blpg_apply_options *opts, char **sources, int n,
							 int first, int64 chunk_rows, bool truncate, bool quiet,
							 int ranges, int loader, void (*commit) (void));

/* The reload's copy of one table (load.c, for reload.c). */
extern bool blpg_load_reload_table(const char *server_name, Oid serverid,
								   const struct bl_source_options *so,
								   const blpg_apply_options *opts, const char *source,
								   void (*commit) (void));

/* The reload of a source's tables after a lost position (reload.c) */
extern int	blpg_reload_chunk_rows;		/* binlog_fdw.reload_chunk_rows */
extern PGDLLEXPORT void blpg_reloader_main(Datum main_arg);

/* Background loaders of load(parallel => N) (loaders.c) */
#define BLPG_MAX_LOADERS 16
/* required false: NULL when no background worker is free (else an error) */
extern void *blpg_loader_launch(const char *server_name, Oid serverid, char **sources,
								int nsources, int first, int64 chunk_rows, int ranges,
								bool required);
/* Wait for them all; an error if one failed. */
extern void blpg_loaders_wait(List *loaders);
extern void blpg_loaders_stop(List *loaders);
extern PGDLLEXPORT void blpg_loader_main(Datum main_arg);

/* The MySQL connection options of a copy, from the source's (snapshot.c). */
struct bl_source_options;
extern void blpg_source_connect_options(const blpg_source_config *cfg, int host,
										struct bl_source_options *so);
extern void blpg_snapshot_source_options(const blpg_source_config *cfg,
										 struct bl_source_options *so);

/*
 * What bl_snapshot_start() gets for the tables a copy reads: names is a
 * list of db, table, db, table, ... (as blpg_sync_lock_tables's); *n set.
 */
struct bl_snapshot;
struct bl_snapshot_table;
extern struct bl_snapshot_table *blpg_snapshot_tables(List *names, int *n);

/*
 * The errcode and the hint of a failed bl_snapshot_start(): the lock's when
 * it was refused or timed out (insufficient privilege, lock not available),
 * else connection failure and otherwise (may be NULL: no hint).
 */
extern int	blpg_snapshot_start_errcode(const struct bl_snapshot *snap);
extern const char *blpg_snapshot_start_hint(const struct bl_snapshot *snap,
											const char *otherwise);

/* verify(): a source table into a relation like its target (snapshot.c) */
extern List *blpg_snapshot_copy_into(const char *server_name, struct bl_snapshot *snap,
									 const char *source, const blpg_apply_options *opts,
									 Oid into, Oid *target, int64 *rows);
extern Oid	blpg_snapshot_target_of(const char *server_name, const char *source,
									const blpg_apply_options *opts);

/*
 * Does a copy about to take its snapshot begin the source (it has no
 * position yet)?  Then the copy holds, until its transaction ends, the lock
 * that makes such copies take their snapshots one at a time: the first to
 * commit records the earliest position, and later copies see it
 * (snapshot.c).  Call before the copy's snapshot.
 */
extern bool blpg_copy_begins_source(Oid serverid);

/*
 * A source that begins streaming at a copy (snapshot(), load()'s first
 * chunk): the copied tables' definitions (sources "db.table") into its
 * schema history at the copy's position, read over snap while it holds
 * their metadata locks, in the calling transaction (snapshot.c).
 */
extern void blpg_snapshot_seed_history(Oid serverid, const char *server_name,
									   struct bl_snapshot *snap, List *sources,
									   const char *file, uint64 pos);


/* ---- progress of initial loads (progress.c) ---- */

typedef struct blpg_progress blpg_progress;

extern void blpg_progress_shmem_request(void);
extern void blpg_progress_shmem_startup(void);
/*
 * A progress entry for this backend's load of a table (NULL if all are
 * taken), in phase "copying": rows_before were copied before it began (a
 * chunked load's earlier chunks), rows_at_start of them before started
 * (0: now), the time rows/s counts from.
 */
extern blpg_progress *blpg_progress_begin(const char *server, const char *source,
										  const char *target, int64 estimate,
										  int64 rows_before, TimestampTz started,
										  int64 rows_at_start);
/* Rows copied since it began. */
extern void blpg_progress_update(blpg_progress *p, int64 rows);
extern int	blpg_progress_notice_interval;	/* binlog_fdw.progress_notice_interval */
/* "building indexes", "analyzing" */
extern void blpg_progress_set_phase(blpg_progress *p, const char *phase);
extern void blpg_progress_end(blpg_progress *p);

#endif							/* BLPG_APPLY_H */
