/*
 * sql.h
 *	  The SQL surface of binlog_fdw over the store: the foreign-data
 *	  wrapper (handler, validator, a foreign table showing a source's
 *	  buffered changes), get/get_json/get_jsonl/ack/rollback, the status
 *	  view, and read_binlog() over binlog files on the server.
 *
 * Files: fdw.c, validator.c, get.c, status.c, read_binlog.c.  Uses only
 * the store (src/store) and what is below it.  No shared state of its own:
 * it reads the store's slots under the store's locks (store.h).
 */
#ifndef BLPG_SQL_H
#define BLPG_SQL_H

#include "store/store.h"

/* binlog_fdw.jsonl_max_bytes (kB): the longest text of a get_jsonl() batch */
extern int	blpg_jsonl_max_bytes;

#endif							/* BLPG_SQL_H */
