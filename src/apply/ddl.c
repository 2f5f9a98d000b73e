/*
 * ddl.c
 *	  DDL of the source, translated into PostgreSQL and applied in order with
 *	  the rows around it, when it concerns a synced table:
 *
 *	  CREATE DATABASE|SCHEMA [IF NOT EXISTS] db   (CREATE SCHEMA IF NOT EXISTS;
 *	      the source's include/exclude options decide which databases come)
 *	  DROP DATABASE|SCHEMA db      (stops apply when the schema exists here:
 *	      dropping a PostgreSQL schema is left to the user)
 *	  CREATE TABLE [IF NOT EXISTS] t (col type ..., PRIMARY KEY (...), ...)
 *	      in a schema that exists in PostgreSQL (after schema_map)
 *	  DROP TABLE [IF EXISTS] t [, ...]
 *	  RENAME TABLE a TO b [, ...]     ALTER TABLE a RENAME [TO|AS] b
 *	      (the table_mapping row follows; a table mapped elsewhere keeps
 *	      its target and only the mapping is renamed)
 *	  TRUNCATE [TABLE] t
 *	      (DROP TABLE and TRUNCATE end the open versions of the table's
 *	      history table, temporal.c)
 *	  ALTER TABLE t ADD [COLUMN] c type ... | ADD [COLUMN] (c type, ...)
 *	              (NOT NULL without DEFAULT: rows already there get MySQL's
 *	              implicit default)
 *	              | DROP [COLUMN] c | MODIFY [COLUMN] c type ...
 *	              | CHANGE [COLUMN] old new type ... | RENAME COLUMN a TO b
 *	              | ALTER [COLUMN] c SET DEFAULT v | DROP DEFAULT
 *	              | index and key clauses (no effect on the data: ignored)
 *	              | partition clauses that move no rows in or out: ignored
 *
 * A statement about a table that comes before the position of the table's
 * last load (snapshot(), sync_table()) is in the copy and is not applied
 * again (as its rows are not).
 *
 * Statements about tables that are not synced are ignored, and so are
 * triggers (with row-based binlogs their changes come as rows events).  A
 * statement about a synced table that is not understood, or that changes
 * rows without rows events (DROP/TRUNCATE/EXCHANGE/CONVERT PARTITION,
 * DISCARD/IMPORT TABLESPACE), stops apply with an error naming the
 * statement and its binlog position; after fixing the target the user skips
 * it with binlog_fdw.skip_change() (or fixes and retries).  Errors while a
 * translation runs name the MySQL statement and position too.
 *
 * The statements are parsed by the store's DDL parser (src/store/ddl_parse.c,
 * shared with the schema history); this file translates its result.
 *
 * Identifiers are quoted on the PostgreSQL side with quote_identifier():
 * names with quotes, semicolons or spaces are applied as names, never as
 * SQL.
 */
#include "apply/apply.h"

#include "bl_charset.h"

#include "catalog/namespace.h"
#include "executor/spi.h"
#include "foreign/foreign.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

/* ---- context ---- */

typedef struct ddl_ctx
{
	blpg_targets *ts;
	const blpg_apply_options *opts;
	const blpg_entry_view *v;
	const char *server_name;
	const char *sql;
	const char *db;				/* default database of the statement */
	List	   *commands;		/* PostgreSQL statements to run */
	bool		touched;		/* some statement is about a synced table */
	const char *running;		/* the PostgreSQL statement being run */
	bool		in_copy;		/* synced_table(): false as the statement is
								 * in the table's copy */
} ddl_ctx;

/*
 * Errors name the source and the binlog position, and while a translation
 * runs (SPI names the PostgreSQL statement) the MySQL statement too.
 */
static void
ddl_error_context(void *arg)
{
	ddl_ctx    *c = arg;
	const blpg_entry_view *v = c->v;

	if (c->running)
		errcontext("translated DDL statement of source \"%s\" at binlog %.*s position %llu%s%.*s: %s",
				   c->server_name, (int) v->e->file_len, v->file,
				   (unsigned long long) v->e->event_pos,
				   v->e->gtid_len ? ", GTID " : "", (int) v->e->gtid_len, v->gtid, c->sql);
	else
		errcontext("DDL statement of source \"%s\" at binlog %.*s position %llu%s%.*s",
				   c->server_name, (int) v->e->file_len, v->file,
				   (unsigned long long) v->e->event_pos,
				   v->e->gtid_len ? ", GTID " : "", (int) v->e->gtid_len, v->gtid);
}

