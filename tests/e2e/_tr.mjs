import { Trino } from 'trino-client';
const t = Trino.create({ server: 'http://127.0.0.1:29080', catalog: 'x', schema: 'y', auth: new (await import('trino-client')).BasicAuth('qf') });
for (const sql of ['CALL msp2(5)', 'SELECT 9 AS after_call', 'CALL msp3()', 'SELECT 10 AS a2']) {
  const it = await t.query(sql);
  const out = [];
  for await (const r of it) out.push(r.error ? 'ERR ' + r.error.message : JSON.stringify(r.data ?? null));
  console.log(sql, '=>', out.join(' '));
}
