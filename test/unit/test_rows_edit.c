/*
 * test_rows_edit.c
 *	  bl_rows_edit.c: a rows event with columns dropped, set NULL or
 *	  replaced (the column filters and masks of binlog_fdw.filters) decodes
 *	  with the columns kept as they were, the dropped ones absent, the
 *	  replaced ones with the new bytes; serialized, the same.
 *
 * Run: make check-unit (ASan + UBSan).
 */
#include "bl_decoder.h"
#include "bl_test.h"

#include <stdlib.h>

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

static void
eb_begin(evbuf *b, uint8_t type)
{
	b->len = 0;
	eb_le(b, 1700000000, 4);
	eb_u8(b, type);
	eb_le(b, 1, 4);
	eb_le(b, 0, 4);
	eb_le(b, 0, 4);
	eb_le(b, 0, 2);
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
	eb_le(b, 0, 4);
	eb_end(b);
}

/* db.t (id INT NOT NULL, s VARCHAR(20) NULL, n INT NULL) */
static void
eb_table_map(evbuf *b)
{
	eb_begin(b, BL_EV_TABLE_MAP);
	eb_le(b, 77, 6);
	eb_le(b, 1, 2);
	eb_u8(b, 2);
	eb_bytes(b, "db", 3);
	eb_u8(b, 1);
	eb_bytes(b, "t", 2);
	eb_u8(b, 3);
	eb_u8(b, BL_T_LONG);
	eb_u8(b, BL_T_VARCHAR);
	eb_u8(b, BL_T_LONG);
	eb_u8(b, 2);				/* metadata: VARCHAR's max length */
	eb_le(b, 20, 2);
	eb_u8(b, 0x06);				/* s and n nullable */
	eb_end(b);
}

/* one image of (id, s, n): s NULL if sv is NULL, n NULL if n < 0 */
static void
eb_image(evbuf *b, int id, const char *sv, int n)
{
	eb_u8(b, (sv ? 0 : 2) | (n < 0 ? 4 : 0));
	eb_le(b, (uint64_t) id, 4);
	if (sv)
	{
		eb_u8(b, (unsigned) strlen(sv));
		eb_bytes(b, sv, strlen(sv));
	}
	if (n >= 0)
		eb_le(b, (uint64_t) n, 4);
}

static uint8_t *copies[16];
static int	ncopies;

static int
decode(bl_decoder *dec, const evbuf *b, bl_event *ev, bl_error *err)
{
	uint8_t    *copy = malloc(b->len);

	if (copy == NULL)
		abort();
	memcpy(copy, b->data, b->len);
	if (ncopies < 16)
		copies[ncopies++] = copy;
	memset(ev, 0xa5, sizeof(*ev));
	memset(err, 0, sizeof(*err));
	return bl_decode_event(dec, copy, b->len, 4, ev, err);
}

/* the replacement: "<" len ">" */
static void
replace(void *arg, uint32_t col, const uint8_t *value, size_t len, bl_buf *out)
{
	char		s[32];

	(void) value;
	*(int *) arg += 1;
	snprintf(s, sizeof(s), "<%u:%zu>", col, len);
	bl_buf_append(out, s, strlen(s));
}

static void
check_text(const bl_value *v, const char *want)
{
	BL_CHECK(v->kind == BL_VAL_STRING || v->kind == BL_VAL_BINARY);
	if (v->kind == BL_VAL_STRING || v->kind == BL_VAL_BINARY)
	{
		BL_CHECK_INT((int) v->v.raw.len, (int) strlen(want));
		BL_CHECK(memcmp(v->v.raw.ptr, want, v->v.raw.len) == 0);
	}
}

