import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { openDatabase } from '../../../src/runtime/database.js';
import { reembed } from '../../../src/cli/commands/reembed.js';
import { tokenCount } from '../../../src/domain/text/token-count.js';
import { MAX_QUERY_TOKENS } from '../../../src/domain/search/scoring.js';
import { checkVectorDimensions } from '../../../src/runtime/runtime.js';
import { VectorSizeError, type ConclusionRecord } from '../../../src/storage/store.js';
import { drainWorkspace, facts, reasoningApps, type ReasoningSetup } from '../../support/reasoning-harness.js';
import { heldAnswer, startFakeModelServer, type FakeModelServer, type RecordedRequest } from '../../support/fake-model-server.js';
import { buildTestApp, ownPostgresDatabase, TEST_DATABASE_URL, uniqueId, type TestApi } from '../../support/test-app.js';

/*
 * Embeddings and vector search end to end over HTTP, with the fake model server answering the
 * real openai transport and the real worker running the jobs, on SQLite or PostgreSQL:
 * conclusions embedded when created (deriver and manual), exact and semantic deduplication,
 * messages embedded in the background in overlapping chunks, semantic conclusion query, hybrid
 * message search, an embedder failure on a manual POST, and `engram reembed`.
 */

let fake: FakeModelServer;
beforeAll(async () => {
  fake = await startFakeModelServer();
});
afterAll(() => fake.close());

type Setup = ReasoningSetup;
const apps = reasoningApps(() => fake);
const setup = (env: Record<string, string> = {}) => apps.start(env);
afterEach(() => apps.stopAll());
const drain = (s: Setup, timeoutMs?: number) => drainWorkspace(s, { timeoutMs });

const inputsOf = (request: RecordedRequest): string[] => [request.body.input].flat().map(String);

/** Embeddings answer these vectors for these texts, the hashed vector for any other. */
function embedAs(vectors: Record<string, number[]>): void {
  fake.script.defaultEmbeddings((request) => ({ vectors: inputsOf(request).map((text) => vectors[text] ?? fake.vector(text)) }));
}

function unit(values: number[]): number[] {
  const norm = Math.sqrt(values.reduce((sum, v) => sum + v * v, 0));
  return values.map((v) => v / norm);
}

/** A vector within a small cosine distance of `vector` (about 0.005). */
function near(vector: number[]): number[] {
  const noise = fake.vector('noise');
  return unit(vector.map((v, i) => v + 0.1 * noise[i]));
}

const axis = (i: number) => unit(Array.from({ length: 8 }, (_, j) => (j === i ? 1 : 0)));

async function listed(api: TestApi, ws: string, observer: string, observed: string) {
  const page = await api.post(`/v3/workspaces/${ws}/conclusions/list?size=100`, { filters: { observer_id: observer, observed_id: observed } });
  expect(page.status, page.text).toBe(200);
  return page.body.items as { id: string; content: string; times_derived: number; source_ids: string[] | null }[];
}

async function nearestConclusion(api: TestApi, ws: string, observer: string, observed: string, vector: number[]) {
  return api.database.store.vectors.nearestConclusions({ workspaceId: ws, observerId: observer, observedId: observed, vector, k: 1 });
}

describe('conclusions are embedded when created', () => {
  it('by the deriver: the batch facts in one embedding call, each conclusion with its vector', async () => {
    const s = await setup({ EMBED_MESSAGES: 'false' });
    const { api, ws } = s;
    fake.script.defaultChat(facts('alice moved to Lisbon', 'alice has a sister'));
    await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'I moved to Lisbon with my sister' }] });
    await drain(s);
    const held = await listed(api, ws, 'alice', 'alice');
    expect(held.map((c) => c.content).sort()).toEqual(['alice has a sister', 'alice moved to Lisbon']);
    const embeds = fake.requests('embeddings');
    expect(embeds).toHaveLength(1);
    expect(inputsOf(embeds[0])).toEqual(['alice moved to Lisbon', 'alice has a sister']);
    for (const conclusion of held) {
      const [nearest] = await nearestConclusion(api, ws, 'alice', 'alice', fake.vector(conclusion.content));
      expect(nearest.conclusionId).toBe(conclusion.id);
      expect(nearest.distance).toBeLessThan(1e-4);
    }
  });

  it('by a manual POST, and without an embedding model they are stored without vectors as before', async () => {
    const s = await setup();
    const { api, ws } = s;
    await api.post(`/v3/workspaces/${ws}/peers`, { id: 'alice' });
    const created = await api.post(`/v3/workspaces/${ws}/conclusions`, { conclusions: [{ content: 'alice keeps bees', observer_id: 'alice', observed_id: 'alice' }] });
    expect(created.status, created.text).toBe(201);
    const [nearest] = await nearestConclusion(api, ws, 'alice', 'alice', fake.vector('alice keeps bees'));
    expect(nearest).toMatchObject({ conclusionId: created.body[0].id });

    const plain = await buildTestApp();
    try {
      await plain.post(`/v3/workspaces/${ws}/peers`, { id: 'alice' });
      const stored = await plain.post(`/v3/workspaces/${ws}/conclusions`, { conclusions: [{ content: 'alice keeps bees', observer_id: 'alice', observed_id: 'alice' }] });
      expect(stored.status).toBe(201);
    } finally {
      await plain.close();
    }
  });

  it.runIf(TEST_DATABASE_URL.startsWith('postgres'))('the first conclusions a store embeds (deriver, manual POST) type the vector columns before the transaction storing them: it locks no table against writers', async () => {
    // Typed inside the storing transaction, ALTER TABLE held the vector tables ACCESS EXCLUSIVE to
    // its commit while the insert waited for rows other writers held (the embedding jobs'
    // deadlock with a purge, background-locks.test.ts).
    const weak = /^(AccessShareLock|RowShareLock|RowExclusiveLock)$/;
    for (const by of ['deriver', 'POST'] as const) {
      const s = await setup({ EMBED_MESSAGES: 'false' });
      const { api, ws } = s;
      const store = api.database.store;
      const strong: string[] = [];
      const transaction = store.transaction.bind(store);
      vi.spyOn(store, 'transaction').mockImplementation((fn) =>
        transaction(async (tx) => {
          const result = await fn(tx);
          const db = (tx as unknown as { db: { all<T>(sql: string): Promise<T[]> } }).db;
          const locks = await db.all<{ relname: string; mode: string }>(
            "SELECT c.relname, l.mode FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE l.pid = pg_backend_pid() AND c.relkind IN ('r', 'p')",
          );
          strong.push(...locks.filter((l) => !weak.test(l.mode)).map((l) => `${l.relname} ${l.mode}`));
          return result;
        }),
      );
      expect(await store.vectors.dimensions()).toBeUndefined();
      if (by === 'deriver') {
        fake.script.defaultChat(facts('alice keeps bees'));
        await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'I keep bees' }] });
        await drain(s);
      } else {
        await api.post(`/v3/workspaces/${ws}/peers`, { id: 'alice' });
        const created = await api.post(`/v3/workspaces/${ws}/conclusions`, { conclusions: [{ content: 'alice keeps bees', observer_id: 'alice', observed_id: 'alice' }] });
        expect(created.status, created.text).toBe(201);
      }
      expect(await store.vectors.dimensions(), by).toBe(fake.vector('alice keeps bees').length);
      const [nearest] = await nearestConclusion(api, ws, 'alice', 'alice', fake.vector('alice keeps bees'));
      expect(nearest, by).toBeDefined();
      expect(strong, by).toEqual([]);
      await apps.stopAll();
    }
  });

  it('answers 503 with a detail and stores nothing when the embedding model fails on a manual POST', async () => {
    const s = await setup();
    const { api, ws } = s;
    await api.post(`/v3/workspaces/${ws}/peers`, { id: 'alice' });
    fake.script.embeddings({ status: 400, errorBody: { error: { message: 'model not found' } } });
    const response = await api.post(`/v3/workspaces/${ws}/conclusions`, { conclusions: [{ content: 'alice keeps bees', observer_id: 'alice', observed_id: 'alice' }] });
    expect(response.status).toBe(503);
    expect(response.body.detail).toMatch(/embedding model .* failed, so no conclusion was stored/);
    expect(await listed(api, ws, 'alice', 'alice')).toEqual([]);
    // v2 observations take the same path
    fake.script.embeddings({ status: 400, errorBody: { error: { message: 'model not found' } } });
    await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's1', peers: { alice: {} } });
    const v2 = await api.post(`/v2/workspaces/${ws}/observations`, { observations: [{ content: 'alice keeps bees', observer_id: 'alice', observed_id: 'alice', session_id: 's1' }] });
    expect(v2.status, v2.text).toBe(503);
    expect(v2.body.detail).toContain('no conclusion was stored');
    expect(await listed(api, ws, 'alice', 'alice')).toEqual([]);
  });
});

