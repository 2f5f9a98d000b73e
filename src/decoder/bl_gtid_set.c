/*
 * bl_gtid_set.c
 *	  MySQL GTID sets as text: parse, membership, inclusion, and MySQL's
 *	  binary encoding (bl_gtid_set.h).
 *
 * A set is a list of members, one per (uuid, tag), each with its intervals
 * sorted and merged.  Text forms accepted: "uuid:1-5:7", "uuid:1-5:tag:3"
 * (a tag applies to the intervals after it, MySQL's form) and
 * "uuid:tag:3" (the decoder's form for PREVIOUS_GTIDS), members separated
 * by commas, whitespace and newlines ignored.
 */
#include "bl_gtid_set.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GTID_KEY_LEN 72			/* "uuid" 36 + ":" + tag up to 32 + NUL */

typedef struct gtid_interval
{
	uint64_t	first;
	uint64_t	last;			/* inclusive */
} gtid_interval;

typedef struct gtid_member
{
	char		key[GTID_KEY_LEN];	/* "uuid" or "uuid:tag", lower case */
	gtid_interval *iv;
	int			niv;
	int			cap;
} gtid_member;

struct bl_gtid_set
{
	gtid_member *m;
	int			n;
	int			cap;
};

/* Index of key's member, or where it would go (*found false). */
static int
member_index(const bl_gtid_set *s, const char *key, bool *found)
{
	int			lo = 0,
				hi = s->n - 1;

	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;
		int			c = strcmp(s->m[mid].key, key);

		if (c == 0)
		{
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	*found = false;
	return lo;
}

/* key's member, added (empty) if the set has none; NULL: out of memory. */
static gtid_member *
member_get(bl_gtid_set *s, const char *key)
{
	bool		found;
	int			i = member_index(s, key, &found);

	if (found)
		return &s->m[i];
	if (s->n == s->cap)
	{
		int			cap = s->cap ? s->cap * 2 : 4;
		gtid_member *m = realloc(s->m, sizeof(gtid_member) * (size_t) cap);

		if (m == NULL)
			return NULL;
		s->m = m;
		s->cap = cap;
	}
	memmove(&s->m[i + 1], &s->m[i], sizeof(gtid_member) * (size_t) (s->n - i));
	memset(&s->m[i], 0, sizeof(gtid_member));
	snprintf(s->m[i].key, GTID_KEY_LEN, "%s", key);
	s->n++;
	return &s->m[i];
}

static const gtid_member *
member_find(const bl_gtid_set *s, const char *key)
{
	bool		found;
	int			i = member_index(s, key, &found);

	return found ? &s->m[i] : NULL;
}

static bool
member_grow(gtid_member *m)
{
	if (m->niv == m->cap)
	{
		int			cap = m->cap ? m->cap * 2 : 4;
		gtid_interval *iv = realloc(m->iv, sizeof(gtid_interval) * (size_t) cap);

		if (iv == NULL)
			return false;
		m->iv = iv;
		m->cap = cap;
	}
	return true;
}

/* Does an interval starting at first join one ending at last? */
static inline bool
joins(uint64_t last, uint64_t first)
{
	return first <= last || first - last == 1;
}

/* Append an interval (parse: sorted and merged afterwards). */
static bool
member_add(gtid_member *m, uint64_t first, uint64_t last)
{
	if (!member_grow(m))
		return false;
	m->iv[m->niv].first = first;
	m->iv[m->niv].last = last;
	m->niv++;
	return true;
}

static int
interval_cmp(const void *a, const void *b)
{
	const gtid_interval *x = a,
			   *y = b;

	return x->first < y->first ? -1 : x->first > y->first;
}

/* Sort and merge overlapping or adjacent intervals. */
static void
member_normalize(gtid_member *m)
{
	int			out = 0;

	if (m->niv < 2)
		return;
	qsort(m->iv, (size_t) m->niv, sizeof(gtid_interval), interval_cmp);
	for (int i = 1; i < m->niv; i++)
	{
		if (joins(m->iv[out].last, m->iv[i].first))
		{
			if (m->iv[i].last > m->iv[out].last)
				m->iv[out].last = m->iv[i].last;
		}
		else
			m->iv[++out] = m->iv[i];
	}
	m->niv = out + 1;
}

/* Add [first, last] to a member whose intervals are sorted and merged. */
static bool
member_insert(gtid_member *m, uint64_t first, uint64_t last)
{
	int			lo = 0,
				hi = m->niv;
	int			i,
				j;

	/* the first interval that ends at or after first - 1 */
	while (lo < hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (joins(m->iv[mid].last, first))
			hi = mid;
		else
			lo = mid + 1;
	}
	i = lo;
	if (i == m->niv || !joins(last, m->iv[i].first))
	{
		/* a new interval between its neighbours */
		if (!member_grow(m))
			return false;
		memmove(&m->iv[i + 1], &m->iv[i], sizeof(gtid_interval) * (size_t) (m->niv - i));
		m->iv[i].first = first;
		m->iv[i].last = last;
		m->niv++;
		return true;
	}
	if (first < m->iv[i].first)
		m->iv[i].first = first;
	if (last > m->iv[i].last)
		m->iv[i].last = last;
	/* it may now reach the intervals after it */
	for (j = i + 1; j < m->niv && joins(m->iv[i].last, m->iv[j].first); j++)
		if (m->iv[j].last > m->iv[i].last)
			m->iv[i].last = m->iv[j].last;
	if (j > i + 1)
	{
		memmove(&m->iv[i + 1], &m->iv[j], sizeof(gtid_interval) * (size_t) (m->niv - j));
		m->niv -= j - i - 1;
	}
	return true;
}

static bool
is_uuid(const char *s, size_t len)
{
	if (len != 36)
		return false;
	for (size_t i = 0; i < len; i++)
	{
		if (i == 8 || i == 13 || i == 18 || i == 23)
		{
			if (s[i] != '-')
				return false;
		}
		else if (!isxdigit((unsigned char) s[i]))
			return false;
	}
	return true;
}

static bool
is_tag(const char *s, size_t len)
{
	if (len == 0 || len > 32 || !(isalpha((unsigned char) s[0]) || s[0] == '_'))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!(isalnum((unsigned char) s[i]) || s[i] == '_'))
			return false;
	return true;
}

