/*
 * convert.c
 *	  MySQL values to PostgreSQL Datums for the apply path, straight from
 *	  the decoder's typed values (no JSON on the way).  Common pairs of
 *	  MySQL kind and PostgreSQL type have direct conversions; everything
 *	  else goes through the value's text and the target type's input
 *	  function, which also enforces typmods (varchar(n), numeric(p,s)).
 *
 * Conventions (README, "Type mapping"): DATETIME into timestamptz is read
 * as UTC; TIMESTAMP values are UTC instants; zero dates follow the
 * zero_date option; TIME fits time only between 00:00:00 and 24:00:00;
 * GEOMETRY is EWKB (bl_geometry.h): bytes into bytea, through the input
 * function of PostGIS's geometry and geography types (hex EWKB), "\x" hex
 * text into anything else.
 */
#include "types/types.h"

#include "bl_charset.h"
#include "bl_decimal.h"
#include "bl_geometry.h"
#include "bl_json_binary.h"
#include "bl_value_text.h"

#include "catalog/pg_type.h"
#include "datatype/timestamp.h"
#include "mb/pg_wchar.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/datetime.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

void
blpg_conv_init(blpg_col_conv *cc, Oid type, int32 typmod)
{
	cc->type = type;
	cc->typmod = typmod;
	switch (type)
	{
		case INT2OID:
			cc->kind = BLPG_CONV_INT2;
			break;
		case INT4OID:
			cc->kind = BLPG_CONV_INT4;
			break;
		case INT8OID:
			cc->kind = BLPG_CONV_INT8;
			break;
		case NUMERICOID:
			cc->kind = BLPG_CONV_NUMERIC;
			break;
		case FLOAT4OID:
			cc->kind = BLPG_CONV_FLOAT4;
			break;
		case FLOAT8OID:
			cc->kind = BLPG_CONV_FLOAT8;
			break;
		case BOOLOID:
			cc->kind = BLPG_CONV_BOOL;
			break;
		case TEXTOID:
			cc->kind = BLPG_CONV_TEXT;
			break;
		case VARCHAROID:
			cc->kind = typmod < 0 ? BLPG_CONV_TEXT : BLPG_CONV_VARCHAR;
			break;
		case BYTEAOID:
			cc->kind = BLPG_CONV_BYTEA;
			break;
		case DATEOID:
			cc->kind = BLPG_CONV_DATE;
			break;
		case TIMESTAMPOID:
			cc->kind = BLPG_CONV_TIMESTAMP;
			break;
		case TIMESTAMPTZOID:
			cc->kind = BLPG_CONV_TIMESTAMPTZ;
			break;
		case TIMEOID:
			cc->kind = BLPG_CONV_TIME;
			break;
		case INTERVALOID:
			cc->kind = BLPG_CONV_INTERVAL;
			break;
		case JSONBOID:
			cc->kind = BLPG_CONV_JSONB;
			break;
		case TEXTARRAYOID:
			cc->kind = BLPG_CONV_TEXT_ARRAY;
			break;
		default:
			cc->kind = BLPG_CONV_GENERIC;
			break;
	}
	/* the input function serves every kind as the fallback */
	{
		Oid			infunc;
		char	   *fname;

		getTypeInputInfo(type, &infunc, &cc->ioparam);
		fmgr_info_cxt(infunc, &cc->input, CurrentMemoryContext);
		/* PostGIS types (no fixed OID): their input reads hex EWKB */
		fname = cc->kind == BLPG_CONV_GENERIC ? get_func_name(infunc) : NULL;
		if (fname && (strcmp(fname, "geometry_in") == 0 || strcmp(fname, "geography_in") == 0))
			cc->kind = BLPG_CONV_GEOMETRY;
	}
}

static void
conversion_error(const blpg_col_conv *cc, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATATYPE_MISMATCH),
			 errmsg("cannot apply %s to column \"%s\" of type %s", what, cc->name,
					format_type_with_typemod(cc->type, cc->typmod))));
}

static void
out_of_range(const blpg_col_conv *cc)
{
	ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("value out of range for column \"%s\" of type %s", cc->name,
					format_type_with_typemod(cc->type, cc->typmod))));
}

