/*
 * control.c
 *	  Starting and stopping sources: binlog_fdw.start(server),
 *	  binlog_fdw.stop(server), binlog_fdw.reset(server), the launch of
 *	  workers, and the autostart file ($PGDATA/pg_binlog_fdw/autostart)
 *	  that brings started sources back after a server restart.
 *
 * start/stop take effect at once, not at commit (like pg_reload_conf()).
 */
#include "worker/worker.h"

#include "access/xact.h"
#include "commands/defrem.h"
#include "catalog/pg_foreign_data_wrapper.h"
#include "catalog/pg_foreign_server.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/fd.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

PG_FUNCTION_INFO_V1(binlog_fdw_start);
PG_FUNCTION_INFO_V1(binlog_fdw_stop);
PG_FUNCTION_INFO_V1(binlog_fdw_reset);

#define AUTOSTART_DIR	"pg_binlog_fdw"
#define AUTOSTART_FILE	AUTOSTART_DIR "/autostart"

/* ---- the autostart file: lines "dboid serverid userid continuous name" ---- */

typedef struct autostart_entry
{
	Oid			dboid;
	Oid			serverid;
	Oid			userid;
	bool		continuous;
	char		name[NAMEDATALEN];
} autostart_entry;

static int
autostart_read(autostart_entry *out, int max)
{
	FILE	   *f = AllocateFile(AUTOSTART_FILE, "r");
	int			n = 0;
	char		line[512];

	if (f == NULL)
		return 0;
	while (n < max && fgets(line, sizeof(line), f))
	{
		unsigned int d,
					s,
					u,
					c;
		char		name[NAMEDATALEN];

		if (sscanf(line, "%u %u %u %u %63s", &d, &s, &u, &c, name) == 5)
		{
			out[n].dboid = d;
			out[n].serverid = s;
			out[n].userid = u;
			out[n].continuous = c != 0;
			strlcpy(out[n].name, name, NAMEDATALEN);
			n++;
		}
	}
	FreeFile(f);
	return n;
}

