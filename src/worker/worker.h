/*
 * worker.h
 *	  The source side of binlog_fdw: one streaming worker per started
 *	  source (a MySQL/MariaDB replica that decodes the binlog and puts the
 *	  changes into the store), start()/stop()/reset() and what they and DDL
 *	  on a source's server do when the transaction commits, the table of
 *	  started sources, and the launcher that starts them with the server
 *	  (in every database), restarts any that died, and guards against
 *	  crash loops.
 *
 * Files: stream.c (the streaming worker), control.c (start, stop, reset),
 * commit.c (their effect at commit), started.c (binlog_fdw.started_sources),
 * launch.c (launching workers, the crash-loop guard), launcher.c (the
 * launcher and its per-database starters), server_ddl.c (DROP and RENAME
 * of a source's server), legacy.c (0.1's autostart file).  Uses the store,
 * the MySQL source (src/source) and the decoder.  Shared state: only the
 * store's slots (store.h has the locking rules).  The continuous apply
 * worker (src/apply/continuous.c) is launched from here by its function's
 * name; nothing of src/apply is included.
 */
#ifndef BLPG_WORKER_H
#define BLPG_WORKER_H

#include "store/store.h"

#include "nodes/pg_list.h"

/* binlog_fdw.retention_check_interval: seconds between checks (0: none) */
extern int	blpg_retention_check_interval;

extern PGDLLEXPORT void blpg_worker_main(Datum main_arg);
extern PGDLLEXPORT void blpg_launcher_main(Datum main_arg);
extern PGDLLEXPORT void blpg_starter_main(Datum main_arg);

/* ---- launching (launch.c) ---- */

/*
 * Launch the worker of a slot (already acquired, wanted): state STARTING,
 * no wait; false (recorded in the slot, and a WARNING) if it could not be
 * registered.  Never raises an error.
 */
extern bool blpg_launch_worker(blpg_slot *slot);

/* Launch the continuous apply worker of a slot and wait for it; pid or 0. */
extern int	blpg_launch_apply_worker(blpg_slot *slot);
/* The reloader after a lost position (lost_position 'reload'). */
struct BackgroundWorkerHandle;
extern bool blpg_launch_reloader(blpg_slot *slot, struct BackgroundWorkerHandle **handle);

/* In a worker: the token of the slot it was launched for. */
extern uint64 blpg_worker_token(void);

/*
 * The crash-loop guard's record of launches: record one; false if the
 * source relaunches too often and is to be left stopped (logged).
 */
extern bool blpg_guard_launch(Oid dboid, Oid serverid, const char *name);
/* Forget the record (start(), a clean exit, a minute of streaming). */
extern void blpg_guard_clear(Oid dboid, Oid serverid);

/* ---- at commit (commit.c) ---- */

/* When the current transaction commits: start, stop, rename a source. */
extern void blpg_at_commit_start(Oid serverid, const char *name, Oid userid, bool continuous);
extern void blpg_at_commit_stop(Oid serverid, const char *name);
extern void blpg_at_commit_rename(Oid serverid, const char *newname);
/* ... and remove this database's lines from 0.1's autostart file. */
extern void blpg_at_commit_legacy_cleanup(void);
/* Is the last action of this transaction on serverid a stop? */
extern bool blpg_pending_stop(Oid serverid);

/* ---- binlog_fdw.started_sources (started.c) ---- */

typedef struct blpg_started
{
	char	   *server_name;
	Oid			roleid;			/* whose user mapping the worker uses */
} blpg_started;

/* Record a start in this transaction; true if it was started already. */
extern bool blpg_started_record(const char *name, Oid roleid);
/* Record a stop in this transaction; true if it was started. */
extern bool blpg_started_forget(const char *name);
/* Every started source of this database (a List of blpg_started). */
extern List *blpg_started_list(void);

/* ---- the launcher (launcher.c) ---- */

/* Register the launcher (from _PG_init, when preloaded). */
extern void blpg_register_launcher(void);

/* ---- DDL on a source's server (server_ddl.c) ---- */

/* Install the object access hook (from _PG_init, when preloaded). */
extern void blpg_server_ddl_init(void);

/* ---- 0.1's autostart file (legacy.c) ---- */

typedef struct blpg_legacy_entry
{
	Oid			dboid;
	Oid			serverid;
	Oid			userid;
	bool		continuous;
	char		name[NAMEDATALEN];
} blpg_legacy_entry;

/* The lines of a database (a List of blpg_legacy_entry). */
extern List *blpg_legacy_entries(Oid dboid);
/* Remove a source's line (stop() at 0.1), or all lines of a database. */
extern void blpg_legacy_remove(Oid dboid, Oid serverid);
extern void blpg_legacy_remove_database(Oid dboid);

#endif							/* BLPG_WORKER_H */
