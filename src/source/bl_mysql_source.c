/*
 * bl_mysql_source.c
 *	  A server's binlog over the replication protocol (bl_mysql_source.h):
 *	  server checks, session setup, start positions and the event stream
 *	  through Connector/C's mariadb_rpl_* API.  Decoding is ours; the
 *	  library only frames the events.
 */
#include "bl_mysql_conn.h"

#include "bl_gtid_set.h"

#include <mariadb_rpl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

struct bl_source
{
	bl_source_options opts;
	MYSQL	   *conn;
	MARIADB_RPL *rpl;
	bl_source_info info;
	char		file[512];		/* binlog file of the next event */
	uint64_t	position;		/* position after the last event */
	char		pending_file[512];	/* set by a real ROTATE: applies to the
									 * events after it */
};

void
bl_source_options_init(bl_source_options *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->port = 3306;
	opts->start = "earliest";
}

const bl_source_info *
bl_source_get_info(const bl_source *src)
{
	return &src->info;
}

const char *
bl_source_file(const bl_source *src)
{
	return src->file;
}

uint64_t
bl_source_position(const bl_source *src)
{
	return src->position;
}

MYSQL *
bl_source_mysql(bl_source *src)
{
	return src->conn;
}

const bl_source_options *
bl_source_get_options(const bl_source *src)
{
	return &src->opts;
}

unsigned long
bl_source_thread_id(const bl_source *src)
{
	return mysql_thread_id(src->conn);
}

int
bl_source_exec(bl_source *src, const char *sql, bl_error *err)
{
	if (mysql_query(src->conn, sql) != 0)
		return bl_mysql_fail(src->conn, err, sql);
	/* discard any result */
	do
	{
		MYSQL_RES  *res = mysql_store_result(src->conn);

		if (res)
			mysql_free_result(res);
	} while (mysql_next_result(src->conn) == 0);
	return 0;
}

static int
read_info(bl_source *src, bl_error *err)
{
	MYSQL_RES  *res;
	MYSQL_ROW	row;
	bl_source_info *info = &src->info;
	char		value[64];
	const char *cipher;

	if (mysql_query(src->conn,
					"SELECT @@version, @@server_id, @@global.log_bin, "
					"@@global.binlog_format, @@global.binlog_row_image, "
					"@@global.binlog_checksum") != 0)
		return bl_mysql_fail(src->conn, err, "reading the source's settings");
	res = mysql_store_result(src->conn);
	if (res == NULL || (row = mysql_fetch_row(res)) == NULL)
	{
		if (res)
			mysql_free_result(res);
		return bl_mysql_fail(src->conn, err, "reading the source's settings");
	}
	snprintf(info->version, sizeof(info->version), "%s", row[0] ? row[0] : "");
	info->server_id = row[1] ? (uint32_t) strtoul(row[1], NULL, 10) : 0;
	if (row[2] == NULL || strcmp(row[2], "1") != 0)
		info->binlog_format[0] = '\0';	/* binlog disabled */
	else
		snprintf(info->binlog_format, sizeof(info->binlog_format), "%s", row[3] ? row[3] : "");
	snprintf(info->binlog_row_image, sizeof(info->binlog_row_image), "%s", row[4] ? row[4] : "");
	snprintf(info->checksum, sizeof(info->checksum), "%s", row[5] ? row[5] : "NONE");
	mysql_free_result(res);
	info->is_mariadb = strstr(info->version, "MariaDB") != NULL;

	/* binlog_row_metadata: MySQL 8.0.1+ and MariaDB 10.5+ */
	if (mysql_query(src->conn, "SELECT @@global.binlog_row_metadata") == 0)
	{
		res = mysql_store_result(src->conn);
		if (res && (row = mysql_fetch_row(res)) && row[0])
			snprintf(info->binlog_row_metadata, sizeof(info->binlog_row_metadata), "%s", row[0]);
		if (res)
			mysql_free_result(res);
	}
	if (info->is_mariadb)
		info->gtid_mode = true;
	else if (bl_mysql_query_value(src->conn, "SELECT @@global.gtid_mode", value,
								  sizeof(value), NULL) == 0)
		info->gtid_mode = strcasecmp(value, "ON") == 0;
	cipher = mysql_get_ssl_cipher(src->conn);
	snprintf(info->ssl_cipher, sizeof(info->ssl_cipher), "%s", cipher ? cipher : "");
	return 0;
}

