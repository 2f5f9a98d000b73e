/*
 * fuzz_event.c
 *	  libFuzzer target for one event decoded after a fixed, valid
 *	  FORMAT_DESCRIPTION + TABLE_MAP prefix, so that the fuzzer spends its
 *	  time in rows, values and their formatting instead of rediscovering
 *	  the framing of a binlog.
 *
 * Input: byte 0 selects a prefix (modulo the number of slots), byte 1 is
 * the event type, the rest is the event body.  The harness writes the
 * common header (with the right length) and, when the prefix's
 * FORMAT_DESCRIPTION announces CRC32, four checksum bytes; checksums are
 * not verified (bl_decoder_options.verify_checksum = false).  The event
 * then goes through fuzz_run_event() (fuzz_common.h).
 *
 * Prefixes (slot: FORMAT_DESCRIPTION and TABLE_MAPs):
 *	0	synthetic MySQL 8.4: three maps of one table with every column type
 *		the decoder knows (ids 1001-1003), with binlog_row_metadata=FULL
 *		(default charsets, names, ENUM/SET strings, simple primary key,
 *		visibility, geometry type, vector dimensions), with per-column
 *		charsets and a key with prefix, and with no optional metadata;
 *		and a table of odd fractional-second digits and such (1006)
 *	1	synthetic MariaDB 10.11: the same table (1004) and one with
 *		MariaDB's compressed column types (1005)
 *	2-	the FORMAT_DESCRIPTION and the last TABLE_MAP of every table id of
 *		a real sample binlog (list below), read at start-up from
 *		$BL_SAMPLES, else ../shared/binlog-samples, else the samples
 *		beside the checkout that holds this binary; a slot whose sample
 *		is missing does nothing (a warning at start-up says so)
 *
 * Seeds: with FUZZ_WRITE_SEEDS=DIR the program writes seeds into DIR and
 * exits: for the synthetic slots, rows events of every kind (v1, v2,
 * partial JSON, MariaDB compressed, minimal images, NULLs) and
 * TRANSACTION_PAYLOADs holding such events; for the sample slots, every
 * event of the sample after its FORMAT_DESCRIPTION (at most 24 per type).
 * test/fuzz/make-corpus.sh does this.
 *
 * Build and run: make fuzz; build/fuzz/fuzz_event -detect_leaks=1 CORPUS
 */
#include "fuzz_common.h"

#include <libgen.h>
#include <zlib.h>
#include <zstd.h>

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int			LLVMFuzzerInitialize(int *argc, char ***argv);

#define MAX_MAPS		64
#define SEED_PER_TYPE	24

typedef struct prefix
{
	const char *sample;			/* path under the samples, NULL: synthetic */
	bool		loaded;
	bool		crc;			/* events end with a CRC32 */
	uint8_t    *fde;
	size_t		fde_len;
	uint8_t    *maps[MAX_MAPS];
	size_t		map_len[MAX_MAPS];
	uint64_t	map_id[MAX_MAPS];
	int			nmaps;
} prefix;

static prefix slots[] = {
	{.sample = NULL},						/* synthetic MySQL */
	{.sample = NULL},						/* synthetic MariaDB */
	{.sample = "rust_mysql_common/test-data/binlogs/mysql-enum-string-set.000001"},
	{.sample = "rust_mysql_common/test-data/binlogs/json.binlog.000001"},
	{.sample = "rust_mysql_common/test-data/binlogs/vector.binlog"},
	{.sample = "rust_mysql_common/test-data/binlogs/mysql_type_bit.000001"},
	{.sample = "rust_mysql_common/test-data/binlogs/time_issue.000001"},
	{.sample = "rust_mysql_common/test-data/binlogs/json-opaque.binlog"},
	{.sample = "rust_mysql_common/test-data/binlogs/mariadb-bin.000001"},
	{.sample = "rust_mysql_common/test-data/binlogs/binlog-invisible-columns.000001"},
	{.sample = "rust_mysql_common/test-data/binlogs/binlog_transaction_with_GTID_TAG.000001"},
	{.sample = "rust_mysql_common/test-data/binlogs/ver_trunk_row_v2.001"},
	{.sample = "rust_mysql_common/test-data/binlogs/update-partial-row.binlog"},
	{.sample = "mysql-binlog-connector-java/src/test/resources/mysql-bin.sakila"},
	{.sample = "mysql-binlog-connector-java/src/test/resources/mysql-bin.checksum-crc32"},
	{.sample = "mysql-binlog-connector-java/src/test/resources/mysql-bin.checksum-none"},
	{.sample = "zalora-binlog-parser/data/fixtures/mysql-bin.02"},
	{.sample = "zalora-binlog-parser/data/fixtures/mysql-bin.07"},
};

#define NSLOTS ((int) (sizeof(slots) / sizeof(slots[0])))
#define SLOT_MYSQL		0
#define SLOT_MARIADB	1

/* ---- byte writers ---- */

static void
put_u8(bl_buf *o, uint64_t v)
{
	bl_buf_putc(o, (char) (uint8_t) v);
}

static void
put_le(bl_buf *o, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		put_u8(o, v >> (8 * i));
}

static void
put_be(bl_buf *o, uint64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--)
		put_u8(o, v >> (8 * i));
}

static void
put_packed(bl_buf *o, uint64_t v)
{
	if (v < 251)
		put_u8(o, v);
	else if (v < 65536)
	{
		put_u8(o, 252);
		put_le(o, v, 2);
	}
	else if (v < (1 << 24))
	{
		put_u8(o, 253);
		put_le(o, v, 3);
	}
	else
	{
		put_u8(o, 254);
		put_le(o, v, 8);
	}
}

static void
put_bytes(bl_buf *o, const void *p, size_t n)
{
	bl_buf_append(o, p, n);
}

static void
put_lenstr(bl_buf *o, const char *s)
{
	put_packed(o, strlen(s));
	put_bytes(o, s, strlen(s));
}

static uint8_t *
dup_bytes(const void *p, size_t n)
{
	uint8_t    *c = malloc(n ? n : 1);

	if (c == NULL)
		abort();
	if (n)
		memcpy(c, p, n);
	return c;
}

/*
 * A whole event: header, body and (crc) a correct CRC32.  Returns a
 * malloc'd block of exactly *len bytes.
 */
static uint8_t *
make_event(uint8_t type, const uint8_t *body, size_t blen, bool crc,
		   size_t *len)
{
	size_t		total = BL_EVENT_HEADER_LEN + blen + (crc ? BL_CHECKSUM_LEN : 0);
	uint8_t    *p = malloc(total);
	uint8_t    *h = p;

	if (p == NULL)
		abort();
	h[0] = 0x00, h[1] = 0xf1, h[2] = 0x53, h[3] = 0x65;	/* 2023-11-14 */
	h[4] = type;
	h[5] = 1, h[6] = 0, h[7] = 0, h[8] = 0;
	for (int i = 0; i < 4; i++)
		h[9 + i] = (uint8_t) (total >> (8 * i));
	memset(h + 13, 0, 6);		/* next_pos, flags */
	if (blen)
		memcpy(p + BL_EVENT_HEADER_LEN, body, blen);
	if (crc)
	{
		uint32_t	c = bl_crc32(0, p, total - BL_CHECKSUM_LEN);

		for (int i = 0; i < 4; i++)
			p[total - 4 + i] = (uint8_t) (c >> (8 * i));
	}
	*len = total;
	return p;
}

/* ---- synthetic FORMAT_DESCRIPTIONs (post-header lengths as the servers
 * write them) ---- */

static const uint8_t mysql84_post[] = {
	0, 13, 0, 8, 0, 0, 0, 0, 4, 0, 4, 0, 0, 0, 99, 0, 4, 26, 8, 0,
	0, 0, 0, 0, 0, 2, 0, 0, 0, 10, 10, 10, 42, 42, 0, 18, 52, 0, 10, 40,
	0, 0
};

