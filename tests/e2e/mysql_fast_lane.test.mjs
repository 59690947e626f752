// The MySQL wire fast lane: statements for an all-MySQL group run on pooled
// non-blocking MariaDB connections on the socket's own thread, and must
// look to clients, operators and MariaDB just like the actor path does:
// the same limits, KILL, cancel, history and metrics.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import mysql from 'mysql2/promise';
import { spawnSync } from 'node:child_process';
import {
  startGateway, config, parseMetrics, metricValue, waitFor, sleep, killAfterCleanups
} from './support/gateway.mjs';

const MY_URL = process.env.QF_MY_URL || 'mysql://qf:qf@127.0.0.1:13306/qftest';
const T = { timeout: 90000 };
const GROUP = 'mylane';
const CLUSTER = 'maria';

/// A gateway with one all-MySQL group, its admin API on `base` and the
/// MySQL wire frontend on base + 1.
/// `twins`: a second member on the same server, taking turns with the first.
async function laneGateway(t, base, { poolSize = 2, maxRunningQueries = 4, auth, wire = {}, twins = false, cluster = {} } = {}) {
  const members = twins ? [CLUSTER, `${CLUSTER}2`] : [CLUSTER];
  const cfg = config({
    trinoPort: undefined,
    adminPort: base,
    clusters: Object.fromEntries(members.map(
      (name) => [name, { engine: 'mysql', endpoint: MY_URL, maxRunningQueries, poolSize, ...cluster }])),
    clusterGroups: {
      [GROUP]: { members, maxRunningQueries, maxQueuedQueries: 100, strategy: { type: 'roundRobin' } },
    },
    routingFallback: GROUP,
  });
  cfg.queryflux.externalAddress = `http://127.0.0.1:${base}`;
  // Three wire threads: sessions, their backends and cancels cross loops.
  cfg.queryflux.wireThreads = 3;
  if (auth) cfg.auth = auth;
  cfg.queryflux.frontends = {
    trinoHttp: { enabled: false },
    mysqlWire: { enabled: true, port: base + 1, ...wire },
  };
  const gw = await startGateway(cfg);
  gw.myPort = base + 1;
  killAfterCleanups(t, gw);
  return gw;
}

async function through(gw) {
  const c = await mysql.createConnection({ host: '127.0.0.1', port: gw.myPort, user: 'app', database: 'qftest' });
  c.on('error', () => {});
  gw.defer(() => c.destroy());
  return c;
}

async function direct(gw) {
  const d = await mysql.createConnection({ uri: MY_URL });
  gw.defer(() => d.end());
  return d;
}

/// Statements MariaDB runs now whose text starts with `prefix`.
async function runningOnMaria(d, prefix) {
  const [rows] = await d.query(
    'SELECT id, info FROM information_schema.processlist WHERE info LIKE ? AND id <> CONNECTION_ID()',
    [`${prefix}%`]);
  return rows;
}

test('at most maxRunningQueries statements run on MariaDB at once, and every one finishes', T, async (t) => {
  const gw = await laneGateway(t, 24200, { poolSize: 4, maxRunningQueries: 4 });
  const d = await direct(gw);
  const clients = await Promise.all(Array.from({ length: 12 }, () => through(gw)));
  let sampling = true;
  let most = 0;
  const sampler = (async () => {
    while (sampling) {
      most = Math.max(most, (await runningOnMaria(d, 'SELECT SLEEP(0.5)')).length);
      await sleep(20);
    }
  })();
  const results = await Promise.all(clients.map((c, i) => c.query(`SELECT SLEEP(0.5) AS s, ${i} AS i`)));
  sampling = false;
  await sampler;
  results.forEach(([rows], i) => assert.deepEqual(rows, [{ s: 0, i }]));
  assert.ok(most <= 4, `MariaDB ran ${most} at once`);
  assert.equal(most, 4, 'MariaDB should have run 4 at once');
});

test('backend connections are pooled across client connections', T, async (t) => {
  const gw = await laneGateway(t, 24202, { poolSize: 2 });
  const ids = new Set();
  for (let i = 0; i < 30; i++) {
    const c = await through(gw);
    const [rows] = await c.query('SELECT @@pseudo_thread_id AS id');
    ids.add(Number(rows[0].id));
    await c.end();
  }
  assert.ok(ids.size >= 1 && ids.size <= 2, `30 client connections used ${ids.size} backends: ${[...ids]}`);
});

test('fast-lane statements are listed, cancelled by the admin API, counted and recorded', T, async (t) => {
  const gw = await laneGateway(t, 24204);
  const q = (s, status) => metricValue(s, 'queryflux_queries_total',
    { cluster_group: GROUP, engine_type: 'mysql', protocol: 'mysqlWire', status }) ?? 0;
  const before = parseMetrics(await gw.metrics());
  const c = await through(gw);

  const [rows] = await c.query("SELECT 'lane_rec' AS tag, seq FROM seq_1_to_3");
  assert.equal(rows.length, 3);
  await assert.rejects(c.query('SELECT * FROM qf_no_such_table'), (e) => e.errno === 1146 && e.sqlState === '42S02');

  // A text of its own: other files' statements run on the same MariaDB.
  const slow = c.query('SELECT SLEEP(30) AS listed').then(() => null, (e) => e);
  let entry;
  await waitFor(async () => {
    entry = (await gw.admin('/admin/queries/running')).body.find?.((x) => x.sqlPreview === 'SELECT SLEEP(30) AS listed');
    return entry;
  }, { timeoutMs: 10000, what: 'SLEEP(30) listed as running' });
  assert.deepEqual(
    { protocol: entry.protocol, state: entry.state, group: entry.group, cluster: entry.cluster, user: entry.submittedBy },
    { protocol: 'mysqlWire', state: 'RUNNING', group: GROUP, cluster: CLUSTER, user: 'app' });
  assert.match(entry.id, /^my_/);
  const cancelled = await gw.admin(`/admin/queries/${encodeURIComponent(entry.id)}`, { method: 'DELETE' });
  assert.equal(cancelled.status, 200, cancelled.text);
  const err = await slow;
  assert.ok(err, 'SLEEP(30) was not stopped');
  assert.equal(err.errno, 1317, err.message);
  const d = await direct(gw);
  assert.deepEqual(await runningOnMaria(d, 'SELECT SLEEP(30) AS listed'), []);

  assert.equal((await gw.historyRecord(entry.id)).status, 'Cancelled'); // the last one filed
  const now = parseMetrics(await gw.metrics());
  assert.equal(q(now, 'Success') - q(before, 'Success'), 1);
  assert.equal(q(now, 'Failed') - q(before, 'Failed'), 1);
  assert.equal(q(now, 'Cancelled') - q(before, 'Cancelled'), 1);
  assert.equal(metricValue(now, 'queryflux_running_queries', { cluster_group: GROUP, cluster_name: CLUSTER }), 0);
  const rec = (await gw.history({ group: GROUP })).queries.find((r) => r.sql.includes("'lane_rec'"));
  assert.deepEqual(
    { clusterName: rec?.clusterName, engineType: rec?.engineType, protocol: rec?.protocol,
      status: rec?.status, rowsReturned: rec?.rowsReturned, user: rec?.user, catalog: rec?.catalog },
    { clusterName: CLUSTER, engineType: 'mysql', protocol: 'mysqlWire', status: 'Success',
      rowsReturned: 3, user: 'app', catalog: 'qftest' });
});

