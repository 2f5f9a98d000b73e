/*
 * bl_gtid.c
 *	  GTID events of both servers and the GTID sets that open each binlog:
 *	  MySQL GTID / ANONYMOUS_GTID / GTID_TAGGED and PREVIOUS_GTIDS (with
 *	  tags), MariaDB GTID and GTID_LIST.  Also HEARTBEAT_V2, which shares
 *	  the MySQL serialization-library encoding with GTID_TAGGED.
 *
 * The text forms are the ones the servers print: "uuid:gno",
 * "uuid:tag:gno", intervals "uuid:1-5:7" and MariaDB "domain-server-seq".
 */
#include "bl_decoder_int.h"

#include <stdio.h>
#include <string.h>

/* MariaDB GTID event flags */
#define MARIA_FL_STANDALONE		0x01
#define MARIA_FL_GROUP_COMMIT_ID 0x02
#define MARIA_FL_TRANSACTIONAL	0x04
#define MARIA_FL_ALLOW_PARALLEL 0x08
#define MARIA_FL_DDL			0x20
#define MARIA_FL_PREPARED_XA	0x40
#define MARIA_FL_COMPLETED_XA	0x80
/* MariaDB 10.8+: extra flags byte follows */
#define MARIA_FL_EXTRA_MULTI_ENGINE 0x01
#define MARIA_FL_START_ALTER	0x02
#define MARIA_FL_COMMIT_ALTER	0x04
#define MARIA_FL_ROLLBACK_ALTER 0x08

static void
format_uuid(char *out, const uint8_t *u)
{
	static const char hex[] = "0123456789abcdef";
	int			o = 0;

	for (int i = 0; i < 16; i++)
	{
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		out[o++] = hex[u[i] >> 4];
		out[o++] = hex[u[i] & 15];
	}
	out[o] = '\0';
}

/*
 * Variable-length unsigned integer of MySQL's serialization library: the
 * number n of trailing one bits of the first byte says n more bytes
 * follow; the value is the little-endian whole shifted right by n + 1
 * (a first byte of 0xff means the value is the next 8 bytes).
 */
static uint64_t
read_varlen(bl_cur *c)
{
	const uint8_t *first = bl_cur_take(c, 1);
	int			extra = 0;
	uint64_t	v;
	const uint8_t *rest;

	if (first == NULL)
		return 0;
	while (extra < 8 && (first[0] >> extra) & 1)
		extra++;
	if (extra == 8)
		return bl_cur_u64(c);
	rest = bl_cur_take(c, (size_t) extra);
	if (rest == NULL)
		return 0;
	v = first[0];
	for (int i = 0; i < extra; i++)
		v |= (uint64_t) rest[i] << (8 * (i + 1));
	return v >> (extra + 1);
}

static int64_t
read_varlen_signed(bl_cur *c)
{
	uint64_t	u = read_varlen(c);

	return (u & 1) ? -(int64_t) (u >> 1) - 1 : (int64_t) (u >> 1);
}

/*
 * GTID_TAGGED: version byte, then a message: payload size, last
 * non-ignorable field id, then (field id, value) pairs.
 */
