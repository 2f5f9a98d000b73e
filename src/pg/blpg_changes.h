/*
 * blpg_changes.h
 *	  Changes read out of ring entries as SQL values: the columns that get()
 *	  returns and that a foreign table over a source can show.
 */
#ifndef BLPG_CHANGES_H
#define BLPG_CHANGES_H

#include "blpg_ring.h"

#include "lib/stringinfo.h"

typedef enum blpg_change_col
{
	BLPG_COL_SEQ,
	BLPG_COL_FILE,
	BLPG_COL_POS,
	BLPG_COL_NEXT_POS,
	BLPG_COL_GTID,
	BLPG_COL_XID,
	BLPG_COL_COMMIT_TIME,
	BLPG_COL_EVENT_TIME,
	BLPG_COL_SERVER_ID,
	BLPG_COL_SCHEMA,
	BLPG_COL_TABLE,
	BLPG_COL_OP,
	BLPG_COL_PK_COLUMNS,
	BLPG_COL_PRIMARY_KEY,
	BLPG_COL_BEFORE,
	BLPG_COL_AFTER,
	BLPG_COL_DDL,
	BLPG_NCOLS
} blpg_change_col;

/* Column names as a foreign table over a source uses them. */
extern const char *const blpg_change_col_names[BLPG_NCOLS];
extern int	blpg_change_col_by_name(const char *name);

/* Entry-level filter, checked before any row is decoded. */
typedef struct blpg_change_filter
{
	char	   *schema;			/* NULL = any */
	char	   *table;
	char	   *op;
	uint64		min_seq;		/* 0 = any */
} blpg_change_filter;

typedef struct blpg_change_iter blpg_change_iter;

/*
 * Iterate the changes first_seq..last_seq of the entries copied into buf
 * (blpg_ring_copy).  want[col] says which columns to compute (NULL: all).
 */
extern blpg_change_iter *blpg_change_iter_create(StringInfo entries,
												 uint64 first_seq, uint64 last_seq,
												 const bool *want,
												 const blpg_change_filter *filter);

/*
 * Images and primary keys as json text as the decoder writes it (type json,
 * get_json()) instead of jsonb values (the default).
 */
extern void blpg_change_iter_set_json_text(blpg_change_iter *it, bool json_text);

/* Next change into values/nulls (BLPG_NCOLS long); false at the end. */
extern bool blpg_change_iter_next(blpg_change_iter *it, Datum *values, bool *nulls);

/*
 * Next change as one line of JSON appended to out (an object with the keys
 * of the columns, nulls left out, and a newline); *boundary: the change ends
 * a transaction (a commit or a DDL statement).  false at the end.
 */
extern bool blpg_change_iter_next_jsonl(blpg_change_iter *it, bl_buf *out, bool *boundary);

extern void blpg_change_iter_free(blpg_change_iter *it);

/*
 * A row image of table t (a decoded table of dec) as a jsonb datum, the
 * same as jsonb_in of bl_row_to_json's text, built without that text;
 * before: the before image for partial JSON updates, or NULL.  The key
 * order of the tables of the canonical decoder is cached.
 */
extern Datum blpg_image_jsonb(bl_decoder *dec, const bl_table *t, const bl_row *row,
							  const bl_row *before);

/* The primary key of a row as jsonb ({"col": value, ...}, absent = null). */
extern Datum blpg_key_jsonb(bl_decoder *dec, const bl_table *t, const bl_row *row);

/* UTF-8 text as a text datum in the server encoding. */
extern Datum blpg_text_utf8(const char *s, size_t len);

/* This backend's decoder of canonical events (table maps stay cached). */
extern bl_decoder *blpg_canonical_decoder(void);

/* The op name of an entry (ROWS: insert/update/delete). */
extern const char *blpg_entry_op_name(const blpg_entry *e);

#endif							/* BLPG_CHANGES_H */