test('a client that leaves mid-statement has it killed and frees its slot and its backend connection', T, async (t) => {
  // A busy session reads nothing, but hears the hang-up: after
  // hang_up_grace (1 s) the statement is taken for abandoned.
  const gw = await laneGateway(t, 24206, { poolSize: 1, maxRunningQueries: 1 });
  const d = await direct(gw);
  const leaving = await through(gw);
  leaving.query('SELECT SLEEP(30) AS leaving').catch(() => {});
  await waitFor(async () => (await runningOnMaria(d, 'SELECT SLEEP(30) AS leaving')).length === 1,
    { what: 'the statement running on MariaDB' });
  leaving.destroy();
  await waitFor(async () => (await runningOnMaria(d, 'SELECT SLEEP(30) AS leaving')).length === 0,
    { timeoutMs: 5000, what: 'the statement killed on MariaDB' });
  const next = await through(gw);
  const [rows] = await next.query('SELECT 41 + 1 AS n'); // the one slot came back
  assert.deepEqual(rows, [{ n: 42 }]);
  await waitFor(async () => (await gw.admin('/admin/queries/running')).body.length === 0,
    { what: 'nothing listed as running' });
});

test('a transaction runs on the fast lane: one pooled MariaDB connection, its slot held until it ends', T, async (t) => {
  const gw = await laneGateway(t, 24240, { poolSize: 1 });
  const d = await direct(gw);
  await d.query('DROP TABLE IF EXISTS qf_mylane_tx');
  await d.query('CREATE TABLE qf_mylane_tx (id INT PRIMARY KEY) ENGINE=InnoDB');
  const running = () => gw.running(CLUSTER);
  const ids = async () => (await d.query('SELECT id FROM qf_mylane_tx ORDER BY id'))[0].map((r) => r.id);
  const c = await through(gw);
  const [[{ id: pooled }]] = await c.query('SELECT @@pseudo_thread_id AS id');
  await c.beginTransaction();
  const [[{ id: inBlock }]] = await c.query('SELECT @@pseudo_thread_id AS id');
  assert.equal(inBlock, pooled, "the block runs on the fast lane's pooled connection");
  await c.query('INSERT INTO qf_mylane_tx VALUES (1)');
  assert.equal(await running(), 1, 'an idle block holds its slot');
  assert.deepEqual(await ids(), []);
  await c.rollback();
  assert.equal(await running(), 0, 'ROLLBACK frees it');
  assert.deepEqual(await ids(), []);
  // autocommit off: the implicit block opens on the fast lane too.
  await c.query('SET autocommit = 0');
  await c.query('INSERT INTO qf_mylane_tx VALUES (2)');
  assert.equal(await running(), 1);
  await c.query('COMMIT');
  assert.equal(await running(), 0);
  assert.deepEqual(await ids(), [2]);
  const [[{ id: after }]] = await c.query('SELECT @@pseudo_thread_id AS id');
  assert.equal(after, pooled, 'the connection went back to the pool');
  await c.query('ROLLBACK'); // the block that SELECT opened
});

test("a block whose MariaDB connection is killed ends its client's connection", T, async (t) => {
  const gw = await laneGateway(t, 24242);
  const d = await direct(gw);
  await d.query('DROP TABLE IF EXISTS qf_mylane_lost');
  await d.query('CREATE TABLE qf_mylane_lost (id INT) ENGINE=InnoDB');
  const c = await through(gw);
  const ended = new Promise((resolve) => c.connection.stream.on('close', resolve));
  await c.beginTransaction();
  await c.query('INSERT INTO qf_mylane_lost VALUES (1)');
  const [[{ id }]] = await c.query('SELECT @@pseudo_thread_id AS id');
  await d.query(`KILL ${id}`);
  // At once, not when the client next speaks: it may never (wait_timeout
  // ends idle blocks the same way).
  await Promise.race([ended, sleep(5000).then(() => { throw new Error('the client connection stayed open'); })]);
  await waitFor(async () => (await gw.running(CLUSTER)) === 0,
    { timeoutMs: 3000, what: 'the slot freed' });
  await assert.rejects(c.query('INSERT INTO qf_mylane_lost VALUES (2)'));
  assert.deepEqual((await d.query('SELECT count(*) AS n FROM qf_mylane_lost'))[0][0].n, 0);
});

test("DDL inside a block commits it, as MariaDB says, and the client's status flags follow", T, async (t) => {
  const gw = await laneGateway(t, 24244);
  const d = await direct(gw);
  await d.query('DROP TABLE IF EXISTS qf_mylane_ddl, qf_mylane_ddl2');
  await d.query('CREATE TABLE qf_mylane_ddl (id INT) ENGINE=InnoDB');
  const c = await through(gw);
  await c.beginTransaction();
  const [ins] = await c.query('INSERT INTO qf_mylane_ddl VALUES (1)');
  assert.equal(ins.serverStatus & 1, 1, 'in a transaction');
  const [ddl] = await c.query('CREATE TABLE qf_mylane_ddl2 (id INT)'); // an implicit COMMIT
  assert.equal(ddl.serverStatus & 1, 0, 'the DDL ended the block');
  await c.rollback(); // nothing left to roll back
  const [[{ n }]] = await d.query('SELECT count(*) AS n FROM qf_mylane_ddl');
  assert.equal(Number(n), 1, 'the insert was committed by the DDL');
  assert.equal(await gw.running(CLUSTER), 0);
  await d.query('DROP TABLE IF EXISTS qf_mylane_ddl2');
});

