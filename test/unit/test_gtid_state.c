/*
 * test_gtid_state.c
 *	  Unit tests of a replica's GTID state (src/decoder/bl_gtid_state.c):
 *	  MariaDB states of 1,600 domains (67 kB of text), MySQL sets of 1,000
 *	  source UUIDs with gaps, when each is known, and malformed states.
 */
#include "bl_test.h"
#include "bl_gtid_state.h"
#include "bl_gtid_set.h"

#define U1 "3e11fa47-71ca-11e1-9e33-c80aa9429562"
#define U2 "5d8f2a10-0000-4000-8000-00000000ab12"

static const char *
text_of(bl_gtid_state *st)
{
	const char *t;
	size_t		len;
	bl_error	err;

	memset(&err, 0, sizeof(err));
	if (bl_gtid_state_text(st, &t, &len, &err) != 0)
		return "(out of memory)";
	if (t && strlen(t) != len)
		return "(length differs)";
	return t;
}

int
main(void)
{
	bl_gtid_state *st;
	bl_error	err;

	memset(&err, 0, sizeof(err));

	BL_TEST_BEGIN("gtid-state-maria-1600-domains");
	{
		bl_buf		want;
		bl_buf		in;

		st = bl_gtid_state_create();
		bl_buf_init(&want);
		bl_buf_init(&in);
		BL_CHECK(st != NULL && !bl_gtid_state_known(st) && text_of(st) == NULL);
		/* committed in descending domain order, listed in ascending */
		for (int i = 1599; i >= 0; i--)
			BL_CHECK(bl_gtid_state_commit_maria(st, 4000000000u + 1000u * (unsigned) i,
												4000000000u + (unsigned) i,
												1000000000000000000ULL + (unsigned) i,
												&err) == 0);
		for (int i = 0; i < 1600; i++)
			bl_buf_printf(&want, "%s%u-%u-%llu", i ? "," : "", 4000000000u + 1000u * (unsigned) i,
						  4000000000u + (unsigned) i, 1000000000000000000ULL + (unsigned) i);
		BL_CHECK(want.len > 65535);
		BL_CHECK(bl_gtid_state_known(st));
		BL_CHECK(text_of(st) && strcmp(text_of(st), want.data) == 0);
		/* a later transaction of a domain replaces its GTID */
		BL_CHECK(bl_gtid_state_commit_maria(st, 4000005000u, 2, 1000000000000000006ULL, &err) == 0);
		BL_CHECK(strstr(text_of(st), ",4000005000-2-1000000000000000006,4000006000-") != NULL);
		BL_CHECK(strstr(text_of(st), "4000005000-4000000005-") == NULL);
		/* the text loads back into the same state */
		bl_buf_puts(&in, text_of(st));
		BL_CHECK(bl_gtid_state_load(st, in.data, &err) == 0);
		BL_CHECK(text_of(st) && strcmp(text_of(st), in.data) == 0);
		/* a GTID_LIST is taken only while no domain is known */
		BL_CHECK(bl_gtid_state_maria_list(st, "0-1-5", 5, &err) == 0);
		BL_CHECK(text_of(st) && strcmp(text_of(st), in.data) == 0);
		BL_CHECK(bl_gtid_state_load(st, NULL, &err) == 0 && text_of(st) == NULL);
		BL_CHECK(bl_gtid_state_maria_list(st, "2-1-9, 0-1-5", 12, &err) == 0);
		BL_CHECK_STR(text_of(st), "0-1-5,2-1-9");
		/* a MySQL GTID does not belong here */
		BL_CHECK(bl_gtid_state_commit_mysql(st, U1 ":1", &err) != 0);
		bl_gtid_state_free(st);
		bl_buf_free(&want);
		bl_buf_free(&in);
	}
	BL_TEST_END();

	BL_TEST_BEGIN("gtid-state-maria-malformed");
	{
		const char *bad[] = {
			"0-1", "0-1-", "0-1-5,", "0-1-5,,1-1-2", "a-1-5", "0-1-5 1-1-2",
			"4294967296-1-5", "0-4294967296-5", "0-1-99999999999999999999",
			"0-1-5,0-2-6",
			/* a state cut in the middle of a GTID, as a 255-byte buffer did */
			"0-1-6,4000000000-4000000000-1000000000000000000,4000001000-4000000001-1",
		};

		st = bl_gtid_state_create();
		for (size_t i = 0; i + 1 < sizeof(bad) / sizeof(bad[0]); i++)
		{
			memset(&err, 0, sizeof(err));
			if (bl_gtid_state_load(st, bad[i], &err) == 0)
				BL_FAIL("accepted \"%s\"", bad[i]);
			else if (strstr(err.message, "invalid MariaDB GTID state") == NULL)
				BL_FAIL("error for \"%s\" is \"%s\"", bad[i], err.message);
			else if (bl_gtid_state_known(st))
				BL_FAIL("\"%s\" left a known state", bad[i]);
		}
		/* the last one is well formed: only its length says it was cut */
		BL_CHECK(bl_gtid_state_load(st, bad[sizeof(bad) / sizeof(bad[0]) - 1], &err) == 0);
		BL_CHECK(bl_gtid_state_load(st, " 0-1-5 , 1-2-3 ", &err) == 0);
		BL_CHECK_STR(text_of(st), "0-1-5,1-2-3");
		BL_CHECK(bl_gtid_state_load(st, "", &err) == 0 && bl_gtid_state_known(st));
		BL_CHECK_STR(text_of(st), "");
		bl_gtid_state_free(st);
	}
	BL_TEST_END();

	BL_TEST_BEGIN("gtid-state-mysql-known");
	st = bl_gtid_state_create();
	/* not known: GTIDs are not recorded, a PREVIOUS_GTIDS met mid-file neither */
	BL_CHECK(bl_gtid_state_commit_mysql(st, U1 ":7", &err) == 0);
	BL_CHECK(text_of(st) == NULL);
	BL_CHECK(bl_gtid_state_mysql_previous(st, U1 ":1-5", strlen(U1 ":1-5"), false, &err) == 0);
	BL_CHECK(text_of(st) == NULL);
	/* the PREVIOUS_GTIDS of a file read from its start is the set */
	BL_CHECK(bl_gtid_state_mysql_previous(st, U1 ":1-5", strlen(U1 ":1-5"), true, &err) == 0);
	BL_CHECK_STR(text_of(st), U1 ":1-5");
	BL_CHECK(bl_gtid_state_commit_mysql(st, U1 ":6", &err) == 0);
	BL_CHECK(bl_gtid_state_commit_mysql(st, U2 ":1", &err) == 0);
	BL_CHECK(bl_gtid_state_commit_mysql(st, U1 ":tag:1", &err) == 0);
	BL_CHECK_STR(text_of(st), U1 ":1-6:tag:1," U2 ":1");
	/* the next file's PREVIOUS_GTIDS joins (it may hold more) */
	BL_CHECK(bl_gtid_state_mysql_previous(st, U1 ":1-6:9", strlen(U1 ":1-6:9"), true, &err) == 0);
	BL_CHECK_STR(text_of(st), U1 ":1-6:9:tag:1," U2 ":1");
	BL_CHECK(bl_gtid_state_commit_maria(st, 0, 1, 5, &err) != 0);
	BL_CHECK(bl_gtid_state_maria_list(st, "0-1-5", 5, &err) != 0);
	BL_CHECK(bl_gtid_state_commit_mysql(st, "not a gtid", &err) != 0);
	/* a known empty set records from the first GTID on */
	BL_CHECK(bl_gtid_state_load(st, "", &err) == 0);
	BL_CHECK(bl_gtid_state_commit_mysql(st, U2 ":4", &err) == 0);
	BL_CHECK_STR(text_of(st), U2 ":4");
	bl_gtid_state_free(st);
	BL_TEST_END();

	BL_TEST_BEGIN("gtid-state-mysql-1000-uuids");
	{
		bl_buf		base;
		bl_buf		want;
		bl_gtid_set *check;
		char		uuid[40];

		bl_buf_init(&base);
		bl_buf_init(&want);
		/* 1,000 UUIDs, each with gaps: more than 100 kB */
		for (int u = 0; u < 1000; u++)
		{
			snprintf(uuid, sizeof(uuid), "%08x-0000-4000-8000-%012x", (unsigned) u * 7919u, u);
			bl_buf_printf(&base, "%s%s:1-1000:1002-2000:2002:2004-2100:3000-3001:4000-5000",
						  u ? "," : "", uuid);
			bl_buf_printf(&base, ":6000:6002:6004:6006-6010:7000-7002");
		}
		BL_CHECK(base.len > 100000);
		st = bl_gtid_state_create();
		BL_CHECK(bl_gtid_state_load(st, base.data, &err) == 0);
		/* each UUID's next transaction, and one GTID filling a gap */
		for (int u = 0; u < 1000; u++)
		{
			char		g[64];

			snprintf(uuid, sizeof(uuid), "%08x-0000-4000-8000-%012x", (unsigned) u * 7919u, u);
			snprintf(g, sizeof(g), "%s:7003", uuid);
			BL_CHECK(bl_gtid_state_commit_mysql(st, g, &err) == 0);
			if (u % 10 == 0)
			{
				snprintf(g, sizeof(g), "%s:1001", uuid);
				BL_CHECK(bl_gtid_state_commit_mysql(st, g, &err) == 0);
			}
		}
		check = bl_gtid_set_parse(text_of(st), strlen(text_of(st)), &err);
		BL_CHECK(check != NULL && bl_gtid_set_members(check) == 1000);
		for (int u = 0; u < 1000 && check; u++)
		{
			char		g[64];

			snprintf(uuid, sizeof(uuid), "%08x-0000-4000-8000-%012x", (unsigned) u * 7919u, u);
			snprintf(g, sizeof(g), "%s:7003", uuid);
			BL_CHECK(bl_gtid_set_contains(check, g));
			snprintf(g, sizeof(g), "%s:1001", uuid);
			BL_CHECK(bl_gtid_set_contains(check, g) == (u % 10 == 0));
			snprintf(g, sizeof(g), "%s:2003", uuid);
			BL_CHECK(!bl_gtid_set_contains(check, g));
			snprintf(g, sizeof(g), "%s:7004", uuid);
			BL_CHECK(!bl_gtid_set_contains(check, g));
		}
		BL_CHECK(strstr(text_of(st), ":1-2000:2002:") != NULL);
		BL_CHECK(strstr(text_of(st), ":6006-6010:7000-7003") != NULL);
		bl_gtid_set_free(check);
		bl_gtid_state_free(st);
		bl_buf_free(&base);
		bl_buf_free(&want);
	}
	BL_TEST_END();

	BL_TEST_EXIT();
}