static uint8_t *
make_fde(const char *version, bool mariadb, size_t *len)
{
	bl_buf		b;
	char		ver[50] = {0};
	uint8_t    *ev;

	bl_buf_init(&b);
	put_le(&b, 4, 2);
	snprintf(ver, sizeof(ver), "%s", version);
	put_bytes(&b, ver, 50);
	put_le(&b, 1700000000, 4);
	put_u8(&b, BL_EVENT_HEADER_LEN);
	if (mariadb)
	{
		static const uint8_t head[] = {
			56, 13, 0, 8, 0, 18, 0, 4, 4, 4, 4, 18, 0, 0, 228, 0, 4, 26, 8, 0,
			0, 0, 8, 8, 8, 2, 0, 0, 0, 10, 10, 10
		};
		static const uint8_t tail[] = {0, 4, 19, 4, 0, 13, 8, 8, 8, 10, 10, 10};

		put_bytes(&b, head, sizeof(head));
		for (int t = (int) sizeof(head) + 1; t < 160; t++)
			put_u8(&b, 0);
		put_bytes(&b, tail, sizeof(tail));	/* types 160..171 */
	}
	else
		put_bytes(&b, mysql84_post, sizeof(mysql84_post));
	put_u8(&b, BL_CHECKSUM_CRC32);
	put_le(&b, 0, 4);			/* room for the CRC; make_event adds it */
	/* make_event appends the CRC itself: drop our placeholder */
	b.len -= 4;
	ev = make_event(BL_EV_FORMAT_DESCRIPTION, (const uint8_t *) b.data, b.len,
					true, len);
	bl_buf_free(&b);
	return ev;
}

/* ---- the synthetic table: every column type ---- */

typedef struct syn_col
{
	uint8_t		type;			/* as in TABLE_MAP */
	uint8_t		nmeta;
	uint8_t		meta[2];
	uint16_t	coll;			/* 0 = not a character column */
	bool		unsig;
	bool		nullable;
	const char *name;
} syn_col;

static const syn_col all_cols[] = {
	{BL_T_TINY, 0, {0, 0}, 0, false, false, "id"},
	{BL_T_TINY, 0, {0, 0}, 0, true, true, "u8"},
	{BL_T_SHORT, 0, {0, 0}, 0, false, true, "i16"},
	{BL_T_INT24, 0, {0, 0}, 0, true, true, "u24"},
	{BL_T_LONG, 0, {0, 0}, 0, false, true, "i32"},
	{BL_T_LONGLONG, 0, {0, 0}, 0, true, true, "u64"},
	{BL_T_LONGLONG, 0, {0, 0}, 0, false, true, "i64"},
	{BL_T_FLOAT, 1, {4, 0}, 0, false, true, "f"},
	{BL_T_DOUBLE, 1, {8, 0}, 0, false, true, "d"},
	{BL_T_NEWDECIMAL, 2, {10, 2}, 0, false, true, "dec10_2"},
	{BL_T_NEWDECIMAL, 2, {65, 30}, 0, true, true, "dec65_30"},
	{BL_T_NEWDECIMAL, 2, {18, 0}, 0, false, true, "dec18"},
	{BL_T_YEAR, 0, {0, 0}, 0, false, true, "y"},
	{BL_T_DATE, 0, {0, 0}, 0, false, true, "dt"},
	{BL_T_NEWDATE, 0, {0, 0}, 0, false, true, "nd"},
	{BL_T_TIME, 0, {0, 0}, 0, false, true, "t_old"},
	{BL_T_TIME2, 1, {0, 0}, 0, false, true, "t0"},
	{BL_T_TIME2, 1, {2, 0}, 0, false, true, "t2"},
	{BL_T_TIME2, 1, {4, 0}, 0, false, true, "t4"},
	{BL_T_TIME2, 1, {6, 0}, 0, false, true, "t6"},
	{BL_T_DATETIME, 0, {0, 0}, 0, false, true, "dtm_old"},
	{BL_T_DATETIME2, 1, {0, 0}, 0, false, true, "dtm0"},
	{BL_T_DATETIME2, 1, {3, 0}, 0, false, true, "dtm3"},
	{BL_T_DATETIME2, 1, {6, 0}, 0, false, true, "dtm6"},
	{BL_T_TIMESTAMP, 0, {0, 0}, 0, false, true, "ts_old"},
	{BL_T_TIMESTAMP2, 1, {0, 0}, 0, false, true, "ts0"},
	{BL_T_TIMESTAMP2, 1, {1, 0}, 0, false, true, "ts1"},
	{BL_T_TIMESTAMP2, 1, {5, 0}, 0, false, true, "ts5"},
	{BL_T_VARCHAR, 2, {80, 0}, 45, false, true, "vc_utf8mb4"},
	{BL_T_VARCHAR, 2, {0x2c, 0x01}, 8, false, true, "vc_latin1_300"},
	{BL_T_VARCHAR, 2, {20, 0}, 63, false, true, "vbin"},
	{BL_T_VAR_STRING, 2, {30, 0}, 33, false, true, "vs_utf8"},
	{BL_T_STRING, 2, {0xfe, 40}, 255, false, true, "ch10"},
	{BL_T_STRING, 2, {0xee, 0x90}, 255, false, true, "ch100"},
	{BL_T_STRING, 2, {0xfe, 16}, 63, false, true, "bin16"},
	{BL_T_STRING, 2, {0xf7, 1}, 45, false, true, "e1"},
	{BL_T_STRING, 2, {0xf7, 2}, 8, false, true, "e2"},
	{BL_T_STRING, 2, {0xf8, 1}, 45, false, true, "s1"},
	{BL_T_STRING, 2, {0xf8, 8}, 45, false, true, "s8"},
	{BL_T_BIT, 2, {2, 1}, 0, false, true, "bit10"},
	{BL_T_BIT, 2, {0, 8}, 0, false, true, "bit64"},
	{BL_T_BIT, 2, {1, 0}, 0, false, true, "bit1"},
	{BL_T_BLOB, 1, {2}, 45, false, true, "txt"},
	{BL_T_BLOB, 1, {1}, 63, false, true, "tblob"},
	{BL_T_BLOB, 1, {3}, 8, false, true, "mtext"},
	{BL_T_BLOB, 1, {4}, 63, false, true, "lblob"},
	{BL_T_TINY_BLOB, 1, {1}, 45, false, true, "tb249"},
	{BL_T_MEDIUM_BLOB, 1, {3}, 45, false, true, "mb250"},
	{BL_T_LONG_BLOB, 1, {4}, 63, false, true, "lb251"},
	{BL_T_JSON, 1, {4}, 0, false, true, "j1"},
	{BL_T_GEOMETRY, 1, {4}, 0, false, true, "g"},
	{BL_T_VECTOR, 1, {4}, 63, false, true, "v"},
	{BL_T_JSON, 1, {4}, 0, false, true, "j2"},
	{BL_T_VARCHAR, 2, {60, 0}, 13, false, true, "vc_sjis"},
	{BL_T_VARCHAR, 2, {60, 0}, 35, false, true, "vc_ucs2"},
	{BL_T_VARCHAR, 2, {60, 0}, 54, false, true, "vc_utf16"},
	{BL_T_VARCHAR, 2, {60, 0}, 56, false, true, "vc_utf16le"},
	{BL_T_VARCHAR, 2, {60, 0}, 60, false, true, "vc_utf32"},
	{BL_T_VARCHAR, 2, {60, 0}, 28, false, true, "vc_gbk"},
	{BL_T_VARCHAR, 2, {60, 0}, 1, false, true, "vc_big5"},
	{BL_T_VARCHAR, 2, {60, 0}, 12, false, true, "vc_ujis"},
	{BL_T_VARCHAR, 2, {60, 0}, 19, false, true, "vc_euckr"},
	{BL_T_VARCHAR, 2, {60, 0}, 248, false, true, "vc_gb18030"},
	{BL_T_VARCHAR, 2, {60, 0}, 97, false, true, "vc_eucjpms"},
	{BL_T_VARCHAR, 2, {60, 0}, 51, false, true, "vc_cp1251"},
	{BL_T_VARCHAR, 2, {60, 0}, 37, false, true, "vc_keybcs2"},
	{BL_T_VARCHAR, 2, {60, 0}, 11, false, true, "vc_ascii"},
	{BL_T_VARCHAR, 2, {60, 0}, 1500, false, true, "vc_unknown"},
	{BL_T_VARCHAR, 2, {60, 0}, 2305, false, true, "vc_uca1400"},
	{BL_T_NULL, 0, {0, 0}, 0, false, true, "nul"},
};

