// The control plane's worker API (bad input and auth, long polls), the
// validation of worker configs, a worker's drain and loss as the control
// plane sees them, and Trino nextUri on a worker. Ports 27300-27599.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runCli, writeConfig, runRaw } from './support/gateway.mjs';
import {
  controlPlaneConfig, workerConfig, startNode, request, waitFor, servedRevision, waitForRevision,
  trinoValue, SECRET, BASIC,
} from './support/workers.mjs';

const REVISION = /^sha256:[0-9a-f]{64}$/;

function report(over = {}) {
  return JSON.stringify({
    name: 'probe', labels: { team: 'x' }, version: '0.1.0', incarnation: 'i-1',
    downloadedRevision: null, activeRevision: null, lastError: null, coordinationMode: 'controlPlane',
    configSource: null, status: 'active', heartbeatIntervalSecs: 10, ...over,
  });
}

test('the worker API: snapshots, long polls, reports; every bad request and credential is refused and the node serves on', async (t) => {
  const cp = await startNode(controlPlaneConfig({ trino: 27300, admin: 27301, role: 'standalone' }));
  t.after(() => cp.kill());

  // The snapshot.
  const cfg = await cp.api('/worker/config', { auth: 'bearer' });
  assert.equal(cfg.status, 200, cfg.text);
  const rev0 = cfg.body.revision;
  assert.match(rev0, REVISION);
  assert.equal(cfg.headers.etag, `"${rev0}"`);
  const snap = cfg.body.snapshot;
  assert.equal(snap.schemaVersion, 1);
  assert.deepEqual(snap.clusters.duck, { engine: 'duckDb', initSql: ['CREATE TABLE t AS SELECT 42 AS v'] });
  assert.deepEqual(snap.clusterGroups.g.members, ['duck']);
  assert.equal(snap.routingFallback, 'g');
  for (const key of ['routers', 'auth', 'monitor', 'history', 'translation']) assert.ok(key in snap, `snapshot.${key}`);

  // Credentials: only the bearer secret on /worker/*, only Basic on /admin/*.
  const refusals = [
    ['/worker/config', null],
    ['/worker/config', 'Bearer not-the-secret-0123456789'],
    ['/worker/config', `Bearer ${SECRET}x`],
    ['/worker/config', BASIC],
    ['/worker/config', SECRET],
    ['/worker/config/wait?since=' + rev0 + '&timeoutSecs=1', BASIC],
  ];
  for (const [path, auth] of refusals) {
    const r = await cp.api(path, { auth });
    assert.equal(r.status, 401, `${path} with ${auth}: ${r.text}`);
    assert.match(String(r.headers['www-authenticate']), /^Bearer/, `WWW-Authenticate for ${auth}`);
  }
  for (const [method, path] of [['POST', '/worker/register'], ['POST', '/worker/heartbeat']]) {
    const r = await cp.api(path, { method, auth: BASIC, body: report() });
    assert.equal(r.status, 401, `${method} ${path} with Basic: ${r.text}`);
  }
  for (const path of ['/admin/workers', '/admin/clusters', '/admin/config/clusters']) {
    assert.equal((await cp.api(path, { auth: 'bearer' })).status, 401, `${path} with the worker secret`);
  }

  // Long polls.
  const badSince = ['abc', 'sha256:123', `sha256:${'A'.repeat(64)}`, `sha1:${'0'.repeat(64)}`, `${rev0}0`, `sha256:${'g'.repeat(64)}`];
  for (const since of badSince) {
    const r = await cp.api(`/worker/config/wait?since=${encodeURIComponent(since)}&timeoutSecs=1`, { auth: 'bearer' });
    assert.equal(r.status, 400, `since=${since}: ${r.text}`);
  }
  for (const timeoutSecs of ['0', '301', '-1', 'abc', '1.5', '']) {
    const r = await cp.api(`/worker/config/wait?since=${rev0}&timeoutSecs=${timeoutSecs}`, { auth: 'bearer' });
    assert.equal(r.status, 400, `timeoutSecs=${timeoutSecs}: ${r.text}`);
  }
  const other = await cp.api(`/worker/config/wait?since=sha256:${'0'.repeat(64)}&timeoutSecs=300`, { auth: 'bearer' });
  assert.equal(other.status, 200, 'another revision answers at once');
  assert.equal(other.body.revision, rev0);
  const unchanged = await cp.api(`/worker/config/wait?since=${rev0}&timeoutSecs=1`, { auth: 'bearer' });
  assert.equal(unchanged.status, 304, unchanged.text);
  assert.equal(unchanged.text, '');
  // A held poll answers the moment the config changes (or 304 after 30 s, which fails here).
  const held = cp.api(`/worker/config/wait?since=${rev0}&timeoutSecs=30`, { auth: 'bearer', timeoutMs: 40000 });
  assert.equal(await servedRevision(cp), rev0);
  const edit = await cp.api('/admin/config/clusters/duck', {
    method: 'PUT', body: JSON.stringify({ engine: 'duckDb', initSql: ['CREATE TABLE t AS SELECT 43 AS v'] }),
  });
  assert.equal(edit.status, 200, edit.text);
  const woken = await held;
  assert.equal(woken.status, 200, woken.text);
  const rev1 = await servedRevision(cp);
  assert.notEqual(rev1, rev0);
  assert.equal(woken.body.revision, rev1);
  assert.equal(woken.headers.etag, `"${rev1}"`);
  assert.deepEqual(woken.body.snapshot.clusters.duck.initSql, ['CREATE TABLE t AS SELECT 43 AS v']);

  // Reports.
  const reg = await cp.api('/worker/register', { method: 'POST', auth: 'bearer', body: report() });
  assert.equal(reg.status, 200, reg.text);
  assert.deepEqual(reg.body, { accepted: true });
  const deep = { a: { b: { c: { d: { e: 'f' } } } } };
  const bad = [
    ['not JSON', '{"name":'],
    ['not an object', '[1,2]'],
    ['empty name', report({ name: '' })],
    ['a space in the name', report({ name: 'bad name' })],
    ['a slash in the name', report({ name: 'a/b' })],
    ['a name of 254', report({ name: 'n'.repeat(254) })],
    ['a number label', report({ labels: { a: 1 } })],
    ['an object label', report({ labels: { a: { b: 'c' } } })],
    ['too deep', report({ labels: deep })],
  ];
  for (const path of ['/worker/register', '/worker/heartbeat']) {
    for (const [what, body] of bad) {
      const r = await cp.api(path, { method: 'POST', auth: 'bearer', body });
      assert.equal(r.status, 400, `${path}, ${what}: ${r.text}`);
      assert.equal(typeof r.body?.error, 'string', `${path}, ${what}: an {"error"} body: ${r.text}`);
    }
  }
  const tooDeep = await cp.api('/worker/heartbeat', { method: 'POST', auth: 'bearer', body: JSON.stringify({ x: [[[[[1]]]]] }) });
  assert.equal(tooDeep.status, 400);
  assert.equal(tooDeep.body.error, 'the report nests too deep');
  const ok253 = await cp.api('/worker/heartbeat', { method: 'POST', auth: 'bearer', body: report({ name: 'n'.repeat(253) }) });
  assert.equal(ok253.status, 200, `a name of 253 is fine: ${ok253.text}`);
  const big = await cp.api('/worker/heartbeat', {
    method: 'POST', auth: 'bearer', body: report({ lastError: 'x'.repeat(65 * 1024) }),
  });
  assert.equal(big.status, 413, big.text);
  for (const path of ['/worker/nope', '/worker/config/nope', '/worker/register/x', '/worker']) {
    assert.equal((await cp.api(path, { auth: 'bearer' })).status, 404, path);
  }
  for (const [method, path] of [['POST', '/worker/config'], ['GET', '/worker/register'], ['GET', '/worker/heartbeat'],
    ['DELETE', '/worker/heartbeat'], ['PUT', '/worker/config'], ['POST', '/worker/config/wait']]) {
    assert.equal((await cp.api(path, { method, auth: 'bearer' })).status, 405, `${method} ${path}`);
  }

  // Still serving: reports, snapshots, queries and the admin API.
  const beat = await cp.api('/worker/heartbeat', {
    method: 'POST', auth: 'bearer', body: report({ activeRevision: rev1, downloadedRevision: rev1, configSource: 'controlPlane' }),
  });
  assert.equal(beat.status, 200, beat.text);
  assert.equal(await servedRevision(cp), rev1);
  const probe = await waitFor(async () => {
    const r = await cp.api('/admin/workers/probe');
    return r.status === 200 && r.body.activeRevision === rev1 && r.body;
  }, { what: 'the probe\'s heartbeat recorded' });
  assert.deepEqual(probe.labels, { team: 'x' });
  assert.equal(probe.upToDate, true);
  assert.equal(probe.currentRevision, rev1);
  assert.deepEqual((await runRaw(cp.trinoUrl, 'SELECT v FROM t')).data, [[43]]);
});

