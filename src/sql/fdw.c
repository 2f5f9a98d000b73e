/*
 * fdw.c
 *	  The foreign-data wrapper's handler: a foreign table over a source
 *	  shows the changes buffered in its ring and not yet acknowledged
 *	  (peek: reading consumes nothing).
 *
 *	  CREATE FOREIGN TABLE shop_changes (seq bigint, op text, schema_name text,
 *	      table_name text, before jsonb, after jsonb, ...) SERVER shop;
 *
 * Columns are matched by name (see store.h); a column of another
 * name is an error.  Equality conditions on schema_name, table_name and op,
 * and a lower bound on seq, are checked on each entry's header before any
 * row is decoded (the conditions stay in the plan for the executor too).
 *
 * A foreign table with the option table_name (IMPORT FOREIGN SCHEMA,
 * import.c) shows one source table's changes as typed rows instead: its
 * scan is typed.c's.
 */
#include "sql/sql.h"

#include "access/table.h"
#include "commands/explain.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "foreign/fdwapi.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/planmain.h"
#include "optimizer/restrictinfo.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

PG_FUNCTION_INFO_V1(binlog_fdw_handler);


typedef struct scan_state
{
	bool		typed;			/* false: see is_typed() */
	blpg_slot  *slot;
	int			natts;
	int		   *colmap;			/* attribute -> blpg_change_col, -1 dropped */
	bool		want[BLPG_NCOLS];
	blpg_change_filter filter;
	StringInfoData entries;
	blpg_change_iter *it;
	bool		started;
	MemoryContext cxt;			/* the scan's, not the per-tuple context */
} scan_state;

/* Map the foreign table's columns to change columns (error on unknown). */
static int *
column_map(Relation rel, bool *want)
{
	TupleDesc	desc = RelationGetDescr(rel);
	int		   *map = palloc(sizeof(int) * desc->natts);

	memset(want, false, sizeof(bool) * BLPG_NCOLS);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		int			col;

		map[i] = -1;
		if (att->attisdropped)
			continue;
		col = blpg_change_col_by_name(NameStr(att->attname));
		if (col < 0)
		{
			StringInfoData names;

			initStringInfo(&names);
			for (int k = 0; k < BLPG_NCOLS; k++)
				appendStringInfo(&names, "%s%s", k ? ", " : "", blpg_change_col_names[k]);
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_COLUMN_NAME),
					 errmsg("foreign table \"%s\" has a column \"%s\" that a binlog_fdw source does not provide",
							RelationGetRelationName(rel), NameStr(att->attname)),
					 errhint("Valid columns are: %s.", names.data)));
		}
		map[i] = col;
		want[col] = true;
	}
	return map;
}

/*
 * A condition "column OP constant" on a column of baserel, the constant not
 * NULL: its operator's name (the column and constant into *var, *cst), else
 * NULL.  The conditions a scan of the changes or of a typed table can check
 * on entries' headers are of this form (typed.c's too).
 */
char *
blpg_column_op_const(RestrictInfo *ri, RelOptInfo *baserel, Var **var, Const **cst)
{
	OpExpr	   *op;

	if (!IsA(ri->clause, OpExpr))
		return NULL;
	op = (OpExpr *) ri->clause;
	if (list_length(op->args) != 2 || !IsA(linitial(op->args), Var) ||
		!IsA(lsecond(op->args), Const))
		return NULL;
	*var = linitial(op->args);
	*cst = lsecond(op->args);
	if ((*var)->varno != baserel->relid || (*var)->varattno <= 0 || (*cst)->constisnull)
		return NULL;
	return get_opname(op->opno);
}

