// Value and type encoding of DuckDB and SQLite results over the Trino protocol.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, config, runClient, runRaw } from './support/gateway.mjs';

const UNICODE = 'héllo 😀 中文 ﷽ 𝄞';

const T = { timeout: 30000 };

let gw;
before(async () => {
  gw = await startGateway(config({
    trinoPort: 21000,
    adminPort: 21001,
    clusters: {
      duck: { engine: 'duckDb', maxRunningQueries: 2 },
      lite: {
        engine: 'sqlite',
        maxRunningQueries: 2,
        initSql: [
          `CREATE TABLE typed(id INTEGER, big BIGINT, dbl DOUBLE, txt TEXT,
             flag BOOLEAN, bin BLOB, d DATE, ts TIMESTAMP)`,
          `INSERT INTO typed VALUES
             (1, 9007199254740991, 2.5, '${UNICODE}', 1, x'DEADBEEF', '2024-02-29', '2024-01-02 03:04:05'),
             (2, -42, -0.125, '', 0, x'', '1999-12-31', '1999-12-31 23:59:59'),
             (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`,
        ],
      },
    },
    clusterGroups: {
      duckGroup: { members: ['duck'], maxRunningQueries: 2 },
      liteGroup: { members: ['lite'], maxRunningQueries: 2 },
    },
    routers: [{ type: 'header', headerName: 'X-Target', headerValueToGroup: { lite: 'liteGroup' } }],
    routingFallback: 'duckGroup',
  }));
});
after(async () => { await gw?.kill(); });

const lite = () => gw.trino('typer', { extraHeaders: { 'X-Target': 'lite' } });
const duck = () => gw.trino('typer');

function typesOf(columns) {
  return Object.fromEntries(columns.map((c) => [c.name, c.type]));
}

test('DuckDB: scalar types, names and values', T, async () => {
  const r = await runClient(duck(), `
    SELECT 42::BIGINT AS big, -7::INTEGER AS int, 5::SMALLINT AS small, -3::TINYINT AS tiny,
           2.5::DOUBLE AS dbl, 1.5::REAL AS rl,
           1.5::DECIMAL(10,2) AS dec, -0.01::DECIMAL(10,2) AS dec_neg,
           12345678901234567890.123::DECIMAL(38,3) AS dec_wide,
           '${UNICODE}' AS txt, TRUE AS yes, FALSE AS no,
           DATE '2024-02-29' AS d,
           TIMESTAMP '2024-01-02 03:04:05.123456' AS ts,
           '\\xDE\\xAD\\xBE\\xEF'::BLOB AS bin`);
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  assert.equal(r.finalState, 'FINISHED');
  assert.deepEqual(typesOf(r.columns), {
    big: 'bigint', int: 'integer', small: 'smallint', tiny: 'tinyint',
    dbl: 'double', rl: 'real',
    dec: 'decimal(10,2)', dec_neg: 'decimal(10,2)', dec_wide: 'decimal(38,3)',
    txt: 'varchar', yes: 'boolean', no: 'boolean',
    d: 'date', ts: 'timestamp(6)', bin: 'varbinary',
  });
  assert.deepEqual(r.data, [[
    42, -7, 5, -3, 2.5, 1.5,
    '1.50', '-0.01', '12345678901234567890.123',
    UNICODE, true, false,
    '2024-02-29', '2024-01-02 03:04:05.123456',
    Buffer.from([0xde, 0xad, 0xbe, 0xef]).toString('base64'),
  ]]);
});

test('DuckDB: NULL in every type keeps the column type', T, async () => {
  const r = await runClient(duck(), `
    SELECT NULL::BIGINT AS big, NULL::INTEGER AS int, NULL::DOUBLE AS dbl,
           NULL::DECIMAL(10,2) AS dec, NULL::VARCHAR AS txt, NULL::BOOLEAN AS flag,
           NULL::DATE AS d, NULL::TIMESTAMP AS ts, NULL::BLOB AS bin`);
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  assert.deepEqual(typesOf(r.columns), {
    big: 'bigint', int: 'integer', dbl: 'double', dec: 'decimal(10,2)',
    txt: 'varchar', flag: 'boolean', d: 'date', ts: 'timestamp(6)', bin: 'varbinary',
  });
  assert.deepEqual(r.data, [Array(9).fill(null)]);
});

