'use strict';
// lib/binlog.js -- the test source's binary log: real binlog files read
// into memory and indexed by event (header fields, the GTID of each
// transaction, PREVIOUS_GTIDS), the events a source makes up itself (fake
// ROTATE, HEARTBEAT and HEARTBEAT_V2, a new file after a rotation:
// FORMAT_DESCRIPTION + PREVIOUS_GTIDS) and the CRC32 checksums they carry.

const fs = require('fs');
const path = require('path');
const zlib = require('zlib');
const { GtidSet, encodeVarlen, decodeVarlen } = require('./gtid');

const EV = {
  QUERY: 2,
  STOP: 3,
  ROTATE: 4,
  FORMAT_DESCRIPTION: 15,
  XID: 16,
  HEARTBEAT: 27,
  GTID: 33,
  ANONYMOUS_GTID: 34,
  PREVIOUS_GTIDS: 35,
  TRANSACTION_PAYLOAD: 40,
  HEARTBEAT_V2: 41,
  GTID_TAGGED: 42,
};
const HEADER_LEN = 19;
const LOG_EVENT_BINLOG_IN_USE_F = 0x1;
const LOG_EVENT_ARTIFICIAL_F = 0x20;
const LOG_EVENT_IGNORABLE_F = 0x80;
const MAGIC = Buffer.from([0xfe, 0x62, 0x69, 0x6e]);

function crc32(buf) {
  return zlib.crc32(buf) >>> 0;
}

// set the trailing checksum of an event (checksum on) after header changes
function fixChecksum(ev) {
  ev.writeUInt32LE(crc32(ev.subarray(0, ev.length - 4)), ev.length - 4);
  return ev;
}

function header(ts, type, serverId, len, nextPos, flags) {
  const h = Buffer.alloc(HEADER_LEN);
  h.writeUInt32LE(ts >>> 0, 0);
  h[4] = type;
  h.writeUInt32LE(serverId >>> 0, 5);
  h.writeUInt32LE(len >>> 0, 9);
  h.writeUInt32LE(nextPos >>> 0, 13);
  h.writeUInt16LE(flags, 17);
  return h;
}

// an event from header fields and body, with a checksum when asked
function makeEvent(ts, type, serverId, nextPos, flags, body, checksum) {
  const len = HEADER_LEN + body.length + (checksum ? 4 : 0);
  const ev = Buffer.concat([header(ts, type, serverId, len, nextPos, flags), body, Buffer.alloc(checksum ? 4 : 0)]);
  return checksum ? fixChecksum(ev) : ev;
}

function versionAtLeast(v, want) {
  const a = (v.match(/^(\d+)\.(\d+)\.(\d+)/) || []).slice(1).map(Number);
  for (let i = 0; i < 3; i++) {
    if ((a[i] || 0) !== want[i]) return (a[i] || 0) > want[i];
  }
  return true;
}

// GTID_TAGGED body: a serialization version byte, then a message of
// (field id, value) pairs after its size and last mandatory field id; the
// source uuid is field 1 (16 varlen bytes), the number field 2 (signed),
// the tag field 3 (length and bytes).
function parseGtidTagged(body) {
  let p = 1;
  const next = () => {
    const [v, n] = decodeVarlen(body, p);
    p += n;
    return v;
  };
  next();
  next();
  const sid = Buffer.alloc(16);
  let gno = 0n;
  let tag = '';
  while (p < body.length) {
    const id = Number(next());
    if (id === 1) for (let i = 0; i < 16; i++) sid[i] = Number(next());
    else if (id === 2) {
      const u = next();
      gno = u & 1n ? -(u >> 1n) - 1n : u >> 1n;
    } else if (id === 3) {
      const len = Number(next());
      tag = body.subarray(p, p + len).toString('ascii');
      p += len;
    } else if (id === 0) next();
    else break;
    if (id >= 3) break;
  }
  return { sid, gno, tag };
}