test('validate lists every control-plane key in a worker config, one line each; a good worker file is OK', () => {
  const worker = workerConfig({ name: 'w', ops: 27390, trino: 27391, cp: 'https://cp.example:9000' });
  const good = writeConfig(worker).file;
  const ok = runCli(['validate', '--config', good]);
  assert.equal(ok.code, 0, ok.stdout + ok.stderr);
  assert.match(ok.stdout + ok.stderr, new RegExp(`${good.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: OK \\(worker; its config comes from https://cp\\.example:9000\\)`));

  const bad = structuredClone(worker);
  Object.assign(bad, {
    clusters: { duck: { engine: 'duckDb' } },
    clusterGroups: { g: { members: ['duck'] } },
    routers: [],
    routingFallback: 'g',
    auth: { provider: 'none' },
    authorization: {},
    catalogProvider: {},
    guardrails: {},
    accessControl: {},
    databaseCache: { enabled: true },
    translation: { mode: 'sqlglot', errorOnUnsupported: true },
  });
  bad.queryflux.workerApi = { enabled: true, sharedSecret: SECRET };
  bad.queryflux.persistence = { type: 'postgres', url: 'postgres://postgres@127.0.0.1:15432/postgres' };
  bad.queryflux.adminApi.username = 'admin';
  bad.queryflux.adminApi.password = 'admin';
  const file = writeConfig(bad).file;
  const r = runCli(['validate', '--config', file]);
  assert.equal(r.code, 2, r.stdout + r.stderr);
  const lines = (r.stdout + r.stderr).split('\n');
  const expected = [
    'clusters: owned by the control plane: a worker receives it in its config snapshot',
    'clusterGroups: owned by the control plane: a worker receives it in its config snapshot',
    'routers: owned by the control plane: a worker receives it in its config snapshot',
    'routingFallback: owned by the control plane: a worker receives it in its config snapshot',
    'auth: owned by the control plane: a worker receives it in its config snapshot',
    'authorization: owned by the control plane: not allowed in a worker config',
    'catalogProvider: owned by the control plane: not allowed in a worker config',
    'guardrails: owned by the control plane: not allowed in a worker config',
    'accessControl: owned by the control plane: not allowed in a worker config',
    'databaseCache: owned by the control plane: not allowed in a worker config',
    'translation.mode: owned by the control plane',
    'translation.errorOnUnsupported: owned by the control plane',
    'queryflux.workerApi: owned by the control plane',
    'queryflux.persistence.type: owned by the control plane: a worker never connects to a database (only inMemory)',
    'queryflux.adminApi.username: ',
    'queryflux.adminApi.password: ',
  ];
  for (const want of expected) {
    const hits = lines.filter((l) => l.startsWith(`${file}: ${want}`));
    assert.equal(hits.length, 1, `one line "${file}: ${want}..." in:\n${r.stdout}${r.stderr}`);
  }
});

