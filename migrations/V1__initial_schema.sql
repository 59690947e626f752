-- The config a control plane owns, and the history of finished queries.
CREATE TABLE cluster_configs (
  id                  BIGSERIAL PRIMARY KEY,
  name                TEXT NOT NULL UNIQUE,
  engine              TEXT NOT NULL,
  enabled             BOOLEAN NOT NULL DEFAULT true,
  max_running_queries INTEGER CHECK (max_running_queries > 0),
  config              JSONB NOT NULL DEFAULT '{}',
  created_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
  updated_at          TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE cluster_group_configs (
  id                  BIGSERIAL PRIMARY KEY,
  name                TEXT NOT NULL UNIQUE,
  enabled             BOOLEAN NOT NULL DEFAULT true,
  members             TEXT[] NOT NULL DEFAULT '{}',
  max_running_queries INTEGER NOT NULL DEFAULT 10 CHECK (max_running_queries > 0),
  max_queued_queries  INTEGER NOT NULL DEFAULT 100 CHECK (max_queued_queries >= 0),
  strategy            JSONB NOT NULL DEFAULT '{"type": "roundRobin"}',
  allow_groups        TEXT[] NOT NULL DEFAULT '{}',
  allow_users         TEXT[] NOT NULL DEFAULT '{}',
  config              JSONB NOT NULL DEFAULT '{}',
  created_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
  updated_at          TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- One row: the fallback group and whether routers come from the database.
CREATE TABLE routing_settings (
  singleton        BOOLEAN PRIMARY KEY DEFAULT true CHECK (singleton),
  routing_fallback TEXT,
  updated_at       TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE routing_rules (
  id         BIGSERIAL PRIMARY KEY,
  sort_order INTEGER NOT NULL,
  definition JSONB NOT NULL,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  UNIQUE (sort_order)
);

CREATE TABLE security_settings (
  singleton  BOOLEAN PRIMARY KEY DEFAULT true CHECK (singleton),
  config     JSONB NOT NULL DEFAULT '{}',
  updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE query_records (
  id                    BIGSERIAL PRIMARY KEY,
  proxy_query_id        TEXT NOT NULL,
  backend_query_id      TEXT,
  cluster_group         TEXT,
  cluster_name          TEXT,
  engine_type           TEXT,
  frontend_protocol     TEXT NOT NULL,
  username              TEXT,
  source                TEXT,
  catalog               TEXT,
  db_name               TEXT,
  sql_preview           TEXT,
  status                TEXT NOT NULL CHECK (status IN ('Success', 'Failed', 'Cancelled', 'Denied')),
  routing_trace         JSONB,
  queue_duration_ms     BIGINT,
  execution_duration_ms BIGINT,
  rows_returned         BIGINT,
  error_message         TEXT,
  created_at            TIMESTAMPTZ NOT NULL DEFAULT now(),
  started_at            TIMESTAMPTZ,
  finished_at           TIMESTAMPTZ
);
CREATE INDEX query_records_created_at ON query_records (created_at DESC);
CREATE INDEX query_records_group ON query_records (cluster_group, created_at DESC);
CREATE INDEX query_records_status ON query_records (status, created_at DESC);
CREATE INDEX query_records_proxy_id ON query_records (proxy_query_id);
