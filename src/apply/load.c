/*
 * load.c
 *	  CALL binlog_fdw.load(server, tables, chunk_rows, truncate): initial
 *	  load in primary-key chunks while the source streams, each chunk
 *	  committed with its progress; called again after any failure (a killed
 *	  backend, a restart of either server, a dropped connection) it goes on
 *	  at the next chunk.
 *
 * A table with a primary key of integer columns (one or several, compared
 * column by column as MySQL orders them) is copied in chunks of
 * chunk_rows keys in key order: each chunk is its own short consistent
 * snapshot on the source (MariaDB: START TRANSACTION WITH CONSISTENT
 * SNAPSHOT gives its binlog position, no lock; MySQL: the brief FLUSH
 * TABLES WITH READ LOCK of bl_mysql_snapshot.c) and its own PostgreSQL
 * transaction, which appends the chunk (its upper key, its position) to
 * the table's mapping row (load_key_hi, load_file, load_pos; the key's
 * columns in load_key_columns).  Apply finds
 * a changed row's chunk by its key (target.c, blpg_target_chunk_op()): a
 * change before its chunk's position is in the copy, a change of a key
 * above every chunk copied so far (of its range, below) is in a chunk
 * still to come (its copy will be later than the change), anything else
 * is applied.  The chunk and apply are kept apart by synclock.c's lock
 * (a chunk holds it against apply, so apply reads the chunks only between
 * them).  So every
 * change is applied exactly once, per key, without a long transaction on
 * the source.  A table without such a key is copied in one chunk (one
 * consistent pass, as snapshot() does), still committed with its
 * progress.
 *
 * The definition of the table (bl_snapshot_definition) is recorded with
 * the first chunk; a later chunk that finds another one stops with an
 * error (the copy so far has the old shape): drop the target and load
 * again.
 *
 * Several load() calls (one per session, or the background loaders of
 * parallel => N: loaders.c) load several tables at once, and several key
 * ranges of one table at once:
 *
 * Ranges.  With parallel => N, the first chunk of a table chunked by its
 * key, if it is full, also splits the keys above its own into up to N
 * ranges: a key of one integer column by the source's greatest key in the
 * chunk's snapshot, in ranges of equal width (at least chunk_rows keys each;
 * split_keys()); a key of several integer columns by rows, each bound the
 * key about rows/N rows above the one before in the key's order, read by
 * MySQL with LIMIT 1 OFFSET (split_keys_by_rows(); bounds are whole key
 * tuples, compared as MySQL orders the key, column by column), read by
 * one loader before the first chunk takes the lock apply waits for
 * (presplit(): a read of the table's keys, which apply does not wait
 * for), the first chunk keeping those above its own keys.  It records
 * the split in the mapping row (load_split: each range's upper bound but
 * the last's, the first range being the first chunk's keys) in its own
 * transaction, under the exclusive lock, so no other chunk or apply sees
 * the table in between.  Every later chunk belongs to one range
 * (load_range[i]) and holds the range's keys above its previous chunk (or
 * above the range's lower bound) up to its own bound, the range's last
 * chunk (load_key_hi NULL) up to the range's end: (k) > (lower) AND (k)
 * <= (upper), both sides evaluated by MySQL.  The ranges partition the
 * keys (the first has no lower bound, the last no upper one: a key
 * inserted later below or above every key at the split is in them), so
 * every key is in exactly one range and, once its range is complete, in
 * exactly one chunk; the table is complete when every range is.  A
 * loader that finds every range left taken splits the rest of the biggest
 * (a key of one column) into two ranges instead of waiting (resplit(),
 * where the argument is).  Tables loaded without parallel keep one range
 * (the chunks are then the prefix they always were).
 *
 * Keys that are not all integers (varchar, binary, temporal, decimal) are
 * not chunked and so not split: they are copied in one pass (as a keyless
 * table is), whatever parallel asks.  Not for want of bounds (MySQL
 * can give them, with its collation), but because apply must place every
 * changed row into its range and chunk by its key (target.c,
 * chunk_holds()), in PostgreSQL, as MySQL orders the key: exact for
 * integers, not for a collation such as utf8mb4_general_ci ('a' = 'A' =
 * 'a ' there), whose order PostgreSQL does not have.  docs/load.md
 * ("Keys that are not integers: one pass") has the designs that would
 * keep apply's decision exact.
 *
 * Who copies what.  A loader takes a range for one chunk with the range's
 * lock (synclock.c; conditionally, passing to the next range, or to the
 * next table when every range left is another's, then in a second round
 * waiting for one), then the table's chunk lock, then reads where the
 * range is (a snapshot taken now: the chunks of the range committed by
 * the loaders before it, which released the range's lock only after their
 * commit).  So a range's chunks are copied one after another, in key
 * order, each once, and different ranges at once.  A range is resumed at
 * its next chunk by whichever loader takes it, in this call or the next.
 *
 * Exactly once, per key k of range r, whose chunk c (copied as of
 * position P) holds it.  Apply reads the chunks once per transaction,
 * under the chunk lock in share mode, held until its end; a chunk holds
 * the lock in RowExclusiveLock from before it takes P until its commit,
 * which conflicts with share mode (and not with the other chunks of the
 * table).  A change of k at position Q that apply reads while c is
 * committed: skipped if Q is before P (in the copy), else applied (after
 * it).  While c is not committed (apply finds no chunk of range r at k:
 * "to be copied", skipped): apply's transaction and c's hold of the lock
 * do not overlap, and apply's does not come after c's commit, so it
 * ended before c took P; every change apply read had been written to the
 * binlog before, so Q is before P: the copy holds the change.  An update
 * moving a row between chunks or ranges is the delete and/or insert each
 * side amounts to (blpg_target_chunk_op() in target.c).
 *
 * The chunk that completes the table builds its indexes and analyzes it:
 * the chunks of several ranges append themselves to the mapping row one
 * after the other (the row's lock; read committed: each appends to the
 * row as the last one left it), and only the one whose row has every range
 * complete does it, when every other chunk has committed.  Progress
 * (sync_progress) shows each loader with the table's committed rows plus
 * its own chunk, its rate counting its own rows.
 */
#include "apply/apply.h"

#include "bl_mysql_snapshot.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include <unistd.h>

PG_FUNCTION_INFO_V1(binlog_fdw_load);

/* A table's load so far, from its mapping row. */
typedef struct load_state
{
	const char *server_name;
	const char *db;
	const char *table;
	MemoryContext cxt;			/* what is read (reset at each read) */
	int			nchunks;
	bool		complete;		/* every range has its last chunk */
	char	   *after;			/* the last chunk's upper key */
	char	   *digest;
	int64		rows;			/* rows of the chunks so far */
	bool		created;		/* the first chunk created the target */
	bool		recorded;		/* the mapping row shows a load (load_key_hi) */
	int			nranges;		/* key ranges: 1 + the bounds of load_split */
	char	  **split;			/* nranges - 1 upper bounds */
	char	   *key_column;		/* the first of the key's columns */
	int			nkey;			/* ... how many */
	int		   *range_chunks;	/* per range: its chunks */
	char	  **range_after;	/* ... the upper key of its last one */
	bool	   *range_done;		/* ... it has its last one */
	/* this call's load of the table (progress) */
	TimestampTz started;
	int64		mine;			/* rows this loader copied of it */
	int			prefer;			/* the range it tries first */
} load_state;

