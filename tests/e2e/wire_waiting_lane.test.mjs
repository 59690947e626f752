// The waiting lane: a PostgreSQL wire statement that finds its group's
// maxRunningQueries full waits in the group gate's lane and is handed a
// slot by whoever frees one; actor-path statements (Trino HTTP) queue
// behind its waiters and wire statements behind the actor's, so arrival
// order holds across frontends. A lane waiter's wait ends as an actor-path
// wait does: its client gone, capacityWaitTimeoutSecs, an operator's
// cancel, and none of them leaks the slot or the queue count.
//
// Each test has a gateway of its own (Trino HTTP on base, admin API on
// base + 1, PostgreSQL wire on base + 2) over a fresh database, in a group
// of one postgres cluster with maxRunningQueries 1. The one slot is held
// by a PG wire statement blocked on an advisory lock that a direct
// connection holds; unlocking there lets it end.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import {
  startGateway, config, submit, follow, parseMetrics, metricValue, waitFor, sleep,
} from './support/gateway.mjs';
import { freshDatabase } from './support/database.mjs';

const T = { timeout: 90000 };
const GROUP = 'lane';
const CLUSTER = 'pg';
const LOCK = 42;

/// Cleanups of the test, newest first, each given 2 s: registered before the
/// fresh database's drop, so that clients and the gateway go first.
function cleanupsOf(t) {
  const fns = [];
  t.after(async () => {
    for (const fn of fns.reverse()) {
      await Promise.race([Promise.resolve().then(fn).catch(() => {}), sleep(2000)]);
    }
  });
  return (fn) => fns.push(fn);
}

async function laneGateway(t, base, { group = {} } = {}) {
  const defer = cleanupsOf(t);
  const db = await freshDatabase(t, 'qf_e2e_wlane');
  const cfg = config({
    trinoPort: base,
    adminPort: base + 1,
    clusters: { [CLUSTER]: { engine: 'postgres', endpoint: db, maxRunningQueries: 1, poolSize: 3 } },
    clusterGroups: {
      [GROUP]: { members: [CLUSTER], maxRunningQueries: 1, maxQueuedQueries: 10, capacityWaitTimeoutSecs: 60, ...group },
    },
    routingFallback: GROUP,
  });
  cfg.queryflux.frontends.postgresWire = { enabled: true, port: base + 2 };
  // Several wire threads: the slot is handed across loops.
  cfg.queryflux.wireThreads = 3;
  const gw = await startGateway(cfg);
  defer(() => gw.kill());
  gw.pgPort = base + 2;
  gw.db = db;
  gw.defer = defer;
  return gw;
}

/// A client of the gateway's PostgreSQL wire frontend, closed when the test ends.
async function pgClient(gw, user = 'postgres') {
  const c = new pg.Client({ host: '127.0.0.1', port: gw.pgPort, user, database: 'postgres' });
  c.on('error', () => {});
  await c.connect();
  gw.defer(() => c.end());
  return c;
}

/// A connection straight to the test's database.
async function direct(gw) {
  const c = new pg.Client({ connectionString: gw.db });
  c.on('error', () => {});
  await c.connect();
  gw.defer(() => c.end());
  return c;
}

async function running(gw) {
  const r = await gw.admin('/admin/queries/running');
  assert.equal(r.status, 200, r.text);
  return r.body;
}

/// The running list's entry `pred` picks, once there (and `also` holds).
async function listed(gw, pred, what, also = async () => true) {
  let entry;
  await waitFor(async () => {
    entry = (await running(gw)).find(pred);
    return entry && (await also(entry));
  }, { timeoutMs: 15000, what });
  return entry;
}

async function queuedGauge(gw) {
  return metricValue(parseMetrics(await gw.metrics()), 'queryflux_queued_queries', { cluster_group: GROUP }) ?? 0;
}

