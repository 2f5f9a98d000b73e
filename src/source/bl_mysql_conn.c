/*
 * bl_mysql_conn.c
 *	  Client-library connections with TLS modes and timeouts (see
 *	  bl_mysql_conn.h).
 *
 * TLS modes, as libpq names them:
 *   disable      no TLS
 *   prefer       TLS if the server offers it, else plain (the default)
 *   require      TLS, certificate not checked
 *   verify-ca    TLS, certificate chain checked against ssl_ca
 *   verify-full  TLS, chain and host name checked
 */
#include "bl_mysql_conn.h"

#include <errmsg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * what is often the statement that failed: a long one is shortened (marked
 * "...") so that the server's error, the part that says what went wrong,
 * always fits in the message.
 */
#define BL_MYSQL_WHAT_MAX 160

int
bl_mysql_fail(MYSQL *conn, bl_error *err, const char *what)
{
	size_t		len = strlen(what);

	return bl_error_set(err, BL_ERR_IO, "%.*s%s: %s (MySQL error %u)",
						(int) (len > BL_MYSQL_WHAT_MAX ? BL_MYSQL_WHAT_MAX : len), what,
						len > BL_MYSQL_WHAT_MAX ? "..." : "",
						mysql_error(conn), mysql_errno(conn));
}

