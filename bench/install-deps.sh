#!/usr/bin/env bash
# bench/install-deps.sh -- packages of the benchmarks only (not of CI):
# everything scripts/install-deps.sh installs, plus matplotlib (charts),
# GNU time, pgloader (the anchor of bench/load), and with --node Node.js
# and npm (the zongji anchors of bench/streaming; skipped when a node and
# npm are already on PATH).
# Idempotent; as root on Debian 12.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

bash "$ROOT/scripts/install-deps.sh"

PACKAGES=(python3-matplotlib python3-psycopg2 python3-psycopg python3-pymysql time linux-perf pgloader)
if [ "${1:-}" = --node ] && ! { command -v node >/dev/null && command -v npm >/dev/null; }; then
	PACKAGES+=(nodejs npm)
fi
missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "bench/install-deps: all benchmark packages installed"
else
	[ "$(id -u)" -eq 0 ] || { echo "bench/install-deps: missing ${missing[*]}; run as root" >&2; exit 1; }
	export DEBIAN_FRONTEND=noninteractive
	echo "bench/install-deps: installing ${missing[*]}"
	apt-get install -y -q --no-install-recommends -o Dpkg::Use-Pty=0 "${missing[@]}" ||
		{ apt-get update -q && apt-get install -y -q --no-install-recommends -o Dpkg::Use-Pty=0 "${missing[@]}"; }
fi

# the zongji anchors of bench/streaming, from its committed lockfile: here,
# where the npm registry is reachable (a scripts/sandbox.sh run is not)
if command -v npm >/dev/null &&
	! (cd "$ROOT/bench/streaming" && node -e 'require.resolve("zongji"); require.resolve("@vlasky/zongji")' 2>/dev/null); then
	echo "bench/install-deps: npm ci in bench/streaming (zongji, @vlasky/zongji)"
	(cd "$ROOT/bench/streaming" && npm ci --no-audit --no-fund --loglevel=error)
fi