static void
autostart_write(autostart_entry *e, int n)
{
	FILE	   *f;
	const char *tmp = AUTOSTART_FILE ".tmp";

	(void) MakePGDirectory(AUTOSTART_DIR);
	f = AllocateFile(tmp, "w");
	if (f == NULL)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", tmp)));
	for (int i = 0; i < n; i++)
		fprintf(f, "%u %u %u %d %s\n", e[i].dboid, e[i].serverid, e[i].userid,
				e[i].continuous ? 1 : 0, e[i].name);
	if (fflush(f) != 0 || pg_fsync(fileno(f)) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", tmp)));
	FreeFile(f);
	(void) durable_rename(tmp, AUTOSTART_FILE, ERROR);
}

void
blpg_autostart_add(Oid dboid, Oid serverid, Oid userid, bool continuous, const char *name)
{
	autostart_entry *e = palloc(sizeof(autostart_entry) * (blpg_max_sources + 1));
	int			n;
	bool		found = false;

	LWLockAcquire(&blpg_shared->lock, LW_EXCLUSIVE);
	n = autostart_read(e, blpg_max_sources);
	for (int i = 0; i < n; i++)
		if (e[i].dboid == dboid && e[i].serverid == serverid)
		{
			e[i].userid = userid;
			e[i].continuous = continuous;
			found = true;
		}
	if (!found)
	{
		e[n].dboid = dboid;
		e[n].serverid = serverid;
		e[n].userid = userid;
		e[n].continuous = continuous;
		strlcpy(e[n].name, name, NAMEDATALEN);
		/* names with spaces cannot be parsed back: the oids are what count */
		for (char *p = e[n].name; *p; p++)
			if (isspace((unsigned char) *p))
				*p = '_';
		n++;
	}
	autostart_write(e, n);
	LWLockRelease(&blpg_shared->lock);
}

void
blpg_autostart_remove(Oid dboid, Oid serverid)
{
	autostart_entry *e = palloc(sizeof(autostart_entry) * (blpg_max_sources + 1));
	int			n,
				m = 0;

	LWLockAcquire(&blpg_shared->lock, LW_EXCLUSIVE);
	n = autostart_read(e, blpg_max_sources);
	for (int i = 0; i < n; i++)
		if (!(e[i].dboid == dboid && e[i].serverid == serverid))
			e[m++] = e[i];
	if (m != n)
		autostart_write(e, m);
	LWLockRelease(&blpg_shared->lock);
}

/*
 * Crash-loop guard.  A worker that crashes takes the whole server through
 * crash recovery, after which the launcher would start it again: should it
 * crash every time, the server would never stay up.  Each launch by the
 * launcher is recorded in pg_binlog_fdw/launches.<db>.<server> (a file:
 * shared memory does not survive the crash); a source launched
 * GUARD_LAUNCHES times within GUARD_SECONDS is left stopped, with a
 * message.  Only launches that follow a crash count: binlog_fdw.start(),
 * a worker's clean exit and a minute of streaming clear the record
 * (blpg_guard_clear).
 */
#define GUARD_LAUNCHES	5
#define GUARD_SECONDS	120

static void
guard_path(Oid dboid, Oid serverid, char *path, size_t len)
{
	snprintf(path, len, "%s/launches.%u.%u", AUTOSTART_DIR, dboid, serverid);
}

/* Record a launch; false if the source relaunches too often. */
static bool
guard_launch(Oid dboid, Oid serverid, const char *name)
{
	char		path[MAXPGPATH];
	FILE	   *f;
	long		times[GUARD_LAUNCHES];
	int			n = 0;
	long		now = (long) time(NULL);
	long		t;

	guard_path(dboid, serverid, path, sizeof(path));
	f = AllocateFile(path, "r");
	if (f)
	{
		while (n < GUARD_LAUNCHES && fscanf(f, "%ld", &t) == 1)
			if (now - t < GUARD_SECONDS)
				times[n++] = t;
		FreeFile(f);
	}
	if (n >= GUARD_LAUNCHES)
	{
		ereport(WARNING,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("binlog_fdw source \"%s\" was started %d times in %d seconds and is left stopped",
						name, GUARD_LAUNCHES, GUARD_SECONDS),
				 errhint("Look for the cause in the server log, then start it with SELECT binlog_fdw.start('%s').", name)));
		return false;
	}
	(void) MakePGDirectory(AUTOSTART_DIR);
	f = AllocateFile(path, "w");
	if (f)
	{
		for (int i = (n == GUARD_LAUNCHES ? 1 : 0); i < n; i++)
			fprintf(f, "%ld\n", times[i]);
		fprintf(f, "%ld\n", now);
		FreeFile(f);
	}
	return true;
}

void
blpg_guard_clear(Oid dboid, Oid serverid)
{
	char		path[MAXPGPATH];

	guard_path(dboid, serverid, path, sizeof(path));
	(void) unlink(path);
}

/* Used by the launcher: start every listed source that has no worker. */

void
blpg_autostart_all(void)
{
	autostart_entry *e = palloc(sizeof(autostart_entry) * (blpg_max_sources + 1));
	int			n;

	LWLockAcquire(&blpg_shared->lock, LW_SHARED);
	n = autostart_read(e, blpg_max_sources);
	LWLockRelease(&blpg_shared->lock);
	for (int i = 0; i < n; i++)
	{
		blpg_slot  *slot;
		bool		running;
		bool		need_apply;

		PG_TRY();
		{
			slot = blpg_acquire_slot(e[i].dboid, e[i].serverid, e[i].name);
			LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
			running = slot->state != BLPG_STATE_STOPPED;
			slot->continuous = e[i].continuous;
			if (!running)
			{
				slot->userid = e[i].userid;
				slot->stop_requested = false;
				slot->state = BLPG_STATE_STARTING;
			}
			need_apply = slot->continuous && slot->apply_pid == 0;
			LWLockRelease(&slot->lock);
			if (!running && !guard_launch(e[i].dboid, e[i].serverid, e[i].name))
			{
				/* crash loop: leave it stopped until someone starts it */
				LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
				slot->state = BLPG_STATE_STOPPED;
				LWLockRelease(&slot->lock);
				blpg_release_slot(slot);
				blpg_autostart_remove(e[i].dboid, e[i].serverid);
			}
			else
			{
				if (!running)
					(void) blpg_launch_worker(slot, false);
				if (need_apply)
					(void) blpg_launch_apply_worker(slot);
			}
		}
		PG_CATCH();
		{
			EmitErrorReport();
			FlushErrorState();
		}
		PG_END_TRY();
	}
	pfree(e);
}

