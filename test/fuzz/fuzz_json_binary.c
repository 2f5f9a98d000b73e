/*
 * fuzz_json_binary.c
 *	  libFuzzer target for the MySQL binary JSON module: the input is fed
 *	  whole to bl_json_binary_to_text and bl_json_diff_to_text, and split
 *	  (the first two bytes give the split point) into a before image and a
 *	  diff vector for bl_json_apply_diff.
 *
 * Each piece is copied to its own allocation of exactly its size so that
 * AddressSanitizer catches any read past it.  A successful call must
 * produce valid JSON after what the buffer already held; a failed one
 * must leave the buffer as it was.
 *
 * Build and run:
 *	clang -std=gnu99 -g -O1 -fsanitize=fuzzer,address,undefined -Isrc/decoder \
 *		test/fuzz/fuzz_json_binary.c src/decoder/bl_json_binary.c \
 *		src/decoder/bl_buf.c -lm -o /tmp/fuzz_json_binary
 *	/tmp/fuzz_json_binary -max_total_time=120 CORPUS_DIR
 */
#include "bl_json_binary.h"

#include "../unit/bl_json_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint8_t *
fuzz_copy(const uint8_t *p, size_t n)
{
	uint8_t    *c = malloc(n ? n : 1);

	if (c == NULL)
		abort();
	if (n)
		memcpy(c, p, n);
	return c;
}

static void
fuzz_check(int rc, bl_buf *out, const bl_error *err, const char *what)
{
	if (rc == 0)
	{
		if (out->len < 1 || out->data[0] != '#' ||
			!bl_json_text_valid(out->data + 1, out->len - 1))
		{
			fprintf(stderr, "%s: invalid JSON output: %s\n", what, out->data);
			abort();
		}
	}
	else if (rc != -1 || out->len != 1 || err->code == BL_OK)
	{
		fprintf(stderr, "%s: bad failure state rc=%d len=%zu\n", what, rc,
				out->len);
		abort();
	}
	bl_buf_reset(out);
	bl_buf_putc(out, '#');
}

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	bl_buf		out;
	bl_error	err;
	uint8_t    *whole = fuzz_copy(data, size);
	int			rc;

	bl_buf_init(&out);
	bl_buf_putc(&out, '#');

	memset(&err, 0, sizeof(err));
	rc = bl_json_binary_to_text(whole, size, &out, &err);
	fuzz_check(rc, &out, &err, "binary_to_text");

	memset(&err, 0, sizeof(err));
	rc = bl_json_diff_to_text(whole, size, &out, &err);
	fuzz_check(rc, &out, &err, "diff_to_text");
	free(whole);

	if (size >= 2)
	{
		size_t		rest = size - 2;
		size_t		split = ((size_t) data[0] | (size_t) data[1] << 8);
		uint8_t    *before;
		uint8_t    *diff;

		split = rest ? split % (rest + 1) : 0;
		before = fuzz_copy(data + 2, split);
		diff = fuzz_copy(data + 2 + split, rest - split);
		memset(&err, 0, sizeof(err));
		rc = bl_json_apply_diff(before, split, diff, rest - split, &out, &err);
		fuzz_check(rc, &out, &err, "apply_diff");
		free(before);
		free(diff);
	}

	bl_buf_free(&out);
	return 0;
}
