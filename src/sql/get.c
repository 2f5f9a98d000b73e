/*
 * get.c
 *	  Canal's get/ack/rollback in SQL, over the store's consumer protocol
 *	  (src/store/batches.c):
 *
 *	  get(server, max_changes, timeout_ms)  a batch of changes, not acked
 *	  get_json(...)                         the same, row images as json
 *	                                        text instead of jsonb
 *	  get_jsonl(...)                        a batch as one row: its changes
 *	                                        as JSON lines in one text value
 *	  ack(server, batch_id)                 release the oldest batch and
 *	                                        record the position durably
 *	  rollback(server [, batch_id])         deliver un-acked changes again
 *	  get_table(server, NULL::ft, ...)      a batch's rows of one source
 *	                                        table as typed rows (typed.c)
 *
 * What a batch is, and when an ack takes effect, is the store's (see
 * batches.c); this file builds the results and keeps their buffers.
 */
#include "sql/sql.h"

#include <malloc.h>

#include "access/table.h"
#include "catalog/pg_class.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

PG_FUNCTION_INFO_V1(binlog_fdw_get);
PG_FUNCTION_INFO_V1(binlog_fdw_get_json);
PG_FUNCTION_INFO_V1(binlog_fdw_get_jsonl);
PG_FUNCTION_INFO_V1(binlog_fdw_ack);
PG_FUNCTION_INFO_V1(binlog_fdw_rollback);
PG_FUNCTION_INFO_V1(binlog_fdw_get_table);

/*
 * The copy of a batch's entries that get(), get_json(), get_jsonl() and
 * get_table() read (in TopMemoryContext), kept between calls up to
 * binlog_fdw.consumer_keep_memory: a consumer that calls them in a loop
 * reuses the memory instead of faulting fresh pages in for every batch.
 */
static StringInfoData get_buf;

/*
 * get_jsonl()'s text of its batch (malloc'ed), kept between calls up to
 * JSONL_BUF_KEEP bytes: the buffer a batch of up to 32 MB of text grows
 * (its size doubles), so with binlog_fdw.jsonl_max_bytes at its default of
 * 16 MB it is always kept.
 */
static bl_buf jsonl_buf;

#define JSONL_BUF_KEEP (64 * 1024 * 1024)

int			blpg_jsonl_max_bytes = 16 * 1024;	/* kB */

int			blpg_consumer_keep_memory = 256 * 1024; /* kB */

/*
 * A consumer backend allocates and frees memory of a batch's size several
 * times per call (the copy of the entries, the tuplestore, the text of each
 * value and of the result message).  glibc gives freed blocks above its
 * thresholds back to the kernel (munmap, or trimming the heap top past
 * 128 kB), so every call faulted all those pages in again, which on a
 * virtual machine cost more than decoding the changes.  Every get tells
 * malloc (when binlog_fdw.consumer_keep_memory changed since it last did)
 * to keep up to that much freed memory at the heap's top, and to serve
 * blocks up to that size (at most 32 MB, glibc's largest mmap threshold)
 * from the heap.  0: glibc's defaults (128 kB), nothing kept.
 */
#define CONSUME_MMAP_MAX (32 * 1024 * 1024)
#define MALLOC_DEFAULT_THRESHOLD (128 * 1024)

static void
consume_keep_freed_memory(void)
{
	static int	applied = -1;	/* kB */

	if (applied == blpg_consumer_keep_memory)
		return;
#ifdef M_TRIM_THRESHOLD
	{
		size_t		keep = (size_t) blpg_consumer_keep_memory * 1024;

		if (keep == 0)
		{
			mallopt(M_MMAP_THRESHOLD, MALLOC_DEFAULT_THRESHOLD);
			mallopt(M_TRIM_THRESHOLD, MALLOC_DEFAULT_THRESHOLD);
		}
		else
		{
			/* the GUC's maximum, 1 GB, fits in mallopt's int */
			mallopt(M_MMAP_THRESHOLD, (int) Min(keep, CONSUME_MMAP_MAX));
			mallopt(M_TRIM_THRESHOLD, (int) keep);
		}
	}
#endif
	applied = blpg_consumer_keep_memory;
}

