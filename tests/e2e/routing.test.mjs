// Routers pick the cluster group; the history shows where each query ran and why.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, config, runClient, runRaw } from './support/gateway.mjs';

const T = { timeout: 30000 };

// One cluster per group, so clusterName tells which router won.
let gw; // header, userGroup, queryRegex, tags; no protocolBased, so the fallback is reachable
let proto; // header, protocolBased, tags: protocolBased shadows everything after it
before(async () => {
  [gw, proto] = await Promise.all([
    startGateway(config({
      trinoPort: 21300,
      adminPort: 21301,
      clusters: {
        duck_fallback: { engine: 'duckDb', maxRunningQueries: 2 },
        lite_header: { engine: 'sqlite', maxRunningQueries: 2 },
        duck_user: { engine: 'duckDb', maxRunningQueries: 2 },
        lite_regex: {
          engine: 'sqlite', maxRunningQueries: 2,
          initSql: ['CREATE TABLE archive(x INTEGER)', 'INSERT INTO archive VALUES (7), (8)'],
        },
        lite_tags: { engine: 'sqlite', maxRunningQueries: 2 },
        lite_teamtag: { engine: 'sqlite', maxRunningQueries: 2 },
      },
      clusterGroups: {
        fallback: { members: ['duck_fallback'] },
        byHeader: { members: ['lite_header'] },
        byUser: { members: ['duck_user'] },
        byRegex: { members: ['lite_regex'] },
        byTag: { members: ['lite_tags'] },
        byTeamTag: { members: ['lite_teamtag'] },
      },
      routers: [
        { type: 'header', headerName: 'X-Target', headerValueToGroup: { lite: 'byHeader' } },
        { type: 'userGroup', userToGroup: { alice: 'byUser' } },
        {
          type: 'queryRegex',
          rules: [
            { regex: '(?i)^\\s*drop', action: 'deny', error: 'DDL not allowed' },
            { regex: '(?i)from\\s+archive', targetGroup: 'byRegex' },
          ],
        },
        {
          type: 'tags',
          rules: [
            { tags: { team: 'bi' }, targetGroup: 'byTeamTag' },
            { tags: { nightly: null }, targetGroup: 'byTag' },
          ],
        },
      ],
      routingFallback: 'fallback',
    })),
    startGateway(config({
      trinoPort: 21302,
      adminPort: 21303,
      clusters: {
        duck_fallback: { engine: 'duckDb' },
        duck_proto: { engine: 'duckDb' },
        lite_header: { engine: 'sqlite' },
        lite_tags: { engine: 'sqlite' },
      },
      clusterGroups: {
        fallback: { members: ['duck_fallback'] },
        byProtocol: { members: ['duck_proto'] },
        byHeader: { members: ['lite_header'] },
        byTag: { members: ['lite_tags'] },
      },
      routers: [
        { type: 'header', headerName: 'X-Target', headerValueToGroup: { lite: 'byHeader' } },
        { type: 'protocolBased', trinoHttp: 'byProtocol' },
        { type: 'tags', rules: [{ tags: { nightly: null }, targetGroup: 'byTag' }] },
      ],
      routingFallback: 'fallback',
    })),
  ]);
});
after(async () => { await Promise.all([gw?.kill(), proto?.kill()]); });

function trace(record) {
  const t = record.routingTrace;
  return typeof t === 'string' ? JSON.parse(t) : t;
}

async function ranOn(g, user, sql, opts = {}) {
  const r = await runClient(g.trino(user, opts), sql);
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  assert.equal(r.finalState, 'FINISHED');
  const rec = await g.historyRecord(r.id);
  return { r, rec };
}

test('no router matches: the fallback group runs it', T, async () => {
  const { r, rec } = await ranOn(gw, 'bob', 'SELECT 40 + 2 AS v');
  assert.deepEqual(r.data, [[42]]);
  assert.equal(rec.clusterGroup, 'fallback');
  assert.equal(rec.clusterName, 'duck_fallback');
  assert.equal(rec.engineType, 'duckDb');
  assert.equal(rec.status, 'Success');
  assert.equal(rec.user, 'bob');
  const t = trace(rec);
  assert.equal(t.usedFallback, true);
  assert.equal(t.finalGroup, 'fallback');
  assert.ok(t.decisions.every((d) => d.matched === false), JSON.stringify(t));
  assert.deepEqual(t.decisions.map((d) => d.routerType), ['header', 'userGroup', 'queryRegex', 'tags']);
});

