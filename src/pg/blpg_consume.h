/*
 * blpg_consume.h
 *	  The consumer side of a source's ring for code that consumes changes
 *	  itself (the apply path) rather than through get()/ack().
 */
#ifndef BLPG_CONSUME_H
#define BLPG_CONSUME_H

#include "blpg_shmem.h"

#include "foreign/foreign.h"
#include "lib/stringinfo.h"

/* binlog_fdw.jsonl_max_bytes (kB): the longest text of a get_jsonl() batch */
extern int	blpg_jsonl_max_bytes;

/* The slot of a started source, after permission checks. */
extern blpg_slot *blpg_consumer_slot(const char *name, ForeignServer **server_out);

/*
 * Take the next changes as a batch of this backend.  buf: a copy of the
 * entries, or NULL to read them in place from *start_off (blpg_ring_entry)
 * until the batch is acknowledged or released.  first_boundary: end at the
 * first transaction boundary within max_changes rather than the last.
 */
extern bool blpg_consume_take(blpg_slot *slot, int max_changes, bool first_boundary,
							  StringInfo buf,
							  uint64 *first, uint64 *last, uint64 *batch_id,
							  uint64 *start_off);
/* Deliver again this backend's batches that are not being acknowledged. */
extern void blpg_consume_rollback_own(blpg_slot *slot);
/* Shorten the newest batch of this backend to end at new_last. */
extern void blpg_consume_trim(blpg_slot *slot, uint64 batch_id, uint64 new_last);
extern void blpg_consume_release_now(blpg_slot *slot, uint64 batch_id);
extern void blpg_consume_ack(blpg_slot *slot, Oid serverid, const char *server_name,
							 uint64 batch_id, blpg_position *pos_out);

#endif							/* BLPG_CONSUME_H */
