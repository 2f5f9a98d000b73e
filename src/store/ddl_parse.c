/*
 * ddl_parse.c
 *	  The parser of the source's DDL statements (store.h): tokens, then a
 *	  statement as a blpg_ddl.  Its two users: apply translates the result
 *	  into PostgreSQL statements (src/apply/ddl.c); the schema history
 *	  advances the definitions of captured tables with it (history.c), so
 *	  that both read a statement the same way.
 *
 *	  Understood: CREATE TABLE (columns, [CONSTRAINT x] PRIMARY KEY, table
 *	  charset), DROP TABLE, RENAME TABLE, TRUNCATE, ALTER TABLE (ADD/DROP/
 *	  MODIFY/CHANGE/RENAME COLUMN with FIRST/AFTER, ALTER COLUMN SET/DROP
 *	  DEFAULT, ADD/DROP PRIMARY KEY, RENAME, CONVERT TO CHARACTER SET, charset options, index and key
 *	  clauses, table options, partition clauses), CREATE/DROP/ALTER
 *	  DATABASE.  Anything else is BLPG_DDL_OTHER.
 */
#include "store/store.h"

#include <ctype.h>

#include "nodes/pg_list.h"
#include "utils/builtins.h"
#include "utils/formatting.h"

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

/* ---- statements ---- */

/* Skip to the end of the statement. */
static void
skip_to_end(parser *p)
{
	while (peek(p)->kind != T_END)
		next(p);
}

static bool
fail(blpg_ddl *d, const char *why)
{
	if (d->unsupported == NULL)
		d->unsupported = why;
	return false;
}

/* MySQL's synonyms of a type's first word, as information_schema names it. */
static char *
canonical_type(const char *word, bool *is_unsigned)
{
	static const char *const syn[][2] = {
		{"integer", "int"}, {"int1", "tinyint"}, {"int2", "smallint"},
		{"int3", "mediumint"}, {"middleint", "mediumint"}, {"int4", "int"},
		{"int8", "bigint"}, {"bool", "tinyint"}, {"boolean", "tinyint"},
		{"dec", "decimal"}, {"numeric", "decimal"}, {"fixed", "decimal"},
		{"real", "double"}, {"float4", "float"}, {"float8", "double"},
		{"character", "char"}, {"nchar", "char"}, {"nvarchar", "varchar"},
		{"national", "char"}, {"serial", "bigint"}, {NULL, NULL}
	};
	char	   *w = asc_tolower(word, strlen(word));

	for (int i = 0; syn[i][0]; i++)
		if (strcmp(w, syn[i][0]) == 0)
		{
			if (strcmp(w, "serial") == 0)
				*is_unsigned = true;
			return pstrdup(syn[i][1]);
		}
	return w;
}

/* The members of an ENUM/SET type's (...) group, starting at its "(". */
static List *
members(parser *p)
{
	List	   *l = NIL;
	int			depth = 0;

	do
	{
		token	   *t = next(p);

		if (t->kind == T_END)
			break;
		if (t->kind == T_PUNCT && strcmp(t->text, "(") == 0)
			depth++;
		else if (t->kind == T_PUNCT && strcmp(t->text, ")") == 0)
			depth--;
		else if (t->kind == T_STRING && depth == 1)
			l = lappend(l, t->text);
	} while (depth > 0);
	return l;
}

List *
blpg_ddl_type_members(const char *type)
{
	parser		p;

	tokenize(&p, type);
	next(&p);
	if (!is_punct(&p, "("))
		return NIL;
	return members(&p);
}

/* A charset name from CHARACTER SET x or COLLATE x (its prefix). */
static char *
charset_of(const char *name, bool collation)
{
	char	   *s = asc_tolower(name, strlen(name));
	char	   *u;

	if (collation && (u = strchr(s, '_')) != NULL)
		*u = '\0';
	return s;
}

/*
 * A column definition after its name: type [attributes], up to the next
 * top-level comma or closing parenthesis.  NULL (d->unsupported set) if it
 * cannot be read.
 */