describe('deduplication', () => {
  it('manual POST: an exact repeat (trimmed, case-folded) reinforces the stored conclusion and answers with it', async () => {
    const s = await setup();
    const { api, ws } = s;
    await api.post(`/v3/workspaces/${ws}/peers`, { id: 'alice' });
    const url = `/v3/workspaces/${ws}/conclusions`;
    const first = await api.post(url, { conclusions: [{ content: 'alice likes tea', observer_id: 'alice', observed_id: 'alice' }] });
    const again = await api.post(url, {
      conclusions: [
        { content: '  Alice likes TEA ', observer_id: 'alice', observed_id: 'alice' },
        { content: 'alice likes tea', observer_id: 'alice', observed_id: 'alice' },
      ],
    });
    expect(again.status).toBe(201);
    expect(again.body.map((c: { id: string }) => c.id)).toEqual([first.body[0].id, first.body[0].id]);
    expect(again.body[0].times_derived).toBe(2);
    const held = await listed(api, ws, 'alice', 'alice');
    expect(held).toHaveLength(1);
    expect(held[0].times_derived).toBe(2);
  });

  it('manual POST: a near duplicate replaces a poorer text and reinforces a richer one', async () => {
    const s = await setup();
    const { api, ws } = s;
    await api.post(`/v3/workspaces/${ws}/peers`, { id: 'alice' });
    const url = `/v3/workspaces/${ws}/conclusions`;
    const base = fake.vector('alice likes tea');
    embedAs({ 'alice likes green tea from Japan': near(base), 'Alice: tea.': near(near(base)) });
    const first = await api.post(url, { conclusions: [{ content: 'alice likes tea', observer_id: 'alice', observed_id: 'alice' }] });

    const richer = await api.post(url, { conclusions: [{ content: 'alice likes green tea from Japan', observer_id: 'alice', observed_id: 'alice' }] });
    expect(richer.status).toBe(201);
    expect(richer.body[0]).toMatchObject({ content: 'alice likes green tea from Japan', times_derived: 2 });
    expect(richer.body[0].id).not.toBe(first.body[0].id);
    let held = await listed(api, ws, 'alice', 'alice');
    expect(held.map((c) => c.content)).toEqual(['alice likes green tea from Japan']);
    // the old one is soft-deleted and its vector gone; the new one has the vector
    expect((await api.get(`${url}/${first.body[0].id}`)).status).toBe(404);
    const [nearest] = await nearestConclusion(api, ws, 'alice', 'alice', base);
    expect(nearest.conclusionId).toBe(richer.body[0].id);

    const poorer = await api.post(url, { conclusions: [{ content: 'Alice: tea.', observer_id: 'alice', observed_id: 'alice' }] });
    expect(poorer.body[0]).toMatchObject({ id: richer.body[0].id, content: 'alice likes green tea from Japan', times_derived: 3 });
    held = await listed(api, ws, 'alice', 'alice');
    expect(held).toHaveLength(1);

    // something far away is a new conclusion
    const other = await api.post(url, { conclusions: [{ content: 'alice keeps bees', observer_id: 'alice', observed_id: 'alice' }] });
    expect(other.body[0].times_derived).toBe(1);
    expect(await listed(api, ws, 'alice', 'alice')).toHaveLength(2);
  });

  it('semantic deduplication only with DERIVER_DEDUPLICATE, and only within one session for explicit conclusions', async () => {
    const s = await setup({ DERIVER_DEDUPLICATE: 'false' });
    const { api, ws } = s;
    await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's1', peers: { alice: {} } });
    const url = `/v3/workspaces/${ws}/conclusions`;
    embedAs({ 'alice likes green tea from Japan': near(fake.vector('alice likes tea')) });
    await api.post(url, { conclusions: [{ content: 'alice likes tea', observer_id: 'alice', observed_id: 'alice' }] });
    await api.post(url, { conclusions: [{ content: 'alice likes green tea from Japan', observer_id: 'alice', observed_id: 'alice' }] });
    expect(await listed(api, ws, 'alice', 'alice')).toHaveLength(2);

    const on = await setup();
    await on.api.post(`/v3/workspaces/${on.ws}/sessions`, { id: 's1', peers: { alice: {} } });
    embedAs({ 'alice likes green tea from Japan': near(fake.vector('alice likes tea')) });
    await on.api.post(`/v3/workspaces/${on.ws}/conclusions`, { conclusions: [{ content: 'alice likes tea', observer_id: 'alice', observed_id: 'alice' }] });
    const elsewhere = await on.api.post(`/v3/workspaces/${on.ws}/conclusions`, {
      conclusions: [{ content: 'alice likes green tea from Japan', observer_id: 'alice', observed_id: 'alice', session_id: 's1' }],
    });
    expect(elsewhere.body[0].times_derived).toBe(1);
    expect(await listed(on.api, on.ws, 'alice', 'alice')).toHaveLength(2);
  });

  it('the deriver: a richer near duplicate replaces the stored fact with its sources joined, a poorer one reinforces it', async () => {
    const s = await setup({ EMBED_MESSAGES: 'false' });
    const { api, ws } = s;
    const base = fake.vector('alice likes tea');
    embedAs({ 'alice likes green tea from Japan': near(base), 'Alice: tea.': near(near(base)) });
    fake.script.chat(facts('alice likes tea'));
    fake.script.chat(facts('alice likes green tea from Japan', 'alice likes green tea from Japan'));
    fake.script.chat(facts('Alice: tea.'));
    const first = await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'I like tea' }] });
    await drain(s);
    const second = await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'Green tea, from Japan' }] });
    await drain(s);
    let held = await listed(api, ws, 'alice', 'alice');
    expect(held).toHaveLength(1);
    // the repeat inside the batch was dropped: replaced once (1 + 1)
    expect(held[0]).toMatchObject({ content: 'alice likes green tea from Japan', times_derived: 2 });
    expect(held[0].source_ids?.sort()).toEqual([first.body[0].id, second.body[0].id].sort());

    await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'tea' }] });
    await drain(s);
    held = await listed(api, ws, 'alice', 'alice');
    expect(held).toHaveLength(1);
    expect(held[0]).toMatchObject({ content: 'alice likes green tea from Japan', times_derived: 3 });
  });
});

