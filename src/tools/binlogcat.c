/*
 * binlogcat.c
 *	  Command-line tool: decode binlog files, or a live server's binlog
 *	  over the replication protocol, to JSON lines (one event per line).
 *
 *	  binlogcat [options] FILE...
 *	  binlogcat [options] --host H --port P --user U --password P --start S
 *
 * Used by the tests, the fuzzer and the benchmarks, and by people who want
 * to look into binlogs.  The decoder benchmark (bench/decoder) times two
 * modes that print only statistics: --decode-only decodes every column of
 * every row image to its bl_value (what a consumer of the decoder gets:
 * integers, temporal fields, pointers to string bytes with their charset),
 * and --values also formats every value as JSON text into a buffer that is
 * never written.
 */
#include "bl_decoder.h"
#include "bl_event_json.h"
#include "bl_file.h"
#include "bl_value_text.h"
#include "bl_mysql_source.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef enum output_mode
{
	OUT_JSONL,
	OUT_DECODE,					/* decode every value to a bl_value, print
								 * nothing but statistics */
	OUT_VALUES,					/* decode and format every value, print
								 * nothing but statistics */
	OUT_COUNT					/* count events and rows */
} output_mode;

typedef struct cat_state
{
	output_mode mode;
	bool		roundtrip;		/* re-decode rows events from canonical form */
	bl_decoder *canon;			/* decoder of the canonical events */
	bl_buf		canon_buf;
	bl_jsonl_options jopts;
	bl_buf		out;
	bl_buf		scratch;
	uint64_t	events;
	uint64_t	rows;
	uint64_t	bytes;
	uint64_t	unknown;
	uint64_t	values;			/* --decode-only: values seen */
	uint64_t	digest;			/* --decode-only: a hash of them */
	uint64_t	stop_position;
	bool		quiet;
} cat_state;

static void
flush_out(cat_state *st, bool force)
{
	if (st->out.len > 0 && (force || st->out.len >= (1 << 20)))
	{
		fwrite(st->out.data, 1, st->out.len, stdout);
		bl_buf_reset(&st->out);
	}
	if (force)
		fflush(stdout);
}

static void
report_error(const bl_error *err)
{
	fprintf(stderr, "binlogcat: %s%s%s%llu: %s error: %s\n",
			err->file, err->file[0] ? ":" : "", err->file[0] ? "" : "position ",
			(unsigned long long) err->position, bl_errcode_name(err->code),
			err->message);
}

/*
 * --decode-only: fold a decoded value into a digest, reading every field
 * the value has (and the first byte of a string), so that the decoding
 * cannot be optimised away and two builds can be compared.
 */
static inline uint64_t
digest_value(uint64_t h, const bl_value *v)
{
	uint64_t	x = v->kind;

	switch ((bl_value_kind) v->kind)
	{
		case BL_VAL_ABSENT:
		case BL_VAL_NULL:
			break;
		case BL_VAL_INT:
		case BL_VAL_UINT:
		case BL_VAL_BIT:
		case BL_VAL_YEAR:
		case BL_VAL_ENUM:
		case BL_VAL_SET:
			x ^= v->v.u << 5;
			break;
		case BL_VAL_FLOAT:
			{
				uint32_t	bits;

				memcpy(&bits, &v->v.f, 4);
				x ^= (uint64_t) bits << 5;
				break;
			}
		case BL_VAL_DOUBLE:
			{
				uint64_t	bits;

				memcpy(&bits, &v->v.d, 8);
				x ^= bits << 5;
				break;
			}
		case BL_VAL_DECIMAL:
		case BL_VAL_STRING:
		case BL_VAL_BINARY:
		case BL_VAL_JSON:
		case BL_VAL_JSON_DIFF:
		case BL_VAL_GEOMETRY:
		case BL_VAL_VECTOR:
			x ^= (uint64_t) v->v.raw.len << 5;
			if (v->v.raw.len)
				x ^= (uint64_t) v->v.raw.ptr[0] << 40;
			break;
		case BL_VAL_DATE:
		case BL_VAL_DATETIME:
		case BL_VAL_TIME:
			x ^= ((uint64_t) v->v.tm.year << 5) ^ ((uint64_t) v->v.tm.month << 19) ^
				((uint64_t) v->v.tm.day << 23) ^ ((uint64_t) v->v.tm.hour << 28) ^
				((uint64_t) v->v.tm.minute << 38) ^ ((uint64_t) v->v.tm.second << 44) ^
				((uint64_t) v->v.tm.usec << 20) ^ ((uint64_t) v->v.tm.neg << 63);
			break;
		case BL_VAL_TIMESTAMP:
			x ^= ((uint64_t) v->v.ts.sec << 5) ^ ((uint64_t) v->v.ts.usec << 37);
			break;
	}
	return (h ^ x) * UINT64_C(0x100000001b3);
}