static blpg_ddl_column *
column_def(blpg_ddl *d, parser *p, char *name)
{
	blpg_ddl_column *col = palloc0(sizeof(blpg_ddl_column));
	token	   *tt = next(p);
	StringInfoData type;

	col->name = name;
	if (tt->kind != T_WORD)
	{
		fail(d, psprintf("column \"%s\" has no type", name));
		return NULL;
	}
	initStringInfo(&type);
	appendStringInfoString(&type, tt->text);
	col->data_type = canonical_type(tt->text, &col->is_unsigned);
	/* NATIONAL CHAR/VARCHAR, CHARACTER VARYING, DOUBLE PRECISION, LONG VARCHAR */
	if (pg_strcasecmp(tt->text, "national") == 0 && peek(p)->kind == T_WORD)
	{
		token	   *w = next(p);

		appendStringInfo(&type, " %s", w->text);
		col->data_type = canonical_type(w->text, &col->is_unsigned);
		if (strcmp(col->data_type, "char") == 0 && accept_kw(p, "varying"))
		{
			appendStringInfoString(&type, " varying");
			col->data_type = pstrdup("varchar");
		}
	}
	if (pg_strcasecmp(tt->text, "long") == 0)
	{
		col->data_type = pstrdup("mediumtext");
		if (accept_kw(p, "varbinary"))
			col->data_type = pstrdup("mediumblob");
		else
			accept_kw(p, "varchar");
	}
	if (is_punct(p, "("))
	{
		const char *start = peek(p)->start;
		int			at = p->pos;

		bool		as_double = false;

		if (strcmp(col->data_type, "enum") == 0 || strcmp(col->data_type, "set") == 0)
			col->members = members(p);
		/*
		 * FLOAT(p) with one argument is a precision in bits: 25 to 53 make a
		 * DOUBLE (what the binlog and information_schema show), not a FLOAT
		 */
		if (strcmp(col->data_type, "float") == 0 && at + 2 < p->ntoks &&
			p->toks[at + 1].kind == T_NUMBER && p->toks[at + 2].kind == T_PUNCT &&
			strcmp(p->toks[at + 2].text, ")") == 0 && strspn(p->toks[at + 1].text, "0123456789") ==
			strlen(p->toks[at + 1].text) && strlen(p->toks[at + 1].text) < 4 &&
			atoi(p->toks[at + 1].text) > 24)
			as_double = true;
		p->pos = at;
		skip_group(p);
		if (as_double)
		{
			col->data_type = pstrdup("double");
			resetStringInfo(&type);
			appendStringInfoString(&type, "double");
		}
		else
			appendBinaryStringInfo(&type, start, p->toks[p->pos - 1].end - start);
	}
	while (is_kw(p, "unsigned") || is_kw(p, "signed") || is_kw(p, "zerofill") ||
		   is_kw(p, "precision") || is_kw(p, "varying"))
	{
		token	   *w = next(p);

		if (pg_strcasecmp(w->text, "unsigned") == 0 || pg_strcasecmp(w->text, "zerofill") == 0)
			col->is_unsigned = true;
		if (pg_strcasecmp(w->text, "varying") == 0 && strcmp(col->data_type, "char") == 0)
			col->data_type = pstrdup("varchar");
		appendStringInfo(&type, " %s", w->text);
	}
	col->type = type.data;

	/* up to the clause's end, or its FIRST / AFTER col */
	while (peek(p)->kind != T_END && !is_punct(p, ",") && !is_punct(p, ")") &&
		   !is_kw(p, "first") && !is_kw(p, "after"))
	{
		if (accept_kw(p, "not"))
		{
			if (accept_kw(p, "null"))
				col->notnull = true;
		}
		else if (accept_kw(p, "null"))
			col->notnull = false;
		else if (accept_kw(p, "default"))
		{
			token	   *t = next(p);

			if (t->kind == T_STRING)
			{
				col->def = BLPG_DEF_STRING;
				col->default_text = t->text;
			}
			else if (t->kind == T_NUMBER)
			{
				col->def = BLPG_DEF_NUMBER;
				col->default_text = t->text;
			}
			else if (t->kind == T_WORD && (pg_strcasecmp(t->text, "current_timestamp") == 0 ||
										   pg_strcasecmp(t->text, "now") == 0))
			{
				col->def = BLPG_DEF_NOW;
				if (is_punct(p, "("))
					skip_group(p);
			}
			else if (t->kind == T_WORD && pg_strcasecmp(t->text, "null") == 0)
				col->def = BLPG_DEF_NULL;
			else if (t->kind == T_PUNCT && strcmp(t->text, "(") == 0)
			{
				col->def = BLPG_DEF_EXPR;
				p->pos--;
				skip_group(p);
			}
		}
		else if (accept_kw(p, "primary"))
		{
			accept_kw(p, "key");
			col->pk = true;
			col->notnull = true;
		}
		else if (accept_kw(p, "generated") || is_kw(p, "as"))
		{
			/* [GENERATED ALWAYS] AS (expr) [VIRTUAL | STORED]: a column of the rows all the same */
			col->generated = true;
			accept_kw(p, "always");
			accept_kw(p, "as");
			if (is_punct(p, "("))
				skip_group(p);
		}
		else if (accept_kw(p, "character") || accept_kw(p, "charset"))
		{
			accept_kw(p, "set");
			if (peek(p)->kind != T_END)
				col->charset = charset_of(next(p)->text, false);
		}
		else if (accept_kw(p, "collate"))
		{
			if (peek(p)->kind != T_END)
			{
				token	   *t = next(p);

				if (col->charset == NULL)
					col->charset = charset_of(t->text, true);
			}
		}
		else if (accept_kw(p, "comment"))
			next(p);
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
	/* BINARY, VARBINARY and BLOBs have no character set */
	if (strcmp(col->data_type, "binary") == 0 || strcmp(col->data_type, "varbinary") == 0 ||
		strstr(col->data_type, "blob") != NULL)
		col->charset = NULL;
	return col;
}

/* [DEFAULT] CHARACTER SET|CHARSET [=] x, [DEFAULT] COLLATE [=] x: true if one */
static bool
charset_option(parser *p, char **charset)
{
	int			start = p->pos;
	bool		collation = false;

	accept_kw(p, "default");
	if (accept_kw(p, "character"))
	{
		if (!accept_kw(p, "set"))
		{
			p->pos = start;
			return false;
		}
	}
	else if (accept_kw(p, "charset"))
		;
	else if (accept_kw(p, "collate"))
		collation = true;
	else
	{
		p->pos = start;
		return false;
	}
	accept_punct(p, "=");
	if (peek(p)->kind == T_END)
		return true;
	{
		char	   *cs = charset_of(next(p)->text, collation);

		if (!collation || *charset == NULL)
			*charset = cs;
	}
	return true;
}

/*
 * At "[CONSTRAINT [name]] PRIMARY KEY": true, past PRIMARY (the name of a
 * primary key constraint is ignored by MySQL, and here).  Anything else:
 * false, nothing read.
 */
static bool
primary_key(parser *p)
{
	if (is_kw(p, "constraint"))
	{
		int			save = p->pos;

		next(p);
		if (!is_kw(p, "primary") && !is_kw(p, "unique") && !is_kw(p, "foreign") &&
			!is_kw(p, "check"))
			next(p);			/* the constraint's name */
		if (accept_kw(p, "primary"))
			return true;
		p->pos = save;
		return false;
	}
	return accept_kw(p, "primary");
}

/* After PRIMARY: "KEY [USING x] (col [(len)] [ASC|DESC], ...)": the columns (char *). */
static List *
primary_key_columns(parser *p)
{
	List	   *cols = NIL;

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
				cols = lappend(cols, col);
			if (is_punct(p, "("))
				skip_group(p);	/* prefix length */
			accept_kw(p, "asc");
			accept_kw(p, "desc");
			accept_punct(p, ",");
		}
		accept_punct(p, ")");
	}
	return cols;
}