test('the control plane sees a worker drain on SIGTERM and a silent one gone after three heartbeat intervals', async (t) => {
  const cp = await startNode(controlPlaneConfig({ trino: 27400, admin: 27401, role: 'standalone' }));
  t.after(() => cp.kill());
  const rev = await servedRevision(cp);
  const a = await startNode(workerConfig({ name: 'drainer', ops: 27410, trino: 27411, cp: cp.adminUrl }));
  t.after(() => a.kill());
  const b = await startNode(workerConfig({ name: 'vanisher', ops: 27420, trino: 27421, cp: cp.adminUrl }));
  t.after(() => b.kill());
  for (const name of ['drainer', 'vanisher']) {
    await waitFor(async () => {
      const r = await cp.api(`/admin/workers/${name}`);
      return r.status === 200 && r.body.status === 'active' && r.body.activeRevision === rev;
    }, { what: `${name} active on ${rev}` });
  }

  const exit = a.stop();
  await waitFor(async () => (await cp.api('/admin/workers/drainer')).body.status === 'draining',
    { what: 'drainer reported draining' });
  assert.equal((await exit).code, 0);

  b.process.kill('SIGKILL');
  await b.exited;
  await waitFor(async () => (await cp.api('/admin/workers/vanisher')).body.status === 'gone',
    { timeoutMs: 15000, what: 'vanisher gone' });
});

