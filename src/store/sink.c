/*
 * sink.c
 *	  Decoded events to ring entries (see store.h).
 *
 * Transactions.  A transaction starts at its GTID event (MySQL GTID /
 * ANONYMOUS_GTID / GTID_TAGGED, MariaDB GTID) or, in binlogs without GTIDs,
 * at its BEGIN; that event's position is where streaming must restart to
 * see the whole transaction again.  XID or a COMMIT statement ends it.  A
 * DDL statement is a transaction of its own.  BEGIN markers are put lazily,
 * before the first change that passes the filter, so that transactions
 * touching only filtered tables leave nothing in the store.
 *
 * Change numbering.  Inside a transaction, the changes put are numbered
 * 0 (BEGIN), 1.. (rows), last (COMMIT).  A restart position is (start of
 * the transaction, number of changes already acknowledged); the sink skips
 * that many when it sees the transaction again.  The numbering only counts
 * changes that pass the filter, so it is the same every time.
 *
 * Resuming by MariaDB GTID state (a host list: the server may not be the
 * one whose binlog the position is in) starts each replication domain
 * after the state, so the open transaction comes first in its domain but
 * not necessarily first overall: the skip belongs to that transaction's
 * GTID.  A transaction of another domain arriving before it is passed
 * over without a trace (its GTID stays out of the state); once the
 * skipped transaction is complete the sink asks for a new session, which
 * starts after it and gets the passed-over transactions again.  Another
 * transaction of its own domain arriving first means the server does not
 * have it: an error, never a skip.  Resuming by MySQL GTID set
 * (COM_BINLOG_DUMP_GTID) works the same way, without domains: any other
 * transaction before the open one is passed over (the worker checked that
 * the server executed the open one before the dump).
 *
 * GTID state (bl_gtid_state.h): the MariaDB state or the MySQL GTID set of
 * the transactions read, of any size, kept as each transaction commits.
 * Entries carry it as text: BEGIN and ROWS entries the state before their
 * transaction, COMMIT and DDL entries the state after it.  No other
 * transaction commits while one is open, so the state's current text is
 * the "before" until the transaction's GTID joins it at its commit.
 */
#include "store/store.h"

#include "bl_charset.h"
#include "bl_gtid_state.h"
#include "common/cryptohash.h"
#include "common/sha2.h"
#include "lib/stringinfo.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

typedef struct canon_table
{
	uint32		version;		/* key: bl_table.version */
	char	   *bytes;			/* canonical TABLE_MAP event */
	uint32		len;
	/* the table's column filter and masks (binlog_fdw.filters) */
	bool		edits_known;
	uint8	   *edits;			/* bl_col_edit per column, NULL: none */
	const blpg_filter_mask **masks; /* per column, for BL_EDIT_VALUE */
} canon_table;

struct blpg_sink
{
	blpg_slot  *slot;
	blpg_filter *filter;
	MemoryContext cxt;			/* canonical tables (reset when many) */
	MemoryContext owner_cxt;	/* the caller's: the sink, its GTID state */

	/* the open transaction */
	bool		in_txn;			/* inside BEGIN .. COMMIT */
	bool		have_start;		/* txn_file/txn_pos are set */
	char		txn_file[BLPG_FILE_LEN];
	uint64		txn_pos;
	uint64		txn_changes;	/* changes numbered so far (put or skipped) */
	bool		begin_put;		/* BEGIN counted */
	StringInfoData txn_table;	/* schema.table of its last captured rows
								 * event (owner_cxt), for messages */
	List	   *savepoints;		/* its SAVEPOINTs (owner_cxt), last first */
	char		gtid[BLPG_GTID_LEN];
	int64		commit_ts_us;
	bl_gtid_hint hint;			/* from its GTID event, for parallel apply */

	/* changes to skip in the first transaction after a restart */
	uint64		skip;
	blpg_position initial;		/* where the session started */

	/* resuming by GTID: the skip belongs to this transaction */
	bool		skip_pending;	/* its GTID event not seen yet */
	char		skip_gtid[BLPG_GTID_LEN];
	bool		skip_mysql;		/* skip_gtid is a MySQL GTID (no domain) */
	uint32		skip_domain;
	bool		deferring;		/* inside a transaction passed over */
	bool		deferring_standalone;
	bool		deferred_any;
	bool		restart_wanted;

	/* after the last complete transaction */
	char		done_file[BLPG_FILE_LEN];
	uint64		done_pos;
	/* where the last transaction that put changes ended */
	char		put_done_file[BLPG_FILE_LEN];
	uint64		put_done_pos;
	uint64		put_seq_seen;	/* slot->put_seq at that point */

	/* GTID state of what was read (malloc'd; freed with owner_cxt) */
	bl_gtid_state *state;

	/* GTID of the open transaction, committed into the state at its end */
	bool		pending_maria;
	uint32		pending_domain;
	uint32		pending_server;
	uint64		pending_seq;
	char		pending_mysql[BLPG_GTID_LEN];	/* "" = none */

	bool		ddl_seen;
	blpg_history *history;		/* advanced with the DDL put, or NULL */
	HTAB	   *tables;			/* version -> canonical table map */
	bl_buf		scratch;
	bl_buf		edited;			/* a rows event after its column filter */
	ResourceOwner hash_owner;	/* for the SHA-256 of masks, if needed */
	StringInfoData entry;
};

/*
 * A SAVEPOINT statement of the open transaction: its name as the server
 * logged it ("`a`"), and txn_changes when it came.
 */
typedef struct sink_savepoint
{
	char	   *name;
	int			name_len;
	uint64		changes;
} sink_savepoint;

static void
free_state(void *arg)
{
	bl_gtid_state_free((bl_gtid_state *) arg);
}

/* An error of the GTID state as an ereport. */
static void
state_error(blpg_sink *s, const bl_error *err, const char *what)
{
	ereport(ERROR,
			(errcode(err->code == BL_ERR_NOMEM ? ERRCODE_OUT_OF_MEMORY : ERRCODE_DATA_CORRUPTED),
			 errmsg("source \"%s\": %s: %s", s->slot->server_name, what, err->message)));
}

/* The GTID state now, as text (NULL: not known); valid until it changes. */
static const char *
state_text(blpg_sink *s, size_t *len)
{
	const char *t;
	bl_error	err;

	memset(&err, 0, sizeof(err));
	if (bl_gtid_state_text(s->state, &t, len, &err) != 0)
		state_error(s, &err, "the GTID state");
	return t;
}

/* A copy of the state's text in the current memory context (or NULL). */
static char *
state_copy(blpg_sink *s)
{
	size_t		len;
	const char *t = state_text(s, &len);

	return t ? pnstrdup(t, len) : NULL;
}

