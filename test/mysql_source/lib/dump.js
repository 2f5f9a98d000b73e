'use strict';
// lib/dump.js -- COM_BINLOG_DUMP and COM_BINLOG_DUMP_GTID as a MySQL 8.0/8.4
// source runs them (sql/rpl_binlog_sender.cc's behaviour, rewritten):
//
// - checks: REPLICATION SLAVE (1227), the replica's checksum capability
//   (@source_binlog_checksum / @master_binlog_checksum, else 1236), the
//   start file and position (1236), for GTID dumps gtid_mode=ON, a set that
//   has no more of this server's GTIDs than it executed, and one that holds
//   every purged GTID;
// - a GTID dump without a file name starts in the newest file whose
//   PREVIOUS_GTIDS are all in the replica's set, and skips every
//   transaction of the set (a HEARTBEAT with the position after a skipped
//   run tells the replica how far it got); an anonymous transaction stops
//   it (1236);
// - each file starts with a fake ROTATE (timestamp 0, log_pos 0,
//   LOG_EVENT_ARTIFICIAL_F) and the file's FORMAT_DESCRIPTION without the
//   in-use flag (log_pos and created cleared when the dump starts past the
//   beginning of the file, created cleared when a GTID dump skips the
//   file's first transaction), checksums recomputed;
// - at the end of the binlog: an EOF packet for BINLOG_DUMP_NON_BLOCK (1)
//   dumps, else wait for more events, with a HEARTBEAT every
//   @source_heartbeat_period / @master_heartbeat_period nanoseconds;
// - a new dump with the server_id of a running one ends the older one
//   (1236, "A replica with the same server_uuid/server_id ...").

const { EV, fakeRotate, heartbeat, heartbeatV2, fixChecksum, LOG_EVENT_BINLOG_IN_USE_F, HEADER_LEN } = require('./binlog');
const { GtidSet } = require('./gtid');

const BINLOG_DUMP_NON_BLOCK = 1;

class DumpError extends Error {
  constructor(code, state, message) {
    super(message);
    this.code = code;
    this.state = state;
  }
}

function fatal(message) {
  return new DumpError(1236, 'HY000', message);
}

function parseDump(payload) {
  if (payload.length < 11) throw new DumpError(1835, 'HY000', 'Malformed communication packet.');
  return {
    gtid: false,
    pos: payload.readUInt32LE(1),
    flags: payload.readUInt16LE(5),
    serverId: payload.readUInt32LE(7),
    file: payload.subarray(11).toString('latin1'),
  };
}

function parseDumpGtid(payload) {
  let p = 1;
  const need = (n) => {
    if (p + n > payload.length) throw new DumpError(1835, 'HY000', 'Malformed communication packet.');
  };
  need(10);
  const flags = payload.readUInt16LE(p);
  const serverId = payload.readUInt32LE(p + 2);
  const nameLen = payload.readUInt32LE(p + 6);
  p += 10;
  need(nameLen + 8);
  const file = payload.subarray(p, p + nameLen).toString('latin1');
  p += nameLen;
  const pos = Number(payload.readBigUInt64LE(p));
  p += 8;
  let set = new GtidSet();
  let raw = Buffer.alloc(0);
  if (p + 4 <= payload.length) {
    const size = payload.readUInt32LE(p);
    p += 4;
    need(size);
    raw = payload.subarray(p, p + size);
    try {
      set = GtidSet.decode(raw);
    } catch (e) {
      throw new DumpError(1236, 'HY000', `Malformed GTID set encoding: ${e.message}`);
    }
  }
  return { gtid: true, flags, serverId, file, pos, set, rawSet: raw };
}

function userVar(session, names) {
  for (const n of names) if (session.userVars.has(n) && session.userVars.get(n) !== null) return session.userVars.get(n);
  return null;
}

class Dump {
  constructor(server, wire, session, req) {
    this.server = server;
    this.wire = wire;
    this.session = session;
    this.req = req;
    this.serverId = server.config.server_id;
    this.stopped = null;
    this.sent = 0;
  }

  stop(err) {
    if (!this.stopped) this.stopped = err || fatal('killed');
    if (this.wake) this.wake();
  }

