// `queryflux migrate` and the schema check at start, against the real
// PostgreSQL of deploy/services.sh: each test gets a database of its own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { startGateway, runCli, writeConfig, runRaw } from './support/gateway.mjs';
import { PG_URL, freshDatabase, gatewayConfig, sql } from './support/database.mjs';


test('queryflux migrate brings an empty database to V23, then has nothing to do', async (t) => {
  const url = await freshDatabase(t);
  const { file } = writeConfig(gatewayConfig({ trino: 23700, admin: 23701 }, { type: 'postgres', url }));
  const first = runCli(['migrate', '--config', file]);
  assert.equal(first.code, 0, first.stderr);
  assert.match(first.stdout, /^applied V1\napplied V2\n/);
  assert.match(first.stdout, /applied V23\ndatabase at V23\n$/);
  const again = runCli(['migrate', '--config', file]);
  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.stdout, 'database at V23, nothing to apply\n');
  const rows = await sql(url, 'SELECT max(version) AS v FROM queryflux_schema_history');
  assert.equal(rows[0].v, 23);
});

test('migrate without PostgreSQL persistence is a usage error', () => {
  const { file } = writeConfig(gatewayConfig({ trino: 23702, admin: 23703 }, { type: 'inMemory' }));
  const r = runCli(['migrate', '--config', file]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /persistence.type is inMemory: there is no database to migrate/);
});

test('serve migrates at start with autoMigrate, and refuses a database newer than it knows', async (t) => {
  const url = await freshDatabase(t);
  const ports = { trino: 23704, admin: 23705 };
  const gw = await startGateway(gatewayConfig(ports, { type: 'postgres', url }));
  await gw.kill();
  const rows = await sql(url, 'SELECT count(*)::int AS n FROM queryflux_schema_history');
  assert.equal(rows[0].n, 23);
  await sql(url, "INSERT INTO queryflux_schema_history (version, name, checksum) VALUES (24, 'future', 'x')");
  const { file } = writeConfig(gatewayConfig(ports, { type: 'postgres', url }));
  const refused = runCli(['serve', '--config', file]);
  assert.equal(refused.code, 1);
  assert.match(refused.stdout + refused.stderr, /the database is at migration V24, newer than this QueryFlux knows \(V23\)/);
});

test('serve with autoMigrate off refuses a database that is behind', async (t) => {
  const url = await freshDatabase(t);
  const { file } = writeConfig(gatewayConfig({ trino: 23706, admin: 23707 },
    { type: 'postgres', url, autoMigrate: false }));
  const r = runCli(['serve', '--config', file]);
  assert.equal(r.code, 1);
  assert.match(r.stdout + r.stderr, /the database is at V0, this QueryFlux needs V23: run `queryflux migrate`/);
  const tables = await sql(url, "SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'");
  assert.equal(tables[0].n, 0, 'nothing was created');
});

test('with PostgreSQL persistence, finished queries land in query_records, the last ones at shutdown too', async (t) => {
  const url = await freshDatabase(t);
  const ports = { trino: 23708, admin: 23709, pg: 23710 };
  const cfg = gatewayConfig(ports, { type: 'postgres', url });
  cfg.queryflux.frontends.postgresWire = { enabled: true, port: ports.pg };
  const gw = await startGateway(cfg);
  const c = new pg.Client({ host: '127.0.0.1', port: ports.pg, user: 'carol', database: 'x' });
  await c.connect();
  await c.query('SELECT 42 AS answer');
  await assert.rejects(c.query('SELECT * FROM nowhere'));
  // Written in the background within a few hundred milliseconds.
  let rows = [];
  for (let i = 0; i < 50 && rows.length < 2; i += 1) {
    rows = await sql(url, "SELECT sql_preview, status, username, frontend_protocol, cluster_name FROM query_records ORDER BY id");
    if (rows.length < 2) await new Promise((r) => setTimeout(r, 100));
  }
  assert.deepEqual(rows.map((r) => [r.sql_preview, r.status, r.username, r.frontend_protocol, r.cluster_name]), [
    ['SELECT 42 AS answer', 'Success', 'carol', 'postgresWire', 'duck'],
    ['SELECT * FROM nowhere', 'Failed', 'carol', 'postgresWire', 'duck'],
  ]);
  const metrics = await gw.metrics();
  assert.match(metrics, /^queryflux_history_records_written_total [1-9]/m);
  assert.match(metrics, /^queryflux_history_write_failures_total 0$/m);
  // The last query before SIGTERM is flushed on the way out.
  await c.query("SELECT 'last words'");
  await c.end();
  assert.equal(await gw.stop(), 0);
  const last = await sql(url, "SELECT count(*)::int AS n FROM query_records WHERE sql_preview = 'SELECT ''last words'''");
  assert.equal(last[0].n, 1);
});

