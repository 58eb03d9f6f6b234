-- 0006: erasure tombstones (see ../../schema.sql): a keyed hash of an
-- erased identity, never its content, so that a re-sync cannot bring the
-- erased item back while the source still holds it.
CREATE TABLE erasures (
	key          text PRIMARY KEY,
	key_id       text NOT NULL,
	kind         text NOT NULL,
	installation text NOT NULL DEFAULT '',
	created_at   timestamptz NOT NULL
);
CREATE INDEX erasures_key_id ON erasures (key_id);
