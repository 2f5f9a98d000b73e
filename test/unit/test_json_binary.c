/*
 * test_json_binary.c
 *	  Unit tests of the MySQL binary JSON module (bl_json_binary.c):
 *	  documents and partial-update diffs taken from real binlogs, every
 *	  scalar and opaque type, containers of both storage formats, applying
 *	  diffs, and malformed input (truncations, bad offsets, huge counts,
 *	  shared values, deep nesting, byte mutations) that must fail cleanly.
 *
 * The real-data arrays are the JSON column values (after their 4-byte
 * length prefix) of the rows events in
 * shared/binlog-samples/rust_mysql_common/test-data/binlogs/
 * json.binlog.000001 (MySQL 8.0.22: inserts, a full-row update and a
 * PARTIAL_UPDATE_ROWS_EVENT) and json-opaque.binlog (MySQL 9.0.1).
 */
#include "bl_json_binary.h"

#include "../unit/bl_test.h"
#include "../unit/bl_json_check.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------------
 * A small binary JSON encoder for hand-made documents
 * ----------------------------------------------------------------
 */

typedef struct tbuf
{
	uint8_t    *d;
	size_t		n;
	size_t		cap;
} tbuf;

static void
tb_put(tbuf *b, const void *p, size_t n)
{
	if (b->n + n > b->cap)
	{
		size_t		cap = b->cap ? b->cap : 64;

		while (cap < b->n + n)
			cap *= 2;
		b->d = realloc(b->d, cap);
		if (b->d == NULL)
			abort();
		b->cap = cap;
	}
	if (n > 0)
		memcpy(b->d + b->n, p, n);
	b->n += n;
}

static void
tb_u8(tbuf *b, uint8_t v)
{
	tb_put(b, &v, 1);
}

static void
tb_le(tbuf *b, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		tb_u8(b, (uint8_t) (v >> (8 * i)));
}

static void
tb_varlen(tbuf *b, size_t n)
{
	do
	{
		uint8_t		c = n & 0x7f;

		n >>= 7;
		if (n)
			c |= 0x80;
		tb_u8(b, c);
	} while (n);
}

static tbuf
tb_bytes(const void *p, size_t n)
{
	tbuf		b = {0};

	tb_put(&b, p, n);
	return b;
}

static tbuf
j_lit(int k)
{
	tbuf		b = {0};

	tb_u8(&b, 0x04);
	tb_u8(&b, (uint8_t) k);
	return b;
}

#define J_NULL	j_lit(0)
#define J_TRUE	j_lit(1)
#define J_FALSE j_lit(2)

static tbuf
j_num(uint8_t type, uint64_t v, int n)
{
	tbuf		b = {0};

	tb_u8(&b, type);
	tb_le(&b, v, n);
	return b;
}

#define J_I16(v) j_num(0x05, (uint64_t) (int64_t) (v), 2)
#define J_U16(v) j_num(0x06, (uint64_t) (v), 2)
#define J_I32(v) j_num(0x07, (uint64_t) (int64_t) (v), 4)
#define J_U32(v) j_num(0x08, (uint64_t) (v), 4)
#define J_I64(v) j_num(0x09, (uint64_t) (int64_t) (v), 8)
#define J_U64(v) j_num(0x0A, (uint64_t) (v), 8)

static tbuf
j_double(double d)
{
	uint64_t	bits;

	memcpy(&bits, &d, 8);
	return j_num(0x0B, bits, 8);
}

static tbuf
j_strn(const char *s, size_t n)
{
	tbuf		b = {0};

	tb_u8(&b, 0x0C);
	tb_varlen(&b, n);
	tb_put(&b, s, n);
	return b;
}

static tbuf
j_str(const char *s)
{
	return j_strn(s, strlen(s));
}

static tbuf
j_opaque(uint8_t ftype, const void *p, size_t n)
{
	tbuf		b = {0};

	tb_u8(&b, 0x0F);
	tb_u8(&b, ftype);
	tb_varlen(&b, n);
	tb_put(&b, p, n);
	return b;
}

static tbuf
j_packed_temporal(uint8_t ftype, int64_t v)
{
	uint8_t		p[8];

	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t) ((uint64_t) v >> (8 * i));
	return j_opaque(ftype, p, 8);
}

/* MySQL's TIME_to_longlong_datetime_packed / _time_packed. */
static int64_t
pack_datetime(int y, int mo, int d, int h, int mi, int s, int us)
{
	int64_t		ymd = ((int64_t) (y * 13 + mo) << 5) | d;
	int64_t		hms = (h << 12) | (mi << 6) | s;

	return ((((ymd << 17) | hms)) << 24) + us;
}

static int64_t
pack_time(int neg, int h, int mi, int s, int us)
{
	int64_t		v = ((int64_t) ((h << 12) | (mi << 6) | s) << 24) + us;

	return neg ? -v : v;
}

static bool
inlinable(uint8_t type, bool large)
{
	return type == 0x04 || type == 0x05 || type == 0x06 ||
		(large && (type == 0x07 || type == 0x08));
}

/* An object (keys != NULL) or array of the given children (consumed). */
static tbuf
j_container(bool large, int count, const char *const *keys, tbuf *kids)
{
	int			osz = large ? 4 : 2;
	size_t		hdr = 2 * (size_t) osz + (size_t) count *
		((keys ? (size_t) osz + 2 : 0) + (size_t) osz + 1);
	tbuf		body = {0};
	tbuf		tail = {0};
	tbuf		b = {0};
	size_t		off;

	tb_le(&body, (uint64_t) count, osz);
	tb_le(&body, 0, osz);		/* size, patched below */
	off = hdr;
	for (int i = 0; keys && i < count; i++)
	{
		tb_le(&body, off, osz);
		tb_le(&body, strlen(keys[i]), 2);
		off += strlen(keys[i]);
	}
	for (int i = 0; keys && i < count; i++)
		tb_put(&tail, keys[i], strlen(keys[i]));
	for (int i = 0; i < count; i++)
	{
		uint8_t		t = kids[i].d[0];

		tb_u8(&body, t);
		if (inlinable(t, large))
		{
			uint8_t		v[4] = {0};

			memcpy(v, kids[i].d + 1, kids[i].n - 1);
			tb_put(&body, v, (size_t) osz);
		}
		else
		{
			tb_le(&body, hdr + tail.n, osz);
			tb_put(&tail, kids[i].d + 1, kids[i].n - 1);
		}
		free(kids[i].d);
	}
	tb_put(&body, tail.d, tail.n);
	free(tail.d);
	for (int i = 0; i < osz; i++)
		body.d[osz + i] = (uint8_t) (body.n >> (8 * i));
	tb_u8(&b, keys ? (large ? 0x01 : 0x00) : (large ? 0x03 : 0x02));
	tb_put(&b, body.d, body.n);
	free(body.d);
	return b;
}

/* j_arr(large, n, v1, v2, ...) */
static tbuf
j_arr(bool large, int n,...)
{
	tbuf		kids[64];
	va_list		ap;

	va_start(ap, n);
	for (int i = 0; i < n; i++)
		kids[i] = va_arg(ap, tbuf);
	va_end(ap);
	return j_container(large, n, NULL, kids);
}

/* j_obj(large, n, "k1", v1, "k2", v2, ...) */
static tbuf
j_obj(bool large, int n,...)
{
	tbuf		kids[64];
	const char *keys[64];
	va_list		ap;

	va_start(ap, n);
	for (int i = 0; i < n; i++)
	{
		keys[i] = va_arg(ap, const char *);
		kids[i] = va_arg(ap, tbuf);
	}
	va_end(ap);
	return j_container(large, n, keys, kids);
}

/* A packed (length-encoded) integer of the MySQL protocol. */
static void
tb_packed(tbuf *b, size_t n)
{
	if (n < 251)
		tb_u8(b, (uint8_t) n);
	else if (n < 65536)
	{
		tb_u8(b, 252);
		tb_le(b, n, 2);
	}
	else
	{
		tb_u8(b, 253);
		tb_le(b, n, 3);
	}
}

