// presto-client (callback API, engine: 'trino') against the gateway.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import presto from 'presto-client';
import { startGateway, config } from './support/gateway.mjs';

const T = { timeout: 30000 };

let gw;
before(async () => {
  gw = await startGateway(config({
    trinoPort: 21800,
    adminPort: 21801,
    maxPageRows: 100,
    clusters: {
      duck: {
        engine: 'duckDb', maxRunningQueries: 2,
        initSql: ["CREATE TABLE cities AS SELECT * FROM (VALUES (1, 'Berlin', 3.6), (2, 'Lisbon', 0.5), (3, 'Ōsaka', 2.7)) v(id, name, millions)"],
      },
      lite: { engine: 'sqlite', maxRunningQueries: 2 },
    },
    clusterGroups: { g: { members: ['duck'] }, l: { members: ['lite'] } },
    routers: [{ type: 'header', headerName: 'X-Target', headerValueToGroup: { lite: 'l' } }],
    routingFallback: 'g',
  }));
});
after(async () => { await gw?.kill(); });

function client() {
  return new presto.Client({
    host: '127.0.0.1', port: gw.trinoPort, user: 'presto-user', engine: 'trino',
    catalog: 'memory', schema: 'main', checkInterval: 10,
  });
}

/// Runs a query through the callback API; resolves with everything the callbacks saw.
function execute(c, query, extra = {}) {
  return new Promise((resolve) => {
    const out = { rows: [], columns: null, states: [], queryId: null, dataCalls: 0 };
    c.execute({
      query,
      ...extra,
      state(err, queryId, stats) { out.queryId = queryId; out.states.push(stats.state); },
      columns(err, cols) { out.columnsCallback = cols; },
      data(err, rows, cols) {
        out.dataCalls += 1;
        out.columns = cols;
        out.rows.push(...rows);
      },
      success(err, stats) { out.ok = true; out.stats = stats; resolve(out); },
      error(e) { out.error = e; resolve(out); },
    });
  });
}

test('a query returns the right rows and columns', T, async () => {
  const r = await execute(client(), 'SELECT id, name, millions FROM cities ORDER BY id');
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  assert.equal(r.ok, true);
  assert.equal(r.stats.state, 'FINISHED');
  assert.deepEqual(r.columns.map((c) => [c.name, c.type]), [['id', 'integer'], ['name', 'varchar'], ['millions', 'decimal(2,1)']]);
  assert.deepEqual(r.rows, [[1, 'Berlin', '3.6'], [2, 'Lisbon', '0.5'], [3, 'Ōsaka', '2.7']]);
  assert.ok(r.queryId);
  const rec = await gw.historyRecord(r.queryId);
  assert.equal(rec.user, 'presto-user');
  assert.equal(rec.status, 'Success');
  assert.equal(rec.catalog, 'memory');
  assert.equal(rec.schema, 'main');
  assert.equal(rec.rowsReturned, 3);
});

test('a multi-page result arrives whole and in order', T, async () => {
  const r = await execute(client(), 'SELECT i, i * i AS sq FROM range(0, 1000) t(i)');
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  assert.ok(r.dataCalls >= 10, `${r.dataCalls} data callbacks for 1000 rows at 100 per page`);
  assert.equal(r.rows.length, 1000);
  r.rows.forEach(([i, sq], k) => { assert.equal(i, k); assert.equal(sq, k * k); });
});

test('SQLite through a header, and errors reach the error callback', T, async () => {
  const lite = await execute(client(), "SELECT 'from sqlite' AS s, sqlite_version() IS NOT NULL AS v",
    { headers: { 'X-Target': 'lite' } });
  assert.equal(lite.error, undefined, JSON.stringify(lite.error));
  assert.deepEqual(lite.rows, [['from sqlite', 1]]);

  const bad = await execute(client(), 'SELEC nonsense');
  assert.equal(bad.ok, undefined);
  assert.equal(bad.error?.errorName, 'SYNTAX_ERROR', JSON.stringify(bad.error));
  assert.match(bad.error?.message ?? '', /syntax error/i);
});
