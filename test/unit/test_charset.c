/*
 * test_charset.c
 *	  Unit tests of bl_charset: collation ids, charset names, conversion of
 *	  every charset to UTF-8 and JSON string escaping.
 *
 * Expected values were checked against MariaDB 10.11 (CONVERT(... USING
 * utf8mb4)).  Inputs are copied into heap blocks of their exact size, so
 * that AddressSanitizer catches any read past the end.
 *
 * Build: gcc -std=gnu99 -O2 -Wall -Wextra -Werror -Isrc/decoder \
 *		  test/unit/test_charset.c src/decoder/bl_charset.c src/decoder/bl_buf.c
 */
#include "bl_charset.h"
#include "bl_test.h"

static const char *const all_charsets[] = {
	"armscii8", "ascii", "big5", "binary", "cp1250", "cp1251", "cp1256",
	"cp1257", "cp850", "cp852", "cp866", "cp932", "dec8", "eucjpms", "euckr",
	"gb18030", "gb2312", "gbk", "geostd8", "greek", "hebrew", "hp8",
	"keybcs2", "koi8r", "koi8u", "latin1", "latin2", "latin5", "latin7",
	"macce", "macroman", "sjis", "swe7", "tis620", "ucs2", "ujis", "utf16",
	"utf16le", "utf32", "utf8mb3", "utf8mb4"
};

#define NCHARSETS	(sizeof(all_charsets) / sizeof(all_charsets[0]))

/* ---------- helpers ---------- */

static uint64_t rng_state = UINT64_C(0x9E3779B97F4A7C15);

static uint32_t
rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t) (rng_state >> 32);
}

/* Decode a hex string into a heap block of exactly the right size. */
static uint8_t *
unhex(const char *hex, size_t *len)
{
	size_t		n = strlen(hex) / 2;
	uint8_t    *p = malloc(n ? n : 1);
	size_t		i;

	for (i = 0; i < n; i++)
	{
		unsigned int v;

		sscanf(hex + 2 * i, "%2x", &v);
		p[i] = (uint8_t) v;
	}
	*len = n;
	return p;
}

static char hexbuf[65536];

static const char *
tohex(const char *data, size_t len)
{
	size_t		i;

	if (len * 2 + 1 > sizeof(hexbuf))
		return "(too long)";
	for (i = 0; i < len; i++)
		snprintf(hexbuf + 2 * i, 3, "%02X", (uint8_t) data[i]);
	hexbuf[2 * len] = '\0';
	return hexbuf;
}

/* Convert hex input from charset csname; returns the output as hex. */
static const char *
conv_hex(const char *csname, const char *in_hex, bool json)
{
	const bl_charset *cs = bl_charset_by_name(csname);
	bl_buf		out;
	bl_error	err;
	size_t		len;
	uint8_t    *in = unhex(in_hex, &len);
	int			rc;

	bl_buf_init(&out);
	if (json)
		rc = bl_charset_to_json_string(cs, in, len, &out, &err);
	else
		rc = bl_charset_to_utf8(cs, in, len, &out, &err);
	free(in);
	if (rc != 0)
	{
		bl_buf_free(&out);
		return "(error)";
	}
	tohex(out.data, out.len);
	bl_buf_free(&out);
	return hexbuf;
}

/* JSON-escape raw bytes (as UTF-8) and return the result as a C string. */
static char strbuf[65536];

static const char *
json_of(const char *csname, const void *in, size_t len)
{
	const bl_charset *cs = csname ? bl_charset_by_name(csname) : NULL;
	uint8_t    *copy = malloc(len ? len : 1);
	bl_buf		out;
	bl_error	err;

	memcpy(copy, in, len);
	bl_buf_init(&out);
	if (cs)
	{
		if (bl_charset_to_json_string(cs, copy, len, &out, &err) != 0)
			snprintf(strbuf, sizeof(strbuf), "(error)");
		else
			snprintf(strbuf, sizeof(strbuf), "%s", out.data);
	}
	else
	{
		bl_json_escape_utf8(copy, len, &out);
		snprintf(strbuf, sizeof(strbuf), "%s", out.data ? out.data : "(null)");
	}
	free(copy);
	bl_buf_free(&out);
	return strbuf;
}

/*
 * Strict UTF-8 check, written independently of the module: no overlongs,
 * no surrogates, nothing above U+10FFFF.  Calls cb for each code point.
 */
static bool
utf8_valid(const uint8_t *s, size_t len, bool (*cb) (uint32_t cp, void *arg), void *arg)
{
	size_t		i = 0;

	while (i < len)
	{
		uint32_t	cp;
		size_t		n,
					k;

		if (s[i] < 0x80)
		{
			cp = s[i];
			n = 1;
		}
		else if ((s[i] & 0xE0) == 0xC0)
		{
			cp = s[i] & 0x1F;
			n = 2;
		}
		else if ((s[i] & 0xF0) == 0xE0)
		{
			cp = s[i] & 0x0F;
			n = 3;
		}
		else if ((s[i] & 0xF8) == 0xF0)
		{
			cp = s[i] & 0x07;
			n = 4;
		}
		else
			return false;
		if (len - i < n)
			return false;
		for (k = 1; k < n; k++)
		{
			if ((s[i + k] & 0xC0) != 0x80)
				return false;
			cp = (cp << 6) | (s[i + k] & 0x3F);
		}
		if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) ||
			(n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
			(cp >= 0xD800 && cp <= 0xDFFF))
			return false;
		if (cb && !cb(cp, arg))
			return false;
		i += n;
	}
	return true;
}

