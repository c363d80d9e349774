import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, DIALECT, uniqueId, type TestApi } from '../support/test-app.js';

/*
 * Unfiltered pages of a peer's sessions and of a session's messages are served from a cache
 * while a version kept by the database's triggers is unchanged. These check that every kind of
 * change shows on the next read, including changes written past this process (another process
 * on the same database), which only the database's version can tell.
 */

let api: TestApi;
/**
 * On SQLite: a database file, so that the store's change token (the wal-index header, which
 * lets a cached page skip its version query while nothing commits) is in play, and a second
 * connection to it that writes as another process would.
 */
let other: Database.Database | undefined;
const dir = mkdtempSync(join(tmpdir(), 'engram-page-cache-'));
beforeAll(async () => {
  if (DIALECT === 'sqlite') {
    api = await buildTestApp({ DATABASE_URL: join(dir, 'engram.db') });
    expect(api.database.store.changeToken()).toBeDefined();
    other = new Database(join(dir, 'engram.db'));
    other.pragma('busy_timeout = 5000');
  } else {
    api = await buildTestApp();
  }
});
afterAll(async () => {
  other?.close();
  await api.close();
  rmSync(dir, { recursive: true, force: true });
});

const sessionsOf = async (ws: string, peer: string, version: 'v2' | 'v3' = 'v3') => {
  const response = await api.post(`/${version}/workspaces/${ws}/peers/${peer}/sessions?size=50`);
  expect(response.status).toBe(200);
  return response.body;
};
const messagesOf = async (ws: string, session: string, version: 'v2' | 'v3' = 'v3') => {
  const response = await api.post(`/${version}/workspaces/${ws}/sessions/${session}/messages/list?size=50`);
  expect(response.status).toBe(200);
  return response.body;
};
/** Runs SQL on the test database directly, as another process sharing it would. */
const outside = async (sql: string, params: unknown[]) => (other === undefined ? api.database.driver.run(sql, params) : other.prepare(sql).run(...params).changes);

