/*
 * bl_file.h
 *	  Reading binlog files: open a file, check its magic, and hand out its
 *	  events one at a time with their positions.
 *
 * A file is read with pread() into one reused buffer (the window, 1 MB by
 * default) rather than mapped: on the machines this runs on, page faults
 * on a mapping cost more than copying the bytes.  The window slides
 * forward through the file; an event that does not fit in what is left of
 * it is moved to the front and the rest read behind it, and an event
 * larger than the window grows it to the event's size.
 *
 * An event handed out by bl_file_next() stays valid until the next call of
 * bl_file_next() or bl_file_close() on the same bl_file.
 */
#ifndef BL_FILE_H
#define BL_FILE_H

#include "bl_common.h"

/* Default window size; the window grows for larger events. */
#define BL_FILE_WINDOW		(1024 * 1024)

typedef struct bl_file
{
	char		path[4096];
	const char *name;			/* base name, inside path */
	uint64_t	size;			/* file size when it was opened */
	uint64_t	pos;			/* offset of the next event */
	/* private: */
	int			fd;				/* -1: a memory image (bl_file_open_memory) */
	const uint8_t *image;		/* memory image: the whole file */
	uint8_t    *buf;			/* window: file bytes [buf_off, buf_off + buf_len) */
	size_t		buf_cap;
	size_t		buf_len;
	uint64_t	buf_off;
	size_t		window;			/* size to read ahead */
} bl_file;

/* Open path; checks the 4-byte binlog magic. */
extern int	bl_file_open(bl_file *f, const char *path, bl_error *err);

/* The same with a window of `window` bytes (tests use tiny windows). */
extern int	bl_file_open_window(bl_file *f, const char *path, size_t window,
								bl_error *err);

/*
 * A binlog image already in memory (the fuzzer's input): events are handed
 * out in place.  name is used in errors.  Reading starts at `start` (4 to
 * skip the magic, which is not checked here).  Closing frees nothing.
 */
extern void bl_file_open_memory(bl_file *f, const char *name,
								const uint8_t *data, size_t size, uint64_t start);

/*
 * Next event: ev, len and pos describe it.  Returns 1, 0 at the end of the
 * file, -1 if the file ends inside an event or cannot be read.  err (may be
 * NULL) gets the file name and the event's position in any case, so that a
 * later failure while decoding the event can be reported with them.
 */
extern int	bl_file_next(bl_file *f, const uint8_t **ev, size_t *len,
						 uint64_t *pos, bl_error *err);

/* Release the file and its window; safe to call twice. */
extern void bl_file_close(bl_file *f);

/* The path of `name` in the directory of `sibling` (for ROTATE). */
extern void bl_file_sibling(const char *sibling, const char *name, size_t name_len,
							char *out, size_t outlen);

/*
 * Whether the directory of `sibling` holds a file that comes after binlog
 * file `name` in its series (the same base name, a greater number after
 * the last '.'): when a ROTATE's next file is missing, the sign that files
 * are missing from the series rather than not written yet.  Sets
 * later_name to one such file.
 */
extern bool bl_file_later_sibling(const char *sibling, const char *name,
								  char *later_name, size_t later_len);

#endif							/* BL_FILE_H */
