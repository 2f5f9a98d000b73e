"""
test/apply_cases/cases_keys.py -- apply cases about finding rows and
targets: keys (primary, chosen unique, keyless), conflict policies, table
mapping, partitioned targets.
"""

import re

from harness import (Source, check, log, mdb_fresh, mx, q, q1, short, table_exists)


def pg_set(conn, sql):
    return sorted(q(conn, sql), key=repr)


def mdb_set(m, sql):
    return sorted([tuple(r) for r in mx(m, sql)], key=repr)


def same(conn, m, pg_sql, mdb_sql, what):
    got, exp = pg_set(conn, pg_sql), mdb_set(m, mdb_sql)
    check(got == exp, '%s: PostgreSQL has %s, MariaDB %s' % (what, short(got, 500), short(exp, 500)))


# ---------------------------------------------------------------------------
# keys

def case_keys(conn, m):
    db = 'blf_ac_keys'
    mdb_fresh(m, db)
    mx(m, 'CREATE TABLE blf_ac_keys.pk (id INT PRIMARY KEY, v VARCHAR(20))')
    mx(m, 'CREATE TABLE blf_ac_keys.uk (id INT PRIMARY KEY, code VARCHAR(10) NOT NULL UNIQUE, v INT)')
    mx(m, 'CREATE TABLE blf_ac_keys.nk (a INT, b VARCHAR(10))')
    mx(m, "INSERT INTO blf_ac_keys.pk VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    mx(m, "INSERT INTO blf_ac_keys.uk VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30)")
    # the unique-key target is the user's: no primary key, a unique index on
    # code, a column of its own
    q(conn, 'CREATE SCHEMA blf_ac_keys')
    q(conn, "CREATE TABLE blf_ac_keys.uk (code varchar(10) NOT NULL, id int, v int, note text DEFAULT 'pg')")
    q(conn, 'CREATE UNIQUE INDEX uk_code ON blf_ac_keys.uk (code)')
    src = Source(conn, 'ac_keys', r'^blf_ac_keys\.')
    src.snapshot(['blf_ac_keys.pk', 'blf_ac_keys.uk', 'blf_ac_keys.nk'])
    check(q1(conn, "SELECT count(*) FROM pg_index WHERE indrelid = 'blf_ac_keys.nk'::regclass") == 0,
          'the keyless table got an index')
    # ids differ on purpose: only the code can find the rows
    q(conn, "UPDATE blf_ac_keys.uk SET id = -id, note = 'kept'")
    src.start()

    # a chosen key without a unique index over exactly those columns
    q(conn, "SELECT binlog_fdw.map_table('ac_keys', 'blf_ac_keys.uk', key_columns => ARRAY['code', 'v'])")
    mx(m, "UPDATE blf_ac_keys.uk SET v = 21 WHERE code = 'b'")
    src.apply_error(m, 'key columns without an index',
                 sqlstate='42P17', message=['blf_ac_keys.uk', 'no unique index', 'code, v'])
    q(conn, "SELECT binlog_fdw.map_table('ac_keys', 'blf_ac_keys.uk', key_columns => ARRAY['code'])")
    mx(m, "INSERT INTO blf_ac_keys.pk VALUES (4, 'd')")
    mx(m, "UPDATE blf_ac_keys.pk SET v = 'bb' WHERE id = 2")
    mx(m, "UPDATE blf_ac_keys.pk SET id = 30 WHERE id = 3")
    mx(m, 'DELETE FROM blf_ac_keys.pk WHERE id = 1')
    mx(m, "INSERT INTO blf_ac_keys.uk VALUES (4, 'd', 40)")
    mx(m, "UPDATE blf_ac_keys.uk SET id = 33 WHERE code = 'c'")
    mx(m, "UPDATE blf_ac_keys.uk SET code = 'aa', v = 11 WHERE id = 1")
    mx(m, "DELETE FROM blf_ac_keys.uk WHERE code = 'd'")
    # the keyless table: an error naming the table, with a hint
    mx(m, "INSERT INTO blf_ac_keys.nk VALUES (1, 'x')")
    src.apply_error(m, 'keyless target',
                       sqlstate='42P17',
                       message=['blf_ac_keys.nk', 'MySQL table blf_ac_keys.nk', 'no primary key'],
                       hint=['primary key', 'key_columns', "keyless option to 'full_row'"])
    check(q1(conn, 'SELECT count(*) FROM blf_ac_keys.nk') == 0, 'keyless target: rows after the error')
    q(conn, "ALTER SERVER ac_keys OPTIONS (ADD keyless 'full_row')")
    mx(m, "INSERT INTO blf_ac_keys.nk VALUES (1, 'x'), (2, NULL), (3, 'd'), (3, 'd'), (3, 'd')")
    mx(m, "UPDATE blf_ac_keys.nk SET b = 'y' WHERE a = 1 LIMIT 1")       # one of two identical rows
    mx(m, "UPDATE blf_ac_keys.nk SET b = 'n' WHERE a = 2")               # matched on a NULL
    mx(m, 'DELETE FROM blf_ac_keys.nk WHERE a = 3 LIMIT 1')              # one of three
    src.sync(m)
    same(conn, m, 'SELECT id, v FROM blf_ac_keys.pk', 'SELECT id, v FROM blf_ac_keys.pk', 'primary key')
    same(conn, m, 'SELECT id, code, v FROM blf_ac_keys.uk', 'SELECT id, code, v FROM blf_ac_keys.uk',
         'unique key')
    notes = q(conn, "SELECT code, note FROM blf_ac_keys.uk ORDER BY code")
    check(notes == [('aa', 'kept'), ('b', 'kept'), ('c', 'kept')],
          'rows of the unique-key target were not updated in place: %s' % notes)
    same(conn, m, 'SELECT a, b FROM blf_ac_keys.nk', 'SELECT a, b FROM blf_ac_keys.nk', 'full-row matching')
    check(q1(conn, 'SELECT count(*) FROM blf_ac_keys.nk WHERE a = 3') == 2,
          'a delete of one of three identical rows left %s' % q1(conn, 'SELECT count(*) FROM blf_ac_keys.nk WHERE a = 3'))
    mx(m, 'DELETE FROM blf_ac_keys.nk WHERE a = 3')
    mx(m, 'DELETE FROM blf_ac_keys.nk WHERE a = 1')
    src.sync(m)
    same(conn, m, 'SELECT a, b FROM blf_ac_keys.nk', 'SELECT a, b FROM blf_ac_keys.nk', 'full-row deletes')
    src.drop()
    q(conn, 'DROP SCHEMA blf_ac_keys CASCADE')
    mx(m, 'DROP DATABASE %s' % db)


