/*
 * changes.c
 *	  Changes out of ring entries, as SQL values (see store.h).
 *
 * ROWS entries hold canonical binlog events, decoded here by a decoder in
 * canonical format; its table cache makes repeated table maps cheap.  Row
 * images become jsonb values built directly (see "jsonb values" below), or,
 * in JSON text mode (get_json()), json text as the decoder writes it; or
 * whole changes become lines of JSON (get_jsonl()).  The apply path does
 * not use this file.
 */
#include "store/store.h"

#include "bl_charset.h"
#include "bl_event_json.h"
#include "bl_value_text.h"

#include "catalog/pg_type.h"
#include "common/jsonapi.h"
#include "mb/pg_wchar.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/jsonfuncs.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

const char *const blpg_change_col_names[BLPG_NCOLS] = {
	"seq", "file", "pos", "next_pos", "gtid", "xid", "commit_time",
	"event_time", "server_id", "schema_name", "table_name", "op",
	"pk_columns", "primary_key", "before", "after", "ddl"
};

int
blpg_change_col_by_name(const char *name)
{
	for (int i = 0; i < BLPG_NCOLS; i++)
		if (strcmp(blpg_change_col_names[i], name) == 0)
			return i;
	return -1;
}

struct blpg_change_iter
{
	StringInfo	entries;
	size_t		off;			/* next entry in entries */
	uint64		first_seq;
	uint64		last_seq;
	bool		want[BLPG_NCOLS];
	blpg_change_filter filter;

	/* the entry being read */
	const blpg_entry *e;
	blpg_entry_view v;
	uint64		seq;			/* next change of it */
	bl_event	rows_ev;		/* ROWS: the decoded rows event */
	bool		rows_open;

	bool		json_text;		/* images as json text, not jsonb */

	/* columns that are the same for every change of the entry */
	bool		entry_ready;
	Datum		e_file,
				e_gtid,
				e_schema,
				e_table,
				e_op;

	bl_decoder *dec;
	bl_buf		buf;
	bl_buf		line_entry;		/* JSON lines: the entry's fields */
	MemoryContext cxt;			/* reset for each change */
	MemoryContext ecxt;			/* reset for each entry */
};

/* Each backend keeps one canonical decoder (tables stay cached). */
static bl_decoder *canonical_decoder = NULL;

bl_decoder *
blpg_canonical_decoder(void)
{
	if (canonical_decoder == NULL)
	{
		canonical_decoder = bl_decoder_create(NULL);
		if (canonical_decoder == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory creating a binlog decoder")));
		bl_decoder_set_canonical_format(canonical_decoder);
	}
	return canonical_decoder;
}

const char *
blpg_entry_op_name(const blpg_entry *e)
{
	switch (e->kind)
	{
		case BLPG_ENTRY_BEGIN:
			return "begin";
		case BLPG_ENTRY_COMMIT:
			return "commit";
		case BLPG_ENTRY_DDL:
			return "ddl";
		case BLPG_ENTRY_ROWS:
			return bl_op_name((bl_op) e->op);
	}
	return "?";
}

blpg_change_iter *
blpg_change_iter_create(StringInfo entries, uint64 first_seq, uint64 last_seq,
						const bool *want, const blpg_change_filter *filter)
{
	blpg_change_iter *it = palloc0(sizeof(blpg_change_iter));

	it->entries = entries;
	it->first_seq = first_seq;
	it->last_seq = last_seq;
	for (int i = 0; i < BLPG_NCOLS; i++)
		it->want[i] = want == NULL || want[i];
	if (filter)
		it->filter = *filter;
	it->dec = blpg_canonical_decoder();
	bl_buf_init(&it->buf);
	bl_buf_init(&it->line_entry);
	it->cxt = AllocSetContextCreate(CurrentMemoryContext, "binlog_fdw change",
									ALLOCSET_DEFAULT_SIZES);
	it->ecxt = AllocSetContextCreate(CurrentMemoryContext, "binlog_fdw change entry",
									 ALLOCSET_SMALL_SIZES);
	return it;
}

void
blpg_change_iter_set_json_text(blpg_change_iter *it, bool json_text)
{
	it->json_text = json_text;
}

void
blpg_change_iter_free(blpg_change_iter *it)
{
	bl_buf_free(&it->buf);
	bl_buf_free(&it->line_entry);
	MemoryContextDelete(it->cxt);
	MemoryContextDelete(it->ecxt);
	pfree(it);
}

static bool
str_eq(const char *a, size_t alen, const char *b)
{
	return strlen(b) == alen && memcmp(a, b, alen) == 0;
}

static bool
entry_passes(blpg_change_iter *it, const blpg_entry *e, const blpg_entry_view *v)
{
	if (it->filter.schema && !str_eq(v->schema, e->schema_len, it->filter.schema))
		return false;
	if (it->filter.table && !str_eq(v->table, e->table_len, it->filter.table))
		return false;
	if (it->filter.op && strcmp(blpg_entry_op_name(e), it->filter.op) != 0)
		return false;
	return true;
}

Datum
blpg_text_utf8(const char *s, size_t len)
{
	char	   *conv = pg_any_to_server(s, (int) len, PG_UTF8);

	if (conv == s)
		return PointerGetDatum(cstring_to_text_with_len(s, (int) len));
	return PointerGetDatum(cstring_to_text(conv));
}

static void
check(int rc, const bl_error *err)
{
	if (rc < 0)
		blpg_report_decoder_error(ERROR, err, NULL);
}

/* ---- jsonb values ------------------------------------------------------
 *
 * A row image (or a primary key) becomes a jsonb object built directly,
 * without JSON text for the whole image and without jsonb_in.  Nulls,
 * integers and UTF-8 text of printable ASCII become JsonbValues as they
 * are; any other value goes through the decoder's JSON text of it
 * (bl_value_to_json: the text binlogcat and get_json() show), turned into
 * a JsonbValue by hand where that is simple (strings, numbers, null) and
 * by PostgreSQL's JSON parser otherwise (SET arrays, JSON documents,
 * strings with \u escapes).  The result is byte for byte the jsonb that
 * jsonb_in makes of the image's JSON text: the same keys (column names in
 * the server encoding) in jsonb's order (shorter first, then bytewise; of
 * equal keys the last one wins), numerics from numeric_in of the same
 * digits (int64_to_numeric gives the same), the same strings.  The decoder
 * escapes '"', '\' and control characters in every string it writes, so a
 * string token needs no other check.  A table's keys in jsonb order are
 * computed once per table definition of the canonical decoder (its table
 * versions are never reused) and cached.
 */

typedef struct jb_keys
{
	const bl_table *table;		/* what this describes: the table and */
	uint32		version;		/* its version (the canonical decoder's) */
	MemoryContext cxt;			/* holds all of this */
	uint32		ncols;
	JsonbValue *keys;			/* per column: jbvString, server encoding */
	uint32	   *order;			/* columns in jsonb key order */
	uint32		npk;
	uint32	   *pk_order;		/* primary key columns in jsonb key order */
	bool	   *utf8;			/* per column: text in UTF-8 (or unknown) */
	bool		dup;			/* two columns have the same key */
	Datum		pk_columns;		/* text[] of the key's column names, or 0 */
} jb_keys;

#define JB_KEY_CACHE 32
static jb_keys *key_cache[JB_KEY_CACHE];
static int	key_cache_next = 0;
static int	key_cache_last = 0;
static MemoryContext key_cache_cxt = NULL;

/* Scratch space of the image builder, kept between rows (not reentrant). */
#define JB_NO_TEXT ((size_t) -1)
#define JB_TEXT_KEEP (1024 * 1024)
static struct
{
	bl_buf		text;			/* JSON text of the values of one object */
	bl_buf		key;			/* JSON text of one key */
	JsonbPair  *pairs;
	size_t	   *start;			/* per pair: its value's text in text, or
								 * JB_NO_TEXT */
	size_t	   *len;
	uint32		cap;
}			jb;

static void
jb_reserve(uint32 n)
{
	if (n <= jb.cap)
		return;
	n = Max(n, 64);
	if (jb.pairs)
	{
		pfree(jb.pairs);
		pfree(jb.start);
		pfree(jb.len);
	}
	jb.pairs = MemoryContextAlloc(TopMemoryContext, sizeof(JsonbPair) * n);
	jb.start = MemoryContextAlloc(TopMemoryContext, sizeof(size_t) * n);
	jb.len = MemoryContextAlloc(TopMemoryContext, sizeof(size_t) * n);
	jb.cap = n;
}

static void
jb_check_string_len(size_t len)
{
	if (len > JENTRY_OFFLENMASK)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("string too long to represent as jsonb string"),
				 errdetail("Due to an implementation restriction, jsonb strings cannot exceed %d bytes.",
						   JENTRY_OFFLENMASK)));
}

