/*
 * bl_tablemap.c
 *	  TABLE_MAP events: column types and metadata, the optional metadata of
 *	  binlog_row_metadata=FULL (names, signedness, charsets, ENUM/SET
 *	  strings, primary key, visibility, geometry and vector details), the
 *	  merge with an external schema when the binlog carries no names, and
 *	  the decoder's table-id -> table cache.
 *
 * A table map is parsed once and cached by table id; a later TABLE_MAP with
 * byte-identical contents reuses the cached definition, which is the common
 * case (servers repeat the map in every transaction).
 */
#include "bl_decoder_int.h"
#include "bl_charset.h"

#include <stdio.h>
#include <stdlib.h>
#include <ctype.h>
#include <string.h>

/* Optional metadata field types */
#define OM_SIGNEDNESS					1
#define OM_DEFAULT_CHARSET				2
#define OM_COLUMN_CHARSET				3
#define OM_COLUMN_NAME					4
#define OM_SET_STR_VALUE				5
#define OM_ENUM_STR_VALUE				6
#define OM_GEOMETRY_TYPE				7
#define OM_SIMPLE_PRIMARY_KEY			8
#define OM_PRIMARY_KEY_WITH_PREFIX		9
#define OM_ENUM_AND_SET_DEFAULT_CHARSET 10
#define OM_ENUM_AND_SET_COLUMN_CHARSET	11
#define OM_COLUMN_VISIBILITY			12
#define OM_VECTOR_DIMENSIONALITY		13
#define OM_PRIVATE_CHARSET_NAMES		200 /* binlog_fdw's own, see
											 * bl_serialize.c */

/*
 * When the cache holds more than this many tables, it is emptied at the
 * first TABLE_MAP of the next statement: servers send the maps of every
 * statement again, so no map still needed is lost.
 */
#define TABLE_CACHE_SOFT_LIMIT	4096

/* A name that JSON output can copy as it is (bl_column.name_plain). */
static bool
name_is_plain(const bl_str *name)
{
	if (name->ptr == NULL)
		return false;
	for (uint32_t i = 0; i < name->len; i++)
	{
		uint8_t		c = (uint8_t) name->ptr[i];

		if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\')
			return false;
	}
	return true;
}

/* ---- a tiny arena: every allocation of one table lives in it ---- */

typedef struct arena_chunk
{
	struct arena_chunk *next;
	size_t		used;
	size_t		cap;
	char		data[];
} arena_chunk;

static void *
arena_alloc(void **arena, size_t size)
{
	arena_chunk *ch = (arena_chunk *) *arena;

	size = (size + 7) & ~(size_t) 7;
	if (ch == NULL || ch->cap - ch->used < size)
	{
		size_t		cap = size > 4000 ? size : 4000;

		ch = malloc(sizeof(arena_chunk) + cap);
		if (ch == NULL)
			return NULL;
		ch->next = (arena_chunk *) *arena;
		ch->used = 0;
		ch->cap = cap;
		*arena = ch;
	}
	ch->used += size;
	return ch->data + ch->used - size;
}

static void
arena_free(void *arena)
{
	arena_chunk *ch = (arena_chunk *) arena;

	while (ch)
	{
		arena_chunk *next = ch->next;

		free(ch);
		ch = next;
	}
}

static bool
arena_strdup(void **arena, bl_str *dst, const char *src, size_t len)
{
	char	   *p = arena_alloc(arena, len + 1);

	if (p == NULL)
		return false;
	memcpy(p, src, len);
	p[len] = '\0';
	dst->ptr = p;
	dst->len = (uint32_t) len;
	return true;
}

static void
table_free(bl_table *t)
{
	if (t == NULL)
		return;
	free(t->raw);
	arena_free(t->arena);
	free(t);
}

/* ---- the cache ---- */

static uint32_t
slot_of(const bl_decoder *dec, uint64_t id)
{
	uint64_t	h = id * UINT64_C(0x9E3779B97F4A7C15);

	return (uint32_t) (h >> 32) & (dec->nslots - 1);
}

const bl_table *
bl_decoder_table(const bl_decoder *dec, uint64_t table_id)
{
	uint32_t	i;

	if (dec->nslots == 0)
		return NULL;
	for (i = slot_of(dec, table_id);; i = (i + 1) & (dec->nslots - 1))
	{
		if (dec->slots[i].table == NULL)
			return NULL;
		if (dec->slots[i].table_id == table_id)
			return dec->slots[i].table;
	}
}

