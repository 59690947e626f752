// Idle and slow clients on the PostgreSQL and MySQL wire ports: a flood of
// sockets that send nothing, or a few bytes and then nothing, does not shut
// the port for a real client. At maxConnections a newcomer takes the place
// of the connection idle the longest that has nothing in flight and holds
// nothing of its client's (a transaction block); only when every
// connection is busy is a newcomer dropped. Ports 28400-28499.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import pg from 'pg';
import mysql from 'mysql2/promise';
import { startGateway, config, waitFor, selfSignedCert } from './support/gateway.mjs';

const T = { timeout: 180000 };

function wireConfig(ports, maxConnections) {
  const cfg = config({
    trinoPort: ports.trino,
    adminPort: ports.admin,
    clusters: { duck: { engine: 'duckDb' } },
    clusterGroups: { g: { members: ['duck'], maxRunningQueries: 8 } },
    routingFallback: 'g',
  });
  cfg.queryflux.frontends.postgresWire = { enabled: true, port: ports.pg, maxConnections };
  cfg.queryflux.frontends.mysqlWire = { enabled: true, port: ports.my, maxConnections };
  return cfg;
}

/// A socket that writes `first` (maybe nothing) and then keeps quiet;
/// `closed` resolves when it closes, `closedByServer` tells who closed.
function quietSocket(port, first) {
  const s = net.connect(port, '127.0.0.1');
  const state = { socket: s, closedByServer: false };
  state.connected = new Promise((resolve, reject) => {
    s.once('connect', resolve);
    s.once('error', reject);
  });
  state.closed = new Promise((resolve) => {
    s.on('data', () => {});
    s.on('end', () => { state.closedByServer = true; });
    s.on('close', resolve);
    s.on('error', () => {});
  });
  if (first) s.write(first);
  return state;
}

const pgClient = (port, opts = {}) => {
  const c = new pg.Client({ host: '127.0.0.1', port, user: 'real', database: 'demo', ...opts });
  c.on('error', () => {}); // an evicted client's, read where it matters
  return c;
};

/// Floods `port` with 2,000 sockets, a hundred at a time, and between
/// them runs a real client's query over a connection of its own, which
/// finds the port full of the flood's sockets each time; returns the
/// failures. (A login that a flood outpaces, hundreds of sockets arriving
/// while it is under way, is a race no listener wins: the test asks what
/// matters, that a full port takes a newcomer.)
async function flood(t, port, firstBytes, limit, query) {
  const sockets = [];
  t.after(() => { for (const s of sockets) s.socket.destroy(); });
  let failures = 0;
  let ran = 0;
  while (sockets.length < 2000) {
    for (let i = 0; i < 100; i++) {
      // Half send nothing; half the first bytes of a login, then nothing.
      const s = quietSocket(port, sockets.length % 2 ? firstBytes : null);
      sockets.push(s);
      await s.connected;
    }
    try {
      if ((await query(ran)) !== ran) failures++;
    } catch (e) {
      failures++;
      process.stderr.write(`query ${ran}: ${e.message}\n`);
    }
    ran++;
  }
  // Every connection beyond the limit took an idle one's place.
  await waitFor(() => sockets.filter((s) => s.closedByServer).length >= 2000 - limit, {
    timeoutMs: 60000, what: 'the oldest idle sockets closed to make room',
  });
  assert.equal(ran, 20);
  return { failures, ran };
}

test('2,000 idle and half-logged-in sockets do not shut the PostgreSQL port for psql\'s kind of client', T, async (t) => {
  const ports = { trino: 28400, admin: 28401, pg: 28402, my: 28403 };
  const gw = await startGateway(wireConfig(ports, 300));
  t.after(() => gw.kill());
  // A pool's connection, logged in and idle from before the flood on: the
  // longest idle of all, but sockets that never logged in go first.
  const veteran = pgClient(ports.pg);
  t.after(() => veteran.end().catch(() => {}));
  await veteran.connect();
  await veteran.query('SELECT 1');
  // A StartupMessage's length and version, and no more.
  const partial = Buffer.from([0, 0, 0, 40, 0, 3, 0, 0]);
  const { failures, ran } = await flood(t, ports.pg, partial, 300, async (n) => {
    const c = pgClient(ports.pg);
    await c.connect();
    try {
      return Number((await c.query(`SELECT ${n} AS n`)).rows[0].n);
    } finally {
      await c.end();
    }
  });
  assert.equal(failures, 0, `${failures} of ${ran} real queries failed during the flood`);
  assert.equal((await veteran.query('SELECT 7 AS n')).rows[0].n, 7, 'the idle pool connection stayed');
});

