"""
test/typed/typed.py -- typed foreign tables, live (suite 66-typed): IMPORT
FOREIGN SCHEMA from MariaDB main, the buffered changes of one table as typed
rows, pushdown, joins, a stale definition after DDL.

Cases (one "ok - typed/NAME" line each):
  import        the imported tables: one per base table (LIMIT TO / EXCEPT),
                the change columns, options schema_name/table_name and
                column_name, column types equal to the ones apply creates
  values        the every-type table of test/streaming/values.py: 7 inserts,
                an update, a delete; the last typed image of each row equals,
                column by column (as text), MariaDB's row as sync_table()
                loads it (the snapshot path: text and the types' input
                functions, checked against MariaDB by 85-apply-cases); the
                before images equal the inserted rows; the imported column
                types equal the ones sync_table() creates
  pushdown      WHERE on _binlog_op, _binlog_seq and _binlog_commit_time is in
                EXPLAIN's Ring Filter and gives the rows the same WHERE gives
                unpushed; a join with an ordinary table
  scans-at-once a cursor paused in its scan while its session scans the
                table again after another session acked (the copy of the
                ring starts elsewhere) and self-joins it: every scan shows
                its own changes
  get-table     get_table(): the rows of the peek, with the batch; rollback
                delivers them again; an ack in an aborted transaction keeps
                them; an ack removes them; batches of other tables are
                acknowledged in the caller's transaction when oldest, else
                delivered again
  get-table-large  3000 rows and 3000 updates (some leaving every column
                but k and doc as it was): get_table() under work_mem 64MB
                and, three times in one session, under work_mem 64kB (a
                result past work_mem) gives the peek's
                rows; each row's first image equals the inserted row and its
                last MariaDB's
  hostile-names a table and columns named with quotes, backticks, spaces and
                non-ASCII letters, into a schema of such a name
  stale         ADD COLUMN on the source: the foreign table's scan stops with
                an error naming the table and how to import again; never a
                value under another column; the re-imported table reads the
                changes after the DDL; a DECIMAL scale or DATETIME precision
                widened under the same name is stale too (no silent rounding)
  jsonb         JSON documents of every shape (nested, escapes, unicode, numbers
                at the fast paths' limits, literals, empty containers,
                duplicate keys, more than 32 elements, scalars, temporal
                strings): with binlog_fdw.verify_jsonb each typed value
                (peek and get_table()) is also made by jsonb_in from the same
                text and must be the same bytes; values as text equal
                MariaDB's text through jsonb; the values that need no \\u
                escape take the fast path; varchar(n) and numeric(p,s) values
                at their limits equal MariaDB's, numeric(p,s) with the same
                numeric_send bytes as numeric_in's of its text
  partial-image throwaway MariaDB instances with binlog_row_image MINIMAL
                (ty-minimal, BLF_TYPED_MINIMAL_PORT, 3451) and NOBLOB
                (ty-noblob, BLF_TYPED_NOBLOB_PORT, 3452): a column an image
                lacks is never a silent NULL: by default reading it is an
                error naming the table, column and binlog position (peek and
                get_table()); with partial_image 'null' it is NULL and listed
                in _binlog_absent; a real NULL is NULL and not listed; an
                update's after image takes the columns it lacks from the
                before image (unchanged)
"""
import collections
import copy
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'streaming'))

import psycopg2                                      # noqa: E402

import common                                        # noqa: E402
from common import (Fail, check, log, mdb, mx, q, q1, short, start_source, drop_source,  # noqa: E402
                    wait_for)
import values                                        # noqa: E402
from common import MARIADB_SH, RUN, sh               # noqa: E402

PGDB = 'blf_typed'
MINIMAL_PORT = int(os.environ.get('BLF_TYPED_MINIMAL_PORT', '3451'))
NOBLOB_PORT = int(os.environ.get('BLF_TYPED_NOBLOB_PORT', '3452'))
MDB = 'blf_typed'                # streamed (the source's include)
IDB = 'blf_typed_imp'            # only imported (a view: apply has no part in it)


def pg(db=PGDB):
    c = psycopg2.connect(host=common.PGHOST, port=common.PGPORT, user=common.PGUSER, dbname=db,
                         application_name='66-typed', connect_timeout=10)
    c.autocommit = True
    return c