static bool
cache_grow(bl_decoder *dec)
{
	uint32_t	old_n = dec->nslots;
	bl_table_slot *old = dec->slots;
	uint32_t	n = old_n ? old_n * 2 : 64;
	bl_table_slot *slots = calloc(n, sizeof(bl_table_slot));

	if (slots == NULL)
		return false;
	dec->slots = slots;
	dec->nslots = n;
	for (uint32_t i = 0; i < old_n; i++)
	{
		if (old[i].table)
		{
			uint32_t	j = slot_of(dec, old[i].table_id);

			while (slots[j].table)
				j = (j + 1) & (n - 1);
			slots[j] = old[i];
		}
	}
	free(old);
	return true;
}

/* Store t under its id, freeing a previous table of that id. */
static bool
cache_put(bl_decoder *dec, bl_table *t)
{
	uint32_t	i;

	if ((dec->ntables + 1) * 2 > dec->nslots && !cache_grow(dec))
		return false;
	for (i = slot_of(dec, t->table_id);; i = (i + 1) & (dec->nslots - 1))
	{
		if (dec->slots[i].table == NULL)
		{
			dec->slots[i].table_id = t->table_id;
			dec->slots[i].table = t;
			dec->ntables++;
			return true;
		}
		if (dec->slots[i].table_id == t->table_id)
		{
			table_free(dec->slots[i].table);
			dec->slots[i].table = t;
			return true;
		}
	}
}

void
bl_table_cache_clear(bl_decoder *dec)
{
	for (uint32_t i = 0; i < dec->nslots; i++)
	{
		table_free(dec->slots[i].table);
		dec->slots[i].table = NULL;
	}
	dec->ntables = 0;
}

void
bl_table_cache_free(bl_decoder *dec)
{
	bl_table_cache_clear(dec);
	free(dec->slots);
	dec->slots = NULL;
	dec->nslots = 0;
}


/* ---- column classification ---- */

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

/* Columns that DEFAULT_CHARSET / COLUMN_CHARSET describe. */
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
		case BL_T_VECTOR:		/* MySQL 9 describes VECTOR's charset (binary) */
			return true;
		default:
			return false;
	}
}

static bool
is_enum_or_set(uint8_t type)
{
	return type == BL_T_ENUM || type == BL_T_SET;
}

/*
 * Read the per-type metadata of one column from the metadata block and
 * precompute its decoding parameters.
 */
static bool
read_column_meta(bl_column *col, bl_cur *m)
{
	switch (col->binlog_type)
	{
		case BL_T_FLOAT:
		case BL_T_DOUBLE:
			col->meta = bl_cur_u8(m);
			col->pack_length = col->binlog_type == BL_T_FLOAT ? 4 : 8;
			break;
		case BL_T_BLOB:
		case BL_T_TINY_BLOB:
		case BL_T_MEDIUM_BLOB:
		case BL_T_LONG_BLOB:
		case BL_T_GEOMETRY:
		case BL_T_JSON:
		case BL_T_VECTOR:
		case BL_T_MARIA_BLOB_COMPRESSED:
			col->meta = bl_cur_u8(m);
			col->length_bytes = (uint8_t) col->meta;
			if (col->length_bytes < 1 || col->length_bytes > 4)
				return false;
			break;
		case BL_T_VARCHAR:
		case BL_T_VAR_STRING:
		case BL_T_MARIA_VARCHAR_COMPRESSED:
			col->meta = bl_cur_u16(m);
			col->max_length = col->meta;
			col->length_bytes = col->meta > 255 ? 2 : 1;
			break;
		case BL_T_BIT:
			{
				uint8_t		bits = bl_cur_u8(m);
				uint8_t		bytes = bl_cur_u8(m);

				col->meta = (uint16_t) (bytes << 8 | bits);
				col->bits = (uint16_t) (bytes * 8 + bits);
				col->pack_length = (uint8_t) (bytes + (bits ? 1 : 0));
				if (col->bits > 64 || col->pack_length > 8)
					return false;
				break;
			}
		case BL_T_NEWDECIMAL:
			col->precision = bl_cur_u8(m);
			col->scale = bl_cur_u8(m);
			col->meta = (uint16_t) (col->precision << 8 | col->scale);
			if (col->precision < 1 || col->precision > 65 ||
				col->scale > 30 || col->scale > col->precision)
				return false;
			col->pack_length = (uint8_t) bl_decimal_binary_size(col->precision, col->scale);
			break;
		case BL_T_STRING:
		case BL_T_ENUM:
		case BL_T_SET:
			{
				uint8_t		b0 = bl_cur_u8(m);
				uint8_t		b1 = bl_cur_u8(m);
				uint8_t		real = b0;
				uint32_t	len = b1;

				col->meta = (uint16_t) (b0 << 8 | b1);
				if ((b0 & 0x30) != 0x30)
				{
					real = b0 | 0x30;
					len = b1 | (((uint32_t) (b0 & 0x30) ^ 0x30) << 4);
				}
				if (real == BL_T_ENUM || real == BL_T_SET)
				{
					col->type = real;
					col->pack_length = b1;
					if (real == BL_T_ENUM && b1 != 1 && b1 != 2)
						return false;
					if (real == BL_T_SET && (b1 < 1 || b1 > 8))
						return false;
				}
				else
				{
					col->type = BL_T_STRING;
					col->max_length = len;
					col->length_bytes = len > 255 ? 2 : 1;
				}
				break;
			}
		case BL_T_TIMESTAMP2:
		case BL_T_DATETIME2:
		case BL_T_TIME2:
			col->meta = bl_cur_u8(m);
			col->fsp = (uint8_t) col->meta;
			if (col->fsp > 6)
				return false;
			break;
		case BL_T_TINY:
		case BL_T_SHORT:
		case BL_T_INT24:
		case BL_T_LONG:
		case BL_T_LONGLONG:
		case BL_T_NULL:
		case BL_T_TIMESTAMP:
		case BL_T_DATE:
		case BL_T_NEWDATE:
		case BL_T_TIME:
		case BL_T_DATETIME:
		case BL_T_YEAR:
			break;
		default:
			/* DECIMAL (pre-5.0), TYPED_ARRAY and unknown: cannot decode */
			return false;
	}
	if (col->binlog_type == BL_T_NEWDATE)
		col->type = BL_T_DATE;
	return bl_cur_ok(m);
}

