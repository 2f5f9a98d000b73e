/*
 * base.h
 *	  What every PostgreSQL-side part of binlog_fdw uses (src/store,
 *	  src/worker, src/sql, src/apply and binlog_fdw.c): decoder errors as
 *	  ereports, the options of binlog_fdw's foreign servers, user mappings
 *	  and foreign tables, the host list of a source, and running SPI as the
 *	  owner of the extension's tables.  Below it are only the decoder and
 *	  the MySQL source (plain C, which never include this header).
 *
 * Files: errors.c, options.c, hosts.c, owner.c, tables.c.  No shared state.
 */
#ifndef BLPG_BASE_H
#define BLPG_BASE_H

#include "postgres.h"

#include "fmgr.h"
#include "foreign/foreign.h"
#include "nodes/parsenodes.h"

#include "bl_decoder.h"

/* ---- errors (errors.c) ---- */

/* Raise an ereport(elevel) for a decoder error, naming the source. */
extern void blpg_report_decoder_error(int elevel, const bl_error *err,
									  const char *source);

/* SQLSTATE for a decoder error class. */
extern int	blpg_errcode(bl_errcode code);

/* An error unless argument argno (of a function that is not STRICT) is set. */
extern void blpg_require_arg(FunctionCallInfo fcinfo, int argno, const char *what);

/* ---- the extension's tables (owner.c) ---- */

/*
 * Run fn(arg) in SPI with the privileges of the owner of the extension's
 * tables (source_state, table_mapping): roles granted the functions need no
 * privileges on those tables.  The queries fn runs must be fixed text.
 */
extern void blpg_run_as_owner(void (*fn) (void *), void *arg);

/* ---- the tables as a whole (tables.c) ---- */

/*
 * True while this database has the 0.1 layout of the tables (source_state
 * keyed by server OID, no started_sources): the library of 0.2 runs with
 * it until ALTER EXTENSION binlog_fdw UPDATE.
 */
extern bool blpg_tables_legacy(void);

/* A server renamed: its rows in every table take the new name (SPI). */
extern void blpg_tables_rename_server(const char *oldname, const char *newname);

/* ---- the replication origin of a source (origins.c) ---- */

/* "binlog_fdw_<database oid>_<server oid>" */
extern void blpg_origin_name(Oid dboid, Oid serverid, char *buf, size_t len);
/* Drop the origin of a server of this database (DROP SERVER). */
extern void blpg_origin_drop(Oid serverid);
/* Drop the origins of servers or databases that are gone (in a transaction). */
extern void blpg_origins_clean(void);

/* ---- the host list of a source (hosts.c) ---- */

#define BLPG_HOST_LEN		272		/* "host:port" of a source server */
#define BLPG_MAX_HOSTS		16

typedef struct blpg_host
{
	char	   *host;			/* name or address, without brackets */
	int			port;			/* the entry's port, or the default */
	char		label[BLPG_HOST_LEN];	/* host:port, [v6]:port (for messages) */
} blpg_host;

/*
 * Parse a "host" option value; entries without a port get default_port
 * (0: not known yet, as when the validator checks the option alone).
 * Bad forms and duplicate entries are errors naming the entry.  Returns the
 * number of hosts (1..BLPG_MAX_HOSTS), palloc'd in *hosts.
 */
extern int	blpg_hosts_parse(const char *value, int default_port, blpg_host **hosts);

/* ---- options (options.c) ---- */

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
	bool		lost_position_reload;	/* lost_position 'reload' */
	char	   *snapshot_lock;	/* NULL (the flavour's default), tables, global */
	int			snapshot_lock_timeout;	/* seconds */
	/* user mapping */
	char	   *user;
	char	   *password;
} blpg_source_config;

/*
 * A binlog_fdw source's server by name, which the current role may use
 * with mode (an error otherwise: unknown, another wrapper's, no privilege).
 */
extern ForeignServer *blpg_lookup_source(const char *name, AclMode mode);

/*
 * A background worker of the extension (bgworker.c): function in library
 * binlog_fdw, type "binlog_fdw <type>", name as given; a database
 * connection, started after recovery, never restarted by the postmaster.
 */
struct BackgroundWorker;
extern void blpg_bgworker_init(struct BackgroundWorker *bgw, const char *function,
							   const char *type, const char *name);

/* Read a server's options and the user mapping of userid. */
extern blpg_source_config *blpg_load_config(Oid serverid, Oid userid);

/* The validator's check of one option (also used by start()). */
extern void blpg_check_option(const char *name, const char *value, Oid catalog);

#endif							/* BLPG_BASE_H */
