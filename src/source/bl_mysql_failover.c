/*
 * bl_mysql_failover.c
 *	  MariaDB GTID positions for following a source across the servers of
 *	  a replication topology (bl_mysql_source.h): whether a server holds
 *	  every transaction of a GTID state, and the GTID state at a binlog
 *	  position.
 *
 * A GTID state ("domain-server-seq" per replication domain, comma
 * separated) is where a replica is, independent of binlog file names.  A
 * server can serve a replica at that state only if its binlog reaches the
 * state in every domain; at the same sequence number it must hold the same
 * transaction (same originating server), else the histories diverged.
 * When the server is further ahead, whether the state's own transactions
 * are in its binlog is checked by the server itself when the dump starts
 * (gtid strict mode), which refuses a state it does not contain.
 */
#include "bl_mysql_conn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GTID_DOMAINS 256

typedef struct maria_gtid
{
	uint32_t	domain;
	uint32_t	server;
	uint64_t	seq;
} maria_gtid;

/* "d-s-n[,d-s-n...]" (spaces allowed); the count, or -1 if malformed. */
static int
parse_gtid_list(const char *text, maria_gtid *out, int max)
{
	const char *p = text;
	int			n = 0;

	for (;;)
	{
		unsigned long long v[3];

		while (*p == ' ' || *p == '\n' || *p == '\t')
			p++;
		if (*p == '\0')
			return n;
		for (int i = 0; i < 3; i++)
		{
			char	   *end;

			if (*p < '0' || *p > '9')
				return -1;
			v[i] = strtoull(p, &end, 10);
			p = end;
			if (i < 2 && *p++ != '-')
				return -1;
		}
		if (n == max || v[0] > UINT32_MAX || v[1] > UINT32_MAX)
			return -1;
		out[n].domain = (uint32_t) v[0];
		out[n].server = (uint32_t) v[1];
		out[n].seq = v[2];
		n++;
		while (*p == ' ' || *p == '\n' || *p == '\t')
			p++;
		if (*p == ',')
			p++;
		else if (*p != '\0')
			return -1;
	}
}

int
bl_source_check_gtid_state(bl_source *src, const char *state, bl_error *err)
{
	MYSQL	   *conn = bl_source_mysql(src);
	const bl_source_options *opts = bl_source_get_options(src);
	const char *host = opts->host ? opts->host : "localhost";
	unsigned	port = opts->port ? opts->port : 3306;
	maria_gtid	ours[MAX_GTID_DOMAINS];
	maria_gtid	theirs[MAX_GTID_DOMAINS];
	char		binlog_pos[8192];
	int			nours,
				ntheirs;

	if (!bl_source_get_info(src)->is_mariadb)
		return bl_error_set(err, BL_ERR_UNSUPPORTED,
							"host %s:%u is not MariaDB: following a source across hosts needs MariaDB GTIDs",
							host, port);
	nours = parse_gtid_list(state ? state : "", ours, MAX_GTID_DOMAINS);
	if (nours < 0)
		return bl_error_set(err, BL_ERR_UNSUPPORTED,
							"invalid MariaDB GTID state \"%.200s\"", state);
	if (bl_mysql_query_value(conn, "SELECT @@global.gtid_binlog_pos", binlog_pos,
							 sizeof(binlog_pos), err) != 0)
		return -1;
	ntheirs = parse_gtid_list(binlog_pos, theirs, MAX_GTID_DOMAINS);
	if (ntheirs < 0)
		return bl_error_set(err, BL_ERR_UNSUPPORTED,
							"host %s:%u reports an unreadable @@gtid_binlog_pos \"%.200s\"",
							host, port, binlog_pos);
	for (int i = 0; i < nours; i++)
	{
		const maria_gtid *o = &ours[i];
		const maria_gtid *t = NULL;

		for (int j = 0; j < ntheirs && t == NULL; j++)
			if (theirs[j].domain == o->domain)
				t = &theirs[j];
		if (t == NULL)
			return bl_error_set(err, BL_ERR_UNSUPPORTED,
								"host %s:%u has no transaction of GTID domain %u in its binlog, but this source has read up to %u-%u-%llu: the host is behind or replicates another primary; waiting for a host that has it",
								host, port, o->domain, o->domain, o->server,
								(unsigned long long) o->seq);
		if (t->seq < o->seq)
			return bl_error_set(err, BL_ERR_UNSUPPORTED,
								"host %s:%u is behind: its binlog ends at GTID %u-%u-%llu, but this source has read up to %u-%u-%llu; waiting for a host that has it",
								host, port, t->domain, t->server,
								(unsigned long long) t->seq, o->domain, o->server,
								(unsigned long long) o->seq);
		if (t->seq == o->seq && t->server != o->server)
			return bl_error_set(err, BL_ERR_UNSUPPORTED,
								"host %s:%u has diverged: its binlog has GTID %u-%u-%llu where this source read %u-%u-%llu (transactions this source delivered are not on it)",
								host, port, t->domain, t->server,
								(unsigned long long) t->seq, o->domain, o->server,
								(unsigned long long) o->seq);
	}
	return 0;
}

int
bl_source_gtid_at(bl_source *src, const char *file, uint64_t pos, char *out,
				  size_t outlen, bl_error *err)
{
	MYSQL	   *conn = bl_source_mysql(src);
	char		escaped[1024];
	char		sql[1200];
	size_t		len = strlen(file);

	out[0] = '\0';
	if (!bl_source_get_info(src)->is_mariadb)
		return 0;
	if (len * 2 + 1 > sizeof(escaped))
		return bl_error_set(err, BL_ERR_UNSUPPORTED, "binlog file name too long: %.100s", file);
	mysql_real_escape_string(conn, escaped, file, (unsigned long) len);
	snprintf(sql, sizeof(sql), "SELECT BINLOG_GTID_POS('%s', %llu)", escaped,
			 (unsigned long long) pos);
	return bl_mysql_query_value(conn, sql, out, outlen, err);
}
