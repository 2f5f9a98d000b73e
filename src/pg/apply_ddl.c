/*
 * apply_ddl.c
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
 *	  TRUNCATE [TABLE] t
 *	  ALTER TABLE t ADD [COLUMN] c type ... | ADD [COLUMN] (c type, ...)
 *	              | DROP [COLUMN] c | MODIFY [COLUMN] c type ...
 *	              | CHANGE [COLUMN] old new type ... | RENAME COLUMN a TO b
 *	              | ALTER [COLUMN] c SET DEFAULT v | DROP DEFAULT
 *	              | index and key clauses (no effect on the data: ignored)
 *
 * Statements about tables that are not synced are ignored.  A statement
 * about a synced table that is not understood stops apply with an error
 * naming the statement and its binlog position; after fixing the target the
 * user skips it with binlog_fdw.skip_change() (or fixes and retries).
 *
 * Identifiers are quoted on the PostgreSQL side with quote_identifier():
 * names with quotes, semicolons or spaces are applied as names, never as
 * SQL.
 */
#include "binlog_fdw.h"
#include "blpg_apply.h"
#include "blpg_typemap.h"

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
} ddl_ctx;

static void
ddl_unsupported(ddl_ctx *c, const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot apply DDL statement of source \"%s\": %s", c->server_name, why),
			 errdetail("Statement: %s", c->sql),
			 errcontext("binlog %.*s position %llu%s%.*s", (int) c->v->e->file_len, c->v->file,
						(unsigned long long) c->v->e->event_pos,
						c->v->e->gtid_len ? ", GTID " : "", (int) c->v->e->gtid_len, c->v->gtid),
			 errhint("Change the target table by hand to match, then skip the statement with SELECT binlog_fdw.skip_change('%s') and apply again.",
					 c->server_name)));
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

/* The target of db.name if it exists: a mapping or the same name. */
static bool
synced_table(ddl_ctx *c, const char *db, const char *name, char **qualified)
{
	const char *schema;
	Oid			nsp;
	Oid			rel = InvalidOid;
	Oid			argtypes[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		args[3];

	/* a mapping overrides */
	args[0] = CStringGetTextDatum(c->server_name);
	args[1] = CStringGetTextDatum(db);
	args[2] = CStringGetTextDatum(name);
	if (SPI_execute_with_args("SELECT target_schema, target_table, skip FROM binlog_fdw.table_mapping "
							  "WHERE server_name = $1 AND source_schema = $2 AND source_table = $3",
							  3, argtypes, args, NULL, true, 1) == SPI_OK_SELECT && SPI_processed == 1)
	{
		char	   *ts = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		char	   *tt = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
		char	   *skip = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3);

		if (skip && skip[0] == 't')
			return false;
		if (ts && tt)
		{
			nsp = get_namespace_oid(ts, true);
			if (OidIsValid(nsp) && OidIsValid(get_relname_relid(tt, nsp)))
			{
				*qualified = psprintf("%s.%s", quote_identifier(ts), quote_identifier(tt));
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
	if (synced_table(c, db, name, &existing))
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

static void
rename_one(ddl_ctx *c, const char *db, const char *name, const char *ndb, const char *nname)
{
	char	   *q;

	if (!synced_table(c, db, name, &q))
		return;
	c->touched = true;
	if (strcmp(pg_schema(c, db), pg_schema(c, ndb)) != 0)
		c->commands = lappend(c->commands, psprintf("ALTER TABLE %s SET SCHEMA %s", q,
													quote_identifier(pg_schema(c, ndb))));
	if (strcmp(name, nname) != 0)
		c->commands = lappend(c->commands,
							  psprintf("ALTER TABLE %s.%s RENAME TO %s",
									   quote_identifier(pg_schema(c, ndb)), quote_identifier(name),
									   quote_identifier(nname)));
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
		if (accept_kw(p, "add"))
		{
			if (is_kw(p, "index") || is_kw(p, "key") || is_kw(p, "unique") || is_kw(p, "constraint") ||
				is_kw(p, "primary") || is_kw(p, "foreign") || is_kw(p, "fulltext") ||
				is_kw(p, "spatial") || is_kw(p, "check") || is_kw(p, "partition"))
			{
				skip_to_comma(p);
				continue;
			}
			accept_kw(p, "column");
			if (accept_kw(p, "if"))
			{
				accept_kw(p, "not");
				accept_kw(p, "exists");
			}
			if (accept_punct(p, "("))
			{
				do
				{
					char	   *col = ident(p);
					bool		pk = false;

					if (col == NULL)
						ddl_unsupported(c, "ADD COLUMN could not be read");
					c->commands = lappend(c->commands,
										  psprintf("ALTER TABLE %s ADD COLUMN %s", q,
												   column_def(c, p, col, &pk, false, NULL, NULL, NULL)));
				} while (accept_punct(p, ","));
				accept_punct(p, ")");
			}
			else
			{
				char	   *col = ident(p);
				bool		pk = false;

				if (col == NULL)
					ddl_unsupported(c, "ADD COLUMN could not be read");
				c->commands = lappend(c->commands,
									  psprintf("ALTER TABLE %s ADD COLUMN %s", q,
											   column_def(c, p, col, &pk, false, NULL, NULL, NULL)));
				accept_kw(p, "first");
				if (accept_kw(p, "after"))
					ident(p);
			}
		}
		else if (accept_kw(p, "drop"))
		{
			if (is_kw(p, "index") || is_kw(p, "key") || is_kw(p, "primary") || is_kw(p, "foreign") ||
				is_kw(p, "constraint") || is_kw(p, "check") || is_kw(p, "partition"))
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
	ListCell   *lc;
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
	/* everything else (indexes, views, users, databases ...) is not data */

	if (c.commands != NIL)
	{
		/* queued triggers fire and targets close before tables change */
		blpg_targets_invalidate(ts);
		foreach(lc, c.commands)
		{
			const char *cmd = lfirst(lc);

			elog(DEBUG1, "binlog_fdw source %s: %s", server_name, cmd);
			if (SPI_execute(cmd, false, 0) < 0)
				ddl_unsupported(&c, psprintf("PostgreSQL statement failed: %s", cmd));
		}
		CommandCounterIncrement();
		blpg_targets_invalidate(ts);
	}
	SPI_finish();
}
