// PostgreSQL clusters: a real PostgreSQL (deploy/services.sh) behind the
// gateway, reached through the PostgreSQL wire and Trino HTTP frontends.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, unlinkSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import mysql from 'mysql2/promise';
import pg from 'pg';
import Cursor from 'pg-cursor';
import { startGateway, config, runClient, submit, parsed } from './support/gateway.mjs';

const PG_URL = process.env.QF_PG_URL || 'postgres://postgres@127.0.0.1:15432/postgres';
const ports = { trino: 23200, admin: 23201, pg: 23202, my: 23203 };

function client(opts = {}) {
  const c = new pg.Client({ host: '127.0.0.1', port: ports.pg, user: 'postgres', database: 'postgres', ...opts });
  c.on('error', () => {});
  return c;
}

/// A connection straight to PostgreSQL, for checking what the backend saw.
function direct() {
  const c = new pg.Client({ connectionString: PG_URL });
  c.on('error', () => {});
  return c;
}

/// A gateway of its own whose one cluster has one connection: the next
/// statement runs where the last one ran. Trino on `trinoPort`, the admin
/// API on the next port, PostgreSQL wire on `pgPort` if given.
async function soloGateway(t, trinoPort, { pgPort } = {}) {
  const cfg = config({
    trinoPort,
    adminPort: trinoPort + 1,
    clusters: { one: { engine: 'postgres', endpoint: PG_URL, maxRunningQueries: 1, poolSize: 1 } },
    clusterGroups: { solo: { members: ['one'], maxRunningQueries: 1 } },
  });
  if (pgPort) cfg.queryflux.frontends.postgresWire = { enabled: true, port: pgPort };
  const solo = await startGateway(cfg);
  t.after(() => solo.kill());
  return solo;
}

let gw;
before(async () => {
  const cfg = config({
    trinoPort: ports.trino,
    adminPort: ports.admin,
    clusters: { pg: { engine: 'postgres', endpoint: PG_URL, maxRunningQueries: 4, poolSize: 4 } },
    clusterGroups: { main: { members: ['pg'], maxRunningQueries: 4, maxQueuedQueries: 100 } },
  });
  cfg.queryflux.frontends.postgresWire = { enabled: true, port: ports.pg };
  cfg.queryflux.frontends.mysqlWire = { enabled: true, port: ports.my };
  // Three wire threads: sessions, their backends and cancels cross loops.
  cfg.queryflux.wireThreads = 3;
  gw = await startGateway(cfg);
  const d = direct();
  await d.connect();
  await d.query('DROP TABLE IF EXISTS qf_e2e; CREATE TABLE qf_e2e (id int PRIMARY KEY, name text, price numeric(8,2), at timestamptz, raw bytea)');
  await d.query("INSERT INTO qf_e2e VALUES (1, 'ünï', 2.50, '2024-02-29 12:00:00+00', '\\x00ff'), (2, NULL, NULL, NULL, NULL)");
  await d.end();
});
after(async () => { await gw?.kill(); });

test('types come through the PostgreSQL wire frontend', async () => {
  const c = client();
  await c.connect();
  const r = await c.query('SELECT id, name, price, at, raw FROM qf_e2e ORDER BY id');
  // As a simple Query and with parameters (the extended protocol) alike,
  // the result is relayed, the server's own type OIDs (text is 25)
  // included.
  const p = await c.query('SELECT id, name, price, at, raw FROM qf_e2e WHERE id >= $1 ORDER BY id', [0]);
  await c.end();
  assert.deepEqual(r.fields.map((f) => f.dataTypeID), [23, 25, 1700, 1184, 17]);
  assert.deepEqual(p.fields.map((f) => f.dataTypeID), [23, 25, 1700, 1184, 17]);
  assert.deepEqual(p.rows, r.rows);
  assert.equal(r.rows[0].name, 'ünï');
  assert.equal(r.rows[0].price, '2.50');
  assert.equal(r.rows[0].at.toISOString(), '2024-02-29T12:00:00.000Z');
  assert.deepEqual([...r.rows[0].raw], [0, 255]);
  assert.deepEqual(r.rows[1], { id: 2, name: null, price: null, at: null, raw: null });
});

