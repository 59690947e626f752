// Worker mode: a control plane (or a standalone with workerApi) and the
// workers that pull their config from it, as real processes.
//
//   const cp = await startNode(controlPlaneConfig({ trino: 27000, admin: 27001, persistence }));
//   const w = await startNode(workerConfig({ name: 'w1', ops: 27010, trino: 27011, cp: cp.adminUrl }));
//   t.after(() => w.kill());
//
// startNode waits for /readyz (or /health with wait: 'health', or nothing
// with wait: 'none'); every process still alive when the test process exits
// is SIGKILLed.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { Trino, BasicAuth } from 'trino-client';
import { QF_BIN, writeConfig } from './gateway.mjs';

export const SECRET = 'e2e-worker-secret-0123456789';
export const BASIC = 'Basic ' + Buffer.from('admin:admin').toString('base64');
export const BEARER = `Bearer ${SECRET}`;

const live = new Set();
process.on('exit', () => {
  for (const child of live) {
    try { child.kill('SIGKILL'); } catch { /* already gone */ }
  }
});

/// The control plane: role controlPlane (persistence must be postgres) or
/// standalone (in memory) serving workers too. One DuckDB cluster `duck`
/// whose table t holds `value`.
export function controlPlaneConfig({
  trino, admin, persistence, role = 'controlPlane', tls, value = 42, secret = SECRET,
}) {
  const adminApi = { port: admin, username: 'admin', password: 'admin' };
  if (tls) adminApi.tls = { certFile: tls.cert, keyFile: tls.key };
  const cfg = {
    queryflux: {
      frontends: { trinoHttp: { enabled: true, port: trino } },
      adminApi,
      workerApi: { enabled: true, sharedSecret: secret, history: { endpoint: null, redaction: 'full' } },
      shutdownDrainTimeoutSecs: 5,
    },
    monitor: { taskDelay: '1s' },
    clusters: { duck: { engine: 'duckDb', initSql: [`CREATE TABLE t AS SELECT ${value} AS v`] } },
    clusterGroups: { g: { members: ['duck'], maxRunningQueries: 4 } },
    routingFallback: 'g',
  };
  if (role !== 'standalone') cfg.queryflux.role = role;
  if (persistence) cfg.queryflux.persistence = persistence;
  return cfg;
}

/// A worker with its ops port and whichever frontends are given ports.
export function workerConfig({
  name, ops, trino, pg: pgPort, my, cp, labels, labelsFile, caFile,
  allowInsecureHttp = cp.startsWith('http://'), secret = SECRET,
  heartbeatIntervalSecs = 1, pollTimeoutSecs = 30, peerBootstrap, onUnavailable = 'failClosed',
}) {
  const controlPlane = {
    url: cp,
    auth: { mode: 'sharedSecret', sharedSecret: secret },
    pollTimeoutSecs,
    heartbeatIntervalSecs,
  };
  if (allowInsecureHttp) controlPlane.allowInsecureHttp = true;
  if (caFile) controlPlane.tls = { caFile };
  if (peerBootstrap) controlPlane.peerBootstrap = peerBootstrap;
  const frontends = {};
  if (trino) frontends.trinoHttp = { enabled: true, port: trino };
  if (pgPort) frontends.postgresWire = { enabled: true, port: pgPort };
  if (my) frontends.mysqlWire = { enabled: true, port: my };
  const q = {
    role: 'worker',
    controlPlane,
    coordination: { mode: 'controlPlane', onUnavailable },
    history: { endpoint: null, spoolMaxRecords: 50000 },
    frontends,
    adminApi: { port: ops },
    shutdownDrainTimeoutSecs: 5,
  };
  if (name) q.workerName = name;
  if (labels) q.workerLabels = labels;
  if (labelsFile) q.workerLabelsFile = labelsFile;
  return { queryflux: q };
}

