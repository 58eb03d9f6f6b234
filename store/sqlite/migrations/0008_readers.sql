-- 0008: who may read a document (ingestd.Readers): NULL is unmapped,
-- readable by no person (every document stored before readers existed
-- is, until its next sync stamps it), else the sorted principals joined
-- by single spaces ("*" for everyone, "" for no one). The in-memory
-- mirror filters by it, so a change of readers is logged as a change of
-- the document's filter fields.
ALTER TABLE documents ADD COLUMN readers TEXT;
DROP TRIGGER documents_au_filter;
CREATE TRIGGER documents_au_filter
AFTER UPDATE OF installation, source_kind, tier, status, readers ON documents
WHEN old.installation IS NOT new.installation OR old.source_kind IS NOT new.source_kind
	OR old.tier IS NOT new.tier OR old.status IS NOT new.status OR old.readers IS NOT new.readers
BEGIN
	INSERT INTO changes (document_id) VALUES (new.id);
END;