static bool
is_zero_date(const bl_temporal *t)
{
	return t->year == 0 || t->month == 0 || t->day == 0;
}

/* A zero date by the zero_date option: true = NULL, else -infinity. */
static bool
zero_date_is_null(const blpg_col_conv *cc, const blpg_apply_options *opts)
{
	if (opts->zero_date == BLPG_ZERO_ERROR)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("zero date for column \"%s\"", cc->name),
				 errhint("Set the source's zero_date option to 'null' or '-infinity' to accept zero dates.")));
	return opts->zero_date == BLPG_ZERO_NULL;
}

static void
check_date(const blpg_col_conv *cc, const bl_temporal *t)
{
	if (t->month < 1 || t->month > 12 || t->day < 1 ||
		t->day > day_tab[isleap(t->year)][t->month - 1] ||
		t->hour > 23 || t->minute > 59 || t->second > 59)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("date/time %04u-%02u-%02u %02u:%02u:%02u is not valid for column \"%s\"",
						t->year, t->month, t->day, t->hour, t->minute, t->second, cc->name)));
}

static Timestamp
temporal_to_timestamp(const blpg_col_conv *cc, const bl_temporal *t)
{
	int64		days;

	check_date(cc, t);
	days = date2j((int) t->year, t->month, t->day) - POSTGRES_EPOCH_JDATE;
	return days * USECS_PER_DAY +
		(((int64) t->hour * 60 + t->minute) * 60 + t->second) * USECS_PER_SEC + t->usec;
}

static TimestampTz
unix_to_timestamptz(int64 sec, uint32 usec)
{
	return (sec - (int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY) *
		USECS_PER_SEC + usec;
}

/* A reusable buffer for text conversions (no allocation per value). */
static bl_buf scratch;

/* Whether a column's charset (NULL: unknown, read as utf8mb4) is a UTF-8 one. */
static bool
utf8_charset(const bl_charset *cs)
{
	static const bl_charset *last_utf8 = NULL;	/* (the charsets are static) */

	if (cs == NULL || cs == last_utf8)
		return true;
	if (strncmp(bl_charset_name(cs), "utf8", 4) != 0)
		return false;
	last_utf8 = cs;
	return true;
}

/*
 * The bytes of a string value as server-encoded text, NUL-terminated only
 * if terminate.  UTF-8 columns in a UTF-8 database are used in place when
 * they are valid, which is the common case.
 */
static const char *
string_bytes(const blpg_col_conv *cc, const bl_column *col, const bl_value *v,
			 int *len, bool terminate)
{
	bl_error	err;
	char	   *conv;

	if (GetDatabaseEncoding() == PG_UTF8 && utf8_charset(col->charset) &&
		pg_verify_mbstr(PG_UTF8, (const char *) v->v.raw.ptr, (int) v->v.raw.len, true))
	{
		*len = (int) v->v.raw.len;
		if (!terminate)
			return (const char *) v->v.raw.ptr;
		return pnstrdup((const char *) v->v.raw.ptr, v->v.raw.len);
	}
	bl_buf_reset(&scratch);
	if (col->charset && !bl_charset_is_binary(col->charset))
	{
		if (bl_charset_to_utf8(col->charset, v->v.raw.ptr, v->v.raw.len, &scratch, &err) != 0)
			blpg_report_decoder_error(ERROR, &err, NULL);
	}
	else
		bl_charset_to_utf8(bl_charset_by_name("utf8mb4"), v->v.raw.ptr, v->v.raw.len, &scratch, &err);
	if (bl_buf_failed(&scratch))
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	if (memchr(scratch.data ? scratch.data : "", '\0', scratch.len) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CHARACTER_NOT_IN_REPERTOIRE),
				 errmsg("string for column \"%s\" contains a NUL character, which PostgreSQL text cannot hold",
						cc->name),
				 errhint("Use bytea for this column.")));
	conv = pg_any_to_server(scratch.data ? scratch.data : "", (int) scratch.len, PG_UTF8);
	if (conv == scratch.data)
		conv = pnstrdup(scratch.data ? scratch.data : "", scratch.len);
	*len = strlen(conv);
	return conv;
}