test('a PostgreSQL numeric and timestamptz read through the Trino frontend', async () => {
  const r = await runClient(gw.trino('trino-user'), 'SELECT price, at, raw FROM qf_e2e WHERE id = 1');
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  assert.deepEqual(r.columns.map((c) => c.type), ['decimal(8,2)', 'timestamp(6) with time zone', 'varbinary']);
  assert.deepEqual(r.data, [['2.50', '2024-02-29 12:00:00 UTC', 'AP8=']]);
});

test('backend errors keep their SQLSTATE; parameters bind on the backend', async () => {
  const c = client();
  await c.connect();
  await assert.rejects(c.query('SELECT * FROM no_such_table'), (e) => e.code === '42P01' && /no_such_table/.test(e.message));
  const r = await c.query('SELECT name FROM qf_e2e WHERE id = $1', [1]);
  assert.deepEqual(r.rows, [{ name: 'ünï' }]);
  const ins = await c.query('INSERT INTO qf_e2e (id) VALUES ($1), ($2)', [10, 11]);
  assert.equal(ins.command, 'INSERT');
  assert.equal(ins.rowCount, 2);
  const del = await c.query('DELETE FROM qf_e2e WHERE id >= 10');
  assert.equal(del.rowCount, 2);
  await c.end();
});

test('pgbench -S through QueryFlux in simple, extended and prepared modes', async () => {
  const init = spawnSync('pgbench', ['-i', '-s', '1', '-q', PG_URL], { encoding: 'utf8', timeout: 60000 });
  assert.equal(init.status, 0, init.stderr);
  for (const mode of ['simple', 'extended', 'prepared']) {
    const r = spawnSync('pgbench', ['-n', '-S', '-M', mode, '-c', '4', '-j', '2', '-t', '200',
      '-h', '127.0.0.1', '-p', String(ports.pg), '-U', 'postgres', 'postgres'], { encoding: 'utf8', timeout: 120000 });
    assert.equal(r.status, 0, `${mode}: ${r.stderr}`);
    assert.match(r.stdout, /number of transactions actually processed: 800\/800/, mode);
    assert.match(r.stdout, /number of failed transactions: 0 /, mode);
  }
});

/// Runs `run(i)` for 12 concurrent pg_sleep(0.5) queries, each tagged with
/// `tag`, and returns the most PostgreSQL ever showed active at once.
async function peakActive(tag, run) {
  const watcher = direct();
  await watcher.connect();
  let peak = 0;
  let watching = true;
  const watch = (async () => {
    while (watching) {
      const r = await watcher.query(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'active' AND query LIKE $1",
        [`SELECT pg_sleep(0.5), '${tag}'%`]);
      peak = Math.max(peak, r.rows[0].n);
      await sleep(20);
    }
  })();
  await Promise.all(Array.from({ length: 12 }, (_, i) => run(`SELECT pg_sleep(0.5), '${tag}', ${i}`)));
  watching = false;
  await watch;
  await watcher.end();
  return peak;
}

test('maxRunningQueries 4: PostgreSQL never sees more than 4 of 12 concurrent queries, from each frontend', async () => {
  const clients = await Promise.all(Array.from({ length: 12 }, async () => { const c = client(); await c.connect(); return c; }));
  let next = 0;
  const viaPg = await peakActive('pgwire', (sql) => clients[next++].query(sql));
  await Promise.all(clients.map((c) => c.end()));
  assert.equal(viaPg, 4, `PostgreSQL wire: PostgreSQL saw ${viaPg} at once`);

  const viaTrino = await peakActive('trino', async (sql) => {
    const r = await runClient(gw.trino('trino-user'), sql);
    assert.equal(r.error, undefined, JSON.stringify(r.error));
  });
  assert.equal(viaTrino, 4, `Trino HTTP: PostgreSQL saw ${viaTrino} at once`);

  const conns = await Promise.all(Array.from({ length: 12 }, () =>
    mysql.createConnection({ host: '127.0.0.1', port: ports.my, user: 'app' })));
  next = 0;
  const viaMy = await peakActive('mysqlwire', (sql) => conns[next++].query(sql));
  await Promise.all(conns.map((c) => c.end()));
  assert.equal(viaMy, 4, `MySQL wire: PostgreSQL saw ${viaMy} at once`);
});

