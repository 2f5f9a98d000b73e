/*
 * blpg_state.h
 *	  The durable position of each source: binlog_fdw.source_state, written
 *	  in the same transaction as the acknowledgement (or the applied rows),
 *	  read by the worker when it starts.
 */
#ifndef BLPG_STATE_H
#define BLPG_STATE_H

#include "blpg_shmem.h"

/* Read a server's position; false if none was ever recorded. */
extern bool blpg_state_load(Oid serverid, blpg_position *pos);

/* Record a server's position in the current transaction. */
extern void blpg_state_save(Oid serverid, const char *server_name,
							const blpg_position *pos);

/* Forget a server's position (the next start uses its "start" option). */
extern void blpg_state_forget(Oid serverid);

/*
 * Run fn(arg) in SPI with the privileges of the owner of the extension's
 * tables (source_state, table_mapping): roles granted the functions need no
 * privileges on those tables.  The queries fn runs must be fixed text.
 */
extern void blpg_run_as_owner(void (*fn) (void *), void *arg);

#endif							/* BLPG_STATE_H */
