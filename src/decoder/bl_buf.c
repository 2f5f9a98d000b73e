/*
 * bl_buf.c
 *	  The growable output buffer and the error record (see bl_common.h).
 */
#include "bl_common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void
bl_buf_init(bl_buf *b)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->oom = false;
}

void
bl_buf_free(bl_buf *b)
{
	free(b->data);
	bl_buf_init(b);
}

bool
bl_buf_reserve_slow(bl_buf *b, size_t extra)
{
	size_t		need;
	size_t		cap;
	char	   *p;

	if (b->oom)
		return false;
	need = b->len + extra + 1;
	if (need < b->len)			/* overflow */
	{
		b->oom = true;
		return false;
	}
	cap = b->cap ? b->cap : 256;
	while (cap < need)
	{
		if (cap > SIZE_MAX / 2)
		{
			cap = need;
			break;
		}
		cap *= 2;
	}
	p = realloc(b->data, cap);
	if (p == NULL)
	{
		b->oom = true;
		return false;
	}
	b->data = p;
	b->cap = cap;
	return true;
}

void
bl_buf_printf(bl_buf *b, const char *fmt,...)
{
	va_list		ap;
	int			n;

	if (!bl_buf_reserve(b, 64))
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t) n >= b->cap - b->len)
	{
		if (!bl_buf_reserve(b, (size_t) n + 1))
			return;
		va_start(ap, fmt);
		n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
	}
	b->len += (size_t) n;
}

int
bl_error_set(bl_error *err, bl_errcode code, const char *fmt,...)
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
	err->code = code;
	return -1;
}

const char *
bl_errcode_name(bl_errcode code)
{
	switch (code)
	{
		case BL_OK:
			return "ok";
		case BL_ERR_TRUNCATED:
			return "truncated";
		case BL_ERR_CORRUPT:
			return "corrupt";
		case BL_ERR_CHECKSUM:
			return "checksum";
		case BL_ERR_UNSUPPORTED:
			return "unsupported";
		case BL_ERR_IO:
			return "io";
		case BL_ERR_NOMEM:
			return "out of memory";
		case BL_ERR_SCHEMA:
			return "schema mismatch";
	}
	return "unknown";
}
