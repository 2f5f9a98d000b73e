#!/usr/bin/python3
"""
test/streaming/streaming.py -- live tests of binlog_fdw's streaming core:
MariaDB main -> sources (foreign servers) on PostgreSQL main -> get / ack /
rollback, the foreign table and the status view.  Run by
test/suites/60-streaming.sh; prints "ok - streaming/NAME" or "not ok -
streaming/NAME: reason" per case (test/run.sh's protocol).

Cases:
  values                every MariaDB column type, inserted, updated and
                        deleted; each value of get() and of a foreign table
                        compared with what MariaDB returns for the row;
                        get_json() delivers the same changes, its json the
                        jsonb of get(); get_jsonl()'s lines too
  get-ack-rollback      batch boundaries, seq without gaps, rollback (all,
                        after a partial ack), in-order acks, acks in aborted
                        transactions, transactions larger than max_changes,
                        the durable position, a session ending with batches out;
                        get_json() batches: the same boundaries and changes,
                        acked and rolled back like get()'s; get_jsonl()'s
                        lines the same changes, its batches cut at
                        binlog_fdw.jsonl_max_bytes
  pipelined             the client recipes (clients/python, psycopg 3;
                        clients/node, node-postgres): several batches out,
                        an ack out of order refused, acks after later gets,
                        rollback with gets in flight, sessions ended with
                        batches out and reconnected at random points: every
                        change exactly once, in order, MariaDB's rows
  consumers-race        two connections get/ack concurrently: every change
                        acknowledged exactly once
  restart-exactly-once  acks up to the middle of a transaction, PostgreSQL
                        restarted (fast, then immediate): nothing acked comes
                        again, nothing unacked is lost
  filters               include/exclude: rows and DDL of other tables never
                        appear, transactions of only excluded tables leave
                        nothing
  start-time            start 'time:T' begins at the first transaction at or
                        after T, across binlog files (older files skipped,
                        later ones followed); a time after the last
                        transaction starts at the end
  filtered-advance      transactions the filters leave out move the durable
                        position once everything delivered is acknowledged
  heartbeats            an idle source stays 'streaming' with a small lag
  two-sources           a second MariaDB instance and a second source at once
  status                the status view against what was done
  not-preloaded         a cluster without binlog_fdw in shared_preload_libraries

Environment (besides scripts/env.sh's and PG*): BLF_STREAM_CASES (a comma-
separated subset), BLF_STREAM_KEEP=1 (leave databases and sources),
BLF_STREAM_SECOND_PORT (3407), BLF_STREAM_NOPRE_PORT (5441).
"""

import json
import os
import random
import re
import shutil
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import psycopg2                                     # noqa: E402

import values                                       # noqa: E402
from common import (PGHOST, PGPORT, PGUSER, ROOT)  # noqa: E402
from common import (Deadline, Fail, GET_NAMES, MDB, MDB_DATA, MARIADB_SH, NOPRE_PORT, PGDB,  # noqa: E402
                    POSTGRES_SH, SECOND_PORT, TMP, Runner, check, drop_source, flat, get,
                    get_batches, get_jsonl, last_gtid, log, master_status, mdb, mx, pg, q, q1,
                    short, sh, start_source, status, to_change, wait_for, wait_streaming)

KEEP = os.environ.get('BLF_STREAM_KEEP') == '1'


def ack(conn, server, batch):
    return q1(conn, 'SELECT binlog_fdw.ack(%s, %s)', (server, batch[0].batch_id))


def rollback(conn, server, batch_id=None):
    if batch_id is None:
        return q1(conn, 'SELECT binlog_fdw.rollback(%s)', (server,))
    return q1(conn, 'SELECT binlog_fdw.rollback(%s, %s)', (server, batch_id))


def source_state(conn, server):
    r = q(conn, 'SELECT file, pos, skip, gtid, gtid_state FROM binlog_fdw.source_state '
          'WHERE server_name = %s', (server,))
    return r[0] if r else None


def expect_error(conn, fn, needle, what):
    """fn() must raise a PostgreSQL error whose message contains needle."""
    try:
        fn()
    except psycopg2.Error as e:
        msg = (e.pgerror or str(e)).strip()
        check(needle in msg, '%s: expected an error with %r, got %s' % (what, needle, short(msg, 300)))
        return e
    raise Fail('%s: no error (expected %r)' % (what, needle))


def wait_unacked(conn, server, n, timeout=30):
    return wait_for('%d un-acked changes in %s' % (n, server),
                    lambda: (status(conn, server) or {}).get('changes_unacked', 0) >= n, timeout)


def assert_contiguous(changes, what):
    seqs = [c.seq for c in changes]
    check(seqs == list(range(seqs[0], seqs[0] + len(seqs))),
          '%s: seq not contiguous: %s' % (what, short(seqs, 300)))


def txn_shape(changes):
    """['begin', 'insert', ..., 'commit', 'ddl', ...] of a change list."""
    return [c.op for c in changes]


# ---------------------------------------------------------------------------
# values