static inline void
digest_row(cat_state *st, const bl_row *row)
{
	uint64_t	h = st->digest;

	for (uint32_t i = 0; i < row->ncols; i++)
		h = digest_value(h, &row->values[i]);
	st->digest = h;
	st->values += row->ncols;
}

/* --decode-only: decode every row image to values, touch each value. */
static int
consume_decode(cat_state *st, bl_decoder *dec, bl_event *ev, bl_error *err)
{
	bl_row		before,
				after;
	int			rc;

	while ((rc = bl_rows_next(dec, &ev->u.rows, &before, &after, err)) == 1)
	{
		st->rows++;
		digest_row(st, &before);
		digest_row(st, &after);
	}
	return rc < 0 ? -1 : 0;
}

/* --values: decode every row image to values and format each value into
 * a scratch buffer that is never printed. */
static int
consume_values(cat_state *st, bl_decoder *dec, bl_event *ev, bl_error *err)
{
	bl_row		before,
				after;
	int			rc;

	while ((rc = bl_rows_next(dec, &ev->u.rows, &before, &after, err)) == 1)
	{
		const bl_table *t = ev->u.rows.table;

		st->rows++;
		for (uint32_t i = 0; i < before.ncols; i++)
		{
			bl_buf_reset(&st->scratch);
			if (bl_value_to_json(&t->cols[i], &before.values[i], NULL, &st->scratch, err) != 0)
				return -1;
		}
		for (uint32_t i = 0; i < after.ncols; i++)
		{
			bl_buf_reset(&st->scratch);
			if (bl_value_to_json(&t->cols[i], &after.values[i],
								 before.ncols ? &before.values[i] : NULL,
								 &st->scratch, err) != 0)
				return -1;
		}
	}
	return rc < 0 ? -1 : 0;
}

/*
 * --canonical-roundtrip: write a rows event and its table map as canonical
 * events and decode those instead (a check of bl_serialize.c: the output
 * must equal the direct decoding).
 */
static int
roundtrip_rows(cat_state *st, bl_decoder *dec, bl_event *ev, bl_error *err)
{
	bl_event	tm;
	size_t		tm_len;
	uint64_t	pos = ev->pos,
				next = ev->next_pos;
	uint32_t	ts = ev->timestamp,
				sid = ev->server_id;
	bool		in_payload = ev->in_payload;

	if (ev->u.rows.table == NULL)
		return 0;
	bl_buf_reset(&st->canon_buf);
	if (bl_table_serialize(ev->u.rows.table, ev->u.rows.table->version, &st->canon_buf) != 0)
		return bl_error_set(err, BL_ERR_NOMEM, "out of memory");
	tm_len = st->canon_buf.len;
	if (bl_rows_serialize(ev, ev->u.rows.table->version, &st->canon_buf) != 0)
		return bl_error_set(err, BL_ERR_NOMEM, "out of memory");
	bl_decoder_set_file(st->canon, bl_decoder_file(dec), strlen(bl_decoder_file(dec)));
	if (bl_decode_event(st->canon, (const uint8_t *) st->canon_buf.data, tm_len, pos, &tm, err) != 0 ||
		bl_decode_event(st->canon, (const uint8_t *) st->canon_buf.data + tm_len,
						st->canon_buf.len - tm_len, pos, ev, err) != 0)
		return -1;
	ev->next_pos = (uint32_t) next;
	ev->timestamp = ts;
	ev->server_id = sid;
	ev->in_payload = in_payload;
	return 0;
}

