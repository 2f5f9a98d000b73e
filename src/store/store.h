/*
 * store.h
 *	  The store: what a source's changes are while PostgreSQL holds them.
 *	  One slot per started source in shared memory, each with its ring of
 *	  change entries and Canal's put/get/ack sequences; the sink that turns
 *	  decoded binlog events into entries (the producer side); batches,
 *	  acknowledgements and rollbacks (the consumer side); entries read back
 *	  as SQL values or JSON lines; and the durable position of each source
 *	  (binlog_fdw.source_state), written in the consumer's transaction.
 *
 * Files: slots.c (shared memory, slot allocation), ring.c (entries),
 * sink.c and filter.c (producer), batches.c (consumer protocol),
 * changes.c (entries as values), state.c (durable position), ddl_parse.c
 * (the DDL parser apply and the schema history share), history.c (table
 * definitions by binlog position).
 * Users: src/worker (produces), src/sql and src/apply (consume).
 *
 * Sizing: binlog_fdw.max_sources slots of binlog_fdw.ring_size bytes of
 * ring each, allocated at server start (shared_preload_libraries).
 *
 * Locking (the only shared state of the store; nothing else is shared):
 *   blpg_shared->lock (LWLock) protects slot allocation (in_use, serverid,
 *	 dboid, token), next_token, launcher_latch and 0.1's autostart file
 *	 (worker/legacy.c).
 *   slot->lock (LWLock) protects every other field of the slot.  The worker
 *	 writes entry bytes into free ring space without the lock (nobody reads
 *	 free space) and publishes them by advancing put_* under the lock.
 *	 Readers copy entries out under the lock held in shared mode, so that an
 *	 ack (exclusive) cannot free bytes that are being copied.  Entries of a
 *	 batch a backend holds stay in place until it is acknowledged or
 *	 released, so that backend may read them without the lock.
 *   slot->put_cv is broadcast after a put (consumers waiting for changes);
 *	 slot->space_cv after acks, rollbacks and stop requests (the worker
 *	 waiting for space).
 */
#ifndef BLPG_STORE_H
#define BLPG_STORE_H

#include "postgres.h"

#include <signal.h>

#include "base/base.h"

#include "bl_decoder.h"

#include "datatype/timestamp.h"
#include "foreign/foreign.h"
#include "lib/stringinfo.h"
#include "storage/condition_variable.h"
#include "storage/latch.h"
#include "storage/lwlock.h"

/* ---- slots in shared memory (slots.c) ---- */

#define BLPG_FILE_LEN		BL_FILE_NAME_MAX	/* binlog file names: a longer one
												 * is an error (bl_decoder.h) */
#define BLPG_GTID_LEN		256		/* one GTID: "uuid:tag:n" is at most 90
									 * bytes, "d-s-n" 42 */
#define BLPG_ERROR_LEN		1024
#define BLPG_CONFLICT_LEN	8192	/* a stopped conflict, as JSON (images
									 * left out when longer) */
#define BLPG_MAX_BATCHES	1024	/* outstanding (un-acked) batches */

typedef enum blpg_worker_state
{
	BLPG_STATE_STOPPED = 0,
	BLPG_STATE_STARTING,
	BLPG_STATE_CONNECTING,
	BLPG_STATE_STREAMING,
	BLPG_STATE_RING_FULL,		/* backpressure: waiting for acks */
	BLPG_STATE_RECONNECTING,	/* waiting before the next attempt */
	BLPG_STATE_ERROR			/* a non-retryable error; retried slowly */
} blpg_worker_state;

extern const char *blpg_state_name(blpg_worker_state state);

/*
 * A source position: where a transaction starts, plus changes to skip, and
 * the GTID state there.  The state has no size limit (a MariaDB state of
 * thousands of domains, a MySQL set of hundreds of kilobytes), so it is
 * palloc'd text: NULL when not known, "" when known and empty.  Positions
 * are backend-local; a slot shows only the bounded part (blpg_slot_position):
 * the whole durable state is in binlog_fdw.source_state.
 */
typedef struct blpg_position
{
	char		file[BLPG_FILE_LEN];
	uint64		pos;
	uint64		skip;			/* changes of the transaction at pos
								 * already acknowledged */
	char		gtid[BLPG_GTID_LEN];	/* last transaction's GTID (display) */
	char	   *gtid_state;		/* MariaDB domain-server-seq list or MySQL
								 * GTID set; palloc'd, NULL: not known */
} blpg_position;

/* What a slot shows of a position (shared memory: no GTID state). */
typedef struct blpg_slot_position
{
	char		file[BLPG_FILE_LEN];
	uint64		pos;
	uint64		skip;
	char		gtid[BLPG_GTID_LEN];
} blpg_slot_position;

/* The slot's part of a position. */
extern void blpg_position_to_slot(const blpg_position *pos, blpg_slot_position *out);