/* The elements of a text[] (NULL elements NULL), in CurrentMemoryContext. */
static char **
text_elements(Datum array, int *n)
{
	Datum	   *elems;
	bool	   *nulls;
	char	  **out;

	deconstruct_array(DatumGetArrayTypeP(array), TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, &nulls, n);
	out = palloc0(sizeof(char *) * Max(*n, 1));
	for (int i = 0; i < *n; i++)
		out[i] = nulls[i] ? NULL : TextDatumGetCString(elems[i]);
	return out;
}

static void
state_read_fn(void *arg)
{
	load_state *st = arg;
	Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		vals[3];

	MemoryContextReset(st->cxt);
	vals[0] = CStringGetTextDatum(st->server_name);
	vals[1] = CStringGetTextDatum(st->db);
	vals[2] = CStringGetTextDatum(st->table);
	st->nchunks = 0;
	st->complete = false;
	st->after = NULL;
	st->digest = NULL;
	st->rows = 0;
	st->created = false;
	st->recorded = false;
	st->nranges = 1;
	st->split = NULL;
	st->key_column = NULL;
	st->nkey = 0;
	st->range_chunks = MemoryContextAllocZero(st->cxt, sizeof(int));
	st->range_after = MemoryContextAllocZero(st->cxt, sizeof(char *));
	st->range_done = MemoryContextAllocZero(st->cxt, sizeof(bool));
	if (SPI_execute_with_args("SELECT load_key_hi, load_range, load_split, load_digest, "
							  "(SELECT sum(r) FROM unnest(load_rows) AS r), load_created, "
							  "load_key_columns[1], cardinality(load_key_columns) "
							  "FROM binlog_fdw.table_mapping "
							  "WHERE server_name = $1 AND source_schema = $2 AND source_table = $3 "
							  "AND load_key_hi IS NOT NULL",
							  3, types, vals, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read binlog_fdw.table_mapping");
	if (SPI_processed == 1)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		MemoryContext old = MemoryContextSwitchTo(st->cxt);
		char	   *dg = SPI_getvalue(tup, desc, 4);
		char	   *rows = SPI_getvalue(tup, desc, 5);
		char	   *created = SPI_getvalue(tup, desc, 6);
		char	   *nk = SPI_getvalue(tup, desc, 8);
		bool		hnull,
					rnull,
					snull;
		Datum		hd = SPI_getbinval(tup, desc, 1, &hnull);
		Datum		rd = SPI_getbinval(tup, desc, 2, &rnull);
		Datum		sd = SPI_getbinval(tup, desc, 3, &snull);
		char	  **hi;
		Datum	   *re = NULL;
		bool	   *rn = NULL;
		int			nr = 0;
		bool		done = true;

		st->recorded = true;
		st->key_column = SPI_getvalue(tup, desc, 7);
		st->nkey = nk ? atoi(nk) : 0;
		hi = text_elements(hd, &st->nchunks);
		if (!snull)
		{
			int			ns;

			st->split = text_elements(sd, &ns);
			st->nranges = ns + 1;
			st->range_chunks = palloc0(sizeof(int) * st->nranges);
			st->range_after = palloc0(sizeof(char *) * st->nranges);
			st->range_done = palloc0(sizeof(bool) * st->nranges);
		}
		if (!rnull)
			deconstruct_array(DatumGetArrayTypeP(rd), INT4OID, 4, true, TYPALIGN_INT, &re, &rn, &nr);
		for (int i = 0; i < st->nchunks; i++)
		{
			/* no ranges recorded (a load of one range): all range 1 */
			int			r = re && i < nr && !rn[i] ? DatumGetInt32(re[i]) - 1 : 0;

			if (r < 0 || r >= st->nranges || (re && nr != st->nchunks))
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("the ranges of the load of %s.%s in binlog_fdw.table_mapping do not match its chunks",
								st->db, st->table)));
			st->range_chunks[r]++;
			st->range_after[r] = hi[i];
			st->range_done[r] = hi[i] == NULL;
		}
		for (int r = 0; r < st->nranges; r++)
			done = done && st->range_done[r];
		st->complete = st->nchunks > 0 && done;
		st->after = st->nchunks > 0 ? hi[st->nchunks - 1] : NULL;
		st->digest = dg;
		st->rows = rows ? strtoll(rows, NULL, 10) : 0;
		st->created = created && created[0] == 't';
		MemoryContextSwitchTo(old);
	}
}

typedef struct chunk_write
{
	const char *server_name;
	const char *db;
	const char *table;
	const char *hi;				/* NULL: the last chunk of its range */
	int			range;			/* 1-based */
	bool		first;			/* the load's first chunk */
	int			nsplit;			/* the first: the split it records */
	char	  **split;
	const char *file;
	uint64		pos;
	const char *digest;
	int64		rows;
	bool		created;		/* the first chunk: it created the target */
	int64		estimate;		/* the source's estimate of the table's rows */
	int			nkey;			/* the key the chunks range over */
	const char *const *key_columns;
	/* result: the mapping row with this chunk */
	bool		complete;
	int64		total_rows;
} chunk_write;

static void
chunk_write_fn(void *arg)
{
	chunk_write *cw = arg;
	Oid			types[14] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT8OID, TEXTOID,
	INT8OID, BOOLOID, TEXTARRAYOID, INT8OID, INT4OID, BOOLOID, TEXTARRAYOID};
	Datum		vals[14];
	char		nulls[14] = "              ";
	char	   *v;

	vals[0] = CStringGetTextDatum(cw->server_name);
	vals[1] = CStringGetTextDatum(cw->db);
	vals[2] = CStringGetTextDatum(cw->table);
	if (cw->hi)
		vals[3] = CStringGetTextDatum(cw->hi);
	else
		nulls[3] = 'n';
	vals[4] = CStringGetTextDatum(cw->file);
	vals[5] = Int64GetDatum((int64) cw->pos);
	vals[6] = CStringGetTextDatum(cw->digest);
	vals[7] = Int64GetDatum(cw->rows);
	vals[8] = BoolGetDatum(cw->created);
	if (cw->nkey > 0)
	{
		Datum		names[BLPG_CHUNK_KEY_MAX];

		for (int k = 0; k < cw->nkey; k++)
			names[k] = CStringGetTextDatum(cw->key_columns[k]);
		vals[9] = PointerGetDatum(construct_array(names, cw->nkey, TEXTOID, -1, false, TYPALIGN_INT));
	}
	else
		nulls[9] = 'n';
	vals[10] = Int64GetDatum(cw->estimate);
	vals[11] = Int32GetDatum(cw->range);
	vals[12] = BoolGetDatum(cw->first);
	if (cw->nsplit > 0)
	{
		Datum	   *bounds = palloc(sizeof(Datum) * cw->nsplit);

		for (int k = 0; k < cw->nsplit; k++)
			bounds[k] = CStringGetTextDatum(cw->split[k]);
		vals[13] = PointerGetDatum(construct_array(bounds, cw->nsplit, TEXTOID, -1, false, TYPALIGN_INT));
	}
	else
		nulls[13] = 'n';

	/*
	 * load_created, load_key_columns: the first chunk's (a whole copy or a
	 * restart reset them); load_split: the first chunk's.  Chunks of other
	 * ranges committing at once update the row one after the other (read
	 * committed: each appends to the row as the other left it), and the
	 * row returned is the one with this chunk: complete in exactly one of
	 * them.
	 */
	if (SPI_execute_with_args("UPDATE binlog_fdw.table_mapping SET "
							  "load_key_hi = coalesce(load_key_hi, '{}') || $4, "
							  "load_file = coalesce(load_file, '{}') || $5, "
							  "load_pos = coalesce(load_pos, '{}') || $6, "
							  "load_rows = coalesce(load_rows, '{}') || $8, "
							  "load_range = coalesce(load_range, "
							  "array_fill(1, ARRAY[coalesce(cardinality(load_key_hi), 0)])) || $12, "
							  "load_split = CASE WHEN $13 THEN $14 ELSE load_split END, "
							  "load_created = coalesce(load_created, $9), "
							  "load_key_columns = coalesce(load_key_columns, $10), "
							  "load_digest = $7, load_estimate = $11, synced_at = now() "
							  "WHERE server_name = $1 AND source_schema = $2 AND source_table = $3 "
							  "RETURNING (SELECT count(*) FROM unnest(load_key_hi) AS k WHERE k IS NULL) = "
							  "coalesce(cardinality(load_split), 0) + 1, "
							  "(SELECT sum(r) FROM unnest(load_rows) AS r)",
							  14, types, vals, nulls, false, 0) != SPI_OK_UPDATE_RETURNING ||
		SPI_processed != 1)
		elog(ERROR, "could not record a chunk of the load of %s.%s", cw->db, cw->table);
	v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	cw->complete = v && v[0] == 't';
	v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
	cw->total_rows = v ? strtoll(v, NULL, 10) : 0;
}

