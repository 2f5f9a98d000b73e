#!/usr/bin/env bash
# scripts/postgres.sh -- manage throwaway PostgreSQL 15 clusters on loopback
# (targets for binlog_fdw's tests, demos and benchmarks), run as the postgres
# user (initdb and postgres refuse to run as root).
#
# usage: postgres.sh ACTION [--name NAME] [--port P] [options] [-- postgres args]
#   start     initdb on first use (data in $BLF_RUN/pg-NAME), start with
#             pg_ctl -w, log to postgresql.log in the data dir
#             --fresh: stop (immediate) and wipe the cluster first
#   stop      --mode fast|smart|immediate (default fast)
#   restart   stop (--mode) then start
#   status    exit 0 if running, 1 if not
#   psql      run psql as the postgres superuser on the cluster; the remaining
#             arguments go to psql (-X and ON_ERROR_STOP=1 are preset; the
#             database defaults to postgres); --name/--port must come first
#   wait      wait until the cluster accepts connections (--timeout S)
#   destroy   stop (immediate) and delete the cluster
#   port      print the cluster's port
#
# --name NAME   cluster name (default main)
# --port P      port (default $BLF_PG_PORT for main; another cluster needs
#               --port on its first start, later its port is remembered)
# --timeout S   start/stop/wait timeout in seconds (default 60)
# -- ARGS       extra postgres arguments (e.g. -- -c work_mem=64MB), stored in
#               the data dir and reused by later starts; "--" alone clears them
#
# Environment: BLF_PG_PRELOAD (shared_preload_libraries, default
# 'binlog_fdw,pg_cron'; re-read at every start), BLF_PG_BINDIR, BLF_RUN.
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
MODE=fast
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
	--mode) MODE=${2:?--mode needs a value}; shift 2 ;;
	--mode=*) MODE=${1#--mode=}; shift ;;
	--fresh) FRESH=1; shift ;;
	-h | --help)
		# psql/mariadb take -h (host) themselves
		if [ "$ACTION" = psql ]; then
			PASS=("$@")
			break
		fi
		usage ;;
	--)
		shift
		if [ "$ACTION" = psql ]; then
			PASS=("$@")
		else
			HAVE_EXTRA=1
			EXTRA=("$@")
		fi
		break ;;
	*)
		if [ "$ACTION" = psql ]; then
			PASS=("$@")
			break
		fi
		echo "postgres.sh: unknown option: $1" >&2
		usage ;;
	esac
done

case "$NAME" in
'' | *[!A-Za-z0-9_-]*) echo "postgres.sh: bad cluster name '$NAME'" >&2; exit 2 ;;
esac
case "$MODE" in
fast | smart | immediate) ;;
*) echo "postgres.sh: bad --mode '$MODE' (fast, smart or immediate)" >&2; exit 2 ;;
esac

blf_pg_paths "$NAME"
PORT_FILE=$PGI_DATA/blf-port
ARGS_FILE=$PGI_DATA/blf-args
CONF_FILE=$PGI_DATA/blf.conf
PG_CTL=$BLF_PG_BINDIR/pg_ctl

log() { echo "postgres[$NAME]: $*" >&2; }
die() { log "$*"; exit 1; }

# as_pg CMD...: run CMD as the postgres user (or as ourselves when not
# root), from / so that an unreadable cwd (/root) does not matter.
as_pg() {
	if [ "$(id -u)" -eq 0 ]; then
		(cd / && runuser -u postgres -- "$@")
	else
		(cd / && "$@")
	fi
}

resolve_port() {
	if [ -n "$PORT" ]; then
		:
	elif [ "$NAME" = main ]; then
		PORT=$BLF_PG_PORT
	elif [ -r "$PORT_FILE" ]; then
		PORT=$(cat "$PORT_FILE")
	else
		die "cluster '$NAME' has no port yet: give --port on its first start"
	fi
	case "$PORT" in
	'' | *[!0-9]*) die "bad port '$PORT'" ;;
	esac
}

