/*
 * temporal.c
 *	  History (system-versioned) tables: binlog_fdw.map_history(server,
 *	  'db.table', history, enabled) and the writing of each applied change
 *	  into the table's history, in the transaction that applies it.
 *
 * A history table holds one row per version of a target row: the target's
 * columns (same names and types, generated columns left out) as they were
 * from valid_from to valid_to, and the change that wrote the version: op
 * (INSERT, UPDATE, DELETE), commit_time (the source transaction's, which
 * valid_from is), gtid, binlog_file, binlog_pos, and replaces (history_id
 * of the version it closed).  An INSERT opens a version (valid_to
 * 'infinity'); an UPDATE closes the open version of the row's old key
 * (valid_to = its commit time) and opens one with the new values (under the
 * new key if the key changed); a DELETE closes it and leaves a row with the
 * deleted values and the empty range [t, t), so that every applied change
 * is one row.  "Row 42 at time T" is then
 *   WHERE id = 42 AND valid_from <= T AND T < valid_to.
 *
 * The rows are written by the extension through SPI as the applying role
 * (it needs SELECT, INSERT and UPDATE on the history table), not by
 * triggers: apply runs with session_replication_role replica.  They are
 * part of apply's transaction, which also writes the source position, so
 * each change is in the history exactly once whatever aborts or crashes.
 * Changes apply does not write into the target (skipped by a conflict
 * policy, or before a copy's position) are not versions either.  A
 * TRUNCATE or DROP TABLE of the source ends every open version with a row
 * of op TRUNCATE or DROP holding its values (empty range), like a DELETE.
 */
#include "apply/apply.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "common/hashfn.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "foreign/foreign.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/formatting.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"

PG_FUNCTION_INFO_V1(binlog_fdw_map_history);

#define UNIX_TO_PG_US	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY)

/* The history table's own columns, before the target's. */
static const struct
{
	const char *name;
	Oid			type;
	const char *definition;
}			history_meta[] = {
	{"history_id", INT8OID, "bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY"},
	{"valid_from", TIMESTAMPTZOID, "timestamptz NOT NULL"},
	{"valid_to", TIMESTAMPTZOID, "timestamptz NOT NULL DEFAULT 'infinity'"},
	{"op", TEXTOID, "text NOT NULL CHECK (op IN ('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'DROP'))"},
	{"commit_time", TIMESTAMPTZOID, "timestamptz NOT NULL"},
	{"gtid", TEXTOID, "text"},
	{"binlog_file", TEXTOID, "text NOT NULL"},
	{"binlog_pos", INT8OID, "bigint NOT NULL"},
	{"replaces", INT8OID, "bigint"},
};

#define NMETA lengthof(history_meta)
/* parameters of the insert before the target's columns (all but history_id) */
#define NMETA_PARAMS (NMETA - 1)

struct blpg_history
{
	char	   *name;			/* quoted qualified name */
	int			ncols;			/* target columns copied */
	AttrNumber *attnums;		/* ... in the target's row type */
	Oid		   *types;
	int			nkey;
	AttrNumber *key_attnums;
	SPIPlanPtr	close_plan;
	SPIPlanPtr	insert_plan;
};

static bool
is_meta_column(const char *name)
{
	for (int i = 0; i < (int) NMETA; i++)
		if (strcmp(history_meta[i].name, name) == 0)
			return true;
	return false;
}

static const char *
rel_qualified(Oid relid)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  get_rel_name(relid));
}

/*
 * Can history (a relation) hold target's versions?  Its own columns with
 * their types, and each column of the target (but generated ones) by name
 * with the target's type; else an error naming what is missing.
 */
