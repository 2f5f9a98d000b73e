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
      replays everything into a new target, equal to MariaDB.
  schema-history-full     the suite's MariaDB (FULL metadata): the event's
      own names are checked against the history: a history that disagrees
      stops the worker with an error naming table, column and both names.

Instances: "ac-hmin" (BLF_APPLY_HMIN_PORT, 3443), "ac-hnolog"
(BLF_APPLY_HNOLOG_PORT, 3444), destroyed at the end unless BLF_APPLY_KEEP=1.
"""

import os

from cases_images import destroy_instance, start_instance
from harness import (KEEP, Fail, Source, check, log, mdb_fresh, mx, q, q1, short, status,
                     wait_for)

HMIN_PORT = int(os.environ.get('BLF_APPLY_HMIN_PORT', '3443'))
HNOLOG_PORT = int(os.environ.get('BLF_APPLY_HNOLOG_PORT', '3444'))


def rows_by_name(conn, m, db, cols):
    pg = q(conn, 'SELECT %s FROM %s.t ORDER BY id' % (', '.join(cols), db))
    my = [tuple(r) for r in mx(m, 'SELECT %s FROM %s.t ORDER BY id' % (', '.join(cols), db))]
    return pg, my


def same(conn, m, db, cols, what):
    pg, my = rows_by_name(conn, m, db, cols)
    if pg != my:
        raise Fail('%s: %s.t differs (columns %s): PostgreSQL %s, MariaDB %s'
                   % (what, db, cols, short(pg, 600), short(my, 600)))
    return len(pg)


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
        cols = q1(conn, "SELECT string_agg(c->>'name', ',') FROM (SELECT definition FROM "
                        "binlog_fdw.schema_history WHERE server_name = %s AND source_table = 't' "
                        "ORDER BY seq DESC LIMIT 1) h, jsonb_array_elements(h.definition->'columns') c",
                  (name,))
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
    finally:
        if src and not KEEP:
            src.drop()
