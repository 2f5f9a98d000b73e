/*
 * typed.c
 *	  The scan of a foreign table made by IMPORT FOREIGN SCHEMA (import.c):
 *	  the buffered changes of one source table (options schema_name,
 *	  table_name), not yet acknowledged, as typed rows.  Reading consumes
 *	  nothing.  Each row event is decoded and its values converted straight
 *	  into the columns' types by blpg_convert (src/types), as apply does: no
 *	  jsonb on the way.  An insert shows its after image, a delete its before
 *	  image, an update both (_binlog_image 'before', then 'after').
 *
 * Columns with the option column_name are the source's, matched by name
 * against the column names of each rows event's table map: when the table
 * map has a column the foreign table lacks, or lacks one the foreign table
 * has, the scan stops with an error saying the definition is stale and how
 * to import it again, so that no value is ever shown under another
 * column.
 *
 * Partial row images (binlog_row_image MINIMAL or NOBLOB on the source)
 * lack columns.  An update's after image takes a column it lacks from the
 * before image (the update did not change it).  A column still absent is
 * never shown as a silent NULL: with the table option partial_image
 * 'error' (the default) a scan that needs the column (in its target list
 * or conditions; get_table() needs all) stops with an error naming the
 * table, column and binlog position; with 'null' it shows NULL.  Either
 * way the change column _binlog_absent (text[]) lists the foreign table's
 * columns the image lacks ('{}' for a full image), so that a NULL value
 * with the column not listed is a real NULL.
 *
 * A scan converts only the source columns the query reads (as
 * postgres_fdw fetches only those); the others are NULL in its tuples,
 * which nothing reads.
 *
 * Pushed down (checked on entry headers before any row is decoded; the
 * conditions also stay in the plan): _binlog_op = 'op', comparisons of
 * _binlog_seq and _binlog_commit_time with constants.  EXPLAIN shows them
 * as "Ring Filter".
 */
#include "sql/sql.h"

#include <sys/mman.h>

#include "access/sysattr.h"
#include "access/table.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "commands/explain.h"
#include "datatype/timestamp.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/restrictinfo.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

/* PostgreSQL's timestamps count from 2000-01-01, the entries' from 1970 */
#define UNIX_TO_PG_US	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY)

typedef struct typed_att
{
	int			meta;			/* blpg_meta_col, or -1: a source column,
								 * or -2: dropped */
	char	   *column_name;	/* source column */
	int			src;			/* its index in the current table map */
	blpg_col_conv conv;
} typed_att;

typedef struct typed_filter
{
	char	   *op;				/* NULL: any */
	uint64		min_seq;		/* inclusive */
	uint64		max_seq;
	bool		has_time;		/* a bound on the commit time */
	int64		min_ts_us;		/* unix us, inclusive */
	int64		max_ts_us;
} typed_filter;

struct typed_state
{
	bool		typed;			/* true (fdw.c's is_typed()) */
	blpg_slot  *slot;
	ForeignServer *server;
	char	   *relname;
	char	   *nspname;
	char	   *schema_name;
	char	   *table_name;
	blpg_apply_options opts;
	int			natts;
	typed_att  *atts;
	bool		partial_null;	/* option partial_image 'null' */
	bool	   *needed;			/* per attribute: the scan reads it */
	int			absent_att;		/* index of _binlog_absent, or -1 */
	Datum		no_absent;		/* '{}' (st->cxt) */
	typed_filter filter;
	StringInfo	entries;		/* the changes read: own_entries, or get_table()'s */
	StringInfoData own_entries;
	bool		started;
	size_t		off;			/* next entry */
	const blpg_entry *e;		/* current ROWS entry */
	blpg_entry_view v;
	uint64		seq;			/* next change of it */
	uint64		last;			/* last sequence of the scan */
	bl_event	rows_ev;
	bool		rows_open;
	bool		pending_after;	/* update: the after image is next */
	Datum	   *after_values;	/* ... in rowcxt */
	bool	   *after_nulls;
	MemoryContext rowcxt;
	MemoryContext valcxt;		/* a scan's values of the row it shows */
	const bl_table *mapped;		/* table map the atts' src are for */
	uint32		mapped_version;
	uint64		mapped_id;
	uint64		batch_id;		/* get_table(): the batch, 0 in a scan */
	MemoryContext ecxt;			/* the current entry's values, below */
	Datum		e_file;			/* 0: not made yet */
	Datum		e_op;
	Datum		e_gtid;
	Datum		img_before;		/* 'before', 'after' (st->cxt) */
	Datum		img_after;
	uint64		xid;			/* of the current transaction, 0 unknown */
	size_t		xid_until;		/* offset of the entry that xid is from */
	MemoryContext cxt;
	MemoryContextCallback release;	/* of kept_entries, if entries is it */
};

static char *
table_option(List *options, const char *name)
{
	ListCell   *lc;

	foreach(lc, options)
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, name) == 0)
			return defGetString(def);
	}
	return NULL;
}

bool
blpg_typed_table(Oid relid)
{
	ForeignTable *ft = GetForeignTable(relid);

	return table_option(ft->options, "table_name") != NULL;
}

/* blpg_meta_col_types as OIDs */
static const Oid meta_type_oids[BLPG_NMETA] = {
	INT8OID, TEXTOID, TEXTOID, TIMESTAMPTZOID, TEXTOID, INT8OID, TEXTOID, INT8OID, INT8OID,
	TEXTARRAYOID
};

