/*
 * bl_compress.c
 *	  Decompression of compressed events: MySQL 8.0.20+ TRANSACTION_PAYLOAD
 *	  (zstd, through libzstd) and MariaDB's compressed QUERY and rows events
 *	  (zlib, through libz).  Event checksums are in bl_crc32.c.
 *
 * MariaDB's compressed block: one header byte (high bit set, bits 4-6 the
 * algorithm, 0 = zlib, bits 0-2 the size of the length field), the
 * uncompressed length big-endian in 1-4 bytes, then a zlib stream.
 */
#include "bl_decoder_int.h"

#include <zlib.h>
#include <zstd.h>

/* Output reserved up front per compressed input byte, at most. */
#define BL_RESERVE_RATIO		64

/* deflate's maximum compression ratio (zlib's documentation: 1032:1). */
#define BL_DEFLATE_MAX_RATIO	1032

int
bl_zstd_decompress(bl_decoder *dec, const uint8_t *src, size_t len,
				   uint64_t expect_size, bl_buf *out, bl_error *err)
{
	ZSTD_DCtx  *dctx = (ZSTD_DCtx *) dec->zstd;
	ZSTD_inBuffer in = {src, len, 0};
	unsigned long long frame_size;

	if (dctx == NULL)
	{
		dctx = ZSTD_createDCtx();
		if (dctx == NULL)
			return bl_error_set(err, BL_ERR_NOMEM, "cannot create a zstd context");
		dec->zstd = dctx;
	}
	else
		ZSTD_DCtx_reset(dctx, ZSTD_reset_session_only);

	frame_size = ZSTD_getFrameContentSize(src, len);
	if (frame_size == ZSTD_CONTENTSIZE_ERROR)
		return bl_error_set(err, BL_ERR_CORRUPT, "payload is not a zstd frame");
	if (frame_size != ZSTD_CONTENTSIZE_UNKNOWN && frame_size > BL_MAX_DECOMPRESSED)
		return bl_error_set(err, BL_ERR_CORRUPT,
							"zstd frame declares %llu bytes, more than the 1 GiB limit",
							frame_size);
	if (expect_size > BL_MAX_DECOMPRESSED)
		return bl_error_set(err, BL_ERR_CORRUPT,
							"payload declares %llu uncompressed bytes, more than the 1 GiB limit",
							(unsigned long long) expect_size);
	/*
	 * The declared size is a hint, not a promise: reserve it only as far
	 * as a plausible compression ratio goes (a few bytes must not make us
	 * allocate a gigabyte), and let the buffer grow with the real output.
	 */
	{
		uint64_t	hint = expect_size ? expect_size : (uint64_t) len * 4;
		uint64_t	cap = (uint64_t) len * BL_RESERVE_RATIO + 65536;

		if (!bl_buf_reserve(out, (size_t) (hint < cap ? hint : cap)))
			return bl_error_set(err, BL_ERR_NOMEM, "out of memory");
	}

	for (;;)
	{
		ZSTD_outBuffer ob;
		size_t		rc;

		if (out->cap - out->len < 2 && !bl_buf_reserve(out, out->cap))
			return bl_error_set(err, BL_ERR_NOMEM, "out of memory");
		ob.dst = out->data + out->len;
		ob.size = out->cap - out->len - 1;
		/* never more than one byte past the limit, whatever cap is */
		if (ob.size > BL_MAX_DECOMPRESSED + 1 - out->len)
			ob.size = (size_t) (BL_MAX_DECOMPRESSED + 1 - out->len);
		ob.pos = 0;
		rc = ZSTD_decompressStream(dctx, &ob, &in);
		out->len += ob.pos;
		out->data[out->len] = '\0';
		if (ZSTD_isError(rc))
			return bl_error_set(err, BL_ERR_CORRUPT, "zstd: %s", ZSTD_getErrorName(rc));
		if (out->len > BL_MAX_DECOMPRESSED)
			return bl_error_set(err, BL_ERR_CORRUPT,
								"payload decompresses to more than 1 GiB");
		if (rc == 0)
			break;				/* frame complete */
		if (in.pos == in.size && ob.pos < ob.size)
			return bl_error_set(err, BL_ERR_TRUNCATED, "zstd frame is truncated");
	}
	if (in.pos != in.size)
		return bl_error_set(err, BL_ERR_CORRUPT,
							"%zu bytes follow the zstd frame", in.size - in.pos);
	if (expect_size && out->len != expect_size)
		return bl_error_set(err, BL_ERR_CORRUPT,
							"payload decompressed to %zu bytes, %llu were declared",
							out->len, (unsigned long long) expect_size);
	return 0;
}

