// Shared capacity when the control plane is killed (SIGKILL) under load,
// with real processes: a control plane on PostgreSQL and two workers
// (coordination.mode: controlPlane) in front of one PostgreSQL cluster in
// group g (maxRunningQueries 2), driven over the workers' PostgreSQL wire
// and Trino HTTP frontends with pg_sleep. What PostgreSQL itself runs (its
// pg_stat_activity in the cluster's database) is sampled all along.
//
// failClosed (the default): running queries finish, the fleet never runs
// more than the limit, and queries submitted while the control plane is
// dead wait (no error) until it is back on the same port; the workers say
// "closed". localLimits: the workers admit on their own limits while it is
// dead ("degraded"); once it is back nobody new is admitted until the
// fleet is under the limit again. Ports 27900-27999.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { setTimeout as sleep } from 'node:timers/promises';
import { freshDatabase, PG_URL } from './support/database.mjs';
import { runRaw, parseMetrics, metricValue } from './support/gateway.mjs';
import { controlPlaneConfig, workerConfig, startNode, request, waitFor } from './support/workers.mjs';

const LIMIT = 2;
const T = { timeout: 60000 };

/// A control plane persisting into a fresh database, serving one postgres
/// cluster `pg` (in a database of its own) in group g.
async function fleetConfig(t, { trino, admin }) {
  const persistence = await freshDatabase(t, 'qf_e2e_wck');
  const clusterUrl = await freshDatabase(t, 'qf_e2e_wckpg');
  const cfg = controlPlaneConfig({ trino, admin, persistence: { type: 'postgres', url: persistence } });
  cfg.clusters = { pg: { engine: 'postgres', endpoint: clusterUrl } };
  cfg.clusterGroups = { g: { members: ['pg'], maxRunningQueries: LIMIT } };
  return { cfg, clusterDb: new URL(clusterUrl).pathname.slice(1) };
}

/// Starts the control plane on cfg; every start is killed when the test ends.
async function startControlPlane(t, cfg) {
  const cp = await startNode(cfg, { timeoutMs: 30000 });
  t.after(() => cp.kill());
  return cp;
}

async function startWorker(t, name, ports, cp, onUnavailable) {
  const w = await startNode(workerConfig({ name, ...ports, cp: cp.adminUrl, onUnavailable }), { timeoutMs: 30000 });
  t.after(() => w.kill());
  w.pgPort = ports.pg;
  w.name = name;
  return w;
}

/// Statements PostgreSQL runs in the cluster's database, sampled back to
/// back from the test's start to its end: { at, total, tags: { tag: n } }.
function sampleEngine(t, db) {
  const c = new pg.Client({ connectionString: PG_URL });
  c.on('error', () => {});
  const samples = [];
  let stopped = false;
  let failure = null;
  const loop = (async () => {
    await c.connect();
    while (!stopped) {
      const r = await c.query(
        `SELECT query FROM pg_stat_activity
          WHERE datname = $1 AND state = 'active' AND query ILIKE '%pg_sleep(%' AND pid <> pg_backend_pid()`, [db]);
      const tags = {};
      for (const { query } of r.rows) {
        const tag = /qf_(\w+?)_\d+/.exec(query)?.[1] ?? 'other';
        tags[tag] = (tags[tag] ?? 0) + 1;
      }
      samples.push({ at: Date.now(), total: r.rows.length, tags });
      await sleep(10); // pacing only
    }
  })().catch((e) => { failure = e; }).finally(() => c.end().catch(() => {}));
  const sampler = {
    samples,
    /// The latest sample taken at or after `since`.
    async next(since = Date.now()) {
      return waitFor(() => {
        if (failure) throw failure;
        const s = samples.at(-1);
        return s && s.at >= since ? s : null;
      }, { timeoutMs: 5000, intervalMs: 10, what: 'a pg_stat_activity sample' });
    },
    async stop() {
      stopped = true;
      await loop;
      if (failure) throw failure;
      return samples;
    },
    max(from = 0, to = Infinity) {
      return Math.max(0, ...samples.filter((s) => s.at >= from && s.at <= to).map((s) => s.total));
    },
  };
  t.after(() => { stopped = true; return loop; });
  return sampler;
}

