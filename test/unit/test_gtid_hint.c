/*
 * test_gtid_hint.c
 *	  Unit tests of the dependency hints of GTID events (src/decoder/
 *	  bl_gtid.c): MariaDB's group commit id read from hand-built MARIA_GTID
 *	  events (with and without FL_GROUP_COMMIT_ID, truncated), the hint
 *	  each event gives (bl_gtid_hint_of) and when two hints prove two
 *	  transactions independent (bl_gtid_hint_independent), MySQL's
 *	  logical clock included.
 */
#include "bl_decoder.h"
#include "bl_test.h"

#include <stdlib.h>

#define FL_STANDALONE	0x01
#define FL_GROUP		0x02
#define FL_TRANS		0x04
#define FL_PARALLEL		0x08
#define FL_DDL			0x20
#define FL_XA			0x40

typedef struct evbuf
{
	uint8_t		data[256];
	size_t		len;
} evbuf;

static void
eb_le(evbuf *b, uint64_t v, int n)
{
	for (int i = 0; i < n && b->len < sizeof(b->data); i++)
		b->data[b->len++] = (uint8_t) (v >> (8 * i));
}

/* A MARIA_GTID event: header, seq_no, domain, flags, then extra bytes. */
static void
maria_gtid(evbuf *b, uint64_t seq, uint32_t domain, uint8_t flags,
		   uint64_t commit_id, int tail)
{
	b->len = 0;
	eb_le(b, 1700000000, 4);
	eb_le(b, BL_EV_MARIA_GTID, 1);
	eb_le(b, 7, 4);				/* server id */
	eb_le(b, 0, 4);				/* length, patched */
	eb_le(b, 0, 4);
	eb_le(b, 0, 2);
	eb_le(b, seq, 8);
	eb_le(b, domain, 4);
	eb_le(b, flags, 1);
	if (tail == 8)
		eb_le(b, commit_id, 8);
	else
		eb_le(b, commit_id, tail);	/* truncated id, or 6 zero bytes */
	for (int i = 0; i < 4; i++)
		b->data[9 + i] = (uint8_t) (b->len >> (8 * i));
}

/* A MariaDB 10.11 FORMAT_DESCRIPTION, checksums off. */
static void
maria_fde(evbuf *b)
{
	char		ver[50] = "10.11.6-MariaDB-log";

	b->len = 0;
	eb_le(b, 1700000000, 4);
	eb_le(b, BL_EV_FORMAT_DESCRIPTION, 1);
	eb_le(b, 7, 4);
	eb_le(b, 0, 4);
	eb_le(b, 0, 4);
	eb_le(b, 0, 2);
	eb_le(b, 4, 2);
	for (size_t i = 0; i < sizeof(ver); i++)
		eb_le(b, (uint8_t) ver[i], 1);
	eb_le(b, 1700000000, 4);
	eb_le(b, 19, 1);
	for (int i = 0; i < 42; i++)	/* post-header lengths: all 0 */
		eb_le(b, 0, 1);
	eb_le(b, BL_CHECKSUM_OFF, 1);
	eb_le(b, 0, 4);
	for (int i = 0; i < 4; i++)
		b->data[9 + i] = (uint8_t) (b->len >> (8 * i));
}

static int
decode(bl_decoder *dec, const evbuf *b, bl_event *ev, bl_error *err)
{
	static uint8_t *copy;
	int			rc;

	free(copy);
	copy = malloc(b->len);		/* exact size, for AddressSanitizer */
	if (copy == NULL)
		abort();
	memcpy(copy, b->data, b->len);
	memset(ev, 0xa5, sizeof(*ev));
	memset(err, 0, sizeof(*err));
	rc = bl_decode_event(dec, copy, b->len, 4, ev, err);
	return rc;
}

static bl_decoder *
new_decoder(void)
{
	bl_decoder_options opts;
	bl_decoder *dec;

	bl_decoder_options_init(&opts);
	dec = bl_decoder_create(&opts);
	if (dec == NULL)
		abort();
	return dec;
}