/* ---- workers ---- */

int
blpg_launch_worker(blpg_slot *slot, bool wait)
{
	BackgroundWorker bgw;
	BackgroundWorkerHandle *handle;
	pid_t		pid = 0;
	int			index = slot - blpg_shared->slots;

	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw.bgw_restart_time = BGW_NEVER_RESTART;	/* the launcher supervises */
	snprintf(bgw.bgw_library_name, BGW_MAXLEN, "binlog_fdw");
	snprintf(bgw.bgw_function_name, BGW_MAXLEN, "blpg_worker_main");
	snprintf(bgw.bgw_name, BGW_MAXLEN, "binlog_fdw source %s", slot->server_name);
	snprintf(bgw.bgw_type, BGW_MAXLEN, "binlog_fdw source");
	bgw.bgw_main_arg = Int32GetDatum(index);
	bgw.bgw_notify_pid = MyProcPid;
	if (!RegisterDynamicBackgroundWorker(&bgw, &handle))
	{
		LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
		slot->state = BLPG_STATE_STOPPED;
		snprintf(slot->last_error, sizeof(slot->last_error),
				 "could not register a background worker (max_worker_processes?)");
		slot->last_error_time = GetCurrentTimestamp();
		LWLockRelease(&slot->lock);
		ereport(WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("could not start the worker of binlog_fdw source \"%s\"", slot->server_name),
				 errhint("Raise max_worker_processes.")));
		return 0;
	}
	if (wait && WaitForBackgroundWorkerStartup(handle, &pid) != BGWH_STARTED)
		return 0;
	return (int) pid;
}

/*
 * The continuous apply worker of a slot (src/apply/continuous.c, started by
 * its function's name): its pid, or 0 if it could not be started.
 */
int
blpg_launch_apply_worker(blpg_slot *slot)
{
	BackgroundWorker bgw;
	BackgroundWorkerHandle *handle;
	pid_t		pid = 0;

	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw.bgw_restart_time = BGW_NEVER_RESTART;	/* the launcher supervises */
	snprintf(bgw.bgw_library_name, BGW_MAXLEN, "binlog_fdw");
	snprintf(bgw.bgw_function_name, BGW_MAXLEN, "blpg_apply_worker_main");
	snprintf(bgw.bgw_name, BGW_MAXLEN, "binlog_fdw apply %s", slot->server_name);
	snprintf(bgw.bgw_type, BGW_MAXLEN, "binlog_fdw apply");
	bgw.bgw_main_arg = Int32GetDatum((int) (slot - blpg_shared->slots));
	bgw.bgw_notify_pid = MyProcPid;
	if (!RegisterDynamicBackgroundWorker(&bgw, &handle))
		return 0;
	if (WaitForBackgroundWorkerStartup(handle, &pid) != BGWH_STARTED)
		return 0;
	return (int) pid;
}

/* ---- SQL ---- */

static ForeignServer *
lookup_source(const char *name, AclMode mode)
{
	ForeignServer *server = GetForeignServerByName(name, false);
	ForeignDataWrapper *fdw = GetForeignDataWrapper(server->fdwid);
	AclResult	aclresult;

	if (strcmp(fdw->fdwname, "binlog_fdw") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("server \"%s\" is not a binlog_fdw source", name),
				 errdetail("It uses the foreign-data wrapper \"%s\".", fdw->fdwname)));
	aclresult = pg_foreign_server_aclcheck(server->serverid, GetUserId(), mode);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_FOREIGN_SERVER, server->servername);
	return server;
}

