// Starts the real queryflux binary for a test and talks to it.
//
//   const gw = await startGateway(config({ trinoPort: 21000, adminPort: 21001, ... }));
//   t.after(() => gw.kill());
//
// `config` may be an object (written as JSON, which is valid YAML) or a YAML
// string. Every gateway runs in a fresh temp dir; `kill()` is idempotent and
// all gateways still alive when the test process exits are SIGKILLed.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { Trino, BasicAuth } from 'trino-client';

export const QF_BIN = process.env.QF_BIN
  || fileURLToPath(new URL('../../../build/queryflux', import.meta.url));

const live = new Set();
const tempDirs = new Set();
process.on('exit', () => {
  for (const child of live) {
    try { child.kill('SIGKILL'); } catch { /* already gone */ }
  }
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

/// A complete config object around the given clusters/groups/routers.
export function config({
  trinoPort, adminPort, clusters, clusterGroups, routers = [],
  routingFallback, maxPageRows, shutdownDrainTimeoutSecs = 30,
  queryClientTimeout,
}) {
  const trinoHttp = { enabled: true, port: trinoPort };
  if (maxPageRows !== undefined) trinoHttp.maxPageRows = maxPageRows;
  if (queryClientTimeout !== undefined) trinoHttp.queryClientTimeout = queryClientTimeout;
  return {
    queryflux: {
      externalAddress: `http://127.0.0.1:${trinoPort}`,
      frontends: { trinoHttp },
      adminApi: { port: adminPort, username: 'admin', password: 'admin' },
      shutdownDrainTimeoutSecs,
    },
    monitor: { taskDelay: '30s' },
    clusters,
    clusterGroups,
    routers,
    routingFallback,
  };
}

function portsOf(cfg) {
  if (typeof cfg === 'string') {
    const trino = /trinoHttp:[\s\S]*?port:\s*(\d+)/.exec(cfg);
    const admin = /adminApi:[\s\S]*?port:\s*(\d+)/.exec(cfg);
    if (!trino || !admin) throw new Error('cannot find the ports in the YAML config');
    return { trinoPort: Number(trino[1]), adminPort: Number(admin[1]) };
  }
  return {
    trinoPort: cfg.queryflux.frontends.trinoHttp.port,
    adminPort: cfg.queryflux.adminApi.port,
  };
}

/// Writes a config to a fresh temp dir; returns { dir, file }.
export function writeConfig(cfg, name = 'queryflux.yaml') {
  const dir = mkdtempSync(join(tmpdir(), 'qf-e2e-'));
  tempDirs.add(dir); // removed when the test process exits
  const file = join(dir, name);
  writeFileSync(file, typeof cfg === 'string' ? cfg : JSON.stringify(cfg, null, 2));
  return { dir, file };
}

/// Runs `queryflux ARGS...` to completion: { code, stdout, stderr }.
export function runCli(args, opts = {}) {
  const r = spawnSync(QF_BIN, args, { encoding: 'utf8', timeout: 20000, ...opts });
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

export async function startGateway(cfg, { readyTimeoutMs = 20000, args = [], env = {} } = {}) {
  const { trinoPort, adminPort } = portsOf(cfg);
  const { dir, file } = writeConfig(cfg);
  const child = spawn(QF_BIN, ['serve', '--config', file, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  live.add(child);
  let stdout = '';
  let stderr = '';
  let ready = false;
  child.stdout.setEncoding('utf8').on('data', (d) => { stdout += d; });
  child.stderr.setEncoding('utf8').on('data', (d) => { stderr += d; });
  let exitInfo = null;
  let expectExit = false; // set by stop() and kill(); any other exit is reported
  const exited = new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      live.delete(child);
      exitInfo = { code, signal };
      if (!expectExit && ready) {
        process.stderr.write(`queryflux on :${trinoPort} exited unexpectedly (code ${code}, signal ${signal})\n` +
          `${stderr.split('\n').slice(-20).join('\n')}\n`);
      }
      resolve(exitInfo);
    });
    child.on('error', (err) => {
      live.delete(child);
      exitInfo = { code: null, signal: null, error: err };
      resolve(exitInfo);
    });
  });

  const trinoUrl = `http://127.0.0.1:${trinoPort}`;
  const adminUrl = `http://127.0.0.1:${adminPort}`;
  const logs = () => `--- stdout ---\n${stdout}\n--- stderr ---\n${stderr}`;

  const kill = async () => {
    if (process.env.QF_E2E_LOGS) process.stderr.write(`[queryflux ${trinoPort}]\n${logs()}\n`);
    expectExit = true;
    if (!exitInfo) {
      child.kill('SIGKILL');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };

  // Wait for /readyz.
  const deadline = Date.now() + readyTimeoutMs;
  for (;;) {
    if (exitInfo) {
      await kill();
      throw new Error(`queryflux exited (${JSON.stringify(exitInfo)}) before it was ready\n${logs()}`);
    }
    try {
      const res = await fetch(`${adminUrl}/readyz`, { signal: AbortSignal.timeout(1000) });
      await res.arrayBuffer();
      if (res.status === 200) { ready = true; break; }
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) {
      await kill();
      throw new Error(`queryflux was not ready within ${readyTimeoutMs} ms\n${logs()}`);
    }
    await sleep(50);
  }

  const adminAuth = 'Basic ' + Buffer.from('admin:admin').toString('base64');

  const gw = {
    trinoUrl,
    adminUrl,
    trinoPort,
    adminPort,
    configFile: file,
    process: child,
    pid: child.pid,
    exited,
    logs,
    kill,
    /// A trino-client for `user`; opts go to Trino.create (extraHeaders, session, ...).
    trino(user = 'tester', opts = {}) {
      return Trino.create({
        server: trinoUrl, catalog: 'memory', schema: 'main',
        auth: new BasicAuth(user), ...opts,
      });
    },
    /// fetch on the admin port with Basic admin:admin; JSON bodies parsed.
    async admin(path, { auth = true, ...init } = {}) {
      const headers = { ...(init.headers || {}) };
      if (auth) headers.Authorization = adminAuth;
      const res = await fetch(adminUrl + path, { ...init, headers });
      const text = await res.text();
      let body = text;
      try { body = JSON.parse(text); } catch { /* not JSON */ }
      return { status: res.status, headers: res.headers, body, text };
    },
    /// What the process wrote so far, stdout and stderr.
    logs,
    /// The cluster's running count as GET /admin/clusters reports it.
    async running(cluster) {
      const { body } = await gw.admin('/admin/clusters');
      return body.find((x) => x.name === cluster).runningQueries;
    },
    async metrics() {
      const res = await fetch(`${adminUrl}/metrics`);
      if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
      return res.text();
    },
    /// Sends a signal the test expects to end the process; returns `exited`.
    signal(name) {
      expectExit = true;
      child.kill(name);
      return exited;
    },
    /// SIGTERM; resolves with the exit code (null if killed by a signal).
    async stop({ timeoutMs = 40000 } = {}) {
      expectExit = true;
      if (!exitInfo) child.kill('SIGTERM');
      const info = await Promise.race([exited, sleep(timeoutMs, null, { ref: false })]);
      if (!info) {
        await kill();
        throw new Error(`queryflux did not exit within ${timeoutMs} ms of SIGTERM\n${logs()}`);
      }
      rmSync(dir, { recursive: true, force: true });
      return info.code;
    },
    /// The history record of one query, waiting until it is there.
    async historyRecord(id, { timeoutMs = 5000 } = {}) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const r = await gw.admin(`/admin/queries/${encodeURIComponent(id)}`);
        if (r.status === 200) return r.body;
        if (Date.now() > deadline) {
          throw new Error(`no history record for ${id}: ${r.status} ${r.text}`);
        }
        await sleep(25);
      }
    },
    /// /admin/queries with the given params, as { total, queries }.
    async history(params = {}) {
      const qs = new URLSearchParams({ limit: '1000', ...params }).toString();
      const r = await gw.admin(`/admin/queries?${qs}`);
      if (r.status !== 200) throw new Error(`/admin/queries answered ${r.status}: ${r.text}`);
      return r.body;
    },
    /// history(params) once `ready` holds for it. The wire fast lane files a
    /// statement's record (and counts it in the metrics) just after sending
    /// its answer, so a client can ask before it is there.
    async historyWhen(params, ready = (h) => h.total > 0, { timeoutMs = 5000 } = {}) {
      let last;
      await waitFor(async () => ready(last = await gw.history(params)),
        { timeoutMs, what: `history ${JSON.stringify(params)}` });
      return last;
    },
  };
  return gw;
}