/* Is a GTID state known and not empty? */
static inline bool
blpg_position_has_state(const blpg_position *pos)
{
	return pos->gtid_state != NULL && pos->gtid_state[0] != '\0';
}

/*
 * Copy a bounded name (binlog file, GTID) into a position's field; an error
 * naming what it is when it does not fit (never a cut name).
 */
extern void blpg_copy_bounded(char *dst, size_t dstlen, const char *src, size_t len,
							  const char *what);

typedef struct blpg_batch
{
	uint64		batch_id;
	uint64		first_seq;
	uint64		last_seq;
	int			owner_pid;
	bool		ack_pending;	/* acknowledged in an open transaction */
} blpg_batch;

typedef struct blpg_slot
{
	/* identity (blpg_shared->lock) */
	bool		in_use;
	Oid			dboid;
	Oid			serverid;
	Oid			userid;			/* role that started it (user mapping) */
	char		server_name[NAMEDATALEN];

	LWLock		lock;
	ConditionVariable put_cv;
	ConditionVariable space_cv;

	/* what should run (set when start/stop commit, see worker/control.c) */
	bool		wanted;			/* a worker should run: started, not stopped */
	uint64		token;			/* this allocation of the slot: a worker
								 * launched for an earlier one exits */
	TimestampTz launched_at;	/* last launch of the worker */
	TimestampTz apply_launched_at;	/* ... and of the apply worker */

	/* worker */
	int			worker_pid;
	blpg_worker_state state;
	bool		stop_requested;	/* the worker (and apply worker) must exit;
								 * with wanted: restart */
	bool		rewind_requested;	/* restart streaming at the acked position */
	TimestampTz connected_since;
	char		source_version[64];
	char		binlog_format[16];
	char		binlog_row_image[16];
	char		source_notice[BLPG_ERROR_LEN];	/* row image not FULL, ... */
	char		source_host[BLPG_HOST_LEN];	/* streamed from (or tried) */
	/* the source's binlog retention, checked by the worker now and then */
	char		source_oldest_file[BLPG_FILE_LEN];	/* "": not known */
	int32		retention_files;	/* files the source keeps before the
									 * acked one; -1: that one is purged;
									 * -2: not known */
	int64		binlog_expire_seconds;	/* 0: until PURGE; -1: not known */

	/* the ring: byte offsets are logical and only grow */
	char	   *ring;			/* this backend's address of the ring */
	uint64		ring_size;
	uint32		generation;		/* bumped when the ring is reset */
	uint64		put_off;		/* end of the last published entry */
	uint64		ack_off;		/* first entry with un-acked changes */
	uint64		get_off;		/* first entry with changes not handed out */
	uint64		put_seq;		/* last sequence published */
	uint64		get_seq;		/* last sequence handed out by get() */
	uint64		ack_seq;		/* last sequence acknowledged */
	uint64		ack_reserved_seq;	/* acks waiting for their transaction
									 * to commit */
	uint64		entries;		/* entries between ack_off and put_off */

	/* outstanding batches, oldest first */
	blpg_batch	batches[BLPG_MAX_BATCHES];
	int			nbatches;
	uint64		next_batch_id;

	/* positions (their GTID states: binlog_fdw.source_state) */
	blpg_slot_position read;	/* after the last change put in the ring */
	blpg_slot_position acked;	/* durable: where a restart resumes */

	/* statistics */
	uint64		changes_total;
	uint64		transactions_total;
	uint64		bytes_read;
	double		changes_per_sec;
	TimestampTz last_event_ts;	/* header timestamp of the last event read */
	TimestampTz last_heartbeat;
	TimestampTz last_activity;	/* local time of the last event or
								 * heartbeat */
	char		last_error[BLPG_ERROR_LEN];	/* the last error, kept after
											 * recovery */
	TimestampTz last_error_time;
	TimestampTz last_error_cleared; /* streaming again since; 0 while the
									 * error holds */
	uint64		peak_worker_rss_kb;

	/* continuous apply (src/apply/continuous.c) */
	bool		continuous;		/* an apply worker should run */
	int			apply_pid;
	uint64		applied_transactions;
	uint64		applied_rows;
	double		apply_lag_seconds;	/* commit in MySQL to commit here */
	TimestampTz apply_last_commit;
	char		apply_error[BLPG_ERROR_LEN];	/* kept after recovery */
	TimestampTz apply_error_time;
	TimestampTz apply_error_cleared;	/* applying again since; 0 while the
										 * error holds */
	/* parallel apply (src/apply/parallel.c): its coordinator writes these */
	int			par_workers;	/* apply workers running (0: serial) */
	uint64		par_dispatched; /* transactions handed to apply workers */
	int			par_max_in_flight;	/* most applying at once */
	uint64		par_key_waits;	/* dispatches that waited for a key */
	uint64		par_barriers;	/* transactions applied serially */
	uint64		par_hint_releases;	/* dispatched beside others on the
									 * source's hint alone (parallel.c) */

	/* the conflict stopping apply (src/apply/conflict.c), a JSON object */
	char		stopped_conflict[BLPG_CONFLICT_LEN];
	char		stopped_file[BLPG_FILE_LEN];
	uint64		stopped_pos;
	uint64		stopped_seq;
	uint64		stopped_attempts;

	/*
	 * cumulative counters for binlog_fdw.source_stats (src/apply/stats.c):
	 * the worker's and failed applies; flushed_*: what the tables hold
	 */
	uint64		apply_errors;	/* failed applies */
	uint64		reconnects;		/* streaming again after the first time */
	bool		streamed_once;
	uint64		ring_wait_us;	/* the worker waited for ring space */
	uint64		flushed_bytes;
	uint64		flushed_reconnects;
	uint64		flushed_ring_wait_us;
	uint64		flushed_errors;
} blpg_slot;

