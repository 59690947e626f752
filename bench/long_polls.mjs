// A control plane holding N workers' idle long polls (GET /worker/config/wait):
// its memory and CPU with none and with N parked, side by side in one run.
// Usage: node bench/long_polls.mjs QUERYFLUX_BIN [POLLS=1000] [SECONDS=20]
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const [bin, pollsArg = '1000', secondsArg = '20'] = process.argv.slice(2);
const polls = Number(pollsArg);
const seconds = Number(secondsArg);
const secret = 'bench-secret-0123456789abcdef';
const adminPort = 27950;
const hold = 10; // a third of the workers' default: three times its renewals

const dir = mkdtempSync(join(tmpdir(), 'qf-bench-'));
const file = join(dir, 'cp.yaml');
writeFileSync(file, JSON.stringify({
  queryflux: {
    frontends: { trinoHttp: { port: 27951 } },
    adminApi: { port: adminPort },
    workerApi: { enabled: true, sharedSecret: secret },
  },
  monitor: { taskDelay: '1m' },
  clusters: { lite: { engine: 'sqlite' } },
  clusterGroups: { g: { members: ['lite'] } },
}));
const cp = spawn(bin, ['serve', '--config', file, '--log-level', 'warn'], { stdio: 'inherit' });
process.on('exit', () => cp.kill('SIGKILL'));

function get(path) {
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port: adminPort, path, agent: false,
      headers: { Authorization: `Bearer ${secret}` } }, (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('error', () => resolve({ status: 0, body: '' }));
    req.end();
  });
}

function sample() {
  const stat = readFileSync(`/proc/${cp.pid}/stat`, 'utf8').split(') ')[1].split(' ');
  const ticks = Number(stat[11]) + Number(stat[12]); // utime + stime
  const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${cp.pid}/status`, 'utf8'))[1]);
  return { ticks, rss };
}

async function measure(label) {
  const a = sample();
  await sleep(seconds * 1000);
  const b = sample();
  const cpu = (b.ticks - a.ticks) / 100 / seconds; // USER_HZ = 100
  console.log(`${label}: RSS ${(b.rss / 1024).toFixed(1)} MiB, CPU ${(cpu * 100).toFixed(2)}% of a core`);
  return { rss: b.rss, cpu };
}

for (;;) { // until it serves
  const r = await get('/worker/config');
  if (r.status === 200) break;
  await sleep(100);
}
const revision = JSON.parse((await get('/worker/config')).body).revision;
const idle = await measure('no long polls        ');

let stop = false;
let parked = 0;
let answered = 0;
async function poller() {
  while (!stop) {
    parked++;
    const r = await get(`/worker/config/wait?since=${revision}&timeoutSecs=${hold}`);
    parked--;
    if (r.status !== 304 && !stop) throw new Error(`poll answered ${r.status}`);
    answered++;
  }
}
const workers = Array.from({ length: polls }, () => poller());
while (parked < polls) await sleep(50);
const held = await measure(`${polls} parked long polls`);
console.log(`per parked poll: ${((held.rss - idle.rss) / polls).toFixed(1)} KiB more RSS; `
  + `CPU ${(held.cpu * 100).toFixed(2)}% against ${(idle.cpu * 100).toFixed(2)}% idle `
  + `(${answered} polls answered 304 after their ${hold} s hold and renewed, in ${seconds} s)`);
stop = true;
cp.kill('SIGKILL');
process.exit(0);
