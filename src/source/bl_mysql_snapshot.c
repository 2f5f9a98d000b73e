/*
 * bl_mysql_snapshot.c
 *	  Consistent snapshots for initial loads (see bl_mysql_snapshot.h).
 *
 * MariaDB: START TRANSACTION WITH CONSISTENT SNAPSHOT, then the status
 * variables binlog_snapshot_file / binlog_snapshot_position give the binlog
 * position of exactly that snapshot, with no lock.  MySQL (and MariaDB with
 * the server option snapshot_lock set): LOCK TABLES ... READ of exactly the
 * copied tables on a second connection around the snapshot's start and
 * SHOW BINARY LOG STATUS (no RELOAD, no global lock: RDS and Aurora refuse
 * FLUSH TABLES WITH READ LOCK), or with snapshot_lock 'global' FLUSH
 * TABLES WITH READ LOCK.  Session time zone UTC, so TIMESTAMP values read
 * as UTC.
 */
#include "bl_mysql_conn.h"
#include "bl_mysql_snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct bl_snapshot
{
	MYSQL	   *conn;
	MYSQL_RES  *res;
	unsigned int nfields;
	bool		is_mariadb;
	char	  **row;
	unsigned long *lengths;
	bl_snapshot_column *cols;
	int			ncols;
	bl_source_options opts;		/* a lock's connection (start_tables) */
	const char *lock_hint;		/* why the last start's lock failed */
	bool		lock_denied;
};

static int
exec(bl_snapshot *s, const char *sql, bl_error *err)
{
	if (mysql_query(s->conn, sql) != 0)
		return bl_mysql_fail(s->conn, err, sql);
	{
		MYSQL_RES  *r = mysql_store_result(s->conn);

		if (r)
			mysql_free_result(r);
	}
	return 0;
}

void
bl_snapshot_quote_ident(const char *name, char *out, size_t outlen)
{
	size_t		o = 0;

	if (outlen < 3)
		return;
	out[o++] = '`';
	for (const char *p = name; *p && o + 3 < outlen; p++)
	{
		if (*p == '`')
			out[o++] = '`';
		out[o++] = *p;
	}
	out[o++] = '`';
	out[o] = '\0';
}

bl_snapshot *
bl_snapshot_open(const bl_source_options *opts, bl_error *err)
{
	bl_snapshot *s = calloc(1, sizeof(bl_snapshot));
	char		version[128];

	if (s == NULL)
	{
		bl_error_set(err, BL_ERR_NOMEM, "out of memory");
		return NULL;
	}
	s->opts = *opts;
	s->conn = bl_mysql_open(opts, err);
	if (s->conn == NULL)
	{
		free(s);
		return NULL;
	}
	if (bl_mysql_query_value(s->conn, "SELECT @@version", version, sizeof(version), err) != 0)
		goto fail;
	s->is_mariadb = strstr(version, "MariaDB") != NULL;
	if (exec(s, "SET SESSION time_zone = '+00:00', net_write_timeout = 3600, "
			 "group_concat_max_len = 16777216", err) != 0 ||
		exec(s, "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ", err) != 0)
		goto fail;
	return s;
fail:
	bl_snapshot_end(s);
	return NULL;
}

bl_snapshot *
bl_snapshot_begin(const bl_source_options *opts, const bl_snapshot_table *tables, int ntables,
				  char *file, size_t filelen, uint64_t *pos, char **gtid, bl_error *err)
{
	bl_snapshot *s = bl_snapshot_open(opts, err);

	if (s == NULL)
		return NULL;
	if (bl_snapshot_start(s, tables, ntables, file, filelen, pos, gtid, err) != 0)
	{
		bl_snapshot_end(s);
		return NULL;
	}
	return s;
}

/* `name` appended to b, quoted for MySQL */
static void
append_ident(bl_buf *b, const char *name)
{
	bl_buf_putc(b, '`');
	for (const char *p = name; *p; p++)
	{
		if (*p == '`')
			bl_buf_putc(b, '`');
		bl_buf_putc(b, *p);
	}
	bl_buf_putc(b, '`');
}

