// Trino Gateway's REST paths, driven the way its users' scripts drive them
// (curl), against two DuckDB clusters in one routing group.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import http from 'node:http';
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
  // Trino Gateway serves one port: its users' probes and scrapes point at
  // the Trino port, and are answered there too.
  const onTrino = (path) => curl([`http://127.0.0.1:${ports.trino}${path}`]);
  assert.deepEqual(onTrino('/trino-gateway/livez'), { code: 200, body: 'ok' });
  assert.deepEqual(onTrino('/trino-gateway/readyz'), { code: 200, body: 'ok' });
  await runRaw(gw.trinoUrl, 'SELECT 1 AS one');
  const scraped = onTrino('/metrics');
  assert.equal(scraped.code, 200);
  assert.match(scraped.body, /^queryflux_queries_total\{.*status="Success".*\} [1-9]/m, scraped.body.slice(0, 400));
  assert.equal(onTrino('/gateway/backend/all').code, 404, 'the admin API stays on the admin port');
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

  // modify/add, update and delete, with Trino Gateway's bodies.
  const post = (path, body) => admin(path, ['-X', 'POST', '-H', 'Content-Type: application/json', '-d', body]);
  const c3 = { name: 'c3', proxyTo: 'duckdb::memory:', active: true, routingGroup: 'adhoc' };
  const add = post('/gateway/backend/modify/add', JSON.stringify(c3));
  assert.equal(add.code, 200, add.body);
  assert.deepEqual(JSON.parse(add.body), c3);
  assert.equal(post('/gateway/backend/modify/add', JSON.stringify(c3)).code, 409, 'a duplicate name');
  const badGroup = post('/gateway/backend/modify/add', JSON.stringify({ ...c3, name: 'c4', routingGroup: 'nope' }));
  assert.equal(badGroup.code, 400);
  assert.match(badGroup.body, /no cluster group named nope/);
  assert.equal(post('/gateway/backend/modify/add', JSON.stringify({ ...c3, name: 'c4', proxyTo: 'ftp://trino:8443' })).code, 400);
  await waitFor(() => JSON.parse(open('/api/public/backends/c3/state').body).trinoStatus === 'HEALTHY',
    { what: 'c3 HEALTHY', timeoutMs: 5000 });
  assert.deepEqual(JSON.parse(admin('/gateway/backend/active').body).map((b) => b.name), ['c1', 'c2', 'c3']);
  // externalUrl (where people open the cluster) is kept apart from proxyTo.
  const outside = 'https://trino-c3.example.com';
  assert.equal(post('/gateway/backend/modify/update', JSON.stringify({ ...c3, externalUrl: outside })).code, 200);
  const withUrl = JSON.parse(open('/api/public/backends/c3').body);
  assert.equal(withUrl.externalUrl, outside);
  assert.equal(withUrl.proxyTo, 'duckdb::memory:');
  assert.equal(JSON.parse(open('/api/public/backends/c3/state').body).externalUrl, outside);
  assert.equal((await gw.admin('/admin/config/clusters/c3')).body.externalUrl, outside);
  for (let i = 0; i < 9; i += 1) await runRaw(gw.trinoUrl, `SELECT ${i} AS with_c3`);
  const spread = await gw.history({ search: 'AS with_c3' });
  assert.ok(spread.queries.some((q) => q.clusterName === 'c3'), 'the added backend takes queries');

  const update = post('/gateway/backend/modify/update', JSON.stringify({ ...c3, active: false }));
  assert.equal(update.code, 200, update.body);
  assert.equal(JSON.parse(open('/api/public/backends/c3').body).active, false);
  assert.equal(JSON.parse(open('/api/public/backends/c3/state').body).trinoStatus, 'UNKNOWN');

  const del = admin('/gateway/backend/modify/delete', ['-X', 'POST', '-d', 'c3']);
  assert.equal(del.code, 200, del.body);
  assert.equal(open('/api/public/backends/c3').code, 404);
  assert.equal(admin('/gateway/backend/modify/delete', ['-X', 'POST', '-d', 'c3']).code, 404);
  assert.doesNotMatch(await gw.metrics(), /queryflux_cluster_health\{[^}]*cluster_name="c3"/);

  // The same through QueryFlux's own admin API.
  const own = await gw.admin('/admin/clusters/c1/deactivate', { method: 'POST' });
  assert.equal(own.body.name, 'c1');
  assert.equal(own.body.active, false);
  const listed = (await gw.admin('/admin/clusters')).body.find((c) => c.name === 'c1');
  assert.equal(listed.active, false);
  assert.equal((await gw.admin('/admin/clusters/nope/activate', { method: 'POST' })).status, 404);
});

test("an update through either API starts a cluster's health over, also when only its routing group changed", async (t) => {
  const own = { trino: 23802, admin: 23803, coordinator: 23804 };
  // A Trino coordinator whose /v1/info answers are held while `hold` is set,
  // so that the health a check has not finished yet can be seen.
  let hold = false;
  const held = [];
  const coordinator = http.createServer((req, res) => {
    const answer = () => {
      res.setHeader('Content-Type', 'application/json');
      res.end(req.url.startsWith('/v1/info')
        ? JSON.stringify({ nodeVersion: { version: '455' }, environment: 'e2e', coordinator: true, starting: false, uptime: '1.00m' })
        : '[]');
    };
    if (hold && req.url.startsWith('/v1/info')) held.push(answer);
    else answer();
  });
  await new Promise((resolve) => coordinator.listen(own.coordinator, '127.0.0.1', resolve));
  t.after(() => {
    held.splice(0).forEach((answer) => answer());
    coordinator.close();
  });
  const endpoint = `http://127.0.0.1:${own.coordinator}`;
  const gw = await startGateway(config({
    trinoPort: own.trino,
    adminPort: own.admin,
    clusters: { t1: { engine: 'trino', endpoint }, d1: { engine: 'duckDb' } },
    clusterGroups: { a: { members: ['t1', 'd1'], maxRunningQueries: 4 }, b: { members: ['d1'], maxRunningQueries: 4 } },
    routingFallback: 'a',
  }));
  t.after(() => gw.kill());
  const status = async () => (await gw.admin('/admin/clusters/t1')).body.status;
  assert.equal(await status(), 'HEALTHY');
  const startsOver = async (what, change) => {
    hold = true;
    const answer = await change();
    assert.equal(answer.status, 200, `${what}: ${JSON.stringify(answer.body)}`);
    await waitFor(async () => held.length > 0 && (await status()) === 'PENDING',
      { what: `${what}: t1 PENDING while its check waits`, timeoutMs: 5000 });
    hold = false;
    held.splice(0).forEach((answer) => answer());
    await waitFor(async () => (await status()) === 'HEALTHY', { what: `${what}: t1 HEALTHY again`, timeoutMs: 5000 });
  };

  // Trino Gateway's update, only the routing group changed: the node keeps
  // the cluster as it was, but its health starts over as the spec says.
  await startsOver('modify/update', () => gw.admin('/gateway/backend/modify/update', {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: 't1', proxyTo: endpoint, active: true, routingGroup: 'b' }),
  }));
  assert.deepEqual((await gw.admin('/admin/clusters/t1')).body.groups, ['b']);
  // Our admin API's update, the same body as before.
  const body = (await gw.admin('/admin/config/clusters/t1')).body;
  await startsOver('PUT /admin/config/clusters/t1', () => gw.admin('/admin/config/clusters/t1', {
    method: 'PUT', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
  }));
});
