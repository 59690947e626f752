-- Where people open the cluster a query ran on (its externalUrl when it
-- ran), so that history links to the engine's own page of the query
-- (<externalUrl>/ui/query.html?<backend_query_id> for Trino).
ALTER TABLE query_records ADD COLUMN IF NOT EXISTS external_url TEXT;