/* "a, b and c": the change columns' names, for hints */
static char *
meta_names_list(void)
{
	StringInfoData b;

	initStringInfo(&b);
	for (int m = 0; m < BLPG_NMETA; m++)
		appendStringInfo(&b, "%s%s", m == 0 ? "" : m == BLPG_NMETA - 1 ? " and " : ", ",
						 blpg_meta_col_names[m]);
	return b.data;
}

static int
meta_by_name(const char *name)
{
	for (int m = 0; m < BLPG_NMETA; m++)
		if (strcmp(name, blpg_meta_col_names[m]) == 0)
			return m;
	return -1;
}

/* The attributes of the foreign table; an error for an unknown one. */
static typed_att *
typed_atts(Relation rel, bool init_conv)
{
	TupleDesc	desc = RelationGetDescr(rel);
	typed_att  *atts = palloc0(sizeof(typed_att) * Max(desc->natts, 1));

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		char	   *cn;

		atts[i].meta = -2;
		atts[i].src = -1;
		if (att->attisdropped)
			continue;
		cn = table_option(GetForeignColumnOptions(RelationGetRelid(rel), i + 1), "column_name");
		if (cn != NULL)
		{
			atts[i].meta = -1;
			atts[i].column_name = cn;
			if (init_conv)
			{
				atts[i].conv.attnum = i + 1;
				atts[i].conv.name = pstrdup(NameStr(att->attname));
				blpg_conv_init(&atts[i].conv, att->atttypid, att->atttypmod);
			}
			continue;
		}
		atts[i].meta = meta_by_name(NameStr(att->attname));
		if (atts[i].meta < 0)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_COLUMN_NAME),
					 errmsg("foreign table \"%s\" has a column \"%s\" that is neither a source column nor a change column",
							RelationGetRelationName(rel), NameStr(att->attname)),
					 errhint("Give a source column the option column_name (the column's name in the source table); change columns are %s.",
							 meta_names_list())));
		if (att->atttypid != meta_type_oids[atts[i].meta])
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_DATA_TYPE),
					 errmsg("change column \"%s\" of foreign table \"%s\" has type %s",
							NameStr(att->attname), RelationGetRelationName(rel),
							format_type_be(att->atttypid)),
					 errhint("Declare it as %s.", blpg_meta_col_types[atts[i].meta])));
	}
	return atts;
}

/* ---- planning ---- */

static bool
int_const(Const *c, int64 *out)
{
	switch (c->consttype)
	{
		case INT8OID:
			*out = DatumGetInt64(c->constvalue);
			return true;
		case INT4OID:
			*out = DatumGetInt32(c->constvalue);
			return true;
		case INT2OID:
			*out = DatumGetInt16(c->constvalue);
			return true;
		default:
			return false;
	}
}

static List *blpg_typed_conditions(PlannerInfo *root, RelOptInfo *baserel, Relation rel);

/*
 * Conditions "_binlog_op = 'text'", "_binlog_seq OP int", "_binlog_commit_time
 * OP timestamptz" (OP one of = < <= > >=) as lists (column, operator, value
 * text) for fdw_private.
 */
static List *
blpg_typed_conditions(PlannerInfo *root, RelOptInfo *baserel, Relation rel)
{
	List	   *conds = NIL;
	ListCell   *lc;
	typed_att  *atts = typed_atts(rel, false);

	foreach(lc, baserel->baserestrictinfo)
	{
		Var		   *var;
		Const	   *cst;
		char	   *opname = blpg_column_op_const(lfirst_node(RestrictInfo, lc), baserel,
												  &var, &cst);
		int			meta;
		int64		iv;

		if (opname == NULL)
			continue;
		meta = atts[var->varattno - 1].meta;
		if ((strcmp(opname, "=") != 0 && strcmp(opname, "<") != 0 && strcmp(opname, "<=") != 0 &&
			 strcmp(opname, ">") != 0 && strcmp(opname, ">=") != 0))
			continue;
		if (meta == BLPG_META_OP && strcmp(opname, "=") == 0 && cst->consttype == TEXTOID)
			conds = lappend(conds, list_make3(makeString("_binlog_op"), makeString("="),
											  makeString(TextDatumGetCString(cst->constvalue))));
		else if (meta == BLPG_META_SEQ && int_const(cst, &iv))
			conds = lappend(conds, list_make3(makeString("_binlog_seq"), makeString(opname),
											  makeString(psprintf(INT64_FORMAT, iv))));
		else if (meta == BLPG_META_COMMIT_TIME && cst->consttype == TIMESTAMPTZOID)
			conds = lappend(conds, list_make3(makeString("_binlog_commit_time"), makeString(opname),
											  makeString(psprintf(INT64_FORMAT,
																  DatumGetTimestampTz(cst->constvalue)))));
	}
	return conds;
}

/*
 * fdw_private of a typed scan: (the conditions above, the attribute numbers
 * the query reads: its target list and conditions, 0 for the whole row).
 */
List *
blpg_typed_private(PlannerInfo *root, RelOptInfo *baserel, Relation rel)
{
	Bitmapset  *attrs = NULL;
	List	   *needed = NIL;
	ListCell   *lc;
	int			k = -1;

	pull_varattnos((Node *) baserel->reltarget->exprs, baserel->relid, &attrs);
	foreach(lc, baserel->baserestrictinfo)
		pull_varattnos((Node *) lfirst_node(RestrictInfo, lc)->clause, baserel->relid, &attrs);
	while ((k = bms_next_member(attrs, k)) >= 0)
	{
		int			attno = k + FirstLowInvalidHeapAttributeNumber;

		if (attno >= 0)
			needed = lappend_int(needed, attno);
	}
	return list_make2(blpg_typed_conditions(root, baserel, rel), needed);
}

