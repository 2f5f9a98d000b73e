/*
 * test_value_text.c
 *	  Unit tests of the text formatting of values: integers, temporal values
 *	  (bl_temporal_to_text) and binary DECIMALs (bl_decimal_to_text).
 *
 * The formatters write digits two at a time into reserved memory
 * (bl_digits.h).  Each is checked against a plain reference written here
 * the simple way (one digit at a time, one append at a time: the
 * project's earlier implementation), on random values including corrupt
 * ones (fields beyond their range, digit groups that are not decimal,
 * every precision and scale), so that the output stays byte for byte what
 * it was.  Known values are checked too.
 *
 * Run: make check-unit (ASan + UBSan).
 */
#include "bl_decimal.h"
#include "bl_test.h"
#include "bl_value_text.h"

#include <inttypes.h>

static uint64_t rng_state = UINT64_C(0x853C49E6748FEA9B);

static uint64_t
rng64(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static uint32_t
rng(void)
{
	return (uint32_t) (rng64() >> 32);
}

/* ---------- references ---------- */

static void
ref_padded(bl_buf *b, uint32_t v, int digits)
{
	char		tmp[12];

	for (int i = digits - 1; i >= 0; i--)
	{
		tmp[i] = (char) ('0' + v % 10);
		v /= 10;
	}
	bl_buf_append(b, tmp, (size_t) digits);
}

static void
ref_fraction(bl_buf *b, uint32_t usec, int fsp)
{
	static const uint32_t div[7] = {1000000, 100000, 10000, 1000, 100, 10, 1};

	if (fsp <= 0)
		return;
	if (fsp > 6)
		fsp = 6;
	bl_buf_putc(b, '.');
	ref_padded(b, usec / div[fsp], fsp);
}

static void
ref_temporal(bl_value_kind kind, const bl_temporal *t, int fsp, char sep, bl_buf *out)
{
	char		tmp[24];

	if (kind == BL_VAL_TIME)
	{
		if (t->neg)
			bl_buf_putc(out, '-');
		if (t->hour < 100)
			ref_padded(out, t->hour, 2);
		else
		{
			snprintf(tmp, sizeof(tmp), "%" PRIu32, t->hour);
			bl_buf_puts(out, tmp);
		}
		bl_buf_putc(out, ':');
		ref_padded(out, t->minute, 2);
		bl_buf_putc(out, ':');
		ref_padded(out, t->second, 2);
		ref_fraction(out, t->usec, fsp);
		return;
	}
	ref_padded(out, t->year, 4);
	bl_buf_putc(out, '-');
	ref_padded(out, t->month, 2);
	bl_buf_putc(out, '-');
	ref_padded(out, t->day, 2);
	if (kind == BL_VAL_DATE)
		return;
	bl_buf_putc(out, sep);
	ref_padded(out, t->hour, 2);
	bl_buf_putc(out, ':');
	ref_padded(out, t->minute, 2);
	bl_buf_putc(out, ':');
	ref_padded(out, t->second, 2);
	ref_fraction(out, t->usec, fsp);
}

static const int dig2bytes[10] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 4};

static void
ref_digits(char *p, uint32_t v, int digits)
{
	for (int i = digits - 1; i >= 0; i--)
	{
		p[i] = (char) ('0' + v % 10);
		v /= 10;
	}
}

static uint32_t
ref_be(const uint8_t *p, int n)
{
	uint32_t	v = 0;

	for (int i = 0; i < n; i++)
		v = (v << 8) | p[i];
	return v;
}

