/*
 * bl_json_binary.c
 *	  MySQL binary JSON to JSON text, partial JSON update diffs to JSON
 *	  text, and applying a diff vector to a before image.
 *
 * The binary format (MySQL sql-common/json_binary.cc): a document is a
 * type byte followed by the value.  Objects and arrays start with an
 * element count and a byte size (2 bytes each in the "small" format, 4 in
 * the "large" one), then for objects one key entry per member (key offset
 * + 2-byte key length), then one value entry per element (type byte +
 * offset, or the value itself when it fits: literals and 16-bit integers
 * always, 32-bit integers in the large format).  Offsets count from the
 * byte after the container's type byte.  Strings and opaque values carry
 * a variable-length length, 7 bits per byte, low bits first.
 *
 * Every read is bounds-checked: the fixed-width fields go through bl_cur,
 * the rest is checked against the window it lives in.  Beyond that, each
 * value "charges" the bytes it owns (container headers, keys, scalars) to
 * a budget equal to the input size, so a document whose entries point at
 * shared bytes (never written by MySQL) is rejected instead of expanding
 * exponentially; together with the depth cap this bounds both the work
 * and the output by the size of the input.
 *
 * bl_json_apply_diff builds a small DOM.  Scalars in it keep pointers into
 * the caller's buffers, so only containers and inserted keys allocate.
 */
#include "bl_json_binary.h"

#include "bl_charset.h"
#include "bl_cursor.h"
#include "bl_float_text.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* Type bytes of the binary format. */
#define BL_JSONB_SMALL_OBJECT	0x00
#define BL_JSONB_LARGE_OBJECT	0x01
#define BL_JSONB_SMALL_ARRAY	0x02
#define BL_JSONB_LARGE_ARRAY	0x03
#define BL_JSONB_LITERAL		0x04
#define BL_JSONB_INT16			0x05
#define BL_JSONB_UINT16			0x06
#define BL_JSONB_INT32			0x07
#define BL_JSONB_UINT32			0x08
#define BL_JSONB_INT64			0x09
#define BL_JSONB_UINT64			0x0A
#define BL_JSONB_DOUBLE			0x0B
#define BL_JSONB_STRING			0x0C
#define BL_JSONB_OPAQUE			0x0F

#define BL_JSONB_NULL_LITERAL	0x00
#define BL_JSONB_TRUE_LITERAL	0x01
#define BL_JSONB_FALSE_LITERAL	0x02

/* MySQL field types with a special rendering inside opaque values. */
#define BL_JSON_FT_TIMESTAMP	7
#define BL_JSON_FT_DATE			10
#define BL_JSON_FT_TIME			11
#define BL_JSON_FT_DATETIME		12
#define BL_JSON_FT_NEWDECIMAL	246
#define BL_JSON_FT_VAR_STRING	253

/* Json_diff operations (enum_json_diff_operation). */
#define BL_JSON_DIFF_REPLACE	0
#define BL_JSON_DIFF_INSERT		1
#define BL_JSON_DIFF_REMOVE		2

/* Node kinds of the DOM that are not scalar type bytes. */
#define BL_JSON_NODE_OBJECT		0x80
#define BL_JSON_NODE_ARRAY		0x81

/* Decoding state shared by one call. */
typedef struct bl_json_ctx
{
	bl_buf	   *out;
	bl_error   *err;
	size_t		budget;			/* input bytes not yet owned by a value */
} bl_json_ctx;

/* An object or array being read. */
typedef struct bl_json_container
{
	const uint8_t *data;		/* first byte after the type byte */
	size_t		size;			/* byte size from the header */
	size_t		header;			/* size of counts + key and value entries */
	uint32_t	count;
	bool		large;
	bool		object;
} bl_json_container;

/* A decoded scalar; string and opaque bytes point into the input. */
typedef struct bl_json_scalar
{
	uint8_t		type;			/* BL_JSONB_LITERAL .. BL_JSONB_OPAQUE */
	uint8_t		sub;			/* literal kind, or the opaque field type */
	union
	{
		int64_t		i;
		uint64_t	u;
		double		d;
	}			num;
	const uint8_t *bytes;
	size_t		nbytes;
} bl_json_scalar;

/* DOM for bl_json_apply_diff. */
typedef struct bl_json_node bl_json_node;

typedef struct bl_json_member
{
	const uint8_t *key;			/* objects only */
	size_t		keylen;
	uint8_t    *owned_key;		/* set when key was copied from a path */
	bl_json_node *value;
} bl_json_member;

struct bl_json_node
{
	uint8_t		kind;			/* BL_JSON_NODE_* or a scalar type byte */
	bl_json_scalar scalar;
	bl_json_member *members;	/* elements of an object or array */
	size_t		count;
	size_t		cap;
};

/* One leg of a MySQL JSON path. */
typedef struct bl_json_leg
{
	bool		member;			/* .name (else [index]) */
	const uint8_t *name;		/* unescaped, in the iterator's scratch
								 * (NULL when the iterator only checks) */
	size_t		namelen;
	uint32_t	index;
	bool		from_end;		/* [last] or [last-N] */
} bl_json_leg;

typedef struct bl_json_path_iter
{
	const uint8_t *p;
	const uint8_t *end;
	bool		keep_names;		/* unescape member names into scratch */
	bl_buf		scratch;
} bl_json_path_iter;

/* One entry of a diff vector. */
typedef struct bl_json_diff
{
	uint8_t		op;
	const uint8_t *path;
	size_t		pathlen;
	const uint8_t *value;
	size_t		valuelen;
} bl_json_diff;

static int	bl_json_value_to_text(bl_json_ctx *ctx, uint8_t type,
								  const uint8_t *data, size_t len,
								  bool inlined, int depth);
static void bl_json_node_free(bl_json_node *node);


/* ----------------------------------------------------------------
 * Errors and budget
 * ----------------------------------------------------------------
 */

static int	bl_json_fail(bl_json_ctx *ctx, bl_errcode code,
						 const char *fmt,...) BL_PRINTF(3, 4);

static int
bl_json_fail(bl_json_ctx *ctx, bl_errcode code, const char *fmt,...)
{
	va_list		ap;
	char		msg[400];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return bl_error_set(ctx->err, code, "JSON: %s", msg);
}

/* Account n input bytes to the value being read. */
static int
bl_json_charge(bl_json_ctx *ctx, uint64_t n)
{
	if (n > ctx->budget)
		return bl_json_fail(ctx, BL_ERR_CORRUPT,
							"values overlap (more bytes referenced than the document holds)");
	ctx->budget -= (size_t) n;
	return 0;
}

/* Read a variable-length length (7 bits a byte, at most 32 bits). */
static bool
bl_json_read_varlen(bl_cur *c, uint32_t *len)
{
	uint64_t	v = 0;

	for (int i = 0; i < 5; i++)
	{
		uint8_t		b = bl_cur_u8(c);

		if (!bl_cur_ok(c))
			return false;
		v |= (uint64_t) (b & 0x7f) << (7 * i);
		if ((b & 0x80) == 0)
		{
			if (v > UINT32_MAX)
				return false;
			*len = (uint32_t) v;
			return true;
		}
	}
	return false;
}

