// The admin API's write side without a database: clusters, groups and
// routing changed on a running gateway, the health cache moving as the spec's
// table says, bad input refused with nothing half-done, and a cluster
// replaced or deactivated under a running query letting it finish.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import {
  startGateway, config, runRaw, submit, follow, waitFor, parseMetrics, metricValue,
} from './support/gateway.mjs';
import { PG_URL, freshDatabase, sql } from './support/database.mjs';

const json = (method, body) => ({
  method,
  headers: { 'Content-Type': 'application/json' },
  body: typeof body === 'string' ? body : JSON.stringify(body),
});

async function healthOf(gw, name) {
  const r = await gw.admin(`/admin/clusters/${name}`);
  return r.status === 200 ? r.body.status : r.status;
}

test('clusters, groups and routing change live; bad input changes nothing', async (t) => {
  const gw = await startGateway(config({
    trinoPort: 24000,
    adminPort: 24001,
    clusters: { a: { engine: 'duckDb' } },
    clusterGroups: { g: { members: ['a'], maxRunningQueries: 4 } },
  }));
  t.after(() => gw.kill());

  assert.deepEqual((await gw.admin('/admin/config/clusters')).body, [{ name: 'a', engine: 'duckDb' }]);

  // Add: PENDING while its first check runs (pg_sleep holds it), then HEALTHY.
  const slowCheck = {
    engine: 'postgres', endpoint: PG_URL, healthCheckQuery: 'SELECT pg_sleep(1.5)', maxRunningQueries: 2,
  };
  const added = await gw.admin('/admin/config/clusters/p', json('PUT', slowCheck));
  assert.equal(added.status, 201, added.text);
  assert.deepEqual(added.body, { name: 'p', ...slowCheck });
  assert.equal(await healthOf(gw, 'p'), 'PENDING');
  await waitFor(async () => (await healthOf(gw, 'p')) === 'HEALTHY', { timeoutMs: 10000, what: 'p HEALTHY' });

  // An inactive cluster is added UNKNOWN and never checked.
  const off = await gw.admin('/admin/config/clusters/d', json('PUT', {
    engine: 'duckDb', enabled: false, initSql: ['CREATE TABLE t AS SELECT 42 AS v'],
  }));
  assert.equal(off.status, 201, off.text);
  assert.equal(await healthOf(gw, 'd'), 'UNKNOWN');
  const grouped = await gw.admin('/admin/config/groups/h', json('PUT', { members: ['d'], maxRunningQueries: 2 }));
  assert.equal(grouped.status, 201, grouped.text);
  const routing = await gw.admin('/admin/config/routing', json('PUT', {
    routers: [{ type: 'header', headerName: 'X-Group', headerValueToGroup: { h: 'h' } }],
    routingFallback: 'g',
  }));
  assert.equal(routing.status, 200, routing.text);
  assert.deepEqual((await gw.admin('/admin/config/routing')).body.routingFallback, 'g');

  // Activate: PENDING, checked at once, then it takes the group's queries.
  const on = await gw.admin('/admin/clusters/d/activate', { method: 'POST' });
  assert.equal(on.status, 200);
  assert.equal(on.body.active, true);
  await waitFor(async () => (await healthOf(gw, 'd')) === 'HEALTHY', { what: 'd HEALTHY' });
  const viaH = await runRaw(gw.trinoUrl, 'SELECT v FROM t', { headers: { 'X-Group': 'h' } });
  assert.deepEqual(viaH.data, [[42]]);
  const viaG = await runRaw(gw.trinoUrl, 'SELECT v FROM t');
  assert.ok(viaG.error, 'the fallback group reaches a, which has no table t');

  // Update: a new config for d, PENDING again, and queries see the new one.
  const updated = await gw.admin('/admin/config/clusters/d', json('PUT', {
    engine: 'duckDb', initSql: ['CREATE TABLE t AS SELECT 43 AS v'],
  }));
  assert.equal(updated.status, 200, updated.text);
  await waitFor(async () => (await healthOf(gw, 'd')) === 'HEALTHY', { what: 'd HEALTHY after update' });
  assert.deepEqual((await runRaw(gw.trinoUrl, 'SELECT v FROM t', { headers: { 'X-Group': 'h' } })).data, [[43]]);

  // Bad input: each refused with its reason, and nothing changed.
  const before = (await gw.admin('/admin/config/clusters')).body;
  const cases = [
    ['/admin/config/clusters/x', json('PUT', '{"engine": "duckDb",'), 400, /not valid JSON/],
    ['/admin/config/clusters/x', json('PUT', '[1]'), 400, /JSON object/],
    ['/admin/config/clusters/x', json('PUT', { engine: 'duckDb', bogus: 1 }), 400, /clusters.x.bogus: unknown key/],
    ['/admin/config/clusters/x', json('PUT', { engine: 'oracle' }), 400, /unknown engine "oracle"/],
    ['/admin/config/clusters/x', json('PUT', { name: 'y', engine: 'duckDb' }), 400, /differs/],
    ['/admin/config/groups/k', json('PUT', { members: ['nope'] }), 400, /unknown cluster "nope"/],
    ['/admin/config/clusters/d', { method: 'DELETE' }, 409, /still in use/],
    ['/admin/config/groups/h', { method: 'DELETE' }, 409, /still in use/],
    ['/admin/config/clusters/nope', { method: 'DELETE' }, 404, /no cluster named nope/],
    ['/admin/config/clusters', json('POST', { name: 'a', engine: 'duckDb' }), 409, /exists already/],
    ['/admin/config/routing', json('PUT', { routingFallback: 'nope' }), 400, /nope/],
  ];
  for (const [path, init, status, message] of cases) {
    const r = await gw.admin(path, init);
    assert.equal(r.status, status, `${init.method} ${path}: ${r.text}`);
    assert.match(r.body.error, message);
  }
  assert.deepEqual((await gw.admin('/admin/config/clusters')).body, before);
  assert.equal((await gw.admin('/admin/config/groups/k')).status, 404);
  assert.deepEqual((await gw.admin('/admin/config/groups/h')).body, { name: 'h', members: ['d'], maxRunningQueries: 2 });

  // POST adds, with the name in the body.
  const posted = await gw.admin('/admin/config/clusters', json('POST', { name: 'e', engine: 'sqlite' }));
  assert.equal(posted.status, 201, posted.text);
  assert.deepEqual((await gw.admin('/admin/config/clusters/e')).body, { name: 'e', engine: 'sqlite' });
  assert.equal((await gw.admin('/admin/config/clusters/e', { method: 'DELETE' })).status, 200);

  // Delete, in the order references allow: out of routing, cache and metrics.
  assert.equal((await gw.admin('/admin/config/routing', { method: 'DELETE' })).status, 200);
  assert.equal((await gw.admin('/admin/config/groups/h', { method: 'DELETE' })).status, 200);
  const gone = await gw.admin('/admin/config/clusters/d', { method: 'DELETE' });
  assert.deepEqual(gone.body, { deleted: 'd' });
  assert.equal((await gw.admin('/admin/clusters/d')).status, 404);
  assert.deepEqual((await gw.admin('/admin/clusters')).body.map((c) => c.name), ['a', 'p']);
  const samples = parseMetrics(await gw.metrics());
  assert.equal(metricValue(samples, 'queryflux_cluster_health', { cluster_name: 'd', status: 'HEALTHY' }), undefined);
  assert.equal(metricValue(samples, 'queryflux_cluster_health', { cluster_name: 'a', status: 'HEALTHY' }), 1);
  assert.deepEqual((await runRaw(gw.trinoUrl, 'SELECT 7')).data, [[7]]);
});

