/*
 * fuzz_common.h
 *	  What the decoder fuzz targets (fuzz_decoder.c, fuzz_event.c) do with
 *	  each event: everything binlogcat and the PostgreSQL glue do with it.
 *
 * fuzz_run_event() copies the event into an allocation of exactly its
 * size (so that AddressSanitizer sees any read past its end, which the
 * fuzzer's own input buffer would hide when the event is not the last),
 * decodes it with bl_decode_event(), and then
 *	- formats it with bl_event_to_jsonl() (binlogcat's output), which for a
 *	  rows event iterates all its rows;
 *	- for a rows event, iterates the rows again with bl_rows_next() and
 *	  formats every value with bl_value_to_json() and every image with
 *	  bl_row_to_json() (binlogcat --values, the SQL functions), and a
 *	  third time without images (binlogcat --count);
 *	- for a rows event, writes it and its table map as canonical events
 *	  (bl_table_serialize, bl_rows_serialize: the change store's form),
 *	  decodes those with a decoder in canonical format and does all of the
 *	  above with the result;
 *	- for a TRANSACTION_PAYLOAD, does all of this for every inner event
 *	  that bl_payload_next() returns.
 *
 * Oracles, on top of the sanitizers: every call returns one of its
 * documented values; a failure comes with an error code and message;
 * every successful JSON output is valid JSON (bl_json_check.h); a row
 * that is returned consumed at least one byte (else iteration would never
 * end); the canonical form of a decoded table map and rows event decodes,
 * and gives the same rows as the direct decoding when that succeeded.  A violation aborts, which libFuzzer reports as a crash.
 *
 * fuzz_schema_lookup() is a schema provider for tables of the schema
 * "fuzz": the table name describes the columns (one per byte), so that the
 * fuzzer can reach the merge of binlog and information_schema metadata.
 */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include "bl_decoder.h"
#include "bl_event_json.h"
#include "bl_file.h"
#include "bl_value_text.h"

#include "../unit/bl_json_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fuzz_bufs
{
	bl_buf		out;			/* JSON lines */
	bl_buf		val;			/* single values and row images */
	bl_buf		canon_buf;		/* canonical events */
	bl_buf		direct;			/* rows part of the direct JSON line */
	bl_decoder *canon;			/* decoder of canonical events */
} fuzz_bufs;

static void
fuzz_die(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz oracle violated: %s%s%s\n", what,
			detail ? ": " : "", detail ? detail : "");
	abort();
}

/* A call returned rc; check it against its contract. */
static void
fuzz_check_rc(int rc, int lo, int hi, const bl_error *err, const char *what)
{
	if (rc < lo || rc > hi)
		fuzz_die(what, "return value out of range");
	if (rc == -1 && (err->code == BL_OK || err->message[0] == '\0'))
		fuzz_die(what, "failed without an error code and message");
}

static void
fuzz_check_json(const bl_buf *b, size_t start, size_t end, const char *what)
{
	if (bl_buf_failed(b))
		fuzz_die(what, "output buffer out of memory");
	if (end < start || end > b->len ||
		!bl_json_text_valid(b->data + start, end - start))
	{
		fprintf(stderr, "invalid JSON from %s: %.*s\n", what,
				(int) (b->len - start > 4000 ? 4000 : b->len - start),
				b->data + start);
		fuzz_die(what, "output is not valid JSON");
	}
}

static void
fuzz_error_reset(bl_error *err)
{
	memset(err, 0, sizeof(*err));
}

/* FUZZ_VERBOSE=1: print every JSON line and every error (to check seeds). */
static int	fuzz_verbose = -1;

static void
fuzz_log(const char *what, int rc, const bl_error *err)
{
	if (fuzz_verbose < 0)
	{
		const char *v = getenv("FUZZ_VERBOSE");

		fuzz_verbose = v && v[0] && v[0] != '0';
	}
	if (fuzz_verbose && rc < 0)
		fprintf(stderr, "%s: %s error: %s\n", what, bl_errcode_name(err->code),
				err->message);
}

