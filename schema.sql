-- The canonical ingestd schema (SQLite dialect), to read: what the numbered
-- migrations of store/sqlite (store/sqlite/migrations) build, which a test
-- proves. A change is a new migration and the same change here.
-- store/postgres keeps its own variant with the same tables and columns,
-- plus lexeme_alternatives (the word groups its full-text search matches).
-- A document's tier is TEXT and NULL means undeclared; a value this build
-- does not know is kept verbatim and read as untrusted-external.

-- One row per applied migration; the store creates it before the first.
CREATE TABLE schema_version (
	version INTEGER NOT NULL
);

CREATE TABLE installations (
	id         TEXT PRIMARY KEY,
	kind       TEXT NOT NULL,
	tier       TEXT,
	updated_at TEXT NOT NULL
);

CREATE TABLE documents (
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
	readers      TEXT,
	UNIQUE (installation, external_id)
);
CREATE INDEX documents_installation_status ON documents (installation, status);

-- seq is the rowid: it only grows, so a reader can catch up on new chunks.
CREATE TABLE chunks (
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
	tier         TEXT,
	-- where the chunk is in its source: "p. 3", "Refunds > Steps"; '' for
	-- a document without sections
	locator      TEXT NOT NULL DEFAULT ''
);
CREATE INDEX chunks_document ON chunks (document_id, ordinal);

CREATE TABLE links (
	from_id  TEXT NOT NULL,
	to_id    TEXT NOT NULL,
	relation TEXT NOT NULL,
	PRIMARY KEY (from_id, to_id, relation)
);
CREATE INDEX links_to ON links (to_id);

CREATE TABLE cursors (
	installation TEXT NOT NULL,
	key          TEXT NOT NULL,
	value        TEXT NOT NULL,
	PRIMARY KEY (installation, key)
);

-- The history of sync passes (RunStore): the newest passes of each
-- installation and its newest successful one. failed_in_row counts the
-- failed passes in a row up to this one.
CREATE TABLE sync_runs (
	id            INTEGER PRIMARY KEY AUTOINCREMENT,
	installation  TEXT NOT NULL,
	triggered_by  TEXT NOT NULL,
	started_at    TEXT NOT NULL,
	duration_ns   INTEGER NOT NULL DEFAULT 0,
	seen          INTEGER NOT NULL DEFAULT 0,
	added         INTEGER NOT NULL DEFAULT 0,
	changed       INTEGER NOT NULL DEFAULT 0,
	unchanged     INTEGER NOT NULL DEFAULT 0,
	deleted       INTEGER NOT NULL DEFAULT 0,
	failed        INTEGER NOT NULL DEFAULT 0,
	skipped       INTEGER NOT NULL DEFAULT 0,
	queued        INTEGER NOT NULL DEFAULT 0,
	complete      INTEGER NOT NULL DEFAULT 0,
	cursors       TEXT NOT NULL DEFAULT '',
	error         TEXT NOT NULL DEFAULT '',
	failed_in_row INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sync_runs_installation ON sync_runs (installation, id);
-- Erasure tombstones: a keyed hash (HMAC-SHA256 under the deployment's
-- erasure key) of an erased identity — an installation and external id, or
-- an author — never its content. The pipeline refuses an item whose
-- identity is here; key_id names the key that made the hash.
CREATE TABLE erasures (
	key          TEXT PRIMARY KEY,
	key_id       TEXT NOT NULL,
	kind         TEXT NOT NULL,
	installation TEXT NOT NULL DEFAULT '',
	created_at   TEXT NOT NULL
);
CREATE INDEX erasures_key_id ON erasures (key_id);

CREATE TABLE embedding_cache (
	embedder_id TEXT NOT NULL,
	text_hash   TEXT NOT NULL,
	embedding   BLOB NOT NULL,
	PRIMARY KEY (embedder_id, text_hash)
);

-- Full-text search has no table: the store answers it from an in-memory
-- index built from chunks.text (and saved beside the file), which catches
-- up through changes like the vector index.

-- changes logs what an in-memory index over chunks cannot see by reading
-- chunks with seq above the last it read: deleted chunks (chunk_seq), chunks
-- whose vector changed (chunk_seq) and documents whose filter fields
-- changed (document_id). Every process sharing the file catches up from it.
-- Old rows are pruned; store_state 'changes_pruned_through' says how far, so
-- a reader that fell behind that point reloads in full.
CREATE TABLE changes (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	chunk_seq   INTEGER,
	document_id TEXT
);

CREATE TABLE store_state (
	key   TEXT PRIMARY KEY,
	value INTEGER NOT NULL
);

CREATE TRIGGER chunks_ad AFTER DELETE ON chunks BEGIN
	INSERT INTO changes (chunk_seq) VALUES (old.seq);
END;

CREATE TRIGGER chunks_au_embedding AFTER UPDATE OF embedding, embedder_id ON chunks BEGIN
	INSERT INTO changes (chunk_seq) VALUES (new.seq);
END;

CREATE TRIGGER documents_au_filter
AFTER UPDATE OF installation, source_kind, tier, status, readers ON documents
WHEN old.installation IS NOT new.installation OR old.source_kind IS NOT new.source_kind
	OR old.tier IS NOT new.tier OR old.status IS NOT new.status OR old.readers IS NOT new.readers
BEGIN
	INSERT INTO changes (document_id) VALUES (new.id);
END;

-- A document's parent and metadata are tier facts too (a derived
-- document's tier in force follows its parent's; tier_by rules read the
-- metadata), which the in-memory mirror holds.
CREATE TRIGGER documents_au_facts
AFTER UPDATE OF parent_id, meta ON documents
WHEN old.parent_id IS NOT new.parent_id OR old.meta IS NOT new.meta
BEGIN
	INSERT INTO changes (document_id) VALUES (new.id);
END;