blpg_sink *
blpg_sink_create(blpg_slot *slot, blpg_filter *filter, const char *file,
				 uint64 pos, uint64 skip, const char *gtid_state)
{
	blpg_sink  *s = palloc0(sizeof(blpg_sink));
	HASHCTL		ctl;
	MemoryContextCallback *cb;
	bl_error	err;

	s->slot = slot;
	s->owner_cxt = CurrentMemoryContext;
	initStringInfo(&s->txn_table);
	s->state = bl_gtid_state_create();
	if (s->state == NULL)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	cb = palloc0(sizeof(MemoryContextCallback));
	cb->func = free_state;
	cb->arg = s->state;
	MemoryContextRegisterResetCallback(s->owner_cxt, cb);
	memset(&err, 0, sizeof(err));
	if (bl_gtid_state_load(s->state, gtid_state, &err) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("source \"%s\": the GTID state to start at is not valid: %s",
						slot->server_name, err.message),
				 errdetail("The state comes from binlog_fdw.source_state (%zu bytes).",
						   strlen(gtid_state)),
				 errhint("Reset the source's position with binlog_fdw.reset() and take a new snapshot.")));
	s->filter = filter;
	s->skip = skip;
	s->cxt = AllocSetContextCreate(CurrentMemoryContext, "binlog_fdw sink",
								   ALLOCSET_DEFAULT_SIZES);
	ctl.keysize = sizeof(uint32);
	ctl.entrysize = sizeof(canon_table);
	ctl.hcxt = s->cxt;
	s->tables = hash_create("binlog_fdw canonical tables", 64, &ctl,
							HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	bl_buf_init(&s->scratch);
	bl_buf_init(&s->edited);
	initStringInfo(&s->entry);
	strlcpy(s->done_file, file, sizeof(s->done_file));
	s->done_pos = pos;
	strlcpy(s->put_done_file, file, sizeof(s->put_done_file));
	s->put_done_pos = pos;
	s->put_seq_seen = slot->put_seq;
	strlcpy(s->initial.file, file, sizeof(s->initial.file));
	s->initial.pos = pos;
	s->initial.skip = skip;
	s->initial.gtid_state = gtid_state ? pstrdup(gtid_state) : NULL;
	return s;
}

void
blpg_sink_set_skip_gtid(blpg_sink *s, const char *gtid)
{
	unsigned int domain,
				server;
	unsigned long long seq;

	if (s->skip == 0 || gtid == NULL || gtid[0] == '\0')
		return;					/* the skip applies to the first transaction */
	if (sscanf(gtid, "%u-%u-%llu", &domain, &server, &seq) == 3)
	{
		s->skip_mysql = false;
		s->skip_domain = domain;
	}
	else if (strchr(gtid, ':') != NULL)
		s->skip_mysql = true;	/* "uuid:n" or "uuid:tag:n" */
	else
		return;
	strlcpy(s->skip_gtid, gtid, sizeof(s->skip_gtid));
	strlcpy(s->initial.gtid, gtid, sizeof(s->initial.gtid));
	s->skip_pending = true;
}

bool
blpg_sink_skip_pending(blpg_sink *s)
{
	return s->skip_pending;
}

bool
blpg_sink_restart_wanted(blpg_sink *s)
{
	return s->restart_wanted;
}

/* The open transaction's GTID joins the state: it committed. */
static void
gtid_done(blpg_sink *s)
{
	bl_error	err;
	int			rc = 0;

	memset(&err, 0, sizeof(err));
	if (s->pending_maria)
		rc = bl_gtid_state_commit_maria(s->state, s->pending_domain, s->pending_server,
										s->pending_seq, &err);
	else if (s->pending_mysql[0])
		rc = bl_gtid_state_commit_mysql(s->state, s->pending_mysql, &err);
	s->pending_maria = false;
	s->pending_mysql[0] = '\0';
	if (rc != 0)
		state_error(s, &err, "a transaction's GTID");
}

/* ---- entries ---- */

typedef struct entry_strings
{
	const char *file;
	const char *schema;
	size_t		schema_len;
	const char *table;
	size_t		table_len;
} entry_strings;

/*
 * Start an entry: header and the variable strings (the GTID state as it is
 * now: before the open transaction, after it once committed); payload
 * follows.
 */
static blpg_entry *
entry_begin(blpg_sink *s, blpg_entry_kind kind, const bl_event *ev,
			const entry_strings *str)
{
	blpg_entry	h;
	const char *file = str->file;
	size_t		state_len;
	const char *state = state_text(s, &state_len);

	/* names the decoder and the sink keep whole (bl_decoder_set_file) */
	if (strlen(file) >= BLPG_FILE_LEN || strlen(s->txn_file) >= BLPG_FILE_LEN ||
		strlen(s->gtid) >= BLPG_GTID_LEN || state_len > PG_UINT32_MAX)
		elog(ERROR, "binlog_fdw: an entry's file name, GTID or GTID state is too long");
	memset(&h, 0, sizeof(h));
	h.kind = kind;
	h.server_id = ev->server_id;
	h.event_ts = ev->timestamp;
	h.event_pos = ev->pos;
	h.event_next_pos = ev->next_pos;
	h.commit_ts_us = s->commit_ts_us;
	h.hint_kind = s->hint.kind;
	h.hint_a = s->hint.a;
	h.hint_b = s->hint.b;
	h.txn_pos = s->txn_pos;
	h.txn_change_first = s->txn_changes;
	h.file_len = strlen(file);
	h.txn_file_len = strlen(s->txn_file);
	h.gtid_len = strlen(s->gtid);
	h.gtid_state_len = (uint32) state_len;
	h.gtid_state_known = state != NULL;
	h.schema_len = str->schema_len;
	h.table_len = str->table_len;
	resetStringInfo(&s->entry);
	appendBinaryStringInfo(&s->entry, (const char *) &h, sizeof(h));
	appendBinaryStringInfo(&s->entry, file, h.file_len);
	appendBinaryStringInfo(&s->entry, s->txn_file, h.txn_file_len);
	appendBinaryStringInfo(&s->entry, s->gtid, h.gtid_len);
	if (state_len)
		appendBinaryStringInfo(&s->entry, state, h.gtid_state_len);
	if (str->schema_len)
		appendBinaryStringInfo(&s->entry, str->schema, str->schema_len);
	if (str->table_len)
		appendBinaryStringInfo(&s->entry, str->table, str->table_len);
	return (blpg_entry *) s->entry.data;
}

/* Finish and put the entry being built; nchanges set by the caller. */
static bool
entry_put(blpg_sink *s, uint32 nchanges)
{
	blpg_entry *e;
	uint64		len = BLPG_ENTRY_ALIGN(s->entry.len);

	while (s->entry.len < len)
		appendStringInfoChar(&s->entry, '\0');
	e = (blpg_entry *) s->entry.data;
	e->total_len = (uint32) len;
	e->nchanges = nchanges;
	e->payload_len = (uint32) (len - sizeof(blpg_entry) - e->file_len - e->txn_file_len -
							   e->gtid_len - e->gtid_state_len - e->schema_len - e->table_len);
	if (len > blpg_ring_max_entry(s->slot))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a change of %llu bytes does not fit in the ring of source \"%s\"",
						(unsigned long long) len, s->slot->server_name),
				 errdetail("An entry can take at most half of binlog_fdw.ring_size (%llu bytes); this one carries a GTID state of %u bytes.",
						   (unsigned long long) s->slot->ring_size, e->gtid_state_len),
				 errhint("Raise binlog_fdw.ring_size and restart the server.")));
	if (!blpg_ring_put(s->slot, e))
		return false;
	s->txn_changes += nchanges;
	return true;
}

/* Count a change toward the skip; true if it must not be put. */
static inline bool
skipping(blpg_sink *s)
{
	if (s->skip == 0)
		return false;
	s->skip--;
	s->txn_changes++;
	return true;
}