static void
create_table(blpg_ddl *d, parser *p)
{
	d->kind = BLPG_DDL_CREATE_TABLE;
	if (accept_kw(p, "if"))
	{
		accept_kw(p, "not");
		accept_kw(p, "exists");
		d->if_not_exists = true;
	}
	if (!table_name(p, d->db, &d->db, &d->name))
	{
		d->name = NULL;
		fail(d, "no table name");
		return;
	}
	if (is_kw(p, "like") || !is_punct(p, "("))
	{
		d->like_or_select = true;
		fail(d, "CREATE TABLE ... LIKE and CREATE TABLE ... SELECT are not translated");
		return;
	}
	accept_punct(p, "(");
	while (peek(p)->kind != T_END && !is_punct(p, ")"))
	{
		if (primary_key(p))
		{
			d->pk = primary_key_columns(p);
			skip_to_comma(p);
		}
		else if (is_kw(p, "key") || is_kw(p, "index") || is_kw(p, "unique") ||
				 is_kw(p, "constraint") || is_kw(p, "foreign") || is_kw(p, "fulltext") ||
				 is_kw(p, "spatial") || is_kw(p, "check") || is_kw(p, "period"))
			skip_to_comma(p);	/* indexes and constraints are not data */
		else
		{
			char	   *name = ident(p);
			blpg_ddl_column *col;

			if (name == NULL)
			{
				fail(d, "a column definition could not be read");
				return;
			}
			col = column_def(d, p, name);
			if (col == NULL)
				return;
			d->columns = lappend(d->columns, col);
			if (col->pk)
				d->pk = lappend(d->pk, name);
		}
		accept_punct(p, ",");
	}
	accept_punct(p, ")");
	/* table options: the default character set */
	while (peek(p)->kind != T_END)
	{
		if (!charset_option(p, &d->charset))
		{
			if (is_punct(p, "("))
				skip_group(p);
			else
				next(p);
		}
	}
}

