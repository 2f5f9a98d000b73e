/*
 * test_file.c
 *	  Unit tests of bl_file: binlog files read through the pread window.
 *
 * Each file is read with windows from 19 bytes (one event header) up to
 * the default, which exercises every refill: an event split across the
 * window's end, an event larger than the window (the window grows), the
 * window's start moving; the events must equal those of the same bytes
 * read as a memory image.  Synthetic files are written to a temporary
 * directory (events of 19 bytes to 300 kB with random bodies); the sample
 * binlogs of ../shared/binlog-samples are read in place when BL_SAMPLES
 * names their directory.  Broken files (truncated in a header or a body,
 * an impossible length, no magic, empty, shrunk after open, not a regular
 * file) must fail with the same errors as their memory images, or with a
 * clear error, and never read past what the file holds.
 *
 * Run: make check-unit (ASan + UBSan).
 */
#include "bl_event_types.h"
#include "bl_file.h"
#include "bl_test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

static const size_t windows[] = {19, 20, 64, 1000, 4096, 65536, 0};

#define NWINDOWS	(sizeof(windows) / sizeof(windows[0]))

static uint64_t rng_state = UINT64_C(0x2545F4914F6CDD1D);

static uint32_t
rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t) (rng_state >> 32);
}

static char tmpdir[] = "/tmp/bl_test_file.XXXXXX";

static void
write_file(const char *path, const uint8_t *data, size_t len)
{
	FILE	   *f = fopen(path, "wb");

	if (f == NULL || (len && fwrite(data, 1, len, f) != len) || fclose(f) != 0)
	{
		fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
		exit(2);
	}
}

static uint8_t *
read_whole(const char *path, size_t *len)
{
	FILE	   *f = fopen(path, "rb");
	uint8_t    *p = NULL;
	long		n;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0)
	{
		p = malloc(n ? (size_t) n : 1);
		if (p && fread(p, 1, (size_t) n, f) != (size_t) n)
		{
			free(p);
			p = NULL;
		}
		*len = (size_t) n;
	}
	fclose(f);
	return p;
}

/* A binlog image: the magic, then events of the given sizes. */
static uint8_t *
make_image(const uint32_t *sizes, int n, size_t *len)
{
	size_t		total = BL_BINLOG_MAGIC_LEN;
	uint8_t    *p;
	size_t		o;

	for (int i = 0; i < n; i++)
		total += sizes[i];
	p = malloc(total);
	memcpy(p, BL_BINLOG_MAGIC, BL_BINLOG_MAGIC_LEN);
	o = BL_BINLOG_MAGIC_LEN;
	for (int i = 0; i < n; i++)
	{
		for (uint32_t k = 0; k < sizes[i]; k++)
			p[o + k] = (uint8_t) rng();
		for (int k = 0; k < 4; k++)
			p[o + 9 + k] = (uint8_t) (sizes[i] >> (8 * k));
		o += sizes[i];
	}
	*len = total;
	return p;
}

/*
 * Read path with the given window and the same bytes as a memory image;
 * every event and the final result must agree.  expect_ok: 1 the file
 * must end cleanly, 0 it must fail, -1 either.  Returns the number of
 * events, or -1 after a BL_FAIL.
 */
static int
compare_with_memory(const char *path, const uint8_t *image, size_t size,
					size_t window, int expect_ok)
{
	bl_file		f,
				m;
	bl_error	ef,
				em;
	int			rf,
				rm;
	int			n = 0;

	memset(&ef, 0, sizeof(ef));
	memset(&em, 0, sizeof(em));
	if (bl_file_open_window(&f, path, window, &ef) != 0)
	{
		BL_FAIL("%s (window %zu): open failed: %s", path, window, ef.message);
		return -1;
	}
	bl_file_open_memory(&m, f.name, image, size, BL_BINLOG_MAGIC_LEN);
	for (;;)
	{
		const uint8_t *evf,
				   *evm;
		size_t		lf,
					lm;
		uint64_t	pf,
					pm;

		rf = bl_file_next(&f, &evf, &lf, &pf, &ef);
		rm = bl_file_next(&m, &evm, &lm, &pm, &em);
		if (rf != rm)
		{
			BL_FAIL("%s (window %zu): event %d: file gives %d (%s), memory %d (%s)",
					path, window, n, rf, ef.message, rm, em.message);
			break;
		}
		if (rf != 1)
			break;
		if (lf != lm || pf != pm || memcmp(evf, evm, lf) != 0)
		{
			BL_FAIL("%s (window %zu): event %d at %llu differs", path, window, n,
					(unsigned long long) pm);
			break;
		}
		n++;
	}
	if (!bl_test_case_failed && rf == -1 &&
		(ef.code != em.code || strcmp(ef.message, em.message) != 0 ||
		 ef.position != em.position || strcmp(ef.file, em.file) != 0))
		BL_FAIL("%s (window %zu): errors differ: file %s:%llu %s, memory %s:%llu %s",
				path, window, ef.file, (unsigned long long) ef.position, ef.message,
				em.file, (unsigned long long) em.position, em.message);
	if (!bl_test_case_failed && expect_ok >= 0 && (rf == 0) != (expect_ok == 1))
		BL_FAIL("%s (window %zu): ended with %d: %s", path, window, rf, ef.message);
	bl_file_close(&f);
	bl_file_close(&f);			/* twice is harmless */
	bl_file_close(&m);
	return bl_test_case_failed ? -1 : n;
}

