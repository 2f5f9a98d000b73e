/*
 * batches.c
 *	  The consumer protocol of the store: batches taken out of a source's
 *	  ring, acknowledged or rolled back (Canal's get/ack/rollback; the SQL
 *	  functions are in src/sql/get.c, the apply path calls the
 *	  blpg_consume_* functions directly).
 *
 * Batches end at transaction boundaries (COMMIT or DDL) unless one
 * transaction alone is larger than max_changes or than the ring, in which
 * case its changes come in several batches between its BEGIN and COMMIT
 * markers.  Acks must come in order.  An ack is transactional: the
 * position is written to binlog_fdw.source_state in the caller's
 * transaction, and the ring space is released when that transaction
 * commits (a transaction callback); if it aborts, the batch stays
 * un-acked.  A backend that exits with batches still out rolls them back.
 * Acknowledgements made in a subtransaction that aborts (a savepoint, a
 * PL/pgSQL exception block) are undone with it.  Batches the apply path
 * takes (blpg_consume_take) are delivered again when the (sub)transaction
 * that took them aborts.
 */
#include "store/store.h"

#include "access/xact.h"
#include "catalog/pg_foreign_server.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/ipc.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

typedef struct pending_ack
{
	blpg_slot  *slot;
	uint32		generation;
	uint64		batch_id;
	uint64		last_seq;
	blpg_slot_position pos;		/* for the slot at commit (the GTID state
								 * is in the durable row) */
	SubTransactionId subid;		/* the (sub)transaction that acknowledged */
} pending_ack;

static List *pending_acks = NIL;	/* in TopMemoryContext */
static bool callbacks_registered = false;

static void consume_xact_callback(XactEvent event, void *arg);
static void consume_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
									 SubTransactionId parentSubid, void *arg);
static void consume_exit_callback(int code, Datum arg);

static void
register_callbacks(void)
{
	if (callbacks_registered)
		return;
	RegisterXactCallback(consume_xact_callback, NULL);
	RegisterSubXactCallback(consume_subxact_callback, NULL);
	before_shmem_exit(consume_exit_callback, (Datum) 0);
	callbacks_registered = true;
}

blpg_slot *
blpg_consumer_slot(const char *name, ForeignServer **server_out)
{
	ForeignServer *server;
	blpg_slot  *slot;

	blpg_require_shmem();
	server = blpg_lookup_source(name, ACL_USAGE);
	slot = blpg_find_slot(MyDatabaseId, server->serverid);
	/* a source whose stop committed is not started, even while it exits */
	if (slot == NULL || !slot->wanted)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("source \"%s\" is not started", server->servername),
				 errhint("Start it with SELECT binlog_fdw.start('%s').", server->servername)));
	if (server_out)
		*server_out = server;
	return slot;
}

static int
find_batch(blpg_slot *slot, uint64 batch_id)
{
	for (int i = 0; i < slot->nbatches; i++)
		if (slot->batches[i].batch_id == batch_id)
			return i;
	return -1;
}

static void
drop_batches(blpg_slot *slot, int from)
{
	slot->nbatches = from;
	if (from == 0)
	{
		slot->get_seq = Max(slot->ack_seq, slot->ack_reserved_seq);
	}
	else
		slot->get_seq = slot->batches[from - 1].last_seq;
	slot->get_off = blpg_ring_find(slot, slot->ack_off, slot->get_seq + 1);
}

/*
 * Copy changes get_seq+1 .. get_seq+max under the lock and cut the range
 * at the last transaction boundary; returns the last sequence taken (or
 * get_seq if nothing is ready).
 */