/* The table's definition digest; errors name the table. */
static char *
definition(bl_snapshot *snap, const char *db, const char *table, const char *source)
{
	char		digest[64];
	bl_error	err;

	memset(&err, 0, sizeof(err));
	if (bl_snapshot_definition(snap, db, table, digest, sizeof(digest), &err) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_UNABLE_TO_CREATE_EXECUTION),
				 errmsg("could not read the definition of %s: %s", source, err.message),
				 errhint("Call binlog_fdw.load() again once the source is back: it goes on at the next chunk.")));
	return pstrdup(digest);
}

static char *
int128_text(int128 v)
{
	char		buf[48];
	int			n = sizeof(buf) - 1;
	bool		neg = v < 0;
	uint128		u = neg ? (uint128) (-(v + 1)) + 1 : (uint128) v;

	buf[n] = '\0';
	do
	{
		buf[--n] = (char) ('0' + (int) (u % 10));
		u /= 10;
	} while (u > 0);
	if (neg)
		buf[--n] = '-';
	return pstrdup(buf + n);
}

/*
 * The split of a table whose first chunk ended at key "after" (one integer
 * column): the keys above it up to the source's greatest now (read in the
 * chunk's snapshot) in up to "ranges" ranges of equal width, of at least
 * chunk_rows keys each.  The bounds, after first; NULL (one range) when the
 * rest is too small to share.  Any bounds would do for exactly-once (a
 * key inserted later above the greatest is in the last range, which has
 * no upper bound): these only spread the work.
 */
static char **
split_keys(bl_snapshot *snap, const char *db, const char *table, const char *column,
		   const char *after, int ranges, int64 chunk_rows, const char *source, int *nsplit)
{
	char		qi[600];
	StringInfoData sql;
	bl_error	err;
	char	  **values;
	unsigned long *lengths;
	char	   *max = NULL;
	int			got;
	int128		lo,
				hi,
				span;
	int			n;
	char	  **split;

	*nsplit = 0;
	initStringInfo(&sql);
	bl_snapshot_quote_ident(column, qi, sizeof(qi));
	appendStringInfo(&sql, "SELECT MAX(%s) FROM ", qi);
	bl_snapshot_quote_ident(db, qi, sizeof(qi));
	appendStringInfo(&sql, "%s.", qi);
	bl_snapshot_quote_ident(table, qi, sizeof(qi));
	appendStringInfoString(&sql, qi);
	memset(&err, 0, sizeof(err));
	if (bl_snapshot_query(snap, sql.data, &err) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_UNABLE_TO_CREATE_EXECUTION),
				 errmsg("could not read the greatest key of %s: %s", source, err.message),
				 errhint("Call binlog_fdw.load() again once the source is back: it goes on at the next chunk.")));
	while ((got = bl_snapshot_fetch(snap, &values, &lengths, &err)) == 1)
		if (max == NULL && values[0])
			max = pnstrdup(values[0], lengths[0]);
	if (got < 0)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_UNABLE_TO_CREATE_EXECUTION),
				 errmsg("could not read the greatest key of %s: %s", source, err.message),
				 errhint("Call binlog_fdw.load() again once the source is back: it goes on at the next chunk.")));
	if (max == NULL || !blpg_parse_int128(after, &lo) || !blpg_parse_int128(max, &hi) || hi <= lo)
		return NULL;
	span = hi - lo;
	n = ranges;
	if (span / chunk_rows < n)
		n = (int) (span / chunk_rows);
	if (n < 2)
		return NULL;
	split = palloc(sizeof(char *) * n);
	split[0] = pstrdup(after);
	for (int i = 1; i < n; i++)
		split[i] = int128_text(lo + span * i / n);
	*nsplit = n;
	return split;
}

/*
 * Up to nmax keys of db.table (a key of nkey integer columns), each "step"
 * rows above the one before in the key's order, the first step rows above
 * "after" (NULL: from the first key), read by MySQL:
 *   SELECT k1, k2 FROM t WHERE (k1, k2) > (prev) ORDER BY k1, k2
 *   LIMIT 1 OFFSET step - 1
 * (the > written out column by column), so the queries together read the
 * rows once, over the primary key.  Strictly increasing; fewer if the
 * table ends before.
 */
