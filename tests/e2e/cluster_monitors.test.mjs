// Cluster monitors (Trino Gateway's monitorType): INFO_API, JDBC, JMX,
// METRICS and NOOP against a process that serves Trino's monitoring
// endpoints the way Trino does, with 502/503/504 retried as asked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startGateway, waitFor } from './support/gateway.mjs';
import { controlPlaneConfig, startNode, workerConfig } from './support/workers.mjs';

/// A Trino coordinator as its monitors see it: /v1/info, the JMX MBeans
/// the JMX monitor reads, /metrics, system.runtime.queries through
/// /v1/statement, /v1/query. `st` is changed by the test as it goes.
async function coordinator(t, port, st) {
  const seen = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      const path = req.url.split('?')[0];
      seen.push({ method: req.method, url: req.url, user: req.headers['x-trino-user'] });
      const failing = st.fail?.[path];
      if (failing && failing.times > 0) {
        failing.times -= 1;
        res.statusCode = failing.status;
        return res.end('coordinator busy');
      }
      const json = (doc) => {
        res.setHeader('Content-Type', 'application/json');
        res.end(JSON.stringify(doc));
      };
      if (path === '/v1/info') {
        return json({ nodeVersion: { version: '455' }, environment: 'e2e', coordinator: true, starting: false, uptime: '1.00m' });
      }
      if (path === '/v1/jmx/mbean/trino.metadata:name=DiscoveryNodeManager') {
        return json({ className: 'io.trino.metadata.DiscoveryNodeManager', attributes: [
          { name: 'ActiveNodeCount', type: 'int', value: st.activeNodes },
          { name: 'InactiveNodeCount', type: 'int', value: 0 }] });
      }
      if (path === '/v1/jmx/mbean/trino.execution:name=QueryManager') {
        return json({ className: 'io.trino.execution.SqlQueryManager', attributes: [
          { name: 'RunningQueries', type: 'long', value: st.running },
          { name: 'QueuedQueries', type: 'long', value: st.queued }] });
      }
      if (path === '/metrics') {
        res.setHeader('Content-Type', 'text/plain; version=0.0.4');
        return res.end([
          '# TYPE trino_metadata_name_DiscoveryNodeManager_ActiveNodeCount gauge',
          `trino_metadata_name_DiscoveryNodeManager_ActiveNodeCount ${st.activeNodes}.0`,
          '# TYPE trino_execution_name_QueryManager_RunningQueries gauge',
          `trino_execution_name_QueryManager_RunningQueries ${st.running}.0`,
          '# TYPE trino_execution_name_QueryManager_QueuedQueries gauge',
          `trino_execution_name_QueryManager_QueuedQueries{instance="c1"} ${st.queued}.0`,
          `trino_memory_free_bytes ${st.freeBytes ?? 1e9}`, ''].join('\n'));
      }
      if (path === '/v1/statement' && req.method === 'POST') {
        if (!/system\.runtime\.queries/.test(body)) return json({ id: 'q0', error: { message: 'only the monitor here' } });
        // The monitor's own query runs as it is asked: Trino lists it too.
        const rows = [...st.rows, ['RUNNING', req.headers['x-trino-user'], 1]];
        const types = [['state', 'varchar'], ['user', 'varchar'], ['_col2', 'bigint']];
        return json({
          id: `runtime_${seen.length}`, infoUri: 'http://x/ui',
          columns: types.map(([name, type]) => ({ name, type, typeSignature: { rawType: type, arguments: [] } })),
          data: rows, stats: { state: 'FINISHED' } });
      }
      if (path === '/v1/query') return json([]);
      res.statusCode = 404;
      res.end();
    });
  });
  await new Promise((resolve) => server.listen(port, '127.0.0.1', resolve));
  t.after(() => server.close());
  return { url: `http://127.0.0.1:${port}`, seen };
}

function gatewayConfig(ports, clusters, monitor = {}) {
  return {
    queryflux: {
      frontends: { trinoHttp: { enabled: true, port: ports.trino } },
      adminApi: { port: ports.admin, username: 'admin', password: 'admin' },
    },
    // Checks every second: the test waits for what a check finds.
    monitor: { taskDelay: '1s', checkTimeout: '5s', ...monitor },
    clusters,
    clusterGroups: { g: { members: Object.keys(clusters), maxRunningQueries: 4 } },
  };
}

const clusterOf = async (gw, name) => (await gw.admin(`/admin/clusters/${name}`)).body;

