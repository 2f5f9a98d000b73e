/*
 * owner.c
 *	  SPI as the owner of binlog_fdw's tables (binlog_fdw.source_state,
 *	  binlog_fdw.table_mapping).  Consumers and appliers may be unprivileged
 *	  roles granted the SQL functions; the tables belong to the extension's
 *	  owner, so reads and writes of them run as that owner
 *	  (SECURITY_LOCAL_USERID_CHANGE), as PostgreSQL's own RI triggers do.
 */
#include "base/base.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

static Oid
state_owner(void)
{
	Oid			nsp = get_namespace_oid("binlog_fdw", false);
	Oid			rel = get_relname_relid("source_state", nsp);
	HeapTuple	tup;
	Oid			owner;

	if (!OidIsValid(rel))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("table binlog_fdw.source_state does not exist"),
				 errhint("Is the binlog_fdw extension installed in this database?")));
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(rel));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", rel);
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}

/* Run fn(arg) with the privileges of the state table's owner, in SPI. */
void
blpg_run_as_owner(void (*fn) (void *), void *arg)
{
	Oid			save_userid;
	int			save_sec;

	GetUserIdAndSecContext(&save_userid, &save_sec);
	SetUserIdAndSecContext(state_owner(), save_sec | SECURITY_LOCAL_USERID_CHANGE);
	PG_TRY();
	{
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		fn(arg);
		SPI_finish();
	}
	PG_FINALLY();
	{
		SetUserIdAndSecContext(save_userid, save_sec);
	}
	PG_END_TRY();
}
