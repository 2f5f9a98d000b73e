/*
 * stats.c
 *	  Cumulative statistics per source and per table (views
 *	  binlog_fdw.source_stats and binlog_fdw.table_stats), kept across
 *	  restarts in the tables binlog_fdw.stats_source and stats_table.
 *
 * Apply-side counters (transactions, rows by operation, DDL, conflicts by
 * kind) are added by each apply transaction that did something, in that
 * transaction: exact, they commit or roll back with the rows they count,
 * and survive a crash exactly as the data does.
 *
 * Worker-side counters (bytes read, reconnects, time the worker waited for
 * ring space) and failed applies are counted in the source's slot (shared
 * memory).  Each apply transaction that writes statistics, and stop(), adds
 * what the slot counted since the last time (the slot's flushed_* marks,
 * moved when that transaction commits, by the transaction callback here);
 * view source_stats adds what is not written yet.  The worker writes them
 * itself when it exits cleanly (src/store/worker_stats.c: stop(), a fast
 * or smart shutdown), so only a crash loses what it counted after the last
 * write.  Two transactions adding a slot's counts are serialized by the
 * lock of the source's row, taken before the marks are read.
 */
#include "apply/apply.h"

#include "base/base.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "foreign/foreign.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

PG_FUNCTION_INFO_V1(binlog_fdw_stats_unflushed);

/* marks to move when this transaction commits */
typedef struct pending_marks
{
	bool		set;
	blpg_slot  *slot;
	uint64		token;
	uint64		bytes;
	uint64		reconnects;
	uint64		ring_wait_us;
	uint64		errors;
} pending_marks;

static pending_marks pending;
static bool callback_registered = false;

static void
stats_xact_callback(XactEvent event, void *arg)
{
	if (!pending.set)
		return;
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT)
	{
		blpg_slot  *slot = pending.slot;

		LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
		if (slot->in_use && slot->token == pending.token)
		{
			slot->flushed_bytes = pending.bytes;
			slot->flushed_reconnects = pending.reconnects;
			slot->flushed_ring_wait_us = pending.ring_wait_us;
			slot->flushed_errors = pending.errors;
		}
		LWLockRelease(&slot->lock);
	}
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
		pending.set = false;
}

typedef struct flush_args
{
	blpg_slot  *slot;
	const char *server;
	int64		source[9];		/* transactions, ins, upd, del, ddl, conflicts x3, errors */
	List	   *tables;			/* of blpg_table_counts * */
	bool		worker_only;
} flush_args;

