#!/usr/bin/env bash
# test/suites/50-fuzz.sh -- the decoder under fuzzing and sanitizers.
#
# 1. fuzz/<target>: "make fuzz" builds the libFuzzer targets (build/fuzz/
#    from test/fuzz/fuzz_*.c), test/fuzz/make-corpus.sh seeds their corpora
#    (build/fuzz/corpus-<target>/) from ../shared/binlog-samples, and each
#    target runs for BLF_FUZZ_SECONDS (default 60) seconds:
#      ok - fuzz/<target>: N runs, 0 crashes
#      not ok - fuzz/<target>: crash ... (reproducer: build/fuzz/artifacts-<target>/...)
#    Reproduce with: build/fuzz/<target> <reproducer>
#    (BL_SAMPLES=<samples dir> for fuzz_event if not run from the checkout).
# 2. asan/<sample>: binlogcat built with AddressSanitizer and UBSan
#    (build/asan/binlogcat) decodes every file of ../shared/binlog-samples
#    (--no-follow, output to /dev/null; once as JSON lines, once --values).
#    No sanitizer report, no signal; valid binlogs exit 0; the deliberately
#    broken ones and the non-binlog files (json, sql, plaintext) exit 1 with
#    an error message.
#
# Environment: BLF_FUZZ_SECONDS (per target), BLF_FUZZ_TARGETS (space
# separated names, default every test/fuzz/fuzz_*.c).
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"

cd "$BLF_ROOT" || { echo "not ok - fuzz: cannot cd to $BLF_ROOT"; exit 1; }
SAMPLES=$(cd "$BLF_ROOT/.." && pwd)/shared/binlog-samples
SECONDS_PER_TARGET=${BLF_FUZZ_SECONDS:-60}
FUZZ=build/fuzz
LOGDIR=${BLF_SUITE_TMP:-$(mktemp -d)}
export BL_SAMPLES=$SAMPLES

if [ ! -d "$SAMPLES" ]; then
	echo "not ok - samples missing: $SAMPLES does not exist (the sample binlogs belong beside the checkout)"
	exit 1
fi

# ---- 1. fuzzing ----

if ! make --no-print-directory fuzz >"$LOGDIR/make-fuzz.log" 2>&1; then
	echo "not ok - fuzz/build: make fuzz failed"
	sed -e 's/^/# | /' "$LOGDIR/make-fuzz.log" | tail -40
	fuzz_built=0
else
	fuzz_built=1
fi

if [ $fuzz_built = 1 ] && ! bash test/fuzz/make-corpus.sh >"$LOGDIR/make-corpus.log" 2>&1; then
	echo "not ok - fuzz/corpus: test/fuzz/make-corpus.sh failed"
	sed -e 's/^/# | /' "$LOGDIR/make-corpus.log" | tail -20
	fuzz_built=0
fi
[ $fuzz_built = 1 ] && sed -e 's/^/# /' "$LOGDIR/make-corpus.log"

if [ $fuzz_built = 1 ]; then
	targets=${BLF_FUZZ_TARGETS:-$(for f in test/fuzz/fuzz_*.c; do basename "$f" .c; done)}
	for t in $targets; do
		bin=$FUZZ/$t
		corpus=$FUZZ/corpus-$t
		artifacts=$FUZZ/artifacts-$t
		log=$LOGDIR/fuzz-$t.log
		if [ ! -x "$bin" ]; then
			echo "not ok - fuzz/$t: $bin is not built"
			continue
		fi
		mkdir -p "$corpus" "$artifacts"
		before=$(find "$artifacts" -type f | wc -l)
		echo "# fuzz/$t: ${SECONDS_PER_TARGET}s on $(find "$corpus" -type f | wc -l) corpus inputs"
		ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
			"$bin" -max_total_time="$SECONDS_PER_TARGET" -timeout=5 -rss_limit_mb=2048 \
			-max_len=1048576 -detect_leaks=1 -print_final_stats=1 \
			-artifact_prefix="$artifacts/" "$corpus" >"$log" 2>&1
		rc=$?
		runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
		speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
		# shellcheck disable=SC2012  # libFuzzer names artifacts with hex digests
		newest=$(ls -t "$artifacts" 2>/dev/null | head -1)
		after=$(find "$artifacts" -type f | wc -l)
		if [ $rc -eq 0 ] && [ "$after" -eq "$before" ] && [ -n "$runs" ]; then
			echo "ok - fuzz/$t: ${runs} runs, 0 crashes (${speed:-?} exec/s)"
		else
			what=$(grep -m1 -E 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|fuzz oracle violated|SUMMARY:' "$log" |
				sed -e 's/^==[0-9]*==//' | cut -c1-200)
			repro=${newest:+$artifacts/$newest}
			echo "not ok - fuzz/$t: crash after ${runs:-?} runs (exit $rc): ${what:-see log}; reproducer: ${repro:-none written}; rerun: $bin $repro"
			grep -v -E '^#[0-9]+.*(NEW|REDUCE|pulse)' "$log" | tail -40 | sed -e 's/^/# | /'
		fi
	done
