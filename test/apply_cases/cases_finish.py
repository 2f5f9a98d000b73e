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
      estimated, rows/s and ETA.
"""

import threading

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
    finally:
        holder.close()
        src.drop()
        q(conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % DB)
