/*
 * target.c
 *	  Target tables of the apply path: which PostgreSQL table a MySQL table
 *	  goes to, how its columns map, which key finds its rows, and the row
 *	  operations themselves through the executor's replication routines
 *	  (ExecSimpleRelationInsert/Update/Delete, as PostgreSQL's own logical
 *	  replication worker uses them), with partition routing.
 *
 * Mapping: binlog_fdw.table_mapping rows first (read as the extension's
 * owner), then the default: MySQL db.table to PostgreSQL schema.table,
 * where the schema is the db renamed by the source's schema_map option.  Columns match by name (exactly, then
 * ignoring case); target columns the source lacks get their defaults on
 * insert and keep their value on update.  Partial row images
 * (binlog_row_image MINIMAL or NOBLOB): an insert's absent columns take the
 * target's defaults, an update changes only the columns present, rows are
 * found by the key columns present (a key column absent, or any column
 * absent without a key, is an error, never a guess).
 *
 * Keys: the chosen key_columns (a unique index over them), else the primary
 * key, else the replica identity index; a keyless target is an error
 * unless the source's keyless option is full_row.
 *
 * Privileges: apply runs as the calling role.  The first row of each
 * operation on a target checks that role's privilege for it (and SELECT,
 * which finding rows needs), as a DML statement would; a target with
 * row-level security enabled for the role is refused, like PostgreSQL's
 * own logical replication does.
 *
 * Inserts are batched: consecutive inserts into one plain table (no BEFORE
 * ROW triggers, conflict policy error) are buffered, constraint-checked
 * one by one, and written with table_multi_insert() (as COPY does), then
 * their index entries and AFTER ROW triggers, row by row.  Any other
 * operation, another target, DDL, or the end of the apply call writes the
 * buffer first, so the order of changes is kept.  Errors while writing
 * name the row, its key and its binlog position like any other.
 *
 * Conflicts (a row to update or delete is missing, an inserted key exists):
 * error (default), skip, or overwrite (upsert), per source or per table;
 * errors name the table, the key and the binlog position.  Each one is
 * recorded (conflict.c): those the policy resolves by log_conflict(), those
 * raising an error by the row's error context callback.
 */
#include "apply/apply.h"

#include "bl_gtid_set.h"
#include "bl_gtid_state.h"
#include "bl_value_text.h"

#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_index.h"
#include "commands/defrem.h"
#include "commands/trigger.h"
#include "executor/execPartition.h"
#include "executor/executor.h"
#include "executor/nodeModifyTable.h"
#include "access/heapam.h"
#include "executor/spi.h"
#include "foreign/foreign.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_relation.h"
#include "rewrite/rewriteHandler.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/formatting.h"
#include "utils/hsearch.h"
#include "utils/json.h"
#include "utils/array.h"
#include "catalog/pg_type.h"
#include "access/htup_details.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/acl.h"
#include "utils/rls.h"
#include "miscadmin.h"

typedef struct table_mapping
{
	char		key[NAMEDATALEN * 2 + 2];	/* "schema.table" */
	char	   *target_schema;
	char	   *target_table;
	List	   *key_columns;	/* of char* */
	int			conflict;		/* -1 = the source's */
	bool		has_sync;
	char		sync_file[BLPG_FILE_LEN];
	uint64		sync_pos;
	char	   *sync_gtid;		/* the GTID state there, NULL: not known */
	bool		skip;
	int			nchunks;		/* a chunked load's chunks (load.c), in key order */
	bool		load_pending;	/* a load that has copied no chunk yet: every
								 * change is in its copy (reload.c) */
	int			chunk_nkey;		/* columns of their key */
	char	  **chunk_key_names;	/* ... their names (NULL: the target's key) */
	int128	   *chunk_hi;		/* nchunks x chunk_nkey bounds */
	bool	   *chunk_last;		/* no upper bound: the load's last chunk */
	char	  **chunk_file;
	uint64	   *chunk_pos;
	int			nranges;		/* key ranges (load_split): chunks grouped by
								 * range, each range's in key order */
	int128	   *range_hi;		/* nranges - 1 upper bounds, chunk_nkey
								 * integers each */
	int		   *range_start;	/* range r: chunks range_start[r] ..
								 * range_start[r + 1] - 1 */
	char	   *history;		/* history table (temporal.c), NULL: none */
} table_mapping;

typedef struct default_col
{
	AttrNumber	attnum;
	ExprState  *expr;
} default_col;

struct blpg_target
{
	uint32		version;		/* hash key: bl_table.version */
	const bl_table *table;
	bool		skip;			/* unmapped or mapped to nothing */
	char	   *src_name;		/* "schema.table" */
	Relation	rel;
	char	   *rel_name;		/* "schema.table" of the target */
	EState	   *estate;
	ResultRelInfo *rri;
	EPQState	epq;
	int			nconv;
	blpg_col_conv *conv;		/* mapped columns */
	int		   *conv_of_src;	/* source column -> conv index, -1 */
	ExprState **conv_default;	/* conv index -> the column's default, for
								 * inserts whose image lacks the column
								 * (binlog_row_image MINIMAL/NOBLOB); NULL
								 * if none */
	int			ndefaults;
	default_col *defaults;
	Oid			key_index;		/* InvalidOid: full row */
	int			nkey;
	AttrNumber *key_attnums;
	blpg_conflict conflict;
	bool		has_sync;
	char		sync_file[BLPG_FILE_LEN];
	uint64		sync_pos;
	char	   *sync_gtid;
	struct copy_gtids *sync_gtids;	/* sync_gtid parsed, on first use */
	bool		by_gtid;		/* the source has several hosts */
	int			nchunks;		/* a chunked load: see table_mapping */
	bool		load_pending;	/* ... that has no chunk yet: skip every change */
	int			chunk_nkey;
	int128	   *chunk_hi;
	bool	   *chunk_last;
	char	  **chunk_file;
	uint64	   *chunk_pos;
	int			nranges;
	int128	   *range_hi;
	int		   *range_start;
	int			chunk_key_src[BLPG_CHUNK_KEY_MAX];	/* MySQL columns of the
													 * chunks' key; [0] -1:
													 * one whole chunk */
	bool		partitioned;
	ModifyTableState *mtstate;
	PartitionTupleRouting *proute;
	TupleTableSlot *newslot;	/* in the target's row type */
	TupleTableSlot *searchslot;
	TupleTableSlot *oldslot;
	List	   *part_rris;		/* partitions with a slot in part_slots */
	List	   *part_slots;		/* rows found there, in their row type */
	AclMode		checked;		/* privileges already checked */
	blpg_table_counts counts;	/* binlog_fdw.table_stats (stats.c) */
	bool		touched;		/* counted in blpg_targets.touched */
	blpg_history *history;		/* NULL: no history table */
	TupleTableSlot *histslot;	/* a partition's row in the target's type */

	/* multi-insert buffer (can_buffer targets only) */
	bool		can_buffer;
	int			nbuffered;
	Size		buffered_bytes;
	TupleTableSlot **bufslots;	/* MULTI_INSERT_ROWS heap slots */
	uint64	   *bufpos;			/* binlog position of each buffered row */
	uint64	   *bufseq;			/* and its change sequence */
	char	   *bufgtid;		/* MULTI_INSERT_ROWS * BLPG_GTID_LEN */
	char		buffile[BLPG_FILE_LEN]; /* binlog file of all buffered rows */
	BulkInsertState bistate;

	/* binlog_fdw.filters (rowfilter.c) */
	const blpg_filter_rule *rule;	/* NULL: none */
	ExprState  *rowfilter;		/* NULL: every row */
	Bitmapset  *rowfilter_attrs;	/* the target columns it reads */
	TupleTableSlot *filterslot;
	int			wk_state;		/* parallel apply: 0 not known yet, else
								 * 1 + its blpg_write_key class */
	int		   *wk_src;			/* MySQL column of each key column */
};

#define MULTI_INSERT_ROWS	1000
#define MULTI_INSERT_BYTES	(1024 * 1024)

struct blpg_targets
{
	char	   *server_name;
	Oid			serverid;
	const blpg_apply_options *opts;
	HTAB	   *by_version;
	HTAB	   *mappings;
	MemoryContext cxt;
	EState	   *trig_estate;
	bool		trig_started;
	List	   *targets;
	blpg_target *pending;		/* the target with buffered inserts */
	List	   *touched;		/* OIDs of the tables that got rows */
	blpg_filter *filters;		/* binlog_fdw.filters of the source */
	bool		by_gtid;		/* several hosts: copies placed by GTID */
};

typedef struct target_entry
{
	uint32		version;
	blpg_target *target;
} target_entry;

/* ---- positions ---- */

int
blpg_position_cmp(const char *file_a, uint64 pos_a, const char *file_b, uint64 pos_b)
{
	const char *da = strrchr(file_a, '.');
	const char *db = strrchr(file_b, '.');
	int			c;

	/* mysql-bin.000012: compare the numbers, not the text */
	if (da && db && (da - file_a) == (db - file_b) &&
		strncmp(file_a, file_b, da - file_a) == 0)
	{
		unsigned long long na = strtoull(da + 1, NULL, 10);
		unsigned long long nb = strtoull(db + 1, NULL, 10);

		c = na < nb ? -1 : na > nb ? 1 : 0;
	}
	else
		c = strcmp(file_a, file_b);
	if (c != 0)
		return c;
	return pos_a < pos_b ? -1 : pos_a > pos_b ? 1 : 0;
}

/* ---- mappings ---- */

#define MAPPING_COLUMNS_OF(load) "source_schema, source_table, target_schema, target_table, " \
	"key_columns, conflict, sync_file, sync_pos, skip, " load " FROM binlog_fdw.table_mapping "
/* 0.1's table_mapping (before ALTER EXTENSION UPDATE) has no load columns */
#define MAPPING_COLUMNS (blpg_tables_legacy() ? \
	MAPPING_COLUMNS_OF("NULL::text[], NULL::text[], NULL::bigint[], NULL::text[], NULL::text, " \
					   "NULL::text[], NULL::integer[], NULL::text") : \
	MAPPING_COLUMNS_OF("load_key_hi, load_file, load_pos, load_key_columns, history_table, " \
					   "load_split, load_range, sync_gtid"))

/* A chunk's or a range's bound: nkey integers, comma-separated. */
bool
blpg_parse_key_bound(const char *text, int nkey, int128 *out)
{
	char	   *copy = pstrdup(text);
	char	   *save = NULL;
	int			n = 0;

	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (n >= nkey || !blpg_parse_int128(tok, &out[n++]))
			return false;
	return n == nkey;
}

