/*
 * state.c
 *	  binlog_fdw.source_state: one row per source with the position where
 *	  streaming resumes (the start of the first transaction not fully
 *	  acknowledged, plus how many of its changes were), written through SPI
 *	  in the caller's transaction so that it commits or aborts together with
 *	  whatever the caller did with the changes.
 *
 * Consumers may be unprivileged roles granted the SQL functions; the table
 * itself belongs to the extension's owner, so the writes run as that owner
 * (blpg_run_as_owner, src/base/owner.c).
 *
 * The GTID state has no size limit: it is text in the table and palloc'd
 * text in a blpg_position (NULL: not known, which leaves the recorded
 * state as it was).  Binlog file names and single GTIDs are bounded; a
 * longer one is an error, never cut.
 */
#include "store/store.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "catalog/pg_class.h"
#include "access/htup_details.h"

typedef struct state_call
{
	Oid			serverid;
	const char *server_name;
	blpg_position *pos;
	bool		found;
	MemoryContext cxt;			/* where a loaded GTID state goes */
} state_call;

void
blpg_copy_bounded(char *dst, size_t dstlen, const char *src, size_t len, const char *what)
{
	if (len >= dstlen)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s of %zu bytes is too long (at most %zu bytes are supported): \"%.*s...\"",
						what, len, dstlen - 1, (int) Min(len, 100), src)));
	memcpy(dst, src, len);
	dst[len] = '\0';
}

void
blpg_position_to_slot(const blpg_position *pos, blpg_slot_position *out)
{
	memcpy(out->file, pos->file, sizeof(out->file));
	out->pos = pos->pos;
	out->skip = pos->skip;
	memcpy(out->gtid, pos->gtid, sizeof(out->gtid));
}

static void
load_fn(void *arg)
{
	state_call *c = arg;
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1];

	args[0] = ObjectIdGetDatum(c->serverid);
	if (SPI_execute_with_args("SELECT file, pos, skip, gtid, gtid_state "
							  "FROM binlog_fdw.source_state WHERE srvid = $1",
							  1, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read binlog_fdw.source_state");
	if (SPI_processed == 1)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		char	   *s;
		bool		isnull;
		Datum		d;

		s = SPI_getvalue(tup, desc, 1);
		blpg_copy_bounded(c->pos->file, sizeof(c->pos->file), s ? s : "", s ? strlen(s) : 0,
						  "binlog file name in binlog_fdw.source_state");
		d = SPI_getbinval(tup, desc, 2, &isnull);
		c->pos->pos = isnull ? 0 : (uint64) DatumGetInt64(d);
		d = SPI_getbinval(tup, desc, 3, &isnull);
		c->pos->skip = isnull ? 0 : (uint64) DatumGetInt64(d);
		s = SPI_getvalue(tup, desc, 4);
		blpg_copy_bounded(c->pos->gtid, sizeof(c->pos->gtid), s ? s : "", s ? strlen(s) : 0,
						  "GTID in binlog_fdw.source_state");
		/* SPI's memory goes at SPI_finish: the state goes to the caller's */
		s = SPI_getvalue(tup, desc, 5);
		c->pos->gtid_state = s ? MemoryContextStrdup(c->cxt, s) : NULL;
		c->found = c->pos->file[0] != '\0';
	}
}

bool
blpg_state_load(Oid serverid, blpg_position *pos)
{
	state_call	c = {serverid, NULL, pos, false, CurrentMemoryContext};

	memset(pos, 0, sizeof(*pos));
	blpg_run_as_owner(load_fn, &c);
	return c.found;
}

static void
save_fn(void *arg)
{
	state_call *c = arg;
	const blpg_position *pos = c->pos;
	Oid			argtypes[7] = {OIDOID, TEXTOID, TEXTOID, INT8OID, INT8OID, TEXTOID, TEXTOID};
	Datum		args[7];
	char		nulls[8] = "       ";

	args[0] = ObjectIdGetDatum(c->serverid);
	args[1] = CStringGetTextDatum(c->server_name);
	args[2] = CStringGetTextDatum(pos->file);
	args[3] = Int64GetDatum((int64) pos->pos);
	args[4] = Int64GetDatum((int64) pos->skip);
	args[5] = CStringGetTextDatum(pos->gtid);
	args[6] = pos->gtid_state ? CStringGetTextDatum(pos->gtid_state) : (Datum) 0;
	if (pos->gtid[0] == '\0')
		nulls[5] = 'n';
	if (pos->gtid_state == NULL)
		nulls[6] = 'n';
	if (SPI_execute_with_args("INSERT INTO binlog_fdw.source_state AS s "
							  "(srvid, server_name, file, pos, skip, gtid, gtid_state, updated_at) "
							  "VALUES ($1, $2, $3, $4, $5, $6, $7, clock_timestamp()) "
							  "ON CONFLICT (srvid) DO UPDATE SET server_name = excluded.server_name, "
							  "file = excluded.file, pos = excluded.pos, skip = excluded.skip, "
							  "gtid = coalesce(excluded.gtid, s.gtid), "
							  "gtid_state = coalesce(excluded.gtid_state, s.gtid_state), "
							  "updated_at = excluded.updated_at",
							  7, argtypes, args, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not write binlog_fdw.source_state");
}

void
blpg_state_save(Oid serverid, const char *server_name, const blpg_position *pos)
{
	state_call	c = {serverid, server_name, (blpg_position *) pos, false, NULL};

	blpg_run_as_owner(save_fn, &c);
}

static void
forget_fn(void *arg)
{
	state_call *c = arg;
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1];

	args[0] = ObjectIdGetDatum(c->serverid);
	if (SPI_execute_with_args("DELETE FROM binlog_fdw.source_state WHERE srvid = $1",
							  1, argtypes, args, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not write binlog_fdw.source_state");
}

void
blpg_state_forget(Oid serverid)
{
	state_call	c = {serverid, NULL, NULL, false, NULL};

	blpg_run_as_owner(forget_fn, &c);
}