/* "col = 'const'" / "seq > const" conditions the scan can check early. */
static List *
pushable_conditions(PlannerInfo *root, RelOptInfo *baserel, Relation rel)
{
	List	   *conds = NIL;
	ListCell   *lc;
	TupleDesc	desc = RelationGetDescr(rel);

	foreach(lc, baserel->baserestrictinfo)
	{
		Var		   *var;
		Const	   *cst;
		const char *colname;
		char	   *opname = blpg_column_op_const(lfirst_node(RestrictInfo, lc), baserel,
												  &var, &cst);

		if (opname == NULL)
			continue;
		colname = NameStr(TupleDescAttr(desc, var->varattno - 1)->attname);
		if ((strcmp(colname, "schema_name") == 0 || strcmp(colname, "table_name") == 0 ||
			 strcmp(colname, "op") == 0) && strcmp(opname, "=") == 0 &&
			cst->consttype == TEXTOID)
			conds = lappend(conds, list_make2(makeString(pstrdup(colname)),
											  makeString(TextDatumGetCString(cst->constvalue))));
		else if (strcmp(colname, "seq") == 0 && cst->consttype == INT8OID &&
				 (strcmp(opname, ">") == 0 || strcmp(opname, ">=") == 0))
			conds = lappend(conds, list_make2(makeString("seq"),
											  makeString(psprintf("%lld",
																  (long long) (DatumGetInt64(cst->constvalue) +
																			   (strcmp(opname, ">") == 0 ? 1 : 0))))));
	}
	return conds;
}

static void
get_rel_size(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid)
{
	ForeignTable *ft = GetForeignTable(foreigntableid);
	blpg_slot  *slot = blpg_shared ? blpg_find_slot(MyDatabaseId, ft->serverid) : NULL;
	double		rows = 1000;

	if (slot)
		rows = Max(1.0, (double) (slot->put_seq - slot->ack_seq));
	baserel->rows = rows * clauselist_selectivity(root, baserel->baserestrictinfo, 0, JOIN_INNER, NULL);
	baserel->tuples = rows;
}

static void
get_paths(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid)
{
	Cost		startup = 10;
	Cost		total = startup + baserel->tuples * 0.05;

	add_path(baserel, (Path *) create_foreignscan_path(root, baserel, NULL, baserel->rows,
													   startup, total, NIL, NULL, NULL, NIL));
}

static ForeignScan *
get_plan(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid,
		 ForeignPath *best_path, List *tlist, List *scan_clauses, Plan *outer_plan)
{
	Relation	rel = table_open(foreigntableid, NoLock);
	bool		want[BLPG_NCOLS];
	List	   *conds;

	if (blpg_typed_table(foreigntableid))
		conds = blpg_typed_private(root, baserel, rel);
	else
	{
		(void) column_map(rel, want);	/* errors early on unknown columns */
		conds = pushable_conditions(root, baserel, rel);
	}
	table_close(rel, NoLock);
	scan_clauses = extract_actual_clauses(scan_clauses, false);
	return make_foreignscan(tlist, scan_clauses, baserel->relid, NIL, conds,
							NIL, NIL, outer_plan);
}

static void
begin_scan(ForeignScanState *node, int eflags)
{
	ForeignScan *plan = (ForeignScan *) node->ss.ps.plan;
	Relation	rel = node->ss.ss_currentRelation;
	ForeignTable *ft = GetForeignTable(RelationGetRelid(rel));
	ForeignServer *server = GetForeignServer(ft->serverid);
	scan_state *st;
	ListCell   *lc;

	if (blpg_typed_table(RelationGetRelid(rel)))
	{
		blpg_typed_begin(node, eflags);
		return;
	}
	st = palloc0(sizeof(scan_state));
	node->fdw_state = st;
	st->cxt = CurrentMemoryContext;
	st->natts = RelationGetDescr(rel)->natts;
	st->colmap = column_map(rel, st->want);
	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;
	st->slot = blpg_consumer_slot(server->servername, NULL);
	foreach(lc, plan->fdw_private)
	{
		List	   *cond = lfirst(lc);
		const char *col = strVal(linitial(cond));
		char	   *val = strVal(lsecond(cond));

		if (strcmp(col, "schema_name") == 0)
			st->filter.schema = val;
		else if (strcmp(col, "table_name") == 0)
			st->filter.table = val;
		else if (strcmp(col, "op") == 0)
			st->filter.op = val;
		else if (strcmp(col, "seq") == 0)
			st->filter.min_seq = Max(st->filter.min_seq, strtoull(val, NULL, 10));
	}
	initStringInfo(&st->entries);
}

