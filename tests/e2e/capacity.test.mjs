// Admission: running limits, the FIFO queue, queue timeouts and full queues.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startGateway, config, runClient, runRaw, submit, follow,
  parseMetrics, metricValue, waitFor, sleep,
} from './support/gateway.mjs';

const T = { timeout: 40000 };

let gw;
before(async () => {
  gw = await startGateway(config({
    trinoPort: 21400,
    adminPort: 21401,
    clusters: {
      // No own limit: the group's maxRunningQueries applies to it.
      duck_two: { engine: 'duckDb' },
      duck_timeout: { engine: 'duckDb', maxRunningQueries: 1 },
      lite_full: { engine: 'sqlite', maxRunningQueries: 1 },
    },
    clusterGroups: {
      two: { members: ['duck_two'], maxRunningQueries: 2, maxQueuedQueries: 10, capacityWaitTimeoutSecs: 60 },
      timeout: { members: ['duck_timeout'], maxRunningQueries: 1, maxQueuedQueries: 10, capacityWaitTimeoutSecs: 1 },
      full: { members: ['lite_full'], maxRunningQueries: 1, maxQueuedQueries: 1, capacityWaitTimeoutSecs: 60 },
    },
    routers: [{
      type: 'header', headerName: 'X-Target',
      headerValueToGroup: { two: 'two', timeout: 'timeout', full: 'full' },
    }],
    routingFallback: 'two',
  }));
});
after(async () => { await gw?.kill(); });

const client = (group, user = 'cap') => gw.trino(user, { extraHeaders: { 'X-Target': group } });
const raw = (group, sql, user = 'cap') => submit(gw.trinoUrl, sql, { user, headers: { 'X-Target': group } });

async function scrape() {
  return parseMetrics(await gw.metrics());
}

/// Deepest overlap of [start, end) intervals; an end and a start at the same ms do not overlap.
function maxOverlap(intervals) {
  const events = [];
  for (const [s, e] of intervals) { events.push([s, +1]); events.push([e, -1]); }
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let cur = 0;
  let max = 0;
  for (const [, d] of events) { cur += d; max = Math.max(max, cur); }
  return max;
}

test('maxRunningQueries 2: six concurrent queries all succeed, never more than 2 at once', T, async () => {
  const samples = [];
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const m = await scrape();
      samples.push({
        running: metricValue(m, 'queryflux_running_queries', { cluster_group: 'two' }) ?? 0,
        queued: metricValue(m, 'queryflux_queued_queries', { cluster_group: 'two' }) ?? 0,
        clusterRunning: (await gw.admin('/admin/clusters')).body.find((c) => c.name === 'duck_two').runningQueries,
      });
      await sleep(20);
    }
  })();

  const user = 'six';
  const results = await Promise.all(
    Array.from({ length: 6 }, (_, i) => runClient(client('two', user), `SELECT sleep_ms(700) AS slept, ${i} AS n`)));
  sampling = false;
  await sampler;

  for (const [i, r] of results.entries()) {
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    assert.equal(r.finalState, 'FINISHED');
    assert.deepEqual(r.data, [[700, i]]);
  }

  const records = await Promise.all(results.map((r) => gw.historyRecord(r.id)));
  for (const rec of records) {
    assert.equal(rec.status, 'Success');
    assert.equal(rec.clusterName, 'duck_two');
    assert.ok(rec.startedAtMs > 0 && rec.finishedAtMs >= rec.startedAtMs, JSON.stringify(rec));
  }
  const depth = maxOverlap(records.map((r) => [r.startedAtMs, r.finishedAtMs]));
  assert.ok(depth <= 2, `${depth} queries overlapped: ${JSON.stringify(records.map((r) => [r.startedAtMs, r.finishedAtMs]))}`);
  assert.equal(depth, 2, 'two should have run side by side');
  // Six queries, two at a time: some had to wait in the queue.
  assert.ok(records.filter((r) => r.queueDurationMs >= 300).length >= 2,
    `queue durations: ${records.map((r) => r.queueDurationMs)}`);

  assert.ok(samples.length >= 3, `only ${samples.length} samples`);
  const maxRunning = Math.max(...samples.map((s) => s.running));
  const maxCluster = Math.max(...samples.map((s) => s.clusterRunning));
  const maxQueued = Math.max(...samples.map((s) => s.queued));
  assert.ok(maxRunning <= 2, `queryflux_running_queries reached ${maxRunning}`);
  assert.ok(maxCluster <= 2, `/admin/clusters runningQueries reached ${maxCluster}`);
  assert.equal(maxRunning, 2, 'the metric should have shown 2 running');
  assert.ok(maxQueued >= 1 && maxQueued <= 4, `queued peaked at ${maxQueued}`);

  const after = await scrape();
  assert.equal(metricValue(after, 'queryflux_running_queries', { cluster_group: 'two' }), 0);
  assert.equal(metricValue(after, 'queryflux_queued_queries', { cluster_group: 'two' }), 0);
});

