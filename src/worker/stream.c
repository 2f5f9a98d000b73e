/*
 * stream.c
 *	  The streaming worker of one source: a MySQL/MariaDB replica that
 *	  decodes the binlog and puts the changes into the source's ring.
 *
 * Lifecycle: read the server's options and the durable position
 * (binlog_fdw.source_state); reset the ring; then sessions until stopped.
 * A session connects (TLS per ssl_mode), checks the source (ROW format,
 * privileges, server_id), starts the dump where the last one ended, and
 * streams: decode, filter, put (waiting while the ring is full).  Any error
 * ends the session; the next one starts after a growing delay at the last
 * transaction boundary put into the ring, skipping the changes of an open
 * transaction already put, so nothing is lost or put twice.  A rewind
 * request (a consumer lost changes it had released) resets the ring and
 * restarts at the durable position.
 *
 * The first start without a durable position resolves the "start" option
 * to a concrete position and records it before streaming, so that changes
 * read before the first acknowledgement are read again after a crash.
 *
 * Host lists (failover).  With several hosts (a MariaDB primary and its
 * replicas) a session connects to one host; one that does not answer, fails
 * the replica checks or lacks transactions already read (its
 * @@gtid_binlog_pos behind our GTID state, or a different transaction at
 * the same sequence number) is passed over for the next one right away.
 * After a lost stream the next round starts with the host that was
 * streaming; a round in which every host failed waits with the growing
 * delay.  File names and positions differ between servers, so with a host
 * list every session resumes by GTID state, never by file:pos: MariaDB's
 * (@slave_connect_state, strict mode) or MySQL's GTID set
 * (COM_BINLOG_DUMP_GTID, after checking that the host executed the set and
 * the open transaction and purged nothing outside the set); the changes of
 * an open transaction already put are skipped in the transaction of that
 * GTID (see src/store/sink.c).  A MySQL host list starts at earliest (the
 * set @@gtid_purged), current (Executed_Gtid_Set) or gtid:SET.
 *
 * MySQL with gtid_mode=ON resumes by GTID set with a single host too, once
 * the set is known (from gtid:SET, or the PREVIOUS_GTIDS of a binlog read
 * from its start): the server sends exactly the transactions not in it,
 * also after its binlog files were renamed or rebuilt.  Until then, with
 * gtid_mode OFF, and once the server refused the set because anonymous
 * transactions follow it (binlogs from before gtid_mode=ON), it resumes by
 * file:pos.
 *
 * GTID states have no size limit: the next session's start (w->start)
 * keeps its state in the worker's memory context; the durable one is in
 * binlog_fdw.source_state, which a rewind reads again.
 */
#include "worker/worker.h"

#include "bl_mysql_source.h"
#include "bl_gtid_set.h"

#include "access/xact.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

static volatile sig_atomic_t got_sigterm = false;

typedef struct worker_ctx
{
	blpg_slot  *slot;
	blpg_source_config *cfg;
	bl_source_options sopts;
	blpg_filter *filter;
	MemoryContext cxt;			/* the worker's: w->start.gtid_state */
	bool		have_start;		/* start holds the next session's start */
	blpg_position start;
	bool		streamed;		/* the last session got past connecting */
	int			host;			/* cfg->hosts index of the session's host */
	int			tried;			/* hosts failed since the last nap */
	int			streamed_host;	/* host of the last streaming session, or -1 */
	bool		by_gtid;		/* host list: resume by GTID state or set */
	bool		reconnect_now;	/* the sink asked for a new session */
	bool		session_by_set; /* this session: COM_BINLOG_DUMP_GTID */
	bool		by_set_off;		/* MySQL refused the set (anonymous
								 * transactions after it): file:pos */
	char	   *row_image_base; /* the row image notice last logged, and */
	char	   *row_image_full; /* with its warnings (TopMemoryContext) */
	blpg_history *history;		/* the schema history (NULL: 0.1's tables) */
	bool		history_ready;	/* loaded and seeded at w->start */

	/* resources of the current session, released by end_session() */
	bl_source  *src;
	bl_schema_cache *schema;
	bl_decoder *dec;
	blpg_sink  *sink;
	TimestampTz last_server_check;
	TimestampTz last_retention_check;
	char		warned_oldest[BLPG_FILE_LEN];	/* acked file last warned of as */
	char		warned_purged[BLPG_FILE_LEN];	/* ... the oldest, as purged */
	bool		guard_cleared;	/* the crash-loop record was cleared */
	bool		position_lost;	/* the session failed: the source has purged
								 * the binlog of its start */
	bool		reload_started; /* a reloader was started for that: the next
								 * session reads the position again */
	BackgroundWorkerHandle *reloader;	/* the last reloader started */
} worker_ctx;

int			blpg_retention_check_interval = 60;

static void
handle_sigterm(SIGNAL_ARGS)
{
	int			save_errno = errno;

	got_sigterm = true;
	blpg_ring_put_cancel = true;
	SetLatch(MyLatch);
	errno = save_errno;
}

static bool
should_stop(blpg_slot *slot)
{
	bool		stop;

	if (got_sigterm)
		return true;
	LWLockAcquire(&slot->lock, LW_SHARED);
	stop = slot->stop_requested;
	LWLockRelease(&slot->lock);
	return stop;
}

static void
set_state(blpg_slot *slot, blpg_worker_state state)
{
	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	slot->state = state;
	if (state == BLPG_STATE_STREAMING)
	{
		slot->connected_since = GetCurrentTimestamp();
		/* streaming again: the last error is over (it stays shown) */
		if (slot->last_error[0] != '\0' && slot->last_error_cleared == 0)
			slot->last_error_cleared = slot->connected_since;
		/* binlog_fdw.source_stats: reconnects */
		if (slot->streamed_once)
			slot->reconnects++;
		slot->streamed_once = true;
	}
	LWLockRelease(&slot->lock);
}

static void
worker_exit(int code, Datum arg)
{
	blpg_slot  *slot = (blpg_slot *) DatumGetPointer(arg);

	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	if (slot->worker_pid == MyProcPid)
	{
		slot->worker_pid = 0;
		slot->state = BLPG_STATE_STOPPED;
		/* not a crash: the next launch does not count toward the guard */
		if (slot->in_use)
			blpg_guard_clear(slot->dboid, slot->serverid);
	}
	LWLockRelease(&slot->lock);
	ConditionVariableBroadcast(&slot->put_cv);
	ConditionVariableBroadcast(&slot->space_cv);
	/* stopped: the last one out frees the slot; else the launcher acts */
	(void) blpg_release_slot_if_idle(slot);
	blpg_wake_launcher();
}