# ---------------------------------------------------------------------------
# conflicts

def master(m):
    r = mx(m, 'SHOW MASTER STATUS')
    return r[0][0], int(r[0][1])


def check_position(err, span, what):
    """The error context names the binlog file and a position inside span."""
    mm = re.search(r'binlog (\S+) position (\d+)', err.context)
    check(mm, '%s: no binlog position in the context: %s' % (what, err.context))
    f, p = mm.group(1), int(mm.group(2))
    check(f == span[0] and span[1] <= p < span[2], '%s: position %s:%d is not in the transaction (%s:%d-%d)' % (
        what, f, p, span[0], span[1], span[2]))


def case_conflicts(conn, m):
    db = 'blf_ac_conf'
    mdb_fresh(m, db)
    for t in ('c1', 'c2'):
        mx(m, 'CREATE TABLE %s.%s (id INT PRIMARY KEY, v VARCHAR(20))' % (db, t))
        mx(m, "INSERT INTO %s.%s VALUES (1, 'a'), (2, 'b'), (3, 'c'), (7, 'g'), (8, 'h')" % (db, t))
    src = Source(conn, 'ac_conf', r'^blf_ac_conf\.')
    src.snapshot(['blf_ac_conf.c1', 'blf_ac_conf.c2'])
    src.start()

    def pgx(sql):
        q(conn, sql.replace('{T}', 'blf_ac_conf.c1'))

    def my(sql, table='c1'):
        b = master(m)
        mx(m, sql.replace('{T}', '%s.%s' % (db, table)))
        return (b[0], b[1], master(m)[1])

    def rows(t='c1'):
        return q(conn, 'SELECT id, v FROM blf_ac_conf.%s ORDER BY id' % t)

    # ---- error (the default): each conflict stops apply, naming table,
    # key and position; fixing the row lets apply go on
    pgx('DELETE FROM {T} WHERE id = 2')
    span = my("UPDATE {T} SET v = 'u2' WHERE id = 2")
    err = src.apply_error(m, 'update of a missing row',
                       sqlstate='P0002', message='row to update not found in blf_ac_conf.c1',
                       hint='conflict',
                       context=['UPDATE of MySQL table blf_ac_conf.c1 into blf_ac_conf.c1', 'key {"id":2}',
                                'GTID 0-1-'])
    check_position(err, span, 'update of a missing row')
    pgx("INSERT INTO {T} VALUES (2, 'b')")
    src.sync(m)
    check(rows()[1] == (2, 'u2'), 'after the fix: %s' % rows())

    pgx('DELETE FROM {T} WHERE id = 3')
    span = my('DELETE FROM {T} WHERE id = 3')
    err = src.apply_error(m, 'delete of a missing row',
                       sqlstate='P0002', message='row to delete not found in blf_ac_conf.c1',
                       context=['DELETE of MySQL table blf_ac_conf.c1', 'key {"id":3}'])
    check_position(err, span, 'delete of a missing row')
    pgx("INSERT INTO {T} VALUES (3, 'c')")
    src.sync(m)

    pgx("INSERT INTO {T} VALUES (4, 'local')")
    span = my("INSERT INTO {T} VALUES (4, 'd')")
    err = src.apply_error(m, 'insert of an existing key',
                       sqlstate='23505', message='duplicate key',
                       context=['INSERT of MySQL table blf_ac_conf.c1', 'key {"id":4}'])
    check_position(err, span, 'insert of an existing key')
    pgx('DELETE FROM {T} WHERE id = 4')
    src.sync(m)
    exp = [(1, 'a'), (2, 'u2'), (4, 'd'), (7, 'g'), (8, 'h')]
    check(rows() == exp, 'after the error phase: %s, expected %s' % (rows(), exp))

    # ---- skip (the source's option)
    q(conn, "ALTER SERVER ac_conf OPTIONS (ADD conflict 'skip')")
    pgx('DELETE FROM {T} WHERE id IN (1, 2)')
    pgx("INSERT INTO {T} VALUES (5, 'local')")
    my("UPDATE {T} SET v = 'u1' WHERE id = 1")
    my('DELETE FROM {T} WHERE id = 2')
    my("INSERT INTO {T} VALUES (5, 'e')")
    my("UPDATE {T} SET v = 'u7' WHERE id = 7")
    src.sync(m)
    exp = [(4, 'd'), (5, 'local'), (7, 'u7'), (8, 'h')]
    check(rows() == exp, "conflict 'skip': %s, expected %s" % (rows(), exp))

    # ---- overwrite
    q(conn, "ALTER SERVER ac_conf OPTIONS (SET conflict 'overwrite')")
    pgx('DELETE FROM {T} WHERE id IN (4, 8)')
    pgx("INSERT INTO {T} VALUES (6, 'local')")
    my("UPDATE {T} SET v = 'o4' WHERE id = 4")        # missing: inserted
    my('DELETE FROM {T} WHERE id = 8')                 # missing: nothing to do
    my("INSERT INTO {T} VALUES (6, 'f')")              # exists: replaced
    my("UPDATE {T} SET id = 9, v = 'o9' WHERE id = 5")  # the local row 5 goes as 9
    src.sync(m)
    exp = [(4, 'o4'), (6, 'f'), (7, 'u7'), (9, 'o9')]
    check(rows() == exp, "conflict 'overwrite': %s, expected %s" % (rows(), exp))

    # ---- per table: map_table(conflict) overrides the source's option
    q(conn, "ALTER SERVER ac_conf OPTIONS (SET conflict 'error')")
    q(conn, "SELECT binlog_fdw.map_table('ac_conf', 'blf_ac_conf.c2', conflict => 'overwrite')")
    q(conn, 'DELETE FROM blf_ac_conf.c2 WHERE id = 1')
    q(conn, "INSERT INTO blf_ac_conf.c2 VALUES (10, 'local')")
    my("UPDATE {T} SET v = 'x1' WHERE id = 1", 'c2')
    my("INSERT INTO {T} VALUES (10, 'j')", 'c2')
    src.sync(m)
    exp = [(1, 'x1'), (2, 'b'), (3, 'c'), (7, 'g'), (8, 'h'), (10, 'j')]
    check(rows('c2') == exp, "map_table(conflict 'overwrite'): %s, expected %s" % (rows('c2'), exp))
    # c1 still follows the source's 'error'
    pgx('DELETE FROM {T} WHERE id = 7')
    my("UPDATE {T} SET v = 'x7' WHERE id = 7")
    src.apply_error(m, "c1 with the source's 'error'",
                 sqlstate='P0002', message='row to update not found in blf_ac_conf.c1',
                 context='key {"id":7}')
    q(conn, "SELECT binlog_fdw.map_table('ac_conf', 'blf_ac_conf.c1', conflict => 'skip')")
    src.sync(m)
    check(rows() == [(4, 'o4'), (6, 'f'), (9, 'o9')], "map_table(conflict 'skip'): %s" % rows())
    # and a table's 'error' wins over the source's 'skip'
    q(conn, "ALTER SERVER ac_conf OPTIONS (SET conflict 'skip')")
    q(conn, "SELECT binlog_fdw.map_table('ac_conf', 'blf_ac_conf.c2', conflict => 'error')")
    q(conn, 'DELETE FROM blf_ac_conf.c2 WHERE id = 2')
    my('DELETE FROM {T} WHERE id = 2', 'c2')
    src.apply_error(m, "c2 with map_table 'error'",
                 sqlstate='P0002', message='row to delete not found in blf_ac_conf.c2')
    src.drop()
    q(conn, 'DROP SCHEMA blf_ac_conf CASCADE')
    mx(m, 'DROP DATABASE %s' % db)


