/*
 * mapping.c
 *	  binlog_fdw.map_table(server, 'db.table', target, key_columns, conflict,
 *	  skip): where a MySQL table's changes go, which key finds its rows and
 *	  what a conflict does.  Arguments are checked here, with clear errors,
 *	  rather than by the table's constraints.
 *
 * The caller needs USAGE on the server (as for apply()); the row of
 * binlog_fdw.table_mapping is written as the extension's owner, so roles
 * granted this function need no privileges on that table.  Privileges on
 * the target itself are checked when changes are applied, as the role that
 * applies them.
 */
#include "apply/apply.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "foreign/foreign.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

PG_FUNCTION_INFO_V1(binlog_fdw_map_table);

typedef struct map_call
{
	const char *server;
	char	   *db;
	char	   *table;
	char	   *target_schema;	/* NULL: the default target */
	char	   *target_table;
	Datum		key_columns;	/* text[] */
	bool		key_isnull;
	const char *conflict;		/* NULL: the source's */
	bool		skip;
} map_call;

static void
map_write_fn(void *arg)
{
	map_call   *mc = arg;
	Oid			types[8] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTARRAYOID, TEXTOID, BOOLOID};
	Datum		values[8];
	char		nulls[8] = "        ";

	values[0] = CStringGetTextDatum(mc->server);
	values[1] = CStringGetTextDatum(mc->db);
	values[2] = CStringGetTextDatum(mc->table);
	values[3] = mc->target_schema ? CStringGetTextDatum(mc->target_schema) : (Datum) 0;
	nulls[3] = mc->target_schema ? ' ' : 'n';
	values[4] = mc->target_table ? CStringGetTextDatum(mc->target_table) : (Datum) 0;
	nulls[4] = mc->target_table ? ' ' : 'n';
	values[5] = mc->key_columns;
	nulls[5] = mc->key_isnull ? 'n' : ' ';
	values[6] = mc->conflict ? CStringGetTextDatum(mc->conflict) : (Datum) 0;
	nulls[6] = mc->conflict ? ' ' : 'n';
	values[7] = BoolGetDatum(mc->skip);
	if (SPI_execute_with_args("INSERT INTO binlog_fdw.table_mapping AS m "
							  "(server_name, source_schema, source_table, target_schema, target_table, "
							  "key_columns, conflict, skip) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) "
							  "ON CONFLICT (server_name, source_schema, source_table) DO UPDATE "
							  "SET target_schema = excluded.target_schema, target_table = excluded.target_table, "
							  "key_columns = excluded.key_columns, conflict = excluded.conflict, "
							  "skip = excluded.skip",
							  8, types, values, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not write binlog_fdw.table_mapping");
}

/* The key columns must be columns of the target, once each. */
static void
check_key_columns(ArrayType *arr, Oid relid, const char *source)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("key_columns must be a one-dimensional array")));
	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("key_columns of %s must name at least one column", source),
				 errhint("Pass NULL to use the target's primary key.")));
	for (int i = 0; i < n; i++)
	{
		char	   *col;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("key_columns of %s must not contain nulls", source)));
		col = TextDatumGetCString(elems[i]);
		for (int k = 0; k < i; k++)
			if (!nulls[k] && strcmp(col, TextDatumGetCString(elems[k])) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_COLUMN),
						 errmsg("key column \"%s\" of %s is given twice", col, source)));
		if (OidIsValid(relid) && get_attnum(relid, col) == InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("key column \"%s\" of %s does not exist in %s", col, source,
							quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
													   get_rel_name(relid)))));
	}
}

void
blpg_split_source_table(const char *source, char **db, char **table)
{
	/* the MySQL database ends at the first dot */
	const char *dot = strchr(source, '.');

	if (dot == NULL || dot == source || dot[1] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("source table \"%s\" must be given as database.table", source),
				 errhint("The MySQL database ends at the first dot, e.g. 'shop.orders'.")));
	*db = pnstrdup(source, dot - source);
	*table = pstrdup(dot + 1);
}

Datum
binlog_fdw_map_table(PG_FUNCTION_ARGS)
{
	map_call	mc;
	ForeignServer *server;
	char	   *source;
	char	   *db;
	char	   *table;
	Oid			relid = InvalidOid;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("server and source table must not be null")));
	memset(&mc, 0, sizeof(mc));
	server = blpg_lookup_source(text_to_cstring(PG_GETARG_TEXT_PP(0)), ACL_USAGE);
	mc.server = server->servername;

	source = text_to_cstring(PG_GETARG_TEXT_PP(1));
	blpg_split_source_table(source, &db, &table);
	mc.db = db;
	mc.table = table;

	if (!PG_ARGISNULL(2))
	{
		char		relkind;

		relid = PG_GETARG_OID(2);
		relkind = get_rel_relkind(relid);
		if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
			ereport(ERROR,
					(errcode(ERRCODE_WRONG_OBJECT_TYPE),
					 errmsg("target %s of %s is not a table",
							quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
													   get_rel_name(relid)), source),
					 errdetail("Changes are applied into tables and partitioned tables only.")));
		mc.target_schema = get_namespace_name(get_rel_namespace(relid));
		mc.target_table = get_rel_name(relid);
	}
	else
	{
		/* the default target (after schema_map), if it exists, for the key check */
		blpg_apply_options opts;
		const char *schema = mc.db;
		ListCell   *lc;
		Oid			nsp;

		blpg_apply_options_load(server->serverid, &opts);
		foreach(lc, opts.schema_map)
			if (strcmp(strVal(linitial((List *) lfirst(lc))), mc.db) == 0)
				schema = strVal(lsecond((List *) lfirst(lc)));
		nsp = get_namespace_oid(schema, true);

		if (OidIsValid(nsp))
			relid = get_relname_relid(mc.table, nsp);
	}

	if (!PG_ARGISNULL(3))
	{
		check_key_columns(PG_GETARG_ARRAYTYPE_P(3), relid, source);
		mc.key_columns = PG_GETARG_DATUM(3);
	}
	else
		mc.key_isnull = true;

	if (!PG_ARGISNULL(4))
	{
		mc.conflict = text_to_cstring(PG_GETARG_TEXT_PP(4));
		if (strcmp(mc.conflict, "error") != 0 && strcmp(mc.conflict, "skip") != 0 &&
			strcmp(mc.conflict, "overwrite") != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid conflict policy \"%s\" for %s", mc.conflict, source),
					 errhint("Valid policies are error, skip and overwrite; NULL follows the source's conflict option.")));
	}
	mc.skip = PG_ARGISNULL(5) ? false : PG_GETARG_BOOL(5);

	blpg_run_as_owner(map_write_fn, &mc);
	PG_RETURN_VOID();
}
