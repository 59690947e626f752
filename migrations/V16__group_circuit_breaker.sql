ALTER TABLE cluster_group_configs ADD COLUMN circuit_breaker JSONB;
ALTER TABLE query_records ADD COLUMN translation JSONB;
