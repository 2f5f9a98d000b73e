"""
test/apply_cases/cases_filters_copy.py -- copies under binlog_fdw.set_filter()
(issue #13): a table with masks (a fixed value, NULL, SHA-256 of VARCHAR,
of BINARY(n) with its trailing zeros and of a latin1 CHAR), an excluded
column and a row filter is copied by snapshot() (the target created by the
copy: no column for the excluded one) and by load() in chunks of 500 rows
(the target made first: the excluded column takes its default), then
followed by the stream: rows moving into and out of the row filter,
copied rows updated, the same values inserted again.  PostgreSQL is
compared with what the filter gives from MariaDB's rows, and each copied
row's masked values with those the stream gave the same values; verify()
finds no difference; a row filter reading a column left out and a created
target without a key column are refused.
"""

from harness import Source, check, expect_error, log, mdb_fresh, mx, q, q1, short, table_exists

from cases_filters import mrows, rows, same

DB = 'blf_ac_filtc'
COLS = ('id INT PRIMARY KEY, name VARCHAR(20), email VARCHAR(100), code BINARY(8), '
        'lat CHAR(10) CHARACTER SET latin1, secret VARCHAR(20), region VARCHAR(10), amount INT, note TEXT')
ROW_FILTER = "region = 'eu' AND amount > 10"
MASK = ('{"name": {"value": "***"}, "email": {"hash": "sha256"}, "code": {"hash": "sha256"}, '
        '"lat": {"hash": "sha256"}, "note": {"value": null}}')


def expected(m, table, extra=''):
    """What the filter gives of MariaDB's rows: masked, without secret, the
    rows of the row filter (BINARY(n): the binlog drops its trailing zeros)."""
    return mrows(m, "SELECT id, IF(name IS NULL, NULL, '***'), SHA2(email, 256), "
                    "SHA2(TRIM(TRAILING 0x00 FROM code), 256), SHA2(CAST(lat AS BINARY), 256), NULL%s, "
                    "region, amount FROM %s.%s WHERE %s" % (extra, DB, table, ROW_FILTER))


def got(conn, table, extra=''):
    return rows(conn, "SELECT id, name, email, convert_from(code, 'UTF8'), lat, note%s, region, amount "
                      "FROM %s.%s" % (extra, DB, table))


def fill(m, table):
    mx(m, "INSERT INTO %s.%s SELECT seq, IF(seq %% 13 = 0, NULL, CONCAT('n', seq)), "
          "IF(seq %% 11 = 0, NULL, CONCAT('e', seq, '@example.org')), UNHEX(LPAD(HEX(seq), 4, '0')), "
          "IF(seq %% 7 = 0, CONVERT('caf\u00e9' USING latin1), CONCAT('l', seq)), CONCAT('s', seq), "
          "IF(seq %% 3 = 0, 'us', 'eu'), seq %% 50, CONCAT('note ', seq) FROM %s.seq_1_to_3000"
          % (DB, table, DB))


def changes(m, table):
    """Rows moving into and out of the row filter, copied rows updated."""
    t = '%s.%s' % (DB, table)
    mx(m, "UPDATE %s SET region = 'eu' WHERE id IN (3, 33, 36)" % t)            # us: in if amount > 10
    mx(m, 'UPDATE %s SET amount = 5 WHERE id IN (11, 12, 14)' % t)             # out
    mx(m, "UPDATE %s SET amount = amount + 1, email = CONCAT('new', id, '@example.org') "
          "WHERE id IN (20, 22, 23)" % t)                                       # stays in, masked anew
    mx(m, "UPDATE %s SET amount = 44 WHERE id IN (25, 26, 28)" % t)             # stays in, masks kept
    mx(m, "UPDATE %s SET region = 'us', amount = 3 WHERE id = 6" % t)           # stays out
    mx(m, 'DELETE FROM %s WHERE id IN (16, 17, 18, 30)' % t)                    # in, in, out, out
    # the same values again: the stream's masks against the copy's
    mx(m, 'INSERT INTO %s SELECT id + 10000, name, email, code, lat, secret, region, amount, note '
          'FROM %s WHERE id BETWEEN 31 AND 100' % (t, t))


def same_masks(conn, table):
    """The copied rows 31-100 and the streamed ones with the same values."""
    pairs = q(conn, "SELECT c.id, c.name IS NOT DISTINCT FROM s.name AND c.email IS NOT DISTINCT FROM s.email "
                    "AND c.code = s.code AND c.lat = s.lat AND c.note IS NULL AND s.note IS NULL "
                    "FROM %s.%s c JOIN %s.%s s ON s.id = c.id + 10000 WHERE c.id BETWEEN 31 AND 100"
                    % (DB, table, DB, table))
    check(len(pairs) > 20, '%s: %d copied rows have a streamed twin' % (table, len(pairs)))
    bad = [p[0] for p in pairs if not p[1]]
    check(not bad, '%s: the copy masked rows %s otherwise than the stream' % (table, short(bad, 300)))
    lat = q1(conn, "SELECT lat FROM %s.%s WHERE id = 10049" % (DB, table))
    check(lat == q1(conn, "SELECT encode(sha256('\\x636166e9'::bytea), 'hex')"),
          '%s: the hash of latin1 CHAR caf\u00e9 is %s' % (table, lat))
    log('%s: %d copied rows masked as the stream masks them' % (table, len(pairs)))


