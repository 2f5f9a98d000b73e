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

/* Write v as exactly `digits` characters, zero-padded, at p. */
static inline void
put_digits(char *p, uint32_t v, int digits)
{
	for (int i = digits - 1; i >= 0; i--)
	{
		p[i] = (char) ('0' + v % 10);
		v /= 10;
	}
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
	uint8_t		buf[40];
	uint8_t		mask;
	bool		neg;
	char		digits[80];		/* integer digits, at most 65 */
	int			nd = 0;
	const uint8_t *p = buf;
	char	   *o;
	int			first;

	if (precision < 1 || precision > 65 || scale < 0 || scale > precision ||
		len != (size_t) bl_decimal_binary_size(precision, scale) || len > sizeof(buf))
		return -1;
	memcpy(buf, data, len);
	neg = !(buf[0] & 0x80);
	mask = neg ? 0xff : 0x00;
	buf[0] ^= 0x80;
	for (size_t i = 0; i < len; i++)
		buf[i] ^= mask;

	/* integer part */
	if (intg_lead)
	{
		int			nb = dig2bytes[intg_lead];
		uint32_t	v = (uint32_t) bl_load_be(p, nb);

		if (v >= 1000000000u)
			return -1;
		put_digits(digits + nd, v, intg_lead);
		nd += intg_lead;
		p += nb;
	}
	for (int g = 0; g < intg_full; g++)
	{
		uint32_t	v = (uint32_t) bl_load_be(p, 4);

		if (v > 999999999u)
			return -1;
		put_digits(digits + nd, v, DIG_PER_DEC);
		nd += DIG_PER_DEC;
		p += 4;
	}
	first = 0;
	while (first < nd - 1 && digits[first] == '0')
		first++;

	if (!bl_buf_reserve(out, (size_t) (nd - first) + (size_t) scale + 5))
		return -1;
	o = out->data + out->len;
	if (nd == 0)
	{
		*o++ = '0';
	}
	else
	{
		memcpy(o, digits + first, (size_t) (nd - first));
		o += nd - first;
	}
	/* a negative zero is printed without its sign */
	if (scale > 0)
	{
		*o++ = '.';
		for (int g = 0; g < frac_full; g++)
		{
			uint32_t	v = (uint32_t) bl_load_be(p, 4);

			if (v > 999999999u)
				return -1;
			put_digits(o, v, DIG_PER_DEC);
			o += DIG_PER_DEC;
			p += 4;
		}
		if (frac_tail)
		{
			int			nb = dig2bytes[frac_tail];
			uint32_t	v = (uint32_t) bl_load_be(p, nb);

			if (v >= 1000000000u)
				return -1;
			put_digits(o, v, frac_tail);
			o += frac_tail;
		}
	}
	if (neg)
	{
		bool		zero = true;
		char	   *s = out->data + out->len;

		for (char *q = s; q < o; q++)
			if (*q >= '1' && *q <= '9')
				zero = false;
		if (!zero)
		{
			memmove(s + 1, s, (size_t) (o - s));
			*s = '-';
			o++;
		}
	}
	out->len = (size_t) (o - out->data);
	out->data[out->len] = '\0';
	return 0;
}