/// One HTTP(S) request with node's own client (it sends the Host header
/// it is given). ca: PEM contents. JSON answers are parsed into `body`.
export function request(url, { method = 'GET', headers = {}, body, ca, timeoutMs = 10000 } = {}) {
  const u = new URL(url);
  const mod = u.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = mod.request(u, { method, headers, ca, agent: false, timeout: timeoutMs }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed = text;
        try { parsed = JSON.parse(text); } catch { /* not JSON */ }
        resolve({ status: res.statusCode, headers: res.headers, text, body: parsed });
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${url}: no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

export async function waitFor(fn, { timeoutMs = 10000, intervalMs = 50, what = 'condition' } = {}) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) { last = e; }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${last ? ` (last error: ${last.message})` : ''}`);
    }
    await sleep(intervalMs);
  }
}

/// Starts `queryflux serve` on cfg. wait: 'ready' (/readyz 200),
/// 'health' (/health 200) or 'none'. caFile: the CA to reach an HTTPS
/// admin port (at https://localhost:port).
export async function startNode(cfg, { wait = 'ready', timeoutMs = 20000, caFile, env = {} } = {}) {
  const ca = caFile && readFileSync(caFile);
  const { dir, file } = writeConfig(cfg);
  const q = cfg.queryflux;
  const adminPort = q.adminApi.port;
  const trinoPort = q.frontends?.trinoHttp?.port;
  const adminHost = ca ? 'localhost' : '127.0.0.1';
  const adminUrl = `${q.adminApi.tls ? 'https' : 'http'}://${adminHost}:${adminPort}`;
  const child = spawn(QF_BIN, ['serve', '--config', file], {
    stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env },
  });
  live.add(child);
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d) => { out += d; });
  child.stderr.setEncoding('utf8').on('data', (d) => { out += d; });
  let exitInfo = null;
  const exited = new Promise((resolve) => {
    child.on('exit', (code, signal) => { live.delete(child); exitInfo = { code, signal }; resolve(exitInfo); });
    child.on('error', (error) => { live.delete(child); exitInfo = { code: null, error }; resolve(exitInfo); });
  });
  const logs = () => out;
  const kill = async () => {
    if (process.env.QF_E2E_LOGS) process.stderr.write(`[queryflux :${adminPort}]\n${out}\n`);
    if (!exitInfo) { child.kill('SIGKILL'); await exited; }
    rmSync(dir, { recursive: true, force: true });
  };
  const node = {
    adminUrl,
    adminPort,
    trinoPort,
    trinoUrl: trinoPort && `http://127.0.0.1:${trinoPort}`,
    configFile: file,
    process: child,
    exited,
    logs,
    kill,
    get exitInfo() { return exitInfo; },
    /// A request on the admin (or ops) port; auth: 'basic', 'bearer', a header value or null.
    async api(path, { auth = 'basic', headers = {}, ...init } = {}) {
      const h = { ...headers };
      if (auth === 'basic') h.Authorization = BASIC;
      else if (auth === 'bearer') h.Authorization = BEARER;
      else if (auth) h.Authorization = auth;
      if (init.body !== undefined && !h['Content-Type']) h['Content-Type'] = 'application/json';
      return request(adminUrl + path, { ...init, headers: h, ca });
    },
    /// A worker's GET /worker/status.
    async status() {
      const r = await request(`${adminUrl}/worker/status`);
      if (r.status !== 200) throw new Error(`/worker/status answered ${r.status}: ${r.text}`);
      return r.body;
    },
    trino(user = 'tester', opts = {}) {
      return Trino.create({ server: node.trinoUrl, catalog: 'memory', schema: 'main', auth: new BasicAuth(user), ...opts });
    },
    /// SIGTERM; resolves with the exit info.
    async stop({ timeoutMs: limit = 20000 } = {}) {
      if (!exitInfo) child.kill('SIGTERM');
      const info = await Promise.race([exited, sleep(limit, null, { ref: false })]);
      if (!info) { await kill(); throw new Error(`queryflux :${adminPort} did not exit within ${limit} ms of SIGTERM\n${out}`); }
      return info;
    },
  };
  if (wait === 'none') return node;
  const path = wait === 'ready' ? '/readyz' : '/health';
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (exitInfo) throw new Error(`queryflux exited (${JSON.stringify(exitInfo)}) before ${path} said 200\n${out}`);
    try {
      const r = await request(adminUrl + path, { ca, timeoutMs: 1000 });
      if (r.status === 200) break;
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) {
      await kill();
      throw new Error(`queryflux :${adminPort}${path} was not 200 within ${timeoutMs} ms\n${out}`);
    }
    await sleep(50);
  }
  return node;
}

