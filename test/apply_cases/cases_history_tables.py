"""
test/apply_cases/cases_history_tables.py -- history (system-versioned)
tables: binlog_fdw.map_history() (issue #12 item 4).

  history-tables  map_history() creates <target>_history with the target's
                  column types; inserts, updates (one changing the key, two
                  changes of a row in one transaction), deletes on MariaDB,
                  also of rows copied by snapshot() (no version before):
                  apply() writes one row per change, exactly MariaDB's
                  sequence (op, typed values, GTID of its transaction,
                  binlog position inside it, increasing), the ranges of a
                  key contiguous (replaces names the version closed, its
                  valid_to is the next one's valid_from), the open versions
                  equal to the target; "row 42 at time T" in one SELECT
                  gives what MariaDB held at each moment T; an apply()
                  rolled back writes nothing, applied again once; errors of
                  map_history() for a table without target and a history
                  table lacking a column; after ALTER TABLE ADD COLUMN and
                  MODIFY of the source the history has the target's new
                  columns; a TRUNCATE ends every open version (rows of op
                  TRUNCATE); map_history(enabled => false) stops it; a
                  partitioned target with rows moving between partitions.
  history-kill    continuous mode: a transaction failing on a row (a CHECK
                  of the target) retried until the constraint is dropped;
                  then under a writer: the apply worker killed
                  with -9 mid-stream (PostgreSQL restarts), then PostgreSQL
                  stopped with mode immediate and started again: every
                  MariaDB change is in the history exactly once, in order,
                  and the open versions equal MariaDB's table.
"""

import decimal
import os
import signal
import threading
import time

from cases_images import wait_applied
from common import POSTGRES_SH, sh
from harness import (Fail, Source, check, col_types, expect_error, log, mdb, mdb_fresh, mx, pg, q,
                     q1, short, status, wait_for)

DB = 'blf_ac_hist'
COLS = 'id, status, amount, note, placed_at'
HIST = 'blf_ac_hist.orders_history'


def master_end(m):
    r = mx(m, 'SHOW MASTER STATUS')
    return r[0][0], int(r[0][1])


class Recorder:
    """MariaDB transactions with what they changed, their GTID, binlog
    extent, and the time and table contents just after their commit."""

    def __init__(self, m):
        self.m = m
        self.txns = []

    def run(self, stmts, changes, snapshot=True):
        """stmts: SQL run in one transaction; changes: [(op, id)] in order."""
        before = master_end(self.m)
        if len(stmts) > 1:
            mx(self.m, 'BEGIN')
        for s in stmts:
            mx(self.m, s)
        if len(stmts) > 1:
            mx(self.m, 'COMMIT')
        t = {'gtid': mx(self.m, 'SELECT @@last_gtid')[0][0], 'from': before, 'to': master_end(self.m),
             'changes': changes}
        if snapshot:
            t['at'] = float(mx(self.m, 'SELECT UNIX_TIMESTAMP(NOW(6))')[0][0])
            t['rows'] = [tuple(r) for r in mx(self.m, 'SELECT %s FROM %s.orders ORDER BY id' % (COLS, DB))]
        self.txns.append(t)
        return t


def history(conn):
    # valid_to 'infinity' (an open version) as NULL
    return q(conn, "SELECT history_id, op, %s, valid_from, nullif(valid_to, 'infinity'), commit_time, gtid, "
                   "binlog_file, binlog_pos, replaces FROM %s ORDER BY history_id" % (COLS, HIST))


