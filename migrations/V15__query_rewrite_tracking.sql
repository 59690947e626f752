ALTER TABLE query_records
  ADD COLUMN was_rewritten BOOLEAN NOT NULL DEFAULT false,
  ADD COLUMN rewritten_sql TEXT;