static void
bound(const char *opname, int64 v, int64 *lo, int64 *hi)
{
	if (strcmp(opname, "=") == 0)
	{
		*lo = Max(*lo, v);
		*hi = Min(*hi, v);
	}
	else if (strcmp(opname, ">") == 0)
		*lo = Max(*lo, v == PG_INT64_MAX ? v : v + 1);
	else if (strcmp(opname, ">=") == 0)
		*lo = Max(*lo, v);
	else if (strcmp(opname, "<") == 0)
		*hi = Min(*hi, v == PG_INT64_MIN ? v : v - 1);
	else if (strcmp(opname, "<=") == 0)
		*hi = Min(*hi, v);
}

/* ---- execution ---- */

/* The state of a reader of a typed table's rows (no filter yet). */
static typed_state *
typed_create(Relation rel)
{
	ForeignTable *ft = GetForeignTable(RelationGetRelid(rel));
	typed_state *st = palloc0(sizeof(typed_state));

	st->typed = true;
	st->cxt = CurrentMemoryContext;
	st->server = GetForeignServer(ft->serverid);
	st->relname = pstrdup(RelationGetRelationName(rel));
	st->nspname = get_namespace_name(RelationGetNamespace(rel));
	st->table_name = table_option(ft->options, "table_name");
	st->schema_name = table_option(ft->options, "schema_name");
	if (st->table_name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("foreign table \"%s\" is not a typed table of a source table", st->relname),
				 errhint("Create it with IMPORT FOREIGN SCHEMA (it sets the options schema_name and table_name).")));
	if (st->schema_name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_OPTION_NAME_NOT_FOUND),
				 errmsg("foreign table \"%s\" has the option table_name but not schema_name", st->relname),
				 errhint("Add the source table's database: ALTER FOREIGN TABLE %s OPTIONS (ADD schema_name '...').",
						 quote_identifier(st->relname))));
	st->natts = RelationGetDescr(rel)->natts;
	st->atts = typed_atts(rel, true);
	st->needed = palloc(sizeof(bool) * Max(st->natts, 1));
	memset(st->needed, true, sizeof(bool) * Max(st->natts, 1));
	st->absent_att = -1;
	for (int i = 0; i < st->natts; i++)
		if (st->atts[i].meta == BLPG_META_ABSENT)
			st->absent_att = i;
	st->no_absent = PointerGetDatum(construct_empty_array(TEXTOID));
	{
		char	   *pi = table_option(ft->options, "partial_image");

		st->partial_null = pi != NULL && strcmp(pi, "null") == 0;
	}
	if (st->partial_null && st->absent_att < 0)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_COLUMN_NAME_NOT_FOUND),
				 errmsg("foreign table \"%s\" has partial_image 'null' but no column _binlog_absent",
						st->relname),
				 errdetail("Without it a NULL for a column a row image lacks cannot be told from a real NULL."),
				 errhint("Add it: ALTER FOREIGN TABLE %s.%s ADD COLUMN _binlog_absent text[].",
						 quote_identifier(st->nspname), quote_identifier(st->relname))));
	st->after_values = palloc0(sizeof(Datum) * Max(st->natts, 1));
	st->after_nulls = palloc0(sizeof(bool) * Max(st->natts, 1));
	st->rowcxt = AllocSetContextCreate(CurrentMemoryContext, "binlog_fdw typed row",
									   ALLOCSET_SMALL_SIZES);
	st->ecxt = AllocSetContextCreate(CurrentMemoryContext, "binlog_fdw typed entry",
									 ALLOCSET_SMALL_SIZES);
	st->valcxt = AllocSetContextCreate(CurrentMemoryContext, "binlog_fdw typed values",
									   ALLOCSET_DEFAULT_SIZES);
	st->img_before = CStringGetTextDatum("before");
	st->img_after = CStringGetTextDatum("after");
	blpg_apply_options_load(ft->serverid, &st->opts);
	st->filter.max_seq = PG_UINT64_MAX;
	st->filter.max_ts_us = PG_INT64_MAX;
	st->filter.min_ts_us = PG_INT64_MIN;
	return st;
}

/*
 * The entries buffer of a scan (the copy of the changes it shows), kept
 * between scans in TopMemoryContext up to binlog_fdw.consumer_keep_memory,
 * as get() keeps its batch's: a query that reads the table again reuses the
 * memory instead of faulting fresh pages in.  One scan has it at a time
 * (kept_in_use); another scan at the same time (a self-join, an open
 * cursor) has its own.
 */
static StringInfoData kept_entries;
static bool kept_in_use = false;

/* The scan that had the kept buffer ended (its memory context went). */
static void
kept_release(void *arg)
{
	if (kept_entries.data != NULL &&
		(size_t) kept_entries.maxlen > (size_t) blpg_consumer_keep_memory * 1024)
	{
		pfree(kept_entries.data);
		kept_entries.data = NULL;
	}
	kept_in_use = false;
}

