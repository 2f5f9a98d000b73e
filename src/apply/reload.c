/*
 * reload.c
 *	  The reload after a lost position (server option lost_position
 *	  'reload'): the source has purged the binlog that holds a source's
 *	  acknowledged position, so the changes after it can no longer be read.
 *	  The source's worker starts this background worker ("binlog_fdw
 *	  reloader"), which copies again, online, every table apply writes for
 *	  the source, and the source streams on from a position the source
 *	  still has.
 *
 * In one transaction, holding the tables' load locks (synclock.c: apply
 * is not inside any of them), it takes the source's position now (a
 * consistent snapshot's), records the definitions of the source's tables
 * there in the schema history, marks each table's mapping row as a load
 * that has copied no chunk yet (table_mapping.load_key_hi '{}': apply
 * skips every change of such a table, its first chunk will hold them),
 * records the position as the source's and the tables in
 * source_state.reload_tables.  The worker then streams from that position.
 * Each table is then copied as load() copies it (load.c): its first chunk
 * truncates the target, and each chunk commits with its progress, so that
 * apply brings every row forward from its chunk's position exactly once.
 * A table done leaves reload_tables in the transaction after its last
 * chunk.  Killed or failed at any point, the reloader is started again by
 * the worker (at its start, while reload_tables is not empty) and goes on
 * at the next chunk.
 *
 * The tables: those of the source that pass its include/exclude filter,
 * are not mapped with skip, and have a target in PostgreSQL (their
 * mapping's, or the same names after schema_map).  A source table without
 * a target is left as apply leaves it (unmapped 'error' or 'skip').
 *
 * One reloader per source: it holds a session advisory lock on the
 * server's OID while it runs; a second one exits at once.
 */
#include "apply/apply.h"

#include "bl_mysql_snapshot.h"
#include "bl_mysql_source.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/lmgr.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

/* the advisory lock's second key: "blrl" */
#define RELOAD_LOCK_KEY 0x626c726c

int			blpg_reload_chunk_rows = 100000;

typedef struct reload_listing
{
	blpg_filter *filter;
	List	   *all;			/* "db.table" passing the filter */
} reload_listing;

static void
table_listed(void *arg, const char *schema, const char *table, const char *charset)
{
	reload_listing *l = arg;

	(void) charset;
	if (blpg_filter_match(l->filter, schema, strlen(schema), table, strlen(table)))
		l->all = lappend(l->all, makeString(psprintf("%s.%s", schema, table)));
}

static void
db_listed(void *arg, const char *schema, const char *table, const char *charset)
{
	(void) arg;
	(void) schema;
	(void) table;
	(void) charset;
}

typedef struct mapping_call
{
	const char *server_name;
	const char *db;
	const char *table;
	bool		skip;
} mapping_call;

