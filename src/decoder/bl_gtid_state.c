/*
 * bl_gtid_state.c
 *	  A replica's GTID state as it reads a binlog (bl_gtid_state.h).
 *
 * MariaDB: an array of GTIDs sorted by domain, found by binary search, so
 * a commit costs O(log domains) and the text lists domains in order.
 * MySQL: a bl_gtid_set.  The text is made again only after a change.
 */
#include "bl_gtid_state.h"
#include "bl_gtid_set.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum state_flavor
{
	FLAVOR_NONE = 0,			/* nothing recorded yet */
	FLAVOR_MARIADB,
	FLAVOR_MYSQL
} state_flavor;

struct bl_gtid_state
{
	bool		known;
	state_flavor flavor;
	/* MariaDB */
	bl_maria_gtid *domains;
	size_t		ndomains;
	size_t		cap;
	/* MySQL */
	bl_gtid_set *set;
	/* the text, made again when dirty */
	bl_buf		text;
	bool		dirty;
};

int
bl_maria_gtid_list_parse(const char *text, size_t len, bl_maria_gtid **out, size_t *n,
						 bl_error *err)
{
	const char *p = text;
	const char *end = text + len;
	bl_maria_gtid *a = NULL;
	size_t		na = 0,
				cap = 0;

	*out = NULL;
	*n = 0;
	for (;;)
	{
		uint64_t	v[3];

		while (p < end && isspace((unsigned char) *p))
			p++;
		if (p == end && na == 0)
			break;				/* empty */
		for (int i = 0; i < 3; i++)
		{
			if (p == end || !isdigit((unsigned char) *p))
				goto bad;
			v[i] = 0;
			while (p < end && isdigit((unsigned char) *p))
			{
				if (v[i] > (UINT64_MAX - 9) / 10)
					goto bad;
				v[i] = v[i] * 10 + (uint64_t) (*p++ - '0');
			}
			if (i < 2 && (p == end || *p++ != '-'))
				goto bad;
		}
		if (v[0] > UINT32_MAX || v[1] > UINT32_MAX)
			goto bad;
		if (na == cap)
		{
			size_t		ncap = cap ? cap * 2 : 16;
			bl_maria_gtid *g = realloc(a, sizeof(bl_maria_gtid) * ncap);

			if (g == NULL)
			{
				free(a);
				return bl_error_set(err, BL_ERR_NOMEM, "out of memory");
			}
			a = g;
			cap = ncap;
		}
		a[na].domain = (uint32_t) v[0];
		a[na].server = (uint32_t) v[1];
		a[na].seq = v[2];
		na++;
		while (p < end && isspace((unsigned char) *p))
			p++;
		if (p == end)
			break;
		if (*p++ != ',')
			goto bad;
	}
	*out = a;
	*n = na;
	return 0;

bad:
	free(a);
	return bl_error_set(err, BL_ERR_UNSUPPORTED,
						"invalid MariaDB GTID state of %zu bytes at byte %zu: \"%.80s\" (expected domain-server-sequence, comma separated)",
						len, (size_t) (p - text), text);
}

bl_gtid_state *
bl_gtid_state_create(void)
{
	bl_gtid_state *st = calloc(1, sizeof(bl_gtid_state));

	if (st)
		bl_buf_init(&st->text);
	return st;
}

static void
state_clear(bl_gtid_state *st)
{
	free(st->domains);
	st->domains = NULL;
	st->ndomains = st->cap = 0;
	bl_gtid_set_free(st->set);
	st->set = NULL;
	st->known = false;
	st->flavor = FLAVOR_NONE;
	st->dirty = true;
}

void
bl_gtid_state_free(bl_gtid_state *st)
{
	if (st == NULL)
		return;
	state_clear(st);
	bl_buf_free(&st->text);
	free(st);
}

