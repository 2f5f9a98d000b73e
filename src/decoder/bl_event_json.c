/*
 * bl_event_json.c
 *	  Events as JSON lines: the common header, the type-specific fields,
 *	  and for rows events every row's before/after image.
 *
 *	  {"file":"mysql-bin.000001","pos":4,"next_pos":256,"type":"WRITE_ROWS_V1",
 *	   "ts":1700000000,"server_id":1,"gtid":"0-1-5","schema":"shop",
 *	   "table":"orders","op":"insert","rows":[{"after":{"id":1,...}}]}
 */
#include "bl_event_json.h"
#include "bl_charset.h"
#include "bl_value_text.h"

#include <stdio.h>
#include <string.h>

void
bl_json_put_str(bl_buf *out, const char *s, size_t len)
{
	bl_buf_putc(out, '"');
	bl_json_escape_utf8((const uint8_t *) s, len, out);
	bl_buf_putc(out, '"');
}

static void
put_key(bl_buf *out, const char *key)
{
	bl_buf_putc(out, ',');
	bl_buf_putc(out, '"');
	bl_buf_puts(out, key);
	bl_buf_append(out, "\":", 2);
}

static void
put_kv_str(bl_buf *out, const char *key, const char *s, size_t len)
{
	put_key(out, key);
	bl_json_put_str(out, s ? s : "", s ? len : 0);
}

static void
put_kv_u64(bl_buf *out, const char *key, uint64_t v)
{
	put_key(out, key);
	bl_buf_put_u64(out, v);
}

static void
put_kv_bool(bl_buf *out, const char *key, bool v)
{
	put_key(out, key);
	bl_buf_puts(out, v ? "true" : "false");
}

static void
put_timestamp_us(bl_buf *out, const char *key, uint64_t us)
{
	bl_temporal t;

	put_key(out, key);
	bl_timestamp_to_temporal((int64_t) (us / 1000000), (uint32_t) (us % 1000000), &t);
	bl_buf_putc(out, '"');
	bl_temporal_to_text(BL_VAL_DATETIME, &t, 6, 'T', out);
	bl_buf_append(out, "+00:00\"", 7);
}

/* The SQL text of QUERY events in its client charset, as a JSON string. */
static void
put_sql(bl_buf *out, const char *key, bl_str sql, uint16_t collation, bl_error *err)
{
	const bl_charset *cs = collation ? bl_charset_by_collation(collation) : NULL;
	size_t		mark;

	put_key(out, key);
	mark = out->len;
	if (cs && !bl_charset_is_binary(cs))
	{
		bl_buf_putc(out, '"');
		if (bl_charset_to_json_string(cs, (const uint8_t *) sql.ptr, sql.len, out, err) == 0)
		{
			bl_buf_putc(out, '"');
			return;
		}
		out->len = mark;		/* conversion impossible: escape as is */
	}
	bl_json_put_str(out, sql.ptr, sql.len);
}

static int
put_rows(bl_decoder *dec, bl_event *ev, bl_buf *out, bl_error *err)
{
	bl_rows_event *r = &ev->u.rows;
	bl_row		before,
				after;
	int			rc;
	bool		first = true;

	put_key(out, "rows");
	bl_buf_putc(out, '[');
	while ((rc = bl_rows_next(dec, r, &before, &after, err)) == 1)
	{
		if (!first)
			bl_buf_putc(out, ',');
		first = false;
		bl_buf_putc(out, '{');
		if (before.ncols)
		{
			bl_buf_append(out, "\"before\":", 9);
			if (bl_row_to_json(r->table, &before, NULL, out, err) != 0)
				return -1;
		}
		if (after.ncols)
		{
			if (before.ncols)
				bl_buf_putc(out, ',');
			bl_buf_append(out, "\"after\":", 8);
			if (bl_row_to_json(r->table, &after, before.ncols ? &before : NULL,
							   out, err) != 0)
				return -1;
		}
		bl_buf_putc(out, '}');
	}
	if (rc < 0)
		return -1;
	bl_buf_putc(out, ']');
	return 0;
}