typedef struct blpg_shared_state
{
	LWLock		lock;
	int			tranche_id;
	int			max_sources;
	uint64		ring_size;
	uint64		next_token;		/* slot tokens (lock) */
	Latch	   *launcher_latch; /* the launcher's, while it runs (lock) */
	blpg_slot	slots[FLEXIBLE_ARRAY_MEMBER];
} blpg_shared_state;

extern blpg_shared_state *blpg_shared;
extern int	blpg_max_sources;
extern int	blpg_ring_size_kb;


extern void blpg_shmem_request(void);
extern void blpg_shmem_startup(void);
extern void blpg_require_shmem(void);
extern void blpg_worker_require_shmem(const char *what);

/*
 * Slot of a server (NULL if it has none), also while it is being stopped
 * (wanted false); caller holds no lock.
 */
extern blpg_slot *blpg_find_slot(Oid dboid, Oid serverid);
/*
 * Slot of a server, taking a free one if needed; if none is free an error,
 * or with noerror NULL.  A new slot has a new token and wanted false.
 */
extern blpg_slot *blpg_acquire_slot(Oid dboid, Oid serverid, const char *name,
									bool noerror);
extern void blpg_release_slot(blpg_slot *slot);
/*
 * Release the slot if nothing runs or is launched for it and nothing
 * should (wanted false); true if it was released.  Caller holds no lock.
 */
extern bool blpg_release_slot_if_idle(blpg_slot *slot);
/* Free slots (not in use, or being stopped: soon free). */
extern int	blpg_free_slots(void);
/* Wake the launcher (it relaunches, releases and supervises). */
extern void blpg_wake_launcher(void);

/* ---- the ring of entries (ring.c) ---- */

/*
 * An entry holds one or more changes with consecutive sequence numbers:
 *   BEGIN    one change: a transaction starts (GTID, commit time)
 *   ROWS     the rows of one rows event: a canonical TABLE_MAP event and a
 *            canonical rows event (bl_serialize.c), decoded by consumers;
 *            rows_skip leading rows were already acknowledged
 *   COMMIT   one change: the transaction ends (XID, end position)
 *   DDL      one change: a statement (CREATE/ALTER/...), its own transaction
 * Entries are 8-byte aligned; a WRAP entry fills the end of the ring when
 * the next entry does not fit there.
 *
 * Every entry knows where its transaction starts (txn_file/txn_pos) and the
 * index of its first change inside the transaction, so acknowledging up to
 * any change gives an exact restart position: (txn start, changes to skip),
 * or the end position after a COMMIT or DDL.
 */

typedef enum blpg_entry_kind
{
	BLPG_ENTRY_BEGIN = 1,
	BLPG_ENTRY_ROWS = 2,
	BLPG_ENTRY_COMMIT = 3,
	BLPG_ENTRY_DDL = 4,
	BLPG_ENTRY_WRAP = 0xFFFF
} blpg_entry_kind;

typedef struct blpg_entry
{
	uint32		total_len;		/* multiple of 8, header included */
	uint16		kind;
	uint16		op;				/* ROWS: bl_op */
	uint64		seq_first;
	uint32		nchanges;
	uint32		rows_skip;		/* ROWS: leading rows not delivered */
	uint32		server_id;
	uint32		event_ts;		/* header timestamp */
	uint64		event_pos;
	uint64		event_next_pos;
	int64		commit_ts_us;	/* of the transaction, 0 if unknown */
	uint64		xid;			/* COMMIT */
	uint64		txn_pos;
	uint64		txn_change_first;	/* index in the transaction of the first
									 * change of this entry */
	uint16		file_len;
	uint16		txn_file_len;
	uint16		gtid_len;
	uint16		schema_len;
	uint16		table_len;
	uint16		ddl_collation;	/* DDL: charset of the statement text */
	uint32		gtid_state_len; /* COMMIT/DDL: state after; else before;
								 * with gtid_state_known */
	uint16		gtid_state_known;	/* 0: the GTID state is not known */
	uint16		ddl_server_collation;	/* DDL: the session's collation_server */
	uint32		payload_len;	/* ROWS: table map + rows event; DDL: text */
	uint32		tablemap_len;	/* ROWS */
	uint32		hint_kind;		/* the transaction's dependency hint from its
								 * GTID event (bl_gtid_hint): */
	uint64		hint_a;			/* MariaDB commit id / MySQL last_committed */
	uint64		hint_b;			/* MySQL sequence_number */
	/* then: file, txn_file, gtid, gtid_state, schema, table, payload */
} blpg_entry;

