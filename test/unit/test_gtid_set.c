/*
 * test_gtid_set.c
 *	  Unit tests of MySQL GTID sets (src/decoder/bl_gtid_set.c): parsing,
 *	  membership, inclusion, adding GTIDs, union, text and MySQL's binary
 *	  encoding (untagged and tagged, byte for byte), also with 1,000 source
 *	  UUIDs with gaps (a set of more than 100 kB).
 */
#include "bl_test.h"
#include "bl_gtid_set.h"

#define U1 "3e11fa47-71ca-11e1-9e33-c80aa9429562"
#define U2 "5D8F2A10-0000-4000-8000-00000000AB12"

static bl_gtid_set *
parse(const char *text)
{
	bl_error	err;

	memset(&err, 0, sizeof(err));
	return bl_gtid_set_parse(text, strlen(text), &err);
}

/* The set's text, in a static buffer (NULL if it failed). */
static const char *
text_of(const bl_gtid_set *set)
{
	static bl_buf b;

	bl_buf_free(&b);
	bl_buf_putc(&b, '\0');
	bl_buf_reset(&b);
	return bl_gtid_set_text(set, &b) == 0 ? b.data : NULL;
}

static bool
equal(const bl_gtid_set *a, const bl_gtid_set *b)
{
	return bl_gtid_set_subset(a, b) && bl_gtid_set_subset(b, a);
}

#define NUUIDS 1000

/* UUID number u, lower case, in an order of its own (not by u). */
static void
uuid_of(int u, char *out)
{
	unsigned	h = (unsigned) u * 2654435761u;

	snprintf(out, 37, "%08x-%04x-4%03x-8%03x-%012x", h, u & 0xffff, (u * 7) & 0xfff,
			 (u * 13) & 0xfff, (unsigned) (u * 977));
}

/*
 * The intervals of UUID u: gaps of different widths, single GTIDs, and a
 * number near MySQL's largest for every 100th.
 */