/* State of the JSON string body check, fed one code point at a time. */
typedef struct json_check
{
	int			state;			/* 0 normal, 1 after '\', 2-5 in \uXXXX */
} json_check;

static bool
json_cp(uint32_t cp, void *arg)
{
	json_check *jc = arg;

	switch (jc->state)
	{
		case 0:
			if (cp < 0x20 || cp == '"' || cp == 0x2028 || cp == 0x2029)
				return false;
			if (cp == '\\')
				jc->state = 1;
			return true;
		case 1:
			if (cp == 'u')
				jc->state = 2;
			else if (cp && strchr("\"\\/bfnrt", (int) cp))
				jc->state = 0;
			else
				return false;
			return true;
		default:
			if (!(cp < 0x80 && strchr("0123456789abcdefABCDEF", (int) cp)))
				return false;
			jc->state = jc->state == 5 ? 0 : jc->state + 1;
			return true;
	}
}

/* True if s[0..len) is a valid, complete JSON string body in UTF-8. */
static bool
json_body_valid(const char *s, size_t len)
{
	json_check	jc = {0};

	return utf8_valid((const uint8_t *) s, len, json_cp, &jc) && jc.state == 0;
}

/*
 * Reference JSON escaping, byte by byte and without shortcuts, used to
 * check the fast path.  Assumes valid UTF-8 input.
 */
static void
json_reference(const uint8_t *in, size_t len, bl_buf *out)
{
	size_t		i;

	for (i = 0; i < len; i++)
	{
		uint8_t		c = in[i];

		if (c == '"')
			bl_buf_puts(out, "\\\"");
		else if (c == '\\')
			bl_buf_puts(out, "\\\\");
		else if (c == '\n')
			bl_buf_puts(out, "\\n");
		else if (c == '\t')
			bl_buf_puts(out, "\\t");
		else if (c == '\r')
			bl_buf_puts(out, "\\r");
		else if (c == '\b')
			bl_buf_puts(out, "\\b");
		else if (c == '\f')
			bl_buf_puts(out, "\\f");
		else if (c < 0x20)
			bl_buf_printf(out, "\\u%04x", c);
		else if (c == 0xE2 && i + 2 < len && in[i + 1] == 0x80 &&
				 (in[i + 2] == 0xA8 || in[i + 2] == 0xA9))
		{
			bl_buf_puts(out, in[i + 2] == 0xA8 ? "\\u2028" : "\\u2029");
			i += 2;
		}
		else
			bl_buf_putc(out, (char) c);
	}
}

/* Random text: mostly ASCII, with specials, multi-byte and bad bytes. */
static size_t
random_text(uint8_t *buf, size_t max, bool valid_utf8)
{
	static const char *const pieces[] = {
		"\"", "\\", "\n", "\t", "\x01", "\x1f", "\xc3\xa9", "\xe2\x82\xac",
		"\xf0\x9f\x98\x80", "\xe2\x80\xa8", "\xe2\x80\xa9", "\xe2\x80\xa7",
		"\x7f", "\xdf\xbf", "\xef\xbf\xbf", "\xf4\x8f\xbf\xbf"
	};
	static const char *const bad[] = {
		"\xff", "\xc0\xaf", "\xed\xa0\x80", "\xe2\x82", "\xf4\x90\x80\x80",
		"\x80", "\xf0\x9f\x98"
	};
	size_t		n = 0;
	size_t		target = rng() % max;

	while (n < target)
	{
		uint32_t	r = rng() % 100;
		const char *p = NULL;
		size_t		k;

		if (r < 80)
		{
			/* a run of plain ASCII */
			size_t		run = 1 + rng() % 24;

			for (k = 0; k < run && n < max; k++)
				buf[n++] = (uint8_t) (0x20 + rng() % 0x5F);
			continue;
		}
		if (r < 95 || valid_utf8)
			p = pieces[rng() % (sizeof(pieces) / sizeof(pieces[0]))];
		else
			p = bad[rng() % (sizeof(bad) / sizeof(bad[0]))];
		k = strlen(p);
		if (n + k > max)
			break;
		memcpy(buf + n, p, k);
		n += k;
	}
	return n;
}

/* ---------- test cases ---------- */

