import { describe, expect, it } from 'vitest';
import { createDomainContext } from '../../../src/domain/context.js';
import { DREAM_AUTO, EMBED_MESSAGES, newJob, REPRESENT, SUMMARIZE } from '../../../src/domain/job-kinds.js';
import { dreamQueueKey } from '../../../src/domain/scheduling/dream-schedule.js';
import { createMessages } from '../../../src/domain/messages/messages.js';
import { buildModels } from '../../../src/llm/models.js';
import { reasoningRuntime } from '../../../src/runtime/runtime.js';
import { DIALECTS } from '../../../src/storage/sql/dialects.js';
import { SqlStore } from '../../../src/storage/sql/sql-store.js';
import { reasoningSuite } from '../../support/reasoning-harness.js';
import { recordingExecutor } from '../../support/recording-executor.js';

/*
 * What a message write reads: the session's row (locked), its message count, its workspace's
 * configuration and webhook endpoints come in the statement that locks the session, the members
 * are read once (a member's peer is not looked up), the new messages' pks come back from their
 * insert, and the new jobs go in one statement. Every statement of the
 * write is a round trip while the session's row is held, so a statement more shows here. The
 * work it queues is checked as well: the items name the right messages, a summary falls at the
 * count, each endpoint gets its delivery in order, a workspace's configuration is followed.
 */

const { apps } = reasoningSuite();

const LIMITS = { sessionObservers: 10, webhookEndpoints: 10, jobMaxAttempts: 2 };

async function recordedWrites() {
  const s = await apps.start({ DERIVER_FLUSH_ENABLED: 'false' });
  const { executor, issued } = recordingExecutor(s.api.database.driver);
  // a store over the recording executor alone: each statement runs as sent (no transaction of
  // its own), so every one the write sends is counted
  const ctx = createDomainContext(new SqlStore(executor), LIMITS, undefined, reasoningRuntime(s.api.config, buildModels(s.api.config.models)));
  return { ...s, ctx, issued };
}

const messages = (peerId: string, count: number, from = 1) => Array.from({ length: count }, (_, i) => ({ peerId, content: `turn ${from + i} of ${peerId}` }));

