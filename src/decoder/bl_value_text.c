/*
 * bl_value_text.c
 *	  Decoded values and row images as JSON text (see bl_value_text.h for
 *	  the formats).  Used by binlogcat and by the SQL functions that show
 *	  row images as jsonb; written for speed since binlogcat's output rate
 *	  is one of the benchmarks.
 */
#include "bl_value_text.h"
#include "bl_charset.h"
#include "bl_decimal.h"
#include "bl_digits.h"
#include "bl_float_text.h"
#include "bl_geometry.h"
#include "bl_json_binary.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char hexdigits[] = "0123456789abcdef";

void
bl_buf_put_u64(bl_buf *b, uint64_t v)
{
	char	   *o;

	if (BL_UNLIKELY(!bl_buf_reserve(b, 20)))
		return;
	o = bl_put_u64_digits(b->data + b->len, v);
	*o = '\0';
	b->len = (size_t) (o - b->data);
}

void
bl_buf_put_i64(bl_buf *b, int64_t v)
{
	char	   *o;

	if (BL_UNLIKELY(!bl_buf_reserve(b, 21)))
		return;
	o = b->data + b->len;
	if (v < 0)
	{
		*o++ = '-';
		o = bl_put_u64_digits(o, (uint64_t) 0 - (uint64_t) v);
	}
	else
		o = bl_put_u64_digits(o, (uint64_t) v);
	*o = '\0';
	b->len = (size_t) (o - b->data);
}

/* Append the hex digits of data (no prefix). */
static void
put_hex_digits(bl_buf *b, const uint8_t *data, size_t len)
{
	char	   *o;

	if (!bl_buf_reserve(b, 2 * len))
		return;
	o = b->data + b->len;
	for (size_t i = 0; i < len; i++)
	{
		*o++ = hexdigits[data[i] >> 4];
		*o++ = hexdigits[data[i] & 15];
	}
	b->len = (size_t) (o - b->data);
	b->data[b->len] = '\0';
}

void
bl_buf_put_hex_json(bl_buf *b, const uint8_t *data, size_t len)
{
	bl_buf_append(b, "\\\\x", 3);
	put_hex_digits(b, data, len);
}

/*
 * ".ffffff" with fsp (1-6) digits of usec, nothing for fsp 0: the first
 * fsp of the six digits of usec % 1000000 (all six are written; the
 * caller has room).
 */
static inline char *
put_fraction(char *o, uint32_t usec, int fsp)
{
	uint32_t	u = usec % 1000000;

	if (fsp <= 0)
		return o;
	if (fsp > 6)
		fsp = 6;
	*o++ = '.';
	bl_put2(o, u / 10000);
	bl_put2(o + 2, (u / 100) % 100);
	bl_put2(o + 4, u % 100);
	return o + fsp;
}

/*
 * The text of a temporal value at o (at most 32 bytes: "-4294967295:99:99.999999"
 * or "9999-99-99T99:99:99.999999"); returns the end.  Each field is
 * written with as many digits as its format has (the last ones, should a
 * corrupt value have more), except TIME's hours, which can exceed 99.
 */
static inline char *
temporal_text(char *o, bl_value_kind kind, const bl_temporal *t, int fsp, char sep)
{
	if (kind == BL_VAL_TIME)
	{
		if (t->neg)
			*o++ = '-';
		if (t->hour < 100)
			o = bl_put2(o, t->hour);
		else
			o = bl_put_u64_digits(o, t->hour);
		*o++ = ':';
		o = bl_put2(o, t->minute % 100u);
		*o++ = ':';
		o = bl_put2(o, t->second % 100u);
		return put_fraction(o, t->usec, fsp);
	}
	o = bl_put2(o, (t->year / 100) % 100);
	o = bl_put2(o, t->year % 100);
	*o++ = '-';
	o = bl_put2(o, t->month % 100u);
	*o++ = '-';
	o = bl_put2(o, t->day % 100u);
	if (kind == BL_VAL_DATE)
		return o;
	*o++ = sep;
	o = bl_put2(o, t->hour % 100);
	*o++ = ':';
	o = bl_put2(o, t->minute % 100u);
	*o++ = ':';
	o = bl_put2(o, t->second % 100u);
	return put_fraction(o, t->usec, fsp);
}

