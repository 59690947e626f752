-- Workers register on start and heartbeat (worker-mode spec).
CREATE TABLE worker_registry (
  name            TEXT PRIMARY KEY,
  labels          JSONB NOT NULL DEFAULT '{}',
  version         TEXT NOT NULL,
  active_revision TEXT,
  last_error      TEXT,
  registered_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
  last_seen_at    TIMESTAMPTZ NOT NULL DEFAULT now()
);