static void
test_collations(void)
{
	static const struct
	{
		uint32_t	id;
		const char *cs;
	}			cases[] = {
		{1, "big5"}, {8, "latin1"}, {5, "latin1"}, {47, "latin1"},
		{33, "utf8mb3"}, {83, "utf8mb3"}, {76, "utf8mb3"}, {192, "utf8mb3"},
		{45, "utf8mb4"}, {46, "utf8mb4"}, {224, "utf8mb4"}, {255, "utf8mb4"},
		{245, "utf8mb4"}, {309, "utf8mb4"}, {323, "utf8mb4"},
		{63, "binary"}, {28, "gbk"}, {87, "gbk"}, {24, "gb2312"},
		{248, "gb18030"}, {250, "gb18030"}, {35, "ucs2"}, {159, "ucs2"},
		{54, "utf16"}, {56, "utf16le"}, {60, "utf32"}, {183, "utf32"},
		{51, "cp1251"}, {13, "sjis"}, {95, "cp932"}, {12, "ujis"},
		{97, "eucjpms"}, {19, "euckr"}, {18, "tis620"}, {37, "keybcs2"},
		{92, "geostd8"}, {11, "ascii"}, {10, "swe7"},
		/* MariaDB only */
		{576, "utf8mb3"}, {608, "utf8mb4"}, {640, "ucs2"}, {738, "utf32"},
		{1032, "latin1"}, {1057, "utf8mb3"}, {1069, "utf8mb4"},
		{1070, "utf8mb4"}, {1111, "gbk"}, {1270, "utf8mb4"},
		/* MariaDB 10.10+ UCA 14.0 */
		{2048, "utf8mb3"}, {2304, "utf8mb4"}, {2305, "utf8mb4"},
		{2311, "utf8mb4"}, {2560, "ucs2"}, {2816, "utf16"}, {3072, "utf32"},
		{3263, "utf32"}, {2496, "utf8mb4"}, {3327, "utf32"}
	};
	static const uint32_t unknown[] = {0, 17, 100, 251, 254, 324, 1271, 2047, 3328, 65535, 0xFFFFFFFF};
	size_t		i;

	BL_TEST_BEGIN("collation ids");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		const bl_charset *cs = bl_charset_by_collation(cases[i].id);

		if (cs == NULL || strcmp(bl_charset_name(cs), cases[i].cs) != 0)
			BL_FAIL("collation %u: got %s, want %s", (unsigned) cases[i].id,
					cs ? bl_charset_name(cs) : "NULL", cases[i].cs);
	}
	for (i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++)
	{
		if (bl_charset_by_collation(unknown[i]) != NULL)
			BL_FAIL("collation %u should be unknown", (unsigned) unknown[i]);
	}
	BL_CHECK(bl_charset_is_binary(bl_charset_by_collation(63)));
	BL_CHECK(!bl_charset_is_binary(bl_charset_by_collation(8)));
	BL_CHECK(!bl_charset_is_binary(NULL));
	BL_CHECK_INT(bl_charset_max_bytes(bl_charset_by_collation(45)), 4);
	BL_CHECK_INT(bl_charset_max_bytes(bl_charset_by_collation(33)), 3);
	BL_CHECK_INT(bl_charset_max_bytes(bl_charset_by_collation(8)), 1);
	BL_CHECK_INT(bl_charset_max_bytes(bl_charset_by_collation(28)), 2);
	BL_CHECK_INT(bl_charset_max_bytes(bl_charset_by_collation(12)), 3);
	BL_TEST_END();
}

static void
test_names(void)
{
	size_t		i;
	char		longname[300];

	BL_TEST_BEGIN("charset names");
	for (i = 0; i < NCHARSETS; i++)
	{
		const bl_charset *cs = bl_charset_by_name(all_charsets[i]);

		if (cs == NULL)
			BL_FAIL("%s not found", all_charsets[i]);
		else
			BL_CHECK_STR(bl_charset_name(cs), all_charsets[i]);
	}
	BL_CHECK_STR(bl_charset_name(bl_charset_by_name("utf8")), "utf8mb3");
	BL_CHECK_STR(bl_charset_name(bl_charset_by_name("UTF8")), "utf8mb3");
	BL_CHECK_STR(bl_charset_name(bl_charset_by_name("Latin1")), "latin1");
	BL_CHECK_STR(bl_charset_name(bl_charset_by_name("UTF8MB4")), "utf8mb4");
	BL_CHECK_STR(bl_charset_name(bl_charset_by_name("BINARY")), "binary");
	BL_CHECK(bl_charset_by_name("klingon") == NULL);
	BL_CHECK(bl_charset_by_name("") == NULL);
	BL_CHECK(bl_charset_by_name(NULL) == NULL);
	BL_CHECK(bl_charset_by_name("utf8mb4 ") == NULL);
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	BL_CHECK(bl_charset_by_name(longname) == NULL);
	BL_CHECK(bl_charset_by_name("latin1") == bl_charset_by_collation(8));
	BL_CHECK(bl_charset_name(NULL) == NULL);
	BL_TEST_END();
}

