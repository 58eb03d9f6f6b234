-- Dismissed approaches are few. A search for them (retrieval's rejected
-- block filters on status = 'rejected') reads this partial index and sorts
-- the few rows exactly, instead of walking the whole HNSW graph with an
-- iterative scan looking for rows that mostly do not exist.
CREATE INDEX IF NOT EXISTS chunks_rejected ON chunks (document_id) WHERE status = 'rejected';