def case_filters_copy(conn, m):
    mdb_fresh(m, DB)
    for t in ('snap', 'chunked'):
        mx(m, 'CREATE TABLE %s.%s (%s)' % (DB, t, COLS))
        fill(m, t)
    q(conn, 'DROP SCHEMA IF EXISTS %s CASCADE' % DB)
    src = Source(conn, 'ac_filtc', r'^blf_ac_filtc\.')
    for t in ('snap', 'chunked'):
        q(conn, "SELECT binlog_fdw.set_filter('ac_filtc', %s, exclude_columns => ARRAY['secret'], "
                "mask => %s, row_filter => %s)", ('%s.%s' % (DB, t), MASK, ROW_FILTER))
    # operations filters are of changes: a copy ignores them
    q(conn, "SELECT binlog_fdw.set_filter('ac_filtc', operations => ARRAY['insert', 'update', 'delete'])")

    # snapshot(): the copy creates the target, without the excluded column
    r = src.snapshot(['%s.snap' % DB])
    n = len(expected(m, 'snap'))
    check(r[0][2] == n and r[0][3] is True, 'snapshot(): %s, expected %d rows copied' % (r, n))
    check(q1(conn, "SELECT count(*) FROM information_schema.columns WHERE table_schema = %s "
                   "AND table_name = 'snap' AND column_name = 'secret'", (DB,)) == 0,
          'snap: the copy created the excluded column')
    same(got(conn, 'snap'), expected(m, 'snap'), 'snap after snapshot()')

    # load() in chunks: the target first, its excluded column with a default
    q(conn, "CREATE TABLE %s.chunked (id int PRIMARY KEY, name text, email text, code bytea, lat text, "
            "secret text DEFAULT 'hidden', region text, amount int, note text)" % DB)
    src.start()
    q(conn, 'CALL binlog_fdw.load(%s, %s, 500)', ('ac_filtc', ['%s.chunked' % DB]))
    st = q(conn, 'SELECT chunks, rows_copied, complete FROM binlog_fdw.load_status WHERE source = %s',
           ('%s.chunked' % DB,))
    n = len(expected(m, 'chunked'))
    check(st == [(7, n, True)], 'load_status of chunked: %s, expected 7 chunks, %d rows' % (st, n))
    same(got(conn, 'chunked', ', secret'), expected(m, 'chunked', ", 'hidden'"), 'chunked after load()')

    # then the stream
    for t in ('snap', 'chunked'):
        changes(m, t)
    src.sync(m)
    same(got(conn, 'snap'), expected(m, 'snap'), 'snap after the changes')
    same(got(conn, 'chunked', ', secret'), expected(m, 'chunked', ", 'hidden'"), 'chunked after the changes')
    for t in ('snap', 'chunked'):
        for rid, want in ((3, False), (33, True), (36, True), (11, False), (16, False), (20, True)):
            check(bool(q1(conn, 'SELECT count(*) FROM %s.%s WHERE id = %%s' % (DB, t), (rid,))) == want,
                  '%s: row %d %s' % (t, rid, 'missing' if want else 'present'))
        same_masks(conn, t)

    # verify()'s copy is filtered too: no difference
    diff = q(conn, 'SELECT * FROM binlog_fdw.verify(%s, %s)',
             ('ac_filtc', ['%s.snap' % DB, '%s.chunked' % DB]))
    check(diff == [], 'verify(): %s' % short(diff, 800))
    # what a copy cannot give as the stream would is refused, nothing written
    mx(m, 'CREATE TABLE %s.rfx (id INT PRIMARY KEY, v INT, s VARCHAR(10))' % DB)
    mx(m, "INSERT INTO %s.rfx VALUES (1, 1, 'a'), (2, 2, 'b')" % DB)
    q(conn, 'CREATE TABLE %s.rfx (id int PRIMARY KEY, v int, s text)' % DB)
    q(conn, "SELECT binlog_fdw.set_filter('ac_filtc', %s, exclude_columns => ARRAY['s'], "
            "row_filter => $$s = 'a'$$)", ('%s.rfx' % DB,))
    expect_error(conn, 'SELECT * FROM binlog_fdw.snapshot(%s, %s)', ('ac_filtc', ['%s.rfx' % DB]),
                 what='a row filter reading a column left out', sqlstate='42703',
                 message=['the row filter of blf_ac_filtc.rfx reads column "s"', 'do not carry'])
    check(q1(conn, 'SELECT count(*) FROM %s.rfx' % DB) == 0, 'rfx: rows despite the error')
    mx(m, 'CREATE TABLE %s.pkx (id INT PRIMARY KEY, v INT)' % DB)
    q(conn, "SELECT binlog_fdw.set_filter('ac_filtc', %s, exclude_columns => ARRAY['id'])", ('%s.pkx' % DB,))
    expect_error(conn, 'SELECT * FROM binlog_fdw.snapshot(%s, %s)', ('ac_filtc', ['%s.pkx' % DB]),
                 what='a key column left out of a created target', sqlstate='0A000',
                 message='its filter leaves out column "id" of its primary key')
    check(not table_exists(conn, DB, 'pkx'), 'pkx: created despite the error')

    q(conn, 'DELETE FROM binlog_fdw.filters WHERE server_name = %s', ('ac_filtc',))
    q(conn, 'DELETE FROM binlog_fdw.filter_history WHERE server_name = %s', ('ac_filtc',))
    src.drop()