/*
 * MariaDB: the GTID state at exactly file:pos.  @@gtid_binlog_pos read now
 * could already include transactions committed after the snapshot, which
 * a start from this state would then skip.
 */
static int
mariadb_gtid_at(bl_snapshot *s, const char *file, uint64_t pos, char **gtid, bl_error *err)
{
	size_t		flen = strlen(file);
	char	   *esc = malloc(2 * flen + 1);
	char	   *sql = malloc(2 * flen + 128);
	int			rc;

	if (esc == NULL || sql == NULL)
	{
		free(esc);
		free(sql);
		return bl_error_set(err, BL_ERR_NOMEM, "out of memory");
	}
	mysql_real_escape_string(s->conn, esc, file, (unsigned long) flen);
	/* NULL: not an event boundary, or the file is gone */
	snprintf(sql, 2 * flen + 128, "SELECT COALESCE(BINLOG_GTID_POS('%s', %llu), '?')",
			 esc, (unsigned long long) pos);
	rc = bl_mysql_query_text(s->conn, sql, gtid, err);
	free(esc);
	free(sql);
	if (rc != 0)
		return -1;
	if (strcmp(*gtid, "?") == 0)
		return bl_error_set(err, BL_ERR_UNSUPPORTED,
							"the source has no GTID state for the snapshot's position %s:%llu",
							file, (unsigned long long) pos);
	return 0;
}

/* MariaDB's own: the position of exactly this snapshot, no lock */
static int
start_mariadb(bl_snapshot *s, char *file, size_t filelen, uint64_t *pos, bl_error *err)
{
	MYSQL_RES  *res;
	MYSQL_ROW	row;
	int			rc = 0;

	if (exec(s, "START TRANSACTION WITH CONSISTENT SNAPSHOT", err) != 0)
		return -1;
	if (mysql_query(s->conn, "SHOW STATUS LIKE 'binlog_snapshot_%'") != 0)
		return bl_mysql_fail(s->conn, err, "reading the snapshot's binlog position");
	res = mysql_store_result(s->conn);
	while (rc == 0 && res && (row = mysql_fetch_row(res)))
	{
		if (row[0] && row[1] && strcasecmp(row[0], "binlog_snapshot_file") == 0)
			rc = bl_mysql_copy_name(file, filelen, row[1], strlen(row[1]),
									"binlog file name", err);
		else if (row[0] && row[1] && strcasecmp(row[0], "binlog_snapshot_position") == 0)
			*pos = strtoull(row[1], NULL, 10);
	}
	if (res)
		mysql_free_result(res);
	return rc;
}

/*
 * The end of the binlog now (SHOW BINARY LOG STATUS, before 8.2 and on
 * MariaDB SHOW MASTER STATUS); executed: MySQL's Executed_Gtid_Set.
 */
static int
read_binlog_status(bl_snapshot *s, char *file, size_t filelen, uint64_t *pos,
				   char **executed, bl_error *err)
{
	MYSQL_RES  *res;
	MYSQL_ROW	row;
	int			rc = 0;

	if (mysql_query(s->conn, "SHOW BINARY LOG STATUS") != 0 &&
		mysql_query(s->conn, "SHOW MASTER STATUS") != 0)
		return bl_mysql_fail(s->conn, err, "reading the binlog position");
	res = mysql_store_result(s->conn);
	row = res ? mysql_fetch_row(res) : NULL;
	if (row && row[0])
	{
		rc = bl_mysql_copy_name(file, filelen, row[0], strlen(row[0]), "binlog file name", err);
		*pos = strtoull(row[1] ? row[1] : "4", NULL, 10);
		if (rc == 0 && executed &&
			(*executed = strdup(mysql_num_fields(res) >= 5 && row[4] ? row[4] : "")) == NULL)
			rc = bl_error_set(err, BL_ERR_NOMEM, "out of memory");
	}
	if (res)
		mysql_free_result(res);
	return rc;
}