static int
intervals_of(int u, unsigned long long iv[][2])
{
	int			n = 0;
	unsigned long long g = 1000000 + (unsigned long long) (u % 3);

	for (int k = 0; k < 8; k++)
	{
		unsigned long long len = (unsigned long long) ((u + k) % 5);

		iv[n][0] = g;
		iv[n][1] = g + len;
		n++;
		g += len + 2 + (unsigned long long) ((u * k) % 4);
	}
	if (u % 100 == 0)
	{
		iv[n][0] = iv[n][1] = 9223372036854775806ULL;
		n++;
	}
	return n;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* The set of NUUIDS UUIDs in its canonical text (UUIDs in order). */
static char *
big_set_text(void)
{
	char	   *uuids[NUUIDS];
	bl_buf		b;

	bl_buf_init(&b);
	for (int u = 0; u < NUUIDS; u++)
	{
		uuids[u] = malloc(48);
		uuid_of(u, uuids[u]);
		/* the number after the uuid, for intervals_of */
		snprintf(uuids[u] + 37, 11, "%d", u);
	}
	qsort(uuids, NUUIDS, sizeof(char *), cmp_str);
	for (int i = 0; i < NUUIDS; i++)
	{
		unsigned long long iv[16][2];
		int			n = intervals_of(atoi(uuids[i] + 37), iv);

		bl_buf_printf(&b, "%s%s", i ? "," : "", uuids[i]);
		for (int k = 0; k < n; k++)
		{
			if (iv[k][0] == iv[k][1])
				bl_buf_printf(&b, ":%llu", iv[k][0]);
			else
				bl_buf_printf(&b, ":%llu-%llu", iv[k][0], iv[k][1]);
		}
		free(uuids[i]);
	}
	return b.data;
}

static uint64_t
le64(const uint8_t *p)
{
	uint64_t	v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/*
 * The text of an encoded set, read back independently of the encoder
 * (untagged form only: 8-byte count, uuid, interval count, [start, end)).
 */
static char *
decode_untagged(const uint8_t *p, size_t len)
{
	bl_buf		b;
	size_t		off = 8;
	uint64_t	n;

	bl_buf_init(&b);
	if (len < 8)
		return NULL;
	n = le64(p);
	for (uint64_t i = 0; i < n; i++)
	{
		uint64_t	niv;

		if (off + 24 > len)
			return NULL;
		bl_buf_printf(&b, "%s", i ? "," : "");
		for (int k = 0; k < 16; k++)
			bl_buf_printf(&b, "%s%02x", (k == 4 || k == 6 || k == 8 || k == 10) ? "-" : "",
						  p[off + (size_t) k]);
		niv = le64(p + off + 16);
		off += 24;
		for (uint64_t k = 0; k < niv; k++)
		{
			uint64_t	a,
						e;

			if (off + 16 > len)
				return NULL;
			a = le64(p + off);
			e = le64(p + off + 8);
			off += 16;
			if (e == a + 1)
				bl_buf_printf(&b, ":%llu", (unsigned long long) a);
			else
				bl_buf_printf(&b, ":%llu-%llu", (unsigned long long) a, (unsigned long long) e - 1);
		}
	}
	if (off != len)
		return NULL;
	bl_buf_putc(&b, '\0');
	return b.data;
}

int
main(void)
{
	bl_gtid_set *a,
			   *b;
	bl_error	err;

	BL_TEST_BEGIN("gtid-set-membership");
	a = parse(U1 ":1-5:7:10-12, " U2 ":3");
	BL_CHECK(a != NULL);
	if (a)
	{
		BL_CHECK(bl_gtid_set_contains(a, U1 ":1"));
		BL_CHECK(bl_gtid_set_contains(a, U1 ":5"));
		BL_CHECK(!bl_gtid_set_contains(a, U1 ":6"));
		BL_CHECK(bl_gtid_set_contains(a, U1 ":7"));
		BL_CHECK(!bl_gtid_set_contains(a, U1 ":9"));
		BL_CHECK(bl_gtid_set_contains(a, U1 ":11"));
		BL_CHECK(!bl_gtid_set_contains(a, U1 ":13"));
		/* case-insensitive uuids */
		BL_CHECK(bl_gtid_set_contains(a, "5d8f2a10-0000-4000-8000-00000000ab12:3"));
		BL_CHECK(!bl_gtid_set_contains(a, U2 ":4"));
		BL_CHECK(!bl_gtid_set_contains(a, "11111111-2222-3333-4444-555555555555:1"));
		/* malformed GTIDs are never members */
		BL_CHECK(!bl_gtid_set_contains(a, U1));
		BL_CHECK(!bl_gtid_set_contains(a, U1 ":x"));
		BL_CHECK(!bl_gtid_set_contains(a, "0-1-5"));
		BL_CHECK_INT(bl_gtid_set_members(a), 2);
	}
	bl_gtid_set_free(a);
	BL_TEST_END();

	BL_TEST_BEGIN("gtid-set-tags");
	/* MySQL's form (tag after intervals) and the decoder's (uuid:tag:N) */
	a = parse(U1 ":1-3:Blue:5-6");
	b = parse(U1 ":blue:5-6," U1 ":1-3");
	BL_CHECK(a != NULL && b != NULL);
	if (a && b)
	{
		BL_CHECK(bl_gtid_set_contains(a, U1 ":blue:5"));
		BL_CHECK(bl_gtid_set_contains(a, U1 ":BLUE:6"));
		BL_CHECK(!bl_gtid_set_contains(a, U1 ":5"));
		BL_CHECK(!bl_gtid_set_contains(a, U1 ":blue:1"));
		BL_CHECK(bl_gtid_set_subset(a, b) && bl_gtid_set_subset(b, a));
		BL_CHECK_INT(bl_gtid_set_members(a), 2);
	}
	bl_gtid_set_free(a);
	bl_gtid_set_free(b);
	BL_TEST_END();

	BL_TEST_BEGIN("gtid-set-subset");
	a = parse(U1 ":1-10");
	b = parse(U1 ":1-4:5-10:12," U2 ":1");
	BL_CHECK(a != NULL && b != NULL);
	if (a && b)
	{
		/* adjacent intervals merge: 1-4 and 5-10 cover 1-10 */
		BL_CHECK(bl_gtid_set_subset(a, b));
		BL_CHECK(!bl_gtid_set_subset(b, a));
		{
			bl_buf		m;

			bl_buf_init(&m);
			bl_gtid_set_first_missing(a, b, &m);
			BL_CHECK_INT(m.len, 0);
			bl_gtid_set_first_missing(b, a, &m);
			bl_buf_putc(&m, '\0');
			BL_CHECK_STR(m.data, "3e11fa47-71ca-11e1-9e33-c80aa9429562:12");
			bl_buf_free(&m);
		}
	}
	bl_gtid_set_free(a);
	bl_gtid_set_free(b);
	a = parse(U1 ":1-3:5");
	b = parse(U1 ":1-4");
	BL_CHECK(a && b && !bl_gtid_set_subset(a, b));
	bl_gtid_set_free(a);
	bl_gtid_set_free(b);
	a = parse("");
	b = parse(U1 ":1");
	BL_CHECK(a && b && bl_gtid_set_subset(a, b) && !bl_gtid_set_subset(b, a));
	bl_gtid_set_free(a);
	bl_gtid_set_free(b);
	BL_TEST_END();

	BL_TEST_BEGIN("gtid-set-malformed");
	{
		const char *bad[] = {
			"not-a-uuid:1", U1, U1 ":", U1 ":0", U1 ":5-3", U1 ":1-", U1 ":-3",
			U1 ":1:bad tag:2", U1 ":99999999999999999999999", "0-1-5", U1 ":1,,:2",
			U1 ":1:" "t234567890123456789012345678901234:1",
		};

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		{
			memset(&err, 0, sizeof(err));
			a = bl_gtid_set_parse(bad[i], strlen(bad[i]), &err);
			if (a != NULL)
				BL_FAIL("accepted \"%s\"", bad[i]);
			else if (strstr(err.message, "invalid GTID set") == NULL)
				BL_FAIL("error for \"%s\" is \"%s\"", bad[i], err.message);
			bl_gtid_set_free(a);
		}
	}
	BL_TEST_END();

	BL_TEST_BEGIN("gtid-set-add");
	{
		a = bl_gtid_set_create();
		memset(&err, 0, sizeof(err));
		BL_CHECK(a != NULL);
		/* joining an interval at either end, bridging two, duplicates */
		BL_CHECK(bl_gtid_set_add(a, U1 ":5", &err) == 0);
		BL_CHECK_STR(text_of(a), "3e11fa47-71ca-11e1-9e33-c80aa9429562:5");
		BL_CHECK(bl_gtid_set_add(a, U1 ":6", &err) == 0);
		BL_CHECK(bl_gtid_set_add(a, U1 ":4", &err) == 0);
		BL_CHECK(bl_gtid_set_add(a, U1 ":9", &err) == 0);
		BL_CHECK(bl_gtid_set_add(a, U1 ":1", &err) == 0);
		BL_CHECK_STR(text_of(a), "3e11fa47-71ca-11e1-9e33-c80aa9429562:1:4-6:9");
		BL_CHECK(bl_gtid_set_add(a, U1 ":8", &err) == 0);
		BL_CHECK(bl_gtid_set_add(a, U1 ":7", &err) == 0);
		BL_CHECK(bl_gtid_set_add(a, U1 ":5", &err) == 0);
		BL_CHECK_STR(text_of(a), "3e11fa47-71ca-11e1-9e33-c80aa9429562:1:4-9");
		BL_CHECK(bl_gtid_set_add(a, U1 ":2", &err) == 0);
		BL_CHECK(bl_gtid_set_add(a, U1 ":3", &err) == 0);
		BL_CHECK_STR(text_of(a), "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-9");
		/* another uuid (upper case in, lower case out), before U1; tags */
		BL_CHECK(bl_gtid_set_add(a, U2 ":3", &err) == 0);
		BL_CHECK(bl_gtid_set_add(a, U1 ":Blue:2", &err) == 0);
		BL_CHECK(bl_gtid_set_add(a, U1 ":blue:1", &err) == 0);
		BL_CHECK(bl_gtid_set_add(a, U1 ":red:7", &err) == 0);
		BL_CHECK(bl_gtid_set_add(a, "00000000-0000-4000-8000-000000000001:tag_only:1", &err) == 0);
		BL_CHECK_STR(text_of(a), "00000000-0000-4000-8000-000000000001:tag_only:1,"
					 "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-9:blue:1-2:red:7,"
					 "5d8f2a10-0000-4000-8000-00000000ab12:3");
		/* the text reads back as the same set */
		b = parse(text_of(a));
		BL_CHECK(b != NULL && equal(a, b) && bl_gtid_set_members(b) == 5);
		bl_gtid_set_free(b);
		/* the largest number, and malformed GTIDs */
		BL_CHECK(bl_gtid_set_add(a, U2 ":9223372036854775807", &err) == 0);
		BL_CHECK(bl_gtid_set_add(a, U2 ":9223372036854775806", &err) == 0);
		BL_CHECK(bl_gtid_set_contains(a, U2 ":9223372036854775807"));
		BL_CHECK(strstr(text_of(a), ":3:9223372036854775806-9223372036854775807") != NULL);
		BL_CHECK(bl_gtid_set_add(a, U1 ":0", &err) != 0);
		BL_CHECK(bl_gtid_set_add(a, "0-1-5", &err) != 0);
		BL_CHECK(strstr(err.message, "invalid GTID") != NULL);
		BL_CHECK(bl_gtid_set_add(a, U1 ":bad tag:1", &err) != 0);
		bl_gtid_set_free(a);
	}
	BL_TEST_END();

	BL_TEST_BEGIN("gtid-set-union");
	a = parse(U1 ":1-3:7," U2 ":5");
	b = parse(U1 ":4:6-9:12:blue:1," "11111111-2222-3333-4444-555555555555:1-2");
	BL_CHECK(a != NULL && b != NULL);
	if (a && b)
	{
		memset(&err, 0, sizeof(err));
		BL_CHECK(bl_gtid_set_union(a, b, &err) == 0);
		BL_CHECK_STR(text_of(a), "11111111-2222-3333-4444-555555555555:1-2,"
					 "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-4:6-9:12:blue:1,"
					 "5d8f2a10-0000-4000-8000-00000000ab12:5");
		BL_CHECK(bl_gtid_set_subset(b, a));
	}
	bl_gtid_set_free(a);
	bl_gtid_set_free(b);
	BL_TEST_END();

	BL_TEST_BEGIN("gtid-set-encode");
	{
		/* MySQL's Gtid_set::encode of "U1:1-5:7" and of the tagged set */
		static const uint8_t untagged[] = {
			1, 0, 0, 0, 0, 0, 0, 0,
			0x3e, 0x11, 0xfa, 0x47, 0x71, 0xca, 0x11, 0xe1,
			0x9e, 0x33, 0xc8, 0x0a, 0xa9, 0x42, 0x95, 0x62,
			2, 0, 0, 0, 0, 0, 0, 0,
			1, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0,
			7, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0,
		};
		static const uint8_t tagged[] = {
			1, 2, 0, 0, 0, 0, 0, 1,
			0x3e, 0x11, 0xfa, 0x47, 0x71, 0xca, 0x11, 0xe1,
			0x9e, 0x33, 0xc8, 0x0a, 0xa9, 0x42, 0x95, 0x62,
			0,					/* no tag */
			1, 0, 0, 0, 0, 0, 0, 0,
			1, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0,
			0x3e, 0x11, 0xfa, 0x47, 0x71, 0xca, 0x11, 0xe1,
			0x9e, 0x33, 0xc8, 0x0a, 0xa9, 0x42, 0x95, 0x62,
			4 << 1, 'b', 'l', 'u', 'e',	/* varlen length 4 */
			1, 0, 0, 0, 0, 0, 0, 0,
			5, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
		};
		bl_buf		out;

		bl_buf_init(&out);
		a = parse(U1 ":1-5:7");
		BL_CHECK(a && bl_gtid_set_encode(a, &out) == 0);
		BL_CHECK_INT(out.len, sizeof(untagged));
		BL_CHECK(out.len == sizeof(untagged) && memcmp(out.data, untagged, out.len) == 0);
		bl_gtid_set_free(a);
		bl_buf_reset(&out);
		/* a tag anywhere: the tagged form for every member */
		a = parse(U1 ":1-3:BLUE:5-9223372036854775806");
		BL_CHECK(a && bl_gtid_set_encode(a, &out) == 0);
		BL_CHECK_INT(out.len, sizeof(tagged));
		BL_CHECK(out.len == sizeof(tagged) && memcmp(out.data, tagged, out.len) == 0);
		bl_gtid_set_free(a);
		bl_buf_reset(&out);
		/* the empty set: a count of 0 */
		a = parse("");
		BL_CHECK(a && bl_gtid_set_encode(a, &out) == 0);
		BL_CHECK(out.len == 8 && le64((const uint8_t *) out.data) == 0);
		bl_gtid_set_free(a);
		bl_buf_free(&out);
	}
	BL_TEST_END();

	BL_TEST_BEGIN("gtid-set-1000-uuids");
	{
		char	   *text = big_set_text();
		size_t		len = strlen(text);
		bl_gtid_set *added = bl_gtid_set_create();
		bl_gtid_set *even = bl_gtid_set_create();
		bl_gtid_set *odd = bl_gtid_set_create();
		char	  **gtids;
		size_t		ngtids = 0;
		unsigned	rnd = 12345;

		BL_CHECK(len > 100000);
		a = bl_gtid_set_parse(text, len, &err);
		BL_CHECK(a != NULL);
		BL_CHECK(a && bl_gtid_set_members(a) == NUUIDS);
		/* the text of the parsed set is the text */
		BL_CHECK(a && text_of(a) && strcmp(text_of(a), text) == 0);
		/* encoded (the set COM_BINLOG_DUMP_GTID sends) and read back */
		{
			bl_buf		enc;
			char	   *back;

			bl_buf_init(&enc);
			BL_CHECK(a && bl_gtid_set_encode(a, &enc) == 0);
			back = decode_untagged((const uint8_t *) enc.data, enc.len);
			BL_CHECK(back != NULL && strcmp(back, text) == 0);
			free(back);
			bl_buf_free(&enc);
		}

		/* every GTID of the set, in a shuffled order */
		gtids = malloc(sizeof(char *) * NUUIDS * 64);
		for (int u = 0; u < NUUIDS; u++)
		{
			char		uuid[40];
			unsigned long long iv[16][2];
			int			n = intervals_of(u, iv);

			uuid_of(u, uuid);
			for (int k = 0; k < n; k++)
				for (unsigned long long g = iv[k][0]; g <= iv[k][1]; g++)
				{
					gtids[ngtids] = malloc(64);
					snprintf(gtids[ngtids], 64, "%s:%llu", uuid, g);
					ngtids++;
				}
			/* the gaps are not in the set; the intervals' ends are */
			BL_CHECK(a && bl_gtid_set_contains(a, gtids[ngtids - 1]));
			for (int k = 0; k + 1 < n; k++)
			{
				char		g[64];

				snprintf(g, sizeof(g), "%s:%llu", uuid, iv[k][1] + 1);
				BL_CHECK(a && !bl_gtid_set_contains(a, g));
				snprintf(g, sizeof(g), "%s:%llu", uuid, iv[k][0]);
				BL_CHECK(a && bl_gtid_set_contains(a, g));
			}
		}
		for (size_t i = ngtids - 1; i > 0; i--)
		{
			size_t		j;
			char	   *t;

			rnd = rnd * 1103515245u + 12345u;
			j = (size_t) (rnd >> 8) % (i + 1);
			t = gtids[i];
			gtids[i] = gtids[j];
			gtids[j] = t;
		}
		/* added one by one in that order: the same set, the same text */
		for (size_t i = 0; i < ngtids; i++)
		{
			if (bl_gtid_set_add(added, gtids[i], &err) != 0 ||
				bl_gtid_set_add((i % 2) ? odd : even, gtids[i], &err) != 0)
			{
				BL_FAIL("adding %s: %s", gtids[i], err.message);
				break;
			}
		}
		BL_CHECK(a && equal(a, added));
		BL_CHECK(text_of(added) && strcmp(text_of(added), text) == 0);
		/* two halves with gaps of their own: their union is the set */
		BL_CHECK(a && !bl_gtid_set_subset(a, even) && !bl_gtid_set_subset(a, odd));
		BL_CHECK(bl_gtid_set_union(even, odd, &err) == 0);
		BL_CHECK(text_of(even) && strcmp(text_of(even), text) == 0);
		/* a GTID filling a gap joins its neighbours */
		{
			char		uuid[40],
						g[64];
			unsigned long long iv[16][2];

			(void) intervals_of(7, iv);
			uuid_of(7, uuid);
			for (unsigned long long x = iv[0][1] + 1; x < iv[1][0]; x++)
			{
				snprintf(g, sizeof(g), "%s:%llu", uuid, x);
				BL_CHECK(bl_gtid_set_add(added, g, &err) == 0);
			}
			snprintf(g, sizeof(g), "%s:%llu-%llu:", uuid, iv[0][0], iv[1][1]);
			BL_CHECK(text_of(added) && strstr(text_of(added), g) != NULL);
			BL_CHECK(strlen(text_of(added)) < len);
		}
		for (size_t i = 0; i < ngtids; i++)
			free(gtids[i]);
		free(gtids);
		bl_gtid_set_free(a);
		bl_gtid_set_free(added);
		bl_gtid_set_free(even);
		bl_gtid_set_free(odd);
		free(text);
	}
	BL_TEST_END();

	BL_TEST_EXIT();
}