/* Source error: an ERROR naming the server, file and position. */
static void
source_error(worker_ctx *w, const bl_error *err)
{
	const char *hint = NULL;
	const char *host = w->cfg->hosts[w->host].label;

	if (strstr(err->message, "1236") && strstr(err->message, "GTID") &&
		(strstr(err->message, "not in the master") || strstr(err->message, "missing the GTID") ||
		 strstr(err->message, "diverged")))
		hint = "This server's binlog lacks transactions this source already read: it is behind, or its history diverged from the server they were read from. Nothing was skipped: the worker keeps trying the hosts of the list.";
	else if (strstr(err->message, "1236") && (strstr(err->message, "ould not find") ||
										 strstr(err->message, "purged") ||
										 strstr(err->message, "not exist")))
	{
		/* a host list tries its other hosts (they may keep the binlog) */
		w->position_lost = w->have_start && w->cfg->nhosts == 1;
		hint = w->cfg->lost_position_reload ?
			"The source no longer has the binlog at this position (purged?). The server option lost_position is 'reload': the source's tables are copied again (binlog_fdw.load_status) and streaming goes on from a position the source has." :
			psprintf("The source no longer has the binlog at this position (purged?). Nothing after it was skipped: set the server option lost_position to 'reload' (ALTER SERVER %s OPTIONS (ADD lost_position 'reload')) to copy the source's tables again online and go on, or take a new snapshot, or reset the position with binlog_fdw.reset() and restart the source.",
					 quote_identifier(w->cfg->server_name));
	}
	else if (strstr(err->message, "same server_uuid/server_id") || strstr(err->message, "4052"))
		hint = psprintf("Another replica of the source uses server_id %lld: give this source a server_id that no other replica uses (ALTER SERVER %s OPTIONS (SET server_id '...')).",
						(long long) w->cfg->server_id, w->cfg->server_name);
	ereport(ERROR,
			(errcode(blpg_errcode(err->code)),
			 w->cfg->nhosts > 1 ?
			 errmsg("source \"%s\", host %s: %s", w->cfg->server_name, host, err->message) :
			 errmsg("source \"%s\": %s", w->cfg->server_name, err->message),
			 err->file[0] ? errcontext("binlog file %s, position %llu", err->file,
									   (unsigned long long) err->position) : 0,
			 hint ? errhint("%s", hint) : 0));
}

/* The next session starts at pos (its GTID state copied to the worker's memory). */
static void
set_start(worker_ctx *w, const blpg_position *pos)
{
	char	   *old = w->start.gtid_state;

	w->start = *pos;
	w->start.gtid_state = pos->gtid_state ? MemoryContextStrdup(w->cxt, pos->gtid_state) : NULL;
	if (old)
		pfree(old);
	w->have_start = true;
}

/* Where the durable position is (binlog_fdw.source_state); false if none. */
static bool
load_position(worker_ctx *w, blpg_position *pos)
{
	MemoryContext cxt = CurrentMemoryContext;
	bool		found;

	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	MemoryContextSwitchTo(cxt);
	found = blpg_state_load(w->cfg->serverid, pos);
	PopActiveSnapshot();
	CommitTransactionCommand();
	MemoryContextSwitchTo(cxt);
	return found || blpg_position_has_state(pos);
}

static void
record_position(worker_ctx *w, const blpg_position *pos)
{
	MemoryContext cxt = CurrentMemoryContext;

	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	blpg_state_save(w->cfg->serverid, pos);
	PopActiveSnapshot();
	CommitTransactionCommand();
	MemoryContextSwitchTo(cxt);	/* the commit left us in TopMemoryContext */
	LWLockAcquire(&w->slot->lock, LW_EXCLUSIVE);
	blpg_position_to_slot(pos, &w->slot->acked);
	LWLockRelease(&w->slot->lock);
}

static void
end_session(worker_ctx *w)
{
	if (w->sink && w->src)
	{
		blpg_position pos;

		blpg_sink_resume_position(w->sink, &pos);
		if (pos.file[0] || blpg_position_has_state(&pos))
			set_start(w, &pos);
		if (pos.gtid_state)
			pfree(pos.gtid_state);
	}
	w->sink = NULL;
	if (w->src)
		bl_source_close(w->src);
	w->src = NULL;
	if (w->schema)
		bl_schema_cache_destroy(w->schema);
	w->schema = NULL;
	if (w->dec)
		bl_decoder_destroy(w->dec);
	w->dec = NULL;
}

/* VmHWM of this process, in kB (0 if unknown). */
static uint64
peak_rss_kb(void)
{
	FILE	   *f = fopen("/proc/self/status", "r");
	char		line[256];
	uint64		kb = 0;

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "VmHWM:", 6) == 0)
		{
			kb = strtoull(line + 6, NULL, 10);
			break;
		}
	fclose(f);
	return kb;
}

static void
update_stats(worker_ctx *w, bool force)
{
	static TimestampTz last = 0;
	static uint64 last_seq = 0;
	TimestampTz now = GetCurrentTimestamp();
	blpg_slot  *slot = w->slot;

	if (!force && now - last < 200 * 1000)
		return;
	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	if (last != 0 && now > last)
		slot->changes_per_sec = (double) (slot->put_seq - last_seq) * 1e6 / (double) (now - last);
	last_seq = slot->put_seq;
	if (w->src)
	{
		strlcpy(slot->read.file, bl_source_file(w->src), sizeof(slot->read.file));
		slot->read.pos = bl_source_position(w->src);
	}
	slot->peak_worker_rss_kb = peak_rss_kb();
	/* a minute of streaming: earlier launches were not a crash loop */
	if (!w->guard_cleared && slot->state == BLPG_STATE_STREAMING &&
		slot->connected_since != 0 && now - slot->connected_since > 60 * USECS_PER_SEC)
	{
		blpg_guard_clear(slot->dboid, slot->serverid);
		w->guard_cleared = true;
	}
	LWLockRelease(&slot->lock);
	last = now;
}