test('a cluster replaced or deactivated under a running query lets it finish, and its limit holds', async (t) => {
  const db = await freshDatabase(t, 'qf_e2e_replace'); // its connections are this test's alone
  const gw = await startGateway(config({
    trinoPort: 24002,
    adminPort: 24003,
    clusters: { p: { engine: 'postgres', endpoint: db, maxRunningQueries: 1 } },
    clusterGroups: { g: { members: ['p'], maxRunningQueries: 1, maxQueuedQueries: 10 } },
  }));
  t.after(() => gw.kill());

  // Replaced while a query runs: the query finishes on the old one, and
  // the new one counts it against maxRunningQueries 1.
  const first = await submit(gw.trinoUrl, "SELECT 'first' FROM pg_sleep(1)");
  await waitFor(async () => (await gw.admin('/admin/clusters/p')).body.runningQueries === 1,
    { what: 'the first query running' });
  const replaced = await gw.admin('/admin/config/clusters/p', json('PUT', {
    engine: 'postgres', endpoint: db, maxRunningQueries: 1, healthCheckQuery: 'SELECT 2',
  }));
  assert.equal(replaced.status, 200, replaced.text);
  assert.equal((await gw.admin('/admin/clusters/p')).body.runningQueries, 1, 'the new cluster counts it');
  const second = runRaw(gw.trinoUrl, "SELECT 'second'");
  const firstResult = await follow(first);
  assert.equal(firstResult.error, undefined);
  assert.deepEqual(firstResult.data, [['first']]);
  const secondResult = await second;
  assert.equal(secondResult.error, undefined);
  assert.deepEqual(secondResult.data, [['second']]);
  // The replaced cluster ends once its query gave the connection back:
  // left are the new cluster's health check and its one pooled connection.
  const backends = async () => (await sql(PG_URL,
    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = '${db.slice(db.lastIndexOf('/') + 1)}'`))[0].n;
  await waitFor(async () => (await backends()) === 2, { what: 'the old cluster\'s connections closed', timeoutMs: 10000 });
  const a = await gw.historyRecord(first.body.id);
  const b = (await gw.history({ search: "'second'" })).queries[0];
  assert.ok(b.startedAtMs >= a.finishedAtMs,
    'the second query started only once the first had given back the one slot');

  // Graceful shutdown of a cluster: deactivated, its running query is
  // visible, keeps being served by id, and the count goes to zero. A
  // query with nowhere to go waits 1 s for capacity, then fails.
  const shortWait = await gw.admin('/admin/config/groups/g', json('PUT', {
    members: ['p'], maxRunningQueries: 1, capacityWaitTimeoutSecs: 1,
  }));
  assert.equal(shortWait.status, 200, shortWait.text);
  const running = await submit(gw.trinoUrl, "SELECT 'draining' FROM pg_sleep(1)");
  await waitFor(async () => (await gw.admin('/admin/clusters/p')).body.runningQueries === 1,
    { what: 'the query running' });
  const off = await gw.admin('/admin/clusters/p/deactivate', { method: 'POST' });
  assert.equal(off.body.active, false);
  assert.equal(off.body.status, 'UNKNOWN');
  assert.equal(off.body.runningQueries, 1);
  const refused = await runRaw(gw.trinoUrl, 'SELECT 1');
  assert.ok(refused.error, 'no new query reaches a deactivated cluster');
  const drained = await follow(running);
  assert.deepEqual(drained.data, [['draining']]);
  assert.equal((await gw.admin('/admin/clusters/p')).body.runningQueries, 0);

  const c = new pg.Client({ connectionString: db });
  await c.connect();
  const sleeping = await c.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE query LIKE '%''draining'' FROM pg_sleep%' AND state = 'active' AND pid <> pg_backend_pid()");
  await c.end();
  assert.equal(sleeping.rows[0].n, 0);
});