/* MySQL's binary DECIMAL to text, one digit at a time; -1 if malformed. */
static int
ref_decimal(const uint8_t *data, size_t len, int precision, int scale, bl_buf *out)
{
	int			intg = precision - scale;
	uint8_t		buf[40];
	char		digits[80];
	char		text[160];
	int			nd = 0,
				first = 0,
				n = 0;
	const uint8_t *p = buf;
	bool		neg,
				zero = true;

	if (precision < 1 || precision > 65 || scale < 0 || scale > precision ||
		len != (size_t) bl_decimal_binary_size(precision, scale))
		return -1;
	memcpy(buf, data, len);
	neg = !(buf[0] & 0x80);
	buf[0] ^= 0x80;
	for (size_t i = 0; i < len; i++)
		buf[i] ^= neg ? 0xff : 0x00;
	if (intg % 9)
	{
		uint32_t	v = ref_be(p, dig2bytes[intg % 9]);

		if (v >= 1000000000u)
			return -1;
		ref_digits(digits + nd, v, intg % 9);
		nd += intg % 9;
		p += dig2bytes[intg % 9];
	}
	for (int g = 0; g < intg / 9; g++, p += 4)
	{
		uint32_t	v = ref_be(p, 4);

		if (v > 999999999u)
			return -1;
		ref_digits(digits + nd, v, 9);
		nd += 9;
	}
	while (first < nd - 1 && digits[first] == '0')
		first++;
	if (nd == 0)
		text[n++] = '0';
	for (int i = first; i < nd; i++)
		text[n++] = digits[i];
	if (scale > 0)
	{
		text[n++] = '.';
		for (int g = 0; g < scale / 9; g++, p += 4)
		{
			uint32_t	v = ref_be(p, 4);

			if (v > 999999999u)
				return -1;
			ref_digits(text + n, v, 9);
			n += 9;
		}
		if (scale % 9)
		{
			uint32_t	v = ref_be(p, dig2bytes[scale % 9]);

			if (v >= 1000000000u)
				return -1;
			ref_digits(text + n, v, scale % 9);
			n += scale % 9;
		}
	}
	for (int i = 0; i < n; i++)
		if (text[i] >= '1' && text[i] <= '9')
			zero = false;
	if (neg && !zero)
		bl_buf_putc(out, '-');
	bl_buf_append(out, text, (size_t) n);
	return 0;
}

/* ---------- tests ---------- */

static void
test_integers(void)
{
	char		want[32];
	bl_buf		b;

	BL_TEST_BEGIN("integers");
	bl_buf_init(&b);
	for (int iter = 0; iter < 200000 && !bl_test_case_failed; iter++)
	{
		uint64_t	v = rng64() >> (rng() % 64);
		int64_t		s = (int64_t) (rng64() >> (rng() % 64)) * (rng() % 2 ? 1 : -1);

		if (iter < 1000)
			v = (uint64_t) iter;
		bl_buf_reset(&b);
		bl_buf_puts(&b, "x");
		bl_buf_put_u64(&b, v);
		snprintf(want, sizeof(want), "x%" PRIu64, v);
		if (strcmp(b.data, want) != 0)
			BL_FAIL("u64 %s: got %s", want, b.data);
		bl_buf_reset(&b);
		bl_buf_put_i64(&b, s);
		snprintf(want, sizeof(want), "%" PRId64, s);
		if (strcmp(b.data, want) != 0 || b.len != strlen(want))
			BL_FAIL("i64 %s: got %s", want, b.data);
	}
	bl_buf_reset(&b);
	bl_buf_put_u64(&b, UINT64_MAX);
	BL_CHECK_STR(b.data, "18446744073709551615");
	bl_buf_reset(&b);
	bl_buf_put_i64(&b, INT64_MIN);
	BL_CHECK_STR(b.data, "-9223372036854775808");
	bl_buf_free(&b);
	BL_TEST_END();
}