static void
mapping_skip_fn(void *arg)
{
	mapping_call *m = arg;
	Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		vals[3];

	vals[0] = CStringGetTextDatum(m->server_name);
	vals[1] = CStringGetTextDatum(m->db);
	vals[2] = CStringGetTextDatum(m->table);
	if (SPI_execute_with_args("SELECT skip FROM binlog_fdw.table_mapping "
							  "WHERE server_name = $1 AND source_schema = $2 AND source_table = $3",
							  3, types, vals, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read binlog_fdw.table_mapping");
	m->skip = false;
	if (SPI_processed == 1)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		m->skip = !isnull && DatumGetBool(d);
	}
}

/* A load with no chunk yet: apply skips the table's changes until its first. */
static void
mark_pending_fn(void *arg)
{
	mapping_call *m = arg;
	Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		vals[3];

	vals[0] = CStringGetTextDatum(m->server_name);
	vals[1] = CStringGetTextDatum(m->db);
	vals[2] = CStringGetTextDatum(m->table);
	if (SPI_execute_with_args("INSERT INTO binlog_fdw.table_mapping AS m "
							  "(server_name, source_schema, source_table, load_key_hi, load_file, load_pos, load_rows) "
							  "VALUES ($1, $2, $3, '{}', '{}', '{}', '{}') "
							  "ON CONFLICT (server_name, source_schema, source_table) DO UPDATE "
							  "SET sync_file = NULL, sync_pos = NULL, sync_gtid = NULL, load_key_hi = '{}', load_file = '{}', "
							  "load_pos = '{}', load_rows = '{}', load_digest = NULL, load_created = NULL, "
							  "load_key_columns = NULL, load_estimate = NULL, load_split = NULL, "
							  "load_range = NULL, synced_at = now()",
							  3, types, vals, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not mark the reload of %s.%s", m->db, m->table);
}

/* Is the binlog of the source's acknowledged position gone from the source? */
static bool
position_lost(const blpg_source_config *cfg, const bl_source_options *so, blpg_position *pos)
{
	char	  **files = NULL;
	int			nfiles = 0;
	int64_t		expire = 0;
	bl_error	err;
	bool		found = false;

	if (!blpg_state_load(cfg->serverid, pos) || pos->file[0] == '\0')
		return false;
	memset(&err, 0, sizeof(err));
	if (bl_source_retention(so, &files, &nfiles, &expire, &err) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
				 errmsg("source \"%s\": could not list the source's binlogs for the reload: %s",
						cfg->server_name, err.message),
				 errhint("The source's worker starts the reload again.")));
	for (int i = 0; i < nfiles && !found; i++)
		found = strcmp(files[i], pos->file) == 0;
	bl_source_free_files(files, nfiles);
	return !found;
}

/*
 * Mark the tables and move the source to the position now (see the file's
 * comment); the tables to copy, or NIL when the position is not lost.
 */
static List *
reload_begin(const blpg_source_config *cfg, const bl_source_options *so,
			 const blpg_apply_options *opts)
{
	blpg_position lost;
	blpg_position now;
	reload_listing listing;
	List	   *volatile tables = NIL;
	List	   *volatile names = NIL;
	bl_snapshot *volatile snap = NULL;
	bl_schema_cache *cache;
	bl_error	err;
	char		file[BLPG_FILE_LEN];
	uint64_t	pos = 0;
	char	   *raw = NULL;
	ListCell   *lc;

	if (!position_lost(cfg, so, &lost))
		return NIL;
	memset(&err, 0, sizeof(err));
	snap = bl_snapshot_open(so, &err);
	if (snap == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
				 errmsg("could not connect to source \"%s\" for the reload: %s",
						cfg->server_name, err.message),
				 errhint("The source's worker starts the reload again.")));
	PG_TRY();
	{
		memset(&listing, 0, sizeof(listing));
		listing.filter = blpg_filter_create(cfg->include, cfg->exclude);
		cache = bl_snapshot_schema_cache(snap, &err);
		if (cache == NULL || bl_schema_cache_list(cache, table_listed, db_listed, &listing, &err) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_UNABLE_TO_CREATE_EXECUTION),
					 errmsg("could not list the tables of source \"%s\" for the reload: %s",
							cfg->server_name, cache ? err.message : "out of memory")));
		bl_schema_cache_destroy(cache);
		foreach(lc, listing.all)
		{
			const char *source = strVal(lfirst(lc));
			mapping_call m;
			char	   *db,
					   *table;

			blpg_split_source_table(source, &db, &table);
			m.server_name = cfg->server_name;
			m.db = db;
			m.table = table;
			blpg_run_as_owner(mapping_skip_fn, &m);
			if (m.skip || !OidIsValid(blpg_snapshot_target_of(cfg->server_name, source, opts)))
				continue;
			tables = lappend(tables, makeString((char *) source));
			names = lappend(names, makeString(db));
			names = lappend(names, makeString(table));
		}
		/* apply is inside none of them from here to the commit */
		if (names != NIL)
			blpg_sync_lock_tables(cfg->serverid, names);
		{
			int			nlocked;
			bl_snapshot_table *locked = blpg_snapshot_tables(names, &nlocked);

			if (bl_snapshot_start(snap, locked, nlocked, file, sizeof(file), &pos, &raw, &err) != 0)
				ereport(ERROR,
						(errcode(blpg_snapshot_start_errcode(snap)),
						 errmsg("could not take a snapshot of source \"%s\" for the reload: %s",
								cfg->server_name, err.message),
						 errhint("%s", blpg_snapshot_start_hint(snap, "The source's worker starts the reload again."))));
		}
		/* the decoder's definitions from the new position on */
		if (listing.all != NIL)
			blpg_snapshot_seed_history(cfg->serverid, cfg->server_name, snap, listing.all,
									   file, pos);
	}
	PG_FINALLY();
	{
		bl_snapshot_end(snap);
	}
	PG_END_TRY();

	foreach(lc, tables)
	{
		mapping_call m;
		char	   *db,
				   *table;

		blpg_split_source_table(strVal(lfirst(lc)), &db, &table);
		m.server_name = cfg->server_name;
		m.db = db;
		m.table = table;
		blpg_run_as_owner(mark_pending_fn, &m);
	}
	memset(&now, 0, sizeof(now));
	strlcpy(now.file, file, sizeof(now.file));
	now.pos = pos;
	now.gtid_state = raw && raw[0] ? pstrdup(raw) : NULL;
	free(raw);
	blpg_state_save(cfg->serverid, &now);
	blpg_state_set_reload_tables(cfg->serverid, tables);
	ereport(WARNING,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg_plural("source \"%s\": binlog %s, which holds the acknowledged position %s:%llu, is no longer on the source; re-loading %d table from %s:%llu",
						   "source \"%s\": binlog %s, which holds the acknowledged position %s:%llu, is no longer on the source; re-loading %d tables from %s:%llu",
						   list_length(tables),
						   cfg->server_name, lost.file, lost.file, (unsigned long long) lost.pos,
						   list_length(tables), file, (unsigned long long) pos),
			 errdetail("The changes between the two positions cannot be read. The server option lost_position is 'reload': the tables are copied again while the source streams on from the new position."),
			 errhint("binlog_fdw.load_status shows the reload's progress; source_state.reload_tables lists the tables still to copy.")));
	return tables;
}

