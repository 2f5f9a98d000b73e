#!/usr/bin/env bash
# test/run.sh -- THE test command of binlog_fdw (README and CI: .ci/run).
#
# usage: test/run.sh [SUITE...]      e.g. test/run.sh            (all suites)
#                                         test/run.sh 30-samples (one suite;
#                                         "30", "samples" or "30-samples.sh" work too)
#
# Steps: wipe the previous run's throwaway servers and logs in $BLF_RUN,
# install packages (scripts/install-deps.sh, when root), build and install
# (make, make install), start MariaDB "main" and PostgreSQL "main", run each
# suite test/suites/NN-*.sh in lexical order with a time limit, print every
# case line and a final line "N passed, N failed"; exit 1 if anything failed.
#
# Server logs: after each suite, test/lib/logcheck.py reads what the suite
# added to the main PostgreSQL and MariaDB logs; a WARNING, ERROR, FATAL,
# PANIC, leak or sanitizer report or "terminated by signal" that the suite's
# allowlist test/suites/NN-name.allow (per case, see logcheck.py) does not
# expect is a failed case "NN-name/server-log FILE".  Suites check the logs
# of their own instances with the same checker.
#
# Suite protocol: a suite is an executable script that prints one line per
# case, "ok - name" or "not ok - name: reason"; other lines are logs.  A suite
# that exits non-zero without any "not ok" line counts as one failed case
# named after it, and so does a suite that prints no case line at all.  Its
# full output goes to $BLF_RUN/logs/NN-name.log (last 40 lines are shown on
# failure).  Suites run from $BLF_ROOT with stdin from /dev/null and get, on
# top of scripts/env.sh's BLF_* variables: BLF_SUITE_NAME, BLF_SUITE_LOG,
# BLF_SUITE_TMP (an empty scratch directory, mode 1777), and PGHOST/PGPORT/
# PGUSER/PGDATABASE pointing at the main PostgreSQL cluster.
#
# Environment:
#   BLF_SKIP_INSTALL=1    do not run scripts/install-deps.sh
#   BLF_SKIP_BUILD=1      do not run make / make install
#   BLF_DESTDIR           make install DESTDIR=... (a private PostgreSQL tree,
#                         with BLF_PG_BINDIR pointing into it: scripts/sandbox.sh)
#   BLF_KEEP_SERVERS=1    leave the servers running at the end
#   BLF_SUITES_DIR        where the suites are (default $BLF_ROOT/test/suites)
#   BLF_SUITE_TIMEOUT     time limit per suite in seconds (default 1800)
#   BLF_SAMPLES_CHECK_DIR where the up-front check looks for the binlog samples
#                         (default ../shared/binlog-samples; to test the check)
#   BLF_PG_MALLOC_PERTURB MALLOC_PERTURB_ of PostgreSQL main (default 165; 0: off)
#   and everything in scripts/env.sh (BLF_RUN, ports, BLF_PG_PRELOAD, ...).
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/../scripts/env.sh"

SUITES_DIR=${BLF_SUITES_DIR:-$BLF_ROOT/test/suites}
SUITE_TIMEOUT=${BLF_SUITE_TIMEOUT:-1800}
SCRIPTS=$BLF_ROOT/scripts
START_TIME=$SECONDS

PASSED=0
FAILED=0
SUITE_PID=
SERVERS_STARTED=0

say() { printf '%s\n' "$*"; }

# case_line LINE: print a case line and count it.
case_line() {
	say "$1"
	case "$1" in
	"not ok"*) FAILED=$((FAILED + 1)) ;;
	*) PASSED=$((PASSED + 1)) ;;
	esac
}

# show_tail FILE [N]: last N lines of FILE, prefixed so that they cannot be
# taken for case lines.
show_tail() {
	local f=$1 n=${2:-40}
	[ -r "$f" ] || return 0
	if [ ! -s "$f" ]; then
		say "# ---- $f is empty"
		return 0
	fi
	say "# ---- last $n lines of $f"
	tail -n "$n" "$f" | sed -e 's/\r$//' -e 's/^/# | /'
	say "# ----"
}

