// The embedded engines run clients' SQL inside the gateway, with its
// rights on its host: unless a cluster opts in (externalAccess), that SQL
// reaches no file, network or other database beyond the cluster's own.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGateway, config, runClient } from './support/gateway.mjs';

let gw;
let dir;
let secret; // a file only the gateway's host has
before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'qf-e2e-access-'));
  secret = join(dir, 'secret.csv');
  writeFileSync(secret, 'word\ngateway-only\n', { mode: 0o600 });
  gw = await startGateway(config({
    trinoPort: 23030,
    adminPort: 23031,
    clusters: {
      duck: { engine: 'duckDb', initSql: ['CREATE TABLE mine AS SELECT 41 + 1 AS n', 'CREATE SCHEMA other',
        'CREATE TABLE other.mine AS SELECT 7 AS n'] },
      lite: { engine: 'sqlite', initSql: ['CREATE TABLE mine (n int)', 'INSERT INTO mine VALUES (42)'] },
      open: { engine: 'duckDb', externalAccess: true },
    },
    clusterGroups: { duck: { members: ['duck'] }, lite: { members: ['lite'] }, open: { members: ['open'] } },
    routers: [{ type: 'header', headerName: 'X-QueryFlux-Group', headerValueToGroup: { lite: 'lite', open: 'open' } }],
    routingFallback: 'duck',
  }));
});
after(async () => {
  await gw?.kill();
  rmSync(dir, { recursive: true, force: true });
});

const run = (group, sql) => runClient(gw.trino('access', { extraHeaders: { 'X-QueryFlux-Group': group } }), sql);

test('DuckDB: no files, no re-enabling, and the cluster\'s own tables as ever', async () => {
  for (const sql of [`SELECT * FROM read_csv('${secret}')`, `COPY (SELECT 1) TO '${join(dir, 'out.csv')}'`,
    `ATTACH '${join(dir, 'other.duckdb')}' AS other`]) {
    const r = await run('duck', sql);
    assert.match(r.error?.message ?? '', /disabled by configuration/, sql);
  }
  const again = await run('duck', 'SET enable_external_access = true');
  assert.match(again.error?.message ?? '', /enable_external_access/);
  assert.ok(!existsSync(join(dir, 'out.csv')) && !existsSync(join(dir, 'other.duckdb')));
  assert.deepEqual((await run('duck', 'SELECT n FROM mine')).data, [[42]]);
});

test('SQLite: no ATTACH and no VACUUM INTO, which would create or read any file', async () => {
  for (const sql of [`ATTACH '${join(dir, 'other.db')}' AS other`, `VACUUM INTO '${join(dir, 'copy.db')}'`]) {
    const r = await run('lite', sql);
    assert.match(r.error?.message ?? '', /not authorized|authorization denied/, sql);
  }
  assert.ok(!existsSync(join(dir, 'other.db')) && !existsSync(join(dir, 'copy.db')));
  assert.deepEqual((await run('lite', 'SELECT n FROM mine')).data, [[42]]);
});

test('a cluster with externalAccess: true reads files as DuckDB does', async () => {
  const r = await run('open', `SELECT word FROM read_csv('${secret}')`);
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  assert.deepEqual(r.data, [['gateway-only']]);
});

test('no client reconfigures the engine the others share', async () => {
  // DuckDB's settings are initSql's: one client's memory_limit of 1MB
  // failed everyone's queries.
  for (const sql of ["SET GLOBAL memory_limit = '1MB'", 'SET threads = 1', 'PRAGMA threads = 1']) {
    const r = await run('duck', sql);
    assert.match(r.error?.message ?? '', /configuration has been locked/, sql);
  }
  const big = await run('duck', 'SELECT count(*) FROM (SELECT range % 1000 AS k, count(*) FROM range(2000000) GROUP BY 1)');
  assert.deepEqual(big.data, [[1000]]);
  // SQLite: a PRAGMA that sets stays with the pooled connection (query_only
  // made it read-only for its next clients); reading ones still work.
  for (const sql of ['PRAGMA query_only = 1', 'PRAGMA foreign_keys = OFF', 'PRAGMA journal_mode = DELETE']) {
    const r = await run('lite', sql);
    assert.match(r.error?.message ?? '', /not authorized/, sql);
  }
  assert.equal((await run('lite', 'PRAGMA table_info(mine)')).data[0][1], 'n');
  const wrote = await run('lite', 'INSERT INTO mine VALUES (43)');
  assert.equal(wrote.error, undefined, JSON.stringify(wrote.error));
});

test("a client's temporary table or SET stays out of the next client's statements", async () => {
  // One cluster connection serves one statement after another, whoever
  // sends it: what a statement leaves in that session goes with it.
  for (const group of ['duck', 'lite']) {
    const made = await runClient(gw.trino('alice', { extraHeaders: { 'X-QueryFlux-Group': group } }),
      "CREATE TEMP TABLE alice_only AS SELECT 'alice-data' AS v");
    assert.equal(made.error, undefined, JSON.stringify(made.error));
    for (let i = 0; i < 3; ++i) {
      const r = await runClient(gw.trino('bob', { extraHeaders: { 'X-QueryFlux-Group': group } }),
        'SELECT v FROM alice_only');
      assert.match(r.error?.message ?? '', /does not exist|no such table/, `${group}: ${JSON.stringify(r.data)}`);
    }
  }
  const set = await run('duck', "SET search_path = 'other'");
  assert.equal(set.error, undefined, JSON.stringify(set.error));
  for (let i = 0; i < 3; ++i)
    assert.deepEqual((await run('duck', 'SELECT n FROM mine')).data, [[42]]);
});
