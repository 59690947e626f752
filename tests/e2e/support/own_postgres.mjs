// A PostgreSQL server of the test's own, which it may stop and start
// (the shared one of deploy/services.sh serves every other test).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, chownSync, copyFileSync, chmodSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

function pgBin() {
  const versions = readdirSync('/usr/lib/postgresql').sort((a, b) => Number(a) - Number(b));
  return `/usr/lib/postgresql/${versions.at(-1)}/bin`;
}

/// root may not run PostgreSQL: it runs as the postgres user then.
function run(cmd, args) {
  const asRoot = process.getuid() === 0;
  const r = asRoot
    ? spawnSync('runuser', ['-u', 'postgres', '--', cmd, ...args], { encoding: 'utf8', cwd: '/' })
    : spawnSync(cmd, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.stderr || r.stdout}`);
  return r.stdout;
}

/// Starts a server on `port`; returns { url, stop(), start() }, and removes
/// it after the test. With `tls` ({ cert, key } files), it takes only TLS
/// connections, and url asks for TLS.
export function ownPostgres(t, port, { tls } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'qf-pg-'));
  if (process.getuid() === 0) {
    const id = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
    const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
    chownSync(dir, Number(id.stdout), Number(gid.stdout));
  }
  const bin = pgBin();
  const data = join(dir, 'data');
  run(`${bin}/initdb`, ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-locale', '--no-sync']);
  let tlsOptions = '';
  if (tls) { // the server reads its key only if the postgres user alone may
    for (const [from, name] of [[tls.cert, 'server.crt'], [tls.key, 'server.key']]) {
      copyFileSync(from, join(data, name));
      chmodSync(join(data, name), 0o600);
      if (process.getuid() === 0) {
        const id = Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout);
        const gid = Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout);
        chownSync(join(data, name), id, gid);
      }
    }
    writeFileSync(join(data, 'pg_hba.conf'), 'local all all trust\nhostssl all all 127.0.0.1/32 trust\n');
    tlsOptions = ' -c ssl=on';
  }
  const pgctl = (...args) => run(`${bin}/pg_ctl`, ['-D', data, ...args]);
  const server = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres${tls ? '?sslmode=require' : ''}`,
    start() {
      pgctl('-w', '-l', join(dir, 'log'), '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off${tlsOptions}`, 'start');
    },
    stop() { pgctl('-w', '-m', 'fast', 'stop'); },
  };
  server.start();
  t.after(() => {
    try { server.stop(); } catch { /* stopped already */ }
    rmSync(dir, { recursive: true, force: true });
  });
  return server;
}