/* Sign-extend the low bits of v. */
static int64_t
bl_json_sext(uint64_t v, int bits)
{
	if (bits < 64)
	{
		uint64_t	sign = (uint64_t) 1 << (bits - 1);

		v &= (sign << 1) - 1;
		if (v & sign)
			return -(int64_t) ((sign << 1) - v);
		return (int64_t) v;
	}
	if (v <= (uint64_t) INT64_MAX)
		return (int64_t) v;
	return -(int64_t) (UINT64_MAX - v) - 1;
}


/* ----------------------------------------------------------------
 * Text output helpers
 * ----------------------------------------------------------------
 */

static void
bl_json_put_string(bl_buf *out, const uint8_t *s, size_t n)
{
	bl_buf_putc(out, '"');
	bl_json_escape_utf8(s, n, out);
	bl_buf_putc(out, '"');
}

/*
 * A double as MySQL's JSON printer writes it: my_gcvt() with a field width
 * of MY_GCVT_MAX_FIELD_WIDTH (34) over the shortest digits that round-trip
 * (dtoa mode 4 with that many digits), then ".0" if the result has neither
 * '.' nor 'e'.  my_gcvt uses the plain format for 1e-15 <= |x| < 1e15
 * (and a few wider cases) and "d.ddde[-]N" otherwise.
 */
static void
bl_json_put_double(bl_buf *out, double d)
{
	bl_shortest s;
	const char *digits;
	char		text[48];
	int			ndig;
	int			decpt;
	int			width;
	int			exp_len;
	int			flen;
	bool		neg;
	bool		have_space;
	bool		force_e;
	bool		use_f;
	size_t		t = 0;

	if (!isfinite(d))
	{
		/* MySQL's dtoa prints "0" for these; they cannot be stored anyway. */
		bl_buf_puts(out, "0.0");
		return;
	}

	/* The shortest digits that read back exactly (dtoa's mode 0). */
	bl_shortest_double(d, &s);
	digits = s.digits;
	ndig = s.ndig;
	neg = s.neg;
	decpt = (ndig == 1 && digits[0] == '0') ? 1 : s.exp10 + 1;

	/* my_gcvt's choice between the 'f' and the 'e' format. */
	width = 34 - (d < 0.0 ? 1 : 0);
	exp_len = 1 + (decpt >= 101 || decpt <= -99) + (decpt >= 11 || decpt <= -9);
	flen = decpt <= 0 ? ndig - decpt + 2 : (decpt < ndig ? ndig + 1 : decpt);
	have_space = flen <= width;
	force_e = (decpt <= 0 && width <= 2 - decpt && width >= 3 + exp_len);
	use_f = (have_space ||
			 (decpt <= width &&
			  (decpt >= -1 || (decpt == -2 && (ndig > 1 || !force_e))) &&
			  !force_e)) &&
		(!have_space || (decpt >= -14 && (decpt <= 15 || ndig > decpt)));

	/*
	 * With at most 17 digits the 'f' format always fits when chosen; the
	 * re-rounding my_gcvt would do otherwise is never needed.
	 */
	if (use_f && !have_space)
		use_f = false;

	if (neg)
		text[t++] = '-';
	if (use_f)
	{
		bool		has_point = false;

		if (decpt <= 0)
		{
			text[t++] = '0';
			text[t++] = '.';
			has_point = true;
			for (int i = decpt; i < 0; i++)
				text[t++] = '0';
			for (int i = 0; i < ndig; i++)
				text[t++] = digits[i];
		}
		else
		{
			for (int i = 0; i < ndig; i++)
			{
				text[t++] = digits[i];
				if (i + 1 == decpt && i + 1 < ndig)
				{
					text[t++] = '.';
					has_point = true;
				}
			}
			for (int i = ndig; i < decpt; i++)
				text[t++] = '0';
		}
		if (!has_point)
		{
			text[t++] = '.';
			text[t++] = '0';
		}
		bl_buf_append(out, text, t);
	}
	else
	{
		int			x = decpt - 1;

		text[t++] = digits[0];
		if (ndig > 1)
		{
			text[t++] = '.';
			for (int i = 1; i < ndig; i++)
				text[t++] = digits[i];
		}
		text[t++] = 'e';
		bl_buf_append(out, text, t);
		bl_buf_printf(out, "%d", x);
	}
}

/* Opaque DECIMAL: precision, scale, then MySQL's binary decimal. */
static int
bl_json_put_decimal(bl_json_ctx *ctx, const uint8_t *p, size_t n)
{
	static const int dig2bytes[10] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 4};
	static const uint32_t pow10[10] = {1, 10, 100, 1000, 10000, 100000,
	1000000, 10000000, 100000000, 1000000000};
	uint8_t		bin[64];
	char		intdig[96];
	char		fracdig[96];
	int			nint = 0;
	int			nfrac = 0;
	int			prec,
				scale,
				intg,
				size;
	uint8_t		mask;
	bl_cur		c;
	bool		nonzero = false;
	int			first;

	if (n < 2)
		return bl_json_fail(ctx, BL_ERR_CORRUPT, "opaque DECIMAL too short");
	prec = p[0];
	scale = p[1];
	if (prec < 1 || prec > 81 || scale > prec)
		return bl_json_fail(ctx, BL_ERR_CORRUPT,
							"opaque DECIMAL with precision %d and scale %d",
							prec, scale);
	intg = prec - scale;
	size = (intg / 9) * 4 + dig2bytes[intg % 9] +
		(scale / 9) * 4 + dig2bytes[scale % 9];
	if ((size_t) size != n - 2 || size > (int) sizeof(bin))
		return bl_json_fail(ctx, BL_ERR_CORRUPT,
							"opaque DECIMAL(%d,%d) of %zu bytes", prec, scale,
							n - 2);

	/* Sign: high bit set for positive; negative values are inverted. */
	memcpy(bin, p + 2, (size_t) size);
	mask = (bin[0] & 0x80) ? 0x00 : 0xFF;
	bin[0] ^= 0x80;
	for (int i = 0; i < size; i++)
		bin[i] ^= mask;

	c = bl_cur_make(bin, (size_t) size);
	for (int part = 0; part < 2; part++)
	{
		int			ndigits = part == 0 ? intg : scale;
		int			lead = part == 0 ? ndigits % 9 : 0;
		int			trail = part == 0 ? 0 : ndigits % 9;
		int			groups = ndigits / 9;
		char	   *dst = part == 0 ? intdig : fracdig;
		int		   *nd = part == 0 ? &nint : &nfrac;

		for (int g = -1; g <= groups; g++)
		{
			int			k;
			uint32_t	v;

			if (g == -1)
				k = lead;
			else if (g == groups)
				k = trail;
			else
				k = 9;
			if (k == 0)
				continue;
			v = (uint32_t) bl_cur_uint_be(&c, dig2bytes[k]);
			if (v >= pow10[k])
				return bl_json_fail(ctx, BL_ERR_CORRUPT,
									"opaque DECIMAL digit group out of range");
			for (int i = k - 1; i >= 0; i--)
			{
				dst[*nd + i] = (char) ('0' + v % 10);
				v /= 10;
			}
			*nd += k;
		}
	}
	if (!bl_cur_ok(&c))
		return bl_json_fail(ctx, BL_ERR_CORRUPT, "opaque DECIMAL truncated");

	for (int i = 0; i < nint; i++)
		nonzero |= intdig[i] != '0';
	for (int i = 0; i < nfrac; i++)
		nonzero |= fracdig[i] != '0';
	if (mask && nonzero)
		bl_buf_putc(ctx->out, '-');
	first = 0;
	while (first < nint && intdig[first] == '0')
		first++;
	if (first == nint)
		bl_buf_putc(ctx->out, '0');
	else
		bl_buf_append(ctx->out, intdig + first, (size_t) (nint - first));
	if (nfrac > 0)
	{
		bl_buf_putc(ctx->out, '.');
		bl_buf_append(ctx->out, fracdig, (size_t) nfrac);
	}
	return 0;
}

