/*
 * bl_decoder.c
 *	  Decoder lifecycle, the common event header, FORMAT_DESCRIPTION and
 *	  checksums, and the dispatch of each event type to its parser.  The
 *	  small control events (QUERY, ROTATE, XID, INTVAR, ...) are parsed
 *	  here; GTIDs, table maps, rows and payloads have files of their own.
 */
#include "bl_decoder_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* QUERY event status variables we read (all others are skipped). */
#define Q_FLAGS2_CODE				0
#define Q_SQL_MODE_CODE				1
#define Q_CATALOG_CODE				2
#define Q_AUTO_INCREMENT			3
#define Q_CHARSET_CODE				4
#define Q_TIME_ZONE_CODE			5
#define Q_CATALOG_NZ_CODE			6
#define Q_LC_TIME_NAMES_CODE		7
#define Q_CHARSET_DATABASE_CODE		8
#define Q_TABLE_MAP_FOR_UPDATE_CODE 9
#define Q_MASTER_DATA_WRITTEN_CODE	10
#define Q_INVOKER					11
#define Q_UPDATED_DB_NAMES			12
#define Q_MICROSECONDS				13

void
bl_decoder_options_init(bl_decoder_options *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->verify_checksum = true;
}

bl_decoder *
bl_decoder_create(const bl_decoder_options *opts)
{
	bl_decoder *dec = calloc(1, sizeof(bl_decoder));

	if (dec == NULL)
		return NULL;
	if (opts)
		dec->opts = *opts;
	else
		bl_decoder_options_init(&dec->opts);
	dec->checksum_alg = BL_CHECKSUM_OFF;
	bl_buf_init(&dec->unzip);
	bl_buf_init(&dec->column_unzip[0]);
	bl_buf_init(&dec->column_unzip[1]);
	bl_buf_init(&dec->payload);
	bl_buf_init(&dec->scratch);
	return dec;
}

void
bl_decoder_destroy(bl_decoder *dec)
{
	if (dec == NULL)
		return;
	bl_table_cache_free(dec);
	bl_buf_free(&dec->unzip);
	bl_buf_free(&dec->column_unzip[0]);
	bl_buf_free(&dec->column_unzip[1]);
	bl_buf_free(&dec->payload);
	bl_buf_free(&dec->scratch);
	free(dec->before_vals);
	free(dec->after_vals);
	bl_zstd_free(dec);
	free(dec);
}

void
bl_decoder_set_file(bl_decoder *dec, const char *name, size_t len)
{
	dec->file_too_long = 0;
	if (len >= sizeof(dec->file))
	{
		dec->file_too_long = len;
		len = sizeof(dec->file) - 1;
	}
	memcpy(dec->file, name, len);
	dec->file[len] = '\0';
}

const char *
bl_decoder_file(const bl_decoder *dec)
{
	return dec->file;
}

void
bl_decoder_expect_checksum(bl_decoder *dec, uint8_t alg)
{
	if (!dec->have_fde)
		dec->checksum_alg = alg;
}

void
bl_decoder_reset_tables(bl_decoder *dec)
{
	bl_table_cache_clear(dec);
}

const bl_gtid_info *
bl_decoder_gtid(const bl_decoder *dec)
{
	return &dec->gtid;
}

const char *
bl_decoder_server_version(const bl_decoder *dec)
{
	return dec->server_version;
}

bool
bl_decoder_is_mariadb(const bl_decoder *dec)
{
	return dec->is_mariadb;
}

uint8_t
bl_decoder_checksum_alg(const bl_decoder *dec)
{
	return dec->checksum_alg;
}

int
bl_decoder_fail(bl_decoder *dec, bl_error *err, uint64_t pos,
				bl_errcode code, const char *fmt,...)
{
	va_list		ap;
	char		msg[sizeof(err->message)];

	if (err == NULL)
		return -1;
	/*
	 * Formatted apart first: an argument may be err->message itself (an
	 * error wrapped with its context), and vsnprintf() into the buffer it
	 * reads from is undefined (it garbles the text).
	 */
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	memcpy(err->message, msg, sizeof(msg));
	err->code = code;
	err->position = pos;
	snprintf(err->file, sizeof(err->file), "%s", dec->file);
	return -1;
}

