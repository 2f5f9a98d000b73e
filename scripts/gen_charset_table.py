#!/usr/bin/env python3
#
# gen_charset_table.py
#     Regenerate the collation-id table of src/decoder/bl_charset.c.
#
# The table maps every MySQL and MariaDB collation id below 2048 to its
# character set.  MariaDB's ids come from a running server (10.10 or later,
# whose information_schema.COLLATION_CHARACTER_SET_APPLICABILITY lists every
# charset/collation pair with its id); the ids only MySQL has, and MySQL's
# names where they differ from MariaDB's, are listed below.  MariaDB's UCA
# 14.0 ids (2048 and up) are not tabulated: bl_charset.c derives the
# charset from the id, and this script checks that rule against the server.
#
# Usage:
#   scripts/gen_charset_table.py --socket /path/to/mariadb.sock [--user root]
#   scripts/gen_charset_table.py --tsv collations.tsv
#       (rows: ID <tab> CHARACTER_SET_NAME <tab> FULL_COLLATION_NAME)
#   add --check to only compare with what bl_charset.c holds now.
#
# Not needed at build time: the generated C is committed.

import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.path.join(ROOT, "src", "decoder", "bl_charset.c")
BEGIN = "/* BEGIN GENERATED COLLATION TABLE (scripts/gen_charset_table.py) */"
END = "/* END GENERATED COLLATION TABLE */"

# Collations of MySQL 5.5 to 9.x that MariaDB lacks or names differently.
MYSQL_ONLY = {
    76: "utf8mb3_tolower_ci",
    122: "utf16_croatian_ci",
    149: "ucs2_croatian_ci",
    181: "utf32_croatian_ci",
    213: "utf8mb3_croatian_ci",
    245: "utf8mb4_croatian_ci",
    248: "gb18030_chinese_ci",
    249: "gb18030_bin",
    250: "gb18030_unicode_520_ci",
    255: "utf8mb4_0900_ai_ci",
    278: "utf8mb4_0900_as_cs",
    303: "utf8mb4_ja_0900_as_cs",
    304: "utf8mb4_ja_0900_as_cs_ks",
    305: "utf8mb4_0900_as_ci",
    306: "utf8mb4_ru_0900_ai_ci",
    307: "utf8mb4_ru_0900_as_cs",
    308: "utf8mb4_zh_0900_as_cs",
    309: "utf8mb4_0900_bin",
}

# MySQL 8.0's language-specific UCA 9.0.0 collations come in pairs:
# utf8mb4_<lang>_0900_ai_ci at ai_id and utf8mb4_<lang>_0900_as_cs at as_id.
MYSQL_0900_LANGS = [
    ("de_pb", 256, 279), ("is", 257, 280), ("lv", 258, 281),
    ("ro", 259, 282), ("sl", 260, 283), ("pl", 261, 284),
    ("et", 262, 285), ("es", 263, 286), ("sv", 264, 287),
    ("tr", 265, 288), ("cs", 266, 289), ("da", 267, 290),
    ("lt", 268, 291), ("sk", 269, 292), ("es_trad", 270, 293),
    ("la", 271, 294), ("eo", 273, 296), ("hu", 274, 297),
    ("hr", 275, 298), ("vi", 277, 300), ("nb", 310, 311),
    ("nn", 312, 313), ("sr_latn", 314, 315), ("bs", 316, 317),
    ("bg", 318, 319), ("gl", 320, 321), ("mn_cyrl", 322, 323),
]
for lang, ai, cs in MYSQL_0900_LANGS:
    MYSQL_ONLY[ai] = "utf8mb4_%s_0900_ai_ci" % lang
    MYSQL_ONLY[cs] = "utf8mb4_%s_0900_as_cs" % lang

# Charsets known to bl_charset.c (its enum is BL_CS_<NAME>).
CHARSETS = """armscii8 ascii big5 binary cp1250 cp1251 cp1256 cp1257 cp850 cp852
cp866 cp932 dec8 eucjpms euckr gb18030 gb2312 gbk geostd8 greek hebrew hp8
keybcs2 koi8r koi8u latin1 latin2 latin5 latin7 macce macroman sjis swe7
tis620 ucs2 ujis utf16 utf16le utf32 utf8mb3 utf8mb4""".split()

