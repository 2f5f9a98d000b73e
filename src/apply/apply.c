/*
 * apply.c
 *	  binlog_fdw.apply(server, ...): consume a source's changes and write
 *	  them into PostgreSQL tables inside the calling transaction, together
 *	  with the new durable position, so each change is applied exactly once.
 *
 * The loop takes batches of changes (whole transactions where possible),
 * applies their rows through target.c and their DDL through
 * ddl.c, and acknowledges each batch that ends at a transaction
 * boundary: the position is written in this transaction and the ring
 * space is released when it commits.  It stops at a transaction boundary
 * once max_changes or max_ms is reached, so a PostgreSQL reader never sees
 * part of a MySQL transaction.  A MySQL transaction larger than the ring
 * is applied in pieces within this one transaction: its ring space is
 * released as it goes, and should this transaction abort the worker
 * rewinds to the durable position.  Should it abort otherwise (or a
 * savepoint around apply() roll back), the changes it took come again.
 * A DDL statement is applied only as the first change of a call, so that a
 * statement that fails is the next change, the one skip_change() skips.
 */
#include "apply/apply.h"

#include "access/xact.h"
#include "commands/defrem.h"
#include "foreign/foreign.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

PG_FUNCTION_INFO_V1(binlog_fdw_apply);
PG_FUNCTION_INFO_V1(binlog_fdw_skip_change);

#define APPLY_CHUNK 20000		/* changes per batch taken from the ring */
#define MAX_APPLY_SECONDS 86400	/* max_seconds and wait_seconds: a day at most */

/*
 * Decode a ROWS entry in place (v): its table map, then its rows event
 * into *rows, whose rows bl_rows_next() then reads; 0, or -1 with *err
 * set.
 */
int
blpg_entry_rows_decode(bl_decoder *dec, const blpg_entry_view *v, bl_event *rows,
					   bl_error *err)
{
	const blpg_entry *e = v->e;
	size_t		rows_len = (size_t) bl_load_le(v->payload + e->tablemap_len + 9, 4);
	bl_event	tm;

	memset(err, 0, sizeof(*err));
	bl_decoder_set_file(dec, v->file, e->file_len);
	if (bl_decode_event(dec, v->payload, e->tablemap_len, e->event_pos, &tm, err) != 0 ||
		bl_decode_event(dec, v->payload + e->tablemap_len, rows_len, e->event_pos,
						rows, err) != 0)
		return -1;
	return 0;
}

/*
 * Apply the changes first..last of our batch, reading its entries in place
 * in the ring from start_off.  A DDL change is applied only as the first
 * change of an apply() call: after other changes, *stop_before is set to
 * its sequence and nothing from it on is applied (so that when it fails,
 * it is the next change, which skip_change() skips).
 */
/* verify(): apply nothing from this position on (file "" : no limit) */
char		blpg_apply_stop_file[BLPG_FILE_LEN] = "";
uint64		blpg_apply_stop_pos = 0;

static bool
at_stop(const blpg_entry_view *v)
{
	return blpg_apply_stop_file[0] != '\0' &&
		blpg_position_cmp(pnstrdup(v->file, v->e->file_len), v->e->event_pos,
						  blpg_apply_stop_file, blpg_apply_stop_pos) >= 0;
}

void
blpg_apply_entries(blpg_targets *ts, blpg_slot *slot, uint64 start_off, uint64 first,
			  uint64 last, const char *server_name, bool *in_txn,
			  blpg_apply_result *res, int64 *commit_ts_us, uint64 *stop_before)
{
	bl_decoder *dec = blpg_canonical_decoder();
	uint64		off = start_off;

	for (;;)
	{
		const blpg_entry *e = blpg_ring_entry(slot, off);
		blpg_entry_view v;
		uint64		from,
					to;

		off += e->total_len;
		if (e->kind == BLPG_ENTRY_WRAP)
			continue;
		if (e->seq_first > last)
			break;
		from = Max(first, e->seq_first);
		to = Min(last, e->seq_first + e->nchanges - 1);
		if (from > to)
			continue;
		blpg_entry_view_init(&v, e);
		CHECK_FOR_INTERRUPTS();
		switch (e->kind)
		{
			case BLPG_ENTRY_BEGIN:
				if (at_stop(&v))
				{
					*stop_before = e->seq_first;
					return;
				}
				*in_txn = true;
				break;
			case BLPG_ENTRY_COMMIT:
				*in_txn = false;
				res->transactions++;
				if (e->commit_ts_us)
					*commit_ts_us = e->commit_ts_us;
				break;
			case BLPG_ENTRY_DDL:
				if (at_stop(&v))
				{
					*stop_before = e->seq_first;
					return;
				}
				if (e->seq_first > first || res->transactions > 0)
				{
					*stop_before = e->seq_first;
					return;
				}
				/* the filter's operations may leave DDL out (not the schema history) */
				if (blpg_targets_keep_ddl(ts, &v))
					blpg_apply_ddl(ts, &v, server_name);
				res->transactions++;
				res->ddl++;
				if (e->commit_ts_us)
					*commit_ts_us = e->commit_ts_us;
				break;
			case BLPG_ENTRY_ROWS:
				{
					bl_event	rows;
					bl_error	err;
					bl_row		before,
								after;
					blpg_target *tg;
					uint64		skip = e->rows_skip + (from - e->seq_first);

					if (blpg_entry_rows_decode(dec, &v, &rows, &err) != 0)
						blpg_report_decoder_error(ERROR, &err, server_name);
					tg = blpg_target_get(ts, rows.u.rows.table, &v);
					for (uint64 i = 0; i < skip; i++)
						if (bl_rows_next(dec, &rows.u.rows, &before, &after, &err) != 1)
							blpg_report_decoder_error(ERROR, &err, server_name);
					for (uint64 s = from; s <= to; s++)
					{
						if (bl_rows_next(dec, &rows.u.rows, &before, &after, &err) != 1)
							blpg_report_decoder_error(ERROR, &err, server_name);
						if (tg == NULL)
							continue;
						blpg_apply_current_seq = s;
						if (blpg_target_chunked(tg))
						{
							/* a chunked load: by the chunk of the row's key */
							int			op = blpg_target_chunk_op(tg, &v, (bl_op) e->op,
																  &before, &after);

							if (op < 0)
								continue;
							blpg_target_apply_row(ts, tg, (bl_op) op, &before, &after, &v);
						}
						else if (blpg_target_before_sync(tg, &v))
							continue;
						else
							blpg_target_apply_row(ts, tg, (bl_op) e->op, &before, &after, &v);
						res->rows++;
					}
					break;
				}
		}
		/* never read past the batch: what follows may not be written yet */
		if (e->seq_first + e->nchanges - 1 >= last)
			break;
	}
}

