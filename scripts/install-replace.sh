#!/bin/sh
# scripts/install-replace.sh SRC DEST -- install a shared library by rename
# (the Makefile's INSTALL_SHLIB).  install(1) rewrites an existing file in
# place, and every running PostgreSQL process that has the old library
# mapped then executes the new bytes and crashes; a rename leaves them the
# old file until they exit (the server must still be restarted to use the
# new library).
set -e
src=$1
dest=$2
# a library being linked by a concurrent make is empty or truncated
if [ ! -s "$src" ] || [ "$(head -c 4 "$src" | od -An -c | tr -d ' ')" != '177ELF' ]; then
	echo "install-replace.sh: $src is not a complete shared library; not installed" >&2
	exit 1
fi
tmp=$dest.tmp.$$
trap 'rm -f "$tmp"' EXIT
install -c -m 755 "$src" "$tmp"
mv -f "$tmp" "$dest"
trap - EXIT
