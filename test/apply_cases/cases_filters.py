"""
test/apply_cases/cases_filters.py -- binlog_fdw.set_filter() (issue #13):
column lists (include / exclude), masks (a fixed value, NULL, SHA-256),
operation filters (insert / update / delete / truncate / ddl), per source
and per table, and a row filter with PostgreSQL 15's semantics for updates
moving rows into or out of it.  PostgreSQL is compared with what the filter
should give, computed from MariaDB's rows; get()'s images show the excluded
columns absent and the masked ones masked; filters naming a missing column
fail naming it; binlog_fdw.filter_history records each set with the
position it took effect at; a set changed while a transaction is partly
acknowledged is refused until restored; a copy of a filtered table gives
what the stream gave.
"""

import json

from harness import (Source, check, expect_error, log, mdb_fresh, mx, q, q1, short, status,
                     wait_for)

DB = 'blf_ac_filt'


def rows(conn, sql):
    return sorted([tuple(r) for r in q(conn, sql)], key=repr)


def mrows(m, sql):
    return sorted([tuple(r) for r in mx(m, sql)], key=repr)


def same(got, exp, what):
    check(got == exp, '%s: PostgreSQL has %s, expected %s' % (what, short(got, 600), short(exp, 600)))


def stop(conn, m, src):
    pid = (status(conn, src.name) or {}).get('worker_pid')
    q(conn, 'SELECT binlog_fdw.stop(%s)', (src.name,))
    wait_for('source %s to stop' % src.name, lambda: status(conn, src.name) is None, 20, 0.1)
    # its worker gone (one retrying after an error may reconnect until it exits)
    wait_for('the worker of %s to exit' % src.name,
             lambda: not pid or not q1(conn, 'SELECT count(*) FROM pg_stat_activity WHERE pid = %s', (pid,)),
             20, 0.1)


def restart(conn, m, src):
    stop(conn, m, src)
    src.start()