/* Iterate the rows of (a copy of) a rows event, formatting every value. */
static void
fuzz_rows_values(bl_decoder *dec, bl_rows_event rows, fuzz_bufs *b)
{
	bl_row		before,
				after;
	bl_error	err;
	int			rc;

	for (;;)
	{
		const uint8_t *at = rows.rows.pos;
		const bl_table *t = rows.table;

		fuzz_error_reset(&err);
		rc = bl_rows_next(dec, &rows, &before, &after, &err);
		fuzz_check_rc(rc, -1, 1, &err, "bl_rows_next");
		fuzz_log("bl_rows_next", rc, &err);
		if (rc != 1)
			break;
		if (rows.rows.pos == at)
			fuzz_die("bl_rows_next", "returned a row without consuming any bytes");
		if (t == NULL || (before.ncols == 0 && after.ncols == 0))
			fuzz_die("bl_rows_next", "returned a row without a table or an image");
		if ((before.ncols && before.ncols != t->ncols) ||
			(after.ncols && after.ncols != t->ncols))
			fuzz_die("bl_rows_next", "image width differs from the table's");
		for (uint32_t i = 0; i < before.ncols; i++)
		{
			bl_buf_reset(&b->val);
			fuzz_error_reset(&err);
			rc = bl_value_to_json(&t->cols[i], &before.values[i], NULL, &b->val, &err);
			fuzz_check_rc(rc, -1, 0, &err, "bl_value_to_json (before)");
			fuzz_log("bl_value_to_json (before)", rc, &err);
			if (rc == 0)
				fuzz_check_json(&b->val, 0, b->val.len, "bl_value_to_json (before)");
		}
		for (uint32_t i = 0; i < after.ncols; i++)
		{
			bl_buf_reset(&b->val);
			fuzz_error_reset(&err);
			rc = bl_value_to_json(&t->cols[i], &after.values[i],
								  before.ncols ? &before.values[i] : NULL,
								  &b->val, &err);
			fuzz_check_rc(rc, -1, 0, &err, "bl_value_to_json (after)");
			fuzz_log("bl_value_to_json (after)", rc, &err);
			if (rc == 0)
				fuzz_check_json(&b->val, 0, b->val.len, "bl_value_to_json (after)");
		}
		if (after.ncols)
		{
			bl_buf_reset(&b->val);
			fuzz_error_reset(&err);
			rc = bl_row_to_json(t, &after, before.ncols ? &before : NULL, &b->val, &err);
			fuzz_check_rc(rc, -1, 0, &err, "bl_row_to_json");
			if (rc == 0)
				fuzz_check_json(&b->val, 0, b->val.len, "bl_row_to_json");
		}
		for (uint32_t i = 0; i < t->ncols; i++)
		{
			bl_buf_reset(&b->val);
			bl_column_key_json(t, i, &b->val);
			fuzz_check_json(&b->val, 0, b->val.len, "bl_column_key_json");
		}
	}
}

/* Count the rows without images (binlogcat --count). */
static void
fuzz_rows_count(bl_decoder *dec, bl_rows_event rows)
{
	bl_error	err;
	int			rc;

	for (;;)
	{
		const uint8_t *at = rows.rows.pos;

		fuzz_error_reset(&err);
		rc = bl_rows_next(dec, &rows, NULL, NULL, &err);
		fuzz_check_rc(rc, -1, 1, &err, "bl_rows_next (count)");
		if (rc != 1)
			break;
		if (rows.rows.pos == at)
			fuzz_die("bl_rows_next (count)", "returned a row without consuming any bytes");
	}
}

static void fuzz_consume(bl_decoder *dec, bl_event *ev, fuzz_bufs *b,
						 bool canonical);

/* The part of a rows event's JSON line from "op" on (what the canonical
 * form must reproduce exactly); NULL if there is none. */
static const char *
fuzz_rows_part(const bl_buf *line)
{
	return line->data ? strstr(line->data, ",\"op\":") : NULL;
}