static void
table_list(blpg_ddl *d, parser *p, bool rename)
{
	do
	{
		blpg_ddl_table_ref *r = palloc0(sizeof(blpg_ddl_table_ref));

		if (!table_name(p, d->db, &r->db, &r->name) ||
			(rename && (!accept_kw(p, "to") || !table_name(p, d->db, &r->new_db, &r->new_name))))
		{
			fail(d, rename ? "RENAME TABLE could not be read" : "no table name");
			return;
		}
		d->tables = lappend(d->tables, r);
	} while (accept_punct(p, ","));
}

static blpg_ddl_clause *
new_clause(blpg_ddl *d, blpg_ddl_clause_kind kind)
{
	blpg_ddl_clause *c = palloc0(sizeof(blpg_ddl_clause));

	c->kind = kind;
	d->clauses = lappend(d->clauses, c);
	return c;
}

/* A clause that cannot be read or translated: the last one parsed. */
static void
unsupported_clause(blpg_ddl *d, const char *why)
{
	new_clause(d, BLPG_ALTER_UNSUPPORTED)->unsupported = why;
}

static void
position(parser *p, blpg_ddl_clause *c)
{
	if (accept_kw(p, "first"))
		c->first = true;
	else if (accept_kw(p, "after"))
		c->after = ident(p);
}

/*
 * Partition clauses of ALTER TABLE (always its last clause).  Those that
 * only move rows between partitions of the table change no data
 * (BLPG_ALTER_IGNORED); those that remove or bring rows without rows
 * events are unsupported.  Returns true if the clause was one.
 */
