/*
 * bl_mysql_snapshot.h
 *	  A consistent snapshot of a MySQL/MariaDB server for initial loads:
 *	  one transaction WITH CONSISTENT SNAPSHOT, the binlog position it
 *	  corresponds to, table definitions and row streams read inside it.
 */
#ifndef BL_MYSQL_SNAPSHOT_H
#define BL_MYSQL_SNAPSHOT_H

#include "bl_mysql_source.h"

typedef struct bl_snapshot bl_snapshot;

typedef struct bl_snapshot_column
{
	char	   *name;
	char	   *column_type;	/* "int(10) unsigned", "enum('a','b')" */
	char	   *data_type;		/* "int", "enum" */
	bool		nullable;
	char	   *default_value;	/* NULL if none */
	int			pk_position;	/* 1.. in the primary key, 0 if not */
	bool		generated;
	char	   *charset;		/* CHARACTER_SET_NAME, NULL if none */
	int64_t		octet_length;	/* CHARACTER_OCTET_LENGTH, 0 if none */
} bl_snapshot_column;

/* A table a snapshot copies: the writes of these are at its position. */
typedef struct bl_snapshot_table
{
	const char *schema;
	const char *table;
} bl_snapshot_table;

/*
 * Open a connection and a consistent snapshot; file/pos (and gtid, the
 * server's GTID state at exactly that position, of any length, malloc'd:
 * free() it; "" without GTIDs) say where the binlog stood.  gtid may be
 * NULL: on MySQL without the global lock the state is read from the
 * binlog file, from its start to the position (bl_source_gtid_set_at), so
 * ask for it only when it is needed.  Every write of tables[0..ntables-1] is either in the
 * snapshot and before file:pos, or after both; writes of other tables may
 * be on either side.
 * bl_snapshot_begin = bl_snapshot_open + bl_snapshot_start; between the
 * two, the connection can read table definitions before the snapshot.
 *
 * opts->snapshot_lock picks how (see bl_source_options): "tables" locks the
 * tables (LOCK TABLES ... READ, which waits for the transactions writing
 * them to commit and holds off new ones) on a second connection while this
 * one starts its transaction and reads the position, and unlocks them at
 * once; tables that do not exist are not locked (their copy reports them).
 * "global" takes FLUSH TABLES WITH READ LOCK for that moment instead.
 */
extern bl_snapshot *bl_snapshot_begin(const bl_source_options *opts,
									  const bl_snapshot_table *tables, int ntables,
									  char *file, size_t filelen, uint64_t *pos,
									  char **gtid, bl_error *err);
extern bl_snapshot *bl_snapshot_open(const bl_source_options *opts, bl_error *err);
extern int	bl_snapshot_start(bl_snapshot *s, const bl_snapshot_table *tables, int ntables,
							  char *file, size_t filelen,
							  uint64_t *pos, char **gtid, bl_error *err);

/*
 * After a failed bl_snapshot_start: a hint (a full sentence) when the lock
 * was refused or timed out, NULL otherwise; lock_denied tells which.
 */
extern const char *bl_snapshot_lock_hint(const bl_snapshot *s, bool *lock_denied);

/*
 * A digest of a table's current definition (columns, types, defaults,
 * unique keys).  Definitions are not part
 * of the snapshot: comparing digests taken before the snapshot began and
 * after its rows were read tells whether DDL ran meanwhile.
 */
extern int	bl_snapshot_definition(bl_snapshot *s, const char *schema, const char *table,
								   char *out, size_t outlen, bl_error *err);

/*
 * A schema cache (bl_mysql_source.h) that reads over the snapshot's own
 * connection: the definitions of tables whose rows the snapshot read are
 * those at its position while it lasts (their metadata locks keep DDL
 * out).  Destroy it (bl_schema_cache_destroy) before bl_snapshot_end.
 */
extern bl_schema_cache *bl_snapshot_schema_cache(bl_snapshot *s, bl_error *err);

/* Did the last failure come from DDL running meanwhile (worth a retry)? */
extern bool bl_snapshot_definition_changed(const bl_snapshot *s);

/* Columns of schema.table in order (ncols 0: no such table). */
extern int	bl_snapshot_columns(bl_snapshot *s, const char *schema, const char *table,
								bl_snapshot_column **cols, int *ncols,
								int64_t *estimated_rows, bl_error *err);

/*
 * The table's indexes other than its primary key, in name order, for the
 * copy's target.  skip says why one has no PostgreSQL form (FULLTEXT,
 * SPATIAL, a column prefix, an expression), NULL otherwise.  Free with
 * bl_snapshot_free_indexes.
 */
typedef struct bl_snapshot_index
{
	char	   *name;
	bool		unique;
	int			ncols;
	char	  **cols;
	bool	   *descending;
	const char *skip;
} bl_snapshot_index;

extern int	bl_snapshot_indexes(bl_snapshot *s, const char *schema, const char *table,
								bl_snapshot_index **indexes, int *nindexes, bl_error *err);
extern void bl_snapshot_free_indexes(bl_snapshot_index *indexes, int nindexes);

/* Stream the result of a query row by row. */
/*
 * The foreign keys of schema.table (as the child) whose ON DELETE or ON
 * UPDATE action changes rows (CASCADE, SET NULL, SET DEFAULT): MySQL does
 * not write those changes to the binlog.  Returns how many (-1 with err),
 * their description in out (cut with "..." at outlen).
 */
extern int	bl_snapshot_fk_actions(bl_snapshot *s, const char *schema, const char *table,
								   char *out, size_t outlen, bl_error *err);

extern int	bl_snapshot_query(bl_snapshot *s, const char *sql, bl_error *err);
/* 1 with a row (values NULL for SQL NULL), 0 at the end, -1 on error. */
extern int	bl_snapshot_fetch(bl_snapshot *s, char ***values, unsigned long **lengths,
							  bl_error *err);

/* Quote an identifier for MySQL (`...`). */
extern void bl_snapshot_quote_ident(const char *name, char *out, size_t outlen);

extern void bl_snapshot_end(bl_snapshot *s);

#endif							/* BL_MYSQL_SNAPSHOT_H */