static void
put_table_columns(const bl_table *t, bl_buf *out)
{
	put_key(out, "columns");
	bl_buf_putc(out, '[');
	for (uint32_t i = 0; i < t->ncols; i++)
	{
		const bl_column *c = &t->cols[i];
		const char *tn = bl_mysql_type_name(c->type);

		if (i)
			bl_buf_putc(out, ',');
		bl_buf_append(out, "{\"name\":", 8);
		if (c->name.ptr)
			bl_json_put_str(out, c->name.ptr, c->name.len);
		else
			bl_buf_append(out, "null", 4);
		put_kv_str(out, "type", tn ? tn : "unknown", tn ? strlen(tn) : 7);
		put_kv_u64(out, "meta", c->meta);
		put_kv_bool(out, "nullable", c->nullable);
		if (c->unsigned_known)
			put_kv_bool(out, "unsigned", c->is_unsigned);
		if (c->collation)
			put_kv_u64(out, "collation", c->collation);
		if (c->is_pk)
			put_kv_bool(out, "primary_key", true);
		if (!c->visible)
			put_kv_bool(out, "visible", false);
		bl_buf_putc(out, '}');
	}
	bl_buf_putc(out, ']');
}

int
bl_event_to_jsonl(bl_decoder *dec, bl_event *ev, const bl_jsonl_options *opts,
				  bl_buf *out, bl_error *err)
{
	const char *tname = bl_event_type_name(ev->type);
	const char *file = bl_decoder_file(dec);
	const bl_gtid_info *g = bl_decoder_gtid(dec);
	size_t		start = out->len;

	if (opts && opts->rows_only && !bl_event_is_rows(ev->type))
		return 0;

	bl_buf_append(out, "{\"file\":", 8);
	bl_json_put_str(out, file, strlen(file));
	put_kv_u64(out, "pos", ev->pos);
	put_kv_u64(out, "next_pos", ev->next_pos);
	put_key(out, "type");
	if (tname)
		bl_json_put_str(out, tname, strlen(tname));
	else
		bl_buf_printf(out, "\"UNKNOWN_%u\"", ev->type);
	put_kv_u64(out, "ts", ev->timestamp);
	put_kv_u64(out, "server_id", ev->server_id);
	if (ev->in_payload)
		put_kv_bool(out, "in_payload", true);
	if (g->text[0])
		put_kv_str(out, "gtid", g->text, strlen(g->text));

	switch (ev->type)
	{
		case BL_EV_FORMAT_DESCRIPTION:
			put_kv_u64(out, "binlog_version", ev->u.fde.binlog_version);
			put_kv_str(out, "server_version", ev->u.fde.server_version,
					   strlen(ev->u.fde.server_version));
			put_kv_str(out, "checksum", ev->u.fde.checksum_alg == BL_CHECKSUM_CRC32 ? "crc32" : "none",
					   ev->u.fde.checksum_alg == BL_CHECKSUM_CRC32 ? 5 : 4);
			break;
		case BL_EV_ROTATE:
			put_kv_str(out, "next_file", ev->u.rotate.file.ptr, ev->u.rotate.file.len);
			put_kv_u64(out, "next_file_pos", ev->u.rotate.position);
			if (ev->u.rotate.fake)
				put_kv_bool(out, "fake", true);
			break;
		case BL_EV_QUERY:
		case BL_EV_MARIA_QUERY_COMPRESSED:
			put_kv_str(out, "db", ev->u.query.db.ptr, ev->u.query.db.len);
			put_sql(out, "sql", ev->u.query.sql, ev->u.query.charset_client, err);
			put_kv_u64(out, "thread_id", ev->u.query.thread_id);
			put_kv_u64(out, "exec_time", ev->u.query.exec_time);
			if (ev->u.query.error_code)
				put_kv_u64(out, "error_code", ev->u.query.error_code);
			break;
		case BL_EV_XID:
			put_kv_u64(out, "xid", ev->u.xid.xid);
			break;
		case BL_EV_GTID:
		case BL_EV_ANONYMOUS_GTID:
		case BL_EV_GTID_TAGGED:
		case BL_EV_MARIA_GTID:
			put_kv_u64(out, "gtid_flags", ev->u.gtid.flags);
			if (ev->type == BL_EV_MARIA_GTID)
			{
				put_kv_u64(out, "domain_id", ev->u.gtid.domain_id);
				put_kv_u64(out, "seq_no", ev->u.gtid.seq_no);
				put_kv_bool(out, "standalone", ev->u.gtid.standalone);
			}
			else
			{
				put_kv_u64(out, "last_committed", ev->u.gtid.last_committed);
				put_kv_u64(out, "sequence_number", ev->u.gtid.sequence_number);
				if (ev->u.gtid.transaction_length)
					put_kv_u64(out, "transaction_length", ev->u.gtid.transaction_length);
			}
			put_timestamp_us(out, "commit_ts", ev->u.gtid.commit_ts_us);
			break;
		case BL_EV_PREVIOUS_GTIDS:
		case BL_EV_MARIA_GTID_LIST:
			put_kv_str(out, "gtid_set", ev->u.gtid_set.text.ptr, ev->u.gtid_set.text.len);
			break;
		case BL_EV_MARIA_BINLOG_CHECKPOINT:
			put_kv_str(out, "checkpoint_file", ev->u.checkpoint.file.ptr, ev->u.checkpoint.file.len);
			break;
		case BL_EV_HEARTBEAT:
		case BL_EV_HEARTBEAT_V2:
			put_kv_str(out, "log_file", ev->u.heartbeat.file.ptr, ev->u.heartbeat.file.len);
			put_kv_u64(out, "log_pos", ev->u.heartbeat.position);
			break;
		case BL_EV_ROWS_QUERY:
		case BL_EV_MARIA_ANNOTATE_ROWS:
			put_kv_str(out, "sql", ev->u.annotate.sql.ptr, ev->u.annotate.sql.len);
			break;
		case BL_EV_INTVAR:
			put_kv_u64(out, "intvar_type", ev->u.intvar.kind);
			put_kv_u64(out, "value", ev->u.intvar.value);
			break;
		case BL_EV_RAND:
			put_kv_u64(out, "seed1", ev->u.rand.seed1);
			put_kv_u64(out, "seed2", ev->u.rand.seed2);
			break;
		case BL_EV_USER_VAR:
			put_kv_str(out, "name", ev->u.user_var.name.ptr, ev->u.user_var.name.len);
			if (ev->u.user_var.is_null)
				put_kv_bool(out, "is_null", true);
			else
			{
				put_kv_u64(out, "value_type", ev->u.user_var.value_type);
				put_key(out, "value");
				bl_buf_putc(out, '"');
				bl_buf_put_hex_json(out, (const uint8_t *) ev->u.user_var.value.ptr,
									ev->u.user_var.value.len);
				bl_buf_putc(out, '"');
			}
			break;
		case BL_EV_INCIDENT:
			put_kv_u64(out, "incident", ev->u.incident.kind);
			put_kv_str(out, "message", ev->u.incident.message.ptr, ev->u.incident.message.len);
			break;
		case BL_EV_XA_PREPARE:
			put_kv_bool(out, "one_phase", ev->u.xa_prepare.one_phase);
			put_kv_u64(out, "format_id", ev->u.xa_prepare.format_id);
			put_kv_str(out, "gtrid", ev->u.xa_prepare.gtrid.ptr, ev->u.xa_prepare.gtrid.len);
			put_kv_str(out, "bqual", ev->u.xa_prepare.bqual.ptr, ev->u.xa_prepare.bqual.len);
			break;
		case BL_EV_TRANSACTION_PAYLOAD:
			put_kv_str(out, "compression", ev->u.payload.compression == 0 ? "zstd" : "none",
					   ev->u.payload.compression == 0 ? 4 : 4);
			put_kv_u64(out, "uncompressed_size", ev->u.payload.len);
			break;
		case BL_EV_TABLE_MAP:
			{
				const bl_table *t = ev->u.table_map;

				put_kv_u64(out, "table_id", t->table_id);
				put_kv_str(out, "schema", t->schema.ptr, t->schema.len);
				put_kv_str(out, "table", t->name.ptr, t->name.len);
				if (!opts || opts->table_columns)
					put_table_columns(t, out);
				break;
			}
		default:
			if (bl_event_is_rows(ev->type))
			{
				bl_rows_event *r = &ev->u.rows;

				put_kv_u64(out, "table_id", r->table_id);
				if (r->table)
				{
					put_kv_str(out, "schema", r->table->schema.ptr, r->table->schema.len);
					put_kv_str(out, "table", r->table->name.ptr, r->table->name.len);
				}
				put_kv_str(out, "op", bl_op_name(r->op), strlen(bl_op_name(r->op)));
				if (r->flags & BL_ROWS_STMT_END_F)
					put_kv_bool(out, "stmt_end", true);
				if (put_rows(dec, ev, out, err) != 0)
				{
					out->len = start;
					return -1;
				}
			}
			break;
	}
	bl_buf_append(out, "}\n", 2);
	if (bl_buf_failed(out))
		return bl_error_set(err, BL_ERR_NOMEM, "out of memory formatting an event");
	return 0;
}
