/*
 * progress.c
 *	  Progress of initial loads (snapshot(), sync_table()) for the
 *	  binlog_fdw.sync_progress view: one entry per loading backend in a
 *	  shared-memory area of apply's own ("binlog_fdw sync progress"),
 *	  requested at server start beside the store's.
 *
 * Locking: progress->lock (LWLock) guards the entries' allocation (pid)
 * and their text fields; rows_done is one 8-byte counter written only by
 * its owner and read without the lock (a reader may see a slightly old
 * count).
 */
#include "apply/apply.h"

#include "funcapi.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(binlog_fdw_sync_progress);

#define MAX_PROGRESS 16

struct blpg_progress
{
	int			pid;			/* 0: free */
	char		server[NAMEDATALEN];
	char		source[2 * NAMEDATALEN + 2];
	char		target[2 * NAMEDATALEN + 2];
	int64		rows_done;
	int64		rows_estimated;
	TimestampTz started;
};

typedef struct progress_area
{
	LWLock		lock;
	blpg_progress entries[MAX_PROGRESS];
} progress_area;

static progress_area *progress = NULL;

void
blpg_progress_shmem_request(void)
{
	RequestAddinShmemSpace(sizeof(progress_area));
	RequestNamedLWLockTranche("binlog_fdw sync progress", 1);
}

void
blpg_progress_shmem_startup(void)
{
	bool		found;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	progress = ShmemInitStruct("binlog_fdw sync progress", sizeof(progress_area), &found);
	if (!found)
	{
		memset(progress, 0, sizeof(progress_area));
		progress->lock = GetNamedLWLockTranche("binlog_fdw sync progress")->lock;
	}
	LWLockRelease(AddinShmemInitLock);
}

static progress_area *
progress_get(void)
{
	if (progress == NULL)
		blpg_require_shmem();	/* the store's error: not preloaded */
	return progress;
}

blpg_progress *
blpg_progress_begin(const char *server, const char *source, const char *target,
					int64 estimate)
{
	progress_area *area = progress_get();
	blpg_progress *mine = NULL;

	LWLockAcquire(&area->lock, LW_EXCLUSIVE);
	for (int i = 0; i < MAX_PROGRESS && !mine; i++)
		if (area->entries[i].pid == 0 || area->entries[i].pid == MyProcPid)
			mine = &area->entries[i];
	if (mine)
	{
		mine->pid = MyProcPid;
		strlcpy(mine->server, server, sizeof(mine->server));
		strlcpy(mine->source, source, sizeof(mine->source));
		strlcpy(mine->target, target, sizeof(mine->target));
		mine->rows_done = 0;
		mine->rows_estimated = estimate;
		mine->started = GetCurrentTimestamp();
	}
	LWLockRelease(&area->lock);
	return mine;
}

void
blpg_progress_update(blpg_progress *p, int64 rows_done)
{
	if (p != NULL)
		p->rows_done = rows_done;
}

void
blpg_progress_end(blpg_progress *p)
{
	if (p == NULL)
		return;
	LWLockAcquire(&progress->lock, LW_EXCLUSIVE);
	p->pid = 0;
	LWLockRelease(&progress->lock);
}

Datum
binlog_fdw_sync_progress(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	progress_area *area = progress_get();

	InitMaterializedSRF(fcinfo, 0);
	LWLockAcquire(&area->lock, LW_SHARED);
	for (int i = 0; i < MAX_PROGRESS; i++)
	{
		blpg_progress *p = &area->entries[i];
		Datum		values[7];
		bool		nulls[7] = {0};

		if (p->pid == 0)
			continue;
		values[0] = Int32GetDatum(p->pid);
		values[1] = CStringGetTextDatum(p->server);
		values[2] = CStringGetTextDatum(p->source);
		values[3] = CStringGetTextDatum(p->target);
		values[4] = Int64GetDatum(p->rows_done);
		values[5] = Int64GetDatum(p->rows_estimated);
		values[6] = TimestampTzGetDatum(p->started);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	LWLockRelease(&area->lock);
	return (Datum) 0;
}
