-- Queries waiting for capacity and running ones, visible across nodes.
CREATE TABLE queued_queries (
  id            TEXT PRIMARY KEY,
  cluster_group TEXT NOT NULL,
  data          JSONB NOT NULL,
  claimed_by    TEXT,
  claimed_at    TIMESTAMPTZ,
  created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
  CHECK ((claimed_by IS NULL) = (claimed_at IS NULL))
);
CREATE INDEX queued_queries_group ON queued_queries (cluster_group, created_at) WHERE claimed_by IS NULL;

CREATE TABLE executing_queries (
  id           TEXT PRIMARY KEY,
  cluster_name TEXT NOT NULL,
  data         JSONB NOT NULL,
  created_at   TIMESTAMPTZ NOT NULL DEFAULT now()
);