static uint64
take_batch(blpg_slot *slot, int max_changes, bool first_boundary, StringInfo buf,
		   uint64 *first_out)
{
	uint64		first = slot->get_seq + 1;
	uint64		last = Min(slot->put_seq, slot->get_seq + (uint64) max_changes);
	uint64		boundary = 0;
	bool		limited_by_max;
	uint64		off;
	uint64		bytes = 0,		/* of the entries up to last, */
				bytes_boundary = 0; /* up to boundary */

	*first_out = first;
	if (first > last)
		return slot->get_seq;
	/* the last transaction boundary in range, scanning in place */
	for (off = slot->get_off; off < slot->put_off;)
	{
		const blpg_entry *e = blpg_ring_entry(slot, off);

		off += e->total_len;
		if (e->kind == BLPG_ENTRY_WRAP)
			continue;
		if (e->seq_first > last)
			break;
		bytes += e->total_len;
		if ((e->kind == BLPG_ENTRY_COMMIT || e->kind == BLPG_ENTRY_DDL) &&
			e->seq_first >= first)
		{
			boundary = e->seq_first;
			bytes_boundary = bytes;
			if (first_boundary)
				break;
		}
	}
	limited_by_max = last == slot->get_seq + (uint64) max_changes;
	if (boundary)
		last = boundary;
	else if (!limited_by_max && slot->state != BLPG_STATE_RING_FULL)
		return slot->get_seq;	/* wait for the whole transaction */
	/* no complete transaction: a part, if it can never be whole */
	if (buf)
	{
		uint64		need = boundary ? bytes_boundary : bytes;

		/* one allocation of the right size (this runs under the lock) */
		resetStringInfo(buf);
		if (need < (uint64) (MaxAllocSize / 2))
			enlargeStringInfo(buf, (int) need);
		blpg_ring_copy(slot, slot->get_off, first, last, buf);
	}
	return last;
}

/*
 * get(): take the next batch into buf, waiting up to timeout_ms for one to
 * be ready; returns its id (0: none came) and its first and last sequences.
 */
uint64
blpg_consume_get(blpg_slot *slot, int max_changes, int timeout_ms, StringInfo buf,
				 uint64 *first, uint64 *last)
{
	const char *name = slot->server_name;
	TimestampTz deadline;
	bool		slept = false;
	uint64		batch_id = 0;

	register_callbacks();
	*first = *last = 0;
	deadline = GetCurrentTimestamp() + (TimestampTz) Max(timeout_ms, 0) * 1000;
	for (;;)
	{
		LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
		if (slot->nbatches >= BLPG_MAX_BATCHES)
		{
			LWLockRelease(&slot->lock);
			ereport(ERROR,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("source \"%s\" has %d batches out", name, BLPG_MAX_BATCHES),
					 errhint("Acknowledge or roll back batches before getting more.")));
		}
		*last = take_batch(slot, max_changes, false, buf, first);
		if (*last >= *first)
		{
			blpg_batch *b = &slot->batches[slot->nbatches++];

			batch_id = slot->next_batch_id++;
			b->batch_id = batch_id;
			b->first_seq = *first;
			b->last_seq = *last;
			b->owner_pid = MyProcPid;
			b->ack_pending = false;
			slot->get_seq = *last;
			slot->get_off = blpg_ring_find(slot, slot->get_off, *last + 1);
		}
		LWLockRelease(&slot->lock);
		if (batch_id || GetCurrentTimestamp() >= deadline)
			break;
		if (!slept)
		{
			ConditionVariablePrepareToSleep(&slot->put_cv);
			slept = true;
			continue;
		}
		(void) ConditionVariableTimedSleep(&slot->put_cv,
										   Max(1, Min(1000, (deadline - GetCurrentTimestamp()) / 1000)),
										   PG_WAIT_EXTENSION);
		CHECK_FOR_INTERRUPTS();
	}
	if (slept)
		ConditionVariableCancelSleep();
	return batch_id;
}

/*
 * ack(): acknowledge the oldest outstanding batch in the current
 * transaction (errors for an id that is unknown, being acknowledged, or
 * not the oldest); returns its last sequence.
 */
