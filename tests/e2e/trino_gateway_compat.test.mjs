// Trino Gateway's REST paths, driven the way its users' scripts drive them
// (curl), against two DuckDB clusters in one routing group.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { startGateway, config, runRaw, waitFor } from './support/gateway.mjs';

const ports = { trino: 23800, admin: 23801 };

function curl(args) {
  const r = spawnSync('curl', ['-s', '-w', '\n%{http_code}', ...args], { encoding: 'utf8', timeout: 10000 });
  const lines = r.stdout.split('\n');
  const code = Number(lines.pop());
  return { code, body: lines.join('\n') };
}

const admin = (path, extra = []) => curl(['-u', 'admin:admin', ...extra, `http://127.0.0.1:${ports.admin}${path}`]);
const open = (path) => curl([`http://127.0.0.1:${ports.admin}${path}`]);

test('Trino Gateway scripts work against QueryFlux: health, backends, state, (de)activation', async (t) => {
  const gw = await startGateway(config({
    trinoPort: ports.trino,
    adminPort: ports.admin,
    clusters: { c1: { engine: 'duckDb' }, c2: { engine: 'duckDb' } },
    clusterGroups: { adhoc: { members: ['c1', 'c2'], maxRunningQueries: 4, strategy: { type: 'roundRobin' } } },
  }));
  t.after(() => gw.kill());

  assert.deepEqual(open('/trino-gateway/livez'), { code: 200, body: 'ok' });
  assert.deepEqual(open('/trino-gateway/readyz'), { code: 200, body: 'ok' });
  assert.equal(open('/gateway/backend/all').code, 401, 'the API needs the admin credentials');

  const all = admin('/gateway/backend/all');
  assert.equal(all.code, 200);
  assert.deepEqual(JSON.parse(all.body), [
    { name: 'c1', proxyTo: 'duckdb::memory:', externalUrl: 'duckdb::memory:', active: true, routingGroup: 'adhoc' },
    { name: 'c2', proxyTo: 'duckdb::memory:', externalUrl: 'duckdb::memory:', active: true, routingGroup: 'adhoc' },
  ]);
  assert.equal(JSON.parse(open('/api/public/backends').body).length, 2);
  assert.equal(JSON.parse(open('/api/public/backends/c1').body).name, 'c1');
  assert.equal(open('/api/public/backends/nope').code, 404);
  const state = JSON.parse(open('/api/public/backends/c2/state').body);
  assert.equal(state.trinoStatus, 'HEALTHY');
  assert.equal(state.routingGroup, 'adhoc');

  // Deactivate: out of routing at once, UNKNOWN in the health cache.
  assert.equal(admin('/gateway/backend/deactivate/c2', ['-X', 'POST']).code, 200);
  assert.deepEqual(JSON.parse(admin('/gateway/backend/active').body).map((b) => b.name), ['c1']);
  await waitFor(() => JSON.parse(open('/api/public/backends/c2/state').body).trinoStatus === 'UNKNOWN',
    { what: 'c2 UNKNOWN' });
  for (let i = 0; i < 6; i += 1) {
    const r = await runRaw(gw.trinoUrl, `SELECT ${i} AS deactivated`);
    assert.equal(r.error, undefined);
  }
  const during = await gw.history({ search: 'AS deactivated' });
  assert.deepEqual([...new Set(during.queries.map((q) => q.clusterName))], ['c1']);

  // Activate: PENDING, checked at once, HEALTHY, and routed to again.
  assert.equal(admin('/gateway/backend/activate/c2', ['-X', 'POST']).code, 200);
  await waitFor(() => JSON.parse(open('/api/public/backends/c2/state').body).trinoStatus === 'HEALTHY',
    { what: 'c2 HEALTHY again', timeoutMs: 5000 });
  for (let i = 0; i < 6; i += 1) await runRaw(gw.trinoUrl, `SELECT ${i} AS reactivated`);
  const after = await gw.history({ search: 'AS reactivated' });
  assert.deepEqual([...new Set(after.queries.map((q) => q.clusterName))].sort(), ['c1', 'c2']);

  const unknown = admin('/gateway/backend/activate/nope', ['-X', 'POST']);
  assert.equal(unknown.code, 404);
  assert.match(unknown.body, /no cluster named nope/);
  assert.equal(admin('/gateway/backend/modify/add', ['-X', 'POST', '-d', '{"name":"c3"}']).code, 501);

  // The same through QueryFlux's own admin API.
  const own = await gw.admin('/admin/clusters/c1/deactivate', { method: 'POST' });
  assert.deepEqual(own.body, { name: 'c1', active: false });
  const listed = (await gw.admin('/admin/clusters')).body.find((c) => c.name === 'c1');
  assert.equal(listed.active, false);
  assert.equal((await gw.admin('/admin/clusters/nope/activate', { method: 'POST' })).status, 404);
});
