/*
 * load.c
 *	  CALL binlog_fdw.load(server, tables, chunk_rows, truncate): initial
 *	  load in primary-key chunks while the source streams, each chunk
 *	  committed with its progress; called again after any failure (a killed
 *	  backend, a restart of either server, a dropped connection) it goes on
 *	  at the next chunk.
 *
 * A table with a primary key of integer columns (one or several, compared
 * column by column as MySQL orders them) is copied in chunks of
 * chunk_rows keys in key order: each chunk is its own short consistent
 * snapshot on the source (MariaDB: START TRANSACTION WITH CONSISTENT
 * SNAPSHOT gives its binlog position, no lock; MySQL: the brief FLUSH
 * TABLES WITH READ LOCK of bl_mysql_snapshot.c) and its own PostgreSQL
 * transaction, which appends the chunk (its upper key, its position) to
 * the table's mapping row (load_key_hi, load_file, load_pos; the key's
 * columns in load_key_columns).  Apply finds
 * a changed row's chunk by its key (target.c, blpg_target_chunk_op()): a
 * change before its chunk's position is in the copy, a change of a key
 * above every chunk copied so far is in a chunk still to come (its copy
 * will be later than the change), anything else is applied.  The chunk and
 * apply are kept apart by synclock.c's lock (the chunk holds it
 * exclusively, so apply reads the chunks only between them).  So every
 * change is applied exactly once, per key, without a long transaction on
 * the source.  A table without such a key is copied in one chunk (one
 * consistent pass, as snapshot() does), still committed with its
 * progress.
 *
 * The definition of the table (bl_snapshot_definition) is recorded with
 * the first chunk; a later chunk that finds another one stops with an
 * error (the copy so far has the old shape): drop the target and load
 * again.
 *
 * Several load() calls (one per session) load several tables at once, and
 * share the chunks of one table: each reads the table's progress under the
 * chunk's lock and copies the next chunk.
 */
#include "apply/apply.h"

#include "bl_mysql_snapshot.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include <unistd.h>

PG_FUNCTION_INFO_V1(binlog_fdw_load);

/* A table's load so far, from its mapping row. */
typedef struct load_state
{
	const char *server_name;
	const char *db;
	const char *table;
	MemoryContext cxt;
	int			nchunks;
	bool		complete;		/* the last chunk has no upper bound */
	char	   *after;			/* the last chunk's upper key */
	char	   *digest;
	int64		rows;			/* rows of the chunks so far */
	bool		created;		/* the first chunk created the target */
	bool		recorded;		/* the mapping row shows a load (load_key_hi) */
	/* this call's load of the table (progress) */
	TimestampTz started;
	int64		rows_at_start;
} load_state;