uint64
blpg_consume_ack_next(blpg_slot *slot, ForeignServer *server, uint64 batch_id)
{
	const char *name = server->servername;
	pending_ack *pa;
	int			i,
				oldest = -1;
	blpg_position pos;
	uint64		last_seq,
				first_seq;
	uint32		generation;
	MemoryContext old;

	register_callbacks();
	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	i = find_batch(slot, batch_id);
	for (int k = 0; k < slot->nbatches; k++)
		if (!slot->batches[k].ack_pending)
		{
			oldest = k;
			break;
		}
	if (i < 0)
	{
		LWLockRelease(&slot->lock);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("batch %lld is not outstanding on source \"%s\"",
						(long long) (int64) batch_id, name),
				 errdetail("It was acknowledged or rolled back already, or the source restarted since get() returned it."),
				 errhint("Call get() again: the changes that were not acknowledged are delivered again.")));
	}
	if (slot->batches[i].ack_pending)
	{
		LWLockRelease(&slot->lock);
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("batch %lld of source \"%s\" is being acknowledged by a transaction in progress",
						(long long) (int64) batch_id, name)));
	}
	if (i != oldest)
	{
		uint64		first_id = slot->batches[oldest].batch_id;

		LWLockRelease(&slot->lock);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("batch %lld of source \"%s\" cannot be acknowledged before batch %lld",
						(long long) (int64) batch_id, name, (long long) (int64) first_id),
				 errdetail("Batches are acknowledged in the order get() returned them.")));
	}
	last_seq = slot->batches[i].last_seq;
	first_seq = slot->batches[i].first_seq;
	if (!blpg_ring_position_after(slot, last_seq, &pos))
	{
		LWLockRelease(&slot->lock);
		elog(ERROR, "binlog_fdw: batch %llu is no longer in the ring", (unsigned long long) batch_id);
	}
	slot->batches[i].ack_pending = true;
	if (slot->ack_reserved_seq < last_seq)
		slot->ack_reserved_seq = last_seq;
	generation = slot->generation;
	LWLockRelease(&slot->lock);

	old = MemoryContextSwitchTo(TopMemoryContext);
	pa = palloc(sizeof(pending_ack));
	pa->slot = slot;
	pa->generation = generation;
	pa->batch_id = batch_id;
	pa->last_seq = last_seq;
	blpg_position_to_slot(&pos, &pa->pos);
	pa->subid = GetCurrentSubTransactionId();
	pending_acks = lappend(pending_acks, pa);
	MemoryContextSwitchTo(old);

	/* the durable part, in the caller's transaction */
	blpg_state_save(server->serverid, &pos);
	blpg_history_acked(slot, server->serverid, first_seq, last_seq);
	if (pos.gtid_state)
		pfree(pos.gtid_state);
	return last_seq;
}

/*
 * rollback(): deliver again batch_id and the batches after it, or (all)
 * every batch not being acknowledged; returns how many batches that was.
 */
int
blpg_consume_rollback(blpg_slot *slot, bool all, uint64 batch_id)
{
	const char *name = slot->server_name;
	int			from = -1;
	int			dropped;

	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	if (all)
	{
		/* everything not being acknowledged */
		from = 0;
		while (from < slot->nbatches && slot->batches[from].ack_pending)
			from++;
	}
	else
	{
		from = find_batch(slot, batch_id);
		if (from < 0 || slot->batches[from].ack_pending)
		{
			LWLockRelease(&slot->lock);
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("batch %lld is not outstanding on source \"%s\"",
							(long long) (int64) batch_id, name)));
		}
	}
	dropped = slot->nbatches - from;
	drop_batches(slot, from);
	LWLockRelease(&slot->lock);
	ConditionVariableBroadcast(&slot->put_cv);
	return dropped;
}

/* ---- for the apply path (src/apply/apply.c) ---- */

/*
 * What the apply path did in the current transaction: ring space released
 * early (the worker must rewind if that aborts) and batches taken (they
 * are delivered again if that aborts), per subtransaction.
 */
typedef struct released_early
{
	blpg_slot  *slot;
	uint32		generation;
	SubTransactionId subid;
} released_early;

static List *released_in_xact = NIL;	/* slots to rewind if we abort */
static List *taken_in_xact = NIL;	/* released_early entries too */

/*
 * Take the next changes as a batch owned by this backend, as get() does;
 * allow_partial also returns part of an unfinished transaction when no
 * more is coming (ring full).  false if nothing is ready.
 */
