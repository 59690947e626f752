-- 64-bit digests of the statement and of its literal-masked form.
ALTER TABLE query_records
  ADD COLUMN query_hash BIGINT,
  ADD COLUMN query_parameterized_hash BIGINT;

CREATE TABLE query_digest_stats (
  query_parameterized_hash BIGINT PRIMARY KEY,
  digest_text              TEXT NOT NULL,
  cluster_group            TEXT,
  first_seen               TIMESTAMPTZ NOT NULL DEFAULT now(),
  last_seen                TIMESTAMPTZ NOT NULL DEFAULT now(),
  call_count               BIGINT NOT NULL DEFAULT 0,
  sum_execution_ms         BIGINT NOT NULL DEFAULT 0,
  sum_rows_returned        BIGINT NOT NULL DEFAULT 0
);
