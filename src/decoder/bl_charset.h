/*
 * bl_charset.h
 *	  Character sets of MySQL and MariaDB: collation id and name lookup, and
 *	  conversion of column text to UTF-8 and to the body of a JSON string.
 *
 * A binlog carries text columns in the column's own character set; the
 * TABLE_MAP optional metadata (DEFAULT_CHARSET / COLUMN_CHARSET) and QUERY
 * events name it by collation id.  This module maps those ids (MySQL 5.x
 * to 9.x, MariaDB 10.x and 11.x, including MariaDB's computed UCA 14.0 ids
 * from 2048 up) to a charset, and converts bytes of that charset to UTF-8.
 *
 * Conversions never fail on bad input: bytes that are not a valid
 * character of the charset come out as U+FFFD, and nothing is read past
 * in[len - 1].  The output is always valid UTF-8.
 *
 * utf8mb3, utf8mb4, ascii, binary, latin1 and the UTF-16/UTF-32/UCS-2
 * family are converted by code in this module.  The other single-byte
 * charsets get a 256-entry table built once from glibc iconv (with a few
 * corrections where MySQL's mapping differs from glibc's); the other
 * multi-byte charsets (gbk, gb2312, gb18030, big5, sjis, cp932, ujis,
 * eucjpms, euckr) are converted through glibc iconv.  If glibc lacks an
 * encoding, non-ASCII bytes of that charset come out as U+FFFD.
 *
 * Thread safety: the iconv descriptors, the single-byte tables and a
 * scratch buffer are cached in static storage without locking.  The
 * decoder is used by one thread per process (each PostgreSQL backend is a
 * process), so this is safe there; a multi-threaded user must serialise
 * calls into this module.
 */
#ifndef BL_CHARSET_H
#define BL_CHARSET_H

#include "bl_common.h"

/*
 * Opaque; the instances are static.  Other headers that need only the type
 * should include this file rather than repeat the typedef (a repeated
 * typedef is C11, and clang rejects it under -std=gnu99 -Werror).
 */
#ifndef BL_CHARSET_TYPEDEF
#define BL_CHARSET_TYPEDEF
typedef struct bl_charset bl_charset;
#endif

/*
 * Charset of a MySQL or MariaDB collation id, as found in TABLE_MAP
 * optional metadata and in QUERY events.  NULL if the id is unknown.
 */
extern const bl_charset *bl_charset_by_collation(uint32_t collation_id);

/*
 * Charset by name as information_schema.COLUMNS.CHARACTER_SET_NAME gives it
 * ("latin1", "utf8mb4", "utf8", "utf8mb3", "binary", ...), case-insensitive.
 * "utf8" means utf8mb3.  NULL if unknown.
 */
extern const bl_charset *bl_charset_by_name(const char *name);

/* Canonical MySQL name ("utf8mb3" for utf8). */
extern const char *bl_charset_name(const bl_charset *cs);

/* True for the pseudo-charset 'binary' (collation 63). */
extern bool bl_charset_is_binary(const bl_charset *cs);

/* Longest character of the charset, in bytes (1 to 4). */
extern int	bl_charset_max_bytes(const bl_charset *cs);

/*
 * Append the UTF-8 form of in[0..len) to out.  Invalid sequences become
 * U+FFFD.  'binary' is treated as ASCII, every byte >= 0x80 giving U+FFFD
 * (callers print binary values as hex instead).  NUL bytes are kept.
 * Returns 0, or -1 with err filled if cs is NULL or memory ran out.
 */
extern int	bl_charset_to_utf8(const bl_charset *cs, const uint8_t *in, size_t len,
							   bl_buf *out, bl_error *err);

/*
 * Append in[0..len), which should be UTF-8, as the body of a JSON string
 * (no surrounding quotes).  '"' and '\' are escaped, control characters
 * below 0x20 become \b \t \n \f \r or \u00XX, and U+2028 / U+2029 become
 * \u2028 / \u2029 (so that the text is also safe inside JavaScript).
 * Invalid UTF-8 becomes U+FFFD.  Allocation failure is reported through
 * bl_buf_failed(out).
 */
/*
 * When set, U+0000 in JSON strings is written as U+FFFD instead of \u0000:
 * PostgreSQL's jsonb rejects \u0000, so the extension sets this once at
 * load time.  binlogcat leaves it off (\u0000 is valid JSON).
 */
extern bool bl_json_nul_as_replacement;

extern void bl_json_escape_utf8(const uint8_t *in, size_t len, bl_buf *out);

/*
 * The body of a JSON string token from p (after its opening '"') to its
 * closing '"' (before end), unescaped into d (room for end - p bytes), its
 * length into *dlen; returns the closing '"', or NULL for a \u escape, an
 * invalid escape, a control character or no closing '"' (for a full JSON
 * parser to read).  The extension's jsonb text parser and its jsonb images.
 */
extern const char *bl_json_string_unescape(const char *p, const char *end, char *d, int *dlen);

/*
 * bl_charset_to_utf8 followed by bl_json_escape_utf8, without an
 * intermediate copy for UTF-8, ASCII and single-byte charsets.
 * Returns 0, or -1 with err filled if cs is NULL or memory ran out.
 */
extern int	bl_charset_to_json_string(const bl_charset *cs, const uint8_t *in,
									  size_t len, bl_buf *out, bl_error *err);

/*
 * Release the cached iconv descriptors, tables and scratch memory.  Never
 * needed for correctness; useful before exit under leak checkers.  Later
 * calls rebuild what they need.
 */
extern void bl_charset_cleanup(void);

#endif							/* BL_CHARSET_H */
