"""
test/apply_cases/cases_retention.py -- the source's binlog retention against
the acknowledged position (issue 11 item 5), on a throwaway MariaDB that
expires binlogs after a day (--binlog-expire-logs-seconds=86400):

  retention
      binlog_fdw.status shows the source's oldest binlog, how many files it
      keeps before the acknowledged one and its expiry; when a PURGE makes
      the acknowledged file the oldest, retention_files is 0 and the worker
      logs a WARNING naming the position; when the acknowledged file is
      purged while the worker streams on, -1 and a second WARNING; once all
      it read is applied, the durable position follows the source's
      rotation into the file it keeps (an idle source does not pin an old
      binlog).  A stopped source whose position was purged fails to start
      with an error that says so; reset(), snapshot() and start() make it
      equal to the source again.

Instance "ac-ret" (BLF_APPLY_RET_PORT, 3445), destroyed at the end unless
BLF_APPLY_KEEP=1.  binlog_fdw.retention_check_interval is set to 1 s for
the case (ALTER SYSTEM) and reset after it.
"""

import os
import signal
import time

from cases_images import destroy_instance, start_instance
from common import RUN
from harness import (Source, check, log, mdb_fresh, mx, pg, q, q1, short, status, table_exists, wait_for,
                     wait_streaming)

RET_PORT = int(os.environ.get('BLF_APPLY_RET_PORT', '3445'))
DB = 'blf_ac_ret'


def binlogs(m):
    return [r[0] for r in mx(m, 'SHOW BINARY LOGS')]


def pg_log_text():
    path = os.environ.get('BLF_PG_LOG') or os.path.join(RUN, 'pg-main', 'postgresql.log')
    with open(path, errors='replace') as f:
        return f.read()


def retention(conn, name):
    s = status(conn, name) or {}
    return s.get('source_oldest_file'), s.get('retention_files'), s.get('binlog_expire_seconds'), \
        s.get('acked_file')


def wait_retention(conn, name, files, what):
    return wait_for('%s: retention_files %s' % (what, files),
                    lambda: (lambda r: r if r[1] == files else None)(retention(conn, name)), 30, 0.2)