describe('messages are embedded in the background', () => {
  it('in overlapping chunks of at most EMBEDDING_MAX_INPUT_TOKENS tokens, found by the nearest chunk', async () => {
    const s = await setup({ EMBEDDING_MAX_INPUT_TOKENS: '16', DERIVER_ENABLED: 'false' });
    const { api, ws } = s;
    const words = Array.from({ length: 60 }, (_, i) => `word${i}`).join(' ');
    const sent = await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, {
      messages: [
        { peer_id: 'alice', content: 'a short one' },
        { peer_id: 'alice', content: words },
      ],
    });
    expect(sent.status).toBe(201);
    const job = await api.database.driver.get<{ n: number | string }>("SELECT count(*) AS n FROM jobs WHERE workspace_id = ? AND kind = 'reasoning.embed_messages'", [ws]);
    expect(Number(job?.n)).toBe(1);
    await drain(s);

    const inputs = fake.requests('embeddings').flatMap(inputsOf);
    expect(inputs[0]).toBe('a short one');
    const chunks = inputs.slice(1);
    expect(chunks.length).toBeGreaterThan(3);
    expect(words.startsWith(chunks[0])).toBe(true);
    expect(words.endsWith(chunks.at(-1)!)).toBe(true);
    for (const chunk of chunks) expect(tokenCount(chunk)).toBeLessThanOrEqual(16);
    for (let i = 0; i + 1 < chunks.length; i++) {
      const tail = chunks[i].slice(chunks[i].length - Math.floor(chunks[i].length * 0.2));
      expect(tail.length).toBeGreaterThan(0);
      expect(chunks[i + 1].startsWith(tail)).toBe(true);
    }
    const found = await api.database.store.vectors.nearestMessages({ workspaceId: ws, sessionId: 's1', vector: fake.vector(chunks[2]), k: 20 });
    expect(found[0]).toMatchObject({ messageId: sent.body[1].id });
    expect(found[0].distance).toBeLessThan(1e-4);
    expect(found.map((f) => f.messageId)).toEqual([sent.body[1].id, sent.body[0].id]);
  });

  it('in requests of at most EMBEDDING_MAX_TOKENS_PER_REQUEST tokens (a longer text alone)', async () => {
    const s = await setup({ EMBEDDING_MAX_TOKENS_PER_REQUEST: '40', DERIVER_ENABLED: 'false' });
    const { api, ws } = s;
    const contents = Array.from({ length: 12 }, (_, i) => `message ${i} about the garden, the river and the old mill`);
    contents.push(Array.from({ length: 60 }, (_, i) => `word${i}`).join(' '));
    expect((await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: contents.map((content) => ({ peer_id: 'alice', content })) })).status).toBe(201);
    await drain(s);
    const requests = fake.requests('embeddings').map(inputsOf);
    // every message embedded once, in order, over several requests
    expect(requests.flat()).toEqual(contents);
    expect(requests.length).toBeGreaterThan(3);
    for (const inputs of requests.filter((inputs) => inputs.length > 1)) expect(inputs.reduce((sum, text) => sum + tokenCount(text), 0)).toBeLessThanOrEqual(40);
    // the long one, over the limit by itself, alone
    expect(tokenCount(contents.at(-1)!)).toBeGreaterThan(40);
    expect(requests.at(-1)).toEqual([contents.at(-1)]);
  });

  it("several sessions' jobs queued while one ran: one request for all of them, each message's vectors stored", async () => {
    // one job at a time, so the five jobs queued while the first one's request is held wait for it
    const s = await setup({ DERIVER_ENABLED: 'false', WORKER_CONCURRENCY: '1' });
    const { api, ws } = s;
    const held = heldAnswer();
    fake.script.embeddings({ until: held.until });
    expect((await api.post(`/v3/workspaces/${ws}/sessions/s0/messages`, { messages: [{ peer_id: 'alice', content: 'the first words' }] })).status).toBe(201);
    s.worker.start();
    await vi.waitFor(() => expect(fake.requests('embeddings')).toHaveLength(1));
    const sent: { id: string; content: string }[] = [];
    for (let i = 1; i <= 5; i++) {
      const contents = [`session ${i} talks about boats`, `session ${i} talks about trains`];
      const reply = await api.post(`/v3/workspaces/${ws}/sessions/s${i}/messages`, { messages: contents.map((content) => ({ peer_id: 'alice', content })) });
      expect(reply.status).toBe(201);
      sent.push(...(reply.body as { id: string; content: string }[]));
    }
    const jobs = await api.database.driver.get<{ n: number | string }>("SELECT count(*) AS n FROM jobs WHERE workspace_id = ? AND kind = 'reasoning.embed_messages'", [ws]);
    expect(Number(jobs?.n)).toBe(6);
    held.release();
    await drain(s);
    const requests = fake.requests('embeddings').map(inputsOf);
    expect(requests).toHaveLength(2);
    expect(requests[0]).toEqual(['the first words']);
    expect([...requests[1]].sort()).toEqual(sent.map((m) => m.content).sort());
    for (const message of sent) {
      const [nearest] = await api.database.store.vectors.nearestMessages({ workspaceId: ws, vector: fake.vector(message.content), k: 1 });
      expect(nearest).toMatchObject({ messageId: message.id });
      expect(nearest.distance).toBeLessThan(1e-4);
    }
    const done = await api.database.driver.get<{ n: number | string }>("SELECT count(*) AS n FROM jobs WHERE workspace_id = ? AND kind = 'reasoning.embed_messages' AND status = 'done'", [ws]);
    expect(Number(done?.n)).toBe(6);
  });

  it('not with EMBED_MESSAGES=false', async () => {
    const off = await setup({ EMBED_MESSAGES: 'false', DERIVER_ENABLED: 'false' });
    await off.api.post(`/v3/workspaces/${off.ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'hello there' }] });
    await drain(off);
    expect(fake.requests('embeddings')).toHaveLength(0);
  });
});

describe('semantic search', () => {
  it('conclusions/query ranks by cosine distance with top_k and the distance cut-off; full text without an embedding model', async () => {
    const s = await setup();
    const { api, ws } = s;
    await api.post(`/v3/workspaces/${ws}/peers`, { id: 'alice' });
    embedAs({
      'alice owns a dog': axis(0),
      'alice plays chess': unit([1, 1, 0, 0, 0, 0, 0, 0]),
      'alice lives in Oslo': axis(2),
      pets: axis(0),
    });
    const created = await api.post(`/v3/workspaces/${ws}/conclusions`, {
      conclusions: ['alice owns a dog', 'alice plays chess', 'alice lives in Oslo'].map((content) => ({ content, observer_id: 'alice', observed_id: 'alice' })),
    });
    expect(created.status).toBe(201);
    const query = (body: Record<string, unknown>) =>
      api.post(`/v3/workspaces/${ws}/conclusions/query`, { query: 'pets', filters: { observer_id: 'alice', observed_id: 'alice' }, ...body });
    const contents = (response: { body: { content: string }[] }) => response.body.map((c) => c.content);
    expect(contents(await query({}))).toEqual(['alice owns a dog', 'alice plays chess', 'alice lives in Oslo']);
    expect(contents(await query({ top_k: 1 }))).toEqual(['alice owns a dog']);
    // chess is at 1 - 1/sqrt(2) = 0.29, Oslo at 1
    expect(contents(await query({ distance: 0.5 }))).toEqual(['alice owns a dog', 'alice plays chess']);
    expect(contents(await query({ distance: 0.1 }))).toEqual(['alice owns a dog']);
    // other filters narrow the neighbours
    expect(contents(await query({ filters: { observer_id: 'alice', observed_id: 'alice', content: { contains: 'Oslo' } } }))).toEqual(['alice lives in Oslo']);
    // v2 observations query is the same search
    const v2 = await api.post(`/v2/workspaces/${ws}/observations/query`, { query: 'pets', top_k: 1, filters: { observer: 'alice', observed: 'alice' } });
    expect(contents(v2)).toEqual(['alice owns a dog']);

    const plain = await buildTestApp();
    try {
      await plain.post(`/v3/workspaces/${ws}/peers`, { id: 'alice' });
      await plain.post(`/v3/workspaces/${ws}/conclusions`, { conclusions: [{ content: 'alice owns a dog', observer_id: 'alice', observed_id: 'alice' }] });
      const byText = (q: string) => plain.post(`/v3/workspaces/${ws}/conclusions/query`, { query: q, filters: { observer_id: 'alice', observed_id: 'alice' } });
      expect(contents(await byText('pets'))).toEqual([]);
      expect(contents(await byText('dog'))).toEqual(['alice owns a dog']);
    } finally {
      await plain.close();
    }
  });

  it('conclusions/query with a filter few conclusions pass: the nearest that pass in the whole collection; a level filter applied by the vector search, others with a few times top_k rows read when enough pass among the nearest', async () => {
    const s = await setup({ DERIVER_ENABLED: 'false' });
    const { api, ws } = s;
    await api.post(`/v3/workspaces/${ws}/peers`, { id: 'alice' });
    embedAs({ pets: axis(0) });
    // 597 explicit conclusions near the query, 3 deductive ones far from it (d0 the nearest of those)
    const conclusions: ConclusionRecord[] = [];
    const vectors: number[][] = [];
    const created = Date.now() - 3_600_000;
    for (let i = 0; i < 600; i++) {
      const deductive = i >= 597;
      const j = i - 597;
      conclusions.push({ id: deductive ? `d${j}` : `e${i}`, workspaceId: ws, observerId: 'alice', observedId: 'alice', sessionId: null, content: deductive ? `deduced ${j}` : `explicit ${i}`, level: deductive ? 'deductive' : 'explicit', sourceIds: null, timesDerived: 1, createdAt: new Date(created + i) });
      vectors.push(deductive ? unit([0.5 - 0.1 * j, 0, 0, 1, 0, 0, 0, 0]) : unit(axis(0).map((v, k) => v + 0.3 * fake.vector(`e${i}`)[k])));
    }
    const store = api.database.store;
    await store.transaction(async (tx) => {
      await tx.memory.insertConclusions(conclusions);
      await tx.vectors.putConclusions(conclusions.map((c, i) => ({ conclusionId: c.id, workspaceId: ws, observerId: 'alice', observedId: 'alice', level: c.level, sessionId: null, vector: vectors[i] })));
    });
    // the rows read by id after each vector search
    const memory = store.memory;
    const byIds = memory.conclusionsByIds.bind(memory);
    let rowsAsked = 0;
    memory.conclusionsByIds = (scope, ids, filter) => ((rowsAsked += ids.length), byIds(scope, ids, filter));
    try {
      const query = async (filters: Record<string, unknown>, topK: number) => {
        rowsAsked = 0;
        const response = await api.post(`/v3/workspaces/${ws}/conclusions/query`, { query: 'pets', top_k: topK, filters: { observer_id: 'alice', observed_id: 'alice', ...filters } });
        expect(response.status, response.text).toBe(200);
        return (response.body as { id: string }[]).map((c) => c.id);
      };
      // a level filter is applied by the vector search itself: only the rows returned are read
      // (2 x top_k of them, the vector half of the fused ranking: the three there are)
      expect(await query({ level: 'deductive' }, 2)).toEqual(['d0', 'd1']);
      expect(rowsAsked).toBe(3);
      expect(await query({ level: { in: ['deductive', 'inductive'] } }, 10)).toEqual(['d0', 'd1', 'd2']);
      expect(rowsAsked).toBe(3);
      // v2 reads a level that does not exist as matching nothing; v3 refuses it (a closed set, scopes.md S8)
      const v2 = await api.post(`/v2/workspaces/${ws}/observations/query`, { query: 'pets', top_k: 10, filters: { observer_id: 'alice', observed_id: 'alice', level: 'no-such-level' } });
      expect([v2.status, v2.body]).toEqual([200, []]);
      const v3 = await api.post(`/v3/workspaces/${ws}/conclusions/query`, { query: 'pets', top_k: 10, filters: { observer_id: 'alice', observed_id: 'alice', level: 'no-such-level' } });
      expect(v3.status).toBe(422);
      // other filters on the rows: the three deduced ones are the farthest, found by reading on
      // until they are reached
      expect(await query({ content: { contains: 'deduced' } }, 2)).toEqual(['d0', 'd1']);
      expect(rowsAsked).toBe(600);
      // explicit ones pass among the nearest: the first read (64 neighbours) is enough
      const explicit = await query({ content: { contains: 'explicit' } }, 5);
      expect(explicit).toHaveLength(5);
      expect(rowsAsked).toBe(64);
      // the vector half of the fused ranking reads 2 x top_k
      expect(await query({ level: 'explicit' }, 5)).toEqual(explicit);
      expect(rowsAsked).toBe(10);
      // the same five as the nearest without the filter
      expect(await query({}, 5)).toEqual(explicit);
      expect(rowsAsked).toBe(10);
    } finally {
      memory.conclusionsByIds = byIds;
    }
  });

  it('message search is hybrid: a message found by meaning alone, fused with the full-text matches by reciprocal rank', async () => {
    const s = await setup({ DERIVER_ENABLED: 'false' });
    const { api, ws } = s;
    embedAs({
      'I adopted a puppy last spring': axis(0),
      'The weather was cold and grey': axis(1),
      'We had pasta for lunch': axis(2),
      'Which pet does she have?': near(axis(0)),
      'pasta weather': axis(5),
    });
    const sent = await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, {
      messages: ['I adopted a puppy last spring', 'The weather was cold and grey', 'We had pasta for lunch'].map((content) => ({ peer_id: 'alice', content })),
    });
    expect(sent.status).toBe(201);
    const contents = (response: { body: { content: string }[] }) => response.body.map((m) => m.content);

    // no vector yet: full text alone finds nothing for a question sharing no word
    expect(contents(await api.post(`/v3/workspaces/${ws}/search`, { query: 'Which pet does she have?' }))).toEqual([]);
    await drain(s);
    for (const url of [`/v3/workspaces/${ws}/search`, `/v3/workspaces/${ws}/sessions/s1/search`, `/v3/workspaces/${ws}/peers/alice/search`]) {
      const found = await api.post(url, { query: 'Which pet does she have?', limit: 1 });
      expect(found.status, found.text).toBe(200);
      expect(contents(found)).toEqual(['I adopted a puppy last spring']);
    }
    // full-text matches come first when the vectors do not help; all three are found
    const both = contents(await api.post(`/v3/workspaces/${ws}/search`, { query: 'pasta weather', limit: 10 }));
    expect(both.slice(0, 2).sort()).toEqual(['The weather was cold and grey', 'We had pasta for lunch']);
    expect(both).toHaveLength(3);
    // filters narrow the vector ranking too
    const filtered = await api.post(`/v3/workspaces/${ws}/search`, { query: 'Which pet does she have?', filters: { peer_id: 'bob' } });
    expect(contents(filtered)).toEqual([]);
    // an embedding model that fails leaves full-text search working
    fake.script.embeddings({ status: 400, errorBody: { error: { message: 'bad' } } });
    expect(contents(await api.post(`/v3/workspaces/${ws}/search`, { query: 'pasta' }))).toEqual(['We had pasta for lunch']);
  });

  it('a message search refused (a query over the token limit, a filter it cannot read) makes no embedding call', async () => {
    const s = await setup({ DERIVER_ENABLED: 'false' });
    const { api, ws } = s;
    expect((await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'We had pasta for lunch' }] })).status).toBe(201);
    await drain(s);
    const embeddings = () => fake.requests('embeddings').length;
    const before = embeddings();
    const refused = [
      { query: 'pasta '.repeat(MAX_QUERY_TOKENS + 1) },
      { query: 'pasta', filters: { created_at: { gte: 'not a time' } } },
      { query: 'pasta', filters: { no_such_field: 'x' } },
    ];
    for (const body of refused) {
      const response = await api.post(`/v3/workspaces/${ws}/search`, body);
      expect(response.status, response.text).toBe(422);
    }
    expect(embeddings()).toBe(before);
    // one accepted: its query embedded once, beside the full-text ranking
    const found = await api.post(`/v3/workspaces/${ws}/search`, { query: 'pasta' });
    expect(found.body.map((m: { content: string }) => m.content)).toEqual(['We had pasta for lunch']);
    expect(embeddings()).toBe(before + 1);
  });

  it('a query asked again in a workspace is not embedded again; another workspace, another query or a failed embedding is', async () => {
    const s = await setup({ DERIVER_ENABLED: 'false', METRICS_ENABLED: 'true' });
    const { api, ws } = s;
    const other = uniqueId('ws');
    /** engram_query_vectors_total by outcome (the process's: the tests of a file run one at a time). */
    const vectorsTaken = async () => {
      const text = (await api.get('/metrics')).text;
      const of = (outcome: string) => Number(new RegExp(`^engram_query_vectors_total\\{outcome="${outcome}"\\} (\\d+)$`, 'm').exec(text)?.[1]);
      return { kept: of('kept'), embedded: of('embedded') };
    };
    for (const workspace of [ws, other]) {
      expect((await api.post(`/v3/workspaces/${workspace}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'We had pasta for lunch' }] })).status).toBe(201);
    }
    await drain(s);
    await api.post(`/v3/workspaces/${ws}/conclusions`, { conclusions: [{ content: 'alice likes pasta', observer_id: 'alice', observed_id: 'alice' }] });
    /** The texts embedded by the requests made while `run` ran. */
    const embeddedDuring = async (run: () => Promise<void>): Promise<string[]> => {
      const before = fake.requests('embeddings').length;
      await run();
      return fake.requests('embeddings').slice(before).flatMap(inputsOf);
    };
    const search = async (workspace: string, url: string, body: Record<string, unknown>) => {
      const response = await api.post(`/v3/workspaces/${workspace}${url}`, body);
      expect(response.status, response.text).toBe(200);
      return response.body;
    };
    const contentsOf = (items: { content: string }[]) => items.map((item) => item.content);

    expect(await embeddedDuring(async () => void (await search(ws, '/search', { query: 'lunch pasta' })))).toEqual(['lunch pasta']);
    const before = await vectorsTaken();
    // again, and from a session's search, a peer's search, a conclusion query, a representation and a chat of the workspace
    const again = await embeddedDuring(async () => {
      expect(contentsOf(await search(ws, '/search', { query: 'lunch pasta' }))).toEqual(['We had pasta for lunch']);
      expect(contentsOf(await search(ws, '/sessions/s1/search', { query: 'lunch pasta' }))).toEqual(['We had pasta for lunch']);
      expect(contentsOf(await search(ws, '/peers/alice/search', { query: 'lunch pasta' }))).toEqual(['We had pasta for lunch']);
      expect(contentsOf(await search(ws, '/conclusions/query', { query: 'lunch pasta', filters: { observer_id: 'alice', observed_id: 'alice' } }))).toEqual(['alice likes pasta']);
      expect((await search(ws, '/peers/alice/representation', { search_query: 'lunch pasta' })).representation).toContain('alice likes pasta');
      fake.script.chat({ text: 'pasta, it seems' });
      expect((await search(ws, '/peers/alice/chat', { query: 'lunch pasta' })).content).toBe('pasta, it seems');
    });
    expect(again).toEqual([]);
    // /metrics counts them kept (the chat embeds its question once for both of its searches)
    expect(await vectorsTaken()).toEqual({ kept: before.kept + 6, embedded: before.embedded });
    // another workspace asks its own model call; so does another query
    expect(await embeddedDuring(async () => void (await search(other, '/search', { query: 'lunch pasta' })))).toEqual(['lunch pasta']);
    expect(await embeddedDuring(async () => void (await search(ws, '/search', { query: 'pasta lunch' })))).toEqual(['pasta lunch']);
    // a failed embedding is not kept: the next search asks again, and its vector is kept then
    fake.script.embeddings({ status: 400, errorBody: { error: { message: 'bad' } } });
    expect(await embeddedDuring(async () => void (await search(ws, '/search', { query: 'pasta dinner' })))).toEqual(['pasta dinner']);
    expect(await embeddedDuring(async () => void (await search(ws, '/search', { query: 'pasta dinner' })))).toEqual(['pasta dinner']);
    expect(await embeddedDuring(async () => void (await search(ws, '/search', { query: 'pasta dinner' })))).toEqual([]);
  });

  it('conclusion search is hybrid: found by meaning alone, by words alone, and a number or a name of the question first', async () => {
    const s = await setup({ DERIVER_ENABLED: 'false' });
    const { api, ws } = s;
    const facts = ['Alice adopted a puppy last spring', 'Alice moved to Porto in 2019', 'Alice had lunch with Rodrigo', 'Alice likes rainy weather'];
    embedAs({
      [facts[0]]: axis(0),
      [facts[1]]: axis(1),
      [facts[2]]: axis(2),
      [facts[3]]: axis(3),
      // the vectors of these questions point at another fact than the one holding the answer
      'Which pet does she have?': near(axis(0)),
      'Where did she live in 2019?': near(axis(3)),
      'Did she eat with Rodrigo?': near(axis(3)),
    });
    await api.post(`/v3/workspaces/${ws}/peers`, { id: 'alice' });
    const created = await api.post(`/v3/workspaces/${ws}/conclusions`, { conclusions: facts.map((content) => ({ content, observer_id: 'alice', observed_id: 'alice' })) });
    expect(created.status, created.text).toBe(201);
    const ask = async (query: string, topK = 2) => {
      const response = await api.post(`/v3/workspaces/${ws}/conclusions/query`, { query, top_k: topK, filters: { observer_id: 'alice', observed_id: 'alice' } });
      expect(response.status, response.text).toBe(200);
      return (response.body as { content: string }[]).map((c) => c.content);
    };
    // by meaning alone: no word in common
    expect((await ask('Which pet does she have?', 1))[0]).toBe(facts[0]);
    // the exact tokens lift the facts holding them above the nearest by meaning
    expect(await ask('Where did she live in 2019?')).toEqual([facts[1], facts[3]]);
    expect(await ask('Did she eat with Rodrigo?')).toEqual([facts[2], facts[3]]);
    // a representation's search_query ranks the same way
    const representation = await api.post(`/v3/workspaces/${ws}/peers/alice/representation`, { search_query: 'Where did she live in 2019?', search_top_k: 1, max_conclusions: 1 });
    expect(representation.body.representation).toContain(facts[1]);
  });

  it('message search filtered to sessions looks for the nearest in those sessions, not among the workspace\'s nearest', async () => {
    const s = await setup({ DERIVER_ENABLED: 'false' });
    const { api, ws } = s;
    embedAs({ 'Which pet does she have?': axis(0) });
    const store = api.database.store;
    const now = new Date();
    await store.workspaces.createIfAbsent({ id: ws, metadata: {}, configuration: {} }, now);
    await store.peers.ensure(ws, ['alice', 'bob'], now);
    // 40 sessions of others, each with a message nearer to the question than alice's answer
    const rows = [];
    for (let i = 0; i < 40; i++) rows.push({ id: uniqueId('m'), session: `others-${i}`, peer: 'bob', content: `unrelated note ${i}`, vector: near(axis(0)) });
    rows.push({ id: uniqueId('m'), session: 'mine', peer: 'alice', content: 'I adopted a puppy last spring', vector: unit([1, 1, 0, 0, 0, 0, 0, 0]) });
    for (const session of new Set(rows.map((r) => r.session)).add('empty')) await store.sessions.createIfAbsent(ws, { id: session, metadata: {}, configuration: {} }, now);
    for (const r of rows) {
      await store.messages.insert([{ id: r.id, workspaceId: ws, sessionId: r.session, peerId: r.peer, content: r.content, metadata: {}, tokenCount: 5, createdAt: now }]);
      await store.vectors.putMessageChunks([{ messageId: r.id, chunk: 0, workspaceId: ws, sessionId: r.session, peerId: r.peer, vector: r.vector }]);
    }
    const search = async (filters: Record<string, unknown>) => {
      const response = await api.post(`/v3/workspaces/${ws}/search`, { query: 'Which pet does she have?', limit: 1, filters });
      expect(response.status, response.text).toBe(200);
      return (response.body as { content: string }[]).map((m) => m.content);
    };
    // the question shares no word with the answer: only the vector ranking can find it
    expect(await search({ session_id: 'mine' })).toEqual(['I adopted a puppy last spring']);
    expect(await search({ session_id: { in: ['empty', 'mine'] }, peer_id: 'alice' })).toEqual(['I adopted a puppy last spring']);
    expect(await search({ session_id: { in: ['empty'] } })).toEqual([]);
    expect(await search({ session_id: { in: [] } })).toEqual([]);
    // every session: the nearest of all
    expect((await search({ session_id: '*' }))[0]).toMatch(/^unrelated note/);
    expect((await search({ session_id: { in: ['mine', '*'] } }))[0]).toMatch(/^unrelated note/);
    // the session's own search route finds it too
    const own = await api.post(`/v3/workspaces/${ws}/sessions/mine/search`, { query: 'Which pet does she have?', limit: 1 });
    expect((own.body as { content: string }[]).map((m) => m.content)).toEqual(['I adopted a puppy last spring']);
    // what a peer could see: the vector search looks in its sessions (alice a member of 'mine' since before the messages)
    await store.sessions.saveMemberships(ws, 'mine', [{ peerId: 'alice', configuration: {}, joinedAt: new Date(now.getTime() - 1000), leftAt: null }]);
    expect(await search({ peer_perspective: 'alice' })).toEqual(['I adopted a puppy last spring']);
  });

  it('the representation with search_query: the nearest, then the most reinforced, then the newest', async () => {
    const s = await setup();
    const { api, ws } = s;
    await api.post(`/v3/workspaces/${ws}/peers`, { id: 'alice' });
    embedAs({ 'alice owns a dog': axis(0), pets: axis(0), 'alice plays chess': axis(1), 'alice lives in Oslo': axis(2), 'alice is 40': axis(3), 'alice sings': axis(4) });
    const url = `/v3/workspaces/${ws}/conclusions`;
    for (const content of ['alice owns a dog', 'alice plays chess', 'alice lives in Oslo', 'alice is 40', 'alice sings']) {
      await api.post(url, { conclusions: [{ content, observer_id: 'alice', observed_id: 'alice' }] });
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    // chess reinforced twice: the most derived
    await api.post(url, { conclusions: [{ content: 'alice plays chess', observer_id: 'alice', observed_id: 'alice' }] });
    const representation = async (body: Record<string, unknown>) => (await api.post(`/v3/workspaces/${ws}/peers/alice/representation`, body)).body.representation as string;
    // N = 3: one nearest (dog), one most derived (chess), one newest (sings)
    const text = await representation({ search_query: 'pets', max_conclusions: 3 });
    expect(text.match(/\] (.*)$/gm)?.map((line) => line.slice(2))).toEqual(['alice sings', 'alice plays chess', 'alice owns a dog']);
    // without a search query: the newest
    const newest = await representation({ max_conclusions: 3 });
    expect(newest.match(/\] (.*)$/gm)?.map((line) => line.slice(2))).toEqual(['alice sings', 'alice is 40', 'alice lives in Oslo']);
  });

  it('v3 representation and peer context whose search_query cannot be embedded: 200 without the semantic part, a warning logged; v2 keeps its 503', async () => {
    const s = await setup();
    const { api, ws } = s;
    await api.post(`/v3/workspaces/${ws}/peers`, { id: 'alice' });
    embedAs({ 'alice owns a dog': axis(0), pets: axis(0), 'alice plays chess': axis(1), 'alice lives in Oslo': axis(2), 'alice is 40': axis(3), 'alice sings': axis(4) });
    const url = `/v3/workspaces/${ws}/conclusions`;
    for (const content of ['alice owns a dog', 'alice plays chess', 'alice lives in Oslo', 'alice is 40', 'alice sings']) {
      await api.post(url, { conclusions: [{ content, observer_id: 'alice', observed_id: 'alice' }] });
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await api.post(url, { conclusions: [{ content: 'alice plays chess', observer_id: 'alice', observed_id: 'alice' }] });
    // without a logger the requests' loggers are the app's own (no children): its warnings are read here
    const warn = vi.spyOn(api.app.log, 'warn');
    const lines = (text: string) => text.match(/\] (.*)$/gm)?.map((line) => line.slice(2));
    const failing = () => fake.script.embeddings({ status: 400, errorBody: { error: { message: 'model not found' } } });

    failing();
    const response = await api.post(`/v3/workspaces/${ws}/peers/alice/representation`, { search_query: 'pets', max_conclusions: 3 });
    expect(response.status, response.text).toBe(200);
    // N = 3, no nearest: one most derived (chess), then the newest two
    expect(lines(response.body.representation)).toEqual(['alice sings', 'alice is 40', 'alice plays chess']);
    failing();
    const context = await api.get(`/v3/workspaces/${ws}/peers/alice/context?search_query=pets&max_conclusions=3`);
    expect(context.status, context.text).toBe(200);
    expect(lines(context.body.representation)).toEqual(['alice sings', 'alice is 40', 'alice plays chess']);
    failing();
    await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's1', peers: { alice: {} } });
    const sessionContext = await api.get(`/v3/workspaces/${ws}/sessions/s1/context?peer_target=alice&search_query=pets&max_conclusions=3`);
    expect(sessionContext.status, sessionContext.text).toBe(200);
    expect(lines(sessionContext.body.peer_representation)).toEqual(['alice sings', 'alice is 40', 'alice plays chess']);
    const warned = warn.mock.calls.filter((call) => String(call[1]).startsWith('search_query could not be embedded'));
    expect(warned).toHaveLength(3);
    expect(String((warned[0][0] as { err: Error }).err.message)).toContain('model not found');

    failing();
    const v2 = await api.post(`/v2/workspaces/${ws}/peers/alice/representation`, { search_query: 'pets', max_observations: 3 });
    expect(v2.status, v2.text).toBe(503);
    // the model answering again: the nearest is back
    const semantic = await api.post(`/v3/workspaces/${ws}/peers/alice/representation`, { search_query: 'pets', max_conclusions: 3 });
    expect(lines(semantic.body.representation)).toEqual(['alice sings', 'alice plays chess', 'alice owns a dog']);
  });
});

