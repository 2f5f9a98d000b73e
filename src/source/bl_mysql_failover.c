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
#include "bl_gtid_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
bl_source_check_gtid_state(bl_source *src, const char *state, bl_error *err)
{
	MYSQL	   *conn = bl_source_mysql(src);
	const bl_source_options *opts = bl_source_get_options(src);
	const char *host = opts->host ? opts->host : "localhost";
	unsigned	port = opts->port ? opts->port : 3306;
	bl_maria_gtid *ours = NULL;
	bl_maria_gtid *theirs = NULL;
	char	   *binlog_pos = NULL;
	size_t		nours,
				ntheirs;
	int			rc = 0;

	if (!bl_source_get_info(src)->is_mariadb)
		return bl_error_set(err, BL_ERR_UNSUPPORTED,
							"host %s:%u is not MariaDB: following a source across hosts needs MariaDB GTIDs",
							host, port);
	state = state ? state : "";
	if (bl_maria_gtid_list_parse(state, strlen(state), &ours, &nours, err) != 0)
		return -1;
	if (bl_mysql_query_text(conn, "SELECT @@global.gtid_binlog_pos", &binlog_pos, err) != 0)
	{
		free(ours);
		return -1;
	}
	if (bl_maria_gtid_list_parse(binlog_pos, strlen(binlog_pos), &theirs, &ntheirs, err) != 0)
	{
		rc = bl_error_set(err, BL_ERR_UNSUPPORTED,
						  "host %s:%u reports an unreadable @@gtid_binlog_pos of %zu bytes \"%.200s\"",
						  host, port, strlen(binlog_pos), binlog_pos);
		goto done;
	}
	for (size_t i = 0; i < nours && rc == 0; i++)
	{
		const bl_maria_gtid *o = &ours[i];
		const bl_maria_gtid *t = NULL;

		/* a server lists each domain once: the first match is the one */
		for (size_t j = 0; j < ntheirs && t == NULL; j++)
			if (theirs[j].domain == o->domain)
				t = &theirs[j];
		if (t == NULL)
			rc = bl_error_set(err, BL_ERR_UNSUPPORTED,
							  "host %s:%u has no transaction of GTID domain %u in its binlog, but this source has read up to %u-%u-%llu: the host is behind or replicates another primary; waiting for a host that has it",
							  host, port, o->domain, o->domain, o->server,
							  (unsigned long long) o->seq);
		else if (t->seq < o->seq)
			rc = bl_error_set(err, BL_ERR_UNSUPPORTED,
							  "host %s:%u is behind: its binlog ends at GTID %u-%u-%llu, but this source has read up to %u-%u-%llu; waiting for a host that has it",
							  host, port, t->domain, t->server,
							  (unsigned long long) t->seq, o->domain, o->server,
							  (unsigned long long) o->seq);
		else if (t->seq == o->seq && t->server != o->server)
			rc = bl_error_set(err, BL_ERR_UNSUPPORTED,
							  "host %s:%u has diverged: its binlog has GTID %u-%u-%llu where this source read %u-%u-%llu (transactions this source delivered are not on it)",
							  host, port, t->domain, t->server,
							  (unsigned long long) t->seq, o->domain, o->server,
							  (unsigned long long) o->seq);
	}
done:
	free(ours);
	free(theirs);
	free(binlog_pos);
	return rc;
}

int
bl_source_gtid_at(bl_source *src, const char *file, uint64_t pos, char **out, bl_error *err)
{
	MYSQL	   *conn = bl_source_mysql(src);
	char		escaped[2 * BL_FILE_NAME_MAX + 1];
	char		sql[2 * BL_FILE_NAME_MAX + 64];
	size_t		len = strlen(file);

	*out = NULL;
	if (!bl_source_get_info(src)->is_mariadb)
	{
		*out = strdup("");
		return *out ? 0 : bl_error_set(err, BL_ERR_NOMEM, "out of memory");
	}
	if (len >= BL_FILE_NAME_MAX)
		return bl_error_set(err, BL_ERR_UNSUPPORTED,
							"binlog file name of %zu bytes is too long (at most %d bytes are supported)",
							len, BL_FILE_NAME_MAX - 1);
	mysql_real_escape_string(conn, escaped, file, (unsigned long) len);
	snprintf(sql, sizeof(sql), "SELECT BINLOG_GTID_POS('%s', %llu)", escaped,
			 (unsigned long long) pos);
	return bl_mysql_query_text(conn, sql, out, err);
}
