#!/usr/bin/env bash
# scripts/install-deps.sh -- install (as root, Debian 12) every package that
# binlog_fdw needs to build, test, fuzz and demo, and (install-npm.sh) the
# npm packages of the MySQL test source.  Idempotent: when all the
# packages are already installed it does not touch apt at all (< 1 s).
# apt-get update runs only when a package has no install candidate yet (fresh
# machine with empty lists) or when an install fails on stale lists.
set -euo pipefail

PACKAGES=(
	# PostgreSQL 15 server, headers/PGXS, pg_cron, PostGIS (GEOMETRY targets)
	postgresql-15 postgresql-server-dev-15 postgresql-15-cron postgresql-15-postgis-3
	# MariaDB 10.11 server and client, Connector/C headers
	mariadb-server mariadb-client default-libmysqlclient-dev
	# libraries the extension links with
	libssl-dev libzstd-dev zlib1g-dev
	# ISA-L: fast CRC32 of binlog event checksums
	libisal-dev
	# build and test tools (TAP tests need IPC::Run)
	libipc-run-perl pkg-config make gcc
	# clang 14 with libFuzzer and sanitizer runtimes
	clang libclang-rt-14-dev
	valgrind openssl
	# metrics: the exporter the monitoring test runs (docs/metrics)
	prometheus-postgres-exporter
	# test and benchmark helpers
	python3 python3-pymysql python3-psycopg2
	# the client recipe (clients/python, docs/clients.md): psycopg 3
	python3-psycopg
	procps iproute2 ca-certificates
)
# the MySQL test source (test/mysql_source; its npm packages: install-npm.sh)
# runs on Node.js: Debian's nodejs and npm, unless a node with npm is there
# already (an image's nodejs that bundles npm conflicts with Debian's npm)
if ! { command -v node >/dev/null && command -v npm >/dev/null; }; then
	PACKAGES+=(nodejs npm)
fi

# One dpkg-query call for all packages (unknown ones are simply not listed).
installed=" $(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${PACKAGES[@]}" 2>/dev/null |
	awk '$2 == "installed" { printf "%s ", $1 }' || true) "
missing=()
for p in "${PACKAGES[@]}"; do
	case "$installed" in
	*" $p "*) ;;
	*) missing+=("$p") ;;
	esac
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all ${#PACKAGES[@]} packages already installed"
	bash "$(dirname "${BASH_SOURCE[0]}")/install-npm.sh"
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages: ${missing[*]}" >&2
	echo "install-deps: run this script as root to install them" >&2
	exit 1
fi

echo "install-deps: installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
APT_OPTS=(-y -q --no-install-recommends -o Dpkg::Use-Pty=0)

# Update the package lists only if one of the missing packages has no
# install candidate (empty or outdated lists).
need_update=0
for p in "${missing[@]}"; do
	cand=$(apt-cache policy "$p" 2>/dev/null | awk '/Candidate:/ { print $2 }')
	if [ -z "$cand" ] || [ "$cand" = "(none)" ]; then
		need_update=1
		break
	fi
done
if [ $need_update -eq 1 ]; then
	apt-get update -q
fi

if ! apt-get install "${APT_OPTS[@]}" "${missing[@]}"; then
	# Most likely stale lists (404 on a superseded .deb): refresh and retry once.
	echo "install-deps: install failed, refreshing package lists and retrying" >&2
	apt-get update -q
	apt-get install "${APT_OPTS[@]}" "${missing[@]}"
fi

bash "$(dirname "${BASH_SOURCE[0]}")/install-npm.sh"
echo "install-deps: done"