test('header router', T, async () => {
  const { r, rec } = await ranOn(gw, 'bob', 'SELECT sqlite_version() IS NOT NULL AS is_sqlite', { extraHeaders: { 'X-Target': 'lite' } });
  assert.deepEqual(r.data, [[1]]);
  assert.equal(rec.clusterGroup, 'byHeader');
  assert.equal(rec.clusterName, 'lite_header');
  assert.equal(rec.engineType, 'sqlite');
  const t = trace(rec);
  assert.equal(t.usedFallback, false);
  assert.deepEqual(t.decisions, [{ routerType: 'header', matched: true, result: 'byHeader' }]);

  // Header names are case-insensitive in HTTP.
  const lower = await runRaw(gw.trinoUrl, 'SELECT 1', { headers: { 'x-target': 'lite' } });
  assert.equal((await gw.historyRecord(lower.id)).clusterName, 'lite_header');

  // A value not in the map falls through.
  const other = await ranOn(gw, 'bob', 'SELECT 1', { extraHeaders: { 'X-Target': 'elsewhere' } });
  assert.equal(other.rec.clusterName, 'duck_fallback');
});

test('userGroup router', T, async () => {
  const { rec } = await ranOn(gw, 'alice', 'SELECT 1');
  assert.equal(rec.clusterGroup, 'byUser');
  assert.equal(rec.clusterName, 'duck_user');
  const t = trace(rec);
  assert.equal(t.decisions.length, 2);
  assert.deepEqual(t.decisions[1], { routerType: 'userGroup', matched: true, result: 'byUser' });

  // Router order: the header router comes first and wins for alice too.
  const both = await ranOn(gw, 'alice', 'SELECT 1', { extraHeaders: { 'X-Target': 'lite' } });
  assert.equal(both.rec.clusterName, 'lite_header');
});

test('queryRegex router routes by SQL text', T, async () => {
  const { r, rec } = await ranOn(gw, 'bob', 'SELECT x FROM archive ORDER BY x');
  assert.deepEqual(r.data, [[7], [8]]);
  assert.equal(rec.clusterGroup, 'byRegex');
  assert.equal(rec.clusterName, 'lite_regex');
  assert.deepEqual(trace(rec).decisions.at(-1), { routerType: 'queryRegex', matched: true, result: 'byRegex' });

  const lower = await ranOn(gw, 'bob', 'select count(*) as n\nfrom   archive');
  assert.deepEqual(lower.r.data, [[2]]);
  assert.equal(lower.rec.clusterName, 'lite_regex');
});

test('queryRegex deny: PERMISSION_DENIED with the configured message, history says Denied', T, async () => {
  for (const sql of ['DROP TABLE archive', '  drop table whatever', '\n\tDrOp VIEW v']) {
    const r = await runClient(gw.trino('mallory'), sql);
    assert.equal(r.finalState, 'FAILED', sql);
    assert.equal(r.error?.errorName, 'PERMISSION_DENIED', sql);
    assert.equal(r.error?.message, 'DDL not allowed');
    const rec = await gw.historyRecord(r.id);
    assert.equal(rec.status, 'Denied');
    assert.equal(rec.errorMessage, 'DDL not allowed');
    assert.equal(rec.user, 'mallory');
    assert.equal(rec.clusterName, '', 'a denied query runs nowhere');
    const t = trace(rec);
    assert.equal(t.denied, true);
    assert.deepEqual(t.decisions.at(-1), { routerType: 'queryRegex', matched: true, result: 'DDL not allowed' });
  }
  // The table is still there: the DROP never reached the engine.
  const still = await ranOn(gw, 'bob', 'SELECT count(*) FROM archive');
  assert.deepEqual(still.r.data, [[2]]);
  // "drop" not at the start is not denied.
  const notDdl = await ranOn(gw, 'bob', "SELECT 'drop' AS word");
  assert.equal(notDdl.rec.clusterName, 'duck_fallback');
  // The admin filter finds the denied ones.
  const denied = await gw.history({ status: 'Denied' });
  assert.ok(denied.queries.length >= 3);
  assert.ok(denied.queries.every((q) => q.status === 'Denied'));
});

