import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/app.js';
import type { NewJob } from '../../src/storage/store.js';
import { TEST_DATABASE_URL, uniqueId } from '../support/test-app.js';

const job = (): NewJob => ({ id: uniqueId('job'), kind: 'test.noop', workspaceId: null, queueKey: uniqueId('q'), payload: {}, maxAttempts: 1 });

describe('onJobsQueued', () => {
  let database: Database;
  beforeAll(async () => {
    database = await openDatabase(TEST_DATABASE_URL);
  });
  afterAll(() => database.driver.close());

  it('tells at once outside a transaction, after the commit inside one, never for a rollback', async () => {
    const events: string[] = [];
    const unlisten = database.store.onJobsQueued(() => events.push('queued'));
    try {
      await database.store.jobs.enqueue([job()], new Date());
      expect(events).toEqual(['queued']);

      await database.store.transaction(async (tx) => {
        await tx.jobs.enqueue([job()], new Date());
        await tx.jobs.enqueue([job()], new Date());
        events.push('before commit');
      });
      expect(events).toEqual(['queued', 'before commit', 'queued']);

      await expect(
        database.store.transaction(async (tx) => {
          await tx.jobs.enqueue([job()], new Date());
          throw new Error('roll back');
        }),
      ).rejects.toThrow('roll back');
      await database.store.transaction(async () => undefined);
      // no endpoints: nothing queued, nothing told
      await database.store.jobs.enqueuePerWebhookEndpoint(uniqueId(), { idPrefix: 'x', kind: 'k', payload: {}, maxAttempts: 1 }, new Date());
      expect(events).toEqual(['queued', 'before commit', 'queued']);
    } finally {
      unlisten();
    }
    await database.store.jobs.enqueue([job()], new Date());
    expect(events).toHaveLength(3);
  });
});
