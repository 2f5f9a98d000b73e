/*
 * commit.c
 *	  What start(), stop(), DROP SERVER and ALTER SERVER ... RENAME do to
 *	  the running workers, done when the transaction commits, as CREATE and
 *	  DROP SUBSCRIPTION do.  Until then the change is only a row in
 *	  binlog_fdw.started_sources (and the dropped or renamed server in the
 *	  catalog); a rollback, of the transaction or of the savepoint the
 *	  action was taken in, undoes both.
 *
 * The actions are kept in this backend, in order, and applied to the
 * shared slots by a commit callback: that runs after the commit is
 * visible (so a new worker sees the server created in the transaction)
 * and must not fail, so it only touches shared memory, sends signals and
 * registers background workers; what it cannot do (start a worker while
 * the previous one of the source still exits) the launcher finishes.
 *
 *   start    the slot is taken (or kept) with wanted = true, its worker
 *            launched unless one runs; a worker still exiting after a stop
 *            is relaunched by the launcher once gone (a restart)
 *   stop     wanted = false, stop requested, workers signalled; the slot
 *            is released by the last of them to exit
 *   rename   the slot shows the new name
 *   legacy   0.1's autostart file loses this database's lines (the update
 *            to 0.2 moved them into started_sources)
 *
 * A transaction with actions cannot be prepared (PREPARE TRANSACTION):
 * the backend that would commit it would not know them.
 */
#include "worker/worker.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include <signal.h>

typedef enum action_kind
{
	ACTION_START,
	ACTION_STOP,
	ACTION_RENAME,
	ACTION_LEGACY_CLEANUP
} action_kind;

typedef struct action
{
	action_kind kind;
	Oid			dboid;
	Oid			serverid;
	Oid			userid;
	bool		continuous;
	char		name[NAMEDATALEN];
	SubTransactionId subid;
} action;

static List *actions = NIL;		/* in TopMemoryContext */
static bool callbacks_registered = false;

static void commit_xact_callback(XactEvent event, void *arg);
static void commit_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
									SubTransactionId parentSubid, void *arg);

static void
add_action(action_kind kind, Oid serverid, const char *name, Oid userid, bool continuous)
{
	MemoryContext old;
	action	   *a;

	if (!callbacks_registered)
	{
		RegisterXactCallback(commit_xact_callback, NULL);
		RegisterSubXactCallback(commit_subxact_callback, NULL);
		callbacks_registered = true;
	}
	old = MemoryContextSwitchTo(TopMemoryContext);
	a = palloc0(sizeof(action));
	a->kind = kind;
	a->dboid = MyDatabaseId;
	a->serverid = serverid;
	a->userid = userid;
	a->continuous = continuous;
	strlcpy(a->name, name ? name : "", sizeof(a->name));
	a->subid = GetCurrentSubTransactionId();
	actions = lappend(actions, a);
	MemoryContextSwitchTo(old);
}

void
blpg_at_commit_start(Oid serverid, const char *name, Oid userid, bool continuous)
{
	add_action(ACTION_START, serverid, name, userid, continuous);
}

void
blpg_at_commit_stop(Oid serverid, const char *name)
{
	add_action(ACTION_STOP, serverid, name, InvalidOid, false);
}

void
blpg_at_commit_rename(Oid serverid, const char *newname)
{
	add_action(ACTION_RENAME, serverid, newname, InvalidOid, false);
}

void
blpg_at_commit_legacy_cleanup(void)
{
	add_action(ACTION_LEGACY_CLEANUP, InvalidOid, NULL, InvalidOid, false);
}

bool
blpg_pending_stop(Oid serverid)
{
	ListCell   *lc;
	bool		stop = false;

	foreach(lc, actions)
	{
		action	   *a = lfirst(lc);

		if (a->serverid == serverid && a->dboid == MyDatabaseId)
			stop = a->kind == ACTION_STOP ? true : a->kind == ACTION_START ? false : stop;
	}
	return stop;
}

/* ---- at commit: shared memory, signals, worker registration only ---- */

