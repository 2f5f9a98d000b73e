/*
 * bl_common.h
 *	  Shared basics of the binlog decoder: the growable output buffer, the
 *	  error record every decoder call fills on failure, and small helpers.
 *
 * The decoder (everything under src/decoder) is plain C99 with no
 * PostgreSQL dependency, so that it can be unit-tested, fuzzed and
 * benchmarked on its own and linked into the binlogcat tool.
 *
 * Conventions: functions return 0 on success and -1 on failure; on failure
 * they fill a bl_error.  Nothing here aborts the process.
 */
#ifndef BL_COMMON_H
#define BL_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__)
#define BL_LIKELY(x)	__builtin_expect(!!(x), 1)
#define BL_UNLIKELY(x)	__builtin_expect(!!(x), 0)
#define BL_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define BL_LIKELY(x)	(x)
#define BL_UNLIKELY(x)	(x)
#define BL_PRINTF(f, a)
#endif

/* Error classes, mapped to SQLSTATEs by the PostgreSQL glue. */
typedef enum bl_errcode
{
	BL_OK = 0,
	BL_ERR_TRUNCATED,			/* input ends before the structure does */
	BL_ERR_CORRUPT,				/* a value is impossible (bad length, bad magic) */
	BL_ERR_CHECKSUM,			/* CRC32 mismatch */
	BL_ERR_UNSUPPORTED,			/* a valid feature we do not decode */
	BL_ERR_IO,					/* file or network error */
	BL_ERR_NOMEM,				/* allocation failed */
	BL_ERR_SCHEMA				/* row does not match the known table schema */
} bl_errcode;

typedef struct bl_error
{
	bl_errcode	code;
	uint64_t	position;		/* binlog position of the event, if known */
	char		file[4096];		/* binlog file name or path, if known (PATH_MAX: never cut) */
	char		message[512];
} bl_error;

/* Fill err (may be NULL) and return -1. */
extern int	bl_error_set(bl_error *err, bl_errcode code, const char *fmt,...) BL_PRINTF(3, 4);
extern const char *bl_errcode_name(bl_errcode code);

/*
 * Growable byte buffer.  data is always NUL-terminated after len bytes
 * (capacity keeps one spare byte), so text written into it can be used as
 * a C string.  On allocation failure, oom is set and further appends are
 * ignored; callers check bl_buf_failed() once at the end.
 */
typedef struct bl_buf
{
	char	   *data;
	size_t		len;
	size_t		cap;
	bool		oom;
} bl_buf;

extern void bl_buf_init(bl_buf *b);
extern void bl_buf_free(bl_buf *b);
extern bool bl_buf_reserve_slow(bl_buf *b, size_t extra);
extern void bl_buf_printf(bl_buf *b, const char *fmt,...) BL_PRINTF(2, 3);

static inline bool
bl_buf_reserve(bl_buf *b, size_t extra)
{
	if (BL_LIKELY(b->len + extra < b->cap))
		return true;
	return bl_buf_reserve_slow(b, extra);
}

static inline void
bl_buf_reset(bl_buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

static inline void
bl_buf_append(bl_buf *b, const void *src, size_t n)
{
	if (BL_UNLIKELY(!bl_buf_reserve(b, n)))
		return;
	memcpy(b->data + b->len, src, n);
	b->len += n;
	b->data[b->len] = '\0';
}

static inline void
bl_buf_putc(bl_buf *b, char c)
{
	if (BL_UNLIKELY(!bl_buf_reserve(b, 1)))
		return;
	b->data[b->len++] = c;
	b->data[b->len] = '\0';
}

static inline void
bl_buf_puts(bl_buf *b, const char *s)
{
	bl_buf_append(b, s, strlen(s));
}

static inline bool
bl_buf_failed(const bl_buf *b)
{
	return b->oom;
}

#endif							/* BL_COMMON_H */
