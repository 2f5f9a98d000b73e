// bench/streaming/zongji_count.mjs -- an anchor of bench/streaming/run.sh.
//
//   node zongji_count.mjs PACKAGE PORT ROWS [FILE [POS]]
//
// Streams the source's binlog from FILE:POS (default mysql-bin.000001:4)
// with PACKAGE ("zongji" = zongji@0.5.1, "@vlasky/zongji" = 0.9.0), as a
// replica connected over TCP to 127.0.0.1:PORT as repl/repl, counts the
// rows of the rows events (write/update/delete; every row is decoded to
// JavaScript values by the library) and exits when ROWS rows have arrived.
// Prints one JSON line: {"package", "rows", "events", "seconds"}.
// The packages are installed at run time by run.sh (npm ci), never committed.
import { createRequire } from 'module';

const [pkg, port, want, file = 'mysql-bin.000001', pos = '4'] = process.argv.slice(2);
if (!pkg || !port || !want) {
  console.error('usage: node zongji_count.mjs PACKAGE PORT ROWS [FILE [POS]]');
  process.exit(2);
}
const require = createRequire(import.meta.url);
let ZongJi;
if (pkg === 'zongji') {
  ZongJi = require('zongji');          // 0.5.1: CommonJS
} else {
  ZongJi = (await import(pkg)).default; // @vlasky/zongji 0.9: ESM only
}

const target = Number(want);
const t0 = process.hrtime.bigint();
let rows = 0;
let events = 0;
let done = false;
const zj = new ZongJi({ host: '127.0.0.1', port: Number(port), user: 'repl', password: 'repl' });

function finish(code, msg) {
  if (done) return;
  done = true;
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  if (msg) console.error('zongji_count: ' + msg);
  console.log(JSON.stringify({ package: pkg, rows, events, seconds }));
  // the library's stop() kills the dump thread through its control connection;
  // we have what we came for, so leave at once
  process.exit(code);
}

zj.on('binlog', (ev) => {
  events++;
  if (ev.rows) {
    rows += ev.rows.length;
    if (rows >= target) finish(0);
  }
});
zj.on('error', (err) => finish(1, String(err && err.stack || err)));
zj.start({
  serverId: 4100 + (pkg === 'zongji' ? 1 : 2),
  filename: file,
  position: Number(pos),
  includeEvents: ['tablemap', 'writerows', 'updaterows', 'deleterows'],
});
setTimeout(() => finish(1, 'timeout after 600 s'), 600000).unref();
