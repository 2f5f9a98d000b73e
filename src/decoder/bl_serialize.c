/*
 * bl_serialize.c
 *	  Canonical events: a decoded table map and rows event written back as
 *	  self-contained binlog events, for the change store (see bl_decoder.h).
 *
 * A canonical TABLE_MAP carries everything the decoder knew about the
 * table, so a later decoder needs neither the original FORMAT_DESCRIPTION
 * nor the schema provider:  the standard optional metadata fields, plus a
 * private field (type 200) with charset names for columns whose charset
 * came from information_schema rather than from a collation id.
 */
#include "bl_decoder_int.h"
#include "bl_charset.h"

#include <stdio.h>
#include <string.h>

#define OM_PRIVATE_CHARSET_NAMES 200

static void
put_le(bl_buf *b, uint64_t v, int n)
{
	uint8_t		tmp[8];

	for (int i = 0; i < n; i++)
		tmp[i] = (uint8_t) (v >> (8 * i));
	bl_buf_append(b, tmp, (size_t) n);
}

static void
put_packed(bl_buf *b, uint64_t v)
{
	if (v < 251)
		put_le(b, v, 1);
	else if (v < 65536)
	{
		bl_buf_putc(b, (char) 252);
		put_le(b, v, 2);
	}
	else if (v < 16777216)
	{
		bl_buf_putc(b, (char) 253);
		put_le(b, v, 3);
	}
	else
	{
		bl_buf_putc(b, (char) 254);
		put_le(b, v, 8);
	}
}

static void
put_header(bl_buf *b, uint8_t type)
{
	uint8_t		hdr[BL_EVENT_HEADER_LEN];

	memset(hdr, 0, sizeof(hdr));
	hdr[4] = type;
	bl_buf_append(b, hdr, sizeof(hdr));
}

/* Fix the event size field of the event starting at start. */
static void
finish_event(bl_buf *b, size_t start)
{
	uint32_t	size = (uint32_t) (b->len - start);

	if (b->oom)
		return;
	for (int i = 0; i < 4; i++)
		b->data[start + 9 + i] = (char) (size >> (8 * i));
}

static bool
is_numeric(uint8_t type)
{
	switch (type)
	{
		case BL_T_TINY:
		case BL_T_SHORT:
		case BL_T_INT24:
		case BL_T_LONG:
		case BL_T_LONGLONG:
		case BL_T_NEWDECIMAL:
		case BL_T_DECIMAL:
		case BL_T_FLOAT:
		case BL_T_DOUBLE:
			return true;
		default:
			return false;
	}
}

static bool
is_character(uint8_t type)
{
	switch (type)
	{
		case BL_T_STRING:
		case BL_T_VAR_STRING:
		case BL_T_VARCHAR:
		case BL_T_BLOB:
		case BL_T_TINY_BLOB:
		case BL_T_MEDIUM_BLOB:
		case BL_T_LONG_BLOB:
		case BL_T_MARIA_BLOB_COMPRESSED:
		case BL_T_MARIA_VARCHAR_COMPRESSED:
		case BL_T_VECTOR:
			return true;
		default:
			return false;
	}
}

/* Metadata bytes of one column, the inverse of the decoder's reading. */
static void
put_column_meta(bl_buf *b, const bl_column *c)
{
	switch (c->binlog_type)
	{
		case BL_T_FLOAT:
		case BL_T_DOUBLE:
		case BL_T_BLOB:
		case BL_T_TINY_BLOB:
		case BL_T_MEDIUM_BLOB:
		case BL_T_LONG_BLOB:
		case BL_T_GEOMETRY:
		case BL_T_JSON:
		case BL_T_VECTOR:
		case BL_T_MARIA_BLOB_COMPRESSED:
		case BL_T_TIMESTAMP2:
		case BL_T_DATETIME2:
		case BL_T_TIME2:
			put_le(b, c->meta & 0xff, 1);
			break;
		case BL_T_VARCHAR:
		case BL_T_VAR_STRING:
		case BL_T_MARIA_VARCHAR_COMPRESSED:
			put_le(b, c->meta, 2);
			break;
		case BL_T_BIT:
			put_le(b, c->meta & 0xff, 1);	/* bits in the last byte */
			put_le(b, c->meta >> 8, 1); /* whole bytes */
			break;
		case BL_T_NEWDECIMAL:
		case BL_T_STRING:
		case BL_T_ENUM:
		case BL_T_SET:
			put_le(b, c->meta >> 8, 1);
			put_le(b, c->meta & 0xff, 1);
			break;
		default:
			break;
	}
}