static void
start_txn(blpg_sink *s, const char *file, uint64 pos)
{
	if (!s->have_start)
	{
		strlcpy(s->txn_file, file, sizeof(s->txn_file));
		s->txn_pos = pos;
		s->have_start = true;
	}
	s->in_txn = true;
	s->txn_changes = 0;
	s->begin_put = false;
}

static void
end_txn(blpg_sink *s, const char *file, uint64 next_pos)
{
	s->in_txn = false;
	s->have_start = false;
	s->begin_put = false;
	s->txn_changes = 0;
	resetStringInfo(&s->txn_table);
	if (s->savepoints)
	{
		list_free_deep(s->savepoints);
		s->savepoints = NIL;
	}
	s->skip = 0;				/* the skip only ever applies to the first
								 * transaction */
	if (s->deferred_any && !s->skip_pending)
		s->restart_wanted = true;	/* for the transactions passed over */
	if (next_pos)
	{
		strlcpy(s->done_file, file, sizeof(s->done_file));
		s->done_pos = next_pos;
		/* only the worker puts: its own reads of put_seq need no lock */
		if (s->slot->put_seq != s->put_seq_seen)
		{
			s->put_seq_seen = s->slot->put_seq;
			strlcpy(s->put_done_file, file, sizeof(s->put_done_file));
			s->put_done_pos = next_pos;
		}
	}
	s->gtid[0] = '\0';
	s->commit_ts_us = 0;
	memset(&s->hint, 0, sizeof(s->hint));
}

/* The BEGIN marker, put before the first change of a transaction. */
static bool
put_begin(blpg_sink *s, const bl_event *ev, const char *file)
{
	entry_strings str = {file, NULL, 0, NULL, 0};

	if (s->begin_put)
		return true;
	s->begin_put = true;
	if (skipping(s))
		return true;
	entry_begin(s, BLPG_ENTRY_BEGIN, ev, &str);
	return entry_put(s, 1);
}

static const canon_table *
canonical_table(blpg_sink *s, const bl_table *t)
{
	bool		found;
	canon_table *c = hash_search(s->tables, &t->version, HASH_ENTER, &found);

	if (!found)
	{
		bl_buf_reset(&s->scratch);
		if (bl_table_serialize(t, t->version, &s->scratch) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory encoding the table map of %s.%s",
							t->schema.ptr, t->name.ptr)));
		c->bytes = MemoryContextAlloc(s->cxt, s->scratch.len);
		memcpy(c->bytes, s->scratch.data, s->scratch.len);
		c->len = (uint32) s->scratch.len;
		c->edits_known = false;
		c->edits = NULL;
		c->masks = NULL;
		if (hash_get_num_entries(s->tables) > 10000)
		{
			/* bounded: forget everything but this one next time */
			canon_table keep = *c;

			hash_destroy(s->tables);
			MemoryContextReset(s->cxt);
			{
				HASHCTL		ctl;

				ctl.keysize = sizeof(uint32);
				ctl.entrysize = sizeof(canon_table);
				ctl.hcxt = s->cxt;
				s->tables = hash_create("binlog_fdw canonical tables", 64, &ctl,
										HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
			}
			c = hash_search(s->tables, &keep.version, HASH_ENTER, &found);
			c->bytes = NULL;
			c->len = 0;
			return canonical_table(s, t);
		}
	}
	return c;
}

/* A filter's column by name (MySQL's are case-insensitive), or -1. */
static int
column_index(const bl_table *t, const char *name)
{
	for (uint32 i = 0; i < t->ncols; i++)
		if (t->cols[i].name.ptr && pg_strcasecmp(t->cols[i].name.ptr, name) == 0)
			return (int) i;
	return -1;
}

static void
missing_column(blpg_sink *s, const bl_table *t, const blpg_filter_rule *rule,
			   const char *what, const char *column, const char *file, uint64 pos)
{
	StringInfoData cols;

	initStringInfo(&cols);
	for (uint32 i = 0; i < t->ncols; i++)
		appendStringInfo(&cols, "%s%s", i ? ", " : "",
						 t->cols[i].name.ptr ? t->cols[i].name.ptr : "(unnamed)");
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_COLUMN),
			 errmsg("source \"%s\": the filter of %s.%s names column \"%s\" in %s, which the table does not have at binlog %s:%llu",
					s->slot->server_name, t->schema.ptr, t->name.ptr, column, what,
					file, (unsigned long long) pos),
			 errdetail("The table has the columns %s; nothing of this change was put into the ring.",
					   cols.data),
			 errhint("Correct the filter with binlog_fdw.set_filter('%s', '%s', ...) and restart the source (binlog_fdw.stop() and binlog_fdw.start()).",
					 s->slot->server_name, rule->source)));
}

/*
 * The edits of a table's row images its rule asks for (ct->edits NULL: the
 * images stay as they are).  A column the table's own rule names that the
 * table does not have is an error; one a rule of every table ("*") names
 * is for the tables that have it.
 */
static void
table_edits(blpg_sink *s, canon_table *ct, const bl_table *t,
			const blpg_filter_rule *rule, const char *file, uint64 pos)
{
	uint8	   *edits = MemoryContextAllocZero(s->cxt, Max(t->ncols, 1));
	const blpg_filter_mask **masks = MemoryContextAllocZero(s->cxt,
															sizeof(blpg_filter_mask *) * Max(t->ncols, 1));
	bool		any = false;
	ListCell   *lc;

	if (rule->columns != NIL || rule->exclude != NIL || rule->masks != NIL)
		for (uint32 i = 0; i < t->ncols; i++)
			if (t->cols[i].name.ptr == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("source \"%s\": the filter of %s.%s names columns, but the names of its columns are not known at binlog %s:%llu",
								s->slot->server_name, t->schema.ptr, t->name.ptr,
								file, (unsigned long long) pos),
						 errhint("Set binlog_row_metadata=FULL on the source, or take the table's definition into the schema history with a snapshot.")));
	foreach(lc, rule->own_columns ? rule->columns : NIL)
		if (column_index(t, lfirst(lc)) < 0)
			missing_column(s, t, rule, "columns", lfirst(lc), file, pos);
	foreach(lc, rule->own_columns ? rule->exclude : NIL)
		if (column_index(t, lfirst(lc)) < 0)
			missing_column(s, t, rule, "exclude_columns", lfirst(lc), file, pos);
	foreach(lc, rule->masks)
	{
		const blpg_filter_mask *m = lfirst(lc);
		int			i = column_index(t, m->column);

		if (i < 0)
		{
			if (rule->own_masks)
				missing_column(s, t, rule, "mask", m->column, file, pos);
			continue;
		}
		if (m->kind != BLPG_MASK_NULL && !bl_column_editable(&t->cols[i]))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("source \"%s\": column \"%s\" of %s.%s (%s%s) cannot be masked with a value or a hash (binlog %s:%llu)",
							s->slot->server_name, m->column, t->schema.ptr, t->name.ptr,
							bl_mysql_type_name(t->cols[i].type),
							t->cols[i].compressed ? ", COMPRESSED" : "",
							file, (unsigned long long) pos),
					 errdetail("Values and hashes replace the bytes of CHAR, VARCHAR, TEXT, BINARY, VARBINARY and BLOB columns only."),
					 errhint("Mask it with {\"value\": null} or leave it out with exclude_columns (binlog_fdw.set_filter()), then restart the source.")));
		edits[i] = m->kind == BLPG_MASK_NULL ? BL_EDIT_NULL : BL_EDIT_VALUE;
		masks[i] = m;
		any = true;
	}
	for (uint32 i = 0; i < t->ncols; i++)
		if (blpg_filter_drops_column(rule, t->cols[i].name.ptr))
		{
			edits[i] = BL_EDIT_DROP;
			any = true;
		}
	ct->edits = any ? edits : NULL;
	ct->masks = masks;
	ct->edits_known = true;
}

