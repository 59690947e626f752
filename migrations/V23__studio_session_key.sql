-- Studio's sessions are signed, not stored: the key that signs them is
-- shared by every control-plane replica on this database (a session made
-- on one is good on the others) and kept across restarts. One row; the
-- first node to start writes it.
CREATE TABLE IF NOT EXISTS studio_session_key (
  id         INT PRIMARY KEY CHECK (id = 1),
  key        TEXT NOT NULL,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Sessions logged out before they would expire, which every replica
-- refuses from then on, also after a restart. A row goes once its session
-- would have expired anyway.
CREATE TABLE IF NOT EXISTS studio_revoked_sessions (
  id         TEXT PRIMARY KEY,
  expires_at TIMESTAMPTZ NOT NULL
);
