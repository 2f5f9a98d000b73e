/*
 * sql.h
 *	  The SQL surface of binlog_fdw over the store: the foreign-data
 *	  wrapper (handler, validator, a foreign table showing a source's
 *	  buffered changes), get/get_json/get_jsonl/ack/rollback, the status
 *	  view, and read_binlog() over binlog files on the server.
 *
 * Files: fdw.c, validator.c, get.c, status.c, read_binlog.c, import.c
 * (IMPORT FOREIGN SCHEMA), typed.c (the scan of an imported table).  Uses
 * the store (src/store), the types (src/types), the MySQL source
 * (information_schema for IMPORT FOREIGN SCHEMA) and what is below them.  No shared state of its own:
 * it reads the store's slots under the store's locks (store.h).
 */
#ifndef BLPG_SQL_H
#define BLPG_SQL_H

#include "store/store.h"
#include "types/types.h"

#include "foreign/fdwapi.h"
#include "nodes/execnodes.h"
#include "nodes/parsenodes.h"
#include "utils/relcache.h"

/* binlog_fdw.jsonl_max_bytes (kB): the longest text of a get_jsonl() batch */
extern int	blpg_jsonl_max_bytes;

/*
 * binlog_fdw.consumer_keep_memory (kB): the freed memory a consumer backend
 * keeps for its next get (get.c)
 */
extern int	blpg_consumer_keep_memory;

/* ---- typed foreign tables (import.c, typed.c) ----
 *
 * IMPORT FOREIGN SCHEMA makes one foreign table per source table, with the
 * options schema_name and table_name, the source's columns (each with the
 * option column_name, typed by blpg_map_type) and the change columns below,
 * whose names begin with "_binlog_".  A column is a source column if it has
 * the option column_name, else a change column by its name.  The table
 * option partial_image ('error', the default, or 'null') says what a source
 * column a partial row image lacks (binlog_row_image MINIMAL or NOBLOB)
 * gives: an error, or NULL listed in _binlog_absent.
 */
typedef enum blpg_meta_col
{
	BLPG_META_SEQ,				/* bigint: the change's sequence */
	BLPG_META_OP,				/* text: insert, update, delete */
	BLPG_META_IMAGE,			/* text: before, after */
	BLPG_META_COMMIT_TIME,		/* timestamptz */
	BLPG_META_FILE,				/* text: binlog file of the rows event */
	BLPG_META_POS,				/* bigint: its position */
	BLPG_META_GTID,				/* text */
	BLPG_META_XID,				/* bigint: XID of the transaction's commit */
	BLPG_META_BATCH,			/* bigint: get_table()'s batch, NULL in a scan */
	BLPG_META_ABSENT,			/* text[]: the source columns the image lacks */
	BLPG_NMETA
} blpg_meta_col;

extern const char *const blpg_meta_col_names[BLPG_NMETA];
extern const char *const blpg_meta_col_types[BLPG_NMETA];

extern List *blpg_import_foreign_schema(ImportForeignSchemaStmt *stmt, Oid serverOid);

/* Is this foreign table an imported (typed) one (option table_name)? */
extern bool blpg_typed_table(Oid relid);

/*
 * A restriction "column OP constant" on a column of baserel (the constant
 * not NULL): the operator's name, the column and the constant; else NULL
 * (fdw.c).
 */
extern char *blpg_column_op_const(RestrictInfo *ri, RelOptInfo *baserel, Var **var,
								  Const **cst);

/* The FDW callbacks of typed tables (fdw.c calls them for those). */
extern List *blpg_typed_private(PlannerInfo *root, RelOptInfo *baserel, Relation rel);
extern void blpg_typed_begin(ForeignScanState *node, int eflags);
extern TupleTableSlot *blpg_typed_iterate(ForeignScanState *node);
extern void blpg_typed_rescan(ForeignScanState *node);
extern void blpg_typed_end(ForeignScanState *node);
extern void blpg_typed_explain(ForeignScanState *node, struct ExplainState *es);

/*
 * get_table(): the rows of a batch of typed table rel of source
 * server_name.  The entries of a batch go into blpg_typed_reader_buffer()
 * (entries, the caller's buffer, emptied and sized for a batch of
 * max_changes of slot),
 * then blpg_typed_reader_start() and _next() give its rows of the table
 * (_binlog_batch: batch_id); blpg_typed_reader_buffer_len() is the size of
 * the entries taken.
 */
typedef struct typed_state typed_state;
extern typed_state *blpg_typed_reader(Relation rel, const char *server_name,
									  StringInfo entries);
extern StringInfo blpg_typed_reader_buffer(typed_state *st, blpg_slot *slot, int max_changes);
extern int	blpg_typed_reader_buffer_len(typed_state *st);
extern void blpg_typed_reader_start(typed_state *st, uint64 first, uint64 last,
									uint64 batch_id);
extern bool blpg_typed_reader_next(typed_state *st, Datum *values, bool *nulls);

#endif							/* BLPG_SQL_H */