/* Where the first session of a never-started source begins. */
static void
resolve_start(worker_ctx *w)
{
	const char *start = w->cfg->start;
	bl_error	err;
	blpg_position pos;

	memset(&err, 0, sizeof(err));
	memset(&pos, 0, sizeof(pos));
	if (strcmp(start, "current") == 0)
	{
		char	   *gtid = NULL;

		if (bl_source_current_position(w->src, pos.file, sizeof(pos.file), &pos.pos,
									   &gtid, &err) != 0)
			source_error(w, &err);

		/*
		 * MySQL's Executed_Gtid_Set is not read together with the position
		 * (a commit may come between): the set stays unknown until the
		 * next binlog's PREVIOUS_GTIDS (sink.c) rather than be wrong.  A
		 * host list streams by the set alone: the set is the start.
		 */
		if (bl_source_get_info(w->src)->is_mariadb || w->by_gtid)
			pos.gtid_state = pstrdup(gtid);
		free(gtid);
	}
	else if (strcmp(start, "earliest") == 0)
	{
		if (bl_source_first_file(w->src, pos.file, sizeof(pos.file), &err) != 0)
			source_error(w, &err);
		pos.pos = 4;
		/* MySQL host list: what no binlog holds, the set before the oldest file */
		if (w->by_gtid && !bl_source_get_info(w->src)->is_mariadb)
		{
			char	   *purged = NULL;

			if (bl_source_gtid_purged(w->src, &purged, &err) != 0)
				source_error(w, &err);
			pos.gtid_state = pstrdup(purged);
			free(purged);
		}
	}
	else if (strncmp(start, "time:", 5) == 0)
	{
		TimestampTz t = DatumGetTimestampTz(DirectFunctionCall3(timestamptz_in,
																CStringGetDatum(start + 5),
																ObjectIdGetDatum(InvalidOid),
																Int32GetDatum(-1)));

		if (bl_source_locate_time(&w->sopts, (int64) timestamptz_to_time_t(t),
								  pos.file, sizeof(pos.file), &pos.pos, &err) != 0)
			source_error(w, &err);
		ereport(LOG,
				(errmsg("source \"%s\": the first transaction at or after %s is at %s:%llu",
						w->slot->server_name, start + 5, pos.file,
						(unsigned long long) pos.pos)));
	}
	else if (strncmp(start, "gtid:", 5) == 0 && !bl_source_get_info(w->src)->is_mariadb)
	{
		bl_gtid_set *set;
		bl_buf		text;

		/* MySQL: the first transaction not in the set, found by reading */
		if (bl_source_locate_gtid_set(&w->sopts, start + 5, pos.file, sizeof(pos.file),
									  &pos.pos, &err) != 0)
			source_error(w, &err);
		ereport(LOG,
				(errmsg("source \"%s\": the first transaction not in GTID set %s is at %s:%llu",
						w->slot->server_name, start + 5, pos.file,
						(unsigned long long) pos.pos)));
		/* every transaction before it is in the set: the executed set */
		set = bl_gtid_set_parse(start + 5, strlen(start + 5), &err);
		if (set == NULL)
			source_error(w, &err);
		bl_buf_init(&text);
		if (bl_gtid_set_text(set, &text) != 0)
		{
			bl_gtid_set_free(set);
			ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
		}
		pos.gtid_state = pnstrdup(text.data ? text.data : "", text.len);
		bl_buf_free(&text);
		bl_gtid_set_free(set);
	}
	else if (strncmp(start, "gtid:", 5) == 0)
		pos.gtid_state = pstrdup(start + 5);
	else
	{
		const char *colon = strrchr(start, ':');

		snprintf(pos.file, sizeof(pos.file), "%.*s", (int) (colon - start), start);
		pos.pos = strtoull(colon + 1, NULL, 10);
	}
	/* a host list resumes by GTID state: the one at a file:pos start */
	if (w->by_gtid && !blpg_position_has_state(&pos) && !bl_source_get_info(w->src)->is_mariadb)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("source \"%s\": a MySQL source with several hosts cannot start at \"%s\"",
						w->slot->server_name, start),
				 errdetail("With several hosts the worker follows the source by GTID set, and MySQL does not tell the GTID set at a binlog position."),
				 errhint("Start at earliest, current or gtid:SET: ALTER SERVER %s OPTIONS (SET start 'gtid:...'), then binlog_fdw.reset() and binlog_fdw.start().",
						 quote_identifier(w->slot->server_name))));
	if (w->by_gtid && !blpg_position_has_state(&pos) && pos.file[0] != '\0')
	{
		char	   *state = NULL;

		if (bl_source_gtid_at(w->src, pos.file, pos.pos, &state, &err) != 0)
			source_error(w, &err);
		pos.gtid_state = pstrdup(state);
		free(state);
		ereport(LOG,
				(errmsg("source \"%s\": the GTID state at %s:%llu is \"%s\"",
						w->slot->server_name, pos.file, (unsigned long long) pos.pos,
						pos.gtid_state)));
	}
	record_position(w, &pos);
	set_start(w, &pos);
}

static void
process_event(worker_ctx *w, bl_event *ev, bool *stop)
{
	blpg_slot  *slot = w->slot;

	if (ev->type == BL_EV_HEARTBEAT || ev->type == BL_EV_HEARTBEAT_V2)
	{
		LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
		slot->last_heartbeat = slot->last_activity = GetCurrentTimestamp();
		LWLockRelease(&slot->lock);
		return;
	}
	if (ev->timestamp != 0)
	{
		slot->last_event_ts = time_t_to_timestamptz((pg_time_t) ev->timestamp);
		slot->last_activity = GetCurrentTimestamp();
	}
	if (!blpg_sink_event(w->sink, w->dec, ev))
		*stop = true;
}

/*
 * The server is gone (a DROP SERVER stops the worker at commit; this is
 * for a drop the library did not see): nothing should run any more; the
 * apply worker is told to stop, and the last one out frees the slot.
 */
static void
forget_source(blpg_slot *slot)
{
	int			apply_pid;

	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	apply_pid = slot->apply_pid;
	slot->wanted = false;
	slot->stop_requested = true;
	slot->continuous = false;
	LWLockRelease(&slot->lock);
	if (apply_pid > 0)
		kill(apply_pid, SIGTERM);
	proc_exit(0);
}

static bool
server_exists(Oid serverid)
{
	MemoryContext cxt = CurrentMemoryContext;
	bool		exists;

	StartTransactionCommand();
	exists = GetForeignServerExtended(serverid, FSV_MISSING_OK) != NULL;
	CommitTransactionCommand();
	MemoryContextSwitchTo(cxt);
	return exists;
}

/*
 * A reload after a lost position whose reloader is gone before the end
 * (terminated, failed): started again, and it goes on at the next chunk.
 */
static void
check_reload(worker_ctx *w)
{
	MemoryContext cxt = CurrentMemoryContext;
	pid_t		pid;
	bool		pending;

	if (!w->cfg->lost_position_reload ||
		(w->reloader && GetBackgroundWorkerPid(w->reloader, &pid) != BGWH_STOPPED))
		return;
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	pending = blpg_state_reload_tables(w->cfg->serverid) != NIL;
	PopActiveSnapshot();
	CommitTransactionCommand();
	MemoryContextSwitchTo(cxt);
	if (pending)
	{
		ereport(LOG,
				(errmsg("source \"%s\": the reload after the lost position has tables still to copy; starting its reloader again",
						w->cfg->server_name)));
		/* the handle lives as long as the worker */
		MemoryContextSwitchTo(w->cxt);
		(void) blpg_launch_reloader(w->slot, &w->reloader);
		MemoryContextSwitchTo(cxt);
	}
}

static void
exit_if_server_dropped(worker_ctx *w, Oid dboid)
{
	if (server_exists(w->cfg->serverid))
		return;
	ereport(LOG,
			(errmsg("source \"%s\": its foreign server was dropped; the worker stops",
					w->cfg->server_name)));
	forget_source(w->slot);
}

/*
 * Transactions the filters left out, and the source's binlog rotations,
 * put nothing in the ring, so no ack moves the durable position past them.
 * When everything put has been acknowledged and committed, the worker
 * records the position after them itself (every few seconds): a restart
 * then does not read them again, and the source may purge their binlogs.
 */
static void
advance_past_filtered(worker_ctx *w)
{
	static TimestampTz last = 0;
	TimestampTz now = GetCurrentTimestamp();
	blpg_slot  *slot = w->slot;
	blpg_position done;
	char		put_file[BLPG_FILE_LEN];
	uint64		put_pos;
	bool		all_acked;

	if (now - last < 5 * USECS_PER_SEC ||
		!blpg_sink_filtered_tail(w->sink, &done, put_file, &put_pos))
		return;
	last = now;
	LWLockAcquire(&slot->lock, LW_SHARED);
	/* nothing out, and the durable position is after the last change put */
	all_acked = slot->nbatches == 0 && slot->ack_seq == slot->put_seq &&
		slot->acked.skip == 0 && slot->acked.pos == put_pos &&
		strcmp(slot->acked.file, put_file) == 0;
	strlcpy(done.gtid, slot->acked.gtid, sizeof(done.gtid));	/* last delivered */
	LWLockRelease(&slot->lock);
	if (all_acked)
	{
		record_position(w, &done);
		blpg_sink_filtered_recorded(w->sink);
	}
	if (done.gtid_state)
		pfree(done.gtid_state);
}

