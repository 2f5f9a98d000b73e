/*
 * bl_mysql_retention.c
 *	  How long the source keeps its binlogs (bl_mysql_source.h): the files
 *	  it still has, oldest first, and its expiry setting, read over a
 *	  connection of its own while the binlog stream runs on another.  The
 *	  worker compares them with the acknowledged position: the retention
 *	  headroom of binlog_fdw.status.
 */
#include "bl_mysql_conn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int
bl_mysql_list_files(MYSQL *conn, char ***files, int *nfiles, bl_error *err)
{
	MYSQL_RES  *res;
	MYSQL_ROW	row;
	char	  **out = NULL;
	int			n = 0;

	*files = NULL;
	*nfiles = 0;
	if (mysql_query(conn, "SHOW BINARY LOGS") != 0)
		return bl_mysql_fail(conn, err, "listing the source's binlogs");
	res = mysql_store_result(conn);
	if (res == NULL)
		return bl_mysql_fail(conn, err, "listing the source's binlogs");
	out = calloc(mysql_num_rows(res) + 1, sizeof(char *));
	if (out == NULL)
	{
		mysql_free_result(res);
		return bl_error_set(err, BL_ERR_NOMEM, "out of memory");
	}
	while ((row = mysql_fetch_row(res)) != NULL)
	{
		if (row[0] == NULL)
			continue;
		if ((out[n] = strdup(row[0])) == NULL)
		{
			mysql_free_result(res);
			bl_source_free_files(out, n);
			return bl_error_set(err, BL_ERR_NOMEM, "out of memory");
		}
		n++;
	}
	mysql_free_result(res);
	if (n == 0)
	{
		free(out);
		return bl_error_set(err, BL_ERR_UNSUPPORTED, "the source has no binlog files");
	}
	*files = out;
	*nfiles = n;
	return 0;
}

/*
 * binlog_expire_logs_seconds (MySQL 8, MariaDB 10.6+), else
 * expire_logs_days; binlog_expire_logs_auto_purge OFF (MySQL 8.0.29+)
 * turns expiry off.  Unknown variables count as not set.
 */
static int
expire_seconds_of(MYSQL *conn, int64_t *expire_seconds, bl_error *err)
{
	MYSQL_RES  *res;
	MYSQL_ROW	row;
	int64_t		seconds = 0;
	double		days = 0;
	bool		auto_purge = true;

	if (mysql_query(conn, "SHOW GLOBAL VARIABLES LIKE '%expire_logs%'") != 0 ||
		(res = mysql_store_result(conn)) == NULL)
		return bl_mysql_fail(conn, err, "reading the source's binlog expiry");
	while ((row = mysql_fetch_row(res)) != NULL)
	{
		if (row[0] == NULL || row[1] == NULL)
			continue;
		if (strcasecmp(row[0], "binlog_expire_logs_seconds") == 0)
			seconds = strtoll(row[1], NULL, 10);
		else if (strcasecmp(row[0], "expire_logs_days") == 0)
			days = strtod(row[1], NULL);
		else if (strcasecmp(row[0], "binlog_expire_logs_auto_purge") == 0)
			auto_purge = strcasecmp(row[1], "OFF") != 0 && strcmp(row[1], "0") != 0;
	}
	mysql_free_result(res);
	if (seconds <= 0 && days > 0)
		seconds = (int64_t) (days * 86400);
	*expire_seconds = auto_purge && seconds > 0 ? seconds : 0;
	return 0;
}

int
bl_source_retention(const bl_source_options *opts, char ***files, int *nfiles,
					int64_t *expire_seconds, bl_error *err)
{
	MYSQL	   *conn = bl_mysql_open(opts, err);
	int			rc;

	*files = NULL;
	*nfiles = 0;
	*expire_seconds = 0;
	if (conn == NULL)
		return -1;
	rc = bl_mysql_list_files(conn, files, nfiles, err);
	if (rc == 0 && (rc = expire_seconds_of(conn, expire_seconds, err)) != 0)
	{
		bl_source_free_files(*files, *nfiles);
		*files = NULL;
		*nfiles = 0;
	}
	mysql_close(conn);
	return rc;
}