bool
blpg_consume_take(blpg_slot *slot, int max_changes, bool first_boundary, StringInfo buf,
				  uint64 *first, uint64 *last, uint64 *batch_id, uint64 *start_off)
{
	bool		took;

	register_callbacks();
	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	for (int i = 0; i < slot->nbatches; i++)
		if (slot->batches[i].owner_pid != MyProcPid)
		{
			int			owner = slot->batches[i].owner_pid;

			LWLockRelease(&slot->lock);
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_IN_USE),
					 errmsg("source \"%s\" has changes out with another consumer (pid %d)",
							slot->server_name, owner),
					 errhint("apply() and get() cannot share a source: acknowledge or roll back that consumer's batches.")));
		}
	if (slot->nbatches >= BLPG_MAX_BATCHES)
	{
		LWLockRelease(&slot->lock);
		elog(ERROR, "binlog_fdw: too many batches out on source \"%s\"", slot->server_name);
	}
	*last = take_batch(slot, max_changes, first_boundary, buf, first);
	took = *last >= *first;
	if (start_off)
		*start_off = slot->get_off;
	if (took)
	{
		blpg_batch *b = &slot->batches[slot->nbatches++];

		*batch_id = slot->next_batch_id++;
		b->batch_id = *batch_id;
		b->first_seq = *first;
		b->last_seq = *last;
		b->owner_pid = MyProcPid;
		b->ack_pending = false;
		slot->get_seq = *last;
		slot->get_off = blpg_ring_find(slot, slot->get_off, *last + 1);
	}
	LWLockRelease(&slot->lock);
	if (took)
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
		released_early *t = palloc(sizeof(released_early));

		t->slot = slot;
		t->generation = slot->generation;
		t->subid = GetCurrentSubTransactionId();
		taken_in_xact = lappend(taken_in_xact, t);
		MemoryContextSwitchTo(old);
	}
	return took;
}

/*
 * Deliver again the batches this backend took and did not acknowledge: an
 * apply() whose transaction aborted left them out, and taking more after
 * them would skip their changes.  The next take starts at the first change
 * not acknowledged (batches being acknowledged in this transaction stay).
 */
void
blpg_consume_rollback_own(blpg_slot *slot)
{
	int			from = -1;

	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	for (int i = 0; i < slot->nbatches; i++)
		if (slot->batches[i].owner_pid == MyProcPid && !slot->batches[i].ack_pending)
		{
			from = i;
			break;
		}
	/* only when nothing of another consumer follows (take refuses that) */
	for (int i = Max(from, 0); from >= 0 && i < slot->nbatches; i++)
		if (slot->batches[i].owner_pid != MyProcPid)
			from = -1;
	if (from >= 0)
		drop_batches(slot, from);
	LWLockRelease(&slot->lock);
	if (from >= 0)
		ConditionVariableBroadcast(&slot->put_cv);
}

/*
 * Shorten the newest batch to end at new_last (the changes after it come
 * again with the next take); new_last before its first change drops the
 * batch.  false if it is not the newest (another consumer took one since)
 * or does not end after new_last.
 */
bool
blpg_consume_shorten(blpg_slot *slot, uint64 batch_id, uint64 new_last)
{
	int			i;

	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	i = find_batch(slot, batch_id);
	if (i < 0 || i != slot->nbatches - 1 || new_last >= slot->batches[i].last_seq)
	{
		LWLockRelease(&slot->lock);
		return false;
	}
	if (new_last < slot->batches[i].first_seq)
		drop_batches(slot, i);
	else
	{
		slot->batches[i].last_seq = new_last;
		slot->get_seq = new_last;
		slot->get_off = blpg_ring_find(slot, slot->ack_off, new_last + 1);
	}
	LWLockRelease(&slot->lock);
	return true;
}

void
blpg_consume_trim(blpg_slot *slot, uint64 batch_id, uint64 new_last)
{
	if (!blpg_consume_shorten(slot, batch_id, new_last))
		elog(ERROR, "binlog_fdw: batch %llu of source \"%s\" cannot be shortened",
			 (unsigned long long) batch_id, slot->server_name);
}

/*
 * Release a batch's ring space now, before the transaction ends (a source
 * transaction larger than the ring).  If our transaction aborts, the
 * worker is asked to rewind to the durable position.
 */
