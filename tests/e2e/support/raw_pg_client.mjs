// A PostgreSQL wire client by hand, for tests that must stop reading,
// send what drivers do not, or count what comes back message by message.
import net from 'node:net';

/// A PostgreSQL wire client by hand, so that reading can stop.
export function rawClient(port) {
  const sock = net.connect(port, '127.0.0.1');
  const st = { rows: 0, tags: [], errors: [], ready: 0, bytes: 0, copyIn: 0 };
  let waiters = [];
  let pending = Buffer.alloc(0);
  const wake = () => { for (const w of waiters) w(); };
  sock.on('data', (chunk) => {
    st.bytes += chunk.length;
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    let off = 0;
    while (pending.length - off >= 5) {
      const type = pending[off];
      const len = pending.readInt32BE(off + 1);
      if (pending.length - off < 1 + len) break;
      const body = pending.subarray(off + 5, off + 1 + len);
      if (type === 0x44) st.rows += 1; // 'D'
      else if (type === 0x43) st.tags.push(body.toString('utf8', 0, body.length - 1)); // 'C'
      else if (type === 0x45) st.errors.push(body.toString('utf8').replaceAll('\0', ' ')); // 'E'
      else if (type === 0x5a) st.ready += 1; // 'Z'
      else if (type === 0x47) st.copyIn += 1; // 'G': the server waits for COPY data
      off += 1 + len;
    }
    pending = pending.subarray(off);
    wake();
  });
  sock.on('error', (e) => { st.errors.push(String(e)); wake(); });
  sock.on('close', () => { st.closed = true; wake(); });
  const until = (cond, what, timeoutMs = 60000) => new Promise((resolve, reject) => {
    if (cond()) return resolve();
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}: ${JSON.stringify(st)}`)), timeoutMs);
    const w = () => {
      if (cond()) { clearTimeout(timer); waiters = waiters.filter((x) => x !== w); resolve(); }
      else if (st.closed) { clearTimeout(timer); reject(new Error(`connection closed waiting for ${what}: ${JSON.stringify(st)}`)); }
    };
    waiters.push(w);
  });
  const startup = () => {
    const params = Buffer.from('user\0postgres\0database\0postgres\0\0');
    const head = Buffer.alloc(8);
    head.writeInt32BE(8 + params.length, 0);
    head.writeInt32BE(196608, 4); // protocol 3.0
    sock.write(Buffer.concat([head, params]));
  };
  const query = (sql) => {
    const text = Buffer.from(`${sql}\0`);
    const head = Buffer.alloc(5);
    head[0] = 0x51; // 'Q'
    head.writeInt32BE(4 + text.length, 1);
    sock.write(Buffer.concat([head, text]));
  };
  const message = (type, body) => {
    const head = Buffer.alloc(5);
    head[0] = type.charCodeAt(0);
    head.writeInt32BE(4 + body.length, 1);
    return Buffer.concat([head, body]);
  };
  /// Parse, Bind with text parameters, Execute without a row limit, Sync.
  const extended = (sql, params) => {
    const int16 = (n) => { const b = Buffer.alloc(2); b.writeInt16BE(n); return b; };
    const int32 = (n) => { const b = Buffer.alloc(4); b.writeInt32BE(n); return b; };
    const values = params.map((v) => { const b = Buffer.from(String(v)); return Buffer.concat([int32(b.length), b]); });
    sock.write(Buffer.concat([
      message('P', Buffer.concat([Buffer.from(`\0${sql}\0`), int16(0)])),
      message('B', Buffer.concat([Buffer.from('\0\0'), int16(0), int16(params.length), ...values, int16(0)])),
      message('E', Buffer.concat([Buffer.from('\0'), int32(0)])),
      message('S', Buffer.alloc(0)),
    ]));
  };
  const send = (...messages) => sock.write(Buffer.concat(messages));
  return { sock, st, until, startup, query, extended, message, send };
}

/// A raw client past startup, closed with the test.
export async function loggedInRawClient(gw) {
  const raw = rawClient(gw.pgPort);
  gw.defer(() => raw.sock.destroy());
  await new Promise((resolve, reject) => { raw.sock.once('connect', resolve); raw.sock.once('error', reject); });
  raw.startup();
  await raw.until(() => raw.st.ready === 1, 'ReadyForQuery after startup', 10000);
  return raw;
}
