/*
 * bl_mysql_schema.c
 *	  Table definitions from the source's information_schema, over a side
 *	  connection, cached per table (bl_mysql_source.h).  The decoder asks
 *	  for them when TABLE_MAP events carry no column names
 *	  (binlog_row_metadata=MINIMAL); the cache is invalidated on DDL.
 */
#include "bl_mysql_conn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct schema_entry
{
	struct schema_entry *next;
	char	   *schema;
	char	   *table;
	bl_schema_table def;
	bl_schema_column *cols;
	char	  **strings;		/* everything allocated for this entry */
	uint32_t	nstrings;
	uint32_t	capstrings;
	bool		missing;		/* the table does not exist (negative cache) */
} schema_entry;

struct bl_schema_cache
{
	bl_source_options opts;
	MYSQL	   *conn;
	bool		borrowed;		/* conn is another's (a snapshot's): no reconnect, no close */
	schema_entry *entries;
	char		error[512];
};

bl_schema_cache *
bl_schema_cache_create(const bl_source_options *opts, bl_error *err)
{
	bl_schema_cache *c = calloc(1, sizeof(bl_schema_cache));

	if (c == NULL)
	{
		bl_error_set(err, BL_ERR_NOMEM, "out of memory");
		return NULL;
	}
	c->opts = *opts;
	c->conn = bl_mysql_open(opts, err);
	if (c->conn == NULL)
	{
		free(c);
		return NULL;
	}
	return c;
}

bl_schema_cache *
bl_schema_cache_on(MYSQL *conn, bl_error *err)
{
	bl_schema_cache *c = calloc(1, sizeof(bl_schema_cache));

	if (c == NULL)
	{
		bl_error_set(err, BL_ERR_NOMEM, "out of memory");
		return NULL;
	}
	c->conn = conn;
	c->borrowed = true;
	return c;
}

static char *
entry_strdup(schema_entry *e, const char *s, size_t len)
{
	char	   *p;

	if (e->nstrings == e->capstrings)
	{
		uint32_t	cap = e->capstrings ? e->capstrings * 2 : 32;
		char	  **n = realloc(e->strings, sizeof(char *) * cap);

		if (n == NULL)
			return NULL;
		e->strings = n;
		e->capstrings = cap;
	}
	p = malloc(len + 1);
	if (p == NULL)
		return NULL;
	memcpy(p, s, len);
	p[len] = '\0';
	e->strings[e->nstrings++] = p;
	return p;
}

static void
entry_free(schema_entry *e)
{
	for (uint32_t i = 0; i < e->nstrings; i++)
		free(e->strings[i]);
	free(e->strings);
	free(e->cols);
	free(e->schema);
	free(e->table);
	free(e);
}

/*
 * ENUM/SET members from COLUMN_TYPE "enum('a','b''c')": quotes doubled
 * inside values.
 */
static bool
parse_members(schema_entry *e, bl_schema_column *col, const char *type)
{
	const char *p = strchr(type, '(');
	uint32_t	cap = 8;
	const char **vals;
	char	   *buf;
	size_t		blen = 0;

	if (p == NULL)
		return true;
	vals = malloc(sizeof(char *) * cap);
	buf = malloc(strlen(type) + 1);
	if (vals == NULL || buf == NULL)
	{
		free(vals);
		free(buf);
		return false;
	}
	col->n_values = 0;
	p++;
	while (*p == '\'')
	{
		blen = 0;
		p++;
		while (*p)
		{
			if (*p == '\'' && p[1] == '\'')
			{
				buf[blen++] = '\'';
				p += 2;
			}
			else if (*p == '\'')
			{
				p++;
				break;
			}
			else if (*p == '\\' && p[1])
			{
				buf[blen++] = p[1];
				p += 2;
			}
			else
				buf[blen++] = *p++;
		}
		if (col->n_values == cap)
		{
			const char **n = realloc(vals, sizeof(char *) * cap * 2);

			if (n == NULL)
			{
				free(vals);
				free(buf);
				return false;
			}
			vals = n;
			cap *= 2;
		}
		vals[col->n_values] = entry_strdup(e, buf, blen);
		if (vals[col->n_values] == NULL)
		{
			free(vals);
			free(buf);
			return false;
		}
		col->n_values++;
		if (*p == ',')
			p++;
	}
	free(buf);
	/* keep the array itself alive with the entry */
	if (entry_strdup(e, "", 0) == NULL)
	{
		free(vals);
		return false;
	}
	free(e->strings[e->nstrings - 1]);
	e->strings[e->nstrings - 1] = (char *) vals;
	col->values = vals;
	return true;
}