static void
state_read_fn(void *arg)
{
	load_state *st = arg;
	Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		vals[3];

	vals[0] = CStringGetTextDatum(st->server_name);
	vals[1] = CStringGetTextDatum(st->db);
	vals[2] = CStringGetTextDatum(st->table);
	st->nchunks = 0;
	st->complete = false;
	st->after = NULL;
	st->digest = NULL;
	st->rows = 0;
	st->created = false;
	st->recorded = false;
	if (SPI_execute_with_args("SELECT cardinality(load_key_hi), load_key_hi[cardinality(load_key_hi)], "
							  "load_key_hi[cardinality(load_key_hi)] IS NULL, load_digest, "
							  "(SELECT sum(r) FROM unnest(load_rows) AS r), load_created "
							  "FROM binlog_fdw.table_mapping "
							  "WHERE server_name = $1 AND source_schema = $2 AND source_table = $3 "
							  "AND load_key_hi IS NOT NULL",
							  3, types, vals, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read binlog_fdw.table_mapping");
	if (SPI_processed == 1)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		char	   *n = SPI_getvalue(tup, desc, 1);
		char	   *hi = SPI_getvalue(tup, desc, 2);
		char	   *last = SPI_getvalue(tup, desc, 3);
		char	   *dg = SPI_getvalue(tup, desc, 4);
		char	   *rows = SPI_getvalue(tup, desc, 5);
		char	   *created = SPI_getvalue(tup, desc, 6);

		st->recorded = true;
		st->nchunks = n ? atoi(n) : 0;
		st->complete = st->nchunks > 0 && last && last[0] == 't';
		st->after = hi ? MemoryContextStrdup(st->cxt, hi) : NULL;
		st->digest = dg ? MemoryContextStrdup(st->cxt, dg) : NULL;
		st->rows = rows ? strtoll(rows, NULL, 10) : 0;
		st->created = created && created[0] == 't';
	}
}

typedef struct chunk_write
{
	const char *server_name;
	const char *db;
	const char *table;
	const char *hi;				/* NULL: the last chunk */
	const char *file;
	uint64		pos;
	const char *digest;
	int64		rows;
	bool		created;		/* the first chunk: it created the target */
	int64		estimate;		/* the source's estimate of the table's rows */
	int			nkey;			/* the key the chunks range over */
	const char *const *key_columns;
} chunk_write;

static void
chunk_write_fn(void *arg)
{
	chunk_write *cw = arg;
	Oid			types[11] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT8OID, TEXTOID,
	INT8OID, BOOLOID, TEXTARRAYOID, INT8OID};
	Datum		vals[11];
	char		nulls[11] = "           ";

	vals[0] = CStringGetTextDatum(cw->server_name);
	vals[1] = CStringGetTextDatum(cw->db);
	vals[2] = CStringGetTextDatum(cw->table);
	if (cw->hi)
		vals[3] = CStringGetTextDatum(cw->hi);
	else
		nulls[3] = 'n';
	vals[4] = CStringGetTextDatum(cw->file);
	vals[5] = Int64GetDatum((int64) cw->pos);
	vals[6] = CStringGetTextDatum(cw->digest);
	vals[7] = Int64GetDatum(cw->rows);
	vals[8] = BoolGetDatum(cw->created);
	if (cw->nkey > 0)
	{
		Datum		names[BLPG_CHUNK_KEY_MAX];

		for (int k = 0; k < cw->nkey; k++)
			names[k] = CStringGetTextDatum(cw->key_columns[k]);
		vals[9] = PointerGetDatum(construct_array(names, cw->nkey, TEXTOID, -1, false, TYPALIGN_INT));
	}
	else
		nulls[9] = 'n';
	vals[10] = Int64GetDatum(cw->estimate);
	/* load_created, load_key_columns: the first chunk's (a whole copy or a restart reset them) */
	if (SPI_execute_with_args("UPDATE binlog_fdw.table_mapping SET "
							  "load_key_hi = coalesce(load_key_hi, '{}') || $4, "
							  "load_file = coalesce(load_file, '{}') || $5, "
							  "load_pos = coalesce(load_pos, '{}') || $6, "
							  "load_rows = coalesce(load_rows, '{}') || $8, "
							  "load_created = coalesce(load_created, $9), "
							  "load_key_columns = coalesce(load_key_columns, $10), "
							  "load_digest = $7, load_estimate = $11, synced_at = now() "
							  "WHERE server_name = $1 AND source_schema = $2 AND source_table = $3",
							  11, types, vals, nulls, false, 0) != SPI_OK_UPDATE || SPI_processed != 1)
		elog(ERROR, "could not record a chunk of the load of %s.%s", cw->db, cw->table);
}

/* The table's definition digest; errors name the table. */
static char *
definition(bl_snapshot *snap, const char *db, const char *table, const char *source)
{
	char		digest[64];
	bl_error	err;

	memset(&err, 0, sizeof(err));
	if (bl_snapshot_definition(snap, db, table, digest, sizeof(digest), &err) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_UNABLE_TO_CREATE_EXECUTION),
				 errmsg("could not read the definition of %s: %s", source, err.message),
				 errhint("Call binlog_fdw.load() again once the source is back: it goes on at the next chunk.")));
	return pstrdup(digest);
}

/*
 * Copy the next chunk of source in the current transaction; true when the
 * table is complete.
 */