static void
commit_start(action *a)
{
	blpg_slot  *slot;
	bool		launch = false;

	if (blpg_shared == NULL)
		return;
	slot = blpg_acquire_slot(a->dboid, a->serverid, a->name, true);
	if (slot == NULL)
	{
		ereport(WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("no free binlog_fdw source slot for server \"%s\"", a->name),
				 errdetail("It is started but will run only once a slot is free: at the next server start, or after another source is stopped and it is started again."),
				 errhint("Stop another source, or raise binlog_fdw.max_sources and restart the server.")));
		return;
	}
	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	slot->wanted = true;
	slot->userid = a->userid;
	slot->continuous = a->continuous;
	if (slot->worker_pid == 0 && slot->state != BLPG_STATE_STARTING && slot->apply_pid == 0)
	{
		/* nothing runs: launch (a stop before this start is moot) */
		slot->stop_requested = false;
		slot->last_error[0] = '\0';
		slot->last_error_time = 0;
		slot->last_error_cleared = 0;
		launch = true;
	}
	/* else it runs, or still exits after a stop: the launcher relaunches */
	LWLockRelease(&slot->lock);
	blpg_guard_clear(a->dboid, a->serverid);
	if (launch)
		(void) blpg_launch_worker(slot);
	blpg_wake_launcher();		/* the apply worker, a relaunch */
}

static void
commit_stop(action *a)
{
	blpg_slot  *slot;
	int			pid,
				apply_pid;

	if (blpg_shared == NULL || (slot = blpg_find_slot(a->dboid, a->serverid)) == NULL)
		return;
	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	slot->wanted = false;
	slot->stop_requested = true;
	slot->continuous = false;
	pid = slot->worker_pid;
	apply_pid = slot->apply_pid;
	LWLockRelease(&slot->lock);
	ConditionVariableBroadcast(&slot->space_cv);
	ConditionVariableBroadcast(&slot->put_cv);
	if (pid != 0)
		kill(pid, SIGTERM);
	if (apply_pid != 0)
		kill(apply_pid, SIGTERM);
	/* nothing ran (or launched): free now; else its last worker frees it */
	(void) blpg_release_slot_if_idle(slot);
	blpg_wake_launcher();
}

static void
commit_rename(action *a)
{
	blpg_slot  *slot;

	if (blpg_shared == NULL || (slot = blpg_find_slot(a->dboid, a->serverid)) == NULL)
		return;
	LWLockAcquire(&blpg_shared->lock, LW_EXCLUSIVE);
	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	if (slot->in_use && slot->serverid == a->serverid)
		strlcpy(slot->server_name, a->name, NAMEDATALEN);
	LWLockRelease(&slot->lock);
	LWLockRelease(&blpg_shared->lock);
}

static void
run_actions(List *todo)
{
	ListCell   *lc;

	foreach(lc, todo)
	{
		action	   *a = lfirst(lc);

		switch (a->kind)
		{
			case ACTION_START:
				commit_start(a);
				break;
			case ACTION_STOP:
				commit_stop(a);
				break;
			case ACTION_RENAME:
				commit_rename(a);
				break;
			case ACTION_LEGACY_CLEANUP:
				blpg_legacy_remove_database(a->dboid);
				break;
		}
	}
}

static void
commit_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_PREPARE:
			if (actions != NIL)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot prepare a transaction that started, stopped, dropped or renamed a binlog_fdw source")));
			break;
		case XACT_EVENT_COMMIT:
			if (actions != NIL)
			{
				List	   *todo = actions;

				/* whatever happens, each action runs at most once */
				actions = NIL;
				PG_TRY();
				{
					run_actions(todo);
				}
				PG_FINALLY();
				{
					list_free_deep(todo);
				}
				PG_END_TRY();
			}
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			list_free_deep(actions);
			actions = NIL;
			break;
		default:
			break;
	}
}

static void
commit_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						SubTransactionId parentSubid, void *arg)
{
	ListCell   *lc;

	if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		foreach(lc, actions)
		{
			action	   *a = lfirst(lc);

			if (a->subid == mySubid)
			{
				actions = foreach_delete_current(actions, lc);
				pfree(a);
			}
		}
	}
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
		foreach(lc, actions)
		{
			action	   *a = lfirst(lc);

			if (a->subid == mySubid)
				a->subid = parentSubid;
		}
	}
}