static void
flush_fn(void *arg)
{
	flush_args *a = arg;
	Oid			types[13];
	Datum		values[13];
	uint64		bytes,
				reconnects,
				wait_us,
				errors,
				base_bytes,
				base_reconnects,
				base_wait,
				base_errors;
	ListCell   *lc;
	blpg_slot  *slot = a->slot;

	/* the source's row, locked: its slot's marks are read after */
	types[0] = TEXTOID;
	values[0] = CStringGetTextDatum(a->server);
	if (SPI_execute_with_args("INSERT INTO binlog_fdw.stats_source (server_name) VALUES ($1) "
							  "ON CONFLICT (server_name) DO NOTHING",
							  1, types, values, NULL, false, 0) != SPI_OK_INSERT ||
		SPI_execute_with_args("SELECT 1 FROM binlog_fdw.stats_source WHERE server_name = $1 FOR UPDATE",
							  1, types, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not lock the statistics of source \"%s\"", a->server);

	LWLockAcquire(&slot->lock, LW_SHARED);
	bytes = slot->bytes_read;
	reconnects = slot->reconnects;
	wait_us = slot->ring_wait_us;
	errors = slot->apply_errors;
	if (pending.set && pending.slot == slot && pending.token == slot->token)
	{
		base_bytes = pending.bytes;
		base_reconnects = pending.reconnects;
		base_wait = pending.ring_wait_us;
		base_errors = pending.errors;
	}
	else
	{
		base_bytes = slot->flushed_bytes;
		base_reconnects = slot->flushed_reconnects;
		base_wait = slot->flushed_ring_wait_us;
		base_errors = slot->flushed_errors;
	}
	if (!callback_registered)
	{
		RegisterXactCallback(stats_xact_callback, NULL);
		callback_registered = true;
	}
	pending.set = true;
	pending.slot = slot;
	pending.token = slot->token;
	pending.bytes = Max(bytes, base_bytes);
	pending.reconnects = Max(reconnects, base_reconnects);
	pending.ring_wait_us = Max(wait_us, base_wait);
	pending.errors = Max(errors, base_errors);
	LWLockRelease(&slot->lock);

	for (int i = 0; i < 13; i++)
		types[i] = INT8OID;
	types[0] = TEXTOID;
	for (int i = 0; i < 9; i++)
		values[i + 1] = Int64GetDatum(a->source[i]);
	values[9] = Int64GetDatum((int64) (pending.errors - base_errors) + a->source[8]);
	values[10] = Int64GetDatum((int64) (pending.bytes - base_bytes));
	values[11] = Int64GetDatum((int64) (pending.reconnects - base_reconnects));
	values[12] = Int64GetDatum((int64) (pending.ring_wait_us - base_wait));
	if (SPI_execute_with_args("UPDATE binlog_fdw.stats_source SET "
							  "transactions = transactions + $2, rows_inserted = rows_inserted + $3, "
							  "rows_updated = rows_updated + $4, rows_deleted = rows_deleted + $5, "
							  "ddl = ddl + $6, conflicts_missing_row = conflicts_missing_row + $7, "
							  "conflicts_duplicate_key = conflicts_duplicate_key + $8, "
							  "conflicts_constraint_violation = conflicts_constraint_violation + $9, "
							  "errors = errors + $10, bytes_read = bytes_read + $11, "
							  "reconnects = reconnects + $12, "
							  "ring_wait_seconds = ring_wait_seconds + $13 / 1e6 "
							  "WHERE server_name = $1",
							  13, types, values, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update the statistics of source \"%s\"", a->server);

	foreach(lc, a->tables)
	{
		blpg_table_counts *c = lfirst(lc);
		Oid			ttypes[9] = {TEXTOID, TEXTOID, TEXTOID, INT8OID, INT8OID, INT8OID,
		INT8OID, INT8OID, INT8OID};
		Datum		tvalues[9];
		char		tnulls[9] = "         ";

		tvalues[0] = CStringGetTextDatum(a->server);
		tvalues[1] = CStringGetTextDatum(c->source_table);
		if (c->target_table)
			tvalues[2] = CStringGetTextDatum(c->target_table);
		else
			tnulls[2] = 'n';
		for (int i = 0; i < 3; i++)
		{
			tvalues[3 + i] = Int64GetDatum(c->rows[i]);
			tvalues[6 + i] = Int64GetDatum(c->conflicts[i]);
		}
		if (SPI_execute_with_args("INSERT INTO binlog_fdw.stats_table AS s (server_name, source_table, "
								  "target_table, rows_inserted, rows_updated, rows_deleted, "
								  "conflicts_missing_row, conflicts_duplicate_key, "
								  "conflicts_constraint_violation) "
								  "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) "
								  "ON CONFLICT (server_name, source_table) DO UPDATE SET "
								  "target_table = EXCLUDED.target_table, "
								  "rows_inserted = s.rows_inserted + EXCLUDED.rows_inserted, "
								  "rows_updated = s.rows_updated + EXCLUDED.rows_updated, "
								  "rows_deleted = s.rows_deleted + EXCLUDED.rows_deleted, "
								  "conflicts_missing_row = s.conflicts_missing_row + EXCLUDED.conflicts_missing_row, "
								  "conflicts_duplicate_key = s.conflicts_duplicate_key + EXCLUDED.conflicts_duplicate_key, "
								  "conflicts_constraint_violation = s.conflicts_constraint_violation + EXCLUDED.conflicts_constraint_violation",
								  9, ttypes, tvalues, tnulls, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "could not update the statistics of source \"%s\"", a->server);
	}
}

/* Does binlog_fdw.<name> exist (0.1's objects have no 0.2 tables)? */
bool
blpg_extension_table_exists(const char *name)
{
	Oid			nsp = get_namespace_oid("binlog_fdw", true);

	return OidIsValid(nsp) && OidIsValid(get_relname_relid(name, nsp));
}

static int
kind_index(const char *kind)
{
	return strcmp(kind, "missing_row") == 0 ? 0 : strcmp(kind, "duplicate_key") == 0 ? 1 : 2;
}

/*
 * Add what an apply call did (res, the targets' counts) and what the slot
 * counted since the last time, in the current transaction.  Nothing is
 * written when there is nothing to add (an idle apply).
 */
void
blpg_stats_flush(blpg_slot *slot, const char *server, const blpg_apply_result *res,
				 List *tables)
{
	flush_args	a;
	ListCell   *lc;
	bool		worker_news;

	memset(&a, 0, sizeof(a));
	a.slot = slot;
	a.server = server;
	a.tables = tables;
	if (res)
	{
		a.source[0] = res->transactions;
		a.source[4] = res->ddl;
	}
	foreach(lc, tables)
	{
		blpg_table_counts *c = lfirst(lc);

		for (int i = 0; i < 3; i++)
		{
			a.source[1 + i] += c->rows[i];
			a.source[5 + i] += c->conflicts[i];
		}
	}
	LWLockAcquire(&slot->lock, LW_SHARED);
	worker_news = slot->bytes_read != slot->flushed_bytes ||
		slot->reconnects != slot->flushed_reconnects ||
		slot->ring_wait_us != slot->flushed_ring_wait_us ||
		slot->apply_errors != slot->flushed_errors;
	LWLockRelease(&slot->lock);
	if (a.source[0] == 0 && a.source[4] == 0 && tables == NIL && !worker_news)
		return;
	/* 0.1's tables until ALTER EXTENSION binlog_fdw UPDATE: none to write */
	if (!blpg_extension_table_exists("stats_source"))
		return;
	blpg_run_as_owner(flush_fn, &a);
}

/* One conflict that stopped apply, counted when it is resolved. */
void
blpg_stats_count_conflict(blpg_slot *slot, const char *server, const char *source_table,
						  const char *target_table, const char *kind)
{
	blpg_table_counts c;

	memset(&c, 0, sizeof(c));
	c.source_table = source_table;
	c.target_table = target_table;
	c.conflicts[kind_index(kind)] = 1;
	blpg_stats_flush(slot, server, NULL, list_make1(&c));
}

/* What the slots counted and no table holds yet (view source_stats). */
Datum
binlog_fdw_stats_unflushed(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	blpg_require_shmem();
	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < blpg_shared->max_sources; i++)
	{
		blpg_slot  *slot = &blpg_shared->slots[i];
		Datum		values[5];
		bool		nulls[5] = {0};
		bool		mine;
		char		name[NAMEDATALEN];
		Oid			serverid = InvalidOid;
		ForeignServer *fs;
		uint64		v[4];

		LWLockAcquire(&blpg_shared->lock, LW_SHARED);
		LWLockAcquire(&slot->lock, LW_SHARED);
		mine = slot->in_use && slot->dboid == MyDatabaseId;
		if (mine)
		{
			strlcpy(name, slot->server_name, sizeof(name));
			serverid = slot->serverid;
			v[0] = slot->bytes_read - Min(slot->bytes_read, slot->flushed_bytes);
			v[1] = slot->reconnects - Min(slot->reconnects, slot->flushed_reconnects);
			v[2] = slot->ring_wait_us - Min(slot->ring_wait_us, slot->flushed_ring_wait_us);
			v[3] = slot->apply_errors - Min(slot->apply_errors, slot->flushed_errors);
		}
		LWLockRelease(&slot->lock);
		LWLockRelease(&blpg_shared->lock);
		if (!mine)
			continue;
		/* its current name: a rename shows at once */
		fs = GetForeignServerExtended(serverid, FSV_MISSING_OK);
		values[0] = CStringGetTextDatum(fs ? fs->servername : name);
		values[1] = Int64GetDatum((int64) v[0]);
		values[2] = Int64GetDatum((int64) v[1]);
		values[3] = Float8GetDatum((double) v[2] / 1e6);
		values[4] = Int64GetDatum((int64) v[3]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
