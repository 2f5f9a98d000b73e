/*
 * conflict.c
 *	  Conflicts of apply leave a trace in binlog_fdw.conflict_log (view
 *	  binlog_fdw.conflicts): a row to update or delete that is missing
 *	  (missing_row), an inserted key that exists (duplicate_key), a
 *	  constraint the row violates (constraint_violation).
 *
 * Resolved by the policy skip or overwrite: written in the apply
 * transaction by blpg_conflict_log(), so it commits or rolls back with the
 * rows it concerns.  Stopping apply (policy error, and any constraint
 * violation): the apply transaction rolls back, so the conflict cannot be
 * written there.  The row being applied is captured by the row's error
 * context callback while the error is raised (target.c calls
 * blpg_conflict_capture()); after the error, blpg_conflict_stopped() keeps
 * it in the source's slot (shared memory: it survives the rollback, and the
 * failing change is found again by the next apply should the server
 * restart), where view binlog_fdw.conflicts shows it with resolution
 * 'stopped' and the skip_change() call that skips it.  It is written into
 * conflict_log when skip_change() skips it ('skipped_by_request') or an
 * apply gets past it (target fixed, or policy changed: 'passed'), in that
 * transaction.  Locking: the slot's lock for the stopped conflict.
 */
#include "apply/apply.h"

#include "base/base.h"
#include "bl_value_text.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "foreign/foreign.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(binlog_fdw_stopped_conflicts);

/* the row whose error is being raised (capture) */
typedef struct captured_row
{
	bool		valid;
	int			sqlerrcode;
	uint64		seq;
	char	   *source_table;
	char	   *target_table;
	char	   *operation;
	char	   *key;
	char	   *before;
	char	   *after;
	char	   *file;
	uint64		pos;
	char	   *gtid;
	char	   *policy;
} captured_row;

static captured_row captured;
static MemoryContext capture_cxt = NULL;

/* the sequence of the change being applied (apply.c sets it) */
uint64		blpg_apply_current_seq = 0;

const char *
blpg_conflict_kind_of(int sqlerrcode, const char *operation)
{
	if (sqlerrcode == ERRCODE_NO_DATA_FOUND &&
		(strcmp(operation, "UPDATE") == 0 || strcmp(operation, "DELETE") == 0))
		return "missing_row";
	if (sqlerrcode == ERRCODE_UNIQUE_VIOLATION && strcmp(operation, "INSERT") == 0)
		return "duplicate_key";
	if (ERRCODE_TO_CATEGORY(sqlerrcode) == ERRCODE_INTEGRITY_CONSTRAINT_VIOLATION)
		return "constraint_violation";
	return NULL;
}

char *
blpg_row_json(const bl_table *t, const bl_row *row, const bl_row *before)
{
	bl_buf		b;
	bl_error	err;
	char	   *s;

	if (row == NULL || row->ncols == 0)
		return NULL;
	memset(&err, 0, sizeof(err));
	bl_buf_init(&b);
	if (bl_row_to_json(t, row, before && before->ncols ? before : NULL, &b, &err) != 0)
	{
		bl_buf_free(&b);
		return NULL;
	}
	s = pnstrdup(b.data, b.len);
	bl_buf_free(&b);
	return s;
}

void
blpg_conflict_capture_reset(void)
{
	captured.valid = false;
	if (capture_cxt)
		MemoryContextReset(capture_cxt);
}

/*
 * From a row's error context callback: remember the row (only for errors
 * that are conflicts).  Runs while an error is being raised: it allocates
 * in its own context and raises nothing.
 */
