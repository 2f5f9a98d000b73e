/*
 * rowfilter.c
 *	  The apply side of binlog_fdw.filters (read by store/filter.c): a
 *	  table's row filter, a PostgreSQL boolean expression over its target's
 *	  columns, parsed and prepared once per target and evaluated on a row
 *	  in the target's row type; and the filters of an apply() call, read as
 *	  the extension's owner.  target.c decides with it what a change does
 *	  (PostgreSQL 15's semantics for updates, see blpg_target_apply_row).
 *	  Copies (snapshot(), load()) do not filter yet: one that copied rows
 *	  the filter changes is refused.
 */
#include "apply/apply.h"

#include "bl_mysql_snapshot.h"

#include "executor/executor.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_coerce.h"
#include "parser/parse_collate.h"
#include "parser/parse_expr.h"
#include "parser/parse_node.h"
#include "parser/parse_relation.h"
#include "parser/parser.h"
#include "utils/rel.h"

static void
load_fn(void *arg)
{
	blpg_filter_load_rules(((void **) arg)[0], ((void **) arg)[1], false, NULL);
}

blpg_filter *
blpg_apply_filters(const char *server_name)
{
	blpg_filter *f = blpg_filter_create(NULL, NULL);
	void	   *args[2] = {f, (void *) server_name};

	blpg_run_as_owner(load_fn, args);
	return f;
}

typedef struct rowfilter_context
{
	const char *source;
	const char *text;
} rowfilter_context;

static void
rowfilter_error_context(void *arg)
{
	rowfilter_context *rc = arg;

	errcontext("row filter \"%s\" of MySQL table %s (binlog_fdw.set_filter())",
			   rc->text, rc->source);
}

ExprState *
blpg_rowfilter_prepare(Relation rel, const char *source, const char *text,
					   EState *estate, Bitmapset **attrs)
{
	List	   *stmts;
	RawStmt    *raw;
	SelectStmt *sel;
	ParseState *pstate;
	ParseNamespaceItem *nsitem;
	Node	   *node;
	Expr	   *expr;
	ErrorContextCallback cb;
	rowfilter_context rc = {source, text};
	ExprState  *state;
	MemoryContext old;

	cb.callback = rowfilter_error_context;
	cb.arg = &rc;
	cb.previous = error_context_stack;
	error_context_stack = &cb;

	stmts = raw_parser(psprintf("SELECT %s", text), RAW_PARSE_DEFAULT);
	raw = list_length(stmts) == 1 ? linitial_node(RawStmt, stmts) : NULL;
	sel = raw && IsA(raw->stmt, SelectStmt) ? (SelectStmt *) raw->stmt : NULL;
	if (sel == NULL || list_length(sel->targetList) != 1 || sel->fromClause != NIL ||
		sel->whereClause != NULL || sel->groupClause != NIL || sel->havingClause != NULL ||
		sel->sortClause != NIL || sel->limitCount != NULL || sel->distinctClause != NIL ||
		sel->windowClause != NIL || sel->withClause != NULL || sel->op != SETOP_NONE ||
		((ResTarget *) linitial(sel->targetList))->name != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("the row filter of %s is not one expression", source),
				 errhint("A row filter is a boolean expression over the target's columns, as in a WHERE clause.")));
	node = ((ResTarget *) linitial(sel->targetList))->val;

	pstate = make_parsestate(NULL);
	pstate->p_sourcetext = text;
	nsitem = addRangeTableEntryForRelation(pstate, rel, AccessShareLock, NULL, false, false);
	addNSItemToQuery(pstate, nsitem, false, true, true);
	node = transformExpr(pstate, node, EXPR_KIND_WHERE);
	node = coerce_to_boolean(pstate, node, "a row filter");
	assign_expr_collations(pstate, node);
	if (pstate->p_hasSubLinks || pstate->p_hasAggs || pstate->p_hasWindowFuncs ||
		pstate->p_hasTargetSRFs)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the row filter of %s uses a subquery, an aggregate, a window function or a set-returning function", source),
				 errhint("A row filter reads the columns of the row only.")));
	if (contain_volatile_functions(node))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the row filter of %s uses a volatile function", source),
				 errdetail("A row filter must give the same answer whenever the change is applied again."),
				 errhint("Use immutable or stable functions only.")));
	pull_varattnos(node, 1, attrs);
	free_parsestate(pstate);
	old = MemoryContextSwitchTo(estate->es_query_cxt);
	expr = expression_planner((Expr *) node);
	state = ExecInitExpr(expr, NULL);
	MemoryContextSwitchTo(old);
	error_context_stack = cb.previous;
	return state;
}

bool
blpg_rowfilter_eval(ExprState *state, TupleTableSlot *slot, ExprContext *econtext)
{
	bool		isnull;
	Datum		d;

	econtext->ecxt_scantuple = slot;
	d = ExecEvalExprSwitchContext(state, econtext, &isnull);
	return !isnull && DatumGetBool(d);
}

void
blpg_filter_refuse_copy(const char *server_name, const char *db, const char *table,
						const bl_snapshot_column *cols, int ncols, int64 rows)
{
	blpg_filter *f = blpg_apply_filters(server_name);
	const blpg_filter_rule *r = blpg_filter_rule_of(f, db, strlen(db), table, strlen(table));
	const char *why = NULL;
	ListCell   *lc;

	if (r == NULL)
		return;
	if (r->row_filter)
		why = "has a row filter";
	for (int i = 0; why == NULL && i < ncols; i++)
		if (blpg_filter_drops_column(r, cols[i].name))
			why = psprintf("leaves column \"%s\" out", cols[i].name);
	foreach(lc, r->masks)
	{
		const blpg_filter_mask *m = lfirst(lc);

		for (int i = 0; why == NULL && i < ncols; i++)
			if (pg_strcasecmp(cols[i].name, m->column) == 0)
				why = psprintf("masks column \"%s\"", m->column);
	}
	if (why)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot copy %s.%s of source \"%s\": its filter %s, and a copy does not filter yet",
						db, table, server_name, why),
				 errdetail("The copy read %lld rows; none are kept.", (long long) rows),
				 errhint("Start from an empty table and let its changes pass the filter, or copy it without the filter (binlog_fdw.set_filter()) if its rows may be seen whole.")));
}
