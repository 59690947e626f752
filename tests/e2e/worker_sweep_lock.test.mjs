// Sweep locks on a control plane (POST /worker/sweep-lock/acquire,
// release, publish; GET /worker/sweep-lock/counts): one holder at a time,
// a fencing token that only grows, publishes only from the holder with its
// current token (counts of clusters the control plane does not know left
// out), every bad call refused with its status and changing nothing; and
// engine-reconcile itself, which the control plane's own reconciler takes,
// held by exactly one node of a control plane and a worker, as the
// worker's /worker/status shows, also for a worker up before its control
// plane. Ports 28100-28199.
//
// The control plane's reconciler holds "engine-reconcile" from its start
// (renewing it every monitor.taskDelay), so the holder-against-holder
// calls use a lock of their own: the lock table keeps any lock by name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { freshDatabase } from './support/database.mjs';
import { controlPlaneConfig, workerConfig, startNode, request, waitFor, SECRET, BASIC } from './support/workers.mjs';

const ENGINE = 'engine-reconcile';
const LOCK = 'e2e.sweep-lock';

async function controlPlane(t, trino, admin, { taskDelay = '1s' } = {}) {
  const url = await freshDatabase(t, 'qf_e2e_sweep');
  const cfg = controlPlaneConfig({ trino, admin, persistence: { type: 'postgres', url } });
  cfg.monitor.taskDelay = taskDelay;
  const cp = await startNode(cfg);
  t.after(() => cp.kill());
  // Ready may come before this replica owns the lease table (and its
  // locks): until then the calls answer 503 (try again).
  await waitFor(async () => (await counts(cp, LOCK, { raw: true })).status === 200,
    { timeoutMs: 20000, what: 'the control plane serving sweep locks' });
  return cp;
}

