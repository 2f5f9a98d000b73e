"""
test/apply_cases/cases_history.py -- the schema history (issue #10 item 1):
sources whose TABLE_MAPs carry no column names (binlog_row_metadata MINIMAL,
MariaDB's default NO_LOG) replay a backlog that crosses DDL changing column
order and names, and the rows land in the right columns.

  schema-history-minimal  throwaway MariaDB with binlog_row_metadata=MINIMAL
  schema-history-nolog    the same with NO_LOG
      a table synced by snapshot() and streamed; the source stopped; then
      MODIFY ... AFTER, DROP COLUMN + ADD COLUMN of the same type, RENAME
      COLUMN, each with rows around it; started again (a backlog from the
      durable position), applied, and compared with MariaDB column by column
      by name; the history's rows (one per DDL, written as they were
      acknowledged); a worker restart in the middle of the history (some of
      the DDL acknowledged, some not); a source started at a position before the DDL refuses
      before streaming, naming the table, the DDL's position and the fixes;
      a source started 'earliest' (the binlog holds the table's CREATE)
      replays everything into a new target, equal to MariaDB; a source
      that begins at its copy (snapshot(), or load() in chunks) has the
      table's definition in its history at the copy's position, so DDL
      between the copy and the first start() is replayed, not refused; a
      start in the past across DDL that leaves the columns alone (an index,
      a default, table options) is not refused either.
  schema-history-full     the suite's MariaDB (FULL metadata): the event's
      own names are checked against the history: a history that disagrees
      stops the worker with an error naming table, column and both names;
      snapshot() under a RENAME of its server that commits meanwhile writes
      the history's rows under the new name.
  schema-history-prune  the suite's MariaDB: with binlog_fdw.schema_history_retention
      at its default (30 days) every DDL's row stays; at 0 the next DDL of a
      table deletes its superseded rows (its latest stays, and a dropped
      table's marker); a restarted worker then decodes the table's rows
      with that latest row (equal to MariaDB), and -1 keeps every row.

Instances: "ac-hmin" (BLF_APPLY_HMIN_PORT, 3443), "ac-hnolog"
(BLF_APPLY_HNOLOG_PORT, 3444), destroyed at the end unless BLF_APPLY_KEEP=1.
"""

import os
import threading

from cases_images import destroy_instance, start_instance
from harness import (KEEP, Fail, Source, check, log, mdb_fresh, mx, pg, q, q1, short, status,
                     wait_for)

HMIN_PORT = int(os.environ.get('BLF_APPLY_HMIN_PORT', '3443'))
HNOLOG_PORT = int(os.environ.get('BLF_APPLY_HNOLOG_PORT', '3444'))


def rows_by_name(conn, m, db, cols, table='t'):
    pg = q(conn, 'SELECT %s FROM %s.%s ORDER BY id' % (', '.join(cols), db, table))
    my = [tuple(r) for r in mx(m, 'SELECT %s FROM %s.%s ORDER BY id' % (', '.join(cols), db, table))]
    return pg, my


def same(conn, m, db, cols, what, table='t'):
    pg, my = rows_by_name(conn, m, db, cols, table)
    if pg != my:
        raise Fail('%s: %s.%s differs (columns %s): PostgreSQL %s, MariaDB %s'
                   % (what, db, table, cols, short(pg, 600), short(my, 600)))
    return len(pg)


def latest_columns(conn, name, table):
    return q1(conn, "SELECT string_agg(c->>'name', ',') FROM (SELECT definition FROM "
                    "binlog_fdw.schema_history WHERE server_name = %s AND source_table = %s "
                    "ORDER BY seq DESC LIMIT 1) h, jsonb_array_elements(h.definition->'columns') c",
              (name, table))


