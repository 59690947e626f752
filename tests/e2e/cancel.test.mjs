// Cancelling running and queued queries: prompt USER_CANCELED, history, freed capacity.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startGateway, config, runClient, submit, follow, parsed, describeHttpError,
  parseMetrics, metricValue, waitFor, sleep,
} from './support/gateway.mjs';

const T = { timeout: 40000 };
const SLOW = 20000;
const WELL_BEFORE = 6000; // a cancel must end the query long before the 20 s sleep

let gw;
before(async () => {
  gw = await startGateway(config({
    trinoPort: 21500,
    adminPort: 21501,
    clusters: {
      duck: { engine: 'duckDb', maxRunningQueries: 1 },
      lite: { engine: 'sqlite', maxRunningQueries: 1 },
    },
    clusterGroups: {
      duckGroup: { members: ['duck'], maxQueuedQueries: 10, capacityWaitTimeoutSecs: 60 },
      liteGroup: { members: ['lite'], maxQueuedQueries: 10, capacityWaitTimeoutSecs: 60 },
    },
    routers: [{ type: 'header', headerName: 'X-Target', headerValueToGroup: { lite: 'liteGroup' } }],
    routingFallback: 'duckGroup',
  }));
});
after(async () => { await gw?.kill(); });

async function running(group) {
  return metricValue(parseMetrics(await gw.metrics()), 'queryflux_running_queries', { cluster_group: group }) ?? 0;
}
async function queued(group) {
  return metricValue(parseMetrics(await gw.metrics()), 'queryflux_queued_queries', { cluster_group: group }) ?? 0;
}
async function infoState(id) {
  const r = await parsed(await fetch(`${gw.trinoUrl}/v1/query/${id}`));
  return r.body?.state;
}

/// Starts sql through trino-client; returns { id, done } where done resolves
/// with the collected result once the client's iteration ends.
async function startWithClient(client, sql) {
  const iter = await client.query(sql);
  // trino-client keeps the POST answer (QUEUED, with the id) in its iterator
  // and yields nothing until a page has data or the query ends.
  const id = iter.iter.queryResult.id;
  assert.ok(id, 'the POST answer carries the query id');
  const done = (async () => {
    const out = { data: [], error: undefined, finalState: undefined, pages: 0 };
    try {
      for await (const r of iter) {
        out.pages += 1;
        if (r.data) out.data.push(...r.data);
        if (r.error) out.error = r.error;
        out.finalState = r.stats?.state;
      }
    } catch (e) {
      throw describeHttpError(e, sql);
    }
    out.endedAt = Date.now();
    return out;
  })();
  return { id, done };
}

for (const [engine, headers, group] of [['duckDb', {}, 'duckGroup'], ['sqlite', { 'X-Target': 'lite' }, 'liteGroup']]) {
  test(`${engine}: trino-client cancel(id) ends a running sleep_ms(${SLOW}) with USER_CANCELED`, T, async () => {
    const client = gw.trino('canceller', { extraHeaders: headers });
    const { id, done } = await startWithClient(client, `SELECT sleep_ms(${SLOW}) AS s`);
    await waitFor(async () => (await running(group)) === 1, { what: 'the query to take the slot' });
    await waitFor(async () => (await client.queryInfo(id)).state === 'RUNNING', { what: 'state RUNNING' });

    const cancelledAt = Date.now();
    await client.cancel(id);
    const r = await done;
    assert.ok(r.endedAt - cancelledAt < WELL_BEFORE, `ended ${r.endedAt - cancelledAt} ms after the cancel`);
    assert.equal(r.finalState, 'FAILED');
    assert.equal(r.error?.errorName, 'USER_CANCELED');
    assert.deepEqual(r.data, []);

    const rec = await gw.historyRecord(id);
    assert.equal(rec.status, 'Cancelled');
    assert.ok(rec.startedAtMs > 0, 'it had started');
    assert.ok(rec.executionDurationMs < WELL_BEFORE, `ran ${rec.executionDurationMs} ms`);
    assert.equal(await infoState(id), 'FAILED');

    // maxRunningQueries 1: the slot is free, the next query runs at once.
    assert.equal(await running(group), 0);
    const t0 = Date.now();
    const next = await runClient(client, 'SELECT 7 AS next');
    assert.equal(next.error, undefined, JSON.stringify(next.error));
    assert.deepEqual(next.data, [[7]]);
    assert.ok(Date.now() - t0 < WELL_BEFORE);
    assert.equal((await gw.historyRecord(next.id)).queueDurationMs < 1000, true);
  });
}