bl_source *
bl_source_connect(const bl_source_options *opts, bl_error *err)
{
	bl_source  *src = calloc(1, sizeof(bl_source));

	if (src == NULL)
	{
		bl_error_set(err, BL_ERR_NOMEM, "out of memory");
		return NULL;
	}
	src->opts = *opts;
	src->conn = bl_mysql_open(opts, err);
	if (src->conn == NULL || read_info(src, err) != 0)
	{
		bl_source_close(src);
		return NULL;
	}
	return src;
}

/* Does SHOW GRANTS give the current user a global privilege? */
static bool
has_global_privilege(MYSQL *conn, const char *const *names)
{
	MYSQL_RES  *res;
	MYSQL_ROW	row;
	bool		found = false;

	if (mysql_query(conn, "SHOW GRANTS FOR CURRENT_USER()") != 0)
		return true;			/* cannot tell: let the dump itself fail */
	res = mysql_store_result(conn);
	if (res == NULL)
		return true;
	while (!found && (row = mysql_fetch_row(res)))
	{
		const char *g = row[0];

		if (g == NULL || strstr(g, " ON *.* ") == NULL)
			continue;
		if (strstr(g, "ALL PRIVILEGES"))
			found = true;
		for (int i = 0; !found && names[i]; i++)
			if (strstr(g, names[i]))
				found = true;
	}
	mysql_free_result(res);
	return found;
}

/*
 * Does SHOW GRANTS give the current user SELECT anywhere (globally, on a
 * database, a table or columns)?  information_schema shows a table's
 * columns only to an account with a privilege on it.
 */
static bool
has_some_select(MYSQL *conn)
{
	MYSQL_RES  *res;
	MYSQL_ROW	row;
	bool		found = false;

	if (mysql_query(conn, "SHOW GRANTS FOR CURRENT_USER()") != 0)
		return true;			/* cannot tell */
	res = mysql_store_result(conn);
	if (res == NULL)
		return true;
	while (!found && (row = mysql_fetch_row(res)))
	{
		const char *g = row[0];
		const char *on = g ? strstr(g, " ON ") : NULL;
		const char *sel;

		if (on == NULL || strncmp(g, "GRANT ", 6) != 0)
			continue;
		if ((sel = strstr(g, "ALL PRIVILEGES")) != NULL && sel < on)
			found = true;
		for (sel = g + 6; !found && (sel = strstr(sel, "SELECT")) != NULL && sel < on; sel += 6)
			if ((sel[-1] == ' ' || sel[-1] == ',') &&
				(sel[6] == ',' || sel[6] == ' ' || sel[6] == '('))
				found = true;
	}
	mysql_free_result(res);
	return found;
}