static void
test_temporal(void)
{
	static const bl_value_kind kinds[] = {BL_VAL_DATE, BL_VAL_DATETIME, BL_VAL_TIME};
	bl_buf		got,
				want;

	BL_TEST_BEGIN("temporal values");
	bl_buf_init(&got);
	bl_buf_init(&want);
	for (int iter = 0; iter < 300000 && !bl_test_case_failed; iter++)
	{
		bl_temporal t;
		bl_value_kind kind = kinds[rng() % 3];
		int			fsp = (int) (rng() % 10) - 1;
		char		sep = rng() % 2 ? 'T' : ' ';
		bool		wild = rng() % 4 == 0;	/* corrupt fields too */

		memset(&t, 0, sizeof(t));
		t.year = wild ? rng() % 20000 : rng() % 10000;
		t.month = (uint8_t) (wild ? rng() : rng() % 13);
		t.day = (uint8_t) (wild ? rng() : rng() % 32);
		t.hour = wild ? rng() >> (rng() % 32) : rng() % (kind == BL_VAL_TIME ? 839 : 24);
		t.minute = (uint8_t) (wild ? rng() : rng() % 60);
		t.second = (uint8_t) (wild ? rng() : rng() % 60);
		t.usec = wild ? rng() % 2000000 : rng() % 1000000;
		t.neg = kind == BL_VAL_TIME && rng() % 2;
		bl_buf_reset(&got);
		bl_buf_reset(&want);
		bl_buf_puts(&got, "<");
		bl_buf_puts(&want, "<");
		bl_temporal_to_text(kind, &t, fsp, sep, &got);
		ref_temporal(kind, &t, fsp, sep, &want);
		if (got.len != want.len || strcmp(got.data, want.data) != 0)
			BL_FAIL("kind %d fsp %d: got %s, want %s", kind, fsp, got.data, want.data);
	}
	{
		bl_temporal t = {.year = 2024, .month = 2, .day = 29, .hour = 3, .minute = 4,
		.second = 5, .usec = 123456};

		bl_buf_reset(&got);
		bl_temporal_to_text(BL_VAL_DATETIME, &t, 3, 'T', &got);
		BL_CHECK_STR(got.data, "2024-02-29T03:04:05.123");
		t.hour = 838;
		t.neg = true;
		bl_buf_reset(&got);
		bl_temporal_to_text(BL_VAL_TIME, &t, 6, 'T', &got);
		BL_CHECK_STR(got.data, "-838:04:05.123456");
	}
	bl_buf_free(&got);
	bl_buf_free(&want);
	BL_TEST_END();
}

/* Encode a decimal text of the given precision and scale (test helper). */
static size_t
encode_decimal(const char *digits_int, const char *digits_frac, bool neg,
			   int precision, int scale, uint8_t *out)
{
	int			intg = precision - scale;
	char		ip[80],
				fp[80];
	size_t		n = 0;
	int			pos = 0;

	/* left-pad the integer digits to intg, right-pad the fraction to scale */
	snprintf(ip, sizeof(ip), "%0*d%s", intg - (int) strlen(digits_int), 0, digits_int);
	if ((int) strlen(digits_int) == intg)
		snprintf(ip, sizeof(ip), "%s", digits_int);
	snprintf(fp, sizeof(fp), "%s%0*d", digits_frac, scale - (int) strlen(digits_frac), 0);
	if ((int) strlen(digits_frac) == scale)
		snprintf(fp, sizeof(fp), "%s", digits_frac);
	/* integer part: leading partial group, then groups of 9 */
	for (int g = -1; g < intg / 9; g++)
	{
		int			nd = g < 0 ? intg % 9 : 9;
		uint32_t	v = 0;
		int			nb = g < 0 ? dig2bytes[intg % 9] : 4;

		for (int i = 0; i < nd; i++)
			v = v * 10 + (uint32_t) (ip[pos++] - '0');
		for (int i = nb - 1; i >= 0; i--)
			out[n++] = (uint8_t) (v >> (8 * i));
	}
	pos = 0;
	for (int g = 0; g <= scale / 9; g++)
	{
		int			nd = g < scale / 9 ? 9 : scale % 9;
		uint32_t	v = 0;
		int			nb = g < scale / 9 ? 4 : dig2bytes[scale % 9];

		for (int i = 0; i < nd; i++)
			v = v * 10 + (uint32_t) (fp[pos++] - '0');
		for (int i = nb - 1; i >= 0; i--)
			out[n++] = (uint8_t) (v >> (8 * i));
	}
	out[0] ^= 0x80;
	if (neg)
		for (size_t i = 0; i < n; i++)
			out[i] ^= 0xff;
	return n;
}