static void
ddl_unsupported(ddl_ctx *c, const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot apply DDL statement of source \"%s\": %s", c->server_name, why),
			 errdetail("Statement: %s", c->sql),
			 errhint("Change the target table by hand to match, then skip the statement with SELECT binlog_fdw.skip_change(%s) and apply again.",
					 quote_literal_cstr(c->server_name))));
}

/* The PostgreSQL schema of a MySQL database (after schema_map). */
static const char *
pg_schema(ddl_ctx *c, const char *db)
{
	ListCell   *lc;

	foreach(lc, c->opts->schema_map)
	{
		List	   *pair = lfirst(lc);

		if (strcmp(strVal(linitial(pair)), db) == 0)
			return strVal(lsecond(pair));
	}
	return db;
}

/*
 * A source table's row of binlog_fdw.table_mapping, read and changed as the
 * extension's owner (the applying role needs no privileges on it).
 */
typedef struct mapping_call
{
	const char *server_name;
	const char *db;
	const char *name;
	const char *new_db;			/* rename: the new name */
	const char *new_name;
	bool		retarget;		/* rename: the target follows the new name */
	MemoryContext cxt;			/* for the results */
	bool		found;
	char	   *target_schema;	/* NULL: the default */
	char	   *target_table;
	bool		skip;
} mapping_call;

static void
mapping_get_fn(void *arg)
{
	mapping_call *m = arg;
	Oid			argtypes[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		args[3];

	args[0] = CStringGetTextDatum(m->server_name);
	args[1] = CStringGetTextDatum(m->db);
	args[2] = CStringGetTextDatum(m->name);
	m->found = false;
	if (SPI_execute_with_args("SELECT target_schema, target_table, skip FROM binlog_fdw.table_mapping "
							  "WHERE server_name = $1 AND source_schema = $2 AND source_table = $3",
							  3, argtypes, args, NULL, true, 1) == SPI_OK_SELECT && SPI_processed == 1)
	{
		char	   *ts = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		char	   *tt = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
		char	   *skip = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3);

		m->found = true;
		m->target_schema = ts ? MemoryContextStrdup(m->cxt, ts) : NULL;
		m->target_table = tt ? MemoryContextStrdup(m->cxt, tt) : NULL;
		m->skip = skip && skip[0] == 't';
	}
}

/* The mapping of a renamed table follows it (a stale row of the new name goes). */
static void
mapping_rename_fn(void *arg)
{
	mapping_call *m = arg;
	Oid			argtypes[7] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, BOOLOID, TEXTOID};
	Datum		args[7];

	args[0] = CStringGetTextDatum(m->server_name);
	args[1] = CStringGetTextDatum(m->db);
	args[2] = CStringGetTextDatum(m->name);
	args[3] = CStringGetTextDatum(m->new_db);
	args[4] = CStringGetTextDatum(m->new_name);
	args[5] = BoolGetDatum(m->retarget);
	args[6] = CStringGetTextDatum(m->target_schema ? m->target_schema : "");
	if (SPI_execute_with_args("DELETE FROM binlog_fdw.table_mapping "
							  "WHERE server_name = $1 AND source_schema = $4 AND source_table = $5 "
							  "AND ($2, $3) <> ($4, $5)",
							  5, argtypes, args, NULL, false, 0) < 0 ||
		SPI_execute_with_args("UPDATE binlog_fdw.table_mapping SET source_schema = $4, source_table = $5, "
							  "target_schema = CASE WHEN $6 THEN $7 ELSE target_schema END, "
							  "target_table = CASE WHEN $6 THEN $5 ELSE target_table END "
							  "WHERE server_name = $1 AND source_schema = $2 AND source_table = $3",
							  7, argtypes, args, NULL, false, 0) < 0)
		elog(ERROR, "could not update binlog_fdw.table_mapping");
}

