import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/runtime/database.js';
import type { MessageRecord, NewRepresentationItem } from '../../src/storage/store.js';
import { TEST_DATABASE_URL, uniqueId } from '../support/test-app.js';

let database: Database;
beforeAll(async () => {
  database = await openDatabase(TEST_DATABASE_URL);
});
afterAll(() => database.driver.close());

/** A session with `count` messages from alice and bob in turn, 10 tokens each. */
async function session(count: number): Promise<{ ws: string; messages: MessageRecord[] }> {
  const store = database.store;
  const ws = uniqueId();
  const now = new Date('2026-01-01T00:00:00Z');
  await store.workspaces.createIfAbsent({ id: ws, metadata: {}, configuration: {} }, now);
  await store.sessions.createIfAbsent(ws, { id: 's', metadata: {}, configuration: {} }, now);
  await store.peers.ensure(ws, ['alice', 'bob'], now);
  const messages = Array.from({ length: count }, (_, i) => ({
    id: uniqueId('m'),
    workspaceId: ws,
    sessionId: 's',
    peerId: i % 2 === 0 ? 'alice' : 'bob',
    content: `message ${i}`,
    metadata: {},
    tokenCount: 10,
    createdAt: new Date(now.getTime() + i * 1000),
  }));
  await store.messages.insert(messages);
  return { ws, messages };
}

const item = (ws: string, m: MessageRecord, observers = [m.peerId]): NewRepresentationItem => ({
  workspaceId: ws,
  sessionId: 's',
  observedId: m.peerId,
  messageId: m.id,
  tokens: m.tokenCount,
  observers,
  customInstructions: null,
});

describe('representation items', () => {
  it('are queued once per message and observed peer, read in message order, and closed by markItems', async () => {
    const { ws, messages } = await session(6);
    const store = database.store.reasoning;
    const alice = messages.filter((m) => m.peerId === 'alice');
    const t0 = new Date('2026-01-02T00:00:00Z');
    expect(await store.addRepresentationItems(alice.map((m) => item(ws, m, ['alice', 'bob'])), t0)).toBe(3);
    expect(await store.addRepresentationItems([item(ws, alice[0]), item(ws, messages[1])], new Date(t0.getTime() + 5000))).toBe(1);

    expect(await store.openUnitTotals(ws, 's', 'alice')).toEqual({ items: 3, tokens: 30, oldest: t0 });
    const open = await store.openItems(ws, 's', 'alice', 10);
    expect(open.map((i) => i.messageId)).toEqual(alice.map((m) => m.id));
    expect(open[0]).toMatchObject({ peerId: 'alice', content: 'message 0', observers: ['alice', 'bob'], tokens: 10, customInstructions: null });
    expect(await store.openItemCount(ws)).toBe(4);

    const before = await store.messageBefore(ws, 's', open[1].messagePk);
    expect(before?.id).toBe(messages[1].id);
    expect(await store.messageBefore(ws, 's', open[0].messagePk)).toBeUndefined();

    await store.markItems([open[0], open[1]], t0, null);
    expect(await store.openUnitTotals(ws, 's', 'alice')).toMatchObject({ items: 1, tokens: 10 });
    expect(await store.openItemCount(ws, 's')).toBe(2);
    // a deleted message takes its items with it
    await database.driver.run('DELETE FROM messages WHERE id = ?', [messages[1].id]);
    expect(await store.openItemCount(ws)).toBe(1);
  });

  it('markItems closes an item by its pk and its message: a new item that took a deleted one\'s pk stays open', async () => {
    const { ws, messages } = await session(2);
    const store = database.store.reasoning;
    const t0 = new Date('2026-01-02T00:00:00Z');
    await store.addRepresentationItems([item(ws, messages[1])], t0);
    const [old] = await store.openItems(ws, 's', 'bob', 10);
    // the message goes (its session purged, say) while a deriver holds its batch ...
    await database.driver.run('DELETE FROM messages WHERE id = ?', [messages[1].id]);
    // ... and a new message's item is queued: on SQLite it takes the freed pk at the top of the range
    const next = { ...messages[1], id: uniqueId('m'), content: 'a new message' };
    await database.store.messages.insert([next]);
    await store.addRepresentationItems([item(ws, next)], t0);
    const [fresh] = await store.openItems(ws, 's', 'bob', 10);
    if (database.driver.dialect === 'sqlite') expect(fresh.pk).toBe(old.pk);
    expect(await store.markItems([old], t0, null)).toBe(0);
    expect((await store.openItems(ws, 's', 'bob', 10)).map((i) => i.messageId)).toEqual([next.id]);
    expect(await store.markItems([fresh], t0, null)).toBe(1);
    expect(await store.openItemCount(ws)).toBe(0);
  });

  it('messagesUpTo and messagesAfter read a session window and a scan', async () => {
    const { ws, messages } = await session(5);
    const store = database.store.reasoning;
    expect((await store.messagesUpTo(ws, 's', messages[3].id, 2)).map((m) => m.id)).toEqual([messages[2].id, messages[3].id]);
    expect(await store.sessionMessageCount(ws, 's')).toBe(5);
    const scanned = await store.messagesAfter({ workspaceId: ws }, 0, 3);
    expect(scanned.map((m) => m.id)).toEqual(messages.slice(0, 3).map((m) => m.id));
    expect((await store.messagesAfter({ workspaceId: ws, sessionId: 's' }, scanned[2].pk, 10)).map((m) => m.id)).toEqual(messages.slice(3).map((m) => m.id));
  });
});