static void
test_update_edited(void)
{
	bl_decoder_options opts;
	bl_decoder *dec;
	evbuf		b;
	bl_event	ev;
	bl_error	err;
	bl_buf		out;
	bl_row		before,
				after;
	uint8_t		edits[3] = {BL_EDIT_KEEP, BL_EDIT_VALUE, BL_EDIT_DROP};
	int			calls = 0;

	BL_TEST_BEGIN("rows-edit/update-value-drop");
	bl_decoder_options_init(&opts);
	dec = bl_decoder_create(&opts);
	eb_fde(&b);
	BL_CHECK_INT(decode(dec, &b, &ev, &err), 0);
	eb_table_map(&b);
	BL_CHECK_INT(decode(dec, &b, &ev, &err), 0);
	eb_begin(&b, BL_EV_UPDATE_ROWS_V2);
	eb_le(&b, 77, 6);
	eb_le(&b, BL_ROWS_STMT_END_F, 2);
	eb_le(&b, 2, 2);
	eb_u8(&b, 3);
	eb_u8(&b, 0x07);			/* all present, before */
	eb_u8(&b, 0x07);			/* and after */
	eb_image(&b, 1, "ab", -1);
	eb_image(&b, 1, "abcd", 7);
	eb_image(&b, 2, NULL, 3);
	eb_image(&b, 2, "y", 4);
	eb_end(&b);
	BL_CHECK_INT(decode(dec, &b, &ev, &err), 0);

	bl_buf_init(&out);
	BL_CHECK_INT(bl_rows_edit(dec, &ev, edits, replace, &calls, &out, &err), 0);
	BL_CHECK_INT(calls, 3);		/* the NULL stays NULL */
	BL_CHECK_INT((int) ev.u.rows.npresent_before, 2);
	BL_CHECK_INT((int) ev.u.rows.npresent_after, 2);

	BL_CHECK_INT(bl_rows_next(dec, &ev.u.rows, &before, &after, &err), 1);
	BL_CHECK_INT((int) before.values[0].v.i, 1);
	check_text(&before.values[1], "<1:2>");
	BL_CHECK_INT(before.values[2].kind, BL_VAL_ABSENT);
	BL_CHECK_INT((int) after.values[0].v.i, 1);
	check_text(&after.values[1], "<1:4>");
	BL_CHECK_INT(after.values[2].kind, BL_VAL_ABSENT);
	BL_CHECK_INT(bl_rows_next(dec, &ev.u.rows, &before, &after, &err), 1);
	BL_CHECK_INT((int) before.values[0].v.i, 2);
	BL_CHECK_INT(before.values[1].kind, BL_VAL_NULL);
	BL_CHECK_INT(before.values[2].kind, BL_VAL_ABSENT);
	check_text(&after.values[1], "<1:1>");
	BL_CHECK_INT(bl_rows_next(dec, &ev.u.rows, &before, &after, &err), 0);

	/* serialized as the ring stores it: the same images */
	{
		bl_buf		ser;
		evbuf		b2;
		bl_event	ev2;

		bl_buf_init(&ser);
		BL_CHECK_INT(bl_rows_serialize(&ev, 77, &ser), 0);
		b2.len = ser.len;
		memcpy(b2.data, ser.data, ser.len);
		BL_CHECK_INT(decode(dec, &b2, &ev2, &err), 0);
		BL_CHECK_INT(bl_rows_next(dec, &ev2.u.rows, &before, &after, &err), 1);
		check_text(&after.values[1], "<1:4>");
		BL_CHECK_INT(after.values[2].kind, BL_VAL_ABSENT);
		BL_CHECK_INT(bl_rows_next(dec, &ev2.u.rows, &before, &after, &err), 1);
		BL_CHECK_INT(bl_rows_next(dec, &ev2.u.rows, &before, &after, &err), 0);
		bl_buf_free(&ser);
	}
	bl_buf_free(&out);
	bl_decoder_destroy(dec);
	BL_TEST_END();
}

static void
test_insert_null_and_empty(void)
{
	bl_decoder_options opts;
	bl_decoder *dec;
	evbuf		b;
	bl_event	ev;
	bl_error	err;
	bl_buf		out;
	bl_row		before,
				after;
	uint8_t		edits[3] = {BL_EDIT_KEEP, BL_EDIT_DROP, BL_EDIT_NULL};
	uint8_t		all[3] = {BL_EDIT_DROP, BL_EDIT_DROP, BL_EDIT_DROP};
	int			calls = 0;

	BL_TEST_BEGIN("rows-edit/insert-null-and-nothing-left");
	bl_decoder_options_init(&opts);
	dec = bl_decoder_create(&opts);
	eb_fde(&b);
	BL_CHECK_INT(decode(dec, &b, &ev, &err), 0);
	eb_table_map(&b);
	BL_CHECK_INT(decode(dec, &b, &ev, &err), 0);
	eb_begin(&b, BL_EV_WRITE_ROWS_V1);
	eb_le(&b, 77, 6);
	eb_le(&b, BL_ROWS_STMT_END_F, 2);
	eb_u8(&b, 3);
	eb_u8(&b, 0x07);
	eb_image(&b, 5, "five", 55);
	eb_end(&b);
	BL_CHECK_INT(decode(dec, &b, &ev, &err), 0);
	bl_buf_init(&out);
	{
		bl_event	keep = ev;

		BL_CHECK_INT(bl_rows_edit(dec, &ev, edits, replace, &calls, &out, &err), 0);
		BL_CHECK_INT(calls, 0);
		BL_CHECK_INT(bl_rows_next(dec, &ev.u.rows, &before, &after, &err), 1);
		BL_CHECK_INT((int) after.values[0].v.i, 5);
		BL_CHECK_INT(after.values[1].kind, BL_VAL_ABSENT);
		BL_CHECK_INT(after.values[2].kind, BL_VAL_NULL);
		BL_CHECK_INT(bl_rows_next(dec, &ev.u.rows, &before, &after, &err), 0);
		/* nothing left: an error, not an empty image */
		BL_CHECK_INT(bl_rows_edit(dec, &keep, all, replace, &calls, &out, &err), -1);
		BL_CHECK(strstr(err.message, "leaves no column") != NULL);
	}
	bl_buf_free(&out);
	bl_decoder_destroy(dec);
	BL_TEST_END();
}

int
main(void)
{
	test_update_edited();
	test_insert_null_and_empty();
	for (int i = 0; i < ncopies; i++)
		free(copies[i]);
	BL_TEST_EXIT();
}
