/*
 * bl_digits.h
 *	  Decimal digits two at a time: the pair table and the small writers
 *	  that the text forms of integers, temporal values and DECIMALs share.
 *
 * The writers store through a plain pointer into memory the caller has
 * reserved; they never allocate, check nothing and write no NUL.
 */
#ifndef BL_DIGITS_H
#define BL_DIGITS_H

#include "bl_common.h"

/* "00" "01" ... "99" */
static const char bl_digit_pairs[201] =
"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
"8081828384858687888990919293949596979899";

/* The two digits of v (< 100) at o; returns o + 2. */
static inline char *
bl_put2(char *o, uint32_t v)
{
	memcpy(o, bl_digit_pairs + 2 * v, 2);
	return o + 2;
}

/* Number of decimal digits of v (1 for 0). */
static inline int
bl_u64_ndigits(uint64_t v)
{
	int			n = 1;

	for (;;)
	{
		if (v < 10)
			return n;
		if (v < 100)
			return n + 1;
		if (v < 1000)
			return n + 2;
		if (v < 10000)
			return n + 3;
		v /= 10000;
		n += 4;
	}
}

/* The last `digits` decimal digits of v, zero-padded, at o[0..digits). */
static inline void
bl_put_fixed(char *o, uint64_t v, int digits)
{
	while (digits >= 2)
	{
		digits -= 2;
		memcpy(o + digits, bl_digit_pairs + 2 * (v % 100), 2);
		v /= 100;
	}
	if (digits)
		o[0] = (char) ('0' + v % 10);
}

/* All the digits of v at o; returns the end. */
static inline char *
bl_put_u64_digits(char *o, uint64_t v)
{
	int			n = bl_u64_ndigits(v);

	bl_put_fixed(o, v, n);
	return o + n;
}

#endif							/* BL_DIGITS_H */
