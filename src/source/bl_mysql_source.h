/*
 * bl_mysql_source.h
 *	  A MySQL/MariaDB server as a binlog source: connection (with TLS),
 *	  the checks a replica needs, session setup, start-position resolution,
 *	  raw event streaming through the client library's replication API, and
 *	  table definitions from information_schema.
 *
 * Plain C: used by binlogcat and by the PostgreSQL background worker.  This
 * is the only part of the project that includes the client library's
 * headers (whose names clash with PostgreSQL's).
 */
#ifndef BL_MYSQL_SOURCE_H
#define BL_MYSQL_SOURCE_H

#include "bl_decoder.h"

typedef struct bl_source_options
{
	const char *host;
	unsigned	port;			/* 0 = 3306 */
	const char *user;
	const char *password;
	uint32_t	server_id;		/* our replica id */
	const char *start;			/* earliest | current | FILE:POS | gtid:SET */
	bool		until_end;		/* non-blocking dump: stop at the end */
	double		heartbeat_seconds;	/* 0 = default 5 s; < 0 = off */
	double		connect_timeout;	/* seconds, 0 = 10 */
	double		read_timeout;	/* seconds, 0 = 3 heartbeat periods */
	const char *ssl_mode;		/* disable|prefer|require|verify-ca|verify-full */
	const char *ssl_ca;
	const char *ssl_cert;
	const char *ssl_key;
	bool		flush_each;		/* (binlogcat) flush output per event */
	/*
	 * How a copy's snapshot gets its binlog position (bl_mysql_snapshot.h):
	 * NULL (MariaDB: binlog_snapshot_file/position, no lock; MySQL:
	 * "tables"), "tables" (LOCK TABLES ... READ of the copied tables on a
	 * second connection) or "global" (FLUSH TABLES WITH READ LOCK).
	 */
	const char *snapshot_lock;
	unsigned	snapshot_lock_timeout;	/* seconds the lock may wait, 0 = 30 */
} bl_source_options;

typedef struct bl_source bl_source;

/* What bl_source_connect found out about the server. */
typedef struct bl_source_info
{
	char		version[128];	/* @@version */
	bool		is_mariadb;
	uint32_t	server_id;		/* @@server_id */
	char		binlog_format[32];
	char		binlog_row_image[32];
	char		binlog_row_metadata[32];
	char		checksum[32];	/* @@binlog_checksum */
	bool		gtid_mode;		/* MySQL gtid_mode=ON or MariaDB (always) */
	char		ssl_cipher[128];	/* "" = not encrypted */
} bl_source_info;

extern void bl_source_options_init(bl_source_options *opts);

/* Connect (TLS per ssl_mode) and read the server's settings. */
extern bl_source *bl_source_connect(const bl_source_options *opts, bl_error *err);
extern const bl_source_info *bl_source_get_info(const bl_source *src);

/*
 * The checks a CDC replica needs, each failing with a message that names
 * the fix: binlog enabled, binlog_format=ROW, replication privileges,
 * SELECT when column names come from information_schema (binlog_row_metadata
 * not FULL), our server_id differing from the source's and from its other
 * replicas.
 */
extern int	bl_source_check(bl_source *src, bl_error *err);

/*
 * The columns of the server's tables whose default is computed when a row
 * is inserted (CURRENT_TIMESTAMP, expressions such as UUID()), by
 * information_schema: fn(arg, schema, table, column, default text) each.
 * With a row image that is not FULL, MySQL leaves out of an insert's image
 * the columns the statement did not give (MariaDB logs these columns).
 */
typedef void (*bl_source_default_fn) (void *arg, const char *schema, const char *table,
									  const char *column, const char *default_text);
extern int	bl_source_function_defaults(bl_source *src, bl_source_default_fn fn, void *arg,
										bl_error *err);

/*
 * Resolve opts->start, set the session variables of a replica (checksum,
 * capability, heartbeat, timeouts, GTID state) and send the dump command.
 * Tells the decoder the checksum and the first file name.
 */
