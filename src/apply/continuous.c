/*
 * continuous.c
 *	  Continuous mode: a background worker per source (server option
 *	  continuous 'true') that applies changes as they arrive, one PostgreSQL
 *	  transaction per round, with the same exactly-once guarantee as
 *	  binlog_fdw.apply().  It waits on the ring's put condition variable, so
 *	  a change committed in MySQL is applied within milliseconds of the
 *	  streaming worker putting it.  On an error it records it in the status
 *	  view, rolls back, and retries after a pause: the failed change stays
 *	  un-applied until the cause is fixed.
 */
#include "apply/apply.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

int			blpg_continuous_synchronous_commit = SYNCHRONOUS_COMMIT_OFF;

const struct config_enum_entry blpg_synchronous_commit_options[] = {
	{"local", SYNCHRONOUS_COMMIT_LOCAL_FLUSH, false},
	{"remote_write", SYNCHRONOUS_COMMIT_REMOTE_WRITE, false},
	{"remote_apply", SYNCHRONOUS_COMMIT_REMOTE_APPLY, false},
	{"on", SYNCHRONOUS_COMMIT_ON, false},
	{"off", SYNCHRONOUS_COMMIT_OFF, false},
	{NULL, 0, false}
};

static volatile sig_atomic_t apply_sigterm = false;

/*
 * The worker's transactions commit with binlog_fdw.continuous_synchronous_commit
 * (off by default, as PostgreSQL's subscription apply workers do): the rows
 * and the source position commit together, so an unflushed commit lost in
 * a crash is applied again from the older position, never twice.
 */
static void
apply_set_synchronous_commit(void)
{
	for (const struct config_enum_entry *o = blpg_synchronous_commit_options; o->name; o++)
		if (o->val == blpg_continuous_synchronous_commit)
		{
			SetConfigOption("synchronous_commit", o->name, PGC_SUSET, PGC_S_OVERRIDE);
			return;
		}
}

/*
 * The session of a continuous-mode applier (the continuous worker, the
 * apply workers of parallel.c): its synchronous_commit, and, as
 * PostgreSQL's subscription workers, session_replication_role = replica:
 * only ENABLE REPLICA and ENABLE ALWAYS triggers fire, so foreign keys are
 * not checked (the source checked them).  apply() called by a user
 * follows its session.
 */
void
blpg_apply_session_setup(void)
{
	apply_set_synchronous_commit();
	SetConfigOption("session_replication_role", "replica", PGC_SUSET, PGC_S_OVERRIDE);
}

static void
apply_handle_sigterm(SIGNAL_ARGS)
{
	int			save_errno = errno;

	apply_sigterm = true;
	SetLatch(MyLatch);
	errno = save_errno;
}

static void
apply_worker_exit(int code, Datum arg)
{
	blpg_slot  *slot = (blpg_slot *) DatumGetPointer(arg);

	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	if (slot->apply_pid == MyProcPid)
		slot->apply_pid = 0;
	LWLockRelease(&slot->lock);
	/* stopped: the last one out frees the slot */
	(void) blpg_release_slot_if_idle(slot);
	blpg_wake_launcher();
}

static bool
apply_should_stop(blpg_slot *slot)
{
	bool		stop;

	if (apply_sigterm)
		return true;
	LWLockAcquire(&slot->lock, LW_SHARED);
	stop = slot->stop_requested || !slot->continuous;
	LWLockRelease(&slot->lock);
	return stop;
}