UCA1400_FIRST = 2048


def charset_of_name(name):
    if name == "binary":
        return "binary"
    cs = name.split("_", 1)[0]
    return "utf8mb3" if cs == "utf8" else cs


def read_rows(args):
    if args.tsv:
        with open(args.tsv, encoding="utf-8") as f:
            text = f.read()
    else:
        query = ("SELECT ID, CHARACTER_SET_NAME, FULL_COLLATION_NAME "
                 "FROM information_schema.COLLATION_CHARACTER_SET_APPLICABILITY "
                 "WHERE ID IS NOT NULL ORDER BY ID")
        cmd = ["mariadb", "--no-defaults", "-S", args.socket, "-u", args.user,
               "-N", "-B", "-e", query]
        text = subprocess.run(cmd, check=True, capture_output=True,
                              text=True).stdout
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        ident, cs, name = line.split("\t")[:3]
        rows.append((int(ident), "utf8mb3" if cs == "utf8" else cs, name))
    return rows


def build(rows):
    entries = {}                # id -> (charset, [names])
    uca = {}                    # charset slot -> charset
    for ident, cs, name in rows:
        if cs not in CHARSETS:
            sys.exit("unknown charset %s (id %d)" % (cs, ident))
        if ident >= UCA1400_FIRST:
            slot = (ident - UCA1400_FIRST) >> 8
            if uca.setdefault(slot, cs) != cs:
                sys.exit("id %d (%s) breaks the UCA 14.0 id rule" % (ident, name))
            continue
        if ident in entries and entries[ident][0] != cs:
            sys.exit("id %d listed with two charsets" % ident)
        entries[ident] = (cs, [name])
    for ident, name in sorted(MYSQL_ONLY.items()):
        cs = charset_of_name(name)
        if ident in entries:
            if entries[ident][0] != cs:
                sys.exit("id %d: MySQL says %s, MariaDB says %s"
                         % (ident, cs, entries[ident][0]))
            entries[ident][1].insert(0, name)
        else:
            entries[ident] = (cs, [name])
    slots = sorted(uca)
    if slots != list(range(len(slots))):
        sys.exit("UCA 14.0 charset slots are not contiguous: %r" % slots)
    return entries, [uca[s] for s in slots]


def render(entries, uca):
    out = [BEGIN,
           "#define BL_COLLATION_TABLE_SIZE %d" % (max(entries) + 1),
           "",
           "/* Collation id -> charset, ids below 2048 (MySQL / MariaDB names). */",
           "static const uint8_t bl_collation_charset[BL_COLLATION_TABLE_SIZE] = {"]
    for ident in sorted(entries):
        cs, names = entries[ident]
        out.append("\t[%d] = BL_CS_%s,\t/* %s */"
                   % (ident, cs.upper(), " / ".join(names)))
    out.append("};")
    out.append("")
    out.append("/* MariaDB UCA 14.0 ids: charset by (id - 2048) >> 8. */")
    out.append("static const uint8_t bl_uca1400_charset[] = {")
    out.append("\t" + ", ".join("BL_CS_%s" % cs.upper() for cs in uca))
    out.append("};")
    out.append(END)
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--socket")
    src.add_argument("--tsv")
    ap.add_argument("--user", default="root")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()

    entries, uca = build(read_rows(args))
    block = render(entries, uca)
    with open(TARGET, encoding="utf-8") as f:
        text = f.read()
    pat = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    if not pat.search(text):
        sys.exit("markers not found in %s" % TARGET)
    new = pat.sub(lambda m: block, text)
    if args.check:
        if new != text:
            sys.exit("bl_charset.c differs from the server's collations")
        print("bl_charset.c matches (%d ids below 2048, %d UCA 14.0 charsets)"
              % (len(entries), len(uca)))
        return
    with open(TARGET, "w", encoding="utf-8") as f:
        f.write(new)
    print("wrote %d ids below 2048, %d UCA 14.0 charsets" % (len(entries), len(uca)))


if __name__ == "__main__":
    main()
