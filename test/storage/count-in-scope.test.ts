import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, uniqueId, type TestApi } from '../support/test-app.js';
import { DIALECTS } from '../../src/storage/sql/dialects.js';
import { SqlMessageStore } from '../../src/storage/sql/message-store.js';
import { recordingExecutor } from '../support/recording-executor.js';

/*
 * countInScope, which search weights its terms by: workspace and session counts come from the
 * trigger-kept message counts (the sessions' and the workspace's), and must equal a count of the
 * messages themselves.
 */

let api: TestApi;
beforeAll(async () => {
  api = await buildTestApp();
});
afterAll(() => api.close());

async function post(ws: string, session: string, peer: string, count: number) {
  const messages = Array.from({ length: count }, (_, i) => ({ peer_id: peer, content: `message ${i} in ${session}` }));
  const response = await api.post(`/v3/workspaces/${ws}/sessions/${session}/messages`, { messages });
  expect(response.status).toBe(201);
}

const count = (scope: { workspaceId: string; sessionId?: string; peerId?: string }, cap: number) => api.database.store.messages.countInScope(scope, cap);

describe('countInScope', () => {
  it('counts a workspace of few sessions, a session and a sender, up to the cap', async () => {
    const ws = uniqueId();
    await post(ws, 'a', 'alice', 7);
    await post(ws, 'b', 'bob', 5);
    await post(ws, 'b', 'alice', 2);
    expect(await count({ workspaceId: ws }, 10_000)).toBe(14);
    expect(await count({ workspaceId: ws }, 10)).toBe(10);
    expect(await count({ workspaceId: ws, sessionId: 'b' }, 10_000)).toBe(7);
    expect(await count({ workspaceId: ws, sessionId: 'b' }, 3)).toBe(3);
    expect(await count({ workspaceId: ws, peerId: 'alice' }, 10_000)).toBe(9);
    expect(await count({ workspaceId: ws, sessionId: 'b', peerId: 'alice' }, 10_000)).toBe(2);
    expect(await count({ workspaceId: ws, sessionId: 'none' }, 10_000)).toBe(0);
    expect(await count({ workspaceId: uniqueId() }, 10_000)).toBe(0);
  });

  it('counts a workspace of many sessions, with empty sessions among them, and while a session is deleted', async () => {
    const ws = uniqueId();
    for (let i = 0; i < 70; i++) await post(ws, `s${i}`, 'p', 1 + (i % 3));
    for (let i = 0; i < 5; i++) expect((await api.post(`/v3/workspaces/${ws}/sessions`, { id: `empty${i}` })).status).toBe(201);
    const expected = Array.from({ length: 70 }, (_, i) => 1 + (i % 3)).reduce((a, b) => a + b, 0);
    expect(await count({ workspaceId: ws }, 10_000)).toBe(expected);
    expect(await count({ workspaceId: ws }, 50)).toBe(50);
    // one statement, on the workspace's kept counts: not its sessions' nor its messages
    const { executor, issued } = recordingExecutor(api.database.driver);
    expect(await new SqlMessageStore(executor, DIALECTS[api.database.driver.dialect]).countInScope({ workspaceId: ws }, 10_000)).toBe(expected);
    expect(issued.map((statement) => statement.sql)).toEqual([expect.stringContaining('FROM message_counts')]);
    expect((await api.delete(`/v3/workspaces/${ws}/sessions/s0`)).status).toBe(202);
    // whatever the purge has done so far, the count is the messages' own count
    const [stored] = await api.database.driver.all<{ n: number | string }>('SELECT COUNT(*) AS n FROM messages WHERE workspace_id = ?', [ws]);
    expect(await count({ workspaceId: ws }, 10_000)).toBe(Number(stored.n));
  });
});