static void
make_key(char *key, const char *uuid, const char *tag, size_t taglen)
{
	size_t		n = 0;

	for (int i = 0; i < 36; i++)
		key[n++] = (char) tolower((unsigned char) uuid[i]);
	if (taglen)
	{
		key[n++] = ':';
		for (size_t i = 0; i < taglen; i++)
			key[n++] = (char) tolower((unsigned char) tag[i]);
	}
	key[n] = '\0';
}

/* "N" or "N-M" */
static bool
parse_interval(const char *s, size_t len, uint64_t *first, uint64_t *last)
{
	const char *end = s + len;
	const char *p = s;
	uint64_t	v = 0;

	if (p == end || !isdigit((unsigned char) *p))
		return false;
	while (p < end && isdigit((unsigned char) *p))
	{
		if (v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t) (*p++ - '0');
	}
	*first = v;
	if (p == end)
	{
		*last = v;
		return v > 0;
	}
	if (*p++ != '-' || p == end)
		return false;
	v = 0;
	while (p < end && isdigit((unsigned char) *p))
	{
		if (v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t) (*p++ - '0');
	}
	*last = v;
	return p == end && *first > 0 && *last >= *first;
}

bl_gtid_set *
bl_gtid_set_create(void)
{
	return calloc(1, sizeof(bl_gtid_set));
}

bl_gtid_set *
bl_gtid_set_parse(const char *text, size_t len, bl_error *err)
{
	bl_gtid_set *s = calloc(1, sizeof(bl_gtid_set));
	const char *p = text;
	const char *end = text + len;

	if (s == NULL)
	{
		bl_error_set(err, BL_ERR_NOMEM, "out of memory");
		return NULL;
	}
	while (p < end)
	{
		const char *mend;
		const char *q;
		const char *uuid = NULL;
		const char *tag = NULL;
		size_t		taglen = 0;
		char		key[GTID_KEY_LEN];
		int			fields = 0;

		/* one member: up to the next comma, whitespace dropped */
		while (p < end && (isspace((unsigned char) *p) || *p == ','))
			p++;
		if (p == end)
			break;
		mend = p;
		while (mend < end && *mend != ',')
			mend++;
		q = p;
		while (q < mend)
		{
			const char *f = q;
			const char *fend;
			size_t		flen;

			while (q < mend && *q != ':')
				q++;
			fend = q;
			while (fend > f && isspace((unsigned char) fend[-1]))
				fend--;
			while (f < fend && isspace((unsigned char) *f))
				f++;
			flen = (size_t) (fend - f);
			if (q < mend)
				q++;			/* the ':' */
			if (fields++ == 0)
			{
				if (!is_uuid(f, flen))
					goto bad;
				uuid = f;
				continue;
			}
			if (flen > 0 && isdigit((unsigned char) *f))
			{
				uint64_t	first,
							last;
				gtid_member *m;

				if (!parse_interval(f, flen, &first, &last))
					goto bad;
				make_key(key, uuid, tag, taglen);
				m = member_get(s, key);
				if (m == NULL || !member_add(m, first, last))
				{
					bl_error_set(err, BL_ERR_NOMEM, "out of memory");
					bl_gtid_set_free(s);
					return NULL;
				}
			}
			else if (is_tag(f, flen))
			{
				tag = f;
				taglen = flen;
			}
			else
				goto bad;
		}
		if (fields < 2)
			goto bad;
		p = mend;
	}
	for (int i = 0; i < s->n; i++)
		member_normalize(&s->m[i]);
	return s;

bad:
	bl_error_set(err, BL_ERR_UNSUPPORTED,
				 "invalid GTID set \"%.*s\" (expected uuid:N[-M][:N[-M]...][,...], tags as uuid:tag:N)",
				 (int) (len > 200 ? 200 : len), text);
	bl_gtid_set_free(s);
	return NULL;
}