test('DuckDB: mixed NULL and non-NULL rows, in order', T, async () => {
  const r = await runClient(duck(), `
    SELECT * FROM (VALUES
      (1, 10::BIGINT, 'a', 0.10::DECIMAL(10,2), DATE '2020-01-01'),
      (2, NULL, NULL, NULL, NULL),
      (3, 30::BIGINT, '🎉', 3.33::DECIMAL(10,2), DATE '2030-12-31')) v(id, big, txt, dec, d)
    ORDER BY id`);
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  assert.deepEqual(r.columns.map((c) => c.name), ['id', 'big', 'txt', 'dec', 'd']);
  assert.deepEqual(r.data, [
    [1, 10, 'a', '0.10', '2020-01-01'],
    [2, null, null, null, null],
    [3, 30, '🎉', '3.33', '2030-12-31'],
  ]);
});

test('DuckDB: extreme bigint is sent with every digit', T, async () => {
  // JSON.parse would round these, so look at the wire text itself.
  const post = await fetch(`${gw.trinoUrl}/v1/statement`, {
    method: 'POST', headers: { 'X-Trino-User': 'typer' },
    body: 'SELECT 9223372036854775807::BIGINT AS mx, (-9223372036854775808)::BIGINT AS mn',
  }).then((x) => x.json());
  let next = post.nextUri;
  let text = '';
  while (next) {
    const t = await fetch(next).then((x) => x.text());
    text += t;
    next = JSON.parse(t).nextUri;
  }
  assert.doesNotMatch(text, /"error"/);
  assert.match(text, /\[\s*9223372036854775807\s*,\s*-9223372036854775808\s*\]/);
});

test('SQLite: declared types, values, unicode, blobs and NULLs', T, async () => {
  const r = await runClient(lite(), 'SELECT id, big, dbl, txt, flag, bin, d, ts FROM typed ORDER BY id');
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  assert.equal(r.finalState, 'FINISHED');
  const types = typesOf(r.columns);
  assert.deepEqual(
    { id: types.id, big: types.big, dbl: types.dbl, txt: types.txt, flag: types.flag, bin: types.bin },
    { id: 'bigint', big: 'bigint', dbl: 'double', txt: 'varchar', flag: 'boolean', bin: 'varbinary' });
  // SQLite has no date/timestamp storage class: they come back as text.
  assert.equal(types.d, 'varchar');
  assert.equal(types.ts, 'varchar');
  assert.deepEqual(r.data, [
    [1, 9007199254740991, 2.5, UNICODE, true, Buffer.from([0xde, 0xad, 0xbe, 0xef]).toString('base64'), '2024-02-29', '2024-01-02 03:04:05'],
    [2, -42, -0.125, '', false, '', '1999-12-31', '1999-12-31 23:59:59'],
    [3, null, null, null, null, null, null, null],
  ]);
});

test('SQLite: expression types and column names', T, async () => {
  const r = await runClient(lite(), `SELECT 7 AS i, 0.5 AS f, 'x😀' AS s, x'00FF' AS b, NULL AS n, 1 + 1 AS "two words"`);
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  assert.deepEqual(r.columns.map((c) => [c.name, c.type]), [
    ['i', 'bigint'], ['f', 'double'], ['s', 'varchar'], ['b', 'varbinary'], ['n', 'unknown'], ['two words', 'bigint'],
  ]);
  assert.deepEqual(r.data, [[7, 0.5, 'x😀', Buffer.from([0, 255]).toString('base64'), null, 2]]);
});

