#!/usr/bin/env bash
# scripts/mariadb.sh -- manage throwaway MariaDB 10.11 instances on loopback
# (CDC sources for binlog_fdw's tests, demos and benchmarks).
#
# usage: mariadb.sh ACTION [--name NAME] [--port P] [options] [-- mariadbd args]
#   start     initialize on first use (data in $BLF_RUN/mariadb-NAME, the
#             replication account $BLF_MYSQL_USER/$BLF_MYSQL_PASSWORD is
#             created), start detached, wait until it answers
#             --fresh: stop (SIGKILL) and wipe the instance first
#   stop      clean shutdown; --kill: SIGKILL instead
#   restart   stop (clean, or --kill) then start
#   status    exit 0 if running, 1 if not
#   sql       run the mariadb client as root over the socket (utf8mb4); the remaining
#             arguments go to the client (mariadb.sh sql -e 'select 1', or SQL
#             on stdin); --name/--port must come before them
#   wait      wait until the server answers (--timeout S, default 60)
#   destroy   stop (SIGKILL) and delete the instance's files
#   port      print the instance's port
#
# --name NAME   instance name (default main)
# --port P      TCP port (default $BLF_MARIADB_PORT for main; another instance
#               needs --port on its first start, later its port is remembered)
# --timeout S   start/stop/wait timeout in seconds (default 60)
# -- ARGS       extra mariadbd arguments, appended after the defaults (so they
#               override them, e.g. -- --binlog-row-image=MINIMAL --server-id=2).
#               They are stored in the data dir: a later start/restart without
#               "--" reuses them; "--" alone clears them.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/env.sh"

usage() {
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//' >&2
	exit 2
}

[ $# -ge 1 ] || usage
ACTION=$1
shift

NAME=main
PORT=
TIMEOUT=60
KILL=0
FRESH=0
HAVE_EXTRA=0
EXTRA=()
PASS=()

while [ $# -gt 0 ]; do
	case "$1" in
	--name) NAME=${2:?--name needs a value}; shift 2 ;;
	--name=*) NAME=${1#--name=}; shift ;;
	--port) PORT=${2:?--port needs a value}; shift 2 ;;
	--port=*) PORT=${1#--port=}; shift ;;
	--timeout) TIMEOUT=${2:?--timeout needs a value}; shift 2 ;;
	--timeout=*) TIMEOUT=${1#--timeout=}; shift ;;
	--kill) KILL=1; shift ;;
	--fresh) FRESH=1; shift ;;
	-h | --help)
		# psql/mariadb take -h (host) themselves
		if [ "$ACTION" = sql ]; then
			PASS=("$@")
			break
		fi
		usage ;;
	--)
		shift
		if [ "$ACTION" = sql ]; then
			PASS=("$@")
		else
			HAVE_EXTRA=1
			EXTRA=("$@")
		fi
		break ;;
	*)
		if [ "$ACTION" = sql ]; then
			PASS=("$@")
			break
		fi
		echo "mariadb.sh: unknown option: $1" >&2
		usage ;;
	esac
done

case "$NAME" in
'' | *[!A-Za-z0-9_-]*) echo "mariadb.sh: bad instance name '$NAME'" >&2; exit 2 ;;
esac

blf_mariadb_paths "$NAME"
PORT_FILE=$MDB_DATA/blf-port
ARGS_FILE=$MDB_DATA/blf-args
ACCOUNTS_DONE=$MDB_DATA/blf-accounts-created

if [ "$(id -u)" -eq 0 ]; then
	RUN_USER=mysql
else
	RUN_USER=$(id -un)
fi

log() { echo "mariadb[$NAME]: $*" >&2; }
die() { log "$*"; exit 1; }

client() {
	mariadb --no-defaults --user=root --socket="$MDB_SOCKET" --default-character-set=utf8mb4 --connect-timeout=5 "$@"
}

server_pid() {
	local pid comm
	[ -r "$MDB_PIDFILE" ] || return 1
	pid=$(tr -dc '0-9' <"$MDB_PIDFILE")
	blf_pid_alive "$pid" || return 1
	comm=$(cat "/proc/$pid/comm" 2>/dev/null || true)
	case "$comm" in
	mariadbd | mysqld) echo "$pid" ;;
	*) return 1 ;;
	esac
}

is_running() { server_pid >/dev/null; }

answers() {
	mariadb-admin --no-defaults --user=root --socket="$MDB_SOCKET" \
		--connect-timeout=2 ping >/dev/null 2>&1
}

resolve_port() {
	if [ -n "$PORT" ]; then
		:
	elif [ "$NAME" = main ]; then
		PORT=$BLF_MARIADB_PORT
	elif [ -r "$PORT_FILE" ]; then
		PORT=$(cat "$PORT_FILE")
	else
		die "instance '$NAME' has no port yet: give --port on its first start"
	fi
	case "$PORT" in
	'' | *[!0-9]*) die "bad port '$PORT'" ;;
	esac
}

