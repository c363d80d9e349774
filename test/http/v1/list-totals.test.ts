import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { followUpHandlers } from '../../../src/jobs/catalog.js';
import { buildTestApp, uniqueId, type TestApi } from '../../support/test-app.js';
import { makeMessages, makeMetamessage, makeScope, makeSession, makeUser, type V1Scope } from './fixtures.js';
import { PURGE_SESSION } from '../../../src/domain/job-kinds.js';

/*
 * The totals of v1 list pages without a filter come from counts kept by triggers (a session's
 * messages, a peer's memberships and metamessages, a workspace's peers), not from counting the
 * rows listed. Each
 * total here is checked against the items read page by page, after writes through v1 and v3 that
 * change the counts, and against the same list with a filter that every item matches (which
 * counts the rows).
 */

let api: TestApi;
beforeAll(async () => {
  api = await buildTestApp();
});
afterAll(() => api.close());

interface V1Page {
  items: { id: string }[];
  total: number;
  pages: number;
}

/** Every item of a list, read two at a time; each page's total must be the same. */
async function readAll(url: string, body: Record<string, unknown> = {}): Promise<{ ids: string[]; totals: number[] }> {
  const ids: string[] = [];
  const totals: number[] = [];
  for (let page = 1; ; page++) {
    const response = await api.post(`${url}?size=2&page=${page}`, body);
    expect(response.status, response.text).toBe(200);
    const read = response.body as V1Page;
    totals.push(read.total);
    ids.push(...read.items.map((item) => item.id));
    if (read.items.length < 2) break;
  }
  return { ids, totals };
}

/** The total of every page is the number of items read, and the same as a counted (filtered) list's. */
async function expectTotal(url: string, expected: number | 'as counted', everyItem: Record<string, unknown>): Promise<void> {
  if (expected === 'as counted') expected = (await readAll(url, { filter: everyItem })).ids.length;
  const plain = await readAll(url);
  expect(plain.ids).toHaveLength(expected);
  expect(new Set(plain.ids).size).toBe(expected);
  expect(plain.totals.every((total) => total === expected), `${url}: ${plain.totals.join(', ')}`).toBe(true);
  const filtered = await readAll(url, { filter: everyItem });
  expect(filtered.ids).toEqual(plain.ids);
  expect(filtered.totals.every((total) => total === expected)).toBe(true);
}

