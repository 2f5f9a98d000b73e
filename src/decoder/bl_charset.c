/*
 * bl_charset.c
 *	  MySQL/MariaDB character sets: collation ids, conversion to UTF-8 and
 *	  JSON string escaping (see bl_charset.h).
 *
 * How each charset is converted:
 *
 * utf8mb3, utf8mb4	 validated and copied; invalid sequences become U+FFFD
 *					 (one per maximal invalid subpart, as Unicode recommends).
 *					 4-byte sequences are accepted in utf8mb3 too.
 * ascii, binary	 bytes 0x00-0x7F are copied, 0x80-0xFF become U+FFFD.
 * latin1			 MySQL's latin1 is Windows-1252 with the five bytes that
 *					 cp1252 leaves undefined (0x81 0x8D 0x8F 0x90 0x9D) mapped
 *					 to the C1 controls of the same value; table written here.
 * ucs2, utf16,		 decoded here (big-endian, except utf16le).  Unpaired
 * utf16le, utf32	 surrogates, values above U+10FFFF and a trailing partial
 *					 unit become U+FFFD.  (MySQL lets a lone surrogate through
 *					 ucs2 and produces invalid UTF-8; we do not.)
 * other single-byte a 256-entry table built on first use from glibc iconv,
 *					 then corrected where MySQL's mapping differs from glibc's
 *					 (see the bl_fix_* lists; checked byte by byte against
 *					 MariaDB 10.11).  keybcs2, which glibc lacks, is IBM437
 *					 with its own 0x80-0xAB.  Bytes MySQL leaves undefined but
 *					 glibc maps (a few in cp1256, greek, geostd8) keep glibc's
 *					 character; bytes neither maps become U+FFFD.
 * other multi-byte	 glibc iconv, one descriptor per charset, opened on first
 *					 use and kept.  An invalid sequence becomes U+FFFD and
 *					 conversion resumes at its next byte.  glibc names:
 *					 gbk GBK, gb2312 EUC-CN, gb18030 GB18030, big5 BIG5,
 *					 sjis SJIS, cp932 CP932, ujis EUC-JP, eucjpms EUC-JP-MS,
 *					 euckr CP949 (MySQL's euckr includes the CP949 extension).
 *					 ASCII runs bypass iconv (glibc's SJIS would turn 0x5C
 *					 into U+00A5), and the EUC-JP user-defined area is mapped
 *					 to the PUA here, as MySQL does.  Checked code by code
 *					 against MariaDB 10.11; remaining differences: sjis 0x815F
 *					 and ujis 0xA1C0 give U+FF3C where MySQL gives '\', ujis
 *					 0x8FA2B7 gives U+FF5E where MySQL gives '~', and about
 *					 270 rarely used big5 codes (ETEN extensions) differ.
 *
 * If glibc cannot open an encoding, that charset falls back to ASCII with
 * U+FFFD for every other byte.
 *
 * Caches (iconv descriptors, single-byte tables, one scratch buffer) live
 * in static storage without locks: see the thread-safety note in
 * bl_charset.h.
 */
#include "bl_charset.h"

#include <errno.h>
#include <iconv.h>
#include <stdlib.h>
/* SSE2 (x86-64) for JSON escaping; BL_NO_SIMD selects the portable word
 * loop (the unit tests build both). */
#if defined(__SSE2__) && defined(__x86_64__) && !defined(BL_NO_SIMD)
#define BL_JSON_SSE2 1
#include <emmintrin.h>
#endif

/* See bl_charset.h: PostgreSQL's jsonb cannot hold U+0000. */
bool		bl_json_nul_as_replacement = false;

#define BL_LENGTHOF(a)		(sizeof(a) / sizeof((a)[0]))

/* Input bytes converted per output reservation in the table-driven paths. */
#define BL_CHUNK			8192

/* Scratch memory above this size is released after use. */
#define BL_SCRATCH_KEEP		(1024 * 1024)

/* Charsets; the values index bl_charsets and the caches. */
typedef enum bl_cs_id
{
	BL_CS_NONE = 0,
	BL_CS_ARMSCII8,
	BL_CS_ASCII,
	BL_CS_BIG5,
	BL_CS_BINARY,
	BL_CS_CP1250,
	BL_CS_CP1251,
	BL_CS_CP1256,
	BL_CS_CP1257,
	BL_CS_CP850,
	BL_CS_CP852,
	BL_CS_CP866,
	BL_CS_CP932,
	BL_CS_DEC8,
	BL_CS_EUCJPMS,
	BL_CS_EUCKR,
	BL_CS_GB18030,
	BL_CS_GB2312,
	BL_CS_GBK,
	BL_CS_GEOSTD8,
	BL_CS_GREEK,
	BL_CS_HEBREW,
	BL_CS_HP8,
	BL_CS_KEYBCS2,
	BL_CS_KOI8R,
	BL_CS_KOI8U,
	BL_CS_LATIN1,
	BL_CS_LATIN2,
	BL_CS_LATIN5,
	BL_CS_LATIN7,
	BL_CS_MACCE,
	BL_CS_MACROMAN,
	BL_CS_SJIS,
	BL_CS_SWE7,
	BL_CS_TIS620,
	BL_CS_UCS2,
	BL_CS_UJIS,
	BL_CS_UTF16,
	BL_CS_UTF16LE,
	BL_CS_UTF32,
	BL_CS_UTF8MB3,
	BL_CS_UTF8MB4,
	BL_CS_COUNT
} bl_cs_id;

typedef enum bl_cs_kind
{
	BL_CSK_UTF8,				/* utf8mb3, utf8mb4 */
	BL_CSK_SBCS,				/* single byte, through a bl_sbcs table */
	BL_CSK_MBCS,				/* multi-byte, through glibc iconv */
	BL_CSK_UCS2,				/* UCS-2, big-endian */
	BL_CSK_UTF16,				/* UTF-16, big-endian */
	BL_CSK_UTF16LE,				/* UTF-16, little-endian */
	BL_CSK_UTF32				/* UTF-32, big-endian */
} bl_cs_kind;

/*
 * How a multi-byte charset's characters are delimited, so that runs of
 * ASCII can be copied without iconv (see bl_mb_char_len).
 */
typedef enum bl_mb_scheme
{
	BL_MB_NONE,
	BL_MB_DBCS,					/* 0x81-0xFE lead a 2-byte character */
	BL_MB_SJIS,					/* 0x81-0x9F, 0xE0-0xFC lead 2 bytes */
	BL_MB_EUCJP,				/* 0x8F leads 3 bytes, 0x8E, 0xA1-0xFE 2 */
	BL_MB_GB18030				/* like DBCS, or 4 bytes if 2nd is a digit */
} bl_mb_scheme;

/* Bytes first..last map to cp, cp + 1, ... (a correction to glibc). */
typedef struct bl_cs_fix
{
	uint8_t		first;
	uint8_t		last;
	uint16_t	cp;
} bl_cs_fix;

struct bl_charset
{
	uint8_t		id;				/* bl_cs_id */
	uint8_t		kind;			/* bl_cs_kind */
	uint8_t		max_bytes;		/* longest character */
	uint8_t		nfixes;
	uint8_t		scheme;			/* bl_mb_scheme, for BL_CSK_MBCS */
	const char *iconv_name;		/* glibc name (SBCS base table or MBCS) */
	const uint16_t *table;		/* complete SBCS table, instead of iconv */
	const bl_cs_fix *fixes;		/* corrections applied to the SBCS table */
};

/*
 * MySQL's latin1, byte -> Unicode: cp1252 with 0x81, 0x8D, 0x8F, 0x90 and
 * 0x9D mapped to the C1 controls U+0081, U+008D, U+008F, U+0090, U+009D.
 */
static const uint16_t bl_latin1_table[256] = {
	0x0000, 0x0001, 0x0002, 0x0003, 0x0004, 0x0005, 0x0006, 0x0007,
	0x0008, 0x0009, 0x000A, 0x000B, 0x000C, 0x000D, 0x000E, 0x000F,
	0x0010, 0x0011, 0x0012, 0x0013, 0x0014, 0x0015, 0x0016, 0x0017,
	0x0018, 0x0019, 0x001A, 0x001B, 0x001C, 0x001D, 0x001E, 0x001F,
	0x0020, 0x0021, 0x0022, 0x0023, 0x0024, 0x0025, 0x0026, 0x0027,
	0x0028, 0x0029, 0x002A, 0x002B, 0x002C, 0x002D, 0x002E, 0x002F,
	0x0030, 0x0031, 0x0032, 0x0033, 0x0034, 0x0035, 0x0036, 0x0037,
	0x0038, 0x0039, 0x003A, 0x003B, 0x003C, 0x003D, 0x003E, 0x003F,
	0x0040, 0x0041, 0x0042, 0x0043, 0x0044, 0x0045, 0x0046, 0x0047,
	0x0048, 0x0049, 0x004A, 0x004B, 0x004C, 0x004D, 0x004E, 0x004F,
	0x0050, 0x0051, 0x0052, 0x0053, 0x0054, 0x0055, 0x0056, 0x0057,
	0x0058, 0x0059, 0x005A, 0x005B, 0x005C, 0x005D, 0x005E, 0x005F,
	0x0060, 0x0061, 0x0062, 0x0063, 0x0064, 0x0065, 0x0066, 0x0067,
	0x0068, 0x0069, 0x006A, 0x006B, 0x006C, 0x006D, 0x006E, 0x006F,
	0x0070, 0x0071, 0x0072, 0x0073, 0x0074, 0x0075, 0x0076, 0x0077,
	0x0078, 0x0079, 0x007A, 0x007B, 0x007C, 0x007D, 0x007E, 0x007F,
	0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021,
	0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x008D, 0x017D, 0x008F,
	0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014,
	0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178,
	0x00A0, 0x00A1, 0x00A2, 0x00A3, 0x00A4, 0x00A5, 0x00A6, 0x00A7,
	0x00A8, 0x00A9, 0x00AA, 0x00AB, 0x00AC, 0x00AD, 0x00AE, 0x00AF,
	0x00B0, 0x00B1, 0x00B2, 0x00B3, 0x00B4, 0x00B5, 0x00B6, 0x00B7,
	0x00B8, 0x00B9, 0x00BA, 0x00BB, 0x00BC, 0x00BD, 0x00BE, 0x00BF,
	0x00C0, 0x00C1, 0x00C2, 0x00C3, 0x00C4, 0x00C5, 0x00C6, 0x00C7,
	0x00C8, 0x00C9, 0x00CA, 0x00CB, 0x00CC, 0x00CD, 0x00CE, 0x00CF,
	0x00D0, 0x00D1, 0x00D2, 0x00D3, 0x00D4, 0x00D5, 0x00D6, 0x00D7,
	0x00D8, 0x00D9, 0x00DA, 0x00DB, 0x00DC, 0x00DD, 0x00DE, 0x00DF,
	0x00E0, 0x00E1, 0x00E2, 0x00E3, 0x00E4, 0x00E5, 0x00E6, 0x00E7,
	0x00E8, 0x00E9, 0x00EA, 0x00EB, 0x00EC, 0x00ED, 0x00EE, 0x00EF,
	0x00F0, 0x00F1, 0x00F2, 0x00F3, 0x00F4, 0x00F5, 0x00F6, 0x00F7,
	0x00F8, 0x00F9, 0x00FA, 0x00FB, 0x00FC, 0x00FD, 0x00FE, 0x00FF
};

/*
 * Where MySQL's single-byte mapping differs from glibc's, MySQL wins:
 * these are the characters a MySQL client reading the column as utf8mb4
 * would see.
 */