test('SQLite: empty result still has columns', T, async () => {
  const raw = await runRaw(gw.trinoUrl, 'SELECT id, txt FROM typed WHERE id > 100', { headers: { 'X-Target': 'lite' } });
  assert.equal(raw.error, undefined, JSON.stringify(raw.error));
  assert.equal(raw.finalState, 'FINISHED');
  assert.deepEqual(raw.columns?.map((c) => [c.name, c.type]), [['id', 'bigint'], ['txt', 'varchar']]);
  assert.deepEqual(raw.data, []);
});

test('DuckDB: typeSignature matches the type name', T, async () => {
  const raw = await runRaw(gw.trinoUrl, `SELECT 1.5::DECIMAL(10,2) AS dec, TIMESTAMP '2024-01-01' AS ts, 'a' AS s`);
  const [dec, ts, s] = raw.columns;
  assert.equal(dec.typeSignature.rawType, 'decimal');
  assert.deepEqual(dec.typeSignature.arguments.map((a) => a.value), [10, 2]);
  assert.equal(ts.typeSignature.rawType, 'timestamp');
  assert.deepEqual(ts.typeSignature.arguments.map((a) => a.value), [6]);
  assert.equal(s.typeSignature.rawType, 'varchar');
  assert.deepEqual(raw.data, [['1.50', '2024-01-01 00:00:00.000000', 'a']]);
});

test('strings with quotes, backslashes and control characters survive JSON', T, async () => {
  const expected = 'q"b\\s\n\t\u0001\u0000end';
  const d = await runClient(duck(), `SELECT 'q"b\\s' || chr(10) || chr(9) || chr(1) || chr(0) || 'end' AS s`);
  assert.equal(d.error, undefined, JSON.stringify(d.error));
  assert.deepEqual(d.data, [[expected]]);
  const l = await runClient(lite(), `SELECT 'q"b\\s' || char(10) || char(9) || char(1) || char(0) || 'end' AS s`);
  assert.equal(l.error, undefined, JSON.stringify(l.error));
  assert.deepEqual(l.data, [[expected]]);
  // Invalid UTF-8 stored as text must still give valid JSON.
  const bad = await runClient(lite(), "SELECT CAST(x'C328' AS TEXT) AS bad, 'ok' AS good");
  assert.equal(bad.error, undefined, JSON.stringify(bad.error));
  assert.equal(bad.data[0][1], 'ok');
});

test('DuckDB: special doubles, wide integers and time types', T, async () => {
  const r = await runClient(duck(), `
    SELECT 'NaN'::DOUBLE AS nan, 'inf'::DOUBLE AS inf, '-inf'::DOUBLE AS ninf, 0.1::DOUBLE + 0.2::DOUBLE AS sum,
           123456789012345678901234567890::HUGEINT AS huge, 18446744073709551615::UBIGINT AS ubig,
           TIME '12:34:56.789' AS t, TIMESTAMP '0001-01-01 00:00:00' AS ts_min,
           TIMESTAMP_MS '2024-01-01 00:00:00.123' AS ts_ms, DATE '1970-01-01' AS epoch`);
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  assert.deepEqual(typesOf(r.columns), {
    nan: 'double', inf: 'double', ninf: 'double', sum: 'double',
    huge: 'decimal(38,0)', ubig: 'decimal(20,0)',
    t: 'time(6)', ts_min: 'timestamp(6)', ts_ms: 'timestamp(6)', epoch: 'date',
  });
  assert.deepEqual(r.data, [[
    'NaN', 'Infinity', '-Infinity', 0.30000000000000004,
    '123456789012345678901234567890', '18446744073709551615',
    '12:34:56.789000', '0001-01-01 00:00:00.000000', '2024-01-01 00:00:00.123000', '1970-01-01',
  ]]);
});

test('a 6 MB string value arrives intact', T, async () => {
  const r = await runClient(duck(), "SELECT repeat('é', 3000000) AS s, 1 AS after");
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  assert.equal(r.data.length, 1);
  assert.equal(r.data[0][0].length, 3000000);
  assert.ok(/^é+$/.test(r.data[0][0]));
  assert.equal(r.data[0][1], 1);
});