static void
get_mapping(ddl_ctx *c, const char *db, const char *name, mapping_call *m)
{
	memset(m, 0, sizeof(*m));
	m->server_name = c->server_name;
	m->db = db;
	m->name = name;
	m->cxt = CurrentMemoryContext;
	blpg_run_as_owner(mapping_get_fn, m);
}

/* The target of db.name if it exists: a mapping or the same name. */
static bool
synced_table(ddl_ctx *c, const char *db, const char *name, char **qualified)
{
	const char *schema;
	Oid			nsp;
	Oid			rel = InvalidOid;
	mapping_call m;

	/*
	 * A statement before the position of the table's last load is in the
	 * copy (the copy was taken after it): not applied again.
	 */
	c->in_copy = blpg_change_in_copy(c->ts, db, name, c->v);
	if (c->in_copy)
		return false;
	/* a mapping overrides */
	get_mapping(c, db, name, &m);
	if (m.found)
	{
		if (m.skip)
			return false;
		if (m.target_schema && m.target_table)
		{
			nsp = get_namespace_oid(m.target_schema, true);
			if (OidIsValid(nsp) && OidIsValid(get_relname_relid(m.target_table, nsp)))
			{
				*qualified = psprintf("%s.%s", quote_identifier(m.target_schema),
									  quote_identifier(m.target_table));
				return true;
			}
			return false;
		}
	}
	schema = pg_schema(c, db);
	nsp = get_namespace_oid(schema, true);
	if (OidIsValid(nsp))
		rel = get_relname_relid(name, nsp);
	if (!OidIsValid(rel))
		return false;
	*qualified = psprintf("%s.%s", quote_identifier(schema), quote_identifier(name));
	return true;
}

/*
 * A parsed column definition as PostgreSQL: "name pgtype [DEFAULT ...]
 * [NOT NULL]" (only "name pgtype" for_alter_type).
 */
static char *
column_sql(ddl_ctx *c, const blpg_ddl_column *col, bool for_alter_type,
		   const char **pgtype_out, char **default_out)
{
	const char *pgtype = blpg_map_type(col->type, c->opts);
	StringInfoData out;
	char	   *def = NULL;

	if (col->generated)
		ddl_unsupported(c, psprintf("column \"%s\" is generated", col->name));
	if (pgtype == NULL)
		ddl_unsupported(c, psprintf("column \"%s\" has type %s, which has no mapping",
									col->name, col->type));
	if (col->def == BLPG_DEF_STRING)
		def = quote_literal_cstr(col->default_text);
	else if (col->def == BLPG_DEF_NUMBER)
		def = col->default_text;
	else if (col->def == BLPG_DEF_NOW)
		def = "now()";
	/* an old default may not fit the new type: types come first */
	if (def && strcmp(pgtype, "boolean") == 0)
		def = psprintf("(%s)::integer::boolean", def);
	if (pgtype_out)
		*pgtype_out = pgtype;
	if (default_out)
		*default_out = def;
	initStringInfo(&out);
	appendStringInfo(&out, "%s %s", quote_identifier(col->name), pgtype);
	if (!for_alter_type)
	{
		if (def)
			appendStringInfo(&out, " DEFAULT %s", def);
		if (col->notnull)
			appendStringInfoString(&out, " NOT NULL");
	}
	return out.data;
}

static void
create_table(ddl_ctx *c, const blpg_ddl *d)
{
	const char *schema;
	StringInfoData sql;
	bool		first = true;
	char	   *existing;
	ListCell   *lc;

	if (d->name == NULL)
		ddl_unsupported(c, d->unsupported);
	schema = pg_schema(c, d->db);
	if (!OidIsValid(get_namespace_oid(schema, true)))
		return;					/* a database that is not synced */
	if (synced_table(c, d->db, d->name, &existing) || c->in_copy)
		return;					/* exists already (IF NOT EXISTS, or a snapshot made
								 * it), or the statement is in a load's copy */
	if (d->unsupported)
		ddl_unsupported(c, d->unsupported);
	c->touched = true;
	initStringInfo(&sql);
	appendStringInfo(&sql, "CREATE TABLE %s.%s (", quote_identifier(schema), quote_identifier(d->name));
	foreach(lc, d->columns)
	{
		appendStringInfo(&sql, "%s%s", first ? "" : ", ",
						 column_sql(c, lfirst(lc), false, NULL, NULL));
		first = false;
	}
	if (d->pk != NIL)
	{
		bool		f = true;

		appendStringInfoString(&sql, ", PRIMARY KEY (");
		foreach(lc, d->pk)
		{
			appendStringInfo(&sql, "%s%s", f ? "" : ", ", quote_identifier(lfirst(lc)));
			f = false;
		}
		appendStringInfoChar(&sql, ')');
	}
	appendStringInfoChar(&sql, ')');
	c->commands = lappend(c->commands, sql.data);
}