static void
check_history(Relation target, Relation history, const char *source)
{
	TupleDesc	td = RelationGetDescr(target);
	TupleDesc	hd = RelationGetDescr(history);
	const char *hname = rel_qualified(RelationGetRelid(history));
	const char *tname = rel_qualified(RelationGetRelid(target));

	if (history->rd_rel->relkind != RELKIND_RELATION &&
		history->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("history %s of MySQL table %s is not a table", hname, source)));
	if (RelationGetRelid(history) == RelationGetRelid(target))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the history table of MySQL table %s cannot be its target %s", source, tname)));
	for (int i = 0; i < (int) NMETA; i++)
	{
		AttrNumber	a = get_attnum(RelationGetRelid(history), history_meta[i].name);

		if (a == InvalidAttrNumber ||
			TupleDescAttr(hd, a - 1)->atttypid != history_meta[i].type)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("history table %s of MySQL table %s has no column \"%s\" of type %s",
							hname, source, history_meta[i].name,
							format_type_be(history_meta[i].type)),
					 errhint("Let binlog_fdw.map_history() create the history table under a new name.")));
	}
	for (int a = 0; a < td->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(td, a);
		AttrNumber	ha;

		if (att->attisdropped || att->attgenerated)
			continue;
		if (is_meta_column(NameStr(att->attname)))
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_COLUMN),
					 errmsg("column \"%s\" of target %s has the name of a column of its history table",
							NameStr(att->attname), tname),
					 errdetail("A history table has the columns history_id, valid_from, valid_to, op, commit_time, gtid, binlog_file, binlog_pos and replaces besides the target's.")));
		ha = get_attnum(RelationGetRelid(history), NameStr(att->attname));
		if (ha == InvalidAttrNumber || TupleDescAttr(hd, ha - 1)->attgenerated)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("history table %s of MySQL table %s has no column \"%s\" of target %s",
							hname, source, NameStr(att->attname), tname),
					 errhint("Add it: ALTER TABLE %s ADD COLUMN %s %s.", hname,
							 quote_identifier(NameStr(att->attname)),
							 format_type_with_typemod(att->atttypid, att->atttypmod))));
		if (TupleDescAttr(hd, ha - 1)->atttypid != att->atttypid)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" of history table %s is of type %s, but of type %s in target %s",
							NameStr(att->attname), hname,
							format_type_be(TupleDescAttr(hd, ha - 1)->atttypid),
							format_type_be(att->atttypid), tname),
					 errhint("Change it: ALTER TABLE %s ALTER COLUMN %s TYPE %s.", hname,
							 quote_identifier(NameStr(att->attname)),
							 format_type_with_typemod(att->atttypid, att->atttypmod))));
	}
}

/* ---- writing versions (from target.c) ---- */

/*
 * The plans of the history writes, kept for the life of the process and
 * shared by every apply of it, by statement and parameter types: an apply
 * that aborts leaves nothing to free, and their number only grows with the
 * shapes of the history tables (DDL).  PostgreSQL's plan cache replans them
 * when the tables change.
 */
static HTAB *history_plans = NULL;

typedef struct plan_slot
{
	char	   *key;			/* hash key: statement and types */
	SPIPlanPtr	plan;
} plan_slot;

static uint32
plan_key_hash(const void *key, Size keysize)
{
	const char *s = *(char *const *) key;

	return string_hash(s, strlen(s) + 1);
}

static int
plan_key_match(const void *a, const void *b, Size keysize)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

