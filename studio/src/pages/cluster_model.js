// A cluster's config item (as GET /admin/config/clusters/{name} shows it)
// to the form's flat fields and back. Keys the form does not manage (host,
// port, user... of a field-by-field postgres cluster) go back untouched,
// and so do masked secrets: the node keeps the stored secret for a mask.

export const ENGINES = [
  { value: 'duckDb', label: 'DuckDB (embedded)' },
  { value: 'sqlite', label: 'SQLite (embedded)' },
  { value: 'postgres', label: 'PostgreSQL' },
  { value: 'mysql', label: 'MySQL / MariaDB' },
  { value: 'trino', label: 'Trino' },
];

export const embedded = (e) => e === 'duckDb' || e === 'sqlite';
export const pooled = (e) => e === 'postgres' || e === 'mysql';

const MANAGED = ['engine', 'enabled', 'maxRunningQueries', 'externalUrl', 'databasePath', 'initSql',
  'externalAccess', 'healthCheckQuery', 'endpoint', 'poolSize', 'maxPinnedSessions', 'pipelineDepth',
  'auth', 'tls', 'queryAuth'];

export const UNMANAGED_NOTE = (keys) => `This cluster also sets ${keys.join(', ')}; they are kept as they are.`;

/// Several statements shown as one text, each ending with ";".
function sqlText(init) {
  if (!init) return '';
  const list = Array.isArray(init) ? init : [init];
  return list.map((s) => String(s).trim().replace(/;\s*$/, '')).join(';\n\n');
}

const str = (v) => (v === undefined || v === null ? '' : String(v));

export function blank(engine = 'duckDb') {
  return fromItem({ engine });
}

export function fromItem(item) {
  const auth = item.auth || {};
  return {
    name: str(item.name),
    engine: item.engine || 'duckDb',
    enabled: item.enabled !== false,
    maxRunningQueries: str(item.maxRunningQueries),
    externalUrl: str(item.externalUrl),
    databasePath: str(item.databasePath),
    initSql: sqlText(item.initSql),
    externalAccess: item.externalAccess === true,
    healthCheckQuery: str(item.healthCheckQuery),
    endpoint: str(item.endpoint),
    poolSize: str(item.poolSize),
    maxPinnedSessions: str(item.maxPinnedSessions),
    pipelineDepth: str(item.pipelineDepth),
    authType: str(auth.type),
    authUsername: str(auth.username),
    authPassword: str(auth.password),
    authToken: str(auth.token),
    tlsCaFile: str(item.tls?.caFile),
    tlsInsecure: item.tls?.insecureSkipVerify === true,
    queryAuthType: str(item.queryAuth?.type),
  };
}

export function unmanagedKeys(item) {
  return Object.keys(item || {}).filter((k) => k !== 'name' && !MANAGED.includes(k));
}

const NUMBERS = [
  ['maxRunningQueries', 'Max running queries', 1],
  ['poolSize', 'Pool size', 1],
  ['maxPinnedSessions', 'Max pinned sessions', 0],
  ['pipelineDepth', 'Pipeline depth', 1],
];

/// Problems in words, before anything is sent.
export function problems(f, adding, original = {}) {
  const out = [];
  if (adding && !/^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/.test(f.name)) {
    out.push('Name: 1 to 128 letters, digits, "_", "-" or ".", starting with a letter or digit.');
  }
  for (const [key, label, min] of NUMBERS) {
    const v = f[key].trim();
    if (v && (!/^\d+$/.test(v) || Number(v) < min)) out.push(`${label}: a whole number, at least ${min}.`);
  }
  if (f.engine === 'trino' && !/^https?:\/\//.test(f.endpoint.trim())) {
    out.push('Endpoint: the coordinator\'s http:// or https:// URL.');
  }
  // A cluster set up field by field (host, port...) needs no endpoint.
  if (pooled(f.engine) && !f.endpoint.trim() && !original.host) out.push(`Endpoint: a ${f.engine}:// URL.`);
  if (f.externalUrl.trim() && !/^https?:\/\//.test(f.externalUrl.trim())) {
    out.push('External URL: an http:// or https:// URL.');
  }
  if (f.engine === 'trino' && f.authType === 'basic' && !f.authUsername.trim()) out.push('Auth user name: needed for basic auth.');
  if (f.engine === 'trino' && f.authType === 'bearer' && !f.authToken) out.push('Token: needed for bearer auth.');
  return out;
}

/// The body to send: the original item's other keys, then the form's.
export function toItem(f, original = {}, originalInitSql = '') {
  const out = {};
  for (const [k, v] of Object.entries(original)) {
    if (k !== 'name' && !MANAGED.includes(k)) out[k] = v;
  }
  const e = f.engine;
  out.engine = e;
  const text = (key, value = f[key]) => { if (value.trim()) out[key] = value.trim(); };
  const int = (key) => { if (f[key].trim()) out[key] = Number(f[key].trim()); };
  if (!f.enabled) out.enabled = false;
  int('maxRunningQueries');
  text('externalUrl');
  if (embedded(e)) {
    text('databasePath');
    if (f.initSql === originalInitSql && original.initSql !== undefined) out.initSql = original.initSql;
    else if (f.initSql.trim()) out.initSql = [f.initSql.trim()];
    if (f.externalAccess) out.externalAccess = true;
    text('healthCheckQuery');
  }
  if (pooled(e)) {
    text('endpoint');
    int('poolSize');
    int('maxPinnedSessions');
    if (e === 'postgres') int('pipelineDepth');
    text('healthCheckQuery');
  }
  if (e === 'trino') {
    text('endpoint');
    if (f.authType === 'basic') {
      out.auth = { type: 'basic', username: f.authUsername.trim() };
      if (f.authPassword) out.auth.password = f.authPassword;
    } else if (f.authType === 'bearer') {
      out.auth = { type: 'bearer', token: f.authToken };
    }
    if (f.tlsCaFile.trim() || f.tlsInsecure) {
      out.tls = {};
      if (f.tlsCaFile.trim()) out.tls.caFile = f.tlsCaFile.trim();
      if (f.tlsInsecure) out.tls.insecureSkipVerify = true;
    }
    if (f.queryAuthType) out.queryAuth = { type: f.queryAuthType };
  }
  return out;
}
