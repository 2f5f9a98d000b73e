/*
 * fuzz_decoder.c
 *	  libFuzzer target for the whole decoder, driven the way binlogcat
 *	  drives it over a file.
 *
 * The input is a binlog file image.  If it starts with the binlog magic,
 * the magic is skipped and checksums are verified (binlogcat FILE);
 * without the magic, the events start at offset 0 and checksums are not
 * verified (binlogcat --no-verify), so that mutated events get past the
 * CRC.  The magic "\xfe" "dmp" stands for a replication stream instead:
 * checksums verified, and CRC32 expected before the first
 * FORMAT_DESCRIPTION (bl_decoder_expect_checksum, as the live source does
 * after asking the server), where a fake ROTATE may come without one.
 * The image is split into events by bl_file_next() (the header's
 * length field, bounds-checked), and each event goes through
 * fuzz_run_event() (fuzz_common.h): bl_decode_event, the JSON line,
 * every row and value, and the inner events of a TRANSACTION_PAYLOAD.
 * Unlike binlogcat, a failed event does not end the input: the next one
 * is decoded with whatever state the failure left, which must be safe
 * too.  The decoder has a schema provider (fuzz_schema_lookup) for tables
 * of the schema "fuzz".  Each input gets a fresh decoder, destroyed at its
 * end, so that state (and memory) never carries over.
 *
 * Seeds: with FUZZ_WRITE_SEEDS=DIR, the program writes seeds for the
 * binlog files named on its command line into DIR and exits:
 *	file-*	the file (the first 64 kB if larger, cut at an event boundary)
 *	dump-*	the file as a replication stream: a fake ROTATE without
 *			checksum, then its events (the first 64 kB)
 *	ev-*	one event without the magic, after the file's
 *			FORMAT_DESCRIPTION and, for rows events, the TABLE_MAP events
 *			of the statement (at most 24 per event type and file)
 * With FUZZ_WRITE_JSON_SEEDS=DIR as well, the binary JSON values of the
 * files' rows events go to DIR (seeds of fuzz_json_binary).
 * test/fuzz/make-corpus.sh does this for all samples.
 *
 * Build and run: make fuzz; build/fuzz/fuzz_decoder -detect_leaks=1 CORPUS
 * (test/suites/50-fuzz.sh has the flags the tests use).
 */
#include "fuzz_common.h"

#define SEED_FILE_MAX		(64 * 1024)
#define SEED_PER_TYPE		24
#define SEED_MAX_MAPS		16
#define DUMP_MAGIC			"\xfe" "dmp"

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int			LLVMFuzzerInitialize(int *argc, char ***argv);

static const char fuzz_file_name[] = "fuzz-bin.000001";

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	bl_decoder_options opts;
	bl_decoder *dec;
	bl_file		f;
	fuzz_bufs	b;
	bl_error	err;
	const uint8_t *ev;
	size_t		len;
	uint64_t	pos;
	int			rc;
	bool		dump = size >= 4 && memcmp(data, DUMP_MAGIC, 4) == 0;
	bool		magic = dump || (size >= BL_BINLOG_MAGIC_LEN &&
								 memcmp(data, BL_BINLOG_MAGIC, BL_BINLOG_MAGIC_LEN) == 0);

	bl_decoder_options_init(&opts);
	opts.verify_checksum = magic;
	opts.schema_lookup = fuzz_schema_lookup;
	dec = bl_decoder_create(&opts);
	if (dec == NULL)
		abort();
	if (dump)
		bl_decoder_expect_checksum(dec, BL_CHECKSUM_CRC32);
	bl_decoder_set_file(dec, fuzz_file_name, strlen(fuzz_file_name));
	fuzz_bufs_init(&b);

	/* a bl_file over the input image (events are handed out in place) */
	bl_file_open_memory(&f, fuzz_file_name, data, size,
						magic ? BL_BINLOG_MAGIC_LEN : 0);

	for (;;)
	{
		fuzz_error_reset(&err);
		rc = bl_file_next(&f, &ev, &len, &pos, &err);
		fuzz_check_rc(rc, -1, 1, &err, "bl_file_next");
		if (rc != 1)
			break;
		if (ev < data || len < BL_EVENT_HEADER_LEN || len > size ||
			(size_t) (ev - data) > size - len || pos != (uint64_t) (ev - data))
			fuzz_die("bl_file_next", "event outside the file");
		(void) fuzz_run_event(dec, ev, len, pos, &b);
	}

	/* lookups of whatever the input mapped */
	(void) bl_decoder_table(dec, 0);
	(void) bl_decoder_file(dec);
	bl_decoder_reset_tables(dec);
	bl_decoder_destroy(dec);
	fuzz_bufs_free(&b);
	return 0;
}

/* ---- seed writer ---- */

static void
write_event_seed(const char *dir, const uint8_t *fde, size_t fde_len,
				 const uint8_t *const *maps, const size_t *map_len, int nmaps,
				 const uint8_t *ev, size_t len)
{
	size_t		total = fde_len + len;
	uint8_t    *p;
	size_t		o = 0;

	for (int i = 0; i < nmaps; i++)
		total += map_len[i];
	p = malloc(total ? total : 1);
	if (p == NULL)
		abort();
	if (fde_len)
		memcpy(p, fde, fde_len);
	o = fde_len;
	for (int i = 0; i < nmaps; i++)
	{
		memcpy(p + o, maps[i], map_len[i]);
		o += map_len[i];
	}
	memcpy(p + o, ev, len);
	fuzz_write_seed(dir, "ev", p, total);
	free(p);
}