/* A string value as a palloc'd C string in the server encoding. */
static char *
string_value(const blpg_col_conv *cc, const bl_column *col, const bl_value *v, int *len)
{
	return (char *) string_bytes(cc, col, v, len, true);
}

/* Member strings of an ENUM value or of a SET value's members. */
static char *
member_text(const bl_column *col, uint64 index)
{
	bl_buf		b;
	bl_error	err;
	char	   *s;

	if (index >= col->n_values)
		return psprintf("%llu", (unsigned long long) index + 1);
	bl_buf_init(&b);
	bl_charset_to_utf8(col->charset && !bl_charset_is_binary(col->charset) ? col->charset :
					   bl_charset_by_name("utf8mb4"),
					   (const uint8 *) col->values[index].ptr, col->values[index].len, &b, &err);
	s = pnstrdup(b.data ? b.data : "", b.len);
	bl_buf_free(&b);
	return pg_any_to_server(s, strlen(s), PG_UTF8);
}

/* JSON text of a JSON value (partial updates need the before value). */
static char *
json_text(const blpg_col_conv *cc, const bl_value *v, const bl_value *before)
{
	bl_buf		b;
	bl_error	err;
	int			rc;
	char	   *s;

	bl_buf_init(&b);
	if (v->kind == BL_VAL_JSON)
		rc = v->v.raw.len ? bl_json_binary_to_text(v->v.raw.ptr, v->v.raw.len, &b, &err) :
			(bl_buf_puts(&b, "null"), 0);
	else if (before && before->kind == BL_VAL_JSON && before->v.raw.len)
		rc = bl_json_apply_diff(before->v.raw.ptr, before->v.raw.len,
								v->v.raw.ptr, v->v.raw.len, &b, &err);
	else
	{
		bl_buf_free(&b);
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("partial JSON update of column \"%s\" without the document it applies to",
						cc->name),
				 errhint("Set binlog_row_image=FULL on the source (or binlog_row_value_options='') so updates carry whole JSON documents.")));
	}
	if (rc != 0)
	{
		bl_buf_free(&b);
		blpg_report_decoder_error(ERROR, &err, NULL);
	}
	s = pnstrdup(b.data ? b.data : "", b.len);
	bl_buf_free(&b);
	return pg_any_to_server(s, strlen(s), PG_UTF8);
}

/*
 * The value as text for the target's input function.  in_array: SET as
 * an array literal.
 */