extern int	bl_source_start_dump(bl_source *src, bl_decoder *dec, bl_error *err);

/*
 * Start at an explicit file/position, or at a GTID state, instead of
 * opts->start (used by the worker when it resumes).  gtid: a MariaDB GTID
 * list (@slave_connect_state, strict mode), or on MySQL a GTID set, sent
 * encoded with COM_BINLOG_DUMP_GTID (gtid_mode must be ON): the server
 * sends every transaction not in the set, from the newest binlog file whose
 * PREVIOUS_GTIDS the set holds.
 */
extern int	bl_source_start_dump_at(bl_source *src, bl_decoder *dec,
									const char *file, uint64_t pos,
									const char *gtid, bl_error *err);

/*
 * Next raw event (header + body + checksum).  Returns 1 with an event, 0
 * at the end of the binlog in until_end mode, -1 on error (network errors
 * are BL_ERR_IO).  *pos is the event's position in its file; the decoder's
 * file name is kept current across ROTATE events.
 */
extern int	bl_source_next(bl_source *src, bl_decoder *dec,
						   const uint8_t **data, size_t *len, uint64_t *pos,
						   bl_error *err);

/* Current binlog file and the position after the last event returned. */
extern const char *bl_source_file(const bl_source *src);
extern uint64_t bl_source_position(const bl_source *src);

/*
 * The server's current end of binlog ("SHOW MASTER STATUS"); gtid (may be
 * NULL): MariaDB's @@gtid_binlog_pos or MySQL's Executed_Gtid_Set, of any
 * length, malloc'd (free() it).
 */
extern int	bl_source_current_position(bl_source *src, char *file, size_t filelen,
									   uint64_t *pos, char **gtid, bl_error *err);

/* The oldest binlog file the server still has ("SHOW BINARY LOGS"). */
extern int	bl_source_first_file(bl_source *src, char *file, size_t filelen,
								 bl_error *err);

/* All binlog files of the server, oldest first (free with bl_source_free_files). */
extern int	bl_source_list_files(bl_source *src, char ***files, int *nfiles,
								 bl_error *err);
extern void bl_source_free_files(char **files, int nfiles);

/*
 * The source's binlog retention now, over a connection of its own (the
 * stream's is busy): its files oldest first (bl_source_free_files) and how
 * long it keeps them, in seconds (0: until a PURGE).
 */
extern int	bl_source_retention(const bl_source_options *opts, char ***files, int *nfiles,
								int64_t *expire_seconds, bl_error *err);

/*
 * Start positions found by reading the source's binlogs
 * (bl_mysql_locate.c), for a replica that has no file:position:
 *
 * bl_source_locate_time: the first transaction whose binlog timestamp is at
 * or after unix_time (seconds).  bl_source_locate_gtid_set: the first
 * transaction whose GTID is not in a MySQL GTID set (what a replica that
 * executed the set still needs).  Either gives the end of the binlog when
 * no transaction qualifies.  Each opens its own connections with opts (the
 * dump ends at the end of the binlog); call them before starting the dump.
 */
extern int	bl_source_locate_time(const bl_source_options *opts, int64_t unix_time,
								  char *file, size_t filelen, uint64_t *pos,
								  bl_error *err);
extern int	bl_source_locate_gtid_set(const bl_source_options *opts,
									  const char *gtid_set, char *file,
									  size_t filelen, uint64_t *pos,
									  bl_error *err);

/*
 * MySQL: the GTID set executed at file:pos (a transaction boundary), read
 * from the file: its PREVIOUS_GTIDS and every GTID before pos, over a
 * non-blocking dump of its own with opts' server_id (a copy passes its
 * source's: the server ends another dump with the same id).
 * "" when the file has transactions without GTIDs.  Malloc'd into *out.
 */
extern int	bl_source_gtid_set_at(const bl_source_options *opts, const char *file,
								  uint64_t pos, char **out, bl_error *err);

