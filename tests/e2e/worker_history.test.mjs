// Worker mode, the history uplink, with real processes: what each redaction
// mode lets reach the control plane's query_records from trino-client, psql
// and the mariadb CLI; a history endpoint of another kind (the snapshot's,
// and a worker's own) that never sees the control plane's secret and whose
// refusals keep or drop records as they should; a control plane killed with
// -9 while a batch is being written; a worker stopped with records still
// spooled, which its final flush delivers. Ports 28200-28299.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { spawnSync } from 'node:child_process';
import pg from 'pg';
import { freshDatabase, sql } from './support/database.mjs';
import { parseMetrics, metricValue } from './support/gateway.mjs';
import { controlPlaneConfig, workerConfig, startNode, waitFor, trinoValue } from './support/workers.mjs';

const T = { timeout: 90000 };

async function trinoRun(node, text) {
  const iter = await node.trino().query(text);
  for await (const page of iter) {
    if (page.error) return page.error.message;
  }
  return null;
}

function psql(port, text) {
  return spawnSync('psql', ['-X', '-h', '127.0.0.1', '-p', String(port), '-U', 'alice', '-d', 'demo', '-c', text],
    { encoding: 'utf8', timeout: 20000 });
}

function mariadb(port, text) {
  return spawnSync('mariadb', ['--no-defaults', '-h127.0.0.1', `-P${port}`, '-ualice', '-e', text],
    { encoding: 'utf8', timeout: 20000 });
}

/// What the control plane stored of one worker's queries, by protocol.
async function storedOf(url, worker) {
  return sql(url, `SELECT frontend_protocol AS protocol, status, sql_preview AS sql, error_message AS error,
                          routing_trace::text AS trace, query_hash::text AS hash,
                          query_parameterized_hash::text AS shape, execution_duration_ms AS ms, worker
                     FROM query_records WHERE worker = '${worker}' ORDER BY id`);
}

async function controlPlane(t, ports, { redaction = 'full', endpoint = null } = {}) {
  const url = await freshDatabase(t, 'qf_e2e_wh');
  const cfg = controlPlaneConfig({ ...ports, persistence: { type: 'postgres', url } });
  cfg.queryflux.workerApi.history = { endpoint, redaction };
  const cp = await startNode(cfg, { timeoutMs: 30000 });
  t.after(() => cp.kill());
  return { cp, url, cfg };
}

async function worker(t, cp, ports, { endpoint, onUnavailable = 'localLimits', name = 'w' } = {}) {
  const cfg = workerConfig({ name, ...ports, cp: cp.adminUrl, onUnavailable });
  if (endpoint) cfg.queryflux.history.endpoint = endpoint;
  const w = await startNode(cfg);
  t.after(() => w.kill());
  return w;
}

/// One query from each client: a statement with literals (and, for psql,
/// a comment holding one), and for trino a failing one whose message quotes
/// its value.
async function queriesFromEveryClient(w, ports) {
  assert.equal(await trinoRun(w, "SELECT v FROM t WHERE 'trino-secret' <> 'x' AND v < 1001"), null);
  assert.match(await trinoRun(w, "SELECT CAST('cast-secret' AS INTEGER)"), /cast-secret/);
  const p = psql(ports.pg, "SELECT v FROM t WHERE 'pg''secret' <> 'x' /* comment-secret */ AND v < 1002");
  assert.equal(p.status, 0, p.stderr);
  const m = mariadb(ports.my, "SELECT v FROM t WHERE 'my-secret' <> 'x' AND v < 1003");
  assert.equal(m.status, 0, m.stderr);
}