/* Bitmaps of optional metadata are written most significant bit first. */
static inline bool
msb_bit(const uint8_t *bits, size_t nbytes, uint32_t i)
{
	if (i / 8 >= nbytes)
		return false;
	return (bits[i / 8] >> (7 - (i % 8))) & 1;
}

/* Column index of the k-th column that satisfies pred, or -1. */
static int64_t
nth_column(const bl_table *t, bool (*pred) (uint8_t), uint64_t k)
{
	for (uint32_t i = 0; i < t->ncols; i++)
	{
		if (pred(t->cols[i].type))
		{
			if (k == 0)
				return i;
			k--;
		}
	}
	return -1;
}

static void
set_collation(bl_column *col, uint64_t coll)
{
	col->collation = (uint32_t) coll;
	col->charset = bl_charset_by_collation((uint32_t) coll);
}

static bool
read_charsets(bl_table *t, bl_cur *f, bool (*pred) (uint8_t), bool with_default)
{
	if (with_default)
	{
		uint64_t	def = bl_cur_packed(f);

		for (uint32_t i = 0; i < t->ncols; i++)
			if (pred(t->cols[i].type))
				set_collation(&t->cols[i], def);
		while (bl_cur_left(f) > 0 && bl_cur_ok(f))
		{
			uint64_t	k = bl_cur_packed(f);
			uint64_t	coll = bl_cur_packed(f);
			int64_t		idx = nth_column(t, pred, k);

			if (idx < 0)
				return false;
			set_collation(&t->cols[idx], coll);
		}
	}
	else
	{
		for (uint32_t i = 0; i < t->ncols && bl_cur_left(f) > 0; i++)
			if (pred(t->cols[i].type))
				set_collation(&t->cols[i], bl_cur_packed(f));
	}
	return bl_cur_ok(f);
}

static bool
read_str_values(bl_table *t, bl_cur *f, uint8_t type)
{
	for (uint32_t i = 0; i < t->ncols && bl_cur_left(f) > 0; i++)
	{
		bl_column  *col = &t->cols[i];
		uint64_t	n;

		if (col->type != type)
			continue;
		n = bl_cur_packed(f);
		if (!bl_cur_ok(f) || n > bl_cur_left(f) || n > 65535)
			return false;
		col->values = arena_alloc(&t->arena, sizeof(bl_str) * (n ? n : 1));
		if (col->values == NULL)
			return false;
		col->n_values = (uint32_t) n;
		for (uint64_t k = 0; k < n; k++)
		{
			uint64_t	len = bl_cur_packed(f);
			const uint8_t *s = bl_cur_take(f, (size_t) len);

			if (s == NULL ||
				!arena_strdup(&t->arena, &col->values[k], (const char *) s, (size_t) len))
				return false;
		}
	}
	return bl_cur_ok(f);
}

