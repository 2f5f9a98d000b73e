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

/* ---- tokens ---- */

typedef enum tok_kind
{
	T_END,
	T_WORD,						/* keyword or bare identifier */
	T_IDENT,					/* `quoted identifier` */
	T_STRING,					/* 'string' or "string" */
	T_NUMBER,
	T_PUNCT						/* ( ) , . ; = and others */
} tok_kind;

typedef struct token
{
	tok_kind	kind;
	char	   *text;			/* unquoted value */
	const char *start;			/* in the statement */
	const char *end;
} token;

typedef struct parser
{
	token	   *toks;
	int			ntoks;
	int			pos;
	const char *sql;
} parser;

static void
add_token(List **l, tok_kind kind, char *text, const char *start, const char *end)
{
	token	   *t = palloc(sizeof(token));

	t->kind = kind;
	t->text = text;
	t->start = start;
	t->end = end;
	*l = lappend(*l, t);
}

/* Split a MySQL statement into tokens; version comments are kept. */
static void
tokenize(parser *p, const char *sql)
{
	List	   *l = NIL;
	const char *s = sql;
	ListCell   *lc;
	int			i = 0;

	while (*s)
	{
		if (isspace((unsigned char) *s))
		{
			s++;
			continue;
		}
		if (s[0] == '/' && s[1] == '*')
		{
			if (s[2] == '!')
			{
				/* version comment: its contents count */
				s += 3;
				while (isdigit((unsigned char) *s))
					s++;
				continue;
			}
			s = strstr(s + 2, "*/");
			s = s ? s + 2 : sql + strlen(sql);
			continue;
		}
		if (s[0] == '*' && s[1] == '/')
		{
			s += 2;				/* end of a version comment */
			continue;
		}
		if ((s[0] == '-' && s[1] == '-' && (s[2] == ' ' || s[2] == '\t' || s[2] == '\0')) || s[0] == '#')
		{
			while (*s && *s != '\n')
				s++;
			continue;
		}
		if (*s == '`')
		{
			StringInfoData b;
			const char *start = s;

			initStringInfo(&b);
			s++;
			while (*s)
			{
				if (*s == '`' && s[1] == '`')
				{
					appendStringInfoChar(&b, '`');
					s += 2;
				}
				else if (*s == '`')
				{
					s++;
					break;
				}
				else
					appendStringInfoChar(&b, *s++);
			}
			add_token(&l, T_IDENT, b.data, start, s);
			continue;
		}
		if (*s == '\'' || *s == '"')
		{
			char		q = *s;
			StringInfoData b;
			const char *start = s;

			initStringInfo(&b);
			s++;
			while (*s)
			{
				if (*s == '\\' && s[1])
				{
					char		c = s[1];

					appendStringInfoChar(&b, c == 'n' ? '\n' : c == 't' ? '\t' :
										 c == '0' ? '\0' : c == 'r' ? '\r' : c);
					s += 2;
				}
				else if (*s == q && s[1] == q)
				{
					appendStringInfoChar(&b, q);
					s += 2;
				}
				else if (*s == q)
				{
					s++;
					break;
				}
				else
					appendStringInfoChar(&b, *s++);
			}
			add_token(&l, T_STRING, b.data, start, s);
			continue;
		}
		if (isdigit((unsigned char) *s) || (*s == '-' && isdigit((unsigned char) s[1])) ||
			(*s == '.' && isdigit((unsigned char) s[1])))
		{
			const char *start = s;

			s++;
			while (isalnum((unsigned char) *s) || *s == '.' ||
				   ((*s == '-' || *s == '+') && (s[-1] == 'e' || s[-1] == 'E')))
				s++;
			add_token(&l, T_NUMBER, pnstrdup(start, s - start), start, s);
			continue;
		}
		if (isalpha((unsigned char) *s) || *s == '_' || *s == '$' || (unsigned char) *s >= 0x80)
		{
			const char *start = s;

			while (isalnum((unsigned char) *s) || *s == '_' || *s == '$' || (unsigned char) *s >= 0x80)
				s++;
			add_token(&l, T_WORD, pnstrdup(start, s - start), start, s);
			continue;
		}
		add_token(&l, T_PUNCT, pnstrdup(s, 1), s, s + 1);
		s++;
	}
	p->sql = sql;
	p->ntoks = list_length(l);
	p->toks = palloc(sizeof(token) * (p->ntoks + 1));
	foreach(lc, l)
		p->toks[i++] = *(token *) lfirst(lc);
	p->toks[i].kind = T_END;
	p->toks[i].text = "";
	p->toks[i].start = p->toks[i].end = sql + strlen(sql);
	p->pos = 0;
}