for (const [i, mode] of ['full', 'maskLiterals', 'metadata'].entries()) {
  test(`redaction ${mode}: what trino-client, psql and mariadb queries leave in query_records`, T, async (t) => {
    const base = 28200 + i * 10;
    const { cp, url } = await controlPlane(t, { trino: base, admin: base + 1 }, { redaction: mode });
    const ports = { ops: base + 2, trino: base + 3, pg: base + 4, my: base + 5 };
    const w = await worker(t, cp, ports);
    await queriesFromEveryClient(w, ports);
    const rows = await waitFor(async () => {
      const r = await storedOf(url, 'w');
      return r.length === 4 && r;
    }, { timeoutMs: 20000, what: 'four records at the control plane' });
    const texts = rows.map((r) => [r.sql, r.error, r.trace].join(' ')).join('\n');
    for (const r of rows) {
      assert.equal(r.worker, 'w');
      assert.ok(r.hash && r.shape, `fingerprints on every record: ${JSON.stringify(r)}`);
      assert.ok(r.ms !== null);
    }
    const byProtocol = (p) => rows.filter((r) => r.protocol === p);
    if (mode === 'full') {
      for (const secret of ['trino-secret', 'cast-secret', "pg''secret", 'comment-secret', 'my-secret']) {
        assert.ok(texts.includes(secret), `${secret} kept in full:\n${texts}`);
      }
      assert.ok(rows.every((r) => r.trace));
    } else {
      assert.ok(!/secret/.test(texts), `no literal leaves the worker:\n${texts}`);
    }
    if (mode === 'maskLiterals') {
      const shapes = rows.filter((r) => r.status === 'Success').map((r) => r.sql).sort();
      assert.deepEqual(shapes, [
        'SELECT v FROM t WHERE ? <> ? AND v < ?',
        'SELECT v FROM t WHERE ? <> ? AND v < ?',
        'SELECT v FROM t WHERE ? <> ? AND v < ?',
      ]);
      const failed = byProtocol('trinoHttp').find((r) => r.status === 'Failed');
      assert.equal(failed.sql, 'SELECT CAST(? AS INTEGER)');
      assert.match(failed.error, /\?/);
      assert.ok(rows.every((r) => r.trace), 'the routing trace stays');
    }
    if (mode === 'metadata') {
      for (const r of rows) {
        assert.equal(r.sql, null);
        assert.equal(r.error, null);
        assert.equal(r.trace, null);
      }
    }
    // The same shape from three frontends: one parameterized fingerprint,
    // three statements.
    const ok = rows.filter((r) => r.status === 'Success');
    assert.equal(new Set(ok.map((r) => r.shape)).size, 1, JSON.stringify(ok));
    assert.equal(new Set(ok.map((r) => r.hash)).size, 3);
    const s = await w.status();
    assert.equal(s.history.redaction, mode);
    assert.equal(s.historyUplink.sent, 4);
    assert.equal(s.historyUplink.dropped, 0);
  });
}