void
bl_temporal_to_text(bl_value_kind kind, const bl_temporal *t, int fsp,
					char sep, bl_buf *out)
{
	char	   *o;

	if (BL_UNLIKELY(!bl_buf_reserve(out, 32)))
		return;
	o = temporal_text(out->data + out->len, kind, t, fsp, sep);
	*o = '\0';
	out->len = (size_t) (o - out->data);
}

/* A temporal value as a JSON string, with suffix (may be "") before the
 * closing quote. */
static void
put_temporal_json(bl_buf *out, bl_value_kind kind, const bl_temporal *t, int fsp,
				  const char *suffix, size_t suffix_len)
{
	char	   *o;

	if (BL_UNLIKELY(!bl_buf_reserve(out, 34 + suffix_len)))
		return;
	o = out->data + out->len;
	*o++ = '"';
	o = temporal_text(o, kind, t, fsp, 'T');
	memcpy(o, suffix, suffix_len);
	o += suffix_len;
	*o++ = '"';
	*o = '\0';
	out->len = (size_t) (o - out->data);
}

void
bl_timestamp_to_temporal(int64_t sec, uint32_t usec, bl_temporal *t)
{
	int64_t		days = sec / 86400;
	int64_t		rem = sec % 86400;
	int64_t		z,
				era,
				doe,
				yoe,
				doy,
				mp,
				y;

	memset(t, 0, sizeof(*t));
	if (sec == 0 && usec == 0)
		return;					/* MySQL's zero timestamp */
	if (rem < 0)
	{
		rem += 86400;
		days--;
	}
	/* days since 1970-01-01 to a proleptic Gregorian date */
	z = days + 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	y = yoe + era * 400;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	t->day = (uint8_t) (doy - (153 * mp + 2) / 5 + 1);
	t->month = (uint8_t) (mp < 10 ? mp + 3 : mp - 9);
	t->year = (uint32_t) (y + (t->month <= 2));
	t->hour = (uint32_t) (rem / 3600);
	t->minute = (uint8_t) ((rem / 60) % 60);
	t->second = (uint8_t) (rem % 60);
	t->usec = usec;
}

/*
 * Shortest decimal form that reads back as the same float / double, in
 * printf's %g style (what "%.*g" with the least precision of at least 6 /
 * 15 digits that reads back would print).
 */
static void
put_float(bl_buf *b, double d, bool single)
{
	if (!isfinite(d))
	{
		bl_buf_puts(b, isnan(d) ? "\"NaN\"" : (d > 0 ? "\"Infinity\"" : "\"-Infinity\""));
		return;
	}
	/* formatted in place: no copy of a small text through memcpy() */
	if (BL_UNLIKELY(!bl_buf_reserve(b, BL_SHORTEST_TEXT_MAX)))
		return;
	b->len += bl_shortest_text_g(d, single, b->data + b->len);
	b->data[b->len] = '\0';
}