/// The entry of the statement `sql` once it is QUEUED and the group's
/// queue (the actor's and the lane's) counts `n`: it reached its queue.
async function queued(gw, pred, n, what) {
  // A statement is listed QUEUED from its arrival, before it is routed
  // (its group is set then): the group tells that it reached the queue.
  return listed(gw, pred, `${what} QUEUED in ${GROUP} with ${n} queued`,
    async (e) => e.state === 'QUEUED' && e.group === GROUP && (await queuedGauge(gw)) === n);
}

/// Takes the group's one slot with a PG wire statement that blocks until
/// release() (which resolves once it ended well).
async function holdSlot(gw) {
  const lockHolder = await direct(gw);
  await lockHolder.query(`SELECT pg_advisory_lock(${LOCK})`);
  const c = await pgClient(gw, 'holder');
  // A transaction-level lock: it goes with the statement, which pins nothing.
  const sql = `SELECT pg_advisory_xact_lock(${LOCK}) AS qf_holder`;
  const done = c.query(sql).then(() => null, (e) => e);
  const entry = await listed(gw, (q) => q.sqlPreview === sql, 'the holder running',
    async (e) => e.state === 'RUNNING' && (await lockHolder.query(
      `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
       AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`)).rows[0].n === 1);
  assert.equal(entry.cluster, CLUSTER);
  assert.equal(await gw.running(CLUSTER), 1);
  return {
    entry,
    async release() {
      await lockHolder.query(`SELECT pg_advisory_unlock(${LOCK})`);
      const err = await done;
      assert.equal(err, null, `the holder failed: ${err?.code} ${err?.message}`);
    },
  };
}

/// Nothing queued or running any more, on every count.
async function allIdle(gw) {
  await waitFor(async () => (await running(gw)).length === 0, { what: 'nothing listed as running' });
  await waitFor(async () => (await queuedGauge(gw)) === 0, { what: 'queryflux_queued_queries 0' });
  await waitFor(async () => {
    const clusters = (await gw.admin('/admin/clusters')).body;
    return clusters.every((c) => c.runningQueries === 0);
  }, { what: 'runningQueries 0 on every cluster' });
}

async function orderTable(gw) {
  const d = await direct(gw);
  await d.query('CREATE TABLE ord (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, who text NOT NULL)');
  return async () => (await d.query('SELECT who FROM ord ORDER BY id')).rows.map((r) => r.who);
}

/// A Trino HTTP statement, followed to its end in the background.
async function trinoStatement(gw, sql) {
  const first = await submit(gw.trinoUrl, sql, { user: 'trino_user' });
  assert.equal(first.status, 200, first.text);
  return { id: first.body.id, done: follow(first) };
}

test('arrival order across frontends: a Trino HTTP statement queued first runs before a PG wire statement queued after it', T, async (t) => {
  const gw = await laneGateway(t, 28200);
  const order = await orderTable(gw);
  const holder = await holdSlot(gw);

  const trino = await trinoStatement(gw, "INSERT INTO ord (who) VALUES ('trino')");
  const trinoEntry = await queued(gw, (q) => q.id === trino.id, 1, 'the Trino statement');
  assert.equal(trinoEntry.protocol, 'trinoHttp');

  const c = await pgClient(gw, 'pg_user');
  const pgSql = "INSERT INTO ord (who) VALUES ('pg')";
  const pgDone = c.query(pgSql).then(() => null, (e) => e);
  const pgEntry = await queued(gw, (q) => q.sqlPreview === pgSql, 2, 'the PG statement');
  assert.equal(pgEntry.protocol, 'postgresWire');

  await holder.release();
  const [trinoResult, pgErr] = await Promise.all([trino.done, pgDone]);
  assert.equal(trinoResult.error, undefined, JSON.stringify(trinoResult.error));
  assert.equal(pgErr, null, `${pgErr?.code} ${pgErr?.message}`);

  assert.deepEqual(await order(), ['trino', 'pg'], 'the one that queued first ran first');
  const [tr, pr] = await Promise.all([gw.historyRecord(trino.id), gw.historyRecord(pgEntry.id)]);
  assert.equal(tr.status, 'Success');
  assert.equal(pr.status, 'Success');
  assert.ok(tr.startedAtMs > 0 && pr.startedAtMs >= tr.startedAtMs, `started ${tr.startedAtMs} (trino) vs ${pr.startedAtMs} (pg)`);
  assert.ok(pr.queueDurationMs > 0, JSON.stringify(pr));
  await allIdle(gw);
});

