-- A GIN index takes new entries into a pending list, merged into the index when the list passes
-- gin_pending_list_limit (4 MB by default) or at a VACUUM, and every search through the index
-- reads the whole list first. After 100,000 messages were stored, a search for a word in a dozen
-- messages took 8 to 9 ms, 3 to 4 ms once VACUUM had merged the list; with a limit of 256 kB it
-- took 3 to 4 ms straight after the load, which took as long as with the default (27.1 and
-- 27.5 s). Turning the list off (fastupdate = off) made the same load 43 % slower. The indexes of
-- the tables written most, messages and conclusions, get the small list; their lists are merged
-- now, so a database that had grown a large one does not keep it until its next VACUUM.
ALTER INDEX messages_search_vector SET (gin_pending_list_limit = 256);
ALTER INDEX messages_metadata SET (gin_pending_list_limit = 256);
ALTER INDEX conclusions_search SET (gin_pending_list_limit = 256);
ALTER INDEX conclusions_metadata SET (gin_pending_list_limit = 256);
ALTER INDEX conclusions_source_ids SET (gin_pending_list_limit = 256);
SELECT gin_clean_pending_list(index_name::regclass)
FROM (VALUES ('messages_search_vector'), ('messages_metadata'), ('conclusions_search'), ('conclusions_metadata'), ('conclusions_source_ids')) AS gin (index_name);
