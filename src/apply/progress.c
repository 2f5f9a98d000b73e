/*
 * progress.c
 *	  Progress of initial loads (snapshot(), sync_table(), load()) for the
 *	  binlog_fdw.sync_progress view: one entry per loading backend in a
 *	  shared-memory area of apply's own ("binlog_fdw sync progress"),
 *	  requested at server start beside the store's.  An entry says which
 *	  table, its phase (copying, building indexes, analyzing), the rows
 *	  copied and estimated; the view adds rows/s since the table's start
 *	  (a chunked load: its first chunk in this session) and the ETA.
 *
 * Locking: progress->lock (LWLock) guards the entries' allocation (pid)
 * and their text fields (names, phase); rows_done is one 8-byte counter
 * written only by its owner and read without the lock (a reader may see a
 * slightly old count).
 */
#include "apply/apply.h"

#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(binlog_fdw_sync_progress);

#define MAX_PROGRESS 16

/* MySQL names: 64 characters of up to 4 bytes each */
#define PROGRESS_SOURCE_LEN (2 * 256 + 2)
/* a quoted schema.table: each name doubled quotes at worst, plus quotes */
#define PROGRESS_TARGET_LEN (2 * (2 * NAMEDATALEN + 2) + 2)

struct blpg_progress
{
	int			pid;			/* 0: free */
	char		server[NAMEDATALEN];
	char		source[PROGRESS_SOURCE_LEN];
	char		target[PROGRESS_TARGET_LEN];
	char		phase[32];
	int64		rows_base;		/* copied before this entry began */
	int64		rows_done;		/* rows_base + this entry's */
	int64		rows_at_start;	/* copied before started (rows/s counts after) */
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

/* A name that does not fit is shown cut, marked "...": display only. */
static void
copy_display(char *dst, size_t len, const char *src)
{
	size_t		n = strlen(src);

	if (n < len)
	{
		memcpy(dst, src, n + 1);
		return;
	}
	n = pg_mbcliplen(src, n, len - 4);
	memcpy(dst, src, n);
	strcpy(dst + n, "...");
}

blpg_progress *
blpg_progress_begin(const char *server, const char *source, const char *target,
					int64 estimate, int64 rows_before, TimestampTz started,
					int64 rows_at_start)
{
	progress_area *area = progress_get();
	blpg_progress *mine = NULL;

	LWLockAcquire(&area->lock, LW_EXCLUSIVE);
	/* this backend's entry first (it has one at most), else a free one */
	for (int i = 0; i < MAX_PROGRESS && !mine; i++)
		if (area->entries[i].pid == MyProcPid)
			mine = &area->entries[i];
	for (int i = 0; i < MAX_PROGRESS && !mine; i++)
		if (area->entries[i].pid == 0)
			mine = &area->entries[i];
	if (mine)
	{
		mine->pid = MyProcPid;
		copy_display(mine->server, sizeof(mine->server), server);
		copy_display(mine->source, sizeof(mine->source), source);
		copy_display(mine->target, sizeof(mine->target), target);
		strlcpy(mine->phase, "copying", sizeof(mine->phase));
		mine->rows_base = rows_before;
		mine->rows_done = rows_before;
		mine->rows_at_start = rows_at_start;
		mine->rows_estimated = estimate;
		mine->started = started ? started : GetCurrentTimestamp();
	}
	LWLockRelease(&area->lock);
	return mine;
}

/* binlog_fdw.progress_notice_interval: seconds between NOTICEs (0: none) */
int			blpg_progress_notice_interval = 0;

/* when this backend's copy says how far it is next (0: not yet timed) */
static TimestampTz next_notice = 0;

/*
 * A NOTICE with the copy's progress, every progress_notice_interval
 * seconds of a copy run by a client's backend (psql shows it as it comes).
 */
static void
progress_notice(blpg_progress *p)
{
	TimestampTz now = GetCurrentTimestamp();
	double		seconds;
	double		rate;
	int64		done = p->rows_done;

	if (next_notice == 0 || next_notice < p->started)
	{
		next_notice = now + (int64) blpg_progress_notice_interval * USECS_PER_SEC;
		return;
	}
	if (now < next_notice)
		return;
	next_notice = now + (int64) blpg_progress_notice_interval * USECS_PER_SEC;
	seconds = (double) (now - p->started) / USECS_PER_SEC;
	rate = seconds > 0 ? (double) (done - p->rows_at_start) / seconds : 0;
	if (rate > 0 && p->rows_estimated > done)
		ereport(NOTICE,
				(errcode(ERRCODE_SUCCESSFUL_COMPLETION),
				 errmsg("%s: " INT64_FORMAT " of about " INT64_FORMAT " rows copied, %.0f rows/s, about %.0f s to go",
						p->source, done, p->rows_estimated, rate,
						(double) (p->rows_estimated - done) / rate)));
	else
		ereport(NOTICE,
				(errcode(ERRCODE_SUCCESSFUL_COMPLETION),
				 errmsg("%s: " INT64_FORMAT " rows copied, %.0f rows/s", p->source, done, rate)));
}

void
blpg_progress_update(blpg_progress *p, int64 rows)
{
	if (p == NULL)
		return;
	p->rows_done = p->rows_base + rows;
	if (blpg_progress_notice_interval > 0 && !IsBackgroundWorker)
		progress_notice(p);
}

void
blpg_progress_set_phase(blpg_progress *p, const char *phase)
{
	if (p == NULL)
		return;
	LWLockAcquire(&progress->lock, LW_EXCLUSIVE);
	strlcpy(p->phase, phase, sizeof(p->phase));
	LWLockRelease(&progress->lock);
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

	TimestampTz now = GetCurrentTimestamp();

	InitMaterializedSRF(fcinfo, 0);
	LWLockAcquire(&area->lock, LW_SHARED);
	for (int i = 0; i < MAX_PROGRESS; i++)
	{
		blpg_progress *p = &area->entries[i];
		Datum		values[10];
		bool		nulls[10] = {0};
		int64		done = p->rows_done;
		double		seconds;
		double		rate;

		if (p->pid == 0)
			continue;
		seconds = (double) (now - p->started) / USECS_PER_SEC;
		rate = seconds > 0 ? (double) (done - p->rows_at_start) / seconds : 0;
		values[0] = Int32GetDatum(p->pid);
		values[1] = CStringGetTextDatum(p->server);
		values[2] = CStringGetTextDatum(p->source);
		values[3] = CStringGetTextDatum(p->target);
		values[4] = Int64GetDatum(done);
		values[5] = Int64GetDatum(p->rows_estimated);
		values[6] = TimestampTzGetDatum(p->started);
		values[7] = CStringGetTextDatum(p->phase);
		/* rows/s over the table's copy so far; none before the first rows */
		values[8] = Float8GetDatum(rate);
		nulls[8] = done == p->rows_at_start;
		/*
		 * ETA: the rows still estimated at this rate.  Unknown before the
		 * first rows, or when the source's estimate (TABLE_ROWS, InnoDB's
		 * guess) is already passed; now once copying is over.
		 */
		if (strcmp(p->phase, "copying") != 0)
			values[9] = TimestampTzGetDatum(now);
		else if (rate > 0 && p->rows_estimated > done)
			values[9] = TimestampTzGetDatum(now + (TimestampTz)
											((double) (p->rows_estimated - done) / rate * USECS_PER_SEC));
		else
			nulls[9] = true;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	LWLockRelease(&area->lock);
	return (Datum) 0;
}
