// The admin API's writes with the fleet in PostgreSQL: the database first,
// the running node after, compensation when the node refuses; other
// replicas following the database; and databaseCache while PostgreSQL is
// stopped under load.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  startGateway, runRaw, submit, waitFor, parseMetrics, metricValue, sleep,
} from './support/gateway.mjs';
import { freshDatabase, gatewayConfig, sql } from './support/database.mjs';
import { ownPostgres } from './support/own_postgres.mjs';

const json = (method, body) => ({
  method,
  headers: { 'Content-Type': 'application/json' },
  body: JSON.stringify(body),
});

const revision = async (url) => Number((await sql(url, 'SELECT revision FROM config_revision'))[0].revision);

test('changes are written to PostgreSQL first; one the node refuses is undone there', async (t) => {
  const url = await freshDatabase(t);
  const cfg = gatewayConfig({ trino: 24010, admin: 24011 }, { type: 'postgres', url });
  cfg.queryflux.role = 'controlPlane';
  cfg.queryflux.workerApi = { enabled: true, sharedSecret: 'e2e-worker-secret-0123456789' };
  cfg.clusters.refused = { engine: 'duckDb' };
  const gw = await startGateway(cfg, { env: { QF_TEST_REFUSE_APPLY: 'refused,refused_new,stuck+undo' } });
  t.after(() => gw.kill());
  const rev0 = await revision(url);

  const added = await gw.admin('/admin/config/clusters/x', json('PUT', { engine: 'duckDb', maxRunningQueries: 3 }));
  assert.equal(added.status, 201, added.text);
  assert.deepEqual(await sql(url, "SELECT engine, enabled, max_running_queries, config FROM cluster_configs WHERE name = 'x'"),
    [{ engine: 'duckDb', enabled: true, max_running_queries: 3, config: { engine: 'duckDb', maxRunningQueries: 3 } }]);
  const grouped = await gw.admin('/admin/config/groups/g', json('PUT', { members: ['duck', 'x'], maxQueuedQueries: 7 }));
  assert.equal(grouped.status, 200, grouped.text);
  assert.deepEqual(await sql(url, "SELECT members, max_queued_queries FROM cluster_group_configs WHERE name = 'g'"),
    [{ members: ['duck', 'x'], max_queued_queries: 7 }]);
  const routed = await gw.admin('/admin/config/routing', json('PUT', {
    routers: [{ type: 'header', headerName: 'X-Group', headerValueToGroup: { g: 'g' } }], routingFallback: 'g',
  }));
  assert.equal(routed.status, 200, routed.text);
  assert.equal((await sql(url, 'SELECT count(*)::int AS n FROM routing_rules'))[0].n, 1);
  assert.equal(await revision(url), rev0 + 3, 'each change moves the revision once');

  // Compensation, for each kind of change: the node refuses, the database
  // is put back, the caller gets the original error.
  const stored = async (name) => (await sql(url, `SELECT enabled, config FROM cluster_configs WHERE name = '${name}'`))[0];
  const refusedBefore = await stored('refused');
  const attempts = [
    ['/admin/config/clusters/refused_new', json('PUT', { engine: 'duckDb' })],
    ['/admin/config/clusters/refused', json('PUT', { engine: 'duckDb', maxRunningQueries: 9 })],
    ['/admin/clusters/refused/deactivate', { method: 'POST' }],
    ['/admin/config/clusters/refused', { method: 'DELETE' }],
  ];
  for (const [path, init] of attempts) {
    const r = await gw.admin(path, init);
    assert.equal(r.status, 500, `${init.method} ${path}: ${r.text}`);
    assert.match(r.body.error, /did not accept the change; it was undone in the database/);
  }
  assert.equal(await stored('refused_new'), undefined, 'the add was deleted again');
  assert.deepEqual(await stored('refused'), refusedBefore, 'update, deactivate and delete were reverted');
  const live = (await gw.admin('/admin/clusters')).body;
  assert.deepEqual(live.map((c) => c.name), ['duck', 'refused', 'x']);
  assert.equal(live.find((c) => c.name === 'refused').active, true);

  // An undo that fails too is attached to the original error, which is
  // still what the caller gets; the database keeps the change then.
  const stuck = await gw.admin('/admin/config/clusters/stuck', json('PUT', { engine: 'duckDb' }));
  assert.equal(stuck.status, 500);
  assert.equal(stuck.body.error, 'the running node did not accept the change (undoing it in the database failed too: injected by QF_TEST_REFUSE_APPLY)');
  assert.notEqual(await stored('stuck'), undefined);
  assert.equal((await gw.admin('/admin/clusters/stuck')).status, 404, 'the node never ran it');
  await sql(url, "DELETE FROM cluster_configs WHERE name = 'stuck'");

  // A refused change with nothing valid to write leaves the database alone.
  const revBefore = await revision(url);
  assert.equal((await gw.admin('/admin/config/groups/g', json('PUT', { members: ['ghost'] }))).status, 400);
  assert.equal((await gw.admin('/admin/config/clusters/duck', { method: 'DELETE' })).status, 409);
  assert.equal(await revision(url), revBefore);

  // What was written is what the next start runs.
  assert.equal(await gw.stop(), 0);
  const again = await startGateway(cfg);
  t.after(() => again.kill());
  const groups = (await again.admin('/admin/config/groups')).body;
  assert.deepEqual(groups, [{ name: 'g', members: ['duck', 'x'], maxQueuedQueries: 7 }]);
  assert.equal((await again.admin('/admin/config/routing')).body.routers.length, 1);
});