def check_history(conn, txns, what):
    """The history is txns' changes, each once, in order, with their GTID
    and binlog positions; the ranges chain; returns the rows."""
    rows = history(conn)
    exp = [(op, key, t) for t in txns for op, key in t['changes']]
    got = [(r[1], r[2]) for r in rows]
    check(got == [(op, key) for op, key, _ in exp],
          '%s: history (op, id) %s, MariaDB changes %s' % (what, short(got, 900),
                                                          short([(op, key) for op, key, _ in exp], 900)))
    byid = {r[0]: r for r in rows}
    prev_pos = None
    for r, (op, key, t) in zip(rows, exp):
        (hid, rop, rid, status_, amount, note, placed, vfrom, vto, ctime, gtid, bfile, bpos, repl) = r
        check(gtid == t['gtid'], '%s: history row %d (%s %s) has GTID %s, MariaDB committed it as %s'
              % (what, hid, op, key, gtid, t['gtid']))
        check(bfile is not None and bpos is not None and
              t['from'] <= (bfile, bpos) < t['to'],
              '%s: history row %d at binlog %s:%s, its transaction spans %s to %s'
              % (what, hid, bfile, bpos, t['from'], t['to']))
        check(prev_pos is None or (bfile, bpos) >= prev_pos,
              '%s: history row %d at %s:%s, before the previous one at %s' % (what, hid, bfile, bpos, prev_pos))
        prev_pos = (bfile, bpos)
        check(vfrom == ctime, '%s: history row %d: valid_from %s is not its commit time %s' % (what, hid, vfrom, ctime))
        if 'at' in t:
            ts = ctime.timestamp()
            check(int(t['at']) - 2 <= ts <= t['at'],
                  '%s: history row %d: commit time %s, MariaDB committed by %s' % (what, hid, ctime, t['at']))
        if op == 'DELETE':
            check(vto == vfrom, '%s: the DELETE row %d is valid from %s to %s, not empty' % (what, hid, vfrom, vto))
        if repl is not None:
            closed = byid.get(repl)
            check(closed is not None and closed[0] < hid and closed[8] == vfrom,
                  '%s: row %d replaces %s, which ends at %s, not at %s' % (what, hid, repl,
                                                                     closed and closed[8], vfrom))
    # each version is closed by at most one change, and a key's versions chain
    repls = [r[-1] for r in rows if r[-1] is not None]
    check(len(repls) == len(set(repls)), '%s: a version is replaced twice: %s' % (what, repls))
    for r in rows:
        if r[8] is not None and r[1] != 'DELETE':
            check(r[0] in repls, '%s: version %d ends at %s, but no change replaces it' % (what, r[0], r[8]))
    return rows


def at_time(conn, key, t):
    """Row key of the history at time t (Unix seconds): the one SELECT."""
    return q(conn, 'SELECT %s FROM %s WHERE id = %%s AND valid_from <= to_timestamp(%%s) '
                   'AND to_timestamp(%%s) < valid_to' % (COLS, HIST), (key, t, t))


