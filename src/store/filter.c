/*
 * filter.c
 *	  include/exclude regular expressions (PostgreSQL's regex engine, ARE
 *	  syntax) matched against "schema.table".  A table passes if it matches
 *	  include (or there is none) and does not match exclude.  Decisions are
 *	  cached per table name.  Also the rules of binlog_fdw.filters (columns,
 *	  masks, operations, row filter) per source and per table, merged per
 *	  table and cached the same way, and their record in filter_history.
 */
#include "store/store.h"

#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "mb/pg_wchar.h"
#include "regex/regex.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#define FILTER_KEY_LEN	(2 * 64 * 4 + 2)

typedef struct filter_cache_entry
{
	char		key[FILTER_KEY_LEN];
	bool		pass;
} filter_cache_entry;

typedef struct rule_cache_entry
{
	char		key[FILTER_KEY_LEN];
	const blpg_filter_rule *rule;
} rule_cache_entry;

struct blpg_filter
{
	bool		has_include;
	bool		has_exclude;
	regex_t		include;
	regex_t		exclude;
	HTAB	   *cache;
	MemoryContext cxt;			/* the rules and their cache */
	List	   *rules;			/* blpg_filter_rule as read, one per source */
	const blpg_filter_rule *star;	/* that of "*", or NULL */
	HTAB	   *rule_cache;		/* "schema.table" -> merged rule */
};

static void
compile(regex_t *re, const char *pattern)
{
	int			len = strlen(pattern);
	pg_wchar   *wide = palloc((len + 1) * sizeof(pg_wchar));
	int			wlen = pg_mb2wchar_with_len(pattern, wide, len);
	int			rc = pg_regcomp(re, wide, wlen, REG_ADVANCED | REG_NOSUB, C_COLLATION_OID);

	if (rc != REG_OKAY)
	{
		char		msg[256];

		pg_regerror(rc, re, msg, sizeof(msg));
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_REGULAR_EXPRESSION),
				 errmsg("invalid regular expression \"%s\": %s", pattern, msg)));
	}
	pfree(wide);
}

static bool
matches(regex_t *re, const char *s, int len)
{
	pg_wchar   *wide = palloc((len + 1) * sizeof(pg_wchar));
	int			wlen = pg_mb2wchar_with_len(s, wide, len);
	int			rc = pg_regexec(re, wide, wlen, 0, NULL, 0, NULL, 0);

	pfree(wide);
	if (rc != REG_OKAY && rc != REG_NOMATCH)
	{
		char		msg[256];

		pg_regerror(rc, re, msg, sizeof(msg));
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_REGULAR_EXPRESSION),
				 errmsg("regular expression failed: %s", msg)));
	}
	return rc == REG_OKAY;
}

blpg_filter *
blpg_filter_create(const char *include, const char *exclude)
{
	blpg_filter *f = palloc0(sizeof(blpg_filter));
	HASHCTL		ctl;

	f->cxt = CurrentMemoryContext;

	if (include && include[0])
	{
		compile(&f->include, include);
		f->has_include = true;
	}
	if (exclude && exclude[0])
	{
		compile(&f->exclude, exclude);
		f->has_exclude = true;
	}
	ctl.keysize = FILTER_KEY_LEN;
	ctl.entrysize = sizeof(filter_cache_entry);
	f->cache = hash_create("binlog_fdw filter", 256, &ctl, HASH_ELEM | HASH_STRINGS);
	return f;
}

bool
blpg_filter_match(blpg_filter *f, const char *schema, size_t schema_len,
				  const char *table, size_t table_len)
{
	char		key[FILTER_KEY_LEN];
	filter_cache_entry *e;
	bool		found;
	int			len;

	if (!f->has_include && !f->has_exclude)
		return true;
	len = snprintf(key, sizeof(key), "%.*s.%.*s", (int) schema_len, schema,
				   (int) table_len, table);
	if (len >= (int) sizeof(key))
		len = sizeof(key) - 1;
	/* names from the binlog are UTF-8, like the database (checked at start) */
	e = hash_search(f->cache, key, HASH_ENTER, &found);
	if (!found)
	{
		e->pass = (!f->has_include || matches(&f->include, key, len)) &&
			!(f->has_exclude && matches(&f->exclude, key, len));
		if (hash_get_num_entries(f->cache) > 100000)
		{
			bool		pass = e->pass;

			hash_destroy(f->cache);
			{
				HASHCTL		ctl;

				ctl.keysize = FILTER_KEY_LEN;
				ctl.entrysize = sizeof(filter_cache_entry);
				f->cache = hash_create("binlog_fdw filter", 256, &ctl, HASH_ELEM | HASH_STRINGS);
			}
			return pass;
		}
	}
	return e->pass;
}

/* ---- rules of binlog_fdw.filters ---- */

