-- Operators may have created the index by hand (CONCURRENTLY) beforehand,
-- as the upgrade notes advise: both steps then find their work done.
ALTER TABLE query_records ADD COLUMN IF NOT EXISTS worker TEXT;
CREATE INDEX IF NOT EXISTS query_records_worker
  ON query_records (worker, created_at DESC) WHERE worker IS NOT NULL;