def start_across_harmless_ddl(conn, m, db, name, port):
    """A start in the past across DDL that leaves the rows' columns alone
    (an index, a default, table options, the table's default charset) is
    not refused: today's definition is also the one before it."""
    src = None
    try:
        mx(m, 'CREATE TABLE %s.w (id INT PRIMARY KEY, a INT, b VARCHAR(10))' % db)
        mx(m, "INSERT INTO %s.w VALUES (1, 1, 'x')" % db)
        q(conn, 'CREATE TABLE %s.w (id int PRIMARY KEY, a int, b text)' % db)
        q(conn, "INSERT INTO %s.w VALUES (1, 1, 'x')" % db)
        at = mx(m, 'SHOW MASTER STATUS')[0]
        mx(m, "INSERT INTO %s.w VALUES (2, 2, 'y')" % db)
        mx(m, "ALTER TABLE %s.w ADD INDEX ia (a), ALTER COLUMN a SET DEFAULT 7, COMMENT 'c'" % db)
        mx(m, "INSERT INTO %s.w VALUES (3, 3, 'z')" % db)
        mx(m, 'ALTER TABLE %s.w ENGINE=InnoDB' % db)
        mx(m, "UPDATE %s.w SET b = 'yy' WHERE id = 2" % db)
        mx(m, 'ALTER TABLE %s.w DEFAULT CHARSET latin1' % db)
        mx(m, 'DELETE FROM %s.w WHERE id = 1' % db)
        mx(m, "INSERT INTO %s.w (id, b) VALUES (4, 'ü')" % db)
        src = Source(conn, name + '_w', r'^%s\.w$' % db, port=port, start='%s:%d' % (at[0], int(at[1])))
        src.start()
        src.sync(m)
        n = same(conn, m, db, ['id', 'a', 'b'], 'a start across index/default/option DDL', 'w')
        check(n == 3, '%d rows of w, expected 3' % n)
    finally:
        if src and not KEEP:
            src.drop()


def seeded_by_copy(conn, m, db, name, port, how):
    """A source that begins at its copy (snapshot() or load(), never started
    before) has the copied table's definition in its history at the copy's
    position: DDL between the copy and the first start is replayed, not
    refused (the definition at the position is known)."""
    table = 'u_' + how
    src = None
    try:
        mx(m, 'CREATE TABLE %s.%s (id INT PRIMARY KEY, a INT, b INT, c INT)' % (db, table))
        mx(m, 'INSERT INTO %s.%s VALUES (1, 1, 2, 3), (2, 4, 5, 6), (3, 7, 8, 9)' % (db, table))
        src = Source(conn, '%s_%s' % (name, how), r'^%s\.%s$' % (db, table), port=port)
        if how == 'snapshot':
            src.snapshot(['%s.%s' % (db, table)])
        else:
            q(conn, 'CALL binlog_fdw.load(%s, %s, 1)', (src.name, ['%s.%s' % (db, table)]))
        state = q(conn, 'SELECT file, pos FROM binlog_fdw.source_state WHERE server_name = %s',
                  (src.name,))
        seeds = q(conn, 'SELECT binlog_file, binlog_pos FROM binlog_fdw.schema_history '
                        'WHERE server_name = %s AND source_schema = %s AND source_table = %s '
                        'AND ddl IS NULL', (src.name, db, table))
        log('%s: source_state %s, seed rows %s' % (how, state, seeds))
        check(len(state) == 1 and seeds == state,
              '%s: the history of %s holds %s, expected one seed at the position streaming begins %s'
              % (how, table, seeds, state))
        check(latest_columns(conn, src.name, table) == 'id,a,b,c',
              '%s: seeded columns %r' % (how, latest_columns(conn, src.name, table)))
        # DDL that moves and replaces columns before the first start
        mx(m, 'ALTER TABLE %s.%s MODIFY c INT AFTER id' % (db, table))
        mx(m, 'INSERT INTO %s.%s (id, a, b, c) VALUES (4, 10, 11, 12)' % (db, table))
        mx(m, 'ALTER TABLE %s.%s DROP COLUMN a, ADD COLUMN z INT' % (db, table))
        mx(m, 'INSERT INTO %s.%s (id, b, c, z) VALUES (5, 13, 14, 15)' % (db, table))
        mx(m, 'UPDATE %s.%s SET z = 99, b = 98 WHERE id = 2' % (db, table))
        mx(m, 'DELETE FROM %s.%s WHERE id = 3' % (db, table))
        # the key changes: the history follows it (get()'s key columns)
        mx(m, 'ALTER TABLE %s.%s DROP PRIMARY KEY, ADD CONSTRAINT k PRIMARY KEY (id, c)' % (db, table))
        mx(m, 'UPDATE %s.%s SET b = 97 WHERE id = 5' % (db, table))
        src.start()
        src.sync(m)
        n = same(conn, m, db, ['id', 'b', 'c', 'z'], 'DDL after %s()' % how, table)
        check(n == 4, '%s: %d rows, expected 4' % (how, n))
        got = q(conn, 'SELECT id, b, c, z FROM %s.%s ORDER BY id' % (db, table))
        check(got == [(1, 2, 3, None), (2, 98, 6, 99), (4, 11, 12, None), (5, 97, 14, 15)],
              '%s: rows %r' % (how, got))
        pk = q1(conn, "SELECT string_agg(c->>'name', ',') FROM (SELECT definition FROM "
                      "binlog_fdw.schema_history WHERE server_name = %s AND source_table = %s "
                      "ORDER BY seq DESC LIMIT 1) h, jsonb_array_elements(h.definition->'columns') c "
                      "WHERE (c->>'pk')::boolean", (src.name, table))
        check(pk == 'id,c', '%s: key columns in the history after DROP/ADD PRIMARY KEY: %r' % (how, pk))
        check(latest_columns(conn, src.name, table) == 'id,c,b,z',
              '%s: latest definition %r' % (how, latest_columns(conn, src.name, table)))
    finally:
        if src and not KEEP:
            src.drop()