describe('a message write', () => {
  it('reads its session, count, workspace configuration and endpoints in one statement, and queues the same work', async () => {
    const { api, ctx, issued, ws } = await recordedWrites();
    const driver = api.database.driver;
    expect((await api.post('/v3/workspaces', { id: ws })).status).toBeLessThan(300);
    expect((await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's1', peers: { alice: {}, bob: { observe_others: true } }, configuration: { summary: { messages_per_short_summary: 10 } } })).status).toBe(201);
    for (const url of ['https://one.example.test/hook', 'https://two.example.test/hook']) expect((await api.post(`/v3/workspaces/${ws}/webhooks`, { url })).status).toBeLessThan(300);
    await createMessages(ctx, ws, 's1', messages('alice', 8));

    issued.length = 0;
    const written = await createMessages(ctx, ws, 's1', messages('alice', 3, 9));
    const sent = issued.map((s) => s.sql.replace(/\s+/g, ' '));
    // none of these read apart any more
    expect(sent.filter((sql) => /FROM workspaces w WHERE w\.id = \?$/.test(sql) || /^SELECT id FROM webhook_endpoints/.test(sql) || /^SELECT message_count/.test(sql))).toEqual([]);
    expect(sent.filter((sql) => /^SELECT id, pk FROM messages/.test(sql))).toEqual([]);
    expect(sent.filter((sql) => sql.includes('FROM session_peers m JOIN peers p'))).toHaveLength(1);
    // alice is a member: her peer is not looked up again
    expect(sent.filter((sql) => /FROM peers WHERE/.test(sql))).toEqual([]);
    // the embedding job and the deliveries (one job an endpoint) in one statement (the unit's job is moved, not added)
    expect(sent.filter((sql) => sql.includes('INSERT INTO jobs'))).toHaveLength(1);
    expect(sent.filter((sql) => sql.includes('FROM sessions s') && sql.includes('webhook_endpoints'))).toHaveLength(1);

    // the items name these messages by their pks
    const items = await driver.all<{ message_id: string; message_pk: number | string; observed_id: string }>(
      'SELECT i.message_id, i.message_pk, i.observed_id FROM representation_items i WHERE i.workspace_id = ? ORDER BY i.message_pk',
      [ws],
    );
    const pks = await driver.all<{ id: string; pk: number | string }>('SELECT id, pk FROM messages WHERE workspace_id = ? ORDER BY pk', [ws]);
    expect(items.map((i) => [i.message_id, Number(i.message_pk)])).toEqual(pks.map((m) => [m.id, Number(m.pk)]));
    expect(items.slice(8).map((i) => i.message_id)).toEqual(written.map((m) => m.id));
    // a short summary at the tenth message, counted from the messages before the write
    const summaries = await driver.all<{ payload: unknown }>('SELECT payload FROM jobs WHERE workspace_id = ? AND kind = ?', [ws, SUMMARIZE]);
    expect(summaries.map((j) => (typeof j.payload === 'string' ? JSON.parse(j.payload) : j.payload))).toEqual([
      expect.objectContaining({ messageId: written[1].id, messageSeq: 10, kinds: ['short'] }),
    ]);
    // each endpoint one delivery job a write, with an event for each message, in order
    const deliveries = await driver.all<{ id: string; payload: unknown }>("SELECT id, payload FROM jobs WHERE workspace_id = ? AND kind = 'webhook.deliver' ORDER BY pk", [ws]);
    const endpoints = await driver.all<{ id: string }>('SELECT id FROM webhook_endpoints WHERE workspace_id = ? ORDER BY pk', [ws]);
    expect(deliveries).toHaveLength(4);
    expect(deliveries.slice(2).map((d) => d.id.split(':')[1])).toEqual(endpoints.map((e) => e.id));
    for (const delivery of deliveries.slice(2)) {
      const payload = typeof delivery.payload === 'string' ? JSON.parse(delivery.payload) : delivery.payload;
      expect(payload.events.map((e: { event: { data: { message_id: string } } }) => e.event.data.message_id)).toEqual(written.map((m) => m.id));
    }
    expect(Number((await driver.get<{ n: number | string }>('SELECT count(*) AS n FROM jobs WHERE workspace_id = ? AND kind = ?', [ws, EMBED_MESSAGES]))?.n)).toBe(2);
    expect(Number((await driver.get<{ n: number | string }>('SELECT count(*) AS n FROM jobs WHERE workspace_id = ? AND kind = ?', [ws, REPRESENT]))?.n)).toBe(1);
  });

  it("adds its items with their units' totals in a statement, and moves every unit's job in the one that queues its jobs, on PostgreSQL", async () => {
    const { api, ctx, issued, ws } = await recordedWrites();
    const driver = api.database.driver;
    expect((await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's1', peers: { alice: {}, bob: { observe_others: true } } })).status).toBe(201);
    // two units (about alice, about bob), each with its job pending
    await createMessages(ctx, ws, 's1', [...messages('alice', 2), ...messages('bob', 2)]);
    issued.length = 0;
    await createMessages(ctx, ws, 's1', [...messages('alice', 1, 3), ...messages('bob', 1, 3)]);
    const sent = issued.map((s) => s.sql.replace(/\s+/g, ' '));
    const itemStatements = sent.filter((sql) => sql.includes('representation_items'));
    const moves = sent.filter((sql) => /UPDATE jobs (j )?SET run_after = CASE/.test(sql));
    // SQLite's statements are calls, not round trips: there they stay apart
    expect([itemStatements.length, moves.length]).toEqual(driver.dialect === 'postgres' ? [1, 1] : [2, 2]);
    if (driver.dialect === 'postgres') {
      expect(moves[0]).toContain('INSERT INTO jobs');
      expect(sent).toHaveLength(5);
    }
    // the same work: a job a unit, every message an item
    const units = await driver.all<{ queue_key: string }>('SELECT queue_key FROM jobs WHERE workspace_id = ? AND kind = ? ORDER BY queue_key', [ws, REPRESENT]);
    expect(units.map((u) => u.queue_key.split(':').at(-1))).toEqual(['alice', 'bob']);
    const open = await ctx.store.reasoning.openUnitsTotals(ws, 's1', ['alice', 'bob']);
    expect([open.get('alice')?.items, open.get('bob')?.items]).toEqual([3, 3]);
  });

  it('counts from what the writes before it committed, when writes to one session come at once', async () => {
    const { api, ws } = await recordedWrites();
    const driver = api.database.driver;
    expect((await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's1', peers: { alice: {} }, configuration: { summary: { messages_per_short_summary: 10, messages_per_long_summary: 20 } } })).status).toBe(201);
    // 30 writes of one message at once: each waits for the session's row, and its message's number
    // (which places the summaries) counts every message committed before it
    const responses = await Promise.all(Array.from({ length: 30 }, (_, i) => api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: `turn ${i}` }] })));
    expect(responses.map((r) => r.status)).toEqual(responses.map(() => 201));
    const rows = await driver.all<{ payload: unknown }>('SELECT payload FROM jobs WHERE workspace_id = ? AND kind = ?', [ws, SUMMARIZE]);
    const payloads = rows.map((j) => (typeof j.payload === 'string' ? JSON.parse(j.payload) : j.payload) as { messageSeq: number; kinds: string[]; messageId: string });
    expect(payloads.map((p) => [p.messageSeq, p.kinds]).sort((a, b) => Number(a[0]) - Number(b[0]))).toEqual([
      [10, ['short']],
      [20, ['short', 'long']],
      [30, ['short']],
    ]);
    // each at the message stored in that place
    const order = (await driver.all<{ id: string }>('SELECT id FROM messages WHERE workspace_id = ? ORDER BY pk', [ws])).map((m) => m.id);
    for (const p of payloads) expect(order.indexOf(p.messageId) + 1).toBe(p.messageSeq);
  });

  it('postpones only the automatic dreams that wait, and each of them', async () => {
    const { api, ctx, issued, ws } = await recordedWrites();
    const driver = api.database.driver;
    expect((await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's1', peers: { alice: {}, bob: { observe_others: true } } })).status).toBe(201);
    await createMessages(ctx, ws, 's1', messages('alice', 1));
    const postponing = () => issued.filter((s) => /^UPDATE jobs SET run_after = \?( WHERE pk IN|, kind = \?)/.test(s.sql.replace(/\s+/g, ' ')));
    // no dream waits: nothing to move, no statement for it
    issued.length = 0;
    await createMessages(ctx, ws, 's1', messages('alice', 1, 2));
    expect(postponing()).toEqual([]);
    // one waits, bob's about alice: moved by the next write, and only it
    const past = new Date(Date.now() - 60_000);
    await ctx.store.jobs.enqueue(
      [newJob({ id: `dream-${ws}`, kind: DREAM_AUTO, workspaceId: ws, queueKey: dreamQueueKey({ workspaceId: ws, observerId: 'bob', observedId: 'alice' }), payload: { workspaceId: ws, observerId: 'bob', observedId: 'alice', dreamType: 'omni', sessionId: null, rebuild: false }, maxAttempts: 2, runAfter: past })],
      past,
    );
    issued.length = 0;
    await createMessages(ctx, ws, 's1', messages('alice', 1, 3));
    expect(postponing()).toHaveLength(1);
    // the lock order of decision 0019: the unit's job (moved with the write's new jobs), then dreams
    const sent = issued.map((st) => st.sql.replace(/\s+/g, ' '));
    const unitMove = sent.map((sql) => /UPDATE jobs (j )?SET run_after = CASE/.test(sql)).lastIndexOf(true);
    expect(unitMove).toBeGreaterThanOrEqual(0);
    expect(sent.findIndex((sql) => /^UPDATE jobs SET run_after = \?( WHERE pk IN|, kind = \?)/.test(sql))).toBeGreaterThan(unitMove);
    const dream = await driver.get<{ run_after: unknown }>('SELECT run_after FROM jobs WHERE id = ?', [`dream-${ws}`]);
    expect(DIALECTS[driver.dialect].readTime(dream!.run_after).getTime()).toBeGreaterThan(Date.now() + 60_000);
  });

  it("follows its workspace's configuration and a sender who joins with the write", async () => {
    const { api, ctx, ws } = await recordedWrites();
    const driver = api.database.driver;
    expect((await api.post('/v3/workspaces', { id: ws, configuration: { reasoning: { enabled: false } } })).status).toBeLessThan(300);
    expect((await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's1', peers: { alice: {} } })).status).toBe(201);
    await createMessages(ctx, ws, 's1', messages('alice', 2));
    const openItems = async () => Number((await driver.get<{ n: number | string }>('SELECT count(*) AS n FROM representation_items WHERE workspace_id = ?', [ws]))?.n);
    // reasoning off in the workspace: no items
    expect(await openItems()).toBe(0);

    expect((await api.put(`/v3/workspaces/${ws}`, { configuration: { reasoning: { enabled: true } } })).status).toBe(200);
    // carol, new to the session, observes others from her peer's own configuration
    expect((await api.post(`/v3/workspaces/${ws}/peers`, { id: 'carol', configuration: { observe_others: true } })).status).toBeLessThan(300);
    await createMessages(ctx, ws, 's1', [...messages('carol', 1), ...messages('alice', 1, 3)]);
    const items = await driver.all<{ observed_id: string; observers: unknown }>('SELECT observed_id, observers FROM representation_items WHERE workspace_id = ? ORDER BY pk', [ws]);
    const observers = (value: unknown) => (typeof value === 'string' ? JSON.parse(value) : value) as string[];
    expect(items.map((i) => [i.observed_id, [...observers(i.observers)].sort()])).toEqual([
      ['carol', ['carol']],
      ['alice', ['alice', 'carol']],
    ]);
  });
});
