/*
 * launcher.c
 *	  The launcher background worker and its per-database starters.
 *
 * The launcher runs whenever the server accepts writes: at server start,
 * after a crash restart, and on a standby from its promotion on (never
 * during recovery, nor in pg_upgrade's binary-upgrade servers, where it is
 * not registered).  It connects to no database.  First it starts, one
 * database after the other, a short-lived starter in every database that
 * accepts connections: the starter reads that database's started sources
 * (binlog_fdw.started_sources, or 0.1's autostart file while the extension
 * there is still at 0.1), takes a slot for each and launches its worker,
 * and reports the orphaned rows of binlog_fdw.source_state (a WARNING per
 * row).  Then, every second and whenever woken (a worker exits, a start or
 * stop commits), it looks at the slots:
 *   - a slot that nothing should use any more, once its workers are gone:
 *     released;
 *   - a restart (stop requested, still wanted), once its workers are gone:
 *     launched again;
 *   - a worker that died (no stop requested): launched again after 5 s
 *     through the crash-loop guard (launch.c), unless its database is gone;
 *   - a continuous source without its apply worker: launched (at most
 *     every 5 s).
 */
#include "worker/worker.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "catalog/pg_foreign_server.h"
#include "commands/defrem.h"
#include "commands/extension.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#define RELAUNCH_DELAY_MS	5000	/* between launches of a dying worker */
#define STARTING_TIMEOUT_S	60		/* a launched worker that never came */

void
blpg_register_launcher(void)
{
	BackgroundWorker bgw;

	blpg_bgworker_init(&bgw, "blpg_launcher_main", "launcher", "binlog_fdw launcher");
	bgw.bgw_restart_time = 5;
	RegisterBackgroundWorker(&bgw);
}

/* ---- the launcher ---- */

static void
launcher_exit(int code, Datum arg)
{
	LWLockAcquire(&blpg_shared->lock, LW_EXCLUSIVE);
	if (blpg_shared->launcher_latch == MyLatch)
		blpg_shared->launcher_latch = NULL;
	LWLockRelease(&blpg_shared->lock);
}

