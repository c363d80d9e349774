-- A workspace's message count (0047) is added when the writing transaction commits, not at the
-- end of its INSERT. The statement trigger took the stripe's row there and the writer held it
-- through the rest of its transaction (a message write's items, jobs and webhook events: round
-- trips through a busy server), so a writer on another connection counting into the same stripe
-- waited for all of it: with two server processes' pools, twenty connections share the sixteen
-- stripes, and under the soak a message insert's wait for one was PostgreSQL's most common lock
-- wait. A deferred constraint trigger runs at commit, a row at a time, so the row is held from
-- there to the end of the commit only.
DROP TRIGGER message_counts_insert ON messages;
DROP FUNCTION engram_message_counts_inserted();
CREATE FUNCTION engram_message_count_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO message_counts (workspace_id, stripe, n) VALUES (NEW.workspace_id, pg_backend_pid() % 16, 1)
  ON CONFLICT (workspace_id, stripe) DO UPDATE SET n = message_counts.n + 1;
  RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER message_counts_insert AFTER INSERT ON messages
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION engram_message_count_inserted();