def wait_error(conn, name, text, timeout=30):
    def got():
        s = status(conn, name) or {}
        e = s.get('last_error') or ''
        return e if text in e else None
    return wait_for('source %s to fail with %r' % (name, text), got, timeout, 0.1)


def history_case(conn, metadata, iname, port):
    m = start_instance(iname, port, '--binlog-row-metadata=%s' % metadata)
    db = 'blf_ac_h%s' % metadata.lower().replace('_', '')
    name = 'ac_h%s' % metadata.lower().replace('_', '')
    src = early = None
    try:
        check(mx(m, 'SELECT @@global.binlog_row_metadata')[0][0] == metadata,
              'instance not %s' % metadata)
        mdb_fresh(m, db)
        mx(m, 'CREATE TABLE %s.t (id INT PRIMARY KEY, a INT, b INT, c INT)' % db)
        mx(m, 'INSERT INTO %s.t VALUES (1, 1, 2, 3)' % db)
        src = Source(conn, name, r'^%s\.' % db, port=port)
        src.snapshot(['%s.t' % db])
        src.start()
        mx(m, 'INSERT INTO %s.t VALUES (2, 1, 2, 3)' % db)
        src.sync(m)
        same(conn, m, db, ['id', 'a', 'b', 'c'], 'before any DDL')

        # a backlog across DDL while the source is stopped
        q(conn, 'SELECT binlog_fdw.stop(%s)', (name,))
        wait_for('worker of %s to stop' % name,
                 lambda: (status(conn, name) or {}).get('state') in (None, 'stopped'), 30)
        before_ddl = mx(m, 'SHOW MASTER STATUS')[0]
        mx(m, 'ALTER TABLE %s.t MODIFY c INT AFTER id' % db)
        mx(m, 'INSERT INTO %s.t (id, a, b, c) VALUES (3, 1, 2, 3)' % db)
        mx(m, 'ALTER TABLE %s.t DROP COLUMN a, ADD COLUMN z INT' % db)
        mx(m, 'INSERT INTO %s.t (id, b, c, z) VALUES (4, 2, 3, 26)' % db)
        # a text column added by DDL: its charset is the table's (NO_LOG carries none)
        mx(m, 'ALTER TABLE %s.t ADD COLUMN v VARCHAR(20)' % db)
        mx(m, "UPDATE %s.t SET v = 'grüße €' WHERE id = 4" % db)
        mx(m, 'UPDATE %s.t SET z = 9 WHERE id = 1' % db)
        # the worker restarts in the middle: the first DDL acknowledged, the rest not
        src.start()
        r = src.apply(max_changes=3)
        log('first apply of the backlog: %s' % r)
        part = q1(conn, "SELECT count(*) FROM binlog_fdw.schema_history WHERE server_name = %s "
                        "AND source_table = 't' AND ddl IS NOT NULL", (name,))
        log('DDL rows in the history after the first apply: %s' % part)
        check(1 <= part < 3, 'after a partial apply the history has %r DDL rows of t, expected 1 or 2' % part)
        q(conn, 'SELECT binlog_fdw.stop(%s)', (name,))
        wait_for('worker of %s to stop' % name,
                 lambda: (status(conn, name) or {}).get('state') in (None, 'stopped'), 30)
        mx(m, 'ALTER TABLE %s.t RENAME COLUMN b TO bb' % db)
        mx(m, 'INSERT INTO %s.t (id, bb, c, z) VALUES (5, 2, 3, 26)' % db)
        mx(m, 'UPDATE %s.t SET bb = 20 WHERE id = 2' % db)
        src.start()
        src.sync(m)
        n = same(conn, m, db, ['id', 'bb', 'c', 'z', 'v'], 'after the backlog')
        check(n == 5, '%d rows, expected 5' % n)
        got = q(conn, 'SELECT id, bb, c, z FROM %s.t ORDER BY id' % db)
        check(got == [(1, 2, 3, 9), (2, 20, 3, None), (3, 2, 3, None), (4, 2, 3, 26), (5, 2, 3, 26)],
              'rows %r' % got)
        # the history: one seed (information_schema at the start), one row per DDL
        seeded = q1(conn, "SELECT count(*) FROM binlog_fdw.schema_history WHERE server_name = %s "
                          "AND source_table = 't' AND ddl IS NULL", (name,))
        check(seeded == 1, 'history of t has %r seed rows, expected 1' % seeded)
        ddl_rows = q1(conn, "SELECT count(*) FROM binlog_fdw.schema_history WHERE server_name = %s "
                            "AND source_table = 't' AND ddl IS NOT NULL", (name,))
        check(ddl_rows == 4, 'history of t has %r DDL rows, expected 4' % ddl_rows)
        cols = latest_columns(conn, name, 't')
        check(cols == 'id,c,bb,z,v', 'latest definition of t: %r' % cols)

        # a start in the past across that DDL (not back to the CREATE) cannot be decoded: refused
        early = Source(conn, name + '_e', r'^%s\.' % db, port=port,
                       start='%s:%d' % (before_ddl[0], int(before_ddl[1])))
        q(conn, 'SELECT binlog_fdw.start(%s)', (early.name,))
        err = wait_error(conn, early.name, 'is unknown')
        for want in ('definition of table %s.t at the start position %s:%d is unknown'
                     % (db, before_ddl[0], int(before_ddl[1])),
                     'changed at binlog %s position' % before_ddl[0], 'MODIFY c INT AFTER id',
                     'binlog_row_metadata=FULL', 'snapshot'):
            check(want in err, 'refusal lacks %r: %s' % (want, short(err, 800)))
        check(q1(conn, "SELECT count(*) FROM binlog_fdw.source_state WHERE server_name = %s "
                       "AND file IS NOT NULL", (early.name,)) in (0, 1), 'state')

        # 'earliest': the backlog from the table's CREATE on, into a new target
        src.drop()
        src = None
        q(conn, 'DROP TABLE %s.t' % db)
        earliest = Source(conn, name + '_0', r'^%s\.t$' % db, port=port, start='earliest')
        early.drop()
        early = earliest
        earliest.start()
        earliest.sync(m)
        n = same(conn, m, db, ['id', 'bb', 'c', 'z', 'v'], "start 'earliest'")
        check(n == 5, "start 'earliest': %d rows, expected 5" % n)

        # a source that begins at its copy knows the copied table's definition there
        seeded_by_copy(conn, m, db, name, port, 'snapshot')
        seeded_by_copy(conn, m, db, name, port, 'load')
        start_across_harmless_ddl(conn, m, db, name, port)
    finally:
        if not KEEP:
            for s in (early, src):
                if s:
                    s.drop()
        destroy_instance(iname)


