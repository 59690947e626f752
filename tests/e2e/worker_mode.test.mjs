// Worker mode, the config half: workers pull their config from a control
// plane and serve Trino HTTP, PostgreSQL wire and MySQL wire from it; an
// admin edit reaches them; before their first snapshot they turn queries
// away retryably; they never need PostgreSQL. Ports 27000-27299.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { freshDatabase } from './support/database.mjs';
import { ownPostgres } from './support/own_postgres.mjs';
import { parseMetrics, metricValue } from './support/gateway.mjs';
import {
  controlPlaneConfig, workerConfig, startNode, request, waitFor, servedRevision, waitForRevision,
  trinoValue, pgValue, mysqlValue, tempFile, watchReadiness, BASIC, BEARER,
} from './support/workers.mjs';

const REVISION = /^sha256:[0-9a-f]{64}$/;

/// Every protocol of a worker answers `SELECT v FROM t` with `value`.
async function answersEverywhere(w, ports, value) {
  assert.deepEqual(await trinoValue(w), [[value]], `trino-client through :${w.trinoPort}`);
  assert.deepEqual(await pgValue(ports.pg), [[value]], `pg through :${ports.pg}`);
  assert.deepEqual(await mysqlValue(ports.my), [[value]], `mysql2 through :${ports.my}`);
}

test('two workers serve the control plane\'s config on three protocols and follow an admin edit', async (t) => {
  const url = await freshDatabase(t);
  const cp = await startNode(controlPlaneConfig({ trino: 27000, admin: 27001, persistence: { type: 'postgres', url } }));
  t.after(() => cp.kill());
  const rev0 = await servedRevision(cp);
  assert.match(rev0, REVISION);

  // Labels from the downward API's file go over the config's.
  const labelsFile = tempFile(t, 'labels', 'team="b"\nrack="r7"\n');
  const p1 = { ops: 27010, trino: 27011, pg: 27012, my: 27013 };
  const p2 = { ops: 27020, trino: 27021, pg: 27022, my: 27023 };
  // w1 serves on its own limits while the control plane is away (below).
  const w1 = await startNode(workerConfig({ name: 'w1', ...p1, cp: cp.adminUrl, labels: { team: 'a', zone: 'z1' }, labelsFile, onUnavailable: 'localLimits' }));
  t.after(() => w1.kill());
  const w2 = await startNode(workerConfig({ name: 'w2', ...p2, cp: cp.adminUrl, labels: { team: 'c' } }));
  t.after(() => w2.kill());

  for (const w of [w1, w2]) {
    const s = await w.status();
    assert.equal(s.activeRevision, rev0);
    assert.equal(s.configSource, 'controlPlane');
    assert.equal(s.ready, true);
    assert.equal(s.controlPlane, cp.adminUrl);
  }
  assert.deepEqual((await w1.status()).labels, { team: 'b', zone: 'z1', rack: 'r7' });
  assert.equal((await w1.status()).workerName, 'w1');
  await answersEverywhere(w1, p1, 42);
  await answersEverywhere(w2, p2, 42);

  // The ops port: no admin API on a worker.
  assert.equal((await request(`${w1.adminUrl}/health`)).status, 200);
  for (const path of ['/admin/workers', '/admin/clusters', '/admin/config/clusters']) {
    assert.equal((await request(`${w1.adminUrl}${path}`, { headers: { Authorization: BASIC } })).status, 404, `worker ${path}`);
  }
  assert.equal((await request(`${w1.adminUrl}/worker/peer-config`, { headers: { Authorization: BEARER } })).status, 404,
    'no peer copies without peerBootstrap');

  const samples = parseMetrics((await request(`${w1.adminUrl}/metrics`)).text);
  assert.equal(metricValue(samples, 'queryflux_worker_config_stale'), 0, 'a synced worker is not stale');
  assert.equal(metricValue(samples, 'queryflux_config_reload_failures_total', { stage: 'worker_activate' }), 0);

  // An edit through the control plane's admin API.
  const edit = await cp.api('/admin/config/clusters/duck', {
    method: 'PUT', body: JSON.stringify({ engine: 'duckDb', initSql: ['CREATE TABLE t AS SELECT 43 AS v'] }),
  });
  assert.equal(edit.status, 200, edit.text);
  const rev1 = await servedRevision(cp);
  assert.match(rev1, REVISION);
  assert.notEqual(rev1, rev0, 'the edit moved the served revision');
  await waitForRevision(w1, rev1);
  await waitForRevision(w2, rev1);
  await answersEverywhere(w1, p1, 43);
  await answersEverywhere(w2, p2, 43);

  // The control plane knows both, with their labels and revisions.
  const listed = await waitFor(async () => {
    const r = await cp.api('/admin/workers');
    assert.equal(r.status, 200, r.text);
    return r.body.length === 2 && r.body.every((w) => w.activeRevision === rev1) && r.body;
  }, { what: 'both workers reporting the new revision' });
  const byName = Object.fromEntries(listed.map((w) => [w.name, w]));
  assert.deepEqual(Object.keys(byName).sort(), ['w1', 'w2']);
  assert.deepEqual(byName.w1.labels, { team: 'b', zone: 'z1', rack: 'r7' });
  assert.deepEqual(byName.w2.labels, { team: 'c' });
  for (const w of listed) {
    assert.equal(w.status, 'active');
    assert.equal(w.currentRevision, rev1);
    assert.equal(w.upToDate, true);
    assert.equal(w.coordinationMode, 'controlPlane');
    assert.equal(w.configSource, 'controlPlane');
    assert.equal(w.heartbeatIntervalSecs, 1);
    assert.ok(w.version && w.registeredAt && w.lastSeenAt, JSON.stringify(w));
  }
  const one = await cp.api('/admin/workers/w1');
  assert.equal(one.status, 200, one.text);
  assert.equal(one.body.name, 'w1');
  assert.deepEqual(one.body.labels, { team: 'b', zone: 'z1', rack: 'r7' });
  assert.equal((await cp.api('/admin/workers/nobody')).status, 404);

  // The control plane goes away: the workers keep serving what they run;
  // w1 (onUnavailable: localLimits) admits new queries on its own limits.
  await cp.kill();
  await waitFor(async () => (await w1.status()).consecutiveFailures >= 2,
    { timeoutMs: 15000, what: 'w1 counting failed syncs' });
  await waitFor(async () => (await w1.status()).coordination.state === 'degraded',
    { timeoutMs: 15000, what: 'w1 on its own limits' });
  const s = await w1.status();
  assert.equal(s.activeRevision, rev1);
  assert.ok(s.lastError, 'the failure is reported');
  assert.ok(s.coordination.failures > 0, 'failed lease calls are counted');
  assert.equal((await request(`${w1.adminUrl}/readyz`)).status, 200, 'still ready on its last config');
  await answersEverywhere(w1, p1, 43);
});

