ALTER TABLE cluster_group_configs ADD COLUMN cache JSONB;
ALTER TABLE query_records ADD COLUMN cache_hit BOOLEAN NOT NULL DEFAULT false;

CREATE TABLE cache_entries (
  key         TEXT PRIMARY KEY,
  cluster_group TEXT NOT NULL,
  payload     BYTEA NOT NULL,
  expires_at  TIMESTAMPTZ NOT NULL,
  created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX cache_entries_expires ON cache_entries (expires_at);