static const char *const op_names[] = {"insert", "update", "delete", "truncate", "ddl"};

static blpg_filter_rule *
new_rule(const char *source)
{
	blpg_filter_rule *r = palloc0(sizeof(blpg_filter_rule));

	r->ops = -1;
	r->source = pstrdup(source);
	r->own_columns = r->own_masks = strcmp(source, "*") != 0;
	return r;
}

/*
 * The source's rows, one per field value (operations, columns, masks
 * unnested), so that each comes back as text: kind, name, value.
 */
#define RULES_QUERY \
	"SELECT f.source, x.kind, x.name, x.value FROM binlog_fdw.filters f " \
	"CROSS JOIN LATERAL (" \
	"  SELECT 'rule'::text, NULL::text, NULL::text" \
	"  UNION ALL SELECT 'operation', o, NULL FROM unnest(f.operations) o" \
	"  UNION ALL SELECT 'column', c, NULL FROM unnest(f.columns) c" \
	"  UNION ALL SELECT 'exclude', c, NULL FROM unnest(f.exclude_columns) c" \
	"  UNION ALL SELECT CASE WHEN e.value ? 'hash' THEN 'sha256'" \
	"                        WHEN jsonb_typeof(e.value->'value') = 'null' THEN 'null'" \
	"                        ELSE 'value' END, e.key, e.value->>'value'" \
	"    FROM jsonb_each(f.mask) e" \
	"  UNION ALL SELECT 'row_filter', NULL, f.row_filter WHERE f.row_filter IS NOT NULL" \
	") x(kind, name, value) WHERE f.server_name = $1 ORDER BY f.source"

/* The set as JSON, compared with the last one recorded. */
#define RECORD_QUERY \
	"WITH cur AS (SELECT coalesce(jsonb_agg(to_jsonb(f) - 'server_name' - 'set_at' ORDER BY f.source)," \
	"                             '[]') AS filters" \
	"               FROM binlog_fdw.filters f WHERE f.server_name = $1)," \
	"     last AS (SELECT h.seq, h.filters FROM binlog_fdw.filter_history h" \
	"               WHERE h.server_name = $1 ORDER BY h.seq DESC LIMIT 1) " \
	"INSERT INTO binlog_fdw.filter_history" \
	"       (server_name, seq, filters, binlog_file, binlog_pos, skip, gtid_state) " \
	"SELECT $1, coalesce((SELECT seq FROM last), 0) + 1, cur.filters, $2, $3, $4, $5 FROM cur " \
	" WHERE cur.filters IS DISTINCT FROM (SELECT filters FROM last)" \
	"   AND (cur.filters <> '[]' OR EXISTS (SELECT FROM last))"