/*
 * Opaque DATE, TIME, DATETIME, TIMESTAMP: a little-endian int64 in MySQL's
 * packed form (my_time.cc): the integer part shifted left by 24 bits with
 * the microseconds in the low 24; for dates the integer part is
 * ((year * 13 + month) << 5 | day) << 17 | hour << 12 | minute << 6 |
 * second, for TIME it is hour << 12 | minute << 6 | second; negative
 * values are negated.
 */
static int
bl_json_put_temporal(bl_json_ctx *ctx, uint8_t ftype, const uint8_t *p,
					 size_t n)
{
	int64_t		v;
	uint64_t	u;
	uint64_t	ipart;
	unsigned	frac,
				hour,
				minute,
				second;

	if (n != 8)
		return bl_json_fail(ctx, BL_ERR_CORRUPT,
							"opaque temporal value of %zu bytes", n);
	v = bl_json_sext(bl_load_le(p, 8), 64);
	u = v < 0 ? (uint64_t) 0 - (uint64_t) v : (uint64_t) v;
	frac = (unsigned) (u & 0xFFFFFF);
	ipart = u >> 24;

	if (ftype == BL_JSON_FT_TIME)
	{
		hour = (unsigned) ((ipart >> 12) % 1024);
		minute = (unsigned) ((ipart >> 6) % 64);
		second = (unsigned) (ipart % 64);
		if (frac > 999999 || minute > 59 || second > 59)
			return bl_json_fail(ctx, BL_ERR_CORRUPT, "invalid packed TIME");
		bl_buf_printf(ctx->out, "\"%s%02u:%02u:%02u.%06u\"",
					  v < 0 ? "-" : "", hour, minute, second, frac);
	}
	else
	{
		uint64_t	ymd = ipart >> 17;
		uint64_t	ym = ymd >> 5;
		uint64_t	hms = ipart & 0x1FFFF;
		unsigned	day = (unsigned) (ymd & 31);
		unsigned	month = (unsigned) (ym % 13);
		unsigned	year = (unsigned) (ym / 13);

		hour = (unsigned) (hms >> 12);
		minute = (unsigned) ((hms >> 6) & 63);
		second = (unsigned) (hms & 63);
		if (frac > 999999 || minute > 59 || second > 59)
			return bl_json_fail(ctx, BL_ERR_CORRUPT,
								"invalid packed DATE/DATETIME");
		if (ftype == BL_JSON_FT_DATE)
			bl_buf_printf(ctx->out, "\"%04u-%02u-%02u\"", year, month, day);
		else
			bl_buf_printf(ctx->out, "\"%04u-%02u-%02u %02u:%02u:%02u.%06u\"",
						  year, month, day, hour, minute, second, frac);
	}
	return 0;
}

