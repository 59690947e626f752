// The CLI (validate, version, --help) and the process lifecycle: ready, drain, exit.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import net from 'node:net';
import http from 'node:http';
import {
  startGateway, config, runCli, writeConfig, runClient, submit, follow, parsed, waitFor, sleep,
} from './support/gateway.mjs';
import { freshDatabase, sql } from './support/database.mjs';

const T = { timeout: 40000 };

const gateways = [];
after(async () => { await Promise.all(gateways.map((g) => g.kill())); });
async function start(cfg, opts) {
  const gw = await startGateway(cfg, opts);
  gateways.push(gw);
  return gw;
}

function simple(trinoPort, adminPort, extra = {}) {
  return config({
    trinoPort, adminPort,
    clusters: { duck: { engine: 'duckDb', maxRunningQueries: 2 } },
    clusterGroups: { g: { members: ['duck'] } },
    routingFallback: 'g',
    ...extra,
  });
}

test('version and --help exit 0', T, () => {
  const v = runCli(['version']);
  assert.equal(v.code, 0, v.stderr);
  assert.match(v.stdout, /^queryflux \d+\.\d+\.\d+/);
  for (const flag of ['--help', '-h']) {
    const h = runCli([flag]);
    assert.equal(h.code, 0, h.stderr);
    assert.match(h.stdout + h.stderr, /serve/);
    assert.match(h.stdout + h.stderr, /validate/);
  }
});

test('usage errors exit non-zero with a message', T, () => {
  const unknown = runCli(['frobnicate']);
  assert.notEqual(unknown.code, 0);
  assert.match(unknown.stderr, /unknown command/);
  for (const cmd of ['serve', 'validate']) {
    const r = runCli([cmd]);
    assert.notEqual(r.code, 0, cmd);
    assert.match(r.stderr, /--config/);
  }
});

test('validate: a good config exits 0, and so does the shipped example', T, () => {
  const { file } = writeConfig(simple(21690, 21691));
  const r = runCli(['validate', '--config', file]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout + r.stderr, /OK/);
  for (const name of ['quickstart.yaml', 'postgres-persistence.yaml']) {
    const path = fileURLToPath(new URL(`../../deploy/examples/${name}`, import.meta.url));
    const example = runCli(['validate', '--config', path]);
    assert.equal(example.code, 0, `${name}: ${example.stderr}`);
  }
});

test('validate: every problem is listed with its path, exit 2', T, () => {
  const yaml = `
queryflux:
  externalAddress: http://127.0.0.1:21600
  frontends: { trinoHttp: { enabled: true, port: 21600 } }
  adminApi: { port: 21600, username: admin, password: admin }
  bogusKey: 1
monitor: { taskDelay: 30s }
clusters:
  duck1: { engine: duckDb, maxRunningQueries: many }
clusterGroups:
  bi: { members: [duck1, x], maxQueuedQueries: [1, 2] }
routers:
  - { type: queryRegex, rules: [ { regex: "([a-", targetGroup: bi } ] }
routingFallback: bi
`;
  const { file } = writeConfig(yaml);
  const r = runCli(['validate', '--config', file]);
  assert.equal(r.code, 2, `exit ${r.code}; stderr:\n${r.stderr}`);
  const lines = r.stderr.trim().split('\n');
  const expectations = [
    [/queryflux\.bogusKey: unknown key/, 'unknown key'],
    [/clusterGroups\.bi\.members\[1\]: unknown cluster "x"/, 'unknown member'],
    [/routers\[0\]\.rules\[0\]\.regex: .*regex/i, 'bad regex'],
    [/port 21600 is already used/, 'duplicate ports'],
    [/clusters\.duck1\.maxRunningQueries: /, 'wrong type (number)'],
    [/clusterGroups\.bi\.maxQueuedQueries: /, 'wrong type (list for number)'],
  ];
  for (const [re, what] of expectations) {
    assert.ok(lines.some((l) => re.test(l)), `${what}: no line matches ${re}\n${r.stderr}`);
  }
  assert.ok(lines.length >= expectations.length, r.stderr);
  // One problem per line, each naming the file.
  assert.ok(lines.every((l) => l.includes(file)), r.stderr);
});

