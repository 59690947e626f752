// Bad SQL, bad requests and bad HTTP: clear errors, and the gateway keeps serving.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startGateway, config, runClient, runRaw, submit, parsed, follow } from './support/gateway.mjs';

const T = { timeout: 30000 };

let gw;
before(async () => {
  gw = await startGateway(config({
    trinoPort: 21200,
    adminPort: 21201,
    clusters: {
      duck: { engine: 'duckDb', maxRunningQueries: 2, initSql: ['CREATE TABLE t AS SELECT 1 AS x'] },
      lite: { engine: 'sqlite', maxRunningQueries: 2 },
    },
    clusterGroups: {
      duckGroup: { members: ['duck'] },
      liteGroup: { members: ['lite'] },
    },
    routers: [{ type: 'header', headerName: 'X-Target', headerValueToGroup: { lite: 'liteGroup' } }],
    routingFallback: 'duckGroup',
  }));
});
after(async () => { await gw?.kill(); });

async function assertStillServing() {
  const r = await runClient(gw.trino('after'), 'SELECT x + 1 AS y FROM t');
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  assert.deepEqual(r.data, [[2]]);
}

/// Raw HTTP exchange on a fresh socket; resolves with everything the server sent.
function rawExchange(port, payload, { timeoutMs = 5000 } = {}) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    let got = '';
    const timer = setTimeout(() => { sock.destroy(); resolve({ text: got, timedOut: true }); }, timeoutMs);
    sock.setEncoding('latin1');
    sock.on('connect', () => sock.write(payload));
    sock.on('data', (d) => { got += d; });
    sock.on('error', (e) => { clearTimeout(timer); if (got) resolve({ text: got }); else reject(e); });
    sock.on('close', () => { clearTimeout(timer); resolve({ text: got }); });
  });
}

for (const [engine, headers] of [['duckDb', {}], ['sqlite', { 'X-Target': 'lite' }]]) {
  test(`${engine}: SQL the engine rejects fails with an error name and message`, T, async () => {
    const client = gw.trino('badsql', { extraHeaders: headers });

    const syntax = await runClient(client, 'SELEC 1');
    assert.equal(syntax.finalState, 'FAILED');
    assert.equal(syntax.error?.errorName, 'SYNTAX_ERROR');
    assert.equal(syntax.error?.errorType, 'USER_ERROR');
    assert.match(syntax.error?.message ?? '', /syntax error/i);
    assert.equal(syntax.data.length, 0);

    const missing = await runClient(client, 'SELECT * FROM no_such_table_here');
    assert.equal(missing.finalState, 'FAILED');
    assert.ok(['GENERIC_USER_ERROR', 'SYNTAX_ERROR'].includes(missing.error?.errorName), JSON.stringify(missing.error));
    assert.match(missing.error?.message ?? '', /no_such_table_here/);

    const rec = await gw.historyRecord(missing.id);
    assert.equal(rec.status, 'Failed');
    assert.match(rec.errorMessage, /no_such_table_here/);
    assert.equal(rec.engineType, engine);
  });
}

test('a runtime error after rows started fails the query', T, async () => {
  // DuckDB raises while producing rows (error() on the last row).
  const r = await runRaw(gw.trinoUrl, `SELECT CASE WHEN i < 5 THEN i ELSE error('boom at ' || i) END AS v FROM range(0, 6) t(i)`);
  assert.equal(r.finalState, 'FAILED');
  assert.match(r.error?.message ?? '', /boom at 5/);
});

test('POST always answers QUEUED with a nextUri, never data or an error', T, async () => {
  for (const sql of ['SELECT 1', 'SELEC broken', 'SELECT * FROM range(0, 10)']) {
    const r = await submit(gw.trinoUrl, sql);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.stats?.state, 'QUEUED', sql);
    assert.ok(r.body.id, sql);
    assert.match(r.body.nextUri ?? '', new RegExp(`^${gw.trinoUrl}/v1/statement/queued/${r.body.id}/[0-9a-f]{32}/1$`));
    assert.equal(r.body.infoUri, `${gw.trinoUrl}/v1/query/${r.body.id}`);
    assert.equal(r.body.data, undefined, sql);
    assert.equal(r.body.error, undefined, sql);
    await follow(r);
  }
});

test('POST without X-Trino-User is 400', T, async () => {
  const r = await submit(gw.trinoUrl, 'SELECT 1', { user: null });
  assert.equal(r.status, 400);
  assert.equal(r.body?.error?.errorType, 'USER_ERROR');
  assert.match(r.body?.error?.message ?? '', /X-Trino-User/);
  assert.equal(r.body?.nextUri, undefined);
});

