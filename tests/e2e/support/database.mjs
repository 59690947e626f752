// A PostgreSQL database of its own per test, on the server of
// deploy/services.sh, and a config that persists into it.
import pg from 'pg';
import { config } from './gateway.mjs';

export const PG_URL = process.env.QF_PG_URL || 'postgres://postgres@127.0.0.1:15432/postgres';

/// Creates an empty database, dropped after the test; returns its URL.
export async function freshDatabase(t, prefix = 'qf_e2e') {
  const name = `${prefix}_${process.pid}_${Math.floor(Math.random() * 1e9)}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  t.after(async () => {
    const c = new pg.Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await c.end();
  });
  return PG_URL.slice(0, PG_URL.lastIndexOf('/') + 1) + name;
}

/// One DuckDB cluster in one group, persisted as given.
export function gatewayConfig(ports, persistence) {
  const cfg = config({
    trinoPort: ports.trino,
    adminPort: ports.admin,
    clusters: { duck: { engine: 'duckDb' } },
    clusterGroups: { g: { members: ['duck'] } },
  });
  cfg.queryflux.persistence = persistence;
  return cfg;
}

/// Runs one statement on its own connection; returns the rows.
export async function sql(url, text) {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try { return (await c.query(text)).rows; } finally { await c.end(); }
}