test('DELETE on nextUri cancels a running query; the next poll says USER_CANCELED', T, async () => {
  const first = await submit(gw.trinoUrl, `SELECT sleep_ms(${SLOW}) AS s`, { user: 'deleter' });
  assert.equal(first.status, 200);
  // Poll once: the query is running and there is a next page to ask for.
  const page = (await parsed(await fetch(first.body.nextUri))).body;
  assert.ok(['QUEUED', 'RUNNING'].includes(page.stats.state), page.stats.state);
  assert.ok(page.nextUri, 'still going');
  await waitFor(async () => (await running('duckGroup')) === 1, { what: 'the query to run' });

  const cancelledAt = Date.now();
  const del = await fetch(page.nextUri, { method: 'DELETE' });
  assert.equal(del.status, 204);
  const rest = await follow({ status: 200, body: page, text: '' });
  assert.ok(Date.now() - cancelledAt < WELL_BEFORE);
  assert.equal(rest.finalState, 'FAILED');
  assert.equal(rest.error?.errorName, 'USER_CANCELED');
  assert.equal((await gw.historyRecord(first.body.id)).status, 'Cancelled');

  const next = await runClient(gw.trino('deleter'), 'SELECT 8');
  assert.deepEqual(next.data, [[8]]);
});

test('cancelling a queued query: USER_CANCELED, never started, queue emptied', T, async () => {
  const client = gw.trino('queuer');
  const holder = await startWithClient(client, `SELECT sleep_ms(${SLOW}) AS s`);
  await waitFor(async () => (await running('duckGroup')) === 1, { what: 'the holder to run' });

  const waiter = await startWithClient(client, 'SELECT 1 AS waited');
  await waitFor(async () => (await queued('duckGroup')) === 1, { what: 'the waiter to queue' });
  assert.equal((await client.queryInfo(waiter.id)).state, 'QUEUED');

  const del = await fetch(`${gw.trinoUrl}/v1/query/${waiter.id}`, { method: 'DELETE' });
  assert.equal(del.status, 204);
  const w = await waiter.done;
  assert.equal(w.finalState, 'FAILED');
  assert.equal(w.error?.errorName, 'USER_CANCELED');
  assert.deepEqual(w.data, []);
  const rec = await gw.historyRecord(waiter.id);
  assert.equal(rec.status, 'Cancelled');
  assert.equal(rec.startedAtMs, 0, 'a queued query never started');
  assert.equal(rec.clusterName, '');
  await waitFor(async () => (await queued('duckGroup')) === 0, { what: 'the queue to empty' });

  // The holder is unaffected and still running; cancel it too.
  assert.equal(await running('duckGroup'), 1);
  assert.equal((await client.queryInfo(holder.id)).state, 'RUNNING');
  await client.cancel(holder.id);
  const h = await holder.done;
  assert.equal(h.error?.errorName, 'USER_CANCELED');

  // Nothing left behind: a new query goes straight through.
  const next = await runClient(client, 'SELECT 9');
  assert.deepEqual(next.data, [[9]]);
  assert.ok((await gw.historyRecord(next.id)).queueDurationMs < 1000);
});

test('cancelling a query that already finished changes nothing', T, async () => {
  const client = gw.trino('late');
  const r = await runClient(client, 'SELECT 10 AS done');
  assert.deepEqual(r.data, [[10]]);
  const del = await fetch(`${gw.trinoUrl}/v1/query/${r.id}`, { method: 'DELETE' });
  await del.arrayBuffer();
  assert.ok(del.status === 204 || del.status === 404, `DELETE gave ${del.status}`);
  await sleep(100);
  assert.equal((await gw.historyRecord(r.id)).status, 'Success');
  assert.equal(await infoState(r.id), 'FINISHED');
});

test('cancel counts as Cancelled in the metrics', T, async () => {
  const m = parseMetrics(await gw.metrics());
  const cancelled = metricValue(m, 'queryflux_queries_total', { status: 'Cancelled', protocol: 'trinoHttp' });
  // Two running cancels by id, one by nextUri, one queued, one holder.
  assert.ok(cancelled >= 5, `Cancelled total ${cancelled}`);
  assert.equal(await running('duckGroup'), 0);
  assert.equal(await running('liteGroup'), 0);
});

test('a client that stops polling has its query abandoned after queryClientTimeout', T, async (t) => {
  const short = await startGateway(config({
    trinoPort: 21502,
    adminPort: 21503,
    queryClientTimeout: '2s',
    clusters: { duck: { engine: 'duckDb', maxRunningQueries: 1 } },
    clusterGroups: { g: { members: ['duck'] } },
    routingFallback: 'g',
  }));
  t.after(() => short.kill());
  const runningHere = async () =>
    metricValue(parseMetrics(await short.metrics()), 'queryflux_running_queries', { cluster_group: 'g' }) ?? 0;

  // POST and never poll again.
  const first = await submit(short.trinoUrl, `SELECT sleep_ms(${SLOW})`, { user: 'ghost' });
  assert.equal(first.status, 200);
  await waitFor(async () => (await runningHere()) === 1, { what: 'the query to run' });
  const t0 = Date.now();
  await waitFor(async () => (await runningHere()) === 0, { what: 'the abandoned query to free its slot', timeoutMs: 10000 });
  assert.ok(Date.now() - t0 < 10000);

  const rec = await short.historyRecord(first.body.id);
  assert.equal(rec.status, 'Cancelled');
  assert.match(rec.errorMessage, /abandon/i);
  const next = await runClient(short.trino('ghost'), 'SELECT 11');
  assert.deepEqual(next.data, [[11]]);
});