static schema_entry *
load_table(bl_schema_cache *c, const char *schema, const char *table)
{
	MYSQL_RES  *res;
	MYSQL_ROW	row;
	schema_entry *e;
	char		sql[2048];
	char		s_esc[512],
				t_esc[512];
	uint32_t	n;
	bool		failed;

	if (strlen(schema) > 200 || strlen(table) > 200)
		return NULL;
	mysql_real_escape_string(c->conn, s_esc, schema, (unsigned long) strlen(schema));
	mysql_real_escape_string(c->conn, t_esc, table, (unsigned long) strlen(table));
	snprintf(sql, sizeof(sql),
			 "SELECT COLUMN_NAME, LOWER(DATA_TYPE), COLUMN_TYPE, CHARACTER_SET_NAME, COLUMN_KEY "
			 "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '%s' AND TABLE_NAME = '%s' "
			 "ORDER BY ORDINAL_POSITION", s_esc, t_esc);
	failed = mysql_query(c->conn, sql) != 0;
	if (failed && c->borrowed)
	{
		snprintf(c->error, sizeof(c->error), "reading information_schema for %s.%s: %s",
				 schema, table, mysql_error(c->conn));
		return NULL;
	}
	if (failed)
	{
		/* one reconnect attempt: the side connection may have timed out */
		bl_error	err;

		mysql_close(c->conn);
		c->conn = bl_mysql_open(&c->opts, &err);
		if (c->conn == NULL || mysql_query(c->conn, sql) != 0)
		{
			snprintf(c->error, sizeof(c->error), "reading information_schema for %s.%s: %s",
					 schema, table, c->conn ? mysql_error(c->conn) : err.message);
			if (c->conn == NULL)
				c->conn = mysql_init(NULL);
			return NULL;
		}
	}
	res = mysql_store_result(c->conn);
	if (res == NULL)
		return NULL;
	e = calloc(1, sizeof(schema_entry));
	n = (uint32_t) mysql_num_rows(res);
	if (e == NULL || (e->cols = calloc(n ? n : 1, sizeof(bl_schema_column))) == NULL)
	{
		free(e);
		mysql_free_result(res);
		return NULL;
	}
	e->schema = strdup(schema);
	e->table = strdup(table);
	e->missing = n == 0;
	for (uint32_t i = 0; (row = mysql_fetch_row(res)) != NULL && i < n; i++)
	{
		bl_schema_column *col = &e->cols[i];
		unsigned long *lens = mysql_fetch_lengths(res);

		col->name = entry_strdup(e, row[0] ? row[0] : "", row[0] ? lens[0] : 0);
		col->data_type = entry_strdup(e, row[1] ? row[1] : "", row[1] ? lens[1] : 0);
		col->is_unsigned = row[2] && strstr(row[2], "unsigned") != NULL;
		col->charset_name = row[3] ? entry_strdup(e, row[3], lens[3]) : NULL;
		col->is_pk = row[4] && strcmp(row[4], "PRI") == 0;
		if (row[1] && row[2] && (strcmp(row[1], "enum") == 0 || strcmp(row[1], "set") == 0))
			parse_members(e, col, row[2]);
	}
	mysql_free_result(res);
	e->def.ncols = n;
	e->def.cols = e->cols;
	return e;
}

const bl_schema_table *
bl_schema_cache_lookup(void *arg, const char *schema, const char *table)
{
	bl_schema_cache *c = (bl_schema_cache *) arg;
	schema_entry *e;

	for (e = c->entries; e; e = e->next)
		if (strcmp(e->schema, schema) == 0 && strcmp(e->table, table) == 0)
			return e->missing ? NULL : &e->def;
	e = load_table(c, schema, table);
	if (e == NULL)
		return NULL;
	e->next = c->entries;
	c->entries = e;
	return e->missing ? NULL : &e->def;
}