/* Keys compared as MySQL orders a primary key of integers: column by column. */
int
blpg_key_cmp(const int128 *a, const int128 *b, int n)
{
	for (int i = 0; i < n; i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return 0;
}

/*
 * The key ranges of a chunked load (load_split, load_range: load.c): the
 * chunks of m grouped by range, in their order (each range's chunks were
 * committed in key order).
 */
static void
store_ranges(table_mapping *m, const char *key, HeapTuple tup, TupleDesc desc)
{
	bool		snull,
				rnull;
	Datum		split = SPI_getbinval(tup, desc, 15, &snull);
	Datum		range = SPI_getbinval(tup, desc, 16, &rnull);
	int			nh = m->nchunks;
	int		   *of = palloc0(sizeof(int) * Max(nh, 1));
	int		   *next;
	int128	   *hi;
	bool	   *last;
	char	  **file;
	uint64	   *pos;

	m->nranges = 1;
	m->range_hi = NULL;
	if (!snull)
	{
		Datum	   *se;
		bool	   *sn;
		int			ns;

		deconstruct_array(DatumGetArrayTypeP(split), TEXTOID, -1, false, TYPALIGN_INT, &se, &sn, &ns);
		if (ns > 0 && (m->chunk_nkey < 1 || m->chunk_nkey > BLPG_CHUNK_KEY_MAX))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("the load of %s in binlog_fdw.table_mapping has key ranges over %d columns",
							key, m->chunk_nkey)));
		m->range_hi = palloc0(sizeof(int128) * Max(ns, 1) * Max(m->chunk_nkey, 1));
		for (int i = 0; i < ns; i++)
		{
			int128	   *b = &m->range_hi[i * m->chunk_nkey];

			if (sn[i] || !blpg_parse_key_bound(TextDatumGetCString(se[i]), m->chunk_nkey, b) ||
				(i > 0 && blpg_key_cmp(b, b - m->chunk_nkey, m->chunk_nkey) <= 0))
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("range bound %d of the load of %s is not a key of %d integers above the one before",
								i + 1, key, m->chunk_nkey)));
		}
		m->nranges = ns + 1;
	}
	if (!rnull)
	{
		Datum	   *re;
		bool	   *rn;
		int			nr;

		deconstruct_array(DatumGetArrayTypeP(range), INT4OID, 4, true, TYPALIGN_INT, &re, &rn, &nr);
		for (int i = 0; i < Max(nr, nh); i++)
			if (nr != nh || rn[i] || DatumGetInt32(re[i]) < 1 || DatumGetInt32(re[i]) > m->nranges)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("the ranges of the load of %s in binlog_fdw.table_mapping do not match its chunks",
								key)));
			else
				of[i] = DatumGetInt32(re[i]) - 1;
	}
	/* no ranges recorded (a load of one range): all range 1 */
	m->range_start = palloc0(sizeof(int) * (m->nranges + 1));
	for (int i = 0; i < nh; i++)
		m->range_start[of[i] + 1]++;
	for (int r = 0; r < m->nranges; r++)
		m->range_start[r + 1] += m->range_start[r];
	next = palloc(sizeof(int) * m->nranges);
	memcpy(next, m->range_start, sizeof(int) * m->nranges);
	hi = palloc0(sizeof(int128) * Max(nh, 1) * m->chunk_nkey);
	last = palloc0(sizeof(bool) * Max(nh, 1));
	file = palloc0(sizeof(char *) * Max(nh, 1));
	pos = palloc0(sizeof(uint64) * Max(nh, 1));
	for (int i = 0; i < nh; i++)
	{
		int			j = next[of[i]]++;

		memcpy(&hi[j * m->chunk_nkey], &m->chunk_hi[i * m->chunk_nkey], sizeof(int128) * m->chunk_nkey);
		last[j] = m->chunk_last[i];
		file[j] = m->chunk_file[i];
		pos[j] = m->chunk_pos[i];
	}
	m->chunk_hi = hi;
	m->chunk_last = last;
	m->chunk_file = file;
	m->chunk_pos = pos;
}

/* One row of MAPPING_COLUMNS into ts->mappings. */
static void
store_mapping(blpg_targets *ts, HeapTuple tup, TupleDesc desc)
{
	char		key[NAMEDATALEN * 2 + 2];
	table_mapping *m;
	bool		found;
	char	   *s;
	MemoryContext old;

	snprintf(key, sizeof(key), "%s.%s", SPI_getvalue(tup, desc, 1), SPI_getvalue(tup, desc, 2));
	m = hash_search(ts->mappings, key, HASH_ENTER, &found);
	old = MemoryContextSwitchTo(ts->cxt);
	s = SPI_getvalue(tup, desc, 3);
	m->target_schema = s ? pstrdup(s) : NULL;
	s = SPI_getvalue(tup, desc, 4);
	m->target_table = s ? pstrdup(s) : NULL;
	m->key_columns = NIL;
	{
		bool		isnull;
		Datum		d = SPI_getbinval(tup, desc, 5, &isnull);

		if (!isnull)
		{
			Datum	   *elems;
			bool	   *nulls;
			int			n;

			deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT,
							  &elems, &nulls, &n);
			for (int k = 0; k < n; k++)
				if (!nulls[k])
					m->key_columns = lappend(m->key_columns, TextDatumGetCString(elems[k]));
		}
	}
	s = SPI_getvalue(tup, desc, 6);
	m->conflict = s == NULL ? -1 :
		strcmp(s, "skip") == 0 ? BLPG_CONFLICT_SKIP :
		strcmp(s, "overwrite") == 0 ? BLPG_CONFLICT_OVERWRITE : BLPG_CONFLICT_ERROR;
	s = SPI_getvalue(tup, desc, 7);
	m->has_sync = s != NULL;
	strlcpy(m->sync_file, s ? s : "", sizeof(m->sync_file));
	s = SPI_getvalue(tup, desc, 8);
	m->sync_pos = s ? strtoull(s, NULL, 10) : 0;
	s = SPI_getvalue(tup, desc, 17);
	m->sync_gtid = s && s[0] ? s : NULL;
	s = SPI_getvalue(tup, desc, 9);
	m->skip = s && s[0] == 't';
	s = SPI_getvalue(tup, desc, 14);
	m->history = s ? pstrdup(s) : NULL;
	m->nchunks = 0;
	m->load_pending = false;
	{
		bool		n1,
					n2,
					n3;
		Datum		hi = SPI_getbinval(tup, desc, 10, &n1);
		Datum		files = SPI_getbinval(tup, desc, 11, &n2);
		Datum		poss = SPI_getbinval(tup, desc, 12, &n3);

		if (!n1 && !n2 && !n3)
		{
			Datum	   *he,
					   *fe,
					   *pe;
			bool	   *hn,
					   *fn,
					   *pn;
			int			nh,
						nf,
						np;

			deconstruct_array(DatumGetArrayTypeP(hi), TEXTOID, -1, false, TYPALIGN_INT, &he, &hn, &nh);
			deconstruct_array(DatumGetArrayTypeP(files), TEXTOID, -1, false, TYPALIGN_INT, &fe, &fn, &nf);
			deconstruct_array(DatumGetArrayTypeP(poss), INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
							  &pe, &pn, &np);
			if (nh != nf || nh != np)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("the chunks of the load of %s in binlog_fdw.table_mapping do not match", key)));
			m->nchunks = nh;
			m->load_pending = nh == 0;
			/* the key's width: its columns, else the first bound's values */
			m->chunk_nkey = 1;
			m->chunk_key_names = NULL;
			{
				bool		nk;
				Datum		kc = SPI_getbinval(tup, desc, 13, &nk);

				if (!nk)
				{
					Datum	   *ke;
					bool	   *kn;
					int			nkc;

					deconstruct_array(DatumGetArrayTypeP(kc), TEXTOID, -1, false, TYPALIGN_INT,
									  &ke, &kn, &nkc);
					if (nkc < 1 || nkc > BLPG_CHUNK_KEY_MAX)
						ereport(ERROR,
								(errcode(ERRCODE_DATA_CORRUPTED),
								 errmsg("the load of %s in binlog_fdw.table_mapping has %d key columns",
										key, nkc)));
					m->chunk_nkey = nkc;
					m->chunk_key_names = palloc0(sizeof(char *) * nkc);
					for (int k = 0; k < nkc; k++)
						m->chunk_key_names[k] = kn[k] ? "" : TextDatumGetCString(ke[k]);
				}
			}
			m->chunk_hi = palloc0(sizeof(int128) * Max(nh, 1) * m->chunk_nkey);
			m->chunk_last = palloc0(sizeof(bool) * Max(nh, 1));
			m->chunk_file = palloc0(sizeof(char *) * Max(nh, 1));
			m->chunk_pos = palloc0(sizeof(uint64) * Max(nh, 1));
			for (int i = 0; i < nh; i++)
			{
				m->chunk_last[i] = hn[i];
				if (!hn[i] && !blpg_parse_key_bound(TextDatumGetCString(he[i]), m->chunk_nkey,
										   &m->chunk_hi[i * m->chunk_nkey]))
					ereport(ERROR,
							(errcode(ERRCODE_DATA_CORRUPTED),
							 errmsg("chunk %d of the load of %s has a bound that is not %d integer(s)",
									i + 1, key, m->chunk_nkey)));
				m->chunk_file[i] = fn[i] ? "" : TextDatumGetCString(fe[i]);
				m->chunk_pos[i] = pn[i] ? 0 : (uint64) DatumGetInt64(pe[i]);
			}
			store_ranges(m, key, tup, desc);
		}
	}
	MemoryContextSwitchTo(old);
}

bool
blpg_parse_int128(const char *s, int128 *out)
{
	bool		neg = false;
	uint128		v = 0;

	if (*s == '-' || *s == '+')
		neg = *s++ == '-';
	if (*s == '\0')
		return false;
	for (; *s; s++)
	{
		if (*s < '0' || *s > '9' || v > ((uint128) 1 << 100))
			return false;
		v = v * 10 + (uint128) (*s - '0');
	}
	*out = neg ? -(int128) v : (int128) v;
	return true;
}

