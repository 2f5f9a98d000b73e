/*
 * control.c
 *	  Starting and stopping sources from SQL: binlog_fdw.start(server),
 *	  binlog_fdw.stop(server), binlog_fdw.reset(server).
 *
 * start() and stop() take effect when the transaction commits, as CREATE
 * and ALTER/DROP SUBSCRIPTION do: they write binlog_fdw.started_sources
 * (started.c) in the caller's transaction and leave the workers to the
 * commit (commit.c), so start() in the transaction that creates the server
 * works, and a rollback starts or stops nothing.  start() returns the pid
 * of a worker that already runs, else NULL (the worker starts at commit).
 * Whether a source has a durable position decides where it starts:
 * its "start" option applies only to a source that never recorded one.
 */
#include "worker/worker.h"

#include "access/xlog.h"
#include "commands/defrem.h"
#include "catalog/pg_foreign_data_wrapper.h"
#include "catalog/pg_foreign_server.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(binlog_fdw_start);
PG_FUNCTION_INFO_V1(binlog_fdw_stop);
PG_FUNCTION_INFO_V1(binlog_fdw_reset);

static void
require_not_in_recovery(const char *what)
{
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot %s a binlog_fdw source during recovery", what),
				 errdetail("Sources run on the primary; a standby starts the started ones when it is promoted.")));
}

static void
require_current_tables(const char *fn)
{
	if (blpg_tables_legacy())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("binlog_fdw.%s() needs the extension's tables of version 0.2, but this database has those of 0.1", fn),
				 errdetail("The library was updated; sources started before keep running."),
				 errhint("Run ALTER EXTENSION binlog_fdw UPDATE in this database.")));
}

/* Wait up to 10 s for a slot of a stopped source to be freed. */
static bool
wait_for_free_slot(void)
{
	TimestampTz deadline = GetCurrentTimestamp() + 10 * USECS_PER_SEC;

	for (;;)
	{
		bool		free_now = false;

		LWLockAcquire(&blpg_shared->lock, LW_SHARED);
		for (int i = 0; i < blpg_shared->max_sources; i++)
			if (!blpg_shared->slots[i].in_use)
				free_now = true;
		LWLockRelease(&blpg_shared->lock);
		if (free_now)
			return true;
		if (blpg_free_slots() == 0 || GetCurrentTimestamp() > deadline)
			return false;
		CHECK_FOR_INTERRUPTS();
		pg_usleep(20000);
	}
}

Datum
binlog_fdw_start(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	ForeignServer *server;
	blpg_slot  *slot;
	blpg_position pos;
	bool		continuous = false;
	bool		running = false;
	int			pid = 0;
	ListCell   *lc;

	blpg_require_shmem();
	require_not_in_recovery("start");
	server = blpg_lookup_source(name, ACL_USAGE);
	require_current_tables("start");
	/* fails early on missing user mapping or bad options */
	(void) blpg_load_config(server->serverid, GetUserId());
	foreach(lc, server->options)
	{
		DefElem    *def = (DefElem *) lfirst(lc);

		if (strcmp(def->defname, "continuous") == 0)
			continuous = strcmp(defGetString(def), "true") == 0;
	}
	/* fails on an orphaned position of this server (a missed rename) */
	(void) blpg_state_load(server->serverid, &pos);

	slot = blpg_find_slot(MyDatabaseId, server->serverid);
	if (slot == NULL && !wait_for_free_slot())
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("no free binlog_fdw source slot for server \"%s\"", server->servername),
				 errdetail("All %d slots (binlog_fdw.max_sources) are in use.",
						   blpg_shared->max_sources),
				 errhint("Stop another source, or raise binlog_fdw.max_sources and restart the server.")));
	if (slot)
	{
		LWLockAcquire(&slot->lock, LW_SHARED);
		/* a stop earlier in this transaction makes this a restart */
		running = slot->wanted && !slot->stop_requested &&
			!blpg_pending_stop(server->serverid);
		pid = slot->worker_pid;
		LWLockRelease(&slot->lock);
	}
	(void) blpg_started_record(server->servername, GetUserId());
	blpg_at_commit_start(server->serverid, server->servername, GetUserId(), continuous);
	if (!running)
		PG_RETURN_NULL();
	ereport(NOTICE,
			(errcode(ERRCODE_DUPLICATE_OBJECT),
			 errmsg("source \"%s\" is already started", server->servername)));
	if (pid == 0)
		PG_RETURN_NULL();		/* its worker is being launched */
	PG_RETURN_INT32(pid);
}