static int
read_optional_metadata(bl_decoder *dec, bl_table *t, bl_cur *c, bl_event *ev,
					   bl_error *err)
{
	uint32_t	numeric = 0;

	while (bl_cur_left(c) > 0)
	{
		uint8_t		ftype = bl_cur_u8(c);
		uint64_t	flen = bl_cur_packed(c);
		bl_cur		f;
		bool		ok = true;

		if (!bl_cur_ok(c) || flen > bl_cur_left(c))
			return bl_decoder_fail(dec, err, ev->pos, BL_ERR_CORRUPT,
								   "TABLE_MAP of %s.%s: optional metadata field %u overruns the event",
								   t->schema.ptr, t->name.ptr, ftype);
		f = bl_cur_sub(c, (size_t) flen);
		switch (ftype)
		{
			case OM_SIGNEDNESS:
				numeric = 0;
				for (uint32_t i = 0; i < t->ncols; i++)
				{
					if (!is_numeric(t->cols[i].type))
						continue;
					t->cols[i].is_unsigned = msb_bit(f.pos, flen, numeric++);
					t->cols[i].unsigned_known = true;
				}
				break;
			case OM_DEFAULT_CHARSET:
				ok = read_charsets(t, &f, is_character, true);
				break;
			case OM_COLUMN_CHARSET:
				ok = read_charsets(t, &f, is_character, false);
				break;
			case OM_ENUM_AND_SET_DEFAULT_CHARSET:
				ok = read_charsets(t, &f, is_enum_or_set, true);
				break;
			case OM_ENUM_AND_SET_COLUMN_CHARSET:
				ok = read_charsets(t, &f, is_enum_or_set, false);
				break;
			case OM_COLUMN_NAME:
				for (uint32_t i = 0; i < t->ncols && ok; i++)
				{
					uint64_t	len = bl_cur_packed(&f);
					const uint8_t *s = bl_cur_take(&f, (size_t) len);

					/*
					 * MySQL and MariaDB refuse empty column names: an empty
					 * one (from a canonical table map whose source named only
					 * some columns) means the column has no name.
					 */
					if (s == NULL)
						ok = false;
					else if (len > 0)
						ok = arena_strdup(&t->arena, &t->cols[i].name,
										  (const char *) s, (size_t) len);
				}
				if (ok)
					t->names_source = BL_NAMES_TABLE_MAP;
				break;
			case OM_SET_STR_VALUE:
				ok = read_str_values(t, &f, BL_T_SET);
				break;
			case OM_ENUM_STR_VALUE:
				ok = read_str_values(t, &f, BL_T_ENUM);
				break;
			case OM_GEOMETRY_TYPE:
				for (uint32_t i = 0; i < t->ncols && bl_cur_left(&f) > 0; i++)
					if (t->cols[i].type == BL_T_GEOMETRY)
						t->cols[i].geometry_type = (uint32_t) bl_cur_packed(&f);
				break;
			case OM_SIMPLE_PRIMARY_KEY:
			case OM_PRIMARY_KEY_WITH_PREFIX:
				{
					uint32_t	cap = t->ncols;

					t->pk = arena_alloc(&t->arena, sizeof(uint32_t) * (cap ? cap : 1));
					t->npk = 0;
					if (t->pk == NULL)
					{
						ok = false;
						break;
					}
					while (bl_cur_left(&f) > 0 && bl_cur_ok(&f))
					{
						uint64_t	idx = bl_cur_packed(&f);
						uint64_t	prefix = ftype == OM_PRIMARY_KEY_WITH_PREFIX ? bl_cur_packed(&f) : 0;

						if (idx >= t->ncols || t->npk >= cap)
						{
							ok = false;
							break;
						}
						t->pk[t->npk++] = (uint32_t) idx;
						t->cols[idx].is_pk = true;
						t->cols[idx].pk_prefix = (uint16_t) prefix;
					}
					break;
				}
			case OM_COLUMN_VISIBILITY:
				for (uint32_t i = 0; i < t->ncols; i++)
					t->cols[i].visible = msb_bit(f.pos, flen, i);
				break;
			case OM_PRIVATE_CHARSET_NAMES:
				/* binlog_fdw's canonical table maps: charsets by name */
				for (uint32_t i = 0; i < t->ncols && ok && bl_cur_left(&f) > 0; i++)
				{
					uint64_t	len = bl_cur_packed(&f);
					const uint8_t *s = bl_cur_take(&f, (size_t) len);
					char		name[64];

					if (s == NULL || len >= sizeof(name))
						ok = false;
					else if (len > 0 && t->cols[i].charset == NULL)
					{
						memcpy(name, s, (size_t) len);
						name[len] = '\0';
						t->cols[i].charset = bl_charset_by_name(name);
					}
				}
				break;
			case OM_VECTOR_DIMENSIONALITY:
				for (uint32_t i = 0; i < t->ncols && bl_cur_left(&f) > 0; i++)
					if (t->cols[i].type == BL_T_VECTOR)
						t->cols[i].vector_dim = (uint32_t) bl_cur_packed(&f);
				break;
			default:
				break;			/* unknown fields are skipped by length */
		}
		if (!ok || !bl_cur_ok(&f))
			return bl_decoder_fail(dec, err, ev->pos, BL_ERR_CORRUPT,
								   "TABLE_MAP of %s.%s: malformed optional metadata field %u",
								   t->schema.ptr, t->name.ptr, ftype);
	}
	return 0;
}