static void
drop_table(ddl_ctx *c, const blpg_ddl *d)
{
	ListCell   *lc;

	foreach(lc, d->tables)
	{
		blpg_ddl_table_ref *r = lfirst(lc);
		char	   *q;

		if (synced_table(c, r->db, r->name, &q))
		{
			c->touched = true;
			c->commands = list_concat(c->commands,
									  blpg_history_end_all(c->server_name, r->db, r->name, "DROP", c->v));
			c->commands = lappend(c->commands, psprintf("DROP TABLE %s", q));
		}
	}
	if (d->unsupported)
		ddl_unsupported(c, d->unsupported);
}

/*
 * Run the PostgreSQL statements queued so far; queued triggers fire and the
 * targets close before tables change.
 */
static void
run_commands(ddl_ctx *c)
{
	ListCell   *lc;

	if (c->commands == NIL)
		return;
	blpg_targets_invalidate(c->ts);
	foreach(lc, c->commands)
	{
		const char *cmd = lfirst(lc);

		elog(DEBUG1, "binlog_fdw source %s: %s", c->server_name, cmd);
		c->running = cmd;
		if (SPI_execute(cmd, false, 0) < 0)
			ddl_unsupported(c, psprintf("PostgreSQL statement failed: %s", cmd));
		c->running = NULL;
	}
	list_free(c->commands);
	c->commands = NIL;
	CommandCounterIncrement();
	blpg_targets_invalidate(c->ts);
}

static void
rename_one(ddl_ctx *c, const char *db, const char *name, const char *ndb, const char *nname)
{
	char	   *q;
	mapping_call m;

	if (!synced_table(c, db, name, &q))
		return;
	c->touched = true;
	get_mapping(c, db, name, &m);
	m.new_db = ndb;
	m.new_name = nname;
	if (m.found && m.target_schema && m.target_table &&
		(strcmp(m.target_schema, pg_schema(c, db)) != 0 || strcmp(m.target_table, name) != 0))
	{
		/* mapped elsewhere by the user: the target stays, the mapping follows */
		m.retarget = false;
		blpg_run_as_owner(mapping_rename_fn, &m);
		return;
	}
	if (strcmp(pg_schema(c, db), pg_schema(c, ndb)) != 0)
		c->commands = lappend(c->commands, psprintf("ALTER TABLE %s SET SCHEMA %s", q,
													quote_identifier(pg_schema(c, ndb))));
	if (strcmp(name, nname) != 0)
		c->commands = lappend(c->commands,
							  psprintf("ALTER TABLE %s.%s RENAME TO %s",
									   quote_identifier(pg_schema(c, ndb)), quote_identifier(name),
									   quote_identifier(nname)));
	if (m.found)
	{
		/* the mapping (the snapshot's position) follows the table */
		m.retarget = true;
		m.target_schema = (char *) pg_schema(c, ndb);
		blpg_run_as_owner(mapping_rename_fn, &m);
	}
	/* now: a later pair of the same statement may use the new name */
	run_commands(c);
}

static void
rename_table(ddl_ctx *c, const blpg_ddl *d)
{
	ListCell   *lc;

	foreach(lc, d->tables)
	{
		blpg_ddl_table_ref *r = lfirst(lc);

		rename_one(c, r->db, r->name, r->new_db, r->new_name);
	}
	if (d->unsupported)
		ddl_unsupported(c, d->unsupported);
}

static void
truncate_table(ddl_ctx *c, const blpg_ddl *d)
{
	char	   *q;

	if (d->name == NULL)
		ddl_unsupported(c, d->unsupported);
	if (synced_table(c, d->db, d->name, &q))
	{
		c->touched = true;
		c->commands = list_concat(c->commands,
								  blpg_history_end_all(c->server_name, d->db, d->name, "TRUNCATE", c->v));
		c->commands = lappend(c->commands, psprintf("TRUNCATE %s", q));
	}
}

