/*
 * bl_file.c
 *	  Binlog files read through a reused window and split into events
 *	  (bl_file.h).
 *
 * Every event is located by the length field of its header, checked
 * against the bytes the file has left, before any of it is handed out;
 * the window always holds the whole event that bl_file_next() returns.
 */
#include "bl_file.h"
#include "bl_cursor.h"
#include "bl_event_types.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Windows grow in steps of this size for events larger than the window. */
#define BL_FILE_GROW_STEP	(64 * 1024)

/* Name err after the file (cheap when it already is). */
static inline void
name_error(const bl_file *f, bl_error *err)
{
	if (strncmp(err->file, f->name, sizeof(err->file) - 1) != 0)
		snprintf(err->file, sizeof(err->file), "%s", f->name);
}

static int
file_fail(bl_file *f, bl_error *err, bl_errcode code, const char *fmt,...) BL_PRINTF(4, 5);

static int
file_fail(bl_file *f, bl_error *err, bl_errcode code, const char *fmt,...)
{
	va_list		ap;
	char		msg[sizeof(err->message)];

	if (err == NULL)
		return -1;
	/* formatted apart first: an argument may be err->message itself */
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	memcpy(err->message, msg, sizeof(msg));
	name_error(f, err);
	err->code = code;
	return -1;
}

/*
 * Refill the window so that it holds file bytes [off, off + need), where
 * off is at or after the window's start and off + need is within the file
 * size.  What the window already holds from off on is moved to its front;
 * the rest of the window is read from the file.
 */
static const uint8_t *
window_fill(bl_file *f, uint64_t off, size_t need, bl_error *err)
{
	size_t		keep = 0;
	size_t		want;

	if (off >= f->buf_off && off - f->buf_off < f->buf_len)
	{
		size_t		skip = (size_t) (off - f->buf_off);

		keep = f->buf_len - skip;
		memmove(f->buf, f->buf + skip, keep);
	}
	f->buf_off = off;
	f->buf_len = keep;

	/* read up to a window ahead, or the whole event if it is larger */
	want = need > f->window ? need : f->window;
	if (want > f->buf_cap)
	{
		size_t		cap;
		uint8_t    *p;

		if (want > SIZE_MAX - BL_FILE_GROW_STEP)
		{
			file_fail(f, err, BL_ERR_NOMEM, "event of %zu bytes is too large to read", need);
			return NULL;
		}
		cap = (want + BL_FILE_GROW_STEP - 1) / BL_FILE_GROW_STEP * BL_FILE_GROW_STEP;
		p = realloc(f->buf, cap);
		if (p == NULL)
		{
			file_fail(f, err, BL_ERR_NOMEM, "out of memory for a read buffer of %zu bytes", cap);
			return NULL;
		}
		f->buf = p;
		f->buf_cap = cap;
	}

	while (f->buf_len < want)
	{
		uint64_t	at = off + f->buf_len;
		size_t		room = want - f->buf_len;
		ssize_t		r;

		if (at >= f->size)
			break;
		if (room > f->size - at)
			room = (size_t) (f->size - at);
		r = pread(f->fd, f->buf + f->buf_len, room, (off_t) at);
		if (r < 0)
		{
			if (errno == EINTR)
				continue;
			file_fail(f, err, BL_ERR_IO, "cannot read \"%s\" at offset %llu: %s",
					  f->path, (unsigned long long) at, strerror(errno));
			return NULL;
		}
		if (r == 0)
			break;
		f->buf_len += (size_t) r;
	}
	if (f->buf_len < need)
	{
		file_fail(f, err, BL_ERR_TRUNCATED,
				  "\"%s\" ended at %llu bytes while being read (it was %llu bytes when opened)",
				  f->path, (unsigned long long) (off + f->buf_len),
				  (unsigned long long) f->size);
		return NULL;
	}
	return f->buf;
}

/* File bytes [off, off + need) (off + need within the file size). */
static inline const uint8_t *
window_get(bl_file *f, uint64_t off, size_t need, bl_error *err)
{
	if (f->image)
		return f->image + off;
	if (BL_LIKELY(off >= f->buf_off && off - f->buf_off <= f->buf_len &&
				  need <= f->buf_len - (size_t) (off - f->buf_off)))
		return f->buf + (off - f->buf_off);
	return window_fill(f, off, need, err);
}