def case_filters(conn, m):
    mdb_fresh(m, DB)
    mx(m, 'CREATE TABLE %s.people (id INT PRIMARY KEY, name VARCHAR(40), email VARCHAR(100), '
          'secret VARCHAR(40), note TEXT, score INT)' % DB)
    mx(m, 'CREATE TABLE %s.cols (id INT PRIMARY KEY, a INT, b INT, c VARCHAR(10))' % DB)
    mx(m, 'CREATE TABLE %s.ops (id INT PRIMARY KEY, v INT)' % DB)
    mx(m, 'CREATE TABLE %s.ddlt (id INT PRIMARY KEY, v INT)' % DB)
    mx(m, 'CREATE TABLE %s.rf (id INT PRIMARY KEY, region VARCHAR(10), amount INT, tag VARCHAR(10))' % DB)
    mx(m, 'CREATE TABLE %s.rf2 (id INT PRIMARY KEY, v INT)' % DB)
    mx(m, 'CREATE TABLE %s.bad (id INT PRIMARY KEY, v INT)' % DB)
    src = Source(conn, 'ac_filt', r'^blf_ac_filt\.')
    tables = ['%s.%s' % (DB, t) for t in ('people', 'cols', 'ops', 'ddlt', 'rf', 'rf2', 'bad')]
    src.snapshot(tables)

    # set_filter()'s checks
    expect_error(conn, "SELECT binlog_fdw.set_filter('ac_filt', 'blf_ac_filt.ops', operations => ARRAY['upsert'])",
                 what='an unknown operation', sqlstate='22023', message=['unknown operation', 'upsert'])
    expect_error(conn, "SELECT binlog_fdw.set_filter('ac_filt', 'blf_ac_filt.ops', columns => ARRAY['id'], "
                       "exclude_columns => ARRAY['v'])",
                 what='columns and exclude_columns', sqlstate='22023', message='cannot both be given')
    expect_error(conn, "SELECT binlog_fdw.set_filter('ac_filt', 'blf_ac_filt.ops', mask => '{\"v\": \"x\"}')",
                 what='a mask that is not an object', sqlstate='22023', message='the mask of column "v"')
    expect_error(conn, "SELECT binlog_fdw.set_filter('ac_filt', 'nodot', operations => ARRAY['insert'])",
                 what='a source without its database', sqlstate='22023', message='not of the form db.table')
    expect_error(conn, "SELECT binlog_fdw.set_filter('nosuchserver', operations => ARRAY['insert'])",
                 what='an unknown server', sqlstate='42704', message='"nosuchserver" does not exist')
    expect_error(conn, "SELECT binlog_fdw.set_filter('ac_filt', row_filter => 'id > 1')",
                 what='a row filter for every table', sqlstate='22023', message='a row filter is per table')

    # per source: secret never leaves the worker; per table: the rest
    q(conn, "SELECT binlog_fdw.set_filter('ac_filt', exclude_columns => ARRAY['secret'])")
    q(conn, "SELECT binlog_fdw.set_filter('ac_filt', 'blf_ac_filt.people', mask => "
            "'{\"email\": {\"hash\": \"sha256\"}, \"name\": {\"value\": \"***\"}, \"note\": {\"value\": null}}')")
    q(conn, "SELECT binlog_fdw.set_filter('ac_filt', 'blf_ac_filt.cols', columns => ARRAY['id', 'A'])")
    q(conn, "SELECT binlog_fdw.set_filter('ac_filt', 'blf_ac_filt.ops', operations => ARRAY['insert', 'update'])")
    q(conn, "SELECT binlog_fdw.set_filter('ac_filt', 'blf_ac_filt.ddlt', "
            "operations => ARRAY['insert', 'update', 'delete'])")
    q(conn, "SELECT binlog_fdw.set_filter('ac_filt', 'blf_ac_filt.rf', "
            "row_filter => $$region = 'eu' AND amount > 10$$)")
    src.start()
    hist = q(conn, 'SELECT seq, filters, binlog_file, binlog_pos FROM binlog_fdw.filter_history '
                   'WHERE server_name = %s ORDER BY seq', ('ac_filt',))
    check(len(hist) == 1, 'filter_history after the start: %s' % short(hist, 500))
    state = q(conn, 'SELECT file, pos FROM binlog_fdw.source_state WHERE server_name = %s',
              ('ac_filt',))[0]
    check((hist[0][2], hist[0][3]) == tuple(state),
          'filter_history position %s:%s, the start was at %s' % (hist[0][2], hist[0][3], state))
    check(sorted(f['source'] for f in hist[0][1]) ==
          ['*', 'blf_ac_filt.cols', 'blf_ac_filt.ddlt', 'blf_ac_filt.ops', 'blf_ac_filt.people', 'blf_ac_filt.rf'],
          'filter_history set: %s' % short(hist[0][1], 600))

    # people: masks and the source's excluded column
    mx(m, "INSERT INTO %s.people VALUES (1, 'Ann', 'ann@example.com', 's1', 'n1', 10), "
          "(2, 'Bob', NULL, 's2', NULL, 20), (3, NULL, 'c@example.com', NULL, 'n3', 30)" % DB)
    mx(m, "UPDATE %s.people SET email = 'bob@example.com', secret = 's2b', score = 21 WHERE id = 2" % DB)
    mx(m, "UPDATE %s.people SET name = 'Cy' WHERE id = 3" % DB)
    mx(m, 'DELETE FROM %s.people WHERE id = 1' % DB)
    mx(m, "INSERT INTO %s.people VALUES (4, 'Dee', 'dee@example.com', 's4', 'n4', 40)" % DB)
    # cols: only id and a
    mx(m, "INSERT INTO %s.cols VALUES (1, 10, 100, 'x'), (2, 20, 200, 'y')" % DB)
    mx(m, "UPDATE %s.cols SET a = 11, b = 101, c = 'xx' WHERE id = 1" % DB)
    mx(m, "UPDATE %s.cols SET b = 201 WHERE id = 2" % DB)    # nothing kept changes
    # ops: inserts and updates, no delete, no truncate
    mx(m, 'INSERT INTO %s.ops VALUES (1, 1), (2, 2), (3, 3)' % DB)
    mx(m, 'UPDATE %s.ops SET v = 20 WHERE id = 2' % DB)
    ops_expected = mrows(m, 'SELECT id, v FROM %s.ops' % DB)
    mx(m, 'DELETE FROM %s.ops WHERE id = 1' % DB)
    mx(m, 'TRUNCATE TABLE %s.ops' % DB)
    mx(m, 'INSERT INTO %s.ops VALUES (5, 5)' % DB)
    ops_expected.append((5, 5))
    # ddlt: no DDL (nor truncate)
    mx(m, 'INSERT INTO %s.ddlt VALUES (1, 1)' % DB)
    mx(m, 'ALTER TABLE %s.ddlt ADD COLUMN x INT' % DB)
    mx(m, 'INSERT INTO %s.ddlt VALUES (2, 2, 22)' % DB)
    mx(m, 'UPDATE %s.ddlt SET v = 11, x = 111 WHERE id = 1' % DB)
    # rf: in, out, moving out and in
    mx(m, "INSERT INTO %s.rf VALUES (1, 'eu', 20, 'in'), (2, 'eu', 5, 'low'), (3, 'us', 50, 'us'), "
          "(4, 'eu', 30, 'in'), (5, 'eu', 40, 'in'), (6, 'us', 60, 'us'), (7, NULL, 70, 'null')" % DB)
    mx(m, "UPDATE %s.rf SET amount = 3, tag = 'out' WHERE id = 1" % DB)        # moves out: a delete
    mx(m, "UPDATE %s.rf SET region = 'eu', tag = 'moved in' WHERE id = 3" % DB)  # moves in: an insert
    mx(m, "UPDATE %s.rf SET amount = 31, tag = 'stays' WHERE id = 4" % DB)     # stays in: an update
    mx(m, "UPDATE %s.rf SET amount = 61 WHERE id = 6" % DB)                    # stays out: nothing
    mx(m, "UPDATE %s.rf SET amount = 8 WHERE id = 2" % DB)                     # stays out (low)
    mx(m, 'DELETE FROM %s.rf WHERE id IN (5, 6)' % DB)                         # one in, one out

    # get(): the images as the ring holds them
    src.wait_read(m)
    got = q(conn, "SELECT op, before, after FROM binlog_fdw.get('ac_filt', 10000) "
                  "WHERE schema_name = %s AND table_name = 'people' ORDER BY seq", (DB,))
    q(conn, "SELECT binlog_fdw.rollback('ac_filt')")
    check(len(got) == 7, 'get(): %d changes of people, expected 7: %s' % (len(got), short(got, 600)))
    for op, before, after in got:
        for img in (before, after):
            if img is None:
                continue
            check('secret' not in img, 'get(): the excluded column is in an image: %s' % short(img, 300))
            check(img.get('name') in (None, '***'), 'get(): name not masked: %s' % short(img, 300))
            check(img.get('note') is None, 'get(): note not masked with NULL: %s' % short(img, 300))
    first = got[0][2]
    sha = mx(m, "SELECT SHA2('ann@example.com', 256)")[0][0]
    check(first['email'] == sha and first['id'] == 1 and first['score'] == 10,
          'get(): first insert %s, expected email %s' % (short(first, 300), sha))

    # apply everything but rf2 (its filter comes later)
    src.sync(m)
    same(rows(conn, 'SELECT id, name, email, secret, note, score FROM %s.people' % DB),
         mrows(m, "SELECT id, IF(name IS NULL, NULL, '***'), SHA2(email, 256), NULL, NULL, score "
                  "FROM %s.people" % DB), 'people (masks, excluded secret)')
    same(rows(conn, 'SELECT id, a, b, c FROM %s.cols' % DB),
         mrows(m, 'SELECT id, a, NULL, NULL FROM %s.cols' % DB), 'cols (columns id, a)')
    same(rows(conn, 'SELECT id, v FROM %s.ops' % DB), sorted(ops_expected, key=repr),
         'ops (no delete, no truncate)')
    same(rows(conn, 'SELECT id, v FROM %s.ddlt' % DB), mrows(m, 'SELECT id, v FROM %s.ddlt' % DB),
         'ddlt (rows without the DDL)')
    check(q1(conn, "SELECT count(*) FROM information_schema.columns WHERE table_schema = %s "
                   "AND table_name = 'ddlt' AND column_name = 'x'", (DB,)) == 0,
          'ddlt: the ADD COLUMN left out by the filter was applied')
    same(rows(conn, 'SELECT id, region, amount, tag FROM %s.rf' % DB),
         mrows(m, "SELECT id, region, amount, tag FROM %s.rf WHERE region = 'eu' AND amount > 10" % DB),
         'rf (row filter)')
    check(q1(conn, 'SELECT count(*) FROM %s.rf WHERE id = 1' % DB) == 0, 'rf: row 1 did not move out')
    check(q1(conn, "SELECT tag FROM %s.rf WHERE id = 3" % DB) == 'moved in', 'rf: row 3 did not move in')

    # a row filter naming a missing column: apply() says which, writes nothing
    q(conn, "SELECT binlog_fdw.set_filter('ac_filt', 'blf_ac_filt.rf2', row_filter => 'nosuch > 1')")
    mx(m, 'INSERT INTO %s.rf2 VALUES (2, 2)' % DB)
    src.apply_error(m, 'a row filter naming a missing column', sqlstate='42703',
                    message='column "nosuch" does not exist',
                    context=['row filter "nosuch > 1" of MySQL table blf_ac_filt.rf2'])
    check(q1(conn, 'SELECT count(*) FROM %s.rf2' % DB) == 0, 'rf2: rows written despite the error')
    q(conn, "SELECT binlog_fdw.set_filter('ac_filt', 'blf_ac_filt.rf2', row_filter => 'v > 1')")
    mx(m, 'INSERT INTO %s.rf2 VALUES (1, 1), (3, 3)' % DB)
    src.sync(m)
    same(rows(conn, 'SELECT id, v FROM %s.rf2' % DB), mrows(m, 'SELECT id, v FROM %s.rf2 WHERE v > 1' % DB),
         'rf2 (row filter, corrected)')

    # the worker: a column list naming a missing column stops it, naming it
    q(conn, "SELECT binlog_fdw.set_filter('ac_filt', 'blf_ac_filt.bad', exclude_columns => ARRAY['nosuch'])")
    before_restart = q(conn, 'SELECT file, pos FROM binlog_fdw.source_state '
                             'WHERE server_name = %s', ('ac_filt',))[0]
    restart(conn, m, src)
    hist = q(conn, 'SELECT seq, filters, binlog_file, binlog_pos FROM binlog_fdw.filter_history '
                   'WHERE server_name = %s ORDER BY seq', ('ac_filt',))
    check(len(hist) == 2 and (hist[1][2], hist[1][3]) == tuple(before_restart),
          'filter_history after the change: %s, the restart was at %s' % (short(hist, 800), before_restart))
    check(any(f['source'] == 'blf_ac_filt.bad' and f['exclude_columns'] == ['nosuch'] for f in hist[1][1]),
          'filter_history: the new set lacks the filter of bad: %s' % short(hist[1][1], 600))
    mx(m, 'INSERT INTO %s.bad VALUES (1, 1)' % DB)

    def failed():
        s = status(conn, src.name)
        return s if s and s['last_error'] and 'nosuch' in s['last_error'] else None
    s = wait_for('the worker to fail on the filter of bad', failed, 20, 0.2)
    log('worker error: %s' % short(s['last_error'], 500))
    for want in ('blf_ac_filt.bad', 'column "nosuch"', 'exclude_columns', 'at binlog mysql-bin.', 'set_filter'):
        check(want in s['last_error'], 'worker error lacks %r: %s' % (want, short(s['last_error'], 500)))
    check(q1(conn, 'SELECT count(*) FROM %s.bad' % DB) == 0, 'bad: rows despite the error')
    # a value for an INT column: stopped too, naming the column and its type
    q(conn, "SELECT binlog_fdw.set_filter('ac_filt', 'blf_ac_filt.bad', mask => '{\"v\": {\"value\": \"0\"}}')")
    restart(conn, m, src)

    def failed_mask():
        s = status(conn, src.name)
        return s if s and s['last_error'] and 'cannot be masked' in s['last_error'] else None
    s = wait_for('the worker to fail on the mask of bad', failed_mask, 20, 0.2)
    log('worker error: %s' % short(s['last_error'], 500))
    for want in ('column "v" of blf_ac_filt.bad (LONG)', '(binlog mysql-bin.',
                 '{"value": null}'):
        check(want in s['last_error'], 'worker error lacks %r: %s' % (want, short(s['last_error'], 500)))
    check(q1(conn, 'SELECT count(*) FROM %s.bad' % DB) == 0, 'bad: rows despite the mask error')
    q(conn, "SELECT binlog_fdw.set_filter('ac_filt', 'blf_ac_filt.bad')")        # removes it
    restart(conn, m, src)
    src.sync(m)
    same(rows(conn, 'SELECT id, v FROM %s.bad' % DB), mrows(m, 'SELECT id, v FROM %s.bad' % DB),
         'bad (filter removed)')
    check(q1(conn, 'SELECT count(*) FROM binlog_fdw.filter_history WHERE server_name = %s',
             ('ac_filt',)) == 4, 'filter_history: no row for the mask or the removal')
    # and what came before stays as it was applied
    same(rows(conn, 'SELECT id, name, email, secret, note, score FROM %s.people' % DB),
         mrows(m, "SELECT id, IF(name IS NULL, NULL, '***'), SHA2(email, 256), NULL, NULL, score "
                  "FROM %s.people" % DB), 'people after the restarts')
    # a set changed while a transaction is partly acknowledged is refused
    mx(m, 'INSERT INTO %s.bad VALUES (10, 10), (11, 11), (12, 12)' % DB)     # BEGIN, 3 rows, COMMIT
    src.wait_read(m)
    batch = q(conn, "SELECT DISTINCT batch_id FROM binlog_fdw.get('ac_filt', 2)")
    check(len(batch) == 1, 'get(2): batches %s' % batch)
    q(conn, 'SELECT binlog_fdw.ack(%s, %s)', ('ac_filt', batch[0][0]))
    skip = q1(conn, 'SELECT skip FROM binlog_fdw.source_state WHERE server_name = %s', ('ac_filt',))
    check(skip == 2, 'source_state.skip after acknowledging 2 changes: %s' % skip)
    q(conn, "SELECT binlog_fdw.set_filter('ac_filt', 'blf_ac_filt.bad', operations => ARRAY['insert'])")
    stop(conn, m, src)
    q(conn, 'SELECT binlog_fdw.start(%s)', (src.name,))

    def refused():
        s = status(conn, src.name)
        return s if s and s['last_error'] and 'partly acknowledged' in s['last_error'] else None
    s = wait_for('the worker to refuse the changed filters', refused, 20, 0.2)
    log('worker error: %s' % short(s['last_error'], 500))
    check(s['state'] == 'error' and 'filters changed' in s['last_error'] and '(2 changes)' in s['last_error'],
          'refused start: %s' % short(s, 600))
    check(q1(conn, 'SELECT count(*) FROM binlog_fdw.filter_history WHERE server_name = %s',
             ('ac_filt',)) == 4, 'filter_history recorded the refused set')
    q(conn, "SELECT binlog_fdw.set_filter('ac_filt', 'blf_ac_filt.bad')")        # back as it was
    restart(conn, m, src)
    # source_state.gtid is already the partly acknowledged transaction's
    mx(m, 'INSERT INTO %s.bad VALUES (13, 13)' % DB)
    src.sync(m)
    # row 10 went to get() and its ack, not to the table
    same(rows(conn, 'SELECT id, v FROM %s.bad' % DB), mrows(m, 'SELECT id, v FROM %s.bad WHERE id <> 10' % DB),
         'bad after the partly acknowledged transaction')

    # a copy gives what the stream gave: masked, without secret
    r = src.snapshot(['%s.people' % DB], True)
    n = len(mrows(m, 'SELECT id FROM %s.people' % DB))
    check(r[0][2] == n, 'snapshot() of people: %s, expected %d rows' % (r, n))
    same(rows(conn, 'SELECT id, name, email, secret, note, score FROM %s.people' % DB),
         mrows(m, "SELECT id, IF(name IS NULL, NULL, '***'), SHA2(email, 256), NULL, NULL, score "
                  "FROM %s.people" % DB), 'people copied again by snapshot()')
    log('filters: %s' % json.dumps([r[1] for r in hist][-1])[:300])
    q(conn, 'DELETE FROM binlog_fdw.filters WHERE server_name = %s', ('ac_filt',))
    q(conn, 'DELETE FROM binlog_fdw.filter_history WHERE server_name = %s', ('ac_filt',))
    src.drop()