/* JSON text through PostgreSQL's parser, as jsonb_in does it. */
typedef struct jb_parse_state
{
	JsonbParseState *ps;
	JsonbValue *res;
} jb_parse_state;

static void
jb_parse_object_start(void *arg)
{
	jb_parse_state *st = arg;

	st->res = pushJsonbValue(&st->ps, WJB_BEGIN_OBJECT, NULL);
}

static void
jb_parse_object_end(void *arg)
{
	jb_parse_state *st = arg;

	st->res = pushJsonbValue(&st->ps, WJB_END_OBJECT, NULL);
}

static void
jb_parse_array_start(void *arg)
{
	jb_parse_state *st = arg;

	st->res = pushJsonbValue(&st->ps, WJB_BEGIN_ARRAY, NULL);
}

static void
jb_parse_array_end(void *arg)
{
	jb_parse_state *st = arg;

	st->res = pushJsonbValue(&st->ps, WJB_END_ARRAY, NULL);
}

static void
jb_parse_field(void *arg, char *fname, bool isnull)
{
	jb_parse_state *st = arg;
	JsonbValue	v;

	v.type = jbvString;
	v.val.string.len = strlen(fname);
	jb_check_string_len(v.val.string.len);
	v.val.string.val = fname;
	st->res = pushJsonbValue(&st->ps, WJB_KEY, &v);
}

static void
jb_parse_scalar(void *arg, char *token, JsonTokenType tokentype)
{
	jb_parse_state *st = arg;
	JsonbValue	v;

	switch (tokentype)
	{
		case JSON_TOKEN_STRING:
			v.type = jbvString;
			v.val.string.len = strlen(token);
			jb_check_string_len(v.val.string.len);
			v.val.string.val = token;
			break;
		case JSON_TOKEN_NUMBER:
			v.type = jbvNumeric;
			v.val.numeric = DatumGetNumeric(DirectFunctionCall3(numeric_in,
																CStringGetDatum(token),
																ObjectIdGetDatum(InvalidOid),
																Int32GetDatum(-1)));
			break;
		case JSON_TOKEN_TRUE:
			v.type = jbvBool;
			v.val.boolean = true;
			break;
		case JSON_TOKEN_FALSE:
			v.type = jbvBool;
			v.val.boolean = false;
			break;
		case JSON_TOKEN_NULL:
			v.type = jbvNull;
			break;
		default:
			elog(ERROR, "invalid json token type");
	}
	if (st->ps == NULL)
	{
		/* the whole text is this scalar: it is the value itself */
		st->res = palloc(sizeof(JsonbValue));
		*st->res = v;
	}
	else if (st->ps->contVal.type == jbvArray)
		st->res = pushJsonbValue(&st->ps, WJB_ELEM, &v);
	else
		st->res = pushJsonbValue(&st->ps, WJB_VALUE, &v);
}