/* One diff of a diff vector. */
static void
d_add(tbuf *v, int op, const char *path, const tbuf *value)
{
	size_t		pl = strlen(path);

	tb_u8(v, (uint8_t) op);
	tb_packed(v, pl);
	tb_put(v, path, pl);
	if (op != 2)
	{
		tb_packed(v, value->n);
		tb_put(v, value->d, value->n);
	}
}

/* ----------------------------------------------------------------
 * Checking helpers
 * ----------------------------------------------------------------
 */

typedef int (*conv_fn) (const uint8_t *, size_t, bl_buf *, bl_error *);

/*
 * Run fn on a private copy of exactly n bytes (so ASan sees any overrun)
 * into a buffer holding "X": on success the output must be valid JSON
 * appended after the X, on failure the buffer must be back to "X".
 */
static int
run_conv(conv_fn fn, const uint8_t *p, size_t n, char **text, bl_error *err)
{
	uint8_t    *copy = malloc(n ? n : 1);
	bl_buf		out;
	int			rc;

	if (n)
		memcpy(copy, p, n);
	bl_buf_init(&out);
	bl_buf_putc(&out, 'X');
	memset(err, 0, sizeof(*err));
	rc = fn(copy, n, &out, err);
	free(copy);
	*text = NULL;
	if (rc == 0)
	{
		if (out.len < 1 || out.data[0] != 'X' ||
			!bl_json_text_valid(out.data + 1, out.len - 1))
			rc = 99;			/* reported by the caller */
		else
			*text = strdup(out.data + 1);
	}
	else if (out.len != 1 || strcmp(out.data, "X") != 0 || err->code == BL_OK)
		rc = 98;
	bl_buf_free(&out);
	return rc;
}

/* Apply with the before image and the diff vector in private copies. */
static int
run_apply(const uint8_t *before, size_t blen, const uint8_t *diff,
		  size_t dlen, char **text, bl_error *err)
{
	uint8_t    *b = malloc(blen ? blen : 1);
	uint8_t    *d = malloc(dlen ? dlen : 1);
	bl_buf		out;
	int			rc;

	if (blen)
		memcpy(b, before, blen);
	if (dlen)
		memcpy(d, diff, dlen);
	bl_buf_init(&out);
	bl_buf_putc(&out, 'X');
	memset(err, 0, sizeof(*err));
	rc = bl_json_apply_diff(b, blen, d, dlen, &out, err);
	free(b);
	free(d);
	*text = NULL;
	if (rc == 0)
	{
		if (out.len < 1 || out.data[0] != 'X' ||
			!bl_json_text_valid(out.data + 1, out.len - 1))
			rc = 99;
		else
			*text = strdup(out.data + 1);
	}
	else if (out.len != 1 || strcmp(out.data, "X") != 0 || err->code == BL_OK)
		rc = 98;
	bl_buf_free(&out);
	return rc;
}

static int
apply_empty(const uint8_t *p, size_t n, bl_buf *out, bl_error *err)
{
	return bl_json_apply_diff(p, n, (const uint8_t *) "", 0, out, err);
}

/*
 * A valid document: its text must be want, the DOM path (apply of an
 * empty diff) must agree, and every proper non-empty prefix must fail.
 */
static void
check_doc_bytes(const char *name, const uint8_t *p, size_t n, const char *want)
{
	char	   *text;
	bl_error	err;
	int			rc;

	BL_TEST_BEGIN(name);
	rc = run_conv(bl_json_binary_to_text, p, n, &text, &err);
	if (rc != 0)
		BL_FAIL("rc %d: %s", rc, err.message);
	else
		BL_CHECK_STR(text, want);
	free(text);

	rc = run_conv(apply_empty, p, n, &text, &err);
	if (rc != 0)
		BL_FAIL("DOM rc %d: %s", rc, err.message);
	else
		BL_CHECK_STR(text, want);
	free(text);

	for (size_t k = 1; k < n; k++)
	{
		rc = run_conv(bl_json_binary_to_text, p, k, &text, &err);
		free(text);
		if (rc != -1)
		{
			BL_FAIL("prefix of %zu/%zu bytes: rc %d", k, n, rc);
			break;
		}
		rc = run_conv(apply_empty, p, k, &text, &err);
		free(text);
		if (rc != -1)
		{
			BL_FAIL("DOM prefix of %zu/%zu bytes: rc %d", k, n, rc);
			break;
		}
	}
	BL_TEST_END();
}

static void
check_doc(const char *name, tbuf doc, const char *want)
{
	check_doc_bytes(name, doc.d, doc.n, want);
	free(doc.d);
}

/* A malformed document must fail with the given error class. */
static void
check_bad_bytes(const char *name, const uint8_t *p, size_t n, bl_errcode code)
{
	char	   *text;
	bl_error	err;
	int			rc;

	BL_TEST_BEGIN(name);
	rc = run_conv(bl_json_binary_to_text, p, n, &text, &err);
	if (rc != -1)
		BL_FAIL("rc %d, text %s", rc, text ? text : "(none)");
	else if (err.code != code)
		BL_FAIL("error %s (%s), want %s", bl_errcode_name(err.code),
				err.message, bl_errcode_name(code));
	free(text);
	rc = run_conv(apply_empty, p, n, &text, &err);
	if (rc != -1)
		BL_FAIL("DOM rc %d", rc);
	free(text);
	BL_TEST_END();
}

static void
check_bad(const char *name, tbuf doc, bl_errcode code)
{
	check_bad_bytes(name, doc.d, doc.n, code);
	free(doc.d);
}

/*
 * Mutate every byte of p several ways and run all three entry points:
 * nothing may crash or leak, success must give valid JSON, failure must
 * leave the output untouched (checked by run_conv / run_apply).
 */
static int
mutate_all(const uint8_t *p, size_t n, const uint8_t *diff, size_t dlen)
{
	static const int deltas[] = {-1, 1, 0x80};
	static const uint8_t sets[] = {0x00, 0x01, 0x02, 0x03, 0x0C, 0x0F,
	0x7F, 0x80, 0xFB, 0xFC, 0xFF};
	uint8_t    *m = malloc(n ? n : 1);
	int			bad = 0;

	for (size_t i = 0; i < n; i++)
	{
		for (size_t k = 0; k < sizeof(deltas) / sizeof(deltas[0]) +
			 sizeof(sets); k++)
		{
			char	   *text;
			bl_error	err;
			int			rc;

			memcpy(m, p, n);
			if (k < sizeof(deltas) / sizeof(deltas[0]))
				m[i] = (uint8_t) (m[i] + deltas[k]);
			else
				m[i] = sets[k - sizeof(deltas) / sizeof(deltas[0])];
			rc = run_conv(bl_json_binary_to_text, m, n, &text, &err);
			free(text);
			bad += (rc == 98 || rc == 99);
			rc = run_conv(bl_json_diff_to_text, m, n, &text, &err);
			free(text);
			bad += (rc == 98 || rc == 99);
			rc = run_apply(m, n, diff, dlen, &text, &err);
			free(text);
			bad += (rc == 98 || rc == 99);
			rc = run_apply(diff, dlen, m, n, &text, &err);
			free(text);
			bad += (rc == 98 || rc == 99);
		}
	}
	free(m);
	return bad;
}

/* ----------------------------------------------------------------
 * Real data
 * ----------------------------------------------------------------
 */

static const uint8_t jb_insert_1[] = {
	0x00, 0x03, 0x00, 0x33, 0x00, 0x19, 0x00, 0x03, 0x00, 0x1c, 0x00, 0x04,
	0x00, 0x20, 0x00, 0x04, 0x00, 0x05, 0x18, 0x00, 0x0c, 0x24, 0x00, 0x0c,
	0x2f, 0x00, 0x61, 0x67, 0x65, 0x64, 0x61, 0x74, 0x61, 0x6e, 0x61, 0x6d,
	0x65, 0x0a, 0x78, 0x78, 0x78, 0x78, 0x78, 0x78, 0x78, 0x78, 0x78, 0x78,
	0x03, 0x4a, 0x6f, 0x65,
};