/* Other opaque values: "base64:typeNN:..." with MySQL's 76-column breaks. */
static void
bl_json_put_base64(bl_buf *out, uint8_t ftype, const uint8_t *p, size_t n)
{
	static const char tab[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t		col = 0;

	bl_buf_printf(out, "\"base64:type%u:", (unsigned) ftype);
	for (size_t i = 0; i < n; i += 3)
	{
		uint32_t	v = (uint32_t) p[i] << 16;
		char		q[4];

		if (col == 76)
		{
			bl_buf_append(out, "\\n", 2);
			col = 0;
		}
		if (i + 1 < n)
			v |= (uint32_t) p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		q[0] = tab[(v >> 18) & 63];
		q[1] = tab[(v >> 12) & 63];
		q[2] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
		q[3] = i + 2 < n ? tab[v & 63] : '=';
		bl_buf_append(out, q, 4);
		col += 4;
	}
	bl_buf_putc(out, '"');
}


/* ----------------------------------------------------------------
 * Scalars
 * ----------------------------------------------------------------
 */

/*
 * Decode the scalar of the given type at data (at most len bytes).
 * Inlined scalars live in their value entry, already paid for.
 */
static int
bl_json_scalar_parse(bl_json_ctx *ctx, uint8_t type, const uint8_t *data,
					 size_t len, bool inlined, bl_json_scalar *sc)
{
	bl_cur		c = bl_cur_make(data, len);
	uint32_t	n;

	memset(sc, 0, sizeof(*sc));
	sc->type = type;
	switch (type)
	{
		case BL_JSONB_LITERAL:
			sc->sub = bl_cur_u8(&c);
			if (bl_cur_ok(&c) && sc->sub > BL_JSONB_FALSE_LITERAL)
				return bl_json_fail(ctx, BL_ERR_CORRUPT,
									"unknown literal %u", (unsigned) sc->sub);
			break;
		case BL_JSONB_INT16:
			sc->num.i = bl_json_sext(bl_cur_uint(&c, 2), 16);
			break;
		case BL_JSONB_UINT16:
			sc->num.u = bl_cur_uint(&c, 2);
			break;
		case BL_JSONB_INT32:
			sc->num.i = bl_json_sext(bl_cur_uint(&c, 4), 32);
			break;
		case BL_JSONB_UINT32:
			sc->num.u = bl_cur_uint(&c, 4);
			break;
		case BL_JSONB_INT64:
			sc->num.i = bl_json_sext(bl_cur_uint(&c, 8), 64);
			break;
		case BL_JSONB_UINT64:
			sc->num.u = bl_cur_uint(&c, 8);
			break;
		case BL_JSONB_DOUBLE:
			{
				uint64_t	bits = bl_cur_uint(&c, 8);

				memcpy(&sc->num.d, &bits, sizeof(double));
				break;
			}
		case BL_JSONB_STRING:
			if (!bl_json_read_varlen(&c, &n))
				return bl_json_fail(ctx, bl_cur_ok(&c) ? BL_ERR_CORRUPT :
									BL_ERR_TRUNCATED, "bad string length");
			sc->nbytes = n;
			sc->bytes = bl_cur_take(&c, n);
			break;
		case BL_JSONB_OPAQUE:
			sc->sub = bl_cur_u8(&c);
			if (!bl_cur_ok(&c) || !bl_json_read_varlen(&c, &n))
				return bl_json_fail(ctx, bl_cur_ok(&c) ? BL_ERR_CORRUPT :
									BL_ERR_TRUNCATED,
									"bad opaque value length");
			sc->nbytes = n;
			sc->bytes = bl_cur_take(&c, n);
			break;
		default:
			return bl_json_fail(ctx, BL_ERR_CORRUPT, "unknown value type 0x%02x",
								(unsigned) type);
	}
	if (!bl_cur_ok(&c))
		return bl_json_fail(ctx, BL_ERR_TRUNCATED,
							"value of type 0x%02x runs past its container",
							(unsigned) type);
	if (!inlined)
		return bl_json_charge(ctx, (uint64_t) (c.pos - data));
	return 0;
}

static int
bl_json_scalar_emit(bl_json_ctx *ctx, const bl_json_scalar *sc)
{
	bl_buf	   *out = ctx->out;

	switch (sc->type)
	{
		case BL_JSONB_LITERAL:
			bl_buf_puts(out, sc->sub == BL_JSONB_NULL_LITERAL ? "null" :
						sc->sub == BL_JSONB_TRUE_LITERAL ? "true" : "false");
			return 0;
		case BL_JSONB_INT16:
		case BL_JSONB_INT32:
		case BL_JSONB_INT64:
			bl_buf_printf(out, "%" PRId64, sc->num.i);
			return 0;
		case BL_JSONB_UINT16:
		case BL_JSONB_UINT32:
		case BL_JSONB_UINT64:
			bl_buf_printf(out, "%" PRIu64, sc->num.u);
			return 0;
		case BL_JSONB_DOUBLE:
			bl_json_put_double(out, sc->num.d);
			return 0;
		case BL_JSONB_STRING:
			bl_json_put_string(out, sc->bytes, sc->nbytes);
			return 0;
		case BL_JSONB_OPAQUE:
			switch (sc->sub)
			{
				case BL_JSON_FT_NEWDECIMAL:
					return bl_json_put_decimal(ctx, sc->bytes, sc->nbytes);
				case BL_JSON_FT_DATE:
				case BL_JSON_FT_TIME:
				case BL_JSON_FT_DATETIME:
				case BL_JSON_FT_TIMESTAMP:
					return bl_json_put_temporal(ctx, sc->sub, sc->bytes,
												sc->nbytes);
				case BL_JSON_FT_VAR_STRING:
					/* MySQL 8 prints these as plain strings. */
					bl_json_put_string(out, sc->bytes, sc->nbytes);
					return 0;
				default:
					bl_json_put_base64(out, sc->sub, sc->bytes, sc->nbytes);
					return 0;
			}
	}
	return bl_json_fail(ctx, BL_ERR_CORRUPT, "unknown value type 0x%02x",
						(unsigned) sc->type);
}


/* ----------------------------------------------------------------
 * Objects and arrays
 * ----------------------------------------------------------------
 */

static bool
bl_json_is_container(uint8_t type)
{
	return type <= BL_JSONB_LARGE_ARRAY;
}

static bool
bl_json_inlined(uint8_t type, bool large)
{
	switch (type)
	{
		case BL_JSONB_LITERAL:
		case BL_JSONB_INT16:
		case BL_JSONB_UINT16:
			return true;
		case BL_JSONB_INT32:
		case BL_JSONB_UINT32:
			return large;
		default:
			return false;
	}
}

static int
bl_json_container_open(bl_json_ctx *ctx, uint8_t type, const uint8_t *data,
					   size_t len, int depth, bl_json_container *ct)
{
	bl_cur		c = bl_cur_make(data, len);
	int			osz;
	uint64_t	header;

	if (depth >= BL_JSON_MAX_DEPTH)
		return bl_json_fail(ctx, BL_ERR_CORRUPT,
							"nesting deeper than %d levels", BL_JSON_MAX_DEPTH);
	ct->data = data;
	ct->large = (type == BL_JSONB_LARGE_OBJECT || type == BL_JSONB_LARGE_ARRAY);
	ct->object = (type == BL_JSONB_SMALL_OBJECT || type == BL_JSONB_LARGE_OBJECT);
	osz = ct->large ? 4 : 2;
	ct->count = (uint32_t) bl_cur_uint(&c, osz);
	ct->size = (size_t) bl_cur_uint(&c, osz);
	if (!bl_cur_ok(&c))
		return bl_json_fail(ctx, BL_ERR_TRUNCATED, "container header truncated");
	if (ct->size > len)
		return bl_json_fail(ctx, BL_ERR_CORRUPT,
							"container of %zu bytes in %zu available",
							ct->size, len);
	header = 2 * (uint64_t) osz +
		(uint64_t) ct->count * (uint64_t) (osz + 1 + (ct->object ? osz + 2 : 0));
	if (header > ct->size)
		return bl_json_fail(ctx, BL_ERR_CORRUPT,
							"%" PRIu32 " entries do not fit in %zu bytes",
							ct->count, ct->size);
	ct->header = (size_t) header;
	return bl_json_charge(ctx, header);
}

static int
bl_json_container_key(bl_json_ctx *ctx, const bl_json_container *ct,
					  uint32_t i, const uint8_t **key, size_t *keylen)
{
	int			osz = ct->large ? 4 : 2;
	bl_cur		c = bl_cur_make(ct->data, ct->size);
	uint64_t	off;
	uint64_t	klen;

	bl_cur_skip(&c, 2 * (size_t) osz + (size_t) i * (size_t) (osz + 2));
	off = bl_cur_uint(&c, osz);
	klen = bl_cur_u16(&c);
	if (!bl_cur_ok(&c))
		return bl_json_fail(ctx, BL_ERR_CORRUPT, "key entry outside its object");
	if (off < ct->header || off + klen > ct->size)
		return bl_json_fail(ctx, BL_ERR_CORRUPT, "key offset %" PRIu64
							" outside its object", off);
	*key = ct->data + off;
	*keylen = (size_t) klen;
	return bl_json_charge(ctx, klen);
}

/* The type and the byte window of element i, and whether it is inlined. */
static int
bl_json_container_elem(bl_json_ctx *ctx, const bl_json_container *ct,
					   uint32_t i, uint8_t *type, const uint8_t **vdata,
					   size_t *vlen, bool *inlined)
{
	int			osz = ct->large ? 4 : 2;
	size_t		entry = 2 * (size_t) osz +
		(ct->object ? (size_t) ct->count * (size_t) (osz + 2) : 0) +
		(size_t) i * (size_t) (osz + 1);
	bl_cur		c = bl_cur_make(ct->data, ct->size);
	uint64_t	off;

	bl_cur_skip(&c, entry);
	*type = bl_cur_u8(&c);
	if (!bl_cur_ok(&c))
		return bl_json_fail(ctx, BL_ERR_CORRUPT, "value entry outside its container");
	*inlined = bl_json_inlined(*type, ct->large);
	if (*inlined)
	{
		*vdata = c.pos;
		*vlen = (size_t) osz;
		return 0;
	}
	off = bl_cur_uint(&c, osz);
	if (!bl_cur_ok(&c))
		return bl_json_fail(ctx, BL_ERR_CORRUPT, "value entry outside its container");
	if (off < ct->header || off > ct->size)
		return bl_json_fail(ctx, BL_ERR_CORRUPT, "value offset %" PRIu64
							" outside its container", off);
	*vdata = ct->data + off;
	*vlen = ct->size - (size_t) off;
	return 0;
}


/* ----------------------------------------------------------------
 * Binary JSON -> text, streaming
 * ----------------------------------------------------------------
 */

static int
bl_json_value_to_text(bl_json_ctx *ctx, uint8_t type, const uint8_t *data,
					  size_t len, bool inlined, int depth)
{
	bl_json_container ct;

	if (!bl_json_is_container(type))
	{
		bl_json_scalar sc;

		if (bl_json_scalar_parse(ctx, type, data, len, inlined, &sc) != 0)
			return -1;
		return bl_json_scalar_emit(ctx, &sc);
	}

	if (bl_json_container_open(ctx, type, data, len, depth, &ct) != 0)
		return -1;
	bl_buf_putc(ctx->out, ct.object ? '{' : '[');
	for (uint32_t i = 0; i < ct.count; i++)
	{
		uint8_t		etype;
		const uint8_t *edata;
		size_t		elen;
		bool		einl;

		if (i > 0)
			bl_buf_putc(ctx->out, ',');
		if (ct.object)
		{
			const uint8_t *key;
			size_t		keylen;

			if (bl_json_container_key(ctx, &ct, i, &key, &keylen) != 0)
				return -1;
			bl_json_put_string(ctx->out, key, keylen);
			bl_buf_putc(ctx->out, ':');
		}
		if (bl_json_container_elem(ctx, &ct, i, &etype, &edata, &elen,
								   &einl) != 0 ||
			bl_json_value_to_text(ctx, etype, edata, elen, einl,
								  depth + 1) != 0)
			return -1;
		if (BL_UNLIKELY(bl_buf_failed(ctx->out)))
			return bl_json_fail(ctx, BL_ERR_NOMEM, "out of memory");
	}
	bl_buf_putc(ctx->out, ct.object ? '}' : ']');
	return 0;
}

/* A whole document: type byte and value; empty means null. */
static int
bl_json_doc_to_text(bl_json_ctx *ctx, const uint8_t *data, size_t len)
{
	ctx->budget = len;
	if (len == 0)
	{
		bl_buf_puts(ctx->out, "null");
		return 0;
	}
	if (bl_json_charge(ctx, 1) != 0)
		return -1;
	return bl_json_value_to_text(ctx, data[0], data + 1, len - 1, false, 0);
}

/* Common exit: report out-of-memory, and undo partial output on error. */
static int
bl_json_finish(bl_json_ctx *ctx, size_t start, int rc)
{
	if (rc == 0 && bl_buf_failed(ctx->out))
		rc = bl_json_fail(ctx, BL_ERR_NOMEM, "out of memory");
	if (rc != 0 && ctx->out->data != NULL && ctx->out->len >= start)
	{
		ctx->out->len = start;
		ctx->out->data[start] = '\0';
	}
	return rc;
}

int
bl_json_binary_to_text(const uint8_t *data, size_t len, bl_buf *out,
					   bl_error *err)
{
	bl_json_ctx ctx;
	size_t		start = out->len;

	ctx.out = out;
	ctx.err = err;
	ctx.budget = 0;
	return bl_json_finish(&ctx, start, bl_json_doc_to_text(&ctx, data, len));
}


/* ----------------------------------------------------------------
 * JSON paths
 * ----------------------------------------------------------------
 */

static bool
bl_json_path_space(uint8_t c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' ||
		c == '\r';
}

static void
bl_json_path_skip_space(bl_json_path_iter *it)
{
	while (it->p < it->end && bl_json_path_space(*it->p))
		it->p++;
}

static int
bl_json_hex4(const uint8_t *p, const uint8_t *end, uint32_t *v)
{
	*v = 0;
	if (end - p < 4)
		return -1;
	for (int i = 0; i < 4; i++)
	{
		uint8_t		c = p[i];

		*v <<= 4;
		if (c >= '0' && c <= '9')
			*v |= (uint32_t) (c - '0');
		else if (c >= 'a' && c <= 'f')
			*v |= (uint32_t) (c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			*v |= (uint32_t) (c - 'A' + 10);
		else
			return -1;
	}
	return 0;
}

static void
bl_json_put_utf8(bl_buf *b, uint32_t cp)
{
	uint8_t		u[4];
	size_t		n;

	if (cp < 0x80)
	{
		u[0] = (uint8_t) cp;
		n = 1;
	}
	else if (cp < 0x800)
	{
		u[0] = (uint8_t) (0xC0 | (cp >> 6));
		u[1] = (uint8_t) (0x80 | (cp & 0x3F));
		n = 2;
	}
	else if (cp < 0x10000)
	{
		u[0] = (uint8_t) (0xE0 | (cp >> 12));
		u[1] = (uint8_t) (0x80 | ((cp >> 6) & 0x3F));
		u[2] = (uint8_t) (0x80 | (cp & 0x3F));
		n = 3;
	}
	else
	{
		u[0] = (uint8_t) (0xF0 | (cp >> 18));
		u[1] = (uint8_t) (0x80 | ((cp >> 12) & 0x3F));
		u[2] = (uint8_t) (0x80 | ((cp >> 6) & 0x3F));
		u[3] = (uint8_t) (0x80 | (cp & 0x3F));
		n = 4;
	}
	bl_buf_append(b, u, n);
}

/*
 * Can code point cp be part of an unquoted member name?  MySQL requires an
 * ECMAScript identifier: ASCII letters, '$' and '_' (and digits after the
 * first character); non-ASCII characters are accepted here (MySQL asks
 * its Unicode tables, which we do not carry).
 */
static bool
bl_json_ident_char(uint32_t cp, bool first)
{
	if (cp >= 0x80 || cp == '$' || cp == '_' ||
		(cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z'))
		return true;
	return !first && cp >= '0' && cp <= '9';
}

/*
 * Unescape the JSON string body [p, end) into b, or only validate it when
 * b is NULL.  With ident, the result must also be an identifier.
 */
static int
bl_json_unescape(const uint8_t *p, const uint8_t *end, bl_buf *b, bool ident)
{
	bool		first = true;

	if (ident && p >= end)
		return -1;
	while (p < end)
	{
		uint8_t		c = *p++;
		uint32_t	cp;

		if (c < 0x20 || c == '"')
			return -1;
		if (c != '\\')
			cp = c;
		else
		{
			if (p >= end)
				return -1;
			c = *p++;
			switch (c)
			{
				case '"':
				case '\\':
				case '/':
					cp = c;
					break;
				case 'b':
					cp = '\b';
					break;
				case 'f':
					cp = '\f';
					break;
				case 'n':
					cp = '\n';
					break;
				case 'r':
					cp = '\r';
					break;
				case 't':
					cp = '\t';
					break;
				case 'u':
					if (bl_json_hex4(p, end, &cp) != 0)
						return -1;
					p += 4;
					if (cp >= 0xDC00 && cp <= 0xDFFF)
						return -1;
					if (cp >= 0xD800 && cp <= 0xDBFF)
					{
						uint32_t	lo;

						if (end - p < 6 || p[0] != '\\' || p[1] != 'u' ||
							bl_json_hex4(p + 2, end, &lo) != 0 ||
							lo < 0xDC00 || lo > 0xDFFF)
							return -1;
						p += 6;
						cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
					}
					break;
				default:
					return -1;
			}
			/* An escape always produces a whole code point. */
			if (b != NULL)
				bl_json_put_utf8(b, cp);
			if (ident && !bl_json_ident_char(cp, first))
				return -1;
			first = false;
			continue;
		}
		/* A raw byte; non-ASCII bytes are passed through as they are. */
		if (b != NULL)
			bl_buf_putc(b, (char) c);
		if (ident && !bl_json_ident_char(cp, first))
			return -1;
		first = false;
	}
	return 0;
}

static int
bl_json_path_begin(bl_json_ctx *ctx, bl_json_path_iter *it,
				   const uint8_t *path, size_t len, bool keep_names)
{
	it->p = path;
	it->end = path + len;
	it->keep_names = keep_names;
	bl_buf_init(&it->scratch);
	bl_json_path_skip_space(it);
	if (it->p >= it->end || *it->p != '$')
		return bl_json_fail(ctx, BL_ERR_CORRUPT, "diff path does not start with $");
	it->p++;
	bl_json_path_skip_space(it);
	return 0;
}

static bool
bl_json_path_done(const bl_json_path_iter *it)
{
	return it->p >= it->end;
}

/*
 * Parse the next leg (MySQL json_path.cc syntax, without the wildcards and
 * ranges a diff path cannot have).  Returns 1 with *leg, 0 at the end, -1
 * on a syntax error.
 */
static int
bl_json_path_next(bl_json_ctx *ctx, bl_json_path_iter *it, bl_json_leg *leg)
{
	if (bl_json_path_done(it))
		return 0;
	memset(leg, 0, sizeof(*leg));

	if (*it->p == '.')
	{
		const uint8_t *start;
		const uint8_t *stop;
		bool		quoted;

		it->p++;
		bl_json_path_skip_space(it);
		if (it->p >= it->end || *it->p == '*')
			return bl_json_fail(ctx, BL_ERR_CORRUPT,
								"bad or wildcard member in diff path");
		bl_buf_reset(&it->scratch);
		quoted = (*it->p == '"');
		if (quoted)
		{
			start = ++it->p;
			while (it->p < it->end && *it->p != '"')
				it->p += (*it->p == '\\' && it->end - it->p > 1) ? 2 : 1;
			if (it->p >= it->end)
				return bl_json_fail(ctx, BL_ERR_CORRUPT,
									"unterminated member name in diff path");
			stop = it->p++;
		}
		else
		{
			start = it->p;
			while (it->p < it->end && !bl_json_path_space(*it->p) &&
				   *it->p != '[' && *it->p != '.' && *it->p != '*')
				it->p++;
			stop = it->p;
			if (stop == start)
				return bl_json_fail(ctx, BL_ERR_CORRUPT,
									"empty member name in diff path");
		}
		/* Unquoted names may hold escapes too, but must be identifiers. */
		if (bl_json_unescape(start, stop,
							 it->keep_names ? &it->scratch : NULL,
							 !quoted) != 0)
			return bl_json_fail(ctx, BL_ERR_CORRUPT,
								"bad member name in diff path");
		if (bl_buf_failed(&it->scratch))
			return bl_json_fail(ctx, BL_ERR_NOMEM, "out of memory");
		leg->member = true;
		if (it->keep_names)
		{
			leg->name = (const uint8_t *) (it->scratch.data ?
										   it->scratch.data : "");
			leg->namelen = it->scratch.len;
		}
	}
	else if (*it->p == '[')
	{
		uint64_t	idx = 0;
		bool		digits = false;

		it->p++;
		bl_json_path_skip_space(it);
		if (it->end - it->p >= 4 && memcmp(it->p, "last", 4) == 0)
		{
			leg->from_end = true;
			it->p += 4;
			bl_json_path_skip_space(it);
			if (it->p < it->end && *it->p == '-')
			{
				it->p++;
				bl_json_path_skip_space(it);
			}
			else
				digits = true;	/* [last] alone: index 0 from the end */
		}
		if (!digits)
		{
			while (it->p < it->end && *it->p >= '0' && *it->p <= '9')
			{
				idx = idx * 10 + (uint64_t) (*it->p - '0');
				if (idx > UINT32_MAX)
					return bl_json_fail(ctx, BL_ERR_CORRUPT,
										"array index too large in diff path");
				digits = true;
				it->p++;
			}
		}
		bl_json_path_skip_space(it);
		if (!digits || it->p >= it->end || *it->p != ']')
			return bl_json_fail(ctx, BL_ERR_CORRUPT,
								"bad array index in diff path");
		it->p++;
		leg->index = (uint32_t) idx;
	}
	else
		return bl_json_fail(ctx, BL_ERR_CORRUPT,
							"unexpected character in diff path");

	bl_json_path_skip_space(it);
	return 1;
}

/* Check a path's syntax. */
static int
bl_json_path_check(bl_json_ctx *ctx, const uint8_t *path, size_t len)
{
	bl_json_path_iter it;
	bl_json_leg leg;
	int			r;

	if (bl_json_path_begin(ctx, &it, path, len, false) != 0)
		return -1;
	while ((r = bl_json_path_next(ctx, &it, &leg)) == 1)
		;
	bl_buf_free(&it.scratch);
	return r;
}


/* ----------------------------------------------------------------
 * Diff vectors
 * ----------------------------------------------------------------
 */

/* The next diff at c: 1 with *d, 0 at the end, -1 on error. */
static int
bl_json_diff_next(bl_json_ctx *ctx, bl_cur *c, bl_json_diff *d)
{
	uint64_t	n;

	if (bl_cur_left(c) == 0)
		return 0;
	memset(d, 0, sizeof(*d));
	d->op = bl_cur_u8(c);
	if (d->op > BL_JSON_DIFF_REMOVE)
		return bl_json_fail(ctx, BL_ERR_CORRUPT, "unknown diff operation %u",
							(unsigned) d->op);
	n = bl_cur_packed(c);
	if (!bl_cur_ok(c) || n > bl_cur_left(c))
		return bl_json_fail(ctx, BL_ERR_TRUNCATED, "diff path truncated");
	d->pathlen = (size_t) n;
	d->path = bl_cur_take(c, d->pathlen);
	if (d->op != BL_JSON_DIFF_REMOVE)
	{
		n = bl_cur_packed(c);
		if (!bl_cur_ok(c) || n > bl_cur_left(c))
			return bl_json_fail(ctx, BL_ERR_TRUNCATED, "diff value truncated");
		d->valuelen = (size_t) n;
		d->value = bl_cur_take(c, d->valuelen);
	}
	if (bl_json_path_check(ctx, d->path, d->pathlen) != 0)
		return -1;
	return 1;
}

static int
bl_json_diff_vector_to_text(bl_json_ctx *ctx, const uint8_t *diff, size_t len)
{
	static const char *const opname[] = {"replace", "insert", "remove"};
	bl_cur		c = bl_cur_make(diff, len);
	bl_json_diff d;
	int			r;
	bool		first = true;

	bl_buf_putc(ctx->out, '[');
	while ((r = bl_json_diff_next(ctx, &c, &d)) == 1)
	{
		if (!first)
			bl_buf_putc(ctx->out, ',');
		first = false;
		bl_buf_puts(ctx->out, "{\"op\":\"");
		bl_buf_puts(ctx->out, opname[d.op]);
		bl_buf_puts(ctx->out, "\",\"path\":");
		bl_json_put_string(ctx->out, d.path, d.pathlen);
		if (d.op != BL_JSON_DIFF_REMOVE)
		{
			bl_buf_puts(ctx->out, ",\"value\":");
			if (bl_json_doc_to_text(ctx, d.value, d.valuelen) != 0)
				return -1;
		}
		bl_buf_putc(ctx->out, '}');
		if (BL_UNLIKELY(bl_buf_failed(ctx->out)))
			return bl_json_fail(ctx, BL_ERR_NOMEM, "out of memory");
	}
	if (r != 0)
		return -1;
	bl_buf_putc(ctx->out, ']');
	return 0;
}

int
bl_json_diff_to_text(const uint8_t *diff, size_t len, bl_buf *out,
					 bl_error *err)
{
	bl_json_ctx ctx;
	size_t		start = out->len;
	int			rc;

	ctx.out = out;
	ctx.err = err;
	ctx.budget = 0;
	if (len == 0)
	{
		bl_buf_puts(out, "[]");
		rc = 0;
	}
	else
		rc = bl_json_diff_vector_to_text(&ctx, diff, len);
	return bl_json_finish(&ctx, start, rc);
}


/* ----------------------------------------------------------------
 * DOM
 * ----------------------------------------------------------------
 */

static void
bl_json_node_free(bl_json_node *node)
{
	if (node == NULL)
		return;
	for (size_t i = 0; i < node->count; i++)
	{
		free(node->members[i].owned_key);
		bl_json_node_free(node->members[i].value);
	}
	free(node->members);
	free(node);
}

static bl_json_node *
bl_json_node_new(bl_json_ctx *ctx, uint8_t kind)
{
	bl_json_node *node = calloc(1, sizeof(bl_json_node));

	if (node == NULL)
		bl_json_fail(ctx, BL_ERR_NOMEM, "out of memory");
	else
		node->kind = kind;
	return node;
}

/* Make room for one more member. */
static int
bl_json_node_grow(bl_json_ctx *ctx, bl_json_node *node)
{
	bl_json_member *m;
	size_t		cap;

	if (node->count < node->cap)
		return 0;
	cap = node->cap ? node->cap * 2 : 4;
	if (cap > SIZE_MAX / sizeof(bl_json_member))
		return bl_json_fail(ctx, BL_ERR_NOMEM, "out of memory");
	m = realloc(node->members, cap * sizeof(bl_json_member));
	if (m == NULL)
		return bl_json_fail(ctx, BL_ERR_NOMEM, "out of memory");
	node->members = m;
	node->cap = cap;
	return 0;
}

static int
bl_json_dom_build(bl_json_ctx *ctx, uint8_t type, const uint8_t *data,
				  size_t len, bool inlined, int depth, bl_json_node **res)
{
	bl_json_container ct;
	bl_json_node *node;

	*res = NULL;
	if (!bl_json_is_container(type))
	{
		bl_json_scalar sc;

		if (bl_json_scalar_parse(ctx, type, data, len, inlined, &sc) != 0)
			return -1;
		node = bl_json_node_new(ctx, type);
		if (node == NULL)
			return -1;
		node->scalar = sc;
		*res = node;
		return 0;
	}

	if (bl_json_container_open(ctx, type, data, len, depth, &ct) != 0)
		return -1;
	node = bl_json_node_new(ctx, ct.object ? BL_JSON_NODE_OBJECT :
							BL_JSON_NODE_ARRAY);
	if (node == NULL)
		return -1;
	*res = node;
	if (ct.count > 0)
	{
		/* count * 3 <= header <= len, so this is bounded by the input. */
		node->members = calloc(ct.count, sizeof(bl_json_member));
		if (node->members == NULL)
			return bl_json_fail(ctx, BL_ERR_NOMEM, "out of memory");
		node->cap = ct.count;
	}
	for (uint32_t i = 0; i < ct.count; i++)
	{
		bl_json_member *m = &node->members[i];
		uint8_t		etype;
		const uint8_t *edata;
		size_t		elen;
		bool		einl;

		if (ct.object &&
			bl_json_container_key(ctx, &ct, i, &m->key, &m->keylen) != 0)
			return -1;
		if (bl_json_container_elem(ctx, &ct, i, &etype, &edata, &elen,
								   &einl) != 0)
			return -1;
		node->count++;
		if (bl_json_dom_build(ctx, etype, edata, elen, einl, depth + 1,
							  &m->value) != 0)
			return -1;
	}
	return 0;
}

/* A whole document as a DOM; the caller frees *res even on error. */
static int
bl_json_dom_parse(bl_json_ctx *ctx, const uint8_t *data, size_t len,
				  bl_json_node **res)
{
	*res = NULL;
	ctx->budget = len;
	if (len == 0)
	{
		bl_json_node *node = bl_json_node_new(ctx, BL_JSONB_LITERAL);

		if (node == NULL)
			return -1;
		node->scalar.type = BL_JSONB_LITERAL;
		node->scalar.sub = BL_JSONB_NULL_LITERAL;
		*res = node;
		return 0;
	}
	if (bl_json_charge(ctx, 1) != 0)
		return -1;
	return bl_json_dom_build(ctx, data[0], data + 1, len - 1, false, 0, res);
}

static int
bl_json_dom_to_text(bl_json_ctx *ctx, const bl_json_node *node, int depth)
{
	bool		object;

	if (node->kind != BL_JSON_NODE_OBJECT && node->kind != BL_JSON_NODE_ARRAY)
		return bl_json_scalar_emit(ctx, &node->scalar);

	if (depth >= BL_JSON_MAX_DEPTH)
		return bl_json_fail(ctx, BL_ERR_CORRUPT,
							"document after the diff is nested deeper than %d levels",
							BL_JSON_MAX_DEPTH);
	object = node->kind == BL_JSON_NODE_OBJECT;
	bl_buf_putc(ctx->out, object ? '{' : '[');
	for (size_t i = 0; i < node->count; i++)
	{
		if (i > 0)
			bl_buf_putc(ctx->out, ',');
		if (object)
		{
			bl_json_put_string(ctx->out, node->members[i].key,
							   node->members[i].keylen);
			bl_buf_putc(ctx->out, ':');
		}
		if (bl_json_dom_to_text(ctx, node->members[i].value, depth + 1) != 0)
			return -1;
		if (BL_UNLIKELY(bl_buf_failed(ctx->out)))
			return bl_json_fail(ctx, BL_ERR_NOMEM, "out of memory");
	}
	bl_buf_putc(ctx->out, object ? '}' : ']');
	return 0;
}

/* Nesting depth of a DOM value: 0 for a scalar, 1 for [] or {}, ... */
static int
bl_json_node_depth(const bl_json_node *node)
{
	int			deepest = 0;

	if (node->kind != BL_JSON_NODE_OBJECT && node->kind != BL_JSON_NODE_ARRAY)
		return 0;
	for (size_t i = 0; i < node->count; i++)
	{
		int			d = bl_json_node_depth(node->members[i].value);

		if (d > deepest)
			deepest = d;
	}
	return deepest + 1;
}

/* MySQL's key order: shorter keys first, then bytewise. */
static int
bl_json_key_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	if (alen != blen)
		return alen < blen ? -1 : 1;
	return alen == 0 ? 0 : memcmp(a, b, alen);
}

static bool
bl_json_find_key(const bl_json_node *obj, const uint8_t *key, size_t keylen,
				 size_t *pos)
{
	for (size_t i = 0; i < obj->count; i++)
	{
		if (obj->members[i].keylen == keylen &&
			(keylen == 0 || memcmp(obj->members[i].key, key, keylen) == 0))
		{
			*pos = i;
			return true;
		}
	}
	return false;
}

/* Json_array_index: the position a cell leg designates in an array. */
static size_t
bl_json_array_pos(const bl_json_leg *leg, size_t size, bool *within)
{
	*within = leg->index < size;
	if (leg->from_end)
		return leg->index < size ? size - leg->index - 1 : 0;
	return leg->index < size ? leg->index : size;
}

/* The member of node that leg designates, or NULL (seek_exact_path). */
static bl_json_member *
bl_json_dom_step(bl_json_node *node, const bl_json_leg *leg)
{
	size_t		pos;
	bool		within;

	if (node->kind == BL_JSON_NODE_ARRAY && !leg->member)
	{
		pos = bl_json_array_pos(leg, node->count, &within);
		return within ? &node->members[pos] : NULL;
	}
	if (node->kind == BL_JSON_NODE_OBJECT && leg->member &&
		bl_json_find_key(node, leg->name, leg->namelen, &pos))
		return &node->members[pos];
	return NULL;
}

static void
bl_json_members_remove(bl_json_node *node, size_t pos)
{
	free(node->members[pos].owned_key);
	bl_json_node_free(node->members[pos].value);
	memmove(&node->members[pos], &node->members[pos + 1],
			(node->count - pos - 1) * sizeof(bl_json_member));
	node->count--;
}

/*
 * Apply one diff to the DOM (apply_json_diffs() in sql/json_diff.cc).
 * *value is consumed (attached or freed).
 */
static int
bl_json_dom_apply(bl_json_ctx *ctx, bl_json_node *root, const bl_json_diff *d,
				  bl_json_node **value)
{
	bl_json_path_iter it;
	bl_json_leg leg;
	bl_json_node *parent = root;
	int			walked = 0;
	int			r;
	int			rc = -1;

	if (bl_json_path_begin(ctx, &it, d->path, d->pathlen, true) != 0)
		return -1;
	r = bl_json_path_next(ctx, &it, &leg);
	if (r == 0)
		bl_json_fail(ctx, BL_ERR_CORRUPT, "diff at the document root");
	/* Walk down to the parent of the last leg. */
	while (r == 1 && !bl_json_path_done(&it))
	{
		bl_json_member *m = bl_json_dom_step(parent, &leg);

		if (m == NULL)
		{
			bl_json_fail(ctx, BL_ERR_CORRUPT,
						 "diff path %.*s not found in the before image",
						 (int) (d->pathlen > 200 ? 200 : d->pathlen),
						 (const char *) d->path);
			r = -1;
			break;
		}
		parent = m->value;
		walked++;
		r = bl_json_path_next(ctx, &it, &leg);
	}
	if (r != 1)
		goto done;

	/*
	 * Keep the document within MySQL's depth limit (which it enforces when
	 * storing the result); this also bounds the recursion of the DOM code.
	 * The parent is at depth walked + 1.
	 */
	if (*value != NULL &&
		walked + 1 + bl_json_node_depth(*value) > BL_JSON_MAX_DEPTH)
	{
		bl_json_fail(ctx, BL_ERR_CORRUPT,
					 "document after the diff is nested deeper than %d levels",
					 BL_JSON_MAX_DEPTH);
		goto done;
	}

	switch (d->op)
	{
		case BL_JSON_DIFF_REPLACE:
			{
				bl_json_member *m = bl_json_dom_step(parent, &leg);

				if (m == NULL)
					break;
				bl_json_node_free(m->value);
				m->value = *value;
				*value = NULL;
				rc = 0;
				break;
			}
		case BL_JSON_DIFF_INSERT:
			if (parent->kind == BL_JSON_NODE_OBJECT && leg.member)
			{
				size_t		pos;
				uint8_t    *key;

				if (bl_json_find_key(parent, leg.name, leg.namelen, &pos))
					break;
				for (pos = 0; pos < parent->count; pos++)
					if (bl_json_key_cmp(leg.name, leg.namelen,
										parent->members[pos].key,
										parent->members[pos].keylen) < 0)
						break;
				if (bl_json_node_grow(ctx, parent) != 0)
					goto done;
				key = malloc(leg.namelen ? leg.namelen : 1);
				if (key == NULL)
				{
					bl_json_fail(ctx, BL_ERR_NOMEM, "out of memory");
					goto done;
				}
				if (leg.namelen > 0)
					memcpy(key, leg.name, leg.namelen);
				memmove(&parent->members[pos + 1], &parent->members[pos],
						(parent->count - pos) * sizeof(bl_json_member));
				parent->members[pos].key = key;
				parent->members[pos].keylen = leg.namelen;
				parent->members[pos].owned_key = key;
				parent->members[pos].value = *value;
				*value = NULL;
				parent->count++;
				rc = 0;
			}
			else if (parent->kind == BL_JSON_NODE_ARRAY && !leg.member)
			{
				bool		within;
				size_t		pos = bl_json_array_pos(&leg, parent->count, &within);

				if (bl_json_node_grow(ctx, parent) != 0)
					goto done;
				memmove(&parent->members[pos + 1], &parent->members[pos],
						(parent->count - pos) * sizeof(bl_json_member));
				memset(&parent->members[pos], 0, sizeof(bl_json_member));
				parent->members[pos].value = *value;
				*value = NULL;
				parent->count++;
				rc = 0;
			}
			break;
		case BL_JSON_DIFF_REMOVE:
			{
				bl_json_member *m = bl_json_dom_step(parent, &leg);

				if (m == NULL)
					break;
				bl_json_members_remove(parent, (size_t) (m - parent->members));
				rc = 0;
				break;
			}
	}
	if (rc != 0)
		bl_json_fail(ctx, BL_ERR_CORRUPT,
					 "diff %s at %.*s cannot be applied to the before image",
					 d->op == BL_JSON_DIFF_REPLACE ? "replace" :
					 d->op == BL_JSON_DIFF_INSERT ? "insert" : "remove",
					 (int) (d->pathlen > 200 ? 200 : d->pathlen),
					 (const char *) d->path);
done:
	bl_buf_free(&it.scratch);
	return rc;
}

static int
bl_json_apply(bl_json_ctx *ctx, const uint8_t *before, size_t before_len,
			  const uint8_t *diff, size_t diff_len)
{
	bl_json_node *root = NULL;
	bl_cur		c;
	bl_json_diff d;
	int			r = 0;
	int			rc = -1;

	/* An empty diff vector is legal: the document is unchanged. */
	c = bl_cur_make(diff_len > 0 ? diff : (const uint8_t *) "", diff_len);
	if (bl_json_dom_parse(ctx, before, before_len, &root) != 0)
		goto done;
	while ((r = bl_json_diff_next(ctx, &c, &d)) == 1)
	{
		bl_json_node *value = NULL;

		if (d.op != BL_JSON_DIFF_REMOVE &&
			bl_json_dom_parse(ctx, d.value, d.valuelen, &value) != 0)
		{
			bl_json_node_free(value);
			goto done;
		}
		r = bl_json_dom_apply(ctx, root, &d, &value);
		bl_json_node_free(value);
		if (r != 0)
			goto done;
	}
	if (r != 0)
		goto done;
	rc = bl_json_dom_to_text(ctx, root, 0);
done:
	bl_json_node_free(root);
	return rc;
}

int
bl_json_apply_diff(const uint8_t *before, size_t before_len,
				   const uint8_t *diff, size_t diff_len, bl_buf *out,
				   bl_error *err)
{
	bl_json_ctx ctx;
	size_t		start = out->len;

	ctx.out = out;
	ctx.err = err;
	ctx.budget = 0;
	return bl_json_finish(&ctx, start,
						  bl_json_apply(&ctx, before, before_len, diff,
										diff_len));
}