static char **
read_bounds(bl_snapshot *snap, const char *db, const char *table, int nkey,
			const char *const *columns, const char *after, int64 step, int nmax,
			const char *source, int *nbounds)
{
	char		qi[600];
	char	  **bounds = palloc0(sizeof(char *) * Max(nmax, 1));
	const char *prev = after;

	*nbounds = 0;
	for (int i = 0; i < nmax; i++)
	{
		StringInfoData sql;
		StringInfoData bound;
		bl_error	err;
		char	  **values;
		unsigned long *lengths;
		int			got;
		bool		found = false;

		initStringInfo(&sql);
		appendStringInfoString(&sql, "SELECT ");
		for (int k = 0; k < nkey; k++)
		{
			bl_snapshot_quote_ident(columns[k], qi, sizeof(qi));
			appendStringInfo(&sql, "%s%s", k ? ", " : "", qi);
		}
		bl_snapshot_quote_ident(db, qi, sizeof(qi));
		appendStringInfo(&sql, " FROM %s.", qi);
		bl_snapshot_quote_ident(table, qi, sizeof(qi));
		appendStringInfoString(&sql, qi);
		if (prev)
		{
			char	   *copy = pstrdup(prev);
			char	   *save = NULL;
			char	  **vals = palloc0(sizeof(char *) * nkey);
			int			nv = 0;

			int128		iv;

			for (char *tok = strtok_r(copy, ",", &save); tok && nv < nkey; tok = strtok_r(NULL, ",", &save))
				vals[nv++] = tok;
			for (int k = 0; k < nv; k++)
				if (!blpg_parse_int128(vals[k], &iv))
					nv = -1;
			if (nv != nkey)
				elog(ERROR, "the key \"%s\" of %s is not %d integers", prev, source, nkey);
			appendStringInfoString(&sql, " WHERE (");
			for (int k = 0; k < nkey; k++)
			{
				if (k)
					appendStringInfoString(&sql, " OR ");
				appendStringInfoChar(&sql, '(');
				for (int e = 0; e < k; e++)
				{
					bl_snapshot_quote_ident(columns[e], qi, sizeof(qi));
					appendStringInfo(&sql, "%s = %s AND ", qi, vals[e]);
				}
				bl_snapshot_quote_ident(columns[k], qi, sizeof(qi));
				appendStringInfo(&sql, "%s > %s)", qi, vals[k]);
			}
			appendStringInfoChar(&sql, ')');
		}
		appendStringInfoString(&sql, " ORDER BY ");
		for (int k = 0; k < nkey; k++)
		{
			bl_snapshot_quote_ident(columns[k], qi, sizeof(qi));
			appendStringInfo(&sql, "%s%s", k ? ", " : "", qi);
		}
		appendStringInfo(&sql, " LIMIT 1 OFFSET " INT64_FORMAT, step - 1);
		memset(&err, 0, sizeof(err));
		if (bl_snapshot_query(snap, sql.data, &err) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_UNABLE_TO_CREATE_EXECUTION),
					 errmsg("could not read the key ranges of %s: %s", source, err.message),
					 errhint("Call binlog_fdw.load() again once the source is back: it goes on at the next chunk.")));
		initStringInfo(&bound);
		while ((got = bl_snapshot_fetch(snap, &values, &lengths, &err)) == 1)
			if (!found)
			{
				found = true;
				for (int k = 0; k < nkey; k++)
				{
					/* a key column is NOT NULL; a value that is not an integer: none */
					if (values[k] == NULL)
						found = false;
					else
					{
						if (k)
							appendStringInfoChar(&bound, ',');
						appendBinaryStringInfo(&bound, values[k], (int) lengths[k]);
					}
				}
			}
		if (got < 0)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_UNABLE_TO_CREATE_EXECUTION),
					 errmsg("could not read the key ranges of %s: %s", source, err.message),
					 errhint("Call binlog_fdw.load() again once the source is back: it goes on at the next chunk.")));
		/* fewer rows than the estimate: the last range takes the rest */
		if (!found)
			break;
		bounds[(*nbounds)++] = bound.data;
		prev = bound.data;
	}
	return bounds;
}

/*
 * How many ranges to split est rows into, the first chunk's chunk_rows
 * not shared: up to "ranges", each of at least chunk_rows rows.
 */
static int
ranges_by_rows(int64 est, int64 chunk_rows, int ranges)
{
	int64		rest = est - chunk_rows;

	if (rest <= 0 || chunk_rows <= 0)
		return 0;
	return (int) Min((int64) ranges, rest / chunk_rows);
}

/*
 * The split of a table whose first chunk ended at key "after", for a key
 * of several integer columns (equal widths mean nothing over a tuple): by
 * rows.  The bounds read before the first chunk's lock (pre, npre: see
 * presplit()), those above "after"; else, read now in the chunk's
 * snapshot (apply waits meanwhile), about (est - first) / N rows apart.
 * The split is after, then the bounds; NULL (one range) when there is
 * none.  The bounds are strictly increasing keys above after (compared as
 * integers, column by column: MySQL's order of such a key), so the ranges
 * partition the keys as split_keys' do; any bounds would do for
 * exactly-once, these only spread the work.
 */
static char **
split_keys_by_rows(bl_snapshot *snap, const char *db, const char *table, int nkey,
				   const char *const *columns, const char *after, int64 est, int64 first,
				   int ranges, int64 chunk_rows, char **pre, int npre, const char *source,
				   int *nsplit)
{
	char	  **split;
	char	  **bounds = NULL;
	int			nb = 0;

	*nsplit = 0;
	if (pre)
	{
		int128		lo[BLPG_CHUNK_KEY_MAX];
		int128		b[BLPG_CHUNK_KEY_MAX];

		if (!blpg_parse_key_bound(after, nkey, lo))
			return NULL;
		bounds = palloc0(sizeof(char *) * Max(npre, 1));
		for (int i = 0; i < npre; i++)
			if (blpg_parse_key_bound(pre[i], nkey, b) && blpg_key_cmp(b, lo, nkey) > 0)
				bounds[nb++] = pre[i];
	}
	else
	{
		int			n = ranges_by_rows(est - first + chunk_rows, chunk_rows, ranges);

		if (n < 2)
			return NULL;
		bounds = read_bounds(snap, db, table, nkey, columns, after, (est - first) / n, n - 1,
							 source, &nb);
	}
	if (nb < 1)
		return NULL;
	split = palloc(sizeof(char *) * (nb + 1));
	split[0] = pstrdup(after);
	for (int i = 0; i < nb; i++)
		split[i + 1] = bounds[i];
	*nsplit = nb + 1;
	return split;
}

/*
 * The bounds of a table's ranges, read before its first chunk takes the
 * lock apply waits for: a key of several integer columns is split by rows
 * (split_keys_by_rows()), which reads the table's keys over its primary
 * key once, and that is not done while apply waits.  Outside any
 * snapshot (each query sees the table as of its own start: the bounds are
 * strictly increasing all the same, they only spread the work).  The
 * bounds est / N rows apart from the first key; NULL when the key is of
 * one column (split_keys() is one lookup, in the chunk) or not of
 * integers, or the table too small to share.
 */
static char **
presplit(const bl_source_options *so, const char *db, const char *table, int ranges,
		 int64 chunk_rows, const char *source, int *npre)
{
	bl_snapshot *volatile snap;
	bl_error	err;
	char	  **volatile bounds = NULL;

	*npre = 0;
	memset(&err, 0, sizeof(err));
	snap = bl_snapshot_open(so, &err);
	if (snap == NULL)
		return NULL;			/* the chunk reports it */
	PG_TRY();
	{
		const char *names[BLPG_CHUNK_KEY_MAX];
		int64		est = 0;
		int			nkey = blpg_chunk_key_of(snap, db, table, names, &est);
		int			n = ranges_by_rows(est, chunk_rows, ranges);

		if (nkey > 1 && n >= 2)
			bounds = read_bounds(snap, db, table, nkey, names, NULL, est / n, n - 1, source, npre);
	}
	PG_FINALLY();
	{
		bl_snapshot_end(snap);
	}
	PG_END_TRY();
	return bounds;
}

/*
 * The range of the table this loader copies a chunk of: the first one not
 * complete and not taken by another loader, from st->prefer on; -1 if
 * there is none, unless wait: then it waits for one that another loader
 * has (holding no lock of apply's: synclock.c).
 */