/*
 * The change store's path (binlogcat --canonical-roundtrip): write the
 * rows event and its table map as canonical events, decode those with a
 * decoder in canonical format, and consume the result.  Called before the
 * rows are iterated (the event's cursor must be unconsumed).  A decoded
 * table and rows event must serialize, their canonical form must decode,
 * and when the direct JSON line was complete, the canonical one must have
 * the same rows (b->direct).
 */
static void
fuzz_roundtrip(const bl_event *ev, fuzz_bufs *b)
{
	const bl_table *t = ev->u.rows.table;
	bl_event	tm,
				cev;
	bl_error	err;
	size_t		tm_len;
	int			rc;

	if (t == NULL)
		return;
	bl_buf_reset(&b->canon_buf);
	if (bl_table_serialize(t, t->version, &b->canon_buf) != 0)
		fuzz_die("bl_table_serialize", "failed");
	tm_len = b->canon_buf.len;
	if (bl_rows_serialize(ev, t->version, &b->canon_buf) != 0)
		fuzz_die("bl_rows_serialize", "failed");
	memset(&tm, 0xa5, sizeof(tm));
	fuzz_error_reset(&err);
	rc = bl_decode_event(b->canon, (const uint8_t *) b->canon_buf.data, tm_len,
						 ev->pos, &tm, &err);
	fuzz_check_rc(rc, -1, 0, &err, "bl_decode_event (canonical TABLE_MAP)");
	if (rc != 0)
	{
		fprintf(stderr, "canonical TABLE_MAP of %s.%s: %s\n", t->schema.ptr,
				t->name.ptr, err.message);
		fuzz_die("bl_table_serialize", "its canonical TABLE_MAP does not decode");
	}
	memset(&cev, 0xa5, sizeof(cev));
	fuzz_error_reset(&err);
	rc = bl_decode_event(b->canon, (const uint8_t *) b->canon_buf.data + tm_len,
						 b->canon_buf.len - tm_len, ev->pos, &cev, &err);
	fuzz_check_rc(rc, -1, 0, &err, "bl_decode_event (canonical rows)");
	if (rc != 0)
	{
		fprintf(stderr, "canonical rows event: %s\n", err.message);
		fuzz_die("bl_rows_serialize", "its canonical rows event does not decode");
	}
	fuzz_consume(b->canon, &cev, b, true);
}

/* Everything a consumer does with one decoded event. */
static void
fuzz_consume(bl_decoder *dec, bl_event *ev, fuzz_bufs *b, bool canonical)
{
	static const bl_jsonl_options jopts = {false, true};
	bool		is_rows = bl_event_is_rows(ev->type);
	bl_rows_event rows;
	bl_error	err;
	int			rc;

	if (is_rows)
		rows = ev->u.rows;		/* the JSON line consumes ev's cursor */
	if (is_rows && !canonical)
	{
		bl_event	copy = *ev;

		bl_buf_reset(&b->direct);
		fuzz_roundtrip(&copy, b);	/* compares with b->direct: see below */
	}

	bl_buf_reset(&b->out);
	bl_buf_putc(&b->out, '#');	/* must survive a failure untouched */
	fuzz_error_reset(&err);
	rc = bl_event_to_jsonl(dec, ev, &jopts, &b->out, &err);
	fuzz_check_rc(rc, -1, 0, &err, "bl_event_to_jsonl");
	fuzz_log("bl_event_to_jsonl", rc, &err);
	if (rc == 0 && fuzz_verbose)
		fprintf(stderr, "%s", b->out.data + 1);
	if (rc == 0)
	{
		if (b->out.len < 3 || b->out.data[b->out.len - 1] != '\n')
			fuzz_die("bl_event_to_jsonl", "line does not end with a newline");
		fuzz_check_json(&b->out, 1, b->out.len - 1, "bl_event_to_jsonl");
	}
	else if (b->out.len < 1 || b->out.data[0] != '#')
		fuzz_die("bl_event_to_jsonl", "failure clobbered earlier output");

	/*
	 * Direct and canonical lines of a rows event must agree.  The
	 * canonical event is consumed first (from fuzz_roundtrip), so keep its
	 * rows part, then compare it with the direct line's.
	 */
	if (is_rows && canonical)
	{
		bl_buf_reset(&b->direct);
		if (rc == 0 && fuzz_rows_part(&b->out))
			bl_buf_puts(&b->direct, fuzz_rows_part(&b->out));
		else
			bl_buf_puts(&b->direct, "#failed");
	}
	else if (is_rows && rc == 0 && fuzz_rows_part(&b->out) && b->direct.len > 0 &&
			 strcmp(b->direct.data, fuzz_rows_part(&b->out)) != 0)
	{
		fprintf(stderr, "direct:    %s\ncanonical: %s\n",
				fuzz_rows_part(&b->out), b->direct.data);
		fuzz_die("canonical round trip", "rows differ from the direct decoding");
	}

	if (is_rows)
	{
		fuzz_rows_values(dec, rows, b);
		fuzz_rows_count(dec, rows);
	}

	/* the state accessors the SQL functions and binlogcat use */
	(void) bl_decoder_gtid(dec);
	(void) bl_decoder_server_version(dec);
	(void) bl_decoder_is_mariadb(dec);
	(void) bl_decoder_checksum_alg(dec);
}