/*
 * Version "5.6.4-m7-debug-log" -> 50604.  Only the leading digits count.
 */
static uint32_t
parse_version(const char *s)
{
	uint32_t	part[3] = {0, 0, 0};
	int			i = 0;

	while (i < 3 && *s)
	{
		if (*s >= '0' && *s <= '9')
		{
			part[i] = part[i] * 10 + (uint32_t) (*s - '0');
			if (part[i] > 999)
				part[i] = 999;
		}
		else if (*s == '.')
			i++;
		else
			break;
		s++;
	}
	return part[0] * 10000 + part[1] * 100 + part[2];
}

/*
 * The CRC32 of an event of len bytes (its last 4 bytes, the stored
 * checksum, excluded), as the server computed it: before it set the
 * "binlog in use" flag (0x1) of a FORMAT_DESCRIPTION's header, which it
 * clears again on close without updating the checksum.  alg_at, if not
 * NULL, is a byte inside the event to count as `alg` instead.
 */
static bool
fde_crc_matches(const uint8_t *data, size_t len, const uint8_t *alg_at,
				uint8_t alg, uint32_t *computed)
{
	uint32_t	want = (uint32_t) bl_load_le(data + len - BL_CHECKSUM_LEN, 4);
	size_t		at = alg_at ? (size_t) (alg_at - data) : 0;

	for (int flag = 0; flag < 2; flag++)
	{
		uint8_t		hdr[BL_EVENT_HEADER_LEN];
		uint32_t	got;

		if (flag && !(data[17] & 0x01))
			break;
		memcpy(hdr, data, sizeof(hdr));
		if (flag)
			hdr[17] &= (uint8_t) ~0x01;
		got = bl_crc32(0, hdr, sizeof(hdr));
		if (alg_at)
		{
			got = bl_crc32(got, data + sizeof(hdr), at - sizeof(hdr));
			got = bl_crc32(got, &alg, 1);
			got = bl_crc32(got, data + at + 1, len - BL_CHECKSUM_LEN - at - 1);
		}
		else
			got = bl_crc32(got, data + sizeof(hdr), len - sizeof(hdr) - BL_CHECKSUM_LEN);
		if (!flag && computed)
			*computed = got;
		if (got == want)
			return true;
	}
	return false;
}

/*
 * Whether a FORMAT_DESCRIPTION ends with the checksum fields (algorithm
 * byte and CRC32) of a checksum-aware server (MySQL 5.6.1, MariaDB 5.3 and
 * later), which write them whatever the checksum setting.  Decided by the
 * event's layout: its body is the fixed part (57 bytes), one post-header
 * length per event type the server knows, then the 5 bytes of checksum
 * fields, and the FORMAT_DESCRIPTION's own post-header length (the 15th)
 * is the fixed part plus the number of event types.  Every server since
 * MySQL 5.0 writes it so.  Only an event where that count fits neither
 * layout falls back to the server version, which alone would take a
 * checksummed file with a damaged version string for one without
 * checksums, and read every checksum as event data.
 */
static bool
fde_has_checksum_fields(const uint8_t *post, size_t n_post,
						const char *server_version, bool is_mariadb)
{
	uint32_t	version;

	if (n_post >= BL_EV_FORMAT_DESCRIPTION && post[BL_EV_FORMAT_DESCRIPTION - 1] >= 57)
	{
		size_t		ntypes = (size_t) post[BL_EV_FORMAT_DESCRIPTION - 1] - 57;

		if (n_post == ntypes + 1 + BL_CHECKSUM_LEN)
			return true;
		if (n_post == ntypes)
			return false;
	}
	version = parse_version(server_version);
	return is_mariadb ? version >= 50300 : version >= 50601;
}