static void
jb_parse(char *s, int len, JsonbValue *out)
{
	JsonLexContext *lex = makeJsonLexContextCstringLen(s, len, GetDatabaseEncoding(), true);
	jb_parse_state st;
	JsonSemAction sem;

	memset(&st, 0, sizeof(st));
	memset(&sem, 0, sizeof(sem));
	sem.semstate = &st;
	sem.object_start = jb_parse_object_start;
	sem.object_end = jb_parse_object_end;
	sem.array_start = jb_parse_array_start;
	sem.array_end = jb_parse_array_end;
	sem.object_field_start = jb_parse_field;
	sem.scalar = jb_parse_scalar;
	pg_parse_json_or_ereport(lex, &sem);
	*out = *st.res;
}

/* Is s[0..len) a JSON number (-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?)? */
static bool
jb_is_number(const char *s, int len)
{
	int			i = 0;

	if (i < len && s[i] == '-')
		i++;
	if (i >= len)
		return false;
	if (s[i] == '0')
		i++;
	else if (s[i] >= '1' && s[i] <= '9')
		while (i < len && s[i] >= '0' && s[i] <= '9')
			i++;
	else
		return false;
	if (i < len && s[i] == '.')
	{
		int			d = ++i;

		while (i < len && s[i] >= '0' && s[i] <= '9')
			i++;
		if (i == d)
			return false;
	}
	if (i < len && (s[i] == 'e' || s[i] == 'E'))
	{
		int			d;

		i++;
		if (i < len && (s[i] == '+' || s[i] == '-'))
			i++;
		d = i;
		while (i < len && s[i] >= '0' && s[i] <= '9')
			i++;
		if (i == d)
			return false;
	}
	return i == len;
}

/*
 * The numeric of JSON number text s[0..len) (jb_is_number), as numeric_in
 * makes it: integers and decimals of up to 18 digits (the decoder's
 * DECIMAL values, mostly) from their digits as an int64 and the number of
 * fractional digits as the scale, others by numeric_in.
 */
static Numeric
jb_numeric(const char *s, int len)
{
	char		tmp[128];
	char	   *z;
	int64		v = 0;
	int			digits = 0,
				scale = -1,
				i = s[0] == '-' ? 1 : 0;

	for (; i < len; i++)
	{
		if (s[i] >= '0' && s[i] <= '9')
		{
			if (++digits > 18)
				break;
			v = v * 10 + (s[i] - '0');
			if (scale >= 0)
				scale++;
		}
		else if (s[i] == '.' && scale < 0)
			scale = 0;
		else
			break;				/* an exponent */
	}
	if (i == len)
		return int64_div_fast_to_numeric(s[0] == '-' ? -v : v, Max(scale, 0));

	z = len < (int) sizeof(tmp) ? tmp : palloc(len + 1);

	memcpy(z, s, len);
	z[len] = '\0';
	return DatumGetNumeric(DirectFunctionCall3(numeric_in, CStringGetDatum(z),
											   ObjectIdGetDatum(InvalidOid),
											   Int32GetDatum(-1)));
}

/*
 * The value of the JSON string token s[0..len) (quotes included); false if
 * it has an escape other than \" \\ \/ \b \f \n \r \t, a control character
 * or a '"' before its end (the parser's job).  Without escapes the value
 * points into s.
 */
static bool
jb_string(char *s, int len, JsonbValue *v)
{
	char	   *p = s + 1;
	char	   *end = s + len - 1;
	char	   *out;
	int			n;

	v->type = jbvString;
	if (memchr(p, '\\', end - p) == NULL)
	{
		v->val.string.val = p;
		v->val.string.len = end - p;
		jb_check_string_len(v->val.string.len);
		return true;
	}
	out = palloc(end - p);
	/* up to the closing quote, which must be the token's last byte */
	if (bl_json_string_unescape(p, end + 1, out, &n) != end)
	{
		pfree(out);
		return false;
	}
	v->val.string.val = out;
	v->val.string.len = n;
	jb_check_string_len(v->val.string.len);
	return true;
}

/* The JsonbValue of the text s[0..len) of one JSON value (server encoding). */
static void
jb_text_value(char *s, int len, JsonbValue *v)
{
	if (len >= 2 && s[0] == '"' && s[len - 1] == '"' && jb_string(s, len, v))
		return;
	if (len > 0 && (s[0] == '-' || (s[0] >= '0' && s[0] <= '9')) && jb_is_number(s, len))
	{
		v->type = jbvNumeric;
		v->val.numeric = jb_numeric(s, len);
		return;
	}
	if (len == 4 && memcmp(s, "null", 4) == 0)
	{
		v->type = jbvNull;
		return;
	}
	jb_parse(s, len, v);
}

/* Does the server encoding take the decoder's UTF-8 as it is? */
static bool
jb_utf8_server(void)
{
	int			enc = GetDatabaseEncoding();

	return enc == PG_UTF8 || enc == PG_SQL_ASCII;
}

static int
jb_key_cmp(const JsonbValue *a, const JsonbValue *b)
{
	if (a->val.string.len != b->val.string.len)
		return a->val.string.len > b->val.string.len ? 1 : -1;
	return memcmp(a->val.string.val, b->val.string.val, a->val.string.len);
}