void
blpg_typed_begin(ForeignScanState *node, int eflags)
{
	ForeignScan *plan = (ForeignScan *) node->ss.ps.plan;
	Relation	rel = node->ss.ss_currentRelation;
	typed_state *st = typed_create(rel);
	int64		lo_seq = 0,
				hi_seq = PG_INT64_MAX,
				lo_ts = PG_INT64_MIN,
				hi_ts = PG_INT64_MAX;
	ListCell   *lc;

	node->fdw_state = st;
	{
		List	   *needed = lsecond(plan->fdw_private);

		memset(st->needed, false, sizeof(bool) * Max(st->natts, 1));
		foreach(lc, needed)
		{
			int			attno = lfirst_int(lc);

			if (attno == 0)		/* the whole row */
				memset(st->needed, true, sizeof(bool) * Max(st->natts, 1));
			else if (attno <= st->natts)
				st->needed[attno - 1] = true;
		}
	}
	foreach(lc, (List *) linitial(plan->fdw_private))
	{
		List	   *cond = lfirst(lc);
		const char *col = strVal(linitial(cond));
		const char *opname = strVal(lsecond(cond));
		char	   *val = strVal(lthird(cond));

		if (strcmp(col, "_binlog_op") == 0)
		{
			if (st->filter.op != NULL && strcmp(st->filter.op, val) != 0)
				st->filter.op = "";		/* two different ops: nothing */
			else
				st->filter.op = val;
		}
		else if (strcmp(col, "_binlog_seq") == 0)
			bound(opname, strtoll(val, NULL, 10), &lo_seq, &hi_seq);
		else if (strcmp(col, "_binlog_commit_time") == 0)
		{
			st->filter.has_time = true;
			bound(opname, strtoll(val, NULL, 10), &lo_ts, &hi_ts);
		}
	}
	st->filter.min_seq = lo_seq < 0 ? 0 : (uint64) lo_seq;
	st->filter.max_seq = hi_seq < 0 ? 0 : (uint64) hi_seq;
	/* PostgreSQL timestamps -> unix microseconds, saturating */
	st->filter.min_ts_us = lo_ts == PG_INT64_MIN ? PG_INT64_MIN :
		lo_ts > PG_INT64_MAX - UNIX_TO_PG_US ? PG_INT64_MAX : lo_ts + UNIX_TO_PG_US;
	st->filter.max_ts_us = hi_ts > PG_INT64_MAX - UNIX_TO_PG_US ? PG_INT64_MAX : hi_ts + UNIX_TO_PG_US;
	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;
	st->slot = blpg_consumer_slot(st->server->servername, NULL);
	if (!kept_in_use)
	{
		/* the kept buffer, until this scan's memory goes (also on error) */
		if (kept_entries.data == NULL)
		{
			MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

			initStringInfo(&kept_entries);
			MemoryContextSwitchTo(old);
		}
		kept_in_use = true;
		st->entries = &kept_entries;
		st->release.func = kept_release;
		st->release.arg = NULL;
		MemoryContextRegisterResetCallback(st->cxt, &st->release);
	}
	else
	{
		st->entries = &st->own_entries;
		initStringInfo(st->entries);
	}
}

/* Read the changes first..last of the entries in st->entries from the start. */
static void
typed_reset(typed_state *st, uint64 first, uint64 last)
{
	st->off = 0;
	st->e = NULL;
	st->seq = first;
	st->last = last;
	st->rows_open = false;
	st->pending_after = false;
	st->mapped = NULL;
	st->xid_until = 0;
	st->started = true;
}

/*
 * Memory of len bytes at p, about to be filled, in 2 MB pages where the
 * kernel has them (transparent huge pages on madvise): faulting hundreds of
 * megabytes in by 4 kB pages cost more than filling them.  Only a hint,
 * for at least 32 MB.
 */
static void
huge_pages(void *p, size_t len)
{
#ifdef MADV_HUGEPAGE
	const uintptr_t huge = 2 * 1024 * 1024;
	uintptr_t	start = TYPEALIGN(huge, (uintptr_t) p);
	uintptr_t	end = TYPEALIGN_DOWN(huge, (uintptr_t) p + len);

	if (len >= 16 * huge && end > start)
		(void) madvise((void *) start, end - start, MADV_HUGEPAGE);
#endif
}

static void
entries_huge_pages(StringInfo buf)
{
	huge_pages(buf->data, (size_t) buf->maxlen);
}

static void
typed_start(typed_state *st)
{
	uint64		first,
				last;
	MemoryContext old = MemoryContextSwitchTo(st->cxt);

	resetStringInfo(st->entries);
	LWLockAcquire(&st->slot->lock, LW_SHARED);
	first = Max(st->slot->ack_seq + 1, st->filter.min_seq);
	last = Min(st->slot->put_seq, st->filter.max_seq);
	if (first <= last)
	{
		uint64		bytes = st->slot->put_off - st->slot->ack_off;

		/* all of it (no upper bound): one allocation, not doubling copies */
		if (last == st->slot->put_seq && bytes < MaxAllocSize / 2 &&
			bytes >= (uint64) st->entries->maxlen)
		{
			enlargeStringInfo(st->entries, (int) bytes);
			entries_huge_pages(st->entries);
		}
		blpg_ring_copy(st->slot, st->slot->ack_off, first, last, st->entries);
	}
	LWLockRelease(&st->slot->lock);
	typed_reset(st, first, last);
	MemoryContextSwitchTo(old);
}

static bool
str_eq(const char *s, size_t len, const char *z)
{
	return strlen(z) == len && memcmp(s, z, len) == 0;
}

static bool
entry_wanted(typed_state *st, const blpg_entry *e, const blpg_entry_view *v)
{
	if (e->kind != BLPG_ENTRY_ROWS)
		return false;
	if (!str_eq(v->schema, e->schema_len, st->schema_name) ||
		!str_eq(v->table, e->table_len, st->table_name))
		return false;
	if (st->filter.op && strcmp(blpg_entry_op_name(e), st->filter.op) != 0)
		return false;
	if (st->filter.has_time &&
		(e->commit_ts_us == 0 || e->commit_ts_us < st->filter.min_ts_us ||
		 e->commit_ts_us > st->filter.max_ts_us))
		return false;
	return true;
}

