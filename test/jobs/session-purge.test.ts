import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { followUpHandlers } from '../../src/jobs/catalog.js';
import type { JobRecord, Store } from '../../src/storage/store.js';
import { buildTestApp, uniqueId, type TestApi } from '../support/test-app.js';
import { PURGE_SESSION } from '../../src/domain/job-kinds.js';

/*
 * A deleted session is purged by a job (contract: messages, conclusions, memberships and the row
 * go asynchronously), in batches of 500 rows, each its own short transaction, so a session of
 * many messages never holds the process or the database for long; a run that stops part way
 * leaves a session the next attempt finishes.
 */

let api: TestApi;
beforeAll(async () => {
  api = await buildTestApp();
});
afterAll(() => api.close());

const purge = followUpHandlers({ secret: 's', timeoutMs: 1_000, allowPrivate: true })[PURGE_SESSION];

/** The store, with the sizes of the purge batches it deleted written down. */
function recordingStore(batches: number[], afterBatch: () => void = () => undefined): Store {
  const { store } = api.database;
  const sessions = new Proxy(store.sessions, {
    get(target, key, receiver) {
      if (key !== 'purgeInactiveBatch') return Reflect.get(target, key, receiver) as unknown;
      return async (workspaceId: string, id: string, limit: number) => {
        const n = await target.purgeInactiveBatch(workspaceId, id, limit);
        batches.push(n);
        afterBatch();
        return n;
      };
    },
  });
  return new Proxy(store, { get: (target, key, receiver) => (key === 'sessions' ? sessions : (Reflect.get(target, key, receiver) as unknown)) });
}

const job = (ws: string): JobRecord => ({ id: uniqueId('job'), kind: PURGE_SESSION, workspaceId: ws, queueKey: `purge:${ws}`, payload: {}, attempts: 1, maxAttempts: 3, createdAt: new Date() });

async function count(sql: string, params: unknown[]): Promise<number> {
  return Number((await api.database.driver.get<{ n: number | string }>(sql, params))?.n);
}

/** A workspace with session s1 of `messages` messages and three conclusions, and a session s2 of one message. */
async function sessionWithMessages(messages: number): Promise<string> {
  const ws = uniqueId();
  for (let sent = 0; sent < messages; sent += 100) {
    const batch = Array.from({ length: Math.min(100, messages - sent) }, (_, i) => ({ peer_id: 'alice', content: `kettle note ${sent + i}` }));
    expect((await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: batch })).status).toBe(201);
  }
  expect((await api.post(`/v3/workspaces/${ws}/sessions/s2/messages`, { messages: [{ peer_id: 'alice', content: 'kettle elsewhere' }] })).status).toBe(201);
  const conclusions = ['one', 'two', 'three'].map((content) => ({ content, observer_id: 'alice', observed_id: 'alice', session_id: 's1' }));
  const created = await api.post(`/v3/workspaces/${ws}/conclusions`, { conclusions });
  expect(created.status, created.text).toBe(201);
  return ws;
}

describe('session purge', () => {
  it('deletes a big session in batches of 500 rows, messages first, then conclusions, then the rest', async () => {
    const ws = await sessionWithMessages(1_200);
    const batches: number[] = [];
    // an active session is not purged
    expect(await purge.run({ sessionId: 's1' }, job(ws), recordingStore(batches), new AbortController().signal)).toEqual({ kind: 'skipped', reason: 'session already gone or active' });
    expect(batches).toEqual([0]);
    expect(await count('SELECT count(*) AS n FROM messages WHERE workspace_id = ?', [ws])).toBe(1_201);

    expect((await api.delete(`/v3/workspaces/${ws}/sessions/s1`)).status).toBe(202);
    batches.length = 0;
    expect(await purge.run({ sessionId: 's1' }, job(ws), recordingStore(batches), new AbortController().signal)).toEqual({ kind: 'done' });
    expect(batches).toEqual([500, 500, 203, 0]);
    expect(await count('SELECT count(*) AS n FROM messages WHERE workspace_id = ? AND session_id = ?', [ws, 's1'])).toBe(0);
    expect(await count('SELECT count(*) AS n FROM conclusions WHERE workspace_id = ?', [ws])).toBe(0);
    expect(await count('SELECT count(*) AS n FROM sessions WHERE workspace_id = ?', [ws])).toBe(1);
    // s2 untouched; the full-text index lost s1's messages with them
    const found = await api.post(`/v3/workspaces/${ws}/search`, { query: 'kettle', limit: 100 });
    expect(found.status, found.text).toBe(200);
    expect((found.body as { content: string }[]).map((m) => m.content)).toEqual(['kettle elsewhere']);
  });

  it('stops between batches when told to, and the next attempt finishes the purge', async () => {
    const ws = await sessionWithMessages(1_100);
    expect((await api.delete(`/v3/workspaces/${ws}/sessions/s1`)).status).toBe(202);
    const abort = new AbortController();
    const batches: number[] = [];
    const outcome = await purge.run({ sessionId: 's1' }, job(ws), recordingStore(batches, () => abort.abort(new Error('timed out after 60000 ms'))), abort.signal);
    expect(outcome).toEqual({ kind: 'failed', error: 'purge stopped: Error: timed out after 60000 ms', retryable: true });
    expect(batches).toEqual([500]);
    expect(await count('SELECT count(*) AS n FROM messages WHERE workspace_id = ? AND session_id = ?', [ws, 's1'])).toBe(600);
    // the session stays deleted meanwhile
    expect((await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'late' }] })).status).toBe(404);

    batches.length = 0;
    expect(await purge.run({ sessionId: 's1' }, job(ws), recordingStore(batches), new AbortController().signal)).toEqual({ kind: 'done' });
    expect(batches).toEqual([500, 103, 0]);
    expect(await count('SELECT count(*) AS n FROM sessions WHERE workspace_id = ? AND id = ?', [ws, 's1'])).toBe(0);
  });

  it('runs first, batch by batch, for the deleted sessions of a workspace being deleted', async () => {
    const ws = await sessionWithMessages(1_100);
    // a client deleting every session, then the workspace, before any purge job ran
    expect((await api.delete(`/v3/workspaces/${ws}/sessions/s1`)).status).toBe(202);
    expect((await api.delete(`/v3/workspaces/${ws}/sessions/s2`)).status).toBe(202);
    const sessions = api.database.store.sessions;
    const batches: [string, number][] = [];
    const original = sessions.purgeInactiveBatch;
    sessions.purgeInactiveBatch = async function (this: typeof sessions, workspaceId, id, limit) {
      const n = await original.call(this, workspaceId, id, limit);
      if (workspaceId === ws) batches.push([id, n]);
      return n;
    };
    try {
      const deleted = await api.delete(`/v3/workspaces/${ws}`);
      expect(deleted.status, deleted.text).toBe(202);
    } finally {
      sessions.purgeInactiveBatch = original;
    }
    expect(batches).toEqual([
      ['s1', 500],
      ['s1', 500],
      ['s1', 103],
      ['s1', 0],
      ['s2', 1],
      ['s2', 0],
    ]);
    expect(await count('SELECT count(*) AS n FROM messages WHERE workspace_id = ?', [ws])).toBe(0);
    expect(await count('SELECT count(*) AS n FROM workspaces WHERE id = ?', [ws])).toBe(0);
    // the purge jobs, when they run, find nothing left
    expect(await purge.run({ sessionId: 's1' }, job(ws), api.database.store, new AbortController().signal)).toEqual({ kind: 'skipped', reason: 'session already gone or active' });
  });
});
