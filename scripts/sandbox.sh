#!/usr/bin/env bash
# scripts/sandbox.sh -- run a command (the tests, a demo, a benchmark) in a
# sandbox of its own, so that several checkouts can test at once on one
# machine: a network namespace (its own loopback, so the fixed ports of the
# suites do not clash), its own run directory and its own PostgreSQL tree
# (a copy of Debian's /usr/lib/postgresql/15 and /usr/share/postgresql/15)
# that the build is installed into instead of the system's.  Developer
# tool, as root; CI does not use it.
#
# usage: scripts/sandbox.sh NAME CMD...      e.g.
#        scripts/sandbox.sh h1 bash test/run.sh 60-streaming
#        scripts/sandbox.sh h1 --destroy      (servers killed, files removed)
#
# Inside, BLF_RUN=/var/tmp/blf-sbx-NAME/run, BLF_DESTDIR and BLF_PG_BINDIR
# point at the private tree (test/run.sh installs with DESTDIR=$BLF_DESTDIR),
# (the build itself uses the system's pg_config, for the headers).
set -euo pipefail

if [ $# -lt 2 ]; then
	sed -n '2,16p' "$0" >&2
	exit 2
fi
name=$1
shift
case "$name" in
*[!a-zA-Z0-9_-]*) echo "sandbox: bad name '$name'" >&2; exit 2 ;;
esac
[ "$(id -u)" -eq 0 ] || { echo "sandbox: run as root" >&2; exit 1; }

base=/var/tmp/blf-sbx-$name
ns=blf-$name

if [ "$1" = --destroy ]; then
	if ip netns pids "$ns" >/dev/null 2>&1; then
		for p in $(ip netns pids "$ns"); do kill -9 "$p" 2>/dev/null || true; done
		ip netns del "$ns" || true
	fi
	rm -rf "$base"
	exit 0
fi

inst=$base/inst
if [ ! -x "$inst/usr/lib/postgresql/15/bin/postgres" ]; then
	mkdir -p "$inst/usr/lib/postgresql" "$inst/usr/share/postgresql"
	cp -a /usr/lib/postgresql/15 "$inst/usr/lib/postgresql/"
	cp -a /usr/share/postgresql/15 "$inst/usr/share/postgresql/"
	mkdir -p "$inst/usr/bin"
fi
chmod 755 "$base" "$inst" 2>/dev/null || true

if ! ip netns list | grep -qw "^$ns"; then
	ip netns add "$ns"
fi
ip -n "$ns" link set lo up

export BLF_RUN=$base/run
export BLF_DESTDIR=$inst
export BLF_PG_BINDIR=$inst/usr/lib/postgresql/15/bin
mkdir -p "$BLF_RUN"
chmod 1777 "$BLF_RUN"
exec ip netns exec "$ns" "$@"