/* Index of domain, or where it would go (*found false). */
static size_t
domain_index(const bl_gtid_state *st, uint32_t domain, bool *found)
{
	size_t		lo = 0,
				hi = st->ndomains;

	while (lo < hi)
	{
		size_t		mid = lo + (hi - lo) / 2;

		if (st->domains[mid].domain == domain)
		{
			*found = true;
			return mid;
		}
		if (st->domains[mid].domain < domain)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

/* Set a domain's GTID; false when out of memory. */
static bool
domain_set(bl_gtid_state *st, const bl_maria_gtid *g)
{
	bool		found;
	size_t		i = domain_index(st, g->domain, &found);

	if (!found)
	{
		if (st->ndomains == st->cap)
		{
			size_t		cap = st->cap ? st->cap * 2 : 16;
			bl_maria_gtid *d = realloc(st->domains, sizeof(bl_maria_gtid) * cap);

			if (d == NULL)
				return false;
			st->domains = d;
			st->cap = cap;
		}
		memmove(&st->domains[i + 1], &st->domains[i],
				sizeof(bl_maria_gtid) * (st->ndomains - i));
		st->ndomains++;
	}
	st->domains[i] = *g;
	st->dirty = true;
	return true;
}

/* A MariaDB list as the whole state (one GTID per domain). */
static int
load_maria(bl_gtid_state *st, const char *text, size_t len, bl_error *err)
{
	bl_maria_gtid *list;
	size_t		n;

	if (bl_maria_gtid_list_parse(text, len, &list, &n, err) != 0)
		return -1;
	for (size_t i = 0; i < n; i++)
	{
		bool		found;

		(void) domain_index(st, list[i].domain, &found);
		if (found)
		{
			uint32_t	domain = list[i].domain;

			free(list);
			state_clear(st);
			return bl_error_set(err, BL_ERR_UNSUPPORTED,
								"invalid MariaDB GTID state: domain %u appears twice", domain);
		}
		if (!domain_set(st, &list[i]))
		{
			free(list);
			state_clear(st);
			return bl_error_set(err, BL_ERR_NOMEM, "out of memory");
		}
	}
	free(list);
	st->flavor = FLAVOR_MARIADB;
	st->known = true;
	return 0;
}

int
bl_gtid_state_load(bl_gtid_state *st, const char *text, bl_error *err)
{
	size_t		len;
	bool		blank = true;

	state_clear(st);
	if (text == NULL)
		return 0;
	len = strlen(text);
	for (size_t i = 0; i < len && blank; i++)
		blank = isspace((unsigned char) text[i]) != 0;
	if (blank)
	{
		st->known = true;
		return 0;
	}
	if (memchr(text, ':', len) == NULL)
		return load_maria(st, text, len, err);
	st->set = bl_gtid_set_parse(text, len, err);
	if (st->set == NULL)
		return -1;
	st->flavor = FLAVOR_MYSQL;
	st->known = true;
	return 0;
}

int
bl_gtid_state_commit_maria(bl_gtid_state *st, uint32_t domain, uint32_t server, uint64_t seq,
						   bl_error *err)
{
	bl_maria_gtid g = {domain, server, seq};

	if (st->flavor == FLAVOR_MYSQL)
		return bl_error_set(err, BL_ERR_UNSUPPORTED,
							"MariaDB GTID %u-%u-%llu in a MySQL GTID set", domain, server,
							(unsigned long long) seq);
	if (!domain_set(st, &g))
		return bl_error_set(err, BL_ERR_NOMEM, "out of memory");
	st->flavor = FLAVOR_MARIADB;
	st->known = true;
	return 0;
}

int
bl_gtid_state_commit_mysql(bl_gtid_state *st, const char *gtid, bl_error *err)
{
	if (st->flavor == FLAVOR_MARIADB)
		return bl_error_set(err, BL_ERR_UNSUPPORTED,
							"MySQL GTID %.100s in a MariaDB GTID state", gtid);
	if (!st->known)
		return 0;				/* the set before it is not known */
	if (st->set == NULL && (st->set = bl_gtid_set_create()) == NULL)
		return bl_error_set(err, BL_ERR_NOMEM, "out of memory");
	st->flavor = FLAVOR_MYSQL;
	st->dirty = true;
	return bl_gtid_set_add(st->set, gtid, err);
}

int
bl_gtid_state_maria_list(bl_gtid_state *st, const char *text, size_t len, bl_error *err)
{
	if (st->flavor == FLAVOR_MYSQL)
		return bl_error_set(err, BL_ERR_UNSUPPORTED, "a MariaDB GTID list in a MySQL GTID set");
	if (st->ndomains > 0)
		return 0;
	return load_maria(st, text, len, err);
}

int
bl_gtid_state_mysql_previous(bl_gtid_state *st, const char *text, size_t len,
							 bool from_file_start, bl_error *err)
{
	bl_gtid_set *prev;
	int			rc;

	if (st->flavor == FLAVOR_MARIADB)
		return bl_error_set(err, BL_ERR_UNSUPPORTED, "a MySQL GTID set in a MariaDB GTID state");
	if (!st->known && !from_file_start)
		return 0;
	prev = bl_gtid_set_parse(text, len, err);
	if (prev == NULL)
		return -1;
	if (st->set == NULL)
	{
		st->set = prev;
		rc = 0;
	}
	else
	{
		rc = bl_gtid_set_union(st->set, prev, err);
		bl_gtid_set_free(prev);
	}
	st->flavor = FLAVOR_MYSQL;
	st->known = true;
	st->dirty = true;
	return rc;
}

int
bl_gtid_state_text(bl_gtid_state *st, const char **text, size_t *len, bl_error *err)
{
	*text = NULL;
	*len = 0;
	if (!st->known)
		return 0;
	if (st->dirty)
	{
		bl_buf_reset(&st->text);
		bl_buf_putc(&st->text, '\0');	/* a buffer even when empty */
		bl_buf_reset(&st->text);
		if (st->flavor == FLAVOR_MYSQL)
			(void) bl_gtid_set_text(st->set, &st->text);
		else
			for (size_t i = 0; i < st->ndomains; i++)
				bl_buf_printf(&st->text, "%s%u-%u-%llu", i ? "," : "",
							  st->domains[i].domain, st->domains[i].server,
							  (unsigned long long) st->domains[i].seq);
		if (bl_buf_failed(&st->text))
		{
			st->text.oom = false;
			return bl_error_set(err, BL_ERR_NOMEM, "out of memory");
		}
		st->dirty = false;
	}
	*text = st->text.data;
	*len = st->text.len;
	return 0;
}

bool
bl_gtid_state_known(const bl_gtid_state *st)
{
	return st->known;
}
