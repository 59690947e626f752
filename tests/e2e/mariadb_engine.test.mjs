// MySQL clusters: the real MariaDB server (deploy/services.sh) behind the
// gateway, reached through all three frontends with real clients.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync, unlinkSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { startGateway, config, runClient } from './support/gateway.mjs';

const MY_URL = process.env.QF_MY_URL || 'mysql://qf:qf@127.0.0.1:13306/qftest';
const ports = { trino: 23600, admin: 23601, pg: 23602, my: 23603 };

/// A connection straight to MariaDB, for setting up and for checking what the backend saw.
function direct() {
  return mysql.createConnection({ uri: MY_URL, multipleStatements: true });
}

function through(opts = {}) {
  return mysql.createConnection({ host: '127.0.0.1', port: ports.my, user: 'app', database: 'qftest', ...opts });
}

function pgClient() {
  const c = new pg.Client({ host: '127.0.0.1', port: ports.pg, user: 'app', database: 'qftest' });
  c.on('error', () => {});
  return c;
}

function mariadb(args) {
  return spawnSync('mariadb', ['--no-defaults', '-h127.0.0.1', `-P${ports.my}`, '-uapp', ...args],
    { encoding: 'utf8', timeout: 30000 });
}

let gw;
before(async () => {
  const cfg = config({
    trinoPort: ports.trino,
    adminPort: ports.admin,
    clusters: { maria: { engine: 'mysql', endpoint: MY_URL, maxRunningQueries: 4, poolSize: 4 } },
    clusterGroups: { main: { members: ['maria'], maxRunningQueries: 4, maxQueuedQueries: 100 } },
  });
  cfg.queryflux.frontends.postgresWire = { enabled: true, port: ports.pg };
  cfg.queryflux.frontends.mysqlWire = { enabled: true, port: ports.my };
  // Three wire threads: sessions, their backends and cancels cross loops.
  cfg.queryflux.wireThreads = 3;
  gw = await startGateway(cfg);
  const d = await direct();
  await d.query(`DROP TABLE IF EXISTS qf_my_e2e;
    CREATE TABLE qf_my_e2e (id INT PRIMARY KEY, name VARCHAR(20), price DECIMAL(8,2),
      at DATETIME, raw VARBINARY(4), big BIGINT);
    INSERT INTO qf_my_e2e VALUES (1, 'ünï 日本', 2.50, '2024-02-29 12:00:00', X'00FF', 9007199254740993),
      (2, NULL, NULL, NULL, NULL, NULL)`);
  await d.end();
});
after(async () => { await gw?.kill(); });

test('the mariadb CLI reads MariaDB through QueryFlux, errors keep their MySQL codes', () => {
  const r = mariadb(['-B', 'qftest', '-e', 'SELECT id, name, price, at FROM qf_my_e2e ORDER BY id']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, 'id\tname\tprice\tat\n1\tünï 日本\t2.50\t2024-02-29 12:00:00\n2\tNULL\tNULL\tNULL\n');
  const missing = mariadb(['qftest', '-e', 'SELECT * FROM no_such_table']);
  assert.notEqual(missing.status, 0);
  assert.match(missing.stderr, /ERROR 1146 \(42S02\).*no_such_table/);
});

test('mysql2 query() against MariaDB: types, NULLs, writes', async (t) => {
  const c = await through({ supportBigNumbers: true, bigNumberStrings: true });
  t.after(() => c.end().catch(() => {}));
  const [rows, fields] = await c.query('SELECT id, name, price, at, raw, big FROM qf_my_e2e ORDER BY id');
  assert.deepEqual(fields.map((f) => f.name), ['id', 'name', 'price', 'at', 'raw', 'big']);
  assert.equal(rows[0].name, 'ünï 日本');
  assert.equal(rows[0].price, '2.50');
  assert.equal(rows[0].big, '9007199254740993');
  assert.deepEqual([...rows[0].raw], [0, 255]);
  assert.deepEqual(rows[1], { id: 2, name: null, price: null, at: null, raw: null, big: null });
  const [ins] = await c.query("INSERT INTO qf_my_e2e (id, name) VALUES (10, 'a'), (11, 'b')");
  assert.equal(ins.affectedRows, 2);
  const [del] = await c.query('DELETE FROM qf_my_e2e WHERE id >= 10');
  assert.equal(del.affectedRows, 2);
});