static const uint8_t jb_insert_2[] = {
	0x00, 0x03, 0x00, 0x33, 0x00, 0x19, 0x00, 0x03, 0x00, 0x1c, 0x00, 0x04,
	0x00, 0x20, 0x00, 0x04, 0x00, 0x05, 0x20, 0x00, 0x0c, 0x24, 0x00, 0x0c,
	0x2f, 0x00, 0x61, 0x67, 0x65, 0x64, 0x61, 0x74, 0x61, 0x6e, 0x61, 0x6d,
	0x65, 0x0a, 0x79, 0x79, 0x79, 0x79, 0x79, 0x79, 0x79, 0x79, 0x79, 0x79,
	0x03, 0x53, 0x75, 0x65,
};

static const uint8_t jb_insert_3[] = {
	0x00, 0x03, 0x00, 0x34, 0x00, 0x19, 0x00, 0x03, 0x00, 0x1c, 0x00, 0x04,
	0x00, 0x20, 0x00, 0x04, 0x00, 0x05, 0x28, 0x00, 0x0c, 0x24, 0x00, 0x0c,
	0x2f, 0x00, 0x61, 0x67, 0x65, 0x64, 0x61, 0x74, 0x61, 0x6e, 0x61, 0x6d,
	0x65, 0x0a, 0x7a, 0x7a, 0x7a, 0x7a, 0x7a, 0x7a, 0x7a, 0x7a, 0x7a, 0x7a,
	0x04, 0x50, 0x65, 0x74, 0x65,
};

static const uint8_t jb_update_1[] = {
	0x00, 0x03, 0x00, 0x33, 0x00, 0x19, 0x00, 0x03, 0x00, 0x1c, 0x00, 0x04,
	0x00, 0x20, 0x00, 0x04, 0x00, 0x05, 0x19, 0x00, 0x0c, 0x24, 0x00, 0x0c,
	0x2f, 0x00, 0x61, 0x67, 0x65, 0x64, 0x61, 0x74, 0x61, 0x6e, 0x61, 0x6d,
	0x65, 0x0a, 0x78, 0x78, 0x78, 0x78, 0x78, 0x78, 0x78, 0x78, 0x78, 0x78,
	0x03, 0x4a, 0x6f, 0x65,
};

static const uint8_t jb_update_2[] = {
	0x00, 0x03, 0x00, 0x33, 0x00, 0x19, 0x00, 0x03, 0x00, 0x1c, 0x00, 0x04,
	0x00, 0x20, 0x00, 0x04, 0x00, 0x05, 0x21, 0x00, 0x0c, 0x24, 0x00, 0x0c,
	0x2f, 0x00, 0x61, 0x67, 0x65, 0x64, 0x61, 0x74, 0x61, 0x6e, 0x61, 0x6d,
	0x65, 0x0a, 0x79, 0x79, 0x79, 0x79, 0x79, 0x79, 0x79, 0x79, 0x79, 0x79,
	0x03, 0x53, 0x75, 0x65,
};

static const uint8_t jb_update_3[] = {
	0x00, 0x03, 0x00, 0x34, 0x00, 0x19, 0x00, 0x03, 0x00, 0x1c, 0x00, 0x04,
	0x00, 0x20, 0x00, 0x04, 0x00, 0x05, 0x29, 0x00, 0x0c, 0x24, 0x00, 0x0c,
	0x2f, 0x00, 0x61, 0x67, 0x65, 0x64, 0x61, 0x74, 0x61, 0x6e, 0x61, 0x6d,
	0x65, 0x0a, 0x7a, 0x7a, 0x7a, 0x7a, 0x7a, 0x7a, 0x7a, 0x7a, 0x7a, 0x7a,
	0x04, 0x50, 0x65, 0x74, 0x65,
};

static const uint8_t jb_diff_1[] = {
	0x00, 0x05, 0x24, 0x2e, 0x61, 0x67, 0x65, 0x03, 0x05, 0x1a, 0x00,
};

static const uint8_t jb_diff_2[] = {
	0x00, 0x05, 0x24, 0x2e, 0x61, 0x67, 0x65, 0x03, 0x05, 0x22, 0x00,
};

static const uint8_t jb_diff_3[] = {
	0x00, 0x05, 0x24, 0x2e, 0x61, 0x67, 0x65, 0x03, 0x05, 0x2a, 0x00,
};

static const uint8_t jo_row_1[] = {
	0x00, 0x01, 0x00, 0x0f, 0x00, 0x0b, 0x00, 0x01, 0x00, 0x0f, 0x0c, 0x00,
	0x61, 0x0f, 0x01, 0x55,
};

static const uint8_t jo_row_2[] = {
	0x00, 0x01, 0x00, 0x16, 0x00, 0x0b, 0x00, 0x01, 0x00, 0x0f, 0x0c, 0x00,
	0x62, 0x0a, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0xe4, 0x8b, 0x19,
};

static const uint8_t jo_row_3[] = {
	0x00, 0x01, 0x00, 0x16, 0x00, 0x0b, 0x00, 0x01, 0x00, 0x0f, 0x0c, 0x00,
	0x63, 0x0c, 0x08, 0x00, 0x00, 0x00, 0xad, 0xb7, 0xe4, 0x8b, 0x19,
};

static const uint8_t jo_row_4[] = {
	0x00, 0x01, 0x00, 0x16, 0x00, 0x0b, 0x00, 0x01, 0x00, 0x0f, 0x0c, 0x00,
	0x63, 0x0b, 0x08, 0xf1, 0xfb, 0x09, 0xee, 0x77, 0x05, 0x00, 0x00,
};

static const uint8_t jo_row_5[] = {
	0x00, 0x01, 0x00, 0x14, 0x00, 0x0b, 0x00, 0x01, 0x00, 0x0f, 0x0c, 0x00,
	0x64, 0xf6, 0x06, 0x06, 0x03, 0x80, 0x7b, 0x01, 0xc8,
};

static const uint8_t jo_row_6[] = {
	0x00, 0x01, 0x00, 0x15, 0x00, 0x0b, 0x00, 0x01, 0x00, 0x0f, 0x0c, 0x00,
	0x65, 0xf6, 0x07, 0x0b, 0x02, 0x80, 0x00, 0x00, 0x09, 0x00,
};

static const uint8_t jo_row_7[] = {
	0x00, 0x01, 0x00, 0x1c, 0x00, 0x0b, 0x00, 0x01, 0x00, 0x02, 0x0c, 0x00,
	0x65, 0x04, 0x00, 0x10, 0x00, 0x05, 0x00, 0x00, 0x05, 0x01, 0x00, 0x04,
	0x01, 0x00, 0x04, 0x02, 0x00,
};

static const uint8_t jo_row_8[] = {
	0x00, 0x01, 0x00, 0x0c, 0x00, 0x0b, 0x00, 0x01, 0x00, 0x04, 0x00, 0x00,
	0x65,
};

#define BYTES(a) (a), sizeof(a)