/*
 * FUZZ_WRITE_JSON_SEEDS=DIR: the binary JSON values of the file's rows
 * events (seeds of fuzz_json_binary).
 */
static void
write_json_seeds(const char *dir, const uint8_t *data, size_t size)
{
	bl_decoder_options opts;
	bl_decoder *dec;
	size_t		pos = BL_BINLOG_MAGIC_LEN;
	size_t		len;
	int			n = 0;

	bl_decoder_options_init(&opts);
	opts.verify_checksum = false;
	dec = bl_decoder_create(&opts);
	if (dec == NULL)
		abort();
	while ((len = fuzz_event_len(data, size, pos)) > 0 && n < 64)
	{
		bl_event	ev;
		bl_error	err;
		bl_row		before,
					after;

		if (bl_decode_event(dec, data + pos, len, pos, &ev, &err) == 0 &&
			bl_event_is_rows(ev.type))
		{
			while (bl_rows_next(dec, &ev.u.rows, &before, &after, &err) == 1)
				for (int img = 0; img < 2; img++)
				{
					const bl_row *r = img ? &after : &before;

					for (uint32_t i = 0; i < r->ncols; i++)
						if (r->values[i].kind == BL_VAL_JSON ||
							r->values[i].kind == BL_VAL_JSON_DIFF)
						{
							fuzz_write_seed(dir, "json", r->values[i].v.raw.ptr,
											r->values[i].v.raw.len);
							n++;
						}
				}
		}
		pos += len;
	}
	bl_decoder_destroy(dec);
}

/* DUMP_MAGIC, a fake ROTATE to the file (no checksum), its events. */
static void
write_dump_seed(const char *dir, const char *path, const uint8_t *data, size_t len)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	size_t		blen = strlen(base);
	size_t		rot = BL_EVENT_HEADER_LEN + 8 + blen;
	size_t		total = 4 + rot + (len - BL_BINLOG_MAGIC_LEN);
	uint8_t    *p = malloc(total);

	if (p == NULL)
		abort();
	memcpy(p, DUMP_MAGIC, 4);
	memset(p + 4, 0, BL_EVENT_HEADER_LEN);
	p[4 + 4] = BL_EV_ROTATE;
	p[4 + 5] = 1;
	for (int i = 0; i < 4; i++)
		p[4 + 9 + i] = (uint8_t) (rot >> (8 * i));
	p[4 + 17] = BL_LOG_EVENT_ARTIFICIAL_F;
	memset(p + 4 + BL_EVENT_HEADER_LEN, 0, 8);
	p[4 + BL_EVENT_HEADER_LEN] = 4;	/* position 4 */
	memcpy(p + 4 + BL_EVENT_HEADER_LEN + 8, base, blen);
	memcpy(p + 4 + rot, data + BL_BINLOG_MAGIC_LEN, len - BL_BINLOG_MAGIC_LEN);
	fuzz_write_seed(dir, "dump", p, total);
	free(p);
}

static void
write_seeds_of_file(const char *dir, const char *path)
{
	size_t		size;
	uint8_t    *data = fuzz_read_file(path, &size);
	size_t		pos = BL_BINLOG_MAGIC_LEN;
	size_t		len;
	size_t		cut = BL_BINLOG_MAGIC_LEN;
	const uint8_t *fde = NULL;
	size_t		fde_len = 0;
	const uint8_t *maps[SEED_MAX_MAPS];
	size_t		map_len[SEED_MAX_MAPS];
	int			nmaps = 0;
	int			per_type[256] = {0};

	if (data == NULL)
	{
		fprintf(stderr, "fuzz_decoder: cannot read %s\n", path);
		exit(1);
	}
	if (size < BL_BINLOG_MAGIC_LEN ||
		memcmp(data, BL_BINLOG_MAGIC, BL_BINLOG_MAGIC_LEN) != 0)
	{
		free(data);				/* not a binlog: no seeds */
		return;
	}
	while ((len = fuzz_event_len(data, size, pos)) > 0)
	{
		uint8_t		type = data[pos + 4];

		if (pos + len <= SEED_FILE_MAX)
			cut = pos + len;
		if (type == BL_EV_FORMAT_DESCRIPTION)
		{
			fde = data + pos;
			fde_len = len;
			nmaps = 0;
		}
		else if (type == BL_EV_TABLE_MAP)
		{
			if (nmaps == SEED_MAX_MAPS)
				nmaps = 0;
			maps[nmaps] = data + pos;
			map_len[nmaps++] = len;
		}
		if (type != BL_EV_FORMAT_DESCRIPTION && per_type[type] < SEED_PER_TYPE)
		{
			per_type[type]++;
			write_event_seed(dir, fde, fde_len, maps, map_len,
							 bl_event_is_rows(type) ? nmaps : 0,
							 data + pos, len);
		}
		if (type != BL_EV_TABLE_MAP && !bl_event_is_rows(type))
			nmaps = 0;
		pos += len;
	}
	if (getenv("FUZZ_WRITE_JSON_SEEDS") && getenv("FUZZ_WRITE_JSON_SEEDS")[0])
		write_json_seeds(getenv("FUZZ_WRITE_JSON_SEEDS"), data, size);
	/* the whole file, or its first events; a torn tail is kept as is */
	fuzz_write_seed(dir, "file", data, size <= SEED_FILE_MAX ? size : cut);
	write_dump_seed(dir, path, data, size <= SEED_FILE_MAX ? size : cut);
	free(data);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dir = getenv("FUZZ_WRITE_SEEDS");

	if (dir == NULL || dir[0] == '\0')
		return 0;
	for (int i = 1; i < *argc; i++)
		write_seeds_of_file(dir, (*argv)[i]);
	exit(0);
}
