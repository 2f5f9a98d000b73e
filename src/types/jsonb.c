/*
 * jsonb.c
 *	  JSON text to jsonb for the JSON columns of apply and of the typed
 *	  foreign tables (convert.c), without PostgreSQL's JSON parser: one pass
 *	  over the text builds the JsonbValue tree (objects' keys already sorted
 *	  and made unique), which is then written in jsonb's format as
 *	  PostgreSQL's convertToJsonb writes it.
 *
 * The result is byte for byte the jsonb that jsonb_in makes of the same
 * text: the same grammar (RFC 8259 as PostgreSQL's lexer reads it: the
 * whitespace ' ', '\t', '\n', '\r'), strings with the same bytes, numbers
 * with the numeric value and display scale numeric_in gives their digits
 * (written directly for up to 18 and 15 digits without exponent, as
 * numeric's make_result writes them; others go through numeric_in),
 * object keys in jsonb's order (shorter first, then bytewise) and of equal
 * keys the last one.  Text this parser does not take on goes to jsonb_in
 * as it is, which makes the value or raises its error exactly as before:
 * \u escapes, control characters, anything not valid JSON, strings too long
 * for jsonb, more than BLPG_JSONB_MAX_DEPTH nested containers.
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

/* A string token (at its '"'); false for \u escapes, control characters. */
static bool
parse_string(jparse *j, JsonbValue *out)
{
	const char *s = ++j->p;
	const char *p = s;
	char	   *d,
			   *buf;

	while (p < j->end && *p != '"' && *p != '\\' && (unsigned char) *p >= 0x20)
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
	d = buf + (p - s);
	while (p < j->end && *p != '"')
	{
		if ((unsigned char) *p < 0x20)
			return false;
		if (*p != '\\')
		{
			*d++ = *p++;
			continue;
		}
		if (++p >= j->end)
			return false;
		switch (*p)
		{
			case '"':
			case '\\':
			case '/':
				*d++ = *p;
				break;
			case 'b':
				*d++ = '\b';
				break;
			case 'f':
				*d++ = '\f';
				break;
			case 'n':
				*d++ = '\n';
				break;
			case 'r':
				*d++ = '\r';
				break;
			case 't':
				*d++ = '\t';
				break;
			default:
				return false;	/* \u (and invalid escapes): jsonb_in */
		}
		p++;
	}
	if (p >= j->end || d - buf > JENTRY_OFFLENMASK)
		return false;
	out->type = jbvString;
	out->val.string.val = buf;
	out->val.string.len = (int) (d - buf);
	j->p = p + 1;
	return true;
}

/*
 * The numeric of absval / 10^dscale (negated if neg) for absval below
 * 10^18 and dscale up to 15, as numeric's make_result writes it: digits of
 * base 10000 aligned on the decimal point, without leading or trailing
 * zero digits, in the short format (numeric's on-disk format, which
 * pg_upgrade keeps); a zero is positive with no digits.  NULL if it would
 * not be short (numeric's own functions then).
 */
#define NUM_SHORT				0x8000
#define NUM_SHORT_SIGN_MASK		0x2000
#define NUM_SHORT_DSCALE_SHIFT	7
#define NUM_SHORT_DSCALE_MAX	63
#define NUM_SHORT_WEIGHT_SIGN	0x0040
#define NUM_SHORT_WEIGHT_MASK	0x003F
#define NUM_SHORT_WEIGHT_MAX	63
#define NUM_SHORT_WEIGHT_MIN	(-64)