static bool
load_chunk(const char *server_name, Oid serverid, const bl_source_options *so,
		   const blpg_apply_options *opts, const char *source, const char *db,
		   const char *table, int64 chunk_rows, bool truncate, load_state *st)
{
	bl_snapshot *volatile snap = NULL;
	bl_error	err;
	char		file[BLPG_FILE_LEN];
	uint64_t	pos = 0;
	char	   *raw = NULL;
	char	   *volatile gtid = NULL;
	char	   *volatile digest = NULL;
	blpg_load_chunk chunk;
	chunk_write cw;
	bool		done;
	volatile bool begins = false;

	/* apply waits for this chunk; it reads the chunks after it */
	blpg_sync_lock_tables(serverid, list_make2(makeString((char *) db), makeString((char *) table)));

	/*
	 * Where the load is now, read under the lock (read-write: a snapshot
	 * taken now): another load() of the table may have copied chunks
	 * since, which this one continues after.
	 */
	if (!truncate)
	{
		blpg_run_as_owner(state_read_fn, st);
		if (st->complete)
			return true;
	}
	/* a source that has no position begins at this chunk's (the first) */
	if (st->nchunks == 0 || truncate)
		begins = blpg_copy_begins_source(serverid);
	memset(&err, 0, sizeof(err));
	snap = bl_snapshot_open(so, &err);
	if (snap == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
				 errmsg("could not connect to source \"%s\" for the load of %s: %s",
						server_name, source, err.message),
				 errhint("Call binlog_fdw.load() again once the source is back: it goes on at the next chunk.")));
	PG_TRY();
	{
		digest = definition(snap, db, table, source);
		if (st->nchunks > 0 && !truncate && st->digest && strcmp(st->digest, digest) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("table %s changed on the source during its load, after %d chunks",
							source, st->nchunks),
					 errdetail("The chunks copied so far have the table's former definition."),
					 errhint("Drop the target table and call binlog_fdw.load() again with truncate => true.")));
		{
			bl_snapshot_table t = {db, table};

			/* the GTID state: only where the source begins */
			if (bl_snapshot_start(snap, &t, 1, file, sizeof(file), &pos,
								  (st->nchunks == 0 || truncate) && begins ? &raw : NULL, &err) != 0)
				ereport(ERROR,
						(errcode(blpg_snapshot_start_errcode(snap)),
						 errmsg("could not take a snapshot of source \"%s\" for the load of %s: %s",
								server_name, source, err.message),
						 errhint("%s", blpg_snapshot_start_hint(snap, "Call binlog_fdw.load() again once the source is back: it goes on at the next chunk."))));
		}
		/* "": the source cannot tell the GTID state there */
		gtid = raw && raw[0] ? pstrdup(raw) : NULL;
		free(raw);

		memset(&chunk, 0, sizeof(chunk));
		chunk.first = st->nchunks == 0 || truncate;
		chunk.limit = chunk_rows;
		chunk.after = chunk.first ? NULL : st->after;
		chunk.rows_before = chunk.first ? 0 : st->rows;
		chunk.started = st->started;
		chunk.rows_at_start = chunk.first ? 0 : st->started ? st->rows_at_start : st->rows;
		blpg_load_table(server_name, snap, source, opts, truncate, file, pos, &chunk);
		if (!chunk.first && chunk.created)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the target of %s was dropped during its load", source),
					 errhint("Call binlog_fdw.load() again with truncate => true.")));
		if (strcmp(definition(snap, db, table, source), digest) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("table %s changed on the source during chunk %d of its load",
							source, chunk.first ? 1 : st->nchunks + 1),
					 errhint("Drop the target table and call binlog_fdw.load() again with truncate => true.")));
		/*
		 * The last chunk: the source's secondary indexes on a target the
		 * load created, then ANALYZE (unique indexes only if one chunk
		 * held the whole table: see blpg_snapshot_finish_target)
		 */
		if (!chunk.chunked || chunk.rows_read < chunk_rows || chunk.last_key == NULL)
			blpg_snapshot_finish_target(server_name, snap, source, chunk.relid, chunk.target,
										chunk.first ? chunk.created : st->created,
										chunk.first, chunk.rows_before + chunk.rows,
										chunk.estimate, chunk.started, chunk.rows_at_start);
		/* a source never started begins streaming at its first chunk */
		if (chunk.first && begins)
			blpg_snapshot_seed_history(serverid, server_name, snap,
									   list_make1(makeString((char *) source)), file, pos);
	}
	PG_FINALLY();
	{
		bl_snapshot_end(snap);
	}
	PG_END_TRY();

	done = !chunk.chunked || chunk.rows_read < chunk_rows || chunk.last_key == NULL;
	cw.server_name = server_name;
	cw.db = db;
	cw.table = table;
	cw.hi = done ? NULL : chunk.last_key;
	cw.file = file;
	cw.pos = pos;
	cw.digest = digest;
	cw.rows = chunk.rows;
	cw.created = chunk.first && chunk.created;
	cw.estimate = chunk.estimate;
	cw.nkey = chunk.chunked ? chunk.nkey : 0;
	cw.key_columns = chunk.key_columns;
	blpg_run_as_owner(chunk_write_fn, &cw);
	if (st->started == 0)
	{
		/* rows/s of this call counts from its first chunk */
		st->started = chunk.started;
		st->rows_at_start = chunk.rows_before;
	}

	/* ... with the table's definition there in its schema history */
	if (chunk.first && begins)
	{
		blpg_position state;

		memset(&state, 0, sizeof(state));
		strlcpy(state.file, file, sizeof(state.file));
		state.pos = pos;
		state.gtid_state = gtid;
		blpg_state_save(serverid, &state);
	}
	ereport(DEBUG1,
			(errmsg("binlog_fdw load of %s: chunk of " INT64_FORMAT " rows at %s:%llu%s",
					source, chunk.rows, file, (unsigned long long) pos, done ? " (last)" : "")));
	return done;
}