test("a mysql2 pool's resetOnRelease rolls back what a released connection left open", T, async (t) => {
  const gw = await laneGateway(t, 24246);
  const d = await direct(gw);
  await d.query('DROP TABLE IF EXISTS qf_mylane_reset');
  await d.query('CREATE TABLE qf_mylane_reset (id INT) ENGINE=InnoDB');
  const pool = mysql.createPool({ host: '127.0.0.1', port: gw.myPort, user: 'app', database: 'qftest',
    connectionLimit: 1, resetOnRelease: true });
  gw.defer(() => pool.end());
  const first = await pool.getConnection();
  const id = first.connection.threadId;
  await first.beginTransaction();
  await first.query('INSERT INTO qf_mylane_reset VALUES (1)');
  await first.query('SET autocommit = 0');
  first.release(); // COM_RESET_CONNECTION: the block rolls back
  const again = await pool.getConnection();
  assert.equal(again.connection.threadId, id, 'the same connection, reset (a failed reset replaces it)');
  const [[vars]] = await again.query('SELECT @@autocommit AS a');
  assert.equal(Number(vars.a), 1, 'autocommit is on again');
  const [[{ n }]] = await again.query('SELECT count(*) AS n FROM qf_mylane_reset');
  assert.equal(Number(n), 0, 'the insert was rolled back');
  const [rows] = await again.execute('SELECT ? + 1 AS x', [41]); // statements prepared again
  assert.equal(Number(rows[0].x), 42);
  again.release();
  assert.equal(await gw.running(CLUSTER), 0);
});

test("mysql2's changeUser logs in anew on the same connection, and its open block rolls back", T, async (t) => {
  // PHP's persistent connections send COM_CHANGE_USER each time they are reused.
  const users = { app: { password: 'app-pw' }, bob: { password: 'bob-pw' } };
  const gw = await laneGateway(t, 24248, { auth: { provider: 'static', staticUsers: { users } } });
  const d = await direct(gw);
  await d.query('DROP TABLE IF EXISTS qf_mylane_change');
  await d.query('CREATE TABLE qf_mylane_change (id INT) ENGINE=InnoDB');
  const c = await mysql.createConnection({ host: '127.0.0.1', port: gw.myPort, user: 'app',
    password: 'app-pw', database: 'qftest' });
  c.on('error', () => {});
  gw.defer(() => c.destroy());
  const id = c.connection.threadId;
  await c.beginTransaction();
  await c.query('INSERT INTO qf_mylane_change VALUES (1)');
  assert.equal(await gw.running(CLUSTER), 1, 'the block holds its slot');

  await c.changeUser({ user: 'bob', password: 'bob-pw', database: 'qftest' });
  assert.equal(c.connection.threadId, id);
  assert.equal(await gw.running(CLUSTER), 0, 'the block ended with the old login');
  const [[{ n }]] = await c.query("SELECT count(*) AS n, 'as_bob' AS tag FROM qf_mylane_change");
  assert.equal(Number(n), 0, 'the open block was rolled back');
  const rec = (await gw.historyWhen({ search: 'as_bob' })).queries[0];
  assert.equal(rec.user, 'bob');

  // A wrong password is refused and ends the connection, as MySQL does.
  await assert.rejects(c.changeUser({ user: 'app', password: 'wrong' }),
    (e) => e.errno === 1045 && /Access denied for user 'app'/.test(e.message));
  await assert.rejects(c.query('SELECT 1'));
});

test('a client silent inside a block past idleTransactionTimeout is let go, its block rolled back', T, async (t) => {
  const gw = await laneGateway(t, 24250, { maxRunningQueries: 1, wire: { idleTransactionTimeout: '400ms' } });
  const d = await direct(gw);
  await d.query('DROP TABLE IF EXISTS qf_mylane_idle');
  await d.query('CREATE TABLE qf_mylane_idle (id INT) ENGINE=InnoDB');
  const c = await through(gw);
  const ended = new Promise((resolve) => c.connection.stream.on('close', resolve));
  await c.beginTransaction();
  for (let i = 0; i < 4; i++) { // speaking keeps the block, past the timeout in all
    await sleep(200);
    await c.query('INSERT INTO qf_mylane_idle VALUES (?)', [i]);
  }
  assert.equal(await gw.running(CLUSTER), 1, 'the block holds the slot');
  await Promise.race([ended, sleep(5000).then(() => { throw new Error('the silent client was not let go'); })]);
  await waitFor(async () => (await gw.running(CLUSTER)) === 0,
    { timeoutMs: 3000, what: 'the slot freed' });
  assert.equal(Number((await d.query('SELECT count(*) AS n FROM qf_mylane_idle'))[0][0].n), 0);
});

test('session state stays with its client: temporary tables, user variables and GET_LOCK work, and nobody else sees them', async (t) => {
  const gw = await laneGateway(t, 24252, { poolSize: 1, maxRunningQueries: 1 });
  for (const opening of [[], ['BEGIN']]) {
    const a = await through(gw);
    for (const sql of opening) await a.query(sql);
    await a.query("CREATE TEMPORARY TABLE qf_private AS SELECT 'a-data' AS v");
    if (opening.length) await a.query('COMMIT');
    await a.query(opening.length ? "SELECT @qf_secret := 'a-var'" : "SET @qf_secret = 'a-var'");
    assert.equal(Number((await a.query("SELECT GET_LOCK('qf_lock', 0) AS got"))[0][0].got), 1);
    assert.deepEqual((await a.query('SELECT v FROM qf_private'))[0], [{ v: 'a-data' }]);
    assert.deepEqual((await a.query('SELECT @qf_secret AS s'))[0], [{ s: 'a-var' }]);

    const b = await through(gw);
    await assert.rejects(b.query('SELECT v FROM qf_private'), (e) => e.errno === 1146);
    assert.deepEqual((await b.query('SELECT @qf_secret AS s'))[0], [{ s: null }]);
    assert.equal(Number((await b.query("SELECT GET_LOCK('qf_lock', 0) AS got"))[0][0].got), 0);
    await a.end(); // its connection closes, and its lock with it
    await waitFor(async () => Number((await b.query("SELECT GET_LOCK('qf_lock', 0) AS got"))[0][0].got) === 1,
      { what: 'the lock to go with its session' });
    await b.query("SELECT RELEASE_LOCK('qf_lock')");
    await b.end();
  }
});
test("a client's user variables follow it in a group of two clusters taking turns, also when it must wait", T, async (t) => {
  const gw = await laneGateway(t, 24254, { twins: true, maxRunningQueries: 1 });
  const c = await through(gw);
  await c.query("SET @qf_turn = 'mine'");
  for (let i = 0; i < 6; ++i) {
    const [rows] = await c.query('SELECT @qf_turn AS v');
    assert.deepEqual(rows, [{ v: 'mine' }], `statement ${i}`);
  }
  // Every member busy: it waits in the queue for its own.
  const holders = [await through(gw), await through(gw)];
  const holding = holders.map((h) => h.query('SELECT SLEEP(0.5)'));
  await waitFor(async () => (await gw.running(CLUSTER)) + (await gw.running(`${CLUSTER}2`)) === 2,
    { what: 'both members busy' });
  const [rows] = await c.query('SELECT @qf_turn AS v');
  assert.deepEqual(rows, [{ v: 'mine' }]);
  await Promise.all(holding);
  const runs = (await gw.historyWhen({ search: '@qf_turn' }, (h) => h.total >= 8)).queries;
  assert.equal(new Set(runs.map((q) => q.clusterName)).size, 1, JSON.stringify(runs.map((q) => q.clusterName)));
  assert.ok(runs.some((q) => q.queueDurationMs > 0), 'none waited');
});