static void
test_latin1(void)
{
	BL_TEST_BEGIN("latin1 is MySQL's cp1252");
	/* 0x80 0x81 0xE9 0xFF -> U+20AC U+0081 U+00E9 U+00FF */
	BL_CHECK_STR(conv_hex("latin1", "8081E9FF", false), "E282ACC281C3A9C3BF");
	/* the five cp1252 holes are C1 controls; 0x9F is U+0178 */
	BL_CHECK_STR(conv_hex("latin1", "80818D8F909D9FFF", false),
				 "E282ACC281C28DC28FC290C29DC5B8C3BF");
	BL_CHECK_STR(conv_hex("latin1", "48656C6C6F", false), "48656C6C6F");
	BL_CHECK_STR(conv_hex("latin1", "", false), "");
	BL_CHECK_STR(conv_hex("latin1", "00", false), "00");
	BL_TEST_END();
}

static void
test_utf8(void)
{
	BL_TEST_BEGIN("utf8 passthrough and U+FFFD");
	/* emoji (4 bytes) and other characters pass through both flavours */
	BL_CHECK_STR(conv_hex("utf8mb4", "F09F9880", false), "F09F9880");
	BL_CHECK_STR(conv_hex("utf8mb4", "61C3A9E282ACF09F988062", false),
				 "61C3A9E282ACF09F988062");
	BL_CHECK_STR(conv_hex("utf8mb3", "E282AC", false), "E282AC");
	BL_CHECK_STR(conv_hex("utf8mb3", "F09F9880", false), "F09F9880");
	/* invalid byte */
	BL_CHECK_STR(conv_hex("utf8mb4", "61FF62", false), "61EFBFBD62");
	/* truncated at the end: one U+FFFD for the maximal subpart */
	BL_CHECK_STR(conv_hex("utf8mb4", "61E282", false), "61EFBFBD");
	BL_CHECK_STR(conv_hex("utf8mb4", "F09F98", false), "EFBFBD");
	/* truncated in the middle */
	BL_CHECK_STR(conv_hex("utf8mb4", "E28228", false), "EFBFBD28");
	/* overlong, surrogate, above U+10FFFF: one U+FFFD per byte */
	BL_CHECK_STR(conv_hex("utf8mb4", "C0AF", false), "EFBFBDEFBFBD");
	BL_CHECK_STR(conv_hex("utf8mb4", "EDA080", false), "EFBFBDEFBFBDEFBFBD");
	BL_CHECK_STR(conv_hex("utf8mb4", "F4908080", false),
				 "EFBFBDEFBFBDEFBFBDEFBFBD");
	/* lone continuation bytes */
	BL_CHECK_STR(conv_hex("utf8mb4", "8080", false), "EFBFBDEFBFBD");
	/* a long valid ASCII run, then a bad byte at the very end */
	BL_CHECK_STR(conv_hex("utf8mb4", "3031323334353637383930313233343536FE", false),
				 "3031323334353637383930313233343536EFBFBD");
	/* ascii charset: 8-bit bytes are invalid */
	BL_CHECK_STR(conv_hex("ascii", "41E942", false), "41EFBFBD42");
	/* binary: ASCII kept, the rest U+FFFD */
	BL_CHECK_STR(conv_hex("binary", "410080FF", false), "4100EFBFBDEFBFBD");
	BL_TEST_END();
}

static void
test_single_byte(void)
{
	BL_TEST_BEGIN("single-byte charsets");
	/* "Привет" in cp1251 */
	BL_CHECK_STR(conv_hex("cp1251", "CFF0E8E2E5F2", false),
				 "D09FD180D0B8D0B2D0B5D182");
	/* cp1251 0x98 is undefined */
	BL_CHECK_STR(conv_hex("cp1251", "98", false), "EFBFBD");
	/* koi8r "Ж", latin2 "ő", cp1250 "š", latin5 "ğ", greek "α", hebrew "א" */
	BL_CHECK_STR(conv_hex("koi8r", "F6", false), "D096");
	BL_CHECK_STR(conv_hex("latin2", "F5", false), "C591");
	BL_CHECK_STR(conv_hex("cp1250", "9A", false), "C5A1");
	BL_CHECK_STR(conv_hex("latin5", "F0", false), "C49F");
	BL_CHECK_STR(conv_hex("greek", "E1", false), "CEB1");
	BL_CHECK_STR(conv_hex("hebrew", "E0", false), "D790");
	/* MySQL-specific mappings that differ from glibc */
	BL_CHECK_STR(conv_hex("koi8u", "95", false), "E280A2");
	BL_CHECK_STR(conv_hex("greek", "A1A2", false), "CABDCABC");
	BL_CHECK_STR(conv_hex("macroman", "C6F0", false), "E28886EFA3BF");
	BL_CHECK_STR(conv_hex("swe7", "24405B", false), "24C389C384");
	BL_CHECK_STR(conv_hex("tis620", "80A1", false), "C280E0B881");
	/* keybcs2: Czech letters, then IBM437 box drawing */
	BL_CHECK_STR(conv_hex("keybcs2", "80A8B0", false), "C48CC5A1E29691");
	/* cp866 "Я", cp850 "é", cp852 "ą", macce "Ą", armscii8 "Ա" */
	BL_CHECK_STR(conv_hex("cp866", "9F", false), "D0AF");
	BL_CHECK_STR(conv_hex("cp850", "82", false), "C3A9");
	BL_CHECK_STR(conv_hex("cp852", "A5", false), "C485");
	BL_CHECK_STR(conv_hex("macce", "84", false), "C484");
	BL_CHECK_STR(conv_hex("armscii8", "B2", false), "D4B1");
	BL_TEST_END();
}