/* The MariaDB table with compressed columns. */
static const syn_col maria_cols[] = {
	{BL_T_LONG, 0, {0, 0}, 0, false, false, "id"},
	{BL_T_MARIA_BLOB_COMPRESSED, 1, {2}, 45, false, true, "ctext"},
	{BL_T_MARIA_VARCHAR_COMPRESSED, 2, {100, 0}, 45, false, true, "cvc"},
	{BL_T_VARCHAR, 2, {100, 0}, 45, false, true, "vc"},
};

/* Odd fractional-second digits and unsigned types the first table lacks. */
static const syn_col odd_cols[] = {
	{BL_T_LONG, 0, {0, 0}, 0, true, false, "id"},
	{BL_T_SHORT, 0, {0, 0}, 0, true, true, "u16"},
	{BL_T_INT24, 0, {0, 0}, 0, false, true, "i24"},
	{BL_T_TINY, 0, {0, 0}, 0, true, true, "u8"},
	{BL_T_TIME2, 1, {1, 0}, 0, false, true, "t1"},
	{BL_T_TIME2, 1, {3, 0}, 0, false, true, "t3"},
	{BL_T_TIME2, 1, {5, 0}, 0, false, true, "t5"},
	{BL_T_DATETIME2, 1, {1, 0}, 0, false, true, "dtm1"},
	{BL_T_DATETIME2, 1, {5, 0}, 0, false, true, "dtm5"},
	{BL_T_TIMESTAMP2, 1, {3, 0}, 0, false, true, "ts3"},
	{BL_T_TIMESTAMP2, 1, {6, 0}, 0, false, true, "ts6"},
	{BL_T_NEWDECIMAL, 2, {1, 1}, 0, false, true, "dec1_1"},
	{BL_T_NEWDECIMAL, 2, {30, 29}, 0, false, true, "dec30_29"},
	{BL_T_STRING, 2, {0xfe, 3}, 11, false, true, "ch_ascii"},
	{BL_T_VARCHAR, 2, {10, 0}, 92, false, true, "vc_geostd8"},
	{BL_T_VARCHAR, 2, {10, 0}, 36, false, true, "vc_cp866"},
	{BL_T_VARCHAR, 2, {10, 0}, 95, false, true, "vc_cp932"},
	{BL_T_VARCHAR, 2, {10, 0}, 24, false, true, "vc_gb2312"},
};

typedef struct syn_table
{
	const syn_col *cols;
	uint32_t	ncols;
	uint32_t	njson;
} syn_table;

static const char *const enum_values[] = {"small", "medium", "l\xc3\xa4rge", ""};
static const char *const set_values[] = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"};

/* The type the decoder resolves a column to (STRING -> ENUM/SET, ...). */
static uint8_t
real_type(const syn_col *c)
{
	if (c->type == BL_T_STRING && (c->meta[0] == BL_T_ENUM || c->meta[0] == BL_T_SET))
		return c->meta[0];
	if (c->type == BL_T_NEWDATE)
		return BL_T_DATE;
	return c->type;
}

static bool
syn_is_numeric(uint8_t t)
{
	return t == BL_T_TINY || t == BL_T_SHORT || t == BL_T_INT24 ||
		t == BL_T_LONG || t == BL_T_LONGLONG || t == BL_T_NEWDECIMAL ||
		t == BL_T_FLOAT || t == BL_T_DOUBLE;
}

static bool
syn_is_character(uint8_t t)
{
	return t == BL_T_STRING || t == BL_T_VAR_STRING || t == BL_T_VARCHAR ||
		t == BL_T_BLOB || t == BL_T_TINY_BLOB || t == BL_T_MEDIUM_BLOB ||
		t == BL_T_LONG_BLOB || t == BL_T_MARIA_BLOB_COMPRESSED ||
		t == BL_T_MARIA_VARCHAR_COMPRESSED || t == BL_T_VECTOR;
}

typedef enum meta_style
{
	META_FULL_DEFAULT,			/* FULL, default charsets, names */
	META_FULL_COLUMN,			/* per-column charsets, key with prefix */
	META_NONE					/* no optional metadata (5.7, MINIMAL) */
} meta_style;

/* An MSB-first bitmap field from a predicate over the columns. */
static void
put_msb_bitmap(bl_buf *f, const bool *bits, uint32_t n)
{
	for (uint32_t i = 0; i < n; i += 8)
	{
		uint8_t		byte = 0;

		for (uint32_t k = 0; k < 8 && i + k < n; k++)
			if (bits[i + k])
				byte |= (uint8_t) (0x80 >> k);
		put_u8(f, byte);
	}
}

static void
put_field(bl_buf *o, uint8_t type, const bl_buf *f)
{
	put_u8(o, type);
	put_packed(o, f->len);
	put_bytes(o, f->data, f->len);
}