/*
 * Decode one whole event of len bytes (as cut by the caller) and consume
 * it and, for a TRANSACTION_PAYLOAD, its inner events.  Returns the
 * result of bl_decode_event().
 */
static int
fuzz_run_event(bl_decoder *dec, const uint8_t *data, size_t len, uint64_t pos,
			   fuzz_bufs *b)
{
	uint8_t    *copy = malloc(len ? len : 1);
	bl_event	ev;
	bl_error	err;
	int			rc;

	if (copy == NULL)
		abort();
	if (len)
		memcpy(copy, data, len);
	/* garbage, not zeros: a field the decoder forgets to set must show */
	memset(&ev, 0xa5, sizeof(ev));
	fuzz_error_reset(&err);
	rc = bl_decode_event(dec, copy, len, pos, &ev, &err);
	fuzz_check_rc(rc, -1, 0, &err, "bl_decode_event");
	fuzz_log("bl_decode_event", rc, &err);
	if (rc == 0)
	{
		fuzz_consume(dec, &ev, b, false);
		if (ev.type == BL_EV_TRANSACTION_PAYLOAD)
		{
			bl_event	inner;
			int			prc;

			for (;;)
			{
				memset(&inner, 0xa5, sizeof(inner));
				fuzz_error_reset(&err);
				prc = bl_payload_next(dec, &inner, &err);
				fuzz_check_rc(prc, -1, 1, &err, "bl_payload_next");
				fuzz_log("bl_payload_next", prc, &err);
				if (prc != 1)
					break;
				if (!inner.in_payload)
					fuzz_die("bl_payload_next", "inner event not marked in_payload");
				fuzz_consume(dec, &inner, b, false);
			}
		}
	}
	free(copy);
	return rc;
}

static void
fuzz_bufs_init(fuzz_bufs *b)
{
	bl_buf_init(&b->out);
	bl_buf_init(&b->val);
	bl_buf_init(&b->canon_buf);
	bl_buf_init(&b->direct);
	b->canon = bl_decoder_create(NULL);
	if (b->canon == NULL)
		abort();
	bl_decoder_set_canonical_format(b->canon);
}

static void
fuzz_bufs_free(fuzz_bufs *b)
{
	bl_buf_free(&b->out);
	bl_buf_free(&b->val);
	bl_buf_free(&b->canon_buf);
	bl_buf_free(&b->direct);
	bl_decoder_destroy(b->canon);
}

/* ---- a schema provider driven by the table name ---- */

#define FUZZ_SCHEMA_MAX_COLS 128