stop_all_servers() {
	local d
	for d in "$BLF_RUN"/mariadb-*/; do
		[ -d "$d" ] || continue
		d=${d%/}
		bash "$SCRIPTS/mariadb.sh" stop --name "${d##*/mariadb-}" || true
	done
	for d in "$BLF_RUN"/pg-*/; do
		[ -d "$d" ] || continue
		d=${d%/}
		bash "$SCRIPTS/postgres.sh" stop --name "${d##*/pg-}" || true
	done
}

# Wipe the previous run: kill its servers, delete instances and logs.
wipe_run() {
	local d
	if [ -d "$BLF_RUN" ]; then
		for d in "$BLF_RUN"/mariadb-*/; do
			[ -d "$d" ] || continue
			d=${d%/}
			bash "$SCRIPTS/mariadb.sh" destroy --name "${d##*/mariadb-}" >/dev/null 2>&1 || true
		done
		for d in "$BLF_RUN"/pg-*/; do
			[ -d "$d" ] || continue
			d=${d%/}
			if [ -x "$BLF_PG_BINDIR/pg_ctl" ]; then
				bash "$SCRIPTS/postgres.sh" destroy --name "${d##*/pg-}" >/dev/null 2>&1 || true
			fi
		done
		rm -rf "$BLF_RUN"/mariadb-* "$BLF_RUN"/pg-* "$BLF_RUN"/.s.PGSQL.* \
			"$BLF_LOG_DIR" "$BLF_RUN/tmp" "$BLF_RUN/regress"
	fi
	# "main" may live outside $BLF_RUN (BLF_MARIADB_DATA / BLF_PG_DATA overrides)
	bash "$SCRIPTS/mariadb.sh" destroy >/dev/null 2>&1 || true
	if [ -x "$BLF_PG_BINDIR/pg_ctl" ]; then
		bash "$SCRIPTS/postgres.sh" destroy >/dev/null 2>&1 || true
	fi
	blf_prepare_run
}

# ensure_servers: start MariaDB main and PostgreSQL main unless running
# (keeping their data); output appended to logs/servers.log.
ensure_servers() {
	local rc=0
	{
		bash "$SCRIPTS/mariadb.sh" status >/dev/null 2>&1 ||
			bash "$SCRIPTS/mariadb.sh" start || rc=1
		# glibc fills freed memory (MALLOC_PERTURB_): a backend that reads
		# memory after its context was reset gets garbage, which the value
		# comparisons of the suites catch, instead of the old bytes
		bash "$SCRIPTS/postgres.sh" status >/dev/null 2>&1 ||
			MALLOC_PERTURB_=${BLF_PG_MALLOC_PERTURB:-165} bash "$SCRIPTS/postgres.sh" start || rc=1
	} </dev/null >>"$BLF_LOG_DIR/servers.log" 2>&1
	return $rc
}

# After a failed suite: stop the sources it left started in any database of
# the main cluster, so that their binlog_fdw.max_sources slots do not fail
# the suites after it (one failure, not a cascade).  Runs after the suite's
# log check; what it logs falls outside every suite's checked part.
release_sources() {
	local db n=0 stopped
	while IFS= read -r db; do
		[ -n "$db" ] || continue
		[ "$("$BLF_PG_BINDIR/psql" -X -qAt -d "$db" -c "SELECT 1 FROM pg_extension WHERE extname = 'binlog_fdw'" 2>/dev/null)" = 1 ] || continue
		stopped=$("$BLF_PG_BINDIR/psql" -X -qAt -d "$db" -c "SELECT count(*) FILTER (WHERE binlog_fdw.stop(server_name)) FROM binlog_fdw.started_sources" 2>/dev/null) || continue
		n=$((n + ${stopped:-0}))
	done < <("$BLF_PG_BINDIR/psql" -X -qAt -d postgres -c "SELECT datname FROM pg_database WHERE datallowconn" 2>/dev/null)
	if [ "$n" -gt 0 ]; then
		say "# $1 left $n source(s) started: stopped before the next suite"
		sleep 3
	fi
}

