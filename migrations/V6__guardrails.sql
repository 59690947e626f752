-- kind: 'global' or a cluster group's name.
CREATE TABLE guardrails (
  kind       TEXT PRIMARY KEY,
  guards     JSONB NOT NULL DEFAULT '[]',
  updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