# ---------------------------------------------------------------------------
# mapping

def case_mapping(conn, m):
    for db in ('blf_ac_map', 'blf_ac_map2'):
        mdb_fresh(m, db)
    for t in ('blf_ac_map.t_default', 'blf_ac_map.t_target', 'blf_ac_map.t_unmapped',
              'blf_ac_map.t_skipped', 'blf_ac_map2.t_schema'):
        mx(m, 'CREATE TABLE %s (id INT PRIMARY KEY, v VARCHAR(20))' % t)
    q(conn, 'CREATE SCHEMA blf_ac_map')
    q(conn, 'CREATE TABLE blf_ac_map.t_default (id int PRIMARY KEY, v text)')
    q(conn, 'CREATE SCHEMA ac_custom')
    q(conn, "CREATE TABLE ac_custom.custom_target (v text, id int PRIMARY KEY, extra text DEFAULT 'x')")
    src = Source(conn, 'ac_map', r'^blf_ac_map2?\.', schema_map='blf_ac_map2:ac_map_renamed,nothing:none')
    q(conn, "SELECT binlog_fdw.map_table('ac_map', 'blf_ac_map.t_target', 'ac_custom.custom_target')")
    q(conn, "SELECT binlog_fdw.map_table('ac_map', 'blf_ac_map.t_skipped', skip => true)")
    mx(m, "INSERT INTO blf_ac_map2.t_schema VALUES (1, 'snap')")
    r = src.snapshot(['blf_ac_map2.t_schema', 'blf_ac_map.t_target'])
    check(r == [('blf_ac_map2.t_schema', 'ac_map_renamed.t_schema', 1, True),
                ('blf_ac_map.t_target', 'ac_custom.custom_target', 0, False)],
          'snapshot() with schema_map and map_table: %s' % (r,))
    src.start()
    for t in ('blf_ac_map.t_default', 'blf_ac_map.t_target', 'blf_ac_map.t_skipped',
              'blf_ac_map2.t_schema'):
        mx(m, "INSERT INTO %s VALUES (2, 'two'), (3, 'three')" % t)
    mx(m, "INSERT INTO blf_ac_map.t_unmapped VALUES (1, 'u')")
    mx(m, "INSERT INTO blf_ac_map.t_default VALUES (4, 'after')")
    src.apply_error(m, "unmapped 'error'",
                 sqlstate='42P01',
                 message='no target table for MySQL table blf_ac_map.t_unmapped: blf_ac_map.t_unmapped does not exist',
                 hint=['sync_table', 'map_table', "unmapped option to 'skip'"],
                 context='binlog mysql-bin.')
    check(not table_exists(conn, 'blf_ac_map', 't_unmapped'), 'the unmapped table was created')
    q(conn, "ALTER SERVER ac_map OPTIONS (ADD unmapped 'skip')")
    for t in ('blf_ac_map.t_default', 'blf_ac_map.t_target', 'blf_ac_map.t_skipped',
              'blf_ac_map.t_unmapped', 'blf_ac_map2.t_schema'):
        mx(m, "UPDATE %s SET v = 'upd' WHERE id = 2" % t)
        mx(m, 'DELETE FROM %s WHERE id = 3' % t)
    src.sync(m)
    exp = [(2, 'upd'), (4, 'after')]
    got = q(conn, 'SELECT id, v FROM blf_ac_map.t_default ORDER BY id')
    check(got == exp, 'db.table -> schema.table: %s, expected %s' % (got, exp))
    got = q(conn, 'SELECT id, v, extra FROM ac_custom.custom_target ORDER BY id')
    check(got == [(2, 'upd', 'x')], 'map_table() target: %s' % got)
    got = q(conn, 'SELECT id, v FROM ac_map_renamed.t_schema ORDER BY id')
    check(got == [(1, 'snap'), (2, 'upd')], 'schema_map: %s' % got)
    for schema, table in (('blf_ac_map', 't_target'), ('blf_ac_map', 't_skipped'),
                          ('blf_ac_map', 't_unmapped'), ('blf_ac_map2', 't_schema')):
        check(not table_exists(conn, schema, table), '%s.%s exists in PostgreSQL' % (schema, table))
    check(not q1(conn, "SELECT count(*) FROM pg_namespace WHERE nspname = 'blf_ac_map2'"),
          'schema blf_ac_map2 exists despite schema_map')
    log('mapping: %s' % q(conn, "SELECT source_schema, source_table, target_schema, target_table, skip "
                               "FROM binlog_fdw.table_mapping WHERE server_name = 'ac_map' ORDER BY 1, 2"))
    src.drop()
    for s in ('blf_ac_map', 'ac_custom', 'ac_map_renamed'):
        q(conn, 'DROP SCHEMA %s CASCADE' % s)
    for db in ('blf_ac_map', 'blf_ac_map2'):
        mx(m, 'DROP DATABASE %s' % db)


