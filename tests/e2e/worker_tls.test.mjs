// A control plane whose admin port speaks TLS only: a worker that trusts its
// CA and names its host syncs; one that names another host, or trusts only
// the system CAs, does not. And a worker refuses plain http:// unless told
// allowInsecureHttp. Ports 27600-27899.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  controlPlaneConfig, workerConfig, startNode, request, waitFor, servedRevision, waitForRevision,
  trinoValue, localhostCA,
} from './support/workers.mjs';

test('TLS to the control plane: the certificate and the host name are verified', async (t) => {
  const pki = localhostCA(t);
  const cp = await startNode(controlPlaneConfig({ trino: 27600, admin: 27601, role: 'standalone', tls: pki }), { caFile: pki.ca });
  t.after(() => cp.kill());
  assert.equal(cp.adminUrl, 'https://localhost:27601');
  const rev = await servedRevision(cp);

  // HTTPS only: a plain HTTP request gets no admin answer.
  const plain = await request('http://127.0.0.1:27601/readyz', { timeoutMs: 3000 }).then((r) => r, (e) => e);
  assert.ok(plain instanceof Error || plain.status !== 200, `plain HTTP answered ${plain.status}: ${plain.text}`);

  const good = await startNode(workerConfig({ name: 'trusting', ops: 27610, trino: 27611, cp: 'https://localhost:27601', caFile: pki.ca }));
  t.after(() => good.kill());
  await waitForRevision(good, rev, { ready: true });
  assert.equal((await good.status()).consecutiveFailures, 0);
  assert.deepEqual(await trinoValue(good), [[42]]);

  const refused = async (w, what) => {
    const s = await waitFor(async () => {
      const st = await w.status();
      return st.consecutiveFailures > 0 && st.lastError && st;
    }, { what: `${what}: a failed sync` });
    assert.match(s.lastError, /tls|ssl|handshake|certificate/i, `${what}: ${s.lastError}`);
    assert.equal(s.activeRevision, null, what);
    assert.equal(s.ready, false, what);
    assert.equal((await request(`${w.adminUrl}/readyz`)).status, 503, what);
  };
  const wrongHost = await startNode(workerConfig({ name: 'by-ip', ops: 27620, trino: 27621, cp: 'https://127.0.0.1:27601', caFile: pki.ca }), { wait: 'health' });
  t.after(() => wrongHost.kill());
  const systemCAs = await startNode(workerConfig({ name: 'system-cas', ops: 27630, trino: 27631, cp: 'https://localhost:27601' }), { wait: 'health' });
  t.after(() => systemCAs.kill());
  await refused(wrongHost, 'a host name the certificate does not hold');
  await refused(systemCAs, 'a CA the system does not trust');

  // The control plane only ever saw the trusting one.
  const workers = (await cp.api('/admin/workers')).body;
  assert.deepEqual(workers.map((w) => w.name), ['trusting']);
});

test('a worker refuses an http:// control plane without allowInsecureHttp: exit 2, naming the key', async (t) => {
  const cfg = workerConfig({ name: 'insecure', ops: 27700, trino: 27701, cp: 'http://127.0.0.1:27702', allowInsecureHttp: false });
  const w = await startNode(cfg, { wait: 'none' });
  t.after(() => w.kill());
  const info = await w.exited;
  assert.equal(info.code, 2, w.logs());
  assert.match(w.logs(), /queryflux\.controlPlane\.allowInsecureHttp/);
});
