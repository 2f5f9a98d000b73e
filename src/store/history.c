/*
 * history.c
 *	  The schema history of a source (store.h): the definition of each
 *	  captured table at a binlog position, so that a rows event is decoded
 *	  with the columns of its own time, not today's information_schema
 *	  (binlog_row_metadata MINIMAL and NO_LOG carry no names).
 *
 * Durable form: binlog_fdw.schema_history, one row per (table, change),
 * keyed by the source's server name and a sequence; the latest row of a
 * table is its definition at the durable position.  Rows come from two
 * places only, each in the transaction of the position they belong to:
 *   - seeds: what information_schema says at the position a worker starts
 *     from, written by the worker (src/worker/stream.c) when it has checked
 *     that no DDL on the table lies between that position and now;
 *   - DDL: when a consumer acknowledges a DDL entry (batches.c), the
 *     statement applied to the durable definition, in the acknowledging
 *     transaction with binlog_fdw.source_state.
 * The worker keeps the same definitions in memory, loaded at the durable
 * position and advanced by the DDL the sink puts into the ring, with the
 * same function (apply_statement) and the same parser (ddl_parse.c); it is
 * the decoder's schema provider (blpg_history_lookup).
 *
 * A definition may be "unknown" (a statement the parser did not follow, a
 * table whose history begins after DDL the worker could not replay): then
 * only TABLE_MAPs with their own column names (FULL metadata) decode.
 */
#include "store/store.h"

#include "access/xact.h"
#include "catalog/pg_foreign_server.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "foreign/foreign.h"
#include "mb/pg_wchar.h"
#include "storage/lmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/memutils.h"

#include "bl_charset.h"

int			blpg_schema_history_retention = 30 * 86400;	/* seconds; -1: keep */

typedef struct hcol
{
	char	   *name;
	char	   *data_type;
	char	   *charset;
	bool		is_unsigned;
	bool		pk;
	int			nmembers;
	char	  **members;
} hcol;

typedef struct hdef
{
	char	   *schema;
	char	   *table;			/* "" for a database's default charset */
	bool		exists;
	char	   *unknown;		/* not NULL: why the columns are unknown */
	char	   *charset;		/* the table's (database's) default */
	List	   *cols;			/* hcol */
	bl_schema_column *sc;		/* the decoder's form, built on lookup */
	bl_schema_table st;
	bool		changed;
} hdef;

struct blpg_history
{
	char	   *server_name;
	blpg_filter *filter;
	MemoryContext cxt;
	List	   *defs;			/* hdef */
	List	   *scan_created;	/* "schema.table" created during a scan */
	bl_schema_table unknown_st;
	char	   *unknown_why;
};

static hdef *
find_def(List *defs, const char *schema, const char *table)
{
	ListCell   *lc;

	foreach(lc, defs)
	{
		hdef	   *d = lfirst(lc);

		if (strcmp(d->schema, schema) == 0 && strcmp(d->table, table) == 0)
			return d;
	}
	return NULL;
}

static hdef *
get_def(List **defs, const char *schema, const char *table)
{
	hdef	   *d = find_def(*defs, schema, table);

	if (d == NULL)
	{
		d = palloc0(sizeof(hdef));
		d->schema = pstrdup(schema);
		d->table = pstrdup(table);
		*defs = lappend(*defs, d);
	}
	return d;
}

static int
col_index(hdef *d, const char *name)
{
	int			i = 0;
	ListCell   *lc;

	foreach(lc, d->cols)
	{
		if (pg_strcasecmp(((hcol *) lfirst(lc))->name, name) == 0)
			return i;
		i++;
	}
	return -1;
}

static bool
is_text_type(const char *t)
{
	return strcmp(t, "char") == 0 || strcmp(t, "varchar") == 0 || strstr(t, "text") != NULL ||
		strcmp(t, "enum") == 0 || strcmp(t, "set") == 0;
}

static hcol *
col_from_ddl(const blpg_ddl_column *c, const char *table_charset)
{
	hcol	   *h = palloc0(sizeof(hcol));
	ListCell   *lc;
	int			i = 0;

	h->name = pstrdup(c->name);
	h->data_type = pstrdup(c->data_type);
	h->is_unsigned = c->is_unsigned;
	h->pk = c->pk;
	if (is_text_type(c->data_type))
		h->charset = c->charset ? pstrdup(c->charset) : table_charset ? pstrdup(table_charset) : NULL;
	else if (strcmp(c->data_type, "json") == 0)
	{
		/*
		 * MariaDB's JSON is LONGTEXT CHARACTER SET utf8mb4 whatever the
		 * table's charset (information_schema says so); MySQL's binary JSON
		 * does not use it
		 */
		h->charset = pstrdup(c->charset ? c->charset : "utf8mb4");
	}
	h->nmembers = list_length(c->members);
	h->members = palloc0(sizeof(char *) * (h->nmembers + 1));
	foreach(lc, c->members)
		h->members[i++] = pstrdup(lfirst(lc));
	return h;
}