test('nextUri follows the address the client used: Host, or X-Forwarded-Proto and -Host', async (t) => {
  const cp = await startNode(controlPlaneConfig({ trino: 27500, admin: 27501, role: 'standalone' }));
  t.after(() => cp.kill());
  const w = await startNode(workerConfig({ name: 'uris', ops: 27510, trino: 27511, cp: cp.adminUrl }));
  t.after(() => w.kill());
  await waitForRevision(w, await servedRevision(cp), { ready: true });
  const post = (headers) => request(`${w.trinoUrl}/v1/statement`, {
    method: 'POST', headers: { 'X-Trino-User': 'tester', 'Content-Type': 'text/plain', ...headers }, body: 'SELECT v FROM t',
  });

  const direct = await post({ Host: '127.0.0.1:27511' });
  assert.equal(direct.status, 200, direct.text);
  assert.ok(direct.body.nextUri.startsWith('http://127.0.0.1:27511/'), direct.body.nextUri);
  assert.ok(direct.body.infoUri.startsWith('http://127.0.0.1:27511/'), direct.body.infoUri);

  const named = await post({ Host: 'localhost:27511' });
  assert.equal(named.status, 200, named.text);
  assert.ok(named.body.nextUri.startsWith('http://localhost:27511/'), named.body.nextUri);

  const forwarded = await post({ Host: '127.0.0.1:27511', 'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': 'gw.example.com' });
  assert.equal(forwarded.status, 200, forwarded.text);
  assert.ok(forwarded.body.nextUri.startsWith('https://gw.example.com/'), forwarded.body.nextUri);
  assert.ok(forwarded.body.infoUri.startsWith('https://gw.example.com/'), forwarded.body.infoUri);

  // The direct one, followed by hand to the end; and trino-client.
  let page = direct.body;
  const rows = [];
  while (page.nextUri) {
    assert.ok(page.nextUri.startsWith('http://127.0.0.1:27511/'), page.nextUri);
    const r = await request(page.nextUri);
    assert.equal(r.status, 200, r.text);
    page = r.body;
    for (const row of page.data ?? []) rows.push(row);
  }
  assert.equal(page.stats.state, 'FINISHED');
  assert.deepEqual(rows, [[42]]);
  assert.deepEqual(await trinoValue(w), [[42]]);
});