static const bl_schema_table *
fuzz_schema_lookup(void *arg, const char *schema, const char *table)
{
	static const char *const types[] = {
		"tinyint", "smallint", "mediumint", "int", "bigint", "float",
		"double", "decimal", "date", "time", "datetime", "timestamp",
		"year", "char", "binary", "varchar", "varbinary", "text", "blob",
		"json", "enum", "set", "bit", "vector", "geometry", "point",
		"inet6", NULL
	};
	static const char *const charsets[] = {
		NULL, "utf8mb4", "latin1", "binary", "sjis", "utf16", "UTF8", "nonesuch"
	};
	static const char *const members[] = {"a", "b\xc3\xa9", "", "\xff"};
	static char names[FUZZ_SCHEMA_MAX_COLS][8];
	static bl_schema_column cols[FUZZ_SCHEMA_MAX_COLS];
	static bl_schema_table st;
	size_t		n;

	(void) arg;
	if (schema == NULL || table == NULL || strcmp(schema, "fuzz") != 0)
		return NULL;
	n = strlen(table);
	if (n > FUZZ_SCHEMA_MAX_COLS)
		n = FUZZ_SCHEMA_MAX_COLS;
	for (size_t i = 0; i < n; i++)
	{
		uint8_t		c = (uint8_t) table[i];

		snprintf(names[i], sizeof(names[i]), "c%zu", i);
		cols[i].name = (c & 0x80) ? NULL : names[i];
		cols[i].data_type = types[c % (sizeof(types) / sizeof(types[0]))];
		cols[i].is_unsigned = (c & 0x40) != 0;
		cols[i].charset_name = charsets[(c >> 3) & 7];
		cols[i].n_values = (c & 0x20) ? (uint32_t) (c & 3) + 1 : 0;
		cols[i].values = (const char **) members;
		cols[i].is_pk = (c & 0x10) != 0;
	}
	st.ncols = (uint32_t) n;
	st.cols = cols;
	return &st;
}

/* ---- seeds ---- */

/* FNV-1a, for content-named seed files (duplicates collapse). */
static uint64_t
fuzz_hash(const uint8_t *p, size_t n)
{
	uint64_t	h = UINT64_C(0xcbf29ce484222325);

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * UINT64_C(0x100000001b3);
	return h;
}

static void
fuzz_write_seed(const char *dir, const char *kind, const uint8_t *p, size_t n)
{
	char		path[4096];
	FILE	   *f;

	snprintf(path, sizeof(path), "%s/%s-%016llx", dir, kind,
			 (unsigned long long) fuzz_hash(p, n));
	f = fopen(path, "wb");
	if (f == NULL || fwrite(p, 1, n, f) != n || fclose(f) != 0)
	{
		fprintf(stderr, "cannot write seed %s\n", path);
		exit(1);
	}
}

/* Read a whole file; NULL if it cannot be read. */
static uint8_t *
fuzz_read_file(const char *path, size_t *len)
{
	FILE	   *f = fopen(path, "rb");
	uint8_t    *p = NULL;
	size_t		cap = 0,
				n = 0;

	if (f == NULL)
		return NULL;
	for (;;)
	{
		size_t		got;

		if (n == cap)
		{
			uint8_t    *q;

			cap = cap ? cap * 2 : 65536;
			q = realloc(p, cap);
			if (q == NULL)
			{
				free(p);
				fclose(f);
				return NULL;
			}
			p = q;
		}
		got = fread(p + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	fclose(f);
	*len = n;
	return p;
}

/* Length of the event at data[pos..size), or 0 if none fits. */
static size_t
fuzz_event_len(const uint8_t *data, size_t size, size_t pos)
{
	uint32_t	n;

	if (pos > size || size - pos < BL_EVENT_HEADER_LEN)
		return 0;
	n = (uint32_t) bl_load_le(data + pos + 9, 4);
	if (n < BL_EVENT_HEADER_LEN || n > size - pos)
		return 0;
	return n;
}

#endif							/* FUZZ_COMMON_H */