static void
put_table_map_body(bl_buf *o, uint64_t id, const syn_table *t, const char *db,
				   const char *name, meta_style style)
{
	bl_buf		m,
				f;
	bool		bits[128];
	uint32_t	n;

	bl_buf_init(&m);
	bl_buf_init(&f);
	put_le(o, id, 6);
	put_le(o, 1, 2);
	put_u8(o, strlen(db));
	put_bytes(o, db, strlen(db) + 1);
	put_u8(o, strlen(name));
	put_bytes(o, name, strlen(name) + 1);
	put_packed(o, t->ncols);
	for (uint32_t i = 0; i < t->ncols; i++)
		put_u8(o, t->cols[i].type);
	for (uint32_t i = 0; i < t->ncols; i++)
		put_bytes(&m, t->cols[i].meta, t->cols[i].nmeta);
	put_packed(o, m.len);
	put_bytes(o, m.data, m.len);
	for (uint32_t i = 0; i < t->ncols; i += 8)
	{
		uint8_t		byte = 0;

		for (uint32_t k = 0; k < 8 && i + k < t->ncols; k++)
			if (t->cols[i + k].nullable)
				byte |= (uint8_t) (1 << k);
		put_u8(o, byte);
	}
	if (style == META_NONE)
		goto done;

	/* SIGNEDNESS */
	n = 0;
	for (uint32_t i = 0; i < t->ncols; i++)
		if (syn_is_numeric(real_type(&t->cols[i])))
			bits[n++] = t->cols[i].unsig;
	bl_buf_reset(&f);
	put_msb_bitmap(&f, bits, n);
	put_field(o, 1, &f);

	if (style == META_FULL_DEFAULT)
	{
		/* DEFAULT_CHARSET: 45, then the others by character-column index */
		uint32_t	k = 0;

		bl_buf_reset(&f);
		put_packed(&f, 45);
		for (uint32_t i = 0; i < t->ncols; i++)
			if (syn_is_character(real_type(&t->cols[i])))
			{
				if (t->cols[i].coll != 45)
				{
					put_packed(&f, k);
					put_packed(&f, t->cols[i].coll);
				}
				k++;
			}
		put_field(o, 2, &f);
		/* ENUM_AND_SET_DEFAULT_CHARSET */
		k = 0;
		bl_buf_reset(&f);
		put_packed(&f, 45);
		for (uint32_t i = 0; i < t->ncols; i++)
		{
			uint8_t		rt = real_type(&t->cols[i]);

			if (rt == BL_T_ENUM || rt == BL_T_SET)
			{
				if (t->cols[i].coll != 45)
				{
					put_packed(&f, k);
					put_packed(&f, t->cols[i].coll);
				}
				k++;
			}
		}
		put_field(o, 10, &f);
		/* COLUMN_NAME */
		bl_buf_reset(&f);
		for (uint32_t i = 0; i < t->ncols; i++)
			put_lenstr(&f, t->cols[i].name);
		put_field(o, 4, &f);
	}
	else
	{
		/* COLUMN_CHARSET and ENUM_AND_SET_COLUMN_CHARSET */
		bl_buf_reset(&f);
		for (uint32_t i = 0; i < t->ncols; i++)
			if (syn_is_character(real_type(&t->cols[i])))
				put_packed(&f, t->cols[i].coll);
		put_field(o, 3, &f);
		bl_buf_reset(&f);
		for (uint32_t i = 0; i < t->ncols; i++)
		{
			uint8_t		rt = real_type(&t->cols[i]);

			if (rt == BL_T_ENUM || rt == BL_T_SET)
				put_packed(&f, t->cols[i].coll);
		}
		put_field(o, 11, &f);
	}

	/* SET_STR_VALUE, ENUM_STR_VALUE */
	for (int pass = 0; pass < 2; pass++)
	{
		uint8_t		want = pass == 0 ? BL_T_SET : BL_T_ENUM;

		bl_buf_reset(&f);
		for (uint32_t i = 0; i < t->ncols; i++)
		{
			if (real_type(&t->cols[i]) != want)
				continue;
			if (want == BL_T_SET)
			{
				put_packed(&f, 10);
				for (int k = 0; k < 10; k++)
					put_lenstr(&f, set_values[k]);
			}
			else
			{
				put_packed(&f, 4);
				for (int k = 0; k < 4; k++)
					put_lenstr(&f, enum_values[k]);
			}
		}
		put_field(o, pass == 0 ? 5 : 6, &f);
	}

	/* GEOMETRY_TYPE, VECTOR_DIMENSIONALITY */
	bl_buf_reset(&f);
	for (uint32_t i = 0; i < t->ncols; i++)
		if (t->cols[i].type == BL_T_GEOMETRY)
			put_packed(&f, 1);
	put_field(o, 7, &f);
	bl_buf_reset(&f);
	for (uint32_t i = 0; i < t->ncols; i++)
		if (t->cols[i].type == BL_T_VECTOR)
			put_packed(&f, 2);
	put_field(o, 13, &f);

	/* primary key */
	bl_buf_reset(&f);
	if (style == META_FULL_DEFAULT)
	{
		put_packed(&f, 0);
		put_field(o, 8, &f);
	}
	else
	{
		put_packed(&f, 0);
		put_packed(&f, 0);
		put_packed(&f, t->ncols > 28 ? 28 : 0);
		put_packed(&f, 10);
		put_field(o, 9, &f);
	}

	/* COLUMN_VISIBILITY: the second column invisible */
	for (uint32_t i = 0; i < t->ncols && i < 128; i++)
		bits[i] = i != 1;
	bl_buf_reset(&f);
	put_msb_bitmap(&f, bits, t->ncols < 128 ? t->ncols : 128);
	put_field(o, 12, &f);

	/* an unknown field, skipped by length */
	bl_buf_reset(&f);
	put_u8(&f, 0x42);
	put_field(o, 150, &f);
done:
	bl_buf_free(&m);
	bl_buf_free(&f);
}

/* ---- values ---- */

static int
syn_pack_length(const syn_col *c)
{
	switch (real_type(c))
	{
		case BL_T_ENUM:
		case BL_T_SET:
			return c->meta[1];
		case BL_T_BIT:
			return c->meta[1] + (c->meta[0] ? 1 : 0);
		case BL_T_NEWDECIMAL:
			return bl_decimal_binary_size(c->meta[0], c->meta[1]);
		default:
			return 0;
	}
}

static void
put_text_value(bl_buf *o, const syn_col *c, int lb, int variant)
{
	static const char *const texts[] = {
		"hello, world",
		"\xe3\x81\x82\x82\xa0\xff\x00z\\\"\n\x81\x40",
		""
	};
	const char *s = texts[variant % 3];
	size_t		n = variant % 3 == 1 ? 13 : strlen(s);

	(void) c;
	put_le(o, n, lb);
	put_bytes(o, s, n);
}

static void
put_json_doc(bl_buf *o, int variant)
{
	/* {"a":1}, [true,"x"] as a small array, the null literal */
	static const uint8_t obj[] = {
		0x00, 0x01, 0x00, 0x0c, 0x00, 0x0b, 0x00, 0x01, 0x00, 0x05, 0x01, 0x00, 'a'
	};
	static const uint8_t arr[] = {
		0x02, 0x02, 0x00, 0x0c, 0x00, 0x04, 0x01, 0x00, 0x0c, 0x0a, 0x00, 0x01, 'x'
	};
	static const uint8_t lit[] = {0x04, 0x00};

	switch (variant % 3)
	{
		case 0:
			put_le(o, sizeof(obj), 4);
			put_bytes(o, obj, sizeof(obj));
			break;
		case 1:
			put_le(o, sizeof(arr), 4);
			put_bytes(o, arr, sizeof(arr));
			break;
		default:
			put_le(o, sizeof(lit), 4);
			put_bytes(o, lit, sizeof(lit));
			break;
	}
}

/* A partial JSON diff: REPLACE $.a with 2 */
static void
put_json_diff(bl_buf *o)
{
	bl_buf		d;

	bl_buf_init(&d);
	put_u8(&d, 0);
	put_lenstr(&d, "$.a");
	put_packed(&d, 3);
	put_u8(&d, 0x05);
	put_le(&d, 2, 2);
	put_le(o, d.len, 4);
	put_bytes(o, d.data, d.len);
	bl_buf_free(&d);
}

