/*
 * verify.c
 *	  binlog_fdw.verify(server, tables): are the targets equal to the source
 *	  at one binlog position?
 *
 * 1. A consistent snapshot of the source (START TRANSACTION WITH
 *    CONSISTENT SNAPSHOT; its binlog position P, as snapshot() takes it).
 * 2. Apply, in the calling transaction, exactly up to P: apply() stops
 *    before any transaction at or after P (blpg_apply_stop_*), until the
 *    worker has read past P and nothing before P is left.  The compared
 *    targets are locked (EXCLUSIVE) first so that no other applier writes
 *    them until this transaction ends; the continuous apply worker must
 *    not run (it would apply past P in its own transactions).
 * 3. Each table is copied from the snapshot into a temporary table shaped
 *    like its target, by the same conversion as snapshot() (snapshot.c), so
 *    equal rows have equal values.
 * 4. Both sides are compared by key: per hash range of the key (256
 *    ranges), a checksum (md5 of the range's keys and rows, in key order);
 *    rows are compared only in the ranges whose checksums differ, and each
 *    differing key is returned: missing_in_postgresql, missing_in_source,
 *    or differs (both rows returned, as jsonb).
 *
 * Only the columns the source has are compared.  Targets need a primary
 * key.  What verify() applied commits with the calling transaction (roll
 * it back to leave the targets as they were: the changes come again).
 */
#include "apply/apply.h"

#include "base/base.h"
#include "bl_mysql_snapshot.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "foreign/foreign.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(binlog_fdw_verify);

#define VERIFY_RANGES 256
#define VERIFY_APPLY_SECONDS 300

/* Apply exactly up to file:pos in this transaction. */
static void
apply_up_to(const char *name, blpg_slot *slot, const char *file, uint64 pos)
{
	TimestampTz deadline = GetCurrentTimestamp() + (int64) VERIFY_APPLY_SECONDS * USECS_PER_SEC;

	strlcpy(blpg_apply_stop_file, file, BLPG_FILE_LEN);
	blpg_apply_stop_pos = pos;
	PG_TRY();
	{
		for (;;)
		{
			blpg_apply_result res;
			char		read_file[BLPG_FILE_LEN];
			uint64		read_pos;

			LWLockAcquire(&slot->lock, LW_SHARED);
			strlcpy(read_file, slot->read.file, sizeof(read_file));
			read_pos = slot->read.pos;
			LWLockRelease(&slot->lock);
			blpg_apply_run(name, 1000000, 1000, 200, &res);
			if (res.transactions == 0 && read_file[0] != '\0' &&
				blpg_position_cmp(read_file, read_pos, file, pos) >= 0)
				break;			/* read past P, nothing before P left */
			if (GetCurrentTimestamp() >= deadline)
				ereport(ERROR,
						(errcode(ERRCODE_QUERY_CANCELED),
						 errmsg("source \"%s\" did not reach binlog %s position %llu within %d seconds",
								name, file, (unsigned long long) pos, VERIFY_APPLY_SECONDS),
						 errdetail("The worker has read up to %s position %llu.",
								   read_file, (unsigned long long) read_pos),
						 errhint("Check binlog_fdw.status for the source's state and errors.")));
		}
	}
	PG_FINALLY();
	{
		blpg_apply_stop_file[0] = '\0';
		blpg_apply_stop_pos = 0;
	}
	PG_END_TRY();
}

/* the primary key columns of relid, quoted, in key order */
static List *
key_columns(Oid relid, const char *target)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(relid)};
	List	   *out = NIL;

	if (SPI_execute_with_args("SELECT quote_ident(a.attname) FROM pg_index i, "
							  "unnest(i.indkey) WITH ORDINALITY k(attnum, ord) "
							  "JOIN pg_attribute a ON a.attnum = k.attnum "
							  "WHERE i.indrelid = $1 AND i.indisprimary AND a.attrelid = $1 "
							  "ORDER BY k.ord", 1, types, values, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the primary key of %s", target);
	for (uint64 i = 0; i < SPI_processed; i++)
		out = lappend(out, SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1));
	if (out == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("target %s has no primary key: verify() compares rows by key", target)));
	return out;
}

