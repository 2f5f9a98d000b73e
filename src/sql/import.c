/*
 * import.c
 *	  IMPORT FOREIGN SCHEMA "shop" FROM SERVER src INTO local: one foreign
 *	  table per base table of the MySQL database, read from the source's
 *	  information_schema over a connection of src/source.
 *
 *	  CREATE FOREIGN TABLE local.orders (
 *	      _binlog_seq bigint, _binlog_op text, _binlog_image text,
 *	      _binlog_commit_time timestamptz, _binlog_file text,
 *	      _binlog_pos bigint, _binlog_gtid text, _binlog_xid bigint,
 *	      _binlog_batch bigint, _binlog_absent text[],
 *	      id integer OPTIONS (column_name 'id'), ...)
 *	    SERVER src OPTIONS (schema_name 'shop', table_name 'orders');
 *
 * IMPORT FOREIGN SCHEMA ... OPTIONS (partial_image 'null') gives the tables
 * that option (typed.c: what a column a partial row image lacks shows).
 *
 * Column types come from blpg_map_type (src/types), the mapping apply uses
 * for the tables it creates, with the server's tinyint1_boolean and
 * time_type.  LIMIT TO / EXCEPT are applied by PostgreSQL to the statements
 * returned.  A source column whose name is one of the change columns'
 * names is an error (the import would otherwise hide one of them).
 */
#include "sql/sql.h"

#include "bl_mysql_snapshot.h"

#include "catalog/pg_foreign_table.h"
#include "commands/defrem.h"
#include "miscadmin.h"
#include "utils/builtins.h"

const char *const blpg_meta_col_names[BLPG_NMETA] = {
	"_binlog_seq", "_binlog_op", "_binlog_image", "_binlog_commit_time",
	"_binlog_file", "_binlog_pos", "_binlog_gtid", "_binlog_xid", "_binlog_batch",
	"_binlog_absent"
};

const char *const blpg_meta_col_types[BLPG_NMETA] = {
	"bigint", "text", "text", "timestamptz", "text", "bigint", "text", "bigint", "bigint",
	"text[]"
};

typedef struct import_column
{
	char	   *table;
	char	   *column;
	char	   *column_type;
} import_column;

/* A MySQL string literal that holds any bytes: X'...' converted to utf8mb4. */
static char *
mysql_literal(const char *s)
{
	StringInfoData b;

	initStringInfo(&b);
	appendStringInfoString(&b, "CONVERT(X'");
	for (const unsigned char *p = (const unsigned char *) s; *p; p++)
		appendStringInfo(&b, "%02X", *p);
	appendStringInfoString(&b, "' USING utf8mb4)");
	return b.data;
}

/*
 * The columns of the database's base tables that the statement imports, in
 * table and column order, as bl_snapshot_columns() reads them for
 * sync_table() (MariaDB's JSON columns: type "json").
 */
static List *
read_columns(ForeignServer *server, ImportForeignSchemaStmt *stmt)
{
	const char *db = stmt->remote_schema;
	blpg_source_config *cfg = blpg_load_config(server->serverid, GetUserId());
	bl_source_options so;
	bl_snapshot *volatile snap = NULL;
	bl_error	err;
	List	   *tables = NIL;
	List	   *cols = NIL;
	char	   *sql;
	bool		failed = false;
	bool		exists = false;

	memset(&err, 0, sizeof(err));
	bl_source_options_init(&so);
	so.host = cfg->hosts[0].host;
	so.port = (unsigned) cfg->hosts[0].port;
	so.user = cfg->user;
	so.password = cfg->password;
	so.connect_timeout = cfg->connect_timeout;
	so.ssl_mode = cfg->ssl_mode;
	so.ssl_ca = cfg->ssl_ca;
	so.ssl_cert = cfg->ssl_cert;
	so.ssl_key = cfg->ssl_key;
	sql = psprintf("SELECT TABLE_NAME FROM information_schema.TABLES"
				   " WHERE TABLE_SCHEMA = %s AND TABLE_TYPE = 'BASE TABLE'"
				   " UNION ALL SELECT NULL FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s"
				   " ORDER BY 1", mysql_literal(db), mysql_literal(db));
	snap = bl_snapshot_open(&so, &err);
	if (snap == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
				 errmsg("could not connect to source \"%s\" to import schema \"%s\": %s",
						server->servername, db, err.message)));
	PG_TRY();
	{
		ListCell   *lc;

		if (bl_snapshot_query(snap, sql, &err) != 0)
			failed = true;
		while (!failed)
		{
			char	  **values;
			unsigned long *lengths;
			int			rc = bl_snapshot_fetch(snap, &values, &lengths, &err);
			char	   *name;

			if (rc < 0)
				failed = true;
			if (rc <= 0)
				break;
			if (values[0] == NULL)
			{
				exists = true;	/* the database's row */
				continue;
			}
			name = pnstrdup(values[0], lengths[0]);
			if (IsImportableForeignTable(name, stmt))	/* LIMIT TO / EXCEPT */
				tables = lappend(tables, name);
		}
		foreach(lc, tables)
		{
			bl_snapshot_column *sc;
			int			n;
			int64_t		estimate;

			if (failed)
				break;
			if (bl_snapshot_columns(snap, db, lfirst(lc), &sc, &n, &estimate, &err) != 0)
			{
				failed = true;
				break;
			}
			for (int i = 0; i < n; i++)
			{
				import_column *c = palloc(sizeof(import_column));

				c->table = lfirst(lc);
				c->column = pstrdup(sc[i].name);
				c->column_type = pstrdup(sc[i].column_type);
				cols = lappend(cols, c);
			}
		}
	}
	PG_FINALLY();
	{
		bl_snapshot_end(snap);
	}
	PG_END_TRY();
	if (failed)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_ERROR),
				 errmsg("could not read the tables of schema \"%s\" from source \"%s\": %s",
						db, server->servername, err.message)));
	if (!exists)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_SCHEMA_NOT_FOUND),
				 errmsg("source \"%s\" has no database \"%s\"", server->servername, db),
				 errhint("Quote a name with capitals (IMPORT FOREIGN SCHEMA \"Shop\" ...); the source's account sees only the databases it has privileges on.")));
	return cols;
}