static int
handle_event(cat_state *st, bl_decoder *dec, bl_event *ev, bl_error *err)
{
	st->events++;
	if (st->roundtrip && bl_event_is_rows(ev->type) && roundtrip_rows(st, dec, ev, err) != 0)
		return -1;
	if (bl_event_type_name(ev->type) == NULL)
	{
		st->unknown++;
		if (!st->quiet)
			fprintf(stderr, "binlogcat: %s:%llu: warning: unknown event type %u skipped (%u bytes)\n",
					bl_decoder_file(dec), (unsigned long long) ev->pos, ev->type, ev->size);
	}
	switch (st->mode)
	{
		case OUT_JSONL:
			if (bl_event_to_jsonl(dec, ev, &st->jopts, &st->out, err) != 0)
				return -1;
			/* the rows the line holds (bl_event_to_jsonl iterated them) */
			if (bl_event_is_rows(ev->type))
				st->rows += ev->u.rows.row_index;
			flush_out(st, false);
			return 0;
		case OUT_DECODE:
			if (bl_event_is_rows(ev->type))
				return consume_decode(st, dec, ev, err);
			return 0;
		case OUT_VALUES:
			if (bl_event_is_rows(ev->type))
				return consume_values(st, dec, ev, err);
			return 0;
		case OUT_COUNT:
			if (bl_event_is_rows(ev->type))
			{
				int			rc;

				while ((rc = bl_rows_next(dec, &ev->u.rows, NULL, NULL, err)) == 1)
					st->rows++;
				return rc < 0 ? -1 : 0;
			}
			return 0;
	}
	return 0;
}

/* Decode one raw event and, for a TRANSACTION_PAYLOAD, its inner events. */
static int
process_raw_event(cat_state *st, bl_decoder *dec, const uint8_t *data,
				  size_t len, uint64_t pos, bl_event *ev, bl_error *err)
{
	st->bytes += len;
	if (bl_decode_event(dec, data, len, pos, ev, err) != 0)
		return -1;
	if (handle_event(st, dec, ev, err) != 0)
		return -1;
	if (ev->type == BL_EV_TRANSACTION_PAYLOAD)
	{
		bl_event	inner;
		int			rc;

		while ((rc = bl_payload_next(dec, &inner, err)) == 1)
			if (handle_event(st, dec, &inner, err) != 0)
				return -1;
		if (rc < 0)
			return -1;
	}
	return 0;
}

/*
 * Where following a ROTATE (to `rotate_to`, at rotate_pos of file f)
 * leads: 1 with next_path set, 0 when f was the last file (the next one
 * does not exist and no later one does: said on stderr, not an error), -1
 * after an error was reported (the next file missing while a later one
 * exists, a name that is not a file name, a ROTATE to the file itself).
 */
static int
follow_rotate(const bl_file *f, const char *rotate_to, uint64_t rotate_pos,
			  char *next_path, size_t next_len)
{
	bl_error	err;
	struct stat sb;
	char		later[1024];

	memset(&err, 0, sizeof(err));
	snprintf(err.file, sizeof(err.file), "%s", f->name);
	err.position = rotate_pos;
	err.code = BL_ERR_IO;
	if (strchr(rotate_to, '/') != NULL || strcmp(rotate_to, ".") == 0 ||
		strcmp(rotate_to, "..") == 0)
	{
		snprintf(err.message, sizeof(err.message),
				 "ROTATE names \"%s\" as the next file, which is not a binlog file name: not followed (read the next file by naming it)",
				 rotate_to);
		report_error(&err);
		return -1;
	}
	bl_file_sibling(f->path, rotate_to, strlen(rotate_to), next_path, next_len);
	if (strcmp(rotate_to, f->name) == 0)
	{
		snprintf(err.message, sizeof(err.message),
				 "ROTATE names the file itself as the next file: not followed");
		report_error(&err);
		return -1;
	}
	if (stat(next_path, &sb) == 0 || errno != ENOENT)
		return 1;				/* opening it reports any other problem */
	if (bl_file_later_sibling(f->path, rotate_to, later, sizeof(later)))
	{
		snprintf(err.message, sizeof(err.message),
				 "ROTATE names the next file %s, which does not exist, but the later file %s does: the files between are missing (pass the files to read as arguments, or --no-follow)",
				 next_path, later);
		report_error(&err);
		return -1;
	}
	fprintf(stderr, "binlogcat: %s:%llu: note: ROTATE names the next file %s, which does not exist: %s was the last file\n",
			f->name, (unsigned long long) rotate_pos, next_path, f->name);
	return 0;
}

