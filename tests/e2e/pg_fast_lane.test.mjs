// The PostgreSQL wire fast lane: autocommit statements for an all-postgres
// group run on pooled non-blocking libpq connections on the socket's own
// thread, and must look to clients, operators and PostgreSQL just like the
// actor path does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { readdirSync, readlinkSync, readFileSync } from 'node:fs';
import { execFileSync, spawnSync } from 'node:child_process';
import pg from 'pg';
import Cursor from 'pg-cursor';
import {
  startGateway, config, parseMetrics, metricValue, waitFor, sleep, selfSignedCert, killAfterCleanups
} from './support/gateway.mjs';
import { ownPostgres } from './support/own_postgres.mjs';
import { rawClient, loggedInRawClient } from './support/raw_pg_client.mjs';

const PG_URL = process.env.QF_PG_URL || 'postgres://postgres@127.0.0.1:15432/postgres';
const PG_PORT = Number(new URL(PG_URL).port || 5432);
const T = { timeout: 90000 };
const GROUP = 'lane';
const CLUSTER = 'pg';

/// A pgjdbc program of jdbc/ run against the server on `port`.
function pgjdbc(program, port) {
  return spawnSync('java', ['-cp', '/usr/share/java/postgresql.jar', `jdbc/${program}.java`, String(port)],
    { encoding: 'utf8', timeout: 120000 });
}

/// A gateway with one all-postgres group, its admin API on `base` and the
/// PostgreSQL wire frontend on base + 1 (no Trino frontend: ports are few).
/// `twins`: a second member on the same server, taking turns with the first.
async function laneGateway(t, base, { poolSize = 2, maxRunningQueries = 4, endpoint = PG_URL, wire = {}, twins = false, cluster = {}, group = {} } = {}) {
  const members = twins ? [CLUSTER, `${CLUSTER}2`] : [CLUSTER];
  const cfg = config({
    trinoPort: undefined,
    adminPort: base,
    clusters: Object.fromEntries(members.map(
      (name) => [name, { engine: 'postgres', endpoint, maxRunningQueries, poolSize, ...cluster }])),
    clusterGroups: {
      [GROUP]: { members, maxRunningQueries, maxQueuedQueries: 100, strategy: { type: 'roundRobin' }, ...group },
    },
    routingFallback: GROUP,
  });
  cfg.queryflux.externalAddress = `http://127.0.0.1:${base}`;
  // Three wire threads: sessions, their backends and cancels cross loops.
  cfg.queryflux.wireThreads = 3;
  cfg.queryflux.frontends = {
    trinoHttp: { enabled: false },
    postgresWire: { enabled: true, port: base + 1, ...wire },
  };
  const gw = await startGateway(cfg);
  gw.pgPort = base + 1;
  killAfterCleanups(t, gw);
  return gw;
}

function client(gw, opts = {}) {
  const c = new pg.Client({ host: '127.0.0.1', port: gw.pgPort, user: 'postgres', database: 'postgres', ...opts });
  c.on('error', () => {});
  return c;
}

async function connected(gw) {
  const c = client(gw);
  await c.connect();
  return c;
}

/// A connection straight to PostgreSQL, for checking what the backend saw.
async function direct() {
  const c = new pg.Client({ connectionString: PG_URL });
  c.on('error', () => {});
  await c.connect();
  return c;
}

/// Local ports of the gateway's TCP connections to PostgreSQL. The server is
/// shared with other gateways (other test files, benchmarks), all with
/// application_name 'queryflux': this tells ours apart.
function backendPorts(pid) {
  const inodes = new Set();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]);
    } catch { /* closed meanwhile */ }
  }
  const ports = [];
  for (const table of ['tcp', 'tcp6']) {
    let text;
    try { text = readFileSync(`/proc/${pid}/net/${table}`, 'utf8'); } catch { continue; }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length < 10 || !inodes.has(cols[9])) continue;
      if (parseInt(cols[2].split(':').at(-1), 16) !== PG_PORT) continue;
      ports.push(parseInt(cols[1].split(':').at(-1), 16));
    }
  }
  return ports;
}

/// The gateway's sessions as pg_stat_activity shows them.
async function gatewayBackends(d, gw) {
  const ports = backendPorts(gw.pid);
  const r = await d.query(
    `SELECT pid, application_name, state, query, wait_event FROM pg_stat_activity
     WHERE backend_type = 'client backend' AND client_port = ANY($1::int[]) AND pid <> pg_backend_pid()`,
    [ports]);
  return r.rows;
}

function rssKb(pid) {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m[1]);
}

test('backend connections are pooled across client connections', T, async (t) => {
  const poolSize = 2;
  const gw = await laneGateway(t, 24100, { poolSize, maxRunningQueries: 4 });

  // A burst of 4 opens 4 lane connections; only poolSize may stay.
  const burst = await Promise.all(Array.from({ length: 4 }, () => connected(gw)));
  await Promise.all(burst.map((c, i) => c.query(`SELECT pg_sleep(0.3), ${i} AS burst`)));
  await Promise.all(burst.map((c) => c.end()));

  const pids = new Set();
  for (let i = 0; i < 30; i++) {
    const c = await connected(gw);
    const r = await c.query('SELECT pg_backend_pid() AS pid');
    await c.end();
    pids.add(r.rows[0].pid);
  }
  assert.ok(pids.size >= 1 && pids.size <= poolSize,
    `30 client connections used ${pids.size} backends: ${[...pids]}`);

  const d = await direct();
  gw.defer(() => d.end());
  // The health checker keeps one libpq connection of its own (also
  // application_name queryflux); the excess of the burst closes.
  let backends = [];
  await waitFor(async () => {
    backends = await gatewayBackends(d, gw);
    return backends.length <= poolSize + 1;
  }, { timeoutMs: 5000, what: `at most ${poolSize + 1} backends` }).catch(() => {});
  assert.ok(backends.length <= poolSize + 1, `the gateway holds ${backends.length} backends: ${JSON.stringify(backends)}`);
  assert.ok(backends.every((b) => b.application_name === 'queryflux'), JSON.stringify(backends));
  const open = new Set(backends.map((b) => b.pid));
  for (const pid of pids) assert.ok(open.has(pid), `backend ${pid} is still open, idle in the pool: ${JSON.stringify(backends)}`);
});

