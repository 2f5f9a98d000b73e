/*
 * snapshot.c
 *	  Initial load: binlog_fdw.snapshot(server, tables) and
 *	  binlog_fdw.sync_table(server, table) copy MySQL tables into PostgreSQL
 *	  from one consistent snapshot and record, per table, the binlog position
 *	  of that snapshot: apply skips the changes before it (they are in the
 *	  copy) and applies every change after it, so there is no gap and no
 *	  duplicate while the source keeps taking writes.
 *
 * Each table's target is created from information_schema when it does not
 * exist (mapped types, NOT NULL, literal defaults, primary key; see
 * typemap.c).  Rows stream from the source straight into COPY's machinery
 * (BeginCopyFrom with a data callback), so multi-row inserts, partition
 * routing, triggers and constraints work as with COPY.  Progress is in
 * binlog_fdw.sync_progress (rows copied / estimated, progress.c) and
 * pg_stat_progress_copy.  Everything happens in the calling transaction.
 */
#include "apply/apply.h"

#include "bl_geometry.h"
#include "bl_mysql_snapshot.h"

#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_foreign_server.h"
#include "catalog/pg_namespace.h"
#include "commands/copy.h"
#include "common/cryptohash.h"
#include "common/sha2.h"
#include "executor/spi.h"
#include "foreign/foreign.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "parser/parse_node.h"
#include "parser/parse_relation.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "storage/lmgr.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(binlog_fdw_snapshot);

/* ---- the COPY data callback ---- */

typedef enum col_kind
{
	CK_TEXT,					/* as the source prints it */
	CK_BYTES,					/* binary: \\x hex */
	CK_BIT,						/* CAST AS UNSIGNED -> bit string */
	CK_SET,						/* "a,b" -> {a,b} */
	CK_DATE,					/* zero dates */
	CK_TIMESTAMP,				/* UTC, plus zero dates */
	CK_TIME,
	CK_BOOL,
	CK_GEOMETRY,				/* EWKB: \\x hex (bytea, text), bare hex (PostGIS) */
	CK_GEOMETRY_POSTGIS
} col_kind;

typedef struct copy_col
{
	bl_snapshot_column *src;
	col_kind	kind;
	int			bits;
	/* masked (binlog_fdw.filters): the value the worker would put instead */
	const blpg_filter_mask *mask;	/* NULL: the source's value */
	bool		mask_bytea;		/* into bytea (else text) */
	bool		mask_strip;		/* BINARY(n): the binlog drops trailing zeros */
	int64		mask_max;		/* the bytes its binlog length prefix holds */
} copy_col;

typedef struct copy_state
{
	bl_snapshot *snap;
	copy_col   *cols;
	int			ncols;
	StringInfoData line;
	int			line_off;
	bool		done;
	int64		rows;
	blpg_progress *progress;
	const blpg_apply_options *opts;
	const char *source;
	int			nkey;			/* chunked: the key's columns, 0: not chunked */
	int			key_cols[BLPG_CHUNK_KEY_MAX];	/* ... their indexes in cols */
	StringInfoData last_key;	/* chunked: the key of the last row, its
								 * values comma-separated (integers) */
} copy_state;

static copy_state *current_copy = NULL;

#define SNAPSHOT_ATTEMPTS 5

/* set when a source error came from DDL running during the snapshot */
static bool snapshot_ddl_raced = false;

static void
append_copy_escaped(StringInfo b, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
	{
		char		c = s[i];

		switch (c)
		{
			case '\\':
				appendStringInfoString(b, "\\\\");
				break;
			case '\t':
				appendStringInfoString(b, "\\t");
				break;
			case '\n':
				appendStringInfoString(b, "\\n");
				break;
			case '\r':
				appendStringInfoString(b, "\\r");
				break;
			case '\0':
				ereport(ERROR,
						(errcode(ERRCODE_CHARACTER_NOT_IN_REPERTOIRE),
						 errmsg("a value contains a NUL character, which PostgreSQL text cannot hold")));
				break;
			default:
				appendStringInfoChar(b, c);
		}
	}
}

static bool
zero_date(const char *v)
{
	return strncmp(v, "0000-", 5) == 0 || strstr(v, "-00") == v + 4 || strncmp(v + 7, "-00", 3) == 0;
}

static void
format_value(copy_state *cs, copy_col *c, const char *v, unsigned long len, StringInfo b)
{
	switch (c->kind)
	{
		case CK_BYTES:
			appendStringInfoString(b, "\\\\x");
			for (unsigned long i = 0; i < len; i++)
				appendStringInfo(b, "%02x", (unsigned char) v[i]);
			return;
		case CK_BIT:
			{
				unsigned long long u = strtoull(v, NULL, 10);

				for (int i = c->bits - 1; i >= 0; i--)
					appendStringInfoChar(b, (u >> i) & 1 ? '1' : '0');
				return;
			}
		case CK_BOOL:
			appendStringInfoString(b, strtoll(v, NULL, 10) != 0 ? "t" : "f");
			return;
		case CK_SET:
			{
				StringInfoData arr;

				initStringInfo(&arr);
				appendStringInfoChar(&arr, '{');
				for (unsigned long i = 0, start = 0; i <= len; i++)
				{
					if (i == len || v[i] == ',')
					{
						if (i > start || len > 0)
						{
							if (arr.len > 1)
								appendStringInfoChar(&arr, ',');
							appendStringInfoChar(&arr, '"');
							for (unsigned long k = start; k < i; k++)
							{
								if (v[k] == '"' || v[k] == '\\')
									appendStringInfoChar(&arr, '\\');
								appendStringInfoChar(&arr, v[k]);
							}
							appendStringInfoChar(&arr, '"');
						}
						start = i + 1;
					}
				}
				appendStringInfoChar(&arr, '}');
				if (len == 0)
				{
					resetStringInfo(&arr);
					appendStringInfoString(&arr, "{}");
				}
				append_copy_escaped(b, arr.data, arr.len);
				return;
			}
		case CK_DATE:
		case CK_TIMESTAMP:
			if (len >= 10 && zero_date(v))
			{
				if (cs->opts->zero_date == BLPG_ZERO_ERROR)
					ereport(ERROR,
							(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
							 errmsg("zero date in column \"%s\" of %s", c->src->name, cs->source),
							 errhint("Set the source's zero_date option to 'null' or '-infinity'.")));
				appendStringInfoString(b, cs->opts->zero_date == BLPG_ZERO_NULL ? "\\N" : "-infinity");
				return;
			}
			append_copy_escaped(b, v, len);
			if (c->kind == CK_TIMESTAMP)
				appendStringInfoString(b, "+00");
			return;
		case CK_TIME:
			/* into time: only 00:00:00 to 24:00:00, as apply checks too */
			if (v[0] == '-' || strtol(v, NULL, 10) > 24 ||
				(strtol(v, NULL, 10) == 24 && strspn(v + 2, ":0.") != len - 2))
				ereport(ERROR,
						(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
						 errmsg("TIME value %.*s in column \"%s\" of %s is outside the range of type time",
								(int) len, v, c->src->name, cs->source),
						 errhint("Map MySQL TIME to interval (the source's time_type option) to keep negative and over-24-hour values.")));
			append_copy_escaped(b, v, len);
			return;
		case CK_TEXT:
			append_copy_escaped(b, v, len);
			return;
		case CK_GEOMETRY:
		case CK_GEOMETRY_POSTGIS:
			{
				uint8		hdr[BL_EWKB_HEADER_MAX];
				size_t		hdrlen,
							rest;
				bl_error	err;

				memset(&err, 0, sizeof(err));
				if (bl_geometry_ewkb_parts((const uint8 *) v, len, hdr, &hdrlen, &rest, &err) != 0)
					ereport(ERROR,
							(errcode(ERRCODE_DATA_CORRUPTED),
							 errmsg("cannot copy column \"%s\" of %s: %s", c->src->name, cs->source,
									err.message)));
				if (c->kind == CK_GEOMETRY)
					appendStringInfoString(b, "\\\\x");
				for (size_t i = 0; i < hdrlen; i++)
					appendStringInfo(b, "%02x", hdr[i]);
				for (unsigned long i = rest; i < len; i++)
					appendStringInfo(b, "%02x", (unsigned char) v[i]);
				return;
			}
	}
}

static bool
geometry_data_type(const char *t)
{
	static const char *const names[] = {"geometry", "point", "linestring", "polygon",
		"multipoint", "multilinestring", "multipolygon", "geometrycollection", "geomcollection"};

	for (int i = 0; i < (int) lengthof(names); i++)
		if (pg_strcasecmp(t, names[i]) == 0)
			return true;
	return false;
}

/* Is type PostGIS's geometry or geography (no fixed OID)? */
static bool
postgis_type(Oid type)
{
	Oid			infunc,
				ioparam;
	char	   *name;

	getTypeInputInfo(type, &infunc, &ioparam);
	name = get_func_name(infunc);
	return name && (strcmp(name, "geometry_in") == 0 || strcmp(name, "geography_in") == 0);
}

