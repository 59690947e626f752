// Admin API cluster updates, side by side in one run: a gateway with the
// YAML config (changes in memory) and one with PostgreSQL persistence
// (each change written to the database first). Both toggle a cluster's
// active flag as fast as one client can for a few seconds; then, after
// each deactivation, a query is routed at once to see whether the change
// had taken effect. Prints updates/s, p50/p99 latency and the ratio.
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
    clusters: { a: { engine: 'duckDb' }, b: { engine: 'duckDb' } },
    clusterGroups: { g: { members: ['a', 'b'], strategy: { type: 'roundRobin' } } },
  });
  if (persistence) cfg.queryflux.persistence = persistence;
  const gw = await startGateway(cfg);
  const post = async (path) => {
    const res = await fetch(`http://127.0.0.1:${ports.admin}${path}`, { method: 'POST', headers: { Authorization: auth } });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${path}: ${res.status}`);
  };
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
  await gw.stop();
  latencies.sort((x, y) => x - y);
  return {
    rate: latencies.length / seconds,
    p50: latencies[Math.floor(latencies.length * 0.5)],
    p99: latencies[Math.floor(latencies.length * 0.99)],
    stale,
  };
}

const memory = await measure({ trino: 25180, admin: 25190 }, null);
const db = await freshDatabase();
const stored = await measure({ trino: 25181, admin: 25191 }, { type: 'postgres', url: db.url });
const c = new pg.Client({ connectionString: PG_URL });
await c.connect();
await c.query(`DROP DATABASE IF EXISTS ${db.name} WITH (FORCE)`);
await c.end();
const line = (name, m) => console.log(`  ${name.padEnd(22)} ${m.rate.toFixed(0).padStart(6)} updates/s  p50 ${m.p50.toFixed(2)} ms  p99 ${m.p99.toFixed(2)} ms  queries routed to a deactivated cluster: ${m.stale}/20`);
console.log(`admin API: toggling a cluster's active flag for ${seconds}s from one client`);
line('in memory (YAML)', memory);
line('PostgreSQL first', stored);
console.log(`  PostgreSQL-backed updates run at ${(stored.rate / memory.rate).toFixed(2)}x the in-memory rate`);
