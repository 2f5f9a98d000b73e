#!/usr/bin/env bash
# scripts/install-npm.sh -- install the npm packages of the MySQL test source
# (test/mysql_source: mysql2, pinned by its package-lock.json) into
# test/mysql_source/node_modules with `npm ci`.  Idempotent: nothing is done
# when the installed tree matches the lockfile (< 1 s).  Needs node and npm
# (Debian's nodejs and npm, scripts/install-deps.sh).
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
DIR=$BLF_ROOT/test/mysql_source

command -v npm >/dev/null || {
	echo "install-npm: npm is not installed (scripts/install-deps.sh installs nodejs and npm)" >&2
	exit 1
}
# npm ci leaves node_modules/.package-lock.json; same content = same tree
if [ -f "$DIR/node_modules/.package-lock.json" ] && [ -f "$DIR/node_modules/mysql2/package.json" ] &&
	node -e '
		const a = require(process.argv[1]).packages, b = require(process.argv[2]).packages;
		const ka = Object.keys(a).filter((k) => k), kb = Object.keys(b).filter((k) => k);
		process.exit(ka.length === kb.length && ka.every((k) => b[k] && b[k].version === a[k].version) ? 0 : 1);
	' "$DIR/package-lock.json" "$DIR/node_modules/.package-lock.json" 2>/dev/null; then
	echo "install-npm: test/mysql_source packages already installed"
	exit 0
fi
echo "install-npm: npm ci in test/mysql_source"
(cd "$DIR" && npm ci --no-audit --no-fund --loglevel=error)
