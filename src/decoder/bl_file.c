/*
 * bl_file.c
 *	  Binlog files mapped read-only and split into events (bl_file.h).
 */
#include "bl_file.h"
#include "bl_cursor.h"
#include "bl_event_types.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static const uint8_t empty_file[1];

int
bl_file_open(bl_file *f, const char *path, bl_error *err)
{
	int			fd;
	struct stat st;
	const char *slash;

	memset(f, 0, sizeof(*f));
	snprintf(f->path, sizeof(f->path), "%s", path);
	slash = strrchr(f->path, '/');
	f->name = slash ? slash + 1 : f->path;
	if (err)
		snprintf(err->file, sizeof(err->file), "%s", f->name);

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return bl_error_set(err, BL_ERR_IO, "cannot open \"%s\": %s", path, strerror(errno));
	if (fstat(fd, &st) != 0)
	{
		int			e = errno;

		close(fd);
		return bl_error_set(err, BL_ERR_IO, "cannot stat \"%s\": %s", path, strerror(e));
	}
	if (!S_ISREG(st.st_mode))
	{
		close(fd);
		return bl_error_set(err, BL_ERR_IO, "\"%s\" is not a regular file", path);
	}
	f->size = (size_t) st.st_size;
	if (f->size > 0)
	{
		void	   *p = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);

		if (p == MAP_FAILED)
		{
			int			e = errno;

			close(fd);
			return bl_error_set(err, BL_ERR_IO, "cannot map \"%s\": %s", path, strerror(e));
		}
		madvise(p, f->size, MADV_SEQUENTIAL);
		f->data = p;
	}
	else
		f->data = empty_file;
	close(fd);

	if (f->size < BL_BINLOG_MAGIC_LEN ||
		memcmp(f->data, BL_BINLOG_MAGIC, BL_BINLOG_MAGIC_LEN) != 0)
	{
		bl_file_close(f);
		if (err)
			err->position = 0;
		return bl_error_set(err, BL_ERR_CORRUPT,
							"\"%s\" is not a binlog file (it does not start with the binlog magic bytes)",
							path);
	}
	f->pos = BL_BINLOG_MAGIC_LEN;
	return 0;
}

int
bl_file_next(bl_file *f, const uint8_t **ev, size_t *len, uint64_t *pos,
			 bl_error *err)
{
	size_t		left;
	uint32_t	size;

	if (f->pos >= f->size)
		return 0;
	left = f->size - (size_t) f->pos;
	if (err)
	{
		err->position = f->pos;
		snprintf(err->file, sizeof(err->file), "%s", f->name);
	}
	if (left < BL_EVENT_HEADER_LEN)
		return bl_error_set(err, BL_ERR_TRUNCATED,
							"file ends inside an event header (%zu bytes left)", left);
	size = (uint32_t) bl_load_le(f->data + f->pos + 9, 4);
	if (size < BL_EVENT_HEADER_LEN)
		return bl_error_set(err, BL_ERR_CORRUPT,
							"event length %u is shorter than an event header", size);
	if (size > left)
		return bl_error_set(err, BL_ERR_TRUNCATED,
							"event of %u bytes is truncated: the file ends after %zu",
							size, left);
	*ev = f->data + f->pos;
	*len = size;
	*pos = f->pos;
	f->pos += size;
	return 1;
}

void
bl_file_close(bl_file *f)
{
	if (f->data && f->data != empty_file)
		munmap((void *) f->data, f->size);
	f->data = NULL;
	f->size = 0;
}

void
bl_file_sibling(const char *sibling, const char *name, size_t name_len,
				char *out, size_t outlen)
{
	const char *slash = strrchr(sibling, '/');
	int			dirlen = slash ? (int) (slash - sibling) + 1 : 0;

	snprintf(out, outlen, "%.*s%.*s", dirlen, sibling, (int) name_len, name);
}