def case_history_tables(conn, m):
    mdb_fresh(m, DB)
    mx(m, 'CREATE TABLE %s.orders (id INT PRIMARY KEY, status VARCHAR(20) NOT NULL, '
          'amount DECIMAL(10,2), note TEXT, placed_at DATETIME(3))' % DB)
    mx(m, "INSERT INTO %s.orders VALUES (1, 'old', 1.00, 'copied', '2020-01-01 00:00:00.000'), "
          "(2, 'old', 2.00, NULL, NULL)" % DB)
    mx(m, 'CREATE TABLE %s.nokey (a INT, b INT)' % DB)
    q(conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % DB)
    src = Source(conn, 'ac_hist', r'^blf_ac_hist\.orders$')
    try:
        src.snapshot(['%s.orders' % DB])
        # errors: no target; an existing history table lacking a column
        expect_error(conn, 'SELECT binlog_fdw.map_history(%s, %s)', ('ac_hist', '%s.nokey' % DB),
                     'map_history() without target', sqlstate='42P01',
                     message='target blf_ac_hist.nokey of MySQL table blf_ac_hist.nokey does not exist',
                     hint='binlog_fdw.sync_table()')
        q(conn, 'CREATE TABLE %s.bad_history (history_id bigint, valid_from timestamptz, valid_to timestamptz, '
                'op text, commit_time timestamptz, gtid text, binlog_file text, binlog_pos bigint, '
                'replaces bigint, id integer, status varchar(20), amount numeric(10,2), note text)' % DB)
        expect_error(conn, 'SELECT binlog_fdw.map_history(%s, %s, %s)', ('ac_hist', '%s.orders' % DB, 'bad_history'),
                     'map_history() into a table lacking a column', sqlstate='42703',
                     message='history table blf_ac_hist.bad_history of MySQL table blf_ac_hist.orders '
                             'has no column "placed_at" of target blf_ac_hist.orders',
                     hint='ALTER TABLE blf_ac_hist.bad_history ADD COLUMN placed_at timestamp(3) without time zone.')
        h = q1(conn, 'SELECT binlog_fdw.map_history(%s, %s)::text', ('ac_hist', '%s.orders' % DB))
        check(h == HIST, 'map_history() returned %s, expected %s' % (h, HIST))
        tt = col_types(conn, DB, 'orders')
        ht = col_types(conn, DB, 'orders_history')
        for c, ty in tt.items():
            check(ht.get(c, '').replace(' not null', '') == ty.replace(' not null', ''),
                  'history column %s is %s, the target has %s' % (c, ht.get(c), ty))
        check(ht.get('valid_from') == 'timestamp with time zone not null' and
              ht.get('binlog_pos') == 'bigint not null' and ht.get('op') == 'text not null',
              'history columns: %s' % ht)
        check(q1(conn, "SELECT history_table FROM binlog_fdw.table_mapping WHERE server_name = 'ac_hist'") == HIST,
              'table_mapping.history_table is not %s' % HIST)
        # map_table() after map_history() keeps the history
        q(conn, "SELECT binlog_fdw.map_table('ac_hist', 'blf_ac_hist.orders', conflict => 'error')")
        check(q1(conn, "SELECT history_table FROM binlog_fdw.table_mapping WHERE server_name = 'ac_hist'") == HIST,
              'map_table() dropped the history table option')
        src.start()

        rec = Recorder(m)
        O = DB + '.orders'
        rec.run(["INSERT INTO %s VALUES (42, 'new', 10.50, 'first', '2026-12-03 10:00:00.125')" % O],
                [('INSERT', 42)])
        time.sleep(1.1)
        rec.run(["UPDATE %s SET status = 'paid' WHERE id = 42" % O], [('UPDATE', 42)])
        time.sleep(1.1)
        # two changes of 42 in one transaction (and an insert between them)
        rec.run(["UPDATE %s SET amount = 12.25 WHERE id = 42" % O,
                 "INSERT INTO %s VALUES (43, 'new', NULL, 'two', NULL)" % O,
                 "UPDATE %s SET note = 'second' WHERE id = 42" % O],
                [('UPDATE', 42), ('INSERT', 43), ('UPDATE', 42)])
        time.sleep(1.1)
        rec.run(["UPDATE %s SET id = 44, status = 'moved' WHERE id = 42" % O], [('UPDATE', 44)])
        time.sleep(1.1)
        rec.run(["DELETE FROM %s WHERE id = 43" % O], [('DELETE', 43)])
        time.sleep(1.1)
        # rows of the snapshot: no version to close
        rec.run(["UPDATE %s SET status = 'touched' WHERE id = 1" % O], [('UPDATE', 1)])
        time.sleep(1.1)
        rec.run(["DELETE FROM %s WHERE id = 2" % O], [('DELETE', 2)])
        time.sleep(1.1)
        # the key 42 again, and two rows of one statement
        rec.run(["INSERT INTO %s VALUES (42, 'again', 99.99, 'reborn', '2026-12-03 10:15:00.000')" % O],
                [('INSERT', 42)])
        time.sleep(1.1)
        rec.run(["UPDATE %s SET amount = amount + 1 WHERE id IN (42, 44)" % O], [('UPDATE', 42), ('UPDATE', 44)])
        src.wait_read(m)

        # an apply() rolled back writes no history; applied again, once
        c2 = pg()
        c2.autocommit = False
        with c2.cursor() as cur:
            cur.execute('SELECT rows FROM binlog_fdw.apply(%s)', ('ac_hist',))
            n = cur.fetchone()[0]
            cur.execute('SELECT count(*) FROM %s' % HIST)
            inside = cur.fetchone()[0]
        c2.rollback()
        c2.close()
        check(n == 12 and inside == 12, 'the apply() to roll back applied %s rows, history %s inside it' % (n, inside))
        check(q1(conn, 'SELECT count(*) FROM %s' % HIST) == 0, 'a rolled-back apply() left history rows')
        src.sync(m)
        rows = check_history(conn, rec.txns, 'apply()')

        # typed values: each version is MariaDB's row after its change
        for t in rec.txns:
            state = {r[0]: r for r in t['rows']}
            last = {}
            for op, key in t['changes']:
                last[key] = op
            for key, op in last.items():
                mine = [r for r in rows if r[10] == t['gtid'] and r[2] == key]
                got = tuple(mine[-1][2:7])
                if op == 'DELETE':
                    check(key not in state, 'row %s deleted but in MariaDB' % key)
                else:
                    check(got == state[key], 'the version of %s written by %s is %s, MariaDB has %s'
                          % (key, t['gtid'], got, state[key]))
        check(isinstance(rows[0][4], decimal.Decimal), 'amount is not numeric: %r' % (rows[0][4],))

        # the open versions are the target; "row K at T" is MariaDB's row K at T
        open_ = q(conn, "SELECT %s FROM %s WHERE valid_to = 'infinity' ORDER BY id" % (COLS, HIST))
        target = q(conn, 'SELECT %s FROM %s.orders WHERE id <> 2 ORDER BY id' % (COLS, DB))
        check(open_ == target, 'open versions %s, target %s' % (short(open_, 600), short(target, 600)))
        checked = 0
        for t in rec.txns:
            state = {r[0]: r for r in t['rows']}
            for key in (42, 43, 44):
                got = at_time(conn, key, t['at'])
                exp = [state[key]] if key in state else []
                check(got == exp, 'row %d at %s (after %s): history has %s, MariaDB had %s'
                      % (key, t['at'], t['gtid'], got, exp))
                checked += 1
            # before its first change, a copied row has no version
            if t is rec.txns[0]:
                check(at_time(conn, 1, t['at']) == [], 'copied row 1 has a version before its first change')
        log('history of %d changes checked; %d point-in-time queries equal MariaDB' % (len(rows), checked))
        log('example: %s' % short(q(conn, "SELECT id, status, amount, valid_from, valid_to, op, gtid FROM %s "
                                          "WHERE id = 42 ORDER BY history_id" % HIST), 600))

        # DDL of the source: the history follows the target's columns
        mx(m, 'ALTER TABLE %s ADD COLUMN extra INT, MODIFY status VARCHAR(40) NOT NULL' % O)
        mx(m, "UPDATE %s SET extra = 7, status = 'a status longer than twenty' WHERE id = 44" % O)
        src.sync(m)
        ht = col_types(conn, DB, 'orders_history')
        check(ht.get('extra') == 'integer' and ht.get('status') == 'character varying(40)',
              'after ALTER TABLE the history columns are %s' % ht)
        last = q(conn, 'SELECT op, id, status, extra, replaces FROM %s ORDER BY history_id DESC LIMIT 1' % HIST)
        prev44 = q1(conn, "SELECT max(history_id) FROM %s WHERE id = 44 AND valid_to <> 'infinity'" % HIST)
        check(last == [('UPDATE', 44, 'a status longer than twenty', 7, prev44)],
              'the version after ALTER TABLE is %s (the previous one of 44: %s)' % (last, prev44))
        check(q(conn, "SELECT status, extra FROM %s WHERE id = 44 AND valid_to = 'infinity'" % HIST) ==
              q(conn, 'SELECT status, extra FROM %s WHERE id = 44' % O), 'the open version of 44 is not the target row')

        # TRUNCATE of the source ends every open version (a row of op TRUNCATE each)
        before = q(conn, "SELECT history_id, id, status, extra FROM %s WHERE valid_to = 'infinity' ORDER BY history_id"
                   % HIST)
        mx(m, 'TRUNCATE TABLE %s' % O)
        tg = mx(m, 'SELECT @@last_gtid')[0][0]
        src.sync(m)
        check(q1(conn, "SELECT count(*) FROM %s WHERE valid_to = 'infinity'" % HIST) == 0,
              'open versions left after TRUNCATE')
        ends = q(conn, "SELECT replaces, id, status, extra FROM %s WHERE op = 'TRUNCATE' AND gtid = %%s "
                       "AND valid_from = valid_to ORDER BY history_id" % HIST, (tg,))
        check(ends == before and len(before) == 3, 'TRUNCATE rows %s, open versions were %s' % (ends, before))
        total = len(rows) + 1 + len(before)

        # map_history(enabled => false): apply writes no more history
        q(conn, "SELECT binlog_fdw.map_history('ac_hist', 'blf_ac_hist.orders', enabled => false)")
        mx(m, "INSERT INTO %s (id, status) VALUES (1, 'unrecorded')" % O)
        src.sync(m)
        check(q1(conn, 'SELECT count(*) FROM %s' % HIST) == total, 'history written after enabled => false')
        check(q1(conn, 'SELECT status FROM %s WHERE id = 1' % O) == 'unrecorded', 'insert not applied')
    finally:
        src.drop()
    partitioned_history(conn, m)