/*
 * A masked value, as the worker's mask (store/sink.c, mask_value) and
 * apply's conversion (types/convert.c) make it from the binlog's bytes:
 * the hash is of the value's bytes in its column's character set (read as
 * CAST(... AS BINARY); BINARY(n) without the trailing zeros its binlog
 * drops), lowercase hex; into bytea BINARY(n) gets them back.
 */
static void
format_masked(copy_state *cs, copy_col *c, const char *v, unsigned long len, StringInfo b)
{
	const char *out;
	size_t		outlen;
	char		hex[PG_SHA256_DIGEST_LENGTH * 2 + 1];

	if (c->mask->kind == BLPG_MASK_VALUE)
	{
		out = c->mask->value;
		outlen = strlen(out);
	}
	else
	{
		uint8		digest[PG_SHA256_DIGEST_LENGTH];
		pg_cryptohash_ctx *ctx;
		bool		ok;

		if (c->mask_strip)
			while (len > 0 && v[len - 1] == '\0')
				len--;
		ctx = pg_cryptohash_create(PG_SHA256);
		ok = ctx != NULL && pg_cryptohash_init(ctx) == 0 &&
			pg_cryptohash_update(ctx, (const uint8 *) v, len) == 0 &&
			pg_cryptohash_final(ctx, digest, sizeof(digest)) == 0;
		pg_cryptohash_free(ctx);
		if (!ok)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("could not compute the SHA-256 of a masked value")));
		for (int i = 0; i < PG_SHA256_DIGEST_LENGTH; i++)
			snprintf(hex + 2 * i, 3, "%02x", digest[i]);
		out = hex;
		outlen = PG_SHA256_DIGEST_LENGTH * 2;
	}
	if (c->mask_max > 0 && (int64) outlen > c->mask_max)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the masked value of column %s of %s is %zu bytes, more than its length prefix of %s holds",
						c->src->name, cs->source, outlen,
						c->mask_max == 255 ? "1 byte" : c->mask_max == 65535 ? "2 bytes" : "3 bytes"),
				 errhint("Use a shorter mask value (binlog_fdw.set_filter()).")));
	if (c->mask_bytea)
	{
		int64		width = c->mask_strip ? c->src->octet_length : 0;

		appendStringInfoString(b, "\\\\x");
		for (size_t i = 0; i < outlen; i++)
			appendStringInfo(b, "%02x", (unsigned char) out[i]);
		for (int64 i = (int64) outlen; i < width; i++)
			appendStringInfoString(b, "00");
	}
	else
		append_copy_escaped(b, out, outlen);
}

/* Next row as a COPY text line; false at the end. */
static bool
next_line(copy_state *cs)
{
	char	  **values;
	unsigned long *lengths;
	bl_error	err;
	int			rc;

	resetStringInfo(&cs->line);
	cs->line_off = 0;
	memset(&err, 0, sizeof(err));
	rc = bl_snapshot_fetch(cs->snap, &values, &lengths, &err);
	if (rc < 0 && bl_snapshot_definition_changed(cs->snap))
		snapshot_ddl_raced = true;
	if (rc < 0)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_UNABLE_TO_CREATE_EXECUTION),
				 errmsg("could not read the rows of %s: %s", cs->source, err.message)));
	if (rc == 0)
		return false;
	for (int i = 0; i < cs->ncols; i++)
	{
		if (i)
			appendStringInfoChar(&cs->line, '\t');
		if (values[i] == NULL ||
			(cs->cols[i].mask && cs->cols[i].mask->kind == BLPG_MASK_NULL))
			appendStringInfoString(&cs->line, "\\N");
		else if (cs->cols[i].mask)
			format_masked(cs, &cs->cols[i], values[i], lengths[i], &cs->line);
		else
			format_value(cs, &cs->cols[i], values[i], lengths[i], &cs->line);
	}
	appendStringInfoChar(&cs->line, '\n');
	if (cs->nkey > 0)
	{
		resetStringInfo(&cs->last_key);
		for (int k = 0; k < cs->nkey; k++)
		{
			int			c = cs->key_cols[k];

			if (values[c] == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						 errmsg("key column \"%s\" of %s is NULL in a row of its chunked load",
								cs->cols[c].src->name, cs->source)));
			if (k)
				appendStringInfoChar(&cs->last_key, ',');
			appendBinaryStringInfo(&cs->last_key, values[c], (int) lengths[c]);
		}
	}
	cs->rows++;
	if (cs->rows % 1000 == 0)
		blpg_progress_update(cs->progress, cs->rows);
	return true;
}

static int
copy_data(void *outbuf, int minread, int maxread)
{
	copy_state *cs = current_copy;
	int			n = 0;

	while (n < minread || n == 0)
	{
		int			avail;

		if (cs->line_off >= cs->line.len)
		{
			if (cs->done || !next_line(cs))
			{
				cs->done = true;
				break;
			}
		}
		avail = Min(cs->line.len - cs->line_off, maxread - n);
		memcpy((char *) outbuf + n, cs->line.data + cs->line_off, avail);
		cs->line_off += avail;
		n += avail;
		if (n >= maxread)
			break;
	}
	return n;
}

/* ---- one table ---- */

static const char *
pg_schema_of(const blpg_apply_options *opts, const char *db)
{
	ListCell   *lc;

	foreach(lc, opts->schema_map)
	{
		List	   *pair = lfirst(lc);

		if (strcmp(strVal(linitial(pair)), db) == 0)
			return strVal(lsecond(pair));
	}
	return db;
}

static bool
numeric_literal(const char *s)
{
	char	   *end;

	if (*s == '\0')
		return false;
	(void) strtod(s, &end);
	return *end == '\0';
}

/* ---- binlog_fdw.filters in a copy: what the worker and apply would do ---- */

/* The mask of column name in rule, or NULL. */
static const blpg_filter_mask *
column_mask(const blpg_filter_rule *rule, const char *name)
{
	ListCell   *lc;

	if (rule == NULL)
		return NULL;
	foreach(lc, rule->masks)
	{
		const blpg_filter_mask *m = lfirst(lc);

		if (pg_strcasecmp(m->column, name) == 0)
			return m;
	}
	return NULL;
}

static bool
column_dropped(const blpg_filter_rule *rule, const char *name)
{
	return rule != NULL && blpg_filter_drops_column(rule, name);
}

/* The leading word of a column's type: "varchar" of "varchar(10)". */
static char *
type_word(const bl_snapshot_column *c)
{
	size_t		n = strspn(c->column_type, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ");
	char	   *w = pnstrdup(c->column_type, n);

	for (char *p = w; *p; p++)
		*p = pg_ascii_tolower((unsigned char) *p);
	return w;
}

/*
 * The bytes a value or hash may have in place of the column's (the bytes
 * its binlog length prefix holds, 0: no limit we check), or -1 if its
 * binlog form cannot take one (decoder's bl_column_editable: CHAR,
 * VARCHAR, TEXT, BINARY, VARBINARY and BLOB, not COMPRESSED).
 */
static int64
mask_room(const bl_snapshot_column *c)
{
	char	   *w = type_word(c);

	if (strcasestr(c->column_type, "compressed"))
		return -1;
	if (strcmp(w, "char") == 0 || strcmp(w, "varchar") == 0 ||
		strcmp(w, "binary") == 0 || strcmp(w, "varbinary") == 0)
		return c->octet_length > 255 ? 65535 : 255;
	if (strcmp(w, "tinytext") == 0 || strcmp(w, "tinyblob") == 0)
		return 255;
	if (strcmp(w, "text") == 0 || strcmp(w, "blob") == 0)
		return 65535;
	if (strcmp(w, "mediumtext") == 0 || strcmp(w, "mediumblob") == 0)
		return 16777215;
	if (strcmp(w, "longtext") == 0 || strcmp(w, "longblob") == 0)
		return 0;
	return -1;
}

/*
 * Apply reads a masked value's bytes in the column's character set: into
 * text, the copy gives the same text only if they read the same in UTF-8.
 */
static bool
mask_reads_as_utf8(const bl_snapshot_column *c, const blpg_filter_mask *m)
{
	const char *cs = c->charset;

	if (cs == NULL || strcmp(cs, "binary") == 0)
		return false;
	if (strcmp(cs, "utf8") == 0 || strcmp(cs, "utf8mb3") == 0 || strcmp(cs, "utf8mb4") == 0)
		return true;
	if (strcmp(cs, "ucs2") == 0 || strncmp(cs, "utf16", 5) == 0 || strcmp(cs, "utf32") == 0 ||
		strcmp(cs, "swe7") == 0)
		return false;
	if (m->kind == BLPG_MASK_SHA256)
		return true;			/* hex digits */
	for (const char *p = m->value; *p; p++)
		if ((unsigned char) *p >= 0x80)
			return false;
	return true;
}

/*
 * A column the table's own rule names must exist, as the worker checks
 * (store/sink.c); one of the rule of every table ("*") is for the tables
 * that have it.
 */
static void
check_rule_columns(const blpg_filter_rule *rule, bl_snapshot_column *cols, int ncols,
				   const char *server_name, const char *source)
{
	List	   *names[3] = {NIL, NIL, NIL};
	const char *what[3] = {"columns", "exclude_columns", "mask"};
	ListCell   *lc;

	if (rule->own_columns)
	{
		names[0] = rule->columns;
		names[1] = rule->exclude;
	}
	if (rule->own_masks)
		foreach(lc, rule->masks)
			names[2] = lappend(names[2], ((const blpg_filter_mask *) lfirst(lc))->column);
	for (int k = 0; k < 3; k++)
		foreach(lc, names[k])
		{
			const char *name = lfirst(lc);
			bool		found = false;

			for (int i = 0; i < ncols && !found; i++)
				found = pg_strcasecmp(cols[i].name, name) == 0;
			if (!found)
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_COLUMN),
						 errmsg("the filter of %s names column \"%s\" in %s, which the table does not have on source \"%s\"",
								source, name, what[k], server_name),
						 errdetail("Nothing of the table was copied."),
						 errhint("Correct the filter with binlog_fdw.set_filter('%s', '%s', ...).",
								 server_name, rule->source)));
		}
}