static const bl_cs_fix bl_fix_armscii8[] = {
	{0xA1, 0xA1, 0x2741}, {0xA2, 0xA2, 0x00A7}, {0xAD, 0xAD, 0x055F},
	{0xFE, 0xFE, 0x2019}, {0xFF, 0xFF, 0x0027}
};
static const bl_cs_fix bl_fix_cp866[] = {
	{0xFC, 0xFC, 0x207F}, {0xFD, 0xFD, 0x00B2}
};
static const bl_cs_fix bl_fix_dec8[] = {
	{0xA0, 0xA0, 0x00A0}
};
static const bl_cs_fix bl_fix_geostd8[] = {
	{0x80, 0x80, 0x20AC}
};
static const bl_cs_fix bl_fix_greek[] = {
	{0xA1, 0xA1, 0x02BD}, {0xA2, 0xA2, 0x02BC}
};
static const bl_cs_fix bl_fix_hebrew[] = {
	{0xAF, 0xAF, 0x203E}
};
static const bl_cs_fix bl_fix_koi8u[] = {
	{0x95, 0x95, 0x2022}
};
static const bl_cs_fix bl_fix_macroman[] = {
	{0xC6, 0xC6, 0x2206}, {0xF0, 0xF0, 0xF8FF}
};
static const bl_cs_fix bl_fix_swe7[] = {
	{0x24, 0x24, 0x0024}
};
static const bl_cs_fix bl_fix_tis620[] = {
	{0x80, 0x9F, 0x0080}
};

/* keybcs2 (Kamenicky): IBM437 except for the Czech/Slovak letters. */
static const bl_cs_fix bl_fix_keybcs2[] = {
	{0x80, 0x80, 0x010C}, {0x81, 0x81, 0x00FC}, {0x82, 0x82, 0x00E9},
	{0x83, 0x83, 0x010F}, {0x84, 0x84, 0x00E4}, {0x85, 0x85, 0x010E},
	{0x86, 0x86, 0x0164}, {0x87, 0x87, 0x010D}, {0x88, 0x88, 0x011B},
	{0x89, 0x89, 0x011A}, {0x8A, 0x8A, 0x0139}, {0x8B, 0x8B, 0x00CD},
	{0x8C, 0x8C, 0x013E}, {0x8D, 0x8D, 0x013A}, {0x8E, 0x8E, 0x00C4},
	{0x8F, 0x8F, 0x00C1}, {0x90, 0x90, 0x00C9}, {0x91, 0x91, 0x017E},
	{0x92, 0x92, 0x017D}, {0x93, 0x93, 0x00F4}, {0x94, 0x94, 0x00F6},
	{0x95, 0x95, 0x00D3}, {0x96, 0x96, 0x016F}, {0x97, 0x97, 0x00DA},
	{0x98, 0x98, 0x00FD}, {0x99, 0x99, 0x00D6}, {0x9A, 0x9A, 0x00DC},
	{0x9B, 0x9B, 0x0160}, {0x9C, 0x9C, 0x013D}, {0x9D, 0x9D, 0x00DD},
	{0x9E, 0x9E, 0x0158}, {0x9F, 0x9F, 0x0165}, {0xA0, 0xA0, 0x00E1},
	{0xA1, 0xA1, 0x00ED}, {0xA2, 0xA2, 0x00F3}, {0xA3, 0xA3, 0x00FA},
	{0xA4, 0xA4, 0x0148}, {0xA5, 0xA5, 0x0147}, {0xA6, 0xA6, 0x016E},
	{0xA7, 0xA7, 0x00D4}, {0xA8, 0xA8, 0x0161}, {0xA9, 0xA9, 0x0159},
	{0xAA, 0xAA, 0x0155}, {0xAB, 0xAB, 0x0154}
};