/* Databases a starter can connect to (not templates), as a List of Oids. */
static List *
list_databases(void)
{
	List	   *dbs = NIL;
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;
	MemoryContext cxt = CurrentMemoryContext;

	StartTransactionCommand();
	(void) GetTransactionSnapshot();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while ((tup = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Form_pg_database d = (Form_pg_database) GETSTRUCT(tup);
		MemoryContext old;

		if (!d->datallowconn || d->datistemplate || database_is_invalid_form(d))
			continue;
		old = MemoryContextSwitchTo(cxt);
		dbs = lappend_oid(dbs, d->oid);
		MemoryContextSwitchTo(old);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();
	MemoryContextSwitchTo(cxt);
	return dbs;
}

static bool
database_exists(Oid dboid)
{
	MemoryContext cxt = CurrentMemoryContext;
	bool		exists;

	StartTransactionCommand();
	exists = SearchSysCacheExists1(DATABASEOID, ObjectIdGetDatum(dboid));
	CommitTransactionCommand();
	MemoryContextSwitchTo(cxt);
	return exists;
}

static BackgroundWorkerHandle *
launch_starter(Oid dboid)
{
	BackgroundWorker bgw;
	BackgroundWorkerHandle *handle;

	blpg_bgworker_init(&bgw, "blpg_starter_main", "starter",
					   psprintf("binlog_fdw starter for database %u", dboid));
	bgw.bgw_main_arg = ObjectIdGetDatum(dboid);
	bgw.bgw_notify_pid = MyProcPid;
	if (!RegisterDynamicBackgroundWorker(&bgw, &handle))
		return NULL;
	return handle;
}

typedef enum supervise_action
{
	SUPERVISE_NOTHING,
	SUPERVISE_RELEASE,
	SUPERVISE_RELAUNCH,			/* a restart: no crash */
	SUPERVISE_DIED				/* relaunch through the guard */
} supervise_action;

static void
supervise(void)
{
	TimestampTz now = GetCurrentTimestamp();

	for (int i = 0; i < blpg_shared->max_sources; i++)
	{
		blpg_slot  *slot = &blpg_shared->slots[i];
		supervise_action act = SUPERVISE_NOTHING;
		bool		need_apply;
		bool		worker_gone;
		Oid			dboid,
					serverid;
		char		name[NAMEDATALEN];

		LWLockAcquire(&blpg_shared->lock, LW_SHARED);
		if (!slot->in_use)
		{
			LWLockRelease(&blpg_shared->lock);
			continue;
		}
		dboid = slot->dboid;
		serverid = slot->serverid;
		strlcpy(name, slot->server_name, sizeof(name));
		LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
		LWLockRelease(&blpg_shared->lock);
		if (slot->state == BLPG_STATE_STARTING && slot->worker_pid == 0 &&
			now - slot->launched_at > STARTING_TIMEOUT_S * USECS_PER_SEC)
			slot->state = BLPG_STATE_STOPPED;	/* it never came */
		worker_gone = slot->worker_pid == 0 && slot->state != BLPG_STATE_STARTING;
		if (!slot->wanted)
		{
			if (worker_gone && slot->apply_pid == 0)
				act = SUPERVISE_RELEASE;
		}
		else if (worker_gone && slot->stop_requested)
		{
			if (slot->apply_pid == 0)
			{
				slot->stop_requested = false;
				act = SUPERVISE_RELAUNCH;
			}
		}
		else if (worker_gone && now - slot->launched_at >= RELAUNCH_DELAY_MS * 1000)
			act = SUPERVISE_DIED;
		need_apply = slot->wanted && !slot->stop_requested && slot->continuous &&
			slot->apply_pid == 0 && act == SUPERVISE_NOTHING &&
			now - slot->apply_launched_at >= RELAUNCH_DELAY_MS * 1000;
		LWLockRelease(&slot->lock);

		switch (act)
		{
			case SUPERVISE_NOTHING:
				break;
			case SUPERVISE_RELEASE:
				(void) blpg_release_slot_if_idle(slot);
				break;
			case SUPERVISE_RELAUNCH:
				(void) blpg_launch_worker(slot);
				break;
			case SUPERVISE_DIED:
				if (!database_exists(dboid) || !blpg_guard_launch(dboid, serverid, name))
				{
					LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
					slot->wanted = false;
					slot->continuous = false;
					LWLockRelease(&slot->lock);
					(void) blpg_release_slot_if_idle(slot);
				}
				else
					(void) blpg_launch_worker(slot);
				break;
		}
		if (need_apply)
			(void) blpg_launch_apply_worker(slot);
	}
}

void
blpg_launcher_main(Datum main_arg)
{
	List	   *dbs;
	BackgroundWorkerHandle *starter = NULL;

	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();
	blpg_worker_require_shmem("binlog_fdw launcher");
	/* no database: the shared catalogs (pg_database) only */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	pgstat_report_appname("binlog_fdw launcher");

	LWLockAcquire(&blpg_shared->lock, LW_EXCLUSIVE);
	blpg_shared->launcher_latch = MyLatch;
	LWLockRelease(&blpg_shared->lock);
	before_shmem_exit(launcher_exit, (Datum) 0);

	dbs = list_databases();
	while (!ShutdownRequestPending)
	{
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		/* the starters, one database at a time */
		if (starter != NULL)
		{
			pid_t		pid;

			if (GetBackgroundWorkerPid(starter, &pid) == BGWH_STOPPED)
			{
				pfree(starter);
				starter = NULL;
			}
		}
		if (starter == NULL && dbs != NIL)
		{
			starter = launch_starter(linitial_oid(dbs));
			if (starter != NULL)
				dbs = list_delete_first(dbs);
		}
		supervise();
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1000, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	proc_exit(0);
}

/* ---- the starter of one database ---- */

typedef struct start_entry
{
	Oid			serverid;
	Oid			userid;
	bool		continuous;
	char		name[NAMEDATALEN];
} start_entry;

static bool
option_true(List *options, const char *name)
{
	ListCell   *lc;

	foreach(lc, options)
	{
		DefElem    *def = (DefElem *) lfirst(lc);

		if (strcmp(def->defname, name) == 0)
			return strcmp(defGetString(def), "true") == 0;
	}
	return false;
}

static start_entry *
entry_for(ForeignServer *server, Oid userid, MemoryContext cxt)
{
	start_entry *e = MemoryContextAllocZero(cxt, sizeof(start_entry));

	e->serverid = server->serverid;
	e->userid = userid;
	e->continuous = option_true(server->options, "continuous");
	strlcpy(e->name, server->servername, NAMEDATALEN);
	return e;
}

/* The sources to start in this database (in a transaction). */
static List *
collect_starts(MemoryContext cxt)
{
	List	   *out = NIL;
	ListCell   *lc;

	if (blpg_tables_legacy())
	{
		foreach(lc, blpg_legacy_entries(MyDatabaseId))
		{
			blpg_legacy_entry *l = lfirst(lc);
			ForeignServer *server = GetForeignServerExtended(l->serverid, FSV_MISSING_OK);

			if (server != NULL)
				out = lappend(out, entry_for(server, l->userid, cxt));
		}
		return out;
	}
	foreach(lc, blpg_started_list())
	{
		blpg_started *s = lfirst(lc);
		ForeignServer *server = GetForeignServerByName(s->server_name, true);

		if (server == NULL)
		{
			ereport(WARNING,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("binlog_fdw source \"%s\" is started, but there is no server of that name", s->server_name),
					 errhint("Stop it with SELECT binlog_fdw.stop('%s') after creating the server, or delete its row from binlog_fdw.started_sources.",
							 s->server_name)));
			continue;
		}
		if (!SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(s->roleid)))
		{
			ereport(WARNING,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("binlog_fdw source \"%s\" is not started: the role that started it (OID %u) no longer exists",
							s->server_name, s->roleid),
					 errhint("Start it again as another role: SELECT binlog_fdw.start('%s').", s->server_name)));
			continue;
		}
		out = lappend(out, entry_for(server, s->roleid, cxt));
	}
	return out;
}

