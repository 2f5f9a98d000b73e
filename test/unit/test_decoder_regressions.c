/*
 * test_decoder_regressions.c
 *	  Regression tests of decoder bugs found by fuzzing (test/fuzz) and by
 *	  outside runs over real binlogs: each case rebuilds the smallest event
 *	  sequence that triggered the bug and checks the decoder's answer.
 *
 * Events are built here byte by byte (a MySQL 8.0 FORMAT_DESCRIPTION
 * without checksums, TABLE_MAPs, rows events) and copied into heap blocks
 * of their exact size, so that AddressSanitizer catches any read past an
 * event.  bl_event structures are filled with garbage before each call,
 * so that a field the decoder forgets to set shows.
 *
 * Run: make check-unit (ASan + UBSan).
 */
#include "bl_decoder.h"
#include "bl_event_json.h"
#include "bl_test.h"

#include <stdlib.h>
#include <zlib.h>

/* ---------- event building ---------- */

typedef struct evbuf
{
	uint8_t		data[4096];
	size_t		len;
} evbuf;

static void
eb_u8(evbuf *b, unsigned v)
{
	if (b->len < sizeof(b->data))
		b->data[b->len++] = (uint8_t) v;
}

static void
eb_le(evbuf *b, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		eb_u8(b, (unsigned) (v >> (8 * i)) & 0xff);
}

static void
eb_bytes(evbuf *b, const void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		eb_u8(b, ((const uint8_t *) p)[i]);
}

/* Start an event: the common header, its length patched by eb_end(). */
static void
eb_begin(evbuf *b, uint8_t type)
{
	b->len = 0;
	eb_le(b, 1700000000, 4);
	eb_u8(b, type);
	eb_le(b, 1, 4);				/* server id */
	eb_le(b, 0, 4);				/* length, patched */
	eb_le(b, 0, 4);				/* next position */
	eb_le(b, 0, 2);				/* flags */
}

static void
eb_end(evbuf *b)
{
	for (int i = 0; i < 4; i++)
		b->data[9 + i] = (uint8_t) (b->len >> (8 * i));
}

/* MySQL 8.0 FORMAT_DESCRIPTION, checksums off. */
static void
eb_fde(evbuf *b)
{
	static const uint8_t post[] = {
		0, 13, 0, 8, 0, 0, 0, 0, 4, 0, 4, 0, 0, 0, 99, 0, 4, 26, 8, 0,
		0, 0, 0, 0, 0, 2, 0, 0, 0, 10, 10, 10, 42, 42, 0, 18, 52, 0, 10, 40,
		0, 0
	};
	char		ver[50] = "8.0.40";

	eb_begin(b, BL_EV_FORMAT_DESCRIPTION);
	eb_le(b, 4, 2);
	eb_bytes(b, ver, sizeof(ver));
	eb_le(b, 1700000000, 4);
	eb_u8(b, 19);
	eb_bytes(b, post, sizeof(post));
	eb_u8(b, BL_CHECKSUM_OFF);
	eb_le(b, 0, 4);				/* the (unused) checksum */
	eb_end(b);
}

/* Start a TABLE_MAP of db.t: its header up to the column count; the
 * caller adds the types, metadata, NULL bitmap and optional metadata. */
static void
eb_table_map_begin(evbuf *b, uint64_t id, unsigned ncols)
{
	eb_begin(b, BL_EV_TABLE_MAP);
	eb_le(b, id, 6);
	eb_le(b, 1, 2);
	eb_u8(b, 2);
	eb_bytes(b, "db", 3);
	eb_u8(b, 1);
	eb_bytes(b, "t", 2);
	eb_u8(b, ncols);
}

/* TABLE_MAP of db.t with ncols LONG columns, no optional metadata. */
static void
eb_table_map(evbuf *b, uint64_t id, unsigned ncols)
{
	eb_table_map_begin(b, id, ncols);
	for (unsigned i = 0; i < ncols; i++)
		eb_u8(b, BL_T_LONG);
	eb_u8(b, 0);				/* no type metadata */
	for (unsigned i = 0; i < (ncols + 7) / 8; i++)
		eb_u8(b, 0);			/* NOT NULL */
	eb_end(b);
}

/*
 * Decode b as one event at pos, from a heap copy of its exact size (freed
 * at the next call).  ev is filled with garbage first.
 */
static uint8_t *last_copy;

