/*
 * parallel.c
 *	  Parallel apply (binlog_fdw.apply_workers > 1): the continuous apply
 *	  worker becomes a coordinator that hands source transactions to a pool
 *	  of apply workers, each applying one transaction in a PostgreSQL
 *	  transaction of its own, committing strictly in binlog order.
 *
 * The coordinator takes one source transaction at a time from the ring (a
 * batch ending at its COMMIT) and computes its write set: for each row, the
 * hash of its target and of its key's values in the before and the after
 * image (blpg_target_write_key).  A transaction whose write set meets the
 * write set of one still applying waits for that one to commit; then it
 * goes to a free worker.  A DDL statement, a transaction with a row whose
 * key does not cover its writes (a keyless target, other unique indexes,
 * triggers, history tables, loads), or a transaction larger than the ring
 * is a barrier: the coordinator waits for all that applies, ends its round
 * and the continuous worker applies it serially (blpg_apply_run).  But a
 * transaction that is a barrier only because some of its rows' keys are
 * unknown or not compared by value (inserts into a keyless target, keys
 * of FLOAT/DOUBLE source columns) goes to a worker when the source's own
 * hint proves it independent of every transaction in flight (the same
 * MariaDB group commit, or MySQL's logical clock; same binlog file):
 * hint_allows(); its known keys count as any.  With a
 * backlog, the ready transactions that follow one and meet no key another
 * worker applies go to the same worker (PAR_GROUP at most): it applies them
 * in order in one PostgreSQL transaction, with one position at its end.
 *
 * Ordering: the transactions get consecutive tick numbers as they are
 * dispatched.  A worker applies its rows, then waits until the shared
 * committed tick is its tick - 1, then writes the source position after
 * its transaction (binlog_fdw.source_state, the replication origin's
 * progress) and the statistics, commits, and sets the committed tick to
 * its own.  The positions thus become durable in binlog order with their
 * rows: what committed after a crash is a prefix of the binlog, and a
 * reader never sees a transaction without those before it.  The
 * coordinator keeps the batches and releases each one's ring space once
 * its worker committed (blpg_consume_applied_elsewhere).
 *
 * On any failure (an apply worker's error, a worker that exits), every
 * worker that has not committed aborts, the coordinator asks the source
 * worker to stream again from the durable position (what committed is
 * there; nothing is applied twice) and raises the error; the continuous
 * worker's next round is serial, so that the failing change is reported
 * and handled (conflict policies, skip_change()) exactly as without
 * parallel apply.
 *
 * Shared state: a dynamic shared memory segment per pool (par_shared),
 * its fields under its spinlock, changes broadcast on its condition
 * variable.  Only the coordinator assigns work; a worker writes its own
 * entry and the committed tick.
 */
#include "apply/apply.h"

#include "access/xact.h"
#include "foreign/foreign.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/condition_variable.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "storage/spin.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include <sched.h>
#include <signal.h>
#include <unistd.h>

int			blpg_apply_workers = -1;

#define PAR_MAX_WORKERS 64
#define PAR_ERROR_LEN 2048
#define PAR_CHUNK 20000			/* changes of one transaction taken at once */
#define PAR_GROUP 32			/* consecutive transactions one worker takes */
#define PAR_GROUP_KEYS 10000	/* ... while their keys are fewer */

typedef enum par_state
{
	PW_STARTING = 0,			/* not attached yet */
	PW_IDLE,
	PW_ASSIGNED,				/* applying tick */
	PW_DONE,					/* committed tick */
	PW_FAILED					/* aborted tick (error[]) */
} par_state;

typedef struct par_worker
{
	par_state	state;
	pid_t		pid;
	uint64		tick;
	int			ntxns;			/* source transactions first..last holds */
	uint64		first;
	uint64		last;
	uint64		start_off;
	uint32		generation;
	int64		rows;			/* results */
	int64		commit_ts_us;
	bool		aborted;		/* failed because another one did */
	char		error[PAR_ERROR_LEN];
	char		context[PAR_ERROR_LEN];	/* the error's (row, position) */
} par_worker;

typedef struct par_shared
{
	slock_t		mutex;
	ConditionVariable cv;
	Oid			dboid;
	Oid			userid;
	Oid			serverid;
	int			slot_index;
	pid_t		coordinator;
	int			nworkers;
	uint64		committed_tick; /* the last tick committed (in order) */
	bool		abort_all;		/* what has not committed aborts */
	bool		shutdown;
	par_worker	w[FLEXIBLE_ARRAY_MEMBER];
} par_shared;

/*
 * The apply workers binlog_fdw.apply_workers means: itself, or for -1 (the
 * default) one per processor this process may run on but one (left to the
 * source worker's decoding), 8 at most: 1 (serial) on a 2-core machine.
 */
int
blpg_apply_workers_effective(void)
{
	long		ncpu = -1;

	if (blpg_apply_workers >= 1)
		return blpg_apply_workers;
#ifdef __linux__
	{
		cpu_set_t	set;

		CPU_ZERO(&set);
		if (sched_getaffinity(0, sizeof(set), &set) == 0)
			ncpu = CPU_COUNT(&set);
	}
#endif
	if (ncpu < 1)
		ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	return (int) Min(8, Max(1, ncpu - 1));
}