def case_minimal(conn, m_main):
    history_case(conn, 'MINIMAL', 'ac-hmin', HMIN_PORT)


def case_nolog(conn, m_main):
    history_case(conn, 'NO_LOG', 'ac-hnolog', HNOLOG_PORT)


def seed_under_rename(conn, m):
    """snapshot() seeds the history under the server's name at commit: a
    RENAME of the server that commits while the snapshot runs leaves no
    rows under the old name (they would belong to a later server of that
    name) and the renamed source knows the copied table."""
    db = 'blf_ac_hren'
    src = None
    renamer = pg()
    try:
        mdb_fresh(m, db)
        mx(m, 'CREATE TABLE %s.t (id INT PRIMARY KEY, v INT)' % db)
        mx(m, 'INSERT INTO %s.t VALUES (1, 1)' % db)
        src = Source(conn, 'ac_hren', r'^%s\.' % db)
        renamer.autocommit = False
        with renamer.cursor() as cur:
            cur.execute('ALTER SERVER ac_hren RENAME TO ac_hren2')     # holds the server's lock
        box = {}

        def snap():
            c = pg()
            try:
                box['rows'] = q(c, 'SELECT source, rows FROM binlog_fdw.snapshot(%s, %s)',
                                ('ac_hren', ['%s.t' % db]))
            except Exception as e:                  # noqa: BLE001
                box['error'] = e
            finally:
                c.close()
        th = threading.Thread(target=snap, daemon=True)
        th.start()
        wait_for('snapshot() to wait for the renaming transaction', lambda: q1(
            conn, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                  "AND query LIKE '%%binlog_fdw.snapshot%%'") == 1, 30, 0.1)
        renamer.commit()
        th.join(60)
        check(not th.is_alive(), 'snapshot() did not end after the rename committed')
        log('snapshot() under a rename: %s' % box)
        check('rows' in box and box['rows'] == [('%s.t' % db, 1)], 'snapshot() under a rename: %s' % box)
        src.name = 'ac_hren2'
        rows = q(conn, 'SELECT server_name, count(*) FROM binlog_fdw.schema_history '
                       "WHERE server_name LIKE 'ac_hren%%' GROUP BY 1 ORDER BY 1")
        check(rows == [('ac_hren2', 1)], 'history rows by server name after the rename: %s' % rows)
        state = q(conn, "SELECT server_name FROM binlog_fdw.source_state WHERE server_name LIKE 'ac_hren%%'")
        check(state == [('ac_hren2',)], 'source_state after the rename: %s' % state)
    finally:
        renamer.rollback()
        renamer.close()
        if src and not KEEP:
            src.drop()