#define BL_SB(cs, icv) \
	[BL_CS_##cs] = {BL_CS_##cs, BL_CSK_SBCS, 1, 0, BL_MB_NONE, icv, NULL, NULL}
#define BL_SBF(cs, icv, fix) \
	[BL_CS_##cs] = {BL_CS_##cs, BL_CSK_SBCS, 1, BL_LENGTHOF(fix), BL_MB_NONE, \
					icv, NULL, fix}
#define BL_MB(cs, maxb, scheme, icv) \
	[BL_CS_##cs] = {BL_CS_##cs, BL_CSK_MBCS, maxb, 0, scheme, icv, NULL, NULL}
#define BL_UNI(cs, kind, maxb) \
	[BL_CS_##cs] = {BL_CS_##cs, kind, maxb, 0, BL_MB_NONE, NULL, NULL, NULL}

/* Indexed by bl_cs_id; the names are in bl_charset_names. */
static const bl_charset bl_charsets[BL_CS_COUNT] = {
	BL_SBF(ARMSCII8, "ARMSCII-8", bl_fix_armscii8),
	BL_SB(ASCII, NULL),
	BL_MB(BIG5, 2, BL_MB_DBCS, "BIG5"),
	BL_SB(BINARY, NULL),
	BL_SB(CP1250, "CP1250"),
	BL_SB(CP1251, "CP1251"),
	BL_SB(CP1256, "CP1256"),
	BL_SB(CP1257, "CP1257"),
	BL_SB(CP850, "CP850"),
	BL_SB(CP852, "CP852"),
	BL_SBF(CP866, "CP866", bl_fix_cp866),
	BL_MB(CP932, 2, BL_MB_SJIS, "CP932"),
	BL_SBF(DEC8, "DEC-MCS", bl_fix_dec8),
	BL_MB(EUCJPMS, 3, BL_MB_EUCJP, "EUC-JP-MS"),
	BL_MB(EUCKR, 2, BL_MB_DBCS, "CP949"),
	BL_MB(GB18030, 4, BL_MB_GB18030, "GB18030"),
	BL_MB(GB2312, 2, BL_MB_DBCS, "EUC-CN"),
	BL_MB(GBK, 2, BL_MB_DBCS, "GBK"),
	BL_SBF(GEOSTD8, "GEORGIAN-PS", bl_fix_geostd8),
	BL_SBF(GREEK, "ISO-8859-7", bl_fix_greek),
	BL_SBF(HEBREW, "ISO-8859-8", bl_fix_hebrew),
	BL_SB(HP8, "HP-ROMAN8"),
	BL_SBF(KEYBCS2, "IBM437", bl_fix_keybcs2),
	BL_SB(KOI8R, "KOI8-R"),
	BL_SBF(KOI8U, "KOI8-U", bl_fix_koi8u),
	[BL_CS_LATIN1] = {BL_CS_LATIN1, BL_CSK_SBCS, 1, 0, BL_MB_NONE, NULL, bl_latin1_table, NULL},
	BL_SB(LATIN2, "ISO-8859-2"),
	BL_SB(LATIN5, "ISO-8859-9"),
	BL_SB(LATIN7, "ISO-8859-13"),
	BL_SB(MACCE, "MAC-CENTRALEUROPE"),
	BL_SBF(MACROMAN, "MACINTOSH", bl_fix_macroman),
	BL_MB(SJIS, 2, BL_MB_SJIS, "SJIS"),
	BL_SBF(SWE7, "ISO646-SE2", bl_fix_swe7),
	BL_SBF(TIS620, "TIS-620", bl_fix_tis620),
	BL_UNI(UCS2, BL_CSK_UCS2, 2),
	BL_MB(UJIS, 3, BL_MB_EUCJP, "EUC-JP"),
	BL_UNI(UTF16, BL_CSK_UTF16, 4),
	BL_UNI(UTF16LE, BL_CSK_UTF16LE, 4),
	BL_UNI(UTF32, BL_CSK_UTF32, 4),
	BL_UNI(UTF8MB3, BL_CSK_UTF8, 3),
	BL_UNI(UTF8MB4, BL_CSK_UTF8, 4)
};

/* Canonical MySQL names, indexed by bl_cs_id. */
static const char *const bl_charset_names[BL_CS_COUNT] = {
	[BL_CS_ARMSCII8] = "armscii8",
	[BL_CS_ASCII] = "ascii",
	[BL_CS_BIG5] = "big5",
	[BL_CS_BINARY] = "binary",
	[BL_CS_CP1250] = "cp1250",
	[BL_CS_CP1251] = "cp1251",
	[BL_CS_CP1256] = "cp1256",
	[BL_CS_CP1257] = "cp1257",
	[BL_CS_CP850] = "cp850",
	[BL_CS_CP852] = "cp852",
	[BL_CS_CP866] = "cp866",
	[BL_CS_CP932] = "cp932",
	[BL_CS_DEC8] = "dec8",
	[BL_CS_EUCJPMS] = "eucjpms",
	[BL_CS_EUCKR] = "euckr",
	[BL_CS_GB18030] = "gb18030",
	[BL_CS_GB2312] = "gb2312",
	[BL_CS_GBK] = "gbk",
	[BL_CS_GEOSTD8] = "geostd8",
	[BL_CS_GREEK] = "greek",
	[BL_CS_HEBREW] = "hebrew",
	[BL_CS_HP8] = "hp8",
	[BL_CS_KEYBCS2] = "keybcs2",
	[BL_CS_KOI8R] = "koi8r",
	[BL_CS_KOI8U] = "koi8u",
	[BL_CS_LATIN1] = "latin1",
	[BL_CS_LATIN2] = "latin2",
	[BL_CS_LATIN5] = "latin5",
	[BL_CS_LATIN7] = "latin7",
	[BL_CS_MACCE] = "macce",
	[BL_CS_MACROMAN] = "macroman",
	[BL_CS_SJIS] = "sjis",
	[BL_CS_SWE7] = "swe7",
	[BL_CS_TIS620] = "tis620",
	[BL_CS_UCS2] = "ucs2",
	[BL_CS_UJIS] = "ujis",
	[BL_CS_UTF16] = "utf16",
	[BL_CS_UTF16LE] = "utf16le",
	[BL_CS_UTF32] = "utf32",
	[BL_CS_UTF8MB3] = "utf8mb3",
	[BL_CS_UTF8MB4] = "utf8mb4"
};

/*
 * Collation ids.  Below 2048 a table: MySQL 5.5-9.x and MariaDB 10.x-11.x
 * agree on every id they share (1-247), MySQL alone has 76 and 248-323
 * (gb18030 and the utf8mb4 UCA 9.0.0 collations, which MariaDB 11.4+
 * reuses as aliases), MariaDB alone has 576-1270 (extra UCA collations and
 * the NO PAD variants).
 *
 * MariaDB 10.10+ numbers its UCA 14.0 collations from 2048 by rule rather
 * than by list: id = 2048 + (charset << 8) + (tailoring << 3) + flags, with
 * charset 0 utf8mb3, 1 utf8mb4, 2 ucs2, 3 utf16, 4 utf32, tailoring the
 * language (0 = root) and the three flag bits NO PAD, accent- and
 * case-sensitivity.  So the charset is found from the id alone, including
 * tailorings newer than this table.
 */
#define BL_UCA1400_FIRST	2048

/* BEGIN GENERATED COLLATION TABLE (scripts/gen_charset_table.py) */
#define BL_COLLATION_TABLE_SIZE 1271

/* Collation id -> charset, ids below 2048 (MySQL / MariaDB names). */
static const uint8_t bl_collation_charset[BL_COLLATION_TABLE_SIZE] = {
	[1] = BL_CS_BIG5,	/* big5_chinese_ci */
	[2] = BL_CS_LATIN2,	/* latin2_czech_cs */
	[3] = BL_CS_DEC8,	/* dec8_swedish_ci */
	[4] = BL_CS_CP850,	/* cp850_general_ci */
	[5] = BL_CS_LATIN1,	/* latin1_german1_ci */
	[6] = BL_CS_HP8,	/* hp8_english_ci */
	[7] = BL_CS_KOI8R,	/* koi8r_general_ci */
	[8] = BL_CS_LATIN1,	/* latin1_swedish_ci */
	[9] = BL_CS_LATIN2,	/* latin2_general_ci */
	[10] = BL_CS_SWE7,	/* swe7_swedish_ci */
	[11] = BL_CS_ASCII,	/* ascii_general_ci */
	[12] = BL_CS_UJIS,	/* ujis_japanese_ci */
	[13] = BL_CS_SJIS,	/* sjis_japanese_ci */
	[14] = BL_CS_CP1251,	/* cp1251_bulgarian_ci */
	[15] = BL_CS_LATIN1,	/* latin1_danish_ci */
	[16] = BL_CS_HEBREW,	/* hebrew_general_ci */
	[18] = BL_CS_TIS620,	/* tis620_thai_ci */
	[19] = BL_CS_EUCKR,	/* euckr_korean_ci */
	[20] = BL_CS_LATIN7,	/* latin7_estonian_cs */
	[21] = BL_CS_LATIN2,	/* latin2_hungarian_ci */
	[22] = BL_CS_KOI8U,	/* koi8u_general_ci */
	[23] = BL_CS_CP1251,	/* cp1251_ukrainian_ci */
	[24] = BL_CS_GB2312,	/* gb2312_chinese_ci */
	[25] = BL_CS_GREEK,	/* greek_general_ci */
	[26] = BL_CS_CP1250,	/* cp1250_general_ci */
	[27] = BL_CS_LATIN2,	/* latin2_croatian_ci */
	[28] = BL_CS_GBK,	/* gbk_chinese_ci */
	[29] = BL_CS_CP1257,	/* cp1257_lithuanian_ci */
	[30] = BL_CS_LATIN5,	/* latin5_turkish_ci */
	[31] = BL_CS_LATIN1,	/* latin1_german2_ci */
	[32] = BL_CS_ARMSCII8,	/* armscii8_general_ci */
	[33] = BL_CS_UTF8MB3,	/* utf8mb3_general_ci */
	[34] = BL_CS_CP1250,	/* cp1250_czech_cs */
	[35] = BL_CS_UCS2,	/* ucs2_general_ci */
	[36] = BL_CS_CP866,	/* cp866_general_ci */
	[37] = BL_CS_KEYBCS2,	/* keybcs2_general_ci */
	[38] = BL_CS_MACCE,	/* macce_general_ci */
	[39] = BL_CS_MACROMAN,	/* macroman_general_ci */
	[40] = BL_CS_CP852,	/* cp852_general_ci */
	[41] = BL_CS_LATIN7,	/* latin7_general_ci */
	[42] = BL_CS_LATIN7,	/* latin7_general_cs */
	[43] = BL_CS_MACCE,	/* macce_bin */
	[44] = BL_CS_CP1250,	/* cp1250_croatian_ci */
	[45] = BL_CS_UTF8MB4,	/* utf8mb4_general_ci */
	[46] = BL_CS_UTF8MB4,	/* utf8mb4_bin */
	[47] = BL_CS_LATIN1,	/* latin1_bin */
	[48] = BL_CS_LATIN1,	/* latin1_general_ci */
	[49] = BL_CS_LATIN1,	/* latin1_general_cs */
	[50] = BL_CS_CP1251,	/* cp1251_bin */
	[51] = BL_CS_CP1251,	/* cp1251_general_ci */
	[52] = BL_CS_CP1251,	/* cp1251_general_cs */
	[53] = BL_CS_MACROMAN,	/* macroman_bin */
	[54] = BL_CS_UTF16,	/* utf16_general_ci */
	[55] = BL_CS_UTF16,	/* utf16_bin */
	[56] = BL_CS_UTF16LE,	/* utf16le_general_ci */
	[57] = BL_CS_CP1256,	/* cp1256_general_ci */
	[58] = BL_CS_CP1257,	/* cp1257_bin */
	[59] = BL_CS_CP1257,	/* cp1257_general_ci */
	[60] = BL_CS_UTF32,	/* utf32_general_ci */
	[61] = BL_CS_UTF32,	/* utf32_bin */
	[62] = BL_CS_UTF16LE,	/* utf16le_bin */
	[63] = BL_CS_BINARY,	/* binary */
	[64] = BL_CS_ARMSCII8,	/* armscii8_bin */
	[65] = BL_CS_ASCII,	/* ascii_bin */
	[66] = BL_CS_CP1250,	/* cp1250_bin */
	[67] = BL_CS_CP1256,	/* cp1256_bin */
	[68] = BL_CS_CP866,	/* cp866_bin */
	[69] = BL_CS_DEC8,	/* dec8_bin */
	[70] = BL_CS_GREEK,	/* greek_bin */
	[71] = BL_CS_HEBREW,	/* hebrew_bin */
	[72] = BL_CS_HP8,	/* hp8_bin */
	[73] = BL_CS_KEYBCS2,	/* keybcs2_bin */
	[74] = BL_CS_KOI8R,	/* koi8r_bin */
	[75] = BL_CS_KOI8U,	/* koi8u_bin */
	[76] = BL_CS_UTF8MB3,	/* utf8mb3_tolower_ci */
	[77] = BL_CS_LATIN2,	/* latin2_bin */
	[78] = BL_CS_LATIN5,	/* latin5_bin */
	[79] = BL_CS_LATIN7,	/* latin7_bin */
	[80] = BL_CS_CP850,	/* cp850_bin */
	[81] = BL_CS_CP852,	/* cp852_bin */
	[82] = BL_CS_SWE7,	/* swe7_bin */
	[83] = BL_CS_UTF8MB3,	/* utf8mb3_bin */
	[84] = BL_CS_BIG5,	/* big5_bin */
	[85] = BL_CS_EUCKR,	/* euckr_bin */
	[86] = BL_CS_GB2312,	/* gb2312_bin */
	[87] = BL_CS_GBK,	/* gbk_bin */
	[88] = BL_CS_SJIS,	/* sjis_bin */
	[89] = BL_CS_TIS620,	/* tis620_bin */
	[90] = BL_CS_UCS2,	/* ucs2_bin */
	[91] = BL_CS_UJIS,	/* ujis_bin */
	[92] = BL_CS_GEOSTD8,	/* geostd8_general_ci */
	[93] = BL_CS_GEOSTD8,	/* geostd8_bin */
	[94] = BL_CS_LATIN1,	/* latin1_spanish_ci */
	[95] = BL_CS_CP932,	/* cp932_japanese_ci */
	[96] = BL_CS_CP932,	/* cp932_bin */
	[97] = BL_CS_EUCJPMS,	/* eucjpms_japanese_ci */
	[98] = BL_CS_EUCJPMS,	/* eucjpms_bin */
	[99] = BL_CS_CP1250,	/* cp1250_polish_ci */
	[101] = BL_CS_UTF16,	/* utf16_unicode_ci */
	[102] = BL_CS_UTF16,	/* utf16_icelandic_ci */
	[103] = BL_CS_UTF16,	/* utf16_latvian_ci */
	[104] = BL_CS_UTF16,	/* utf16_romanian_ci */
	[105] = BL_CS_UTF16,	/* utf16_slovenian_ci */
	[106] = BL_CS_UTF16,	/* utf16_polish_ci */
	[107] = BL_CS_UTF16,	/* utf16_estonian_ci */
	[108] = BL_CS_UTF16,	/* utf16_spanish_ci */
	[109] = BL_CS_UTF16,	/* utf16_swedish_ci */
	[110] = BL_CS_UTF16,	/* utf16_turkish_ci */
	[111] = BL_CS_UTF16,	/* utf16_czech_ci */
	[112] = BL_CS_UTF16,	/* utf16_danish_ci */
	[113] = BL_CS_UTF16,	/* utf16_lithuanian_ci */
	[114] = BL_CS_UTF16,	/* utf16_slovak_ci */
	[115] = BL_CS_UTF16,	/* utf16_spanish2_ci */
	[116] = BL_CS_UTF16,	/* utf16_roman_ci */
	[117] = BL_CS_UTF16,	/* utf16_persian_ci */
	[118] = BL_CS_UTF16,	/* utf16_esperanto_ci */
	[119] = BL_CS_UTF16,	/* utf16_hungarian_ci */
	[120] = BL_CS_UTF16,	/* utf16_sinhala_ci */
	[121] = BL_CS_UTF16,	/* utf16_german2_ci */
	[122] = BL_CS_UTF16,	/* utf16_croatian_ci / utf16_croatian_mysql561_ci */
	[123] = BL_CS_UTF16,	/* utf16_unicode_520_ci */
	[124] = BL_CS_UTF16,	/* utf16_vietnamese_ci */
	[128] = BL_CS_UCS2,	/* ucs2_unicode_ci */
	[129] = BL_CS_UCS2,	/* ucs2_icelandic_ci */
	[130] = BL_CS_UCS2,	/* ucs2_latvian_ci */
	[131] = BL_CS_UCS2,	/* ucs2_romanian_ci */
	[132] = BL_CS_UCS2,	/* ucs2_slovenian_ci */
	[133] = BL_CS_UCS2,	/* ucs2_polish_ci */
	[134] = BL_CS_UCS2,	/* ucs2_estonian_ci */
	[135] = BL_CS_UCS2,	/* ucs2_spanish_ci */
	[136] = BL_CS_UCS2,	/* ucs2_swedish_ci */
	[137] = BL_CS_UCS2,	/* ucs2_turkish_ci */
	[138] = BL_CS_UCS2,	/* ucs2_czech_ci */
	[139] = BL_CS_UCS2,	/* ucs2_danish_ci */
	[140] = BL_CS_UCS2,	/* ucs2_lithuanian_ci */
	[141] = BL_CS_UCS2,	/* ucs2_slovak_ci */
	[142] = BL_CS_UCS2,	/* ucs2_spanish2_ci */
	[143] = BL_CS_UCS2,	/* ucs2_roman_ci */
	[144] = BL_CS_UCS2,	/* ucs2_persian_ci */
	[145] = BL_CS_UCS2,	/* ucs2_esperanto_ci */
	[146] = BL_CS_UCS2,	/* ucs2_hungarian_ci */
	[147] = BL_CS_UCS2,	/* ucs2_sinhala_ci */
	[148] = BL_CS_UCS2,	/* ucs2_german2_ci */
	[149] = BL_CS_UCS2,	/* ucs2_croatian_ci / ucs2_croatian_mysql561_ci */
	[150] = BL_CS_UCS2,	/* ucs2_unicode_520_ci */
	[151] = BL_CS_UCS2,	/* ucs2_vietnamese_ci */
	[159] = BL_CS_UCS2,	/* ucs2_general_mysql500_ci */
	[160] = BL_CS_UTF32,	/* utf32_unicode_ci */
	[161] = BL_CS_UTF32,	/* utf32_icelandic_ci */
	[162] = BL_CS_UTF32,	/* utf32_latvian_ci */
	[163] = BL_CS_UTF32,	/* utf32_romanian_ci */
	[164] = BL_CS_UTF32,	/* utf32_slovenian_ci */
	[165] = BL_CS_UTF32,	/* utf32_polish_ci */
	[166] = BL_CS_UTF32,	/* utf32_estonian_ci */
	[167] = BL_CS_UTF32,	/* utf32_spanish_ci */
	[168] = BL_CS_UTF32,	/* utf32_swedish_ci */
	[169] = BL_CS_UTF32,	/* utf32_turkish_ci */
	[170] = BL_CS_UTF32,	/* utf32_czech_ci */
	[171] = BL_CS_UTF32,	/* utf32_danish_ci */
	[172] = BL_CS_UTF32,	/* utf32_lithuanian_ci */
	[173] = BL_CS_UTF32,	/* utf32_slovak_ci */
	[174] = BL_CS_UTF32,	/* utf32_spanish2_ci */
	[175] = BL_CS_UTF32,	/* utf32_roman_ci */
	[176] = BL_CS_UTF32,	/* utf32_persian_ci */
	[177] = BL_CS_UTF32,	/* utf32_esperanto_ci */
	[178] = BL_CS_UTF32,	/* utf32_hungarian_ci */
	[179] = BL_CS_UTF32,	/* utf32_sinhala_ci */
	[180] = BL_CS_UTF32,	/* utf32_german2_ci */
	[181] = BL_CS_UTF32,	/* utf32_croatian_ci / utf32_croatian_mysql561_ci */
	[182] = BL_CS_UTF32,	/* utf32_unicode_520_ci */
	[183] = BL_CS_UTF32,	/* utf32_vietnamese_ci */
	[192] = BL_CS_UTF8MB3,	/* utf8mb3_unicode_ci */
	[193] = BL_CS_UTF8MB3,	/* utf8mb3_icelandic_ci */
	[194] = BL_CS_UTF8MB3,	/* utf8mb3_latvian_ci */
	[195] = BL_CS_UTF8MB3,	/* utf8mb3_romanian_ci */
	[196] = BL_CS_UTF8MB3,	/* utf8mb3_slovenian_ci */
	[197] = BL_CS_UTF8MB3,	/* utf8mb3_polish_ci */
	[198] = BL_CS_UTF8MB3,	/* utf8mb3_estonian_ci */
	[199] = BL_CS_UTF8MB3,	/* utf8mb3_spanish_ci */
	[200] = BL_CS_UTF8MB3,	/* utf8mb3_swedish_ci */
	[201] = BL_CS_UTF8MB3,	/* utf8mb3_turkish_ci */
	[202] = BL_CS_UTF8MB3,	/* utf8mb3_czech_ci */
	[203] = BL_CS_UTF8MB3,	/* utf8mb3_danish_ci */
	[204] = BL_CS_UTF8MB3,	/* utf8mb3_lithuanian_ci */
	[205] = BL_CS_UTF8MB3,	/* utf8mb3_slovak_ci */
	[206] = BL_CS_UTF8MB3,	/* utf8mb3_spanish2_ci */
	[207] = BL_CS_UTF8MB3,	/* utf8mb3_roman_ci */
	[208] = BL_CS_UTF8MB3,	/* utf8mb3_persian_ci */
	[209] = BL_CS_UTF8MB3,	/* utf8mb3_esperanto_ci */
	[210] = BL_CS_UTF8MB3,	/* utf8mb3_hungarian_ci */
	[211] = BL_CS_UTF8MB3,	/* utf8mb3_sinhala_ci */
	[212] = BL_CS_UTF8MB3,	/* utf8mb3_german2_ci */
	[213] = BL_CS_UTF8MB3,	/* utf8mb3_croatian_ci / utf8mb3_croatian_mysql561_ci */
	[214] = BL_CS_UTF8MB3,	/* utf8mb3_unicode_520_ci */
	[215] = BL_CS_UTF8MB3,	/* utf8mb3_vietnamese_ci */
	[223] = BL_CS_UTF8MB3,	/* utf8mb3_general_mysql500_ci */
	[224] = BL_CS_UTF8MB4,	/* utf8mb4_unicode_ci */
	[225] = BL_CS_UTF8MB4,	/* utf8mb4_icelandic_ci */
	[226] = BL_CS_UTF8MB4,	/* utf8mb4_latvian_ci */
	[227] = BL_CS_UTF8MB4,	/* utf8mb4_romanian_ci */
	[228] = BL_CS_UTF8MB4,	/* utf8mb4_slovenian_ci */
	[229] = BL_CS_UTF8MB4,	/* utf8mb4_polish_ci */
	[230] = BL_CS_UTF8MB4,	/* utf8mb4_estonian_ci */
	[231] = BL_CS_UTF8MB4,	/* utf8mb4_spanish_ci */
	[232] = BL_CS_UTF8MB4,	/* utf8mb4_swedish_ci */
	[233] = BL_CS_UTF8MB4,	/* utf8mb4_turkish_ci */
	[234] = BL_CS_UTF8MB4,	/* utf8mb4_czech_ci */
	[235] = BL_CS_UTF8MB4,	/* utf8mb4_danish_ci */
	[236] = BL_CS_UTF8MB4,	/* utf8mb4_lithuanian_ci */
	[237] = BL_CS_UTF8MB4,	/* utf8mb4_slovak_ci */
	[238] = BL_CS_UTF8MB4,	/* utf8mb4_spanish2_ci */
	[239] = BL_CS_UTF8MB4,	/* utf8mb4_roman_ci */
	[240] = BL_CS_UTF8MB4,	/* utf8mb4_persian_ci */
	[241] = BL_CS_UTF8MB4,	/* utf8mb4_esperanto_ci */
	[242] = BL_CS_UTF8MB4,	/* utf8mb4_hungarian_ci */
	[243] = BL_CS_UTF8MB4,	/* utf8mb4_sinhala_ci */
	[244] = BL_CS_UTF8MB4,	/* utf8mb4_german2_ci */
	[245] = BL_CS_UTF8MB4,	/* utf8mb4_croatian_ci / utf8mb4_croatian_mysql561_ci */
	[246] = BL_CS_UTF8MB4,	/* utf8mb4_unicode_520_ci */
	[247] = BL_CS_UTF8MB4,	/* utf8mb4_vietnamese_ci */
	[248] = BL_CS_GB18030,	/* gb18030_chinese_ci */
	[249] = BL_CS_GB18030,	/* gb18030_bin */
	[250] = BL_CS_GB18030,	/* gb18030_unicode_520_ci */
	[255] = BL_CS_UTF8MB4,	/* utf8mb4_0900_ai_ci */
	[256] = BL_CS_UTF8MB4,	/* utf8mb4_de_pb_0900_ai_ci */
	[257] = BL_CS_UTF8MB4,	/* utf8mb4_is_0900_ai_ci */
	[258] = BL_CS_UTF8MB4,	/* utf8mb4_lv_0900_ai_ci */
	[259] = BL_CS_UTF8MB4,	/* utf8mb4_ro_0900_ai_ci */
	[260] = BL_CS_UTF8MB4,	/* utf8mb4_sl_0900_ai_ci */
	[261] = BL_CS_UTF8MB4,	/* utf8mb4_pl_0900_ai_ci */
	[262] = BL_CS_UTF8MB4,	/* utf8mb4_et_0900_ai_ci */
	[263] = BL_CS_UTF8MB4,	/* utf8mb4_es_0900_ai_ci */
	[264] = BL_CS_UTF8MB4,	/* utf8mb4_sv_0900_ai_ci */
	[265] = BL_CS_UTF8MB4,	/* utf8mb4_tr_0900_ai_ci */
	[266] = BL_CS_UTF8MB4,	/* utf8mb4_cs_0900_ai_ci */
	[267] = BL_CS_UTF8MB4,	/* utf8mb4_da_0900_ai_ci */
	[268] = BL_CS_UTF8MB4,	/* utf8mb4_lt_0900_ai_ci */
	[269] = BL_CS_UTF8MB4,	/* utf8mb4_sk_0900_ai_ci */
	[270] = BL_CS_UTF8MB4,	/* utf8mb4_es_trad_0900_ai_ci */
	[271] = BL_CS_UTF8MB4,	/* utf8mb4_la_0900_ai_ci */
	[273] = BL_CS_UTF8MB4,	/* utf8mb4_eo_0900_ai_ci */
	[274] = BL_CS_UTF8MB4,	/* utf8mb4_hu_0900_ai_ci */
	[275] = BL_CS_UTF8MB4,	/* utf8mb4_hr_0900_ai_ci */
	[277] = BL_CS_UTF8MB4,	/* utf8mb4_vi_0900_ai_ci */
	[278] = BL_CS_UTF8MB4,	/* utf8mb4_0900_as_cs */
	[279] = BL_CS_UTF8MB4,	/* utf8mb4_de_pb_0900_as_cs */
	[280] = BL_CS_UTF8MB4,	/* utf8mb4_is_0900_as_cs */
	[281] = BL_CS_UTF8MB4,	/* utf8mb4_lv_0900_as_cs */
	[282] = BL_CS_UTF8MB4,	/* utf8mb4_ro_0900_as_cs */
	[283] = BL_CS_UTF8MB4,	/* utf8mb4_sl_0900_as_cs */
	[284] = BL_CS_UTF8MB4,	/* utf8mb4_pl_0900_as_cs */
	[285] = BL_CS_UTF8MB4,	/* utf8mb4_et_0900_as_cs */
	[286] = BL_CS_UTF8MB4,	/* utf8mb4_es_0900_as_cs */
	[287] = BL_CS_UTF8MB4,	/* utf8mb4_sv_0900_as_cs */
	[288] = BL_CS_UTF8MB4,	/* utf8mb4_tr_0900_as_cs */
	[289] = BL_CS_UTF8MB4,	/* utf8mb4_cs_0900_as_cs */
	[290] = BL_CS_UTF8MB4,	/* utf8mb4_da_0900_as_cs */
	[291] = BL_CS_UTF8MB4,	/* utf8mb4_lt_0900_as_cs */
	[292] = BL_CS_UTF8MB4,	/* utf8mb4_sk_0900_as_cs */
	[293] = BL_CS_UTF8MB4,	/* utf8mb4_es_trad_0900_as_cs */
	[294] = BL_CS_UTF8MB4,	/* utf8mb4_la_0900_as_cs */
	[296] = BL_CS_UTF8MB4,	/* utf8mb4_eo_0900_as_cs */
	[297] = BL_CS_UTF8MB4,	/* utf8mb4_hu_0900_as_cs */
	[298] = BL_CS_UTF8MB4,	/* utf8mb4_hr_0900_as_cs */
	[300] = BL_CS_UTF8MB4,	/* utf8mb4_vi_0900_as_cs */
	[303] = BL_CS_UTF8MB4,	/* utf8mb4_ja_0900_as_cs */
	[304] = BL_CS_UTF8MB4,	/* utf8mb4_ja_0900_as_cs_ks */
	[305] = BL_CS_UTF8MB4,	/* utf8mb4_0900_as_ci */
	[306] = BL_CS_UTF8MB4,	/* utf8mb4_ru_0900_ai_ci */
	[307] = BL_CS_UTF8MB4,	/* utf8mb4_ru_0900_as_cs */
	[308] = BL_CS_UTF8MB4,	/* utf8mb4_zh_0900_as_cs */
	[309] = BL_CS_UTF8MB4,	/* utf8mb4_0900_bin */
	[310] = BL_CS_UTF8MB4,	/* utf8mb4_nb_0900_ai_ci */
	[311] = BL_CS_UTF8MB4,	/* utf8mb4_nb_0900_as_cs */
	[312] = BL_CS_UTF8MB4,	/* utf8mb4_nn_0900_ai_ci */
	[313] = BL_CS_UTF8MB4,	/* utf8mb4_nn_0900_as_cs */
	[314] = BL_CS_UTF8MB4,	/* utf8mb4_sr_latn_0900_ai_ci */
	[315] = BL_CS_UTF8MB4,	/* utf8mb4_sr_latn_0900_as_cs */
	[316] = BL_CS_UTF8MB4,	/* utf8mb4_bs_0900_ai_ci */
	[317] = BL_CS_UTF8MB4,	/* utf8mb4_bs_0900_as_cs */
	[318] = BL_CS_UTF8MB4,	/* utf8mb4_bg_0900_ai_ci */
	[319] = BL_CS_UTF8MB4,	/* utf8mb4_bg_0900_as_cs */
	[320] = BL_CS_UTF8MB4,	/* utf8mb4_gl_0900_ai_ci */
	[321] = BL_CS_UTF8MB4,	/* utf8mb4_gl_0900_as_cs */
	[322] = BL_CS_UTF8MB4,	/* utf8mb4_mn_cyrl_0900_ai_ci */
	[323] = BL_CS_UTF8MB4,	/* utf8mb4_mn_cyrl_0900_as_cs */
	[576] = BL_CS_UTF8MB3,	/* utf8mb3_croatian_ci */
	[577] = BL_CS_UTF8MB3,	/* utf8mb3_myanmar_ci */
	[578] = BL_CS_UTF8MB3,	/* utf8mb3_thai_520_w2 */
	[608] = BL_CS_UTF8MB4,	/* utf8mb4_croatian_ci */
	[609] = BL_CS_UTF8MB4,	/* utf8mb4_myanmar_ci */
	[610] = BL_CS_UTF8MB4,	/* utf8mb4_thai_520_w2 */
	[640] = BL_CS_UCS2,	/* ucs2_croatian_ci */
	[641] = BL_CS_UCS2,	/* ucs2_myanmar_ci */
	[642] = BL_CS_UCS2,	/* ucs2_thai_520_w2 */
	[672] = BL_CS_UTF16,	/* utf16_croatian_ci */
	[673] = BL_CS_UTF16,	/* utf16_myanmar_ci */
	[674] = BL_CS_UTF16,	/* utf16_thai_520_w2 */
	[736] = BL_CS_UTF32,	/* utf32_croatian_ci */
	[737] = BL_CS_UTF32,	/* utf32_myanmar_ci */
	[738] = BL_CS_UTF32,	/* utf32_thai_520_w2 */
	[1025] = BL_CS_BIG5,	/* big5_chinese_nopad_ci */
	[1027] = BL_CS_DEC8,	/* dec8_swedish_nopad_ci */
	[1028] = BL_CS_CP850,	/* cp850_general_nopad_ci */
	[1030] = BL_CS_HP8,	/* hp8_english_nopad_ci */
	[1031] = BL_CS_KOI8R,	/* koi8r_general_nopad_ci */
	[1032] = BL_CS_LATIN1,	/* latin1_swedish_nopad_ci */
	[1033] = BL_CS_LATIN2,	/* latin2_general_nopad_ci */
	[1034] = BL_CS_SWE7,	/* swe7_swedish_nopad_ci */
	[1035] = BL_CS_ASCII,	/* ascii_general_nopad_ci */
	[1036] = BL_CS_UJIS,	/* ujis_japanese_nopad_ci */
	[1037] = BL_CS_SJIS,	/* sjis_japanese_nopad_ci */
	[1040] = BL_CS_HEBREW,	/* hebrew_general_nopad_ci */
	[1042] = BL_CS_TIS620,	/* tis620_thai_nopad_ci */
	[1043] = BL_CS_EUCKR,	/* euckr_korean_nopad_ci */
	[1046] = BL_CS_KOI8U,	/* koi8u_general_nopad_ci */
	[1048] = BL_CS_GB2312,	/* gb2312_chinese_nopad_ci */
	[1049] = BL_CS_GREEK,	/* greek_general_nopad_ci */
	[1050] = BL_CS_CP1250,	/* cp1250_general_nopad_ci */
	[1052] = BL_CS_GBK,	/* gbk_chinese_nopad_ci */
	[1054] = BL_CS_LATIN5,	/* latin5_turkish_nopad_ci */
	[1056] = BL_CS_ARMSCII8,	/* armscii8_general_nopad_ci */
	[1057] = BL_CS_UTF8MB3,	/* utf8mb3_general_nopad_ci */
	[1059] = BL_CS_UCS2,	/* ucs2_general_nopad_ci */
	[1060] = BL_CS_CP866,	/* cp866_general_nopad_ci */
	[1061] = BL_CS_KEYBCS2,	/* keybcs2_general_nopad_ci */
	[1062] = BL_CS_MACCE,	/* macce_general_nopad_ci */
	[1063] = BL_CS_MACROMAN,	/* macroman_general_nopad_ci */
	[1064] = BL_CS_CP852,	/* cp852_general_nopad_ci */
	[1065] = BL_CS_LATIN7,	/* latin7_general_nopad_ci */
	[1067] = BL_CS_MACCE,	/* macce_nopad_bin */
	[1069] = BL_CS_UTF8MB4,	/* utf8mb4_general_nopad_ci */
	[1070] = BL_CS_UTF8MB4,	/* utf8mb4_nopad_bin */
	[1071] = BL_CS_LATIN1,	/* latin1_nopad_bin */
	[1074] = BL_CS_CP1251,	/* cp1251_nopad_bin */
	[1075] = BL_CS_CP1251,	/* cp1251_general_nopad_ci */
	[1077] = BL_CS_MACROMAN,	/* macroman_nopad_bin */
	[1078] = BL_CS_UTF16,	/* utf16_general_nopad_ci */
	[1079] = BL_CS_UTF16,	/* utf16_nopad_bin */
	[1080] = BL_CS_UTF16LE,	/* utf16le_general_nopad_ci */
	[1081] = BL_CS_CP1256,	/* cp1256_general_nopad_ci */
	[1082] = BL_CS_CP1257,	/* cp1257_nopad_bin */
	[1083] = BL_CS_CP1257,	/* cp1257_general_nopad_ci */
	[1084] = BL_CS_UTF32,	/* utf32_general_nopad_ci */
	[1085] = BL_CS_UTF32,	/* utf32_nopad_bin */
	[1086] = BL_CS_UTF16LE,	/* utf16le_nopad_bin */
	[1088] = BL_CS_ARMSCII8,	/* armscii8_nopad_bin */
	[1089] = BL_CS_ASCII,	/* ascii_nopad_bin */
	[1090] = BL_CS_CP1250,	/* cp1250_nopad_bin */
	[1091] = BL_CS_CP1256,	/* cp1256_nopad_bin */
	[1092] = BL_CS_CP866,	/* cp866_nopad_bin */
	[1093] = BL_CS_DEC8,	/* dec8_nopad_bin */
	[1094] = BL_CS_GREEK,	/* greek_nopad_bin */
	[1095] = BL_CS_HEBREW,	/* hebrew_nopad_bin */
	[1096] = BL_CS_HP8,	/* hp8_nopad_bin */
	[1097] = BL_CS_KEYBCS2,	/* keybcs2_nopad_bin */
	[1098] = BL_CS_KOI8R,	/* koi8r_nopad_bin */
	[1099] = BL_CS_KOI8U,	/* koi8u_nopad_bin */
	[1101] = BL_CS_LATIN2,	/* latin2_nopad_bin */
	[1102] = BL_CS_LATIN5,	/* latin5_nopad_bin */
	[1103] = BL_CS_LATIN7,	/* latin7_nopad_bin */
	[1104] = BL_CS_CP850,	/* cp850_nopad_bin */
	[1105] = BL_CS_CP852,	/* cp852_nopad_bin */
	[1106] = BL_CS_SWE7,	/* swe7_nopad_bin */
	[1107] = BL_CS_UTF8MB3,	/* utf8mb3_nopad_bin */
	[1108] = BL_CS_BIG5,	/* big5_nopad_bin */
	[1109] = BL_CS_EUCKR,	/* euckr_nopad_bin */
	[1110] = BL_CS_GB2312,	/* gb2312_nopad_bin */
	[1111] = BL_CS_GBK,	/* gbk_nopad_bin */
	[1112] = BL_CS_SJIS,	/* sjis_nopad_bin */
	[1113] = BL_CS_TIS620,	/* tis620_nopad_bin */
	[1114] = BL_CS_UCS2,	/* ucs2_nopad_bin */
	[1115] = BL_CS_UJIS,	/* ujis_nopad_bin */
	[1116] = BL_CS_GEOSTD8,	/* geostd8_general_nopad_ci */
	[1117] = BL_CS_GEOSTD8,	/* geostd8_nopad_bin */
	[1119] = BL_CS_CP932,	/* cp932_japanese_nopad_ci */
	[1120] = BL_CS_CP932,	/* cp932_nopad_bin */
	[1121] = BL_CS_EUCJPMS,	/* eucjpms_japanese_nopad_ci */
	[1122] = BL_CS_EUCJPMS,	/* eucjpms_nopad_bin */
	[1125] = BL_CS_UTF16,	/* utf16_unicode_nopad_ci */
	[1147] = BL_CS_UTF16,	/* utf16_unicode_520_nopad_ci */
	[1152] = BL_CS_UCS2,	/* ucs2_unicode_nopad_ci */
	[1174] = BL_CS_UCS2,	/* ucs2_unicode_520_nopad_ci */
	[1184] = BL_CS_UTF32,	/* utf32_unicode_nopad_ci */
	[1206] = BL_CS_UTF32,	/* utf32_unicode_520_nopad_ci */
	[1216] = BL_CS_UTF8MB3,	/* utf8mb3_unicode_nopad_ci */
	[1238] = BL_CS_UTF8MB3,	/* utf8mb3_unicode_520_nopad_ci */
	[1248] = BL_CS_UTF8MB4,	/* utf8mb4_unicode_nopad_ci */
	[1270] = BL_CS_UTF8MB4,	/* utf8mb4_unicode_520_nopad_ci */
};

/* MariaDB UCA 14.0 ids: charset by (id - 2048) >> 8. */
static const uint8_t bl_uca1400_charset[] = {
	BL_CS_UTF8MB3, BL_CS_UTF8MB4, BL_CS_UCS2, BL_CS_UTF16, BL_CS_UTF32
};
/* END GENERATED COLLATION TABLE */

/*
 * Single-byte conversion table, built on first use.  For each byte: its
 * UTF-8 form and its JSON-string form (the UTF-8 form, or an escape),
 * padded so that the converters can copy a fixed 4 or 8 bytes.
 */
typedef struct bl_sbcs
{
	bool		ascii_identity; /* 0x00-0x7F map to themselves */
	uint8_t		u8len[256];
	uint8_t		jslen[256];
	uint8_t		u8[256][4];
	uint8_t		js[256][8];
} bl_sbcs;

static bl_sbcs *bl_sbcs_cache[BL_CS_COUNT];
static iconv_t bl_iconv_cache[BL_CS_COUNT];
static bool bl_iconv_opened[BL_CS_COUNT];
static bl_buf bl_scratch;

static const uint8_t bl_fffd[3] = {0xEF, 0xBF, 0xBD};
static const char bl_hex[] = "0123456789abcdef";

#define BL_ONES		UINT64_C(0x0101010101010101)
#define BL_HIGHS	UINT64_C(0x8080808080808080)

static inline uint64_t
bl_load64(const uint8_t *p)
{
	uint64_t	w;

	memcpy(&w, p, sizeof(w));
	return w;
}

/*
 * For a little-endian word w: the high bit of each byte that needs
 * attention in a JSON string (>= 0x80, < 0x20, '"' or '\').  The bytes
 * above the lowest such byte may be flagged wrongly (borrows), but the
 * lowest flagged byte is always right and a word without such bytes gives
 * 0.
 */
static inline uint64_t
bl_json_word_special(uint64_t w)
{
	uint64_t	q = w ^ (BL_ONES * 0x22);
	uint64_t	b = w ^ (BL_ONES * 0x5C);
	uint64_t	t;

	t = w;						/* a byte >= 0x80 */
	t |= (w - BL_ONES * 0x20) & ~w; /* a byte < 0x20 */
	t |= (q - BL_ONES) & ~q;	/* a '"' */
	t |= (b - BL_ONES) & ~b;	/* a '\' */
	return t & BL_HIGHS;
}

/* True if none of the 8 bytes needs attention in a JSON string. */
static inline bool
bl_json_word_plain(uint64_t w)
{
	return bl_json_word_special(w) == 0;
}

/*
 * Check the UTF-8 sequence at s (s[0] >= 0x80, avail >= 1 bytes left).
 * Returns its length if valid; otherwise minus the length of the maximal
 * invalid subpart, which is to be replaced by one U+FFFD.
 */
static inline int
bl_utf8_check(const uint8_t *s, size_t avail)
{
	uint8_t		c = s[0];
	uint8_t		lo = 0x80;
	uint8_t		hi = 0xBF;

	if (c < 0xC2)
		return -1;
	if (c < 0xE0)
	{
		if (avail >= 2 && (s[1] & 0xC0) == 0x80)
			return 2;
		return -1;
	}
	if (c < 0xF0)
	{
		if (c == 0xE0)
			lo = 0xA0;
		else if (c == 0xED)
			hi = 0x9F;
		if (avail < 2 || s[1] < lo || s[1] > hi)
			return -1;
		if (avail < 3 || (s[2] & 0xC0) != 0x80)
			return -2;
		return 3;
	}
	if (c < 0xF5)
	{
		if (c == 0xF0)
			lo = 0x90;
		else if (c == 0xF4)
			hi = 0x8F;
		if (avail < 2 || s[1] < lo || s[1] > hi)
			return -1;
		if (avail < 3 || (s[2] & 0xC0) != 0x80)
			return -2;
		if (avail < 4 || (s[3] & 0xC0) != 0x80)
			return -3;
		return 4;
	}
	return -1;
}

/* Write cp (a Unicode scalar value) as UTF-8; returns the length. */
static inline int
bl_utf8_put(uint32_t cp, uint8_t *o)
{
	if (cp < 0x80)
	{
		o[0] = (uint8_t) cp;
		return 1;
	}
	if (cp < 0x800)
	{
		o[0] = (uint8_t) (0xC0 | (cp >> 6));
		o[1] = (uint8_t) (0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000)
	{
		o[0] = (uint8_t) (0xE0 | (cp >> 12));
		o[1] = (uint8_t) (0x80 | ((cp >> 6) & 0x3F));
		o[2] = (uint8_t) (0x80 | (cp & 0x3F));
		return 3;
	}
	o[0] = (uint8_t) (0xF0 | (cp >> 18));
	o[1] = (uint8_t) (0x80 | ((cp >> 12) & 0x3F));
	o[2] = (uint8_t) (0x80 | ((cp >> 6) & 0x3F));
	o[3] = (uint8_t) (0x80 | (cp & 0x3F));
	return 4;
}

static inline bool
bl_json_needs_escape(uint32_t cp)
{
	return cp < 0x20 || cp == '"' || cp == '\\' || cp == 0x2028 || cp == 0x2029;
}

/* Write the JSON escape of cp (bl_json_needs_escape); returns its length. */
static int
bl_json_put_escape(uint32_t cp, uint8_t *o)
{
	char		c = 0;

	if (cp == 0 && bl_json_nul_as_replacement)
		cp = 0xFFFD;

	switch (cp)
	{
		case '"':
			c = '"';
			break;
		case '\\':
			c = '\\';
			break;
		case '\b':
			c = 'b';
			break;
		case '\t':
			c = 't';
			break;
		case '\n':
			c = 'n';
			break;
		case '\f':
			c = 'f';
			break;
		case '\r':
			c = 'r';
			break;
	}
	o[0] = '\\';
	if (c)
	{
		o[1] = (uint8_t) c;
		return 2;
	}
	o[1] = 'u';
	o[2] = (uint8_t) bl_hex[(cp >> 12) & 0xF];
	o[3] = (uint8_t) bl_hex[(cp >> 8) & 0xF];
	o[4] = (uint8_t) bl_hex[(cp >> 4) & 0xF];
	o[5] = (uint8_t) bl_hex[cp & 0xF];
	return 6;
}

/* Write cp as UTF-8, or as its JSON-string form if json. */
static inline uint8_t *
bl_put_cp(uint8_t *o, uint32_t cp, bool json)
{
	if (json && BL_UNLIKELY(bl_json_needs_escape(cp)))
		return o + bl_json_put_escape(cp, o);
	return o + bl_utf8_put(cp, o);
}

/* Make sure out holds an allocated, NUL-terminated string. */
static void
bl_buf_terminate(bl_buf *out)
{
	if (bl_buf_reserve(out, 0))
		out->data[out->len] = '\0';
}

static int
bl_nomem(const bl_charset *cs, bl_error *err)
{
	return bl_error_set(err, BL_ERR_NOMEM,
						"out of memory converting %s text to UTF-8",
						bl_charset_names[cs->id]);
}

/* ---------- single-byte charsets ---------- */

/* Fill cp[] from glibc's mapping of name; leaves cp[] alone on failure. */
static void
bl_sbcs_from_iconv(const char *name, uint32_t *cp)
{
	iconv_t		cd = iconv_open("UTF-8", name);
	int			b;

	if (cd == (iconv_t) -1)
		return;
	for (b = 0; b < 256; b++)
	{
		char		ib[1];
		uint8_t		ob[8];
		char	   *ip = ib;
		char	   *op = (char *) ob;
		size_t		il = 1;
		size_t		ol = sizeof(ob);
		size_t		n;
		size_t		r;

		ib[0] = (char) b;
		iconv(cd, NULL, NULL, NULL, NULL);
		r = iconv(cd, &ip, &il, &op, &ol);
		if (r == (size_t) -1 || il != 0)
		{
			cp[b] = 0xFFFD;
			continue;
		}
		iconv(cd, NULL, NULL, &op, &ol);
		n = sizeof(ob) - ol;
		if (n == 1 && ob[0] < 0x80)
			cp[b] = ob[0];
		else if (n >= 2 && bl_utf8_check(ob, n) == (int) n)
		{
			uint32_t	v = ob[0] & (0x7F >> n);
			size_t		k;

			for (k = 1; k < n; k++)
				v = (v << 6) | (ob[k] & 0x3F);
			cp[b] = v;
		}
		else
			cp[b] = 0xFFFD;
	}
	iconv_close(cd);
}

static const bl_sbcs *
bl_sbcs_get(const bl_charset *cs)
{
	bl_sbcs    *t = bl_sbcs_cache[cs->id];
	uint32_t	cp[256];
	int			b;
	int			f;

	if (BL_LIKELY(t != NULL))
		return t;
	t = malloc(sizeof(*t));
	if (t == NULL)
		return NULL;

	for (b = 0; b < 256; b++)
		cp[b] = b < 0x80 ? (uint32_t) b : 0xFFFD;
	if (cs->table)
	{
		for (b = 0; b < 256; b++)
			cp[b] = cs->table[b];
	}
	else if (cs->iconv_name)
		bl_sbcs_from_iconv(cs->iconv_name, cp);
	for (f = 0; f < cs->nfixes; f++)
	{
		const bl_cs_fix *fx = &cs->fixes[f];

		for (b = fx->first; b <= fx->last; b++)
			cp[b] = fx->cp + (uint32_t) (b - fx->first);
	}

	memset(t, 0, sizeof(*t));
	t->ascii_identity = true;
	for (b = 0; b < 256; b++)
	{
		if (b < 0x80 && cp[b] != (uint32_t) b)
			t->ascii_identity = false;
		t->u8len[b] = (uint8_t) bl_utf8_put(cp[b], t->u8[b]);
		t->jslen[b] = (uint8_t) (bl_put_cp(t->js[b], cp[b], true) - t->js[b]);
	}
	bl_sbcs_cache[cs->id] = t;
	return t;
}

/* Convert through a single-byte table; false if out of memory. */
static bool
bl_sbcs_convert(const bl_sbcs *t, const uint8_t *in, size_t len,
				bl_buf *out, bool json)
{
	size_t		i = 0;

	while (i < len)
	{
		size_t		lim = len - i > BL_CHUNK ? i + BL_CHUNK : len;
		uint8_t    *o;

		/*
		 * At most 3 bytes out per byte in (6 if escaped for JSON), plus room
		 * for the padded copy.
		 */
		if (!bl_buf_reserve(out, (lim - i) * (json ? 6 : 3) + 8))
			return false;
		o = (uint8_t *) out->data + out->len;
		if (json)
		{
			while (i < lim)
			{
				if (t->ascii_identity)
				{
					while (lim - i >= 8 && bl_json_word_plain(bl_load64(in + i)))
					{
						memcpy(o, in + i, 8);
						o += 8;
						i += 8;
					}
					if (i >= lim)
						break;
				}
				memcpy(o, t->js[in[i]], 8);
				o += t->jslen[in[i]];
				i++;
			}
		}
		else
		{
			while (i < lim)
			{
				if (t->ascii_identity)
				{
					while (lim - i >= 8 && (bl_load64(in + i) & BL_HIGHS) == 0)
					{
						memcpy(o, in + i, 8);
						o += 8;
						i += 8;
					}
					if (i >= lim)
						break;
				}
				memcpy(o, t->u8[in[i]], 4);
				o += t->u8len[in[i]];
				i++;
			}
		}
		out->len = (size_t) ((char *) o - out->data);
		out->data[out->len] = '\0';
	}
	return true;
}

/* ---------- UCS-2, UTF-16, UTF-32 ---------- */

/* Decode one of the wide Unicode forms; false if out of memory. */
static bool
bl_wide_convert(bl_cs_kind kind, const uint8_t *in, size_t len,
				bl_buf *out, bool json)
{
	size_t		i = 0;

	while (i < len)
	{
		size_t		lim = len - i > BL_CHUNK ? i + BL_CHUNK : len;
		uint8_t    *o;

		/*
		 * At most 3 bytes out per byte in (a UCS-2 unit escaped for JSON is
		 * 6 bytes); i may pass lim by the rest of a surrogate pair.
		 */
		if (!bl_buf_reserve(out, (lim - i + 4) * 3 + 8))
			return false;
		o = (uint8_t *) out->data + out->len;
		while (i < lim)
		{
			uint32_t	cp;

			if (kind == BL_CSK_UTF32)
			{
				if (len - i < 4)
				{
					cp = 0xFFFD;
					i = len;
				}
				else
				{
					cp = ((uint32_t) in[i] << 24) | ((uint32_t) in[i + 1] << 16) |
						((uint32_t) in[i + 2] << 8) | in[i + 3];
					i += 4;
					if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
						cp = 0xFFFD;
				}
			}
			else if (len - i < 2)
			{
				cp = 0xFFFD;
				i = len;
			}
			else
			{
				if (kind == BL_CSK_UTF16LE)
					cp = in[i] | ((uint32_t) in[i + 1] << 8);
				else
					cp = ((uint32_t) in[i] << 8) | in[i + 1];
				i += 2;
				if (cp >= 0xD800 && cp <= 0xDFFF)
				{
					uint32_t	lo = 0;

					if (kind != BL_CSK_UCS2 && cp < 0xDC00 && len - i >= 2)
					{
						if (kind == BL_CSK_UTF16LE)
							lo = in[i] | ((uint32_t) in[i + 1] << 8);
						else
							lo = ((uint32_t) in[i] << 8) | in[i + 1];
					}
					if (lo >= 0xDC00 && lo <= 0xDFFF)
					{
						cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
						i += 2;
					}
					else
						cp = 0xFFFD;
				}
			}
			o = bl_put_cp(o, cp, json);
		}
		out->len = (size_t) ((char *) o - out->data);
		out->data[out->len] = '\0';
	}
	return true;
}

/* ---------- UTF-8 ---------- */

/* Copy UTF-8, replacing invalid sequences. */
static void
bl_utf8_copy(const uint8_t *in, size_t len, bl_buf *out)
{
	size_t		i = 0;
	size_t		run = 0;

	while (i < len)
	{
		int			n;

		while (len - i >= 8 && (bl_load64(in + i) & BL_HIGHS) == 0)
			i += 8;
		if (i >= len)
			break;
		if (in[i] < 0x80)
		{
			i++;
			continue;
		}
		n = bl_utf8_check(in + i, len - i);
		if (BL_LIKELY(n > 0))
		{
			i += (size_t) n;
			continue;
		}
		if (i > run)
			bl_buf_append(out, in + run, i - run);
		bl_buf_append(out, bl_fffd, 3);
		i += (size_t) -n;
		run = i;
	}
	if (len > run)
		bl_buf_append(out, in + run, len - run);
	bl_buf_terminate(out);
}

/*
 * Input bytes escaped per output reservation: each reservation is for the
 * worst case (6 output bytes per input byte), so it is done once per
 * chunk, not per character.
 */
#define BL_ESC_CHUNK		4096

/*
 * The careful path for the character at in[i] (in[0..len)): a '"' or '\',
 * a control character, or UTF-8 (validated; runs of non-ASCII characters
 * are done in one go while they last and i < lim).  Writes at o, advances
 * *ip; returns the new output end.
 */
static inline uint8_t *
bl_json_escape_careful(const uint8_t *in, size_t len, size_t lim, size_t *ip,
					   uint8_t *o)
{
	size_t		i = *ip;
	uint8_t		c = in[i];
	int			n;

	if (c == '"' || c == '\\')
	{
		o[0] = '\\';
		o[1] = c;
		*ip = i + 1;
		return o + 2;
	}
	if (c < 0x80)
	{
		/* a control character */
		*ip = i + 1;
		return o + bl_json_put_escape(c, o);
	}
	do
	{
		n = bl_utf8_check(in + i, len - i);
		if (BL_LIKELY(n > 0))
		{
			/* U+2028 and U+2029 are E2 80 A8 and E2 80 A9 */
			if (BL_UNLIKELY(n == 3 && c == 0xE2 && in[i + 1] == 0x80 &&
							(in[i + 2] & 0xFE) == 0xA8))
				o += bl_json_put_escape(in[i + 2] == 0xA8 ? 0x2028 : 0x2029, o);
			else
			{
				o[0] = c;
				o[1] = in[i + 1];
				if (n > 2)
					o[2] = in[i + 2];
				if (n > 3)
					o[3] = in[i + 3];
				o += n;
			}
			i += (size_t) n;
		}
		else
		{
			memcpy(o, bl_fffd, 3);
			o += 3;
			i += (size_t) -n;
		}
	} while (i < lim && (c = in[i]) >= 0x80);
	*ip = i;
	return o;
}

#ifdef BL_JSON_SSE2
/*
 * The 16 bytes at in as the body of a JSON string at o, if none of them
 * is a control character or >= 0x80.  32 bytes must be readable at in.
 * Returns the output length, or -1 (nothing kept) with *first set to the
 * index of the first byte that needs the careful path.  The block is
 * stored whole; each '"' or '\' then gets its backslash and the rest of
 * the block is stored again one byte further on, from an unaligned load
 * at the quote.  Up to 32 bytes past the kept output may be written.
 */
static inline int
bl_json_escape_block16(const uint8_t *in, uint8_t *o, unsigned *first)
{
	__m128i		x = _mm_loadu_si128((const __m128i *) in);
	__m128i		ctl = _mm_cmplt_epi8(x, _mm_set1_epi8(0x20));	/* signed: also >= 0x80 */
	__m128i		qb = _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('"')),
								  _mm_cmpeq_epi8(x, _mm_set1_epi8('\\')));
	unsigned	mctl = (unsigned) _mm_movemask_epi8(ctl);
	unsigned	m = (unsigned) _mm_movemask_epi8(qb);
	uint8_t    *ob = o;

	_mm_storeu_si128((__m128i *) o, x);
	if (BL_LIKELY((m | mctl) == 0))
		return 16;
	if (mctl != 0)
	{
		*first = (unsigned) __builtin_ctz(m | mctl);
		return -1;
	}
	do
	{
		unsigned	k = (unsigned) __builtin_ctz(m);

		m &= m - 1;
		ob[k] = '\\';
		_mm_storeu_si128((__m128i *) (ob + k + 1),
						 _mm_loadu_si128((const __m128i *) (in + k)));
		ob++;
	} while (m);
	return (int) (ob - o) + 16;
}

/*
 * The n (1-8) bytes at in + i as a word (byte k in bits 8k..8k+7), zero
 * above them, reading nothing outside in[0..len): n < 8 only happens at
 * the end of the input (i + n == len), where the word is the input's last
 * 8 bytes shifted down, or assembled from two overlapping 4-byte loads or
 * single bytes when the input is shorter than 8 bytes.
 */
static inline uint64_t
bl_load_tail_word(const uint8_t *in, size_t i, size_t len, size_t n)
{
	uint32_t	a,
				b;

	if (n == 8)
		return bl_load64(in + i);
	if (len >= 8)
		return bl_load64(in + len - 8) >> (8 * (8 - n));
	if (n >= 4)
	{
		memcpy(&a, in + i, 4);
		memcpy(&b, in + i + n - 4, 4);
		return (uint64_t) a | ((uint64_t) b << (8 * (n - 4)));
	}
	return (uint64_t) in[i] | ((uint64_t) in[i + n / 2] << (8 * (n / 2))) |
		((uint64_t) in[i + n - 1] << (8 * (n - 1)));
}

/*
 * bl_json_escape_block16 for the n (1-8) bytes of the word w (from
 * bl_load_tail_word), with the rest of the word after a quote taken from
 * the register instead of memory.  Up to 16 bytes past the kept output
 * may be written.
 */
static inline int
bl_json_escape_word(uint64_t w, unsigned n, uint8_t *o, unsigned *first)
{
	__m128i		x = _mm_cvtsi64_si128((long long) w);
	__m128i		ctl = _mm_cmplt_epi8(x, _mm_set1_epi8(0x20));
	__m128i		qb = _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('"')),
								  _mm_cmpeq_epi8(x, _mm_set1_epi8('\\')));
	unsigned	valid = (1u << n) - 1;
	unsigned	mctl = (unsigned) _mm_movemask_epi8(ctl) & valid;
	unsigned	m = (unsigned) _mm_movemask_epi8(qb) & valid;
	uint8_t    *ob = o;

	memcpy(o, &w, 8);
	if (BL_LIKELY((m | mctl) == 0))
		return (int) n;
	if (mctl != 0)
	{
		*first = (unsigned) __builtin_ctz(m | mctl);
		return -1;
	}
	do
	{
		unsigned	k = (unsigned) __builtin_ctz(m);
		uint64_t	rest = w >> (8 * k);

		m &= m - 1;
		ob[k] = '\\';
		memcpy(ob + k + 1, &rest, 8);
		ob++;
	} while (m);
	return (int) (ob - o) + (int) n;
}

