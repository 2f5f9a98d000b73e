#!/usr/bin/env node
'use strict';
// test/mysql_source/server.js -- a test source that speaks the MySQL 8.0 /
// 8.4 client/server and replication protocol and serves real MySQL binlog
// files (../shared/binlog-samples) as a MySQL server of that version would.
// Debian has no MySQL server: this is how binlog_fdw's MySQL paths (the
// client library's caching_sha2_password and TLS, the setup queries, the
// dump, MySQL events live) run in CI.  What it does not prove is in the
// README ("MySQL sources without a MySQL server").
//
// usage: node server.js CONFIG.json
//
// CONFIG (JSON):
//   port (0: any), host ("127.0.0.1"), version ("8.0.40", "8.4.3", "9.6.0"),
//   server_id, server_uuid, files: [paths] (one server's binlogs, oldest
//   first, served under their base names), data_dir (where a file opened at
//   a rotation is written; required), binlog_format ("ROW"),
//   binlog_row_metadata ("FULL"|"MINIMAL"), binlog_row_image ("FULL"),
//   log_bin (1), gtid_mode ("ON"|"OFF", default: ON when the files have
//   GTIDs), default_auth ("caching_sha2_password"),
//   users: [{user, host, password, plugin, grants: ["REPLICATION SLAVE", ...]}],
//   tls: {cert, key} (files) or null, require_secure_transport,
//   schema: {db: {table: [{name, data_type, column_type, charset, key, nullable}]}},
//   replicas: [{server_id, host, port, uuid}] (other replicas SHOW REPLICAS lists),
//   hold_transactions: N (the last N transactions of the last file are not
//   written yet: SIGUSR2 writes the next one, SIGHUP all), at_end ("wait",
//   "eof": end every dump with EOF, "close": drop the connection),
//   heartbeat_v2 (send HEARTBEAT_V2 events), log (JSON lines of every
//   connection, query and dump; a query's "locks": the tables each
//   connection holds by LOCK TABLES after it), rows: {db: {table: [{col:
//   value}]}} (what a copy reads of the schema's tables), busy_tables:
//   ["db.table"] (their LOCK TABLES times out), ready_file (written once listening:
//   {port, pid, files, rsa_public_key}).
// Signals: SIGUSR1 kills every connection (a source restart as replicas see
// it), SIGUSR2/SIGHUP reveal held transactions, SIGTERM stops.

const fs = require('fs');
const net = require('net');
const path = require('path');
const tls = require('tls');
const crypto = require('crypto');
const { Wire } = require('./lib/wire');
const { authenticate } = require('./lib/auth');
const { Session } = require('./lib/sql');
const { Dump, DumpError, parseDump, parseDumpGtid } = require('./lib/dump');
const { BinlogFile, synthesizeNextFile, versionAtLeast, EV } = require('./lib/binlog');
const { GtidSet } = require('./lib/gtid');

