// bench/streaming/recipe_node.mjs -- the fdw-jsonl-node tool of
// bench/streaming/streaming.py: the node-postgres recipe
// (clients/node/binlog_fdw_stream.mjs) consuming source 'src' until
// EXPECTED changes came.  Prints {"pid": backend} once connected, waits for
// a line on stdin (the source started), then consumes; prints {"changes",
// "bytes", "batches"} when the last came, and exits when stdin closes (the backend is measured
// before that).  Connection from the PG* environment variables.
import { createRequire } from 'node:module';
import readline from 'node:readline';

const require = createRequire(new URL('../../clients/node/package.json', import.meta.url));
const pg = require('pg');
const { batches } = await import('../../clients/node/binlog_fdw_stream.mjs');

const [maxChanges, depth, expected] = process.argv.slice(2).map(Number);
const client = new pg.Client({ pipeline: true });
await client.connect();
const pid = (await client.query('SELECT pg_backend_pid() AS p')).rows[0].p;
const rl = readline.createInterface({ input: process.stdin });
const lines = rl[Symbol.asyncIterator]();
process.stdout.write(JSON.stringify({ pid }) + '\n');
await lines.next();
let changes = 0, bytes = 0, nb = 0;
for await (const b of batches(client, 'src', { maxChanges, timeoutMs: 1000, depth, stop: () => changes >= expected })) {
  changes += b.changes;
  bytes += b.lines.length;  // UTF-16 units: a byte count would scan the text again
  nb++;
  b.ack();
  // the last change arrived: reported now (the gets still in flight wait
  // up to their timeout before the generator ends)
  if (changes >= expected) process.stdout.write(JSON.stringify({ changes, bytes, batches: nb }) + '\n');
}
if (changes < expected) process.stdout.write(JSON.stringify({ changes, bytes, batches: nb }) + '\n');
await lines.next();
await client.end();
