# scripts/env.sh -- shared settings for binlog_fdw's scripts, tests and demos.
# shellcheck shell=bash disable=SC2034  # variables are used by the scripts that source this file
#
# Source it (". scripts/env.sh"); it only defines and exports variables and
# helper functions.  Every variable can be overridden from the environment.
#
#   BLF_ROOT            project root (derived from this file's location)
#   BLF_RUN             run directory for throwaway servers and logs
#                       (default /var/tmp/binlog_fdw; must be traversable by
#                       the postgres and mysql users, so never under /root)
#   BLF_LOG_DIR         test/build logs ($BLF_RUN/logs)
#   BLF_MARIADB_PORT    port of the "main" MariaDB instance (3406)
#   BLF_MARIADB_DATA / _SOCKET / _LOG / _PIDFILE   files of the main instance
#   BLF_MYSQL_USER / BLF_MYSQL_PASSWORD            replication account (repl/repl)
#   BLF_PG_PORT         port of the "main" PostgreSQL cluster (5440)
#   BLF_PG_BINDIR       PostgreSQL 15 server binaries
#   BLF_PG_DATA / _SOCKET_DIR / _LOG               files of the main cluster
#   BLF_PG_PRELOAD      shared_preload_libraries ('binlog_fdw,pg_cron')
#
# Instances other than "main" use the same layout with their own name:
# $BLF_RUN/mariadb-NAME/, $BLF_RUN/mariadb-NAME.sock, $BLF_RUN/pg-NAME/ ...
# (see blf_mariadb_paths / blf_pg_paths below).

if [ -z "${BLF_ROOT:-}" ]; then
	BLF_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
fi
: "${BLF_RUN:=/var/tmp/binlog_fdw}"
: "${BLF_LOG_DIR:=$BLF_RUN/logs}"

: "${BLF_MARIADB_PORT:=3406}"
: "${BLF_MARIADB_DATA:=$BLF_RUN/mariadb-main}"
: "${BLF_MARIADB_SOCKET:=$BLF_RUN/mariadb-main.sock}"
: "${BLF_MARIADB_LOG:=$BLF_MARIADB_DATA/mariadbd.log}"
: "${BLF_MARIADB_PIDFILE:=$BLF_MARIADB_DATA/mariadbd.pid}"
: "${BLF_MYSQL_USER:=repl}"
: "${BLF_MYSQL_PASSWORD:=repl}"

: "${BLF_PG_PORT:=5440}"
: "${BLF_PG_BINDIR:=/usr/lib/postgresql/15/bin}"
: "${BLF_PG_DATA:=$BLF_RUN/pg-main}"
: "${BLF_PG_SOCKET_DIR:=$BLF_RUN}"
: "${BLF_PG_LOG:=$BLF_PG_DATA/postgresql.log}"
# ${VAR-default}: an explicitly empty BLF_PG_PRELOAD means "preload nothing".
BLF_PG_PRELOAD=${BLF_PG_PRELOAD-binlog_fdw,pg_cron}

export BLF_ROOT BLF_RUN BLF_LOG_DIR
export BLF_MARIADB_PORT BLF_MARIADB_DATA BLF_MARIADB_SOCKET BLF_MARIADB_LOG
export BLF_MARIADB_PIDFILE BLF_MYSQL_USER BLF_MYSQL_PASSWORD
export BLF_PG_PORT BLF_PG_BINDIR BLF_PG_DATA BLF_PG_SOCKET_DIR BLF_PG_LOG
export BLF_PG_PRELOAD

# blf_mariadb_paths NAME: sets MDB_DATA MDB_SOCKET MDB_LOG MDB_PIDFILE for an
# instance ("main" honours the BLF_MARIADB_* overrides above).
blf_mariadb_paths() {
	if [ "$1" = main ]; then
		MDB_DATA=$BLF_MARIADB_DATA
		MDB_SOCKET=$BLF_MARIADB_SOCKET
		MDB_LOG=$BLF_MARIADB_LOG
		MDB_PIDFILE=$BLF_MARIADB_PIDFILE
	else
		MDB_DATA=$BLF_RUN/mariadb-$1
		MDB_SOCKET=$BLF_RUN/mariadb-$1.sock
		MDB_LOG=$MDB_DATA/mariadbd.log
		MDB_PIDFILE=$MDB_DATA/mariadbd.pid
	fi
}

# blf_pg_paths NAME: sets PGI_DATA PGI_LOG for a cluster (sockets of all
# clusters live in $BLF_PG_SOCKET_DIR, told apart by port).
blf_pg_paths() {
	if [ "$1" = main ]; then
		PGI_DATA=$BLF_PG_DATA
		PGI_LOG=$BLF_PG_LOG
	else
		PGI_DATA=$BLF_RUN/pg-$1
		PGI_LOG=$PGI_DATA/postgresql.log
	fi
}

# blf_prepare_run: create $BLF_RUN (sticky and world-writable like /tmp: the
# mysql and postgres users put their sockets there) and the log directory.
blf_prepare_run() {
	mkdir -p "$BLF_RUN" "$BLF_LOG_DIR"
	if [ "$(id -u)" -eq 0 ]; then
		chmod 1777 "$BLF_RUN"
	fi
	case "$BLF_RUN" in
	/root | /root/*)
		echo "warning: BLF_RUN=$BLF_RUN is under /root, which the postgres and mysql users cannot traverse" >&2 ;;
	esac
}

# blf_detach LOGFILE CMD...: run CMD in the background in a new session with
# stdin from /dev/null, stdout/stderr appended to LOGFILE and every other
# inherited descriptor closed, so it never holds a caller's pipe open.
# Sets BLF_DETACHED_PID.
blf_detach() {
	local log=$1
	shift
	(
		for fd in "/proc/$BASHPID/fd/"*; do
			fd=${fd##*/}
			if [ "$fd" -gt 2 ] 2>/dev/null; then
				eval "exec $fd>&-" 2>/dev/null || true
			fi
		done
		exec setsid "$@" </dev/null >>"$log" 2>&1
	) &
	BLF_DETACHED_PID=$!
}

# blf_pid_alive PID: true if PID exists and is not a zombie.
blf_pid_alive() {
	local state
	[ -n "${1:-}" ] || return 1
	[ -r "/proc/$1/stat" ] || return 1
	state=$(sed -e 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1) || return 1
	[ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

# blf_port_in_use PORT: true if something listens on TCP PORT.
blf_port_in_use() {
	[ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]
}

# blf_log_tail FILE [N]: print the last N (40) lines of FILE, prefixed.
blf_log_tail() {
	local f=$1 n=${2:-40}
	if [ -r "$f" ]; then
		echo "---- last $n lines of $f ----" >&2
		tail -n "$n" "$f" >&2
		echo "---- end of $f ----" >&2
	else
		echo "(no log file $f)" >&2
	fi
}
