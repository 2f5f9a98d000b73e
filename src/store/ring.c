/*
 * ring.c
 *	  A source's ring of change entries in shared memory (store.h):
 *	  put with backpressure, lookup by sequence, copy-out, release on ack,
 *	  and the restart position after any change.  Locking as described in
 *	  store.h.
 */
#include "store/store.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

static inline blpg_entry *
entry_at(blpg_slot *slot, uint64 off)
{
	return (blpg_entry *) (slot->ring + off % slot->ring_size);
}

const blpg_entry *
blpg_ring_entry(blpg_slot *slot, uint64 off)
{
	return entry_at(slot, off);
}

void
blpg_entry_view_init(blpg_entry_view *v, const blpg_entry *e)
{
	const char *p = (const char *) (e + 1);

	v->e = e;
	v->file = p;
	p += e->file_len;
	v->txn_file = p;
	p += e->txn_file_len;
	v->gtid = p;
	p += e->gtid_len;
	v->gtid_state = p;
	p += e->gtid_state_len;
	v->schema = p;
	p += e->schema_len;
	v->table = p;
	p += e->table_len;
	v->payload = (const uint8 *) p;
}

void
blpg_ring_reset(blpg_slot *slot)
{
	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	slot->generation++;
	slot->ack_off = slot->get_off = slot->put_off;
	slot->ack_seq = slot->get_seq = slot->ack_reserved_seq = slot->put_seq;
	slot->entries = 0;
	slot->nbatches = 0;
	LWLockRelease(&slot->lock);
	ConditionVariableBroadcast(&slot->put_cv);
}

uint64
blpg_ring_max_entry(blpg_slot *slot)
{
	/* an entry plus the worst wrap waste must fit in an empty ring */
	return slot->ring_size / 2;
}

volatile sig_atomic_t blpg_ring_put_cancel = false;

bool
blpg_ring_put(blpg_slot *slot, blpg_entry *entry)
{
	uint64		len = entry->total_len;
	uint64		waste = 0;
	uint64		put_off;
	bool		waited = false;
	TimestampTz wait_start = 0;

	Assert(len % 8 == 0 && len <= blpg_ring_max_entry(slot));
	for (;;)
	{
		uint64		phys,
					used;
		bool		stop;

		LWLockAcquire(&slot->lock, LW_SHARED);
		put_off = slot->put_off;
		phys = put_off % slot->ring_size;
		waste = phys + len > slot->ring_size ? slot->ring_size - phys : 0;
		used = put_off - slot->ack_off;
		stop = slot->stop_requested || slot->rewind_requested || blpg_ring_put_cancel;
		LWLockRelease(&slot->lock);
		if (stop)
		{
			if (waited)
			{
				ConditionVariableCancelSleep();
				LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
				slot->ring_wait_us += (uint64) Max(0, GetCurrentTimestamp() - wait_start);
				LWLockRelease(&slot->lock);
			}
			return false;
		}
		if (used + waste + len <= slot->ring_size)
			break;
		if (!waited)
		{
			LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
			slot->state = BLPG_STATE_RING_FULL;
			LWLockRelease(&slot->lock);
			ConditionVariablePrepareToSleep(&slot->space_cv);
			waited = true;
			wait_start = GetCurrentTimestamp();
			continue;
		}
		ConditionVariableTimedSleep(&slot->space_cv, 1000, PG_WAIT_EXTENSION);
		CHECK_FOR_INTERRUPTS();
	}
	if (waited)
	{
		ConditionVariableCancelSleep();
		LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
		if (slot->state == BLPG_STATE_RING_FULL)
			slot->state = BLPG_STATE_STREAMING;
		/* binlog_fdw.source_stats: time waiting for the ring */
		slot->ring_wait_us += (uint64) Max(0, GetCurrentTimestamp() - wait_start);
		LWLockRelease(&slot->lock);
	}

	/* the space between put_off and ack_off + size is ours alone */
	if (waste > 0)
	{
		blpg_entry *wrap = entry_at(slot, put_off);

		/* only the first 8 bytes: the waste may be that small */
		wrap->total_len = (uint32) waste;
		wrap->kind = BLPG_ENTRY_WRAP;
	}
	LWLockAcquire(&slot->lock, LW_SHARED);
	entry->seq_first = slot->put_seq + 1;
	LWLockRelease(&slot->lock);
	memcpy(entry_at(slot, put_off + waste), entry, len);
	pg_write_barrier();

	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	slot->put_off = put_off + waste + len;
	slot->put_seq += entry->nchanges;
	slot->entries++;
	LWLockRelease(&slot->lock);
	ConditionVariableBroadcast(&slot->put_cv);
	return true;
}