static char *
value_text(const blpg_col_conv *cc, const bl_column *col, const bl_value *v,
		   const bl_value *before, const blpg_apply_options *opts, bool *isnull)
{
	bl_buf		b;
	bl_error	err;
	char	   *s;

	*isnull = false;
	switch ((bl_value_kind) v->kind)
	{
		case BL_VAL_STRING:
			{
				int			len;

				return string_value(cc, col, v, &len);
			}
		case BL_VAL_ENUM:
			if (v->v.u == 0)
				return pstrdup("");
			return member_text(col, v->v.u - 1);
		case BL_VAL_SET:
			{
				StringInfoData buf;

				initStringInfo(&buf);
				if (cc->type != TEXTOID && cc->type != VARCHAROID && cc->type != BPCHAROID)
					appendStringInfoChar(&buf, '{');
				for (int i = 0; i < 64; i++)
				{
					if (!((v->v.u >> i) & 1))
						continue;
					if (buf.len > 1 || (buf.len == 1 && buf.data[0] != '{'))
						appendStringInfoChar(&buf, ',');
					if (buf.data[0] == '{')
					{
						char	   *m = member_text(col, i);

						appendStringInfoChar(&buf, '"');
						for (char *p = m; *p; p++)
						{
							if (*p == '"' || *p == '\\')
								appendStringInfoChar(&buf, '\\');
							appendStringInfoChar(&buf, *p);
						}
						appendStringInfoChar(&buf, '"');
					}
					else
						appendStringInfoString(&buf, member_text(col, i));
				}
				if (buf.data[0] == '{')
					appendStringInfoChar(&buf, '}');
				return buf.data;
			}
		case BL_VAL_JSON:
		case BL_VAL_JSON_DIFF:
			return json_text(cc, v, before);
		case BL_VAL_DATE:
		case BL_VAL_DATETIME:
			if (is_zero_date(&v->v.tm))
			{
				if (zero_date_is_null(cc, opts))
				{
					*isnull = true;
					return NULL;
				}
				return pstrdup("-infinity");
			}
			break;
		case BL_VAL_TIMESTAMP:
			if (v->v.ts.sec == 0 && v->v.ts.usec == 0)
			{
				if (zero_date_is_null(cc, opts))
				{
					*isnull = true;
					return NULL;
				}
				return pstrdup("-infinity");
			}
			{
				bl_temporal t;

				bl_buf_init(&b);
				bl_timestamp_to_temporal(v->v.ts.sec, v->v.ts.usec, &t);
				bl_temporal_to_text(BL_VAL_DATETIME, &t, col->fsp, ' ', &b);
				bl_buf_puts(&b, "+00");
				s = pstrdup(b.data);
				bl_buf_free(&b);
				return s;
			}
		case BL_VAL_VECTOR:
			{
				StringInfoData buf;
				bool		array = cc->type != TEXTOID && get_element_type(cc->type) != InvalidOid;

				initStringInfo(&buf);
				appendStringInfoChar(&buf, array ? '{' : '[');
				for (uint32 i = 0; i + 4 <= v->v.raw.len; i += 4)
				{
					uint32		bits = (uint32) bl_load_le(v->v.raw.ptr + i, 4);
					float		f;

					memcpy(&f, &bits, 4);
					appendStringInfo(&buf, "%s%.9g", i ? "," : "", f);
				}
				appendStringInfoChar(&buf, array ? '}' : ']');
				return buf.data;
			}
		default:
			break;
	}
	/* everything else: the decoder's JSON text, unquoted */
	bl_buf_init(&b);
	if (v->kind == BL_VAL_DATE || v->kind == BL_VAL_DATETIME || v->kind == BL_VAL_TIME)
		bl_temporal_to_text((bl_value_kind) v->kind, &v->v.tm, col->fsp, ' ', &b);
	else if (bl_value_to_json(col, v, before, &b, &err) != 0)
	{
		bl_buf_free(&b);
		blpg_report_decoder_error(ERROR, &err, NULL);
	}
	if (b.len >= 2 && b.data[0] == '"')
	{
		/* "\\x.." (binary) and "0101" (bit): drop the quotes and escapes */
		char	   *d = palloc(b.len);
		size_t		n = 0;

		for (size_t i = 1; i + 1 < b.len; i++)
		{
			if (b.data[i] == '\\' && i + 2 < b.len)
				i++;
			d[n++] = b.data[i];
		}
		d[n] = '\0';
		bl_buf_free(&b);
		return d;
	}
	s = pstrdup(b.data ? b.data : "");
	bl_buf_free(&b);
	return s;
}

/* A GEOMETRY value as EWKB (bl_geometry.h). */
static bytea *
geometry_ewkb(const blpg_col_conv *cc, const bl_value *v)
{
	uint8		hdr[BL_EWKB_HEADER_MAX];
	size_t		hdrlen,
				rest;
	bl_error	err;
	bytea	   *b;

	memset(&err, 0, sizeof(err));
	if (bl_geometry_ewkb_parts(v->v.raw.ptr, v->v.raw.len, hdr, &hdrlen, &rest, &err) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("cannot apply a GEOMETRY value to column \"%s\": %s", cc->name, err.message)));
	b = palloc(VARHDRSZ + hdrlen + (v->v.raw.len - rest));
	SET_VARSIZE(b, VARHDRSZ + hdrlen + (v->v.raw.len - rest));
	memcpy(VARDATA(b), hdr, hdrlen);
	memcpy(VARDATA(b) + hdrlen, v->v.raw.ptr + rest, v->v.raw.len - rest);
	return b;
}

/*
 * numeric_in's value of DECIMAL text s ("-123.45") for numeric typmod
 * typmod, when s has the typmod's scale, no more integer digits than it
 * allows and at most 15 digits: int64_div_fast_to_numeric of its digits,
 * which makes the same numeric (the same value and display scale, which
 * define it).  NULL otherwise (numeric_in decides, or raises its error).
 */
