/*
 * read_binlog.c
 *	  binlog_fdw.read_binlog(path, follow_rotate): decode binlog files on
 *	  the database server into rows (one per row change, one per other
 *	  event), so archived binlogs can be queried with SQL.
 *
 * Reading server files is restricted like pg_read_file(): the caller needs
 * the privileges of pg_read_server_files (and EXECUTE, revoked from PUBLIC
 * by the install script).  Relative paths are relative to the data
 * directory.
 *
 * The decoder and the open file (its descriptor and read buffer) are plain
 * malloc/open resources; a reset callback on the query's memory context
 * releases them on success and on error alike.
 */
#include "sql/sql.h"

#include "bl_charset.h"
#include "bl_event_json.h"
#include "bl_file.h"
#include "bl_value_text.h"

#include "catalog/pg_authid.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include <errno.h>
#include <sys/stat.h>

PG_FUNCTION_INFO_V1(binlog_fdw_read_binlog);

#define READ_BINLOG_COLS 15

typedef struct read_state
{
	bl_decoder *dec;
	bl_file		file;
	bool		file_open;
	bl_buf		buf;
	Tuplestorestate *tupstore;
	TupleDesc	tupdesc;
	MemoryContext row_cxt;
} read_state;

static void
read_state_cleanup(void *arg)
{
	read_state *st = (read_state *) arg;

	if (st->file_open)
		bl_file_close(&st->file);
	st->file_open = false;
	if (st->dec)
		bl_decoder_destroy(st->dec);
	st->dec = NULL;
	bl_buf_free(&st->buf);
}

/* UTF-8 text from the decoder as a text datum in the server encoding. */
static Datum
utf8_text_datum(const char *s, size_t len)
{
	char	   *conv = pg_any_to_server(s, (int) len, PG_UTF8);

	if (conv == s)
		return PointerGetDatum(cstring_to_text_with_len(s, (int) len));
	return PointerGetDatum(cstring_to_text(conv));
}

static Datum
json_datum(const char *s, size_t len)
{
	char	   *conv = pg_any_to_server(s, (int) len, PG_UTF8);

	return DirectFunctionCall1(jsonb_in, CStringGetDatum(conv));
}

static void
check_decode(read_state *st, int rc, const bl_error *err)
{
	if (rc < 0 || bl_buf_failed(&st->buf))
		blpg_report_decoder_error(ERROR, err, NULL);
}