static int
decode_gtid_tagged(bl_decoder *dec, bl_event *ev, bl_error *err)
{
	bl_cur		c = bl_cur_make(ev->body, ev->body_len);
	bl_gtid_info *g = &dec->gtid;
	uint8_t		version = bl_cur_u8(&c);
	uint64_t	size;
	uint64_t	last_non_ignorable;
	size_t		consumed;
	uint8_t		sid[16] = {0};
	char		tag[33] = "";
	int64_t		gno = 0;
	char		uuid[37];
	bl_cur		f;

	if (version != 2)
		return bl_decoder_fail(dec, err, ev->pos, BL_ERR_UNSUPPORTED,
							   "GTID_TAGGED event serialization version %u is not supported",
							   version);
	size = read_varlen(&c);
	last_non_ignorable = read_varlen(&c);
	consumed = (size_t) (c.pos - ev->body);
	if (!bl_cur_ok(&c) || size < consumed || size - consumed > bl_cur_left(&c))
		return bl_decoder_fail(dec, err, ev->pos, BL_ERR_CORRUPT,
							   "GTID_TAGGED event has an impossible payload size");
	f = bl_cur_sub(&c, (size_t) (size - consumed));
	while (bl_cur_left(&f) > 0 && bl_cur_ok(&f))
	{
		uint64_t	id = read_varlen(&f);

		switch (id)
		{
			case 0:
				g->flags = (uint8_t) read_varlen(&f);
				break;
			case 1:
				for (int i = 0; i < 16; i++)
					sid[i] = (uint8_t) read_varlen(&f);
				break;
			case 2:
				gno = read_varlen_signed(&f);
				break;
			case 3:
				{
					uint64_t	tlen = read_varlen(&f);
					const uint8_t *t;

					if (tlen > 32)
						return bl_decoder_fail(dec, err, ev->pos, BL_ERR_CORRUPT,
											   "GTID tag of %llu bytes (at most 32 are allowed)",
											   (unsigned long long) tlen);
					t = bl_cur_take(&f, (size_t) tlen);
					if (t)
					{
						memcpy(tag, t, (size_t) tlen);
						tag[tlen] = '\0';
					}
					break;
				}
			case 4:
				g->last_committed = (uint64_t) read_varlen_signed(&f);
				break;
			case 5:
				g->sequence_number = (uint64_t) read_varlen_signed(&f);
				break;
			case 6:
				g->commit_ts_us = read_varlen(&f);
				break;
			case 7:
				g->original_commit_ts_us = read_varlen(&f);
				break;
			case 8:
				g->transaction_length = read_varlen(&f);
				break;
			case 9:
			case 10:
			case 11:
				(void) read_varlen(&f);
				break;
			default:
				if (id <= last_non_ignorable)
					return bl_decoder_fail(dec, err, ev->pos, BL_ERR_UNSUPPORTED,
										   "GTID_TAGGED event has unknown mandatory field %llu",
										   (unsigned long long) id);
				/* an ignorable field of unknown size ends what we can read */
				bl_cur_skip(&f, bl_cur_left(&f));
				break;
		}
	}
	if (!bl_cur_ok(&f))
		return bl_decoder_fail(dec, err, ev->pos, BL_ERR_TRUNCATED,
							   "GTID_TAGGED event is truncated");
	format_uuid(uuid, sid);
	if (tag[0])
		snprintf(g->text, sizeof(g->text), "%s:%s:%lld", uuid, tag, (long long) gno);
	else
		snprintf(g->text, sizeof(g->text), "%s:%lld", uuid, (long long) gno);
	g->seq_no = (uint64_t) gno;
	return 0;
}

int
bl_decode_gtid_event(bl_decoder *dec, bl_event *ev, bl_error *err)
{
	bl_cur		c = bl_cur_make(ev->body, ev->body_len);
	bl_gtid_info *g = &dec->gtid;

	memset(g, 0, sizeof(*g));
	if (ev->type == BL_EV_GTID_TAGGED)
	{
		if (decode_gtid_tagged(dec, ev, err) != 0)
			return -1;
	}
	else if (ev->type == BL_EV_MARIA_GTID)
	{
		uint8_t		flags;

		g->seq_no = bl_cur_u64(&c);
		g->domain_id = bl_cur_u32(&c);
		flags = bl_cur_u8(&c);
		if (!bl_cur_ok(&c))
			return bl_decoder_fail(dec, err, ev->pos, BL_ERR_TRUNCATED,
								   "MARIA_GTID event is truncated");
		g->flags = flags;

		/*
		 * Then the group commit id (FL_GROUP_COMMIT_ID), or the XID of an
		 * XA transaction, or 6 unused bytes; an extra flags byte and its
		 * fields may follow (10.8+), not needed here.
		 */
		if (flags & MARIA_FL_GROUP_COMMIT_ID)
		{
			g->commit_id = bl_cur_u64(&c);
			if (!bl_cur_ok(&c))
				return bl_decoder_fail(dec, err, ev->pos, BL_ERR_TRUNCATED,
									   "MARIA_GTID event with a group commit id is truncated");
		}
		g->standalone = (flags & MARIA_FL_STANDALONE) != 0;
		g->is_ddl = (flags & MARIA_FL_DDL) != 0;
		snprintf(g->text, sizeof(g->text), "%u-%u-%llu", g->domain_id,
				 ev->server_id, (unsigned long long) g->seq_no);
		g->commit_ts_us = (uint64_t) ev->timestamp * 1000000;
	}
	else
	{
		const uint8_t *sid;
		uint64_t	gno;

		g->flags = bl_cur_u8(&c);
		sid = bl_cur_take(&c, 16);
		gno = bl_cur_u64(&c);
		if (!bl_cur_ok(&c))
			return bl_decoder_fail(dec, err, ev->pos, BL_ERR_TRUNCATED,
								   "%s event is truncated", bl_event_type_name(ev->type));
		g->seq_no = gno;
		/* logical clock (5.7.5+), commit timestamps (8.0.1+), length */
		if (bl_cur_left(&c) >= 17 && c.pos[0] == 2)
		{
			bl_cur_skip(&c, 1);
			g->last_committed = bl_cur_u64(&c);
			g->sequence_number = bl_cur_u64(&c);
			if (bl_cur_left(&c) >= 7)
			{
				uint64_t	ts = bl_cur_uint(&c, 7);

				if (ts & (UINT64_C(1) << 55))
				{
					g->commit_ts_us = ts & ~(UINT64_C(1) << 55);
					g->original_commit_ts_us = bl_cur_uint(&c, 7);
				}
				else
					g->commit_ts_us = g->original_commit_ts_us = ts;
				if (bl_cur_left(&c) > 0)
					g->transaction_length = bl_cur_packed(&c);
			}
		}
		if (g->commit_ts_us == 0)
			g->commit_ts_us = (uint64_t) ev->timestamp * 1000000;
		if (ev->type == BL_EV_GTID)
		{
			char		uuid[37];

			format_uuid(uuid, sid);
			snprintf(g->text, sizeof(g->text), "%s:%llu", uuid,
					 (unsigned long long) gno);
		}
		/* ANONYMOUS_GTID leaves text empty */
	}
	ev->u.gtid = *g;
	return 0;
}

