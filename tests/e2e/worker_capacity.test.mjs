// Capacity leases on a standalone control plane (POST /worker/capacity/
// acquire, release, renew): every bad call is refused with its status and
// code and changes nothing; grants, denials, repeats, waiting acquires and
// releases against the group's limit, which leases share with the control
// plane's own queries; a new incarnation's renew frees what the previous
// one held. Ports 27600-27699.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runRaw, parseMetrics, metricValue } from './support/gateway.mjs';
import { controlPlaneConfig, startNode, waitFor, SECRET, BASIC } from './support/workers.mjs';

const HB = 3600; // the renews' heartbeat interval: no lease expires during a test

/// The control plane with a second cluster in a second group (h), so
/// that duck is not a member of every group.
async function controlPlane(t, trino, admin) {
  const cfg = controlPlaneConfig({ trino, admin, role: 'standalone' });
  cfg.clusters.lite = { engine: 'duckDb' };
  cfg.clusterGroups.h = { members: ['lite'], maxRunningQueries: 1 };
  const cp = await startNode(cfg);
  t.after(() => cp.kill());
  return { cp, cfg };
}

function lease(cp, verb, body, auth = 'bearer') {
  return cp.api(`/worker/capacity/${verb}`, {
    method: 'POST', auth, body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

const who = (worker, seq, incarnation = 'i-1') => ({ worker, incarnation, seq });
const want = (count, cluster = 'duck', group = 'g') => [{ cluster, group, count }];
const hold = (count) => (count ? [{ cluster: 'duck', count }] : []);

async function ok(cp, verb, body) {
  const r = await lease(cp, verb, body);
  assert.equal(r.status, 200, `${verb} ${JSON.stringify(body)}: ${r.text}`);
  return r;
}

/// The fleet's running count on duck (worker leases plus the control plane's own queries).
async function running(cp) {
  const r = await cp.api('/admin/clusters/duck');
  assert.equal(r.status, 200, r.text);
  return r.body.runningQueries;
}

/// What /admin/workers/{name} shows as the worker's leases, after a heartbeat.
async function leasesOf(cp, name) {
  const report = JSON.stringify({
    name, labels: {}, version: '0.1.0', incarnation: 'i-1', downloadedRevision: null, activeRevision: null,
    lastError: null, coordinationMode: 'controlPlane', configSource: null, status: 'active', heartbeatIntervalSecs: 10,
  });
  const beat = await cp.api('/worker/heartbeat', { method: 'POST', auth: 'bearer', body: report });
  assert.equal(beat.status, 200, beat.text);
  const r = await cp.api(`/admin/workers/${name}`);
  assert.equal(r.status, 200, r.text);
  return r.body.leases;
}

/// The slots the worker leases on duck; it must have a lease session.
async function held(cp, name) {
  const leases = await leasesOf(cp, name);
  assert.ok(leases !== null && typeof leases === 'object', `${name} has a lease session: ${JSON.stringify(leases)}`);
  return leases.duck ?? 0;
}

/// An answer without its `contended` list (checked on its own where it matters).
function bare(body) {
  const { contended, ...rest } = body;
  assert.ok(Array.isArray(contended), `contended: ${JSON.stringify(body)}`);
  return rest;
}

/// The fair share an answer gives on duck, or null when duck is not contended.
function shareOf(body) {
  const c = body.contended.find((x) => x.cluster === 'duck');
  return c ? c.share : null;
}

test('every bad capacity call is refused with its status and code, and nothing changes', async (t) => {
  const { cp } = await controlPlane(t, 27600, 27601);
  assert.deepEqual(bare((await ok(cp, 'renew', { ...who('w1', 1), heartbeatIntervalSecs: HB, holding: hold(2) })).body),
    { leaseTtlSecs: 3 * HB });
  await ok(cp, 'renew', { ...who('w1', 5), heartbeatIntervalSecs: HB, holding: hold(2) }); // the last seq is 5
  assert.equal(await held(cp, 'w1'), 2);
  assert.equal(await running(cp), 2);

  // Each would free w1's slots (renews to nothing, releases) or take more if applied.
  const renew = (over = {}) => ({ ...who('w1', 6), heartbeatIntervalSecs: HB, holding: [], ...over });
  const release = (over = {}) => ({ ...who('w1', 6), releases: hold(1), ...over });
  const acquire = (over = {}) => ({ ...who('w1', 6), requests: want(1), ...over });
  const without = (o, key) => { const c = { ...o }; delete c[key]; return c; };
  const bad = [
    // [what, verb, body, status, code, auth]
    ['no credentials', 'renew', renew(), 401, null, null],
    ['a wrong secret', 'renew', renew(), 401, null, 'Bearer not-the-secret-0123456789'],
    ['the secret without Bearer', 'release', release(), 401, null, SECRET],
    ['admin Basic credentials', 'renew', renew(), 401, null, BASIC],
    ['admin Basic credentials', 'release', release(), 401, null, BASIC],
    ['admin Basic credentials', 'acquire', acquire(), 401, null, BASIC],
    ['not JSON', 'renew', '{"worker":', 400],
    ['not an object', 'release', '[1,2]', 400],
    ['no worker', 'renew', without(renew(), 'worker'), 400],
    ['a bad worker name', 'release', release({ worker: 'w 1' }), 400],
    ['no incarnation', 'renew', without(renew(), 'incarnation'), 400],
    ['no seq', 'release', without(release(), 'seq'), 400],
    ['seq 0', 'renew', renew({ seq: 0 }), 400],
    ['a string seq', 'release', release({ seq: '6' }), 400],
    ['no holding', 'renew', without(renew(), 'holding'), 400],
    ['no releases', 'release', without(release(), 'releases'), 400],
    ['no requests', 'acquire', without(acquire(), 'requests'), 400],
    ['heartbeatIntervalSecs 0', 'renew', renew({ heartbeatIntervalSecs: 0 }), 400],
    ['heartbeatIntervalSecs 3601', 'renew', renew({ heartbeatIntervalSecs: 3601 }), 400],
    ['waitMs 1001', 'acquire', acquire({ waitMs: 1001 }), 400],
    ['a negative count', 'renew', renew({ holding: [{ cluster: 'duck', count: -1 }] }), 400],
    ['count 0', 'release', release({ releases: [{ cluster: 'duck', count: 0 }] }), 400],
    ['count 0', 'acquire', acquire({ requests: want(0) }), 400],
    ['count 100001', 'acquire', acquire({ requests: want(100001) }), 400],
    ['a fractional count', 'release', release({ releases: [{ cluster: 'duck', count: 1.5 }] }), 400],
    ['a string count', 'release', release({ releases: [{ cluster: 'duck', count: '1' }] }), 400],
    ['no group', 'acquire', acquire({ requests: [{ cluster: 'duck', count: 1 }] }), 400],
    ['duck twice', 'renew', renew({ holding: [{ cluster: 'duck', count: 0 }, { cluster: 'duck', count: 0 }] }), 400],
    ['duck twice', 'release', release({ releases: [...hold(1), ...hold(1)] }), 400],
    ['duck twice', 'acquire', acquire({ requests: [...want(1), ...want(1)] }), 400],
    ['over 256 KiB', 'renew', renew({ pad: 'x'.repeat(300 * 1024) }), 413],
    ['an unknown cluster', 'acquire', acquire({ requests: want(1, 'nope') }), 400, 'unknownName'],
    ['an unknown group', 'acquire', acquire({ requests: want(1, 'duck', 'nope') }), 400, 'unknownName'],
    ['duck outside its group', 'acquire', acquire({ requests: want(1, 'duck', 'h') }), 400, 'unknownName'],
    ['more than held', 'release', release({ releases: hold(3) }), 409, 'notHeld'],
    ['a stale seq', 'renew', renew({ seq: 4 }), 409, 'staleCall'],
    ['a stale seq', 'release', release({ seq: 4 }), 409, 'staleCall'],
    ['a stale seq', 'acquire', acquire({ seq: 4 }), 409, 'staleCall'],
    ['an unknown worker', 'release', release({ worker: 'w9' }), 409, 'unknownSession'],
    ['an unknown worker', 'acquire', acquire({ worker: 'w9' }), 409, 'unknownSession'],
    ['another incarnation', 'release', release({ incarnation: 'i-0' }), 409, 'unknownSession'],
    ['another incarnation', 'acquire', acquire({ incarnation: 'i-0' }), 409, 'unknownSession'],
  ];
  for (const [what, verb, body, status, code = null, auth = 'bearer'] of bad) {
    const r = await lease(cp, verb, body, auth);
    const label = `${verb}, ${what}: ${r.text.slice(0, 300)}`;
    assert.equal(r.status, status, label);
    if (status === 401) {
      assert.match(String(r.headers['www-authenticate']), /^Bearer/, label);
      continue;
    }
    assert.equal(typeof r.body?.error, 'string', label);
    assert.equal(r.body.code, code ?? undefined, label);
  }
  for (const verb of ['acquire', 'release', 'renew']) {
    assert.equal((await cp.api(`/worker/capacity/${verb}`, { auth: 'bearer' })).status, 405, `GET ${verb}`);
  }
  for (const path of ['/worker/capacity/other', '/worker/capacity', '/worker/capacity/acquire/x']) {
    assert.equal((await cp.api(path, { method: 'POST', auth: 'bearer', body: '{}' })).status, 404, path);
  }

  // Nothing changed: w1 holds its 2, its seq 6 is still unused, and the node serves.
  assert.equal(await held(cp, 'w1'), 2);
  assert.equal(await running(cp), 2);
  assert.equal((await lease(cp, 'acquire', { ...who('w9', 1), requests: want(1) })).body.code, 'unknownSession');
  assert.equal(await leasesOf(cp, 'w9'), null, 'no session for w9');
  assert.deepEqual((await runRaw(cp.trinoUrl, 'SELECT v FROM t')).data, [[42]]);
  assert.equal(await running(cp), 2, 'the query gave its slot back');
  assert.deepEqual(bare((await ok(cp, 'release', { ...who('w1', 6), releases: hold(2) })).body), { released: true });
  assert.equal(await held(cp, 'w1'), 0);
  assert.equal(await running(cp), 0);
});

test('grants and denials against the group limit; repeats, waits, releases; a new incarnation frees the old one\'s slots', async (t) => {
  const { cp, cfg } = await controlPlane(t, 27610, 27611);
  const L = (await cp.api('/admin/clusters/duck')).body.maxRunningQueries;
  assert.equal(L, cfg.clusterGroups.g.maxRunningQueries);
  assert.ok(L >= 2, `limit ${L}`);
  for (const w of ['w1', 'w2', 'probe']) await ok(cp, 'renew', { ...who(w, 1), heartbeatIntervalSecs: HB, holding: [] });

  // Right after start the table grants nothing (its grace period for
  // renewals): wait until a probe's waiting acquire is granted, then give it back.
  let probeSeq = 1;
  await waitFor(async () => {
    const r = await ok(cp, 'acquire', { ...who('probe', ++probeSeq), requests: want(1), waitMs: 1000 });
    return r.body.granted.length === 1;
  }, { timeoutMs: 40000, what: 'the lease table granting' });
  await ok(cp, 'release', { ...who('probe', ++probeSeq), releases: hold(1) });
  assert.equal(await running(cp), 0);

  // L+1 for w1: L granted, 1 denied.
  const first = await ok(cp, 'acquire', { ...who('w1', 2), requests: want(L + 1), waitMs: 0 });
  assert.deepEqual(bare(first.body), {
    granted: [{ cluster: 'duck', count: L }],
    denied: [{ cluster: 'duck', group: 'g', count: 1, running: L, max: L }],
    leaseTtlSecs: 3 * HB,
  });
  assert.equal(await running(cp), L);
  const w2denied = await ok(cp, 'acquire', { ...who('w2', 2), requests: want(1) });
  assert.deepEqual(bare(w2denied.body), {
    granted: [], denied: [{ cluster: 'duck', group: 'g', count: 1, running: L, max: L }], leaseTtlSecs: 3 * HB,
  });
  // Both want slots on duck now: each one's fair share is at most half.
  assert.ok(shareOf(first.body) >= 1 && shareOf(first.body) <= L, JSON.stringify(first.body));
  const share = shareOf(w2denied.body);
  assert.ok(share >= 1 && share <= Math.ceil(L / 2), `share ${share} of ${L}`);

  // A repeat of w1's acquire: the same answer, nothing taken twice.
  const again = await ok(cp, 'acquire', { ...who('w1', 2), requests: want(L + 1), waitMs: 0 });
  assert.equal(again.text, first.text);
  assert.equal(await running(cp), L);
  assert.equal(await held(cp, 'w1'), L);
  assert.equal(await held(cp, 'w2'), 0);

  // w1 gives one back; w2 gets it.
  assert.deepEqual(bare((await ok(cp, 'release', { ...who('w1', 3), releases: hold(1) })).body), { released: true });
  assert.equal(await running(cp), L - 1);
  assert.deepEqual((await ok(cp, 'acquire', { ...who('w2', 3), requests: want(1) })).body.granted, [{ cluster: 'duck', count: 1 }]);
  assert.equal(await running(cp), L);

  // A waiting acquire is answered the moment w1 releases another slot.
  const denials = async () => metricValue(parseMetrics((await cp.api('/metrics', { auth: null })).text),
    'queryflux_capacity_lease_denied_total', { cluster_group: 'g' }) ?? 0;
  const before = await denials();
  const sentAt = Date.now();
  let answeredAt = null;
  const waiting = lease(cp, 'acquire', { ...who('w2', 4), requests: want(1), waitMs: 1000 })
    .then((r) => { answeredAt = Date.now(); return r; });
  // Its first try counts a denial before it waits: it is parked now.
  await waitFor(async () => (await denials()) > before, { intervalMs: 10, what: 'the acquire parked' });
  assert.equal(answeredAt, null, 'the acquire waits while nothing is free');
  await ok(cp, 'release', { ...who('w1', 4), releases: hold(1) });
  const woken = await waiting;
  assert.equal(woken.status, 200, woken.text);
  assert.deepEqual(bare(woken.body), { granted: [{ cluster: 'duck', count: 1 }], denied: [], leaseTtlSecs: 3 * HB });
  assert.ok(answeredAt - sentAt < 1000, `answered after ${answeredAt - sentAt} ms, before its 1000 ms wait ended`);
  assert.equal(await running(cp), L);
  assert.equal(await held(cp, 'w1'), L - 2);
  assert.equal(await held(cp, 'w2'), 2);

  // Releasing more than held is refused and changes nothing.
  const over = await lease(cp, 'release', { ...who('w1', 5), releases: hold(L - 1) });
  assert.equal(over.status, 409, over.text);
  assert.equal(over.body.code, 'notHeld');
  assert.equal(await running(cp), L);
  assert.equal(await held(cp, 'w1'), L - 2);
  assert.equal(await held(cp, 'w2'), 2);

  // w2 restarts: its new incarnation's renew frees what the old one held.
  await ok(cp, 'renew', { ...who('w2', 1, 'i-2'), heartbeatIntervalSecs: HB, holding: [] });
  assert.equal(await running(cp), L - 2);
  assert.equal(await held(cp, 'w2'), 0);
  const old = await lease(cp, 'release', { ...who('w2', 5), releases: hold(1) });
  assert.equal(old.status, 409, old.text);
  assert.equal(old.body.code, 'unknownSession');
  const regained = await ok(cp, 'acquire', { ...who('w2', 2, 'i-2'), requests: want(3) });
  assert.deepEqual(regained.body.granted, [{ cluster: 'duck', count: 2 }]);
  assert.equal(regained.body.denied[0].count, 1);
  assert.equal(await running(cp), L);

  // The control plane's own query waits behind the leases, and runs on the slot w2 gives back.
  const query = runRaw(cp.trinoUrl, 'SELECT v FROM t');
  await waitFor(async () => (await cp.api('/admin/clusters/duck')).body.queuedQueries === 1, { what: 'the query queued' });
  assert.equal(await running(cp), L);
  await ok(cp, 'release', { ...who('w2', 3, 'i-2'), releases: hold(1) });
  assert.deepEqual((await query).data, [[42]]);
  await waitFor(async () => (await running(cp)) === L - 1, { what: 'the query\'s slot back' });
});
