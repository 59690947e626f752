// MySQL wire frontend with real clients: the mariadb CLI and npm mysql2
// (text protocol), over an embedded DuckDB cluster.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import net from 'node:net';
import { Duplex } from 'node:stream';
import mysql from 'mysql2/promise';
import { startGateway, config, selfSignedCert } from './support/gateway.mjs';

function gatewayConfig(ports, extra = {}) {
  const cfg = config({
    trinoPort: ports.trino,
    adminPort: ports.admin,
    clusters: {
      duck: { engine: 'duckDb', initSql: ["CREATE TABLE t AS SELECT i, 'row ' || i AS s FROM range(0, 3) r(i)"] },
    },
    clusterGroups: { g: { members: ['duck'], maxRunningQueries: 4 } },
    routers: [{ type: 'queryRegex', rules: [{ regex: '(?i)^\\s*drop', action: 'deny', error: 'no DROP here' }] }],
    routingFallback: 'g',
  });
  cfg.queryflux.frontends.mysqlWire = { enabled: true, port: ports.my };
  Object.assign(cfg, extra);
  return cfg;
}

/// A socket that sends what is written in one tick as one write: mysql2's
/// SSLRequest and its TLS ClientHello then reach the server together, as
/// they do by chance on a loaded machine.
function coalescingSocket(port) {
  const socket = net.connect(port, '127.0.0.1');
  socket.setNoDelay(true);
  let pending = [];
  const stream = new Duplex({
    read() {},
    write(chunk, _encoding, done) {
      pending.push(chunk);
      if (pending.length === 1)
        setImmediate(() => socket.write(Buffer.concat(pending.splice(0))));
      done();
    },
    final(done) { socket.end(); done(); },
    destroy(err, done) { socket.destroy(); done(err); },
  });
  socket.on('data', (bytes) => stream.push(bytes));
  socket.on('end', () => stream.push(null));
  socket.on('error', (e) => stream.destroy(e));
  return stream;
}

function mariadb(port, args) {
  return spawnSync('mariadb', ['--no-defaults', '-h127.0.0.1', `-P${port}`, ...args],
    { encoding: 'utf8', timeout: 20000 });
}

test('the mariadb CLI queries DuckDB through QueryFlux', async (t) => {
  const ports = { trino: 23500, admin: 23501, my: 23502 };
  const gw = await startGateway(gatewayConfig(ports));
  t.after(() => gw.kill());
  const r = mariadb(ports.my, ['-ualice', '-B', '-e', "SELECT i, s, NULL AS n, 'héllo' AS u FROM t ORDER BY i"]);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, 'i\ts\tn\tu\n0\trow 0\tNULL\théllo\n1\trow 1\tNULL\théllo\n2\trow 2\tNULL\théllo\n');
  const db = mariadb(ports.my, ['-ualice', '-B', '-N', 'demo', '-e', 'SELECT DATABASE()']);
  assert.equal(db.stdout, 'demo\n');
  const dml = mariadb(ports.my, ['-ualice', '-B', '-N', '-e', 'CREATE TABLE u (x INTEGER); INSERT INTO u VALUES (1), (2); SELECT count(*) FROM u']);
  assert.equal(dml.status, 0, dml.stderr);
  assert.equal(dml.stdout, '2\n');
  const tx = mariadb(ports.my, ['-ualice', '-B', '-N', '-e', 'CREATE TABLE v (x INTEGER); BEGIN; INSERT INTO v VALUES (1); '
    + 'ROLLBACK; SET autocommit = 0; INSERT INTO v VALUES (2); COMMIT; INSERT INTO v VALUES (3); ROLLBACK; SELECT x FROM v']);
  assert.equal(tx.status, 0, tx.stderr);
  assert.equal(tx.stdout, '2\n', 'DuckDB transactions through the MySQL frontend');
  const bad = mariadb(ports.my, ['-ualice', '-e', 'SELEC 1']);
  assert.notEqual(bad.status, 0);
  assert.match(bad.stderr, /ERROR 1064 \(42000\)/);
  const denied = mariadb(ports.my, ['-ualice', '-e', 'DROP TABLE t']);
  assert.match(denied.stderr, /ERROR 1227 \(42000\).*no DROP here/);
  const { queries } = await gw.history({ search: 'FROM t ORDER BY i' });
  assert.equal(queries[0].protocol, 'mysqlWire');
  assert.equal(queries[0].user, 'alice');
});