static void
load_mappings_fn(void *arg)
{
	blpg_targets *ts = arg;
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];

	args[0] = CStringGetTextDatum(ts->server_name);
	if (SPI_execute_with_args(psprintf("SELECT %sWHERE server_name = $1", MAPPING_COLUMNS),
							  1, argtypes, args, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read binlog_fdw.table_mapping");
	for (uint64 i = 0; i < SPI_processed; i++)
		store_mapping(ts, SPI_tuptable->vals[i], SPI_tuptable->tupdesc);
}

typedef struct refresh_arg
{
	blpg_targets *ts;
	const char *schema;
	const char *table;
} refresh_arg;

/*
 * The mapping of one source table as committed now, not as of this
 * transaction's snapshot: a load of it may have committed since (its
 * position is what apply must skip up to).
 */
static void
refresh_mapping_fn(void *arg)
{
	refresh_arg *ra = arg;
	Oid			argtypes[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		args[3];
	SPIPlanPtr	plan;
	char		key[NAMEDATALEN * 2 + 2];

	args[0] = CStringGetTextDatum(ra->ts->server_name);
	args[1] = CStringGetTextDatum(ra->schema);
	args[2] = CStringGetTextDatum(ra->table);
	plan = SPI_prepare(psprintf("SELECT %sWHERE server_name = $1 AND source_schema = $2 "
								"AND source_table = $3", MAPPING_COLUMNS),
					   3, argtypes);
	if (plan == NULL ||
		SPI_execute_snapshot(plan, args, NULL, GetLatestSnapshot(), InvalidSnapshot,
							 true, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read binlog_fdw.table_mapping");
	snprintf(key, sizeof(key), "%s.%s", ra->schema, ra->table);
	hash_search(ra->ts->mappings, key, HASH_REMOVE, NULL);
	if (SPI_processed == 1)
		store_mapping(ra->ts, SPI_tuptable->vals[0], SPI_tuptable->tupdesc);
}

/*
 * The source's rows of binlog_fdw.table_mapping, read as the extension's
 * owner: the applying role needs privileges on its targets only.
 */
static void
load_mappings(blpg_targets *ts)
{
	HASHCTL		ctl;

	ctl.keysize = NAMEDATALEN * 2 + 2;
	ctl.entrysize = sizeof(table_mapping);
	ctl.hcxt = ts->cxt;
	ts->mappings = hash_create("binlog_fdw mappings", 64, &ctl,
							   HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	blpg_run_as_owner(load_mappings_fn, ts);
}

/*
 * Has the source several hosts?  Its worker then follows a failover by
 * GTID, and a binlog position names a place in one server's binlog only.
 */
static bool
source_has_hosts(Oid serverid)
{
	ForeignServer *server = GetForeignServer(serverid);
	ListCell   *lc;

	foreach(lc, server->options)
	{
		DefElem    *def = lfirst(lc);
		blpg_host  *hosts;

		if (strcmp(def->defname, "host") == 0)
			return blpg_hosts_parse(defGetString(def), 0, &hosts) > 1;
	}
	return false;
}

blpg_targets *
blpg_targets_create(const char *server_name, const blpg_apply_options *opts)
{
	blpg_targets *ts = palloc0(sizeof(blpg_targets));
	HASHCTL		ctl;

	ts->server_name = pstrdup(server_name);
	ts->serverid = GetForeignServerByName(server_name, false)->serverid;
	ts->by_gtid = source_has_hosts(ts->serverid);
	ts->opts = opts;
	ts->cxt = AllocSetContextCreate(CurrentMemoryContext, "binlog_fdw targets",
									ALLOCSET_DEFAULT_SIZES);
	ctl.keysize = sizeof(uint32);
	ctl.entrysize = sizeof(target_entry);
	ctl.hcxt = ts->cxt;
	ts->by_version = hash_create("binlog_fdw targets", 64, &ctl,
								 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	load_mappings(ts);
	ts->filters = blpg_apply_filters(server_name);
	ts->trig_estate = CreateExecutorState();
	AfterTriggerBeginQuery();
	ts->trig_started = true;
	return ts;
}

/*
 * The EState that AfterTriggerEndQuery() fires the queued AFTER ROW triggers
 * (foreign keys among them) with opens the relations of the triggers' tables
 * (ExecGetTriggerResultRel()) and makes slots in their row types: close
 * them, or each is a relcache and TupleDesc reference leak at commit.
 */
static void
free_trigger_estate(blpg_targets *ts)
{
	ExecCloseResultRelations(ts->trig_estate);
	ExecResetTupleTable(ts->trig_estate->es_tupleTable, false);
	FreeExecutorState(ts->trig_estate);
	ts->trig_estate = NULL;
}

static void
close_target(blpg_target *t)
{
	if (t->skip || t->rel == NULL)
		return;
	Assert(t->nbuffered == 0);
	blpg_history_close(t->history);
	t->history = NULL;
	if (t->bistate)
		FreeBulkInsertState(t->bistate);
	if (t->proute)
		ExecCleanupTupleRouting(t->mtstate, t->proute);
	EvalPlanQualEnd(&t->epq);
	ExecCloseIndices(t->rri);
	ExecResetTupleTable(t->estate->es_tupleTable, false);
	FreeExecutorState(t->estate);
	table_close(t->rel, NoLock);
	t->rel = NULL;
}

void
blpg_targets_finish(blpg_targets *ts)
{
	ListCell   *lc;

	blpg_targets_flush(ts);
	/* AFTER ROW triggers (foreign keys among them) fire now */
	if (ts->trig_started)
	{
		AfterTriggerEndQuery(ts->trig_estate);
		ts->trig_started = false;
	}
	foreach(lc, ts->targets)
		close_target(lfirst(lc));
	free_trigger_estate(ts);
	MemoryContextDelete(ts->cxt);
}

List *
blpg_targets_counts(blpg_targets *ts)
{
	List	   *out = NIL;
	ListCell   *lc;

	foreach(lc, ts->targets)
	{
		blpg_target *tg = lfirst(lc);
		blpg_table_counts *c = &tg->counts;

		if (tg->skip)
			continue;
		if (c->rows[0] + c->rows[1] + c->rows[2] +
			c->conflicts[0] + c->conflicts[1] + c->conflicts[2] == 0)
			continue;
		c->source_table = tg->src_name;
		c->target_table = tg->rel_name;
		out = lappend(out, c);
	}
	return out;
}

int
blpg_targets_touched(blpg_targets *ts)
{
	return list_length(ts->touched);
}

void
blpg_targets_invalidate(blpg_targets *ts)
{
	ListCell   *lc;
	HASHCTL		ctl;

	blpg_targets_flush(ts);
	/* fire what is queued before tables change shape */
	AfterTriggerEndQuery(ts->trig_estate);
	foreach(lc, ts->targets)
		close_target(lfirst(lc));
	free_trigger_estate(ts);
	{
		/* as long-lived as the targets, whatever context DDL runs in */
		MemoryContext old = MemoryContextSwitchTo(ts->cxt);

		ts->trig_estate = CreateExecutorState();
		MemoryContextSwitchTo(old);
	}
	list_free(ts->targets);
	ts->targets = NIL;
	hash_destroy(ts->by_version);
	ctl.keysize = sizeof(uint32);
	ctl.entrysize = sizeof(target_entry);
	ctl.hcxt = ts->cxt;
	ts->by_version = hash_create("binlog_fdw targets", 64, &ctl,
								 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	hash_destroy(ts->mappings);
	load_mappings(ts);
	AfterTriggerBeginQuery();
}

/* ---- building a target ---- */

static const char *
mapped_schema(blpg_targets *ts, const char *schema)
{
	ListCell   *lc;

	foreach(lc, ts->opts->schema_map)
	{
		List	   *pair = lfirst(lc);

		if (strcmp(strVal(linitial(pair)), schema) == 0)
			return strVal(lsecond(pair));
	}
	return schema;
}

static Oid
find_relation(const char *schema, const char *table)
{
	Oid			nsp = get_namespace_oid(schema, true);
	Oid			rel;

	if (!OidIsValid(nsp))
	{
		char	   *lower = asc_tolower(schema, strlen(schema));

		nsp = get_namespace_oid(lower, true);
		if (!OidIsValid(nsp))
			return InvalidOid;
	}
	rel = get_relname_relid(table, nsp);
	if (!OidIsValid(rel))
		rel = get_relname_relid(asc_tolower(table, strlen(table)), nsp);
	return rel;
}

/* The unique index whose columns are exactly `cols` (names). */
static Oid
index_on_columns(Relation rel, List *cols)
{
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	TupleDesc	desc = RelationGetDescr(rel);

	foreach(lc, indexes)
	{
		Oid			idx = lfirst_oid(lc);
		HeapTuple	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(idx));
		Form_pg_index form;
		bool		match = true;

		if (!HeapTupleIsValid(tup))
			continue;
		form = (Form_pg_index) GETSTRUCT(tup);
		if (!form->indisunique || form->indnkeyatts != list_length(cols) ||
			!heap_attisnull(tup, Anum_pg_index_indexprs, NULL) ||
			!heap_attisnull(tup, Anum_pg_index_indpred, NULL))
			match = false;
		for (int k = 0; match && k < form->indnkeyatts; k++)
		{
			AttrNumber	a = form->indkey.values[k];
			bool		in = false;
			ListCell   *lc2;

			if (a <= 0)
			{
				match = false;
				break;
			}
			foreach(lc2, cols)
				if (strcmp(NameStr(TupleDescAttr(desc, a - 1)->attname), lfirst(lc2)) == 0)
					in = true;
			match = in;
		}
		ReleaseSysCache(tup);
		if (match)
			return idx;
	}
	return InvalidOid;
}

static int
find_source_column(const bl_table *t, const char *name)
{
	for (uint32 i = 0; i < t->ncols; i++)
		if (t->cols[i].name.ptr && strlen(name) == t->cols[i].name.len &&
			memcmp(t->cols[i].name.ptr, name, t->cols[i].name.len) == 0)
			return (int) i;
	for (uint32 i = 0; i < t->ncols; i++)
		if (t->cols[i].name.ptr && strlen(name) == t->cols[i].name.len &&
			pg_strncasecmp(t->cols[i].name.ptr, name, t->cols[i].name.len) == 0)
			return (int) i;
	return -1;
}

static void
build_target(blpg_targets *ts, blpg_target *tg, const bl_table *t)
{
	char		key[NAMEDATALEN * 2 + 2];
	table_mapping *m;
	const char *schema;
	const char *table;
	Oid			relid;
	TupleDesc	desc;
	RangeTblEntry *rte;
	List	   *key_names = NIL;

	snprintf(key, sizeof(key), "%s.%s", t->schema.ptr, t->name.ptr);
	tg->src_name = pstrdup(key);

	/* wait for a load of the table, then see its position (synclock.c) */
	blpg_sync_lock_share(ts->serverid, t->schema.ptr, t->name.ptr);
	{
		refresh_arg ra = {ts, t->schema.ptr, t->name.ptr};

		blpg_run_as_owner(refresh_mapping_fn, &ra);
	}
	m = hash_search(ts->mappings, key, HASH_FIND, NULL);
	if (m && m->skip)
	{
		tg->skip = true;
		return;
	}
	schema = m && m->target_schema ? m->target_schema : mapped_schema(ts, t->schema.ptr);
	table = m && m->target_table ? m->target_table : t->name.ptr;
	relid = find_relation(schema, table);
	if (!OidIsValid(relid))
	{
		if (!ts->opts->unmapped_error)
		{
			tg->skip = true;
			return;
		}
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("no target table for MySQL table %s: %s.%s does not exist",
						key, quote_identifier(schema), quote_identifier(table)),
				 errhint("Create it (binlog_fdw.sync_table() creates and loads it), map the table elsewhere with binlog_fdw.map_table(), or set the source's unmapped option to 'skip'.")));
	}
	if (t->names_source == BL_NAMES_NONE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("column names of MySQL table %s are unknown", key),
				 errhint("Set binlog_row_metadata=FULL on the source, or give the source account SELECT on information_schema.")));

	tg->rel = table_open(relid, RowExclusiveLock);
	tg->rel_name = psprintf("%s.%s", quote_identifier(get_namespace_name(RelationGetNamespace(tg->rel))),
							quote_identifier(RelationGetRelationName(tg->rel)));
	if (tg->rel->rd_rel->relkind != RELKIND_RELATION &&
		tg->rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("target %s of MySQL table %s is not a table", tg->rel_name, key)));
	tg->partitioned = tg->rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE;
	desc = RelationGetDescr(tg->rel);

	/* columns */
	tg->conv = palloc0(sizeof(blpg_col_conv) * desc->natts);
	tg->conv_of_src = palloc(sizeof(int) * t->ncols);
	for (uint32 i = 0; i < t->ncols; i++)
		tg->conv_of_src[i] = -1;
	tg->defaults = palloc0(sizeof(default_col) * desc->natts);
	tg->conv_default = palloc0(sizeof(ExprState *) * desc->natts);
	for (int a = 0; a < desc->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, a);
		int			src;

		if (att->attisdropped || att->attgenerated)
			continue;
		src = find_source_column(t, NameStr(att->attname));
		if (src < 0)
		{
			Node	   *def = build_column_default(tg->rel, a + 1);

			if (def)
			{
				tg->defaults[tg->ndefaults].attnum = a + 1;
				tg->defaults[tg->ndefaults].expr = ExecInitExpr((Expr *) expression_planner((Expr *) def), NULL);
				tg->ndefaults++;
			}
			continue;
		}
		{
			blpg_col_conv *cc = &tg->conv[tg->nconv];
			Node	   *def = build_column_default(tg->rel, a + 1);

			tg->conv_default[tg->nconv] = def ?
				ExecInitExpr((Expr *) expression_planner((Expr *) def), NULL) : NULL;
			cc->src = src;
			cc->attnum = a + 1;
			cc->name = pstrdup(NameStr(att->attname));
			blpg_conv_init(cc, att->atttypid, att->atttypmod);
			tg->conv_of_src[src] = tg->nconv;
			tg->nconv++;
		}
	}

	/* key */
	tg->conflict = m && m->conflict >= 0 ? (blpg_conflict) m->conflict : ts->opts->conflict;
	if (m && m->key_columns)
	{
		tg->key_index = index_on_columns(tg->rel, m->key_columns);
		if (!OidIsValid(tg->key_index))
		{
			StringInfoData cols;
			ListCell   *lc;

			initStringInfo(&cols);
			foreach(lc, m->key_columns)
				appendStringInfo(&cols, "%s%s", cols.len ? ", " : "",
								 quote_identifier(lfirst(lc)));
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("target %s has no unique index on the key columns (%s) chosen for %s",
							tg->rel_name, cols.data, key),
					 errhint("Create a unique index on exactly these columns, or choose other key columns with binlog_fdw.map_table().")));
		}
	}
	else
	{
		tg->key_index = RelationGetPrimaryKeyIndex(tg->rel);
		if (!OidIsValid(tg->key_index))
			tg->key_index = RelationGetReplicaIndex(tg->rel);
	}
	if (OidIsValid(tg->key_index))
	{
		HeapTuple	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(tg->key_index));
		Form_pg_index form = (Form_pg_index) GETSTRUCT(tup);

		tg->nkey = form->indnkeyatts;
		tg->key_attnums = palloc(sizeof(AttrNumber) * tg->nkey);
		for (int k = 0; k < tg->nkey; k++)
		{
			AttrNumber	a = form->indkey.values[k];
			bool		mapped = false;

			tg->key_attnums[k] = a;
			for (int c = 0; c < tg->nconv; c++)
				if (tg->conv[c].attnum == a)
					mapped = true;
			if (!mapped)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
						 errmsg("key column \"%s\" of %s has no column in MySQL table %s",
								NameStr(TupleDescAttr(desc, a - 1)->attname), tg->rel_name, key)));
			key_names = lappend(key_names, NameStr(TupleDescAttr(desc, a - 1)->attname));
		}
		ReleaseSysCache(tup);
	}
	else if (!ts->opts->keyless_full_row)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("target %s of MySQL table %s has no primary key", tg->rel_name, key),
				 errhint("Add a primary key or unique index (and choose it with binlog_fdw.map_table(..., key_columns => ...)), or set the source's keyless option to 'full_row' to match rows on all columns.")));
	(void) key_names;

	if (m && m->has_sync)
	{
		tg->has_sync = true;
		strlcpy(tg->sync_file, m->sync_file, sizeof(tg->sync_file));
		tg->sync_pos = m->sync_pos;
		tg->sync_gtid = m->sync_gtid;
	}
	tg->by_gtid = ts->by_gtid;
	tg->chunk_key_src[0] = -1;
	tg->load_pending = m && m->load_pending;
	if (m && m->nchunks > 0)
	{
		tg->nchunks = m->nchunks;
		tg->chunk_nkey = m->chunk_nkey;
		tg->chunk_hi = m->chunk_hi;
		tg->chunk_last = m->chunk_last;
		tg->chunk_file = m->chunk_file;
		tg->chunk_pos = m->chunk_pos;
		tg->nranges = m->nranges;
		tg->range_hi = m->range_hi;
		tg->range_start = m->range_start;
		/* one whole chunk (a keyless table) needs no key */
		if (!(m->nchunks == 1 && m->chunk_last[0] && m->nranges == 1))
		{
			if (m->chunk_key_names)
			{
				/* the MySQL key the chunks range over, by name */
				for (int k = 0; k < m->chunk_nkey; k++)
				{
					tg->chunk_key_src[k] = find_source_column(t, m->chunk_key_names[k]);
					if (tg->chunk_key_src[k] < 0)
						ereport(ERROR,
								(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
								 errmsg("MySQL table %s was loaded in chunks of its key column \"%s\", which its rows events lack",
										key, m->chunk_key_names[k]),
								 errhint("Load the table again with binlog_fdw.snapshot(..., truncate => true).")));
				}
			}
			else
			{
				/* a load of this release before key columns were recorded */
				for (int c = 0; c < tg->nconv && tg->nkey == 1; c++)
					if (tg->conv[c].attnum == tg->key_attnums[0])
						tg->chunk_key_src[0] = tg->conv[c].src;
				if (tg->chunk_key_src[0] < 0)
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
							 errmsg("target %s of MySQL table %s was loaded in chunks but has no single-column key to find their rows by",
									tg->rel_name, key),
							 errhint("Give the target the primary key of the MySQL table, or load the table again with binlog_fdw.snapshot(..., truncate => true).")));
			}
		}
	}

	/* executor state */
	tg->estate = CreateExecutorState();
	rte = makeNode(RangeTblEntry);
	rte->rtekind = RTE_RELATION;
	rte->relid = relid;
	rte->relkind = tg->rel->rd_rel->relkind;
	rte->rellockmode = RowExclusiveLock;
	ExecInitRangeTable(tg->estate, list_make1(rte));
	tg->rri = makeNode(ResultRelInfo);
	InitResultRelInfo(tg->rri, tg->rel, 1, NULL, 0);
	tg->estate->es_output_cid = GetCurrentCommandId(true);
	ExecOpenIndices(tg->rri, false);
	EvalPlanQualInit(&tg->epq, tg->estate, NULL, NIL, -1);
	tg->newslot = ExecInitExtraTupleSlot(tg->estate, desc, &TTSOpsVirtual);
	tg->searchslot = ExecInitExtraTupleSlot(tg->estate, desc, &TTSOpsVirtual);
	tg->oldslot = table_slot_create(tg->rel, &tg->estate->es_tupleTable);
	tg->can_buffer = !tg->partitioned &&
		tg->conflict == BLPG_CONFLICT_ERROR &&
		!(tg->rri->ri_TrigDesc && tg->rri->ri_TrigDesc->trig_insert_before_row);
	if (m && m->history)
	{
		tg->history = blpg_history_open(tg->rel, m->history, key, tg->nkey, tg->key_attnums);
		tg->histslot = ExecInitExtraTupleSlot(tg->estate, desc, &TTSOpsVirtual);
	}
	if (tg->partitioned)
	{
		tg->mtstate = makeNode(ModifyTableState);
		tg->mtstate->ps.plan = NULL;
		tg->mtstate->ps.state = tg->estate;
		tg->mtstate->operation = CMD_INSERT;
		tg->mtstate->resultRelInfo = tg->rri;
		tg->proute = ExecSetupPartitionTupleRouting(tg->estate, tg->rel);
	}
}

