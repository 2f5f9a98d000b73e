/*
 * bl_rows_edit.c
 *	  A rows event with columns left out of its images or their values
 *	  replaced (bl_decoder.h, bl_rows_edit): each image re-encoded with its
 *	  new NULL bitmap, the columns kept copied byte for byte.  For the
 *	  column filters and masks the change store applies before the ring.
 */
#include "bl_decoder_int.h"

#include <stdlib.h>
#include <string.h>

static inline bool
bit_get(const uint8_t *bits, uint32_t i)
{
	return (bits[i >> 3] >> (i & 7)) & 1;
}

static inline void
bit_put(uint8_t *bits, uint32_t i)
{
	bits[i >> 3] |= (uint8_t) (1 << (i & 7));
}

bool
bl_column_editable(const bl_column *col)
{
	if (col->compressed)
		return false;
	switch (col->type)
	{
		case BL_T_VARCHAR:
		case BL_T_VAR_STRING:
		case BL_T_STRING:
		case BL_T_BLOB:
		case BL_T_TINY_BLOB:
		case BL_T_MEDIUM_BLOB:
		case BL_T_LONG_BLOB:
			return col->length_bytes >= 1 && col->length_bytes <= 4;
		default:
			return false;
	}
}

/* One image, from spans, into out: NULL bitmap over the columns kept. */
static int
put_image(bl_decoder *dec, const bl_rows_event *r, const bl_span *spans,
		  const uint8_t *edits, bl_edit_value_fn value_fn, void *arg,
		  bl_buf *out, bl_buf *tmp, bl_error *err)
{
	const bl_table *t = r->table;
	uint32_t	n = 0;
	size_t		nulls_off;
	uint32_t	k = 0;

	for (uint32_t i = 0; i < t->ncols; i++)
		if (spans[i].kind != BL_VAL_ABSENT && edits[i] != BL_EDIT_DROP)
			n++;
	nulls_off = out->len;
	for (uint32_t b = 0; b < (n + 7) / 8; b++)
		bl_buf_putc(out, 0);
	for (uint32_t i = 0; i < t->ncols; i++)
	{
		const bl_column *col = &t->cols[i];
		const bl_span *sp = &spans[i];
		int			lb = col->length_bytes;

		if (sp->kind == BL_VAL_ABSENT || edits[i] == BL_EDIT_DROP)
			continue;
		if (sp->kind == BL_VAL_NULL || edits[i] == BL_EDIT_NULL)
		{
			if (!bl_buf_failed(out))
				bit_put((uint8_t *) out->data + nulls_off, k);
			k++;
			continue;
		}
		k++;
		if (edits[i] == BL_EDIT_KEEP)
		{
			bl_buf_append(out, sp->ptr, sp->len);
			continue;
		}
		/* BL_EDIT_VALUE: the value after its length prefix */
		bl_buf_reset(tmp);
		value_fn(arg, i, sp->ptr + lb, sp->len - (size_t) lb, tmp);
		if (bl_buf_failed(tmp))
			return bl_decoder_fail(dec, err, r->pos, BL_ERR_NOMEM, "out of memory");
		if (lb < 4 && (uint64_t) tmp->len >= ((uint64_t) 1 << (8 * lb)))
			return bl_decoder_fail(dec, err, r->pos, BL_ERR_UNSUPPORTED,
								   "the masked value of column %s of %s.%s is %zu bytes, more than its length prefix of %d bytes holds",
								   col->name.ptr ? col->name.ptr : "(unnamed)",
								   t->schema.ptr, t->name.ptr, tmp->len, lb);
		for (int b = 0; b < lb; b++)
			bl_buf_putc(out, (char) ((uint64_t) tmp->len >> (8 * b)));
		bl_buf_append(out, tmp->data, tmp->len);
	}
	return 0;
}