test('JMX: an active node makes the cluster HEALTHY and the QueryManager gives its load; none makes it UNHEALTHY', async (t) => {
  const st = { activeNodes: 2, running: 5, queued: 3 };
  const trino = await coordinator(t, 29210, st);
  const gw = await startGateway(gatewayConfig({ trino: 29211, admin: 29212 },
    { t1: { engine: 'trino', endpoint: trino.url, monitor: { type: 'JMX' } } }));
  t.after(() => gw.kill());
  await waitFor(async () => {
    const c = await clusterOf(gw, 't1');
    return c.status === 'HEALTHY' && c.reportedLoad === 8 && c.reportedQueued === 3;
  }, { what: 't1 HEALTHY with the JMX counts', timeoutMs: 10000 });
  assert.ok(trino.seen.some((r) => r.url === '/v1/jmx/mbean/trino.execution:name=QueryManager'));
  assert.ok(!trino.seen.some((r) => r.url === '/v1/info'), 'the JMX monitor does not ask /v1/info');
  assert.ok(trino.seen.every((r) => r.user), 'X-Trino-User on every monitor call');
  st.activeNodes = 0;
  await waitFor(async () => (await clusterOf(gw, 't1')).status === 'UNHEALTHY',
    { what: 't1 UNHEALTHY without active nodes', timeoutMs: 10000 });
  assert.match(gw.logs(), /JMX: the Trino cluster has no active node/);
  st.activeNodes = 1;
  await waitFor(async () => (await clusterOf(gw, 't1')).status === 'HEALTHY',
    { what: 't1 HEALTHY again', timeoutMs: 10000 });
});

test('METRICS: every bounded metric within its bounds is HEALTHY; the named metrics give the load', async (t) => {
  const st = { activeNodes: 1, running: 4, queued: 6, freeBytes: 5e9 };
  const trino = await coordinator(t, 29220, st);
  const gw = await startGateway(gatewayConfig({ trino: 29221, admin: 29222 },
    { t1: { engine: 'trino', endpoint: trino.url } },
    { type: 'METRICS', metricMinimumValues: { trino_metadata_name_DiscoveryNodeManager_ActiveNodeCount: 1, trino_memory_free_bytes: 1e9 },
      metricMaximumValues: { trino_execution_name_QueryManager_QueuedQueries: 10 } }));
  t.after(() => gw.kill());
  await waitFor(async () => {
    const c = await clusterOf(gw, 't1');
    return c.status === 'HEALTHY' && c.reportedLoad === 10 && c.reportedQueued === 6;
  }, { what: 't1 HEALTHY with the metrics counts', timeoutMs: 10000 });
  // Trino filters its /metrics by name[]; the monitor asks for what it reads.
  const asked = trino.seen.find((r) => r.url.startsWith('/metrics?'));
  assert.ok(asked, 'the monitor reads /metrics');
  const names = new URL(asked.url, 'http://x').searchParams.getAll('name[]');
  assert.ok(names.includes('trino_execution_name_QueryManager_RunningQueries'), asked.url);
  st.queued = 11; // over its maximum
  await waitFor(async () => (await clusterOf(gw, 't1')).status === 'UNHEALTHY',
    { what: 't1 UNHEALTHY over the queued maximum', timeoutMs: 10000 });
  assert.match(gw.logs(), /trino_execution_name_QueryManager_QueuedQueries is 11, above its maximum 10/);
  st.queued = 2;
  st.freeBytes = 10; // under its minimum
  await waitFor(async () => /trino_memory_free_bytes is 10, below its minimum 1e\+09/.test(gw.logs()),
    { what: 'the minimum named in the log', timeoutMs: 10000 });
  assert.equal((await clusterOf(gw, 't1')).status, 'UNHEALTHY');
});

test('JDBC: system.runtime.queries gives the load, its own query left out; a failed query is UNHEALTHY', async (t) => {
  const st = { rows: [['RUNNING', 'etl', 4], ['QUEUED', 'alice', 2], ['QUEUED', 'bob', 1]] };
  const trino = await coordinator(t, 29230, st);
  const gw = await startGateway(gatewayConfig({ trino: 29231, admin: 29232 },
    { t1: { engine: 'trino', endpoint: trino.url } }, { type: 'JDBC' }));
  t.after(() => gw.kill());
  await waitFor(async () => {
    const c = await clusterOf(gw, 't1');
    return c.status === 'HEALTHY' && c.reportedLoad === 7 && c.reportedQueued === 3;
  }, { what: 't1 HEALTHY with 4 running and 3 queued', timeoutMs: 10000 });
  assert.ok(trino.seen.some((r) => r.method === 'POST' && r.url === '/v1/statement'));
  // A busy cluster: more users than one batch of rows holds.
  st.rows = Array.from({ length: 1100 }, (_, i) => ['QUEUED', `user${i}`, 1]);
  await waitFor(async () => (await clusterOf(gw, 't1')).reportedQueued === 1100,
    { what: '1,100 users\' queued queries counted', timeoutMs: 10000 });
  st.fail = { '/v1/statement': { times: 1000, status: 500 } };
  await waitFor(async () => (await clusterOf(gw, 't1')).status === 'UNHEALTHY',
    { what: 't1 UNHEALTHY when the query fails', timeoutMs: 10000 });
});