/* get_buf, allocated if it is not, emptied. */
static StringInfo
get_buf_reset(void)
{
	if (get_buf.data == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		initStringInfo(&get_buf);
		MemoryContextSwitchTo(old);
	}
	resetStringInfo(&get_buf);
	return &get_buf;
}

/*
 * The start of every get function: its arguments (server, max_changes,
 * timeout_ms), the result's tuplestore, and the next batch taken into
 * get_buf, waited for up to timeout_ms.  Returns the batch's id (0: none
 * came), its first and last sequences, and the source's slot.
 */
static uint64
get_begin(FunctionCallInfo fcinfo, blpg_slot **slot_out, uint64 *first, uint64 *last)
{
	blpg_slot  *slot;
	char	   *name;
	int			max_changes,
				timeout_ms;

	blpg_require_arg(fcinfo, 0, "server");
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	max_changes = PG_ARGISNULL(1) ? 1000 : PG_GETARG_INT32(1);
	timeout_ms = PG_ARGISNULL(2) ? 0 : PG_GETARG_INT32(2);
	if (max_changes < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_changes must be at least 1")));
	slot = blpg_consumer_slot(name, NULL);
	consume_keep_freed_memory();
	(void) get_buf_reset();
	InitMaterializedSRF(fcinfo, 0);
	*slot_out = slot;
	return blpg_consume_get(slot, max_changes, timeout_ms, &get_buf, first, last);
}

/* get_buf is kept between calls, up to binlog_fdw.consumer_keep_memory. */
static void
get_buf_trim(void)
{
	if ((size_t) get_buf.maxlen > (size_t) blpg_consumer_keep_memory * 1024)
	{
		pfree(get_buf.data);
		get_buf.data = NULL;
	}
}

/*
 * Give the result a tuplestore that holds kb kilobytes in memory (at least
 * work_mem, InitMaterializedSRF's size): a batch larger than work_mem would
 * otherwise be written to a temporary file and read back, which cost more
 * than making its rows.  The batch is in memory already anyway.
 */
static void
get_result_in_memory(ReturnSetInfo *rsinfo, size_t kb)
{
	MemoryContext old;

	if (kb <= (size_t) work_mem)
		return;
	old = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
	tuplestore_end(rsinfo->setResult);
	rsinfo->setResult = tuplestore_begin_heap(false, false,
											  (int) Min(kb, (size_t) MAX_KILOBYTES));
	MemoryContextSwitchTo(old);
}

/*
 * get_table()'s result: in memory as get()'s (above), its tuples in a
 * generation context, which allocates what each needs (a typed row of a
 * few hundred bytes takes half of the power-of-two chunk an AllocSet
 * would give it, and all of it is memory faulted in for the batch).
 */
static void
get_table_result_in_memory(ReturnSetInfo *rsinfo, size_t kb)
{
	MemoryContext old;
	MemoryContext cxt;

	if (kb <= (size_t) work_mem)
		return;
	cxt = GenerationContextCreate(rsinfo->econtext->ecxt_per_query_memory,
								  "binlog_fdw get_table result", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);
	tuplestore_end(rsinfo->setResult);
	rsinfo->setResult = tuplestore_begin_heap(false, false,
											  (int) Min(kb, (size_t) MAX_KILOBYTES));
	MemoryContextSwitchTo(old);
}

/*
 * get() and get_json(): take a batch and return its changes, a row each;
 * json_text gives primary_key/before/after as the decoder's json text
 * (get_json) rather than jsonb.
 */
static Datum
get_rows(FunctionCallInfo fcinfo, bool json_text)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	blpg_slot  *slot;
	uint64		first,
				last;
	uint64		batch_id = get_begin(fcinfo, &slot, &first, &last);

	if (batch_id)
	{
		blpg_change_iter *it;
		Datum		values[BLPG_NCOLS + 1];
		bool		nulls[BLPG_NCOLS + 1];

		/* rows take about three times the entries' size */
		get_result_in_memory(rsinfo, (size_t) get_buf.len * 3 / 1024);
		it = blpg_change_iter_create(&get_buf, first, last, NULL, NULL);
		blpg_change_iter_set_json_text(it, json_text);
		values[0] = Int64GetDatum((int64) batch_id);
		nulls[0] = false;
		while (blpg_change_iter_next(it, values + 1, nulls + 1))
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		blpg_change_iter_free(it);
	}
	get_buf_trim();
	return (Datum) 0;
}