static int
decode_format_description(bl_decoder *dec, bl_event *ev, const uint8_t *data,
						  size_t len, bl_error *err)
{
	bl_cur		c = bl_cur_make(data + BL_EVENT_HEADER_LEN,
								len - BL_EVENT_HEADER_LEN);
	const uint8_t *ver;
	uint8_t		header_len;
	uint32_t	version;
	bool		has_checksum;
	size_t		n_post;
	const uint8_t *post;
	uint8_t		alg = BL_CHECKSUM_OFF;

	ev->u.fde.binlog_version = bl_cur_u16(&c);
	ver = bl_cur_take(&c, 50);
	ev->u.fde.created = bl_cur_u32(&c);
	header_len = bl_cur_u8(&c);
	if (!bl_cur_ok(&c))
		return bl_decoder_fail(dec, err, ev->pos, BL_ERR_TRUNCATED,
							   "FORMAT_DESCRIPTION event is truncated (%zu bytes)", len);
	if (ev->u.fde.binlog_version != 4)
		return bl_decoder_fail(dec, err, ev->pos, BL_ERR_UNSUPPORTED,
							   "binlog version %u is not supported (MySQL 5.0 or later writes version 4)",
							   ev->u.fde.binlog_version);
	if (header_len != BL_EVENT_HEADER_LEN)
		return bl_decoder_fail(dec, err, ev->pos, BL_ERR_UNSUPPORTED,
							   "event header length %u is not supported (expected 19)",
							   header_len);
	memcpy(ev->u.fde.server_version, ver, 50);
	ev->u.fde.server_version[50] = '\0';

	version = parse_version(ev->u.fde.server_version);
	dec->is_mariadb = strstr(ev->u.fde.server_version, "MariaDB") != NULL ||
		version >= 100000;

	n_post = bl_cur_left(&c);
	has_checksum = fde_has_checksum_fields(c.pos, n_post, ev->u.fde.server_version,
										   dec->is_mariadb);
	if (has_checksum)
	{
		const uint8_t *alg_at;

		if (n_post < 1 + BL_CHECKSUM_LEN)
			return bl_decoder_fail(dec, err, ev->pos, BL_ERR_TRUNCATED,
								   "FORMAT_DESCRIPTION event lacks its checksum fields");
		n_post -= 1 + BL_CHECKSUM_LEN;
		alg_at = data + len - 1 - BL_CHECKSUM_LEN;
		alg = *alg_at;
		if (alg != BL_CHECKSUM_OFF && alg != BL_CHECKSUM_CRC32 &&
			alg != BL_CHECKSUM_UNDEF)
			return bl_decoder_fail(dec, err, ev->pos, BL_ERR_CORRUPT,
								   "unknown binlog checksum algorithm %u in FORMAT_DESCRIPTION event",
								   alg);
		if (alg == BL_CHECKSUM_UNDEF)
			alg = BL_CHECKSUM_OFF;
		if (alg == BL_CHECKSUM_CRC32 && dec->opts.verify_checksum)
		{
			uint32_t	want = (uint32_t) bl_load_le(data + len - BL_CHECKSUM_LEN, 4);
			uint32_t	got = 0;

			if (!fde_crc_matches(data, len, NULL, 0, &got))
				return bl_decoder_fail(dec, err, ev->pos, BL_ERR_CHECKSUM,
									   "checksum mismatch in FORMAT_DESCRIPTION event: stored %08x, computed %08x (the file is damaged)",
									   want, got);
			ev->checksum_verified = true;
		}
		else if (alg == BL_CHECKSUM_OFF && dec->opts.verify_checksum &&
				 fde_crc_matches(data, len, alg_at, BL_CHECKSUM_CRC32, NULL))
		{
			/*
			 * The server checksums its FORMAT_DESCRIPTION whatever the
			 * algorithm; a checksum that is right for the algorithm CRC32
			 * (and wrong for the one stored) means that the algorithm
			 * byte was damaged from CRC32 to OFF: the events' checksums
			 * would be read as their data.
			 */
			return bl_decoder_fail(dec, err, ev->pos, BL_ERR_CHECKSUM,
								   "checksum mismatch in FORMAT_DESCRIPTION event: its checksum algorithm byte says OFF, but its checksum is that of the same event with algorithm CRC32 (the file is damaged)");
		}
		ev->body_len = len - BL_EVENT_HEADER_LEN - BL_CHECKSUM_LEN;
	}
	if (n_post > 255)
		n_post = 255;
	post = bl_cur_take(&c, n_post);
	memset(dec->post_header_len, 0, sizeof(dec->post_header_len));
	if (post)
		memcpy(dec->post_header_len + 1, post, n_post);
	/*
	 * XID events have no post-header in any released server; a non-zero
	 * length there is the event numbering of a pre-release (5.1 alpha /
	 * 5.2 development) server, whose events we cannot interpret.
	 */
	if (n_post >= BL_EV_XID && dec->post_header_len[BL_EV_XID] != 0)
		return bl_decoder_fail(dec, err, ev->pos, BL_ERR_UNSUPPORTED,
							   "binlog written by pre-release server %s uses an event numbering of its own and cannot be decoded",
							   ev->u.fde.server_version);
	dec->binlog_version = ev->u.fde.binlog_version;
	memcpy(dec->server_version, ev->u.fde.server_version, sizeof(dec->server_version));
	dec->checksum_alg = alg;
	dec->have_fde = true;
	memset(&dec->gtid, 0, sizeof(dec->gtid));	/* a new file: no transaction */
	ev->u.fde.checksum_alg = alg;
	return 0;
}

