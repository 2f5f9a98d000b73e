'use strict';
// lib/auth.js -- the connection phase of the test source as MySQL 8.0/8.4
// run it: the HandshakeV10 greeting (server version, 20-byte scramble,
// caching_sha2_password as the default plugin), an optional SSLRequest and
// switch to TLS, the HandshakeResponse (parsed with mysql2), an
// AuthSwitchRequest when the account's plugin is not the one the client
// answered with, and the plugins:
//   mysql_native_password   SHA1(pw) XOR SHA1(scramble + SHA1(SHA1(pw)))
//   caching_sha2_password   fast path: XOR(SHA256(pw), SHA256(SHA256(SHA256(pw)) + scramble))
//                           checked against the server's cache of
//                           SHA256(SHA256(pw)), answered 0x01 0x03; else
//                           0x01 0x04 (full authentication): the password in
//                           clear over TLS, or over plain TCP encrypted with
//                           the server's RSA key (OAEP), XORed with the
//                           scramble, after an optional public key request
//                           (0x02, answered 0x01 + PEM).  A full
//                           authentication fills the cache.
// Each connection's path ("native", "sha2-fast", "sha2-full-tls",
// "sha2-full-rsa", with "rsa-key-sent") is logged for the tests.

const crypto = require('crypto');
const { Packet, HandshakeResponse, auth41 } = require('./mysql2');

const CLIENT = {
  LONG_PASSWORD: 1,
  FOUND_ROWS: 2,
  LONG_FLAG: 4,
  CONNECT_WITH_DB: 8,
  NO_SCHEMA: 16,
  ODBC: 64,
  LOCAL_FILES: 128,
  IGNORE_SPACE: 256,
  PROTOCOL_41: 512,
  INTERACTIVE: 1024,
  SSL: 2048,
  IGNORE_SIGPIPE: 4096,
  TRANSACTIONS: 8192,
  RESERVED: 16384,
  SECURE_CONNECTION: 32768,
  MULTI_STATEMENTS: 1 << 16,
  MULTI_RESULTS: 1 << 17,
  PS_MULTI_RESULTS: 1 << 18,
  PLUGIN_AUTH: 1 << 19,
  CONNECT_ATTRS: 1 << 20,
  PLUGIN_AUTH_LENENC_CLIENT_DATA: 1 << 21,
  CAN_HANDLE_EXPIRED_PASSWORDS: 1 << 22,
};

function sha256(...parts) {
  const h = crypto.createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
}

function xor(a, b) {
  const out = Buffer.alloc(a.length);
  for (let i = 0; i < a.length; i++) out[i] = a[i] ^ b[i % b.length];
  return out;
}

// 20 printable bytes, never NUL (MySQL's salt has no zero byte)
function makeScramble() {
  const r = crypto.randomBytes(20);
  for (let i = 0; i < 20; i++) r[i] = 0x21 + (r[i] % 94);
  return r;
}

function serverCapabilities(tlsAvailable) {
  let caps = 0;
  for (const k of Object.keys(CLIENT)) if (k !== 'SSL') caps |= CLIENT[k];
  if (tlsAvailable) caps |= CLIENT.SSL;
  return caps >>> 0;
}

function greeting(version, connId, scramble, caps, plugin) {
  const v = Buffer.from(version, 'latin1');
  const name = Buffer.from(plugin, 'latin1');
  const b = Buffer.alloc(1 + v.length + 1 + 4 + 8 + 1 + 2 + 1 + 2 + 2 + 1 + 10 + 13 + name.length + 1);
  let p = 0;
  b[p++] = 10;
  v.copy(b, p);
  p += v.length + 1;
  b.writeUInt32LE(connId, p);
  p += 4;
  scramble.copy(b, p, 0, 8);
  p += 8 + 1;
  b.writeUInt16LE(caps & 0xffff, p);
  p += 2;
  b[p++] = 255; // utf8mb4_0900_ai_ci
  b.writeUInt16LE(2, p); // SERVER_STATUS_AUTOCOMMIT
  p += 2;
  b.writeUInt16LE(caps >>> 16, p);
  p += 2;
  b[p++] = 21;
  p += 10;
  scramble.copy(b, p, 8, 20);
  p += 13;
  name.copy(b, p);
  return b;
}

function accessDenied(user, host, withPassword) {
  return {
    code: 1045,
    state: '28000',
    message: `Access denied for user '${user}'@'${host}' (using password: ${withPassword ? 'YES' : 'NO'})`,
  };
}

