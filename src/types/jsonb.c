/*
 * jsonb.c
 *	  JSON text to jsonb for the JSON columns of apply and of the typed
 *	  foreign tables (convert.c), without PostgreSQL's JSON parser: one pass
 *	  over the text builds the JsonbValue tree (objects' keys already sorted
 *	  and made unique, as pushJsonbValue leaves them), which PostgreSQL's
 *	  JsonbValueToJsonb writes as jsonb.
 *
 * The result is byte for byte the jsonb that jsonb_in makes of the same
 * text: the same grammar (RFC 8259 as PostgreSQL's lexer reads it: the
 * whitespace ' ', '\t', '\n', '\r'), strings with the same bytes, numbers
 * made by numeric's own functions (int64_to_numeric for up to 18 digits
 * without fraction, int64_div_fast_to_numeric for up to 15 with one, both
 * numeric_in's value and display scale; numeric_in for the others), object
 * keys in jsonb's order (shorter first, then bytewise) and of equal keys
 * the last one.  Text this parser does not take on goes to jsonb_in as it
 * is, which makes the value or raises its error exactly as before: \u
 * escapes, control characters, anything not valid JSON, strings too long
 * for jsonb, more than BLPG_JSONB_MAX_DEPTH nested containers.  Nothing of
 * jsonb's or numeric's on-disk format is written here.
 *
 * binlog_fdw.verify_jsonb (a developer check, off by default) makes every
 * value both ways and raises an error if the two differ in any byte.
 */
#include "types/types.h"

#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/numeric.h"

bool		blpg_verify_jsonb = false;

#define BLPG_JSONB_MAX_DEPTH 64

/*
 * Kept between calls: the memory of one conversion (reset after it) and the
 * stacks of the open containers' elements and pairs (TopMemoryContext).
 */
static MemoryContext jcxt = NULL;
static JsonbValue *vstack;
static int	vcap;
static JsonbPair *pstack;
static int	pcap;

/* Room for cap values and pairs on the stacks (kept up to STACKS_KEEP). */
#define STACKS_KEEP 1024

static void
stacks_size(int cap)
{
	if (vstack)
	{
		pfree(vstack);
		pfree(pstack);
	}
	vstack = MemoryContextAlloc(TopMemoryContext, sizeof(JsonbValue) * cap);
	pstack = MemoryContextAlloc(TopMemoryContext, sizeof(JsonbPair) * cap);
	vcap = pcap = cap;
}

typedef struct jparse
{
	const char *p;
	const char *end;
	int			depth;
	int			nv;				/* used entries of vstack */
	int			np;				/* of pstack */
} jparse;

static bool parse_value(jparse *j, JsonbValue *out);