/*
 * Append in[0..len) as the body of a JSON string, 16 bytes at a time
 * (bl_json_escape_block16) while 32 are left, then 8 at a time from
 * registers (bl_json_escape_word), so that nothing is read past
 * in[len - 1]; the careful path takes the characters the fast paths
 * decline.  (The tail is not copied to a local block: reading a block
 * back from smaller stores would stall on store forwarding.)
 */
void
bl_json_escape_utf8(const uint8_t *in, size_t len, bl_buf *out)
{
	size_t		i = 0;

	while (i < len)
	{
		size_t		lim = len - i > BL_ESC_CHUNK ? i + BL_ESC_CHUNK : len;
		uint8_t    *o;

		/*
		 * A step that starts before lim consumes at most 16 bytes, keeps at
		 * most 6 output bytes per byte consumed and writes at most 32 bytes
		 * beyond what it keeps.
		 */
		if (BL_UNLIKELY(!bl_buf_reserve(out, (lim - i + 16) * 6 + 32)))
			return;
		o = (uint8_t *) out->data + out->len;
		while (i < lim)
		{
			size_t		avail = len - i;
			size_t		step;
			unsigned	first = 0;
			int			n;

			if (BL_LIKELY(avail >= 32))
			{
				step = 16;
				n = bl_json_escape_block16(in + i, o, &first);
			}
			else
			{
				step = avail >= 8 ? 8 : avail;
				n = bl_json_escape_word(bl_load_tail_word(in, i, len, step),
										(unsigned) step, o, &first);
			}
			if (BL_LIKELY(n >= 0))
			{
				o += n;
				i += step;
				continue;
			}
			o += first;
			i += first;
			o = bl_json_escape_careful(in, len, lim, &i, o);
		}
		out->len = (size_t) ((char *) o - out->data);
	}
	bl_buf_terminate(out);
}