typedef struct edit_arg
{
	blpg_sink  *s;
	const canon_table *ct;
} edit_arg;

/* The bytes of a masked value: the fixed text or the hex SHA-256. */
static void
mask_value(void *arg, uint32_t col, const uint8_t *value, size_t len, bl_buf *out)
{
	edit_arg   *ea = arg;
	const blpg_filter_mask *m = ea->ct->masks[col];

	if (m->kind == BLPG_MASK_VALUE)
		bl_buf_append(out, m->value, strlen(m->value));
	else
	{
		uint8		digest[PG_SHA256_DIGEST_LENGTH];
		char		hex[PG_SHA256_DIGEST_LENGTH * 2 + 1];
		ResourceOwner save = CurrentResourceOwner;
		pg_cryptohash_ctx *ctx;
		bool		ok;

		/* the worker streams outside transactions: the hash needs an owner */
		if (save == NULL)
		{
			if (ea->s->hash_owner == NULL)
				ea->s->hash_owner = ResourceOwnerCreate(NULL, "binlog_fdw masks");
			CurrentResourceOwner = ea->s->hash_owner;
		}
		ctx = pg_cryptohash_create(PG_SHA256);
		ok = ctx != NULL && pg_cryptohash_init(ctx) == 0 &&
			pg_cryptohash_update(ctx, value, len) == 0 &&
			pg_cryptohash_final(ctx, digest, sizeof(digest)) == 0;
		pg_cryptohash_free(ctx);
		CurrentResourceOwner = save;
		if (!ok)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("could not compute the SHA-256 of a masked value")));
		for (int i = 0; i < PG_SHA256_DIGEST_LENGTH; i++)
			snprintf(hex + 2 * i, 3, "%02x", digest[i]);
		bl_buf_append(out, hex, PG_SHA256_DIGEST_LENGTH * 2);
	}
}

static bool
put_rows(blpg_sink *s, bl_decoder *dec, bl_event *ev, const char *file)
{
	bl_rows_event *r = &ev->u.rows;
	const bl_table *t = r->table;
	const canon_table *ct;
	entry_strings str;
	blpg_entry *e;
	uint32		nrows = 0;
	uint32		skip_rows = 0;
	bl_error	err;
	int			rc;
	size_t		tm_off;
	const blpg_filter_rule *rule;
	bl_event	edited;

	if (t == NULL)
		return true;			/* a rows event without rows */
	if (!blpg_filter_match(s->filter, t->schema.ptr, t->schema.len,
						   t->name.ptr, t->name.len))
		return true;
	rule = blpg_filter_rule_of(s->filter, t->schema.ptr, t->schema.len,
							   t->name.ptr, t->name.len);
	if (!blpg_filter_keeps_op(rule, r->op == BL_OP_INSERT ? BLPG_FILTER_OP_INSERT :
							  r->op == BL_OP_UPDATE ? BLPG_FILTER_OP_UPDATE :
							  BLPG_FILTER_OP_DELETE))
		return true;
	if (!s->in_txn)
		start_txn(s, file, ev->pos);
	if (!put_begin(s, ev, file))
		return false;
	if (s->txn_table.len != (int) (t->schema.len + 1 + t->name.len) ||
		memcmp(s->txn_table.data, t->schema.ptr, t->schema.len) != 0 ||
		memcmp(s->txn_table.data + t->schema.len + 1, t->name.ptr, t->name.len) != 0)
	{
		resetStringInfo(&s->txn_table);
		appendBinaryStringInfo(&s->txn_table, t->schema.ptr, t->schema.len);
		appendStringInfoChar(&s->txn_table, '.');
		appendBinaryStringInfo(&s->txn_table, t->name.ptr, t->name.len);
	}

	/* count the rows: the values are checked on the way */
	memset(&err, 0, sizeof(err));
	while ((rc = bl_rows_next(dec, r, NULL, NULL, &err)) == 1)
		nrows++;
	if (rc < 0)
		blpg_report_decoder_error(ERROR, &err, s->slot->server_name);
	while (skip_rows < nrows && skipping(s))
		skip_rows++;
	if (skip_rows == nrows)
		return true;

	ct = canonical_table(s, t);
	str.file = file;
	str.schema = t->schema.ptr;
	str.schema_len = t->schema.len;
	str.table = t->name.ptr;
	str.table_len = t->name.len;
	entry_begin(s, BLPG_ENTRY_ROWS, ev, &str);
	tm_off = s->entry.len;
	appendBinaryStringInfo(&s->entry, ct->bytes, ct->len);
	if (rule && !ct->edits_known)
		table_edits(s, (canon_table *) ct, t, rule, file, ev->pos);
	if (ct->edits)
	{
		edit_arg	ea = {s, ct};

		/* excluded and masked values never reach the ring */
		edited = *ev;
		memset(&err, 0, sizeof(err));
		if (bl_rows_edit(dec, &edited, ct->edits, mask_value, &ea, &s->edited, &err) != 0)
			blpg_report_decoder_error(ERROR, &err, s->slot->server_name);
		ev = &edited;
	}
	bl_buf_reset(&s->scratch);
	if (bl_rows_serialize(ev, t->version, &s->scratch) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory encoding a rows event")));
	appendBinaryStringInfo(&s->entry, s->scratch.data, s->scratch.len);
	e = (blpg_entry *) s->entry.data;
	e->op = r->op;
	e->rows_skip = skip_rows;
	e->tablemap_len = ct->len;
	(void) tm_off;
	return entry_put(s, nrows - skip_rows);
}

static bool
put_commit(blpg_sink *s, const bl_event *ev, const char *file, uint64 xid)
{
	entry_strings str = {file, NULL, 0, NULL, 0};

	if (!s->begin_put || skipping(s))
		return true;
	entry_begin(s, BLPG_ENTRY_COMMIT, ev, &str);
	((blpg_entry *) s->entry.data)->xid = xid;
	return entry_put(s, 1);
}

static bool
sql_is(const bl_str *sql, const char *word)
{
	size_t		n = strlen(word);

	return sql->len >= n && pg_strncasecmp(sql->ptr, word, n) == 0 &&
		(sql->len == n || !isalnum((unsigned char) sql->ptr[n]));
}

static const char *
skip_space(const char *p, const char *end)
{
	while (p < end && isspace((unsigned char) *p))
		p++;
	return p;
}

/* After the keyword word at p (and the spaces after it), or NULL. */
static const char *
after_word(const char *p, const char *end, const char *word)
{
	size_t		n = strlen(word);

	if ((size_t) (end - p) < n || pg_strncasecmp(p, word, n) != 0 ||
		((size_t) (end - p) > n && (isalnum((unsigned char) p[n]) || p[n] == '_')))
		return NULL;
	return skip_space(p + n, end);
}

/*
 * "SAVEPOINT name" (rollback false) or "ROLLBACK [WORK] TO [SAVEPOINT]
 * name" (rollback true): true with the name as the server wrote it
 * (quoted, as both servers log it), trailing spaces and ';' left off.
 */
static bool
savepoint_statement(const bl_str *sql, bool rollback, const char **name, int *name_len)
{
	const char *end = sql->ptr + sql->len;
	const char *p = skip_space(sql->ptr, end);
	const char *q;

	if (rollback)
	{
		if ((p = after_word(p, end, "ROLLBACK")) == NULL)
			return false;
		if ((q = after_word(p, end, "WORK")) != NULL)
			p = q;
		if ((p = after_word(p, end, "TO")) == NULL)
			return false;
	}
	if ((q = after_word(p, end, "SAVEPOINT")) != NULL)
		p = q;
	else if (!rollback)
		return false;
	while (end > p && (isspace((unsigned char) end[-1]) || end[-1] == ';'))
		end--;
	*name = p;
	*name_len = (int) (end - p);
	return true;
}

static bool
sql_is_rollback_to(const bl_str *sql)
{
	const char *name;
	int			len;

	return savepoint_statement(sql, true, &name, &len);
}

/*
 * A transaction that put captured changes ended with ROLLBACK.  A server
 * logs one only when the transaction also changed a table that cannot
 * roll back (MyISAM, Aria, MEMORY, ...), in the same statement as a
 * transactional one or after it: on the source the changes of its
 * transactional tables were undone and those of the others were not, and
 * the binlog does not say which table is which.  Nothing of it was
 * committed into the ring: the worker stops before its end.
 */
static void
rollback_error(blpg_sink *s, const bl_event *ev, const char *file, bool to_savepoint)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 to_savepoint ?
			 errmsg("source \"%s\": a transaction that changed table %s rolled back to a savepoint after changing captured rows, at binlog %s:%llu",
					s->slot->server_name, s->txn_table.data, file, (unsigned long long) ev->pos) :
			 errmsg("source \"%s\": a transaction that changed table %s ended with ROLLBACK at binlog %s:%llu",
					s->slot->server_name, s->txn_table.data, file, (unsigned long long) ev->pos),
			 errdetail("A server logs %s only when the transaction also changed a non-transactional table (MyISAM, Aria, MEMORY): it undid the rows of the transactional tables and kept the others, and the binlog does not say which table is which. Nothing of this transaction was committed here.",
					   to_savepoint ? "ROLLBACK TO SAVEPOINT" : "a rolled back transaction"),
			 errhint("Make the tables such transactions change transactional (ALTER TABLE ... ENGINE=InnoDB), then copy the tables again: binlog_fdw.stop(), binlog_fdw.reset() and binlog_fdw.snapshot() start the source after this transaction.")));
}

