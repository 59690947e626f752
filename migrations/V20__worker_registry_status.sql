ALTER TABLE worker_registry
  ADD COLUMN status TEXT NOT NULL DEFAULT 'active'
    CHECK (status IN ('active', 'draining', 'gone'));