test('validate: a missing routingFallback and an unknown router group are reported', T, () => {
  const cfg = simple(21692, 21693);
  // With more than one group, the fallback must be named.
  cfg.clusterGroups.other = { members: ['duck'] };
  delete cfg.routingFallback;
  cfg.routers = [{ type: 'userGroup', userToGroup: { alice: 'nope' } }];
  const { file } = writeConfig(cfg);
  const r = runCli(['validate', '--config', file]);
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /routingFallback/);
  assert.match(r.stderr, /routers\[0\].*unknown cluster group "nope"/);
});

test('validate: malformed YAML exits 2 with a line number', T, () => {
  const { file } = writeConfig('queryflux:\n  frontends: [1, 2\n  adminApi: x\n');
  const r = runCli(['validate', '--config', file]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /line \d+/);
  const missing = runCli(['validate', '--config', '/nonexistent/dir/queryflux.yaml']);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /cannot read/);
});

test('serve refuses a bad config before listening', T, async () => {
  const cfg = simple(21694, 21695);
  cfg.clusterGroups.g.members = ['ghost'];
  await assert.rejects(start(cfg, { readyTimeoutMs: 10000 }), (e) => {
    assert.match(e.message, /exited/);
    assert.match(e.message, /unknown cluster "ghost"/);
    return true;
  });
});

test('serve exits non-zero when its port is taken', T, async () => {
  const blocker = net.createServer().listen(21696, '0.0.0.0');
  await new Promise((r) => blocker.once('listening', r));
  try {
    await assert.rejects(start(simple(21696, 21697), { readyTimeoutMs: 10000 }), /exited.*"code":[1-9]/s);
  } finally {
    blocker.close();
  }
});

test('/health and /readyz are 200 once started; SIGINT exits 0', T, async () => {
  const gw = await start(simple(21602, 21603));
  for (const path of ['/health', '/readyz']) {
    const res = await fetch(gw.adminUrl + path);
    assert.equal(res.status, 200, path);
    await res.arrayBuffer();
  }
  const info = await parsed(await fetch(`${gw.trinoUrl}/v1/info`));
  assert.equal(info.status, 200);
  assert.equal(info.body.starting, false);

  const { code } = await gw.signal('SIGINT');
  assert.equal(code, 0, gw.logs());
});

test('SIGTERM drains: the running query completes, newcomers get 503, exit 0', T, async () => {
  const gw = await start(simple(21600, 21601));
  const client = gw.trino('drainer');

  // A query in flight, followed by trino-client.
  const inFlight = runClient(client, 'SELECT sleep_ms(1500) AS slept, 42 AS answer');
  // Wait until it runs, then signal.
  await waitFor(async () => {
    const m = await gw.metrics();
    return /queryflux_running_queries\{[^}]*\} 1/.test(m);
  }, { what: 'the query to run' });
  const stopping = gw.stop();

  // During the drain: new queries are refused with 503, readiness is 503.
  // (A POST that beat the signal is followed to the end, so it does not hold up the drain.)
  const refused = await waitFor(async () => {
    const r = await submit(gw.trinoUrl, 'SELECT 1', { user: 'late' });
    if (r.status === 200) await follow(r);
    return r.status === 503 ? r : null;
  }, { what: 'a 503 during the drain', timeoutMs: 1000 });
  assert.equal(refused.status, 503);
  assert.ok(refused.body?.error?.message, refused.text);
  const ready = await fetch(`${gw.adminUrl}/readyz`);
  await ready.arrayBuffer();
  assert.equal(ready.status, 503);
  const health = await fetch(`${gw.adminUrl}/health`);
  await health.arrayBuffer();
  assert.equal(health.status, 200, 'still alive while draining');

  const r = await inFlight;
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  assert.equal(r.finalState, 'FINISHED');
  assert.deepEqual(r.data, [[1500, 42]]);

  const code = await stopping;
  assert.equal(code, 0, gw.logs());
  assert.match(gw.logs(), /drain/i);
});

