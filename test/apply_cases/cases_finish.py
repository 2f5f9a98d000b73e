"""
test/apply_cases/cases_finish.py -- what an initial load leaves behind and
shows while it runs (issue 11 items 6 and 7):

  load-finish
      snapshot() into a target it creates builds the source's secondary
      indexes after the rows (non-unique, unique, several columns, DESC),
      names those with no PostgreSQL form (a column prefix, FULLTEXT) in a
      NOTICE, and ANALYZEs the table; a target the user created keeps its
      own indexes and is analyzed.  load() in chunks builds the
      non-unique ones after the last chunk and leaves the unique ones to
      the user (a NOTICE with the statement), unless one chunk held the
      whole table; load_status counts the rows.
  load-progress
      binlog_fdw.sync_progress while a copy runs (held by a trigger on the
      target) and while it analyzes (held by a lock): phase, rows done,
      estimated, rows/s and ETA; binlog_fdw.load_progress (overall, per
      server) while a load() of two tables is held in the second and after
      it; the NOTICEs of binlog_fdw.progress_notice_interval.
"""

import re
import threading
import time

from harness import (Source, check, log, mdb_fresh, mx, pg, q, q1, short, wait_for)

DB = 'blf_ac_fin'


def indexes(conn, table):
    """What PostgreSQL indexes on DB.table: "[UNIQUE ](columns)", sorted."""
    rows = q(conn, 'SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND tablename = %s',
             (DB, table))
    return sorted(('UNIQUE ' if 'UNIQUE INDEX' in r[0] else '') + r[0].split(' USING btree ', 1)[1]
                  for r in rows)


def analyzed(conn, table):
    return q1(conn, 'SELECT count(*) FROM pg_stats WHERE schemaname = %s AND tablename = %s',
              (DB, table)) > 0


def make_table(m, table, rows):
    mx(m, 'CREATE TABLE %s.%s (id INT PRIMARY KEY, a INT, b VARCHAR(20), c INT, d TEXT, '
          'KEY ka (a), UNIQUE KEY ub (b), KEY kac (a, c DESC), KEY kd (d(10)), FULLTEXT KEY ft (d))'
       % (DB, table))
    mx(m, "INSERT INTO %s.%s SELECT seq, seq %% 7, CONCAT('b', seq), seq %% 3, REPEAT('d', seq %% 50) "
          'FROM %s.seq_1_to_%d' % (DB, table, DB, rows))


def notices_of(conn, sql, args):
    """Run sql; the NOTICEs it sent."""
    del conn.notices[:]
    q(conn, sql, args)
    return [x.strip() for x in conn.notices]


WANT_ALL = ['(a)', '(a, c DESC)', 'UNIQUE (b)', 'UNIQUE (id)']