test('queue timeout: the waiter fails with EXCEEDED_TIME_LIMIT, the holder finishes', T, async () => {
  const holder = runClient(client('timeout'), 'SELECT sleep_ms(3000) AS s');
  await waitFor(async () => metricValue(await scrape(), 'queryflux_running_queries', { cluster_group: 'timeout' }) === 1,
    { what: 'the holder to run' });

  const waiter = await runClient(client('timeout'), 'SELECT 1 AS never');
  const waiterDone = Date.now();
  assert.equal(waiter.finalState, 'FAILED');
  assert.equal(waiter.error?.errorName, 'EXCEEDED_TIME_LIMIT');
  assert.match(waiter.error?.message ?? '', /capacityWaitTimeoutSecs/);
  assert.deepEqual(waiter.data, []);

  const h = await holder;
  const holderDone = Date.now();
  assert.equal(h.error, undefined, JSON.stringify(h.error));
  assert.deepEqual(h.data, [[3000]]);
  assert.ok(waiterDone < holderDone, 'the waiter gave up before the holder finished');

  const rec = await gw.historyRecord(waiter.id);
  assert.equal(rec.status, 'Failed');
  assert.equal(rec.startedAtMs, 0, 'it never started');
  assert.ok(rec.queueDurationMs >= 900, `queued ${rec.queueDurationMs} ms`);

  // The slot and the queue are free again.
  const next = await runClient(client('timeout'), 'SELECT 2 AS after');
  assert.deepEqual(next.data, [[2]]);
});

test('full queue: the third query fails at once with QUERY_QUEUE_FULL', T, async () => {
  const before = metricValue(await scrape(), 'queryflux_queue_rejections_total', { cluster_group: 'full' }) ?? 0;

  const running = await raw('full', 'SELECT sleep_ms(1500) AS s');
  assert.equal(running.status, 200);
  await waitFor(async () => metricValue(await scrape(), 'queryflux_running_queries', { cluster_group: 'full' }) === 1,
    { what: 'the first query to run' });
  const queued = await raw('full', 'SELECT 2 AS queued');
  assert.equal(queued.status, 200);
  await waitFor(async () => metricValue(await scrape(), 'queryflux_queued_queries', { cluster_group: 'full' }) === 1,
    { what: 'the second query to queue' });

  const t0 = Date.now();
  const third = await runClient(client('full'), 'SELECT 3 AS rejected');
  const took = Date.now() - t0;
  assert.equal(third.finalState, 'FAILED');
  assert.equal(third.error?.errorName, 'QUERY_QUEUE_FULL');
  assert.equal(third.error?.errorType, 'INSUFFICIENT_RESOURCES');
  assert.match(third.error?.message ?? '', /queue is full/);
  assert.ok(took < 1400, `rejection took ${took} ms; it should not wait for the running query`);

  const afterCount = metricValue(await scrape(), 'queryflux_queue_rejections_total', { cluster_group: 'full' });
  assert.equal(afterCount, before + 1);
  assert.equal((await gw.historyRecord(third.id)).status, 'Failed');

  const [r1, r2] = await Promise.all([follow(running), follow(queued)]);
  assert.equal(r1.error, undefined, JSON.stringify(r1.error));
  assert.deepEqual(r1.data, [[1500]]);
  assert.equal(r2.error, undefined, JSON.stringify(r2.error));
  assert.deepEqual(r2.data, [[2]]);
});

test('capacity is released after errors and cancels', T, async () => {
  // limit 1 ("full" group): each of these must leave the slot free.
  const syntax = await runClient(client('full'), 'SELEC oops');
  assert.equal(syntax.error?.errorName, 'SYNTAX_ERROR');
  const runtime = await runClient(client('full'), 'SELECT abs(-9223372036854775808)');
  assert.equal(runtime.finalState, 'FAILED');

  const slow = await raw('full', 'SELECT sleep_ms(20000)');
  await waitFor(async () => metricValue(await scrape(), 'queryflux_running_queries', { cluster_group: 'full' }) === 1,
    { what: 'the slow query to run' });
  const del = await fetch(`${gw.trinoUrl}/v1/query/${slow.body.id}`, { method: 'DELETE' });
  assert.equal(del.status, 204);

  const t0 = Date.now();
  const next = await runClient(client('full'), 'SELECT 42 AS after_cancel');
  assert.equal(next.error, undefined, JSON.stringify(next.error));
  assert.deepEqual(next.data, [[42]]);
  assert.ok(Date.now() - t0 < 5000, 'the cancelled query freed its slot');

  // Denied and queue-timeout failures hold nothing either.
  const m = await scrape();
  for (const g of ['two', 'timeout', 'full']) {
    assert.equal(metricValue(m, 'queryflux_running_queries', { cluster_group: g }), 0, g);
    assert.equal(metricValue(m, 'queryflux_queued_queries', { cluster_group: g }), 0, g);
  }
  const clusters = (await gw.admin('/admin/clusters')).body;
  assert.ok(clusters.every((c) => c.runningQueries === 0), JSON.stringify(clusters));

  // And the group still takes a burst up to its limit plus queue.
  const burst = await Promise.all([1, 2].map((i) => runRaw(gw.trinoUrl, `SELECT ${i}`, { headers: { 'X-Target': 'full' } })));
  assert.ok(burst.every((r) => r.error === undefined), JSON.stringify(burst.map((r) => r.error)));
});