describe('cached pages of a peer\'s sessions', () => {
  it('show sessions joined, changed, deactivated and deleted, through the API and past it', async () => {
    const ws = uniqueId();
    await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's1', peers: { alice: {} } });
    for (const version of ['v2', 'v3'] as const) expect((await sessionsOf(ws, 'alice', version)).items.map((s: any) => s.id)).toEqual(['s1']);

    await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's2', peers: { alice: {} } });
    for (const version of ['v2', 'v3'] as const) {
      const page = await sessionsOf(ws, 'alice', version);
      expect(page.items.map((s: any) => s.id)).toEqual(['s1', 's2']);
      expect(page.total).toBe(2);
    }

    await api.put(`/v3/workspaces/${ws}/sessions/s1`, { metadata: { topic: 'x' } });
    expect((await sessionsOf(ws, 'alice')).items[0].metadata).toEqual({ topic: 'x' });

    await api.delete(`/v3/workspaces/${ws}/sessions/s1`);
    expect((await sessionsOf(ws, 'alice')).items.find((s: any) => s.id === 's1').is_active).toBe(false);

    // past the API: a session's metadata, a membership added and one removed
    await outside(`UPDATE sessions SET metadata = '{"by":"other"}' WHERE workspace_id = ? AND id = ?`, [ws, 's2']);
    expect((await sessionsOf(ws, 'alice')).items.find((s: any) => s.id === 's2').metadata).toEqual({ by: 'other' });
    await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's3', peers: { bob: {} } });
    expect((await sessionsOf(ws, 'alice')).total).toBe(2);
    await outside('INSERT INTO session_peers (workspace_id, session_id, peer_id, joined_at) SELECT workspace_id, session_id, ?, joined_at FROM session_peers WHERE workspace_id = ? AND session_id = ? AND peer_id = ?', ['alice', ws, 's3', 'bob']);
    expect((await sessionsOf(ws, 'alice')).items.map((s: any) => s.id)).toEqual(['s1', 's2', 's3']);
    await outside('DELETE FROM session_peers WHERE workspace_id = ? AND session_id = ? AND peer_id = ?', [ws, 's2', 'alice']);
    expect((await sessionsOf(ws, 'alice')).items.map((s: any) => s.id)).toEqual(['s1', 's3']);
  });

  it('are kept per peer: a change to one peer\'s sessions leaves another peer\'s page valid', async () => {
    const ws = uniqueId();
    /** The version a peer's cached page is checked against; equal means the page is served from cache. */
    const versionOf = async (peer: string) =>
      (await api.database.driver.get<{ v: number }>('SELECT sessions_version AS v FROM peers WHERE workspace_id = ? AND id = ?', [ws, peer]))!.v;
    const ids = async (peer: string) => (await sessionsOf(ws, peer)).items.map((s: any) => s.id);
    await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's1', peers: { alice: {}, bob: {} } });
    await api.post(`/v3/workspaces/${ws}/sessions`, { id: 'b-only', peers: { bob: {} } });
    expect(await ids('alice')).toEqual(['s1']);
    expect(await ids('bob')).toEqual(['s1', 'b-only']);
    let alice = await versionOf('alice');
    let bob = await versionOf('bob');

    // alice joins a session: her page is rebuilt, bob's stays valid
    expect((await api.post(`/v3/workspaces/${ws}/sessions/s2/peers`, { alice: {} })).status).toBe(200);
    expect(await versionOf('alice')).not.toBe(alice);
    expect(await versionOf('bob')).toBe(bob);
    expect(await ids('alice')).toEqual(['s1', 's2']);
    expect(await ids('bob')).toEqual(['s1', 'b-only']);
    alice = await versionOf('alice');

    // past the API: her membership removed
    await outside('DELETE FROM session_peers WHERE workspace_id = ? AND session_id = ? AND peer_id = ?', [ws, 's2', 'alice']);
    expect(await versionOf('alice')).not.toBe(alice);
    expect(await versionOf('bob')).toBe(bob);
    expect(await ids('alice')).toEqual(['s1']);
    alice = await versionOf('alice');

    // a session they share changes for both
    await outside(`UPDATE sessions SET metadata = '{"shared":true}' WHERE workspace_id = ? AND id = ?`, [ws, 's1']);
    expect(await versionOf('alice')).not.toBe(alice);
    expect(await versionOf('bob')).not.toBe(bob);
    for (const peer of ['alice', 'bob']) expect((await sessionsOf(ws, peer)).items.find((s: any) => s.id === 's1').metadata).toEqual({ shared: true });
    alice = await versionOf('alice');
    bob = await versionOf('bob');

    // bob's own session deleted past the API (its memberships go with it): only bob's page changes
    await outside('DELETE FROM sessions WHERE workspace_id = ? AND id = ?', [ws, 'b-only']);
    expect(await versionOf('bob')).not.toBe(bob);
    expect(await versionOf('alice')).toBe(alice);
    expect(await ids('bob')).toEqual(['s1']);
    expect(await ids('alice')).toEqual(['s1']);
  });

  it('do not carry over to a new workspace of the same id', async () => {
    const ws = uniqueId();
    await api.post(`/v3/workspaces/${ws}/sessions`, { id: 'old', peers: { alice: {} } });
    expect((await sessionsOf(ws, 'alice')).items.map((s: any) => s.id)).toEqual(['old']);
    await outside('DELETE FROM workspaces WHERE id = ?', [ws]);
    await api.post(`/v3/workspaces/${ws}/sessions`, { id: 'new', peers: { alice: {} } });
    expect((await sessionsOf(ws, 'alice')).items.map((s: any) => s.id)).toEqual(['new']);
  });
});