void
bl_gtid_set_free(bl_gtid_set *set)
{
	if (set == NULL)
		return;
	for (int i = 0; i < set->n; i++)
		free(set->m[i].iv);
	free(set->m);
	free(set);
}

static bool
member_covers(const gtid_member *m, uint64_t first, uint64_t last)
{
	/* intervals are merged: one of them must hold [first, last] */
	int			lo = 0,
				hi = m->niv - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;

		if (m->iv[mid].last < first)
			lo = mid + 1;
		else if (m->iv[mid].first > first)
			hi = mid - 1;
		else
			return m->iv[mid].last >= last;
	}
	return false;
}

/* "uuid:n" or "uuid:tag:n" into its member key and number. */
static bool
parse_gtid(const char *gtid, char *key, uint64_t *gno)
{
	const char *colon = strrchr(gtid, ':');
	uint64_t	unused;
	size_t		prefix;

	if (colon == NULL || !parse_interval(colon + 1, strlen(colon + 1), gno, &unused) ||
		*gno != unused)
		return false;
	prefix = (size_t) (colon - gtid);
	if (prefix < 36 || !is_uuid(gtid, 36))
		return false;
	if (prefix == 36)
		make_key(key, gtid, NULL, 0);
	else if (gtid[36] == ':' && is_tag(gtid + 37, prefix - 37))
		make_key(key, gtid, gtid + 37, prefix - 37);
	else
		return false;
	return true;
}

bool
bl_gtid_set_contains(const bl_gtid_set *set, const char *gtid)
{
	char		key[GTID_KEY_LEN];
	const gtid_member *m;
	uint64_t	gno;

	if (!parse_gtid(gtid, key, &gno))
		return false;
	m = member_find(set, key);
	return m != NULL && member_covers(m, gno, gno);
}

int
bl_gtid_set_add(bl_gtid_set *set, const char *gtid, bl_error *err)
{
	char		key[GTID_KEY_LEN];
	gtid_member *m;
	uint64_t	gno;

	if (!parse_gtid(gtid, key, &gno))
		return bl_error_set(err, BL_ERR_UNSUPPORTED,
							"invalid GTID \"%.100s\" (expected uuid:N or uuid:tag:N)", gtid);
	m = member_get(set, key);
	if (m == NULL || !member_insert(m, gno, gno))
		return bl_error_set(err, BL_ERR_NOMEM, "out of memory");
	return 0;
}

int
bl_gtid_set_union(bl_gtid_set *a, const bl_gtid_set *b, bl_error *err)
{
	for (int i = 0; i < b->n; i++)
	{
		const gtid_member *mb = &b->m[i];
		gtid_member *ma;

		if (mb->niv == 0)
			continue;
		ma = member_get(a, mb->key);
		if (ma == NULL)
			return bl_error_set(err, BL_ERR_NOMEM, "out of memory");
		for (int k = 0; k < mb->niv; k++)
			if (!member_insert(ma, mb->iv[k].first, mb->iv[k].last))
				return bl_error_set(err, BL_ERR_NOMEM, "out of memory");
	}
	return 0;
}

