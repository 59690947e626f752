// Large results arrive complete and in order, split into bounded pages.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, config, runClient, runRaw } from './support/gateway.mjs';

const N = 100000;
const DUCK_SQL = `SELECT i, 'row ' || i AS s FROM range(0, ${N}) t(i)`;
const LITE_SQL = `WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i < ${N - 1})
                  SELECT i, 'row ' || i AS s FROM r`;

function clusters() {
  return {
    clusters: {
      duck: { engine: 'duckDb', maxRunningQueries: 2 },
      lite: { engine: 'sqlite', maxRunningQueries: 2 },
    },
    clusterGroups: {
      duckGroup: { members: ['duck'] },
      liteGroup: { members: ['lite'] },
    },
    routers: [{ type: 'header', headerName: 'X-Target', headerValueToGroup: { lite: 'liteGroup' } }],
    routingFallback: 'duckGroup',
  };
}

const T = { timeout: 30000 };

let big; // default maxPageRows (4096)
let small; // maxPageRows: 1000
before(async () => {
  [big, small] = await Promise.all([
    startGateway(config({ trinoPort: 21100, adminPort: 21101, ...clusters() })),
    startGateway(config({ trinoPort: 21102, adminPort: 21103, maxPageRows: 1000, ...clusters() })),
  ]);
});
after(async () => { await Promise.all([big?.kill(), small?.kill()]); });

function assertAllRows(data) {
  assert.equal(data.length, N, `expected ${N} rows, got ${data.length}`);
  for (let k = 0; k < N; k++) {
    const [i, s] = data[k];
    if (i !== k || s !== `row ${k}`) {
      assert.fail(`row ${k} is ${JSON.stringify(data[k])}`);
    }
  }
}

test('DuckDB 100k rows via trino-client: complete, ordered, pages <= 4096 rows', T, async () => {
  const client = big.trino('pager');
  const iter = await client.query(DUCK_SQL);
  const data = [];
  const pageSizes = [];
  let columns;
  let error;
  let finalState;
  for await (const page of iter) {
    if (page.columns) columns = page.columns;
    if (page.error) error = page.error;
    if (page.data?.length) {
      pageSizes.push(page.data.length);
      for (const row of page.data) data.push(row);
    }
    finalState = page.stats?.state;
  }
  assert.equal(error, undefined, JSON.stringify(error));
  assert.equal(finalState, 'FINISHED');
  assert.deepEqual(columns.map((c) => [c.name, c.type]), [['i', 'bigint'], ['s', 'varchar']]);
  assertAllRows(data);
  assert.ok(pageSizes.length >= Math.ceil(N / 4096), `pages: ${pageSizes.length}`);
  assert.ok(pageSizes.every((n) => n <= 4096), `page sizes: ${pageSizes}`);

  const rec = await big.historyRecord(await lastId(big, 'pager'));
  assert.equal(rec.status, 'Success');
  assert.equal(rec.rowsReturned, N);
});

test('DuckDB 100k rows with maxPageRows 1000: at least 100 pages of at most 1000', T, async () => {
  const r = await runRaw(small.trinoUrl, DUCK_SQL, { user: 'pager' });
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  assert.equal(r.finalState, 'FINISHED');
  assertAllRows(r.data);
  assert.ok(r.dataPages.length >= 100, `only ${r.dataPages.length} pages with data`);
  assert.ok(r.dataPages.every((n) => n <= 1000), `page sizes over 1000: ${r.dataPages.filter((n) => n > 1000)}`);
  // Every non-final page names the next one; the last one has none.
  assert.ok(r.pages.slice(0, -1).every((p) => p.nextUri), 'a page without nextUri before the end');
  assert.equal(r.pages.at(-1).nextUri, undefined);
});

test('SQLite 100k rows (recursive CTE) arrive complete', T, async () => {
  const client = big.trino('pager', { extraHeaders: { 'X-Target': 'lite' } });
  const r = await runClient(client, LITE_SQL);
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  assert.equal(r.finalState, 'FINISHED');
  assert.deepEqual(r.columns.map((c) => c.name), ['i', 's']);
  assertAllRows(r.data);
});

test('SQLite 100k rows with maxPageRows 1000: pages bounded', T, async () => {
  const r = await runRaw(small.trinoUrl, LITE_SQL, { user: 'pager', headers: { 'X-Target': 'lite' } });
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  assertAllRows(r.data);
  assert.ok(r.dataPages.length >= 100, `only ${r.dataPages.length} pages with data`);
  assert.ok(r.dataPages.every((n) => n <= 1000));
});

test('a retried GET of the same page token returns the same page', T, async () => {
  const first = await fetch(`${small.trinoUrl}/v1/statement`, {
    method: 'POST', headers: { 'X-Trino-User': 'pager' }, body: 'SELECT i FROM range(0, 5000) t(i)',
  }).then((x) => x.json());
  let next = first.nextUri;
  const rows = [];
  let retried = false;
  while (next) {
    const a = await fetch(next).then((x) => x.text());
    const page = JSON.parse(a);
    if (!retried && page.data?.length) {
      const b = await fetch(next).then((x) => x.text());
      assert.equal(b, a, 'a retry must return the identical page');
      retried = true;
    }
    if (page.data) rows.push(...page.data.map((r) => r[0]));
    next = page.nextUri;
  }
  assert.ok(retried);
  assert.deepEqual(rows, Array.from({ length: 5000 }, (_, i) => i));
});

async function lastId(gw, user) {
  const h = await gw.history({ user, limit: '1' });
  assert.ok(h.queries.length > 0, 'history has the query');
  return h.queries[0].proxyQueryId;
}