static int
run_files(cat_state *st, bl_decoder *dec, char **files, int nfiles,
		  bool follow, uint64_t start_position)
{
	char		next_path[4096];
	const char *path;
	int			fi = 0;
	int			hops = 0;
	bl_error	err;

	memset(&err, 0, sizeof(err));
	path = files[0];
	while (path)
	{
		bl_file		f;
		const uint8_t *data;
		size_t		len;
		uint64_t	pos;
		int			rc;
		bl_event	ev;
		char		rotate_to[BL_FILE_NAME_MAX] = "";
		uint64_t	rotate_pos = 0;
		size_t		rotate_too_long = 0;

		if (bl_file_open(&f, path, &err) != 0)
		{
			report_error(&err);
			return 1;
		}
		bl_decoder_set_file(dec, f.name, strlen(f.name));
		while ((rc = bl_file_next(&f, &data, &len, &pos, &err)) == 1)
		{
			if (st->stop_position && pos >= st->stop_position)
				break;
			if (start_position && pos < start_position &&
				data[4] != BL_EV_FORMAT_DESCRIPTION)
				continue;
			if (process_raw_event(st, dec, data, len, pos, &ev, &err) != 0)
			{
				flush_out(st, true);
				report_error(&err);
				bl_file_close(&f);
				return 1;
			}
			if (ev.type == BL_EV_ROTATE && !ev.u.rotate.fake)
			{
				rotate_pos = pos;
				rotate_too_long = 0;
				if (ev.u.rotate.file.len < sizeof(rotate_to) &&
					memchr(ev.u.rotate.file.ptr, '\0', ev.u.rotate.file.len) == NULL)
				{
					memcpy(rotate_to, ev.u.rotate.file.ptr, ev.u.rotate.file.len);
					rotate_to[ev.u.rotate.file.len] = '\0';
				}
				else
				{
					rotate_to[0] = '\0';
					rotate_too_long = ev.u.rotate.file.len;
				}
			}
		}
		flush_out(st, true);
		if (rc < 0)
		{
			report_error(&err);
			bl_file_close(&f);
			return 1;
		}
		start_position = 0;
		/* the next file: the next argument, else where ROTATE points */
		path = NULL;
		if (fi + 1 < nfiles)
			path = files[++fi];
		else if (follow && (rotate_to[0] || rotate_too_long))
		{
			int			frc = -1;

			if (rotate_too_long)
			{
				snprintf(err.file, sizeof(err.file), "%s", f.name);
				err.position = rotate_pos;
				bl_error_set(&err, BL_ERR_UNSUPPORTED,
							 "ROTATE names a next file of %zu bytes (or with a NUL byte): not followed",
							 rotate_too_long);
				report_error(&err);
			}
			else if (++hops > 100000)
			{
				snprintf(err.file, sizeof(err.file), "%s", f.name);
				err.position = rotate_pos;
				bl_error_set(&err, BL_ERR_UNSUPPORTED,
							 "followed 100000 ROTATE events: stopped (a cycle of files?)");
				report_error(&err);
			}
			else
				frc = follow_rotate(&f, rotate_to, rotate_pos, next_path, sizeof(next_path));
			if (frc < 0)
			{
				bl_file_close(&f);
				return 1;
			}
			if (frc == 1)
				path = next_path;
		}
		bl_file_close(&f);
		if (path == next_path)
		{
			/* copy: next_path is rewritten by the next hop */
			static char current[4096];

			snprintf(current, sizeof(current), "%s", next_path);
			path = current;
		}
	}
	return 0;
}

