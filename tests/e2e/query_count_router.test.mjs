// queryCountBased (Trino Gateway's QueryCountBasedRouter): for the query's
// user, the member with the fewest of that user's queued queries, then the
// fewest queued, then the fewest running. Two Trino clusters (QueryFlux
// nodes standing in, each running one query at a time on DuckDB and
// queueing the rest, and listing them per user on /v1/query) with several
// users queueing on both.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, submit, waitFor } from './support/gateway.mjs';

function backendConfig(ports) {
  return {
    queryflux: {
      frontends: { trinoHttp: { enabled: true, port: ports.trino } },
      adminApi: { port: ports.admin, username: 'admin', password: 'admin' },
    },
    clusters: { duck: { engine: 'duckDb' } },
    clusterGroups: { one: { members: ['duck'], maxRunningQueries: 1, maxQueuedQueries: 50 } },
  };
}

test('queryCountBased sends each user to where they queue least, then to the shorter queue', async (t) => {
  const b1 = await startGateway(backendConfig({ trino: 29260, admin: 29261 }));
  t.after(() => b1.kill());
  const b2 = await startGateway(backendConfig({ trino: 29262, admin: 29263 }));
  t.after(() => b2.kill());
  // Held on the backends: one running each (a minute of sleep), the rest
  // queued behind it. Nobody follows their nextUri, so nothing moves.
  const hold = async (gw, user) => {
    const r = await submit(gw.trinoUrl, 'SELECT sleep_ms(60000)', { user });
    assert.equal(r.status, 200, r.text);
  };
  await hold(b1, 'alice'); // runs
  await hold(b1, 'alice');
  await hold(b1, 'alice');
  await hold(b1, 'bob');
  await hold(b2, 'bob'); // runs
  await hold(b2, 'bob');
  await hold(b2, 'bob');
  // b1 queues alice 2, bob 1 (3); b2 queues bob 2 (2).
  const front = await startGateway({
    queryflux: {
      frontends: { trinoHttp: { enabled: true, port: 29264 } },
      adminApi: { port: 29265, username: 'admin', password: 'admin' },
    },
    monitor: { taskDelay: '1s' },
    clusters: {
      t1: { engine: 'trino', endpoint: b1.trinoUrl },
      t2: { engine: 'trino', endpoint: b2.trinoUrl },
    },
    clusterGroups: { g: { members: ['t1', 't2'], maxRunningQueries: 20, strategy: { type: 'queryCountBased' } } },
  });
  t.after(() => front.kill());
  await waitFor(async () => {
    const cs = (await front.admin('/admin/clusters')).body;
    const c = Object.fromEntries(cs.map((x) => [x.name, x]));
    return c.t1.reportedQueued === 3 && c.t2.reportedQueued === 2;
  }, { what: 'the backends\' queues as the front sees them', timeoutMs: 15000 });
  // Where a query of `user` goes: the cluster the front placed it on.
  const placed = async (user) => {
    const r = await submit(front.trinoUrl, `SELECT 1 AS for_${user}`, { user });
    assert.equal(r.status, 200, r.text);
    const id = r.body.id;
    return waitFor(async () => {
      const running = (await front.admin('/admin/queries/running')).body;
      return running.find((q) => q.id === id && q.cluster)?.cluster;
    }, { what: `${user}'s query placed`, timeoutMs: 10000 });
  };
  // alice queues 2 on t1, none on t2.
  assert.equal(await placed('alice'), 't2');
  // bob queues 1 on t1, 2 on t2.
  assert.equal(await placed('bob'), 't1');
  // carol queues nowhere: the shorter queue (t2's 2, against t1's 3, and
  // bob's newest counted on t1 as his queue is there).
  assert.equal(await placed('carol'), 't2');
  assert.equal((await front.admin('/admin/groups')).body[0].strategy, 'queryCountBased');
});