def case_retention(conn, m_main):
    name = 'ac_ret'
    m = start_instance('ac-ret', RET_PORT, '--binlog-expire-logs-seconds=86400')
    src = None
    try:
        q(conn, 'ALTER SYSTEM SET binlog_fdw.retention_check_interval = 1')
        q(conn, 'SELECT pg_reload_conf()')
        mdb_fresh(m, DB)
        mx(m, 'CREATE TABLE %s.t (id INT PRIMARY KEY, v INT)' % DB)
        q(conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % DB)
        q(conn, 'CREATE SCHEMA %s' % DB)
        q(conn, 'CREATE TABLE %s.t (id int PRIMARY KEY, v int)' % DB)
        mx(m, 'FLUSH BINARY LOGS')
        src = Source(conn, name, r'^%s\.' % DB, port=RET_PORT)
        src.start()
        mx(m, 'INSERT INTO %s.t VALUES (1, 1)' % DB)
        src.sync(m)
        files = binlogs(m)
        acked = retention(conn, name)[3]
        want = files.index(acked)
        r = wait_retention(conn, name, want, 'after the first apply')
        log('binlogs %s; status %s' % (files, r))
        check(r[0] == files[0] and r[2] == 86400,
              'status: oldest %s (source %s), expiry %s (source 86400)' % (r[0], files[0], r[2]))

        # a PURGE leaves the acknowledged file the oldest: 0 and a WARNING (a
        # change read and not applied keeps the position where it is)
        mx(m, 'INSERT INTO %s.t VALUES (2, 2)' % DB)
        mx(m, 'FLUSH BINARY LOGS')
        mx(m, 'FLUSH BINARY LOGS')
        mx(m, "PURGE BINARY LOGS TO '%s'" % acked)
        r = wait_retention(conn, name, 0, 'the acked file is the oldest')
        check(r[0] == acked, 'oldest %s, acked %s' % (r[0], acked))
        want_warning = ('source "%s": the acknowledged position %s:' % (name, acked),
                        "is in the source's oldest binlog, the next one it purges")
        text = wait_for('the WARNING of the oldest binlog', lambda: (lambda t: t if all(
            w in t for w in want_warning) else None)(pg_log_text()), 30, 0.2)
        check(text.count(want_warning[1]) == 1, 'the WARNING came %d times (once per acked file)'
              % text.count(want_warning[1]))

        # the acknowledged file purged while the worker streams on: -1, a WARNING
        newest = binlogs(m)[-1]
        mx(m, "PURGE BINARY LOGS TO '%s'" % newest)
        r = wait_retention(conn, name, -1, 'the acked file is purged')
        check(r[0] == newest, 'oldest %s after the purge, expected %s' % (r[0], newest))
        wait_for('the WARNING of the purged binlog', lambda: 'the source has purged binlog %s, which holds '
                 'the acknowledged position' % acked in pg_log_text() or None, 30, 0.2)

        # applying what was read: the durable position then follows the
        # source's rotation into the binlog it still has, with nothing to ack
        src.sync(m)
        check(q(conn, 'SELECT id, v FROM %s.t ORDER BY id' % DB) == [(1, 1), (2, 2)], 'rows of t')
        r = wait_for('the acked position to follow the rotation into %s' % newest, lambda: (
            lambda x: x if x[3] == newest and x[1] == 0 else None)(retention(conn, name)), 30, 0.2)
        log('after applying: binlogs %s, status %s' % (binlogs(m), r))
        st = q(conn, 'SELECT file, pos FROM binlog_fdw.source_state WHERE server_name = %s', (name,))
        check(st == [(newest, 4)], 'source_state after the rotation: %s, expected [(%r, 4)]' % (st, newest))
        acked = newest

        # a stopped source whose position is purged: the start fails, saying so
        q(conn, 'SELECT binlog_fdw.stop(%s)', (name,))
        wait_for('worker of %s to stop' % name,
                 lambda: (status(conn, name) or {}).get('state') in (None, 'stopped'), 30)
        mx(m, 'INSERT INTO %s.t VALUES (3, 3)' % DB)
        newest = purge_all_but_newest(m)
        q(conn, 'SELECT binlog_fdw.start(%s)', (name,))
        err = wait_for('the start to fail on the purged position', lambda: (
            lambda e: e if e and '1236' in e else None)((status(conn, name) or {}).get('last_error')), 30, 0.2)
        log('start at a purged position: %s' % short(err, 400))
        check(acked in err or 'purged' in err or 'not find' in err, 'error: %s' % short(err, 400))
        check("lost_position 'reload'" in err, 'the error does not name the lost_position option: %s'
              % short(err, 600))
        check(q(conn, 'SELECT count(*) FROM %s.t' % DB) == [(2,)], 'a row was applied past the purge')
        # the way out the error names: reset(), a new snapshot, start
        q(conn, 'SELECT binlog_fdw.stop(%s)', (name,))
        q(conn, 'SELECT binlog_fdw.reset(%s)', (name,))
        src.snapshot(['%s.t' % DB], truncate=True)
        src.start()
        mx(m, 'INSERT INTO %s.t VALUES (4, 4)' % DB)
        src.sync(m)
        got = q(conn, 'SELECT id, v FROM %s.t ORDER BY id' % DB)
        check(got == [tuple(r) for r in mx(m, 'SELECT id, v FROM %s.t ORDER BY id' % DB)] and len(got) == 4,
              'rows after reset(), snapshot() and start(): %s' % got)
    finally:
        q(conn, 'ALTER SYSTEM RESET binlog_fdw.retention_check_interval')
        q(conn, 'SELECT pg_reload_conf()')
        if src:
            src.drop()
        q(conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % DB)
        destroy_instance('ac-ret')


RLD_PORT = int(os.environ.get('BLF_APPLY_RLD_PORT', '3446'))
RDB = 'blf_ac_rld'


def reloader_pids(conn):
    return [r[0] for r in q(conn, "SELECT pid FROM pg_stat_activity WHERE backend_type = 'binlog_fdw reloader'")]


def reload_tables(conn, name):
    return q1(conn, 'SELECT reload_tables FROM binlog_fdw.source_state WHERE server_name = %s', (name,))


def purge_all_but_newest(m):
    """FLUSH, wait for the dump threads to leave (MariaDB keeps a binlog a
    dump thread still reads: a stopped worker's connection goes first),
    PURGE to the newest binlog (retried: MariaDB also keeps one its binlog
    checkpoint has not passed yet)."""
    mx(m, 'FLUSH BINARY LOGS')
    wait_for('the binlog dump threads to end', lambda: mx(
        m, "SELECT count(*) FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'")[0][0] == 0,
        30, 0.2)
    newest = binlogs(m)[-1]

    def purged():
        mx(m, "PURGE BINARY LOGS TO '%s'" % newest)
        return binlogs(m) == [newest] or None
    wait_for('PURGE BINARY LOGS TO %s' % newest, purged, 30, 0.3)
    return newest