test('mysql2 execute() against MariaDB: prepared statements with binary rows', async (t) => {
  const c = await through({ supportBigNumbers: true, bigNumberStrings: true });
  t.after(() => c.end().catch(() => {}));
  const [rows] = await c.execute('SELECT id, name, price, at, raw, big FROM qf_my_e2e WHERE id = ? OR name = ? ORDER BY id',
    [2, 'ünï 日本']);
  assert.equal(rows.length, 2);
  assert.equal(rows[0].name, 'ünï 日本');
  assert.equal(rows[0].price, '2.50');
  assert.equal(rows[0].big, '9007199254740993');
  assert.deepEqual([...rows[0].raw], [0, 255]);
  assert.equal(rows[0].at.toISOString(), '2024-02-29T12:00:00.000Z');
  assert.deepEqual(rows[1], { id: 2, name: null, price: null, at: null, raw: null, big: null });
  // Quotes and backslashes in a parameter stay data, never SQL.
  const tricky = "it's \\ a '; DROP TABLE qf_my_e2e; --";
  const [ins] = await c.execute('INSERT INTO qf_my_e2e (id, name) VALUES (?, ?)', [20, tricky.slice(0, 20)]);
  assert.equal(ins.affectedRows, 1);
  const [back] = await c.execute('SELECT name FROM qf_my_e2e WHERE id = ?', [20]);
  assert.equal(back[0].name, tricky.slice(0, 20));
  const [lim] = await c.execute('SELECT id FROM qf_my_e2e ORDER BY id LIMIT ?', ['1']);
  assert.deepEqual(lim, [{ id: 1 }]);
  await c.execute('DELETE FROM qf_my_e2e WHERE id = ?', [20]);
  await assert.rejects(c.execute('SELECT * FROM no_such_table WHERE id = ?', [1]), (e) => e.errno === 1146);
});

test('a PostgreSQL client reads MariaDB: type OIDs and values map across', async () => {
  const c = pgClient();
  await c.connect();
  const r = await c.query('SELECT id, name, price, at, raw, big FROM qf_my_e2e ORDER BY id');
  const p = await c.query('SELECT name FROM qf_my_e2e WHERE id = $1 AND name = $2', [1, 'ünï 日本']);
  await c.end();
  assert.deepEqual(r.fields.map((f) => f.dataTypeID), [23, 1043, 1700, 1114, 17, 20]);
  assert.equal(r.rows[0].name, 'ünï 日本');
  assert.equal(r.rows[0].price, '2.50');
  assert.equal(r.rows[0].big, '9007199254740993');
  assert.deepEqual([...r.rows[0].raw], [0, 255]);
  assert.deepEqual(r.rows[1], { id: 2, name: null, price: null, at: null, raw: null, big: null });
  assert.deepEqual(p.rows, [{ name: 'ünï 日本' }]);
});

test('a Trino client reads MariaDB types', async () => {
  const r = await runClient(gw.trino('trino-user'), 'SELECT price, at, raw, name FROM qf_my_e2e WHERE id = 1');
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  assert.deepEqual(r.columns.map((c) => c.type), ['decimal(8,2)', 'timestamp(0)', 'varbinary', 'varchar']);
  assert.deepEqual(r.data, [['2.50', '2024-02-29 12:00:00', 'AP8=', 'ünï 日本']]);
});

test("a CALL through the Trino and PostgreSQL frontends gives its procedure's first result set, and the connection serves the next statements", async () => {
  const d = await direct();
  await d.query(`DROP PROCEDURE IF EXISTS qf_sets;
    CREATE PROCEDURE qf_sets(IN n INT) BEGIN SELECT n AS p1; SELECT n + 1 AS p2; END`);
  await d.end();
  const r = await runClient(gw.trino('trino-user'), 'CALL qf_sets(5)');
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  assert.deepEqual(r.data, [[5]]);
  const c = pgClient();
  await c.connect();
  assert.deepEqual((await c.query('CALL qf_sets(6)')).rows, [{ p1: 6 }]);
  // The same pooled connections (the last given back is taken first):
  // their CALLs' other results must not be waiting there.
  for (let i = 0; i < 6; i++) {
    const next = await runClient(gw.trino('trino-user'), `SELECT ${i} AS n`);
    assert.equal(next.error, undefined, JSON.stringify(next.error));
    assert.deepEqual((await c.query(`SELECT ${i} AS n`)).rows, [{ n: i }]);
  }
  await c.end();
});