void
blpg_consume_release_now(blpg_slot *slot, uint64 batch_id)
{
	int			i;
	MemoryContext old;
	released_early *r;

	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	i = find_batch(slot, batch_id);
	if (i >= 0)
	{
		blpg_ring_release(slot, slot->batches[i].last_seq);
		memmove(&slot->batches[i], &slot->batches[i + 1],
				sizeof(blpg_batch) * (slot->nbatches - i - 1));
		slot->nbatches--;
	}
	old = MemoryContextSwitchTo(TopMemoryContext);
	r = palloc(sizeof(released_early));
	r->slot = slot;
	r->generation = slot->generation;
	r->subid = GetCurrentSubTransactionId();
	released_in_xact = lappend(released_in_xact, r);
	MemoryContextSwitchTo(old);
	LWLockRelease(&slot->lock);
	ConditionVariableBroadcast(&slot->space_cv);
}

/*
 * A batch of ours that an apply worker of parallel apply applied: its
 * position is durable (the worker's transaction committed it), so its ring
 * space is released at once and the slot shows the position as acked.
 * Batches come back in the order they were taken: it is the oldest.
 */
void
blpg_consume_applied_elsewhere(blpg_slot *slot, uint64 batch_id)
{
	int			i;
	blpg_position pos;

	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	i = find_batch(slot, batch_id);
	if (i >= 0)
	{
		if (blpg_ring_position_after(slot, slot->batches[i].last_seq, &pos))
		{
			blpg_position_to_slot(&pos, &slot->acked);
			if (pos.gtid_state)
				pfree(pos.gtid_state);
		}
		blpg_ring_release(slot, slot->batches[i].last_seq);
		memmove(&slot->batches[i], &slot->batches[i + 1],
				sizeof(blpg_batch) * (slot->nbatches - i - 1));
		slot->nbatches--;
	}
	LWLockRelease(&slot->lock);
	ConditionVariableBroadcast(&slot->space_cv);
}

/* Acknowledge a batch of ours in the current transaction (as ack()). */
void
blpg_consume_ack(blpg_slot *slot, Oid serverid, const char *server_name,
				 uint64 batch_id, blpg_position *pos_out)
{
	pending_ack *pa;
	int			i;
	blpg_position pos;
	MemoryContext old;
	uint64		first_seq;

	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	i = find_batch(slot, batch_id);
	if (i < 0 || !blpg_ring_position_after(slot, slot->batches[i].last_seq, &pos))
	{
		LWLockRelease(&slot->lock);
		elog(ERROR, "binlog_fdw: batch %llu of source \"%s\" vanished",
			 (unsigned long long) batch_id, server_name);
	}
	slot->batches[i].ack_pending = true;
	old = MemoryContextSwitchTo(TopMemoryContext);
	pa = palloc(sizeof(pending_ack));
	pa->slot = slot;
	pa->generation = slot->generation;
	pa->batch_id = batch_id;
	pa->last_seq = slot->batches[i].last_seq;
	blpg_position_to_slot(&pos, &pa->pos);
	pa->subid = GetCurrentSubTransactionId();
	pending_acks = lappend(pending_acks, pa);
	MemoryContextSwitchTo(old);
	first_seq = slot->batches[i].first_seq;
	LWLockRelease(&slot->lock);
	blpg_state_save(serverid, &pos);
	blpg_history_acked(slot, serverid, first_seq, pa->last_seq);
	/* an apply call acknowledges many batches: do not keep their states */
	if (pos.gtid_state)
		pfree(pos.gtid_state);
	pos.gtid_state = NULL;
	if (pos_out)
		*pos_out = pos;
}

/*
 * Undo what (sub)transaction subid did (InvalidSubTransactionId: the whole
 * transaction) as it aborts: its acknowledgements did not happen, the
 * batches it took come again, ring space it released early makes the
 * worker rewind to the durable position.
 */
