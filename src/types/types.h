/*
 * types.h
 *	  MySQL types and values on the PostgreSQL side, one mapping for every
 *	  part that needs it: the value settings of a source (server options),
 *	  the PostgreSQL type of a MySQL column (the tables apply creates and the
 *	  foreign tables IMPORT FOREIGN SCHEMA creates), and the conversion of a
 *	  decoded value into a Datum of such a type (apply's rows and the typed
 *	  foreign tables' rows).
 *
 * Files: settings.c (blpg_apply_options_load), typemap.c (blpg_map_type),
 * convert.c (blpg_conv_init, blpg_convert), jsonb.c (blpg_jsonb_from_text).  Uses base and the decoder.
 * Users: src/apply, src/sql.  No
 * shared state.
 */
#ifndef BLPG_TYPES_H
#define BLPG_TYPES_H

#include "base/base.h"

#include "bl_decoder.h"

#include "access/attnum.h"
#include "fmgr.h"
#include "nodes/pg_list.h"

typedef enum blpg_conflict
{
	BLPG_CONFLICT_ERROR = 0,
	BLPG_CONFLICT_SKIP,
	BLPG_CONFLICT_OVERWRITE
} blpg_conflict;

typedef enum blpg_zero_date
{
	BLPG_ZERO_NULL = 0,
	BLPG_ZERO_NEG_INFINITY,
	BLPG_ZERO_ERROR
} blpg_zero_date;

/* Apply settings of a source (server options). */
typedef struct blpg_apply_options
{
	blpg_conflict conflict;		/* conflict */
	bool		unmapped_error; /* unmapped = error | skip */
	bool		tinyint1_boolean;	/* tinyint1_boolean */
	blpg_zero_date zero_date;	/* zero_date */
	bool		time_as_interval;	/* time_type = interval | time */
	bool		keyless_full_row;	/* keyless = error | full_row */
	List	   *schema_map;		/* pairs: mysql schema, pg schema */
} blpg_apply_options;

/* A source's apply settings (settings.c). */
extern void blpg_apply_options_load(Oid serverid, blpg_apply_options *opts);

/* ---- value conversion (convert.c) ---- */

typedef enum blpg_conv_kind
{
	BLPG_CONV_GENERIC = 0,		/* text, then the type's input function */
	BLPG_CONV_INT2,
	BLPG_CONV_INT4,
	BLPG_CONV_INT8,
	BLPG_CONV_NUMERIC,
	BLPG_CONV_FLOAT4,
	BLPG_CONV_FLOAT8,
	BLPG_CONV_BOOL,
	BLPG_CONV_TEXT,				/* text, varchar, bpchar without typmod */
	BLPG_CONV_VARCHAR,			/* varchar(n) */
	BLPG_CONV_BYTEA,
	BLPG_CONV_DATE,
	BLPG_CONV_TIMESTAMP,
	BLPG_CONV_TIMESTAMPTZ,
	BLPG_CONV_TIME,
	BLPG_CONV_INTERVAL,
	BLPG_CONV_JSONB,
	BLPG_CONV_TEXT_ARRAY,
	BLPG_CONV_GEOMETRY			/* PostGIS geometry/geography: EWKB hex input */
} blpg_conv_kind;

/* How one MySQL column becomes one PostgreSQL column. */
typedef struct blpg_col_conv
{
	int			src;			/* MySQL column index */
	AttrNumber	attnum;			/* target attribute */
	Oid			type;
	int32		typmod;
	blpg_conv_kind kind;
	FmgrInfo	input;			/* GENERIC: the type's input function */
	Oid			ioparam;
	const char *name;			/* for error messages */
} blpg_col_conv;

extern void blpg_conv_init(blpg_col_conv *cc, Oid type, int32 typmod);

/*
 * value -> Datum.  before: the column's before-image value (partial JSON).
 * old_datum/old_isnull: the target row's current value, for a partial JSON
 * update without a full before image.
 */
extern Datum blpg_convert(const blpg_col_conv *cc, const bl_column *col,
						  const bl_value *v, const bl_value *before,
						  const blpg_apply_options *opts, bool *isnull);

/*
 * JSON text s[0..len) (valid in the server encoding) -> jsonb, byte for byte
 * jsonb_in's value of it (jsonb.c).  blpg_verify_jsonb (GUC
 * binlog_fdw.verify_jsonb): make it with jsonb_in too and compare.
 */
extern Datum blpg_jsonb_from_text(const char *s, int len);

extern bool blpg_verify_jsonb;

/* ---- the type mapping (typemap.c, README "Type mapping") ---- */

/*
 * A MySQL column type as information_schema.COLUMNS.COLUMN_TYPE writes it
 * ("int(11) unsigned", "varchar(64)", "enum('a','b')", "decimal(10,2)",
 * "datetime(6)", "tinyint(1)") -> a PostgreSQL type name, or NULL if the
 * type is unknown.
 */
extern const char *blpg_map_type(const char *column_type, const blpg_apply_options *opts);

#endif							/* BLPG_TYPES_H */
