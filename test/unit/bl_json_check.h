/*
 * bl_json_check.h
 *	  A strict JSON text validator for tests and fuzzers: RFC 8259 syntax,
 *	  well-formed UTF-8, no raw control characters in strings.
 *
 * Used to assert that every successful decoder output is valid JSON.
 */
#ifndef BL_JSON_CHECK_H
#define BL_JSON_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct bl_jc
{
	const uint8_t *p;
	const uint8_t *end;
	int			depth;
} bl_jc;

static bool bl_jc_value(bl_jc *c);

static void
bl_jc_ws(bl_jc *c)
{
	while (c->p < c->end &&
		   (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
		c->p++;
}

static bool
bl_jc_lit(bl_jc *c, const char *s)
{
	while (*s)
	{
		if (c->p >= c->end || *c->p != (uint8_t) *s)
			return false;
		c->p++;
		s++;
	}
	return true;
}

static bool
bl_jc_digits(bl_jc *c)
{
	const uint8_t *s = c->p;

	while (c->p < c->end && *c->p >= '0' && *c->p <= '9')
		c->p++;
	return c->p > s;
}

static bool
bl_jc_number(bl_jc *c)
{
	if (c->p < c->end && *c->p == '-')
		c->p++;
	if (c->p < c->end && *c->p == '0')
		c->p++;
	else if (!(c->p < c->end && *c->p >= '1' && *c->p <= '9') ||
			 !bl_jc_digits(c))
		return false;
	if (c->p < c->end && *c->p == '.')
	{
		c->p++;
		if (!bl_jc_digits(c))
			return false;
	}
	if (c->p < c->end && (*c->p == 'e' || *c->p == 'E'))
	{
		c->p++;
		if (c->p < c->end && (*c->p == '+' || *c->p == '-'))
			c->p++;
		if (!bl_jc_digits(c))
			return false;
	}
	return true;
}

static bool
bl_jc_string(bl_jc *c)
{
	if (c->p >= c->end || *c->p != '"')
		return false;
	c->p++;
	while (c->p < c->end)
	{
		uint8_t		b = *c->p;

		if (b == '"')
		{
			c->p++;
			return true;
		}
		if (b < 0x20)
			return false;
		if (b == '\\')
		{
			c->p++;
			if (c->p >= c->end)
				return false;
			b = *c->p++;
			if (b == 'u')
			{
				for (int i = 0; i < 4; i++, c->p++)
					if (c->p >= c->end ||
						!((*c->p >= '0' && *c->p <= '9') ||
						  (*c->p >= 'a' && *c->p <= 'f') ||
						  (*c->p >= 'A' && *c->p <= 'F')))
						return false;
			}
			else if (!(b == '"' || b == '\\' || b == '/' || b == 'b' ||
					   b == 'f' || b == 'n' || b == 'r' || b == 't'))
				return false;
			continue;
		}
		if (b < 0x80)
		{
			c->p++;
			continue;
		}
		{
			size_t		need;
			uint8_t		lo = 0x80,
						hi = 0xBF;

			if (b >= 0xC2 && b <= 0xDF)
				need = 2;
			else if (b >= 0xE0 && b <= 0xEF)
			{
				need = 3;
				lo = b == 0xE0 ? 0xA0 : 0x80;
				hi = b == 0xED ? 0x9F : 0xBF;
			}
			else if (b >= 0xF0 && b <= 0xF4)
			{
				need = 4;
				lo = b == 0xF0 ? 0x90 : 0x80;
				hi = b == 0xF4 ? 0x8F : 0xBF;
			}
			else
				return false;
			for (size_t i = 1; i < need; i++)
			{
				if (c->p + i >= c->end || c->p[i] < lo || c->p[i] > hi)
					return false;
				lo = 0x80;
				hi = 0xBF;
			}
			c->p += need;
		}
	}
	return false;
}

static bool
bl_jc_value(bl_jc *c)
{
	bl_jc_ws(c);
	if (c->p >= c->end)
		return false;
	switch (*c->p)
	{
		case '{':
		case '[':
			{
				uint8_t		close = *c->p == '{' ? '}' : ']';
				bool		object = close == '}';

				if (++c->depth > 512)
					return false;
				c->p++;
				bl_jc_ws(c);
				if (c->p < c->end && *c->p == close)
				{
					c->p++;
					c->depth--;
					return true;
				}
				for (;;)
				{
					if (object)
					{
						bl_jc_ws(c);
						if (!bl_jc_string(c))
							return false;
						bl_jc_ws(c);
						if (c->p >= c->end || *c->p != ':')
							return false;
						c->p++;
					}
					if (!bl_jc_value(c))
						return false;
					bl_jc_ws(c);
					if (c->p >= c->end)
						return false;
					if (*c->p == ',')
					{
						c->p++;
						continue;
					}
					if (*c->p != close)
						return false;
					c->p++;
					c->depth--;
					return true;
				}
			}
		case '"':
			return bl_jc_string(c);
		case 't':
			return bl_jc_lit(c, "true");
		case 'f':
			return bl_jc_lit(c, "false");
		case 'n':
			return bl_jc_lit(c, "null");
		default:
			return bl_jc_number(c);
	}
}

/* Is s[0..n) exactly one valid JSON text? */
static bool
bl_json_text_valid(const char *s, size_t n)
{
	bl_jc		c;

	c.p = (const uint8_t *) s;
	c.end = c.p + n;
	c.depth = 0;
	if (!bl_jc_value(&c))
		return false;
	bl_jc_ws(&c);
	return c.p == c.end;
}

#endif							/* BL_JSON_CHECK_H */
