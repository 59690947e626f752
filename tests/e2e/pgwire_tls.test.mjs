// TLS on the PostgreSQL wire frontend: SSLRequest answered 'S' and a real
// handshake when tls is configured; plain connections still work.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import net from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import pg from 'pg';
import { startGateway, config, runCli, writeConfig, selfSignedCert } from './support/gateway.mjs';

function tlsConfig(ports, tls) {
  const cfg = config({
    trinoPort: ports.trino,
    adminPort: ports.admin,
    clusters: { duck: { engine: 'duckDb' } },
    clusterGroups: { g: { members: ['duck'] } },
  });
  cfg.queryflux.frontends.postgresWire = { enabled: true, port: ports.pg, tls: { certFile: tls.cert, keyFile: tls.key } };
  return cfg;
}

function psql(port, sslmode, sql) {
  return spawnSync('psql', ['-X', '-A', '-t', '-h', '127.0.0.1', '-p', String(port), '-U', 'alice', '-d', 'demo', '-c', sql],
    { encoding: 'utf8', timeout: 20000, env: { ...process.env, PGSSLMODE: sslmode } });
}

test('psql and node-postgres connect over TLS; plain connections still work', async (t) => {
  const ports = { trino: 23300, admin: 23301, pg: 23302 };
  const gw = await startGateway(tlsConfig(ports, selfSignedCert(t)));
  t.after(() => gw.kill());
  for (let i = 0; i < 10; i++) {
    const r = psql(ports.pg, 'require', `SELECT ${i}`);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, `${i}\n`);
  }
  const info = psql(ports.pg, 'require', 'SELECT 1');
  assert.equal(info.status, 0);
  assert.equal(psql(ports.pg, 'disable', 'SELECT 2').stdout, '2\n');

  const c = new pg.Client({ host: '127.0.0.1', port: ports.pg, user: 'alice', database: 'demo', ssl: { rejectUnauthorized: false } });
  c.on('error', () => {});
  await c.connect();
  assert.equal(c.connection.stream.encrypted, true, 'the socket is a TLS socket');
  const r = await c.query('SELECT $1::INTEGER * 2 AS x', [21]);
  assert.deepEqual(r.rows, [{ x: 42 }]);
  await c.end();
});

test('bytes sent in the clear after an SSLRequest are refused', async (t) => {
  const ports = { trino: 23310, admin: 23311, pg: 23312 };
  const gw = await startGateway(tlsConfig(ports, selfSignedCert(t)));
  t.after(() => gw.kill());
  const sslRequest = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);
  const injected = Buffer.from([0, 0, 0, 8, 0, 3, 0, 0]);
  const answer = await new Promise((resolve) => {
    const sock = net.connect(ports.pg, '127.0.0.1', () => sock.write(Buffer.concat([sslRequest, injected])));
    let data = Buffer.alloc(0);
    sock.on('data', (d) => { data = Buffer.concat([data, d]); });
    sock.on('close', () => resolve(data));
    sock.on('error', () => resolve(data));
    sock.setTimeout(5000, () => sock.destroy());
  });
  assert.match(answer.toString('latin1'), /08P01/);
  assert.equal(psql(ports.pg, 'require', 'SELECT 3').stdout, '3\n');
});

test('a broken TLS handshake closes only its own connection', async (t) => {
  // After the 'S': random bytes instead of a ClientHello, and a real
  // ClientHello from a client that hangs up before the handshake ends.
  const ports = { trino: 23330, admin: 23331, pg: 23332 };
  const gw = await startGateway(tlsConfig(ports, selfSignedCert(t)));
  t.after(() => gw.kill());
  const sslRequest = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);
  const closedAfter = (write) => new Promise((resolve) => {
    const sock = net.connect(ports.pg, '127.0.0.1', () => write(sock));
    let data = Buffer.alloc(0);
    sock.on('data', (d) => { data = Buffer.concat([data, d]); });
    sock.on('close', () => resolve(data));
    sock.on('error', () => resolve(data));
    sock.setTimeout(5000, () => { sock.destroy(); resolve(null); });
  });
  const junk = Buffer.alloc(64 * 1024);
  for (let i = 0; i < junk.length; i++) junk[i] = (i * 7919 + 13) & 0xff;
  const answered = await closedAfter((sock) => {
    sock.write(sslRequest);
    sock.once('data', () => sock.write(junk)); // after the 'S'
  });
  assert.notEqual(answered, null, 'the gateway closed the connection');
  assert.equal(String.fromCharCode(answered[0]), 'S');

  const halfway = [];
  for (let i = 0; i < 20; i++) {
    halfway.push(new Promise((resolve) => {
      const sock = net.connect(ports.pg, '127.0.0.1', () => sock.write(sslRequest));
      sock.once('data', () => {
        const tls = tlsConnect({ socket: sock, rejectUnauthorized: false });
        tls.on('error', () => {});
        tls.once('secureConnect', () => { tls.destroy(); resolve(); });
        setTimeout(() => { sock.destroy(); resolve(); }, i); // gone mid-handshake
      });
      sock.on('error', () => resolve());
    }));
  }
  await Promise.all(halfway);
  for (let i = 0; i < 3; i++)
    assert.equal(psql(ports.pg, 'require', `SELECT ${i}`).stdout, `${i}\n`);
});

test('a TLS section needs both files, and an unreadable certificate stops serve', () => {
  const bad = writeConfig({
    queryflux: { frontends: { postgresWire: { port: 23320, tls: { certFile: '/nonexistent.crt' } } } },
    clusters: { d: { engine: 'duckDb' } },
    clusterGroups: { g: { members: ['d'] } },
  });
  const v = runCli(['validate', '--config', bad.file]);
  assert.equal(v.code, 2);
  assert.match(v.stderr, /queryflux\.frontends\.postgresWire\.tls: needs both certFile and keyFile/);
  const missing = writeConfig({
    queryflux: { adminApi: { port: 23321 }, frontends: { trinoHttp: { port: 23322 }, postgresWire: { port: 23323, tls: { certFile: '/nonexistent.crt', keyFile: '/nonexistent.key' } } } },
    clusters: { d: { engine: 'duckDb' } },
    clusterGroups: { g: { members: ['d'] } },
  });
  const s = runCli(['serve', '--config', missing.file]);
  assert.equal(s.code, 1);
  assert.match(s.stderr, /postgresWire: cannot load TLS certificate or key/);
});