def case_load_finish(conn, m):
    mdb_fresh(m, DB)
    q(conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % DB)
    srcs = []
    try:
        # snapshot(): all of them, after the rows
        make_table(m, 's1', 2000)
        src = Source(conn, 'ac_fin', r'^%s\.' % DB)
        srcs.append(src)
        notes = notices_of(conn, 'SELECT * FROM binlog_fdw.snapshot(%s, %s)', (src.name, ['%s.s1' % DB]))
        check(q1(conn, 'SELECT count(*) FROM %s.s1' % DB) == 2000, 'rows of s1')
        ix = indexes(conn, 's1')
        check(ix == WANT_ALL, 'indexes of s1 after snapshot(): %s, expected %s' % (ix, WANT_ALL))
        log('snapshot() notices: %s' % notes)
        for name, why in (('kd', 'column prefix'), ('ft', 'FULLTEXT index')):
            check(any('index %s of %s.s1 is not built' % (name, DB) in x and why in x for x in notes),
                  'no NOTICE for index %s (%s): %s' % (name, why, notes))
        check(analyzed(conn, 's1'), 's1 was not analyzed')

        # a target the user made keeps its indexes (and is analyzed)
        make_table(m, 's2', 500)
        q(conn, 'CREATE TABLE %s.s2 (id int PRIMARY KEY, a int, b text, c int, d text)' % DB)
        q(conn, 'CREATE INDEX s2_mine ON %s.s2 (c)' % DB)
        src.snapshot(['%s.s2' % DB])
        ix = indexes(conn, 's2')
        check(ix == ['(c)', 'UNIQUE (id)'], 'indexes of the user\'s s2: %s' % ix)
        check(analyzed(conn, 's2'), 's2 was not analyzed')

        # load() in chunks: the non-unique ones after the last chunk
        make_table(m, 'l1', 5000)
        lsrc = Source(conn, 'ac_fin_l', r'^%s\.' % DB)
        srcs.append(lsrc)
        notes = notices_of(conn, 'CALL binlog_fdw.load(%s, %s, 1000)', (lsrc.name, ['%s.l1' % DB]))
        ix = indexes(conn, 'l1')
        check(ix == ['(a)', '(a, c DESC)', 'UNIQUE (id)'], 'indexes of l1 after load() in chunks: %s' % ix)
        log('load() notices: %s' % notes)
        check(any('unique index ub of %s.l1 is not built' % DB in x and 'in chunks' in x for x in notes),
              'no NOTICE for the unique index ub: %s' % notes)
        check(analyzed(conn, 'l1'), 'l1 was not analyzed')
        st = q(conn, 'SELECT chunks, rows_copied, complete FROM binlog_fdw.load_status WHERE source = %s',
               ('%s.l1' % DB,))
        check(st == [(6, 5000, True)], 'load_status of l1: %s' % st)
        # the mapping row says the load created the target
        check(q1(conn, 'SELECT load_created FROM binlog_fdw.table_mapping WHERE server_name = %s '
                       "AND source_table = 'l1'", (lsrc.name,)) is True, 'load_created of l1')

        # load() whose one chunk holds the whole table: the unique ones too
        make_table(m, 'l2', 300)
        q(conn, 'CALL binlog_fdw.load(%s, %s, 1000)', (lsrc.name, ['%s.l2' % DB]))
        ix = indexes(conn, 'l2')
        check(ix == WANT_ALL, 'indexes of l2 (one chunk): %s' % ix)
        st = q(conn, 'SELECT chunks, rows_copied FROM binlog_fdw.load_status WHERE source = %s',
               ('%s.l2' % DB,))
        check(st == [(1, 300)], 'load_status of l2: %s' % st)
        # and the rows are the source's
        for t in ('s1', 'l1', 'l2'):
            pgr = q(conn, 'SELECT id, a, b, c, d FROM %s.%s ORDER BY id' % (DB, t))
            myr = [tuple(r) for r in mx(m, 'SELECT id, a, b, c, d FROM %s.%s ORDER BY id' % (DB, t))]
            check(pgr == myr, '%s differs: PostgreSQL %s, MariaDB %s' % (t, short(pgr, 300), short(myr, 300)))
    finally:
        for s in srcs:
            s.drop()
        q(conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % DB)


def progress_rows(conn, source):
    return q(conn, 'SELECT phase, rows_done, rows_estimated, rows_per_second, eta, eta >= now() - '
                   "interval '1 second', started <= now() FROM binlog_fdw.sync_progress WHERE source = %s",
             (source,))


