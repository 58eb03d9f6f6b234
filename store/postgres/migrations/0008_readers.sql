-- 0008: who may read a document (ingestd.Readers): NULL is unmapped,
-- readable by no person (every document stored before readers existed
-- is, until its next sync stamps it), else its principals ('*' for
-- everyone, '{}' for no one). Chunks carry a copy, as they do of status
-- and tier, so that a person's search filters the one table it ranks
-- (c.readers && the person's principals); the GIN index serves that
-- overlap where the planner filters before it ranks.
ALTER TABLE documents ADD COLUMN readers text[];
ALTER TABLE chunks ADD COLUMN readers text[];
CREATE INDEX chunks_readers ON chunks USING gin (readers);
