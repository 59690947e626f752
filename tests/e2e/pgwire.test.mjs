// PostgreSQL wire frontend with real clients: psql and node-postgres (pg),
// on embedded DuckDB and SQLite clusters.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { startGateway, config, writeConfig, waitFor } from './support/gateway.mjs';

const PG_PORT = 23432;

function gatewayConfig(ports, extra = {}) {
  const cfg = config({
    trinoPort: ports.trino,
    adminPort: ports.admin,
    clusters: {
      duck: {
        engine: 'duckDb',
        initSql: ["CREATE TABLE t AS SELECT i, 'row ' || i AS s FROM range(0, 5) r(i)"],
      },
      lite: { engine: 'sqlite' },
    },
    clusterGroups: {
      main: { members: ['duck'], maxRunningQueries: 2, maxQueuedQueries: 20 },
      scratch: { members: ['lite'], maxRunningQueries: 1, maxQueuedQueries: 0 },
    },
    routers: [
      { type: 'queryRegex', rules: [{ regex: '(?i)^\\s*drop', action: 'deny', error: 'no DROP through the gateway' }] },
      { type: 'header', headerName: 'application_name', headerValueToGroup: { scratch: 'scratch' } },
    ],
    routingFallback: 'main',
    ...extra,
  });
  cfg.queryflux.frontends.postgresWire = { enabled: true, port: ports.pg };
  return cfg;
}

test('idleTransactionTimeout lets go of a silent client in a block on the actor path too', async (t) => {
  // DuckDB clusters take the actor path: the block's connection is pinned.
  const ports = { trino: 23195, admin: 23196, pg: PG_PORT + 10 };
  const cfg = gatewayConfig(ports);
  cfg.queryflux.frontends.postgresWire.idleTransactionTimeout = '300ms';
  const gw = await startGateway(cfg);
  t.after(() => gw.kill());
  const c = client(ports.pg);
  const told = new Promise((resolve) => c.on('error', resolve));
  await c.connect();
  await c.query('BEGIN');
  await c.query('SELECT 1');
  const err = await Promise.race([told, sleep(5000).then(() => null)]);
  assert.ok(err, 'the silent client was not let go');
  assert.equal(err.code, '25P03');
  await waitFor(async () => (await gw.running('duck')) === 0, { what: 'the slot freed' });
});

function client(port, opts = {}) {
  const c = new pg.Client({ host: '127.0.0.1', port, user: 'alice', database: 'demo', ...opts });
  // Teardown kills the gateway first; that must not fail the test.
  c.on('error', () => {});
  return c;
}

function psql(port, args, opts = {}) {
  return spawnSync('psql', ['-X', '-h', '127.0.0.1', '-p', String(port), '-U', 'alice', '-d', 'demo', ...args],
    { encoding: 'utf8', timeout: 30000, env: { ...process.env, PGCONNECT_TIMEOUT: '5' }, ...opts });
}

test('psql runs several statements, types and NULLs come through', async (t) => {
  const ports = { trino: 23100, admin: 23101, pg: PG_PORT };
  const gw = await startGateway(gatewayConfig(ports));
  t.after(() => gw.kill());

  const r = psql(ports.pg, ['-A', '-t', '-F', '|', '-c',
    "SELECT i, s, i * 1.5 AS d, NULL AS n, i % 2 = 0 AS even, DATE '2024-02-29' AS day, 'héllo 日本' AS u FROM t ORDER BY i LIMIT 2; SELECT 42 AS answer"]);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, '0|row 0|0.0||t|2024-02-29|héllo 日本\n1|row 1|1.5||f|2024-02-29|héllo 日本\n42\n');

  const ddl = psql(ports.pg, ['-c', 'CREATE TABLE u(x INTEGER); INSERT INTO u VALUES (1), (2), (3)', '-c', 'SELECT sum(x) FROM u']);
  assert.equal(ddl.status, 0, ddl.stderr);
  assert.match(ddl.stdout, /INSERT 0 3/);
  assert.match(ddl.stdout, /\b6\b/);

  const bad = psql(ports.pg, ['-c', 'SELEC 1']);
  assert.notEqual(bad.status, 0);
  assert.match(bad.stderr, /ERROR/);
  // The gateway keeps serving after the error.
  assert.equal(psql(ports.pg, ['-A', '-t', '-c', 'SELECT 7']).stdout, '7\n');
});