test('a pooled backend killed while idle is not handed to the next statement', T, async (t) => {
  const gw = await laneGateway(t, 24102, { poolSize: 2 });

  // Two at once, so that the pool holds two connections.
  const pair = await Promise.all([connected(gw), connected(gw)]);
  const used = await Promise.all(pair.map((c) => c.query('SELECT pg_backend_pid() AS pid, pg_sleep(0.3)')));
  await Promise.all(pair.map((c) => c.end()));
  const pooled = [...new Set(used.map((r) => r.rows[0].pid))];

  const d = await direct();
  gw.defer(() => d.end());
  // Only this gateway's lane connections: the server is shared.
  const killed = await d.query(
    `SELECT pid, pg_terminate_backend(pid) AS ok FROM pg_stat_activity
     WHERE application_name = 'queryflux' AND pid <> pg_backend_pid() AND pid = ANY($1::int[])`, [pooled]);
  assert.equal(killed.rows.length, pooled.length, `pooled ${pooled}, terminated ${JSON.stringify(killed.rows)}`);
  assert.ok(killed.rows.every((r) => r.ok));
  // Gone from pg_stat_activity: their FATAL and EOF have reached the gateway.
  await waitFor(async () => (await d.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = ANY($1::int[])', [pooled])).rows[0].n === 0,
    { timeoutMs: 10000, what: 'the terminated backends to exit' });
  await sleep(300);

  const c = await connected(gw);
  gw.defer(() => c.end());
  const seen = [];
  for (let i = 0; i < 5; i++) {
    const r = await c.query(`SELECT 1 AS one, pg_backend_pid() AS pid, ${i} AS attempt`);
    assert.equal(r.rows[0].one, 1);
    seen.push(r.rows[0].pid);
  }
  const others = await Promise.all([connected(gw), connected(gw)]);
  const both = await Promise.all(others.map((o) => o.query('SELECT 1 AS one, pg_backend_pid() AS pid')));
  await Promise.all(others.map((o) => o.end()));
  for (const r of both) {
    assert.equal(r.rows[0].one, 1);
    seen.push(r.rows[0].pid);
  }
  assert.ok(seen.every((p) => !pooled.includes(p)), `a terminated backend answered: ${seen} vs ${pooled}`);
});

test('the admin API lists a fast-lane statement and cancels it', T, async (t) => {
  const gw = await laneGateway(t, 24104);
  const c = await connected(gw);
  gw.defer(() => c.end());

  const slow = c.query('SELECT pg_sleep(30)').then(() => null, (e) => e);
  let entry;
  await waitFor(async () => {
    const r = await gw.admin('/admin/queries/running');
    entry = r.body.find?.((q) => q.sqlPreview === 'SELECT pg_sleep(30)');
    return entry;
  }, { timeoutMs: 10000, what: 'the pg_sleep listed as running' });
  assert.deepEqual(
    { protocol: entry.protocol, state: entry.state, group: entry.group, cluster: entry.cluster, user: entry.submittedBy },
    { protocol: 'postgresWire', state: 'RUNNING', group: GROUP, cluster: CLUSTER, user: 'postgres' });
  assert.match(entry.id, /^pg_/);

  const cancelled = await gw.admin(`/admin/queries/${encodeURIComponent(entry.id)}`, { method: 'DELETE' });
  assert.equal(cancelled.status, 200, cancelled.text);
  assert.deepEqual(cancelled.body, { cancelled: entry.id });
  const err = await slow;
  assert.ok(err, 'pg_sleep(30) was not stopped');
  assert.equal(err.code, '57014', `${err.code}: ${err.message}`);

  await waitFor(async () => (await gw.admin('/admin/queries/running')).body.length === 0,
    { timeoutMs: 5000, what: 'nothing running' });
  const d = await direct();
  gw.defer(() => d.end());
  const still = (await gatewayBackends(d, gw)).filter((b) => b.state === 'active' && b.query === 'SELECT pg_sleep(30)');
  assert.deepEqual(still, [], 'the backend stopped sleeping');

  const after = await c.query('SELECT 2 AS n');
  assert.deepEqual(after.rows, [{ n: 2 }]);
  const rec = await gw.historyRecord(entry.id);
  assert.equal(rec.status, 'Cancelled');
  assert.equal(rec.protocol, 'postgresWire');
});

/// A TCP proxy to PostgreSQL that can hold new connections back until
/// release(): a backend connection that is still being opened, for as long
/// as a test needs.
async function gatedProxy(port) {
  const target = new URL(PG_URL);
  const state = { open: true, held: [] };
  const sockets = new Set();
  const through = (client) => {
    const up = net.connect(Number(target.port || 5432), target.hostname);
    sockets.add(up);
    client.pipe(up);
    up.pipe(client);
    client.on('error', () => up.destroy());
    up.on('error', () => client.destroy());
    client.on('close', () => up.destroy());
    up.on('close', () => client.destroy());
    client.resume();
  };
  const server = net.createServer((client) => {
    sockets.add(client);
    client.pause();
    if (state.open) through(client);
    else state.held.push(client);
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  return {
    url: `postgres://${target.username || 'postgres'}@127.0.0.1:${port}${target.pathname}`,
    state,
    hold() { state.open = false; },
    release() {
      state.open = true;
      for (const c of state.held.splice(0)) through(c);
    },
    close() {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

test('a fast-lane statement cancelled while its backend connection is still opening stays cancelled', T, async (t) => {
  const proxy = await gatedProxy(24114);
  const gw = await laneGateway(t, 24112, { endpoint: proxy.url });
  gw.defer(() => proxy.close());
  const c = await connected(gw);
  gw.defer(() => c.end());

  // The pool is empty: the statement waits for a new connection, held here.
  proxy.hold();
  const sql = "SELECT pg_sleep(10), 'qf_lane_cancel_while_connecting' AS tag";
  const slow = c.query(sql).then(() => null, (e) => e);
  let entry;
  await waitFor(async () => {
    const r = await gw.admin('/admin/queries/running');
    entry = r.body.find?.((q) => q.sqlPreview === sql);
    return entry && proxy.state.held.length === 1;
  }, { timeoutMs: 10000, what: 'the statement listed and its backend connection held' });
  assert.equal(entry.state, 'RUNNING');

  const cancelled = await gw.admin(`/admin/queries/${encodeURIComponent(entry.id)}`, { method: 'DELETE' });
  assert.equal(cancelled.status, 200, cancelled.text);
  assert.deepEqual(cancelled.body, { cancelled: entry.id });
  proxy.release();

  const err = await slow;
  assert.ok(err, 'the statement cancelled before its connection was up ran to completion anyway');
  assert.equal(err.code, '57014', `${err.code}: ${err.message}`);
  const rec = await gw.historyRecord(entry.id);
  assert.equal(rec.status, 'Cancelled');
  const d = await direct();
  gw.defer(() => d.end());
  const sleeping = await d.query(
    "SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%qf_lane_cancel_while_connecting%' AND pid <> pg_backend_pid()");
  assert.equal(sleeping.rows[0].n, 0, 'PostgreSQL is not running the cancelled statement');
  assert.deepEqual((await c.query('SELECT 3 AS n')).rows, [{ n: 3 }]);
});

test('fast-lane statements are counted in the metrics and recorded in the history', T, async (t) => {
  const gw = await laneGateway(t, 24106);
  const q = (s, status) => metricValue(s, 'queryflux_queries_total',
    { cluster_group: GROUP, engine_type: 'postgres', protocol: 'postgresWire', status }) ?? 0;
  const before = parseMetrics(await gw.metrics());

  const c = await connected(gw);
  gw.defer(() => c.end());
  const N = 5;
  for (let k = 1; k <= N; k++) {
    const r = await c.query(`SELECT g, 'lane_metrics_${k}' AS tag FROM generate_series(1, ${k}) g`);
    assert.equal(r.rowCount, k);
  }
  await assert.rejects(c.query('SELECT * FROM no_such_table'),
    (e) => e.code === '42P01' && /no_such_table/.test(e.message));

  await gw.historyWhen({ search: 'no_such_table' }); // the last one filed
  const now = parseMetrics(await gw.metrics());
  assert.equal(q(now, 'Success') - q(before, 'Success'), N);
  assert.equal(q(now, 'Failed') - q(before, 'Failed'), 1);
  assert.equal(metricValue(now, 'queryflux_running_queries', { cluster_group: GROUP, cluster_name: CLUSTER }), 0);
  const count = (s) => metricValue(s, 'queryflux_query_duration_seconds_count',
    { cluster_group: GROUP, engine_type: 'postgres' }) ?? 0;
  assert.equal(count(now) - count(before), N + 1);
  // Admitted at once: every one of them waited 0 s, in the first bucket.
  const waited = (s, le) => metricValue(s, 'queryflux_queue_duration_seconds_bucket', { cluster_group: GROUP, le }) ?? 0;
  assert.equal(waited(now, '0.1') - waited(before, '0.1'), N + 1);
  assert.equal(waited(now, '+Inf') - waited(before, '+Inf'), N + 1);
  const fast = (s) => metricValue(s, 'queryflux_query_duration_seconds_bucket',
    { cluster_group: GROUP, engine_type: 'postgres', le: '1' }) ?? 0;
  assert.equal(fast(now) - fast(before), N + 1, 'each took well under a second');

  const { queries } = await gw.history({ group: GROUP });
  for (let k = 1; k <= N; k++) {
    const rec = queries.find((r) => r.sql.includes(`'lane_metrics_${k}'`));
    assert.ok(rec, `no history record for statement ${k}: ${JSON.stringify(queries.map((r) => r.sql))}`);
    assert.deepEqual(
      { clusterName: rec.clusterName, clusterGroup: rec.clusterGroup, engineType: rec.engineType,
        protocol: rec.protocol, status: rec.status, rowsReturned: rec.rowsReturned, user: rec.user },
      { clusterName: CLUSTER, clusterGroup: GROUP, engineType: 'postgres',
        protocol: 'postgresWire', status: 'Success', rowsReturned: k, user: 'postgres' });
  }
  const failed = queries.find((r) => r.sql === 'SELECT * FROM no_such_table');
  assert.ok(failed, 'no history record for the failed statement');
  assert.equal(failed.status, 'Failed');
  assert.equal(failed.clusterName, CLUSTER);
  assert.match(failed.errorMessage ?? '', /no_such_table/);
});

test('a client that stops reading holds the result back instead of the gateway buffering it', T, async (t) => {
  const gw = await laneGateway(t, 24108);
  const raw = await loggedInRawClient(gw);
  const baseline = rssKb(gw.pid);

  const ROWS = 300000; // ~300 MB on the wire
  const sql = `SELECT repeat('x', 1000) FROM generate_series(1, ${ROWS})`;
  raw.query(sql);
  await raw.until(() => raw.st.rows > 0, 'the first DataRow', 30000);
  raw.sock.pause();

  const d = await direct();
  gw.defer(() => d.end());
  let peak = 0;
  const pausedAt = Date.now();
  let blocked = false;
  // Paused for at least 2 s, and until PostgreSQL itself waits to write:
  // the back pressure reached the backend.
  while (Date.now() - pausedAt < 2000 || !blocked) {
    peak = Math.max(peak, rssKb(gw.pid));
    if (!blocked) {
      const mine = (await gatewayBackends(d, gw)).filter((b) => b.query === sql);
      blocked = mine.some((b) => b.state === 'active' && b.wait_event === 'ClientWrite');
    }
    if (Date.now() - pausedAt > 20000) break; // safety net; asserted below
    await sleep(50);
  }
  const rowsWhilePaused = raw.st.rows;
  assert.ok(blocked, 'PostgreSQL never waited on ClientWrite while the client was paused: the gateway kept reading');
  assert.ok(peak < 150 * 1024,
    `gateway RSS reached ${Math.round(peak / 1024)} MB while the client was paused (baseline ${Math.round(baseline / 1024)} MB)`);
  assert.ok(rowsWhilePaused < ROWS, 'the result did not all arrive before the pause');

  raw.sock.resume();
  await raw.until(() => raw.st.ready === 2, 'ReadyForQuery after the result', 80000);
  assert.deepEqual(raw.st.errors, []);
  assert.equal(raw.st.rows, ROWS);
  assert.deepEqual(raw.st.tags, [`SELECT ${ROWS}`]);
});

test('fast-lane statements and a transaction block share one session', T, async (t) => {
  const gw = await laneGateway(t, 24110);
  const d = await direct();
  gw.defer(() => d.end());
  await d.query('DROP TABLE IF EXISTS qf_lane_e2e; CREATE TABLE qf_lane_e2e (id int PRIMARY KEY, note text)');

  const c = await connected(gw);
  gw.defer(() => c.end());
  assert.deepEqual((await c.query('SELECT 1 AS one')).rows, [{ one: 1 }]);

  await c.query('BEGIN');
  const pid1 = (await c.query('SELECT pg_backend_pid() AS p')).rows[0].p;
  const ins = await c.query("INSERT INTO qf_lane_e2e VALUES (1, 'a'), (2, 'b')");
  assert.equal(ins.rowCount, 2);
  assert.equal((await c.query('SELECT count(*)::int AS n FROM qf_lane_e2e')).rows[0].n, 2, 'the block sees its insert');
  // Uncommitted: a real transaction on the backend, not autocommit statements.
  assert.equal((await d.query('SELECT count(*)::int AS n FROM qf_lane_e2e')).rows[0].n, 0, 'visible before COMMIT');
  const pid2 = (await c.query('SELECT pg_backend_pid() AS p')).rows[0].p;
  assert.equal(pid2, pid1, 'the block stayed on one backend');
  await c.query('COMMIT');

  assert.deepEqual((await c.query('SELECT 1 AS one')).rows, [{ one: 1 }]);
  assert.deepEqual((await c.query('SELECT $1::int + 1 AS n', [41])).rows, [{ n: 42 }]);

  // A rolled-back block in between leaves nothing behind.
  await c.query('BEGIN');
  await c.query("INSERT INTO qf_lane_e2e VALUES (3, 'gone')");
  await c.query('ROLLBACK');

  const mine = await c.query('SELECT id, note FROM qf_lane_e2e ORDER BY id');
  assert.deepEqual(mine.rows, [{ id: 1, note: 'a' }, { id: 2, note: 'b' }]);
  const theirs = await d.query('SELECT id, note FROM qf_lane_e2e ORDER BY id');
  assert.deepEqual(theirs.rows, [{ id: 1, note: 'a' }, { id: 2, note: 'b' }]);
  // No backend of this gateway is left inside a transaction.
  const open = (await gatewayBackends(d, gw)).filter((b) => b.state.startsWith('idle in transaction'));
  assert.deepEqual(open, []);
});

test('a transaction block runs on the fast lane: one pooled connection, its slot held until it ends', T, async (t) => {
  const gw = await laneGateway(t, 24140, { poolSize: 1 });
  const d = await direct();
  gw.defer(() => d.end());
  const running = () => gw.running(CLUSTER);
  const c = await connected(gw);
  gw.defer(() => c.end());
  const pooled = (await c.query('SELECT pg_backend_pid() AS p')).rows[0].p;
  await c.query('BEGIN');
  const inBlock = (await c.query('SELECT pg_backend_pid() AS p')).rows[0].p;
  assert.equal(inBlock, pooled, "the block runs on the fast lane's pooled connection");
  assert.equal(await running(), 1, 'an idle block holds its slot');
  await c.query('SELECT 1');
  assert.equal(await running(), 1);
  await c.query('COMMIT');
  assert.equal(await running(), 0, 'COMMIT frees it');
  assert.equal((await c.query('SELECT pg_backend_pid() AS p')).rows[0].p, pooled, 'and the connection is pooled again');
  // A block that fails stays on its connection until ROLLBACK.
  await c.query('BEGIN');
  await assert.rejects(c.query('SELECT * FROM no_such_table'), (e) => e.code === '42P01');
  await assert.rejects(c.query('SELECT 1'), (e) => e.code === '25P02');
  await c.query('ROLLBACK');
  assert.equal(await running(), 0);
  const open = (await gatewayBackends(d, gw)).filter((b) => b.state.startsWith('idle in transaction'));
  assert.deepEqual(open, []);
});

test('a cursor in a fast-lane block pauses its backend instead of buffering, and closing it reads the rest away', T, async (t) => {
  const gw = await laneGateway(t, 24142);
  const c = await connected(gw);
  gw.defer(() => c.end());
  await c.query('BEGIN');
  const pid = (await c.query('SELECT pg_backend_pid() AS p')).rows[0].p;
  const before = rssKb(gw.pid);
  const cursor = c.query(new Cursor("SELECT g AS n, repeat('x', 100) AS pad FROM generate_series(1, 1000000) g"));
  assert.deepEqual((await cursor.read(3)).map((r) => r.n), [1, 2, 3]);
  await sleep(300); // room to read on, if it were going to
  assert.ok(rssKb(gw.pid) - before < 40 * 1024, 'the rest of 100 MB was not read into the gateway');
  assert.deepEqual((await cursor.read(2)).map((r) => r.n), [4, 5]);
  await new Promise((resolve, reject) => cursor.close((err) => (err ? reject(err) : resolve())));
  assert.equal((await c.query('SELECT pg_backend_pid() AS p')).rows[0].p, pid, 'the block kept its connection');
  await c.query('COMMIT');
});

test("a block whose backend is terminated ends its client's connection, not just its statement", T, async (t) => {
  const gw = await laneGateway(t, 24144);
  const d = await direct();
  gw.defer(() => d.end());
  await d.query('DROP TABLE IF EXISTS qf_lane_lost; CREATE TABLE qf_lane_lost (id int)');
  const c = await connected(gw);
  const ended = new Promise((resolve) => c.on('end', resolve));
  await c.query('BEGIN');
  await c.query('INSERT INTO qf_lane_lost VALUES (1)');
  const pid = (await c.query('SELECT pg_backend_pid() AS p')).rows[0].p;
  await d.query('SELECT pg_terminate_backend($1)', [pid]);
  // Carrying on outside the block the client thinks it is in would commit
  // what it means to roll back: PostgreSQL itself ends the session.
  await assert.rejects(c.query('INSERT INTO qf_lane_lost VALUES (2)'));
  await Promise.race([ended, sleep(5000).then(() => { throw new Error('the client connection stayed open'); })]);
  assert.equal((await d.query('SELECT count(*)::int AS n FROM qf_lane_lost')).rows[0].n, 0);
  await waitFor(async () => (await gw.running(CLUSTER)) === 0,
    { timeoutMs: 3000, what: 'the slot freed' });
});

test('a block the server ends while its client idles frees the slot at once and tells the client', T, async (t) => {
  const gw = await laneGateway(t, 24148, { maxRunningQueries: 1 });
  const c = await connected(gw);
  const told = new Promise((resolve) => c.on('error', resolve));
  await c.query('BEGIN');
  // For this transaction: PostgreSQL ends the backend after 300 ms idle.
  await c.query("SELECT set_config('idle_in_transaction_session_timeout', '300', true)");
  assert.equal(await gw.running(CLUSTER), 1, 'the block holds the slot');
  // Not when the client next speaks: it may never.
  const err = await Promise.race([told, sleep(5000).then(() => null)]);
  assert.ok(err, 'the client was not told');
  assert.equal(err.code, '08006');
  assert.match(err.message, /idle_in_transaction_session_timeout/);
  await waitFor(async () => (await gw.running(CLUSTER)) === 0,
    { timeoutMs: 3000, what: 'the slot freed' });
  const next = await connected(gw);
  gw.defer(() => next.end());
  assert.deepEqual((await next.query('SELECT 1 AS one')).rows, [{ one: 1 }]);
});

test('a client silent inside a block past idleTransactionTimeout is let go, its slot freed', T, async (t) => {
  const gw = await laneGateway(t, 24150, { maxRunningQueries: 1, wire: { idleTransactionTimeout: '400ms' } });
  const d = await direct();
  gw.defer(() => d.end());
  await d.query('DROP TABLE IF EXISTS qf_lane_idle; CREATE TABLE qf_lane_idle (id int)');
  const c = await connected(gw);
  const told = new Promise((resolve) => c.on('error', resolve));
  await c.query('BEGIN');
  // A client that keeps speaking keeps its block, past the timeout in all.
  for (let i = 0; i < 4; i++) {
    await sleep(200);
    await c.query(`INSERT INTO qf_lane_idle VALUES (${i})`);
  }
  assert.equal(await gw.running(CLUSTER), 1, 'the block holds the slot');
  const err = await Promise.race([told, sleep(5000).then(() => null)]);
  assert.ok(err, 'the silent client was not let go');
  assert.equal(err.code, '25P03');
  assert.match(err.message, /idle-in-transaction timeout/);
  await waitFor(async () => (await gw.running(CLUSTER)) === 0,
    { timeoutMs: 3000, what: 'the slot freed' });
  assert.equal((await d.query('SELECT count(*)::int AS n FROM qf_lane_idle')).rows[0].n, 0,
    'its block was rolled back');
  // Outside a block, a client may be silent as long as it likes.
  const other = await connected(gw);
  gw.defer(() => other.end());
  await sleep(800);
  assert.deepEqual((await other.query('SELECT 2 AS two')).rows, [{ two: 2 }]);
});

test("a statement that queued still hands its client the server's notices", T, async (t) => {
  const gw = await laneGateway(t, 24152, { maxRunningQueries: 1 });
  const holder = await connected(gw);
  gw.defer(() => holder.end());
  const c = await connected(gw);
  gw.defer(() => c.end());
  const notices = [];
  c.on('notice', (n) => notices.push(`${n.severity} ${n.code} ${n.message}`));
  const holding = holder.query('SELECT pg_sleep(0.5)');
  await waitFor(async () => (await gw.running(CLUSTER)) === 1, { what: 'the one slot taken' });
  await c.query("DO $$ BEGIN RAISE NOTICE 'queued_notice %', 1; RAISE WARNING 'queued_warning'; END $$");
  await holding;
  assert.deepEqual(notices, ['NOTICE 00000 queued_notice 1', 'WARNING 01000 queued_warning']);
  const rec = (await gw.historyWhen({ search: 'queued_notice' })).queries[0];
  assert.ok(rec.queueDurationMs > 0, `it did not queue: ${JSON.stringify(rec)}`);
  assert.doesNotMatch(gw.logs(), /queued_notice/);
});

test('over TLS to the server the fast lane runs statements through libpq: its notices still reach the client, COPY is refused clearly', T, async (t) => {
  // Our relay passes bytes beside libpq, which only works in the clear: a
  // cluster that asks for TLS (as managed PostgreSQL does) takes the run path.
  const server = ownPostgres(t, 24154, { tls: selfSignedCert(t) });
  const gw = await laneGateway(t, 24156, { endpoint: server.url });
  const c = await connected(gw);
  gw.defer(() => c.end());
  const notices = [];
  c.on('notice', (n) => notices.push(`${n.severity} ${n.message}`));
  const r = await c.query("SELECT g, 'x' || g AS s FROM generate_series(1, 3) g");
  assert.deepEqual(r.rows.map((row) => row.s), ['x1', 'x2', 'x3']);
  assert.deepEqual((await c.query('SELECT $1::int + 1 AS n', [41])).rows, [{ n: 42 }]);
  await c.query("DO $$ BEGIN RAISE NOTICE 'over_tls %', 1; RAISE WARNING 'over_tls_warning'; END $$");
  assert.deepEqual(notices, ['NOTICE over_tls 1', 'WARNING over_tls_warning']);
  // COPY passes only through the relay, which a TLS server leaves out: a
  // clear 0A000, and the session goes on.
  await assert.rejects(c.query('COPY (SELECT 1) TO STDOUT'), (e) => e.code === '0A000' && /over TLS/.test(e.message));
  assert.deepEqual((await c.query('SELECT 5 AS n')).rows, [{ n: 5 }]);
  const d = new pg.Client({ host: '127.0.0.1', port: 24154, user: 'postgres', database: 'postgres',
    ssl: { rejectUnauthorized: false } });
  d.on('error', () => {}); // the server stops at the end of the test
  await d.connect();
  const { rows } = await d.query(`SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
    WHERE a.application_name = 'queryflux'`);
  await d.end();
  assert.ok(rows.length >= 1 && rows.every((x) => x.ssl), `the gateway's connections: ${JSON.stringify(rows)}`);
});

test('a client killed mid-statement has the statement cancelled and its slot freed within a second or so', T, async (t) => {
  // No CancelRequest and no Terminate: the kernel closes the socket.
  const gw = await laneGateway(t, 24146, { maxRunningQueries: 1 });
  const d = await direct();
  gw.defer(() => d.end());
  const { spawn } = await import('node:child_process');
  const psql = spawn('psql', ['-X', '-h', '127.0.0.1', '-p', String(gw.pgPort), '-U', 'postgres', '-d', 'postgres',
    '-c', 'SELECT pg_sleep(30) AS killed_client'], { stdio: 'ignore' });
  const sleeping = async () => (await gatewayBackends(d, gw)).filter((b) => /killed_client/.test(b.query) && b.state === 'active').length;
  await waitFor(async () => (await sleeping()) === 1, { what: 'pg_sleep running on PostgreSQL' });
  psql.kill('SIGKILL');
  await waitFor(async () => (await sleeping()) === 0, { timeoutMs: 5000, what: 'pg_sleep cancelled' });
  const c = await connected(gw); // the one slot is free again
  gw.defer(() => c.end());
  assert.deepEqual((await c.query('SELECT 1 AS one')).rows, [{ one: 1 }]);
  const { queries } = await gw.historyWhen({ search: 'killed_client' });
  assert.equal(queries[0]?.status, 'Cancelled');
});

test("a simple Query's result is relayed as the server wrote it", T, async (t) => {
  const gw = await laneGateway(t, 24120);
  const c = await connected(gw);
  gw.defer(() => c.end());
  const notices = [];
  c.on('notice', (n) => notices.push(n.message));

  // The server's own messages: its notices, its type OIDs, its rows.
  await c.query("DO $$ BEGIN RAISE NOTICE 'relayed %', 42; END $$");
  assert.deepEqual(notices, ['relayed 42']);
  const r = await c.query("SELECT g, 'x' || g AS s FROM generate_series(1, 5) g");
  assert.deepEqual(r.fields.map((f) => f.dataTypeID), [23, 25]);
  assert.deepEqual(r.rows.map((row) => row.s), ['x1', 'x2', 'x3', 'x4', 'x5']);

  // An error's position, which the server counts in the one statement it
  // saw, is moved to count in the client's Query, as PostgreSQL's own
  // would. The statements after the error do not run.
  // The rest of the server's fields come through, its source routine
  // among them, which only a relayed error carries.
  await assert.rejects(c.query('SELECT 1; SELECT * FROM qf_no_such_table; SELECT 3'), (e) => {
    assert.equal(e.code, '42P01');
    assert.equal(e.position, '25');
    assert.equal(typeof e.routine, 'string');
    return true;
  });
  assert.equal((await c.query('SELECT 2 AS two')).rows[0].two, 2);
});

test('a parameterized result relayed in the extended protocol streams in order while the client pauses', T, async (t) => {
  // A pause and resume of the relay must not interleave two writes to the
  // client, nor lose or repeat a row.
  const gw = await laneGateway(t, 24122);
  const raw = await loggedInRawClient(gw);
  const ROWS = 200000;
  raw.extended("SELECT g, repeat('y', 1000) FROM generate_series(1, $1::int) g", [ROWS]);
  await raw.until(() => raw.st.rows > 0, 'the first DataRow', 30000);
  for (let i = 0; i < 3; ++i) { // pause and resume a few times mid-result
    raw.sock.pause();
    await sleep(400);
    raw.sock.resume();
    await sleep(100);
  }
  await raw.until(() => raw.st.ready === 2, 'ReadyForQuery after the result', 80000);
  assert.deepEqual(raw.st.errors, []);
  assert.equal(raw.st.rows, ROWS);
  assert.deepEqual(raw.st.tags, [`SELECT ${ROWS}`]);
});

test('a backend that dies mid-statement fails that statement only', T, async (t) => {
  // A simple Query and an Execute with parameters alike: the client gets
  // an error, its session and the slot survive, the next statement runs.
  const gw = await laneGateway(t, 24124, { maxRunningQueries: 1 });
  const c = await connected(gw);
  gw.defer(() => c.end());
  const d = await direct();
  gw.defer(() => d.end());
  // Both relayed: the client reads the server's own reason (57P01, told
  // as an ERROR).
  const cases = [['SELECT pg_sleep(20) AS simple', [], '57P01'], ['SELECT pg_sleep($1::int) AS extended', [20], '57P01']];
  for (const [sql, params, code] of cases) {
    const pending = c.query(sql, params).then(() => null, (e) => e);
    let pid;
    await waitFor(async () => {
      const mine = (await gatewayBackends(d, gw)).filter((b) => b.state === 'active' && b.query === sql);
      pid = mine[0]?.pid;
      return pid !== undefined;
    }, { what: `the backend running ${sql}` });
    await d.query('SELECT pg_terminate_backend($1)', [pid]);
    const err = await pending;
    assert.ok(err, `${sql} succeeded although its backend was terminated`);
    assert.equal(err.code, code, `${sql}: ${err.message}`);
    assert.equal(err.severity, 'ERROR', 'the client\'s session did not end');
    // The one slot was freed: with maxRunningQueries 1 the next one runs.
    assert.equal((await c.query('SELECT 41 + 1 AS n')).rows[0].n, 42);
  }
  const running = await gw.admin('/admin/queries/running');
  assert.deepEqual(running.body, []);
});

test('a pooled backend terminated right after its statement fails the next statement at most, cleanly', T, async (t) => {
  // A connection back in the pool for under 100 ms is handed over without
  // the poll() that would hear the server's goodbye (as pgbouncer skips
  // its check within server_check_delay). The statement that meets a
  // backend gone meanwhile gets the server's reason or 08006, as an
  // ERROR; the session, the slot and the next statement are unharmed.
  const gw = await laneGateway(t, 24126, { poolSize: 1, maxRunningQueries: 1 });
  const c = await connected(gw);
  gw.defer(() => c.end());
  const d = await direct();
  gw.defer(() => d.end());
  for (let round = 0; round < 3; round++) {
    const { pid } = (await c.query('SELECT pg_backend_pid() AS pid')).rows[0];
    await d.query('SELECT pg_terminate_backend($1)', [pid]);
    const next = await c.query('SELECT pg_backend_pid() AS pid').then((r) => r, (e) => e);
    if (next instanceof Error) {
      assert.ok(['57P01', '08006'].includes(next.code), `round ${round}: ${next.code} ${next.message}`);
      assert.equal(next.severity, 'ERROR', "the client's session did not end");
    } else {
      assert.notEqual(next.rows[0].pid, pid, 'a terminated backend answered');
    }
    const after = await c.query('SELECT pg_backend_pid() AS pid, 41 + 1 AS n');
    assert.equal(after.rows[0].n, 42);
    assert.notEqual(after.rows[0].pid, pid);
  }
  const running = await gw.admin('/admin/queries/running');
  assert.deepEqual(running.body, []);
});

test('a relayed Query larger than the socket takes at once goes out whole', T, async (t) => {
  // The relay writes the Query at once and leaves what the backend socket
  // did not take to an asynchronous write: 6 MB is far past its buffer.
  const gw = await laneGateway(t, 24128);
  const c = await connected(gw);
  gw.defer(() => c.end());
  const size = 6 * 1024 * 1024;
  const r = await c.query(`SELECT length('${'x'.repeat(size)}') AS n, 'end' AS tail`);
  assert.equal(r.rows[0].n, size);
  assert.equal(r.rows[0].tail, 'end');
  assert.equal((await c.query('SELECT 41 + 1 AS n')).rows[0].n, 42); // the connection goes on
});

test('a statement with a parameter larger than the socket takes at once goes out whole', T, async (t) => {
  // Parameters take libpq's path (PQsendQueryParams), which must flush
  // the rest as the backend socket drains, not block the wire thread.
  const gw = await laneGateway(t, 24130);
  const c = await connected(gw);
  gw.defer(() => c.end());
  const size = 6 * 1024 * 1024;
  const r = await c.query('SELECT length($1::text) AS n, $2::text AS tail', ['y'.repeat(size), 'end']);
  assert.equal(r.rows[0].n, size);
  assert.equal(r.rows[0].tail, 'end');
  assert.equal((await c.query('SELECT 41 + $1::int AS n', [1])).rows[0].n, 42);
});

test('a relayed row far larger than one read comes through whole, and the connection goes on', T, async (t) => {
  // The relay grows its buffer to hold the whole DataRow, then lets the
  // grown buffers go before the connection is pooled again.
  const gw = await laneGateway(t, 24132, { poolSize: 1 });
  const c = await connected(gw);
  gw.defer(() => c.end());
  const size = 5 * 1024 * 1024;
  for (let i = 0; i < 2; ++i) {
    const r = await c.query(`SELECT repeat('z', ${size}) AS v, ${i} AS i`);
    assert.equal(r.rows[0].v.length, size);
    assert.equal(r.rows[0].v[size - 1], 'z');
    assert.equal(r.rows[0].i, i);
  }
  assert.equal((await c.query('SELECT 41 + 1 AS n')).rows[0].n, 42);
});

test("clients' named statements are prepared once per backend, under the gateway's own names", T, async (t) => {
  // One backend serves every client: the same name in two sessions for two
  // texts must not meet there, and one text under two names is one
  // server statement, planned once.
  const gw = await laneGateway(t, 24134, { poolSize: 1, maxRunningQueries: 1 });
  const [a, b] = [await connected(gw), await connected(gw)];
  gw.defer(() => a.end());
  gw.defer(() => b.end());
  // One after the other: with one slot, a statement that found it taken
  // would queue, on the actor path, which prepares nothing.
  for (let i = 0; i < 3; ++i) {
    assert.equal((await a.query({ name: 'q', text: 'SELECT $1::int + 1 AS n', values: [i] })).rows[0].n, i + 1);
    assert.equal((await b.query({ name: 'q', text: 'SELECT $1::int + 2 AS n', values: [i] })).rows[0].n, i + 2);
  }
  assert.equal((await b.query({ name: 'other', text: 'SELECT $1::int + 1 AS n', values: [9] })).rows[0].n, 10);
  // An unnamed statement is not kept.
  assert.equal((await a.query('SELECT $1::int + 3 AS n', [1])).rows[0].n, 4);

  // A statement that fails to parse is not taken for prepared; nor is one
  // that fails while it runs dropped.
  await assert.rejects(a.query({ name: 'bad', text: 'SELECT * FROM qf_no_such_table WHERE 1 = $1', values: [1] }),
    (e) => e.code === '42P01');
  await assert.rejects(b.query({ name: 'div', text: 'SELECT 1 / $1::int AS n', values: [0] }),
    (e) => e.code === '22012');
  assert.equal((await b.query({ name: 'div', text: 'SELECT 1 / $1::int AS n', values: [1] })).rows[0].n, 1);

  const held = await a.query('SELECT name, statement FROM pg_prepared_statements ORDER BY statement');
  assert.deepEqual(held.rows.map((r) => r.statement), [
    'SELECT $1::int + 1 AS n', 'SELECT $1::int + 2 AS n', 'SELECT 1 / $1::int AS n',
  ]);
  assert.ok(held.rows.every((r) => /^qf_s\d+$/.test(r.name)), JSON.stringify(held.rows));
});

/// A PostgreSQL message: tag, length, body.
function pgMessage(tag, body) {
  const head = Buffer.alloc(5);
  head.write(tag, 0, 'latin1');
  head.writeUInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

test('a client that sends its last Query and hangs up at once gets its answer, then its connection closes', T, async (t) => {
  // The Query and the end of the stream arrive in one event: a read that
  // comes back short has not reached the end, which no later event
  // announces. Missed, the connection stayed open, holding a slot of
  // maxConnections (1 here) for good.
  const gw = await laneGateway(t, 24136);
  const cfgPort = gw.pgPort;
  const params = Buffer.from('user\0postgres\0database\0postgres\0\0', 'latin1');
  const startup = Buffer.alloc(8);
  startup.writeUInt32BE(8 + params.length, 0);
  startup.writeUInt32BE(196608, 4);
  for (let round = 0; round < 5; ++round) {
    const got = await new Promise((resolve) => {
      const sock = net.connect(cfgPort, '127.0.0.1');
      let data = Buffer.alloc(0);
      let asked = false;
      const timer = setTimeout(() => { sock.destroy(); resolve({ data, closed: false }); }, 5000);
      sock.on('connect', () => sock.write(Buffer.concat([startup, params])));
      sock.on('data', (d) => {
        data = Buffer.concat([data, d]);
        if (!asked && data.includes(Buffer.from('Z\0\0\0\x05I', 'latin1'))) {
          asked = true;
          data = Buffer.alloc(0);
          sock.end(pgMessage('Q', Buffer.from('SELECT 41 + 1 AS n\0', 'latin1')));
        }
      });
      sock.on('error', () => {});
      sock.on('close', () => { clearTimeout(timer); resolve({ data, closed: true }); });
    });
    assert.ok(got.data.includes(Buffer.from("42")), `round ${round}: no answer (closed: ${got.closed}), got ${JSON.stringify(got.data.toString("latin1"))}`);
    assert.equal(got.data.subarray(-6).toString('latin1'), 'Z\0\0\0\x05I', `round ${round}: no ReadyForQuery`);
    assert.ok(got.closed, `round ${round}: the gateway kept the half-closed connection open`);
  }
});

test('out of file descriptors, the gateway turns new connections away at once and serves again after', T, async (t) => {
  // A connection that cannot be accepted (EMFILE) waits in the backlog for
  // an edge that only a newer connection brings (the wire listeners), or
  // the acceptor spins (the HTTP ones). With a spare descriptor let go, it
  // is accepted and closed: its client hears at once.
  const gw = await laneGateway(t, 24138);
  // The limit bounds descriptor numbers; below the highest, some are free.
  const fds = readdirSync(`/proc/${gw.pid}/fd`).map(Number);
  const held = () => readdirSync(`/proc/${gw.pid}/fd`).map((fd) => {
    try { return `${fd}:${readlinkSync(`/proc/${gw.pid}/fd/${fd}`)}`; } catch { return `${fd}:gone`; }
  }).join(' ');
  const before = held();
  const limit = Math.max(Math.max(...fds) + 1, fds.length + 4);
  const free = limit - fds.length;
  const soft = readFileSync(`/proc/${gw.pid}/limits`, 'utf8').match(/Max open files\s+(\d+)/)[1];
  execFileSync('prlimit', [`--pid=${gw.pid}`, `--nofile=${limit}:`]); // the soft limit
  const sockets = [];
  const tried = { wire: free + 6, http: 6 };
  const turnedAway = { wire: 0, http: 0 };
  for (const [kind, port] of [['wire', gw.pgPort], ['http', 24138]]) {
    for (let i = 0; i < tried[kind]; ++i) {
      const s = net.connect(port, '127.0.0.1');
      s.on('error', () => {});
      s.on('close', () => { turnedAway[kind] += 1; });
      sockets.push(s);
      gw.defer(() => s.destroy());
      if (kind === 'wire') await new Promise((r) => { s.once('connect', r); s.once('close', r); });
    }
    // One listener at a time: two turning connections away at once can
    // take each other's spare (the descriptor one lets go, the other's
    // accept takes), and the loser waits, as it should, for one to free.
    const expected = kind === 'wire' ? tried.wire - free : 1;
    await waitFor(async () => turnedAway[kind] >= expected,
      { timeoutMs: 3000, what: `${kind} connections turned away` }).catch(() => {});
  }
  const seen = () => `turned away ${JSON.stringify(turnedAway)} of ${JSON.stringify(tried)} at limit ${limit}\n`
    + `descriptors before: ${before}\nnow: ${held()}\n${gw.logs().split('\n').slice(-20).join('\n')}`;
  assert.ok(turnedAway.wire > 0 && turnedAway.http > 0, `connections past the limit wait in the backlog: ${seen()}`);
  assert.ok(turnedAway.wire < tried.wire, `no wire connection was served within the limit: ${seen()}`);

  for (const s of sockets) s.destroy();
  execFileSync('prlimit', [`--pid=${gw.pid}`, `--nofile=${soft}:`]);
  const c = await connected(gw);
  gw.defer(() => c.end());
  assert.equal((await c.query('SELECT 41 + 1 AS n')).rows[0].n, 42);
  assert.equal((await fetch('http://127.0.0.1:24138/readyz')).status, 200);
});

test('a connection that waited while the gateway had no descriptor to spare is served once one frees, with no newer connection to wake it', T, async (t) => {
  const gw = await laneGateway(t, 24226);
  // The limit bounds descriptor numbers: at the lowest spare, the spare the
  // acceptor lets go is still past it, so the waiting connection can be
  // neither accepted nor turned away. Nothing may be free below it.
  const numbers = readdirSync(`/proc/${gw.pid}/fd`).map(Number).sort((a, b) => a - b);
  const spares = numbers.filter((fd) => fd > 2 && readlinkSync(`/proc/${gw.pid}/fd/${fd}`) === '/dev/null');
  const limit = Math.min(...spares);
  assert.deepEqual(numbers.slice(0, limit), [...Array(limit).keys()], 'no descriptor free below the spares');
  const soft = readFileSync(`/proc/${gw.pid}/limits`, 'utf8').match(/Max open files\s+(\d+)/)[1];
  execFileSync('prlimit', [`--pid=${gw.pid}`, `--nofile=${limit}:`]);
  const s = net.connect(gw.pgPort, '127.0.0.1');
  s.on('error', () => {});
  gw.defer(() => s.destroy());
  await new Promise((r) => s.once('connect', r));
  await waitFor(async () => /postgresWire: out of file descriptors/.test(gw.logs()),
    { what: 'the wire listener out of descriptors' });
  execFileSync('prlimit', [`--pid=${gw.pid}`, `--nofile=${soft}:`]);
  // An SSLRequest: a served connection answers N (no TLS configured).
  const answer = new Promise((resolve) => s.once('data', (d) => resolve(d.toString('latin1'))));
  const request = Buffer.alloc(8);
  request.writeInt32BE(8, 0);
  request.writeInt32BE(80877103, 4);
  s.write(request);
  assert.equal(await Promise.race([answer, sleep(5000).then(() => 'no answer')]), 'N');
});

test('COPY FROM STDIN through the fast lane: psql imports, and the rows reach PostgreSQL', T, async (t) => {
  const gw = await laneGateway(t, 24160);
  const d = await direct();
  gw.defer(() => d.end());
  await d.query('DROP TABLE IF EXISTS qf_copy_in; CREATE TABLE qf_copy_in (n int, s text)');
  const input = Array.from({ length: 100000 }, (_, i) => `${i + 1}\tline ${i + 1}\n`).join('');
  const psql = (sql, opts = {}) => execFileSync('psql', ['-X', '-h', '127.0.0.1', '-p', String(gw.pgPort),
    '-U', 'postgres', '-d', 'postgres', '-v', 'ON_ERROR_STOP=1', '-c', sql],
  { encoding: 'utf8', ...opts });
  assert.equal(psql('COPY qf_copy_in FROM STDIN', { input }).trim(), 'COPY 100000');
  const r = await d.query('SELECT count(*)::int AS n, sum(n)::bigint AS total, max(s) FILTER (WHERE n = 77) AS s FROM qf_copy_in');
  assert.deepEqual(r.rows[0], { n: 100000, total: '5000050000', s: 'line 77' });
  // And out again, through the same frontend.
  assert.equal(psql('COPY (SELECT count(*) FROM qf_copy_in) TO STDOUT'), '100000\n');
  // Inside a block, rolled back.
  const block = execFileSync('psql', ['-X', '-h', '127.0.0.1', '-p', String(gw.pgPort), '-U', 'postgres',
    '-d', 'postgres', '-v', 'ON_ERROR_STOP=1', '-c', 'BEGIN', '-c', 'COPY qf_copy_in FROM STDIN',
    '-c', 'SELECT count(*) FROM qf_copy_in', '-c', 'ROLLBACK'], { encoding: 'utf8', input: '0\tzero\n' });
  assert.match(block, /COPY 1[\s\S]*100001[\s\S]*ROLLBACK/);
  const after = await d.query('SELECT count(*)::int AS n FROM qf_copy_in');
  assert.equal(after.rows[0].n, 100000);
});

test('a COPY the server ends early, a COPY failed by another message, and a whole COPY, on one raw connection', T, async (t) => {
  const gw = await laneGateway(t, 24162);
  const d = await direct();
  gw.defer(() => d.end());
  await d.query('DROP TABLE IF EXISTS qf_copy_raw; CREATE TABLE qf_copy_raw (x int)');
  const raw = await loggedInRawClient(gw);
  const line = (text) => raw.message('d', Buffer.from(text));
  const copyDone = raw.message('c', Buffer.alloc(0));

  // A bad first row: the server answers at once while the client is still
  // sending; the rest of its copy is ignored, as PostgreSQL ignores it.
  raw.query('COPY qf_copy_raw FROM STDIN');
  await raw.until(() => raw.st.copyIn === 1, 'CopyInResponse');
  raw.send(line('bad\n'));
  await raw.until(() => raw.st.ready === 2, 'the failed copy\'s ReadyForQuery');
  assert.match(raw.st.errors[0], /C22P02 .*invalid input syntax/);
  raw.send(line('1\n'), copyDone);
  raw.query('SELECT 1');
  await raw.until(() => raw.st.ready === 3, 'the next statement');
  assert.equal(raw.st.rows, 1);

  // Any other message inside a copy fails it, and is dropped.
  raw.query('COPY qf_copy_raw FROM STDIN');
  await raw.until(() => raw.st.copyIn === 2, 'CopyInResponse');
  raw.send(line('5\n'));
  raw.query('SELECT 1');
  await raw.until(() => raw.st.ready === 4, 'the failed copy\'s ReadyForQuery');
  assert.match(raw.st.errors[1], /unexpected message type 0x51 during COPY from stdin/);

  raw.query('COPY qf_copy_raw FROM STDIN');
  await raw.until(() => raw.st.copyIn === 3, 'CopyInResponse');
  raw.send(line('7\n'), line('8\n'), copyDone);
  await raw.until(() => raw.st.ready === 5, 'the copy\'s ReadyForQuery');
  assert.equal(raw.st.errors.length, 2);
  assert.deepEqual(raw.st.tags, ['SELECT 1', 'COPY 2']);
  assert.ok(!raw.st.closed);
  const r = await d.query('SELECT array_agg(x ORDER BY x) AS xs FROM qf_copy_raw');
  assert.deepEqual(r.rows[0].xs, [7, 8]);
  const { queries } = await gw.historyWhen({ search: 'qf_copy_raw FROM STDIN' }, (h) => h.total >= 3);
  // A copy ended by a CopyFail fails with 57014, query_canceled, as the
  // server reports it.
  assert.deepEqual(queries.map((q) => q.status).sort(), ['Cancelled', 'Failed', 'Success']);
});

test('a COPY into a server that stops reading holds the client back instead of the gateway buffering it', T, async (t) => {
  const gw = await laneGateway(t, 24164);
  const d = await direct();
  gw.defer(() => d.end());
  // The first row waits in a trigger for a lock this test holds: until it
  // lets go, the server reads nothing.
  await d.query(`DROP TABLE IF EXISTS qf_copy_slow;
    CREATE TABLE qf_copy_slow (x int, pad text);
    CREATE OR REPLACE FUNCTION qf_copy_slow_first() RETURNS trigger LANGUAGE plpgsql AS
      $$ BEGIN IF NEW.x = 1 THEN PERFORM pg_advisory_lock(4164); PERFORM pg_advisory_unlock(4164);
         END IF; RETURN NEW; END $$;
    CREATE TRIGGER qf_copy_slow_first BEFORE INSERT ON qf_copy_slow
      FOR EACH ROW EXECUTE FUNCTION qf_copy_slow_first()`);
  await d.query('SELECT pg_advisory_lock(4164)');
  const raw = await loggedInRawClient(gw);
  const baseline = rssKb(gw.pid);

  raw.query('COPY qf_copy_slow FROM STDIN');
  await raw.until(() => raw.st.copyIn === 1, 'CopyInResponse');
  const ROWS = 100000; // ~100 MB of copy data, written as fast as node takes it
  const pad = 'y'.repeat(1000);
  for (let i = 1; i <= ROWS; i += 1000) {
    const lines = [];
    for (let k = i; k < i + 1000; ++k) lines.push(raw.message('d', Buffer.from(`${k}\t${pad}\n`)));
    raw.send(...lines);
  }
  raw.send(raw.message('c', Buffer.alloc(0)));
  // The data stays in the client while the server reads nothing, and the
  // gateway's memory does not take it in meanwhile.
  let peak = 0;
  await waitFor(() => {
    peak = Math.max(peak, rssKb(gw.pid));
    return raw.sock.writableLength > 50 * 1024 * 1024;
  }, { timeoutMs: 60000, intervalMs: 50, what: 'the client\'s data waiting in the client' });
  assert.ok(peak - baseline < 40 * 1024,
    `gateway RSS grew by ${Math.round((peak - baseline) / 1024)} MB while the server did not read`);
  await d.query('SELECT pg_advisory_unlock(4164)');
  await raw.until(() => raw.st.ready === 2, 'the copy\'s ReadyForQuery', 80000);
  assert.deepEqual(raw.st.errors, []);
  assert.deepEqual(raw.st.tags, [`COPY ${ROWS}`]);
});

test("LISTEN is refused, and a notification on a pooled connection reaches no other client", T, async (t) => {
  const gw = await laneGateway(t, 24166, { poolSize: 1, maxRunningQueries: 1 });
  const a = await connected(gw);
  gw.defer(() => a.end());
  await assert.rejects(a.query('LISTEN qf_chan'), (e) => e.code === '0A000' && /LISTEN is not supported/.test(e.message));
  // Past the keyword: the one pooled connection listens now.
  await a.query("DO $$ BEGIN EXECUTE 'LISTEN qf_chan'; END $$");
  const listener = (await a.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
  await a.end();

  const b = await connected(gw);
  gw.defer(() => b.end());
  const heard = [];
  b.on('notification', (n) => heard.push(n.payload));
  assert.equal((await b.query('SELECT pg_backend_pid() AS pid')).rows[0].pid, listener);
  await b.query("NOTIFY qf_chan, 'for the listener only'");
  assert.deepEqual(heard, []);
  // The listening connection stays with b from now on: c gets another.
  const c = await connected(gw);
  gw.defer(() => c.end());
  assert.notEqual((await c.query('SELECT pg_backend_pid() AS pid')).rows[0].pid, listener);
  assert.deepEqual(heard, []);
});

test("a reported setting a function changed stays with its client, not the pooled connection", T, async (t) => {
  // set_config() passes by the session's own SET; the server reports the
  // change (ParameterStatus), and the connection stays with its client.
  const gw = await laneGateway(t, 24168, { poolSize: 1, maxRunningQueries: 1 });
  const a = await connected(gw);
  gw.defer(() => a.end());
  const before = (await a.query("SELECT current_setting('TimeZone') AS tz")).rows[0].tz;
  await a.query("SELECT set_config('TimeZone', 'Asia/Tokyo', false)");
  assert.equal((await a.query("SELECT current_setting('TimeZone') AS tz")).rows[0].tz, 'Asia/Tokyo');
  const b = await connected(gw);
  gw.defer(() => b.end());
  assert.equal((await b.query("SELECT current_setting('TimeZone') AS tz")).rows[0].tz, before);
  await a.end();
});

test("session state stays with its client: temporary tables, PREPARE and advisory locks work, and nobody else sees them", T, async (t) => {
  // poolSize 1: without the kept connection the next client would get the
  // very connection that holds the first one's state.
  const gw = await laneGateway(t, 24170, { poolSize: 1, maxRunningQueries: 1 });
  for (const opening of [[], ['BEGIN']]) {
    const a = await connected(gw);
    for (const sql of opening) await a.query(sql);
    await a.query("CREATE TEMP TABLE qf_private AS SELECT 'a-data' AS v");
    if (opening.length) await a.query('COMMIT');
    await a.query('PREPARE qf_mine AS SELECT 7 AS n');
    assert.equal((await a.query('SELECT pg_try_advisory_lock(4242) AS got')).rows[0].got, true);
    // Later statements of the same client find all of it.
    assert.deepEqual((await a.query('SELECT v FROM pg_temp.qf_private')).rows, [{ v: 'a-data' }]);
    assert.deepEqual((await a.query('EXECUTE qf_mine')).rows, [{ n: 7 }]);

    const b = await connected(gw);
    await assert.rejects(b.query('SELECT v FROM pg_temp.qf_private'), (e) => e.code === '42P01');
    assert.equal((await b.query('SELECT pg_try_advisory_lock(4242) AS got')).rows[0].got, false);
    await a.end(); // its connection closes, and its lock with it
    await waitFor(async () => (await b.query('SELECT pg_try_advisory_lock(4242) AS got')).rows[0].got,
      { what: 'the lock to go with its session' });
    await b.query('SELECT pg_advisory_unlock_all()');
    await b.end();
  }
  // DISCARD ALL lets the session's state go, as PostgreSQL drops it.
  const c = await connected(gw);
  gw.defer(() => c.end());
  await c.query('CREATE TEMP TABLE qf_gone (x int)');
  await c.query('DISCARD ALL');
  await assert.rejects(c.query('SELECT * FROM qf_gone'), (e) => e.code === '42P01');
});
test("a client's state follows it in a group of two clusters taking turns", T, async (t) => {
  const gw = await laneGateway(t, 24174, { twins: true });
  const a = await connected(gw);
  gw.defer(() => a.end());
  await a.query("CREATE TEMP TABLE qf_turns AS SELECT 'mine' AS v");
  // Round robin would send every other statement to the other member.
  for (let i = 0; i < 6; ++i)
    assert.deepEqual((await a.query('SELECT v FROM pg_temp.qf_turns')).rows, [{ v: 'mine' }], `statement ${i}`);
  const clusters = (await gw.historyWhen({ search: 'qf_turns' }, (h) => h.total >= 7)).queries.map((q) => q.clusterName);
  assert.equal(new Set(clusters).size, 1, `they ran on ${clusters}`);
  // Others still take turns.
  const b = await connected(gw);
  gw.defer(() => b.end());
  for (let i = 0; i < 4; ++i) await b.query('SELECT 1 AS qf_turns_other');
  const others = (await gw.historyWhen({ search: 'qf_turns_other' }, (h) => h.total >= 4)).queries.map((q) => q.clusterName);
  assert.equal(new Set(others).size, 2, `they ran on ${others}`);
});

test("a client with state of its own waits for a slot on its connection's cluster, and finds its state", T, async (t) => {
  const gw = await laneGateway(t, 24176, { twins: true, maxRunningQueries: 1 });
  const a = await connected(gw);
  gw.defer(() => a.end());
  await a.query("CREATE TEMP TABLE qf_waits AS SELECT 'kept' AS v");
  const mine = (await gw.historyWhen({ search: 'qf_waits' })).queries[0].clusterName;
  // The client's cluster busy (the other one free): it waits for its own.
  const holder = await connected(gw);
  gw.defer(() => holder.end());
  let holding;
  for (let i = 0; i < 4 && !holding; ++i) {
    const sleeping = holder.query('SELECT pg_sleep(0.6) AS qf_holder');
    await waitFor(async () => (await gw.running(mine)) + (await gw.running(`${mine === CLUSTER ? `${CLUSTER}2` : CLUSTER}`)) === 1,
      { what: 'the holder running' });
    if ((await gw.running(mine)) === 1) holding = sleeping;
    else await sleeping; // it went to the other member: again
  }
  assert.ok(holding, 'the holder never ran on the client cluster');
  const started = Date.now();
  assert.deepEqual((await a.query('SELECT v FROM pg_temp.qf_waits')).rows, [{ v: 'kept' }]);
  assert.ok(Date.now() - started >= 200, 'it did not wait for the holder');
  await holding;
  const waited = (await gw.historyWhen({ search: 'SELECT v FROM pg_temp.qf_waits' })).queries[0];
  assert.equal(waited.clusterName, mine);
  assert.ok(waited.queueDurationMs > 0, JSON.stringify(waited));
});

test('a statement waiting for a slot is cancelled by its client (57014) and the session goes on', T, async (t) => {
  const gw = await laneGateway(t, 24178, { maxRunningQueries: 1 });
  const holder = await connected(gw);
  gw.defer(() => holder.end());
  const c = await connected(gw);
  gw.defer(() => c.end());
  const holding = holder.query('SELECT pg_sleep(1)');
  await waitFor(async () => (await gw.running(CLUSTER)) === 1, { what: 'the one slot taken' });
  const waiting = c.query('SELECT 1 AS qf_cancelled_wait');
  await sleep(100);
  // node-postgres sends a CancelRequest with the connection's key.
  client(gw).cancel(c, c.activeQuery);
  await assert.rejects(waiting, (e) => e.code === '57014');
  await holding;
  assert.deepEqual((await c.query('SELECT 2 AS n')).rows, [{ n: 2 }]);
  assert.equal(await gw.running(CLUSTER), 0);
  const rec = (await gw.historyWhen({ search: 'qf_cancelled_wait' })).queries[0];
  assert.equal(rec.status, 'Cancelled');
});

test('a client that leaks named statements is refused (53400) past 10,000, and the connection goes on', T, async (t) => {
  const gw = await laneGateway(t, 24172);
  const c = await connected(gw);
  gw.defer(() => c.end());
  for (let i = 0; i < 10000; ++i) await c.query({ name: `leak${i}`, text: `SELECT ${i} AS n` });
  await assert.rejects(c.query({ name: 'one_too_many', text: 'SELECT 1' }),
    (e) => e.code === '53400' && /close some/.test(e.message));
  assert.deepEqual((await c.query('SELECT 2 AS n')).rows, [{ n: 2 }]);
  await c.query('DEALLOCATE ALL');
  assert.deepEqual((await c.query({ name: 'one_too_many', text: 'SELECT 3 AS n' })).rows, [{ n: 3 }]);
});

test("SET reaches PostgreSQL and stays with its client: search_path, statement_timeout, a role and the settings row-level security reads", T, async (t) => {
  const d = await direct();
  t.after(() => d.end());
  await d.query(`DROP SCHEMA IF EXISTS qf_app CASCADE; CREATE SCHEMA qf_app;
    CREATE TABLE qf_app.qf_where (v text); INSERT INTO qf_app.qf_where VALUES ('in qf_app');
    DROP TABLE IF EXISTS qf_rls; CREATE TABLE qf_rls (tenant text, item text);
    INSERT INTO qf_rls VALUES ('acme', 'anvil'), ('globex', 'laser');
    ALTER TABLE qf_rls ENABLE ROW LEVEL SECURITY;
    CREATE POLICY qf_rls_tenant ON qf_rls USING (tenant = current_setting('app.tenant', true));
    DO $$ BEGIN CREATE ROLE qf_tenant_reader; EXCEPTION WHEN duplicate_object THEN NULL; END $$;
    GRANT SELECT ON qf_rls TO qf_tenant_reader`);
  // poolSize 1: a setting left on the pooled connection would reach b.
  const gw = await laneGateway(t, 24180, { poolSize: 1, maxRunningQueries: 2 });
  const a = await connected(gw);
  gw.defer(() => a.end());
  await a.query('SET search_path = qf_app, public');
  assert.deepEqual((await a.query('SELECT v FROM qf_where')).rows, [{ v: 'in qf_app' }]);
  assert.deepEqual((await a.query('SHOW search_path')).rows, [{ search_path: 'qf_app, public' }]);
  await a.query('SET statement_timeout = 100');
  await assert.rejects(a.query('SELECT pg_sleep(2)'), (e) => e.code === '57014' && /timeout/.test(e.message));
  await a.query('RESET statement_timeout');
  await a.query('SELECT pg_sleep(0.2)');
  await a.query('SET TIME ZONE 9');
  assert.equal((await a.query("SELECT '2024-01-01 00:00:00+00'::timestamptz::text AS t")).rows[0].t,
    '2024-01-01 09:00:00+09');
  await a.query("SET ROLE qf_tenant_reader");
  await a.query("SET app.tenant = 'acme'");
  assert.deepEqual((await a.query('SELECT item FROM public.qf_rls')).rows, [{ item: 'anvil' }]);
  // A block's SET LOCAL ends with it, its SET stays.
  await a.query('BEGIN');
  await a.query("SET LOCAL app.tenant = 'globex'");
  assert.deepEqual((await a.query('SELECT item FROM public.qf_rls')).rows, [{ item: 'laser' }]);
  await a.query("SET work_mem = '7MB'");
  await a.query('COMMIT');
  assert.deepEqual((await a.query('SELECT item FROM public.qf_rls')).rows, [{ item: 'anvil' }]);
  assert.deepEqual((await a.query('SHOW work_mem')).rows, [{ work_mem: '7MB' }]);
  // The client's own name stays the gateway's to keep (and record).
  await a.query("SET application_name = 'qf_report'");
  assert.deepEqual((await a.query('SHOW application_name')).rows, [{ application_name: 'qf_report' }]);

  // Another client, on the one pooled connection: none of it.
  const b = await connected(gw);
  gw.defer(() => b.end());
  const seen = (await b.query(`SELECT current_user AS who, current_setting('search_path') AS path,
    current_setting('statement_timeout') AS timeout, current_setting('app.tenant', true) AS tenant,
    current_setting('TimeZone') AS tz, current_setting('work_mem') AS mem`)).rows[0];
  assert.equal(seen.who, 'postgres');
  assert.equal(seen.path, '"$user", public');
  assert.equal(seen.timeout, '0');
  assert.ok(!seen.tenant, `tenant ${seen.tenant}`);
  assert.notEqual(seen.tz, '<+09>-09');
  assert.notEqual(seen.mem, '7MB');
  await assert.rejects(b.query('SELECT v FROM qf_where'), (e) => e.code === '42P01');
  assert.equal((await b.query('SELECT count(*)::int AS n FROM qf_rls')).rows[0].n, 2,
    'superuser: no policy applies');
  // DISCARD ALL lets a's settings go with its connection.
  await a.query('DISCARD ALL');
  assert.equal((await a.query('SELECT current_user AS who')).rows[0].who, 'postgres');
  assert.equal((await a.query("SELECT current_setting('search_path') AS p")).rows[0].p, '"$user", public');
});

test('past maxPinnedSessions a statement that would keep one more connection is refused (53300) before it runs; a client leaving frees one', T, async (t) => {
  const gw = await laneGateway(t, 24182, { cluster: { maxPinnedSessions: 1 } });
  const a = await connected(gw);
  gw.defer(() => a.end());
  await a.query('SET search_path = public');
  await a.query('CREATE TEMP TABLE qf_pin_a (x int)'); // its own connection: no second pin
  const b = await connected(gw);
  gw.defer(() => b.end());
  await assert.rejects(b.query('CREATE TEMP TABLE qf_pin_b (x int)'),
    (e) => e.code === '53300' && /maxPinnedSessions/.test(e.message));
  assert.deepEqual((await b.query('SELECT 1 AS n')).rows, [{ n: 1 }], 'the session goes on');
  // Inside a block too; the block's connection is untouched.
  await b.query('BEGIN');
  await b.query('CREATE TABLE IF NOT EXISTS qf_pin_block (x int)');
  await assert.rejects(b.query("SET work_mem = '8MB'"), (e) => e.code === '53300');
  await b.query('ROLLBACK');
  const d = await direct();
  t.after(() => d.end());
  assert.equal((await d.query("SELECT count(*)::int AS n FROM pg_tables WHERE tablename = 'qf_pin_block'")).rows[0].n, 0);
  await a.end();
  await waitFor(async () => {
    try { await b.query('CREATE TEMP TABLE qf_pin_b (x int)'); return true; } catch { return false; }
  }, { what: "a's pin to go with its connection" });
  assert.deepEqual((await b.query('SELECT count(*)::int AS n FROM qf_pin_b')).rows, [{ n: 0 }]);
});

test("clients' SETs are replayed on whichever pooled connection their statements get: they stay multiplexed and never see each other's", T, async (t) => {
  const d = await direct();
  t.after(async () => {
    await d.query('DROP TABLE IF EXISTS public.qf_seen, qf_app.qf_seen');
    await d.end();
  });
  await d.query(`CREATE SCHEMA IF NOT EXISTS qf_app;
    CREATE TABLE IF NOT EXISTS qf_app.qf_seen (v text); TRUNCATE qf_app.qf_seen;
    INSERT INTO qf_app.qf_seen VALUES ('in qf_app');
    DROP TABLE IF EXISTS public.qf_seen; CREATE TABLE public.qf_seen (v text);
    INSERT INTO public.qf_seen VALUES ('in public')`);
  // maxPinnedSessions 0: a SET that pinned a connection would be refused.
  const gw = await laneGateway(t, 24184, { poolSize: 2, maxRunningQueries: 3, cluster: { maxPinnedSessions: 0 } });
  const [a, b, c] = [await connected(gw), await connected(gw), await connected(gw)];
  for (const x of [a, b, c]) gw.defer(() => x.end());
  await a.query('SET search_path = qf_app, public');
  await a.query("SET app.tenant = 'acme' -- the tenant");
  await a.query('SET statement_timeout = 4000');
  await b.query("SET search_path TO public; SET TIME ZONE 'Asia/Tokyo'");
  const look = `SELECT (SELECT v FROM qf_seen) AS v, current_setting('app.tenant', true) AS tenant,
    current_setting('statement_timeout') AS timeout, current_setting('TimeZone') AS tz`;
  const want = {
    a: { v: 'in qf_app', tenant: 'acme', timeout: '4s' },
    b: { v: 'in public', timeout: '0', tz: 'Asia/Tokyo' },
    c: { v: 'in public', timeout: '0' },
  };
  // Three clients at once on two pooled connections, round after round:
  // each statement finds whatever connection is free.
  for (let round = 0; round < 15; ++round) {
    const seen = await Promise.all([a, b, c].map((x) => x.query(look)));
    for (const [name, r] of [['a', seen[0]], ['b', seen[1]], ['c', seen[2]]]) {
      const row = r.rows[0];
      assert.equal(row.v, want[name].v, `${name} round ${round}`);
      assert.equal(row.timeout, want[name].timeout, `${name} round ${round}`);
      if (name === 'a') assert.equal(row.tenant, 'acme');
      else assert.ok(!row.tenant, `${name} saw tenant ${row.tenant}`);
      if (name === 'b') assert.equal(row.tz, 'Asia/Tokyo');
      else assert.notEqual(row.tz, 'Asia/Tokyo', `${name} round ${round}`);
    }
  }
  // A SET the server refuses changes nothing; RESET and DISCARD ALL forget.
  await assert.rejects(a.query("SET statement_timeout = 'nonsense'"), (e) => e.code === '22023');
  assert.equal((await a.query(look)).rows[0].timeout, '4s');
  await a.query('RESET search_path');
  assert.equal((await a.query(look)).rows[0].v, 'in public');
  await a.query('DISCARD ALL');
  const after = (await a.query(look)).rows[0];
  assert.ok(!after.tenant && after.timeout === '0', JSON.stringify(after));
  // No more connections than statements ran at once (and the health
  // check's): nobody was pinned.
  const backends = await gatewayBackends(d, gw);
  assert.ok(backends.length <= 4, JSON.stringify(backends));
});

test("pgjdbc connections that each set their isolation level and schema (as a pool does) all get theirs, and none is pinned", T, async (t) => {
  const d = await direct();
  t.after(() => d.end());
  await d.query('CREATE SCHEMA IF NOT EXISTS qf_even; CREATE SCHEMA IF NOT EXISTS qf_odd');
  // Six connections at once, two connections pooled, none to pin.
  const gw = await laneGateway(t, 24186, { poolSize: 2, cluster: { maxPinnedSessions: 0 } });
  const r = spawnSync('java', ['-cp', '/usr/share/java/postgresql.jar', 'jdbc/PgJdbcSessions.java',
    String(gw.pgPort), '6'], { encoding: 'utf8', timeout: 120000 });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(r.stdout.trim().split('\n'), [0, 1, 2, 3, 4, 5].map(
    (i) => `${i} ${i % 2 ? 'repeatable read' : 'serializable'} ${i % 2 ? 'qf_odd' : 'qf_even'}`));
});

test("settings in the startup packet take effect, and RESET goes back to them: node-postgres options, psql's PGOPTIONS, pgjdbc's currentSchema", T, async (t) => {
  const d = await direct();
  t.after(() => d.end());
  await d.query('CREATE SCHEMA IF NOT EXISTS qf_even; CREATE SCHEMA IF NOT EXISTS qf_odd');
  const gw = await laneGateway(t, 24188, { poolSize: 1, cluster: { maxPinnedSessions: 0 } });
  // node-postgres sends statement_timeout as a startup parameter, options as given.
  const a = client(gw, { statement_timeout: 150, options: '-c search_path=qf_odd,public' });
  await a.connect();
  gw.defer(() => a.end());
  await assert.rejects(a.query('SELECT pg_sleep(2)'), (e) => e.code === '57014');
  assert.equal((await a.query('SELECT current_schema() AS s')).rows[0].s, 'qf_odd');
  await a.query('SET search_path = public');
  await a.query('RESET search_path');
  assert.equal((await a.query('SELECT current_schema() AS s')).rows[0].s, 'qf_odd');
  // Another client on the one pooled connection has none of it.
  const b = await connected(gw);
  gw.defer(() => b.end());
  assert.equal((await b.query('SELECT current_schema() AS s')).rows[0].s, 'public');
  await b.query('SELECT pg_sleep(0.3)');
  const psql = execFileSync('psql', ['-h', '127.0.0.1', '-p', String(gw.pgPort), '-U', 'postgres', '-d', 'postgres',
    '-Atc', 'SHOW search_path', '-c', 'SHOW work_mem'],
  { encoding: 'utf8', env: { ...process.env, PGOPTIONS: '-c search_path=qf_even --work_mem=7MB' } });
  assert.deepEqual(psql.trim().split('\n'), ['qf_even', '7MB']);
  const jdbc = spawnSync('java', ['-cp', '/usr/share/java/postgresql.jar', 'jdbc/PgJdbcCurrentSchema.java',
    String(gw.pgPort)], { encoding: 'utf8', timeout: 120000 });
  assert.equal(jdbc.status, 0, jdbc.stderr);
  assert.equal(jdbc.stdout.trim(), 'qf_even');
});

test('DEALLOCATE reaches the statements SQL PREPARE made on the server; DEALLOCATE ALL also drops the ones the gateway prepared there, which it then prepares again', T, async (t) => {
  const gw = await laneGateway(t, 24190, { poolSize: 1 });
  const c = await connected(gw);
  gw.defer(() => c.end());
  await c.query('PREPARE qf_p AS SELECT 1 AS n');
  await c.query('DEALLOCATE qf_p');
  await c.query('PREPARE qf_p AS SELECT 2 AS n'); // before: "already exists"
  assert.deepEqual((await c.query('EXECUTE qf_p')).rows, [{ n: 2 }]);
  await assert.rejects(c.query('DEALLOCATE qf_nosuch'), (e) => e.code === '26000');
  // A named protocol statement is prepared on the server under our name.
  const text = 'SELECT $1::int + 40 AS n';
  assert.deepEqual((await c.query({ name: 'qf_before', text, values: [2] })).rows, [{ n: 42 }]);
  await c.query('DEALLOCATE ALL');
  // The same SQL under a new name: prepared again, not bound to the dropped one.
  assert.deepEqual((await c.query({ name: 'qf_after', text, values: [3] })).rows, [{ n: 43 }]);
  await assert.rejects(c.query('EXECUTE qf_p'), (e) => e.code === '26000');
});

test('a statement waiting for a slot is listed as QUEUED, runs and is recorded under the same id, and the admin API cancels a waiting one', T, async (t) => {
  const gw = await laneGateway(t, 24192, { maxRunningQueries: 1 });
  const [holder, waiter, other] = [await connected(gw), await connected(gw), await connected(gw)];
  for (const x of [holder, waiter, other]) gw.defer(() => x.end());
  const holding = holder.query('SELECT pg_sleep(0.8)');
  await waitFor(async () => (await gw.running(CLUSTER)) === 1, { what: 'the one slot taken' });
  const waiting = waiter.query('SELECT pg_sleep(0.5) AS qf_waited');
  let listed;
  await waitFor(async () => {
    listed = (await gw.admin('/admin/queries/running')).body.find((q) => /qf_waited/.test(q.sqlPreview));
    return listed?.state === 'QUEUED';
  }, { what: 'the waiting statement listed' });
  assert.equal(listed.protocol, 'postgresWire');
  await holding;
  await waitFor(async () => {
    const now = (await gw.admin('/admin/queries/running')).body.find((q) => /qf_waited/.test(q.sqlPreview));
    return now?.state === 'RUNNING' && now.id === listed.id;
  }, { what: 'it running under the id it waited under' });
  await waiting;
  assert.equal((await gw.historyRecord(listed.id)).status, 'Success');

  // Cancelled by the admin API while it waits.
  const holding2 = holder.query('SELECT pg_sleep(0.8)');
  await waitFor(async () => (await gw.running(CLUSTER)) === 1, { what: 'the slot taken again' });
  const doomed = other.query('SELECT 1 AS qf_doomed').then(() => null, (e) => e);
  let queued;
  await waitFor(async () => {
    queued = (await gw.admin('/admin/queries/running')).body.find((q) => /qf_doomed/.test(q.sqlPreview));
    return queued?.state === 'QUEUED';
  }, { what: 'the doomed statement queued' });
  assert.deepEqual((await gw.admin(`/admin/queries/${queued.id}`, { method: 'DELETE' })).body, { cancelled: queued.id });
  assert.equal((await doomed)?.code, '57014');
  await holding2;
  assert.deepEqual((await other.query('SELECT 2 AS n')).rows, [{ n: 2 }]);
});

test("a cursor outside a block runs on the fast lane with its client's settings and state; closing it early stops the server's query", T, async (t) => {
  const d = await direct();
  t.after(() => d.end());
  await d.query('CREATE SCHEMA IF NOT EXISTS qf_cursor');
  const gw = await laneGateway(t, 24194, { poolSize: 1 });
  // State of its own (a temporary table): its connection is the client's.
  const a = await connected(gw);
  gw.defer(() => a.end());
  await a.query('CREATE TEMP TABLE qf_cur AS SELECT g FROM generate_series(1, 1000) g');
  const mine = a.query(new Cursor('SELECT g FROM qf_cur ORDER BY g'));
  assert.deepEqual((await mine.read(3)).map((r) => r.g), [1, 2, 3]);
  assert.deepEqual((await mine.read(2)).map((r) => r.g), [4, 5]);
  await mine.close();
  assert.deepEqual((await a.query('SELECT count(*)::int AS n FROM qf_cur')).rows, [{ n: 1000 }]);
  // A setting (replayed, nothing pinned), and a result too long to read to
  // its end: closing the cursor cancels the server's query rather than
  // reading the rest away.
  const b = await connected(gw);
  gw.defer(() => b.end());
  await b.query('SET search_path = qf_cursor, public');
  // generate_series() in the select list streams (in FROM it would be
  // built whole first).
  const long = b.query(new Cursor('SELECT current_schema() AS s, generate_series(1, 20000000) AS g'));
  const first = await long.read(2);
  assert.deepEqual(first, [{ s: 'qf_cursor', g: 1 }, { s: 'qf_cursor', g: 2 }]);
  await long.close();
  assert.deepEqual((await b.query('SELECT current_schema() AS s')).rows, [{ s: 'qf_cursor' }]);
  // It ran once (its Describe and Executes on one run), and read a few
  // batches before it was stopped.
  const runs = (await gw.historyWhen({ search: '20000000' })).queries;
  assert.equal(runs.length, 1, JSON.stringify(runs.map((q) => [q.status, q.rowsReturned])));
  assert.equal(runs[0].status, 'Success');
  assert.ok(runs[0].rowsReturned < 20000000, `read ${runs[0].rowsReturned} rows`);
  // A cursor over a statement with an effect has it once.
  await d.query('DROP TABLE IF EXISTS qf_cur_effect; CREATE TABLE qf_cur_effect (x int)');
  const insert = b.query(new Cursor('INSERT INTO public.qf_cur_effect VALUES (1), (2) RETURNING x'));
  assert.deepEqual((await insert.read(10)).map((r) => r.x), [1, 2]);
  await insert.close();
  assert.deepEqual((await d.query('SELECT count(*)::int AS n FROM qf_cur_effect')).rows, [{ n: 2 }]);
});

test("a cancel that reaches the server after its statement ended cannot cancel the next client's statement on that connection", T, async (t) => {
  // The cancel's own connection to the server is held back by the proxy
  // until the statement it was for has ended and another client's runs.
  const proxy = await gatedProxy(24197);
  const gw = await laneGateway(t, 24195, { endpoint: proxy.url, poolSize: 1, maxRunningQueries: 2 });
  gw.defer(() => proxy.close());
  const a = await connected(gw);
  gw.defer(() => a.end());
  await a.query('SELECT 1'); // the pooled connection, opened while the proxy lets it
  proxy.hold();
  const sql = 'SELECT pg_sleep(0.3) AS qf_late_cancel';
  const first = a.query(sql);
  let entry;
  await waitFor(async () => {
    entry = (await gw.admin('/admin/queries/running')).body.find?.((q) => q.sqlPreview === sql);
    return entry;
  }, { what: 'the first statement running' });
  assert.equal((await gw.admin(`/admin/queries/${encodeURIComponent(entry.id)}`, { method: 'DELETE' })).status, 200);
  await first; // ended on its own: its cancel is still held
  await waitFor(async () => proxy.state.held.length >= 1, { what: 'the cancel held at the proxy' });
  const b = client(gw);
  gw.defer(() => b.end());
  const victim = (async () => {
    await b.connect();
    return b.query('SELECT pg_sleep(0.8) AS qf_victim');
  })();
  await waitFor(async () => (await gw.admin('/admin/queries/running')).body.some?.(
    (q) => /qf_victim/.test(q.sqlPreview)), { what: "the next client's statement" });
  proxy.release(); // the cancel arrives now (and the victim's new connection, if it needed one)
  const got = await victim.then((r) => r.rows, (e) => e);
  assert.ok(!(got instanceof Error), `the next client's statement was cancelled: ${got.message}`);
});

test("a replay the server refuses fails that client's statement only; the connection serves others, and RESET ROLE or DISCARD ALL lets the client go on", T, async (t) => {
  const d = await direct();
  t.after(() => d.end());
  await d.query('DO $$ BEGIN CREATE ROLE qf_gone_role; EXCEPTION WHEN duplicate_object THEN NULL; END $$');
  // One connection for both: each statement needs the other's settings undone.
  const gw = await laneGateway(t, 24198, { poolSize: 1, maxRunningQueries: 1 });
  const [a, b] = [await connected(gw), await connected(gw)];
  for (const x of [a, b]) gw.defer(() => x.end());
  await a.query('SET ROLE qf_gone_role');
  assert.equal((await a.query('SELECT current_user AS u')).rows[0].u, 'qf_gone_role');
  assert.equal((await b.query('SELECT current_user AS u')).rows[0].u, 'postgres');
  await d.query('DROP ROLE qf_gone_role');
  await assert.rejects(a.query('SELECT 1 AS qf_replay_refused'),
    (e) => e.code === '22023' && /qf_gone_role/.test(e.message));
  assert.equal((await b.query('SELECT current_user AS u')).rows[0].u, 'postgres');
  const rec = (await gw.historyWhen({ search: 'qf_replay_refused' })).queries[0];
  assert.equal(rec.status, 'Failed');
  // The RESET is given with the replay: what is replayed is the client's
  // settings as they will be after it, without the dropped role.
  await a.query('RESET ROLE');
  assert.equal((await a.query('SELECT current_user AS u')).rows[0].u, 'postgres');
  assert.equal((await b.query('SELECT current_user AS u')).rows[0].u, 'postgres');
  await d.query('CREATE ROLE qf_gone_role');
  await a.query('SET ROLE qf_gone_role');
  await b.query('SELECT 1'); // the connection has b's settings again
  await d.query('DROP ROLE qf_gone_role');
  await assert.rejects(a.query('SELECT 2'), (e) => e.code === '22023');
  await a.query('DISCARD ALL');
  assert.equal((await a.query('SELECT current_user AS u')).rows[0].u, 'postgres');
});

test('a full queue (53300) and a wait past capacityWaitTimeoutSecs (53400) each have their SQLSTATE on the fast lane', T, async (t) => {
  const gw = await laneGateway(t, 24208, { maxRunningQueries: 1, group: { maxQueuedQueries: 1, capacityWaitTimeoutSecs: 1 } });
  const [holder, waiter, third] = [await connected(gw), await connected(gw), await connected(gw)];
  for (const x of [holder, waiter, third]) gw.defer(() => x.end());
  const holding = holder.query('SELECT pg_sleep(2)');
  await waitFor(async () => (await gw.running(CLUSTER)) === 1, { what: 'the one slot taken' });
  const waiting = waiter.query('SELECT 1 AS qf_timed_out').then(() => null, (e) => e);
  await waitFor(async () => (await gw.admin('/admin/queries/running')).body.some?.(
    (q) => q.state === 'QUEUED'), { what: 'one waiting' });
  await assert.rejects(third.query('SELECT 2'), (e) => e.code === '53300' && /queue is full/.test(e.message));
  const timedOut = await waiting;
  assert.equal(timedOut?.code, '53400', timedOut?.message);
  await holding;
  assert.deepEqual((await waiter.query('SELECT 3 AS n')).rows, [{ n: 3 }]);
  assert.equal((await gw.historyWhen({ search: 'qf_timed_out' })).queries[0].status, 'Failed');
});

test("a script in one Query runs in one transaction as on PostgreSQL: a failure undoes what ran before it, its COMMIT and BEGIN count, savepoints need the client's own block", T, async (t) => {
  const gw = await laneGateway(t, 24210, { poolSize: 2, maxRunningQueries: 2 });
  const d = await direct();
  t.after(() => d.end());
  const scripts = [
    'INSERT INTO qf_script VALUES (1); SELECT 1/0; INSERT INTO qf_script VALUES (2)',
    'INSERT INTO qf_script VALUES (3); COMMIT; INSERT INTO qf_script VALUES (4); SELECT 1/0',
    'INSERT INTO qf_script VALUES (5); BEGIN; INSERT INTO qf_script VALUES (6); COMMIT; SELECT 1/0',
    'INSERT INTO qf_script VALUES (7); INSERT INTO qf_script VALUES (8); SELECT count(*)::int AS n FROM qf_script',
    'INSERT INTO qf_script VALUES (9); ROLLBACK; INSERT INTO qf_script VALUES (10); INSERT INTO qf_script VALUES (11)',
    'SELECT 1 AS one; VACUUM qf_script',
    'INSERT INTO qf_script VALUES (12); SAVEPOINT s; INSERT INTO qf_script VALUES (13)',
    'INSERT INTO qf_script VALUES (14); BEGIN; INSERT INTO qf_script VALUES (15)',
    "SET LOCAL work_mem = '7MB'; SELECT current_setting('work_mem') AS w",
  ];
  // What a client sees, and what the table holds after each script.
  const outcome = async (c, reset) => {
    const seen = [];
    const warnings = [];
    c.on('notice', (n) => warnings.push(n.message));
    await reset.query('DROP TABLE IF EXISTS qf_script; CREATE TABLE qf_script (a int)');
    for (const sql of scripts) {
      const r = await c.query(sql).then(
        (res) => [res].flat().map((x) => `${x.command} ${JSON.stringify(x.rows)}`),
        (e) => `${e.code} ${e.message}`);
      if (sql.endsWith('(15)')) await c.query('COMMIT'); // the client's own block stayed open
      const [{ s }] = (await reset.query("SELECT coalesce(string_agg(a::text, ',' ORDER BY a), '') AS s FROM qf_script")).rows;
      seen.push({ sql, r, s });
    }
    return { seen, warnings };
  };
  const straight = await direct();
  t.after(() => straight.end());
  const expected = await outcome(straight, d);
  const c = await connected(gw);
  gw.defer(() => c.end());
  const got = await outcome(c, d);
  assert.deepEqual(got.seen, expected.seen);
  assert.deepEqual(got.warnings, expected.warnings);
  await d.query('DROP TABLE IF EXISTS qf_script');
});

test('parameters keep the types and binary forms their clients gave them: pgjdbc typed, arrays and bytes; node-postgres Buffers; 40,000 parameters', T, async (t) => {
  const gw = await laneGateway(t, 24212, { poolSize: 2 });
  const jdbc = (port) => pgjdbc('PgJdbcParameters', port);
  const expected = jdbc(new URL(PG_URL).port);
  assert.equal(expected.status, 0, expected.stderr);
  const got = jdbc(gw.pgPort);
  assert.equal(got.status, 0, got.stderr);
  assert.equal(got.stdout, expected.stdout);
  assert.match(got.stdout, /^0 5 Integer$/m);

  const c = await connected(gw);
  gw.defer(() => c.end());
  // node-postgres sends a Buffer in binary, its type left to the server.
  for (const bytes of [Buffer.from('\\x41'), Buffer.from([0, 255, 10])]) {
    const { rows } = await c.query('SELECT $1::bytea AS b', [bytes]);
    assert.deepEqual(rows[0].b, bytes);
  }
  const many = Array.from({ length: 40000 }, (_, i) => i % 7);
  const sum = await c.query(
    `SELECT sum(x)::int AS s FROM unnest(ARRAY[${many.map((_, i) => `$${i + 1}::int`).join(',')}]) x`, many);
  assert.equal(sum.rows[0].s, many.reduce((a, b) => a + b, 0));
});

test('session state that no SET shows keeps its connection for its client: set_config() in any spelling, SET in a DO block, a table created in pg_temp or in a DO block', T, async (t) => {
  // Two pooled connections, so that a leak would reach the next client.
  const gw = await laneGateway(t, 24214, { poolSize: 2, maxRunningQueries: 2 });
  const leaks = [
    "SELECT * FROM set_config('statement_timeout', '1ms', false)",
    "SELECT SET_CONFIG ('statement_timeout', '1ms', 1 = 0)",
    "DO $$ BEGIN PERFORM pg_catalog.set_config('statement_timeout', '1ms', false); END $$",
    "DO $$ BEGIN SET statement_timeout = '1ms'; END $$",
    "DO $$ BEGIN EXECUTE format('SET %s = %L', 'statement_timeout', '1ms'); END $$",
  ];
  for (const sql of leaks) {
    const a = await connected(gw);
    await a.query(sql);
    // The client that ran it keeps its setting...
    assert.equal((await a.query("SELECT current_setting('statement_timeout') AS t")).rows[0].t, '1ms', sql);
    // ...and nobody else gets it, then or after it left.
    const b = await connected(gw);
    for (let i = 0; i < 4; i++)
      assert.equal((await b.query("SELECT current_setting('statement_timeout') AS t")).rows[0].t, '0', sql);
    await a.end();
    for (let i = 0; i < 4; i++)
      assert.equal((await b.query("SELECT current_setting('statement_timeout') AS t")).rows[0].t, '0', sql);
    await b.end();
  }
  const a = await connected(gw);
  gw.defer(() => a.end());
  await a.query('CREATE TABLE pg_temp.qf_secret (v text)');
  await a.query("INSERT INTO pg_temp.qf_secret VALUES ('mine')");
  const b = await connected(gw);
  gw.defer(() => b.end());
  for (let i = 0; i < 4; i++)
    await assert.rejects(b.query('SELECT * FROM pg_temp.qf_secret'), (e) => e.code === '42P01');
  assert.deepEqual((await a.query('SELECT v FROM pg_temp.qf_secret')).rows, [{ v: 'mine' }]);
  await a.query("DO $$ BEGIN EXECUTE 'CREATE TEMP TABLE qf_made_in_do AS SELECT 1 AS v'; END $$");
  for (let i = 0; i < 4; i++)
    await assert.rejects(b.query('SELECT * FROM qf_made_in_do'), (e) => e.code === '42P01');
  assert.deepEqual((await a.query('SELECT v FROM qf_made_in_do')).rows, [{ v: 1 }]);
});

test('COMMIT PREPARED and ROLLBACK PREPARED reach the server (they are not the end of a block)', T, async (t) => {
  const gw = await laneGateway(t, 24216);
  const c = await connected(gw);
  gw.defer(() => c.end());
  const d = await direct();
  t.after(() => d.end());
  for (const sql of ["COMMIT PREPARED 'qf_none'", "ROLLBACK PREPARED 'qf_none'"]) {
    const expected = await d.query(sql).then(() => 'ok', (e) => e.code);
    assert.notEqual(expected, 'ok');
    assert.equal(await c.query(sql).then(() => 'ok', (e) => e.code), expected, sql);
  }
});

test("pgjdbc's executeBatch in autocommit is one transaction, as on PostgreSQL: a failing row undoes the rows before it", T, async (t) => {
  const gw = await laneGateway(t, 24218, { poolSize: 2 });
  const run = (port) => spawnSync('java', ['-cp', '/usr/share/java/postgresql.jar', 'jdbc/PgJdbcBatch.java',
    String(port)], { encoding: 'utf8', timeout: 120000 });
  const expected = run(new URL(PG_URL).port);
  assert.equal(expected.status, 0, expected.stderr);
  assert.equal(expected.stdout, '23505 0\nok 3\n');
  const got = run(gw.pgPort);
  assert.equal(got.status, 0, got.stderr);
  assert.equal(got.stdout, expected.stdout);
});

test('after a cursor closed early, the next queries get their own types and all their rows', T, async (t) => {
  const gw = await laneGateway(t, 24220);
  const c = await connected(gw);
  gw.defer(() => c.end());
  const readTwoAndClose = async () => {
    const cursor = c.query(new Cursor('SELECT g FROM generate_series(1, 10) g'));
    assert.equal((await cursor.read(2)).length, 2);
    await cursor.close();
  };
  await readTwoAndClose();
  const r = await c.query("SELECT '{1,2}'::int[] AS ia, 'a'::text AS t, '{}'::jsonb AS jb");
  assert.deepEqual(r.fields.map((f) => f.dataTypeID), [1007, 25, 3802]);
  assert.deepEqual(r.rows[0].ia, [1, 2]);
  await assert.rejects(c.query('SELECT 1/0'), (e) => e.code === '22012');
  await readTwoAndClose();
  for (let i = 0; i < 3; i++)
    assert.equal((await c.query('SELECT generate_series(1, 5) AS g')).rowCount, 5);
});

test("pooled connections keep the server's own TimeZone (here its role's), so clients read timestamps as they would directly", T, async (t) => {
  const d = await direct();
  t.after(() => d.end());
  await d.query("DO $$ BEGIN CREATE ROLE qf_tokyo LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$");
  await d.query("ALTER ROLE qf_tokyo SET timezone = 'Asia/Tokyo'");
  const url = new URL(PG_URL);
  url.username = 'qf_tokyo';
  const gw = await laneGateway(t, 24222, { endpoint: url.toString() });
  const c = await connected(gw);
  gw.defer(() => c.end());
  const sql = "SELECT current_setting('TimeZone') AS zone, '2024-02-29 12:00:00+00'::timestamptz::text AS s, '2024-02-29 12:00:00+00'::timestamptz AS t";
  const { rows } = await c.query(sql);
  assert.deepEqual(rows[0], { zone: 'Asia/Tokyo', s: '2024-02-29 21:00:00+09', t: new Date('2024-02-29T12:00:00Z') });
  // Read through a cursor too, whose rows the gateway writes itself.
  const cursor = c.query(new Cursor(sql));
  const [row] = await cursor.read(1);
  await cursor.close();
  assert.deepEqual(row, rows[0]);
});

test("an error's position counts in the client's own text, also for a statement in the middle of a Query (psql's LINE 1 marker)", T, async (t) => {
  const gw = await laneGateway(t, 24224);
  const c = await connected(gw);
  gw.defer(() => c.end());
  const d = await direct();
  t.after(() => d.end());
  for (const sql of ['SELECT nosuch FROM pg_class', "SELECT 1; SELECT 'é' AS x, nosuch FROM pg_class",
    'SELECT $1::int + nosuch FROM pg_class']) {
    const args = sql.includes('$1') ? [1] : undefined;
    const expected = await d.query(sql, args).then(() => null, (e) => e.position);
    assert.ok(expected, sql);
    assert.equal(await c.query(sql, args).then(() => null, (e) => e.position), expected, sql);
  }
});

test('the server describes a statement before it runs: pgjdbc\'s parameter and column types, psql\'s gdesc of an INSERT ... RETURNING, in a block too', T, async (t) => {
  const gw = await laneGateway(t, 24228);
  const d = await direct();
  gw.defer(() => d.end());
  const reset = 'DROP TABLE IF EXISTS qf_describe; CREATE TABLE qf_describe (id serial PRIMARY KEY, n int, s text, at timestamptz)';
  const jdbc = (port) => pgjdbc('PgJdbcDescribe', port);
  await d.query(reset);
  const expected = jdbc(PG_PORT);
  assert.equal(expected.status, 0, expected.stderr);
  await d.query(reset);
  const got = jdbc(gw.pgPort);
  assert.equal(got.status, 0, got.stderr);
  assert.equal(got.stdout, expected.stdout);
  assert.match(got.stdout, /^\$1 int4 \$2 text \| id serial \| s text$/m);
  assert.match(got.stdout, /^block 25P02$/m);

  const gdesc = (port) => execFileSync('psql', ['-X', '-A', '-t', '-h', '127.0.0.1', '-p', String(port), '-U', 'postgres',
    '-d', 'postgres', '-v', 'ON_ERROR_STOP=1'],
  { encoding: 'utf8', input: 'INSERT INTO qf_describe (n) VALUES (1) RETURNING id, n * 2.5 AS x \\gdesc\n' });
  assert.equal(gdesc(gw.pgPort), gdesc(PG_PORT));
  assert.equal(gdesc(gw.pgPort), 'id|integer\nx|numeric\n');
  const rows = await d.query('SELECT count(*)::int AS n FROM qf_describe');
  assert.equal(rows.rows[0].n, 1, 'a describe runs nothing: only pgjdbc\'s last insert is there');
});

test('a portal read in chunks with other statements between the chunks goes on where it stopped (pgjdbc\'s fetch size, writing per row)', T, async (t) => {
  const gw = await laneGateway(t, 24230);
  const jdbc = (port) => pgjdbc('PgJdbcFetchInterleaved', port);
  const direct = jdbc(PG_PORT);
  assert.equal(direct.status, 0, direct.stderr);
  assert.equal(direct.stdout, 'read 1 2 3 4 5 6 7 8 9 10\nwritten 10\nin turn 1 100 2 200 3 300 4 5\n');
  const got = jdbc(gw.pgPort);
  assert.equal(got.status, 0, got.stderr);
  assert.equal(got.stdout, direct.stdout);
});

test('pgjdbc\'s read-only transaction is read-only: its BEGIN READ ONLY, sent in one batch with the first query, reaches the server', T, async (t) => {
  const gw = await laneGateway(t, 24232);
  const jdbc = (port) => pgjdbc('PgJdbcReadOnly', port);
  const direct = jdbc(PG_PORT);
  assert.equal(direct.status, 0, direct.stderr);
  assert.equal(direct.stdout, 'transaction_read_only on\nrefused 25006\n');
  const got = jdbc(gw.pgPort);
  assert.equal(got.status, 0, got.stderr);
  assert.equal(got.stdout, direct.stdout);
});

test('a kept server statement whose plan no longer fits its table (ALTER TABLE) is parsed anew, not failed for every client after', T, async (t) => {
  const gw = await laneGateway(t, 24234, { poolSize: 1 });
  const d = await direct();
  gw.defer(() => d.end());
  await d.query("DROP TABLE IF EXISTS qf_altered; CREATE TABLE qf_altered (a int); INSERT INTO qf_altered VALUES (1)");
  gw.defer(() => d.query('DROP TABLE IF EXISTS qf_altered'));
  const a = await connected(gw);
  gw.defer(() => a.end());
  const named = { name: 'qf_n', text: 'SELECT * FROM qf_altered WHERE a > $1', values: [0] };
  for (let i = 0; i < 3; i++)
    await a.query(named);
  await d.query("ALTER TABLE qf_altered ADD COLUMN b text DEFAULT 'bb'");
  // Its own client hears it once, as directly (node-postgres keeps its own name).
  await assert.rejects(a.query(named), (e) => e.code === '0A000');
  // Another client's statement of the same text runs on the same pooled connection.
  const b = await connected(gw);
  gw.defer(() => b.end());
  const r = await b.query({ ...named, name: 'qf_other' });
  assert.deepEqual(r.rows, [{ a: 1, b: 'bb' }]);
});

test("lastval() and currval() read the client's own sequences: where its statements last advanced one, or an error (55000), never another client's", T, async (t) => {
  const gw = await laneGateway(t, 24236, { poolSize: 3, maxRunningQueries: 8 });
  const d = await direct();
  gw.defer(() => d.end());
  await d.query('DROP TABLE IF EXISTS qf_ids; CREATE TABLE qf_ids (id serial PRIMARY KEY, who int)');
  gw.defer(() => d.query('DROP TABLE IF EXISTS qf_ids'));
  // Alone, the next statement gets the same connection back: as directly.
  const alone = await connected(gw);
  gw.defer(() => alone.end());
  for (let i = 0; i < 5; i++) {
    const { rows: [{ id }] } = await alone.query('INSERT INTO qf_ids (who) VALUES (0) RETURNING id');
    const { rows: [v] } = await alone.query("SELECT lastval() AS last, currval('qf_ids_id_seq') AS cur");
    assert.deepEqual([Number(v.last), Number(v.cur)], [id, id]);
  }
  // Many at once on three connections: right, or told it cannot be.
  const clients = await Promise.all(Array.from({ length: 8 }, () => connected(gw)));
  for (const c of clients) gw.defer(() => c.end());
  let right = 0;
  let refused = 0;
  await Promise.all(clients.map(async (c, who) => {
    for (let i = 0; i < 20; i++) {
      const { rows: [{ id }] } = await c.query('INSERT INTO qf_ids (who) VALUES ($1) RETURNING id', [who + 1]);
      if (i % 2) // a statement between, on whichever connection: it moves nothing
        await c.query('SELECT 1');
      try {
        const { rows: [{ last }] } = await c.query('SELECT lastval() AS last');
        assert.equal(Number(last), id, `client ${who} read another client's lastval()`);
        right += 1;
      } catch (e) {
        if (e.code !== '55000') throw e;
        refused += 1;
      }
    }
  }));
  assert.equal(right + refused, 160);
  assert.ok(right > 0, 'some read their own');
  // One that advanced none has none, as on PostgreSQL.
  const fresh = await connected(gw);
  gw.defer(() => fresh.end());
  await fresh.query('SELECT 1');
  await assert.rejects(fresh.query('SELECT lastval()'), (e) => e.code === '55000');
  assert.equal(Number((await fresh.query("SELECT nextval('qf_ids_id_seq') = currval('qf_ids_id_seq') AS same")).rows[0].same), 1);
  // In one transaction it always works.
  await clients[0].query('BEGIN');
  const { rows: [{ id }] } = await clients[0].query('INSERT INTO qf_ids (who) VALUES (9) RETURNING id');
  assert.equal(Number((await clients[0].query('SELECT lastval() AS v')).rows[0].v), id);
  await clients[0].query('COMMIT');
});

test("a fast-path function call (libpq's large objects, psql's lo_import) is refused with a clear error and the connection goes on", T, async (t) => {
  const gw = await laneGateway(t, 24238);
  const r = spawnSync('psql', ['-X', '-h', '127.0.0.1', '-p', String(gw.pgPort), '-U', 'postgres', '-d', 'postgres',
    '-v', 'VERBOSITY=verbose'], { encoding: 'utf8', input: "\\lo_import /etc/hostname\nSELECT 'still here' AS s;\n" });
  assert.match(r.stderr, /0A000: the fast-path function call interface is not supported/);
  assert.doesNotMatch(r.stderr, /connection to the server was lost/);
  assert.match(r.stdout, /still here/);
});