static SPIPlanPtr
cached_plan(const char *sql, int nargs, Oid *types)
{
	StringInfoData key;
	char	   *k;
	plan_slot  *e;
	bool		found;

	if (history_plans == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(char *);
		ctl.entrysize = sizeof(plan_slot);
		ctl.hash = plan_key_hash;
		ctl.match = plan_key_match;
		ctl.hcxt = TopMemoryContext;
		history_plans = hash_create("binlog_fdw history plans", 16, &ctl,
									HASH_ELEM | HASH_FUNCTION | HASH_COMPARE | HASH_CONTEXT);
	}
	initStringInfo(&key);
	appendStringInfoString(&key, sql);
	for (int i = 0; i < nargs; i++)
		appendStringInfo(&key, " %u", types[i]);
	k = key.data;
	e = hash_search(history_plans, &k, HASH_FIND, NULL);
	if (e)
		return e->plan;
	{
		SPIPlanPtr	plan;

		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		plan = SPI_prepare(sql, nargs, types);
		if (plan == NULL)
			elog(ERROR, "could not prepare a write of a history table: %s",
				 SPI_result_code_string(SPI_result));
		if (SPI_keepplan(plan) != 0)
			elog(ERROR, "could not keep the plan of a write of a history table");
		SPI_finish();
		k = MemoryContextStrdup(TopMemoryContext, key.data);
		e = hash_search(history_plans, &k, HASH_ENTER, &found);
		e->key = k;
		e->plan = plan;
	}
	return e->plan;
}

/*
 * The history follows its target's columns (after DDL of the source, or
 * by hand): a column the target has and the history lacks is added (its
 * older versions hold NULL there), one of another type takes the target's
 * type (older values converted through text); a column the target dropped
 * or renamed keeps its older values under its old name.
 */
static void
follow_target(Relation target, Oid hrelid, const char *source)
{
	TupleDesc	td = RelationGetDescr(target);
	Relation	hrel = table_open(hrelid, AccessShareLock);
	TupleDesc	hd = RelationGetDescr(hrel);
	StringInfoData alter;
	int			nclauses = 0;
	const char *hname = rel_qualified(hrelid);

	initStringInfo(&alter);
	appendStringInfo(&alter, "ALTER TABLE %s", hname);
	for (int a = 0; a < td->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(td, a);
		AttrNumber	ha;
		const char *col = quote_identifier(NameStr(att->attname));
		const char *type;

		if (att->attisdropped || att->attgenerated || is_meta_column(NameStr(att->attname)))
			continue;
		type = format_type_with_typemod(att->atttypid, att->atttypmod);
		ha = get_attnum(hrelid, NameStr(att->attname));
		if (ha == InvalidAttrNumber)
			appendStringInfo(&alter, "%s ADD COLUMN %s %s", nclauses++ ? "," : "", col, type);
		else if (!TupleDescAttr(hd, ha - 1)->attgenerated &&
				 (TupleDescAttr(hd, ha - 1)->atttypid != att->atttypid ||
				  (TupleDescAttr(hd, ha - 1)->atttypmod != att->atttypmod &&
				   TupleDescAttr(hd, ha - 1)->atttypmod != -1)))
			appendStringInfo(&alter, "%s ALTER COLUMN %s TYPE %s USING %s::text::%s",
							 nclauses++ ? "," : "", col, type, col, type);
	}
	table_close(hrel, AccessShareLock);
	if (nclauses == 0)
		return;
	ereport(LOG,
			(errmsg("history table %s of MySQL table %s follows the columns of its target %s: %s",
					hname, source, rel_qualified(RelationGetRelid(target)), alter.data)));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute(alter.data, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not change history table %s", hname);
	SPI_finish();
	CommandCounterIncrement();
}

blpg_history *
blpg_history_open(Relation target, const char *history, const char *source,
				  int nkey, const AttrNumber *key_attnums)
{
	blpg_history *h = palloc0(sizeof(blpg_history));
	TupleDesc	td = RelationGetDescr(target);
	RangeVar   *rv = makeRangeVarFromNameList(stringToQualifiedNameList(history));
	Oid			hrelid = RangeVarGetRelid(rv, NoLock, true);
	Relation	hrel;
	StringInfoData ins,
				vals,
				upd;
	Oid		   *types;
	int			ntypes;

	if (!OidIsValid(hrelid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("history table %s of MySQL table %s does not exist", history, source),
				 errhint("Create it with binlog_fdw.map_history(), or stop writing history with binlog_fdw.map_history(..., enabled => false).")));
	if (nkey == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("target %s of MySQL table %s has no key, which its history table %s needs",
						rel_qualified(RelationGetRelid(target)), source, history),
				 errhint("Give the target a primary key, or stop writing history with binlog_fdw.map_history(..., enabled => false).")));
	follow_target(target, hrelid, source);
	hrel = table_open(hrelid, RowExclusiveLock);
	check_history(target, hrel, source);
	h->name = pstrdup(rel_qualified(hrelid));
	table_close(hrel, NoLock);

	h->attnums = palloc(sizeof(AttrNumber) * td->natts);
	h->types = palloc(sizeof(Oid) * (td->natts + NMETA_PARAMS));
	h->nkey = nkey;
	h->key_attnums = palloc(sizeof(AttrNumber) * nkey);
	memcpy(h->key_attnums, key_attnums, sizeof(AttrNumber) * nkey);

	/* the insert: the change's columns, then the target's */
	initStringInfo(&ins);
	initStringInfo(&vals);
	appendStringInfo(&ins, "INSERT INTO %s (", h->name);
	for (int i = 1; i < (int) NMETA; i++)
	{
		appendStringInfo(&ins, "%s%s", i > 1 ? ", " : "", history_meta[i].name);
		appendStringInfo(&vals, "%s$%d", i > 1 ? ", " : "", i);
		h->types[i - 1] = history_meta[i].type;
	}
	for (int a = 0; a < td->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(td, a);

		if (att->attisdropped || att->attgenerated)
			continue;
		h->attnums[h->ncols] = a + 1;
		h->types[NMETA_PARAMS + h->ncols] = att->atttypid;
		h->ncols++;
		appendStringInfo(&ins, ", %s", quote_identifier(NameStr(att->attname)));
		appendStringInfo(&vals, ", $%d", (int) NMETA_PARAMS + h->ncols);
	}
	appendStringInfo(&ins, ") VALUES (%s)", vals.data);

	/* the close: the open versions of a key */
	initStringInfo(&upd);
	types = palloc(sizeof(Oid) * (nkey + 1));
	types[0] = TIMESTAMPTZOID;
	ntypes = 1;
	appendStringInfo(&upd, "UPDATE %s SET valid_to = greatest(valid_from, $1) WHERE valid_to = 'infinity'",
					 h->name);
	for (int k = 0; k < nkey; k++)
	{
		Form_pg_attribute att = TupleDescAttr(td, key_attnums[k] - 1);

		types[ntypes++] = att->atttypid;
		appendStringInfo(&upd, " AND %s = $%d", quote_identifier(NameStr(att->attname)), ntypes);
	}
	appendStringInfoString(&upd, " RETURNING history_id");

	h->insert_plan = cached_plan(ins.data, (int) NMETA_PARAMS + h->ncols, h->types);
	h->close_plan = cached_plan(upd.data, ntypes, types);
	return h;
}