test('NOOP: a cluster nobody can reach is HEALTHY, and nothing is asked of it', async (t) => {
  const gw = await startGateway(gatewayConfig({ trino: 29241, admin: 29242 },
    { t1: { engine: 'trino', endpoint: 'http://127.0.0.1:1' } }, { type: 'NOOP' }));
  t.after(() => gw.kill());
  assert.equal((await clusterOf(gw, 't1')).status, 'HEALTHY');
});

test('502, 503 and 504 are tried again monitor.retries times within one check', async (t) => {
  const st = {};
  const trino = await coordinator(t, 29250, st);
  const gw = await startGateway(gatewayConfig({ trino: 29251, admin: 29252 },
    { patient: { engine: 'trino', endpoint: trino.url, monitor: { retries: 2 } },
      impatient: { engine: 'trino', endpoint: trino.url.replace('127.0.0.1', 'localhost') } },
    { taskDelay: '1h' }));
  t.after(() => gw.kill());
  // Activated again, a cluster is checked at once (PENDING until then).
  const recheck = async (name) => {
    const before = trino.seen.length;
    assert.equal((await gw.admin(`/admin/clusters/${name}/deactivate`, { method: 'POST' })).status, 200);
    assert.equal((await gw.admin(`/admin/clusters/${name}/activate`, { method: 'POST' })).status, 200);
    await waitFor(async () => (await clusterOf(gw, name)).status !== 'PENDING',
      { what: `${name} checked`, timeoutMs: 10000 });
    const calls = trino.seen.slice(before).filter((r) => r.url === '/v1/info').length;
    return { status: (await clusterOf(gw, name)).status, calls };
  };
  for (const status of [502, 503, 504]) {
    st.fail = { '/v1/info': { times: 2, status } };
    assert.deepEqual(await recheck('patient'), { status: 'HEALTHY', calls: 3 }, `${status}`);
  }
  st.fail = { '/v1/info': { times: 3, status: 503 } };
  assert.deepEqual(await recheck('patient'), { status: 'UNHEALTHY', calls: 3 });
  st.fail = { '/v1/info': { times: 1, status: 503 } };
  assert.deepEqual(await recheck('impatient'), { status: 'UNHEALTHY', calls: 1 }, 'retries: 0 by default');
  // Any other failure is not tried again.
  st.fail = { '/v1/info': { times: 1, status: 500 } };
  assert.deepEqual(await recheck('patient'), { status: 'UNHEALTHY', calls: 1 });
});

test('a worker checks its clusters the way its control plane\'s monitor says, also after it changed', async (t) => {
  const st = { activeNodes: 0, running: 0, queued: 0 };
  const trino = await coordinator(t, 29270, st);
  const cpConfig = (type) => {
    const cfg = controlPlaneConfig({ trino: 29271, admin: 29272, role: 'standalone' });
    cfg.monitor = { taskDelay: '1s', type };
    cfg.clusters = { t1: { engine: 'trino', endpoint: trino.url } };
    cfg.clusterGroups = { g: { members: ['t1'], maxRunningQueries: 4 } };
    return cfg;
  };
  const cp = await startNode(cpConfig('NOOP'));
  t.after(() => cp.kill());
  const w = await startNode(workerConfig({ name: 'w1', ops: 29273, trino: 29274, cp: cp.adminUrl }));
  t.after(() => w.kill());
  const workerHealth = async () => {
    const text = await (await fetch('http://127.0.0.1:29273/metrics')).text();
    return /queryflux_cluster_health\{cluster_name="t1",status="(\w+)"\} 1/.exec(text)?.[1];
  };
  // NOOP: healthy whatever the coordinator says.
  await waitFor(async () => (await workerHealth()) === 'HEALTHY', { what: 'HEALTHY under NOOP', timeoutMs: 15000 });
  // The control plane comes back with JMX: the worker's kept cluster now
  // asks JMX, which finds no active node.
  await cp.kill();
  const cp2 = await startNode(cpConfig('JMX'));
  t.after(() => cp2.kill());
  await waitFor(async () => (await workerHealth()) === 'UNHEALTHY', { what: 'UNHEALTHY under JMX', timeoutMs: 30000 });
});