test('with PostgreSQL persistence the admin history survives a restart; a query just finished is found at once', async (t) => {
  const url = await freshDatabase(t);
  const ports = { trino: 23711, admin: 23712, pg: 23713 };
  const cfg = gatewayConfig(ports, { type: 'postgres', url });
  cfg.queryflux.frontends.postgresWire = { enabled: true, port: ports.pg };
  const run = async (text) => {
    const c = new pg.Client({ host: '127.0.0.1', port: ports.pg, user: 'dave', database: 'x' });
    await c.connect();
    await c.query(text);
    await c.end();
  };
  const first = await startGateway(cfg);
  // The first statement of each process: the same ticket number on both.
  await run("SELECT 'wire before restart'");
  // By id at once, likely before the history store wrote it: the ring answers.
  const done = await runRaw(first.trinoUrl, "SELECT 'before restart'", { user: 'dave' });
  const byId = await first.admin(`/admin/queries/${done.id}`);
  assert.equal(byId.status, 200);
  assert.equal(byId.body.user, 'dave');
  const id = done.id;
  assert.equal(await first.stop(), 0);

  const second = await startGateway(cfg);
  t.after(() => second.kill());
  await run("SELECT 'after restart'");
  let all = { total: 0, queries: [] };
  for (let i = 0; i < 50 && all.total < 3; i += 1) {
    all = await second.history({ user: 'dave' });
    if (all.total < 3) await new Promise((r) => setTimeout(r, 100));
  }
  // A process's query ids never repeat another's, so none is lost to the
  // first-record-wins rule of durable history.
  assert.deepEqual(all.queries.map((q) => [q.sql, q.protocol]), [
    ["SELECT 'after restart'", 'postgresWire'],
    ["SELECT 'before restart'", 'trinoHttp'],
    ["SELECT 'wire before restart'", 'postgresWire'],
  ]);
  const again = await second.admin(`/admin/queries/${id}`);
  assert.equal(again.status, 200, 'the record from before the restart comes from PostgreSQL');
  assert.equal(again.body.sql, "SELECT 'before restart'");
  const missing = await second.admin('/admin/queries/no_such_id');
  assert.equal(missing.status, 404);
});

test('the file seeds clusters and groups the first time only; afterwards the database wins', async (t) => {
  const url = await freshDatabase(t);
  const ports = { trino: 23714, admin: 23715 };
  const first = gatewayConfig(ports, { type: 'postgres', url });
  first.clusters = { seeded: { engine: 'duckDb' } };
  first.clusterGroups = { g: { members: ['seeded'] } };
  const a = await startGateway(first);
  assert.deepEqual((await a.admin('/admin/clusters')).body.map((c) => c.name), ['seeded']);
  assert.equal(await a.stop(), 0);

  const second = gatewayConfig(ports, { type: 'postgres', url });
  second.clusters = { ignored: { engine: 'sqlite' } };
  second.clusterGroups = { h: { members: ['ignored'] } };
  const b = await startGateway(second);
  assert.deepEqual((await b.admin('/admin/clusters')).body.map((c) => c.name), ['seeded']);
  const r = await runRaw(b.trinoUrl, 'SELECT 1 AS one');
  assert.deepEqual(r.data, [[1]]);
  assert.equal(await b.stop(), 0);

  // A stored config that does not validate stops the start, with its path.
  await sql(url, `UPDATE cluster_configs SET config = '{"engine": "oracle"}' WHERE name = 'seeded'`);
  const { file } = writeConfig(second);
  const refused = runCli(['serve', '--config', file]);
  assert.equal(refused.code, 1);
  assert.match(refused.stdout + refused.stderr, /the configuration stored in the database: clusters.seeded.engine: unknown engine "oracle"/);
});