/* FLUSH TABLES WITH READ LOCK around the snapshot's start */
static int
start_global(bl_snapshot *s, char *file, size_t filelen, uint64_t *pos, char **executed,
			 bl_error *err)
{
	if (mysql_query(s->conn, "FLUSH TABLES WITH READ LOCK") != 0)
	{
		unsigned int e = mysql_errno(s->conn);

		if (e == 1227 || e == 1045 || e == 1044)
		{
			s->lock_denied = true;
			s->lock_hint = "The server option snapshot_lock 'global' takes FLUSH TABLES WITH READ LOCK, which needs the RELOAD privilege (RDS and Aurora refuse it to every account): grant RELOAD, or set snapshot_lock to 'tables' (LOCK TABLES and SELECT on the copied tables).";
		}
		else if (e == 1205)
			s->lock_hint = "Other statements held the tables for longer than snapshot_lock_timeout: copy when they have ended, raise the server option snapshot_lock_timeout, or set snapshot_lock to 'tables'.";
		return bl_mysql_fail(s->conn, err, "FLUSH TABLES WITH READ LOCK");
	}
	if (exec(s, "START TRANSACTION WITH CONSISTENT SNAPSHOT", err) != 0 ||
		read_binlog_status(s, file, filelen, pos, executed, err) != 0)
		return -1;
	return exec(s, "UNLOCK TABLES", err);
}

/* Does schema.table exist (a view counts)?  1 yes, 0 no, -1 error. */
static int
table_exists(MYSQL *conn, const bl_snapshot_table *t, bl_error *err)
{
	size_t		ls = strlen(t->schema),
				lt = strlen(t->table);
	char	   *es = malloc(2 * ls + 1);
	char	   *et = malloc(2 * lt + 1);
	char	   *sql = malloc(2 * (ls + lt) + 128);
	char		value[32];
	int			rc;

	if (es == NULL || et == NULL || sql == NULL)
	{
		free(es);
		free(et);
		free(sql);
		return bl_error_set(err, BL_ERR_NOMEM, "out of memory");
	}
	mysql_real_escape_string(conn, es, t->schema, (unsigned long) ls);
	mysql_real_escape_string(conn, et, t->table, (unsigned long) lt);
	snprintf(sql, 2 * (ls + lt) + 128,
			 "SELECT TABLE_NAME FROM information_schema.TABLES "
			 "WHERE TABLE_SCHEMA = '%s' AND TABLE_NAME = '%s'", es, et);
	value[0] = '\0';
	rc = bl_mysql_query_value(conn, sql, value, sizeof(value), err);
	free(es);
	free(et);
	free(sql);
	if (rc != 0)
		return -1;
	return value[0] != '\0';
}

/*
 * LOCK TABLES ... READ of the copied tables on a second connection while
 * this one starts its transaction and reads the position.  The lock waits
 * until every transaction that wrote one of them has committed (they hold
 * the tables' metadata locks until then, binlog and engine) and keeps new
 * writers of them out; a transaction's START on the same connection would
 * release it, hence the second one.
 */