/* qsort_arg comparators: columns (then the later one first) ... */
static int
jb_col_cmp(const void *a, const void *b, void *arg)
{
	const JsonbValue *keys = arg;
	uint32		ia = *(const uint32 *) a;
	uint32		ib = *(const uint32 *) b;
	int			r = jb_key_cmp(&keys[ia], &keys[ib]);

	return r ? r : (ia > ib ? -1 : 1);
}

/* ... and positions in a table's primary key */
typedef struct jb_pk_sort
{
	const JsonbValue *keys;
	const uint32 *pk;
} jb_pk_sort;

static int
jb_pk_cmp(const void *a, const void *b, void *arg)
{
	const jb_pk_sort *s = arg;
	uint32		ka = *(const uint32 *) a;
	uint32		kb = *(const uint32 *) b;
	int			r = jb_key_cmp(&s->keys[s->pk[ka]], &s->keys[s->pk[kb]]);

	return r ? r : (ka > kb ? -1 : 1);
}

/* The keys of table t in jsonb order, in a new memory context under parent. */
static jb_keys *
jb_keys_build(const bl_table *t, MemoryContext parent)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "binlog_fdw jsonb keys",
											  ALLOCSET_SMALL_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	jb_keys    *k = palloc0(sizeof(jb_keys));
	uint32	   *pos;
	jb_pk_sort	ps;

	k->table = t;
	k->version = t->version;
	k->cxt = cxt;
	k->ncols = t->ncols;
	k->keys = palloc(sizeof(JsonbValue) * Max(t->ncols, 1));
	k->order = palloc(sizeof(uint32) * Max(t->ncols, 1));
	k->utf8 = palloc(sizeof(bool) * Max(t->ncols, 1));
	for (uint32 i = 0; i < t->ncols; i++)
	{
		const char *cs = bl_charset_name(t->cols[i].charset);
		char	   *conv;
		int			len;
		JsonbValue	v;

		k->utf8[i] = cs == NULL || strcmp(cs, "utf8mb4") == 0 || strcmp(cs, "utf8mb3") == 0;

		bl_buf_reset(&jb.key);
		bl_column_key_json(t, i, &jb.key);
		if (bl_buf_failed(&jb.key))
		{
			bl_buf_free(&jb.key);
			ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
		}
		conv = pg_any_to_server(jb.key.data, (int) jb.key.len, PG_UTF8);
		len = conv == jb.key.data ? (int) jb.key.len : (int) strlen(conv);
		jb_text_value(conv, len, &v);
		if (v.type != jbvString)
			elog(ERROR, "binlog_fdw: the key of column %u is not a JSON string", i + 1);
		k->keys[i].type = jbvString;
		k->keys[i].val.string.len = v.val.string.len;
		k->keys[i].val.string.val = pnstrdup(v.val.string.val, v.val.string.len);
		k->order[i] = i;
	}
	if (t->ncols > 1)
		qsort_arg(k->order, t->ncols, sizeof(uint32), jb_col_cmp, k->keys);
	for (uint32 j = 1; j < t->ncols; j++)
		if (jb_key_cmp(&k->keys[k->order[j - 1]], &k->keys[k->order[j]]) == 0)
			k->dup = true;
	k->npk = t->npk;
	k->pk_order = palloc(sizeof(uint32) * Max(t->npk, 1));
	pos = palloc(sizeof(uint32) * Max(t->npk, 1));
	for (uint32 j = 0; j < t->npk; j++)
		pos[j] = j;
	ps.keys = k->keys;
	ps.pk = t->pk;
	if (t->npk > 1)
		qsort_arg(pos, t->npk, sizeof(uint32), jb_pk_cmp, &ps);
	for (uint32 j = 0; j < t->npk; j++)
		k->pk_order[j] = t->pk[pos[j]];
	if (t->npk)
	{
		Datum	   *names = palloc(sizeof(Datum) * t->npk);

		for (uint32 j = 0; j < t->npk; j++)
		{
			const bl_column *c = &t->cols[t->pk[j]];

			names[j] = c->name.ptr ? blpg_text_utf8(c->name.ptr, c->name.len) :
				CStringGetTextDatum(psprintf("@%u", t->pk[j] + 1));
		}
		k->pk_columns = PointerGetDatum(construct_array(names, t->npk, TEXTOID, -1, false,
														TYPALIGN_INT));
	}
	MemoryContextSwitchTo(old);
	MemoryContextSetParent(cxt, parent);
	return k;
}

/* The keys of a table of the canonical decoder, from the cache. */
static jb_keys *
jb_keys_cached(const bl_table *t)
{
	jb_keys    *k = key_cache[key_cache_last];

	if (k && k->table == t && k->version == t->version)
		return k;
	for (int i = 0; i < JB_KEY_CACHE; i++)
	{
		k = key_cache[i];
		if (k && k->table == t && k->version == t->version)
		{
			key_cache_last = i;
			return k;
		}
	}
	if (key_cache_cxt == NULL)
		key_cache_cxt = AllocSetContextCreate(TopMemoryContext, "binlog_fdw jsonb key cache",
											  ALLOCSET_SMALL_SIZES);
	k = jb_keys_build(t, key_cache_cxt);
	if (key_cache[key_cache_next])
		MemoryContextDelete(key_cache[key_cache_next]->cxt);
	key_cache[key_cache_next] = k;
	key_cache_last = key_cache_next;
	key_cache_next = (key_cache_next + 1) % JB_KEY_CACHE;
	return k;
}

/*
 * Are all bytes of s[0..len) printable ASCII (0x20-0x7F)?  Such UTF-8 text
 * is its own JSON string value: the decoder's escaping and the parser's
 * unescaping give back the same bytes.
 */