/* A bitmap field, most significant bit first, over the columns for which
 * pred holds (all columns if pred is NULL). */
static void
put_msb_bitmap(bl_buf *b, const bl_table *t, bool (*pred) (uint8_t),
			   bool (*bit) (const bl_column *))
{
	uint8_t		byte = 0;
	int			n = 0;

	for (uint32_t i = 0; i < t->ncols; i++)
	{
		if (pred && !pred(t->cols[i].type))
			continue;
		if (bit(&t->cols[i]))
			byte |= (uint8_t) (0x80 >> (n % 8));
		if (++n % 8 == 0)
		{
			bl_buf_putc(b, (char) byte);
			byte = 0;
		}
	}
	if (n % 8)
		bl_buf_putc(b, (char) byte);
}

static bool
col_unsigned(const bl_column *c)
{
	return c->is_unsigned;
}

static bool
col_visible(const bl_column *c)
{
	return c->visible;
}

static bool
is_enum_or_set(uint8_t type)
{
	return type == BL_T_ENUM || type == BL_T_SET;
}

/*
 * The column's charset is not the one its collation id gives: it came
 * from information_schema, because the binlog had no collation or one we
 * do not know.  Only its name can carry it.
 */
static bool
charset_by_name_only(const bl_column *c)
{
	return c->charset != NULL && bl_charset_by_collation(c->collation) != c->charset;
}

/* Start an optional metadata field: type, then its length (patched). */
static size_t
begin_field(bl_buf *b, uint8_t type, bl_buf *tmp)
{
	bl_buf_putc(b, (char) type);
	bl_buf_reset(tmp);
	return b->len;
}

static void
end_field(bl_buf *b, bl_buf *tmp)
{
	put_packed(b, tmp->len);
	bl_buf_append(b, tmp->data ? tmp->data : "", tmp->len);
}