int
bl_gtid_set_text(const bl_gtid_set *set, bl_buf *out)
{
	const char *uuid = NULL;

	for (int i = 0; i < set->n; i++)
	{
		const gtid_member *m = &set->m[i];

		if (m->niv == 0)
			continue;
		/* members of one uuid follow each other, the untagged one first */
		if (uuid == NULL || strncmp(uuid, m->key, 36) != 0)
		{
			if (uuid != NULL)
				bl_buf_putc(out, ',');
			bl_buf_append(out, m->key, 36);
			uuid = m->key;
		}
		if (m->key[36] == ':')
			bl_buf_puts(out, m->key + 36);
		for (int k = 0; k < m->niv; k++)
		{
			if (m->iv[k].first == m->iv[k].last)
				bl_buf_printf(out, ":%llu", (unsigned long long) m->iv[k].first);
			else
				bl_buf_printf(out, ":%llu-%llu", (unsigned long long) m->iv[k].first,
							  (unsigned long long) m->iv[k].last);
		}
	}
	return bl_buf_failed(out) ? -1 : 0;
}

static void
put_u64(bl_buf *out, uint64_t v)
{
	uint8_t		b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t) (v >> (8 * i));
	bl_buf_append(out, b, sizeof(b));
}

static int
hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return c - 'A' + 10;
}

int
bl_gtid_set_encode(const bl_gtid_set *set, bl_buf *out)
{
	bool		tagged = false;
	uint64_t	n = 0;

	for (int i = 0; i < set->n; i++)
	{
		if (set->m[i].niv == 0)
			continue;
		n++;
		if (set->m[i].key[36] == ':')
			tagged = true;
	}
	if (tagged)
	{
		uint8_t		head[8];

		head[0] = 1;
		for (int i = 0; i < 6; i++)
			head[1 + i] = (uint8_t) (n >> (8 * i));
		head[7] = 1;
		bl_buf_append(out, head, sizeof(head));
	}
	else
		put_u64(out, n);
	for (int i = 0; i < set->n; i++)
	{
		const gtid_member *m = &set->m[i];
		uint8_t		uuid[16];
		int			k = 0;

		if (m->niv == 0)
			continue;
		/* keys are validated "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx[:tag]" */
		for (int c = 0; c < 36 && k < 16; c++)
		{
			if (m->key[c] == '-')
				continue;
			uuid[k++] = (uint8_t) (hex_digit(m->key[c]) << 4 | hex_digit(m->key[c + 1]));
			c++;
		}
		bl_buf_append(out, uuid, sizeof(uuid));
		if (tagged)
		{
			size_t		tlen = m->key[36] == ':' ? strlen(m->key + 37) : 0;

			/* a tag has at most 32 bytes: its length fits one varlen byte */
			bl_buf_putc(out, (char) (uint8_t) (tlen << 1));
			bl_buf_append(out, m->key + 37, tlen);
		}
		put_u64(out, (uint64_t) m->niv);
		for (int iv = 0; iv < m->niv; iv++)
		{
			put_u64(out, m->iv[iv].first);
			put_u64(out, m->iv[iv].last + 1);
		}
	}
	return bl_buf_failed(out) ? -1 : 0;
}

bool
bl_gtid_set_subset(const bl_gtid_set *a, const bl_gtid_set *b)
{
	for (int i = 0; i < a->n; i++)
	{
		const gtid_member *ma = &a->m[i];
		const gtid_member *mb;

		if (ma->niv == 0)
			continue;
		mb = member_find(b, ma->key);
		if (mb == NULL)
			return false;
		for (int k = 0; k < ma->niv; k++)
			if (!member_covers(mb, ma->iv[k].first, ma->iv[k].last))
				return false;
	}
	return true;
}

void
bl_gtid_set_first_missing(const bl_gtid_set *a, const bl_gtid_set *b, bl_buf *out)
{
	for (int i = 0; i < a->n; i++)
	{
		const gtid_member *ma = &a->m[i];
		const gtid_member *mb = member_find(b, ma->key);

		for (int k = 0; k < ma->niv; k++)
		{
			uint64_t	x = ma->iv[k].first;

			/* b's intervals are sorted and merged: skip those covering x */
			for (int j = 0; mb && j < mb->niv && x <= ma->iv[k].last; j++)
				if (mb->iv[j].first <= x && x <= mb->iv[j].last)
					x = mb->iv[j].last + 1;
			if (x <= ma->iv[k].last && x >= ma->iv[k].first)
			{
				bl_buf_printf(out, "%s:%llu", ma->key, (unsigned long long) x);
				return;
			}
		}
	}
}

int
bl_gtid_set_members(const bl_gtid_set *set)
{
	return set->n;
}
