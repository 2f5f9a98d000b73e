/*
 * changes.c
 *	  Changes out of ring entries, as SQL values (see blpg_changes.h).
 *
 * ROWS entries hold canonical binlog events, decoded here by a decoder in
 * canonical format; its table cache makes repeated table maps cheap.  Row
 * images become jsonb through the decoder's JSON text; the apply path does
 * not use this file.
 */
#include "binlog_fdw.h"
#include "blpg_changes.h"

#include "bl_charset.h"
#include "bl_value_text.h"

#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

const char *const blpg_change_col_names[BLPG_NCOLS] = {
	"seq", "file", "pos", "next_pos", "gtid", "xid", "commit_time",
	"event_time", "server_id", "schema_name", "table_name", "op",
	"pk_columns", "primary_key", "before", "after", "ddl"
};

int
blpg_change_col_by_name(const char *name)
{
	for (int i = 0; i < BLPG_NCOLS; i++)
		if (strcmp(blpg_change_col_names[i], name) == 0)
			return i;
	return -1;
}

struct blpg_change_iter
{
	StringInfo	entries;
	size_t		off;			/* next entry in entries */
	uint64		first_seq;
	uint64		last_seq;
	bool		want[BLPG_NCOLS];
	blpg_change_filter filter;

	/* the entry being read */
	const blpg_entry *e;
	blpg_entry_view v;
	uint64		seq;			/* next change of it */
	bl_event	rows_ev;		/* ROWS: the decoded rows event */
	bool		rows_open;

	bl_decoder *dec;
	bl_buf		buf;
	MemoryContext cxt;
};

/* Each backend keeps one canonical decoder (tables stay cached). */
static bl_decoder *canonical_decoder = NULL;