static token *
peek(parser *p)
{
	return &p->toks[p->pos];
}

static token *
next(parser *p)
{
	token	   *t = &p->toks[p->pos];

	if (t->kind != T_END)
		p->pos++;
	return t;
}

/* Is the next token the keyword kw (case-insensitive, unquoted)? */
static bool
is_kw(parser *p, const char *kw)
{
	token	   *t = peek(p);

	return t->kind == T_WORD && pg_strcasecmp(t->text, kw) == 0;
}

static bool
accept_kw(parser *p, const char *kw)
{
	if (!is_kw(p, kw))
		return false;
	p->pos++;
	return true;
}

static bool
accept_punct(parser *p, const char *c)
{
	token	   *t = peek(p);

	if (t->kind == T_PUNCT && strcmp(t->text, c) == 0)
	{
		p->pos++;
		return true;
	}
	return false;
}

static bool
is_punct(parser *p, const char *c)
{
	token	   *t = peek(p);

	return t->kind == T_PUNCT && strcmp(t->text, c) == 0;
}

/* An identifier: quoted, or a bare word. */
static char *
ident(parser *p)
{
	token	   *t = peek(p);

	if (t->kind == T_IDENT || t->kind == T_WORD)
	{
		p->pos++;
		return t->text;
	}
	return NULL;
}

/* [db.]name; db defaults to the statement's database. */
static bool
table_name(parser *p, const char *default_db, char **db, char **name)
{
	char	   *a = ident(p);

	if (a == NULL)
		return false;
	if (accept_punct(p, "."))
	{
		char	   *b = ident(p);

		if (b == NULL)
			return false;
		*db = a;
		*name = b;
	}
	else
	{
		*db = (char *) default_db;
		*name = a;
	}
	return true;
}

/* Skip a balanced (...) group; the opening parenthesis is next. */
static void
skip_group(parser *p)
{
	int			depth = 0;

	do
	{
		token	   *t = next(p);

		if (t->kind == T_END)
			return;
		if (t->kind == T_PUNCT && strcmp(t->text, "(") == 0)
			depth++;
		else if (t->kind == T_PUNCT && strcmp(t->text, ")") == 0)
			depth--;
	} while (depth > 0);
}

/* Skip to the next top-level comma or closing parenthesis or end. */
static void
skip_to_comma(parser *p)
{
	while (peek(p)->kind != T_END && !is_punct(p, ",") && !is_punct(p, ")"))
	{
		if (is_punct(p, "("))
			skip_group(p);
		else
			next(p);
	}
}

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
	char	   *mysql_type;		/* type of the last column_def() */
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
 * A column definition: name type [attributes] -> "name pgtype [NOT NULL]
 * [DEFAULT ...]"; *pk set for an inline PRIMARY KEY.
 */