void
bl_zstd_free(bl_decoder *dec)
{
	if (dec->zstd)
		ZSTD_freeDCtx((ZSTD_DCtx *) dec->zstd);
	dec->zstd = NULL;
}

int
bl_maria_uncompress(const uint8_t *src, size_t len, bl_buf *out, bl_error *err)
{
	int			lenlen;
	uint64_t	ulen;
	uLongf		dlen;
	int			rc;

	bl_buf_reset(out);
	if (len < 2 || (src[0] & 0xe0) != 0x80)
		return bl_error_set(err, BL_ERR_CORRUPT, "bad compressed-block header");
	lenlen = src[0] & 0x07;
	if (lenlen < 1 || lenlen > 4 || (size_t) lenlen + 1 > len)
		return bl_error_set(err, BL_ERR_CORRUPT, "bad compressed-block length field");
	ulen = bl_load_be(src + 1, lenlen);
	if (ulen == 0 || ulen > BL_MAX_DECOMPRESSED ||
		ulen / BL_DEFLATE_MAX_RATIO > len - 1 - (size_t) lenlen)
		return bl_error_set(err, BL_ERR_CORRUPT,
							"compressed block of %zu bytes declares %llu bytes",
							len - 1 - (size_t) lenlen, (unsigned long long) ulen);
	if (!bl_buf_reserve(out, (size_t) ulen))
		return bl_error_set(err, BL_ERR_NOMEM, "out of memory");
	dlen = (uLongf) ulen;
	rc = uncompress((Bytef *) out->data, &dlen, src + 1 + lenlen,
					(uLong) (len - 1 - (size_t) lenlen));
	if (rc != Z_OK || dlen != ulen)
		return bl_error_set(err, BL_ERR_CORRUPT,
							"zlib could not decompress the block (%d)", rc);
	out->len = (size_t) dlen;
	out->data[out->len] = '\0';
	return 0;
}

/*
 * MariaDB COMPRESSED columns.  A non-empty value starts with a header
 * byte: 0 means the bytes that follow are the value, stored as they are
 * (compressing did not pay); 0x80 | wrap | n means an n-byte (1..4)
 * big-endian original length follows, then a deflate stream, with the
 * zlib wrapper unless bit 3 (0x08) is set (raw deflate).  Empty values
 * have no header.
 */
int
bl_maria_column_size(const uint8_t *src, size_t len, uint64_t *size)
{
	int			lenlen;

	if (len == 0)
	{
		*size = 0;
		return 0;
	}
	if (src[0] == 0)
	{
		*size = len - 1;
		return 0;
	}
	if ((src[0] & 0xf0) != 0x80)
		return -1;
	lenlen = src[0] & 0x07;
	if (lenlen < 1 || lenlen > 4 || (size_t) lenlen + 1 > len)
		return -1;
	*size = bl_load_be(src + 1, lenlen);
	/* deflate cannot expand more than about 1032:1 */
	if (*size / BL_DEFLATE_MAX_RATIO > len - 1 - (size_t) lenlen)
		return -1;
	return 0;
}

/* Inflate a value into dst, exactly size bytes (bl_maria_column_size). */
int
bl_maria_column_inflate(const uint8_t *src, size_t len, uint8_t *dst, uint64_t size)
{
	z_stream	zs;
	int			lenlen;
	int			rc;

	if (len == 0)
		return size == 0 ? 0 : -1;
	if (src[0] == 0)
	{
		if (size != len - 1)
			return -1;
		if (size)
			memcpy(dst, src + 1, (size_t) size);
		return 0;
	}
	lenlen = src[0] & 0x07;
	if (size == 0)
		return 0;
	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, (src[0] & 0x08) ? -MAX_WBITS : MAX_WBITS) != Z_OK)
		return -1;
	zs.next_in = (Bytef *) (src + 1 + lenlen);
	zs.avail_in = (uInt) (len - 1 - (size_t) lenlen);
	zs.next_out = dst;
	zs.avail_out = (uInt) size;
	rc = inflate(&zs, Z_FINISH);
	inflateEnd(&zs);
	return rc == Z_STREAM_END && zs.total_out == size ? 0 : -1;
}