static void
test_synthetic(void)
{
	char		path[256];

	BL_TEST_BEGIN("synthetic files through every window size");
	snprintf(path, sizeof(path), "%s/synthetic.000001", tmpdir);
	for (int iter = 0; iter < 40 && !bl_test_case_failed; iter++)
	{
		uint32_t	sizes[64];
		int			n = 1 + (int) (rng() % 64);
		size_t		len;
		uint8_t    *img;

		for (int i = 0; i < n; i++)
		{
			uint32_t	r = rng() % 100;

			sizes[i] = r < 70 ? 19 + rng() % 200 :
				r < 95 ? 19 + rng() % 9000 : 19 + rng() % 300000;
		}
		img = make_image(sizes, n, &len);
		write_file(path, img, len);
		for (size_t w = 0; w < NWINDOWS; w++)
			if (compare_with_memory(path, img, len, windows[w], 1) != n &&
				!bl_test_case_failed)
				BL_FAIL("iteration %d, window %zu: wrong event count", iter, windows[w]);
		free(img);
	}
	BL_TEST_END();
}

static void
test_broken(void)
{
	uint32_t	sizes[] = {100, 5000, 19, 70000, 300};
	size_t		len;
	uint8_t    *img = make_image(sizes, 5, &len);
	char		path[256];

	BL_TEST_BEGIN("truncated files fail like their memory images");
	snprintf(path, sizeof(path), "%s/broken.000001", tmpdir);
	/* cut at every offset around each event boundary and inside bodies */
	for (size_t cut = BL_BINLOG_MAGIC_LEN; cut < len && !bl_test_case_failed;
		 cut += (cut % 97 == 0) ? 1 : 1 + rng() % 700)
	{
		write_file(path, img, cut);
		for (size_t w = 0; w < NWINDOWS && !bl_test_case_failed; w++)
			compare_with_memory(path, img, cut, windows[w], -1);
	}
	/* an event length below a header's */
	{
		uint8_t    *bad = malloc(len);

		memcpy(bad, img, len);
		bad[BL_BINLOG_MAGIC_LEN + 100 + 9] = 18;
		memset(bad + BL_BINLOG_MAGIC_LEN + 100 + 10, 0, 3);
		write_file(path, bad, len);
		for (size_t w = 0; w < NWINDOWS && !bl_test_case_failed; w++)
			compare_with_memory(path, bad, len, windows[w], 0);
		/* a length past the end of the file */
		bad[BL_BINLOG_MAGIC_LEN + 100 + 12] = 0x7f;
		write_file(path, bad, len);
		for (size_t w = 0; w < NWINDOWS && !bl_test_case_failed; w++)
			compare_with_memory(path, bad, len, windows[w], 0);
		free(bad);
	}
	BL_TEST_END();
	free(img);
}