# The port the running/last-started cluster uses (for psql, wait, status).
current_port() {
	if [ -n "$PORT" ]; then
		:
	elif [ -r "$PORT_FILE" ]; then
		PORT=$(cat "$PORT_FILE")
	else
		resolve_port
	fi
}

is_running() {
	[ -f "$PGI_DATA/PG_VERSION" ] || return 1
	as_pg "$PG_CTL" status -D "$PGI_DATA" >/dev/null 2>&1
}

answers() {
	"$BLF_PG_BINDIR/pg_isready" -q -h "$BLF_PG_SOCKET_DIR" -p "$PORT" -U postgres -d postgres -t 2
}

wait_ready() {
	local deadline=$((SECONDS + TIMEOUT))
	until answers; do
		if [ $SECONDS -ge $deadline ]; then
			log "not accepting connections after ${TIMEOUT}s"
			blf_log_tail "$PGI_LOG"
			return 1
		fi
		sleep 0.1
	done
}

initialize() {
	local ilog=$BLF_RUN/pg-$NAME-initdb.log
	log "initializing $PGI_DATA"
	mkdir -p "$PGI_DATA"
	[ "$(id -u)" -ne 0 ] || chown postgres: "$PGI_DATA"
	chmod 700 "$PGI_DATA"
	if ! as_pg "$BLF_PG_BINDIR/initdb" -D "$PGI_DATA" -U postgres --auth=trust \
		--encoding=UTF8 --locale=C --no-sync >"$ilog" 2>&1; then
		log "initdb failed"
		blf_log_tail "$ilog"
		exit 1
	fi
	rm -f "$ilog"
	# Throwaway test cluster on loopback only: trust everyone, no passwords.
	cat >"$PGI_DATA/pg_hba.conf" <<-'EOF'
	# binlog_fdw throwaway test cluster (scripts/postgres.sh): it listens on
	# 127.0.0.1 and a private socket directory only, and trusts every local
	# connection.  Never use this configuration for a real server.
	# TYPE  DATABASE     USER  ADDRESS        METHOD
	local   all          all                  trust
	host    all          all   127.0.0.1/32   trust
	local   replication  all                  trust
	host    replication  all   127.0.0.1/32   trust
	EOF
	echo "include_if_exists = 'blf.conf'	# written by scripts/postgres.sh at each start" \
		>>"$PGI_DATA/postgresql.conf"
	[ "$(id -u)" -ne 0 ] || chown postgres: "$PGI_DATA/pg_hba.conf" "$PGI_DATA/postgresql.conf"
}

