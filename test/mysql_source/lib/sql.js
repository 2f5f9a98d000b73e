'use strict';
// lib/sql.js -- the statements a replica and binlog_fdw send to a MySQL
// source, answered as MySQL 8.0 or 8.4 answers them: SELECT of system and
// user variables (@@version, @@global.gtid_executed, @master_binlog_checksum,
// ...), SET of user and session variables, SHOW GRANTS, SHOW BINARY LOGS,
// SHOW BINARY LOG STATUS (8.2+) / SHOW MASTER STATUS (gone in 8.4),
// SHOW REPLICAS (8.0.22+) / SHOW SLAVE HOSTS (gone in 8.4), privileges
// (REPLICATION SLAVE, REPLICATION CLIENT) with MySQL's error 1227, and
// information_schema.COLUMNS / TABLES / SCHEMATA from the instance's configured schema,
// and what a copy (binlog_fdw.snapshot()) reads: LOCK TABLES ... READ /
// UNLOCK TABLES (held per connection: the query log shows who holds what),
// FLUSH TABLES WITH READ LOCK (RELOAD), START TRANSACTION WITH CONSISTENT
// SNAPSHOT, the definition digest, the columns and indexes queries, and the
// rows of the configured tables (config "rows": {db: {table: [{col: value}]}}).
// Anything else is a syntax error (1064), as a statement the test source
// does not know must not pass unnoticed.
//
// A query is answered with {columns, rows}, {ok}, or {error: [code, state, message]}.

const crypto = require('crypto');
const { versionAtLeast } = require('./binlog');

function syntaxError(near) {
  return { error: [1064, '42000', `You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use near '${near}' at line 1`] };
}

function denied(privs) {
  return { error: [1227, '42000', `Access denied; you need (at least one of) the ${privs} privilege(s) for this operation`] };
}

function hasPriv(account, name) {
  const g = (account.user.grants || []).map((x) => x.toUpperCase());
  return g.includes('ALL PRIVILEGES') || g.includes(name);
}

// split on commas outside quotes and parentheses
function splitTop(s) {
  const out = [];
  let depth = 0;
  let q = null;
  let cur = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (q) {
      cur += c;
      if (c === '\\' && q !== '`') {
        cur += s[++i] || '';
      } else if (c === q) {
        if (s[i + 1] === q) cur += s[++i];
        else q = null;
      }
      continue;
    }
    if (c === "'" || c === '"' || c === '`') q = c;
    else if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      out.push(cur.trim());
      cur = '';
      continue;
    }
    cur += c;
  }
  if (cur.trim() !== '') out.push(cur.trim());
  return out;
}

function unquote(lit) {
  const q = lit[0];
  let out = '';
  for (let i = 1; i < lit.length - 1; i++) {
    const c = lit[i];
    if (c === '\\' && q !== '`') {
      const n = lit[++i];
      out += { n: '\n', t: '\t', r: '\r', 0: '\0', Z: '\x1a' }[n] || n;
    } else if (c === q && lit[i + 1] === q) {
      out += q;
      i++;
    } else out += c;
  }
  return out;
}

class Session {
  constructor(server, account, connId) {
    this.server = server;
    this.account = account;
    this.connId = connId;
    this.userVars = new Map();
    this.sessionVars = new Map();
  }

  get cfg() {
    return this.server.config;
  }

  is84() {
    return this.server.flavor === '8.4';
  }

  sysvar(nameIn, scope) {
    const name = nameIn.toLowerCase();
    if (scope !== 'global' && this.sessionVars.has(name)) return this.sessionVars.get(name);
    const v = this.server.sysvars();
    if (!(name in v)) return undefined;
    return v[name];
  }

