// Fleets for the Studio tests: a Trino coordinator stand-in whose health
// answers the test can hold, and queries to fill the history.
import http from 'node:http';
import { config, runClient } from './gateway.mjs';

/// A Trino coordinator that answers GET /v1/info (healthy) and keeps each
/// request's Authorization header. While `holding`, /v1/info answers wait
/// until release(), so a cluster's PENDING health can be seen.
export async function fakeCoordinator(t, port) {
  const state = { holding: false, held: [], infoRequests: [] };
  const server = http.createServer((req, res) => {
    const answer = () => {
      res.setHeader('Content-Type', 'application/json');
      res.end(req.url.startsWith('/v1/info')
        ? JSON.stringify({ nodeVersion: { version: '455' }, environment: 'e2e', coordinator: true, starting: false, uptime: '1.00m' })
        : '[]');
    };
    if (req.url.startsWith('/v1/info')) state.infoRequests.push({ authorization: req.headers.authorization || null });
    if (state.holding && req.url.startsWith('/v1/info')) state.held.push(answer);
    else answer();
  });
  await new Promise((resolve) => server.listen(port, '127.0.0.1', resolve));
  const release = () => {
    state.holding = false;
    state.held.splice(0).forEach((answer) => answer());
  };
  t.after(() => {
    release();
    server.closeAllConnections?.();
    server.close();
  });
  return {
    endpoint: `http://127.0.0.1:${port}`,
    state,
    hold() { state.holding = true; },
    release,
  };
}

/// Runs each [user, sql, headers] through trino-client; failures are
/// expected for some and kept, not thrown.
export async function runQueries(gw, list) {
  const out = [];
  for (const [user, sql, headers = {}] of list) {
    out.push(await runClient(gw.trino(user, { extraHeaders: headers }), sql));
  }
  return out;
}

/// The fleet the screenshots show: DuckDB, SQLite and a Trino cluster,
/// three groups and a router of each common kind.
export function demoFleet({ trinoPort, adminPort, coordinator }) {
  const cfg = config({
    trinoPort, adminPort,
    clusters: {
      'demo-duckdb': { engine: 'duckDb', maxRunningQueries: 8, initSql: ["CREATE TABLE customers AS SELECT i AS id, ['Berlin', 'Lisbon', 'Osaka', 'Toronto'][1 + i % 4] AS city FROM range(1, 201) t(i)"] },
      'demo-sqlite': { engine: 'sqlite', maxRunningQueries: 4 },
      'trino-prod': {
        engine: 'trino', endpoint: coordinator, externalUrl: 'https://trino.example.com',
        auth: { type: 'basic', username: 'queryflux', password: 'not-shown' }, queryAuth: { type: 'impersonate' },
      },
    },
    clusterGroups: {
      analytics: { members: ['demo-duckdb'], maxRunningQueries: 8, maxQueuedQueries: 100, capacityWaitTimeoutSecs: 60, strategy: { type: 'leastLoaded' } },
      scratch: { members: ['demo-sqlite'], maxRunningQueries: 4 },
      adhoc: { members: ['trino-prod', 'demo-duckdb'], strategy: { type: 'failover' } },
    },
    routers: [
      { type: 'queryRegex', rules: [{ regex: '(?i)^\\s*drop', action: 'deny', error: 'no DDL through the gateway' }] },
      { type: 'header', headerName: 'X-QueryFlux-Group', headerValueToGroup: { scratch: 'scratch', analytics: 'analytics' } },
      { type: 'userGroup', userToGroup: { etl: 'scratch' } },
    ],
    routingFallback: 'analytics',
  });
  cfg.monitor = { taskDelay: '2s' };
  return cfg;
}

/// 25 queries for demoFleet: mostly successes, a few failures, one denied.
export function demoQueries() {
  const list = [];
  for (let i = 0; i < 24; i++) {
    const user = ['alice', 'bob', 'carol'][i % 3];
    if (i % 7 === 3) list.push([user, 'SELECT * FROM orders_2023']); // fails: no such table
    else if (i % 5 === 0) list.push(['etl', 'SELECT count(*) AS tables FROM sqlite_master']); // userGroup: scratch
    else list.push([user, `SELECT city, count(*) AS customers\nFROM customers\nWHERE id > ${i * 5}\nGROUP BY city\nORDER BY 2 DESC`]);
  }
  list.push(['mallory', 'DROP TABLE customers']);
  return list;
}
