ALTER TABLE cluster_group_configs
  ADD COLUMN default_tags JSONB NOT NULL DEFAULT '{}',
  ADD COLUMN queue_timeout_ms BIGINT CHECK (queue_timeout_ms > 0);

CREATE TABLE proxy_settings (
  key        TEXT PRIMARY KEY,
  value      JSONB NOT NULL,
  updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