/*
 * The target a copy creates holds what the filter gives: no column for
 * one it leaves out, text for a varchar(n) a value or hash replaces (the
 * mask may be longer), no NOT NULL on one masked with NULL.
 */
static void
create_target(const char *schema, const char *table, bl_snapshot_column *cols, int ncols,
			  const blpg_apply_options *opts, const char *source,
			  const blpg_filter_rule *rule)
{
	StringInfoData sql;
	bool		first = true;
	int			npk = 0;

	initStringInfo(&sql);
	/*
	 * Loads of other tables into the same new schema (parallel loaders)
	 * wait here for the first to commit it: CREATE SCHEMA IF NOT EXISTS is
	 * not safe against a concurrent one.
	 */
	if (!OidIsValid(get_namespace_oid(schema, true)))
		LockDatabaseObject(NamespaceRelationId, InvalidOid, 0, ExclusiveLock);
	if (!OidIsValid(get_namespace_oid(schema, true)))
	{
		appendStringInfo(&sql, "CREATE SCHEMA IF NOT EXISTS %s", quote_identifier(schema));
		if (SPI_execute(sql.data, false, 0) < 0)
			elog(ERROR, "could not create schema %s", schema);
		resetStringInfo(&sql);
	}
	appendStringInfo(&sql, "CREATE TABLE %s.%s (", quote_identifier(schema), quote_identifier(table));
	for (int i = 0; i < ncols; i++)
	{
		const char *pgtype;
		const blpg_filter_mask *mask = column_mask(rule, cols[i].name);

		if (column_dropped(rule, cols[i].name))
		{
			if (cols[i].pk_position > 0)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot create the target of %s: its filter leaves out column \"%s\" of its primary key",
								source, cols[i].name),
						 errdetail("Apply finds the rows of updates and deletes by their key."),
						 errhint("Keep the key's columns (binlog_fdw.set_filter()), or create the target with a key of its own first.")));
			continue;
		}
		pgtype = blpg_map_type(cols[i].column_type, opts);
		if (pgtype && mask && mask->kind != BLPG_MASK_NULL && strncmp(pgtype, "varchar(", 8) == 0)
			pgtype = "text";
		if (pgtype == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("column \"%s\" of %s has type %s, which has no PostgreSQL mapping",
							cols[i].name, source, cols[i].column_type)));
		appendStringInfo(&sql, "%s%s %s", first ? "" : ", ", quote_identifier(cols[i].name), pgtype);
		if (cols[i].default_value && !cols[i].generated)
		{
			const char *d = cols[i].default_value;

			if (pg_strcasecmp(d, "current_timestamp()") == 0 || pg_strcasecmp(d, "current_timestamp") == 0)
				appendStringInfoString(&sql, " DEFAULT now()");
			else if (numeric_literal(d) && strcmp(pgtype, "boolean") != 0 &&
					 strstr(pgtype, "bit") == NULL)
				appendStringInfo(&sql, " DEFAULT %s", d);
			else if (numeric_literal(d) && strcmp(pgtype, "boolean") == 0)
				appendStringInfo(&sql, " DEFAULT %s", strtod(d, NULL) != 0 ? "true" : "false");
			else if (d[0] == '\'' && d[strlen(d) - 1] == '\'' && strlen(d) >= 2)
			{
				/* MariaDB quotes string defaults: '...' with '' inside */
				StringInfoData lit;
				const char *t = cols[i].data_type;

				initStringInfo(&lit);
				for (size_t k = 1; k + 1 < strlen(d); k++)
				{
					if (d[k] == '\'' && d[k + 1] == '\'')
						k++;
					appendStringInfoChar(&lit, d[k]);
				}

				/*
				 * Constant defaults matter with binlog_row_image MINIMAL:
				 * an insert's image lacks the columns it did not give, and
				 * the target's default fills them in.
				 */
				if (strncmp(pgtype, "varchar", 7) == 0 || strcmp(pgtype, "text") == 0)
					appendStringInfo(&sql, " DEFAULT %s", quote_literal_cstr(lit.data));
				else if ((strcmp(t, "date") == 0 || strcmp(t, "datetime") == 0 ||
						  strcmp(t, "timestamp") == 0) && lit.len >= 10)
				{
					if (!zero_date(lit.data))
						appendStringInfo(&sql, " DEFAULT %s%s", quote_literal_cstr(lit.data),
										 strcmp(t, "timestamp") == 0 ? "::timestamptz" : "");
					else if (opts->zero_date == BLPG_ZERO_NEG_INFINITY)
						appendStringInfoString(&sql, " DEFAULT '-infinity'");
				}
				else if (strcmp(t, "time") == 0)
					appendStringInfo(&sql, " DEFAULT %s", quote_literal_cstr(lit.data));
				else if (strcmp(pgtype, "text[]") == 0)
				{
					/* SET 'a,b': {"a","b"} */
					StringInfoData arr;
					char	   *tok,
							   *save = NULL;

					initStringInfo(&arr);
					appendStringInfoChar(&arr, '{');
					for (tok = strtok_r(lit.data, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
						appendStringInfo(&arr, "%s\"%s\"", arr.len > 1 ? "," : "", tok);
					appendStringInfoChar(&arr, '}');
					appendStringInfo(&sql, " DEFAULT %s", quote_literal_cstr(arr.data));
				}
			}
			else if (d[0] == 'b' && d[1] == '\'' && strstr(pgtype, "bit") != NULL)
			{
				/* BIT b'101' */
				StringInfoData bits;

				const char *k = d + 2;
				size_t		n = strspn(k, "01");
				const char *w = strchr(pgtype, '(');
				int			width = w ? atoi(w + 1) : (int) n;

				/* padded to the column's width, as apply writes BIT values */
				initStringInfo(&bits);
				for (int z = (int) n; z < width; z++)
					appendStringInfoChar(&bits, '0');
				appendBinaryStringInfo(&bits, k, (int) n);
				appendStringInfo(&sql, " DEFAULT B'%s'", bits.data);
			}
		}
		if (!cols[i].nullable && !(mask && mask->kind == BLPG_MASK_NULL))
			appendStringInfoString(&sql, " NOT NULL");
		first = false;
		if (cols[i].pk_position > npk)
			npk = cols[i].pk_position;
	}
	if (npk)
	{
		appendStringInfoString(&sql, ", PRIMARY KEY (");
		for (int k = 1; k <= npk; k++)
			for (int i = 0; i < ncols; i++)
				if (cols[i].pk_position == k)
					appendStringInfo(&sql, "%s%s", k > 1 ? ", " : "", quote_identifier(cols[i].name));
		appendStringInfoChar(&sql, ')');
	}
	appendStringInfoChar(&sql, ')');
	if (SPI_execute(sql.data, false, 0) < 0)
		elog(ERROR, "could not create %s.%s", schema, table);
}

/*
 * COPY the rows of cs into rel, those passing where (the row filter, as
 * COPY FROM ... WHERE; NIL: all); the progress entry ends either way.
 */
static int64
run_copy(Relation rel, List *attnames, List *where, copy_state *cs)
{
	volatile int64 rows = 0;

	current_copy = cs;
	PG_TRY();
	{
		ParseState *pstate = make_parsestate(NULL);
		CopyFromState cstate;
		ParseNamespaceItem *nsitem;

		/* as COPY itself does: the relation is the query's range table */
		nsitem = addRangeTableEntryForRelation(pstate, rel, RowExclusiveLock,
											   NULL, false, false);
		nsitem->p_rte->requiredPerms = ACL_INSERT;
		cstate = BeginCopyFrom(pstate, rel, (Node *) where, NULL, false, copy_data, attnames, NIL);

		rows = (int64) CopyFrom(cstate);
		EndCopyFrom(cstate);
	}
	PG_CATCH();
	{
		current_copy = NULL;
		blpg_progress_end(cs->progress);
		PG_RE_THROW();
	}
	PG_END_TRY();
	current_copy = NULL;
	blpg_progress_end(cs->progress);
	return rows;
}