test('mysql2 query(): rows, types, NULLs, affected rows, errors', async (t) => {
  const ports = { trino: 23510, admin: 23511, my: 23512 };
  const gw = await startGateway(gatewayConfig(ports));
  t.after(() => gw.kill());
  const c = await mysql.createConnection({ host: '127.0.0.1', port: ports.my, user: 'bob', database: 'demo' });
  t.after(() => c.end().catch(() => {}));
  const [rows, fields] = await c.query("SELECT 42::INTEGER AS n, 1.5::DOUBLE AS d, 'x' AS s, NULL AS z, 12.34::DECIMAL(6,2) AS dec");
  assert.deepEqual(fields.map((f) => f.name), ['n', 'd', 's', 'z', 'dec']);
  assert.deepEqual(rows, [{ n: 42, d: 1.5, s: 'x', z: null, dec: '12.34' }]);
  await c.query('CREATE TABLE v (x INTEGER)');
  const [ok] = await c.query('INSERT INTO v VALUES (1), (2), (3)');
  assert.equal(ok.affectedRows, 3);
  await assert.rejects(c.query('SELECT * FROM missing_table'), (e) => e.errno === 1105 && /missing_table/.test(e.message));
  const [[again]] = await c.query('SELECT count(*) AS n FROM v');
  assert.equal(Number(again.n), 3);
  await c.ping();
});

test('static users: mysql_native_password challenges are checked', async (t) => {
  const ports = { trino: 23520, admin: 23521, my: 23522 };
  const gw = await startGateway(gatewayConfig(ports, {
    auth: { provider: 'static', allowCleartextWithoutTls: true, staticUsers: { users: { alice: { password: 's3cret' } } } },
  }));
  t.after(() => gw.kill());
  const good = mariadb(ports.my, ['-ualice', '-ps3cret', '-B', '-N', '-e', 'SELECT 1']);
  assert.equal(good.status, 0, good.stderr);
  assert.equal(good.stdout, '1\n');
  const bad = mariadb(ports.my, ['-ualice', '-pwrong', '-e', 'SELECT 1']);
  assert.match(bad.stderr, /ERROR 1045 \(28000\): Access denied for user 'alice'/);
  const c = await mysql.createConnection({ host: '127.0.0.1', port: ports.my, user: 'alice', password: 's3cret' });
  const [[row]] = await c.query('SELECT 7 AS x');
  assert.equal(row.x, 7);
  await c.end();
});

test('mysqlslap runs a query load through QueryFlux', async (t) => {
  const ports = { trino: 23530, admin: 23531, my: 23532 };
  const gw = await startGateway(gatewayConfig(ports));
  t.after(() => gw.kill());
  const r = spawnSync('mysqlslap', ['--no-defaults', '-h127.0.0.1', `-P${ports.my}`, '-ualice',
    '--create-schema=slap', '--query=SELECT count(*) FROM range(0, 1000) r(i)',
    '--concurrency=4', '--iterations=2', '--number-of-queries=200'], { encoding: 'utf8', timeout: 60000 });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /Number of clients running queries: 4/);
  const { total } = await gw.history({ search: 'FROM range(0, 1000)', status: 'Success', limit: '1' });
  assert.equal(total, 400);
});