  async send(ev) {
    if (this.stopped) throw this.stopped;
    this.sent++;
    const ok = await this.wire.write(Buffer.concat([Buffer.from([0]), ev]));
    if (!ok) throw fatal('connection closed');
    if (this.stopped) throw this.stopped;
  }

  heartbeatEvent(file, pos) {
    const v2 = this.server.config.heartbeat_v2;
    return (v2 ? heartbeatV2 : heartbeat)(this.serverId, file.name, pos, file.checksum);
  }

  // the files to read, and where: [index, pos], or throws
  startPoint() {
    const srv = this.server;
    const req = this.req;
    let idx;
    if (req.file !== '') {
      idx = srv.files.findIndex((f) => f.name === req.file);
      if (idx < 0) throw fatal('Could not find first log file name in binary log index file');
    } else if (req.gtid) {
      idx = -1;
      for (let i = srv.files.length - 1; i >= 0; i--) {
        const prev = srv.files[i].prevGtids || new GtidSet();
        if (prev.subsetOf(req.set)) {
          idx = i;
          break;
        }
      }
      if (idx < 0)
        throw fatal('The replica is connecting using CHANGE REPLICATION SOURCE TO SOURCE_AUTO_POSITION = 1, but the source has purged binary logs containing GTIDs that the replica requires.');
      const first = srv.files[idx].firstGtid();
      this.clearCreated = !!(first && req.set.contains(first.key, first.gno));
    } else idx = 0;
    if (req.pos < 4) throw fatal('Client requested source to start replication from position < 4.');
    if (req.pos > srv.visibleSize(srv.files[idx])) throw fatal('Client requested source to start replication from position > file size');
    return [idx, req.pos];
  }

  checks() {
    const srv = this.server;
    const req = this.req;
    if (!this.session.account.user.grants.map((g) => g.toUpperCase()).some((g) => g === 'REPLICATION SLAVE' || g === 'ALL PRIVILEGES'))
      throw new DumpError(1227, '42000', 'Access denied; you need (at least one of) the REPLICATION SLAVE privilege(s) for this operation');
    if (req.gtid) {
      if (srv.gtidMode() !== 'ON') throw fatal('Request to dump GTID when @@GLOBAL.GTID_MODE <> ON.');
      const own = req.set.forUuid(srv.config.server_uuid);
      if (!own.subsetOf(srv.gtidExecuted()))
        throw fatal(
          "Replica has more GTIDs than the source has, using the source's SERVER_UUID. This may indicate that the end of the binary log was truncated or that the last binary log file was lost, e.g., after a power or disk failure when sync_binlog != 1. The source may or may not have rolled back transactions that were already replicated to the replica. Suggest to replicate any transactions that source has rolled back from replica to source, and/or commit empty transactions on source to account for transactions that have been committed on source but are not included in GTID_EXECUTED."
        );
      if (!srv.gtidPurged().subsetOf(req.set))
        throw fatal('Cannot replicate because the source purged required binary logs. Replicate the missing transactions from elsewhere, or provision a new replica from backup. Consider increasing the source\'s binary log expiration period. The GTID set sent by the replica is \'' + req.set.toString() + "', and the missing transactions are '" + srv.gtidPurged().toString() + "'");
    }
    const checksumOn = srv.files.some((f) => f.checksum);
    const replicaAlg = userVar(this.session, ['source_binlog_checksum', 'master_binlog_checksum']);
    if (checksumOn && (replicaAlg === null || String(replicaAlg).toUpperCase() === 'NONE' || String(replicaAlg).toUpperCase() === 'UNDEF'))
      throw fatal('Replica can not handle replication events with the checksum that source is configured to log');
  }

  heartbeatPeriodMs() {
    const ns = userVar(this.session, ['source_heartbeat_period', 'master_heartbeat_period']);
    const n = ns === null ? 0 : Number(ns);
    return n > 0 ? Math.max(1, Math.round(n / 1e6)) : 0;
  }

