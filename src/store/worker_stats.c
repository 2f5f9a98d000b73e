/*
 * worker_stats.c
 *	  A source worker's own counters (bytes read, reconnects, time waiting
 *	  for ring space), counted in its slot, written into
 *	  binlog_fdw.stats_source by the worker itself when it exits cleanly
 *	  (stop(), a fast or smart shutdown), so that a restart without stop()
 *	  loses none of them.  Apply writes them too, with each of its
 *	  transactions (src/apply/stats.c); both add what the slot counted since
 *	  its flushed_* marks, serialized by the lock of the source's row, taken
 *	  before the marks are read.  The marks move once the worker's
 *	  transaction has committed.
 */
#include "store/store.h"

#include "base/base.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"

typedef struct worker_flush
{
	blpg_slot  *slot;
	Oid			serverid;
	const char *server;
	uint64		bytes;			/* the slot's counters, as written */
	uint64		reconnects;
	uint64		ring_wait_us;
} worker_flush;

static void
worker_flush_fn(void *arg)
{
	worker_flush *f = arg;
	blpg_slot  *slot = f->slot;
	Oid			types[4] = {TEXTOID, INT8OID, INT8OID, INT8OID};
	Datum		values[4];

	values[0] = CStringGetTextDatum(f->server);
	if (SPI_execute_with_args("INSERT INTO binlog_fdw.stats_source (server_name) VALUES ($1) "
							  "ON CONFLICT (server_name) DO NOTHING",
							  1, types, values, NULL, false, 0) != SPI_OK_INSERT ||
		SPI_execute_with_args("SELECT 1 FROM binlog_fdw.stats_source WHERE server_name = $1 FOR UPDATE",
							  1, types, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not lock the statistics of source \"%s\"", f->server);
	LWLockAcquire(&slot->lock, LW_SHARED);
	f->bytes = Max(slot->bytes_read, slot->flushed_bytes);
	f->reconnects = Max(slot->reconnects, slot->flushed_reconnects);
	f->ring_wait_us = Max(slot->ring_wait_us, slot->flushed_ring_wait_us);
	values[1] = Int64GetDatum((int64) (f->bytes - slot->flushed_bytes));
	values[2] = Int64GetDatum((int64) (f->reconnects - slot->flushed_reconnects));
	values[3] = Int64GetDatum((int64) (f->ring_wait_us - slot->flushed_ring_wait_us));
	LWLockRelease(&slot->lock);
	if (SPI_execute_with_args("UPDATE binlog_fdw.stats_source SET bytes_read = bytes_read + $2, "
							  "reconnects = reconnects + $3, "
							  "ring_wait_seconds = ring_wait_seconds + $4 / 1e6 "
							  "WHERE server_name = $1",
							  4, types, values, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update the statistics of source \"%s\"", f->server);
}

void
blpg_worker_stats_flush(blpg_slot *slot, Oid serverid, const char *server)
{
	MemoryContext cxt = CurrentMemoryContext;
	worker_flush f;

	memset(&f, 0, sizeof(f));
	f.slot = slot;
	f.serverid = serverid;
	f.server = server;
	PG_TRY();
	{
		StartTransactionCommand();
		PushActiveSnapshot(GetTransactionSnapshot());
		/* a dropped server's statistics went with it; 0.1 has none */
		if (!blpg_tables_legacy() && GetForeignServerExtended(serverid, FSV_MISSING_OK) != NULL)
			blpg_run_as_owner(worker_flush_fn, &f);
		PopActiveSnapshot();
		CommitTransactionCommand();
		LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
		slot->flushed_bytes = Max(slot->flushed_bytes, f.bytes);
		slot->flushed_reconnects = Max(slot->flushed_reconnects, f.reconnects);
		slot->flushed_ring_wait_us = Max(slot->flushed_ring_wait_us, f.ring_wait_us);
		LWLockRelease(&slot->lock);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		ereport(LOG,
				(errcode(edata->sqlerrcode),
				 errmsg("source \"%s\": the worker's statistics were not written at its exit: %s",
						server, edata->message)));
		FreeErrorData(edata);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
}
