-- Periodic load samples per cluster, for dashboards.
CREATE TABLE cluster_snapshots (
  cluster_name        TEXT NOT NULL,
  group_name          TEXT,
  engine_type         TEXT,
  running_queries     INTEGER NOT NULL,
  queued_queries      INTEGER NOT NULL,
  max_running_queries INTEGER,
  recorded_at         TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX cluster_snapshots_recorded ON cluster_snapshots (cluster_name, recorded_at DESC);