void
blpg_history_close(blpg_history *h)
{
	/* the plans stay cached for the next apply (cached_plan()) */
	if (h == NULL)
		return;
	h->insert_plan = h->close_plan = NULL;
}

void
blpg_history_record(blpg_history *h, const char *op, TupleTableSlot *old,
					TupleTableSlot *new, const blpg_entry_view *v)
{
	TupleTableSlot *keyrow = old ? old : new;
	TupleTableSlot *row = new ? new : old;
	TimestampTz t;
	int			nparams = (int) NMETA_PARAMS + h->ncols;
	Datum	   *values = palloc(sizeof(Datum) * Max(nparams, h->nkey + 1));
	char	   *nulls = palloc(Max(nparams, h->nkey + 1) + 1);
	int64		replaces = 0;
	bool		closed = false;
	int			rc;

	/* the source transaction's commit time (else its first event's) */
	t = v->e->commit_ts_us ? (TimestampTz) v->e->commit_ts_us - UNIX_TO_PG_US :
		(TimestampTz) v->e->event_ts * USECS_PER_SEC - UNIX_TO_PG_US;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");

	/* close the open version of the row's (old) key */
	values[0] = TimestampTzGetDatum(t);
	nulls[0] = ' ';
	for (int k = 0; k < h->nkey; k++)
	{
		bool		isnull;

		values[k + 1] = slot_getattr(keyrow, h->key_attnums[k], &isnull);
		nulls[k + 1] = isnull ? 'n' : ' ';
	}
	rc = SPI_execute_plan(h->close_plan, values, nulls, false, 0);
	if (rc != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "could not close a version in history table %s: %s", h->name,
			 SPI_result_code_string(rc));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		int64		id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i],
													 SPI_tuptable->tupdesc, 1, &isnull));

		if (!isnull && (!closed || id > replaces))
			replaces = id;
		closed = closed || !isnull;
	}

	/* the new version, or the deleted row with an empty range */
	memset(nulls, ' ', nparams);
	values[0] = TimestampTzGetDatum(t);
	values[1] = new ? TimestampTzGetDatum(DT_NOEND) : TimestampTzGetDatum(t);
	values[2] = CStringGetTextDatum(op);
	values[3] = TimestampTzGetDatum(t);
	values[4] = v->e->gtid_len ? CStringGetTextDatum(pnstrdup(v->gtid, v->e->gtid_len)) : (Datum) 0;
	nulls[4] = v->e->gtid_len ? ' ' : 'n';
	values[5] = CStringGetTextDatum(pnstrdup(v->file, v->e->file_len));
	values[6] = Int64GetDatum((int64) v->e->event_pos);
	values[7] = Int64GetDatum(replaces);
	nulls[7] = closed ? ' ' : 'n';
	for (int c = 0; c < h->ncols; c++)
	{
		bool		isnull;

		values[NMETA_PARAMS + c] = slot_getattr(row, h->attnums[c], &isnull);
		nulls[NMETA_PARAMS + c] = isnull ? 'n' : ' ';
	}
	rc = SPI_execute_plan(h->insert_plan, values, nulls, false, 0);
	if (rc != SPI_OK_INSERT)
		elog(ERROR, "could not write history table %s: %s", h->name, SPI_result_code_string(rc));
	SPI_finish();
}