#else							/* !BL_JSON_SSE2 */

/* w as a little-endian word: byte k of memory in bits 8k..8k+7. */
static inline uint64_t
bl_le64(uint64_t w)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return __builtin_bswap64(w);
#else
	return w;
#endif
}

/* The same for bytes >= 0x80 and < 0x20 only (not '"' and '\'). */
static inline uint64_t
bl_word_ctl_or_high(uint64_t w)
{
	return (w | ((w - BL_ONES * 0x20) & ~w)) & BL_HIGHS;
}


/*
 * Append in[0..len) as the body of a JSON string, 8 bytes at a time: each
 * word is stored whole, and a word whose only special bytes are '"' and
 * '\' is escaped without branches; at the first control character or byte
 * >= 0x80 (ctz on the word's mask) the careful path takes over.  The last
 * 1-7 bytes are loaded into a zeroed word, with the mask cut to the bytes
 * that exist: nothing is read past in[len - 1].
 */
void
bl_json_escape_utf8(const uint8_t *in, size_t len, bl_buf *out)
{
	size_t		i = 0;

	while (i < len)
	{
		size_t		lim = len - i > BL_ESC_CHUNK ? i + BL_ESC_CHUNK : len;
		uint8_t    *o;

		/* as above, with steps of at most 8 bytes */
		if (BL_UNLIKELY(!bl_buf_reserve(out, (lim - i + 16) * 6 + 32)))
			return;
		o = (uint8_t *) out->data + out->len;
		while (i < lim)
		{
			uint64_t	w;
			uint64_t	m;
			uint64_t	valid;	/* the bytes of w that are input */
			size_t		avail = len - i;
			size_t		adv = avail >= 8 ? 8 : avail;

			if (BL_LIKELY(avail >= 8))
			{
				w = bl_le64(bl_load64(in + i));
				valid = ~UINT64_C(0);
			}
			else
			{
				w = 0;
				memcpy(&w, in + i, avail);
				w = bl_le64(w);
				valid = (UINT64_C(1) << (8 * avail)) - 1;
			}
			m = bl_json_word_special(w) & valid;
			if (BL_LIKELY(m == 0))
			{
				w = bl_le64(w);
				memcpy(o, &w, 8);
				o += adv;
				i += adv;
				continue;
			}
			if ((bl_word_ctl_or_high(w) & valid) == 0)
			{
				/* only '"' and '\' among these bytes */
				for (size_t k = 0; k < adv; k++)
				{
					uint8_t		c = in[i + k];

					*o = '\\';
					o += (c == '"') | (c == '\\');
					*o++ = c;
				}
				i += adv;
				continue;
			}
			adv = (size_t) (__builtin_ctzll(m) >> 3);
			w = bl_le64(w);
			memcpy(o, &w, 8);
			o += adv;
			i += adv;
			o = bl_json_escape_careful(in, len, lim, &i, o);
		}
		out->len = (size_t) ((char *) o - out->data);
	}
	bl_buf_terminate(out);
}
#endif							/* BL_JSON_SSE2 */

