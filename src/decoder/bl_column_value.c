/*
 * bl_column_value.c
 *	  Decoding of row images into bl_values: the NULL bitmap walk and each
 *	  column's value.
 *
 * This is the decoder's hot path: one step per column of every row image,
 * in one function so that the per-column decoding is inlined into the
 * loop.  Each case takes its bytes from the cursor in one bounds-checked
 * step and decodes them without allocating; strings, BLOBs, JSON and
 * DECIMAL stay as pointers into the event (formatting is done on demand
 * by bl_value_text.c).
 */
#include "bl_decoder_int.h"
#include "bl_charset.h"

#include <string.h>

/* TIME2 / DATETIME2 / TIMESTAMP2 fractional part, big-endian, by fsp. */
static inline int
frac_bytes(int fsp)
{
	return (fsp + 1) / 2;
}

static inline int64_t
sign_extend(uint64_t v, int bits)
{
	uint64_t	m = UINT64_C(1) << (bits - 1);

	return (int64_t) ((v ^ m) - m);
}

/* Take a length-prefixed value: the prefix is `lb` bytes little-endian. */
static inline const uint8_t *
take_prefixed(bl_cur *c, int lb, uint32_t *len)
{
	const uint8_t *p = bl_cur_take(c, (size_t) lb);
	uint64_t	n;

	if (p == NULL)
		return NULL;
	n = bl_load_le(p, lb);
	*len = (uint32_t) n;
	return bl_cur_take(c, (size_t) n);
}

static int
decode_time2(const bl_column *col, bl_cur *c, bl_value *out)
{
	int			fb = frac_bytes(col->fsp);
	const uint8_t *p = bl_cur_take(c, (size_t) (3 + fb));
	int64_t		packed;
	int64_t		intpart;
	int64_t		frac;
	uint64_t	hms;
	bl_temporal *t = &out->v.tm;

	if (p == NULL)
		return -1;
	switch (col->fsp)
	{
		case 1:
		case 2:
			intpart = (int64_t) bl_load_be(p, 3) - 0x800000;
			frac = p[3];		/* unsigned: negatives count down from 0x100 */
			if (intpart < 0 && frac != 0)
			{
				intpart++;
				frac -= 0x100;
			}
			packed = intpart * (1 << 24) + frac * 10000;
			break;
		case 3:
		case 4:
			intpart = (int64_t) bl_load_be(p, 3) - 0x800000;
			frac = (int64_t) bl_load_be(p + 3, 2);
			if (intpart < 0 && frac != 0)
			{
				intpart++;
				frac -= 0x10000;
			}
			packed = intpart * (1 << 24) + frac * 100;
			break;
		case 5:
		case 6:
			packed = (int64_t) bl_load_be(p, 6) - INT64_C(0x800000000000);
			break;
		default:
			packed = ((int64_t) bl_load_be(p, 3) - 0x800000) * (1 << 24);
			break;
	}
	memset(t, 0, sizeof(*t));
	if (packed < 0)
	{
		t->neg = true;
		packed = -packed;
	}
	hms = (uint64_t) packed >> 24;
	t->usec = (uint32_t) (packed % (1 << 24));
	t->hour = (uint32_t) ((hms >> 12) % (1 << 10));
	t->minute = (uint8_t) ((hms >> 6) % (1 << 6));
	t->second = (uint8_t) (hms % (1 << 6));
	if (t->usec > 999999)
		return -1;
	out->kind = BL_VAL_TIME;
	return 0;
}

static inline uint32_t
read_frac(const uint8_t *p, int fsp)
{
	switch (fsp)
	{
		case 1:
		case 2:
			return (uint32_t) p[0] * 10000;
		case 3:
		case 4:
			return (uint32_t) bl_load_be(p, 2) * 100;
		case 5:
		case 6:
			return (uint32_t) bl_load_be(p, 3);
		default:
			return 0;
	}
}