#define BLPG_ENTRY_ALIGN(n)	(((n) + 7) & ~((uint64) 7))

/* Accessors of the variable part. */
typedef struct blpg_entry_view
{
	const blpg_entry *e;
	const char *file;
	const char *txn_file;
	const char *gtid;
	const char *gtid_state;
	const char *schema;
	const char *table;
	const uint8 *payload;
} blpg_entry_view;

extern void blpg_entry_view_init(blpg_entry_view *v, const blpg_entry *e);

/* Reset: empty ring, new generation, outstanding batches invalidated. */
extern void blpg_ring_reset(blpg_slot *slot);

/*
 * Worker: put a complete entry (len bytes, total_len set).  Waits while the
 * ring is full; returns false if a stop or rewind was requested meanwhile.
 * Assigns the sequence numbers.
 */
extern bool blpg_ring_put(blpg_slot *slot, blpg_entry *entry);

/* set by the worker's SIGTERM handler: a put waiting for space gives up */
extern volatile sig_atomic_t blpg_ring_put_cancel;

/* Largest entry a ring can take. */
extern uint64 blpg_ring_max_entry(blpg_slot *slot);

/*
 * Copy the entries that hold changes first_seq..last_seq (under the slot
 * lock, held by the caller in any mode) into out, as a sequence of
 * entries.  Returns the number of entries copied.
 */
extern int	blpg_ring_copy(blpg_slot *slot, uint64 from_off, uint64 first_seq,
						   uint64 last_seq, StringInfo out);

/*
 * The entry at a logical offset.  Entries of a batch this backend holds
 * stay in place until it is acknowledged or released, so they can be read
 * without the lock.
 */
extern const blpg_entry *blpg_ring_entry(blpg_slot *slot, uint64 off);

/* Offset of the entry holding seq, scanning from `from` (lock held). */
extern uint64 blpg_ring_find(blpg_slot *slot, uint64 from, uint64 seq);

/* Release entries up to and including change seq (lock held exclusive). */
extern void blpg_ring_release(blpg_slot *slot, uint64 seq);

/* The restart position after change seq (lock held): false if not in ring. */
extern bool blpg_ring_position_after(blpg_slot *slot, uint64 seq,
									 blpg_position *pos);

/* ---- the durable position (state.c) ---- */

/*
 * binlog_fdw.source_state: written in the same transaction as the
 * acknowledgement (or the applied rows), read by the worker when it starts.
 * Rows are keyed by the server's name; the functions take the server's OID,
 * lock the server against RENAME and DROP for the rest of the transaction
 * and use its current name (see state.c).
 */

/*
 * Read a server's position; false if none was ever recorded (then, and only
 * then, the "start" option applies).  An error if the server has no row but
 * an orphaned row has its OID (a rename the extension did not see).
 */
extern bool blpg_state_load(Oid serverid, blpg_position *pos);

/* The recorded GTID state of a source by name, for display (NULL: none). */
extern char *blpg_state_gtid_state(const char *server_name);

/* Record a server's position in the current transaction. */
extern void blpg_state_save(Oid serverid, const blpg_position *pos);

/* Forget a server's position (the next start uses its "start" option). */
extern void blpg_state_forget(Oid serverid);

/*
 * The tables a reload after a lost position (server option lost_position
 * 'reload', src/apply/reload.c) still has to copy: source_state's
 * reload_tables, "db.table" Strings (NIL: none); set in the caller's
 * transaction (NIL clears it).
 */
extern List *blpg_state_reload_tables(Oid serverid);
extern void blpg_state_set_reload_tables(Oid serverid, List *tables);

/* A row of source_state under no binlog_fdw server's name. */
typedef struct blpg_orphan
{
	char	   *server_name;
	Oid			srvid;			/* of the server that last wrote it */
	blpg_position pos;
} blpg_orphan;

/* The orphaned rows of this database (a List of blpg_orphan). */
extern List *blpg_state_orphans(void);

/* ---- include/exclude filter (filter.c) ---- */

typedef struct blpg_filter blpg_filter;

/* NULL patterns mean "everything" / "nothing". */
extern blpg_filter *blpg_filter_create(const char *include, const char *exclude);
extern bool blpg_filter_match(blpg_filter *f, const char *schema, size_t schema_len,
							  const char *table, size_t table_len);