# ---------------------------------------------------------------------------
# partitioned targets

def case_partitions(conn, m):
    db = 'blf_ac_part'
    mdb_fresh(m, db)
    mx(m, 'CREATE TABLE blf_ac_part.r (id INT PRIMARY KEY, region INT NOT NULL, v VARCHAR(20))')
    mx(m, 'CREATE TABLE blf_ac_part.h (id INT PRIMARY KEY, v VARCHAR(20))')
    mx(m, "INSERT INTO blf_ac_part.r VALUES (1, 1, 'a'), (2, 15, 'b'), (3, 25, 'c')")
    mx(m, "INSERT INTO blf_ac_part.h VALUES %s" % ', '.join("(%d, 'h%d')" % (i, i) for i in range(1, 10)))
    # PostgreSQL targets made by the user: range partitions, one with another
    # column order and one with a dropped column; hash partitions
    q(conn, 'CREATE SCHEMA blf_ac_part')
    q(conn, 'CREATE TABLE blf_ac_part.r (id int, region int NOT NULL, v text, PRIMARY KEY (id, region)) '
            'PARTITION BY RANGE (region)')
    q(conn, 'CREATE TABLE blf_ac_part.r_low PARTITION OF blf_ac_part.r FOR VALUES FROM (MINVALUE) TO (10)')
    q(conn, 'CREATE TABLE blf_ac_part.r_mid (junk int, v text, region int NOT NULL, id int, PRIMARY KEY (id, region))')
    q(conn, 'ALTER TABLE blf_ac_part.r_mid DROP COLUMN junk')
    q(conn, 'ALTER TABLE blf_ac_part.r ATTACH PARTITION blf_ac_part.r_mid FOR VALUES FROM (10) TO (20)')
    q(conn, 'CREATE TABLE blf_ac_part.r_high (v text, id int, region int NOT NULL, PRIMARY KEY (id, region))')
    q(conn, 'ALTER TABLE blf_ac_part.r ATTACH PARTITION blf_ac_part.r_high FOR VALUES FROM (20) TO (MAXVALUE)')
    q(conn, 'CREATE TABLE blf_ac_part.h (id int PRIMARY KEY, v text) PARTITION BY HASH (id)')
    for k in range(3):
        q(conn, 'CREATE TABLE blf_ac_part.h%d PARTITION OF blf_ac_part.h FOR VALUES WITH (MODULUS 3, REMAINDER %d)'
              % (k, k))
    src = Source(conn, 'ac_part', r'^blf_ac_part\.')
    r = src.snapshot(['blf_ac_part.r', 'blf_ac_part.h'])
    check([x[2] for x in r] == [3, 9], 'snapshot() into partitioned tables: %s' % (r,))
    src.start()

    def where():
        return q(conn, "SELECT tableoid::regclass::text, id, region, v FROM blf_ac_part.r ORDER BY id")

    mx(m, "INSERT INTO blf_ac_part.r VALUES (4, 5, 'd'), (5, 12, 'e'), (6, 30, 'f')")
    mx(m, "UPDATE blf_ac_part.r SET v = 'bb' WHERE id = 2")               # in r_mid
    mx(m, "UPDATE blf_ac_part.r SET v = 'cc' WHERE id = 3")               # in r_high
    mx(m, 'UPDATE blf_ac_part.r SET region = 22 WHERE id = 1')            # low -> high
    mx(m, "UPDATE blf_ac_part.r SET region = 11, v = 'ff' WHERE id = 6")  # high -> mid
    mx(m, 'UPDATE blf_ac_part.r SET region = 0 WHERE id = 5')             # mid -> low
    mx(m, 'DELETE FROM blf_ac_part.r WHERE id IN (3, 4)')
    mx(m, 'UPDATE blf_ac_part.h SET id = id + 100 WHERE id <= 4')         # move between hash partitions
    mx(m, "UPDATE blf_ac_part.h SET v = 'x' WHERE id > 100")
    mx(m, 'DELETE FROM blf_ac_part.h WHERE id IN (5, 6)')
    src.sync(m)
    exp = [('blf_ac_part.r_high', 1, 22, 'a'), ('blf_ac_part.r_mid', 2, 15, 'bb'),
           ('blf_ac_part.r_low', 5, 0, 'e'), ('blf_ac_part.r_mid', 6, 11, 'ff')]
    check(where() == exp, 'range partitions: %s, expected %s' % (where(), exp))
    same(conn, m, 'SELECT id, v FROM blf_ac_part.h', 'SELECT id, v FROM blf_ac_part.h', 'hash partitions')
    bad = q(conn, 'SELECT tableoid::regclass::text, id FROM blf_ac_part.h WHERE '
                  "tableoid <> ('blf_ac_part.h' || (SELECT k FROM generate_series(0, 2) k "
                  "WHERE satisfies_hash_partition('blf_ac_part.h'::regclass, 3, k, id)))::regclass")
    check(not bad, 'rows in the wrong hash partition: %s' % bad)

    # conflicts into partitions: overwrite an existing key, insert a missing row
    q(conn, "SELECT binlog_fdw.map_table('ac_part', 'blf_ac_part.r', conflict => 'overwrite')")
    q(conn, "INSERT INTO blf_ac_part.r VALUES (7, 25, 'local')")
    q(conn, 'DELETE FROM blf_ac_part.r WHERE id = 2')
    mx(m, "INSERT INTO blf_ac_part.r VALUES (7, 25, 'g')")
    mx(m, "UPDATE blf_ac_part.r SET v = 'b2' WHERE id = 2")
    src.sync(m)
    same(conn, m, 'SELECT id, region, v FROM blf_ac_part.r', 'SELECT id, region, v FROM blf_ac_part.r',
         'overwrite into partitions')
    # a row no partition takes: a clear error with the row's key
    q(conn, 'ALTER TABLE blf_ac_part.r DETACH PARTITION blf_ac_part.r_low')
    mx(m, "INSERT INTO blf_ac_part.r VALUES (8, 3, 'nowhere')")
    src.apply_error(m, 'a row without a partition',
                 sqlstate='23514', message='no partition',
                 context=['INSERT of MySQL table blf_ac_part.r', '"id":8'])
    src.drop()
    q(conn, 'DROP SCHEMA blf_ac_part CASCADE')
    mx(m, 'DROP DATABASE %s' % db)