test('past maxPinnedSessions a statement that would keep one more connection is refused (1040) before it runs', T, async (t) => {
  const gw = await laneGateway(t, 24256, { cluster: { maxPinnedSessions: 1 } });
  const a = await through(gw);
  await a.query('SET @qf_pin = 1');
  const b = await through(gw);
  await assert.rejects(b.query('SET @qf_pin = 2'),
    (e) => e.errno === 1040 && e.sqlState === '08004' && /maxPinnedSessions.*COM_RESET_CONNECTION/.test(e.message));
  const [rows] = await b.query('SELECT @qf_pin AS v');
  assert.deepEqual(rows, [{ v: null }], 'it never ran');
  await a.end();
  await waitFor(async () => {
    try { await b.query('SET @qf_pin = 2'); return true; } catch { return false; }
  }, { what: "a's pin to go with its connection" });
  const [after] = await b.query('SELECT @qf_pin AS v');
  assert.deepEqual(after, [{ v: 2 }]);
});

test("SET of the server's variables reaches MariaDB and stays with its client: time_zone, sql_mode, the isolation level", T, async (t) => {
  // poolSize 1: a variable left on the pooled connection would reach b.
  const gw = await laneGateway(t, 24258, { poolSize: 1, maxRunningQueries: 2 });
  const a = await through(gw);
  await a.query("SET time_zone = '+09:00'");
  await a.query("SET SESSION sql_mode = 'PIPES_AS_CONCAT'");
  await a.query('SET SESSION TRANSACTION ISOLATION LEVEL SERIALIZABLE');
  const [mine] = await a.query(`SELECT TIME_FORMAT(TIMEDIFF(NOW(), UTC_TIMESTAMP()), '%H:%i') AS shift,
    'a' || 'b' AS piped, @@session.tx_isolation AS iso FROM DUAL`);
  assert.deepEqual(mine, [{ shift: '09:00', piped: 'ab', iso: 'SERIALIZABLE' }]);
  // Read back as a connect-time question would: the server answers, with the client's.
  const [[vars]] = [await a.query('SELECT @@time_zone AS tz, @@autocommit AS ac')].map(([rows]) => rows);
  assert.equal(String(vars.ac), '1'); // the gateway's own
  const [[tz]] = [await a.query('SELECT @@session.time_zone AS tz')].map(([rows]) => rows);
  assert.equal(tz.tz, '+09:00');
  const b = await through(gw);
  const [theirs] = await b.query(`SELECT TIME_FORMAT(TIMEDIFF(NOW(), UTC_TIMESTAMP()), '%H:%i') AS shift,
    @@session.sql_mode AS mode, @@session.tx_isolation AS iso FROM DUAL`);
  assert.notEqual(theirs[0].shift, '09:00');
  assert.doesNotMatch(theirs[0].mode, /PIPES_AS_CONCAT/);
  assert.notEqual(theirs[0].iso, 'SERIALIZABLE');
  // One who set nothing has the server's own zone, as directly.
  const [[own]] = (await b.query('SELECT @@session.time_zone AS tz'));
  const [[server]] = (await (await direct(gw)).query('SELECT @@session.time_zone AS tz'));
  assert.equal(own.tz, server.tz);
  // The character set stays the gateway's: its connections speak utf8mb4.
  await b.query('SET NAMES latin1');
  const [text] = await b.query("SELECT 'grüße ✓' AS t");
  assert.deepEqual(text, [{ t: 'grüße ✓' }]);
});

test("clients' SETs of session variables are replayed on whichever pooled connection their statements get: no connection is pinned", T, async (t) => {
  // maxPinnedSessions 0: a SET that pinned a connection would be refused.
  const gw = await laneGateway(t, 24260, { poolSize: 2, maxRunningQueries: 3, cluster: { maxPinnedSessions: 0 } });
  const [a, b, c] = [await through(gw), await through(gw), await through(gw)];
  await a.query("SET time_zone = '+09:00', SESSION sql_mode = 'PIPES_AS_CONCAT,NO_ENGINE_SUBSTITUTION'");
  await b.query('SET max_statement_time = 7');
  const look = `SELECT TIME_FORMAT(TIMEDIFF(NOW(), UTC_TIMESTAMP()), '%H:%i') AS shift,
    'a' || 'b' AS piped, @@session.max_statement_time AS mst FROM DUAL`;
  for (let round = 0; round < 15; ++round) {
    const [[ra], [rb], [rc]] = await Promise.all([a, b, c].map((x) => x.query(look)));
    assert.equal(ra[0].shift, '09:00', `a round ${round}`);
    assert.equal(ra[0].piped, 'ab', `a round ${round}`);
    for (const [name, r] of [['b', rb], ['c', rc]]) {
      assert.notEqual(r[0].shift, '09:00', `${name} round ${round}`);
      assert.equal(String(r[0].piped), '0', `${name} round ${round}`);
    }
    assert.equal(Number(rb[0].mst), 7, `b round ${round}`);
    assert.equal(Number(rc[0].mst), 0, `c round ${round}`);
  }
  // A SET the server refuses changes nothing.
  await assert.rejects(a.query("SET time_zone = '+00:00', sql_mode = 'NO_SUCH_MODE'"), (e) => e.errno === 1231);
  const [[again]] = [await a.query(look)].map(([rows]) => rows);
  assert.equal(again.shift, '09:00');
  // COM_CHANGE_USER starts the session anew: none of its variables.
  await a.changeUser({ user: 'app' });
  const [[anew]] = [await a.query(look)].map(([rows]) => rows);
  assert.notEqual(anew.shift, '09:00');
  assert.equal(String(anew.piped), '0');
});