/*
 * Per source and per table filters (binlog_fdw.filters, filter.c): the
 * rule of a table is that of "db.table" with the fields it leaves NULL
 * taken from that of "*" (every table of the source).
 */
#define BLPG_FILTER_OP_INSERT	0x01
#define BLPG_FILTER_OP_UPDATE	0x02
#define BLPG_FILTER_OP_DELETE	0x04
#define BLPG_FILTER_OP_TRUNCATE	0x08
#define BLPG_FILTER_OP_DDL		0x10
#define BLPG_FILTER_OP_ALL		0x1f

typedef enum blpg_mask_kind
{
	BLPG_MASK_NULL,				/* the value becomes NULL */
	BLPG_MASK_VALUE,			/* a fixed text */
	BLPG_MASK_SHA256			/* the hex SHA-256 of the value's bytes */
} blpg_mask_kind;

typedef struct blpg_filter_mask
{
	char	   *column;
	blpg_mask_kind kind;
	char	   *value;			/* BLPG_MASK_VALUE */
} blpg_filter_mask;

typedef struct blpg_filter_rule
{
	int			ops;			/* BLPG_FILTER_OP_* kept; -1: not given */
	List	   *columns;		/* names kept (char *), NIL: not given */
	List	   *exclude;		/* names left out, NIL: not given */
	List	   *masks;			/* blpg_filter_mask, NIL: not given */
	char	   *row_filter;		/* NULL: none */
	const char *source;			/* "db.table" or "*" */
	bool		own_columns;	/* columns / exclude are the table's own */
	bool		own_masks;		/* masks are the table's own */
} blpg_filter_rule;

/*
 * Read the source's rules into f (in the current transaction).  With start
 * (the worker): a set that differs from the last one recorded goes into
 * binlog_fdw.filter_history with that position (NULL file: the source's
 * start option).
 */
extern void blpg_filter_load_rules(blpg_filter *f, const char *server_name,
								   bool record, const blpg_position *start);

/* The merged rule of a table, or NULL if it has none. */
extern const blpg_filter_rule *blpg_filter_rule_of(blpg_filter *f, const char *schema,
												   size_t schema_len, const char *table,
												   size_t table_len);

/* Does the rule keep the operation (BLPG_FILTER_OP_*)?  NULL rule: yes. */
extern bool blpg_filter_keeps_op(const blpg_filter_rule *rule, int op);

/* Is column name left out by the rule's columns / exclude_columns? */
extern bool blpg_filter_drops_column(const blpg_filter_rule *rule, const char *name);

/* ---- the producer: decoded events into entries (sink.c) ---- */

typedef struct blpg_sink blpg_sink;

/*
 * file/pos: where streaming starts.  skip: changes of the first
 * transaction to leave out (they were
 * acknowledged before a restart).  gtid_state: MariaDB GTID state at the
 * start position, if known.
 */
extern blpg_sink *blpg_sink_create(blpg_slot *slot, blpg_filter *filter,
								   const char *file, uint64 pos, uint64 skip,
								   const char *gtid_state);

/*
 * Resuming by GTID state: the skip belongs to the transaction of this GTID
 * (MariaDB "d-s-n", the first of its domain after the state; MySQL
 * "uuid:n" / "uuid:tag:n", the first not in the set); other transactions
 * before it (other domains', or MySQL ones a replica committed in another
 * order) are passed over, and
 * blpg_sink_restart_wanted() turns true once it is complete (a new session
 * at the position after it gets them).  While blpg_sink_skip_pending(),
 * that transaction was not seen yet.
 */
extern void blpg_sink_set_skip_gtid(blpg_sink *sink, const char *gtid);
extern bool blpg_sink_skip_pending(blpg_sink *sink);
extern bool blpg_sink_restart_wanted(blpg_sink *sink);

/* Process one decoded event; false if a stop or rewind interrupted a put. */
extern bool blpg_sink_event(blpg_sink *sink, bl_decoder *dec, bl_event *ev);

/*
 * Where to resume after a lost connection: the start of the open
 * transaction and the changes of it already put (or skipped), the position
 * after the last complete one, or where the session started if the
 * transaction its skip belongs to was not reached.  The sink's transaction
 * state is reset.
 */
extern void blpg_sink_resume_position(blpg_sink *sink, blpg_position *pos);

/* Schema changes seen (DDL): callers invalidate their schema caches. */
extern bool blpg_sink_take_ddl_seen(blpg_sink *sink);

/*
 * After transactions that put nothing (all filtered out), with none open:
 * true, the position after them in *done, and where the last transaction
 * that put changes ended (the durable position once everything put is
 * acknowledged).  blpg_sink_filtered_recorded: *done is now durable.
 */
extern bool blpg_sink_filtered_tail(blpg_sink *s, blpg_position *done,
									char *put_file, uint64 *put_pos);
extern void blpg_sink_filtered_recorded(blpg_sink *s);

/* ---- the consumer protocol: batches, ack, rollback (batches.c) ---- */