static int
decode_datetime2(const bl_column *col, bl_cur *c, bl_value *out)
{
	int			fb = frac_bytes(col->fsp);
	const uint8_t *p = bl_cur_take(c, (size_t) (5 + fb));
	uint64_t	v;
	uint64_t	ymd,
				hms,
				ym;
	bl_temporal *t = &out->v.tm;

	if (p == NULL)
		return -1;
	v = bl_load_be(p, 5);
	if (!(v & UINT64_C(0x8000000000)))
		return -1;				/* DATETIME is never negative */
	v &= UINT64_C(0x7fffffffff);
	ymd = v >> 17;
	hms = v & ((1 << 17) - 1);
	ym = ymd >> 5;
	t->year = (uint32_t) (ym / 13);
	t->month = (uint8_t) (ym % 13);
	t->day = (uint8_t) (ymd & 31);
	t->hour = (uint32_t) (hms >> 12);
	t->minute = (uint8_t) ((hms >> 6) & 63);
	t->second = (uint8_t) (hms & 63);
	t->usec = read_frac(p + 5, col->fsp);
	t->neg = false;
	if (t->usec > 999999)
		return -1;
	out->kind = BL_VAL_DATETIME;
	return 0;
}

/* Decode one non-NULL value; advances c.  Returns 0 or -1. */
static inline int
column_decode(const bl_column *col, bl_cur *c, bl_value *out, bool json_partial)
{
	const uint8_t *p;
	uint32_t	len;

	switch (col->type)
	{
		case BL_T_TINY:
			if ((p = bl_cur_take(c, 1)) == NULL)
				return -1;
			if (col->is_unsigned)
			{
				out->kind = BL_VAL_UINT;
				out->v.u = p[0];
			}
			else
			{
				out->kind = BL_VAL_INT;
				out->v.i = (int8_t) p[0];
			}
			return 0;

		case BL_T_SHORT:
			if ((p = bl_cur_take(c, 2)) == NULL)
				return -1;
			if (col->is_unsigned)
			{
				out->kind = BL_VAL_UINT;
				out->v.u = bl_load_le(p, 2);
			}
			else
			{
				out->kind = BL_VAL_INT;
				out->v.i = (int16_t) bl_load_le(p, 2);
			}
			return 0;

		case BL_T_INT24:
			if ((p = bl_cur_take(c, 3)) == NULL)
				return -1;
			if (col->is_unsigned)
			{
				out->kind = BL_VAL_UINT;
				out->v.u = bl_load_le(p, 3);
			}
			else
			{
				out->kind = BL_VAL_INT;
				out->v.i = sign_extend(bl_load_le(p, 3), 24);
			}
			return 0;

		case BL_T_LONG:
			if ((p = bl_cur_take(c, 4)) == NULL)
				return -1;
			if (col->is_unsigned)
			{
				out->kind = BL_VAL_UINT;
				out->v.u = bl_load_le(p, 4);
			}
			else
			{
				out->kind = BL_VAL_INT;
				out->v.i = (int32_t) bl_load_le(p, 4);
			}
			return 0;

		case BL_T_LONGLONG:
			if ((p = bl_cur_take(c, 8)) == NULL)
				return -1;
			if (col->is_unsigned)
			{
				out->kind = BL_VAL_UINT;
				out->v.u = bl_load_le(p, 8);
			}
			else
			{
				out->kind = BL_VAL_INT;
				out->v.i = (int64_t) bl_load_le(p, 8);
			}
			return 0;

		case BL_T_FLOAT:
			{
				uint32_t	bits;

				if ((p = bl_cur_take(c, 4)) == NULL)
					return -1;
				bits = (uint32_t) bl_load_le(p, 4);
				memcpy(&out->v.f, &bits, 4);
				out->kind = BL_VAL_FLOAT;
				return 0;
			}

		case BL_T_DOUBLE:
			{
				uint64_t	bits;

				if ((p = bl_cur_take(c, 8)) == NULL)
					return -1;
				bits = bl_load_le(p, 8);
				memcpy(&out->v.d, &bits, 8);
				out->kind = BL_VAL_DOUBLE;
				return 0;
			}

		case BL_T_NEWDECIMAL:
			if ((p = bl_cur_take(c, col->pack_length)) == NULL)
				return -1;
			out->kind = BL_VAL_DECIMAL;
			out->v.raw.ptr = p;
			out->v.raw.len = col->pack_length;
			return 0;

		case BL_T_YEAR:
			if ((p = bl_cur_take(c, 1)) == NULL)
				return -1;
			out->kind = BL_VAL_YEAR;
			out->v.i = p[0] ? 1900 + p[0] : 0;
			return 0;

		case BL_T_DATE:
			{
				uint32_t	v;

				if ((p = bl_cur_take(c, 3)) == NULL)
					return -1;
				v = (uint32_t) bl_load_le(p, 3);
				memset(&out->v.tm, 0, sizeof(out->v.tm));
				out->v.tm.day = v & 31;
				out->v.tm.month = (v >> 5) & 15;
				out->v.tm.year = v >> 9;
				out->kind = BL_VAL_DATE;
				return 0;
			}

		case BL_T_TIME:
			{
				int64_t		v;

				if ((p = bl_cur_take(c, 3)) == NULL)
					return -1;
				v = sign_extend(bl_load_le(p, 3), 24);
				memset(&out->v.tm, 0, sizeof(out->v.tm));
				if (v < 0)
				{
					out->v.tm.neg = true;
					v = -v;
				}
				out->v.tm.hour = (uint32_t) (v / 10000);
				out->v.tm.minute = (uint8_t) ((v / 100) % 100);
				out->v.tm.second = (uint8_t) (v % 100);
				out->kind = BL_VAL_TIME;
				return 0;
			}

		case BL_T_DATETIME:
			{
				uint64_t	v;

				if ((p = bl_cur_take(c, 8)) == NULL)
					return -1;
				v = bl_load_le(p, 8);
				memset(&out->v.tm, 0, sizeof(out->v.tm));
				out->v.tm.second = (uint8_t) (v % 100);
				v /= 100;
				out->v.tm.minute = (uint8_t) (v % 100);
				v /= 100;
				out->v.tm.hour = (uint32_t) (v % 100);
				v /= 100;
				out->v.tm.day = (uint8_t) (v % 100);
				v /= 100;
				out->v.tm.month = (uint8_t) (v % 100);
				v /= 100;
				out->v.tm.year = (uint32_t) (v % 10000);
				out->kind = BL_VAL_DATETIME;
				return 0;
			}

		case BL_T_TIMESTAMP:
			if ((p = bl_cur_take(c, 4)) == NULL)
				return -1;
			out->kind = BL_VAL_TIMESTAMP;
			out->v.ts.sec = (int64_t) bl_load_le(p, 4);
			out->v.ts.usec = 0;
			return 0;

		case BL_T_TIMESTAMP2:
			if ((p = bl_cur_take(c, (size_t) (4 + frac_bytes(col->fsp)))) == NULL)
				return -1;
			out->kind = BL_VAL_TIMESTAMP;
			out->v.ts.sec = (int64_t) bl_load_be(p, 4);
			out->v.ts.usec = read_frac(p + 4, col->fsp);
			return out->v.ts.usec > 999999 ? -1 : 0;

		case BL_T_DATETIME2:
			return decode_datetime2(col, c, out);

		case BL_T_TIME2:
			return decode_time2(col, c, out);

		case BL_T_VARCHAR:
		case BL_T_VAR_STRING:
		case BL_T_STRING:
			if ((p = take_prefixed(c, col->length_bytes, &len)) == NULL)
				return -1;
			out->kind = col->binary ? BL_VAL_BINARY : BL_VAL_STRING;
			out->v.raw.ptr = p;
			out->v.raw.len = len;
			return 0;

		case BL_T_BLOB:
		case BL_T_TINY_BLOB:
		case BL_T_MEDIUM_BLOB:
		case BL_T_LONG_BLOB:
			if ((p = take_prefixed(c, col->length_bytes, &len)) == NULL)
				return -1;
			out->kind = col->binary ? BL_VAL_BINARY : BL_VAL_STRING;
			out->v.raw.ptr = p;
			out->v.raw.len = len;
			return 0;

		case BL_T_JSON:
			if ((p = take_prefixed(c, col->length_bytes, &len)) == NULL)
				return -1;
			out->kind = json_partial ? BL_VAL_JSON_DIFF : BL_VAL_JSON;
			out->v.raw.ptr = p;
			out->v.raw.len = len;
			return 0;

		case BL_T_GEOMETRY:
			if ((p = take_prefixed(c, col->length_bytes, &len)) == NULL)
				return -1;
			out->kind = BL_VAL_GEOMETRY;
			out->v.raw.ptr = p;
			out->v.raw.len = len;
			return 0;

		case BL_T_VECTOR:
			if ((p = take_prefixed(c, col->length_bytes, &len)) == NULL)
				return -1;
			if (len % 4 != 0)
				return -1;
			out->kind = BL_VAL_VECTOR;
			out->v.raw.ptr = p;
			out->v.raw.len = len;
			return 0;

		case BL_T_ENUM:
			if ((p = bl_cur_take(c, col->pack_length)) == NULL)
				return -1;
			out->kind = BL_VAL_ENUM;
			out->v.u = bl_load_le(p, col->pack_length);
			return 0;

		case BL_T_SET:
			if ((p = bl_cur_take(c, col->pack_length)) == NULL)
				return -1;
			out->kind = BL_VAL_SET;
			out->v.u = bl_load_le(p, col->pack_length);
			return 0;

		case BL_T_BIT:
			if ((p = bl_cur_take(c, col->pack_length)) == NULL)
				return -1;
			out->kind = BL_VAL_BIT;
			out->v.u = bl_load_be(p, col->pack_length);
			return 0;

		case BL_T_NULL:
			out->kind = BL_VAL_NULL;
			return 0;

		default:
			return -1;
	}
}