static void
test_open_errors(void)
{
	char		path[256];
	bl_file		f;
	bl_error	err;
	uint32_t	sizes[] = {5000, 5000, 5000};
	size_t		len;
	uint8_t    *img = make_image(sizes, 3, &len);
	int			rc,
				fd;
	const uint8_t *ev;
	size_t		elen;
	uint64_t	pos;

	BL_TEST_BEGIN("open errors and a file that shrinks while read");
	snprintf(path, sizeof(path), "%s/empty", tmpdir);
	write_file(path, img, 0);
	memset(&err, 0, sizeof(err));
	BL_CHECK_INT(bl_file_open(&f, path, &err), -1);
	BL_CHECK_INT(err.code, BL_ERR_CORRUPT);
	BL_CHECK(strstr(err.message, "is not a binlog file") != NULL);

	snprintf(path, sizeof(path), "%s/nomagic", tmpdir);
	write_file(path, (const uint8_t *) "\xfe" "bix" "more", 7);
	BL_CHECK_INT(bl_file_open(&f, path, &err), -1);
	BL_CHECK_INT(err.code, BL_ERR_CORRUPT);

	snprintf(path, sizeof(path), "%s/missing", tmpdir);
	BL_CHECK_INT(bl_file_open(&f, path, &err), -1);
	BL_CHECK_INT(err.code, BL_ERR_IO);

	BL_CHECK_INT(bl_file_open(&f, tmpdir, &err), -1);
	BL_CHECK_INT(err.code, BL_ERR_IO);
	BL_CHECK(strstr(err.message, "not a regular file") != NULL);

	/* the magic alone: no events */
	snprintf(path, sizeof(path), "%s/magic", tmpdir);
	write_file(path, img, BL_BINLOG_MAGIC_LEN);
	BL_CHECK_INT(bl_file_open(&f, path, &err), 0);
	BL_CHECK_INT(bl_file_next(&f, &ev, &elen, &pos, &err), 0);
	bl_file_close(&f);

	/* shrinks after open: the size at open is what is read, and the
	 * missing bytes are an error, not a read past the end */
	snprintf(path, sizeof(path), "%s/shrinks.000001", tmpdir);
	write_file(path, img, len);
	BL_CHECK_INT(bl_file_open_window(&f, path, 64, &err), 0);
	BL_CHECK_INT(bl_file_next(&f, &ev, &elen, &pos, &err), 1);
	BL_CHECK_INT(elen, 5000);
	fd = open(path, O_WRONLY);
	BL_CHECK(fd >= 0 && ftruncate(fd, 6000) == 0);
	if (fd >= 0)
		close(fd);
	rc = bl_file_next(&f, &ev, &elen, &pos, &err);
	BL_CHECK_INT(rc, -1);
	BL_CHECK_INT(err.code, BL_ERR_TRUNCATED);
	BL_CHECK_STR(err.file, "shrinks.000001");
	BL_CHECK_INT(err.position, BL_BINLOG_MAGIC_LEN + 5000);
	bl_file_close(&f);
	BL_TEST_END();
	free(img);
}

/* The sample binlogs (when BL_SAMPLES is set): file and memory agree. */
static void
test_samples(void)
{
	const char *dir = getenv("BL_SAMPLES");
	char		list[4096];
	FILE	   *prov;
	char		line[2048];
	int			files = 0;

	BL_TEST_BEGIN("sample binlogs read through small windows");
	if (dir == NULL)
	{
		printf("# BL_SAMPLES not set: sample files skipped\n");
		BL_TEST_END();
		return;
	}
	snprintf(list, sizeof(list), "%s/PROVENANCE.tsv", dir);
	prov = fopen(list, "r");
	if (prov == NULL)
	{
		BL_FAIL("cannot open %s", list);
		BL_TEST_END();
		return;
	}
	while (fgets(line, sizeof(line), prov) && !bl_test_case_failed)
	{
		char		path[4096];
		char	   *tab = strchr(line, '\t');
		uint8_t    *img;
		size_t		len;
		static const size_t sample_windows[] = {19, 333, 8192, 0};

		if (tab == NULL || strncmp(line, "file\t", 5) == 0)
			continue;
		*tab = '\0';
		snprintf(path, sizeof(path), "%s/%s", dir, line);
		img = read_whole(path, &len);
		if (img == NULL)
			continue;
		if (len >= BL_BINLOG_MAGIC_LEN &&
			memcmp(img, BL_BINLOG_MAGIC, BL_BINLOG_MAGIC_LEN) == 0)
		{
			bl_file		probe;
			bl_file		m;
			bl_error	err;
			const uint8_t *ev;
			size_t		elen;
			uint64_t	pos;
			int			rc;

			/* whether the file ends cleanly decides what to expect */
			memset(&err, 0, sizeof(err));
			bl_file_open_memory(&m, "m", img, len, BL_BINLOG_MAGIC_LEN);
			while ((rc = bl_file_next(&m, &ev, &elen, &pos, &err)) == 1)
				;
			for (size_t w = 0; w < sizeof(sample_windows) / sizeof(sample_windows[0]); w++)
				compare_with_memory(path, img, len, sample_windows[w], rc == 0 ? 1 : 0);
			if (bl_file_open(&probe, path, &err) == 0)
				bl_file_close(&probe);
			files++;
		}
		free(img);
	}
	fclose(prov);
	if (files < 50 && !bl_test_case_failed)
		BL_FAIL("only %d sample binlogs found in %s", files, dir);
	BL_TEST_END();
}

static void
remove_tmpdir(void)
{
	static const char *const names[] = {
		"synthetic.000001", "broken.000001", "empty", "nomagic", "magic",
		"shrinks.000001"
	};
	char		path[256];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
	{
		snprintf(path, sizeof(path), "%s/%s", tmpdir, names[i]);
		unlink(path);
	}
	rmdir(tmpdir);
}

int
main(void)
{
	if (mkdtemp(tmpdir) == NULL)
	{
		fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
		return 2;
	}
	test_synthetic();
	test_broken();
	test_open_errors();
	test_samples();
	remove_tmpdir();
	BL_TEST_EXIT();
}