static bool
partition_clause(blpg_ddl *d, parser *p)
{
	static const char *const harmless[] = {"add", "reorganize", "coalesce", "analyze", "check",
	"optimize", "rebuild", "repair", NULL};
	int			start = p->pos;

	if (accept_kw(p, "partition"))
	{
		if (accept_kw(p, "by"))
		{
			skip_to_end(p);		/* PARTITION BY ...: the rows stay */
			new_clause(d, BLPG_ALTER_IGNORED);
			return true;
		}
		p->pos = start;
		return false;
	}
	if (accept_kw(p, "remove"))
	{
		if (accept_kw(p, "partitioning"))
		{
			new_clause(d, BLPG_ALTER_IGNORED);
			return true;
		}
		p->pos = start;
		return false;
	}
	if (accept_kw(p, "drop") || accept_kw(p, "truncate"))
	{
		if (accept_kw(p, "partition"))
		{
			unsupported_clause(d, psprintf("%s PARTITION removes rows from the table without rows events, so the target would keep them",
										   pg_strcasecmp(p->toks[start].text, "drop") == 0 ? "DROP" : "TRUNCATE"));
			return true;
		}
		p->pos = start;
		return false;
	}
	if (accept_kw(p, "exchange"))
	{
		if (accept_kw(p, "partition"))
		{
			unsupported_clause(d, "EXCHANGE PARTITION swaps rows between tables without rows events");
			return true;
		}
		p->pos = start;
		return false;
	}
	if (accept_kw(p, "convert"))
	{
		if (accept_kw(p, "partition") || (is_kw(p, "table")))
		{
			unsupported_clause(d, "CONVERT PARTITION/TABLE moves rows between tables without rows events");
			return true;
		}
		p->pos = start;
		return false;
	}
	if (accept_kw(p, "discard") || accept_kw(p, "import"))
	{
		if (is_kw(p, "partition") || is_kw(p, "tablespace"))
		{
			unsupported_clause(d, "DISCARD/IMPORT TABLESPACE removes or brings rows without rows events");
			return true;
		}
		p->pos = start;
		return false;
	}
	for (int i = 0; harmless[i]; i++)
		if (accept_kw(p, harmless[i]))
		{
			if (accept_kw(p, "partition"))
			{
				skip_to_end(p);
				new_clause(d, BLPG_ALTER_IGNORED);
				return true;
			}
			p->pos = start;
			return false;
		}
	return false;
}

/* ADD [COLUMN] name type ... */
static bool
add_column(blpg_ddl *d, parser *p, bool if_not_exists, bool positioned)
{
	char	   *name = ident(p);
	blpg_ddl_column *col;
	blpg_ddl_clause *c;

	if (name == NULL)
	{
		unsupported_clause(d, "ADD COLUMN could not be read");
		return false;
	}
	col = column_def(d, p, name);
	if (col == NULL)
	{
		unsupported_clause(d, d->unsupported);
		d->unsupported = NULL;
		return false;
	}
	c = new_clause(d, BLPG_ALTER_ADD_COLUMN);
	c->name = name;
	c->column = col;
	c->if_exists = if_not_exists;
	if (positioned)
		position(p, c);
	return true;
}

