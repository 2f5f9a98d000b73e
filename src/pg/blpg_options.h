/*
 * blpg_options.h
 *	  Options of binlog_fdw's foreign servers (sources), user mappings and
 *	  foreign tables, validated by the FDW validator and read into a
 *	  blpg_source_config by the worker.
 */
#ifndef BLPG_OPTIONS_H
#define BLPG_OPTIONS_H

#include "postgres.h"

#include "blpg_hosts.h"

typedef struct blpg_source_config
{
	Oid			serverid;
	char	   *server_name;
	char	   *host;			/* the option's text */
	int			port;
	blpg_host  *hosts;			/* host parsed: nhosts entries, in order */
	int			nhosts;
	int64		server_id;
	char	   *start;			/* current | earliest | FILE:POS | gtid:SET */
	char	   *include;		/* regex on schema.table, NULL = all */
	char	   *exclude;
	double		heartbeat;		/* seconds */
	double		connect_timeout;
	char	   *ssl_mode;
	char	   *ssl_ca;
	char	   *ssl_cert;
	char	   *ssl_key;
	/* user mapping */
	char	   *user;
	char	   *password;
} blpg_source_config;

/* Read a server's options and the user mapping of userid. */
extern blpg_source_config *blpg_load_config(Oid serverid, Oid userid);

/* The validator's check of one option (also used by start()). */
extern void blpg_check_option(const char *name, const char *value, Oid catalog);

#endif							/* BLPG_OPTIONS_H */
