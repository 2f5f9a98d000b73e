/*
 * test_float_text.c
 *	  Unit tests of bl_float_text: shortest round-trip digits of doubles
 *	  and floats (PostgreSQL's Ryu, plus the upper-bound ties it leaves
 *	  out) and their %g-style text, as binlogcat and get_json() print
 *	  FLOAT and DOUBLE columns and VECTOR elements.
 *
 * - edge cases with their exact text: zeros, 1e23 (exactly halfway between
 *   two doubles: Ryu alone says 9.999999999999999e+22), subnormals down to
 *   5e-324, DBL_MAX, DBL_MIN, exponent switches of %.15g, float limits;
 * - a large random set (random bit patterns, short decimals, integers,
 *   halfway cases D x 10^q): every text reads back as the same value
 *   (strtod / strtof, bit for bit, -0 included), is valid JSON number
 *   syntax, has no shorter form that reads back (the correctly rounded
 *   form with one digit less and its two neighbours), and equals what the
 *   former put_float() printed (%.*g at 15, 16, 17 / 6..9 digits, the first
 *   that read back) whenever that was as short;
 * - the values through bl_value_to_json (FLOAT, DOUBLE columns).
 *
 * Run: make check-unit (ASan + UBSan).
 */
#include "bl_float_text.h"
#include "bl_test.h"
#include "bl_value_text.h"

#include <float.h>
#include <math.h>
#include <stdint.h>

static uint64_t rng_state = UINT64_C(0x9E3779B97F4A7C15);