int
bl_rows_edit(bl_decoder *dec, bl_event *ev, const uint8_t *edits,
			 bl_edit_value_fn value_fn, void *arg, bl_buf *out, bl_error *err)
{
	bl_rows_event *r = &ev->u.rows;
	const bl_table *t = r->table;
	uint32_t	bitmap_len = (r->width + 7) / 8;
	bl_cur		c = bl_cur_make(r->rows_data, r->rows_len);
	bl_span    *spans;
	bl_buf		tmp;
	size_t		before_off,
				after_off,
				rows_off;
	uint32_t	row = 0;
	uint32_t	npresent[2] = {0, 0};
	int			rc = 0;

	if (t == NULL || r->width != t->ncols)
		return bl_decoder_fail(dec, err, r->pos, BL_ERR_SCHEMA,
							   "a rows event of %u columns for a table of %u cannot be filtered",
							   r->width, t ? t->ncols : 0);
	spans = calloc(t->ncols ? t->ncols : 1, sizeof(bl_span));
	if (spans == NULL)
		return bl_decoder_fail(dec, err, r->pos, BL_ERR_NOMEM, "out of memory");
	bl_buf_init(&tmp);
	bl_buf_reset(out);
	/* the present bitmaps without the columns dropped */
	before_off = out->len;
	bl_buf_append(out, r->present_before, bitmap_len);
	after_off = out->len;
	bl_buf_append(out, r->op == BL_OP_UPDATE ? r->present_after : r->present_before,
				  bitmap_len);
	rows_off = out->len;
	if (bl_buf_failed(out))
		rc = bl_decoder_fail(dec, err, r->pos, BL_ERR_NOMEM, "out of memory");
	for (uint32_t i = 0; rc == 0 && i < t->ncols; i++)
	{
		uint8_t    *bb = (uint8_t *) out->data + before_off;
		uint8_t    *ab = (uint8_t *) out->data + after_off;

		if (edits[i] == BL_EDIT_DROP)
		{
			bb[i >> 3] &= (uint8_t) ~(1 << (i & 7));
			ab[i >> 3] &= (uint8_t) ~(1 << (i & 7));
		}
		npresent[0] += bit_get(bb, i);
		npresent[1] += bit_get(ab, i);
	}

	while (rc == 0 && bl_cur_left(&c) > 0)
	{
		uint32_t	bad = 0;

		row++;
		if (r->op != BL_OP_INSERT)
		{
			if (bl_image_spans(t, r->present_before, r->npresent_before, &c, NULL,
							   spans, &bad) != 0)
				break;
			rc = put_image(dec, r, spans, edits, value_fn, arg, out, &tmp, err);
			if (rc != 0)
				break;
		}
		if (r->op != BL_OP_DELETE)
		{
			const uint8_t *partial_bits = NULL;

			if (r->partial)
			{
				const uint8_t *start = c.pos;
				uint64_t	options = bl_cur_packed(&c);

				if (options & 1)
					partial_bits = bl_cur_take(&c, (t->njson + 7) / 8);
				if (!bl_cur_ok(&c))
					break;
				bl_buf_append(out, start, (size_t) (c.pos - start));
			}
			if (bl_image_spans(t, r->present_after, r->npresent_after, &c, partial_bits,
							   spans, &bad) != 0)
				break;
			rc = put_image(dec, r, spans, edits, value_fn, arg, out, &tmp, err);
		}
	}
	if (rc == 0 && (bl_cur_left(&c) > 0 || !bl_cur_ok(&c)))
		rc = bl_decoder_fail(dec, err, r->pos, BL_ERR_CORRUPT,
							 "row %u of %s.%s is malformed or truncated", row,
							 t->schema.ptr, t->name.ptr);
	if (rc == 0 && bl_buf_failed(out))
		rc = bl_decoder_fail(dec, err, r->pos, BL_ERR_NOMEM, "out of memory");
	if (rc == 0 && npresent[0] == 0)
		rc = bl_decoder_fail(dec, err, r->pos, BL_ERR_UNSUPPORTED,
							 "the column filter of %s.%s leaves no column in its row images",
							 t->schema.ptr, t->name.ptr);
	free(spans);
	bl_buf_free(&tmp);
	if (rc != 0)
		return -1;
	r->present_before = (const uint8_t *) out->data + before_off;
	r->present_after = (const uint8_t *) out->data + (r->op == BL_OP_UPDATE ? after_off : before_off);
	r->npresent_before = npresent[0];
	r->npresent_after = r->op == BL_OP_UPDATE ? npresent[1] : npresent[0];
	r->rows_data = (const uint8_t *) out->data + rows_off;
	r->rows_len = out->len - rows_off;
	r->rows = bl_cur_make(r->rows_data, r->rows_len);
	r->row_index = 0;
	return 0;
}