static void
report_orphans(void)
{
	ListCell   *lc;

	foreach(lc, blpg_state_orphans())
	{
		blpg_orphan *o = lfirst(lc);

		ereport(WARNING,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("binlog_fdw.source_state holds the position of \"%s\", but this database has no binlog_fdw server of that name",
						o->server_name),
				 errdetail("The position is %s:%llu (%llu changes of that transaction acknowledged), recorded by the server with OID %u. It is kept: a server created with that name resumes from it.",
						   o->pos.file[0] ? o->pos.file : "(GTID state)",
						   (unsigned long long) o->pos.pos, (unsigned long long) o->pos.skip,
						   o->srvid),
				 errhint("If the server was renamed, give the row its new name (UPDATE binlog_fdw.source_state SET server_name = ... WHERE server_name = '%s'); if nothing needs it, delete it.",
						 o->server_name)));
	}
}

static void
start_one(Oid dboid, start_entry *e)
{
	blpg_slot  *slot = blpg_find_slot(dboid, e->serverid);
	bool		launch = false;

	if (slot != NULL && slot->wanted)
		return;					/* running (the launcher was restarted) */
	if (!blpg_guard_launch(dboid, e->serverid, e->name))
		return;
	slot = blpg_acquire_slot(dboid, e->serverid, e->name, true);
	if (slot == NULL)
	{
		ereport(WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("no free binlog_fdw source slot for server \"%s\"", e->name),
				 errdetail("All %d slots (binlog_fdw.max_sources) are in use.", blpg_shared->max_sources),
				 errhint("Stop another source, or raise binlog_fdw.max_sources and restart the server.")));
		return;
	}
	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	slot->wanted = true;
	slot->userid = e->userid;
	slot->continuous = e->continuous;
	if (slot->worker_pid == 0 && slot->state != BLPG_STATE_STARTING && slot->apply_pid == 0)
	{
		slot->stop_requested = false;
		launch = true;
	}
	LWLockRelease(&slot->lock);
	if (launch)
		(void) blpg_launch_worker(slot);
	blpg_wake_launcher();
}

void
blpg_starter_main(Datum main_arg)
{
	Oid			dboid = DatumGetObjectId(main_arg);
	List	   *starts = NIL;
	ListCell   *lc;
	MemoryContext cxt;

	BackgroundWorkerUnblockSignals();
	blpg_worker_require_shmem("binlog_fdw starter");
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	pgstat_report_appname("binlog_fdw starter");
	cxt = AllocSetContextCreate(TopMemoryContext, "binlog_fdw starter", ALLOCSET_DEFAULT_SIZES);

	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	if (OidIsValid(get_extension_oid("binlog_fdw", true)))
	{
		MemoryContext old = MemoryContextSwitchTo(cxt);

		starts = collect_starts(cxt);
		MemoryContextSwitchTo(old);
		report_orphans();
	}
	/* replication origins of dropped servers or databases */
	blpg_origins_clean();
	PopActiveSnapshot();
	CommitTransactionCommand();
	MemoryContextSwitchTo(cxt);

	foreach(lc, starts)
		start_one(dboid, lfirst(lc));
	proc_exit(0);
}