/* ---------- iconv ---------- */

static iconv_t
bl_iconv_get(const bl_charset *cs)
{
	if (!bl_iconv_opened[cs->id])
	{
		bl_iconv_cache[cs->id] = iconv_open("UTF-8", cs->iconv_name);
		bl_iconv_opened[cs->id] = true;
	}
	return bl_iconv_cache[cs->id];
}

/*
 * Length of the character whose first byte (>= 0x80) is at s, by the
 * charset's lead-byte rules, not checking the trail bytes; at most avail.
 */
static inline size_t
bl_mb_char_len(bl_mb_scheme scheme, const uint8_t *s, size_t avail)
{
	uint8_t		c = s[0];
	size_t		n = 1;

	switch (scheme)
	{
		case BL_MB_NONE:
			break;
		case BL_MB_DBCS:
			if (c >= 0x81 && c <= 0xFE)
				n = 2;
			break;
		case BL_MB_SJIS:
			if ((c >= 0x81 && c <= 0x9F) || (c >= 0xE0 && c <= 0xFC))
				n = 2;
			break;
		case BL_MB_EUCJP:
			if (c == 0x8F)
				n = 3;
			else if (c == 0x8E || c >= 0xA1)
				n = 2;
			break;
		case BL_MB_GB18030:
			if (c >= 0x81 && c <= 0xFE)
				n = (avail >= 2 && s[1] >= 0x30 && s[1] <= 0x39) ? 4 : 2;
			break;
	}
	return n < avail ? n : avail;
}

