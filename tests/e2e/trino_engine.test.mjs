// `engine: trino`: QueryFlux as the client of Trino clusters. Two QueryFlux
// standalones speak Trino's protocol as the clusters (one of them wants
// HTTP Basic); a third routes to them. Pages are small upstream, so every
// query takes many nextUri polls, all of which must reach its cluster.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import pg from 'pg';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  startGateway, config, runRaw, submit, waitFor, sleep,
} from './support/gateway.mjs';

const ports = {
  one: { trino: 24020, admin: 24021 },
  two: { trino: 24022, admin: 24023 },
  front: { trino: 24024, admin: 24025, pg: 24026 },
};

const demo = [
  "CREATE TABLE t AS SELECT i, 'row ' || i AS label, i * 1.25 AS price FROM range(10) r(i)",
];

function clusterConfig(p, { auth = false } = {}) {
  const cfg = config({
    trinoPort: p.trino,
    adminPort: p.admin,
    maxPageRows: 3,
    clusters: { duck: { engine: 'duckDb', initSql: demo } },
    clusterGroups: { g: { members: ['duck'] } },
  });
  if (auth) {
    cfg.auth = { provider: 'static', allowCleartextWithoutTls: true, staticUsers: { users: { qf: { password: 'secret' } } } };
  }
  return cfg;
}

function frontConfig() {
  const cfg = config({
    trinoPort: ports.front.trino,
    adminPort: ports.front.admin,
    clusters: {
      one: { engine: 'trino', endpoint: `http://127.0.0.1:${ports.one.trino}` },
      two: {
        engine: 'trino', endpoint: `http://127.0.0.1:${ports.two.trino}`,
        auth: { type: 'basic', username: 'qf', password: 'secret' },
      },
    },
    clusterGroups: { trino: { members: ['one', 'two'], maxRunningQueries: 4, strategy: { type: 'roundRobin' } } },
  });
  cfg.monitor = { taskDelay: '500ms', checkTimeout: '2s' };
  cfg.queryflux.frontends.postgresWire = { enabled: true, port: ports.front.pg };
  return cfg;
}

async function healthOf(gw, name) {
  return (await gw.admin(`/admin/clusters/${name}`)).body.status;
}