typedef struct function_defaults
{
	worker_ctx *w;
	StringInfoData list;		/* "db.t.col (default), ..." */
	int			n;
} function_defaults;

static void
function_default_found(void *arg, const char *schema, const char *table,
					   const char *column, const char *default_text)
{
	function_defaults *fd = arg;

	if (!blpg_filter_match(fd->w->filter, schema, strlen(schema), table, strlen(table)))
		return;
	ereport(WARNING,
			(errcode(ERRCODE_WARNING),
			 errmsg("source \"%s\": column %s.%s.%s has the default %s, which a row image that is not FULL does not carry: apply gives such rows the target's own default",
					fd->w->cfg->server_name, schema, table, column, default_text),
			 errdetail("MySQL leaves the columns an INSERT does not name out of the row image when binlog_row_image is MINIMAL or NOBLOB, so their value computed on the source is not in the binlog."),
			 errhint("Set binlog_row_image=FULL on the source to reproduce these values exactly.")));
	appendStringInfo(&fd->list, "%s%s.%s.%s (%s)", fd->n++ ? ", " : "", schema, table, column,
					 default_text);
}

/*
 * A row image that is not FULL is not an error: apply writes the columns
 * present (inserts take the target's defaults for the others).  Said once
 * per worker in the log and kept in the status view; on MySQL, columns of
 * captured tables whose default is computed at insert are warned about
 * (MariaDB logs such columns in the image, MySQL does not).
 */
static void
row_image_notice(worker_ctx *w, const bl_source_info *info)
{
	StringInfoData notice;
	MemoryContext old;

	LWLockAcquire(&w->slot->lock, LW_EXCLUSIVE);
	strlcpy(w->slot->binlog_row_image, info->binlog_row_image, sizeof(w->slot->binlog_row_image));
	w->slot->source_notice[0] = '\0';
	/* checked again on this session's first event */
	w->slot->source_oldest_file[0] = '\0';
	w->slot->retention_files = -2;
	w->slot->binlog_expire_seconds = -1;
	w->last_retention_check = 0;
	LWLockRelease(&w->slot->lock);
	if (info->binlog_row_image[0] == '\0' || pg_strcasecmp(info->binlog_row_image, "FULL") == 0)
		return;
	initStringInfo(&notice);
	appendStringInfo(&notice, "binlog_row_image is %s: row images hold the key and the columns a statement gave or changed%s; apply updates only the columns present and inserts take the target's defaults for the others",
					 info->binlog_row_image,
					 pg_strcasecmp(info->binlog_row_image, "NOBLOB") == 0 ?
					 " (all columns but unchanged BLOB and TEXT ones)" : "");
	/* told already (a reconnect): the same notice, no new warnings */
	if (w->row_image_base == NULL || strcmp(w->row_image_base, notice.data) != 0)
	{
		char	   *base = pstrdup(notice.data);

		if (!info->is_mariadb)
		{
			function_defaults fd;
			bl_error	err;

			memset(&err, 0, sizeof(err));
			fd.w = w;
			fd.n = 0;
			initStringInfo(&fd.list);
			if (bl_source_function_defaults(w->src, function_default_found, &fd, &err) != 0)
				ereport(WARNING,
						(errcode(ERRCODE_WARNING),
						 errmsg("source \"%s\": %s", w->cfg->server_name, err.message)));
			if (fd.n)
				appendStringInfo(&notice, "; not reproduced exactly (computed MySQL defaults): %s",
								 fd.list.data);
		}
		ereport(LOG,
				(errcode(ERRCODE_SUCCESSFUL_COMPLETION),
				 errmsg("source \"%s\": %s", w->cfg->server_name, notice.data)));
		old = MemoryContextSwitchTo(TopMemoryContext);
		if (w->row_image_base)
			pfree(w->row_image_base);
		if (w->row_image_full)
			pfree(w->row_image_full);
		w->row_image_base = pstrdup(base);
		w->row_image_full = pstrdup(notice.data);
		MemoryContextSwitchTo(old);
	}
	LWLockAcquire(&w->slot->lock, LW_EXCLUSIVE);
	strlcpy(w->slot->source_notice, w->row_image_full, sizeof(w->slot->source_notice));
	LWLockRelease(&w->slot->lock);
}

/* ---- the source's binlog retention against the acknowledged position ---- */

/*
 * List the source's binlog files (a connection of its own) and compare the
 * oldest with the acknowledged file: status shows how many files the
 * source keeps before it, and the worker warns, once per acknowledged file
 * each, when the next purge takes it (the source expires binlogs) and when
 * one has taken it (a restart could not resume).  A failure leaves it "not known".
 */
static void
check_retention(worker_ctx *w)
{
	char	  **files = NULL;
	int			nfiles = 0;
	int64_t		expire = 0;
	bl_error	err;
	char		acked[BLPG_FILE_LEN];
	uint64		acked_pos;
	int			older = -2;

	memset(&err, 0, sizeof(err));
	w->last_retention_check = GetCurrentTimestamp();
	if (bl_source_retention(&w->sopts, &files, &nfiles, &expire, &err) != 0)
	{
		ereport(DEBUG1,
				(errmsg_internal("source \"%s\": binlog retention not read: %s",
								 w->cfg->server_name, err.message)));
		LWLockAcquire(&w->slot->lock, LW_EXCLUSIVE);
		w->slot->source_oldest_file[0] = '\0';
		w->slot->retention_files = -2;
		w->slot->binlog_expire_seconds = -1;
		LWLockRelease(&w->slot->lock);
		return;
	}
	LWLockAcquire(&w->slot->lock, LW_SHARED);
	strlcpy(acked, w->slot->acked.file, sizeof(acked));
	acked_pos = w->slot->acked.pos;
	LWLockRelease(&w->slot->lock);
	if (acked[0])
	{
		for (int i = 0; i < nfiles && older < 0; i++)
			if (strcmp(files[i], acked) == 0)
				older = i;
		/* the same base name, a number of fixed width: names sort as files */
		if (older < 0 && strcmp(acked, files[0]) < 0)
			older = -1;
	}
	LWLockAcquire(&w->slot->lock, LW_EXCLUSIVE);
	if (strlen(files[0]) < sizeof(w->slot->source_oldest_file))
		strcpy(w->slot->source_oldest_file, files[0]);
	else
		w->slot->source_oldest_file[0] = '\0';
	w->slot->retention_files = older;
	w->slot->binlog_expire_seconds = expire;
	LWLockRelease(&w->slot->lock);

	if (acked[0])
	{
		if (older == -1 && strcmp(w->warned_purged, acked) != 0)
		{
			ereport(WARNING,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("source \"%s\": the source has purged binlog %s, which holds the acknowledged position %s:%llu",
							w->cfg->server_name, acked, acked, (unsigned long long) acked_pos),
					 errdetail("Its oldest binlog is %s. The worker streams on from memory, but after a restart of the worker or of PostgreSQL it cannot resume there.",
							   files[0]),
					 errhint("Apply or acknowledge the changes read so far (binlog_fdw.apply(), ack()) so that the position moves to a binlog the source still has.")));
			strlcpy(w->warned_purged, acked, sizeof(w->warned_purged));
		}
		else if (older == 0 && nfiles > 1 && expire > 0 && strcmp(w->warned_oldest, acked) != 0)
		{
			ereport(WARNING,
					(errcode(ERRCODE_WARNING),
					 errmsg("source \"%s\": the acknowledged position %s:%llu is in the source's oldest binlog, the next one it purges",
							w->cfg->server_name, acked, (unsigned long long) acked_pos),
					 errdetail("The source expires binlogs after %lld seconds; once %s is purged, a restart of the worker cannot resume there.",
							   (long long) expire, acked),
					 errhint("Apply or acknowledge the changes the source holds (binlog_fdw.apply(), ack()), or keep the source's binlogs longer (binlog_expire_logs_seconds).")));
			strlcpy(w->warned_oldest, acked, sizeof(w->warned_oldest));
		}
	}
	bl_source_free_files(files, nfiles);
}

