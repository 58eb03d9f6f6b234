-- 0005: erasure tombstones. An erasure removes a document for good and
-- leaves here a keyed hash of its identity (installation and external id,
-- or an author), never its content, so that a re-sync cannot bring it
-- back while the source still holds it. key_id names the erasure key that
-- made the hash: a process with another key cannot match it, and says so.
CREATE TABLE erasures (
	key          TEXT PRIMARY KEY,
	key_id       TEXT NOT NULL,
	kind         TEXT NOT NULL,
	installation TEXT NOT NULL DEFAULT '',
	created_at   TEXT NOT NULL
);
CREATE INDEX erasures_key_id ON erasures (key_id);
