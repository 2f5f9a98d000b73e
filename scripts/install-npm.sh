#!/usr/bin/env bash
# scripts/install-npm.sh -- install the project's npm packages, each pinned by
# its committed package-lock.json, with `npm ci`:
#   test/mysql_source  mysql2 (the MySQL test source)
#   clients/node       pg@8.23.1 (node-postgres: the client recipe of
#                      docs/clients.md, used by bench/streaming and suite 60)
# into DIR/node_modules.  Idempotent: nothing is done for a directory whose
# installed tree matches its lockfile (< 1 s).  Needs node and npm (Debian's
# nodejs and npm, scripts/install-deps.sh).
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/env.sh"

command -v npm >/dev/null || {
	echo "install-npm: npm is not installed (scripts/install-deps.sh installs nodejs and npm)" >&2
	exit 1
}
for spec in test/mysql_source:mysql2 clients/node:pg; do
	rel=${spec%%:*}
	main=${spec#*:}
	DIR=$BLF_ROOT/$rel
	# npm ci leaves node_modules/.package-lock.json; same content = same tree
	if [ -f "$DIR/node_modules/.package-lock.json" ] && [ -f "$DIR/node_modules/$main/package.json" ] &&
		node -e '
			const a = require(process.argv[1]).packages, b = require(process.argv[2]).packages;
			const ka = Object.keys(a).filter((k) => k), kb = Object.keys(b).filter((k) => k);
			process.exit(ka.length === kb.length && ka.every((k) => b[k] && b[k].version === a[k].version) ? 0 : 1);
		' "$DIR/package-lock.json" "$DIR/node_modules/.package-lock.json" 2>/dev/null; then
		echo "install-npm: $rel packages already installed"
		continue
	fi
	echo "install-npm: npm ci in $rel"
	(cd "$DIR" && npm ci --no-audit --no-fund --loglevel=error)
done
