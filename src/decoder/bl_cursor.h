/*
 * bl_cursor.h
 *	  The one bounds-checked reader through which the decoder reads bytes.
 *
 * A cursor covers [pos, end).  Every read checks the remaining length
 * first; a read past the end returns zero, leaves the cursor where it was
 * and sets the sticky `overrun` flag.  Callers read a whole structure and
 * test bl_cur_ok() once, which keeps the hot path free of per-field
 * branches on the error path while making an out-of-bounds read
 * impossible.  Integers in the binlog are little-endian unless a function
 * name says _be (big-endian, used by temporal and DECIMAL encodings).
 */
#ifndef BL_CURSOR_H
#define BL_CURSOR_H

#include "bl_common.h"

typedef struct bl_cur
{
	const uint8_t *pos;
	const uint8_t *end;
	bool		overrun;
} bl_cur;

static inline bl_cur
bl_cur_make(const uint8_t *data, size_t len)
{
	bl_cur		c;

	c.pos = data;
	c.end = data + len;
	c.overrun = false;
	return c;
}

static inline size_t
bl_cur_left(const bl_cur *c)
{
	return (size_t) (c->end - c->pos);
}

static inline bool
bl_cur_ok(const bl_cur *c)
{
	return !c->overrun;
}

/* Returns a pointer to n bytes and advances, or NULL (and overrun). */
static inline const uint8_t *
bl_cur_take(bl_cur *c, size_t n)
{
	const uint8_t *p = c->pos;

	if (BL_UNLIKELY(n > bl_cur_left(c)))
	{
		c->overrun = true;
		return NULL;
	}
	c->pos += n;
	return p;
}

static inline bool
bl_cur_skip(bl_cur *c, size_t n)
{
	return bl_cur_take(c, n) != NULL;
}

/* A sub-cursor over the next n bytes; the parent advances past them. */
static inline bl_cur
bl_cur_sub(bl_cur *c, size_t n)
{
	const uint8_t *p = bl_cur_take(c, n);
	bl_cur		s = bl_cur_make(p ? p : c->pos, p ? n : 0);

	s.overrun = (p == NULL);
	return s;
}

static inline uint64_t
bl_load_le(const uint8_t *p, int n)
{
	uint64_t	v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static inline uint64_t
bl_load_be(const uint8_t *p, int n)
{
	uint64_t	v = 0;

	for (int i = 0; i < n; i++)
		v = (v << 8) | p[i];
	return v;
}

static inline uint64_t
bl_cur_uint(bl_cur *c, int n)
{
	const uint8_t *p = bl_cur_take(c, (size_t) n);

	return p ? bl_load_le(p, n) : 0;
}

static inline uint64_t
bl_cur_uint_be(bl_cur *c, int n)
{
	const uint8_t *p = bl_cur_take(c, (size_t) n);

	return p ? bl_load_be(p, n) : 0;
}

static inline uint8_t
bl_cur_u8(bl_cur *c)
{
	const uint8_t *p = bl_cur_take(c, 1);

	return p ? p[0] : 0;
}

static inline uint16_t
bl_cur_u16(bl_cur *c)
{
	return (uint16_t) bl_cur_uint(c, 2);
}

static inline uint32_t
bl_cur_u32(bl_cur *c)
{
	return (uint32_t) bl_cur_uint(c, 4);
}

static inline uint64_t
bl_cur_u64(bl_cur *c)
{
	return bl_cur_uint(c, 8);
}

/*
 * Length-encoded ("packed") integer of the MySQL protocol: one byte below
 * 251, or 252/253/254 followed by 2/3/8 bytes.  251 (NULL marker) and 255
 * are invalid here and set overrun.
 */
static inline uint64_t
bl_cur_packed(bl_cur *c)
{
	uint8_t		first = bl_cur_u8(c);

	if (first < 251)
		return first;
	switch (first)
	{
		case 252:
			return bl_cur_uint(c, 2);
		case 253:
			return bl_cur_uint(c, 3);
		case 254:
			return bl_cur_uint(c, 8);
		default:
			c->overrun = true;
			return 0;
	}
}

#endif							/* BL_CURSOR_H */