Datum
binlog_fdw_get(PG_FUNCTION_ARGS)
{
	return get_rows(fcinfo, false);
}

Datum
binlog_fdw_get_json(PG_FUNCTION_ARGS)
{
	return get_rows(fcinfo, true);
}

/*
 * The lines in jsonl_buf (after VARHDRSZ bytes left for it) as a text
 * datum: in place when the server encoding is UTF-8 (the buffer outlives
 * the query's use of it: the tuplestore copies it), else converted.
 */
static Datum
jsonl_text_datum(void)
{
	char	   *lines = jsonl_buf.data + VARHDRSZ;
	size_t		len = jsonl_buf.len - VARHDRSZ;

	if (bl_buf_failed(&jsonl_buf))
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	if (GetDatabaseEncoding() != PG_UTF8)
		return blpg_text_utf8(lines, len);
	(void) pg_verify_mbstr(PG_UTF8, lines, (int) len, false);
	SET_VARSIZE(jsonl_buf.data, jsonl_buf.len);
	return PointerGetDatum(jsonl_buf.data);
}

/*
 * get_jsonl(): take a batch and return it as one row: its id, first and
 * last sequence, number of changes, and the changes as JSON lines in one
 * text value.  A batch whose text would pass binlog_fdw.jsonl_max_bytes
 * ends at the last transaction boundary before that (or, if none, at the
 * change that passes it); the rest comes with the next get.
 */
Datum
binlog_fdw_get_jsonl(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	blpg_slot  *slot;
	uint64		first,
				last;
	uint64		batch_id = get_begin(fcinfo, &slot, &first, &last);

	if (batch_id)
	{
		blpg_change_iter *it;
		bool		boundary;
		uint64		n = 0,		/* lines written: of changes first .. first+n-1 */
					cut_n = 0;	/* lines up to the last transaction boundary */
		size_t		cut_len = 0;
		size_t		max_bytes = (size_t) blpg_jsonl_max_bytes * 1024;
		bool		may_cut = true;
		Datum		values[5];
		bool		nulls[5] = {false, false, false, false, false};

		/* room for the text's varlena header: the datum is built in place */
		bl_buf_reset(&jsonl_buf);
		bl_buf_append(&jsonl_buf, "\0\0\0\0", VARHDRSZ);
		it = blpg_change_iter_create(&get_buf, first, last, NULL, NULL);
		while (blpg_change_iter_next_jsonl(it, &jsonl_buf, &boundary))
		{
			n++;
			if (boundary)
			{
				/* the batch can end here if its text gets too large */
				cut_len = jsonl_buf.len;
				cut_n = n;
			}
			if (jsonl_buf.len > max_bytes && first + n - 1 < last && may_cut)
			{
				if (cut_n == 0)
				{
					/* one transaction alone is too large: a part of it */
					cut_len = jsonl_buf.len;
					cut_n = n;
				}
				if (blpg_consume_shorten(slot, batch_id, first + cut_n - 1))
				{
					jsonl_buf.len = cut_len;
					n = cut_n;
					last = first + n - 1;
					break;
				}
				/* another consumer took a batch since: deliver it whole */
				may_cut = false;
			}
		}
		blpg_change_iter_free(it);
		values[0] = Int64GetDatum((int64) batch_id);
		values[1] = Int64GetDatum((int64) first);
		values[2] = Int64GetDatum((int64) last);
		values[3] = Int32GetDatum((int32) n);
		values[4] = jsonl_text_datum();
		get_result_in_memory(rsinfo, jsonl_buf.len / 1024 + 64);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		if (jsonl_buf.cap > JSONL_BUF_KEEP)
			bl_buf_free(&jsonl_buf);
	}
	get_buf_trim();
	return (Datum) 0;
}

Datum
binlog_fdw_ack(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	uint64		batch_id = (uint64) PG_GETARG_INT64(1);
	ForeignServer *server;
	blpg_slot  *slot = blpg_consumer_slot(name, &server);

	PG_RETURN_INT64((int64) blpg_consume_ack_next(slot, server, batch_id));
}

