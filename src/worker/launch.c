/*
 * launch.c
 *	  Launching the background workers of a source (the streaming worker,
 *	  the continuous apply worker) and the crash-loop guard.
 *
 * Launching never raises an error: it runs where an error cannot be
 * raised (at commit, in the launcher); a failure is recorded in the slot
 * (status view) and logged.  A launched worker gets its slot's token in
 * bgw_extra and exits at once if the slot was released and taken by
 * another source before it started.
 */
#include "worker/worker.h"

#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/fd.h"
#include "utils/timestamp.h"

#include <time.h>
#include <unistd.h>

#define GUARD_DIR		"pg_binlog_fdw"

static void
fill_worker(BackgroundWorker *bgw, blpg_slot *slot, const char *function,
			const char *type, uint64 token)
{
	char		name[BGW_MAXLEN];

	/* never restarted by the postmaster: the launcher supervises */
	snprintf(name, sizeof(name), "binlog_fdw %s %s", type, slot->server_name);
	blpg_bgworker_init(bgw, function, type, name);
	bgw->bgw_main_arg = Int32GetDatum((int) (slot - blpg_shared->slots));
	memcpy(bgw->bgw_extra, &token, sizeof(token));
}

uint64
blpg_worker_token(void)
{
	uint64		token;

	memcpy(&token, MyBgworkerEntry->bgw_extra, sizeof(token));
	return token;
}

bool
blpg_launch_worker(blpg_slot *slot)
{
	BackgroundWorker bgw;
	uint64		token;
	char		name[NAMEDATALEN];

	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	token = slot->token;
	strlcpy(name, slot->server_name, sizeof(name));
	slot->state = BLPG_STATE_STARTING;
	slot->launched_at = GetCurrentTimestamp();
	LWLockRelease(&slot->lock);
	fill_worker(&bgw, slot, "blpg_worker_main", "source", token);
	if (RegisterDynamicBackgroundWorker(&bgw, NULL))
		return true;
	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	slot->state = BLPG_STATE_STOPPED;
	snprintf(slot->last_error, sizeof(slot->last_error),
			 "could not register a background worker (max_worker_processes?)");
	slot->last_error_time = GetCurrentTimestamp();
	slot->last_error_cleared = 0;
	LWLockRelease(&slot->lock);
	ereport(WARNING,
			(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
			 errmsg("could not start the worker of binlog_fdw source \"%s\"", name),
			 errhint("Raise max_worker_processes.")));
	return false;
}

/*
 * The reloader of a source whose position the source has purged
 * (lost_position 'reload', src/apply/reload.c); false if it could not be
 * registered (logged).  A second one while one runs exits at once.
 */
bool
blpg_launch_reloader(blpg_slot *slot, BackgroundWorkerHandle **handle)
{
	BackgroundWorker bgw;
	uint64		token;

	LWLockAcquire(&slot->lock, LW_SHARED);
	token = slot->token;
	LWLockRelease(&slot->lock);
	fill_worker(&bgw, slot, "blpg_reloader_main", "reloader", token);
	if (RegisterDynamicBackgroundWorker(&bgw, handle))
		return true;
	ereport(WARNING,
			(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
			 errmsg("could not start the reloader of binlog_fdw source \"%s\"", slot->server_name),
			 errhint("Raise max_worker_processes.")));
	return false;
}

int
blpg_launch_apply_worker(blpg_slot *slot)
{
	BackgroundWorker bgw;
	BackgroundWorkerHandle *handle;
	pid_t		pid = 0;
	uint64		token;

	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	token = slot->token;
	slot->apply_launched_at = GetCurrentTimestamp();
	LWLockRelease(&slot->lock);
	fill_worker(&bgw, slot, "blpg_apply_worker_main", "apply", token);
	bgw.bgw_notify_pid = MyProcPid;
	if (!RegisterDynamicBackgroundWorker(&bgw, &handle))
		return 0;
	if (WaitForBackgroundWorkerStartup(handle, &pid) != BGWH_STARTED)
		return 0;
	/* known at once, so that the next look does not launch another */
	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	if (slot->apply_pid == 0 && slot->token == token)
		slot->apply_pid = (int) pid;
	LWLockRelease(&slot->lock);
	return (int) pid;
}

/*
 * Crash-loop guard.  A worker that crashes takes the whole server through
 * crash recovery, after which the launcher would start it again: should it
 * crash every time, the server would never stay up.  Each launch by the
 * launcher is recorded in pg_binlog_fdw/launches.<db>.<server> (a file:
 * shared memory does not survive the crash); a source launched
 * GUARD_LAUNCHES times within GUARD_SECONDS is left stopped, with a
 * message, and the file says so ("stopped") until start() commits.  Only
 * launches that follow a crash count: start(), a worker's clean exit and
 * a minute of streaming clear the record (blpg_guard_clear).  The file is
 * local to this server on purpose: a standby promoted after a crash loop
 * of its primary starts its sources.
 */
#define GUARD_LAUNCHES	5
#define GUARD_SECONDS	120

static void
guard_path(Oid dboid, Oid serverid, char *path, size_t len)
{
	snprintf(path, len, "%s/launches.%u.%u", GUARD_DIR, dboid, serverid);
}

bool
blpg_guard_launch(Oid dboid, Oid serverid, const char *name)
{
	char		path[MAXPGPATH];
	FILE	   *f;
	long		times[GUARD_LAUNCHES];
	int			n = 0;
	long		now = (long) time(NULL);
	bool		stopped = false;
	char		line[64];

	guard_path(dboid, serverid, path, sizeof(path));
	f = AllocateFile(path, "r");
	if (f)
	{
		while (fgets(line, sizeof(line), f))
		{
			long		t;

			if (strncmp(line, "stopped", 7) == 0)
				stopped = true;
			else if (n < GUARD_LAUNCHES && sscanf(line, "%ld", &t) == 1 && now - t < GUARD_SECONDS)
				times[n++] = t;
		}
		FreeFile(f);
	}
	if (stopped)
	{
		ereport(LOG,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("binlog_fdw source \"%s\" is left stopped after a crash loop", name),
				 errhint("Look for the cause in the server log, then start it with SELECT binlog_fdw.start('%s').", name)));
		return false;
	}
	if (n >= GUARD_LAUNCHES)
		ereport(WARNING,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("binlog_fdw source \"%s\" was started %d times in %d seconds and is left stopped",
						name, GUARD_LAUNCHES, GUARD_SECONDS),
				 errhint("Look for the cause in the server log, then start it with SELECT binlog_fdw.start('%s').", name)));
	(void) MakePGDirectory(GUARD_DIR);
	f = AllocateFile(path, "w");
	if (f)
	{
		if (n >= GUARD_LAUNCHES)
			fprintf(f, "stopped\n");
		else
		{
			for (int i = 0; i < n; i++)
				fprintf(f, "%ld\n", times[i]);
			fprintf(f, "%ld\n", now);
		}
		FreeFile(f);
	}
	return n < GUARD_LAUNCHES;
}

void
blpg_guard_clear(Oid dboid, Oid serverid)
{
	char		path[MAXPGPATH];

	guard_path(dboid, serverid, path, sizeof(path));
	(void) unlink(path);
}
