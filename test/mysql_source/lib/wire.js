'use strict';
// lib/wire.js -- one client connection of the test source at the packet
// level: MySQL packets (3-byte length, sequence id, payloads of 16 MB and
// more split), an upgrade to TLS in the middle of the handshake, and the
// server's replies built with mysql2's packet classes (OK, EOF, column
// definitions, text rows) plus ERR packets with their SQLSTATE.
//
// Bytes the client sent right after its SSLRequest (the TLS ClientHello can
// come in the same read) are handed to the TLS layer: the framing is ours,
// not mysql2's PacketParser, so that nothing is parsed past the switch.

const tls = require('tls');
const { Duplex } = require('stream');
const { Packets } = require('./mysql2');

const MAX_PAYLOAD = 0xffffff;

class Wire {
  constructor(socket) {
    this.sock = socket;
    this.raw = socket;
    this.seq = 0;
    this.buf = Buffer.alloc(0);
    this.parts = [];
    this.packets = [];
    this.waiter = null;
    this.closed = false;
    this.secure = false;
    this._onData = (d) => this._feed(d);
    socket.on('data', this._onData);
    socket.on('close', () => this._close());
    socket.on('error', () => this._close());
  }

  _close() {
    if (this.closed) return;
    this.closed = true;
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = null;
      w.reject(new Error('connection closed'));
    }
    if (this.onClose) this.onClose();
  }

  _feed(d) {
    this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d;
    while (this.buf.length >= 4 && !this.paused) {
      const len = this.buf.readUIntLE(0, 3);
      if (this.buf.length < 4 + len) break;
      const seq = this.buf[3];
      const payload = Buffer.from(this.buf.subarray(4, 4 + len));
      this.buf = this.buf.subarray(4 + len);
      this.parts.push(payload);
      if (len === MAX_PAYLOAD) continue;
      const whole = this.parts.length === 1 ? this.parts[0] : Buffer.concat(this.parts);
      this.parts = [];
      this.packets.push({ seq, payload: whole });
    }
    this._deliver();
  }

  _deliver() {
    if (this.waiter && this.packets.length) {
      const w = this.waiter;
      this.waiter = null;
      w.resolve(this.packets.shift());
    }
  }

  // next client packet: {seq, payload}; the reply's sequence follows it
  read() {
    return new Promise((resolve, reject) => {
      if (this.packets.length) {
        const p = this.packets.shift();
        this.seq = (p.seq + 1) & 0xff;
        resolve(p);
        return;
      }
      if (this.closed) {
        reject(new Error('connection closed'));
        return;
      }
      this.waiter = {
        resolve: (p) => {
          this.seq = (p.seq + 1) & 0xff;
          resolve(p);
        },
        reject,
      };
    });
  }

  // write one payload as packets; resolves when the socket takes more
  write(payload) {
    if (this.closed) return Promise.resolve(false);
    const chunks = [];
    let off = 0;
    for (;;) {
      const n = Math.min(MAX_PAYLOAD, payload.length - off);
      const h = Buffer.alloc(4);
      h.writeUIntLE(n, 0, 3);
      h[3] = this.seq;
      this.seq = (this.seq + 1) & 0xff;
      chunks.push(h, payload.subarray(off, off + n));
      off += n;
      if (n < MAX_PAYLOAD) break;
    }
    const more = this.sock.write(Buffer.concat(chunks));
    if (more) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = () => {
        this.sock.removeListener('drain', done);
        this.raw.removeListener('close', done);
        resolve(!this.closed);
      };
      this.sock.once('drain', done);
      this.raw.once('close', done);
    });
  }

  // a mysql2 packet (its buffer has room for the 4-byte header)
  writePacket(p) {
    return this.write(p.buffer.subarray(4));
  }

  ok(args) {
    return this.writePacket(Packets.OK.toPacket(Object.assign({ serverStatus: 2 }, args || {}), 'utf8'));
  }

  eof() {
    return this.writePacket(Packets.EOF.toPacket(0, 2));
  }

  error(code, state, message) {
    const msg = Buffer.from(message, 'utf8');
    const b = Buffer.alloc(9 + msg.length);
    b[0] = 0xff;
    b.writeUInt16LE(code, 1);
    b.write(`#${state}`, 3, 'ascii');
    msg.copy(b, 9);
    return this.write(b);
  }

  // a text result set: columns [{name, type}] (type 'int' or 'string'), rows of strings/null
  async resultSet(columns, rows) {
    await this.writePacket(Packets.ResultSetHeader.toPacket(columns.length));
    for (const c of columns) {
      const num = c.type === 'int';
      await this.writePacket(
        Packets.ColumnDefinition.toPacket({
          catalog: 'def',
          schema: c.schema || '',
          table: c.table || '',
          orgTable: c.table || '',
          name: c.name,
          orgName: c.orgName || '',
          characterSet: num ? 63 : 255,
          columnLength: num ? 21 : 1024,
          columnType: num ? 8 : 253,
          flags: num ? 128 : 0,
          decimals: num ? 0 : 31,
        })
      );
    }
    await this.eof();
    for (const r of rows) await this.writePacket(Packets.TextRow.toPacket(r.map((v) => (v === null || v === undefined ? null : String(v))), 'utf8'));
    await this.eof();
  }

  // switch to TLS: bytes already read past the SSLRequest go to the TLS layer
  startTls(secureContext) {
    return new Promise((resolve, reject) => {
      const raw = this.raw;
      const leftover = this.buf;
      this.buf = Buffer.alloc(0);
      raw.removeListener('data', this._onData);
      const pipe = new Duplex({
        read() {
          raw.resume();
        },
        write(chunk, enc, cb) {
          raw.write(chunk, cb);
        },
        final(cb) {
          raw.end();
          cb();
        },
      });
      if (leftover.length) pipe.push(leftover);
      raw.on('data', (c) => {
        if (!pipe.push(c)) raw.pause();
      });
      raw.on('end', () => pipe.push(null));
      raw.on('close', () => pipe.destroy());
      const t = new tls.TLSSocket(pipe, { isServer: true, secureContext });
      t.once('secure', () => {
        this.secure = true;
        this.cipher = t.getCipher();
        resolve();
      });
      t.on('error', (e) => {
        this._close();
        reject(e);
      });
      t.on('data', this._onData);
      t.on('close', () => this._close());
      this.sock = t;
    });
  }

  end() {
    try {
      this.sock.end();
    } catch (e) {
      // already gone
    }
    setTimeout(() => this.raw.destroy(), 200).unref();
  }

  destroy() {
    this.raw.destroy();
    this._close();
  }
}

module.exports = { Wire };