/* ---- the schema history at the start position ---- */

typedef struct seed_item
{
	char	   *schema;
	char	   *table;
	char	   *charset;
	char	   *unknown;
} seed_item;

typedef struct history_prep
{
	worker_ctx *w;
	List	   *tables;			/* seed_item: captured tables the history lacks */
	List	   *dbs;			/* seed_item: databases */
	bool		full;			/* binlog_row_metadata=FULL */
	char	   *conflict;		/* the first table changed after the start */
	char	   *conflict_file;
	uint64		conflict_pos;
	char	   *conflict_sql;
} history_prep;

static void
table_found(void *arg, const char *schema, const char *table, const char *charset)
{
	history_prep *hp = arg;
	seed_item  *it;

	if (!blpg_filter_match(hp->w->filter, schema, strlen(schema), table, strlen(table)) ||
		blpg_history_knows(hp->w->history, schema, table))
		return;
	it = palloc0(sizeof(seed_item));
	it->schema = pstrdup(schema);
	it->table = pstrdup(table);
	it->charset = pstrdup(charset);
	hp->tables = lappend(hp->tables, it);
}

static void
db_found(void *arg, const char *schema, const char *table, const char *charset)
{
	history_prep *hp = arg;
	seed_item  *it;

	if (blpg_history_knows(hp->w->history, schema, ""))
		return;
	it = palloc0(sizeof(seed_item));
	it->schema = pstrdup(schema);
	it->table = "";
	it->charset = pstrdup(charset);
	hp->dbs = lappend(hp->dbs, it);
}

static int
statement_found(void *arg, const char *db, const char *sql, size_t sqllen,
				const char *file, uint64_t pos)
{
	history_prep *hp = arg;
	char	   *table;
	List	   *dropped;
	ListCell   *lc;
	bool		conflict;

	conflict = blpg_history_scan_statement(hp->w->history, db, sql, &table, &dropped);
	/* dropped whole: unknown before the DROP, followed by the history after */
	foreach(lc, hp->tables)
	{
		seed_item  *it = lfirst(lc);
		ListCell   *d;

		if (it->unknown != NULL)
			continue;
		foreach(d, dropped)
			if (strcmp(psprintf("%s.%s", it->schema, it->table), lfirst(d)) == 0)
				it->unknown = psprintf("dropped at binlog %s position %llu: its rows events before that position have no known definition; set binlog_row_metadata=FULL on the source, or start after that position",
									   file, (unsigned long long) pos);
	}
	if (!conflict)
		return 0;
	/* with FULL metadata the table's events carry their names: unknown is enough */
	foreach(lc, hp->tables)
	{
		seed_item  *it = lfirst(lc);

		if (it->unknown == NULL && strcmp(psprintf("%s.%s", it->schema, it->table), table) == 0)
			it->unknown = psprintf("changed at binlog %s position %llu after the position the history starts at",
								   file, (unsigned long long) pos);
	}
	if (hp->conflict == NULL)
	{
		hp->conflict = table;
		hp->conflict_file = pstrdup(file);
		hp->conflict_pos = pos;
		hp->conflict_sql = pnstrdup(sql, Min(sqllen, 200));
	}
	return hp->full ? 0 : 1;
}

/*
 * Load the history at the start position and seed the captured tables it
 * does not know from information_schema, once it is sure that no DDL
 * changed them between that position and now; otherwise refuse (unless
 * the TABLE_MAPs carry their own names).
 */
static void
prepare_history(worker_ctx *w, const bl_source_info *info)
{
	MemoryContext cxt = CurrentMemoryContext;
	history_prep hp;
	bl_error	err;
	ListCell   *lc;

	memset(&hp, 0, sizeof(hp));
	memset(&err, 0, sizeof(err));
	hp.w = w;
	hp.full = pg_strcasecmp(info->binlog_row_metadata, "FULL") == 0;
	{
		char		name[NAMEDATALEN];

		/* the rows follow a RENAME of the server */
		LWLockAcquire(&w->slot->lock, LW_SHARED);
		strlcpy(name, w->slot->server_name, sizeof(name));
		LWLockRelease(&w->slot->lock);
		blpg_history_set_name(w->history, name);
	}
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	blpg_history_load(w->history);
	PopActiveSnapshot();
	CommitTransactionCommand();
	MemoryContextSwitchTo(cxt);

	/* information_schema first, then the binlog up to its end */
	if (bl_schema_cache_list(w->schema, table_found, db_found, &hp, &err) != 0)
		source_error(w, &err);
	if (hp.tables != NIL &&
		bl_source_scan_statements(&w->sopts, w->start.file, w->start.pos,
								  w->start.gtid_state ? w->start.gtid_state : "",
								  statement_found, &hp, &err) != 0)
		source_error(w, &err);
	if (hp.conflict && !hp.full)
	{
		set_state(w->slot, BLPG_STATE_ERROR);
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("source \"%s\": the definition of table %s at the start position %s:%llu is unknown: the table was changed at binlog %s position %llu (%s)",
						w->cfg->server_name, hp.conflict,
						w->start.file[0] ? w->start.file : "(GTID)",
						(unsigned long long) w->start.pos, hp.conflict_file,
						(unsigned long long) hp.conflict_pos, hp.conflict_sql),
				 errdetail("With binlog_row_metadata=%s the rows events before that change carry no column names, and today's definition from information_schema could put their values into the wrong columns.",
						   info->binlog_row_metadata[0] ? info->binlog_row_metadata : "MINIMAL"),
				 errhint("Set binlog_row_metadata=FULL on the source before the events to replay are written, or take a snapshot (binlog_fdw.snapshot()) and stream from its position, or start at a position after that change."),
				 errcontext("binlog file %s, position %llu", hp.conflict_file,
							(unsigned long long) hp.conflict_pos)));
	}
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	blpg_history_lock_server(w->history, w->cfg->serverid);
	foreach(lc, hp.tables)
	{
		seed_item  *it = lfirst(lc);
		const bl_schema_table *def = it->unknown ? NULL :
			bl_schema_cache_lookup(w->schema, it->schema, it->table);

		if (def == NULL && it->unknown == NULL)
			it->unknown = "not found in information_schema when the history began";
		blpg_history_seed(w->history, it->schema, it->table, def, it->charset, it->unknown,
						  &w->start);
	}
	foreach(lc, hp.dbs)
	{
		seed_item  *it = lfirst(lc);

		blpg_history_seed(w->history, it->schema, "", NULL, it->charset, NULL, &w->start);
	}
	PopActiveSnapshot();
	CommitTransactionCommand();
	MemoryContextSwitchTo(cxt);
	if (hp.tables != NIL)
		ereport(LOG,
				(errmsg("source \"%s\": schema history of %d table(s) begun at %s:%llu from information_schema",
						w->cfg->server_name, list_length(hp.tables),
						w->start.file[0] ? w->start.file : "(GTID)",
						(unsigned long long) w->start.pos)));
	w->history_ready = true;
}