test('a second replica follows changes made through the first; a stored config that does not validate is counted and the last good one serves', async (t) => {
  const url = await freshDatabase(t);
  const cfgA = gatewayConfig({ trino: 24012, admin: 24013 }, { type: 'postgres', url });
  const cfgB = gatewayConfig({ trino: 24014, admin: 24015 }, { type: 'postgres', url });
  cfgB.queryflux.configReloadIntervalSecs = 1;
  const a = await startGateway(cfgA);
  t.after(() => a.kill());
  const b = await startGateway(cfgB);
  t.after(() => b.kill());

  assert.equal((await a.admin('/admin/config/clusters/y', json('PUT', {
    engine: 'duckDb', initSql: ["CREATE TABLE t AS SELECT 'from y' AS v"],
  }))).status, 201);
  assert.equal((await a.admin('/admin/config/groups/g', json('PUT', { members: ['y'] }))).status, 200);
  await waitFor(async () => (await b.admin('/admin/clusters')).body.some((c) => c.name === 'y' && c.status === 'HEALTHY'),
    { timeoutMs: 10000, what: 'replica B running cluster y' });
  assert.deepEqual((await runRaw(b.trinoUrl, 'SELECT v FROM t')).data, [['from y']]);

  await sql(url, `UPDATE cluster_configs SET config = '{"engine": "oracle"}' WHERE name = 'y'`);
  await sql(url, 'UPDATE config_revision SET revision = revision + 1');
  const failures = async () => metricValue(parseMetrics(await b.metrics()),
    'queryflux_config_reload_failures_total', { stage: 'reload' });
  await waitFor(async () => (await failures()) >= 1, { timeoutMs: 10000, what: 'a counted reload failure' });
  assert.deepEqual((await runRaw(b.trinoUrl, 'SELECT v FROM t')).data, [['from y']], 'the last good config serves');
});

test('databaseCache: routing keeps working while PostgreSQL is stopped, until expireAfterWrite', async (t) => {
  const server = ownPostgres(t, 24090);
  const cfg = gatewayConfig({ trino: 24016, admin: 24017 }, { type: 'postgres', url: server.url });
  cfg.databaseCache = { enabled: true, refreshAfterWrite: '200ms', expireAfterWrite: '4s' };
  const gw = await startGateway(cfg);
  t.after(() => gw.kill());

  // Load: a steady stream of queries from four clients across the outage.
  let stopLoad = false;
  const outcomes = [];
  const clients = [0, 1, 2, 3].map(async (n) => {
    while (!stopLoad) {
      const r = await submit(gw.trinoUrl, `SELECT ${n} AS client`);
      outcomes.push({ at: Date.now(), status: r.status });
      await sleep(20);
    }
  });

  await sleep(300);
  server.stop();
  const stoppedAt = Date.now();
  await sleep(2000);
  const whileDown = outcomes.filter((o) => o.at > stoppedAt);
  assert.ok(whileDown.length > 10, 'queries kept coming');
  assert.ok(whileDown.every((o) => o.status === 200), 'the cached cluster list keeps routing');
  const write = await gw.admin('/admin/config/clusters/z', json('PUT', { engine: 'duckDb' }));
  assert.equal(write.status, 503, 'a change needs the database');
  assert.match(write.body.error, /nothing changed/);

  // Past expireAfterWrite, the list is gone: new queries are turned away
  // with the protocol's retryable answer, and the node is not ready.
  await waitFor(async () => (await submit(gw.trinoUrl, 'SELECT 1')).status === 503,
    { timeoutMs: 8000, what: 'the cache expiring' });
  assert.equal((await fetch(`${gw.adminUrl}/readyz`)).status, 503);

  server.start();
  await waitFor(async () => (await submit(gw.trinoUrl, 'SELECT 1')).status === 200,
    { timeoutMs: 10000, what: 'routing after PostgreSQL is back' });
  stopLoad = true;
  await Promise.all(clients);
  assert.deepEqual((await runRaw(gw.trinoUrl, 'SELECT 5')).data, [[5]]);
});
