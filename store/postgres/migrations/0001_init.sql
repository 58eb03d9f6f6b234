-- 0001: the Postgres variant of the canonical schema (../../schema.sql):
-- the same tables and columns, in Postgres types, plus what the scale-out
-- store needs to search inside the database.
--
-- {{dims}} is replaced by the embedder's dimension when the migration runs:
-- an HNSW index needs a fixed-dimension vector column.
--
-- A document's tier is text and NULL means undeclared; a value this build
-- does not know is kept verbatim (never constrained) and read as
-- untrusted-external by package provenance.

CREATE TABLE installations (
	id         text PRIMARY KEY,
	kind       text NOT NULL,
	tier       text,
	updated_at timestamptz NOT NULL
);

CREATE TABLE documents (
	id           text PRIMARY KEY,
	installation text NOT NULL,
	external_id  text NOT NULL,
	source_kind  text NOT NULL,
	item_kind    text NOT NULL DEFAULT '',
	uri          text NOT NULL DEFAULT '',
	title        text NOT NULL DEFAULT '',
	author       text NOT NULL DEFAULT '',
	created_at   timestamptz,
	updated_at   timestamptz,
	content_hash text NOT NULL,
	tier         text,
	status       text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'rejected', 'deleted')),
	parent_id    text, -- no foreign key: a parent may arrive after its child
	meta         jsonb NOT NULL DEFAULT '{}',
	ingested_at  timestamptz NOT NULL,
	deleted_at   timestamptz, -- set on a tombstone, cleared when it comes back
	UNIQUE (installation, external_id)
);
CREATE INDEX documents_installation_status ON documents (installation, status);
-- The verdict's tier lookup is by primary key (id = ANY($1)); this index
-- serves the provenance report's grouping and tier filters.
CREATE INDEX documents_tier ON documents (tier);

-- vector_seq orders vectors by when they were written (inserted or
-- re-embedded), so a search without an embedder id picks the embedder of
-- the newest vector.
CREATE SEQUENCE chunk_vector_seq;

-- Chunks of deleted documents are deleted, so they leave every index with
-- them. installation, source_kind, status and title are copies of the
-- document's (as tier is in the canonical schema): searches filter and rank
-- one table, so the planner can walk the HNSW index and stop at k rows.
CREATE TABLE chunks (
	seq          bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
	id           text PRIMARY KEY,
	document_id  text NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
	ordinal      integer NOT NULL,
	heading_path jsonb NOT NULL DEFAULT '[]',
	text         text NOT NULL,
	fenced       text NOT NULL,
	tokens       integer NOT NULL DEFAULT 0,
	embedding    vector({{dims}}),
	embedder_id  text NOT NULL DEFAULT '',
	vector_seq   bigint NOT NULL DEFAULT nextval('chunk_vector_seq'),
	tier         text,
	installation text NOT NULL,
	source_kind  text NOT NULL,
	status       text NOT NULL,
	title        text NOT NULL DEFAULT '',
	search       tsvector GENERATED ALWAYS AS (
		setweight(to_tsvector('english', text), 'A') ||
		setweight(to_tsvector('english', title), 'B') ||
		setweight(jsonb_to_tsvector('english', heading_path, '["string"]'), 'C')
	) STORED
);
CREATE INDEX chunks_document ON chunks (document_id, ordinal);
CREATE INDEX chunks_embedding ON chunks USING hnsw (embedding vector_cosine_ops);
CREATE INDEX chunks_search ON chunks USING gin (search);
CREATE INDEX chunks_vector_seq ON chunks (vector_seq) WHERE embedding IS NOT NULL;

-- Links may point at documents not stored yet, so only from_id is a
-- foreign key.
CREATE TABLE links (
	from_id  text NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
	to_id    text NOT NULL,
	relation text NOT NULL,
	PRIMARY KEY (from_id, to_id, relation)
);
CREATE INDEX links_to ON links (to_id);

CREATE TABLE cursors (
	installation text NOT NULL,
	key          text NOT NULL,
	value        text NOT NULL,
	PRIMARY KEY (installation, key)
);

-- The cache keeps vectors of any length (it is keyed by embedder id), so
-- it is a plain real[] rather than vector(n).
CREATE TABLE embedding_cache (
	embedder_id text NOT NULL,
	text_hash   text NOT NULL,
	embedding   real[] NOT NULL,
	PRIMARY KEY (embedder_id, text_hash)
);

-- Query words become a tsquery without any of the user's text being read as
-- tsquery syntax: the words are the lexemes to_tsvector makes of the text
-- (at most 32), each turned into a query by plainto_tsquery and joined by
-- these aggregates. No words make NULL, which matches nothing.
CREATE AGGREGATE ingestd_tsquery_or (tsquery) (SFUNC = tsquery_or, STYPE = tsquery);
CREATE AGGREGATE ingestd_tsquery_and (tsquery) (SFUNC = tsquery_and, STYPE = tsquery);

CREATE FUNCTION ingestd_query_words (q text) RETURNS SETOF tsquery
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT plainto_tsquery('simple', w)
	FROM unnest(tsvector_to_array(to_tsvector('english', q))) AS w
	LIMIT 32
$$;
