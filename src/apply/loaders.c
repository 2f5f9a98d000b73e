/*
 * loaders.c
 *	  The background loaders of CALL binlog_fdw.load(..., parallel => N):
 *	  N-1 background workers that load the same tables as the calling
 *	  session, as the calling role, each starting at another table of the
 *	  list (load.c's blpg_load_tables shares a table's chunks between
 *	  loaders, each copying another key range of it, and passes over the
 *	  tables already complete), so that several tables, and several
 *	  ranges of one table, load at once.  The caller loads too, then waits for
 *	  them; a loader's error is the caller's.
 *
 * Each loader gets its arguments in a dynamic shared memory segment of its
 * own, which also carries its outcome back (done, or the error message).
 * Only its launcher reads the outcome, after the loader has exited: no
 * lock.
 */
#include "apply/apply.h"

#include "bl_mysql_source.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "tcop/tcopprot.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#define LOADER_ERROR_LEN 4096

typedef struct loader_args
{
	Oid			dboid;
	Oid			userid;
	Oid			serverid;
	char		server_name[NAMEDATALEN];
	int64		chunk_rows;
	int			first;			/* the table it starts at */
	int			ranges;			/* key ranges of a table (load.c) */
	int			number;			/* 1..N-1: the range it starts at */
	int			nsources;
	bool		done;			/* the loader finished its tables */
	char		error[LOADER_ERROR_LEN];	/* or failed with this */
	Size		sources_len;
	char		sources[FLEXIBLE_ARRAY_MEMBER];	/* NUL-separated */
} loader_args;

typedef struct loader
{
	dsm_segment *seg;
	BackgroundWorkerHandle *handle;
	int			number;
} loader;

void *
blpg_loader_launch(const char *server_name, Oid serverid, char **sources, int nsources,
				   int first, int64 chunk_rows, int ranges, bool required)
{
	Size		len = 0;
	dsm_segment *seg;
	loader_args *a;
	char	   *p;
	BackgroundWorker bgw;
	loader	   *l = palloc0(sizeof(loader));
	static int	numbers = 0;

	for (int i = 0; i < nsources; i++)
		len += strlen(sources[i]) + 1;
	seg = dsm_create(offsetof(loader_args, sources) + len, 0);
	/* the segment lives until the caller's load ends, across its commits */
	dsm_pin_mapping(seg);
	a = dsm_segment_address(seg);
	memset(a, 0, offsetof(loader_args, sources));
	a->dboid = MyDatabaseId;
	a->userid = GetUserId();
	a->serverid = serverid;
	strlcpy(a->server_name, server_name, sizeof(a->server_name));
	a->chunk_rows = chunk_rows;
	a->first = first;
	a->ranges = ranges;
	a->nsources = nsources;
	a->sources_len = len;
	p = a->sources;
	for (int i = 0; i < nsources; i++)
	{
		size_t		n = strlen(sources[i]) + 1;

		memcpy(p, sources[i], n);
		p += n;
	}

	blpg_bgworker_init(&bgw, "blpg_loader_main", "loader",
					   psprintf("binlog_fdw loader for %s", server_name));
	bgw.bgw_main_arg = UInt32GetDatum(dsm_segment_handle(seg));
	bgw.bgw_notify_pid = MyProcPid;
	l->seg = seg;
	l->number = ++numbers;
	a->number = l->number;
	if (!RegisterDynamicBackgroundWorker(&bgw, &l->handle))
	{
		dsm_detach(seg);
		if (!required)
			return NULL;
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("could not start a background loader for binlog_fdw.load()"),
				 errhint("Raise max_worker_processes, or call load() with a smaller parallel.")));
	}
	return l;
}

