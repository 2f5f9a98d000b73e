/*
 * filter.c
 *	  include/exclude regular expressions (PostgreSQL's regex engine, ARE
 *	  syntax) matched against "schema.table".  A table passes if it matches
 *	  include (or there is none) and does not match exclude.  Decisions are
 *	  cached per table name.
 */
#include "store/store.h"

#include "catalog/pg_collation.h"
#include "mb/pg_wchar.h"
#include "regex/regex.h"
#include "utils/hsearch.h"

#define FILTER_KEY_LEN	(2 * 64 * 4 + 2)

typedef struct filter_cache_entry
{
	char		key[FILTER_KEY_LEN];
	bool		pass;
} filter_cache_entry;

struct blpg_filter
{
	bool		has_include;
	bool		has_exclude;
	regex_t		include;
	regex_t		exclude;
	HTAB	   *cache;
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