  // value of one SELECT item, or {error}
  evalExpr(exprIn) {
    const expr = exprIn.trim();
    let m;
    if ((m = /^(.*?)\s*(<=>|=)\s*(.*)$/s.exec(expr)) && !/^'/.test(expr)) {
      const a = this.evalExpr(m[1]);
      const b = this.evalExpr(m[3]);
      if (a && a.error) return a;
      if (b && b.error) return b;
      if (m[2] === '=' && (a.value === null || b.value === null)) return { value: null };
      return { value: String(a.value) === String(b.value) ? 1 : 0, type: 'int' };
    }
    if ((m = /^@@(?:(global|session|local)\.)?([a-z_0-9]+)$/i.exec(expr))) {
      const scope = (m[1] || '').toLowerCase();
      const v = this.sysvar(m[2], scope);
      if (v === undefined) return { error: [1193, 'HY000', `Unknown system variable '${m[2]}'`] };
      return { value: v, type: typeof v === 'number' ? 'int' : 'string' };
    }
    if ((m = /^@([a-z_0-9$.]+)$/i.exec(expr))) {
      const key = m[1].toLowerCase();
      return { value: this.userVars.has(key) ? this.userVars.get(key) : null };
    }
    if (/^-?\d+$/.test(expr)) return { value: Number(expr), type: 'int' };
    if (/^'.*'$/s.test(expr) || /^".*"$/s.test(expr)) return { value: unquote(expr) };
    if (/^null$/i.test(expr)) return { value: null };
    if (/^version\(\)$/i.test(expr)) return { value: this.cfg.version };
    if (/^connection_id\(\)$/i.test(expr)) return { value: this.connId, type: 'int' };
    if (/^(current_user|current_user\(\))$/i.test(expr)) return { value: `${this.account.user.user}@${this.account.user.host || '%'}` };
    if (/^(user|session_user|system_user)\(\)$/i.test(expr)) return { value: `${this.account.user.user}@${this.account.host}` };
    if (/^database\(\)$/i.test(expr)) return { value: this.account.database || null };
    if (/^unix_timestamp\(\)$/i.test(expr)) return { value: Math.floor(Date.now() / 1000), type: 'int' };
    return { error: syntaxError(expr).error };
  }