def case_values(conn, m):
    cols = values.columns()
    table = MDB + '.vals'
    mx(m, 'DROP TABLE IF EXISTS ' + table)
    mx(m, values.create_sql(table, cols))
    colnames = ', '.join('`%s`' % c.name for c in cols)
    start_source(conn, 'vsrc', 9601, include=r'^blf_stream\.vals$')
    q(conn, 'CREATE FOREIGN TABLE vals_changes (seq bigint, op text, schema_name text, '
            'table_name text, pk_columns text[], primary_key jsonb, before jsonb, after jsonb) '
            'SERVER vsrc')

    def snap(ids):
        return {r[0]: r for r in mx(m, values.select_sql(table, cols, ids))}

    def set_clause(r):
        return ', '.join('`%s` = %s' % (c.name, v) for c, v in zip(cols, values.row_values(m, cols, r)))

    txns = []
    # T1: value sets 0..4 as rows 1..5, one statement
    mx(m, 'INSERT INTO %s (id, %s) VALUES %s' % (table, colnames, ', '.join(
        '(%d, %s)' % (r + 1, ', '.join(values.row_values(m, cols, r))) for r in range(5))))
    a = snap([1, 2, 3, 4, 5])
    check(len(a) == 5, 'MariaDB has %d of the 5 rows inserted' % len(a))
    txns.append([('insert', i, None, a[i]) for i in (1, 2, 3, 4, 5)])
    # T2: row 1 gets value set 5, every column
    b = snap([1])
    mx(m, 'UPDATE %s SET %s WHERE id = 1' % (table, set_clause(5)))
    a = snap([1])
    txns.append([('update', 1, b[1], a[1])])
    # T3: NULLs to values, values to NULLs, a delete, in one transaction
    t3 = []
    mx(m, 'BEGIN')
    for rid, r in ((3, 6), (4, 2)):
        b = snap([rid])
        mx(m, 'UPDATE %s SET %s WHERE id = %d' % (table, set_clause(r), rid))
        t3.append(('update', rid, b[rid], snap([rid])[rid]))
    b = snap([2])
    mx(m, 'DELETE FROM %s WHERE id = 2' % table)
    t3.append(('delete', 2, b[2], None))
    mx(m, 'COMMIT')
    txns.append(t3)
    # T4: two rows deleted by one statement (primary key order)
    b = snap([1, 5])
    mx(m, 'DELETE FROM %s WHERE id IN (5, 1)' % table)
    txns.append([('delete', 1, b[1], None), ('delete', 5, b[5], None)])
    # T5: the primary key changes
    b = snap([4])
    mx(m, 'UPDATE %s SET id = 40 WHERE id = 4' % table)
    txns.append([('update', 40, b[4], snap([40])[40])])

    nchanges = sum(len(t) + 2 for t in txns)
    wait_unacked(conn, 'vsrc', nchanges)

    # the foreign table: a peek, twice, consumes nothing
    ft_sql = ('SELECT seq, op, schema_name, table_name, pk_columns, primary_key::text, '
              'before::text, after::text FROM vals_changes ORDER BY seq')
    ft_names = ['seq', 'op', 'schema_name', 'table_name', 'pk_columns', 'primary_key', 'before', 'after']
    peek1 = [to_change(ft_names, r) for r in q(conn, ft_sql)]
    peek2 = [to_change(ft_names, r) for r in q(conn, ft_sql)]
    check(len(peek1) == nchanges, 'foreign table shows %d changes, expected %d' % (len(peek1), nchanges))
    check(peek1 == peek2, 'a second scan of the foreign table differs from the first')
    only_rows = q1(conn, "SELECT count(*) FROM vals_changes WHERE op = 'update' AND table_name = 'vals'")
    check(only_rows == 4, 'foreign table with WHERE op/table_name: %r updates, expected 4' % only_rows)
    s3 = peek1[3].seq
    tail = [r[0] for r in q(conn, 'SELECT seq FROM vals_changes WHERE seq > %s ORDER BY seq', (s3,))]
    check(tail == [c.seq for c in peek1[4:]], 'foreign table with WHERE seq > %d: %s' % (s3, short(tail, 200)))
    tail = [r[0] for r in q(conn, "SELECT seq FROM vals_changes WHERE seq >= %s AND op = 'delete' ORDER BY seq",
                            (s3,))]
    check(tail == [c.seq for c in peek1 if c.op == 'delete'], 'foreign table with WHERE seq >= and op: %s' % tail)

    got = flat(get_batches(conn, 'vsrc', nchanges))
    assert_contiguous(got, 'get()')
    check([c.seq for c in got] == [c.seq for c in peek1], 'get() and the foreign table show other seqs')

    problems = []
    shape = []
    for t in txns:
        shape += ['begin'] + [x[0] for x in t] + ['commit']
    check(txn_shape(got) == shape, 'operations %s, expected %s' % (txn_shape(got), shape))
    for source, changes in (('get', got), ('foreign table', peek1)):
        rows = [c for c in changes if c.op not in ('begin', 'commit')]
        exp = [x for t in txns for x in t]
        for c, (op, rid, before, after) in zip(rows, exp):
            what = '%s seq %d %s id %d' % (source, c.seq, op, rid)
            if (c.schema_name, c.table_name) != ('blf_stream', 'vals'):
                problems.append('%s: table %s.%s' % (what, c.schema_name, c.table_name))
            if c.pk_columns != ['id']:
                problems.append('%s: pk_columns %r' % (what, c.pk_columns))
            if c.primary_key != {'id': str(rid)}:
                problems.append('%s: primary_key %r' % (what, c.primary_key))
            if before is None:
                if c.before is not None:
                    problems.append('%s: a before image' % what)
            else:
                problems += values.compare_image(cols, before, c.before, what + ' before')
            if after is None:
                if c.after is not None:
                    problems.append('%s: an after image' % what)
            else:
                problems += values.compare_image(cols, after, c.after, what + ' after')
    for p in problems[:40]:
        log(p)
    check(not problems, '%d value mismatches, first: %s' % (len(problems), problems[0] if problems else ''))
    ncompared = 2 * sum(1 for t in txns for x in t for img in x[2:] if img is not None) * (len(cols) + 1)
    log('values: %d values compared (get and foreign table)' % ncompared)

    # get_json(): rolled back, the same changes come again in the same
    # batches, every column the same and the json images (cast to jsonb)
    # the jsonb images of get()
    res = q1(conn, "SELECT pg_get_function_arguments('binlog_fdw.get_json(text, integer, integer)'::regprocedure)")
    check('OUT primary_key json, OUT before json, OUT after json' in res, 'get_json() arguments: %s' % res)
    nb = len({c.batch_id for c in got})
    check(rollback(conn, 'vsrc') == nb, 'rollback() after get() did not drop its %d batches' % nb)

    # every number of get()'s images is numeric_in's numeric of its text,
    # byte for byte (decimals are built from their digits, not parsed)
    nnum, nbad = q(conn, "SELECT count(*), count(*) FILTER (WHERE numeric_send(v::numeric) <> "
                         "numeric_send((v::text)::numeric)) FROM binlog_fdw.get('vsrc', 100000, 1000) g, "
                         "LATERAL (SELECT * FROM jsonb_each(g.before) UNION ALL "
                         "SELECT * FROM jsonb_each(g.after)) e(k, v) WHERE jsonb_typeof(v) = 'number'")[0]
    check(nnum > 0 and nbad == 0, '%d of %d numbers of get() differ from numeric_in\'s' % (nbad, nnum))
    log('values: %d numbers of get() equal numeric_in\'s byte for byte' % nnum)
    check(rollback(conn, 'vsrc') == 1, 'rollback() after the numbers check')
    gotj = flat(get_batches(conn, 'vsrc', nchanges, fn='get_json'))
    check([c.seq for c in gotj] == [c.seq for c in got], 'get_json() and get() show other seqs')
    check(min(c.batch_id for c in gotj) > max(c.batch_id for c in got), 'get_json() batch ids are not new')
    check([len({c.batch_id for c in gotj})] == [nb], 'get_json() and get() batches differ')
    differ = [(c.seq, k) for c, g in zip(gotj, got) for k in GET_NAMES if k != 'batch_id' and c[k] != g[k]]
    for seq, k in differ[:10]:
        log('get_json() seq %d %s: %s, get(): %s' % (seq, k, short(byseq_j(gotj, seq)[k], 300),
                                                     short(byseq_j(got, seq)[k], 300)))
    check(not differ, '%d columns of get_json() differ from get(), first %s' % (len(differ), differ[:5]))
    got = gotj

    # get_jsonl(): rolled back again, the same changes as JSON lines, every
    # key of a line the column of get() (its objects through jsonb)
    nb = len({c.batch_id for c in got})
    check(rollback(conn, 'vsrc') == nb, 'rollback() after get_json() did not drop its %d batches' % nb)
    gotl = flat(get_batches(conn, 'vsrc', nchanges, fn='get_jsonl'))
    check([c.seq for c in gotl] == [c.seq for c in got], 'get_jsonl() and get() show other seqs')
    differ = [(c.seq, k) for c, g in zip(gotl, got) for k in GET_NAMES if k != 'batch_id' and c[k] != g[k]]
    for seq, k in differ[:10]:
        log('get_jsonl() seq %d %s: %s, get(): %s' % (seq, k, short(byseq_j(gotl, seq)[k], 300),
                                                      short(byseq_j(got, seq)[k], 300)))
    check(not differ, '%d keys of get_jsonl() lines differ from get(), first %s' % (len(differ), differ[:5]))
    log('get_jsonl(): %d changes, each key equal to get()\'s column' % len(gotl))
    got = gotl

    # acknowledged changes leave the foreign table
    q(conn, 'SELECT binlog_fdw.ack(%s, %s)', ('vsrc', got[-1].batch_id))
    check(q1(conn, 'SELECT count(*) FROM vals_changes') == 0, 'the foreign table still shows acked changes')
    drop_source(conn, 'vsrc')


def byseq_j(changes, seq):
    return next(c for c in changes if c.seq == seq)


# ---------------------------------------------------------------------------
# get / ack / rollback