Datum
binlog_fdw_rollback(PG_FUNCTION_ARGS)
{
	char	   *name;
	blpg_slot  *slot;

	blpg_require_arg(fcinfo, 0, "server");
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	slot = blpg_consumer_slot(name, NULL);
	PG_RETURN_INT32(blpg_consume_rollback(slot, PG_ARGISNULL(1),
										  PG_ARGISNULL(1) ? 0 : (uint64) PG_GETARG_INT64(1)));
}

/*
 * get_table(server, row_type anyelement, max_changes, timeout_ms): the next
 * batch's rows of one source table, as rows of its typed foreign table
 * (typed.c), the type of row_type.  A batch holds every table's changes
 * (as get()'s); one without a row of this table is acknowledged here, in
 * the caller's transaction, when it is the oldest outstanding batch (else
 * it is delivered again and the result is empty: ack the earlier ones
 * first), and the next is taken.
 */
Datum
binlog_fdw_get_table(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			type = get_fn_expr_argtype(fcinfo->flinfo, 1);
	Oid			relid = OidIsValid(type) ? get_typ_typrelid(type) : InvalidOid;
	char	   *name;
	int			max_changes,
				timeout_ms;
	ForeignServer *server;
	blpg_slot  *slot;
	Relation	rel;
	typed_state *st;
	Datum	   *values;
	bool	   *nulls;
	TimestampTz deadline;
	MemoryContext rowcxt;

	blpg_require_arg(fcinfo, 0, "server");
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	max_changes = PG_ARGISNULL(2) ? 1000 : PG_GETARG_INT32(2);
	timeout_ms = PG_ARGISNULL(3) ? 0 : PG_GETARG_INT32(3);
	if (max_changes < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_changes must be at least 1")));
	if (!OidIsValid(relid) || get_rel_relkind(relid) != RELKIND_FOREIGN_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("row_type must be the row type of a typed foreign table, not %s",
						OidIsValid(type) ? format_type_be(type) : "unknown"),
				 errhint("Pass NULL::schema.table of a table IMPORT FOREIGN SCHEMA made.")));
	slot = blpg_consumer_slot(name, &server);
	if (pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_FOREIGN_TABLE, get_rel_name(relid));
	rel = table_open(relid, AccessShareLock);
	consume_keep_freed_memory();
	st = blpg_typed_reader(rel, server->servername, get_buf_reset());
	values = palloc(sizeof(Datum) * RelationGetDescr(rel)->natts);
	nulls = palloc(sizeof(bool) * RelationGetDescr(rel)->natts);
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	deadline = GetCurrentTimestamp() + (int64) timeout_ms * 1000;
	rowcxt = AllocSetContextCreate(CurrentMemoryContext, "binlog_fdw get_table row",
								   ALLOCSET_DEFAULT_SIZES);
	for (;;)
	{
		uint64		first,
					last;
		long		left = (long) ((deadline - GetCurrentTimestamp()) / 1000);
		uint64		batch = blpg_consume_get(slot, max_changes, (int) Max(left, 0),
											 blpg_typed_reader_buffer(st, slot, max_changes), &first, &last);
		int64		rows = 0;
		bool		oldest = false;

		if (batch == 0)
			break;
		/* typed rows take about three times the entries' size, as get()'s */
		get_table_result_in_memory(rsinfo, (size_t) blpg_typed_reader_buffer_len(st) * 3 / 1024);
		blpg_typed_reader_start(st, first, last, batch);
		for (;;)
		{
			MemoryContext old = MemoryContextSwitchTo(rowcxt);
			bool		got = blpg_typed_reader_next(st, values, nulls);

			MemoryContextSwitchTo(old);
			if (!got)
				break;
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
			MemoryContextReset(rowcxt);
			rows++;
		}
		if (rows > 0)
			break;
		/* no row of this table: acknowledge it if it is the oldest */
		LWLockAcquire(&slot->lock, LW_SHARED);
		for (int k = 0; k < slot->nbatches; k++)
			if (!slot->batches[k].ack_pending)
			{
				oldest = slot->batches[k].batch_id == batch;
				break;
			}
		LWLockRelease(&slot->lock);
		if (!oldest)
		{
			(void) blpg_consume_rollback(slot, false, batch);
			break;
		}
		(void) blpg_consume_ack_next(slot, server, batch);
		CHECK_FOR_INTERRUPTS();
	}
	MemoryContextDelete(rowcxt);
	table_close(rel, AccessShareLock);
	get_buf_trim();
	return (Datum) 0;
}
