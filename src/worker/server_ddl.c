/*
 * server_ddl.c
 *	  What DDL on a source's foreign server does to the source.
 *
 *   DROP SERVER (also through DROP EXTENSION ... CASCADE, DROP FOREIGN
 *   DATA WRAPPER ... CASCADE, DROP OWNED): an object access hook sees the
 *   drop of every server, and of the extension, and stops their workers
 *   when the transaction commits (commit.c), so that a new server with the
 *   same server_id can stream at once.  The rows of the dropped server go
 *   in the dropping transaction through the extension's sql_drop trigger
 *   (binlog_fdw--0.2.sql); with DROP EXTENSION the tables go anyway.
 *
 *   ALTER SERVER ... RENAME: the extension's tables are keyed by server
 *   name, so the event trigger function binlog_fdw_follow_server_renames()
 *   (ddl_command_start, where the statement still has the old name)
 *   renames the server's rows in them, in the renaming transaction; the
 *   running slot takes the new name at commit.
 */
#include "worker/worker.h"

#include "catalog/objectaccess.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_foreign_server.h"
#include "commands/event_trigger.h"
#include "commands/extension.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/lmgr.h"

PG_FUNCTION_INFO_V1(binlog_fdw_follow_server_renames);

static object_access_hook_type prev_object_access_hook = NULL;

/* Every slot of this database, or the slot of serverid, stops at commit. */
static void
stop_at_commit(Oid serverid)
{
	for (int i = 0; i < blpg_shared->max_sources; i++)
	{
		blpg_slot  *slot = &blpg_shared->slots[i];
		bool		match;
		Oid			srv;
		char		name[NAMEDATALEN];

		LWLockAcquire(&blpg_shared->lock, LW_SHARED);
		match = slot->in_use && slot->dboid == MyDatabaseId &&
			(!OidIsValid(serverid) || slot->serverid == serverid);
		srv = slot->serverid;
		strlcpy(name, slot->server_name, sizeof(name));
		LWLockRelease(&blpg_shared->lock);
		if (match)
			blpg_at_commit_stop(srv, name);
	}
}

static void
object_access(ObjectAccessType access, Oid classId, Oid objectId, int subId, void *arg)
{
	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);
	if (access != OAT_DROP || blpg_shared == NULL)
		return;
	if (classId == ForeignServerRelationId)
	{
		stop_at_commit(objectId);
		blpg_origin_drop(objectId);
	}
	else if (classId == ExtensionRelationId)
	{
		char	   *name = get_extension_name(objectId);

		if (name && strcmp(name, "binlog_fdw") == 0)
			stop_at_commit(InvalidOid);
	}
}

void
blpg_server_ddl_init(void)
{
	prev_object_access_hook = object_access_hook;
	object_access_hook = object_access;
}

Datum
binlog_fdw_follow_server_renames(PG_FUNCTION_ARGS)
{
	EventTriggerData *trigdata;
	RenameStmt *stmt;
	ForeignServer *server;
	ForeignDataWrapper *fdw;
	const char *oldname;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_EVENT_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("binlog_fdw_follow_server_renames() is an event trigger function")));
	trigdata = (EventTriggerData *) fcinfo->context;
	if (!IsA(trigdata->parsetree, RenameStmt))
		PG_RETURN_VOID();
	stmt = (RenameStmt *) trigdata->parsetree;
	if (stmt->renameType != OBJECT_FOREIGN_SERVER)
		PG_RETURN_VOID();
	oldname = strVal(stmt->object);
	server = GetForeignServerByName(oldname, true);
	if (server == NULL)
		PG_RETURN_VOID();		/* the statement itself will fail */
	fdw = GetForeignDataWrapper(server->fdwid);
	if (strcmp(fdw->fdwname, "binlog_fdw") != 0)
		PG_RETURN_VOID();

	/*
	 * The lock the rename takes, taken first: writers of the position hold it
	 * shared while they write under the old name (src/store/state.c).
	 */
	LockDatabaseObject(ForeignServerRelationId, server->serverid, 0, AccessExclusiveLock);
	blpg_tables_rename_server(oldname, stmt->newname);
	if (blpg_shared)
		blpg_at_commit_rename(server->serverid, stmt->newname);
	PG_RETURN_VOID();
}
