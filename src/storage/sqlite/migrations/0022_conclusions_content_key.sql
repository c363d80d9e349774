-- Storing a conclusion first looks for a live one of the same collection, level and session with
-- the same text (trimmed, case-folded): an exact repeat is reinforced instead of stored twice.
-- That lookup read every conclusion of the collection's level and session (5 ms at 10,000, on
-- every deriver batch and manual POST); this index on the text's trimmed, lower-cased form
-- hands out the candidates, which the store then compares as before. The level comes second so
-- that counts of a whole collection keep using conclusions_pair_created, whose entries are
-- smaller (this one holds the text).
CREATE INDEX conclusions_content_key ON conclusions (workspace_id, level, observer_id, observed_id, session_id, lower(trim(content))) WHERE deleted_at IS NULL;