static int
start_tables(bl_snapshot *s, const bl_snapshot_table *tables, int ntables,
			 char *file, size_t filelen, uint64_t *pos, char **executed, bl_error *err)
{
	MYSQL	   *lock;
	bl_buf		sql;
	bl_buf		names;
	int			nlocked = 0;
	int			rc = -1;
	unsigned	timeout = s->opts.snapshot_lock_timeout ? s->opts.snapshot_lock_timeout : 30;
	char		set[96];

	lock = bl_mysql_open(&s->opts, err);
	if (lock == NULL)
		return -1;
	bl_buf_init(&sql);
	bl_buf_init(&names);
	snprintf(set, sizeof(set), "SET SESSION lock_wait_timeout = %u", timeout);
	if (mysql_query(lock, set) != 0)
	{
		bl_mysql_fail(lock, err, set);
		goto done;
	}
	bl_buf_puts(&sql, "LOCK TABLES ");
	for (int i = 0; i < ntables; i++)
	{
		int			exists;
		bool		again = false;

		/* a table named twice: LOCK TABLES refuses it (not unique) */
		for (int k = 0; k < i && !again; k++)
			again = strcmp(tables[k].schema, tables[i].schema) == 0 &&
				strcmp(tables[k].table, tables[i].table) == 0;
		if (again)
			continue;
		exists = table_exists(lock, &tables[i], err);
		if (exists < 0)
			goto done;
		if (exists == 0)
			continue;
		if (nlocked++)
		{
			bl_buf_puts(&sql, ", ");
			bl_buf_puts(&names, ", ");
		}
		append_ident(&sql, tables[i].schema);
		bl_buf_putc(&sql, '.');
		append_ident(&sql, tables[i].table);
		bl_buf_puts(&sql, " READ");
		bl_buf_printf(&names, "%s.%s", tables[i].schema, tables[i].table);
	}
	if (bl_buf_failed(&sql) || bl_buf_failed(&names))
	{
		bl_error_set(err, BL_ERR_NOMEM, "out of memory");
		goto done;
	}
	if (nlocked > 0 && mysql_query(lock, sql.data) != 0)
	{
		unsigned int e = mysql_errno(lock);

		if (e == 1205)
			s->lock_hint = "Transactions writing the table kept it for longer than snapshot_lock_timeout seconds: copy when they have ended, or raise the server option snapshot_lock_timeout.";
		else if (e == 1044 || e == 1142 || e == 1227 || e == 1045)
		{
			s->lock_denied = true;
			s->lock_hint = "The snapshot locks the tables it copies for a moment with LOCK TABLES ... READ: grant the source account LOCK TABLES and SELECT on them (GRANT LOCK TABLES, SELECT ON db.* TO ...), or set the server option snapshot_lock to 'global' (FLUSH TABLES WITH READ LOCK, needs RELOAD).";
		}
		bl_error_set(err, BL_ERR_IO, "could not lock table%s %.300s%s for the snapshot: %s (MySQL error %u)",
					 nlocked > 1 ? "s" : "", names.data, names.len > 300 ? "..." : "",
					 mysql_error(lock), e);
		goto done;
	}
	if (exec(s, "START TRANSACTION WITH CONSISTENT SNAPSHOT", err) != 0 ||
		read_binlog_status(s, file, filelen, pos, executed, err) != 0)
		goto done;
	if (nlocked > 0 && mysql_query(lock, "UNLOCK TABLES") != 0)
	{
		bl_mysql_fail(lock, err, "UNLOCK TABLES");
		goto done;
	}
	rc = 0;
done:
	bl_buf_free(&sql);
	bl_buf_free(&names);
	/* closing the connection releases its lock, too */
	mysql_close(lock);
	return rc;
}

int
bl_snapshot_start(bl_snapshot *s, const bl_snapshot_table *tables, int ntables,
				  char *file, size_t filelen, uint64_t *pos, char **gtid, bl_error *err)
{
	const char *mode = s->opts.snapshot_lock;
	char	   *executed = NULL;
	int			rc;

	if (gtid)
		*gtid = NULL;
	s->lock_hint = NULL;
	s->lock_denied = false;
	file[0] = '\0';
	*pos = 0;

	if (mode == NULL)
		mode = s->is_mariadb ? "none" : "tables";
	if (strcmp(mode, "none") == 0)
		rc = start_mariadb(s, file, filelen, pos, err);
	else if (strcmp(mode, "global") == 0)
		rc = start_global(s, file, filelen, pos, &executed, err);
	else
		rc = start_tables(s, tables, ntables, file, filelen, pos, &executed, err);
	if (rc != 0)
		goto fail;
	if (file[0] == '\0')
	{
		bl_error_set(err, BL_ERR_UNSUPPORTED, "the source reports no binlog position for the snapshot; is log_bin enabled?");
		goto fail;
	}
	if (gtid == NULL)
		;
	else if (s->is_mariadb)
	{
		if (mariadb_gtid_at(s, file, *pos, gtid, err) != 0)
			goto fail;
	}
	else if (strcmp(mode, "global") == 0)
	{
		/* read with every commit held off: exactly the set at the position */
		*gtid = executed;
		executed = NULL;
	}
	else if (executed == NULL || executed[0] == '\0')
	{
		/* no GTIDs (gtid_mode OFF) */
		if ((*gtid = strdup("")) == NULL)
		{
			bl_error_set(err, BL_ERR_NOMEM, "out of memory");
			goto fail;
		}
	}
	else if (bl_source_gtid_set_at(&s->opts, file, *pos, gtid, err) != 0)
	{
		/*
		 * Only the copied tables were held still: a commit of another
		 * table may come between MySQL's Executed_Gtid_Set and its
		 * position, so the set at the position is read from the binlog.
		 */
		goto fail;
	}
	free(executed);
	return 0;
fail:
	free(executed);
	if (gtid)
	{
		free(*gtid);
		*gtid = NULL;
	}
	return -1;
}