static void
check_decimal(const char *i, const char *f, bool neg, int p, int s, const char *want)
{
	uint8_t		bin[40];
	size_t		n = encode_decimal(i, f, neg, p, s, bin);
	bl_buf		b;

	bl_buf_init(&b);
	if (bl_decimal_to_text(bin, n, p, s, &b) != 0)
		BL_FAIL("DECIMAL(%d,%d) %s.%s failed", p, s, i, f);
	else if (strcmp(b.data, want) != 0)
		BL_FAIL("DECIMAL(%d,%d): got %s, want %s", p, s, b.data, want);
	bl_buf_free(&b);
}

static void
test_decimal(void)
{
	bl_buf		got,
				want;

	BL_TEST_BEGIN("DECIMAL values");
	check_decimal("12345", "67", false, 12, 2, "12345.67");
	check_decimal("12345", "67", true, 12, 2, "-12345.67");
	check_decimal("0", "00", true, 12, 2, "0.00");	/* negative zero */
	check_decimal("0", "5", false, 1, 1, "0.5");
	check_decimal("0", "", false, 1, 0, "0");
	check_decimal("1234567890123456789", "", false, 19, 0, "1234567890123456789");
	check_decimal("9", "123456789012345678901234567890", true, 31, 30,
				  "-9.123456789012345678901234567890");
	check_decimal("", "05", false, 2, 2, "0.05");

	bl_buf_init(&got);
	bl_buf_init(&want);
	/* random bytes, every precision and scale: valid and malformed alike */
	for (int iter = 0; iter < 300000 && !bl_test_case_failed; iter++)
	{
		int			p = 1 + (int) (rng() % 65);
		int			s = (int) (rng() % (p < 30 ? p + 1 : 31));
		int			size = bl_decimal_binary_size(p, s);
		uint8_t    *bin = malloc((size_t) size);
		int			rg,
					rw;

		if (iter % 2 == 0)
		{
			/* a valid value: random digits, often with leading zeros */
			char		ip[80],
						fp[80];
			int			ni = p - s > 0 ? (int) (rng() % (uint32_t) (p - s + 1)) : 0;
			uint8_t		enc[40];

			for (int i = 0; i < ni; i++)
				ip[i] = (char) ('0' + (rng() % 3 ? rng() % 10 : 0));
			ip[ni] = '\0';
			for (int i = 0; i < s; i++)
				fp[i] = (char) ('0' + (rng() % 3 ? rng() % 10 : 0));
			fp[s] = '\0';
			if (encode_decimal(ip, fp, rng() % 2, p, s, enc) != (size_t) size)
				BL_FAIL("test encoder: wrong size for DECIMAL(%d,%d)", p, s);
			memcpy(bin, enc, (size_t) size);
		}
		else
			for (int i = 0; i < size; i++)
				bin[i] = (uint8_t) rng();
		bl_buf_reset(&got);
		bl_buf_reset(&want);
		bl_buf_puts(&got, "[");
		bl_buf_puts(&want, "[");
		rg = bl_decimal_to_text(bin, (size_t) size, p, s, &got);
		rw = ref_decimal(bin, (size_t) size, p, s, &want);
		if (rg != rw)
			BL_FAIL("DECIMAL(%d,%d): returns %d, reference %d", p, s, rg, rw);
		else if (rg == 0 && (got.len != want.len || strcmp(got.data, want.data) != 0))
			BL_FAIL("DECIMAL(%d,%d): got %s, want %s", p, s, got.data, want.data);
		else if (rg != 0 && strcmp(got.data, "[") != 0)
			BL_FAIL("DECIMAL(%d,%d): failure changed the output", p, s);
		/* wrong lengths and impossible precisions are errors */
		if (bl_decimal_to_text(bin, (size_t) size + 1, p, s, &got) != -1 ||
			bl_decimal_to_text(bin, (size_t) size, p, p + 1, &got) != -1)
			BL_FAIL("DECIMAL(%d,%d): a bad length or scale was accepted", p, s);
		free(bin);
	}
	bl_buf_free(&got);
	bl_buf_free(&want);
	BL_TEST_END();
}

int
main(void)
{
	test_integers();
	test_temporal();
	test_decimal();
	BL_TEST_EXIT();
}
