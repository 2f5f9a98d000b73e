'use strict';
// lib/mysql2.js -- the parts of npm's mysql2 (pinned in package-lock.json)
// the test source builds on: its packet classes (OK, EOF, result set
// header, column definitions, text rows, the HandshakeResponse parser) and
// its mysql_native_password check.  mysql2 exports only its client API, so
// they are loaded by file from the package's directory.

const path = require('path');

const root = path.dirname(require.resolve('mysql2'));
const load = (p) => require(path.join(root, p));

module.exports = {
  Packets: load('lib/packets/index.js'),
  Packet: load('lib/packets/packet.js'),
  HandshakeResponse: load('lib/packets/handshake_response.js'),
  auth41: load('lib/auth_41.js'),
};