/* Emit the tuples of one event (several for a rows event). */
static void
emit_event(read_state *st, bl_event *ev, bl_error *err)
{
	Datum		values[READ_BINLOG_COLS];
	bool		nulls[READ_BINLOG_COLS];
	const char *tname = bl_event_type_name(ev->type);
	const char *file = bl_decoder_file(st->dec);
	const bl_gtid_info *g = bl_decoder_gtid(st->dec);
	MemoryContext old;

	old = MemoryContextSwitchTo(st->row_cxt);
	memset(nulls, true, sizeof(nulls));
	values[0] = utf8_text_datum(file, strlen(file));
	nulls[0] = false;
	values[1] = Int64GetDatum((int64) ev->pos);
	nulls[1] = false;
	values[2] = Int64GetDatum((int64) ev->next_pos);
	nulls[2] = false;
	if (tname)
		values[3] = CStringGetTextDatum(tname);
	else
		values[3] = CStringGetTextDatum(psprintf("UNKNOWN_%u", ev->type));
	nulls[3] = false;
	values[4] = TimestampTzGetDatum(time_t_to_timestamptz((pg_time_t) ev->timestamp));
	nulls[4] = false;
	values[5] = Int64GetDatum((int64) ev->server_id);
	nulls[5] = false;
	if (g->text[0])
	{
		values[6] = CStringGetTextDatum(g->text);
		nulls[6] = false;
	}

	if (bl_event_is_rows(ev->type))
	{
		bl_rows_event *r = &ev->u.rows;
		bl_row		before,
					after;
		int			rc;

		if (r->table)
		{
			values[7] = utf8_text_datum(r->table->schema.ptr, r->table->schema.len);
			values[8] = utf8_text_datum(r->table->name.ptr, r->table->name.len);
			nulls[7] = nulls[8] = false;
		}
		values[9] = CStringGetTextDatum(bl_op_name(r->op));
		nulls[9] = false;
		while ((rc = bl_rows_next(st->dec, r, &before, &after, err)) == 1)
		{
			values[10] = Int32GetDatum((int32) r->row_index);
			nulls[10] = false;
			nulls[11] = nulls[12] = true;
			if (before.ncols)
			{
				bl_buf_reset(&st->buf);
				check_decode(st, bl_row_to_json(r->table, &before, NULL, &st->buf, err), err);
				values[11] = json_datum(st->buf.data, st->buf.len);
				nulls[11] = false;
			}
			if (after.ncols)
			{
				bl_buf_reset(&st->buf);
				check_decode(st, bl_row_to_json(r->table, &after,
												before.ncols ? &before : NULL,
												&st->buf, err), err);
				values[12] = json_datum(st->buf.data, st->buf.len);
				nulls[12] = false;
			}
			tuplestore_putvalues(st->tupstore, st->tupdesc, values, nulls);
		}
		check_decode(st, rc, err);
	}
	else
	{
		bl_jsonl_options jopts = {false, true};

		switch (ev->type)
		{
			case BL_EV_QUERY:
			case BL_EV_MARIA_QUERY_COMPRESSED:
				{
					const bl_charset *cs = bl_charset_by_collation(ev->u.query.charset_client);

					bl_buf_reset(&st->buf);
					if (cs == NULL || bl_charset_to_utf8(cs, (const uint8_t *) ev->u.query.sql.ptr,
														 ev->u.query.sql.len, &st->buf, err) != 0)
					{
						bl_buf_reset(&st->buf);
						bl_charset_to_utf8(bl_charset_by_name("utf8mb4"),
										   (const uint8_t *) ev->u.query.sql.ptr,
										   ev->u.query.sql.len, &st->buf, err);
					}
					values[13] = utf8_text_datum(st->buf.data, st->buf.len);
					nulls[13] = false;
					if (ev->u.query.db.len)
					{
						values[7] = utf8_text_datum(ev->u.query.db.ptr, ev->u.query.db.len);
						nulls[7] = false;
					}
					break;
				}
			case BL_EV_ROWS_QUERY:
			case BL_EV_MARIA_ANNOTATE_ROWS:
				bl_buf_reset(&st->buf);
				bl_charset_to_utf8(bl_charset_by_name("utf8mb4"),
								   (const uint8_t *) ev->u.annotate.sql.ptr,
								   ev->u.annotate.sql.len, &st->buf, err);
				values[13] = utf8_text_datum(st->buf.data, st->buf.len);
				nulls[13] = false;
				break;
			case BL_EV_TABLE_MAP:
				values[7] = utf8_text_datum(ev->u.table_map->schema.ptr, ev->u.table_map->schema.len);
				values[8] = utf8_text_datum(ev->u.table_map->name.ptr, ev->u.table_map->name.len);
				nulls[7] = nulls[8] = false;
				break;
			default:
				break;
		}
		bl_buf_reset(&st->buf);
		check_decode(st, bl_event_to_jsonl(st->dec, ev, &jopts, &st->buf, err), err);
		values[14] = json_datum(st->buf.data, st->buf.len);
		nulls[14] = false;
		tuplestore_putvalues(st->tupstore, st->tupdesc, values, nulls);
	}
	MemoryContextSwitchTo(old);
	MemoryContextReset(st->row_cxt);
}

/* Decode one file; returns the file named by its last real ROTATE (and
 * that event's position in *rotate_pos). */