/*
 * A source table's row of binlog_fdw.table_mapping, read and written as the
 * extension's owner: roles granted snapshot() need no privileges on it.
 */
typedef struct snapshot_mapping
{
	const char *server_name;
	const char *db;
	const char *table;
	MemoryContext cxt;			/* for what is read */
	char	   *target_schema;	/* NULL: no mapping */
	char	   *target_table;
	const char *file;			/* the snapshot's position, to write */
	uint64		pos;
	const char *gtid;			/* the GTID state there, NULL or "": not read */
} snapshot_mapping;

static void
mapping_read_fn(void *arg)
{
	snapshot_mapping *m = arg;
	Oid			argtypes[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		args[3];

	args[0] = CStringGetTextDatum(m->server_name);
	args[1] = CStringGetTextDatum(m->db);
	args[2] = CStringGetTextDatum(m->table);
	if (SPI_execute_with_args("SELECT target_schema, target_table FROM binlog_fdw.table_mapping "
							  "WHERE server_name = $1 AND source_schema = $2 AND source_table = $3",
							  3, argtypes, args, NULL, true, 1) == SPI_OK_SELECT && SPI_processed == 1)
	{
		char	   *ts = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		char	   *tt = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);

		m->target_schema = ts ? MemoryContextStrdup(m->cxt, ts) : NULL;
		m->target_table = tt ? MemoryContextStrdup(m->cxt, tt) : NULL;
	}
}

static void
mapping_write_fn(void *arg)
{
	snapshot_mapping *m = arg;
	Oid			types[8] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT8OID, TEXTOID};
	Datum		vals[8];
	char		nulls[8] = "       ";

	vals[0] = CStringGetTextDatum(m->server_name);
	vals[1] = CStringGetTextDatum(m->db);
	vals[2] = CStringGetTextDatum(m->table);
	vals[3] = CStringGetTextDatum(m->target_schema);
	vals[4] = CStringGetTextDatum(m->target_table);
	vals[5] = CStringGetTextDatum(m->file);
	vals[6] = Int64GetDatum((int64) m->pos);
	vals[7] = m->gtid && m->gtid[0] ? CStringGetTextDatum(m->gtid) : (Datum) 0;
	nulls[7] = m->gtid && m->gtid[0] ? ' ' : 'n';
	/* a whole copy replaces a chunked load (0.1's table has no chunks) */
	if (SPI_execute_with_args(psprintf("INSERT INTO binlog_fdw.table_mapping AS m "
									   "(server_name, source_schema, source_table, target_schema, target_table, "
									   "sync_file, sync_pos, synced_at%s) VALUES ($1, $2, $3, $4, $5, $6, $7, now()%s) "
									   "ON CONFLICT (server_name, source_schema, source_table) DO UPDATE "
									   "SET target_schema = excluded.target_schema, target_table = excluded.target_table, "
									   "sync_file = excluded.sync_file, sync_pos = excluded.sync_pos, "
									   "synced_at = excluded.synced_at%s",
									   blpg_tables_legacy() ? "" : ", sync_gtid",
									   blpg_tables_legacy() ? "" : ", $8",
									   blpg_tables_legacy() ? "" :
									   ", load_key_hi = NULL, load_file = NULL, load_pos = NULL, "
									   "load_rows = NULL, load_digest = NULL, load_created = NULL, "
									   "load_key_columns = NULL, load_estimate = NULL, "
									   "load_split = NULL, load_range = NULL, sync_gtid = excluded.sync_gtid"),
							  blpg_tables_legacy() ? 7 : 8, types, vals, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not record the snapshot position of %s.%s", m->db, m->table);
}

typedef struct table_result
{
	char	   *source;
	char	   *target;
	int64		rows;
	bool		created;
	Oid			relid;			/* the target */
	List	   *attnames;		/* its columns copied */
	int64		estimate;		/* the source's estimate of its rows */
	TimestampTz started;		/* when its copy began */
} table_result;

/*
 * A primary key of integer columns (chunks by its ranges, in key order):
 * its columns' indexes in cols, in key order, and how many (0: none such,
 * or more than BLPG_CHUNK_KEY_MAX columns).
 */
static int
chunk_key_columns(bl_snapshot_column *cols, int ncols, int *key)
{
	static const char *const ints[] = {"tinyint", "smallint", "mediumint", "int", "bigint"};
	int			nkey = 0;

	for (int i = 0; i < ncols; i++)
		if (cols[i].pk_position > nkey)
			nkey = cols[i].pk_position;
	if (nkey == 0 || nkey > BLPG_CHUNK_KEY_MAX)
		return 0;
	for (int k = 0; k < nkey; k++)
	{
		bool		integer = false;

		key[k] = -1;
		for (int i = 0; i < ncols; i++)
			if (cols[i].pk_position == k + 1)
				key[k] = i;
		if (key[k] < 0)
			return 0;
		for (int t = 0; t < (int) lengthof(ints); t++)
			if (strcmp(cols[key[k]].data_type, ints[t]) == 0)
				integer = true;
		if (!integer)
			return 0;
	}
	return nkey;
}

/*
 * A chunk bound: nkey integers, comma-separated (what the chunks record,
 * and the bounds of the key ranges of load.c); an error names it.
 */
static char **
chunk_bound_values(const char *bound, int nkey, const char *what)
{
	char	  **vals = palloc0(sizeof(char *) * nkey);
	char	   *copy = pstrdup(bound);
	char	   *save = NULL;
	int			n = 0;
	bool		more = false;

	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (n < nkey)
			vals[n++] = tok;
		else
			more = true;
	if (n != nkey || more)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the %s \"%s\" of a chunked load does not have %d key values", what, bound, nkey)));
	for (int k = 0; k < nkey; k++)
		if (!numeric_literal(vals[k]))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("the %s \"%s\" of a chunked load is not made of integers", what, bound)));
	return vals;
}

/*
 * The key as a row compared with the bound vals, written out column by
 * column so that MySQL ranges over the primary key: (k1, k2, ...) > (v1,
 * v2, ...) is k1 > v1 OR (k1 = v1 AND k2 > v2) OR ...; with upto, <=
 * instead (k1 < v1 OR ... OR (k1 = v1 AND ... AND kn <= vn)).
 */
static void
append_key_compare(StringInfo b, bl_snapshot_column *cols, const int *key, int nkey,
				   char **vals, bool upto)
{
	char		qi[600];

	appendStringInfoChar(b, '(');
	for (int k = 0; k < nkey; k++)
	{
		if (k)
			appendStringInfoString(b, " OR ");
		appendStringInfoChar(b, '(');
		for (int e = 0; e < k; e++)
		{
			bl_snapshot_quote_ident(cols[key[e]].name, qi, sizeof(qi));
			appendStringInfo(b, "%s = %s AND ", qi, vals[e]);
		}
		bl_snapshot_quote_ident(cols[key[k]].name, qi, sizeof(qi));
		appendStringInfo(b, "%s %s %s)", qi,
						 !upto ? ">" : k == nkey - 1 ? "<=" : "<", vals[k]);
	}
	appendStringInfoChar(b, ')');
}

/*
 * The condition of a chunk after the key "after" (integers, comma-
 * separated; NULL: none): (k1, k2, ...) > (a1, a2, ...) in the key's order;
 * and up to the key "upto" (a range's upper bound, as many integers; NULL:
 * none): (k1, k2, ...) <= (u1, u2, ...).  A key of one column keeps the
 * plain k1 <= u of a range's bound.
 */
static void
append_chunk_condition(StringInfo b, bl_snapshot_column *cols, const int *key, int nkey,
					   const char *after, const char *upto)
{
	char		qi[600];

	if (after == NULL && upto == NULL)
		return;
	appendStringInfoString(b, " WHERE ");
	if (after)
		append_key_compare(b, cols, key, nkey, chunk_bound_values(after, nkey, "chunk bound"), false);
	if (upto)
	{
		char	  **vals = chunk_bound_values(upto, nkey, "range bound");

		if (after)
			appendStringInfoString(b, " AND ");
		if (nkey == 1)
		{
			bl_snapshot_quote_ident(cols[key[0]].name, qi, sizeof(qi));
			appendStringInfo(b, "%s <= %s", qi, vals[0]);
		}
		else
			append_key_compare(b, cols, key, nkey, vals, true);
	}
}

/* verify() (verify.c): copy into this relation instead of the target */
static Oid	copy_into = InvalidOid;

/*
 * A table whose foreign keys have ON DELETE / ON UPDATE actions that change
 * its rows (CASCADE, SET NULL, SET DEFAULT): InnoDB makes those changes
 * inside the engine and MySQL and MariaDB write none of them to the binlog,
 * so the stream would miss them and the target would keep the rows.  Not
 * copied: an error before anything is written.
 */