void
blpg_filter_load_rules(blpg_filter *f, const char *server_name, bool record,
					   const blpg_position *start)
{
	Oid			argtypes[5] = {TEXTOID, TEXTOID, INT8OID, INT8OID, TEXTOID};
	Datum		args[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};
	blpg_filter_rule *cur = NULL;
	MemoryContext old;
	HASHCTL		ctl;

	/* 0.1's tables (until ALTER EXTENSION UPDATE) have no filters */
	f->rules = NIL;
	f->star = NULL;
	if (blpg_tables_legacy())
		return;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	args[0] = CStringGetTextDatum(server_name);
	if (SPI_execute_with_args(RULES_QUERY, 1, argtypes, args, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read binlog_fdw.filters");
	old = MemoryContextSwitchTo(f->cxt);
	f->rules = NIL;
	f->star = NULL;
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	td = SPI_tuptable->tupdesc;
		char	   *source = SPI_getvalue(tup, td, 1);
		char	   *kind = SPI_getvalue(tup, td, 2);
		char	   *name = SPI_getvalue(tup, td, 3);
		char	   *value = SPI_getvalue(tup, td, 4);

		if (strcmp(kind, "rule") == 0)
		{
			cur = new_rule(source);
			f->rules = lappend(f->rules, cur);
			if (strcmp(source, "*") == 0)
				f->star = cur;
		}
		else if (cur == NULL)
			elog(ERROR, "binlog_fdw.filters: a field before its rule");
		else if (strcmp(kind, "operation") == 0)
		{
			if (cur->ops < 0)
				cur->ops = 0;
			for (int k = 0; k < lengthof(op_names); k++)
				if (strcmp(name, op_names[k]) == 0)
					cur->ops |= 1 << k;
		}
		else if (strcmp(kind, "column") == 0)
			cur->columns = lappend(cur->columns, name);
		else if (strcmp(kind, "exclude") == 0)
			cur->exclude = lappend(cur->exclude, name);
		else if (strcmp(kind, "row_filter") == 0)
			cur->row_filter = value;
		else
		{
			blpg_filter_mask *m = palloc0(sizeof(blpg_filter_mask));

			m->column = name;
			m->kind = strcmp(kind, "sha256") == 0 ? BLPG_MASK_SHA256 :
				strcmp(kind, "null") == 0 ? BLPG_MASK_NULL : BLPG_MASK_VALUE;
			m->value = value;
			cur->masks = lappend(cur->masks, m);
		}
	}
	if (f->rule_cache)
		hash_destroy(f->rule_cache);
	ctl.keysize = FILTER_KEY_LEN;
	ctl.entrysize = sizeof(rule_cache_entry);
	ctl.hcxt = f->cxt;
	f->rule_cache = hash_create("binlog_fdw filter rules", 64, &ctl,
								HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	MemoryContextSwitchTo(old);

	if (record)
	{
		if (start && start->file[0])
		{
			args[1] = CStringGetTextDatum(start->file);
			args[2] = Int64GetDatum((int64) start->pos);
			args[3] = Int64GetDatum((int64) start->skip);
		}
		else
			nulls[1] = nulls[2] = nulls[3] = 'n';
		if (start && start->gtid_state)
			args[4] = CStringGetTextDatum(start->gtid_state);
		else
			nulls[4] = 'n';
		if (SPI_execute_with_args(RECORD_QUERY, 5, argtypes, args, nulls, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "could not write binlog_fdw.filter_history");

		/*
		 * The changes of a transaction are numbered among those the filters
		 * keep: a partly acknowledged one must be read again with the
		 * filters it was numbered with.
		 */
		if (SPI_processed > 0 && start && start->skip > 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("source \"%s\": the filters changed while the transaction at binlog %s:%llu is partly acknowledged (%llu changes)",
							server_name, start->file, (unsigned long long) start->pos,
							(unsigned long long) start->skip),
					 errdetail("The acknowledged changes are counted among those the filters of binlog_fdw.filter_history's last row keep."),
					 errhint("Restore those filters with binlog_fdw.set_filter(), let the consumer acknowledge the rest of the transaction, then change them.")));
	}
	SPI_finish();
}

static blpg_filter_rule *
merge_rules(const blpg_filter_rule *table, const blpg_filter_rule *star)
{
	blpg_filter_rule *r = palloc0(sizeof(blpg_filter_rule));

	r->source = table->source;
	r->ops = table->ops >= 0 ? table->ops : star->ops;
	/* a list of columns kept or left out replaces the other kind */
	if (table->columns != NIL || table->exclude != NIL)
	{
		r->columns = table->columns;
		r->exclude = table->exclude;
		r->own_columns = true;
	}
	else
	{
		r->columns = star->columns;
		r->exclude = star->exclude;
	}
	r->masks = table->masks != NIL ? table->masks : star->masks;
	r->own_masks = table->masks != NIL;
	r->row_filter = table->row_filter;
	return r;
}

const blpg_filter_rule *
blpg_filter_rule_of(blpg_filter *f, const char *schema, size_t schema_len,
					const char *table, size_t table_len)
{
	char		key[FILTER_KEY_LEN];
	rule_cache_entry *e;
	bool		found;

	if (f->rules == NIL)
		return NULL;
	snprintf(key, sizeof(key), "%.*s.%.*s", (int) schema_len, schema, (int) table_len, table);
	e = hash_search(f->rule_cache, key, HASH_ENTER, &found);
	if (!found)
	{
		const blpg_filter_rule *exact = NULL;
		ListCell   *lc;
		MemoryContext old;

		e->rule = f->star;
		foreach(lc, f->rules)
		{
			blpg_filter_rule *r = lfirst(lc);

			/* the cache key may be cut short: compare the whole name */
			if (strlen(r->source) == schema_len + 1 + table_len &&
				strncmp(r->source, schema, schema_len) == 0 &&
				r->source[schema_len] == '.' &&
				strncmp(r->source + schema_len + 1, table, table_len) == 0)
				exact = r;
		}
		if (exact)
		{
			old = MemoryContextSwitchTo(f->cxt);
			e->rule = f->star ? merge_rules(exact, f->star) : exact;
			MemoryContextSwitchTo(old);
		}
	}
	return e->rule;
}

bool
blpg_filter_keeps_op(const blpg_filter_rule *rule, int op)
{
	return rule == NULL || rule->ops < 0 || (rule->ops & op) != 0;
}

static bool
name_in(List *names, const char *name)
{
	ListCell   *lc;

	foreach(lc, names)
		if (pg_strcasecmp((const char *) lfirst(lc), name) == 0)
			return true;
	return false;
}

bool
blpg_filter_drops_column(const blpg_filter_rule *rule, const char *name)
{
	if (rule == NULL)
		return false;
	if (rule->columns != NIL)
		return !name_in(rule->columns, name);
	return name_in(rule->exclude, name);
}
