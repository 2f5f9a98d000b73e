/*
 * bl_rows.c
 *	  Rows events (WRITE/UPDATE/DELETE v1 and v2, PARTIAL_UPDATE_ROWS, and
 *	  MariaDB's compressed variants): the event header, the column-present
 *	  bitmaps, and iteration over row images.
 *
 * Layout of the rows part: for each row, the before image (UPDATE, DELETE),
 * for PARTIAL_UPDATE_ROWS a shared image (value options and one bit per
 * JSON column of the table saying whether its after value is a diff), and
 * the after image (INSERT, UPDATE).  Each image is a NULL bitmap with one
 * bit per column present in the image, then the non-NULL values.
 */
#include "bl_decoder_int.h"

#include <stdlib.h>
#include <string.h>

static inline bool
bit_set(const uint8_t *bits, uint32_t i)
{
	return (bits[i >> 3] >> (i & 7)) & 1;
}

static uint32_t
count_bits(const uint8_t *bits, uint32_t n)
{
	uint32_t	count = 0;

	for (uint32_t i = 0; i < n; i++)
		count += bit_set(bits, i);
	return count;
}

int
bl_decode_rows_event(bl_decoder *dec, bl_event *ev, bl_error *err)
{
	bl_rows_event *r = &ev->u.rows;
	bl_cur		c = bl_cur_make(ev->body, ev->body_len);
	uint8_t		phl = dec->post_header_len[ev->type];
	bool		compressed = false;
	uint32_t	bitmap_len;

	memset(r, 0, sizeof(*r));
	r->pos = ev->pos;
	switch (ev->type)
	{
		case BL_EV_WRITE_ROWS_V1:
		case BL_EV_WRITE_ROWS_V2:
		case BL_EV_PRE_GA_WRITE_ROWS:
			r->op = BL_OP_INSERT;
			break;
		case BL_EV_UPDATE_ROWS_V1:
		case BL_EV_UPDATE_ROWS_V2:
		case BL_EV_PRE_GA_UPDATE_ROWS:
			r->op = BL_OP_UPDATE;
			break;
		case BL_EV_PARTIAL_UPDATE_ROWS:
			r->op = BL_OP_UPDATE;
			r->partial = true;
			break;
		case BL_EV_DELETE_ROWS_V1:
		case BL_EV_DELETE_ROWS_V2:
		case BL_EV_PRE_GA_DELETE_ROWS:
			r->op = BL_OP_DELETE;
			break;
		case BL_EV_MARIA_WRITE_ROWS_COMPRESSED_V1:
		case BL_EV_MARIA_WRITE_ROWS_COMPRESSED:
			r->op = BL_OP_INSERT;
			compressed = true;
			break;
		case BL_EV_MARIA_UPDATE_ROWS_COMPRESSED_V1:
		case BL_EV_MARIA_UPDATE_ROWS_COMPRESSED:
			r->op = BL_OP_UPDATE;
			compressed = true;
			break;
		default:
			r->op = BL_OP_DELETE;
			compressed = true;
			break;
	}

	if (phl == 0)
		phl = (ev->type >= BL_EV_WRITE_ROWS_V2 && ev->type <= BL_EV_DELETE_ROWS_V2) ||
			ev->type == BL_EV_PARTIAL_UPDATE_ROWS ? 10 : 8;
	r->table_id = bl_cur_uint(&c, phl == 6 ? 4 : 6);
	r->flags = bl_cur_u16(&c);
	if (phl == 10)
	{
		uint16_t	extra = bl_cur_u16(&c);

		if (extra < 2)
			return bl_decoder_fail(dec, err, ev->pos, BL_ERR_CORRUPT,
								   "%s event has an extra-data length of %u",
								   bl_event_type_name(ev->type), extra);
		bl_cur_skip(&c, extra - 2u);
	}
	else if (phl > 8)
		bl_cur_skip(&c, phl - 8u);
	r->width = (uint32_t) bl_cur_packed(&c);
	if (!bl_cur_ok(&c) || r->width > 4096)
		return bl_decoder_fail(dec, err, ev->pos, BL_ERR_CORRUPT,
							   "%s event is malformed (width %u)",
							   bl_event_type_name(ev->type), r->width);
	bitmap_len = (r->width + 7) / 8;
	r->present_before = bl_cur_take(&c, bitmap_len);
	r->present_after = r->present_before;
	if (r->op == BL_OP_UPDATE)
		r->present_after = bl_cur_take(&c, bitmap_len);
	if (!bl_cur_ok(&c))
		return bl_decoder_fail(dec, err, ev->pos, BL_ERR_TRUNCATED,
							   "%s event is truncated", bl_event_type_name(ev->type));
	r->npresent_before = count_bits(r->present_before, r->width);
	r->npresent_after = count_bits(r->present_after, r->width);

	if (compressed)
	{
		if (bl_maria_uncompress(c.pos, bl_cur_left(&c), &dec->unzip, err) != 0)
			return bl_decoder_fail(dec, err, ev->pos, BL_ERR_CORRUPT,
								   "%s: %s", bl_event_type_name(ev->type), err->message);
		r->rows = bl_cur_make((const uint8_t *) dec->unzip.data, dec->unzip.len);
	}
	else
		r->rows = c;
	r->rows_data = r->rows.pos;
	r->rows_len = bl_cur_left(&r->rows);

	r->table = bl_decoder_table(dec, r->table_id);
	if (r->table == NULL)
	{
		if (bl_cur_left(&r->rows) == 0)
			return 0;			/* an empty "dummy" rows event */
		return bl_decoder_fail(dec, err, ev->pos, BL_ERR_CORRUPT,
							   "%s event for table id %llu, which no TABLE_MAP event mapped",
							   bl_event_type_name(ev->type),
							   (unsigned long long) r->table_id);
	}
	if (r->width != r->table->ncols)
		return bl_decoder_fail(dec, err, ev->pos, BL_ERR_SCHEMA,
							   "%s event for %s.%s has %u columns but its TABLE_MAP has %u",
							   bl_event_type_name(ev->type), r->table->schema.ptr,
							   r->table->name.ptr, r->width, r->table->ncols);
	if (dec->vals_cap < r->width)
	{
		uint32_t	cap = r->width < 64 ? 64 : r->width;
		bl_value   *b = realloc(dec->before_vals, sizeof(bl_value) * cap);
		bl_value   *a;

		if (b == NULL)
			return bl_decoder_fail(dec, err, ev->pos, BL_ERR_NOMEM, "out of memory");
		dec->before_vals = b;
		a = realloc(dec->after_vals, sizeof(bl_value) * cap);
		if (a == NULL)
			return bl_decoder_fail(dec, err, ev->pos, BL_ERR_NOMEM, "out of memory");
		dec->after_vals = a;
		dec->vals_cap = cap;
	}
	if (r->flags & BL_ROWS_STMT_END_F)
		dec->in_statement = false;
	return 0;
}