void
bl_gtid_hint_of(const bl_gtid_info *g, bool mariadb, bl_gtid_hint *hint)
{
	memset(hint, 0, sizeof(*hint));
	if (mariadb)
	{
		/*
		 * A group commit proves independence only between transactional
		 * groups (a non-transactional change holds no row lock until the
		 * commit), and not for XA (prepared in a group of its own) nor DDL;
		 * a group whose session set skip_parallel_replication lacks
		 * FL_ALLOW_PARALLEL, and its source wants it applied alone.
		 */
		if ((g->flags & MARIA_FL_GROUP_COMMIT_ID) && g->commit_id != 0 &&
			(g->flags & MARIA_FL_TRANSACTIONAL) && (g->flags & MARIA_FL_ALLOW_PARALLEL) &&
			!(g->flags & (MARIA_FL_PREPARED_XA | MARIA_FL_COMPLETED_XA)) &&
			!g->standalone && !g->is_ddl)
		{
			hint->kind = BL_HINT_MARIA_GROUP;
			hint->a = g->commit_id;
		}
	}
	else if (g->sequence_number > 0 && g->last_committed < g->sequence_number)
	{
		hint->kind = BL_HINT_MYSQL_CLOCK;
		hint->a = g->last_committed;
		hint->b = g->sequence_number;
	}
}

bool
bl_gtid_hint_independent(const bl_gtid_hint *earlier, const bl_gtid_hint *later)
{
	if (earlier->kind != later->kind)
		return false;
	switch (earlier->kind)
	{
		case BL_HINT_MARIA_GROUP:
			return earlier->a != 0 && earlier->a == later->a;
		case BL_HINT_MYSQL_CLOCK:
			/* earlier is after all later may depend on, and before later */
			return earlier->b > later->a && earlier->b < later->b;
		default:
			return false;
	}
}