test('a million rows stream from MariaDB through the MySQL frontend', async (t) => {
  const c = await through();
  t.after(() => c.end().catch(() => {}));
  let count = 0;
  let last = 0;
  await new Promise((resolve, reject) => {
    const q = c.connection.query('SELECT seq FROM seq_1_to_1000000');
    q.on('result', (row) => { count += 1; last = Number(row.seq); }); // BIGINT UNSIGNED arrives as DECIMAL(20,0)
    q.on('end', resolve);
    q.on('error', reject);
  });
  assert.equal(count, 1000000);
  assert.equal(last, 1000000);
});

test('cancelling a PostgreSQL client query kills the MariaDB query and frees the slot', async () => {
  const child = spawn('psql', ['-X', '-h', '127.0.0.1', '-p', String(ports.pg), '-U', 'app', '-d', 'qftest',
    '-c', 'SELECT SLEEP(30)'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  await sleep(800);
  child.kill('SIGINT');
  assert.notEqual(await exited, 0);
  assert.match(stderr, /interrupted|cancel/i);
  const d = await direct();
  const [rows] = await d.query("SELECT count(*) AS n FROM information_schema.processlist WHERE info = 'SELECT SLEEP(30)'");
  await d.end();
  assert.equal(Number(rows[0].n), 0, 'the backend query was killed');
  const { queries } = await gw.historyWhen({ search: 'SLEEP(30)' });
  assert.equal(queries[0]?.status, 'Cancelled');
});

test('KILL QUERY from another MySQL connection stops the query on MariaDB', async () => {
  const victim = await through();
  const killer = await through();
  const running = victim.query('SELECT SLEEP(30) AS s').then(() => null, (e) => e);
  await sleep(500);
  const started = Date.now();
  await killer.query(`KILL QUERY ${victim.connection.threadId}`);
  const err = await running;
  assert.ok(err, 'the query failed');
  assert.equal(err.errno, 1317); // ER_QUERY_INTERRUPTED
  assert.ok(Date.now() - started < 5000);
  const [rows] = await victim.query('SELECT 1 AS one'); // the victim goes on
  assert.deepEqual(rows, [{ one: 1 }]);
  await assert.rejects(killer.query('KILL QUERY 999999'), (e) => e.errno === 1094);
  await killer.query(`KILL ${victim.connection.threadId}`);
  await assert.rejects(victim.query('SELECT 1'));
  await killer.end();
  victim.destroy();
});

test('transactions through the MySQL frontend hold one MariaDB connection; ROLLBACK, savepoints and autocommit off work', async () => {
  const c = await through();
  const d = await direct();
  const ids = async () => (await d.query('SELECT id FROM qf_my_e2e WHERE id >= 300 ORDER BY id'))[0].map((r) => r.id);
  await d.query('DELETE FROM qf_my_e2e WHERE id >= 300');
  await c.beginTransaction();
  const [[{ id: conn1 }]] = await c.query('SELECT @@pseudo_thread_id AS id'); // MariaDB's (CONNECTION_ID() is ours)
  const [ok] = await c.query("INSERT INTO qf_my_e2e (id, name) VALUES (300, 'rolled back')");
  assert.equal(ok.serverStatus & 1, 1, 'the OK says a transaction is open');
  const [[{ n }]] = await c.query('SELECT count(*) AS n FROM qf_my_e2e WHERE id = 300');
  assert.equal(Number(n), 1, 'the block sees its own insert');
  assert.deepEqual(await ids(), [], 'nobody else does');
  const [[{ id: conn2 }]] = await c.query('SELECT @@pseudo_thread_id AS id'); // MariaDB's (CONNECTION_ID() is ours)
  assert.equal(conn2, conn1, 'every statement of the block ran on one MariaDB connection');
  await c.rollback();

  await c.query('START TRANSACTION');
  await c.query("INSERT INTO qf_my_e2e (id, name) VALUES (301, 'kept')");
  await c.query('SAVEPOINT a');
  await c.query("INSERT INTO qf_my_e2e (id, name) VALUES (302, 'undone')");
  await c.query('ROLLBACK TO SAVEPOINT a');
  await c.execute('INSERT INTO qf_my_e2e (id, name) VALUES (?, ?)', [303, 'prepared, kept']);
  await c.commit();
  assert.deepEqual(await ids(), [301, 303]);

  // autocommit off, as Connector/J and PyMySQL set it: every statement is in a block.
  await c.query('SET autocommit = 0');
  const [[vars]] = await c.query('SELECT @@autocommit AS a');
  assert.equal(Number(vars.a), 0);
  await c.query("INSERT INTO qf_my_e2e (id, name) VALUES (304, 'rolled back')");
  await c.query('ROLLBACK');
  await c.query("INSERT INTO qf_my_e2e (id, name) VALUES (305, 'committed')");
  await c.query('COMMIT');
  await c.query("INSERT INTO qf_my_e2e (id, name) VALUES (306, 'by autocommit=1')");
  assert.deepEqual(await ids(), [301, 303, 305]);
  await c.query('SET autocommit = 1');
  assert.deepEqual(await ids(), [301, 303, 305, 306]);
  await c.end();
  await d.end();
});

test('a MySQL client that disconnects mid-transaction has it rolled back and its slot freed', async () => {
  const c = await through();
  await c.beginTransaction();
  await c.query("INSERT INTO qf_my_e2e (id, name) VALUES (310, 'never committed')");
  c.destroy(); // gone without a word
  const deadline = Date.now() + 5000;
  let running = -1;
  while (Date.now() < deadline) {
    running = (await gw.admin('/admin/clusters')).body.find((x) => x.name === 'maria').runningQueries;
    if (running === 0) break;
    await sleep(50);
  }
  assert.equal(running, 0, 'the transaction slot was released');
  const d = await direct();
  let open = 1;
  let n = 1;
  while (Date.now() < deadline && (open !== 0 || n !== 0)) {
    open = Number((await d.query('SELECT count(*) AS n FROM information_schema.innodb_trx'))[0][0].n);
    n = Number((await d.query('SELECT count(*) AS n FROM qf_my_e2e WHERE id = 310'))[0][0].n);
    if (open !== 0 || n !== 0) await sleep(50);
  }
  await d.end();
  assert.equal(n, 0, 'the insert was rolled back');
  assert.equal(open, 0, 'no transaction is left open on MariaDB');
});

test('mysqlslap drives MariaDB through QueryFlux', () => {
  const r = spawnSync('mysqlslap', ['--no-defaults', '-h127.0.0.1', `-P${ports.my}`, '-uapp',
    '--create-schema=qftest', '--no-drop', '--query=SELECT count(*) FROM qf_my_e2e',
    '--concurrency=8', '--iterations=2', '--number-of-queries=400'], { encoding: 'utf8', timeout: 60000 });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /Number of clients running queries: 8/);
});

test("LOAD DATA LOCAL INFILE cannot read the gateway's files, through any frontend", async () => {
  // The server asks its client for the file, and the gateway is that
  // client: before, the gateway read the file from its own disk and sent
  // it, whatever the SQL client allowed.
  const file = `/tmp/qf_e2e_gateway_only_${process.pid}.txt`;
  writeFileSync(file, 'gateway secret\n', { mode: 0o600 });
  const d = await direct();
  try {
    await d.query('DROP TABLE IF EXISTS qf_my_infile; CREATE TABLE qf_my_infile (s TEXT)');
    const load = `LOAD DATA LOCAL INFILE '${file}' INTO TABLE qf_my_infile`;
    const cli = mariadb(['--local-infile=1', 'qftest', '-e', load]);
    assert.notEqual(cli.status, 0);
    assert.match(cli.stderr, /ERROR (4166|1148)/);
    const my = await through();
    await assert.rejects(my.query(load), (e) => e.errno === 4166 || e.errno === 1148);
    await my.end();
    const r = await runClient(gw.trino('infile'), load);
    assert.match(r.error?.message ?? '', /local infile/i);
    const pgc = pgClient();
    await pgc.connect();
    await assert.rejects(pgc.query(load), /local infile/i);
    await pgc.end();
    const [rows] = await d.query('SELECT count(*) AS n FROM qf_my_infile');
    assert.equal(Number(rows[0].n), 0, 'the file reached the table');
  } finally {
    await d.end();
    unlinkSync(file);
  }
});

test("through the Trino frontend too, a client's temporary table goes with its connection", async (t) => {
  const cfg = config({
    trinoPort: 23625,
    adminPort: 23626,
    clusters: { one: { engine: 'mysql', endpoint: MY_URL, maxRunningQueries: 1, poolSize: 1 } },
    clusterGroups: { solo: { members: ['one'], maxRunningQueries: 1 } },
  });
  const solo = await startGateway(cfg);
  t.after(() => solo.kill());
  const made = await runClient(solo.trino('first'), "CREATE TEMPORARY TABLE qf_private AS SELECT 'a-data' AS v");
  assert.equal(made.error, undefined, JSON.stringify(made.error));
  const next = await runClient(solo.trino('second'), 'SELECT v FROM qf_private');
  assert.match(next.error?.message ?? '', /doesn't exist/);
});