/* "SAVEPOINT name" inside the open transaction: remember where it came. */
static void
savepoint_set(blpg_sink *s, const char *name, int len)
{
	MemoryContext old = MemoryContextSwitchTo(s->owner_cxt);
	sink_savepoint *sp = palloc(sizeof(sink_savepoint));

	sp->name = pnstrdup(name, len);
	sp->name_len = len;
	sp->changes = s->txn_changes;
	s->savepoints = lcons(sp, s->savepoints);
	MemoryContextSwitchTo(old);
}

/*
 * "ROLLBACK TO name" inside the open transaction.  A server logs it only
 * when the transaction changed a non-transactional table after the
 * savepoint (otherwise it drops the rows since the savepoint from the
 * transaction before logging it): the captured rows logged since the
 * savepoint were undone on the source, or not, by their table's engine.
 * None since the savepoint: nothing to undo here, the transaction goes on;
 * some (or the savepoint not seen, as after a restart): the worker stops.
 */
static void
savepoint_rollback(blpg_sink *s, const bl_event *ev, const char *file, const char *name, int len)
{
	ListCell   *lc;
	int			i = 0;

	foreach(lc, s->savepoints)
	{
		sink_savepoint *sp = lfirst(lc);

		if (sp->name_len == len && pg_strncasecmp(sp->name, name, len) == 0)
		{
			if (s->txn_changes > sp->changes)
				rollback_error(s, ev, file, true);
			/* the savepoints set after it are gone (it stays) */
			while (i-- > 0)
			{
				pfree(((sink_savepoint *) linitial(s->savepoints))->name);
				pfree(linitial(s->savepoints));
				s->savepoints = list_delete_first(s->savepoints);
			}
			return;
		}
		i++;
	}
	if (s->txn_changes > 0)
		rollback_error(s, ev, file, true);
}

/* IF EXISTS / IF NOT EXISTS */
static const char *
skip_if_exists(const char *p, const char *end)
{
	if (end - p > 2 && pg_strncasecmp(p, "if ", 3) == 0)
	{
		p += 3;
		while (p < end && !isspace((unsigned char) *p))
			p++;				/* NOT or EXISTS */
		p = skip_space(p, end);
		if (end - p > 6 && pg_strncasecmp(p, "exists", 6) == 0)
			p += 6;
		p = skip_space(p, end);
	}
	return p;
}

/* A name, plain or `quoted`, possibly qualified: returns the parts read. */
static int
read_name(const char **pp, const char *end, char ident[2][256])
{
	const char *p = *pp;
	int			nid = 0;

	while (p < end && nid < 2)
	{
		size_t		n = 0;

		if (*p == '`')
		{
			p++;
			while (p < end && n < 255)
			{
				if (*p == '`' && p + 1 < end && p[1] == '`')
				{
					ident[nid][n++] = '`';
					p += 2;
				}
				else if (*p == '`')
				{
					p++;
					break;
				}
				else
					ident[nid][n++] = *p++;
			}
		}
		else
			while (p < end && n < 255 && (isalnum((unsigned char) *p) || *p == '_' || *p == '$' ||
										  (unsigned char) *p >= 0x80))
				ident[nid][n++] = *p++;
		ident[nid][n] = '\0';
		nid++;
		if (p < end && *p == '.')
			p++;
		else
			break;
	}
	*pp = p;
	return nid;
}

/*
 * The object a DDL statement is about, for the filter: the name after the
 * first of TABLE, VIEW, TRIGGER, ... (the table after INDEX name ON; the
 * name after TRUNCATE without TABLE), qualified by the statement's database
 * unless it says another; a DATABASE/SCHEMA statement is about its database
 * with table "".  Unrecognized statements: the statement's database, "".
 */