describe('cached pages of a session\'s messages', () => {
  const create = (ws: string, session: string, contents: string[]) =>
    api.post(`/v3/workspaces/${ws}/sessions/${session}/messages`, { messages: contents.map((content) => ({ peer_id: 'alice', content })) });

  it('show messages added and changed, through the API and past it', async () => {
    const ws = uniqueId();
    await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's', peers: { alice: {} } });
    expect((await create(ws, 's', ['one'])).status).toBe(201);
    for (const version of ['v2', 'v3'] as const) expect((await messagesOf(ws, 's', version)).items.map((m: any) => m.content)).toEqual(['one']);

    await create(ws, 's', ['two']);
    for (const version of ['v2', 'v3'] as const) {
      const page = await messagesOf(ws, 's', version);
      expect(page.items.map((m: any) => m.content)).toEqual(['one', 'two']);
      expect(page.total).toBe(2);
    }

    const first = (await messagesOf(ws, 's')).items[0];
    await api.put(`/v3/workspaces/${ws}/sessions/s/messages/${first.id}`, { metadata: { seen: true } });
    expect((await messagesOf(ws, 's')).items[0].metadata).toEqual({ seen: true });

    // past the API: a change, a deletion and an insertion that leaves the count as it was
    await outside(`UPDATE messages SET metadata = '{"by":"other"}' WHERE id = ?`, [first.id]);
    expect((await messagesOf(ws, 's')).items[0].metadata).toEqual({ by: 'other' });
    await outside('DELETE FROM messages WHERE id = ?', [first.id]);
    await outside(
      'INSERT INTO messages (id, workspace_id, session_id, peer_id, content, metadata, token_count, created_at) SELECT ?, workspace_id, session_id, peer_id, ?, metadata, token_count, created_at FROM messages WHERE workspace_id = ? AND session_id = ?',
      [uniqueId('m'), 'three', ws, 's'],
    );
    const page = await messagesOf(ws, 's');
    expect(page.items.map((m: any) => m.content)).toEqual(['two', 'three']);
    expect(page.total).toBe(2);
  });

  it('do not carry over to a new session of the same id', async () => {
    const ws = uniqueId();
    await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's', peers: { alice: {} } });
    await create(ws, 's', ['before']);
    expect((await messagesOf(ws, 's')).items.map((m: any) => m.content)).toEqual(['before']);
    await outside('DELETE FROM sessions WHERE workspace_id = ? AND id = ?', [ws, 's']);
    await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's', peers: { alice: {} } });
    await create(ws, 's', ['after']);
    expect((await messagesOf(ws, 's')).items.map((m: any) => m.content)).toEqual(['after']);
  });

  it('are not used for filtered lists', async () => {
    const ws = uniqueId();
    await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's', peers: { alice: {} } });
    await api.post(`/v3/workspaces/${ws}/sessions/s/messages`, {
      messages: [
        { peer_id: 'alice', content: 'one', metadata: { n: 1 } },
        { peer_id: 'alice', content: 'two', metadata: { n: 2 } },
      ],
    });
    expect((await messagesOf(ws, 's')).total).toBe(2);
    const filtered = await api.post(`/v3/workspaces/${ws}/sessions/s/messages/list`, { filters: { metadata: { n: 2 } } });
    expect(filtered.status).toBe(200);
    expect(filtered.body.items.map((m: any) => m.content)).toEqual(['two']);
    expect((await messagesOf(ws, 's')).total).toBe(2);
  });
});

describe('deep pages read page after page', () => {
  const page = async (ws: string, session: string, n: number, reverse: boolean) => {
    const response = await api.post(`/v3/workspaces/${ws}/sessions/${session}/messages/list?size=100&page=${n}&reverse=${reverse}`);
    expect(response.status).toBe(200);
    return response.body.items.map((m: any) => m.content) as string[];
  };

  it('are the rows at their place, as other processes write between the pages', async () => {
    const ws = uniqueId();
    const contents = Array.from({ length: 900 }, (_, i) => `m${String(i).padStart(4, '0')}`);
    for (let i = 0; i < contents.length; i += 100) {
      const response = await api.post(`/v3/workspaces/${ws}/sessions/s/messages`, { messages: contents.slice(i, i + 100).map((content) => ({ peer_id: 'alice', content })) });
      expect(response.status).toBe(201);
    }
    for (const reverse of [false, true]) {
      const expected = reverse ? [...contents].reverse() : contents;
      const seen: string[] = [];
      for (let n = 1; n <= 9; n++) seen.push(...(await page(ws, 's', n, reverse)));
      expect(seen).toEqual(expected);
    }
    // pages 6 and 7 read (the points of this version kept), then a message deleted past the API:
    // page 8 is the rows at its place now, not after page 7's last row
    await page(ws, 's', 6, false);
    await page(ws, 's', 7, false);
    await outside('DELETE FROM messages WHERE workspace_id = ? AND session_id = ? AND content = ?', [ws, 's', 'm0010']);
    const after = contents.filter((content) => content !== 'm0010');
    expect(await page(ws, 's', 8, false)).toEqual(after.slice(700, 800));
    expect(await page(ws, 's', 9, false)).toEqual(after.slice(800, 900));
    // a message added past the API comes first in reverse order and moves every deep page by one
    await page(ws, 's', 7, true);
    await outside(
      `INSERT INTO messages (id, workspace_id, session_id, peer_id, content, metadata, token_count, created_at) SELECT ?, workspace_id, session_id, peer_id, 'newest', metadata, token_count, created_at FROM messages WHERE workspace_id = ? AND session_id = ? AND content = ?`,
      [uniqueId('msg'), ws, 's', 'm0899'],
    );
    const newestFirst = ['newest', ...[...after].reverse()];
    expect(await page(ws, 's', 8, true)).toEqual(newestFirst.slice(700, 800));
  });
});