static char *
read_one_file(read_state *st, const char *path, uint64 *rotate_pos)
{
	const uint8_t *data;
	size_t		len;
	uint64_t	pos;
	int			rc;
	bl_error	err;
	bl_event	ev;
	char	   *rotate_to = NULL;

	memset(&err, 0, sizeof(err));
	if (bl_file_open(&st->file, path, &err) != 0)
	{
		if (err.code == BL_ERR_IO)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("%s", err.message)));
		ereport(ERROR,
				(errcode(blpg_errcode(err.code)),
				 errmsg("%s", err.message)));
	}
	st->file_open = true;
	bl_decoder_set_file(st->dec, st->file.name, strlen(st->file.name));
	while ((rc = bl_file_next(&st->file, &data, &len, &pos, &err)) == 1)
	{
		CHECK_FOR_INTERRUPTS();
		check_decode(st, bl_decode_event(st->dec, data, len, pos, &ev, &err), &err);
		emit_event(st, &ev, &err);
		if (ev.type == BL_EV_TRANSACTION_PAYLOAD)
		{
			bl_event	inner;

			while ((rc = bl_payload_next(st->dec, &inner, &err)) == 1)
				emit_event(st, &inner, &err);
			check_decode(st, rc, &err);
		}
		else if (ev.type == BL_EV_ROTATE && !ev.u.rotate.fake)
		{
			rotate_to = pnstrdup(ev.u.rotate.file.ptr, ev.u.rotate.file.len);
			*rotate_pos = pos;
		}
	}
	check_decode(st, rc, &err);
	bl_file_close(&st->file);
	st->file_open = false;
	return rotate_to;
}

Datum
binlog_fdw_read_binlog(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *path;
	bool		follow = PG_ARGISNULL(1) ? false : PG_GETARG_BOOL(1);
	read_state *st;
	MemoryContextCallback *cb;
	int			hops = 0;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("binlog file path must not be null")));
	if (!has_privs_of_role(GetUserId(), ROLE_PG_READ_SERVER_FILES))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to read binlog files"),
				 errdetail("Only roles with privileges of the \"pg_read_server_files\" role may read files on the database server.")));

	path = text_to_cstring(PG_GETARG_TEXT_PP(0));
	if (!is_absolute_path(path))
		path = psprintf("%s/%s", DataDir, path);

	InitMaterializedSRF(fcinfo, 0);

	st = palloc0(sizeof(read_state));
	st->tupstore = rsinfo->setResult;
	st->tupdesc = rsinfo->setDesc;
	st->row_cxt = AllocSetContextCreate(CurrentMemoryContext, "read_binlog row",
										ALLOCSET_DEFAULT_SIZES);
	bl_buf_init(&st->buf);
	cb = palloc0(sizeof(MemoryContextCallback));
	cb->func = read_state_cleanup;
	cb->arg = st;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, cb);

	st->dec = bl_decoder_create(NULL);
	if (st->dec == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory creating a binlog decoder")));

	while (path)
	{
		uint64		rotate_pos = 0;
		char	   *next = read_one_file(st, path, &rotate_pos);
		char		sibling[MAXPGPATH];
		char		later[MAXPGPATH];
		struct stat stbuf;

		path = NULL;
		if (!follow || next == NULL)
			break;
		/* a ROTATE to a file that is not there is never passed over silently */
		if (strchr(next, '/') != NULL ||
			strcmp(next, ".") == 0 || strcmp(next, "..") == 0 ||
			strcmp(next, st->file.name) == 0 || ++hops > 100000)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("ROTATE names \"%s\" as the next binlog file, which cannot be followed", next),
					 errdetail("The ROTATE event is at position %llu of binlog file \"%s\"; the next file must be another file of the same directory.",
							   (unsigned long long) rotate_pos, st->file.name),
					 errhint("Read the files one by one, without follow_rotate.")));
		bl_file_sibling(st->file.path, next, strlen(next), sibling, sizeof(sibling));
		if (stat(sibling, &stbuf) == 0 || errno != ENOENT)
		{
			path = pstrdup(sibling);	/* opening it reports any problem */
			continue;
		}
		if (bl_file_later_sibling(st->file.path, next, later, sizeof(later)))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_FILE),
					 errmsg("binlog file \"%s\" is missing", next),
					 errdetail("The ROTATE event at position %llu of binlog file \"%s\" names it as the next file, and the later file \"%s\" exists: the files between are missing.",
							   (unsigned long long) rotate_pos, st->file.name, later),
					 errhint("Read the files that exist one by one, without follow_rotate.")));
		ereport(NOTICE,
				(errmsg("binlog file \"%s\" was the last file", st->file.name),
				 errdetail("Its ROTATE event at position %llu names the next file \"%s\", which does not exist.",
						   (unsigned long long) rotate_pos, next)));
	}
	read_state_cleanup(st);
	return (Datum) 0;
}