static void
apply_run(blpg_slot *slot, ForeignServer *server, int64 max_changes, int64 max_ms,
		  int64 wait_ms, blpg_apply_result *res, uint64 *first_seq)
{
	blpg_apply_options opts;
	blpg_targets *ts;
	StringInfoData buf;
	TimestampTz start = GetCurrentTimestamp();
	TimestampTz deadline = start + max_ms * 1000;
	TimestampTz wait_until = start + wait_ms * 1000;
	bool		in_txn = false;
	int64		commit_ts_us = 0;
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "binlog_fdw apply",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);

	memset(res, 0, sizeof(*res));
	/* what an aborted apply() of this session took comes again */
	blpg_consume_rollback_own(slot);
	blpg_apply_options_load(server->serverid, &opts);
	ts = blpg_targets_create(server->servername, &opts);
	initStringInfo(&buf);

	for (;;)
	{
		uint64		first,
					last,
					batch_id,
					start_off;
		int			chunk = (int) Min((int64) APPLY_CHUNK, Max((int64) 1, max_changes - res->rows));
		bool		slept = false;
		uint64		stop_before;

		if (in_txn)
			chunk = APPLY_CHUNK;	/* finish the transaction, and stop there */
		while (!blpg_consume_take(slot, chunk, in_txn, NULL, &first, &last, &batch_id, &start_off))
		{
			TimestampTz now = GetCurrentTimestamp();

			/* nothing ready: inside a transaction, wait for the rest */
			if (!in_txn && (now >= wait_until || res->rows > 0 || res->transactions > 0))
				goto done;
			if (!slept)
			{
				ConditionVariablePrepareToSleep(&slot->put_cv);
				slept = true;
				continue;
			}
			(void) ConditionVariableTimedSleep(&slot->put_cv, 100, PG_WAIT_EXTENSION);
			CHECK_FOR_INTERRUPTS();
			if (slot->state == BLPG_STATE_STOPPED && in_txn)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("source \"%s\" stopped in the middle of a transaction", server->servername)));
		}
		if (slept)
			ConditionVariableCancelSleep();
		if (*first_seq == 0)
			*first_seq = first;

		/* what this transaction writes carries the source's origin */
		blpg_origin_begin(server->serverid);
		stop_before = 0;
		blpg_apply_entries(ts, slot, start_off, first, last, server->servername, &in_txn, res,
					  &commit_ts_us, &stop_before);
		if (stop_before)
		{
			/* a DDL after other changes: the next apply() begins with it */
			blpg_consume_trim(slot, batch_id, stop_before - 1);
			if (stop_before > first)
			{
				blpg_consume_ack(slot, server->serverid, server->servername, batch_id, &res->pos);
				blpg_origin_progress(server->serverid, &res->pos, commit_ts_us);
			}
			break;
		}
		if (!in_txn)
		{
			blpg_consume_ack(slot, server->serverid, server->servername, batch_id, &res->pos);
			blpg_origin_progress(server->serverid, &res->pos, commit_ts_us);
		}
		else
			blpg_consume_release_now(slot, batch_id);

		if (!in_txn && (res->rows >= max_changes || GetCurrentTimestamp() >= deadline))
			break;
	}