static bool
valid_utf8(const uint8_t *s, size_t len)
{
	size_t		i = 0;

	while (i < len)
	{
		uint8_t		c = s[i];
		int			n;
		uint32_t	cp;

		if (c < 0x80)
		{
			i++;
			continue;
		}
		if ((c & 0xe0) == 0xc0)
			n = 1, cp = c & 0x1f;
		else if ((c & 0xf0) == 0xe0)
			n = 2, cp = c & 0x0f;
		else if ((c & 0xf8) == 0xf0)
			n = 3, cp = c & 0x07;
		else
			return false;
		if (i + (size_t) n >= len)
			return false;
		for (int k = 1; k <= n; k++)
		{
			if ((s[i + (size_t) k] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (s[i + (size_t) k] & 0x3f);
		}
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) ||
			(n == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
			(cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += (size_t) n + 1;
	}
	return true;
}

static int
put_string(const bl_column *col, const uint8_t *p, size_t len, bl_buf *out,
		   bl_error *err)
{
	if (col->charset == NULL)
	{
		/* charset unknown (no metadata, no schema): UTF-8 if it is, else hex */
		if (!valid_utf8(p, len))
		{
			bl_buf_putc(out, '"');
			bl_buf_put_hex_json(out, p, len);
			bl_buf_putc(out, '"');
			return 0;
		}
		bl_buf_putc(out, '"');
		bl_json_escape_utf8(p, len, out);
		bl_buf_putc(out, '"');
		return 0;
	}
	bl_buf_putc(out, '"');
	if (bl_charset_to_json_string(col->charset, p, len, out, err) != 0)
		return -1;
	bl_buf_putc(out, '"');
	return 0;
}

/* GEOMETRY: "\\x<hex of EWKB>" (bl_geometry.h) */
static int
put_geometry(const uint8_t *p, size_t len, bl_buf *out, bl_error *err)
{
	uint8_t		hdr[BL_EWKB_HEADER_MAX];
	size_t		hdrlen,
				rest;

	if (bl_geometry_ewkb_parts(p, len, hdr, &hdrlen, &rest, err) != 0)
		return -1;
	bl_buf_putc(out, '"');
	bl_buf_put_hex_json(out, hdr, hdrlen);
	put_hex_digits(out, p + rest, len - rest);
	bl_buf_putc(out, '"');
	return 0;
}

static void
put_member(const bl_column *col, uint64_t index, bl_buf *out, bl_error *err)
{
	const bl_str *s = &col->values[index];

	bl_buf_putc(out, '"');
	if (col->charset && !bl_charset_is_binary(col->charset))
		(void) bl_charset_to_json_string(col->charset, (const uint8_t *) s->ptr,
										 s->len, out, err);
	else
		bl_json_escape_utf8((const uint8_t *) s->ptr, s->len, out);
	bl_buf_putc(out, '"');
}

int
bl_value_to_json(const bl_column *col, const bl_value *v,
				 const bl_value *before, bl_buf *out, bl_error *err)
{
	switch ((bl_value_kind) v->kind)
	{
		case BL_VAL_ABSENT:
		case BL_VAL_NULL:
			bl_buf_append(out, "null", 4);
			return 0;
		case BL_VAL_INT:
			bl_buf_put_i64(out, v->v.i);
			return 0;
		case BL_VAL_UINT:
			bl_buf_put_u64(out, v->v.u);
			return 0;
		case BL_VAL_YEAR:
			bl_buf_put_i64(out, v->v.i);
			return 0;
		case BL_VAL_FLOAT:
			put_float(out, v->v.f, true);
			return 0;
		case BL_VAL_DOUBLE:
			put_float(out, v->v.d, false);
			return 0;
		case BL_VAL_DECIMAL:
			if (bl_decimal_to_text(v->v.raw.ptr, v->v.raw.len, col->precision,
								   col->scale, out) != 0)
				return bl_error_set(err, BL_ERR_CORRUPT, "malformed DECIMAL value");
			return 0;
		case BL_VAL_STRING:
			return put_string(col, v->v.raw.ptr, v->v.raw.len, out, err);
		case BL_VAL_BINARY:
			bl_buf_putc(out, '"');
			bl_buf_put_hex_json(out, v->v.raw.ptr, v->v.raw.len);
			bl_buf_putc(out, '"');
			return 0;
		case BL_VAL_GEOMETRY:
			return put_geometry(v->v.raw.ptr, v->v.raw.len, out, err);
		case BL_VAL_BIT:
			{
				char		bits[65];
				int			n = col->bits ? col->bits : 64;

				for (int i = 0; i < n; i++)
					bits[i] = (v->v.u >> (n - 1 - i)) & 1 ? '1' : '0';
				bl_buf_putc(out, '"');
				bl_buf_append(out, bits, (size_t) n);
				bl_buf_putc(out, '"');
				return 0;
			}
		case BL_VAL_DATE:
		case BL_VAL_DATETIME:
		case BL_VAL_TIME:
			put_temporal_json(out, (bl_value_kind) v->kind, &v->v.tm, col->fsp, "", 0);
			return 0;
		case BL_VAL_TIMESTAMP:
			{
				bl_temporal t;

				bl_timestamp_to_temporal(v->v.ts.sec, v->v.ts.usec, &t);
				put_temporal_json(out, BL_VAL_DATETIME, &t, col->fsp, "+00:00", 6);
				return 0;
			}
		case BL_VAL_ENUM:
			if (v->v.u == 0)
				bl_buf_append(out, "\"\"", 2);
			else if (v->v.u <= col->n_values)
				put_member(col, v->v.u - 1, out, err);
			else
				bl_buf_put_u64(out, v->v.u);
			return 0;
		case BL_VAL_SET:
			if (col->n_values == 0)
			{
				bl_buf_put_u64(out, v->v.u);
				return 0;
			}
			bl_buf_putc(out, '[');
			{
				bool		first = true;

				for (uint32_t i = 0; i < 64; i++)
				{
					if (!((v->v.u >> i) & 1))
						continue;
					if (!first)
						bl_buf_putc(out, ',');
					first = false;
					if (i < col->n_values)
						put_member(col, i, out, err);
					else
						bl_buf_put_u64(out, UINT64_C(1) << i);
				}
			}
			bl_buf_putc(out, ']');
			return 0;
		case BL_VAL_JSON:
			if (v->v.raw.len == 0)
			{
				bl_buf_append(out, "null", 4);
				return 0;
			}
			return bl_json_binary_to_text(v->v.raw.ptr, v->v.raw.len, out, err);
		case BL_VAL_JSON_DIFF:
			if (before && before->kind == BL_VAL_JSON && before->v.raw.len > 0)
				return bl_json_apply_diff(before->v.raw.ptr, before->v.raw.len,
										  v->v.raw.ptr, v->v.raw.len, out, err);
			bl_buf_append(out, "{\"$json_diff\":", 14);
			if (bl_json_diff_to_text(v->v.raw.ptr, v->v.raw.len, out, err) != 0)
				return -1;
			bl_buf_putc(out, '}');
			return 0;
		case BL_VAL_VECTOR:
			bl_buf_putc(out, '[');
			for (uint32_t i = 0; i + 4 <= v->v.raw.len; i += 4)
			{
				uint32_t	bits = (uint32_t) bl_load_le(v->v.raw.ptr + i, 4);
				float		f;

				memcpy(&f, &bits, 4);
				if (i)
					bl_buf_putc(out, ',');
				put_float(out, f, true);
			}
			bl_buf_putc(out, ']');
			return 0;
	}
	return bl_error_set(err, BL_ERR_CORRUPT, "unknown value kind %d", v->kind);
}

void
bl_column_key_json(const bl_table *t, uint32_t i, bl_buf *out)
{
	const bl_column *col = &t->cols[i];

	if (col->name_plain)
	{
		uint32_t	n = col->name.len;
		char	   *o;

		if (BL_UNLIKELY(!bl_buf_reserve(out, (size_t) n + 2)))
			return;
		o = out->data + out->len;
		*o++ = '"';
		for (uint32_t k = 0; k < n; k++)
			o[k] = col->name.ptr[k];
		o += n;
		*o++ = '"';
		*o = '\0';
		out->len = (size_t) (o - out->data);
		return;
	}
	bl_buf_putc(out, '"');
	if (col->name.ptr)
		bl_json_escape_utf8((const uint8_t *) col->name.ptr, col->name.len, out);
	else
	{
		bl_buf_putc(out, '@');
		bl_buf_put_u64(out, i + 1);
	}
	bl_buf_putc(out, '"');
}

int
bl_row_to_json(const bl_table *t, const bl_row *row, const bl_row *before,
			   bl_buf *out, bl_error *err)
{
	bool		first = true;

	bl_buf_putc(out, '{');
	for (uint32_t i = 0; i < row->ncols; i++)
	{
		const bl_value *v = &row->values[i];
		const bl_column *col = &t->cols[i];

		if (v->kind == BL_VAL_ABSENT)
			continue;
		if (BL_LIKELY(col->name_plain && bl_buf_reserve(out, (size_t) col->name.len + 4)))
		{
			/* ,"name": in one go */
			uint32_t	n = col->name.len;
			char	   *o = out->data + out->len;

			*o = ',';
			o += !first;
			*o++ = '"';
			for (uint32_t k = 0; k < n; k++)
				o[k] = col->name.ptr[k];
			o += n;
			*o++ = '"';
			*o++ = ':';
			*o = '\0';
			out->len = (size_t) (o - out->data);
		}
		else
		{
			if (!first)
				bl_buf_putc(out, ',');
			bl_column_key_json(t, i, out);
			bl_buf_putc(out, ':');
		}
		first = false;
		if (bl_value_to_json(&t->cols[i], v,
							 before && before->ncols > i ? &before->values[i] : NULL,
							 out, err) != 0)
			return -1;
	}
	bl_buf_putc(out, '}');
	return 0;
}