static void
alter_table(blpg_ddl *d, parser *p)
{
	d->kind = BLPG_DDL_ALTER_TABLE;
	if (!table_name(p, d->db, &d->db, &d->name))
	{
		d->name = NULL;
		fail(d, "no table name");
		return;
	}
	do
	{
		bool		if_not_exists = false;

		if (partition_clause(d, p))
			return;				/* partition clauses come last */
		if (accept_kw(p, "add"))
		{
			if (primary_key(p))
			{
				new_clause(d, BLPG_ALTER_ADD_PRIMARY_KEY)->key_columns = primary_key_columns(p);
				skip_to_comma(p);
				continue;
			}
			if (is_kw(p, "index") || is_kw(p, "key") || is_kw(p, "unique") || is_kw(p, "constraint") ||
				is_kw(p, "foreign") || is_kw(p, "fulltext") || is_kw(p, "spatial") || is_kw(p, "check"))
			{
				skip_to_comma(p);
				new_clause(d, BLPG_ALTER_IGNORED);
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
					if (!add_column(d, p, if_not_exists, false))
						return;
				while (accept_punct(p, ","));
				accept_punct(p, ")");
			}
			else if (!add_column(d, p, if_not_exists, true))
				return;
		}
		else if (accept_kw(p, "drop"))
		{
			blpg_ddl_clause *c;

			if (accept_kw(p, "primary"))
			{
				accept_kw(p, "key");
				new_clause(d, BLPG_ALTER_DROP_PRIMARY_KEY);
				skip_to_comma(p);
				continue;
			}
			if (is_kw(p, "index") || is_kw(p, "key") || is_kw(p, "foreign") ||
				is_kw(p, "constraint") || is_kw(p, "check"))
			{
				skip_to_comma(p);
				new_clause(d, BLPG_ALTER_IGNORED);
				continue;
			}
			accept_kw(p, "column");
			c = new_clause(d, BLPG_ALTER_DROP_COLUMN);
			c->if_exists = accept_kw(p, "if") && accept_kw(p, "exists");
			c->name = ident(p);
			if (c->name == NULL)
			{
				c->kind = BLPG_ALTER_UNSUPPORTED;
				c->unsupported = "DROP COLUMN could not be read";
				return;
			}
		}
		else if (accept_kw(p, "modify") || is_kw(p, "change"))
		{
			bool		change = accept_kw(p, "change");
			char	   *col,
					   *newcol;
			blpg_ddl_column *def;
			blpg_ddl_clause *c;

			accept_kw(p, "column");
			col = ident(p);
			newcol = change ? ident(p) : col;
			if (col == NULL || newcol == NULL)
			{
				unsupported_clause(d, "MODIFY/CHANGE COLUMN could not be read");
				return;
			}
			def = column_def(d, p, newcol);
			if (def == NULL)
			{
				unsupported_clause(d, d->unsupported);
				d->unsupported = NULL;
				return;
			}
			c = new_clause(d, BLPG_ALTER_MODIFY_COLUMN);
			c->name = col;
			c->column = def;
			position(p, c);
		}
		else if (accept_kw(p, "rename"))
		{
			if (accept_kw(p, "column"))
			{
				blpg_ddl_clause *c = new_clause(d, BLPG_ALTER_RENAME_COLUMN);

				c->name = ident(p);
				if (!accept_kw(p, "to") || c->name == NULL || (c->new_name = ident(p)) == NULL)
				{
					c->kind = BLPG_ALTER_UNSUPPORTED;
					c->unsupported = "RENAME COLUMN could not be read";
					return;
				}
			}
			else if (is_kw(p, "index") || is_kw(p, "key"))
			{
				skip_to_comma(p);
				new_clause(d, BLPG_ALTER_IGNORED);
			}
			else
			{
				blpg_ddl_clause *c = new_clause(d, BLPG_ALTER_RENAME_TABLE);

				if (!accept_kw(p, "to"))
					accept_kw(p, "as");
				if (!table_name(p, d->db, &c->new_db, &c->new_name))
				{
					c->kind = BLPG_ALTER_UNSUPPORTED;
					c->unsupported = "RENAME could not be read";
					return;
				}
			}
		}
		else if (accept_kw(p, "alter"))
		{
			char	   *col;

			accept_kw(p, "column");
			col = ident(p);
			if (col == NULL)
			{
				unsupported_clause(d, "ALTER COLUMN could not be read");
				return;
			}
			if (accept_kw(p, "set"))
			{
				token	   *t;
				blpg_ddl_clause *c;

				if (!accept_kw(p, "default"))
				{
					/* SET VISIBLE / INVISIBLE: no effect on the data */
					next(p);
					new_clause(d, BLPG_ALTER_IGNORED);
					continue;
				}
				c = new_clause(d, BLPG_ALTER_SET_DEFAULT);
				c->name = col;
				c->column = palloc0(sizeof(blpg_ddl_column));
				c->column->name = col;
				t = next(p);
				if (t->kind == T_STRING || t->kind == T_NUMBER)
				{
					c->column->def = t->kind == T_STRING ? BLPG_DEF_STRING : BLPG_DEF_NUMBER;
					c->column->default_text = t->text;
				}
				else
					c->column->def = BLPG_DEF_EXPR;
			}
			else if (accept_kw(p, "drop"))
			{
				accept_kw(p, "default");
				new_clause(d, BLPG_ALTER_DROP_DEFAULT)->name = col;
			}
			else
			{
				skip_to_comma(p);
				new_clause(d, BLPG_ALTER_IGNORED);
			}
		}
		else if (accept_kw(p, "convert"))
		{
			/* CONVERT TO CHARACTER SET x: every text column and the default */
			blpg_ddl_clause *c = new_clause(d, BLPG_ALTER_CHARSET);
			char	   *cs = NULL;

			c->first = true;
			accept_kw(p, "to");
			if (charset_option(p, &cs))
				c->new_name = cs;
			while (charset_option(p, &cs))
				;
			skip_to_comma(p);
		}
		else if (is_kw(p, "default") || is_kw(p, "character") || is_kw(p, "charset") ||
				 is_kw(p, "collate"))
		{
			char	   *cs = NULL;
			int			at = p->pos;

			if (charset_option(p, &cs))
				new_clause(d, BLPG_ALTER_CHARSET)->new_name = cs;
			else
			{
				p->pos = at;
				new_clause(d, BLPG_ALTER_IGNORED);
			}
			skip_to_comma(p);
		}
		else if (is_kw(p, "engine") || is_kw(p, "auto_increment") || is_kw(p, "comment") ||
				 is_kw(p, "algorithm") || is_kw(p, "lock") ||
				 is_kw(p, "row_format") || is_kw(p, "force") || is_kw(p, "key_block_size") ||
				 is_kw(p, "enable") || is_kw(p, "disable") || is_kw(p, "order"))
		{
			skip_to_comma(p);	/* table options: no effect on the data */
			new_clause(d, BLPG_ALTER_IGNORED);
		}
		else
		{
			unsupported_clause(d, psprintf("ALTER TABLE clause \"%s\" is not translated",
										   peek(p)->kind == T_END ? "" : peek(p)->text));
			return;
		}
	} while (accept_punct(p, ","));
}