test('node-postgres: rows, types, errors with their SQLSTATE', async (t) => {
  const ports = { trino: 23110, admin: 23111, pg: PG_PORT + 1 };
  const gw = await startGateway(gatewayConfig(ports));
  t.after(() => gw.kill());

  const c = client(ports.pg);
  await c.connect();
  t.after(() => c.end().catch(() => {}));

  const res = await c.query("SELECT 1::INTEGER AS i, 9000000000::BIGINT AS big, 2.5::DOUBLE AS d, 12.34::DECIMAL(6,2) AS n, true AS b, NULL::VARCHAR AS nothing, '🚀' AS emoji");
  assert.deepEqual(res.fields.map((f) => f.dataTypeID), [23, 20, 701, 1700, 16, 1043, 1043]);
  assert.deepEqual(res.rows, [{ i: 1, big: '9000000000', d: 2.5, n: '12.34', b: true, nothing: null, emoji: '🚀' }]);
  assert.equal(res.command, 'SELECT');
  assert.equal(res.rowCount, 1);

  await assert.rejects(c.query('SELEC 1'), (e) => e.code === '42601');
  await assert.rejects(c.query('DROP TABLE t'), (e) => e.code === '42501' && /no DROP/.test(e.message));
  // Session settings are kept by the gateway.
  await c.query("SET application_name = 'report'");
  const shown = await c.query('SHOW application_name');
  assert.equal(shown.rows[0].application_name, 'report');
  // Parameters travel over the extended protocol.
  const param = await c.query('SELECT $1::INTEGER + 1 AS x, $2::VARCHAR AS s, $3::VARCHAR AS n', [41, 'it\'s', null]);
  assert.deepEqual(param.rows, [{ x: 42, s: "it's", n: null }]);
  const named = { name: 'by_id', text: 'SELECT s FROM t WHERE i = $1' };
  for (const i of [1, 3, 1]) {
    const r = await c.query({ ...named, values: [i] });
    assert.deepEqual(r.rows, [{ s: `row ${i}` }]);
  }
  await assert.rejects(c.query('SELECT $1::INTEGER', ['not a number']), (e) => e.code === '42000');
  const after = await c.query('SELECT count(*) AS n FROM t');
  assert.equal(Number(after.rows[0].n), 5);

  const history = await gw.history({ search: 'FROM t' });
  const rec = history.queries.find((q) => q.sql === 'SELECT count(*) AS n FROM t');
  assert.ok(rec, 'recorded in history');
  assert.equal(rec.protocol, 'postgresWire');
  assert.equal(rec.user, 'alice');
  assert.equal(rec.status, 'Success');
  assert.equal(rec.clusterName, 'duck');
});

test('pgbench runs a parameterized script in simple, extended and prepared modes', async (t) => {
  const ports = { trino: 23180, admin: 23181, pg: PG_PORT + 8 };
  const gw = await startGateway(gatewayConfig(ports));
  t.after(() => gw.kill());
  const { file } = writeConfig('\\set aid random(0, 4)\nSELECT i, s FROM t WHERE i = :aid;\n', 'select.sql');
  for (const mode of ['simple', 'extended', 'prepared']) {
    const r = spawnSync('pgbench', ['-n', '-h', '127.0.0.1', '-p', String(ports.pg), '-U', 'alice',
      '-f', file, '-M', mode, '-c', '2', '-j', '2', '-t', '50', 'demo'], { encoding: 'utf8', timeout: 60000 });
    assert.equal(r.status, 0, `${mode}: ${r.stderr}`);
    assert.match(r.stdout, /number of transactions actually processed: 100\/100/, mode);
    assert.match(r.stdout, /number of failed transactions: 0/, mode);
  }
  const { total } = await gw.history({ search: 'FROM t WHERE i =', limit: '1' });
  assert.equal(total, 300);
});

