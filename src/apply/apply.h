/*
 * apply.h
 *	  Applying MySQL changes into PostgreSQL tables: the apply loop shared
 *	  by binlog_fdw.apply() and the continuous apply worker, settings, value
 *	  conversion, target tables, DDL translation, table mappings, the type
 *	  mapping of the tables binlog_fdw creates, and the initial load.
 *
 * Files: apply.c (the loop; apply(), skip_change()), settings.c, conflict.c,
 * stats.c, verify.c (verify()),
 * convert.c, target.c, ddl.c, continuous.c (the continuous apply worker),
 * mapping.c (map_table()), typemap.c, snapshot.c (snapshot(),
 * sync_table()), progress.c (sync_progress).  Uses the store (it consumes
 * changes through blpg_consume_*), the MySQL source (snapshots) and the
 * decoder.  Shared state: the store's slots (store.h's locking rules) and
 * the load progress area of progress.c (its own lock, see there).
 */
#ifndef BLPG_APPLY_H
#define BLPG_APPLY_H

#include "store/store.h"

#include "bl_decoder.h"

#include "access/attnum.h"
#include "access/xlogdefs.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "utils/guc.h"
#include "utils/relcache.h"

typedef enum blpg_conflict
{
	BLPG_CONFLICT_ERROR = 0,
	BLPG_CONFLICT_SKIP,
	BLPG_CONFLICT_OVERWRITE
} blpg_conflict;

typedef enum blpg_zero_date
{
	BLPG_ZERO_NULL = 0,
	BLPG_ZERO_NEG_INFINITY,
	BLPG_ZERO_ERROR
} blpg_zero_date;

/* Apply settings of a source (server options). */
typedef struct blpg_apply_options
{
	blpg_conflict conflict;		/* conflict */
	bool		unmapped_error; /* unmapped = error | skip */
	bool		tinyint1_boolean;	/* tinyint1_boolean */
	blpg_zero_date zero_date;	/* zero_date */
	bool		time_as_interval;	/* time_type = interval | time */
	bool		keyless_full_row;	/* keyless = error | full_row */
	List	   *schema_map;		/* pairs: mysql schema, pg schema */
} blpg_apply_options;

/* A source's apply settings (settings.c). */
extern void blpg_apply_options_load(Oid serverid, blpg_apply_options *opts);

/* ---- value conversion (convert.c) ---- */

typedef enum blpg_conv_kind
{
	BLPG_CONV_GENERIC = 0,		/* text, then the type's input function */
	BLPG_CONV_INT2,
	BLPG_CONV_INT4,
	BLPG_CONV_INT8,
	BLPG_CONV_NUMERIC,
	BLPG_CONV_FLOAT4,
	BLPG_CONV_FLOAT8,
	BLPG_CONV_BOOL,
	BLPG_CONV_TEXT,				/* text, varchar, bpchar without typmod */
	BLPG_CONV_BYTEA,
	BLPG_CONV_DATE,
	BLPG_CONV_TIMESTAMP,
	BLPG_CONV_TIMESTAMPTZ,
	BLPG_CONV_TIME,
	BLPG_CONV_INTERVAL,
	BLPG_CONV_JSONB,
	BLPG_CONV_TEXT_ARRAY,
	BLPG_CONV_GEOMETRY			/* PostGIS geometry/geography: EWKB hex input */
} blpg_conv_kind;

/* How one MySQL column becomes one PostgreSQL column. */
typedef struct blpg_col_conv
{
	int			src;			/* MySQL column index */
	AttrNumber	attnum;			/* target attribute */
	Oid			type;
	int32		typmod;
	blpg_conv_kind kind;
	FmgrInfo	input;			/* GENERIC: the type's input function */
	Oid			ioparam;
	const char *name;			/* for error messages */
} blpg_col_conv;

extern void blpg_conv_init(blpg_col_conv *cc, Oid type, int32 typmod);

/*
 * value -> Datum.  before: the column's before-image value (partial JSON).
 * old_datum/old_isnull: the target row's current value, for a partial JSON
 * update without a full before image.
 */
extern Datum blpg_convert(const blpg_col_conv *cc, const bl_column *col,
						  const bl_value *v, const bl_value *before,
						  const blpg_apply_options *opts, bool *isnull);

/* ---- the apply loop (apply.c) ---- */

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

/* verify() (verify.c): apply() stops before a transaction at or after this */
extern char blpg_apply_stop_file[BLPG_FILE_LEN];
extern uint64 blpg_apply_stop_pos;

/* ---- targets (target.c) ---- */

typedef struct blpg_target blpg_target;

/* Per apply call: caches of targets by source table version. */
typedef struct blpg_targets blpg_targets;

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

/* Should changes of this table at this position be skipped (snapshot)? */
extern bool blpg_target_before_sync(blpg_target *target, const blpg_entry_view *v);

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

/* verify(): a source table into a relation like its target (snapshot.c) */
struct bl_snapshot;
extern List *blpg_snapshot_copy_into(const char *server_name, struct bl_snapshot *snap,
									 const char *source, const blpg_apply_options *opts,
									 Oid into, Oid *target, int64 *rows);
extern Oid	blpg_snapshot_target_of(const char *server_name, const char *source,
									const blpg_apply_options *opts);

/* ---- the type mapping (typemap.c, README "Type mapping") ---- */

/*
 * A MySQL column type as information_schema.COLUMNS.COLUMN_TYPE writes it
 * ("int(11) unsigned", "varchar(64)", "enum('a','b')", "decimal(10,2)",
 * "datetime(6)", "tinyint(1)") -> a PostgreSQL type name, or NULL if the
 * type is unknown.
 */
extern const char *blpg_map_type(const char *column_type, const blpg_apply_options *opts);

/* ---- progress of initial loads (progress.c) ---- */

typedef struct blpg_progress blpg_progress;

extern void blpg_progress_shmem_request(void);
extern void blpg_progress_shmem_startup(void);
/* A progress entry for this backend's load (NULL if all are taken). */
extern blpg_progress *blpg_progress_begin(const char *server, const char *source,
										  const char *target, int64 estimate);
extern void blpg_progress_update(blpg_progress *p, int64 rows_done);
extern void blpg_progress_end(blpg_progress *p);

#endif							/* BLPG_APPLY_H */
