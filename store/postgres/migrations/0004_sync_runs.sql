-- 0004: the history of sync passes (ingestd.RunStore), as in the canonical
-- schema: one row per pass, what started it, when, what it did to the
-- items it saw and how it ended. The store keeps the newest passes of
-- each installation (and its newest successful one) and deletes the rest
-- as it adds a pass. failed_in_row counts the failed passes in a row up
-- to this one.
CREATE TABLE sync_runs (
	id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	installation  text NOT NULL,
	triggered_by  text NOT NULL,
	started_at    timestamptz NOT NULL,
	duration_ns   bigint NOT NULL DEFAULT 0,
	seen          integer NOT NULL DEFAULT 0,
	added         integer NOT NULL DEFAULT 0,
	changed       integer NOT NULL DEFAULT 0,
	unchanged     integer NOT NULL DEFAULT 0,
	deleted       integer NOT NULL DEFAULT 0,
	failed        integer NOT NULL DEFAULT 0,
	skipped       integer NOT NULL DEFAULT 0,
	queued        integer NOT NULL DEFAULT 0,
	complete      boolean NOT NULL DEFAULT false,
	cursors       text NOT NULL DEFAULT '',
	error         text NOT NULL DEFAULT '',
	failed_in_row integer NOT NULL DEFAULT 0
);
CREATE INDEX sync_runs_installation ON sync_runs (installation, id);