static bool
jb_printable_ascii(const uint8 *s, size_t len)
{
	const uint64 ones = UINT64CONST(0x0101010101010101);
	const uint64 highs = UINT64CONST(0x8080808080808080);
	size_t		i = 0;

	for (; i + 8 <= len; i += 8)
	{
		uint64		w;

		memcpy(&w, s + i, 8);
		/* a byte >= 0x80, or one < 0x20 (its borrow sets a high bit) */
		if (((w | (w - ones * 0x20)) & highs) != 0)
			return false;
	}
	for (; i < len; i++)
		if (s[i] < 0x20 || s[i] >= 0x80)
			return false;
	return true;
}

/*
 * The JsonbValue of v (column i) without its JSON text, if that is simple:
 * null, integers, printable ASCII text.
 */
static inline bool
jb_direct_value(const jb_keys *k, uint32 i, const bl_value *v, JsonbValue *out)
{
	switch ((bl_value_kind) v->kind)
	{
		case BL_VAL_ABSENT:
		case BL_VAL_NULL:
			out->type = jbvNull;
			return true;
		case BL_VAL_INT:
		case BL_VAL_YEAR:
			out->type = jbvNumeric;
			out->val.numeric = int64_to_numeric(v->v.i);
			return true;
		case BL_VAL_UINT:
			if (v->v.u > (uint64) PG_INT64_MAX)
				return false;
			out->type = jbvNumeric;
			out->val.numeric = int64_to_numeric((int64) v->v.u);
			return true;
		case BL_VAL_STRING:
			if (!k->utf8[i] || !jb_printable_ascii(v->v.raw.ptr, v->v.raw.len))
				return false;
			jb_check_string_len(v->v.raw.len);
			out->type = jbvString;
			out->val.string.val = v->v.raw.len ? (char *) v->v.raw.ptr : "";
			out->val.string.len = (int) v->v.raw.len;
			return true;
		default:
			return false;
	}
}

/*
 * The jsonb object of the values of the columns cols[0..n) of row (in
 * jsonb key order), with keys k.  Absent columns are left out, or are null
 * with absent_null (a primary key).  before: the before image, for partial
 * JSON updates (or NULL).
 */
static Datum
jb_object(const bl_table *t, const jb_keys *k, const uint32 *cols, uint32 n,
		  const bl_row *row, const bl_row *before, bool absent_null)
{
	uint32		np = 0;
	bl_error	err;
	JsonbValue	root;
	Jsonb	   *result;

	memset(&err, 0, sizeof(err));
	jb_reserve(Max(n, 1));
	bl_buf_reset(&jb.text);
	for (uint32 j = 0; j < n; j++)
	{
		uint32		i = cols[j];
		const bl_value *v;
		JsonbPair  *p;

		if (i >= row->ncols)
			continue;
		v = &row->values[i];
		if (v->kind == BL_VAL_ABSENT && !absent_null)
			continue;
		p = &jb.pairs[np];
		p->key = k->keys[i];
		p->order = np;
		jb.start[np] = JB_NO_TEXT;
		if (!jb_direct_value(k, i, v, &p->value))
		{
			/* the decoder's JSON text, made a value once all is written */
			jb.start[np] = jb.text.len;
			if (bl_value_to_json(&t->cols[i], v,
								 before && before->ncols > i ? &before->values[i] : NULL,
								 &jb.text, &err) != 0)
				check(-1, &err);
			jb.len[np] = jb.text.len - jb.start[np];
		}
		np++;
	}
	if (bl_buf_failed(&jb.text))
	{
		bl_buf_free(&jb.text);
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	}

	/* the values that have text, once it is all written */
	if (jb.text.len > 0)
	{
		bool		as_is = jb_utf8_server();

		if (as_is)
			(void) pg_any_to_server(jb.text.data, (int) jb.text.len, PG_UTF8);	/* verifies */
		for (uint32 j = 0; j < np; j++)
		{
			char	   *s;
			int			len;

			if (jb.start[j] == JB_NO_TEXT)
				continue;
			s = jb.text.data + jb.start[j];
			len = (int) jb.len[j];
			if (!as_is)
			{
				char	   *conv = pg_any_to_server(s, len, PG_UTF8);

				if (conv != s)
				{
					s = conv;
					len = (int) strlen(conv);
				}
			}
			jb_text_value(s, len, &jb.pairs[j].value);
		}
	}
	if (k->dup && np > 1)
	{
		/* equal keys are next to each other, the last column's first */
		uint32		w = 1;

		for (uint32 j = 1; j < np; j++)
			if (jb_key_cmp(&jb.pairs[w - 1].key, &jb.pairs[j].key) != 0)
				jb.pairs[w++] = jb.pairs[j];
		np = w;
	}
	root.type = jbvObject;
	root.val.object.nPairs = np;
	root.val.object.pairs = jb.pairs;
	result = JsonbValueToJsonb(&root);
	if (jb.text.cap > JB_TEXT_KEEP)
		bl_buf_free(&jb.text);	/* a huge value: not kept for the next row */
	return JsonbPGetDatum(result);
}

static jb_keys *
jb_keys_for(bl_decoder *dec, const bl_table *t)
{
	if (dec == canonical_decoder && canonical_decoder != NULL)
		return jb_keys_cached(t);
	return jb_keys_build(t, CurrentMemoryContext);
}

Datum
blpg_image_jsonb(bl_decoder *dec, const bl_table *t, const bl_row *row, const bl_row *before)
{
	jb_keys    *k = jb_keys_for(dec, t);

	return jb_object(t, k, k->order, k->ncols, row, before, false);
}