/* binlog_fdw.apply_workers: -1 or 1..PAR_MAX_WORKERS */
bool
blpg_apply_workers_check(int *newval, void **extra, GucSource source)
{
	if (*newval == -1 || (*newval >= 1 && *newval <= PAR_MAX_WORKERS))
		return true;
	GUC_check_errdetail("binlog_fdw.apply_workers is -1 (one per processor but one, at most 8) or 1 to %d.",
						PAR_MAX_WORKERS);
	return false;
}

/* ---- the coordinator's side ---- */

typedef struct par_pool
{
	dsm_segment *seg;
	par_shared *sh;
	int			nworkers;
	BackgroundWorkerHandle *handles[PAR_MAX_WORKERS];
} par_pool;

/*
 * The source's dependency hint of a transaction (from its GTID event, via
 * its BEGIN entry) and the binlog file it starts in: the hints' counters
 * restart with each file.  Of an in-flight group of transactions: one
 * hint that holds for all of them (none if they differ).
 */
typedef struct txn_hint
{
	bl_gtid_hint hint;
	char		file[BLPG_FILE_LEN];
} txn_hint;

typedef struct inflight
{
	uint64		tick;
	int			worker;
	int			nbatches;		/* its source transactions, in order */
	uint64		batch_ids[PAR_GROUP];
	txn_hint	hint;
} inflight;

/* What a transaction's write set says (write_set) */
typedef enum ws_class
{
	WS_KEYS,					/* every row's key is known */
	WS_HINT,					/* rows of targets without comparable keys
								 * (BLPG_WK_KEYLESS inserts, BLPG_WK_INEXACT):
								 * concurrent only if the source proves it */
	WS_BARRIER					/* serial */
} ws_class;

typedef struct key_entry
{
	uint64		key;
	uint64		tick;			/* the last dispatched tick writing it */
} key_entry;

static par_pool *pool = NULL;

static void
pool_broadcast(void)
{
	ConditionVariableBroadcast(&pool->sh->cv);
}

void
blpg_parallel_shutdown(void)
{
	if (pool == NULL)
		return;
	SpinLockAcquire(&pool->sh->mutex);
	pool->sh->shutdown = true;
	pool->sh->abort_all = true;
	SpinLockRelease(&pool->sh->mutex);
	pool_broadcast();
	for (int i = 0; i < pool->nworkers; i++)
		if (pool->handles[i])
		{
			(void) WaitForBackgroundWorkerShutdown(pool->handles[i]);
			pfree(pool->handles[i]);
		}
	dsm_detach(pool->seg);
	pfree(pool);
	pool = NULL;
}

static void
pool_exit_callback(int code, Datum arg)
{
	/* the workers see the coordinator gone and exit; tell them first */
	if (pool != NULL)
	{
		SpinLockAcquire(&pool->sh->mutex);
		pool->sh->shutdown = true;
		pool->sh->abort_all = true;
		SpinLockRelease(&pool->sh->mutex);
		ConditionVariableBroadcast(&pool->sh->cv);
	}
}

/* Start a pool of n workers for slot (false: none could be started). */
static bool
pool_start(blpg_slot *slot, int n)
{
	Size		size = offsetof(par_shared, w) + sizeof(par_worker) * n;
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
	static bool exit_registered = false;
	int			started = 0;

	pool = palloc0(sizeof(par_pool));
	pool->seg = dsm_create(size, 0);
	dsm_pin_mapping(pool->seg);
	pool->sh = dsm_segment_address(pool->seg);
	memset(pool->sh, 0, size);
	SpinLockInit(&pool->sh->mutex);
	ConditionVariableInit(&pool->sh->cv);
	pool->sh->dboid = MyDatabaseId;
	pool->sh->userid = slot->userid;
	pool->sh->serverid = slot->serverid;
	pool->sh->slot_index = (int) (slot - blpg_shared->slots);
	pool->sh->coordinator = MyProcPid;
	pool->sh->nworkers = n;
	pool->nworkers = n;
	if (!exit_registered)
	{
		before_shmem_exit(pool_exit_callback, (Datum) 0);
		exit_registered = true;
	}
	for (int i = 0; i < n; i++)
	{
		BackgroundWorker bgw;
		int32		index = i;

		blpg_bgworker_init(&bgw, "blpg_parallel_worker_main", "apply worker",
						   psprintf("binlog_fdw apply worker %d for %s", i + 1,
									slot->server_name));
		bgw.bgw_main_arg = UInt32GetDatum(dsm_segment_handle(pool->seg));
		memcpy(bgw.bgw_extra, &index, sizeof(index));
		bgw.bgw_notify_pid = MyProcPid;
		if (RegisterDynamicBackgroundWorker(&bgw, &pool->handles[i]))
			started++;
		else
		{
			pool->handles[i] = NULL;
			pool->sh->w[i].state = PW_FAILED;	/* never used */
		}
	}
	MemoryContextSwitchTo(old);
	if (started < 2)
	{
		ereport(LOG,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("source \"%s\": could not start %d apply workers, applying serially",
						slot->server_name, n),
				 errhint("Raise max_worker_processes, or lower binlog_fdw.apply_workers.")));
		blpg_parallel_shutdown();
		return false;
	}
	return true;
}