on_exit() {
	local rc=$?
	if [ -n "$SUITE_PID" ]; then
		kill -TERM "$SUITE_PID" 2>/dev/null || true
	fi
	if [ "${BLF_KEEP_SERVERS:-0}" != 1 ] && [ "$SERVERS_STARTED" -eq 1 ]; then
		stop_all_servers </dev/null >>"$BLF_LOG_DIR/servers.log" 2>&1 || true
	fi
	exit "$rc"
}

on_signal() {
	say "# interrupted"
	trap - INT TERM
	exit 130
}

finish() {
	local elapsed=$((SECONDS - START_TIME))
	say "# logs: $BLF_LOG_DIR (${elapsed}s)"
	say "$PASSED passed, $FAILED failed"
	if [ $FAILED -gt 0 ] || [ $PASSED -eq 0 ]; then
		exit 1
	fi
	exit 0
}

# ---- choose the suites -------------------------------------------------
ALL_SUITES=()
if [ -d "$SUITES_DIR" ]; then
	while IFS= read -r f; do
		[ -n "$f" ] && ALL_SUITES+=("$f")
	done < <(for f in "$SUITES_DIR"/[0-9][0-9]-*.sh; do
		[ -f "$f" ] && printf '%s\n' "${f##*/}"
	done | LC_ALL=C sort)
fi