/*
 * MySQL's implicit default of a NOT NULL column without DEFAULT, which the
 * rows already there get when it is added (NULL: none that fits).
 */
static char *
implicit_default(ddl_ctx *c, const blpg_ddl_column *col, const char *pgtype)
{
	const char *t = col->type;

	if (pg_strncasecmp(t, "enum", 4) == 0)
	{
		/* the first member */
		if (col->members != NIL)
			return quote_literal_cstr(linitial(col->members));
		return NULL;
	}
	if (strcmp(pgtype, "smallint") == 0 || strcmp(pgtype, "integer") == 0 ||
		strcmp(pgtype, "bigint") == 0 || strncmp(pgtype, "numeric", 7) == 0 ||
		strcmp(pgtype, "real") == 0 || strcmp(pgtype, "double precision") == 0)
		return "0";
	if (strcmp(pgtype, "boolean") == 0)
		return "false";
	if (strncmp(pgtype, "varchar", 7) == 0 || strcmp(pgtype, "text") == 0)
		return "''";
	if (strcmp(pgtype, "text[]") == 0)
		return "'{}'";
	if (strncmp(pgtype, "interval", 8) == 0 || strncmp(pgtype, "time(", 5) == 0)
		return "'00:00:00'";
	if (strncmp(pgtype, "bit varying(", 12) == 0)
	{
		int			n = atoi(pgtype + 12);
		StringInfoData b;

		initStringInfo(&b);
		appendStringInfoString(&b, "B'");
		for (int i = 0; i < Max(n, 1); i++)
			appendStringInfoChar(&b, '0');
		appendStringInfoChar(&b, '\'');
		return b.data;
	}
	if (strcmp(pgtype, "bytea") == 0)
	{
		/* BINARY(n): n zero bytes */
		if (pg_strncasecmp(t, "binary(", 7) == 0)
			return psprintf("decode(repeat('00', %d), 'hex')", atoi(t + 7));
		return "''::bytea";
	}
	if (c->opts->zero_date == BLPG_ZERO_NEG_INFINITY &&
		(strcmp(pgtype, "date") == 0 || strncmp(pgtype, "timestamp", 9) == 0))
		return "'-infinity'";
	return NULL;
}

/* ADD [COLUMN] name type ...: rows already there get MySQL's value */
static void
add_column(ddl_ctx *c, const blpg_ddl_clause *cl, const char *q)
{
	const blpg_ddl_column *col = cl->column;
	const char *pgtype;
	char	   *def,
			   *sql,
			   *implicit;

	sql = column_sql(c, col, false, &pgtype, &def);
	implicit = col->notnull && def == NULL ? implicit_default(c, col, pgtype) : NULL;
	c->commands = lappend(c->commands,
						  psprintf("ALTER TABLE %s ADD COLUMN %s%s%s%s", q,
								   cl->if_exists ? "IF NOT EXISTS " : "", sql,
								   implicit ? " DEFAULT " : "", implicit ? implicit : ""));
	if (implicit)
		c->commands = lappend(c->commands,
							  psprintf("ALTER TABLE %s ALTER COLUMN %s DROP DEFAULT", q,
									   quote_identifier(col->name)));
}