/* The slot of a started source, after permission checks. */
extern blpg_slot *blpg_consumer_slot(const char *name, ForeignServer **server_out);

/*
 * For get() and its variants: take the next batch into buf (a copy of its
 * entries), waiting up to timeout_ms for one; returns its id (0: none came)
 * and its first and last sequences.
 */
extern uint64 blpg_consume_get(blpg_slot *slot, int max_changes, int timeout_ms,
							   StringInfo buf, uint64 *first, uint64 *last);

/*
 * For ack(): acknowledge the oldest outstanding batch in the current
 * transaction (an error names an id that is unknown, being acknowledged, or
 * not the oldest); returns its last sequence.
 */
extern uint64 blpg_consume_ack_next(blpg_slot *slot, ForeignServer *server,
									uint64 batch_id);

/*
 * For rollback(): deliver again batch_id and the batches after it, or (all)
 * every batch not being acknowledged; returns how many batches.
 */
extern int	blpg_consume_rollback(blpg_slot *slot, bool all, uint64 batch_id);

/*
 * Shorten the newest batch to end at new_last (the rest comes with the next
 * take; before its first change: the batch is dropped).  false if it is not
 * the newest (another consumer took one since) or not longer than that.
 */
extern bool blpg_consume_shorten(blpg_slot *slot, uint64 batch_id, uint64 new_last);

/*
 * For the apply path: take the next changes as a batch of this backend.
 * buf: a copy of the entries, or NULL to read them in place from
 * *start_off (blpg_ring_entry) until the batch is acknowledged or
 * released.  first_boundary: end at the first transaction boundary within
 * max_changes rather than the last.
 */
extern bool blpg_consume_take(blpg_slot *slot, int max_changes, bool first_boundary,
							  StringInfo buf,
							  uint64 *first, uint64 *last, uint64 *batch_id,
							  uint64 *start_off);
/* Deliver again this backend's batches that are not being acknowledged. */
extern void blpg_consume_rollback_own(blpg_slot *slot);
/* blpg_consume_shorten, or an error. */
extern void blpg_consume_trim(blpg_slot *slot, uint64 batch_id, uint64 new_last);
/* Release a batch's ring space before the transaction ends. */
extern void blpg_consume_release_now(blpg_slot *slot, uint64 batch_id);
/*
 * Parallel apply: another backend applied batch batch_id (of this backend)
 * and committed its position; release its ring space now (the oldest
 * batch; no transaction of ours is involved).
 */
extern void blpg_consume_applied_elsewhere(blpg_slot *slot, uint64 batch_id);
/*
 * Acknowledge a batch of this backend in the current transaction; pos_out
 * (may be NULL) gets the new position without its GTID state (NULL).
 */
extern void blpg_consume_ack(blpg_slot *slot, Oid serverid, const char *server_name,
							 uint64 batch_id, blpg_position *pos_out);

/* ---- entries as SQL values and JSON lines (changes.c) ---- */

typedef enum blpg_change_col
{
	BLPG_COL_SEQ,
	BLPG_COL_FILE,
	BLPG_COL_POS,
	BLPG_COL_NEXT_POS,
	BLPG_COL_GTID,
	BLPG_COL_XID,
	BLPG_COL_COMMIT_TIME,
	BLPG_COL_EVENT_TIME,
	BLPG_COL_SERVER_ID,
	BLPG_COL_SCHEMA,
	BLPG_COL_TABLE,
	BLPG_COL_OP,
	BLPG_COL_PK_COLUMNS,
	BLPG_COL_PRIMARY_KEY,
	BLPG_COL_BEFORE,
	BLPG_COL_AFTER,
	BLPG_COL_DDL,
	BLPG_NCOLS
} blpg_change_col;

/* Column names as a foreign table over a source uses them. */
extern const char *const blpg_change_col_names[BLPG_NCOLS];
extern int	blpg_change_col_by_name(const char *name);

/* Entry-level filter, checked before any row is decoded. */
typedef struct blpg_change_filter
{
	char	   *schema;			/* NULL = any */
	char	   *table;
	char	   *op;
	uint64		min_seq;		/* 0 = any */
} blpg_change_filter;

typedef struct blpg_change_iter blpg_change_iter;

/*
 * Iterate the changes first_seq..last_seq of the entries copied into buf
 * (blpg_ring_copy).  want[col] says which columns to compute (NULL: all).
 */
extern blpg_change_iter *blpg_change_iter_create(StringInfo entries,
												 uint64 first_seq, uint64 last_seq,
												 const bool *want,
												 const blpg_change_filter *filter);

/*
 * Images and primary keys as json text as the decoder writes it (type json,
 * get_json()) instead of jsonb values (the default).
 */
extern void blpg_change_iter_set_json_text(blpg_change_iter *it, bool json_text);

/* Next change into values/nulls (BLPG_NCOLS long); false at the end. */
extern bool blpg_change_iter_next(blpg_change_iter *it, Datum *values, bool *nulls);