/*
 * Walk the status variables of a QUERY event for the ones we report.
 * Unknown codes end the walk: their length is not self-described.
 */
static void
parse_query_status(bl_cur c, bl_event *ev)
{
	while (bl_cur_left(&c) > 0 && bl_cur_ok(&c))
	{
		uint8_t		code = bl_cur_u8(&c);

		switch (code)
		{
			case Q_FLAGS2_CODE:
			case Q_MASTER_DATA_WRITTEN_CODE:
				bl_cur_skip(&c, 4);
				break;
			case Q_SQL_MODE_CODE:
			case Q_TABLE_MAP_FOR_UPDATE_CODE:
				bl_cur_skip(&c, 8);
				break;
			case Q_CATALOG_CODE:
				bl_cur_skip(&c, (size_t) bl_cur_u8(&c) + 1);
				break;
			case Q_AUTO_INCREMENT:
				bl_cur_skip(&c, 4);
				break;
			case Q_CHARSET_CODE:
				ev->u.query.charset_client = bl_cur_u16(&c);
				bl_cur_skip(&c, 2);	/* collation_connection */
				ev->u.query.collation_server = bl_cur_u16(&c);
				break;
			case Q_TIME_ZONE_CODE:
			case Q_CATALOG_NZ_CODE:
				bl_cur_skip(&c, bl_cur_u8(&c));
				break;
			case Q_LC_TIME_NAMES_CODE:
			case Q_CHARSET_DATABASE_CODE:
				bl_cur_skip(&c, 2);
				break;
			case Q_INVOKER:
				bl_cur_skip(&c, bl_cur_u8(&c));
				bl_cur_skip(&c, bl_cur_u8(&c));
				break;
			case Q_MICROSECONDS:
				bl_cur_skip(&c, 3);
				break;
			default:
				return;
		}
	}
}