static void
put_value(bl_buf *o, const syn_col *c, int variant, bool diff)
{
	int			v = variant % 3;
	uint8_t		rt = real_type(c);
	int			fsp = c->meta[0];
	int			fb = (fsp + 1) / 2;

	switch (rt)
	{
		case BL_T_TINY:
			put_le(o, v == 0 ? 0x7f : v == 1 ? 0x80 : 0, 1);
			break;
		case BL_T_SHORT:
			put_le(o, v == 0 ? 0x1234 : v == 1 ? 0x8000 : 0xffff, 2);
			break;
		case BL_T_INT24:
			put_le(o, v == 0 ? 0x123456 : v == 1 ? 0x800000 : 0xffffff, 3);
			break;
		case BL_T_LONG:
			put_le(o, v == 0 ? 0x12345678 : v == 1 ? 0x80000000 : 0xffffffff, 4);
			break;
		case BL_T_LONGLONG:
			put_le(o, v == 0 ? UINT64_C(1234567890123) : v == 1 ?
				   UINT64_C(0x8000000000000000) : UINT64_MAX, 8);
			break;
		case BL_T_FLOAT:
			put_le(o, v == 0 ? 0x3fc00000 : v == 1 ? 0x7fc00000 : 0x80000001, 4);
			break;
		case BL_T_DOUBLE:
			put_le(o, v == 0 ? UINT64_C(0x400921fb54442d18) : v == 1 ?
				   UINT64_C(0x7ff0000000000000) : UINT64_C(0x0000000000000001), 8);
			break;
		case BL_T_NEWDECIMAL:
			{
				int			n = syn_pack_length(c);

				for (int i = 0; i < n; i++)
				{
					uint8_t		b = v == 0 ? (i == n - 1 ? 0x07 : 0x00) :
						v == 1 ? (i == n - 1 ? 0xf8 : 0xff) : 0x00;

					if (i == 0)
						b ^= 0x80;
					put_u8(o, b);
				}
				break;
			}
		case BL_T_YEAR:
			put_u8(o, v == 0 ? 124 : v == 1 ? 0 : 255);
			break;
		case BL_T_DATE:
			put_le(o, v == 0 ? (2024 << 9 | 5 << 5 | 6) : v == 1 ? 0 : 0xffffff, 3);
			break;
		case BL_T_TIME:
			put_le(o, v == 0 ? 123456 : v == 1 ? (uint32_t) -10203 & 0xffffff : 8385959, 3);
			break;
		case BL_T_TIME2:
			if (v == 0)
			{
				put_be(o, 0x800000 | (12 << 12 | 34 << 6 | 56), 3);
				put_be(o, 0x12, fb);
			}
			else if (v == 1)
			{
				put_u8(o, 0x7f);
				for (int i = 1; i < 3 + fb; i++)
					put_u8(o, 0xff);
			}
			else
			{
				put_be(o, 0x800000 | (838 << 12 | 59 << 6 | 59), 3);
				put_be(o, 0, fb);
			}
			break;
		case BL_T_DATETIME:
			put_le(o, v == 0 ? UINT64_C(20240506070809) : v == 1 ? 0 :
				   UINT64_C(99991231235959), 8);
			break;
		case BL_T_DATETIME2:
			{
				uint64_t	ym = v == 0 ? 2024 * 13 + 5 : v == 1 ? 0 : 9999 * 13 + 12;
				uint64_t	ymd = ym << 5 | (v == 0 ? 6 : v == 1 ? 0 : 31);
				uint64_t	hms = v == 0 ? (7 << 12 | 8 << 6 | 9) : v == 1 ? 0 :
					(23 << 12 | 59 << 6 | 59);

				put_be(o, UINT64_C(1) << 39 | ymd << 17 | hms, 5);
				put_be(o, v == 2 ? (fb == 3 ? 999999 : fb == 2 ? 9999 : 99) : 0, fb);
				break;
			}
		case BL_T_TIMESTAMP:
			put_le(o, v == 0 ? 1700000000 : v == 1 ? 0 : 0xffffffff, 4);
			break;
		case BL_T_TIMESTAMP2:
			put_be(o, v == 0 ? 1700000000 : v == 1 ? 0 : 0xffffffff, 4);
			put_be(o, v == 0 ? 1 : 0, fb);
			break;
		case BL_T_VARCHAR:
		case BL_T_VAR_STRING:
		case BL_T_MARIA_VARCHAR_COMPRESSED:
			put_text_value(o, c, (c->meta[0] | c->meta[1] << 8) > 255 ? 2 : 1, variant);
			break;
		case BL_T_STRING:
			{
				uint32_t	len = c->meta[1];

				if ((c->meta[0] & 0x30) != 0x30)
					len |= ((uint32_t) (c->meta[0] & 0x30) ^ 0x30) << 4;
				put_text_value(o, c, len > 255 ? 2 : 1, variant);
				break;
			}
		case BL_T_ENUM:
			put_le(o, v == 0 ? 2 : v == 1 ? 0 : 200, syn_pack_length(c));
			break;
		case BL_T_SET:
			put_le(o, v == 0 ? 5 : v == 1 ? 0 : UINT64_MAX, syn_pack_length(c));
			break;
		case BL_T_BIT:
			put_be(o, v == 0 ? 0x155 : v == 1 ? 0 : UINT64_MAX, syn_pack_length(c));
			break;
		case BL_T_BLOB:
		case BL_T_TINY_BLOB:
		case BL_T_MEDIUM_BLOB:
		case BL_T_LONG_BLOB:
		case BL_T_MARIA_BLOB_COMPRESSED:
			put_text_value(o, c, c->meta[0], variant);
			break;
		case BL_T_JSON:
			if (diff)
				put_json_diff(o);
			else
				put_json_doc(o, variant);
			break;
		case BL_T_GEOMETRY:
			{
				static const uint8_t point[25] = {
					0, 0, 0, 0, 1, 1, 0, 0, 0,
					0, 0, 0, 0, 0, 0, 0xf0, 0x3f,
					0, 0, 0, 0, 0, 0, 0, 0x40
				};

				put_le(o, v == 2 ? 0 : 25, 4);
				if (v != 2)
					put_bytes(o, point, 25);
				break;
			}
		case BL_T_VECTOR:
			put_le(o, v == 2 ? 0 : 8, 4);
			if (v != 2)
			{
				put_le(o, 0x3f800000, 4);
				put_le(o, 0xc0200000, 4);
			}
			break;
		case BL_T_NULL:
		default:
			break;
	}
}

/*
 * One row image: NULL bitmap over the present columns, then the values.
 * variant 2 makes every nullable column NULL; json_diff writes diffs for
 * JSON columns.
 */
static void
put_image(bl_buf *o, const syn_table *t, const bool *present, int variant,
		  bool json_diff)
{
	bool		isnull[128];
	uint32_t	n = 0;

	for (uint32_t i = 0; i < t->ncols; i++)
		if (present[i])
			isnull[n++] = variant == 2 && t->cols[i].nullable;
	for (uint32_t i = 0; i < n; i += 8)
	{
		uint8_t		byte = 0;

		for (uint32_t k = 0; k < 8 && i + k < n; k++)
			if (isnull[i + k])
				byte |= (uint8_t) (1 << k);
		put_u8(o, byte);
	}
	for (uint32_t i = 0; i < t->ncols; i++)
		if (present[i] && !(variant == 2 && t->cols[i].nullable))
			put_value(o, &t->cols[i], variant,
					  json_diff && t->cols[i].type == BL_T_JSON);
}

static void
put_lsb_bitmap(bl_buf *o, const bool *bits, uint32_t n)
{
	for (uint32_t i = 0; i < n; i += 8)
	{
		uint8_t		byte = 0;

		for (uint32_t k = 0; k < 8 && i + k < n; k++)
			if (bits[i + k])
				byte |= (uint8_t) (1 << k);
		put_u8(o, byte);
	}
}

typedef enum rows_shape
{
	SHAPE_FULL,					/* every column in every image */
	SHAPE_MINIMAL,				/* before: key only; after: some columns */
	SHAPE_PARTIAL_JSON			/* PARTIAL_UPDATE_ROWS with JSON diffs */
} rows_shape;

/* The rows part of a rows event: bitmaps and three rows (the header is
 * written by put_rows_body). */
static void
put_rows_data(bl_buf *o, const syn_table *t, bl_op op, rows_shape shape,
			  const bool *before_present, const bool *after_present)
{
	for (int row = 0; row < 3; row++)
	{
		if (op != BL_OP_INSERT)
			put_image(o, t, before_present, row, false);
		/* the first row's JSON columns are diffs against {"a":1} */
		if (shape == SHAPE_PARTIAL_JSON && row == 0)
		{
			bool		bits[8] = {true, true, true, true, true, true, true, true};

			put_packed(o, 1);
			put_lsb_bitmap(o, bits, t->njson);
		}
		else if (shape == SHAPE_PARTIAL_JSON)
			put_packed(o, 0);
		if (op != BL_OP_DELETE)
			put_image(o, t, after_present, (row + 1) % 3,
					  shape == SHAPE_PARTIAL_JSON && row == 0);
	}
}

static void
put_rows_body(bl_buf *o, uint64_t id, const syn_table *t, bl_op op, bool v2,
			  rows_shape shape, bool zlib_rows)
{
	bool		before[128];
	bool		after[128];
	bl_buf		rows;

	for (uint32_t i = 0; i < t->ncols; i++)
	{
		before[i] = shape != SHAPE_MINIMAL || i == 0;
		after[i] = shape != SHAPE_MINIMAL || i % 3 == 1;
	}
	put_le(o, id, 6);
	put_le(o, BL_ROWS_STMT_END_F, 2);
	if (v2)
		put_le(o, 2, 2);
	put_packed(o, t->ncols);
	put_lsb_bitmap(o, op == BL_OP_INSERT ? after : before, t->ncols);
	if (op == BL_OP_UPDATE)
		put_lsb_bitmap(o, after, t->ncols);
	bl_buf_init(&rows);
	put_rows_data(&rows, t, op, shape, before, after);
	if (zlib_rows)
	{
		uLongf		clen = compressBound(rows.len);
		uint8_t    *cbuf = malloc(clen);

		if (cbuf == NULL || compress(cbuf, &clen, (const Bytef *) rows.data, rows.len) != Z_OK)
			abort();
		put_u8(o, 0x80 | 4);
		put_be(o, rows.len, 4);
		put_bytes(o, cbuf, clen);
		free(cbuf);
	}
	else
		put_bytes(o, rows.data, rows.len);
	bl_buf_free(&rows);
}