static void
test_real_documents(void)
{
	char	   *text;
	bl_error	err;
	int			rc;

	/* json.binlog.000001, WRITE_ROWS: the JSON mirrors columns name, age. */
	check_doc_bytes("real: insert id 1", BYTES(jb_insert_1),
					"{\"age\":24,\"data\":\"xxxxxxxxxx\",\"name\":\"Joe\"}");
	check_doc_bytes("real: insert id 2", BYTES(jb_insert_2),
					"{\"age\":32,\"data\":\"yyyyyyyyyy\",\"name\":\"Sue\"}");
	check_doc_bytes("real: insert id 3", BYTES(jb_insert_3),
					"{\"age\":40,\"data\":\"zzzzzzzzzz\",\"name\":\"Pete\"}");
	/* UPDATE_ROWS (full image) after images. */
	check_doc_bytes("real: update id 1", BYTES(jb_update_1),
					"{\"age\":25,\"data\":\"xxxxxxxxxx\",\"name\":\"Joe\"}");
	check_doc_bytes("real: update id 2", BYTES(jb_update_2),
					"{\"age\":33,\"data\":\"yyyyyyyyyy\",\"name\":\"Sue\"}");
	check_doc_bytes("real: update id 3", BYTES(jb_update_3),
					"{\"age\":41,\"data\":\"zzzzzzzzzz\",\"name\":\"Pete\"}");

	/*
	 * json-opaque.binlog (MySQL 9.0.1); rust_mysql_common's test expects
	 * these values (it renders decimals as strings; MySQL prints numbers).
	 */
	check_doc_bytes("real: opaque VARCHAR", BYTES(jo_row_1),
					"{\"a\":\"base64:type15:VQ==\"}");
	check_doc_bytes("real: opaque DATE", BYTES(jo_row_2),
					"{\"b\":\"2012-03-18\"}");
	check_doc_bytes("real: opaque DATETIME", BYTES(jo_row_3),
					"{\"c\":\"2012-03-18 11:30:45.000000\"}");
	check_doc_bytes("real: opaque TIME", BYTES(jo_row_4),
					"{\"c\":\"87:31:46.654321\"}");
	check_doc_bytes("real: opaque DECIMAL 123.456", BYTES(jo_row_5),
					"{\"d\":123.456}");
	check_doc_bytes("real: opaque DECIMAL 9.00", BYTES(jo_row_6),
					"{\"e\":9.00}");
	check_doc_bytes("real: array of inlined values", BYTES(jo_row_7),
					"{\"e\":[0,1,true,false]}");
	check_doc_bytes("real: inlined null", BYTES(jo_row_8),
					"{\"e\":null}");

	/* PARTIAL_UPDATE_ROWS_EVENT: JSON_SET(j, '$.age', ...) diffs. */
	BL_TEST_BEGIN("real: partial update diffs to text");
	rc = run_conv(bl_json_diff_to_text, BYTES(jb_diff_1), &text, &err);
	BL_CHECK_INT(rc, 0);
	BL_CHECK_STR(text, "[{\"op\":\"replace\",\"path\":\"$.age\",\"value\":26}]");
	free(text);
	rc = run_conv(bl_json_diff_to_text, BYTES(jb_diff_2), &text, &err);
	BL_CHECK_INT(rc, 0);
	BL_CHECK_STR(text, "[{\"op\":\"replace\",\"path\":\"$.age\",\"value\":34}]");
	free(text);
	rc = run_conv(bl_json_diff_to_text, BYTES(jb_diff_3), &text, &err);
	BL_CHECK_INT(rc, 0);
	BL_CHECK_STR(text, "[{\"op\":\"replace\",\"path\":\"$.age\",\"value\":42}]");
	free(text);
	BL_TEST_END();

	/* The partial update applied to the preceding full after image. */
	BL_TEST_BEGIN("real: partial update applied to the before image");
	rc = run_apply(BYTES(jb_update_1), BYTES(jb_diff_1), &text, &err);
	BL_CHECK_INT(rc, 0);
	BL_CHECK_STR(text, "{\"age\":26,\"data\":\"xxxxxxxxxx\",\"name\":\"Joe\"}");
	free(text);
	rc = run_apply(BYTES(jb_update_2), BYTES(jb_diff_2), &text, &err);
	BL_CHECK_INT(rc, 0);
	BL_CHECK_STR(text, "{\"age\":34,\"data\":\"yyyyyyyyyy\",\"name\":\"Sue\"}");
	free(text);
	rc = run_apply(BYTES(jb_update_3), BYTES(jb_diff_3), &text, &err);
	BL_CHECK_INT(rc, 0);
	BL_CHECK_STR(text, "{\"age\":42,\"data\":\"zzzzzzzzzz\",\"name\":\"Pete\"}");
	free(text);
	BL_TEST_END();
}

/* ----------------------------------------------------------------
 * Scalars
 * ----------------------------------------------------------------
 */