test('with PostgreSQL persistence, (de)activation is written to the database first and survives a restart', async (t) => {
  const url = await freshDatabase(t);
  const ports = { trino: 23716, admin: 23717 };
  const cfg = gatewayConfig(ports, { type: 'postgres', url });
  cfg.clusters = { a: { engine: 'duckDb' }, b: { engine: 'duckDb' } };
  cfg.clusterGroups = { g: { members: ['a', 'b'] } };
  const first = await startGateway(cfg);
  const off = await first.admin('/admin/clusters/b/deactivate', { method: 'POST' });
  assert.equal(off.body.active, false);
  const row = await sql(url, "SELECT enabled, config->>'enabled' AS doc FROM cluster_configs WHERE name = 'b'");
  assert.deepEqual(row[0], { enabled: false, doc: 'false' });
  assert.equal((await sql(url, 'SELECT revision FROM config_revision'))[0].revision, '2');

  assert.equal(await first.stop(), 0);

  const second = await startGateway(cfg);
  t.after(() => second.kill());
  const clusters = (await second.admin('/admin/clusters')).body;
  const b = clusters.find((c) => c.name === 'b');
  assert.equal(b.active, false, 'still deactivated after the restart');
  assert.equal(b.status, 'UNKNOWN');
  // Trino Gateway's path writes the database too.
  const on = await fetch(`http://127.0.0.1:${ports.admin}/gateway/backend/activate/b`, {
    method: 'POST', headers: { Authorization: 'Basic ' + Buffer.from('admin:admin').toString('base64') } });
  assert.equal(on.status, 200);
  assert.equal((await sql(url, "SELECT enabled FROM cluster_configs WHERE name = 'b'"))[0].enabled, true);
});

test('a database not there yet: alive but not ready until it is, then serving', async (t) => {
  const name = `qf_e2e_later_${process.pid}_${Math.floor(Math.random() * 1e9)}`;
  const url = PG_URL.slice(0, PG_URL.lastIndexOf('/') + 1) + name;
  t.after(async () => {
    const c = new pg.Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await c.end();
  });
  const ports = { trino: 23718, admin: 23719 };
  const starting = startGateway(gatewayConfig(ports, { type: 'postgres', url }), { readyTimeoutMs: 30000 });
  const admin = `http://127.0.0.1:${ports.admin}`;
  let health = 0;
  for (let i = 0; i < 100 && health !== 200; i += 1) {
    health = await fetch(`${admin}/health`).then((r) => r.status, () => 0);
    if (health !== 200) await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(health, 200, 'alive while waiting');
  const ready = await fetch(`${admin}/readyz`);
  assert.equal(ready.status, 503);
  assert.match(await ready.text(), /waiting for the database/);
  // Trino Gateway's probes, on the admin port and on the Trino port (its
  // users' probes look there): alive, not ready. A liveness probe that
  // failed now would have the pod killed while it only waits.
  for (const base of [admin, `http://127.0.0.1:${ports.trino}`]) {
    const live = await fetch(`${base}/trino-gateway/livez`);
    assert.equal(live.status, 200, `${base} livez`);
    assert.equal(await live.text(), 'ok');
    const notYet = await fetch(`${base}/trino-gateway/readyz`);
    assert.equal(notYet.status, 503, `${base} readyz`);
    assert.match(await notYet.text(), /waiting for the database/);
  }
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  await c.query(`CREATE DATABASE ${name}`);
  await c.end();
  const gw = await starting; // ready once the database came
  t.after(() => gw.kill());
  const r = await runRaw(gw.trinoUrl, 'SELECT 5 AS five');
  assert.deepEqual(r.data, [[5]]);
  assert.equal((await sql(url, 'SELECT max(version) AS v FROM queryflux_schema_history'))[0].v, 23);
});