static char *
json_object_of(List *cols)
{
	StringInfoData b;
	ListCell   *lc;

	initStringInfo(&b);
	appendStringInfoString(&b, "jsonb_build_object(");
	foreach(lc, cols)
	{
		const char *c = lfirst(lc);

		if (foreach_current_index(lc) > 0)
			appendStringInfoString(&b, ", ");
		/* the name as a literal, the column quoted */
		appendStringInfo(&b, "%s, t.%s", quote_literal_cstr(c[0] == '"' ?
															 pnstrdup(c + 1, strlen(c) - 2) : c), c);
	}
	appendStringInfoChar(&b, ')');
	return b.data;
}

Datum
binlog_fdw_verify(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *name;
	ArrayType  *tables;
	ForeignServer *server;
	blpg_slot  *slot;
	blpg_source_config *cfg;
	blpg_apply_options opts;
	bl_source_options so;
	bl_snapshot *snap;
	bl_error	err;
	char		file[BLPG_FILE_LEN];
	uint64_t	pos = 0;
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	Oid		   *targets;
	char	   *position;
	List	   *names = NIL;
	bl_snapshot_table *locked;
	int			nlocked;

	blpg_require_arg(fcinfo, 0, "server");
	blpg_require_arg(fcinfo, 1, "tables");
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	tables = PG_GETARG_ARRAYTYPE_P(1);
	slot = blpg_consumer_slot(name, &server);
	if (slot->apply_pid != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("source \"%s\" is applied by its continuous apply worker", name),
				 errdetail("verify() applies up to the snapshot's position itself, in its transaction."),
				 errhint("Set the server option continuous to 'false' while verifying, then back to 'true'.")));
	InitMaterializedSRF(fcinfo, 0);
	blpg_apply_options_load(server->serverid, &opts);
	deconstruct_array(tables, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);

	/* the targets, locked against other appliers until we end */
	targets = palloc0(sizeof(Oid) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		const char *src;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("tables must not contain NULL")));
		src = TextDatumGetCString(elems[i]);
		targets[i] = blpg_snapshot_target_of(server->servername, src, &opts);
		if (!OidIsValid(targets[i]))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_TABLE),
					 errmsg("source table %s of \"%s\" has no target table", src, name)));
		if (pg_class_aclcheck(targets[i], GetUserId(), ACL_SELECT) != ACLCHECK_OK)
			aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, get_rel_name(targets[i]));
		LockRelationOid(targets[i], ExclusiveLock);
		{
			char	   *db,
					   *table;

			blpg_split_source_table(src, &db, &table);
			names = lappend(names, makeString(db));
			names = lappend(names, makeString(table));
		}
	}

	/* 1. the source at one position */
	cfg = blpg_load_config(server->serverid, GetUserId());
	/* "exactly up to the position" is a place in one server's binlog */
	if (cfg->nhosts > 1)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("verify() of source \"%s\" needs one host, it has %d",
						server->servername, cfg->nhosts),
				 errdetail("verify() applies exactly up to the binlog position of its copy, which names a place in one server's binlog; the worker may stream from another host."),
				 errhint("Verify while the source has one host.")));
	blpg_snapshot_source_options(cfg, &so);
	memset(&err, 0, sizeof(err));
	locked = blpg_snapshot_tables(names, &nlocked);
	snap = bl_snapshot_open(&so, &err);
	if (snap == NULL ||
		bl_snapshot_start(snap, locked, nlocked, file, sizeof(file), &pos, NULL, &err) != 0)
	{
		int			code = blpg_snapshot_start_errcode(snap);
		const char *hint = blpg_snapshot_start_hint(snap, NULL);

		bl_snapshot_end(snap);
		ereport(ERROR,
				(errcode(code),
				 errmsg("could not take a snapshot of source \"%s\": %s", name, err.message),
				 hint ? errhint("%s", hint) : 0));
	}
	position = psprintf("%s:%llu", file, (unsigned long long) pos);

	PG_TRY();
	{
		/* 2. here, exactly up to it */
		apply_up_to(server->servername, slot, file, pos);

		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		for (int i = 0; i < n; i++)
		{
			const char *src = TextDatumGetCString(elems[i]);
			char	   *target = quote_qualified_identifier(get_namespace_name(get_rel_namespace(targets[i])),
															get_rel_name(targets[i]));
			char	   *tmp = psprintf("binlog_fdw_verify_%d", i);
			Oid			into,
						relid;
			int64		rows;
			List	   *cols;
			List	   *qcols = NIL;
			List	   *keys;
			ListCell   *lc;
			char	   *keyx,
					   *rowx,
					   *sql;

			/* 3. the source's rows, converted as snapshot() converts them */
			/* dropped below; an error rolls its creation back */
			if (SPI_execute(psprintf("CREATE TEMPORARY TABLE %s (LIKE %s)", tmp, target), false, 0) < 0)
				elog(ERROR, "could not create a temporary table like %s", target);
			CommandCounterIncrement();
			into = get_relname_relid(tmp, LookupCreationNamespace("pg_temp"));
			cols = blpg_snapshot_copy_into(server->servername, snap, src, &opts, into, &relid, &rows);
			CommandCounterIncrement();
			foreach(lc, cols)
				qcols = lappend(qcols, (char *) quote_identifier(strVal(lfirst(lc))));
			keys = key_columns(targets[i], target);

			/* 4. ranges by checksum, then the rows of the ranges that differ */
			keyx = json_object_of(keys);
			rowx = json_object_of(qcols);
			sql = psprintf("WITH s AS (SELECT %s AS k, %s AS r FROM pg_temp.%s t), "
						   "p AS (SELECT %s AS k, %s AS r FROM %s t), "
						   "sb AS (SELECT abs(hashtext(k::text)) %% %d AS b, "
						   "md5(string_agg(k::text || r::text, '|' ORDER BY k::text)) AS h FROM s GROUP BY 1), "
						   "pb AS (SELECT abs(hashtext(k::text)) %% %d AS b, "
						   "md5(string_agg(k::text || r::text, '|' ORDER BY k::text)) AS h FROM p GROUP BY 1), "
						   "bad AS (SELECT coalesce(sb.b, pb.b) AS b FROM sb FULL JOIN pb ON sb.b = pb.b "
						   "WHERE sb.h IS DISTINCT FROM pb.h) "
						   "SELECT coalesce(s.k, p.k), CASE WHEN p.k IS NULL THEN 'missing_in_postgresql' "
						   "WHEN s.k IS NULL THEN 'missing_in_source' ELSE 'differs' END, s.r, p.r "
						   "FROM (SELECT * FROM s WHERE abs(hashtext(k::text)) %% %d IN (SELECT b FROM bad)) s "
						   "FULL JOIN (SELECT * FROM p WHERE abs(hashtext(k::text)) %% %d IN (SELECT b FROM bad)) p "
						   "ON s.k = p.k WHERE s.r IS DISTINCT FROM p.r ORDER BY 1",
						   keyx, rowx, tmp, keyx, rowx, target,
						   VERIFY_RANGES, VERIFY_RANGES, VERIFY_RANGES, VERIFY_RANGES);
			/* not read-only: a snapshot that sees what this call applied and copied */
			if (SPI_execute(sql, false, 0) != SPI_OK_SELECT)
				elog(ERROR, "could not compare %s with %s", target, src);
			for (uint64 r = 0; r < SPI_processed; r++)
			{
				Datum		values[6];
				bool		rnulls[6] = {0};
				HeapTuple	tup = SPI_tuptable->vals[r];
				TupleDesc	desc = SPI_tuptable->tupdesc;
				bool		isnull;

				values[0] = CStringGetTextDatum(src);
				values[1] = SPI_getbinval(tup, desc, 1, &isnull);
				values[2] = SPI_getbinval(tup, desc, 2, &isnull);
				values[3] = SPI_getbinval(tup, desc, 3, &rnulls[3]);
				values[4] = SPI_getbinval(tup, desc, 4, &rnulls[4]);
				values[5] = CStringGetTextDatum(position);
				/* copied out of SPI's memory by the tuplestore */
				tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, rnulls);
			}
			ereport(DEBUG1,
					(errmsg("verify(%s): %s has %lld rows at %s, %llu differences",
							name, src, (long long) rows, position, (unsigned long long) SPI_processed)));
			if (SPI_execute(psprintf("DROP TABLE pg_temp.%s", tmp), false, 0) < 0)
				elog(ERROR, "could not drop %s", tmp);
		}
		SPI_finish();
	}
	PG_FINALLY();
	{
		bl_snapshot_end(snap);
	}
	PG_END_TRY();
	return (Datum) 0;
}
