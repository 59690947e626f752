-- One row that every config change bumps; listeners learn of it by NOTIFY.
CREATE TABLE config_revision (
  singleton  BOOLEAN PRIMARY KEY DEFAULT true CHECK (singleton),
  revision   BIGINT NOT NULL DEFAULT 0,
  updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
INSERT INTO config_revision (singleton, revision) VALUES (true, 0);

CREATE FUNCTION notify_config_revision_changed() RETURNS trigger AS $$
BEGIN
  PERFORM pg_notify('queryflux_config_revision', NEW.revision::text);
  RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER config_revision_changed AFTER UPDATE ON config_revision
  FOR EACH ROW EXECUTE FUNCTION notify_config_revision_changed();