static uint64_t
rng64(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void
fmt_double(double d, char *out)
{
	bl_shortest s;
	size_t		n;

	bl_shortest_double(d, &s);
	n = bl_shortest_format_g(&s, 15, out);
	out[n] = '\0';
}

static void
fmt_float(float f, char *out)
{
	bl_shortest s;
	size_t		n;

	bl_shortest_float(f, &s);
	n = bl_shortest_format_g(&s, 6, out);
	out[n] = '\0';
}

/* the former put_float(): first %.*g that reads back */
static void
old_format(double d, bool single, char *out)
{
	for (int prec = single ? 6 : 15; prec <= (single ? 9 : 17); prec++)
	{
		snprintf(out, 40, "%.*g", prec, d);
		if (single ? strtof(out, NULL) == (float) d : strtod(out, NULL) == d)
			break;
	}
}

static bool
same_double(double a, double b)
{
	return memcmp(&a, &b, sizeof(a)) == 0;
}

static bool
same_float(float a, float b)
{
	return memcmp(&a, &b, sizeof(a)) == 0;
}

/* JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool
json_number(const char *s)
{
	if (*s == '-')
		s++;
	if (*s == '0')
		s++;
	else if (*s >= '1' && *s <= '9')
		while (*s >= '0' && *s <= '9')
			s++;
	else
		return false;
	if (*s == '.')
	{
		s++;
		if (!(*s >= '0' && *s <= '9'))
			return false;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	if (*s == 'e' || *s == 'E')
	{
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (!(*s >= '0' && *s <= '9'))
			return false;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	return *s == '\0';
}

/* significant digits of a %g / %e text */
static int
sig_digits(const char *s)
{
	int			n = 0,
				zeros = 0;
	bool		started = false;

	for (; *s && *s != 'e'; s++)
	{
		if (*s < '0' || *s > '9')
			continue;
		if (*s == '0' && !started)
			continue;
		started = true;
		if (*s == '0')
			zeros++;
		else
		{
			n += zeros + 1;
			zeros = 0;
		}
	}
	return n ? n : 1;
}

/*
 * Whether some decimal of `ndig` significant digits reads back as d: the
 * correctly rounded one and the neighbours one unit away in its last digit.
 */
static bool
shorter_reads_back(double d, bool single, int ndig)
{
	char		buf[64];
	char	   *e;
	long long	mant;
	int			exp10;
	bool		neg = d < 0;

	if (ndig < 1)
		return false;
	snprintf(buf, sizeof(buf), "%.*e", ndig - 1, fabs(d));
	/* "d.ddde+XX" -> integer mantissa and exponent */
	mant = 0;
	for (e = buf; *e && *e != 'e'; e++)
		if (*e >= '0' && *e <= '9')
			mant = mant * 10 + (*e - '0');
	exp10 = atoi(e + 1) - (ndig - 1);
	for (int k = -1; k <= 1; k++)
	{
		snprintf(buf, sizeof(buf), "%s%llde%d", neg ? "-" : "", mant + k, exp10);
		if (single ? same_float(strtof(buf, NULL), (float) d) : same_double(strtod(buf, NULL), d))
			return true;
	}
	return false;
}

static int	shorter_than_before;

static void
check_double(double d)
{
	char		got[64],
				old[64];

	fmt_double(d, got);
	{
		char		fast[BL_SHORTEST_TEXT_MAX + 1];
		size_t		n = bl_shortest_text_g(d, false, fast);

		fast[n] = '\0';
		if (strcmp(fast, got) != 0)
			BL_FAIL("%.17g: bl_shortest_text_g gives %s, digits and format %s", d, fast, got);
	}
	if (!same_double(strtod(got, NULL), d))
		BL_FAIL("%.17g printed as %s, which reads back as %.17g", d, got, strtod(got, NULL));
	else if (!json_number(got))
		BL_FAIL("%.17g printed as %s: not a JSON number", d, got);
	else if (d != 0 && shorter_reads_back(d, false, sig_digits(got) - 1))
		BL_FAIL("%.17g printed as %s, but %d digits read back", d, got, sig_digits(got) - 1);
	else
	{
		old_format(d, false, old);
		if (strcmp(got, old) != 0)
		{
			if (sig_digits(got) >= sig_digits(old))
				BL_FAIL("%.17g printed as %s, before %s", d, got, old);
			else
				shorter_than_before++;
		}
	}
}

static void
check_float(float f)
{
	char		got[64],
				old[64];

	fmt_float(f, got);
	{
		char		fast[BL_SHORTEST_TEXT_MAX + 1];
		size_t		n = bl_shortest_text_g(f, true, fast);

		fast[n] = '\0';
		if (strcmp(fast, got) != 0)
			BL_FAIL("float %.9g: bl_shortest_text_g gives %s, digits and format %s", f, fast, got);
	}
	if (!same_float(strtof(got, NULL), f))
		BL_FAIL("float %.9g printed as %s, which reads back as %.9g", f, got, strtof(got, NULL));
	else if (!json_number(got))
		BL_FAIL("float %.9g printed as %s: not a JSON number", f, got);
	else if (f != 0 && shorter_reads_back(f, true, sig_digits(got) - 1))
		BL_FAIL("float %.9g printed as %s, but %d digits read back", f, got, sig_digits(got) - 1);
	else
	{
		old_format(f, true, old);
		if (strcmp(got, old) != 0)
		{
			if (sig_digits(got) >= sig_digits(old))
				BL_FAIL("float %.9g printed as %s, before %s", f, got, old);
			else
				shorter_than_before++;
		}
	}
}

static void
test_edge_cases(void)
{
	static const struct
	{
		double		d;
		const char *text;
	}			dcases[] = {
		{0.0, "0"}, {-0.0, "-0"}, {1.0, "1"}, {-1.5, "-1.5"}, {0.1, "0.1"},
		{0.1 + 0.2, "0.30000000000000004"}, {1.0 / 3.0, "0.3333333333333333"},
		{100.0, "100"}, {1e14, "100000000000000"}, {1e15, "1e+15"},
		{123456789012345.0, "123456789012345"},
		{1234567890123456.0, "1234567890123456"},
		{12345678901234567.0, "12345678901234568"},
		{123456789012345680.0, "1.2345678901234568e+17"},
		{1e23, "1e+23"}, {-1e23, "-1e+23"}, {9e22, "9e+22"}, {1e22, "1e+22"},
		{8.41e21, "8.41e+21"}, {5e-324, "5e-324"}, {-5e-324, "-5e-324"},
		{1e-323, "1e-323"}, {2.2250738585072009e-308, "2.225073858507201e-308"},
		{DBL_MIN, "2.2250738585072014e-308"}, {DBL_MAX, "1.7976931348623157e+308"},
		{-DBL_MAX, "-1.7976931348623157e+308"}, {1e-5, "1e-05"}, {1.5e-5, "1.5e-05"},
		{0.0001, "0.0001"}, {0.00012345, "0.00012345"}, {1e100, "1e+100"},
		{1e-100, "1e-100"}, {9007199254740993.0, "9007199254740992"},
		{18014398509481984.0, "18014398509481984"}, {1e308, "1e+308"},
		{4.35, "4.35"}, {2.5e-7, "2.5e-07"},
	};
	static const struct
	{
		float		f;
		const char *text;
	}			fcases[] = {
		{0.0f, "0"}, {-0.0f, "-0"}, {0.1f, "0.1"}, {1.0f / 3.0f, "0.33333334"},
		{FLT_MAX, "3.4028235e+38"}, {FLT_MIN, "1.1754944e-38"}, {1e-45f, "1e-45"},
		{16777216.0f, "16777216"}, {16777218.0f, "16777218"}, {1e10f, "1e+10"},
		{123456.7f, "123456.7"}, {1234567.0f, "1234567"}, {3.14159265f, "3.1415927"},
		{8.589973e9f, "8.589974e+09"}, {1e-5f, "1e-05"},
	};
	char		got[64];

	BL_TEST_BEGIN("shortest text of edge-case doubles and floats");
	for (size_t i = 0; i < sizeof(dcases) / sizeof(dcases[0]); i++)
	{
		fmt_double(dcases[i].d, got);
		BL_CHECK_STR(got, dcases[i].text);
		check_double(dcases[i].d);
	}
	for (size_t i = 0; i < sizeof(fcases) / sizeof(fcases[0]); i++)
	{
		fmt_float(fcases[i].f, got);
		BL_CHECK_STR(got, fcases[i].text);
		check_float(fcases[i].f);
	}
	/* every power of two and its neighbours (asymmetric intervals), and
	 * every power of ten and its neighbours */
	for (int e = -1074; e <= 1023 && !bl_test_case_failed; e++)
	{
		double		p = ldexp(1.0, e);

		check_double(p);
		check_double(nextafter(p, 0));
		check_double(nextafter(p, INFINITY));
	}
	for (int e = -149; e <= 127 && !bl_test_case_failed; e++)
	{
		float		p = ldexpf(1.0f, e);

		check_float(p);
		check_float(nextafterf(p, 0));
		check_float(nextafterf(p, INFINITY));
	}
	for (int e = -323; e <= 308 && !bl_test_case_failed; e++)
	{
		char		lit[16];
		double		p;

		snprintf(lit, sizeof(lit), "1e%d", e);
		p = strtod(lit, NULL);
		check_double(p);
		check_double(nextafter(p, 0));
		check_double(nextafter(p, INFINITY));
		if (e >= -45 && e <= 38)
			check_float(strtof(lit, NULL));
	}
	BL_TEST_END();
}

static void
test_random(void)
{
	char		lit[64];
	int			n = 0;

	BL_TEST_BEGIN("random doubles and floats round-trip, shortest");
	shorter_than_before = 0;
	for (int i = 0; i < 300000 && !bl_test_case_failed; i++)
	{
		uint64_t	r = rng64();
		double		d;
		float		f;
		uint32_t	fb = (uint32_t) (r >> 32);

		switch (i % 6)
		{
			case 0:				/* any bit pattern */
			case 1:
				memcpy(&d, &r, sizeof(d));
				break;
			case 2:				/* a short decimal */
				snprintf(lit, sizeof(lit), "%lld.%02d", (long long) (r % 2000000) - 1000000,
						 (int) ((r >> 32) % 100));
				d = strtod(lit, NULL);
				break;
			case 3:				/* D x 10^q: halfway cases among them */
				snprintf(lit, sizeof(lit), "%de%d", (int) (r % 100000),
						 (int) ((r >> 40) % 60) - 10);
				d = strtod(lit, NULL);
				break;
			case 4:				/* an integer, or near a fixed/exponent boundary */
				if (r & 1)
					d = (double) (int64_t) (r >> (r & 63));
				else
				{
					static const double edges[] = {1e-5, 1e-4, 1e6, 1e14, 1e15, 1e16,
					4503599627370496.0, 8388608.0, 16777216.0};

					d = edges[(r >> 8) % 9] * (1 + ((double) ((int) ((r >> 16) % 2001) - 1000)) * 1e-12);
					if (r & 2)
						d = nextafter(edges[(r >> 8) % 9], (r & 4) ? 0 : INFINITY);
					if (r & 8)
						d = -d;
				}
				break;
			default:			/* random digits at a random exponent */
				snprintf(lit, sizeof(lit), "%.*e", (int) (r % 17), ldexp((double) (r >> 11), -53));
				d = strtod(lit, NULL) * pow(10, (double) ((int) ((r >> 20) % 600) - 300));
				break;
		}
		if (isfinite(d))
		{
			check_double(d);
			n++;
		}
		memcpy(&f, &fb, sizeof(f));
		if (i % 3 == 1)
			f = (float) d;
		if (isfinite(f))
			check_float(f);
	}
	printf("# %d doubles and as many floats; %d printed shorter than before (halfway cases)\n",
		   n, shorter_than_before);
	BL_TEST_END();
}

static void
check_json(const bl_column *col, const bl_value *v, const char *want)
{
	bl_buf		out;
	bl_error	err;

	bl_buf_init(&out);
	memset(&err, 0, sizeof(err));
	if (bl_value_to_json(col, v, NULL, &out, &err) != 0)
		BL_FAIL("bl_value_to_json: %s", err.message);
	else
		BL_CHECK_STR(out.data, want);
	bl_buf_free(&out);
}

static void
test_value_to_json(void)
{
	bl_column	col;
	bl_value	v;

	BL_TEST_BEGIN("FLOAT and DOUBLE columns as JSON");
	memset(&col, 0, sizeof(col));
	memset(&v, 0, sizeof(v));
	col.type = BL_T_DOUBLE;
	v.kind = BL_VAL_DOUBLE;
	v.v.d = 1e23;
	check_json(&col, &v, "1e+23");
	v.v.d = -0.0;
	check_json(&col, &v, "-0");
	v.v.d = 5e-324;
	check_json(&col, &v, "5e-324");
	v.v.d = 0.1 + 0.2;
	check_json(&col, &v, "0.30000000000000004");
	v.v.d = NAN;
	check_json(&col, &v, "\"NaN\"");
	v.v.d = -INFINITY;
	check_json(&col, &v, "\"-Infinity\"");
	col.type = BL_T_FLOAT;
	v.kind = BL_VAL_FLOAT;
	v.v.f = 0.1f;
	check_json(&col, &v, "0.1");
	v.v.f = FLT_MAX;
	check_json(&col, &v, "3.4028235e+38");
	v.v.f = 1e-45f;
	check_json(&col, &v, "1e-45");
	BL_TEST_END();
}

int
main(void)
{
	test_edge_cases();
	test_random();
	test_value_to_json();
	BL_TEST_EXIT();
}