int
bl_file_open_window(bl_file *f, const char *path, size_t window, bl_error *err)
{
	int			fd;
	struct stat st;
	const char *slash;
	const uint8_t *magic;

	memset(f, 0, sizeof(*f));
	f->fd = -1;
	f->window = window > 0 ? window : BL_FILE_WINDOW;
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
	f->fd = fd;
	f->size = (uint64_t) st.st_size;
	(void) posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);

	magic = f->size >= BL_BINLOG_MAGIC_LEN ?
		window_get(f, 0, BL_BINLOG_MAGIC_LEN, err) : NULL;
	if (magic == NULL && f->size >= BL_BINLOG_MAGIC_LEN)
	{
		bl_file_close(f);
		return -1;				/* read error, err filled */
	}
	if (magic == NULL || memcmp(magic, BL_BINLOG_MAGIC, BL_BINLOG_MAGIC_LEN) != 0)
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
bl_file_open(bl_file *f, const char *path, bl_error *err)
{
	return bl_file_open_window(f, path, BL_FILE_WINDOW, err);
}

void
bl_file_open_memory(bl_file *f, const char *name, const uint8_t *data,
					size_t size, uint64_t start)
{
	memset(f, 0, sizeof(*f));
	f->fd = -1;
	snprintf(f->path, sizeof(f->path), "%s", name);
	f->name = f->path;
	f->image = data;
	f->size = size;
	f->pos = start;
}

int
bl_file_next(bl_file *f, const uint8_t **ev, size_t *len, uint64_t *pos,
			 bl_error *err)
{
	uint64_t	left;
	uint32_t	size;
	const uint8_t *p;

	if (f->pos >= f->size)
		return 0;
	left = f->size - f->pos;
	if (err)
	{
		err->position = f->pos;
		name_error(f, err);
	}
	if (left < BL_EVENT_HEADER_LEN)
		return bl_error_set(err, BL_ERR_TRUNCATED,
							"file ends inside an event header (%zu bytes left)", (size_t) left);
	if ((p = window_get(f, f->pos, BL_EVENT_HEADER_LEN, err)) == NULL)
		return -1;
	size = (uint32_t) bl_load_le(p + 9, 4);
	if (size < BL_EVENT_HEADER_LEN)
		return bl_error_set(err, BL_ERR_CORRUPT,
							"event length %u is shorter than an event header", size);
	if (size > left)
		return bl_error_set(err, BL_ERR_TRUNCATED,
							"event of %u bytes is truncated: the file ends after %zu",
							size, (size_t) left);
	if ((p = window_get(f, f->pos, size, err)) == NULL)
		return -1;
	*ev = p;
	*len = size;
	*pos = f->pos;
	f->pos += size;
	return 1;
}

void
bl_file_close(bl_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	free(f->buf);
	f->buf = NULL;
	f->buf_cap = 0;
	f->buf_len = 0;
	f->buf_off = 0;
	f->image = NULL;
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

/*
 * Whether the directory of `sibling` holds a binlog file that comes after
 * `name` (the same base name with a greater number): the sign that a file
 * between them is missing rather than `name` not written yet.  Sets
 * later_name to the first such file found.
 */
bool
bl_file_later_sibling(const char *sibling, const char *name, char *later_name,
					  size_t later_len)
{
	const char *dot = strrchr(name, '.');
	const char *slash = strrchr(sibling, '/');
	char		dir[4096];
	size_t		base_len;
	unsigned long long num;
	char	   *end;
	DIR		   *d;
	struct dirent *de;
	bool		found = false;

	if (dot == NULL || dot[1] == '\0')
		return false;
	num = strtoull(dot + 1, &end, 10);
	if (*end != '\0')
		return false;
	base_len = (size_t) (dot - name) + 1;
	if (slash == NULL)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == sibling)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int) (slash - sibling), sibling);
	d = opendir(dir);
	if (d == NULL)
		return false;
	while (!found && (de = readdir(d)) != NULL)
	{
		const char *digits = de->d_name + base_len;
		unsigned long long n;

		if (strncmp(de->d_name, name, base_len) != 0 ||
			*digits < '0' || *digits > '9')
			continue;
		n = strtoull(digits, &end, 10);
		if (*end == '\0' && n > num)
		{
			snprintf(later_name, later_len, "%s", de->d_name);
			found = true;
		}
	}
	closedir(d);
	return found;
}