Datum
binlog_fdw_start(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	ForeignServer *server;
	blpg_slot  *slot;
	bool		running;
	bool		continuous = false;
	int			pid;

	blpg_require_shmem();
	server = lookup_source(name, ACL_USAGE);
	/* fails early on missing user mapping or bad options */
	(void) blpg_load_config(server->serverid, GetUserId());
	{
		ListCell   *lc;

		foreach(lc, server->options)
		{
			DefElem    *def = (DefElem *) lfirst(lc);

			if (strcmp(def->defname, "continuous") == 0)
				continuous = strcmp(defGetString(def), "true") == 0;
		}
	}

	slot = blpg_acquire_slot(MyDatabaseId, server->serverid, server->servername);
	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	running = slot->state != BLPG_STATE_STOPPED;
	pid = slot->worker_pid;
	if (!running)
	{
		slot->userid = GetUserId();
		slot->stop_requested = false;
		slot->state = BLPG_STATE_STARTING;
	}
	slot->continuous = continuous;
	LWLockRelease(&slot->lock);
	blpg_autostart_add(MyDatabaseId, server->serverid, GetUserId(), continuous,
					   server->servername);
	blpg_guard_clear(MyDatabaseId, server->serverid);
	if (running)
		ereport(NOTICE,
				(errmsg("source \"%s\" is already started", server->servername)));
	else
		pid = blpg_launch_worker(slot, true);
	if (continuous && slot->apply_pid == 0)
		(void) blpg_launch_apply_worker(slot);
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

		if (slot->in_use && slot->dboid == MyDatabaseId &&
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
	int			pid;
	TimestampTz deadline;

	blpg_require_shmem();
	if (GetForeignServerByName(name, true) == NULL &&
		(slot = dropped_server_slot(name)) != NULL)
	{
		serverid = slot->serverid;
		srvname = name;
	}
	else
	{
		ForeignServer *server = lookup_source(name, ACL_USAGE);

		serverid = server->serverid;
		srvname = server->servername;
	}
	blpg_autostart_remove(MyDatabaseId, serverid);
	slot = blpg_find_slot(MyDatabaseId, serverid);
	if (slot == NULL)
		PG_RETURN_BOOL(false);
	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	slot->stop_requested = true;
	slot->continuous = false;
	pid = slot->worker_pid;
	if (slot->apply_pid != 0)
		kill(slot->apply_pid, SIGTERM);
	LWLockRelease(&slot->lock);
	ConditionVariableBroadcast(&slot->space_cv);
	ConditionVariableBroadcast(&slot->put_cv);
	if (pid != 0)
		kill(pid, SIGTERM);

	/* a worker notices within one heartbeat, or its connect timeout */
	deadline = GetCurrentTimestamp() + 60 * USECS_PER_SEC;
	for (;;)
	{
		bool		gone;

		LWLockAcquire(&slot->lock, LW_SHARED);
		gone = slot->worker_pid == 0 && slot->state != BLPG_STATE_STARTING &&
			slot->apply_pid == 0;
		LWLockRelease(&slot->lock);
		if (gone)
			break;
		if (GetCurrentTimestamp() > deadline)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_IN_USE),
					 errmsg("the worker of source \"%s\" (pid %d) did not stop within 60 seconds",
							srvname, pid)));
		CHECK_FOR_INTERRUPTS();
		pg_usleep(20000);
	}
	blpg_release_slot(slot);
	PG_RETURN_BOOL(true);
}

Datum
binlog_fdw_reset(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	ForeignServer *server;
	blpg_slot  *slot;

	server = lookup_source(name, ACL_USAGE);
	slot = blpg_shared ? blpg_find_slot(MyDatabaseId, server->serverid) : NULL;
	if (slot && slot->state != BLPG_STATE_STOPPED)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("source \"%s\" is running", server->servername),
				 errhint("Stop it first with binlog_fdw.stop('%s').", server->servername)));
	blpg_state_forget(server->serverid);
	PG_RETURN_VOID();
}