test('a CALL answers with each result set of its procedure and then its status, through query() and execute(); the connection is ready for the next client', T, async (t) => {
  // One pooled connection: the next statement, another client's, runs where the CALL ran.
  const gw = await laneGateway(t, 24262, { poolSize: 1, maxRunningQueries: 1 });
  const d = await direct(gw);
  await d.query('DROP PROCEDURE IF EXISTS qf_two_sets');
  await d.query('CREATE PROCEDURE qf_two_sets(IN n INT) BEGIN SELECT n AS p1; SELECT n + 1 AS p2, "z" AS q; END');
  gw.defer(() => d.query('DROP PROCEDURE IF EXISTS qf_two_sets'));
  const [a, b] = [await through(gw), await through(gw)];
  const expected = async (sql, args) => (args ? d.execute(sql, args) : d.query(sql))
    .then(([r]) => JSON.parse(JSON.stringify(r)));
  const got = async (c, sql, args) => (args ? c.execute(sql, args) : c.query(sql))
    .then(([r]) => JSON.parse(JSON.stringify(r)));
  assert.deepEqual(await got(a, 'CALL qf_two_sets(5)'), await expected('CALL qf_two_sets(5)'));
  assert.deepEqual((await b.query('SELECT 9 AS after_call'))[0], [{ after_call: 9 }]);
  assert.deepEqual(await got(a, 'CALL qf_two_sets(?)', [6]), await expected('CALL qf_two_sets(?)', [6]));
  assert.deepEqual((await b.query('SELECT 10 AS after_execute'))[0], [{ after_execute: 10 }]);
  const [sets] = await a.query('CALL qf_two_sets(7)');
  assert.equal(sets.length, 3, 'two result sets and the status');
  assert.deepEqual(sets[1], [{ p2: 8, q: 'z' }]);
});

test('with multipleStatements a script runs statement by statement with a result each, up to the first that fails; without it, it is one statement', T, async (t) => {
  const gw = await laneGateway(t, 24264, { poolSize: 1, maxRunningQueries: 1 });
  const c = await mysql.createConnection({ host: '127.0.0.1', port: gw.myPort, user: 'app', database: 'qftest', multipleStatements: true });
  gw.defer(() => c.destroy());
  const d = await direct(gw);
  const [results] = await c.query(
    'DROP TABLE IF EXISTS qf_script; CREATE TABLE qf_script (a int, s varchar(9)); '
    + "INSERT INTO qf_script VALUES (1, 'x;y'), (2, 'it\\'s'); SELECT a, s FROM qf_script ORDER BY a; SELECT @@version_comment IS NOT NULL AS v");
  gw.defer(() => d.query('DROP TABLE IF EXISTS qf_script'));
  assert.equal(results.length, 5);
  assert.equal(results[2].affectedRows, 2);
  assert.deepEqual(results[3], [{ a: 1, s: 'x;y' }, { a: 2, s: "it's" }]);
  assert.deepEqual(results[4], [{ v: 1 }]);
  await assert.rejects(c.query('INSERT INTO qf_script VALUES (3, "c"); SELEC 4; INSERT INTO qf_script VALUES (5, "e")'),
    (e) => e.code === 'ER_PARSE_ERROR');
  const [[{ n }]] = await d.query('SELECT count(*) AS n FROM qf_script WHERE a IN (3, 5)');
  assert.equal(n, 1, 'the statement before the failure ran, the one after it did not');
  const rec = (await gw.historyWhen({ search: 'qf_script ORDER BY' })).queries;
  assert.equal(rec.length, 1, 'each statement of a script is a query of its own in the history');
  const single = await through(gw);
  await assert.rejects(single.query('SELECT 1; SELECT 2'), (e) => e.code === 'ER_PARSE_ERROR');
  assert.deepEqual((await c.query('SELECT 3 AS n'))[0], [{ n: 3 }]);
});

test("a client's database (named at login, by USE or COM_INIT_DB) is given to whichever pooled connection its statements get, and no other client's statements run in it", T, async (t) => {
  // One pooled connection for all, none of them pinned.
  const gw = await laneGateway(t, 24266, { poolSize: 1, maxRunningQueries: 2, cluster: { maxPinnedSessions: 0 } });
  const a = await through(gw); // database qftest
  const b = await mysql.createConnection({ host: '127.0.0.1', port: gw.myPort, user: 'app', database: 'information_schema' });
  gw.defer(() => b.destroy());
  const db = async (c) => (await c.query('SELECT DATABASE() AS d, 1 AS x'))[0][0].d;
  const schemata = 'SELECT count(*) > 0 AS has FROM SCHEMATA';
  assert.deepEqual((await b.query(schemata))[0], [{ has: 1 }], 'the login database');
  for (let round = 0; round < 3; round++) {
    assert.equal(await db(a), 'qftest');
    assert.equal(await db(b), 'information_schema');
  }
  await a.query('USE information_schema');
  assert.deepEqual((await a.query(schemata))[0], [{ has: 1 }]);
  await b.query('USE qftest');
  assert.equal(await db(a), 'information_schema');
  assert.equal(await db(b), 'qftest');
  await assert.rejects(a.query('USE qf_no_such_database'), (e) => e.errno === 1049);
  assert.equal(await db(a), 'information_schema', 'a refused USE changes nothing');
  await a.changeUser({ database: 'qftest' }); // COM_CHANGE_USER with a database
  assert.equal(await db(a), 'qftest');
  const cli = spawnSync('mariadb', ['--no-defaults', '-h127.0.0.1', `-P${gw.myPort}`, '-uapp', 'qftest',
    '-e', 'use information_schema; select database(), count(*) > 0 from SCHEMATA'], { encoding: 'utf8' });
  assert.equal(cli.status, 0, cli.stderr); // the CLI's use is a COM_INIT_DB
  assert.match(cli.stdout, /information_schema\t1/);
  assert.equal(await db(b), 'qftest');
});