/* ---- TRUNCATE and DROP TABLE of the source (from ddl.c) ---- */

typedef struct history_of_call
{
	const char *server;
	const char *db;
	const char *table;
	MemoryContext cxt;
	char	   *history;
} history_of_call;

static void
history_of_fn(void *arg)
{
	history_of_call *hc = arg;
	Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		values[3];

	values[0] = CStringGetTextDatum(hc->server);
	values[1] = CStringGetTextDatum(hc->db);
	values[2] = CStringGetTextDatum(hc->table);
	if (SPI_execute_with_args("SELECT history_table FROM binlog_fdw.table_mapping "
							  "WHERE server_name = $1 AND source_schema = $2 AND source_table = $3",
							  3, types, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read binlog_fdw.table_mapping");
	if (SPI_processed == 1)
	{
		char	   *h = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		hc->history = h ? MemoryContextStrdup(hc->cxt, h) : NULL;
	}
}

List *
blpg_history_end_all(const char *server, const char *db, const char *table,
					 const char *op, const blpg_entry_view *v)
{
	history_of_call hc = {server, db, table, CurrentMemoryContext, NULL};
	Oid			hrelid;
	Relation	hrel;
	TupleDesc	hd;
	StringInfoData cols;
	const char *hname;
	char	   *t;
	int64		us;

	if (blpg_tables_legacy())
		return NIL;
	blpg_run_as_owner(history_of_fn, &hc);
	if (hc.history == NULL)
		return NIL;
	hrelid = RangeVarGetRelid(makeRangeVarFromNameList(stringToQualifiedNameList(hc.history)),
							  NoLock, true);
	if (!OidIsValid(hrelid))
		return NIL;				/* apply's next row of the table names it */
	hname = rel_qualified(hrelid);
	hrel = table_open(hrelid, AccessShareLock);
	hd = RelationGetDescr(hrel);
	initStringInfo(&cols);
	for (int a = 0; a < hd->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(hd, a);

		if (att->attisdropped || att->attgenerated || is_meta_column(NameStr(att->attname)))
			continue;
		appendStringInfo(&cols, ", %s", quote_identifier(NameStr(att->attname)));
	}
	table_close(hrel, AccessShareLock);
	us = v->e->commit_ts_us ? v->e->commit_ts_us : (int64) v->e->event_ts * USECS_PER_SEC;
	t = psprintf("('epoch'::timestamptz + %lld * '1 microsecond'::interval)", (long long) us);
	/* the open versions end: each with a row of the statement, then closed */
	return list_make2(psprintf("INSERT INTO %s (valid_from, valid_to, op, commit_time, gtid, binlog_file, "
							   "binlog_pos, replaces%s) SELECT %s, %s, %s, %s, %s, %s, %lld, history_id%s "
							   "FROM %s WHERE valid_to = 'infinity' ORDER BY history_id",
							   hname, cols.data, t, t, quote_literal_cstr(op), t,
							   v->e->gtid_len ? quote_literal_cstr(pnstrdup(v->gtid, v->e->gtid_len)) : "NULL",
							   quote_literal_cstr(pnstrdup(v->file, v->e->file_len)),
							   (long long) v->e->event_pos, cols.data, hname),
					  psprintf("UPDATE %s SET valid_to = greatest(valid_from, %s) WHERE valid_to = 'infinity'",
							   hname, t));
}

/* ---- map_history() ---- */

typedef struct history_call
{
	const char *server;
	char	   *db;
	char	   *table;
	MemoryContext cxt;
	/* read: the table's mapping */
	char	   *target_schema;
	char	   *target_table;
	bool		skip;
	/* written: the history table (NULL: none) */
	const char *history;
} history_call;

static void
history_read_fn(void *arg)
{
	history_call *hc = arg;
	Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		values[3];

	values[0] = CStringGetTextDatum(hc->server);
	values[1] = CStringGetTextDatum(hc->db);
	values[2] = CStringGetTextDatum(hc->table);
	if (SPI_execute_with_args("SELECT target_schema, target_table, skip FROM binlog_fdw.table_mapping "
							  "WHERE server_name = $1 AND source_schema = $2 AND source_table = $3",
							  3, types, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read binlog_fdw.table_mapping");
	if (SPI_processed == 1)
	{
		char	   *s = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		char	   *t = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
		char	   *k = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3);

		hc->target_schema = s ? MemoryContextStrdup(hc->cxt, s) : NULL;
		hc->target_table = t ? MemoryContextStrdup(hc->cxt, t) : NULL;
		hc->skip = k && k[0] == 't';
	}
}

static void
history_write_fn(void *arg)
{
	history_call *hc = arg;
	Oid			types[4] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		values[4];
	char		nulls[5] = "    ";

	values[0] = CStringGetTextDatum(hc->server);
	values[1] = CStringGetTextDatum(hc->db);
	values[2] = CStringGetTextDatum(hc->table);
	values[3] = hc->history ? CStringGetTextDatum(hc->history) : (Datum) 0;
	nulls[3] = hc->history ? ' ' : 'n';
	if (SPI_execute_with_args("INSERT INTO binlog_fdw.table_mapping AS m "
							  "(server_name, source_schema, source_table, history_table) "
							  "VALUES ($1, $2, $3, $4) "
							  "ON CONFLICT (server_name, source_schema, source_table) DO UPDATE "
							  "SET history_table = excluded.history_table",
							  4, types, values, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not write binlog_fdw.table_mapping");
}

static Oid
lookup_rel(const char *schema, const char *table, bool fold)
{
	Oid			nsp = get_namespace_oid(schema, true);
	Oid			rel;

	if (!OidIsValid(nsp) && fold)
		nsp = get_namespace_oid(asc_tolower(schema, strlen(schema)), true);
	if (!OidIsValid(nsp))
		return InvalidOid;
	rel = get_relname_relid(table, nsp);
	if (!OidIsValid(rel) && fold)
		rel = get_relname_relid(asc_tolower(table, strlen(table)), nsp);
	return rel;
}

/* CREATE TABLE history with the target's columns (as the caller). */
static void
create_history(Relation target, const char *schema, const char *name, int nkey,
			   const AttrNumber *key_attnums)
{
	TupleDesc	td = RelationGetDescr(target);
	StringInfoData sql;
	StringInfoData keys;
	const char *qname = quote_qualified_identifier(schema, name);

	initStringInfo(&sql);
	appendStringInfo(&sql, "CREATE TABLE %s (", qname);
	for (int i = 0; i < (int) NMETA; i++)
		appendStringInfo(&sql, "%s%s %s", i ? ", " : "", history_meta[i].name,
						 history_meta[i].definition);
	for (int a = 0; a < td->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(td, a);

		if (att->attisdropped || att->attgenerated)
			continue;
		appendStringInfo(&sql, ", %s %s", quote_identifier(NameStr(att->attname)),
						 format_type_with_typemod(att->atttypid, att->atttypmod));
		if (OidIsValid(att->attcollation) && att->attcollation != get_typcollation(att->atttypid))
			appendStringInfo(&sql, " COLLATE %s", generate_collation_name(att->attcollation));
	}
	appendStringInfoString(&sql, ")");
	/* a key's versions, by time; the open ones are those to 'infinity' */
	initStringInfo(&keys);
	for (int k = 0; k < nkey; k++)
		appendStringInfo(&keys, "%s, ",
						 quote_identifier(NameStr(TupleDescAttr(td, key_attnums[k] - 1)->attname)));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute(sql.data, false, 0) != SPI_OK_UTILITY ||
		SPI_execute(psprintf("CREATE INDEX ON %s (%svalid_to, valid_from)", qname, keys.data),
					false, 0) != SPI_OK_UTILITY ||
		SPI_execute(psprintf("COMMENT ON TABLE %s IS %s", qname,
							 quote_literal_cstr(psprintf("row versions of %s written by binlog_fdw (binlog_fdw.map_history())",
														 rel_qualified(RelationGetRelid(target))))),
					false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not create history table %s", qname);
	SPI_finish();
	CommandCounterIncrement();
}

/* The key columns of the target: primary key, else replica identity index. */
static int
target_key(Relation rel, AttrNumber **attnums)
{
	Oid			idx = RelationGetPrimaryKeyIndex(rel);
	Relation	irel;
	int			n;

	if (!OidIsValid(idx))
		idx = RelationGetReplicaIndex(rel);
	if (!OidIsValid(idx))
		return 0;
	irel = index_open(idx, AccessShareLock);
	n = irel->rd_index->indnkeyatts;
	*attnums = palloc(sizeof(AttrNumber) * n);
	for (int k = 0; k < n; k++)
		(*attnums)[k] = irel->rd_index->indkey.values[k];
	index_close(irel, AccessShareLock);
	return n;
}

Datum
binlog_fdw_map_history(PG_FUNCTION_ARGS)
{
	history_call hc;
	ForeignServer *server;
	char	   *source;
	const char *schema;
	const char *table;
	Oid			relid;
	Oid			hrelid;
	char	   *hschema;
	char	   *hname;
	Relation	target;
	bool		enabled = PG_ARGISNULL(3) ? true : PG_GETARG_BOOL(3);

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("server and source table must not be null")));
	memset(&hc, 0, sizeof(hc));
	hc.cxt = CurrentMemoryContext;
	server = blpg_lookup_source(text_to_cstring(PG_GETARG_TEXT_PP(0)), ACL_USAGE);
	hc.server = server->servername;
	source = text_to_cstring(PG_GETARG_TEXT_PP(1));
	blpg_split_source_table(source, &hc.db, &hc.table);

	if (!enabled)
	{
		hc.history = NULL;
		blpg_run_as_owner(history_write_fn, &hc);
		PG_RETURN_NULL();
	}

	/* the target: the table's mapping, else the default (after schema_map) */
	blpg_run_as_owner(history_read_fn, &hc);
	if (hc.skip)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("MySQL table %s is mapped to no target (skip): it has no history", source)));
	schema = hc.target_schema;
	if (schema == NULL)
	{
		blpg_apply_options opts;
		ListCell   *lc;

		schema = hc.db;
		blpg_apply_options_load(server->serverid, &opts);
		foreach(lc, opts.schema_map)
			if (strcmp(strVal(linitial((List *) lfirst(lc))), hc.db) == 0)
				schema = strVal(lsecond((List *) lfirst(lc)));
	}
	table = hc.target_table ? hc.target_table : hc.table;
	relid = lookup_rel(schema, table, true);
	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("target %s of MySQL table %s does not exist",
						quote_qualified_identifier(schema, table), source),
				 errhint("Create and load it first (binlog_fdw.sync_table() or snapshot()); its history table takes its columns.")));
	target = table_open(relid, AccessShareLock);

	/* the history table: named, or <target>_history, in the target's schema */
	hschema = get_namespace_name(RelationGetNamespace(target));
	if (PG_ARGISNULL(2))
	{
		hname = psprintf("%s_history", RelationGetRelationName(target));
		if (strlen(hname) >= NAMEDATALEN)
			ereport(ERROR,
					(errcode(ERRCODE_NAME_TOO_LONG),
					 errmsg("history table name \"%s\" is too long", hname),
					 errhint("Give the history table a name: binlog_fdw.map_history(server, source, history => 'name').")));
	}
	else
	{
		List	   *names = stringToQualifiedNameList(text_to_cstring(PG_GETARG_TEXT_PP(2)));

		if (list_length(names) == 1)
			hname = strVal(linitial(names));
		else if (list_length(names) == 2)
		{
			hschema = strVal(linitial(names));
			hname = strVal(lsecond(names));
		}
		else
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_NAME),
					 errmsg("history table name \"%s\" must be table or schema.table",
							text_to_cstring(PG_GETARG_TEXT_PP(2)))));
	}
	hrelid = lookup_rel(hschema, hname, false);
	if (!OidIsValid(hrelid))
	{
		AttrNumber *key = NULL;
		int			nkey = target_key(target, &key);

		if (nkey == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("target %s of MySQL table %s has no primary key, which its history table needs",
							rel_qualified(relid), source),
					 errhint("Give the target a primary key: a history finds a row's versions by it.")));
		/* columns the history could not take are refused before it is made */
		for (int a = 0; a < RelationGetDescr(target)->natts; a++)
		{
			Form_pg_attribute att = TupleDescAttr(RelationGetDescr(target), a);

			if (!att->attisdropped && !att->attgenerated && is_meta_column(NameStr(att->attname)))
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_COLUMN),
						 errmsg("column \"%s\" of target %s has the name of a column of its history table",
								NameStr(att->attname), rel_qualified(relid)),
						 errdetail("A history table has the columns history_id, valid_from, valid_to, op, commit_time, gtid, binlog_file, binlog_pos and replaces besides the target's.")));
		}
		create_history(target, hschema, hname, nkey, key);
		hrelid = lookup_rel(hschema, hname, false);
		if (!OidIsValid(hrelid))
			elog(ERROR, "history table %s was not created", quote_qualified_identifier(hschema, hname));
	}
	{
		Relation	hrel = table_open(hrelid, AccessShareLock);

		check_history(target, hrel, source);
		table_close(hrel, NoLock);
	}
	table_close(target, NoLock);
	hc.history = rel_qualified(hrelid);
	blpg_run_as_owner(history_write_fn, &hc);
	PG_RETURN_OID(hrelid);
}
