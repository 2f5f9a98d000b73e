#!/usr/bin/env bash
# 05-layout: the parts of src/ include only the parts below them, and each
# PostgreSQL-side part has one header (test/layout/check_layout.py).
set -u
exec python3 "$BLF_ROOT/test/layout/check_layout.py"