static char *
column_def(ddl_ctx *c, parser *p, const char *col, bool *pk, bool for_alter_type,
		   char **pgtype_out, char **default_out, bool *notnull_out)
{
	token	   *tt = next(p);
	StringInfoData type;
	const char *pgtype;
	StringInfoData out;
	bool		notnull = false;
	char	   *def = NULL;

	if (tt->kind != T_WORD)
		ddl_unsupported(c, psprintf("column \"%s\" has no type", col));
	initStringInfo(&type);
	appendStringInfoString(&type, tt->text);
	if (is_punct(p, "("))
	{
		const char *start = peek(p)->start;

		skip_group(p);
		appendBinaryStringInfo(&type, start, p->toks[p->pos - 1].end - start);
	}
	while (is_kw(p, "unsigned") || is_kw(p, "signed") || is_kw(p, "zerofill") ||
		   is_kw(p, "precision") || is_kw(p, "varying"))
		appendStringInfo(&type, " %s", next(p)->text);
	c->mysql_type = type.data;
	pgtype = blpg_map_type(type.data, c->opts);
	if (pgtype == NULL)
		ddl_unsupported(c, psprintf("column \"%s\" has type %s, which has no mapping", col, type.data));

	while (peek(p)->kind != T_END && !is_punct(p, ",") && !is_punct(p, ")"))
	{
		if (accept_kw(p, "not"))
		{
			if (accept_kw(p, "null"))
				notnull = true;
		}
		else if (accept_kw(p, "null"))
			notnull = false;
		else if (accept_kw(p, "default"))
		{
			token	   *d = next(p);

			if (d->kind == T_STRING)
				def = quote_literal_cstr(d->text);
			else if (d->kind == T_NUMBER)
				def = d->text;
			else if (d->kind == T_WORD && (pg_strcasecmp(d->text, "current_timestamp") == 0 ||
										   pg_strcasecmp(d->text, "now") == 0))
			{
				def = "now()";
				if (is_punct(p, "("))
					skip_group(p);
			}
			else if (d->kind == T_WORD && pg_strcasecmp(d->text, "null") == 0)
				def = NULL;
			else if (d->kind == T_PUNCT && strcmp(d->text, "(") == 0)
			{
				/* an expression default: not carried over */
				p->pos--;
				skip_group(p);
			}
		}
		else if (accept_kw(p, "primary"))
		{
			accept_kw(p, "key");
			*pk = true;
			notnull = true;
		}
		else if (accept_kw(p, "generated") || accept_kw(p, "as"))
			ddl_unsupported(c, psprintf("column \"%s\" is generated", col));
		else if (accept_kw(p, "character") || accept_kw(p, "charset") || accept_kw(p, "collate") ||
				 accept_kw(p, "comment"))
		{
			accept_kw(p, "set");
			next(p);
		}
		else if (accept_kw(p, "on"))
		{
			accept_kw(p, "update");
			next(p);
			if (is_punct(p, "("))
				skip_group(p);
		}
		else if (is_punct(p, "("))
			skip_group(p);
		else
			next(p);			/* AUTO_INCREMENT, UNIQUE, KEY, INVISIBLE, ... */
	}
	/* an old default may not fit the new type: types come first */
	if (def && strcmp(pgtype, "boolean") == 0)
		def = psprintf("(%s)::integer::boolean", def);
	if (pgtype_out)
		*pgtype_out = (char *) pgtype;
	if (default_out)
		*default_out = def;
	if (notnull_out)
		*notnull_out = notnull;
	initStringInfo(&out);
	appendStringInfo(&out, "%s %s", quote_identifier(col), pgtype);
	if (!for_alter_type)
	{
		if (def)
			appendStringInfo(&out, " DEFAULT %s", def);
		if (notnull)
			appendStringInfoString(&out, " NOT NULL");
	}
	return out.data;
}