test('transaction blocks on DuckDB: ROLLBACK undoes, COMMIT keeps', async (t) => {
  const ports = { trino: 23190, admin: 23191, pg: PG_PORT + 9 };
  const gw = await startGateway(gatewayConfig(ports));
  t.after(() => gw.kill());
  const c = client(ports.pg);
  await c.connect();
  t.after(() => c.end().catch(() => {}));
  await c.query('CREATE TABLE tx (x INTEGER)');
  await c.query('BEGIN');
  await c.query('INSERT INTO tx VALUES (1)');
  assert.equal(Number((await c.query('SELECT count(*) AS n FROM tx')).rows[0].n), 1);
  await c.query('ROLLBACK');
  assert.equal(Number((await c.query('SELECT count(*) AS n FROM tx')).rows[0].n), 0);
  await c.query('BEGIN; INSERT INTO tx VALUES (2); COMMIT');
  assert.deepEqual((await c.query('SELECT x FROM tx')).rows, [{ x: 2 }]);
  const clusters = (await gw.admin('/admin/clusters')).body;
  assert.equal(clusters.find((x) => x.name === 'duck').runningQueries, 0);
});

test('a large result streams through node-postgres', async (t) => {
  const ports = { trino: 23120, admin: 23121, pg: PG_PORT + 2 };
  const gw = await startGateway(gatewayConfig(ports));
  t.after(() => gw.kill());
  const c = client(ports.pg);
  await c.connect();
  t.after(() => c.end().catch(() => {}));
  const res = await c.query('SELECT i, i * 2 AS twice FROM range(0, 100000) r(i) ORDER BY i');
  assert.equal(res.rowCount, 100000);
  assert.equal(res.rows[99999].i, '99999');
  assert.equal(res.rows[99999].twice, '199998');
});

test('capacity holds across PostgreSQL sessions: never more than 2 at once', async (t) => {
  const ports = { trino: 23130, admin: 23131, pg: PG_PORT + 3 };
  const gw = await startGateway(gatewayConfig(ports));
  t.after(() => gw.kill());
  const clients = await Promise.all(Array.from({ length: 6 }, async () => {
    const c = client(ports.pg);
    await c.connect();
    return c;
  }));
  t.after(() => Promise.all(clients.map((c) => c.end().catch(() => {}))));
  const results = await Promise.all(clients.map((c, i) => c.query(`SELECT sleep_ms(400) AS slept, ${i} AS k`)));
  assert.deepEqual(results.map((r) => Number(r.rows[0].k)), [0, 1, 2, 3, 4, 5]);
  const { queries } = await gw.history({ search: 'sleep_ms(400)' });
  assert.equal(queries.length, 6);
  const events = queries.flatMap((q) => [[q.startedAtMs, 1], [q.finishedAtMs, -1]])
    .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let running = 0;
  let peak = 0;
  for (const [, delta] of events) {
    running += delta;
    peak = Math.max(peak, running);
  }
  assert.equal(peak, 2);
});

test('a full queue and a denied route get their own SQLSTATEs', async (t) => {
  const ports = { trino: 23140, admin: 23141, pg: PG_PORT + 4 };
  const gw = await startGateway(gatewayConfig(ports));
  t.after(() => gw.kill());
  const busy = client(ports.pg, { application_name: 'scratch' });
  const other = client(ports.pg, { application_name: 'scratch' });
  await busy.connect();
  await other.connect();
  t.after(() => Promise.all([busy.end().catch(() => {}), other.end().catch(() => {})]));
  const running = busy.query('SELECT sleep_ms(1500) AS s');
  await sleep(300);
  // scratch: one running, no queue.
  await assert.rejects(other.query('SELECT 1'), (e) => e.code === '53300');
  await running;
});

