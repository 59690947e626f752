// GET /admin/queries/running and DELETE /admin/queries/{id}: statements
// from every frontend, queued and running, cancelled by an operator.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { startGateway, config, runRaw, waitFor } from './support/gateway.mjs';

test('the admin API lists running and queued statements of all frontends and cancels one', async (t) => {
  const ports = { trino: 23820, admin: 23821, pg: 23822 };
  const cfg = config({
    trinoPort: ports.trino,
    adminPort: ports.admin,
    clusters: { duck: { engine: 'duckDb' } },
    clusterGroups: { one: { members: ['duck'], maxRunningQueries: 1, maxQueuedQueries: 10 } },
  });
  cfg.queryflux.frontends.postgresWire = { enabled: true, port: ports.pg };
  const gw = await startGateway(cfg);
  t.after(() => gw.kill());

  const c = new pg.Client({ host: '127.0.0.1', port: ports.pg, user: 'erin', database: 'x' });
  c.on('error', () => {});
  await c.connect();
  const slow = c.query('SELECT sleep_ms(20000) AS s').then(() => null, (e) => e);
  await waitFor(async () => (await gw.admin('/admin/queries/running')).body.length === 1, { what: 'the pg query running' });
  const queued = runRaw(gw.trinoUrl, 'SELECT 7 AS after_the_slow_one', { user: 'frank' });

  let running = [];
  await waitFor(async () => {
    running = (await gw.admin('/admin/queries/running')).body;
    return running.length === 2;
  }, { what: 'two statements listed' });
  const byUser = Object.fromEntries(running.map((q) => [q.submittedBy, q]));
  assert.deepEqual(
    { state: byUser.erin.state, cluster: byUser.erin.cluster, group: byUser.erin.group, protocol: byUser.erin.protocol,
      sql: byUser.erin.sqlPreview },
    { state: 'RUNNING', cluster: 'duck', group: 'one', protocol: 'postgresWire', sql: 'SELECT sleep_ms(20000) AS s' });
  assert.equal(byUser.frank.state, 'QUEUED');
  assert.equal(byUser.frank.protocol, 'trinoHttp');

  const cancelled = await gw.admin(`/admin/queries/${byUser.erin.id}`, { method: 'DELETE' });
  assert.deepEqual(cancelled.body, { cancelled: byUser.erin.id });
  const err = await slow;
  assert.equal(err?.code, '57014', 'the psql-side statement was cancelled');
  const after = await queued;
  assert.deepEqual(after.data, [[7]], 'the queued query ran once the slot was free');
  await waitFor(async () => (await gw.admin('/admin/queries/running')).body.length === 0, { what: 'nothing running' });
  assert.equal((await gw.admin('/admin/queries/no_such', { method: 'DELETE' })).status, 404);
  await c.end();
});