static void
create_table(ddl_ctx *c, parser *p)
{
	bool		if_not_exists = false;
	char	   *db,
			   *name;
	const char *schema;
	StringInfoData sql;
	List	   *pk = NIL;
	bool		first = true;
	char	   *existing;

	if (accept_kw(p, "if"))
	{
		accept_kw(p, "not");
		accept_kw(p, "exists");
		if_not_exists = true;
	}
	if (!table_name(p, c->db, &db, &name))
		ddl_unsupported(c, "no table name");
	schema = pg_schema(c, db);
	if (!OidIsValid(get_namespace_oid(schema, true)))
		return;					/* a database that is not synced */
	if (synced_table(c, db, name, &existing) || c->in_copy)
	{
		if (if_not_exists)
			return;
		/* the target exists already (created by a snapshot): fine */
		return;
	}
	if (accept_kw(p, "like") || !is_punct(p, "("))
		ddl_unsupported(c, "CREATE TABLE ... LIKE and CREATE TABLE ... SELECT are not translated");
	c->touched = true;
	accept_punct(p, "(");
	initStringInfo(&sql);
	appendStringInfo(&sql, "CREATE TABLE %s.%s (", quote_identifier(schema), quote_identifier(name));
	while (peek(p)->kind != T_END && !is_punct(p, ")"))
	{
		if (accept_kw(p, "primary"))
		{
			accept_kw(p, "key");
			if (is_kw(p, "using"))
			{
				next(p);
				next(p);
			}
			if (accept_punct(p, "("))
			{
				while (!is_punct(p, ")") && peek(p)->kind != T_END)
				{
					char	   *col = ident(p);

					if (col)
						pk = lappend(pk, col);
					if (is_punct(p, "("))
						skip_group(p);	/* prefix length */
					accept_kw(p, "asc");
					accept_kw(p, "desc");
					accept_punct(p, ",");
				}
				accept_punct(p, ")");
			}
			skip_to_comma(p);
		}
		else if (is_kw(p, "key") || is_kw(p, "index") || is_kw(p, "unique") ||
				 is_kw(p, "constraint") || is_kw(p, "foreign") || is_kw(p, "fulltext") ||
				 is_kw(p, "spatial") || is_kw(p, "check") || is_kw(p, "period"))
			skip_to_comma(p);	/* indexes and constraints are not data */
		else
		{
			char	   *col = ident(p);
			bool		inline_pk = false;

			if (col == NULL)
				ddl_unsupported(c, "a column definition could not be read");
			appendStringInfo(&sql, "%s%s", first ? "" : ", ",
							 column_def(c, p, col, &inline_pk, false, NULL, NULL, NULL));
			first = false;
			if (inline_pk)
				pk = lappend(pk, col);
		}
		accept_punct(p, ",");
	}
	if (pk != NIL)
	{
		ListCell   *lc;
		bool		f = true;

		appendStringInfoString(&sql, ", PRIMARY KEY (");
		foreach(lc, pk)
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
drop_table(ddl_ctx *c, parser *p)
{
	if (accept_kw(p, "if"))
		accept_kw(p, "exists");
	do
	{
		char	   *db,
				   *name,
				   *q;

		if (!table_name(p, c->db, &db, &name))
			ddl_unsupported(c, "no table name");
		if (synced_table(c, db, name, &q))
		{
			c->touched = true;
			c->commands = lappend(c->commands, psprintf("DROP TABLE %s", q));
		}
	} while (accept_punct(p, ","));
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
rename_table(ddl_ctx *c, parser *p)
{
	do
	{
		char	   *db,
				   *name,
				   *ndb,
				   *nname;

		if (!table_name(p, c->db, &db, &name) || !accept_kw(p, "to") ||
			!table_name(p, c->db, &ndb, &nname))
			ddl_unsupported(c, "RENAME TABLE could not be read");
		rename_one(c, db, name, ndb, nname);
	} while (accept_punct(p, ","));
}

static void
truncate_table(ddl_ctx *c, parser *p)
{
	char	   *db,
			   *name,
			   *q;

	accept_kw(p, "table");
	if (!table_name(p, c->db, &db, &name))
		ddl_unsupported(c, "no table name");
	if (synced_table(c, db, name, &q))
	{
		c->touched = true;
		c->commands = lappend(c->commands, psprintf("TRUNCATE %s", q));
	}
}

/*
 * MySQL's implicit default of a NOT NULL column without DEFAULT, which the
 * rows already there get when it is added (NULL: none that fits).
 */
static char *
implicit_default(ddl_ctx *c, const char *pgtype)
{
	const char *t = c->mysql_type ? c->mysql_type : "";

	if (pg_strncasecmp(t, "enum", 4) == 0)
	{
		/* the first member */
		parser		ep;

		tokenize(&ep, t);
		next(&ep);
		if (accept_punct(&ep, "(") && peek(&ep)->kind == T_STRING)
			return quote_literal_cstr(peek(&ep)->text);
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
add_column(ddl_ctx *c, parser *p, const char *q, bool if_not_exists)
{
	char	   *col = ident(p);
	bool		pk = false;
	char	   *pgtype,
			   *def,
			   *sql,
			   *implicit;
	bool		notnull;

	if (col == NULL)
		ddl_unsupported(c, "ADD COLUMN could not be read");
	sql = column_def(c, p, col, &pk, false, &pgtype, &def, &notnull);
	implicit = notnull && def == NULL ? implicit_default(c, pgtype) : NULL;
	c->commands = lappend(c->commands,
						  psprintf("ALTER TABLE %s ADD COLUMN %s%s%s%s", q,
								   if_not_exists ? "IF NOT EXISTS " : "", sql,
								   implicit ? " DEFAULT " : "", implicit ? implicit : ""));
	if (implicit)
		c->commands = lappend(c->commands,
							  psprintf("ALTER TABLE %s ALTER COLUMN %s DROP DEFAULT", q,
									   quote_identifier(col)));
}

/* Skip to the end of the statement. */
static void
skip_to_end(parser *p)
{
	while (peek(p)->kind != T_END)
		next(p);
}

/*
 * Partition clauses of ALTER TABLE (always its last clause).  Those that
 * only move rows between partitions of the table change no data and are
 * ignored; those that remove or bring rows without rows events stop apply.
 * Returns true if the clause was one.
 */
static bool
partition_clause(ddl_ctx *c, parser *p)
{
	static const char *const harmless[] = {"add", "reorganize", "coalesce", "analyze", "check",
	"optimize", "rebuild", "repair", NULL};
	int			start = p->pos;

	if (accept_kw(p, "partition"))
	{
		if (accept_kw(p, "by"))
		{
			skip_to_end(p);		/* PARTITION BY ...: the rows stay */
			return true;
		}
		p->pos = start;
		return false;
	}
	if (accept_kw(p, "remove"))
	{
		if (accept_kw(p, "partitioning"))
			return true;
		p->pos = start;
		return false;
	}
	if (accept_kw(p, "drop") || accept_kw(p, "truncate"))
	{
		if (accept_kw(p, "partition"))
			ddl_unsupported(c, psprintf("%s PARTITION removes rows from the table without rows events, so the target would keep them",
										pg_strcasecmp(p->toks[start].text, "drop") == 0 ? "DROP" : "TRUNCATE"));
		p->pos = start;
		return false;
	}
	if (accept_kw(p, "exchange"))
	{
		if (accept_kw(p, "partition"))
			ddl_unsupported(c, "EXCHANGE PARTITION swaps rows between tables without rows events");
		p->pos = start;
		return false;
	}
	if (accept_kw(p, "convert"))
	{
		if (accept_kw(p, "partition") || accept_kw(p, "table"))
			ddl_unsupported(c, "CONVERT PARTITION/TABLE moves rows between tables without rows events");
		p->pos = start;
		return false;
	}
	if (accept_kw(p, "discard") || accept_kw(p, "import"))
	{
		if (is_kw(p, "partition") || is_kw(p, "tablespace"))
			ddl_unsupported(c, "DISCARD/IMPORT TABLESPACE removes or brings rows without rows events");
		p->pos = start;
		return false;
	}
	for (int i = 0; harmless[i]; i++)
		if (accept_kw(p, harmless[i]))
		{
			if (accept_kw(p, "partition"))
			{
				skip_to_end(p);
				return true;
			}
			p->pos = start;
			return false;
		}
	return false;
}

static void
alter_table(ddl_ctx *c, parser *p)
{
	char	   *db,
			   *name,
			   *q;

	if (!table_name(p, c->db, &db, &name))
		ddl_unsupported(c, "no table name");
	if (!synced_table(c, db, name, &q))
		return;
	c->touched = true;
	do
	{
		bool		if_not_exists = false;

		if (partition_clause(c, p))
			break;				/* partition clauses come last */
		if (accept_kw(p, "add"))
		{
			if (is_kw(p, "index") || is_kw(p, "key") || is_kw(p, "unique") || is_kw(p, "constraint") ||
				is_kw(p, "primary") || is_kw(p, "foreign") || is_kw(p, "fulltext") ||
				is_kw(p, "spatial") || is_kw(p, "check"))
			{
				skip_to_comma(p);
				continue;
			}
			accept_kw(p, "column");
			if (accept_kw(p, "if"))
			{
				accept_kw(p, "not");
				accept_kw(p, "exists");
				if_not_exists = true;
			}
			if (accept_punct(p, "("))
			{
				do
					add_column(c, p, q, if_not_exists);
				while (accept_punct(p, ","));
				accept_punct(p, ")");
			}
			else
			{
				add_column(c, p, q, if_not_exists);
				accept_kw(p, "first");
				if (accept_kw(p, "after"))
					ident(p);
			}
		}
		else if (accept_kw(p, "drop"))
		{
			if (is_kw(p, "index") || is_kw(p, "key") || is_kw(p, "primary") || is_kw(p, "foreign") ||
				is_kw(p, "constraint") || is_kw(p, "check"))
			{
				skip_to_comma(p);
				continue;
			}
			accept_kw(p, "column");
			{
				bool		if_exists = accept_kw(p, "if") && accept_kw(p, "exists");
				char	   *col = ident(p);

				if (col == NULL)
					ddl_unsupported(c, "DROP COLUMN could not be read");
				c->commands = lappend(c->commands,
									  psprintf("ALTER TABLE %s DROP COLUMN %s%s", q,
											   if_exists ? "IF EXISTS " : "", quote_identifier(col)));
			}
		}
		else if (accept_kw(p, "modify") || is_kw(p, "change"))
		{
			bool		change = accept_kw(p, "change");
			char	   *col,
					   *newcol;
			bool		pk = false;
			char	   *pgtype,
					   *def;
			bool		notnull;

			accept_kw(p, "column");
			col = ident(p);
			newcol = change ? ident(p) : col;
			if (col == NULL || newcol == NULL)
				ddl_unsupported(c, "MODIFY/CHANGE COLUMN could not be read");
			(void) column_def(c, p, newcol, &pk, true, &pgtype, &def, &notnull);
			if (strcmp(col, newcol) != 0)
				c->commands = lappend(c->commands,
									  psprintf("ALTER TABLE %s RENAME COLUMN %s TO %s", q,
											   quote_identifier(col), quote_identifier(newcol)));
			c->commands = lappend(c->commands,
								  psprintf("ALTER TABLE %s ALTER COLUMN %s DROP DEFAULT, "
										   "ALTER COLUMN %s TYPE %s USING %s::text::%s",
										   q, quote_identifier(newcol), quote_identifier(newcol),
										   pgtype, quote_identifier(newcol), pgtype));
			c->commands = lappend(c->commands,
								  psprintf("ALTER TABLE %s ALTER COLUMN %s %s NOT NULL", q,
										   quote_identifier(newcol), notnull ? "SET" : "DROP"));
			if (def)
				c->commands = lappend(c->commands,
									  psprintf("ALTER TABLE %s ALTER COLUMN %s SET DEFAULT %s", q,
											   quote_identifier(newcol), def));
			accept_kw(p, "first");
			if (accept_kw(p, "after"))
				ident(p);
		}
		else if (accept_kw(p, "rename"))
		{
			if (accept_kw(p, "column"))
			{
				char	   *a = ident(p);
				char	   *b;

				if (!accept_kw(p, "to") || a == NULL || (b = ident(p)) == NULL)
					ddl_unsupported(c, "RENAME COLUMN could not be read");
				c->commands = lappend(c->commands,
									  psprintf("ALTER TABLE %s RENAME COLUMN %s TO %s", q,
											   quote_identifier(a), quote_identifier(b)));
			}
			else if (is_kw(p, "index") || is_kw(p, "key"))
				skip_to_comma(p);
			else
			{
				char	   *ndb,
						   *nname;

				if (!accept_kw(p, "to"))
					accept_kw(p, "as");
				if (!table_name(p, c->db, &ndb, &nname))
					ddl_unsupported(c, "RENAME could not be read");
				rename_one(c, db, name, ndb, nname);
			}
		}
		else if (accept_kw(p, "alter"))
		{
			char	   *col;

			accept_kw(p, "column");
			col = ident(p);
			if (col == NULL)
				ddl_unsupported(c, "ALTER COLUMN could not be read");
			if (accept_kw(p, "set"))
			{
				token	   *d;

				if (!accept_kw(p, "default"))
				{
					/* SET VISIBLE / INVISIBLE: no effect on the data */
					next(p);
					continue;
				}
				d = next(p);
				if (d->kind == T_STRING || d->kind == T_NUMBER)
					c->commands = lappend(c->commands,
										  psprintf("ALTER TABLE %s ALTER COLUMN %s SET DEFAULT %s", q,
												   quote_identifier(col),
												   d->kind == T_STRING ? quote_literal_cstr(d->text) : d->text));
			}
			else if (accept_kw(p, "drop"))
			{
				accept_kw(p, "default");
				c->commands = lappend(c->commands,
									  psprintf("ALTER TABLE %s ALTER COLUMN %s DROP DEFAULT", q,
											   quote_identifier(col)));
			}
			else
				skip_to_comma(p);
		}
		else if (is_kw(p, "engine") || is_kw(p, "auto_increment") || is_kw(p, "comment") ||
				 is_kw(p, "default") || is_kw(p, "character") || is_kw(p, "charset") ||
				 is_kw(p, "collate") || is_kw(p, "algorithm") || is_kw(p, "lock") ||
				 is_kw(p, "row_format") || is_kw(p, "force") || is_kw(p, "key_block_size") ||
				 is_kw(p, "enable") || is_kw(p, "disable") || is_kw(p, "order"))
			skip_to_comma(p);	/* table options: no effect on the data */
		else if (is_kw(p, "convert"))
			skip_to_comma(p);	/* charset conversion: the text is the same */
		else
			ddl_unsupported(c, psprintf("ALTER TABLE clause \"%s\" is not translated",
										peek(p)->kind == T_END ? "" : peek(p)->text));
	} while (accept_punct(p, ","));
}

static void
create_database(ddl_ctx *c, parser *p)
{
	token	   *t;

	if (accept_kw(p, "if"))
	{
		accept_kw(p, "not");
		accept_kw(p, "exists");
	}
	t = next(p);
	if (t->kind != T_WORD && t->kind != T_IDENT)
		ddl_unsupported(c, "no database name");
	c->commands = lappend(c->commands,
						  psprintf("CREATE SCHEMA IF NOT EXISTS %s",
								   quote_identifier(pg_schema(c, t->text))));
}

static void
drop_database(ddl_ctx *c, parser *p)
{
	token	   *t;

	if (accept_kw(p, "if"))
		accept_kw(p, "exists");
	t = next(p);
	if (t->kind != T_WORD && t->kind != T_IDENT)
		return;
	if (OidIsValid(get_namespace_oid(pg_schema(c, t->text), true)))
		ddl_unsupported(c, psprintf("DROP DATABASE is not applied: schema %s holds the synced tables; drop it by hand if that is wanted",
									quote_identifier(pg_schema(c, t->text))));
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
	parser		p;
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

	tokenize(&p, c.sql);
	errcb.callback = ddl_error_context;
	errcb.arg = &c;
	errcb.previous = error_context_stack;
	error_context_stack = &errcb;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (accept_kw(&p, "create"))
	{
		if (accept_kw(&p, "or"))
			accept_kw(&p, "replace");
		accept_kw(&p, "temporary");
		if (accept_kw(&p, "table"))
			create_table(&c, &p);
		else if (accept_kw(&p, "database") || accept_kw(&p, "schema"))
			create_database(&c, &p);
	}
	else if (accept_kw(&p, "drop"))
	{
		accept_kw(&p, "temporary");
		if (accept_kw(&p, "table") || accept_kw(&p, "tables"))
			drop_table(&c, &p);
		else if (accept_kw(&p, "database") || accept_kw(&p, "schema"))
			drop_database(&c, &p);
	}
	else if (accept_kw(&p, "rename"))
	{
		if (accept_kw(&p, "table") || accept_kw(&p, "tables"))
			rename_table(&c, &p);
	}
	else if (accept_kw(&p, "truncate"))
		truncate_table(&c, &p);
	else if (accept_kw(&p, "alter"))
	{
		accept_kw(&p, "online");
		accept_kw(&p, "ignore");
		if (accept_kw(&p, "table"))
			alter_table(&c, &p);
	}
	/*
	 * Everything else is not data: indexes, views, users, and triggers (with
	 * row-based binlogs the rows a trigger changes come as rows events).
	 */

	run_commands(&c);
	SPI_finish();
	error_context_stack = errcb.previous;
}