static int
claim_range(Oid serverid, load_state *st, bool wait)
{
	for (int i = 0; i < st->nranges; i++)
	{
		int			r = (st->prefer + i) % st->nranges;

		if (!st->range_done[r] && blpg_load_range_lock(serverid, st->db, st->table, r, false))
			return r;
	}
	if (wait)
		for (int i = 0; i < st->nranges; i++)
		{
			int			r = (st->prefer + i) % st->nranges;

			if (!st->range_done[r])
			{
				(void) blpg_load_range_lock(serverid, st->db, st->table, r, true);
				return r;
			}
		}
	return -1;
}

/*
 * Re-splitting a crowded range.  A loader that finds every range left
 * taken by another loader splits the remaining part of the biggest one
 * (a key of one integer column; ranges above the first chunk's) instead of
 * waiting: the range r, of keys above lo (its last chunk's bound, else its
 * lower bound) up to hi (its upper bound; the last range: none), becomes
 * (lo, m] and a new range r + 1 gets (m, hi].  lo' and hi' are the least
 * key above lo and the greatest up to hi on the source now (an index
 * lookup each), the crowd being measured by hi' - lo' keys (at least
 * RESPLIT_MIN_CHUNKS * chunk_rows: each half worth a few chunks, as every
 * split waits for a chunk of each range), m their midpoint.
 *
 * Exact for apply: a key in (m, hi] was above every chunk of range r, "to
 * be copied" (synclock.c), and is in a range with no chunk after the
 * split, "to be copied" again; the keys up to m keep their range and
 * chunks; the ranges still partition the integers.  Exact for the
 * loaders: the ranges are numbered in key order (load_split sorted, each
 * chunk's load_range), so the split renumbers the ranges above r, and a
 * loader copies range i while it holds range i's lock, reading where the
 * ranges are after taking it.  The split takes every range's lock (in
 * order, holding no lock of apply's: a loader holds its range's lock
 * only for one chunk, and waits for one holding nothing), so no loader
 * holds a lock by the old numbers when it commits; the loaders that take
 * one afterwards read the new ranges.  Restart-safe: the split is one
 * UPDATE of the mapping row, committed alone (before the commit nothing
 * changed; after it the new range is a range without a chunk, resumed by
 * any loader), under the chunk lock, so apply reads the row before or
 * after it.  A source lookup that fails leaves the ranges as they are.
 */
/* keys left in a range, in chunks, for it to be split again */
#define RESPLIT_MIN_CHUNKS 8

typedef struct resplit_write
{
	const char *server_name;
	const char *db;
	const char *table;
	int			range;			/* 0-based: the range split */
	int			nsplit;			/* load_split's bounds before */
	const char *bound;			/* m */
	bool		done;
} resplit_write;

