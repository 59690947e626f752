// Studio's sessions across processes: two control-plane replicas on one
// database accept each other's sessions (the key is the database's), a
// restart keeps them, a changed admin password ends them, a worker serves
// no Studio, and default credentials beyond loopback are warned about at
// start. The browser's side is studio.test.mjs. Ports 29300-29349.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, config, waitFor } from './support/gateway.mjs';
import { freshDatabase } from './support/database.mjs';
import { controlPlaneConfig, startNode, workerConfig } from './support/workers.mjs';

async function login(adminUrl, password = 'admin') {
  const res = await fetch(`${adminUrl}/studio/api/login`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  const cookie = res.headers.get('set-cookie').split(';')[0];
  return { cookie, csrf: (await res.json()).csrfToken };
}

const withCookie = (adminUrl, path, { cookie, csrf }, init = {}) => fetch(adminUrl + path, {
  ...init,
  headers: { Cookie: cookie, 'X-Requested-With': 'test', ...(csrf ? { 'X-QueryFlux-CSRF': csrf } : {}), ...(init.headers || {}) },
});

test('a session made on one control-plane replica is good on the other and after a restart', async (t) => {
  const url = await freshDatabase(t, 'qf_studio');
  const persistence = { type: 'postgres', url };
  const a = await startNode(controlPlaneConfig({ trino: 29300, admin: 29301, persistence }));
  t.after(() => a.kill());
  const b = await startNode(controlPlaneConfig({ trino: 29302, admin: 29303, persistence }));
  t.after(() => b.kill());
  const session = await login(a.adminUrl);
  // A read and a change on the other replica, with the one session.
  assert.equal((await withCookie(b.adminUrl, '/studio/api/session', session)).status, 200);
  assert.equal((await withCookie(b.adminUrl, '/admin/clusters', session)).status, 200);
  const off = await withCookie(b.adminUrl, '/admin/clusters/duck/deactivate', session, { method: 'POST' });
  assert.equal(off.status, 200, await off.text());
  // The token is the session's own: another session's is refused.
  const other = await login(b.adminUrl);
  const forged = await withCookie(a.adminUrl, '/admin/clusters/duck/activate', { ...session, csrf: other.csrf }, { method: 'POST' });
  assert.equal(forged.status, 403);
  // A restart of the replica that made it keeps it.
  await a.kill();
  const a2 = await startNode(controlPlaneConfig({ trino: 29300, admin: 29301, persistence }));
  t.after(() => a2.kill());
  assert.equal((await withCookie(a2.adminUrl, '/studio/api/session', session)).status, 200);
  // A logout holds on the replica at once, on the other one within its
  // next read of the database, and after restarts.
  assert.equal((await withCookie(a2.adminUrl, '/studio/api/logout', session, { method: 'POST' })).status, 204);
  assert.equal((await withCookie(a2.adminUrl, '/studio/api/session', session)).status, 401);
  await waitFor(async () => (await withCookie(b.adminUrl, '/studio/api/session', session)).status === 401,
    { what: 'the other replica refusing the logged-out session', timeoutMs: 15000 });
  await a2.kill();
  const a3 = await startNode(controlPlaneConfig({ trino: 29300, admin: 29301, persistence }));
  t.after(() => a3.kill());
  assert.equal((await withCookie(a3.adminUrl, '/studio/api/session', session)).status, 401);
  assert.equal((await withCookie(a3.adminUrl, '/studio/api/session', other)).status, 200,
    'another session stays');
});

test('a changed admin password ends every session; wrong passwords and bodies are refused in words', async (t) => {
  const first = config({ trinoPort: 29310, adminPort: 29311, clusters: { duck: { engine: 'duckDb' } }, clusterGroups: { g: { members: ['duck'] } } });
  const gw = await startGateway(first);
  t.after(() => gw.kill());
  const session = await login(gw.adminUrl);
  assert.equal((await withCookie(gw.adminUrl, '/admin/groups', session)).status, 200);
  const json = { 'Content-Type': 'application/json' };
  for (const [body, status, headers] of [['{"username":"admin","password":"x"}', 401, json],
    ['not json', 400, json], ['{"username":"admin"}', 400, json],
    [JSON.stringify({ username: 'admin', password: 'p'.repeat(5000) }), 400, json],
    // As a form on another site would send it: refused, not read.
    ['{"username":"admin","password":"admin"}', 415, { 'Content-Type': 'text/plain' }]]) {
    const res = await fetch(`${gw.adminUrl}/studio/api/login`, { method: 'POST', body, headers });
    assert.equal(res.status, status, body.slice(0, 40));
    assert.ok((await res.json()).error);
    assert.equal(res.headers.get('set-cookie'), null);
  }
  await gw.kill();
  const changed = structuredClone(first);
  changed.queryflux.adminApi.password = 'a much better one';
  const again = await startGateway(changed);
  t.after(() => again.kill());
  // With the same key it would stand; the password is part of what signs.
  const res = await withCookie(again.adminUrl, '/admin/groups', session);
  assert.equal(res.status, 401);
  assert.equal(res.headers.get('www-authenticate'), null, 'no browser password dialog for a page');
  assert.ok((await fetch(`${again.adminUrl}/admin/groups`)).headers.get('www-authenticate'),
    'scripts still get the Basic challenge');
  const fresh = await login(again.adminUrl, 'a much better one');
  const s = await (await withCookie(again.adminUrl, '/studio/api/session', fresh)).json();
  assert.equal(s.defaultCredentials, false);
  assert.doesNotMatch(again.logs(), /default credentials/);
});

test('default credentials beyond loopback are warned about; a worker serves no Studio', async (t) => {
  const cp = await startNode(controlPlaneConfig({ trino: 29320, admin: 29321, role: 'standalone' }));
  t.after(() => cp.kill());
  assert.match(cp.logs(), /listen on 0\.0\.0\.0 with the default credentials admin\/admin/);
  const page = await fetch(`${cp.adminUrl}/studio/`);
  assert.equal(page.status, 200);
  assert.match(page.headers.get('content-security-policy'), /default-src 'self'/);
  assert.match(await page.text(), /<script src="\/studio\/assets\/app-[A-Z0-9]+\.js"/);
  const w = await startNode(workerConfig({ name: 'w1', ops: 29322, trino: 29323, cp: cp.adminUrl }));
  t.after(() => w.kill());
  for (const path of ['/', '/studio/', '/studio/api/login']) {
    const res = await fetch(`http://127.0.0.1:29322${path}`, { method: path.endsWith('login') ? 'POST' : 'GET' });
    assert.equal(res.status, 404, path);
  }
});