/** A database of this test's own (reembed drops every vector of a store). */
async function freshDatabaseUrl(): Promise<{ url: string; drop(): Promise<void> }> {
  if (TEST_DATABASE_URL.startsWith('postgres')) return ownPostgresDatabase();
  const file = join(tmpdir(), `engram_reembed_${randomBytes(6).toString('hex')}.db`);
  return { url: file, drop: () => Promise.all([file, `${file}-wal`, `${file}-shm`].map((f) => rm(f, { force: true }))).then(() => undefined) };
}

describe('engram reembed', () => {
  it('drops the vectors and queues every conclusion and message to be embedded again; start-up refuses another size', async () => {
    const fresh = await freshDatabaseUrl();
    try {
      const s = await setup({ DATABASE_URL: fresh.url, DERIVER_ENABLED: 'false' });
      const { api, ws } = s;
      await api.post(`/v3/workspaces/${ws}/peers`, { id: 'alice' });
      const conclusion = await api.post(`/v3/workspaces/${ws}/conclusions`, { conclusions: [{ content: 'alice keeps bees', observer_id: 'alice', observed_id: 'alice' }] });
      const message = await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'my bees swarmed today' }] });
      await drain(s);
      const store = api.database.store;
      expect(await store.vectors.dimensions()).toBe(8);

      // the configured size differs from the stored one: start-up stops naming the setting and the command
      const other = await openDatabase(fresh.url);
      const sixteen = { ...api.config, models: { ...api.config.models, embedding: { ...api.config.models.embedding, dimensions: 16 } } };
      const refused = await checkVectorDimensions(sixteen, other).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(VectorSizeError);
      expect(String((refused as Error).message)).toMatch(/EMBEDDING_VECTOR_DIMENSIONS is 16, but the stored vectors have 8 dimensions.*engram reembed/);
      const same = await openDatabase(fresh.url);
      await checkVectorDimensions({ ...sixteen, models: { ...sixteen.models, embedding: { ...sixteen.models.embedding, dimensions: 8 } } }, same);
      await same.driver.close();

      const lines = await reembed(api.config, api.database);
      expect(lines[0]).toBe('dropped the stored vectors (8 dimensions)');
      expect(lines[1]).toMatch(/queued the embedding of 1 conclusions and 1 messages/);
      expect(await store.vectors.dimensions()).toBeUndefined();
      expect(await nearestConclusion(api, ws, 'alice', 'alice', fake.vector('alice keeps bees'))).toEqual([]);

      await drain(s);
      expect(await store.vectors.dimensions()).toBe(8);
      expect((await nearestConclusion(api, ws, 'alice', 'alice', fake.vector('alice keeps bees')))[0]).toMatchObject({ conclusionId: conclusion.body[0].id });
      const found = await store.vectors.nearestMessages({ workspaceId: ws, vector: fake.vector('my bees swarmed today'), k: 1 });
      expect(found[0]).toMatchObject({ messageId: message.body[0].id });
    } finally {
      await apps.stopAll();
      await fresh.drop();
    }
  });
});