static void
start_scan(scan_state *st)
{
	uint64		first,
				last;
	MemoryContext old = MemoryContextSwitchTo(st->cxt);

	resetStringInfo(&st->entries);
	LWLockAcquire(&st->slot->lock, LW_SHARED);
	first = st->slot->ack_seq + 1;
	last = st->slot->put_seq;
	if (first <= last)
		blpg_ring_copy(st->slot, st->slot->ack_off, Max(first, st->filter.min_seq),
					   last, &st->entries);
	LWLockRelease(&st->slot->lock);
	st->it = blpg_change_iter_create(&st->entries, first, last, st->want, &st->filter);
	st->started = true;
	MemoryContextSwitchTo(old);
}

/* Both scans' states begin with this flag (typed.c: true). */
static bool
is_typed(ForeignScanState *node)
{
	return node->fdw_state != NULL && *(bool *) node->fdw_state;
}

static TupleTableSlot *
iterate_scan(ForeignScanState *node)
{
	scan_state *st = node->fdw_state;
	TupleTableSlot *ts = node->ss.ss_ScanTupleSlot;
	Datum		values[BLPG_NCOLS];
	bool		nulls[BLPG_NCOLS];

	if (is_typed(node))
		return blpg_typed_iterate(node);
	ExecClearTuple(ts);
	if (!st->started)
		start_scan(st);
	if (!blpg_change_iter_next(st->it, values, nulls))
		return ts;
	for (int i = 0; i < st->natts; i++)
	{
		int			col = st->colmap[i];

		if (col < 0)
		{
			ts->tts_isnull[i] = true;
			continue;
		}
		ts->tts_values[i] = values[col];
		ts->tts_isnull[i] = nulls[col];
	}
	ExecStoreVirtualTuple(ts);
	return ts;
}

static void
rescan(ForeignScanState *node)
{
	scan_state *st = node->fdw_state;

	if (is_typed(node))
	{
		blpg_typed_rescan(node);
		return;
	}
	if (st->it)
		blpg_change_iter_free(st->it);
	st->it = NULL;
	st->started = false;
}

static void
end_scan(ForeignScanState *node)
{
	scan_state *st = node->fdw_state;

	if (is_typed(node))
	{
		blpg_typed_end(node);
		return;
	}
	if (st && st->it)
		blpg_change_iter_free(st->it);
	if (st)
		st->it = NULL;
}

static void
explain_scan(ForeignScanState *node, ExplainState *es)
{
	ForeignScan *plan = (ForeignScan *) node->ss.ps.plan;
	ListCell   *lc;
	StringInfoData buf;

	if (is_typed(node))
	{
		blpg_typed_explain(node, es);
		return;
	}
	initStringInfo(&buf);
	foreach(lc, plan->fdw_private)
	{
		List	   *cond = lfirst(lc);

		appendStringInfo(&buf, "%s%s %s %s", buf.len ? " AND " : "",
						 strVal(linitial(cond)),
						 strcmp(strVal(linitial(cond)), "seq") == 0 ? ">=" : "=",
						 quote_literal_cstr(strVal(lsecond(cond))));
	}
	if (buf.len)
		ExplainPropertyText("Ring Filter", buf.data, es);
}

Datum
binlog_fdw_handler(PG_FUNCTION_ARGS)
{
	FdwRoutine *r = makeNode(FdwRoutine);

	r->GetForeignRelSize = get_rel_size;
	r->GetForeignPaths = get_paths;
	r->GetForeignPlan = get_plan;
	r->BeginForeignScan = begin_scan;
	r->IterateForeignScan = iterate_scan;
	r->ReScanForeignScan = rescan;
	r->EndForeignScan = end_scan;
	r->ExplainForeignScan = explain_scan;
	r->ImportForeignSchema = blpg_import_foreign_schema;
	PG_RETURN_POINTER(r);
}