test('SIGTERM drain with raw polling: a multi-page result is fully delivered', T, async () => {
  const gw = await start(simple(21604, 21605, { maxPageRows: 100 }));
  const first = await submit(gw.trinoUrl, 'SELECT i FROM range(0, 1000) t(i)', { user: 'pager' });
  assert.equal(first.status, 200);
  const stopping = gw.stop();
  await sleep(100);
  const r = await follow(first);
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  assert.equal(r.data.length, 1000);
  assert.equal(await stopping, 0, gw.logs());
});

/// GET with a reader that waits before taking the body: an answer far
/// larger than the socket buffers is still being written meanwhile.
function slowGet(url, waitMs) {
  return new Promise((resolve, reject) => {
    http.get(url, { agent: false }, (res) => {
      res.pause();
      const chunks = [];
      setTimeout(() => {
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString() }));
        res.on('error', reject);
        res.resume();
      }, waitMs);
    }).on('error', reject);
  });
}

test('SIGTERM drain: a last page of many megabytes, served as the drain ends, reaches a slow reader whole', T, async () => {
  const gw = await start(simple(21612, 21613, { maxPageRows: 20000 }));
  const first = await submit(gw.trinoUrl, "SELECT i, repeat('x', 1000) AS pad FROM range(0, 16000) t(i)", { user: 'slow' });
  assert.equal(first.status, 200);
  const stopping = gw.stop();
  await sleep(100);
  let page = first.body;
  let rows = 0;
  while (page.nextUri) {
    const r = await slowGet(page.nextUri, 300);
    assert.equal(r.status, 200);
    page = JSON.parse(r.text); // a cut-off body does not parse
    rows += page.data?.length ?? 0;
  }
  assert.equal(rows, 16000);
  assert.equal(await stopping, 0, gw.logs());
});

test('the drain gives up after shutdownDrainTimeoutSecs and still exits 0', T, async () => {
  const gw = await start(simple(21606, 21607, { shutdownDrainTimeoutSecs: 1 }));
  const first = await submit(gw.trinoUrl, 'SELECT sleep_ms(20000)', { user: 'stuck' });
  assert.equal(first.status, 200);
  await waitFor(async () => /queryflux_running_queries\{[^}]*\} 1/.test(await gw.metrics()), { what: 'the query to run' });
  const t0 = Date.now();
  const code = await gw.stop({ timeoutMs: 15000 });
  const took = Date.now() - t0;
  assert.equal(code, 0, gw.logs());
  assert.ok(took < 10000, `exit took ${took} ms; the query would have taken 20 s`);
});

test('SIGTERM: a finished query nobody polls is abandoned and recorded so, not waited for; a running one finishes', { timeout: 120000 }, async (t) => {
  const url = await freshDatabase(t);
  const cfg = simple(21608, 21609, { shutdownDrainTimeoutSecs: 300 });
  cfg.queryflux.persistence = { type: 'postgres', url };
  const gw = await start(cfg);
  // curl --data 'SELECT 1' .../v1/statement, and its nextUri never followed.
  const unpolled = await submit(gw.trinoUrl, 'SELECT 1 AS one', { user: 'curl' });
  assert.equal(unpolled.status, 200);
  const running = runClient(gw.trino('patient'), 'SELECT sleep_ms(1500) AS slept');
  // Its own statement, not the unpolled one that may still be running.
  await waitFor(async () => (await gw.admin('/admin/queries/running')).body
    .some((q) => q.submittedBy === 'patient' && q.state === 'RUNNING'), { what: 'the patient query to run' });
  const code = await gw.stop({ timeoutMs: 100000 });
  assert.equal(code, 0, gw.logs());
  assert.doesNotMatch(gw.logs(), /drain timeout/, 'the drain ended without its timeout');
  const r = await running;
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  assert.deepEqual(r.data, [[1500]]);
  const rows = await sql(url, 'SELECT proxy_query_id AS id, username, status, error_message AS error FROM query_records');
  const byUser = Object.fromEntries(rows.map((x) => [x.username, x]));
  assert.deepEqual(Object.keys(byUser).sort(), ['curl', 'patient'], JSON.stringify(rows));
  assert.equal(byUser.curl.id, unpolled.body.id);
  assert.equal(byUser.curl.status, 'Cancelled');
  assert.match(byUser.curl.error, /abandoned/);
  assert.equal(byUser.patient.status, 'Success');
});
