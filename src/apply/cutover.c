/*
 * cutover.c
 *	  Primitives for moving an application from MySQL to PostgreSQL:
 *
 *	  wait_for(server, target, timeout_seconds)
 *	      returns true once every change of the source up to target is
 *	      applied (acknowledged) here, false at the timeout: read-your-writes
 *	      for an application that moves its reads to PostgreSQL.  target is
 *	      a MariaDB GTID list ("0-1-100,1-2-7": every domain reached), a
 *	      MySQL GTID set ("uuid:1-100": every transaction in it), a binlog
 *	      position "FILE:POS", or NULL: the source's end of binlog, asked
 *	      of the source now (the drain of a cut-over).
 *
 * "Applied" is the source's acknowledged position in shared memory, which
 * moves when the acknowledging transaction (apply(), the continuous
 * worker, ack()) has committed: after wait_for() returns true, a new
 * snapshot sees those rows.
 */
#include "apply/apply.h"

#include <ctype.h>

#include "bl_gtid_set.h"
#include "bl_mysql_source.h"

#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

PG_FUNCTION_INFO_V1(binlog_fdw_wait_for);

typedef enum target_kind
{
	TARGET_POSITION,
	TARGET_MARIADB_GTID,
	TARGET_MYSQL_GTID
} target_kind;

typedef struct wait_target
{
	target_kind kind;
	char	   *file;			/* POSITION */
	uint64		pos;
	char	   *gtid;			/* GTID kinds: the text */
	bl_gtid_set *set;			/* MYSQL_GTID */
} wait_target;

/* "d-s-n[,d-s-n...]" */
static bool
is_mariadb_gtid_list(const char *s)
{
	int			dashes = 0;
	bool		digit = false;

	for (; *s; s++)
	{
		if (isdigit((unsigned char) *s))
			digit = true;
		else if (*s == '-' && digit && dashes < 2)
		{
			dashes++;
			digit = false;
		}
		else if (*s == ',' && digit && dashes == 2)
		{
			dashes = 0;
			digit = false;
		}
		else if (*s != ' ')
			return false;
	}
	return digit && dashes == 2;
}

static void
parse_target(const char *server, const char *text, wait_target *t)
{
	const char *colon = strrchr(text, ':');
	bl_error	err;

	memset(t, 0, sizeof(*t));
	if (is_mariadb_gtid_list(text))
	{
		t->kind = TARGET_MARIADB_GTID;
		t->gtid = pstrdup(text);
		return;
	}
	memset(&err, 0, sizeof(err));
	t->set = bl_gtid_set_parse(text, strlen(text), &err);
	if (t->set != NULL)
	{
		t->kind = TARGET_MYSQL_GTID;
		t->gtid = pstrdup(text);
		return;
	}
	/* FILE:POS: a file name without colons, then a position */
	if (colon != NULL && colon != text && colon[1] != '\0' &&
		strspn(colon + 1, "0123456789") == strlen(colon + 1) &&
		memchr(text, ':', colon - text) == NULL)
	{
		t->kind = TARGET_POSITION;
		t->file = pnstrdup(text, colon - text);
		t->pos = strtoull(colon + 1, NULL, 10);
		return;
	}
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid wait_for() target \"%s\" for source \"%s\"", text, server),
			 errdetail("It is not a MariaDB GTID list or a binlog position, and as a MySQL GTID set: %s.", err.message),
			 errhint("Give a MariaDB GTID list (0-1-100), a MySQL GTID set (uuid:1-100), a binlog position (mysql-bin.000042:1234), or NULL for the source's current position.")));
}

/* The sequence number the MariaDB GTID state gives domain (-1: none). */
static int64
mariadb_domain_seq(const char *state, uint64 domain)
{
	const char *p = state;

	while (p && *p)
	{
		char	   *end;
		uint64		d,
					seq;

		while (*p == ' ' || *p == ',')
			p++;
		d = strtoull(p, &end, 10);
		if (end == p || *end != '-')
			return -1;
		p = end + 1;
		(void) strtoull(p, &end, 10);	/* server id */
		if (*end != '-')
			return -1;
		p = end + 1;
		seq = strtoull(p, &end, 10);
		p = end;
		if (d == domain)
			return (int64) seq;
	}
	return -1;
}

static bool
mariadb_reached(const char *state, const char *target)
{
	const char *p = target;

	while (*p)
	{
		char	   *end;
		uint64		d,
					seq;

		while (*p == ' ' || *p == ',')
			p++;
		if (*p == '\0')
			break;
		d = strtoull(p, &end, 10);
		p = end + 1;
		(void) strtoull(p, &end, 10);
		p = end + 1;
		seq = strtoull(p, &end, 10);
		p = end;
		if (mariadb_domain_seq(state, d) < (int64) seq)
			return false;
	}
	return true;
}

/* Has the acknowledged position of slot reached t? */
static bool
reached(blpg_slot *slot, Oid serverid, const wait_target *t)
{
	blpg_position acked;
	bool		done = false;

	if (t->kind == TARGET_POSITION)
	{
		blpg_slot_position a;

		LWLockAcquire(&slot->lock, LW_SHARED);
		a = slot->acked;
		LWLockRelease(&slot->lock);
		return a.file[0] != '\0' && blpg_position_cmp(a.file, a.pos, t->file, t->pos) >= 0;
	}

	/*
	 * The GTID state of the acknowledged position is the durable one (the
	 * slot holds no state of unbounded size): read as committed now, in any
	 * isolation level.
	 */
	PushActiveSnapshot(GetLatestSnapshot());
	if (!blpg_state_load(serverid, &acked) || acked.gtid_state == NULL)
	{
		PopActiveSnapshot();
		return false;
	}
	PopActiveSnapshot();
	switch (t->kind)
	{
		case TARGET_POSITION:
			break;
		case TARGET_MARIADB_GTID:
			done = mariadb_reached(acked.gtid_state, t->gtid);
			break;
		case TARGET_MYSQL_GTID:
			{
				bl_error	err;
				bl_gtid_set *have;

				memset(&err, 0, sizeof(err));
				have = bl_gtid_set_parse(acked.gtid_state, strlen(acked.gtid_state), &err);
				if (have == NULL)
					ereport(ERROR,
							(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
							 errmsg("source \"%s\" has no MySQL GTID set to compare with", slot->server_name),
							 errdetail("Its acknowledged GTID state is \"%s\".", acked.gtid_state),
							 errhint("Wait for a binlog position (FILE:POS) instead.")));
				done = bl_gtid_set_subset(t->set, have);
				bl_gtid_set_free(have);
				break;
			}
	}
	return done;
}

