/*
 * blpg_sink.h
 *	  The worker's sink: decoded binlog events in, ring entries out.
 *	  Tracks transactions (BEGIN/COMMIT markers, start positions, GTIDs),
 *	  applies the include/exclude filter, skips changes already
 *	  acknowledged when streaming resumes in the middle of a transaction,
 *	  and builds ROWS entries from canonical table map + rows events.
 */
#ifndef BLPG_SINK_H
#define BLPG_SINK_H

#include "blpg_filter.h"
#include "blpg_ring.h"

#include "bl_decoder.h"

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
 * Resuming by MariaDB GTID state: the skip belongs to the transaction of
 * this GTID ("d-s-n"), the first of its domain after the state; other
 * domains' transactions before it are passed over, and
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

#endif							/* BLPG_SINK_H */
