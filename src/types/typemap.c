/*
 * typemap.c
 *	  MySQL column types to PostgreSQL types (see apply.h).
 *
 *	  TINYINT(1)                 boolean with tinyint1_boolean, else smallint
 *	  TINYINT / SMALLINT         smallint (SMALLINT UNSIGNED: integer)
 *	  MEDIUMINT / INT            integer (INT UNSIGNED: bigint)
 *	  BIGINT                     bigint (BIGINT UNSIGNED: numeric(20))
 *	  DECIMAL(p,s)               numeric(p,s)
 *	  FLOAT / DOUBLE             real / double precision
 *	  BIT(n)                     bit varying(n)
 *	  DATE                       date
 *	  DATETIME(n)                timestamp(n)
 *	  TIMESTAMP(n)               timestamptz(n)
 *	  TIME(n)                    interval (time_type=time: time(n))
 *	  YEAR                       smallint
 *	  CHAR(n) / VARCHAR(n)       varchar(n)
 *	  TINYTEXT .. LONGTEXT       text
 *	  BINARY / VARBINARY / BLOBs bytea
 *	  ENUM                       text
 *	  SET                        text[]
 *	  JSON                       jsonb
 *	  GEOMETRY and subtypes      PostGIS geometry (POINT: geometry(Point), ...)
 *	                             when the postgis extension is installed in
 *	                             the database, else bytea (EWKB)
 *	  VECTOR(n)                  real[]
 */
#include "types/types.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "commands/extension.h"
#include "utils/fmgroids.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

static bool
starts(const char *s, const char *word)
{
	size_t		n = strlen(word);

	return pg_strncasecmp(s, word, n) == 0 &&
		(s[n] == '\0' || s[n] == '(' || s[n] == ' ');
}

/* The first (and second) number between parentheses, -1 if none. */
static void
type_args(const char *s, int *a, int *b)
{
	const char *p = strchr(s, '(');

	*a = *b = -1;
	if (p == NULL)
		return;
	*a = atoi(p + 1);
	p = strchr(p, ',');
	if (p && (strchr(s, ')') == NULL || p < strchr(s, ')')))
		*b = atoi(p + 1);
}

/* The schema of an extension (PostgreSQL 15 does not export this). */
static Oid
extension_schema(Oid ext)
{
	Relation	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	Oid			nsp = InvalidOid;

	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(ext));
	scan = systable_beginscan(rel, ExtensionOidIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
		nsp = ((Form_pg_extension) GETSTRUCT(tup))->extnamespace;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return nsp;
}

/*
 * GEOMETRY and its subtypes: PostGIS's geometry (qualified by the
 * extension's schema) with the subtype as typmod when postgis is installed
 * in this database, else bytea holding EWKB.  No SRID in the typmod: a
 * MySQL column may hold values of several SRIDs, each value keeps its own.
 */
static const char *
geometry_type(const char *t)
{
	static const char *const subtypes[][2] = {
		{"point", "Point"}, {"linestring", "LineString"}, {"polygon", "Polygon"},
		{"multipoint", "MultiPoint"}, {"multilinestring", "MultiLineString"},
		{"multipolygon", "MultiPolygon"}, {"geometrycollection", "GeometryCollection"},
		{"geomcollection", "GeometryCollection"}};
	Oid			ext = get_extension_oid("postgis", true);
	char	   *nsp;

	if (!OidIsValid(ext) || (nsp = get_namespace_name(extension_schema(ext))) == NULL)
		return "bytea";
	for (int i = 0; i < (int) lengthof(subtypes); i++)
		if (starts(t, subtypes[i][0]))
			return psprintf("%s.geometry(%s)", quote_identifier(nsp), subtypes[i][1]);
	return psprintf("%s.geometry", quote_identifier(nsp));
}

const char *
blpg_map_type(const char *t, const blpg_apply_options *opts)
{
	bool		is_unsigned = strcasestr(t, "unsigned") != NULL;
	int			a,
				b;

	type_args(t, &a, &b);
	if (starts(t, "tinyint"))
	{
		if (a == 1 && opts->tinyint1_boolean && !is_unsigned)
			return "boolean";
		return "smallint";
	}
	if (starts(t, "smallint"))
		return is_unsigned ? "integer" : "smallint";
	if (starts(t, "mediumint"))
		return "integer";
	if (starts(t, "int") || starts(t, "integer"))
		return is_unsigned ? "bigint" : "integer";
	if (starts(t, "bigint"))
		return is_unsigned ? "numeric(20)" : "bigint";
	if (starts(t, "decimal") || starts(t, "numeric") || starts(t, "dec") || starts(t, "fixed"))
	{
		if (a < 0)
			return "numeric(10)";
		return b < 0 ? psprintf("numeric(%d)", a) : psprintf("numeric(%d,%d)", a, b);
	}
	if (starts(t, "float"))
		return a > 24 ? "double precision" : "real";
	if (starts(t, "double") || starts(t, "real"))
		return "double precision";
	if (starts(t, "bit"))
		return psprintf("bit varying(%d)", a > 0 ? a : 1);
	if (starts(t, "date"))
		return "date";
	if (starts(t, "datetime"))
		return a > 0 ? psprintf("timestamp(%d)", a) : "timestamp(0)";
	if (starts(t, "timestamp"))
		return a > 0 ? psprintf("timestamptz(%d)", a) : "timestamptz(0)";
	if (starts(t, "time"))
	{
		if (opts->time_as_interval)
			return a > 0 ? psprintf("interval(%d)", a) : "interval(0)";
		return a > 0 ? psprintf("time(%d)", a) : "time(0)";
	}
	if (starts(t, "year"))
		return "smallint";
	if (starts(t, "char") || starts(t, "varchar") || starts(t, "nchar") || starts(t, "nvarchar"))
		return a > 0 ? psprintf("varchar(%d)", a) : "text";
	if (starts(t, "tinytext") || starts(t, "text") || starts(t, "mediumtext") ||
		starts(t, "longtext") || starts(t, "long"))
		return "text";
	if (starts(t, "binary") || starts(t, "varbinary") || starts(t, "tinyblob") ||
		starts(t, "blob") || starts(t, "mediumblob") || starts(t, "longblob"))
		return "bytea";
	if (starts(t, "enum"))
		return "text";
	if (starts(t, "set"))
		return "text[]";
	if (starts(t, "json"))
		return "jsonb";
	if (starts(t, "geometry") || starts(t, "point") || starts(t, "linestring") ||
		starts(t, "polygon") || starts(t, "multipoint") || starts(t, "multilinestring") ||
		starts(t, "multipolygon") || starts(t, "geometrycollection") ||
		starts(t, "geomcollection"))
		return geometry_type(t);
	if (starts(t, "vector"))
		return "real[]";
	if (starts(t, "bool") || starts(t, "boolean"))
		return opts->tinyint1_boolean ? "boolean" : "smallint";
	if (starts(t, "inet6") || starts(t, "inet4") || starts(t, "uuid"))
		return "bytea";			/* MariaDB logs them as binary strings */
	return NULL;
}