static int
run_live(cat_state *st, bl_decoder *dec, const bl_source_options *sopts)
{
	bl_source  *src;
	bl_error	err;
	int			rc;

	memset(&err, 0, sizeof(err));
	src = bl_source_connect(sopts, &err);
	if (src == NULL)
	{
		report_error(&err);
		return 1;
	}
	if (bl_source_start_dump(src, dec, &err) != 0)
	{
		report_error(&err);
		bl_source_close(src);
		return 1;
	}
	for (;;)
	{
		const uint8_t *data;
		size_t		len;
		uint64_t	pos;
		bl_event	ev;

		rc = bl_source_next(src, dec, &data, &len, &pos, &err);
		if (rc <= 0)
			break;
		if (process_raw_event(st, dec, data, len, pos, &ev, &err) != 0)
		{
			rc = -1;
			break;
		}
		if (sopts->flush_each)
			flush_out(st, true);
	}
	flush_out(st, true);
	if (rc < 0)
		report_error(&err);
	bl_source_close(src);
	return rc < 0 ? 1 : 0;
}

static void
usage(FILE *to)
{
	fprintf(to,
			"Usage: binlogcat [OPTIONS] FILE...\n"
			"       binlogcat [OPTIONS] --host HOST [--port PORT] --user USER [--password PW] [--start WHERE]\n"
			"\n"
			"Decode MySQL/MariaDB binlogs to JSON lines, one event per line.\n"
			"\n"
			"Output:\n"
			"  --rows-only            print only row change events\n"
			"  --no-columns           do not describe the columns of TABLE_MAP events\n"
			"  --decode-only          decode every value (no text), print only statistics\n"
			"  --values               decode and format every value, print only statistics\n"
			"  --count                count events and rows\n"
			"  --stats                print statistics to stderr at the end\n"
			"  --quiet                no warnings on stderr\n"
			"  --canonical-roundtrip  decode rows events through their canonical form\n"
			"                         (self-check of the change store's encoding)\n"
			"\n"
			"Files:\n"
			"  --no-follow            do not follow ROTATE events to the next file (by default\n"
			"                         the last file's ROTATE leads to the next one beside it;\n"
			"                         when it does not exist that is said on stderr, and it is\n"
			"                         an error if a later file of the series exists)\n"
			"  --start-position N     skip events before position N of the first file\n"
			"  --stop-position N      stop at the first event at or after position N\n"
			"  --no-verify            do not verify CRC32 checksums\n"
			"\n"
			"Live (replication protocol):\n"
			"  --host HOST --port PORT --user USER --password PW (or MYSQL_PWD)\n"
			"  --server-id N          replica server id to use (default 4000 + pid %% 1000)\n"
			"  --start WHERE          earliest | current | FILE:POS | time:SECONDS | time:\"YYYY-MM-DD HH:MM:SS\" (UTC)\n"
			"                         | gtid:SET (MariaDB D-S-N list or MySQL uuid:N-M set) (default earliest)\n"
			"  --until-end            stop at the end of the binlog instead of waiting\n"
			"  --heartbeat SECONDS    heartbeat period (default 5)\n"
			"  --ssl-mode MODE        disable | prefer | require | verify-ca | verify-full\n"
			"  --ssl-ca F --ssl-cert F --ssl-key F\n"
			"  --schema-from-server   with files: take column names from the server's\n"
			"                         information_schema when TABLE_MAP lacks them\n"
			"                         (always on in live mode)\n");
}