const char *
bl_snapshot_lock_hint(const bl_snapshot *s, bool *lock_denied)
{
	if (lock_denied)
		*lock_denied = s != NULL && s->lock_denied;
	return s ? s->lock_hint : NULL;
}

int
bl_snapshot_definition(bl_snapshot *s, const char *schema, const char *table,
					   char *out, size_t outlen, bl_error *err)
{
	char		sql[4096];
	char		es[512],
				et[512];

	if (strlen(schema) > 200 || strlen(table) > 200)
		return bl_error_set(err, BL_ERR_UNSUPPORTED, "name too long");
	mysql_real_escape_string(s->conn, es, schema, (unsigned long) strlen(schema));
	mysql_real_escape_string(s->conn, et, table, (unsigned long) strlen(table));
	/* columns in order with type, nullability, default; then the key */
	snprintf(sql, sizeof(sql),
			 "SELECT MD5(CONCAT_WS(0x1d, "
			 "(SELECT GROUP_CONCAT(CONCAT_WS(0x1f, COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, "
			 "IFNULL(COLUMN_DEFAULT, 0x1e), EXTRA) ORDER BY ORDINAL_POSITION SEPARATOR 0x1c) "
			 "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '%s' AND TABLE_NAME = '%s'), "
			 "(SELECT GROUP_CONCAT(CONCAT_WS(0x1f, INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME) "
			 "ORDER BY INDEX_NAME, SEQ_IN_INDEX SEPARATOR 0x1c) "
			 "FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = '%s' AND TABLE_NAME = '%s' "
			 "AND NON_UNIQUE = 0)))", es, et, es, et);
	out[0] = '\0';
	return bl_mysql_query_value(s->conn, sql, out, outlen, err);
}

bl_schema_cache *
bl_snapshot_schema_cache(bl_snapshot *s, bl_error *err)
{
	return bl_schema_cache_on(s->conn, err);
}

bool
bl_snapshot_definition_changed(const bl_snapshot *s)
{
	unsigned int e = mysql_errno(s->conn);

	/*
	 * ER_TABLE_DEF_CHANGED (1412): a table rebuilt after the snapshot
	 * began; ER_NO_SUCH_TABLE (1146), ER_BAD_FIELD_ERROR (1054): dropped
	 * or altered between reading its definition and its rows.
	 */
	return e == 1412 || e == 1146 || e == 1054;
}

static void
free_columns(bl_snapshot *s)
{
	for (int i = 0; i < s->ncols; i++)
	{
		free(s->cols[i].name);
		free(s->cols[i].column_type);
		free(s->cols[i].data_type);
		free(s->cols[i].default_value);
		free(s->cols[i].charset);
	}
	free(s->cols);
	s->cols = NULL;
	s->ncols = 0;
}

/*
 * MariaDB's JSON is LONGTEXT with a CHECK (json_valid(`col`)) constraint of
 * the column: such columns get the type "json", so that they map like
 * MySQL's JSON (and JSON in DDL) to jsonb.  es/et: the escaped names.  A
 * failure leaves the types as they are.
 */