def case_full(conn, m):
    """FULL metadata: the event's own names are checked against the history."""
    db = 'blf_ac_hfull'
    name = 'ac_hfull'
    src = None
    try:
        mdb_fresh(m, db)
        mx(m, 'CREATE TABLE %s.t (id INT PRIMARY KEY, a INT, b INT)' % db)
        mx(m, 'INSERT INTO %s.t VALUES (1, 1, 2)' % db)
        src = Source(conn, name, r'^%s\.' % db)
        src.snapshot(['%s.t' % db])
        src.start()
        mx(m, 'ALTER TABLE %s.t CHANGE b bb INT FIRST' % db)
        mx(m, 'INSERT INTO %s.t (id, a, bb) VALUES (2, 1, 2)' % db)
        src.sync(m)
        got = q(conn, 'SELECT id, a, bb FROM %s.t ORDER BY id' % db)
        check(got == [(1, 1, 2), (2, 1, 2)], 'rows %r' % got)
        # a history that disagrees with the events' names stops the worker
        q(conn, 'SELECT binlog_fdw.stop(%s)', (name,))
        wait_for('worker of %s to stop' % name,
                 lambda: (status(conn, name) or {}).get('state') in (None, 'stopped'), 30)
        q(conn, "UPDATE binlog_fdw.schema_history SET definition = jsonb_set(definition, "
                "'{columns,0,name}', '\"wrong\"') WHERE server_name = %s AND seq = "
                "(SELECT max(seq) FROM binlog_fdw.schema_history WHERE server_name = %s "
                "AND source_table = 't')", (name, name))
        mx(m, 'INSERT INTO %s.t (id, a, bb) VALUES (3, 1, 2)' % db)
        q(conn, 'SELECT binlog_fdw.start(%s)', (name,))
        err = wait_error(conn, name, 'in the schema history')
        check('"bb" in the binlog but "wrong"' in err and '%s.t' % db in err,
              'name check error: %s' % short(err, 600))
        check(q1(conn, 'SELECT count(*) FROM %s.t' % db) == 2, 'a row was applied')
        seed_under_rename(conn, m)
    finally:
        if src and not KEEP:
            src.drop()