int
bl_source_check(bl_source *src, bl_error *err)
{
	static const char *const repl_slave[] = {"REPLICATION SLAVE", NULL};
	static const char *const repl_client[] = {"REPLICATION CLIENT", "BINLOG MONITOR", "SUPER", NULL};
	const bl_source_info *info = &src->info;
	const char *user = src->opts.user ? src->opts.user : "";
	MYSQL_RES  *res;
	MYSQL_ROW	row;

	if (info->binlog_format[0] == '\0')
		return bl_error_set(err, BL_ERR_UNSUPPORTED,
							"binary logging is disabled on the source %s; start the server with log_bin (--log-bin=mysql-bin) and binlog_format=ROW",
							info->version);
	if (strcasecmp(info->binlog_format, "ROW") != 0)
		return bl_error_set(err, BL_ERR_UNSUPPORTED,
							"the source's binlog_format is %s, but change data capture needs ROW; set binlog_format=ROW in the server's configuration (SET GLOBAL binlog_format='ROW' affects new sessions only)",
							info->binlog_format);
	if (!has_global_privilege(src->conn, repl_slave))
		return bl_error_set(err, BL_ERR_UNSUPPORTED,
							"the source account \"%s\" lacks the REPLICATION SLAVE privilege; grant it with: GRANT REPLICATION SLAVE, %s ON *.* TO '%s'@'%%'",
							user, info->is_mariadb ? "BINLOG MONITOR" : "REPLICATION CLIENT", user);
	if (!has_global_privilege(src->conn, repl_client))
		return bl_error_set(err, BL_ERR_UNSUPPORTED,
							"the source account \"%s\" lacks the %s privilege needed to read binlog positions; grant it with: GRANT %s ON *.* TO '%s'@'%%'",
							user, info->is_mariadb ? "BINLOG MONITOR" : "REPLICATION CLIENT",
							info->is_mariadb ? "BINLOG MONITOR" : "REPLICATION CLIENT", user);
	/* column names then come from information_schema */
	if (strcasecmp(info->binlog_row_metadata, "FULL") != 0 && !has_some_select(src->conn))
		return bl_error_set(err, BL_ERR_UNSUPPORTED,
							"the source account \"%s\" lacks the SELECT privilege, which reading column names from information_schema needs (binlog_row_metadata is %s); grant it with: GRANT SELECT ON *.* TO '%s'@'%%' (or on the captured databases), or set binlog_row_metadata=FULL on the source",
							user, info->binlog_row_metadata[0] ? info->binlog_row_metadata : "MINIMAL", user);
	if (src->opts.server_id == info->server_id)
		return bl_error_set(err, BL_ERR_UNSUPPORTED,
							"server_id %u is the source's own server_id; choose a server_id that no server in the replication topology uses",
							src->opts.server_id);
	/* replicas registered on the source */
	if (mysql_query(src->conn, info->is_mariadb ? "SHOW SLAVE HOSTS" : "SHOW REPLICAS") == 0 ||
		mysql_query(src->conn, "SHOW SLAVE HOSTS") == 0)
	{
		res = mysql_store_result(src->conn);
		while (res && (row = mysql_fetch_row(res)))
		{
			if (row[0] && strtoul(row[0], NULL, 10) == src->opts.server_id)
			{
				bl_error_set(err, BL_ERR_UNSUPPORTED,
							 "server_id %u is already used by another replica of this source (host %s); two replicas with one server_id disconnect each other: choose another server_id",
							 src->opts.server_id, row[1] ? row[1] : "?");
				mysql_free_result(res);
				return -1;
			}
		}
		if (res)
			mysql_free_result(res);
	}
	return 0;
}

int
bl_source_function_defaults(bl_source *src, bl_source_default_fn fn, void *arg, bl_error *err)
{
	MYSQL_RES  *res;
	MYSQL_ROW	row;
	const char *sql =
		"SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, COLUMN_DEFAULT "
		"FROM information_schema.COLUMNS "
		"WHERE TABLE_SCHEMA NOT IN ('mysql', 'sys', 'information_schema', 'performance_schema') "
		"AND (EXTRA LIKE '%DEFAULT_GENERATED%' OR UPPER(COLUMN_DEFAULT) LIKE 'CURRENT_TIMESTAMP%' "
		"OR UPPER(COLUMN_DEFAULT) LIKE 'NOW(%') "
		"ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION";

	if (mysql_query(src->conn, sql) != 0)
		return bl_mysql_fail(src->conn, err, "reading the column defaults of the source's tables");
	res = mysql_store_result(src->conn);
	if (res == NULL)
		return bl_mysql_fail(src->conn, err, "reading the column defaults of the source's tables");
	while ((row = mysql_fetch_row(res)) != NULL)
		if (row[0] && row[1] && row[2])
			fn(arg, row[0], row[1], row[2], row[3] ? row[3] : "");
	mysql_free_result(res);
	return 0;
}

int
bl_source_current_position(bl_source *src, char *file, size_t filelen,
						   uint64_t *pos, char **gtid, bl_error *err)
{
	MYSQL_RES  *res;
	MYSQL_ROW	row;
	int			rc;

	if (gtid)
		*gtid = NULL;
	/* MySQL 8.4 removed SHOW MASTER STATUS */
	if (mysql_query(src->conn, "SHOW BINARY LOG STATUS") != 0 &&
		mysql_query(src->conn, "SHOW MASTER STATUS") != 0)
		return bl_mysql_fail(src->conn, err, "reading the source's binlog position");
	res = mysql_store_result(src->conn);
	if (res == NULL || (row = mysql_fetch_row(res)) == NULL || row[0] == NULL)
	{
		if (res)
			mysql_free_result(res);
		return bl_error_set(err, BL_ERR_UNSUPPORTED,
							"the source reports no binlog position; is log_bin enabled?");
	}
	rc = bl_mysql_copy_name(file, filelen, row[0], strlen(row[0]), "binlog file name", err);
	*pos = strtoull(row[1] ? row[1] : "4", NULL, 10);
	if (rc == 0 && gtid && !src->info.is_mariadb)
	{
		const char *set = mysql_num_fields(res) >= 5 && row[4] ? row[4] : "";

		*gtid = strdup(set);
		if (*gtid == NULL)
			rc = bl_error_set(err, BL_ERR_NOMEM, "out of memory");
	}
	mysql_free_result(res);
	if (rc == 0 && gtid && src->info.is_mariadb)
		rc = bl_mysql_query_text(src->conn, "SELECT @@global.gtid_binlog_pos", gtid, err);
	return rc;
}