static void
alter_table(ddl_ctx *c, const blpg_ddl *d)
{
	char	   *q;
	ListCell   *lc;

	if (d->name == NULL)
		ddl_unsupported(c, d->unsupported);
	if (!synced_table(c, d->db, d->name, &q))
		return;
	c->touched = true;
	foreach(lc, d->clauses)
	{
		const blpg_ddl_clause *cl = lfirst(lc);

		switch (cl->kind)
		{
			case BLPG_ALTER_ADD_COLUMN:
				add_column(c, cl, q);
				break;
			case BLPG_ALTER_DROP_COLUMN:
				c->commands = lappend(c->commands,
									  psprintf("ALTER TABLE %s DROP COLUMN %s%s", q,
											   cl->if_exists ? "IF EXISTS " : "",
											   quote_identifier(cl->name)));
				break;
			case BLPG_ALTER_MODIFY_COLUMN:
				{
					const char *newcol = cl->column->name;
					const char *pgtype;
					char	   *def;

					(void) column_sql(c, cl->column, true, &pgtype, &def);
					if (strcmp(cl->name, newcol) != 0)
						c->commands = lappend(c->commands,
											  psprintf("ALTER TABLE %s RENAME COLUMN %s TO %s", q,
													   quote_identifier(cl->name),
													   quote_identifier(newcol)));
					c->commands = lappend(c->commands,
										  psprintf("ALTER TABLE %s ALTER COLUMN %s DROP DEFAULT, "
												   "ALTER COLUMN %s TYPE %s USING %s::text::%s",
												   q, quote_identifier(newcol), quote_identifier(newcol),
												   pgtype, quote_identifier(newcol), pgtype));
					c->commands = lappend(c->commands,
										  psprintf("ALTER TABLE %s ALTER COLUMN %s %s NOT NULL", q,
												   quote_identifier(newcol),
												   cl->column->notnull ? "SET" : "DROP"));
					if (def)
						c->commands = lappend(c->commands,
											  psprintf("ALTER TABLE %s ALTER COLUMN %s SET DEFAULT %s", q,
													   quote_identifier(newcol), def));
				}
				break;
			case BLPG_ALTER_RENAME_COLUMN:
				c->commands = lappend(c->commands,
									  psprintf("ALTER TABLE %s RENAME COLUMN %s TO %s", q,
											   quote_identifier(cl->name),
											   quote_identifier(cl->new_name)));
				break;
			case BLPG_ALTER_SET_DEFAULT:
				if (cl->column->def == BLPG_DEF_STRING || cl->column->def == BLPG_DEF_NUMBER)
					c->commands = lappend(c->commands,
										  psprintf("ALTER TABLE %s ALTER COLUMN %s SET DEFAULT %s", q,
												   quote_identifier(cl->name),
												   cl->column->def == BLPG_DEF_STRING ?
												   quote_literal_cstr(cl->column->default_text) :
												   cl->column->default_text));
				break;
			case BLPG_ALTER_DROP_DEFAULT:
				c->commands = lappend(c->commands,
									  psprintf("ALTER TABLE %s ALTER COLUMN %s DROP DEFAULT", q,
											   quote_identifier(cl->name)));
				break;
			case BLPG_ALTER_RENAME_TABLE:
				rename_one(c, d->db, d->name, cl->new_db, cl->new_name);
				break;
			case BLPG_ALTER_CHARSET:
			case BLPG_ALTER_IGNORED:
				break;			/* the text is the same; no effect on the data */
			case BLPG_ALTER_ADD_PRIMARY_KEY:
			case BLPG_ALTER_DROP_PRIMARY_KEY:
				break;			/* the target keeps its key (apply finds rows by it) */
			case BLPG_ALTER_UNSUPPORTED:
				ddl_unsupported(c, cl->unsupported);
				break;
		}
	}
}

/*
 * A statement that changes rows, which the source logged as a statement
 * (a session with binlog_format STATEMENT or MIXED, such as one opened
 * before SET GLOBAL binlog_format = ROW): no rows event carries its rows,
 * so nothing here can apply them.  Passed over only when it is known to
 * write one table that is not synced, or one whose copy was taken after it
 * (the copy holds its effect); else an error, never a silent gap.
 */
static void
dml_statement(ddl_ctx *c, const blpg_ddl *d)
{
	char	   *qualified = NULL;

	if (d->name != NULL && !synced_table(c, d->db, d->name, &qualified))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("source \"%s\" logged a change of %s as a statement, not as rows",
					c->server_name,
					d->name ? psprintf("table %s.%s", d->db, d->name) :
					"tables it cannot name"),
			 errdetail("Statement: %s", c->sql),
			 errhint("The session that wrote it used binlog_format STATEMENT or MIXED (sessions opened before SET GLOBAL binlog_format = ROW keep their format). "
					 "Make every session log ROW (reconnect them), copy the table again with binlog_fdw.sync_table(), then apply again; "
					 "or skip the statement with SELECT binlog_fdw.skip_change(%s) once the target holds its effect.",
					 quote_literal_cstr(c->server_name))));
}

