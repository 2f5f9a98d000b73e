/*
 * bgworker.c
 *	  The extension's background workers (launcher, starters, source and
 *	  apply workers, loaders, reloaders) described alike: a database
 *	  connection, started once recovery is over, never restarted by the
 *	  postmaster (their launchers supervise them), in library binlog_fdw.
 */
#include "base/base.h"

#include "postmaster/bgworker.h"

void
blpg_bgworker_init(BackgroundWorker *bgw, const char *function, const char *type,
				   const char *name)
{
	memset(bgw, 0, sizeof(*bgw));
	bgw->bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw->bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw->bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(bgw->bgw_library_name, BGW_MAXLEN, "binlog_fdw");
	snprintf(bgw->bgw_function_name, BGW_MAXLEN, "%s", function);
	snprintf(bgw->bgw_type, BGW_MAXLEN, "binlog_fdw %s", type);
	snprintf(bgw->bgw_name, BGW_MAXLEN, "%s", name);
}