static void
check_fk_actions(bl_snapshot *snap, const char *db, const char *table, const char *server_name,
				 const char *source)
{
	char		desc[1024];
	bl_error	err;
	int			n;

	memset(&err, 0, sizeof(err));
	n = bl_snapshot_fk_actions(snap, db, table, desc, sizeof(desc), &err);
	if (n < 0)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_UNABLE_TO_CREATE_EXECUTION),
				 errmsg("could not read the foreign keys of %s on source \"%s\": %s",
						source, server_name, err.message)));
	if (n > 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("table %s of source \"%s\" has %d foreign key%s whose ON DELETE or ON UPDATE action changes its rows",
						source, server_name, n, n == 1 ? "" : "s"),
				 errdetail("%s. MySQL and MariaDB write the rows such an action changes to no binlog: the copy would miss every later change they make.",
						   desc),
				 errhint("Give the foreign key ON DELETE RESTRICT / ON UPDATE RESTRICT (the application then deletes or updates the rows itself, and those changes are logged), or leave %s out of the source.",
						 source)));
}

static table_result
load_table(const char *server_name, bl_snapshot *snap, const char *source,
		   const blpg_apply_options *opts, bool truncate, const char *file, uint64 pos,
		   const char *gtid, blpg_load_chunk *chunk)
{
	table_result res;
	char	   *db,
			   *table;
	bl_snapshot_column *cols;
	int			ncols;
	int64		estimate = 0;
	bl_error	err;
	char	   *schema = NULL;
	char	   *target_table = NULL;
	Oid			nsp,
				relid;
	Relation	rel;
	List	   *attnames = NIL;
	StringInfoData select;
	copy_state	cs;
	char		qi[600];
	snapshot_mapping mapping;
	bool		first = chunk == NULL || chunk->first;
	int			key_src[BLPG_CHUNK_KEY_MAX];
	int			nkey_src = 0;
	const blpg_filter_rule *rule;
	List	   *where = NIL;

	blpg_split_source_table(source, &db, &table);
	memset(&res, 0, sizeof(res));
	res.source = pstrdup(source);
	memset(&err, 0, sizeof(err));
	if (bl_snapshot_columns(snap, db, table, &cols, &ncols, &estimate, &err) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_UNABLE_TO_CREATE_EXECUTION),
				 errmsg("could not read the definition of %s: %s", source, err.message)));
	if (ncols == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("table %s does not exist on source \"%s\"", source, server_name)));
	if (first && !OidIsValid(copy_into))
		check_fk_actions(snap, db, table, server_name, source);

	/*
	 * binlog_fdw.filters: the copy gives the rows the stream would, its
	 * columns left out, masked, and the rows its row filter keeps (its
	 * operations are of changes: a copy is the table's state)
	 */
	rule = blpg_filter_rule_of(blpg_apply_filters(server_name), db, strlen(db),
							   table, strlen(table));
	if (rule)
		check_rule_columns(rule, cols, ncols, server_name, source);

	/* the target: a mapping, or the same names after schema_map */
	memset(&mapping, 0, sizeof(mapping));
	mapping.server_name = server_name;
	mapping.db = db;
	mapping.table = table;
	mapping.cxt = CurrentMemoryContext;
	blpg_run_as_owner(mapping_read_fn, &mapping);
	schema = mapping.target_schema;
	target_table = mapping.target_table;
	if (schema == NULL)
		schema = pstrdup(pg_schema_of(opts, db));
	if (target_table == NULL)
		target_table = table;
	nsp = get_namespace_oid(schema, true);
	relid = OidIsValid(nsp) ? get_relname_relid(target_table, nsp) : InvalidOid;
	if (!OidIsValid(relid) && OidIsValid(copy_into))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("table %s of %s does not exist", quote_qualified_identifier(schema, target_table),
						source)));
	if (!OidIsValid(relid))
	{
		create_target(schema, target_table, cols, ncols, opts, source, rule);
		CommandCounterIncrement();
		relid = get_relname_relid(target_table, get_namespace_oid(schema, false));
		res.created = true;
	}
	res.target = psprintf("%s.%s", quote_identifier(schema), quote_identifier(target_table));
	res.relid = relid;
	/* before the relation is open here: TRUNCATE refuses a table in use */
	if (OidIsValid(copy_into))
		;						/* verify: a new temporary table of ours */
	else if (first && truncate && !res.created)
	{
		if (SPI_execute(psprintf("TRUNCATE %s", res.target), false, 0) < 0)
			elog(ERROR, "could not truncate %s", res.target);
		CommandCounterIncrement();
	}
	rel = table_open(OidIsValid(copy_into) ? copy_into : relid, RowExclusiveLock);
	if (!OidIsValid(copy_into) &&
		pg_class_aclcheck(relid, GetUserId(), ACL_INSERT) != ACLCHECK_OK)
		aclcheck_error(ACLCHECK_NO_PRIV, get_relkind_objtype(rel->rd_rel->relkind),
					   RelationGetRelationName(rel));
	if (truncate || !first || OidIsValid(copy_into))
		;
	else if (!res.created &&
			 (SPI_execute(psprintf("SELECT 1 FROM %s LIMIT 1", res.target), true, 1) != SPI_OK_SELECT ||
			  SPI_processed > 0))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("target %s of %s is not empty", res.target, source),
				 errhint("Pass truncate => true to replace its rows with the source's.")));

	/* SELECT the columns that have a target column, in a loadable form */
	memset(&cs, 0, sizeof(cs));
	for (int k = 0; k < BLPG_CHUNK_KEY_MAX; k++)
		cs.key_cols[k] = -1;
	if (chunk)
		nkey_src = chunk_key_columns(cols, ncols, key_src);
	cs.cols = palloc0(sizeof(copy_col) * ncols);
	initStringInfo(&select);
	appendStringInfoString(&select, "SELECT ");
	for (int i = 0; i < ncols; i++)
	{
		AttrNumber	a;
		copy_col   *c;
		Oid			atttype;

		/* as apply inserts a row without it: the target's default */
		if (column_dropped(rule, cols[i].name))
			continue;
		a = get_attnum(relid, cols[i].name);

		/*
		 * A MariaDB generated column is copied like any other (apply gets its
		 * values from the binlog, too) unless PostgreSQL generates it.
		 */
		if (a == InvalidAttrNumber)
			continue;
		atttype = get_atttype(relid, a);
		if (TupleDescAttr(RelationGetDescr(rel), a - 1)->attgenerated)
			continue;
		c = &cs.cols[cs.ncols];
		c->src = &cols[i];
		c->mask = column_mask(rule, cols[i].name);
		for (int k = 0; k < nkey_src; k++)
			if (i == key_src[k])
				cs.key_cols[k] = cs.ncols;
		bl_snapshot_quote_ident(cols[i].name, qi, sizeof(qi));
		if (cs.ncols)
			appendStringInfoString(&select, ", ");
		if (c->mask && c->mask->kind != BLPG_MASK_NULL)
		{
			/* the value's bytes in its character set, as the binlog has them */
			c->mask_max = mask_room(&cols[i]);
			if (c->mask_max < 0)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("column \"%s\" of %s (%s) cannot be masked with a value or a hash",
								cols[i].name, source, cols[i].column_type),
						 errdetail("Values and hashes replace the bytes of CHAR, VARCHAR, TEXT, BINARY, VARBINARY and BLOB columns only."),
						 errhint("Mask it with {\"value\": null} or leave it out with exclude_columns (binlog_fdw.set_filter()).")));
			c->mask_bytea = atttype == BYTEAOID;
			if (!c->mask_bytea && !mask_reads_as_utf8(&cols[i], c->mask))
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot copy column \"%s\" of %s masked into %s: its character set %s reads the mask's bytes otherwise than UTF-8",
								cols[i].name, source, format_type_be(atttype),
								cols[i].charset ? cols[i].charset : "binary"),
						 errdetail("Apply reads a masked value in the column's character set; the copy gives UTF-8 text."),
						 errhint("Use a mask value of ASCII characters, or mask the column with {\"value\": null} (binlog_fdw.set_filter()).")));
			c->mask_strip = strcmp(cols[i].data_type, "binary") == 0;
			appendStringInfo(&select, "CAST(%s AS BINARY)", qi);
		}
		else if (strcmp(cols[i].data_type, "bit") == 0)
		{
			c->kind = CK_BIT;
			c->bits = 1;
			if (strchr(cols[i].column_type, '('))
				c->bits = atoi(strchr(cols[i].column_type, '(') + 1);
			if (atttype == BOOLOID)
				c->kind = CK_BOOL;
			appendStringInfo(&select, "CAST(%s AS UNSIGNED)", qi);
		}
		else if (atttype == BYTEAOID &&
				 (strcmp(cols[i].data_type, "inet6") == 0 || strcmp(cols[i].data_type, "uuid") == 0 ||
				  strcmp(cols[i].data_type, "inet4") == 0))
		{
			/* MariaDB prints these as text; apply sees their binary form */
			c->kind = CK_BYTES;
			appendStringInfo(&select, "CAST(%s AS BINARY(%d))", qi,
							 strcmp(cols[i].data_type, "inet4") == 0 ? 4 : 16);
		}
		else if (strcmp(cols[i].data_type, "float") == 0)
		{
			/* MySQL prints FLOAT with 6 digits; as DOUBLE it is exact */
			c->kind = atttype == BOOLOID ? CK_BOOL : CK_TEXT;
			appendStringInfo(&select, "CAST(%s AS DOUBLE)", qi);
		}
		else
		{
			appendStringInfoString(&select, qi);
			if (geometry_data_type(cols[i].data_type))
				c->kind = postgis_type(atttype) ? CK_GEOMETRY_POSTGIS : CK_GEOMETRY;
			else if (atttype == BYTEAOID)
				c->kind = CK_BYTES;
			else if (atttype == BOOLOID)
				c->kind = CK_BOOL;
			else if (strcmp(cols[i].data_type, "set") == 0 && atttype == TEXTARRAYOID)
				c->kind = CK_SET;
			else if (strcmp(cols[i].data_type, "date") == 0 || strcmp(cols[i].data_type, "datetime") == 0)
				c->kind = CK_DATE;
			else if (strcmp(cols[i].data_type, "timestamp") == 0)
				c->kind = CK_TIMESTAMP;
			else if (strcmp(cols[i].data_type, "time") == 0 && atttype == TIMEOID)
				c->kind = CK_TIME;
			else
				c->kind = CK_TEXT;
		}
		attnames = lappend(attnames, makeString(pstrdup(get_attname(relid, a, false))));
		cs.ncols++;
	}
	bl_snapshot_quote_ident(db, qi, sizeof(qi));
	appendStringInfo(&select, " FROM %s.", qi);
	bl_snapshot_quote_ident(table, qi, sizeof(qi));
	appendStringInfoString(&select, qi);
	if (cs.ncols == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("target %s has no column of %s", res.target, source)));
	if (rule && rule->row_filter)
	{
		Bitmapset  *fattrs = NULL;
		int			k = -1;

		where = blpg_rowfilter_copy_where(rel, source, rule->row_filter, &fattrs);
		/* as apply: every column it reads comes from the source's rows */
		while ((k = bms_next_member(fattrs, k)) >= 0)
		{
			AttrNumber	attnum = k + FirstLowInvalidHeapAttributeNumber;
			const char *name = attnum > 0 ?
				NameStr(TupleDescAttr(RelationGetDescr(rel), attnum - 1)->attname) : "*";
			bool		copied = false;
			ListCell   *lc;

			foreach(lc, attnames)
				if (strcmp(strVal(lfirst(lc)), name) == 0)
					copied = true;
			if (!copied)
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_COLUMN),
						 errmsg("the row filter of %s reads column \"%s\" of %s, which its rows do not carry",
								source, name, res.target),
						 errdetail("The source has no such column, or the column filter leaves it out."),
						 errhint("Read only columns the filter keeps (binlog_fdw.set_filter()).")));
		}
	}
	/* the key's columns all copied: chunks of it; else one pass */
	cs.nkey = nkey_src;
	for (int k = 0; k < nkey_src; k++)
		if (cs.key_cols[k] < 0)
			cs.nkey = 0;
	/* a chunk: the next key range, in the key's order */
	if (chunk && cs.nkey > 0 && chunk->limit > 0)
	{
		append_chunk_condition(&select, cols, key_src, nkey_src, chunk->after, chunk->upto);
		appendStringInfoString(&select, " ORDER BY ");
		for (int k = 0; k < nkey_src; k++)
		{
			bl_snapshot_quote_ident(cols[key_src[k]].name, qi, sizeof(qi));
			appendStringInfo(&select, "%s%s", k ? ", " : "", qi);
		}
		appendStringInfo(&select, " LIMIT " INT64_FORMAT, chunk->limit);
		chunk->chunked = true;
	}
	else
	{
		cs.nkey = 0;
		if (chunk)
			chunk->chunked = false;
	}
	initStringInfo(&cs.last_key);

	if (bl_snapshot_query(snap, select.data, &err) != 0 && bl_snapshot_definition_changed(snap))
		snapshot_ddl_raced = true;
	if (snapshot_ddl_raced)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("table %s changed on the source during the snapshot: %s", source, err.message)));
	if (err.message[0])
		ereport(ERROR,
				(errcode(ERRCODE_FDW_UNABLE_TO_CREATE_EXECUTION),
				 errmsg("could not read the rows of %s: %s", source, err.message)));
	cs.snap = snap;
	cs.opts = opts;
	cs.source = source;
	initStringInfo(&cs.line);
	res.estimate = estimate;
	res.started = chunk && chunk->started ? chunk->started : GetCurrentTimestamp();
	cs.progress = blpg_progress_begin(server_name, source, res.target, estimate,
									  chunk ? chunk->rows_before : 0, res.started,
									  chunk ? chunk->rows_at_start : 0);
	res.rows = run_copy(rel, attnames, where, &cs);
	table_close(rel, NoLock);
	res.attnames = attnames;
	if (OidIsValid(copy_into))
		return res;

	if (chunk)
	{
		chunk->rows = res.rows;
		chunk->rows_read = cs.rows;
		chunk->estimate = estimate;
		chunk->started = res.started;
		chunk->relid = relid;
		chunk->created = res.created;
		chunk->target = res.target;
		chunk->last_key = cs.last_key.len ? cs.last_key.data : NULL;
		chunk->nkey = cs.nkey;
		for (int k = 0; k < cs.nkey; k++)
			chunk->key_columns[k] = pstrdup(cols[key_src[k]].name);
		chunk->target_schema = schema;
		chunk->target_table = target_table;
	}
	/* from here on, apply takes over: changes after the snapshot */
	if (first)
	{
		mapping.target_schema = schema;
		mapping.target_table = target_table;
		mapping.file = file;
		mapping.pos = pos;
		mapping.gtid = gtid;
		blpg_run_as_owner(mapping_write_fn, &mapping);
	}
	return res;
}

