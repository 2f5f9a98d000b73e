/*
 * blpg_shmem.h
 *	  Shared memory of binlog_fdw: one slot per started source, each with
 *	  its ring of changes, the Canal-style put/get/ack sequences, the
 *	  outstanding batches, positions and status.
 *
 * Sizing: binlog_fdw.max_sources slots of binlog_fdw.ring_size bytes of
 * ring each, allocated at server start (shared_preload_libraries).
 *
 * Locking:
 *   blpg_shared->lock (LWLock) protects slot allocation (in_use, serverid,
 *	 dboid) and the autostart file.
 *   slot->lock (LWLock) protects every other field of the slot.  The worker
 *	 writes entry bytes into free ring space without the lock (nobody reads
 *	 free space) and publishes them by advancing put_* under the lock.
 *	 Readers copy entries out under the lock held in shared mode, so that an
 *	 ack (exclusive) cannot free bytes that are being copied.
 *   slot->put_cv is broadcast after a put (consumers waiting for changes);
 *	 slot->space_cv after acks, rollbacks and stop requests (the worker
 *	 waiting for space).
 */
#ifndef BLPG_SHMEM_H
#define BLPG_SHMEM_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "storage/condition_variable.h"
#include "storage/lwlock.h"

#define BLPG_FILE_LEN		128		/* binlog file names */
#define BLPG_GTID_LEN		256		/* a GTID or a short GTID state */
#define BLPG_ERROR_LEN		1024
#define BLPG_HOST_LEN		272		/* "host:port" of a source server */
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

/* A source position: where a transaction starts, plus changes to skip. */
typedef struct blpg_position
{
	char		file[BLPG_FILE_LEN];
	uint64		pos;
	uint64		skip;			/* changes of the transaction at pos
								 * already acknowledged */
	char		gtid[BLPG_GTID_LEN];	/* last transaction's GTID (display) */
	char		gtid_state[BLPG_GTID_LEN];	/* MariaDB: domain-server-seq list */
} blpg_position;

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

	/* worker */
	int			worker_pid;
	blpg_worker_state state;
	bool		stop_requested;
	bool		rewind_requested;	/* restart streaming at the acked position */
	TimestampTz connected_since;
	char		source_version[64];
	char		binlog_format[16];
	char		source_host[BLPG_HOST_LEN];	/* streamed from (or tried) */

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

	/* positions */
	blpg_position read;			/* after the last change put in the ring */
	blpg_position acked;		/* durable: where a restart resumes */

	/* statistics */
	uint64		changes_total;
	uint64		transactions_total;
	uint64		bytes_read;
	double		changes_per_sec;
	TimestampTz last_event_ts;	/* header timestamp of the last event read */
	TimestampTz last_heartbeat;
	TimestampTz last_activity;	/* local time of the last event or
								 * heartbeat */
	char		last_error[BLPG_ERROR_LEN];
	TimestampTz last_error_time;
	uint64		peak_worker_rss_kb;

	/* continuous apply (apply_worker.c) */
	bool		continuous;		/* an apply worker should run */
	int			apply_pid;
	uint64		applied_transactions;
	uint64		applied_rows;
	double		apply_lag_seconds;	/* commit in MySQL to commit here */
	TimestampTz apply_last_commit;
	char		apply_error[BLPG_ERROR_LEN];
	TimestampTz apply_error_time;
} blpg_slot;

typedef struct blpg_shared_state
{
	LWLock		lock;
	int			tranche_id;
	int			max_sources;
	uint64		ring_size;
	blpg_slot	slots[FLEXIBLE_ARRAY_MEMBER];
} blpg_shared_state;

extern blpg_shared_state *blpg_shared;
extern int	blpg_max_sources;
extern int	blpg_ring_size_kb;

/* Progress of initial loads (snapshot.c), after the rings. */
extern Size blpg_progress_size(void);
extern void blpg_progress_attach(char *area, bool init);

extern void blpg_shmem_request(void);
extern void blpg_shmem_startup(void);
extern void blpg_require_shmem(void);
extern void blpg_worker_require_shmem(const char *what);

/* Slot of a server (NULL if it has none); caller holds no lock. */
extern blpg_slot *blpg_find_slot(Oid dboid, Oid serverid);
/* Slot of a server, taking a free one if needed (error if none). */
extern blpg_slot *blpg_acquire_slot(Oid dboid, Oid serverid, const char *name);
extern void blpg_release_slot(blpg_slot *slot);

#endif							/* BLPG_SHMEM_H */