static int
decode_query(bl_decoder *dec, bl_event *ev, bl_error *err)
{
	bl_cur		c = bl_cur_make(ev->body, ev->body_len);
	uint8_t		phl = dec->post_header_len[ev->type];
	uint8_t		db_len;
	uint16_t	status_len = 0;
	const uint8_t *db;

	if (phl < 11)
		phl = 11;
	ev->u.query.charset_client = 0;	/* set only by a Q_CHARSET_CODE */
	ev->u.query.collation_server = 0;
	ev->u.query.thread_id = bl_cur_u32(&c);
	ev->u.query.exec_time = bl_cur_u32(&c);
	db_len = bl_cur_u8(&c);
	ev->u.query.error_code = bl_cur_u16(&c);
	if (phl >= 13)
	{
		status_len = bl_cur_u16(&c);
		bl_cur_skip(&c, phl - 13);
	}
	if (status_len > 0)
	{
		bl_cur		st = bl_cur_sub(&c, status_len);

		if (bl_cur_ok(&st))
			parse_query_status(st, ev);
	}
	db = bl_cur_take(&c, (size_t) db_len + 1);
	if (!bl_cur_ok(&c))
		return bl_decoder_fail(dec, err, ev->pos, BL_ERR_TRUNCATED,
							   "QUERY event is truncated");
	ev->u.query.db.ptr = (const char *) db;
	ev->u.query.db.len = db_len;
	if (ev->type == BL_EV_MARIA_QUERY_COMPRESSED)
	{
		if (bl_maria_uncompress(c.pos, bl_cur_left(&c), &dec->unzip, err) != 0)
			return bl_decoder_fail(dec, err, ev->pos, BL_ERR_CORRUPT,
								   "compressed QUERY event: %s", err->message);
		ev->u.query.sql.ptr = dec->unzip.data;
		ev->u.query.sql.len = (uint32_t) dec->unzip.len;
	}
	else
	{
		ev->u.query.sql.ptr = (const char *) c.pos;
		ev->u.query.sql.len = (uint32_t) bl_cur_left(&c);
	}
	return 0;
}

static int
decode_payload(bl_decoder *dec, bl_event *ev, bl_error *err)
{
	bl_cur		c = bl_cur_make(ev->body, ev->body_len);
	uint64_t	compression = 0;
	uint64_t	size = 0;
	uint64_t	usize = 0;

	/* type, length, value triples up to the end mark (type 0) */
	for (;;)
	{
		uint64_t	field = bl_cur_packed(&c);
		uint64_t	flen;
		bl_cur		fc;

		if (!bl_cur_ok(&c))
			return bl_decoder_fail(dec, err, ev->pos, BL_ERR_TRUNCATED,
								   "TRANSACTION_PAYLOAD header is truncated");
		if (field == 0)
			break;
		flen = bl_cur_packed(&c);
		fc = bl_cur_sub(&c, (size_t) flen);
		if (!bl_cur_ok(&c))
			return bl_decoder_fail(dec, err, ev->pos, BL_ERR_TRUNCATED,
								   "TRANSACTION_PAYLOAD header field is truncated");
		switch (field)
		{
			case 1:
				size = bl_cur_packed(&fc);
				break;
			case 2:
				compression = bl_cur_packed(&fc);
				break;
			case 3:
				usize = bl_cur_packed(&fc);
				break;
			default:
				break;			/* unknown fields are skipped by length */
		}
	}
	if (size != 0 && size != bl_cur_left(&c))
		return bl_decoder_fail(dec, err, ev->pos, BL_ERR_CORRUPT,
							   "TRANSACTION_PAYLOAD declares %llu payload bytes but carries %zu",
							   (unsigned long long) size, bl_cur_left(&c));
	ev->u.payload.compression = (uint32_t) compression;
	ev->u.payload.uncompressed_size = usize;
	bl_buf_reset(&dec->payload);
	if (compression == 0)
	{
		if (bl_zstd_decompress(dec, c.pos, bl_cur_left(&c), usize,
							   &dec->payload, err) != 0)
			return bl_decoder_fail(dec, err, ev->pos, BL_ERR_CORRUPT,
								   "TRANSACTION_PAYLOAD: %s", err->message);
	}
	else if (compression == 255)
		bl_buf_append(&dec->payload, c.pos, bl_cur_left(&c));
	else
		return bl_decoder_fail(dec, err, ev->pos, BL_ERR_UNSUPPORTED,
							   "TRANSACTION_PAYLOAD compression type %llu is not supported",
							   (unsigned long long) compression);
	if (bl_buf_failed(&dec->payload))
		return bl_decoder_fail(dec, err, ev->pos, BL_ERR_NOMEM,
							   "out of memory decompressing TRANSACTION_PAYLOAD");
	ev->u.payload.data = (const uint8_t *) dec->payload.data;
	ev->u.payload.len = dec->payload.len;
	dec->payload_off = 0;
	dec->payload_pos = ev->pos;
	return 0;
}