static void
resplit_write_fn(void *arg)
{
	resplit_write *rw = arg;
	Oid			types[6] = {TEXTOID, TEXTOID, TEXTOID, INT4OID, TEXTOID, INT4OID};
	Datum		vals[6];

	vals[0] = CStringGetTextDatum(rw->server_name);
	vals[1] = CStringGetTextDatum(rw->db);
	vals[2] = CStringGetTextDatum(rw->table);
	vals[3] = Int32GetDatum(rw->range);
	vals[4] = CStringGetTextDatum(rw->bound);
	vals[5] = Int32GetDatum(rw->nsplit);
	if (SPI_execute_with_args("UPDATE binlog_fdw.table_mapping SET "
							  "load_split = load_split[1:$4] || $5 || load_split[$4 + 1:$6], "
							  "load_range = ARRAY(SELECT CASE WHEN x > $4 + 1 THEN x + 1 ELSE x END "
							  "FROM unnest(load_range) WITH ORDINALITY AS u(x, i) ORDER BY i) "
							  "WHERE server_name = $1 AND source_schema = $2 AND source_table = $3 "
							  "AND cardinality(load_split) = $6",
							  6, types, vals, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not split a key range of the load of %s.%s", rw->db, rw->table);
	rw->done = SPI_processed == 1;
}

/* One integer from a query of one row and column on snap; false: none. */
static bool
source_int(bl_snapshot *snap, const char *sql, int128 *out)
{
	bl_error	err;
	char	  **values;
	unsigned long *lengths;
	int			got;
	bool		found = false;

	memset(&err, 0, sizeof(err));
	if (bl_snapshot_query(snap, sql, &err) != 0)
		return false;
	while ((got = bl_snapshot_fetch(snap, &values, &lengths, &err)) == 1)
		if (!found && values[0])
		{
			char	   *v = pnstrdup(values[0], lengths[0]);

			found = blpg_parse_int128(v, out);
		}
	return got == 0 && found;
}

/* Range r's keys left on the source now: [lo', hi'] (false: none). */
static bool
range_left(bl_snapshot *snap, load_state *st, int r, int128 *lo, int128 *hi)
{
	char		qc[600],
				qd[600],
				qt[600];
	const char *after = st->range_chunks[r] > 0 ? st->range_after[r] : st->split[r - 1];
	const char *upto = r < st->nranges - 1 ? st->split[r] : NULL;
	char	   *sql;

	bl_snapshot_quote_ident(st->key_column, qc, sizeof(qc));
	bl_snapshot_quote_ident(st->db, qd, sizeof(qd));
	bl_snapshot_quote_ident(st->table, qt, sizeof(qt));
	if (after == NULL || !blpg_parse_int128(after, lo) || (upto && !blpg_parse_int128(upto, hi)))
		return false;
	sql = psprintf("SELECT MIN(%s) FROM %s.%s WHERE %s > %s%s%s%s", qc, qd, qt, qc, after,
				   upto ? " AND " : "", upto ? qc : "", upto ? psprintf(" <= %s", upto) : "");
	if (!source_int(snap, sql, lo))
		return false;
	sql = psprintf("SELECT MAX(%s) FROM %s.%s%s%s%s", qc, qd, qt,
				   upto ? " WHERE " : "", upto ? qc : "", upto ? psprintf(" <= %s", upto) : "");
	return source_int(snap, sql, hi) && *hi >= *lo;
}

/* Each range's keys left (ok[r]: enough to share); false: no source. */
static bool
ranges_left(const bl_source_options *so, load_state *st, int64 chunk_rows,
			int128 *lo, int128 *hi, bool *ok)
{
	bl_snapshot *volatile snap;
	bl_error	err;

	memset(&err, 0, sizeof(err));
	snap = bl_snapshot_open(so, &err);
	if (snap == NULL)
		return false;
	PG_TRY();
	{
		for (int r = 1; r < st->nranges; r++)
			ok[r] = !st->range_done[r] && range_left(snap, st, r, &lo[r], &hi[r]) &&
				hi[r] - lo[r] >= RESPLIT_MIN_CHUNKS * (int128) chunk_rows;
	}
	PG_FINALLY();
	{
		bl_snapshot_end(snap);
	}
	PG_END_TRY();
	return true;
}

/*
 * Split the biggest range left (see above); true if it did (the caller
 * commits, then claims a range again).
 */
static bool
resplit(Oid serverid, const bl_source_options *so, load_state *st, int64 chunk_rows)
{
	int			n = st->nranges;
	int			best = -1;
	int128		blo = 0,
				bhi = 0;
	int128	   *lo,
			   *hi;
	bool	   *ok;
	resplit_write rw;

	if (n < 2 || st->nkey != 1 || st->key_column == NULL)
		return false;
	lo = palloc0(sizeof(int128) * n);
	hi = palloc0(sizeof(int128) * n);
	ok = palloc0(sizeof(bool) * n);
	/* the source's keys left in each range, before any lock */
	if (!ranges_left(so, st, chunk_rows, lo, hi, ok))
		return false;
	for (int r = 1; r < n; r++)
		if (ok[r] && (best < 0 || hi[r] - lo[r] > bhi - blo))
		{
			best = r;
			blo = lo[r];
			bhi = hi[r];
		}
	if (best < 0)
		return false;

	/* every range's lock, then where the ranges are now */
	for (int r = 0; r < n; r++)
		(void) blpg_load_range_lock(serverid, st->db, st->table, r, true);
	blpg_sync_lock_chunk(serverid, st->db, st->table);
	blpg_run_as_owner(state_read_fn, st);
	memset(&rw, 0, sizeof(rw));
	if (!st->complete && st->nranges == n && !st->range_done[best])
	{
		const char *after = st->range_chunks[best] > 0 ? st->range_after[best] : st->split[best - 1];
		int128		now;

		/* its loader went on meanwhile: the rest above its last chunk */
		if (after && blpg_parse_int128(after, &now) && now >= blo)
			blo = now + 1;
		if (bhi - blo >= RESPLIT_MIN_CHUNKS * (int128) chunk_rows)
		{
			rw.server_name = st->server_name;
			rw.db = st->db;
			rw.table = st->table;
			rw.range = best;
			rw.nsplit = n - 1;
			rw.bound = int128_text(blo + (bhi - blo) / 2);
			blpg_run_as_owner(resplit_write_fn, &rw);
		}
	}
	if (!rw.done)
	{
		/*
		 * Nothing written: given back, so that waiting for a range next
		 * holds no lock apply could wait for
		 */
		blpg_sync_unlock_chunk(serverid, st->db, st->table);
		for (int r = 0; r < n; r++)
			blpg_load_range_unlock(serverid, st->db, st->table, r);
		return false;
	}
	ereport(DEBUG1,
			(errmsg("binlog_fdw load of %s.%s: range %d split at %s", st->db, st->table,
					best + 1, rw.bound)));
	/* this loader takes the new range first */
	st->prefer = best + 1;
	return true;
}

typedef enum chunk_result
{
	CHUNK_MORE,					/* a chunk copied, or nothing to do now */
	CHUNK_COMPLETE,				/* the table is complete */
	CHUNK_BUSY					/* every range left is another loader's */
} chunk_result;

/*
 * Copy the next chunk of source in the current transaction: the first
 * chunk of the table, or the next one of a range that no other loader is
 * copying (waiting for one if wait).
 */
static chunk_result
load_chunk(const char *server_name, Oid serverid, const bl_source_options *so,
		   const blpg_apply_options *opts, const char *source, const char *db,
		   const char *table, int64 chunk_rows, bool truncate, int ranges, bool wait,
		   load_state *st)
{
	bl_snapshot *volatile snap = NULL;
	bl_error	err;
	char		file[BLPG_FILE_LEN];
	uint64_t	pos = 0;
	char	   *raw = NULL;
	char	   *volatile gtid = NULL;
	char	   *volatile digest = NULL;
	blpg_load_chunk chunk;
	chunk_write cw;
	volatile bool range_end = false;
	bool		exclusive = truncate || st->nchunks == 0;
	bool		first;
	volatile int range = 0;
	volatile bool begins = false;
	char	  **volatile pre = NULL;
	volatile int npre = 0;

	/*
	 * Before the first chunk of a load in ranges: the bounds a key of
	 * several columns is split by, read before the lock apply waits for
	 * (presplit()), by one loader of the table (the others pass to another
	 * table, or wait for it in the second round: holding no lock of apply's,
	 * and the lock is never taken by apply), which then copies the first
	 * chunk, unless another one did meanwhile.
	 */
	if (exclusive && !truncate && ranges > 1)
	{
		int			n;

		if (!blpg_load_range_lock(serverid, db, table, -1, wait))
			return CHUNK_BUSY;
		blpg_run_as_owner(state_read_fn, st);
		if (st->complete)
			return CHUNK_COMPLETE;
		if (st->nchunks > 0)
			return CHUNK_MORE;
		pre = presplit(so, db, table, ranges, chunk_rows, source, &n);
		npre = n;
	}

	/*
	 * The first chunk (it creates the target and splits the keys) is alone:
	 * apply and every other loader of the table wait for it.
	 */
	if (exclusive)
	{
		blpg_sync_lock_tables(serverid, list_make2(makeString((char *) db), makeString((char *) table)));
		if (!truncate)
		{
			blpg_run_as_owner(state_read_fn, st);
			if (st->complete)
				return CHUNK_COMPLETE;
		}
	}
	first = truncate || st->nchunks == 0;
	/* another loader copied the first chunk meanwhile: the next as below */
	if (exclusive && !first)
		return CHUNK_MORE;
	if (!first)
	{
		/*
		 * A range of its own (see the header), then the chunk lock: apply
		 * waits for this chunk, other chunks do not; where the range is now
		 * is read under both (read-write: a snapshot taken now).
		 */
		range = claim_range(serverid, st, false);
		/* every range left is another loader's: share the biggest */
		if (range < 0 && resplit(serverid, so, st, chunk_rows))
			return CHUNK_MORE;
		if (range < 0 && wait)
			range = claim_range(serverid, st, true);
		if (range < 0)
			return CHUNK_BUSY;
		blpg_sync_lock_chunk(serverid, db, table);
		blpg_run_as_owner(state_read_fn, st);
		if (st->complete)
			return CHUNK_COMPLETE;
		if (range >= st->nranges || st->range_done[range] || st->nchunks == 0)
			return CHUNK_MORE;
	}
	/* a source that has no position begins at this chunk's (the first) */
	if (first)
		begins = blpg_copy_begins_source(serverid);
	memset(&err, 0, sizeof(err));
	snap = bl_snapshot_open(so, &err);
	if (snap == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
				 errmsg("could not connect to source \"%s\" for the load of %s: %s",
						server_name, source, err.message),
				 errhint("Call binlog_fdw.load() again once the source is back: it goes on at the next chunk.")));
	memset(&cw, 0, sizeof(cw));
	PG_TRY();
	{
		digest = definition(snap, db, table, source);
		if (!first && st->digest && strcmp(st->digest, digest) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("table %s changed on the source during its load, after %d chunks",
							source, st->nchunks),
					 errdetail("The chunks copied so far have the table's former definition."),
					 errhint("Drop the target table and call binlog_fdw.load() again with truncate => true.")));
		{
			bl_snapshot_table t = {db, table};

			/* the GTID state: only where the source begins */
			if (bl_snapshot_start(snap, &t, 1, file, sizeof(file), &pos,
								  (st->nchunks == 0 || truncate) && begins ? &raw : NULL, &err) != 0)
				ereport(ERROR,
						(errcode(blpg_snapshot_start_errcode(snap)),
						 errmsg("could not take a snapshot of source \"%s\" for the load of %s: %s",
								server_name, source, err.message),
						 errhint("%s", blpg_snapshot_start_hint(snap, "Call binlog_fdw.load() again once the source is back: it goes on at the next chunk."))));
		}
		/* "": the source cannot tell the GTID state there */
		gtid = raw && raw[0] ? pstrdup(raw) : NULL;
		free(raw);

		memset(&chunk, 0, sizeof(chunk));
		chunk.first = first;
		chunk.limit = chunk_rows;
		if (!first)
		{
			/* the range's next keys: after its last chunk, else its start */
			chunk.after = st->range_chunks[range] > 0 ? st->range_after[range] :
				range > 0 ? st->split[range - 1] : NULL;
			chunk.upto = range < st->nranges - 1 ? st->split[range] : NULL;
		}
		chunk.rows_before = first ? 0 : st->rows;
		chunk.started = st->started;
		/* rows/s of this loader counts its own rows only */
		chunk.rows_at_start = first ? 0 : st->rows - st->mine;
		blpg_load_table(server_name, snap, source, opts, truncate, file, pos, &chunk);
		if (!first && chunk.created)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the target of %s was dropped during its load", source),
					 errhint("Call binlog_fdw.load() again with truncate => true.")));
		if (strcmp(definition(snap, db, table, source), digest) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("table %s changed on the source during chunk %d of its load",
							source, first ? 1 : st->nchunks + 1),
					 errhint("Drop the target table and call binlog_fdw.load() again with truncate => true.")));
		range_end = !chunk.chunked || chunk.rows_read < chunk_rows || chunk.last_key == NULL ||
			(chunk.upto && strcmp(chunk.last_key, chunk.upto) == 0);
		/* the first chunk of a load in ranges: the keys above it split */
		if (first && !range_end && ranges > 1 && chunk.nkey == 1)
		{
			cw.split = split_keys(snap, db, table, chunk.key_columns[0], chunk.last_key,
								  ranges, chunk_rows, source, &cw.nsplit);
			/* the first range is the first chunk's keys */
			range_end = cw.nsplit > 0;
		}
		else if (first && !range_end && ranges > 1 && chunk.nkey > 1)
		{
			cw.split = split_keys_by_rows(snap, db, table, chunk.nkey, chunk.key_columns,
										  chunk.last_key, chunk.estimate, chunk.rows_read,
										  ranges, chunk_rows, pre, npre, source, &cw.nsplit);
			/* the first range is the first chunk's keys */
			range_end = cw.nsplit > 0;
		}

		cw.server_name = server_name;
		cw.db = db;
		cw.table = table;
		cw.hi = range_end ? NULL : chunk.last_key;
		cw.range = range + 1;
		cw.first = first;
		cw.file = file;
		cw.pos = pos;
		cw.digest = digest;
		cw.rows = chunk.rows;
		cw.created = first && chunk.created;
		cw.estimate = chunk.estimate;
		cw.nkey = chunk.chunked ? chunk.nkey : 0;
		cw.key_columns = chunk.key_columns;
		blpg_run_as_owner(chunk_write_fn, &cw);

		/*
		 * The chunk that completes the table (every other one committed):
		 * the source's secondary indexes on a target the load created, then
		 * ANALYZE (unique indexes only if one chunk held the whole table:
		 * see blpg_snapshot_finish_target)
		 */
		if (cw.complete)
			blpg_snapshot_finish_target(server_name, snap, source, chunk.relid, chunk.target,
										first ? chunk.created : st->created,
										first, cw.total_rows,
										chunk.estimate, chunk.started, chunk.rows_at_start);
		/* a source never started begins streaming at its first chunk */
		if (first && begins)
			blpg_snapshot_seed_history(serverid, server_name, snap,
									   list_make1(makeString((char *) source)), file, pos);
	}
	PG_FINALLY();
	{
		bl_snapshot_end(snap);
	}
	PG_END_TRY();

	if (st->started == 0)
		st->started = chunk.started;	/* rows/s of this call counts from here */
	st->mine += chunk.rows;
	st->prefer = range;

	/* ... with the table's definition there in its schema history */
	if (first && begins)
	{
		blpg_position state;

		memset(&state, 0, sizeof(state));
		strlcpy(state.file, file, sizeof(state.file));
		state.pos = pos;
		state.gtid_state = gtid;
		blpg_state_save(serverid, &state);
	}
	ereport(DEBUG1,
			(errmsg("binlog_fdw load of %s: chunk of " INT64_FORMAT " rows of range %d at %s:%llu%s",
					source, chunk.rows, range + 1, file, (unsigned long long) pos,
					cw.complete ? " (last)" : range_end ? " (the range's last)" : "")));
	return cw.complete ? CHUNK_COMPLETE : CHUNK_MORE;
}

