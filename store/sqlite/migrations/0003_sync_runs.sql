-- 0003: the history of sync passes (ingestd.RunStore): one row per pass,
-- what started it, when, what it did to the items it saw and how it
-- ended. The store keeps the newest passes of each installation (and its
-- newest successful one) and deletes the rest as it adds a pass.
-- failed_in_row counts the failed passes in a row up to this one, so the
-- newest row says how long an installation has been failing however few
-- rows are kept.
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