uint64
blpg_ring_find(blpg_slot *slot, uint64 from, uint64 seq)
{
	uint64		off = from;

	while (off < slot->put_off)
	{
		blpg_entry *e = entry_at(slot, off);

		if (e->kind != BLPG_ENTRY_WRAP &&
			seq >= e->seq_first && seq < e->seq_first + e->nchanges)
			return off;
		off += e->total_len;
	}
	return off;
}

int
blpg_ring_copy(blpg_slot *slot, uint64 from_off, uint64 first_seq,
			   uint64 last_seq, StringInfo out)
{
	uint64		off = blpg_ring_find(slot, from_off, first_seq);
	int			n = 0;

	while (off < slot->put_off)
	{
		blpg_entry *e = entry_at(slot, off);

		off += e->total_len;
		if (e->kind == BLPG_ENTRY_WRAP)
			continue;
		if (e->seq_first > last_seq)
			break;
		appendBinaryStringInfo(out, (const char *) e, e->total_len);
		n++;
	}
	return n;
}

void
blpg_ring_release(blpg_slot *slot, uint64 seq)
{
	if (seq <= slot->ack_seq)
		return;
	slot->ack_seq = seq;
	if (slot->ack_reserved_seq < seq)
		slot->ack_reserved_seq = seq;
	while (slot->ack_off < slot->put_off)
	{
		blpg_entry *e = entry_at(slot, slot->ack_off);

		if (e->kind != BLPG_ENTRY_WRAP)
		{
			if (e->seq_first + e->nchanges - 1 > seq)
				break;
			slot->entries--;
		}
		slot->ack_off += e->total_len;
	}
	if (slot->get_off < slot->ack_off)
		slot->get_off = slot->ack_off;
	if (slot->get_seq < seq)
		slot->get_seq = seq;
}

bool
blpg_ring_position_after(blpg_slot *slot, uint64 seq, blpg_position *pos)
{
	uint64		off = blpg_ring_find(slot, slot->ack_off, seq);
	blpg_entry_view v;
	const blpg_entry *e;

	if (off >= slot->put_off)
		return false;
	e = entry_at(slot, off);
	blpg_entry_view_init(&v, e);
	memset(pos, 0, sizeof(*pos));
	/* the sink put names that fit (sink.c): these copies are whole */
	if (e->kind == BLPG_ENTRY_COMMIT || e->kind == BLPG_ENTRY_DDL)
	{
		blpg_copy_bounded(pos->file, sizeof(pos->file), v.file, e->file_len, "binlog file name");
		pos->pos = e->event_next_pos;
		pos->skip = 0;
	}
	else
	{
		blpg_copy_bounded(pos->file, sizeof(pos->file), v.txn_file, e->txn_file_len,
						  "binlog file name");
		pos->pos = e->txn_pos;
		pos->skip = e->txn_change_first + (seq - e->seq_first) + 1;
	}
	blpg_copy_bounded(pos->gtid, sizeof(pos->gtid), v.gtid, e->gtid_len, "GTID");
	pos->gtid_state = e->gtid_state_known ? pnstrdup(v.gtid_state, e->gtid_state_len) : NULL;
	return true;
}
