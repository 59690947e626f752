// Studio's development server: the bundle (rebuilt when src/ changes, not
// minified) at /studio/, everything else proxied to a queryflux node.
//
//   node studio/dev.mjs --backend http://127.0.0.1:9000 --port 5173
//
// --fake-session is for a node without Studio's server side: this server
// then answers /studio/api/* itself (admin/admin, or --user/--password),
// checks the CSRF header as the node would, adds HTTP Basic to proxied
// calls, and stands in for GET /admin/groups and /admin/queries/stats by
// composing other admin reads. Never point it at anything but a dev node.
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { watch } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { bundle } from './build.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const { values: opt } = parseArgs({
  options: {
    backend: { type: 'string', default: 'http://127.0.0.1:9000' },
    port: { type: 'string', default: '5173' },
    host: { type: 'string', default: '127.0.0.1' },
    'fake-session': { type: 'boolean', default: false },
    user: { type: 'string', default: 'admin' },
    password: { type: 'string', default: 'admin' },
  },
});
const backend = new URL(opt.backend);

// The bundle, rebuilt on the first request after a change.
let assets = null;
let building = null;
async function current() {
  if (assets) return assets;
  if (!building) {
    building = bundle({ minify: false }).then((a) => {
      assets = new Map(a.map((x) => [x.path, x]));
      building = null;
      console.log(`studio: bundled ${a.length} files`);
      return assets;
    }, (e) => {
      building = null;
      throw e;
    });
  }
  return building;
}
watch(join(here, 'src'), { recursive: true }, () => { assets = null; });

// --fake-session: one in-memory session at a time is enough for one developer.
const sessions = new Map();
const basic = `Basic ${Buffer.from(`${opt.user}:${opt.password}`).toString('base64')}`;

function cookieOf(req) {
  const m = /(?:^|;\s*)qf_studio=([^;]+)/.exec(req.headers.cookie || '');
  return m && sessions.get(m[1]);
}

function json(res, status, body, headers = {}) {
  res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
  res.end(body === undefined ? '' : JSON.stringify(body));
}

async function readBody(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  return Buffer.concat(chunks);
}

async function fakeStudioApi(req, res, path) {
  if (path === '/studio/api/login' && req.method === 'POST') {
    let body = {};
    try { body = JSON.parse((await readBody(req)).toString() || '{}'); } catch { return json(res, 400, { error: 'the body is not valid JSON' }); }
    if (body.username !== opt.user || body.password !== opt.password) return json(res, 401, { error: 'wrong user name or password' });
    const id = randomBytes(16).toString('hex');
    const s = {
      user: opt.user, csrfToken: randomBytes(16).toString('hex'),
      defaultCredentials: opt.user === 'admin' && opt.password === 'admin', role: 'standalone',
      version: 'dev (fake session)', expiresAt: new Date(Date.now() + 12 * 3600e3).toISOString(),
    };
    sessions.set(id, s);
    return json(res, 200, s, { 'Set-Cookie': `qf_studio=${id}; HttpOnly; SameSite=Strict; Path=/; Max-Age=43200` });
  }
  const s = cookieOf(req);
  if (path === '/studio/api/session' && req.method === 'GET') return s ? json(res, 200, s) : json(res, 401, { error: 'no session' });
  if (path === '/studio/api/logout' && req.method === 'POST') {
    const m = /(?:^|;\s*)qf_studio=([^;]+)/.exec(req.headers.cookie || '');
    if (m) sessions.delete(m[1]);
    res.writeHead(204, { 'Set-Cookie': 'qf_studio=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0' });
    return res.end();
  }
  return json(res, 404, { error: `no such resource: ${path}` });
}

async function backendJson(path) {
  const r = await fetch(new URL(path, backend), { headers: { Authorization: basic } });
  if (!r.ok) throw new Error(`${path}: ${r.status}`);
  return r.json();
}

