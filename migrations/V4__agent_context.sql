ALTER TABLE query_records
  ADD COLUMN agent_id TEXT,
  ADD COLUMN conversation_id TEXT,
  ADD COLUMN step_index INTEGER,
  ADD COLUMN query_intent TEXT;
CREATE INDEX query_records_agent ON query_records (agent_id, created_at DESC) WHERE agent_id IS NOT NULL;
