#!/usr/bin/python3
"""bench/apply/pg_workload.py -- the standard workload for PostgreSQL.

  gen_workload.py ... | pg_workload.py OUTDIR

Reads the MariaDB SQL of bench/decoder/gen_workload.py on stdin and writes
the same rows, updates and deletes for PostgreSQL (the native logical
replication anchor of bench/apply/run.sh), one statement per transaction
(autocommit) as on MariaDB:

  OUTDIR/schema.sql  the table, with the types binlog_fdw gives it
  OUTDIR/load.sql    every statement but the last
  OUTDIR/last.sql    the last statement (run after noting the WAL position,
                     so that "the subscriber has applied everything" is
                     "its origin's remote_lsn passed that position")
  OUTDIR/rows.tsv    the 1,000,000 inserted rows as COPY text (the COPY
                     reference)

MySQL's JSON_SET(doc, '$.attrs.level', MOD(k, 10), '$.rev', 1) becomes
jsonb_set(jsonb_set(doc, '{attrs,level}', to_jsonb(mod(k + 1, 10))),
'{rev}', '1') (MySQL assigns left to right: k is already k + 1 there).
"""
import os
import re
import sys

SCHEMA = """\
CREATE SCHEMA IF NOT EXISTS bench;
CREATE TABLE bench.sbtest1 (
  id bigint NOT NULL PRIMARY KEY,
  k integer NOT NULL,
  c character varying(120),
  pad character varying(60),
  amount numeric(12,2),
  created timestamp(6) without time zone,
  doc jsonb
);
"""
ROW = re.compile(r"^\((\d+),(\d+),'([^']*)','([^']*)',([0-9.]+),'([^']*)','(.*)'\)[,;]$")
UPD = re.compile(r"^UPDATE sbtest1 SET .* WHERE id BETWEEN (\d+) AND (\d+);$")
DEL = re.compile(r"^DELETE FROM sbtest1 WHERE id BETWEEN (\d+) AND (\d+);$")


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    open(os.path.join(out, 'schema.sql'), 'w').write(SCHEMA)
    load = open(os.path.join(out, 'load.sql.tmp'), 'w')
    tsv = open(os.path.join(out, 'rows.tsv.tmp'), 'w')
    load.write('SET search_path = bench;\nSET synchronous_commit = off;\n')
    stmts = []         # the statement being built
    last = None
    n_ins = n_upd = n_del = 0

    def emit(s):
        nonlocal last
        if last is not None:
            load.write(last)
        last = s

    for line in sys.stdin:
        line = line.rstrip('\n')
        if line.startswith('INSERT INTO sbtest1'):
            stmts = ['INSERT INTO sbtest1 (id,k,c,pad,amount,created,doc) VALUES']
            continue
        m = ROW.match(line)
        if m:
            stmts.append(line[:-1] + (',' if line.endswith(',') else ''))
            tsv.write('\t'.join(m.groups()) + '\n')
            n_ins += 1
            if line.endswith(';'):
                emit('\n'.join(stmts) + ';\n')
                stmts = []
            continue
        m = UPD.match(line)
        if m:
            emit("UPDATE sbtest1 SET k = k + 1, c = reverse(c), amount = amount + 1.25, "
                 "doc = jsonb_set(jsonb_set(doc, '{attrs,level}', to_jsonb(mod(k + 1, 10))), "
                 "'{rev}', '1') WHERE id BETWEEN %s AND %s;\n" % m.groups())
            n_upd += int(m.group(2)) - int(m.group(1)) + 1
            continue
        m = DEL.match(line)
        if m:
            emit('DELETE FROM sbtest1 WHERE id BETWEEN %s AND %s;\n' % m.groups())
            n_del += int(m.group(2)) - int(m.group(1)) + 1
            continue
    load.close()
    tsv.close()
    with open(os.path.join(out, 'last.sql'), 'w') as f:
        f.write('SET search_path = bench;\nSET synchronous_commit = off;\n' + last)
    os.rename(os.path.join(out, 'load.sql.tmp'), os.path.join(out, 'load.sql'))
    os.rename(os.path.join(out, 'rows.tsv.tmp'), os.path.join(out, 'rows.tsv'))
    with open(os.path.join(out, 'counts'), 'w') as f:
        f.write('%d %d %d\n' % (n_ins, n_upd, n_del))
    print('pg_workload: %d inserted, %d updated, %d deleted' % (n_ins, n_upd, n_del), file=sys.stderr)


if __name__ == '__main__':
    main()