static void
abort_consumption(SubTransactionId subid)
{
	ListCell   *lc;

	foreach(lc, released_in_xact)
	{
		released_early *r = lfirst(lc);

		if (subid != InvalidSubTransactionId && r->subid != subid)
			continue;
		LWLockAcquire(&r->slot->lock, LW_EXCLUSIVE);
		if (r->slot->generation == r->generation)
		{
			r->slot->rewind_requested = true;
			r->slot->nbatches = 0;
		}
		LWLockRelease(&r->slot->lock);
		ConditionVariableBroadcast(&r->slot->space_cv);
		if (r->slot->worker_pid)
			kill(r->slot->worker_pid, SIGUSR1);
		released_in_xact = foreach_delete_current(released_in_xact, lc);
		pfree(r);
	}
	foreach(lc, pending_acks)
	{
		pending_ack *pa = lfirst(lc);
		blpg_slot  *slot = pa->slot;
		int			i;

		if (subid != InvalidSubTransactionId && pa->subid != subid)
			continue;
		LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
		if (slot->generation == pa->generation)
		{
			i = find_batch(slot, pa->batch_id);
			if (i >= 0)
				slot->batches[i].ack_pending = false;
			if (slot->ack_reserved_seq > slot->ack_seq)
				slot->ack_reserved_seq = slot->ack_seq;
		}
		LWLockRelease(&slot->lock);
		ConditionVariableBroadcast(&slot->space_cv);
		pending_acks = foreach_delete_current(pending_acks, lc);
		pfree(pa);
	}
	foreach(lc, taken_in_xact)
	{
		released_early *t = lfirst(lc);
		bool		current;

		if (subid != InvalidSubTransactionId && t->subid != subid)
			continue;
		LWLockAcquire(&t->slot->lock, LW_SHARED);
		current = t->slot->generation == t->generation;
		LWLockRelease(&t->slot->lock);
		if (current)
			blpg_consume_rollback_own(t->slot);
		taken_in_xact = foreach_delete_current(taken_in_xact, lc);
		pfree(t);
	}
}

static void
consume_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						 SubTransactionId parentSubid, void *arg)
{
	ListCell   *lc;

	if (event == SUBXACT_EVENT_ABORT_SUB)
		abort_consumption(mySubid);
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
		/* the parent answers for what the subtransaction did */
		foreach(lc, released_in_xact)
			if (((released_early *) lfirst(lc))->subid == mySubid)
				((released_early *) lfirst(lc))->subid = parentSubid;
		foreach(lc, taken_in_xact)
			if (((released_early *) lfirst(lc))->subid == mySubid)
				((released_early *) lfirst(lc))->subid = parentSubid;
		foreach(lc, pending_acks)
			if (((pending_ack *) lfirst(lc))->subid == mySubid)
				((pending_ack *) lfirst(lc))->subid = parentSubid;
	}
}

static void
consume_xact_callback(XactEvent event, void *arg)
{
	ListCell   *lc;

	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
	{
		abort_consumption(InvalidSubTransactionId);
		return;
	}
	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_PARALLEL_COMMIT)
		return;
	list_free_deep(released_in_xact);
	released_in_xact = NIL;
	list_free_deep(taken_in_xact);
	taken_in_xact = NIL;
	foreach(lc, pending_acks)
	{
		pending_ack *pa = lfirst(lc);
		blpg_slot  *slot = pa->slot;
		int			i;

		LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
		if (slot->generation == pa->generation)
		{
			i = find_batch(slot, pa->batch_id);
			blpg_ring_release(slot, pa->last_seq);
			if (i >= 0)
			{
				memmove(&slot->batches[i], &slot->batches[i + 1],
						sizeof(blpg_batch) * (slot->nbatches - i - 1));
				slot->nbatches--;
			}
			slot->acked = pa->pos;
		}
		LWLockRelease(&slot->lock);
		ConditionVariableBroadcast(&slot->space_cv);
	}
	list_free_deep(pending_acks);
	pending_acks = NIL;
}

static void
consume_exit_callback(int code, Datum arg)
{
	if (blpg_shared == NULL)
		return;
	for (int s = 0; s < blpg_shared->max_sources; s++)
	{
		blpg_slot  *slot = &blpg_shared->slots[s];
		int			from = -1;

		LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
		for (int i = 0; i < slot->nbatches; i++)
			if (slot->batches[i].owner_pid == MyProcPid && !slot->batches[i].ack_pending)
			{
				from = i;
				break;
			}
		if (from >= 0)
			drop_batches(slot, from);
		LWLockRelease(&slot->lock);
		if (from >= 0)
			ConditionVariableBroadcast(&slot->put_cv);
	}
}