static void
mariadb_json_columns(bl_snapshot *s, const char *es, const char *et)
{
	char		sql[2048];
	MYSQL_RES  *res;
	MYSQL_ROW	row;

	snprintf(sql, sizeof(sql),
			 "SELECT CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS "
			 "WHERE CONSTRAINT_SCHEMA = '%s' AND TABLE_NAME = '%s'", es, et);
	if (mysql_query(s->conn, sql) != 0 || (res = mysql_store_result(s->conn)) == NULL)
		return;
	while ((row = mysql_fetch_row(res)) != NULL)
	{
		for (int i = 0; row[0] && i < s->ncols; i++)
		{
			bl_snapshot_column *c = &s->cols[i];
			char		want[600];
			char		quoted[520];

			if (strcmp(c->data_type, "longtext") != 0)
				continue;
			bl_snapshot_quote_ident(c->name, quoted, sizeof(quoted));
			snprintf(want, sizeof(want), "json_valid(%s)", quoted);
			if (strcmp(row[0], want) != 0)
				continue;
			free(c->column_type);
			free(c->data_type);
			c->column_type = strdup("json");
			c->data_type = strdup("json");
		}
	}
	mysql_free_result(res);
}

int
bl_snapshot_columns(bl_snapshot *s, const char *schema, const char *table,
					bl_snapshot_column **cols, int *ncols, int64_t *estimated_rows,
					bl_error *err)
{
	char		sql[4096];
	char		es[512],
				et[512];
	MYSQL_RES  *res;
	MYSQL_ROW	row;
	char		value[64];

	free_columns(s);
	if (strlen(schema) > 200 || strlen(table) > 200)
		return bl_error_set(err, BL_ERR_UNSUPPORTED, "name too long");
	mysql_real_escape_string(s->conn, es, schema, (unsigned long) strlen(schema));
	mysql_real_escape_string(s->conn, et, table, (unsigned long) strlen(table));
	snprintf(sql, sizeof(sql),
			 "SELECT c.COLUMN_NAME, c.COLUMN_TYPE, LOWER(c.DATA_TYPE), c.IS_NULLABLE, c.COLUMN_DEFAULT, "
			 "COALESCE(k.SEQ_IN_INDEX, 0), c.EXTRA, c.CHARACTER_SET_NAME, c.CHARACTER_OCTET_LENGTH "
			 "FROM information_schema.COLUMNS c LEFT JOIN information_schema.STATISTICS k "
			 "ON k.TABLE_SCHEMA = c.TABLE_SCHEMA AND k.TABLE_NAME = c.TABLE_NAME "
			 "AND k.COLUMN_NAME = c.COLUMN_NAME AND k.INDEX_NAME = 'PRIMARY' "
			 "WHERE c.TABLE_SCHEMA = '%s' AND c.TABLE_NAME = '%s' ORDER BY c.ORDINAL_POSITION", es, et);
	if (mysql_query(s->conn, sql) != 0)
		return bl_mysql_fail(s->conn, err, "reading the table's columns");
	res = mysql_store_result(s->conn);
	if (res == NULL)
		return bl_mysql_fail(s->conn, err, "reading the table's columns");
	s->cols = calloc(mysql_num_rows(res) + 1, sizeof(bl_snapshot_column));
	while ((row = mysql_fetch_row(res)) != NULL)
	{
		bl_snapshot_column *c = &s->cols[s->ncols++];

		c->name = strdup(row[0] ? row[0] : "");
		c->column_type = strdup(row[1] ? row[1] : "");
		c->data_type = strdup(row[2] ? row[2] : "");
		c->nullable = row[3] && strcasecmp(row[3], "YES") == 0;
		c->default_value = row[4] ? strdup(row[4]) : NULL;
		c->pk_position = row[5] ? atoi(row[5]) : 0;
		c->generated = row[6] && (strcasestr(row[6], "VIRTUAL") || strcasestr(row[6], "STORED") ||
								  strcasestr(row[6], "GENERATED"));
		c->charset = row[7] ? strdup(row[7]) : NULL;
		c->octet_length = row[8] ? strtoll(row[8], NULL, 10) : 0;
	}
	mysql_free_result(res);
	if (s->is_mariadb)
		mariadb_json_columns(s, es, et);
	*cols = s->cols;
	*ncols = s->ncols;
	snprintf(sql, sizeof(sql), "SELECT TABLE_ROWS FROM information_schema.TABLES "
			 "WHERE TABLE_SCHEMA = '%s' AND TABLE_NAME = '%s'", es, et);
	if (bl_mysql_query_value(s->conn, sql, value, sizeof(value), err) != 0)
		return -1;
	*estimated_rows = strtoll(value, NULL, 10);
	return 0;
}

