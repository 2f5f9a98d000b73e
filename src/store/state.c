/*
 * state.c
 *	  binlog_fdw.source_state: one row per source with the position where
 *	  streaming resumes (the start of the first transaction not fully
 *	  acknowledged, plus how many of its changes were), written through SPI
 *	  in the caller's transaction so that it commits or aborts together with
 *	  whatever the caller did with the changes.
 *
 * Rows are keyed by the server's name, which survives pg_dump/restore and
 * pg_upgrade (server OIDs do not); ALTER SERVER ... RENAME carries the row
 * along (src/base/tables.c) and DROP SERVER deletes it (the extension's
 * sql_drop trigger).  Callers name the source by its server's OID: each
 * access first takes a share lock on the server, the lock a rename or a
 * drop takes exclusively, and then reads the server's current name, so a
 * write never lands under a name the server no longer has.  srvid records
 * the OID of the server that last wrote the row.
 *
 * Lock order: the table first (RowExclusiveLock, what a write takes
 * anyway), then the server.  DROP EXTENSION ... CASCADE locks the
 * extension's tables before the servers that depend on its wrapper; a
 * worker that took the server first and then waited for the table
 * deadlocked with it.
 *
 * A row under no server's name is an orphan: listed by the status view,
 * never deleted or overwritten here.  A server without a row whose OID is
 * an orphan's srvid was renamed while the event trigger did not run: its
 * start is an error rather than a start from the "start" option.
 *
 * Until ALTER EXTENSION binlog_fdw UPDATE, a database may still have 0.1's
 * table, keyed by srvid (blpg_tables_legacy()): it is read and written the
 * 0.1 way.
 *
 * Consumers may be unprivileged roles granted the SQL functions; the table
 * itself belongs to the extension's owner, so the accesses run as that owner
 * (blpg_run_as_owner, src/base/owner.c).
 *
 * The GTID state has no size limit: it is text in the table and palloc'd
 * text in a blpg_position (NULL: not known, which leaves the recorded
 * state as it was).  Binlog file names and single GTIDs are bounded; a
 * longer one is an error, never cut.
 */
#include "store/store.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_foreign_server.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

typedef struct state_call
{
	Oid			serverid;
	const char *server_name;	/* its current name */
	bool		legacy;			/* 0.1's table */
	blpg_position *pos;
	bool		found;
	char	   *orphan;			/* a row of another name with this srvid */
	List	   *orphans;		/* blpg_state_orphans(), in cxt */
	MemoryContext cxt;
} state_call;

void
blpg_copy_bounded(char *dst, size_t dstlen, const char *src, size_t len, const char *what)
{
	if (len >= dstlen)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s of %zu bytes is too long (at most %zu bytes are supported): \"%.*s...\"",
						what, len, dstlen - 1, (int) Min(len, 100), src)));
	memcpy(dst, src, len);
	dst[len] = '\0';
}

void
blpg_position_to_slot(const blpg_position *pos, blpg_slot_position *out)
{
	memcpy(out->file, pos->file, sizeof(out->file));
	out->pos = pos->pos;
	out->skip = pos->skip;
	memcpy(out->gtid, pos->gtid, sizeof(out->gtid));
}

/* The state table, locked before the server (see the lock order above). */
static void
state_lock_table(void)
{
	Oid			nsp = get_namespace_oid("binlog_fdw", true);
	Oid			rel = OidIsValid(nsp) ? get_relname_relid("source_state", nsp) : InvalidOid;

	if (OidIsValid(rel))
		LockRelationOid(rel, RowExclusiveLock);
}

/* Lock the server against rename and drop; its current name. */
static void
state_call_init(state_call *c, Oid serverid)
{
	ForeignServer *server;

	memset(c, 0, sizeof(*c));
	state_lock_table();
	LockDatabaseObject(ForeignServerRelationId, serverid, 0, AccessShareLock);
	server = GetForeignServerExtended(serverid, FSV_MISSING_OK);
	if (server == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("the foreign server of binlog_fdw source with OID %u was dropped", serverid)));
	c->serverid = serverid;
	c->server_name = server->servername;
	c->legacy = blpg_tables_legacy();
}

