"""
test/apply_cases/cases_triggers.py -- apply into tables with triggers,
foreign keys and generated columns (issue #9 item 4).

  triggers   AFTER ROW triggers (INSERT, UPDATE, DELETE), an AFTER STATEMENT
             trigger, a deferred constraint trigger, a foreign key and
             generated columns (stored in PostgreSQL; PERSISTENT and VIRTUAL
             in MariaDB, before and after snapshot()), through apply() in a
             session with session_replication_role = origin (the user's
             triggers and the foreign key fire; no relcache or TupleDesc
             reference leak is reported), a foreign key violation stops
             apply() with SQLSTATE 23503 and nothing of the transaction is
             written; apply() in a session with session_replication_role =
             replica follows that session (only ENABLE REPLICA / ALWAYS
             triggers fire); the continuous apply worker runs as replica
             (ordinary triggers do not fire, ENABLE ALWAYS and ENABLE REPLICA
             ones do), like PostgreSQL's subscription workers.
"""

from cases_images import go_continuous, leave_continuous, wait_applied
from harness import (Source, check, expect_error, log, mdb_fresh, mx, pg, q, q1, short)

DB = 'blf_ac_trg'


def leaks(conn):
    """Reference-leak (or any) WARNINGs the server sent this connection."""
    bad = [n.strip() for n in conn.notices if 'WARNING' in n]
    del conn.notices[:]
    return bad


def same(conn, m, pg_sql, mdb_sql, what):
    got = sorted(q(conn, pg_sql), key=repr)
    exp = sorted([tuple(r) for r in mx(m, mdb_sql)], key=repr)
    check(got == exp, '%s: PostgreSQL has %s, MariaDB %s' % (what, short(got, 600), short(exp, 600)))


def compare_all(conn, m, what):
    same(conn, m, 'SELECT id, name FROM blf_ac_trg.parent', 'SELECT id, name FROM blf_ac_trg.parent',
         '%s: parent' % what)
    same(conn, m, 'SELECT id, parent_id, v FROM blf_ac_trg.child', 'SELECT id, parent_id, v FROM blf_ac_trg.child',
         '%s: child' % what)
    same(conn, m, 'SELECT id, a FROM blf_ac_trg.t', 'SELECT id, a FROM blf_ac_trg.t', '%s: t' % what)
    same(conn, m, 'SELECT id, a, b, c FROM blf_ac_trg.g', 'SELECT id, a, b, c FROM blf_ac_trg.g', '%s: g' % what)
    same(conn, m, 'SELECT id, a, b, c FROM blf_ac_trg.gs', 'SELECT id, a, b, c FROM blf_ac_trg.gs',
         '%s: gs (snapshot-created)' % what)


def audit(conn):
    return q(conn, 'SELECT op, id, a FROM public.trg_audit ORDER BY n')