function sweep(cp, verb, body, { auth = 'bearer', method = 'POST' } = {}) {
  return cp.api(`/worker/sweep-lock/${verb}`, {
    method, auth, body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

async function ok(cp, verb, body) {
  const r = await sweep(cp, verb, body);
  assert.equal(r.status, 200, `${verb} ${JSON.stringify(body).slice(0, 200)}: ${r.text}`);
  return r.body;
}

/// A 409 notHeld, the error shape of capacity_routes' refusal().
async function notHeld(cp, verb, body, what) {
  const r = await sweep(cp, verb, body);
  const label = `${what}: ${verb} ${JSON.stringify(body).slice(0, 200)}: ${r.text}`;
  assert.equal(r.status, 409, label);
  assert.equal(r.body.code, 'notHeld', label);
  assert.equal(typeof r.body.error, 'string', label);
  assert.deepEqual(Object.keys(r.body).sort(), ['code', 'error'], label);
  return r.body;
}

async function counts(cp, name = LOCK, { raw = false } = {}) {
  const r = await cp.api(`/worker/sweep-lock/counts?name=${encodeURIComponent(name)}`, { auth: 'bearer' });
  if (raw) return r;
  assert.equal(r.status, 200, `counts of ${name}: ${r.text}`);
  return r.body.counts;
}

/// Counts without their ages (each checked to be a small number on its own).
function aged(list) {
  assert.ok(Array.isArray(list), JSON.stringify(list));
  return list.map(({ ageMs, ...rest }) => {
    assert.ok(Number.isInteger(ageMs) && ageMs >= 0 && ageMs < 60000, `ageMs ${ageMs}`);
    return rest;
  });
}

const acquire = (holder, ttlSecs = 60, name = LOCK) => ({ name, holder, ttlSecs });
const release = (holder, token, name = LOCK) => ({ name, holder, token });
const publish = (holder, token, list, name = LOCK) => ({ name, holder, token, counts: list });

/// An acquire refused to `holder`: who holds the lock instead.
async function refused(cp, holder, name = LOCK) {
  const a = await ok(cp, 'acquire', acquire(holder, 1, name)); // were it granted, soon free again
  assert.equal(a.granted, false, `${holder} was granted ${name}: ${JSON.stringify(a)}`);
  assert.equal(a.token, undefined, `a refusal carries no token: ${JSON.stringify(a)}`);
  assert.ok(a.expiresInMs > 0, JSON.stringify(a));
  return a;
}

test('one holder at a time; its publishes only, known clusters only; released, expired and taken over with a larger token', async (t) => {
  const cp = await controlPlane(t, 28100, 28101);

  // 1. A is granted the free lock; B is refused while A holds it.
  const a1 = await ok(cp, 'acquire', acquire('node-a', 30));
  assert.equal(a1.granted, true, JSON.stringify(a1));
  assert.equal(a1.holder, 'node-a');
  assert.ok(Number.isSafeInteger(a1.token) && a1.token > 0, `token ${a1.token}`);
  assert.ok(a1.expiresInMs > 25000 && a1.expiresInMs <= 30000, `expiresInMs ${a1.expiresInMs}`);
  assert.deepEqual(Object.keys(a1).sort(), ['expiresInMs', 'granted', 'holder', 'token']);
  const b1 = await refused(cp, 'node-b');
  assert.equal(b1.holder, 'node-a');
  assert.ok(b1.expiresInMs <= a1.expiresInMs, `${b1.expiresInMs} after ${a1.expiresInMs}`);

  // A again, with a longer TTL: the same token, its time to live started again.
  const a2 = await ok(cp, 'acquire', acquire('node-a', 120));
  assert.equal(a2.granted, true, JSON.stringify(a2));
  assert.equal(a2.token, a1.token, 'A keeps its token');
  assert.ok(a2.expiresInMs > 100000 && a2.expiresInMs <= 120000, `expiresInMs ${a2.expiresInMs}`);
  assert.equal((await refused(cp, 'node-b')).holder, 'node-a');
  const token = a1.token;

  // 2. A publishes: duck is the control plane's, nope is not and is left out.
  assert.deepEqual(await counts(cp), [], 'nothing published yet');
  const published = await ok(cp, 'publish',
    publish('node-a', token, [{ cluster: 'duck', running: 3 }, { cluster: 'nope', running: 5 }]));
  assert.deepEqual(Object.keys(published), ['counts']);
  const mine = [{ cluster: 'duck', running: 3, publisher: 'node-a' }];
  assert.deepEqual(aged(published.counts), mine);
  assert.deepEqual(aged(await counts(cp)), mine);
  assert.ok(!(await counts(cp, ENGINE)).some((c) => c.publisher === 'node-a'), 'another lock\'s counts are its own');

  // B cannot publish: not with A's token, not with one it makes up; nor can
  // A with a token it was not given. Nothing changes.
  await notHeld(cp, 'publish', publish('node-b', token, [{ cluster: 'duck', running: 9 }]), 'B with A\'s token');
  await notHeld(cp, 'publish', publish('node-b', token + 1, [{ cluster: 'duck', running: 9 }]), 'B with a made-up token');
  await notHeld(cp, 'publish', publish('node-b', 1, [{ cluster: 'duck', running: 9 }]), 'B with token 1');
  await notHeld(cp, 'publish', publish('node-a', token + 1, [{ cluster: 'duck', running: 9 }]), 'A with another token');
  await notHeld(cp, 'release', release('node-b', token), 'B releasing with A\'s token');
  await notHeld(cp, 'release', release('node-a', token - 1), 'A releasing with another token');
  assert.deepEqual(aged(await counts(cp)), mine, 'the refused publishes changed nothing');
  assert.equal((await refused(cp, 'node-b')).holder, 'node-a', 'the refused releases freed nothing');

  // An empty publish keeps what was published; a new one replaces duck's.
  assert.deepEqual(aged((await ok(cp, 'publish', publish('node-a', token, []))).counts), mine);
  const second = [{ cluster: 'duck', running: 4, publisher: 'node-a' }];
  assert.deepEqual(aged((await ok(cp, 'publish', publish('node-a', token, [{ cluster: 'duck', running: 4 }]))).counts), second);
  assert.deepEqual(aged(await counts(cp)), second);

  // 3. A releases: the lock is free, B takes it with a larger token; the
  // counts stay until the next holder publishes.
  assert.deepEqual(await ok(cp, 'release', release('node-a', token)), { released: true });
  await notHeld(cp, 'release', release('node-a', token), 'A releasing twice');
  await notHeld(cp, 'publish', publish('node-a', token, [{ cluster: 'duck', running: 8 }]), 'A publishing after its release');
  assert.deepEqual(aged(await counts(cp)), second);
  const b2 = await ok(cp, 'acquire', acquire('node-b', 60));
  assert.equal(b2.granted, true, JSON.stringify(b2));
  assert.equal(b2.holder, 'node-b');
  assert.ok(b2.token > token, `B's token ${b2.token} after A's ${token}`);
  assert.equal((await refused(cp, 'node-a')).holder, 'node-b');
  await notHeld(cp, 'release', release('node-a', token), 'A releasing B\'s lock with its old token');
  await notHeld(cp, 'publish', publish('node-a', token, [{ cluster: 'duck', running: 8 }]), 'A publishing with its old token');
  assert.deepEqual(aged(await counts(cp)), second);
  const third = [{ cluster: 'duck', running: 1, publisher: 'node-b' }];
  assert.deepEqual(aged((await ok(cp, 'publish', publish('node-b', b2.token, [{ cluster: 'duck', running: 1 }]))).counts), third);
  assert.deepEqual(aged(await counts(cp)), third);
  assert.deepEqual(await ok(cp, 'release', release('node-b', b2.token)), { released: true });

  // A lock that expires is free: its holder's token no longer publishes
  // (a paused holder cannot overwrite its successor's counts).
  const c1 = await ok(cp, 'acquire', acquire('node-c', 1));
  assert.equal(c1.granted, true, JSON.stringify(c1));
  assert.ok(c1.token > b2.token, `C's token ${c1.token} after B's ${b2.token}`);
  const d1 = await waitFor(async () => {
    const d = await ok(cp, 'acquire', acquire('node-d', 60));
    return d.granted && d;
  }, { timeoutMs: 5000, intervalMs: 100, what: 'C\'s lock to expire and D to take it' });
  assert.equal(d1.holder, 'node-d');
  assert.ok(d1.token > c1.token, `D's token ${d1.token} after C's ${c1.token}`);
  await notHeld(cp, 'publish', publish('node-c', c1.token, [{ cluster: 'duck', running: 6 }]), 'C after its lock expired');
  await notHeld(cp, 'release', release('node-c', c1.token), 'C releasing after its lock expired');
  assert.deepEqual(aged(await counts(cp)), third);
  // C acquiring again now is refused: D holds it.
  assert.equal((await refused(cp, 'node-c')).holder, 'node-d');
});

test('every bad sweep-lock call is refused with its status, and the lock and its counts do not change', async (t) => {
  const cp = await controlPlane(t, 28110, 28111);
  const a = await ok(cp, 'acquire', acquire('node-a', 600));
  assert.equal(a.granted, true, JSON.stringify(a));
  const token = a.token;
  const mine = [{ cluster: 'duck', running: 2, publisher: 'node-a' }];
  assert.deepEqual(aged((await ok(cp, 'publish', publish('node-a', token, [{ cluster: 'duck', running: 2 }]))).counts), mine);

  // Each would change the lock or its counts if it were applied.
  const without = (o, key) => { const c = { ...o }; delete c[key]; return c; };
  const acq = (over = {}) => ({ ...acquire('node-b', 60), ...over });
  const rel = (over = {}) => ({ ...release('node-a', token), ...over });
  const pub = (over = {}) => ({ ...publish('node-a', token, [{ cluster: 'duck', running: 7 }]), ...over });
  const many = Array.from({ length: 1025 }, (_, i) => ({ cluster: `c${i}`, running: 1 }));
  const bad = [
    // [what, verb, body, status, message pattern, auth]
    ['no credentials', 'release', rel(), 401, null, null],
    ['no credentials', 'publish', pub(), 401, null, null],
    ['no credentials', 'acquire', acq(), 401, null, null],
    ['a wrong secret', 'release', rel(), 401, null, 'Bearer not-the-secret-0123456789'],
    ['a wrong secret', 'publish', pub(), 401, null, 'Bearer not-the-secret-0123456789'],
    ['a wrong secret', 'acquire', acq(), 401, null, 'Bearer not-the-secret-0123456789'],
    ['the secret without Bearer', 'release', rel(), 401, null, SECRET],
    ['the secret with another scheme', 'publish', pub(), 401, null, `Token ${SECRET}`],
    ['admin Basic credentials', 'acquire', acq(), 401, null, BASIC],
    ['not JSON', 'acquire', '{"name":', 400, /JSON object/],
    ['not JSON', 'release', 'release it', 400, /JSON object/],
    ['an empty body', 'publish', '', 400, /JSON object/],
    ['not an object', 'acquire', '[1,2]', 400, /JSON object/],
    ['nested too deep', 'publish', pub({ x: [[[[1]]]] }), 400, /nests too deep/],
    ['no name', 'acquire', without(acq(), 'name'), 400, /^name/],
    ['a bad lock name', 'release', rel({ name: 'e2e sweep' }), 400, /^name/],
    ['a lock name of 129', 'acquire', acq({ name: 'x'.repeat(129) }), 400, /^name/],
    ['a numeric name', 'publish', pub({ name: 7 }), 400, /^name/],
    ['no holder', 'acquire', without(acq(), 'holder'), 400, /^holder/],
    ['a bad holder name', 'release', rel({ holder: 'node a' }), 400, /^holder/],
    ['an empty holder', 'publish', pub({ holder: '' }), 400, /^holder/],
    ['no ttlSecs', 'acquire', without(acq(), 'ttlSecs'), 400, /^ttlSecs/],
    ['ttlSecs 0', 'acquire', acq({ ttlSecs: 0 }), 400, /^ttlSecs/],
    ['ttlSecs 3601', 'acquire', acq({ ttlSecs: 3601 }), 400, /^ttlSecs/],
    ['ttlSecs -1', 'acquire', acq({ ttlSecs: -1 }), 400, /^ttlSecs/],
    ['ttlSecs 1.5', 'acquire', acq({ ttlSecs: 1.5 }), 400, /^ttlSecs/],
    ['a string ttlSecs', 'acquire', acq({ ttlSecs: '60' }), 400, /^ttlSecs/],
    ['no token', 'release', without(rel(), 'token'), 400, /^token/],
    ['token 0', 'release', rel({ token: 0 }), 400, /^token/],
    ['a string token', 'release', rel({ token: String(token) }), 400, /^token/],
    ['no token', 'publish', without(pub(), 'token'), 400, /^token/],
    ['a negative token', 'publish', pub({ token: -token }), 400, /^token/],
    ['no counts', 'publish', without(pub(), 'counts'), 400, /^counts/],
    ['counts not a list', 'publish', pub({ counts: { duck: 7 } }), 400, /^counts/],
    ['1025 counts', 'publish', pub({ counts: many }), 400, /^counts/],
    ['a count without its cluster', 'publish', pub({ counts: [{ running: 7 }] }), 400, /^counts\[0\]\.cluster/],
    ['a count not an object', 'publish', pub({ counts: [7] }), 400, /^counts\[0\]\.cluster/],
    ['running -1', 'publish', pub({ counts: [{ cluster: 'duck', running: -1 }] }), 400, /^counts\[0\]\.running/],
    ['running 1000001', 'publish', pub({ counts: [{ cluster: 'duck', running: 1000001 }] }), 400, /^counts\[0\]\.running/],
    ['a string running', 'publish', pub({ counts: [{ cluster: 'duck', running: '7' }] }), 400, /^counts\[0\]\.running/],
    ['no running', 'publish', pub({ counts: [{ cluster: 'duck' }] }), 400, /^counts\[0\]\.running/],
    ['duck twice', 'publish', pub({ counts: [{ cluster: 'duck', running: 7 }, { cluster: 'duck', running: 8 }] }), 400, /^counts\[1\]\.cluster: duck is listed twice/],
    ['over 256 KiB', 'acquire', acq({ pad: 'x'.repeat(300 * 1024) }), 413, /256 KiB/],
    ['over 256 KiB', 'release', rel({ pad: 'x'.repeat(256 * 1024) }), 413, /256 KiB/],
    ['over 256 KiB', 'publish', pub({ pad: 'x'.repeat(300 * 1024) }), 413, /256 KiB/],
  ];
  for (const [what, verb, body, status, message = null, auth = 'bearer'] of bad) {
    const r = await sweep(cp, verb, body, { auth });
    const label = `${verb}, ${what}: ${r.status} ${r.text.slice(0, 300)}`;
    assert.equal(r.status, status, label);
    if (status === 401) {
      assert.match(String(r.headers['www-authenticate']), /^Bearer/, label);
      continue;
    }
    assert.deepEqual(Object.keys(r.body), ['error'], label);
    assert.match(r.body.error, message, label);
  }

  // The wrong method on each verb, and paths that are no verb.
  const methods = [['GET', 'acquire'], ['GET', 'release'], ['GET', 'publish'], ['PUT', 'acquire'],
    ['DELETE', 'release'], ['POST', 'counts'], ['PUT', 'counts']];
  for (const [method, verb] of methods) {
    const r = await sweep(cp, verb, method === 'GET' ? undefined : JSON.stringify(rel()), { method });
    assert.equal(r.status, 405, `${method} ${verb}: ${r.text}`);
    assert.match(r.body.error, verb === 'counts' ? /use GET/ : /use POST/, `${method} ${verb}`);
  }
  for (const path of ['/worker/sweep-lock/other', '/worker/sweep-lock/Acquire', '/worker/sweep-lock',
    '/worker/sweep-lock/acquire/x', '/worker/sweep-lock/release/all']) {
    for (const method of ['POST', 'GET']) {
      const r = await cp.api(path, { method, auth: 'bearer', body: method === 'POST' ? JSON.stringify(rel()) : undefined });
      assert.equal(r.status, 404, `${method} ${path}: ${r.text}`);
      assert.equal(typeof r.body.error, 'string', `${method} ${path}`);
    }
  }
  // Without credentials even a path that is no verb is refused first.
  assert.equal((await cp.api('/worker/sweep-lock/other', { method: 'POST', auth: null, body: '{}' })).status, 401);
  assert.equal((await cp.api(`/worker/sweep-lock/counts?name=${LOCK}`, { auth: null })).status, 401);
  assert.equal((await cp.api(`/worker/sweep-lock/counts?name=${LOCK}`, { auth: 'Bearer nope' })).status, 401);
  assert.equal((await cp.api(`/worker/sweep-lock/counts?name=${LOCK}`, { auth: BASIC })).status, 401);
  // A bad lock name to count: 400; a lock nobody published under: none.
  for (const q of ['name=e2e%20sweep', 'name=', `name=${'x'.repeat(129)}`, 'name=a/b']) {
    const r = await cp.api(`/worker/sweep-lock/counts?${q}`, { auth: 'bearer' });
    assert.equal(r.status, 400, `counts?${q}: ${r.text}`);
    assert.match(r.body.error, /^name/, `counts?${q}`);
  }
  assert.deepEqual(await counts(cp, 'nobody-published-here'), []);

  // Nothing changed: A holds the lock with its token, its counts stand, and
  // the node serves; a body just under the limit is served.
  assert.equal((await cp.api('/health', { auth: null })).status, 200);
  const b = await refused(cp, 'node-b');
  assert.equal(b.holder, 'node-a');
  assert.ok(b.expiresInMs > 500000, `A's TTL was not touched: ${b.expiresInMs}`);
  assert.deepEqual(aged(await counts(cp)), mine);
  const again = await ok(cp, 'acquire', { ...acquire('node-a', 600), pad: 'x'.repeat(250 * 1024) });
  assert.equal(again.granted, true, JSON.stringify(again));
  assert.equal(again.token, token);
  const last = [{ cluster: 'duck', running: 5, publisher: 'node-a' }];
  assert.deepEqual(aged((await ok(cp, 'publish', publish('node-a', token, [{ cluster: 'duck', running: 5 }]))).counts), last);
  assert.deepEqual(await ok(cp, 'release', release('node-a', token)), { released: true });
  const fresh = await ok(cp, 'acquire', acquire('node-b', 60));
  assert.equal(fresh.granted, true, JSON.stringify(fresh));
  assert.ok(fresh.token > token, `${fresh.token} after ${token}`);
});

test('engine-reconcile: exactly one of the control plane and its worker holds it, as the worker\'s /worker/status shows', async (t) => {
  const cp = await controlPlane(t, 28120, 28121, { taskDelay: '300ms' });

  // The control plane serves no /worker/status of its own (its /worker/* is
  // the worker API: a bearer token, then no such resource).
  const own = await cp.api('/worker/status', { auth: 'bearer' });
  assert.equal(own.status, 404, own.text);
  assert.equal((await cp.api('/worker/status', { auth: null })).status, 401);

  // No monitor section of its own: the snapshot's taskDelay times it.
  const wcfg = workerConfig({ name: 'sweeper', ops: 28130, trino: 28131, cp: cp.adminUrl });
  const w = await startNode(wcfg);
  t.after(() => w.kill());
  // The worker's ops port serves its status, but no sweep locks.
  const lockOnWorker = await request(`${w.adminUrl}/worker/sweep-lock/acquire`, {
    method: 'POST', headers: { Authorization: `Bearer ${SECRET}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(acquire('probe', 1, ENGINE)),
  });
  assert.equal(lockOnWorker.status, 404, lockOnWorker.text);

  // Who holds engine-reconcile, by a probe the control plane refuses (a
  // probe that is granted, while the lock is between holders, gives it
  // straight back and looks again).
  let probes = 0;
  const holderNow = async () => {
    const p = await ok(cp, 'acquire', acquire(`probe-${++probes}`, 1, ENGINE));
    if (p.granted) {
      await ok(cp, 'release', release(p.holder, p.token, ENGINE));
      return null;
    }
    return p.holder;
  };

  // Both nodes settle: the worker knows the holder, and it is the one the
  // lock table names.
  let view;
  await waitFor(async () => {
    const s = await w.status();
    const r = s.coordination?.engineReconcile;
    if (!r || r.lockHolder === null || r.lastError !== null) return false;
    const holder = await holderNow();
    const again = (await w.status()).coordination.engineReconcile;
    if (holder === null || again.lockHolder !== holder) return false;
    view = { holder, worker: again };
    return true;
  }, { timeoutMs: 20000, intervalMs: 100, what: 'the worker\'s view of engine-reconcile' });

  const { holder, worker } = view;
  // Renewed every 300 ms with a TTL of three intervals (at least 3 s).
  const held = await refused(cp, 'probe-ttl', ENGINE);
  assert.equal(held.holder, holder);
  assert.ok(held.expiresInMs <= 3000, `engine-reconcile is held for ${held.expiresInMs} ms: ${JSON.stringify(held)}`);
  assert.deepEqual(Object.keys(worker).sort(), ['counting', 'failures', 'holdsLock', 'lastError', 'lockHolder']);
  assert.equal(typeof worker.counting, 'boolean');
  assert.ok(Number.isInteger(worker.failures) && worker.failures >= 0, JSON.stringify(worker));
  const cpHolds = holder.startsWith('control-plane-');
  assert.ok(cpHolds || holder === 'sweeper', `the holder ${holder} is one of the two nodes`);
  // Exactly one holds it: the worker holds it exactly when the table names it.
  assert.equal(worker.holdsLock, !cpHolds, JSON.stringify({ holder, worker }));
  // The holder asks the engines; any other node reads what it published.
  assert.equal(worker.counting, !cpHolds, JSON.stringify({ holder, worker }));

  // It stays with its holder while that one renews (a TTL of 3 s, taken
  // again every 300 ms): through three renewals (the time it has left
  // going up again) the table names the same holder and never lets a
  // probe have it.
  let renewals = 0;
  let left = Infinity;
  const answers = [];
  await waitFor(async () => {
    const r = await sweep(cp, 'acquire', acquire('probe-steady', 1, ENGINE));
    answers.push(r.text);
    if (r.status !== 200 || r.body.granted !== false || r.body.holder !== holder) return true; // checked below
    if (r.body.expiresInMs > left) renewals += 1;
    left = r.body.expiresInMs;
    return renewals >= 3;
  }, { timeoutMs: 10000, intervalMs: 50, what: 'three renewals of engine-reconcile' });
  for (const text of answers) {
    assert.deepEqual(Object.keys(JSON.parse(text)).sort(), ['expiresInMs', 'granted', 'holder'], text);
    assert.equal(JSON.parse(text).holder, holder, `the lock changed hands: ${text}`);
  }
  assert.equal(renewals, 3, answers.join('\n'));

  // Not the holder, nobody else can publish under engine-reconcile; the
  // published counts (if any) do not change.
  await notHeld(cp, 'publish', publish('probe', 1, [{ cluster: 'duck', running: 99 }], ENGINE), 'a probe publishing engine counts');
  await notHeld(cp, 'release', release(holder, 1, ENGINE), 'releasing the holder\'s lock with a made-up token');
  const after = aged(await counts(cp, ENGINE));
  assert.ok(after.every((c) => c.publisher === holder && c.running !== 99), JSON.stringify(after));
  assert.equal(await holderNow(), holder);
  const status = (await w.status()).coordination.engineReconcile;
  assert.equal(status.lockHolder, holder);
  assert.equal(status.holdsLock, !cpHolds);
});

// A worker up before its control plane: with no snapshot it has nothing
// to count and no interval to hold the lock for, so it does not ask for
// it; once the snapshot is active its reconciler runs on the snapshot's
// taskDelay (300 ms), not on the worker's own default minute, and the lock
// lives three of those intervals (at least 3 s), not three minutes.
test('engine-reconcile: a worker started before its control plane reconciles within a few of the snapshot\'s intervals',
  async (t) => {
    const cpPorts = { trino: 28140, admin: 28141 };
    const w = await startNode(workerConfig({ name: 'early', ops: 28150, trino: 28151, cp: `http://127.0.0.1:${cpPorts.admin}` }),
      { wait: 'health' });
    t.after(() => w.kill());
    await waitFor(async () => (await w.status()).consecutiveFailures >= 1,
      { what: 'the worker\'s first config poll failing' });
    const before = (await w.status()).coordination.engineReconcile;
    assert.equal(before.holdsLock, false);
    assert.equal(before.lockHolder, null, JSON.stringify(before));

    const cp = await controlPlane(t, cpPorts.trino, cpPorts.admin, { taskDelay: '300ms' });
    await waitFor(async () => (await w.status()).ready, { timeoutMs: 20000, what: 'the worker ready' });
    await waitFor(async () => {
      const r = (await w.status()).coordination.engineReconcile;
      return r.lastError === null && r.lockHolder !== null;
    }, { timeoutMs: 10000, intervalMs: 100, what: 'the worker reconciling through the control plane (300 ms ticks)' });
    const probe = await refused(cp, 'probe', ENGINE);
    assert.equal((await w.status()).coordination.engineReconcile.lockHolder, probe.holder);
    assert.ok(probe.expiresInMs <= 3000, `the lock lives ${probe.expiresInMs} ms`);
  });