test('POST with an empty (or blank) body is 400', T, async () => {
  for (const sql of ['', '   \n\t ', ';']) {
    const r = await submit(gw.trinoUrl, sql);
    assert.equal(r.status, 400, `body ${JSON.stringify(sql)}: ${r.text}`);
    assert.ok(r.body?.error?.message, r.text);
  }
});

test('unknown query ids are 404 on every endpoint', T, async () => {
  const id = '20200101_000000_00000_zzzzz_999999';
  for (const [method, path] of [
    ['GET', `/v1/statement/queued/${id}/00112233445566778899aabbccddeeff/1`],
    ['GET', `/v1/statement/executing/${id}/00112233445566778899aabbccddeeff/1`],
    ['GET', `/v1/query/${id}`],
    ['DELETE', `/v1/query/${id}`],
    ['DELETE', `/v1/statement/executing/${id}/00112233445566778899aabbccddeeff/1`],
  ]) {
    const res = await fetch(gw.trinoUrl + path, { method });
    await res.arrayBuffer();
    assert.equal(res.status, 404, `${method} ${path}`);
  }
});

test("a query's nextUri carries a secret: its id alone reads and cancels nothing", T, async () => {
  // Ids are sequential; Trino puts a random slug in the nextUri for this.
  const r = await submit(gw.trinoUrl, "SELECT 'owner only' AS s");
  const next = new URL(r.body.nextUri);
  const [, , , , id, slug, token] = next.pathname.split('/');
  assert.equal(id, r.body.id);
  const wrong = slug.replace(/^./, (c) => (c === '0' ? '1' : '0'));
  for (const [method, path] of [
    ['GET', `/v1/statement/queued/${id}/${token}`],
    ['GET', `/v1/statement/executing/${id}/${wrong}/${token}`],
    ['DELETE', `/v1/statement/executing/${id}/${wrong}/${token}`],
  ]) {
    const res = await fetch(gw.trinoUrl + path, { method });
    const text = await res.text();
    assert.equal(res.status, 404, `${method} ${path}: ${text}`);
    assert.doesNotMatch(text, /owner only/);
  }
  const done = await follow(r); // the owner's client reads on, untouched
  assert.deepEqual(done.data, [['owner only']]);
});

test('unknown paths are 404, wrong methods are rejected', T, async () => {
  for (const path of ['/', '/v2/statement', '/v1/nothing', '/v1/statement/queued']) {
    const res = await fetch(gw.trinoUrl + path);
    await res.arrayBuffer();
    assert.equal(res.status, 404, path);
  }
  const res = await fetch(`${gw.trinoUrl}/v1/statement`);
  await res.arrayBuffer();
  assert.ok(res.status === 405 || res.status === 404, `GET /v1/statement gave ${res.status}`);
});

/// Sends `head`, then `chunks` one by one (waiting for drain), and stops
/// sending as soon as the server answers; resolves with what it answered.
function rawUpload(port, head, chunks, { timeoutMs = 10000, headFirstMs = 0 } = {}) {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    let got = '';
    let error;
    const timer = setTimeout(() => sock.destroy(), timeoutMs);
    sock.setEncoding('latin1');
    sock.on('data', (d) => { got += d; });
    sock.on('error', (e) => { error = e; });
    sock.on('close', () => { clearTimeout(timer); resolve({ text: got, error }); });
    sock.on('connect', async () => {
      sock.write(head);
      if (headFirstMs) await new Promise((r) => { setTimeout(r, headFirstMs); sock.once('data', r); });
      for (const c of chunks) {
        if (got || sock.destroyed) return;
        if (!sock.write(c)) await new Promise((r) => { sock.once('drain', r); sock.once('close', r); });
      }
    });
  });
}

test('a body over 16 MiB is 413 (Content-Length and chunked)', T, async () => {
  const size = 16 * 1024 * 1024 + 1024;
  const mib = Buffer.alloc(1024 * 1024, 0x20);
  // Announced too large: answered from the headers alone. (The body waits
  // for the answer: the server closes at once without reading the rest, and
  // a client still sending can then lose the answer to the TCP reset.)
  const withLength = await rawUpload(gw.trinoPort,
    `POST /v1/statement HTTP/1.1\r\nHost: x\r\nX-Trino-User: big\r\nContent-Length: ${size}\r\n\r\n`,
    Array(17).fill(mib), { headFirstMs: 1000 });
  assert.match(withLength.text, /^HTTP\/1\.1 413/, `got ${JSON.stringify(withLength.text.slice(0, 200))} (${withLength.error?.code})`);

  // Chunked: the limit is found while reading.
  const chunks = [];
  for (let i = 0; i < 17; i++) chunks.push(Buffer.concat([Buffer.from('100000\r\n'), mib, Buffer.from('\r\n')]));
  chunks.push(Buffer.from('0\r\n\r\n'));
  const chunked = await rawUpload(gw.trinoPort,
    'POST /v1/statement HTTP/1.1\r\nHost: x\r\nX-Trino-User: big\r\nTransfer-Encoding: chunked\r\n\r\n', chunks);
  assert.match(chunked.text, /^HTTP\/1\.1 413/, `got ${JSON.stringify(chunked.text.slice(0, 200))} (${chunked.error?.code})`);
  await assertStillServing();
});