test("the server's notices reach its client, never the gateway's log", async () => {
  // Through Trino HTTP (the actor path's libpq: Trino warnings) and the
  // PostgreSQL wire (relayed): a client must not be able to write lines
  // into our stderr.
  const sql = "DO $$ BEGIN RAISE NOTICE 'qf_notice_%', 'marker'; END $$";
  const r = await runClient(gw.trino('notice-user'), sql);
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  assert.deepEqual(r.warnings.map((w) => `${w.warningCode.name} ${w.message}`), ['NOTICE qf_notice_marker']);
  const c = client();
  await c.connect();
  const notices = [];
  c.on('notice', (n) => notices.push(n.message));
  await c.query(sql);
  await c.end();
  assert.deepEqual(notices, ['qf_notice_marker']);
  await sleep(200); // stderr is a pipe: give a stray line time to arrive
  assert.doesNotMatch(gw.logs(), /qf_notice_marker/);
});

test("a failed statement's notices go with it, not to the next statement on its connection", async (t) => {
  // One pooled connection: the next statement, maybe another client's,
  // runs where the failed one raised its notices.
  const solo = await soloGateway(t, 23210);
  const failed = await runClient(solo.trino('first'),
    "DO $$ BEGIN RAISE NOTICE 'before_failing'; RAISE EXCEPTION 'failing'; END $$");
  assert.match(failed.error?.message ?? '', /failing/);
  const next = await runClient(solo.trino('second'), 'SELECT 1 AS one');
  assert.deepEqual(next.data, [[1]]);
  assert.deepEqual(next.warnings, [], 'the failed statement\'s notice reached the next one');
});