/*
 * The host of the source that the worker streams from (or last tried), as
 * an index into cfg->hosts; -1 if it has none yet.
 */
static int
streamed_host(blpg_slot *slot, const blpg_source_config *cfg)
{
	char		label[BLPG_HOST_LEN];

	LWLockAcquire(&slot->lock, LW_SHARED);
	strlcpy(label, slot->source_host, sizeof(label));
	LWLockRelease(&slot->lock);
	for (int i = 0; i < cfg->nhosts; i++)
		if (strcmp(cfg->hosts[i].label, label) == 0)
			return i;
	return -1;
}

/*
 * The source's current end of binlog, asked of the source now.  With one
 * host, its binlog position.  With several hosts (the worker follows a
 * failover by GTID), a binlog position names a place in one server's
 * binlog only, and the acknowledged position may be in another's: the
 * target is the GTID state of the host the worker streams from (the one
 * it follows as the primary), never of another host, which may be behind.
 */
static void
source_target(ForeignServer *server, blpg_slot *slot, wait_target *t)
{
	blpg_source_config *cfg = blpg_load_config(server->serverid, GetUserId());
	bl_source_options so;
	bl_source  *src;
	bl_error	err;
	char		file[BLPG_FILE_LEN];
	char	   *gtid = NULL;
	uint64_t	pos = 0;
	int			rc = -1;
	int			host = 0;

	if (cfg->nhosts > 1)
	{
		host = streamed_host(slot, cfg);
		if (host < 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("source \"%s\" has several hosts and its worker has not connected to one yet",
							server->servername),
					 errdetail("The end of binlog to wait for is read from the host the worker streams from."),
					 errhint("Start the source (binlog_fdw.start()) and wait until its status shows a source_host, or give wait_for() a GTID target.")));
	}
	memset(&err, 0, sizeof(err));
	blpg_source_connect_options(cfg, host, &so);
	src = bl_source_connect(&so, &err);
	if (src != NULL)
	{
		rc = bl_source_current_position(src, file, sizeof(file), &pos, &gtid, &err);
		bl_source_close(src);
	}
	if (rc != 0)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not read the current position of source \"%s\" on host %s: %s",
						server->servername, cfg->hosts[host].label, err.message),
				 errhint("Give wait_for() a target instead.")));
	if (cfg->nhosts > 1)
	{
		char	   *text = pstrdup(gtid ? gtid : "");

		free(gtid);
		if (text[0] == '\0')
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("host %s of source \"%s\" reports no GTID state at its end of binlog %s:%llu",
							cfg->hosts[host].label, server->servername, file,
							(unsigned long long) pos),
					 errdetail("A source with several hosts is followed by GTID; a binlog position of one host cannot be compared with another's."),
					 errhint("Enable GTIDs on the source, or give wait_for() a target.")));
		parse_target(server->servername, text, t);
		return;
	}
	free(gtid);					/* one host: its position is what is waited for */
	memset(t, 0, sizeof(*t));
	t->kind = TARGET_POSITION;
	t->file = pstrdup(file);
	t->pos = pos;
}

Datum
binlog_fdw_wait_for(PG_FUNCTION_ARGS)
{
	char	   *name;
	double		timeout = PG_ARGISNULL(2) ? 60 : PG_GETARG_FLOAT8(2);
	ForeignServer *server;
	blpg_slot  *slot;
	wait_target t;
	TimestampTz deadline;
	bool		done;
	MemoryContext cxt;

	blpg_require_arg(fcinfo, 0, "server");
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	if (!(timeout >= 0 && timeout <= 86400))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("timeout_seconds must be between 0 and 86400")));
	slot = blpg_consumer_slot(name, &server);
	if (PG_ARGISNULL(1))
		source_target(server, slot, &t);
	else
		parse_target(name, text_to_cstring(PG_GETARG_TEXT_PP(1)), &t);

	deadline = GetCurrentTimestamp() + (TimestampTz) (timeout * USECS_PER_SEC);
	cxt = AllocSetContextCreate(CurrentMemoryContext, "binlog_fdw wait_for", ALLOCSET_DEFAULT_SIZES);
	ConditionVariablePrepareToSleep(&slot->space_cv);
	for (;;)
	{
		long		left;
		MemoryContext old = MemoryContextSwitchTo(cxt);

		done = reached(slot, server->serverid, &t);
		MemoryContextSwitchTo(old);
		MemoryContextReset(cxt);
		left = (long) ((deadline - GetCurrentTimestamp()) / 1000);
		if (done || left <= 0)
			break;
		/* acks broadcast space_cv when they commit */
		(void) ConditionVariableTimedSleep(&slot->space_cv, Min(left, 100L), PG_WAIT_EXTENSION);
		CHECK_FOR_INTERRUPTS();
	}
	ConditionVariableCancelSleep();
	if (t.set)
		bl_gtid_set_free(t.set);
	PG_RETURN_BOOL(done);
}