/* An assigned worker that exited without reporting: the pool's error. */
static void
check_workers_alive(void)
{
	for (int i = 0; i < pool->nworkers; i++)
	{
		pid_t		pid;
		par_state	st;

		if (pool->handles[i] == NULL)
			continue;
		SpinLockAcquire(&pool->sh->mutex);
		st = pool->sh->w[i].state;
		SpinLockRelease(&pool->sh->mutex);
		if (st == PW_FAILED)
			continue;
		if (GetBackgroundWorkerPid(pool->handles[i], &pid) == BGWH_STOPPED)
		{
			SpinLockAcquire(&pool->sh->mutex);
			if (pool->sh->w[i].state != PW_FAILED)
			{
				pool->sh->w[i].state = PW_FAILED;
				snprintf(pool->sh->w[i].error, PAR_ERROR_LEN,
						 "apply worker %d exited", i + 1);
			}
			SpinLockRelease(&pool->sh->mutex);
		}
	}
}

/*
 * Wait a little for a change of the pool.  The sleep stays prepared
 * between calls, so a broadcast between the caller's check and the next
 * call is not missed (the first call only prepares it).
 */
static void
pool_wait(long ms)
{
	CHECK_FOR_INTERRUPTS();
	(void) ConditionVariableTimedSleep(&pool->sh->cv, ms, PG_WAIT_EXTENSION);
	check_workers_alive();
}

typedef struct coord
{
	blpg_slot  *slot;
	const char *server_name;
	inflight   *fl;				/* in tick order */
	int			nfl;
	uint64		next_tick;
	HTAB	   *keys;
	blpg_apply_result *res;
	int64		commit_ts_us;	/* of the last transaction committed */
} coord;

/*
 * Pass what committed: release the batches of ticks up to the committed
 * one, in order, and free their workers.  An error for a failed worker.
 */
static void
reap(coord *c)
{
	uint64		committed;
	int			failed = -1;

	SpinLockAcquire(&pool->sh->mutex);
	committed = pool->sh->committed_tick;
	for (int i = 0; i < pool->nworkers; i++)
		if (pool->sh->w[i].state == PW_FAILED && pool->handles[i] != NULL &&
			failed < 0 && !pool->sh->w[i].aborted)
			failed = i;
	SpinLockRelease(&pool->sh->mutex);
	while (c->nfl > 0 && c->fl[0].tick <= committed)
	{
		par_worker *w = &pool->sh->w[c->fl[0].worker];

		for (int b = 0; b < c->fl[0].nbatches; b++)
			blpg_consume_applied_elsewhere(c->slot, c->fl[0].batch_ids[b]);
		c->res->transactions += c->fl[0].nbatches;
		c->res->rows += w->rows;
		if (w->commit_ts_us)
			c->commit_ts_us = w->commit_ts_us;
		SpinLockAcquire(&pool->sh->mutex);
		if (w->state == PW_DONE && w->tick == c->fl[0].tick)
			w->state = PW_IDLE;
		SpinLockRelease(&pool->sh->mutex);
		memmove(&c->fl[0], &c->fl[1], sizeof(inflight) * (c->nfl - 1));
		c->nfl--;
	}
	if (c->nfl == 0 && c->keys != NULL)
	{
		hash_destroy(c->keys);
		c->keys = NULL;
	}
	if (failed >= 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("parallel apply of source \"%s\" failed: %s", c->server_name,
						pool->sh->w[failed].error),
				 errdetail("What committed stays applied; the rest is applied again, serially first."),
				 pool->sh->w[failed].context[0] ? errcontext("%s", pool->sh->w[failed].context) : 0));
}

