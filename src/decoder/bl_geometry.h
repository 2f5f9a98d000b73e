/*
 * bl_geometry.h
 *	  GEOMETRY values: MySQL's internal form (a 4-byte little-endian SRID,
 *	  then standard WKB) to EWKB, the form PostGIS reads and writes
 *	  (ST_GeomFromEWKB, geometry's input and receive functions).
 *
 * EWKB is the WKB of the value with the SRID moved inside: the outermost
 * geometry's type word gets the SRID flag 0x20000000 and is followed by the
 * SRID, both in the WKB's own byte order; nested geometries (members of
 * collections) keep their plain WKB types.  SRID 0 (unknown) gives plain
 * WKB without the flag, as PostGIS writes it.
 */
#ifndef BL_GEOMETRY_H
#define BL_GEOMETRY_H

#include "bl_common.h"

#define BL_EWKB_SRID_FLAG	0x20000000u

/*
 * The EWKB of a MySQL geometry value in two parts, without copying: a
 * header of *hdrlen bytes (at most BL_EWKB_HEADER_MAX) written to hdr, then
 * the bytes mysql[*rest_off .. len).  -1 with err on a value too short for
 * SRID, byte order and type, an unknown byte order, or a type word that
 * already carries EWKB flags.
 */
#define BL_EWKB_HEADER_MAX	9
extern int	bl_geometry_ewkb_parts(const uint8_t *mysql, size_t len,
								   uint8_t hdr[BL_EWKB_HEADER_MAX], size_t *hdrlen,
								   size_t *rest_off, bl_error *err);

/* The SRID of a MySQL geometry value (len >= 4). */
extern uint32_t bl_geometry_srid(const uint8_t *mysql, size_t len);

/* The EWKB of a MySQL geometry value, appended to out. */
extern int	bl_geometry_to_ewkb(const uint8_t *mysql, size_t len, bl_buf *out,
								bl_error *err);

#endif							/* BL_GEOMETRY_H */