/*
 * The values of MariaDB COMPRESSED columns in an image, inflated into the
 * image's buffer (dec->column_unzip[image], sized once per image so that
 * the values' pointers stay valid until the next row).  Returns 0, or -1
 * with *bad set to the column whose value is malformed.
 */
static int
inflate_columns(bl_decoder *dec, const bl_table *t, bl_value *values, int image,
				uint32_t *bad)
{
	bl_buf	   *b = &dec->column_unzip[image];
	uint64_t	total = 0,
				size;
	size_t		off = 0;

	for (uint32_t i = 0; i < t->ncols; i++)
	{
		const bl_column *col = &t->cols[i];
		bl_value   *v = &values[i];

		if (!col->compressed || (v->kind != BL_VAL_STRING && v->kind != BL_VAL_BINARY))
			continue;
		if (bl_maria_column_size(v->v.raw.ptr, v->v.raw.len, &size) != 0 ||
			size > UINT32_MAX || total + size > BL_MAX_DECOMPRESSED)
		{
			*bad = i;
			return -1;
		}
		total += size;
	}
	bl_buf_reset(b);
	if (!bl_buf_reserve(b, (size_t) total))
	{
		*bad = UINT32_MAX;
		return -1;
	}
	for (uint32_t i = 0; i < t->ncols; i++)
	{
		const bl_column *col = &t->cols[i];
		bl_value   *v = &values[i];
		uint8_t    *dst = (uint8_t *) b->data + off;

		if (!col->compressed || (v->kind != BL_VAL_STRING && v->kind != BL_VAL_BINARY))
			continue;
		(void) bl_maria_column_size(v->v.raw.ptr, v->v.raw.len, &size);
		if (bl_maria_column_inflate(v->v.raw.ptr, v->v.raw.len, dst, size) != 0)
		{
			*bad = i;
			return -1;
		}
		v->v.raw.ptr = dst;
		v->v.raw.len = (uint32_t) size;
		off += (size_t) size;
	}
	b->len = off;
	return 0;
}