static void
test_multi_byte(void)
{
	BL_TEST_BEGIN("multi-byte charsets");
	/* "你好" in gbk, gb2312 and gb18030 */
	BL_CHECK_STR(conv_hex("gbk", "C4E3BAC3", false), "E4BDA0E5A5BD");
	BL_CHECK_STR(conv_hex("gb2312", "C4E3BAC3", false), "E4BDA0E5A5BD");
	BL_CHECK_STR(conv_hex("gb18030", "C4E3BAC3", false), "E4BDA0E5A5BD");
	/* gb18030 4-byte form of U+1F600 */
	BL_CHECK_STR(conv_hex("gb18030", "9439FC36", false), "F09F9880");
	/* gbk with ASCII around, a bad trail byte and a lone lead at the end */
	BL_CHECK_STR(conv_hex("gbk", "61C4E362", false), "61E4BDA062");
	BL_CHECK_STR(conv_hex("gbk", "8120", false), "EFBFBD20");
	BL_CHECK_STR(conv_hex("gbk", "61C4", false), "61EFBFBD");
	/* gbk trail byte 0x5C stays with its lead: "\" is not split off */
	BL_CHECK_STR(conv_hex("gbk", "5C815C5C", false), "5CE4B9975C");
	/* big5 "中", euckr "한", sjis "表" (trail 0x5C) and '\', cp932 */
	BL_CHECK_STR(conv_hex("big5", "A4A4", false), "E4B8AD");
	BL_CHECK_STR(conv_hex("euckr", "C7D1", false), "ED959C");
	/* a lone lead byte at the end (glibc's CP949 reports it oddly) */
	BL_CHECK_STR(conv_hex("euckr", "C7D1C7", false), "ED959CEFBFBD");
	BL_CHECK_STR(conv_hex("sjis", "955C5C7E", false), "E8A1A85C7E");
	BL_CHECK_STR(conv_hex("sjis", "B1", false), "EFBDB1");
	BL_CHECK_STR(conv_hex("cp932", "8740", false), "E291A0");
	/* ujis "日", half-width kana, JIS X 0212, user-defined area */
	BL_CHECK_STR(conv_hex("ujis", "C6FC", false), "E697A5");
	BL_CHECK_STR(conv_hex("ujis", "8EB1", false), "EFBDB1");
	BL_CHECK_STR(conv_hex("ujis", "8FB0A1", false), "E4B882");
	BL_CHECK_STR(conv_hex("ujis", "F5A1FEFE8FF5A1", false), "EE8080EE8EABEE8EAC");
	BL_CHECK_STR(conv_hex("eucjpms", "F5A1", false), "EE8080");
	BL_TEST_END();
}

static void
test_wide(void)
{
	BL_TEST_BEGIN("ucs2, utf16, utf32");
	BL_CHECK_STR(conv_hex("ucs2", "00410416", false), "41D096");
	BL_CHECK_STR(conv_hex("ucs2", "00E9FFFF", false), "C3A9EFBFBF");
	/* odd length, lone surrogate */
	BL_CHECK_STR(conv_hex("ucs2", "004100", false), "41EFBFBD");
	BL_CHECK_STR(conv_hex("ucs2", "D800", false), "EFBFBD");
	BL_CHECK_STR(conv_hex("utf16", "D83DDE00", false), "F09F9880");
	BL_CHECK_STR(conv_hex("utf16le", "3DD800DE", false), "F09F9880");
	BL_CHECK_STR(conv_hex("utf16", "D83D0041", false), "EFBFBD41");
	BL_CHECK_STR(conv_hex("utf16", "DE00", false), "EFBFBD");
	BL_CHECK_STR(conv_hex("utf16", "D83D", false), "EFBFBD");
	BL_CHECK_STR(conv_hex("utf32", "0001F60000000041", false), "F09F988041");
	BL_CHECK_STR(conv_hex("utf32", "00110000", false), "EFBFBD");
	BL_CHECK_STR(conv_hex("utf32", "0000D800", false), "EFBFBD");
	BL_CHECK_STR(conv_hex("utf32", "000041", false), "EFBFBD");
	BL_TEST_END();
}