void
blpg_apply_worker_main(Datum main_arg)
{
	int			index = DatumGetInt32(main_arg);
	blpg_slot  *slot;
	Oid			dboid,
				serverid,
				userid;
	uint64		token;
	bool		mine;
	char		server[NAMEDATALEN];
	MemoryContext cxt;
	volatile bool serial_next = false;

	pqsignal(SIGTERM, apply_handle_sigterm);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();
	blpg_worker_require_shmem("binlog_fdw apply worker");
	if (index < 0 || index >= blpg_shared->max_sources)
		proc_exit(0);
	slot = &blpg_shared->slots[index];
	memcpy(&token, MyBgworkerEntry->bgw_extra, sizeof(token));

	LWLockAcquire(&blpg_shared->lock, LW_SHARED);
	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	/* launched for this allocation of the slot, and the only one */
	mine = slot->in_use && slot->token == token &&
		(slot->apply_pid == 0 || slot->apply_pid == MyProcPid);
	dboid = slot->dboid;
	serverid = slot->serverid;
	userid = slot->userid;
	if (mine)
		slot->apply_pid = MyProcPid;
	LWLockRelease(&slot->lock);
	LWLockRelease(&blpg_shared->lock);
	if (!mine)
		proc_exit(0);
	before_shmem_exit(apply_worker_exit, PointerGetDatum(slot));
	BackgroundWorkerInitializeConnectionByOid(dboid, userid, 0);
	pgstat_report_appname("binlog_fdw apply");
	blpg_apply_session_setup();
	cxt = AllocSetContextCreate(TopMemoryContext, "binlog_fdw apply worker",
								ALLOCSET_DEFAULT_SIZES);

	while (!apply_should_stop(slot))
	{
		blpg_apply_result res;
		volatile bool failed = false;
		/* binlog_fdw.apply_workers > 1: parallel, but a barrier or a retry serially */
		bool		parallel = blpg_apply_workers_effective() > 1 && !serial_next;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			apply_set_synchronous_commit();
		}
		MemoryContextSwitchTo(cxt);
		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		PushActiveSnapshot(GetTransactionSnapshot());
		pgstat_report_activity(STATE_RUNNING, "binlog_fdw apply");
		PG_TRY();
		{
			/* the server's name now (it may have been renamed) */
			ForeignServer *fs = GetForeignServerExtended(serverid, FSV_MISSING_OK);

			if (fs == NULL)
				proc_exit(0);	/* dropped: its stop is on the way */
			strlcpy(server, fs->servername, sizeof(server));
			/* up to 10000 rows or 1 s; wait up to 1 s for changes */
			if (parallel)
			{
				bool		barrier = false;

				if (blpg_parallel_apply_run(server, 10000, 1000, 1000, &res, &barrier))
					serial_next = barrier;
				else
					blpg_apply_run(server, 10000, 1000, 1000, &res);
			}
			else if (serial_next)
			{
				/* the barrier, or the change that failed: one transaction */
				blpg_apply_run(server, 1, 1000, 0, &res);
				serial_next = false;
			}
			else
			{
				blpg_parallel_shutdown();
				blpg_apply_run(server, 10000, 1000, 1000, &res);
			}
			PopActiveSnapshot();
			CommitTransactionCommand();
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			MemoryContextSwitchTo(cxt);
			edata = CopyErrorData();
			FlushErrorState();
			AbortCurrentTransaction();
			LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
			snprintf(slot->apply_error, sizeof(slot->apply_error), "%s%s%s%s%s",
					 edata->message, edata->context ? " CONTEXT: " : "",
					 edata->context ? edata->context : "", edata->hint ? " HINT: " : "",
					 edata->hint ? edata->hint : "");
			slot->apply_error_time = GetCurrentTimestamp();
			slot->apply_error_cleared = 0;
			LWLockRelease(&slot->lock);
			ereport(LOG,
					(errcode(edata->sqlerrcode),
					 errmsg("binlog_fdw apply of source \"%s\": %s", server, edata->message),
					 edata->context ? errcontext("%s", edata->context) : 0));
			FreeErrorData(edata);
			failed = true;
			/* the retry is serial: it reports and handles the failing change */
			serial_next = blpg_apply_workers_effective() > 1;
		}
		PG_END_TRY();
		pgstat_report_activity(STATE_IDLE, NULL);
		MemoryContextReset(cxt);
		if (failed)
		{
			/* let the cause be fixed; then the same change is retried */
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 5000, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			continue;
		}
		/* only this worker writes apply_error*: read without the lock */
		if (res.transactions > 0 || (slot->apply_error_time != 0 && slot->apply_error_cleared == 0))
		{
			TimestampTz now = GetCurrentTimestamp();

			LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
			slot->applied_transactions += res.transactions;
			slot->applied_rows += res.rows;
			if (res.transactions > 0)
			{
				slot->apply_lag_seconds = res.lag_seconds;
				slot->apply_last_commit = now;
			}
			/* applying again: the last error is over (it stays shown) */
			if (slot->apply_error_time != 0 && slot->apply_error_cleared == 0)
				slot->apply_error_cleared = now;
			LWLockRelease(&slot->lock);
		}
	}
	proc_exit(0);
}