int
bl_table_serialize(const bl_table *t, uint64_t table_id, bl_buf *out)
{
	size_t		start = out->len;
	bl_buf		f;
	bool		any_unsigned_known = false;
	bool		any_named = false;
	bool		any_charset_name = false;
	uint32_t	ngeom = 0,
				nvec = 0,
				nenum = 0,
				nset = 0;

	bl_buf_init(&f);
	put_header(out, BL_EV_TABLE_MAP);
	put_le(out, table_id, 6);
	put_le(out, t->flags, 2);
	put_le(out, t->schema.len, 1);
	bl_buf_append(out, t->schema.ptr, t->schema.len);
	bl_buf_putc(out, '\0');
	put_le(out, t->name.len, 1);
	bl_buf_append(out, t->name.ptr, t->name.len);
	bl_buf_putc(out, '\0');
	put_packed(out, t->ncols);
	for (uint32_t i = 0; i < t->ncols; i++)
		bl_buf_putc(out, (char) t->cols[i].binlog_type);
	for (uint32_t i = 0; i < t->ncols; i++)
		put_column_meta(&f, &t->cols[i]);
	put_packed(out, f.len);
	bl_buf_append(out, f.data ? f.data : "", f.len);
	{
		uint8_t		byte = 0;

		for (uint32_t i = 0; i < t->ncols; i++)
		{
			if (t->cols[i].nullable)
				byte |= (uint8_t) (1 << (i % 8));
			if (i % 8 == 7)
			{
				bl_buf_putc(out, (char) byte);
				byte = 0;
			}
		}
		if (t->ncols % 8)
			bl_buf_putc(out, (char) byte);
	}

	for (uint32_t i = 0; i < t->ncols; i++)
	{
		const bl_column *c = &t->cols[i];

		if (is_numeric(c->type) && c->unsigned_known)
			any_unsigned_known = true;
		if (c->name.ptr != NULL && c->name.len > 0)
			any_named = true;
		if (charset_by_name_only(c))
			any_charset_name = true;
		ngeom += c->type == BL_T_GEOMETRY;
		nvec += c->type == BL_T_VECTOR;
		nenum += c->type == BL_T_ENUM;
		nset += c->type == BL_T_SET;
	}

	/* optional metadata */
	if (any_unsigned_known)
	{
		begin_field(out, 1, &f);
		put_msb_bitmap(&f, t, is_numeric, col_unsigned);
		end_field(out, &f);
	}
	begin_field(out, 3, &f);	/* COLUMN_CHARSET */
	for (uint32_t i = 0; i < t->ncols; i++)
		if (is_character(t->cols[i].type))
			put_packed(&f, t->cols[i].collation);
	end_field(out, &f);
	if (nenum + nset > 0)
	{
		begin_field(out, 11, &f);	/* ENUM_AND_SET_COLUMN_CHARSET */
		for (uint32_t i = 0; i < t->ncols; i++)
			if (is_enum_or_set(t->cols[i].type))
				put_packed(&f, t->cols[i].collation);
		end_field(out, &f);
	}
	if (any_named)
	{
		/* an unnamed column (names from a partial schema) is an empty name */
		begin_field(out, 4, &f);	/* COLUMN_NAME */
		for (uint32_t i = 0; i < t->ncols; i++)
		{
			uint32_t	len = t->cols[i].name.ptr ? t->cols[i].name.len : 0;

			put_packed(&f, len);
			if (len)
				bl_buf_append(&f, t->cols[i].name.ptr, len);
		}
		end_field(out, &f);
	}
	for (int pass = 0; pass < 2; pass++)
	{
		uint8_t		type = pass == 0 ? BL_T_SET : BL_T_ENUM;

		if ((pass == 0 ? nset : nenum) == 0)
			continue;
		begin_field(out, pass == 0 ? 5 : 6, &f);	/* SET / ENUM_STR_VALUE */
		for (uint32_t i = 0; i < t->ncols; i++)
		{
			const bl_column *c = &t->cols[i];

			if (c->type != type)
				continue;
			put_packed(&f, c->n_values);
			for (uint32_t k = 0; k < c->n_values; k++)
			{
				put_packed(&f, c->values[k].len);
				bl_buf_append(&f, c->values[k].ptr, c->values[k].len);
			}
		}
		end_field(out, &f);
	}
	if (ngeom)
	{
		begin_field(out, 7, &f);	/* GEOMETRY_TYPE */
		for (uint32_t i = 0; i < t->ncols; i++)
			if (t->cols[i].type == BL_T_GEOMETRY)
				put_packed(&f, t->cols[i].geometry_type);
		end_field(out, &f);
	}
	if (t->npk)
	{
		begin_field(out, 9, &f);	/* PRIMARY_KEY_WITH_PREFIX */
		for (uint32_t k = 0; k < t->npk; k++)
		{
			put_packed(&f, t->pk[k]);
			put_packed(&f, t->cols[t->pk[k]].pk_prefix);
		}
		end_field(out, &f);
	}
	begin_field(out, 12, &f);	/* COLUMN_VISIBILITY */
	put_msb_bitmap(&f, t, NULL, col_visible);
	end_field(out, &f);
	if (nvec)
	{
		begin_field(out, 13, &f);	/* VECTOR_DIMENSIONALITY */
		for (uint32_t i = 0; i < t->ncols; i++)
			if (t->cols[i].type == BL_T_VECTOR)
				put_packed(&f, t->cols[i].vector_dim);
		end_field(out, &f);
	}
	if (any_charset_name)
	{
		begin_field(out, OM_PRIVATE_CHARSET_NAMES, &f);
		for (uint32_t i = 0; i < t->ncols; i++)
		{
			const bl_column *c = &t->cols[i];
			const char *name = charset_by_name_only(c) ? bl_charset_name(c->charset) : "";
			size_t		len = strlen(name);

			put_packed(&f, len);
			bl_buf_append(&f, name, len);
		}
		end_field(out, &f);
	}
	finish_event(out, start);
	bl_buf_free(&f);
	return bl_buf_failed(out) ? -1 : 0;
}