static Numeric
decimal_in_typmod(const char *s, int32 typmod)
{
	int			precision = ((typmod - VARHDRSZ) >> 16) & 0xffff;
	int			scale = (typmod - VARHDRSZ) & 0xffff;
	bool		neg = false;
	int64		v = 0;
	int			nint = 0,		/* integer digits, without leading zeros */
				nfrac = 0,
				ndigits = 0;

	if (scale > precision)
		return NULL;			/* (or a negative scale, which reads as a large one here) */
	if (*s == '-')
	{
		neg = true;
		s++;
	}
	for (; *s >= '0' && *s <= '9'; s++)
	{
		if (nint > 0 || *s != '0')
			nint++;
		if (++ndigits > 15)
			return NULL;
		v = v * 10 + (*s - '0');
	}
	if (*s == '.')
	{
		for (s++; *s >= '0' && *s <= '9'; s++)
		{
			nfrac++;
			if (++ndigits > 15)
				return NULL;
			v = v * 10 + (*s - '0');
		}
	}
	if (*s != '\0' || ndigits == 0 || nfrac != scale || nint > precision - scale)
		return NULL;
	return int64_div_fast_to_numeric(neg ? -v : v, scale);
}

static Datum
generic(const blpg_col_conv *cc, const bl_column *col, const bl_value *v,
		const bl_value *before, const blpg_apply_options *opts, bool *isnull)
{
	char	   *text = value_text(cc, col, v, before, opts, isnull);

	if (*isnull)
		return (Datum) 0;
	return InputFunctionCall((FmgrInfo *) &cc->input, text, cc->ioparam, cc->typmod);
}