test('2,000 idle and half-logged-in sockets do not shut the MySQL port for a real client', T, async (t) => {
  const ports = { trino: 28410, admin: 28411, pg: 28412, my: 28413 };
  const gw = await startGateway(wireConfig(ports, 300));
  t.after(() => gw.kill());
  // A HandshakeResponse's packet header, and no more.
  const partial = Buffer.from([80, 0, 0, 1, 0x85, 0xa6]);
  const { failures, ran } = await flood(t, ports.my, partial, 300, async (n) => {
    const c = await mysql.createConnection({ host: '127.0.0.1', port: ports.my, user: 'real', database: 'demo' });
    try {
      const [rows] = await c.query(`SELECT ${n} AS n`);
      return Number(rows[0].n);
    } finally {
      await c.end();
    }
  });
  assert.equal(failures, 0, `${failures} of ${ran} real queries failed during the flood`);
});

test('at the limit the longest idle session goes (told why), one in a transaction stays, and with all busy a newcomer is dropped', T, async (t) => {
  const ports = { trino: 28420, admin: 28421, pg: 28422, my: 28423 };
  const gw = await startGateway(wireConfig(ports, 2));
  t.after(() => gw.kill());
  const idle = pgClient(ports.pg);
  const evicted = new Promise((resolve) => idle.on('error', resolve));
  await idle.connect();
  await idle.query('SELECT 1');
  const inBlock = pgClient(ports.pg);
  t.after(() => inBlock.end().catch(() => {}));
  await inBlock.connect();
  await inBlock.query('BEGIN');
  await inBlock.query('SELECT 1');
  // A third: the idle session makes room, the one in a block does not.
  const third = pgClient(ports.pg);
  t.after(() => third.end().catch(() => {}));
  await third.connect();
  assert.equal((await third.query('SELECT 3 AS n')).rows[0].n, 3);
  const err = await evicted;
  assert.equal(err.code, '53300');
  assert.match(err.message, /maxConnections/);
  assert.equal((await inBlock.query('SELECT 2 AS n')).rows[0].n, 2, 'the block goes on');
  await inBlock.query('COMMIT');
  // Both in a block now: nobody may go, and the newcomer is dropped.
  await third.query('BEGIN');
  await third.query('SELECT 1');
  await inBlock.query('BEGIN');
  await inBlock.query('SELECT 1');
  const fourth = pgClient(ports.pg);
  await assert.rejects(fourth.connect());
  assert.equal((await inBlock.query('SELECT 4 AS n')).rows[0].n, 4);
  assert.equal((await third.query('SELECT 5 AS n')).rows[0].n, 5);
});

test('sockets that stall their TLS handshake are closed to make room, not left holding descriptors', T, async (t) => {
  const ports = { trino: 28430, admin: 28431, pg: 28432, my: 28433 };
  const cfg = wireConfig(ports, 50);
  const tls = selfSignedCert(t);
  cfg.queryflux.frontends.postgresWire.tls = { certFile: tls.cert, keyFile: tls.key };
  const gw = await startGateway(cfg);
  t.after(() => gw.kill());
  // SSLRequest: the gateway answers 'S' and waits for a ClientHello that
  // never comes.
  const sslRequest = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);
  const stalled = [];
  t.after(() => { for (const s of stalled) s.socket.destroy(); });
  for (let i = 0; i < 200; i++) {
    const s = quietSocket(ports.pg, sslRequest);
    stalled.push(s);
    await s.connected;
  }
  await waitFor(() => stalled.filter((s) => s.closedByServer).length >= 150, {
    timeoutMs: 30000, what: 'the stalled handshakes closed to make room',
  });
  const c = pgClient(ports.pg, { ssl: { rejectUnauthorized: false } });
  await c.connect();
  t.after(() => c.end().catch(() => {}));
  assert.equal((await c.query('SELECT 1 AS n')).rows[0].n, 1);
});