/*
 * Load sources[0..n-1], starting at sources[first] and wrapping around
 * (several loaders spread over the tables): chunk after chunk, each
 * committed by commit().  A table another loader completed meanwhile is
 * passed over; one it is loading is shared range by range, chunk by
 * chunk.  A table whose ranges left are all being copied by other loaders
 * is left for a second round, which waits for them.
 */
void
blpg_load_tables(const char *server_name, Oid serverid, const bl_source_options *so,
				 const blpg_apply_options *opts, char **sources, int n, int first,
				 int64 chunk_rows, bool truncate, bool quiet, int ranges, int loader,
				 void (*commit) (void))
{
	MemoryContext outer = CurrentMemoryContext;
	MemoryContext chunk_cxt = AllocSetContextCreate(outer, "binlog_fdw load chunk",
													ALLOCSET_DEFAULT_SIZES);
	bool	   *finished = palloc0(sizeof(bool) * Max(n, 1));

	for (int pass = 0; pass < 2; pass++)
		for (int k = 0; k < n; k++)
		{
			int			i = (first + k) % n;
			char	   *source = sources[i];
			char	   *db,
					   *table;
			load_state	st;
			bool		restart = truncate && pass == 0;

			if (finished[i])
				continue;
			blpg_split_source_table(source, &db, &table);
			memset(&st, 0, sizeof(st));
			st.server_name = server_name;
			st.db = db;
			st.table = table;
			st.cxt = AllocSetContextCreate(outer, "binlog_fdw load state", ALLOCSET_SMALL_SIZES);
			st.prefer = loader + 1;
			blpg_run_as_owner(state_read_fn, &st);
			if (st.complete && !restart)
			{
				if (!quiet && pass == 0)
					ereport(NOTICE,
							(errmsg("%s is loaded already (%d chunks)", source, st.nchunks),
							 errhint("Pass truncate => true to load it again.")));
				finished[i] = true;
				MemoryContextDelete(st.cxt);
				continue;
			}
			if (st.nchunks > 0 && !restart && !quiet && pass == 0)
				ereport(NOTICE,
						(errmsg("the load of %s goes on after chunk %d (key %s)",
								source, st.nchunks, st.after ? st.after : "-")));
			for (;;)
			{
				MemoryContext old = MemoryContextSwitchTo(chunk_cxt);
				chunk_result res;

				res = load_chunk(server_name, serverid, so, opts, source, db, table,
								 chunk_rows, restart, ranges, pass == 1, &st);
				MemoryContextSwitchTo(old);
				commit();
				MemoryContextReset(chunk_cxt);
				if (res == CHUNK_COMPLETE)
				{
					finished[i] = true;
					break;
				}
				/* the others' ranges: another table first */
				if (res == CHUNK_BUSY && pass == 0)
					break;
				restart = false;
				blpg_run_as_owner(state_read_fn, &st);
				if (st.complete)
				{
					finished[i] = true;
					break;
				}
				CHECK_FOR_INTERRUPTS();
			}
			MemoryContextDelete(st.cxt);
		}
	pfree(finished);
	MemoryContextDelete(chunk_cxt);
}