/* ---- merging an external schema (information_schema) ---- */

/* Does information_schema's DATA_TYPE fit the binlog column type? */
static bool
schema_type_matches(const char *dt, uint8_t type)
{
	static const struct
	{
		const char *name;
		uint8_t		types[3];
	}			map[] = {
		{"tinyint", {BL_T_TINY}},
		{"smallint", {BL_T_SHORT}},
		{"mediumint", {BL_T_INT24}},
		{"int", {BL_T_LONG}},
		{"bigint", {BL_T_LONGLONG}},
		{"float", {BL_T_FLOAT}},
		{"double", {BL_T_DOUBLE}},
		{"decimal", {BL_T_NEWDECIMAL}},
		{"date", {BL_T_DATE}},
		{"time", {BL_T_TIME, BL_T_TIME2}},
		{"datetime", {BL_T_DATETIME, BL_T_DATETIME2}},
		{"timestamp", {BL_T_TIMESTAMP, BL_T_TIMESTAMP2}},
		{"year", {BL_T_YEAR}},
		{"char", {BL_T_STRING}},
		{"binary", {BL_T_STRING}},
		{"varchar", {BL_T_VARCHAR, BL_T_VAR_STRING, BL_T_MARIA_VARCHAR_COMPRESSED}},
		{"varbinary", {BL_T_VARCHAR, BL_T_VAR_STRING, BL_T_MARIA_VARCHAR_COMPRESSED}},
		{"tinytext", {BL_T_BLOB, BL_T_MARIA_BLOB_COMPRESSED}},
		{"text", {BL_T_BLOB, BL_T_MARIA_BLOB_COMPRESSED}},
		{"mediumtext", {BL_T_BLOB, BL_T_MARIA_BLOB_COMPRESSED}},
		{"longtext", {BL_T_BLOB, BL_T_MARIA_BLOB_COMPRESSED}},
		{"tinyblob", {BL_T_BLOB, BL_T_MARIA_BLOB_COMPRESSED}},
		{"blob", {BL_T_BLOB, BL_T_MARIA_BLOB_COMPRESSED}},
		{"mediumblob", {BL_T_BLOB, BL_T_MARIA_BLOB_COMPRESSED}},
		{"longblob", {BL_T_BLOB, BL_T_MARIA_BLOB_COMPRESSED}},
		{"json", {BL_T_JSON, BL_T_BLOB}},
		{"enum", {BL_T_ENUM}},
		{"set", {BL_T_SET}},
		{"bit", {BL_T_BIT}},
		{"vector", {BL_T_VECTOR, BL_T_VARCHAR}},
		{"geometry", {BL_T_GEOMETRY}},
		{"point", {BL_T_GEOMETRY}},
		{"linestring", {BL_T_GEOMETRY}},
		{"polygon", {BL_T_GEOMETRY}},
		{"multipoint", {BL_T_GEOMETRY}},
		{"multilinestring", {BL_T_GEOMETRY}},
		{"multipolygon", {BL_T_GEOMETRY}},
		{"geometrycollection", {BL_T_GEOMETRY}},
		{"geomcollection", {BL_T_GEOMETRY}},
	};

	if (dt == NULL)
		return true;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
	{
		if (strcmp(dt, map[i].name) != 0)
			continue;
		for (int k = 0; k < 3 && map[i].types[k]; k++)
			if (map[i].types[k] == type)
				return true;
		return false;
	}
	return true;				/* types we do not know (inet6, uuid, ...) */
}

static bool
names_equal(const char *a, size_t alen, const char *b)
{
	/* MySQL column names compare case-insensitively */
	if (strlen(b) != alen)
		return false;
	for (size_t i = 0; i < alen; i++)
		if (tolower((unsigned char) a[i]) != tolower((unsigned char) b[i]))
			return false;
	return true;
}