/* ---- the synthetic prefixes ---- */

static syn_table all_table;
static syn_table maria_table;
static syn_table odd_table;

/* The synthetic table a map id stands for. */
static const syn_table *
table_of(uint64_t id)
{
	return id == 1005 ? &maria_table : id == 1006 ? &odd_table : &all_table;
}

static void
init_tables(void)
{
	all_table.cols = all_cols;
	all_table.ncols = sizeof(all_cols) / sizeof(all_cols[0]);
	for (uint32_t i = 0; i < all_table.ncols; i++)
		if (all_cols[i].type == BL_T_JSON)
			all_table.njson++;
	maria_table.cols = maria_cols;
	maria_table.ncols = sizeof(maria_cols) / sizeof(maria_cols[0]);
	odd_table.cols = odd_cols;
	odd_table.ncols = sizeof(odd_cols) / sizeof(odd_cols[0]);
}

static void
add_map(prefix *p, uint64_t id, const syn_table *t, const char *name, meta_style style)
{
	bl_buf		b;

	bl_buf_init(&b);
	put_table_map_body(&b, id, t, "fuzzdb", name, style);
	p->maps[p->nmaps] = make_event(BL_EV_TABLE_MAP, (const uint8_t *) b.data, b.len,
								   p->crc, &p->map_len[p->nmaps]);
	p->map_id[p->nmaps++] = id;
	bl_buf_free(&b);
}

static void
init_synthetic(void)
{
	prefix	   *my = &slots[SLOT_MYSQL];
	prefix	   *ma = &slots[SLOT_MARIADB];

	init_tables();
	my->crc = true;
	my->fde = make_fde("8.4.3", false, &my->fde_len);
	add_map(my, 1001, &all_table, "all_types", META_FULL_DEFAULT);
	add_map(my, 1002, &all_table, "all_types_cs", META_FULL_COLUMN);
	add_map(my, 1003, &all_table, "all_types_min", META_NONE);
	add_map(my, 1006, &odd_table, "odd_fsp", META_FULL_DEFAULT);
	my->loaded = true;

	ma->crc = true;
	ma->fde = make_fde("10.11.6-MariaDB-log", true, &ma->fde_len);
	add_map(ma, 1004, &all_table, "all_types", META_FULL_DEFAULT);
	add_map(ma, 1005, &maria_table, "compressed_cols", META_FULL_DEFAULT);
	ma->loaded = true;
}

/* ---- the sample prefixes ---- */

static char samples_dir[4096];

static bool
dir_exists(const char *d)
{
	char		probe[4200];
	FILE	   *f;

	snprintf(probe, sizeof(probe), "%s/README.md", d);
	f = fopen(probe, "rb");
	if (f == NULL)
		return false;
	fclose(f);
	return true;
}

static void
find_samples(const char *argv0)
{
	const char *env = getenv("BL_SAMPLES");
	char		tmp[4096];

	if (env && env[0])
	{
		snprintf(samples_dir, sizeof(samples_dir), "%s", env);
		return;
	}
	if (dir_exists("../shared/binlog-samples"))
	{
		snprintf(samples_dir, sizeof(samples_dir), "../shared/binlog-samples");
		return;
	}
	/* build/fuzz/fuzz_event -> ../shared/binlog-samples of the checkout */
	snprintf(tmp, sizeof(tmp), "%s", argv0 ? argv0 : ".");
	snprintf(samples_dir, sizeof(samples_dir), "%s/../../../shared/binlog-samples",
			 dirname(tmp));
}

static void
load_sample(prefix *p)
{
	char		path[8300];
	size_t		size;
	uint8_t    *data;
	size_t		pos = BL_BINLOG_MAGIC_LEN;
	size_t		len;
	uint8_t		tm_phl = 8;

	snprintf(path, sizeof(path), "%s/%s", samples_dir, p->sample);
	data = fuzz_read_file(path, &size);
	if (data == NULL)
	{
		fprintf(stderr, "fuzz_event: warning: sample %s not found: its slot does nothing\n", path);
		return;
	}
	while ((len = fuzz_event_len(data, size, pos)) > 0)
	{
		uint8_t		type = data[pos + 4];

		if (type == BL_EV_FORMAT_DESCRIPTION && p->fde == NULL)
		{
			bl_decoder *dec = bl_decoder_create(NULL);
			bl_event	ev;
			bl_error	err;

			p->fde = dup_bytes(data + pos, len);
			p->fde_len = len;
			if (dec == NULL || bl_decode_event(dec, p->fde, len, pos, &ev, &err) != 0)
			{
				fprintf(stderr, "fuzz_event: %s: FORMAT_DESCRIPTION does not decode\n", path);
				abort();
			}
			p->crc = ev.u.fde.checksum_alg == BL_CHECKSUM_CRC32;
			/* TABLE_MAP's post-header length: 6 (4-byte ids) or 8 */
			if (len > BL_EVENT_HEADER_LEN + 57 + BL_EV_TABLE_MAP - 1)
				tm_phl = data[pos + BL_EVENT_HEADER_LEN + 57 + BL_EV_TABLE_MAP - 1];
			bl_decoder_destroy(dec);
		}
		else if (type == BL_EV_TABLE_MAP && p->fde &&
				 len >= BL_EVENT_HEADER_LEN + 6)
		{
			uint64_t	id = bl_load_le(data + pos + BL_EVENT_HEADER_LEN, tm_phl == 6 ? 4 : 6);
			int			k;

			for (k = 0; k < p->nmaps; k++)
				if (p->map_id[k] == id)
					break;
			if (k < MAX_MAPS)
			{
				if (k < p->nmaps)
					free(p->maps[k]);
				else
					p->nmaps++;
				p->maps[k] = dup_bytes(data + pos, len);
				p->map_len[k] = len;
				p->map_id[k] = id;
			}
		}
		pos += len;
	}
	free(data);
	if (p->fde == NULL)
	{
		fprintf(stderr, "fuzz_event: %s has no FORMAT_DESCRIPTION\n", path);
		abort();
	}
	p->loaded = true;
}

/* ---- the target ---- */

static bl_decoder *
prefix_decoder(const prefix *p)
{
	bl_decoder_options opts;
	bl_decoder *dec;
	bl_event	ev;
	bl_error	err;
	uint64_t	pos = BL_BINLOG_MAGIC_LEN;

	bl_decoder_options_init(&opts);
	opts.verify_checksum = false;
	opts.schema_lookup = fuzz_schema_lookup;
	dec = bl_decoder_create(&opts);
	if (dec == NULL)
		abort();
	bl_decoder_set_file(dec, "fuzz-event.000001", 17);
	if (bl_decode_event(dec, p->fde, p->fde_len, pos, &ev, &err) != 0)
		fuzz_die("prefix FORMAT_DESCRIPTION", err.message);
	pos += p->fde_len;
	for (int i = 0; i < p->nmaps; i++)
	{
		if (bl_decode_event(dec, p->maps[i], p->map_len[i], pos, &ev, &err) != 0)
			fuzz_die("prefix TABLE_MAP", err.message);
		pos += p->map_len[i];
	}
	return dec;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const prefix *p;
	bl_decoder *dec;
	fuzz_bufs	b;
	uint8_t    *ev;
	size_t		len;

	if (size < 2)
		return 0;
	p = &slots[data[0] % NSLOTS];
	if (!p->loaded)
		return 0;
	dec = prefix_decoder(p);
	fuzz_bufs_init(&b);
	ev = make_event(data[1], data + 2, size - 2, p->crc, &len);
	(void) fuzz_run_event(dec, ev, len, 4096, &b);
	free(ev);
	bl_decoder_destroy(dec);
	fuzz_bufs_free(&b);
	return 0;
}