/*
 * Following a source across the servers of a MariaDB or MySQL replication
 * topology (bl_mysql_failover.c), before the dump:
 *
 * bl_source_check_gtid_state: MariaDB: does the server's binlog reach a GTID
 * state ("domain-server-seq,...") in every domain, with the same
 * transaction where it is at the same sequence number?  Whether the
 * state's transactions themselves are in its binlog the server checks when
 * the dump starts at that state (strict mode).  MySQL: has the server
 * executed every GTID of the set and open_gtid (the transaction a resume
 * continues, may be NULL), and does its binlog still hold every GTID not
 * in the set (@@gtid_purged within the set)?  -1 with a message naming the
 * host and the GTIDs if not (behind, diverged, or purged).
 *
 * bl_source_gtid_purged: MySQL's @@gtid_purged (the transactions no binlog
 * file holds: the GTID set at the start of the oldest file), malloc'd.
 *
 * bl_source_gtid_at: the GTID state at a binlog position
 * (BINLOG_GTID_POS()), of any length, malloc'd into *out (free() it); ""
 * on MySQL or when the server cannot tell.
 */
extern int	bl_source_check_gtid_state(bl_source *src, const char *state,
									   const char *open_gtid, bl_error *err);
extern int	bl_source_gtid_purged(bl_source *src, char **out, bl_error *err);
extern int	bl_source_gtid_at(bl_source *src, const char *file, uint64_t pos,
							  char **out, bl_error *err);

/* Run a statement on the source's connection (not during a dump). */
extern int	bl_source_exec(bl_source *src, const char *sql, bl_error *err);

/* Thread id of the connection on the server (for KILL in tests). */
extern unsigned long bl_source_thread_id(const bl_source *src);

extern void bl_source_close(bl_source *src);

/*
 * Every statement of the binlog from file:pos (or, with file "", from a
 * MariaDB GTID state) to its current end that is not BEGIN/COMMIT:
 * fn(arg, db, sql, sqllen, file, pos) each; a non-zero return stops the
 * scan.  Its own connection with opts; call it before starting the dump.
 */
typedef int (*bl_source_statement_fn) (void *arg, const char *db, const char *sql,
									   size_t sqllen, const char *file, uint64_t pos);
extern int	bl_source_scan_statements(const bl_source_options *opts, const char *file,
									  uint64_t pos, const char *gtid_state,
									  bl_source_statement_fn fn, void *arg, bl_error *err);

/*
 * Table definitions from information_schema over a side connection, cached
 * per table; usable as a bl_decoder schema provider.
 */
typedef struct bl_schema_cache bl_schema_cache;

extern bl_schema_cache *bl_schema_cache_create(const bl_source_options *opts,
											   bl_error *err);
extern const bl_schema_table *bl_schema_cache_lookup(void *cache,
													 const char *schema,
													 const char *table);
/* Forget cached definitions (table NULL: all of schema; schema NULL: all). */
extern void bl_schema_cache_invalidate(bl_schema_cache *cache,
									   const char *schema, const char *table);
extern const char *bl_schema_cache_error(const bl_schema_cache *cache);

/*
 * The base tables of the source (system schemas left out) with their
 * default character sets, then the databases with theirs:
 * table_fn(arg, schema, table, charset) each, then db_fn(arg, schema, "",
 * charset) each.
 */
typedef void (*bl_schema_table_fn) (void *arg, const char *schema, const char *table,
									const char *charset);
extern int	bl_schema_cache_list(bl_schema_cache *cache, bl_schema_table_fn table_fn,
								 bl_schema_table_fn db_fn, void *arg, bl_error *err);
/* The default character set of one table ("" if it has none). */
extern int	bl_schema_cache_table_charset(bl_schema_cache *cache, const char *schema,
										  const char *table, char *out, size_t outlen,
										  bl_error *err);
extern void bl_schema_cache_destroy(bl_schema_cache *cache);

#endif							/* BL_MYSQL_SOURCE_H */