wait_ready() {
	# wait_ready PID_OR_EMPTY: until the server answers, or dies, or times out.
	local pid=${1:-} deadline=$((SECONDS + TIMEOUT))
	while ! answers; do
		if [ -n "$pid" ] && ! blf_pid_alive "$pid"; then
			log "mariadbd exited during startup"
			blf_log_tail "$MDB_LOG"
			return 1
		fi
		if [ $SECONDS -ge $deadline ]; then
			log "not answering after ${TIMEOUT}s"
			blf_log_tail "$MDB_LOG"
			return 1
		fi
		sleep 0.1
	done
}

wait_gone() {
	local pid=$1 deadline=$((SECONDS + TIMEOUT))
	while blf_pid_alive "$pid"; do
		[ $SECONDS -lt $deadline ] || return 1
		sleep 0.1
	done
}

do_kill() {
	local pid
	if pid=$(server_pid); then
		kill -KILL "$pid" 2>/dev/null || true
		wait_gone "$pid" || die "pid $pid survived SIGKILL"
		log "killed (pid $pid)"
	fi
	rm -f "$MDB_PIDFILE" "$MDB_SOCKET" "$MDB_SOCKET.lock"
}

do_stop() {
	local pid
	if ! pid=$(server_pid); then
		log "not running"
		rm -f "$MDB_SOCKET" "$MDB_SOCKET.lock"
		return 0
	fi
	if [ $KILL -eq 1 ]; then
		do_kill
		return 0
	fi
	if ! mariadb-admin --no-defaults --user=root --socket="$MDB_SOCKET" \
		--connect-timeout=5 --shutdown-timeout="$TIMEOUT" shutdown >/dev/null 2>&1; then
		kill -TERM "$pid" 2>/dev/null || true
	fi
	if ! wait_gone "$pid"; then
		log "still running ${TIMEOUT}s after shutdown request; sending SIGKILL"
		do_kill
		return 0
	fi
	rm -f "$MDB_SOCKET" "$MDB_SOCKET.lock"
	log "stopped"
}

# make_tmpdir: the instance's own temporary directory (MDB_TMPDIR) instead
# of the shared /tmp: mariadb-install-db has failed with "Could not remove
# temporary table '/tmp/#sql-temptable-...'" while other instances ran.
make_tmpdir() {
	MDB_TMPDIR=$BLF_RUN/mariadb-$NAME.tmp
	mkdir -p "$MDB_TMPDIR"
	chown "$RUN_USER:" "$MDB_TMPDIR" 2>/dev/null || true
	chmod 700 "$MDB_TMPDIR"
}

initialize() {
	log "initializing $MDB_DATA"
	mkdir -p "$MDB_DATA"
	chown "$RUN_USER:" "$MDB_DATA" 2>/dev/null || true
	chmod 750 "$MDB_DATA"
	make_tmpdir
	if ! mariadb-install-db --no-defaults --user="$RUN_USER" --datadir="$MDB_DATA" \
		--tmpdir="$MDB_TMPDIR" \
		--auth-root-authentication-method=normal --skip-test-db \
		>"$BLF_RUN/mariadb-$NAME-install.log" 2>&1; then
		log "mariadb-install-db failed"
		blf_log_tail "$BLF_RUN/mariadb-$NAME-install.log"
		exit 1
	fi
	rm -f "$BLF_RUN/mariadb-$NAME-install.log"
}