/* The SQL of one index on target, or NULL (*why) if it has no form there. */
static char *
index_sql(const bl_snapshot_index *ix, Oid relid, const char *target, const char **why)
{
	StringInfoData sql;

	if (ix->skip)
	{
		*why = ix->skip;
		return NULL;
	}
	initStringInfo(&sql);
	appendStringInfo(&sql, "CREATE %sINDEX ON %s (", ix->unique ? "UNIQUE " : "", target);
	for (int k = 0; k < ix->ncols; k++)
	{
		if (get_attnum(relid, ix->cols[k]) == InvalidAttrNumber)
		{
			*why = psprintf("the target has no column \"%s\"", ix->cols[k]);
			return NULL;
		}
		appendStringInfo(&sql, "%s%s%s", k ? ", " : "", quote_identifier(ix->cols[k]),
						 ix->descending[k] ? " DESC" : "");
	}
	appendStringInfoChar(&sql, ')');
	return sql.data;
}

void
blpg_snapshot_finish_target(const char *server_name, bl_snapshot *snap, const char *source,
							Oid relid, const char *target, bool created, bool consistent,
							int64 rows, int64 estimate, TimestampTz started, int64 rows_at_start)
{
	bl_snapshot_index *volatile indexes = NULL;
	volatile int nindexes = 0;
	blpg_progress *volatile progress;
	const char *dot = strchr(source, '.');
	bl_error	err;

	memset(&err, 0, sizeof(err));
	if (created &&
		bl_snapshot_indexes(snap, pnstrdup(source, dot - source), dot + 1,
							(bl_snapshot_index **) &indexes, (int *) &nindexes, &err) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_UNABLE_TO_CREATE_EXECUTION),
				 errmsg("could not read the indexes of %s: %s", source, err.message)));
	progress = blpg_progress_begin(server_name, source, target, estimate, rows, started,
								   rows_at_start);
	PG_TRY();
	{
		blpg_progress_set_phase(progress, "building indexes");
		for (int i = 0; i < nindexes; i++)
		{
			const bl_snapshot_index *ix = &indexes[i];
			const char *why = NULL;
			char	   *sql = index_sql(ix, relid, target, &why);

			if (sql && ix->unique && !consistent)
			{
				/*
				 * The chunks were copied at different positions, and apply
				 * brings earlier chunks forward only as it reads on: until
				 * it has passed the last chunk's position two rows may
				 * briefly hold a value the source has on one.
				 */
				ereport(NOTICE,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("unique index %s of %s is not built on %s: the table was loaded in chunks",
								ix->name, source, target),
						 errhint("Create it once apply has passed the load's last position (binlog_fdw.wait_for()): %s.",
								 sql)));
				continue;
			}
			if (sql == NULL)
			{
				ereport(NOTICE,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("index %s of %s is not built on %s: %s", ix->name, source, target, why)));
				continue;
			}
			if (SPI_execute(sql, false, 0) != SPI_OK_UTILITY)
				elog(ERROR, "could not build index %s of %s on %s", ix->name, source, target);
		}
		/* the planner's statistics, as the copy left the table */
		blpg_progress_set_phase(progress, "analyzing");
		if (pg_class_ownercheck(relid, GetUserId()))
		{
			if (SPI_execute(psprintf("ANALYZE %s", target), false, 0) != SPI_OK_UTILITY)
				elog(ERROR, "could not analyze %s", target);
		}
		else
			ereport(NOTICE,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("%s is not analyzed after its load: only its owner can", target)));
	}
	PG_FINALLY();
	{
		blpg_progress_end(progress);
		bl_snapshot_free_indexes(indexes, nindexes);
	}
	PG_END_TRY();
	CommandCounterIncrement();
}