static int
decode(bl_decoder *dec, const evbuf *b, bl_event *ev, bl_error *err)
{
	free(last_copy);
	last_copy = malloc(b->len);
	if (last_copy == NULL)
		abort();
	memcpy(last_copy, b->data, b->len);
	memset(ev, 0xa5, sizeof(*ev));
	memset(err, 0, sizeof(*err));
	return bl_decode_event(dec, last_copy, b->len, 4, ev, err);
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

/* ---------- cases ---------- */

/*
 * bl_rows.c, bl_rows_next: a rows event whose column-present bitmap is
 * empty (or whose table has no columns) has images of zero bytes; with
 * bytes left after the bitmaps, bl_rows_next returned such rows forever
 * (fuzz_decoder: timeout in bl_event_to_jsonl).  It must fail instead.
 */
static void
test_empty_row_images(void)
{
	static const struct
	{
		const char *name;
		uint8_t		type;
		unsigned	ncols;
	}			cases[] = {
		{"regress/rows-empty-image-insert", BL_EV_WRITE_ROWS_V2, 1},
		{"regress/rows-empty-image-update", BL_EV_UPDATE_ROWS_V2, 1},
		{"regress/rows-empty-image-delete", BL_EV_DELETE_ROWS_V1, 1},
		{"regress/rows-zero-columns", BL_EV_WRITE_ROWS_V2, 0},
	};

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
	{
		bl_decoder *dec = new_decoder();
		evbuf		b;
		bl_event	ev;
		bl_error	err;
		bl_row		before,
					after;
		bool		v2 = cases[k].type >= BL_EV_WRITE_ROWS_V2;
		int			rc = 0;
		int			n = 0;

		BL_TEST_BEGIN(cases[k].name);
		eb_fde(&b);
		BL_CHECK_INT(decode(dec, &b, &ev, &err), 0);
		eb_table_map(&b, 77, cases[k].ncols);
		BL_CHECK_INT(decode(dec, &b, &ev, &err), 0);

		eb_begin(&b, cases[k].type);
		eb_le(&b, 77, 6);
		eb_le(&b, BL_ROWS_STMT_END_F, 2);
		if (v2)
			eb_le(&b, 2, 2);
		eb_u8(&b, cases[k].ncols);
		for (int img = 0; img < (cases[k].type == BL_EV_UPDATE_ROWS_V2 ? 2 : 1); img++)
			for (unsigned i = 0; i < (cases[k].ncols + 7) / 8; i++)
				eb_u8(&b, 0);	/* no column present */
		eb_bytes(&b, "\x01\x02\x03", 3);
		eb_end(&b);
		BL_CHECK_INT(decode(dec, &b, &ev, &err), 0);
		while (n < 10 && (rc = bl_rows_next(dec, &ev.u.rows, &before, &after, &err)) == 1)
			n++;
		BL_CHECK_INT(rc, -1);
		BL_CHECK_INT(n, 0);
		BL_CHECK_INT(err.code, BL_ERR_CORRUPT);
		bl_decoder_destroy(dec);
		BL_TEST_END();
	}
}

/*
 * bl_rows.c, inflate_columns: MariaDB COMPRESSED columns (BLOB_COMPRESSED,
 * type 140).  A value is stored as it is behind a 0 header byte, or
 * deflated behind 0x80 | raw-deflate bit (0x08) | length bytes, with its
 * original length big-endian; empty values have no header.  They decode
 * to the original bytes, and a malformed one is an error naming the
 * column.
 */
static void
eb_compressed_rows(evbuf *b, const uint8_t *const *vals, const size_t *lens, int n)
{
	eb_begin(b, BL_EV_WRITE_ROWS_V2);
	eb_le(b, 78, 6);
	eb_le(b, BL_ROWS_STMT_END_F, 2);
	eb_le(b, 2, 2);
	eb_u8(b, 1);
	eb_u8(b, 1);				/* column present */
	for (int i = 0; i < n; i++)
	{
		eb_u8(b, 0);			/* not NULL */
		eb_le(b, lens[i], 2);
		eb_bytes(b, vals[i], lens[i]);
	}
	eb_end(b);
}

static void
test_maria_compressed_column(void)
{
	bl_decoder *dec = new_decoder();
	evbuf		b;
	bl_event	ev;
	bl_error	err;
	bl_row		before,
				after;
	uint8_t		raw[] = {0, 'a', 'b', 'c'};
	uint8_t		plain[1000],
				deflated[64],
				bad[] = {0x89, 200, 1, 2, 3};
	uint8_t		zipped[sizeof(deflated) + 3];
	z_stream	zs;
	const uint8_t *vals[3];
	size_t		lens[3];

	BL_TEST_BEGIN("regress/maria-compressed-column");
	memset(plain, 'q', sizeof(plain));
	memset(&zs, 0, sizeof(zs));
	BL_CHECK_INT(deflateInit2(&zs, 6, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
	zs.next_in = plain;
	zs.avail_in = sizeof(plain);
	zs.next_out = deflated;
	zs.avail_out = sizeof(deflated);
	BL_CHECK_INT(deflate(&zs, Z_FINISH), Z_STREAM_END);
	deflateEnd(&zs);
	zipped[0] = 0x80 | 0x08 | 2;	/* raw deflate, 2 length bytes */
	zipped[1] = (uint8_t) (sizeof(plain) >> 8);
	zipped[2] = (uint8_t) (sizeof(plain) & 0xff);
	memcpy(zipped + 3, deflated, zs.total_out);

	eb_fde(&b);
	BL_CHECK_INT(decode(dec, &b, &ev, &err), 0);
	eb_table_map_begin(&b, 78, 1);				/* one column */
	eb_u8(&b, BL_T_MARIA_BLOB_COMPRESSED);
	eb_u8(&b, 1);				/* metadata: 1 byte */
	eb_u8(&b, 2);				/* 2-byte length prefix */
	eb_u8(&b, 0);				/* NOT NULL */
	eb_end(&b);
	BL_CHECK_INT(decode(dec, &b, &ev, &err), 0);

	/* stored, deflated and empty values, one row each */
	vals[0] = raw;
	lens[0] = sizeof(raw);
	vals[1] = zipped;
	lens[1] = 3 + zs.total_out;
	vals[2] = raw;
	lens[2] = 0;
	eb_compressed_rows(&b, vals, lens, 3);
	BL_CHECK_INT(decode(dec, &b, &ev, &err), 0);
	BL_CHECK_INT(bl_rows_next(dec, &ev.u.rows, &before, &after, &err), 1);
	BL_CHECK_INT(after.values[0].v.raw.len, 3);
	BL_CHECK(memcmp(after.values[0].v.raw.ptr, "abc", 3) == 0);
	BL_CHECK_INT(bl_rows_next(dec, &ev.u.rows, &before, &after, &err), 1);
	BL_CHECK_INT(after.values[0].v.raw.len, sizeof(plain));
	BL_CHECK(memcmp(after.values[0].v.raw.ptr, plain, sizeof(plain)) == 0);
	BL_CHECK_INT(bl_rows_next(dec, &ev.u.rows, &before, &after, &err), 1);
	BL_CHECK_INT(after.values[0].v.raw.len, 0);
	BL_CHECK_INT(bl_rows_next(dec, &ev.u.rows, &before, &after, &err), 0);

	/* a deflated value whose stream is garbage */
	vals[0] = bad;
	lens[0] = sizeof(bad);
	eb_compressed_rows(&b, vals, lens, 1);
	BL_CHECK_INT(decode(dec, &b, &ev, &err), 0);
	BL_CHECK_INT(bl_rows_next(dec, &ev.u.rows, &before, &after, &err), -1);
	BL_CHECK_INT(err.code, BL_ERR_CORRUPT);
	BL_CHECK(strstr(err.message, "compressed value of column") != NULL);
	bl_decoder_destroy(dec);
	BL_TEST_END();
}

/*
 * bl_serialize.c, bl_table_serialize: a table with only some columns named
 * (names from a partial schema) lost every name in its canonical form, so
 * the change store showed @N keys where the direct decoding showed names
 * (fuzz_event: canonical round trip).  Unnamed columns now travel as empty
 * names, which the table map reader takes for "no name" (MySQL refuses
 * empty column names).
 */
static void
test_canonical_partial_names(void)
{
	bl_decoder *dec = new_decoder();
	bl_decoder *canon = bl_decoder_create(NULL);
	evbuf		b;
	bl_event	ev;
	bl_error	err;
	bl_buf		out;
	const bl_table *t;

	BL_TEST_BEGIN("regress/canonical-table-map-partial-names");
	bl_decoder_set_canonical_format(canon);
	bl_buf_init(&out);
	eb_fde(&b);
	BL_CHECK_INT(decode(dec, &b, &ev, &err), 0);
	eb_table_map_begin(&b, 79, 3);				/* three LONG columns */
	eb_u8(&b, BL_T_LONG);
	eb_u8(&b, BL_T_LONG);
	eb_u8(&b, BL_T_LONG);
	eb_u8(&b, 0);				/* no type metadata */
	eb_u8(&b, 0);				/* NOT NULL */
	eb_u8(&b, 4);				/* COLUMN_NAME: "a", "", "c" */
	eb_u8(&b, 5);
	eb_u8(&b, 1);
	eb_bytes(&b, "a", 1);
	eb_u8(&b, 0);
	eb_u8(&b, 1);
	eb_bytes(&b, "c", 1);
	eb_end(&b);
	BL_CHECK_INT(decode(dec, &b, &ev, &err), 0);
	t = ev.u.table_map;
	BL_CHECK(t != NULL && t->ncols == 3);
	BL_CHECK(t->cols[0].name.ptr && strcmp(t->cols[0].name.ptr, "a") == 0);
	BL_CHECK(t->cols[1].name.ptr == NULL);
	BL_CHECK_INT(bl_table_serialize(t, 79, &out), 0);
	memset(&ev, 0xa5, sizeof(ev));
	BL_CHECK_INT(bl_decode_event(canon, (const uint8_t *) out.data, out.len, 4, &ev, &err), 0);
	t = ev.u.table_map;
	BL_CHECK(t != NULL && t->ncols == 3);
	BL_CHECK(t->cols[0].name.ptr && strcmp(t->cols[0].name.ptr, "a") == 0);
	BL_CHECK(t->cols[1].name.ptr == NULL);
	BL_CHECK(t->cols[2].name.ptr && strcmp(t->cols[2].name.ptr, "c") == 0);
	bl_buf_free(&out);
	bl_decoder_destroy(canon);
	bl_decoder_destroy(dec);
	BL_TEST_END();
}

/*
 * bl_gtid.c, bl_decode_heartbeat_v2: the log file and position fields of
 * HEARTBEAT_V2 are optional; without them u.heartbeat was left as the
 * caller's bl_event held it, and bl_event_to_jsonl printed a stale
 * pointer (fuzz_event: heap-use-after-free in bl_json_escape_utf8).
 */
static void
test_heartbeat_v2_without_fields(void)
{
	bl_decoder *dec = new_decoder();
	evbuf		b;
	bl_event	ev;
	bl_error	err;
	bl_buf		out;

	BL_TEST_BEGIN("regress/heartbeat-v2-without-fields");
	bl_buf_init(&out);
	eb_fde(&b);
	BL_CHECK_INT(decode(dec, &b, &ev, &err), 0);
	eb_begin(&b, BL_EV_HEARTBEAT_V2);
	eb_u8(&b, 1);				/* version */
	eb_u8(&b, 3 << 1);			/* payload size 3: these three bytes */
	eb_u8(&b, 0);				/* last non-ignorable field */
	eb_end(&b);
	BL_CHECK_INT(decode(dec, &b, &ev, &err), 0);
	BL_CHECK(ev.u.heartbeat.file.len == 0);
	BL_CHECK(ev.u.heartbeat.position == 0);
	BL_CHECK_INT(bl_event_to_jsonl(dec, &ev, NULL, &out, &err), 0);
	BL_CHECK(strstr(out.data, "\"log_file\":\"\",\"log_pos\":0}") != NULL);
	bl_buf_free(&out);
	bl_decoder_destroy(dec);
	BL_TEST_END();
}

/*
 * bl_decoder.c, decode_query: charset_client ("0 if absent") was only set
 * by a Q_CHARSET_CODE status variable, so a QUERY without one kept
 * whatever the caller's bl_event held and its SQL was converted from a
 * stale charset (found with the same garbage-filled events).
 */
static void
test_query_without_charset(void)
{
	bl_decoder *dec = new_decoder();
	evbuf		b;
	bl_event	ev;
	bl_error	err;

	BL_TEST_BEGIN("regress/query-without-charset");
	eb_fde(&b);
	BL_CHECK_INT(decode(dec, &b, &ev, &err), 0);
	eb_begin(&b, BL_EV_QUERY);
	eb_le(&b, 7, 4);			/* thread id */
	eb_le(&b, 0, 4);			/* exec time */
	eb_u8(&b, 2);				/* db length */
	eb_le(&b, 0, 2);			/* error code */
	eb_le(&b, 0, 2);			/* no status variables */
	eb_bytes(&b, "db", 3);
	eb_bytes(&b, "BEGIN", 5);
	eb_end(&b);
	BL_CHECK_INT(decode(dec, &b, &ev, &err), 0);
	BL_CHECK_INT(ev.u.query.charset_client, 0);
	BL_CHECK_INT(ev.u.query.sql.len, 5);
	bl_decoder_destroy(dec);
	BL_TEST_END();
}

/*
 * bl_compress.c, bl_maria_uncompress: a MariaDB compressed block of a few
 * bytes declaring 1 GiB of output made the decoder allocate 1 GiB before
 * zlib failed (fuzz_event: 2.6 s per input, a timeout).  deflate cannot
 * expand more than 1032:1, so such a length is corrupt on its face.
 */
static void
test_compressed_block_ratio(void)
{
	bl_decoder *dec = new_decoder();
	evbuf		b;
	bl_event	ev;
	bl_error	err;

	BL_TEST_BEGIN("regress/maria-compressed-declared-length");
	eb_fde(&b);
	BL_CHECK_INT(decode(dec, &b, &ev, &err), 0);
	eb_begin(&b, BL_EV_MARIA_QUERY_COMPRESSED);
	eb_le(&b, 7, 4);			/* thread id */
	eb_le(&b, 0, 4);			/* exec time */
	eb_u8(&b, 2);				/* db length */
	eb_le(&b, 0, 2);			/* error code */
	eb_bytes(&b, "db", 3);
	eb_u8(&b, 0x84);			/* zlib, 4-byte length */
	eb_bytes(&b, "\x40\x00\x00\x00", 4);	/* 1 GiB */
	eb_bytes(&b, "\x78\x9c\x01\x02\x03\x04\x05\x06", 8);
	eb_end(&b);
	BL_CHECK_INT(decode(dec, &b, &ev, &err), -1);
	BL_CHECK_INT(err.code, BL_ERR_CORRUPT);
	if (strstr(err.message, "declares") == NULL)
		BL_FAIL("error is not about the declared length: %s", err.message);
	bl_decoder_destroy(dec);
	BL_TEST_END();
}

static const bl_schema_table *
latin1_schema(void *arg, const char *schema, const char *table)
{
	static const bl_schema_column col = {"v", "varchar", false, "latin1", 0, NULL, false};
	static const bl_schema_table t = {1, &col, NULL};

	(void) arg;
	(void) schema;
	(void) table;
	return &t;
}

/*
 * bl_serialize.c, bl_table_serialize: a column whose collation id is not
 * one we know (1500) but whose charset information_schema gives (latin1)
 * lost that charset in its canonical TABLE_MAP: only charsets of columns
 * without any collation id were written by name, so the change store
 * decoded the column as UTF-8 (fuzz_event: canonical round trip differs
 * from the direct decoding).
 */
static void
test_canonical_charset_by_name(void)
{
	bl_decoder_options opts;
	bl_decoder *dec;
	bl_decoder *canon;
	evbuf		b;
	bl_event	ev;
	bl_error	err;
	bl_buf		out;
	const bl_table *t;

	BL_TEST_BEGIN("regress/canonical-charset-with-unknown-collation");
	bl_decoder_options_init(&opts);
	opts.schema_lookup = latin1_schema;
	dec = bl_decoder_create(&opts);
	canon = bl_decoder_create(NULL);
	if (dec == NULL || canon == NULL)
		abort();
	bl_decoder_set_canonical_format(canon);
	bl_buf_init(&out);
	eb_fde(&b);
	BL_CHECK_INT(decode(dec, &b, &ev, &err), 0);
	eb_table_map_begin(&b, 5, 1);				/* one column */
	eb_u8(&b, BL_T_VARCHAR);
	eb_u8(&b, 2);				/* metadata: VARCHAR(100) */
	eb_le(&b, 100, 2);
	eb_u8(&b, 1);				/* nullable */
	eb_u8(&b, 3);				/* COLUMN_CHARSET: collation 1500 */
	eb_u8(&b, 3);
	eb_u8(&b, 252);
	eb_le(&b, 1500, 2);
	eb_end(&b);
	BL_CHECK_INT(decode(dec, &b, &ev, &err), 0);
	t = bl_decoder_table(dec, 5);
	BL_CHECK(t != NULL && t->cols[0].collation == 1500 &&
			 t->cols[0].charset == bl_charset_by_name("latin1"));
	if (t != NULL)
	{
		bl_event	cev;

		BL_CHECK_INT(bl_table_serialize(t, 9, &out), 0);
		memset(&cev, 0xa5, sizeof(cev));
		BL_CHECK_INT(bl_decode_event(canon, (const uint8_t *) out.data, out.len, 4,
									 &cev, &err), 0);
		t = bl_decoder_table(canon, 9);
		BL_CHECK(t != NULL && t->cols[0].charset == bl_charset_by_name("latin1"));
	}
	bl_buf_free(&out);
	bl_decoder_destroy(dec);
	bl_decoder_destroy(canon);
	BL_TEST_END();
}

/*
 * bl_decoder.c, bl_decoder_set_file: the file name was cut to 255 bytes
 * without a word, so positions named another file.  A name of 300 bytes
 * (the servers allow up to 511) is kept whole; a longer one makes every
 * event fail with its length, never a cut name.
 */
static void
test_long_file_name(void)
{
	bl_decoder *dec = new_decoder();
	evbuf		b;
	bl_event	ev;
	bl_error	err;
	char		name[600];

	BL_TEST_BEGIN("regress/long-binlog-file-name");
	memset(name, 'b', sizeof(name));
	memcpy(name + 300 - 7, ".000001", 7);
	bl_decoder_set_file(dec, name, 300);
	BL_CHECK_INT(strlen(bl_decoder_file(dec)), 300);
	BL_CHECK(memcmp(bl_decoder_file(dec), name, 300) == 0);
	eb_fde(&b);
	BL_CHECK_INT(decode(dec, &b, &ev, &err), 0);
	bl_decoder_set_file(dec, name, sizeof(name));
	BL_CHECK(decode(dec, &b, &ev, &err) != 0);
	BL_CHECK(strstr(err.message, "binlog file name of 600 bytes is too long") != NULL);
	/* a name that fits again: events decode again */
	bl_decoder_set_file(dec, "mysql-bin.000002", 16);
	BL_CHECK_INT(decode(dec, &b, &ev, &err), 0);
	bl_decoder_destroy(dec);
	BL_TEST_END();
}

/*
 * Checksummed events: eb_end_crc() closes an event with a CRC32 over it
 * (with the length that includes the CRC).
 */
static void
eb_end_crc(evbuf *b)
{
	uint32_t	crc;

	eb_le(b, 0, 4);
	eb_end(b);
	crc = (uint32_t) crc32(0, b->data, (uInt) (b->len - 4));
	for (int i = 0; i < 4; i++)
		b->data[b->len - 4 + i] = (uint8_t) (crc >> (8 * i));
}

/*
 * A FORMAT_DESCRIPTION of `version` with the post-header lengths of MySQL
 * 8.0 (42 event types) and the checksum fields, algorithm `alg`, with a
 * correct CRC32 (written by servers whatever the algorithm); or of MySQL
 * 5.1 (26 event types) without checksum fields when old_layout.
 */
static void
eb_fde_version(evbuf *b, const char *version, uint8_t alg, bool old_layout)
{
	static const uint8_t post80[] = {
		0, 13, 0, 8, 0, 0, 0, 0, 4, 0, 4, 0, 0, 0, 99, 0, 4, 26, 8, 0,
		0, 0, 0, 0, 0, 2, 0, 0, 0, 10, 10, 10, 42, 42, 0, 18, 52, 0, 10, 40,
		0, 0
	};
	static const uint8_t post51[] = {
		56, 13, 0, 8, 0, 0, 0, 0, 4, 0, 4, 0, 0, 0, 83, 0, 4, 26, 8, 0,
		0, 0, 0, 8, 8, 8
	};
	char		ver[50] = {0};

	snprintf(ver, sizeof(ver), "%s", version);
	eb_begin(b, BL_EV_FORMAT_DESCRIPTION);
	eb_le(b, 4, 2);
	eb_bytes(b, ver, sizeof(ver));
	eb_le(b, 1700000000, 4);
	eb_u8(b, 19);
	if (old_layout)
	{
		eb_bytes(b, post51, sizeof(post51));
		eb_end(b);
		return;
	}
	eb_bytes(b, post80, sizeof(post80));
	eb_u8(b, alg);
	eb_end_crc(b);
}

/* QUERY "BEGIN" in db, with a CRC32 when crc. */
static void
eb_query(evbuf *b, bool crc)
{
	eb_begin(b, BL_EV_QUERY);
	eb_le(b, 7, 4);				/* thread id */
	eb_le(b, 0, 4);				/* exec time */
	eb_u8(b, 2);				/* db length */
	eb_le(b, 0, 2);				/* error code */
	eb_le(b, 0, 2);				/* no status variables */
	eb_bytes(b, "db", 3);
	eb_bytes(b, "BEGIN", 5);
	if (crc)
		eb_end_crc(b);
	else
		eb_end(b);
}

/* Decode fde, then the QUERY; returns bl_decode_event's result for the
 * FDE and sets *sql_ok when the QUERY decoded to exactly "BEGIN". */
static int
decode_fde_query(evbuf *fde, bool crc, bl_error *err, bool *sql_ok)
{
	bl_decoder *dec = new_decoder();
	evbuf		q;
	bl_event	ev;
	int			rc;

	*sql_ok = false;
	rc = decode(dec, fde, &ev, err);
	if (rc == 0)
	{
		eb_query(&q, crc);
		if (decode(dec, &q, &ev, err) == 0)
			*sql_ok = ev.u.query.sql.len == 5 && memcmp(ev.u.query.sql.ptr, "BEGIN", 5) == 0;
	}
	bl_decoder_destroy(dec);
	return rc;
}

/*
 * bl_decoder.c, decode_format_description: whether a FORMAT_DESCRIPTION
 * carries checksum fields was decided by its server version text alone, so
 * that one damaged byte there ("4.0.40" for "8.0.40") made a checksummed
 * file read as one without checksums: exit 0, each event's CRC32 inside
 * its SQL text and file names.  The event's layout decides now, the CRC32
 * of the FORMAT_DESCRIPTION itself is verified, and a mismatch is an
 * error; an algorithm byte damaged from CRC32 to OFF is caught by the
 * CRC32 that is right for CRC32.
 */
static void
test_fde_checksum_layout(void)
{
	evbuf		b;
	bl_error	err;
	bool		sql_ok;

	BL_TEST_BEGIN("regress/fde-checksum-by-layout");
	/* intact: CRC32, the QUERY's text without its checksum */
	eb_fde_version(&b, "8.0.40", BL_CHECKSUM_CRC32, false);
	BL_CHECK_INT(decode_fde_query(&b, true, &err, &sql_ok), 0);
	BL_CHECK(sql_ok);

	/* one damaged version byte, the stored CRC32 no longer matches */
	b.data[BL_EVENT_HEADER_LEN + 2] = '4';
	BL_CHECK_INT(decode_fde_query(&b, true, &err, &sql_ok), -1);
	BL_CHECK_INT(err.code, BL_ERR_CHECKSUM);
	BL_CHECK_INT(err.position, 4);
	BL_CHECK(strncmp(err.message, "checksum mismatch in FORMAT_DESCRIPTION event: stored ", 54) == 0);

	/* a version text that says nothing (a custom build), CRC32 intact:
	 * the layout still says checksums */
	eb_fde_version(&b, "custom-build", BL_CHECKSUM_CRC32, false);
	BL_CHECK_INT(decode_fde_query(&b, true, &err, &sql_ok), 0);
	BL_CHECK(sql_ok);
	eb_fde_version(&b, "4.1.0-claims-old", BL_CHECKSUM_CRC32, false);
	BL_CHECK_INT(decode_fde_query(&b, true, &err, &sql_ok), 0);
	BL_CHECK(sql_ok);

	/* checksums off, as written by servers: events without CRC32 */
	eb_fde_version(&b, "8.0.40", BL_CHECKSUM_OFF, false);
	BL_CHECK_INT(decode_fde_query(&b, false, &err, &sql_ok), 0);
	BL_CHECK(sql_ok);

	/* the algorithm byte damaged from CRC32 to OFF */
	eb_fde_version(&b, "8.0.40", BL_CHECKSUM_CRC32, false);
	b.data[b.len - 5] = BL_CHECKSUM_OFF;
	BL_CHECK_INT(decode_fde_query(&b, true, &err, &sql_ok), -1);
	BL_CHECK_INT(err.code, BL_ERR_CHECKSUM);
	BL_CHECK_STR(err.message, "checksum mismatch in FORMAT_DESCRIPTION event: its checksum algorithm byte says OFF, but its checksum is that of the same event with algorithm CRC32 (the file is damaged)");
	/* ... and from OFF to CRC32 */
	eb_fde_version(&b, "8.0.40", BL_CHECKSUM_OFF, false);
	b.data[b.len - 5] = BL_CHECKSUM_CRC32;
	BL_CHECK_INT(decode_fde_query(&b, true, &err, &sql_ok), -1);
	BL_CHECK_INT(err.code, BL_ERR_CHECKSUM);

	/* the "binlog in use" flag set after the checksum was computed */
	eb_fde_version(&b, "8.0.40", BL_CHECKSUM_CRC32, false);
	b.data[17] |= 0x01;
	BL_CHECK_INT(decode_fde_query(&b, true, &err, &sql_ok), 0);
	BL_CHECK(sql_ok);

	/* a pre-checksum server (MySQL 5.1 layout): no checksum fields, even
	 * when the version text claims a checksum-aware server */
	eb_fde_version(&b, "5.1.37-log", 0, true);
	BL_CHECK_INT(decode_fde_query(&b, false, &err, &sql_ok), 0);
	BL_CHECK(sql_ok);
	eb_fde_version(&b, "8.1.37-log", 0, true);
	BL_CHECK_INT(decode_fde_query(&b, false, &err, &sql_ok), 0);
	BL_CHECK(sql_ok);
	BL_TEST_END();
}

/*
 * The same over the real binlogs (BL_SAMPLES): each FORMAT_DESCRIPTION as
 * it is decodes with its file's checksum setting; with one damaged byte in
 * its version text, a CRC32 file's fails with a checksum error, and the
 * others keep their setting.
 */
static void
test_fde_samples(void)
{
	const char *dir = getenv("BL_SAMPLES");
	char		path[4096];
	FILE	   *prov;
	char		line[4096];
	int			crc_files = 0,
				other_files = 0;

	BL_TEST_BEGIN("regress/fde-damaged-version-in-samples");
	if (dir == NULL)
	{
		printf("# BL_SAMPLES not set: sample files skipped\n");
		BL_TEST_END();
		return;
	}
	snprintf(path, sizeof(path), "%s/PROVENANCE.tsv", dir);
	prov = fopen(path, "r");
	if (prov == NULL)
	{
		BL_FAIL("cannot open %s", path);
		BL_TEST_END();
		return;
	}
	while (fgets(line, sizeof(line), prov))
	{
		char	   *f[8];
		int			nf = 0;
		FILE	   *bin;
		uint8_t		head[4 + 1024];
		size_t		n;
		uint32_t	size;
		evbuf		b;
		bl_error	err;
		bl_decoder *dec;
		bl_event	ev;
		int			rc;
		uint8_t		alg;

		for (char *p = line, *t; nf < 8 && (t = strsep(&p, "\t")) != NULL;)
			f[nf++] = t;
		if (nf < 8 || strcmp(f[0], "file") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, f[0]);
		bin = fopen(path, "rb");
		if (bin == NULL)
		{
			BL_FAIL("cannot open %s", path);
			break;
		}
		n = fread(head, 1, sizeof(head), bin);
		fclose(bin);
		if (n < 4 + BL_EVENT_HEADER_LEN || memcmp(head, "\xfe" "bin", 4) != 0 ||
			head[4 + 4] != BL_EV_FORMAT_DESCRIPTION)
			continue;
		size = (uint32_t) head[4 + 9] | (uint32_t) head[4 + 10] << 8 |
			(uint32_t) head[4 + 11] << 16 | (uint32_t) head[4 + 12] << 24;
		if (size > n - 4 || size > sizeof(b.data))
			continue;
		memcpy(b.data, head + 4, size);
		b.len = size;
		dec = new_decoder();
		rc = decode(dec, &b, &ev, &err);
		alg = bl_decoder_checksum_alg(dec);
		bl_decoder_destroy(dec);
		if (rc != 0)
		{
			/* the files of pre-release servers are refused, clearly */
			if (strstr(err.message, "pre-release server") == NULL)
				BL_FAIL("%s: %s", f[0], err.message);
			continue;
		}
		if ((strcmp(f[6], "CRC32") == 0) != (alg == BL_CHECKSUM_CRC32))
			BL_FAIL("%s: checksum %s, decoded %u", f[0], f[6], alg);
		/* damage the first digit of the version */
		b.data[BL_EVENT_HEADER_LEN + 2] = b.data[BL_EVENT_HEADER_LEN + 2] == '4' ? '3' : '4';
		dec = new_decoder();
		rc = decode(dec, &b, &ev, &err);
		if (alg == BL_CHECKSUM_CRC32)
		{
			crc_files++;
			if (rc != -1 || err.code != BL_ERR_CHECKSUM)
				BL_FAIL("%s: damaged version: %d (%s), want a checksum error", f[0], rc,
						rc ? err.message : "no error");
		}
		else
		{
			other_files++;
			if (rc != 0 || bl_decoder_checksum_alg(dec) != alg)
				BL_FAIL("%s: damaged version: %d (%s), checksum %u, want %u", f[0], rc,
						rc ? err.message : "no error", bl_decoder_checksum_alg(dec), alg);
		}
		bl_decoder_destroy(dec);
	}
	fclose(prov);
	if (crc_files < 30 || other_files < 10)
		BL_FAIL("only %d CRC32 and %d other sample binlogs found in %s", crc_files,
				other_files, dir);
	BL_TEST_END();
}

/*
 * bl_decoder.c, bl_decoder_fail: errors that wrap an inner error formatted
 * their message from err->message into err->message (vsnprintf with
 * overlapping buffers): "TRANSACTION_PAYLOAD: TRANSACTION_PAYLOAD: ..."
 * and worse.  The compressed QUERY, the TRANSACTION_PAYLOAD and the
 * compressed rows paths give their context once, then the inner message.
 */
static void
test_wrapped_error_messages(void)
{
	bl_decoder *dec = new_decoder();
	evbuf		b;
	bl_event	ev;
	bl_error	err;

	BL_TEST_BEGIN("regress/wrapped-error-messages");
	eb_fde(&b);
	BL_CHECK_INT(decode(dec, &b, &ev, &err), 0);

	/* TRANSACTION_PAYLOAD: zstd (type 0), 10 bytes, a payload that is not
	 * a zstd frame */
	eb_begin(&b, BL_EV_TRANSACTION_PAYLOAD);
	eb_u8(&b, 2);
	eb_u8(&b, 1);
	eb_u8(&b, 0);				/* compression type: zstd */
	eb_u8(&b, 3);
	eb_u8(&b, 1);
	eb_u8(&b, 10);				/* uncompressed size */
	eb_u8(&b, 0);				/* end of the header */
	eb_bytes(&b, "not a zstd frame", 16);
	eb_end(&b);
	BL_CHECK_INT(decode(dec, &b, &ev, &err), -1);
	BL_CHECK_INT(err.code, BL_ERR_CORRUPT);
	BL_CHECK_STR(err.message, "TRANSACTION_PAYLOAD: payload is not a zstd frame");

	/* MariaDB compressed QUERY with a bad block header */
	eb_begin(&b, BL_EV_MARIA_QUERY_COMPRESSED);
	eb_le(&b, 7, 4);
	eb_le(&b, 0, 4);
	eb_u8(&b, 2);
	eb_le(&b, 0, 2);
	eb_bytes(&b, "db", 3);
	eb_bytes(&b, "\x00\x01\x02\x03", 4);
	eb_end(&b);
	BL_CHECK_INT(decode(dec, &b, &ev, &err), -1);
	BL_CHECK_INT(err.code, BL_ERR_CORRUPT);
	BL_CHECK_STR(err.message, "compressed QUERY event: bad compressed-block header");

	/* MariaDB compressed rows: a block that declares more than it holds */
	eb_table_map(&b, 79, 1);
	BL_CHECK_INT(decode(dec, &b, &ev, &err), 0);
	eb_begin(&b, BL_EV_MARIA_WRITE_ROWS_COMPRESSED_V1);
	eb_le(&b, 79, 6);
	eb_le(&b, BL_ROWS_STMT_END_F, 2);
	eb_u8(&b, 1);
	eb_u8(&b, 1);
	eb_bytes(&b, "\x81\x05\x01\x02", 4);
	eb_end(&b);
	BL_CHECK_INT(decode(dec, &b, &ev, &err), -1);
	BL_CHECK_INT(err.code, BL_ERR_CORRUPT);
	BL_CHECK_STR(err.message, "MARIA_WRITE_ROWS_COMPRESSED_V1: zlib could not decompress the block (-3)");
	bl_decoder_destroy(dec);
	BL_TEST_END();
}

/* A schema history of db.t: one INT column "v", signed (1: unknown, 2: unsigned). */
static int	history_mode;

static const bl_schema_table *
history_schema(void *arg, const char *schema, const char *table)
{
	static const bl_schema_column col = {"v", "int", false, NULL, 0, NULL, false};
	static const bl_schema_column ucol = {"v", "int", true, NULL, 0, NULL, false};
	static const bl_schema_table t = {1, &col, NULL};
	static const bl_schema_table ut = {1, &ucol, NULL};
	static const bl_schema_table unknown = {0, NULL, "changed at binlog f.000001 position 4"};

	(void) arg;
	(void) schema;
	(void) table;
	return history_mode == 1 ? &unknown : history_mode == 2 ? &ut : &t;
}

/* TABLE_MAP of db.t, one INT column, unsigned (SIGNEDNESS), named name or not. */
static void
eb_int_table_map(evbuf *b, uint64_t id, const char *name)
{
	eb_table_map_begin(b, id, 1);
	eb_u8(b, BL_T_LONG);
	eb_u8(b, 0);				/* no type metadata */
	eb_u8(b, 1);				/* nullable */
	eb_u8(b, 1);				/* SIGNEDNESS */
	eb_u8(b, 1);
	eb_u8(b, 0x80);				/* unsigned */
	if (name)
	{
		eb_u8(b, 4);			/* COLUMN_NAME */
		eb_u8(b, (uint8_t) (strlen(name) + 1));
		eb_u8(b, (uint8_t) strlen(name));
		eb_bytes(b, name, strlen(name));
	}
	eb_end(b);
}

/*
 * bl_tablemap.c, merge_schema with a provider at the event's position (the
 * schema history, issue #10): signedness the TABLE_MAP carries (MINIMAL
 * metadata) must agree; a table whose definition is unknown decodes only
 * with the event's own names; the event's own names (FULL) must agree.
 */
static void
test_schema_at_position(void)
{
	bl_decoder_options opts;
	bl_decoder *dec;
	evbuf		b;
	bl_event	ev;
	bl_error	err;

	BL_TEST_BEGIN("regress/schema-history-checks");
	bl_decoder_options_init(&opts);
	opts.schema_lookup = history_schema;
	opts.schema_at_position = true;
	opts.schema_what = "the schema history";
	dec = bl_decoder_create(&opts);
	if (dec == NULL)
		abort();
	eb_fde(&b);
	BL_CHECK_INT(decode(dec, &b, &ev, &err), 0);

	history_mode = 0;
	eb_int_table_map(&b, 5, NULL);
	BL_CHECK_INT(decode(dec, &b, &ev, &err), -1);
	BL_CHECK_INT(err.code, BL_ERR_SCHEMA);
	if (strstr(err.message, "is unsigned in the binlog but signed in the schema history") == NULL)
		BL_FAIL("signedness: %s", err.message);

	history_mode = 1;
	eb_int_table_map(&b, 6, NULL);
	BL_CHECK_INT(decode(dec, &b, &ev, &err), -1);
	if (strstr(err.message, "definition at this position is unknown (changed at binlog f.000001") == NULL)
		BL_FAIL("unknown: %s", err.message);
	eb_int_table_map(&b, 7, "x");
	BL_CHECK_INT(decode(dec, &b, &ev, &err), 0);	/* the event's own names */

	history_mode = 2;
	eb_int_table_map(&b, 8, "x");
	BL_CHECK_INT(decode(dec, &b, &ev, &err), -1);
	if (strstr(err.message, "column 1 of db.t is \"x\" in the binlog but \"v\" in the schema history") == NULL)
		BL_FAIL("names: %s", err.message);
	eb_int_table_map(&b, 9, "V");
	BL_CHECK_INT(decode(dec, &b, &ev, &err), 0);	/* names compare case-insensitively */
	eb_int_table_map(&b, 10, NULL);
	BL_CHECK_INT(decode(dec, &b, &ev, &err), 0);
	BL_CHECK(bl_decoder_table(dec, 10) != NULL &&
			 bl_decoder_table(dec, 10)->names_source == BL_NAMES_SCHEMA);
	bl_decoder_destroy(dec);
	BL_TEST_END();
}

int
main(void)
{
	test_empty_row_images();
	test_heartbeat_v2_without_fields();
	test_query_without_charset();
	test_compressed_block_ratio();
	test_maria_compressed_column();
	test_canonical_partial_names();
	test_canonical_charset_by_name();
	test_schema_at_position();
	test_long_file_name();
	test_fde_checksum_layout();
	test_fde_samples();
	test_wrapped_error_messages();
	free(last_copy);
	BL_TEST_EXIT();
}