/*
 * A chunked load places each change against its chunk by binlog position
 * (target.c), which names a place in one server's binlog: a source with
 * several hosts, whose worker may stream from another server than the
 * chunk was read from, cannot be loaded in chunks.
 */
void
blpg_load_require_one_host(const blpg_source_config *cfg)
{
	if (cfg->nhosts > 1)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("source \"%s\" has %d hosts, and a chunked load needs one",
						cfg->server_name, cfg->nhosts),
				 errdetail("Its chunks are placed by binlog positions of one server, and the worker may stream from another."),
				 errhint("Copy the tables with binlog_fdw.snapshot(), which records the GTID state, or load while the source has one host.")));
}

/*
 * The reload after a lost position (reload.c): copy source again, chunk
 * by chunk, if its mapping row still shows the load the reload marked (a
 * load with no chunk yet: the first chunk truncates the target) or one it
 * began; anything else (the row gone with a DROP TABLE, a snapshot() that
 * replaced the load) leaves it.  False if there was nothing to do.
 */
bool
blpg_load_reload_table(const char *server_name, Oid serverid, const bl_source_options *so,
					   const blpg_apply_options *opts, const char *source,
					   void (*commit) (void))
{
	char	   *db,
			   *table;
	load_state	st;
	char	   *sources[1];
	bool		restart;

	blpg_split_source_table(source, &db, &table);
	memset(&st, 0, sizeof(st));
	st.server_name = server_name;
	st.db = db;
	st.table = table;
	st.cxt = AllocSetContextCreate(CurrentMemoryContext, "binlog_fdw load state",
								   ALLOCSET_SMALL_SIZES);
	blpg_run_as_owner(state_read_fn, &st);
	if (!st.recorded || st.complete)
	{
		MemoryContextDelete(st.cxt);
		return false;
	}
	sources[0] = (char *) source;
	restart = st.nchunks == 0;
	MemoryContextDelete(st.cxt);
	blpg_load_tables(server_name, serverid, so, opts, sources, 1, 0, blpg_reload_chunk_rows,
					 restart, true, 1, 0, commit);
	return true;
}

static void
procedure_commit(void)
{
	SPI_commit();
	/*
	 * The chunks of one table append to its mapping row one after the other
	 * (read committed: each to the row as the other left it); under the
	 * caller's repeatable read or serializable the second would fail.
	 */
	XactIsoLevel = XACT_READ_COMMITTED;
}

Datum
binlog_fdw_load(PG_FUNCTION_ARGS)
{
	char	   *name;
	ArrayType  *tables;
	int64		chunk_rows = PG_ARGISNULL(2) ? 100000 : PG_GETARG_INT32(2);
	bool		truncate = PG_ARGISNULL(3) ? false : PG_GETARG_BOOL(3);
	bool		parallel_auto = PG_NARGS() < 5 || PG_ARGISNULL(4);
	int			parallel = parallel_auto ? 1 : PG_GETARG_INT32(4);
	/* the key ranges of a table: as many as loaders asked for */
	int			ranges = parallel_auto ? 1 : parallel;
	ForeignServer *server;
	blpg_source_config *cfg;
	blpg_apply_options opts;
	bl_source_options so;
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	char	  **sources;
	volatile int nsources = 0;
	AclResult	aclresult;
	MemoryContext outer;
	List	   *volatile loaders = NIL;

	blpg_require_arg(fcinfo, 0, "server");
	blpg_require_arg(fcinfo, 1, "tables");
	if (fcinfo->context == NULL || !IsA(fcinfo->context, CallContext) ||
		castNode(CallContext, fcinfo->context)->atomic)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_TERMINATION),
				 errmsg("binlog_fdw.load() commits each chunk and cannot run inside a transaction block"),
				 errhint("CALL it on its own, or use binlog_fdw.snapshot() to load in the current transaction.")));
	if (blpg_tables_legacy())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("binlog_fdw.load() needs the extension's version 0.2"),
				 errhint("Run ALTER EXTENSION binlog_fdw UPDATE.")));
	if (chunk_rows < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("chunk_rows must be at least 1")));
	if (parallel < 1 || parallel > BLPG_MAX_LOADERS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("parallel must be between 1 and %d", BLPG_MAX_LOADERS)));
	if (parallel > 1 && truncate)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("binlog_fdw.load() with parallel > 1 cannot truncate"),
				 errdetail("Each loader would start the tables it reaches again."),
				 errhint("Truncate the targets and call it with truncate => false, or load with parallel => 1.")));
	if (SPI_connect_ext(SPI_OPT_NONATOMIC) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	/* what is used after a commit is copied here, which survives them */
	outer = CurrentMemoryContext;
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	tables = PG_GETARG_ARRAYTYPE_P_COPY(1);
	server = GetForeignServerByName(name, false);
	aclresult = pg_foreign_server_aclcheck(server->serverid, GetUserId(), ACL_USAGE);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_FOREIGN_SERVER, server->servername);
	cfg = blpg_load_config(server->serverid, GetUserId());
	blpg_load_require_one_host(cfg);
	blpg_apply_options_load(server->serverid, &opts);
	blpg_snapshot_source_options(cfg, &so);
	deconstruct_array(tables, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	sources = palloc0(sizeof(char *) * Max(n, 1));
	for (int i = 0; i < n; i++)
		if (!nulls[i])
			sources[nsources++] = MemoryContextStrdup(outer, TextDatumGetCString(elems[i]));
	for (int i = 0; i < nsources; i++)
	{
		char	   *db,
				   *table;

		blpg_split_source_table(sources[i], &db, &table);
	}

	/*
	 * parallel NULL: a loader per table (the chunks of one table are copied
	 * one at a time), up to the machine's CPUs; with truncate, one.
	 */
	if (parallel_auto && !truncate)
	{
		long		cpus = sysconf(_SC_NPROCESSORS_ONLN);

		parallel = Min(nsources, Min(BLPG_MAX_LOADERS, (int) Max(cpus, 1)));
		parallel = Max(parallel, 1);
	}
	/* loaders 1..parallel-1 in the background, each starting at its own table */
	for (int i = 1; i < parallel && nsources > 0; i++)
	{
		void	   *l = blpg_loader_launch(server->servername, server->serverid,
										   sources, nsources, i % nsources,
										   chunk_rows, ranges, !parallel_auto);

		/* chosen for the machine: as many as the server can start */
		if (l == NULL)
		{
			ereport(NOTICE,
					(errmsg("binlog_fdw.load() runs with %d loaders: no background worker is free for more", i),
					 errhint("Raise max_worker_processes, or pass parallel.")));
			break;
		}
		loaders = lappend(loaders, l);
	}
	PG_TRY();
	{
		blpg_load_tables(server->servername, server->serverid, &so, &opts, sources, nsources, 0,
						 chunk_rows, truncate, false, ranges, 0, procedure_commit);
	}
	PG_CATCH();
	{
		blpg_loaders_stop(loaders);
		PG_RE_THROW();
	}
	PG_END_TRY();
	blpg_loaders_wait(loaders);
	SPI_finish();
	PG_RETURN_VOID();
}