static int
decode_body(bl_decoder *dec, bl_event *ev, bl_error *err)
{
	bl_cur		c = bl_cur_make(ev->body, ev->body_len);

	switch (ev->type)
	{
		case BL_EV_QUERY:
		case BL_EV_MARIA_QUERY_COMPRESSED:
			return decode_query(dec, ev, err);

		case BL_EV_ROTATE:
			{
				uint8_t		phl = dec->have_fde ? dec->post_header_len[BL_EV_ROTATE] : 8;

				ev->u.rotate.position = phl >= 8 ? bl_cur_u64(&c) : 4;
				ev->u.rotate.file.ptr = (const char *) c.pos;
				ev->u.rotate.file.len = (uint32_t) bl_cur_left(&c);
				ev->u.rotate.fake = ev->timestamp == 0 ||
					(ev->flags & BL_LOG_EVENT_ARTIFICIAL_F) != 0;
				break;
			}

		case BL_EV_XID:
			ev->u.xid.xid = bl_cur_u64(&c);
			break;

		case BL_EV_INTVAR:
			ev->u.intvar.kind = bl_cur_u8(&c);
			ev->u.intvar.value = bl_cur_u64(&c);
			break;

		case BL_EV_RAND:
			ev->u.rand.seed1 = bl_cur_u64(&c);
			ev->u.rand.seed2 = bl_cur_u64(&c);
			break;

		case BL_EV_USER_VAR:
			{
				uint32_t	nlen = bl_cur_u32(&c);

				ev->u.user_var.name.ptr = (const char *) bl_cur_take(&c, nlen);
				ev->u.user_var.name.len = nlen;
				ev->u.user_var.is_null = bl_cur_u8(&c) != 0;
				if (!ev->u.user_var.is_null)
				{
					uint32_t	vlen;

					ev->u.user_var.value_type = bl_cur_u8(&c);
					ev->u.user_var.charset = bl_cur_u32(&c);
					vlen = bl_cur_u32(&c);
					ev->u.user_var.value.ptr = (const char *) bl_cur_take(&c, vlen);
					ev->u.user_var.value.len = vlen;
				}
				break;
			}

		case BL_EV_INCIDENT:
			{
				uint8_t		mlen;

				ev->u.incident.kind = bl_cur_u16(&c);
				mlen = bl_cur_left(&c) > 0 ? bl_cur_u8(&c) : 0;
				ev->u.incident.message.ptr = (const char *) bl_cur_take(&c, mlen);
				ev->u.incident.message.len = mlen;
				break;
			}

		case BL_EV_ROWS_QUERY:
			/* one length byte (truncated to 255), then the whole text */
			bl_cur_skip(&c, 1);
			ev->u.annotate.sql.ptr = (const char *) c.pos;
			ev->u.annotate.sql.len = (uint32_t) bl_cur_left(&c);
			break;

		case BL_EV_MARIA_ANNOTATE_ROWS:
			ev->u.annotate.sql.ptr = (const char *) c.pos;
			ev->u.annotate.sql.len = (uint32_t) bl_cur_left(&c);
			break;

		case BL_EV_MARIA_BINLOG_CHECKPOINT:
			{
				uint32_t	flen = bl_cur_u32(&c);

				ev->u.checkpoint.file.ptr = (const char *) bl_cur_take(&c, flen);
				ev->u.checkpoint.file.len = flen;
				break;
			}

		case BL_EV_HEARTBEAT:
			ev->u.heartbeat.file.ptr = (const char *) c.pos;
			ev->u.heartbeat.file.len = (uint32_t) bl_cur_left(&c);
			ev->u.heartbeat.position = ev->next_pos;
			break;

		case BL_EV_HEARTBEAT_V2:
			return bl_decode_heartbeat_v2(dec, ev, err);

		case BL_EV_XA_PREPARE:
			{
				uint32_t	glen,
							blen;

				ev->u.xa_prepare.one_phase = bl_cur_u8(&c) != 0;
				ev->u.xa_prepare.format_id = bl_cur_u32(&c);
				glen = bl_cur_u32(&c);
				blen = bl_cur_u32(&c);
				if (glen > 64 || blen > 64)
					return bl_decoder_fail(dec, err, ev->pos, BL_ERR_CORRUPT,
										   "XA_PREPARE event has impossible xid lengths %u/%u",
										   glen, blen);
				ev->u.xa_prepare.gtrid.ptr = (const char *) bl_cur_take(&c, glen);
				ev->u.xa_prepare.gtrid.len = glen;
				ev->u.xa_prepare.bqual.ptr = (const char *) bl_cur_take(&c, blen);
				ev->u.xa_prepare.bqual.len = blen;
				break;
			}

		case BL_EV_GTID:
		case BL_EV_ANONYMOUS_GTID:
		case BL_EV_GTID_TAGGED:
		case BL_EV_MARIA_GTID:
			return bl_decode_gtid_event(dec, ev, err);

		case BL_EV_PREVIOUS_GTIDS:
		case BL_EV_MARIA_GTID_LIST:
			return bl_decode_gtid_set_event(dec, ev, err);

		case BL_EV_TABLE_MAP:
			return bl_decode_table_map(dec, ev, err);

		case BL_EV_TRANSACTION_PAYLOAD:
			if (ev->in_payload)
				return bl_decoder_fail(dec, err, ev->pos, BL_ERR_CORRUPT,
									   "nested TRANSACTION_PAYLOAD event");
			return decode_payload(dec, ev, err);

		case BL_EV_MARIA_START_ENCRYPTION:
			return bl_decoder_fail(dec, err, ev->pos, BL_ERR_UNSUPPORTED,
								   "binlog file is encrypted (START_ENCRYPTION event); read it through the replication protocol, where the server decrypts it");

		default:
			if (bl_event_is_rows(ev->type))
				return bl_decode_rows_event(dec, ev, err);
			/* everything else is known-and-skipped or unknown */
			return 0;
	}
	if (!bl_cur_ok(&c))
		return bl_decoder_fail(dec, err, ev->pos, BL_ERR_TRUNCATED,
							   "%s event is truncated (%zu body bytes)",
							   bl_event_type_name(ev->type), ev->body_len);
	return 0;
}

