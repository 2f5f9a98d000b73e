/*
 * origins.c
 *	  The PostgreSQL replication origin of each source, named
 *	  "binlog_fdw_<database oid>_<server oid>" (subscriptions use
 *	  "pg_<subscription oid>"; servers are per database): its name, its
 *	  drop with the server, and the clean-up of origins whose server or
 *	  database is gone.  Origins are cluster-wide and each one keeps a
 *	  replication state slot (max_replication_slots of them in PostgreSQL
 *	  15), so none may outlive its source.  apply marks its transactions
 *	  with the origin (src/apply/origin.c).
 */
#include "base/base.h"

#include "access/xact.h"
#include "catalog/pg_database.h"
#include "executor/spi.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "replication/origin.h"
#include "replication/slot.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/syscache.h"

#define ORIGIN_PREFIX "binlog_fdw_"

void
blpg_origin_name(Oid dboid, Oid serverid, char *buf, size_t len)
{
	snprintf(buf, len, ORIGIN_PREFIX "%u_%u", dboid, serverid);
}

/*
 * Drop the origin of a server of this database (in the dropping
 * transaction; the origin's progress is cleared at once).  Waits while a
 * transaction of an apply is using it.
 */
void
blpg_origin_drop(Oid serverid)
{
	char		name[64];

	if (max_replication_slots == 0)
		return;
	blpg_origin_name(MyDatabaseId, serverid, name, sizeof(name));
	replorigin_drop_by_name(name, true, false);
}

/* Drop one origin unless something uses it (then it stays for later). */
static void
drop_if_unused(const char *name)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;

	BeginInternalSubTransaction(NULL);
	PG_TRY();
	{
		replorigin_drop_by_name(name, true, true);
		ReleaseCurrentSubTransaction();
		ereport(LOG,
				(errmsg("binlog_fdw: dropped replication origin %s, whose source no longer exists", name)));
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
}

/*
 * Drop binlog_fdw's origins of this database whose server is gone, and of
 * databases that are gone (DROP DATABASE drops no server one by one).  In
 * a transaction, by a process that may read pg_replication_origin.
 */
void
blpg_origins_clean(void)
{
	List	   *names = NIL;
	ListCell   *lc;

	if (max_replication_slots == 0)
		return;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute("SELECT roname FROM pg_catalog.pg_replication_origin "
					"WHERE roname LIKE 'binlog\\_fdw\\_%\\_%'", true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read pg_replication_origin");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		char	   *name = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		unsigned int db,
					srv;
		char		tail;
		MemoryContext old;

		if (name == NULL ||
			sscanf(name, ORIGIN_PREFIX "%u_%u%c", &db, &srv, &tail) != 2)
			continue;
		if (db == MyDatabaseId ?
			GetForeignServerExtended((Oid) srv, FSV_MISSING_OK) != NULL :
			SearchSysCacheExists1(DATABASEOID, ObjectIdGetDatum((Oid) db)))
			continue;
		old = MemoryContextSwitchTo(CurTransactionContext);
		names = lappend(names, pstrdup(name));
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
	foreach(lc, names)
		drop_if_unused(lfirst(lc));
}