/* The XID of the COMMIT ending the transaction of the entry before off. */
static void
find_xid(typed_state *st)
{
	size_t		off = st->off;

	if (off < st->xid_until)
		return;
	st->xid = 0;
	while (off < (size_t) st->entries->len)
	{
		const blpg_entry *e = (const blpg_entry *) (st->entries->data + off);

		off += e->total_len;
		if (e->kind == BLPG_ENTRY_COMMIT)
		{
			st->xid = e->xid;
			break;
		}
		if (e->kind == BLPG_ENTRY_BEGIN || e->kind == BLPG_ENTRY_DDL)
			break;
	}
	st->xid_until = off;
}

static void
stale(typed_state *st, const char *detail_fmt, const char *column)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("foreign table \"%s\" is stale: source table \"%s.%s\" changed its definition",
					st->relname, st->schema_name, st->table_name),
			 errdetail(detail_fmt, column, st->v.file ? pnstrdup(st->v.file, st->e->file_len) : "",
					   (unsigned long long) st->e->event_pos),
			 errhint("Import it again: DROP FOREIGN TABLE %s.%s; IMPORT FOREIGN SCHEMA %s LIMIT TO (%s) FROM SERVER %s INTO %s;",
					 quote_identifier(st->nspname), quote_identifier(st->relname),
					 quote_identifier(st->schema_name), quote_identifier(st->table_name),
					 quote_identifier(st->server->servername), quote_identifier(st->nspname)),
			 errcontext("source \"%s\", binlog %s:%llu, table %s.%s",
						st->server->servername, pnstrdup(st->v.file, st->e->file_len),
						(unsigned long long) st->e->event_pos, st->schema_name, st->table_name)));
}

/*
 * Would the column's type round the source column's values without an
 * error (a DDL that widened a DECIMAL's scale or a temporal column's
 * fractional digits, made a FLOAT a DOUBLE or a DATE a DATETIME)?  Other changes of a type that keeps its name make the
 * conversion fail loudly (too long, out of range, not a number).
 */
static bool
narrower(const bl_column *col, const blpg_col_conv *cc)
{
	/* FLOAT -> DOUBLE: real would round; DATETIME/TIMESTAMP -> date drops the time */
	if (col->type == BL_T_DOUBLE && cc->type == FLOAT4OID)
		return true;
	if ((col->type == BL_T_DATETIME || col->type == BL_T_DATETIME2 ||
		 col->type == BL_T_TIMESTAMP || col->type == BL_T_TIMESTAMP2) && cc->type == DATEOID)
		return true;
	if (cc->typmod < 0)
		return false;
	if (col->type == BL_T_NEWDECIMAL && cc->type == NUMERICOID)
	{
		int			p = ((cc->typmod - VARHDRSZ) >> 16) & 0xffff;
		int			sc = (cc->typmod - VARHDRSZ) & 0x7ff;

		return col->scale > sc || col->precision - col->scale > p - sc;
	}
	if (col->type == BL_T_DATETIME2 || col->type == BL_T_TIMESTAMP2 || col->type == BL_T_TIME2)
	{
		int			prec;

		if (cc->type == TIMESTAMPOID || cc->type == TIMESTAMPTZOID || cc->type == TIMEOID)
			prec = cc->typmod;
		else if (cc->type == INTERVALOID)
			prec = cc->typmod & 0xffff;		/* INTERVAL_PRECISION */
		else
			return false;
		return prec < 6 && col->fsp > prec;
	}
	return false;
}

/* Match the source columns with the columns of table map t. */
static void
map_columns(typed_state *st, const bl_table *t)
{
	bool	   *used;

	if (st->mapped == t && st->mapped_version == t->version && st->mapped_id == t->table_id)
		return;
	if (t->names_source == BL_NAMES_NONE)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the changes of source table \"%s.%s\" carry no column names", st->schema_name, st->table_name),
				 errdetail("Without column names the values of a change cannot be matched with the columns of foreign table \"%s\".", st->relname),
				 errhint("Set binlog_row_metadata=FULL on the source.")));
	used = palloc0(sizeof(bool) * Max(t->ncols, 1));
	for (int i = 0; i < st->natts; i++)
	{
		typed_att  *a = &st->atts[i];

		if (a->meta != -1)
			continue;
		a->src = -1;
		for (uint32 c = 0; c < t->ncols; c++)
			if (t->cols[c].name.ptr && str_eq(t->cols[c].name.ptr, t->cols[c].name.len, a->column_name))
			{
				a->src = (int) c;
				a->conv.src = (int) c;
				used[c] = true;
				break;
			}
		if (a->src < 0)
			stale(st, "The changes have no column \"%s\" from binlog %s:%llu on, which the foreign table has.",
				  a->column_name);
		if (narrower(&t->cols[a->src], &a->conv))
			stale(st, "Column \"%s\" has more digits or parts in the changes from binlog %s:%llu on than its type in the foreign table holds.",
				  a->column_name);
	}
	for (uint32 c = 0; c < t->ncols; c++)
		if (!used[c])
			stale(st, "The changes have a column \"%s\" from binlog %s:%llu on, which the foreign table lacks.",
				  t->cols[c].name.ptr ? pnstrdup(t->cols[c].name.ptr, t->cols[c].name.len) : "?");
	pfree(used);
	st->mapped = t;
	st->mapped_version = t->version;
	st->mapped_id = t->table_id;
}