static void
test_json(void)
{
	static const char ctl[] = "\x00\x01\b\t\n\x0b\f\r\x1f\x7f";
	int			c;

	BL_TEST_BEGIN("json escaping");
	BL_CHECK_STR(json_of(NULL, "plain text", 10), "plain text");
	BL_CHECK_STR(json_of(NULL, "a\"b\\c", 5), "a\\\"b\\\\c");
	BL_CHECK_STR(json_of(NULL, ctl, sizeof(ctl) - 1),
				 "\\u0000\\u0001\\b\\t\\n\\u000b\\f\\r\\u001f\x7f");
	/* U+2028 and U+2029 escaped, U+2027 not */
	BL_CHECK_STR(json_of(NULL, "a\xe2\x80\xa8" "b\xe2\x80\xa9\xe2\x80\xa7", 11),
				 "a\\u2028b\\u2029\xe2\x80\xa7");
	BL_CHECK_STR(json_of(NULL, "\xf0\x9f\x98\x80", 4), "\xf0\x9f\x98\x80");
	BL_CHECK_STR(json_of(NULL, "x\xffy", 3), "x\xef\xbf\xbdy");
	BL_CHECK_STR(json_of(NULL, "\xe2\x80", 2), "\xef\xbf\xbd");
	BL_CHECK_STR(json_of(NULL, "", 0), "");
	/* specials at every position of an 8-byte window */
	BL_CHECK_STR(json_of(NULL, "0123456\"89abcdef\\", 17),
				 "0123456\\\"89abcdef\\\\");
	BL_CHECK_STR(json_of(NULL, "01234567\n", 9), "01234567\\n");
	/* every single byte, through latin1 (ASCII half) */
	for (c = 0; c < 0x80; c++)
	{
		char		in = (char) c;
		const char *got = json_of("latin1", &in, 1);
		char		want[8];

		if (c == '"' || c == '\\')
			snprintf(want, sizeof(want), "\\%c", c);
		else if (c >= '\b' && c <= '\r' && c != '\v')
			snprintf(want, sizeof(want), "\\%c", "btn?fr"[c - '\b']);
		else if (c < 0x20)
			snprintf(want, sizeof(want), "\\u%04x", c);
		else
			snprintf(want, sizeof(want), "%c", c);
		if (strcmp(got, want) != 0)
			BL_FAIL("latin1 byte 0x%02x: got [%s], want [%s]", c, got, want);
		got = json_of(NULL, &in, 1);
		if (strcmp(got, want) != 0)
			BL_FAIL("utf8 byte 0x%02x: got [%s], want [%s]", c, got, want);
	}
	/* one-pass conversion of other charsets */
	BL_CHECK_STR(json_of("latin1", "\"\x93q\x94\n", 5), "\\\"\xe2\x80\x9cq\xe2\x80\x9d\\n");
	BL_CHECK_STR(json_of("cp1251", "\xcf\"\\", 3), "\xd0\x9f\\\"\\\\");
	BL_CHECK_STR(json_of("gbk", "\xc4\xe3\"\n", 4), "\xe4\xbd\xa0\\\"\\n");
	BL_CHECK_STR(json_of("sjis", "\x95\x5c\\", 3), "\xe8\xa1\xa8\\\\");
	BL_CHECK_STR(json_of("ucs2", "\x00\x0a\x00\x22\x20\x28", 6), "\\n\\\"\\u2028");
	BL_CHECK_STR(json_of("utf32", "\x00\x00\x20\x29\x00\x00\x00\x5c", 8), "\\u2029\\\\");
	BL_CHECK_STR(json_of("utf8mb4", "\"\x01", 2), "\\\"\\u0001");
	BL_CHECK_STR(json_of("binary", "a\x80\n", 3), "a\xef\xbf\xbd\\n");
	BL_TEST_END();
}

static void
test_append_and_terminate(void)
{
	size_t		i;

	BL_TEST_BEGIN("output is appended and NUL-terminated");
	for (i = 0; i < NCHARSETS; i++)
	{
		const bl_charset *cs = bl_charset_by_name(all_charsets[i]);
		bl_buf		out;
		bl_error	err;

		bl_buf_init(&out);
		bl_buf_puts(&out, "pre:");
		if (bl_charset_to_utf8(cs, (const uint8_t *) "", 0, &out, &err) != 0 ||
			bl_charset_to_json_string(cs, (const uint8_t *) "", 0, &out, &err) != 0)
			BL_FAIL("%s: empty input failed", all_charsets[i]);
		if (out.len != 4 || strcmp(out.data, "pre:") != 0)
			BL_FAIL("%s: prefix not kept", all_charsets[i]);
		bl_buf_free(&out);

		/* an empty conversion into an empty buffer still gives a string */
		if (bl_charset_to_utf8(cs, NULL, 0, &out, &err) != 0 ||
			out.data == NULL || out.data[0] != '\0')
			BL_FAIL("%s: empty output not a string", all_charsets[i]);
		bl_buf_free(&out);
	}
	{
		bl_buf		out;
		bl_error	err;

		bl_buf_init(&out);
		memset(&err, 0, sizeof(err));
		BL_CHECK_INT(bl_charset_to_utf8(NULL, (const uint8_t *) "x", 1, &out, &err), -1);
		BL_CHECK_INT(err.code, BL_ERR_UNSUPPORTED);
		BL_CHECK_INT(bl_charset_to_json_string(NULL, (const uint8_t *) "x", 1, &out, &err), -1);
		bl_buf_free(&out);
	}
	BL_TEST_END();
}