/*
 * Load sources[0..n-1], starting at sources[first] and wrapping around
 * (several loaders spread over the tables): chunk after chunk, each
 * committed by commit().  A table another loader completed meanwhile is
 * passed over; one it is loading is shared chunk by chunk.
 */
void
blpg_load_tables(const char *server_name, Oid serverid, const bl_source_options *so,
				 const blpg_apply_options *opts, char **sources, int n, int first,
				 int64 chunk_rows, bool truncate, bool quiet, void (*commit) (void))
{
	MemoryContext outer = CurrentMemoryContext;
	MemoryContext chunk_cxt = AllocSetContextCreate(outer, "binlog_fdw load chunk",
													ALLOCSET_DEFAULT_SIZES);

	for (int k = 0; k < n; k++)
	{
		char	   *source = sources[(first + k) % n];
		char	   *db,
				   *table;
		load_state	st;
		bool		restart = truncate;

		blpg_split_source_table(source, &db, &table);
		memset(&st, 0, sizeof(st));
		st.server_name = server_name;
		st.db = db;
		st.table = table;
		st.cxt = outer;
		blpg_run_as_owner(state_read_fn, &st);
		if (st.complete && !restart)
		{
			if (!quiet)
				ereport(NOTICE,
						(errmsg("%s is loaded already (%d chunks)", source, st.nchunks),
						 errhint("Pass truncate => true to load it again.")));
			continue;
		}
		if (st.nchunks > 0 && !restart && !quiet)
			ereport(NOTICE,
					(errmsg("the load of %s goes on after chunk %d (key %s)",
							source, st.nchunks, st.after ? st.after : "-")));
		for (;;)
		{
			MemoryContext old = MemoryContextSwitchTo(chunk_cxt);
			bool		done;

			done = load_chunk(server_name, serverid, so, opts, source, db, table,
							  chunk_rows, restart, &st);
			MemoryContextSwitchTo(old);
			commit();
			MemoryContextReset(chunk_cxt);
			if (done)
				break;
			restart = false;
			blpg_run_as_owner(state_read_fn, &st);
			CHECK_FOR_INTERRUPTS();
		}
	}
	MemoryContextDelete(chunk_cxt);
}

/*
 * The reload after a lost position (reload.c): copy source again, chunk
 * by chunk, if its mapping row still shows the load the reload marked (a
 * load with no chunk yet: the first chunk truncates the target) or one it
 * began; anything else (the row gone with a DROP TABLE, a snapshot() that
 * replaced the load) leaves it.  False if there was nothing to do.
 */
bool
blpg_load_reload_table(const char *server_name, Oid serverid, const bl_source_options *so,
					   const blpg_apply_options *opts, const char *source,
					   void (*commit) (void))
{
	char	   *db,
			   *table;
	load_state	st;
	char	   *sources[1];

	blpg_split_source_table(source, &db, &table);
	memset(&st, 0, sizeof(st));
	st.server_name = server_name;
	st.db = db;
	st.table = table;
	st.cxt = CurrentMemoryContext;
	blpg_run_as_owner(state_read_fn, &st);
	if (!st.recorded || st.complete)
		return false;
	sources[0] = (char *) source;
	blpg_load_tables(server_name, serverid, so, opts, sources, 1, 0, blpg_reload_chunk_rows,
					 st.nchunks == 0, true, commit);
	return true;
}

static void
procedure_commit(void)
{
	SPI_commit();
}