static void
check(int rc, const bl_error *err, const char *server)
{
	if (rc < 0)
		blpg_report_decoder_error(ERROR, err, server);
}

static void
open_rows(typed_state *st)
{
	const blpg_entry *e = st->e;
	bl_decoder *dec = blpg_canonical_decoder();
	bl_event	tm;
	bl_error	err;
	const uint8 *p = st->v.payload;
	size_t		rows_len;
	bl_row		b,
				a;

	memset(&err, 0, sizeof(err));
	bl_decoder_set_file(dec, st->v.file, e->file_len);
	check(bl_decode_event(dec, p, e->tablemap_len, e->event_pos, &tm, &err), &err,
		  st->server->servername);
	rows_len = (size_t) bl_load_le(p + e->tablemap_len + 9, 4);
	if (e->tablemap_len + (uint64) rows_len > e->payload_len)
		elog(ERROR, "binlog_fdw ring entry %llu is inconsistent", (unsigned long long) e->seq_first);
	check(bl_decode_event(dec, p + e->tablemap_len, rows_len, e->event_pos, &st->rows_ev, &err),
		  &err, st->server->servername);
	if (st->rows_ev.u.rows.table == NULL)
		elog(ERROR, "binlog_fdw ring entry %llu has no table map", (unsigned long long) e->seq_first);
	map_columns(st, st->rows_ev.u.rows.table);
	for (uint64 i = 0; i < e->rows_skip + (st->seq - e->seq_first); i++)
		check(bl_rows_next(dec, &st->rows_ev.u.rows, &b, &a, &err) == 1 ? 0 : -1, &err,
			  st->server->servername);
	st->rows_open = true;
}

/* Move to the entry of the next change; false at the end. */
static bool
advance(typed_state *st)
{
	for (;;)
	{
		const blpg_entry *e = st->e;

		if (e != NULL && st->seq < e->seq_first + e->nchanges && st->seq <= st->last)
			return true;
		if (st->off >= (size_t) st->entries->len)
			return false;
		e = (const blpg_entry *) (st->entries->data + st->off);
		st->off += e->total_len;
		if (e->seq_first > st->last)
			return false;
		st->e = e;
		st->rows_open = false;
		blpg_entry_view_init(&st->v, e);
		st->seq = Max(st->seq, e->seq_first);
		if (st->seq >= e->seq_first + e->nchanges || !entry_wanted(st, e, &st->v))
			st->e = NULL;
		else
		{
			MemoryContextReset(st->ecxt);
			st->e_file = st->e_op = st->e_gtid = (Datum) 0;
		}
	}
}

/* A column the image lacks, which the scan needs: the error. */
static void
absent_error(typed_state *st, const typed_att *a, const char *image)
{
	char	   *file = pnstrdup(st->v.file, st->e->file_len);

	ereport(ERROR,
			(errcode(ERRCODE_DATA_EXCEPTION),
			 errmsg("the %s image of change %llu of source table \"%s.%s\" lacks column \"%s\"",
					image, (unsigned long long) st->seq, st->schema_name, st->table_name,
					a->column_name),
			 errdetail("The source logs partial row images (binlog_row_image MINIMAL or NOBLOB): the rows event at binlog %s:%llu does not carry the column's value, which foreign table \"%s\" would show as NULL.",
					   file, (unsigned long long) st->e->event_pos, st->relname),
			 errhint("Set binlog_row_image=FULL on the source, leave column %s out of the query, or show absent values as NULL with ALTER FOREIGN TABLE %s.%s OPTIONS (ADD partial_image 'null') and tell them from real NULLs by the change column _binlog_absent.",
					 quote_identifier(a->conv.name), quote_identifier(st->nspname),
					 quote_identifier(st->relname)),
			 errcontext("source \"%s\", binlog %s:%llu, table %s.%s",
						st->server->servername, file, (unsigned long long) st->e->event_pos,
						st->schema_name, st->table_name)));
}

/*
 * Whether two present values of one column are the same value, which
 * blpg_convert makes the same Datum of (a JSON diff, which depends on the
 * document it applies to, and floating point values are never taken as
 * the same here).
 */
static bool
same_value(const bl_value *a, const bl_value *b)
{
	if (a->kind != b->kind)
		return false;
	switch ((bl_value_kind) a->kind)
	{
		case BL_VAL_INT:
		case BL_VAL_UINT:
		case BL_VAL_BIT:
		case BL_VAL_YEAR:
		case BL_VAL_ENUM:
		case BL_VAL_SET:
			return a->v.u == b->v.u;
		case BL_VAL_DECIMAL:
		case BL_VAL_STRING:
		case BL_VAL_BINARY:
		case BL_VAL_JSON:
		case BL_VAL_GEOMETRY:
		case BL_VAL_VECTOR:
			return a->v.raw.len == b->v.raw.len &&
				(a->v.raw.len == 0 || memcmp(a->v.raw.ptr, b->v.raw.ptr, a->v.raw.len) == 0);
		case BL_VAL_DATE:
		case BL_VAL_DATETIME:
		case BL_VAL_TIME:
			return a->v.tm.year == b->v.tm.year && a->v.tm.month == b->v.tm.month &&
				a->v.tm.day == b->v.tm.day && a->v.tm.hour == b->v.tm.hour &&
				a->v.tm.minute == b->v.tm.minute && a->v.tm.second == b->v.tm.second &&
				a->v.tm.usec == b->v.tm.usec && a->v.tm.neg == b->v.tm.neg;
		case BL_VAL_TIMESTAMP:
			return a->v.ts.sec == b->v.ts.sec && a->v.ts.usec == b->v.ts.usec;
		default:
			return false;
	}
}