typedef struct target_context
{
	const bl_table *table;
	const blpg_entry_view *v;
	const char *server_name;
} target_context;

static void
target_error_context(void *arg)
{
	target_context *tc = arg;
	const blpg_entry_view *v = tc->v;

	errcontext("finding the target of MySQL table %s.%s for source \"%s\", binlog %.*s position %llu%s%.*s",
			   tc->table->schema.ptr, tc->table->name.ptr, tc->server_name,
			   (int) v->e->file_len, v->file, (unsigned long long) v->e->event_pos,
			   v->e->gtid_len ? ", GTID " : "", (int) v->e->gtid_len, v->gtid);
}

/* The target's rule of binlog_fdw.filters and its row filter, prepared. */
static void
prepare_row_filter(blpg_targets *ts, blpg_target *tg)
{
	const bl_table *t = tg->table;
	int			a = -1;

	tg->rule = blpg_filter_rule_of(ts->filters, t->schema.ptr, t->schema.len,
								   t->name.ptr, t->name.len);
	if (tg->rule == NULL || tg->rule->row_filter == NULL)
		return;
	tg->rowfilter = blpg_rowfilter_prepare(tg->rel, tg->src_name, tg->rule->row_filter,
										   tg->estate, &tg->rowfilter_attrs);
	/* every column it reads must come from the source */
	while ((a = bms_next_member(tg->rowfilter_attrs, a)) >= 0)
	{
		AttrNumber	attnum = a + FirstLowInvalidHeapAttributeNumber;
		bool		mapped = false;

		for (int c = 0; c < tg->nconv; c++)
			if (tg->conv[c].attnum == attnum)
				mapped = true;
		if (!mapped)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("the row filter of %s reads column \"%s\" of %s, which no column of the MySQL table fills",
							tg->src_name,
							attnum > 0 ? NameStr(TupleDescAttr(RelationGetDescr(tg->rel), attnum - 1)->attname) :
							"(a system column)", tg->rel_name),
					 errdetail("The row filter is \"%s\".", tg->rule->row_filter),
					 errhint("Correct it with binlog_fdw.set_filter(), then apply again.")));
	}
	tg->filterslot = ExecInitExtraTupleSlot(tg->estate, RelationGetDescr(tg->rel),
											&TTSOpsVirtual);
}

bool
blpg_targets_keep_ddl(blpg_targets *ts, const blpg_entry_view *v)
{
	return blpg_filter_keeps_op(blpg_filter_rule_of(ts->filters, v->schema, v->e->schema_len,
													v->table, v->e->table_len),
								BLPG_FILTER_OP_DDL);
}

blpg_target *
blpg_target_get(blpg_targets *ts, const bl_table *t, const blpg_entry_view *v)
{
	bool		found;
	target_entry *e = hash_search(ts->by_version, &t->version, HASH_ENTER, &found);

	if (!found)
	{
		MemoryContext old = MemoryContextSwitchTo(ts->cxt);
		ErrorContextCallback cb;
		target_context tc;

		e->target = palloc0(sizeof(blpg_target));
		e->target->version = t->version;
		e->target->table = t;
		tc.table = t;
		tc.v = v;
		tc.server_name = ts->server_name;
		cb.callback = target_error_context;
		cb.arg = &tc;
		cb.previous = error_context_stack;
		error_context_stack = &cb;
		PG_TRY();
		{
			build_target(ts, e->target, t);
			if (!e->target->skip)
				prepare_row_filter(ts, e->target);
		}
		PG_CATCH();
		{
			hash_search(ts->by_version, &t->version, HASH_REMOVE, NULL);
			PG_RE_THROW();
		}
		PG_END_TRY();
		error_context_stack = cb.previous;
		ts->targets = lappend(ts->targets, e->target);
		MemoryContextSwitchTo(old);
	}
	return e->target->skip ? NULL : e->target;
}

/* Is the change of v before position file:pos? */
static bool
change_before(const blpg_entry_view *v, const char *file, uint64 pos)
{
	char		vfile[BLPG_FILE_LEN];
	size_t		len = Min((size_t) v->e->file_len, sizeof(vfile) - 1);

	/* the entry's file name is not NUL-terminated (other strings follow) */
	memcpy(vfile, v->file, len);
	vfile[len] = '\0';
	return blpg_position_cmp(vfile, v->e->event_pos, file, pos) < 0;
}

/*
 * The GTID state of a copy, parsed once: MariaDB's last sequence number of
 * each domain (sorted by domain), or MySQL's set (malloc'd, freed with the
 * memory context it was parsed for).
 */
typedef struct copy_gtids
{
	bool		mariadb;
	int			ndomains;
	bl_maria_gtid *domains;		/* palloc'd, sorted by domain */
	bl_gtid_set *set;
} copy_gtids;

static int
domain_cmp(const void *a, const void *b)
{
	uint32		x = ((const bl_maria_gtid *) a)->domain,
				y = ((const bl_maria_gtid *) b)->domain;

	return x < y ? -1 : x > y;
}

static void
free_gtid_set(void *arg)
{
	bl_gtid_set_free((bl_gtid_set *) arg);
}

static copy_gtids *
copy_gtids_parse(const char *state, const char *table, MemoryContext cxt)
{
	copy_gtids *g = MemoryContextAllocZero(cxt, sizeof(copy_gtids));
	bl_maria_gtid *list = NULL;
	size_t		n = 0;
	bl_error	err;

	memset(&err, 0, sizeof(err));
	if (bl_maria_gtid_list_parse(state, strlen(state), &list, &n, &err) == 0 && n > 0)
	{
		g->mariadb = true;
		g->domains = MemoryContextAlloc(cxt, sizeof(bl_maria_gtid) * n);
		memcpy(g->domains, list, sizeof(bl_maria_gtid) * n);
		free(list);
		qsort(g->domains, n, sizeof(bl_maria_gtid), domain_cmp);
		/* one entry per domain, its greatest sequence number */
		for (size_t i = 0; i < n; i++)
		{
			if (g->ndomains > 0 && g->domains[g->ndomains - 1].domain == g->domains[i].domain)
				g->domains[g->ndomains - 1].seq = Max(g->domains[g->ndomains - 1].seq,
													  g->domains[i].seq);
			else
				g->domains[g->ndomains++] = g->domains[i];
		}
		return g;
	}
	free(list);
	memset(&err, 0, sizeof(err));
	g->set = bl_gtid_set_parse(state, strlen(state), &err);
	if (g->set == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the GTID state \"%s\" of the copy of MySQL table %s is neither a MariaDB GTID list nor a MySQL GTID set: %s",
						state, table, err.message)));
	{
		MemoryContextCallback *cb = MemoryContextAlloc(cxt, sizeof(MemoryContextCallback));

		cb->func = free_gtid_set;
		cb->arg = g->set;
		MemoryContextRegisterResetCallback(cxt, cb);
	}
	return g;
}

/*
 * Is the change of v in a copy taken at file:pos, where the source's GTID
 * state was gtid_state (NULL: not known; *parsed: its parsed form, made on
 * first use in cxt)?  With one host, if it comes before that position.
 * With several hosts the change may come from another server than the
 * copy, whose binlog positions say nothing of the copy's: it is in the
 * copy if its GTID is in the copy's GTID state (MariaDB: its domain's
 * sequence number there is at least the change's, as a replica resuming at
 * that state decides; MySQL: the set holds it).  A copy without a GTID
 * state cannot be placed: an error, never a guess.
 */
static bool
copy_holds(bool by_gtid, const char *table, const blpg_entry_view *v,
		   const char *file, uint64 pos, const char *gtid_state, copy_gtids **parsed,
		   MemoryContext cxt)
{
	char		gtid[BLPG_GTID_LEN];
	copy_gtids *g;

	if (!by_gtid)
		return change_before(v, file, pos);
	if (gtid_state == NULL || v->e->gtid_len == 0 || v->e->gtid_len >= sizeof(gtid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot tell whether a change of MySQL table %s at %s:%llu is in its copy",
						table, pnstrdup(v->file, v->e->file_len),
						(unsigned long long) v->e->event_pos),
				 errdetail("The source has several hosts, so a change is placed by its GTID, but %s.",
						   gtid_state == NULL ?
						   psprintf("the copy, taken at %s:%llu, has no GTID state recorded", file,
									(unsigned long long) pos) :
						   "the change has no GTID"),
				 errhint("Copy the table again with binlog_fdw.snapshot() (it records the GTID state), or give the source one host.")));
	memcpy(gtid, v->gtid, v->e->gtid_len);
	gtid[v->e->gtid_len] = '\0';
	if (*parsed == NULL)
		*parsed = copy_gtids_parse(gtid_state, table, cxt);
	g = *parsed;
	if (g->mariadb)
	{
		bl_maria_gtid *one = NULL;
		size_t		n = 0;
		bl_error	err;
		bl_maria_gtid *hit = NULL;

		memset(&err, 0, sizeof(err));
		if (bl_maria_gtid_list_parse(gtid, strlen(gtid), &one, &n, &err) != 0 || n != 1)
		{
			free(one);
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("the GTID \"%s\" of a change of MySQL table %s is not a MariaDB GTID, but its copy's state is a MariaDB GTID list",
							gtid, table)));
		}
		hit = bsearch(one, g->domains, g->ndomains, sizeof(bl_maria_gtid), domain_cmp);
		n = hit != NULL && hit->seq >= one->seq;
		free(one);
		return n != 0;
	}
	return bl_gtid_set_contains(g->set, gtid);
}