  async run() {
    const srv = this.server;
    const req = this.req;
    this.checks();
    let [idx, pos] = this.startPoint();
    const startFile = srv.files[idx].name;
    const startPos = pos;
    let last = { file: startFile, pos: startPos };
    try {
      for (;;) {
        const file = srv.files[idx];
        await this.send(fakeRotate(this.serverId, file.name, pos, file.checksum));
        const fde = file.fde();
        const fdeBytes = file.eventBytes(fde);
        fdeBytes.writeUInt16LE(fdeBytes.readUInt16LE(17) & ~LOG_EVENT_BINLOG_IN_USE_F, 17);
        if (req.gtid ? this.clearCreated && pos === 4 : pos > 4) {
          if (!req.gtid) fdeBytes.writeUInt32LE(0, 13);
          fdeBytes.writeUInt32LE(0, HEADER_LEN + 2 + 50);
        }
        if (file.checksum) fixChecksum(fdeBytes);
        await this.send(fdeBytes);
        if (pos === 4) pos = fde.end;
        let inExclude = false;
        let excludeEnd = 0;
        for (;;) {
          const end = srv.visibleSize(file);
          for (const ev of file.events) {
            if (ev.pos < pos || ev.end > end) continue;
            last = { file: file.name, pos: ev.pos };
            if (req.gtid && ev.type === EV.ANONYMOUS_GTID)
              throw fatal(`Cannot replicate anonymous transaction when AUTO_POSITION = 1, at file ${file.name}, position ${ev.pos}.`);
            if (req.gtid) {
              if (ev.gtid) inExclude = req.set.contains(ev.gtid.key, ev.gtid.gno);
              else if (ev.type === EV.ROTATE) inExclude = false;
            }
            if (inExclude) {
              excludeEnd = ev.end;
            } else {
              if (excludeEnd) {
                await this.send(this.heartbeatEvent(file, excludeEnd));
                excludeEnd = 0;
              }
              await this.send(file.eventBytes(ev));
            }
            pos = ev.end;
          }
          if (inExclude && excludeEnd) {
            await this.send(this.heartbeatEvent(file, excludeEnd));
            excludeEnd = 0;
          }
          if (idx < srv.files.length - 1 && pos >= file.size) break;
          // the end of the binlog
          if (req.flags & BINLOG_DUMP_NON_BLOCK || srv.config.at_end === 'eof') {
            await this.wire.eof();
            srv.log({ event: 'dump_end', conn: this.session.connId, how: 'eof', file: file.name, pos, sent: this.sent });
            return;
          }
          if (srv.config.at_end === 'close') {
            srv.log({ event: 'dump_end', conn: this.session.connId, how: 'close', file: file.name, pos, sent: this.sent });
            this.wire.destroy();
            return;
          }
          await this.waitForEvents(file, pos);
          if (idx < srv.files.length - 1 && pos >= file.size) break;
        }
        idx++;
        pos = 4;
      }
    } catch (e) {
      if (e instanceof DumpError && e.code === 1236 && !/^Could not find|^Client requested/.test(e.message))
        e.message = `${e.message}; the first event '${startFile}' at ${startPos}, the last event read from '${last.file}' at ${last.pos}, the last byte read from '${last.file}' at ${pos}.`;
      throw e;
    }
  }

  // wait until the file grows (or a file is added), with heartbeats
  waitForEvents(file, pos) {
    const period = this.heartbeatPeriodMs();
    return new Promise((resolve, reject) => {
      let timer = null;
      const finish = (err) => {
        if (timer) clearInterval(timer);
        this.server.waiters.delete(check);
        this.wake = null;
        if (err) reject(err);
        else resolve();
      };
      const check = () => {
        if (this.stopped) return finish(this.stopped);
        if (this.wire.closed) return finish(fatal('connection closed'));
        // more of this file, or it is whole and a newer one follows (a
        // file with held transactions may be followed by one: wait then)
        const size = this.server.visibleSize(file);
        if (size > pos || (size >= file.size && this.server.files[this.server.files.length - 1] !== file)) return finish();
        return undefined;
      };
      this.wake = check;
      this.server.waiters.add(check);
      if (period)
        timer = setInterval(() => {
          this.send(this.heartbeatEvent(file, pos)).catch(finish);
        }, period);
      check();
    });
  }
}

module.exports = { Dump, DumpError, parseDump, parseDumpGtid };