/*
 * The EUC-JP user-defined area (lead 0xF5-0xFE, or 0x8F then 0xF5-0xFE),
 * which MySQL's ujis and eucjpms map to U+E000-U+E757 and glibc's EUC-JP
 * rejects: the private-use code point of the n-byte character at s, or 0.
 */
static inline uint32_t
bl_eucjp_pua(const uint8_t *s, size_t n)
{
	if (n == 2 && s[0] >= 0xF5 && s[0] <= 0xFE && s[1] >= 0xA1 && s[1] <= 0xFE)
		return 0xE000 + (uint32_t) (s[0] - 0xF5) * 94 + (s[1] - 0xA1);
	if (n == 3 && s[0] == 0x8F && s[1] >= 0xF5 && s[1] <= 0xFE &&
		s[2] >= 0xA1 && s[2] <= 0xFE)
		return 0xE3AC + (uint32_t) (s[1] - 0xF5) * 94 + (s[2] - 0xA1);
	return 0;
}

/* Convert in[0..len) with iconv descriptor cd; false if out of memory. */
static bool
bl_iconv_run(iconv_t cd, const uint8_t *in, size_t len, bl_buf *out)
{
	char	   *ip = (char *) (uintptr_t) in;
	size_t		il = len;

	while (il > 0)
	{
		char	   *op;
		size_t		ol;
		size_t		r;
		int			e;

		/* 3 bytes out per byte in is the worst case (sjis kana) */
		if (!bl_buf_reserve(out, il < BL_CHUNK ? il * 3 + 8 : BL_CHUNK * 3))
			return false;
		op = out->data + out->len;
		ol = out->cap - out->len - 1;
		r = iconv(cd, &ip, &il, &op, &ol);
		out->len = (size_t) (op - out->data);
		if (r != (size_t) -1)
			break;
		e = errno;
		if (e == E2BIG)
			continue;
		bl_buf_append(out, bl_fffd, 3);
		iconv(cd, NULL, NULL, NULL, NULL);

		/*
		 * EINVAL: incomplete character at the end.  glibc's CP949 reports
		 * a lone final lead byte as EILSEQ after consuming it, hence the
		 * check of il.
		 */
		if (e != EILSEQ || il == 0)
			break;
		ip++;					/* skip one byte and go on */
		il--;
	}
	return !bl_buf_failed(out);
}