static void
run_session(worker_ctx *w)
{
	blpg_slot  *slot = w->slot;
	bl_error	err;
	const bl_source_info *info;
	bl_decoder_options dopts;
	MemoryContext event_cxt;
	MemoryContext old;
	bool		stop = false;
	bool		by_set;

	memset(&err, 0, sizeof(err));
	set_state(slot, BLPG_STATE_CONNECTING);
	w->sopts.host = w->cfg->hosts[w->host].host;
	w->sopts.port = (unsigned) w->cfg->hosts[w->host].port;
	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	strlcpy(slot->source_host, w->cfg->hosts[w->host].label, sizeof(slot->source_host));
	LWLockRelease(&slot->lock);
	w->src = bl_source_connect(&w->sopts, &err);
	if (w->src == NULL)
		source_error(w, &err);
	info = bl_source_get_info(w->src);
	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	strlcpy(slot->source_version, info->version, sizeof(slot->source_version));
	strlcpy(slot->binlog_format, info->binlog_format, sizeof(slot->binlog_format));
	LWLockRelease(&slot->lock);
	if (bl_source_check(w->src, &err) != 0)
	{
		set_state(slot, BLPG_STATE_ERROR);
		source_error(w, &err);
	}
	row_image_notice(w, info);
	if (w->by_gtid && !info->is_mariadb && !info->gtid_mode)
	{
		set_state(slot, BLPG_STATE_ERROR);
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("source \"%s\": host lists need GTIDs, but host %s (%s) has gtid_mode OFF",
						w->cfg->server_name, w->cfg->hosts[w->host].label, info->version),
				 errdetail("With several hosts the worker follows the source from server to server by GTID set; binlog file names and positions differ between servers."),
				 errhint("Set gtid_mode=ON (and enforce_gtid_consistency=ON) on every MySQL host, or give the source a single host: ALTER SERVER %s OPTIONS (SET host '...').",
						 quote_identifier(w->cfg->server_name))));
	}
	w->schema = bl_schema_cache_create(&w->sopts, &err);
	if (w->schema == NULL)
		source_error(w, &err);
	bl_decoder_options_init(&dopts);
	if (w->history)
	{
		/* the definitions at each event's position */
		dopts.schema_lookup = blpg_history_lookup;
		dopts.schema_arg = w->history;
		dopts.schema_at_position = true;
		dopts.schema_what = "the schema history";
	}
	else
	{
		dopts.schema_lookup = bl_schema_cache_lookup;
		dopts.schema_arg = w->schema;
	}
	w->dec = bl_decoder_create(&dopts);
	if (w->dec == NULL)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));

	if (!w->have_start)
		resolve_start(w);
	/* MySQL with GTIDs: by the set once it is known (a host list: always) */
	by_set = !info->is_mariadb && info->gtid_mode && w->start.gtid_state != NULL &&
		!(w->by_set_off && !w->by_gtid);
	w->session_by_set = by_set || (w->by_gtid && !info->is_mariadb);
	/* a MySQL host list without a known set would read from the oldest binlog */
	if (w->by_gtid && !info->is_mariadb && w->start.gtid_state == NULL)
	{
		set_state(slot, BLPG_STATE_ERROR);
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("source \"%s\": the position %s:%llu has no GTID set, which a MySQL source with several hosts resumes by",
						w->cfg->server_name, w->start.file, (unsigned long long) w->start.pos),
				 errdetail("The position was recorded before the GTID set read was known (a single host that started at a file position, or before the first binlog's PREVIOUS_GTIDS)."),
				 errhint("Give the source a single host until its status shows a gtid_state, or reset it (binlog_fdw.reset()) and start it at earliest, current or gtid:SET.")));
	}
	if (w->history && !w->history_ready)
		prepare_history(w, info);
	if (w->by_gtid)
	{
		const char *state = w->start.gtid_state ? w->start.gtid_state : "";

		/* this host must have every transaction of our state (and the open one) */
		if (bl_source_check_gtid_state(w->src, state,
									   w->start.skip > 0 ? w->start.gtid : NULL, &err) != 0)
			source_error(w, &err);
		if (w->streamed_host != w->host)
			ereport(LOG,
					(errmsg("source \"%s\": streaming from host %s (%d of %d) at GTID state \"%s\"%s",
							w->cfg->server_name, w->cfg->hosts[w->host].label, w->host + 1,
							w->cfg->nhosts, state,
							w->start.skip > 0 ?
							psprintf(", skipping the first %llu changes of transaction %s",
									 (unsigned long long) w->start.skip,
									 w->start.gtid[0] ? w->start.gtid : "(the first)") : "")));
		if (bl_source_start_dump_at(w->src, w->dec, "", 4, state, &err) != 0)
			source_error(w, &err);
	}
	else if (by_set)
	{
		if (bl_source_start_dump_at(w->src, w->dec, "", 4, w->start.gtid_state, &err) != 0)
			source_error(w, &err);
	}
	else if (bl_source_start_dump_at(w->src, w->dec, w->start.file, w->start.pos,
									 w->start.file[0] ? NULL :
									 (w->start.gtid_state ? w->start.gtid_state : ""),
									 &err) != 0)
		source_error(w, &err);
	w->sink = blpg_sink_create(slot, w->filter, w->start.file, w->start.pos,
							   w->start.skip, w->start.gtid_state);
	if (w->by_gtid || by_set)
		blpg_sink_set_skip_gtid(w->sink, w->start.gtid);
	if (w->history)
		blpg_sink_set_history(w->sink, w->history);
	set_state(slot, BLPG_STATE_STREAMING);

	event_cxt = AllocSetContextCreate(CurrentMemoryContext, "binlog_fdw event",
									  ALLOCSET_DEFAULT_SIZES);
	while (!stop)
	{
		const uint8_t *data;
		size_t		len;
		uint64_t	pos;
		bl_event	ev;
		int			rc;

		CHECK_FOR_INTERRUPTS();
		if (should_stop(slot) || slot->rewind_requested)
			break;
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		MemoryContextReset(event_cxt);
		old = MemoryContextSwitchTo(event_cxt);

		rc = bl_source_next(w->src, w->dec, &data, &len, &pos, &err);
		if (rc <= 0)
		{
			if (rc == 0)
				bl_error_set(&err, BL_ERR_IO, "the source ended the binlog stream");
			source_error(w, &err);
		}
		slot->bytes_read += len;
		if (bl_decode_event(w->dec, data, len, pos, &ev, &err) != 0)
			blpg_report_decoder_error(ERROR, &err, w->cfg->server_name);
		process_event(w, &ev, &stop);
		/* the host serves us: a failure from now on retries it first */
		if (!w->streamed && !blpg_sink_skip_pending(w->sink))
		{
			w->streamed = true;
			w->streamed_host = w->host;
		}
		if (blpg_sink_restart_wanted(w->sink))
		{
			ereport(LOG,
					(errmsg("source \"%s\": transaction %s is complete; reconnecting to host %s for the transactions of other GTID domains that came before it",
							w->cfg->server_name, w->start.gtid, w->cfg->hosts[w->host].label)));
			w->reconnect_now = true;
			stop = true;
		}
		if (!stop && ev.type == BL_EV_TRANSACTION_PAYLOAD)
		{
			bl_event	inner;

			while (!stop && (rc = bl_payload_next(w->dec, &inner, &err)) == 1)
				process_event(w, &inner, &stop);
			if (rc < 0)
				blpg_report_decoder_error(ERROR, &err, w->cfg->server_name);
		}
		if (blpg_sink_take_ddl_seen(w->sink))
		{
			/* names and types may have changed */
			bl_schema_cache_invalidate(w->schema, NULL, NULL);
			bl_decoder_reset_tables(w->dec);
		}
		MemoryContextSwitchTo(old);
		update_stats(w, false);
		advance_past_filtered(w);
		if (GetCurrentTimestamp() - w->last_server_check > 10 * USECS_PER_SEC)
		{
			w->last_server_check = GetCurrentTimestamp();
			exit_if_server_dropped(w, MyDatabaseId);
			check_reload(w);
		}
		if (blpg_retention_check_interval > 0 &&
			GetCurrentTimestamp() - w->last_retention_check >=
			(int64) blpg_retention_check_interval * USECS_PER_SEC)
			check_retention(w);
	}
	MemoryContextDelete(event_cxt);
	update_stats(w, true);
}