def case_get_ack(conn, m):
    table = MDB + '.acks'
    mx(m, 'DROP TABLE IF EXISTS ' + table)
    mx(m, 'CREATE TABLE %s (id INT PRIMARY KEY, v VARCHAR(20))' % table)
    start_source(conn, 'asrc', 9602, include=r'^blf_stream\.acks$')
    gtids = []
    mx(m, "INSERT INTO %s VALUES (1, 'a'), (2, 'b'), (3, 'c')" % table)          # 5 changes
    gtids.append(last_gtid(m))
    mx(m, 'BEGIN')
    mx(m, "UPDATE %s SET v = 'a2' WHERE id = 1" % table)
    mx(m, "UPDATE %s SET v = 'b2' WHERE id = 2" % table)
    mx(m, 'COMMIT')                                                                # 4
    gtids.append(last_gtid(m))
    mx(m, 'ALTER TABLE %s ADD COLUMN w INT' % table)                               # 1
    gtids.append(last_gtid(m))
    mx(m, 'DELETE FROM %s WHERE id = 3' % table)                                   # 3
    gtids.append(last_gtid(m))
    mx(m, 'INSERT INTO %s (id, v) VALUES %s' % (table, ', '.join(
        "(%d, 'big%d')" % (i, i) for i in range(10, 35))))                         # 27
    gtids.append(last_gtid(m))
    total = 40
    wait_unacked(conn, 'asrc', total)

    # 1. batches end at COMMIT/DDL, or are full (a transaction larger than max)
    batches = get_batches(conn, 'asrc', total, max_changes=7)
    sizes = [len(b) for b in batches]
    check(sizes == [5, 5, 3, 7, 7, 7, 6], 'batch sizes with max_changes 7: %s, expected '
          '[5, 5, 3, 7, 7, 7, 6]' % sizes)
    first = flat(batches)
    assert_contiguous(first, 'first delivery')
    ids = [b[0].batch_id for b in batches]
    check(ids == sorted(set(ids)), 'batch ids not increasing: %s' % ids)
    for b in batches:
        check(len({c.batch_id for c in b}) == 1, 'a batch with several batch ids')
        check(b[-1].op in ('commit', 'ddl') or len(b) == 7,
              'batch %s ends with %s and is not full' % (txn_shape(b), b[-1].op))
    check(txn_shape(batches[0]) == ['begin', 'insert', 'insert', 'insert', 'commit'],
          'first batch: %s' % txn_shape(batches[0]))
    check(txn_shape(batches[1]) == ['begin', 'update', 'update', 'commit', 'ddl'],
          'second batch: %s' % txn_shape(batches[1]))
    big = flat(batches[3:])
    check(txn_shape(big) == ['begin'] + ['insert'] * 25 + ['commit'],
          'the large transaction: %s' % txn_shape(big))
    check(len({c.gtid for c in big}) == 1 and big[0].gtid == gtids[4],
          'the large transaction has gtids %s, expected %s' % ({c.gtid for c in big}, gtids[4]))
    check([c.after['id'] for c in big[1:-1]] == [str(i) for i in range(10, 35)],
          'the large transaction\'s rows are not in order')
    for b in batches[4:6]:
        check(set(txn_shape(b)) == {'insert'}, 'a middle batch of the large transaction: %s' % txn_shape(b))
    s0 = first[0].seq
    byseq = {c.seq: c for c in first}

    def same(changes, seqs, what):
        check([c.seq for c in changes] == list(seqs), '%s: seqs %s, expected %s..%s' % (
            what, short([c.seq for c in changes], 200), seqs[0], seqs[-1]))
        for c in changes:
            a = dict(c, batch_id=None)
            b = dict(byseq[c.seq], batch_id=None)
            check(a == b, '%s: seq %d differs: %s / %s' % (what, c.seq, short(a, 300), short(b, 300)))

    # 2. rollback re-delivers exactly the un-acked changes
    n = rollback(conn, 'asrc')
    check(n == 7, 'rollback() dropped %r batches, expected 7' % n)
    again = get(conn, 'asrc', 1000)
    same(again, range(s0, s0 + total), 'after rollback()')
    check(again[0].batch_id > ids[-1], 'batch id after rollback is not new')

    # 2b. get_json(): the same batches (boundaries, seqs, changes), in order
    #     only, rolled back like get()'s
    check(rollback(conn, 'asrc') == 1, 'rollback() did not drop the batch of all changes')
    jbatches = get_batches(conn, 'asrc', total, max_changes=7, fn='get_json')
    check([len(b) for b in jbatches] == sizes, 'get_json() batch sizes %s, get(): %s' % (
        [len(b) for b in jbatches], sizes))
    same(flat(jbatches), range(s0, s0 + total), 'get_json()')
    jids = [b[0].batch_id for b in jbatches]
    check(jids == sorted(set(jids)) and jids[0] > again[0].batch_id, 'get_json() batch ids: %s' % jids)
    expect_error(conn, lambda: ack(conn, 'asrc', jbatches[1]), 'cannot be acknowledged before batch',
                 'ack of the second get_json() batch first')
    check(rollback(conn, 'asrc', jids[5]) == 2, 'rollback(server, batch_id) of get_json() batches 6-7')
    check(status(conn, 'asrc')['batches_out'] == 5, 'get_json() batches out after rollback from 6')
    same(get(conn, 'asrc', 1000), range(s0 + 27, s0 + total), 'get() after rolling back get_json() batches')

    # 2c. get_jsonl(): the same batches as JSON lines (every line the same
    #     change as get()'s row); with binlog_fdw.jsonl_max_bytes small, a
    #     batch ends at the last transaction boundary before its text passes
    #     the limit (inside a transaction larger than that, at the line that
    #     passes it): every change still comes once, in order
    check(rollback(conn, 'asrc') == 6, 'rollback() before get_jsonl() did not drop 6 batches')
    lbatches = get_batches(conn, 'asrc', total, max_changes=7, fn='get_jsonl')
    check([len(b) for b in lbatches] == sizes, 'get_jsonl() batch sizes %s, get(): %s' % (
        [len(b) for b in lbatches], sizes))
    same(flat(lbatches), range(s0, s0 + total), 'get_jsonl()')
    expect_error(conn, lambda: ack(conn, 'asrc', lbatches[1]), 'cannot be acknowledged before batch',
                 'ack of the second get_jsonl() batch first')
    check(rollback(conn, 'asrc') == len(lbatches), 'rollback() of the get_jsonl() batches')
    # the text itself: compact JSON (no spaces), keys in get()'s column
    # order, nulls left out, times in UTC with an explicit offset
    raw = q(conn, "SELECT lines FROM binlog_fdw.get_jsonl('asrc', 5, 300)")[0][0]
    for line in raw.splitlines():
        obj = json.loads(line)
        check(line == json.dumps(obj, separators=(',', ':'), ensure_ascii=False),
              'get_jsonl() line is not compact JSON: %s' % short(line, 400))
        keys = list(obj)
        check(keys == [k for k in GET_NAMES if k in obj], 'get_jsonl() keys out of order: %s' % keys)
        check(None not in obj.values(), 'get_jsonl() line with a null: %s' % short(line, 400))
        check({'seq', 'file', 'pos', 'next_pos', 'event_time', 'server_id', 'op'} <= set(keys),
              'get_jsonl() line without a key every change has: %s' % keys)
        for k in ('commit_time', 'event_time'):
            check(k not in obj or re.fullmatch(r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?\+00:00', obj[k]),
                  'get_jsonl() %s %r' % (k, obj.get(k)))
        if obj['op'] == 'insert':
            check(keys[-5:] == ['table_name', 'op', 'pk_columns', 'primary_key', 'after'] and
                  obj['pk_columns'] == ['id'] and obj['primary_key'] == {'id': obj['after']['id']},
                  'get_jsonl() insert line: %s' % short(line, 400))
    check([json.loads(x)['op'] for x in raw.splitlines()] == ['begin', 'insert', 'insert', 'insert', 'commit'],
          'get_jsonl() first batch: %s' % short(raw, 600))
    check(rollback(conn, 'asrc') == 1, 'rollback() of the raw get_jsonl() batch')
    q(conn, "SET binlog_fdw.jsonl_max_bytes = '2kB'")
    texts = []
    capped = []
    while sum(len(b) for b in capped) < total:
        b = get_jsonl(conn, 'asrc', 1000, 300, sizes=texts)
        check(b, 'get_jsonl() with jsonl_max_bytes 2kB stopped after %d changes' % sum(map(len, capped)))
        capped.append(b)
    q(conn, 'RESET binlog_fdw.jsonl_max_bytes')
    same(flat(capped), range(s0, s0 + total), 'get_jsonl() with jsonl_max_bytes 2kB')
    log('get_jsonl() batches with jsonl_max_bytes 2kB: %s' % [
        (len(b), nbytes, b[-1].op) for b, (nbytes, _) in zip(capped, texts)])
    check(len(capped) > 3, 'jsonl_max_bytes 2kB made only %d batches' % len(capped))
    for b, (nbytes, lastlen) in zip(capped, texts):
        ends = [c.op in ('commit', 'ddl') for c in b]
        check(nbytes - lastlen <= 2048, 'a batch of %d bytes goes on after its text passed 2kB' % nbytes)
        check(ends[-1] or not any(ends),
              'a batch of %d bytes holds a transaction boundary and a part of the next transaction: %s' % (
                  nbytes, txn_shape(b)))
    check(any(not any(c.op in ('commit', 'ddl') for c in b) for b in capped),
          'no batch is a part of the transaction larger than 2kB')
    check(sum(1 for b in capped if b[-1].op in ('commit', 'ddl')) >= 2,
          'fewer than two batches end at a transaction boundary')
    check(rollback(conn, 'asrc') == len(capped), 'rollback() of the capped get_jsonl() batches')

    # 3. rollback after a partial ack: batch 1 acked, batches 2 and 3 come again
    rollback(conn, 'asrc')
    b1, b2, b3 = (get(conn, 'asrc', 7) for _ in range(3))
    check([len(b1), len(b2), len(b3)] == [5, 5, 3], 'batches %d %d %d' % (len(b1), len(b2), len(b3)))
    check(ack(conn, 'asrc', b1) == s0 + 4, 'ack() did not return the last seq of the batch')
    st = source_state(conn, 'asrc')
    check(st[:3] == (b1[-1].file, b1[-1].next_pos, 0),
          'source_state after the first commit: %s, expected %s' % (st, (b1[-1].file, b1[-1].next_pos, 0)))
    check(st[4] == gtids[0], 'gtid_state after the first commit: %s, expected %s' % (st[4], gtids[0]))
    check(rollback(conn, 'asrc') == 2, 'rollback after a partial ack did not drop 2 batches')
    rest = get(conn, 'asrc', 1000)
    same(rest, range(s0 + 5, s0 + total), 'after ack of batch 1 and rollback()')
    check(rollback(conn, 'asrc', rest[0].batch_id) == 1, 'rollback(server, batch_id) did not drop 1 batch')

    # 4. acks in order only
    ba, bb = get(conn, 'asrc', 7), get(conn, 'asrc', 7)
    check(txn_shape(ba) == ['begin', 'update', 'update', 'commit', 'ddl'], 'batch A: %s' % txn_shape(ba))
    check(txn_shape(bb) == ['begin', 'delete', 'commit'], 'batch B: %s' % txn_shape(bb))
    expect_error(conn, lambda: ack(conn, 'asrc', bb), 'cannot be acknowledged before batch',
                 'ack of the second batch first')
    ack(conn, 'asrc', ba)
    st = source_state(conn, 'asrc')
    check(st[:3] == (ba[-1].file, ba[-1].next_pos, 0), 'source_state after a DDL: %s' % (st,))
    check(st[4] == gtids[2], 'gtid_state after the DDL: %s, expected %s' % (st[4], gtids[2]))
    ack(conn, 'asrc', bb)
    expect_error(conn, lambda: ack(conn, 'asrc', bb), 'is not outstanding', 'a second ack of a batch')
    st_b = source_state(conn, 'asrc')
    check(st_b[:3] == (bb[-1].file, bb[-1].next_pos, 0), 'source_state after batch B: %s' % (st_b,))

    # 5. an ack in a transaction that rolls back leaves the batch un-acked
    bc = get(conn, 'asrc', 7)
    check(txn_shape(bc) == ['begin'] + ['insert'] * 6, 'batch C: %s' % txn_shape(bc))
    acked_seq = status(conn, 'asrc')['acked_seq']
    conn.autocommit = False
    try:
        ack(conn, 'asrc', bc)
        check(source_state(conn, 'asrc')[2] == 7, 'inside the transaction, source_state.skip is not 7')
        conn.rollback()
    finally:
        conn.autocommit = True
    check(source_state(conn, 'asrc') == st_b, 'source_state changed by an aborted ack: %s' % (
        source_state(conn, 'asrc'),))
    s = status(conn, 'asrc')
    check(s['acked_seq'] == acked_seq and s['batches_out'] == 1,
          'after an aborted ack: acked_seq %s (was %s), batches_out %s' % (s['acked_seq'], acked_seq,
                                                                           s['batches_out']))
    ack(conn, 'asrc', bc)
    # 6. the durable position inside a transaction: its start, and the changes acked
    st = source_state(conn, 'asrc')
    check(st[:3] == (bb[-1].file, bb[-1].next_pos, 7),
          'source_state in the middle of a transaction: %s, expected %s' % (st, (bb[-1].file, bb[-1].next_pos, 7)))
    check(st[3] == gtids[4] and st[4] == gtids[3], 'gtid/gtid_state in the middle of a transaction: %s' % (st,))
    s = status(conn, 'asrc')
    check((s['acked_file'], s['acked_pos'], s['acked_skip']) == st[:3],
          'status acked position %s differs from source_state %s' % (
              (s['acked_file'], s['acked_pos'], s['acked_skip']), st[:3]))

    # 7. a session that ends with batches out: they come again
    c2 = pg()
    lost = get(c2, 'asrc', 1000)
    same(lost, range(s0 + 20, s0 + total), 'a second session\'s get()')
    check(status(conn, 'asrc')['batches_out'] == 1, 'the second session\'s batch is not out')
    c2.close()
    wait_for('the closed session\'s batch to be rolled back',
             lambda: status(conn, 'asrc')['batches_out'] == 0, 10)
    tail = get(conn, 'asrc', 1000)
    same(tail, range(s0 + 20, s0 + total), 'after the other session ended')
    ack(conn, 'asrc', tail)
    s = status(conn, 'asrc')
    check((s['changes_unacked'], s['batches_out'], s['ring_entries'], s['ring_bytes_used'], s['acked_seq'])
          == (0, 0, 0, 0, s0 + total - 1),
          'after acking everything: unacked %s, batches %s, entries %s, bytes %s, acked_seq %s' % (
              s['changes_unacked'], s['batches_out'], s['ring_entries'], s['ring_bytes_used'], s['acked_seq']))
    st = source_state(conn, 'asrc')
    check(st[:3] == (tail[-1].file, tail[-1].next_pos, 0) and st[4] == gtids[4],
          'final source_state %s' % (st,))
    check(get(conn, 'asrc', 1000, 200) == [], 'get() after everything was acked returned changes')

    # 8. get_json() batches are acknowledged like get()'s (in order, in the
    #    caller's transaction, the durable position moves); those of a
    #    session that ends come again
    mx(m, "INSERT INTO %s (id, v) VALUES (100, 'j1'), (101, 'j2')" % table)   # 4 changes
    gtid_j = last_gtid(m)
    mx(m, "UPDATE %s SET v = 'j3' WHERE id = 100" % table)                    # 3
    gtid_k = last_gtid(m)
    wait_unacked(conn, 'asrc', 7)
    c3 = pg()
    lost = get(c3, 'asrc', 1000, fn='get_json')
    check(txn_shape(lost) == ['begin', 'insert', 'insert', 'commit', 'begin', 'update', 'commit'],
          'get_json() of the last changes: %s' % txn_shape(lost))
    byseq = {c.seq: c for c in lost}
    c3.close()
    wait_for('the closed session\'s get_json() batch to be rolled back',
             lambda: status(conn, 'asrc')['batches_out'] == 0, 10)
    j1, j2 = get(conn, 'asrc', 6, fn='get_json'), get(conn, 'asrc', 6, fn='get_json')
    s8 = lost[0].seq
    same(j1, range(s8, s8 + 4), 'get_json() batch 1 after the other session ended')
    same(j2, range(s8 + 4, s8 + 7), 'get_json() batch 2 after the other session ended')
    check(j1[1].after == {'id': '100', 'v': 'j1', 'w': None} and j1[1].primary_key == {'id': '100'},
          'get_json() insert: %s, key %s' % (j1[1].after, j1[1].primary_key))
    check(j2[1].before == {'id': '100', 'v': 'j1', 'w': None} and j2[1].after == {'id': '100', 'v': 'j3', 'w': None},
          'get_json() update: %s -> %s' % (j2[1].before, j2[1].after))
    expect_error(conn, lambda: ack(conn, 'asrc', j2), 'cannot be acknowledged before batch',
                 'ack of the second get_json() batch first')
    check(ack(conn, 'asrc', j1) == s8 + 3, 'ack() of a get_json() batch did not return its last seq')
    st = source_state(conn, 'asrc')
    check(st[:3] == (j1[-1].file, j1[-1].next_pos, 0) and st[4] == gtid_j,
          'source_state after acking a get_json() batch: %s' % (st,))
    conn.autocommit = False
    try:
        ack(conn, 'asrc', j2)
        conn.rollback()
    finally:
        conn.autocommit = True
    s = status(conn, 'asrc')
    check(source_state(conn, 'asrc') == st and s['batches_out'] == 1 and s['changes_unacked'] == 3,
          'after an aborted ack of a get_json() batch: %s, batches_out %s, unacked %s' % (
              source_state(conn, 'asrc'), s['batches_out'], s['changes_unacked']))
    ack(conn, 'asrc', j2)
    s = status(conn, 'asrc')
    st = source_state(conn, 'asrc')
    check((s['changes_unacked'], s['batches_out']) == (0, 0) and st[:3] == (j2[-1].file, j2[-1].next_pos, 0)
          and st[4] == gtid_k, 'after acking the get_json() batches: unacked %s, batches %s, %s' % (
              s['changes_unacked'], s['batches_out'], st))
    check(get(conn, 'asrc', 1000, 200, fn='get_json') == [], 'get_json() after everything was acked returned changes')
    drop_source(conn, 'asrc')


# ---------------------------------------------------------------------------
# pipelined consumers: the client recipes (clients/python with psycopg 3,
# clients/node with node-postgres)

def case_pipelined(conn, m):
    sys.path.insert(0, os.path.join(ROOT, 'clients', 'python'))
    from binlog_fdw_stream import Consumer, ConsumerError
    table = MDB + '.pipe'
    mx(m, 'DROP TABLE IF EXISTS ' + table)
    mx(m, 'CREATE TABLE %s (id INT PRIMARY KEY, v VARCHAR(20))' % table)
    start_source(conn, 'psrc', 9607, include=r'^blf_stream\.pipe$')
    ntx, per = 40, 10                      # 40 transactions of 10 rows: 12 changes each
    for t in range(ntx):
        mx(m, 'INSERT INTO %s VALUES %s' % (table, ', '.join(
            "(%d, 'v%d')" % (t * per + i, t * per + i) for i in range(per))))
    total = ntx * (per + 2)
    wait_unacked(conn, 'psrc', total)
    conninfo = 'host=%s port=%d user=%s dbname=%s' % (PGHOST, PGPORT, PGUSER, PGDB)
    s0 = status(conn, 'psrc')['acked_seq'] + 1
    acked = []                             # the lines of acked batches, in order

    def close(c):
        # a session's batches come back when its backend has ended (it may
        # still run the gets it was sent): the next session starts after that
        pid = c.backend_pid
        c.close()
        wait_for('the consumer backend %d to end' % pid, lambda: not q1(
            conn, 'SELECT count(*) FROM pg_stat_activity WHERE pid = %s', (pid,)), 20)

    def lines_of(b):
        out = [json.loads(x) for x in b.lines.decode().splitlines()]
        check(len(out) == b.changes and [x['seq'] for x in out] == list(range(b.first_seq, b.last_seq + 1)),
              'batch %d: %d lines, seqs %s, for %d changes %d..%d' % (
                  b.batch_id, len(out), short([x['seq'] for x in out]), b.changes, b.first_seq, b.last_seq))
        return out

    # 1. several batches out at once: three handed out and not acked, the
    #    gets in flight behind them take two more
    c = Consumer(conninfo, 'psrc', max_changes=12, timeout_ms=300, depth=2).connect()
    gen = c.batches()
    b1, b2, b3 = next(gen), next(gen), next(gen)
    check([b.first_seq for b in (b1, b2, b3)] == [s0, s0 + 12, s0 + 24] and
          [b.changes for b in (b1, b2, b3)] == [12, 12, 12],
          'pipelined batches: %s' % [(b.first_seq, b.changes) for b in (b1, b2, b3)])
    wait_for('5 batches out (3 handed out, 2 gets in flight)',
             lambda: status(conn, 'psrc')['batches_out'] == 5, 10)
    # 2. an ack out of order is the server's error (raised in order with the
    #    answers: here by sync(), which gives every un-acked batch back); the
    #    pipeline goes on (every call has its own Sync)
    c.ack(b2)
    try:
        c.sync()
        raise Fail('an ack out of order was not refused')
    except ConsumerError as e:
        check('cannot be acknowledged before batch %d' % b1.batch_id in str(e) and e.sqlstate == '22023',
              'ack out of order: %s (%s)' % (e, e.sqlstate))
    check(status(conn, 'psrc')['batches_out'] == 0, 'batches out after sync(): %s' % status(conn, 'psrc'))
    gen = c.batches()
    again = [next(gen) for _ in range(3)]
    check([(b.first_seq, b.lines) for b in again] == [(b.first_seq, b.lines) for b in (b1, b2, b3)],
          'after the refused ack, the batches do not come again the same: %s' % [b.first_seq for b in again])
    b1, b2, b3 = again
    for b in (b1, b2, b3):
        acked += lines_of(b)
        c.ack(b)
    c.sync()                               # acks durable, in-flight batches given back
    s = status(conn, 'psrc')
    check((s['acked_seq'], s['batches_out']) == (b3.last_seq, 0),
          'after acking 3 pipelined batches and sync(): acked_seq %s (expected %s), batches_out %s' % (
              s['acked_seq'], b3.last_seq, s['batches_out']))
    st = source_state(conn, 'psrc')
    check(st[:3] == (acked[-1]['file'], acked[-1]['next_pos'], 0), 'source_state after sync(): %s' % (st,))
    # 3. rollback with batches out: all of them come again, in order
    gen = c.batches()
    b4, b5, b6 = next(gen), next(gen), next(gen)
    check(b4.first_seq == b3.last_seq + 1, 'after sync(), the next batch starts at %d, expected %d' % (
        b4.first_seq, b3.last_seq + 1))
    acked += lines_of(b4)
    c.ack(b4)
    c.rollback()
    gen = c.batches()
    b5again = next(gen)
    check((b5again.first_seq, b5again.lines) == (b5.first_seq, b5.lines),
          'after rollback(): first_seq %d (expected %d), the same lines: %s' % (
              b5again.first_seq, b5.first_seq, b5again.lines == b5.lines))
    check(b5again.batch_id > b6.batch_id, 'batch id after rollback() is not new')
    acked += lines_of(b5again)
    c.ack(b5again)
    b6 = next(gen)                         # out, never acked
    # 4. the session ends with batches out (one handed out, gets in flight)
    #    once its acks are confirmed: a new session gets exactly the changes
    #    not acknowledged, in order
    c.confirm()
    check(status(conn, 'psrc')['acked_seq'] == b5again.last_seq, 'confirm(): acked_seq %s, expected %s' % (
        status(conn, 'psrc')['acked_seq'], b5again.last_seq))
    close(c)
    c = Consumer(conninfo, 'psrc', max_changes=12, timeout_ms=300, depth=3).connect()
    gen = c.batches()
    b = next(gen)
    check(b.first_seq == b5again.last_seq + 1 and b.lines == b6.lines,
          'the new session starts at %d (expected %d)' % (b.first_seq, b5again.last_seq + 1))
    random.seed(7)
    while True:
        acked += lines_of(b)
        c.ack(b)
        if acked[-1]['seq'] >= s0 + total * 3 // 4 - 1:
            break
        if random.random() < 0.3:          # reconnect at random points, batches out
            c.confirm()
            close(c)
            c = Consumer(conninfo, 'psrc', max_changes=random.choice([5, 12, 30]), timeout_ms=300,
                         depth=random.choice([1, 2, 4])).connect()
            gen = c.batches()
        b = next(gen)
    c.sync()
    c.close()
    # 5. the rest with node-postgres (clients/node), a session with batches
    #    out ended first
    c = Consumer(conninfo, 'psrc', max_changes=12, timeout_ms=300).connect()
    next(c.batches())
    close(c)
    node_dir = os.path.join(ROOT, 'clients', 'node')
    if not os.path.exists(os.path.join(node_dir, 'node_modules', 'pg', 'package.json')):
        sh(['bash', os.path.join(ROOT, 'scripts', 'install-npm.sh')], timeout=300)
    script = r"""
import pg from 'pg';
import { batches } from './binlog_fdw_stream.mjs';
const client = new pg.Client({ pipeline: true });
await client.connect();
let n = 0; const want = Number(process.argv[2]);
for await (const b of batches(client, 'psrc', { maxChanges: 7, timeoutMs: 300, depth: 3, stop: () => n >= want })) {
  process.stdout.write(b.lines); n += b.changes; b.ack();
}
await client.end();
"""
    path = os.path.join(node_dir, '.pipelined-test.mjs')
    open(path, 'w').write(script)
    try:
        env = dict(os.environ, PGHOST=PGHOST, PGPORT=str(PGPORT), PGUSER=PGUSER, PGDATABASE=PGDB)
        want = s0 + total - acked[-1]['seq'] - 1
        out = sh(['node', path, str(want)], env=env, timeout=120)
    finally:
        os.unlink(path)
    for x in out.split('\n')[:-1]:
        try:
            acked.append(json.loads(x))
        except ValueError:
            raise Fail('the node-postgres consumer printed a line that is not JSON: %s' % short(x, 400))
    # every change exactly once, in order, and the rows MariaDB has
    seqs = [x['seq'] for x in acked]
    check(seqs == list(range(s0, s0 + total)), 'acked seqs not exactly %d..%d: %s' % (
        s0, s0 + total - 1, short(seqs, 400)))
    ops = [x['op'] for x in acked]
    check(ops == (['begin'] + ['insert'] * per + ['commit']) * ntx, 'ops: %s' % short(ops, 300))
    rows = [(int(x['after']['id']), x['after']['v']) for x in acked if x['op'] == 'insert']
    exp = [(int(r[0]), r[1]) for r in mx(m, 'SELECT id, v FROM %s ORDER BY id' % table)]
    check(rows == exp, 'rows delivered differ from MariaDB: %s / %s' % (short(rows), short(exp)))
    s = status(conn, 'psrc')
    check((s['acked_seq'], s['batches_out'], s['changes_unacked']) == (s0 + total - 1, 0, 0),
          'at the end: acked_seq %s, batches_out %s, unacked %s' % (
              s['acked_seq'], s['batches_out'], s['changes_unacked']))
    drop_source(conn, 'psrc')


# ---------------------------------------------------------------------------
# two consumers racing

def case_race(conn, m):
    table = MDB + '.race'
    mx(m, 'DROP TABLE IF EXISTS ' + table)
    mx(m, 'CREATE TABLE %s (id INT PRIMARY KEY, v INT)' % table)
    start_source(conn, 'rsrc', 9603, include=r'^blf_stream\.race$')
    rng = random.Random(60)
    ntxn = 150
    sizes = [rng.randint(1, 5) for _ in range(ntxn)]
    total = sum(k + 2 for k in sizes)
    stop = threading.Event()
    acked = {0: [], 1: []}
    stats = {0: [0, 0], 1: [0, 0]}      # acked batches, failed acks
    errors = []

    def consumer(k):
        try:
            c = pg()
            r = random.Random(k)
            while not stop.is_set():
                b = get(c, 'rsrc', r.randint(1, 12), 100)
                if not b:
                    continue
                if r.random() < 0.5:
                    time.sleep(r.random() * 0.005)
                try:
                    ack(c, 'rsrc', b)
                except psycopg2.Error:
                    stats[k][1] += 1
                    try:
                        rollback(c, 'rsrc', b[0].batch_id)
                    except psycopg2.Error:
                        pass
                    continue
                stats[k][0] += 1
                acked[k].extend(b)
            c.close()
        except Exception as e:                      # noqa: BLE001
            errors.append('consumer %d: %s: %s' % (k, type(e).__name__, e))
            stop.set()

    def writer():
        try:
            w = mdb()
            nid = 1
            for k in sizes:
                mx(w, 'BEGIN')
                for _ in range(k):
                    mx(w, 'INSERT INTO %s VALUES (%d, %d)' % (table, nid, nid * 7))
                    nid += 1
                mx(w, 'COMMIT')
            w.close()
        except Exception as e:                      # noqa: BLE001
            errors.append('writer: %s: %s' % (type(e).__name__, e))

    threads = [threading.Thread(target=consumer, args=(k,)) for k in (0, 1)]
    wt = threading.Thread(target=writer)
    for t in threads + [wt]:
        t.start()
    d = Deadline(60)
    while not d.expired() and not stop.is_set():
        if len(acked[0]) + len(acked[1]) >= total and not wt.is_alive():
            break
        time.sleep(0.05)
    time.sleep(0.3)                                 # a duplicate would show now
    stop.set()
    for t in threads + [wt]:
        t.join(30)
    check(not errors, '; '.join(errors))
    log('consumers: acked batches %d / %d, failed acks %d / %d' % (
        stats[0][0], stats[1][0], stats[0][1], stats[1][1]))
    allc = sorted(acked[0] + acked[1], key=lambda c: c.seq)
    seqs = [c.seq for c in allc]
    dup = len(seqs) - len(set(seqs))
    check(dup == 0, '%d changes acknowledged twice' % dup)
    check(len(allc) == total, '%d changes acknowledged, expected %d' % (len(allc), total))
    assert_contiguous(allc, 'acknowledged changes')
    shape = []
    for k in sizes:
        shape += ['begin'] + ['insert'] * k + ['commit']
    check(txn_shape(allc) == shape, 'the acknowledged changes are not the transactions written')
    ids = [int(c.after['id']) for c in allc if c.op == 'insert']
    check(ids == list(range(1, sum(sizes) + 1)), 'inserted ids are not 1..%d in order' % sum(sizes))
    check(stats[0][0] > 0 and stats[1][0] > 0, 'one consumer acknowledged nothing: %s' % stats)
    s = status(conn, 'rsrc')
    check(s['changes_unacked'] == 0 and s['batches_out'] == 0,
          'after the race: %d un-acked, %d batches out' % (s['changes_unacked'], s['batches_out']))
    drop_source(conn, 'rsrc')


# ---------------------------------------------------------------------------
# restart: exactly once

def restart_pg(mode):
    t0 = time.monotonic()
    sh(['bash', POSTGRES_SH, 'restart', '--mode', mode], timeout=120)
    log('PostgreSQL main restarted (%s) in %.1fs' % (mode, time.monotonic() - t0))
    return wait_for('PostgreSQL main', lambda: pg(), 30)


def case_restart(conn_box, m):
    conn = conn_box[0]
    table = MDB + '.xo'
    mx(m, 'DROP TABLE IF EXISTS ' + table)
    mx(m, 'CREATE TABLE %s (id INT PRIMARY KEY, v VARCHAR(20))' % table)
    start_source(conn, 'xsrc', 9604, include=r'^blf_stream\.xo$')
    expected = []                       # (op, gtid, id) of every change, in order

    def txn(stmts, rows):
        """Run stmts in one transaction; rows: [(op, id)] of its changes."""
        mx(m, 'BEGIN')
        for s in stmts:
            mx(m, s)
        mx(m, 'COMMIT')
        g = last_gtid(m)
        expected.extend([('begin', g, None)] + [(op, g, i) for op, i in rows] + [('commit', g, None)])

    txn(["INSERT INTO %s VALUES (1, 'a'), (2, 'b'), (3, 'c')" % table],
        [('insert', 1), ('insert', 2), ('insert', 3)])
    txn(['INSERT INTO %s VALUES %s' % (table, ', '.join("(%d, 'r%d')" % (i, i) for i in range(4, 14)))],
        [('insert', i) for i in range(4, 14)])
    txn(["UPDATE %s SET v = 'u' WHERE id = 1" % table, 'DELETE FROM %s WHERE id = 2' % table],
        [('update', 1), ('delete', 2)])
    # a DDL after rows not yet acked: their TABLE_MAPs describe the old table
    mx(m, 'ALTER TABLE %s ADD COLUMN w INT' % table)
    expected.append(('ddl', last_gtid(m), None))
    txn(["INSERT INTO %s VALUES (14, 'x', 1), (15, 'y', 2), (16, 'z', 3)" % table],
        [('insert', 14), ('insert', 15), ('insert', 16)])
    n_before = len(expected)
    wait_unacked(conn, 'xsrc', n_before)

    def key(c):
        img = c.after if c.after is not None else c.before
        return (c.op, c.gtid, int(img['id']) if img else None)

    consumed = []
    # round 1: ack a whole transaction and the start of the next (5 of its 12)
    b1 = get(conn, 'xsrc', 5)
    b2 = get(conn, 'xsrc', 5)
    check(txn_shape(b1) == ['begin', 'insert', 'insert', 'insert', 'commit'], 'b1 %s' % txn_shape(b1))
    check(txn_shape(b2) == ['begin'] + ['insert'] * 4, 'b2 %s' % txn_shape(b2))
    ack(conn, 'xsrc', b1)
    ack(conn, 'xsrc', b2)
    consumed += b1 + b2
    b3 = get(conn, 'xsrc', 5)               # delivered, never acked
    check(len(b3) == 5, 'b3 has %d changes' % len(b3))
    before = source_state(conn, 'xsrc')
    check(before[2] == 5, 'skip before the restart is %s, expected 5' % before[2])
    conn.close()
    # a change while PostgreSQL is down is not lost either
    sh(['bash', POSTGRES_SH, 'stop', '--mode', 'fast'], timeout=120)
    txn(["INSERT INTO %s VALUES (17, 'down', 0)" % table], [('insert', 17)])
    sh(['bash', POSTGRES_SH, 'start'], timeout=120)
    conn = conn_box[0] = wait_for('PostgreSQL main', lambda: pg(), 30)
    wait_streaming(conn, 'xsrc', 30)
    check(source_state(conn, 'xsrc') == before, 'source_state changed by the restart')
    s = status(conn, 'xsrc')
    check((s['acked_file'], s['acked_pos'], s['acked_skip']) == before[:3],
          'status acked position after the restart: %s, expected %s' % (
              (s['acked_file'], s['acked_pos'], s['acked_skip']), before[:3]))
    # round 2: the rest of transaction 2 first, then everything else
    nrest = len(expected) - len(consumed)
    batches = get_batches(conn, 'xsrc', nrest, max_changes=4)
    after1 = flat(batches)
    check(after1[0].op == 'insert' and int(after1[0].after['id']) == 8,
          'the first change after the restart is %s, expected the insert of id 8' % (key(after1[0]),))
    got = [key(c) for c in consumed + after1]
    check(got == expected, 'changes before and after the restart differ from those made: %s' % (
        first_difference(got, expected)))
    # ack up to the middle of the DDL's neighbour: 2 batches, then an
    # immediate shutdown with a third batch out
    ack(conn, 'xsrc', batches[0])
    ack(conn, 'xsrc', batches[1])
    consumed += batches[0] + batches[1]
    st = source_state(conn, 'xsrc')
    conn.close()
    sh(['bash', POSTGRES_SH, 'stop', '--mode', 'immediate'], timeout=120)
    txn(["INSERT INTO %s VALUES (18, 'down2', 0)" % table, "UPDATE %s SET w = 9 WHERE id = 18" % table],
        [('insert', 18), ('update', 18)])
    sh(['bash', POSTGRES_SH, 'start'], timeout=120)
    conn = conn_box[0] = wait_for('PostgreSQL main', lambda: pg(), 30)
    wait_streaming(conn, 'xsrc', 30)
    check(source_state(conn, 'xsrc') == st, 'source_state changed by the immediate shutdown')
    nrest = len(expected) - len(consumed)
    after2 = flat(get_batches(conn, 'xsrc', nrest, max_changes=3, ack=True))
    got = [key(c) for c in consumed + after2]
    check(got == expected, 'after the immediate shutdown: %s' % first_difference(got, expected))
    check(get(conn, 'xsrc', 100, 300) == [], 'changes beyond those made')
    log('restart: %d changes, 10 acked before the first restart, %d before the second' % (
        len(expected), len(consumed)))
    drop_source(conn, 'xsrc')


def first_difference(got, exp):
    for i, (a, b) in enumerate(zip(got, exp)):
        if a != b:
            return 'change %d is %s, expected %s (%d changes, expected %d)' % (i, a, b, len(got), len(exp))
    return '%d changes, expected %d' % (len(got), len(exp))


# ---------------------------------------------------------------------------
# include / exclude

def case_filters(conn, m):
    for db in ('blf_flt', 'blf_other'):
        mx(m, 'DROP DATABASE IF EXISTS %s' % db)
        mx(m, 'CREATE DATABASE %s' % db)
    for t in ('blf_flt.pub', 'blf_flt.secret', 'blf_flt.tmp_a', 'blf_other.pub'):
        mx(m, 'CREATE TABLE %s (id INT PRIMARY KEY, v INT)' % t)
    start_source(conn, 'fsrc', 9605, include=r'^blf_flt\.', exclude=r'^blf_flt\.(secret|tmp_.*)$')
    w = mdb(db='blf_flt')
    exp = []

    def run(sql, shape=None):
        mx(w, sql)
        if shape:
            exp.extend((op, last_gtid(w)) + tuple(rest) for op, *rest in shape)

    run('INSERT INTO pub VALUES (1, 1)',
        [('begin',), ('insert', 'blf_flt', 'pub'), ('commit',)])
    run('INSERT INTO secret VALUES (1, 1)')
    mx(w, 'BEGIN')
    for sql in ('INSERT INTO secret VALUES (2, 2)', 'INSERT INTO pub VALUES (2, 2)',
                'INSERT INTO blf_other.pub VALUES (1, 1)', 'INSERT INTO tmp_a VALUES (1, 1)'):
        mx(w, sql)
    run('COMMIT', [('begin',), ('insert', 'blf_flt', 'pub'), ('commit',)])
    run('BEGIN')
    run('INSERT INTO secret VALUES (3, 3)')
    run('INSERT INTO tmp_a VALUES (3, 3)')
    run('COMMIT')                                       # only excluded tables: nothing at all
    run('INSERT INTO blf_other.pub VALUES (2, 2)')
    run('ALTER TABLE blf_other.pub ADD COLUMN x INT')   # qualified, other schema
    run('ALTER TABLE `blf_other`.`pub` ADD COLUMN x2 INT')
    run('ALTER TABLE secret ADD COLUMN x INT')          # excluded table
    run('CREATE VIEW blf_other.v AS SELECT 1 AS one')   # other schema, not a TABLE
    run('DROP VIEW blf_other.v')
    run('CREATE DATABASE blf_other2')
    run('DROP DATABASE blf_other2')
    run('CREATE INDEX ix ON secret (v)')                # an excluded table's index
    run('TRUNCATE tmp_a')                               # TRUNCATE without TABLE
    run('CREATE INDEX ix ON pub (v)', [('ddl', 'blf_flt', 'pub')])
    run('CREATE VIEW vv AS SELECT 1 AS one', [('ddl', 'blf_flt', 'vv')])
    run('CREATE TABLE tmp_b (id INT PRIMARY KEY)')      # excluded by name
    run('DROP TABLE IF EXISTS tmp_b')
    mx(w, 'USE blf_other')
    run('CREATE TABLE t2 (id INT PRIMARY KEY)')         # unqualified, other schema
    run('DROP TABLE t2')
    run('ALTER TABLE `blf_flt`.`pub` ADD COLUMN y INT',  # included, from another schema
        [('ddl', 'blf_flt', 'pub')])
    mx(w, 'USE blf_flt')
    run('CREATE TABLE IF NOT EXISTS pub2 (id INT PRIMARY KEY)', [('ddl', 'blf_flt', 'pub2')])
    run('INSERT INTO pub VALUES (3, 3, 3)', [('begin',), ('insert', 'blf_flt', 'pub'), ('commit',)])
    w.close()
    got = flat(get_batches(conn, 'fsrc', len(exp)))
    time.sleep(0.5)
    more = get(conn, 'fsrc', 100, 500)
    gotk = []
    for c in got + more:
        if c.op in ('begin', 'commit'):
            gotk.append((c.op, c.gtid))
        else:
            gotk.append((c.op, c.gtid, c.schema_name, c.table_name))
    check(gotk == exp, 'filtered stream: %s' % first_difference(gotk, exp))
    ddls = [c.ddl for c in got if c.op == 'ddl']
    check(ddls[2] == 'ALTER TABLE `blf_flt`.`pub` ADD COLUMN y INT', 'the DDL texts: %s' % ddls)
    drop_source(conn, 'fsrc')
    for db in ('blf_flt', 'blf_other'):
        mx(m, 'DROP DATABASE IF EXISTS %s' % db)


# ---------------------------------------------------------------------------
# heartbeats

def case_heartbeats(conn, m):
    start_source(conn, 'hsrc', 9606, include=r'^blf_stream\.nothing$', heartbeat='1')
    wait_for('a first heartbeat', lambda: status(conn, 'hsrc')['last_heartbeat'] is not None, 10)
    beats = []
    for i in range(11):
        s = status(conn, 'hsrc')
        now = q1(conn, 'SELECT clock_timestamp()')
        check(s['state'] == 'streaming', 'state %r after %.1fs idle' % (s['state'], i * 0.5))
        check(s['lag_seconds'] is not None and s['lag_seconds'] < 2.0,
              'lag_seconds %r after %.1fs idle (heartbeat 1s)' % (s['lag_seconds'], i * 0.5))
        check((now - s['last_heartbeat']).total_seconds() < 2.0,
              'last heartbeat %s is %.1fs old' % (s['last_heartbeat'], (now - s['last_heartbeat']).total_seconds()))
        check(s['last_error'] is None, 'last_error: %s' % s['last_error'])
        beats.append(s['last_heartbeat'])
        time.sleep(0.5)
    distinct = sorted(set(beats))
    check(distinct == sorted(distinct) and len(distinct) >= 4,
          'last_heartbeat took %d values in 5s: %s' % (len(distinct), distinct))
    check(beats == sorted(beats), 'last_heartbeat went back in time')
    drop_source(conn, 'hsrc')


# ---------------------------------------------------------------------------
# the durable position moves past filtered-out transactions

def case_filtered_advance(conn, m):
    for t in ('fa_in', 'fa_out'):
        mx(m, 'DROP TABLE IF EXISTS %s.%s' % (MDB, t))
        mx(m, 'CREATE TABLE %s.%s (id INT PRIMARY KEY, v INT)' % (MDB, t))
    start_source(conn, 'fasrc', 9613, include=r'^blf_stream\.fa_in$')
    mx(m, 'INSERT INTO %s.fa_in VALUES (1, 1)' % MDB)
    got = get_batches(conn, 'fasrc', 3)
    check([int(c.after['id']) for c in flat(got) if c.op == 'insert'] == [1],
          'fa_in row 1 not delivered: %s' % short(flat(got), 300))
    # delivered but not acknowledged: filtered transactions must not move it
    for i in range(20):
        mx(m, 'INSERT INTO %s.fa_out VALUES (%d, %d)' % (MDB, i, i))
    time.sleep(6.5)
    before = source_state(conn, 'fasrc')
    end = master_status(m)
    check((before[0], before[1]) != end,
          'the durable position moved to the end (%s) with a batch un-acknowledged' % (end,))
    for b in got:
        ack(conn, 'fasrc', b)
    wait_for('the durable position to reach the end of the binlog %s:%d' % end,
             lambda: tuple(source_state(conn, 'fasrc')[:2]) == end, 15)
    # and a restart of the worker resumes there: nothing comes again
    q(conn, "SELECT binlog_fdw.stop('fasrc')")
    q(conn, "SELECT binlog_fdw.start('fasrc')")
    wait_streaming(conn, 'fasrc')
    mx(m, 'INSERT INTO %s.fa_in VALUES (2, 2)' % MDB)
    got = flat(get_batches(conn, 'fasrc', 3))
    check([int(c.after['id']) for c in got if c.op == 'insert'] == [2],
          'after the restart: %s' % short(got, 300))
    drop_source(conn, 'fasrc')


# ---------------------------------------------------------------------------
# start at a time

def case_start_time(conn, m):
    table = MDB + '.tm'
    mx(m, 'DROP TABLE IF EXISTS ' + table)
    mx(m, 'CREATE TABLE %s (id INT PRIMARY KEY, v INT)' % table)
    # transactions over a second apart, in three binlog files; row 4 is
    # written just after a whole second T, so the binlog (whole seconds)
    # has rows 1-3 before T and rows 4-6 at or after it
    t4 = None
    for i in range(1, 7):
        if i in (3, 5):
            mx(m, 'FLUSH BINARY LOGS')
        if i == 4:
            now = time.time()
            t4 = int(now) + 1
            time.sleep(t4 - now + 0.05)
        mx(m, 'INSERT INTO %s VALUES (%d, %d)' % (table, i, i))
        time.sleep(1.1)
    when = time.strftime('%Y-%m-%d %H:%M:%S+00', time.gmtime(t4))
    start_source(conn, 'tsrc', 9611, include=r'^blf_stream\.tm$', start='time:' + when)
    got = flat(get_batches(conn, 'tsrc', 3 * 3))
    ids = [int(c.after['id']) for c in got if c.op == 'insert']
    check(ids == [4, 5, 6], 'start at %s delivered rows %s, expected [4, 5, 6]' % (when, ids))
    drop_source(conn, 'tsrc')
    # a time after everything: the end of the binlog, then new rows only
    later = q1(conn, "SELECT now() + interval '1 hour'")
    start_source(conn, 'tsrc2', 9612, include=r'^blf_stream\.tm$', start='time:' + later.isoformat())
    mx(m, 'INSERT INTO %s VALUES (7, 7)' % table)
    got = flat(get_batches(conn, 'tsrc2', 3))
    ids = [int(c.after['id']) for c in got if c.op == 'insert']
    check(ids == [7], 'start after the last transaction delivered rows %s, expected [7]' % ids)
    drop_source(conn, 'tsrc2')


# ---------------------------------------------------------------------------
# two sources

def case_two_sources(conn, m):
    sh(['bash', MARIADB_SH, 'start', '--fresh', '--name', 'stream2', '--port', str(SECOND_PORT),
        '--', '--server-id=2'], timeout=120)
    try:
        m2 = mdb(port=SECOND_PORT)
    except Exception:
        m2 = mdb(socket=os.path.join(os.environ.get('BLF_RUN', '/var/tmp/binlog_fdw'), 'mariadb-stream2.sock'))
    for c in (m, m2):
        mx(c, 'CREATE DATABASE IF NOT EXISTS %s' % MDB)
        mx(c, 'DROP TABLE IF EXISTS %s.two' % MDB)
        mx(c, 'CREATE TABLE %s.two (id INT PRIMARY KEY, v VARCHAR(10))' % MDB)
    start_source(conn, 'src_a', 9607, include=r'^blf_stream\.two$')
    start_source(conn, 'src_b', 9608, port=SECOND_PORT, include=r'^blf_stream\.two$')
    n = 20
    errs = []

    def write(c, tag):
        try:
            for i in range(n):
                mx(c, "INSERT INTO %s.two VALUES (%d, '%s-%d')" % (MDB, i, tag, i))
        except Exception as e:                      # noqa: BLE001
            errs.append('%s: %s' % (tag, e))
    ts = [threading.Thread(target=write, args=(c, t)) for c, t in ((m, 'a'), (m2, 'b'))]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    check(not errs, '; '.join(errs))
    ga = flat(get_batches(conn, 'src_a', 3 * n))
    gb = flat(get_batches(conn, 'src_b', 3 * n))
    for g, tag, sid in ((ga, 'a', 1), (gb, 'b', 2)):
        rows = [c for c in g if c.op == 'insert']
        check([c.after['v'] for c in rows] == ['%s-%d' % (tag, i) for i in range(n)],
              'source %s got other rows: %s' % (tag, short([c.after for c in rows], 300)))
        check({c.server_id for c in g} == {sid}, 'source %s: server ids %s, expected %d' % (
            tag, {c.server_id for c in g}, sid))
    sa, sb = status(conn, 'src_a'), status(conn, 'src_b')
    check(sa['state'] == sb['state'] == 'streaming', 'states %s / %s' % (sa['state'], sb['state']))
    check(sa['worker_pid'] != sb['worker_pid'], 'both sources have worker %s' % sa['worker_pid'])
    rows = q(conn, "SELECT server FROM binlog_fdw.status WHERE server IN ('src_a', 'src_b') ORDER BY 1")
    check([r[0] for r in rows] == ['src_a', 'src_b'], 'status shows %s' % rows)
    for name, c in (('src_a', m), ('src_b', m2)):
        f, p = master_status(c)
        wait_for('%s read position %s:%d' % (name, f, p),
                 lambda: (status(conn, name)['read_file'], status(conn, name)['read_pos']) == (f, p), 5)
    # stopping one leaves the other streaming
    drop_source(conn, 'src_b')
    mx(m, "INSERT INTO %s.two VALUES (100, 'a-100')" % MDB)
    g = flat(get_batches(conn, 'src_a', 3))
    check(g[1].after['v'] == 'a-100', 'after stopping src_b, src_a got %s' % short(g, 300))
    check(status(conn, 'src_b') is None, 'src_b still in the status view')
    m2.close()
    drop_source(conn, 'src_a')
    sh(['bash', MARIADB_SH, 'destroy', '--name', 'stream2'], check_rc=False, timeout=120)


# ---------------------------------------------------------------------------
# status

def case_status(conn, m):
    table = MDB + '.st'
    mx(m, 'DROP TABLE IF EXISTS ' + table)
    mx(m, 'CREATE TABLE %s (id INT PRIMARY KEY, v INT)' % table)
    mfile, mpos = master_status(m)
    version = mx(m, 'SELECT VERSION()')[0][0]
    s = start_source(conn, 'ssrc', 9609, include=r'^blf_stream\.st$')
    ring_total = q1(conn, "SELECT setting::bigint * 1024 FROM pg_settings WHERE name = 'binlog_fdw.ring_size'")
    pids = [r[0] for r in q(conn, "SELECT pid FROM pg_stat_activity WHERE backend_type = 'binlog_fdw source'")]
    now = q1(conn, 'SELECT clock_timestamp()')
    check(s['worker_pid'] in pids, 'worker_pid %s is not a binlog_fdw source process (%s)' % (s['worker_pid'], pids))
    check(s['source_version'] == version, 'source_version %r, MariaDB says %r' % (s['source_version'], version))
    check(s['binlog_format'] == 'ROW', 'binlog_format %r' % s['binlog_format'])
    check(s['connected_since'] is not None and s['connected_since'] <= now, 'connected_since %s' % s['connected_since'])
    check((s['acked_file'], s['acked_pos'], s['acked_skip']) == (mfile, mpos, 0),
          'acked position at start %s, expected the current position %s' % (
              (s['acked_file'], s['acked_pos'], s['acked_skip']), (mfile, mpos, 0)))
    check(source_state(conn, 'ssrc')[:3] == (mfile, mpos, 0), 'source_state at start %s' % (source_state(conn, 'ssrc'),))
    check(s['ring_bytes_total'] == ring_total, 'ring_bytes_total %s, binlog_fdw.ring_size is %s bytes' % (
        s['ring_bytes_total'], ring_total))
    for k in ('changes_total', 'changes_unacked', 'ring_bytes_used', 'ring_entries', 'acked_seq', 'batches_out'):
        check(s[k] == 0, 'a new source has %s = %s' % (k, s[k]))
    check(s['last_error'] is None and s['last_error_time'] is None, 'last_error %r' % s['last_error'])
    check(s['worker_peak_rss_kb'] > 0, 'worker_peak_rss_kb %s' % s['worker_peak_rss_kb'])
    for i in range(10):
        mx(m, 'INSERT INTO %s VALUES (%d, 1), (%d, 2)' % (table, 2 * i, 2 * i + 1))
    last = last_gtid(m)
    mfile, mpos = master_status(m)
    wait_unacked(conn, 'ssrc', 40)
    wait_for('read position %s:%d' % (mfile, mpos),
             lambda: (status(conn, 'ssrc')['read_file'], status(conn, 'ssrc')['read_pos']) == (mfile, mpos), 5)
    s = status(conn, 'ssrc')
    check(s['changes_total'] == 40 and s['changes_unacked'] == 40, 'after 10 transactions of 2 rows: '
          'changes_total %s, changes_unacked %s, expected 40' % (s['changes_total'], s['changes_unacked']))
    check(s['ring_entries'] == 30, 'ring_entries %s, expected 30 (begin, rows, commit x 10)' % s['ring_entries'])
    check(0 < s['ring_bytes_used'] < s['ring_bytes_total'], 'ring_bytes_used %s' % s['ring_bytes_used'])
    check(s['changes_per_sec'] >= 0, 'changes_per_sec %s' % s['changes_per_sec'])
    check(s['lag_seconds'] is not None and s['lag_seconds'] < 3, 'lag_seconds %s' % s['lag_seconds'])
    used40 = s['ring_bytes_used']
    b = get(conn, 'ssrc', 12)
    check(len(b) == 12, 'get(12) returned %d' % len(b))
    s = status(conn, 'ssrc')
    check(s['batches_out'] == 1 and s['changes_unacked'] == 40, 'with a batch out: batches_out %s, '
          'changes_unacked %s' % (s['batches_out'], s['changes_unacked']))
    ack(conn, 'ssrc', b)
    s = status(conn, 'ssrc')
    check((s['acked_seq'], s['changes_unacked'], s['ring_entries'], s['batches_out']) == (12, 28, 21, 0),
          'after acking 3 transactions: acked_seq %s, changes_unacked %s, ring_entries %s, batches_out %s' % (
              s['acked_seq'], s['changes_unacked'], s['ring_entries'], s['batches_out']))
    check(0 < s['ring_bytes_used'] < used40, 'ring_bytes_used %s after the ack (was %s)' % (s['ring_bytes_used'], used40))
    check((s['acked_file'], s['acked_pos'], s['acked_skip']) == (b[-1].file, b[-1].next_pos, 0),
          'acked position %s, expected the end of the third commit %s' % (
              (s['acked_file'], s['acked_pos'], s['acked_skip']), (b[-1].file, b[-1].next_pos)))
    rest = get(conn, 'ssrc', 1000)
    ack(conn, 'ssrc', rest)
    s = status(conn, 'ssrc')
    check((s['changes_total'], s['acked_seq'], s['changes_unacked'], s['ring_entries'], s['ring_bytes_used']) ==
          (40, 40, 0, 0, 0), 'after acking everything: total %s, acked_seq %s, unacked %s, entries %s, bytes %s' % (
              s['changes_total'], s['acked_seq'], s['changes_unacked'], s['ring_entries'], s['ring_bytes_used']))
    check((s['acked_file'], s['acked_pos']) == (mfile, mpos), 'acked position %s, MariaDB is at %s' % (
        (s['acked_file'], s['acked_pos']), (mfile, mpos)))
    check(s['acked_gtid'] == last and s['gtid_state'] == last,
          'acked_gtid %r, gtid_state %r, expected %r' % (s['acked_gtid'], s['gtid_state'], last))
    drop_source(conn, 'ssrc')
    check(status(conn, 'ssrc') is None, 'a stopped source is still in the status view')


# ---------------------------------------------------------------------------
# not preloaded

def case_not_preloaded(conn, m):
    env = {'BLF_PG_PRELOAD': 'pg_cron'}
    sh(['bash', POSTGRES_SH, 'start', '--fresh', '--name', 'nopre', '--port', str(NOPRE_PORT)],
       env=env, timeout=180)
    try:
        c = pg(db='postgres', port=NOPRE_PORT)
        check(q1(c, 'SHOW shared_preload_libraries') == 'pg_cron',
              'shared_preload_libraries is %r' % q1(c, 'SHOW shared_preload_libraries'))
        q(c, 'CREATE EXTENSION binlog_fdw')
        # read_binlog needs no shared memory
        mx(m, 'DROP TABLE IF EXISTS %s.np' % MDB)
        mx(m, 'CREATE TABLE %s.np (id INT PRIMARY KEY)' % MDB)
        mark = int(time.time() * 1000) % 2000000000     # unique in the binlog
        mx(m, 'INSERT INTO %s.np VALUES (%d)' % (MDB, mark))
        binlog = master_status(m)[0]
        path = os.path.join(TMP, 'nopre-' + binlog)
        shutil.copyfile(os.path.join(MDB_DATA, binlog), path)
        os.chmod(path, 0o644)
        r = q(c, "SELECT after::text FROM binlog_fdw.read_binlog(%s) WHERE schema_name = 'blf_stream' "
                 "AND table_name = 'np' AND op = 'insert'", (path,))
        check([x[0] for x in r].count('{"id": %d}' % mark) == 1,
              'read_binlog() found %s, expected the insert of %d' % (short(r, 300), mark))
        q(c, "CREATE SERVER np FOREIGN DATA WRAPPER binlog_fdw OPTIONS (port '%d', server_id '9610')" %
          int(os.environ.get('BLF_MARIADB_PORT', '3406')))
        q(c, "CREATE USER MAPPING FOR current_user SERVER np OPTIONS (user 'repl', password 'repl')")
        q(c, 'CREATE FOREIGN TABLE np_changes (seq bigint, op text) SERVER np')
        for what, sql in (('start', "SELECT binlog_fdw.start('np')"),
                          ('get', "SELECT * FROM binlog_fdw.get('np')"),
                          ('ack', "SELECT binlog_fdw.ack('np', 1)"),
                          ('rollback', "SELECT binlog_fdw.rollback('np')"),
                          ('stop', "SELECT binlog_fdw.stop('np')"),
                          ('status', 'SELECT * FROM binlog_fdw.status'),
                          ('foreign table', 'SELECT * FROM np_changes')):
            e = expect_error(c, lambda: q(c, sql), 'must be loaded via shared_preload_libraries', what)
            check(e.pgcode == '55000', '%s: SQLSTATE %s' % (what, e.pgcode))
            hint = e.diag.message_hint or ''
            check('Add binlog_fdw to shared_preload_libraries' in hint, '%s: hint %r' % (what, hint))
        c.close()
    finally:
        if not KEEP:
            sh(['bash', POSTGRES_SH, 'destroy', '--name', 'nopre'], check_rc=False, timeout=120)


# ---------------------------------------------------------------------------

def cleanup_pg():
    """Stop the suite's sources (left by an earlier run) and drop its database."""
    c = pg(db='postgres')
    if q1(c, 'SELECT count(*) FROM pg_database WHERE datname = %s', (PGDB,)):
        try:
            d = pg()
            if q1(d, "SELECT count(*) FROM pg_extension WHERE extname = 'binlog_fdw'"):
                for (name,) in q(d, 'SELECT s.srvname FROM pg_foreign_server s JOIN pg_foreign_data_wrapper w '
                                    "ON w.oid = s.srvfdw WHERE w.fdwname = 'binlog_fdw'"):
                    drop_source(d, name)
            d.close()
        except psycopg2.Error as e:
            log('cleanup: %s' % str(e).strip())
        # the dropped sources' workers leave at their own pace: FORCE would
        # terminate one that has not yet, a FATAL no case asked for
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and q1(
                c, 'SELECT count(*) FROM pg_stat_activity WHERE datname = %s', (PGDB,)):
            time.sleep(0.2)
        q(c, 'DROP DATABASE IF EXISTS %s WITH (FORCE)' % PGDB)
    c.close()


def main():
    t0 = time.monotonic()
    wanted = [x for x in os.environ.get('BLF_STREAM_CASES', '').split(',') if x]
    runner = Runner()
    try:
        cleanup_pg()
        c = pg(db='postgres')
        q(c, 'CREATE DATABASE %s' % PGDB)
        c.close()
        conn_box = [pg()]
        q(conn_box[0], 'CREATE EXTENSION binlog_fdw')
        m = mdb()
        mx(m, 'DROP DATABASE IF EXISTS %s' % MDB)
        mx(m, 'CREATE DATABASE %s' % MDB)
    except Exception as e:                          # noqa: BLE001
        print('not ok - streaming/setup: %s: %s' % (type(e).__name__, short(str(e).strip(), 500)))
        return 1

    cases = [
        ('values', lambda: case_values(conn_box[0], m)),
        ('get-ack-rollback', lambda: case_get_ack(conn_box[0], m)),
        ('pipelined', lambda: case_pipelined(conn_box[0], m)),
        ('consumers-race', lambda: case_race(conn_box[0], m)),
        ('filters', lambda: case_filters(conn_box[0], m)),
        ('filtered-advance', lambda: case_filtered_advance(conn_box[0], m)),
        ('start-time', lambda: case_start_time(conn_box[0], m)),
        ('heartbeats', lambda: case_heartbeats(conn_box[0], m)),
        ('status', lambda: case_status(conn_box[0], m)),
        ('two-sources', lambda: case_two_sources(conn_box[0], m)),
        ('restart-exactly-once', lambda: case_restart(conn_box, m)),
        ('not-preloaded', lambda: case_not_preloaded(conn_box[0], m)),
    ]
    for name, fn in cases:
        if wanted and name not in wanted:
            continue
        runner.run(name, fn)
        # a failed case may leave its source running: stop it before the next
        try:
            conn_box[0].rollback()
            conn_box[0].autocommit = True
            q(conn_box[0], 'SELECT 1')
        except psycopg2.Error:
            conn_box[0] = pg()
        if not KEEP:
            for (srv,) in q(conn_box[0], 'SELECT server FROM binlog_fdw.status'):
                log('stopping %s, left by %s' % (srv, name))
                drop_source(conn_box[0], srv)

    if not KEEP:
        try:
            conn_box[0].close()
            cleanup_pg()
            for db in (MDB, 'blf_flt', 'blf_other'):
                mx(m, 'DROP DATABASE IF EXISTS %s' % db)
        except Exception as e:                      # noqa: BLE001
            log('cleanup failed: %s' % e)
    log('streaming: %d passed, %d failed in %.1fs' % (runner.passed, runner.failed, time.monotonic() - t0))
    return 1 if runner.failed else 0


if __name__ == '__main__':
    sys.exit(main())