def partitioned_history(conn, m):
    """A partitioned target (a partition with another column order and a
    dropped column): updates inside a partition and across partitions, a
    delete; the history holds the root's row type."""
    db = 'blf_ac_histp'
    mdb_fresh(m, db)
    mx(m, 'CREATE TABLE %s.r (id INT PRIMARY KEY, region INT NOT NULL, v VARCHAR(20))' % db)
    q(conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % db)
    q(conn, 'CREATE SCHEMA %s' % db)
    q(conn, 'CREATE TABLE %s.r (id int, region int NOT NULL, v text, PRIMARY KEY (id, region)) '
            'PARTITION BY RANGE (region)' % db)
    q(conn, 'CREATE TABLE %s.r_low PARTITION OF %s.r FOR VALUES FROM (MINVALUE) TO (10)' % (db, db))
    q(conn, 'CREATE TABLE %s.r_mid (junk int, v text, region int NOT NULL, id int, PRIMARY KEY (id, region))' % db)
    q(conn, 'ALTER TABLE %s.r_mid DROP COLUMN junk' % db)
    q(conn, 'ALTER TABLE %s.r ATTACH PARTITION %s.r_mid FOR VALUES FROM (10) TO (MAXVALUE)' % (db, db))
    src = Source(conn, 'ac_histp', r'^blf_ac_histp\.r$')
    try:
        check(q1(conn, "SELECT binlog_fdw.map_history('ac_histp', 'blf_ac_histp.r')::text") == db + '.r_history',
              'map_history() of the partitioned target')
        src.start()
        mx(m, "INSERT INTO %s.r VALUES (1, 15, 'a')" % db)
        mx(m, "UPDATE %s.r SET v = 'b' WHERE id = 1" % db)
        mx(m, 'UPDATE %s.r SET region = 5 WHERE id = 1' % db)
        mx(m, "UPDATE %s.r SET region = 12, v = 'c' WHERE id = 1" % db)
        mx(m, 'DELETE FROM %s.r WHERE id = 1' % db)
        src.sync(m)
        got = q(conn, "SELECT op, id, region, v, history_id, replaces, valid_from, nullif(valid_to, 'infinity') "
                      "FROM %s.r_history ORDER BY history_id" % db)
        check([g[:4] for g in got] == [('INSERT', 1, 15, 'a'), ('UPDATE', 1, 15, 'b'), ('UPDATE', 1, 5, 'b'),
                                       ('UPDATE', 1, 12, 'c'), ('DELETE', 1, 12, 'c')],
              'history of the partitioned target: %s' % short(got, 800))
        for prev, cur in zip(got, got[1:]):
            check(cur[5] == prev[4] and prev[7] == cur[6],
                  'partitioned: %s does not close %s' % (short(cur, 300), short(prev, 300)))
        check(got[-1][6] == got[-1][7], 'the DELETE row is not empty: %s' % (got[-1],))
    finally:
        src.drop()


