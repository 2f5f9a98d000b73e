/*
 * launcher.c
 *	  The launcher background worker: at server start (and after a crash
 *	  restart) it starts the sources listed in the autostart file, then
 *	  checks every few seconds that each of them has a worker, restarting
 *	  any that exited.
 */
#include "worker/worker.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"


void
blpg_register_launcher(void)
{
	BackgroundWorker bgw;

	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS;
	bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw.bgw_restart_time = 5;
	snprintf(bgw.bgw_library_name, BGW_MAXLEN, "binlog_fdw");
	snprintf(bgw.bgw_function_name, BGW_MAXLEN, "blpg_launcher_main");
	snprintf(bgw.bgw_name, BGW_MAXLEN, "binlog_fdw launcher");
	snprintf(bgw.bgw_type, BGW_MAXLEN, "binlog_fdw launcher");
	RegisterBackgroundWorker(&bgw);
}

void
blpg_launcher_main(Datum main_arg)
{
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();
	blpg_worker_require_shmem("binlog_fdw launcher");

	while (!ShutdownRequestPending)
	{
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		blpg_autostart_all();
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 5000, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	proc_exit(0);
}