static Numeric
short_numeric(uint64 absval, bool neg, int dscale)
{
	static const uint64 pow10[] = {1, 10, 100, 1000};
	int16		digits[8];		/* least significant first */
	int			n = 0,
				lo = 0,
				fracdigits = (dscale + 3) / 4,
				weight;
	Numeric		res;
	uint16		header;

	/* align the fraction on base-10000 digits */
	absval *= pow10[(4 - dscale % 4) % 4];
	while (absval > 0)
	{
		digits[n++] = (int16) (absval % 10000);
		absval /= 10000;
	}
	/* trailing zero digits go (n = 0: zero) */
	while (lo < n && digits[lo] == 0)
		lo++;
	if (lo == n)
	{
		n = lo = 0;
		weight = 0;
		neg = false;
	}
	else
		weight = n - 1 - fracdigits;
	if (dscale > NUM_SHORT_DSCALE_MAX || weight > NUM_SHORT_WEIGHT_MAX ||
		weight < NUM_SHORT_WEIGHT_MIN)
		return NULL;
	res = palloc(VARHDRSZ + sizeof(uint16) + sizeof(int16) * (n - lo));
	SET_VARSIZE(res, VARHDRSZ + sizeof(uint16) + sizeof(int16) * (n - lo));
	header = (neg ? (NUM_SHORT | NUM_SHORT_SIGN_MASK) : NUM_SHORT) |
		(dscale << NUM_SHORT_DSCALE_SHIFT) |
		(weight < 0 ? NUM_SHORT_WEIGHT_SIGN : 0) | (weight & NUM_SHORT_WEIGHT_MASK);
	memcpy(VARDATA(res), &header, sizeof(uint16));
	for (int i = n - 1, k = 0; i >= lo; i--, k++)
		memcpy(VARDATA(res) + sizeof(uint16) + sizeof(int16) * k, &digits[i], sizeof(int16));
	return res;
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
	out->type = jbvNumeric;
	out->val.numeric = NULL;
	if (!exp && ((nfrac == 0 && ndigits <= 18) || ndigits + nfrac <= 15))
		out->val.numeric = short_numeric((uint64) v, neg, nfrac);
	if (out->val.numeric != NULL)
		;
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

/* ---- the tree as jsonb (the on-disk format of utils/jsonb.h) ---- */

/* The bytes of the jsonb being written (TopMemoryContext, kept) */
static StringInfoData out;

/* room for n more bytes (the call only when the buffer must grow) */
static inline void
out_room(int n)
{
	if (n >= out.maxlen - out.len)
		enlargeStringInfo(&out, n);
}

static inline int
out_reserve(int n)
{
	int			off = out.len;

	out_room(n);
	out.len += n;
	return off;
}

static inline void
out_put(const void *p, int n)
{
	out_room(n);
	memcpy(out.data + out.len, p, n);
	out.len += n;
}

/* Zero bytes up to a 4-byte boundary; returns their count. */
static inline int
out_pad(void)
{
	int			padlen = INTALIGN(out.len) - out.len;

	if (padlen > 0)
	{
		out_room(padlen);
		memset(out.data + out.len, 0, padlen);
		out.len += padlen;
	}
	return padlen;
}

static bool write_value(JEntry *je, const JsonbValue *v);

static void
write_scalar(JEntry *je, const JsonbValue *v)
{
	switch (v->type)
	{
		case jbvNull:
			*je = JENTRY_ISNULL;
			break;
		case jbvString:
			out_put(v->val.string.val, v->val.string.len);
			*je = (JEntry) v->val.string.len;
			break;
		case jbvNumeric:
			{
				int			numlen = VARSIZE_ANY(v->val.numeric);
				int			padlen = out_pad();

				out_put(v->val.numeric, numlen);
				*je = JENTRY_ISNUMERIC | (padlen + numlen);
			}
			break;
		case jbvBool:
			*je = v->val.boolean ? JENTRY_ISBOOL_TRUE : JENTRY_ISBOOL_FALSE;
			break;
		default:
			elog(ERROR, "unexpected jsonb value type %d", (int) v->type);
	}
}

/*
 * One child's JEntry into its container's JEntry array at *jo: every
 * JB_OFFSET_STRIDE'th holds the end offset instead of the length.  false
 * when the container's data grows too large for a JEntry (jsonb_in raises
 * the error).
 */
static inline bool
put_jentry(JEntry meta, int i, int *total, int *jo)
{
	*total += JBE_OFFLENFLD(meta);
	if (*total > JENTRY_OFFLENMASK)
		return false;
	if (i % JB_OFFSET_STRIDE == 0)
		meta = (meta & JENTRY_TYPEMASK) | *total | JENTRY_HAS_OFF;
	memcpy(out.data + *jo, &meta, sizeof(JEntry));
	*jo += sizeof(JEntry);
	return true;
}

static bool
write_array(JEntry *je, const JsonbValue *v)
{
	int			base = out.len;
	int			n = v->val.array.nElems;
	uint32		header = (uint32) n | JB_FARRAY;
	int			jo,
				total = 0;

	out_pad();
	if (v->val.array.rawScalar)
		header |= JB_FSCALAR;
	out_put(&header, sizeof(uint32));
	jo = out_reserve(sizeof(JEntry) * n);
	for (int i = 0; i < n; i++)
	{
		JEntry		meta;

		if (!write_value(&meta, &v->val.array.elems[i]) || !put_jentry(meta, i, &total, &jo))
			return false;
	}
	total = out.len - base;
	if (total > JENTRY_OFFLENMASK)
		return false;
	*je = JENTRY_ISCONTAINER | total;
	return true;
}

static bool
write_object(JEntry *je, const JsonbValue *v)
{
	int			base = out.len;
	int			n = v->val.object.nPairs;
	uint32		header = (uint32) n | JB_FOBJECT;
	int			jo,
				total = 0;

	out_pad();
	out_put(&header, sizeof(uint32));
	jo = out_reserve(sizeof(JEntry) * n * 2);
	/* the keys, then the values */
	for (int i = 0; i < n; i++)
	{
		JEntry		meta;

		write_scalar(&meta, &v->val.object.pairs[i].key);
		if (!put_jentry(meta, i, &total, &jo))
			return false;
	}
	for (int i = 0; i < n; i++)
	{
		JEntry		meta;

		if (!write_value(&meta, &v->val.object.pairs[i].value) ||
			!put_jentry(meta, i + n, &total, &jo))
			return false;
	}
	total = out.len - base;
	if (total > JENTRY_OFFLENMASK)
		return false;
	*je = JENTRY_ISCONTAINER | total;
	return true;
}

static bool
write_value(JEntry *je, const JsonbValue *v)
{
	if (v->type == jbvArray)
		return write_array(je, v);
	if (v->type == jbvObject)
		return write_object(je, v);
	write_scalar(je, v);
	return true;
}

/* The jsonb of tree root (an array or object) in the current context. */
static Jsonb *
tree_to_jsonb(const JsonbValue *root)
{
	JEntry		je;
	Jsonb	   *res;

	if (out.data == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		initStringInfo(&out);
		MemoryContextSwitchTo(old);
	}
	resetStringInfo(&out);
	out_reserve(VARHDRSZ);
	if (!write_value(&je, root))
	{
		if (out.maxlen > 1024 * 1024)
		{
			pfree(out.data);
			out.data = NULL;
		}
		return NULL;
	}
	res = palloc(out.len);
	memcpy(res, out.data, out.len);
	SET_VARSIZE(res, out.len);
	/* a very large value's buffer is not kept */
	if (out.maxlen > 1024 * 1024)
	{
		pfree(out.data);
		out.data = NULL;
	}
	return res;
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
	JsonbValue	root,
				scalar;
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
	if (ok)
	{
		if (root.type != jbvObject && root.type != jbvArray)
		{
			/* a scalar: jsonb's one-element raw scalar array */
			scalar = root;
			root.type = jbvArray;
			root.val.array.nElems = 1;
			root.val.array.rawScalar = true;
			root.val.array.elems = &scalar;
		}
		res = tree_to_jsonb(&root);
	}
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