class Writer:
    """A MariaDB writer of small transactions, each recorded (Recorder)."""

    def __init__(self, n):
        self.n = n
        self.done = 0
        self.error = None
        self.rec = None
        self.halt = threading.Event()

    def run(self):
        w = mdb()
        self.rec = Recorder(w)
        O = DB + '.orders'
        nxt = 1000
        live = []
        try:
            for i in range(self.n):
                if self.halt.is_set():
                    break
                k = i % 5
                if i % 25 == 0:
                    # a larger transaction: 30 rows of one statement
                    keys = list(range(nxt, nxt + 30))
                    self.rec.run(["INSERT INTO %s VALUES %s" % (O, ', '.join(
                        "(%d, 'b', %d.5, 'bulk', '2026-12-03 10:00:00.250')" % (x, i) for x in keys))],
                        [('INSERT', x) for x in keys], snapshot=False)
                    live.extend(keys)
                    nxt += 30
                elif k in (0, 1) or len(live) < 3:
                    self.rec.run(["INSERT INTO %s VALUES (%d, 'w', %d.25, 'n%d', NULL)" % (O, nxt, i, i)],
                                 [('INSERT', nxt)], snapshot=False)
                    live.append(nxt)
                    nxt += 1
                elif k == 2:
                    key = live[i % len(live)]
                    self.rec.run(["UPDATE %s SET amount = amount + 1, status = 'u' WHERE id = %d" % (O, key)],
                                 [('UPDATE', key)], snapshot=False)
                elif k == 3:
                    key = live.pop(0)
                    self.rec.run(["UPDATE %s SET id = %d WHERE id = %d" % (O, nxt, key)],
                                 [('UPDATE', nxt)], snapshot=False)
                    live.append(nxt)
                    nxt += 1
                else:
                    key = live.pop(0)
                    self.rec.run(["DELETE FROM %s WHERE id = %d" % (O, key)], [('DELETE', key)], snapshot=False)
                self.done += 1
                time.sleep(0.01)
        except Exception as e:                      # noqa: BLE001
            self.error = e
        finally:
            w.close()