test('tags router: X-Trino-Client-Tags (key only) and query_tags session property', T, async () => {
  const byClientTag = await ranOn(gw, 'bob', 'SELECT 1', { extraHeaders: { 'X-Trino-Client-Tags': 'adhoc, nightly' } });
  assert.equal(byClientTag.rec.clusterGroup, 'byTag');
  assert.equal(byClientTag.rec.clusterName, 'lite_tags');
  assert.deepEqual(trace(byClientTag.rec).decisions.at(-1), { routerType: 'tags', matched: true, result: 'byTag' });

  const bySession = await ranOn(gw, 'bob', 'SELECT 1', { session: { query_tags: 'team:bi' } });
  assert.equal(bySession.rec.clusterGroup, 'byTeamTag');
  assert.equal(bySession.rec.clusterName, 'lite_teamtag');

  // A tag with the wrong value does not match.
  const wrong = await ranOn(gw, 'bob', 'SELECT 1', { session: { query_tags: 'team:ops' } });
  assert.equal(wrong.rec.clusterName, 'duck_fallback');
  // A client tag "team" has no value, so it does not satisfy team=bi.
  const keyOnly = await ranOn(gw, 'bob', 'SELECT 1', { extraHeaders: { 'X-Trino-Client-Tags': 'team' } });
  assert.equal(keyOnly.rec.clusterName, 'duck_fallback');
});

test('protocolBased router takes every trinoHttp query not matched before it', T, async () => {
  const plain = await ranOn(proto, 'bob', 'SELECT 1');
  assert.equal(plain.rec.clusterGroup, 'byProtocol');
  assert.equal(plain.rec.clusterName, 'duck_proto');
  assert.deepEqual(trace(plain.rec).decisions, [
    { routerType: 'header', matched: false, result: null },
    { routerType: 'protocolBased', matched: true, result: 'byProtocol' },
  ]);
  // Tags come after protocolBased, so they never get a say.
  const tagged = await ranOn(proto, 'bob', 'SELECT 1', { extraHeaders: { 'X-Trino-Client-Tags': 'nightly' } });
  assert.equal(tagged.rec.clusterName, 'duck_proto');
  // The header router is first, so it still wins.
  const header = await ranOn(proto, 'bob', 'SELECT 1', { extraHeaders: { 'X-Target': 'lite' } });
  assert.equal(header.rec.clusterName, 'lite_header');
});

test('admin filters by group and cluster agree with the routing', T, async () => {
  const byUser = await gw.history({ group: 'byUser' });
  assert.ok(byUser.total >= 1);
  assert.ok(byUser.queries.every((q) => q.clusterGroup === 'byUser' && q.clusterName === 'duck_user'));
  const lite = await gw.history({ cluster: 'lite_header' });
  assert.ok(lite.total >= 2);
  assert.ok(lite.queries.every((q) => q.clusterName === 'lite_header'));
  const alice = await gw.history({ user: 'alice' });
  assert.ok(alice.queries.every((q) => q.user === 'alice'));
  assert.equal(alice.total, alice.queries.length);
  // Newest first.
  const all = await gw.history();
  const created = all.queries.map((q) => q.createdAtMs);
  assert.deepEqual(created, [...created].sort((a, b) => b - a));
});

test('admin history: search, limit/offset with total, time window, single record', T, async () => {
  const marker = `needle_${Date.now()}`;
  const from = Date.now();
  const ids = [];
  for (let i = 0; i < 3; i++) {
    const r = await runClient(gw.trino('pager'), `SELECT ${i} AS ${marker}`);
    ids.push(r.id);
  }
  const to = Date.now();
  await gw.historyRecord(ids[2]);

  const found = await gw.history({ search: marker });
  assert.equal(found.total, 3);
  assert.deepEqual(found.queries.map((q) => q.proxyQueryId), [...ids].reverse(), 'newest first');

  const page = await gw.history({ search: marker, limit: '1', offset: '1' });
  assert.equal(page.total, 3, 'total counts every match, not the page');
  assert.deepEqual(page.queries.map((q) => q.proxyQueryId), [ids[1]]);

  const none = await gw.history({ search: `${marker}_absent` });
  assert.equal(none.total, 0);
  assert.deepEqual(none.queries, []);

  const windowed = await gw.history({ user: 'pager', from: String(from), to: String(to) });
  assert.deepEqual(windowed.queries.map((q) => q.proxyQueryId).sort(), [...ids].sort());
  const before = await gw.history({ user: 'pager', to: String(from - 1) });
  assert.equal(before.total, 0);

  const one = await gw.admin(`/admin/queries/${ids[0]}`);
  assert.equal(one.status, 200);
  assert.equal(one.body.proxyQueryId, ids[0]);
  assert.equal(one.body.sql, `SELECT 0 AS ${marker}`);
  assert.equal(one.body.rowsReturned, 1);
  assert.equal(one.body.protocol, 'trinoHttp');
  assert.ok(one.body.createdAtMs <= one.body.startedAtMs && one.body.startedAtMs <= one.body.finishedAtMs, JSON.stringify(one.body));
  const missing = await gw.admin('/admin/queries/no_such_query');
  assert.equal(missing.status, 404);
});
