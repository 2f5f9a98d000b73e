/*
 * worker.h
 *	  The source side of binlog_fdw: one streaming worker per started
 *	  source (a MySQL/MariaDB replica that decodes the binlog and puts the
 *	  changes into the store), the launcher that starts the sources listed
 *	  in the autostart file at server start and restarts any that died, and
 *	  start()/stop()/reset() with the crash-loop guard.
 *
 * Files: stream.c (the streaming worker), launcher.c, control.c (start,
 * stop, reset, autostart file, launching workers).  Uses the store, the
 * MySQL source (src/source) and the decoder.  Shared state: only the
 * store's slots (store.h has the locking rules); the autostart file is
 * guarded by blpg_shared->lock.  The continuous apply worker
 * (src/apply/continuous.c) is launched from here by its function's name;
 * nothing of src/apply is included.
 */
#ifndef BLPG_WORKER_H
#define BLPG_WORKER_H

#include "store/store.h"

extern PGDLLEXPORT void blpg_worker_main(Datum main_arg);
extern PGDLLEXPORT void blpg_launcher_main(Datum main_arg);

/* Launch the continuous apply worker of a slot; its pid or 0. */
extern int	blpg_launch_apply_worker(blpg_slot *slot);

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
/* The launcher: start every listed source that has no worker. */
extern void blpg_autostart_all(void);

/* The crash-loop guard's record of launches (control.c): forget it. */
extern void blpg_guard_clear(Oid dboid, Oid serverid);

#endif							/* BLPG_WORKER_H */
