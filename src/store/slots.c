/*
 * slots.c
 *	  binlog_fdw's shared memory: the slot array and the rings, allocated at
 *	  server start, and slot allocation by foreign server (see store.h
 *	  for the locking rules).  A slot is released when nothing runs for
 *	  it and nothing should (blpg_release_slot_if_idle): by the last of its
 *	  workers to exit, the commit of a stop, or the launcher.
 */
#include "store/store.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/builtins.h"

#include <time.h>

blpg_shared_state *blpg_shared = NULL;
int			blpg_max_sources = 4;
int			blpg_ring_size_kb = 16 * 1024;

const char *
blpg_state_name(blpg_worker_state state)
{
	switch (state)
	{
		case BLPG_STATE_STOPPED:
			return "stopped";
		case BLPG_STATE_STARTING:
			return "starting";
		case BLPG_STATE_CONNECTING:
			return "connecting";
		case BLPG_STATE_STREAMING:
			return "streaming";
		case BLPG_STATE_RING_FULL:
			return "ring full";
		case BLPG_STATE_RECONNECTING:
			return "reconnecting";
		case BLPG_STATE_ERROR:
			return "error";
	}
	return "unknown";
}

static Size
ring_bytes(void)
{
	return (Size) blpg_ring_size_kb * 1024;
}

static Size
shared_size(void)
{
	Size		size;

	size = add_size(offsetof(blpg_shared_state, slots),
					mul_size(blpg_max_sources, sizeof(blpg_slot)));
	size = add_size(size, mul_size(blpg_max_sources, ring_bytes()));
	return size;
}

void
blpg_shmem_request(void)
{
	RequestAddinShmemSpace(shared_size());
}

void
blpg_shmem_startup(void)
{
	bool		found;
	char	   *rings;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	blpg_shared = ShmemInitStruct("binlog_fdw", shared_size(), &found);
	rings = (char *) blpg_shared + offsetof(blpg_shared_state, slots) +
		sizeof(blpg_slot) * blpg_max_sources;
	if (!found)
	{
		memset(blpg_shared, 0, offsetof(blpg_shared_state, slots) +
			   sizeof(blpg_slot) * blpg_max_sources);
		blpg_shared->tranche_id = LWLockNewTrancheId();
		LWLockInitialize(&blpg_shared->lock, blpg_shared->tranche_id);
		blpg_shared->max_sources = blpg_max_sources;
		blpg_shared->ring_size = ring_bytes();
		for (int i = 0; i < blpg_max_sources; i++)
		{
			blpg_slot  *slot = &blpg_shared->slots[i];

			LWLockInitialize(&slot->lock, blpg_shared->tranche_id);
			ConditionVariableInit(&slot->put_cv);
			ConditionVariableInit(&slot->space_cv);
			slot->ring_size = ring_bytes();
		}
	}
	LWLockRegisterTranche(blpg_shared->tranche_id, "binlog_fdw");
	/* every process maps the rings at the same address, but compute it */
	for (int i = 0; i < blpg_max_sources; i++)
		blpg_shared->slots[i].ring = rings + (Size) i * ring_bytes();
	LWLockRelease(AddinShmemInitLock);
}

void
blpg_require_shmem(void)
{
	if (blpg_shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("binlog_fdw must be loaded via shared_preload_libraries"),
				 errdetail("Either it is not in shared_preload_libraries, or the library file was replaced (a new version installed) since the server started."),
				 errhint("Add binlog_fdw to shared_preload_libraries in postgresql.conf and restart the server.")));
}

/*
 * Background workers start in a fresh process that finds the library the
 * postmaster preloaded, with its shared state attached.  If the library
 * file was replaced since the server started, the process loads the new
 * file instead, whose state is not attached: it must exit, not touch
 * shared memory.  Exit code 0 keeps the postmaster from restarting it.
 */
void
blpg_worker_require_shmem(const char *what)
{
	if (blpg_shared == NULL)
	{
		ereport(LOG,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s cannot run: binlog_fdw's shared memory is not attached in this process", what),
				 errdetail("The library file was probably replaced (a new version installed) since the server started."),
				 errhint("Restart the server to load the installed version.")));
		proc_exit(0);
	}
}

blpg_slot *
blpg_find_slot(Oid dboid, Oid serverid)
{
	blpg_slot  *found = NULL;

	blpg_require_shmem();
	LWLockAcquire(&blpg_shared->lock, LW_SHARED);
	for (int i = 0; i < blpg_shared->max_sources; i++)
	{
		blpg_slot  *slot = &blpg_shared->slots[i];

		if (slot->in_use && slot->dboid == dboid && slot->serverid == serverid)
		{
			found = slot;
			break;
		}
	}
	LWLockRelease(&blpg_shared->lock);
	return found;
}