static void
ddl_target(const bl_str *sql, const bl_str *db, char *schema, size_t slen,
		   char *table, size_t tlen)
{
	static const char *const objects[] = {
		"table", "view", "trigger", "procedure", "function", "event",
		"sequence", "index", "database", "schema", NULL
	};
	const char *p = sql->ptr;
	const char *end = sql->ptr + sql->len;
	const char *kw = NULL;
	const char *object = NULL;
	char		ident[2][256];
	int			nid;

	snprintf(schema, slen, "%.*s", (int) db->len, db->ptr);
	table[0] = '\0';
	for (const char *q = p; q < end && kw == NULL; q++)
	{
		if (q > p && (isalnum((unsigned char) q[-1]) || q[-1] == '_' || q[-1] == '`'))
			continue;
		for (int k = 0; objects[k]; k++)
		{
			size_t		n = strlen(objects[k]);

			if ((size_t) (end - q) > n && pg_strncasecmp(q, objects[k], n) == 0 &&
				(isspace((unsigned char) q[n]) || q[n] == '`'))
			{
				kw = q + n;
				object = objects[k];
				break;
			}
		}
	}
	if (kw == NULL)
	{
		/* TRUNCATE [TABLE] name: TABLE is optional */
		if (sql->len > 9 && pg_strncasecmp(p, "truncate", 8) == 0 && isspace((unsigned char) p[8]))
		{
			kw = p + 8;
			object = "table";
		}
		else
			return;
	}
	kw = skip_if_exists(skip_space(kw, end), end);
	if (strcmp(object, "index") == 0)
	{
		/* [CREATE|DROP] INDEX name ON table */
		if (read_name(&kw, end, ident) < 1)
			return;
		kw = skip_space(kw, end);
		if (end - kw < 3 || pg_strncasecmp(kw, "on", 2) != 0 ||
			!(isspace((unsigned char) kw[2]) || kw[2] == '`'))
			return;
		kw = skip_space(kw + 2, end);
	}
	nid = read_name(&kw, end, ident);
	if (strcmp(object, "database") == 0 || strcmp(object, "schema") == 0)
	{
		if (nid >= 1)
			snprintf(schema, slen, "%s", ident[0]);
	}
	else if (nid == 2)
	{
		snprintf(schema, slen, "%s", ident[0]);
		snprintf(table, tlen, "%s", ident[1]);
	}
	else if (nid == 1)
		snprintf(table, tlen, "%s", ident[0]);
}

static bool
put_ddl(blpg_sink *s, const bl_event *ev, const char *file)
{
	const bl_str *sql = &ev->u.query.sql;
	char		schema[256];
	char		table[256];
	entry_strings str;
	blpg_entry *e;

	s->ddl_seen = true;
	ddl_target(sql, &ev->u.query.db, schema, sizeof(schema), table, sizeof(table));
	if (!blpg_filter_match(s->filter, schema, strlen(schema), table, strlen(table)))
		return true;
	/* TRUNCATE changes no definition: the schema history needs no entry */
	if (sql_is(sql, "TRUNCATE") &&
		!blpg_filter_keeps_op(blpg_filter_rule_of(s->filter, schema, strlen(schema),
												  table, strlen(table)),
							  BLPG_FILTER_OP_TRUNCATE))
		return true;
	if (skipping(s))
		return true;
	str.file = file;
	str.schema = schema;
	str.schema_len = strlen(schema);
	str.table = table;
	str.table_len = strlen(table);
	entry_begin(s, BLPG_ENTRY_DDL, ev, &str);
	e = (blpg_entry *) s->entry.data;
	e->ddl_collation = ev->u.query.charset_client;
	e->ddl_server_collation = ev->u.query.collation_server;
	if (s->history)
	{
		blpg_entry_view v;
		char	   *db,
				   *text;

		/* the text as the consumer will read it from the entry */
		appendBinaryStringInfo(&s->entry, (const char *) &ev->u.query.db.len, sizeof(uint32));
		appendBinaryStringInfo(&s->entry, ev->u.query.db.ptr, ev->u.query.db.len);
		appendBinaryStringInfo(&s->entry, sql->ptr, sql->len);
		e = (blpg_entry *) s->entry.data;
		e->payload_len = (uint32) (sizeof(uint32) + ev->u.query.db.len + sql->len);
		blpg_entry_view_init(&v, e);
		blpg_entry_ddl_text(&v, &db, &text);
		blpg_history_advance(s->history, db, text, e->ddl_server_collation);
		return entry_put(s, 1);
	}
	/* the db the statement ran in, then the text */
	appendBinaryStringInfo(&s->entry, (const char *) &ev->u.query.db.len, sizeof(uint32));
	appendBinaryStringInfo(&s->entry, ev->u.query.db.ptr, ev->u.query.db.len);
	appendBinaryStringInfo(&s->entry, sql->ptr, sql->len);
	return entry_put(s, 1);
}

/*
 * An XA transaction that changed captured tables and that is not simply
 * committed: its rows were put into the ring but never committed there; the
 * worker stops at it (what is acknowledged stays).
 */
static void
xa_error(blpg_sink *s, const bl_event *ev, const char *file, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("source \"%s\": an XA transaction that changed captured tables was %s at binlog %s:%llu",
					s->slot->server_name, what, file, (unsigned long long) ev->pos),
			 errdetail("Its outcome, XA COMMIT or XA ROLLBACK, comes later in the binlog as a transaction of its own; binlog_fdw does not follow two-phase XA transactions, and nothing of this one was committed here."),
			 errhint("Commit XA transactions on captured tables in one phase (XA COMMIT ... ONE PHASE) or not at all, then copy the tables again: binlog_fdw.stop(), binlog_fdw.reset() and binlog_fdw.snapshot() start the source after it.")));
}

/*
 * A statement that changes rows (INSERT, UPDATE, DELETE, REPLACE, LOAD
 * DATA, WITH ...), written by a session with binlog_format STATEMENT or
 * MIXED, such as one opened before SET GLOBAL binlog_format = ROW, or one
 * that set its own: its rows are in no rows event, so no consumer could
 * have them.  True (passed over) when it is known to write one table the
 * source's filter does not capture; a captured table, or tables it cannot
 * name, stop the worker with an error at the statement's position (what
 * is acknowledged stays; nothing after it is read).  False: not such a
 * statement.
 */
static bool
statement_dml(blpg_sink *s, const bl_event *ev, const char *file)
{
	const bl_str *sql = &ev->u.query.sql;
	char	   *db = pnstrdup(ev->u.query.db.ptr, ev->u.query.db.len);
	char	   *text = pnstrdup(sql->ptr, Min(sql->len, (size_t) 4096));
	blpg_ddl   *d;

	/* the keywords and names are ASCII in any charset the source uses */
	d = blpg_ddl_parse(text, db);
	if (d->kind != BLPG_DDL_DML)
		return false;
	if (d->name != NULL &&
		!blpg_filter_match(s->filter, d->db, strlen(d->db), d->name, strlen(d->name)))
		return true;
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("source \"%s\": a change of %s was logged as a statement, not as rows, at binlog %s:%llu",
					s->slot->server_name,
					d->name ? psprintf("table %s.%s", d->db, d->name) : "tables that cannot be named",
					file, (unsigned long long) ev->pos),
			 errdetail("Statement: %.*s%s", (int) Min(sql->len, (size_t) 1000), sql->ptr,
					   sql->len > 1000 ? " ..." : ""),
			 errhint("The session that wrote it used binlog_format STATEMENT or MIXED (sessions opened before SET GLOBAL binlog_format = ROW keep their format). "
					 "Make every session log ROW (reconnect them), then copy the tables again: binlog_fdw.stop(), binlog_fdw.reset() and binlog_fdw.snapshot() start the source after this statement.")));
	return true;				/* not reached */
}

