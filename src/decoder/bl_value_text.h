/*
 * bl_value_text.h
 *	  Decoded column values and row images as JSON text.
 *
 * Conventions (documented in README, "Value formats"):
 *   integers, FLOAT, DOUBLE, DECIMAL   JSON numbers (DECIMAL with its exact
 *                                      digits; FLOAT/DOUBLE shortest
 *                                      round-trip form)
 *   CHAR/VARCHAR/TEXT, ENUM            JSON strings, converted to UTF-8
 *   BINARY/VARBINARY/BLOB              "\\x<hex>" (PostgreSQL bytea text form)
 *   GEOMETRY                           "\\x<hex of EWKB>" (bl_geometry.h:
 *                                      the SRID inside, ST_GeomFromEWKB reads it)
 *   SET                                array of member strings
 *   BIT(n)                             string of n '0'/'1' digits
 *   YEAR                               number
 *   DATE / DATETIME / TIME             "2024-05-06", "2024-05-06T07:08:09.123",
 *                                      "-838:59:59.000000" (column's digits)
 *   TIMESTAMP                          "2024-05-06T07:08:09.123+00:00" (UTC)
 *   JSON                               nested JSON
 *   VECTOR                             array of numbers
 *   zero dates                         "0000-00-00", "0000-00-00T00:00:00"
 */
#ifndef BL_VALUE_TEXT_H
#define BL_VALUE_TEXT_H

#include "bl_decoder.h"

/* Append one value as JSON. before (may be NULL) is the same column's
 * value in the before image, used to expand a partial JSON update. */
extern int	bl_value_to_json(const bl_column *col, const bl_value *v,
							 const bl_value *before, bl_buf *out, bl_error *err);

/*
 * Append a row image as a JSON object {"name": value, ...} in column order;
 * columns absent from the image are left out.  Unknown names are written
 * "@1", "@2", ... like mysqlbinlog.  before may be NULL.
 */
extern int	bl_row_to_json(const bl_table *t, const bl_row *row,
						   const bl_row *before, bl_buf *out, bl_error *err);

/* The column's name as a JSON object key (without the colon). */
extern void bl_column_key_json(const bl_table *t, uint32_t i, bl_buf *out);

/* Fast unsigned/signed integer to decimal text. */
extern void bl_buf_put_u64(bl_buf *b, uint64_t v);
extern void bl_buf_put_i64(bl_buf *b, int64_t v);

/* Append data as "\\x<hex>" (inside a JSON string, without quotes). */
extern void bl_buf_put_hex_json(bl_buf *b, const uint8_t *data, size_t len);

/* Append a SQL-level temporal text without JSON quotes (shared with the
 * PostgreSQL glue): DATE "YYYY-MM-DD", DATETIME "YYYY-MM-DD HH:MM:SS.f"
 * (sep is ' ' or 'T'), TIME "[-]HH:MM:SS.f".  fsp: fractional digits. */
extern void bl_temporal_to_text(bl_value_kind kind, const bl_temporal *t,
								int fsp, char sep, bl_buf *out);

/* TIMESTAMP seconds since the epoch (UTC) as a broken-down time. */
extern void bl_timestamp_to_temporal(int64_t sec, uint32_t usec, bl_temporal *t);

#endif							/* BL_VALUE_TEXT_H */