function uuidText(sid) {
  const h = sid.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

class BinlogFile {
  // buf: the whole file; name: the name it is served under
  constructor(name, buf, filePath) {
    this.name = name;
    this.path = filePath;
    this.buf = buf;
    this.events = [];
    this.prevGtids = null;
    this.checksum = false;
    this.serverVersion = '';
    if (buf.length < 4 || !buf.subarray(0, 4).equals(MAGIC)) throw new Error(`${filePath}: not a binlog file`);
    let pos = 4;
    let inGroup = null;
    while (pos + HEADER_LEN <= buf.length) {
      const len = buf.readUInt32LE(pos + 9);
      if (len < HEADER_LEN || pos + len > buf.length) throw new Error(`${filePath}: event at ${pos} is truncated`);
      const ev = {
        pos,
        end: pos + len,
        ts: buf.readUInt32LE(pos),
        type: buf[pos + 4],
        serverId: buf.readUInt32LE(pos + 5),
        nextPos: buf.readUInt32LE(pos + 13),
        flags: buf.readUInt16LE(pos + 17),
        gtid: null,
      };
      const bodyEnd = () => ev.end - (this.checksum ? 4 : 0);
      if (ev.type === EV.FORMAT_DESCRIPTION) {
        this.serverVersion = buf.subarray(pos + HEADER_LEN + 2, pos + HEADER_LEN + 52).toString('latin1').replace(/\0.*$/s, '');
        this.checksum = versionAtLeast(this.serverVersion, [5, 6, 1]) && buf[ev.end - 5] === 1;
        this.fdeIndex = this.events.length;
      } else if (ev.type === EV.PREVIOUS_GTIDS) {
        this.prevGtids = GtidSet.decode(buf.subarray(pos + HEADER_LEN, bodyEnd()));
      } else if (ev.type === EV.GTID) {
        const b = buf.subarray(pos + HEADER_LEN, bodyEnd());
        ev.gtid = { key: uuidText(b.subarray(1, 17)), gno: b.readBigInt64LE(17) };
      } else if (ev.type === EV.GTID_TAGGED) {
        const g = parseGtidTagged(buf.subarray(pos + HEADER_LEN, bodyEnd()));
        const u = uuidText(g.sid);
        ev.gtid = { key: g.tag ? `${u}:${g.tag}` : u, gno: g.gno };
      } else if (ev.type === EV.ROTATE) {
        ev.rotateTo = buf.subarray(pos + HEADER_LEN + 8, bodyEnd()).toString('latin1');
      }
      // a transaction (group) starts at a GTID event of either flavour
      if (ev.type === EV.GTID || ev.type === EV.GTID_TAGGED || ev.type === EV.ANONYMOUS_GTID) inGroup = ev;
      ev.group = inGroup;
      this.events.push(ev);
      pos += len;
    }
    this.size = pos;
  }

  static load(filePath, name) {
    return new BinlogFile(name || path.basename(filePath), fs.readFileSync(filePath), filePath);
  }

  eventBytes(ev) {
    return Buffer.from(this.buf.subarray(ev.pos, ev.end));
  }

  fde() {
    return this.events[this.fdeIndex];
  }

  // the GTIDs written in this file
  gtids() {
    const s = new GtidSet();
    for (const ev of this.events) if (ev.gtid) s.add(ev.gtid.key, ev.gtid.gno);
    return s;
  }

  hasGtidEvents() {
    return this.events.some((e) => e.gtid);
  }

  hasAnonymous() {
    return this.events.some((e) => e.type === EV.ANONYMOUS_GTID);
  }

  firstGtid() {
    const ev = this.events.find((e) => e.gtid || e.type === EV.ANONYMOUS_GTID);
    return ev ? ev.gtid : null;
  }

  // positions where transactions start, after the file's header events
  groupStarts() {
    return this.events.filter((e) => e.group === e).map((e) => e.pos);
  }

  last() {
    return this.events[this.events.length - 1];
  }
}

// The file a server opens at a rotation: its FORMAT_DESCRIPTION (that of
// the previous file, timestamped like the ROTATE) and PREVIOUS_GTIDS (the
// server's executed set), as MySQL writes them.
function synthesizeNextFile(prev, name, ts, gtidExecuted, dir) {
  const fde = prev.fde();
  const fdeBytes = prev.eventBytes(fde);
  const checksum = prev.checksum;
  fdeBytes.writeUInt32LE(ts >>> 0, 0);
  fdeBytes.writeUInt32LE(4 + fdeBytes.length, 13);
  // the file is in use (open) on the source
  fdeBytes.writeUInt16LE(fdeBytes.readUInt16LE(17) | LOG_EVENT_BINLOG_IN_USE_F, 17);
  fdeBytes.writeUInt32LE(ts >>> 0, HEADER_LEN + 2 + 50);
  if (checksum) fixChecksum(fdeBytes);
  const parts = [MAGIC, fdeBytes];
  let pos = 4 + fdeBytes.length;
  if (prev.prevGtids !== null) {
    const body = gtidExecuted.encode(false);
    const len = HEADER_LEN + body.length + (checksum ? 4 : 0);
    parts.push(makeEvent(ts, EV.PREVIOUS_GTIDS, fde.serverId, pos + len, LOG_EVENT_IGNORABLE_F, body, checksum));
    pos += len;
  }
  const buf = Buffer.concat(parts);
  const file = path.join(dir, name);
  fs.writeFileSync(file, buf);
  return new BinlogFile(name, buf, file);
}

function fakeRotate(serverId, file, pos, checksum) {
  const body = Buffer.concat([Buffer.alloc(8), Buffer.from(file, 'latin1')]);
  body.writeBigUInt64LE(BigInt(pos), 0);
  return makeEvent(0, EV.ROTATE, serverId, 0, LOG_EVENT_ARTIFICIAL_F, body, checksum);
}

function heartbeat(serverId, file, pos, checksum) {
  return makeEvent(0, EV.HEARTBEAT, serverId, pos, 0, Buffer.from(file, 'latin1'), checksum);
}

// HEARTBEAT_V2: a version byte, the message size and last mandatory field
// id, then field 0 (the file name) and field 1 (the position).
function heartbeatV2(serverId, file, pos, checksum) {
  const name = Buffer.from(file, 'latin1');
  const fields = Buffer.concat([encodeVarlen(0n), encodeVarlen(BigInt(name.length)), name, encodeVarlen(1n), encodeVarlen(BigInt(pos))]);
  const tail = Buffer.concat([encodeVarlen(1n), fields]);
  let size = 1 + 1 + tail.length;
  while (1 + encodeVarlen(BigInt(size)).length + tail.length !== size) size = 1 + encodeVarlen(BigInt(size)).length + tail.length;
  const body = Buffer.concat([Buffer.from([1]), encodeVarlen(BigInt(size)), tail]);
  return makeEvent(0, EV.HEARTBEAT_V2, serverId, 0, 0, body, checksum);
}

module.exports = {
  EV,
  HEADER_LEN,
  BinlogFile,
  synthesizeNextFile,
  fakeRotate,
  heartbeat,
  heartbeatV2,
  fixChecksum,
  versionAtLeast,
  LOG_EVENT_BINLOG_IN_USE_F,
};
