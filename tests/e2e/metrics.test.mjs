// Prometheus metrics: names, labels, values that match what ran, promtool's
// approval, OpenMetrics for the scrapers that ask, and a real Prometheus.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  startGateway, config, runClient, runRaw, submit, follow, parseMetrics, metricValue, waitFor,
} from './support/gateway.mjs';

const T = { timeout: 40000 };

let gw;
let text;
let samples;
before(async () => {
  gw = await startGateway(config({
    trinoPort: 21700,
    adminPort: 21701,
    clusters: {
      duck: { engine: 'duckDb', maxRunningQueries: 2 },
      lite: { engine: 'sqlite', maxRunningQueries: 2 },
      small: { engine: 'duckDb', maxRunningQueries: 1 },
    },
    clusterGroups: {
      g_duck: { members: ['duck'] },
      g_lite: { members: ['lite'] },
      g_small: { members: ['small'], maxQueuedQueries: 0 },
    },
    routers: [
      { type: 'queryRegex', rules: [{ regex: '(?i)^\\s*drop', action: 'deny', error: 'DDL not allowed' }] },
      { type: 'header', headerName: 'X-Target', headerValueToGroup: { lite: 'g_lite', small: 'g_small' } },
    ],
    routingFallback: 'g_duck',
  }));

  // What we run, and so what the counters must say.
  const duck = gw.trino('metrics');
  const lite = gw.trino('metrics', { extraHeaders: { 'X-Target': 'lite' } });
  for (let i = 0; i < 3; i++) assert.equal((await runClient(duck, `SELECT ${i}`)).error, undefined);
  for (let i = 0; i < 2; i++) assert.equal((await runClient(lite, `SELECT ${i}`)).error, undefined);
  for (let i = 0; i < 2; i++) assert.equal((await runClient(duck, 'SELEC broken')).error?.errorName, 'SYNTAX_ERROR');
  assert.equal((await runClient(duck, 'DROP TABLE x')).error?.errorName, 'PERMISSION_DENIED');
  // One queue rejection: the small group has one slot and no queue.
  const holder = await submit(gw.trinoUrl, 'SELECT sleep_ms(800)', { headers: { 'X-Target': 'small' } });
  await waitFor(async () => metricValue(parseMetrics(await gw.metrics()), 'queryflux_running_queries', { cluster_group: 'g_small' }) === 1,
    { what: 'the holder to run' });
  const rejected = await runRaw(gw.trinoUrl, 'SELECT 1', { headers: { 'X-Target': 'small' } });
  assert.equal(rejected.error?.errorName, 'QUERY_QUEUE_FULL');
  assert.equal((await follow(holder)).error, undefined);

  text = await gw.metrics();
  samples = parseMetrics(text);
});
after(async () => { await gw?.kill(); });

function typeOf(name) {
  const m = new RegExp(`^# TYPE ${name} (\\w+)$`, 'm').exec(text);
  return m?.[1];
}

test('promtool check metrics accepts the scrape', T, () => {
  const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  assert.equal(r.error, undefined, String(r.error));
  assert.equal(r.status, 0, `promtool said:\n${r.stdout}${r.stderr}`);
});

test('the scrape is served as Prometheus text', T, async () => {
  const res = await fetch(`${gw.adminUrl}/metrics`);
  await res.arrayBuffer();
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
  // Open: no credentials needed.
});

test('every metric has HELP, TYPE and the documented labels', T, () => {
  const expected = {
    queryflux_queries_total: ['counter', ['engine_type', 'cluster_group', 'status', 'protocol']],
    queryflux_query_duration_seconds: ['histogram', ['engine_type', 'cluster_group']],
    queryflux_running_queries: ['gauge', ['cluster_group', 'cluster_name']],
    queryflux_queued_queries: ['gauge', ['cluster_group']],
    queryflux_queue_duration_seconds: ['histogram', ['cluster_group']],
    queryflux_queue_rejections_total: ['counter', ['cluster_group']],
    queryflux_cluster_health: ['gauge', ['cluster_name', 'status']],
  };
  for (const [name, [type, labels]] of Object.entries(expected)) {
    assert.match(text, new RegExp(`^# HELP ${name} \\S`, 'm'), `HELP for ${name}`);
    assert.equal(typeOf(name), type, `TYPE of ${name}`);
    const own = samples.filter((s) => s.name === name || s.name.startsWith(`${name}_`) && type === 'histogram');
    assert.ok(own.length > 0, `no samples for ${name}`);
    for (const s of own) {
      const keys = Object.keys(s.labels).filter((k) => k !== 'le').sort();
      assert.deepEqual(keys, [...labels].sort(), `labels of ${s.name} ${JSON.stringify(s.labels)}`);
    }
  }
});

