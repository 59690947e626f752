// Admin API cluster updates, side by side in one run: a gateway with the
// YAML config (changes in memory) and one with PostgreSQL persistence
// (each change written to the database first). For a few seconds each,
// one client (1) toggles a cluster's active flag, and after each
// deactivation routes a query at once to see whether the change had taken
// effect; (2) changes a cluster's config (a new initSql) and measures the
// time until a query routed to it sees the new config (the cluster is
// replaced, checked and HEALTHY); (3) adds and deletes a cluster. Prints
// updates/s, p50/p99 latency and the PostgreSQL/in-memory ratio.
// Usage: node bench/admin_updates.mjs [SECONDS=3]   (QF_BIN, QF_PG_URL)
import pg from '../tests/e2e/node_modules/pg/lib/index.js';
import { startGateway, config, runRaw } from '../tests/e2e/support/gateway.mjs';

const seconds = Number(process.argv[2] || 3);
const PG_URL = process.env.QF_PG_URL || 'postgres://postgres@127.0.0.1:15432/postgres';
const auth = 'Basic ' + Buffer.from('admin:admin').toString('base64');

async function freshDatabase() {
  const name = `qf_bench_admin_${process.pid}`;
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await c.query(`CREATE DATABASE ${name}`);
  await c.end();
  return { name, url: PG_URL.slice(0, PG_URL.lastIndexOf('/') + 1) + name };
}

async function measure(ports, persistence) {
  const cfg = config({
    trinoPort: ports.trino,
    adminPort: ports.admin,
    clusters: { a: { engine: 'duckDb' }, b: { engine: 'duckDb' }, c: { engine: 'duckDb' } },
    clusterGroups: { g: { members: ['a', 'b'], strategy: { type: 'roundRobin' } }, h: { members: ['c'] } },
    routers: [{ type: 'header', headerName: 'X-Group', headerValueToGroup: { h: 'h' } }],
    routingFallback: 'g',
  });
  if (persistence) cfg.queryflux.persistence = persistence;
  const gw = await startGateway(cfg);
  const call = async (method, path, body) => {
    const headers = { Authorization: auth };
    if (body) headers['Content-Type'] = 'application/json';
    const res = await fetch(`http://127.0.0.1:${ports.admin}${path}`, { method, headers, body: body && JSON.stringify(body) });
    const text = await res.text();
    if (res.status !== 200 && res.status !== 201) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  };
  const post = (path) => call('POST', path);
  const latencies = [];
  const end = Date.now() + seconds * 1000;
  let on = false;
  while (Date.now() < end) {
    const t0 = process.hrtime.bigint();
    await post(`/admin/clusters/b/${on ? 'activate' : 'deactivate'}`);
    latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
    on = !on;
  }
  // Does routing follow at once? Deactivate b, then route queries.
  let stale = 0;
  for (let i = 0; i < 20; i += 1) {
    await post('/admin/clusters/b/deactivate');
    const r = await runRaw(gw.trinoUrl, `SELECT ${i} AS probe_${persistence ? 'pg' : 'mem'}`);
    if (r.error) throw new Error(JSON.stringify(r.error));
    await post('/admin/clusters/b/activate');
  }
  const probes = await gw.history({ search: `AS probe_${persistence ? 'pg' : 'mem'}` });
  stale = probes.queries.filter((q) => q.clusterName === 'b').length;

  // Config changes: cluster c gets a new initSql; the time until a query
  // routed to it reads the new value is the time to take effect.
  const changes = [];
  const effects = [];
  const changeEnd = Date.now() + seconds * 1000;
  for (let n = 1; Date.now() < changeEnd; n += 1) {
    const t0 = process.hrtime.bigint();
    await call('PUT', '/admin/config/clusters/c', { engine: 'duckDb', initSql: [`CREATE TABLE v AS SELECT ${n} AS n`] });
    changes.push(Number(process.hrtime.bigint() - t0) / 1e6);
    for (;;) {
      const r = await runRaw(gw.trinoUrl, 'SELECT n FROM v', { headers: { 'X-Group': 'h' } });
      if (!r.error && r.data[0][0] === n) break;
    }
    effects.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }

  // Adding and deleting a cluster (not in a group: the pair, as fast as it goes).
  const adds = [];
  const addEnd = Date.now() + seconds * 1000;
  while (Date.now() < addEnd) {
    const t0 = process.hrtime.bigint();
    await call('PUT', '/admin/config/clusters/d', { engine: 'duckDb' });
    await call('DELETE', '/admin/config/clusters/d');
    adds.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  await gw.stop();
  return {
    toggle: { ...stats(latencies), stale },
    change: { ...stats(changes), effect: stats(effects) },
    add: stats(adds),
  };
}

function stats(samples) {
  const sorted = [...samples].sort((x, y) => x - y);
  return {
    rate: sorted.length / seconds,
    p50: sorted[Math.floor(sorted.length * 0.5)],
    p99: sorted[Math.floor(sorted.length * 0.99)],
  };
}

const memory = await measure({ trino: 25180, admin: 25190 }, null);
const db = await freshDatabase();
const stored = await measure({ trino: 25181, admin: 25191 }, { type: 'postgres', url: db.url });
const c = new pg.Client({ connectionString: PG_URL });
await c.connect();
await c.query(`DROP DATABASE IF EXISTS ${db.name} WITH (FORCE)`);
await c.end();
const ms = (m) => `p50 ${m.p50.toFixed(2)} ms  p99 ${m.p99.toFixed(2)} ms`;
const line = (name, m, extra = '') => console.log(`  ${name.padEnd(22)} ${m.rate.toFixed(0).padStart(6)}/s  ${ms(m)}${extra}`);
const ratio = (kind) => console.log(`  PostgreSQL-backed: ${(stored[kind].rate / memory[kind].rate).toFixed(2)}x the in-memory rate`);
console.log(`admin API, one client, ${seconds}s each`);
console.log('(1) toggling a cluster\'s active flag');
line('in memory (YAML)', memory.toggle, `  queries routed to a deactivated cluster: ${memory.toggle.stale}/20`);
line('PostgreSQL first', stored.toggle, `  queries routed to a deactivated cluster: ${stored.toggle.stale}/20`);
ratio('toggle');
console.log('(2) changing a cluster\'s config; "effect": until a routed query sees the new config');
line('in memory (YAML)', memory.change, `  effect ${ms(memory.change.effect)}`);
line('PostgreSQL first', stored.change, `  effect ${ms(stored.change.effect)}`);
ratio('change');
console.log('(3) adding and deleting a cluster (pairs)');
line('in memory (YAML)', memory.add);
line('PostgreSQL first', stored.add);
ratio('add');
