-- Fleet-wide capacity: leases on cluster slots held by nodes, and counters.
CREATE TABLE cluster_capacity_leases (
  id             TEXT PRIMARY KEY,
  cluster_name   TEXT NOT NULL,
  holder         TEXT NOT NULL,
  acquired_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
  heartbeat_at   TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX cluster_capacity_leases_cluster ON cluster_capacity_leases (cluster_name);
CREATE INDEX cluster_capacity_leases_holder ON cluster_capacity_leases (holder);
CREATE INDEX cluster_capacity_leases_heartbeat ON cluster_capacity_leases (heartbeat_at);

CREATE TABLE cluster_capacity_counters (
  cluster_name TEXT PRIMARY KEY,
  running      BIGINT NOT NULL DEFAULT 0 CHECK (running >= 0)
);
