#!/usr/bin/env bash
# test/fuzz/make-corpus.sh -- seed corpora of the decoder's fuzz targets.
#
# usage: test/fuzz/make-corpus.sh        (after "make fuzz")
#
# Writes into build/fuzz/corpus-<target>/ (never into the source tree):
#   corpus-fuzz_decoder   every binlog of ../shared/binlog-samples and of the
#                         throwaway MariaDB instances under $BLF_RUN, whole
#                         (file-*, the first 64 kB of big ones), as a
#                         replication stream (dump-*), and one event at a
#                         time after its FORMAT_DESCRIPTION and TABLE_MAPs
#                         (ev-*); written by the target itself
#                         (FUZZ_WRITE_SEEDS, see fuzz_decoder.c)
#   corpus-fuzz_event     rows events of every kind for the synthetic
#                         all-types tables and every event of the sample
#                         prefixes (FUZZ_WRITE_SEEDS, see fuzz_event.c)
#   corpus-fuzz_json_binary  the binary JSON values (and partial-update
#                         diffs) found in the rows events of those binlogs
#                         (FUZZ_WRITE_JSON_SEEDS, see fuzz_decoder.c)
# Seeds are named after their contents, so running this again adds nothing
# twice, and whatever the fuzzers added to a corpus stays.
#
# Environment: BL_SAMPLES (default ../shared/binlog-samples beside the
# checkout), BLF_RUN (scripts/env.sh).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"

SAMPLES=${BL_SAMPLES:-$(cd "$BLF_ROOT/.." && pwd)/shared/binlog-samples}
FUZZ=$BLF_ROOT/build/fuzz

if [ ! -d "$SAMPLES" ]; then
	echo "make-corpus: the sample binlogs are missing: $SAMPLES" >&2
	exit 1
fi
for t in fuzz_decoder fuzz_event; do
	if [ ! -x "$FUZZ/$t" ]; then
		echo "make-corpus: $FUZZ/$t is not built (make fuzz)" >&2
		exit 1
	fi
done

files=()
while IFS= read -r -d '' f; do
	files+=("$f")
done < <(find "$SAMPLES" -type f -print0 | sort -z)
# binlogs of the throwaway servers (root can read them; others may not)
if [ -d "$BLF_RUN" ]; then
	while IFS= read -r -d '' f; do
		[ -r "$f" ] && files+=("$f")
	done < <(find "$BLF_RUN" -maxdepth 2 -path "$BLF_RUN/mariadb-*" -type f \
		-name '*-bin.[0-9]*' -print0 2>/dev/null | sort -z)
fi

mkdir -p "$FUZZ/corpus-fuzz_decoder" "$FUZZ/corpus-fuzz_event" "$FUZZ/corpus-fuzz_json_binary"
FUZZ_WRITE_SEEDS=$FUZZ/corpus-fuzz_decoder \
	FUZZ_WRITE_JSON_SEEDS=$FUZZ/corpus-fuzz_json_binary BL_SAMPLES=$SAMPLES \
	"$FUZZ/fuzz_decoder" "${files[@]}"
FUZZ_WRITE_SEEDS=$FUZZ/corpus-fuzz_event BL_SAMPLES=$SAMPLES \
	"$FUZZ/fuzz_event"

for t in fuzz_decoder fuzz_event fuzz_json_binary; do
	echo "make-corpus: corpus-$t: $(find "$FUZZ/corpus-$t" -type f | wc -l) inputs"
done
