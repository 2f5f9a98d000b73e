/*
 * bl_geometry.c
 *	  GEOMETRY values from MySQL's internal form to EWKB (bl_geometry.h).
 */
#include "bl_geometry.h"

#include "bl_cursor.h"

uint32_t
bl_geometry_srid(const uint8_t *mysql, size_t len)
{
	return len >= 4 ? (uint32_t) bl_load_le(mysql, 4) : 0;
}

int
bl_geometry_ewkb_parts(const uint8_t *mysql, size_t len,
					   uint8_t hdr[BL_EWKB_HEADER_MAX], size_t *hdrlen,
					   size_t *rest_off, bl_error *err)
{
	bl_cur		c = bl_cur_make(mysql, len);
	uint32_t	srid = (uint32_t) bl_cur_uint(&c, 4);
	uint8_t		order = bl_cur_u8(&c);
	const uint8_t *tp = bl_cur_take(&c, 4);
	uint32_t	type;
	bool		big;

	*hdrlen = 0;
	*rest_off = 0;
	if (c.overrun || tp == NULL)
		return bl_error_set(err, BL_ERR_CORRUPT,
							"malformed GEOMETRY value: %zu bytes, less than SRID, byte order and type",
							len);
	if (order > 1)
		return bl_error_set(err, BL_ERR_CORRUPT,
							"malformed GEOMETRY value: WKB byte order %u is neither 0 nor 1",
							(unsigned) order);
	big = order == 0;
	type = (uint32_t) (big ? bl_load_be(tp, 4) : bl_load_le(tp, 4));
	if (type & 0xE0000000u)
		return bl_error_set(err, BL_ERR_CORRUPT,
							"malformed GEOMETRY value: WKB type 0x%08x carries EWKB flags",
							(unsigned) type);
	hdr[0] = order;
	if (srid != 0)
		type |= BL_EWKB_SRID_FLAG;
	for (int i = 0; i < 4; i++)
	{
		int			shift = big ? 24 - 8 * i : 8 * i;

		hdr[1 + i] = (uint8_t) (type >> shift);
		hdr[5 + i] = (uint8_t) (srid >> shift);
	}
	*hdrlen = srid != 0 ? 9 : 5;
	*rest_off = 9;
	return 0;
}

int
bl_geometry_to_ewkb(const uint8_t *mysql, size_t len, bl_buf *out, bl_error *err)
{
	uint8_t		hdr[BL_EWKB_HEADER_MAX];
	size_t		hdrlen,
				rest;

	if (bl_geometry_ewkb_parts(mysql, len, hdr, &hdrlen, &rest, err) != 0)
		return -1;
	bl_buf_append(out, hdr, hdrlen);
	bl_buf_append(out, mysql + rest, len - rest);
	return 0;
}