/// The two reads made for Studio, composed from older ones.
async function standIn(path, search) {
  if (path === '/admin/groups') {
    const [groups, clusters] = await Promise.all([backendJson('/admin/config/groups'), backendJson('/admin/clusters')]);
    const byName = new Map(clusters.map((c) => [c.name, c]));
    return groups.map((g) => {
      const ms = (g.members || []).map((m) => byName.get(m)).filter(Boolean);
      return {
        name: g.name, enabled: g.enabled !== false, members: g.members || [], strategy: g.strategy?.type || 'roundRobin',
        runningQueries: ms.reduce((a, c) => a + c.runningQueries, 0),
        maxRunningQueries: ms.reduce((a, c) => a + c.maxRunningQueries, 0),
        queuedQueries: ms.reduce((a, c) => a + c.queuedQueries, 0), maxQueuedQueries: g.maxQueuedQueries ?? 100,
      };
    });
  }
  const minutes = Math.min(1440, Math.max(1, Number(new URLSearchParams(search).get('minutes')) || 60));
  const end = Math.floor(Date.now() / 60000) * 60000 + 60000;
  const start = end - minutes * 60000;
  const page = await backendJson(`/admin/queries?limit=10000&from=${start - 3600e3}`);
  const buckets = Array.from({ length: minutes }, (_, i) => ({ start: new Date(start + i * 60000).toISOString(), queries: 0, errors: 0 }));
  for (const q of page.queries) {
    const i = Math.floor(((q.finishedAtMs || q.createdAtMs) - start) / 60000);
    if (i < 0 || i >= minutes) continue;
    buckets[i].queries += 1;
    if (q.status === 'Failed') buckets[i].errors += 1;
  }
  return { bucketSeconds: 60, buckets };
}

function proxy(req, res, extraHeaders = {}) {
  const headers = { ...req.headers, ...extraHeaders, host: backend.host };
  const up = http.request({
    hostname: backend.hostname, port: backend.port, path: req.url, method: req.method, headers,
  }, (r) => {
    res.writeHead(r.statusCode, r.headers); // Set-Cookie passes through untouched
    r.pipe(res);
  });
  up.on('error', (e) => json(res, 502, { error: `the backend ${opt.backend} cannot be reached: ${e.message}` }));
  req.pipe(up);
}

const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, 'http://dev');
  const path = url.pathname;
  try {
    if (path === '/' || path === '/studio') {
      res.writeHead(302, { Location: '/studio/' });
      return res.end();
    }
    if (path === '/studio/' || path.startsWith('/studio/assets/')) {
      const a = (await current()).get(path);
      if (!a) return json(res, 404, { error: 'no such asset' });
      res.writeHead(200, { 'Content-Type': a.type, 'Cache-Control': 'no-store' });
      return res.end(a.body);
    }
    if (!opt['fake-session']) return proxy(req, res);
    if (path.startsWith('/studio/api/')) return await fakeStudioApi(req, res, path);
    if (!/^\/(admin|gateway|webapp|api)(\/|$)/.test(path)) return proxy(req, res);
    const s = cookieOf(req);
    if (!s) return json(res, 401, { error: 'admin credentials required' });
    if (req.method !== 'GET' && req.method !== 'HEAD' && req.headers['x-queryflux-csrf'] !== s.csrfToken) {
      return json(res, 403, { error: 'missing or wrong CSRF token' });
    }
    if (req.method === 'GET' && (path === '/admin/groups' || path === '/admin/queries/stats')) {
      return json(res, 200, await standIn(path, url.search));
    }
    return proxy(req, res, { authorization: basic });
  } catch (e) {
    console.error(e);
    json(res, 500, { error: `dev server: ${e.message}` });
  }
});

server.listen(Number(opt.port), opt.host, () => {
  console.log(`studio: http://${opt.host}:${opt.port}/studio/ -> ${opt.backend}${opt['fake-session'] ? ' (fake session, admin API with HTTP Basic)' : ''}`);
});