describe('v1 list totals without a filter', () => {
  it("a session's messages, written through v1 and v3", async () => {
    const scope = await makeScope(api);
    const session = await makeSession(api, scope);
    const url = `${scope.base}/sessions/${session.id}/messages/list`;
    await expectTotal(url, 0, { k: 1 });
    await makeMessages(
      api,
      scope,
      session.id,
      Array.from({ length: 5 }, (_, i) => ({ content: `m${i}`, is_user: i % 2 === 0, metadata: { k: 1 } })),
    );
    await expectTotal(url, 5, { k: 1 });
    // another session's messages are not counted
    const other = await makeSession(api, scope);
    await makeMessages(api, scope, other.id, [{ content: 'elsewhere', is_user: true, metadata: { k: 1 } }]);
    // a message written through v3 into the same session
    const created = await api.post(`/v3/workspaces/${scope.app.name}/sessions/${session.id}/messages`, {
      messages: [{ peer_id: scope.user.name, content: 'through v3', metadata: { k: 1 } }],
    });
    expect(created.status, created.text).toBe(201);
    await expectTotal(url, 6, { k: 1 });
  });

  it("a user's sessions: joined, left, deactivated and deleted, with is_active counting its own", async () => {
    const scope = await makeScope(api);
    const ws = scope.app.name;
    const url = `${scope.base}/sessions/list`;
    const made = [];
    for (let i = 0; i < 3; i++) made.push(await makeSession(api, scope, { k: 1 }));
    // a session of another user that this one joins through v3, and one it never joins
    const other: V1Scope = { app: scope.app, user: await makeUser(api, scope.app.id), base: '' };
    other.base = `/v1/apps/${scope.app.id}/users/${other.user.id}`;
    const joined = await makeSession(api, other, { k: 1 });
    await makeSession(api, other, { k: 1 });
    expect((await api.post(`/v3/workspaces/${ws}/sessions/${joined.id}/peers`, { [scope.user.name]: {} })).status).toBe(200);
    await expectTotal(url, 4, { k: 1 });

    // a v1 delete deactivates: listed without is_active, not with it
    expect((await api.delete(`${scope.base}/sessions/${made[0].id}`)).status).toBe(200);
    await expectTotal(url, 4, { k: 1 });
    const active = await readAll(url, { is_active: true });
    expect(active.ids).toHaveLength(3);
    expect(active.totals.every((total) => total === 3)).toBe(true);

    // leaving through v3 and replacing the members through v3
    expect((await api.delete(`/v3/workspaces/${ws}/sessions/${joined.id}/peers`, [scope.user.name])).status).toBe(200);
    await expectTotal(url, 'as counted', { k: 1 });
    expect((await api.put(`/v3/workspaces/${ws}/sessions/${made[1].id}/peers`, { [other.user.name]: {} })).status).toBe(200);
    await expectTotal(url, 'as counted', { k: 1 });
    // deleted through v3 (purged later)
    expect((await api.delete(`/v3/workspaces/${ws}/sessions/${made[2].id}`)).status).toBe(202);
    await expectTotal(url, 'as counted', { k: 1 });
  });

  it("an app's users: the assistant peer is not one, peers made through v3 are", async () => {
    const scope = await makeScope(api);
    const url = `/v1/apps/${scope.app.id}/users/list`;
    await api.put(scope.base, { metadata: { k: 1 } });
    await expectTotal(url, 1, { k: 1 });
    // an assistant message makes the assistant peer, which v1 does not list
    const session = await makeSession(api, scope);
    await makeMessages(api, scope, session.id, [{ content: 'hello', is_user: false }]);
    await expectTotal(url, 1, { k: 1 });
    for (let i = 0; i < 2; i++) {
      const user = await makeUser(api, scope.app.id, uniqueId('user'));
      await api.put(`/v1/apps/${scope.app.id}/users/${user.id}`, { metadata: { k: 1 } });
    }
    const peer = await api.post(`/v3/workspaces/${scope.app.name}/peers`, { id: uniqueId('peer'), metadata: { k: 1 } });
    expect(peer.status, peer.text).toBe(201);
    await expectTotal(url, 4, { k: 1 });
  });

  it("a user's metamessages: in sessions and not, another user's apart, and a purged session's gone", async () => {
    const scope = await makeScope(api);
    const other = { ...scope, user: await makeUser(api, scope.app.id) };
    other.base = `/v1/apps/${scope.app.id}/users/${other.user.id}`;
    const url = `${scope.base}/metamessages/list`;
    await expectTotal(url, 0, { k: 1 });
    const session = await makeSession(api, scope);
    const doomed = await makeSession(api, scope);
    const [message] = await makeMessages(api, scope, session.id, [{ content: 'hello', is_user: true }]);
    await makeMetamessage(api, scope, { metadata: { k: 1 } });
    await makeMetamessage(api, scope, { session_id: session.id, metadata: { k: 1 } });
    await makeMetamessage(api, scope, { session_id: session.id, message_id: message.id, metamessage_type: 'other', metadata: { k: 1 } });
    for (let i = 0; i < 2; i++) await makeMetamessage(api, scope, { session_id: doomed.id, metadata: { k: 1 } });
    await makeMetamessage(api, other, { metadata: { k: 1 } });
    await expectTotal(url, 5, { k: 1 });
    // a selection is counted: by type, by session
    const notes = await readAll(url, { metamessage_type: 'note' });
    expect(notes.ids).toHaveLength(4);
    expect(notes.totals.every((total) => total === 4)).toBe(true);

    // the doomed session deleted through v3 and purged: its metamessages go with its row
    const ws = scope.app.name;
    expect((await api.delete(`/v3/workspaces/${ws}/sessions/${doomed.id}`)).status).toBe(202);
    const purge = followUpHandlers({ secret: 's', timeoutMs: 1_000, allowPrivate: true })[PURGE_SESSION];
    const job = { id: uniqueId('job'), kind: PURGE_SESSION, workspaceId: ws, queueKey: `purge:${ws}`, payload: {}, attempts: 1, maxAttempts: 3, createdAt: new Date() };
    expect(await purge.run({ sessionId: doomed.id }, job, api.database.store, new AbortController().signal)).toEqual({ kind: 'done' });
    await expectTotal(url, 3, { k: 1 });
    await expectTotal(`${other.base}/metamessages/list`, 1, { k: 1 });
  });
});