test('Trino clusters behind QueryFlux: paging, stickiness, types, headers, errors, cancel, health', async (t) => {
  const one = await startGateway(clusterConfig(ports.one));
  t.after(() => one.kill());
  const two = await startGateway(clusterConfig(ports.two, { auth: true }));
  t.after(() => two.kill());
  const front = await startGateway(frontConfig());
  t.after(() => front.kill());
  assert.equal(await healthOf(front, 'one'), 'HEALTHY');
  assert.equal(await healthOf(front, 'two'), 'HEALTHY');

  // Every row of every page, from whichever cluster ran the query.
  for (let i = 0; i < 4; i += 1) {
    const r = await runRaw(front.trinoUrl, `SELECT i, label, price FROM t ORDER BY i -- run ${i}`);
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    assert.equal(r.data.length, 10);
    assert.deepEqual(r.data[9], [9, 'row 9', '11.25']);
  }
  // Each cluster ran two of them, all ten rows each: no poll went astray.
  for (const upstream of [one, two]) {
    const h = await upstream.history({ search: 'FROM t ORDER BY i' });
    assert.equal(h.total, 2, 'round robin over the two clusters');
    for (const q of h.queries) {
      assert.equal(q.status, 'Success');
      assert.equal(q.rowsReturned, 10);
    }
  }
  const frontRecords = await front.history({ search: 'FROM t ORDER BY i' });
  assert.deepEqual(frontRecords.queries.map((q) => q.engineType), ['trino', 'trino', 'trino', 'trino']);

  // The client's X-Trino-* headers reach the cluster. Queries run as the
  // client where the cluster takes no credentials, and as the service
  // account where it does (queryAuth serviceAccount, the default).
  for (let i = 0; i < 2; i += 1) {
    const r = await runRaw(front.trinoUrl, `SELECT 'headers ${i}'`, { user: 'alice', headers: { 'X-Trino-Source': 'etl-job' } });
    assert.deepEqual(r.data, [[`headers ${i}`]]);
  }
  const [atOne] = (await one.history({ search: "'headers" })).queries;
  const [atTwo] = (await two.history({ search: "'headers" })).queries;
  assert.deepEqual([atOne.user, atOne.source], ['alice', 'etl-job']);
  assert.deepEqual([atTwo.user, atTwo.source], ['qf', 'etl-job']);

  // impersonate sends the client's name, which this cluster does not let
  // qf impersonate: its refusal is what the client hears.
  const twoCfg = (await front.admin('/admin/config/clusters/two')).body;
  assert.equal(twoCfg.auth.password, '********', 'the admin API never shows a secret');
  const changed = await front.admin('/admin/config/clusters/two', {
    method: 'PUT', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ ...twoCfg, queryAuth: { type: 'impersonate' } }),
  });
  assert.equal(changed.status, 200, changed.text);
  await waitFor(async () => (await healthOf(front, 'two')) === 'HEALTHY', { what: 'two HEALTHY after the change' });
  const outcomes = [];
  for (let i = 0; i < 2; i += 1) outcomes.push(await runRaw(front.trinoUrl, `SELECT ${i} AS impersonated`, { user: 'alice' }));
  const refused = outcomes.filter((r) => r.error);
  assert.equal(refused.length, 1, 'one of the two went to two');
  assert.match(refused[0].error.message, /refused QueryFlux's credentials \(HTTP 403\)/);
  for (let i = 0; i < 2; i += 1) {
    const r = await runRaw(front.trinoUrl, `SELECT ${i} AS as_qf`, { user: 'qf' });
    assert.equal(r.error, undefined);
  }
  const restored = await front.admin('/admin/config/clusters/two', {
    method: 'PUT', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(twoCfg),
  });
  assert.equal(restored.status, 200, restored.text);
  await waitFor(async () => (await healthOf(front, 'two')) === 'HEALTHY', { what: 'two HEALTHY, restored' });

  // Types through a PostgreSQL client of the front gateway.
  const psql = spawnSync('psql', ['-X', '-A', '-t', '-F', '|', '-h', '127.0.0.1', '-p', String(ports.front.pg), '-U', 'bob', '-d', 'x', '-c',
    "SELECT 42::BIGINT, 1.25::DECIMAL(5,2), DATE '2024-02-29', TIMESTAMP '2024-02-29 12:00:00.123', 'héllo', NULL, true"],
  { encoding: 'utf8', timeout: 20000 });
  assert.equal(psql.stderr, '');
  assert.equal(psql.stdout, '42|1.25|2024-02-29|2024-02-29 12:00:00.123|héllo||t\n');

  // A user name cannot smuggle headers (or requests) to the cluster.
  const eve = new pg.Client({ host: '127.0.0.1', port: ports.front.pg, user: 'eve\r\nX-Trino-Source: injected', database: 'x' });
  await eve.connect();
  for (let i = 0; i < 2; i += 1) assert.deepEqual((await eve.query(`SELECT ${i} AS smuggled`)).rows, [{ smuggled: i }]);
  await eve.end();
  const [atOneEve] = (await one.history({ search: 'AS smuggled' })).queries;
  assert.equal(atOneEve.user, 'eveX-Trino-Source: injected');
  assert.notEqual(atOneEve.source, 'injected');

  // The cluster's error, with its message, reaches the client.
  const bad = await runRaw(front.trinoUrl, 'SELEC 1');
  assert.ok(bad.error);
  assert.match(bad.error.message, /syntax error/i);
  assert.equal(bad.error.errorName, 'SYNTAX_ERROR');

  // Cancel at the front: the query ends on its cluster too.
  const slow = await submit(front.trinoUrl, 'SELECT sleep_ms(20000) AS cancelled_upstream');
  await waitFor(async () => (await one.admin('/admin/queries/running')).body.length
    + (await two.admin('/admin/queries/running')).body.length === 1, { what: 'the slow query upstream' });
  const del = await fetch(`${front.trinoUrl}/v1/query/${slow.body.id}`, { method: 'DELETE' });
  assert.ok(del.status === 200 || del.status === 204);
  await waitFor(async () => (await one.admin('/admin/queries/running')).body.length
    + (await two.admin('/admin/queries/running')).body.length === 0, { what: 'no query left upstream', timeoutMs: 5000 });
  const upstreamRecords = [
    ...(await one.history({ search: 'cancelled_upstream' })).queries,
    ...(await two.history({ search: 'cancelled_upstream' })).queries,
  ];
  assert.deepEqual(upstreamRecords.map((q) => q.status), ['Cancelled']);

  // A cluster that goes away is UNHEALTHY and gets no queries; one that is
  // starting (its /v1/info says so) is not healthy either.
  await one.stop();
  await waitFor(async () => (await healthOf(front, 'one')) === 'UNHEALTHY', { what: 'one UNHEALTHY', timeoutMs: 5000 });
  for (let i = 0; i < 3; i += 1) {
    const r = await runRaw(front.trinoUrl, `SELECT ${i} AS while_one_is_down`);
    assert.equal(r.error, undefined);
  }
  const slowStart = clusterConfig(ports.one);
  slowStart.clusters.pg = {
    engine: 'postgres', endpoint: process.env.QF_PG_URL || 'postgres://postgres@127.0.0.1:15432/postgres',
    healthCheckQuery: 'SELECT pg_sleep(3)',
  };
  slowStart.clusterGroups.slow = { members: ['pg'] };
  slowStart.routingFallback = 'g';
  const restarting = startGateway(slowStart, { readyTimeoutMs: 20000 });
  let sawStarting = false;
  for (let i = 0; i < 40 && !sawStarting; i += 1) {
    const info = await fetch(`http://127.0.0.1:${ports.one.trino}/v1/info`).then((r) => r.json(), () => null);
    sawStarting = info !== null && info.starting === true;
    if (!sawStarting) await sleep(50);
  }
  assert.ok(sawStarting, 'the cluster reports starting while its first health round runs');
  await sleep(1500); // a few front checks while it is starting
  assert.notEqual(await healthOf(front, 'one'), 'HEALTHY');
  const back = await restarting;
  t.after(() => back.kill());
  await waitFor(async () => (await healthOf(front, 'one')) === 'HEALTHY', { what: 'one HEALTHY again', timeoutMs: 5000 });
});