// ---------------------------------------------------------------------------
// The raw Trino protocol (no client library), for what the libraries hide.

/// POST /v1/statement; returns { status, body (parsed JSON or text), headers }.
export async function submit(trinoUrl, sql, { user = 'tester', headers = {} } = {}) {
  const h = { 'Content-Type': 'text/plain', ...headers };
  if (user !== null) h['X-Trino-User'] = user;
  const res = await fetch(`${trinoUrl}/v1/statement`, { method: 'POST', headers: h, body: sql });
  return parsed(res);
}

export async function parsed(res) {
  const text = await res.text();
  let body = text;
  try { body = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, body, text, headers: res.headers };
}

/// Follows nextUri from a POST response to the end. Returns
/// { id, columns, data, error, pages (every page), dataPages (row counts of pages with data), states }.
export async function follow(first, { onPage } = {}) {
  if (first.status !== 200) throw new Error(`POST answered ${first.status}: ${first.text}`);
  let page = first.body;
  const out = { id: page.id, columns: undefined, data: [], error: undefined, pages: [page], dataPages: [], states: [page.stats?.state] };
  while (page.nextUri) {
    const res = await fetch(page.nextUri);
    const r = await parsed(res);
    if (r.status !== 200) throw new Error(`GET ${page.nextUri} answered ${r.status}: ${r.text}`);
    page = r.body;
    out.pages.push(page);
    out.states.push(page.stats?.state);
    if (page.columns) out.columns = page.columns;
    if (page.data && page.data.length) {
      out.dataPages.push(page.data.length);
      for (const row of page.data) out.data.push(row);
    }
    if (page.error) out.error = page.error;
    if (onPage) await onPage(page);
  }
  out.finalState = page.stats?.state;
  return out;
}