def case_load_progress(conn, m):
    """sync_progress while a snapshot() is held mid-way, then while it
    analyzes; load_progress (overall) while a load() of two tables is held
    in the second one's second chunk, and after it."""
    mdb_fresh(m, DB)
    q(conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % DB)
    src = Source(conn, 'ac_prog', r'^%s\.' % DB)
    holder = pg()
    try:
        mx(m, 'CREATE TABLE %s.p (id INT PRIMARY KEY, v INT)' % DB)
        mx(m, 'INSERT INTO %s.p SELECT seq, seq FROM %s.seq_1_to_20000' % (DB, DB))
        mx(m, 'ANALYZE TABLE %s.p' % DB)
        q(conn, 'CREATE SCHEMA %s' % DB)
        q(conn, 'CREATE TABLE %s.p (id int PRIMARY KEY, v int)' % DB)
        # row 10000 waits for the holder's advisory lock: the copy is held mid-way
        q(conn, 'CREATE FUNCTION %s.hold() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN '
                'IF NEW.id = 10000 THEN PERFORM pg_advisory_lock(4242); PERFORM pg_advisory_unlock(4242); '
                'END IF; RETURN NEW; END $$' % DB)
        q(conn, 'CREATE TRIGGER hold BEFORE INSERT ON %s.p FOR EACH ROW EXECUTE FUNCTION %s.hold()'
          % (DB, DB))
        holder.autocommit = True
        q(holder, 'SELECT pg_advisory_lock(4242)')
        # ... and ANALYZE waits for the holder's table lock
        holder2 = pg()
        holder2.autocommit = False
        box = {}

        def run():
            c = pg()
            try:
                box['rows'] = q(c, 'SELECT rows FROM binlog_fdw.snapshot(%s, %s)', (src.name, ['%s.p' % DB]))
            except Exception as e:                  # noqa: BLE001
                box['error'] = e
            finally:
                c.close()
        th = threading.Thread(target=run, daemon=True)
        src_name = '%s.p' % DB
        with holder2.cursor() as cur:
            cur.execute('LOCK TABLE %s.p IN SHARE UPDATE EXCLUSIVE MODE' % DB)
        th.start()
        row = wait_for('sync_progress while copying', lambda: [
            r for r in progress_rows(conn, src_name) if r[0] == 'copying' and r[1] >= 1000] or None, 30, 0.05)[0]
        log('copying: %s' % (row,))
        phase, done, est, rate, eta, eta_ahead, started_ok = row
        check(done < 20000 and est > 0 and rate is not None and rate > 0 and started_ok,
              'sync_progress while copying: %s' % (row,))
        check((eta is not None and eta_ahead) if est > done else eta is None,
              'ETA while copying: %s (estimate %s, done %s)' % (eta, est, done))
        q(holder, 'SELECT pg_advisory_unlock(4242)')
        row = wait_for('sync_progress while analyzing', lambda: [
            r for r in progress_rows(conn, src_name) if r[0] == 'analyzing'] or None, 30, 0.05)[0]
        log('analyzing: %s' % (row,))
        check(row[1] == 20000 and row[3] > 0 and row[4] is not None,
              'sync_progress while analyzing: %s' % (row,))
        holder2.rollback()
        th.join(60)
        check(box.get('rows') == [(20000,)], 'snapshot(): %s' % box)
        check(progress_rows(conn, src_name) == [], 'sync_progress after the snapshot: %s'
              % progress_rows(conn, src_name))
        holder2.close()

        # overall (binlog_fdw.load_progress): load() of two tables, the second
        # held in its second chunk
        for t in ('p2', 'p3'):
            mx(m, 'CREATE TABLE %s.%s (id INT PRIMARY KEY, v INT)' % (DB, t))
            mx(m, 'INSERT INTO %s.%s SELECT seq, seq FROM %s.seq_1_to_3000' % (DB, t, DB))
            mx(m, 'ANALYZE TABLE %s.%s' % (DB, t))
        q(conn, 'CREATE FUNCTION %s.hold3() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN '
                'IF NEW.id = 1500 THEN PERFORM pg_advisory_lock(4243); PERFORM pg_advisory_unlock(4243); '
                'END IF; RETURN NEW; END $$' % DB)
        q(conn, 'CREATE TABLE %s.p3 (id int PRIMARY KEY, v int)' % DB)
        q(conn, 'CREATE TRIGGER hold BEFORE INSERT ON %s.p3 FOR EACH ROW EXECUTE FUNCTION %s.hold3()'
          % (DB, DB))
        q(holder, 'SELECT pg_advisory_lock(4243)')

        def run_load():
            c = pg()
            try:
                q(c, 'CALL binlog_fdw.load(%s, %s, 1000, parallel => 1)', (src.name, ['%s.p2' % DB, '%s.p3' % DB]))
                box['loaded'] = True
            except Exception as e:                  # noqa: BLE001
                box['load_error'] = e
            finally:
                c.close()
        tl = threading.Thread(target=run_load, daemon=True)
        tl.start()
        overall = wait_for('load_progress while p3 is held', lambda: (lambda r: r if r and r[0][1] == 1 and
                           r[0][2] == 4000 and r[0][4] is not None else None)(q(
                               conn, 'SELECT tables, tables_complete, rows_copied, rows_estimated, rows_per_second, '
                                     'eta > now() FROM binlog_fdw.load_progress WHERE server = %s',
                               (src.name,))), 30, 0.05)[0]
        log('load_progress while p3 is held: %s' % (overall,))
        tables, complete, copied, estimated, rate, eta_ahead = overall
        check(tables == 2 and complete == 1 and copied == 4000 and estimated >= 4000 and rate > 0 and eta_ahead,
              'load_progress: %s (expected 2 tables, 1 complete, 4000 rows copied, an estimate of at least '
              '4000, a rate and an ETA ahead)' % (overall,))
        q(holder, 'SELECT pg_advisory_unlock(4243)')
        tl.join(60)
        check(box.get('loaded'), 'load(): %s' % box.get('load_error'))
        done = q(conn, 'SELECT tables, tables_complete, rows_copied, rows_estimated, rows_per_second '
                       'FROM binlog_fdw.load_progress WHERE server = %s', (src.name,))
        check(done == [(2, 2, 6000, 6000, None)], 'load_progress after the load: %s' % done)

        # binlog_fdw.progress_notice_interval: a NOTICE every second of a copy
        mx(m, 'CREATE TABLE %s.p4 (id INT PRIMARY KEY, v INT)' % DB)
        mx(m, 'INSERT INTO %s.p4 SELECT seq, seq FROM %s.seq_1_to_4000' % (DB, DB))
        mx(m, 'ANALYZE TABLE %s.p4' % DB)
        q(conn, 'CREATE FUNCTION %s.slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN '
                'PERFORM pg_sleep(0.0005); RETURN NEW; END $$' % DB)
        q(conn, 'CREATE TABLE %s.p4 (id int PRIMARY KEY, v int)' % DB)
        q(conn, 'CREATE TRIGGER slow BEFORE INSERT ON %s.p4 FOR EACH ROW EXECUTE FUNCTION %s.slow()' % (DB, DB))
        c = pg()
        try:
            q(c, 'SET binlog_fdw.progress_notice_interval = 1')
            t0 = time.monotonic()
            notes = notices_of(c, 'SELECT rows FROM binlog_fdw.snapshot(%s, %s)', (src.name, ['%s.p4' % DB]))
            took = time.monotonic() - t0
        finally:
            c.close()
        lines = [n for n in notes if 'rows copied' in n]
        log('snapshot() of p4 in %.1fs with a NOTICE every second: %s' % (took, lines))
        pat = re.compile(r'^NOTICE:  %s\.p4: (\d+)( of about (\d+))? rows copied, (\d+) rows/s'
                         r'(, about (\d+) s to go)?$' % DB)
        got = [pat.match(x) for x in lines]
        counts = [int(g.group(1)) for g in got if g]
        check(all(got) and len(lines) >= max(1, int(took) - 2) and counts == sorted(counts) and
              all(0 < n <= 4000 for n in counts) and all(int(g.group(4)) > 0 for g in got),
              'progress NOTICEs of a %.1fs copy: %s' % (took, lines))
    finally:
        holder.close()
        src.drop()
        q(conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % DB)
