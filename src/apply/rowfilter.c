/*
 * rowfilter.c
 *	  The apply side of binlog_fdw.filters (read by store/filter.c): a
 *	  table's row filter, a PostgreSQL boolean expression over its target's
 *	  columns, parsed and prepared once per target and evaluated on a row
 *	  in the target's row type; and the filters of an apply() call, read as
 *	  the extension's owner.  target.c decides with it what a change does
 *	  (PostgreSQL 15's semantics for updates, see blpg_target_apply_row).
 *	  Copies (snapshot.c) take the same expression as their COPY's WHERE
 *	  condition, so that they keep the rows apply would.
 */
#include "apply/apply.h"

#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/prep.h"
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

/* The row filter transformed over rel's columns and checked. */
static Node *
rowfilter_parse(Relation rel, const char *source, const char *text, Bitmapset **attrs)
{
	List	   *stmts;
	RawStmt    *raw;
	SelectStmt *sel;
	ParseState *pstate;
	ParseNamespaceItem *nsitem;
	Node	   *node;
	ErrorContextCallback cb;
	rowfilter_context rc = {source, text};

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
	error_context_stack = cb.previous;
	return node;
}

ExprState *
blpg_rowfilter_prepare(Relation rel, const char *source, const char *text,
					   EState *estate, Bitmapset **attrs)
{
	Node	   *node = rowfilter_parse(rel, source, text, attrs);
	MemoryContext old;
	ExprState  *state;

	old = MemoryContextSwitchTo(estate->es_query_cxt);
	state = ExecInitExpr(expression_planner((Expr *) node), NULL);
	MemoryContextSwitchTo(old);
	return state;
}

List *
blpg_rowfilter_copy_where(Relation rel, const char *source, const char *text,
						  Bitmapset **attrs)
{
	Node	   *node = rowfilter_parse(rel, source, text, attrs);

	/* as COPY FROM ... WHERE prepares its condition (DoCopy) */
	node = eval_const_expressions(NULL, node);
	node = (Node *) canonicalize_qual((Expr *) node, false);
	return make_ands_implicit((Expr *) node);
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
