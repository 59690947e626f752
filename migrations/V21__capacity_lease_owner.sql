-- Control-plane replicas on one database share one lease table: the
-- replica holding an advisory lock owns it and writes what it counts to
-- cluster_capacity_leases (one row a slot, batched); a replica that takes
-- over reads it back, with each holder's TTL. The owner's address, for
-- the others to forward workers' lease calls to, is here.
ALTER TABLE cluster_capacity_leases ADD COLUMN ttl_secs INTEGER NOT NULL DEFAULT 30;

CREATE TABLE capacity_lease_owner (
  id       BOOLEAN PRIMARY KEY DEFAULT true CHECK (id),
  replica  TEXT NOT NULL,
  url      TEXT NOT NULL,
  epoch    BIGINT NOT NULL,
  since    TIMESTAMPTZ NOT NULL DEFAULT now()
);