static void
test_commit_id(void)
{
	bl_decoder *dec = new_decoder();
	evbuf		b;
	bl_event	ev;
	bl_error	err;
	bl_gtid_hint h;

	BL_TEST_BEGIN("gtid/maria-group-commit-id");
	maria_fde(&b);
	BL_CHECK_INT(decode(dec, &b, &ev, &err), 0);
	maria_gtid(&b, 42, 3, FL_GROUP | FL_TRANS | FL_PARALLEL,
			   UINT64_C(0x0102030405060708), 8);
	BL_CHECK_INT(decode(dec, &b, &ev, &err), 0);
	BL_CHECK_STR(ev.u.gtid.text, "3-7-42");
	BL_CHECK(ev.u.gtid.commit_id == UINT64_C(0x0102030405060708));
	BL_CHECK(bl_decoder_gtid(dec)->commit_id == UINT64_C(0x0102030405060708));
	bl_gtid_hint_of(&ev.u.gtid, true, &h);
	BL_CHECK_INT(h.kind, BL_HINT_MARIA_GROUP);
	BL_CHECK(h.a == UINT64_C(0x0102030405060708));
	BL_TEST_END();

	BL_TEST_BEGIN("gtid/maria-no-group-commit-id");
	maria_gtid(&b, 43, 0, FL_TRANS | FL_PARALLEL, 0, 6);
	BL_CHECK_INT(decode(dec, &b, &ev, &err), 0);
	BL_CHECK_STR(ev.u.gtid.text, "0-7-43");
	BL_CHECK_INT(ev.u.gtid.commit_id, 0);
	bl_gtid_hint_of(&ev.u.gtid, true, &h);
	BL_CHECK_INT(h.kind, BL_HINT_NONE);
	BL_TEST_END();

	/* the id announced but cut short: an error, not a made-up id */
	BL_TEST_BEGIN("gtid/maria-group-commit-id-truncated");
	maria_gtid(&b, 44, 0, FL_GROUP | FL_TRANS, 5, 4);
	BL_CHECK(decode(dec, &b, &ev, &err) != 0);
	BL_CHECK_STR(err.message, "MARIA_GTID event with a group commit id is truncated");
	BL_TEST_END();

	/* groups whose group commit proves nothing */
	BL_TEST_BEGIN("gtid/maria-hint-refused");
	{
		static const uint8_t refused[] = {
			FL_GROUP | FL_PARALLEL, /* not transactional */
			FL_GROUP | FL_TRANS,	/* skip_parallel_replication */
			FL_GROUP | FL_TRANS | FL_PARALLEL | FL_XA,
			FL_GROUP | FL_TRANS | FL_PARALLEL | FL_DDL,
			FL_GROUP | FL_TRANS | FL_PARALLEL | FL_STANDALONE,
		};

		for (size_t i = 0; i < sizeof(refused); i++)
		{
			maria_gtid(&b, 50 + i, 0, refused[i], 9, 8);
			BL_CHECK_INT(decode(dec, &b, &ev, &err), 0);
			BL_CHECK_INT(ev.u.gtid.commit_id, 9);
			bl_gtid_hint_of(&ev.u.gtid, true, &h);
			if (h.kind != BL_HINT_NONE)
				BL_FAIL("flags 0x%02x gave a hint", refused[i]);
		}
		/* a commit id of 0 is no group */
		maria_gtid(&b, 60, 0, FL_GROUP | FL_TRANS | FL_PARALLEL, 0, 8);
		BL_CHECK_INT(decode(dec, &b, &ev, &err), 0);
		bl_gtid_hint_of(&ev.u.gtid, true, &h);
		BL_CHECK_INT(h.kind, BL_HINT_NONE);
	}
	BL_TEST_END();
	bl_decoder_destroy(dec);
}

static bl_gtid_hint
maria(uint64_t id)
{
	bl_gtid_hint h = {BL_HINT_MARIA_GROUP, id, 0};

	return h;
}

static bl_gtid_hint
mysql(uint64_t last_committed, uint64_t seq)
{
	bl_gtid_info g;
	bl_gtid_hint h;

	memset(&g, 0, sizeof(g));
	g.last_committed = last_committed;
	g.sequence_number = seq;
	bl_gtid_hint_of(&g, false, &h);
	return h;
}

static void
test_independent(void)
{
	bl_gtid_hint none = {BL_HINT_NONE, 0, 0};
	bl_gtid_hint a,
				b;

	BL_TEST_BEGIN("gtid/hint-maria-same-group");
	a = maria(17);
	b = maria(17);
	BL_CHECK(bl_gtid_hint_independent(&a, &b));
	BL_TEST_END();

	BL_TEST_BEGIN("gtid/hint-maria-other-group");
	b = maria(18);
	BL_CHECK(!bl_gtid_hint_independent(&a, &b));
	BL_CHECK(!bl_gtid_hint_independent(&b, &a));
	BL_CHECK(!bl_gtid_hint_independent(&a, &none));
	BL_CHECK(!bl_gtid_hint_independent(&none, &a));
	BL_CHECK(!bl_gtid_hint_independent(&none, &none));
	BL_TEST_END();

	BL_TEST_BEGIN("gtid/hint-mysql-clock");
	/* 5 and 6 both committed after 4: independent */
	a = mysql(4, 5);
	b = mysql(4, 6);
	BL_CHECK_INT(a.kind, BL_HINT_MYSQL_CLOCK);
	BL_CHECK(bl_gtid_hint_independent(&a, &b));
	/* 7 may depend on 5 */
	b = mysql(5, 7);
	BL_CHECK(!bl_gtid_hint_independent(&a, &b));
	/* 7 may depend on everything up to 6, 5 included */
	b = mysql(6, 7);
	BL_CHECK(!bl_gtid_hint_independent(&a, &b));
	/* 7 may depend on 4 or before, not on 5 nor 6 */
	b = mysql(4, 7);
	BL_CHECK(bl_gtid_hint_independent(&a, &b));
	a = mysql(3, 6);
	BL_CHECK(bl_gtid_hint_independent(&a, &b));
	/* the one it may depend on itself */
	a = mysql(3, 4);
	BL_CHECK(!bl_gtid_hint_independent(&a, &b));
	/* not in binlog order */
	a = mysql(4, 8);
	BL_CHECK(!bl_gtid_hint_independent(&a, &b));
	/* no clock (before 5.7.5), an impossible one, the other server's */
	BL_CHECK_INT(mysql(0, 0).kind, BL_HINT_NONE);
	BL_CHECK_INT(mysql(6, 6).kind, BL_HINT_NONE);
	a = mysql(4, 5);
	b = maria(5);
	BL_CHECK(!bl_gtid_hint_independent(&a, &b));
	BL_TEST_END();
}

int
main(void)
{
	test_commit_id();
	test_independent();
	BL_TEST_EXIT();
}