void
bl_snapshot_free_indexes(bl_snapshot_index *indexes, int nindexes)
{
	if (indexes == NULL)
		return;
	for (int i = 0; i < nindexes; i++)
	{
		for (int k = 0; k < indexes[i].ncols; k++)
			free(indexes[i].cols[k]);
		free(indexes[i].cols);
		free(indexes[i].descending);
		free(indexes[i].name);
	}
	free(indexes);
}

int
bl_snapshot_indexes(bl_snapshot *s, const char *schema, const char *table,
					bl_snapshot_index **indexes, int *nindexes, bl_error *err)
{
	char		sql[4096];
	char		es[512],
				et[512];
	MYSQL_RES  *res;
	MYSQL_ROW	row;
	bl_snapshot_index *out;
	int			n = 0;
	my_ulonglong nrows;

	*indexes = NULL;
	*nindexes = 0;
	if (strlen(schema) > 200 || strlen(table) > 200)
		return bl_error_set(err, BL_ERR_UNSUPPORTED, "name too long");
	mysql_real_escape_string(s->conn, es, schema, (unsigned long) strlen(schema));
	mysql_real_escape_string(s->conn, et, table, (unsigned long) strlen(table));
	snprintf(sql, sizeof(sql),
			 "SELECT INDEX_NAME, NON_UNIQUE, COLUMN_NAME, SUB_PART, UPPER(INDEX_TYPE), COLLATION "
			 "FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = '%s' AND TABLE_NAME = '%s' "
			 "AND INDEX_NAME <> 'PRIMARY' ORDER BY INDEX_NAME, SEQ_IN_INDEX", es, et);
	if (mysql_query(s->conn, sql) != 0 || (res = mysql_store_result(s->conn)) == NULL)
		return bl_mysql_fail(s->conn, err, "reading the table's indexes");
	nrows = mysql_num_rows(res);
	out = calloc(nrows + 1, sizeof(bl_snapshot_index));
	if (out == NULL)
	{
		mysql_free_result(res);
		return bl_error_set(err, BL_ERR_NOMEM, "out of memory");
	}
	while ((row = mysql_fetch_row(res)) != NULL)
	{
		bl_snapshot_index *ix;
		const char *name = row[0] ? row[0] : "";

		if (n == 0 || strcmp(out[n - 1].name, name) != 0)
		{
			ix = &out[n++];
			ix->name = strdup(name);
			ix->unique = row[1] && strcmp(row[1], "0") == 0;
			ix->cols = calloc(nrows, sizeof(char *));
			ix->descending = calloc(nrows, sizeof(bool));
			if (ix->name == NULL || ix->cols == NULL || ix->descending == NULL)
			{
				mysql_free_result(res);
				bl_snapshot_free_indexes(out, n);
				return bl_error_set(err, BL_ERR_NOMEM, "out of memory");
			}
		}
		ix = &out[n - 1];
		if (row[4] && strcmp(row[4], "FULLTEXT") == 0)
			ix->skip = "it is a FULLTEXT index (PostgreSQL's full text search needs a tsvector index of your choice)";
		else if (row[4] && strcmp(row[4], "SPATIAL") == 0)
			ix->skip = "it is a SPATIAL index (create a GiST index on the target's column)";
		else if (row[4] && strcmp(row[4], "VECTOR") == 0)
			ix->skip = "it is a VECTOR index";
		else if (row[2] == NULL)
			ix->skip = "it indexes an expression";
		else if (row[3] != NULL)
			ix->skip = "it indexes a column prefix";
		if (row[2] != NULL)
		{
			ix->descending[ix->ncols] = row[5] && strcmp(row[5], "D") == 0;
			ix->cols[ix->ncols] = strdup(row[2]);
			if (ix->cols[ix->ncols] == NULL)
			{
				mysql_free_result(res);
				bl_snapshot_free_indexes(out, n);
				return bl_error_set(err, BL_ERR_NOMEM, "out of memory");
			}
			ix->ncols++;
		}
	}
	mysql_free_result(res);
	*indexes = out;
	*nindexes = n;
	return 0;
}