static HTAB *
keys_create(void)
{
	HASHCTL		ctl;

	ctl.keysize = sizeof(uint64);
	ctl.entrysize = sizeof(key_entry);
	ctl.hcxt = CurrentMemoryContext;
	return hash_create("binlog_fdw write sets", 1024, &ctl,
					   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

/* Wait until every dispatched transaction committed. */
static void
drain(coord *c)
{
	for (;;)
	{
		reap(c);
		if (c->nfl == 0)
			return;
		pool_wait(100);
	}
}

/*
 * The write set of the transaction first..last (in place from start_off):
 * its keys into *keys (palloc'd) and its hint into *hint; WS_BARRIER if it
 * is a barrier, WS_HINT if some of its rows have no key that can be
 * compared (their targets have no key, or keys not compared by value):
 * the keys it has still count.
 *
 * A keyless target qualifies with inserts only: an update or a delete
 * finds its row by its values, and of two equal rows two transactions the
 * source ran at once may pick the same one here, the later one locking it
 * while the earlier one waits for it and the later one for the earlier
 * one's commit.
 */
static ws_class
write_set(coord *c, blpg_targets *ts, uint64 start_off, uint64 first, uint64 last,
		  uint64 **keys_out, int *nkeys_out, txn_hint *hint)
{
	bl_decoder *dec = blpg_canonical_decoder();
	uint64		off = start_off;
	int			nkeys = 0,
				cap = 64;
	uint64	   *keys = palloc(sizeof(uint64) * cap);
	bool		begun = false,
				ended = false,
				unknown = false;

	memset(hint, 0, sizeof(*hint));
	for (;;)
	{
		const blpg_entry *e = blpg_ring_entry(c->slot, off);
		blpg_entry_view v;

		off += e->total_len;
		if (e->kind == BLPG_ENTRY_WRAP)
			continue;
		if (e->seq_first > last)
			break;
		blpg_entry_view_init(&v, e);
		switch (e->kind)
		{
			case BLPG_ENTRY_BEGIN:
				begun = e->seq_first == first;
				if (begun && e->txn_file_len < BLPG_FILE_LEN)
				{
					hint->hint.kind = e->hint_kind;
					hint->hint.a = e->hint_a;
					hint->hint.b = e->hint_b;
					memcpy(hint->file, v.txn_file, e->txn_file_len);
					hint->file[e->txn_file_len] = '\0';
				}
				break;
			case BLPG_ENTRY_COMMIT:
				ended = e->seq_first == last;
				break;
			case BLPG_ENTRY_DDL:
				return WS_BARRIER;
			case BLPG_ENTRY_ROWS:
				{
					bl_event	rows;
					bl_error	err;
					bl_row		before,
								after;
					blpg_target *tg;

					if (!begun || e->rows_skip != 0 || e->seq_first < first ||
						e->seq_first + e->nchanges - 1 > last)
						return WS_BARRIER;
					if (blpg_entry_rows_decode(dec, &v, &rows, &err) != 0)
						return WS_BARRIER;	/* the serial path reports it */
					tg = blpg_target_get(ts, rows.u.rows.table, &v);
					if (tg == NULL)
						break;
					for (uint32 i = 0; i < e->nchanges; i++)
					{
						uint64		k;
						blpg_write_key wk = BLPG_WK_KEY;

						if (bl_rows_next(dec, &rows.u.rows, &before, &after, &err) != 1)
							return WS_BARRIER;
						if (nkeys + 2 > cap)
						{
							cap *= 2;
							keys = repalloc(keys, sizeof(uint64) * cap);
						}
						if (e->op != BL_OP_INSERT)
						{
							wk = blpg_target_write_key(tg, &before, NULL, &k);
							if (wk == BLPG_WK_KEY)
								keys[nkeys++] = k;
						}
						if (wk == BLPG_WK_KEY && e->op != BL_OP_DELETE)
						{
							wk = blpg_target_write_key(tg, &after,
													   e->op == BL_OP_UPDATE ? &before : NULL, &k);
							if (wk == BLPG_WK_KEY)
								keys[nkeys++] = k;
						}
						if (wk == BLPG_WK_BARRIER ||
							(wk == BLPG_WK_KEYLESS && e->op != BL_OP_INSERT))
							return WS_BARRIER;
						if (wk != BLPG_WK_KEY)
						{
							/* the event's rows are all of this kind */
							unknown = true;
							break;
						}
					}
					break;
				}
			default:
				return WS_BARRIER;
		}
		if (e->seq_first + e->nchanges - 1 >= last)
			break;
	}
	if (!begun || !ended)
		return WS_BARRIER;
	*keys_out = keys;
	*nkeys_out = nkeys;
	return unknown ? WS_HINT : WS_KEYS;
}

/*
 * May a transaction with hint h (WS_HINT) apply beside every transaction
 * in flight?  Only if the source proves it independent of each: MariaDB,
 * all in its group commit; MySQL, each committed after the last one it
 * may depend on; and all in its binlog file.  Nothing in flight: nothing
 * to depend on, if it has a hint to compare with those that follow.
 */
static bool
hint_allows(coord *c, const txn_hint *h)
{
	if (h->hint.kind == BL_HINT_NONE || h->file[0] == '\0')
		return false;
	for (int i = 0; i < c->nfl; i++)
		if (strcmp(c->fl[i].hint.file, h->file) != 0 ||
			!bl_gtid_hint_independent(&c->fl[i].hint.hint, &h->hint))
			return false;
	return true;
}

/*
 * A transaction (with hint h) joins the in-flight group fl: the group's
 * hint then holds for both, or is none.  For MySQL the group keeps its
 * first's sequence_number, the smallest of the file.
 */
static void
hint_merge(inflight *fl, const txn_hint *h)
{
	txn_hint   *g = &fl->hint;

	if (g->hint.kind != h->hint.kind || strcmp(g->file, h->file) != 0 ||
		(g->hint.kind == BL_HINT_MARIA_GROUP && g->hint.a != h->hint.a))
		memset(&g->hint, 0, sizeof(g->hint));
}

/* A free worker (waiting for one), or an error of the pool. */
static int
free_worker(coord *c)
{
	for (;;)
	{
		reap(c);
		SpinLockAcquire(&pool->sh->mutex);
		for (int i = 0; i < pool->nworkers; i++)
			if (pool->sh->w[i].state == PW_IDLE)
			{
				SpinLockRelease(&pool->sh->mutex);
				return i;
			}
		SpinLockRelease(&pool->sh->mutex);
		pool_wait(100);
	}
}

static void
coordinate(coord *c, int64 max_changes, int64 max_ms, int64 wait_ms, bool *barrier)
{
	TimestampTz start = GetCurrentTimestamp();
	TimestampTz deadline = start + max_ms * 1000;
	TimestampTz wait_until = start + wait_ms * 1000;
	blpg_apply_options opts;
	blpg_targets *ts;
	uint32		generation;

	blpg_apply_options_load(c->slot->serverid, &opts);
	ts = blpg_targets_create(c->server_name, &opts);
	for (;;)
	{
		uint64		first,
					last,
					batch_id,
					start_off;
		uint64	   *keys;
		int			nkeys;
		uint64		wait_for = 0;
		int			wi;
		par_worker *w;
		inflight   *fl;
		int			group_keys;
		ws_class	ws;
		txn_hint	hint;
		bool		hint_release;

		reap(c);
		if (c->res->rows >= max_changes || GetCurrentTimestamp() >= deadline)
			break;
		if (!blpg_consume_take(c->slot, PAR_CHUNK, true, NULL, &first, &last, &batch_id,
							   &start_off))
		{
			TimestampTz now = GetCurrentTimestamp();

			if (c->nfl == 0 && (now >= wait_until || c->res->transactions > 0))
				break;
			if (c->nfl > 0)
				pool_wait(10);
			else
			{
				(void) ConditionVariableTimedSleep(&c->slot->put_cv, 100, PG_WAIT_EXTENSION);
				CHECK_FOR_INTERRUPTS();
			}
			continue;
		}
		ws = write_set(c, ts, start_off, first, last, &keys, &nkeys, &hint);
		hint_release = false;
		if (ws == WS_HINT)
		{
			if (hint_allows(c, &hint))
				hint_release = c->nfl > 0;
			else
				ws = WS_BARRIER;
		}
		if (ws == WS_BARRIER)
		{
			/* serially, after all before it: the next round's first */
			drain(c);
			blpg_consume_rollback_own(c->slot);
			LWLockAcquire(&c->slot->lock, LW_EXCLUSIVE);
			c->slot->par_barriers++;
			LWLockRelease(&c->slot->lock);
			*barrier = true;
			break;
		}
		if (c->keys == NULL)
			c->keys = keys_create();
		for (int i = 0; i < nkeys; i++)
		{
			key_entry  *ke = hash_search(c->keys, &keys[i], HASH_FIND, NULL);

			if (ke != NULL && ke->tick > wait_for)
				wait_for = ke->tick;
		}
		if (wait_for > 0)
		{
			bool		waited = false;

			for (;;)
			{
				uint64		committed;

				SpinLockAcquire(&pool->sh->mutex);
				committed = pool->sh->committed_tick;
				SpinLockRelease(&pool->sh->mutex);
				if (committed >= wait_for)
					break;
				waited = true;
				pool_wait(100);
				reap(c);
			}
			if (waited)
			{
				LWLockAcquire(&c->slot->lock, LW_EXCLUSIVE);
				c->slot->par_key_waits++;
				LWLockRelease(&c->slot->lock);
			}
		}
		wi = free_worker(c);
		if (c->keys == NULL)
			c->keys = keys_create();
		c->next_tick++;
		fl = &c->fl[c->nfl];
		fl->tick = c->next_tick;
		fl->worker = wi;
		fl->nbatches = 1;
		fl->batch_ids[0] = batch_id;
		fl->hint = hint;
		for (int i = 0; i < nkeys; i++)
		{
			key_entry  *ke = hash_search(c->keys, &keys[i], HASH_ENTER, NULL);

			ke->tick = c->next_tick;
		}
		pfree(keys);

		/*
		 * A backlog: the transactions that follow go to the same worker, in
		 * the same PostgreSQL transaction (one commit, one position), while
		 * they are ready, not barriers, and their keys meet none that
		 * another worker applies (keys they share with each other are
		 * applied in order by the one worker).
		 */
		group_keys = nkeys;
		while (fl->nbatches < PAR_GROUP && group_keys < PAR_GROUP_KEYS)
		{
			uint64		f2,
						l2,
						b2,
						o2;
			uint64		committed;
			bool		meets = false;

			if (!blpg_consume_take(c->slot, PAR_CHUNK, true, NULL, &f2, &l2, &b2, &o2))
				break;
			if (f2 != last + 1 ||
				write_set(c, ts, o2, f2, l2, &keys, &nkeys, &hint) != WS_KEYS)
			{
				/* comes again with the next take */
				blpg_consume_trim(c->slot, b2, f2 - 1);
				break;
			}
			SpinLockAcquire(&pool->sh->mutex);
			committed = pool->sh->committed_tick;
			SpinLockRelease(&pool->sh->mutex);
			for (int i = 0; i < nkeys && !meets; i++)
			{
				key_entry  *ke = hash_search(c->keys, &keys[i], HASH_FIND, NULL);

				meets = ke != NULL && ke->tick > committed && ke->tick != c->next_tick;
			}
			if (meets)
			{
				pfree(keys);
				blpg_consume_trim(c->slot, b2, f2 - 1);
				break;
			}
			for (int i = 0; i < nkeys; i++)
			{
				key_entry  *ke = hash_search(c->keys, &keys[i], HASH_ENTER, NULL);

				ke->tick = c->next_tick;
			}
			pfree(keys);
			group_keys += nkeys;
			hint_merge(fl, &hint);
			fl->batch_ids[fl->nbatches++] = b2;
			last = l2;
		}
		LWLockAcquire(&c->slot->lock, LW_SHARED);
		generation = c->slot->generation;
		LWLockRelease(&c->slot->lock);
		w = &pool->sh->w[wi];
		SpinLockAcquire(&pool->sh->mutex);
		w->tick = c->next_tick;
		w->ntxns = fl->nbatches;
		w->first = first;
		w->last = last;
		w->start_off = start_off;
		w->generation = generation;
		w->rows = 0;
		w->commit_ts_us = 0;
		w->aborted = false;
		w->error[0] = '\0';
		w->context[0] = '\0';
		w->state = PW_ASSIGNED;
		SpinLockRelease(&pool->sh->mutex);
		pool_broadcast();
		c->nfl++;
		LWLockAcquire(&c->slot->lock, LW_EXCLUSIVE);
		c->slot->par_dispatched += fl->nbatches;
		if (hint_release)
			c->slot->par_hint_releases++;
		if (c->nfl > c->slot->par_max_in_flight)
			c->slot->par_max_in_flight = c->nfl;
		LWLockRelease(&c->slot->lock);
	}
	drain(c);
	blpg_targets_finish(ts);
}

/*
 * After a failure: every worker that has not committed aborts; what
 * committed is released; the source worker streams again from the
 * durable position; the pool is ready again.
 */
static void
recover(coord *c)
{
	bool		busy;

	SpinLockAcquire(&pool->sh->mutex);
	pool->sh->abort_all = true;
	SpinLockRelease(&pool->sh->mutex);
	pool_broadcast();
	for (;;)
	{
		busy = false;
		check_workers_alive();
		SpinLockAcquire(&pool->sh->mutex);
		for (int i = 0; i < pool->nworkers; i++)
			if ((pool->sh->w[i].state == PW_ASSIGNED || pool->sh->w[i].state == PW_STARTING) &&
				pool->handles[i] != NULL)
				busy = true;
		SpinLockRelease(&pool->sh->mutex);
		if (!busy)
			break;
		(void) ConditionVariableTimedSleep(&pool->sh->cv, 100, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
	LWLockAcquire(&c->slot->lock, LW_EXCLUSIVE);
	c->slot->rewind_requested = true;
	c->slot->nbatches = 0;
	LWLockRelease(&c->slot->lock);
	ConditionVariableBroadcast(&c->slot->space_cv);
	if (c->slot->worker_pid)
		kill(c->slot->worker_pid, SIGUSR1);
	/* workers that failed or exited: a new pool next time */
	blpg_parallel_shutdown();
}

bool
blpg_parallel_apply_run(const char *server_name, int64 max_changes, int64 max_ms,
						int64 wait_ms, blpg_apply_result *res, bool *barrier)
{
	ForeignServer *server;
	blpg_slot  *slot = blpg_consumer_slot(server_name, &server);
	int			n = Min(blpg_apply_workers_effective(), PAR_MAX_WORKERS);
	coord		c;
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "binlog_fdw parallel apply",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);

	memset(res, 0, sizeof(*res));
	*barrier = false;
	if (pool != NULL && (pool->nworkers != n ||
						 pool->sh->serverid != slot->serverid))
		blpg_parallel_shutdown();
	if (pool == NULL && !pool_start(slot, n))
	{
		MemoryContextSwitchTo(old);
		MemoryContextDelete(cxt);
		return false;
	}
	/* wait for the workers to attach (they set IDLE) */
	for (;;)
	{
		bool		starting = false;

		SpinLockAcquire(&pool->sh->mutex);
		for (int i = 0; i < pool->nworkers; i++)
			if (pool->sh->w[i].state == PW_STARTING)
				starting = true;
		SpinLockRelease(&pool->sh->mutex);
		if (!starting)
			break;
		pool_wait(100);
		for (int i = 0; i < pool->nworkers; i++)
			if (pool->sh->w[i].state == PW_FAILED && pool->sh->w[i].error[0] != '\0')
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("parallel apply of source \"%s\" failed: %s", server_name,
								pool->sh->w[i].error)));
	}
	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	slot->par_workers = pool->nworkers;
	LWLockRelease(&slot->lock);
	/* what an earlier round left out comes again */
	blpg_consume_rollback_own(slot);
	memset(&c, 0, sizeof(c));
	c.slot = slot;
	c.server_name = server->servername;
	c.fl = palloc(sizeof(inflight) * pool->nworkers);
	c.res = res;
	SpinLockAcquire(&pool->sh->mutex);
	c.next_tick = pool->sh->committed_tick;
	SpinLockRelease(&pool->sh->mutex);
	PG_TRY();
	{
		coordinate(&c, max_changes, max_ms, wait_ms, barrier);
	}
	PG_CATCH();
	{
		HOLD_INTERRUPTS();
		recover(&c);
		RESUME_INTERRUPTS();
		PG_RE_THROW();
	}
	PG_END_TRY();
	ConditionVariableCancelSleep();
	if (c.commit_ts_us)
		res->lag_seconds = Max(0.0, (double) (GetCurrentTimestamp() -
											  ((TimestampTz) c.commit_ts_us -
											   ((POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY))) / 1e6);
	LWLockAcquire(&slot->lock, LW_SHARED);
	strlcpy(res->pos.file, slot->acked.file, sizeof(res->pos.file));
	res->pos.pos = slot->acked.pos;
	LWLockRelease(&slot->lock);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	return true;
}

/* ---- an apply worker ---- */

static par_shared *wsh = NULL;
static int	windex = -1;

/* Is it our turn to commit (tick - 1 committed)?  An error once all abort. */
static void
wait_turn(par_worker *w)
{
	for (;;)
	{
		bool		abort_all;
		uint64		committed;

		SpinLockAcquire(&wsh->mutex);
		abort_all = wsh->abort_all;
		committed = wsh->committed_tick;
		SpinLockRelease(&wsh->mutex);
		if (abort_all)
		{
			w->aborted = true;
			ereport(ERROR,
					(errcode(ERRCODE_QUERY_CANCELED),
					 errmsg("parallel apply: an earlier transaction failed, this one is applied again")));
		}
		if (committed + 1 == w->tick)
			return;
		if (committed >= w->tick)
			elog(ERROR, "binlog_fdw: apply worker tick %llu passed",
				 (unsigned long long) w->tick);
		CHECK_FOR_INTERRUPTS();
		(void) ConditionVariableTimedSleep(&wsh->cv, 100, PG_WAIT_EXTENSION);
	}
}

static void
apply_one(blpg_slot *slot, par_worker *w)
{
	ForeignServer *fs = GetForeignServerExtended(wsh->serverid, FSV_MISSING_OK);
	blpg_apply_options opts;
	blpg_targets *ts;
	blpg_apply_result res;
	bool		in_txn = false;
	int64		commit_ts_us = 0;
	uint64		stop_before = 0;
	blpg_position pos;
	bool		ok;

	if (fs == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("the source of parallel apply was dropped")));
	memset(&res, 0, sizeof(res));
	blpg_apply_options_load(wsh->serverid, &opts);
	ts = blpg_targets_create(fs->servername, &opts);
	/* the origin's progress is one session's at a time: set up at our turn */
	if (!blpg_origin_tag(wsh->serverid))
	{
		/*
		 * No origin yet: create it first, at our turn.  An earlier worker
		 * may have created it meanwhile: see its commit (our catalog cache
		 * remembers the name as missing).
		 */
		wait_turn(w);
		ConditionVariableCancelSleep();
		AcceptInvalidationMessages();
		blpg_origin_begin(wsh->serverid);
	}
	blpg_apply_entries(ts, slot, w->start_off, w->first, w->last, fs->servername,
					   &in_txn, &res, &commit_ts_us, &stop_before);
	if (in_txn || stop_before != 0 || res.transactions != w->ntxns)
		elog(ERROR, "binlog_fdw: apply worker got changes %llu..%llu that are not %d whole transactions",
			 (unsigned long long) w->first, (unsigned long long) w->last, w->ntxns);
	blpg_targets_flush(ts);

	/* in binlog order from here: the position, the statistics, commit */
	wait_turn(w);
	ConditionVariableCancelSleep();
	LWLockAcquire(&slot->lock, LW_SHARED);
	ok = slot->generation == w->generation &&
		blpg_ring_position_after(slot, w->last, &pos);
	LWLockRelease(&slot->lock);
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("source \"%s\" restarted while a transaction was applied in parallel",
						fs->servername)));
	blpg_origin_begin(wsh->serverid);
	blpg_state_save(wsh->serverid, &pos);
	blpg_history_acked(slot, wsh->serverid, w->first, w->last);
	blpg_origin_progress(wsh->serverid, &pos, commit_ts_us);
	if (pos.gtid_state)
		pfree(pos.gtid_state);
	pos.gtid_state = NULL;
	res.pos = pos;
	blpg_stats_flush(slot, fs->servername, &res, blpg_targets_counts(ts));
	blpg_targets_finish(ts);
	w->rows = res.rows;
	w->commit_ts_us = commit_ts_us;
}