test('queryflux_queries_total counts what ran', T, () => {
  const q = (labels) => metricValue(samples, 'queryflux_queries_total', { protocol: 'trinoHttp', ...labels });
  assert.equal(q({ engine_type: 'duckDb', cluster_group: 'g_duck', status: 'Success' }), 3);
  assert.equal(q({ engine_type: 'sqlite', cluster_group: 'g_lite', status: 'Success' }), 2);
  assert.equal(q({ engine_type: 'duckDb', cluster_group: 'g_duck', status: 'Failed' }), 2);
  assert.equal(q({ status: 'Denied' }), 1);
  assert.equal(q({ cluster_group: 'g_small', status: 'Success' }), 1);
  assert.equal(q({ cluster_group: 'g_small', status: 'Failed' }), 1, 'the queue rejection');
  assert.equal(q({}), 10, 'ten queries in all');
  assert.equal(q({ status: 'Cancelled' }) ?? 0, 0);
});

test('query duration histogram is consistent', T, () => {
  const d = (suffix, labels) => metricValue(samples, `queryflux_query_duration_seconds_${suffix}`, labels);
  assert.equal(d('count', { engine_type: 'duckDb', cluster_group: 'g_duck' }), 5);
  assert.equal(d('count', { engine_type: 'sqlite', cluster_group: 'g_lite' }), 2);
  const total = samples.filter((s) => s.name === 'queryflux_query_duration_seconds_count').reduce((a, s) => a + s.value, 0);
  assert.equal(total, 10);

  // Buckets are cumulative and end in +Inf == count.
  const series = new Map();
  for (const s of samples.filter((x) => x.name === 'queryflux_query_duration_seconds_bucket')) {
    const key = `${s.labels.engine_type}/${s.labels.cluster_group}`;
    if (!series.has(key)) series.set(key, []);
    series.get(key).push([s.labels.le === '+Inf' ? Infinity : Number(s.labels.le), s.value]);
  }
  assert.ok(series.size >= 3);
  for (const [key, buckets] of series) {
    buckets.sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < buckets.length; i++) assert.ok(buckets[i][1] >= buckets[i - 1][1], `${key} not cumulative`);
    const [engine, group] = key.split('/');
    assert.equal(buckets.at(-1)[0], Infinity);
    assert.equal(buckets.at(-1)[1], d('count', { engine_type: engine, cluster_group: group }), key);
  }
  // The 800 ms holder is not under 0.5 s.
  const small = series.get('duckDb/g_small');
  assert.ok(small, JSON.stringify([...series.keys()]));
  const under = (le) => small.find(([b]) => b === le)?.[1];
  assert.ok(under(0.5) < under(Infinity), `g_small buckets ${JSON.stringify(small)}`);
  assert.ok(d('sum', { engine_type: 'duckDb', cluster_group: 'g_small' }) >= 0.7);
});

test('running and queued gauges are back to 0; rejections counted', T, () => {
  for (const g of ['g_duck', 'g_lite', 'g_small']) {
    assert.equal(metricValue(samples, 'queryflux_queued_queries', { cluster_group: g }), 0, g);
  }
  const running = samples.filter((s) => s.name === 'queryflux_running_queries');
  assert.ok(running.length >= 3, JSON.stringify(running));
  assert.ok(running.every((s) => s.value === 0), JSON.stringify(running));
  assert.deepEqual(
    running.map((s) => `${s.labels.cluster_group}/${s.labels.cluster_name}`).sort(),
    ['g_duck/duck', 'g_lite/lite', 'g_small/small']);
  assert.equal(metricValue(samples, 'queryflux_queue_rejections_total', { cluster_group: 'g_small' }), 1);
  assert.equal(metricValue(samples, 'queryflux_queue_rejections_total'), 1);
  const qd = metricValue(samples, 'queryflux_queue_duration_seconds_count');
  assert.ok(qd >= 8, `queue_duration count ${qd}: every admitted query is observed`);
});