int
bl_decode_gtid_set_event(bl_decoder *dec, bl_event *ev, bl_error *err)
{
	bl_cur		c = bl_cur_make(ev->body, ev->body_len);
	bl_buf	   *out = &dec->scratch;

	bl_buf_reset(out);
	if (ev->type == BL_EV_MARIA_GTID_LIST)
	{
		uint32_t	word = bl_cur_u32(&c);
		uint32_t	count = word & 0x0fffffff;

		if ((uint64_t) count * 16 > bl_cur_left(&c))
			return bl_decoder_fail(dec, err, ev->pos, BL_ERR_CORRUPT,
								   "MARIA_GTID_LIST announces %u GTIDs in %zu bytes",
								   count, bl_cur_left(&c));
		for (uint32_t i = 0; i < count; i++)
		{
			uint32_t	domain = bl_cur_u32(&c);
			uint32_t	server = bl_cur_u32(&c);
			uint64_t	seq = bl_cur_u64(&c);

			bl_buf_printf(out, "%s%u-%u-%llu", i ? "," : "", domain, server,
						  (unsigned long long) seq);
		}
	}
	else
	{
		/*
		 * PREVIOUS_GTIDS.  The 8-byte count is, since tagged GTIDs, a
		 * format byte, a 6-byte count and the format byte again.
		 */
		uint64_t	word = bl_cur_u64(&c);
		bool		tagged = (word & 0xff) == 1 && (word >> 56) == 1;
		uint64_t	nsids = tagged ? (word >> 8) & UINT64_C(0xffffffffffff) : word;

		if (nsids > bl_cur_left(&c) / 24 + 1)
			return bl_decoder_fail(dec, err, ev->pos, BL_ERR_CORRUPT,
								   "PREVIOUS_GTIDS announces %llu server ids in %zu bytes",
								   (unsigned long long) nsids, bl_cur_left(&c));
		for (uint64_t i = 0; i < nsids && bl_cur_ok(&c); i++)
		{
			const uint8_t *sid = bl_cur_take(&c, 16);
			char		uuid[37];
			uint64_t	nint;

			if (sid == NULL)
				break;
			format_uuid(uuid, sid);
			bl_buf_printf(out, "%s%s", i ? "," : "", uuid);
			if (tagged)
			{
				uint64_t	tlen = read_varlen(&c);
				const uint8_t *t;

				if (tlen > 32)
					return bl_decoder_fail(dec, err, ev->pos, BL_ERR_CORRUPT,
										   "GTID tag of %llu bytes in PREVIOUS_GTIDS",
										   (unsigned long long) tlen);
				t = bl_cur_take(&c, (size_t) tlen);
				if (t && tlen > 0)
				{
					bl_buf_putc(out, ':');
					bl_buf_append(out, t, (size_t) tlen);
				}
			}
			nint = bl_cur_u64(&c);
			if (nint > bl_cur_left(&c) / 16)
				return bl_decoder_fail(dec, err, ev->pos, BL_ERR_CORRUPT,
									   "PREVIOUS_GTIDS announces %llu intervals in %zu bytes",
									   (unsigned long long) nint, bl_cur_left(&c));
			for (uint64_t k = 0; k < nint; k++)
			{
				uint64_t	start = bl_cur_u64(&c);
				uint64_t	end = bl_cur_u64(&c);	/* exclusive */

				if (end == start + 1)
					bl_buf_printf(out, ":%llu", (unsigned long long) start);
				else
					bl_buf_printf(out, ":%llu-%llu", (unsigned long long) start,
								  (unsigned long long) (end - 1));
			}
		}
	}
	if (!bl_cur_ok(&c))
		return bl_decoder_fail(dec, err, ev->pos, BL_ERR_TRUNCATED,
							   "%s event is truncated", bl_event_type_name(ev->type));
	if (bl_buf_failed(out))
		return bl_decoder_fail(dec, err, ev->pos, BL_ERR_NOMEM, "out of memory");
	ev->u.gtid_set.text.ptr = out->data ? out->data : "";
	ev->u.gtid_set.text.len = (uint32_t) out->len;
	return 0;
}

int
bl_decode_heartbeat_v2(bl_decoder *dec, bl_event *ev, bl_error *err)
{
	bl_cur		c = bl_cur_make(ev->body, ev->body_len);
	uint8_t		version = bl_cur_u8(&c);
	uint64_t	size;
	size_t		consumed;
	bl_cur		f;

	(void) version;
	/* both fields are optional: the event's union is not cleared */
	ev->u.heartbeat.file.ptr = NULL;
	ev->u.heartbeat.file.len = 0;
	ev->u.heartbeat.position = 0;
	size = read_varlen(&c);
	(void) read_varlen(&c);		/* last non-ignorable field id */
	consumed = (size_t) (c.pos - ev->body);
	if (!bl_cur_ok(&c) || size < consumed || size - consumed > bl_cur_left(&c))
		return bl_decoder_fail(dec, err, ev->pos, BL_ERR_CORRUPT,
							   "HEARTBEAT_V2 event has an impossible payload size");
	f = bl_cur_sub(&c, (size_t) (size - consumed));
	while (bl_cur_left(&f) > 0 && bl_cur_ok(&f))
	{
		uint64_t	id = read_varlen(&f);

		if (id == 0)
		{
			uint64_t	len = read_varlen(&f);

			ev->u.heartbeat.file.ptr = (const char *) bl_cur_take(&f, (size_t) len);
			ev->u.heartbeat.file.len = (uint32_t) len;
		}
		else if (id == 1)
			ev->u.heartbeat.position = read_varlen(&f);
		else
			break;
	}
	if (!bl_cur_ok(&f))
		return bl_decoder_fail(dec, err, ev->pos, BL_ERR_TRUNCATED,
							   "HEARTBEAT_V2 event is truncated");
	return 0;
}