test('a body just under the limit is accepted', T, async () => {
  // 1 MiB of trailing blanks after a valid statement.
  const sql = 'SELECT 42 AS answer' + ' '.repeat(1024 * 1024);
  const r = await runRaw(gw.trinoUrl, sql);
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  assert.deepEqual(r.data, [[42]]);
});

test('malformed HTTP gets 400 and the server keeps serving', T, async () => {
  const garbage = await rawExchange(gw.trinoPort, 'THIS IS NOT HTTP\x00\x01\x02\r\n\r\n');
  assert.match(garbage.text, /^HTTP\/1\.[01] 400/, `got ${JSON.stringify(garbage.text.slice(0, 200))}`);

  const badHeader = await rawExchange(gw.trinoPort, 'POST /v1/statement HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\nSELECT 1');
  assert.match(badHeader.text, /^HTTP\/1\.[01] 400/, `got ${JSON.stringify(badHeader.text.slice(0, 200))}`);

  await assertStillServing();
});

test('a well-formed raw request on a socket works (sanity for the raw helper)', T, async () => {
  const ok = await rawExchange(gw.trinoPort,
    'POST /v1/statement HTTP/1.1\r\nHost: x\r\nX-Trino-User: raw\r\nContent-Length: 8\r\nConnection: close\r\n\r\nSELECT 1');
  assert.match(ok.text, /^HTTP\/1\.1 200/);
  assert.match(ok.text, /"nextUri"/);
});

test('a bad page token for a live query is 404', T, async () => {
  const first = await submit(gw.trinoUrl, 'SELECT sleep_ms(300) AS s');
  assert.equal(first.status, 200);
  const base = first.body.nextUri.replace(/\/\d+$/, '');
  const skipped = await fetch(`${base}/7`);
  await skipped.arrayBuffer();
  assert.equal(skipped.status, 404, 'token out of sequence');
  const nonNumeric = await fetch(`${base}/abc`);
  await nonNumeric.arrayBuffer();
  assert.ok(nonNumeric.status === 400 || nonNumeric.status === 404, `non-numeric token gave ${nonNumeric.status}`);
  // The query itself is unharmed.
  const rest = await follow(first);
  assert.equal(rest.error, undefined, JSON.stringify(rest.error));
  assert.deepEqual(rest.data, [[300]]);
});

test('GET /v1/query/{id} reports the state of a finished query', T, async () => {
  const r = await runRaw(gw.trinoUrl, 'SELECT 1');
  const info = await parsed(await fetch(`${gw.trinoUrl}/v1/query/${r.id}`));
  assert.equal(info.status, 200);
  assert.equal(info.body.queryId ?? info.body.proxyQueryId, r.id);
  const failed = await runRaw(gw.trinoUrl, 'SELEC 1');
  const finfo = await parsed(await fetch(`${gw.trinoUrl}/v1/query/${failed.id}`));
  assert.equal(finfo.status, 200);
  assert.equal(finfo.body.state, 'FAILED');
});

test('the admin API wants credentials', T, async () => {
  for (const path of ['/admin/queries', '/admin/clusters', '/admin/queries/x']) {
    const none = await gw.admin(path, { auth: false });
    assert.equal(none.status, 401, path);
    const wrong = await gw.admin(path, { auth: false, headers: { Authorization: 'Basic ' + Buffer.from('admin:nope').toString('base64') } });
    assert.equal(wrong.status, 401, path);
  }
  const ok = await gw.admin('/admin/clusters');
  assert.equal(ok.status, 200);
  assert.deepEqual(ok.body.map((c) => c.name).sort(), ['duck', 'lite']);
});

test('after all of that the gateway still answers queries', T, async () => {
  await assertStillServing();
  const health = await fetch(`${gw.adminUrl}/health`);
  assert.equal(health.status, 200);
});