test('leastLoaded weighs what a Trino cluster reports running, its other clients included', async (t) => {
  const p = {
    one: { trino: 24027, admin: 24028 }, two: { trino: 24029, admin: 24030 }, front: { trino: 24031, admin: 24032 },
  };
  const one = await startGateway(clusterConfig(p.one));
  t.after(() => one.kill());
  const two = await startGateway(clusterConfig(p.two));
  t.after(() => two.kill());
  const cfg = config({
    trinoPort: p.front.trino,
    adminPort: p.front.admin,
    clusters: {
      one: { engine: 'trino', endpoint: `http://127.0.0.1:${p.one.trino}` },
      two: { engine: 'trino', endpoint: `http://127.0.0.1:${p.two.trino}` },
    },
    clusterGroups: { g: { members: ['one', 'two'], maxRunningQueries: 4, strategy: { type: 'leastLoaded' } } },
  });
  cfg.monitor = { taskDelay: '300ms' };
  const front = await startGateway(cfg);
  t.after(() => front.kill());

  // Another client keeps cluster one busy, not through the front gateway:
  // three queries, so that cluster two, which may report one of ours at a
  // health check, still weighs less.
  for (let i = 0; i < 3; i += 1) {
    const busy = await submit(one.trinoUrl, `SELECT sleep_ms(8000) AS elsewhere_${i}`, { user: 'other-team' });
    t.after(() => fetch(`${one.trinoUrl}/v1/query/${busy.body.id}`, { method: 'DELETE' }).catch(() => {}));
  }
  await waitFor(async () => {
    const list = await fetch(`${one.trinoUrl}/v1/query`).then((r) => r.json());
    return list.filter((q) => q.state === 'RUNNING' && q.session.user === 'other-team').length === 3;
  }, { what: 'the busy queries listed by /v1/query' });
  // The front gateway's health check has read them.
  await waitFor(async () => {
    const c = await front.admin('/admin/clusters/one').then((r) => r.body);
    return c.reportedLoad >= 3;
  }, { what: 'cluster one reported busy to the front gateway' });

  for (let i = 0; i < 4; i += 1) {
    const r = await runRaw(front.trinoUrl, `SELECT ${i} AS least_loaded`);
    assert.equal(r.error, undefined);
  }
  const placed = (await front.history({ search: 'AS least_loaded' })).queries.map((q) => q.clusterName);
  assert.deepEqual([...new Set(placed)], ['two'], 'the idle cluster takes them all');
});