static MYSQL *
try_connect(const bl_source_options *opts, bool tls, bl_error *err)
{
	MYSQL	   *conn = mysql_init(NULL);
	unsigned int timeout = (unsigned int) (opts->connect_timeout > 0 ? opts->connect_timeout : 10);
	unsigned int rtimeout;
	double		hb = opts->heartbeat_seconds > 0 ? opts->heartbeat_seconds : 5;
	const char *mode = opts->ssl_mode ? opts->ssl_mode : "prefer";
	my_bool		yes = 1;
	my_bool		no = 0;
	unsigned int proto = MYSQL_PROTOCOL_TCP;

	if (conn == NULL)
	{
		bl_error_set(err, BL_ERR_NOMEM, "out of memory creating a client connection");
		return NULL;
	}
	rtimeout = (unsigned int) (opts->read_timeout > 0 ? opts->read_timeout : hb * 3 + 5);
	mysql_optionsv(conn, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
	mysql_optionsv(conn, MYSQL_OPT_READ_TIMEOUT, &rtimeout);
	mysql_optionsv(conn, MYSQL_OPT_WRITE_TIMEOUT, &rtimeout);
	mysql_optionsv(conn, MYSQL_OPT_PROTOCOL, &proto);
	mysql_optionsv(conn, MYSQL_SET_CHARSET_NAME, "utf8mb4");
	if (tls)
	{
		bool		verify = strcmp(mode, "verify-full") == 0;

		mysql_ssl_set(conn, opts->ssl_key, opts->ssl_cert, opts->ssl_ca, NULL, NULL);
		mysql_optionsv(conn, MYSQL_OPT_SSL_ENFORCE, &yes);
		mysql_optionsv(conn, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, verify ? &yes : &no);
	}
	if (mysql_real_connect(conn, opts->host, opts->user, opts->password, NULL,
						   opts->port ? opts->port : 3306, NULL, 0) == NULL)
	{
		char		how[600] = "";

		/* say what was verified against what: TLS errors alone are terse */
		if (tls)
			snprintf(how, sizeof(how), " with TLS (ssl_mode %s%s%s)", mode,
					 opts->ssl_ca && opts->ssl_ca[0] ? ", ssl_ca " : "",
					 opts->ssl_ca && opts->ssl_ca[0] ? opts->ssl_ca : "");
		bl_error_set(err, BL_ERR_IO, "could not connect to %s:%u as \"%s\"%s: %s (MySQL error %u)",
					 opts->host ? opts->host : "localhost", opts->port ? opts->port : 3306,
					 opts->user ? opts->user : "", how,
					 mysql_error(conn), mysql_errno(conn));
		mysql_close(conn);
		return NULL;
	}
	return conn;
}

MYSQL *
bl_mysql_open(const bl_source_options *opts, bl_error *err)
{
	const char *mode = opts->ssl_mode ? opts->ssl_mode : "prefer";
	MYSQL	   *conn;

	if (strcmp(mode, "disable") == 0)
		return try_connect(opts, false, err);
	if (strcmp(mode, "prefer") == 0)
	{
		conn = try_connect(opts, true, err);
		if (conn)
			return conn;
		return try_connect(opts, false, err);
	}
	if (strcmp(mode, "require") != 0 && strcmp(mode, "verify-ca") != 0 &&
		strcmp(mode, "verify-full") != 0)
	{
		bl_error_set(err, BL_ERR_UNSUPPORTED,
					 "invalid ssl_mode \"%s\" (valid: disable, prefer, require, verify-ca, verify-full)",
					 mode);
		return NULL;
	}
	if ((strcmp(mode, "verify-ca") == 0 || strcmp(mode, "verify-full") == 0) &&
		(opts->ssl_ca == NULL || opts->ssl_ca[0] == '\0'))
	{
		bl_error_set(err, BL_ERR_UNSUPPORTED,
					 "ssl_mode %s needs ssl_ca, the certificate authority to verify the server against",
					 mode);
		return NULL;
	}
	conn = try_connect(opts, true, err);
	/* the library connects in plain text to a server without TLS */
	if (conn && mysql_get_ssl_cipher(conn) == NULL)
	{
		bl_error_set(err, BL_ERR_IO, "server %s did not negotiate TLS although ssl_mode is %s",
					 opts->host ? opts->host : "localhost", mode);
		mysql_close(conn);
		return NULL;
	}
	return conn;
}

int
bl_mysql_query_value(MYSQL *conn, const char *sql, char *out, size_t outlen,
					 bl_error *err)
{
	MYSQL_RES  *res;
	MYSQL_ROW	row;

	out[0] = '\0';
	if (mysql_query(conn, sql) != 0)
		return bl_mysql_fail(conn, err, sql);
	res = mysql_store_result(conn);
	if (res == NULL)
		return mysql_field_count(conn) ? bl_mysql_fail(conn, err, sql) : 0;
	row = mysql_fetch_row(res);
	if (row && row[0])
		snprintf(out, outlen, "%s", row[0]);
	mysql_free_result(res);
	return 0;
}

int
bl_mysql_query_text(MYSQL *conn, const char *sql, char **out, bl_error *err)
{
	MYSQL_RES  *res;
	MYSQL_ROW	row;
	unsigned long *lengths;
	size_t		len = 0;
	const char *v = "";

	*out = NULL;
	if (mysql_query(conn, sql) != 0)
		return bl_mysql_fail(conn, err, sql);
	res = mysql_store_result(conn);
	if (res == NULL && mysql_field_count(conn))
		return bl_mysql_fail(conn, err, sql);
	row = res ? mysql_fetch_row(res) : NULL;
	lengths = row ? mysql_fetch_lengths(res) : NULL;
	if (row && row[0] && lengths)
	{
		v = row[0];
		len = lengths[0];
	}
	*out = malloc(len + 1);
	if (*out != NULL)
	{
		memcpy(*out, v, len);
		(*out)[len] = '\0';
	}
	if (res)
		mysql_free_result(res);
	if (*out == NULL)
		return bl_error_set(err, BL_ERR_NOMEM, "out of memory reading the result of %.100s", sql);
	return 0;
}

int
bl_mysql_copy_name(char *out, size_t outlen, const char *name, size_t len,
				   const char *what, bl_error *err)
{
	if (len >= outlen)
		return bl_error_set(err, BL_ERR_UNSUPPORTED,
							"%s of %zu bytes is too long (at most %zu bytes are supported): \"%.100s...\"",
							what, len, outlen - 1, name);
	memcpy(out, name, len);
	out[len] = '\0';
	return 0;
}