static int
merge_schema(bl_decoder *dec, bl_table *t, bl_event *ev, bl_error *err)
{
	const bl_schema_table *s;
	const char *what = dec->opts.schema_what ? dec->opts.schema_what : "the source's information_schema";

	if (dec->opts.schema_lookup == NULL)
		return 0;

	/*
	 * With binlog_row_metadata=FULL the TABLE_MAP describes the table as it
	 * was when the event was written (names, signedness, charsets, ENUM/SET
	 * members, primary key): the source's current schema is not needed, and
	 * may have changed since (a later DDL) without making the event wrong.
	 * A schema history, which describes the table at the event's position,
	 * is checked against it all the same.
	 */
	if (t->names_source == BL_NAMES_TABLE_MAP && !dec->opts.schema_at_position)
		return 0;
	s = dec->opts.schema_lookup(dec->opts.schema_arg, t->schema.ptr, t->name.ptr);
	if (s == NULL)
		return 0;
	if (s->unknown)
	{
		if (t->names_source == BL_NAMES_TABLE_MAP)
			return 0;			/* the event's own names */
		return bl_decoder_fail(dec, err, ev->pos, BL_ERR_SCHEMA,
							   "table %s.%s: its definition at this position is unknown (%s), and the TABLE_MAP carries no column names",
							   t->schema.ptr, t->name.ptr, s->unknown);
	}
	if (s->ncols != t->ncols)
		return bl_decoder_fail(dec, err, ev->pos, BL_ERR_SCHEMA,
							   "table %s.%s has %u columns in the binlog but %u in %s; the table changed since this event was written",
							   t->schema.ptr, t->name.ptr, t->ncols, s->ncols, what);
	for (uint32_t i = 0; i < t->ncols; i++)
	{
		const bl_schema_column *sc = &s->cols[i];

		if (!schema_type_matches(sc->data_type, t->cols[i].type))
			return bl_decoder_fail(dec, err, ev->pos, BL_ERR_SCHEMA,
								   "column %u (%s) of %s.%s is %s in the binlog but %s in %s",
								   i + 1, sc->name ? sc->name : "?", t->schema.ptr, t->name.ptr,
								   bl_mysql_type_name(t->cols[i].type),
								   sc->data_type, what);
		if (dec->opts.schema_at_position && t->cols[i].unsigned_known &&
			t->cols[i].is_unsigned != sc->is_unsigned)
			return bl_decoder_fail(dec, err, ev->pos, BL_ERR_SCHEMA,
								   "column %u (%s) of %s.%s is %s in the binlog but %s in %s",
								   i + 1, sc->name ? sc->name : "?", t->schema.ptr, t->name.ptr,
								   t->cols[i].is_unsigned ? "unsigned" : "signed",
								   sc->is_unsigned ? "unsigned" : "signed", what);
		if (t->names_source == BL_NAMES_TABLE_MAP && sc->name && t->cols[i].name.ptr &&
			!names_equal(t->cols[i].name.ptr, t->cols[i].name.len, sc->name))
			return bl_decoder_fail(dec, err, ev->pos, BL_ERR_SCHEMA,
								   "column %u of %s.%s is \"%.*s\" in the binlog but \"%s\" in %s",
								   i + 1, t->schema.ptr, t->name.ptr,
								   (int) t->cols[i].name.len, t->cols[i].name.ptr, sc->name, what);
	}
	if (t->names_source == BL_NAMES_TABLE_MAP)
		return 0;				/* checked; the event's own metadata is used */
	for (uint32_t i = 0; i < t->ncols; i++)
	{
		const bl_schema_column *sc = &s->cols[i];
		bl_column  *col = &t->cols[i];

		if (t->names_source == BL_NAMES_NONE && sc->name && sc->name[0] &&
			!arena_strdup(&t->arena, &col->name, sc->name, strlen(sc->name)))
			return bl_decoder_fail(dec, err, ev->pos, BL_ERR_NOMEM, "out of memory");
		if (!col->unsigned_known)
		{
			col->is_unsigned = sc->is_unsigned;
			col->unsigned_known = true;
		}
		if (col->charset == NULL && sc->charset_name)
			col->charset = bl_charset_by_name(sc->charset_name);
		else if (col->charset == NULL && is_character(col->type))
		{
			/*
			 * information_schema gives binary strings no character set
			 * (BINARY, VARBINARY, BLOB, and INET6 or UUID, which are
			 * BINARY(16) in the binlog): without this they would be taken
			 * for text whenever their bytes happen to be valid UTF-8.
			 */
			col->charset = bl_charset_by_name("binary");
		}
		if (col->n_values == 0 && sc->n_values > 0 && is_enum_or_set(col->type))
		{
			col->values = arena_alloc(&t->arena, sizeof(bl_str) * sc->n_values);
			if (col->values == NULL)
				return bl_decoder_fail(dec, err, ev->pos, BL_ERR_NOMEM, "out of memory");
			for (uint32_t k = 0; k < sc->n_values; k++)
				if (!arena_strdup(&t->arena, &col->values[k], sc->values[k],
								  strlen(sc->values[k])))
					return bl_decoder_fail(dec, err, ev->pos, BL_ERR_NOMEM, "out of memory");
			col->n_values = sc->n_values;
		}
	}
	if (t->npk == 0)
	{
		t->pk = arena_alloc(&t->arena, sizeof(uint32_t) * (t->ncols ? t->ncols : 1));
		if (t->pk == NULL)
			return bl_decoder_fail(dec, err, ev->pos, BL_ERR_NOMEM, "out of memory");
		for (uint32_t i = 0; i < t->ncols; i++)
			if (s->cols[i].is_pk)
			{
				t->pk[t->npk++] = i;
				t->cols[i].is_pk = true;
			}
	}
	if (t->names_source == BL_NAMES_NONE)
		t->names_source = BL_NAMES_SCHEMA;
	return 0;
}

