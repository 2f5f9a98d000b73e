'use strict';
// lib/gtid.js -- MySQL GTID sets for the test source: the text form
// ("uuid:1-5:7,uuid:tag:3", MySQL's "uuid:1-5:tag:3"), the binary form of
// PREVIOUS_GTIDS events and of COM_BINLOG_DUMP_GTID (untagged and, since
// MySQL 8.3, tagged), membership, inclusion, union.  A set is a Map from
// "uuid" or "uuid:tag" to a sorted list of [first, last] intervals (BigInt,
// inclusive).

const UUID_RE = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;

function normUuid(u) {
  const h = u.replace(/-/g, '').toLowerCase();
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

class GtidSet {
  constructor() {
    this.m = new Map();
  }

  static parse(text) {
    const s = new GtidSet();
    const body = (text || '').replace(/\s+/g, '');
    if (body === '') return s;
    for (const member of body.split(',')) {
      if (member === '') continue;
      const parts = member.split(':');
      if (!UUID_RE.test(parts[0])) throw new Error(`malformed GTID set "${text}"`);
      const uuid = normUuid(parts[0]);
      let tag = '';
      let any = false;
      for (const p of parts.slice(1)) {
        const iv = /^(\d+)(?:-(\d+))?$/.exec(p);
        if (iv) {
          const a = BigInt(iv[1]);
          const b = iv[2] !== undefined ? BigInt(iv[2]) : a;
          if (a < 1n || b < a) throw new Error(`malformed GTID interval "${p}" in "${text}"`);
          s.addInterval(tag ? `${uuid}:${tag}` : uuid, a, b);
          any = true;
        } else if (/^[a-z_][a-z0-9_]{0,31}$/i.test(p)) {
          tag = p.toLowerCase();
        } else {
          throw new Error(`malformed GTID set "${text}"`);
        }
      }
      if (!any) throw new Error(`GTID set member "${member}" has no interval`);
    }
    return s;
  }

  clone() {
    const s = new GtidSet();
    for (const [k, v] of this.m) s.m.set(k, v.map((x) => [x[0], x[1]]));
    return s;
  }

  addInterval(key, a, b) {
    const list = this.m.get(key) || [];
    list.push([a, b]);
    list.sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));
    const out = [];
    for (const iv of list) {
      const last = out[out.length - 1];
      if (last && iv[0] <= last[1] + 1n) {
        if (iv[1] > last[1]) last[1] = iv[1];
      } else out.push([iv[0], iv[1]]);
    }
    this.m.set(key, out);
  }

  add(key, gno) {
    this.addInterval(key, gno, gno);
  }

  union(other) {
    for (const [k, v] of other.m) for (const iv of v) this.addInterval(k, iv[0], iv[1]);
    return this;
  }

  contains(key, gno) {
    const list = this.m.get(key);
    if (!list) return false;
    return list.some((iv) => iv[0] <= gno && gno <= iv[1]);
  }

  // every GTID of this set is in other
  subsetOf(other) {
    for (const [k, v] of this.m) {
      const o = other.m.get(k) || [];
      for (const iv of v) if (!o.some((x) => x[0] <= iv[0] && iv[1] <= x[1])) return false;
    }
    return true;
  }

  // the members of this set for one server uuid (all tags)
  forUuid(uuid) {
    const s = new GtidSet();
    for (const [k, v] of this.m) if (k.split(':')[0] === uuid) s.m.set(k, v.map((x) => [x[0], x[1]]));
    return s;
  }

  isEmpty() {
    return this.m.size === 0;
  }

  hasTags() {
    for (const k of this.m.keys()) if (k.includes(':')) return true;
    return false;
  }

  // MySQL's text form: members sorted by uuid, untagged intervals first,
  // then each tag ("uuid:1-5:tag:1-2")
  toString() {
    const byUuid = new Map();
    for (const k of this.m.keys()) {
      const [u, t] = k.split(':');
      if (!byUuid.has(u)) byUuid.set(u, []);
      byUuid.get(u).push(t || '');
    }
    const fmt = (list) => list.map((iv) => (iv[0] === iv[1] ? `${iv[0]}` : `${iv[0]}-${iv[1]}`)).join(':');
    const out = [];
    for (const u of [...byUuid.keys()].sort()) {
      const tags = byUuid.get(u).sort();
      let text = u;
      for (const t of tags) text += t ? `:${t}:${fmt(this.m.get(`${u}:${t}`))}` : `:${fmt(this.m.get(u))}`;
      out.push(text);
    }
    return out.join(',\n');
  }

  // Binary form (Gtid_set::encode): 8-byte count of members (tagged format:
  // format byte 1, 6-byte count, format byte 1), then per member the 16-byte
  // uuid, (tagged format) the tag as a varlen length and bytes, an 8-byte
  // interval count and [start, end) pairs of 8-byte integers.
  encode(forceTagged) {
    const tagged = forceTagged || this.hasTags();
    const keys = [...this.m.keys()].sort();
    const parts = [];
    const head = Buffer.alloc(8);
    if (tagged) {
      head[0] = 1;
      head.writeUIntLE(keys.length, 1, 6);
      head[7] = 1;
    } else head.writeBigUInt64LE(BigInt(keys.length));
    parts.push(head);
    for (const k of keys) {
      const [u, t] = k.split(':');
      parts.push(Buffer.from(u.replace(/-/g, ''), 'hex'));
      if (tagged) {
        const tb = Buffer.from(t || '', 'ascii');
        parts.push(encodeVarlen(BigInt(tb.length)), tb);
      }
      const list = this.m.get(k);
      const b = Buffer.alloc(8 + 16 * list.length);
      b.writeBigUInt64LE(BigInt(list.length), 0);
      list.forEach((iv, i) => {
        b.writeBigInt64LE(iv[0], 8 + 16 * i);
        b.writeBigInt64LE(iv[1] + 1n, 16 + 16 * i);
      });
      parts.push(b);
    }
    return Buffer.concat(parts);
  }

  static decode(buf) {
    const s = new GtidSet();
    let p = 0;
    const need = (n) => {
      if (p + n > buf.length) throw new Error('encoded GTID set is truncated');
    };
    need(8);
    const tagged = buf[0] === 1 && buf[7] === 1;
    const n = tagged ? buf.readUIntLE(1, 6) : Number(buf.readBigUInt64LE(0));
    p = 8;
    if (n > buf.length) throw new Error('encoded GTID set announces too many members');
    for (let i = 0; i < n; i++) {
      need(16);
      const u = normUuid(buf.subarray(p, p + 16).toString('hex'));
      p += 16;
      let key = u;
      if (tagged) {
        const [len, used] = decodeVarlen(buf, p);
        p += used;
        need(Number(len));
        const tag = buf.subarray(p, p + Number(len)).toString('ascii');
        p += Number(len);
        if (tag) key = `${u}:${tag}`;
      }
      need(8);
      const ni = Number(buf.readBigUInt64LE(p));
      p += 8;
      if (ni > buf.length) throw new Error('encoded GTID set announces too many intervals');
      for (let k = 0; k < ni; k++) {
        need(16);
        const a = buf.readBigInt64LE(p);
        const e = buf.readBigInt64LE(p + 8);
        p += 16;
        if (a < 1n || e <= a) throw new Error('encoded GTID set has an empty interval');
        s.addInterval(key, a, e - 1n);
      }
    }
    return s;
  }
}

