"""
test/apply_cases/cases_status.py -- what the status view and the consumer
functions say about errors (issue #9 item 8).

  error-status   ack() and rollback() of an id that is not outstanding name
                 the id the user gave (negative and the largest bigint, not
                 their unsigned reading); the source worker's connection is
                 killed in MariaDB: last_error and last_error_time name the
                 failure, last_error_cleared is NULL while it holds and is
                 set once the worker streams again (the error stays shown);
                 the continuous apply worker stops at a duplicate key:
                 apply_error, apply_error_time, apply_error_cleared NULL;
                 after the fix it applies again, apply_error_cleared is set
                 and the tables equal MariaDB's
"""

from cases_images import go_continuous, leave_continuous, wait_applied
from harness import (Source, check, expect_error, log, mdb_fresh, mx, q, short, status, wait_for)

DB = 'blf_ac_err'


def case_error_status(conn, m):
    mdb_fresh(m, DB)
    mx(m, 'CREATE TABLE blf_ac_err.t (id INT PRIMARY KEY, v INT)')
    mx(m, 'INSERT INTO blf_ac_err.t VALUES (1, 10)')
    src = Source(conn, 'ac_err', r'^blf_ac_err\.')
    src.snapshot(['blf_ac_err.t'])
    s = src.start()
    check(s['last_error'] is None and s['last_error_cleared'] is None and s['apply_error_cleared'] is None,
          'a new source shows an error: %s' % short(s, 600))

    # ---- ack()/rollback() of an id that is not outstanding: the id given
    for bad in ('-5', '9223372036854775807', '0'):
        expect_error(conn, 'SELECT binlog_fdw.ack(%s, %s)', ('ac_err', int(bad)), 'ack(%s)' % bad,
                     sqlstate='22023', message='batch %s is not outstanding on source "ac_err"' % bad)
    expect_error(conn, 'SELECT binlog_fdw.rollback(%s, %s)', ('ac_err', -7), 'rollback(-7)',
                 sqlstate='22023', message='batch -7 is not outstanding on source "ac_err"')

    # ---- the source worker loses its connection and recovers
    dumps = [r[0] for r in mx(m, "SELECT id FROM information_schema.processlist "
                                 "WHERE command LIKE 'Binlog Dump%%'")]
    check(dumps, 'no binlog dump thread in MariaDB')
    for tid in dumps:
        mx(m, 'KILL %d' % tid)
    st = wait_for('the source to report the lost connection',
                  lambda: (lambda s: s if s and s['last_error'] else None)(status(conn, 'ac_err')), 30, 0.05)
    log('error-status: after KILL: state %s, last_error %s, cleared %s'
        % (st['state'], short(st['last_error'], 200), st['last_error_cleared']))
    check(st['last_error_time'] is not None, 'last_error without last_error_time: %s' % short(st, 600))
    st = wait_for('the source to stream again',
                  lambda: (lambda s: s if s and s['state'] == 'streaming' and s['last_error_cleared']
                           else None)(status(conn, 'ac_err')), 60, 0.1)
    check(st['last_error'], 'the last error is not shown after recovery: %s' % short(st, 600))
    check(st['last_error_cleared'] >= st['last_error_time'],
          'last_error_cleared %s before last_error_time %s' % (st['last_error_cleared'], st['last_error_time']))
    mx(m, 'INSERT INTO blf_ac_err.t VALUES (2, 20)')
    src.sync(m)
    check(q(conn, 'SELECT id, v FROM blf_ac_err.t ORDER BY id') == [(1, 10), (2, 20)],
          'rows after the reconnect: %s' % q(conn, 'SELECT id, v FROM blf_ac_err.t ORDER BY id'))

    # ---- the continuous apply worker stops at an error, then recovers
    go_continuous(conn, src)
    q(conn, 'INSERT INTO blf_ac_err.t VALUES (5, -1)')    # what MariaDB inserts next
    mx(m, 'INSERT INTO blf_ac_err.t VALUES (5, 50)')
    st = wait_for('the apply worker to report the duplicate key',
                  lambda: (lambda s: s if s and s['apply_error'] else None)(status(conn, 'ac_err')), 30, 0.1)
    check('t_pkey' in st['apply_error'] and st['apply_error_time'] is not None and
          st['apply_error_cleared'] is None, 'apply error status: %s' % short(st, 800))
    q(conn, 'DELETE FROM blf_ac_err.t WHERE id = 5')      # the fix
    mx(m, 'INSERT INTO blf_ac_err.t VALUES (6, 60)')
    wait_applied(src, m, 'continuous after the fix')
    st = wait_for('apply_error_cleared', lambda: (lambda s: s if s and s['apply_error_cleared'] else None)(
        status(conn, 'ac_err')), 30, 0.1)
    check(st['apply_error'] and 't_pkey' in st['apply_error'],
          'the last apply error is not shown after recovery: %s' % short(st, 800))
    check(st['apply_error_cleared'] >= st['apply_error_time'],
          'apply_error_cleared %s before apply_error_time %s' % (st['apply_error_cleared'], st['apply_error_time']))
    got = q(conn, 'SELECT id, v FROM blf_ac_err.t ORDER BY id')
    exp = [tuple(r) for r in mx(m, 'SELECT id, v FROM blf_ac_err.t ORDER BY id')]
    check(got == exp, 'after recovery PostgreSQL has %s, MariaDB %s' % (got, exp))
    leave_continuous(conn, src)
    src.drop()
    q(conn, 'DROP SCHEMA blf_ac_err CASCADE')
    mx(m, 'DROP DATABASE blf_ac_err')
    log('error-status: ack ids as given; last_error and apply_error with their cleared times')
