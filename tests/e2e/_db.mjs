import mysql from 'mysql2/promise';
const port = Number(process.argv[2]);
const a = await mysql.createConnection({ host: '127.0.0.1', port, user: 'qf', password: 'qf', database: 'information_schema' });
const q = async (c, sql) => { try { const [r] = await c.query(sql); return JSON.stringify(r).slice(0, 120); } catch (e) { return 'ERR ' + e.code + ' ' + e.message; } };
console.log('db', await q(a, 'SELECT DATABASE() AS d, 1 AS x'));
console.log('unqualified', await q(a, 'SELECT count(*) > 0 AS n FROM SCHEMATA'));
await a.end();