test('arrival order across frontends: a PG wire statement waiting in the lane runs before a Trino HTTP statement queued after it', T, async (t) => {
  const gw = await laneGateway(t, 28210);
  const order = await orderTable(gw);
  const holder = await holdSlot(gw);

  const c = await pgClient(gw, 'pg_user');
  const pgSql = "INSERT INTO ord (who) VALUES ('pg')";
  const pgDone = c.query(pgSql).then(() => null, (e) => e);
  const pgEntry = await queued(gw, (q) => q.sqlPreview === pgSql, 1, 'the PG statement');
  assert.equal(pgEntry.protocol, 'postgresWire');

  const trino = await trinoStatement(gw, "INSERT INTO ord (who) VALUES ('trino')");
  const trinoEntry = await queued(gw, (q) => q.id === trino.id, 2, 'the Trino statement');
  assert.equal(trinoEntry.protocol, 'trinoHttp');

  await holder.release();
  const [trinoResult, pgErr] = await Promise.all([trino.done, pgDone]);
  assert.equal(trinoResult.error, undefined, JSON.stringify(trinoResult.error));
  assert.equal(pgErr, null, `${pgErr?.code} ${pgErr?.message}`);

  assert.deepEqual(await order(), ['pg', 'trino'], 'the one that queued first ran first');
  const [tr, pr] = await Promise.all([gw.historyRecord(trino.id), gw.historyRecord(pgEntry.id)]);
  assert.equal(tr.status, 'Success');
  assert.equal(pr.status, 'Success');
  assert.ok(pr.startedAtMs > 0 && tr.startedAtMs >= pr.startedAtMs, `started ${pr.startedAtMs} (pg) vs ${tr.startedAtMs} (trino)`);
  assert.ok(pr.queueDurationMs > 0, JSON.stringify(pr));
  await allIdle(gw);
});

test('a lane waiter whose client hangs up is recorded Cancelled, leaves the queue, and leaks no slot', T, async (t) => {
  const gw = await laneGateway(t, 28220);
  const holder = await holdSlot(gw);

  const gone = await pgClient(gw, 'gone_user');
  const goneSql = 'SELECT 1 AS qf_client_gone';
  const goneDone = gone.query(goneSql).then(() => null, (e) => e);
  const goneEntry = await queued(gw, (q) => q.sqlPreview === goneSql, 1, 'the doomed waiter');
  // A second waiter behind it in the lane: it must get the slot.
  const behind = await pgClient(gw, 'behind_user');
  const behindSql = 'SELECT 2 AS qf_behind';
  const behindDone = behind.query(behindSql);
  const behindEntry = await queued(gw, (q) => q.sqlPreview === behindSql, 2, 'the waiter behind it');

  gone.connection.stream.destroy();
  assert.ok(await goneDone, 'the destroyed client saw its query fail');

  const rec = await gw.historyRecord(goneEntry.id);
  assert.equal(rec.status, 'Cancelled', JSON.stringify(rec));
  assert.equal(rec.protocol, 'postgresWire');
  assert.equal(rec.clusterGroup, GROUP);
  assert.equal(rec.startedAtMs, 0, 'it never started');
  await waitFor(async () => (await queuedGauge(gw)) === 1, { what: 'queryflux_queued_queries back to 1 (the waiter behind)' });
  await waitFor(async () => !(await running(gw)).some((q) => q.id === goneEntry.id), { what: 'the gone waiter unlisted' });
  assert.equal(await gw.running(CLUSTER), 1, 'only the holder runs');

  await holder.release();
  assert.deepEqual((await behindDone).rows, [{ qf_behind: 2 }]);
  assert.equal((await gw.historyRecord(behindEntry.id)).status, 'Success');
  await waitFor(async () => (await queuedGauge(gw)) === 0, { what: 'queryflux_queued_queries 0' });

  // The slot is free: a new statement runs, and then nothing holds it.
  const next = await pgClient(gw, 'next_user');
  assert.deepEqual((await next.query('SELECT 3 AS n')).rows, [{ n: 3 }]);
  assert.deepEqual((await behind.query('SELECT 4 AS n')).rows, [{ n: 4 }]);
  await allIdle(gw);
  const clusters = (await gw.admin('/admin/clusters')).body;
  assert.equal(clusters.find((c) => c.name === CLUSTER).runningQueries, 0, JSON.stringify(clusters));
});