static volatile sig_atomic_t worker_sigterm = false;

static void
worker_handle_sigterm(SIGNAL_ARGS)
{
	int			save_errno = errno;

	worker_sigterm = true;
	SetLatch(MyLatch);
	errno = save_errno;
}

void
blpg_parallel_worker_main(Datum main_arg)
{
	dsm_segment *seg;
	par_worker *w;
	blpg_slot  *slot;
	MemoryContext cxt;

	pqsignal(SIGTERM, worker_handle_sigterm);
	BackgroundWorkerUnblockSignals();
	blpg_worker_require_shmem("binlog_fdw apply worker");
	memcpy(&windex, MyBgworkerEntry->bgw_extra, sizeof(windex));
	CurrentResourceOwner = ResourceOwnerCreate(NULL, "binlog_fdw apply worker");
	seg = dsm_attach(DatumGetUInt32(main_arg));
	if (seg == NULL)
		proc_exit(0);			/* its coordinator is gone */
	dsm_pin_mapping(seg);
	wsh = dsm_segment_address(seg);
	if (windex < 0 || windex >= wsh->nworkers)
		proc_exit(0);
	w = &wsh->w[windex];
	slot = &blpg_shared->slots[wsh->slot_index];
	BackgroundWorkerInitializeConnectionByOid(wsh->dboid, wsh->userid, 0);
	pgstat_report_appname("binlog_fdw apply worker");
	/* as the continuous worker */
	blpg_apply_session_setup();
	/* a lock another worker holds while it waits for its turn: give up */
	SetConfigOption("lock_timeout", "10s", PGC_SUSET, PGC_S_OVERRIDE);
	cxt = AllocSetContextCreate(TopMemoryContext, "binlog_fdw apply worker",
								ALLOCSET_DEFAULT_SIZES);
	SpinLockAcquire(&wsh->mutex);
	w->pid = MyProcPid;
	w->state = PW_IDLE;
	SpinLockRelease(&wsh->mutex);
	ConditionVariableBroadcast(&wsh->cv);

	for (;;)
	{
		bool		shutdown,
					assigned;

		SpinLockAcquire(&wsh->mutex);
		shutdown = wsh->shutdown;
		assigned = w->state == PW_ASSIGNED;
		SpinLockRelease(&wsh->mutex);
		if (shutdown || worker_sigterm || kill(wsh->coordinator, 0) != 0)
			break;
		if (!assigned)
		{
			CHECK_FOR_INTERRUPTS();
			(void) ConditionVariableTimedSleep(&wsh->cv, 1000, PG_WAIT_EXTENSION);
			continue;
		}
		ConditionVariableCancelSleep();
		MemoryContextSwitchTo(cxt);
		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		PushActiveSnapshot(GetTransactionSnapshot());
		pgstat_report_activity(STATE_RUNNING, "binlog_fdw apply worker");
		PG_TRY();
		{
			apply_one(slot, w);
			PopActiveSnapshot();
			CommitTransactionCommand();
			/* no interrupt is processed from the commit to here */
			SpinLockAcquire(&wsh->mutex);
			wsh->committed_tick = w->tick;
			w->state = PW_DONE;
			SpinLockRelease(&wsh->mutex);
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			MemoryContextSwitchTo(cxt);
			edata = CopyErrorData();
			FlushErrorState();
			AbortCurrentTransaction();
			SpinLockAcquire(&wsh->mutex);
			strlcpy(w->error, edata->message, PAR_ERROR_LEN);
			strlcpy(w->context, edata->context ? edata->context : "", PAR_ERROR_LEN);
			w->state = PW_FAILED;
			SpinLockRelease(&wsh->mutex);
			if (!w->aborted)
				ereport(LOG,
						(errcode(edata->sqlerrcode),
						 errmsg("binlog_fdw apply worker %d: %s", windex + 1, edata->message),
						 edata->context ? errcontext("%s", edata->context) : 0));
			FreeErrorData(edata);
		}
		PG_END_TRY();
		ConditionVariableBroadcast(&wsh->cv);
		pgstat_report_activity(STATE_IDLE, NULL);
		MemoryContextReset(cxt);
		/* a failed worker waits for the pool's end */
		if (w->state == PW_FAILED)
		{
			while (!worker_sigterm && kill(wsh->coordinator, 0) == 0)
			{
				bool		sd;

				SpinLockAcquire(&wsh->mutex);
				sd = wsh->shutdown;
				SpinLockRelease(&wsh->mutex);
				if (sd)
					break;
				CHECK_FOR_INTERRUPTS();
				(void) ConditionVariableTimedSleep(&wsh->cv, 1000, PG_WAIT_EXTENSION);
			}
			break;
		}
	}
	ConditionVariableCancelSleep();
	proc_exit(0);
}

/* ---- binlog_fdw.parallel_apply_stats(server) ---- */

PG_FUNCTION_INFO_V1(binlog_fdw_parallel_apply_stats);

Datum
binlog_fdw_parallel_apply_stats(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	blpg_slot  *slot = blpg_consumer_slot(name, NULL);
	TupleDesc	tupdesc;
	Datum		values[7];
	bool		nulls[7] = {0};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	LWLockAcquire(&slot->lock, LW_SHARED);
	values[0] = Int32GetDatum(slot->par_workers);
	values[1] = Int64GetDatum((int64) slot->par_dispatched);
	values[2] = Int32GetDatum(slot->par_max_in_flight);
	values[3] = Int64GetDatum((int64) slot->par_key_waits);
	values[4] = Int64GetDatum((int64) slot->par_barriers);
	values[5] = Int64GetDatum((int64) slot->par_hint_releases);
	LWLockRelease(&slot->lock);
	values[6] = Int32GetDatum(blpg_apply_workers_effective());
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