/// A query in flight: settled, its error, when it ended.
function track(what, promise) {
  const q = { what, settled: false, error: null, value: undefined, endedAt: null };
  q.done = promise.then(
    (v) => { q.value = v; },
    (e) => { q.error = e; },
  ).finally(() => { q.settled = true; q.endedAt = Date.now(); });
  return q;
}

/// `sql` over the worker's PostgreSQL wire frontend, on a connection of its own.
function overPg(w, sql) {
  return track(`pg :${w.pgPort} ${sql}`, (async () => {
    const c = new pg.Client({ host: '127.0.0.1', port: w.pgPort, user: 'alice', database: 'demo', connectionTimeoutMillis: 5000 });
    c.on('error', () => {});
    await c.connect();
    try {
      return (await c.query({ text: sql, rowMode: 'array' })).rows;
    } finally {
      await c.end().catch(() => {});
    }
  })());
}

/// `sql` over the worker's Trino HTTP frontend, following nextUri to the end.
function overTrino(w, sql) {
  return track(`trino :${w.trinoPort} ${sql}`, (async () => {
    const out = await runRaw(w.trinoUrl, sql);
    if (out.error) throw new Error(`${sql}: ${JSON.stringify(out.error)}`);
    if (out.finalState !== 'FINISHED') throw new Error(`${sql}: ended ${out.finalState}`);
    return out.data;
  })());
}

async function succeeded(q) {
  await q.done;
  assert.equal(q.error, null, `${q.what} failed: ${q.error?.stack ?? q.error}`);
  return q.value;
}

async function workerMetric(w, name, labels = { cluster_group: 'g' }) {
  const r = await request(`${w.adminUrl}/metrics`);
  assert.equal(r.status, 200, r.text);
  return metricValue(parseMetrics(r.text), name, labels) ?? 0;
}

const coordination = async (w) => (await w.status()).coordination;

async function waitForState(w, state, what, timeoutMs = 15000) {
  await waitFor(async () => (await coordination(w)).state === state,
    { timeoutMs, what: `${w.name} ${what} (coordination.state ${state})` });
}

/// The fleet is up: both workers connected, and each has run a query
/// through both of its frontends (the control plane grants leases).
async function warmUp(workers) {
  for (const w of workers) {
    const s = await coordination(w);
    assert.equal(s.mode, 'controlPlane', JSON.stringify(s));
    await waitForState(w, 'connected', 'connected');
    assert.deepEqual(await succeeded(overPg(w, 'SELECT 1')), [[1]]);
    assert.deepEqual(await succeeded(overTrino(w, 'SELECT 1')), [[1]]);
  }
}

/// SIGKILL, and wait until the process is gone (its ports free).
async function sigkill(node) {
  node.process.kill('SIGKILL');
  const info = await node.exited;
  assert.equal(info.signal, 'SIGKILL', JSON.stringify(info));
}