/*
 * A reloader has no portal: it keeps an active snapshot of its own, taken
 * again after each commit.
 */
static void
reload_commit(void)
{
	PopActiveSnapshot();
	SPI_commit();
	PushActiveSnapshot(GetTransactionSnapshot());
}

void
blpg_reloader_main(Datum main_arg)
{
	int			index = DatumGetInt32(main_arg);
	blpg_slot  *slot;
	uint64		token;
	bool		mine;
	Oid			dboid,
				serverid,
				userid;
	LOCKTAG		tag;

	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	if (blpg_shared == NULL || index < 0 || index >= blpg_shared->max_sources)
		proc_exit(0);
	memcpy(&token, MyBgworkerEntry->bgw_extra, sizeof(token));
	slot = &blpg_shared->slots[index];
	LWLockAcquire(&blpg_shared->lock, LW_SHARED);
	LWLockAcquire(&slot->lock, LW_SHARED);
	mine = slot->in_use && slot->token == token;
	dboid = slot->dboid;
	serverid = slot->serverid;
	userid = slot->userid;
	LWLockRelease(&slot->lock);
	LWLockRelease(&blpg_shared->lock);
	if (!mine)
		proc_exit(0);
	BackgroundWorkerInitializeConnectionByOid(dboid, userid, 0);
	pgstat_report_appname("binlog_fdw reloader");

	/* one reloader per source */
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, serverid, RELOAD_LOCK_KEY, 2);
	if (LockAcquire(&tag, ExclusiveLock, true, true) == LOCKACQUIRE_NOT_AVAIL)
		proc_exit(0);

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	{
		blpg_source_config *cfg;
		blpg_apply_options opts;
		bl_source_options so;
		List	   *tables;
		int			done = 0;
		MemoryContext outer;

		if (SPI_connect_ext(SPI_OPT_NONATOMIC) != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		PushActiveSnapshot(GetTransactionSnapshot());
		outer = AllocSetContextCreate(TopMemoryContext, "binlog_fdw reload", ALLOCSET_DEFAULT_SIZES);
		MemoryContextSwitchTo(outer);
		cfg = blpg_load_config(serverid, userid);
		pgstat_report_activity(STATE_RUNNING, psprintf("binlog_fdw reload of source %s",
													   cfg->server_name));
		blpg_apply_options_load(serverid, &opts);
		blpg_snapshot_source_options(cfg, &so);
		tables = cfg->lost_position_reload ? blpg_state_reload_tables(serverid) : NIL;
		if (cfg->lost_position_reload && tables == NIL)
		{
			tables = reload_begin(cfg, &so, &opts);
			MemoryContextSwitchTo(outer);
			if (tables == NIL)
				ereport(LOG,
						(errmsg("source \"%s\": nothing to reload (its position is on the source, or no table has a target)",
								cfg->server_name)));
			reload_commit();
		}
		while (tables != NIL)
		{
			const char *source = strVal(linitial(tables));

			MemoryContextSwitchTo(outer);
			if (blpg_load_reload_table(cfg->server_name, serverid, &so, &opts, source, reload_commit))
				done++;
			MemoryContextSwitchTo(outer);
			tables = list_delete_first(tables);
			blpg_state_set_reload_tables(serverid, tables);
			reload_commit();
			CHECK_FOR_INTERRUPTS();
		}
		if (done > 0)
			ereport(LOG,
					(errmsg_plural("source \"%s\": the reload after the lost position copied %d table",
								   "source \"%s\": the reload after the lost position copied %d tables",
								   done, cfg->server_name, done)));
		PopActiveSnapshot();
		SPI_finish();
		CommitTransactionCommand();
	}
	pgstat_report_activity(STATE_IDLE, NULL);
	proc_exit(0);
}