test('cluster health: each cluster is HEALTHY and nothing else', T, () => {
  for (const c of ['duck', 'lite', 'small']) {
    const mine = samples.filter((s) => s.name === 'queryflux_cluster_health' && s.labels.cluster_name === c);
    assert.ok(mine.length >= 1, c);
    assert.equal(mine.find((s) => s.labels.status === 'HEALTHY')?.value, 1, c);
    assert.ok(mine.filter((s) => s.labels.status !== 'HEALTHY').every((s) => s.value === 0), JSON.stringify(mine));
  }
});

test('counters only grow between scrapes', T, async () => {
  assert.equal((await runClient(gw.trino('metrics'), 'SELECT 99')).error, undefined);
  const later = parseMetrics(await gw.metrics());
  const success = (s) => metricValue(s, 'queryflux_queries_total', { engine_type: 'duckDb', cluster_group: 'g_duck', status: 'Success' });
  assert.equal(success(later), success(samples) + 1);
  for (const s of samples.filter((x) => x.name === 'queryflux_queries_total')) {
    const now = later.find((x) => x.name === s.name && JSON.stringify(x.labels) === JSON.stringify(s.labels));
    assert.ok(now && now.value >= s.value, JSON.stringify(s));
  }
});

test('OpenMetrics when the scraper asks for it; a real Prometheus scrapes the Trino and admin ports', T, async (t) => {
  const accept = 'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,'
    + 'text/plain;version=0.0.4;q=0.5,*/*;q=0.1'; // what Prometheus 2 sends
  for (const base of [gw.trinoUrl, gw.adminUrl]) {
    const res = await fetch(`${base}/metrics`, { headers: { Accept: accept } });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type'), /^application\/openmetrics-text; version=1\.0\.0/);
    const body = await res.text();
    assert.ok(body.endsWith('# EOF\n'), 'ends with # EOF');
    assert.match(body, /^# TYPE queryflux_queries counter$/m, 'a counter family without _total');
    assert.match(body, /^queryflux_queries_total\{cluster_group="g_lite",engine_type="sqlite",protocol="trinoHttp",status="Success"\} 2$/m);
    assert.match(body, /^queryflux_query_duration_seconds_bucket\{.*le="\+Inf"\} \d+$/m);
    assert.doesNotMatch(body, /^# TYPE queryflux_queries_total /m);
  }
  const plain = await fetch(`${gw.trinoUrl}/metrics`);
  assert.match(plain.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);

  const dir = mkdtempSync(join(tmpdir(), 'qf-prom-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'prometheus.yml');
  writeFileSync(file, [
    'global: { scrape_interval: 1s, scrape_timeout: 1s }',
    'scrape_configs:',
    `  - { job_name: trino-port, static_configs: [ { targets: ['127.0.0.1:${gw.trinoPort}'] } ] }`,
    `  - { job_name: admin-port, static_configs: [ { targets: ['127.0.0.1:${gw.adminPort}'] } ] }`,
  ].join('\n'));
  const prom = spawn('prometheus', [`--config.file=${file}`, `--storage.tsdb.path=${join(dir, 'data')}`,
    '--web.listen-address=127.0.0.1:21790'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  prom.stderr.on('data', (d) => { log += d; });
  t.after(() => prom.kill('SIGKILL'));
  // null until Prometheus listens.
  const api = (path) => fetch(`http://127.0.0.1:21790/api/v1/${path}`).then((r) => r.json()).catch(() => null);
  const up = await waitFor(async () => {
    const targets = (await api('targets'))?.data.activeTargets ?? [];
    return targets.length === 2 && targets.every((x) => x.health === 'up');
  }, { timeoutMs: 20000, what: 'both targets up' }).catch((e) => { throw new Error(`${e.message}\n${log}`); });
  assert.ok(up);
  const result = await waitFor(async () => {
    const r = (await api('query?query=queryflux_queries_total'))?.data.result ?? [];
    return new Set(r.map((s) => s.metric.job)).size === 2 && r;
  }, { timeoutMs: 20000, what: 'queryflux_queries_total from both ports' });
  const fromTrinoPort = result.filter((s) => s.metric.job === 'trino-port')
    .reduce((n, s) => n + Number(s.value[1]), 0);
  assert.ok(fromTrinoPort >= 5, `the queries run, as Prometheus stored them: ${JSON.stringify(result)}`);
});