class Server {
  constructor(config) {
    this.config = Object.assign(
      {
        host: '127.0.0.1',
        port: 0,
        version: '8.0.40',
        server_id: 1,
        binlog_format: 'ROW',
        binlog_row_image: 'FULL',
        log_bin: 1,
        users: [],
        at_end: 'wait',
      },
      config
    );
    const cfg = this.config;
    this.flavor = versionAtLeast(cfg.version, [8, 4, 0]) ? '8.4' : '8.0';
    this.logStream = cfg.log ? fs.createWriteStream(cfg.log, { flags: 'a' }) : null;
    this.files = cfg.files.map((f) => BinlogFile.load(f));
    if (!this.files.length) throw new Error('no binlog files to serve');
    for (const u of cfg.users) u.grants = u.grants || [];
    if (!cfg.server_uuid) {
      const g = this.files.map((f) => f.firstGtid()).find((x) => x);
      cfg.server_uuid = g ? g.key.split(':')[0] : crypto.randomUUID();
    }
    if (cfg.binlog_row_metadata === undefined) cfg.binlog_row_metadata = 'MINIMAL';
    this.limits = new Map();
    // a file ending with a ROTATE to a file the index lacks: the server
    // opened that file; write it as MySQL would have
    const last = this.files[this.files.length - 1];
    const lastEv = last.last();
    if (lastEv.type === EV.ROTATE && !this.files.some((f) => f.name === lastEv.rotateTo)) {
      if (!cfg.data_dir) throw new Error('data_dir is needed: the last file rotates to a new one');
      this.files.push(synthesizeNextFile(last, lastEv.rotateTo, lastEv.ts, this.gtidExecuted(), cfg.data_dir));
    }
    // held transactions: the last file ends early until revealed
    this.active = this.files[this.files.length - 1];
    const holdFile = cfg.hold_transactions ? this.files.filter((f) => f.groupStarts().length).pop() : null;
    if (holdFile) {
      this.holdFile = holdFile;
      this.holdStarts = holdFile.groupStarts();
      this.held = Math.min(cfg.hold_transactions, this.holdStarts.length);
      this.limits.set(holdFile, this.holdStarts[this.holdStarts.length - this.held]);
    }
    this.nextConnId = 8;
    this.conns = new Map();
    this.locks = new Map();
    this.dumps = new Set();
    this.waiters = new Set();
    this.registered = new Map();
    this.sha2Cache = new Map();
    const { publicKey, privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
    this.rsa = { privateKey, publicPem: publicKey.export({ type: 'spki', format: 'pem' }) };
    this.secureContext = cfg.tls ? tls.createSecureContext({ cert: fs.readFileSync(cfg.tls.cert), key: fs.readFileSync(cfg.tls.key) }) : null;
  }

  log(obj) {
    if (!this.logStream) return;
    this.logStream.write(`${JSON.stringify(Object.assign({ t: Date.now() / 1000 }, obj))}\n`);
  }

  // what a dump sees of a file: all of it, or up to the held transactions
  visibleSize(file) {
    if (this.limits.has(file)) return this.limits.get(file);
    if (this.holdFile && this.files.indexOf(file) > this.files.indexOf(this.holdFile)) return 4;
    return file.size;
  }

  reveal(all) {
    if (!this.holdFile || this.held === 0) return;
    this.held = all ? 0 : this.held - 1;
    if (this.held === 0) {
      this.limits.delete(this.holdFile);
      this.holdFile = null;
    } else this.limits.set(this.holdFile, this.holdStarts[this.holdStarts.length - this.held]);
    this.log({ event: 'reveal', held: this.held });
    for (const w of [...this.waiters]) w();
  }

  // executed: the last file's PREVIOUS_GTIDS and every GTID written so far
  gtidExecuted() {
    const s = new GtidSet();
    for (const f of this.files) {
      if (f.prevGtids) s.union(f.prevGtids);
      for (const ev of f.events) if (ev.gtid && ev.end <= this.visibleSize(f)) s.add(ev.gtid.key, ev.gtid.gno);
    }
    if (this.config.gtid_executed !== undefined) return GtidSet.parse(this.config.gtid_executed);
    return s;
  }

  gtidPurged() {
    if (this.config.gtid_purged !== undefined) return GtidSet.parse(this.config.gtid_purged);
    return this.files[0].prevGtids ? this.files[0].prevGtids.clone() : new GtidSet();
  }

  gtidMode() {
    if (this.config.gtid_mode) return this.config.gtid_mode.toUpperCase();
    return this.files.some((f) => f.hasGtidEvents()) ? 'ON' : 'OFF';
  }

  sysvars() {
    const c = this.config;
    const checksum = this.files.some((f) => f.checksum) ? 'CRC32' : 'NONE';
    return {
      version: c.version,
      version_comment: 'binlog_fdw test source (MySQL Community Server - GPL protocol)',
      server_id: c.server_id,
      server_uuid: c.server_uuid,
      log_bin: c.log_bin,
      log_bin_basename: path.join(c.data_dir || '/var/lib/mysql', 'binlog'),
      binlog_format: c.binlog_format,
      binlog_row_image: c.binlog_row_image,
      binlog_row_metadata: c.binlog_row_metadata,
      binlog_checksum: checksum,
      binlog_transaction_compression: this.files.some((f) => f.events.some((e) => e.type === EV.TRANSACTION_PAYLOAD)) ? 1 : 0,
      gtid_mode: this.gtidMode(),
      enforce_gtid_consistency: this.gtidMode() === 'ON' ? 'ON' : 'OFF',
      gtid_executed: this.gtidExecuted().toString(),
      gtid_purged: this.gtidPurged().toString(),
      default_authentication_plugin: this.flavor === '8.4' ? undefined : c.default_auth || 'caching_sha2_password',
      authentication_policy: '*,,',
      character_set_server: 'utf8mb4',
      collation_server: 'utf8mb4_0900_ai_ci',
      time_zone: 'SYSTEM',
      system_time_zone: 'UTC',
      max_allowed_packet: 67108864,
      net_write_timeout: 60,
      net_read_timeout: 30,
      wait_timeout: 28800,
      require_secure_transport: c.require_secure_transport ? 'ON' : 'OFF',
      have_ssl: this.secureContext ? 'YES' : 'DISABLED',
      lower_case_table_names: 0,
      sql_mode: 'ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION',
      autocommit: 1,
      transaction_isolation: 'REPEATABLE-READ',
    };
  }

  lock(connId, tables) {
    this.locks.set(connId, tables);
  }

  unlock(connId) {
    this.locks.delete(connId);
  }

  // "conn:db.table" of every table locked now
  locksHeld() {
    const out = [];
    for (const [id, tables] of this.locks) for (const t of tables) out.push(`${id}:${t}`);
    return out;
  }

  replicaList() {
    return [...(this.config.replicas || []), ...this.registered.values()];
  }

  killConnection(id) {
    const c = this.conns.get(id);
    if (!c) return false;
    this.log({ event: 'kill', conn: id });
    c.destroy();
    return true;
  }

  killAll() {
    for (const id of [...this.conns.keys()]) this.killConnection(id);
  }

  async handle(socket) {
    const connId = this.nextConnId++;
    const wire = new Wire(socket);
    this.conns.set(connId, wire);
    wire.onClose = () => {
      this.conns.delete(connId);
      this.unlock(connId);
    };
    const ctx = { config: this.config, log: (o) => this.log(o), connId, secureContext: this.secureContext, sha2Cache: this.sha2Cache, rsa: this.rsa };
    let account;
    try {
      account = await authenticate(wire, ctx);
    } catch (e) {
      this.log({ event: 'handshake_failed', conn: connId, error: e.message });
      wire.destroy();
      return;
    }
    if (!account) {
      wire.end();
      return;
    }
    const session = new Session(this, account, connId);
    try {
      for (;;) {
        const { payload } = await wire.read();
        const cmd = payload[0];
        if (cmd === 0x01) {
          wire.destroy();
          return;
        }
        if (cmd === 0x03) {
          const sql = payload.subarray(1).toString('utf8');
          const r = session.query(sql);
          this.log({ event: 'query', conn: connId, sql, result: r.error ? `error ${r.error[0]}` : r.columns ? `${r.rows.length} rows` : 'ok', locks: this.locksHeld() });
          if (r.error) await wire.error(r.error[0], r.error[1], r.error[2]);
          else if (r.columns) await wire.resultSet(r.columns, r.rows);
          else await wire.ok();
        } else if (cmd === 0x0e || cmd === 0x02 || cmd === 0x1f) {
          await wire.ok();
        } else if (cmd === 0x15) {
          // COM_REGISTER_SLAVE: server id, host, user, password, port, rank, source id
          const p = payload;
          let o = 5;
          const str = () => {
            const n = p[o];
            const s = p.subarray(o + 1, o + 1 + n).toString('latin1');
            o += 1 + n;
            return s;
          };
          const serverId = p.readUInt32LE(1);
          const host = str();
          str();
          str();
          const port = p.readUInt16LE(o);
          this.registered.set(connId, { server_id: serverId, host, port, uuid: '' });
          wire.onClose = () => {
            this.conns.delete(connId);
            this.unlock(connId);
            this.registered.delete(connId);
          };
          this.log({ event: 'register_replica', conn: connId, server_id: serverId, host, port });
          await wire.ok();
        } else if (cmd === 0x12 || cmd === 0x1e) {
          await this.dump(wire, session, cmd === 0x12 ? parseDump(payload) : parseDumpGtid(payload));
          if (wire.closed) return;
        } else {
          this.log({ event: 'unknown_command', conn: connId, command: cmd });
          await wire.error(1047, '08S01', 'Unknown command');
        }
      }
    } catch (e) {
      if (!wire.closed) {
        this.log({ event: 'connection_error', conn: connId, error: e.message });
        wire.destroy();
      }
    }
  }

  async dump(wire, session, req) {
    const entry = { event: req.gtid ? 'dump_gtid' : 'dump', conn: session.connId, server_id: req.serverId, file: req.file, pos: req.pos, flags: req.flags };
    if (req.gtid) entry.gtid_set = req.set.toString();
    this.log(entry);
    const d = new Dump(this, wire, session, req);
    // a replica with this server_id already streaming is a zombie: end it
    for (const other of this.dumps)
      if (other.req.serverId === req.serverId && req.serverId !== 0)
        other.stop(new DumpError(1236, 'HY000', 'A replica with the same server_uuid/server_id as this replica has connected to the source'));
    this.dumps.add(d);
    try {
      await d.run();
    } catch (e) {
      if (e instanceof DumpError) {
        this.log({ event: 'dump_error', conn: session.connId, code: e.code, error: e.message });
        await wire.error(e.code, e.state, e.message);
        if (e.code === 1236 || e.code === 1227) wire.end();
      } else if (!wire.closed) {
        this.log({ event: 'dump_error', conn: session.connId, error: e.message });
        wire.destroy();
      }
    } finally {
      this.dumps.delete(d);
    }
  }

  listen() {
    return new Promise((resolve, reject) => {
      this.srv = net.createServer((s) => {
        s.setNoDelay(true);
        this.handle(s).catch((e) => this.log({ event: 'internal_error', error: e.stack }));
      });
      this.srv.on('error', reject);
      this.srv.listen(this.config.port, this.config.host, () => resolve(this.srv.address().port));
    });
  }
}

async function main() {
  if (process.argv.length !== 3) {
    process.stderr.write('usage: node server.js CONFIG.json\n');
    process.exit(2);
  }
  const config = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const server = new Server(config);
  const port = await server.listen();
  process.on('SIGUSR1', () => server.killAll());
  process.on('SIGUSR2', () => server.reveal(false));
  process.on('SIGHUP', () => server.reveal(true));
  process.on('SIGTERM', () => process.exit(0));
  process.on('SIGINT', () => process.exit(0));
  const ready = { port, pid: process.pid, version: server.config.version, files: server.files.map((f) => f.path), rsa_public_key: server.rsa.publicPem, server_uuid: server.config.server_uuid };
  server.log(Object.assign({ event: 'ready' }, ready));
  if (config.ready_file) {
    fs.writeFileSync(`${config.ready_file}.tmp`, JSON.stringify(ready));
    fs.renameSync(`${config.ready_file}.tmp`, config.ready_file);
  }
  process.stdout.write(`${JSON.stringify(ready)}\n`);
}

if (require.main === module) {
  main().catch((e) => {
    process.stderr.write(`mysql test source: ${e.stack || e}\n`);
    process.exit(1);
  });
}

module.exports = { Server };