/// An HTTP server standing for a history endpoint: keeps each request and
/// answers with the next of `answers` ({ status, headers, body }), then 200.
async function historyEndpoint(t, answers = []) {
  const seen = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      seen.push({ path: req.url, headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
      const a = answers.shift() ?? { status: 200, body: '{"stored":true}' };
      res.writeHead(a.status, { 'Content-Type': 'application/json', ...(a.headers ?? {}) });
      res.end(a.body ?? '{}');
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  return { url: `http://127.0.0.1:${server.address().port}/ingest`, seen, answers };
}

test('history endpoints: the snapshot\'s and a worker\'s own; no secret; retried, kept or dropped as answered', T, async (t) => {
  const shared = await historyEndpoint(t, [
    { status: 503, headers: { 'Retry-After': '1' }, body: '{"error":"busy"}' },
    { status: 400, body: '{"error":"schemaVersion 1 is too old","code":"unsupportedSchemaVersion"}' },
    { status: 429, body: '{"error":"slow down"}' },
  ]);
  const own = await historyEndpoint(t);
  const { cp, url } = await controlPlane(t, { trino: 28240, admin: 28241 }, { endpoint: shared.url });
  const w1 = await worker(t, cp, { ops: 28242, trino: 28243 }, { name: 'via-snapshot' });
  const w2 = await worker(t, cp, { ops: 28244, trino: 28245 }, { name: 'via-own', endpoint: own.url });
  assert.deepEqual(await trinoValue(w1), [[42]]);
  assert.deepEqual(await trinoValue(w2), [[42]]);

  // Three refusals to retry, then the fourth try is taken.
  await waitFor(() => shared.seen.length === 4, { timeoutMs: 30000, what: 'four tries at the shared endpoint' });
  await waitFor(() => own.seen.length === 1, { what: 'the worker\'s own endpoint' });
  for (const r of [...shared.seen, ...own.seen]) {
    assert.equal(r.headers.authorization, undefined, 'the control plane\'s secret stays with the control plane');
    assert.equal(r.body.schemaVersion, 1);
    assert.equal(r.body.records.length, 1);
    assert.equal(r.body.records[0].sql, 'SELECT v FROM t');
  }
  assert.equal(shared.seen[0].headers['x-queryflux-worker'], 'via-snapshot');
  assert.equal(own.seen[0].headers['x-queryflux-worker'], 'via-own');
  // The same record each time: kept through every retryable refusal.
  assert.equal(new Set(shared.seen.map((r) => r.body.records[0].proxyQueryId)).size, 1);
  await waitFor(async () => (await w1.status()).historyUplink.sent === 1, { what: 'sent counted' });
  const s1 = await w1.status();
  assert.equal(s1.historyUplink.dropped, 0);
  assert.equal(s1.historyUplink.destination, shared.url);
  assert.equal(s1.history.endpoint, shared.url);
  assert.equal((await w2.status()).history.endpoint, own.url);
  assert.equal((await sql(url, 'SELECT count(*)::int AS n FROM query_records'))[0].n, 0,
    'nothing reaches the control plane when an endpoint is set');

  // Any other 4xx drops the batch, counted, and the spool moves on.
  shared.answers.push({ status: 400, body: '{"error":"bad record"}' });
  assert.deepEqual(await trinoValue(w1), [[42]]);
  await waitFor(async () => (await w1.status()).historyUplink.dropped === 1, { what: 'a refused batch dropped' });
  const after = await w1.status();
  assert.match(after.historyUplink.lastError, /HTTP 400/);
  const metrics = parseMetrics((await w1.api('/metrics', { auth: null })).text);
  assert.equal(metricValue(metrics, 'queryflux_history_uplink_dropped_total', { reason: 'rejected' }), 1);
  assert.equal(metricValue(metrics, 'queryflux_history_uplink_failures_total'), 3);
  assert.deepEqual(await trinoValue(w1), [[42]]);
  await waitFor(async () => (await w1.status()).historyUplink.sent === 2, { what: 'the next batch goes' });
});

/// Holds an exclusive lock on query_records in a session of its own until
/// release(): the control plane's ingest waits inside its transaction.
async function lockHistory(url) {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  await c.query('BEGIN');
  await c.query('LOCK TABLE query_records IN EXCLUSIVE MODE');
  return { release: async () => { await c.query('COMMIT'); await c.end(); } };
}

async function ingestWaiting(url) {
  const rows = await sql(url, `SELECT count(*)::int AS n FROM pg_stat_activity
                                WHERE datname = current_database() AND wait_event_type = 'Lock'
                                  AND query LIKE '%query_records%'`);
  return rows[0].n > 0;
}

test('kill -9 of the control plane while it writes a batch: the records arrive once when it is back', T, async (t) => {
  const { cp, url, cfg } = await controlPlane(t, { trino: 28250, admin: 28251 });
  const w = await worker(t, cp, { ops: 28252, trino: 28253 });
  const lock = await lockHistory(url);
  for (let i = 0; i < 5; ++i) assert.equal(await trinoRun(w, `SELECT v + ${i} FROM t`), null);
  await waitFor(() => ingestWaiting(url), { what: 'the ingest waiting on the lock, mid-batch' });
  cp.process.kill('SIGKILL');
  await cp.exited;
  await lock.release();
  assert.equal((await sql(url, 'SELECT count(*)::int AS n FROM query_records'))[0].n, 0, 'nothing half-written');
  await waitFor(async () => (await w.status()).historyUplink.lastError, { what: 'the worker seeing the failure' });

  const again = await startNode(cfg, { timeoutMs: 30000 });
  t.after(() => again.kill());
  const rows = await waitFor(async () => {
    const r = await sql(url, `SELECT proxy_query_id FROM query_records WHERE worker = 'w'`);
    return r.length === 5 && r;
  }, { timeoutMs: 60000, what: 'five records after the restart' });
  assert.equal(new Set(rows.map((r) => r.proxy_query_id)).size, 5);
  await waitFor(async () => {
    const u = (await w.status()).historyUplink;
    return u.queued === 0 && u.sent === 5 && u.lastError === null;
  }, { what: 'the spool empty' });
});

test('SIGTERM of a worker with records spooled: the final flush delivers them', T, async (t) => {
  const { cp, url } = await controlPlane(t, { trino: 28260, admin: 28261 });
  const w = await worker(t, cp, { ops: 28262, trino: 28263, pg: 28264 }, { onUnavailable: 'failClosed' });
  const lock = await lockHistory(url);
  assert.equal(await trinoRun(w, 'SELECT v + 1 FROM t'), null);
  await waitFor(() => ingestWaiting(url), { what: 'the first batch held at the control plane' });
  // While that batch is out, these wait in the spool.
  for (let i = 2; i <= 4; ++i) assert.equal(await trinoRun(w, `SELECT v + ${i} FROM t`), null);
  assert.equal(psql(28264, 'SELECT v + 5 FROM t').status, 0);
  await waitFor(async () => (await w.status()).historyUplink.queued === 5, { what: 'five records spooled or out' });
  w.process.kill('SIGTERM');
  await waitFor(async () => {
    const r = await cp.api('/admin/workers/w');
    return r.status === 200 && r.body.status === 'draining';
  }, { what: 'the worker draining' });
  await lock.release();
  const info = await w.exited;
  assert.equal(info.code, 0, w.logs());
  const stored = await sql(url, `SELECT sql_preview FROM query_records WHERE worker = 'w' ORDER BY sql_preview`);
  assert.deepEqual(stored.map((r) => r.sql_preview),
    [1, 2, 3, 4, 5].map((i) => `SELECT v + ${i} FROM t`));
  assert.ok(!/records not sent upstream/.test(w.logs()), w.logs());
});