test('failClosed: with the control plane SIGKILLed, running queries finish, new ones wait until it is back, and the limit holds', T, async (t) => {
  const { cfg, clusterDb } = await fleetConfig(t, { trino: 27900, admin: 27901 });
  const engine = sampleEngine(t, clusterDb);
  let cp = await startControlPlane(t, cfg);
  const w1 = await startWorker(t, 'kill-a', { ops: 27910, trino: 27911, pg: 27912 }, cp);
  const w2 = await startWorker(t, 'kill-b', { ops: 27920, trino: 27921, pg: 27922 }, cp);
  for (const w of [w1, w2]) assert.equal((await coordination(w)).onUnavailable, 'failClosed');
  await warmUp([w1, w2]);

  // Load: one long query on each worker fills the limit, a third waits on w1.
  const held = [
    overPg(w1, 'SELECT pg_sleep(5) AS qf_held_1'),
    overTrino(w2, 'SELECT pg_sleep(5) AS qf_held_2'),
  ];
  await waitFor(async () => (await engine.next()).tags.held === 2, { what: 'both long queries running in PostgreSQL' });
  await waitFor(async () => (await coordination(w1)).leases.pg === 1 && (await coordination(w2)).leases.pg === 1,
    { what: 'each worker holding one lease' });
  const queuedBefore = overTrino(w1, 'SELECT pg_sleep(0.2) AS qf_before_1');
  await waitFor(async () => (await workerMetric(w1, 'queryflux_queued_queries')) === 1,
    { what: 'the third query waiting on w1' });

  await sigkill(cp);
  const killedAt = Date.now();

  // Their leases would have expired on the control plane by now: both
  // workers admit nothing new.
  await waitForState(w1, 'closed', 'fail-closed');
  await waitForState(w2, 'closed', 'fail-closed');
  const late = [
    overPg(w1, 'SELECT pg_sleep(0.5) AS qf_late_1'),
    overTrino(w2, 'SELECT pg_sleep(0.5) AS qf_late_2'),
    overPg(w2, 'SELECT pg_sleep(0.5) AS qf_late_3'),
  ];
  await waitFor(async () => (await workerMetric(w1, 'queryflux_queued_queries')) === 2
    && (await workerMetric(w2, 'queryflux_queued_queries')) === 2,
  { what: 'the late queries queued on both workers' });

  // The running queries finish, successfully, with the control plane dead.
  for (const q of held) await succeeded(q);
  assert.ok(held.every((q) => q.endedAt > killedAt), 'the long queries outlived the control plane');
  // Slots freed, and still nothing new runs: every waiter waits, whatever
  // the outage's length (both workers keep failing to reach the control plane).
  const failures = async (w) => (await coordination(w)).failures;
  const f1 = await failures(w1);
  const f2 = await failures(w2);
  await waitFor(async () => (await failures(w1)) >= f1 + 3 && (await failures(w2)) >= f2 + 3,
    { what: 'both workers failing again to reach the control plane' });
  const idle = await engine.next();
  assert.equal(idle.total, 0, `nothing runs with the control plane down: ${JSON.stringify(idle)}`);
  for (const q of [queuedBefore, ...late]) {
    assert.equal(q.settled, false, `${q.what} ended with the control plane down: ${q.error ?? JSON.stringify(q.value)}`);
  }
  assert.equal(await workerMetric(w1, 'queryflux_queued_queries'), 2);
  assert.equal(await workerMetric(w2, 'queryflux_queued_queries'), 2);
  for (const w of [w1, w2]) {
    const s = await coordination(w);
    assert.equal(s.state, 'closed', JSON.stringify(s));
    assert.ok(s.lastError, `the failure is reported: ${JSON.stringify(s)}`);
    assert.ok((await workerMetric(w, 'queryflux_coordination_failures_total', {})) > 0, 'failures counted in /metrics');
    assert.equal((await request(`${w.adminUrl}/readyz`)).status, 200, 'still ready on its last config');
  }
  assert.ok(engine.max(killedAt) <= LIMIT, `over the limit while the control plane was down: ${engine.max(killedAt)}`);

  // Back on the same port: every waiter runs, under the limit, and succeeds.
  // (It may serve the workers before startNode has seen it ready.)
  const restartedAt = Date.now();
  cp = await startControlPlane(t, cfg);
  for (const q of [queuedBefore, ...late]) await succeeded(q);
  await waitForState(w1, 'connected', 'connected again');
  await waitForState(w2, 'connected', 'connected again');
  assert.ok([queuedBefore, ...late].every((q) => q.endedAt > restartedAt), 'the waiters ran after the restart');

  // Everything is given back, on both sides.
  await waitFor(async () => (await coordination(w1)).leases.pg === 0 && (await coordination(w2)).leases.pg === 0,
    { what: 'the workers holding no lease' });
  await waitFor(async () => (await cp.api('/admin/clusters/pg')).body.runningQueries === 0,
    { what: 'the control plane counting nothing running' });

  const samples = await engine.stop();
  const max = engine.max();
  assert.ok(max <= LIMIT, `PostgreSQL ran ${max} gateway statements at once, over the limit ${LIMIT}`);
  assert.ok(samples.some((s) => s.tags.late > 0), 'the late queries were seen running');
  assert.equal(Math.max(...samples.filter((s) => s.at < restartedAt).map((s) => s.tags.late ?? 0)), 0,
    'no late query ran before the control plane was back');
});