/*
 * A change of a table loaded by snapshot() / sync_table() is in the copy if
 * it comes before the copy's consistent position (the end of the last
 * transaction the copy holds): it is skipped for that table only.
 */
bool
blpg_target_before_sync(blpg_target *target, const blpg_entry_view *v)
{
	if (!target->has_sync)
		return false;
	return copy_holds(target->by_gtid, target->src_name, v, target->sync_file,
					  target->sync_pos, target->sync_gtid, &target->sync_gtids,
					  GetMemoryChunkContext(target));
}

/*
 * Is a change of the row with this image in the copy of a chunked load?
 * The key's range (the first whose upper bound is at or above it, else
 * the last), then the range's chunk holding it (chunk i holds the keys
 * above chunk i-1's bound, or above the range's lower bound, up to its
 * own; the last one to the range's end): copied as of its position, a
 * change before it is in the copy.  A key above every chunk of its range
 * (the range not complete yet) is in a chunk still to be copied, after
 * this change (synclock.c): in the copy too.
 */
static bool
chunk_holds(blpg_target *tg, const blpg_entry_view *v, const bl_row *row)
{
	int			lo,
				hi,
				end;
	int			r = 0;
	int128		key[BLPG_CHUNK_KEY_MAX];

	/* chunks are placed by binlog position: of one server (load.c) */
	if (tg->by_gtid)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot tell whether a change of MySQL table %s at %s:%llu is in its chunked load",
						tg->src_name, pnstrdup(v->file, v->e->file_len),
						(unsigned long long) v->e->event_pos),
				 errdetail("The source has several hosts, and the chunks of a load are placed by binlog positions of one server."),
				 errhint("Copy the table again with binlog_fdw.snapshot(), or give the source one host.")));
	if (tg->chunk_key_src[0] < 0)
		return change_before(v, tg->chunk_file[0], tg->chunk_pos[0]);
	for (int c = 0; c < tg->chunk_nkey; c++)
	{
		const bl_value *k = (uint32) tg->chunk_key_src[c] < row->ncols ?
			&row->values[tg->chunk_key_src[c]] : NULL;

		if (k == NULL || (k->kind != BL_VAL_INT && k->kind != BL_VAL_UINT))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("a row image of MySQL table %s has no integer key, which its chunked load needs",
							tg->src_name)));
		key[c] = k->kind == BL_VAL_INT ? (int128) k->v.i : (int128) k->v.u;
	}
	/* its range: the first whose upper bound is at or above the key (in the key's order) */
	if (tg->nranges > 1)
	{
		int			a = 0,
					b = tg->nranges - 1;

		while (a < b)
		{
			int			mid = (a + b) / 2;

			if (blpg_key_cmp(key, &tg->range_hi[mid * tg->chunk_nkey], tg->chunk_nkey) <= 0)
				b = mid;
			else
				a = mid + 1;
		}
		r = a;
	}
	lo = tg->range_start[r];
	hi = end = tg->range_start[r + 1];
	/* the range's first chunk whose bound is at or above the key (in the key's order) */
	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (tg->chunk_last[mid] ||
			blpg_key_cmp(key, &tg->chunk_hi[mid * tg->chunk_nkey], tg->chunk_nkey) <= 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	if (lo == end)
		return true;			/* to be copied */
	return change_before(v, tg->chunk_file[lo], tg->chunk_pos[lo]);
}

int
blpg_target_chunk_op(blpg_target *tg, const blpg_entry_view *v, bl_op op,
					 const bl_row *before, const bl_row *after)
{
	bool		b,
				a;

	/* a load that copied nothing yet: its first chunk will hold the row */
	if (tg->load_pending)
		return -1;
	switch (op)
	{
		case BL_OP_INSERT:
			return chunk_holds(tg, v, after) ? -1 : BL_OP_INSERT;
		case BL_OP_DELETE:
			return chunk_holds(tg, v, before) ? -1 : BL_OP_DELETE;
		default:
			b = !chunk_holds(tg, v, before);
			a = !chunk_holds(tg, v, after);
			if (b && a)
				return BL_OP_UPDATE;
			if (b)
				return BL_OP_DELETE;	/* the new key's row is (to be) copied */
			if (!a)
				return -1;
			/* the old key's row is not in the copy, the new one's is missing */
			for (uint32 i = 0; i < after->ncols; i++)
				if (after->values[i].kind == BL_VAL_ABSENT)
					ereport(ERROR,
							(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
							 errmsg("an update of MySQL table %s moves a row into a chunk already copied, with a partial row image",
									tg->src_name),
							 errhint("Load the table with binlog_row_image FULL on the source, or with binlog_fdw.snapshot().")));
			return BL_OP_INSERT;
	}
}

bool
blpg_target_chunked(blpg_target *tg)
{
	return tg->nchunks > 0 || tg->load_pending;
}

bool
blpg_change_in_copy(blpg_targets *ts, const char *schema, const char *table,
					const blpg_entry_view *v)
{
	char		key[NAMEDATALEN * 2 + 2];
	table_mapping *m;
	refresh_arg ra = {ts, schema, table};

	blpg_sync_lock_share(ts->serverid, schema, table);
	blpg_run_as_owner(refresh_mapping_fn, &ra);
	snprintf(key, sizeof(key), "%s.%s", schema, table);
	m = hash_search(ts->mappings, key, HASH_FIND, NULL);
	{
		copy_gtids *parsed = NULL;	/* DDL only: parsed for this call */

		return m && m->has_sync && copy_holds(ts->by_gtid, key, v, m->sync_file, m->sync_pos,
											   m->sync_gtid, &parsed, CurrentMemoryContext);
	}
}

/* ---- rows ---- */

typedef struct row_context
{
	blpg_target *target;
	const char *op;
	const blpg_entry_view *v;
	const bl_row *key_row;
	const bl_row *before;		/* images, for the conflict log */
	const bl_row *after;
	uint64		seq;
} row_context;

static char *
key_text(blpg_target *tg, const bl_row *row)
{
	bl_buf		b;
	bl_error	err;
	char	   *s;

	if (row == NULL)
		return pstrdup("?");
	bl_buf_init(&b);
	bl_buf_putc(&b, '{');
	for (uint32 i = 0, n = 0; i < tg->table->ncols; i++)
	{
		const bl_column *c = &tg->table->cols[i];
		bool		is_key = false;

		if (tg->key_index == InvalidOid)
			is_key = true;
		else
			for (int k = 0; k < tg->nkey; k++)
			{
				int			ci = tg->conv_of_src[i];

				if (ci >= 0 && tg->conv[ci].attnum == tg->key_attnums[k])
					is_key = true;
			}
		if (!is_key || row->values[i].kind == BL_VAL_ABSENT)
			continue;
		if (n++)
			bl_buf_putc(&b, ',');
		bl_column_key_json(tg->table, i, &b);
		bl_buf_putc(&b, ':');
		(void) bl_value_to_json(c, &row->values[i], NULL, &b, &err);
		if (b.len > 900)
			break;
	}
	bl_buf_putc(&b, '}');
	s = pstrdup(b.data);
	bl_buf_free(&b);
	return s;
}

static void
row_error_context(void *arg)
{
	row_context *rc = arg;
	const blpg_entry_view *v = rc->v;

	char	   *key = key_text(rc->target, rc->key_row);

	/* a conflict stopping apply: remember the row (conflict.c) */
	if (blpg_conflict_kind_of(geterrcode(), rc->op))
		blpg_conflict_capture(rc->target->src_name, rc->target->rel_name, rc->op,
							  rc->key_row ? key : NULL,
							  blpg_row_json(rc->target->table, rc->before, NULL),
							  blpg_row_json(rc->target->table, rc->after, rc->before),
							  v->file, v->e->file_len, v->e->event_pos,
							  v->gtid, v->e->gtid_len, rc->seq,
							  blpg_conflict_policy_name(rc->target->conflict));
	errcontext("applying %s of MySQL table %s into %s, key %s, binlog %.*s position %llu%s%.*s",
			   rc->op, rc->target->src_name, rc->target->rel_name, key,
			   (int) v->e->file_len, v->file, (unsigned long long) v->e->event_pos,
			   v->e->gtid_len ? ", GTID " : "", (int) v->e->gtid_len, v->gtid);
}

/* The row's error context (the table, key, position) from here on. */
static void
push_row_context(row_context *rc, ErrorContextCallback *cb, blpg_target *tg,
				 const blpg_entry_view *v, bl_op op, const bl_row *before, const bl_row *after)
{
	rc->target = tg;
	rc->v = v;
	rc->op = op == BL_OP_INSERT ? "INSERT" : op == BL_OP_UPDATE ? "UPDATE" : "DELETE";
	rc->key_row = op == BL_OP_INSERT ? after : before;
	rc->before = before;
	rc->after = after;
	rc->seq = blpg_apply_current_seq;
	cb->callback = row_error_context;
	cb->arg = rc;
	cb->previous = error_context_stack;
	error_context_stack = cb;
}

/*
 * Fill slot (the target's row type) from a row image.  with_defaults (an
 * insert): columns the source lacks and mapped columns the image lacks
 * (binlog_row_image MINIMAL or NOBLOB leave out the columns an INSERT did
 * not give) take the target's defaults, evaluated for each row as INSERT
 * and COPY do; without, they are NULL (a search slot: only the key counts).
 */
static void
fill_slot(blpg_targets *ts, blpg_target *tg, TupleTableSlot *slot,
		  const bl_row *row, const bl_row *before, bool with_defaults)
{
	TupleDesc	desc = slot->tts_tupleDescriptor;

	ExecClearTuple(slot);
	for (int a = 0; a < desc->natts; a++)
		slot->tts_isnull[a] = true;
	for (int c = 0; c < tg->nconv; c++)
	{
		blpg_col_conv *cc = &tg->conv[c];
		const bl_value *v = &row->values[cc->src];

		if (v->kind == BL_VAL_ABSENT)
		{
			if (with_defaults && tg->conv_default[c])
				slot->tts_values[cc->attnum - 1] =
					ExecEvalExpr(tg->conv_default[c], GetPerTupleExprContext(tg->estate),
								 &slot->tts_isnull[cc->attnum - 1]);
			continue;
		}
		slot->tts_values[cc->attnum - 1] =
			blpg_convert(cc, &tg->table->cols[cc->src], v,
						 before && before->ncols ? &before->values[cc->src] : NULL,
						 ts->opts, &slot->tts_isnull[cc->attnum - 1]);
	}
	if (with_defaults && tg->ndefaults)
	{
		ExprContext *econtext = GetPerTupleExprContext(tg->estate);

		for (int d = 0; d < tg->ndefaults; d++)
		{
			AttrNumber	a = tg->defaults[d].attnum;

			slot->tts_values[a - 1] = ExecEvalExpr(tg->defaults[d].expr, econtext,
												   &slot->tts_isnull[a - 1]);
		}
	}
	ExecStoreVirtualTuple(slot);
}

/*
 * The slot for rows found in partition p (its row type), made once per
 * partition for the life of the target (we run in the per-row context).
 */
static TupleTableSlot *
partition_slot(blpg_target *tg, ResultRelInfo *p)
{
	ListCell   *a,
			   *b;
	MemoryContext oldcxt;
	TupleTableSlot *slot;

	forboth(a, tg->part_rris, b, tg->part_slots)
		if (lfirst(a) == p)
			return lfirst(b);
	oldcxt = MemoryContextSwitchTo(tg->estate->es_query_cxt);
	slot = table_slot_create(p->ri_RelationDesc, &tg->estate->es_tupleTable);
	tg->part_rris = lappend(tg->part_rris, p);
	tg->part_slots = lappend(tg->part_slots, slot);
	/* and the map of its rows back to the root's row type, for updates */
	(void) ExecGetChildToRootMap(p);
	MemoryContextSwitchTo(oldcxt);
	return slot;
}