/* Fill the common header fields; data holds at least 19 bytes. */
static void
read_header(bl_event *ev, const uint8_t *data)
{
	ev->timestamp = (uint32_t) bl_load_le(data, 4);
	ev->type = data[4];
	ev->server_id = (uint32_t) bl_load_le(data + 5, 4);
	ev->size = (uint32_t) bl_load_le(data + 9, 4);
	ev->next_pos = (uint32_t) bl_load_le(data + 13, 4);
	ev->flags = (uint16_t) bl_load_le(data + 17, 2);
}

int
bl_decode_event(bl_decoder *dec, const uint8_t *data, size_t len,
				uint64_t pos, bl_event *ev, bl_error *err)
{
	bool		has_crc;

	memset(ev, 0, offsetof(bl_event, u));
	ev->pos = pos;
	if (BL_UNLIKELY(dec->file_too_long))
		return bl_decoder_fail(dec, err, pos, BL_ERR_UNSUPPORTED,
							   "binlog file name of %zu bytes is too long (at most %d bytes are supported)",
							   dec->file_too_long, BL_FILE_NAME_MAX - 1);
	if (len < BL_EVENT_HEADER_LEN)
		return bl_decoder_fail(dec, err, pos, BL_ERR_TRUNCATED,
							   "event is truncated: %zu bytes, a header needs 19", len);
	read_header(ev, data);
	if (ev->size != len)
		return bl_decoder_fail(dec, err, pos, ev->size > len ? BL_ERR_TRUNCATED : BL_ERR_CORRUPT,
							   "event length %u in the header does not match the %zu bytes read",
							   ev->size, len);
	ev->body = data + BL_EVENT_HEADER_LEN;
	ev->body_len = len - BL_EVENT_HEADER_LEN;

	if (ev->type == BL_EV_FORMAT_DESCRIPTION)
	{
		if (decode_format_description(dec, ev, data, len, err) != 0)
			return -1;
		return 0;
	}

	has_crc = dec->checksum_alg == BL_CHECKSUM_CRC32;
	if (has_crc)
	{
		uint32_t	want;
		uint32_t	got;

		if (ev->body_len < BL_CHECKSUM_LEN)
			return bl_decoder_fail(dec, err, pos, BL_ERR_TRUNCATED,
								   "%s event is too short to carry its checksum",
								   bl_event_type_name(ev->type) ? bl_event_type_name(ev->type) : "unknown");
		ev->body_len -= BL_CHECKSUM_LEN;
		if (dec->opts.verify_checksum)
		{
			want = (uint32_t) bl_load_le(data + len - BL_CHECKSUM_LEN, 4);
			got = bl_crc32(0, data, len - BL_CHECKSUM_LEN);
			if (want != got)
			{
				/*
				 * Before its FORMAT_DESCRIPTION, a server may send its fake
				 * ROTATE without a checksum; accept that one event as is.
				 */
				if (!dec->have_fde && ev->type == BL_EV_ROTATE)
					ev->body_len += BL_CHECKSUM_LEN;
				else
					return bl_decoder_fail(dec, err, pos, BL_ERR_CHECKSUM,
										   "checksum mismatch in %s event: stored %08x, computed %08x",
										   bl_event_type_name(ev->type) ? bl_event_type_name(ev->type) : "unknown",
										   want, got);
			}
			else
				ev->checksum_verified = true;
		}
	}
	if (!dec->have_fde && ev->type != BL_EV_ROTATE &&
		ev->type != BL_EV_HEARTBEAT && ev->type != BL_EV_HEARTBEAT_V2 &&
		ev->type != BL_EV_START_V3)
		return bl_decoder_fail(dec, err, pos, BL_ERR_CORRUPT,
							   "%s event before any FORMAT_DESCRIPTION event",
							   bl_event_type_name(ev->type) ? bl_event_type_name(ev->type) : "unknown");
	if (ev->type == BL_EV_START_V3)
		return bl_decoder_fail(dec, err, pos, BL_ERR_UNSUPPORTED,
							   "binlog version 1 or 3 (MySQL 4.x) is not supported");
	return decode_body(dec, ev, err);
}

