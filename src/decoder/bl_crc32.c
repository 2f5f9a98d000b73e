/*
 * bl_crc32.c
 *	  The CRC32 of binlog event checksums (the reflected IEEE polynomial,
 *	  the same value as zlib's crc32()), computed with Intel's ISA-L
 *	  (Debian package libisal-dev), whose carry-less-multiply kernels run an
 *	  order of magnitude faster than zlib's table-driven loop.  Every event
 *	  of a checksummed binlog goes through here once.
 *
 * crc may be the result of an earlier call over the bytes in front of
 * data (0 to start), exactly as with zlib's crc32().
 */
#include "bl_decoder_int.h"

#include <isa-l/crc.h>

uint32_t
bl_crc32(uint32_t crc, const uint8_t *data, size_t len)
{
	return crc32_gzip_refl(crc, data, (uint64_t) len);
}
