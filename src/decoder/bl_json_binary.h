/*
 * bl_json_binary.h
 *	  MySQL binary JSON (the value of a JSON column in row events) to JSON
 *	  text, partial JSON update diffs to JSON text, and applying such diffs
 *	  to a before image.
 *
 * MySQL 5.7+ and 8.x store JSON columns in the "JSONB" binary format of
 * sql-common/json_binary.cc.  In a row image a JSON column is written as a
 * little-endian length of pack_length bytes (pack_length is the column's
 * one-byte table-map metadata, 4 in practice) followed by that many bytes
 * of binary JSON.  MariaDB's JSON is a LONGTEXT alias and is NOT handled
 * here.
 *
 * With binlog_row_value_options=PARTIAL_JSON the server writes
 * PARTIAL_UPDATE_ROWS_EVENT (type 39).  Its after image starts with a
 * packed-integer value_options; when bit 0 (PARTIAL_JSON_UPDATES) is set,
 * a bitmap of ceil(json_columns/8) bytes follows, one bit per JSON column
 * of the table (in column order), and only then the usual null bitmap and
 * values.  A JSON column whose bit is set holds a diff vector instead of a
 * document; it has the same framing as a full value: a 4-byte little-endian
 * length, then that many bytes of diffs (Json_diff_vector::write_binary in
 * sql/json_diff.cc).  Each diff is
 *
 *	  operation   1 byte: 0 = REPLACE, 1 = INSERT, 2 = REMOVE
 *	  path        packed length (net_field_length) + path text, e.g. $.a[1]
 *	  value       (not for REMOVE) packed length + binary JSON document
 *				  (type byte first; an empty value means JSON null)
 *
 * Input contract for all three functions: pass the bytes AFTER the
 * column's length prefix, and the length that prefix gave.  The functions
 * never read outside [data, data + len).
 *
 * Output conventions (appended to out; on error out is restored to its
 * previous length):
 *	- compact JSON: no spaces after ',' or ':' (MySQL prints ", " and ": ").
 *	- object members in stored order; MySQL stores them sorted by key length,
 *	  then bytewise, which is also the order MySQL prints.
 *	- strings: UTF-8, with '"', '\\', \b \f \n \r \t escaped and the other
 *	  characters below 0x20 as \u00xx (as MySQL's double_quote(); DEL is
 *	  not escaped); an invalid UTF-8 sequence becomes U+FFFD.  A NUL byte becomes \u0000, which
 *	  PostgreSQL's json accepts but jsonb rejects.
 *	- integers in decimal; doubles as MySQL's JSON printer (my_gcvt with
 *	  the shortest round-trip digits; "1.0" not "1"; "1e100", "1.5e-7",
 *	  no '+' in exponents; NaN/Inf cannot be stored and print as 0.0 like
 *	  MySQL would).
 *	- opaque DECIMAL as a JSON number with exactly its stored scale
 *	  ("9.00"); DATE as "YYYY-MM-DD"; TIME as "[-]HH:MM:SS.ffffff";
 *	  DATETIME and TIMESTAMP as "YYYY-MM-DD HH:MM:SS.ffffff" (MySQL prints
 *	  6 fractional digits inside JSON); opaque VAR_STRING as a plain string
 *	  (as MySQL 8); any other opaque type as "base64:typeNN:<base64>" with
 *	  MySQL's line break every 76 base64 characters (escaped as \n).
 *	- empty input (len 0) is the JSON null literal, as MySQL reads it.
 *
 * Malformed input returns -1 with BL_ERR_CORRUPT (or BL_ERR_TRUNCATED):
 * bad types, offsets outside their container, nesting deeper than 100
 * containers (MySQL's JSON_DOCUMENT_MAX_DEPTH), and values that share
 * bytes (MySQL never writes those; refusing them bounds the work and
 * output to the size of the input).
 */
#ifndef BL_JSON_BINARY_H
#define BL_JSON_BINARY_H

#include "bl_common.h"

/* MySQL's JSON_DOCUMENT_MAX_DEPTH: nesting of arrays and objects. */
#define BL_JSON_MAX_DEPTH 100

/*
 * Binary JSON document -> compact JSON text appended to out.
 * data/len: the column value after its length prefix.
 */
extern int	bl_json_binary_to_text(const uint8_t *data, size_t len,
								   bl_buf *out, bl_error *err);

/*
 * Diff vector of one partially updated JSON column -> JSON text array of
 * operations appended to out, e.g.
 *	 [{"op":"replace","path":"$.a","value":1},{"op":"remove","path":"$.b[0]"}]
 * op is "replace", "insert" or "remove"; path is the MySQL path text as
 * written by the server; value is absent for "remove".  An empty diff
 * vector gives [].
 * diff/len: the column value after its 4-byte length prefix.
 */
extern int	bl_json_diff_to_text(const uint8_t *diff, size_t len,
								 bl_buf *out, bl_error *err);

/*
 * Apply a diff vector to the before image (a full binary JSON document,
 * after its length prefix) the way a MySQL replica does
 * (apply_json_diffs() in sql/json_diff.cc), and append the resulting
 * document as compact JSON text.  Paths may use member names (quoted or
 * not, with JSON escapes), array indexes, [last] and [last-N].  A diff
 * that MySQL would reject (root path, missing path, INSERT of an existing
 * member, wildcards) fails with BL_ERR_CORRUPT.  Objects keep MySQL's key
 * order (a new member is inserted by key length, then bytewise).
 */
extern int	bl_json_apply_diff(const uint8_t *before, size_t before_len,
							   const uint8_t *diff, size_t diff_len,
							   bl_buf *out, bl_error *err);

#endif							/* BL_JSON_BINARY_H */