/* The first mapped column a row image lacks, or NULL. */
static const char *
image_lacks(blpg_target *tg, const bl_row *row)
{
	for (int c = 0; c < tg->nconv; c++)
		if (row->values[tg->conv[c].src].kind == BL_VAL_ABSENT)
			return tg->conv[c].name;
	return NULL;
}

/* The first mapped column absent from both images, or NULL. */
static const char *
image_lacks2(blpg_target *tg, const bl_row *a, const bl_row *b)
{
	for (int c = 0; c < tg->nconv; c++)
		if (a->values[tg->conv[c].src].kind == BL_VAL_ABSENT &&
			(b->ncols == 0 || b->values[tg->conv[c].src].kind == BL_VAL_ABSENT))
			return tg->conv[c].name;
	return NULL;
}

/*
 * Find the target row of a row image (its key columns, or all columns
 * without a key); the row is left in tg->oldslot, locked.  For partitioned
 * targets, *part is the partition holding it.
 */
static bool
find_row(blpg_targets *ts, blpg_target *tg, const bl_row *row, ResultRelInfo **part)
{
	ResultRelInfo *rri = tg->rri;
	TupleTableSlot *search = tg->searchslot;
	TupleTableSlot *old = tg->oldslot;
	Oid			index = tg->key_index;

	fill_slot(ts, tg, search, row, NULL, false);
	if (tg->key_index == InvalidOid)
	{
		const char *lacking = image_lacks(tg, row);

		/* a NULL for an absent column would match the wrong row, or none */
		if (lacking)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("the row image lacks column \"%s\" of %s, which has no key: rows cannot be found on all columns",
							lacking, tg->rel_name),
					 errhint("Give the target a primary key or unique index matching the MySQL table's primary key, or set binlog_row_image=FULL on the source.")));
	}
	else
		for (int k = 0; k < tg->nkey; k++)
			if (search->tts_isnull[tg->key_attnums[k] - 1])
			{
				int			src = -1;

				for (int c = 0; c < tg->nconv; c++)
					if (tg->conv[c].attnum == tg->key_attnums[k])
						src = tg->conv[c].src;
				if (src >= 0 && row->values[src].kind == BL_VAL_ABSENT)
					ereport(ERROR,
							(errcode(ERRCODE_DATA_EXCEPTION),
							 errmsg("the row image lacks key column \"%s\" of %s",
									NameStr(TupleDescAttr(RelationGetDescr(tg->rel), tg->key_attnums[k] - 1)->attname),
									tg->rel_name),
							 errhint("With binlog_row_image=MINIMAL the key must be the MySQL table's primary key.")));
			}
	if (tg->partitioned)
	{
		ResultRelInfo *p = ExecFindPartition(tg->mtstate, tg->rri, tg->proute, search, tg->estate);
		TupleConversionMap *map = p->ri_RootToPartitionMap;

		rri = p;
		if (map)
			search = execute_attr_map_slot(map->attrMap, search, p->ri_PartitionTupleSlot);
		old = partition_slot(tg, p);
		if (index != InvalidOid)
		{
			/* the partition's index of the same key */
			index = RelationGetPrimaryKeyIndex(p->ri_RelationDesc);
			if (!OidIsValid(index))
				index = RelationGetReplicaIndex(p->ri_RelationDesc);
		}
		tg->oldslot = old;
	}
	*part = rri;
	if (OidIsValid(index))
		return RelationFindReplTupleByIndex(rri->ri_RelationDesc, index, LockTupleExclusive,
											search, old);
	return RelationFindReplTupleSeq(rri->ri_RelationDesc, LockTupleExclusive, search, old);
}

/* A conflict resolved by the policy: into binlog_fdw.conflict_log. */
static void
log_conflict(blpg_targets *ts, blpg_target *tg, const row_context *rc, const char *kind,
			 const char *resolution)
{
	tg->counts.conflicts[strcmp(kind, "missing_row") == 0 ? 0 :
						 strcmp(kind, "duplicate_key") == 0 ? 1 : 2]++;
	blpg_conflict_log(ts->server_name, tg->src_name, tg->rel_name, rc->op, kind,
					  key_text(tg, rc->key_row),
					  blpg_row_json(tg->table, rc->before, NULL),
					  blpg_row_json(tg->table, rc->after, rc->before), rc->v,
					  blpg_conflict_policy_name(tg->conflict), resolution);
}

static void
insert_slot(blpg_target *tg, TupleTableSlot *slot)
{
	ResultRelInfo *rri = tg->rri;

	if (tg->partitioned)
	{
		ResultRelInfo *p = ExecFindPartition(tg->mtstate, tg->rri, tg->proute, slot, tg->estate);
		TupleConversionMap *map = p->ri_RootToPartitionMap;

		rri = p;
		if (map)
			slot = execute_attr_map_slot(map->attrMap, slot, p->ri_PartitionTupleSlot);
	}
	ExecSimpleRelationInsert(rri, tg->estate, slot);
}

static void
missing_row(blpg_target *tg, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_NO_DATA_FOUND),
			 errmsg("row to %s not found in %s", what, tg->rel_name),
			 errhint("The target diverged from the source. Fix the row, or set the conflict option of the table (binlog_fdw.map_table) or the source to 'skip' or 'overwrite', then apply again.")));
}

/* The calling role may do this operation on the target (checked once). */
static void
check_privileges(blpg_target *tg, AclMode mode)
{
	AclResult	aclresult;

	if ((tg->checked & mode) == mode)
		return;
	/* every privilege of mode (pg_class_aclcheck is satisfied by any one) */
	aclresult = pg_class_aclmask(RelationGetRelid(tg->rel), GetUserId(), mode, ACLMASK_ALL) == mode ?
		ACLCHECK_OK : ACLCHECK_NO_PRIV;
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, get_relkind_objtype(tg->rel->rd_rel->relkind),
					   RelationGetRelationName(tg->rel));
	if (check_enable_rls(RelationGetRelid(tg->rel), InvalidOid, false) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("user \"%s\" cannot apply changes into %s: row-level security is enabled for it",
						GetUserNameFromId(GetUserId(), true), tg->rel_name),
				 errhint("Apply as a role that bypasses row-level security (BYPASSRLS or the table owner), or disable it on the table.")));
	tg->checked |= mode;
}

/* ---- multi-insert buffer ---- */

typedef struct buffered_row_context
{
	blpg_target *target;
	int			row;			/* -1: the whole buffer */
} buffered_row_context;

/* The key of a buffered row, from its PostgreSQL values. */
static char *
slot_key_text(blpg_target *tg, TupleTableSlot *slot)
{
	StringInfoData b;
	TupleDesc	desc = slot->tts_tupleDescriptor;

	initStringInfo(&b);
	appendStringInfoChar(&b, '{');
	for (int k = 0; k < tg->nkey; k++)
	{
		AttrNumber	a = tg->key_attnums[k];
		bool		isnull;
		Datum		d = slot_getattr(slot, a, &isnull);

		if (k)
			appendStringInfoChar(&b, ',');
		/* as key_text() prints keys: {"name":value} */
		escape_json(&b, NameStr(TupleDescAttr(desc, a - 1)->attname));
		appendStringInfoChar(&b, ':');
		if (isnull)
			appendStringInfoString(&b, "null");
		else
		{
			Oid			type = TupleDescAttr(desc, a - 1)->atttypid;
			Oid			out;
			bool		varlena;
			char	   *text;

			getTypeOutputInfo(type, &out, &varlena);
			text = OidOutputFunctionCall(out, d);
			if (type == INT2OID || type == INT4OID || type == INT8OID || type == NUMERICOID)
				appendStringInfoString(&b, text);
			else
				escape_json(&b, text);
		}
	}
	appendStringInfoChar(&b, '}');
	return b.data;
}

/* A buffered row as a JSON object of its PostgreSQL values (as text). */
static char *
slot_json(TupleTableSlot *slot)
{
	StringInfoData b;
	TupleDesc	desc = slot->tts_tupleDescriptor;

	slot_getallattrs(slot);
	initStringInfo(&b);
	appendStringInfoChar(&b, '{');
	for (int a = 0, n = 0; a < desc->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, a);
		Oid			out;
		bool		varlena;

		if (att->attisdropped)
			continue;
		if (n++)
			appendStringInfoChar(&b, ',');
		escape_json(&b, NameStr(att->attname));
		appendStringInfoChar(&b, ':');
		if (slot->tts_isnull[a])
		{
			appendStringInfoString(&b, "null");
			continue;
		}
		getTypeOutputInfo(att->atttypid, &out, &varlena);
		/* numbers as JSON numbers, as the images of the binlog have them */
		if (att->atttypid == INT2OID || att->atttypid == INT4OID ||
			att->atttypid == INT8OID || att->atttypid == NUMERICOID)
			appendStringInfoString(&b, OidOutputFunctionCall(out, slot->tts_values[a]));
		else
			escape_json(&b, OidOutputFunctionCall(out, slot->tts_values[a]));
	}
	appendStringInfoChar(&b, '}');
	return b.data;
}

static void
buffered_row_error_context(void *arg)
{
	buffered_row_context *rc = arg;
	blpg_target *tg = rc->target;

	if (rc->row < 0)
	{
		errcontext("inserting %d rows of MySQL table %s into %s, binlog %s positions %llu to %llu",
				   tg->nbuffered, tg->src_name, tg->rel_name, tg->buffile,
				   (unsigned long long) tg->bufpos[0],
				   (unsigned long long) tg->bufpos[tg->nbuffered - 1]);
		return;
	}
	{
		const char *gtid = tg->bufgtid + (Size) rc->row * BLPG_GTID_LEN;
		char	   *key = tg->nkey ? slot_key_text(tg, tg->bufslots[rc->row]) : NULL;

		if (blpg_conflict_kind_of(geterrcode(), "INSERT"))
			blpg_conflict_capture(tg->src_name, tg->rel_name, "INSERT", key, NULL,
								  slot_json(tg->bufslots[rc->row]), tg->buffile,
								  strlen(tg->buffile), tg->bufpos[rc->row], gtid,
								  strlen(gtid), tg->bufseq[rc->row],
								  blpg_conflict_policy_name(tg->conflict));
		errcontext("applying INSERT of MySQL table %s into %s, key %s, binlog %s position %llu%s%s",
				   tg->src_name, tg->rel_name, key ? key : "?",
				   tg->buffile, (unsigned long long) tg->bufpos[rc->row],
				   gtid[0] ? ", GTID " : "", gtid);
	}
}

/*
 * Write the buffered inserts: the heap tuples at once, then index entries
 * and AFTER ROW triggers row by row.
 */
void
blpg_targets_flush(blpg_targets *ts)
{
	blpg_target *tg = ts->pending;
	ErrorContextCallback cb;
	buffered_row_context rc;
	MemoryContext oldcxt;
	EState	   *estate;

	if (tg == NULL)
		return;
	ts->pending = NULL;
	if (tg->nbuffered == 0)
		return;
	estate = tg->estate;
	rc.target = tg;
	rc.row = -1;
	cb.callback = buffered_row_error_context;
	cb.arg = &rc;
	cb.previous = error_context_stack;
	error_context_stack = &cb;

	estate->es_output_cid = GetCurrentCommandId(true);
	oldcxt = MemoryContextSwitchTo(GetPerTupleMemoryContext(estate));
	table_multi_insert(tg->rel, tg->bufslots, tg->nbuffered, estate->es_output_cid, 0,
					   tg->bistate);
	MemoryContextSwitchTo(oldcxt);
	ResetPerTupleExprContext(estate);
	for (int i = 0; i < tg->nbuffered; i++)
	{
		List	   *recheck = NIL;

		rc.row = i;
		oldcxt = MemoryContextSwitchTo(GetPerTupleMemoryContext(estate));
		if (tg->rri->ri_NumIndices > 0)
			recheck = ExecInsertIndexTuples(tg->rri, tg->bufslots[i], estate,
											false, false, NULL, NIL);
		ExecARInsertTriggers(estate, tg->rri, tg->bufslots[i], recheck, NULL);
		MemoryContextSwitchTo(oldcxt);
		ResetPerTupleExprContext(estate);
	}
	for (int i = 0; i < tg->nbuffered; i++)
		ExecClearTuple(tg->bufslots[i]);
	tg->nbuffered = 0;
	tg->buffered_bytes = 0;
	error_context_stack = cb.previous;
	CommandCounterIncrement();
}

