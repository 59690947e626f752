import mysql from 'mysql2/promise';
const port = Number(process.argv[2]);
const c = await mysql.createConnection({ host: '127.0.0.1', port, user: 'qf', password: 'qf', database: 'qftest' });
const show = async (sql) => { try { const [r] = await c.query(sql); console.log(JSON.stringify(r)); } catch (e) { console.log('ERR', e.code, e.message); } };
await show('DROP PROCEDURE IF EXISTS msp2');
await show('CREATE PROCEDURE msp2(IN n INT) BEGIN SELECT n AS p1; SELECT n + 1 AS p2, "z" AS q; END');
await show('CALL msp2(5)');
await show('SELECT 9 AS after_call');
await show('DROP PROCEDURE IF EXISTS msp3');
await show('CREATE PROCEDURE msp3() BEGIN INSERT INTO ms1 VALUES (7); END');
await show('CALL msp3()');
await show('SELECT 10 AS after_call3');
try { const [r] = await c.execute('CALL msp2(?)', [6]); console.log('exec', JSON.stringify(r)); } catch (e) { console.log('ERR', e.code, e.message); }
await show('SELECT 11 AS after_exec');
await c.end();
