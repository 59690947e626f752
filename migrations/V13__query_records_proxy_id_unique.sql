-- History writes are idempotent on the proxy query id: the first record wins.
DROP INDEX query_records_proxy_id;
CREATE UNIQUE INDEX query_records_proxy_id ON query_records (proxy_query_id);
