import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqlStore } from '../../src/storage/sql/sql-store.js';
import { ENDPOINT_MEMO_MS } from '../../src/storage/sql/webhook-store.js';
import { openFreshDatabase } from '../support/fresh-database.js';
import { recordingExecutor } from '../support/recording-executor.js';

/*
 * What a store keeps of what it read, so that the hot paths do not read it again: the vectors'
 * size (read by every search and vector write) and the webhook endpoints (read by every
 * delivery). Counted by the statements the store sends, on both databases.
 */

describe('what a store keeps of what it read', () => {
  let database: Awaited<ReturnType<typeof openFreshDatabase>>;
  beforeAll(async () => {
    database = await openFreshDatabase();
  });
  afterAll(() => database.close());

  const recorded = () => {
    const { executor, issued } = recordingExecutor(database.driver);
    return { store: new SqlStore(executor, database.driver), issued };
  };
  const count = (issued: { sql: string }[], table: string) => issued.filter((s) => s.sql.includes(table)).length;

  it('the vectors size: read once outside transactions, never kept from inside one, forgotten by clear', async () => {
    const { store, issued } = recorded();
    expect(await store.vectors.dimensions()).toBeUndefined();
    expect(await store.vectors.dimensions()).toBeUndefined();
    // no size yet: asked each time
    expect(count(issued, 'store_settings')).toBe(2);
    const vector = { conclusionId: 'none', workspaceId: 'w', observerId: 'a', observedId: 'b', level: 'explicit' as const, sessionId: null, vector: [1, 0, 0, 0] };
    // the first size, fixed inside a transaction: not kept from there
    await store.transaction((tx) => tx.vectors.putConclusions([vector]));
    issued.length = 0;
    expect(await store.vectors.dimensions()).toBe(4);
    expect(await store.vectors.dimensions()).toBe(4);
    await store.vectors.putConclusions([vector]);
    await store.transaction(async (tx) => expect(await tx.vectors.dimensions()).toBe(4));
    expect(count(issued, 'store_settings')).toBe(1);
    // a vector of another size is still refused
    await expect(store.vectors.putConclusions([{ ...vector, vector: [1, 0] }])).rejects.toThrow(/dimensions|size/i);
    await store.vectors.clear();
    issued.length = 0;
    expect(await store.vectors.dimensions()).toBeUndefined();
    expect(count(issued, 'store_settings')).toBe(1);
  });

  it('webhook endpoints: found once a second; a delete through the store forgets at once, one elsewhere within the second', async () => {
    const { store, issued } = recorded();
    const now = new Date();
    await store.workspaces.createIfAbsent({ id: 'memo-ws', metadata: {}, configuration: {} }, now);
    const endpoint = await store.webhooks.insert({ id: 'memo-e1', workspaceId: 'memo-ws', url: 'http://example.test/1', createdAt: now });
    const other = await store.webhooks.insert({ id: 'memo-e2', workspaceId: 'memo-ws', url: 'http://example.test/2', createdAt: now });
    expect(endpoint?.id).toBe('memo-e1');
    issued.length = 0;
    for (let i = 0; i < 5; i++) expect((await store.webhooks.find('memo-e1'))?.url).toBe('http://example.test/1');
    expect(count(issued, 'webhook_endpoints')).toBe(1);
    // deleted through this store: gone at once
    expect(await store.webhooks.delete('memo-ws', 'memo-e1')).toBe(true);
    expect(await store.webhooks.find('memo-e1')).toBeUndefined();
    // deleted by another process (a store of its own over the same database): seen within the second
    expect((await store.webhooks.find(other!.id))?.id).toBe('memo-e2');
    expect(await SqlStore.over(database.driver).webhooks.delete('memo-ws', 'memo-e2')).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, ENDPOINT_MEMO_MS + 50));
    expect(await store.webhooks.find('memo-e2')).toBeUndefined();
  });
});