test('a lane waiter past capacityWaitTimeoutSecs fails with 53400, is recorded Failed, and its session goes on', T, async (t) => {
  const gw = await laneGateway(t, 28230, { group: { capacityWaitTimeoutSecs: 1 } });
  const holder = await holdSlot(gw);

  const c = await pgClient(gw, 'patient_user');
  const sql = 'SELECT 1 AS qf_timed_out';
  const started = Date.now();
  const waiting = c.query(sql).then(() => null, (e) => e);
  const entry = await queued(gw, (q) => q.sqlPreview === sql, 1, 'the waiter');
  const err = await waiting;
  const waited = Date.now() - started;
  assert.ok(err, 'the waiter ran although the slot was never free');
  assert.equal(err.code, '53400', `${err.code}: ${err.message}`);
  assert.match(err.message, /capacityWaitTimeoutSecs/);
  assert.ok(waited >= 900, `it gave up after ${waited} ms`);

  const rec = await gw.historyRecord(entry.id);
  assert.equal(rec.status, 'Failed', JSON.stringify(rec));
  assert.match(rec.errorMessage ?? '', /capacityWaitTimeoutSecs/);
  assert.equal(rec.startedAtMs, 0, 'it never started');
  assert.ok(rec.queueDurationMs >= 900, `queued ${rec.queueDurationMs} ms`);
  await waitFor(async () => (await queuedGauge(gw)) === 0, { what: 'queryflux_queued_queries back to 0' });
  assert.equal(await gw.running(CLUSTER), 1, 'only the holder runs');

  await holder.release();
  assert.deepEqual((await c.query('SELECT 2 AS n')).rows, [{ n: 2 }], 'the session goes on');
  await allIdle(gw);
});

test('a lane waiter cancelled through the admin API gets 57014, is recorded Cancelled, and its connection goes on', T, async (t) => {
  const gw = await laneGateway(t, 28240);
  const holder = await holdSlot(gw);

  const c = await pgClient(gw, 'cancelled_user');
  const sql = 'SELECT 1 AS qf_admin_cancelled';
  const waiting = c.query(sql).then(() => null, (e) => e);
  const entry = await queued(gw, (q) => q.sqlPreview === sql, 1, 'the waiter');
  assert.equal(entry.protocol, 'postgresWire');

  const cancelled = await gw.admin(`/admin/queries/${encodeURIComponent(entry.id)}`, { method: 'DELETE' });
  assert.equal(cancelled.status, 200, cancelled.text);
  assert.deepEqual(cancelled.body, { cancelled: entry.id });
  const err = await waiting;
  assert.ok(err, 'the cancelled waiter ran');
  assert.equal(err.code, '57014', `${err.code}: ${err.message}`);

  const rec = await gw.historyRecord(entry.id);
  assert.equal(rec.status, 'Cancelled', JSON.stringify(rec));
  assert.equal(rec.startedAtMs, 0, 'it never started');
  await waitFor(async () => (await queuedGauge(gw)) === 0, { what: 'queryflux_queued_queries back to 0' });
  assert.equal(await gw.running(CLUSTER), 1, 'only the holder runs');

  await holder.release();
  assert.deepEqual((await c.query('SELECT 2 AS n')).rows, [{ n: 2 }], 'the connection goes on');
  await allIdle(gw);
});
