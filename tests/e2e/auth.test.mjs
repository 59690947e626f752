// Static users: PostgreSQL clients authenticate with a cleartext password
// over TLS (refused without it), Trino clients with HTTP Basic.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { Trino, BasicAuth } from 'trino-client';
import { startGateway, config, runClient, parseMetrics, metricValue, selfSignedCert } from './support/gateway.mjs';

function authConfig(ports, tls, allowCleartextWithoutTls) {
  const cfg = config({
    trinoPort: ports.trino,
    adminPort: ports.admin,
    clusters: { duck: { engine: 'duckDb' } },
    clusterGroups: { g: { members: ['duck'] } },
  });
  cfg.queryflux.frontends.postgresWire = { enabled: true, port: ports.pg };
  if (tls) cfg.queryflux.frontends.postgresWire.tls = { certFile: tls.cert, keyFile: tls.key };
  cfg.auth = { provider: 'static', allowCleartextWithoutTls, staticUsers: { users: { alice: { password: 's3cret' } } } };
  return cfg;
}

function psql(port, { user = 'alice', password, sslmode = 'require' }) {
  return spawnSync('psql', ['-X', '-A', '-t', '-w', '-h', '127.0.0.1', '-p', String(port), '-U', user, '-d', 'demo', '-c', 'SELECT 1'],
    { encoding: 'utf8', timeout: 20000, env: { ...process.env, PGSSLMODE: sslmode, ...(password ? { PGPASSWORD: password } : {}) } });
}

test('PostgreSQL clients need the right password, and TLS to send it', async (t) => {
  const ports = { trino: 23400, admin: 23401, pg: 23402 };
  const gw = await startGateway(authConfig(ports, selfSignedCert(t), true));
  t.after(() => gw.kill());
  assert.equal(psql(ports.pg, { password: 's3cret' }).stdout, '1\n');
  const wrong = psql(ports.pg, { password: 'nope' });
  assert.notEqual(wrong.status, 0);
  assert.match(wrong.stderr, /password authentication failed for user "alice"/);
  const stranger = psql(ports.pg, { user: 'mallory', password: 's3cret' });
  assert.match(stranger.stderr, /password authentication failed for user "mallory"/);
  const none = psql(ports.pg, {});
  assert.notEqual(none.status, 0);

  // Trino: HTTP Basic with the same users.
  const good = await runClient(Trino.create({ server: gw.trinoUrl, auth: new BasicAuth('alice', 's3cret') }), 'SELECT 7');
  assert.deepEqual(good.data, [[7]]);
  const res = await fetch(`${gw.trinoUrl}/v1/statement`, {
    method: 'POST', body: 'SELECT 1',
    headers: { 'X-Trino-User': 'alice', Authorization: 'Basic ' + Buffer.from('alice:wrong').toString('base64') },
  });
  assert.equal(res.status, 401);
  const impersonate = await fetch(`${gw.trinoUrl}/v1/statement`, {
    method: 'POST', body: 'SELECT 1',
    headers: { 'X-Trino-User': 'root', Authorization: 'Basic ' + Buffer.from('alice:s3cret').toString('base64') },
  });
  assert.equal(impersonate.status, 403);

  const m = parseMetrics(await gw.metrics());
  assert.ok(metricValue(m, 'queryflux_auth_failures_total', { protocol: 'postgresWire' }) >= 2);
  assert.equal(metricValue(m, 'queryflux_auth_failures_total', { protocol: 'trinoHttp' }), 1);
});

test('without TLS the password is never asked for, unless cleartext is allowed', async (t) => {
  const tls = selfSignedCert(t);
  const strict = { trino: 23410, admin: 23411, pg: 23412 };
  const a = await startGateway(authConfig(strict, tls, false));
  t.after(() => a.kill());
  const plain = psql(strict.pg, { password: 's3cret', sslmode: 'disable' });
  assert.notEqual(plain.status, 0);
  assert.match(plain.stderr, /password authentication requires TLS/);
  assert.equal(psql(strict.pg, { password: 's3cret', sslmode: 'require' }).stdout, '1\n');
  // allowCleartextWithoutTls: true lets passwords cross plain TCP.
  const open = { trino: 23420, admin: 23421, pg: 23422 };
  const b = await startGateway(authConfig(open, null, true));
  t.after(() => b.kill());
  assert.equal(psql(open.pg, { password: 's3cret', sslmode: 'disable' }).stdout, '1\n');
});

test("with users, a query's info and cancel are its user's, and the list shows others' SQL to nobody", async (t) => {
  const ports = { trino: 23415, admin: 23416, pg: 23417 };
  const cfg = authConfig(ports, null, true);
  cfg.auth.staticUsers.users.bob = { password: 'b0b' };
  const gw = await startGateway(cfg);
  t.after(() => gw.kill());
  const as = (user, password) => ({
    'X-Trino-User': user, Authorization: 'Basic ' + Buffer.from(`${user}:${password}`).toString('base64'),
  });
  const alice = as('alice', 's3cret');
  const bob = as('bob', 'b0b');
  const posted = await fetch(`${gw.trinoUrl}/v1/statement`,
    { method: 'POST', body: "SELECT 'alice only' AS s, sleep_ms(1500)", headers: alice });
  const first = await posted.json();
  const id = first.id;
  await fetch(first.nextUri, { headers: alice }).then((r) => r.arrayBuffer()); // it starts
  const get = (path, headers, method = 'GET') => fetch(gw.trinoUrl + path, { method, headers })
    .then(async (r) => ({ status: r.status, text: await r.text() }));
  assert.equal((await get(`/v1/query/${id}`, bob)).status, 404);
  assert.equal((await get(`/v1/query/${id}`, bob, 'DELETE')).status, 404);
  assert.equal((await get(`/v1/query/${id}`, alice)).status, 200);
  const list = JSON.parse((await get('/v1/query', bob)).text);
  const entry = list.find((q) => q.queryId === id);
  assert.ok(entry, 'a gateway in front still counts it');
  assert.equal(entry.query, '');
  assert.match(JSON.parse((await get('/v1/query', alice)).text).find((q) => q.queryId === id).query, /alice only/);
  // bob's DELETE did not cancel it: alice reads it to the end.
  let page = first;
  let data = [];
  while (page.nextUri) {
    page = await fetch(page.nextUri, { headers: alice }).then((r) => r.json());
    if (page.data) data = data.concat(page.data);
  }
  assert.equal(page.stats.state, 'FINISHED');
  assert.equal(data[0][0], 'alice only');
  // Finished, from history: the same.
  assert.equal((await get(`/v1/query/${id}`, bob)).status, 404);
  assert.match((await get(`/v1/query/${id}`, alice)).text, /alice only/);
});