/// The revision the control plane serves now (GET /worker/config).
export async function servedRevision(cp) {
  const r = await cp.api('/worker/config', { auth: 'bearer' });
  if (r.status !== 200) throw new Error(`/worker/config answered ${r.status}: ${r.text}`);
  return r.body.revision;
}

/// Waits until the worker's /worker/status says it runs `revision` (and,
/// with ready: true, that it is ready).
export async function waitForRevision(worker, revision, { timeoutMs = 15000, ready = false } = {}) {
  await waitFor(async () => {
    const s = await worker.status();
    return s.activeRevision === revision && (!ready || s.ready);
  }, { timeoutMs, what: `worker :${worker.adminPort} running ${revision}` });
}

/// Polls a node's /readyz back to back and keeps each change of answer
/// ("503: <reason>" or "200"); stop() ends it and gives the sequence.
export function watchReadiness(node) {
  const seen = [];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      let state;
      try {
        const r = await request(`${node.adminUrl}/readyz`, { timeoutMs: 2000 });
        state = r.status === 200 ? '200' : `${r.status}: ${r.body?.reason ?? r.text}`;
      } catch (e) { state = `error: ${e.message}`; }
      if (seen.at(-1) !== state) seen.push(state);
    }
  })();
  return { seen, async stop() { stopped = true; await loop; return seen; } };
}

/// The value of `SELECT v FROM t` through each protocol a worker serves.
export async function trinoValue(node) {
  const iter = await node.trino().query('SELECT v FROM t');
  const rows = [];
  for await (const page of iter) {
    if (page.error) throw new Error(`trino: ${page.error.message}`);
    for (const row of page.data ?? []) rows.push(row);
  }
  return rows;
}

export async function pgValue(port, sql = 'SELECT v FROM t') {
  const c = new pg.Client({ host: '127.0.0.1', port, user: 'alice', database: 'demo', connectionTimeoutMillis: 5000 });
  c.on('error', () => {});
  try {
    await c.connect();
    return (await c.query({ text: sql, rowMode: 'array' })).rows;
  } finally {
    await c.end().catch(() => {});
  }
}

export async function mysqlValue(port, sql = 'SELECT v FROM t') {
  let c;
  try {
    c = await mysql.createConnection({ host: '127.0.0.1', port, user: 'alice', connectTimeout: 5000 });
    const [rows] = await c.query({ sql, rowsAsArray: true });
    return rows;
  } finally {
    if (c) await c.end().catch(() => c.destroy());
  }
}

/// A CA and a certificate it signed for localhost only (no IP in the SAN):
/// { ca, cert, key } paths, removed when the test ends.
export function localhostCA(t) {
  const dir = mkdtempSync(join(tmpdir(), 'qf-ca-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const f = (n) => join(dir, n);
  const ssl = (...args) => {
    const r = spawnSync('openssl', args, { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`openssl ${args.join(' ')}: ${r.stderr}`);
  };
  ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('ca.key'), '-out', f('ca.pem'),
    '-days', '2', '-subj', '/CN=QueryFlux e2e CA', '-addext', 'basicConstraints=critical,CA:TRUE',
    '-addext', 'keyUsage=critical,keyCertSign,cRLSign');
  ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('server.key'), '-out', f('server.csr'),
    '-subj', '/CN=localhost');
  writeFileSync(f('ext.cnf'), 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n'
    + 'extendedKeyUsage=serverAuth\nsubjectAltName=DNS:localhost\n');
  ssl('x509', '-req', '-in', f('server.csr'), '-CA', f('ca.pem'), '-CAkey', f('ca.key'), '-CAcreateserial',
    '-out', f('server.crt'), '-days', '2', '-extfile', f('ext.cnf'));
  return { ca: f('ca.pem'), cert: f('server.crt'), key: f('server.key'), dir };
}

/// A file in a fresh temp dir, removed when the test ends.
export function tempFile(t, name, text) {
  const dir = mkdtempSync(join(tmpdir(), 'qf-w-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}


