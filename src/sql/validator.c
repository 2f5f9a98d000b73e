/*
 * validator.c
 *	  The foreign-data wrapper's validator: every option of a binlog_fdw
 *	  server, user mapping or foreign table is checked when it is set
 *	  (blpg_check_option, src/base/options.c), and a server's host list
 *	  with its port.
 */
#include "sql/sql.h"

#include "access/reloptions.h"
#include "catalog/pg_foreign_server.h"
#include "commands/defrem.h"

PG_FUNCTION_INFO_V1(binlog_fdw_validator);

Datum
binlog_fdw_validator(PG_FUNCTION_ARGS)
{
	List	   *options = untransformRelOptions(PG_GETARG_DATUM(0));
	Oid			catalog = PG_GETARG_OID(1);
	ListCell   *lc;
	const char *host = NULL;
	int			port = 3306;

	foreach(lc, options)
	{
		DefElem    *def = (DefElem *) lfirst(lc);

		blpg_check_option(def->defname, defGetString(def), catalog);
		if (catalog == ForeignServerRelationId && strcmp(def->defname, "host") == 0)
			host = defGetString(def);
		else if (catalog == ForeignServerRelationId && strcmp(def->defname, "port") == 0)
			port = atoi(defGetString(def));
	}
	/* "db1:3306,db1" is one server twice when the port option is 3306 */
	if (host != NULL)
	{
		blpg_host  *hosts;

		(void) blpg_hosts_parse(host, port, &hosts);
	}
	PG_RETURN_VOID();
}