static void
read_position(state_call *c)
{
	HeapTuple	tup = SPI_tuptable->vals[0];
	TupleDesc	desc = SPI_tuptable->tupdesc;
	char	   *s;
	bool		isnull;
	Datum		d;

	s = SPI_getvalue(tup, desc, 1);
	blpg_copy_bounded(c->pos->file, sizeof(c->pos->file), s ? s : "", s ? strlen(s) : 0,
					  "binlog file name in binlog_fdw.source_state");
	d = SPI_getbinval(tup, desc, 2, &isnull);
	c->pos->pos = isnull ? 0 : (uint64) DatumGetInt64(d);
	d = SPI_getbinval(tup, desc, 3, &isnull);
	c->pos->skip = isnull ? 0 : (uint64) DatumGetInt64(d);
	s = SPI_getvalue(tup, desc, 4);
	blpg_copy_bounded(c->pos->gtid, sizeof(c->pos->gtid), s ? s : "", s ? strlen(s) : 0,
					  "GTID in binlog_fdw.source_state");
	/* SPI's memory goes at SPI_finish: the state goes to the caller's */
	s = SPI_getvalue(tup, desc, 5);
	c->pos->gtid_state = s ? MemoryContextStrdup(c->cxt, s) : NULL;
	/* a position needs a file or, resuming by GTID, a GTID state */
	c->found = c->pos->file[0] != '\0' ||
		(c->pos->gtid_state != NULL && c->pos->gtid_state[0] != '\0');
}