/*
 * Before a buffered insert's slot is filled: flush what cannot share its
 * batch (another target's rows, rows of another binlog file).  A flush
 * resets the per-tuple context, where the slot's values will live, so it
 * must not happen between filling the slot and copying it (buffer_insert).
 */
static void
buffer_prepare(blpg_targets *ts, blpg_target *tg, const blpg_entry_view *v)
{
	if (ts->pending != NULL && ts->pending != tg)
		blpg_targets_flush(ts);
	if (tg->nbuffered > 0 &&
		(strlen(tg->buffile) != v->e->file_len ||
		 memcmp(tg->buffile, v->file, v->e->file_len) != 0))
		blpg_targets_flush(ts);
}

/*
 * Buffer the insert of slot (filled, in the per-tuple context, after
 * buffer_prepare): generated columns and constraints are checked now, in
 * the row's error context.
 */
static void
buffer_insert(blpg_targets *ts, blpg_target *tg, TupleTableSlot *slot,
			  const blpg_entry_view *v)
{
	Relation	rel = tg->rel;
	TupleTableSlot *dst;
	int			n;

	/* flushed before (buffer_prepare): a flush resets the per-tuple context */
	Assert(ts->pending == NULL || ts->pending == tg);
	if (tg->bufslots == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(ts->cxt);

		/*
		 * An unpinned copy of the row type: a thousand slots pinning the
		 * relation's own would crowd the resource owner.
		 */
		TupleDesc	desc = CreateTupleDescCopy(RelationGetDescr(rel));

		tg->bufslots = palloc(sizeof(TupleTableSlot *) * MULTI_INSERT_ROWS);
		for (int i = 0; i < MULTI_INSERT_ROWS; i++)
			tg->bufslots[i] = ExecAllocTableSlot(&tg->estate->es_tupleTable, desc,
												 table_slot_callbacks(rel));
		tg->bufpos = palloc(sizeof(uint64) * MULTI_INSERT_ROWS);
		tg->bufseq = palloc(sizeof(uint64) * MULTI_INSERT_ROWS);
		tg->bufgtid = palloc((Size) MULTI_INSERT_ROWS * BLPG_GTID_LEN);
		tg->bistate = GetBulkInsertState();
		MemoryContextSwitchTo(old);
	}

	if (rel->rd_att->constr && rel->rd_att->constr->has_generated_stored)
		ExecComputeStoredGenerated(tg->rri, tg->estate, slot, CMD_INSERT);
	if (rel->rd_att->constr)
		ExecConstraints(tg->rri, slot, tg->estate);
	if (rel->rd_rel->relispartition)
		ExecPartitionCheck(tg->rri, slot, tg->estate, true);

	n = tg->nbuffered;
	dst = tg->bufslots[n];
	ExecCopySlot(dst, slot);
	tg->bufpos[n] = v->e->event_pos;
	tg->bufseq[n] = blpg_apply_current_seq;
	{
		char	   *g = tg->bufgtid + (Size) n * BLPG_GTID_LEN;
		size_t		glen = Min((size_t) v->e->gtid_len, (size_t) BLPG_GTID_LEN - 1);

		memcpy(g, v->gtid, glen);
		g[glen] = '\0';
	}
	if (n == 0)
	{
		size_t		flen = Min((size_t) v->e->file_len, (size_t) BLPG_FILE_LEN - 1);

		memcpy(tg->buffile, v->file, flen);
		tg->buffile[flen] = '\0';
	}
	tg->nbuffered++;
	tg->buffered_bytes += ((BufferHeapTupleTableSlot *) dst)->base.tuple->t_len;
	ts->pending = tg;
	if (tg->nbuffered >= MULTI_INSERT_ROWS || tg->buffered_bytes >= MULTI_INSERT_BYTES)
		blpg_targets_flush(ts);
}

/* A row found in partition part, in the target's row type (for its history). */
static TupleTableSlot *
root_row(blpg_target *tg, ResultRelInfo *part, TupleTableSlot *slot)
{
	TupleConversionMap *map;

	if (part == tg->rri)
		return slot;
	map = ExecGetChildToRootMap(part);
	if (map == NULL)
		return slot;
	return execute_attr_map_slot(map->attrMap, slot, tg->histslot);
}

/*
 * Does the row (an image, with the columns it lacks from other, the image
 * before an update's) pass the target's row filter?  A column the filter
 * reads that neither image has is an error, never a guess.
 */
static bool
row_passes(blpg_targets *ts, blpg_target *tg, const bl_row *row, const bl_row *other)
{
	TupleTableSlot *slot = tg->filterslot;

	fill_slot(ts, tg, slot, row, other, false);
	for (int c = 0; c < tg->nconv; c++)
	{
		blpg_col_conv *cc = &tg->conv[c];

		if (row->values[cc->src].kind != BL_VAL_ABSENT)
			continue;
		if (other && other->ncols && other->values[cc->src].kind != BL_VAL_ABSENT)
			slot->tts_values[cc->attnum - 1] =
				blpg_convert(cc, &tg->table->cols[cc->src], &other->values[cc->src], NULL,
							 ts->opts, &slot->tts_isnull[cc->attnum - 1]);
		else if (bms_is_member(cc->attnum - FirstLowInvalidHeapAttributeNumber,
							   tg->rowfilter_attrs))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the row filter of %s reads column \"%s\", which the row image lacks",
							tg->src_name, tg->table->cols[cc->src].name.ptr ?
							tg->table->cols[cc->src].name.ptr : "(unnamed)"),
					 errdetail("With binlog_row_image MINIMAL or NOBLOB, or a column filter leaving the column out, the change does not carry its value."),
					 errhint("Set binlog_row_image=FULL on the source, or remove the column from the row filter (binlog_fdw.set_filter()).")));
	}
	return blpg_rowfilter_eval(tg->rowfilter, slot, GetPerTupleExprContext(tg->estate));
}

/*
 * An update whose new row enters the row filter becomes the insert of it:
 * the whole row, the columns the after image lacks from the before image.
 * A mapped column neither has (but one the column filter leaves out, which
 * takes the target's default like in any insert) is an error.
 */
static const bl_row *
whole_after(blpg_target *tg, const bl_row *before, const bl_row *after)
{
	bl_row	   *row = palloc(sizeof(bl_row));
	bl_value   *vals = palloc(sizeof(bl_value) * after->ncols);

	*row = *after;
	memcpy(vals, after->values, sizeof(bl_value) * after->ncols);
	row->values = vals;
	for (int c = 0; c < tg->nconv; c++)
	{
		int			src = tg->conv[c].src;
		const char *name = tg->table->cols[src].name.ptr;

		if (vals[src].kind != BL_VAL_ABSENT)
			continue;
		if (before->ncols && before->values[src].kind != BL_VAL_ABSENT)
			vals[src] = before->values[src];
		else if (name == NULL || !blpg_filter_drops_column(tg->rule, name))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("an update moves a row of %s into its row filter, but the row images lack column \"%s\" to insert it whole",
							tg->src_name, name ? name : "(unnamed)"),
					 errdetail("With binlog_row_image MINIMAL or NOBLOB an update carries only the changed columns."),
					 errhint("Set binlog_row_image=FULL on the source.")));
	}
	return row;
}

/*
 * The row filter's verdict on a change, as PostgreSQL 15's publications
 * give it: an insert or delete passes if its row does; an update whose old
 * and new rows both pass stays an update, old only: the delete of the old
 * row, new only: the insert of the new one, neither: nothing (-1).
 */
static int
filter_op(blpg_targets *ts, blpg_target *tg, bl_op op, const bl_row *before,
		  const bl_row *after)
{
	bool		old_in,
				new_in;

	switch (op)
	{
		case BL_OP_INSERT:
			return row_passes(ts, tg, after, NULL) ? op : -1;
		case BL_OP_DELETE:
			return row_passes(ts, tg, before, NULL) ? op : -1;
		default:
			old_in = row_passes(ts, tg, before, NULL);
			new_in = row_passes(ts, tg, after, before);
			if (old_in && new_in)
				return BL_OP_UPDATE;
			if (old_in)
				return BL_OP_DELETE;
			if (new_in)
				return BL_OP_INSERT;
			return -1;
	}
}