static void
test_scalars(void)
{
	check_doc_bytes("empty value is null", (const uint8_t *) "", 0, "null");
	check_doc("literal null", J_NULL, "null");
	check_doc("literal true", J_TRUE, "true");
	check_doc("literal false", J_FALSE, "false");
	check_doc("int16 min", J_I16(-32768), "-32768");
	check_doc("int16 max", J_I16(32767), "32767");
	check_doc("uint16 max", J_U16(65535), "65535");
	check_doc("int32 min", J_I32(INT32_MIN), "-2147483648");
	check_doc("int32 -1", J_I32(-1), "-1");
	check_doc("uint32 max", J_U32(UINT32_MAX), "4294967295");
	check_doc("int64 min", J_I64(INT64_MIN), "-9223372036854775808");
	check_doc("int64 max", J_I64(INT64_MAX), "9223372036854775807");
	check_doc("uint64 max", J_U64(UINT64_MAX), "18446744073709551615");
	check_doc("uint64 zero", J_U64(0), "0");

	/* Doubles as MySQL prints them (my_gcvt + ".0"). */
	check_doc("double 1.0", j_double(1.0), "1.0");
	check_doc("double 0.0", j_double(0.0), "0.0");
	check_doc("double -0.0", j_double(-0.0), "-0.0");
	check_doc("double 0.1", j_double(0.1), "0.1");
	check_doc("double -2.5", j_double(-2.5), "-2.5");
	check_doc("double 100", j_double(100.0), "100.0");
	check_doc("double 1/3", j_double(1.0 / 3.0), "0.3333333333333333");
	check_doc("double 0.1+0.2", j_double(0.1 + 0.2), "0.30000000000000004");
	check_doc("double 1e14", j_double(1e14), "100000000000000.0");
	check_doc("double 1e15", j_double(1e15), "1e15");
	check_doc("double 123456789012345680000", j_double(123456789012345680000.0),
			  "1.2345678901234568e20");
	check_doc("double 1234567890123456.8", j_double(1234567890123456.8),
			  "1234567890123456.8");
	check_doc("double 1e100", j_double(1e100), "1e100");
	check_doc("double -1.5e-7", j_double(-1.5e-7), "-0.00000015");
	check_doc("double 1.5e-17", j_double(1.5e-17), "1.5e-17");
	check_doc("double 1e-15", j_double(1e-15), "0.000000000000001");
	check_doc("double 1e-16", j_double(1e-16), "1e-16");
	check_doc("double 0.0001", j_double(0.0001), "0.0001");
	check_doc("double DBL_MAX", j_double(DBL_MAX), "1.7976931348623157e308");
	check_doc("double min denormal", j_double(5e-324), "5e-324");
	check_doc("double 3.14159", j_double(3.14159), "3.14159");
	/* Not storable by MySQL; printed as its dtoa would ("0" + ".0"). */
	check_doc("double NaN", j_double(NAN), "0.0");
	check_doc("double -Inf", j_double(-INFINITY), "0.0");

	/* Strings and escaping. */
	check_doc("string empty", j_str(""), "\"\"");
	check_doc("string plain", j_str("hello"), "\"hello\"");
	check_doc("string escapes", j_str("q\"b\\s/n\nr\rt\tb\bf\f"),
			  "\"q\\\"b\\\\s/n\\nr\\rt\\tb\\bf\\f\"");
	check_doc("string control and DEL", j_strn("\x01\x1f\x7f\0x", 5),
			  "\"\\u0001\\u001f\x7f\\u0000x\"");
	check_doc("string utf8", j_str("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
			  "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
	check_doc("string invalid utf8", j_str("a\xff" "b\xe2\x82" "c\xed\xa0\x80"),
			  "\"a\xef\xbf\xbd" "b\xef\xbf\xbd" "c\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
	check_doc("string overlong and truncated utf8", j_str("\xc0\xaf\xf0\x9f"),
			  "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
	{
		char		big[300];
		char		want[303];

		memset(big, 'a', sizeof(big));
		want[0] = '"';
		memset(want + 1, 'a', sizeof(big));
		want[301] = '"';
		want[302] = '\0';
		check_doc("string of 300 bytes (2-byte length)", j_strn(big, 300), want);
	}
}

static void
test_opaque(void)
{
	static const struct
	{
		const char *want;
		size_t		n;
		const char *bin;
	}			decimals[] =
	{
		/* generated from the binary decimal format by a separate encoder */
		{"123.456", 6, "\x06\x03\x80\x7b\x01\xc8"},
		{"-123.456", 6, "\x06\x03\x7f\x84\xfe\x37"},
		{"9.00", 7, "\x0b\x02\x80\x00\x00\x09\x00"},
		{"0.5", 3, "\x01\x01\x85"},
		{"12345678901234567890.0123456789", 16, "\x1e\x0a\x8c\x14\x9a\xa4\x35\x0d\xfb\x38\xd2\x00\xbc\x61\x4e\x09"},
		{"-12345678901234567890.0123456789", 16, "\x1e\x0a\x73\xeb\x65\x5b\xca\xf2\x04\xc7\x2d\xff\x43\x9e\xb1\xf6"},
		{"-1234567890", 7, "\x0a\x00\x7e\xf2\x04\xc7\x2d"},
		{"99999999999999999999999999999999999.999999999999999999999999999999", 32, "\x41\x1e\x85\xf5\xe0\xff\x3b\x9a\xc9\xff\x3b\x9a\xc9\xff\x3b\x9a\xc9\xff\x3b\x9a\xc9\xff\x3b\x9a\xc9\xff\x3b\x9a\xc9\xff\x03\xe7"},
		{"0.00", 5, "\x05\x02\x7f\xff\xff"},	/* -0.00 */
		{"5.10", 11, "\x14\x02\x80\x00\x00\x00\x00\x00\x00\x05\x0a"},
		{"0", 3, "\x01\x00\x80"},
		{"-0.000000001", 7, "\x0a\x09\x7f\xff\xff\xff\xfe"},
	};
	uint8_t		blob[100];
	char		name[64];

	for (size_t i = 0; i < sizeof(decimals) / sizeof(decimals[0]); i++)
	{
		snprintf(name, sizeof(name), "opaque DECIMAL %s", decimals[i].want);
		check_doc(name, j_opaque(246, decimals[i].bin, decimals[i].n),
				  decimals[i].want);
	}
	check_bad("opaque DECIMAL wrong length",
			  j_opaque(246, "\x06\x03\x80\x7b\x01", 5), BL_ERR_CORRUPT);
	check_bad("opaque DECIMAL group out of range",
			  j_opaque(246, "\x0a\x00\x80\x3b\x9a\xca\x00", 7), BL_ERR_CORRUPT);
	check_bad("opaque DECIMAL scale > precision",
			  j_opaque(246, "\x01\x02\x80", 3), BL_ERR_CORRUPT);
	check_bad("opaque DECIMAL too short", j_opaque(246, "\x01", 1),
			  BL_ERR_CORRUPT);

	check_doc("opaque DATE", j_packed_temporal(10, pack_datetime(2024, 2, 29, 0, 0, 0, 0)),
			  "\"2024-02-29\"");
	check_doc("opaque DATE zero", j_packed_temporal(10, 0), "\"0000-00-00\"");
	check_doc("opaque DATETIME", j_packed_temporal(12, pack_datetime(1999, 12, 31, 23, 59, 58, 123456)),
			  "\"1999-12-31 23:59:58.123456\"");
	check_doc("opaque TIMESTAMP", j_packed_temporal(7, pack_datetime(2038, 1, 19, 3, 14, 7, 999999)),
			  "\"2038-01-19 03:14:07.999999\"");
	check_doc("opaque TIME", j_packed_temporal(11, pack_time(0, 12, 0, 1, 0)),
			  "\"12:00:01.000000\"");
	check_doc("opaque TIME negative", j_packed_temporal(11, pack_time(1, 838, 59, 59, 0)),
			  "\"-838:59:59.000000\"");
	check_doc("opaque TIME negative fraction", j_packed_temporal(11, pack_time(1, 0, 0, 0, 500000)),
			  "\"-00:00:00.500000\"");
	check_bad("opaque TIME of 7 bytes", j_opaque(11, "\0\0\0\0\0\0\0", 7),
			  BL_ERR_CORRUPT);
	check_bad("opaque DATETIME bad fraction",
			  j_packed_temporal(12, pack_datetime(2000, 1, 1, 0, 0, 0, 0) + 1000000),
			  BL_ERR_CORRUPT);

	check_doc("opaque VAR_STRING is a string", j_opaque(253, "a\"b", 3),
			  "\"a\\\"b\"");
	check_doc("opaque BLOB empty", j_opaque(252, "", 0), "\"base64:type252:\"");
	check_doc("opaque BLOB 1 byte", j_opaque(252, "M", 1), "\"base64:type252:TQ==\"");
	check_doc("opaque BLOB 2 bytes", j_opaque(252, "Ma", 2), "\"base64:type252:TWE=\"");
	check_doc("opaque BLOB 3 bytes", j_opaque(252, "Man", 3), "\"base64:type252:TWFu\"");
	check_doc("opaque BIT", j_opaque(16, "\xff\x00", 2), "\"base64:type16:/wA=\"");
	for (int i = 0; i < 100; i++)
		blob[i] = (uint8_t) i;
	check_doc("opaque BLOB of 100 bytes: line break after 76 characters",
			  j_opaque(252, blob, 100),
			  "\"base64:type252:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4"
			  "\\nOTo7PD0+P0BBQkNERUZHSElKS0xNTk9QUVJTVFVWV1hZWltcXV5fYGFiYw==\"");
}

/* ----------------------------------------------------------------
 * Containers
 * ----------------------------------------------------------------
 */

static void
test_containers(void)
{
	check_doc("empty array small", j_arr(false, 0), "[]");
	check_doc("empty array large", j_arr(true, 0), "[]");
	check_doc("empty object small", j_obj(false, 0), "{}");
	check_doc("empty object large", j_obj(true, 0), "{}");
	check_doc("array of every scalar small",
			  j_arr(false, 12, J_NULL, J_TRUE, J_FALSE, J_I16(-1), J_U16(2),
					J_I32(-3), J_U32(4), J_I64(-5), J_U64(6), j_double(7.5),
					j_str("eight"), j_packed_temporal(10, pack_datetime(2012, 1, 3, 0, 0, 0, 0))),
			  "[null,true,false,-1,2,-3,4,-5,6,7.5,\"eight\",\"2012-01-03\"]");
	check_doc("array of every scalar large",
			  j_arr(true, 12, J_NULL, J_TRUE, J_FALSE, J_I16(-1), J_U16(2),
					J_I32(-3), J_U32(4), J_I64(-5), J_U64(6), j_double(7.5),
					j_str("eight"), j_opaque(252, "x", 1)),
			  "[null,true,false,-1,2,-3,4,-5,6,7.5,\"eight\",\"base64:type252:eA==\"]");
	check_doc("nested small in large",
			  j_obj(true, 3,
					"a", j_arr(false, 2, J_I16(1), j_obj(false, 1, "b", J_NULL)),
					"c", j_obj(false, 0),
					"dd", j_arr(true, 1, j_arr(false, 1, j_arr(true, 0)))),
			  "{\"a\":[1,{\"b\":null}],\"c\":{},\"dd\":[[[]]]}");
	check_doc("keys with unicode and escapes",
			  j_obj(false, 4, "", J_I16(0), "\"", J_I16(1), "\xc3\xa9\n", J_I16(2),
					"a\\b", j_str("\xe2\x82\xac")),
			  "{\"\":0,\"\\\"\":1,\"\xc3\xa9\\n\":2,\"a\\\\b\":\"\xe2\x82\xac\"}");
	check_doc("keys in stored order",
			  j_obj(false, 3, "zz", J_I16(1), "a", J_I16(2), "b", J_I16(3)),
			  "{\"zz\":1,\"a\":2,\"b\":3}");

	/* A large array of 70000 elements needs the large format. */
	{
		tbuf		body = {0};
		tbuf		doc = {0};
		bl_buf		want;
		uint32_t	n = 70000;
		size_t		hdr = 8 + (size_t) n * 5;

		tb_le(&body, n, 4);
		tb_le(&body, hdr + (size_t) n * 4, 4);
		for (uint32_t i = 0; i < n; i++)
		{
			/* alternate inlined int32 and out-of-line doubles */
			if (i % 2 == 0)
			{
				tb_u8(&body, 0x07);
				tb_le(&body, (uint64_t) (int64_t) -(int32_t) i, 4);
			}
			else
			{
				tb_u8(&body, 0x0B);
				tb_le(&body, hdr + (size_t) (i / 2) * 8, 4);
			}
		}
		for (uint32_t i = 1; i < n; i += 2)
		{
			double		d = i + 0.5;
			uint64_t	bits;

			memcpy(&bits, &d, 8);
			tb_le(&body, bits, 8);
		}
		/* fix the size: n/2 doubles of 8 bytes */
		{
			size_t		size = body.n;

			for (int i = 0; i < 4; i++)
				body.d[4 + i] = (uint8_t) (size >> (8 * i));
		}
		tb_u8(&doc, 0x03);
		tb_put(&doc, body.d, body.n);
		free(body.d);
		bl_buf_init(&want);
		bl_buf_putc(&want, '[');
		for (uint32_t i = 0; i < n; i++)
		{
			if (i)
				bl_buf_putc(&want, ',');
			if (i % 2 == 0)
				bl_buf_printf(&want, "%d", -(int32_t) i);
			else
				bl_buf_printf(&want, "%u.5", i);
		}
		bl_buf_putc(&want, ']');
		{
			char	   *text;
			bl_error	err;
			int			rc;

			BL_TEST_BEGIN("large array of 70000 elements");
			rc = run_conv(bl_json_binary_to_text, doc.d, doc.n, &text, &err);
			BL_CHECK_INT(rc, 0);
			BL_CHECK(text != NULL && strcmp(text, want.data) == 0);
			free(text);
			rc = run_conv(apply_empty, doc.d, doc.n, &text, &err);
			BL_CHECK_INT(rc, 0);
			BL_CHECK(text != NULL && strcmp(text, want.data) == 0);
			free(text);
			BL_TEST_END();
		}
		bl_buf_free(&want);
		free(doc.d);
	}

	/* Depth: 100 nested containers are fine, 101 are not. */
	{
		tbuf		doc = j_arr(false, 0);
		bl_buf		want;

		bl_buf_init(&want);
		for (int i = 1; i < 100; i++)
		{
			tbuf		kid = doc;

			doc = (i % 2) ? j_arr(i % 3 == 0, 1, kid) :
				j_obj(i % 3 == 0, 1, "k", kid);
		}
		for (int i = 99; i >= 1; i--)
			bl_buf_puts(&want, (i % 2) ? "[" : "{\"k\":");
		bl_buf_puts(&want, "[]");
		for (int i = 1; i < 100; i++)
			bl_buf_puts(&want, (i % 2) ? "]" : "}");
		check_doc_bytes("depth 100", doc.d, doc.n, want.data);
		check_bad("depth 101", j_arr(false, 1, doc), BL_ERR_CORRUPT);
		bl_buf_free(&want);
	}
}

/* ----------------------------------------------------------------
 * Malformed documents
 * ----------------------------------------------------------------
 */

static void
test_malformed(void)
{
	check_bad_bytes("unknown top-level type", (const uint8_t *) "\x0d\x00", 2,
					BL_ERR_CORRUPT);
	check_bad_bytes("unknown literal", (const uint8_t *) "\x04\x03", 2,
					BL_ERR_CORRUPT);
	check_bad_bytes("string length of 6 bytes",
					(const uint8_t *) "\x0c\x81\x80\x80\x80\x80\x00", 7,
					BL_ERR_CORRUPT);
	check_bad_bytes("string length over 32 bits",
					(const uint8_t *) "\x0c\xff\xff\xff\xff\x7f", 6,
					BL_ERR_CORRUPT);
	check_bad_bytes("string longer than the input",
					(const uint8_t *) "\x0c\x05" "abc", 5, BL_ERR_TRUNCATED);
	check_bad_bytes("small array with huge count",
					(const uint8_t *) "\x02\xff\xff\x04\x00", 5, BL_ERR_CORRUPT);
	check_bad_bytes("large object with huge count",
					(const uint8_t *) "\x01\xff\xff\xff\xff\x08\x00\x00\x00", 9,
					BL_ERR_CORRUPT);
	check_bad_bytes("size larger than the input",
					(const uint8_t *) "\x02\x00\x00\x10\x00", 5, BL_ERR_CORRUPT);
	/* [ "x" ] with the value offset pointing into the header / past the end */
	check_bad_bytes("value offset inside the header",
					(const uint8_t *) "\x02\x01\x00\x09\x00\x0c\x02\x00\x01\x78", 10,
					BL_ERR_CORRUPT);
	check_bad_bytes("value offset past the container",
					(const uint8_t *) "\x02\x01\x00\x09\x00\x0c\x0a\x00\x01\x78", 10,
					BL_ERR_CORRUPT);
	check_bad_bytes("value at the very end of the container",
					(const uint8_t *) "\x02\x01\x00\x09\x00\x0c\x09\x00\x01\x78", 10,
					BL_ERR_TRUNCATED);
	/* {"k": 1} with the key offset in the header / past the end */
	check_bad_bytes("key offset inside the header",
					(const uint8_t *) "\x00\x01\x00\x0c\x00\x02\x00\x01\x00\x05\x01\x00\x6b", 13,
					BL_ERR_CORRUPT);
	check_bad_bytes("key past the object",
					(const uint8_t *) "\x00\x01\x00\x0c\x00\x0b\x00\x02\x00\x05\x01\x00\x6b", 13,
					BL_ERR_CORRUPT);
	check_bad_bytes("unknown type in a value entry",
					(const uint8_t *) "\x02\x01\x00\x08\x00\x0e\x07\x00\x00", 9,
					BL_ERR_CORRUPT);
	check_bad_bytes("int64 beyond the container",
					(const uint8_t *) "\x02\x01\x00\x09\x00\x09\x07\x00\x00\x00\x00\x00\x00\x00\x00", 15,
					BL_ERR_TRUNCATED);

	/* Two entries sharing one string: MySQL never writes this. */
	check_bad_bytes("values sharing bytes",
					(const uint8_t *) "\x02\x02\x00\x0c\x00\x0c\x0a\x00\x0c\x0a\x00\x01\x78", 13,
					BL_ERR_CORRUPT);
	/* A DAG bomb: each level's two entries point at the same child. */
	{
		tbuf		body = tb_bytes("\x00\x00\x04\x00", 4);
		tbuf		doc = {0};

		for (int i = 0; i < 60; i++)
		{
			tbuf		up = {0};

			tb_le(&up, 2, 2);
			tb_le(&up, 10 + body.n, 2);
			tb_u8(&up, 0x02);
			tb_le(&up, 10, 2);
			tb_u8(&up, 0x02);
			tb_le(&up, 10, 2);
			tb_put(&up, body.d, body.n);
			free(body.d);
			body = up;
		}
		tb_u8(&doc, 0x02);
		tb_put(&doc, body.d, body.n);
		free(body.d);
		check_bad("shared sub-arrays (exponential expansion)", doc,
				  BL_ERR_CORRUPT);
	}
}

/* ----------------------------------------------------------------
 * Diffs
 * ----------------------------------------------------------------
 */

static void
test_diff_text(void)
{
	tbuf		v = {0};
	tbuf		val;
	char	   *text;
	bl_error	err;
	int			rc;

	BL_TEST_BEGIN("diff: every operation to text");
	val = j_str("x");
	d_add(&v, 1, "$.b[0]", &val);
	free(val.d);
	d_add(&v, 2, "$.c", NULL);
	val = j_obj(false, 1, "k", j_arr(false, 1, J_TRUE));
	d_add(&v, 0, "$.\"a b\"[last-1]", &val);
	free(val.d);
	val = tb_bytes("", 0);
	d_add(&v, 0, "$[last]", &val);
	rc = run_conv(bl_json_diff_to_text, v.d, v.n, &text, &err);
	BL_CHECK_INT(rc, 0);
	BL_CHECK_STR(text,
				 "[{\"op\":\"insert\",\"path\":\"$.b[0]\",\"value\":\"x\"},"
				 "{\"op\":\"remove\",\"path\":\"$.c\"},"
				 "{\"op\":\"replace\",\"path\":\"$.\\\"a b\\\"[last-1]\",\"value\":{\"k\":[true]}},"
				 "{\"op\":\"replace\",\"path\":\"$[last]\",\"value\":null}]");
	free(text);
	for (size_t k = 0; k < v.n; k++)
	{
		/* prefixes either end on a diff boundary or fail */
		rc = run_conv(bl_json_diff_to_text, v.d, k, &text, &err);
		free(text);
		if (rc != 0 && rc != -1)
			BL_FAIL("prefix %zu: rc %d", k, rc);
	}
	free(v.d);
	rc = run_conv(bl_json_diff_to_text, (const uint8_t *) "", 0, &text, &err);
	BL_CHECK_INT(rc, 0);
	BL_CHECK_STR(text, "[]");
	free(text);
	BL_TEST_END();

	BL_TEST_BEGIN("diff: malformed vectors fail");
	{
#define RAW(s) {s, sizeof(s) - 1}
		static const struct
		{
			const char *bytes;
			size_t		n;
		}			bad[] =
		{
			RAW("\x03\x01$"),	/* unknown operation */
			RAW("\x02\x05$.a"),	/* path runs past the end */
			RAW("\x02\xfb"),	/* NULL length marker */
			RAW("\x02\xff"),	/* invalid packed length */
			RAW("\x02\xfc\x01"),	/* truncated packed length */
			RAW("\x00\x01$\x02\x04"),	/* value runs past the end */
			RAW("\x00\x01$\x02\x04\x05"),	/* bad literal */
			RAW("\x00\x01$\x01\x0d"),	/* bad value type */
		};
#undef RAW
		static const char *const bad_paths[] = {
			"", ".a", "a", "$.*", "$[*]", "$**.a", "$.a**", "$[1 to 2]",
			"$[]", "$[-1]", "$[4294967296]", "$[last-]", "$[lastx]",
			"$.\"ab", "$.\"\\x\"", "$.\"\\ud800\"", "$.\"\\udc00\"",
			"$.\"\\u12\"", "$.", "$.a]", "$.1a", "$.a-b", "$.\"a\"\"b\"",
			"$.\"\x01\"", "$[0", "$x",
		};

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		{
			rc = run_conv(bl_json_diff_to_text, (const uint8_t *) bad[i].bytes,
						  bad[i].n, &text, &err);
			free(text);
			if (rc != -1)
				BL_FAIL("bad vector %zu: rc %d", i, rc);
		}
		for (size_t i = 0; i < sizeof(bad_paths) / sizeof(bad_paths[0]); i++)
		{
			tbuf		d = {0};

			d_add(&d, 2, bad_paths[i], NULL);
			rc = run_conv(bl_json_diff_to_text, d.d, d.n, &text, &err);
			free(text);
			free(d.d);
			if (rc != -1)
				BL_FAIL("bad path [%s]: rc %d", bad_paths[i], rc);
		}
	}
	BL_TEST_END();

	BL_TEST_BEGIN("diff: path syntax accepted as MySQL does");
	{
		static const char *const good[] = {
			"$", " $ ", "$.a", "$ . a [ 0 ]", "$[last]", "$[ last - 2 ]",
			"$.\"\"", "$.\"a.b\"", "$.a\\u0062", "$.\"\\ud83d\\ude00\"",
			"$[4294967295]", "$.\xc3\xa9t\xc3\xa9",
		};

		for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		{
			tbuf		d = {0};

			d_add(&d, 2, good[i], NULL);
			rc = run_conv(bl_json_diff_to_text, d.d, d.n, &text, &err);
			if (rc != 0)
				BL_FAIL("path [%s]: rc %d %s", good[i], rc, err.message);
			free(text);
			free(d.d);
		}
	}
	BL_TEST_END();
}

/* Apply a vector built from (op, path, value) triples to doc. */
static void
check_apply(const char *name, const tbuf *doc, const char *want, int ndiffs,...)
{
	tbuf		v = {0};
	va_list		ap;
	char	   *text;
	bl_error	err;
	int			rc;

	va_start(ap, ndiffs);
	for (int i = 0; i < ndiffs; i++)
	{
		int			op = va_arg(ap, int);
		const char *path = va_arg(ap, const char *);
		tbuf		val = va_arg(ap, tbuf);

		d_add(&v, op, path, &val);
		free(val.d);
	}
	va_end(ap);

	BL_TEST_BEGIN(name);
	rc = run_apply(doc->d, doc->n, v.d, v.n, &text, &err);
	if (want == NULL)
	{
		if (rc != -1)
			BL_FAIL("rc %d, text %s", rc, text ? text : "(none)");
		else if (err.code != BL_ERR_CORRUPT)
			BL_FAIL("error %s: %s", bl_errcode_name(err.code), err.message);
		else if (strstr(err.message, "diff path") != NULL &&
				 strstr(err.message, "not found") == NULL)
			BL_FAIL("failed on the path syntax: %s", err.message);
	}
	else if (rc != 0)
		BL_FAIL("rc %d: %s", rc, err.message);
	else
		BL_CHECK_STR(text, want);
	free(text);
	/* Truncated vectors must fail or stop on a diff boundary, never crash. */
	for (size_t k = 0; k < v.n; k++)
	{
		rc = run_apply(doc->d, doc->n, v.d, k, &text, &err);
		free(text);
		if (rc != 0 && rc != -1)
		{
			BL_FAIL("prefix %zu: rc %d", k, rc);
			break;
		}
	}
	BL_TEST_END();
	free(v.d);
}

#define NOVAL tb_bytes("", 0)
#define REPLACE 0
#define INSERT 1
#define REMOVE 2

static void
test_apply(void)
{
	tbuf		doc = j_obj(false, 3,
							"a", J_I16(1),
							"b", j_arr(false, 3, J_I16(1), J_I16(2), J_I16(3)),
							"c", j_obj(false, 1, "d", j_str("x")));
	tbuf		arr = j_arr(true, 2, j_str("p"), j_str("q"));
	const char *orig = "{\"a\":1,\"b\":[1,2,3],\"c\":{\"d\":\"x\"}}";

	check_apply("apply: empty vector", &doc, orig, 0);
	check_apply("apply: replace member", &doc,
				"{\"a\":5,\"b\":[1,2,3],\"c\":{\"d\":\"x\"}}",
				1, REPLACE, "$.a", J_I16(5));
	check_apply("apply: replace with empty value is null", &doc,
				"{\"a\":null,\"b\":[1,2,3],\"c\":{\"d\":\"x\"}}",
				1, REPLACE, "$.a", NOVAL);
	check_apply("apply: replace nested", &doc,
				"{\"a\":1,\"b\":[1,2,3],\"c\":{\"d\":{\"e\":[1.5]}}}",
				1, REPLACE, "$.c.d", j_obj(true, 1, "e", j_arr(false, 1, j_double(1.5))));
	check_apply("apply: replace array cell", &doc,
				"{\"a\":1,\"b\":[1,\"two\",3],\"c\":{\"d\":\"x\"}}",
				1, REPLACE, "$.b[1]", j_str("two"));
	check_apply("apply: replace [last]", &doc,
				"{\"a\":1,\"b\":[1,2,false],\"c\":{\"d\":\"x\"}}",
				1, REPLACE, "$.b[last]", J_FALSE);
	check_apply("apply: replace [last-2]", &doc,
				"{\"a\":1,\"b\":[false,2,3],\"c\":{\"d\":\"x\"}}",
				1, REPLACE, "$ . b [ last - 2 ]", J_FALSE);
	check_apply("apply: insert into array", &doc,
				"{\"a\":1,\"b\":[1,\"y\",2,3],\"c\":{\"d\":\"x\"}}",
				1, INSERT, "$.b[1]", j_str("y"));
	check_apply("apply: insert past the end appends", &doc,
				"{\"a\":1,\"b\":[1,2,3,\"y\"],\"c\":{\"d\":\"x\"}}",
				1, INSERT, "$.b[10]", j_str("y"));
	check_apply("apply: insert at [last] goes before the last", &doc,
				"{\"a\":1,\"b\":[1,2,\"y\",3],\"c\":{\"d\":\"x\"}}",
				1, INSERT, "$.b[last]", j_str("y"));
	check_apply("apply: insert into object keeps MySQL key order", &doc,
				"{\"\":0,\"a\":1,\"b\":[1,2,3],\"c\":{\"d\":\"x\",\"e\":true},\"aa\":2,\"\xc3\xa9\":3}",
				4, INSERT, "$.c.e", J_TRUE, INSERT, "$.aa", J_I16(2),
				INSERT, "$.\"\"", J_I16(0), INSERT, "$.\"\\u00e9\"", J_I16(3));
	check_apply("apply: insert member with every escape in its name", &doc,
				"{\"a\":1,\"b\":[1,2,3],\"c\":{\"d\":\"x\"},"
				"\"q\\\"\\\\/\\b\\f\\n\\r\\t\xe2\x82\xac\":null}",
				1, INSERT, "$.\"q\\\"\\\\\\/\\b\\f\\n\\r\\t\\u20AC\"", J_NULL);
	check_apply("apply: remove member", &doc,
				"{\"a\":1,\"b\":[1,2,3]}", 1, REMOVE, "$.c", NOVAL);
	check_apply("apply: remove nested member", &doc,
				"{\"a\":1,\"b\":[1,2,3],\"c\":{}}", 1, REMOVE, "$.c.d", NOVAL);
	check_apply("apply: remove array cells", &doc,
				"{\"a\":1,\"b\":[2],\"c\":{\"d\":\"x\"}}",
				2, REMOVE, "$.b[0]", NOVAL, REMOVE, "$.b[last]", NOVAL);
	check_apply("apply: sequence of diffs", &doc,
				"{\"a\":[1,{\"z\":null}],\"b\":[9],\"c\":{\"d\":\"x\"}}",
				4, REPLACE, "$.a", j_arr(false, 1, J_I16(1)),
				INSERT, "$.a[1]", j_obj(false, 0),
				INSERT, "$.a[1].z", J_NULL,
				REPLACE, "$.b", j_arr(true, 1, J_I32(9)));
	check_apply("apply: top-level array", &arr, "[\"q\",\"p\",\"r\"]",
				3, REMOVE, "$[0]", NOVAL, INSERT, "$[1]", j_str("p"),
				INSERT, "$[2]", j_str("r"));

	/* What MySQL rejects. */
	check_apply("apply: root path rejected", &doc, NULL, 1, REPLACE, "$", J_NULL);
	check_apply("apply: replace missing member", &doc, NULL, 1, REPLACE, "$.zz", J_NULL);
	check_apply("apply: replace out of bounds", &doc, NULL, 1, REPLACE, "$.b[3]", J_NULL);
	check_apply("apply: replace [last-3] out of bounds", &doc, NULL, 1, REPLACE, "$.b[last-3]", J_NULL);
	check_apply("apply: insert existing member", &doc, NULL, 1, INSERT, "$.a", J_NULL);
	check_apply("apply: insert cell into object", &doc, NULL, 1, INSERT, "$.c[0]", J_NULL);
	check_apply("apply: insert member into array", &doc, NULL, 1, INSERT, "$.b.x", J_NULL);
	check_apply("apply: path through a scalar", &doc, NULL, 1, REPLACE, "$.a.b", J_NULL);
	check_apply("apply: missing parent", &doc, NULL, 1, INSERT, "$.q.r", J_NULL);
	check_apply("apply: remove missing", &doc, NULL, 1, REMOVE, "$.b[3]", NOVAL);
	check_apply("apply: remove cell of object", &doc, NULL, 1, REMOVE, "$[0]", NOVAL);
	check_apply("apply: bad value", &doc, NULL, 1, REPLACE, "$.a", tb_bytes("\x04\x07", 2));
	{
		tbuf		nul = tb_bytes("", 0);

		check_apply("apply: null before image", &nul, NULL, 1, REPLACE, "$.a", J_NULL);
		free(nul.d);
	}
	/* Inserting below depth 100 makes a document MySQL cannot store. */
	{
		tbuf		deep = j_arr(false, 0);

		for (int i = 1; i < 100; i++)
			deep = j_arr(false, 1, deep);
		check_apply("apply: result nested deeper than 100", &deep, NULL, 1,
					INSERT, "$[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]"
					"[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]"
					"[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]"
					"[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]"
					"[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]",
					j_arr(false, 0));
		{
			char		want[210];

			memset(want, '[', 100);
			want[100] = '7';
			memset(want + 101, ']', 100);
			want[201] = '\0';
			check_apply("apply: result nested exactly 100", &deep, want, 1,
						INSERT, "$[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]"
						"[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]"
						"[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]"
						"[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]"
						"[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]",
						J_I16(7));
		}
		free(deep.d);
	}
	free(doc.d);
	free(arr.d);
}

static void
test_mutations(void)
{
	tbuf		doc = j_obj(false, 4,
							"a", j_arr(true, 3, J_I32(-7), j_double(0.25), j_str("s\xc3\xa9")),
							"b", j_opaque(246, "\x06\x03\x80\x7b\x01\xc8", 6),
							"c", j_obj(false, 1, "d", j_packed_temporal(11, pack_time(0, 1, 2, 3, 4))),
							"ee", j_opaque(252, "blob", 4));
	tbuf		diff = {0};
	tbuf		val = j_arr(false, 2, J_U64(5), j_str("w"));
	int			bad;

	d_add(&diff, REPLACE, "$.a[1]", &val);
	d_add(&diff, INSERT, "$.c.\"e f\"", &val);
	d_add(&diff, REMOVE, "$.a[last]", NULL);
	free(val.d);

	BL_TEST_BEGIN("mutations of a document never crash");
	bad = mutate_all(doc.d, doc.n, diff.d, diff.n);
	BL_CHECK_INT(bad, 0);
	BL_TEST_END();

	BL_TEST_BEGIN("mutations of a diff vector never crash");
	bad = mutate_all(diff.d, diff.n, doc.d, doc.n);
	BL_CHECK_INT(bad, 0);
	BL_TEST_END();

	BL_TEST_BEGIN("mutations of real documents never crash");
	bad = mutate_all(BYTES(jb_update_1), BYTES(jb_diff_1));
	bad += mutate_all(BYTES(jb_diff_1), BYTES(jb_update_1));
	bad += mutate_all(BYTES(jo_row_4), BYTES(jb_diff_1));
	bad += mutate_all(BYTES(jo_row_6), BYTES(jb_diff_1));
	bad += mutate_all(BYTES(jo_row_7), BYTES(jb_diff_1));
	BL_CHECK_INT(bad, 0);
	BL_TEST_END();

	free(doc.d);
	free(diff.d);
}

int
main(void)
{
	test_real_documents();
	test_scalars();
	test_opaque();
	test_containers();
	test_malformed();
	test_diff_text();
	test_apply();
	test_mutations();
	BL_TEST_EXIT();
}
