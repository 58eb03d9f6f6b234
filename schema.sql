-- The canonical ingestd schema (SQLite dialect). store/sqlite applies it;
-- store/postgres keeps its own variant with the same tables and columns.
-- A document's tier is TEXT and NULL means undeclared; a value this build
-- does not know is kept verbatim and read as untrusted-external.

CREATE TABLE IF NOT EXISTS schema_version (
	version INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS installations (
	id         TEXT PRIMARY KEY,
	kind       TEXT NOT NULL,
	tier       TEXT,
	updated_at TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS documents (
	id           TEXT PRIMARY KEY,
	installation TEXT NOT NULL,
	external_id  TEXT NOT NULL,
	source_kind  TEXT NOT NULL,
	item_kind    TEXT NOT NULL DEFAULT '',
	uri          TEXT NOT NULL DEFAULT '',
	title        TEXT NOT NULL DEFAULT '',
	author       TEXT NOT NULL DEFAULT '',
	created_at   TEXT,
	updated_at   TEXT,
	content_hash TEXT NOT NULL,
	tier         TEXT,
	status       TEXT NOT NULL DEFAULT 'active',
	parent_id    TEXT,
	meta         TEXT NOT NULL DEFAULT '{}',
	ingested_at  TEXT NOT NULL,
	deleted_at   TEXT,
	UNIQUE (installation, external_id)
);
CREATE INDEX IF NOT EXISTS documents_installation_status ON documents (installation, status);
CREATE INDEX IF NOT EXISTS documents_tier ON documents (tier);

-- seq is the rowid: it only grows, so a reader can catch up on new chunks.
CREATE TABLE IF NOT EXISTS chunks (
	seq          INTEGER PRIMARY KEY AUTOINCREMENT,
	id           TEXT NOT NULL UNIQUE,
	document_id  TEXT NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
	ordinal      INTEGER NOT NULL,
	heading_path TEXT NOT NULL DEFAULT '[]',
	text         TEXT NOT NULL,
	fenced       TEXT NOT NULL,
	tokens       INTEGER NOT NULL DEFAULT 0,
	embedding    BLOB,
	embedder_id  TEXT NOT NULL DEFAULT '',
	tier         TEXT
);
CREATE INDEX IF NOT EXISTS chunks_document ON chunks (document_id, ordinal);

CREATE TABLE IF NOT EXISTS links (
	from_id  TEXT NOT NULL,
	to_id    TEXT NOT NULL,
	relation TEXT NOT NULL,
	PRIMARY KEY (from_id, to_id, relation)
);
CREATE INDEX IF NOT EXISTS links_to ON links (to_id);

CREATE TABLE IF NOT EXISTS cursors (
	installation TEXT NOT NULL,
	key          TEXT NOT NULL,
	value        TEXT NOT NULL,
	PRIMARY KEY (installation, key)
);

CREATE TABLE IF NOT EXISTS embedding_cache (
	embedder_id TEXT NOT NULL,
	text_hash   TEXT NOT NULL,
	embedding   BLOB NOT NULL,
	PRIMARY KEY (embedder_id, text_hash)
);