test('a CancelRequest from psql stops pg_sleep on the backend and frees the slot', async () => {
  const child = spawn('psql', ['-X', '-h', '127.0.0.1', '-p', String(ports.pg), '-U', 'postgres', '-d', 'postgres',
    '-c', 'SELECT pg_sleep(30)'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  await sleep(800);
  const started = Date.now();
  child.kill('SIGINT');
  assert.notEqual(await exited, 0);
  assert.match(stderr, /cancel/i);
  assert.ok(Date.now() - started < 5000);
  const d = direct();
  await d.connect();
  const active = await d.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)' AND state = 'active'");
  await d.end();
  assert.equal(active.rows[0].n, 0, 'the backend query was cancelled');
  const { queries } = await gw.historyWhen({ search: 'pg_sleep(30)' });
  assert.equal(queries[0]?.status, 'Cancelled');
});

test('a large result streams from PostgreSQL', async () => {
  const c = client();
  await c.connect();
  const r = await c.query('SELECT g AS n, md5(g::text) AS h FROM generate_series(1, 200000) g');
  await c.end();
  assert.equal(r.rowCount, 200000);
  assert.equal(r.rows[199999].n, 200000);
});

test('COPY TO STDOUT streams through the PostgreSQL wire frontend, as psql and \\copy read it', async () => {
  const sql = "COPY (SELECT g, md5(g::text) FROM generate_series(1, 100000) g) TO STDOUT WITH (FORMAT csv)";
  const r = spawnSync('psql', ['-X', '-h', '127.0.0.1', '-p', String(ports.pg), '-U', 'postgres', '-d', 'postgres',
    '-v', 'ON_ERROR_STOP=1', '-c', sql], { encoding: 'utf8', maxBuffer: 64 << 20 });
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.trimEnd().split('\n');
  assert.equal(lines.length, 100000);
  assert.equal(lines[0], '1,c4ca4238a0b923820dcc509a6f75849b');
  assert.equal(lines[99999].split(',')[0], '100000');
  const { queries } = await gw.historyWhen({ search: 'generate_series(1, 100000) g) TO STDOUT' });
  assert.equal(queries[0].status, 'Success');
  assert.equal(queries[0].rowsReturned, 100000);

  // psql's \copy is COPY TO STDOUT into a file of the client's.
  const file = `/tmp/qf_e2e_copy_${process.pid}.csv`;
  const c = spawnSync('psql', ['-X', '-h', '127.0.0.1', '-p', String(ports.pg), '-U', 'postgres', '-d', 'postgres',
    '-v', 'ON_ERROR_STOP=1', '-c', `\\copy (SELECT id, name FROM qf_e2e ORDER BY id) TO '${file}' WITH (FORMAT csv)`],
    { encoding: 'utf8' });
  assert.equal(c.status, 0, c.stderr);
  assert.equal(readFileSync(file, 'utf8'), '1,ünï\n2,\n');
  unlinkSync(file);
});

test('COPY through the Trino and MySQL frontends fails clearly and the next query runs', async () => {
  // These reach PostgreSQL through libpq's results, which cannot carry a
  // copy: the statement fails at once instead of holding its connection.
  for (const sql of ['COPY (SELECT 1) TO STDOUT', 'COPY qf_e2e FROM STDIN']) {
    const r = await runClient(gw.trino('copy-user'), sql);
    assert.match(r.error?.message ?? '', /COPY is supported only from PostgreSQL wire clients/);
    const next = await runClient(gw.trino('copy-user'), 'SELECT 7 AS seven');
    assert.deepEqual(next.data, [[7]]);
  }
  const my = await mysql.createConnection({ host: '127.0.0.1', port: ports.my, user: 'app' });
  await assert.rejects(my.query('COPY (SELECT 1) TO STDOUT'), /COPY is supported only from PostgreSQL wire clients/);
  const [rows] = await my.query('SELECT 8 AS eight');
  assert.equal(Number(rows[0].eight), 8);
  await my.end();
});

test("a client's CopyFail, and a COPY FROM STDIN refused in the extended protocol, leave the session and its backend connection usable", async (t) => {
  // One pooled connection: the same backend pid before and after means
  // the failed copy did not cost the connection.
  await soloGateway(t, 23220, { pgPort: 23222 });
  const c = new pg.Client({ host: '127.0.0.1', port: 23222, user: 'postgres', database: 'postgres' });
  c.on('error', () => {});
  await c.connect();
  const pid = async () => (await c.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
  const before = await pid();
  // node-pg without a copy stream answers CopyInResponse with CopyFail,
  // which the gateway forwards to the server.
  await assert.rejects(c.query('COPY qf_e2e FROM STDIN'),
    (e) => e.code === '57014' && /No source stream defined/.test(e.message));
  assert.equal(await pid(), before);
  // An Execute's copy is refused by the gateway with CopyFail and a Sync
  // (the server skipped the batch's own while it waited for the data).
  await assert.rejects(c.query({ text: 'COPY qf_e2e FROM STDIN', name: 'copy_in' }),
    (e) => e.code === '0A000' && /COPY FROM STDIN/.test(e.message));
  assert.equal(await pid(), before);
  await c.end();
  const d = direct();
  await d.connect();
  const rows = await d.query('SELECT count(*)::int AS n FROM qf_e2e');
  await d.end();
  assert.equal(rows.rows[0].n, 2, 'nothing was copied in');
});

test('a transaction pins one backend connection until COMMIT or ROLLBACK', async () => {
  const c = client();
  await c.connect();
  await c.query('DELETE FROM qf_e2e WHERE id >= 100');
  await c.query('BEGIN');
  const pid1 = (await c.query('SELECT pg_backend_pid() AS p')).rows[0].p;
  await c.query("INSERT INTO qf_e2e (id, name) VALUES (100, 'rolled back')");
  const seen = await c.query('SELECT count(*)::int AS n FROM qf_e2e WHERE id = 100');
  assert.equal(seen.rows[0].n, 1, 'the transaction sees its own insert');
  const pid2 = (await c.query('SELECT pg_backend_pid() AS p')).rows[0].p;
  assert.equal(pid2, pid1, 'every statement of the block ran on one backend');
  await c.query('ROLLBACK');
  await c.query('BEGIN');
  await c.query("INSERT INTO qf_e2e (id, name) VALUES (101, 'committed')");
  await c.query('COMMIT');
  // A failed statement fails the block until ROLLBACK, as in PostgreSQL.
  await c.query('BEGIN');
  await assert.rejects(c.query('SELECT * FROM no_such_table'), (e) => e.code === '42P01');
  await assert.rejects(c.query('SELECT 1'), (e) => e.code === '25P02');
  await c.query('ROLLBACK');
  // ROLLBACK TO a savepoint and COMMIT AND CHAIN go on in the same block.
  await c.query('BEGIN');
  await c.query("INSERT INTO qf_e2e (id, name) VALUES (102, 'kept')");
  assert.equal((await c.query('SAVEPOINT a')).command, 'SAVEPOINT');
  await assert.rejects(c.query('SELECT * FROM no_such_table'), (e) => e.code === '42P01');
  await c.query('ROLLBACK TO SAVEPOINT a');
  await c.query("INSERT INTO qf_e2e (id, name) VALUES (103, 'kept after the savepoint')");
  await c.query('COMMIT AND CHAIN');
  await c.query("INSERT INTO qf_e2e (id, name) VALUES (104, 'in the chained block')");
  await c.query('ROLLBACK');
  await c.end();
  const d = direct();
  await d.connect();
  const rows = await d.query('SELECT id FROM qf_e2e WHERE id >= 100 ORDER BY id');
  await d.end();
  assert.deepEqual(rows.rows, [{ id: 101 }, { id: 102 }, { id: 103 }]);
});

test('a client that disconnects mid-transaction has it rolled back and its slot freed', async () => {
  const c = client();
  await c.connect();
  await c.query('BEGIN');
  await c.query("INSERT INTO qf_e2e (id, name) VALUES (200, 'never committed')");
  c.connection.stream.destroy(); // the client vanishes without a word
  const deadline = Date.now() + 5000;
  let running = -1;
  while (Date.now() < deadline) {
    const clusters = (await gw.admin('/admin/clusters')).body;
    running = clusters.find((x) => x.name === 'pg').runningQueries;
    if (running === 0) break;
    await sleep(50);
  }
  assert.equal(running, 0, 'the transaction slot was released');
  const d = direct();
  await d.connect();
  let n = 1;
  while (Date.now() < deadline && n !== 0) {
    n = (await d.query('SELECT count(*)::int AS n FROM qf_e2e WHERE id = 200')).rows[0].n;
    if (n !== 0) await sleep(50);
  }
  // This test's backends only: other files' run at the same time.
  const locks = await d.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'idle in transaction' AND query LIKE '%qf_e2e%'");
  await d.end();
  assert.equal(n, 0, 'the insert was rolled back');
  assert.equal(locks.rows[0].n, 0, 'no backend is left idle in a transaction');
});

test('pgbench TPC-B (BEGIN ... END) through QueryFlux in simple and extended modes', async () => {
  for (const mode of ['simple', 'extended']) {
    const r = spawnSync('pgbench', ['-n', '-M', mode, '-c', '4', '-j', '2', '-t', '50',
      '-h', '127.0.0.1', '-p', String(ports.pg), '-U', 'postgres', 'postgres'], { encoding: 'utf8', timeout: 120000 });
    assert.equal(r.status, 0, `${mode}: ${r.stderr}`);
    assert.match(r.stdout, /number of transactions actually processed: 200\/200/, mode);
    assert.match(r.stdout, /number of failed transactions: 0 /, mode);
  }
});

test('pg-cursor reads in chunks: Execute row limits suspend the portal and resume it', async () => {
  const c = client();
  await c.connect();
  const cursor = c.query(new Cursor('SELECT g AS n FROM generate_series(1, $1::int) g', [1000]));
  const seen = [];
  for (;;) {
    const rows = await cursor.read(64);
    if (rows.length === 0) break;
    assert.ok(rows.length <= 64);
    seen.push(...rows.map((r) => r.n));
  }
  await cursor.close();
  assert.equal(seen.length, 1000);
  assert.deepEqual(seen.slice(0, 3), [1, 2, 3]);
  assert.equal(seen[999], 1000);
  // The connection is usable afterwards.
  assert.deepEqual((await c.query('SELECT 7 AS x')).rows, [{ x: 7 }]);
  await c.end();
});

test('a suspended portal holds its run on the backend instead of buffering it, and closing it ends the run', async () => {
  const c = client();
  await c.connect();
  const sql = 'SELECT g AS n, repeat(md5(g::text), 8) AS pad FROM generate_series(1, 2000000) g';
  const cursor = c.query(new Cursor(sql));
  const first = await cursor.read(10);
  assert.deepEqual(first.map((r) => r.n), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  const d = direct();
  await d.connect();
  const active = () => d.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'SELECT g AS n, repeat%'");
  assert.equal((await active()).rows[0].n, 1, 'the backend is still producing rows, paused by back pressure');
  const more = await cursor.read(5);
  assert.deepEqual(more.map((r) => r.n), [11, 12, 13, 14, 15]);
  await cursor.close();
  const deadline = Date.now() + 20000; // a bound, not a measure: the machine may be busy
  let n = 1;
  while (n !== 0 && Date.now() < deadline) {
    n = (await active()).rows[0].n;
    if (n !== 0) await sleep(50);
  }
  assert.equal(n, 0, 'closing the portal ended the backend query');
  await d.end();
  assert.deepEqual((await c.query('SELECT 8 AS x')).rows, [{ x: 8 }]);
  await c.end();
});

test('a Trino query cancelled while no fetch is under way ends its backend query at once', async () => {
  const sql = 'SELECT g AS n, repeat(md5(g::text), 8) AS pad FROM generate_series(1, 3000000) g -- idle cancel';
  let page = (await submit(gw.trinoUrl, sql)).body;
  while (page.nextUri && !(page.data && page.data.length))
    page = (await parsed(await fetch(page.nextUri))).body;
  assert.ok(page.data?.length > 0, JSON.stringify(page));
  const d = direct();
  await d.connect();
  const active = async () => (await d.query(
    "SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%-- idle cancel'")).rows[0].n;
  // The statement's buffer fills and it stops fetching: the connection is
  // idle, its cursor open, the backend blocked on a full socket.
  await sleep(1000);
  assert.equal(await active(), 1, 'the backend still has rows to send');
  assert.equal((await fetch(page.nextUri, { method: 'DELETE' })).status, 204);
  const deadline = Date.now() + 20000; // a bound, not a measure
  let n = 1;
  while (n !== 0 && Date.now() < deadline) {
    n = await active();
    if (n !== 0) await sleep(50);
  }
  await d.end();
  assert.equal(n, 0, 'the cancel ended the backend query');
  const r = await runClient(gw.trino('trino-user'), 'SELECT 9 AS x');
  assert.deepEqual(r.data, [[9]]);
});

test('a cursor inside a transaction keeps the block pinned and committed work stays', async () => {
  const c = client();
  await c.connect();
  await c.query('DELETE FROM qf_e2e WHERE id >= 300');
  await c.query('BEGIN');
  await c.query("INSERT INTO qf_e2e (id, name) VALUES (300, 'in block')");
  const cursor = c.query(new Cursor('SELECT g AS n FROM generate_series(1, 500) g'));
  const part = await cursor.read(100);
  assert.equal(part.length, 100);
  await cursor.close(); // read to its end on the pinned connection, then freed
  const seen = await c.query('SELECT count(*)::int AS n FROM qf_e2e WHERE id = 300');
  assert.equal(seen.rows[0].n, 1, 'still inside the same transaction');
  await c.query('COMMIT');
  await c.end();
  const d = direct();
  await d.connect();
  const rows = await d.query('SELECT name FROM qf_e2e WHERE id = 300');
  const idle = await d.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'idle in transaction' AND query LIKE '%qf_e2e%'");
  await d.end();
  assert.deepEqual(rows.rows, [{ name: 'in block' }]);
  assert.equal(idle.rows[0].n, 0);
});

test('pgjdbc: statement metadata, server-side prepared statements, fetch size, errors, types', async () => {
  const r = spawnSync('java', ['-cp', '/usr/share/java/postgresql.jar', 'jdbc/PgJdbcCheck.java', String(ports.pg)],
    { encoding: 'utf8', timeout: 120000 });
  assert.equal(r.status, 0, r.stderr);
  const direct = spawnSync('java', ['-cp', '/usr/share/java/postgresql.jar', 'jdbc/PgJdbcCheck.java',
    new URL(PG_URL).port], { encoding: 'utf8', timeout: 120000 });
  assert.equal(r.stdout, direct.stdout);
  assert.deepEqual(r.stdout.trim().split('\n'), [
    'metadata id:int4 name:text price:numeric', // as PostgreSQL describes the statement
    'prepared 8',
    'fetched 1000 500500',
    'error 42P01',
    'timestamptz 2024-02-29T12:00:00Z',
  ]);
});

test("through the Trino frontend too, a client's temporary table goes with its connection", async (t) => {
  // One connection actor: the next query runs where the table was made.
  const solo = await soloGateway(t, 23225);
  const made = await runClient(solo.trino('first'), "CREATE TEMP TABLE qf_private AS SELECT 'a-data' AS v");
  assert.equal(made.error, undefined, JSON.stringify(made.error));
  const next = await runClient(solo.trino('second'), 'SELECT v FROM pg_temp.qf_private');
  assert.match(next.error?.message ?? '', /does not exist/);
});