static void
set_unknown(hdef *d, const char *why)
{
	d->exists = true;
	d->unknown = pstrdup(why);
	d->cols = NIL;
	d->changed = true;
	d->sc = NULL;
}

static List *
insert_at(List *cols, hcol *c, bool first, const char *after, hdef *d)
{
	int			at;

	if (first)
		return lcons(c, cols);
	if (after && (at = col_index(d, after)) >= 0)
		return list_insert_nth(cols, at + 1, c);
	return lappend(cols, c);
}

/* The default charset of a new table in db. */
static char *
db_charset(List *defs, const char *db)
{
	hdef	   *d = find_def(defs, db, "");

	return d ? d->charset : NULL;
}

static void
apply_alter(List **defs, const blpg_ddl *s, hdef *d)
{
	ListCell   *lc;

	foreach(lc, s->clauses)
	{
		const blpg_ddl_clause *cl = lfirst(lc);
		int			i;

		if (d->unknown)
			return;
		d->changed = true;
		d->sc = NULL;
		switch (cl->kind)
		{
			case BLPG_ALTER_ADD_COLUMN:
				if (cl->if_exists && col_index(d, cl->name) >= 0)
					break;
				d->cols = insert_at(d->cols, col_from_ddl(cl->column, d->charset),
									cl->first, cl->after, d);
				break;
			case BLPG_ALTER_DROP_COLUMN:
				i = col_index(d, cl->name);
				if (i >= 0)
					d->cols = list_delete_nth_cell(d->cols, i);
				else if (!cl->if_exists)
					set_unknown(d, psprintf("DROP COLUMN of a column \"%s\" the history does not have", cl->name));
				break;
			case BLPG_ALTER_MODIFY_COLUMN:
				i = col_index(d, cl->name);
				if (i < 0)
					set_unknown(d, psprintf("MODIFY/CHANGE of a column \"%s\" the history does not have", cl->name));
				else
				{
					hcol	   *old = list_nth(d->cols, i);
					hcol	   *c = col_from_ddl(cl->column, d->charset);

					c->pk = c->pk || old->pk;
					if (cl->first || cl->after)
					{
						d->cols = list_delete_nth_cell(d->cols, i);
						d->cols = insert_at(d->cols, c, cl->first, cl->after, d);
					}
					else
						list_nth_cell(d->cols, i)->ptr_value = c;
				}
				break;
			case BLPG_ALTER_RENAME_COLUMN:
				i = col_index(d, cl->name);
				if (i < 0)
					set_unknown(d, psprintf("RENAME COLUMN of a column \"%s\" the history does not have", cl->name));
				else
					((hcol *) list_nth(d->cols, i))->name = pstrdup(cl->new_name);
				break;
			case BLPG_ALTER_RENAME_TABLE:
				{
					hdef	   *n = get_def(defs, cl->new_db, cl->new_name);

					n->exists = true;
					n->unknown = d->unknown;
					n->charset = d->charset;
					n->cols = d->cols;
					n->changed = true;
					n->sc = NULL;
					d->exists = false;
					d->cols = NIL;
					d->unknown = NULL;
					d = n;
				}
				break;
			case BLPG_ALTER_CHARSET:
				if (cl->new_name)
				{
					d->charset = pstrdup(cl->new_name);
					if (cl->first)	/* CONVERT TO */
					{
						ListCell   *cc;

						foreach(cc, d->cols)
						{
							hcol	   *c = lfirst(cc);

							if (is_text_type(c->data_type))
								c->charset = d->charset;
						}
					}
				}
				break;
			case BLPG_ALTER_DROP_PRIMARY_KEY:
			case BLPG_ALTER_ADD_PRIMARY_KEY:
				{
					ListCell   *cc;

					/* a table has one primary key: ADD names all of it */
					foreach(cc, d->cols)
						((hcol *) lfirst(cc))->pk = false;
					foreach(cc, cl->key_columns)
					{
						i = col_index(d, lfirst(cc));
						if (i < 0)
						{
							set_unknown(d, psprintf("ADD PRIMARY KEY of a column \"%s\" the history does not have",
													(char *) lfirst(cc)));
							break;
						}
						((hcol *) list_nth(d->cols, i))->pk = true;
					}
				}
				break;
			case BLPG_ALTER_SET_DEFAULT:
			case BLPG_ALTER_DROP_DEFAULT:
			case BLPG_ALTER_IGNORED:
				break;
			case BLPG_ALTER_UNSUPPORTED:
				set_unknown(d, psprintf("ALTER TABLE not followed: %s", cl->unsupported));
				break;
		}
	}
}