static inline bool
bit_set(const uint8_t *bits, uint32_t i)
{
	return (bits[i >> 3] >> (i & 7)) & 1;
}

int
bl_image_decode(const bl_table *t, const uint8_t *present, uint32_t npresent,
				bl_cur *c, bl_value *values, const uint8_t *partial_bits,
				uint32_t *bad)
{
	const uint8_t *nulls = bl_cur_take(c, (npresent + 7) / 8);
	uint32_t	ncols = t->ncols;
	uint32_t	k = 0;
	bool		all = npresent == ncols;

	if (nulls == NULL)
	{
		*bad = UINT32_MAX;
		return -1;
	}
	for (uint32_t i = 0; i < ncols; i++)
	{
		const bl_column *col = &t->cols[i];
		bl_value   *v = &values[i];

		if (!all && !bit_set(present, i))
		{
			v->kind = BL_VAL_ABSENT;
			continue;
		}
		if (bit_set(nulls, k++))
		{
			v->kind = BL_VAL_NULL;
			continue;
		}
		if (BL_UNLIKELY(column_decode(col, c, v,
									  partial_bits && col->json_ordinal >= 0 &&
									  bit_set(partial_bits, (uint32_t) col->json_ordinal)) != 0))
		{
			*bad = i;
			return -1;
		}
	}
	return 0;
}

