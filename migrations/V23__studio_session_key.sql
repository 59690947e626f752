-- The key that signs Studio's session cookies, shared by every control-plane
-- replica on this database (a session made on one is good on the others)
-- and kept across restarts. One row; the first node to start writes it.
CREATE TABLE IF NOT EXISTS studio_session_key (
  id         INT PRIMARY KEY CHECK (id = 1),
  key        TEXT NOT NULL,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