static void
create_database(ddl_ctx *c, const blpg_ddl *d)
{
	if (d->unsupported)
		ddl_unsupported(c, d->unsupported);
	c->commands = lappend(c->commands,
						  psprintf("CREATE SCHEMA IF NOT EXISTS %s",
								   quote_identifier(pg_schema(c, d->db))));
}

static void
drop_database(ddl_ctx *c, const blpg_ddl *d)
{
	if (OidIsValid(get_namespace_oid(pg_schema(c, d->db), true)))
		ddl_unsupported(c, psprintf("DROP DATABASE is not applied: schema %s holds the synced tables; drop it by hand if that is wanted",
									quote_identifier(pg_schema(c, d->db))));
}

void
blpg_apply_ddl(blpg_targets *ts, const blpg_entry_view *v, const char *server_name)
{
	const blpg_entry *e = v->e;
	const uint8 *payload = v->payload;
	uint32		dblen = (uint32) bl_load_le(payload, 4);
	const char *sqlraw = (const char *) payload + 4 + dblen;
	size_t		sqllen = e->payload_len - 4 - dblen;
	bl_buf		b;
	bl_error	err;
	const bl_charset *cs = bl_charset_by_collation(e->ddl_collation);
	ddl_ctx		c;
	blpg_ddl   *d;
	blpg_apply_options opts;
	ErrorContextCallback errcb;
	Oid			serverid = get_foreign_server_oid(server_name, false);

	while (sqllen > 0 && sqlraw[sqllen - 1] == '\0')
		sqllen--;
	bl_buf_init(&b);
	if (cs == NULL || bl_charset_to_utf8(cs, (const uint8 *) sqlraw, sqllen, &b, &err) != 0)
	{
		bl_buf_reset(&b);
		bl_charset_to_utf8(bl_charset_by_name("utf8mb4"), (const uint8 *) sqlraw, sqllen, &b, &err);
	}
	memset(&c, 0, sizeof(c));
	c.sql = pg_any_to_server(pnstrdup(b.data ? b.data : "", b.len), b.len, PG_UTF8);
	bl_buf_free(&b);
	c.db = pnstrdup((const char *) payload + 4, dblen);
	c.ts = ts;
	blpg_apply_options_load(serverid, &opts);
	c.opts = &opts;
	c.v = v;
	c.server_name = server_name;

	d = blpg_ddl_parse(c.sql, c.db);
	errcb.callback = ddl_error_context;
	errcb.arg = &c;
	errcb.previous = error_context_stack;
	error_context_stack = &errcb;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (d->fk_action && d->name && !blpg_change_in_copy(ts, d->db, d->name, v))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("MySQL table %s.%s of source \"%s\" gets a foreign key whose ON DELETE or ON UPDATE action changes its rows",
						d->db, d->name, server_name),
				 errdetail("Statement: %s. MySQL and MariaDB write the rows such an action changes to no binlog: the target would miss them.",
						   c.sql),
				 errhint("Give the foreign key ON DELETE RESTRICT / ON UPDATE RESTRICT on the source, copy the table again with binlog_fdw.sync_table(), then skip this statement with SELECT binlog_fdw.skip_change(%s).",
						 quote_literal_cstr(server_name))));
	switch (d->kind)
	{
		case BLPG_DDL_CREATE_TABLE:
			create_table(&c, d);
			break;
		case BLPG_DDL_DROP_TABLE:
			drop_table(&c, d);
			break;
		case BLPG_DDL_RENAME_TABLE:
			rename_table(&c, d);
			break;
		case BLPG_DDL_TRUNCATE:
			truncate_table(&c, d);
			break;
		case BLPG_DDL_ALTER_TABLE:
			alter_table(&c, d);
			break;
		case BLPG_DDL_CREATE_DATABASE:
			create_database(&c, d);
			break;
		case BLPG_DDL_DROP_DATABASE:
			drop_database(&c, d);
			break;

			/*
			 * Everything else is not data: indexes, views, users, and
			 * triggers (with row-based binlogs the rows a trigger changes
			 * come as rows events).
			 */
		case BLPG_DDL_ALTER_DATABASE:
		case BLPG_DDL_OTHER:
			break;
		case BLPG_DDL_DML:
			dml_statement(&c, d);
			break;
	}

	run_commands(&c);
	SPI_finish();
	error_context_stack = errcb.previous;
}
