#!/usr/bin/env bash
# test/suites/30-samples.sh -- binlogcat against the shared corpus of real
# MySQL/MariaDB binlogs (../shared/binlog-samples, 69 files from MySQL
# 5.0-9.6 and MariaDB 10.0-11.8; see its README.md and PROVENANCE.tsv).
#
# The checks are in test/samples/check_samples.py (standard library Python):
# complete decoding of every well-formed file (events, types, positions,
# checksums), clean failures on the damaged and pre-release files, rejection
# of the non-binlog files, explicit value expectations (JSON and partial JSON,
# zstd payloads, ENUM/SET, BIT, TIME2, invisible columns, tagged GTIDs,
# VECTOR, MariaDB GTIDs, sakila), zalora/binlog-parser's expected outputs,
# and a value-by-value cross-check of the row images with mariadb-binlog.
# One case line per file per check; well under a minute.
#
# Needs ./binlogcat (built by make; test/run.sh builds it) and mariadb-binlog.
# The samples are read in place and never copied into the project; when they
# are missing the suite fails ("not ok - samples missing").
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"

SAMPLES=$(cd "$BLF_ROOT/.." && pwd)/shared/binlog-samples
if [ ! -d "$SAMPLES" ] || [ ! -f "$SAMPLES/PROVENANCE.tsv" ]; then
	echo "not ok - samples missing: $SAMPLES not found (../shared/binlog-samples beside the project)"
	exit 1
fi
if [ ! -x "$BLF_ROOT/binlogcat" ]; then
	echo "not ok - samples: $BLF_ROOT/binlogcat is not built (make)"
	exit 1
fi

cd "$BLF_ROOT"
BLF_SAMPLES=$SAMPLES exec /usr/bin/python3 "$BLF_ROOT/test/samples/check_samples.py"