test("what MariaDB says of a statement reaches its client: insertId and LAST_INSERT_ID() (its own, on a shared pool), matched rows for CLIENT_FOUND_ROWS, warnings, the summary", T, async (t) => {
  const gw = await laneGateway(t, 24268, { poolSize: 2, maxRunningQueries: 4 });
  const d = await direct(gw);
  await d.query('DROP TABLE IF EXISTS qf_ids');
  await d.query('CREATE TABLE qf_ids (id int AUTO_INCREMENT PRIMARY KEY, who varchar(4), v int DEFAULT 1)');
  gw.defer(() => d.query('DROP TABLE IF EXISTS qf_ids'));
  const clients = await Promise.all([0, 1, 2, 3].map(() => through(gw)));
  for (let round = 0; round < 3; round++) {
    const ids = await Promise.all(clients.map((c, i) => c.query('INSERT INTO qf_ids (who) VALUES (?)', [`c${i}`])
      .then(([r]) => r.insertId)));
    assert.equal(new Set(ids).size, 4, `each insert has an id of its own: ${ids}`);
    const last = await Promise.all(clients.map((c) => c.query('SELECT LAST_INSERT_ID()')
      .then(([r]) => Number(r[0]['LAST_INSERT_ID()']))));
    assert.deepEqual(last, ids, "each client's LAST_INSERT_ID() is its own insert's");
  }
  const [[{ n }]] = await d.query('SELECT count(*) AS n FROM qf_ids');
  assert.equal(n, 12);
  // LAST_INSERT_ID() inside another statement is the client's own too: a
  // child row points at its client's parent, whichever connection ran it.
  await d.query('DROP TABLE IF EXISTS qf_child');
  await d.query('CREATE TABLE qf_child (parent int, who varchar(4))');
  gw.defer(() => d.query('DROP TABLE IF EXISTS qf_child'));
  for (let round = 0; round < 3; round++) {
    await Promise.all(clients.map(async (c, i) => {
      await c.query('INSERT INTO qf_ids (who) VALUES (?)', [`p${i}`]);
      await c.query('INSERT INTO qf_child VALUES (LAST_INSERT_ID(), ?)', [`p${i}`]);
    }));
  }
  const [mismatched] = await d.query(
    'SELECT count(*) AS n FROM qf_child c JOIN qf_ids p ON p.id = c.parent WHERE p.who <> c.who');
  const [children] = await d.query('SELECT count(*) AS n FROM qf_child c JOIN qf_ids p ON p.id = c.parent');
  assert.deepEqual([mismatched[0].n, children[0].n], [0, 12]);
  await d.query('DELETE FROM qf_ids WHERE id > 12');
  // So is FOUND_ROWS(), after SQL_CALC_FOUND_ROWS (a paginated list's total).
  for (let round = 0; round < 3; round++) {
    const totals = await Promise.all(clients.map(async (c, i) => {
      const [page] = await c.query(`SELECT SQL_CALC_FOUND_ROWS seq FROM seq_1_to_${10 * (i + 1)} LIMIT 3`);
      assert.equal(page.length, 3);
      const [[plain]] = await c.query('SELECT FOUND_ROWS()');
      const [[inside]] = await c.query('SELECT FOUND_ROWS() + 0 AS n');
      return [Number(plain['FOUND_ROWS()']), Number(inside.n)];
    }));
    assert.deepEqual(totals, [[10, 10], [20, 20], [30, 30], [40, 40]]);
  }
  const [exec] = await clients[1].execute('INSERT INTO qf_ids (who) VALUES (?)', ['e']);
  const [[{ id }]] = await d.query("SELECT id FROM qf_ids WHERE who = 'e'");
  assert.equal(exec.insertId, id);
  // mysql2 asks for CLIENT_FOUND_ROWS: rows matched, changed or not.
  const [same] = await clients[0].query('UPDATE qf_ids SET v = 1 WHERE id <= 3');
  assert.equal(same.affectedRows, 3);
  assert.equal(same.changedRows, 0);
  assert.match(same.info, /^Rows matched: 3 {2}Changed: 0/);
  const changed = await mysql.createConnection({ host: '127.0.0.1', port: gw.myPort, user: 'app', database: 'qftest', flags: ['-FOUND_ROWS'] });
  gw.defer(() => changed.destroy());
  assert.equal((await changed.query('UPDATE qf_ids SET v = 1 WHERE id <= 3'))[0].affectedRows, 0);
  await clients[2].query("SET sql_mode = ''");
  const [warned] = await clients[2].query("INSERT INTO qf_ids (who) VALUES ('too long')");
  assert.equal(warned.warningStatus, 1);
  // HANDLER keeps its connection for its client.
  await clients[3].query('HANDLER qf_ids OPEN AS qf_h');
  assert.equal((await clients[3].query('HANDLER qf_h READ FIRST'))[0].length, 1);
  for (let i = 0; i < 3; i++)
    await assert.rejects(clients[0].query('HANDLER qf_h READ FIRST'), (e) => e.errno === 1109);
  await clients[3].query('HANDLER qf_h CLOSE');
});

test("execute()'s parameters keep the types their client bound: a double is a double, a string a string however numeric, bytes and dates theirs", T, async (t) => {
  const gw = await laneGateway(t, 24270);
  const d = await direct(gw);
  await d.query('DROP TABLE IF EXISTS qf_zip');
  await d.query("CREATE TABLE qf_zip (zip varchar(9))");
  await d.query("INSERT INTO qf_zip VALUES ('2134'), ('02134')");
  gw.defer(() => d.query('DROP TABLE IF EXISTS qf_zip'));
  const c = await through(gw);
  const cases = [
    ["SELECT ? = '1.50' AS a", [1.5]],
    ['SELECT 10 / ? AS a', [4]],
    ['SELECT count(*) AS a FROM qf_zip WHERE zip = ?', ['2134']],
    ['SELECT ? + 1 AS a', [true]],
    ['SELECT hex(?) AS a', [Buffer.from([0, 255, 39, 92])]],
    ['SELECT ? AS a', ["it's \\ ok"]],
    ['SELECT ? AS a', [new Date('2024-02-29T12:00:00Z')]],
    ['SELECT ? AS a', [-7]],
    // LIMIT reads a number however bound (mysql2 binds every number as a double).
    ['SELECT count(*) AS a FROM (SELECT seq FROM seq_1_to_9 LIMIT ?) s', ['3']],
    ['SELECT count(*) AS a FROM (SELECT seq FROM seq_1_to_9 LIMIT ?) s', [2]],
    ['SELECT count(*) AS a FROM (SELECT seq FROM seq_1_to_9 LIMIT ?) s', [1.5]],
    ['SELECT sum(seq) AS a FROM (SELECT seq FROM seq_1_to_9 LIMIT ?, ?) s', [2, 3]],
    ['SELECT sum(seq) AS a FROM (SELECT seq FROM seq_1_to_9 LIMIT ? OFFSET ?) s', [3, 4]],
    ['SELECT sum(seq) AS a FROM (SELECT seq FROM seq_1_to_9 LIMIT 2 OFFSET ?) s', ['5']],
  ];
  for (const [sql, args] of cases) {
    const [[expected]] = await d.execute(sql, args);
    const [[got]] = await c.execute(sql, args);
    assert.deepEqual(got, expected, `${sql} ${args}`);
  }
});