# ---------------------------------------------------------------------------
# buffered inserts across a binlog rotation

def case_insert_rotation(conn, m):
    """
    Buffered (multi-row) inserts of one table, then the binlog rotates and
    the same table gets more inserts, all applied by one apply() call.  The
    rotation flushes the buffer; that flush once freed the values of the
    next row's slot (values over 8 kB: their memory went back to malloc),
    and the backend crashed copying them.  Values must arrive intact.
    """
    db = 'blf_ac_rot'
    mdb_fresh(m, db)
    mx(m, 'CREATE TABLE blf_ac_rot.t (id INT PRIMARY KEY, big LONGTEXT, v INT)')
    src = Source(conn, 'ac_rot', r'^blf_ac_rot\.')
    src.snapshot(['blf_ac_rot.t'])
    src.start()
    for rnd in range(3):
        for i in range(4):
            k = rnd * 10 + i
            mx(m, "INSERT INTO blf_ac_rot.t VALUES (%d, REPEAT('%s', %d), %d)"
               % (k, 'abcdefgh'[k % 8], 40000 + k, k))
        mx(m, 'FLUSH BINARY LOGS')
    src.wait_read(m)
    r = src.apply(max_changes=1000000, max_seconds=60)
    check(r['rows'] == 12, 'one apply() call applied %r rows, expected 12' % r['rows'])
    same(conn, m, 'SELECT id, md5(big), length(big), v FROM blf_ac_rot.t',
         'SELECT id, md5(big), length(big), v FROM blf_ac_rot.t', 'rows across binlog rotations')
    log('insert-rotation: 12 rows of about 40 kB over 3 binlog rotations, one apply() call')


