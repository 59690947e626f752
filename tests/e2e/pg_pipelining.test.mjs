// Pipelining on the PostgreSQL wire fast lane (pipelineDepth): clients'
// plain statements relayed behind each other on one server connection.
// Each client must get its own answers and errors, and nobody may wait on
// a statement that stalls (a lock) or on a client that stops reading.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { execFileSync } from 'node:child_process';
import { startGateway, config, parseMetrics, metricValue, sleep, waitFor, killAfterCleanups } from './support/gateway.mjs';
import { loggedInRawClient } from './support/raw_pg_client.mjs';

const PG_URL = process.env.QF_PG_URL || 'postgres://postgres@127.0.0.1:15432/postgres';
const T = { timeout: 120000 };
const CLUSTER = 'pg';

/// A gateway with one postgres cluster on one wire thread (statements
/// join connections of their own loop only), admin API on `base`, the
/// PostgreSQL wire frontend on base + 1.
async function pipeGateway(t, base, cluster = {}) {
  const cfg = config({
    trinoPort: undefined,
    adminPort: base,
    clusters: { [CLUSTER]: { engine: 'postgres', endpoint: PG_URL, maxRunningQueries: 64, poolSize: 8, pipelineDepth: 8, ...cluster } },
    clusterGroups: { g: { members: [CLUSTER], maxRunningQueries: 64, maxQueuedQueries: 100 } },
    routingFallback: 'g',
  });
  cfg.queryflux.externalAddress = `http://127.0.0.1:${base}`;
  cfg.queryflux.wireThreads = 1;
  cfg.queryflux.frontends = {
    trinoHttp: { enabled: false },
    postgresWire: { enabled: true, port: base + 1 },
  };
  const gw = await startGateway(cfg);
  gw.pgPort = base + 1;
  killAfterCleanups(t, gw);
  return gw;
}

async function clients(gw, n) {
  const cs = [];
  for (let k = 0; k < n; k++) {
    const c = new pg.Client({ host: '127.0.0.1', port: gw.pgPort, user: 'postgres', database: 'postgres' });
    c.on('error', () => {});
    await c.connect();
    gw.defer(() => c.end());
    cs.push(c);
  }
  return cs;
}

async function direct(gw) {
  const d = new pg.Client({ connectionString: PG_URL });
  d.on('error', () => {});
  await d.connect();
  gw.defer(() => d.end());
  return d;
}

async function pipelineCounts(gw) {
  const m = parseMetrics(await gw.metrics());
  return {
    pipelined: metricValue(m, 'queryflux_pipelined_statements_total', { cluster_name: CLUSTER }) ?? 0,
    moved: metricValue(m, 'queryflux_pipelined_statements_moved_total', { cluster_name: CLUSTER }) ?? 0,
  };
}

/// Each of `n` clients runs `rounds` plain statements of its own (and now
/// and then one that fails), all at once, checking every answer.
async function ownAnswersUnderLoad(gw, n, rounds) {
  const cs = await clients(gw, n);
  await Promise.all(cs.map(async (c, k) => {
    for (let i = 0; i < rounds; i++) {
      if (i % 17 === 5) {
        await assert.rejects(c.query(`SELECT * FROM no_such_pipe_table_${k}_${i}`),
          (e) => e.code === '42P01' && e.message.includes(`no_such_pipe_table_${k}_${i}`));
        continue;
      }
      // Simple Query, an unnamed and a named statement (node-postgres'
      // extended protocol, with parameters) in turn.
      const r = i % 3 === 0
        ? await c.query(`SELECT ${k} AS client, ${i} AS n, lower('PIPE_${k}_${i}') AS tag`)
        : await c.query({
          text: 'SELECT $1::int AS client, $2::int AS n, $3::text AS tag',
          values: [k, i, `pipe_${k}_${i}`],
          ...(i % 3 === 2 ? { name: 'pipe_named' } : {}),
        });
      assert.deepEqual(r.rows, [{ client: k, n: i, tag: `pipe_${k}_${i}` }]);
    }
  }));
}