int
main(int argc, char **argv)
{
	enum
	{
		OPT_ROWS_ONLY = 256, OPT_NO_COLUMNS, OPT_DECODE_ONLY, OPT_VALUES, OPT_COUNT, OPT_STATS,
		OPT_QUIET, OPT_NO_FOLLOW, OPT_START_POS, OPT_STOP_POS, OPT_NO_VERIFY,
		OPT_HOST, OPT_PORT, OPT_USER, OPT_PASSWORD, OPT_SERVER_ID, OPT_START,
		OPT_UNTIL_END, OPT_HEARTBEAT, OPT_SSL_MODE, OPT_SSL_CA, OPT_SSL_CERT,
		OPT_SSL_KEY, OPT_SCHEMA_FROM_SERVER, OPT_ROUNDTRIP, OPT_HELP
	};
	static const struct option longopts[] = {
		{"rows-only", no_argument, NULL, OPT_ROWS_ONLY},
		{"no-columns", no_argument, NULL, OPT_NO_COLUMNS},
		{"decode-only", no_argument, NULL, OPT_DECODE_ONLY},
		{"values", no_argument, NULL, OPT_VALUES},
		{"count", no_argument, NULL, OPT_COUNT},
		{"stats", no_argument, NULL, OPT_STATS},
		{"quiet", no_argument, NULL, OPT_QUIET},
		{"no-follow", no_argument, NULL, OPT_NO_FOLLOW},
		{"start-position", required_argument, NULL, OPT_START_POS},
		{"stop-position", required_argument, NULL, OPT_STOP_POS},
		{"no-verify", no_argument, NULL, OPT_NO_VERIFY},
		{"host", required_argument, NULL, OPT_HOST},
		{"port", required_argument, NULL, OPT_PORT},
		{"user", required_argument, NULL, OPT_USER},
		{"password", required_argument, NULL, OPT_PASSWORD},
		{"server-id", required_argument, NULL, OPT_SERVER_ID},
		{"start", required_argument, NULL, OPT_START},
		{"until-end", no_argument, NULL, OPT_UNTIL_END},
		{"heartbeat", required_argument, NULL, OPT_HEARTBEAT},
		{"ssl-mode", required_argument, NULL, OPT_SSL_MODE},
		{"ssl-ca", required_argument, NULL, OPT_SSL_CA},
		{"ssl-cert", required_argument, NULL, OPT_SSL_CERT},
		{"ssl-key", required_argument, NULL, OPT_SSL_KEY},
		{"schema-from-server", no_argument, NULL, OPT_SCHEMA_FROM_SERVER},
		{"canonical-roundtrip", no_argument, NULL, OPT_ROUNDTRIP},
		{"help", no_argument, NULL, OPT_HELP},
		{NULL, 0, NULL, 0}
	};
	cat_state	st;
	bl_decoder_options dopts;
	bl_source_options sopts;
	bl_decoder *dec;
	bool		follow = true;
	bool		stats = false;
	bool		schema_from_server = false;
	uint64_t	start_position = 0;
	int			opt;
	int			rc;
	struct timespec t0,
				t1;
	bl_schema_cache *schema = NULL;

	memset(&st, 0, sizeof(st));
	st.jopts.table_columns = true;
	bl_buf_init(&st.out);
	bl_buf_init(&st.scratch);
	bl_decoder_options_init(&dopts);
	bl_source_options_init(&sopts);

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1)
	{
		switch (opt)
		{
			case OPT_ROWS_ONLY:
				st.jopts.rows_only = true;
				break;
			case OPT_NO_COLUMNS:
				st.jopts.table_columns = false;
				break;
			case OPT_DECODE_ONLY:
				st.mode = OUT_DECODE;
				break;
			case OPT_VALUES:
				st.mode = OUT_VALUES;
				break;
			case OPT_COUNT:
				st.mode = OUT_COUNT;
				break;
			case OPT_STATS:
				stats = true;
				break;
			case OPT_QUIET:
				st.quiet = true;
				break;
			case OPT_NO_FOLLOW:
				follow = false;
				break;
			case OPT_START_POS:
				start_position = strtoull(optarg, NULL, 10);
				break;
			case OPT_STOP_POS:
				st.stop_position = strtoull(optarg, NULL, 10);
				break;
			case OPT_NO_VERIFY:
				dopts.verify_checksum = false;
				break;
			case OPT_HOST:
				sopts.host = optarg;
				break;
			case OPT_PORT:
				sopts.port = (unsigned) atoi(optarg);
				break;
			case OPT_USER:
				sopts.user = optarg;
				break;
			case OPT_PASSWORD:
				sopts.password = optarg;
				break;
			case OPT_SERVER_ID:
				sopts.server_id = (uint32_t) strtoul(optarg, NULL, 10);
				break;
			case OPT_START:
				sopts.start = optarg;
				break;
			case OPT_UNTIL_END:
				sopts.until_end = true;
				break;
			case OPT_HEARTBEAT:
				sopts.heartbeat_seconds = atof(optarg);
				break;
			case OPT_SSL_MODE:
				sopts.ssl_mode = optarg;
				break;
			case OPT_SSL_CA:
				sopts.ssl_ca = optarg;
				break;
			case OPT_SSL_CERT:
				sopts.ssl_cert = optarg;
				break;
			case OPT_SSL_KEY:
				sopts.ssl_key = optarg;
				break;
			case OPT_SCHEMA_FROM_SERVER:
				schema_from_server = true;
				break;
			case OPT_ROUNDTRIP:
				st.roundtrip = true;
				break;
			case 'h':
			case OPT_HELP:
				usage(stdout);
				return 0;
			default:
				usage(stderr);
				return 2;
		}
	}
	if (sopts.password == NULL)
		sopts.password = getenv("MYSQL_PWD");
	if (sopts.server_id == 0)
		sopts.server_id = 4000 + (uint32_t) (getpid() % 1000);
	if (sopts.host == NULL && optind >= argc)
	{
		usage(stderr);
		return 2;
	}

	if (sopts.host && (optind >= argc || schema_from_server))
	{
		bl_error	err;

		memset(&err, 0, sizeof(err));
		schema = bl_schema_cache_create(&sopts, &err);
		if (schema == NULL)
		{
			report_error(&err);
			return 1;
		}
		dopts.schema_lookup = bl_schema_cache_lookup;
		dopts.schema_arg = schema;
	}
	dec = bl_decoder_create(&dopts);
	if (dec == NULL)
	{
		fprintf(stderr, "binlogcat: out of memory\n");
		return 1;
	}
	sopts.flush_each = st.mode == OUT_JSONL && !sopts.until_end;
	if (st.roundtrip)
	{
		st.canon = bl_decoder_create(NULL);
		if (st.canon == NULL)
			return 1;
		bl_decoder_set_canonical_format(st.canon);
		bl_buf_init(&st.canon_buf);
	}

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (optind < argc)
		rc = run_files(&st, dec, argv + optind, argc - optind, follow, start_position);
	else
		rc = run_live(&st, dec, &sopts);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	flush_out(&st, true);

	if (st.mode == OUT_COUNT)
		printf("{\"events\":%llu,\"rows\":%llu,\"bytes\":%llu,\"unknown_events\":%llu}\n",
			   (unsigned long long) st.events, (unsigned long long) st.rows,
			   (unsigned long long) st.bytes, (unsigned long long) st.unknown);
	if (stats || st.mode == OUT_VALUES || st.mode == OUT_DECODE)
	{
		double		secs = (double) (t1.tv_sec - t0.tv_sec) +
			(double) (t1.tv_nsec - t0.tv_nsec) / 1e9;
		bool		to_stdout = st.mode == OUT_VALUES || st.mode == OUT_DECODE;
		FILE	   *to = to_stdout ? stdout : stderr;

		fprintf(to,
				"{\"events\":%llu,\"rows\":%llu,\"bytes\":%llu,",
				(unsigned long long) st.events, (unsigned long long) st.rows,
				(unsigned long long) st.bytes);
		if (st.mode == OUT_DECODE)
			fprintf(to, "\"values\":%llu,\"digest\":\"%016llx\",",
					(unsigned long long) st.values, (unsigned long long) st.digest);
		fprintf(to,
				"\"seconds\":%.6f,\"rows_per_second\":%.0f,\"mb_per_second\":%.1f}\n",
				secs, secs > 0 ? (double) st.rows / secs : 0.0,
				secs > 0 ? (double) st.bytes / secs / 1e6 : 0.0);
	}
	bl_decoder_destroy(dec);
	if (st.canon)
	{
		bl_decoder_destroy(st.canon);
		bl_buf_free(&st.canon_buf);
	}
	if (schema)
		bl_schema_cache_destroy(schema);
	bl_buf_free(&st.out);
	bl_buf_free(&st.scratch);
	return rc;
}
