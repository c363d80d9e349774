import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ImportLineError } from '../../src/domain/portability/format.js';
import { ImportBatchError, importLines } from '../../src/domain/portability/import.js';
import { exportAll, fillStore, linesOfText, openStore, POSTGRES_AVAILABLE, type OpenStore } from '../support/portable-fixture.js';

const dir = mkdtempSync(join(tmpdir(), 'engram-portability-'));
const opened: OpenStore[] = [];
afterAll(async () => {
  for (const store of opened) await store.close();
  rmSync(dir, { recursive: true, force: true });
});

let n = 0;
async function store(dialect: 'sqlite' | 'postgres'): Promise<OpenStore> {
  const s = await openStore(dialect, dir, `store-${++n}`);
  opened.push(s);
  return s;
}

// the other store of a round trip: PostgreSQL when the suite runs on it, else a second SQLite
const OTHER = POSTGRES_AVAILABLE ? 'postgres' : 'sqlite';

describe('export and import', () => {
  it(`SQLite -> ${OTHER} -> SQLite: every export is the same bytes, vectors included`, async () => {
    const source = await store('sqlite');
    await fillStore(source.database.store, 'ws-a', { vectors: true });
    await fillStore(source.database.store, 'ws-b');
    const first = await exportAll(source.database.store, { withVectors: true });
    // every kind is there
    const kinds = new Set(first.trim().split('\n').map((line) => (JSON.parse(line) as { type: string }).type));
    expect([...kinds].sort()).toEqual(
      [
        'header',
        'workspace',
        'peer',
        'session',
        'membership',
        'message',
        'metamessage',
        'conclusion',
        'peer_card',
        'summary',
        'dream_state',
        'webhook',
        'conclusion_vector',
        'message_vector',
      ].sort(),
    );
    // exact times, sorted metadata keys, the soft-deleted conclusion left out
    expect(first).toContain('"created_at":"2026-03-01T10:01:00.000007Z"');
    expect(first).toContain('"metadata":{"a":"first","m":{"c":2,"d":1},"z":0}');
    expect(first).not.toContain('ws-a-gone');
    // a superseded fact is carried with its chain
    expect(first).toMatch(/"id":"ws-a-c6"[^\n]*"superseded_at":"2026-03-01T12:40:00.000007Z","superseded_by":"ws-a-c7"/);

    const middle = await store(OTHER);
    const imported = await importLines(middle.ctx, linesOfText(first), { batchLines: 7 });
    expect(imported.inserted.message).toBe(12);
    expect(imported.inserted).toEqual(imported.read);
    const second = await exportAll(middle.database.store, { withVectors: true });
    expect(second).toBe(first);

    const back = await store('sqlite');
    await importLines(back.ctx, linesOfText(second));
    expect(await exportAll(back.database.store, { withVectors: true })).toBe(first);
    // the same the other way: from the other store into a fresh one of its kind
    const again = await store(OTHER);
    await importLines(again.ctx, linesOfText(second));
    expect(await exportAll(again.database.store, { withVectors: true })).toBe(first);
  });

  it('paging does not change the export: one row per page gives the same bytes', async () => {
    const source = await store(OTHER);
    await fillStore(source.database.store, 'ws-p', { vectors: true });
    expect(await exportAll(source.database.store, { withVectors: true, pageSize: 1 })).toBe(await exportAll(source.database.store, { withVectors: true }));
  });

  it('what the imported rows read like through the store: counters, lists, the scope and the left member', async () => {
    const source = await store('sqlite');
    await fillStore(source.database.store, 'ws-r');
    const target = await store(OTHER);
    await importLines(target.ctx, linesOfText(await exportAll(source.database.store)));
    const s = target.database.store;
    const query = { filter: null, page: 1, size: 50, reverse: false };
    const peers = await s.peers.list('ws-r', query);
    expect(peers.items.map((p) => p.id)).toEqual(['alice', 'bob']);
    expect(peers.total).toBe(2);
    expect((await s.peers.scopesAmong('ws-r', ['scope.team', 'alice'])).has('scope.team')).toBe(true);
    expect((await s.sessions.list('ws-r', { ...query, order: 'created' })).items.map((x) => x.id)).toEqual(['s1']);
    expect((await s.sessions.findMembership('ws-r', 's1', 'bob'))?.leftAt).not.toBeNull();
    // the membership rows' copies of their sessions' order (kept by a trigger) are there
    expect((await s.sessions.ofPeer('ws-r', 'alice', { ...query, order: 'created-then-insertion' })).items.map((x) => x.id)).toEqual(['s1', 's2']);
    expect((await s.sessions.activeOfMember('ws-r', 'alice', 1, 50, false)).items.map((x) => x.id)).toEqual(['s1']);
    const messages = await s.messages.list('ws-r', 's1', query);
    expect(messages.items.map((m) => m.id)).toEqual(['ws-r-m0', 'ws-r-m1', 'ws-r-m3', 'ws-r-m4']);
    expect(messages.total).toBe(4);
    expect((await s.messages.searchCandidates({ workspaceId: 'ws-r', terms: ['number'], filter: null, candidates: 10 })).length).toBe(5);
    const derived = await s.memory.findConclusion('ws-r', 'ws-r-c2');
    expect(derived).toMatchObject({ level: 'deductive', sourceIds: ['ws-r-c1'], sourceSessionIds: ['s1', 's2'], timesDerived: 3 });
    // c1 and the fact that superseded c6: the superseded one is not counted
    expect(await s.memory.countConclusions({ workspaceId: 'ws-r', observerId: 'alice', observedId: 'alice' }, 'explicit')).toBe(2);
    expect(await s.memory.findConclusion('ws-r', 'ws-r-c6', { includeSuperseded: true })).toMatchObject({ supersededBy: 'ws-r-c7' });
    expect(await s.memory.findConclusion('ws-r', 'ws-r-c6')).toBeUndefined();
    expect(await s.memory.findPeerCard('ws-r', 'alice', 'bob')).toEqual(['Bob is a friend']);
    expect((await s.reasoning.summaries('ws-r', 's1')).map((x) => x.type).sort()).toEqual(['long', 'short']);
    expect((await s.v1.findAppByName('ws-r-v1'))?.v1Id).toBe('ws-rv1app');
    expect((await s.v1.findUserByName('ws-r-v1', 'carol'))?.v1Id).toBe('ws-rv1usr');
    // no deriver work was queued for the imported messages, and no job at all without a model
    expect(await s.reasoning.openItemCount('ws-r')).toBe(0);
    expect(await target.database.driver.get('SELECT pk FROM jobs')).toBeUndefined();
  });

  it('importing twice changes nothing', async () => {
    const source = await store('sqlite');
    await fillStore(source.database.store, 'ws-t', { vectors: true });
    const text = await exportAll(source.database.store, { withVectors: true });
    const target = await store(OTHER);
    await importLines(target.ctx, linesOfText(text));
    const once = await exportAll(target.database.store, { withVectors: true });
    const twice = await importLines(target.ctx, linesOfText(text));
    const storedAgain = Object.entries(twice.inserted).filter(([kind, count]) => count !== 0 && !kind.endsWith('_vector'));
    expect(storedAgain).toEqual([]);
    expect(await exportAll(target.database.store, { withVectors: true })).toBe(once);
    expect(once).toBe(text);
  });

  it('with an embedding model, the messages and conclusions stored are queued to be embedded, once; nothing for the deriver; a file with vectors queues none', async () => {
    const source = await store('sqlite');
    await fillStore(source.database.store, 'ws-e', { vectors: true });
    const target = await store(OTHER);
    const embedding = { ...target.ctx, reasoning: { models: { embedder: { name: 'fake-embedder' } }, settings: { embedMessages: true } } as never };
    const first = await importLines(embedding, linesOfText(await exportAll(source.database.store)));
    // 6 messages of ws-e and 6 live conclusions (none for the superseded one)
    expect(first.queuedEmbeddings).toBe(12);
    const open = async () => Object.fromEntries((await target.database.store.jobs.countOpenByKind()).map((row) => [row.kind, row.count]));
    expect(await open()).toEqual({ 'reasoning.embed_messages': 2, 'reasoning.embed_conclusions': 1 });
    expect(await target.database.store.reasoning.openItemCount('ws-e')).toBe(0);
    const again = await importLines(embedding, linesOfText(await exportAll(source.database.store)));
    expect(again.queuedEmbeddings).toBe(0);
    expect(await open()).toEqual({ 'reasoning.embed_messages': 2, 'reasoning.embed_conclusions': 1 });

    const withVectors = await store(OTHER);
    const vectorsCtx = { ...withVectors.ctx, reasoning: embedding.reasoning };
    const result = await importLines(vectorsCtx, linesOfText(await exportAll(source.database.store, { withVectors: true })));
    expect(result.queuedEmbeddings).toBe(0);
    expect(result.inserted.message_vector).toBe(2);
    expect(await withVectors.database.store.jobs.countOpenByKind()).toEqual([]);
  });

  it('--workspace: only the chosen workspaces, their rows in the order they were stored across workspaces', async () => {
    const source = await store(OTHER);
    await fillStore(source.database.store, 'ws-x');
    await fillStore(source.database.store, 'ws-y');
    await fillStore(source.database.store, 'ws-z');
    const text = await exportAll(source.database.store, { workspaceIds: ['ws-z', 'ws-x'], pageSize: 2 });
    const lines = text.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines[0].workspaces).toEqual(['ws-z', 'ws-x']);
    expect(new Set(lines.slice(1).map((line) => line.workspace_id ?? line.id))).toEqual(new Set(['ws-x', 'ws-z']));
    const messages = lines.filter((line) => line.type === 'message').map((line) => line.id);
    expect(messages).toEqual([...Array.from({ length: 6 }, (_, i) => `ws-x-m${i}`), ...Array.from({ length: 6 }, (_, i) => `ws-z-m${i}`)]);
    expect(await exportAll(source.database.store, { workspaceIds: ['none'] })).toBe(`${text.split('\n')[0].replace('["ws-z","ws-x"]', '["none"]')}\n`);
  });

  it('a malformed line at line 5,000 is named, and nothing of its batch is stored', async () => {
    const source = await store('sqlite');
    await fillStore(source.database.store, 'ws-big', { messages: 6000 });
    const lines = (await exportAll(source.database.store)).trim().split('\n');
    expect(lines.length).toBeGreaterThan(5000);
    const broken = [...lines];
    const original = JSON.parse(broken[4999]) as Record<string, unknown>;
    expect(original.type).toBe('message');
    broken[4999] = JSON.stringify({ ...original, token_count: 'many' });
    const target = await store(OTHER);
    const error = await importLines(target.ctx, linesOfText(broken.join('\n')), { batchLines: 1000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ImportLineError);
    expect((error as ImportLineError).line).toBe(5000);
    expect((error as Error).message).toMatch(/^line 5000: message: token_count: /);
    // lines 4001-4999 were the failed batch: none of their rows; line 4000's batch was committed
    const idAt = (line: number) => (JSON.parse(lines[line - 1]) as { id: string }).id;
    const s = target.database.store;
    expect(await s.messages.byIds('ws-big', [idAt(4000)])).toHaveLength(1);
    expect(await s.messages.byIds('ws-big', [idAt(4001), idAt(4500), idAt(4999)])).toEqual([]);

    // not JSON, an unknown type, a missing header: each named by its line
    const header = lines[0];
    await expect(importLines(target.ctx, linesOfText(`${header}\n{"type":"peer"`))).rejects.toThrow(/^line 2: not JSON/);
    await expect(importLines(target.ctx, linesOfText(`${header}\n{"type":"planet"}`))).rejects.toThrow(/^line 2: unknown "type" "planet"/);
    await expect(importLines(target.ctx, linesOfText(lines[1]))).rejects.toThrow(/^line 1: the first line must be the header/);
    const message = lines.find((line) => line.startsWith('{"type":"message"'))!;
    await expect(importLines(target.ctx, linesOfText(`${header}\n${message.replace(/"created_at":"[^"]*"/, '"created_at":"yesterday"')}`))).rejects.toThrow(
      /^line 2: message: created_at: not an ISO 8601 time/,
    );
  });

  it('a row whose parent is in neither the file nor the store fails its batch as a whole, naming its lines', async () => {
    const target = await store(OTHER);
    const source = await store('sqlite');
    await fillStore(source.database.store, 'ws-o');
    const lines = (await exportAll(source.database.store)).trim().split('\n');
    const header = lines[0];
    const peerLine = lines.find((line) => line.includes('"type":"peer"') && line.includes('"id":"alice"'))!;
    const messageLine = lines.find((line) => line.includes('"type":"message"'))!;
    const error = await importLines(target.ctx, linesOfText([header, lines[1], peerLine, messageLine].join('\n'))).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ImportBatchError);
    expect((error as Error).message).toMatch(/^lines 2-4: the store refused this batch/);
    expect(await target.database.store.workspaces.find('ws-o')).toBeUndefined();
  });
});