void
bl_schema_cache_invalidate(bl_schema_cache *c, const char *schema, const char *table)
{
	schema_entry **link = &c->entries;

	while (*link)
	{
		schema_entry *e = *link;

		if ((schema == NULL || strcmp(e->schema, schema) == 0) &&
			(table == NULL || strcmp(e->table, table) == 0))
		{
			*link = e->next;
			entry_free(e);
		}
		else
			link = &e->next;
	}
}

const char *
bl_schema_cache_error(const bl_schema_cache *c)
{
	return c->error;
}

void
bl_schema_cache_destroy(bl_schema_cache *c)
{
	if (c == NULL)
		return;
	bl_schema_cache_invalidate(c, NULL, NULL);
	if (c->conn && !c->borrowed)
		mysql_close(c->conn);
	free(c);
}

static bool
system_schema(const char *s)
{
	return strcmp(s, "mysql") == 0 || strcmp(s, "information_schema") == 0 ||
		strcmp(s, "performance_schema") == 0 || strcmp(s, "sys") == 0;
}

/* rows of (schema, table or NULL, charset or collation) */
static int
list_query(bl_schema_cache *c, const char *sql, bl_schema_table_fn fn, void *arg, bool tables,
		   bl_error *err)
{
	MYSQL_RES  *res;
	MYSQL_ROW	row;

	if (mysql_query(c->conn, sql) != 0 || (res = mysql_store_result(c->conn)) == NULL)
		return bl_error_set(err, BL_ERR_IO, "reading information_schema: %s", mysql_error(c->conn));
	while ((row = mysql_fetch_row(res)) != NULL)
	{
		char		cs[128];
		const char *coll = row[tables ? 2 : 1] ? row[tables ? 2 : 1] : "";
		size_t		n = tables ? strcspn(coll, "_") : strlen(coll);

		/* TABLE_COLLATION: the charset is its prefix; SCHEMATA gives it */
		if (row[0] == NULL || system_schema(row[0]))
			continue;
		snprintf(cs, sizeof(cs), "%.*s", (int) (n < sizeof(cs) ? n : sizeof(cs) - 1), coll);
		fn(arg, row[0], tables && row[1] ? row[1] : "", cs);
	}
	mysql_free_result(res);
	return 0;
}

int
bl_schema_cache_list(bl_schema_cache *c, bl_schema_table_fn table_fn, bl_schema_table_fn db_fn,
					 void *arg, bl_error *err)
{
	if (list_query(c, "SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_COLLATION FROM information_schema.TABLES "
				   "WHERE TABLE_TYPE = 'BASE TABLE' "
				   "AND TABLE_SCHEMA NOT IN ('mysql', 'sys', 'information_schema', 'performance_schema')",
				   table_fn, arg, true, err) != 0)
		return -1;
	return list_query(c, "SELECT SCHEMA_NAME, DEFAULT_CHARACTER_SET_NAME FROM information_schema.SCHEMATA",
					  db_fn, arg, false, err);
}

int
bl_schema_cache_table_charset(bl_schema_cache *c, const char *schema, const char *table,
							  char *out, size_t outlen, bl_error *err)
{
	char		sql[2048];
	char		s_esc[512],
				t_esc[512];
	char		coll[256];

	if (strlen(schema) > 200 || strlen(table) > 200)
		return bl_error_set(err, BL_ERR_UNSUPPORTED, "name too long: %s.%s", schema, table);
	mysql_real_escape_string(c->conn, s_esc, schema, (unsigned long) strlen(schema));
	mysql_real_escape_string(c->conn, t_esc, table, (unsigned long) strlen(table));
	snprintf(sql, sizeof(sql),
			 "SELECT TABLE_COLLATION FROM information_schema.TABLES "
			 "WHERE TABLE_SCHEMA = '%s' AND TABLE_NAME = '%s'", s_esc, t_esc);
	if (bl_mysql_query_value(c->conn, sql, coll, sizeof(coll), err) != 0)
		return -1;
	/* the charset is the collation's prefix, as in bl_schema_cache_list */
	if (strcspn(coll, "_") >= outlen)
		return bl_error_set(err, BL_ERR_UNSUPPORTED, "character set name too long: %s", coll);
	snprintf(out, outlen, "%.*s", (int) strcspn(coll, "_"), coll);
	return 0;
}