int
bl_snapshot_fk_actions(bl_snapshot *s, const char *schema, const char *table, char *out,
					   size_t outlen, bl_error *err)
{
	char		sql[4096];
	char		es[512],
				et[512];
	MYSQL_RES  *res;
	MYSQL_ROW	row;
	int			n = 0;
	size_t		len = 0;

	out[0] = '\0';
	if (strlen(schema) > 200 || strlen(table) > 200)
		return bl_error_set(err, BL_ERR_UNSUPPORTED, "name too long");
	mysql_real_escape_string(s->conn, es, schema, (unsigned long) strlen(schema));
	mysql_real_escape_string(s->conn, et, table, (unsigned long) strlen(table));
	snprintf(sql, sizeof(sql),
			 "SELECT CONSTRAINT_NAME, REFERENCED_TABLE_NAME, DELETE_RULE, UPDATE_RULE "
			 "FROM information_schema.REFERENTIAL_CONSTRAINTS "
			 "WHERE CONSTRAINT_SCHEMA = '%s' AND TABLE_NAME = '%s' "
			 "AND (DELETE_RULE NOT IN ('RESTRICT', 'NO ACTION') "
			 "OR UPDATE_RULE NOT IN ('RESTRICT', 'NO ACTION')) ORDER BY CONSTRAINT_NAME", es, et);
	if (mysql_query(s->conn, sql) != 0 || (res = mysql_store_result(s->conn)) == NULL)
		return bl_mysql_fail(s->conn, err, "reading the table's foreign keys");
	while ((row = mysql_fetch_row(res)) != NULL)
	{
		int			w;

		/* the first few, each "name (references t, ON DELETE x ON UPDATE y)" */
		if (len < outlen)
		{
			w = snprintf(out + len, outlen - len, "%s%s (references %s, ON DELETE %s, ON UPDATE %s)",
						 n ? "; " : "", row[0] ? row[0] : "", row[1] ? row[1] : "",
						 row[2] ? row[2] : "", row[3] ? row[3] : "");
			if (w > 0)
				len += (size_t) w;
			if (len >= outlen && outlen > 4)
				memcpy(out + outlen - 4, "...", 4);
		}
		n++;
	}
	mysql_free_result(res);
	return n;
}

int
bl_snapshot_query(bl_snapshot *s, const char *sql, bl_error *err)
{
	if (s->res)
		mysql_free_result(s->res);
	s->res = NULL;
	if (mysql_query(s->conn, sql) != 0)
		return bl_mysql_fail(s->conn, err, "reading the table's rows");
	s->res = mysql_use_result(s->conn);
	if (s->res == NULL)
		return bl_mysql_fail(s->conn, err, "reading the table's rows");
	s->nfields = mysql_num_fields(s->res);
	return 0;
}

int
bl_snapshot_fetch(bl_snapshot *s, char ***values, unsigned long **lengths, bl_error *err)
{
	MYSQL_ROW	row = mysql_fetch_row(s->res);

	if (row == NULL)
	{
		if (mysql_errno(s->conn))
			return bl_mysql_fail(s->conn, err, "reading the table's rows");
		mysql_free_result(s->res);
		s->res = NULL;
		return 0;
	}
	*values = row;
	*lengths = mysql_fetch_lengths(s->res);
	return 1;
}

void
bl_snapshot_end(bl_snapshot *s)
{
	if (s == NULL)
		return;
	if (s->res)
		mysql_free_result(s->res);
	free_columns(s);
	if (s->conn)
	{
		(void) mysql_query(s->conn, "COMMIT");
		mysql_close(s->conn);
	}
	free(s);
}
