-- 0004: where a chunk is in its source document, for a person to follow:
-- "p. 3" for a page of a PDF, "Refunds > Steps" for a section of a DOCX or
-- ODT. Chunks written before it have none (''), as have the chunks of a
-- document without sections; nothing is rewritten.
ALTER TABLE chunks ADD COLUMN locator TEXT NOT NULL DEFAULT '';
