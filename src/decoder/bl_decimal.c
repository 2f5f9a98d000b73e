/*
 * bl_decimal.c
 *	  MySQL's binary DECIMAL to text, exactly.
 *
 * The format stores the integer and fractional parts as groups of nine
 * decimal digits in 4 big-endian bytes, with a leading (integer part) or
 * trailing (fractional part) partial group of 1-4 bytes for the remaining
 * digits.  The sign is the inverted top bit of the first byte; negative
 * numbers have all their bytes inverted.
 */
#include "bl_decimal.h"
#include "bl_cursor.h"
#include "bl_digits.h"

#include <string.h>

#define DIG_PER_DEC 9

static const int dig2bytes[DIG_PER_DEC + 1] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 4};

int
bl_decimal_binary_size(int precision, int scale)
{
	int			intg = precision - scale;

	return (intg / DIG_PER_DEC) * 4 + dig2bytes[intg % DIG_PER_DEC] +
		(scale / DIG_PER_DEC) * 4 + dig2bytes[scale % DIG_PER_DEC];
}

static const uint32_t pow10_u32[DIG_PER_DEC + 1] = {
	1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000
};

/*
 * Write one group of the integer part: the first group with a non-zero
 * value without leading zeros, the ones after it zero-padded to their
 * width, leading zero groups not at all.
 */
static inline char *
put_int_group(char *o, uint32_t v, int digits, bool *started)
{
	if (*started)
	{
		bl_put_fixed(o, v, digits);
		return o + digits;
	}
	if (v == 0)
		return o;
	*started = true;
	return bl_put_u64_digits(o, v);
}

/*
 * The group of nb (1-4) bytes at p, big-endian, with the format's sign
 * handling undone: the top bit of the value's first byte inverted, and
 * every byte inverted for a negative value (mask all ones).
 */
static inline uint32_t
read_group(const uint8_t *data, const uint8_t *p, int nb, uint32_t mask)
{
	uint32_t	v;

	switch (nb)
	{
		case 1:
			v = p[0];
			break;
		case 2:
			v = (uint32_t) p[0] << 8 | p[1];
			break;
		case 3:
			v = (uint32_t) p[0] << 16 | (uint32_t) p[1] << 8 | p[2];
			break;
		default:
			v = (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | p[3];
			break;
	}
	if (p == data)
		v ^= UINT32_C(0x80) << (8 * (nb - 1));
	return v ^ (mask >> (32 - 8 * nb));
}

int
bl_decimal_to_text(const uint8_t *data, size_t len, int precision, int scale,
				   bl_buf *out)
{
	int			intg = precision - scale;
	int			intg_full = intg / DIG_PER_DEC;
	int			intg_lead = intg % DIG_PER_DEC;
	int			frac_full = scale / DIG_PER_DEC;
	int			frac_tail = scale % DIG_PER_DEC;
	uint32_t	mask;
	bool		neg;
	bool		started = false;
	uint32_t	nonzero = 0;
	const uint8_t *p = data;
	char	   *s;
	char	   *o;

	if (precision < 1 || precision > 65 || scale < 0 || scale > precision ||
		len != (size_t) bl_decimal_binary_size(precision, scale))
		return -1;
	/* sign, digits and point: at most 1 + 65 + 1 characters */
	if (!bl_buf_reserve(out, 80))
		return -1;
	neg = !(data[0] & 0x80);
	mask = neg ? UINT32_MAX : 0;

	s = out->data + out->len;
	o = s;
	if (neg)
		*o++ = '-';				/* taken back below if the value is zero */

	/* integer part: a partial group of intg_lead digits, then full groups */
	if (intg_lead)
	{
		int			nb = dig2bytes[intg_lead];
		uint32_t	v = read_group(data, p, nb, mask);

		if (v >= 1000000000u)
			goto bad;
		v %= pow10_u32[intg_lead];
		nonzero |= v;
		o = put_int_group(o, v, intg_lead, &started);
		p += nb;
	}
	for (int g = 0; g < intg_full; g++)
	{
		uint32_t	v = read_group(data, p, 4, mask);

		if (v > 999999999u)
			goto bad;
		nonzero |= v;
		o = put_int_group(o, v, DIG_PER_DEC, &started);
		p += 4;
	}
	if (!started)
		*o++ = '0';

	if (scale > 0)
	{
		*o++ = '.';
		for (int g = 0; g < frac_full; g++)
		{
			uint32_t	v = read_group(data, p, 4, mask);

			if (v > 999999999u)
				goto bad;
			nonzero |= v;
			bl_put_fixed(o, v, DIG_PER_DEC);
			o += DIG_PER_DEC;
			p += 4;
		}
		if (frac_tail)
		{
			int			nb = dig2bytes[frac_tail];
			uint32_t	v = read_group(data, p, nb, mask);

			if (v >= 1000000000u)
				goto bad;
			v %= pow10_u32[frac_tail];
			nonzero |= v;
			bl_put_fixed(o, v, frac_tail);
			o += frac_tail;
		}
	}
	/* a negative zero is printed without its sign */
	if (neg && nonzero == 0)
	{
		memmove(s, s + 1, (size_t) (o - s - 1));
		o--;
	}
	*o = '\0';
	out->len = (size_t) (o - out->data);
	return 0;

bad:
	/* not a decimal: leave out as it was */
	out->data[out->len] = '\0';
	return -1;
}
