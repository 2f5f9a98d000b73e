/*
 * bl_file.h
 *	  Reading binlog files: map a file, check its magic, and hand out its
 *	  events one at a time with their positions.
 */
#ifndef BL_FILE_H
#define BL_FILE_H

#include "bl_common.h"

typedef struct bl_file
{
	char		path[4096];
	const char *name;			/* base name, inside path */
	const uint8_t *data;		/* whole file, mapped read-only */
	size_t		size;
	uint64_t	pos;			/* offset of the next event */
} bl_file;

/* Open and map path; checks the 4-byte binlog magic. */
extern int	bl_file_open(bl_file *f, const char *path, bl_error *err);

/*
 * Next event: ev, len and pos describe it.  Returns 1, 0 at the end of the
 * file, -1 if the file ends inside an event.
 */
extern int	bl_file_next(bl_file *f, const uint8_t **ev, size_t *len,
						 uint64_t *pos, bl_error *err);

extern void bl_file_close(bl_file *f);

/* The path of `name` in the directory of `sibling` (for ROTATE). */
extern void bl_file_sibling(const char *sibling, const char *name, size_t name_len,
							char *out, size_t outlen);

#endif							/* BL_FILE_H */
