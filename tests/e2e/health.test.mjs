// Health cache: a hung cluster is marked UNHEALTHY by its own check timeout,
// gets no queries, and does not delay the other clusters or readiness.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, config } from './support/gateway.mjs';

async function run(client, sql) {
  const pages = [];
  for await (const page of await client.query(sql)) pages.push(page);
  const last = pages.at(-1);
  return {
    error: pages.find((p) => p.error)?.error,
    rows: pages.flatMap((p) => p.data ?? []),
    id: last?.id,
  };
}

test('a hung cluster is UNHEALTHY, the others serve and the gateway is ready', async (t) => {
  const cfg = config({
    trinoPort: 22900,
    adminPort: 22901,
    clusters: {
      ok: { engine: 'sqlite' },
      hung: { engine: 'sqlite', healthCheckQuery: 'SELECT sleep_ms(60000)' },
      off: { engine: 'sqlite', enabled: false },
    },
    clusterGroups: {
      good: { members: ['off', 'ok'], maxRunningQueries: 4 },
      bad: { members: ['hung'], maxRunningQueries: 4, capacityWaitTimeoutSecs: 1 },
    },
    routers: [{ type: 'header', headerName: 'X-Group', headerValueToGroup: { bad: 'bad' } }],
    routingFallback: 'good',
  });
  cfg.monitor = { taskDelay: '1s', checkTimeout: '300ms' };
  const started = Date.now();
  const gw = await startGateway(cfg);
  t.after(() => gw.kill());
  // Readiness waited for the hung cluster's check to time out, not for it to end.
  assert.ok(Date.now() - started < 10000, 'ready well before the hung check would end');

  const clusters = await gw.admin('/admin/clusters');
  assert.equal(clusters.status, 200);
  const byName = Object.fromEntries(clusters.body.map((c) => [c.name, c]));
  assert.equal(byName.ok.status, 'HEALTHY');
  assert.equal(byName.hung.status, 'UNHEALTHY');
  assert.equal(byName.off.status, 'UNKNOWN');
  assert.equal(byName.off.active, false);

  // Every query to the good group runs on the enabled, healthy member.
  const client = gw.trino('hc');
  for (let i = 0; i < 4; i++) {
    const r = await run(client, `SELECT ${i} AS i`);
    assert.equal(r.error, undefined);
    assert.deepEqual(r.rows, [[i]]);
    const rec = await gw.historyRecord(r.id);
    assert.equal(rec.clusterName, 'ok');
  }

  // The group whose only member is unhealthy cannot admit: capacity wait times out.
  const bad = gw.trino('hc', { extraHeaders: { 'X-Group': 'bad' } });
  const r = await run(bad, 'SELECT 1');
  assert.equal(r.error?.errorName, 'EXCEEDED_TIME_LIMIT');

  const metrics = await gw.metrics();
  assert.match(metrics, /queryflux_cluster_health\{cluster_name="hung",status="UNHEALTHY"\} 1/);
  assert.match(metrics, /queryflux_cluster_health\{cluster_name="ok",status="HEALTHY"\} 1/);
  assert.match(metrics, /queryflux_cluster_health\{cluster_name="off",status="UNKNOWN"\} 1/);

  // The process still shuts down promptly although a check is stuck.
  const code = await gw.stop({ timeoutMs: 15000 });
  assert.equal(code, 0);
});
