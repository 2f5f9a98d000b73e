/*
 * bl_float_text.c
 *	  Shortest round-trip digits of doubles and floats (PostgreSQL's Ryu)
 *	  and their %g-style text.  See bl_float_text.h.
 */
#include "bl_float_text.h"

#include <string.h>

/*
 * PostgreSQL's src/common/shortest_dec.h: the decoder includes no
 * PostgreSQL header, so the two functions are declared here, the one
 * place that calls them.  They write at most 24 (double) / 15 (float)
 * characters, no NUL, and return the length.
 */
extern int	double_to_shortest_decimal_bufn(double f, char *result);
extern int	float_to_shortest_decimal_bufn(float f, char *result);

/* Ryu's text ("-1.25e+17", "0.0001", "123.5", "-0") as digits and exponent. */
static void
parse_ryu(const char *p, int len, bl_shortest *s)
{
	const char *end = p + len;
	int			point = -1;		/* digits before the '.', if any */
	int			lead = 0;		/* leading zeros skipped */
	int			seen = 0;		/* digits read, leading zeros included */
	int			e = 0;

	s->ndig = 0;
	s->neg = (p < end && *p == '-');
	if (s->neg)
		p++;
	for (; p < end && *p != 'e'; p++)
	{
		if (*p == '.')
		{
			point = seen;
			continue;
		}
		seen++;
		if (s->ndig == 0 && *p == '0')
		{
			lead++;
			continue;
		}
		if (s->ndig < (int) sizeof(s->digits))
			s->digits[s->ndig++] = *p;
	}
	if (point < 0)
		point = seen;
	if (p < end && *p == 'e')
	{
		bool		eneg = false;

		p++;
		if (p < end && (*p == '+' || *p == '-'))
			eneg = (*p++ == '-');
		for (; p < end; p++)
			e = e * 10 + (*p - '0');
		if (eneg)
			e = -e;
	}
	while (s->ndig > 1 && s->digits[s->ndig - 1] == '0')
		s->ndig--;
	if (s->ndig == 0)
	{
		s->digits[0] = '0';
		s->ndig = 1;
		s->exp10 = 0;
		return;
	}
	/* the first significant digit is digit number `lead` of the text */
	s->exp10 = e + point - lead - 1;
}

/*
 * The cases Ryu misses: PostgreSQL's Ryu leaves both bounds of a value's
 * rounding interval out, but strtod() reads a bound (the midpoint to the
 * next value up or down) back as the value when the value's mantissa is
 * even (ties go to even).  When such a midpoint t * 2^k (t odd) is a
 * decimal with fewer digits than Ryu's, it is the shortest form (1e23,
 * 4.658535866321694e+16).  For k < 0 the midpoint has -k binary places,
 * as many decimal places ending in 5: t * 5^-k has at least 17 digits for
 * a normal value's t (>= 2^53, resp. 2^24) and far more for a subnormal,
 * never fewer than Ryu's, so only k >= 0 is looked at.
 */
static void
midpoint_if_shorter(uint64_t t, int k, bl_shortest *s)
{
	int			q5 = 0;
	int			q;
	int			x;
	uint64_t	d;
	char		tmp[24];
	int			n = 0;

	if (k < 0)
		return;
	while (t % 5 == 0)
	{
		t /= 5;
		q5++;
	}
	/* t * 5^q5 * 2^k = (t * 5^(q5 - q) * 2^(k - q)) * 10^q */
	q = q5 < k ? q5 : k;
	x = k - q;
	for (int i = q; i < q5; i++)
	{
		if (t > UINT64_MAX / 5)
			return;
		t *= 5;
	}
	if (x > 63 || (x > 0 && t > (UINT64_MAX >> x)))
		return;
	d = t << x;
	while (d > 0)
	{
		tmp[n++] = (char) ('0' + d % 10);
		d /= 10;
	}
	if (n >= s->ndig)
		return;					/* not shorter: Ryu's (closer) digits stay */
	s->ndig = n;
	for (int i = 0; i < n; i++)
		s->digits[i] = tmp[n - 1 - i];
	s->exp10 = n - 1 + q;
}

/*
 * The two midpoints of value m2 * 2^e2 (m2 with its hidden bit at
 * mant_bits; m2 even, else neither reads back as the value): up, and down
 * (into the binade below when m2 is its lowest mantissa).
 */
static void
bounds_if_shorter(uint64_t m2, int e2, int mant_bits, bool lowest_binade, bl_shortest *s)
{
	if ((m2 & 1) != 0)
		return;
	if (m2 == (UINT64_C(1) << mant_bits) && !lowest_binade)
		midpoint_if_shorter(4 * m2 - 1, e2 - 2, s);
	else
		midpoint_if_shorter(2 * m2 - 1, e2 - 1, s);
	midpoint_if_shorter(2 * m2 + 1, e2 - 1, s);
}

