/*
 * bl_float_text.h
 *	  The shortest decimal digits that read back as the same double or
 *	  float, and their %g-style text.
 *
 * The digits come from PostgreSQL's Ryu (double_to_shortest_decimal_bufn
 * and float_to_shortest_decimal_bufn of libpgcommon, which the server
 * exports and binlogcat, the unit tests and the fuzzers link statically):
 * one pass, no trial printing and re-reading.  Ryu leaves out the upper
 * bound of a value's rounding interval; when that bound is itself a
 * shorter decimal (1e23: exactly halfway between two doubles, and read
 * back as the even one) the shorter form is taken, so the result is the
 * shortest form that round-trips, the one strtod()/strtof() read back.
 */
#ifndef BL_FLOAT_TEXT_H
#define BL_FLOAT_TEXT_H

#include "bl_common.h"

typedef struct bl_shortest
{
	char		digits[20];		/* significant digits, no trailing zeros;
								 * "0" for zero */
	int			ndig;
	int			exp10;			/* value = d.ddd x 10^exp10 */
	bool		neg;
} bl_shortest;

/* The shortest digits of a finite d (or f). */
extern void bl_shortest_double(double d, bl_shortest *s);
extern void bl_shortest_float(float f, bl_shortest *s);

/*
 * s as printf("%.*g", P, value) prints it, P = max(s->ndig, min_prec):
 * fixed notation for -4 <= exp10 < P, else d.ddde+XX.  Writes at most
 * BL_SHORTEST_TEXT_MAX bytes (no NUL) to buf; returns the length.
 */
#define BL_SHORTEST_TEXT_MAX 32
extern size_t bl_shortest_format_g(const bl_shortest *s, int min_prec, char *buf);

/*
 * The same text of a finite d: bl_shortest_format_g(min_prec 15) of
 * bl_shortest_double(d), or with single of bl_shortest_float((float) d)
 * and min_prec 6, at most BL_SHORTEST_TEXT_MAX bytes.  Faster: when Ryu's
 * own text is in fixed notation (10^-4 <= |d| < 10^15, resp. 10^6) it is
 * already that text, and the rounding bounds cannot give a shorter form
 * there, so it is taken as it is.
 */
extern size_t bl_shortest_text_g(double d, bool single, char *buf);

#endif							/* BL_FLOAT_TEXT_H */