int
bl_source_first_file(bl_source *src, char *file, size_t filelen, bl_error *err)
{
	MYSQL_RES  *res;
	MYSQL_ROW	row;

	if (mysql_query(src->conn, "SHOW BINARY LOGS") != 0)
		return bl_mysql_fail(src->conn, err, "listing the source's binlogs");
	res = mysql_store_result(src->conn);
	if (res == NULL || (row = mysql_fetch_row(res)) == NULL || row[0] == NULL)
	{
		if (res)
			mysql_free_result(res);
		return bl_error_set(err, BL_ERR_UNSUPPORTED, "the source has no binlog files");
	}
	{
		int			rc = bl_mysql_copy_name(file, filelen, row[0], strlen(row[0]),
											"binlog file name", err);

		mysql_free_result(res);
		return rc;
	}
}

int
bl_source_list_files(bl_source *src, char ***files, int *nfiles, bl_error *err)
{
	return bl_mysql_list_files(src->conn, files, nfiles, err);
}

void
bl_source_free_files(char **files, int nfiles)
{
	for (int i = 0; i < nfiles; i++)
		free(files[i]);
	free(files);
}

static int
setup_session(bl_source *src, const char *gtid, bl_error *err)
{
	char		sql[1024];
	double		hb = src->opts.heartbeat_seconds == 0 ? 5 : src->opts.heartbeat_seconds;

	/*
	 * The checksum capability must match what the source writes, or it
	 * refuses the dump.  Long write timeouts let backpressure stop reading
	 * for minutes without the source giving up on us.
	 */
	if (bl_source_exec(src, "SET @master_binlog_checksum = @@global.binlog_checksum, "
					   "@source_binlog_checksum = @@global.binlog_checksum, "
					   "@mariadb_slave_capability = 4", err) != 0)
		return -1;
	if (bl_source_exec(src, "SET SESSION net_write_timeout = 31536000, "
					   "net_read_timeout = 3600, wait_timeout = 31536000", err) != 0)
		return -1;
	if (hb > 0)
	{
		snprintf(sql, sizeof(sql), "SET @master_heartbeat_period = %llu",
				 (unsigned long long) (hb * 1e9));
		if (bl_source_exec(src, sql, err) != 0)
			return -1;
	}
	if (gtid)
	{
		static const char head[] = "SET @slave_connect_state = '";
		static const char tail[] = "', @slave_gtid_strict_mode = 1, @slave_gtid_ignore_duplicates = 0";
		size_t		glen = strlen(gtid);
		char	   *q;
		int			rc;

		/* MySQL: the set goes with COM_BINLOG_DUMP_GTID itself */
		if (!src->info.is_mariadb)
			return 0;
		for (const char *p = gtid; *p; p++)
			if (!((*p >= '0' && *p <= '9') || *p == '-' || *p == ',' || *p == ' '))
				return bl_error_set(err, BL_ERR_UNSUPPORTED,
									"invalid MariaDB GTID list \"%.200s\" (expected domain-server-sequence, comma separated)",
									gtid);
		/* a state of thousands of domains: sized, never cut */
		q = malloc(sizeof(head) + glen + sizeof(tail));
		if (q == NULL)
			return bl_error_set(err, BL_ERR_NOMEM, "out of memory for a GTID state of %zu bytes",
								glen);
		memcpy(q, head, sizeof(head) - 1);
		memcpy(q + sizeof(head) - 1, gtid, glen);
		memcpy(q + sizeof(head) - 1 + glen, tail, sizeof(tail));
		rc = bl_source_exec(src, q, err);
		free(q);
		if (rc != 0)
			return -1;
	}
	return 0;
}