/*
 * The columns of db.table's primary key when they are integers (what a
 * chunked load ranges over; names palloc'd), and
 * the source's estimate of its rows: how many columns, 0 if none such or
 * the table does not exist.  A row filter may still leave the load in one
 * pass (load_table() decides).
 */
int
blpg_chunk_key_of(bl_snapshot *snap, const char *db, const char *table,
				  const char **names, int64 *estimate)
{
	bl_snapshot_column *cols;
	int			ncols;
	int			key[BLPG_CHUNK_KEY_MAX];
	int			nkey;
	bl_error	err;

	*estimate = 0;
	memset(&err, 0, sizeof(err));
	if (bl_snapshot_columns(snap, db, table, &cols, &ncols, estimate, &err) != 0 || ncols == 0)
		return 0;
	nkey = chunk_key_columns(cols, ncols, key);
	for (int k = 0; k < nkey; k++)
		names[k] = pstrdup(cols[key[k]].name);
	return nkey;
}

void
blpg_load_table(const char *server_name, bl_snapshot *snap, const char *source,
				const blpg_apply_options *opts, bool truncate, const char *file, uint64 pos,
				blpg_load_chunk *chunk)
{
	snapshot_ddl_raced = false;
	(void) load_table(server_name, snap, source, opts, truncate, file, pos, NULL, chunk);
}

bool
blpg_copy_begins_source(Oid serverid)
{
	blpg_position state;
	bool		found;

	if (blpg_state_load(serverid, &state))
		return false;
	LockDatabaseObject(ForeignServerRelationId, serverid, 1, ExclusiveLock);

	/*
	 * Another copy that held it first may have committed its position:
	 * read it with a snapshot taken now, not the statement's (older than
	 * the wait).
	 */
	PushActiveSnapshot(GetLatestSnapshot());
	found = blpg_state_load(serverid, &state);
	PopActiveSnapshot();
	return !found;
}

/* blpg_snapshot_seed_history, then the end of snap (in any case) */
static void
seed_history_and_end(Oid serverid, const char *server_name, bl_snapshot *snap,
					 List *sources, const char *file, uint64 pos)
{
	PG_TRY();
	{
		blpg_snapshot_seed_history(serverid, server_name, snap, sources, file, pos);
	}
	PG_CATCH();
	{
		bl_snapshot_end(snap);
		PG_RE_THROW();
	}
	PG_END_TRY();
	bl_snapshot_end(snap);
}

Datum
binlog_fdw_snapshot(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *name;
	ArrayType  *tables;
	bool		truncate = PG_ARGISNULL(2) ? false : PG_GETARG_BOOL(2);
	ForeignServer *server;
	blpg_source_config *cfg;
	blpg_apply_options opts;
	bl_source_options so;
	bl_snapshot *volatile snap = NULL;
	bl_error	err;
	char		file[BLPG_FILE_LEN];
	char	   *gtid = NULL;		/* the GTID state then, of any length */
	uint64_t	pos = 0;
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	AclResult	aclresult;
	bool		begins;
	bl_snapshot_table *locked;
	int			nlocked;

	blpg_require_arg(fcinfo, 0, "server");
	blpg_require_arg(fcinfo, 1, "tables");
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	tables = PG_GETARG_ARRAYTYPE_P(1);
	server = GetForeignServerByName(name, false);
	aclresult = pg_foreign_server_aclcheck(server->serverid, GetUserId(), ACL_USAGE);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_FOREIGN_SERVER, server->servername);
	InitMaterializedSRF(fcinfo, 0);
	cfg = blpg_load_config(server->serverid, GetUserId());
	blpg_apply_options_load(server->serverid, &opts);
	blpg_snapshot_source_options(cfg, &so);
	deconstruct_array(tables, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);

	/*
	 * Apply keeps off these tables until this transaction ends, and sees
	 * their positions then (synclock.c); taken before the snapshot, so
	 * that what apply wrote into them before is older than the copy.
	 */
	{
		List	   *names = NIL;

		for (int i = 0; i < n; i++)
		{
			const char *src = nulls[i] ? NULL : TextDatumGetCString(elems[i]);
			const char *dot = src ? strchr(src, '.') : NULL;

			if (dot == NULL)
				continue;		/* load_table reports it */
			names = lappend(names, makeString(pnstrdup(src, dot - src)));
			names = lappend(names, makeString(pstrdup(dot + 1)));
		}
		blpg_sync_lock_tables(server->serverid, names);
		/* ... and the source holds them still while the snapshot starts */
		locked = blpg_snapshot_tables(names, &nlocked);
	}

	/* a source that has no position begins at this snapshot's */
	begins = blpg_copy_begins_source(server->serverid);

	/*
	 * Table definitions are not part of a snapshot: DDL on a table between
	 * the snapshot's start and the end of its copy would leave the target
	 * in one shape and the stream replaying the DDL from the snapshot's
	 * position.  So each attempt reads every definition before the snapshot
	 * and compares after each copy; on a difference (or an error caused by
	 * DDL) the attempt is rolled back in a subtransaction and retried.
	 */
	for (int attempt = 1;; attempt++)
	{
		char	  **before = palloc0(sizeof(char *) * Max(n, 1));
		List	   *volatile results = NIL;
		volatile bool raced = false;
		MemoryContext cxt = CurrentMemoryContext;
		ResourceOwner owner = CurrentResourceOwner;

		memset(&err, 0, sizeof(err));
		snapshot_ddl_raced = false;
		snap = bl_snapshot_open(&so, &err);
		if (snap == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION),
					 errmsg("could not take a snapshot of source \"%s\": %s", name, err.message)));
		for (int i = 0; i < n && snap; i++)
		{
			const char *src = nulls[i] ? NULL : TextDatumGetCString(elems[i]);
			const char *dot = src ? strchr(src, '.') : NULL;
			char		digest[64];

			if (dot == NULL)
				continue;		/* load_table reports it */
			if (bl_snapshot_definition(snap, pnstrdup(src, dot - src), dot + 1,
									   digest, sizeof(digest), &err) != 0)
			{
				bl_snapshot_end(snap);
				snap = NULL;
			}
			else
				before[i] = pstrdup(digest);
		}
		{
			char	   *raw = NULL;

			if (snap == NULL ||
				bl_snapshot_start(snap, locked, nlocked, file, sizeof(file), &pos,
								  begins || cfg->nhosts > 1 ? &raw : NULL, &err) != 0)
			{
				int			code = blpg_snapshot_start_errcode(snap);
				const char *hint = blpg_snapshot_start_hint(snap, NULL);

				bl_snapshot_end(snap);
				ereport(ERROR,
						(errcode(code),
						 errmsg("could not take a snapshot of source \"%s\": %s", name, err.message),
						 hint ? errhint("%s", hint) : 0));
			}
			gtid = pstrdup(raw ? raw : "");
			free(raw);
		}

		BeginInternalSubTransaction(NULL);
		MemoryContextSwitchTo(cxt);
		PG_TRY();
		{
			if (SPI_connect() != SPI_OK_CONNECT)
				elog(ERROR, "SPI_connect failed");
			for (int i = 0; i < n && !raced; i++)
			{
				table_result *r;
				char		digest[64];
				const char *src;
				const char *dot;
				table_result lr;
				MemoryContext spi_cxt;

				if (nulls[i])
					continue;

				src = TextDatumGetCString(elems[i]);
				lr = load_table(name, snap, src, &opts, truncate, file, pos, gtid, NULL);
				/* SPI's memory goes at SPI_finish: keep the result outside */
				spi_cxt = MemoryContextSwitchTo(cxt);
				r = palloc(sizeof(table_result));
				*r = lr;
				r->source = pstrdup(lr.source);
				r->target = pstrdup(lr.target);
				results = lappend((List *) results, r);
				MemoryContextSwitchTo(spi_cxt);
				dot = strchr(src, '.');
				if (bl_snapshot_definition(snap, pnstrdup(src, dot - src), dot + 1,
										   digest, sizeof(digest), &err) != 0)
					ereport(ERROR,
							(errcode(ERRCODE_FDW_UNABLE_TO_CREATE_EXECUTION),
							 errmsg("could not read the definition of %s: %s", src, err.message)));
				if (before[i] == NULL || strcmp(before[i], digest) != 0)
					raced = true;
				else
					blpg_snapshot_finish_target(name, snap, src, lr.relid, lr.target, lr.created,
												true, lr.rows, lr.estimate, lr.started, 0);
			}
			SPI_finish();
			if (raced)
				RollbackAndReleaseCurrentSubTransaction();
			else
				ReleaseCurrentSubTransaction();
			MemoryContextSwitchTo(cxt);
			CurrentResourceOwner = owner;
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			MemoryContextSwitchTo(cxt);
			edata = CopyErrorData();
			FlushErrorState();
			RollbackAndReleaseCurrentSubTransaction();
			MemoryContextSwitchTo(cxt);
			CurrentResourceOwner = owner;
			bl_snapshot_end(snap);
			snap = NULL;
			if (!snapshot_ddl_raced || attempt >= SNAPSHOT_ATTEMPTS)
				ReThrowError(edata);
			raced = true;
		}
		PG_END_TRY();
		if (raced)
		{
			bl_snapshot_end(snap);
			snap = NULL;
			if (attempt >= SNAPSHOT_ATTEMPTS)
				ereport(ERROR,
						(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
						 errmsg("the source's table definitions changed during each of %d snapshot attempts",
								SNAPSHOT_ATTEMPTS),
						 errhint("Run the snapshot while no DDL runs on these tables.")));
			ereport(NOTICE,
					(errmsg("a table changed on the source during snapshot attempt %d; taking a new snapshot",
							attempt)));
			pg_usleep(1000000L * attempt);
			continue;
		}

		/* the attempt held: report, and record where streaming begins */
		{
			ListCell   *lc;
			blpg_position state;

			foreach(lc, (List *) results)
			{
				table_result *r = lfirst(lc);
				Datum		values[5];
				bool		rnulls[5] = {0};

				values[0] = CStringGetTextDatum(r->source);
				values[1] = CStringGetTextDatum(r->target);
				values[2] = Int64GetDatum(r->rows);
				values[3] = CStringGetTextDatum(psprintf("%s:%llu", file, (unsigned long long) pos));
				values[4] = BoolGetDatum(r->created);
				tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, rnulls);
			}
			/*
			 * a source never started begins streaming at the snapshot, with
			 * the copied tables' definitions there in its schema history
			 */
			if (begins)
			{
				List	   *sources = NIL;

				foreach(lc, (List *) results)
					sources = lappend(sources, makeString(((table_result *) lfirst(lc))->source));
				seed_history_and_end(server->serverid, name, snap, sources, file, pos);
				snap = NULL;
				memset(&state, 0, sizeof(state));
				strlcpy(state.file, file, sizeof(state.file));
				state.pos = pos;
				/* "": the source cannot tell the GTID state there */
				state.gtid_state = gtid[0] ? gtid : NULL;
				blpg_state_save(server->serverid, &state);
			}
			bl_snapshot_end(snap);
			snap = NULL;
		}
		break;
	}
	return (Datum) 0;
}