/*
 * Next change as one line of JSON appended to out (an object with the keys
 * of the columns, nulls left out, and a newline); *boundary: the change ends
 * a transaction (a commit or a DDL statement).  false at the end.
 */
extern bool blpg_change_iter_next_jsonl(blpg_change_iter *it, bl_buf *out, bool *boundary);

extern void blpg_change_iter_free(blpg_change_iter *it);

/*
 * A row image of table t (a decoded table of dec) as a jsonb datum, the
 * same as jsonb_in of bl_row_to_json's text, built without that text;
 * before: the before image for partial JSON updates, or NULL.  The key
 * order of the tables of the canonical decoder is cached.
 */
extern Datum blpg_image_jsonb(bl_decoder *dec, const bl_table *t, const bl_row *row,
							  const bl_row *before);

/* The primary key of a row as jsonb ({"col": value, ...}, absent = null). */
extern Datum blpg_key_jsonb(bl_decoder *dec, const bl_table *t, const bl_row *row);

/* UTF-8 text as a text datum in the server encoding. */
extern Datum blpg_text_utf8(const char *s, size_t len);

/* This backend's decoder of canonical events (table maps stay cached). */
extern bl_decoder *blpg_canonical_decoder(void);

/* The op name of an entry (ROWS: insert/update/delete). */
extern const char *blpg_entry_op_name(const blpg_entry *e);

/* ---- MySQL DDL statements, parsed (ddl_parse.c) ---- */

/*
 * The one parser of the source's DDL: apply translates its result into
 * PostgreSQL (src/apply/ddl.c), the schema history advances table
 * definitions with it (history.c).  A statement is parsed as far as it is
 * understood; "unsupported" says what was not (NULL: all of it was).
 * Everything is palloc'd in the current memory context.
 */
typedef enum blpg_ddl_kind
{
	BLPG_DDL_OTHER,				/* not about table columns or databases */
	BLPG_DDL_CREATE_TABLE,
	BLPG_DDL_DROP_TABLE,
	BLPG_DDL_RENAME_TABLE,
	BLPG_DDL_TRUNCATE,
	BLPG_DDL_ALTER_TABLE,
	BLPG_DDL_CREATE_DATABASE,
	BLPG_DDL_DROP_DATABASE,
	BLPG_DDL_ALTER_DATABASE,
	BLPG_DDL_DML				/* a statement that changes rows: the session
								 * logged it as a statement, its rows are in
								 * no rows event */
} blpg_ddl_kind;

typedef enum blpg_ddl_default
{
	BLPG_DEF_NONE,				/* no DEFAULT clause */
	BLPG_DEF_NULL,
	BLPG_DEF_STRING,			/* default_text: the unquoted string */
	BLPG_DEF_NUMBER,
	BLPG_DEF_NOW,				/* CURRENT_TIMESTAMP, NOW() */
	BLPG_DEF_EXPR				/* an expression in parentheses */
} blpg_ddl_default;

typedef struct blpg_ddl_column
{
	char	   *name;
	char	   *type;			/* as written: "int(11) unsigned" */
	char	   *data_type;		/* lowercase base type, synonyms resolved */
	bool		is_unsigned;
	List	   *members;		/* ENUM/SET: the members (char *) */
	char	   *charset;		/* CHARACTER SET (or COLLATE's), or NULL */
	bool		notnull;
	bool		pk;				/* inline PRIMARY KEY */
	bool		generated;		/* AS (expr): in the rows, not translated by apply */
	blpg_ddl_default def;
	char	   *default_text;
} blpg_ddl_column;

typedef enum blpg_ddl_clause_kind
{
	BLPG_ALTER_ADD_COLUMN,		/* column; first/after */
	BLPG_ALTER_DROP_COLUMN,		/* name */
	BLPG_ALTER_MODIFY_COLUMN,	/* name (old), column (new); first/after */
	BLPG_ALTER_RENAME_COLUMN,	/* name, new_name */
	BLPG_ALTER_SET_DEFAULT,		/* name, column->def/default_text */
	BLPG_ALTER_DROP_DEFAULT,	/* name */
	BLPG_ALTER_RENAME_TABLE,	/* new_db, new_name */
	BLPG_ALTER_CHARSET,			/* table default charset: new_name */
	BLPG_ALTER_ADD_PRIMARY_KEY, /* key_columns */
	BLPG_ALTER_DROP_PRIMARY_KEY,
	BLPG_ALTER_IGNORED,			/* indexes, options, harmless partitioning */
	BLPG_ALTER_UNSUPPORTED		/* unsupported says why */
} blpg_ddl_clause_kind;