/*
 * One image into values/nulls.  An update's after image (other_before: its
 * before image, already converted into before_values/before_nulls) takes
 * the columns it lacks from the before image, and the Datum of a column
 * whose value the update left as it was from the before image's.
 */
static void
fill(typed_state *st, Datum *values, bool *nulls, const bl_row *row,
	 const bl_row *other_before, const Datum *before_values, const bool *before_nulls,
	 const char *image)
{
	const blpg_entry *e = st->e;
	const bl_table *t = st->rows_ev.u.rows.table;
	Datum	   *absent = NULL;
	int			nabsent = 0;

	for (int i = 0; i < st->natts; i++)
	{
		typed_att  *a = &st->atts[i];
		bool	   *isnull = &nulls[i];
		Datum	   *val = &values[i];

		*isnull = true;
		switch (a->meta)
		{
			case -2:
				break;
			case -1:
				{
					const bl_value *v = row->ncols > (uint32) a->src ? &row->values[a->src] : NULL;
					const bl_value *b = other_before && other_before->ncols > (uint32) a->src ?
						&other_before->values[a->src] : NULL;

					const bl_value *same = NULL;	/* the before image's value, if v's */

					if ((v == NULL || v->kind == BL_VAL_ABSENT) && b && b->kind != BL_VAL_ABSENT)
					{
						v = b;	/* unchanged by the update */
						b = NULL;
						same = v;
					}
					else if (b && b->kind != BL_VAL_ABSENT && v && v->kind != BL_VAL_ABSENT &&
							 same_value(v, b))
						same = b;

					if (v == NULL || v->kind == BL_VAL_ABSENT)
					{
						if (st->needed[i] && !st->partial_null)
							absent_error(st, a, image);
						if (absent == NULL)
							absent = palloc(sizeof(Datum) * st->natts);
						absent[nabsent++] = CStringGetTextDatum(a->conv.name);
						break;
					}
					if (!st->needed[i])
						break;	/* the query does not read it: NULL */
					if (same && before_values)
					{
						/* converted for the before image (needed, present) */
						*val = before_values[i];
						*isnull = before_nulls[i];
						break;
					}
					*val = blpg_convert(&a->conv, &t->cols[a->src], v, b, &st->opts, isnull);
				}
				break;
			case BLPG_META_SEQ:
				*val = Int64GetDatum((int64) st->seq);
				*isnull = false;
				break;
			case BLPG_META_OP:
				if (st->e_op == (Datum) 0)
				{
					MemoryContext old = MemoryContextSwitchTo(st->ecxt);

					st->e_op = CStringGetTextDatum(blpg_entry_op_name(e));
					MemoryContextSwitchTo(old);
				}
				*val = st->e_op;
				*isnull = false;
				break;
			case BLPG_META_IMAGE:
				*val = image[0] == 'b' ? st->img_before : st->img_after;
				*isnull = false;
				break;
			case BLPG_META_COMMIT_TIME:
				if (e->commit_ts_us)
				{
					*val = TimestampTzGetDatum((TimestampTz) e->commit_ts_us - UNIX_TO_PG_US);
					*isnull = false;
				}
				break;
			case BLPG_META_FILE:
				if (st->e_file == (Datum) 0)
				{
					MemoryContext old = MemoryContextSwitchTo(st->ecxt);

					st->e_file = blpg_text_utf8(st->v.file, e->file_len);
					MemoryContextSwitchTo(old);
				}
				*val = st->e_file;
				*isnull = false;
				break;
			case BLPG_META_POS:
				*val = Int64GetDatum((int64) e->event_pos);
				*isnull = false;
				break;
			case BLPG_META_GTID:
				if (e->gtid_len)
				{
					if (st->e_gtid == (Datum) 0)
					{
						MemoryContext old = MemoryContextSwitchTo(st->ecxt);

						st->e_gtid = blpg_text_utf8(st->v.gtid, e->gtid_len);
						MemoryContextSwitchTo(old);
					}
					*val = st->e_gtid;
					*isnull = false;
				}
				break;
			case BLPG_META_BATCH:
				if (st->batch_id)
				{
					*val = Int64GetDatum((int64) st->batch_id);
					*isnull = false;
				}
				break;
			case BLPG_META_XID:
				find_xid(st);
				if (st->xid)
				{
					*val = Int64GetDatum((int64) st->xid);
					*isnull = false;
				}
				break;
			case BLPG_META_ABSENT:
				break;			/* below, once the source columns are known */
		}
	}
	if (st->absent_att >= 0)
	{
		values[st->absent_att] = nabsent == 0 ? st->no_absent :
			PointerGetDatum(construct_array(absent, nabsent, TEXTOID, -1, false, TYPALIGN_INT));
		nulls[st->absent_att] = false;
	}
}

/*
 * An empty error, as a zeroed one reads (its strings empty), without
 * zeroing its kilobytes for every row.
 */
static inline void
err_init(bl_error *err)
{
	err->code = BL_OK;
	err->position = 0;
	err->file[0] = '\0';
	err->message[0] = '\0';
}

