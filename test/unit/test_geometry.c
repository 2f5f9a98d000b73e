/*
 * test_geometry.c
 *	  Unit tests of GEOMETRY values to EWKB (bl_geometry.c) and their JSON
 *	  text (bl_value_to_json): the expected bytes are what PostGIS's
 *	  ST_AsEWKB writes for the same geometries.
 *
 * Run: make check-unit (ASan + UBSan).
 */
#include "bl_geometry.h"
#include "bl_test.h"
#include "bl_value_text.h"

static size_t
unhex(const char *h, uint8_t *out)
{
	size_t		n = 0;

	for (; h[0] && h[1]; h += 2)
	{
		unsigned	v;

		sscanf(h, "%2x", &v);
		out[n++] = (uint8_t) v;
	}
	return n;
}

static char *
tohex(const bl_buf *b)
{
	static char s[4096];
	size_t		n = 0;

	for (size_t i = 0; i < b->len && n + 3 < sizeof(s); i++)
		n += (size_t) snprintf(s + n, 3, "%02x", (unsigned char) b->data[i]);
	s[n] = '\0';
	return s;
}

/* MySQL form (hex) -> EWKB (hex) */
static void
check_ewkb(const char *name, const char *mysql_hex, const char *ewkb_hex)
{
	uint8_t		in[1024];
	size_t		n = unhex(mysql_hex, in);
	bl_buf		b;
	bl_error	err;
	bl_column	col;
	bl_value	v;
	char		want_json[4096];

	BL_TEST_BEGIN(name);
	bl_buf_init(&b);
	memset(&err, 0, sizeof(err));
	if (bl_geometry_to_ewkb(in, n, &b, &err) != 0)
		BL_FAIL("error %s", err.message);
	else
		BL_CHECK_STR(tohex(&b), ewkb_hex);
	bl_buf_free(&b);

	/* the JSON text: "\\x" + the same hex */
	memset(&col, 0, sizeof(col));
	col.type = BL_T_GEOMETRY;
	memset(&v, 0, sizeof(v));
	v.kind = BL_VAL_GEOMETRY;
	v.v.raw.ptr = in;
	v.v.raw.len = (uint32_t) n;
	bl_buf_init(&b);
	if (bl_value_to_json(&col, &v, NULL, &b, &err) != 0)
		BL_FAIL("json error %s", err.message);
	snprintf(want_json, sizeof(want_json), "\"\\\\x%s\"", ewkb_hex);
	BL_CHECK_STR(b.data, want_json);
	bl_buf_free(&b);
	BL_TEST_END();
}

static void
check_bad(const char *name, const char *mysql_hex, const char *message_part)
{
	uint8_t		in[64];
	size_t		n = unhex(mysql_hex, in);
	bl_buf		b;
	bl_error	err;
	bl_column	col;
	bl_value	v;

	BL_TEST_BEGIN(name);
	bl_buf_init(&b);
	memset(&err, 0, sizeof(err));
	if (bl_geometry_to_ewkb(in, n, &b, &err) == 0)
		BL_FAIL("no error for %s", mysql_hex);
	else if (strstr(err.message, message_part) == NULL)
		BL_FAIL("error [%s] lacks [%s]", err.message, message_part);
	BL_CHECK(err.code == BL_ERR_CORRUPT);
	bl_buf_free(&b);
	memset(&col, 0, sizeof(col));
	col.type = BL_T_GEOMETRY;
	v.kind = BL_VAL_GEOMETRY;
	v.v.raw.ptr = in;
	v.v.raw.len = (uint32_t) n;
	bl_buf_init(&b);
	BL_CHECK(bl_value_to_json(&col, &v, NULL, &b, &err) != 0);
	bl_buf_free(&b);
	BL_TEST_END();
}

int
main(void)
{
	/* POINT(1 2) SRID 4326: ST_AsEWKB('SRID=4326;POINT(1 2)') */
	check_ewkb("geometry/point-srid",
			   "e6100000" "01" "01000000" "000000000000f03f" "0000000000000040",
			   "01" "01000020" "e6100000" "000000000000f03f" "0000000000000040");
	/* SRID 0: plain WKB, as PostGIS writes it */
	check_ewkb("geometry/point-srid0",
			   "00000000" "01" "01000000" "000000000000f03f" "0000000000000040",
			   "01" "01000000" "000000000000f03f" "0000000000000040");
	/* big-endian WKB: flag and SRID in big-endian order */
	check_ewkb("geometry/point-xdr",
			   "110f0000" "00" "00000001" "3ff0000000000000" "4000000000000000",
			   "00" "20000001" "00000f11" "3ff0000000000000" "4000000000000000");
	/*
	 * GEOMETRYCOLLECTION(POINT(1 1)) SRID 3857: the member keeps its plain
	 * WKB type
	 */
	check_ewkb("geometry/collection-srid",
			   "110f0000" "01" "07000000" "01000000"
			   "01" "01000000" "000000000000f03f" "000000000000f03f",
			   "01" "07000020" "110f0000" "01000000"
			   "01" "01000000" "000000000000f03f" "000000000000f03f");
	check_bad("geometry/truncated", "e610000001010000", "less than SRID");
	check_bad("geometry/empty", "", "less than SRID");
	check_bad("geometry/bad-order", "e6100000" "02" "01000000", "byte order 2");
	check_bad("geometry/ewkb-flags", "e6100000" "01" "01000020", "EWKB flags");
	BL_TEST_EXIT();
}