test('before its first snapshot a worker turns queries away retryably, then serves without a restart', async (t) => {
  const cpPorts = { trino: 27100, admin: 27101 };
  const p = { ops: 27110, trino: 27111, pg: 27112, my: 27113 };
  // The control plane is not running yet.
  const w = await startNode(workerConfig({ name: 'early', ...p, cp: `http://127.0.0.1:${cpPorts.admin}` }), { wait: 'health' });
  t.after(() => w.kill());

  const ready = await request(`${w.adminUrl}/readyz`);
  assert.equal(ready.status, 503);
  assert.deepEqual(ready.body, { status: 'NOT_READY', reason: 'no configuration snapshot yet' });

  const post = await request(`${w.trinoUrl}/v1/statement`, {
    method: 'POST', headers: { 'X-Trino-User': 'tester', 'Content-Type': 'text/plain' }, body: 'SELECT v FROM t',
  });
  assert.equal(post.status, 503, post.text);
  assert.ok(post.headers['retry-after'], `Retry-After on the 503: ${JSON.stringify(post.headers)}`);

  const pgErr = await pgValue(p.pg).then(() => null, (e) => e);
  assert.ok(pgErr, 'pg got an answer before the first snapshot');
  assert.equal(pgErr.code, '57P03', pgErr.message);

  const myErr = await mysqlValue(p.my).then(() => null, (e) => e);
  assert.ok(myErr, 'mysql2 got an answer before the first snapshot');
  assert.equal(myErr.errno, 1053, myErr.message);

  const before = await w.status();
  assert.equal(before.activeRevision, null);
  assert.equal(before.ready, false);
  assert.equal(before.configSource, null);
  await waitFor(async () => (await w.status()).consecutiveFailures > 0, { what: 'a failed sync counted' });

  // A standalone with workerApi serves workers too, from memory. From
  // here on readiness only ever moves forward: not ready until the
  // snapshot is active and its clusters had their first check, then ready.
  const readiness = watchReadiness(w);
  const cp = await startNode(controlPlaneConfig({ ...cpPorts, role: 'standalone' }));
  t.after(() => cp.kill());
  const rev = await servedRevision(cp);
  // its next try comes after a backoff of up to a minute
  await waitForRevision(w, rev, { timeoutMs: 150000, ready: true });
  assert.equal((await request(`${w.adminUrl}/readyz`)).status, 200);
  await answersEverywhere(w, p, 42);
  const after = await w.status();
  assert.equal(after.consecutiveFailures, 0);
  assert.equal(after.lastError, null);
  const seen = await readiness.stop();
  assert.equal(seen[0], '503: no configuration snapshot yet');
  assert.equal(seen.at(-1), '200');
  assert.equal(seen.indexOf('200'), seen.length - 1,
    `/readyz said 200 before the first health check, then 503 again: ${seen.join(' -> ')}`);
});