blpg_slot *
blpg_acquire_slot(Oid dboid, Oid serverid, const char *name, bool noerror)
{
	blpg_slot  *found = NULL;

	blpg_require_shmem();
	LWLockAcquire(&blpg_shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < blpg_shared->max_sources && !found; i++)
	{
		blpg_slot  *slot = &blpg_shared->slots[i];

		if (slot->in_use && slot->dboid == dboid && slot->serverid == serverid)
			found = slot;
	}
	for (int i = 0; i < blpg_shared->max_sources && !found; i++)
	{
		blpg_slot  *slot = &blpg_shared->slots[i];

		if (!slot->in_use)
		{
			found = slot;
			LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
			slot->in_use = true;
			slot->dboid = dboid;
			slot->serverid = serverid;
			strlcpy(slot->server_name, name, NAMEDATALEN);
			slot->token = ++blpg_shared->next_token;
			slot->wanted = false;
			slot->launched_at = slot->apply_launched_at = 0;
			slot->worker_pid = 0;
			slot->state = BLPG_STATE_STOPPED;
			slot->stop_requested = false;
			slot->rewind_requested = false;
			slot->last_error[0] = '\0';
			/* batch ids stay unique across server restarts */
			slot->next_batch_id = ((uint64) time(NULL) << 20) + 1;
			slot->last_error_time = 0;
			slot->last_error_cleared = 0;
			memset(&slot->read, 0, sizeof(slot->read));
			memset(&slot->acked, 0, sizeof(slot->acked));
			slot->par_workers = 0;
			slot->par_dispatched = slot->par_key_waits = slot->par_barriers = 0;
			slot->par_hint_releases = 0;
			slot->par_max_in_flight = 0;
			/*
			 * Nothing of a previous source shows through: an empty ring, new
			 * sequences and statistics (a new generation voids its acks).
			 */
			slot->generation++;
			slot->put_off = slot->ack_off = slot->get_off = 0;
			slot->put_seq = slot->get_seq = slot->ack_seq = 0;
			slot->ack_reserved_seq = 0;
			slot->entries = 0;
			slot->nbatches = 0;
			slot->connected_since = 0;
			slot->source_version[0] = '\0';
			slot->binlog_format[0] = '\0';
			slot->source_host[0] = '\0';
			slot->source_oldest_file[0] = '\0';
			slot->retention_files = -2;
			slot->binlog_expire_seconds = -1;
			slot->changes_total = slot->transactions_total = 0;
			slot->bytes_read = 0;
			slot->changes_per_sec = 0;
			slot->last_event_ts = slot->last_heartbeat = slot->last_activity = 0;
			slot->peak_worker_rss_kb = 0;
			/* nor of its continuous apply */
			slot->continuous = false;
			slot->apply_pid = 0;
			slot->applied_transactions = slot->applied_rows = 0;
			slot->apply_lag_seconds = 0;
			slot->apply_last_commit = 0;
			slot->apply_error[0] = '\0';
			slot->apply_error_time = 0;
			slot->apply_error_cleared = 0;
			slot->stopped_conflict[0] = '\0';
			slot->stopped_file[0] = '\0';
			slot->stopped_pos = slot->stopped_seq = slot->stopped_attempts = 0;
			slot->apply_errors = slot->reconnects = slot->ring_wait_us = 0;
			slot->streamed_once = false;
			slot->flushed_bytes = slot->flushed_reconnects = 0;
			slot->flushed_ring_wait_us = slot->flushed_errors = 0;
			LWLockRelease(&slot->lock);
		}
	}
	LWLockRelease(&blpg_shared->lock);
	if (found == NULL && noerror)
		return NULL;
	if (found == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("no free binlog_fdw source slot for server \"%s\"", name),
				 errdetail("All %d slots (binlog_fdw.max_sources) are in use.",
						   blpg_shared->max_sources),
				 errhint("Stop another source, or raise binlog_fdw.max_sources and restart the server.")));
	return found;
}

void
blpg_release_slot(blpg_slot *slot)
{
	LWLockAcquire(&blpg_shared->lock, LW_EXCLUSIVE);
	slot->in_use = false;
	slot->serverid = InvalidOid;
	LWLockRelease(&blpg_shared->lock);
}

bool
blpg_release_slot_if_idle(blpg_slot *slot)
{
	bool		idle;

	LWLockAcquire(&blpg_shared->lock, LW_EXCLUSIVE);
	LWLockAcquire(&slot->lock, LW_SHARED);
	idle = slot->in_use && !slot->wanted && slot->worker_pid == 0 &&
		slot->apply_pid == 0 && slot->state != BLPG_STATE_STARTING;
	LWLockRelease(&slot->lock);
	if (idle)
	{
		slot->in_use = false;
		slot->serverid = InvalidOid;
	}
	LWLockRelease(&blpg_shared->lock);
	return idle;
}

int
blpg_free_slots(void)
{
	int			n = 0;

	LWLockAcquire(&blpg_shared->lock, LW_SHARED);
	for (int i = 0; i < blpg_shared->max_sources; i++)
		if (!blpg_shared->slots[i].in_use || !blpg_shared->slots[i].wanted)
			n++;
	LWLockRelease(&blpg_shared->lock);
	return n;
}

void
blpg_wake_launcher(void)
{
	if (blpg_shared == NULL)
		return;
	LWLockAcquire(&blpg_shared->lock, LW_SHARED);
	if (blpg_shared->launcher_latch)
		SetLatch(blpg_shared->launcher_latch);
	LWLockRelease(&blpg_shared->lock);
}