void
blpg_loaders_wait(List *loaders)
{
	ListCell   *lc;
	char	   *failed = NULL;

	foreach(lc, loaders)
	{
		loader	   *l = lfirst(lc);
		loader_args *a = dsm_segment_address(l->seg);

		(void) WaitForBackgroundWorkerShutdown(l->handle);
		if (!a->done && failed == NULL)
			failed = pstrdup(a->error[0] ? a->error : "it exited before its tables were loaded");
	}
	foreach(lc, loaders)
		dsm_detach(((loader *) lfirst(lc))->seg);
	if (failed)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("a background loader of binlog_fdw.load() failed: %s", failed),
				 errhint("Call binlog_fdw.load() again: it goes on at the next chunk of each table.")));
}

void
blpg_loaders_stop(List *loaders)
{
	ListCell   *lc;

	foreach(lc, loaders)
	{
		loader	   *l = lfirst(lc);

		TerminateBackgroundWorker(l->handle);
		dsm_detach(l->seg);
	}
}

/*
 * A procedure's SPI runs its statements in its portal's snapshot; a
 * loader has no portal: it keeps an active snapshot of its own, taken
 * again after each commit.
 */
static void
loader_commit(void)
{
	PopActiveSnapshot();
	SPI_commit();
	/* chunks of one table append to its mapping row: read committed (load.c) */
	XactIsoLevel = XACT_READ_COMMITTED;
	PushActiveSnapshot(GetTransactionSnapshot());
}

void
blpg_loader_main(Datum main_arg)
{
	dsm_segment *seg;
	loader_args *a;
	char	  **sources;
	char	   *p;

	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	CurrentResourceOwner = ResourceOwnerCreate(NULL, "binlog_fdw loader");
	seg = dsm_attach(DatumGetUInt32(main_arg));
	if (seg == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("binlog_fdw loader: its load() ended before it started")));
	dsm_pin_mapping(seg);
	a = dsm_segment_address(seg);
	BackgroundWorkerInitializeConnectionByOid(a->dboid, a->userid, 0);
	pgstat_report_appname("binlog_fdw loader");

	sources = MemoryContextAllocZero(TopMemoryContext, sizeof(char *) * Max(a->nsources, 1));
	p = a->sources;
	for (int i = 0; i < a->nsources; i++)
	{
		sources[i] = MemoryContextStrdup(TopMemoryContext, p);
		p += strlen(p) + 1;
	}

	SetCurrentStatementStartTimestamp();
	/* chunks of one table append to its mapping row: read committed (load.c) */
	DefaultXactIsoLevel = XACT_READ_COMMITTED;
	StartTransactionCommand();
	PG_TRY();
	{
		blpg_source_config *cfg;
		blpg_apply_options opts;
		bl_source_options so;

		if (SPI_connect_ext(SPI_OPT_NONATOMIC) != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		PushActiveSnapshot(GetTransactionSnapshot());
		pgstat_report_activity(STATE_RUNNING, "binlog_fdw.load() in the background");
		cfg = blpg_load_config(a->serverid, a->userid);
		blpg_apply_options_load(a->serverid, &opts);
		blpg_snapshot_source_options(cfg, &so);
		blpg_load_tables(a->server_name, a->serverid, &so, &opts, sources, a->nsources,
						 a->first, a->chunk_rows, false, true, a->ranges, a->number,
						 loader_commit);
		PopActiveSnapshot();
		SPI_finish();
		CommitTransactionCommand();
		a->done = true;
	}
	PG_CATCH();
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
		ErrorData  *e = CopyErrorData();

		MemoryContextSwitchTo(old);
		if (strlen(e->message) < sizeof(a->error))
			strcpy(a->error, e->message);
		else
		{
			/* shown cut, and marked so; the whole message is in the log */
			int			n = pg_mbcliplen(e->message, strlen(e->message), sizeof(a->error) - 4);

			memcpy(a->error, e->message, n);
			strcpy(a->error + n, "...");
		}
		PG_RE_THROW();
	}
	PG_END_TRY();
	pgstat_report_activity(STATE_IDLE, NULL);
	proc_exit(0);
}
