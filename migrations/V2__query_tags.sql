ALTER TABLE query_records ADD COLUMN query_tags JSONB NOT NULL DEFAULT '{}';
CREATE INDEX query_records_tags ON query_records USING GIN (query_tags);