static void
load_fn(void *arg)
{
	state_call *c = arg;
	Oid			argtypes[1];
	Datum		args[1];

	if (c->legacy)
	{
		argtypes[0] = OIDOID;
		args[0] = ObjectIdGetDatum(c->serverid);
		if (SPI_execute_with_args("SELECT file, pos, skip, gtid, gtid_state "
								  "FROM binlog_fdw.source_state WHERE srvid = $1",
								  1, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
			elog(ERROR, "could not read binlog_fdw.source_state");
		if (SPI_processed == 1)
			read_position(c);
		return;
	}
	argtypes[0] = TEXTOID;
	args[0] = CStringGetTextDatum(c->server_name);
	if (SPI_execute_with_args("SELECT file, pos, skip, gtid, gtid_state "
							  "FROM binlog_fdw.source_state WHERE server_name = $1",
							  1, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read binlog_fdw.source_state");
	if (SPI_processed == 1)
	{
		read_position(c);
		return;
	}
	/* no row: was this server renamed behind the event trigger's back? */
	argtypes[0] = OIDOID;
	args[0] = ObjectIdGetDatum(c->serverid);
	if (SPI_execute_with_args("SELECT server_name FROM binlog_fdw.source_state s "
							  "WHERE srvid = $1 AND NOT EXISTS (SELECT FROM pg_catalog.pg_foreign_server f "
							  "WHERE f.srvname = s.server_name) ORDER BY 1 LIMIT 1",
							  1, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read binlog_fdw.source_state");
	if (SPI_processed == 1)
		c->orphan = MemoryContextStrdup(c->cxt, SPI_getvalue(SPI_tuptable->vals[0],
															   SPI_tuptable->tupdesc, 1));
}

bool
blpg_state_load(Oid serverid, blpg_position *pos)
{
	state_call	c;
	char	   *orphan;

	state_call_init(&c, serverid);
	memset(pos, 0, sizeof(*pos));
	c.pos = pos;
	c.cxt = CurrentMemoryContext;
	blpg_run_as_owner(load_fn, &c);
	if (c.orphan)
	{
		orphan = c.orphan;
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("source \"%s\" has no recorded position, but binlog_fdw.source_state holds one of its server under the name \"%s\"",
						c.server_name, orphan),
				 errdetail("No server has that name: the server was probably renamed while the extension's event triggers did not run. Starting from the \"start\" option instead would skip or repeat changes."),
				 errhint("To resume from that position: UPDATE binlog_fdw.source_state SET server_name = %s WHERE server_name = %s. To start from the \"start\" option: DELETE FROM binlog_fdw.source_state WHERE server_name = %s.",
						 quote_literal_cstr(c.server_name), quote_literal_cstr(orphan),
						 quote_literal_cstr(orphan))));
	}
	return c.found;
}

typedef struct gtid_state_call
{
	const char *server_name;
	char	   *gtid_state;
	MemoryContext cxt;
} gtid_state_call;

static void
gtid_state_fn(void *arg)
{
	gtid_state_call *c = arg;
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];

	args[0] = CStringGetTextDatum(c->server_name);
	if (SPI_execute_with_args("SELECT gtid_state FROM binlog_fdw.source_state WHERE server_name = $1",
							  1, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read binlog_fdw.source_state");
	if (SPI_processed == 1)
	{
		char	   *s = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		c->gtid_state = s ? MemoryContextStrdup(c->cxt, s) : NULL;
	}
}

/*
 * The recorded GTID state of the source of that name, for display: no
 * lock, no error when its server is gone or being dropped (NULL: none).
 */
char *
blpg_state_gtid_state(const char *server_name)
{
	gtid_state_call c = {server_name, NULL, CurrentMemoryContext};

	blpg_run_as_owner(gtid_state_fn, &c);
	return c.gtid_state;
}

static void
save_fn(void *arg)
{
	state_call *c = arg;
	const blpg_position *pos = c->pos;
	Oid			argtypes[7] = {OIDOID, TEXTOID, TEXTOID, INT8OID, INT8OID, TEXTOID, TEXTOID};
	Datum		args[7];
	char		nulls[8] = "       ";
	const char *sql;

	args[0] = ObjectIdGetDatum(c->serverid);
	args[1] = CStringGetTextDatum(c->server_name);
	args[2] = CStringGetTextDatum(pos->file);
	args[3] = Int64GetDatum((int64) pos->pos);
	args[4] = Int64GetDatum((int64) pos->skip);
	args[5] = CStringGetTextDatum(pos->gtid);
	args[6] = pos->gtid_state ? CStringGetTextDatum(pos->gtid_state) : (Datum) 0;
	if (pos->gtid[0] == '\0')
		nulls[5] = 'n';
	if (pos->gtid_state == NULL)
		nulls[6] = 'n';
	if (c->legacy)
		sql = "INSERT INTO binlog_fdw.source_state AS s "
			"(srvid, server_name, file, pos, skip, gtid, gtid_state, updated_at) "
			"VALUES ($1, $2, $3, $4, $5, $6, $7, clock_timestamp()) "
			"ON CONFLICT (srvid) DO UPDATE SET server_name = excluded.server_name, "
			"file = excluded.file, pos = excluded.pos, skip = excluded.skip, "
			"gtid = coalesce(excluded.gtid, s.gtid), "
			"gtid_state = coalesce(excluded.gtid_state, s.gtid_state), "
			"updated_at = excluded.updated_at";
	else
		sql = "INSERT INTO binlog_fdw.source_state AS s "
			"(srvid, server_name, file, pos, skip, gtid, gtid_state, updated_at) "
			"VALUES ($1, $2, $3, $4, $5, $6, $7, clock_timestamp()) "
			"ON CONFLICT (server_name) DO UPDATE SET srvid = excluded.srvid, "
			"file = excluded.file, pos = excluded.pos, skip = excluded.skip, "
			"gtid = coalesce(excluded.gtid, s.gtid), "
			"gtid_state = coalesce(excluded.gtid_state, s.gtid_state), "
			"updated_at = excluded.updated_at";
	if (SPI_execute_with_args(sql, 7, argtypes, args, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not write binlog_fdw.source_state");
}

void
blpg_state_save(Oid serverid, const blpg_position *pos)
{
	state_call	c;

	state_call_init(&c, serverid);
	c.pos = (blpg_position *) pos;
	blpg_run_as_owner(save_fn, &c);
}

static void
forget_fn(void *arg)
{
	state_call *c = arg;
	Oid			argtypes[1];
	Datum		args[1];

	if (c->legacy)
	{
		argtypes[0] = OIDOID;
		args[0] = ObjectIdGetDatum(c->serverid);
	}
	else
	{
		argtypes[0] = TEXTOID;
		args[0] = CStringGetTextDatum(c->server_name);
	}
	if (SPI_execute_with_args(c->legacy ?
							  "DELETE FROM binlog_fdw.source_state WHERE srvid = $1" :
							  "DELETE FROM binlog_fdw.source_state WHERE server_name = $1",
							  1, argtypes, args, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not write binlog_fdw.source_state");
	/* the schema history belongs to the position */
	if (!c->legacy &&
		SPI_execute_with_args("DELETE FROM binlog_fdw.schema_history WHERE server_name = $1",
							  1, argtypes, args, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not write binlog_fdw.schema_history");
}

void
blpg_state_forget(Oid serverid)
{
	state_call	c;

	state_call_init(&c, serverid);
	blpg_run_as_owner(forget_fn, &c);
}

static void
orphans_fn(void *arg)
{
	state_call *c = arg;

	if (SPI_execute("SELECT server_name, srvid, file, pos, skip, gtid, gtid_state "
					"FROM binlog_fdw.source_state s WHERE NOT EXISTS "
					"(SELECT FROM pg_catalog.pg_foreign_server f "
					"JOIN pg_catalog.pg_foreign_data_wrapper w ON w.oid = f.srvfdw "
					"WHERE f.srvname = s.server_name AND w.fdwname = 'binlog_fdw') ORDER BY 1",
					true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read binlog_fdw.source_state");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		MemoryContext old = MemoryContextSwitchTo(c->cxt);
		blpg_orphan *o = palloc0(sizeof(blpg_orphan));
		char	   *s;
		bool		isnull;
		Datum		d;

		o->server_name = pstrdup(SPI_getvalue(tup, desc, 1));
		o->srvid = DatumGetObjectId(SPI_getbinval(tup, desc, 2, &isnull));
		s = SPI_getvalue(tup, desc, 3);
		blpg_copy_bounded(o->pos.file, sizeof(o->pos.file), s ? s : "", s ? strlen(s) : 0,
						  "binlog file name in binlog_fdw.source_state");
		d = SPI_getbinval(tup, desc, 4, &isnull);
		o->pos.pos = isnull ? 0 : (uint64) DatumGetInt64(d);
		d = SPI_getbinval(tup, desc, 5, &isnull);
		o->pos.skip = isnull ? 0 : (uint64) DatumGetInt64(d);
		s = SPI_getvalue(tup, desc, 6);
		blpg_copy_bounded(o->pos.gtid, sizeof(o->pos.gtid), s ? s : "", s ? strlen(s) : 0,
						  "GTID in binlog_fdw.source_state");
		s = SPI_getvalue(tup, desc, 7);
		o->pos.gtid_state = s ? pstrdup(s) : NULL;
		c->orphans = lappend(c->orphans, o);
		MemoryContextSwitchTo(old);
	}
}

List *
blpg_state_orphans(void)
{
	state_call	c;

	memset(&c, 0, sizeof(c));
	if (blpg_tables_legacy())
		return NIL;
	c.cxt = CurrentMemoryContext;
	blpg_run_as_owner(orphans_fn, &c);
	return c.orphans;
}

/*
 * The tables a reload after a lost position still has to copy
 * (source_state.reload_tables, src/apply/reload.c): "db.table" Strings in
 * the caller's memory, NIL if none (or 0.1's table, which has no such
 * column).
 */
static void
reload_read_fn(void *arg)
{
	state_call *c = arg;
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	Datum		d;
	bool		isnull;

	args[0] = CStringGetTextDatum(c->server_name);
	if (SPI_execute_with_args("SELECT reload_tables FROM binlog_fdw.source_state WHERE server_name = $1",
							  1, argtypes, args, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read binlog_fdw.source_state");
	if (SPI_processed != 1)
		return;
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (!isnull)
	{
		Datum	   *elems;
		bool	   *nulls;
		int			n;
		MemoryContext old = MemoryContextSwitchTo(c->cxt);

		deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT,
						  &elems, &nulls, &n);
		for (int i = 0; i < n; i++)
			if (!nulls[i])
				c->orphans = lappend(c->orphans, makeString(TextDatumGetCString(elems[i])));
		MemoryContextSwitchTo(old);
	}
}

List *
blpg_state_reload_tables(Oid serverid)
{
	state_call	c;

	state_call_init(&c, serverid);
	if (c.legacy)
		return NIL;
	c.cxt = CurrentMemoryContext;
	blpg_run_as_owner(reload_read_fn, &c);
	return c.orphans;
}

typedef struct reload_write_call
{
	state_call	c;
	List	   *tables;
} reload_write_call;

static void
reload_write_fn(void *arg)
{
	reload_write_call *r = arg;
	Oid			argtypes[2] = {TEXTOID, TEXTARRAYOID};
	Datum		args[2];
	char		nulls[2] = "  ";
	int			n = list_length(r->tables);

	args[0] = CStringGetTextDatum(r->c.server_name);
	if (n > 0)
	{
		Datum	   *elems = palloc(sizeof(Datum) * n);

		for (int i = 0; i < n; i++)
			elems[i] = CStringGetTextDatum(strVal(list_nth(r->tables, i)));
		args[1] = PointerGetDatum(construct_array(elems, n, TEXTOID, -1, false, TYPALIGN_INT));
	}
	else
		nulls[1] = 'n';
	if (SPI_execute_with_args("UPDATE binlog_fdw.source_state SET reload_tables = $2 WHERE server_name = $1",
							  2, argtypes, args, nulls, false, 0) != SPI_OK_UPDATE ||
		SPI_processed != 1)
		elog(ERROR, "could not write binlog_fdw.source_state");
}

/* Record the tables a reload still has to copy (NIL: done), in the caller's transaction. */
void
blpg_state_set_reload_tables(Oid serverid, List *tables)
{
	reload_write_call r;

	state_call_init(&r.c, serverid);
	if (r.c.legacy)
		elog(ERROR, "binlog_fdw.source_state of version 0.1 has no reload_tables");
	r.tables = tables;
	blpg_run_as_owner(reload_write_fn, &r);
}
