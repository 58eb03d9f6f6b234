-- 0002: a document's parent and metadata are tier facts too (a derived
-- document's tier in force follows its parent's; tier_by rules read the
-- metadata), which the in-memory mirror holds, so their changes are logged.
--
-- IF NOT EXISTS: the code before numbered migrations added this trigger
-- to databases it opened and still recorded version 1.
CREATE TRIGGER IF NOT EXISTS documents_au_facts
AFTER UPDATE OF parent_id, meta ON documents
WHEN old.parent_id IS NOT new.parent_id OR old.meta IS NOT new.meta
BEGIN
	INSERT INTO changes (document_id) VALUES (new.id);
END;