/* COM_BINLOG_DUMP_GTID's command byte and its flag "a GTID set follows" */
#define BL_COM_BINLOG_DUMP_GTID 0x1e
#define BL_BINLOG_THROUGH_GTID 0x04

/*
 * Send COM_BINLOG_DUMP_GTID with a MySQL GTID set: the server starts in
 * the newest binlog file whose PREVIOUS_GTIDS the set holds and sends
 * every transaction not in the set.  Connector/C has no call for it (its
 * mariadb_rpl_open() sends COM_BINLOG_DUMP only), so the command goes
 * through the connection's own command function, as mariadb_rpl_open()
 * sends its command: flags (2 bytes), server_id (4), the file name's
 * length (4, none: 0), the position (8, 4), the encoded set's length (4)
 * and the set (bl_gtid_set_encode()).  The reply is the event stream, or
 * an error packet that the first bl_source_next() reports.
 */
static int
send_dump_gtid(bl_source *src, const char *gtid, uint16_t flags, bl_error *err)
{
	bl_gtid_set *set = bl_gtid_set_parse(gtid, strlen(gtid), err);
	bl_buf		pkt;
	uint8_t		head[22];
	size_t		setlen;
	int			rc;

	if (set == NULL)
		return -1;
	bl_buf_init(&pkt);
	flags |= BL_BINLOG_THROUGH_GTID;
	memset(head, 0, sizeof(head));
	head[0] = (uint8_t) flags;
	head[1] = (uint8_t) (flags >> 8);
	for (int i = 0; i < 4; i++)
		head[2 + i] = (uint8_t) (src->opts.server_id >> (8 * i));
	/* head[6..9]: no file name; head[10..17]: position 4 */
	head[10] = 4;
	bl_buf_append(&pkt, head, sizeof(head));
	if (bl_gtid_set_encode(set, &pkt) != 0 || bl_buf_failed(&pkt))
	{
		bl_gtid_set_free(set);
		bl_buf_free(&pkt);
		return bl_error_set(err, BL_ERR_NOMEM, "out of memory for a GTID set of %zu bytes",
							strlen(gtid));
	}
	bl_gtid_set_free(set);
	setlen = pkt.len - sizeof(head);
	if (setlen > UINT32_MAX)
	{
		bl_buf_free(&pkt);
		return bl_error_set(err, BL_ERR_UNSUPPORTED,
							"the GTID set to start at encodes to %zu bytes, more than a dump command can carry",
							setlen);
	}
	for (int i = 0; i < 4; i++)
		((uint8_t *) pkt.data)[18 + i] = (uint8_t) (setlen >> (8 * i));
	rc = src->conn->methods->db_command(src->conn,
										(enum enum_server_command) BL_COM_BINLOG_DUMP_GTID,
										pkt.data, pkt.len, 1, NULL);
	bl_buf_free(&pkt);
	if (rc != 0)
		return bl_error_set(err, BL_ERR_IO,
							"starting the binlog dump at GTID set %.200s%s: %s (MySQL error %u)",
							gtid, strlen(gtid) > 200 ? "..." : "",
							mysql_error(src->conn), mysql_errno(src->conn));
	return 0;
}

/* COM_BINLOG_DUMP through Connector/C (file:pos, or MariaDB's GTID state) */
static int
send_dump(bl_source *src, const char *fname, uint64_t pos, const char *gtid,
		  unsigned int flags, bl_error *err)
{
	src->rpl = mariadb_rpl_init(src->conn);
	if (src->rpl == NULL)
		return bl_mysql_fail(src->conn, err, "initialising the replication stream");
	if (mariadb_rpl_optionsv(src->rpl, MARIADB_RPL_FILENAME, fname, strlen(fname)) != 0 ||
		mariadb_rpl_optionsv(src->rpl, MARIADB_RPL_START, (unsigned long) (gtid ? 4 : pos)) != 0 ||
		mariadb_rpl_optionsv(src->rpl, MARIADB_RPL_SERVER_ID, src->opts.server_id) != 0 ||
		mariadb_rpl_optionsv(src->rpl, MARIADB_RPL_FLAGS, flags) != 0)
		return bl_error_set(err, BL_ERR_IO, "setting replication options: %s",
							mariadb_rpl_error(src->rpl));
	if (mariadb_rpl_open(src->rpl) != 0)
	{
		size_t		glen = gtid ? strlen(gtid) : 0;

		/* a state of thousands of domains would drown the server's error */
		return bl_error_set(err, BL_ERR_IO, "starting the binlog dump at %s:%llu%s%.200s%s: %s (MySQL error %u)",
							fname, (unsigned long long) pos, gtid ? " GTID " : "",
							gtid ? gtid : "", glen > 200 ? "..." : "",
							mysql_error(src->conn), mysql_errno(src->conn));
	}
	return 0;
}