create_accounts() {
	local u=$BLF_MYSQL_USER pw host privs sql ok=0
	pw=${BLF_MYSQL_PASSWORD//\\/\\\\}
	pw=${pw//\'/\\\'}
	# sql_log_bin=0: keep the accounts out of the binlog (tests read it from the start)
	sql="SET SESSION sql_log_bin = 0; DELETE FROM mysql.global_priv WHERE User = ''; FLUSH PRIVILEGES;"
	for host in '%' localhost 127.0.0.1; do
		sql+=" CREATE USER IF NOT EXISTS '$u'@'$host' IDENTIFIED BY '$pw';"
		sql+=" ALTER USER '$u'@'$host' IDENTIFIED BY '$pw';"
	done
	client -e "$sql" || die "could not create account $u"
	# What a CDC replica needs: read the binlog (REPLICATION SLAVE), see binlog
	# positions and GTIDs (BINLOG MONITOR, the 10.5+ name of REPLICATION
	# CLIENT; SLAVE MONITOR since 10.5.9), and snapshot tables (SELECT, SHOW
	# VIEW, RELOAD, LOCK TABLES).  Fall back for servers lacking newer names.
	for privs in \
		"REPLICATION SLAVE, BINLOG MONITOR, SLAVE MONITOR, SELECT, SHOW VIEW, RELOAD, LOCK TABLES" \
		"REPLICATION SLAVE, BINLOG MONITOR, SELECT, SHOW VIEW, RELOAD, LOCK TABLES" \
		"REPLICATION SLAVE, REPLICATION CLIENT, SELECT, SHOW VIEW, RELOAD, LOCK TABLES"; do
		sql="SET SESSION sql_log_bin = 0;"
		for host in '%' localhost 127.0.0.1; do
			sql+=" GRANT $privs ON *.* TO '$u'@'$host';"
		done
		if client -e "$sql" 2>/dev/null; then
			ok=1
			break
		fi
	done
	[ $ok -eq 1 ] || die "could not grant replication privileges to $u"
	touch "$ACCOUNTS_DONE"
	log "account $u@{%,localhost,127.0.0.1}: $privs ON *.*"
}

do_start() {
	local pid stored=()
	if [ $FRESH -eq 1 ]; then
		do_kill
		rm -rf "$MDB_DATA"
	fi
	if pid=$(server_pid); then
		if [ $HAVE_EXTRA -eq 1 ]; then
			die "already running (pid $pid); use restart to apply new mariadbd arguments"
		fi
		log "already running (pid $pid)"
		wait_ready "$pid"
		return 0
	fi

	command -v mariadbd >/dev/null || die "mariadbd not found: run scripts/install-deps.sh"
	blf_prepare_run
	resolve_port
	if blf_port_in_use "$PORT"; then
		log "TCP port $PORT is already in use:"
		ss -Hltnp "sport = :$PORT" >&2 || true
		exit 1
	fi

	[ -d "$MDB_DATA/mysql" ] || initialize

	if [ $HAVE_EXTRA -eq 1 ]; then
		if [ ${#EXTRA[@]} -gt 0 ]; then
			printf '%s\n' "${EXTRA[@]}" >"$ARGS_FILE"
		else
			: >"$ARGS_FILE"
		fi
	elif [ -r "$ARGS_FILE" ]; then
		mapfile -t stored <"$ARGS_FILE"
		EXTRA=("${stored[@]}")
	fi
	echo "$PORT" >"$PORT_FILE"

	rm -f "$MDB_SOCKET" "$MDB_SOCKET.lock" "$MDB_PIDFILE"
	touch "$MDB_LOG"
	chown "$RUN_USER:" "$MDB_LOG" 2>/dev/null || true

	make_tmpdir
	local args=(
		--no-defaults
		--datadir="$MDB_DATA"
		--tmpdir="$MDB_TMPDIR"
		--port="$PORT"
		--bind-address=127.0.0.1
		--socket="$MDB_SOCKET"
		--pid-file="$MDB_PIDFILE"
		--log-error="$MDB_LOG"
		--log-bin=mysql-bin
		--binlog-format=ROW
		--server-id=1
		--binlog-row-metadata=FULL
		--binlog-row-image=FULL
		--character-set-server=utf8mb4
		--collation-server=utf8mb4_general_ci
		--gtid-strict-mode=1
		--binlog-checksum=CRC32
		--max-allowed-packet=1G
	)
	if [ "$(id -u)" -eq 0 ]; then
		args=(--no-defaults --user=mysql "${args[@]:1}")
	fi
	args+=("${EXTRA[@]}")

	echo "=== $(date '+%F %T') start: mariadbd ${args[*]}" >>"$MDB_LOG"
	blf_detach "$MDB_LOG" mariadbd "${args[@]}"
	pid=$BLF_DETACHED_PID
	wait_ready "$pid" || { do_kill >/dev/null 2>&1 || true; exit 1; }

	[ -e "$ACCOUNTS_DONE" ] || create_accounts
	log "running (pid $(server_pid || echo "$pid"), port $PORT, socket $MDB_SOCKET${EXTRA:+, extra: ${EXTRA[*]}})"
}

case "$ACTION" in
start) do_start ;;
stop) do_stop ;;
restart)
	do_stop
	KILL=0
	do_start ;;
status)
	if pid=$(server_pid); then
		echo "mariadb[$NAME]: running (pid $pid, port $(cat "$PORT_FILE" 2>/dev/null || echo '?'), socket $MDB_SOCKET)"
		exit 0
	fi
	echo "mariadb[$NAME]: not running"
	exit 1 ;;
sql)
	is_running || die "not running (start it with: scripts/mariadb.sh start --name $NAME)"
	exec mariadb --no-defaults --user=root --socket="$MDB_SOCKET" --default-character-set=utf8mb4 ${PASS[@]+"${PASS[@]}"} ;;
wait)
	wait_ready "$(server_pid || true)" ;;
destroy)
	do_kill
	rm -rf "$MDB_DATA" "$BLF_RUN/mariadb-$NAME.tmp"
	rm -f "$MDB_SOCKET" "$MDB_SOCKET.lock"
	log "destroyed" ;;
port)
	resolve_port
	echo "$PORT" ;;
*)
	echo "mariadb.sh: unknown action: $ACTION" >&2
	usage ;;
esac