/*
 * What a statement does to the definitions: the single place that knows
 * (the worker's memory and the acknowledging transaction both call it).
 */
static void
apply_statement(List **defs, const char *db, const char *sql, uint16 server_collation)
{
	blpg_ddl   *s = blpg_ddl_parse(sql, db);
	ListCell   *lc;
	const bl_charset *server_cs = server_collation ? bl_charset_by_collation(server_collation) : NULL;
	char	   *server_charset = server_cs ? pstrdup(bl_charset_name(server_cs)) : NULL;

	if (s->temporary)
		return;
	switch (s->kind)
	{
		case BLPG_DDL_CREATE_TABLE:
			if (s->name == NULL)
				break;
			{
				hdef	   *d = find_def(*defs, s->db, s->name);

				if (d && d->exists && s->if_not_exists)
					break;
				d = get_def(defs, s->db, s->name);
				d->exists = true;
				d->changed = true;
				d->sc = NULL;
				d->unknown = NULL;
				d->cols = NIL;
				/* the table's, else its database's, else the server's (a database the history lacks) */
				d->charset = s->charset ? pstrdup(s->charset) :
					find_def(*defs, s->db, "") ? db_charset(*defs, s->db) : server_charset;
				if (s->unsupported)
				{
					set_unknown(d, psprintf("CREATE TABLE not followed: %s", s->unsupported));
					break;
				}
				foreach(lc, s->columns)
				{
					hcol	   *c = col_from_ddl(lfirst(lc), d->charset);
					ListCell   *k;

					foreach(k, s->pk)
						if (pg_strcasecmp(lfirst(k), c->name) == 0)
							c->pk = true;
					d->cols = lappend(d->cols, c);
				}
			}
			break;
		case BLPG_DDL_DROP_TABLE:
			foreach(lc, s->tables)
			{
				blpg_ddl_table_ref *r = lfirst(lc);
				hdef	   *d = get_def(defs, r->db, r->name);

				d->exists = false;
				d->unknown = NULL;
				d->cols = NIL;
				d->changed = true;
				d->sc = NULL;
			}
			break;
		case BLPG_DDL_RENAME_TABLE:
			foreach(lc, s->tables)
			{
				blpg_ddl_table_ref *r = lfirst(lc);
				hdef	   *o = get_def(defs, r->db, r->name);
				hdef	   *n = get_def(defs, r->new_db, r->new_name);

				n->exists = o->exists;
				n->unknown = o->exists ? o->unknown : NULL;
				n->charset = o->charset;
				n->cols = o->cols;
				n->changed = true;
				n->sc = NULL;
				if (!o->exists)
					set_unknown(n, "renamed from a table the history does not have");
				o->exists = false;
				o->cols = NIL;
				o->unknown = NULL;
				o->changed = true;
				o->sc = NULL;
			}
			break;
		case BLPG_DDL_ALTER_TABLE:
			if (s->name == NULL)
				break;
			{
				hdef	   *d = get_def(defs, s->db, s->name);

				if (!d->exists)
				{
					set_unknown(d, "ALTER TABLE of a table the history does not have");
					break;
				}
				apply_alter(defs, s, d);
			}
			break;
		case BLPG_DDL_CREATE_DATABASE:
		case BLPG_DDL_ALTER_DATABASE:
			/* CREATE DATABASE without a charset takes the session's collation_server */
			if (s->db && (s->charset || (s->kind == BLPG_DDL_CREATE_DATABASE && server_charset)))
			{
				hdef	   *d = find_def(*defs, s->db, "");

				if (d && d->exists && s->kind == BLPG_DDL_CREATE_DATABASE && s->if_not_exists)
					break;
				d = get_def(defs, s->db, "");
				d->exists = true;
				d->charset = pstrdup(s->charset ? s->charset : server_charset);
				d->changed = true;
			}
			break;
		case BLPG_DDL_DROP_DATABASE:
			foreach(lc, *defs)
			{
				hdef	   *d = lfirst(lc);

				if (s->db && strcmp(d->schema, s->db) == 0 && d->exists)
				{
					d->exists = false;
					d->cols = NIL;
					d->unknown = NULL;
					d->changed = true;
					d->sc = NULL;
				}
			}
			break;
		case BLPG_DDL_TRUNCATE:
		case BLPG_DDL_DML:
		case BLPG_DDL_OTHER:
			break;
	}
}