def case_triggers(conn, m):
    mdb_fresh(m, DB)
    mx(m, 'CREATE TABLE blf_ac_trg.parent (id INT PRIMARY KEY, name VARCHAR(20))')
    mx(m, 'CREATE TABLE blf_ac_trg.child (id INT PRIMARY KEY, parent_id INT, v INT)')
    mx(m, 'CREATE TABLE blf_ac_trg.t (id INT PRIMARY KEY, a INT)')
    mx(m, 'CREATE TABLE blf_ac_trg.g (id INT PRIMARY KEY, a INT, b INT AS (a * 2) PERSISTENT, '
          'c INT AS (a + 1) VIRTUAL)')
    mx(m, 'CREATE TABLE blf_ac_trg.gs (id INT PRIMARY KEY, a INT, b INT AS (a * 3) PERSISTENT, '
          'c INT AS (a - 1) VIRTUAL)')
    mx(m, 'INSERT INTO blf_ac_trg.gs (id, a) VALUES (1, 10), (2, 20)')

    # PostgreSQL targets made by hand: a foreign key, stored generated
    # columns; gs is made by snapshot()
    q(conn, 'DROP SCHEMA IF EXISTS blf_ac_trg CASCADE')
    q(conn, 'DROP TABLE IF EXISTS public.trg_audit, public.trg_stmt, public.trg_deferred')
    q(conn, 'CREATE SCHEMA blf_ac_trg')
    q(conn, 'CREATE TABLE blf_ac_trg.parent (id int PRIMARY KEY, name text)')
    q(conn, 'CREATE TABLE blf_ac_trg.child (id int PRIMARY KEY, parent_id int '
            'CONSTRAINT child_parent_fk REFERENCES blf_ac_trg.parent (id), v int)')
    q(conn, 'CREATE TABLE blf_ac_trg.t (id int PRIMARY KEY, a int)')
    q(conn, 'CREATE TABLE blf_ac_trg.g (id int PRIMARY KEY, a int, '
            'b int GENERATED ALWAYS AS (a * 2) STORED, c int GENERATED ALWAYS AS (a + 1) STORED)')
    q(conn, 'CREATE TABLE public.trg_audit (n serial PRIMARY KEY, op text, id int, a int)')
    q(conn, 'CREATE TABLE public.trg_stmt (n serial PRIMARY KEY, op text)')
    q(conn, 'CREATE TABLE public.trg_deferred (n serial PRIMARY KEY, id int)')
    q(conn, """CREATE FUNCTION public.trg_audit_fn() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'DELETE' THEN
                INSERT INTO public.trg_audit (op, id, a) VALUES (TG_ARGV[0] || TG_OP, OLD.id, OLD.a);
            ELSE
                INSERT INTO public.trg_audit (op, id, a) VALUES (TG_ARGV[0] || TG_OP, NEW.id, NEW.a);
            END IF;
            RETURN NULL;
        END $$""")
    q(conn, """CREATE FUNCTION public.trg_stmt_fn() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN INSERT INTO public.trg_stmt (op) VALUES (TG_OP); RETURN NULL; END $$""")
    q(conn, """CREATE FUNCTION public.trg_deferred_fn() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN INSERT INTO public.trg_deferred (id) VALUES (NEW.id); RETURN NULL; END $$""")
    q(conn, "CREATE TRIGGER t_row AFTER INSERT OR UPDATE OR DELETE ON blf_ac_trg.t "
            "FOR EACH ROW EXECUTE FUNCTION public.trg_audit_fn('')")
    q(conn, "CREATE TRIGGER t_stmt AFTER INSERT OR UPDATE OR DELETE ON blf_ac_trg.t "
            "FOR EACH STATEMENT EXECUTE FUNCTION public.trg_stmt_fn()")
    q(conn, "CREATE CONSTRAINT TRIGGER t_deferred AFTER INSERT ON blf_ac_trg.t "
            "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.trg_deferred_fn()")

    src = Source(conn, 'ac_trg', r'^blf_ac_trg\.')
    src.snapshot(['blf_ac_trg.parent', 'blf_ac_trg.child', 'blf_ac_trg.t', 'blf_ac_trg.g', 'blf_ac_trg.gs'])
    src.start()
    check(q1(conn, 'SHOW session_replication_role') == 'origin', 'the test session is not in origin mode')
    # snapshot() loads like COPY (as a subscription's table sync does): its
    # statement triggers fire; apply fires row triggers only
    q(conn, 'TRUNCATE public.trg_stmt')
    del conn.notices[:]

    # ---- apply() in origin mode: triggers, FK, generated columns
    mx(m, "INSERT INTO blf_ac_trg.parent VALUES (1, 'p1'), (2, 'p2')")
    mx(m, 'INSERT INTO blf_ac_trg.child VALUES (10, 1, 100), (11, 2, 110)')
    mx(m, 'INSERT INTO blf_ac_trg.t VALUES (1, 10), (2, 20), (3, 30)')
    mx(m, 'UPDATE blf_ac_trg.t SET a = 21 WHERE id = 2')
    mx(m, 'DELETE FROM blf_ac_trg.t WHERE id = 3')
    mx(m, 'INSERT INTO blf_ac_trg.g (id, a) VALUES (1, 5), (2, NULL), (3, 7)')
    mx(m, 'UPDATE blf_ac_trg.g SET a = 8 WHERE id = 3')
    mx(m, 'INSERT INTO blf_ac_trg.gs (id, a) VALUES (3, 30)')
    mx(m, 'UPDATE blf_ac_trg.gs SET a = 11 WHERE id = 1')
    mx(m, 'UPDATE blf_ac_trg.child SET v = 101 WHERE id = 10')
    src.sync(m)
    bad = leaks(conn)
    check(not bad, 'apply() into tables with triggers and a foreign key: %d WARNINGs, first %s'
          % (len(bad), short(bad[:3], 600)))
    compare_all(conn, m, 'origin mode')
    got = audit(conn)
    exp = [('INSERT', 1, 10), ('INSERT', 2, 20), ('INSERT', 3, 30), ('UPDATE', 2, 21), ('DELETE', 3, 30)]
    check(got == exp, 'AFTER ROW trigger rows %s, expected %s' % (got, exp))
    # PostgreSQL's convention for replication apply: row triggers only
    check(q1(conn, 'SELECT count(*) FROM public.trg_stmt') == 0,
          'an AFTER STATEMENT trigger fired under apply(): %s' % q(conn, 'SELECT * FROM public.trg_stmt'))
    got = [r[0] for r in q(conn, 'SELECT id FROM public.trg_deferred ORDER BY n')]
    check(got == [1, 2, 3], 'the deferred constraint trigger fired for %s, expected [1, 2, 3]' % got)

    # ---- a foreign key violation stops apply(); nothing of it is written
    mx(m, 'START TRANSACTION')
    mx(m, 'INSERT INTO blf_ac_trg.t VALUES (50, 500)')
    mx(m, 'INSERT INTO blf_ac_trg.child VALUES (12, 999, 120)')
    mx(m, 'COMMIT')
    before = src.applied_gtid()
    src.apply_error(m, 'apply() of a child row without its parent', sqlstate='23503',
                    message='child_parent_fk')
    check(q1(conn, 'SELECT count(*) FROM blf_ac_trg.t WHERE id = 50') == 0,
          'the transaction of the foreign key violation was partly written')
    check(src.applied_gtid() == before, 'the position moved past the failed transaction: %s -> %s'
          % (before, src.applied_gtid()))
    leaks(conn)
    # ---- apply() in a session with session_replication_role = replica:
    # ordinary triggers and the foreign key do not fire (as in a
    # subscription), ALWAYS ones do: the transaction that failed in origin
    # mode applies, as MariaDB (without the foreign key) has it
    q(conn, 'ALTER TABLE blf_ac_trg.t ENABLE ALWAYS TRIGGER t_deferred')
    n_audit = len(audit(conn))
    q(conn, 'SET session_replication_role = replica')
    r = src.apply()
    check(r['transactions'] >= 1, 'replica-mode apply() applied nothing: %s' % r)
    mx(m, 'INSERT INTO blf_ac_trg.t VALUES (51, 510)')
    src.sync(m)
    q(conn, 'RESET session_replication_role')
    bad = leaks(conn)
    check(not bad, 'apply() in replica mode: WARNINGs %s' % short(bad[:3], 600))
    compare_all(conn, m, 'replica-mode apply()')
    check(len(audit(conn)) == n_audit, 'an ordinary AFTER ROW trigger fired under apply() in a replica-mode '
          'session: %s' % audit(conn)[n_audit:])
    got = [r[0] for r in q(conn, 'SELECT id FROM public.trg_deferred ORDER BY n')]
    check(got == [1, 2, 3, 50, 51], 'the ENABLE ALWAYS deferred trigger fired for %s, expected [1, 2, 3, 50, 51]'
          % got)
    q(conn, 'ALTER TABLE blf_ac_trg.t ENABLE TRIGGER t_deferred')

    # ---- the continuous apply worker runs as replica
    go_continuous(conn, src)
    mx(m, 'INSERT INTO blf_ac_trg.t VALUES (60, 600)')
    mx(m, "INSERT INTO blf_ac_trg.parent VALUES (3, 'p3')")
    mx(m, 'INSERT INTO blf_ac_trg.child VALUES (13, 3, 130)')
    mx(m, 'INSERT INTO blf_ac_trg.g (id, a) VALUES (4, 40)')
    wait_applied(src, m, 'continuous, ordinary triggers')
    compare_all(conn, m, 'continuous mode')
    check(len(audit(conn)) == n_audit, 'an ordinary AFTER ROW trigger fired in the continuous worker: %s'
          % audit(conn)[n_audit:])
    check(q1(conn, 'SELECT count(*) FROM public.trg_deferred WHERE id = 60') == 0,
          'an ordinary deferred trigger fired in the continuous worker')
    q(conn, 'ALTER TABLE blf_ac_trg.t ENABLE ALWAYS TRIGGER t_row')
    q(conn, 'ALTER TABLE blf_ac_trg.t ENABLE REPLICA TRIGGER t_deferred')
    mx(m, 'INSERT INTO blf_ac_trg.t VALUES (61, 610)')
    mx(m, 'UPDATE blf_ac_trg.t SET a = 611 WHERE id = 61')
    wait_applied(src, m, 'continuous, ALWAYS and REPLICA triggers')
    compare_all(conn, m, 'continuous mode, ALWAYS trigger')
    got = audit(conn)[n_audit:]
    check(got == [('INSERT', 61, 610), ('UPDATE', 61, 611)],
          'the ENABLE ALWAYS trigger in the continuous worker wrote %s' % got)
    check(q1(conn, 'SELECT count(*) FROM public.trg_deferred WHERE id = 61') == 1,
          'the ENABLE REPLICA deferred trigger did not fire in the continuous worker')
    check(q1(conn, 'SELECT count(*) FROM public.trg_stmt') == 0, 'an AFTER STATEMENT trigger fired')
    s = q(conn, 'SELECT last_error FROM binlog_fdw.status WHERE server = %s', ('ac_trg',))
    check(s and not s[0][0], 'the continuous worker reports an error: %s' % s)
    leave_continuous(conn, src)
    src.drop()
    q(conn, 'DROP SCHEMA blf_ac_trg CASCADE')
    q(conn, 'DROP TABLE public.trg_audit, public.trg_stmt, public.trg_deferred')
    q(conn, 'DROP FUNCTION public.trg_audit_fn(), public.trg_stmt_fn(), public.trg_deferred_fn()')
    mx(m, 'DROP DATABASE blf_ac_trg')
    log('triggers: row, statement, deferred and ALWAYS/REPLICA triggers, a foreign key and generated '
        'columns through apply() (origin and replica sessions) and the continuous worker')