void
blpg_snapshot_seed_history(Oid serverid, const char *server_name, bl_snapshot *snap,
						   List *sources, const char *file, uint64 pos)
{
	bl_error	err;
	bl_schema_cache *cache;
	blpg_history *history;
	blpg_position at;
	ListCell   *lc;

	memset(&err, 0, sizeof(err));
	cache = bl_snapshot_schema_cache(snap, &err);
	if (cache == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	memset(&at, 0, sizeof(at));
	strlcpy(at.file, file, sizeof(at.file));
	at.pos = pos;
	history = blpg_history_create(server_name, NULL, CurrentMemoryContext);
	blpg_history_lock_server(history, serverid);
	PG_TRY();
	{
		foreach(lc, sources)
		{
			const char *source = strVal(lfirst(lc));
			const char *dot = strchr(source, '.');
			char	   *db = pnstrdup(source, dot - source);
			const bl_schema_table *def = bl_schema_cache_lookup(cache, db, dot + 1);
			char		charset[128];

			if (def == NULL || bl_schema_cache_table_charset(cache, db, dot + 1, charset,
															 sizeof(charset), &err) != 0)
				ereport(ERROR,
						(errcode(ERRCODE_FDW_UNABLE_TO_CREATE_EXECUTION),
						 errmsg("could not read the definition of %s for the schema history of source \"%s\": %s",
								source, server_name,
								def == NULL ? (bl_schema_cache_error(cache)[0] ?
											   bl_schema_cache_error(cache) :
											   "it is not in information_schema") :
								err.message),
						 errdetail("The source would begin streaming at the copy's position %s:%llu without the table's definition there.",
								   file, (unsigned long long) pos),
						 errhint("Take the snapshot again.")));
			blpg_history_seed(history, db, dot + 1, def, charset, NULL, &at);
		}
	}
	PG_FINALLY();
	{
		bl_schema_cache_destroy(cache);
	}
	PG_END_TRY();
}

/*
 * The MySQL connection options of the source's host number host (0-based),
 * or with host -1 of its whole "host" option: the client library tries
 * the entries of a list in order.
 */
void
blpg_source_connect_options(const blpg_source_config *cfg, int host,
							struct bl_source_options *so)
{
	bl_source_options_init(so);
	if (host >= 0 && host < cfg->nhosts)
	{
		so->host = cfg->hosts[host].host;
		so->port = (unsigned) cfg->hosts[host].port;
	}
	else
	{
		so->host = cfg->host;
		so->port = (unsigned) cfg->port;
	}
	so->user = cfg->user;
	so->password = cfg->password;
	so->connect_timeout = cfg->connect_timeout;
	so->ssl_mode = cfg->ssl_mode;
	so->ssl_ca = cfg->ssl_ca;
	so->ssl_cert = cfg->ssl_cert;
	so->ssl_key = cfg->ssl_key;
}

/*
 * The MySQL connection options of a copy (snapshot(), sync_table(), load(),
 * verify()): the source's, with a read timeout long enough for a big table.
 */
void
blpg_snapshot_source_options(const blpg_source_config *cfg, struct bl_source_options *so)
{
	blpg_source_connect_options(cfg, -1, so);
	so->read_timeout = 3600;
	/* the GTID set at a MySQL copy's position is read by a dump */
	so->server_id = (uint32_t) cfg->server_id;
	so->snapshot_lock = cfg->snapshot_lock;
	so->snapshot_lock_timeout = (unsigned) cfg->snapshot_lock_timeout;
}

bl_snapshot_table *
blpg_snapshot_tables(List *names, int *n)
{
	bl_snapshot_table *out = palloc0(sizeof(bl_snapshot_table) * Max(list_length(names) / 2, 1));
	int			k = 0;

	for (int i = 0; i + 1 < list_length(names); i += 2)
	{
		out[k].schema = strVal(list_nth(names, i));
		out[k].table = strVal(list_nth(names, i + 1));
		k++;
	}
	*n = k;
	return out;
}

int
blpg_snapshot_start_errcode(const bl_snapshot *snap)
{
	bool		denied;

	if (bl_snapshot_lock_hint(snap, &denied) == NULL)
		return ERRCODE_FDW_UNABLE_TO_ESTABLISH_CONNECTION;
	return denied ? ERRCODE_INSUFFICIENT_PRIVILEGE : ERRCODE_LOCK_NOT_AVAILABLE;
}

const char *
blpg_snapshot_start_hint(const bl_snapshot *snap, const char *otherwise)
{
	const char *hint = bl_snapshot_lock_hint(snap, NULL);

	return hint ? hint : otherwise;
}

/*
 * verify(): copy source table "db.table" as the snapshot sees it into
 * relation into (shaped like its target), without touching the target or
 * its mapping.  *target: the target's OID; returns the columns copied.
 */
List *
blpg_snapshot_copy_into(const char *server_name, bl_snapshot *snap, const char *source,
						const blpg_apply_options *opts, Oid into, Oid *target, int64 *rows)
{
	table_result r;

	copy_into = into;
	PG_TRY();
	{
		r = load_table(server_name, snap, source, opts, false, "", 0, NULL, NULL);
	}
	PG_FINALLY();
	{
		copy_into = InvalidOid;
	}
	PG_END_TRY();
	*target = r.relid;
	*rows = r.rows;
	return r.attnames;
}

/* verify(): the target of source table "db.table" (InvalidOid: none). */
Oid
blpg_snapshot_target_of(const char *server_name, const char *source, const blpg_apply_options *opts)
{
	snapshot_mapping mapping;
	char	   *schema;
	const char *table;
	char	   *src_db,
			   *src_table;
	Oid			nsp;

	blpg_split_source_table(source, &src_db, &src_table);
	memset(&mapping, 0, sizeof(mapping));
	mapping.server_name = server_name;
	mapping.db = src_db;
	mapping.table = src_table;
	mapping.cxt = CurrentMemoryContext;
	blpg_run_as_owner(mapping_read_fn, &mapping);
	schema = mapping.target_schema ? mapping.target_schema : pstrdup(pg_schema_of(opts, mapping.db));
	table = mapping.target_table ? mapping.target_table : mapping.table;
	nsp = get_namespace_oid(schema, true);
	return OidIsValid(nsp) ? get_relname_relid(table, nsp) : InvalidOid;
}