/*
 * A transaction passed over while waiting for the one the skip belongs to:
 * true while its events last (they are ignored).
 */
static bool
deferred_event(blpg_sink *s, const bl_event *ev)
{
	if (!s->deferring)
		return false;
	switch (ev->type)
	{
		case BL_EV_MARIA_GTID:
		case BL_EV_GTID:
		case BL_EV_GTID_TAGGED:
		case BL_EV_ANONYMOUS_GTID:
			s->deferring = false;	/* a new transaction: not ours to drop */
			return false;
		case BL_EV_XID:
			s->deferring = false;
			return true;
		case BL_EV_QUERY:
		case BL_EV_MARIA_QUERY_COMPRESSED:
			{
				const bl_str *sql = &ev->u.query.sql;

				/* a MySQL GTID says nothing of BEGIN: a statement without one is DDL */
				if (sql_is(sql, "BEGIN") || sql_is(sql, "XA START"))
				{
					s->deferring_standalone = false;
					return true;
				}
				if (s->deferring_standalone ||
					sql_is(sql, "COMMIT") ||
					(sql_is(sql, "ROLLBACK") && !sql_is_rollback_to(sql)) ||
					sql_is(sql, "XA END") || sql_is(sql, "XA COMMIT"))
					s->deferring = false;
				return true;
			}
		default:
			return true;
	}
}

/*
 * Resuming by GTID with a skip: the skipped transaction must come first in
 * its domain.  True if the transaction of this GTID event is passed over.
 */
static bool
check_skip_gtid(blpg_sink *s, const bl_event *ev)
{
	if (strcmp(ev->u.gtid.text, s->skip_gtid) == 0)
	{
		s->skip_pending = false;
		return false;
	}
	/*
	 * MariaDB: the domain's next transaction must be it.  MySQL has no
	 * domains (a replica may commit one server's transactions out of
	 * order): the host was checked to have executed it, so it comes.
	 */
	if (!s->skip_mysql && ev->u.gtid.domain_id == s->skip_domain)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("source \"%s\", host %s: transaction %s, of which %llu changes were already delivered, is not in this server's binlog: it has %s next in that domain",
						s->slot->server_name, s->slot->source_host, s->skip_gtid,
						(unsigned long long) s->skip, ev->u.gtid.text),
				 errdetail("The transaction was lost when the server it was read from failed (it had not reached this server), or this server has diverged."),
				 errhint("Nothing was skipped: the worker keeps trying the hosts of the list. If the transaction is lost for good, reset the source's position (binlog_fdw.reset()) and take a new snapshot.")));
	s->deferring = true;
	/* until its BEGIN (MariaDB: the GTID's flag says whether one comes) */
	s->deferring_standalone = s->skip_mysql ? true : ev->u.gtid.standalone;
	s->deferred_any = true;
	return true;
}

