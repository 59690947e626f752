// Slow and idle clients on the Trino HTTP port: a flood of sockets that
// send nothing, or a byte now and then, does not shut the port for a real
// client. At maxConnections a newcomer takes the place of the connection
// idle the longest; a request's headers must arrive within
// requestHeadersTimeout; only when every connection has a request in
// flight is a newcomer refused. Ports 28300-28399.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startGateway, config, runClient, waitFor } from './support/gateway.mjs';

const T = { timeout: 120000 };

function duckConfig(trinoPort, adminPort, trinoHttp = {}) {
  const cfg = config({
    trinoPort, adminPort,
    clusters: { duck: { engine: 'duckDb' } },
    clusterGroups: { g: { members: ['duck'] } },
    routingFallback: 'g',
  });
  Object.assign(cfg.queryflux.frontends.trinoHttp, trinoHttp);
  return cfg;
}

/// A socket to the port that writes `first` (maybe nothing) and then keeps
/// quiet; `closed` resolves when the server closes it.
function quietSocket(port, first = '') {
  const s = net.connect(port, '127.0.0.1');
  const state = { socket: s, answered: '', closedByServer: false };
  state.connected = new Promise((resolve, reject) => {
    s.once('connect', resolve);
    s.once('error', reject);
  });
  state.closed = new Promise((resolve) => {
    s.on('data', (d) => { state.answered += d; });
    s.on('end', () => { state.closedByServer = true; });
    s.on('close', resolve);
    s.on('error', () => {});
  });
  if (first) s.write(first);
  return state;
}

test('2,000 idle and byte-a-minute sockets do not shut the Trino port for a real client', T, async (t) => {
  const gw = await startGateway(duckConfig(28300, 28301, { maxConnections: 300 }));
  t.after(() => gw.kill());
  const client = gw.trino('real');
  const flood = [];
  t.after(() => { for (const f of flood) f.socket.destroy(); });
  let failures = 0;
  let ran = 0;
  let flooding = true;
  // The real client queries all along, each query over new connections.
  const querying = (async () => {
    while (flooding || ran < 20) {
      const r = await runClient(client, `SELECT ${ran} AS n`);
      if (r.error || JSON.stringify(r.data) !== JSON.stringify([[ran]])) failures++;
      ran++;
    }
  })();
  for (let i = 0; i < 2000; i++) {
    // Half send nothing; half a request's first bytes, then nothing more.
    const f = quietSocket(28300, i % 2 ? 'GET /v1/info HTTP/1.1\r\nHo' : '');
    flood.push(f);
    await f.connected;
  }
  // Every connection beyond the limit took an idle one's place.
  await waitFor(() => flood.filter((f) => f.closedByServer).length >= 2000 - 300, {
    timeoutMs: 30000, what: 'the oldest idle sockets closed to make room',
  });
  flooding = false;
  await querying;
  assert.equal(failures, 0, `${failures} of ${ran} real queries failed during the flood`);
  assert.ok(ran >= 20);
  // Those closed to make room got no answer: they had asked nothing whole.
  assert.ok(flood.every((f) => f.answered === ''), 'no 503 sent to anybody');
  const info = await fetch(`${gw.trinoUrl}/v1/info`);
  assert.equal(info.status, 200);
});

test('a request\'s headers must arrive within requestHeadersTimeout; kept-alive idle connections wait longer', T, async (t) => {
  const gw = await startGateway(duckConfig(28310, 28311, { requestHeadersTimeout: '1s' }));
  t.after(() => gw.kill());
  const silent = quietSocket(28310);
  const trickle = quietSocket(28310, 'GET /v1/info HTTP/1.1\r\n');
  await silent.connected;
  await trickle.connected;
  // A byte now and then does not keep a request alive.
  const dripping = setInterval(() => trickle.socket.write('X'), 300);
  t.after(() => clearInterval(dripping));
  await silent.closed;
  await trickle.closed;
  clearInterval(dripping);
  assert.ok(silent.closedByServer && trickle.closedByServer);
  assert.equal(trickle.answered, '');
  // A kept-alive connection answered once waits for its next request
  // past the header timeout (a silent newcomer opened after the answer
  // is closed meanwhile), and then its headers get their own.
  const kept = quietSocket(28310, 'GET /v1/info HTTP/1.1\r\nHost: x\r\n\r\n');
  await waitFor(() => kept.answered.includes('\r\n\r\n'), { what: 'the first answer' });
  const answeredOnce = kept.answered;
  const witness = quietSocket(28310);
  await witness.closed;
  assert.ok(witness.closedByServer);
  assert.equal(kept.closedByServer, false, 'the idle kept-alive connection is still open');
  kept.socket.write('GET /v1/info HTTP/1.1\r\nHost: x\r\n\r\n');
  await waitFor(() => kept.answered.length > answeredOnce.length && kept.answered.endsWith('}'), {
    what: 'the second answer on the same connection',
  });
  kept.socket.destroy();
});

test('with every connection mid-request, a newcomer is refused with 503', T, async (t) => {
  const gw = await startGateway(duckConfig(28320, 28321, { maxConnections: 2 }));
  t.after(() => gw.kill());
  // Two requests whose bodies are still coming: in flight, not idle. One
  // the server had not read the headers of yet may be closed to make room
  // (it was idle then): it is opened again.
  const busy = [];
  const ask = () => quietSocket(28320,
    'POST /v1/statement HTTP/1.1\r\nHost: x\r\nX-Trino-User: u\r\nContent-Length: 50\r\n\r\nSELECT');
  t.after(() => { for (const b of busy) b.socket.destroy(); });
  const late = await waitFor(async () => {
    for (let i = 0; i < 2; i++) {
      if (!busy[i] || busy[i].closedByServer) busy[i] = ask();
      await busy[i].connected;
    }
    // Connection: close, so that a newcomer let in (a busy socket was
    // still idle) is answered and closed rather than kept alive.
    const s = quietSocket(28320, 'GET /v1/info HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    await s.closed;
    return s.answered.startsWith('HTTP/1.1 503') && s;
  }, { timeoutMs: 30000, what: 'a 503 for the newcomer' });
  assert.match(late.answered, /too many connections/);
});