fi

# ---- 2. binlogcat under ASan + UBSan over the samples ----

ASAN_BIN=build/asan/binlogcat
mkdir -p build/asan
# shellcheck disable=SC2046,SC2086
if ! clang -std=gnu11 -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer -D_GNU_SOURCE -Isrc/decoder -Isrc/source \
	$(mariadb_config --cflags) -o "$ASAN_BIN" src/tools/binlogcat.c src/decoder/*.c \
	src/source/*.c $(mariadb_config --libs) -lisal -lzstd -lz -lm \
	-L"$(pg_config --pkglibdir)" -L"$(pg_config --libdir)" -lpgcommon -lpgport \
	>"$LOGDIR/asan-build.log" 2>&1; then
	echo "not ok - asan/build: building $ASAN_BIN failed"
	sed -e 's/^/# | /' "$LOGDIR/asan-build.log" | tail -40
	exit 1
fi

# Files that must be rejected (exit 1 with an error message), and why.
expect_failure() {
	case "$1" in
	*/binlog_truncated_event.000001 | */binlog_truncated_prev_gtid_event.000001 | \
		*/corrupt-relay-bin.000624)
		echo "deliberately broken" ;;
	*/ver_5_1-wl2325_r.001 | */ver_5_1-wl2325_s.001)
		echo "pre-release 5.2 event numbering" ;;
	*) if [ "$(head -c4 "$1" | od -An -tx1 | tr -d ' \n')" != "fe62696e" ]; then
		echo "not a binlog"
	fi ;;
	esac
}

n_files=0
while IFS= read -r -d '' f; do
	rel=${f#"$SAMPLES"/}
	case "$rel" in README.md | PROVENANCE.tsv) continue ;; esac
	n_files=$((n_files + 1))
	why=$(expect_failure "$f")
	problem=
	for mode in "" --values; do
		err=$LOGDIR/asan-err.txt
		# shellcheck disable=SC2086
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
			"$ASAN_BIN" --no-follow $mode "$f" >/dev/null 2>"$err"
		rc=$?
		if grep -q -E 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|SUMMARY: ' "$err"; then
			problem="sanitizer report${mode:+ ($mode)}: $(grep -m1 -E 'ERROR:|runtime error:' "$err" | sed 's/^==[0-9]*==//' | cut -c1-200)"
			sed -e 's/^/# | /' "$err" | head -40
		elif [ $rc -gt 1 ]; then
			problem="exit status $rc${mode:+ ($mode)} (signal or crash)"
			sed -e 's/^/# | /' "$err" | tail -20
		elif [ -n "$why" ]; then
			if [ $rc -ne 1 ] || ! grep -q '^binlogcat: .*error' "$err"; then
				problem="${why}: expected exit 1 with an error message, got exit $rc${mode:+ ($mode)}"
			elif [ -z "$mode" ]; then
				echo "# asan/$rel ($why): $(grep -m1 '^binlogcat: ' "$err" | cut -c1-200)"
			fi
		elif [ $rc -ne 0 ]; then
			problem="exit $rc${mode:+ ($mode)}: $(grep -m1 '^binlogcat: ' "$err" | cut -c1-200)"
		fi
		[ -n "$problem" ] && break
	done
	if [ -n "$problem" ]; then
		echo "not ok - asan/$rel: $problem"
	else
		echo "ok - asan/$rel"
	fi
done < <(find "$SAMPLES" -type f -print0 | sort -z)

if [ $n_files -eq 0 ]; then
	echo "not ok - samples missing: no files in $SAMPLES"
fi
exit 0