done:
	res->tables = blpg_targets_touched(ts);
	/* binlog_fdw.source_stats and table_stats, in this transaction */
	blpg_stats_flush(slot, server->servername, res, blpg_targets_counts(ts));
	blpg_targets_finish(ts);
	/* a conflict that stopped apply before is passed now */
	if (res->pos.file[0] != '\0')
		blpg_conflict_resolve(slot, server->servername, 0, res->pos.file, res->pos.pos);
	if (commit_ts_us)
		res->lag_seconds = Max(0.0, (double) (GetCurrentTimestamp() -
											  ((TimestampTz) commit_ts_us -
											   ((POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY))) / 1e6);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
}

void
blpg_apply_run(const char *server_name, int64 max_changes, int64 max_ms,
			   int64 wait_ms, blpg_apply_result *res)
{
	ForeignServer *server;
	blpg_slot  *slot = blpg_consumer_slot(server_name, &server);
	MemoryContext old = CurrentMemoryContext;
	volatile uint64 first_seq = 0;

	blpg_conflict_capture_reset();
	PG_TRY();
	{
		apply_run(slot, server, max_changes, max_ms, wait_ms, res, (uint64 *) &first_seq);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		/* a conflict stopping apply is kept where the rollback leaves it */
		MemoryContextSwitchTo(old);
		edata = CopyErrorData();
		blpg_conflict_stopped(slot, server->servername, edata, first_seq);
		FreeErrorData(edata);
		PG_RE_THROW();
	}
	PG_END_TRY();
}

Datum
binlog_fdw_apply(PG_FUNCTION_ARGS)
{
	char	   *name;
	int64		max_changes = PG_ARGISNULL(1) ? 100000 : PG_GETARG_INT64(1);
	double		max_seconds = PG_ARGISNULL(2) ? 10 : PG_GETARG_FLOAT8(2);
	double		wait_seconds = PG_ARGISNULL(3) ? 0 : PG_GETARG_FLOAT8(3);
	blpg_apply_result res;
	TupleDesc	tupdesc;
	Datum		values[8];
	bool		nulls[8] = {0};

	/* NULL bounds take their defaults; the server is needed */
	blpg_require_arg(fcinfo, 0, "server");
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	if (max_changes < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_changes must be at least 1")));
	if (!(max_seconds >= 0 && max_seconds <= MAX_APPLY_SECONDS))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_seconds must be between 0 and %d", MAX_APPLY_SECONDS)));
	if (!(wait_seconds >= 0 && wait_seconds <= MAX_APPLY_SECONDS))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("wait_seconds must be between 0 and %d", MAX_APPLY_SECONDS)));
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	blpg_apply_run(name, max_changes, (int64) (max_seconds * 1000),
				   (int64) (wait_seconds * 1000), &res);
	values[0] = Int64GetDatum(res.transactions);
	values[1] = Int64GetDatum(res.rows);
	values[2] = Int64GetDatum(res.ddl);
	values[3] = CStringGetTextDatum(res.pos.file);
	nulls[3] = res.pos.file[0] == '\0';
	values[4] = Int64GetDatum((int64) res.pos.pos);
	nulls[4] = res.pos.file[0] == '\0';
	values[5] = CStringGetTextDatum(res.pos.gtid);
	nulls[5] = res.pos.gtid[0] == '\0';
	values[6] = Float8GetDatum(res.lag_seconds);
	nulls[6] = res.transactions == 0;
	values[7] = Int32GetDatum(res.tables);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

Datum
binlog_fdw_skip_change(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	ForeignServer *server;
	blpg_slot  *slot = blpg_consumer_slot(name, &server);
	StringInfoData buf;
	uint64		first,
				last,
				batch_id;
	TupleDesc	tupdesc;
	Datum		values[3];
	bool		nulls[3] = {0};
	const blpg_entry *e;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	initStringInfo(&buf);
	blpg_consume_rollback_own(slot);
	if (!blpg_consume_take(slot, 1, false, &buf, &first, &last, &batch_id, NULL))
		ereport(ERROR,
				(errcode(ERRCODE_NO_DATA_FOUND),
				 errmsg("source \"%s\" has no change to skip", name)));
	e = (const blpg_entry *) buf.data;
	blpg_consume_ack(slot, server->serverid, server->servername, batch_id, NULL);
	{
		blpg_entry_view ev;

		/* the change a conflict stopped apply at: into the conflict log */
		blpg_entry_view_init(&ev, e);
		blpg_conflict_resolve(slot, server->servername, first,
							  pnstrdup(ev.file, e->file_len), e->event_pos);
	}
	values[0] = Int64GetDatum((int64) first);
	values[1] = CStringGetTextDatum(blpg_entry_op_name(e));
	nulls[2] = true;
	if (e->kind == BLPG_ENTRY_DDL)
	{
		blpg_entry_view v;
		uint32		dblen;

		blpg_entry_view_init(&v, e);
		dblen = (uint32) bl_load_le(v.payload, 4);
		values[2] = CStringGetTextDatum(pnstrdup((const char *) v.payload + 4 + dblen,
												 e->payload_len - 4 - dblen));
		nulls[2] = false;
	}
	ereport(LOG,
			(errmsg("source \"%s\": change %llu (%s) skipped by request",
					name, (unsigned long long) first, blpg_entry_op_name(e))));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