def case_import(conn, m):
    mx(m, 'CREATE TABLE %s.imp_a (id INT PRIMARY KEY, `_weird "name"` VARCHAR(5), t TINYINT(1))' % IDB)
    mx(m, 'CREATE TABLE %s.imp_b (id BIGINT UNSIGNED PRIMARY KEY)' % IDB)
    mx(m, 'CREATE VIEW %s.imp_v AS SELECT id FROM %s.imp_b' % (IDB, IDB))
    q(conn, 'CREATE SCHEMA imp1')
    q(conn, 'IMPORT FOREIGN SCHEMA %s LIMIT TO (imp_a, imp_v) FROM SERVER tsrc INTO imp1' % IDB)
    got = [r[0] for r in q(conn, "SELECT relname FROM pg_class WHERE relnamespace = 'imp1'::regnamespace "
                                 "ORDER BY 1")]
    check(got == ['imp_a'], 'LIMIT TO (imp_a, imp_v) imported %s (a view is not a table)' % got)
    q(conn, 'CREATE SCHEMA imp2')
    q(conn, 'IMPORT FOREIGN SCHEMA %s EXCEPT (imp_a) FROM SERVER tsrc INTO imp2' % IDB)
    got = [r[0] for r in q(conn, "SELECT relname FROM pg_class WHERE relnamespace = 'imp2'::regnamespace "
                                 "ORDER BY 1")]
    check('imp_a' not in got and 'imp_b' in got, 'EXCEPT (imp_a) imported %s' % got)
    cols = q(conn, "SELECT a.attname, format_type(a.atttypid, a.atttypmod), "
                   "array_to_string(a.attfdwoptions, ',') FROM pg_attribute a "
                   "WHERE a.attrelid = 'imp1.imp_a'::regclass AND a.attnum > 0 ORDER BY a.attnum")
    want = [('_binlog_seq', 'bigint', None), ('_binlog_op', 'text', None), ('_binlog_image', 'text', None),
            ('_binlog_commit_time', 'timestamp with time zone', None), ('_binlog_file', 'text', None),
            ('_binlog_pos', 'bigint', None), ('_binlog_gtid', 'text', None), ('_binlog_xid', 'bigint', None),
            ('_binlog_batch', 'bigint', None), ('_binlog_absent', 'text[]', None),
            ('id', 'integer', 'column_name=id'),
            ('_weird "name"', 'character varying(5)', 'column_name=_weird "name"'),
            ('t', 'smallint', 'column_name=t')]
    check(cols == want, 'columns of imp1.imp_a: %s' % cols)
    opts = q1(conn, "SELECT array_to_string(ftoptions, ',') FROM pg_foreign_table "
                    "WHERE ftrelid = 'imp1.imp_a'::regclass")
    check(opts == 'schema_name=%s,table_name=imp_a' % IDB, 'table options %s' % opts)
    t = q1(conn, "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                 "WHERE attrelid = 'imp2.imp_b'::regclass AND attname = 'id'")
    check(t == 'numeric(20,0)', 'BIGINT UNSIGNED imported as %s' % t)
    # the server's tinyint1_boolean applies
    q(conn, "ALTER SERVER tsrc OPTIONS (ADD tinyint1_boolean 'true')")
    q(conn, 'CREATE SCHEMA imp3')
    q(conn, 'IMPORT FOREIGN SCHEMA %s LIMIT TO (imp_a) FROM SERVER tsrc INTO imp3' % IDB)
    q(conn, "ALTER SERVER tsrc OPTIONS (DROP tinyint1_boolean)")
    t = q1(conn, "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                 "WHERE attrelid = 'imp3.imp_a'::regclass AND attname = 't'")
    check(t == 'boolean', 'TINYINT(1) with tinyint1_boolean imported as %s' % t)
    # a database the source does not have
    try:
        q(conn, 'IMPORT FOREIGN SCHEMA no_such_db FROM SERVER tsrc INTO imp3')
        raise Fail('IMPORT FOREIGN SCHEMA of a missing database gave no error')
    except psycopg2.Error as e:
        check(e.pgcode == 'HV00Q' and 'no database "no_such_db"' in (e.pgerror or ''),
              'missing database: %s %s' % (e.pgcode, e.pgerror))


def wait_rows(conn, sql, n, what):
    return wait_for(what, lambda: (q1(conn, sql) or 0) >= n and q1(conn, sql), timeout=60)


def nul_free(cols):
    """The all-types columns without NUL characters in text values
    (PostgreSQL text cannot hold them: an error, as in apply)."""
    out = copy.deepcopy(cols)
    for c in out:
        if c.kind != 'text':
            continue
        for i, v in enumerate(c.values):
            if isinstance(v, str) and '\0' in v:
                c.values[i] = v.replace('\0', '<nul>')
            if isinstance(v, values.Raw) and "X'00'" in v.sql.replace(' ', ''):
                c.values[i] = values.latin1(b'<nul>')
    return out


def case_values(conn, m):
    cols = nul_free(values.columns())
    table = '%s.alltypes' % MDB
    mx(m, values.create_sql(table, cols))
    q(conn, 'CREATE SCHEMA ft')
    q(conn, 'IMPORT FOREIGN SCHEMA %s LIMIT TO (alltypes) FROM SERVER tsrc INTO ft' % MDB)
    for r in range(7):
        mx(m, 'INSERT INTO %s (id, %s) VALUES (%d, %s)' % (
            table, ', '.join('`%s`' % c.name for c in cols), r + 1, ', '.join(values.row_values(m, cols, r))))
    # an update changing every column (row 2 takes row 5's values), a delete
    mx(m, 'UPDATE %s SET %s WHERE id = 2' % (table, ', '.join(
        '`%s` = %s' % (c.name, v) for c, v in zip(cols, values.row_values(m, cols, 4)))))
    mx(m, 'DELETE FROM %s WHERE id = 3' % table)
    n = wait_rows(conn, 'SELECT count(*) FROM ft.alltypes', 10, '10 typed rows')
    check(n == 10, '%s typed rows, want 10 (7 inserts, an update as 2, a delete)' % n)
    shape = q(conn, 'SELECT id, _binlog_op, _binlog_image FROM ft.alltypes ORDER BY _binlog_seq, '
                    "_binlog_image = 'after'")
    want = [(i, 'insert', 'after') for i in range(1, 8)] + [(2, 'update', 'before'), (2, 'update', 'after'),
                                                          (3, 'delete', 'before')]
    check(shape == want, 'typed rows: %s' % shape)
    meta = q(conn, "SELECT count(*) FILTER (WHERE _binlog_commit_time IS NULL OR _binlog_file IS NULL "
                   "OR _binlog_pos IS NULL OR _binlog_gtid IS NULL OR _binlog_xid IS NULL), "
                   "count(DISTINCT _binlog_xid) FROM ft.alltypes")[0]
    check(meta == (0, 9), 'change columns: %s NULL rows, %s transactions (want 0, 9)' % meta)
    q(conn, 'CREATE TABLE peek AS SELECT * FROM ft.alltypes')
    # MariaDB's rows now, through the snapshot path (text, the types' input
    # functions: another conversion than the typed rows'), into blf_typed.alltypes
    q(conn, 'CREATE SCHEMA %s' % MDB)
    q(conn, 'SELECT * FROM binlog_fdw.sync_table(%s, %s)', ('tsrc', table))
    ack_all(conn)
    # a NUL character cannot go into text: the same error as apply's
    mx(m, "INSERT INTO %s (id, nn, v) VALUES (100, 'x', 'a\\0b')" % table)
    # a query that does not read v converts only what it reads: no error
    wait_for('the NUL row', lambda: q1(conn, 'SELECT count(*) FROM ft.alltypes WHERE id = 100'), timeout=60)
    try:
        got = q(conn, 'SELECT v FROM ft.alltypes WHERE id = 100')
        raise Fail('a NUL character in a text column gave no error: %s' % short(got, 200))
    except psycopg2.Error as e:
        check(e.pgcode == '22021' and 'column "v"' in (e.pgerror or ''), 'NUL: %s %s' % (e.pgcode, e.pgerror))
    ack_all(conn)
    names = [c.name for c in cols]
    # the imported types are the types apply created
    ft_types = q(conn, "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
                       "WHERE attrelid = 'ft.alltypes'::regclass AND attnum > 0 AND attname NOT LIKE '\\_binlog\\_%%' "
                       "ORDER BY attnum")
    ap_types = q(conn, "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
                       "WHERE attrelid = '%s.alltypes'::regclass AND attnum > 0 AND NOT attisdropped "
                       "ORDER BY attnum" % MDB)
    check(ft_types == ap_types, 'imported types differ from the created table: %s' % short(
        [(a, b) for a, b in zip(ft_types, ap_types) if a != b], 600))
    sel = ', '.join('%s::text' % psycopg2.extensions.quote_ident(c, conn) for c in ['id'] + names)
    # the final state from the typed rows: the last image of each row not deleted
    final = q(conn, "SELECT %s FROM (SELECT DISTINCT ON (id) * FROM peek ORDER BY id, _binlog_seq DESC, "
                    "_binlog_image = 'after' DESC) p WHERE _binlog_op <> 'delete' ORDER BY id" % sel)
    loaded = q(conn, 'SELECT %s FROM %s.alltypes ORDER BY id' % (sel, MDB))
    check(len(final) == 6 and len(loaded) == 6, 'rows: typed %d, MariaDB %d' % (len(final), len(loaded)))
    for fr, ar in zip(final, loaded):
        for name, fv, av in zip(['id'] + names, fr, ar):
            check(fv == av, 'row %s column %s: typed %s, MariaDB %s' % (fr[0], name, short(fv), short(av)))
    # the before image of the update and the delete's row: the inserted values
    for rid in (2, 3):
        ins = q(conn, "SELECT %s FROM peek WHERE id = %d AND _binlog_op = 'insert'" % (sel, rid))[0]
        bef = q(conn, "SELECT %s FROM peek WHERE id = %d AND _binlog_op <> 'insert' "
                      "AND _binlog_image = 'before'" % (sel, rid))[0]
        check(ins == bef, 'row %d: before image differs from the inserted row: %s' % (rid, short(
            [(n, a, b) for n, a, b in zip(['id'] + names, ins, bef) if a != b], 400)))
    log('values: %d columns of %d rows compared' % (len(names) + 1, len(final)))


def ack_all(conn):
    """Acknowledge everything buffered (get() and ack())."""
    while True:
        b = q1(conn, 'SELECT max(batch_id) FROM binlog_fdw.get(%s, 100000)', ('tsrc',))
        if b is None:
            return
        q(conn, 'SELECT binlog_fdw.ack(%s, %s)', ('tsrc', b))


def case_pushdown(conn, m):
    table = '%s.pd' % MDB
    mx(m, 'CREATE TABLE %s (id INT PRIMARY KEY, v INT)' % table)
    q(conn, 'IMPORT FOREIGN SCHEMA %s LIMIT TO (pd) FROM SERVER tsrc INTO ft' % MDB)
    for i in range(1, 21):
        mx(m, 'INSERT INTO %s VALUES (%d, %d)' % (table, i, i * 10))
    mx(m, 'UPDATE %s SET v = v + 1 WHERE id <= 5' % table)
    mx(m, 'DELETE FROM %s WHERE id > 15' % table)
    wait_rows(conn, 'SELECT count(*) FROM ft.pd', 35, '35 typed rows of pd')
    seqs = [r[0] for r in q(conn, 'SELECT DISTINCT _binlog_seq FROM ft.pd ORDER BY 1')]
    mid = seqs[len(seqs) // 2]
    ct = q1(conn, 'SELECT min(_binlog_commit_time) FROM ft.pd')
    for where, ring in [
            ("_binlog_op = 'update'", "_binlog_op = 'update'"),
            ('_binlog_seq > %d' % mid, '_binlog_seq > %d' % mid),
            ("_binlog_seq >= %d AND _binlog_op = 'insert'" % mid, None),
            ("_binlog_commit_time >= '%s'" % ct, '_binlog_commit_time >= '),
            ("_binlog_commit_time < '%s'" % ct, '_binlog_commit_time < '),
            ('_binlog_seq = %d' % mid, '_binlog_seq = %d' % mid)]:
        plan = '\n'.join(r[0] for r in q(conn, 'EXPLAIN (VERBOSE) SELECT * FROM ft.pd WHERE ' + where))
        check('Ring Filter:' in plan and (ring is None or ring in plan), 'no pushdown of %s in:\n%s' % (where, plan))
        pushed = q(conn, 'SELECT _binlog_seq, _binlog_image, id, v FROM ft.pd WHERE %s ORDER BY 1, 2' % where)
        # the same condition evaluated by PostgreSQL only (OFFSET 0 keeps it out of the scan)
        local = q(conn, 'SELECT _binlog_seq, _binlog_image, id, v FROM (SELECT * FROM ft.pd OFFSET 0) x '
                        'WHERE %s ORDER BY 1, 2' % where)
        check(pushed == local, '%s: pushed %d rows, unpushed %d' % (where, len(pushed), len(local)))
    check(len(q(conn, "SELECT 1 FROM ft.pd WHERE _binlog_op = 'update'")) == 10, 'update rows')
    # a join with an ordinary table
    q(conn, 'CREATE TABLE names (id int PRIMARY KEY, name text)')
    q(conn, "INSERT INTO names SELECT g, 'n' || g FROM generate_series(1, 20) g")
    got = q(conn, "SELECT n.name, p.v FROM ft.pd p JOIN names n ON n.id = p.id "
                  "WHERE p._binlog_op = 'update' AND p._binlog_image = 'after' ORDER BY n.id")
    check(got == [('n%d' % i, i * 10 + 1) for i in range(1, 6)], 'join: %s' % got)


def case_scans_at_once(conn, m):
    """Scans at the same time in one session: one has the buffer of changes
    kept between scans, the others their own.  A cursor paused in the middle
    of its scan keeps showing its changes while, in its session, a scan
    copies the ring again after another session acked them (so the copy
    starts elsewhere) and a self-join runs."""
    table = '%s.sa' % MDB
    mx(m, 'CREATE TABLE %s (id INT PRIMARY KEY, v INT)' % table)
    q(conn, 'IMPORT FOREIGN SCHEMA %s LIMIT TO (sa) FROM SERVER tsrc INTO ft' % MDB)
    for i in range(1, 21):
        mx(m, 'INSERT INTO %s VALUES (%d, %d)' % (table, i, i * 10))
    wait_rows(conn, 'SELECT count(*) FROM ft.sa', 20, '20 typed rows of sa')
    other = pg()
    try:
        cur = conn.cursor()
        cur.execute('BEGIN')
        cur.execute('DECLARE paused CURSOR FOR SELECT id, v FROM ft.sa')
        cur.execute('FETCH 12 FROM paused')
        first = cur.fetchall()
        ack_all(other)
        for i in range(21, 26):
            mx(m, 'INSERT INTO %s VALUES (%d, %d)' % (table, i, i * 10))
        wait_rows(other, 'SELECT count(*) FROM ft.sa', 5, 'the 5 typed rows of sa after the ack')
        during = q(conn, 'SELECT id, v FROM ft.sa')
        joined = q(conn, 'SELECT a.id, b.v FROM ft.sa a JOIN ft.sa b '
                         'ON a._binlog_seq = b._binlog_seq AND a._binlog_image = b._binlog_image')
        cur.execute('FETCH ALL FROM paused')
        rest = cur.fetchall()
        cur.execute('COMMIT')
    finally:
        other.close()
    later = [(i, i * 10) for i in range(21, 26)]
    check(sorted(during) == later, 'a scan while a cursor is open: %s' % sorted(during))
    check(sorted(joined) == later, 'a self-join while a cursor is open: %s' % sorted(joined))
    check(len(first) == 12 and sorted(first + rest) == [(i, i * 10) for i in range(1, 21)],
          'the paused cursor: %s then %s' % (first, rest))
    check(sorted(q(conn, 'SELECT id, v FROM ft.sa')) == later, 'sa after the cursor')


def case_get_table(conn, m):
    cols = '_binlog_seq, _binlog_op, _binlog_image, id, v'
    peek = q(conn, 'SELECT %s FROM ft.pd ORDER BY 1, 3' % cols)
    check(len(peek) == 35, 'peek of pd: %d rows' % len(peek))
    got = q(conn, 'SELECT _binlog_batch, %s FROM binlog_fdw.get_table(%%s, NULL::ft.pd) ORDER BY 2, 4' % cols,
            ('tsrc',))
    batches = sorted(set(r[0] for r in got))
    check(len(batches) == 1 and batches[0] is not None, 'batches of get_table: %s' % batches)
    check([r[1:] for r in got] == peek, 'get_table rows differ from the peek: %d vs %d rows' % (len(got), len(peek)))
    # rollback: the same rows again
    q(conn, 'SELECT binlog_fdw.rollback(%s)', ('tsrc',))
    again = q(conn, 'SELECT _binlog_batch, %s FROM binlog_fdw.get_table(%%s, NULL::ft.pd) ORDER BY 2, 4' % cols,
              ('tsrc',))
    check([r[1:] for r in again] == peek, 'after rollback: %d rows' % len(again))
    batch = again[0][0]
    # an ack in a transaction that aborts acknowledges nothing
    conn.autocommit = False
    try:
        q(conn, 'SELECT binlog_fdw.ack(%s, %s)', ('tsrc', batch))
        conn.rollback()
    finally:
        conn.autocommit = True
    check(q1(conn, 'SELECT count(*) FROM ft.pd') == 35, 'an aborted ack removed rows from the ring')
    # the batch comes again (delivered again after the abort), then is acknowledged
    q(conn, 'SELECT binlog_fdw.rollback(%s)', ('tsrc',))
    third = q(conn, 'SELECT _binlog_batch, %s FROM binlog_fdw.get_table(%%s, NULL::ft.pd) ORDER BY 2, 4' % cols,
              ('tsrc',))
    check([r[1:] for r in third] == peek, 'third delivery: %d rows' % len(third))
    q(conn, 'SELECT binlog_fdw.ack(%s, %s)', ('tsrc', third[0][0]))
    check(q1(conn, 'SELECT count(*) FROM ft.pd') == 0, 'rows of pd left after the ack')
    nothing = q(conn, 'SELECT count(*) FROM binlog_fdw.get_table(%s, NULL::ft.pd)', ('tsrc',))
    check(nothing == [(0,)], 'nothing left: %s' % nothing)
    # batches without a row of the table (one transaction per batch: 3
    # changes): acknowledged by get_table() in the caller's transaction when
    # they are the oldest
    mx(m, 'CREATE TABLE %s.other (id INT PRIMARY KEY)' % MDB)
    mx(m, 'INSERT INTO %s.other VALUES (1)' % MDB)
    mx(m, 'INSERT INTO %s.pd VALUES (100, 1000)' % MDB)
    wait_rows(conn, 'SELECT count(*) FROM ft.pd', 1, 'the row 100 of pd')
    other = "SELECT count(*) FROM binlog_fdw.changes_tsrc WHERE table_name = 'other' AND op = 'insert'"
    check(q1(conn, other) == 1, 'the change of other is not buffered')
    conn.autocommit = False
    try:
        got = q(conn, 'SELECT id FROM binlog_fdw.get_table(%s, NULL::ft.pd, 3)', ('tsrc',))
        check(got == [(100,)], 'get_table past the batches of other tables: %s' % got)
        conn.rollback()
    finally:
        conn.autocommit = True
    check(q1(conn, other) == 1, 'an aborted get_table() acknowledged the batch of other')
    q(conn, 'SELECT binlog_fdw.rollback(%s)', ('tsrc',))
    got = q(conn, 'SELECT _binlog_batch, id FROM binlog_fdw.get_table(%s, NULL::ft.pd, 3)', ('tsrc',))
    check([r[1] for r in got] == [100], 'get_table again: %s' % got)
    check(q1(conn, other) == 0, 'the batch of other is still buffered after a committed get_table()')
    # not the oldest (pd's batch is outstanding): delivered again, nothing returned
    mx(m, 'INSERT INTO %s.other VALUES (2)' % MDB)
    wait_for('the change of other', lambda: q1(conn, other) == 1, timeout=60)
    empty = q(conn, 'SELECT count(*) FROM binlog_fdw.get_table(%s, NULL::ft.pd, 3)', ('tsrc',))
    check(empty == [(0,)] and q1(conn, other) == 1, 'a batch behind an outstanding one: %s, other %s' % (
        empty, q1(conn, other)))
    q(conn, 'SELECT binlog_fdw.ack(%s, %s)', ('tsrc', got[0][0]))
    empty = q(conn, 'SELECT count(*) FROM binlog_fdw.get_table(%s, NULL::ft.pd, 3)', ('tsrc',))
    check(empty == [(0,)] and q1(conn, other) == 0, 'the oldest batch of other: %s, other %s' % (
        empty, q1(conn, other)))
    # not a typed table
    try:
        q(conn, 'SELECT * FROM binlog_fdw.get_table(%s, NULL::names)', ('tsrc',))
        raise Fail('get_table of an ordinary table gave no error')
    except psycopg2.Error as e:
        check(e.pgcode == '42809', 'get_table of an ordinary table: %s %s' % (e.pgcode, e.pgerror))


def jsonb_docs():
    """JSON texts for case_jsonb: (text, fast), fast False for the ones with
    \\u escapes, which the fast path leaves to jsonb_in."""
    many = '{%s}' % ', '.join('"k%02d": %s' % (i, v) for i, v in enumerate(
        ['1', '"s"', 'null', 'true', '[1, 2]', '{"x": 0.5}', '-3', '1e5'] * 5))
    big_arr = '[%s]' % ', '.join(['1', '"two"', '3.25', 'false', 'null', '[]', '{}', '{"a": [1]}',
                                  '-0', '"\\"q\\""'] * 10)
    nested = '{"a": {"b": {"c": [1, [2, [3, {"d": null, "e": [true, false]}]]]}}, "e": [], "f": {}}'
    deep = '[' * 30 + '"deep"' + ']' * 30
    return [
        (nested, True),
        ('{"s": "q\\"uote \\\\ back \\/ slash \\b\\f\\n\\r\\t end", "raw": "\u00e4\u20ac\U0001f600 \u6f22\u5b57"}', True),
        ('{"u": "\\u00e4\\u20ac\\ud83d\\ude00", "ctl": "\\u0001"}', False),
        ('[0, -0, 1, -1, 9223372036854775807, -9223372036854775808, 18446744073709551615, '
         '123456789012345678, -123456789012345678, 1234567890123456789, '
         '1234567890123456789012345678901234567890, 0.5, -0.5, 1.50, 3.141592653589793, '
         '2.718281828459045, 1e308, 1E-7, 2.5e+3, -0.0, 0.000001, 123456789012345.6, '
         '12345678901234.5, 123456789012.345, 1.0000000000000002, 100000000000000000, 1e400, '
         '-1.7976931348623157e308, 5e-324, 99.99, 0.1, 10, 1000, 10000, 100000000, 0.0001, 0.00010, '
         '10000.0001, 99999999.9999999, -0.000000000000001, 0.000000000000000, 999999999999999999, '
         '-999999999999999999, 12.3400, 1e0, 0e-5, 7000000000000000.5, 0.00, -0.00, -0.0000, '
         '-100.00, -123456789012.345, -99999999999999.9, -100000000000000000, 0.000000000000001, '
         '-10000, 10000.0000, 1000.000, 0.0001000, -9.99999999999999]', True),
        ('{"t": true, "f": false, "n": null, "z": 0}', True),
        ('{}', True),
        ('[]', True),
        ('{"": "", "e": {}, "a": [], "ea": [[], {}]}', True),
        ('{"b": 1, "a": 2, "b": 3, "aa": 4, "a": 5, "": 6, "": 7}', True),
        (many, True),
        (big_arr, True),
        (deep, True),
        ('"x"', True),
        ('42', True),
        ('-12.50', True),
        ('1e308', True),
        ('true', True),
        ('null', True),
        (' \n\t{ "k" : [ 1 , 2 , { } ] , "l" :"v" }\r\n ', True),
        ('{"long": "%s"}' % ('ab\u00e4' * 30000), True),
        ('{"long\\"key": "%s"}' % ('x\\n' * 5000), True),
    ]


def case_jsonb(conn, m):
    table = '%s.js' % MDB
    mx(m, 'CREATE TABLE %s (id INT PRIMARY KEY, doc JSON, vc VARCHAR(5) CHARACTER SET utf8mb4, '
          'vl VARCHAR(3) CHARACTER SET latin1, amt DECIMAL(10,3))' % table)
    q(conn, 'IMPORT FOREIGN SCHEMA %s LIMIT TO (js) FROM SERVER tsrc INTO ft' % MDB)
    docs = jsonb_docs()
    vcs = ['abcde', '\u00e4\u00e4\u00e4\u00e4\u00e4', 'ab', '', '\U0001f600x', None, 'a  ']
    vls = ['\u00e4\u00f6\u00fc', 'abc', None, '', 'x\u00e9']
    amts = ['-0.000', '1234567.891', '0.5', '-9999999.999', '0', None, '12.300', '-0.001', '-1000.000',
            '10000.5']
    for i, (d, _) in enumerate(docs):
        mx(m, 'INSERT INTO %s VALUES (%%s, %%s, %%s, %%s, %%s)' % table,
           (i + 1, d, vcs[i % len(vcs)], vls[i % len(vls)], amts[i % len(amts)]))
    # temporal values inside JSON, as MariaDB writes them
    n = len(docs)
    mx(m, "INSERT INTO %s (id, doc) VALUES (%d, JSON_OBJECT('dt', CAST('2024-02-29 13:14:15.123456' AS DATETIME(6)), "
          "'d', CAST('2024-02-29' AS DATE), 't', CAST('-838:59:59' AS TIME), 'n', 1.5, 'a', JSON_ARRAY(1, 'x')))"
          % (table, n + 1))
    inserted = dict(mx(m, 'SELECT id, doc FROM %s' % table))
    # an update of every object (before and after images)
    mx(m, "UPDATE %s SET doc = JSON_SET(doc, '$.upd', 1) WHERE JSON_TYPE(doc) = 'OBJECT'" % table)
    final = {r[0]: r[1:] for r in mx(m, 'SELECT id, doc, vc, vl, CAST(amt AS CHAR) FROM %s' % table)}
    changed = [rid for rid in final if final[rid][0] != inserted[rid]]
    total = n + 1 + 2 * len(changed)
    wait_rows(conn, 'SELECT count(*) FROM ft.js', total, '%d typed rows of js' % total)
    conn.notices = collections.deque(maxlen=100000)
    q(conn, 'SET binlog_fdw.verify_jsonb = on')
    q(conn, 'SET client_min_messages = debug1')
    try:
        cols = 'id, _binlog_image, doc::text, vc, vl, amt::text'
        rows = q(conn, "SELECT %s FROM ft.js ORDER BY _binlog_seq, _binlog_image = 'after'" % cols)
        gt = q(conn, "SELECT %s FROM binlog_fdw.get_table(%%s, NULL::ft.js, 100000) "
                     "ORDER BY _binlog_seq, _binlog_image = 'after'" % cols, ('tsrc',))
        q(conn, 'SELECT binlog_fdw.rollback(%s)', ('tsrc',))
    finally:
        q(conn, 'RESET client_min_messages')
        q(conn, 'RESET binlog_fdw.verify_jsonb')
    check(len(rows) == total, 'typed rows of js: %d, want %d' % (len(rows), total))
    check(gt == rows, 'get_table rows differ from the peek: %s' % short(
        [(a, b) for a, b in zip(gt, rows) if a != b][:2], 600))
    notes = [x for x in conn.notices if 'binlog_fdw.verify_jsonb' in x]
    verified = sum('verified' in x for x in notes)
    left = sum('left to jsonb_in' in x for x in notes)
    # each image's text: the inserted one, or after the update MariaDB's
    # final one; those without \u escapes take the fast path (twice: peek
    # and get_table)
    texts = []
    for rid in sorted(final):
        texts.append(inserted[rid])
        if rid in changed:
            texts += [inserted[rid], final[rid][0]]
    want_fast = 2 * sum('\\u' not in t for t in texts)
    want_left = 2 * len(texts) - want_fast
    check(verified == want_fast and left == want_left and want_left > 0,
          'verify_jsonb: %d values verified (want %d), %d left to jsonb_in (want %d)' % (
              verified, want_fast, left, want_left))
    # the last image of each row equals MariaDB's values
    last = {}
    for rid, img, doc, vc, vl, amt in rows:
        last[rid] = (doc, vc, vl, amt)
    for rid, (mdoc, mvc, mvl, mamt) in sorted(final.items()):
        want = (q1(conn, 'SELECT %s::jsonb::text', (mdoc,)), mvc, mvl,
                q1(conn, 'SELECT %s::numeric(10,3)::text', (mamt,)) if mamt is not None else None)
        check(last[rid] == want, 'row %d: typed %s, MariaDB %s' % (rid, short(last[rid], 300), short(want, 300)))
    # numeric(p,s) made without numeric_in: the same stored digits,
    # weight, sign and display scale as numeric_in's of its text
    diff = q(conn, "SELECT id, amt::text FROM ft.js WHERE numeric_send(amt) "
                   "IS DISTINCT FROM numeric_send(amt::text::numeric(10,3))")
    check(not diff, 'numeric(10,3) not as numeric_in makes it: %s' % short(diff, 300))
    # the first image of each row: the inserted document
    for rid in sorted(final):
        first = [r for r in rows if r[0] == rid][0]
        want = q1(conn, 'SELECT %s::jsonb::text', (inserted[rid],))
        check(first[2] == want, 'row %d: inserted document %s, want %s' % (rid, short(first[2]), short(want)))
    log('jsonb: %d values verified byte for byte, %d left to jsonb_in' % (verified, left))


def case_large(conn, m):
    """get_table() of a result larger than work_mem, three times in one
    session; an update's after image shares the unchanged columns' values
    with its before image."""
    ack_all(conn)
    table = '%s.big' % MDB
    mx(m, 'CREATE TABLE %s (id INT PRIMARY KEY, k INT, c VARCHAR(60), pad CHAR(20), amt DECIMAL(12,2), '
          'ts DATETIME(6), doc JSON)' % table)
    q(conn, 'IMPORT FOREIGN SCHEMA %s LIMIT TO (big) FROM SERVER tsrc INTO ft' % MDB)
    n = 3000
    for first in range(1, n + 1, 500):
        rows = []
        for i in range(first, first + 500):
            rows.append("(%d, %d, 'c%d-%s', 'p%d', %d.%02d, '2024-01-02 03:04:05.%06d', "
                        "'{\"id\": %d, \"s\": %d.%d, \"t\": [\"x%d\", %d], \"o\": {\"b\": %s}}')"
                        % (i, i * 7, i, 'abc' * (i % 15), i % 97, i * 3, i % 100, i,
                           i, i % 1000, i % 10, i, i % 10000, 'true' if i & 1 else 'null'))
        mx(m, 'INSERT INTO %s VALUES %s' % (table, ', '.join(rows)))
    inserted = {r[0]: r[1:] for r in mx(m, 'SELECT id, k, c, pad, CAST(amt AS CHAR), '
                                           "DATE_FORMAT(ts, '%Y-%m-%d %H:%i:%s.%f'), doc FROM " + table)}
    # updates that leave c, pad, amt and ts as they were, and some that change c
    mx(m, "UPDATE %s SET k = k + 1, doc = JSON_SET(doc, '$.u', 1) WHERE id %% 2 = 0" % table)
    mx(m, "UPDATE %s SET c = CONCAT(c, 'z') WHERE id %% 5 = 0" % table)
    final = {r[0]: r[1:] for r in mx(m, 'SELECT id, k, c, pad, CAST(amt AS CHAR), '
                                        "DATE_FORMAT(ts, '%Y-%m-%d %H:%i:%s.%f'), doc FROM " + table)}
    nupd = len([i for i in final if i % 2 == 0]) + len([i for i in final if i % 5 == 0])
    total = n + 2 * nupd
    wait_rows(conn, 'SELECT count(*) FROM ft.big', total, '%d typed rows of big' % total)
    cols = "id, _binlog_image, k, c, pad, amt::text, to_char(ts, 'YYYY-MM-DD HH24:MI:SS.US'), doc::text"
    order = "ORDER BY _binlog_seq, _binlog_image = 'after'"
    peek = q(conn, 'SELECT %s FROM ft.big %s' % (cols, order))
    gt = 'SELECT %s FROM binlog_fdw.get_table(%%s, NULL::ft.big, 100000) %s' % (cols, order)
    # work_mem 64MB, then 64kB three times (a result past work_mem)
    q(conn, "SET work_mem = '64MB'")
    try:
        plain = q(conn, gt, ('tsrc',))
        q(conn, 'SELECT binlog_fdw.rollback(%s)', ('tsrc',))
        q(conn, "SET work_mem = '64kB'")
        kept = []
        for _ in range(3):
            kept.append(q(conn, gt, ('tsrc',)))
            q(conn, 'SELECT binlog_fdw.rollback(%s)', ('tsrc',))
    finally:
        q(conn, 'RESET work_mem')
    check(len(peek) == total, 'typed rows of big: %d, want %d' % (len(peek), total))
    check(plain == peek, 'get_table rows differ from the peek: %s' % short(
        [(a, b) for a, b in zip(plain, peek) if a != b][:2], 600))
    for r, rows in enumerate(kept):
        check(rows == peek, 'get_table rows beyond work_mem (call %d) differ from the peek: %s' % (
            r + 1, short([(a, b) for a, b in zip(rows, peek) if a != b][:2], 600)))

    def want(v):
        k, c, pad, amt, ts, doc = v
        return (k, c, pad, amt, ts, q1(conn, 'SELECT %s::jsonb::text', (doc,)))
    first, last = {}, {}
    for row in peek:
        first.setdefault(row[0], row[2:])
        last[row[0]] = row[2:]
    bad = [i for i in sorted(final) if last[i] != want(final[i])]
    check(not bad, 'row %s: typed %s, MariaDB %s' % (
        bad[:1], bad and short(last[bad[0]], 300), bad and short(want(final[bad[0]]), 300)))
    bad = [i for i in sorted(inserted) if first[i] != want(inserted[i])]
    check(not bad, 'row %s: first image %s, inserted %s' % (
        bad[:1], bad and short(first[bad[0]], 300), bad and short(want(inserted[bad[0]]), 300)))
    ack_all(conn)
    log('large: %d typed rows, get_table beyond work_mem 3 times as the peek' % total)


def case_hostile(conn, m):
    # names with quotes, spaces, backticks, unicode: imported and read back
    tn = 'we"ird `tab` ä'
    mx(m, 'CREATE TABLE %s.`%s` (`i d` INT PRIMARY KEY, `va"l` VARCHAR(10), `ö` INT)' % (MDB, tn.replace('`', '``')))
    q(conn, 'CREATE SCHEMA "we""ird sch"')
    q(conn, 'IMPORT FOREIGN SCHEMA %s LIMIT TO (%s) FROM SERVER tsrc INTO "we""ird sch"' % (
        MDB, psycopg2.extensions.quote_ident(tn, conn)))
    mx(m, "INSERT INTO %s.`%s` VALUES (1, 'x''y', 7)" % (MDB, tn.replace('`', '``')))
    ftq = '"we""ird sch".%s' % psycopg2.extensions.quote_ident(tn, conn)
    got = wait_for('the row of %s' % tn, lambda: q(conn, 'SELECT "i d", "va""l", "ö" FROM %s' % ftq), timeout=60)
    check(got == [(1, "x'y", 7)], 'hostile names: %s' % got)
    ack_all(conn)


def case_stale(conn, m):
    table = '%s.st' % MDB
    mx(m, 'CREATE TABLE %s (id INT PRIMARY KEY, a INT)' % table)
    q(conn, 'IMPORT FOREIGN SCHEMA %s LIMIT TO (st) FROM SERVER tsrc INTO ft' % MDB)
    mx(m, 'INSERT INTO %s VALUES (1, 10)' % table)
    wait_rows(conn, 'SELECT count(*) FROM ft.st', 1, 'the first row of st')
    mx(m, 'ALTER TABLE %s ADD COLUMN b INT AFTER id' % table)
    mx(m, 'INSERT INTO %s VALUES (2, 20, 200)' % table)

    def err():
        try:
            q(conn, 'SELECT id, a FROM ft.st')
            return None
        except psycopg2.Error as e:
            return e
    e = wait_for('the stale error', err, timeout=60)
    msg = e.pgerror or ''
    check(e.pgcode == '55000' and 'foreign table "st" is stale' in msg and 'column "b"' in msg and
          'IMPORT FOREIGN SCHEMA' in msg and 'LIMIT TO (st)' in msg, 'error: %s %s' % (e.pgcode, short(msg, 600)))
    # re-imported: the changes after the DDL read with the new definition
    q(conn, 'DROP FOREIGN TABLE ft.st')
    q(conn, 'IMPORT FOREIGN SCHEMA %s LIMIT TO (st) FROM SERVER tsrc INTO ft' % MDB)
    try:
        q(conn, 'SELECT * FROM ft.st')
        raise Fail('the re-imported table read the row from before the DDL without an error')
    except psycopg2.Error as e2:
        check('no column "b"' in (e2.pgerror or ''), 'old row: %s' % short(e2.pgerror, 400))
    seq_ddl = max(r[0] for r in q(conn, "SELECT seq FROM binlog_fdw.changes_tsrc WHERE op = 'ddl'"))
    got = q(conn, 'SELECT id, a, b FROM ft.st WHERE _binlog_seq > %d' % seq_ddl)
    check(got == [(2, 200, 20)], 'after re-import (b was added after id): %s' % got)
    # a wider DECIMAL scale, more fractional digits, FLOAT -> DOUBLE, DATE ->
    # DATETIME under the same names: stale too (numeric(10,2), timestamp(0),
    # real and date would round or cut without an error)
    for col, before, after, val in [('d', 'DECIMAL(10,2)', 'DECIMAL(10,4)', "'1.2345'"),
                                    ('t', 'DATETIME', 'DATETIME(6)', "'2026-01-01 10:15:00.123456'"),
                                    ('f', 'FLOAT', 'DOUBLE', '0.1'),
                                    ('dd', 'DATE', 'DATETIME', "'2026-01-01 10:15:00'")]:
        tn = 'st_' + col
        mx(m, 'CREATE TABLE %s.%s (id INT PRIMARY KEY, %s %s)' % (MDB, tn, col, before))
        q(conn, 'IMPORT FOREIGN SCHEMA %s LIMIT TO (%s) FROM SERVER tsrc INTO ft' % (MDB, tn))
        mx(m, 'ALTER TABLE %s.%s MODIFY %s %s' % (MDB, tn, col, after))
        mx(m, 'INSERT INTO %s.%s VALUES (1, %s)' % (MDB, tn, val))

        def err2():
            try:
                return ('rows', q(conn, 'SELECT * FROM ft.%s' % tn)) if q1(
                    conn, "SELECT count(*) FROM binlog_fdw.changes_tsrc WHERE op = 'insert' AND table_name = %s",
                    (tn,)) else None
            except psycopg2.Error as e:
                return ('error', e)
        kind, v = wait_for('the insert into %s' % tn, err2, timeout=60)
        check(kind == 'error' and 'is stale' in (v.pgerror or '') and 'column "%s"' % col in (v.pgerror or '').lower(),
              '%s %s -> %s: %s' % (col, before, after, short(v if kind == 'rows' else v.pgerror, 400)))


PG_LOG = os.path.join(common.RUN, 'pg-main', 'postgresql.log')
# the errors a case causes on purpose (anything else in the server log, and
# any WARNING, PANIC, crash or leak report, fails the case)
EXPECTED_ERRORS = {
    'import': ['no database "no_such_db"'],
    'values': ['contains a NUL character'],
    'get-table': ['row_type must be the row type'],
    'stale': ['is stale'],
    'partial-image': ['lacks column'],
}


def start_instance(name, port, *args):
    """A fresh throwaway MariaDB with extra mariadbd arguments."""
    sh(['bash', MARIADB_SH, 'start', '--fresh', '--name', name, '--port', str(port), '--'] + list(args))
    return mdb(socket=os.path.join(RUN, 'mariadb-%s.sock' % name))


def destroy_instance(name):
    if os.environ.get('BLF_TYPED_KEEP') != '1':
        sh(['bash', MARIADB_SH, 'destroy', '--name', name], check_rc=False)


def expect_absent_error(conn, sql, args, column, what):
    """sql fails with the partial image error naming column and a position."""
    try:
        got = q(conn, sql, args)
    except psycopg2.Error as e:
        msg = e.pgerror or ''
        check(e.pgcode == '22000' and 'lacks column "%s"' % column in msg and 'binlog ' in msg
              and 'partial_image' in msg, '%s: %s %s' % (what, e.pgcode, short(msg, 600)))
        return
    raise Fail('%s: no error for the absent column %s; rows %s' % (what, column, short(got, 600)))


def partial_source(conn, name, port, db, server_id):
    q(conn, 'DROP SCHEMA IF EXISTS %s_e CASCADE' % name)
    q(conn, 'DROP SCHEMA IF EXISTS %s_n CASCADE' % name)
    start_source(conn, name, server_id, port=port, include=r'^%s\.' % db)
    q(conn, 'CREATE SCHEMA %s_e' % name)
    q(conn, 'CREATE SCHEMA %s_n' % name)
    q(conn, 'IMPORT FOREIGN SCHEMA %s FROM SERVER %s INTO %s_e' % (db, name, name))
    q(conn, "IMPORT FOREIGN SCHEMA %s FROM SERVER %s INTO %s_n OPTIONS (partial_image 'null')" % (
        db, name, name))


def check_imported(conn, name, db, table):
    """IMPORT's option partial_image and the column _binlog_absent."""
    opts = q1(conn, "SELECT array_to_string(ftoptions, ',') FROM pg_foreign_table "
                    "WHERE ftrelid = '%s_n.%s'::regclass" % (name, table))
    check(opts == 'schema_name=%s,table_name=%s,partial_image=null' % (db, table), 'options %s' % opts)
    t = q1(conn, "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                 "WHERE attrelid = '%s_e.%s'::regclass AND attname = '_binlog_absent'" % (name, table))
    check(t == 'text[]', '_binlog_absent of the imported table: %s' % t)


def case_partial(conn, m_main):
    # MINIMAL: an insert with a real NULL, an update of one column, one
    # setting a column to NULL, a delete
    name, db = 'ty-minimal', 'blf_typed_min'
    m = start_instance(name, MINIMAL_PORT, '--binlog-row-image=MINIMAL')
    try:
        check(mx(m, 'SELECT @@global.binlog_row_image')[0][0] == 'MINIMAL', 'instance not MINIMAL')
        mx(m, 'CREATE DATABASE %s' % db)
        mx(m, 'CREATE TABLE %s.t (id INT PRIMARY KEY, a INT, b VARCHAR(10), c INT)' % db)
        partial_source(conn, 'tmin', MINIMAL_PORT, db, 6602)
        mx(m, "INSERT INTO %s.t (id, a, b, c) VALUES (1, 10, 'x', NULL)" % db)
        mx(m, 'UPDATE %s.t SET a = 11 WHERE id = 1' % db)
        mx(m, 'UPDATE %s.t SET b = NULL WHERE id = 1' % db)
        mx(m, 'DELETE FROM %s.t WHERE id = 1' % db)
        wait_rows(conn, 'SELECT count(*) FROM tmin_n.t', 6, 'the 6 typed rows of tmin_n.t')
        # the default (partial_image 'error'): reading an absent column is an error
        expect_absent_error(conn, 'SELECT id, a, b, c FROM tmin_e.t ORDER BY _binlog_seq, _binlog_image', None,
                            'a', 'MINIMAL peek of all columns')
        check_imported(conn, 'tmin', db, 't')
        expect_absent_error(conn, "SELECT b FROM tmin_e.t WHERE _binlog_op = 'update'", None, 'b',
                            'MINIMAL peek of b')
        # the columns every image has (id: the after image takes it from the before image)
        got = q(conn, 'SELECT _binlog_op, _binlog_image, id, _binlog_absent FROM tmin_e.t '
                      'ORDER BY _binlog_seq, _binlog_image DESC')
        want = [('insert', 'after', 1, []),
                ('update', 'before', 1, ['a', 'b', 'c']), ('update', 'after', 1, ['b', 'c']),
                ('update', 'before', 1, ['a', 'b', 'c']), ('update', 'after', 1, ['a', 'c']),
                ('delete', 'before', 1, ['a', 'b', 'c'])]
        check(got == want, 'MINIMAL images (op, image, id, absent): %s, want %s' % (got, want))
        # partial_image 'null': NULL, listed in _binlog_absent; a real NULL is not listed
        cols = '_binlog_op, _binlog_image, id, a, b, c, _binlog_absent'
        peek = q(conn, 'SELECT %s FROM tmin_n.t ORDER BY _binlog_seq, _binlog_image DESC' % cols)
        want = [('insert', 'after', 1, 10, 'x', None, []),
                ('update', 'before', 1, None, None, None, ['a', 'b', 'c']),
                ('update', 'after', 1, 11, None, None, ['b', 'c']),
                ('update', 'before', 1, None, None, None, ['a', 'b', 'c']),
                ('update', 'after', 1, None, None, None, ['a', 'c']),
                ('delete', 'before', 1, None, None, None, ['a', 'b', 'c'])]
        check(peek == want, 'MINIMAL rows with partial_image null: %s, want %s' % (peek, want))
        # get_table(): every column is read, so the default is an error; 'null' gives the peek's rows
        expect_absent_error(conn, 'SELECT * FROM binlog_fdw.get_table(%s, NULL::tmin_e.t)', ('tmin',), 'a',
                            'MINIMAL get_table')
        q(conn, 'SELECT binlog_fdw.rollback(%s)', ('tmin',))
        got = q(conn, 'SELECT %s FROM binlog_fdw.get_table(%%s, NULL::tmin_n.t) ORDER BY _binlog_seq, '
                      '_binlog_image DESC' % cols, ('tmin',))
        check(got == peek, 'MINIMAL get_table with partial_image null: %s' % got)
    finally:
        drop_source(conn, 'tmin')
        destroy_instance(name)
    # NOBLOB: an update of another column leaves the BLOB and TEXT out
    name, db = 'ty-noblob', 'blf_typed_noblob'
    m = start_instance(name, NOBLOB_PORT, '--binlog-row-image=NOBLOB')
    try:
        check(mx(m, 'SELECT @@global.binlog_row_image')[0][0] == 'NOBLOB', 'instance not NOBLOB')
        mx(m, 'CREATE DATABASE %s' % db)
        mx(m, 'CREATE TABLE %s.t (id INT PRIMARY KEY, a INT, bl BLOB, tx TEXT)' % db)
        partial_source(conn, 'tnob', NOBLOB_PORT, db, 6603)
        mx(m, "INSERT INTO %s.t VALUES (1, 1, 'blob', NULL)" % db)
        mx(m, 'UPDATE %s.t SET a = 2 WHERE id = 1' % db)
        mx(m, "UPDATE %s.t SET tx = 'text' WHERE id = 1" % db)
        wait_rows(conn, 'SELECT count(*) FROM tnob_n.t', 5, 'the 5 typed rows of tnob_n.t')
        expect_absent_error(conn, 'SELECT id, a, bl FROM tnob_e.t', None, 'bl', 'NOBLOB peek of bl')
        got = q(conn, 'SELECT _binlog_image, id, a, _binlog_absent FROM tnob_e.t '
                      'ORDER BY _binlog_seq, _binlog_image DESC')
        want = [('after', 1, 1, []), ('before', 1, 1, ['bl', 'tx']), ('after', 1, 2, ['bl', 'tx']),
                ('before', 1, 2, ['bl', 'tx']), ('after', 1, 2, ['bl'])]
        check(got == want, 'NOBLOB images (image, id, a, absent): %s, want %s' % (got, want))
        got = q(conn, 'SELECT _binlog_image, id, a, bl, tx, _binlog_absent FROM tnob_n.t '
                      'ORDER BY _binlog_seq, _binlog_image DESC')
        want = [('after', 1, 1, b'blob', None, []), ('before', 1, 1, None, None, ['bl', 'tx']),
                ('after', 1, 2, None, None, ['bl', 'tx']), ('before', 1, 2, None, None, ['bl', 'tx']),
                ('after', 1, 2, None, 'text', ['bl'])]
        got = [tuple(bytes(v) if isinstance(v, memoryview) else v for v in r) for r in got]
        check(got == want, 'NOBLOB rows with partial_image null: %s, want %s' % (got, want))
    finally:
        drop_source(conn, 'tnob')
        destroy_instance(name)


def log_size():
    try:
        return os.path.getsize(PG_LOG)
    except OSError:
        return None


def log_problems(name, start):
    if start is None:
        return []
    with open(PG_LOG, 'rb') as f:
        f.seek(start)
        text = f.read().decode('utf-8', 'replace')
    bad = []
    for line in text.splitlines():
        if any(w in line for w in ('WARNING:', 'PANIC:', 'leaked', 'terminated by signal', 'TRAP:')):
            bad.append(line)
        elif 'ERROR:' in line and not any(e in line for e in EXPECTED_ERRORS.get(name, [])):
            bad.append(line)
    return bad


def main():
    passed = failed = 0
    try:
        c = pg('postgres')
        q(c, 'DROP DATABASE IF EXISTS %s WITH (FORCE)' % PGDB)
        q(c, 'CREATE DATABASE %s' % PGDB)
        c.close()
        conn = pg()
        q(conn, 'CREATE EXTENSION binlog_fdw')
        m = mdb()
        mx(m, 'DROP DATABASE IF EXISTS %s' % MDB)
        mx(m, 'CREATE DATABASE %s' % MDB)
        mx(m, 'DROP DATABASE IF EXISTS %s' % IDB)
        mx(m, 'CREATE DATABASE %s' % IDB)
        start_source(conn, 'tsrc', 6601, include=r'^%s\.' % MDB)
        q(conn, 'CREATE FOREIGN TABLE binlog_fdw.changes_tsrc (seq bigint, op text, table_name text) SERVER tsrc')
    except Exception as e:                          # noqa: BLE001
        print('not ok - typed/setup: %s: %s' % (type(e).__name__, short(str(e).strip(), 500)))
        return 1
    for name, fn in [('import', case_import), ('values', case_values), ('pushdown', case_pushdown),
                     ('get-table', case_get_table), ('scans-at-once', case_scans_at_once),
                     ('jsonb', case_jsonb), ('get-table-large', case_large),
                     ('hostile-names', case_hostile),
                     ('stale', case_stale), ('partial-image', case_partial)]:
        t0 = time.monotonic()
        start = log_size()
        try:
            # what the main server logs from now on is this case's
            # (test/lib/logcheck.py, test/suites/66-typed.allow)
            q(conn, "DO $$BEGIN RAISE LOG 'blf-case: typed/%s'; END$$" % name)
            fn(conn, m)
            bad = log_problems(name, start)
            if bad:
                raise Fail('server log: %s' % short(' | '.join(bad[:3]), 600))
            print('ok - typed/%s' % name, flush=True)
            passed += 1
        except Exception as e:                      # noqa: BLE001
            log(traceback.format_exc())
            print('not ok - typed/%s: %s' % (name, short(str(e).strip(), 600)), flush=True)
            failed += 1
            try:
                conn.close()
            except Exception:                       # noqa: BLE001
                pass
            conn = pg()
        log('%s: %.1fs' % (name, time.monotonic() - t0))
    if os.environ.get('BLF_TYPED_KEEP') != '1':
        try:
            drop_source(conn, 'tsrc')
            conn.close()
            c = pg('postgres')
            # the dropped source's worker leaves first (FORCE would terminate it)
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and q1(
                    c, 'SELECT count(*) FROM pg_stat_activity WHERE datname = %s', (PGDB,)):
                time.sleep(0.2)
            q(c, 'DROP DATABASE IF EXISTS %s WITH (FORCE)' % PGDB)
            mx(m, 'DROP DATABASE IF EXISTS %s' % MDB)
            mx(m, 'DROP DATABASE IF EXISTS %s' % IDB)
        except Exception as e:                      # noqa: BLE001
            log('cleanup failed: %s' % e)
    log('typed: %d passed, %d failed' % (passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