int
bl_source_start_dump_at(bl_source *src, bl_decoder *dec, const char *file,
						uint64_t pos, const char *gtid, bl_error *err)
{
	unsigned int flags = src->opts.until_end ? MARIADB_RPL_BINLOG_DUMP_NON_BLOCK : 0;
	const char *fname = gtid ? "" : file;

	if (setup_session(src, gtid, err) != 0)
		return -1;
	if (gtid && !src->info.is_mariadb)
	{
		if (!src->info.gtid_mode)
			return bl_error_set(err, BL_ERR_UNSUPPORTED,
								"the source's gtid_mode is not ON: a dump cannot start at a MySQL GTID set; start at a file:position, or set gtid_mode=ON on the source");
		if (send_dump_gtid(src, gtid, (uint16_t) flags, err) != 0)
			return -1;
	}
	else if (send_dump(src, fname, pos, gtid, flags, err) != 0)
		return -1;
	if (bl_mysql_copy_name(src->file, sizeof(src->file), fname, strlen(fname),
						   "binlog file name", err) != 0)
		return -1;
	src->position = gtid ? 4 : pos;
	src->pending_file[0] = '\0';
	bl_decoder_set_file(dec, src->file, strlen(src->file));
	bl_decoder_expect_checksum(dec, strcasecmp(src->info.checksum, "CRC32") == 0 ?
							   BL_CHECKSUM_CRC32 : BL_CHECKSUM_OFF);
	return 0;
}

int
bl_source_start_dump(bl_source *src, bl_decoder *dec, bl_error *err)
{
	const char *start = src->opts.start ? src->opts.start : "earliest";
	char		file[BL_FILE_NAME_MAX];
	uint64_t	pos = 4;

	if (strcmp(start, "earliest") == 0)
	{
		if (bl_source_first_file(src, file, sizeof(file), err) != 0)
			return -1;
	}
	else if (strcmp(start, "current") == 0)
	{
		if (bl_source_current_position(src, file, sizeof(file), &pos, NULL, err) != 0)
			return -1;
	}
	else if (strncmp(start, "time:", 5) == 0)
	{
		/* time:UNIX_SECONDS or time:YYYY-MM-DD HH:MM:SS (UTC) */
		struct tm	tm;
		char	   *end;
		long long	t = strtoll(start + 5, &end, 10);

		memset(&tm, 0, sizeof(tm));
		if (*end != '\0' || end == start + 5)
		{
			end = strptime(start + 5, "%Y-%m-%d %H:%M:%S", &tm);
			if (end == NULL || *end != '\0')
				return bl_error_set(err, BL_ERR_UNSUPPORTED,
									"invalid start time \"%s\" (expected time:SECONDS or time:YYYY-MM-DD HH:MM:SS, UTC)",
									start + 5);
			t = (long long) timegm(&tm);
		}
		if (bl_source_locate_time(&src->opts, (int64_t) t, file, sizeof(file), &pos, err) != 0)
			return -1;
	}
	else if (strncmp(start, "gtid:", 5) == 0 && !src->info.is_mariadb)
	{
		if (bl_source_locate_gtid_set(&src->opts, start + 5, file, sizeof(file), &pos, err) != 0)
			return -1;
	}
	else if (strncmp(start, "gtid:", 5) == 0)
		return bl_source_start_dump_at(src, dec, "", 4, start + 5, err);
	else
	{
		const char *colon = strrchr(start, ':');
		char	   *end;

		if (colon == NULL || colon == start || (size_t) (colon - start) >= sizeof(file))
			return bl_error_set(err, BL_ERR_UNSUPPORTED,
								"invalid start \"%s\" (valid: earliest, current, FILE:POS, time:WHEN, gtid:SET)",
								start);
		memcpy(file, start, (size_t) (colon - start));
		file[colon - start] = '\0';
		pos = strtoull(colon + 1, &end, 10);
		if (*end != '\0' || pos < 4)
			return bl_error_set(err, BL_ERR_UNSUPPORTED,
								"invalid start position in \"%s\" (positions start at 4)", start);
	}
	return bl_source_start_dump_at(src, dec, file, pos, NULL, err);
}