/* Long inputs cross the converters' internal chunk boundaries. */
static void
test_long_inputs(void)
{
	const size_t n = 30011;		/* characters; odd on purpose */
	uint8_t    *in = malloc(n * 4);
	bl_buf		out;
	bl_error	err;
	size_t		i;
	size_t		want;
	bool		ok;

	BL_TEST_BEGIN("long inputs");
	bl_buf_init(&out);

	/* utf16: 30011 surrogate pairs */
	for (i = 0; i < n; i++)
		memcpy(in + 4 * i, "\xd8\x3d\xde\x00", 4);
	BL_CHECK_INT(bl_charset_to_utf8(bl_charset_by_name("utf16"), in, n * 4, &out, &err), 0);
	ok = out.len == n * 4;
	for (i = 0; ok && i < n; i++)
		ok = memcmp(out.data + 4 * i, "\xf0\x9f\x98\x80", 4) == 0;
	BL_CHECK(ok);

	/* latin1: 'a' and 0xE9 with a quote every 1000 bytes, as JSON */
	want = n;
	for (i = 0; i < n; i++)
	{
		in[i] = (i % 1000 == 999) ? '"' : (i % 7 == 0 ? 0xE9 : 'a');
		if (in[i] != 'a')
			want++;				/* both become two bytes */
	}
	bl_buf_reset(&out);
	BL_CHECK_INT(bl_charset_to_json_string(bl_charset_by_name("latin1"), in, n, &out, &err), 0);
	BL_CHECK(json_body_valid(out.data, out.len));
	BL_CHECK_INT(out.len, want);

	/* gbk: "你" repeated, with ASCII between */
	for (i = 0; i + 3 <= n; i += 3)
		memcpy(in + i, "\xc4\xe3x", 3);
	bl_buf_reset(&out);
	BL_CHECK_INT(bl_charset_to_utf8(bl_charset_by_name("gbk"), in, i, &out, &err), 0);
	BL_CHECK_INT(out.len, (i / 3) * 4);
	BL_CHECK(utf8_valid((const uint8_t *) out.data, out.len, NULL, NULL));

	bl_buf_free(&out);
	free(in);
	BL_TEST_END();
}

/* Random ASCII-heavy UTF-8: the fast JSON path against the reference. */
static void
test_json_random(void)
{
	uint8_t		buf[600];
	int			iter;

	BL_TEST_BEGIN("json escaping matches the reference on random text");
	for (iter = 0; iter < 20000 && !bl_test_case_failed; iter++)
	{
		size_t		len = random_text(buf, sizeof(buf), true);
		uint8_t    *in = malloc(len ? len : 1);
		bl_buf		got,
					want,
					two;
		bl_error	err;

		memcpy(in, buf, len);
		bl_buf_init(&got);
		bl_buf_init(&want);
		bl_buf_init(&two);
		bl_json_escape_utf8(in, len, &got);
		json_reference(in, len, &want);
		if (want.data == NULL)
			bl_buf_puts(&want, "");
		if (got.len != want.len || memcmp(got.data, want.data, got.len) != 0)
			BL_FAIL("input %s", tohex((const char *) in, len));
		/* utf8mb4 to_utf8 must leave valid input unchanged */
		bl_charset_to_utf8(bl_charset_by_name("utf8mb4"), in, len, &two, &err);
		if (two.len != len || (len && memcmp(two.data, in, len) != 0))
			BL_FAIL("utf8 copy changed valid input %s", tohex((const char *) in, len));
		bl_buf_free(&got);
		bl_buf_free(&want);
		bl_buf_free(&two);
		free(in);
	}
	BL_TEST_END();
}

/*
 * JSON text in strings is dense in quotes: random strings with 0-60% of
 * '"' and '\\', of every length up to 80 and a few across the escaper's
 * 4096-byte chunks, appended to a non-empty buffer, against the reference;
 * with invalid UTF-8 too, where the reference is escaping the utf8mb4
 * copy (which replaces invalid sequences).  This exercises the 16-byte
 * blocks, the 8-byte tail words and the careful path at every offset.
 * (The unit tests build this file twice: with SSE2 and with BL_NO_SIMD.)
 */