/// A certificate for localhost and 127.0.0.1 (names the client checks).
function localhostCert(t) {
  const dir = mkdtempSync(join(tmpdir(), 'qf-tls-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const cert = join(dir, 'server.crt');
  const key = join(dir, 'server.key');
  const r = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert,
    '-days', '2', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`openssl failed: ${r.stderr}`);
  return { cert, key };
}

test('a Trino cluster behind https: verified against its CA, refused when untrusted', async (t) => {
  const p = { one: { trino: 24033, admin: 24034 }, tls: 24035, front: { trino: 24036, admin: 24037 } };
  const { cert, key } = localhostCert(t);
  // TLS in front of a QueryFlux that speaks Trino; its nextUri says https.
  const upstream = clusterConfig(p.one);
  upstream.queryflux.externalAddress = `https://localhost:${p.tls}`;
  const one = await startGateway(upstream);
  t.after(() => one.kill());
  let handshakes = 0;
  const terminator = tls.createServer({ cert: readFileSync(cert), key: readFileSync(key) }, (socket) => {
    handshakes += 1;
    const plain = net.connect(p.one.trino, '127.0.0.1');
    socket.pipe(plain).pipe(socket);
    socket.on('error', () => plain.destroy());
    plain.on('error', () => socket.destroy());
  });
  await new Promise((resolve) => terminator.listen(p.tls, '127.0.0.1', resolve));
  t.after(() => terminator.close());

  const cfg = config({
    trinoPort: p.front.trino,
    adminPort: p.front.admin,
    clusters: {
      trusted: { engine: 'trino', endpoint: `https://localhost:${p.tls}`, tls: { caFile: cert } },
      untrusted: { engine: 'trino', endpoint: `https://localhost:${p.tls}` },
    },
    clusterGroups: { g: { members: ['trusted'] }, h: { members: ['untrusted'] } },
    routingFallback: 'g',
  });
  const front = await startGateway(cfg);
  t.after(() => front.kill());
  assert.equal(await healthOf(front, 'trusted'), 'HEALTHY');
  assert.equal(await healthOf(front, 'untrusted'), 'UNHEALTHY', 'a self-signed certificate is not trusted by default');
  const r = await runRaw(front.trinoUrl, 'SELECT i, label FROM t ORDER BY i');
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  assert.equal(r.data.length, 10);
  assert.ok(handshakes >= 1);
  const [q] = (await one.history({ search: 'SELECT i, label FROM t' })).queries;
  assert.equal(q.rowsReturned, 10, 'every page came through the TLS connection');
});

test('a query on a Trino cluster keeps the cluster\'s query id and external URL; findQueryHistory answers as Trino Gateway does', async (t) => {
  const backend = await startGateway(clusterConfig({ trino: 24040, admin: 24041 }));
  t.after(() => backend.kill());
  const cfg = config({
    trinoPort: 24042,
    adminPort: 24043,
    clusters: {
      one: { engine: 'trino', endpoint: 'http://127.0.0.1:24040', externalUrl: 'https://trino-one.example.com' },
    },
    clusterGroups: { adhoc: { members: ['one'] } },
    routingFallback: 'adhoc',
  });
  const front = await startGateway(cfg);
  t.after(() => front.kill());
  const r = await runRaw(front.trinoUrl, 'SELECT count(*) AS n FROM t', { user: 'ana', headers: { 'X-Trino-Source': 'etl' } });
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  const mine = await waitFor(async () => (await front.admin('/admin/queries')).body.queries?.[0]);
  assert.equal(mine.externalUrl, 'https://trino-one.example.com');
  assert.ok(mine.backendQueryId, JSON.stringify(mine));
  assert.notEqual(mine.backendQueryId, mine.proxyQueryId);
  assert.equal(mine.backendQueryUrl, `https://trino-one.example.com/ui/query.html?${mine.backendQueryId}`);
  assert.equal((await front.admin(`/admin/queries?queryId=${mine.backendQueryId}`)).body.total, 1);
  assert.equal((await front.admin('/admin/queries?source=etl')).body.total, 1);
  assert.equal((await front.admin('/admin/queries?source=other')).body.total, 0);
  // The cluster's own history knows the query by that id.
  const theirs = (await backend.admin('/admin/queries')).body.queries.map((q) => q.proxyQueryId);
  assert.ok(theirs.includes(mine.backendQueryId), `${mine.backendQueryId} in ${theirs}`);

  const find = (body, auth = true) => fetch(`${front.adminUrl}/webapp/findQueryHistory`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...(auth ? { Authorization: 'Basic ' + Buffer.from('admin:admin').toString('base64') } : {}) },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  }).then(async (res) => ({ status: res.status, body: await res.json().catch(() => null) }));
  const all = await find({ page: 1, size: 10 });
  assert.equal(all.status, 200);
  assert.equal(all.body.code, 200);
  assert.equal(all.body.data.total, 1);
  const row = all.body.data.rows[0];
  assert.deepEqual(
    { ...row, captureTime: typeof row.captureTime },
    {
      queryId: mine.proxyQueryId, queryText: 'SELECT count(*) AS n FROM t', user: 'ana', source: 'etl',
      backendUrl: 'http://127.0.0.1:24040', captureTime: 'number', routingGroup: 'adhoc',
      externalUrl: 'https://trino-one.example.com', backendQueryId: mine.backendQueryId,
    },
  );
  assert.equal((await find({ user: 'nobody' })).body.data.total, 0);
  assert.equal((await find({ queryId: mine.backendQueryId })).body.data.total, 1, 'by the cluster\'s id too');
  assert.equal((await find({ backendUrl: 'http://127.0.0.1:24040' })).body.data.total, 1);
  assert.equal((await find({ backendUrl: 'http://elsewhere:8080' })).body.data.total, 0);
  assert.equal((await find({ externalUrl: 'https://trino-one.example.com', source: 'etl' })).body.data.total, 1);
  assert.equal((await find({ page: 2, size: 10 })).body.data.rows.length, 0);
  assert.equal((await find({}, false)).status, 401);
  assert.equal((await find('[not json')).status, 400);
  assert.equal((await find({ page: 0 })).status, 400);
});