int
bl_source_next(bl_source *src, bl_decoder *dec, const uint8_t **data,
			   size_t *len, uint64_t *pos, bl_error *err)
{
	unsigned long plen;
	const uint8_t *pkt;
	const uint8_t *raw;
	size_t		n;
	uint32_t	size,
				next;
	uint8_t		type;

	if (src->pending_file[0])
	{
		snprintf(src->file, sizeof(src->file), "%s", src->pending_file);
		src->pending_file[0] = '\0';
		bl_decoder_set_file(dec, src->file, strlen(src->file));
	}

	/*
	 * The packets are read as they come, not with mariadb_rpl_fetch():
	 * that function parses every event itself and fails on events it does
	 * not know (MySQL 8's TRANSACTION_PAYLOAD, PARTIAL_UPDATE_ROWS,
	 * GTID_TAGGED, HEARTBEAT_V2) or whose optional metadata it does not
	 * know, and such a failure leaves its error on the connection for the
	 * end of a non-blocking dump.  Decoding is ours.
	 */
	plen = mysql_net_read_packet(src->conn);
	if (plen == packet_error)
	{
		if (err)
		{
			snprintf(err->file, sizeof(err->file), "%s", src->file);
			err->position = src->position;
		}
		return bl_error_set(err, BL_ERR_IO, "reading the binlog stream: %s (MySQL error %u)",
							mysql_error(src->conn), mysql_errno(src->conn));
	}
	pkt = src->conn->net.read_pos;
	if (plen < 9 && plen >= 1 && pkt[0] == 0xFE)
		return 0;				/* EOF: the end of the binlog (non-blocking dump) */
	if (plen < 1 + 19 || pkt[0] != 0)
		return bl_error_set(err, BL_ERR_CORRUPT,
							"replication packet of %lu bytes is not an event (first byte 0x%02x)",
							plen, plen ? pkt[0] : 0);
	/* the packet starts with the protocol's OK byte */
	raw = pkt + 1;
	n = plen - 1;
	size = (uint32_t) bl_load_le(raw + 9, 4);
	next = (uint32_t) bl_load_le(raw + 13, 4);
	type = raw[4];
	if (size != n)
		return bl_error_set(err, BL_ERR_CORRUPT,
							"replication packet of %zu bytes holds an event of %u bytes", n, size);
	*data = raw;
	*len = n;
	*pos = next >= size ? next - size : 0;
	if (type == BL_EV_ROTATE && n >= 19 + 8)
	{
		uint64_t	rpos = bl_load_le(raw + 19, 8);
		size_t		nlen = n - 19 - 8;
		bool		fake = bl_load_le(raw, 4) == 0 || next == 0;

		/* the name may be followed by a checksum: strip what is not a name */
		if (strcasecmp(src->info.checksum, "CRC32") == 0 && nlen > 4 &&
			bl_crc32(0, raw, n - 4) == (uint32_t) bl_load_le(raw + n - 4, 4))
			nlen -= 4;
		if (nlen >= sizeof(src->file))
		{
			if (err)
			{
				snprintf(err->file, sizeof(err->file), "%s", src->file);
				err->position = src->position;
			}
			return bl_error_set(err, BL_ERR_UNSUPPORTED,
								"ROTATE to a binlog file name of %zu bytes: at most %zu bytes are supported",
								nlen, sizeof(src->file) - 1);
		}
		if (fake)
		{
			memcpy(src->file, raw + 27, nlen);
			src->file[nlen] = '\0';
			src->position = rpos;
			bl_decoder_set_file(dec, src->file, strlen(src->file));
			*pos = 0;
		}
		else
		{
			memcpy(src->pending_file, raw + 27, nlen);
			src->pending_file[nlen] = '\0';
			src->position = rpos;
		}
		return 1;
	}
	if (next != 0 && type != BL_EV_HEARTBEAT && type != BL_EV_HEARTBEAT_V2)
		src->position = next;
	return 1;
}

void
bl_source_close(bl_source *src)
{
	if (src == NULL)
		return;
	if (src->rpl)
		mariadb_rpl_close(src->rpl);
	if (src->conn)
		mysql_close(src->conn);
	free(src);
}