/* ---- the durable form ---- */

static char *
def_json(const hdef *d)
{
	StringInfoData b;
	ListCell   *lc;
	bool		first = true;

	if (!d->exists)
		return NULL;
	initStringInfo(&b);
	if (d->unknown)
	{
		appendStringInfoString(&b, "{\"unknown\": ");
		escape_json(&b, d->unknown);
		appendStringInfoChar(&b, '}');
		return b.data;
	}
	appendStringInfoString(&b, "{\"charset\": ");
	if (d->charset)
		escape_json(&b, d->charset);
	else
		appendStringInfoString(&b, "null");
	if (d->table[0] == '\0')
	{
		appendStringInfoChar(&b, '}');
		return b.data;
	}
	appendStringInfoString(&b, ", \"columns\": [");
	foreach(lc, d->cols)
	{
		hcol	   *c = lfirst(lc);

		appendStringInfoString(&b, first ? "{\"name\": " : ", {\"name\": ");
		first = false;
		escape_json(&b, c->name);
		appendStringInfoString(&b, ", \"type\": ");
		escape_json(&b, c->data_type);
		appendStringInfo(&b, ", \"unsigned\": %s, \"pk\": %s, \"charset\": ",
						 c->is_unsigned ? "true" : "false", c->pk ? "true" : "false");
		if (c->charset)
			escape_json(&b, c->charset);
		else
			appendStringInfoString(&b, "null");
		if (c->nmembers > 0)
		{
			appendStringInfoString(&b, ", \"values\": [");
			for (int i = 0; i < c->nmembers; i++)
			{
				if (i)
					appendStringInfoString(&b, ", ");
				escape_json(&b, c->members[i]);
			}
			appendStringInfoChar(&b, ']');
		}
		appendStringInfoChar(&b, '}');
	}
	appendStringInfoString(&b, "]}");
	return b.data;
}

typedef struct history_call
{
	const char *server_name;
	MemoryContext cxt;			/* for loaded definitions */
	List	   *defs;
	/* a row to write */
	const hdef *def;
	const char *file;
	uint64		pos;
	const char *gtid;
	const char *ddl;
} history_call;

static void
load_fn(void *arg)
{
	history_call *c = arg;
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	hdef	   *cur = NULL;

	args[0] = CStringGetTextDatum(c->server_name);
	if (SPI_execute_with_args("SELECT h.source_schema, h.source_table, h.definition IS NULL, "
							  "h.definition->>'unknown', h.definition->>'charset', "
							  "c.col->>'name', c.col->>'type', coalesce((c.col->>'unsigned')::boolean, false), "
							  "c.col->>'charset', coalesce((c.col->>'pk')::boolean, false), "
							  "ARRAY(SELECT jsonb_array_elements_text(c.col->'values')) "
							  "FROM (SELECT DISTINCT ON (source_schema, source_table) source_schema, "
							  "source_table, definition FROM binlog_fdw.schema_history "
							  "WHERE server_name = $1 ORDER BY source_schema, source_table, seq DESC) h "
							  "LEFT JOIN LATERAL jsonb_array_elements(h.definition->'columns') "
							  "WITH ORDINALITY AS c(col, ord) ON true "
							  "ORDER BY h.source_schema, h.source_table, c.ord",
							  1, argtypes, args, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read binlog_fdw.schema_history");
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		HeapTuple	tup = SPI_tuptable->vals[r];
		TupleDesc	td = SPI_tuptable->tupdesc;
		char	   *schema = SPI_getvalue(tup, td, 1);
		char	   *table = SPI_getvalue(tup, td, 2);
		bool		isnull;
		MemoryContext old = MemoryContextSwitchTo(c->cxt);

		if (cur == NULL || strcmp(cur->schema, schema) != 0 || strcmp(cur->table, table) != 0)
		{
			char	   *unknown = SPI_getvalue(tup, td, 4);
			char	   *charset = SPI_getvalue(tup, td, 5);

			cur = palloc0(sizeof(hdef));
			cur->schema = pstrdup(schema);
			cur->table = pstrdup(table);
			cur->exists = !DatumGetBool(SPI_getbinval(tup, td, 3, &isnull));
			cur->unknown = unknown ? pstrdup(unknown) : NULL;
			cur->charset = charset ? pstrdup(charset) : NULL;
			c->defs = lappend(c->defs, cur);
		}
		if (SPI_getvalue(tup, td, 6) != NULL)
		{
			hcol	   *col = palloc0(sizeof(hcol));
			char	   *cs = SPI_getvalue(tup, td, 9);
			ArrayType  *arr = DatumGetArrayTypeP(SPI_getbinval(tup, td, 11, &isnull));
			Datum	   *elems;
			int			n;

			col->name = pstrdup(SPI_getvalue(tup, td, 6));
			col->data_type = pstrdup(SPI_getvalue(tup, td, 7));
			col->is_unsigned = DatumGetBool(SPI_getbinval(tup, td, 8, &isnull));
			col->charset = cs ? pstrdup(cs) : NULL;
			col->pk = DatumGetBool(SPI_getbinval(tup, td, 10, &isnull));
			deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, NULL, &n);
			col->nmembers = n;
			col->members = palloc0(sizeof(char *) * (n + 1));
			for (int i = 0; i < n; i++)
				col->members[i] = TextDatumGetCString(elems[i]);
			cur->cols = lappend(cur->cols, col);
		}
		MemoryContextSwitchTo(old);
	}
}