test('columns reach mysql2 as MariaDB described them: table, type, flags and unsigned values, through query() and execute(), nestTables too', T, async (t) => {
  const gw = await laneGateway(t, 24272);
  const d = await direct(gw);
  await d.query('DROP TABLE IF EXISTS qf_described');
  await d.query(`CREATE TABLE qf_described (id bigint unsigned PRIMARY KEY, b bit(8), e enum('a','b'), y year,
    ts timestamp(3) NULL, t tinyint(1), u int unsigned, bin varbinary(4), dec6 decimal(6,2), f float, g text)`);
  await d.query(`INSERT INTO qf_described VALUES (18446744073709551615, b'101', 'b', 2024, '2024-02-29 12:00:00.123',
    1, 4294967295, x'00ff', 12.5, 1.25, 'txt')`);
  gw.defer(() => d.query('DROP TABLE IF EXISTS qf_described'));
  const c = await mysql.createConnection({ host: '127.0.0.1', port: gw.myPort, user: 'app', database: 'qftest',
    supportBigNumbers: true, bigNumberStrings: true });
  gw.defer(() => c.destroy());
  const d2 = await mysql.createConnection({ uri: MY_URL, supportBigNumbers: true, bigNumberStrings: true });
  gw.defer(() => d2.end());
  const described = (fields) => fields.map((f) => [f.name, f.table, f.orgTable, f.db, f.type, f.flags, f.decimals]);
  for (const run of [(x) => x.query('SELECT * FROM qf_described'),
    (x) => x.execute('SELECT * FROM qf_described WHERE id > ?', [0]),
    (x) => x.query({ sql: 'SELECT * FROM qf_described', nestTables: true })]) {
    const [expectedRows, expectedFields] = await run(d2);
    const [rows, fields] = await run(c);
    assert.deepEqual(rows, expectedRows);
    assert.deepEqual(described(fields), described(expectedFields));
  }
  const [[row]] = await c.execute('SELECT id, u FROM qf_described WHERE id > ?', [0]);
  assert.deepEqual(row, { id: '18446744073709551615', u: 4294967295 });
});

test("SET TRANSACTION (for the next transaction) reaches the connection that transaction runs on: its isolation level, READ ONLY", T, async (t) => {
  const gw = await laneGateway(t, 24274, { poolSize: 3 });
  const d = await direct(gw);
  await d.query('DROP TABLE IF EXISTS qf_next_tx');
  await d.query('CREATE TABLE qf_next_tx (a int) ENGINE=InnoDB');
  gw.defer(() => d.query('DROP TABLE IF EXISTS qf_next_tx'));
  await d.beginTransaction();
  await d.query('INSERT INTO qf_next_tx VALUES (1)'); // not committed
  gw.defer(() => d.rollback());
  const a = await through(gw);
  const count = async () => (await a.query('SELECT count(*) AS n FROM qf_next_tx'))[0][0].n;
  await a.query('SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED');
  await a.query('BEGIN');
  assert.equal(await count(), 1, 'a dirty read, as asked for');
  await a.query('COMMIT');
  await a.query('BEGIN');
  assert.equal(await count(), 0, 'the next transaction only');
  await a.query('COMMIT');
  await a.query('SET TRANSACTION READ ONLY');
  await assert.rejects(a.query('INSERT INTO qf_next_tx VALUES (2)'), (e) => e.errno === 1792);
  // Refused before its transaction began, it left READ ONLY waiting on its
  // connection, which nobody else gets.
  const others = await Promise.all([0, 1, 2].map(() => through(gw)));
  for (let i = 0; i < 3; i++)
    await Promise.all(others.map((o) => o.query('INSERT INTO qf_next_tx VALUES (3)')));
  await d.query('DELETE FROM qf_next_tx WHERE a = 3');
});

test('COM_RESET_CONNECTION inside a block rolls it back and lets go of the state the client left on its connection', T, async (t) => {
  const gw = await laneGateway(t, 24276);
  const c = await through(gw);
  await c.query('SET @qf_v = 5');
  await c.query('CREATE TEMPORARY TABLE qf_reset_tmp (a int)');
  await c.query('BEGIN');
  await c.query('INSERT INTO qf_reset_tmp VALUES (1)');
  await c.reset();
  assert.deepEqual((await c.query('SELECT @qf_v AS v'))[0], [{ v: null }]);
  await assert.rejects(c.query('SELECT * FROM qf_reset_tmp'), (e) => e.errno === 1146);
});