int
bl_image_spans(const bl_table *t, const uint8_t *present, uint32_t npresent,
			   bl_cur *c, const uint8_t *partial_bits, bl_span *spans, uint32_t *bad)
{
	const uint8_t *nulls = bl_cur_take(c, (npresent + 7) / 8);
	uint32_t	ncols = t->ncols;
	uint32_t	k = 0;
	bool		all = npresent == ncols;
	bl_value	v;

	if (nulls == NULL)
	{
		*bad = UINT32_MAX;
		return -1;
	}
	for (uint32_t i = 0; i < ncols; i++)
	{
		const bl_column *col = &t->cols[i];

		spans[i].ptr = NULL;
		spans[i].len = 0;
		if (!all && !bit_set(present, i))
		{
			spans[i].kind = BL_VAL_ABSENT;
			continue;
		}
		if (bit_set(nulls, k++))
		{
			spans[i].kind = BL_VAL_NULL;
			continue;
		}
		spans[i].ptr = c->pos;
		if (column_decode(col, c, &v,
						  partial_bits && col->json_ordinal >= 0 &&
						  bit_set(partial_bits, (uint32_t) col->json_ordinal)) != 0)
		{
			*bad = i;
			return -1;
		}
		spans[i].kind = v.kind;
		spans[i].len = (size_t) (c->pos - spans[i].ptr);
	}
	return 0;
}