  select(list) {
    const columns = [];
    const row = [];
    for (const item of splitTop(list)) {
      let expr = item;
      let name = item;
      const m = /^(.*?)\s+as\s+(`[^`]+`|'[^']+'|[a-z_0-9]+)$/is.exec(item);
      if (m) {
        expr = m[1];
        name = /^[`']/.test(m[2]) ? unquote(m[2]) : m[2];
      }
      const v = this.evalExpr(expr);
      if (v.error) return { error: v.error };
      columns.push({ name, type: v.type || 'string' });
      row.push(v.value);
    }
    return { columns, rows: [row] };
  }

  set(list) {
    for (const item of splitTop(list)) {
      let m;
      if ((m = /^@([a-z_0-9$.]+)\s*:?=\s*(.*)$/is.exec(item))) {
        const v = this.evalExpr(m[2]);
        if (v.error) return { error: v.error };
        this.userVars.set(m[1].toLowerCase(), v.value);
      } else if ((m = /^(?:(global|persist|@@global\.)\s*)([a-z_0-9]+)\s*=\s*(.*)$/is.exec(item))) {
        if (!hasPriv(this.account, 'SUPER') && !hasPriv(this.account, 'SYSTEM_VARIABLES_ADMIN'))
          return denied('SUPER or SYSTEM_VARIABLES_ADMIN');
        return { error: [1238, 'HY000', `Variable '${m[2]}' is a read only variable in this test source`] };
      } else if ((m = /^(?:session\s+|local\s+|@@session\.|@@local\.|@@)?([a-z_0-9]+)\s*=\s*(.*)$/is.exec(item))) {
        const name = m[1].toLowerCase();
        if (name === 'names' || name === 'character') continue;
        if (this.server.sysvars()[name] === undefined && !SESSION_ONLY.has(name))
          return { error: [1193, 'HY000', `Unknown system variable '${m[1]}'`] };
        const v = this.evalExpr(m[2]);
        this.sessionVars.set(name, v.error ? m[2].replace(/^'|'$/g, '') : v.value);
      } else if (/^names\s/i.test(item) || /^character\s+set\s/i.test(item) || /^(session\s+)?transaction\s/i.test(item)) {
        continue;
      } else return syntaxError(item);
    }
    return { ok: true };
  }

  show(rest) {
    const s = rest.replace(/\s+/g, ' ').trim();
    const up = s.toUpperCase();
    const cfg = this.cfg;
    const srv = this.server;
    let m;
    if ((m = /^GRANTS(?: FOR (.*))?$/i.exec(s))) {
      const u = this.account.user;
      const who = `\`${u.user}\`@\`${u.host || '%'}\``;
      const grants = u.grants && u.grants.length ? u.grants.join(', ') : 'USAGE';
      return { columns: [{ name: `Grants for ${u.user}@${u.host || '%'}` }], rows: [[`GRANT ${grants} ON *.* TO ${who}`]] };
    }
    if (up === 'BINARY LOGS' || (!this.is84() && up === 'MASTER LOGS')) {
      if (!hasPriv(this.account, 'REPLICATION CLIENT') && !hasPriv(this.account, 'SUPER')) return denied('SUPER, REPLICATION CLIENT');
      return {
        columns: [{ name: 'Log_name' }, { name: 'File_size', type: 'int' }, { name: 'Encrypted' }],
        rows: srv.files.map((f) => [f.name, srv.visibleSize(f), 'No']),
      };
    }
    const status = up === 'BINARY LOG STATUS' ? versionAtLeast(cfg.version, [8, 2, 0]) : up === 'MASTER STATUS' ? !this.is84() : null;
    if (status !== null) {
      if (!status) return syntaxError(up === 'MASTER STATUS' ? 'MASTER STATUS' : 'LOG STATUS');
      if (!hasPriv(this.account, 'REPLICATION CLIENT') && !hasPriv(this.account, 'SUPER')) return denied('SUPER, REPLICATION CLIENT');
      const last = srv.files[srv.files.length - 1];
      return {
        columns: [{ name: 'File' }, { name: 'Position', type: 'int' }, { name: 'Binlog_Do_DB' }, { name: 'Binlog_Ignore_DB' }, { name: 'Executed_Gtid_Set' }],
        rows: [[last.name, srv.visibleSize(last), '', '', srv.gtidExecuted().toString()]],
      };
    }
    if (up === 'REPLICAS' || up === 'SLAVE HOSTS') {
      if (up === 'REPLICAS' && !versionAtLeast(cfg.version, [8, 0, 22])) return syntaxError('REPLICAS');
      if (up === 'SLAVE HOSTS' && this.is84()) return syntaxError('SLAVE HOSTS');
      if (!hasPriv(this.account, 'REPLICATION SLAVE')) return denied('REPLICATION SLAVE');
      const names = up === 'REPLICAS' ? ['Server_Id', 'Host', 'Port', 'Source_Id', 'Replica_UUID'] : ['Server_id', 'Host', 'Port', 'Master_id', 'Slave_UUID'];
      return {
        columns: names.map((n, i) => ({ name: n, type: i === 0 || i === 2 || i === 3 ? 'int' : 'string' })),
        rows: srv.replicaList().map((r) => [r.server_id, r.host || '', r.port || 3306, cfg.server_id, r.uuid || '']),
      };
    }
    if ((m = /^(?:(GLOBAL|SESSION) )?VARIABLES(?: LIKE '(.*)')?$/i.exec(s))) {
      const like = m[2] !== undefined ? new RegExp(`^${m[2].replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/%/g, '.*').replace(/_/g, '.')}$`, 'i') : null;
      const v = srv.sysvars();
      const rows = Object.keys(v)
        .sort()
        .filter((k) => !like || like.test(k))
        .map((k) => [k, v[k]]);
      return { columns: [{ name: 'Variable_name' }, { name: 'Value' }], rows };
    }
    if (/^(GLOBAL |SESSION )?STATUS( LIKE .*)?$/i.test(s)) return { columns: [{ name: 'Variable_name' }, { name: 'Value' }], rows: [] };
    return syntaxError(s.split(' ').slice(0, 2).join(' '));
  }

  // SELECT ... FROM information_schema.COLUMNS | TABLES | SCHEMATA WHERE a = 'x' AND ...
  infoSchema(list, from, where) {
    const tm = /^information_schema\.(columns|tables|schemata)(?:\s+(?:as\s+)?([a-z_]+))?$/i.exec(from.trim());
    if (!tm) return null;
    const table = tm[1].toUpperCase();
    const conds = {};
    const notIn = {};
    if (where) {
      for (const c of where.split(/\s+and\s+/i)) {
        const n = /^(?:[a-z_]+\.)?([a-z_]+)\s+not\s+in\s*\((.*)\)$/is.exec(c.trim());
        if (n) {
          // col NOT IN ('a', 'b', ...): the system schemas a client skips
          const list = (n[2].match(/'(?:[^'\\]|\\.|'')*'/g) || []).map(unquote);
          notIn[n[1].toUpperCase()] = list;
          continue;
        }
        const m = /^(?:[a-z_]+\.)?([a-z_]+)\s*=\s*('(?:[^'\\]|\\.|'')*')$/is.exec(c.trim());
        if (!m) return syntaxError(c.trim());
        conds[m[1].toUpperCase()] = unquote(m[2]);
      }
    }
    const schema = this.cfg.schema || {};
    const rows = [];
    for (const db of Object.keys(schema)) {
      if (table === 'SCHEMATA') rows.push({ CATALOG_NAME: 'def', SCHEMA_NAME: db, DEFAULT_CHARACTER_SET_NAME: 'utf8mb4', DEFAULT_COLLATION_NAME: 'utf8mb4_0900_ai_ci' });
      for (const t of Object.keys(schema[db])) {
        const cols = schema[db][t];
        if (table === 'SCHEMATA') continue;
        if (table === 'TABLES') rows.push({ TABLE_SCHEMA: db, TABLE_NAME: t, TABLE_TYPE: 'BASE TABLE', ENGINE: 'InnoDB', TABLE_ROWS: 0, TABLE_COLLATION: 'utf8mb4_0900_ai_ci' });
        else
          cols.forEach((c, i) => {
            rows.push({
              TABLE_CATALOG: 'def',
              TABLE_SCHEMA: db,
              TABLE_NAME: t,
              COLUMN_NAME: c.name,
              ORDINAL_POSITION: i + 1,
              COLUMN_DEFAULT: c.default === undefined ? null : c.default,
              IS_NULLABLE: c.nullable === false ? 'NO' : 'YES',
              DATA_TYPE: c.data_type,
              COLUMN_TYPE: c.column_type || c.data_type,
              CHARACTER_SET_NAME: c.charset === undefined ? null : c.charset,
              COLLATION_NAME: c.collation === undefined ? null : c.collation,
              COLUMN_KEY: c.key || '',
              EXTRA: c.extra || '',
              GENERATION_EXPRESSION: '',
              NUMERIC_PRECISION: c.numeric_precision === undefined ? null : c.numeric_precision,
              NUMERIC_SCALE: c.numeric_scale === undefined ? null : c.numeric_scale,
              DATETIME_PRECISION: c.datetime_precision === undefined ? null : c.datetime_precision,
              CHARACTER_MAXIMUM_LENGTH: c.max_length === undefined ? null : c.max_length,
            });
          });
      }
    }
    const picked = rows.filter((r) => Object.keys(conds).every((k) => String(r[k]) === conds[k]) && Object.keys(notIn).every((k) => !notIn[k].includes(String(r[k]))));
    const items = splitTop(list);
    const columns = [];
    const getters = [];
    for (const it of items) {
      const m = /^(lower|upper)?\(?\s*(?:[a-z_]+\.)?([a-z_]+)\s*\)?$/i.exec(it);
      if (!m) return syntaxError(it);
      const col = m[2].toUpperCase();
      if (picked.length && !(col in picked[0]) && rows.length && !(col in rows[0])) return { error: [1054, '42S22', `Unknown column '${m[2]}' in 'field list'`] };
      const fn = (m[1] || '').toLowerCase();
      columns.push({ name: m[1] ? it : col });
      getters.push((r) => {
        const v = r[col];
        if (v === null || v === undefined) return null;
        return fn === 'lower' ? String(v).toLowerCase() : fn === 'upper' ? String(v).toUpperCase() : v;
      });
    }
    return { columns, rows: picked.map((r) => getters.map((g) => g(r))) };
  }

  tableCols(db, table) {
    const schema = this.cfg.schema || {};
    return schema[db] && schema[db][table] ? schema[db][table] : null;
  }

  who() {
    return `'${this.account.user.user}'@'${this.account.host || '%'}'`;
  }

  // LOCK TABLES a READ, b READ: MySQL's privileges and errors; the lock is
  // this connection's until UNLOCK TABLES, another LOCK TABLES or its end
  lockTables(list) {
    const id = '`(?:[^`]|``)+`|[a-z_0-9$]+';
    const names = [];
    for (const item of splitTop(list)) {
      const m = new RegExp(`^(${id})\\.(${id})\\s+read(?:\\s+local)?$`, 'is').exec(item);
      if (!m) return syntaxError(item);
      const name = (x) => (x[0] === '`' ? unquote(x) : x);
      if (names.some(([d, t]) => d === name(m[1]) && t === name(m[2]))) return { error: [1066, '42000', `Not unique table/alias: '${name(m[2])}'`] };
      names.push([name(m[1]), name(m[2])]);
    }
    this.server.unlock(this.connId);
    for (const [db, t] of names) {
      if (!hasPriv(this.account, 'LOCK TABLES')) return { error: [1044, '42000', `Access denied for user ${this.who()} to database '${db}'`] };
      if (!hasPriv(this.account, 'SELECT')) return { error: [1142, '42000', `SELECT command denied to user ${this.who()} for table '${t}'`] };
      if (!this.tableCols(db, t)) return { error: [1146, '42S02', `Table '${db}.${t}' doesn't exist`] };
      if ((this.cfg.busy_tables || []).includes(`${db}.${t}`)) return { error: [1205, 'HY000', 'Lock wait timeout exceeded; try restarting transaction'] };
    }
    this.server.lock(this.connId, names.map(([db, t]) => `${db}.${t}`));
    return { ok: true };
  }

  // the statements of a copy about the configured tables, or null
  copyQuery(sql) {
    const lit = "'((?:[^'\\\\]|\\\\.)*)'";
    let m;
    if (/^select md5\(concat_ws\(/i.test(sql)) {
      m = new RegExp(`TABLE_SCHEMA = ${lit} AND TABLE_NAME = ${lit}`, 'i').exec(sql);
      const cols = m ? this.tableCols(unquote(`'${m[1]}'`), unquote(`'${m[2]}'`)) : null;
      const digest = crypto.createHash('md5').update(cols ? JSON.stringify(cols) : '').digest('hex');
      return { columns: [{ name: 'digest' }], rows: [[digest]] };
    }
    if (/^select c\.column_name, .* from information_schema\.columns c left join information_schema\.statistics k /is.test(sql)) {
      m = new RegExp(`where c\\.TABLE_SCHEMA = ${lit} AND c\\.TABLE_NAME = ${lit}`, 'i').exec(sql);
      if (!m) return syntaxError(sql.slice(0, 40));
      const cols = this.tableCols(unquote(`'${m[1]}'`), unquote(`'${m[2]}'`)) || [];
      let seq = 0;
      const rows = cols.map((c) => [c.name, c.column_type || c.data_type, c.data_type.toLowerCase(), c.nullable === false ? 'NO' : 'YES',
        c.default === undefined ? null : c.default, c.key === 'PRI' ? ++seq : 0, c.extra || '',
        c.charset === undefined ? null : c.charset, c.octet_length === undefined ? null : c.octet_length]);
      const names = ['COLUMN_NAME', 'COLUMN_TYPE', 'LOWER(c.DATA_TYPE)', 'IS_NULLABLE', 'COLUMN_DEFAULT', 'SEQ', 'EXTRA', 'CHARACTER_SET_NAME', 'CHARACTER_OCTET_LENGTH'];
      return { columns: names.map((n) => ({ name: n })), rows };
    }
    // the copy's check for foreign keys whose actions change rows: none here
    if (/^select constraint_name, referenced_table_name, delete_rule, update_rule from information_schema\.referential_constraints /is.test(sql))
      return { columns: ['CONSTRAINT_NAME', 'REFERENCED_TABLE_NAME', 'DELETE_RULE', 'UPDATE_RULE'].map((n) => ({ name: n })), rows: [] };
    if (/^select index_name, non_unique, column_name, sub_part, upper\(index_type\), collation from information_schema\.statistics /is.test(sql))
      return { columns: ['INDEX_NAME', 'NON_UNIQUE', 'COLUMN_NAME', 'SUB_PART', 'INDEX_TYPE', 'COLLATION'].map((n) => ({ name: n })), rows: [] };
    const id = '`(?:[^`]|``)+`';
    // a chunk of a load: WHERE ((`key` > N)) ORDER BY `key` LIMIT n
    m = new RegExp(`^select\\s+(.*?)\\s+from\\s+(${id})\\.(${id})(?:\\s+where\\s+\\(+(${id})\\s*>\\s*(-?\\d+)\\)+)?(?:\\s+order\\s+by\\s+(.*?))?(?:\\s+limit\\s+(\\d+))?$`, 'is').exec(sql);
    if (!m) return null;
    const db = unquote(m[2]);
    const t = unquote(m[3]);
    if (!this.tableCols(db, t)) return { error: [1146, '42S02', `Table '${db}.${t}' doesn't exist`] };
    if (!hasPriv(this.account, 'SELECT')) return { error: [1142, '42000', `SELECT command denied to user ${this.who()} for table '${t}'`] };
    const picked = splitTop(m[1]).map((item) => {
      const q = new RegExp(id).exec(item);
      return q ? unquote(q[0]) : null;
    });
    if (picked.includes(null)) return syntaxError(m[1]);
    let rows = ((this.cfg.rows || {})[db] || {})[t] || [];
    if (m[4]) {
      const k = unquote(m[4]);
      rows = rows.filter((r) => r[k] !== null && r[k] > Number(m[5]));
    }
    if (m[6]) {
      const keys = splitTop(m[6]).map((k) => unquote(k.trim()));
      rows = [...rows].sort((a, b) => {
        for (const k of keys) if (a[k] !== b[k]) return a[k] < b[k] ? -1 : 1;
        return 0;
      });
    }
    if (m[7]) rows = rows.slice(0, Number(m[7]));
    return { columns: picked.map((n) => ({ name: n })), rows: rows.map((r) => picked.map((n) => (r[n] === undefined ? null : r[n]))) };
  }

  query(sqlIn) {
    const sql = sqlIn.trim().replace(/;\s*$/, '');
    let m;
    if ((m = /^lock\s+tables?\s+(.*)$/is.exec(sql))) return this.lockTables(m[1]);
    if (/^unlock\s+tables$/i.test(sql)) {
      this.server.unlock(this.connId);
      return { ok: true };
    }
    if (/^flush\s+tables\s+with\s+read\s+lock$/i.test(sql) && !hasPriv(this.account, 'RELOAD')) return denied('RELOAD');
    const copy = this.copyQuery(sql);
    if (copy) return copy;
    if ((m = /^select\s+(.*?)\s+from\s+(\S+(?:\s+(?!where\b|order\b)[a-z_]+)?)(?:\s+where\s+(.*?))?(?:\s+order\s+by\s+.*)?$/is.exec(sql))) {
      const r = this.infoSchema(m[1], m[2], m[3]);
      if (r) return r;
      return { error: [1146, '42S02', `Table '${m[2].trim()}' doesn't exist`] };
    }
    if ((m = /^select\s+(.*)$/is.exec(sql))) return this.select(m[1]);
    if ((m = /^set\s+(.*)$/is.exec(sql))) return this.set(m[1]);
    if ((m = /^show\s+(.*)$/is.exec(sql))) return this.show(m[1]);
    if (/^(begin|commit|rollback|start\s+transaction\b.*|unlock\s+tables|flush\s+tables.*)$/is.test(sql)) return { ok: true };
    if ((m = /^kill\s+(?:connection\s+|query\s+)?(\d+)$/i.exec(sql))) {
      if (!this.server.killConnection(Number(m[1]))) return { error: [1094, 'HY000', `Unknown thread id: ${m[1]}`] };
      return { ok: true };
    }
    return syntaxError(sql.split(/\s+/).slice(0, 3).join(' '));
  }
}

const SESSION_ONLY = new Set(['group_concat_max_len', 'lock_wait_timeout', 'net_write_timeout', 'net_read_timeout', 'wait_timeout', 'time_zone', 'sql_mode', 'autocommit', 'transaction_isolation', 'interactive_timeout', 'sql_log_bin']);

module.exports = { Session };