/*
 * The slot of a source whose foreign server was dropped while it ran, by
 * name (NULL if none): stop() must still be able to end it.  Only the role
 * that started it, or a superuser, may.
 */
static blpg_slot *
dropped_server_slot(const char *name)
{
	blpg_slot  *found = NULL;
	Oid			serverid = InvalidOid;
	Oid			userid = InvalidOid;

	LWLockAcquire(&blpg_shared->lock, LW_SHARED);
	for (int i = 0; i < blpg_shared->max_sources; i++)
	{
		blpg_slot  *slot = &blpg_shared->slots[i];

		if (slot->in_use && slot->wanted && slot->dboid == MyDatabaseId &&
			strcmp(slot->server_name, name) == 0)
		{
			found = slot;
			serverid = slot->serverid;
			userid = slot->userid;
		}
	}
	LWLockRelease(&blpg_shared->lock);
	if (found == NULL || GetForeignServerExtended(serverid, FSV_MISSING_OK) != NULL)
		return NULL;
	if (userid != GetUserId() && !superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to stop source \"%s\"", name),
				 errdetail("Its server was dropped; only the role that started it or a superuser can stop it.")));
	return found;
}

Datum
binlog_fdw_stop(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	Oid			serverid;
	const char *srvname;
	blpg_slot  *slot;
	bool		started = false;

	blpg_require_shmem();
	require_not_in_recovery("stop");
	if (GetForeignServerByName(name, true) == NULL &&
		(slot = dropped_server_slot(name)) != NULL)
	{
		serverid = slot->serverid;
		srvname = name;
	}
	else
	{
		ForeignServer *server = blpg_lookup_source(name, ACL_USAGE);

		serverid = server->serverid;
		srvname = server->servername;
		if (blpg_tables_legacy())
			blpg_legacy_remove(MyDatabaseId, serverid);
		else
			started = blpg_started_forget(srvname);
	}
	slot = blpg_find_slot(MyDatabaseId, serverid);
	if (slot && slot->wanted)
		started = true;
	blpg_at_commit_stop(serverid, srvname);
	PG_RETURN_BOOL(started);
}

Datum
binlog_fdw_reset(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	ForeignServer *server;
	blpg_slot  *slot;
	TimestampTz deadline = GetCurrentTimestamp() + 60 * USECS_PER_SEC;

	server = blpg_lookup_source(name, ACL_USAGE);
	for (;;)
	{
		bool		wanted;
		int			pid;

		slot = blpg_shared ? blpg_find_slot(MyDatabaseId, server->serverid) : NULL;
		if (slot == NULL)
			break;
		LWLockAcquire(&slot->lock, LW_SHARED);
		wanted = slot->wanted;
		pid = slot->worker_pid;
		LWLockRelease(&slot->lock);
		if (wanted)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_IN_USE),
					 errmsg("source \"%s\" is running", server->servername),
					 blpg_pending_stop(server->serverid) ?
					 errhint("Its stop in this transaction takes effect at commit: reset it after the commit.") :
					 errhint("Stop it first with binlog_fdw.stop('%s').", server->servername)));
		/* stopped: its worker is exiting and will free the slot */
		if (GetCurrentTimestamp() > deadline)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_IN_USE),
					 errmsg("the worker of source \"%s\" (pid %d) did not stop within 60 seconds",
							server->servername, pid)));
		CHECK_FOR_INTERRUPTS();
		pg_usleep(20000);
	}
	blpg_state_forget(server->serverid);
	PG_RETURN_VOID();
}