bool
blpg_sink_event(blpg_sink *s, bl_decoder *dec, bl_event *ev)
{
	const char *file = bl_decoder_file(dec);

	if (deferred_event(s, ev))
		return true;
	if ((ev->type == BL_EV_MARIA_GTID || ev->type == BL_EV_GTID ||
		 ev->type == BL_EV_GTID_TAGGED) && s->skip_pending && check_skip_gtid(s, ev))
		return true;

	switch (ev->type)
	{
		case BL_EV_GTID:
		case BL_EV_ANONYMOUS_GTID:
		case BL_EV_GTID_TAGGED:
		case BL_EV_MARIA_GTID:
			strlcpy(s->txn_file, file, sizeof(s->txn_file));
			s->txn_pos = ev->pos;
			s->have_start = true;
			strlcpy(s->gtid, ev->u.gtid.text, sizeof(s->gtid));
			s->commit_ts_us = (int64) ev->u.gtid.commit_ts_us;
			bl_gtid_hint_of(&ev->u.gtid, ev->type == BL_EV_MARIA_GTID, &s->hint);
			if (ev->type == BL_EV_MARIA_GTID && !ev->u.gtid.standalone)
				start_txn(s, file, ev->pos);
			s->pending_maria = ev->type == BL_EV_MARIA_GTID;
			s->pending_mysql[0] = '\0';
			if (ev->type == BL_EV_MARIA_GTID)
			{
				s->pending_domain = ev->u.gtid.domain_id;
				s->pending_server = ev->server_id;
				s->pending_seq = ev->u.gtid.seq_no;
			}
			else if (ev->type != BL_EV_ANONYMOUS_GTID)
				strlcpy(s->pending_mysql, ev->u.gtid.text, sizeof(s->pending_mysql));
			return true;

		case BL_EV_QUERY:
		case BL_EV_MARIA_QUERY_COMPRESSED:
			{
				const bl_str *sql = &ev->u.query.sql;

				if (sql_is(sql, "BEGIN") || sql_is(sql, "XA START"))
				{
					if (!s->in_txn)
					{
						if (s->commit_ts_us == 0)
							s->commit_ts_us = (int64) ev->timestamp * 1000000;
						start_txn(s, file, ev->pos);
					}
					return true;
				}
				/*
				 * XA: "XA END" ends the statements, not the transaction:
				 * an XA_PREPARE event (two-phase, or MySQL's one phase),
				 * "XA COMMIT ... ONE PHASE" or an XID follows.
				 */
				if (sql_is(sql, "XA END") && s->in_txn)
					return true;
				if (sql_is(sql, "XA ROLLBACK"))
				{
					if (s->in_txn && s->begin_put)
						xa_error(s, ev, file, "rolled back inside its own transaction");
					end_txn(s, file, ev->next_pos);
					return true;	/* of a prepared one: nothing was put */
				}
				{
					const char *name;
					int			len;

					if (savepoint_statement(sql, false, &name, &len))
					{
						if (s->in_txn)
							savepoint_set(s, name, len);
						return true;
					}
					if (savepoint_statement(sql, true, &name, &len))
					{
						if (s->in_txn)
							savepoint_rollback(s, ev, file, name, len);
						return true;
					}
				}
				if (sql_is(sql, "ROLLBACK") && s->in_txn && s->begin_put)
					rollback_error(s, ev, file, false);
				if (sql_is(sql, "COMMIT") || sql_is(sql, "ROLLBACK") ||
					sql_is(sql, "XA END") || sql_is(sql, "XA COMMIT"))
				{
					bool		ok = true;

					if (s->in_txn)
					{
						gtid_done(s);
						ok = put_commit(s, ev, file, 0);
					}
					end_txn(s, file, ev->next_pos);
					return ok;
				}
				if (sql_is(sql, "RELEASE SAVEPOINT") || sql_is(sql, "XA PREPARE"))
					return true;
				/* a change of rows logged as a statement: never a silent gap */
				if (statement_dml(s, ev, file))
					return true;
				/* a statement of its own: DDL (implicitly committing) */
				{
					bool		ok;

					if (!s->have_start)
					{
						strlcpy(s->txn_file, file, sizeof(s->txn_file));
						s->txn_pos = ev->pos;
						s->have_start = true;
					}
					if (s->commit_ts_us == 0)
						s->commit_ts_us = (int64) ev->timestamp * 1000000;
					s->txn_changes = 0;
					gtid_done(s);
					ok = put_ddl(s, ev, file);
					end_txn(s, file, ev->next_pos);
					return ok;
				}
			}

		case BL_EV_XID:
			{
				bool		ok = true;

				if (s->in_txn)
				{
					gtid_done(s);
					ok = put_commit(s, ev, file, ev->u.xid.xid);
				}
				end_txn(s, file, ev->next_pos);
				return ok;
			}

		case BL_EV_FORMAT_DESCRIPTION:

			/*
			 * A later binlog file, reached by rotation between
			 * transactions: nothing of the earlier one is left to read, so
			 * the position after it is this file's start.  An idle source's
			 * durable position follows its rotations (advance_past_filtered
			 * records it once all is acknowledged), and a restart does not
			 * need the earlier file, which the source may purge.  Only
			 * forward (names of one base sort as files) and only for a
			 * position by file (a GTID start has no file yet).
			 */
			if (!s->in_txn && !s->have_start && s->done_file[0] != '\0' &&
				strcmp(file, s->done_file) > 0)
			{
				strlcpy(s->done_file, file, sizeof(s->done_file));
				s->done_pos = 4;	/* after the file's magic number */
			}
			return true;

		case BL_EV_MARIA_GTID_LIST:
		case BL_EV_PREVIOUS_GTIDS:
			{
				bl_error	err;
				int			rc;

				memset(&err, 0, sizeof(err));
				if (ev->type == BL_EV_MARIA_GTID_LIST)
					rc = bl_gtid_state_maria_list(s->state, ev->u.gtid_set.text.ptr,
												  ev->u.gtid_set.text.len, &err);
				else
				{
					/*
					 * At a file's start: the set when none is known, if
					 * this session read the file from before it (so no
					 * transaction of the file is missing).
					 */
					bool		from_start = strcmp(file, s->initial.file) != 0 ||
						ev->pos >= s->initial.pos;

					rc = bl_gtid_state_mysql_previous(s->state, ev->u.gtid_set.text.ptr,
													  ev->u.gtid_set.text.len, from_start, &err);
				}
				if (rc != 0)
					state_error(s, &err, psprintf("the GTID list at the start of binlog %s", file));
				return true;
			}

		case BL_EV_INCIDENT:

			/*
			 * The source marks a gap: changes it could not write to the
			 * binlog (LOST_EVENTS).  A replica's SQL thread stops at it.
			 */
			if (ev->u.incident.kind != 0)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("source \"%s\": the binlog has an incident event (kind %u) at %s:%llu: the source says changes may be missing from its binlog",
								s->slot->server_name, (unsigned) ev->u.incident.kind, file,
								(unsigned long long) ev->pos),
						 ev->u.incident.message.len > 0 ?
						 errdetail("Its message: %.*s", (int) ev->u.incident.message.len,
								   ev->u.incident.message.ptr) : 0,
						 errhint("Copy the tables again from the source: binlog_fdw.stop(), binlog_fdw.reset() and binlog_fdw.snapshot() start the source after it.")));
			return true;

		case BL_EV_XA_PREPARE:
			{
				bool		ok = true;

				if (!s->in_txn)
					return true;
				/*
				 * A two-phase XA transaction, prepared: its outcome comes
				 * later (XA COMMIT or XA ROLLBACK in a group of its own,
				 * other transactions in between).  Not followed: an error
				 * if it changed a captured table (nothing of it is
				 * committed here), else passed over like its outcome.
				 */
				if (!ev->u.xa_prepare.one_phase)
				{
					if (s->begin_put)
						xa_error(s, ev, file, "prepared for a two-phase commit");
					gtid_done(s);
					end_txn(s, file, ev->next_pos);
					return true;
				}
				/* MySQL's XA COMMIT ... ONE PHASE */
				gtid_done(s);
				ok = put_commit(s, ev, file, 0);
				end_txn(s, file, ev->next_pos);
				return ok;
			}

		case BL_EV_LOAD:
		case BL_EV_CREATE_FILE:
		case BL_EV_EXEC_LOAD:
		case BL_EV_NEW_LOAD:
		case BL_EV_EXECUTE_LOAD_QUERY:

			/*
			 * LOAD DATA logged as a statement: the rows are in a file the
			 * statement names, not in rows events.  Which table it loads is
			 * in the event's text, not decoded here: an error, whatever the
			 * filter says (never a silent gap).
			 */
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("source \"%s\": a LOAD DATA was logged as a statement (%s event), not as rows, at binlog %s:%llu",
							s->slot->server_name, bl_event_type_name(ev->type), file,
							(unsigned long long) ev->pos),
					 errhint("The session that ran it used binlog_format STATEMENT or MIXED (sessions opened before SET GLOBAL binlog_format = ROW keep their format). "
							 "Make every session log ROW (reconnect them), then copy the tables again: binlog_fdw.stop(), binlog_fdw.reset() and binlog_fdw.snapshot() start the source after it.")));
			return false;		/* not reached */

		default:
			if (bl_event_is_rows(ev->type))
				return put_rows(s, dec, ev, file);
			return true;
	}
}

void
blpg_sink_resume_position(blpg_sink *s, blpg_position *pos)
{
	memset(pos, 0, sizeof(*pos));
	if (s->in_txn || (s->have_start && s->txn_changes > 0))
	{
		strlcpy(pos->file, s->txn_file, sizeof(pos->file));
		pos->pos = s->txn_pos;
		/* plus what is left of a skip this transaction has not reached */
		pos->skip = s->txn_changes + s->skip;
		strlcpy(pos->gtid, s->gtid, sizeof(pos->gtid));
		/* the state before it: its GTID has not joined */
		pos->gtid_state = state_copy(s);
	}
	else if (s->skip > 0)
	{
		/* the transaction the skip belongs to was not reached */
		*pos = s->initial;
		pos->gtid_state = s->initial.gtid_state ? pstrdup(s->initial.gtid_state) : NULL;
	}
	else
	{
		strlcpy(pos->file, s->done_file, sizeof(pos->file));
		pos->pos = s->done_pos;
		pos->skip = 0;
		pos->gtid_state = state_copy(s);
	}
	s->in_txn = false;
	s->have_start = false;
	s->begin_put = false;
	s->txn_changes = 0;
	s->skip = pos->skip;
}

bool
blpg_sink_filtered_tail(blpg_sink *s, blpg_position *done, char *put_file, uint64 *put_pos)
{
	if (s->in_txn || s->have_start ||
		(s->done_pos == s->put_done_pos && strcmp(s->done_file, s->put_done_file) == 0))
		return false;
	memset(done, 0, sizeof(*done));
	strlcpy(done->file, s->done_file, sizeof(done->file));
	done->pos = s->done_pos;
	done->gtid_state = state_copy(s);
	strlcpy(put_file, s->put_done_file, BLPG_FILE_LEN);
	*put_pos = s->put_done_pos;
	return true;
}

void
blpg_sink_filtered_recorded(blpg_sink *s)
{
	strlcpy(s->put_done_file, s->done_file, sizeof(s->put_done_file));
	s->put_done_pos = s->done_pos;
}

void
blpg_sink_set_history(blpg_sink *s, blpg_history *h)
{
	s->history = h;
}

bool
blpg_sink_take_ddl_seen(blpg_sink *s)
{
	bool		seen = s->ddl_seen;

	s->ddl_seen = false;
	return seen;
}