/* ---- seeds ---- */

static void
write_input(const char *dir, int slot, uint8_t type, const uint8_t *body, size_t blen)
{
	uint8_t    *p = malloc(blen + 2);

	if (p == NULL)
		abort();
	p[0] = (uint8_t) slot;
	p[1] = type;
	if (blen)
		memcpy(p + 2, body, blen);
	fuzz_write_seed(dir, "ev", p, blen + 2);
	free(p);
}

/* An inner event of a TRANSACTION_PAYLOAD: header and body, no checksum. */
static void
put_inner_event(bl_buf *o, uint8_t type, const bl_buf *body)
{
	size_t		len;
	uint8_t    *ev = make_event(type, (const uint8_t *) body->data, body->len, false, &len);

	put_bytes(o, ev, len);
	free(ev);
}

static void
write_payload_seed(const char *dir, int slot, const bl_buf *inner, bool zstd)
{
	bl_buf		b;
	const void *payload = inner->data;
	size_t		plen = inner->len;
	void	   *z = NULL;

	if (zstd)
	{
		size_t		cap = ZSTD_compressBound(inner->len);

		z = malloc(cap);
		if (z == NULL)
			abort();
		plen = ZSTD_compress(z, cap, inner->data, inner->len, 3);
		if (ZSTD_isError(plen))
			abort();
		payload = z;
	}
	bl_buf_init(&b);
	put_packed(&b, 2);			/* compression type */
	put_packed(&b, zstd ? 1 : 3);
	put_packed(&b, zstd ? 0 : 255);
	put_packed(&b, 3);			/* uncompressed size */
	put_packed(&b, inner->len < 251 ? 1 : inner->len < 65536 ? 3 : 4);
	put_packed(&b, inner->len);
	put_packed(&b, 1);			/* payload size */
	put_packed(&b, plen < 251 ? 1 : plen < 65536 ? 3 : 4);
	put_packed(&b, plen);
	put_packed(&b, 0);			/* end of the header */
	put_bytes(&b, payload, plen);
	write_input(dir, slot, BL_EV_TRANSACTION_PAYLOAD, (const uint8_t *) b.data, b.len);
	bl_buf_free(&b);
	free(z);
}

/*
 * A table name that makes fuzz_schema_lookup() (fuzz_common.h) describe
 * the all-types table: one byte per column whose value modulo 28 picks an
 * information_schema type that fits the column, and whose other bits vary
 * the name (none above 127), signedness, ENUM/SET members, key and charset.
 */
static void
schema_table_name(char *name, size_t size)
{
	uint32_t	n = all_table.ncols < size - 1 ? all_table.ncols : (uint32_t) size - 1;

	for (uint32_t i = 0; i < n; i++)
	{
		int			idx;

		switch (real_type(&all_cols[i]))
		{
			case BL_T_TINY: idx = 0; break;
			case BL_T_SHORT: idx = 1; break;
			case BL_T_INT24: idx = 2; break;
			case BL_T_LONG: idx = 3; break;
			case BL_T_LONGLONG: idx = 4; break;
			case BL_T_FLOAT: idx = 5; break;
			case BL_T_DOUBLE: idx = 6; break;
			case BL_T_NEWDECIMAL: idx = 7; break;
			case BL_T_DATE: idx = 8; break;
			case BL_T_TIME: case BL_T_TIME2: idx = 9; break;
			case BL_T_DATETIME: case BL_T_DATETIME2: idx = 10; break;
			case BL_T_TIMESTAMP: case BL_T_TIMESTAMP2: idx = 11; break;
			case BL_T_YEAR: idx = 12; break;
			case BL_T_STRING: idx = 13; break;
			case BL_T_VARCHAR: case BL_T_VAR_STRING: idx = 15; break;
			case BL_T_BLOB: idx = 17; break;
			case BL_T_JSON: idx = 19; break;
			case BL_T_ENUM: idx = 20; break;
			case BL_T_SET: idx = 21; break;
			case BL_T_BIT: idx = 22; break;
			case BL_T_VECTOR: idx = 23; break;
			case BL_T_GEOMETRY: idx = 24; break;
			case BL_T_NULL: idx = 27; break;	/* no data type */
			default: idx = 26; break;	/* a type the decoder does not know */
		}
		name[i] = (char) (idx + 28 * (1 + i % 3));
	}
	name[n] = '\0';
}

/* TRANSACTION_PAYLOADs that map tables themselves (seeds for the schema
 * provider and for the table cache growing past its first 64 slots). */
static void
write_mapping_payload_seeds(const char *dir)
{
	bl_buf		b,
				inner;
	char		name[128];

	bl_buf_init(&b);
	bl_buf_init(&inner);
	schema_table_name(name, sizeof(name));
	for (int style = META_FULL_DEFAULT; style <= META_NONE; style++)
	{
		bl_buf_reset(&inner);
		bl_buf_reset(&b);
		put_table_map_body(&b, 1010 + style, &all_table, "fuzz", name, (meta_style) style);
		put_inner_event(&inner, BL_EV_TABLE_MAP, &b);
		bl_buf_reset(&b);
		put_rows_body(&b, 1010 + style, &all_table, BL_OP_INSERT, true, SHAPE_FULL, false);
		put_inner_event(&inner, BL_EV_WRITE_ROWS_V2, &b);
		bl_buf_reset(&b);
		put_rows_body(&b, 1010 + style, &all_table, BL_OP_UPDATE, true, SHAPE_MINIMAL, false);
		put_inner_event(&inner, BL_EV_UPDATE_ROWS_V2, &b);
		write_payload_seed(dir, SLOT_MYSQL, &inner, false);
	}
	bl_buf_reset(&inner);
	for (int id = 0; id < 40; id++)
	{
		bl_buf_reset(&b);
		put_table_map_body(&b, 5000 + (uint64_t) id * 7919, &maria_table, "fuzzdb", "many",
						   META_NONE);
		put_inner_event(&inner, BL_EV_TABLE_MAP, &b);
	}
	write_payload_seed(dir, SLOT_MYSQL, &inner, false);
	bl_buf_free(&b);
	bl_buf_free(&inner);
}

/*
 * MariaDB's compressed QUERY (with a charset status variable), and
 * payloads holding what they must not: a FORMAT_DESCRIPTION, a payload.
 */