# Selected suites keep the lexical order, whatever the order of the arguments.
SUITES=()
if [ $# -gt 0 ]; then
	WANTS=()
	for want in "$@"; do
		want=${want%.sh}
		WANTS+=("${want##*/}")
	done
	for want in "${WANTS[@]}"; do
		found=0
		for f in ${ALL_SUITES[@]+"${ALL_SUITES[@]}"}; do
			n=${f%.sh}
			if [ "$n" = "$want" ] || [ "${n%%-*}" = "$want" ] || [ "${n#*-}" = "$want" ]; then
				found=1
			fi
		done
		if [ $found -eq 0 ]; then
			echo "test/run.sh: no suite '$want' in $SUITES_DIR; available:" >&2
			printf '  %s\n' ${ALL_SUITES[@]+"${ALL_SUITES[@]%.sh}"} >&2
			exit 2
		fi
	done
	for f in ${ALL_SUITES[@]+"${ALL_SUITES[@]}"}; do
		n=${f%.sh}
		for want in "${WANTS[@]}"; do
			if [ "$n" = "$want" ] || [ "${n%%-*}" = "$want" ] || [ "${n#*-}" = "$want" ]; then
				SUITES+=("$f")
				break
			fi
		done
	done
else
	SUITES=(${ALL_SUITES[@]+"${ALL_SUITES[@]}"})
fi

trap on_exit EXIT
trap on_signal INT TERM

# ---- the binlog samples --------------------------------------------------
# Suites that read real binlogs (they name ../shared/binlog-samples) need the
# samples beside the checkout; checked once, here, with what they are.
SAMPLES_DIR=${BLF_SAMPLES_CHECK_DIR:-$(cd "$BLF_ROOT/.." && pwd)/shared/binlog-samples}
SAMPLES_MISSING=0
if [ ! -f "$SAMPLES_DIR/PROVENANCE.tsv" ]; then
	SAMPLES_MISSING=1
	cat <<-EOT
	# ../shared/binlog-samples is missing (looked for $SAMPLES_DIR/PROVENANCE.tsv).
	# It holds real binlog files written by MySQL 5.0-9.6 and MariaDB 10.0-11.8
	# servers, taken as data from public repositories (PROVENANCE.tsv lists
	# each file's repository, commit and server version). It is not part of
	# this repository (the files are not ours to commit): CI provides it beside
	# the checkout, as ../shared/binlog-samples. Put a copy there; the suites
	# that read it are skipped until then.
	EOT
fi

# ---- clean run directory -------------------------------------------------
wipe_run
say "# binlog_fdw tests: ${#SUITES[@]} suite(s) from $SUITES_DIR; run dir $BLF_RUN"

# ---- packages ------------------------------------------------------------
if [ "${BLF_SKIP_INSTALL:-0}" = 1 ]; then
	say "# install-deps: skipped (BLF_SKIP_INSTALL=1)"
elif [ "$(id -u)" -ne 0 ]; then
	say "# install-deps: skipped (not root)"
elif ! bash "$SCRIPTS/install-deps.sh" </dev/null >"$BLF_LOG_DIR/install-deps.log" 2>&1; then
	case_line "not ok - install-deps: scripts/install-deps.sh failed"
	show_tail "$BLF_LOG_DIR/install-deps.log"
	finish
else
	say "# $(tail -n 1 "$BLF_LOG_DIR/install-deps.log")"
fi

# ---- build and install ---------------------------------------------------
if [ "${BLF_SKIP_BUILD:-0}" = 1 ]; then
	say "# build: skipped (BLF_SKIP_BUILD=1)"
else
	if ! { make -C "$BLF_ROOT" && make -C "$BLF_ROOT" install ${BLF_DESTDIR:+DESTDIR=$BLF_DESTDIR}; } \
		</dev/null >"$BLF_LOG_DIR/build.log" 2>&1; then
		case_line "not ok - build: make or make install failed (logs/build.log)"
		show_tail "$BLF_LOG_DIR/build.log"
		finish
	fi
	say "# build: make && make install ok"
fi

# ---- servers -------------------------------------------------------------
SERVERS_STARTED=1
if ensure_servers; then
	say "# servers: MariaDB 127.0.0.1:$BLF_MARIADB_PORT, PostgreSQL 127.0.0.1:$BLF_PG_PORT (socket dir $BLF_PG_SOCKET_DIR)"
else
	case_line "not ok - servers: could not start MariaDB/PostgreSQL main (logs/servers.log)"
	show_tail "$BLF_LOG_DIR/servers.log"
fi

if [ ${#SUITES[@]} -eq 0 ]; then
	case_line "not ok - suites: no test/suites/NN-*.sh found in $SUITES_DIR"
	finish
fi

export PGHOST=$BLF_PG_SOCKET_DIR PGPORT=$BLF_PG_PORT PGUSER=postgres PGDATABASE=postgres

# ---- suites --------------------------------------------------------------
if [ $SAMPLES_MISSING -eq 1 ]; then
	case_line "not ok - binlog-samples: $SAMPLES_DIR is missing (see above); suites that read it are skipped"
fi
for f in "${SUITES[@]}"; do
	name=${f%.sh}
	log=$BLF_LOG_DIR/$name.log
	if [ $SAMPLES_MISSING -eq 1 ] && grep -q 'binlog-samples' "$SUITES_DIR/$f"; then
		say "# $name: skipped (it reads ../shared/binlog-samples)"
		continue
	fi
	tmp=$BLF_RUN/tmp/$name
	rm -rf "$tmp"
	mkdir -p "$tmp"
	chmod 1777 "$tmp" "$BLF_RUN/tmp" 2>/dev/null || true

	if ! ensure_servers; then
		say "# warning: MariaDB/PostgreSQL main not running before $name (logs/servers.log)"
	fi

	say "# $name"
	cmd=("$SUITES_DIR/$f")
	[ -x "$SUITES_DIR/$f" ] || cmd=(bash "$SUITES_DIR/$f")

	# where the main servers' logs are now: what the suite adds is checked
	/usr/bin/python3 "$BLF_ROOT/test/lib/logcheck.py" offsets "$BLF_PG_LOG" "$BLF_MARIADB_LOG" \
		>"$BLF_RUN/tmp/$name.logoffsets" 2>/dev/null || true

	t0=$SECONDS
	rc=0
	# timeout runs the suite in its own process group and kills the whole
	# group on expiry; backgrounded so that a signal to us interrupts wait.
	(
		cd "$BLF_ROOT"
		export BLF_SUITE_NAME=$name BLF_SUITE_LOG=$log BLF_SUITE_TMP=$tmp
		exec timeout --kill-after=30 "$SUITE_TIMEOUT" "${cmd[@]}"
	) </dev/null >"$log" 2>&1 &
	SUITE_PID=$!
	wait "$SUITE_PID" 2>/dev/null || rc=$?	# 2>/dev/null: no "Killed" job notice
	SUITE_PID=
	dt=$((SECONDS - t0))

	p0=$PASSED f0=$FAILED ncases=0 nfail=0
	while IFS= read -r line; do
		line=${line%$'\r'}
		case "$line" in
		"ok" | "ok "* | "not ok" | "not ok "*)
			case_line "$line"
			ncases=$((ncases + 1))
			case "$line" in "not ok"*) nfail=$((nfail + 1)) ;; esac ;;
		esac
	done <"$log"

	if { [ $rc -eq 124 ] || [ $rc -eq 137 ]; } && [ $dt -ge "$SUITE_TIMEOUT" ]; then
		case_line "not ok - $name: timed out after ${SUITE_TIMEOUT}s"
	elif [ $rc -ne 0 ] && [ $nfail -eq 0 ]; then
		case_line "not ok - $name: exited with status $rc"
	elif [ $ncases -eq 0 ]; then
		case_line "not ok - $name: printed no test results"
	fi

	# the main servers' logs: no WARNING, ERROR, FATAL, PANIC, leak,
	# sanitizer report or crash that the suite's allowlist does not expect
	if [ -s "$BLF_RUN/tmp/$name.logoffsets" ]; then
		allow=()
		[ -f "$SUITES_DIR/$name.allow" ] && allow=(--allow "$SUITES_DIR/$name.allow")
		# the logs of the suite's own instances, which it copies into its
		# scratch directory as pg-NAME.log / mariadb-NAME.log (a suite opts
		# in with a line "@instances" in its allowlist, once listed)
		if [ -f "$SUITES_DIR/$name.allow" ] && grep -qx '@instances' "$SUITES_DIR/$name.allow"; then
			for lf in "$tmp"/pg-*.log "$tmp"/mariadb-*.log; do
				[ -f "$lf" ] || continue
				case "${lf##*/}" in pg-*-[0-9][0-9].log) continue ;; esac
				printf '0 %s\n' "$lf" >>"$BLF_RUN/tmp/$name.logoffsets"
			done
		elif compgen -G "$tmp/pg-*.log" >/dev/null || compgen -G "$tmp/mariadb-*.log" >/dev/null; then
			say "# $name: the logs of its own instances are not checked yet (no @instances line in $name.allow)"
		fi
		while IFS= read -r line; do
			case "$line" in
			"ok "* | "not ok "*) case_line "$line" ;;
			*) say "$line" ;;
			esac
		done < <(/usr/bin/python3 "$BLF_ROOT/test/lib/logcheck.py" check --suite "$name" \
			--offsets "$BLF_RUN/tmp/$name.logoffsets" ${allow[@]+"${allow[@]}"} 2>&1 | head -n 60 || true)
	fi

	say "# $name: $((PASSED - p0)) passed, $((FAILED - f0)) failed (${dt}s, exit $rc)"
	if [ $FAILED -gt "$f0" ]; then
		show_tail "$log"
		release_sources "$name" </dev/null
	fi
done

finish
