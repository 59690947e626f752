-- What the engine reports about a query's work (Trino's stats, when known).
ALTER TABLE query_records
  ADD COLUMN cpu_time_ms BIGINT,
  ADD COLUMN processed_rows BIGINT,
  ADD COLUMN processed_bytes BIGINT,
  ADD COLUMN peak_memory_bytes BIGINT,
  ADD COLUMN engine_elapsed_time_ms BIGINT;