bl_decoder *
blpg_canonical_decoder(void)
{
	if (canonical_decoder == NULL)
	{
		canonical_decoder = bl_decoder_create(NULL);
		if (canonical_decoder == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory creating a binlog decoder")));
		bl_decoder_set_canonical_format(canonical_decoder);
	}
	return canonical_decoder;
}

const char *
blpg_entry_op_name(const blpg_entry *e)
{
	switch (e->kind)
	{
		case BLPG_ENTRY_BEGIN:
			return "begin";
		case BLPG_ENTRY_COMMIT:
			return "commit";
		case BLPG_ENTRY_DDL:
			return "ddl";
		case BLPG_ENTRY_ROWS:
			return bl_op_name((bl_op) e->op);
	}
	return "?";
}

blpg_change_iter *
blpg_change_iter_create(StringInfo entries, uint64 first_seq, uint64 last_seq,
						const bool *want, const blpg_change_filter *filter)
{
	blpg_change_iter *it = palloc0(sizeof(blpg_change_iter));

	it->entries = entries;
	it->first_seq = first_seq;
	it->last_seq = last_seq;
	memcpy(it->want, want, sizeof(it->want));
	if (filter)
		it->filter = *filter;
	it->dec = blpg_canonical_decoder();
	bl_buf_init(&it->buf);
	it->cxt = AllocSetContextCreate(CurrentMemoryContext, "binlog_fdw change",
									ALLOCSET_DEFAULT_SIZES);
	return it;
}

void
blpg_change_iter_free(blpg_change_iter *it)
{
	bl_buf_free(&it->buf);
	MemoryContextDelete(it->cxt);
	pfree(it);
}

static bool
str_eq(const char *a, size_t alen, const char *b)
{
	return strlen(b) == alen && memcmp(a, b, alen) == 0;
}

static bool
entry_passes(blpg_change_iter *it, const blpg_entry *e, const blpg_entry_view *v)
{
	if (it->filter.schema && !str_eq(v->schema, e->schema_len, it->filter.schema))
		return false;
	if (it->filter.table && !str_eq(v->table, e->table_len, it->filter.table))
		return false;
	if (it->filter.op && strcmp(blpg_entry_op_name(e), it->filter.op) != 0)
		return false;
	return true;
}

static Datum
text_utf8(const char *s, size_t len)
{
	char	   *conv = pg_any_to_server(s, (int) len, PG_UTF8);

	if (conv == s)
		return PointerGetDatum(cstring_to_text_with_len(s, (int) len));
	return PointerGetDatum(cstring_to_text(conv));
}

static Datum
jsonb_from(bl_buf *b)
{
	char	   *conv = pg_any_to_server(b->data, (int) b->len, PG_UTF8);

	return DirectFunctionCall1(jsonb_in, CStringGetDatum(conv));
}

static void
check(int rc, const bl_error *err)
{
	if (rc < 0)
		blpg_report_decoder_error(ERROR, err, NULL);
}

/* Decode the canonical events of a ROWS entry and skip to `skip` rows. */
static void
open_rows(blpg_change_iter *it, uint64 skip)
{
	const blpg_entry *e = it->e;
	bl_event	tm;
	bl_error	err;
	const uint8 *p = it->v.payload;
	size_t		rows_len;
	bl_row		before,
				after;

	memset(&err, 0, sizeof(err));
	bl_decoder_set_file(it->dec, it->v.file, e->file_len);
	check(bl_decode_event(it->dec, p, e->tablemap_len, e->event_pos, &tm, &err), &err);
	rows_len = (size_t) bl_load_le(p + e->tablemap_len + 9, 4);
	if (e->tablemap_len + (uint64) rows_len > e->payload_len)
		elog(ERROR, "binlog_fdw ring entry %llu is inconsistent",
			 (unsigned long long) e->seq_first);
	check(bl_decode_event(it->dec, p + e->tablemap_len, rows_len, e->event_pos,
						  &it->rows_ev, &err), &err);
	for (uint64 i = 0; i < e->rows_skip + skip; i++)
		if (bl_rows_next(it->dec, &it->rows_ev.u.rows, &before, &after, &err) != 1)
			check(-1, &err);
	it->rows_open = true;
}

static void
put_key_json(bl_buf *b, const bl_table *t, const bl_row *row)
{
	bl_error	err;

	bl_buf_putc(b, '{');
	for (uint32 k = 0; k < t->npk; k++)
	{
		uint32		i = t->pk[k];

		if (k)
			bl_buf_putc(b, ',');
		bl_column_key_json(t, i, b);
		bl_buf_putc(b, ':');
		if (bl_value_to_json(&t->cols[i], &row->values[i], NULL, b, &err) != 0)
			check(-1, &err);
	}
	bl_buf_putc(b, '}');
}

bool
blpg_change_iter_next(blpg_change_iter *it, Datum *values, bool *nulls)
{
	MemoryContext old;

	for (;;)
	{
		const blpg_entry *e = it->e;

		if (e == NULL || it->seq >= e->seq_first + e->nchanges || it->seq > it->last_seq)
		{
			/* next entry */
			if (it->off >= (size_t) it->entries->len)
				return false;
			e = (const blpg_entry *) (it->entries->data + it->off);
			it->off += e->total_len;
			if (e->seq_first > it->last_seq)
				return false;
			it->e = e;
			it->rows_open = false;
			blpg_entry_view_init(&it->v, e);
			it->seq = Max(it->first_seq, e->seq_first);
			if (it->filter.min_seq > it->seq)
				it->seq = it->filter.min_seq;
			if (it->seq >= e->seq_first + e->nchanges || !entry_passes(it, e, &it->v))
			{
				it->e = NULL;
				continue;
			}
		}
		break;
	}

	MemoryContextReset(it->cxt);
	old = MemoryContextSwitchTo(it->cxt);
	{
		const blpg_entry *e = it->e;
		const blpg_entry_view *v = &it->v;
		bl_row		before,
					after;

		memset(nulls, true, sizeof(bool) * BLPG_NCOLS);
		values[BLPG_COL_SEQ] = Int64GetDatum((int64) it->seq);
		nulls[BLPG_COL_SEQ] = false;
		if (it->want[BLPG_COL_FILE])
		{
			values[BLPG_COL_FILE] = text_utf8(v->file, e->file_len);
			nulls[BLPG_COL_FILE] = false;
		}
		values[BLPG_COL_POS] = Int64GetDatum((int64) e->event_pos);
		nulls[BLPG_COL_POS] = false;
		values[BLPG_COL_NEXT_POS] = Int64GetDatum((int64) e->event_next_pos);
		nulls[BLPG_COL_NEXT_POS] = false;
		if (e->gtid_len && it->want[BLPG_COL_GTID])
		{
			values[BLPG_COL_GTID] = text_utf8(v->gtid, e->gtid_len);
			nulls[BLPG_COL_GTID] = false;
		}
		if (e->kind == BLPG_ENTRY_COMMIT && e->xid)
		{
			values[BLPG_COL_XID] = Int64GetDatum((int64) e->xid);
			nulls[BLPG_COL_XID] = false;
		}
		if (e->commit_ts_us)
		{
			values[BLPG_COL_COMMIT_TIME] = TimestampTzGetDatum(
															   (TimestampTz) e->commit_ts_us -
															   ((POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY));
			nulls[BLPG_COL_COMMIT_TIME] = false;
		}
		values[BLPG_COL_EVENT_TIME] = TimestampTzGetDatum(time_t_to_timestamptz((pg_time_t) e->event_ts));
		nulls[BLPG_COL_EVENT_TIME] = false;
		values[BLPG_COL_SERVER_ID] = Int64GetDatum((int64) e->server_id);
		nulls[BLPG_COL_SERVER_ID] = false;
		if (e->schema_len)
		{
			values[BLPG_COL_SCHEMA] = text_utf8(v->schema, e->schema_len);
			nulls[BLPG_COL_SCHEMA] = false;
		}
		if (e->table_len)
		{
			values[BLPG_COL_TABLE] = text_utf8(v->table, e->table_len);
			nulls[BLPG_COL_TABLE] = false;
		}
		values[BLPG_COL_OP] = CStringGetTextDatum(blpg_entry_op_name(e));
		nulls[BLPG_COL_OP] = false;

		if (e->kind == BLPG_ENTRY_DDL && it->want[BLPG_COL_DDL])
		{
			const uint8 *p = v->payload;
			uint32		dblen = (uint32) bl_load_le(p, 4);
			const char *sql = (const char *) p + 4 + dblen;
			size_t		sqllen = e->payload_len - 4 - dblen;
			const bl_charset *cs = bl_charset_by_collation(e->ddl_collation);
			bl_error	err;

			/* the text was padded to 8 bytes: trim the NULs */
			while (sqllen > 0 && sql[sqllen - 1] == '\0')
				sqllen--;
			bl_buf_reset(&it->buf);
			if (cs == NULL || bl_charset_to_utf8(cs, (const uint8 *) sql, sqllen, &it->buf, &err) != 0)
				bl_charset_to_utf8(bl_charset_by_name("utf8mb4"), (const uint8 *) sql, sqllen,
								   &it->buf, &err);
			values[BLPG_COL_DDL] = text_utf8(it->buf.data, it->buf.len);
			nulls[BLPG_COL_DDL] = false;
		}
		else if (e->kind == BLPG_ENTRY_ROWS)
		{
			const bl_table *t;
			bl_error	err;
			int			rc;

			memset(&err, 0, sizeof(err));
			if (!it->rows_open)
				open_rows(it, it->seq - e->seq_first);
			rc = bl_rows_next(it->dec, &it->rows_ev.u.rows, &before, &after, &err);
			if (rc != 1)
			{
				if (rc == 0)
					bl_error_set(&err, BL_ERR_CORRUPT, "rows event has fewer rows than its entry counts");
				check(-1, &err);
			}
			t = it->rows_ev.u.rows.table;
			if (it->want[BLPG_COL_BEFORE] && before.ncols)
			{
				bl_buf_reset(&it->buf);
				check(bl_row_to_json(t, &before, NULL, &it->buf, &err), &err);
				values[BLPG_COL_BEFORE] = jsonb_from(&it->buf);
				nulls[BLPG_COL_BEFORE] = false;
			}
			if (it->want[BLPG_COL_AFTER] && after.ncols)
			{
				bl_buf_reset(&it->buf);
				check(bl_row_to_json(t, &after, before.ncols ? &before : NULL, &it->buf, &err), &err);
				values[BLPG_COL_AFTER] = jsonb_from(&it->buf);
				nulls[BLPG_COL_AFTER] = false;
			}
			if (t->npk && it->want[BLPG_COL_PK_COLUMNS])
			{
				Datum	   *names = palloc(sizeof(Datum) * t->npk);

				for (uint32 k = 0; k < t->npk; k++)
				{
					const bl_column *c = &t->cols[t->pk[k]];

					names[k] = c->name.ptr ? text_utf8(c->name.ptr, c->name.len) :
						CStringGetTextDatum(psprintf("@%u", t->pk[k] + 1));
				}
				values[BLPG_COL_PK_COLUMNS] = PointerGetDatum(construct_array(names, t->npk, TEXTOID, -1, false, TYPALIGN_INT));
				nulls[BLPG_COL_PK_COLUMNS] = false;
			}
			if (t->npk && it->want[BLPG_COL_PRIMARY_KEY])
			{
				const bl_row *keyrow = after.ncols ? &after : &before;
				bool		complete = true;

				for (uint32 k = 0; k < t->npk; k++)
					if (keyrow->values[t->pk[k]].kind == BL_VAL_ABSENT)
						complete = false;
				if (!complete)
					keyrow = &before;
				bl_buf_reset(&it->buf);
				put_key_json(&it->buf, t, keyrow);
				values[BLPG_COL_PRIMARY_KEY] = jsonb_from(&it->buf);
				nulls[BLPG_COL_PRIMARY_KEY] = false;
			}
		}
	}
	MemoryContextSwitchTo(old);
	it->seq++;
	return true;
}