/* Wait up to ms, waking on latch (stop requests); false if stopping. */
static bool
nap(blpg_slot *slot, long ms)
{
	TimestampTz until = GetCurrentTimestamp() + ms * 1000;

	while (!should_stop(slot))
	{
		long		left = (until - GetCurrentTimestamp()) / 1000;

		if (left <= 0)
			return true;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 Min(left, 1000), PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	return false;
}

/*
 * After a reloader was started for a lost position: once it has recorded
 * the position it moved the source to, stream from there (ring emptied,
 * schema history read again at the new position).
 */
static void
follow_reload(worker_ctx *w)
{
	blpg_position durable;

	if (!load_position(w, &durable))
		return;
	if (strcmp(durable.file, w->start.file) != 0 || durable.pos != w->start.pos)
	{
		blpg_ring_reset(w->slot);
		w->history_ready = false;
		set_start(w, &durable);
		w->reload_started = false;
		LWLockAcquire(&w->slot->lock, LW_EXCLUSIVE);
		blpg_position_to_slot(&w->start, &w->slot->acked);
		LWLockRelease(&w->slot->lock);
		ereport(LOG,
				(errmsg("source \"%s\": streaming from %s:%llu, where the reload after the lost position began",
						w->cfg->server_name, w->start.file, (unsigned long long) w->start.pos)));
	}
	if (durable.gtid_state)
		pfree(durable.gtid_state);
}

void
blpg_worker_main(Datum main_arg)
{
	int			index = DatumGetInt32(main_arg);
	blpg_slot  *slot;
	worker_ctx	w;
	Oid			dboid,
				serverid,
				userid;
	volatile long delay = 1000;
	MemoryContext worker_cxt;
	bool		mine;
	volatile bool resume_reload = false;

	pqsignal(SIGTERM, handle_sigterm);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();
	blpg_worker_require_shmem("binlog_fdw source worker");
	if (index < 0 || index >= blpg_shared->max_sources)
		proc_exit(0);

	slot = &blpg_shared->slots[index];
	LWLockAcquire(&blpg_shared->lock, LW_SHARED);
	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	/* launched for this allocation of the slot, and the only one */
	mine = slot->in_use && slot->token == blpg_worker_token() && slot->worker_pid == 0;
	dboid = slot->dboid;
	serverid = slot->serverid;
	userid = slot->userid;
	if (mine)
	{
		slot->worker_pid = MyProcPid;
		slot->state = BLPG_STATE_STARTING;
	}
	LWLockRelease(&slot->lock);
	LWLockRelease(&blpg_shared->lock);
	if (!mine)
		proc_exit(0);
	before_shmem_exit(worker_exit, PointerGetDatum(slot));

	BackgroundWorkerInitializeConnectionByOid(dboid, userid, 0);
	pgstat_report_appname("binlog_fdw worker");

	memset(&w, 0, sizeof(w));
	w.slot = slot;
	worker_cxt = AllocSetContextCreate(TopMemoryContext, "binlog_fdw worker",
									   ALLOCSET_DEFAULT_SIZES);
	w.cxt = worker_cxt;
	MemoryContextSwitchTo(worker_cxt);

	/*
	 * The options and the durable position.  Should that fail (no user
	 * mapping, an orphaned position of this server), the source stays in
	 * state "error" with the message and tries again every 30 s.
	 */
	for (;;)
	{
		volatile bool dropped = false;
		volatile bool ok = false;

		PG_TRY();
		{
			StartTransactionCommand();
			PushActiveSnapshot(GetTransactionSnapshot());
			if (GetForeignServerExtended(serverid, FSV_MISSING_OK) == NULL)
				dropped = true;
			else
			{
				MemoryContext old = MemoryContextSwitchTo(worker_cxt);

				w.cfg = blpg_load_config(serverid, userid);
				w.filter = blpg_filter_create(w.cfg->include, w.cfg->exclude);
				w.have_start = blpg_state_load(serverid, &w.start);
				/* binlog_fdw.filters as of this start, recorded with its position */
				blpg_filter_load_rules(w.filter, w.cfg->server_name, true,
									   w.have_start ? &w.start : NULL);
				if (!blpg_tables_legacy())
				{
					w.history = blpg_history_create(w.cfg->server_name, w.filter, worker_cxt);
					/* a reload after a lost position that has not finished */
					resume_reload = w.cfg->lost_position_reload &&
						blpg_state_reload_tables(serverid) != NIL;
				}
				MemoryContextSwitchTo(old);
			}
			PopActiveSnapshot();
			CommitTransactionCommand();
			ok = true;
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			MemoryContextSwitchTo(worker_cxt);
			edata = CopyErrorData();
			FlushErrorState();
			AbortCurrentTransaction();
			LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
			snprintf(slot->last_error, sizeof(slot->last_error), "%s%s%s%s%s",
					 edata->message, edata->detail ? " DETAIL: " : "",
					 edata->detail ? edata->detail : "",
					 edata->hint ? " HINT: " : "", edata->hint ? edata->hint : "");
			slot->last_error_time = GetCurrentTimestamp();
			slot->last_error_cleared = 0;
			slot->state = BLPG_STATE_ERROR;
			LWLockRelease(&slot->lock);
			ereport(LOG,
					(errcode(edata->sqlerrcode),
					 errmsg("%s", edata->message),
					 edata->detail ? errdetail("%s", edata->detail) : 0,
					 edata->hint ? errhint("%s", edata->hint) : 0));
			FreeErrorData(edata);
		}
		PG_END_TRY();
		MemoryContextSwitchTo(worker_cxt);
		if (dropped)
		{
			ereport(LOG,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("source with server OID %u: the foreign server was dropped; the worker stops",
							serverid)));
			forget_source(slot);
		}
		if (ok)
			break;
		if (!nap(slot, 30000))
			proc_exit(0);
	}

	pgstat_report_activity(STATE_RUNNING, psprintf("binlog_fdw source %s", w.cfg->server_name));
	bl_source_options_init(&w.sopts);
	w.by_gtid = w.cfg->nhosts > 1;
	w.streamed_host = -1;
	w.sopts.user = w.cfg->user;
	w.sopts.password = w.cfg->password;
	w.sopts.server_id = (uint32) w.cfg->server_id;
	w.sopts.heartbeat_seconds = w.cfg->heartbeat;
	w.sopts.connect_timeout = w.cfg->connect_timeout;
	w.sopts.ssl_mode = w.cfg->ssl_mode;
	w.sopts.ssl_ca = w.cfg->ssl_ca;
	w.sopts.ssl_cert = w.cfg->ssl_cert;
	w.sopts.ssl_key = w.cfg->ssl_key;

	blpg_ring_reset(slot);
	LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
	strlcpy(slot->server_name, w.cfg->server_name, NAMEDATALEN);
	if (w.have_start)
		blpg_position_to_slot(&w.start, &slot->acked);
	slot->rewind_requested = false;
	LWLockRelease(&slot->lock);
	/* its position is recorded already: it only copies on */
	if (resume_reload)
		(void) blpg_launch_reloader(slot, &w.reloader);

	while (!should_stop(slot))
	{
		MemoryContext session_cxt = AllocSetContextCreate(worker_cxt, "binlog_fdw session",
														  ALLOCSET_DEFAULT_SIZES);
		bool		rewind;

		w.streamed = false;
		w.reconnect_now = false;
		w.position_lost = false;
		if (w.reload_started)
			follow_reload(&w);
		MemoryContextSwitchTo(session_cxt);
		PG_TRY();
		{
			run_session(&w);
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			MemoryContextSwitchTo(worker_cxt);
			edata = CopyErrorData();
			FlushErrorState();
			if (IsTransactionState())
				AbortCurrentTransaction();

			/*
			 * A read that SIGTERM cut short (TLS reads report it as an
			 * error) is the stop, not an error of the source.
			 */
			/*
			 * MySQL refuses a GTID dump that reaches an anonymous transaction
			 * (binlogs from before gtid_mode=ON): a single host resumes by
			 * file and position from then on, as before the set was known.
			 */
			if (w.session_by_set && w.cfg->nhosts == 1 && !w.by_set_off &&
				strstr(edata->message, "anonymous transaction") != NULL &&
				strstr(edata->message, "AUTO_POSITION") != NULL)
			{
				w.by_set_off = true;
				ereport(LOG,
						(errcode(ERRCODE_SUCCESSFUL_COMPLETION),
						 errmsg("source \"%s\": the binlog has anonymous transactions after the GTID set read; resuming by file and position",
								w.cfg->server_name)));
			}
			if (!should_stop(slot))
			{
				LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
				/* the context names the binlog file and position */
				snprintf(slot->last_error, sizeof(slot->last_error), "%s%s%s%s%s",
						 edata->message, edata->context ? " CONTEXT: " : "",
						 edata->context ? edata->context : "",
						 edata->hint ? " HINT: " : "",
						 edata->hint ? edata->hint : "");
				slot->last_error_time = GetCurrentTimestamp();
				slot->last_error_cleared = 0;
				if (slot->state != BLPG_STATE_ERROR)
					slot->state = BLPG_STATE_RECONNECTING;
				LWLockRelease(&slot->lock);
				ereport(LOG,
						(errcode(edata->sqlerrcode),
						 errmsg("%s", edata->message),
						 edata->hint ? errhint("%s", edata->hint) : 0,
						 edata->context ? errcontext("%s", edata->context) : 0));
				/* lost_position 'reload': the reloader moves the position on */
				if (w.position_lost && w.cfg->lost_position_reload && !w.reload_started)
				{
					blpg_ring_reset(slot);
					if (blpg_launch_reloader(slot, &w.reloader))
						w.reload_started = true;
				}
			}
			FreeErrorData(edata);
		}
		PG_END_TRY();
		MemoryContextSwitchTo(worker_cxt);
		end_session(&w);
		MemoryContextDelete(session_cxt);

		LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
		rewind = slot->rewind_requested;
		slot->rewind_requested = false;
		LWLockRelease(&slot->lock);
		if (rewind)
		{
			blpg_position durable;

			/*
			 * Consumers lost changes they had released: start over at the
			 * durable position, read again from binlog_fdw.source_state (the
			 * slot shows no GTID state; an acknowledgement that committed
			 * while the ring was reset is there too).
			 */
			blpg_ring_reset(slot);
			w.history_ready = false;	/* read again at the durable position */
			if (load_position(&w, &durable))
				set_start(&w, &durable);
			else
				w.have_start = false;
			if (durable.gtid_state)
				pfree(durable.gtid_state);
			ereport(LOG,
					(errmsg("source \"%s\": a consumer rolled back changes whose ring space it had released; streaming again from the durable position %s:%llu",
							w.cfg->server_name, w.start.file, (unsigned long long) w.start.pos)));
			LWLockAcquire(&slot->lock, LW_EXCLUSIVE);
			blpg_position_to_slot(&w.start, &slot->acked);
			LWLockRelease(&slot->lock);
			delay = 1000;
			continue;
		}
		if (should_stop(slot))
			break;
		if (w.reconnect_now)
		{
			w.reconnect_now = false;
			continue;
		}
		if (w.streamed)
		{
			delay = 1000;
			w.tried = 0;
		}
		else if (w.cfg->nhosts > 1)
		{
			/* the next host right away, until each was tried once */
			w.host = (w.host + 1) % w.cfg->nhosts;
			if (++w.tried < w.cfg->nhosts)
				continue;
			w.tried = 0;
		}
		/* the reloader records the new position within seconds */
		if (w.reload_started)
			delay = 1000;
		set_state(slot, slot->state == BLPG_STATE_ERROR ? BLPG_STATE_ERROR : BLPG_STATE_RECONNECTING);
		if (!nap(slot, delay))
			break;
		delay = Min(delay * 2, 30000);
	}
	/* a restart without stop() keeps what this worker counted */
	if (slot->in_use && slot->worker_pid == MyProcPid)
		blpg_worker_stats_flush(slot, serverid, w.cfg->server_name);
	proc_exit(0);
}
