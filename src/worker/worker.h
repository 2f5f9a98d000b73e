/*
 * blpg_worker.h
 *	  Background workers of binlog_fdw: one streaming worker per started
 *	  source, and the launcher that starts the sources listed in the
 *	  autostart file at server start and restarts any that died.
 */
#ifndef BLPG_WORKER_H
#define BLPG_WORKER_H

#include "blpg_shmem.h"
#include "utils/guc.h"

extern PGDLLEXPORT void blpg_worker_main(Datum main_arg);
extern PGDLLEXPORT void blpg_launcher_main(Datum main_arg);
extern PGDLLEXPORT void blpg_apply_worker_main(Datum main_arg);

/* Launch the continuous apply worker of a slot; its pid or 0. */
extern int	blpg_launch_apply_worker(blpg_slot *slot);

/* binlog_fdw.continuous_synchronous_commit (a SYNCHRONOUS_COMMIT_* value) */
extern int	blpg_continuous_synchronous_commit;
extern const struct config_enum_entry blpg_synchronous_commit_options[];

/* Register the launcher (from _PG_init, when preloaded). */
extern void blpg_register_launcher(void);

/*
 * Launch the worker of a slot (already acquired); returns its pid, or 0 if
 * it could not be started.  wait: wait for it to start.
 */
extern int	blpg_launch_worker(blpg_slot *slot, bool wait);

/* The autostart file: sources to start with the server. */
extern void blpg_autostart_add(Oid dboid, Oid serverid, Oid userid, bool continuous,
							   const char *name);
extern void blpg_autostart_remove(Oid dboid, Oid serverid);

/* The crash-loop guard's record of launches (control.c): forget it. */
extern void blpg_guard_clear(Oid dboid, Oid serverid);

#endif							/* BLPG_WORKER_H */
