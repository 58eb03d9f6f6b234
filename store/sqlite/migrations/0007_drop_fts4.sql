-- 0007: the FTS4 table goes. Searches have been answered by the in-memory
-- text index (store/sqlite/internal/textindex), which is built from the
-- chunks' own text and saved in the index snapshot beside the file; the
-- FTS4 table was written on every insert (a porter-tokenised copy of
-- every chunk, a segment flushed per transaction) and read by nothing.
-- A deleted chunk is still logged in changes, for the in-memory indexes.
-- documents_tier goes too: no query of this store reads documents by
-- stored tier (filters run in memory), and every document wrote it.
DROP TRIGGER IF EXISTS chunks_ai;
DROP TRIGGER IF EXISTS chunks_ad;
DROP TABLE IF EXISTS chunks_fts;
CREATE TRIGGER chunks_ad AFTER DELETE ON chunks BEGIN
	INSERT INTO changes (chunk_seq) VALUES (old.seq);
END;
DROP INDEX IF EXISTS documents_tier;