void
bl_shortest_double(double d, bl_shortest *s)
{
	char		buf[32];
	int			len = double_to_shortest_decimal_bufn(d, buf);
	uint64_t	bits;
	int			be;

	parse_ryu(buf, len, s);
	memcpy(&bits, &d, sizeof(bits));
	be = (int) ((bits >> 52) & 0x7ff);
	if (be != 0 && be != 0x7ff)
		bounds_if_shorter((bits & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1) << 52),
						  be - 1075, 52, be == 1, s);
}

void
bl_shortest_float(float f, bl_shortest *s)
{
	char		buf[32];
	int			len = float_to_shortest_decimal_bufn(f, buf);
	uint32_t	bits;
	int			be;

	parse_ryu(buf, len, s);
	memcpy(&bits, &f, sizeof(bits));
	be = (int) ((bits >> 23) & 0xff);
	if (be != 0 && be != 0xff)
		bounds_if_shorter((bits & ((UINT32_C(1) << 23) - 1)) | (UINT32_C(1) << 23),
						  be - 150, 23, be == 1, s);
}

size_t
bl_shortest_format_g(const bl_shortest *s, int min_prec, char *buf)
{
	int			prec = s->ndig > min_prec ? s->ndig : min_prec;
	int			x = s->exp10;
	size_t		n = 0;

	if (s->neg)
		buf[n++] = '-';
	if (x < -4 || x >= prec)
	{
		int			ax = x < 0 ? -x : x;

		buf[n++] = s->digits[0];
		if (s->ndig > 1)
		{
			buf[n++] = '.';
			for (int i = 1; i < s->ndig; i++)
				buf[n++] = s->digits[i];
		}
		buf[n++] = 'e';
		buf[n++] = x < 0 ? '-' : '+';
		if (ax >= 100)
			buf[n++] = (char) ('0' + ax / 100);
		buf[n++] = (char) ('0' + ax / 10 % 10);
		buf[n++] = (char) ('0' + ax % 10);
	}
	else if (x < 0)
	{
		buf[n++] = '0';
		buf[n++] = '.';
		for (int i = x; i < -1; i++)
			buf[n++] = '0';
		for (int i = 0; i < s->ndig; i++)
			buf[n++] = s->digits[i];
	}
	else
	{
		for (int i = 0; i <= x; i++)
			buf[n++] = i < s->ndig ? s->digits[i] : '0';
		if (s->ndig > x + 1)
		{
			buf[n++] = '.';
			for (int i = x + 1; i < s->ndig; i++)
				buf[n++] = s->digits[i];
		}
	}
	return n;
}

size_t
bl_shortest_text_g(double d, bool single, char *buf)
{
	bl_shortest s;
	int			len;
	double		a = d < 0 ? -d : d;

	/*
	 * Ryu prints fixed notation for decimal exponents -4 .. 14 (float: ..
	 * 5), as %g does for them at least at precision 15 (6), with the same
	 * digits; there the value is below 2^52 (2^23), where the rounding
	 * interval's bounds have binary places and so more digits than Ryu's
	 * (midpoint_if_shorter).  Anything else, 'e' in the text, goes the
	 * long way.  test_float_text checks the two ways agree.
	 */
	if (single)
		len = float_to_shortest_decimal_bufn((float) d, buf);
	else
		len = double_to_shortest_decimal_bufn(d, buf);
	/* Ryu's exponent is 'e', a sign and 1 to 3 digits: the end of its text */
	if (a < (single ? 8388608.0 : 4503599627370496.0) &&
		!(len >= 3 && (buf[len - 3] == 'e' || (len >= 4 && buf[len - 4] == 'e') ||
					   (len >= 5 && buf[len - 5] == 'e'))))
		return (size_t) len;
	parse_ryu(buf, len, &s);
	if (single)
	{
		float		f = (float) d;
		uint32_t	bits;
		int			be;

		memcpy(&bits, &f, sizeof(bits));
		be = (int) ((bits >> 23) & 0xff);
		if (be != 0 && be != 0xff)
			bounds_if_shorter((bits & ((UINT32_C(1) << 23) - 1)) | (UINT32_C(1) << 23),
							  be - 150, 23, be == 1, &s);
	}
	else
	{
		uint64_t	bits;
		int			be;

		memcpy(&bits, &d, sizeof(bits));
		be = (int) ((bits >> 52) & 0x7ff);
		if (be != 0 && be != 0x7ff)
			bounds_if_shorter((bits & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1) << 52),
							  be - 1075, 52, be == 1, &s);
	}
	return bl_shortest_format_g(&s, single ? 6 : 15, buf);
}