test('psql Ctrl-C sends a CancelRequest that stops the query and frees its slot', async (t) => {
  const ports = { trino: 23150, admin: 23151, pg: PG_PORT + 5 };
  const gw = await startGateway(gatewayConfig(ports));
  t.after(() => gw.kill());
  const started = Date.now();
  const child = spawn('psql', ['-X', '-h', '127.0.0.1', '-p', String(ports.pg), '-U', 'alice', '-d', 'demo',
    '-c', 'SELECT sleep_ms(20000)'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  await sleep(700);
  child.kill('SIGINT'); // psql turns this into a CancelRequest
  const code = await exited;
  assert.notEqual(code, 0);
  assert.match(stderr, /cancel/i);
  assert.ok(Date.now() - started < 10000, 'cancelled long before the sleep would end');
  const { queries } = await gw.history({ search: 'sleep_ms(20000)' });
  assert.equal(queries[0]?.status, 'Cancelled');
  // The slots are free: two more run at once without waiting.
  const r = psql(ports.pg, ['-A', '-t', '-c', 'SELECT 1']);
  assert.equal(r.stdout, '1\n');
});

test('malformed packets close only their own connection', async (t) => {
  const ports = { trino: 23160, admin: 23161, pg: PG_PORT + 6 };
  const gw = await startGateway(gatewayConfig(ports));
  t.after(() => gw.kill());
  for (const garbage of [
    Buffer.from([0, 0, 0, 3]), // length below 4
    Buffer.from([0x7f, 0xff, 0xff, 0xff, 1, 2, 3]), // oversized startup
    Buffer.concat([Buffer.from([0, 0, 0, 12, 0, 3, 0, 0]), Buffer.from('user')]), // no terminators
  ]) {
    const answer = await new Promise((resolve) => {
      const sock = net.connect(ports.pg, '127.0.0.1', () => sock.write(garbage));
      let data = Buffer.alloc(0);
      sock.on('data', (d) => { data = Buffer.concat([data, d]); });
      sock.on('close', () => resolve(data));
      sock.on('error', () => resolve(data));
      sock.setTimeout(5000, () => sock.destroy());
    });
    assert.equal(String.fromCharCode(answer[0]), 'E', 'an ErrorResponse before the close');
    assert.match(answer.toString('latin1'), /08P01/);
  }
  const r = psql(ports.pg, ['-A', '-t', '-c', 'SELECT 3']);
  assert.equal(r.stdout, '3\n');
});

test('while draining, new sessions get 57P03 and running queries finish', async (t) => {
  const ports = { trino: 23170, admin: 23171, pg: PG_PORT + 7 };
  const gw = await startGateway(gatewayConfig(ports));
  t.after(() => gw.kill());
  const c = client(ports.pg);
  await c.connect();
  const slow = c.query('SELECT sleep_ms(1500) AS s');
  await waitFor(async () => (await gw.admin('/admin/queries/running')).body.length === 1,
    { what: 'the slow query running' });
  gw.signal('SIGTERM');
  await sleep(200);
  const late = client(ports.pg);
  await assert.rejects(late.connect(), (e) => e.code === '57P03');
  const res = await slow;
  assert.equal(Number(res.rows[0].s), 1500);
  await c.end().catch(() => {});
  assert.equal((await gw.exited).code, 0);
});

test('a connection that does not log in within startupTimeout is closed, on both wire frontends', async (t) => {
  const ports = { trino: 23470, admin: 23471, pg: 23472, my: 23473 };
  const cfg = gatewayConfig(ports);
  cfg.queryflux.frontends.postgresWire = { enabled: true, port: ports.pg, startupTimeout: '300ms', maxConnections: 2 };
  cfg.queryflux.frontends.mysqlWire = { enabled: true, port: ports.my, startupTimeout: '300ms' };
  const gw = await startGateway(cfg);
  t.after(() => gw.kill());
  // Silent sockets, and one that stops halfway through its startup packet.
  const closedAfter = (port, bytes) => new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    const started = Date.now();
    sock.on('connect', () => { if (bytes) sock.write(bytes); });
    sock.on('data', () => {});
    sock.on('error', () => {});
    sock.on('close', () => resolve(Date.now() - started));
    setTimeout(() => { sock.destroy(); resolve(Infinity); }, 5000);
  });
  const waited = await Promise.all([
    closedAfter(ports.pg), closedAfter(ports.pg, Buffer.from([0, 0, 0, 40, 0, 3])), closedAfter(ports.my)]);
  for (const ms of waited) {
    assert.ok(ms >= 250 && ms < 3000, `closed after ${ms} ms`);
  }
  // A logged-in session is not timed out, and the slots the stalled ones
  // held (maxConnections: 2) are free again.
  const a = client(ports.pg);
  const b = client(ports.pg);
  await a.connect();
  await b.connect();
  await sleep(600);
  assert.deepEqual((await a.query('SELECT 1 AS one')).rows, [{ one: 1 }]);
  assert.deepEqual((await b.query('SELECT 2 AS two')).rows, [{ two: 2 }]);
  await a.end();
  await b.end();
});
