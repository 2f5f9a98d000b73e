/*
 * started.c
 *	  binlog_fdw.started_sources: the sources start() started and stop()
 *	  has not stopped, one row per source (server name, the role whose
 *	  user mapping the worker uses).  What runs follows the table: the rows
 *	  are written in the caller's transaction and the workers change when
 *	  it commits (commit.c); at server start, and when a standby is
 *	  promoted, the launcher's starters start a worker for every row of
 *	  every database (launcher.c).  A table rather than a file under the
 *	  data directory: it is replicated to standbys and kept by pg_upgrade.
 *
 * Accessed through SPI as the extension's owner (src/base/owner.c).
 */
#include "worker/worker.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"

typedef struct started_call
{
	const char *name;
	Oid			roleid;
	bool		existed;
	List	   *rows;
	MemoryContext cxt;
} started_call;

static void
record_fn(void *arg)
{
	started_call *c = arg;
	Oid			argtypes[2] = {TEXTOID, OIDOID};
	Datum		args[2];

	args[0] = CStringGetTextDatum(c->name);
	args[1] = ObjectIdGetDatum(c->roleid);
	if (SPI_execute_with_args("SELECT 1 FROM binlog_fdw.started_sources WHERE server_name = $1",
							  1, argtypes, args, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read binlog_fdw.started_sources");
	c->existed = SPI_processed > 0;
	if (SPI_execute_with_args("INSERT INTO binlog_fdw.started_sources (server_name, started_by) "
							  "VALUES ($1, $2::pg_catalog.regrole) ON CONFLICT (server_name) DO UPDATE "
							  "SET started_by = excluded.started_by, started_at = excluded.started_at",
							  2, argtypes, args, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not write binlog_fdw.started_sources");
}

bool
blpg_started_record(const char *name, Oid roleid)
{
	started_call c = {name, roleid, false, NIL, NULL};

	blpg_run_as_owner(record_fn, &c);
	return c.existed;
}

static void
forget_fn(void *arg)
{
	started_call *c = arg;
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];

	args[0] = CStringGetTextDatum(c->name);
	if (SPI_execute_with_args("DELETE FROM binlog_fdw.started_sources WHERE server_name = $1",
							  1, argtypes, args, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not write binlog_fdw.started_sources");
	c->existed = SPI_processed > 0;
}

bool
blpg_started_forget(const char *name)
{
	started_call c = {name, InvalidOid, false, NIL, NULL};

	blpg_run_as_owner(forget_fn, &c);
	return c.existed;
}

static void
list_fn(void *arg)
{
	started_call *c = arg;

	if (SPI_execute("SELECT server_name, started_by::pg_catalog.oid FROM binlog_fdw.started_sources ORDER BY 1",
					true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read binlog_fdw.started_sources");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		MemoryContext old = MemoryContextSwitchTo(c->cxt);
		blpg_started *s = palloc0(sizeof(blpg_started));
		bool		isnull;

		s->server_name = pstrdup(SPI_getvalue(tup, SPI_tuptable->tupdesc, 1));
		s->roleid = DatumGetObjectId(SPI_getbinval(tup, SPI_tuptable->tupdesc, 2, &isnull));
		c->rows = lappend(c->rows, s);
		MemoryContextSwitchTo(old);
	}
}

List *
blpg_started_list(void)
{
	started_call c = {NULL, InvalidOid, false, NIL, CurrentMemoryContext};

	blpg_run_as_owner(list_fn, &c);
	return c.rows;
}