# ---------------------------------------------------------------------------
# MariaDB COMPRESSED columns

def case_compressed_columns(conn, m):
    """
    COMPRESSED TEXT, VARCHAR, BLOB and latin1 columns: snapshot() copies
    them, apply() applies inserts, updates and deletes of deflated and
    stored values (long repetitive ones deflate, short ones are stored as
    they are); PostgreSQL must hold what MariaDB holds.
    """
    db = 'blf_ac_zip'
    mdb_fresh(m, db)
    mx(m, 'CREATE TABLE blf_ac_zip.t (id INT PRIMARY KEY, a TEXT COMPRESSED, '
          'b VARCHAR(300) CHARACTER SET utf8mb4 COMPRESSED, c BLOB COMPRESSED, '
          'd VARCHAR(100) CHARACTER SET latin1 COMPRESSED) DEFAULT CHARSET=utf8mb4')
    mx(m, "INSERT INTO blf_ac_zip.t VALUES (1, REPEAT('x', 300), 'hello', REPEAT(0x00ff, 200), 'caf\u00e9'), "
          "(2, '', '', '', ''), (3, NULL, NULL, NULL, NULL)")
    src = Source(conn, 'ac_zip', r'^blf_ac_zip\.')
    src.snapshot(['blf_ac_zip.t'])
    src.start()
    mx(m, "INSERT INTO blf_ac_zip.t VALUES (4, 'short', REPEAT('\u00fcn\u00ef\U0001F600', 40), 'ab', REPEAT('\u00e9', 90))")
    mx(m, "UPDATE blf_ac_zip.t SET a = CONCAT(a, 'y'), c = REPEAT(0x01, 3000) WHERE id = 1")
    mx(m, 'SET SESSION column_compression_zlib_wrap = ON')
    mx(m, "INSERT INTO blf_ac_zip.t VALUES (5, REPEAT('wrap', 100), 'w', REPEAT('z', 1000), 'w')")
    mx(m, 'SET SESSION column_compression_zlib_wrap = OFF')
    mx(m, 'DELETE FROM blf_ac_zip.t WHERE id = 2')
    src.sync(m)
    same(conn, m, 'SELECT id, md5(a), md5(b), md5(c), md5(d) FROM blf_ac_zip.t',
         'SELECT id, md5(a), md5(b), md5(c), md5(CONVERT(d USING utf8mb4)) FROM blf_ac_zip.t',
         'COMPRESSED columns')
    log('compressed-columns: snapshot and apply of deflated and stored values equal MariaDB\'s')