void
blpg_conflict_capture(const char *source_table, const char *target_table,
					  const char *operation, const char *key, const char *before,
					  const char *after, const char *file, size_t file_len,
					  uint64 pos, const char *gtid, size_t gtid_len, uint64 seq,
					  const char *policy)
{
	int			code = geterrcode();
	MemoryContext old;

	if (blpg_conflict_kind_of(code, operation) == NULL)
		return;
	if (capture_cxt == NULL)
		capture_cxt = AllocSetContextCreate(TopMemoryContext, "binlog_fdw conflict",
											ALLOCSET_SMALL_SIZES);
	blpg_conflict_capture_reset();
	old = MemoryContextSwitchTo(capture_cxt);
	captured.sqlerrcode = code;
	captured.seq = seq;
	captured.source_table = pstrdup(source_table);
	captured.target_table = pstrdup(target_table);
	captured.operation = pstrdup(operation);
	captured.key = key ? pstrdup(key) : NULL;
	captured.before = before ? pstrdup(before) : NULL;
	captured.after = after ? pstrdup(after) : NULL;
	captured.file = pnstrdup(file, file_len);
	captured.pos = pos;
	captured.gtid = gtid_len ? pnstrdup(gtid, gtid_len) : NULL;
	captured.policy = pstrdup(policy);
	captured.valid = true;
	MemoryContextSwitchTo(old);
}

/* ---- conflict_log ---- */

typedef struct log_args
{
	const char *server;
	const char *source_table;
	const char *target_table;
	const char *operation;
	const char *kind;
	const char *key;
	const char *before;
	const char *after;
	const char *file;
	int64		pos;
	const char *gtid;
	const char *policy;
	const char *resolution;
	const char *skip_call;
	const char *message;
	const char *time;			/* NULL: now() */
} log_args;

