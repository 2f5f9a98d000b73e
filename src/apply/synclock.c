/*
 * synclock.c
 *	  The lock that keeps apply and an initial load of the same table apart.
 *
 * A load (snapshot(), sync_table()) holds, for each source table it copies,
 * an exclusive lock on (the source's foreign server, the table's name)
 * until its transaction ends; apply takes the same lock in share mode
 * before it uses a table's target and holds it until its transaction ends,
 * then reads the table's mapping (and so the load's position) as committed
 * now.  So apply never writes a table while a load of it is under way, and
 * after a load it always knows that load's position: the changes the copy
 * holds are skipped, the others applied, exactly once.  Without the lock,
 * an apply that read the mappings before the load committed would apply the
 * copy's changes again on top of it (duplicate rows, duplicate keys), or
 * skip a table that does not exist yet while its copy is being taken
 * (changes after the copy lost).
 *
 * Deadlock-free: apply waits for a load while holding the locks of other
 * tables, so a load never waits while it holds any of these locks: it takes
 * all of its tables' locks at once or none (it releases what it got and
 * waits for the one that was taken, holding nothing).  The lock is a
 * database object lock on the foreign server with a sub-id hashed from the
 * table's name (1..65535; two names sharing a sub-id only wait for each
 * other); pg_locks shows it as an object lock on pg_foreign_server.
 *
 * The chunks of load() (load.c) take it in RowExclusiveLock instead: that
 * conflicts with apply's share mode and a whole copy's exclusive mode but
 * not with itself, so several chunks of one table (of different key
 * ranges) copy at once while apply waits for all of them; a chunk takes
 * this one lock only (never waiting while holding another of them).  Which
 * loader copies which range is settled by a second lock, per (server,
 * table, range), taken before this one and never by apply: pg_locks shows
 * it as an advisory lock with objsubid 3 (pg_advisory_lock uses 1 and 2).
 */
#include "apply/apply.h"

#include "catalog/pg_foreign_server.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"

static uint16
sync_lock_subid(const char *schema, const char *table)
{
	uint32		h = hash_bytes((const unsigned char *) schema, (int) strlen(schema));

	h = hash_combine(h, hash_bytes((const unsigned char *) table, (int) strlen(table)));
	return (uint16) (1 + h % 65535);
}

void
blpg_sync_lock_share(Oid serverid, const char *schema, const char *table)
{
	LockDatabaseObject(ForeignServerRelationId, serverid, sync_lock_subid(schema, table), ShareLock);
}

void
blpg_sync_lock_tables(Oid serverid, List *names)
{
	int			n = list_length(names) / 2;
	uint16	   *ids = palloc(sizeof(uint16) * Max(n, 1));
	int			waited = -1;

	for (int i = 0; i < n; i++)
		ids[i] = sync_lock_subid(strVal(list_nth(names, 2 * i)), strVal(list_nth(names, 2 * i + 1)));
	for (;;)
	{
		int			failed = -1;

		/* holding none of them: waiting cannot close a cycle with apply */
		if (waited >= 0)
			LockDatabaseObject(ForeignServerRelationId, serverid, ids[waited], ExclusiveLock);
		for (int i = 0; i < n && failed < 0; i++)
			if (i != waited &&
				!ConditionalLockDatabaseObject(ForeignServerRelationId, serverid, ids[i], ExclusiveLock))
				failed = i;
		if (failed < 0)
			break;
		for (int i = 0; i < failed; i++)
			if (i != waited)
				UnlockDatabaseObject(ForeignServerRelationId, serverid, ids[i], ExclusiveLock);
		if (waited >= 0)
			UnlockDatabaseObject(ForeignServerRelationId, serverid, ids[waited], ExclusiveLock);
		waited = failed;
		CHECK_FOR_INTERRUPTS();
	}
	pfree(ids);
}

void
blpg_sync_lock_chunk(Oid serverid, const char *schema, const char *table)
{
	LockDatabaseObject(ForeignServerRelationId, serverid, sync_lock_subid(schema, table),
					   RowExclusiveLock);
}

static void
load_range_tag(LOCKTAG *tag, Oid serverid, const char *schema, const char *table, int range)
{
	uint32		h = hash_bytes((const unsigned char *) schema, (int) strlen(schema));

	h = hash_combine(h, hash_bytes((const unsigned char *) table, (int) strlen(table)));
	h = hash_combine(h, hash_uint32((uint32) range));
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, (uint32) serverid, h, 3);
}

void
blpg_sync_unlock_chunk(Oid serverid, const char *schema, const char *table)
{
	UnlockDatabaseObject(ForeignServerRelationId, serverid, sync_lock_subid(schema, table),
						 RowExclusiveLock);
}

bool
blpg_load_range_lock(Oid serverid, const char *schema, const char *table, int range, bool wait)
{
	LOCKTAG		tag;

	load_range_tag(&tag, serverid, schema, table, range);
	return LockAcquire(&tag, ExclusiveLock, false, !wait) != LOCKACQUIRE_NOT_AVAIL;
}

void
blpg_load_range_unlock(Oid serverid, const char *schema, const char *table, int range)
{
	LOCKTAG		tag;

	load_range_tag(&tag, serverid, schema, table, range);
	(void) LockRelease(&tag, ExclusiveLock, false);
}