static void
database_stmt(blpg_ddl *d, parser *p, blpg_ddl_kind kind)
{
	token	   *t;

	d->kind = kind;
	if (accept_kw(p, "if"))
	{
		accept_kw(p, "not");
		accept_kw(p, "exists");
		d->if_not_exists = true;
	}
	t = peek(p);
	if (t->kind != T_WORD && t->kind != T_IDENT)
	{
		d->name = NULL;
		fail(d, "no database name");
		return;
	}
	/* ALTER DATABASE without a name: the statement's database */
	if (kind == BLPG_DDL_ALTER_DATABASE && t->kind == T_WORD &&
		(pg_strcasecmp(t->text, "default") == 0 || pg_strcasecmp(t->text, "character") == 0 ||
		 pg_strcasecmp(t->text, "charset") == 0 || pg_strcasecmp(t->text, "collate") == 0))
		;
	else
	{
		next(p);
		d->db = t->text;
	}
	while (peek(p)->kind != T_END)
		if (!charset_option(p, &d->charset))
			next(p);
}

/*
 * A statement that changes rows (logged as a statement by a session with
 * binlog_format STATEMENT or MIXED: its rows are in no rows event).  The
 * one table it writes, when that is plain: INSERT/REPLACE [INTO] t, UPDATE
 * t [[AS] alias] SET, DELETE FROM t not followed by "," or USING; else
 * d->name stays NULL (several tables, LOAD DATA, WITH ...).
 */
static void
dml_statement(blpg_ddl *d, parser *p)
{
	char	   *db = d->db;
	char	   *name = NULL;

	d->kind = BLPG_DDL_DML;
	if (accept_kw(p, "insert") || accept_kw(p, "replace"))
	{
		while (accept_kw(p, "low_priority") || accept_kw(p, "delayed") ||
			   accept_kw(p, "high_priority") || accept_kw(p, "ignore"))
			;
		accept_kw(p, "into");
		if (!table_name(p, d->db, &db, &name))
			name = NULL;
	}
	else if (accept_kw(p, "update"))
	{
		while (accept_kw(p, "low_priority") || accept_kw(p, "ignore"))
			;
		if (table_name(p, d->db, &db, &name))
		{
			if (accept_kw(p, "as") || !is_kw(p, "set"))
				(void) ident(p);	/* an alias */
			if (!is_kw(p, "set"))
				name = NULL;
		}
		else
			name = NULL;
	}
	else if (accept_kw(p, "delete"))
	{
		while (accept_kw(p, "low_priority") || accept_kw(p, "quick") || accept_kw(p, "ignore"))
			;
		if (!accept_kw(p, "from") || !table_name(p, d->db, &db, &name) ||
			is_punct(p, ",") || is_kw(p, "using"))
			name = NULL;
	}
	if (name != NULL)
	{
		d->db = db;
		d->name = name;
	}
}

/*
 * Does the statement give a foreign key an action that changes rows:
 * REFERENCES ... ON DELETE|UPDATE CASCADE | SET NULL | SET DEFAULT?  (Words
 * only: string literals and quoted names are tokens of their own.)
 */
