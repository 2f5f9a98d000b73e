# binlog_fdw: MySQL/MariaDB change data capture inside PostgreSQL.
#
#   make                 build the extension and binlogcat
#   make install         install both
#   make installcheck    pg_regress tests against a running server
#   make check-unit      C unit tests of the decoder, under ASan and UBSan
#   make check-unit-valgrind  the same tests without sanitizers, under valgrind
#   make fuzz            build the libFuzzer targets (clang)
#
# The decoder (src/decoder) and the MySQL source (src/source) are plain C
# without PostgreSQL headers; above them src/base, src/store, src/worker,
# src/sql and src/apply are the PostgreSQL side, and binlog_fdw.c the
# module's entry point (docs/architecture.md).

MODULE_big = binlog_fdw
EXTENSION = binlog_fdw
DATA = binlog_fdw--0.2.sql binlog_fdw--0.1--0.2.sql
PGFILEDESC = "binlog_fdw - MySQL/MariaDB change data capture"

DECODER_SRCS = $(sort $(wildcard src/decoder/*.c))
SOURCE_SRCS = $(sort $(wildcard src/source/*.c))
PG_PARTS = base types store worker sql apply
PGGLUE_SRCS = binlog_fdw.c $(sort $(foreach p,$(PG_PARTS),$(wildcard src/$(p)/*.c)))

DECODER_OBJS = $(DECODER_SRCS:.c=.o)
SOURCE_OBJS = $(SOURCE_SRCS:.c=.o)
OBJS = $(PGGLUE_SRCS:.c=.o) $(DECODER_OBJS) $(SOURCE_OBJS)

MYSQL_CONFIG ?= mariadb_config
MYSQL_CFLAGS := $(shell $(MYSQL_CONFIG) --cflags)
MYSQL_LIBS := $(shell $(MYSQL_CONFIG) --libs)

PG_CPPFLAGS = -I$(srcdir)/src -I$(srcdir)/src/decoder -I$(srcdir)/src/source
PG_CFLAGS = -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers -Wno-sign-compare
# libisal: CRC32 of event checksums (bl_crc32.c)
DECODER_LIBS = -lisal -lzstd -lz -lm
SHLIB_LINK = $(MYSQL_LIBS) $(DECODER_LIBS)

REGRESS = $(patsubst sql/%.sql,%,$(sort $(wildcard sql/*.sql)))
REGRESS_OPTS = --inputdir=.

EXTRA_CLEAN = binlogcat build

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PostgreSQL's Ryu (shortest round-trip floats, bl_float_text.c): inside
# the server the module uses the postgres binary's own copy; binlogcat, the
# unit tests and the fuzzers link the frontend libpgcommon statically
# (Debian keeps it in pkglibdir, other builds in libdir).
PGCOMMON_LIBS = -L$(shell $(PG_CONFIG) --pkglibdir) -L$(shell $(PG_CONFIG) --libdir) -lpgcommon -lpgport

# Decoder files build without PostgreSQL's headers; the client library's
# headers only where they are used, never next to PostgreSQL's (their
# names clash).
$(DECODER_OBJS) $(DECODER_OBJS:.o=.bc): override CPPFLAGS := -I$(srcdir)/src/decoder -D_GNU_SOURCE
$(SOURCE_OBJS) $(SOURCE_OBJS:.o=.bc) src/tools/binlogcat.o: override CPPFLAGS := -I$(srcdir)/src/decoder \
	-I$(srcdir)/src/source $(MYSQL_CFLAGS) -D_GNU_SOURCE

# Replace the installed library by rename (see scripts/install-replace.sh):
# install(1) overwrites it in place, crashing servers that have it loaded.
INSTALL_SHLIB = $(SHELL) $(srcdir)/scripts/install-replace.sh

# PGXS tracks no header dependencies: a changed struct in a header would
# leave objects built with its old layout (garbage fields, crashes).
HEADERS = $(wildcard src/decoder/*.h src/source/*.h $(foreach p,$(PG_PARTS),src/$(p)/*.h))
$(OBJS) $(OBJS:.o=.bc) src/tools/binlogcat.o: $(HEADERS)

all: binlogcat

binlogcat: src/tools/binlogcat.o $(DECODER_OBJS) $(SOURCE_OBJS)
	$(CC) $(CFLAGS) -o $@ $^ $(MYSQL_LIBS) $(DECODER_LIBS) $(PGCOMMON_LIBS) $(LDFLAGS)

install: install-binlogcat
install-binlogcat: binlogcat
	$(INSTALL_PROGRAM) binlogcat '$(DESTDIR)$(bindir)/binlogcat'

# ---- decoder unit tests (ASan + UBSan), fuzzing ----

UNIT_CC ?= clang
UNIT_CFLAGS = -std=gnu11 -g -O1 -Wall -Wextra -Werror -fsanitize=address,undefined \
	-fno-sanitize-recover=all -fno-omit-frame-pointer -D_GNU_SOURCE -Isrc/decoder
UNIT_TESTS = $(patsubst test/unit/%.c,build/unit/%,$(sort $(wildcard test/unit/test_*.c))) \
	build/unit/test_charset_nosimd

build/unit/%: test/unit/%.c $(DECODER_SRCS) $(wildcard src/decoder/*.h) test/unit/bl_test.h
	@mkdir -p build/unit
	$(UNIT_CC) $(UNIT_CFLAGS) -o $@ $< $(DECODER_SRCS) $(DECODER_LIBS) $(PGCOMMON_LIBS)

# the charset tests again with the portable (non-SSE2) JSON escaping
build/unit/test_charset_nosimd: test/unit/test_charset.c $(DECODER_SRCS) $(wildcard src/decoder/*.h) \
		test/unit/bl_test.h
	@mkdir -p build/unit
	$(UNIT_CC) $(UNIT_CFLAGS) -DBL_NO_SIMD -o $@ $< $(DECODER_SRCS) $(DECODER_LIBS) $(PGCOMMON_LIBS)

.PHONY: check-unit fuzz
check-unit: $(UNIT_TESTS)
	@rc=0; for t in $(UNIT_TESTS); do \
		BL_SAMPLES=$(abspath ../shared/binlog-samples) ASAN_OPTIONS=detect_leaks=1 $$t || rc=1; \
	done; exit $$rc

# the same tests without sanitizers, under valgrind (which sees what the
# sanitizers do not, e.g. overlapping source and destination in vsnprintf)
VG_CC ?= gcc
VG_CFLAGS = -std=gnu11 -gdwarf-4 -O1 -Wall -Wextra -Werror -Wno-format-truncation -D_GNU_SOURCE -Isrc/decoder
VG_TESTS = $(patsubst test/unit/%.c,build/unit-vg/%,$(sort $(wildcard test/unit/test_*.c)))
VALGRIND = valgrind --quiet --error-exitcode=99 --suppressions=test/unit/valgrind.supp --leak-check=full --errors-for-leak-kinds=definite,indirect

build/unit-vg/%: test/unit/%.c $(DECODER_SRCS) $(wildcard src/decoder/*.h) test/unit/bl_test.h
	@mkdir -p build/unit-vg
	$(VG_CC) $(VG_CFLAGS) -o $@ $< $(DECODER_SRCS) $(DECODER_LIBS) $(PGCOMMON_LIBS)

.PHONY: check-unit-valgrind
check-unit-valgrind: $(VG_TESTS)
	@rc=0; for t in $(VG_TESTS); do \
		BL_SAMPLES=$(abspath ../shared/binlog-samples) BL_TEST_VALGRIND=1 $(VALGRIND) $$t || rc=1; \
	done; exit $$rc

FUZZ_TARGETS = $(patsubst test/fuzz/%.c,build/fuzz/%,$(sort $(wildcard test/fuzz/fuzz_*.c)))
build/fuzz/%: test/fuzz/%.c $(DECODER_SRCS) $(wildcard src/decoder/*.h) \
		$(wildcard test/fuzz/*.h) test/unit/bl_json_check.h
	@mkdir -p build/fuzz
	clang -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-D_GNU_SOURCE -Isrc/decoder -o $@ $< $(DECODER_SRCS) $(DECODER_LIBS) $(PGCOMMON_LIBS)
fuzz: $(FUZZ_TARGETS)