static void
test_json_dense(void)
{
	static const char *const extra[] = {
		"\xc3\xa9", "\xe5\xbc\xa0", "\xf0\x9f\x98\x80", "\xe2\x80\xa8", "\n", "\x01",
		"\x7f", "\xff", "\xe2\x82", "\xc0\xaf"
	};
	int			iter;

	BL_TEST_BEGIN("json escaping of quote-dense text, every length and offset");
	for (iter = 0; iter < 30000 && !bl_test_case_failed; iter++)
	{
		size_t		len = iter < 20000 ? (size_t) (iter % 81) : 4000 + rng() % 9000;
		uint32_t	quotes = rng() % 61;	/* percent */
		uint32_t	others = iter % 3 == 0 ? 0 : rng() % 10;	/* percent */
		uint8_t    *in = malloc(len ? len : 1);
		size_t		n = 0;
		bl_buf		got,
					want,
					fixed;
		bl_error	err;

		while (n < len)
		{
			uint32_t	r = rng() % 100;

			if (r < quotes)
				in[n++] = rng() % 4 ? '"' : '\\';
			else if (r < quotes + others)
			{
				const char *p = extra[rng() % (sizeof(extra) / sizeof(extra[0]))];
				size_t		k = strlen(p);

				if (k > len - n)
					k = len - n;	/* a cut sequence is invalid UTF-8 */
				memcpy(in + n, p, k);
				n += k;
			}
			else
				in[n++] = (uint8_t) (0x20 + rng() % 0x5F);
		}
		bl_buf_init(&got);
		bl_buf_init(&want);
		bl_buf_init(&fixed);
		bl_buf_puts(&got, "prefix:");
		bl_buf_puts(&want, "prefix:");
		bl_json_escape_utf8(in, len, &got);
		bl_charset_to_utf8(bl_charset_by_name("utf8mb4"), in, len, &fixed, &err);
		json_reference((const uint8_t *) fixed.data, fixed.len, &want);
		if (got.len != want.len || memcmp(got.data, want.data, got.len) != 0)
			BL_FAIL("length %zu, input %s", len, len <= 200 ? tohex((const char *) in, len) : "(long)");
		else if (got.data[got.len] != '\0')
			BL_FAIL("output not NUL-terminated");
		bl_buf_free(&got);
		bl_buf_free(&want);
		bl_buf_free(&fixed);
		free(in);
	}
	BL_TEST_END();
}

/*
 * Random bytes through every charset: the result is valid UTF-8, the JSON
 * form is a valid JSON string body, and the one-pass JSON conversion
 * equals converting then escaping.
 */
static void
test_fuzz_all_charsets(void)
{
	size_t		c;

	BL_TEST_BEGIN("random bytes give valid UTF-8 and JSON in every charset");
	for (c = 0; c < NCHARSETS; c++)
	{
		const bl_charset *cs = bl_charset_by_name(all_charsets[c]);
		int			iter;

		for (iter = 0; iter < 3000 && !bl_test_case_failed; iter++)
		{
			/* a few long inputs cross the internal chunk boundaries */
			size_t		len = iter % 500 == 499 ? 20000 + rng() % 100 : rng() % 80;
			uint8_t    *in = malloc(len ? len : 1);
			bl_buf		u,
						j,
						k;
			bl_error	err;
			size_t		i;
			uint32_t	mode = rng() % 3;

			for (i = 0; i < len; i++)
			{
				if (mode == 0)
					in[i] = (uint8_t) rng();
				else if (mode == 1)
					in[i] = (uint8_t) (rng() % 4 ? 0x80 + rng() % 0x80 : rng() % 0x80);
				else
					in[i] = (uint8_t) (rng() % 8 ? rng() % 0x80 : rng());
			}
			if (iter == 0)
				random_text(in, len ? len : 1, false);
			bl_buf_init(&u);
			bl_buf_init(&j);
			bl_buf_init(&k);
			if (bl_charset_to_utf8(cs, in, len, &u, &err) != 0 ||
				bl_charset_to_json_string(cs, in, len, &j, &err) != 0)
				BL_FAIL("%s: conversion failed: %s", all_charsets[c], err.message);
			else if (!utf8_valid((const uint8_t *) u.data, u.len, NULL, NULL))
				BL_FAIL("%s: invalid UTF-8 from %s", all_charsets[c], tohex((const char *) in, len));
			else if (!json_body_valid(j.data, j.len))
				BL_FAIL("%s: invalid JSON from %s", all_charsets[c], tohex((const char *) in, len));
			else
			{
				bl_json_escape_utf8((const uint8_t *) u.data, u.len, &k);
				if (k.len != j.len || memcmp(k.data, j.data, k.len) != 0)
					BL_FAIL("%s: one-pass JSON differs for %s", all_charsets[c],
							tohex((const char *) in, len));
			}
			if (u.data[u.len] != '\0' || j.data[j.len] != '\0')
				BL_FAIL("%s: output not NUL-terminated", all_charsets[c]);
			bl_buf_free(&u);
			bl_buf_free(&j);
			bl_buf_free(&k);
			free(in);
		}
	}
	BL_TEST_END();
}

static void
test_cleanup(void)
{
	BL_TEST_BEGIN("cleanup and reuse");
	bl_charset_cleanup();
	BL_CHECK_STR(conv_hex("gbk", "C4E3", false), "E4BDA0");
	BL_CHECK_STR(conv_hex("cp1251", "CF", false), "D09F");
	bl_charset_cleanup();
	bl_charset_cleanup();
	BL_TEST_END();
}

int
main(void)
{
	test_collations();
	test_names();
	test_latin1();
	test_utf8();
	test_single_byte();
	test_multi_byte();
	test_wide();
	test_json();
	test_append_and_terminate();
	test_long_inputs();
	test_json_random();
	test_json_dense();
	test_fuzz_all_charsets();
	test_cleanup();
	bl_charset_cleanup();
	BL_TEST_EXIT();
}
