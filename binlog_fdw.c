/*
 * binlog_fdw.c
 *	  Module entry point of binlog_fdw: library load (_PG_init), where the
 *	  configuration parameters are defined, the prefix "binlog_fdw" is
 *	  reserved, and, when preloaded, shared memory is requested (the
 *	  store's rings, apply's load progress), the hook that sees servers
 *	  dropped installed and the launcher registered (not in pg_upgrade's
 *	  binary-upgrade mode).
 *	  The one file that sees every part (src/README.md has the layout).
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "access/xact.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/guc.h"

#include "bl_charset.h"

#include "apply/apply.h"
#include "sql/sql.h"
#include "store/store.h"
#include "worker/worker.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	blpg_shmem_request();
	blpg_progress_shmem_request();
}

static void
shmem_startup(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	blpg_shmem_startup();
	blpg_progress_shmem_startup();
}

/* The settings that need no shared memory (also without preloading). */
static void
define_session_gucs(void)
{
	DefineCustomEnumVariable("binlog_fdw.continuous_synchronous_commit",
							 "synchronous_commit of the continuous-mode apply workers.",
							 "Like a subscription's synchronous_commit in PostgreSQL's logical replication: "
							 "off by default, which is safe because the applied rows and the source position "
							 "commit in one transaction, so a crash loses both or neither.",
							 &blpg_continuous_synchronous_commit,
							 SYNCHRONOUS_COMMIT_OFF, blpg_synchronous_commit_options,
							 PGC_SIGHUP, 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("binlog_fdw.apply_workers",
							"Apply workers of a continuous source: transactions applied in parallel.",
							"1 applies serially in the continuous worker. More: the continuous worker "
							"hands transactions whose primary keys do not overlap to this many apply "
							"workers, each committing one source transaction with its position, in "
							"binlog order; DDL and keyless tables are applied serially. -1: one per "
							"processor but one, at most 8 (1 on a 2-core machine).",
							&blpg_apply_workers,
							-1, -1, 64,
							PGC_SIGHUP, 0,
							blpg_apply_workers_check, NULL, NULL);
	DefineCustomIntVariable("binlog_fdw.retention_check_interval",
							"Seconds between a source worker's checks of the source's binlog retention.",
							"The worker lists the source's binlog files over a second connection and compares "
							"the oldest with the acknowledged position (binlog_fdw.status: retention_files); "
							"it warns when that position is next to be purged. 0 turns the checks off.",
							&blpg_retention_check_interval,
							60, 0, 86400,
							PGC_SIGHUP, GUC_UNIT_S,
							NULL, NULL, NULL);
	DefineCustomIntVariable("binlog_fdw.progress_notice_interval",
							"Seconds between the NOTICEs of an initial load's progress.",
							"snapshot(), sync_table() and load() called by a client send a NOTICE "
							"with the rows copied, the rate and the time to go this often; 0 sends none.",
							&blpg_progress_notice_interval,
							0, 0, 3600,
							PGC_USERSET, GUC_UNIT_S,
							NULL, NULL, NULL);
	DefineCustomIntVariable("binlog_fdw.reload_chunk_rows",
							"Rows per chunk of the reload after a lost position.",
							"With the server option lost_position 'reload', a source whose acknowledged position "
							"the source has purged copies its tables again in chunks of this many keys, each "
							"committed with its progress, as binlog_fdw.load() does.",
							&blpg_reload_chunk_rows,
							100000, 1, INT_MAX,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("binlog_fdw.schema_history_retention",
							"How long a superseded row of binlog_fdw.schema_history is kept.",
							"Only a table's latest definition is read; when a DDL or a copy records a newer "
							"one, the table's rows recorded longer ago than this are deleted in that "
							"transaction. -1 keeps every row.",
							&blpg_schema_history_retention,
							30 * 86400, -1, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_S,
							NULL, NULL, NULL);
	DefineCustomIntVariable("binlog_fdw.jsonl_max_bytes",
							"Largest text of one get_jsonl() batch.",
							"A batch whose JSON lines would be longer ends at the last transaction "
							"boundary before that; the rest comes with the next call.",
							&blpg_jsonl_max_bytes,
							16 * 1024, 1, 512 * 1024,
							PGC_USERSET, GUC_UNIT_KB,
							NULL, NULL, NULL);
	DefineCustomIntVariable("binlog_fdw.consumer_keep_memory",
							"Freed memory a consuming session keeps for its next get.",
							"The copy of a batch is kept for the next get()/get_json()/get_jsonl()/"
							"get_table() (and a typed foreign table's scan's copy of the changes for the "
							"next scan) up to this size, and glibc's malloc keeps up to this much "
							"freed memory instead of giving it back to the kernel, so that the next "
							"batch does not fault its pages in again; 0: malloc's defaults.",
							&blpg_consumer_keep_memory,
							256 * 1024, 0, 1024 * 1024,
							PGC_USERSET, GUC_UNIT_KB,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("binlog_fdw.verify_jsonb",
							 "Checks every jsonb made of a JSON column against jsonb_in's.",
							 "A developer check of the JSON columns of apply and of typed foreign tables: "
							 "each value is also made by jsonb_in from the same text, and a difference in "
							 "any byte is an error.",
							 &blpg_verify_jsonb,
							 false,
							 PGC_SUSET, GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);
	MarkGUCPrefixReserved("binlog_fdw");
}

void
_PG_init(void)
{
	/* jsonb cannot store U+0000: row images show it as U+FFFD */
	bl_json_nul_as_replacement = true;

	/*
	 * The sizes of shared memory can only be defined while preloading
	 * (PostgreSQL refuses PGC_POSTMASTER variables later, with a FATAL error
	 * that would end the session loading the library: CREATE EXTENSION, or
	 * read_binlog(), must work without preloading).
	 */
	if (!process_shared_preload_libraries_in_progress)
	{
		define_session_gucs();
		return;
	}
	DefineCustomIntVariable("binlog_fdw.max_sources",
							"Maximum number of sources that can be started at once.",
							"Each source has a ring of binlog_fdw.ring_size bytes in shared memory.",
							&blpg_max_sources,
							4, 1, 1024,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("binlog_fdw.ring_size",
							"Size of each source's ring of changes in shared memory.",
							"Changes stay in the ring until acknowledged; when it is full the source waits.",
							&blpg_ring_size_kb,
							16 * 1024, 64, INT_MAX / 2,
							PGC_POSTMASTER, GUC_UNIT_KB,
							NULL, NULL, NULL);
	define_session_gucs();

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = shmem_startup;
	/* DROP SERVER / DROP EXTENSION stop their sources at commit */
	blpg_server_ddl_init();
	/* pg_upgrade's servers must not start sources */
	if (!IsBinaryUpgrade)
		blpg_register_launcher();
}