test("clients' plain statements share server connections and each client gets its own answers and errors", T, async (t) => {
  const gw = await pipeGateway(t, 24400);
  await ownAnswersUnderLoad(gw, 12, 300);
  const counts = await pipelineCounts(gw);
  assert.ok(counts.pipelined > 0, `no statement was relayed behind another: ${JSON.stringify(counts)}`);
});

test('without pipelineDepth each connection relays one statement at a time', T, async (t) => {
  const gw = await pipeGateway(t, 24402, { pipelineDepth: undefined });
  await ownAnswersUnderLoad(gw, 12, 100);
  assert.deepEqual(await pipelineCounts(gw), { pipelined: 0, moved: 0 });
});

/// Fires a blocker (`prepare(a)` readies it and returns what fires it) and
/// a plain statement from each quick client in the same tick, until some
/// of them were moved off the blocker's connection (or `attempts` ran
/// out); every quick statement must be answered while the blocker waits.
async function quickOnesAnsweredBeside(gw, prepare, quickClients, attempts = 20) {
  const before = await pipelineCounts(gw);
  const blockers = [];
  for (let a = 0; a < attempts; a++) {
    const fire = await prepare(a);
    blockers.push(fire());
    const quick = quickClients.map((c, k) => c.query(`SELECT 'quick_${a}_${k}' AS tag`));
    const answered = Promise.all(quick);
    const late = sleep(15000).then(() => 'late');
    const won = await Promise.race([answered, late]);
    assert.notEqual(won, 'late', `attempt ${a}: plain statements waited on a stalled one`);
    won.forEach((r, k) => assert.equal(r.rows[0].tag, `quick_${a}_${k}`));
    if ((await pipelineCounts(gw)).moved > before.moved) return blockers;
  }
  assert.fail('no statement was ever moved off a stalled one; pipelining never formed');
  return blockers;
}

test('a statement waiting on a lock holds up nobody who was relayed behind it', T, async (t) => {
  const gw = await pipeGateway(t, 24404);
  const d = await direct(gw);
  await d.query('DROP TABLE IF EXISTS pipe_locked; CREATE TABLE pipe_locked (x int); INSERT INTO pipe_locked VALUES (7)');
  await d.query('BEGIN');
  await d.query('LOCK TABLE pipe_locked IN ACCESS EXCLUSIVE MODE');
  const blockerClients = await clients(gw, 20);
  const quickClients = await clients(gw, 7);
  const blocked = await quickOnesAnsweredBeside(gw,
    (a) => () => blockerClients[a].query('SELECT x AS locked_x FROM pipe_locked'), quickClients);
  for (const b of blocked) {
    assert.equal(await Promise.race([b.then(() => 'answered'), sleep(50).then(() => 'waiting')]), 'waiting',
      'the locked statement ran before its lock was released');
  }
  await d.query('COMMIT');
  for (const b of blocked) assert.deepEqual((await b).rows, [{ locked_x: 7 }]);
});

test('a client that stops reading its result holds up nobody who was relayed behind it', T, async (t) => {
  const gw = await pipeGateway(t, 24406);
  const d = await direct(gw);
  // A plain statement (no function) whose result outgrows every buffer.
  await d.query(`DROP TABLE IF EXISTS pipe_wide; CREATE TABLE pipe_wide (pad text);
    INSERT INTO pipe_wide SELECT repeat('w', 200) FROM generate_series(1, 2000)`);
  const quickClients = await clients(gw, 7);
  const readers = [];
  await quickOnesAnsweredBeside(gw, async () => {
    const raw = await loggedInRawClient(gw);
    readers.push(raw);
    return () => {
      raw.sock.pause(); // reads nothing from here on
      raw.query('SELECT a.pad, b.pad AS pad2 FROM pipe_wide a, pipe_wide b');
      return raw;
    };
  }, quickClients);
  // The readers leave: their statements end on the server, and the others
  // go on as before.
  for (const r of readers) r.sock.destroy();
  await waitFor(async () => (await d.query(
    "SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'SELECT a.pad, b.pad AS pad2%'",
  )).rows[0].n === 0, { timeoutMs: 20000, what: 'the readers\' statements to end on the server' });
  const again = await Promise.all(quickClients.map((c, k) => c.query(`SELECT 'after_${k}' AS tag`)));
  again.forEach((r, k) => assert.equal(r.rows[0].tag, `after_${k}`));
});

