/*
 * bl_decoder_int.h
 *	  Private state of the decoder, shared by the files of src/decoder that
 *	  implement it (event dispatch, GTIDs, table maps, rows, compression).
 */
#ifndef BL_DECODER_INT_H
#define BL_DECODER_INT_H

#include "bl_decoder.h"

typedef struct bl_table_slot
{
	uint64_t	table_id;
	bl_table   *table;			/* NULL = empty slot */
} bl_table_slot;

struct bl_decoder
{
	bl_decoder_options opts;
	char		file[BL_FILE_NAME_MAX];
	size_t		file_too_long;	/* length of a name that did not fit, or 0 */

	/* FORMAT_DESCRIPTION in force */
	bool		have_fde;
	uint16_t	binlog_version;
	char		server_version[51];
	bool		is_mariadb;
	uint8_t		post_header_len[256];
	uint8_t		checksum_alg;	/* of the current FDE, or expected */

	/* table id -> table map */
	bl_table_slot *slots;
	uint32_t	nslots;			/* power of two */
	uint32_t	ntables;
	uint32_t	table_versions;
	bool		in_statement;	/* TABLE_MAP seen, STMT_END_F not yet */

	/* GTID of the current transaction */
	bl_gtid_info gtid;

	/* reusable buffers */
	bl_buf		unzip;			/* MariaDB compressed events */
	bl_buf		column_unzip[2];	/* inflated COMPRESSED column values of
									 * the before [0] and after [1] image */
	bl_buf		payload;		/* TRANSACTION_PAYLOAD, decompressed */
	size_t		payload_off;
	uint64_t	payload_pos;	/* position of the payload event */
	bl_buf		scratch;		/* GTID set text and similar */
	bl_value   *before_vals;
	bl_value   *after_vals;
	uint32_t	vals_cap;
	void	   *zstd;			/* ZSTD_DCtx, created on first use */
};

/* bl_decoder.c */
extern int	bl_decoder_fail(bl_decoder *dec, bl_error *err, uint64_t pos,
							bl_errcode code, const char *fmt,...) BL_PRINTF(5, 6);

/* bl_gtid.c */
extern int	bl_decode_gtid_event(bl_decoder *dec, bl_event *ev, bl_error *err);
extern int	bl_decode_gtid_set_event(bl_decoder *dec, bl_event *ev, bl_error *err);
extern int	bl_decode_heartbeat_v2(bl_decoder *dec, bl_event *ev, bl_error *err);

/* bl_tablemap.c */
extern int	bl_decode_table_map(bl_decoder *dec, bl_event *ev, bl_error *err);
extern void bl_table_cache_clear(bl_decoder *dec);
extern void bl_table_cache_free(bl_decoder *dec);

/* bl_rows.c */
extern int	bl_decode_rows_event(bl_decoder *dec, bl_event *ev, bl_error *err);

/*
 * bl_column_value.c: decode one row image at c into values[0..t->ncols):
 * the NULL bitmap (one bit per present column; present has t->ncols bits,
 * npresent of them set) and the present non-NULL values; partial_bits is
 * non-NULL for the after image of a PARTIAL_UPDATE_ROWS event.  Returns 0,
 * or -1 with *bad the index of the column whose value is malformed or
 * truncated (UINT32_MAX: the NULL bitmap is truncated).
 */
extern int	bl_image_decode(const bl_table *t, const uint8_t *present,
							uint32_t npresent, bl_cur *c, bl_value *values,
							const uint8_t *partial_bits, uint32_t *bad);

/*
 * The same walk without decoding into values: each column's bytes in the
 * image (ptr NULL for NULL and absent columns, kind BL_VAL_NULL /
 * BL_VAL_ABSENT for those).  For bl_rows_edit().
 */
typedef struct bl_span
{
	const uint8_t *ptr;
	size_t		len;
	uint8_t		kind;
} bl_span;

extern int	bl_image_spans(const bl_table *t, const uint8_t *present,
						   uint32_t npresent, bl_cur *c, const uint8_t *partial_bits,
						   bl_span *spans, uint32_t *bad);

/* bl_compress.c */

/* Upper bound for one decompressed event or payload, and for the inflated
 * COMPRESSED column values of one row image (MySQL's own limit of an event
 * is 1 GiB, max_allowed_packet). */
#define BL_MAX_DECOMPRESSED		((uint64_t) 1 << 30)

extern int	bl_zstd_decompress(bl_decoder *dec, const uint8_t *src, size_t len,
							   uint64_t expect_size, bl_buf *out, bl_error *err);
extern int	bl_maria_uncompress(const uint8_t *src, size_t len, bl_buf *out,
								bl_error *err);
extern void bl_zstd_free(bl_decoder *dec);
extern int	bl_maria_column_size(const uint8_t *src, size_t len, uint64_t *size);
extern int	bl_maria_column_inflate(const uint8_t *src, size_t len, uint8_t *dst,
									uint64_t size);

#endif							/* BL_DECODER_INT_H */