test("the mariadb CLI reads MariaDB's summaries of an UPDATE, a multi-row INSERT and an ALTER, and goes on", T, async (t) => {
  const gw = await laneGateway(t, 24278);
  const d = await direct(gw);
  const script = 'create table qf_okinfo (id int primary key, v int); '
    + "insert into qf_okinfo values (1,0),(2,0); update qf_okinfo set v = v + 1; alter table qf_okinfo comment 'x'; "
    + "select 'usable' as after";
  const cli = async (args) => {
    await d.query('DROP TABLE IF EXISTS qf_okinfo');
    const r = spawnSync('mariadb', ['--no-defaults', '-h127.0.0.1', ...args, 'qftest', '-vv', '-e', script],
      { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    return r.stdout.replace(/ \([\d.]+ sec\)/g, '');
  };
  const { port, username, password } = new URL(MY_URL);
  const expected = await cli([`-P${port}`, `-u${username}`, `-p${password}`]);
  const got = await cli([`-P${gw.myPort}`, '-uapp']);
  assert.equal(got, expected);
  assert.match(got, /Rows matched: 2 {2}Changed: 2 {2}Warnings: 0/);
  assert.deepEqual((await d.query('SELECT sum(v) AS v FROM qf_okinfo'))[0][0].v, '2');
  await d.query('DROP TABLE qf_okinfo');
});

test("SHOW WARNINGS and SHOW ERRORS tell the client's last statement's, read on its connection: the mariadb CLI's --show-warnings, mysql2 on a shared pool", T, async (t) => {
  const gw = await laneGateway(t, 24280, { poolSize: 2 });
  const d = await direct(gw);
  await d.query('CREATE TABLE IF NOT EXISTS qf_warned (v varchar(3))');
  gw.defer(() => d.query('DROP TABLE IF EXISTS qf_warned'));
  const script = "set sql_mode = ''; insert into qf_warned values ('too long'), ('abcdef'); "
    + "select 'none' as after";
  const cli = (args) => {
    const r = spawnSync('mariadb', ['--no-defaults', '-h127.0.0.1', ...args, 'qftest', '-vv', '--show-warnings',
      '-e', script], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    return r.stdout.replace(/ \([\d.]+ sec\)/g, '');
  };
  const { port, username, password } = new URL(MY_URL);
  const expected = cli([`-P${port}`, `-u${username}`, `-p${password}`]);
  assert.equal(cli([`-P${gw.myPort}`, '-uapp']), expected);
  assert.match(expected, /Warning \(Code 1265\): Data truncated for column 'v' at row 2/);

  // Each client's own, though the two connections serve four clients.
  const clients = await Promise.all([0, 1, 2, 3].map(() => through(gw)));
  await Promise.all(clients.map((c) => c.query("SET sql_mode = ''")));
  for (let round = 0; round < 3; round++) {
    const shown = await Promise.all(clients.map(async (c, i) => {
      if (i % 2 === 0) await c.query(`INSERT INTO qf_warned VALUES ('${'x'.repeat(4 + i)}')`);
      else await assert.rejects(c.query('SELECT nope'), (e) => e.errno === 1054);
      const [warnings] = await c.query('SHOW WARNINGS');
      const [errors] = await c.query('SHOW ERRORS');
      return [warnings.map((w) => `${w.Level} ${w.Code}`), errors.length];
    }));
    assert.deepEqual(shown, [[['Warning 1265'], 0], [['Error 1054'], 1], [['Warning 1265'], 0], [['Error 1054'], 1]]);
  }
  await clients[0].query('SELECT 1');
  assert.deepEqual((await clients[0].query('SHOW WARNINGS'))[0], [], 'a statement without any clears them');
});

test("CONNECTION_ID() is the client's own, the id KILL takes; LAST_INSERT_ID(expr) in a SELECT or DO sets the client's own", T, async (t) => {
  const gw = await laneGateway(t, 24282, { poolSize: 1 });
  const [a, b] = await Promise.all([through(gw), through(gw)]);
  for (const c of [a, b]) {
    const [[row]] = await c.query('SELECT CONNECTION_ID() AS id, CONNECTION_ID() + 0 AS again');
    assert.deepEqual([Number(row.id), Number(row.again)], [c.threadId, c.threadId]);
  }
  // b kills a's statement by the id a was told.
  const [[{ id }]] = await a.query('SELECT CONNECTION_ID() AS id');
  const started = Date.now();
  const sleeping = a.query('SELECT SLEEP(20) AS s').then(([r]) => r[0].s, (e) => e.errno);
  await sleep(300);
  await b.query(`KILL QUERY ${id}`);
  const ended = await sleeping;
  assert.ok(Date.now() - started < 10000, 'the sleep was cut short');
  assert.ok(ended === 1 || ended === 1317, `interrupted: ${ended}`);

  // One pooled connection for both: each keeps the id it set.
  const value = async (c, sql) => Number(Object.values((await c.query(sql))[0][0])[0]);
  assert.equal(await value(a, 'SELECT LAST_INSERT_ID(42)'), 42);
  assert.equal(await value(b, 'SELECT LAST_INSERT_ID(99)'), 99);
  assert.equal(await value(a, 'SELECT LAST_INSERT_ID()'), 42);
  await a.query('DO LAST_INSERT_ID(7)');
  assert.equal(await value(b, 'SELECT LAST_INSERT_ID() + 0'), 99);
  assert.equal(await value(a, 'SELECT LAST_INSERT_ID() + 0'), 7);
});

test('session state in its other spellings stays with its client: autocommit quoted or commented, INTO  @v, a CALL\'s OUT variable, FLUSH TABLES ... WITH READ LOCK', T, async (t) => {
  const gw = await laneGateway(t, 24284, { poolSize: 2 });
  const d = await direct(gw);
  await d.query('CREATE TABLE IF NOT EXISTS qf_spelled (v int)');
  await d.query('CREATE TABLE IF NOT EXISTS qf_spelled_other (v int)');
  await d.query('DELETE FROM qf_spelled');
  await d.query('DROP PROCEDURE IF EXISTS qf_twice');
  await d.query('CREATE PROCEDURE qf_twice(IN x INT, OUT y INT) SET y = x * 2');
  gw.defer(() => d.query('DROP TABLE IF EXISTS qf_spelled, qf_spelled_other'));
  gw.defer(() => d.query('DROP PROCEDURE IF EXISTS qf_twice'));
  const clients = await Promise.all([0, 1, 2, 3].map(() => through(gw)));
  const [a, b] = clients;
  const count = async () => Number((await d.query('SELECT count(*) AS n FROM qf_spelled'))[0][0].n);

  for (const off of ["SET autocommit = 'OFF'", 'SET autocommit = 0 /* off */', "SET sql_mode = '', autocommit = 0"]) {
    await a.query(off);
    await a.query('INSERT INTO qf_spelled VALUES (1)');
    await a.query('ROLLBACK');
    assert.equal(await count(), 0, `${off}: the insert was in a block`);
    await a.query('SET autocommit = DEFAULT');
    await a.query('INSERT INTO qf_spelled VALUES (2)');
    assert.equal(await count(), 1, 'autocommit = DEFAULT: on again');
    await d.query('DELETE FROM qf_spelled');
  }

  const churn = () => Promise.all(clients.slice(2).map((c) => c.query('SELECT 1')));
  await a.query('SELECT 5 INTO  @v');
  await b.query('SELECT 6 INTO\n@v');
  await churn();
  assert.deepEqual([(await a.query('SELECT @v AS v'))[0][0].v, (await b.query('SELECT @v AS v'))[0][0].v], [5, 6]);
  const outs = await Promise.all(clients.map(async (c, i) => {
    await c.query('CALL qf_twice(?, @o)', [i + 10]);
    await churn();
    return (await c.query('SELECT @o AS o'))[0][0].o;
  }));
  assert.deepEqual(outs, [20, 22, 24, 26]);

  const [locker, writer] = [await through(gw), await through(gw)];
  await locker.query('FLUSH TABLES qf_spelled WITH READ LOCK');
  await writer.query('INSERT INTO qf_spelled_other VALUES (1)'); // another table: not locked
  await locker.query('UNLOCK TABLES');
  await writer.query('SET SESSION lock_wait_timeout = 2');
  await writer.query('INSERT INTO qf_spelled VALUES (3)'); // the lock went with UNLOCK TABLES
  assert.equal(await count(), 1);
});

test('@@autocommit is the client\'s in any SELECT of variables: aliased with or without AS, in an expression, beside the server\'s own, as a number; CLIENT_IGNORE_SPACE is in sql_mode', T, async (t) => {
  const gw = await laneGateway(t, 24286);
  const d = await direct(gw);
  const c = await through(gw);
  const queries = ['SELECT @@autocommit', 'select @@autocommit a, @@in_transaction t', 'SELECT @@autocommit + 0 AS n',
    'SELECT @@session.autocommit AS ac, @@sql_mode AS mode', 'SELECT @@autocommit -- a comment',
    // mysql2 asks for CLIENT_IGNORE_SPACE: its session's sql_mode says so, and this parses.
    'SELECT COUNT (*) AS n FROM (SELECT 1) x'];
  for (const autocommit of [1, 0]) {
    await d.query(`SET autocommit = ${autocommit}`);
    await c.query(`SET autocommit = ${autocommit}`);
    for (const sql of queries)
      assert.deepEqual((await c.query(sql))[0], (await d.query(sql))[0], `${sql} with autocommit ${autocommit}`);
  }
  await d.query('ROLLBACK');
  await c.query('ROLLBACK');
});