def set_retention(conn, value):
    """ALTER SYSTEM binlog_fdw.schema_history_retention (None: RESET) and
    wait until this session sees it."""
    if value is None:
        q(conn, 'ALTER SYSTEM RESET binlog_fdw.schema_history_retention')
    else:
        q(conn, "ALTER SYSTEM SET binlog_fdw.schema_history_retention = '%s'" % value)
    q(conn, 'SELECT pg_reload_conf()')
    want = {None: '30d', 0: '0', -1: '-1'}[value]
    wait_for('schema_history_retention %s' % want,
             lambda: q1(conn, 'SHOW binlog_fdw.schema_history_retention') == want, 10)


def case_prune(conn, m):
    """Superseded schema-history rows are pruned after the retention."""
    db = 'blf_ac_hprune'
    name = 'ac_hprune'
    src = None

    def rows_of(table):
        return q1(conn, 'SELECT count(*) FROM binlog_fdw.schema_history WHERE server_name = %s '
                        'AND source_schema = %s AND source_table = %s', (name, db, table))
    try:
        mdb_fresh(m, db)
        mx(m, 'CREATE TABLE %s.t (id INT PRIMARY KEY, a INT, b INT)' % db)
        mx(m, 'INSERT INTO %s.t VALUES (1, 1, 2)' % db)
        src = Source(conn, name, r'^%s\.' % db)
        src.snapshot(['%s.t' % db])
        src.start()
        # the default keeps every row: the copy's seed and one per DDL
        for ddl in ('ADD c INT', 'CHANGE b bb INT FIRST', 'DROP COLUMN a'):
            mx(m, 'ALTER TABLE %s.t %s' % (db, ddl))
            mx(m, 'INSERT INTO %s.t (id) VALUES (%d)' % (db, 10 + rows_of('t')))
            src.sync(m)
        mx(m, 'CREATE TABLE %s.d (id INT PRIMARY KEY)' % db)
        mx(m, 'DROP TABLE %s.d' % db)
        src.sync(m)
        check(rows_of('t') == 4, 'default retention: %d rows of t, want 4' % rows_of('t'))
        check(rows_of('d') == 2, 'default retention: %d rows of d, want 2' % rows_of('d'))
        # 0: the next DDL of t leaves only its new row; d keeps its marker
        set_retention(conn, 0)
        mx(m, 'ALTER TABLE %s.t ADD e VARCHAR(10) AFTER id' % db)
        mx(m, "INSERT INTO %s.t (id, e, c) VALUES (20, 'x', 3)" % db)
        src.sync(m)
        check(rows_of('t') == 1, 'retention 0: %d rows of t, want 1' % rows_of('t'))
        check(rows_of('d') == 2, 'retention 0: %d rows of d (no DDL of d since), want 2' % rows_of('d'))
        latest = latest_columns(conn, name, 't')
        check(latest == 'bb,id,e,c', 'latest definition of t: %s' % latest)
        # a restarted worker loads that row and decodes with it
        q(conn, 'SELECT binlog_fdw.stop(%s)', (name,))
        wait_for('worker of %s to stop' % name,
                 lambda: (status(conn, name) or {}).get('state') in (None, 'stopped'), 30)
        mx(m, "INSERT INTO %s.t (id, e, bb, c) VALUES (21, 'y', 5, 6)" % db)
        mx(m, "UPDATE %s.t SET e = 'z' WHERE id = 1" % db)
        src.start()
        src.sync(m)
        n = same(conn, m, db, ['id', 'e', 'bb', 'c'], 'after the prune and a restart')
        check(n == 6, '%d rows' % n)
        # -1 keeps every row again
        set_retention(conn, -1)
        mx(m, 'ALTER TABLE %s.t ADD f INT' % db)
        mx(m, 'INSERT INTO %s.t (id, f) VALUES (22, 7)' % db)
        src.sync(m)
        check(rows_of('t') == 2, 'retention -1: %d rows of t, want 2' % rows_of('t'))
        same(conn, m, db, ['id', 'e', 'bb', 'c', 'f'], 'retention -1')
    finally:
        set_retention(conn, None)
        if src and not KEEP:
            src.drop()
