-- 0006: a random id the file keeps, so that an in-memory index snapshot
-- written beside another database (a copy, a neighbour) is never taken
-- for this one's. Data only: the schema does not change.
INSERT OR IGNORE INTO store_state (key, value) VALUES ('store_id', abs(random() % 9223372036854775807));
