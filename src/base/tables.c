/*
 * tables.c
 *	  The extension's tables as a whole: which layout of them this database
 *	  has (0.1's, until ALTER EXTENSION binlog_fdw UPDATE, or 0.2's), and a
 *	  server's rows in all of them following an ALTER SERVER ... RENAME.
 *
 * The tables are keyed by the server's name (pg_dump/restore and
 * pg_upgrade keep names, not OIDs), so a rename must carry its rows along
 * in the renaming transaction: binlog_fdw.source_state (the durable
 * position), binlog_fdw.started_sources (what starts with the server),
 * binlog_fdw.table_mapping (mappings and snapshot positions),
 * binlog_fdw.schema_history (table definitions by binlog position), and its
 * statistics (stats_source, stats_table), conflicts (conflict_log) and
 * filters (filters, filter_history).
 */
#include "base/base.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

bool
blpg_tables_legacy(void)
{
	Oid			nsp = get_namespace_oid("binlog_fdw", true);

	/* 0.2 added started_sources (0.1 kept started sources in a file) */
	return OidIsValid(nsp) && !OidIsValid(get_relname_relid("started_sources", nsp));
}

typedef struct rename_call
{
	const char *oldname;
	const char *newname;
	bool		legacy;
} rename_call;

static void
rename_fn(void *arg)
{
	rename_call *c = arg;
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	Datum		args[2];
	static const char *const updates[] = {
		"UPDATE binlog_fdw.source_state SET server_name = $2 WHERE server_name = $1",
		"UPDATE binlog_fdw.table_mapping SET server_name = $2 WHERE server_name = $1",
		"UPDATE binlog_fdw.started_sources SET server_name = $2 WHERE server_name = $1",
		"UPDATE binlog_fdw.schema_history SET server_name = $2 WHERE server_name = $1",
		/* statistics of a dropped server of the new name are stale: gone */
		"DELETE FROM binlog_fdw.stats_table WHERE server_name = $2",
		"DELETE FROM binlog_fdw.stats_source WHERE server_name = $2",
		"UPDATE binlog_fdw.stats_table SET server_name = $2 WHERE server_name = $1",
		"UPDATE binlog_fdw.stats_source SET server_name = $2 WHERE server_name = $1",
		"UPDATE binlog_fdw.conflict_log SET server_name = $2 WHERE server_name = $1",
		"UPDATE binlog_fdw.filters SET server_name = $2 WHERE server_name = $1",
		"UPDATE binlog_fdw.filter_history SET server_name = $2 WHERE server_name = $1",
	};

	args[0] = CStringGetTextDatum(c->oldname);
	args[1] = CStringGetTextDatum(c->newname);
	/* rows left under the new name (orphans) would pass for the server's */
	for (int i = 0; i < (c->legacy ? 1 : 4); i++)
	{
		static const char *const tables[] = {"table_mapping", "source_state", "started_sources",
		"schema_history"};
		char	   *sql = psprintf("SELECT 1 FROM binlog_fdw.%s WHERE server_name = $2", tables[i]);

		if (SPI_execute_with_args(sql, 2, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
			elog(ERROR, "could not read binlog_fdw.%s", tables[i]);
		if (SPI_processed > 0)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("cannot rename server \"%s\" to \"%s\": binlog_fdw.%s already has rows of that name",
							c->oldname, c->newname, tables[i]),
					 errdetail("No server has that name: the rows were left behind by a server that was dropped or renamed while the extension's event triggers did not run."),
					 errhint("Look at them (binlog_fdw.status shows a position as state \"orphaned\"), then delete them: DELETE FROM binlog_fdw.%s WHERE server_name = %s.",
							 tables[i], quote_literal_cstr(c->newname))));
	}
	/* 0.1 keyed source_state by OID and had no started_sources */
	for (int i = 0; i < (c->legacy ? 2 : lengthof(updates)); i++)
		if (SPI_execute_with_args(updates[i], 2, argtypes, args, NULL, false, 0) !=
			(strncmp(updates[i], "DELETE", 6) == 0 ? SPI_OK_DELETE : SPI_OK_UPDATE))
			elog(ERROR, "could not update the tables of binlog_fdw");
}

void
blpg_tables_rename_server(const char *oldname, const char *newname)
{
	rename_call c = {oldname, newname, blpg_tables_legacy()};

	blpg_run_as_owner(rename_fn, &c);
}