def k_rows(m):
    return [tuple(r) for r in mx(m, 'SELECT id, v, s FROM %s.k ORDER BY id' % RDB)]


def nk_rows(m):
    return sorted(tuple(r) for r in mx(m, 'SELECT a, b FROM %s.nk' % RDB))


def same_as_source(conn, m, what):
    got_k = q(conn, 'SELECT id, v, s FROM %s.k ORDER BY id' % RDB)
    exp_k = k_rows(m)
    diff = sorted(set(got_k) ^ set(exp_k))[:6]
    check(got_k == exp_k, '%s: k differs, PostgreSQL %d rows, MariaDB %d; first differences %s'
          % (what, len(got_k), len(exp_k), diff))
    got_nk = sorted(q(conn, 'SELECT a, b FROM %s.nk' % RDB))
    check(got_nk == nk_rows(m), '%s: nk differs: PostgreSQL %s, MariaDB %s' % (what, got_nk, nk_rows(m)))


def case_lost_position_reload(conn, m_main):
    """lost_position 'reload' (issue 11 item 5): a source whose acknowledged
    binlog was purged while it was stopped copies its tables again online,
    in chunks, while the source streams on and MariaDB keeps writing; its
    reloader terminated mid-table is started again by the worker and goes
    on at the next chunk (the first chunk's position unchanged), and so does
    the one after it, killed with -9 (PostgreSQL restarts; the worker starts
    it at its own start); apply() after the first fault
    applies what the chunks copied so far hold and skips the rest; the
    tables end equal to MariaDB's; a table mapped skip and one without a
    target are left alone; the schema history has the tables' definitions
    at the new position.  The instance logs MariaDB's default row metadata
    (NO_LOG): the rows are decoded with the schema history."""
    name = 'ac_rld'
    # MariaDB's default row metadata: the rows events carry no column names,
    # the schema history (seeded again at the reload's position) does
    m = start_instance('ac-rld', RLD_PORT, '--binlog-row-metadata=NO_LOG')
    src = None
    holder = None
    try:
        q(conn, 'ALTER SYSTEM SET binlog_fdw.reload_chunk_rows = 400')
        q(conn, 'SELECT pg_reload_conf()')
        mdb_fresh(m, RDB)
        mx(m, 'CREATE TABLE %s.k (id INT PRIMARY KEY, v INT, s VARCHAR(20))' % RDB)
        mx(m, 'CREATE TABLE %s.nk (a INT, b VARCHAR(10))' % RDB)
        mx(m, 'CREATE TABLE %s.skipped (id INT PRIMARY KEY, v INT)' % RDB)
        mx(m, 'CREATE TABLE %s.untargeted (id INT PRIMARY KEY)' % RDB)
        mx(m, 'INSERT INTO %s.k VALUES %s' % (RDB, ', '.join("(%d, %d, 's%d')" % (i, i, i)
                                                             for i in range(1, 2001))))
        mx(m, 'INSERT INTO %s.nk VALUES %s' % (RDB, ', '.join("(%d, 'b%d')" % (i % 7, i) for i in range(30))))
        mx(m, 'INSERT INTO %s.skipped VALUES (1, 1), (2, 2)' % RDB)
        mx(m, 'INSERT INTO %s.untargeted VALUES (1)' % RDB)
        q(conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % RDB)
        mx(m, 'FLUSH BINARY LOGS')
        src = Source(conn, name, r'^%s\.' % RDB, port=RLD_PORT, lost_position='reload',
                     unmapped='skip', keyless='full_row')
        src.snapshot(['%s.k' % RDB, '%s.nk' % RDB, '%s.skipped' % RDB])
        q(conn, "SELECT binlog_fdw.map_table(%s, %s, skip => true)", (name, '%s.skipped' % RDB))
        src.start()
        mx(m, 'UPDATE %s.k SET v = v + 1 WHERE id <= 5' % RDB)
        mx(m, 'INSERT INTO %s.untargeted VALUES (2)' % RDB)
        src.sync(m)
        same_as_source(conn, m, 'before the loss')

        # the loss: changes while the source is stopped, then their binlogs purged
        q(conn, 'SELECT binlog_fdw.stop(%s)', (name,))
        wait_for('worker of %s to stop' % name,
                 lambda: (status(conn, name) or {}).get('state') in (None, 'stopped'), 30)
        acked = q1(conn, 'SELECT file FROM binlog_fdw.source_state WHERE server_name = %s', (name,))
        mx(m, 'UPDATE %s.k SET v = v + 1000 WHERE id %% 7 = 0' % RDB)
        mx(m, 'DELETE FROM %s.k WHERE id %% 11 = 0' % RDB)
        mx(m, 'INSERT INTO %s.k VALUES %s' % (RDB, ', '.join("(%d, %d, 'n%d')" % (i, i, i)
                                                             for i in range(2001, 2101))))
        mx(m, "DELETE FROM %s.nk WHERE a = 3" % RDB)
        mx(m, "INSERT INTO %s.nk VALUES (9, 'lost'), (9, 'lost')" % RDB)
        mx(m, 'UPDATE %s.skipped SET v = 100' % RDB)
        newest = purge_all_but_newest(m)
        log('acknowledged file %s purged; the source keeps %s' % (acked, binlogs(m)))

        # hold the reload inside k (a row trigger waits for an advisory lock
        # on ids past 1400: the first 3 chunks of 400 keys commit first)
        q(conn, 'CREATE FUNCTION %s.hold() RETURNS trigger LANGUAGE plpgsql AS '
                '$$BEGIN PERFORM pg_advisory_xact_lock_shared(4242); RETURN NEW; END$$' % RDB)
        q(conn, 'CREATE TRIGGER hold BEFORE INSERT ON %s.k FOR EACH ROW WHEN (NEW.id > 1400) '
                'EXECUTE FUNCTION %s.hold()' % (RDB, RDB))
        holder = pg()
        q(holder, 'SELECT pg_advisory_lock(4242)')
        q(conn, 'SELECT binlog_fdw.start(%s)', (name,))
        warning = wait_for('the reload WARNING', lambda: (lambda t: t[t.rindex('source "%s": binlog %s' % (name, acked)):]
                           if 'source "%s": binlog %s' % (name, acked) in t else None)(pg_log_text()), 60, 0.2)
        first_line = warning.splitlines()[0]
        log('reload: %s' % first_line)
        check('re-loading 2 tables from %s:' % newest in first_line,
              'the WARNING names 2 tables and the new position in %s: %s' % (newest, first_line))
        new_pos = int(first_line.rsplit(':', 1)[1])
        st = wait_for('the reload to hold in chunk 4 of k', lambda: (lambda r: r if r and r[0][0] >= 3 else None)(
            q(conn, 'SELECT cardinality(load_key_hi), load_pos[1] FROM binlog_fdw.table_mapping '
                    'WHERE server_name = %s AND source_table = %s', (name, 'k'))), 60, 0.2)
        first_chunk_pos = st[0][1]
        check(st[0][1] >= new_pos, 'the first chunk of k at %s, before the reload position %s' % (st[0][1], new_pos))
        check(reload_tables(conn, name) and '%s.k' % RDB in reload_tables(conn, name),
              'source_state.reload_tables while k is held: %s' % reload_tables(conn, name))
        wait_streaming(conn, name)
        # MariaDB writes on while the reload is held: keys in chunks copied,
        # in chunks to come, a key moving across, deletes, inserts
        mx(m, 'UPDATE %s.k SET v = -v WHERE id IN (3, 399, 401, 1500, 1999)' % RDB)
        mx(m, 'UPDATE %s.k SET id = 5000 WHERE id = 10' % RDB)
        mx(m, 'UPDATE %s.k SET id = 33 WHERE id = 1800' % RDB)
        mx(m, 'DELETE FROM %s.k WHERE id IN (4, 1600)' % RDB)
        mx(m, "INSERT INTO %s.k VALUES (3000, 1, 'late'), (22, 2, 'again')" % RDB)
        mx(m, "INSERT INTO %s.nk VALUES (10, 'during')" % RDB)

        # the fault: the reloader terminated in the middle of k
        pids = reloader_pids(conn)
        check(len(pids) == 1, 'reloaders running: %s' % pids)
        q(conn, 'SELECT pg_terminate_backend(%s)', (pids[0],))
        wait_for('the reloader to exit', lambda: pids[0] not in reloader_pids(conn) or None, 30, 0.2)
        # apply between: what the chunks copied hold comes forward, the rest waits
        src.wait_read(m)
        r = src.apply()
        log('apply() while k is half copied: %s' % r)
        ids = '(3, 4, 10, 22, 33, 399, 401, 1500, 1600, 1800, 3000, 5000)'
        got = dict(q(conn, 'SELECT id, v FROM %s.k WHERE id IN %s' % (RDB, ids)))
        source = dict((r[0], r[1]) for r in mx(m, 'SELECT id, v FROM %s.k WHERE id IN %s' % (RDB, ids)))
        copied = dict((i, v) for i, v in source.items() if i < 1000)
        check({i: v for i, v in got.items() if i < 1000} == copied and copied.get(3) < 0,
              'changes of the copied chunks applied: PostgreSQL %s, MariaDB %s' % (got, source))
        check(not any(i in got for i in (1500, 1600, 1800, 3000, 5000)),
              'keys of the chunks still to come are left to them: %s' % got)
        # the worker starts it again (every 10 s while reload_tables is not
        # empty); it goes on at chunk 4, held there again
        wait_for('the worker to start the reloader again', lambda: 'source "%s": the reload after the lost '
                 'position has tables still to copy; starting its reloader again' % name in pg_log_text() or None,
                 30, 0.2)
        again = wait_for('the second reloader', lambda: reloader_pids(conn) or None, 30, 0.1)
        wait_for('the second reloader to wait in chunk 4', lambda: q1(
            conn, "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (again[0],)) == 'Lock' or None,
            30, 0.1)
        st = q(conn, 'SELECT cardinality(load_key_hi), load_pos[1] FROM binlog_fdw.table_mapping '
                     'WHERE server_name = %s AND source_table = %s', (name, 'k'))
        check(st == [(3, first_chunk_pos)], 'k after the second reloader began: %s, expected 3 chunks from %s'
              % (st, first_chunk_pos))
        # the second fault: kill -9 of that reloader (PostgreSQL restarts every
        # backend; the holder's lock goes with it); the worker, started again
        # with PostgreSQL, starts the reloader at its start
        os.kill(again[0], signal.SIGKILL)
        try:
            holder.close()
        except Exception:                           # noqa: BLE001
            pass
        holder = None
        time.sleep(1)
        wait_for('PostgreSQL back', lambda: q1(pg(), 'SELECT 1'), 60, 0.2)
        conn = pg()
        src.conn = conn
        wait_for('%s streaming again' % name,
                 lambda: (status(conn, name) or {}).get('state') == 'streaming', 60, 0.2)
        wait_for('the reload to finish', lambda: reload_tables(conn, name) is None or None, 90, 0.3)
        st = q(conn, 'SELECT cardinality(load_key_hi), load_pos[1], load_key_hi[cardinality(load_key_hi)] IS NULL '
                     'FROM binlog_fdw.table_mapping WHERE server_name = %s AND source_table = %s', (name, 'k'))
        log('k after the reload: %s chunks, first at %s, complete %s' % st[0])
        check(st[0][1] == first_chunk_pos and st[0][2] and st[0][0] >= 5,
              'the reload went on at the next chunk: %s (first chunk at %s before)' % (st, first_chunk_pos))
        mx(m, 'UPDATE %s.k SET s = CONCAT(s, "+") WHERE id < 50' % RDB)
        src.sync(m, timeout=60)
        same_as_source(conn, m, 'after the reload')
        check(q(conn, 'SELECT id, v FROM %s.skipped ORDER BY id' % RDB) == [(1, 1), (2, 2)],
              'the skipped table was copied again')
        check(not table_exists(conn, RDB, 'untargeted'), 'a target was created for untargeted')
        seeds = q(conn, "SELECT source_table FROM binlog_fdw.schema_history WHERE server_name = %s "
                        "AND binlog_file = %s AND binlog_pos = %s AND ddl IS NULL AND source_table <> '' ORDER BY 1", (name, newest, new_pos))
        check([r[0] for r in seeds] == ['k', 'nk', 'skipped', 'untargeted'],
              'schema history seeds at the reload position: %s' % seeds)
    finally:
        if holder:
            holder.close()
        conn = pg()
        q(conn, 'ALTER SYSTEM RESET binlog_fdw.reload_chunk_rows')
        q(conn, 'SELECT pg_reload_conf()')
        if src:
            src.conn = conn
            src.drop()
        q(conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % RDB)
        conn.close()
        destroy_instance('ac-rld')