Datum
blpg_convert(const blpg_col_conv *cc, const bl_column *col, const bl_value *v,
			 const bl_value *before, const blpg_apply_options *opts, bool *isnull)
{
	*isnull = false;
	if (v->kind == BL_VAL_NULL || v->kind == BL_VAL_ABSENT)
	{
		*isnull = true;
		return (Datum) 0;
	}
	switch (cc->kind)
	{
		case BLPG_CONV_INT2:
		case BLPG_CONV_INT4:
		case BLPG_CONV_INT8:
			if (v->kind == BL_VAL_INT || v->kind == BL_VAL_YEAR ||
				(v->kind == BL_VAL_UINT && v->v.u <= (uint64) PG_INT64_MAX) ||
				(v->kind == BL_VAL_BIT && v->v.u <= (uint64) PG_INT64_MAX))
			{
				int64		i = v->kind == BL_VAL_INT || v->kind == BL_VAL_YEAR ? v->v.i : (int64) v->v.u;

				if (cc->kind == BLPG_CONV_INT2)
				{
					if (i < PG_INT16_MIN || i > PG_INT16_MAX)
						out_of_range(cc);
					return Int16GetDatum((int16) i);
				}
				if (cc->kind == BLPG_CONV_INT4)
				{
					if (i < PG_INT32_MIN || i > PG_INT32_MAX)
						out_of_range(cc);
					return Int32GetDatum((int32) i);
				}
				return Int64GetDatum(i);
			}
			if (v->kind == BL_VAL_UINT || v->kind == BL_VAL_BIT)
				out_of_range(cc);
			break;
		case BLPG_CONV_NUMERIC:
			if (cc->typmod >= 0)
			{
				/*
				 * numeric(p,s): the digits through numeric_in with the
				 * typmod, as the input function would take them (the
				 * scale it rounds to is the typmod's whatever the text's)
				 */
				if (v->kind == BL_VAL_DECIMAL &&
					bl_decimal_to_text(v->v.raw.ptr, v->v.raw.len, col->precision, col->scale,
									   (bl_buf_reset(&scratch), &scratch)) == 0)
				{
					Numeric		n = decimal_in_typmod(scratch.data, cc->typmod);

					if (n != NULL)
						return NumericGetDatum(n);
					return DirectFunctionCall3(numeric_in, CStringGetDatum(scratch.data),
											   ObjectIdGetDatum(InvalidOid),
											   Int32GetDatum(cc->typmod));
				}
				break;
			}
			if (v->kind == BL_VAL_INT || v->kind == BL_VAL_YEAR)
				return NumericGetDatum(int64_to_numeric(v->v.i));
			if (v->kind == BL_VAL_UINT && v->v.u <= (uint64) PG_INT64_MAX)
				return NumericGetDatum(int64_to_numeric((int64) v->v.u));
			if (v->kind == BL_VAL_DECIMAL)
			{
				bl_buf_reset(&scratch);
				if (bl_decimal_to_text(v->v.raw.ptr, v->v.raw.len, col->precision, col->scale,
									   &scratch) != 0)
					conversion_error(cc, "a malformed DECIMAL");
				return DirectFunctionCall3(numeric_in, CStringGetDatum(scratch.data),
										   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
			}
			break;
		case BLPG_CONV_FLOAT4:
			if (v->kind == BL_VAL_FLOAT)
				return Float4GetDatum(v->v.f);
			if (v->kind == BL_VAL_INT)
				return Float4GetDatum((float4) v->v.i);
			break;
		case BLPG_CONV_FLOAT8:
			if (v->kind == BL_VAL_DOUBLE)
				return Float8GetDatum(v->v.d);
			if (v->kind == BL_VAL_FLOAT)
				return Float8GetDatum((float8) v->v.f);
			if (v->kind == BL_VAL_INT)
				return Float8GetDatum((float8) v->v.i);
			break;
		case BLPG_CONV_BOOL:
			if (v->kind == BL_VAL_INT || v->kind == BL_VAL_UINT || v->kind == BL_VAL_BIT)
				return BoolGetDatum(v->v.u != 0);
			break;
		case BLPG_CONV_TEXT:
			if (v->kind == BL_VAL_STRING)
			{
				int			len;
				const char *s = string_bytes(cc, col, v, &len, false);

				return PointerGetDatum(cstring_to_text_with_len(s, len));
			}
			if (v->kind == BL_VAL_BINARY)
				conversion_error(cc, "binary data");
			break;
		case BLPG_CONV_VARCHAR:
			if (v->kind == BL_VAL_STRING)
			{
				int			len;
				const char *s = string_bytes(cc, col, v, &len, false);

				/*
				 * No more bytes than varchar(n) holds characters: what
				 * varchar_in makes of it, without its length check
				 */
				if (len <= cc->typmod - VARHDRSZ)
					return PointerGetDatum(cstring_to_text_with_len(s, len));
			}
			break;
		case BLPG_CONV_BYTEA:
			if (v->kind == BL_VAL_GEOMETRY)
			{
				bytea	   *b = geometry_ewkb(cc, v);

				return PointerGetDatum(b);
			}
			if (v->kind == BL_VAL_BINARY || v->kind == BL_VAL_STRING ||
				v->kind == BL_VAL_VECTOR)
			{
				size_t		len = v->v.raw.len;
				bytea	   *b;

				/*
				 * BINARY(n) (and MariaDB's INET6, UUID): the binlog drops
				 * trailing zero bytes that the column holds.
				 */
				if (v->kind == BL_VAL_BINARY && col->type == BL_T_STRING && col->max_length > len)
					len = col->max_length;
				b = palloc0(VARHDRSZ + len);
				SET_VARSIZE(b, VARHDRSZ + len);
				memcpy(VARDATA(b), v->v.raw.ptr, v->v.raw.len);
				return PointerGetDatum(b);
			}
			break;
		case BLPG_CONV_DATE:
			if (v->kind == BL_VAL_DATE || v->kind == BL_VAL_DATETIME)
			{
				const bl_temporal *t = &v->v.tm;

				if (is_zero_date(t))
				{
					DateADT		d;

					if (zero_date_is_null(cc, opts))
					{
						*isnull = true;
						return (Datum) 0;
					}
					DATE_NOBEGIN(d);
					return DateADTGetDatum(d);
				}
				check_date(cc, t);
				return DateADTGetDatum(date2j((int) t->year, t->month, t->day) - POSTGRES_EPOCH_JDATE);
			}
			break;
		case BLPG_CONV_TIMESTAMP:
		case BLPG_CONV_TIMESTAMPTZ:
			if (v->kind == BL_VAL_DATETIME || v->kind == BL_VAL_DATE)
			{
				Timestamp	ts;

				if (is_zero_date(&v->v.tm))
				{
					if (zero_date_is_null(cc, opts))
					{
						*isnull = true;
						return (Datum) 0;
					}
					TIMESTAMP_NOBEGIN(ts);
					return TimestampGetDatum(ts);
				}
				ts = temporal_to_timestamp(cc, &v->v.tm);
				AdjustTimestampForTypmod(&ts, cc->typmod);
				return TimestampGetDatum(ts);
			}
			if (v->kind == BL_VAL_TIMESTAMP)
			{
				TimestampTz ts;

				if (v->v.ts.sec == 0 && v->v.ts.usec == 0)
				{
					if (zero_date_is_null(cc, opts))
					{
						*isnull = true;
						return (Datum) 0;
					}
					TIMESTAMP_NOBEGIN(ts);
					return TimestampTzGetDatum(ts);
				}
				ts = unix_to_timestamptz(v->v.ts.sec, v->v.ts.usec);
				AdjustTimestampForTypmod(&ts, cc->typmod);
				return TimestampTzGetDatum(ts);
			}
			break;
		case BLPG_CONV_TIME:
			if (v->kind == BL_VAL_TIME)
			{
				const bl_temporal *t = &v->v.tm;
				TimeADT		us = (((int64) t->hour * 60 + t->minute) * 60 + t->second) * USECS_PER_SEC + t->usec;

				if (t->neg || us > USECS_PER_DAY)
					ereport(ERROR,
							(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
							 errmsg("TIME value %s%u:%02u:%02u is outside the range of column \"%s\" of type time",
									t->neg ? "-" : "", t->hour, t->minute, t->second, cc->name),
							 errhint("Map MySQL TIME to interval (the source's time_type option) to keep negative and over-24-hour values.")));
				AdjustTimeForTypmod(&us, cc->typmod);
				return TimeADTGetDatum(us);
			}
			break;
		case BLPG_CONV_INTERVAL:
			if (v->kind == BL_VAL_TIME)
			{
				const bl_temporal *t = &v->v.tm;
				Interval   *iv = palloc0(sizeof(Interval));

				iv->time = (((int64) t->hour * 60 + t->minute) * 60 + t->second) * USECS_PER_SEC + t->usec;
				if (t->neg)
					iv->time = -iv->time;
				if (cc->typmod >= 0)
					return DirectFunctionCall2(interval_scale, IntervalPGetDatum(iv),
											   Int32GetDatum(cc->typmod));
				return IntervalPGetDatum(iv);
			}
			break;
		case BLPG_CONV_JSONB:
			if (v->kind == BL_VAL_JSON || v->kind == BL_VAL_JSON_DIFF || v->kind == BL_VAL_STRING)
			{
				const char *text;
				int			len;

				if (v->kind == BL_VAL_STRING)
					text = string_bytes(cc, col, v, &len, false);
				else
				{
					text = json_text(cc, v, before);
					len = (int) strlen(text);
				}
				return blpg_jsonb_from_text(text, len);
			}
			break;
		case BLPG_CONV_TEXT_ARRAY:
			if (v->kind == BL_VAL_SET)
			{
				Datum		elems[64];
				int			n = 0;

				for (int i = 0; i < 64; i++)
					if ((v->v.u >> i) & 1)
						elems[n++] = CStringGetTextDatum(member_text(col, i));
				return PointerGetDatum(construct_array(elems, n, TEXTOID, -1, false, TYPALIGN_INT));
			}
			break;
		case BLPG_CONV_GEOMETRY:
			if (v->kind == BL_VAL_GEOMETRY)
			{
				bytea	   *b = geometry_ewkb(cc, v);
				size_t		n = VARSIZE(b) - VARHDRSZ;
				char	   *hex = palloc(2 * n + 1);

				hex_encode(VARDATA(b), n, hex);
				hex[2 * n] = '\0';
				return InputFunctionCall((FmgrInfo *) &cc->input, hex, cc->ioparam, cc->typmod);
			}
			break;
		case BLPG_CONV_GENERIC:
			break;
	}
	return generic(cc, col, v, before, opts, isnull);
}