/// Submit + follow.
export async function runRaw(trinoUrl, sql, opts = {}) {
  return follow(await submit(trinoUrl, sql, opts), opts);
}

/// Runs sql through a trino-client; returns { id, columns, data, error, pages, finalState }.
export async function runClient(client, sql) {
  const out = { id: undefined, columns: undefined, data: [], error: undefined, pages: 0, finalState: undefined, warnings: [] };
  try {
    const iter = await client.query(sql);
    for await (const r of iter) {
      out.pages += 1;
      out.id = r.id;
      if (r.columns) out.columns = r.columns;
      if (r.data) for (const row of r.data) out.data.push(row);
      if (r.error) out.error = r.error;
      if (r.warnings?.length) out.warnings = r.warnings; // all so far, on each page
      out.finalState = r.stats?.state;
    }
  } catch (e) {
    throw describeHttpError(e, sql);
  }
  return out;
}

/// axios errors say only "Request failed with status code N": add the request and the answer.
export function describeHttpError(e, sql) {
  if (!e?.isAxiosError) return e;
  const cfg = e.config ?? {};
  const body = typeof e.response?.data === 'string' ? e.response.data : JSON.stringify(e.response?.data);
  const err = new Error(`${e.message}: ${String(cfg.method).toUpperCase()} ${cfg.url} ` +
    `(sql ${JSON.stringify(sql)}) answered ${e.response?.status}: ${body?.slice(0, 500)}`);
  err.status = e.response?.status;
  err.body = e.response?.data;
  return err;
}

/// Parses Prometheus text into [{ name, labels, value }].
export function parseMetrics(text) {
  const out = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/.exec(line);
    if (!m) throw new Error(`unparseable metrics line: ${line}`);
    const labels = {};
    if (m[2]) {
      const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
      let l;
      while ((l = re.exec(m[2]))) labels[l[1]] = l[2].replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
    }
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

/// Sum of the samples of `name` whose labels include `match`.
export function metricValue(samples, name, match = {}) {
  let sum = 0;
  let found = false;
  for (const s of samples) {
    if (s.name !== name) continue;
    if (Object.entries(match).every(([k, v]) => s.labels[k] === v)) {
      sum += s.value;
      found = true;
    }
  }
  return found ? sum : undefined;
}

export async function waitFor(fn, { timeoutMs = 5000, intervalMs = 25, what = 'condition' } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(intervalMs);
  }
}

export { sleep };

/// gw.defer(fn): fn runs when the test ends, newest first, each given 2 s,
/// before the gateway is killed (clients first, then the gateway).
export function killAfterCleanups(t, gw) {
  const cleanups = [];
  gw.defer = (fn) => cleanups.push(fn);
  t.after(async () => {
    for (const fn of cleanups.reverse()) {
      await Promise.race([Promise.resolve().then(fn).catch(() => {}), sleep(2000)]);
    }
    await gw.kill();
  });
}

/// A throwaway self-signed certificate for 127.0.0.1: { cert, key } paths,
/// removed when the test ends.
export function selfSignedCert(t) {
  const dir = mkdtempSync(join(tmpdir(), 'qf-tls-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const cert = join(dir, 'server.crt');
  const key = join(dir, 'server.key');
  const r = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key,
    '-out', cert, '-days', '2', '-subj', '/CN=127.0.0.1'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`openssl failed: ${r.stderr}`);
  return { cert, key };
}