def pg_immediate_restart():
    """PostgreSQL main stopped with mode immediate, then started again."""
    sh(['bash', POSTGRES_SH, 'stop', '--mode', 'immediate'], timeout=120)
    sh(['bash', POSTGRES_SH, 'start'], timeout=120)
    wait_for('PostgreSQL main', lambda: pg(), 30)


def case_history_kill(conn, m):
    mdb_fresh(m, DB)
    mx(m, 'CREATE TABLE %s.orders (id INT PRIMARY KEY, status VARCHAR(20) NOT NULL, '
          'amount DECIMAL(10,2), note TEXT, placed_at DATETIME(3))' % DB)
    q(conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % DB)
    src = Source(conn, 'ac_histk', r'^blf_ac_hist\.orders$', continuous='true')
    writer = Writer(600)
    th = threading.Thread(target=writer.run, daemon=True)
    try:
        src.snapshot(['%s.orders' % DB])
        q(conn, "SELECT binlog_fdw.map_history('ac_histk', 'blf_ac_hist.orders')")
        src.start()
        wait_for('the apply worker of ac_histk', lambda: (status(conn, 'ac_histk') or {}).get('apply_pid'), 30)

        # an error in the middle of a transaction: the worker rolls back and
        # retries until the target is fixed, the history gets it once
        q(conn, 'ALTER TABLE %s.orders ADD CONSTRAINT no_big CHECK (amount < 1000)' % DB)
        pre = Recorder(m)
        O = DB + '.orders'
        pre.run(["INSERT INTO %s VALUES (1, 'a', 1, NULL, NULL)" % O,
                 "INSERT INTO %s VALUES (2, 'big', 5000, NULL, NULL)" % O,
                 "UPDATE %s SET status = 'b' WHERE id = 1" % O],
                [('INSERT', 1), ('INSERT', 2), ('UPDATE', 1)], snapshot=False)
        wait_for('the apply error', lambda: (status(conn, 'ac_histk') or {}).get('apply_error'), 30, 0.1)
        time.sleep(3)                               # a retry or two
        check(q1(conn, 'SELECT count(*) FROM %s' % HIST) == 0, 'history rows of a failed apply')
        q(conn, 'ALTER TABLE %s.orders DROP CONSTRAINT no_big' % DB)
        wait_for('the failed transaction applied', lambda: q1(conn, 'SELECT count(*) FROM %s' % HIST) == 3, 60, 0.1)
        th.start()

        # fault 1: kill -9 of the continuous apply worker while it applies
        wait_for('100 history rows', lambda: q1(conn, 'SELECT count(*) FROM %s' % HIST) >= 100, 60, 0.02)
        apid = status(conn, 'ac_histk')['apply_pid']
        have = q1(conn, 'SELECT count(*) FROM %s' % HIST)
        os.kill(apid, signal.SIGKILL)
        log('killed the apply worker %d with -9: %d MariaDB transactions written, %d history rows committed'
            % (apid, writer.done, have))
        time.sleep(1)
        wait_for('PostgreSQL back', lambda: q1(pg(), 'SELECT 1'), 60, 0.2)
        conn2 = pg()
        wait_for('ac_histk applying again',
                 lambda: (status(conn2, 'ac_histk') or {}).get('apply_pid') not in (None, apid), 60, 0.2)
        wait_for('more history rows', lambda: q1(conn2, 'SELECT count(*) FROM %s' % HIST) >= 250, 60, 0.02)

        # fault 2: PostgreSQL stopped with mode immediate mid-stream
        have = q1(conn2, 'SELECT count(*) FROM %s' % HIST)
        conn2.close()
        log('immediate stop: %d MariaDB transactions written, %d history rows committed' % (writer.done, have))
        pg_immediate_restart()
        conn3 = pg()
        wait_for('ac_histk streaming again',
                 lambda: (status(conn3, 'ac_histk') or {}).get('state') == 'streaming', 60, 0.2)
        th.join(120)
        check(not th.is_alive(), 'the writer did not finish')
        check(writer.error is None, 'the writer failed: %s' % writer.error)
        src.conn = conn3
        wait_applied(src, m, 'history after the faults', timeout=120)
        st = status(conn3, 'ac_histk')
        check(not st.get('apply_error'), 'the apply worker had an error: %s' % short(st.get('apply_error'), 600))
        rows = check_history(conn3, pre.txns + writer.rec.txns, 'continuous mode after kill -9 and immediate stop')
        open_ = q(conn3, "SELECT %s FROM %s WHERE valid_to = 'infinity' ORDER BY id" % (COLS, HIST))
        exp = [tuple(r) for r in mx(m, 'SELECT %s FROM %s.orders ORDER BY id' % (COLS, DB))]
        check(open_ == exp, 'open versions %s, MariaDB %s' % (short(open_, 600), short(exp, 600)))
        log('%d changes of %d transactions in the history, each once' % (len(rows), len(writer.rec.txns) + 1))
    except Fail:
        writer.halt.set()
        raise
    finally:
        writer.halt.set()
        src.conn = pg()
        src.drop()
        src.conn.close()
