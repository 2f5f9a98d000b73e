/*
 * bl_mysql_failover.c
 *	  GTID positions for following a source across the servers of a
 *	  replication topology (bl_mysql_source.h): whether a server holds
 *	  every transaction of a GTID state (MariaDB) or GTID set (MySQL), the
 *	  GTID state at a binlog position (MariaDB) and MySQL's purged set.
 *
 * A MySQL GTID set names every transaction a replica has, wherever it
 * came from.  A server can serve a replica at that set if it executed
 * every GTID of it (else it is behind, or the replica read transactions
 * this server never had: diverged) and its binlog still holds every
 * transaction outside the set (@@gtid_purged within the set).  The server
 * then sends exactly the transactions outside the set (COM_BINLOG_DUMP_GTID).
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
#include "bl_gtid_set.h"
#include "bl_gtid_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A MySQL GTID set variable of the server, parsed; NULL with err. */
static bl_gtid_set *
server_set(bl_source *src, const char *sql, const char *what, bl_error *err)
{
	const bl_source_options *opts = bl_source_get_options(src);
	char	   *text = NULL;
	bl_gtid_set *set;

	if (bl_mysql_query_text(bl_source_mysql(src), sql, &text, err) != 0)
		return NULL;
	set = bl_gtid_set_parse(text, strlen(text), err);
	if (set == NULL)
		bl_error_set(err, BL_ERR_UNSUPPORTED,
					 "host %s:%u reports an unreadable %s of %zu bytes \"%.200s\"",
					 opts->host ? opts->host : "localhost", opts->port ? opts->port : 3306,
					 what, strlen(text), text);
	free(text);
	return set;
}

static int
check_mysql_set(bl_source *src, const char *state, const char *open_gtid, bl_error *err)
{
	const bl_source_options *opts = bl_source_get_options(src);
	const char *host = opts->host ? opts->host : "localhost";
	unsigned	port = opts->port ? opts->port : 3306;
	bl_gtid_set *ours;
	bl_gtid_set *executed = NULL;
	bl_gtid_set *purged = NULL;
	bl_buf		missing;
	int			rc = 0;

	if (!bl_source_get_info(src)->gtid_mode)
		return bl_error_set(err, BL_ERR_UNSUPPORTED,
							"host %s:%u has gtid_mode OFF: following a MySQL source across hosts needs gtid_mode=ON on every host",
							host, port);
	ours = bl_gtid_set_parse(state, strlen(state), err);
	if (ours == NULL)
		return -1;
	bl_buf_init(&missing);
	if (open_gtid && open_gtid[0] && bl_gtid_set_add(ours, open_gtid, err) != 0)
		rc = -1;
	else if ((executed = server_set(src, "SELECT @@global.gtid_executed", "@@gtid_executed", err)) == NULL ||
			 (purged = server_set(src, "SELECT @@global.gtid_purged", "@@gtid_purged", err)) == NULL)
		rc = -1;
	else if (!bl_gtid_set_subset(ours, executed))
	{
		bl_gtid_set_first_missing(ours, executed, &missing);
		bl_buf_putc(&missing, '\0');
		rc = bl_error_set(err, BL_ERR_UNSUPPORTED,
						  "host %s:%u has not executed GTID %s, which this source has read: the host is behind, or its history diverged; waiting for a host that has it",
						  host, port, missing.data ? missing.data : "?");
	}
	else if (!bl_gtid_set_subset(purged, ours))
	{
		bl_gtid_set_first_missing(purged, ours, &missing);
		bl_buf_putc(&missing, '\0');
		rc = bl_error_set(err, BL_ERR_UNSUPPORTED,
						  "host %s:%u has purged GTID %s from its binlog, but this source has not read it yet; trying another host",
						  host, port, missing.data ? missing.data : "?");
	}
	bl_buf_free(&missing);
	bl_gtid_set_free(ours);
	if (executed)
		bl_gtid_set_free(executed);
	if (purged)
		bl_gtid_set_free(purged);
	return rc;
}

int
bl_source_gtid_purged(bl_source *src, char **out, bl_error *err)
{
	*out = NULL;
	return bl_mysql_query_text(bl_source_mysql(src), "SELECT @@global.gtid_purged", out, err);
}

int
bl_source_check_gtid_state(bl_source *src, const char *state, const char *open_gtid,
						   bl_error *err)
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

	state = state ? state : "";
	if (!bl_source_get_info(src)->is_mariadb)
		return check_mysql_set(src, state, open_gtid, err);
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
