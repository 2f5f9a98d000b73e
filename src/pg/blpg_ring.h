/*
 * blpg_ring.h
 *	  The change store: entries in a source's shared-memory ring.
 *
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
#ifndef BLPG_RING_H
#define BLPG_RING_H

#include <signal.h>

#include "blpg_shmem.h"

#include "lib/stringinfo.h"

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
	uint16		gtid_state_len; /* COMMIT/DDL: state after; else before */
	uint16		schema_len;
	uint16		table_len;
	uint16		ddl_collation;	/* DDL: charset of the statement text */
	uint16		pad;
	uint32		payload_len;	/* ROWS: table map + rows event; DDL: text */
	uint32		tablemap_len;	/* ROWS */
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

/* ---- the ring (ring.c) ---- */

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

#endif							/* BLPG_RING_H */
