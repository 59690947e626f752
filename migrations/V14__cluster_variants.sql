ALTER TABLE cluster_configs ADD COLUMN variants JSONB NOT NULL DEFAULT '[]';
