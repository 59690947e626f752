// Studio, the web UI on the admin port, in a real browser (Debian's
// Chromium through playwright-core) against the real queryflux binary and
// real DuckDB, SQLite and (stand-in) Trino clusters. Ports 29000-29199.
//
// Screenshots of every page go to QF_STUDIO_SHOTS (relative to the
// repository's root) when it is set, else to a temp dir.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startGateway, config, runRaw, runClient, killAfterCleanups,
} from './support/gateway.mjs';
import { freshDatabase } from './support/database.mjs';
import { controlPlaneConfig, workerConfig, startNode } from './support/workers.mjs';
import {
  launchBrowser, newPage, fillLogin, openStudio, go, eventually, clusterRow, workerRow, screenshot,
} from './support/studio_browser.mjs';
import { fakeCoordinator, runQueries, demoFleet, demoQueries } from './support/studio_fleet.mjs';

let browser;
before(async () => { browser = await launchBrowser(); });
after(async () => { await browser?.close(); });

const duck = (sql) => ({ engine: 'duckDb', initSql: sql ? [sql] : undefined });

test('log in: wrong password in words, default-credentials banner, HttpOnly SameSite=Strict cookie, CSRF, 401 keeps the page', async (t) => {
  const gw = await startGateway(config({
    trinoPort: 29000, adminPort: 29001,
    clusters: { d1: duck() }, clusterGroups: { g: { members: ['d1'] } }, routingFallback: 'g',
  }));
  t.after(() => gw.kill());
  const { page, context, problems } = await newPage(t, browser);

  // The admin port's / leads to Studio, which asks for a login first.
  await page.goto(`${gw.adminUrl}/`);
  assert.match(page.url(), /\/studio\/(#.*)?$/);
  await page.getByRole('heading', { name: /QueryFlux Studio/ }).waitFor();

  await fillLogin(page, 'admin', 'not-the-password');
  await page.getByRole('alert').filter({ hasText: 'Wrong user name or password.' }).waitFor();
  assert.equal(await page.getByRole('heading', { name: 'Dashboard' }).count(), 0);

  await page.getByLabel('Password', { exact: true }).fill('admin');
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { name: 'Dashboard', level: 1 }).waitFor();
  await page.getByText(/still uses the documented\s+default admin \/ admin/).waitFor();
  assert.match(await page.getByRole('note').first().innerText(), /adminApi\.username and adminApi\.password/);

  const cookie = (await context.cookies()).find((c) => c.name === 'qf_studio');
  assert.ok(cookie, 'the session cookie qf_studio is set');
  assert.equal(cookie.httpOnly, true, 'HttpOnly');
  assert.equal(cookie.sameSite, 'Strict', 'SameSite=Strict');
  assert.equal(cookie.path, '/');

  // The cookie alone reads; a change needs the session's CSRF token too.
  const attempt = (headers) => page.evaluate(async (h) => {
    const r = await fetch('/admin/clusters/d1/deactivate', { method: 'POST', credentials: 'same-origin', headers: h });
    return { status: r.status, body: await r.text() };
  }, headers);
  const read = await page.request.get(`${gw.adminUrl}/admin/clusters`);
  assert.equal(read.status(), 200);
  const refused = await attempt({});
  assert.equal(refused.status, 403, refused.body);
  assert.match(JSON.parse(refused.body).error, /CSRF/);
  assert.equal((await attempt({ 'X-QueryFlux-CSRF': 'wrong' })).status, 403);
  assert.equal((await page.request.post(`${gw.adminUrl}/admin/clusters/d1/deactivate`)).status(), 403);
  assert.equal((await gw.admin('/admin/clusters/d1')).body.active, true, 'nothing changed');
  const token = await page.evaluate(async () => (await (await fetch('/studio/api/session')).json()).csrfToken);
  const allowed = await page.evaluate(async (tok) => {
    const r = await fetch('/admin/clusters/nope/activate', { method: 'POST', headers: { 'X-QueryFlux-CSRF': tok } });
    return r.status;
  }, token);
  assert.equal(allowed, 404, 'with the token the request reaches the admin API');

  // A session that ends (cookie gone) brings the login back on the next
  // refresh, and logging in again returns to the same page.
  await go(page, '#/clusters', 'Clusters');
  await context.clearCookies();
  await page.getByLabel('User name', { exact: true }).waitFor();
  await fillLogin(page, 'admin', 'admin');
  await page.getByRole('heading', { name: 'Clusters', level: 1 }).waitFor();
  assert.match(page.url(), /#\/clusters$/);

  // A save whose session ended: the login comes over the form, which keeps
  // what was typed, and the save goes through once logged in.
  await go(page, '#/clusters/new', 'Add cluster');
  await page.getByLabel('Name', { exact: true }).fill('kept');
  await context.clearCookies();
  await page.getByRole('button', { name: 'Add cluster' }).click();
  const again = page.getByRole('dialog', { name: 'Log in again' });
  await again.getByText('Your session has ended.').waitFor();
  await fillLogin(page, 'admin', 'admin');
  await again.waitFor({ state: 'detached' });
  assert.equal(await page.getByLabel('Name', { exact: true }).inputValue(), 'kept');
  await page.getByRole('button', { name: 'Add cluster' }).click();
  await page.getByRole('status').filter({ hasText: 'Cluster kept added' }).waitFor();

  // Log out: the cookie is cleared and the admin API refuses it.
  await page.getByRole('button', { name: 'Log out' }).click();
  await page.getByLabel('User name', { exact: true }).waitFor();
  assert.equal((await page.request.get(`${gw.adminUrl}/studio/api/session`)).status(), 401);
  assert.deepEqual(problems, []);
});

test('add clusters through the form: PENDING then HEALTHY; an edit keeps the masked secret', async (t) => {
  const coordinator = await fakeCoordinator(t, 29012);
  const gw = await startGateway(config({
    trinoPort: 29010, adminPort: 29011,
    clusters: { d1: duck() }, clusterGroups: { g: { members: ['d1'] } }, routingFallback: 'g',
  }));
  t.after(() => gw.kill());
  const { page, problems } = await openStudio(t, browser, gw.adminUrl, { hash: '#/clusters', heading: 'Clusters' });

  // A Trino cluster whose first health check the coordinator holds.
  await page.getByRole('link', { name: 'Add cluster' }).click();
  await page.getByRole('heading', { name: 'Add cluster', level: 1 }).waitFor();
  await page.getByLabel('Name', { exact: true }).fill('t1');
  await page.getByLabel('Engine').selectOption('trino');
  await page.getByLabel('Endpoint').fill(coordinator.endpoint);
  await page.getByLabel('Authentication').selectOption('basic');
  await page.getByLabel('Auth user name').fill('svc');
  await page.getByLabel('Auth password').fill('s3cret');
  assert.equal(await page.getByLabel('Auth password').getAttribute('type'), 'password');
  await page.getByLabel('External URL').fill('https://trino-ui.example.test');
  coordinator.hold();
  await page.getByRole('button', { name: 'Add cluster' }).click();
  await page.getByRole('heading', { name: 'Clusters', level: 1 }).waitFor();
  await page.getByRole('status').filter({ hasText: 'Cluster t1 added' }).waitFor();
  await clusterRow(page, 't1').getByText('PENDING', { exact: true }).waitFor();
  await eventually(() => coordinator.state.held.length > 0, { what: 'the health check of t1 to be held' });
  coordinator.release();
  await clusterRow(page, 't1').getByText('HEALTHY', { exact: true }).waitFor();
  assert.equal(coordinator.state.infoRequests.at(-1).authorization, `Basic ${Buffer.from('svc:s3cret').toString('base64')}`);

  // Edit: the password comes back as the mask, in a password input, and
  // saving sends the mask, which keeps the stored secret.
  await clusterRow(page, 't1').getByRole('link', { name: 'Edit t1' }).click();
  await page.getByRole('heading', { name: 'Edit cluster t1', level: 1 }).waitFor();
  const password = page.getByLabel('Auth password');
  await eventually(async () => (await password.inputValue()) === '********', { what: 'the masked password' });
  assert.equal(await password.getAttribute('type'), 'password');
  assert.ok(!(await page.content()).includes('s3cret'), 'the secret never reaches the page');
  await page.getByLabel('Max running queries').fill('3');
  const before = coordinator.state.infoRequests.length;
  await page.getByRole('button', { name: 'Save cluster' }).click();
  await page.getByRole('status').filter({ hasText: 'Cluster t1 saved' }).waitFor();
  const stored = (await gw.admin('/admin/config/clusters/t1')).body;
  assert.equal(stored.maxRunningQueries, 3);
  assert.equal(stored.auth.password, '********');
  assert.equal(stored.externalUrl, 'https://trino-ui.example.test');
  // The edit starts the health check over: with the stored password still.
  await eventually(() => coordinator.state.infoRequests.length > before, { what: 'a health check after the edit' });
  assert.equal(coordinator.state.infoRequests.at(-1).authorization, `Basic ${Buffer.from('svc:s3cret').toString('base64')}`);
  await clusterRow(page, 't1').getByText('HEALTHY', { exact: true }).waitFor();

  // A DuckDB cluster with its init SQL.
  await page.getByRole('link', { name: 'Add cluster' }).click();
  await page.getByLabel('Name', { exact: true }).fill('d2');
  await page.getByLabel('Init SQL').fill('CREATE TABLE t AS SELECT 7 AS v');
  await page.getByRole('button', { name: 'Add cluster' }).click();
  await clusterRow(page, 'd2').getByText('HEALTHY', { exact: true }).waitFor();
  assert.deepEqual((await gw.admin('/admin/config/clusters/d2')).body, { name: 'd2', engine: 'duckDb', initSql: ['CREATE TABLE t AS SELECT 7 AS v'] });

  // The node's refusals, in words next to the form: a name taken (409)
  // and a value it does not take (400).
  await page.getByRole('link', { name: 'Add cluster' }).click();
  await page.getByLabel('Name', { exact: true }).fill('d1');
  await page.getByRole('button', { name: 'Add cluster' }).click();
  await page.getByRole('alert').filter({ hasText: 'd1 exists already' }).filter({ hasText: 'Choose another name.' }).waitFor();
  await page.getByLabel('Name', { exact: true }).fill('pg1');
  await page.getByLabel('Engine').selectOption('postgres');
  await page.getByLabel('Endpoint').fill('postgres://u:p@127.0.0.1:1/db');
  await page.getByLabel('Pipeline depth').fill('100');
  await page.getByRole('button', { name: 'Add cluster' }).click();
  await page.getByRole('alert').filter({ hasText: 'pipelineDepth' }).waitFor();
  assert.equal((await gw.admin('/admin/config/clusters/pg1')).status, 404);
  assert.deepEqual(problems, []);
});

test('the Active switch drains a cluster: UNKNOWN, out of routing, running counts to zero', async (t) => {
  const cfg = config({
    trinoPort: 29020, adminPort: 29021,
    clusters: { a: duck(), b: duck() },
    clusterGroups: { g: { members: ['a', 'b'], maxRunningQueries: 4, strategy: { type: 'failover' } } },
    routingFallback: 'g',
  });
  cfg.monitor = { taskDelay: '1s' };
  const gw = await startGateway(cfg);
  killAfterCleanups(t, gw);
  const { page, problems } = await openStudio(t, browser, gw.adminUrl, { hash: '#/clusters', heading: 'Clusters' });
  await clusterRow(page, 'a').getByText('HEALTHY', { exact: true }).waitFor();

  // failover: a takes the long query while it is active.
  const long = runRaw(gw.trinoUrl, 'SELECT sleep_ms(600000)').catch((e) => e);
  gw.defer(() => long);
  await clusterRow(page, 'a').getByText('1 / 4', { exact: true }).waitFor();

  await page.getByLabel('a active', { exact: true }).uncheck();
  await clusterRow(page, 'a').getByText('draining: 1 running, 0 queued').waitFor();
  await clusterRow(page, 'a').getByText('UNKNOWN', { exact: true }).waitFor();
  const a = (await gw.admin('/admin/clusters/a')).body;
  assert.equal(a.active, false);
  assert.equal(a.status, 'UNKNOWN');

  // Out of routing: the group's next query goes to b.
  const next = await runClient(gw.trino('tester'), 'SELECT 1');
  assert.equal(next.error, undefined);
  assert.equal((await gw.historyRecord(next.id)).clusterName, 'b');

  // The running query ends; the row's counts fall to zero.
  const running = await gw.admin('/admin/queries/running');
  const id = running.body.find((q) => q.cluster === 'a')?.id;
  assert.ok(id, JSON.stringify(running.body));
  assert.equal((await gw.admin(`/admin/queries/${encodeURIComponent(id)}`, { method: 'DELETE' })).status, 200);
  await clusterRow(page, 'a').getByText('out of routing').waitFor();
  assert.equal(await clusterRow(page, 'a').getByText(/draining/).count(), 0);
  assert.equal(await clusterRow(page, 'a').getByText('0 / 4', { exact: true }).count(), 1);

  // Back on: routed to again once healthy.
  await page.getByLabel('a active', { exact: true }).check();
  await clusterRow(page, 'a').getByText('HEALTHY', { exact: true }).waitFor();
  assert.equal((await gw.admin('/admin/clusters/a')).body.active, true);
  assert.deepEqual(problems, []);
});

test('delete: a cluster still in a group is refused with the 409 explained; a free one goes', async (t) => {
  const gw = await startGateway(config({
    trinoPort: 29030, adminPort: 29031,
    clusters: { a: duck(), lone: duck() }, clusterGroups: { g: { members: ['a'] } }, routingFallback: 'g',
  }));
  t.after(() => gw.kill());
  const { page, problems } = await openStudio(t, browser, gw.adminUrl, { hash: '#/clusters', heading: 'Clusters' });

  await clusterRow(page, 'a').getByRole('button', { name: 'Delete a' }).click();
  const dialog = page.getByRole('dialog', { name: 'Delete cluster a?' });
  await dialog.getByRole('button', { name: 'Delete a' }).click();
  await dialog.getByRole('alert').filter({ hasText: 'a is still a member of group g: remove it from group g first' }).waitFor();
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await dialog.waitFor({ state: 'detached' });
  assert.equal((await gw.admin('/admin/config/clusters/a')).status, 200, 'a stays');

  await clusterRow(page, 'lone').getByRole('button', { name: 'Delete lone' }).click();
  await page.getByRole('dialog', { name: 'Delete cluster lone?' }).getByRole('button', { name: 'Delete lone' }).click();
  await page.getByRole('status').filter({ hasText: 'Cluster lone deleted.' }).waitFor();
  await clusterRow(page, 'lone').waitFor({ state: 'detached' });
  assert.equal((await gw.admin('/admin/config/clusters/lone')).status, 404);

  // A group the routing still names: explained the same way.
  await go(page, '#/groups', 'Groups and routing');
  await page.getByRole('button', { name: 'Delete group g' }).click();
  const groupDialog = page.getByRole('dialog', { name: 'Delete group g?' });
  await groupDialog.getByRole('button', { name: 'Delete g' }).click();
  await groupDialog.getByRole('alert').filter({ hasText: 'g is still used by the routing fallback' }).waitFor();
  assert.deepEqual(problems, []);
});

test('dashboard: groups and clusters, the hour\'s chart with its errors, the latest queries, refreshing by itself', async (t) => {
  const gw = await startGateway(config({
    trinoPort: 29090, adminPort: 29091,
    clusters: { d1: duck() }, clusterGroups: { g: { members: ['d1'], maxRunningQueries: 4 } },
  }));
  killAfterCleanups(t, gw);
  const ran = await runQueries(gw, [['alice', 'SELECT 1 AS one'], ['bob', 'SELECT 2 AS two'], ['carol', 'SELECT * FROM missing_table']]);
  await gw.historyWhen({}, (h) => h.total === 3);
  const { page, problems } = await openStudio(t, browser, gw.adminUrl);

  const chart = page.getByRole('img', { name: /Queries finished per minute/ });
  await page.getByRole('img', { name: /3 queries, 1 failed/ }).waitFor();
  assert.equal(await chart.locator('title').count(), 60, 'a tooltip per minute');
  const tips = await chart.locator('title').allTextContents();
  assert.ok(tips.some((tip) => /^\d\d:\d\d: [1-3] quer(y|ies), 1 failed$/.test(tip)), tips.join(' | '));
  assert.equal(await chart.locator('rect.bar-err').count(), 1);
  assert.match(await chart.innerHTML(), /<text[^>]*>\d\d:\d0<\/text>/, 'time labels on the axis');

  const groups = page.getByRole('region', { name: 'Groups' });
  await groups.getByRole('row', { name: /^g\b/ }).getByText('0 / 4', { exact: true }).waitFor();
  const clusters = page.getByRole('region', { name: 'Clusters' });
  await clusters.getByRole('row', { name: /d1/ }).getByText('HEALTHY', { exact: true }).waitFor();
  const latest = page.getByRole('region', { name: 'Latest queries' });
  await latest.getByRole('link', { name: 'SELECT * FROM missing_table' }).waitFor();

  // It refreshes by itself: a running query and a new one show up.
  const long = runRaw(gw.trinoUrl, 'SELECT sleep_ms(600000)').catch((e) => e);
  gw.defer(() => long);
  await groups.getByRole('row', { name: /^g\b/ }).getByText('1 / 4', { exact: true }).waitFor();
  const fresh = await runClient(gw.trino('dave'), 'SELECT 99 AS fresh');
  await latest.getByRole('link', { name: 'SELECT 99 AS fresh' }).click();
  await page.getByRole('heading', { name: `Query ${fresh.id}`, level: 1 }).waitFor();
  assert.ok(ran.every((r) => r.id));
  assert.deepEqual(problems, []);
});

test('groups and routing: add a group, reorder and add routers, a bad router refused in words, the fallback', async (t) => {
  const gw = await startGateway(config({
    trinoPort: 29080, adminPort: 29081,
    clusters: { a: duck(), b: duck() },
    clusterGroups: { g1: { members: ['a'] } },
    routers: [{ type: 'header', headerName: 'X-G', headerValueToGroup: { one: 'g1' } }],
    routingFallback: 'g1',
  }));
  t.after(() => gw.kill());
  const { page, problems } = await openStudio(t, browser, gw.adminUrl, { hash: '#/groups', heading: 'Groups and routing' });

  await page.getByRole('link', { name: 'Add group' }).click();
  await page.getByRole('heading', { name: 'Add group', level: 1 }).waitFor();
  await page.getByLabel('Name', { exact: true }).fill('g2');
  await page.getByLabel('Strategy').selectOption('failover');
  await page.getByLabel('Max queued queries').fill('5');
  await page.getByLabel('Cluster to add').selectOption('b');
  await page.getByRole('button', { name: 'Add member' }).click();
  await page.getByLabel('Cluster to add').selectOption('a');
  await page.getByRole('button', { name: 'Add member' }).click();
  await page.getByRole('button', { name: 'Move a up' }).click();
  await page.getByRole('button', { name: 'Add group' }).click();
  await page.getByRole('status').filter({ hasText: 'Group g2 added.' }).waitFor();
  assert.deepEqual((await gw.admin('/admin/config/groups/g2')).body,
    { name: 'g2', members: ['a', 'b'], maxQueuedQueries: 5, strategy: { type: 'failover' } });

  // A userGroup router from its template, edited, checked as typed, moved first.
  await page.getByLabel('New router type').selectOption('userGroup');
  await page.getByRole('button', { name: 'Add router' }).click();
  const json = page.getByLabel('Router 2 JSON');
  await json.fill('{"type": "userGroup", "userToGroup": {"zed": "g2"');
  await page.getByRole('alert').filter({ hasText: 'Not valid JSON' }).first().waitFor();
  assert.ok(await page.getByRole('button', { name: 'Save routing' }).isDisabled(), 'no save while a router does not parse');
  await json.fill('{"type": "userGroup", "userToGroup": {"zed": "g2"}}');
  await page.getByRole('button', { name: 'Close the JSON of router 2' }).click();
  await page.getByRole('button', { name: 'Move router 2 up' }).click();
  await page.getByRole('heading', { name: /Router 1: userGroup matches the user/ }).waitFor();
  await page.getByLabel('Routing fallback').selectOption('g2');
  await page.getByRole('button', { name: 'Save routing' }).click();
  await page.getByRole('status').filter({ hasText: 'Routing saved' }).waitFor();
  const routing = (await gw.admin('/admin/config/routing')).body;
  assert.deepEqual(routing.routers.map((r) => r.type), ['userGroup', 'header']);
  assert.equal(routing.routingFallback, 'g2');
  const zed = await runClient(gw.trino('zed'), 'SELECT 1');
  const record = await gw.historyRecord(zed.id);
  assert.equal(record.clusterGroup, 'g2');
  assert.equal(record.clusterName, 'a', 'failover: the first member');

  // A router naming a group that does not exist: the node's 400, in words.
  await page.getByRole('button', { name: 'Edit router 1' }).click();
  await page.getByLabel('Router 1 JSON').fill('{"type": "userGroup", "userToGroup": {"zed": "nope"}}');
  await page.getByRole('button', { name: 'Save routing' }).click();
  await page.getByRole('alert').filter({ hasText: 'unknown cluster group "nope"' }).waitFor();
  assert.deepEqual((await gw.admin('/admin/config/routing')).body, routing, 'nothing changed');
  await page.getByRole('button', { name: 'Discard changes' }).click();
  await page.getByRole('heading', { name: /Router 1: userGroup/ }).waitFor();
  assert.equal(await page.getByRole('alert').count(), 0);
  assert.deepEqual(problems, []);
});

test('history: search by text and user, filters in the hash (Back works), paging, a query\'s SQL, trace and cluster link', async (t) => {
  const backend = await startGateway(config({
    trinoPort: 29040, adminPort: 29041,
    clusters: { duck: duck() }, clusterGroups: { g: { members: ['duck'] } },
  }));
  t.after(() => backend.kill());
  const cfg = config({
    trinoPort: 29042, adminPort: 29043,
    clusters: {
      duck: duck(),
      tr: { engine: 'trino', endpoint: backend.trinoUrl, externalUrl: 'https://trino-ui.example.test' },
    },
    clusterGroups: { main: { members: ['duck'] }, remote: { members: ['tr'] } },
    routers: [{ type: 'header', headerName: 'X-Route', headerValueToGroup: { remote: 'remote' } }],
    routingFallback: 'main',
  });
  cfg.monitor = { taskDelay: '1s' };
  const gw = await startGateway(cfg);
  t.after(() => gw.kill());

  const ran = await runQueries(gw, [
    ['alice', "SELECT 'marker_alice' AS m"],
    ['bob', "SELECT 'marker_bob' AS m"],
    ['bob', 'SELECT 2 AS other'],
    ['carol', 'SELECT * FROM missing_table'],
    ['dave', "SELECT 'marker_remote' AS m", { 'X-Route': 'remote' }],
    ...Array.from({ length: 25 }, (_, i) => ['filler', `SELECT ${i} AS n`]),
  ]);
  assert.ok(ran[3].error, 'the query on a missing table fails');
  assert.equal(ran[4].error, undefined);
  await gw.historyWhen({}, (h) => h.total === 30);

  const { page, problems } = await openStudio(t, browser, gw.adminUrl, { hash: '#/history', heading: 'Query history' });
  const rows = page.locator('table.history tbody tr');
  const pager = page.locator('.pager').getByRole('status');
  const rowCount = (n, what) => eventually(async () => (await rows.count()) === n, { what });
  await pager.filter({ hasText: 'Queries 1–30 of 30' }).waitFor();

  await page.getByLabel('SQL contains').fill('marker_alice');
  await page.getByRole('button', { name: 'Apply filters' }).click();
  await pager.filter({ hasText: 'of 1' }).waitFor();
  await rowCount(1, 'one row for marker_alice');
  assert.match(await rows.first().innerText(), /alice/);
  assert.match(page.url(), /search=marker_alice/);

  await page.getByRole('button', { name: 'Clear' }).click();
  await pager.filter({ hasText: 'of 30' }).waitFor();
  await page.getByLabel('User', { exact: true }).fill('bob');
  await page.getByRole('button', { name: 'Apply filters' }).click();
  await pager.filter({ hasText: 'Queries 1–2 of 2' }).waitFor();
  for (const text of await rows.allInnerTexts()) assert.match(text, /\bbob\b/);
  assert.match(page.url(), /user=bob/);

  // Back: the cleared list, then the text search again, form and all.
  await page.goBack();
  await pager.filter({ hasText: 'of 30' }).waitFor();
  await page.goBack();
  await pager.filter({ hasText: 'Queries 1–1 of 1' }).waitFor();
  assert.equal(await page.getByLabel('SQL contains').inputValue(), 'marker_alice');
  assert.equal(await page.getByLabel('User', { exact: true }).inputValue(), '');

  // Filters combine; nothing matching is said so.
  await page.getByLabel('Status').selectOption('Failed');
  await page.getByRole('button', { name: 'Apply filters' }).click();
  await page.getByText('No query matches these filters.').waitFor();
  await page.getByLabel('SQL contains').fill('');
  await page.getByRole('button', { name: 'Apply filters' }).click();
  await pager.filter({ hasText: 'Queries 1–1 of 1' }).waitFor();
  assert.match(await rows.first().innerText(), /carol[\s\S]*Failed|Failed[\s\S]*carol/);

  // Paging, with the offset in the hash.
  await page.getByRole('button', { name: 'Clear' }).click();
  await page.getByLabel('Rows per page').selectOption('25');
  await pager.filter({ hasText: 'Queries 1–25 of 30' }).waitFor();
  await page.getByRole('button', { name: 'Next page' }).click();
  await pager.filter({ hasText: 'Queries 26–30 of 30' }).waitFor();
  await rowCount(5, 'the second page');
  assert.match(page.url(), /offset=25/);
  assert.ok(await page.getByRole('button', { name: 'Next page' }).isDisabled());

  // A query's page: its SQL as sent, and how it was routed.
  await go(page, '#/history?search=marker_alice', 'Query history');
  await pager.filter({ hasText: 'of 1' }).waitFor();
  await rows.first().getByRole('link').click();
  await page.getByRole('heading', { name: `Query ${ran[0].id}`, level: 1 }).waitFor();
  assert.equal(await page.locator('pre.sql').innerText(), "SELECT 'marker_alice' AS m");
  const trace = page.locator('.trace');
  assert.match(await trace.innerText(), /header router: no match/);
  assert.match(await trace.innerText(), /Routed to group main by the routing fallback/);
  assert.match(await page.locator('.facts').first().innerText(), /User\s+alice/);
  await page.getByRole('link', { name: 'Back to history' }).click();
  await pager.filter({ hasText: 'of 1' }).waitFor();
  assert.equal(await page.getByLabel('SQL contains').inputValue(), 'marker_alice');

  // A Trino cluster's query links to its page there.
  const remote = await gw.historyRecord(ran[4].id);
  assert.ok(remote.backendQueryUrl, JSON.stringify(remote));
  await go(page, `#/history/${encodeURIComponent(ran[4].id)}`, `Query ${ran[4].id}`);
  const link = page.getByRole('link', { name: 'open on the cluster' });
  assert.equal(await link.getAttribute('href'), remote.backendQueryUrl);
  assert.equal(await link.getAttribute('target'), '_blank');
  assert.match(await link.getAttribute('rel'), /\bnoopener\b/);
  assert.match(await trace.innerText(), /header router: matched → remote/);
  assert.match(await page.locator('.facts').first().innerText(), /Cluster\s+tr \(Trino\)/);
  assert.deepEqual(problems, []);
});

test('workers: a standalone without workerApi explains the empty registry', async (t) => {
  const gw = await startGateway(config({
    trinoPort: 29050, adminPort: 29051,
    clusters: { d1: duck() }, clusterGroups: { g: { members: ['d1'] } },
  }));
  t.after(() => gw.kill());
  const { page, problems } = await openStudio(t, browser, gw.adminUrl, { hash: '#/workers', heading: 'Workers' });
  await page.getByText('This node serves no workers.').waitFor();
  await page.getByText(/workerApi\.enabled: true/).first().waitFor();
  assert.equal(await page.getByRole('alert').count(), 0, 'an explained state, not an error');
  assert.deepEqual(problems, []);
});

test('workers: a control plane lists its two workers; one that stops is marked gone', async (t) => {
  const url = await freshDatabase(t);
  const cp = await startNode(controlPlaneConfig({ trino: 29060, admin: 29061, persistence: { type: 'postgres', url } }));
  t.after(() => cp.kill());
  const w1 = await startNode(workerConfig({ name: 'w1', ops: 29062, trino: 29063, cp: cp.adminUrl, labels: { team: 'bi', zone: 'z1' } }));
  t.after(() => w1.kill());
  const w2 = await startNode(workerConfig({ name: 'w2', ops: 29064, trino: 29065, cp: cp.adminUrl, labels: { team: 'etl' } }));
  t.after(() => w2.kill());

  const { page, problems } = await openStudio(t, browser, cp.adminUrl, { hash: '#/workers', heading: 'Workers' });
  for (const [name, label] of [['w1', 'team=bi'], ['w2', 'team=etl']]) {
    const row = workerRow(page, name);
    await row.getByText('active', { exact: true }).waitFor();
    await row.getByText('up to date').waitFor();
    await row.getByText(label).waitFor();
    await row.getByText('controlPlane').first().waitFor();
  }
  await page.getByText('2 workers, all heard from and without errors.').waitFor();

  // w2 stops heartbeating: gone after three of its 1 s intervals.
  await w2.kill();
  const gone = workerRow(page, 'w2');
  await gone.getByText('gone', { exact: true }).first().waitFor({ timeout: 30000 });
  await gone.getByText(/no heartbeat/).first().waitFor();
  assert.match(await gone.getAttribute('class'), /row-stale/);
  assert.match(await page.locator('.lead[role=status]').innerText(), /2 workers, 1 stale/);
  assert.equal(await workerRow(page, 'w1').getByText('gone', { exact: true }).count(), 0);
  await screenshot(page, 'workers');
  assert.deepEqual(problems, []);
});

test('screenshots of every page on a demo fleet', async (t) => {
  const coordinator = await fakeCoordinator(t, 29072);
  const gw = await startGateway(demoFleet({ trinoPort: 29070, adminPort: 29071, coordinator: coordinator.endpoint }));
  t.after(() => gw.kill());
  const list = demoQueries();
  const ran = await runQueries(gw, list);
  await gw.historyWhen({}, (h) => h.total === list.length);

  const { page, problems } = await openStudio(t, browser, gw.adminUrl);
  await page.getByRole('img', { name: new RegExp(`${list.length} queries`) }).waitFor();
  await page.getByText('HEALTHY').first().waitFor();
  await screenshot(page, 'dashboard');

  // demo-sqlite drains a long query while deactivated.
  const long = runRaw(gw.trinoUrl, 'SELECT sleep_ms(600000)', { headers: { 'X-QueryFlux-Group': 'scratch' } }).catch((e) => e);
  await go(page, '#/clusters', 'Clusters');
  await clusterRow(page, 'demo-sqlite').getByText('1 / 4', { exact: true }).waitFor();
  await page.getByLabel('demo-sqlite active', { exact: true }).uncheck();
  await clusterRow(page, 'demo-sqlite').getByText('draining: 1 running, 0 queued').waitFor();
  await clusterRow(page, 'trino-prod').getByText('HEALTHY', { exact: true }).waitFor();
  await screenshot(page, 'clusters');
  const sleeping = (await gw.admin('/admin/queries/running')).body.find((q) => q.cluster === 'demo-sqlite');
  await gw.admin(`/admin/queries/${encodeURIComponent(sleeping.id)}`, { method: 'DELETE' });
  await long;
  await gw.historyWhen({}, (h) => h.total === list.length + 1);

  await go(page, '#/clusters/trino-prod/edit', 'Edit cluster trino-prod');
  await eventually(async () => (await page.getByLabel('Auth password').inputValue()) === '********', { what: 'the form' });
  await screenshot(page, 'cluster-form');

  await go(page, '#/groups', 'Groups and routing');
  await page.getByRole('heading', { name: /Router 1/ }).waitFor();
  await screenshot(page, 'groups');

  await go(page, '#/history', 'Query history');
  await page.locator('.pager').getByText(`of ${list.length + 1}`).waitFor();
  await screenshot(page, 'history');

  const shown = ran[1];
  await go(page, `#/history/${encodeURIComponent(shown.id)}`, `Query ${shown.id}`);
  await page.locator('.trace').waitFor();
  await screenshot(page, 'query-detail');
  assert.deepEqual(problems, []);
});