/* The next typed row into values/nulls (natts long); false at the end. */
static bool
typed_next(typed_state *st, Datum *values, bool *nulls)
{
	bl_row		before,
				after;

	if (st->pending_after)
	{
		/* the after image of the update whose before image came last */
		st->pending_after = false;
		memcpy(values, st->after_values, sizeof(Datum) * st->natts);
		memcpy(nulls, st->after_nulls, sizeof(bool) * st->natts);
		st->seq++;
		return true;
	}
	if (!advance(st))
		return false;
	{
		bl_error	err;
		MemoryContext old = MemoryContextSwitchTo(st->cxt);

		err_init(&err);
		if (!st->rows_open)
			open_rows(st);
		if (bl_rows_next(blpg_canonical_decoder(), &st->rows_ev.u.rows, &before, &after,
						 &err) != 1)
		{
			if (err.message[0] == '\0')
				bl_error_set(&err, BL_ERR_CORRUPT, "rows event has fewer rows than its entry counts");
			check(-1, &err, st->server->servername);
		}
		MemoryContextSwitchTo(old);
	}
	switch ((bl_op) st->e->op)
	{
		case BL_OP_INSERT:
			fill(st, values, nulls, &after, NULL, NULL, NULL, "after");
			st->seq++;
			break;
		case BL_OP_DELETE:
			fill(st, values, nulls, &before, NULL, NULL, NULL, "before");
			st->seq++;
			break;
		default:
			{
				/*
				 * Both images now: the decoder's row buffers are this
				 * backend's, and another scan may decode before the next
				 * call.  Both in rowcxt, which the next update resets: the
				 * after image shares the Datums of the columns the update
				 * did not change with the before image.
				 */
				MemoryContext old;

				MemoryContextReset(st->rowcxt);
				old = MemoryContextSwitchTo(st->rowcxt);
				fill(st, values, nulls, &before, NULL, NULL, NULL, "before");
				fill(st, st->after_values, st->after_nulls, &after, &before, values, nulls,
					 "after");
				MemoryContextSwitchTo(old);
				st->pending_after = true;
				break;
			}
	}
	return true;
}

TupleTableSlot *
blpg_typed_iterate(ForeignScanState *node)
{
	typed_state *st = node->fdw_state;
	TupleTableSlot *ts = node->ss.ss_ScanTupleSlot;
	MemoryContext old;

	ExecClearTuple(ts);
	if (!st->started)
		typed_start(st);
	/* the values of the row before are not needed any more */
	MemoryContextReset(st->valcxt);
	old = MemoryContextSwitchTo(st->valcxt);
	if (typed_next(st, ts->tts_values, ts->tts_isnull))
		ExecStoreVirtualTuple(ts);
	MemoryContextSwitchTo(old);
	return ts;
}

/* ---- get_table() ---- */

typed_state *
blpg_typed_reader(Relation rel, const char *server_name, StringInfo entries)
{
	typed_state *st = typed_create(rel);

	if (strcmp(st->server->servername, server_name) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("foreign table \"%s\" belongs to source \"%s\", not \"%s\"",
						st->relname, st->server->servername, server_name)));
	st->entries = entries;
	return st;
}

/*
 * The reader's buffer, emptied, with room for a batch of max_changes of
 * slot if that is all the changes not handed out (one allocation, not
 * doubling copies), in huge pages where the kernel has them.  The buffer is
 * the caller's (get.c keeps it between calls): when it has the room
 * already, nothing is allocated or faulted in.
 */
StringInfo
blpg_typed_reader_buffer(typed_state *st, blpg_slot *slot, int max_changes)
{
	uint64		bytes = 0;

	resetStringInfo(st->entries);
	LWLockAcquire(&slot->lock, LW_SHARED);
	if (slot->put_seq - slot->get_seq <= (uint64) max_changes)
		bytes = slot->put_off - slot->get_off;
	LWLockRelease(&slot->lock);
	if (bytes >= (uint64) st->entries->maxlen && bytes < MaxAllocSize / 2)
	{
		enlargeStringInfo(st->entries, (int) bytes);
		entries_huge_pages(st->entries);
	}
	return st->entries;
}

int
blpg_typed_reader_buffer_len(typed_state *st)
{
	return st->entries->len;
}

void
blpg_typed_reader_start(typed_state *st, uint64 first, uint64 last, uint64 batch_id)
{
	typed_reset(st, first, last);
	st->batch_id = batch_id;
}

bool
blpg_typed_reader_next(typed_state *st, Datum *values, bool *nulls)
{
	return typed_next(st, values, nulls);
}

void
blpg_typed_rescan(ForeignScanState *node)
{
	typed_state *st = node->fdw_state;

	st->started = false;
}

void
blpg_typed_end(ForeignScanState *node)
{
}

void
blpg_typed_explain(ForeignScanState *node, ExplainState *es)
{
	ForeignScan *plan = (ForeignScan *) node->ss.ps.plan;
	typed_state *st = node->fdw_state;
	ListCell   *lc;
	StringInfoData buf;

	initStringInfo(&buf);
	foreach(lc, (List *) linitial(plan->fdw_private))
	{
		List	   *cond = lfirst(lc);
		const char *col = strVal(linitial(cond));
		const char *val = strVal(lthird(cond));

		if (strcmp(col, "_binlog_commit_time") == 0)
			val = DatumGetCString(DirectFunctionCall1(timestamptz_out,
													  TimestampTzGetDatum(strtoll(val, NULL, 10))));
		appendStringInfo(&buf, "%s%s %s %s", buf.len ? " AND " : "", col, strVal(lsecond(cond)),
						 strcmp(col, "_binlog_seq") == 0 ? val : quote_literal_cstr(val));
	}
	if (es->verbose)
		ExplainPropertyText("Source Table", psprintf("%s.%s", st->schema_name, st->table_name), es);
	if (buf.len)
		ExplainPropertyText("Ring Filter", buf.data, es);
}