// Run the connection phase; resolves to the authenticated account or null
// (an ERR packet was sent).
async function authenticate(wire, ctx) {
  const { config, log, connId } = ctx;
  const host = wire.raw.remoteAddress ? wire.raw.remoteAddress.replace(/^::ffff:/, '') : 'localhost';
  const scramble = makeScramble();
  const tlsAvailable = !!ctx.secureContext;
  const caps = serverCapabilities(tlsAvailable);
  const defaultPlugin = config.default_auth || 'caching_sha2_password';
  wire.seq = 0;
  await wire.write(greeting(config.version, connId, scramble, caps, defaultPlugin));

  let pkt = await wire.read();
  let clientCaps = pkt.payload.length >= 4 ? pkt.payload.readUInt32LE(0) : 0;
  if (pkt.payload.length === 32 && clientCaps & CLIENT.SSL) {
    if (!tlsAvailable) {
      await wire.error(1043, '08S01', 'Bad handshake');
      return null;
    }
    await wire.startTls(ctx.secureContext);
    pkt = await wire.read();
    clientCaps = pkt.payload.readUInt32LE(0);
  }
  const framed = Buffer.concat([Buffer.alloc(4), pkt.payload]);
  const resp = HandshakeResponse.fromPacket(new Packet(pkt.seq, framed, 0, framed.length), caps);
  const user = (config.users || []).find((u) => u.user === resp.user);
  const entry = { event: 'connect', conn: connId, user: resp.user, tls: wire.secure, client_plugin: resp.authPluginName || '' };
  if (wire.secure) entry.cipher = wire.cipher && wire.cipher.name;
  if (!user) {
    log(Object.assign(entry, { result: 'unknown user' }));
    const e = accessDenied(resp.user, host, resp.authToken && resp.authToken.length > 0);
    await wire.error(e.code, e.state, e.message);
    return null;
  }
  if (config.require_secure_transport && !wire.secure) {
    log(Object.assign(entry, { result: 'insecure transport refused' }));
    await wire.error(3159, 'HY000', 'Connections using insecure transport are prohibited while --require_secure_transport=ON.');
    return null;
  }
  const plugin = user.plugin || defaultPlugin;
  let token = resp.authToken || Buffer.alloc(0);
  if ((resp.authPluginName || 'mysql_native_password') !== plugin) {
    entry.auth_switch = plugin;
    const name = Buffer.from(plugin, 'latin1');
    await wire.write(Buffer.concat([Buffer.from([0xfe]), name, Buffer.from([0]), scramble, Buffer.from([0])]));
    token = (await wire.read()).payload;
  }
  const password = user.password || '';
  let okPath = null;
  if (plugin === 'mysql_native_password') {
    if (password === '') okPath = token.length === 0 ? 'native' : null;
    else if (token.length === 20 && auth41.verifyToken(scramble.subarray(0, 8), scramble.subarray(8, 20), token, auth41.doubleSha1(password)))
      okPath = 'native';
  } else if (plugin === 'caching_sha2_password') {
    okPath = await cachingSha2(wire, ctx, user, scramble, token, entry);
  } else {
    log(Object.assign(entry, { result: `plugin ${plugin} not supported by the test source` }));
    await wire.error(1524, 'HY000', `Plugin '${plugin}' is not loaded`);
    return null;
  }
  if (!okPath) {
    log(Object.assign(entry, { result: 'denied' }));
    const e = accessDenied(resp.user, host, token.length > 0);
    await wire.error(e.code, e.state, e.message);
    return null;
  }
  log(Object.assign(entry, { result: 'ok', auth: okPath }));
  await wire.ok();
  return { user, host, clientCaps, database: resp.database };
}

async function cachingSha2(wire, ctx, user, scramble, token, entry) {
  const password = user.password || '';
  if (token.length === 0) return password === '' ? 'sha2-empty' : null;
  if (token.length !== 32) return null;
  const cached = ctx.sha2Cache.get(user.user);
  if (cached) {
    const stage1 = xor(token, sha256(cached, scramble));
    if (sha256(stage1).equals(cached)) {
      await wire.write(Buffer.from([0x01, 0x03]));
      return 'sha2-fast';
    }
  }
  await wire.write(Buffer.from([0x01, 0x04]));
  let p = (await wire.read()).payload;
  let clear;
  let how;
  if (wire.secure) {
    if (p.length === 0 || p[p.length - 1] !== 0) return null;
    clear = p.subarray(0, p.length - 1).toString('utf8');
    how = 'sha2-full-tls';
  } else {
    if (p.length === 1 && p[0] === 0x02) {
      entry.rsa_key_sent = true;
      await wire.write(Buffer.concat([Buffer.from([0x01]), Buffer.from(ctx.rsa.publicPem, 'latin1')]));
      p = (await wire.read()).payload;
    }
    let plain;
    try {
      plain = crypto.privateDecrypt({ key: ctx.rsa.privateKey, padding: crypto.constants.RSA_PKCS1_OAEP_PADDING }, p);
    } catch (e) {
      entry.rsa_error = e.message;
      return null;
    }
    const x = xor(plain, scramble);
    if (x.length === 0 || x[x.length - 1] !== 0) return null;
    clear = x.subarray(0, x.length - 1).toString('utf8');
    how = 'sha2-full-rsa';
  }
  if (clear !== password) return null;
  ctx.sha2Cache.set(user.user, sha256(sha256(Buffer.from(password, 'utf8'))));
  return how;
}

module.exports = { authenticate, CLIENT };