// MySQL's variable-length integers (the serialization library of tagged
// GTIDs): the number of trailing one bits of the first byte is the number of
// bytes that follow; the value sits above those bits, little endian.
function encodeVarlen(v) {
  for (let extra = 0; extra < 8; extra++) {
    if (v < 1n << BigInt(7 * (extra + 1))) {
      const x = (v << BigInt(extra + 1)) | ((1n << BigInt(extra)) - 1n);
      const b = Buffer.alloc(extra + 1);
      for (let i = 0; i <= extra; i++) b[i] = Number((x >> BigInt(8 * i)) & 0xffn);
      return b;
    }
  }
  const b = Buffer.alloc(9);
  b[0] = 0xff;
  b.writeBigUInt64LE(v, 1);
  return b;
}

function decodeVarlen(buf, p) {
  if (p >= buf.length) throw new Error('varlen integer is truncated');
  const first = buf[p];
  let extra = 0;
  while (extra < 8 && (first >> extra) & 1) extra++;
  if (extra === 8) {
    if (p + 9 > buf.length) throw new Error('varlen integer is truncated');
    return [buf.readBigUInt64LE(p + 1), 9];
  }
  if (p + 1 + extra > buf.length) throw new Error('varlen integer is truncated');
  let v = 0n;
  for (let i = 0; i <= extra; i++) v |= BigInt(buf[p + i]) << BigInt(8 * i);
  return [v >> BigInt(extra + 1), extra + 1];
}

module.exports = { GtidSet, encodeVarlen, decodeVarlen, normUuid };
