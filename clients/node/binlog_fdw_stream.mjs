// clients/node/binlog_fdw_stream.mjs -- a pipelined get_jsonl()/ack()
// consumer of a binlog_fdw source, with node-postgres (npm pg@8.23.1,
// pinned in clients/node/package-lock.json, installed by
// scripts/install-npm.sh).  The recipe (docs/clients.md):
//
//   import pg from 'pg';
//   import { batches } from './binlog_fdw_stream.mjs';
//   const client = new pg.Client({ host: '/run/postgresql', database: 'app', pipeline: true });
//   await client.connect();
//   for await (const b of batches(client, 'src')) {
//     handle(b.lines);          // one JSON line per change
//     b.ack();                  // in order; queued, not awaited
//   }
//
// The client is in node-postgres's pipeline mode (`pipeline: true`, pg
// 8.23): every query goes out at once, with a Sync of its own, and the
// answers come back in order.  `depth` get_jsonl() calls are kept in
// flight: PostgreSQL takes the next batch while the client works on the
// last one, and an ack goes out behind the gets without a round trip of its
// own.  Each call is its own transaction, so an ack commits on its own
// (await the promise b.ack() returns for it to be known durable).  The
// semantics are binlog_fdw's, unchanged: batches acknowledged in the order
// they came (an out-of-order ack is the server's error, thrown by the
// generator), rollback gives every un-acked batch back; on start the
// generator calls rollback(server) so that what an earlier session left
// un-acked comes again first (one consumer per source).
const GET_SQL = 'SELECT batch_id, first_seq, last_seq, changes, lines FROM binlog_fdw.get_jsonl($1, $2, $3)';

export async function* batches(client, server, { maxChanges = 5000, timeoutMs = 1000, depth = 2, stop } = {}) {
  if (!client.pipeline) throw new Error('binlog_fdw_stream: make the client with { pipeline: true }');
  const gets = [];        // promises of the gets in flight, oldest first
  let failed = null;      // the first refused ack
  const sendGet = () => {
    const p = client.query({ text: GET_SQL, values: [server, maxChanges, timeoutMs], rowMode: 'array' });
    p.catch(() => {});    // read (and thrown) in order below
    gets.push(p);
  };
  await client.query('SELECT binlog_fdw.rollback($1)', [server]);
  try {
    while (!(stop && stop())) {
      while (gets.length < depth) sendGet();
      const res = await gets.shift();
      if (failed) throw failed;
      if (res.rows.length === 0) continue;
      const [id, first, last, n, lines] = res.rows[0];
      sendGet();          // the next get goes out before the client works
      yield {
        batchId: id, firstSeq: first, lastSeq: last, changes: n, lines,
        ack: () => client.query('SELECT binlog_fdw.ack($1, $2)', [server, id])
          .catch((e) => { failed = failed || e; }),
      };
    }
  } finally {
    // the gets still in flight: their batches are given back
    for (const p of gets) await p.catch(() => {});
    if (gets.length) await client.query('SELECT binlog_fdw.rollback($1)', [server]).catch(() => {});
    if (failed) throw failed;
  }
}

// node binlog_fdw_stream.mjs SERVER: JSON lines to stdout (connection from
// the PG* environment variables).
if (import.meta.url === `file://${process.argv[1]}`) {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ pipeline: true });
  await client.connect();
  for await (const b of batches(client, process.argv[2])) {
    if (!process.stdout.write(b.lines)) await new Promise((r) => process.stdout.once('drain', r));
    b.ack();
  }
}