/* ---- the event ---- */

int
bl_decode_table_map(bl_decoder *dec, bl_event *ev, bl_error *err)
{
	bl_cur		c = bl_cur_make(ev->body, ev->body_len);
	uint8_t		phl = dec->post_header_len[BL_EV_TABLE_MAP];
	uint64_t	table_id;
	uint16_t	flags;
	const bl_table *old;
	bl_table   *t;
	uint8_t		db_len,
				tbl_len;
	const uint8_t *db,
			   *tbl,
			   *types,
			   *nulls;
	uint64_t	ncols,
				meta_len;
	bl_cur		meta;

	table_id = bl_cur_uint(&c, phl == 6 ? 4 : 6);
	flags = bl_cur_u16(&c);
	if (!bl_cur_ok(&c))
		return bl_decoder_fail(dec, err, ev->pos, BL_ERR_TRUNCATED,
							   "TABLE_MAP event is truncated");

	if (!dec->in_statement && dec->ntables > TABLE_CACHE_SOFT_LIMIT)
		bl_table_cache_clear(dec);
	dec->in_statement = true;

	/* the same definition again: reuse it */
	old = bl_decoder_table(dec, table_id);
	if (old && old->raw_len == bl_cur_left(&c) &&
		memcmp(old->raw, c.pos, old->raw_len) == 0)
	{
		ev->u.table_map = old;
		return 0;
	}

	db_len = bl_cur_u8(&c);
	db = bl_cur_take(&c, (size_t) db_len + 1);
	tbl_len = bl_cur_u8(&c);
	tbl = bl_cur_take(&c, (size_t) tbl_len + 1);
	ncols = bl_cur_packed(&c);
	if (!bl_cur_ok(&c) || ncols > bl_cur_left(&c) || ncols > 4096)
		return bl_decoder_fail(dec, err, ev->pos, BL_ERR_CORRUPT,
							   "TABLE_MAP event is malformed (column count %llu)",
							   (unsigned long long) ncols);
	types = bl_cur_take(&c, (size_t) ncols);
	meta_len = bl_cur_packed(&c);
	meta = bl_cur_sub(&c, (size_t) meta_len);
	nulls = bl_cur_take(&c, (size_t) (ncols + 7) / 8);
	if (!bl_cur_ok(&c))
		return bl_decoder_fail(dec, err, ev->pos, BL_ERR_TRUNCATED,
							   "TABLE_MAP event is truncated");

	t = calloc(1, sizeof(bl_table));
	if (t == NULL)
		return bl_decoder_fail(dec, err, ev->pos, BL_ERR_NOMEM, "out of memory");
	t->table_id = table_id;
	t->flags = flags;
	t->ncols = (uint32_t) ncols;
	t->version = ++dec->table_versions;
	t->raw_len = ev->body_len - (size_t) (phl == 6 ? 6 : 8);
	t->raw = malloc(t->raw_len ? t->raw_len : 1);
	t->cols = arena_alloc(&t->arena, sizeof(bl_column) * (ncols ? ncols : 1));
	if (t->raw == NULL || t->cols == NULL ||
		!arena_strdup(&t->arena, &t->schema, (const char *) db, db_len) ||
		!arena_strdup(&t->arena, &t->name, (const char *) tbl, tbl_len))
	{
		table_free(t);
		return bl_decoder_fail(dec, err, ev->pos, BL_ERR_NOMEM, "out of memory");
	}
	memcpy(t->raw, ev->body + (phl == 6 ? 6 : 8), t->raw_len);
	memset(t->cols, 0, sizeof(bl_column) * ncols);

	for (uint32_t i = 0; i < ncols; i++)
	{
		bl_column  *col = &t->cols[i];

		col->binlog_type = types[i];
		col->type = types[i];
		col->nullable = (nulls[i / 8] >> (i % 8)) & 1;
		col->visible = true;
		col->json_ordinal = -1;
		if (!read_column_meta(col, &meta))
		{
			bl_decoder_fail(dec, err, ev->pos, BL_ERR_UNSUPPORTED,
							"TABLE_MAP of %s.%s: column %u has type %s (%u) with metadata that cannot be decoded",
							t->schema.ptr, t->name.ptr, i + 1,
							bl_mysql_type_name(types[i]) ? bl_mysql_type_name(types[i]) : "unknown",
							types[i]);
			table_free(t);
			return -1;
		}
		if (col->type == BL_T_JSON)
			col->json_ordinal = (int32_t) t->njson++;
		if (col->binlog_type == BL_T_MARIA_BLOB_COMPRESSED ||
			col->binlog_type == BL_T_MARIA_VARCHAR_COMPRESSED)
		{
			/* stored like BLOB / VARCHAR, each value deflated (bl_rows.c) */
			col->type = col->binlog_type == BL_T_MARIA_BLOB_COMPRESSED ?
				BL_T_BLOB : BL_T_VARCHAR;
			col->compressed = true;
			t->has_compressed = true;
		}
	}
	if (bl_cur_left(&meta) != 0)
	{
		bl_decoder_fail(dec, err, ev->pos, BL_ERR_CORRUPT,
						"TABLE_MAP of %s.%s: %zu bytes of column metadata left over",
						t->schema.ptr, t->name.ptr, bl_cur_left(&meta));
		table_free(t);
		return -1;
	}
	if (read_optional_metadata(dec, t, &c, ev, err) != 0 ||
		merge_schema(dec, t, ev, err) != 0)
	{
		table_free(t);
		return -1;
	}
	for (uint32_t i = 0; i < ncols; i++)
	{
		t->cols[i].name_plain = name_is_plain(&t->cols[i].name);
		t->cols[i].binary = bl_charset_is_binary(t->cols[i].charset);
	}
	if (!cache_put(dec, t))
	{
		table_free(t);
		return bl_decoder_fail(dec, err, ev->pos, BL_ERR_NOMEM, "out of memory");
	}
	ev->u.table_map = t;
	return 0;
}