Datum
blpg_key_jsonb(bl_decoder *dec, const bl_table *t, const bl_row *row)
{
	jb_keys    *k = jb_keys_for(dec, t);

	return jb_object(t, k, k->pk_order, k->npk, row, NULL, true);
}

/* Decode the canonical events of a ROWS entry and skip to `skip` rows. */
static void
open_rows(blpg_change_iter *it, uint64 skip)
{
	const blpg_entry *e = it->e;
	bl_event	tm;
	bl_error	err;
	const uint8 *p = it->v.payload;
	size_t		rows_len;
	bl_row		before,
				after;

	memset(&err, 0, sizeof(err));
	bl_decoder_set_file(it->dec, it->v.file, e->file_len);
	check(bl_decode_event(it->dec, p, e->tablemap_len, e->event_pos, &tm, &err), &err);
	rows_len = (size_t) bl_load_le(p + e->tablemap_len + 9, 4);
	if (e->tablemap_len + (uint64) rows_len > e->payload_len)
		elog(ERROR, "binlog_fdw ring entry %llu is inconsistent",
			 (unsigned long long) e->seq_first);
	check(bl_decode_event(it->dec, p + e->tablemap_len, rows_len, e->event_pos,
						  &it->rows_ev, &err), &err);
	for (uint64 i = 0; i < e->rows_skip + skip; i++)
		if (bl_rows_next(it->dec, &it->rows_ev.u.rows, &before, &after, &err) != 1)
			check(-1, &err);
	it->rows_open = true;
}

static void
put_key_json(bl_buf *b, const bl_table *t, const bl_row *row)
{
	bl_error	err;

	memset(&err, 0, sizeof(err));
	bl_buf_putc(b, '{');
	for (uint32 k = 0; k < t->npk; k++)
	{
		uint32		i = t->pk[k];

		if (k)
			bl_buf_putc(b, ',');
		bl_column_key_json(t, i, b);
		bl_buf_putc(b, ':');
		if (bl_value_to_json(&t->cols[i], &row->values[i], NULL, b, &err) != 0)
			check(-1, &err);
	}
	bl_buf_putc(b, '}');
}

/* The decoder's JSON text in b as a json datum (text, server encoding). */
static Datum
json_text_datum(bl_buf *b)
{
	if (bl_buf_failed(b))
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	return blpg_text_utf8(b->data, b->len);
}

/* The columns that are the same for all changes of the current entry. */
static void
entry_columns(blpg_change_iter *it)
{
	const blpg_entry *e = it->e;
	const blpg_entry_view *v = &it->v;
	MemoryContext old;

	MemoryContextReset(it->ecxt);
	old = MemoryContextSwitchTo(it->ecxt);
	it->e_file = it->want[BLPG_COL_FILE] ? blpg_text_utf8(v->file, e->file_len) : (Datum) 0;
	it->e_gtid = e->gtid_len && it->want[BLPG_COL_GTID] ? blpg_text_utf8(v->gtid, e->gtid_len) : (Datum) 0;
	it->e_schema = e->schema_len ? blpg_text_utf8(v->schema, e->schema_len) : (Datum) 0;
	it->e_table = e->table_len ? blpg_text_utf8(v->table, e->table_len) : (Datum) 0;
	it->e_op = CStringGetTextDatum(blpg_entry_op_name(e));
	MemoryContextSwitchTo(old);
	it->entry_ready = true;
}

/*
 * Move to the entry of the next change (it->e, it->seq); false at the end.
 */
static bool
iter_advance(blpg_change_iter *it)
{
	for (;;)
	{
		const blpg_entry *e = it->e;

		if (e != NULL && it->seq < e->seq_first + e->nchanges && it->seq <= it->last_seq)
			return true;
		/* next entry */
		if (it->off >= (size_t) it->entries->len)
			return false;
		e = (const blpg_entry *) (it->entries->data + it->off);
		it->off += e->total_len;
		if (e->seq_first > it->last_seq)
			return false;
		it->e = e;
		it->rows_open = false;
		it->entry_ready = false;
		blpg_entry_view_init(&it->v, e);
		it->seq = Max(it->first_seq, e->seq_first);
		if (it->filter.min_seq > it->seq)
			it->seq = it->filter.min_seq;
		if (it->seq >= e->seq_first + e->nchanges || !entry_passes(it, e, &it->v))
			it->e = NULL;
	}
}

/* The next row of the current ROWS entry; returns its table. */
static const bl_table *
iter_read_row(blpg_change_iter *it, bl_row *before, bl_row *after)
{
	bl_error	err;
	int			rc;

	memset(&err, 0, sizeof(err));
	if (!it->rows_open)
		open_rows(it, it->seq - it->e->seq_first);
	rc = bl_rows_next(it->dec, &it->rows_ev.u.rows, before, after, &err);
	if (rc != 1)
	{
		if (rc == 0)
			bl_error_set(&err, BL_ERR_CORRUPT, "rows event has fewer rows than its entry counts");
		check(-1, &err);
	}
	return it->rows_ev.u.rows.table;
}

/* The statement of the current DDL entry as UTF-8 text in it->buf. */
static void
iter_ddl_utf8(blpg_change_iter *it)
{
	const uint8 *p = it->v.payload;
	uint32		dblen = (uint32) bl_load_le(p, 4);
	const char *sql = (const char *) p + 4 + dblen;
	size_t		sqllen = it->e->payload_len - 4 - dblen;
	const bl_charset *cs = bl_charset_by_collation(it->e->ddl_collation);
	bl_error	err;

	/* the text was padded to 8 bytes: trim the NULs */
	while (sqllen > 0 && sql[sqllen - 1] == '\0')
		sqllen--;
	bl_buf_reset(&it->buf);
	if (cs == NULL || bl_charset_to_utf8(cs, (const uint8 *) sql, sqllen, &it->buf, &err) != 0)
		bl_charset_to_utf8(bl_charset_by_name("utf8mb4"), (const uint8 *) sql, sqllen,
						   &it->buf, &err);
}

