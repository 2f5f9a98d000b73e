/*
 * bl_mysql_conn.h
 *	  Opening a client-library connection with the project's TLS modes and
 *	  timeouts; shared by the binlog stream and the schema cache.  Includes
 *	  the client library's header: never include this next to PostgreSQL's.
 */
#ifndef BL_MYSQL_CONN_H
#define BL_MYSQL_CONN_H

#include "bl_mysql_source.h"

#include <mysql.h>

/* Connect; on failure fill err (naming host, port and the TLS mode). */
extern MYSQL *bl_mysql_open(const bl_source_options *opts, bl_error *err);

/* Error text of the last call on conn, as err. */
extern int	bl_mysql_fail(MYSQL *conn, bl_error *err, const char *what);

/* First column of the first row of a query, copied to out ("" if none). */
extern int	bl_mysql_query_value(MYSQL *conn, const char *sql, char *out,
								 size_t outlen, bl_error *err);

/*
 * The same, of any length: *out is malloc'd ("" if none; free() it), for
 * values a user controls the size of (GTID states).
 */
extern int	bl_mysql_query_text(MYSQL *conn, const char *sql, char **out, bl_error *err);

/*
 * Copy a name the server sent (a binlog file name) into out, or fail
 * naming what it is when it does not fit: never a cut name.
 */
extern int	bl_mysql_copy_name(char *out, size_t outlen, const char *name, size_t len,
							   const char *what, bl_error *err);

/*
 * A schema cache reading over conn, which stays the caller's (no
 * reconnect; bl_schema_cache_destroy leaves it open): a snapshot reads
 * definitions inside its own transaction.
 */
extern bl_schema_cache *bl_schema_cache_on(MYSQL *conn, bl_error *err);

/* SHOW BINARY LOGS over conn: the files, oldest first (bl_source_free_files). */
extern int	bl_mysql_list_files(MYSQL *conn, char ***files, int *nfiles, bl_error *err);

/* The connection and options of a source (bl_mysql_source.c). */
extern MYSQL *bl_source_mysql(bl_source *src);
extern const bl_source_options *bl_source_get_options(const bl_source *src);

#endif							/* BL_MYSQL_CONN_H */
