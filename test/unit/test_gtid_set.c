/*
 * test_gtid_set.c
 *	  Unit tests of MySQL GTID set parsing, membership and inclusion
 *	  (src/decoder/bl_gtid_set.c).
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

	BL_TEST_EXIT();
}