test('localLimits: with the control plane SIGKILLed, workers admit on their own limits; once it is back the fleet gets under the limit', T, async (t) => {
  const { cfg, clusterDb } = await fleetConfig(t, { trino: 27950, admin: 27951 });
  const engine = sampleEngine(t, clusterDb);
  let cp = await startControlPlane(t, cfg);
  const w1 = await startWorker(t, 'local-a', { ops: 27960, trino: 27961, pg: 27962 }, cp, 'localLimits');
  const w2 = await startWorker(t, 'local-b', { ops: 27970, trino: 27971, pg: 27972 }, cp, 'localLimits');
  for (const w of [w1, w2]) assert.equal((await coordination(w)).onUnavailable, 'localLimits');
  await warmUp([w1, w2]);

  // Under load when it dies: the limit is full on w1.
  const held = [overPg(w1, 'SELECT pg_sleep(2) AS qf_held_1'), overTrino(w1, 'SELECT pg_sleep(2) AS qf_held_2')];
  await waitFor(async () => (await engine.next()).tags.held === 2, { what: 'both long queries running in PostgreSQL' });
  await sigkill(cp);
  const killedAt = Date.now();
  await waitForState(w1, 'degraded', 'on its own limits');
  await waitForState(w2, 'degraded', 'on its own limits');

  // Queries succeed while it is dead ...
  for (const q of held) await succeeded(q);
  for (const w of [w1, w2]) {
    assert.deepEqual(await succeeded(overPg(w, 'SELECT 7')), [[7]]);
    assert.deepEqual(await succeeded(overTrino(w, 'SELECT 8')), [[8]]);
  }
  // ... each worker up to its own limit: twice the shared one, together.
  const outage = [
    overPg(w1, 'SELECT pg_sleep(7) AS qf_outage_1'), overTrino(w1, 'SELECT pg_sleep(7) AS qf_outage_2'),
    overPg(w2, 'SELECT pg_sleep(7) AS qf_outage_3'), overTrino(w2, 'SELECT pg_sleep(7) AS qf_outage_4'),
  ];
  await waitFor(async () => (await engine.next()).tags.outage === 4,
    { what: 'four queries running on the workers\' own limits' });
  const extra = overPg(w1, 'SELECT pg_sleep(0.1) AS qf_extra_1');
  await waitFor(async () => (await workerMetric(w1, 'queryflux_queued_queries')) === 1,
    { what: 'a fifth query waiting for w1\'s own limit' });
  assert.ok(engine.max(killedAt) <= 2 * LIMIT, `more than the workers' own limits: ${engine.max(killedAt)}`);

  // Back on the same port: the workers tell it what they run; nobody new
  // is admitted until the fleet is back under the limit.
  cp = await startControlPlane(t, cfg);
  await waitForState(w1, 'connected', 'connected again');
  await waitForState(w2, 'connected', 'connected again');
  // It counts what they run, past the limit.
  await waitFor(async () => (await cp.api('/admin/clusters/pg')).body.runningQueries === 2 * LIMIT,
    { what: 'the control plane counting the four outage queries' });
  const settledAt = Date.now();
  const newcomers = [
    overTrino(w1, 'SELECT pg_sleep(0.5) AS qf_new_1'), overPg(w1, 'SELECT pg_sleep(0.5) AS qf_new_2'),
    overPg(w2, 'SELECT pg_sleep(0.5) AS qf_new_3'), overTrino(w2, 'SELECT pg_sleep(0.5) AS qf_new_4'),
  ];
  const stillOver = await engine.next();
  for (const q of [...outage, ...newcomers, extra]) await succeeded(q);
  const outageEnded = Math.max(...outage.map((q) => q.endedAt));
  const samples = await engine.stop();

  assert.ok(samples.some((s) => s.tags.new > 0), 'the newcomers were seen running');
  // The newcomers were submitted with the fleet over the limit (else
  // this test says nothing about the way back).
  assert.equal(stillOver.tags.outage, 4, `the outage queries ran on after the restart: ${JSON.stringify(stillOver)}`);
  // Whenever a query admitted after the restart ran (the newcomers, and the
  // fifth query that waited for w1), the fleet ran at most the limit.
  const admittedOver = samples.filter((s) => s.at >= settledAt
    && ((s.tags.new ?? 0) + (s.tags.extra ?? 0)) > 0 && s.total > LIMIT);
  assert.equal(admittedOver.length, 0, `after the restart, queries were admitted with the fleet over the limit ${LIMIT}: `
    + `${admittedOver.length} samples, the first ${JSON.stringify(admittedOver[0])}, at most `
    + `${Math.max(0, ...admittedOver.map((s) => s.total))} running`);
  const after = engine.max(outageEnded);
  assert.ok(after <= LIMIT, `the fleet did not get back under the limit: ${after} running after the outage queries ended`);
  await waitFor(async () => (await cp.api('/admin/clusters/pg')).body.runningQueries === 0,
    { what: 'the control plane counting nothing running' });
});