static void
finish_table(List **cmds, StringInfo b, const char *server, const char *db,
			 const char *table, const char *partial_image)
{
	appendStringInfo(b, ") SERVER %s OPTIONS (schema_name %s, table_name %s",
					 quote_identifier(server), quote_literal_cstr(db), quote_literal_cstr(table));
	if (partial_image)
		appendStringInfo(b, ", partial_image %s", quote_literal_cstr(partial_image));
	appendStringInfoChar(b, ')');
	*cmds = lappend(*cmds, pstrdup(b->data));
}

/* The statement's OPTIONS: only partial_image (checked as a table's). */
static const char *
import_options(ImportForeignSchemaStmt *stmt)
{
	const char *partial_image = NULL;
	ListCell   *lc;

	foreach(lc, stmt->options)
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, "partial_image") != 0)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
					 errmsg("invalid option \"%s\" of IMPORT FOREIGN SCHEMA", def->defname),
					 errhint("Valid options are: partial_image.")));
		blpg_check_option(def->defname, defGetString(def), ForeignTableRelationId);
		partial_image = defGetString(def);
	}
	return partial_image;
}

List *
blpg_import_foreign_schema(ImportForeignSchemaStmt *stmt, Oid serverOid)
{
	ForeignServer *server = GetForeignServer(serverOid);
	blpg_apply_options opts;
	List	   *cols;
	List	   *cmds = NIL;
	const char *current = NULL;
	const char *partial_image;
	StringInfoData b;
	ListCell   *lc;

	blpg_apply_options_load(serverOid, &opts);
	partial_image = import_options(stmt);
	cols = read_columns(server, stmt);
	initStringInfo(&b);
	foreach(lc, cols)
	{
		import_column *c = lfirst(lc);
		const char *pgtype;

		if (current == NULL || strcmp(current, c->table) != 0)
		{
			if (current != NULL)
				finish_table(&cmds, &b, server->servername, stmt->remote_schema, current,
							 partial_image);
			current = c->table;
			resetStringInfo(&b);
			appendStringInfo(&b, "CREATE FOREIGN TABLE %s (",
							 quote_qualified_identifier(stmt->local_schema, c->table));
			for (int m = 0; m < BLPG_NMETA; m++)
				appendStringInfo(&b, "%s%s %s", m ? ", " : "", blpg_meta_col_names[m],
								 blpg_meta_col_types[m]);
		}
		for (int m = 0; m < BLPG_NMETA; m++)
			if (strcmp(c->column, blpg_meta_col_names[m]) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_COLUMN_NAME),
						 errmsg("column \"%s\" of source table \"%s.%s\" has the name of a change column",
								c->column, stmt->remote_schema, c->table),
						 errdetail("An imported table has the change columns %s, ... beside the table's own columns.",
								   blpg_meta_col_names[0]),
						 errhint("Leave the table out with EXCEPT (%s) and create its foreign table by hand, naming the column differently with the column option column_name '%s'.",
								 quote_identifier(c->table), c->column)));
		pgtype = blpg_map_type(c->column_type, &opts);
		if (pgtype == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_DATA_TYPE),
					 errmsg("column \"%s\" of source table \"%s.%s\" has type %s, which binlog_fdw cannot map",
							c->column, stmt->remote_schema, c->table, c->column_type),
					 errhint("Leave the table out with EXCEPT (%s).", quote_identifier(c->table))));
		appendStringInfo(&b, ", %s %s OPTIONS (column_name %s)", quote_identifier(c->column),
						 pgtype, quote_literal_cstr(c->column));
	}
	if (current != NULL)
		finish_table(&cmds, &b, server->servername, stmt->remote_schema, current,
							 partial_image);
	return cmds;
}