describe('session summaries', () => {
  it('keep the newest of each kind; an older one never replaces a newer', async () => {
    const { ws, messages } = await session(3);
    const store = database.store.reasoning;
    const at = new Date('2026-01-03T00:00:00Z');
    await store.saveSummary(ws, 's', { type: 'short', content: 'two', messageId: messages[1].id, messageSeq: 2, tokenCount: 1, createdAt: at });
    await store.saveSummary(ws, 's', { type: 'short', content: 'three', messageId: messages[2].id, messageSeq: 3, tokenCount: 1, createdAt: at });
    await store.saveSummary(ws, 's', { type: 'short', content: 'late retry', messageId: messages[1].id, messageSeq: 2, tokenCount: 1, createdAt: at });
    await store.saveSummary(ws, 's', { type: 'long', content: 'long', messageId: messages[0].id, messageSeq: 1, tokenCount: 1, createdAt: at });
    const stored = await store.summaries(ws, 's');
    expect(stored.sort((a, b) => a.type.localeCompare(b.type))).toEqual([
      { type: 'long', content: 'long', messageId: messages[0].id, messageSeq: 1, tokenCount: 1, createdAt: at },
      { type: 'short', content: 'three', messageId: messages[2].id, messageSeq: 3, tokenCount: 1, createdAt: at },
    ]);
  });
});

describe('jobs.schedule', () => {
  it('queues a job when none is pending and brings a pending one forward, never back', async () => {
    const key = uniqueId('unit');
    const job = (id: string) => ({ id, kind: 'test.unit', workspaceId: null, queueKey: key, payload: {}, maxAttempts: 1 });
    const t0 = new Date('2026-01-01T00:00:00Z');
    const later = new Date(t0.getTime() + 3_600_000);
    await database.store.jobs.schedule(job(uniqueId('j')), later, t0);
    await database.store.jobs.schedule(job(uniqueId('j')), new Date(later.getTime() + 1000), t0);
    // not due at t0 + 1 s; due once brought forward
    expect(await database.store.jobs.claim(10, new Date(t0.getTime() + 1000), later).then((jobs) => jobs.filter((j) => j.queueKey === key))).toEqual([]);
    await database.store.jobs.schedule(job(uniqueId('j')), t0, t0);
    const claimed = (await database.store.jobs.claim(10, new Date(t0.getTime() + 1000), later)).filter((j) => j.queueKey === key);
    expect(claimed).toHaveLength(1);
    // one running: a new pending job is queued behind it
    await database.store.jobs.schedule(job(uniqueId('j')), t0, t0);
    const counts = await database.driver.all<{ status: string }>('SELECT status FROM jobs WHERE queue_key = ? ORDER BY pk', [key]);
    expect(counts.map((row) => row.status)).toEqual(['running', 'pending']);
  });
});