typedef struct blpg_ddl_clause
{
	blpg_ddl_clause_kind kind;
	char	   *name;
	char	   *new_name;
	char	   *new_db;
	blpg_ddl_column *column;
	bool		if_exists;		/* DROP COLUMN IF EXISTS, ADD ... IF NOT EXISTS */
	bool		first;			/* FIRST */
	char	   *after;			/* AFTER col */
	List	   *key_columns;	/* ADD PRIMARY KEY: its columns (char *) */
	const char *unsupported;
} blpg_ddl_clause;

typedef struct blpg_ddl_table_ref
{
	char	   *db;
	char	   *name;
	char	   *new_db;			/* RENAME TABLE: the new name */
	char	   *new_name;
} blpg_ddl_table_ref;

typedef struct blpg_ddl
{
	blpg_ddl_kind kind;
	char	   *db;				/* the table's database, or the database */
	char	   *name;			/* the table (NULL: none could be read) */
	bool		if_not_exists;
	bool		if_exists;
	bool		temporary;
	List	   *columns;		/* CREATE TABLE: blpg_ddl_column */
	List	   *pk;				/* CREATE TABLE: key columns (char *) */
	char	   *charset;		/* CREATE TABLE/DATABASE, ALTER DATABASE: default charset */
	bool		like_or_select;	/* CREATE TABLE ... LIKE / ... SELECT */
	List	   *tables;			/* DROP, RENAME TABLE: blpg_ddl_table_ref */
	List	   *clauses;		/* ALTER TABLE: blpg_ddl_clause */
	const char *unsupported;	/* the statement could not be read: why */
	bool		fk_action;		/* CREATE/ALTER TABLE: a foreign key whose ON
								 * DELETE/UPDATE action changes rows (MySQL
								 * logs none of those changes) */
} blpg_ddl;

/* Parse a statement (UTF-8 text); db is the statement's database. */
extern blpg_ddl *blpg_ddl_parse(const char *sql, const char *db);

/* The members of "enum('a','b')" (char *), NIL if none. */
extern List *blpg_ddl_type_members(const char *type);

/* ---- the schema history (history.c) ---- */

/*
 * Table definitions by binlog position (binlog_fdw.schema_history): the
 * worker's copy is the decoder's schema provider; consumers write the
 * rows of the DDL they acknowledge.  Functions that read or write the
 * table run inside a transaction.
 */
typedef struct blpg_history blpg_history;

/* binlog_fdw.schema_history_retention: seconds a superseded row is kept */
extern int	blpg_schema_history_retention;

extern blpg_history *blpg_history_create(const char *server_name, blpg_filter *filter,
										 MemoryContext parent);
/* The server's name now (a RENAME renamed its rows). */
extern void blpg_history_set_name(blpg_history *h, const char *server_name);
/*
 * Before writing seeds: lock the server against RENAME and DROP until the
 * transaction ends and follow its name now (rows are keyed by it).
 */
extern void blpg_history_lock_server(blpg_history *h, Oid serverid);
/* The definitions at the durable position (the latest rows). */
extern void blpg_history_load(blpg_history *h);
extern bool blpg_history_knows(blpg_history *h, const char *schema, const char *table);
extern int	blpg_history_ntables(blpg_history *h);

/*
 * A definition known at position at (information_schema when nothing
 * changed the table since; table "": a database's default charset), or
 * unknown (why): kept and written as a row.
 */
extern void blpg_history_seed(blpg_history *h, const char *schema, const char *table,
							  const bl_schema_table *def, const char *charset,
							  const char *unknown, const blpg_position *at);
/* A DDL statement the sink put into the ring (UTF-8). */
extern void blpg_history_advance(blpg_history *h, const char *db, const char *sql,
								 uint16 server_collation);

/*
 * A statement between a start position and the end of the binlog: true
 * (*table "schema.table") if it changes a captured table the history
 * does not know, other than by creating it or dropping it whole.  *dropped
 * gets the tables ("schema.table") it drops that the history does not
 * know: their definition before it is unknown, after it they are gone
 * until a CREATE TABLE the history follows.
 */
extern bool blpg_history_scan_statement(blpg_history *h, const char *db, const char *sql,
										char **table, List **dropped);
/* bl_schema_lookup_fn over the worker's copy. */
extern const bl_schema_table *blpg_history_lookup(void *h, const char *schema,
												  const char *table);

/* Consumers: the rows of the DDL entries of changes first_seq..last_seq. */
extern void blpg_history_acked(blpg_slot *slot, Oid serverid, uint64 first_seq,
							   uint64 last_seq);
/* A DDL entry's database and statement (UTF-8 text in the server encoding). */
extern void blpg_entry_ddl_text(const blpg_entry_view *v, char **db, char **sql);
/* The sink advances h with the DDL it puts. */
extern void blpg_sink_set_history(blpg_sink *sink, blpg_history *h);

/*
 * The worker's counters into binlog_fdw.stats_source at its clean exit
 * (worker_stats.c): its own transaction; a failure is logged.
 */
extern void blpg_worker_stats_flush(blpg_slot *slot, Oid serverid, const char *server);

#endif							/* BLPG_STORE_H */