test("a client's temporary table stays its own while others' statements are pipelined", T, async (t) => {
  const gw = await pipeGateway(t, 24408);
  const d = await direct(gw);
  await d.query("DROP TABLE IF EXISTS pipe_shadow; CREATE TABLE pipe_shadow (v text); INSERT INTO pipe_shadow VALUES ('public')");
  const [owner, ...others] = await clients(gw, 8);
  await owner.query("CREATE TEMP TABLE pipe_shadow (v text); INSERT INTO pipe_shadow VALUES ('temp')");
  await Promise.all([owner, ...others].map(async (c, k) => {
    for (let i = 0; i < 150; i++) {
      const r = await c.query('SELECT v FROM pipe_shadow');
      assert.deepEqual(r.rows, [{ v: k === 0 ? 'temp' : 'public' }], `client ${k}, statement ${i}`);
    }
  }));
  assert.ok((await pipelineCounts(gw)).pipelined > 0, 'the others were never pipelined');
});

test('pgbench -M prepared and -M extended through pipelined connections', T, async (t) => {
  // Its own database: other files' pgbench -i runs beside this one.
  const d = new pg.Client({ connectionString: PG_URL });
  await d.connect();
  const exists = await d.query("SELECT 1 FROM pg_database WHERE datname = 'qf_pipe_bench'");
  if (exists.rowCount === 0) await d.query('CREATE DATABASE qf_pipe_bench');
  await d.end();
  const url = new URL(PG_URL);
  url.pathname = '/qf_pipe_bench';
  execFileSync('pgbench', ['-i', '-s', '1', '-q', url.toString()], { stdio: 'pipe' });
  const gw = await pipeGateway(t, 24410, { endpoint: url.toString() });
  for (const mode of ['prepared', 'extended']) {
    const out = execFileSync('pgbench', ['-n', '-S', '-M', mode, '-c', '8', '-j', '2', '-t', '300',
      '-h', '127.0.0.1', '-p', String(gw.pgPort), '-U', 'postgres', 'qf_pipe_bench'], { encoding: 'utf8' });
    assert.match(out, /number of transactions actually processed: 2400\/2400/, out);
    assert.match(out, /number of failed transactions: 0/, out);
  }
  assert.ok((await pipelineCounts(gw)).pipelined > 0, 'pgbench\'s statements were never pipelined');
});

test("clients with different settings are never pipelined on each other's connection", T, async (t) => {
  const gw = await pipeGateway(t, 24412);
  const d = await direct(gw);
  await d.query(`DROP SCHEMA IF EXISTS pipe_a CASCADE; DROP SCHEMA IF EXISTS pipe_b CASCADE;
    CREATE SCHEMA pipe_a; CREATE SCHEMA pipe_b;
    CREATE TABLE pipe_a.whose (v text); INSERT INTO pipe_a.whose VALUES ('a');
    CREATE TABLE pipe_b.whose (v text); INSERT INTO pipe_b.whose VALUES ('b')`);
  const cs = await clients(gw, 8);
  await Promise.all(cs.map((c, k) => c.query(`SET search_path = pipe_${k % 2 ? 'b' : 'a'}`)));
  await Promise.all(cs.map(async (c, k) => {
    for (let i = 0; i < 150; i++) {
      const r = await c.query('SELECT v FROM whose');
      assert.deepEqual(r.rows, [{ v: k % 2 ? 'b' : 'a' }], `client ${k}, statement ${i}`);
    }
  }));
  assert.ok((await pipelineCounts(gw)).pipelined > 0, 'nobody was pipelined');
});