Datum
binlog_fdw_load(PG_FUNCTION_ARGS)
{
	char	   *name;
	ArrayType  *tables;
	int64		chunk_rows = PG_ARGISNULL(2) ? 100000 : PG_GETARG_INT32(2);
	bool		truncate = PG_ARGISNULL(3) ? false : PG_GETARG_BOOL(3);
	bool		parallel_auto = PG_NARGS() < 5 || PG_ARGISNULL(4);
	int			parallel = parallel_auto ? 1 : PG_GETARG_INT32(4);
	ForeignServer *server;
	blpg_source_config *cfg;
	blpg_apply_options opts;
	bl_source_options so;
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	char	  **sources;
	volatile int nsources = 0;
	AclResult	aclresult;
	MemoryContext outer;
	List	   *volatile loaders = NIL;

	blpg_require_arg(fcinfo, 0, "server");
	blpg_require_arg(fcinfo, 1, "tables");
	if (fcinfo->context == NULL || !IsA(fcinfo->context, CallContext) ||
		castNode(CallContext, fcinfo->context)->atomic)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_TERMINATION),
				 errmsg("binlog_fdw.load() commits each chunk and cannot run inside a transaction block"),
				 errhint("CALL it on its own, or use binlog_fdw.snapshot() to load in the current transaction.")));
	if (blpg_tables_legacy())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("binlog_fdw.load() needs the extension's version 0.2"),
				 errhint("Run ALTER EXTENSION binlog_fdw UPDATE.")));
	if (chunk_rows < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("chunk_rows must be at least 1")));
	if (parallel < 1 || parallel > BLPG_MAX_LOADERS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("parallel must be between 1 and %d", BLPG_MAX_LOADERS)));
	if (parallel > 1 && truncate)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("binlog_fdw.load() with parallel > 1 cannot truncate"),
				 errdetail("Each loader would start the tables it reaches again."),
				 errhint("Truncate the targets and call it with truncate => false, or load with parallel => 1.")));
	if (SPI_connect_ext(SPI_OPT_NONATOMIC) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	/* what is used after a commit is copied here, which survives them */
	outer = CurrentMemoryContext;
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	tables = PG_GETARG_ARRAYTYPE_P_COPY(1);
	server = GetForeignServerByName(name, false);
	aclresult = pg_foreign_server_aclcheck(server->serverid, GetUserId(), ACL_USAGE);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_FOREIGN_SERVER, server->servername);
	cfg = blpg_load_config(server->serverid, GetUserId());
	blpg_apply_options_load(server->serverid, &opts);
	blpg_snapshot_source_options(cfg, &so);
	deconstruct_array(tables, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	sources = palloc0(sizeof(char *) * Max(n, 1));
	for (int i = 0; i < n; i++)
		if (!nulls[i])
			sources[nsources++] = MemoryContextStrdup(outer, TextDatumGetCString(elems[i]));
	for (int i = 0; i < nsources; i++)
	{
		char	   *db,
				   *table;

		blpg_split_source_table(sources[i], &db, &table);
	}

	/*
	 * parallel NULL: a loader per table (the chunks of one table are copied
	 * one at a time), up to the machine's CPUs; with truncate, one.
	 */
	if (parallel_auto && !truncate)
	{
		long		cpus = sysconf(_SC_NPROCESSORS_ONLN);

		parallel = Min(nsources, Min(BLPG_MAX_LOADERS, (int) Max(cpus, 1)));
		parallel = Max(parallel, 1);
	}
	/* loaders 1..parallel-1 in the background, each starting at its own table */
	for (int i = 1; i < parallel && nsources > 0; i++)
	{
		void	   *l = blpg_loader_launch(server->servername, server->serverid,
										   sources, nsources, i % nsources,
										   chunk_rows, !parallel_auto);

		/* chosen for the machine: as many as the server can start */
		if (l == NULL)
		{
			ereport(NOTICE,
					(errmsg("binlog_fdw.load() runs with %d loaders: no background worker is free for more", i),
					 errhint("Raise max_worker_processes, or pass parallel.")));
			break;
		}
		loaders = lappend(loaders, l);
	}
	PG_TRY();
	{
		blpg_load_tables(server->servername, server->serverid, &so, &opts, sources, nsources, 0,
						 chunk_rows, truncate, false, procedure_commit);
	}
	PG_CATCH();
	{
		blpg_loaders_stop(loaders);
		PG_RE_THROW();
	}
	PG_END_TRY();
	blpg_loaders_wait(loaders);
	SPI_finish();
	PG_RETURN_VOID();
}