int
bl_rows_serialize(const bl_event *ev, uint64_t table_id, bl_buf *out)
{
	const bl_rows_event *r = &ev->u.rows;
	size_t		start = out->len;
	uint8_t		type;
	bool		v2;
	uint32_t	bitmap_len = (r->width + 7) / 8;

	switch (ev->type)
	{
		case BL_EV_MARIA_WRITE_ROWS_COMPRESSED_V1:
		case BL_EV_PRE_GA_WRITE_ROWS:
			type = BL_EV_WRITE_ROWS_V1;
			break;
		case BL_EV_MARIA_UPDATE_ROWS_COMPRESSED_V1:
		case BL_EV_PRE_GA_UPDATE_ROWS:
			type = BL_EV_UPDATE_ROWS_V1;
			break;
		case BL_EV_MARIA_DELETE_ROWS_COMPRESSED_V1:
		case BL_EV_PRE_GA_DELETE_ROWS:
			type = BL_EV_DELETE_ROWS_V1;
			break;
		case BL_EV_MARIA_WRITE_ROWS_COMPRESSED:
			type = BL_EV_WRITE_ROWS_V2;
			break;
		case BL_EV_MARIA_UPDATE_ROWS_COMPRESSED:
			type = BL_EV_UPDATE_ROWS_V2;
			break;
		case BL_EV_MARIA_DELETE_ROWS_COMPRESSED:
			type = BL_EV_DELETE_ROWS_V2;
			break;
		default:
			type = ev->type;
			break;
	}
	v2 = (type >= BL_EV_WRITE_ROWS_V2 && type <= BL_EV_DELETE_ROWS_V2) ||
		type == BL_EV_PARTIAL_UPDATE_ROWS;
	put_header(out, type);
	put_le(out, table_id, 6);
	put_le(out, r->flags, 2);
	if (v2)
		put_le(out, 2, 2);		/* extra data: none */
	put_packed(out, r->width);
	bl_buf_append(out, r->present_before, bitmap_len);
	if (r->op == BL_OP_UPDATE)
		bl_buf_append(out, r->present_after, bitmap_len);
	bl_buf_append(out, r->rows_data, r->rows_len);
	finish_event(out, start);
	return bl_buf_failed(out) ? -1 : 0;
}

void
bl_decoder_set_canonical_format(bl_decoder *dec)
{
	memset(dec->post_header_len, 0, sizeof(dec->post_header_len));
	dec->post_header_len[BL_EV_TABLE_MAP] = 8;
	for (int t = BL_EV_WRITE_ROWS_V1; t <= BL_EV_DELETE_ROWS_V1; t++)
		dec->post_header_len[t] = 8;
	for (int t = BL_EV_WRITE_ROWS_V2; t <= BL_EV_DELETE_ROWS_V2; t++)
		dec->post_header_len[t] = 10;
	dec->post_header_len[BL_EV_PARTIAL_UPDATE_ROWS] = 10;
	dec->post_header_len[BL_EV_QUERY] = 13;
	dec->checksum_alg = BL_CHECKSUM_OFF;
	dec->have_fde = true;
	dec->binlog_version = 4;
	snprintf(dec->server_version, sizeof(dec->server_version), "canonical");
}