test('a worker never needs PostgreSQL: with the control plane\'s database down, workers old and new serve its last snapshot', async (t) => {
  const server = ownPostgres(t, 27290);
  const cpConfig = controlPlaneConfig({ trino: 27200, admin: 27201, persistence: { type: 'postgres', url: server.url } });
  cpConfig.queryflux.configReloadIntervalSecs = 1; // it keeps trying to read the fleet
  const cp = await startNode(cpConfig);
  t.after(() => cp.kill());
  const rev = await servedRevision(cp);
  const p1 = { ops: 27210, trino: 27211, pg: 27212, my: 27213 };
  const peerBootstrap = { address: '127.0.0.1:27220', afterSecs: 60, maxAgeSecs: 86400 };
  const w1 = await startNode(workerConfig({ name: 'old', ...p1, cp: cp.adminUrl, peerBootstrap }));
  t.after(() => w1.kill());
  await waitForRevision(w1, rev, { ready: true });
  // With peerBootstrap set, it lends its copy to peers that show the secret.
  const copy = await request(`${w1.adminUrl}/worker/peer-config`, { headers: { Authorization: BEARER } });
  assert.equal(copy.status, 200, copy.text);
  assert.equal(copy.body.revision, rev);
  assert.equal(typeof copy.body.confirmedAt, 'number');
  assert.equal(copy.body.snapshot.schemaVersion, 1);
  assert.equal((await request(`${w1.adminUrl}/worker/peer-config`)).status, 401);

  server.stop();
  // The control plane's reads of the fleet fail now, counted; its last
  // good snapshot is what it serves from here on.
  const failures = async () => metricValue(parseMetrics(await (await fetch(`${cp.adminUrl}/metrics`)).text()),
    'queryflux_config_reload_failures_total', { stage: 'reload' });
  const before = await failures();
  await waitFor(async () => (await failures()) > before, { timeoutMs: 30000, what: 'a failed read of the fleet, counted' });
  await answersEverywhere(w1, p1, 42);

  const p2 = { ops: 27220, trino: 27221, pg: 27222, my: 27223 };
  const w2 = await startNode(workerConfig({ name: 'new', ...p2, cp: cp.adminUrl }));
  t.after(() => w2.kill());
  const s = await w2.status();
  assert.equal(s.activeRevision, rev, 'the new worker got the last good snapshot');
  assert.equal(s.configSource, 'controlPlane');
  await answersEverywhere(w2, p2, 42);

  const served = await cp.api('/worker/config', { auth: 'bearer' });
  assert.equal(served.status, 200, served.text);
  assert.equal(served.body.revision, rev);
  assert.deepEqual((await w1.status()).activeRevision, rev);
});