int
bl_payload_next(bl_decoder *dec, bl_event *ev, bl_error *err)
{
	size_t		left;
	const uint8_t *p;
	uint32_t	size;

	if (dec->payload_off >= dec->payload.len)
		return 0;
	left = dec->payload.len - dec->payload_off;
	p = (const uint8_t *) dec->payload.data + dec->payload_off;
	if (left < BL_EVENT_HEADER_LEN)
		return bl_decoder_fail(dec, err, dec->payload_pos, BL_ERR_TRUNCATED,
							   "TRANSACTION_PAYLOAD ends inside an event header at offset %zu",
							   dec->payload_off);
	size = (uint32_t) bl_load_le(p + 9, 4);
	if (size < BL_EVENT_HEADER_LEN || size > left)
		return bl_decoder_fail(dec, err, dec->payload_pos, BL_ERR_CORRUPT,
							   "TRANSACTION_PAYLOAD holds an event of impossible length %u at offset %zu",
							   size, dec->payload_off);
	dec->payload_off += size;

	memset(ev, 0, offsetof(bl_event, u));
	ev->pos = dec->payload_pos;
	ev->in_payload = true;
	read_header(ev, p);
	ev->body = p + BL_EVENT_HEADER_LEN;
	ev->body_len = size - BL_EVENT_HEADER_LEN;	/* inner events carry no
												 * checksum */
	if (ev->type == BL_EV_FORMAT_DESCRIPTION)
		return bl_decoder_fail(dec, err, ev->pos, BL_ERR_CORRUPT,
							   "FORMAT_DESCRIPTION inside a TRANSACTION_PAYLOAD");
	if (decode_body(dec, ev, err) != 0)
		return -1;
	return 1;
}
