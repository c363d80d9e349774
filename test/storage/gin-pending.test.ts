import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/runtime/database.js';
import { DIALECT, ownPostgresDatabase, uniqueId } from '../support/test-app.js';

/*
 * PostgreSQL's GIN indexes take new entries into a pending list that every search through the
 * index reads first; the indexes of messages and conclusions keep it under 256 kB (migration
 * 0036), where the default lets it grow to 4 MB between merges.
 */
describe.runIf(DIALECT === 'postgres')('GIN pending lists on PostgreSQL', () => {
  // a database of its own: the pending list is the whole index's, and other files' writes to a
  // shared database would be counted in it
  let database: Database;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    const own = await ownPostgresDatabase();
    drop = own.drop;
    database = await openDatabase(own.url);
  });
  afterAll(async () => {
    await database.driver.close();
    await drop();
  });

  /** Merges the index's pending list, returning how many pages it held. */
  const cleanPending = async (index: string) =>
    Number((await database.driver.get<{ pages: string | number }>(`SELECT gin_clean_pending_list(?::regclass) AS pages`, [index]))?.pages);

  it("keeps the messages' search index's pending list under 256 kB while messages are stored", async () => {
    const workspaceId = uniqueId('ws');
    const at = new Date('2026-11-01T10:00:00.000Z');
    const store = database.store;
    await store.workspaces.createIfAbsent({ id: workspaceId, metadata: {}, configuration: {} }, at);
    await store.peers.ensure(workspaceId, ['writer'], at);
    await store.sessions.createIfAbsent(workspaceId, { id: 'talk', metadata: {}, configuration: {} }, at);
    await cleanPending('messages_search_vector');
    // 60,000 distinct words in 3,000 messages: at the default limit their entries stay pending,
    // some 150 pages of 8 kB (seen with the migration left out), far more than 32
    for (let batch = 0; batch < 30; batch++) {
      const messages = Array.from({ length: 100 }, (_, i) => {
        const n = batch * 100 + i;
        const words = Array.from({ length: 20 }, (_, k) => `w${(n * 20 + k).toString(36)}x`).join(' ');
        return { id: uniqueId('m'), workspaceId, sessionId: 'talk', peerId: 'writer', content: words, metadata: {}, tokenCount: 20, createdAt: at };
      });
      await store.messages.insert(messages);
    }
    const pending = await cleanPending('messages_search_vector');
    // 256 kB is 32 pages of 8 kB; the insert that passes the limit merges the list
    expect(pending).toBeLessThanOrEqual(33);
  });

  it('gives the indexes of messages and conclusions the small list', async () => {
    const rows = await database.driver.all<{ name: string; options: string[] | null }>(
      `SELECT c.relname AS name, c.reloptions AS options FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid JOIN pg_am a ON a.oid = c.relam
       WHERE a.amname = 'gin' AND i.indrelid IN ('messages'::regclass, 'conclusions'::regclass) ORDER BY c.relname`,
    );
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) expect(row.options ?? [], row.name).toContain('gin_pending_list_limit=256');
  });
});