/*
 * Decode one image (0 before, 1 after) at the cursor into values[0..ncols)
 * (bl_image_decode), turning a failure into an error that names the row
 * and the column.
 */
static int
decode_image(bl_decoder *dec, const bl_rows_event *r, const uint8_t *present,
			 uint32_t npresent, bl_cur *c, bl_value *values,
			 const uint8_t *partial_bits, int image, uint64_t pos, bl_error *err)
{
	const bl_table *t = r->table;
	uint32_t	i;
	const bl_column *col;

	if (BL_LIKELY(bl_image_decode(t, present, npresent, c, values, partial_bits, &i) == 0))
	{
		if (BL_LIKELY(!t->has_compressed))
			return 0;
		if (inflate_columns(dec, t, values, image, &i) == 0)
			return 0;
		if (i == UINT32_MAX)
			return bl_decoder_fail(dec, err, pos, BL_ERR_NOMEM, "out of memory");
		col = &t->cols[i];
		return bl_decoder_fail(dec, err, pos, BL_ERR_CORRUPT,
							   "row %u of %s.%s: compressed value of column %s is malformed",
							   r->row_index + 1, t->schema.ptr, t->name.ptr,
							   col->name.ptr ? col->name.ptr : "(unnamed)");
	}
	if (i == UINT32_MAX)
		return bl_decoder_fail(dec, err, pos, BL_ERR_TRUNCATED,
							   "row %u of %s.%s is truncated in its NULL bitmap",
							   r->row_index + 1, t->schema.ptr, t->name.ptr);
	col = &t->cols[i];
	if (col->name.ptr)
		return bl_decoder_fail(dec, err, pos, BL_ERR_CORRUPT,
							   "row %u of %s.%s: value of column %s (%s) is malformed or truncated",
							   r->row_index + 1, t->schema.ptr, t->name.ptr,
							   col->name.ptr, bl_mysql_type_name(col->type));
	return bl_decoder_fail(dec, err, pos, BL_ERR_CORRUPT,
						   "row %u of %s.%s: value of column %u (%s) is malformed or truncated",
						   r->row_index + 1, t->schema.ptr, t->name.ptr,
						   i + 1, bl_mysql_type_name(col->type) ? bl_mysql_type_name(col->type) : "unknown");
}

int
bl_rows_next(bl_decoder *dec, bl_rows_event *r, bl_row *before,
			 bl_row *after, bl_error *err)
{
	bl_cur	   *c = &r->rows;
	uint64_t	pos = r->pos;
	const uint8_t *row_start = c->pos;
	const uint8_t *start;

	if (bl_cur_left(c) == 0 || r->table == NULL)
		return 0;
	if (before)
		before->ncols = 0;
	if (after)
		after->ncols = 0;

	if (r->op != BL_OP_INSERT)
	{
		start = c->pos;
		if (decode_image(dec, r, r->present_before, r->npresent_before, c,
						 dec->before_vals, NULL, 0, pos, err) != 0)
			return -1;
		if (before)
		{
			before->values = dec->before_vals;
			before->ncols = r->table->ncols;
			before->image = start;
			before->image_len = (size_t) (c->pos - start);
		}
	}
	if (r->op != BL_OP_DELETE)
	{
		const uint8_t *partial_bits = NULL;

		start = c->pos;
		if (r->partial)
		{
			uint64_t	options = bl_cur_packed(c);

			if (options & 1)
				partial_bits = bl_cur_take(c, (r->table->njson + 7) / 8);
			if (!bl_cur_ok(c))
				return bl_decoder_fail(dec, err, pos, BL_ERR_TRUNCATED,
									   "row %u of %s.%s is truncated in its shared image",
									   r->row_index + 1, r->table->schema.ptr,
									   r->table->name.ptr);
		}
		if (decode_image(dec, r, r->present_after, r->npresent_after, c,
						 dec->after_vals, partial_bits, 1, pos, err) != 0)
			return -1;
		if (after)
		{
			after->values = dec->after_vals;
			after->ncols = r->table->ncols;
			after->image = start;
			after->image_len = (size_t) (c->pos - start);
		}
	}

	/*
	 * Images without columns take no bytes: iterating the bytes left
	 * would return such rows forever.
	 */
	if (c->pos == row_start)
		return bl_decoder_fail(dec, err, pos, BL_ERR_CORRUPT,
							   "row %u of %s.%s is empty: its images have no columns but %zu bytes follow",
							   r->row_index + 1, r->table->schema.ptr,
							   r->table->name.ptr, bl_cur_left(c));
	r->row_index++;
	return 1;
}
