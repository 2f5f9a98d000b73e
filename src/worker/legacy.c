/*
 * legacy.c
 *	  0.1's list of started sources: the file $PGDATA/pg_binlog_fdw/autostart,
 *	  lines "dboid serverid userid continuous name".  The library of 0.2
 *	  reads it for databases whose extension is still at 0.1 (their sources
 *	  keep starting with the server between the library's installation and
 *	  ALTER EXTENSION binlog_fdw UPDATE); stop() there still removes a line;
 *	  the update moves a database's lines into binlog_fdw.started_sources
 *	  (binlog_fdw_legacy_autostart(), called by binlog_fdw--0.1--0.2.sql)
 *	  and they leave the file when it commits.
 *
 * The file is guarded by blpg_shared->lock (when the library is preloaded).
 */
#include "worker/worker.h"

#include "commands/extension.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/builtins.h"

#include <unistd.h>

PG_FUNCTION_INFO_V1(binlog_fdw_legacy_autostart);

#define LEGACY_DIR		"pg_binlog_fdw"
#define LEGACY_FILE		LEGACY_DIR "/autostart"

static void
lock_file(LWLockMode mode)
{
	if (blpg_shared)
		LWLockAcquire(&blpg_shared->lock, mode);
}

static void
unlock_file(void)
{
	if (blpg_shared)
		LWLockRelease(&blpg_shared->lock);
}

/* All lines (caller holds the lock); a List of blpg_legacy_entry. */
static List *
read_file(void)
{
	FILE	   *f = AllocateFile(LEGACY_FILE, "r");
	List	   *out = NIL;
	char		line[512];

	if (f == NULL)
		return NIL;
	while (fgets(line, sizeof(line), f))
	{
		unsigned int d,
					s,
					u,
					c;
		char		name[NAMEDATALEN];

		if (sscanf(line, "%u %u %u %u %63s", &d, &s, &u, &c, name) == 5)
		{
			blpg_legacy_entry *e = palloc0(sizeof(blpg_legacy_entry));

			e->dboid = d;
			e->serverid = s;
			e->userid = u;
			e->continuous = c != 0;
			strlcpy(e->name, name, NAMEDATALEN);
			out = lappend(out, e);
		}
	}
	FreeFile(f);
	return out;
}

/* Rewrite the file without the lines of dboid (and serverid, if valid). */
static bool
remove_lines(Oid dboid, Oid serverid)
{
	List	   *all = read_file();
	ListCell   *lc;
	FILE	   *f;
	const char *tmp = LEGACY_FILE ".tmp";
	bool		changed = false;
	int			kept = 0;

	foreach(lc, all)
	{
		blpg_legacy_entry *e = lfirst(lc);

		if (e->dboid == dboid && (!OidIsValid(serverid) || e->serverid == serverid))
			changed = true;
		else
			kept++;
	}
	if (!changed)
		return true;
	if (kept == 0)
		return unlink(LEGACY_FILE) == 0;
	f = AllocateFile(tmp, "w");
	if (f == NULL)
		return false;
	foreach(lc, all)
	{
		blpg_legacy_entry *e = lfirst(lc);

		if (!(e->dboid == dboid && (!OidIsValid(serverid) || e->serverid == serverid)))
			fprintf(f, "%u %u %u %d %s\n", e->dboid, e->serverid, e->userid,
					e->continuous ? 1 : 0, e->name);
	}
	if (fflush(f) != 0 || pg_fsync(fileno(f)) != 0)
	{
		FreeFile(f);
		return false;
	}
	FreeFile(f);
	return durable_rename(tmp, LEGACY_FILE, LOG) == 0;
}

List *
blpg_legacy_entries(Oid dboid)
{
	List	   *all;
	List	   *out = NIL;
	ListCell   *lc;

	lock_file(LW_SHARED);
	all = read_file();
	unlock_file();
	foreach(lc, all)
	{
		blpg_legacy_entry *e = lfirst(lc);

		if (e->dboid == dboid)
			out = lappend(out, e);
	}
	return out;
}

void
blpg_legacy_remove(Oid dboid, Oid serverid)
{
	bool		ok;

	lock_file(LW_EXCLUSIVE);
	ok = remove_lines(dboid, serverid);
	unlock_file();
	if (!ok)
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not rewrite file \"%s\": %m", LEGACY_FILE)));
}

void
blpg_legacy_remove_database(Oid dboid)
{
	blpg_legacy_remove(dboid, InvalidOid);
}

/*
 * binlog_fdw_legacy_autostart(OUT srvid oid, OUT userid oid): this
 * database's lines of the file; they are removed when the transaction
 * commits.  Only for the update script (it is dropped right after).
 */
Datum
binlog_fdw_legacy_autostart(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ListCell   *lc;

	if (!creating_extension)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("binlog_fdw_legacy_autostart() is for ALTER EXTENSION binlog_fdw UPDATE only")));
	InitMaterializedSRF(fcinfo, 0);
	foreach(lc, blpg_legacy_entries(MyDatabaseId))
	{
		blpg_legacy_entry *e = lfirst(lc);
		Datum		values[2];
		bool		nulls[2] = {false, false};

		values[0] = ObjectIdGetDatum(e->serverid);
		values[1] = ObjectIdGetDatum(e->userid);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	blpg_at_commit_legacy_cleanup();
	return (Datum) 0;
}