/*
 * Convert a multi-byte charset through glibc iconv; false if out of memory.
 * Runs of ASCII are copied directly: faster, and right for sjis, where
 * glibc maps the single bytes 0x5C and 0x7E to U+00A5 and U+203E (JIS
 * Roman) while MySQL means '\' and '~'.  The rest is cut at character
 * boundaries, so that a trail byte in the ASCII range stays with its lead.
 */
static bool
bl_iconv_convert(const bl_charset *cs, const uint8_t *in, size_t len,
				 bl_buf *out)
{
	iconv_t		cd = bl_iconv_get(cs);
	size_t		i = 0;

	if (cd == (iconv_t) -1)
	{
		/* glibc lacks it: ASCII, and U+FFFD for the rest */
		const bl_sbcs *t = bl_sbcs_get(&bl_charsets[BL_CS_ASCII]);

		return t != NULL && bl_sbcs_convert(t, in, len, out, false);
	}

	iconv(cd, NULL, NULL, NULL, NULL);
	while (i < len)
	{
		size_t		j = i;

		while (len - j >= 8 && (bl_load64(in + j) & BL_HIGHS) == 0)
			j += 8;
		while (j < len && in[j] < 0x80)
			j++;
		if (j > i)
			bl_buf_append(out, in + i, j - i);
		if (j >= len)
			break;
		i = j;
		while (j < len && in[j] >= 0x80)
		{
			size_t		n = bl_mb_char_len((bl_mb_scheme) cs->scheme, in + j, len - j);
			uint32_t	pua;

			if (cs->scheme == BL_MB_EUCJP && (pua = bl_eucjp_pua(in + j, n)) != 0)
			{
				uint8_t		u[4];

				if (j > i && !bl_iconv_run(cd, in + i, j - i, out))
					return false;
				bl_buf_append(out, u, (size_t) bl_utf8_put(pua, u));
				i = j + n;
			}
			j += n;
		}
		if (j > i && !bl_iconv_run(cd, in + i, j - i, out))
			return false;
		i = j;
	}
	bl_buf_terminate(out);
	return !bl_buf_failed(out);
}

/* ---------- public functions ---------- */

const bl_charset *
bl_charset_by_collation(uint32_t collation_id)
{
	uint8_t		id = BL_CS_NONE;

	if (collation_id < BL_COLLATION_TABLE_SIZE)
		id = bl_collation_charset[collation_id];
	else if (collation_id >= BL_UCA1400_FIRST)
	{
		uint32_t	slot = (collation_id - BL_UCA1400_FIRST) >> 8;

		if (slot < BL_LENGTHOF(bl_uca1400_charset))
			id = bl_uca1400_charset[slot];
	}
	return id != BL_CS_NONE ? &bl_charsets[id] : NULL;
}

const bl_charset *
bl_charset_by_name(const char *name)
{
	char		low[16];
	size_t		n;
	int			i;

	if (name == NULL)
		return NULL;
	for (n = 0; name[n] != '\0'; n++)
	{
		char		c = name[n];

		if (n + 1 >= sizeof(low))
			return NULL;
		low[n] = (c >= 'A' && c <= 'Z') ? (char) (c - 'A' + 'a') : c;
	}
	low[n] = '\0';
	if (strcmp(low, "utf8") == 0)
		return &bl_charsets[BL_CS_UTF8MB3];
	for (i = 1; i < BL_CS_COUNT; i++)
	{
		if (strcmp(low, bl_charset_names[i]) == 0)
			return &bl_charsets[i];
	}
	return NULL;
}

const char *
bl_charset_name(const bl_charset *cs)
{
	return cs ? bl_charset_names[cs->id] : NULL;
}

bool
bl_charset_is_binary(const bl_charset *cs)
{
	return cs != NULL && cs->id == BL_CS_BINARY;
}

int
bl_charset_max_bytes(const bl_charset *cs)
{
	return cs ? cs->max_bytes : 0;
}

int
bl_charset_to_utf8(const bl_charset *cs, const uint8_t *in, size_t len,
				   bl_buf *out, bl_error *err)
{
	bool		ok = true;

	if (cs == NULL)
		return bl_error_set(err, BL_ERR_UNSUPPORTED, "unknown character set");
	switch ((bl_cs_kind) cs->kind)
	{
		case BL_CSK_UTF8:
			bl_utf8_copy(in, len, out);
			break;
		case BL_CSK_SBCS:
			{
				const bl_sbcs *t = bl_sbcs_get(cs);

				ok = t != NULL && bl_sbcs_convert(t, in, len, out, false);
				break;
			}
		case BL_CSK_MBCS:
			ok = bl_iconv_convert(cs, in, len, out);
			break;
		case BL_CSK_UCS2:
		case BL_CSK_UTF16:
		case BL_CSK_UTF16LE:
		case BL_CSK_UTF32:
			ok = bl_wide_convert((bl_cs_kind) cs->kind, in, len, out, false);
			break;
	}
	if (ok)
		bl_buf_terminate(out);
	if (!ok || bl_buf_failed(out))
		return bl_nomem(cs, err);
	return 0;
}

int
bl_charset_to_json_string(const bl_charset *cs, const uint8_t *in, size_t len,
						  bl_buf *out, bl_error *err)
{
	bool		ok = true;

	if (cs == NULL)
		return bl_error_set(err, BL_ERR_UNSUPPORTED, "unknown character set");
	switch ((bl_cs_kind) cs->kind)
	{
		case BL_CSK_UTF8:
			bl_json_escape_utf8(in, len, out);
			break;
		case BL_CSK_SBCS:
			{
				const bl_sbcs *t = bl_sbcs_get(cs);

				ok = t != NULL && bl_sbcs_convert(t, in, len, out, true);
				break;
			}
		case BL_CSK_MBCS:
			bl_buf_reset(&bl_scratch);
			ok = bl_iconv_convert(cs, in, len, &bl_scratch);
			if (ok)
				bl_json_escape_utf8((const uint8_t *) bl_scratch.data,
									bl_scratch.len, out);
			if (!ok || bl_scratch.cap > BL_SCRATCH_KEEP)
				bl_buf_free(&bl_scratch);
			break;
		case BL_CSK_UCS2:
		case BL_CSK_UTF16:
		case BL_CSK_UTF16LE:
		case BL_CSK_UTF32:
			ok = bl_wide_convert((bl_cs_kind) cs->kind, in, len, out, true);
			break;
	}
	if (ok)
		bl_buf_terminate(out);
	if (!ok || bl_buf_failed(out))
		return bl_nomem(cs, err);
	return 0;
}

void
bl_charset_cleanup(void)
{
	int			i;

	for (i = 0; i < BL_CS_COUNT; i++)
	{
		free(bl_sbcs_cache[i]);
		bl_sbcs_cache[i] = NULL;
		if (bl_iconv_opened[i] && bl_iconv_cache[i] != (iconv_t) -1)
			iconv_close(bl_iconv_cache[i]);
		bl_iconv_opened[i] = false;
	}
	bl_buf_free(&bl_scratch);
}

/*
 * The body of a JSON string token from p (just after its opening '"') to
 * its closing '"' (before end), unescaped into d, which has room for end - p
 * bytes: its length into *dlen; returns the closing '"', or NULL for what
 * only jsonb_in reads (it makes the value or raises its error): a \u
 * escape or an invalid one, a control character, no closing '"'.
 */
const char *
bl_json_string_unescape(const char *p, const char *end, char *d, int *dlen)
{
	char	   *d0 = d;

	while (p < end && *p != '"')
	{
		if ((unsigned char) *p < 0x20)
			return NULL;
		if (*p != '\\')
		{
			*d++ = *p++;
			continue;
		}
		if (++p >= end)
			return NULL;
		switch (*p)
		{
			case '"':
			case '\\':
			case '/':
				*d++ = *p;
				break;
			case 'b':
				*d++ = '\b';
				break;
			case 'f':
				*d++ = '\f';
				break;
			case 'n':
				*d++ = '\n';
				break;
			case 'r':
				*d++ = '\r';
				break;
			case 't':
				*d++ = '\t';
				break;
			default:
				return NULL;
		}
		p++;
	}
	if (p >= end)
		return NULL;
	*dlen = (int) (d - d0);
	return p;
}