static void
log_fn(void *arg)
{
	log_args   *a = arg;
	Oid			types[16] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID,
	TEXTOID, TEXTOID, TEXTOID, INT8OID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		values[16];
	char		nulls[16];
	const char *texts[16] = {a->server, a->source_table, a->target_table, a->operation,
		a->kind, a->key, a->before, a->after, a->file, NULL, a->gtid, a->policy,
	a->resolution, a->skip_call, a->message, a->time};

	for (int i = 0; i < 16; i++)
	{
		nulls[i] = ' ';
		if (i == 9)
			values[i] = Int64GetDatum(a->pos);
		else if (texts[i] == NULL)
		{
			values[i] = (Datum) 0;
			nulls[i] = 'n';
		}
		else
			values[i] = CStringGetTextDatum(texts[i]);
	}
	if (SPI_execute_with_args("INSERT INTO binlog_fdw.conflict_log (server_name, source_table, "
							  "target_table, operation, kind, key, before_image, after_image, "
							  "binlog_file, binlog_pos, gtid, policy, resolution, skip_call, "
							  "message, conflict_time) VALUES ($1, $2, $3, $4, $5, $6::jsonb, "
							  "$7::jsonb, $8::jsonb, $9, $10, $11, $12, $13, $14, $15, "
							  "coalesce($16::timestamptz, now()))",
							  16, types, values, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not record a conflict in binlog_fdw.conflict_log");
}

void
blpg_conflict_log(const char *server, const char *source_table, const char *target_table,
				  const char *operation, const char *kind, const char *key,
				  const char *before, const char *after, const blpg_entry_view *v,
				  const char *policy, const char *resolution)
{
	log_args	a;

	memset(&a, 0, sizeof(a));
	a.server = server;
	a.source_table = source_table;
	a.target_table = target_table;
	a.operation = operation;
	a.kind = kind;
	a.key = key;
	a.before = before;
	a.after = after;
	a.file = pnstrdup(v->file, v->e->file_len);
	a.pos = (int64) v->e->event_pos;
	a.gtid = v->e->gtid_len ? pnstrdup(v->gtid, v->e->gtid_len) : NULL;
	a.policy = policy;
	a.resolution = resolution;
	/* 0.1's tables until ALTER EXTENSION binlog_fdw UPDATE: no log */
	if (!blpg_extension_table_exists("conflict_log"))
		return;
	blpg_run_as_owner(log_fn, &a);
}

/* ---- the conflict stopping apply ---- */

static void
json_field(StringInfo b, const char *name, const char *value, bool raw)
{
	if (b->len > 1)
		appendStringInfoChar(b, ',');
	escape_json(b, name);
	appendStringInfoChar(b, ':');
	if (value == NULL)
		appendStringInfoString(b, "null");
	else if (raw)
		appendStringInfoString(b, value);
	else
		escape_json(b, value);
}

static char *
stopped_json(const char *server, const ErrorData *edata, uint64 first_seq, bool images)
{
	StringInfoData b;
	char		num[32];
	char	   *call;
	uint64		n = captured.seq >= first_seq ? captured.seq - first_seq + 1 : 1;

	/* the changes up to this one: the transaction's BEGIN and rows before it */
	if (n == 1)
		call = psprintf("SELECT * FROM binlog_fdw.skip_change(%s)", quote_literal_cstr(server));
	else
		call = psprintf("SELECT binlog_fdw.skip_change(%s) FROM generate_series(1, " UINT64_FORMAT ")",
						quote_literal_cstr(server), n);
	initStringInfo(&b);
	appendStringInfoChar(&b, '{');
	json_field(&b, "source_table", captured.source_table, false);
	json_field(&b, "target_table", captured.target_table, false);
	json_field(&b, "operation", captured.operation, false);
	json_field(&b, "kind", blpg_conflict_kind_of(captured.sqlerrcode, captured.operation), false);
	json_field(&b, "key", captured.key, true);
	json_field(&b, "before_image", images ? captured.before : NULL, true);
	json_field(&b, "after_image", images ? captured.after : NULL, true);
	json_field(&b, "binlog_file", captured.file, false);
	snprintf(num, sizeof(num), UINT64_FORMAT, captured.pos);
	json_field(&b, "binlog_pos", num, true);
	json_field(&b, "gtid", captured.gtid, false);
	json_field(&b, "policy", captured.policy, false);
	snprintf(num, sizeof(num), UINT64_FORMAT, captured.seq);
	json_field(&b, "seq", num, true);
	snprintf(num, sizeof(num), UINT64_FORMAT, n);
	json_field(&b, "skip_changes", num, true);
	json_field(&b, "skip_call", call, false);
	json_field(&b, "message", edata->message, false);
	json_field(&b, "conflict_time", timestamptz_to_str(GetCurrentTimestamp()), false);
	if (!images)
		json_field(&b, "images_omitted", "true", true);
	appendStringInfoChar(&b, '}');
	return b.data;
}

/*
 * After an apply error (the transaction not yet aborted, or aborted): if
 * it was the conflict of the captured row, keep it in the slot.  first_seq:
 * the first change that apply call took (the next change to skip).
 */
void
blpg_conflict_stopped(blpg_slot *slot, const char *server, const ErrorData *edata,
					  uint64 first_seq)
{
	char	   *json;

	/* raised with the slot's lock held: the abort releases it, leave it */
	if (LWLockHeldByMe(&slot->lock))
		return;
	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	slot->apply_errors++;
	LWLockRelease(&slot->lock);
	if (!captured.valid || captured.sqlerrcode != edata->sqlerrcode)
		return;
	json = stopped_json(server, edata, first_seq, true);
	if (strlen(json) >= BLPG_CONFLICT_LEN)
		json = stopped_json(server, edata, first_seq, false);
	if (strlen(json) >= BLPG_CONFLICT_LEN)
		return;					/* a key of 900 bytes at most: cannot be */
	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	if (slot->stopped_seq == captured.seq &&
		strcmp(slot->stopped_file, captured.file) == 0 && slot->stopped_pos == captured.pos)
		slot->stopped_attempts++;
	else
		slot->stopped_attempts = 1;
	strlcpy(slot->stopped_conflict, json, BLPG_CONFLICT_LEN);
	strlcpy(slot->stopped_file, captured.file, BLPG_FILE_LEN);
	slot->stopped_pos = captured.pos;
	slot->stopped_seq = captured.seq;
	LWLockRelease(&slot->lock);
	blpg_conflict_capture_reset();
}

typedef struct resolve_args
{
	const char *server;
	const char *json;
	const char *resolution;
} resolve_args;

static void
resolve_fn(void *arg)
{
	resolve_args *a = arg;
	Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		values[3] = {CStringGetTextDatum(a->server), CStringGetTextDatum(a->json),
	CStringGetTextDatum(a->resolution)};

	if (SPI_execute_with_args("INSERT INTO binlog_fdw.conflict_log (server_name, source_table, "
							  "target_table, operation, kind, key, before_image, after_image, "
							  "binlog_file, binlog_pos, gtid, policy, resolution, skip_call, "
							  "message, conflict_time) "
							  "SELECT $1, c->>'source_table', c->>'target_table', c->>'operation', "
							  "c->>'kind', c->'key', c->'before_image', c->'after_image', "
							  "c->>'binlog_file', (c->>'binlog_pos')::bigint, c->>'gtid', c->>'policy', $3, "
							  "c->>'skip_call', c->>'message', (c->>'conflict_time')::timestamptz "
							  "FROM (SELECT $2::jsonb AS c) s",
							  3, types, values, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not record a conflict in binlog_fdw.conflict_log");
}

/*
 * The stopped conflict is resolved: skip_change() skipped change seq at
 * file/pos (seq 0: any change past file/pos was applied, the conflict was
 * passed).  Written in the current transaction.
 */
void
blpg_conflict_resolve(blpg_slot *slot, const char *server, uint64 seq, const char *file,
					  uint64 pos)
{
	char	   *json = NULL;
	const char *resolution = NULL;

	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	if (slot->stopped_conflict[0] != '\0')
	{
		if (seq != 0 && seq == slot->stopped_seq && slot->stopped_pos == pos &&
			strcmp(slot->stopped_file, file) == 0)
			resolution = "skipped_by_request";
		else if (seq == 0 && file[0] != '\0' &&
				 blpg_position_cmp(slot->stopped_file, slot->stopped_pos, file, pos) < 0)
			resolution = "passed";
		if (resolution)
		{
			json = pstrdup(slot->stopped_conflict);
			slot->stopped_conflict[0] = '\0';
			slot->stopped_seq = 0;
			slot->stopped_attempts = 0;
		}
	}
	LWLockRelease(&slot->lock);
	if (json && blpg_extension_table_exists("conflict_log"))
	{
		resolve_args a;
		Datum		j = DirectFunctionCall1(jsonb_in, CStringGetDatum(json));
		char	   *src = text_to_cstring(DatumGetTextPP(DirectFunctionCall2(jsonb_object_field_text, j,
																		  CStringGetTextDatum("source_table"))));
		char	   *tgt = text_to_cstring(DatumGetTextPP(DirectFunctionCall2(jsonb_object_field_text, j,
																		  CStringGetTextDatum("target_table"))));
		char	   *kind = text_to_cstring(DatumGetTextPP(DirectFunctionCall2(jsonb_object_field_text, j,
																		   CStringGetTextDatum("kind"))));

		a.server = server;
		a.json = json;
		a.resolution = resolution;
		blpg_run_as_owner(resolve_fn, &a);
		blpg_stats_count_conflict(slot, server, src, tgt, kind);
	}
}

Datum
binlog_fdw_stopped_conflicts(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	blpg_require_shmem();
	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < blpg_shared->max_sources; i++)
	{
		blpg_slot  *slot = &blpg_shared->slots[i];
		char		name[NAMEDATALEN];
		Oid			serverid = InvalidOid;
		ForeignServer *fs;
		char	   *json = NULL;
		int64		attempts = 0;
		Datum		values[3];
		bool		nulls[3] = {0};

		LWLockAcquire(&slot->lock, LW_SHARED);
		if (slot->in_use && slot->dboid == MyDatabaseId && slot->stopped_conflict[0] != '\0')
		{
			strlcpy(name, slot->server_name, sizeof(name));
			serverid = slot->serverid;
			json = pstrdup(slot->stopped_conflict);
			attempts = (int64) slot->stopped_attempts;
		}
		LWLockRelease(&slot->lock);
		if (json == NULL)
			continue;
		/* its current name: a rename shows at once */
		fs = GetForeignServerExtended(serverid, FSV_MISSING_OK);
		values[0] = CStringGetTextDatum(fs ? fs->servername : name);
		values[1] = DirectFunctionCall1(jsonb_in, CStringGetDatum(json));
		values[2] = Int64GetDatum(attempts);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

const char *
blpg_conflict_policy_name(blpg_conflict c)
{
	return c == BLPG_CONFLICT_SKIP ? "skip" : c == BLPG_CONFLICT_OVERWRITE ? "overwrite" : "error";
}