test('mysql2 execute(): prepared statements, binary rows, reuse and errors on DuckDB', async (t) => {
  const ports = { trino: 23540, admin: 23541, my: 23542 };
  const gw = await startGateway(gatewayConfig(ports));
  t.after(() => gw.kill());
  const c = await mysql.createConnection({ host: '127.0.0.1', port: ports.my, user: 'bob', database: 'demo' });
  t.after(() => c.end().catch(() => {}));
  const sql = "SELECT i, s, ?::INTEGER + 1 AS n, ?::DOUBLE AS d, ?::VARCHAR AS v, NULL AS z, DATE '2024-02-29' AS day, TIMESTAMP '2024-02-29 13:14:15.25' AS ts FROM t WHERE i = ?";
  for (let round = 0; round < 3; round += 1) { // the statement is prepared once, then reused
    const [rows, fields] = await c.execute(sql, [41, 2.5, 'héllo', round]);
    assert.deepEqual(fields.map((f) => f.name), ['i', 's', 'n', 'd', 'v', 'z', 'day', 'ts']);
    assert.equal(rows.length, 1);
    assert.equal(Number(rows[0].i), round);
    assert.equal(rows[0].s, `row ${round}`);
    assert.equal(rows[0].n, 42);
    assert.equal(rows[0].d, 2.5);
    assert.equal(rows[0].v, 'héllo');
    assert.equal(rows[0].z, null);
    assert.equal(rows[0].day.getFullYear(), 2024);
    assert.equal(rows[0].ts.getMilliseconds(), 250);
  }
  const [none] = await c.execute('SELECT i FROM t WHERE i = ?', [99]);
  assert.deepEqual(none, []);
  await assert.rejects(c.execute('SELEC ?', [1]), (e) => e.errno === 1064);
  const [after] = await c.execute('SELECT count(*)::INTEGER AS n FROM t WHERE s LIKE ?', ['row%']);
  assert.deepEqual(after, [{ n: 3 }]);
  const { queries } = await gw.history({ search: 'FROM t WHERE i = $4' });
  assert.equal(queries.length, 3);
});

test('TLS on the MySQL frontend: mysql2 and the mariadb CLI log in over TLS', async (t) => {
  const ports = { trino: 23550, admin: 23551, my: 23552 };
  const { cert, key } = selfSignedCert(t);
  const cfg = gatewayConfig(ports, {
    auth: { provider: 'static', staticUsers: { users: { alice: { password: 's3cret' } } } },
  });
  cfg.queryflux.frontends.mysqlWire.tls = { certFile: cert, keyFile: key };
  const gw = await startGateway(cfg);
  t.after(() => gw.kill());
  const c = await mysql.createConnection({ host: '127.0.0.1', port: ports.my, user: 'alice', password: 's3cret',
    ssl: { rejectUnauthorized: false } });
  t.after(() => c.end().catch(() => {}));
  assert.equal(c.connection.stream.encrypted, true, 'the connection runs over TLS');
  const [rows] = await c.execute('SELECT i FROM t WHERE i = ?', [2]);
  assert.deepEqual(rows.map((r) => Number(r.i)), [2]);
  const cli = mariadb(ports.my, ['-ualice', '-ps3cret', '--ssl', '-B', '-N', '-e', 'SELECT count(*) FROM t']);
  assert.equal(cli.status, 0, cli.stderr);
  assert.equal(cli.stdout, '3\n');
  const bad = mariadb(ports.my, ['-ualice', '-pwrong', '--ssl', '-e', 'SELECT 1']);
  assert.match(bad.stderr, /ERROR 1045 \(28000\)/);
  // The ClientHello in the same segment as the SSLRequest is the handshake's start.
  const together = await mysql.createConnection({ stream: coalescingSocket(ports.my), user: 'alice',
    password: 's3cret', ssl: { rejectUnauthorized: false } });
  t.after(() => together.end().catch(() => {}));
  const [one] = await together.query('SELECT count(*)::INTEGER AS n FROM t');
  assert.deepEqual(one, [{ n: 3 }]);
});