static void
write_odd_seeds(const char *dir)
{
	static const char sql[] = "INSERT INTO t VALUES ('\xe9t\xe9', 'caf\xe9'), ('a', 'b')";
	bl_buf		b,
				inner;
	uLongf		clen = compressBound(sizeof(sql) - 1);
	uint8_t    *cbuf = malloc(clen);

	if (cbuf == NULL || compress(cbuf, &clen, (const Bytef *) sql, sizeof(sql) - 1) != Z_OK)
		abort();
	bl_buf_init(&b);
	bl_buf_init(&inner);
	put_le(&b, 42, 4);			/* thread id */
	put_le(&b, 0, 4);			/* exec time */
	put_u8(&b, 4);				/* db length */
	put_le(&b, 0, 2);			/* error code */
	put_le(&b, 7, 2);			/* status variables */
	put_u8(&b, 4);				/* Q_CHARSET_CODE: latin1 client */
	put_le(&b, 8, 2);
	put_le(&b, 8, 2);
	put_le(&b, 8, 2);
	put_bytes(&b, "shop", 5);
	put_u8(&b, 0x80 | 1);
	put_be(&b, sizeof(sql) - 1, 1);
	put_bytes(&b, cbuf, clen);
	write_input(dir, SLOT_MARIADB, BL_EV_MARIA_QUERY_COMPRESSED, (const uint8_t *) b.data, b.len);
	free(cbuf);

	/* a payload holding a FORMAT_DESCRIPTION, and one holding a payload */
	bl_buf_reset(&b);
	put_bytes(&b, slots[SLOT_MYSQL].fde + BL_EVENT_HEADER_LEN,
			  slots[SLOT_MYSQL].fde_len - BL_EVENT_HEADER_LEN - BL_CHECKSUM_LEN);
	put_inner_event(&inner, BL_EV_FORMAT_DESCRIPTION, &b);
	write_payload_seed(dir, SLOT_MYSQL, &inner, false);
	bl_buf_reset(&b);
	put_packed(&b, 2);
	put_packed(&b, 3);
	put_packed(&b, 255);
	put_packed(&b, 0);
	put_bytes(&b, inner.data, inner.len);
	bl_buf_reset(&inner);
	put_inner_event(&inner, BL_EV_TRANSACTION_PAYLOAD, &b);
	write_payload_seed(dir, SLOT_MYSQL, &inner, false);
	bl_buf_free(&b);
	bl_buf_free(&inner);
}

static void
write_synthetic_seeds(const char *dir)
{
	static const struct
	{
		uint8_t		type;
		bl_op		op;
		bool		v2;
		bool		zlib;
	}			kinds[] = {
		{BL_EV_WRITE_ROWS_V2, BL_OP_INSERT, true, false},
		{BL_EV_UPDATE_ROWS_V2, BL_OP_UPDATE, true, false},
		{BL_EV_DELETE_ROWS_V2, BL_OP_DELETE, true, false},
		{BL_EV_WRITE_ROWS_V1, BL_OP_INSERT, false, false},
		{BL_EV_UPDATE_ROWS_V1, BL_OP_UPDATE, false, false},
		{BL_EV_DELETE_ROWS_V1, BL_OP_DELETE, false, false},
		{BL_EV_MARIA_WRITE_ROWS_COMPRESSED_V1, BL_OP_INSERT, false, true},
		{BL_EV_MARIA_UPDATE_ROWS_COMPRESSED_V1, BL_OP_UPDATE, false, true},
		{BL_EV_MARIA_DELETE_ROWS_COMPRESSED_V1, BL_OP_DELETE, false, true},
		{BL_EV_MARIA_WRITE_ROWS_COMPRESSED, BL_OP_INSERT, true, true},
		{BL_EV_MARIA_UPDATE_ROWS_COMPRESSED, BL_OP_UPDATE, true, true},
		{BL_EV_MARIA_DELETE_ROWS_COMPRESSED, BL_OP_DELETE, true, true},
	};
	bl_buf		b;
	bl_buf		inner;

	bl_buf_init(&b);
	bl_buf_init(&inner);
	for (int s = SLOT_MYSQL; s <= SLOT_MARIADB; s++)
	{
		const prefix *p = &slots[s];

		for (int m = 0; m < p->nmaps; m++)
		{
			const syn_table *t = table_of(p->map_id[m]);

			for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
			{
				bool		maria_kind = kinds[k].type >= BL_EV_MARIA_WRITE_ROWS_COMPRESSED_V1;

				if (maria_kind != (s == SLOT_MARIADB) &&
					!(s == SLOT_MARIADB && !kinds[k].v2))
					continue;
				for (int shape = SHAPE_FULL; shape <= SHAPE_MINIMAL; shape++)
				{
					if (shape == SHAPE_MINIMAL && kinds[k].op == BL_OP_INSERT)
						continue;
					bl_buf_reset(&b);
					put_rows_body(&b, p->map_id[m], t, kinds[k].op, kinds[k].v2,
								  (rows_shape) shape, kinds[k].zlib);
					write_input(dir, s, kinds[k].type, (const uint8_t *) b.data, b.len);
				}
			}
			if (s == SLOT_MYSQL)
			{
				/* partial JSON update, and a payload of rows events */
				bl_buf_reset(&b);
				put_rows_body(&b, p->map_id[m], t, BL_OP_UPDATE, true,
							  SHAPE_PARTIAL_JSON, false);
				write_input(dir, s, BL_EV_PARTIAL_UPDATE_ROWS, (const uint8_t *) b.data, b.len);
				bl_buf_reset(&inner);
				put_inner_event(&inner, BL_EV_PARTIAL_UPDATE_ROWS, &b);
				bl_buf_reset(&b);
				put_rows_body(&b, p->map_id[m], t, BL_OP_INSERT, true, SHAPE_FULL, false);
				put_inner_event(&inner, BL_EV_WRITE_ROWS_V2, &b);
				write_payload_seed(dir, s, &inner, false);
				write_payload_seed(dir, s, &inner, true);
			}
			/* the TABLE_MAP again (reuse), and under another id's definition */
			{
				const uint8_t *tm = p->maps[m] + BL_EVENT_HEADER_LEN;
				size_t		tlen = p->map_len[m] - BL_EVENT_HEADER_LEN - BL_CHECKSUM_LEN;

				write_input(dir, s, BL_EV_TABLE_MAP, tm, tlen);
				if (m + 1 < p->nmaps)
				{
					uint8_t    *c = dup_bytes(p->maps[m + 1] + BL_EVENT_HEADER_LEN,
											  p->map_len[m + 1] - BL_EVENT_HEADER_LEN - BL_CHECKSUM_LEN);

					memcpy(c, tm, 6);	/* same id, other columns */
					write_input(dir, s, BL_EV_TABLE_MAP, c,
								p->map_len[m + 1] - BL_EVENT_HEADER_LEN - BL_CHECKSUM_LEN);
					free(c);
				}
			}
		}
	}
	bl_buf_free(&b);
	bl_buf_free(&inner);
	write_mapping_payload_seeds(dir);
	write_odd_seeds(dir);
}

static void
write_sample_seeds(const char *dir, int slot)
{
	const prefix *p = &slots[slot];
	char		path[8300];
	size_t		size;
	uint8_t    *data;
	size_t		pos = BL_BINLOG_MAGIC_LEN;
	size_t		len;
	int			per_type[256] = {0};
	bool		seen_fde = false;

	snprintf(path, sizeof(path), "%s/%s", samples_dir, p->sample);
	data = fuzz_read_file(path, &size);
	if (data == NULL)
		return;
	while ((len = fuzz_event_len(data, size, pos)) > 0)
	{
		uint8_t		type = data[pos + 4];
		size_t		blen = len - BL_EVENT_HEADER_LEN;

		if (type == BL_EV_FORMAT_DESCRIPTION)
			seen_fde = true;
		else if (seen_fde && per_type[type] < SEED_PER_TYPE &&
				 (!p->crc || blen >= BL_CHECKSUM_LEN))
		{
			per_type[type]++;
			write_input(dir, slot, type, data + pos + BL_EVENT_HEADER_LEN,
						blen - (p->crc ? BL_CHECKSUM_LEN : 0));
		}
		pos += len;
	}
	free(data);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *seeds = getenv("FUZZ_WRITE_SEEDS");
	int			missing = 0;

	find_samples(*argc > 0 ? (*argv)[0] : NULL);
	init_synthetic();
	for (int s = 0; s < NSLOTS; s++)
		if (slots[s].sample)
		{
			load_sample(&slots[s]);
			missing += !slots[s].loaded;
		}
	if (missing)
		fprintf(stderr, "fuzz_event: %d of %d sample prefixes missing (samples directory %s)\n",
				missing, NSLOTS - 2, samples_dir);
	if (seeds && seeds[0])
	{
		write_synthetic_seeds(seeds);
		for (int s = 0; s < NSLOTS; s++)
			if (slots[s].sample && slots[s].loaded)
				write_sample_seeds(seeds, s);
		exit(0);
	}
	return 0;
}
