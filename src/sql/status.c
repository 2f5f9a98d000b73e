/*
 * status.c
 *	  binlog_fdw.status(): one row per started source, from its slot (the
 *	  binlog_fdw.status view selects it), and one per orphaned row of
 *	  binlog_fdw.source_state (state "orphaned": a position no server of
 *	  this database has).  The GTID state, which has no size limit and so
 *	  no place in the slot, is the durable one in binlog_fdw.source_state:
 *	  that of the acknowledged position.
 */
#include "sql/sql.h"

#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(binlog_fdw_status);

#define STATUS_COLS 41

static Datum
text_or_null(const char *s, bool *isnull)
{
	*isnull = s == NULL || s[0] == '\0';
	return *isnull ? (Datum) 0 : CStringGetTextDatum(s);
}

/*
 * Rows of binlog_fdw.source_state that no server has: state "orphaned",
 * their position, and what to do in last_error.
 */
static void
put_orphans(ReturnSetInfo *rsinfo)
{
	ListCell   *lc;

	foreach(lc, blpg_state_orphans())
	{
		blpg_orphan *o = lfirst(lc);
		Datum		values[STATUS_COLS];
		bool		nulls[STATUS_COLS];

		memset(nulls, true, sizeof(nulls));
		values[0] = CStringGetTextDatum(o->server_name);
		nulls[0] = false;
		values[2] = CStringGetTextDatum("orphaned");
		nulls[2] = false;
		values[9] = text_or_null(o->pos.file, &nulls[9]);
		values[10] = Int64GetDatum((int64) o->pos.pos);
		nulls[10] = o->pos.file[0] == '\0';
		values[11] = Int64GetDatum((int64) o->pos.skip);
		nulls[11] = false;
		values[12] = text_or_null(o->pos.gtid, &nulls[12]);
		values[13] = text_or_null(o->pos.gtid_state, &nulls[13]);
		values[24] = CStringGetTextDatum(psprintf("binlog_fdw.source_state holds this position, recorded by the server with OID %u, but this database has no binlog_fdw server of that name; a server created with the name resumes from it. If the server was renamed, give the row its new name; if nothing needs it, delete it",
												  o->srvid));
		nulls[24] = false;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

Datum
binlog_fdw_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	blpg_require_shmem();
	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < blpg_shared->max_sources; i++)
	{
		blpg_slot  *slot = &blpg_shared->slots[i];
		blpg_slot	s;
		Datum		values[STATUS_COLS];
		bool		nulls[STATUS_COLS];
		TimestampTz now = GetCurrentTimestamp();
		int			c = 0;
		ForeignServer *fs;

		LWLockAcquire(&blpg_shared->lock, LW_SHARED);
		/* a source whose stop committed is not shown while its worker exits */
		if (!slot->in_use || slot->dboid != MyDatabaseId || !slot->wanted)
		{
			LWLockRelease(&blpg_shared->lock);
			continue;
		}
		LWLockAcquire(&slot->lock, LW_SHARED);
		memcpy(&s, slot, sizeof(blpg_slot));
		LWLockRelease(&slot->lock);
		LWLockRelease(&blpg_shared->lock);

		memset(nulls, false, sizeof(nulls));
		/* its current name: a rename shows at once */
		fs = GetForeignServerExtended(s.serverid, FSV_MISSING_OK);
		values[c++] = CStringGetTextDatum(fs ? fs->servername : s.server_name);
		values[c] = Int32GetDatum(s.worker_pid);
		nulls[c++] = s.worker_pid == 0;
		/* a restart (stop and start committed): the old worker is exiting */
		if (s.stop_requested)
			s.state = BLPG_STATE_STARTING;
		values[c++] = CStringGetTextDatum(blpg_state_name(s.state));
		values[c] = TimestampTzGetDatum(s.connected_since);
		nulls[c++] = s.connected_since == 0 || s.state != BLPG_STATE_STREAMING;
		values[c] = text_or_null(s.source_host, &nulls[c]);
		c++;
		values[c] = text_or_null(s.source_version, &nulls[c]);
		c++;
		values[c] = text_or_null(s.binlog_format, &nulls[c]);
		c++;
		values[c] = text_or_null(s.read.file, &nulls[c]);
		c++;
		values[c] = Int64GetDatum((int64) s.read.pos);
		nulls[c++] = s.read.file[0] == '\0';
		values[c] = text_or_null(s.acked.file, &nulls[c]);
		c++;
		values[c] = Int64GetDatum((int64) s.acked.pos);
		nulls[c++] = s.acked.file[0] == '\0';
		values[c++] = Int64GetDatum((int64) s.acked.skip);
		values[c] = text_or_null(s.acked.gtid, &nulls[c]);
		c++;
		{
			char	   *durable = blpg_state_gtid_state(s.server_name);

			values[c] = text_or_null(durable, &nulls[c]);
			c++;
		}
		/* lag: age of the newest thing heard from the source */
		if ((s.state == BLPG_STATE_STREAMING || s.state == BLPG_STATE_RING_FULL) &&
			(s.last_event_ts || s.last_heartbeat))
		{
			TimestampTz newest = Max(s.last_event_ts, s.last_heartbeat);

			values[c++] = Float8GetDatum(Max(0.0, (double) (now - newest) / 1e6));
		}
		else
			nulls[c++] = true;
		values[c++] = Int64GetDatum((int64) (s.put_off - s.ack_off));
		values[c++] = Int64GetDatum((int64) s.ring_size);
		values[c++] = Int64GetDatum((int64) s.entries);
		values[c++] = Int64GetDatum((int64) (s.put_seq - s.ack_seq));
		values[c++] = Float8GetDatum(s.changes_per_sec);
		values[c++] = Int64GetDatum((int64) s.put_seq);
		values[c++] = Int64GetDatum((int64) s.ack_seq);
		values[c++] = Int32GetDatum(s.nbatches);
		values[c] = TimestampTzGetDatum(s.last_heartbeat);
		nulls[c++] = s.last_heartbeat == 0;
		values[c] = text_or_null(s.last_error, &nulls[c]);
		c++;
		values[c] = TimestampTzGetDatum(s.last_error_time);
		nulls[c++] = s.last_error_time == 0;
		values[c++] = Int64GetDatum((int64) s.peak_worker_rss_kb);
		values[c] = Int32GetDatum(s.apply_pid);
		nulls[c++] = s.apply_pid == 0;
		values[c++] = Int64GetDatum((int64) s.applied_transactions);
		values[c++] = Int64GetDatum((int64) s.applied_rows);
		values[c] = Float8GetDatum(s.apply_lag_seconds);
		nulls[c++] = s.apply_last_commit == 0;
		values[c] = TimestampTzGetDatum(s.apply_last_commit);
		nulls[c++] = s.apply_last_commit == 0;
		values[c] = text_or_null(s.apply_error, &nulls[c]);
		c++;
		values[c] = TimestampTzGetDatum(s.apply_error_time);
		nulls[c++] = s.apply_error_time == 0;
		values[c] = text_or_null(s.binlog_row_image, &nulls[c]);
		c++;
		values[c] = text_or_null(s.source_notice, &nulls[c]);
		c++;
		values[c] = TimestampTzGetDatum(s.last_error_cleared);
		nulls[c++] = s.last_error_cleared == 0;
		values[c] = TimestampTzGetDatum(s.apply_error_cleared);
		nulls[c++] = s.apply_error_cleared == 0;
		/* retention: what the worker's last check saw (-2, -1: see store.h) */
		values[c] = text_or_null(s.source_oldest_file, &nulls[c]);
		c++;
		values[c] = Int32GetDatum(s.retention_files);
		nulls[c++] = s.retention_files == -2;
		values[c] = Int64GetDatum(s.binlog_expire_seconds);
		nulls[c++] = s.binlog_expire_seconds < 0;
		Assert(c == STATUS_COLS);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	put_orphans(rsinfo);
	return (Datum) 0;
}