const char *
bl_mysql_type_name(uint8_t type)
{
	switch (type)
	{
		case BL_T_DECIMAL:
			return "DECIMAL";
		case BL_T_TINY:
			return "TINY";
		case BL_T_SHORT:
			return "SHORT";
		case BL_T_LONG:
			return "LONG";
		case BL_T_FLOAT:
			return "FLOAT";
		case BL_T_DOUBLE:
			return "DOUBLE";
		case BL_T_NULL:
			return "NULL";
		case BL_T_TIMESTAMP:
			return "TIMESTAMP";
		case BL_T_LONGLONG:
			return "LONGLONG";
		case BL_T_INT24:
			return "INT24";
		case BL_T_DATE:
			return "DATE";
		case BL_T_TIME:
			return "TIME";
		case BL_T_DATETIME:
			return "DATETIME";
		case BL_T_YEAR:
			return "YEAR";
		case BL_T_NEWDATE:
			return "NEWDATE";
		case BL_T_VARCHAR:
			return "VARCHAR";
		case BL_T_BIT:
			return "BIT";
		case BL_T_TIMESTAMP2:
			return "TIMESTAMP2";
		case BL_T_DATETIME2:
			return "DATETIME2";
		case BL_T_TIME2:
			return "TIME2";
		case BL_T_TYPED_ARRAY:
			return "TYPED_ARRAY";
		case BL_T_MARIA_BLOB_COMPRESSED:
			return "BLOB_COMPRESSED";
		case BL_T_MARIA_VARCHAR_COMPRESSED:
			return "VARCHAR_COMPRESSED";
		case BL_T_VECTOR:
			return "VECTOR";
		case BL_T_JSON:
			return "JSON";
		case BL_T_NEWDECIMAL:
			return "NEWDECIMAL";
		case BL_T_ENUM:
			return "ENUM";
		case BL_T_SET:
			return "SET";
		case BL_T_TINY_BLOB:
			return "TINY_BLOB";
		case BL_T_MEDIUM_BLOB:
			return "MEDIUM_BLOB";
		case BL_T_LONG_BLOB:
			return "LONG_BLOB";
		case BL_T_BLOB:
			return "BLOB";
		case BL_T_VAR_STRING:
			return "VAR_STRING";
		case BL_T_STRING:
			return "STRING";
		case BL_T_GEOMETRY:
			return "GEOMETRY";
	}
	return NULL;
}