write_conf() {
	local preload=${BLF_PG_PRELOAD//\'/}
	cat >"$CONF_FILE" <<-EOF
	# Written by scripts/postgres.sh at every start; edits are lost.
	port = $PORT
	listen_addresses = '127.0.0.1'
	unix_socket_directories = '$BLF_PG_SOCKET_DIR'
	shared_preload_libraries = '$preload'
	cron.database_name = 'postgres'
	wal_level = logical		# benchmarks compare with native logical replication
	max_worker_processes = 32
	max_replication_slots = 10
	max_wal_senders = 10
	logging_collector = off		# pg_ctl -l writes postgresql.log in the data dir
	log_line_prefix = '%m [%p] %q%u@%d '
	log_timezone = 'UTC'
	timezone = 'UTC'
	EOF
	[ "$(id -u)" -ne 0 ] || chown postgres: "$CONF_FILE"
}

do_stop() {
	if ! is_running; then
		log "not running"
		return 0
	fi
	local out
	if ! out=$(as_pg "$PG_CTL" stop -D "$PGI_DATA" -m "$MODE" -w -t "$TIMEOUT" 2>&1 </dev/null); then
		echo "$out" >&2
		die "pg_ctl stop -m $MODE failed"
	fi
	log "stopped ($MODE)"
}

do_start() {
	local stored=() opts="" a out rc
	if [ $FRESH -eq 1 ]; then
		MODE=immediate
		do_stop
		rm -rf "$PGI_DATA"
	fi
	if is_running; then
		current_port
		if [ $HAVE_EXTRA -eq 1 ]; then
			die "already running; use restart to apply new postgres arguments"
		fi
		log "already running (port $PORT)"
		wait_ready
		return 0
	fi

	[ -x "$PG_CTL" ] || die "$PG_CTL not found: run scripts/install-deps.sh"
	blf_prepare_run
	resolve_port
	if blf_port_in_use "$PORT"; then
		log "TCP port $PORT is already in use:"
		ss -Hltnp "sport = :$PORT" >&2 || true
		exit 1
	fi

	[ -f "$PGI_DATA/PG_VERSION" ] || initialize

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
	write_conf

	# pg_ctl passes -o through /bin/sh: quote each argument.
	for a in ${EXTRA[@]+"${EXTRA[@]}"}; do
		opts+=" $(printf '%q' "$a")"
	done

	as_pg touch "$PGI_LOG"
	echo "=== $(date '+%F %T') start: port $PORT, shared_preload_libraries '$BLF_PG_PRELOAD'${opts:+, options:$opts}" >>"$PGI_LOG"
	# pg_ctl -w returns once the server is ready or has died; the postmaster
	# gets stdin from /dev/null and its output in the log file.  pg_ctl's own
	# output goes to a file (not our stdout), and inherited descriptors are
	# closed (blf_detach), so no process keeps a caller's pipe open.
	out=$BLF_RUN/pg-$NAME-pg_ctl.out
	: >"$out"
	local runner=()
	[ "$(id -u)" -ne 0 ] || runner=(runuser -u postgres --)
	blf_detach "$out" bash -c 'cd / && exec "$@"' pg_ctl ${runner[@]+"${runner[@]}"} \
		"$PG_CTL" start -D "$PGI_DATA" -l "$PGI_LOG" -w -t "$TIMEOUT" ${opts:+-o "$opts"}
	rc=0
	wait "$BLF_DETACHED_PID" || rc=$?
	if [ $rc -ne 0 ]; then
		log "pg_ctl start failed (exit $rc):"
		sed 's/^/    /' "$out" >&2
		rm -f "$out"
		blf_log_tail "$PGI_LOG"
		if tail -n 5 "$PGI_LOG" | grep -q 'could not access file'; then
			log "hint: a library in shared_preload_libraries='$BLF_PG_PRELOAD' is not installed" \
				"(build and install binlog_fdw with 'make && make install', or set BLF_PG_PRELOAD)"
		fi
		exit 1
	fi
	rm -f "$out"
	wait_ready
	log "running (port $PORT, socket dir $BLF_PG_SOCKET_DIR, preload '$BLF_PG_PRELOAD'${opts:+, options:$opts})"
}

case "$ACTION" in
start) do_start ;;
stop) do_stop ;;
restart)
	do_stop
	do_start ;;
status)
	if is_running; then
		current_port
		echo "postgres[$NAME]: running (port $PORT, data $PGI_DATA)"
		exit 0
	fi
	echo "postgres[$NAME]: not running"
	exit 1 ;;
psql)
	current_port
	is_running || die "not running (start it with: scripts/postgres.sh start --name $NAME)"
	export PGHOST=$BLF_PG_SOCKET_DIR PGPORT=$PORT PGUSER=postgres
	export PGDATABASE=${PGDATABASE:-postgres}
	exec "$BLF_PG_BINDIR/psql" -X -v ON_ERROR_STOP=1 ${PASS[@]+"${PASS[@]}"} ;;
wait)
	current_port
	wait_ready ;;
destroy)
	MODE=immediate
	do_stop
	rm -rf "$PGI_DATA"
	log "destroyed" ;;
port)
	current_port
	echo "$PORT" ;;
*)
	echo "postgres.sh: unknown action: $ACTION" >&2
	usage ;;
esac