void
blpg_target_apply_row(blpg_targets *ts, blpg_target *tg, bl_op op,
					  const bl_row *before, const bl_row *after,
					  const blpg_entry_view *v)
{
	ErrorContextCallback cb;
	row_context rc;
	ResultRelInfo *part;
	MemoryContext oldcxt;

	if (tg->rowfilter)
	{
		bl_op		orig = op;
		int			fop;

		push_row_context(&rc, &cb, tg, v, op, before, after);
		/* lives until the row is written (the per-tuple context) */
		oldcxt = MemoryContextSwitchTo(GetPerTupleMemoryContext(tg->estate));
		fop = filter_op(ts, tg, op, before, after);
		if (fop == BL_OP_INSERT && orig == BL_OP_UPDATE)
			after = whole_after(tg, before, after);
		MemoryContextSwitchTo(oldcxt);
		error_context_stack = cb.previous;
		if (fop < 0)
		{
			ResetPerTupleExprContext(tg->estate);
			return;
		}
		op = (bl_op) fop;
	}

	/* buffered inserts go first, in order */
	if (ts->pending != NULL && (ts->pending != tg || op != BL_OP_INSERT || !tg->can_buffer))
		blpg_targets_flush(ts);
	if (op == BL_OP_INSERT && tg->can_buffer)
		buffer_prepare(ts, tg, v);

	push_row_context(&rc, &cb, tg, v, op, before, after);

	check_privileges(tg, op == BL_OP_INSERT ?
					 (tg->conflict == BLPG_CONFLICT_ERROR ? ACL_INSERT :
					  tg->conflict == BLPG_CONFLICT_SKIP ? ACL_INSERT | ACL_SELECT :
					  ACL_INSERT | ACL_SELECT | ACL_UPDATE) :
					 op == BL_OP_UPDATE ?
					 (tg->conflict == BLPG_CONFLICT_OVERWRITE ? ACL_UPDATE | ACL_SELECT | ACL_INSERT :
					  ACL_UPDATE | ACL_SELECT) :
					 ACL_DELETE | ACL_SELECT);
	if (!tg->touched)
	{
		MemoryContext old = MemoryContextSwitchTo(ts->cxt);

		ts->touched = list_append_unique_oid(ts->touched, RelationGetRelid(tg->rel));
		tg->touched = true;
		MemoryContextSwitchTo(old);
	}
	tg->estate->es_output_cid = GetCurrentCommandId(true);
	tg->counts.rows[op == BL_OP_INSERT ? 0 : op == BL_OP_UPDATE ? 1 : 2]++;
	/* everything of one row lives in the per-tuple context, reset below */
	oldcxt = MemoryContextSwitchTo(GetPerTupleMemoryContext(tg->estate));
	switch (op)
	{
		case BL_OP_INSERT:
			fill_slot(ts, tg, tg->newslot, after, NULL, true);
			if (tg->can_buffer)
			{
				/* before: a full buffer is written, and the slot reset */
				if (tg->history)
					blpg_history_record(tg->history, "INSERT", NULL, tg->newslot, v);
				buffer_insert(ts, tg, tg->newslot, v);
				MemoryContextSwitchTo(oldcxt);
				ResetPerTupleExprContext(tg->estate);
				error_context_stack = cb.previous;
				return;
			}
			if (tg->conflict != BLPG_CONFLICT_ERROR &&
				(tg->key_index != InvalidOid) && find_row(ts, tg, after, &part))
			{
				log_conflict(ts, tg, &rc, "duplicate_key",
							 tg->conflict == BLPG_CONFLICT_OVERWRITE ? "overwritten" : "skipped");
				if (tg->conflict == BLPG_CONFLICT_OVERWRITE)
				{
					if (part != tg->rri)
						fill_slot(ts, tg, tg->newslot, after, NULL, true);
					ExecSimpleRelationUpdate(part, tg->estate, &tg->epq, tg->oldslot,
											 part == tg->rri || part->ri_RootToPartitionMap == NULL ?
											 tg->newslot :
											 execute_attr_map_slot(part->ri_RootToPartitionMap->attrMap,
																   tg->newslot, part->ri_PartitionTupleSlot));
					if (tg->history)
						blpg_history_record(tg->history, "INSERT", root_row(tg, part, tg->oldslot),
											tg->newslot, v);
				}
				break;
			}
			insert_slot(tg, tg->newslot);
			if (tg->history)
				blpg_history_record(tg->history, "INSERT", NULL, tg->newslot, v);
			break;

		case BL_OP_UPDATE:
			if (!find_row(ts, tg, before, &part))
			{
				if (tg->conflict == BLPG_CONFLICT_ERROR)
					missing_row(tg, "update");
				if (tg->conflict == BLPG_CONFLICT_SKIP)
					log_conflict(ts, tg, &rc, "missing_row", "skipped");
				if (tg->conflict == BLPG_CONFLICT_OVERWRITE)
				{
					const char *lacking = image_lacks2(tg, after, before);

					/* partial images (but for the key) are not the whole row */
					if (lacking)
						ereport(ERROR,
								(errcode(ERRCODE_NO_DATA_FOUND),
								 errmsg("row to update not found in %s, and the row images lack column \"%s\" to insert it whole",
										tg->rel_name, lacking),
								 errdetail("The conflict policy is overwrite, but with binlog_row_image MINIMAL or NOBLOB an update carries only the changed columns."),
								 errhint("The target diverged from the source: fix the row (or copy the table again with binlog_fdw.snapshot()), then apply again.")));
					log_conflict(ts, tg, &rc, "missing_row", "inserted");
					fill_slot(ts, tg, tg->newslot, after, before, true);
					/* columns the update did not change: from the before image */
					for (int c = 0; c < tg->nconv; c++)
					{
						blpg_col_conv *cc = &tg->conv[c];

						if (after->values[cc->src].kind == BL_VAL_ABSENT)
							tg->newslot->tts_values[cc->attnum - 1] =
								blpg_convert(cc, &tg->table->cols[cc->src], &before->values[cc->src],
											 NULL, ts->opts, &tg->newslot->tts_isnull[cc->attnum - 1]);
					}
					insert_slot(tg, tg->newslot);
					if (tg->history)
						blpg_history_record(tg->history, "UPDATE", NULL, tg->newslot, v);
				}
				break;
			}
			{
				/* the stored row, with the columns present in the after image */
				TupleTableSlot *old = tg->oldslot;
				TupleTableSlot *newslot = tg->newslot;
				TupleDesc	desc = RelationGetDescr(tg->rel);

				slot_getallattrs(old);
				ExecClearTuple(newslot);
				if (part == tg->rri)
				{
					memcpy(newslot->tts_values, old->tts_values, sizeof(Datum) * desc->natts);
					memcpy(newslot->tts_isnull, old->tts_isnull, sizeof(bool) * desc->natts);
				}
				else
				{
					/* partition row type: map back to the root's (made in partition_slot) */
					TupleConversionMap *map = ExecGetChildToRootMap(part);

					for (int a = 0; a < desc->natts; a++)
					{
						int			pa = map ? map->attrMap->attnums[a] - 1 : a;

						newslot->tts_values[a] = pa >= 0 ? old->tts_values[pa] : (Datum) 0;
						newslot->tts_isnull[a] = pa >= 0 ? old->tts_isnull[pa] : true;
					}
				}
				for (int c = 0; c < tg->nconv; c++)
				{
					blpg_col_conv *cc = &tg->conv[c];
					const bl_value *val = &after->values[cc->src];

					if (val->kind == BL_VAL_ABSENT)
						continue;
					newslot->tts_values[cc->attnum - 1] =
						blpg_convert(cc, &tg->table->cols[cc->src], val,
									 before->ncols ? &before->values[cc->src] : NULL,
									 ts->opts, &newslot->tts_isnull[cc->attnum - 1]);
				}
				ExecStoreVirtualTuple(newslot);
				if (tg->partitioned)
				{
					ResultRelInfo *np = ExecFindPartition(tg->mtstate, tg->rri, tg->proute,
														  newslot, tg->estate);

					if (np != part)
					{
						/* the row moves to another partition */
						ExecSimpleRelationDelete(part, tg->estate, &tg->epq, old);
						insert_slot(tg, newslot);
						if (tg->history)
							blpg_history_record(tg->history, "UPDATE", root_row(tg, part, old),
												tg->newslot, v);
						break;
					}
					if (part->ri_RootToPartitionMap)
						newslot = execute_attr_map_slot(part->ri_RootToPartitionMap->attrMap,
														newslot, part->ri_PartitionTupleSlot);
				}
				ExecSimpleRelationUpdate(part, tg->estate, &tg->epq, old, newslot);
				if (tg->history)
					blpg_history_record(tg->history, "UPDATE", root_row(tg, part, old),
										tg->newslot, v);
			}
			break;

		case BL_OP_DELETE:
			if (!find_row(ts, tg, before, &part))
			{
				if (tg->conflict == BLPG_CONFLICT_ERROR)
					missing_row(tg, "delete");
				log_conflict(ts, tg, &rc, "missing_row", "skipped");
				break;
			}
			/* before: the deleted row's values are read from its slot */
			if (tg->history)
				blpg_history_record(tg->history, "DELETE", root_row(tg, part, tg->oldslot),
									NULL, v);
			ExecSimpleRelationDelete(part, tg->estate, &tg->epq, tg->oldslot);
			break;
	}
	MemoryContextSwitchTo(oldcxt);
	ResetPerTupleExprContext(tg->estate);
	CommandCounterIncrement();
	error_context_stack = cb.previous;
}

/*
 * Do the key's values cover what applying a row of tg writes, so that two
 * transactions whose rows have different keys never touch the same target
 * row or index entry?  Only for a plain table whose key index is its only
 * unique index (and no exclusion constraint), with every key column taken
 * from a MySQL column, no trigger (it may write elsewhere), no history
 * table and no chunked load under way.  And only when PostgreSQL's
 * equality of each key column is equality of its converted value
 * (write_key_type_exact): a key type or collation that takes two different
 * values as one key (citext, a nondeterministic collation, char(n)'s
 * padding, float's -0 and 0) would let two transactions with different
 * write-set keys reach the same target row.
 *
 * The answer is a class (blpg_write_key): BLPG_WK_KEY when they do;
 * BLPG_WK_KEYLESS (no key and no unique index at all) and BLPG_WK_INEXACT
 * (FLOAT/DOUBLE source key columns) when only the keys' values are
 * missing and PostgreSQL tells rows apart as the source does, so that the
 * source's own proof of independence may stand in for them (parallel.c);
 * BLPG_WK_BARRIER for everything else.
 */
static bool
write_key_type_exact(Form_pg_attribute att)
{
	switch (att->atttypid)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case NUMERICOID:		/* DECIMAL: one scale per column */
		case BYTEAOID:
		case DATEOID:
		case TIMEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
		case UUIDOID:
		case BOOLOID:
			return true;
		case TEXTOID:
		case VARCHAROID:
			return !OidIsValid(att->attcollation) ||
				get_collation_isdeterministic(att->attcollation);
		default:
			return false;
	}
}

static blpg_write_key
write_keys_cover(blpg_target *tg)
{
	List	   *indexes;
	ListCell   *lc;
	bool		ok = true;
	bool		inexact = false;

	if (tg->partitioned || tg->history != NULL ||
		tg->nchunks > 0 || tg->load_pending || tg->rel->trigdesc != NULL)
		return BLPG_WK_BARRIER;
	indexes = RelationGetIndexList(tg->rel);
	foreach(lc, indexes)
	{
		Oid			ix = lfirst_oid(lc);
		HeapTuple	tup;
		Form_pg_index form;

		if (OidIsValid(tg->key_index) && ix == tg->key_index)
			continue;
		tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(ix));
		if (!HeapTupleIsValid(tup))
		{
			ok = false;
			break;
		}
		form = (Form_pg_index) GETSTRUCT(tup);
		if (form->indisunique || form->indisexclusion)
			ok = false;
		ReleaseSysCache(tup);
		if (!ok)
			break;
	}
	list_free(indexes);
	if (!ok)
		return BLPG_WK_BARRIER;
	if (!OidIsValid(tg->key_index))
		return BLPG_WK_KEYLESS;
	tg->wk_src = MemoryContextAlloc(GetMemoryChunkContext(tg), sizeof(int) * tg->nkey);
	for (int k = 0; k < tg->nkey; k++)
	{
		tg->wk_src[k] = -1;
		for (int c = 0; c < tg->nconv; c++)
			if (tg->conv[c].attnum == tg->key_attnums[k])
				tg->wk_src[k] = tg->conv[c].src;
		if (tg->wk_src[k] < 0 || tg->wk_src[k] >= (int) tg->table->ncols)
			return BLPG_WK_BARRIER;
	}
	for (int k = 0; k < tg->nkey; k++)
	{
		Oid			type = TupleDescAttr(RelationGetDescr(tg->rel), tg->key_attnums[k] - 1)->atttypid;
		uint8		src = tg->table->cols[tg->wk_src[k]].type;

		/*
		 * A FLOAT/DOUBLE source column: -0 and 0 are two texts of one value,
		 * so no write-set key; a float type at least as wide compares as
		 * the source does (IEEE equality both), which lets a proof of the
		 * source stand in.  Any other type that takes two values as one
		 * (a nondeterministic collation, citext, a narrower float) may
		 * equal what the source holds apart, so that two transactions the
		 * source proved independent could meet on one row or index entry
		 * here: a barrier.
		 */
		if (src == BL_T_FLOAT || src == BL_T_DOUBLE)
		{
			if (type == FLOAT8OID || (type == FLOAT4OID && src == BL_T_FLOAT))
				inexact = true;
			else
				return BLPG_WK_BARRIER;
		}
		else if (!write_key_type_exact(TupleDescAttr(RelationGetDescr(tg->rel),
													 tg->key_attnums[k] - 1)))
			return BLPG_WK_BARRIER;
	}
	return inexact ? BLPG_WK_INEXACT : BLPG_WK_KEY;
}

/*
 * The write-set key of row (an image of a row of tg; unchanged: for an
 * update's after image, its before image, whose values the columns the
 * after image lacks kept): a 64-bit hash of the
 * target and the key's values as JSON text, with ASCII letters folded to
 * lower case and spaces left out, so that values MySQL's case-insensitive
 * or PAD SPACE collations take as the same key hash alike (two keys
 * hashing alike only make their transactions wait for each other).
 */
blpg_write_key
blpg_target_write_key(blpg_target *tg, const bl_row *row, const bl_row *unchanged,
					  uint64 *key)
{
	bl_buf		b;
	bl_error	err;
	uint64		h = 14695981039346656037ULL;	/* FNV-1a */
	Oid			relid;

	if (tg->wk_state == 0)
		tg->wk_state = 1 + (int) write_keys_cover(tg);
	if (tg->wk_state != 1 + (int) BLPG_WK_KEY)
		return (blpg_write_key) (tg->wk_state - 1);
	relid = RelationGetRelid(tg->rel);
	for (size_t i = 0; i < sizeof(relid); i++)
		h = (h ^ ((const unsigned char *) &relid)[i]) * 1099511628211ULL;
	memset(&err, 0, sizeof(err));
	bl_buf_init(&b);
	for (int k = 0; k < tg->nkey; k++)
	{
		int			c = tg->wk_src[k];
		const bl_value *v = &row->values[c];

		/* an update's after image without the column: it kept its value */
		if (v->kind == BL_VAL_ABSENT && unchanged != NULL)
			v = &unchanged->values[c];

		if (v->kind == BL_VAL_ABSENT || v->kind == BL_VAL_JSON_DIFF)
		{
			bl_buf_free(&b);
			return BLPG_WK_BARRIER;
		}
		b.len = 0;
		if (bl_value_to_json(&tg->table->cols[c], v, NULL, &b, &err) != 0)
		{
			bl_buf_free(&b);
			return BLPG_WK_BARRIER;
		}
		for (size_t i = 0; i < b.len; i++)
		{
			unsigned char ch = (unsigned char) b.data[i];

			if (ch == ' ')
				continue;
			if (ch >= 'A' && ch <= 'Z')
				ch = ch - 'A' + 'a';
			h = (h ^ ch) * 1099511628211ULL;
		}
		h = (h ^ 0xff) * 1099511628211ULL;	/* column separator */
	}
	bl_buf_free(&b);
	*key = h;
	return BLPG_WK_KEY;
}