static List *
load_defs(const char *server_name, MemoryContext cxt)
{
	history_call c;

	memset(&c, 0, sizeof(c));
	c.server_name = server_name;
	c.cxt = cxt;
	blpg_run_as_owner(load_fn, &c);
	return c.defs;
}

static void
save_fn(void *arg)
{
	history_call *c = arg;
	Oid			argtypes[8] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT8OID, TEXTOID, TEXTOID, TEXTOID};
	Datum		args[8];
	char		nulls[8] = "        ";
	char	   *json = def_json(c->def);

	args[0] = CStringGetTextDatum(c->server_name);
	args[1] = CStringGetTextDatum(c->def->schema);
	args[2] = CStringGetTextDatum(c->def->table);
	args[3] = CStringGetTextDatum(c->file ? c->file : "");
	args[4] = Int64GetDatum((int64) c->pos);
	args[5] = c->gtid && c->gtid[0] ? CStringGetTextDatum(c->gtid) : (Datum) 0;
	nulls[5] = c->gtid && c->gtid[0] ? ' ' : 'n';
	args[6] = c->ddl ? CStringGetTextDatum(c->ddl) : (Datum) 0;
	nulls[6] = c->ddl ? ' ' : 'n';
	args[7] = json ? CStringGetTextDatum(json) : (Datum) 0;
	nulls[7] = json ? ' ' : 'n';

	/*
	 * Writers of one server's rows (a worker's seeds, a consumer's DDL, a
	 * copy's seeds) take the next seq one at a time, until they commit:
	 * the statement below then sees the other's row.
	 */
	if (SPI_execute_with_args("SELECT pg_catalog.pg_advisory_xact_lock("
							  "pg_catalog.hashtext('binlog_fdw.schema_history ' || $1))",
							  1, argtypes, args, nulls, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not lock the schema history of source \"%s\"", c->server_name);
	if (SPI_execute_with_args("INSERT INTO binlog_fdw.schema_history (server_name, seq, source_schema, "
							  "source_table, binlog_file, binlog_pos, gtid, ddl, definition) "
							  "SELECT $1, coalesce(max(seq), 0) + 1, $2, $3, $4, $5, $6, $7, $8::jsonb "
							  "FROM binlog_fdw.schema_history WHERE server_name = $1",
							  8, argtypes, args, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not write binlog_fdw.schema_history");

	/*
	 * The new row supersedes the table's older ones: only the latest row
	 * of a table is ever read (load_fn), so those recorded more than
	 * binlog_fdw.schema_history_retention ago go, in this transaction.
	 * The latest row stays, a dropped table's marker too.
	 */
	if (blpg_schema_history_retention >= 0)
	{
		Oid			ptypes[4] = {TEXTOID, TEXTOID, TEXTOID, FLOAT8OID};
		Datum		pargs[4];

		pargs[0] = args[0];
		pargs[1] = args[1];
		pargs[2] = args[2];
		pargs[3] = Float8GetDatum((double) blpg_schema_history_retention);
		if (SPI_execute_with_args("DELETE FROM binlog_fdw.schema_history h "
								  "WHERE h.server_name = $1 AND h.source_schema = $2 "
								  "AND h.source_table = $3 "
								  "AND h.recorded_at <= pg_catalog.now() - pg_catalog.make_interval(secs => $4) "
								  "AND h.seq < (SELECT max(l.seq) FROM binlog_fdw.schema_history l "
								  "WHERE l.server_name = $1 AND l.source_schema = $2 AND l.source_table = $3)",
								  4, ptypes, pargs, NULL, false, 0) != SPI_OK_DELETE)
			elog(ERROR, "could not prune binlog_fdw.schema_history");
	}
}

static void
save_def(const char *server_name, const hdef *d, const char *file, uint64 pos,
		 const char *gtid, const char *ddl)
{
	history_call c;

	memset(&c, 0, sizeof(c));
	c.server_name = server_name;
	c.def = d;
	c.file = file;
	c.pos = pos;
	c.gtid = gtid;
	c.ddl = ddl;
	blpg_run_as_owner(save_fn, &c);
}

/* ---- the worker's copy ---- */

blpg_history *
blpg_history_create(const char *server_name, blpg_filter *filter, MemoryContext parent)
{
	blpg_history *h = MemoryContextAllocZero(parent, sizeof(blpg_history));

	h->cxt = AllocSetContextCreate(parent, "binlog_fdw schema history", ALLOCSET_DEFAULT_SIZES);
	h->server_name = MemoryContextStrdup(parent, server_name);
	h->filter = filter;
	return h;
}

void
blpg_history_set_name(blpg_history *h, const char *server_name)
{
	if (strcmp(h->server_name, server_name) == 0)
		return;
	h->server_name = MemoryContextStrdup(GetMemoryChunkContext(h), server_name);
}

void
blpg_history_lock_server(blpg_history *h, Oid serverid)
{
	ForeignServer *server;

	LockDatabaseObject(ForeignServerRelationId, serverid, 0, AccessShareLock);
	server = GetForeignServerExtended(serverid, FSV_MISSING_OK);
	if (server == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("the foreign server of binlog_fdw source with OID %u was dropped", serverid)));
	blpg_history_set_name(h, server->servername);
}

void
blpg_history_load(blpg_history *h)
{
	MemoryContextReset(h->cxt);
	h->unknown_why = NULL;
	h->defs = load_defs(h->server_name, h->cxt);
	h->scan_created = NIL;
}

bool
blpg_history_knows(blpg_history *h, const char *schema, const char *table)
{
	return find_def(h->defs, schema, table) != NULL;
}

int
blpg_history_ntables(blpg_history *h)
{
	return list_length(h->defs);
}

static bool
captured(blpg_history *h, const char *schema, const char *table)
{
	return table[0] != '\0' && blpg_filter_match(h->filter, schema, strlen(schema), table, strlen(table));
}

void
blpg_history_seed(blpg_history *h, const char *schema, const char *table,
				  const bl_schema_table *def, const char *charset, const char *unknown,
				  const blpg_position *at)
{
	MemoryContext old = MemoryContextSwitchTo(h->cxt);
	hdef	   *d = get_def(&h->defs, schema, table);

	d->exists = true;
	d->charset = charset && charset[0] ? pstrdup(charset) : NULL;
	d->unknown = unknown ? pstrdup(unknown) : NULL;
	d->cols = NIL;
	d->sc = NULL;
	if (def && !unknown && table[0])
		for (uint32 i = 0; i < def->ncols; i++)
		{
			const bl_schema_column *s = &def->cols[i];
			hcol	   *c = palloc0(sizeof(hcol));

			c->name = pstrdup(s->name);
			c->data_type = pstrdup(s->data_type);
			c->is_unsigned = s->is_unsigned;
			c->charset = s->charset_name ? pstrdup(s->charset_name) : NULL;
			c->pk = s->is_pk;
			c->nmembers = (int) s->n_values;
			c->members = palloc0(sizeof(char *) * (c->nmembers + 1));
			for (int k = 0; k < c->nmembers; k++)
				c->members[k] = pstrdup(s->values[k]);
			d->cols = lappend(d->cols, c);
		}
	MemoryContextSwitchTo(old);
	save_def(h->server_name, d, at->file, at->pos, at->gtid, NULL);
}

void
blpg_history_advance(blpg_history *h, const char *db, const char *sql, uint16 server_collation)
{
	MemoryContext old = MemoryContextSwitchTo(h->cxt);

	apply_statement(&h->defs, db, sql, server_collation);
	MemoryContextSwitchTo(old);
}

/*
 * Does an ALTER TABLE change what the table's rows events carry (columns,
 * their order, names, types, charsets) or its key?  Indexes, defaults,
 * table options, partitioning and the default charset of columns still to
 * come do not: today's definition is also the one before such a statement.
 */
static bool
alter_changes_columns(const blpg_ddl *s)
{
	ListCell   *lc;

	if (s->unsupported || s->clauses == NIL)
		return true;			/* not read: it may change anything */
	foreach(lc, s->clauses)
	{
		const blpg_ddl_clause *cl = lfirst(lc);

		switch (cl->kind)
		{
			case BLPG_ALTER_IGNORED:
			case BLPG_ALTER_SET_DEFAULT:
			case BLPG_ALTER_DROP_DEFAULT:
				break;
			case BLPG_ALTER_CHARSET:
				if (cl->first)	/* CONVERT TO: the columns' charsets too */
					return true;
				break;
			default:
				return true;
		}
	}
	return false;
}

bool
blpg_history_scan_statement(blpg_history *h, const char *db, const char *sql, char **table_out,
							List **dropped)
{
	blpg_ddl   *s = blpg_ddl_parse(sql, db);
	List	   *touched = NIL;
	ListCell   *lc;

	*dropped = NIL;
	if (s->temporary)
		return false;
	switch (s->kind)
	{
		case BLPG_DDL_CREATE_TABLE:
			if (s->name && captured(h, s->db, s->name))
			{
				MemoryContext old = MemoryContextSwitchTo(h->cxt);

				h->scan_created = lappend(h->scan_created, psprintf("%s.%s", s->db, s->name));
				MemoryContextSwitchTo(old);
			}
			return false;
		case BLPG_DDL_ALTER_TABLE:
			if (s->name && alter_changes_columns(s))
				touched = lappend(touched, psprintf("%s.%s", s->db, s->name));
			break;
		case BLPG_DDL_DROP_TABLE:

			/*
			 * Dropped whole: what the table was before is unknown (its rows
			 * events before this statement cannot be decoded without FULL
			 * metadata), what it is after is known: nothing, until a CREATE
			 * TABLE that the history follows.
			 */
			foreach(lc, s->tables)
			{
				blpg_ddl_table_ref *r = lfirst(lc);
				char	   *q = psprintf("%s.%s", r->db, r->name);
				bool		created = false;
				ListCell   *k;

				if (!captured(h, r->db, r->name) || blpg_history_knows(h, r->db, r->name))
					continue;
				foreach(k, h->scan_created)
					if (strcmp(lfirst(k), q) == 0)
						created = true;
				if (created)
					continue;
				{
					MemoryContext old = MemoryContextSwitchTo(h->cxt);

					h->scan_created = lappend(h->scan_created, pstrdup(q));
					MemoryContextSwitchTo(old);
				}
				*dropped = lappend(*dropped, q);
			}
			return false;
		case BLPG_DDL_RENAME_TABLE:
			foreach(lc, s->tables)
			{
				blpg_ddl_table_ref *r = lfirst(lc);

				touched = lappend(touched, psprintf("%s.%s", r->db, r->name));
			}
			break;
		default:
			return false;
	}
	foreach(lc, touched)
	{
		char	   *q = lfirst(lc);
		char	   *dot = strchr(q, '.');
		char	   *schema = pnstrdup(q, dot - q);
		char	   *table = dot + 1;
		ListCell   *k;
		bool		created = false;

		/* a dotted database name: good enough, the filter decides */
		if (!captured(h, schema, table) || blpg_history_knows(h, schema, table))
			continue;
		foreach(k, h->scan_created)
			if (strcmp(lfirst(k), q) == 0)
				created = true;
		if (created)
			continue;
		*table_out = q;
		return true;
	}
	return false;
}

/* The decoder's provider (bl_schema_lookup_fn). */
const bl_schema_table *
blpg_history_lookup(void *arg, const char *schema, const char *table)
{
	blpg_history *h = arg;
	hdef	   *d;
	MemoryContext old;
	int			i = 0;
	ListCell   *lc;

	if (!captured(h, schema, table))
		return NULL;
	d = find_def(h->defs, schema, table);

	/*
	 * Never seen: not in information_schema when the history began and not
	 * created since (had DDL touched it after the start, the start would
	 * have been refused).  Its columns are positions (@1, @2, ...), as with
	 * no provider.
	 */
	if (d == NULL)
		return NULL;
	if (!d->exists || d->unknown)
	{
		old = MemoryContextSwitchTo(h->cxt);
		if (h->unknown_why)
			pfree(h->unknown_why);
		h->unknown_why = pstrdup(!d->exists ? "the schema history has it dropped at this position" :
								 d->unknown);
		MemoryContextSwitchTo(old);
		memset(&h->unknown_st, 0, sizeof(h->unknown_st));
		h->unknown_st.unknown = h->unknown_why;
		return &h->unknown_st;
	}
	if (d->sc == NULL)
	{
		old = MemoryContextSwitchTo(h->cxt);
		d->sc = palloc0(sizeof(bl_schema_column) * (list_length(d->cols) + 1));
		foreach(lc, d->cols)
		{
			hcol	   *c = lfirst(lc);
			bl_schema_column *s = &d->sc[i++];

			s->name = c->name;
			s->data_type = c->data_type;
			s->is_unsigned = c->is_unsigned;
			s->charset_name = c->charset;
			s->is_pk = c->pk;
			s->n_values = (uint32_t) c->nmembers;
			s->values = (const char **) c->members;
		}
		d->st.ncols = (uint32_t) list_length(d->cols);
		d->st.cols = d->sc;
		d->st.unknown = NULL;
		MemoryContextSwitchTo(old);
	}
	return &d->st;
}

/* ---- the consumer's side ---- */

/* The statement text of a DDL entry as UTF-8 in the server encoding, and its database. */
void
blpg_entry_ddl_text(const blpg_entry_view *v, char **db, char **sql)
{
	const blpg_entry *e = v->e;
	const uint8 *payload = v->payload;
	uint32		dblen = (uint32) bl_load_le(payload, 4);
	const char *sqlraw = (const char *) payload + 4 + dblen;
	size_t		sqllen = e->payload_len - 4 - dblen;
	bl_buf		b;
	bl_error	err;
	const bl_charset *cs = bl_charset_by_collation(e->ddl_collation);

	while (sqllen > 0 && sqlraw[sqllen - 1] == '\0')
		sqllen--;
	bl_buf_init(&b);
	if (cs == NULL || bl_charset_to_utf8(cs, (const uint8 *) sqlraw, sqllen, &b, &err) != 0)
	{
		bl_buf_reset(&b);
		bl_charset_to_utf8(bl_charset_by_name("utf8mb4"), (const uint8 *) sqlraw, sqllen, &b, &err);
	}
	*sql = pg_any_to_server(pnstrdup(b.data ? b.data : "", b.len), b.len, PG_UTF8);
	bl_buf_free(&b);
	*db = pnstrdup((const char *) payload + 4, dblen);
}

typedef struct acked_ddl
{
	char	   *file;
	uint64		pos;
	char	   *gtid;
	char	   *db;
	char	   *sql;
	uint16		server_collation;
} acked_ddl;

void
blpg_history_acked(blpg_slot *slot, Oid serverid, uint64 first_seq, uint64 last_seq)
{
	ForeignServer *server;
	const char *server_name;
	List	   *ddls = NIL;
	uint64		off;
	ListCell   *lc;
	List	   *defs;

	if (blpg_tables_legacy())
		return;					/* 0.1's tables until the update */
	LWLockAcquire(&slot->lock, LW_SHARED);
	/* from the first entry not acknowledged (part of a batch may be released early) */
	off = slot->ack_off;
	while (off < slot->put_off)
	{
		const blpg_entry *e = blpg_ring_entry(slot, off);

		off += e->total_len;
		if (e->kind == BLPG_ENTRY_WRAP)
			continue;
		if (e->seq_first > last_seq)
			break;
		if (e->kind == BLPG_ENTRY_DDL && e->seq_first >= first_seq)
		{
			blpg_entry_view v;
			acked_ddl  *a = palloc0(sizeof(acked_ddl));

			blpg_entry_view_init(&v, e);
			a->file = pnstrdup(v.file, e->file_len);
			a->pos = e->event_pos;
			a->gtid = pnstrdup(v.gtid, e->gtid_len);
			blpg_entry_ddl_text(&v, &a->db, &a->sql);
			a->server_collation = e->ddl_server_collation;
			ddls = lappend(ddls, a);
		}
	}
	LWLockRelease(&slot->lock);
	if (ddls == NIL)
		return;
	/* its name now: blpg_state_save() holds the lock RENAME takes */
	server = GetForeignServerExtended(serverid, FSV_MISSING_OK);
	if (server == NULL)
		return;
	server_name = server->servername;
	defs = load_defs(server_name, CurrentMemoryContext);
	foreach(lc, ddls)
	{
		acked_ddl  *a = lfirst(lc);
		ListCell   *k;

		foreach(k, defs)
			((hdef *) lfirst(k))->changed = false;
		apply_statement(&defs, a->db, a->sql, a->server_collation);
		foreach(k, defs)
		{
			hdef	   *d = lfirst(k);

			if (d->changed)
				save_def(server_name, d, a->file, a->pos, a->gtid, a->sql);
		}
	}
}
