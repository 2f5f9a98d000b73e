/*
 * hosts.c
 *	  Parsing of the "host" server option (see base.h): a host, or a
 *	  comma-separated list host[:port],... of servers that replicate each
 *	  other, for the worker's failover.
 *
 * Entries: a name or IPv4 address ("db1", "10.0.0.5:3307"), an IPv6
 * address alone ("::1") or in brackets with or without a port
 * ("[fe80::1%eth0]:3307").  Spaces around entries are ignored.  The same
 * host and port twice is an error (it would be tried twice per round).
 */
#include "base/base.h"

#define HOSTS_HINT "Expected a host name or address, or a comma-separated list host1[:port],host2[:port],... (an IPv6 address followed by a port goes in brackets: [::1]:3307)."

static void
bad_entry(const char *value, int n, const char *entry, const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
			 errmsg("invalid value for option \"host\": \"%s\"", value),
			 errdetail("Entry %d (\"%s\") %s.", n, entry, why),
			 errhint(HOSTS_HINT)));
}

static bool
name_char(char c)
{
	return isalnum((unsigned char) c) || c == '.' || c == '-' || c == '_';
}

static bool
ipv6_char(char c)
{
	/* hex digits, colons, an embedded IPv4 and a zone ("%eth0") */
	return isalnum((unsigned char) c) || c == ':' || c == '.' || c == '%' ||
		c == '-' || c == '_';
}

/* Port text to number; -1 if not 1..65535. */
static int
parse_port(const char *s)
{
	long		v = 0;

	if (*s == '\0')
		return -1;
	for (; *s; s++)
	{
		if (!isdigit((unsigned char) *s))
			return -1;
		v = v * 10 + (*s - '0');
		if (v > 65535)
			return -1;
	}
	return v >= 1 ? (int) v : -1;
}

/* One entry (trimmed, non-empty) into *h. */
static void
parse_entry(const char *value, int n, char *entry, int default_port, blpg_host *h)
{
	char	   *host = entry;
	char	   *port = NULL;
	bool		v6 = false;

	if (entry[0] == '[')
	{
		char	   *close = strchr(entry, ']');

		if (close == NULL)
			bad_entry(value, n, entry, "has no closing bracket");
		*close = '\0';
		host = entry + 1;
		if (close[1] == ':')
			port = close + 2;
		else if (close[1] != '\0')
			bad_entry(value, n, psprintf("[%s]%s", host, close + 1),
					  "has text after the closing bracket that is not a port");
		if (host[0] == '\0' || strchr(host, ':') == NULL)
			bad_entry(value, n, psprintf("[%s]", host),
					  "has no IPv6 address in its brackets");
		v6 = true;
	}
	else
	{
		char	   *colon = strchr(entry, ':');

		if (colon && strchr(colon + 1, ':'))
			v6 = true;			/* an IPv6 address without port */
		else if (colon)
		{
			*colon = '\0';
			port = colon + 1;
			if (host[0] == '\0')
				bad_entry(value, n, psprintf(":%s", port), "has no host before the port");
		}
	}
	for (const char *p = host; *p; p++)
		if (!(v6 ? ipv6_char(*p) : name_char(*p)))
			bad_entry(value, n, host,
					  psprintf("has the character \"%c\", which is not allowed in a host name or address", *p));
	if (strlen(host) > 255)
		bad_entry(value, n, psprintf("%.40s...", host), "is longer than 255 characters");
	h->host = pstrdup(host);
	h->port = default_port;
	if (port != NULL)
	{
		h->port = parse_port(port);
		if (h->port < 0)
			bad_entry(value, n, psprintf("%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", port),
					  "has an invalid port (expected 1 to 65535)");
	}
	/* (the validator checks a host option without knowing the port) */
	if (h->port > 0)
		snprintf(h->label, sizeof(h->label), "%s%s%s:%d", v6 ? "[" : "", host,
				 v6 ? "]" : "", h->port);
	else
		snprintf(h->label, sizeof(h->label), "%s%s%s", v6 ? "[" : "", host, v6 ? "]" : "");
}

int
blpg_hosts_parse(const char *value, int default_port, blpg_host **hosts)
{
	blpg_host  *out = palloc0(sizeof(blpg_host) * BLPG_MAX_HOSTS);
	char	   *copy = pstrdup(value);
	char	   *p = copy;
	int			n = 0;

	for (;;)
	{
		char	   *comma = strchr(p, ',');
		char	   *end;

		if (comma)
			*comma = '\0';
		while (isspace((unsigned char) *p))
			p++;
		end = p + strlen(p);
		while (end > p && isspace((unsigned char) end[-1]))
			*--end = '\0';
		if (*p == '\0')
		{
			if (n == 0 && comma == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
						 errmsg("invalid value for option \"host\": \"%s\"", value),
						 errhint(HOSTS_HINT)));
			bad_entry(value, n + 1, "", "is empty");
		}
		if (n == BLPG_MAX_HOSTS)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
					 errmsg("invalid value for option \"host\": \"%s\"", value),
					 errdetail("A source can have at most %d hosts.", BLPG_MAX_HOSTS)));
		parse_entry(value, n + 1, p, default_port, &out[n]);
		for (int i = 0; i < n; i++)
			if (out[i].port == out[n].port && pg_strcasecmp(out[i].host, out[n].host) == 0)
				bad_entry(value, n + 1, out[n].label,
						  psprintf("is the same server as entry %d", i + 1));
		n++;
		if (comma == NULL)
			break;
		p = comma + 1;
	}
	pfree(copy);
	*hosts = out;
	return n;
}