static bool
fk_action(parser *p)
{
	bool		references = false;

	for (int i = 0; i < p->ntoks; i++)
	{
		const token *t = &p->toks[i];

		if (t->kind != T_WORD)
			continue;
		if (pg_strcasecmp(t->text, "references") == 0)
			references = true;
		else if (references && pg_strcasecmp(t->text, "on") == 0 && i + 2 < p->ntoks &&
				 p->toks[i + 1].kind == T_WORD && p->toks[i + 2].kind == T_WORD &&
				 (pg_strcasecmp(p->toks[i + 1].text, "delete") == 0 ||
				  pg_strcasecmp(p->toks[i + 1].text, "update") == 0))
		{
			const char *a = p->toks[i + 2].text;

			if (pg_strcasecmp(a, "cascade") == 0)
				return true;
			if (pg_strcasecmp(a, "set") == 0 && i + 3 < p->ntoks && p->toks[i + 3].kind == T_WORD &&
				(pg_strcasecmp(p->toks[i + 3].text, "null") == 0 ||
				 pg_strcasecmp(p->toks[i + 3].text, "default") == 0))
				return true;
		}
	}
	return false;
}

blpg_ddl *
blpg_ddl_parse(const char *sql, const char *db)
{
	blpg_ddl   *d = palloc0(sizeof(blpg_ddl));
	parser		p;

	d->kind = BLPG_DDL_OTHER;
	d->db = (char *) db;
	tokenize(&p, sql);
	if (accept_kw(&p, "create"))
	{
		if (accept_kw(&p, "or"))
			accept_kw(&p, "replace");
		d->temporary = accept_kw(&p, "temporary");
		if (accept_kw(&p, "table"))
			create_table(d, &p);
		else if (accept_kw(&p, "database") || accept_kw(&p, "schema"))
			database_stmt(d, &p, BLPG_DDL_CREATE_DATABASE);
	}
	else if (accept_kw(&p, "drop"))
	{
		d->temporary = accept_kw(&p, "temporary");
		if (accept_kw(&p, "table") || accept_kw(&p, "tables"))
		{
			d->kind = BLPG_DDL_DROP_TABLE;
			if (accept_kw(&p, "if"))
			{
				accept_kw(&p, "exists");
				d->if_exists = true;
			}
			table_list(d, &p, false);
		}
		else if (accept_kw(&p, "database") || accept_kw(&p, "schema"))
		{
			d->kind = BLPG_DDL_DROP_DATABASE;
			if (accept_kw(&p, "if"))
				accept_kw(&p, "exists");
			if (peek(&p)->kind == T_WORD || peek(&p)->kind == T_IDENT)
				d->db = next(&p)->text;
			else
				d->kind = BLPG_DDL_OTHER;
		}
	}
	else if (accept_kw(&p, "rename"))
	{
		if (accept_kw(&p, "table") || accept_kw(&p, "tables"))
		{
			d->kind = BLPG_DDL_RENAME_TABLE;
			table_list(d, &p, true);
		}
	}
	else if (accept_kw(&p, "truncate"))
	{
		d->kind = BLPG_DDL_TRUNCATE;
		accept_kw(&p, "table");
		if (!table_name(&p, d->db, &d->db, &d->name))
		{
			d->name = NULL;
			fail(d, "no table name");
		}
	}
	else if (accept_kw(&p, "alter"))
	{
		accept_kw(&p, "online");
		accept_kw(&p, "ignore");
		if (accept_kw(&p, "table"))
			alter_table(d, &p);
		else if (accept_kw(&p, "database") || accept_kw(&p, "schema"))
			database_stmt(d, &p, BLPG_DDL_ALTER_DATABASE);
	}
	else if (is_kw(&p, "insert") || is_kw(&p, "replace") || is_kw(&p, "update") ||
			 is_kw(&p, "delete") || is_kw(&p, "load") || is_kw(&p, "with"))
		dml_statement(d, &p);
	if (d->kind == BLPG_DDL_CREATE_TABLE || d->kind == BLPG_DDL_ALTER_TABLE)
		d->fk_action = fk_action(&p);
	return d;
}