static inline void
skip_ws(jparse *j)
{
	const char *p = j->p;

	while (p < j->end && (unsigned char) *p <= ' ' &&
		   (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
		p++;
	j->p = p;
}

/* After a number or a literal: the end, whitespace or a separator? */
static inline bool
at_delimiter(const jparse *j)
{
	char		c;

	if (j->p >= j->end)
		return true;
	c = *j->p;
	return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == ',' || c == ']' || c == '}' ||
		c == ':';
}

/* The bytes that end a string's plain run: '"', '\\', control characters. */
static const bool string_stop[256] = {
	[0x00] = true, [0x01] = true, [0x02] = true, [0x03] = true, [0x04] = true,
	[0x05] = true, [0x06] = true, [0x07] = true, [0x08] = true, [0x09] = true,
	[0x0a] = true, [0x0b] = true, [0x0c] = true, [0x0d] = true, [0x0e] = true,
	[0x0f] = true, [0x10] = true, [0x11] = true, [0x12] = true, [0x13] = true,
	[0x14] = true, [0x15] = true, [0x16] = true, [0x17] = true, [0x18] = true,
	[0x19] = true, [0x1a] = true, [0x1b] = true, [0x1c] = true, [0x1d] = true,
	[0x1e] = true, [0x1f] = true, ['"'] = true, ['\\'] = true,
};

/* A string token (at its '"'); false for \u escapes, control characters. */
static bool
parse_string(jparse *j, JsonbValue *out)
{
	const char *s = ++j->p;
	const char *p = s;
	char	   *buf;
	int			n;

	while (p < j->end && !string_stop[(unsigned char) *p])
		p++;
	if (p >= j->end || (unsigned char) *p < 0x20)
		return false;
	if (*p == '"')
	{
		if (p - s > JENTRY_OFFLENMASK)
			return false;
		out->type = jbvString;
		out->val.string.val = (char *) s;
		out->val.string.len = (int) (p - s);
		j->p = p + 1;
		return true;
	}
	/* escapes: unescaped into a copy (never longer than the token) */
	buf = palloc(j->end - s);
	memcpy(buf, s, p - s);
	n = (int) (p - s);
	{
		int			rest;

		p = bl_json_string_unescape(p, j->end, buf + n, &rest);
		if (p == NULL || n + (int64) rest > JENTRY_OFFLENMASK)
			return false;
		n += rest;
	}
	out->type = jbvString;
	out->val.string.val = buf;
	out->val.string.len = n;
	j->p = p + 1;
	return true;
}

/*
 * The numerics of the small non-negative numbers of up to SMALL_SCALES
 * digits after the point, made once (TopMemoryContext) by the functions
 * that would make them (below) and shared by the JsonbValues, whose
 * numerics JsonbValueToJsonb copies.
 */
#define SMALL_VALUES 10000
#define SMALL_SCALES 2

static Numeric small_numerics[SMALL_SCALES + 1][SMALL_VALUES];

static Numeric
small_numeric(int64 v, int scale)
{
	Numeric    *n = &small_numerics[scale][v];

	if (*n == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		*n = scale == 0 ? int64_to_numeric(v) : int64_div_fast_to_numeric(v, scale);
		MemoryContextSwitchTo(old);
	}
	return *n;
}

/* A number token: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool
parse_number(jparse *j, JsonbValue *out)
{
	const char *s = j->p;
	const char *p = s;
	bool		neg = false;
	bool		exp = false;
	int			ndigits = 0,
				nfrac = 0;
	int64		v = 0;

	if (*p == '-')
	{
		neg = true;
		p++;
	}
	if (p >= j->end)
		return false;
	if (*p == '0')
	{
		p++;
		ndigits = 1;
	}
	else if (*p >= '1' && *p <= '9')
	{
		for (; p < j->end && *p >= '0' && *p <= '9'; p++)
		{
			if (ndigits < 18)
				v = v * 10 + (*p - '0');
			ndigits++;
		}
	}
	else
		return false;
	if (p < j->end && *p == '.')
	{
		p++;
		for (; p < j->end && *p >= '0' && *p <= '9'; p++)
		{
			if (ndigits + nfrac < 18)
				v = v * 10 + (*p - '0');
			nfrac++;
		}
		if (nfrac == 0)
			return false;
	}
	if (p < j->end && (*p == 'e' || *p == 'E'))
	{
		int			nexp = 0;

		exp = true;
		p++;
		if (p < j->end && (*p == '+' || *p == '-'))
			p++;
		for (; p < j->end && *p >= '0' && *p <= '9'; p++)
			nexp++;
		if (nexp == 0)
			return false;
	}
	j->p = p;
	if (!at_delimiter(j))
		return false;

	/*
	 * numeric_in's value and display scale (the digits after the point) of
	 * the digits: of up to 18 an int64, of up to 15 also times 10^3, the
	 * most int64_div_fast_to_numeric multiplies by to align the fraction
	 */
	out->type = jbvNumeric;
	if (!exp && nfrac <= SMALL_SCALES && ndigits + nfrac <= 15 && v < SMALL_VALUES && !neg)
		out->val.numeric = small_numeric(v, nfrac);
	else if (!exp && nfrac == 0 && ndigits <= 18)
		out->val.numeric = int64_to_numeric(neg ? -v : v);
	else if (!exp && ndigits + nfrac <= 15)
		out->val.numeric = int64_div_fast_to_numeric(neg ? -v : v, nfrac);
	else
		out->val.numeric = DatumGetNumeric(DirectFunctionCall3(numeric_in,
															   CStringGetDatum(pnstrdup(s, p - s)),
															   ObjectIdGetDatum(InvalidOid),
															   Int32GetDatum(-1)));
	return true;
}

static bool
parse_literal(jparse *j, const char *word, int len)
{
	if (j->end - j->p < len || memcmp(j->p, word, len) != 0)
		return false;
	j->p += len;
	return at_delimiter(j);
}

/* jsonb's order of keys: shorter first, then bytewise */
static inline int
key_cmp(const JsonbValue *a, const JsonbValue *b)
{
	if (a->val.string.len != b->val.string.len)
		return a->val.string.len > b->val.string.len ? 1 : -1;
	return memcmp(a->val.string.val, b->val.string.val, a->val.string.len);
}

/* ... and of equal keys the one that came first, for qsort */
static int
pair_cmp(const void *a, const void *b)
{
	const JsonbPair *pa = a;
	const JsonbPair *pb = b;
	int			r = key_cmp(&pa->key, &pb->key);

	if (r != 0)
		return r;
	return pa->order > pb->order ? 1 : -1;
}

/*
 * Pairs a[0..n) in key order, of equal keys only the last; returns the
 * count left.
 */
static int
order_pairs(JsonbPair *a, int n)
{
	int			w = 0;

	if (n <= 16)
	{
		/* insertion sort, stable: equal keys keep the order they came in */
		for (int i = 1; i < n; i++)
		{
			JsonbPair	t = a[i];
			int			k = i;

			while (k > 0 && key_cmp(&a[k - 1].key, &t.key) > 0)
			{
				a[k] = a[k - 1];
				k--;
			}
			a[k] = t;
		}
	}
	else
	{
		for (int i = 0; i < n; i++)
			a[i].order = (uint32) i;
		qsort(a, n, sizeof(JsonbPair), pair_cmp);
	}
	for (int i = 0; i < n; i++)
	{
		if (i + 1 < n && key_cmp(&a[i].key, &a[i + 1].key) == 0)
			continue;			/* a later one of the same key wins */
		a[w++] = a[i];
	}
	return w;
}

static bool
parse_object(jparse *j, JsonbValue *out)
{
	int			base = j->np;
	int			n;

	if (++j->depth > BLPG_JSONB_MAX_DEPTH)
		return false;
	j->p++;
	skip_ws(j);
	if (j->p < j->end && *j->p == '}')
		j->p++;
	else
		for (;;)
		{
			/* the pair's slot (the stacks do not move during a parse) */
			JsonbPair  *pair;

			if (j->np >= pcap)
				return false;	/* (cannot happen: see fast_jsonb) */
			pair = &pstack[j->np++];
			skip_ws(j);
			if (j->p >= j->end || *j->p != '"' || !parse_string(j, &pair->key))
				return false;
			skip_ws(j);
			if (j->p >= j->end || *j->p != ':')
				return false;
			j->p++;
			if (!parse_value(j, &pair->value))
				return false;
			skip_ws(j);
			if (j->p < j->end && *j->p == ',')
			{
				j->p++;
				continue;
			}
			if (j->p < j->end && *j->p == '}')
			{
				j->p++;
				break;
			}
			return false;
		}
	n = order_pairs(pstack + base, j->np - base);
	out->type = jbvObject;
	out->val.object.nPairs = n;
	out->val.object.pairs = palloc(sizeof(JsonbPair) * Max(n, 1));
	memcpy(out->val.object.pairs, pstack + base, sizeof(JsonbPair) * n);
	j->np = base;
	j->depth--;
	return true;
}

static bool
parse_array(jparse *j, JsonbValue *out)
{
	int			base = j->nv;
	int			n;

	if (++j->depth > BLPG_JSONB_MAX_DEPTH)
		return false;
	j->p++;
	skip_ws(j);
	if (j->p < j->end && *j->p == ']')
		j->p++;
	else
		for (;;)
		{
			if (j->nv >= vcap)
				return false;	/* (cannot happen: see fast_jsonb) */
			if (!parse_value(j, &vstack[j->nv++]))
				return false;
			skip_ws(j);
			if (j->p < j->end && *j->p == ',')
			{
				j->p++;
				continue;
			}
			if (j->p < j->end && *j->p == ']')
			{
				j->p++;
				break;
			}
			return false;
		}
	n = j->nv - base;
	out->type = jbvArray;
	out->val.array.nElems = n;
	out->val.array.rawScalar = false;
	out->val.array.elems = palloc(sizeof(JsonbValue) * Max(n, 1));
	memcpy(out->val.array.elems, vstack + base, sizeof(JsonbValue) * n);
	j->nv = base;
	j->depth--;
	return true;
}

static bool
parse_value(jparse *j, JsonbValue *out)
{
	skip_ws(j);
	if (j->p >= j->end)
		return false;
	switch (*j->p)
	{
		case '{':
			return parse_object(j, out);
		case '[':
			return parse_array(j, out);
		case '"':
			return parse_string(j, out);
		case 't':
			out->type = jbvBool;
			out->val.boolean = true;
			return parse_literal(j, "true", 4);
		case 'f':
			out->type = jbvBool;
			out->val.boolean = false;
			return parse_literal(j, "false", 5);
		case 'n':
			out->type = jbvNull;
			return parse_literal(j, "null", 4);
		default:
			if (*j->p == '-' || (*j->p >= '0' && *j->p <= '9'))
				return parse_number(j, out);
			return false;
	}
}

/*
 * The jsonb of text s[0..len) (valid in the server encoding), in the
 * current memory context; NULL if this parser does not take it on.
 */
static Jsonb *
fast_jsonb(const char *s, int len)
{
	MemoryContext old;
	jparse		j;
	JsonbValue	root;
	Jsonb	   *res = NULL;
	bool		ok;

	if (jcxt == NULL)
	{
		jcxt = AllocSetContextCreate(TopMemoryContext, "binlog_fdw jsonb",
									 ALLOCSET_DEFAULT_SIZES);
		stacks_size(STACKS_KEEP);
	}
	/*
	 * Room on the stacks for every element and pair the text can hold, so
	 * that they never move during the parse: each takes a byte and a
	 * separator; in a longer text, each but a container's first follows a
	 * ',' and the first a '[' or '{' (counted inside strings too)
	 */
	if (len / 2 + 2 > vcap)
	{
		Size		need = 2;

		for (int i = 0; i < len; i++)
			if (s[i] == ',' || s[i] == '[' || s[i] == '{')
				need++;
		if (need > MaxAllocSize / sizeof(JsonbPair))
			return NULL;
		if (need > (Size) vcap)
			stacks_size((int) need);
	}
	j.p = s;
	j.end = s + len;
	j.depth = 0;
	j.nv = j.np = 0;
	/* (an error on the way leaves jcxt to the next call's reset) */
	MemoryContextReset(jcxt);
	old = MemoryContextSwitchTo(jcxt);
	ok = parse_value(&j, &root);
	if (ok)
	{
		skip_ws(&j);
		ok = j.p == j.end;
	}
	MemoryContextSwitchTo(old);

	/*
	 * The tree as jsonb, in the caller's context: JsonbValueToJsonb writes
	 * objects' pairs in the order they are in (sorted and unique, as
	 * jsonb's readers need them) and a scalar as jsonb's one-element raw
	 * scalar array; a container too large for jsonb is its error, the one
	 * jsonb_in raises
	 */
	if (ok)
		res = JsonbValueToJsonb(&root);
	MemoryContextReset(jcxt);
	if (vcap > STACKS_KEEP)
		stacks_size(STACKS_KEEP);
	return res;
}

/* The first bytes of a JSON text, for a message. */
static char *
text_start(const char *s, int len)
{
	return pnstrdup(s, pg_mbcliplen(s, len, Min(len, 200)));
}

Datum
blpg_jsonb_from_text(const char *s, int len)
{
	Jsonb	   *fast = fast_jsonb(s, len);
	Datum		slow;

	if (fast != NULL && !blpg_verify_jsonb)
		return JsonbPGetDatum(fast);
	slow = DirectFunctionCall1(jsonb_in, CStringGetDatum(pnstrdup(s, len)));
	if (!blpg_verify_jsonb)
		return slow;
	if (fast == NULL)
	{
		elog(DEBUG1, "binlog_fdw.verify_jsonb: JSON text of %d bytes left to jsonb_in", len);
		return slow;
	}
	if (VARSIZE(fast) != VARSIZE(DatumGetPointer(slow)) ||
		memcmp(fast, DatumGetPointer(slow), VARSIZE(fast)) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("jsonb built from JSON text differs from the jsonb of jsonb_in"),
				 errdetail("The JSON text has %d bytes and starts with %s.", len, text_start(s, len)),
				 errhint("This is a bug in binlog_fdw: report it with the JSON text.")));
	elog(DEBUG1, "binlog_fdw.verify_jsonb: jsonb of %d bytes of JSON text verified", len);
	return slow;
}
