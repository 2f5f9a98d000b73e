/*
 * origin.c
 *	  Replication origins: every transaction that apply writes is marked
 *	  with the PostgreSQL replication origin of its source (named, dropped
 *	  and cleaned up by src/base/origins.c), so that
 *	  logical decoding downstream tells binlog_fdw's writes from local ones
 *	  (PostgreSQL 16's subscription option origin = none, test_decoding's
 *	  only-local): the basis of a loop-free MySQL <-> PostgreSQL setup.
 *
 * The origin's progress (pg_replication_origin_status.remote_lsn) is the
 * source position the transaction acknowledged, as a pseudo-LSN: the
 * binlog file's number in the high 24 bits and the position in the low 40
 * (mysql-bin.000042 position 1234 shows as 2A/4D2 ... see
 * blpg_origin_lsn), and its commit timestamp is the MySQL commit time.
 *
 * The origin is set up for the applying transaction only and reset when
 * it ends (other writes of that transaction carry the origin too), by
 * apply() and by the continuous worker alike, so that it is in use only
 * while a transaction applies: DROP SERVER can drop it.  A session that set
 * up an origin of its own keeps it.
 */
#include "apply/apply.h"

#include <ctype.h>

#include "access/xact.h"
#include "miscadmin.h"
#include "replication/origin.h"

static bool origin_in_xact = false;		/* set up by us, until xact end */
static bool origin_tag_only = false;	/* writes tagged, progress not set up */
static Oid	origin_server = InvalidOid; /* whose origin is set up */
static bool callback_registered = false;

static void
origin_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			if (origin_in_xact)
			{
				origin_in_xact = false;
				origin_server = InvalidOid;
				if (!origin_tag_only)
					replorigin_session_reset();
				origin_tag_only = false;
				replorigin_session_origin = InvalidRepOriginId;
				replorigin_session_origin_lsn = InvalidXLogRecPtr;
				replorigin_session_origin_timestamp = 0;
			}
			break;
		default:
			break;
	}
}

/*
 * Mark what the current transaction writes with the origin of serverid
 * (created if needed).  A transaction has one origin: when it applies
 * changes of a second source, or the session set up an origin of its own,
 * its writes keep the origin they have.
 */
void
blpg_origin_begin(Oid serverid)
{
	char		name[64];
	RepOriginId id;

	if (origin_tag_only && origin_in_xact && origin_server == serverid)
	{
		/* tagged by blpg_origin_tag: now the progress too */
		replorigin_session_setup(replorigin_session_origin);
		origin_tag_only = false;
		return;
	}
	if (replorigin_session_origin != InvalidRepOriginId)
		return;					/* ours already, or the session's own */
	blpg_origin_name(MyDatabaseId, serverid, name, sizeof(name));
	id = replorigin_by_name(name, true);
	if (id == InvalidRepOriginId)
	{
		/* origins of sources that are gone free their state slots first */
		blpg_origins_clean();
		id = replorigin_create(name);
	}
	replorigin_session_setup(id);
	replorigin_session_origin = id;
	origin_server = serverid;
	if (!callback_registered)
	{
		RegisterXactCallback(origin_xact_callback, NULL);
		callback_registered = true;
	}
	origin_in_xact = true;
}

/*
 * Parallel apply: mark what the current transaction writes with the origin
 * of serverid, without setting up the session's origin progress, which one
 * session at a time may hold (PostgreSQL 15): blpg_origin_begin() does that
 * at the worker's turn to commit.  false if the origin does not exist yet
 * (the caller waits for its turn and calls blpg_origin_begin(), which
 * creates it).
 */
bool
blpg_origin_tag(Oid serverid)
{
	char		name[64];
	RepOriginId id;

	if (replorigin_session_origin != InvalidRepOriginId)
		return true;			/* ours already, or the session's own */
	blpg_origin_name(MyDatabaseId, serverid, name, sizeof(name));
	id = replorigin_by_name(name, true);
	if (id == InvalidRepOriginId)
		return false;
	replorigin_session_origin = id;
	origin_server = serverid;
	if (!callback_registered)
	{
		RegisterXactCallback(origin_xact_callback, NULL);
		callback_registered = true;
	}
	origin_in_xact = true;
	origin_tag_only = true;
	return true;
}

/*
 * A binlog position as a pseudo-LSN: the file's number (its numeric
 * suffix) in the high 24 bits, the position in the low 40.  Ordered as the
 * positions of one server's binlog are.
 */
XLogRecPtr
blpg_origin_lsn(const char *file, uint64 pos)
{
	const char *dot = strrchr(file, '.');
	uint64		number = 0;

	if (dot != NULL)
		for (const char *p = dot + 1; *p && isdigit((unsigned char) *p); p++)
			number = number * 10 + (uint64) (*p - '0');
	return (XLogRecPtr) (((number & 0xFFFFFF) << 40) | (pos & (((uint64) 1 << 40) - 1)));
}

/*
 * Record what the transaction reached: the acknowledged position and the
 * MySQL commit time (microseconds since the Unix epoch, 0 if unknown).
 */
void
blpg_origin_progress(Oid serverid, const blpg_position *pos, int64 commit_ts_us)
{
	if (serverid != origin_server || replorigin_session_origin == InvalidRepOriginId ||
		pos->file[0] == '\0')
		return;
	replorigin_session_origin_lsn = blpg_origin_lsn(pos->file, pos->pos);
	if (commit_ts_us)
		replorigin_session_origin_timestamp = (TimestampTz) commit_ts_us -
			((POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY);
}