/*
 * The row whose primary key a change shows: the after image, or the before
 * image when the after image lacks a key column (or there is none).
 */
static const bl_row *
key_row(const bl_table *t, const bl_row *before, const bl_row *after)
{
	if (after->ncols == 0)
		return before;
	for (uint32 k = 0; k < t->npk; k++)
		if (after->values[t->pk[k]].kind == BL_VAL_ABSENT)
			return before;
	return after;
}

bool
blpg_change_iter_next(blpg_change_iter *it, Datum *values, bool *nulls)
{
	MemoryContext old;

	if (!iter_advance(it))
		return false;
	if (!it->entry_ready)
		entry_columns(it);
	MemoryContextReset(it->cxt);
	old = MemoryContextSwitchTo(it->cxt);
	{
		const blpg_entry *e = it->e;
		bl_row		before,
					after;

		memset(nulls, true, sizeof(bool) * BLPG_NCOLS);
		values[BLPG_COL_SEQ] = Int64GetDatum((int64) it->seq);
		nulls[BLPG_COL_SEQ] = false;
		if (it->e_file)
		{
			values[BLPG_COL_FILE] = it->e_file;
			nulls[BLPG_COL_FILE] = false;
		}
		values[BLPG_COL_POS] = Int64GetDatum((int64) e->event_pos);
		nulls[BLPG_COL_POS] = false;
		values[BLPG_COL_NEXT_POS] = Int64GetDatum((int64) e->event_next_pos);
		nulls[BLPG_COL_NEXT_POS] = false;
		if (it->e_gtid)
		{
			values[BLPG_COL_GTID] = it->e_gtid;
			nulls[BLPG_COL_GTID] = false;
		}
		if (e->kind == BLPG_ENTRY_COMMIT && e->xid)
		{
			values[BLPG_COL_XID] = Int64GetDatum((int64) e->xid);
			nulls[BLPG_COL_XID] = false;
		}
		if (e->commit_ts_us)
		{
			values[BLPG_COL_COMMIT_TIME] = TimestampTzGetDatum(
															   (TimestampTz) e->commit_ts_us -
															   ((POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY));
			nulls[BLPG_COL_COMMIT_TIME] = false;
		}
		values[BLPG_COL_EVENT_TIME] = TimestampTzGetDatum(time_t_to_timestamptz((pg_time_t) e->event_ts));
		nulls[BLPG_COL_EVENT_TIME] = false;
		values[BLPG_COL_SERVER_ID] = Int64GetDatum((int64) e->server_id);
		nulls[BLPG_COL_SERVER_ID] = false;
		if (it->e_schema)
		{
			values[BLPG_COL_SCHEMA] = it->e_schema;
			nulls[BLPG_COL_SCHEMA] = false;
		}
		if (it->e_table)
		{
			values[BLPG_COL_TABLE] = it->e_table;
			nulls[BLPG_COL_TABLE] = false;
		}
		values[BLPG_COL_OP] = it->e_op;
		nulls[BLPG_COL_OP] = false;

		if (e->kind == BLPG_ENTRY_DDL && it->want[BLPG_COL_DDL])
		{
			iter_ddl_utf8(it);
			values[BLPG_COL_DDL] = blpg_text_utf8(it->buf.data, it->buf.len);
			nulls[BLPG_COL_DDL] = false;
		}
		else if (e->kind == BLPG_ENTRY_ROWS)
		{
			const bl_table *t = iter_read_row(it, &before, &after);
			bl_error	err;
			jb_keys    *keys = NULL;

			memset(&err, 0, sizeof(err));
			if (!it->json_text || (t->npk && it->want[BLPG_COL_PK_COLUMNS]))
				keys = jb_keys_cached(t);
			if (it->want[BLPG_COL_BEFORE] && before.ncols)
			{
				if (it->json_text)
				{
					bl_buf_reset(&it->buf);
					check(bl_row_to_json(t, &before, NULL, &it->buf, &err), &err);
					values[BLPG_COL_BEFORE] = json_text_datum(&it->buf);
				}
				else
					values[BLPG_COL_BEFORE] = jb_object(t, keys, keys->order, keys->ncols,
														&before, NULL, false);
				nulls[BLPG_COL_BEFORE] = false;
			}
			if (it->want[BLPG_COL_AFTER] && after.ncols)
			{
				const bl_row *b = before.ncols ? &before : NULL;

				if (it->json_text)
				{
					bl_buf_reset(&it->buf);
					check(bl_row_to_json(t, &after, b, &it->buf, &err), &err);
					values[BLPG_COL_AFTER] = json_text_datum(&it->buf);
				}
				else
					values[BLPG_COL_AFTER] = jb_object(t, keys, keys->order, keys->ncols,
													   &after, b, false);
				nulls[BLPG_COL_AFTER] = false;
			}
			if (t->npk && it->want[BLPG_COL_PK_COLUMNS])
			{
				values[BLPG_COL_PK_COLUMNS] = keys->pk_columns;
				nulls[BLPG_COL_PK_COLUMNS] = false;
			}
			if (t->npk && it->want[BLPG_COL_PRIMARY_KEY])
			{
				const bl_row *keyrow = key_row(t, &before, &after);

				if (it->json_text)
				{
					bl_buf_reset(&it->buf);
					put_key_json(&it->buf, t, keyrow);
					values[BLPG_COL_PRIMARY_KEY] = json_text_datum(&it->buf);
				}
				else
					values[BLPG_COL_PRIMARY_KEY] = jb_object(t, keys, keys->pk_order, keys->npk,
															 keyrow, NULL, true);
				nulls[BLPG_COL_PRIMARY_KEY] = false;
			}
		}
	}
	MemoryContextSwitchTo(old);
	it->seq++;
	return true;
}

/* ---- JSON lines ---------------------------------------------------------
 *
 * get_jsonl() writes a whole batch as one text value, a JSON object per
 * change and line, with the keys of get()'s columns (nulls left out) in
 * column order.  What is the same for every change of an entry (file,
 * positions, times, names, op, the key's column names) is written once per
 * entry into it->line_entry and copied into each line.
 */

static void
jsonl_key(bl_buf *out, const char *key)
{
	bl_buf_append(out, ",\"", 2);
	bl_buf_puts(out, key);
	bl_buf_append(out, "\":", 2);
}

static void
jsonl_str(bl_buf *out, const char *key, const char *s, size_t len)
{
	jsonl_key(out, key);
	bl_json_put_str(out, s, len);
}

static void
jsonl_u64(bl_buf *out, const char *key, uint64 v)
{
	jsonl_key(out, key);
	bl_buf_put_u64(out, v);
}

/* A time of the binlog (UTC) as "YYYY-MM-DDTHH:MM:SS[.ffffff]+00:00". */
static void
jsonl_time(bl_buf *out, const char *key, int64 sec, uint32 usec, int fsp)
{
	bl_temporal t;

	jsonl_key(out, key);
	bl_timestamp_to_temporal(sec, usec, &t);
	bl_buf_putc(out, '"');
	bl_temporal_to_text(BL_VAL_DATETIME, &t, fsp, 'T', out);
	bl_buf_append(out, "+00:00\"", 7);
}

/* The fields of the current entry after "seq" (t: its table, ROWS only). */
static void
jsonl_entry_fields(blpg_change_iter *it, const bl_table *t)
{
	const blpg_entry *e = it->e;
	const blpg_entry_view *v = &it->v;
	bl_buf	   *out = &it->line_entry;

	bl_buf_reset(out);
	jsonl_str(out, "file", v->file, e->file_len);
	jsonl_u64(out, "pos", e->event_pos);
	jsonl_u64(out, "next_pos", e->event_next_pos);
	if (e->gtid_len)
		jsonl_str(out, "gtid", v->gtid, e->gtid_len);
	if (e->kind == BLPG_ENTRY_COMMIT && e->xid)
		jsonl_u64(out, "xid", e->xid);
	if (e->commit_ts_us)
	{
		int64		sec = e->commit_ts_us / 1000000,
					usec = e->commit_ts_us % 1000000;

		if (usec < 0)
		{
			sec--;
			usec += 1000000;
		}
		jsonl_time(out, "commit_time", sec, (uint32) usec, 6);
	}
	jsonl_time(out, "event_time", e->event_ts, 0, 0);
	jsonl_u64(out, "server_id", e->server_id);
	if (e->schema_len)
		jsonl_str(out, "schema_name", v->schema, e->schema_len);
	if (e->table_len)
		jsonl_str(out, "table_name", v->table, e->table_len);
	jsonl_key(out, "op");
	bl_buf_putc(out, '"');
	bl_buf_puts(out, blpg_entry_op_name(e));
	bl_buf_putc(out, '"');
	if (t && t->npk)
	{
		jsonl_key(out, "pk_columns");
		bl_buf_putc(out, '[');
		for (uint32 k = 0; k < t->npk; k++)
		{
			if (k)
				bl_buf_putc(out, ',');
			bl_column_key_json(t, t->pk[k], out);
		}
		bl_buf_putc(out, ']');
	}
	it->entry_ready = true;
}

bool
blpg_change_iter_next_jsonl(blpg_change_iter *it, bl_buf *out, bool *boundary)
{
	const blpg_entry *e;
	bl_error	err;

	if (!iter_advance(it))
		return false;
	e = it->e;
	memset(&err, 0, sizeof(err));
	bl_buf_append(out, "{\"seq\":", 7);
	bl_buf_put_u64(out, it->seq);
	if (e->kind == BLPG_ENTRY_ROWS)
	{
		bl_row		before,
					after;
		const bl_table *t = iter_read_row(it, &before, &after);

		if (!it->entry_ready)
			jsonl_entry_fields(it, t);
		bl_buf_append(out, it->line_entry.data, it->line_entry.len);
		if (t->npk)
		{
			jsonl_key(out, "primary_key");
			put_key_json(out, t, key_row(t, &before, &after));
		}
		if (before.ncols)
		{
			jsonl_key(out, "before");
			check(bl_row_to_json(t, &before, NULL, out, &err), &err);
		}
		if (after.ncols)
		{
			jsonl_key(out, "after");
			check(bl_row_to_json(t, &after, before.ncols ? &before : NULL, out, &err), &err);
		}
	}
	else
	{
		if (!it->entry_ready)
			jsonl_entry_fields(it, NULL);
		bl_buf_append(out, it->line_entry.data, it->line_entry.len);
		if (e->kind == BLPG_ENTRY_DDL)
		{
			iter_ddl_utf8(it);
			jsonl_key(out, "ddl");
			bl_json_put_str(out, it->buf.data, it->buf.len);
		}
	}
	bl_buf_append(out, "}\n", 2);
	if (bl_buf_failed(out) || bl_buf_failed(&it->line_entry))
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	*boundary = e->kind == BLPG_ENTRY_COMMIT || e->kind == BLPG_ENTRY_DDL;
	it->seq++;
	return true;
}
