/*
 * Conclusion sources and derivation counts on the wire: `source_ids` and `times_derived` in the
 * v3 Conclusion, `source_ids` as a Document filter column (`contains`: the list holds the id),
 * and the store's reinforce and replace steps that deduplication uses.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConclusionRecord } from '../../../src/storage/store.js';
import { buildTestApp, uniqueId, type TestApi } from '../../support/test-app.js';

let api: TestApi;
beforeAll(async () => {
  api = await buildTestApp();
});
afterAll(async () => {
  await api?.close();
});

async function setup() {
  const ws = uniqueId('src');
  for (const peer of ['alice', 'bob']) expect((await api.post(`/v3/workspaces/${ws}/peers`, { id: peer })).status).toBe(201);
  const made = await api.post(`/v3/workspaces/${ws}/conclusions`, {
    conclusions: [{ content: 'Alice walks to work', observer_id: 'alice', observed_id: 'alice' }],
  });
  expect(made.status).toBe(201);
  const record = (id: string, sourceIds: string[] | null, observerId = 'alice', createdAt = new Date()): ConclusionRecord => ({
    id,
    workspaceId: ws,
    observerId,
    observedId: 'alice',
    sessionId: null,
    content: `derived ${id}`,
    level: 'deductive',
    sourceIds,
    timesDerived: 1,
    createdAt,
  });
  return { ws, manual: made.body[0], record };
}

const list = (ws: string, filters: unknown) => api.post(`/v3/workspaces/${ws}/conclusions/list`, { filters });

describe('conclusion sources', () => {
  it('a conclusion stored through the API has no sources and was derived once', async () => {
    const { manual } = await setup();
    expect(manual.source_ids).toBeNull();
    expect(manual.times_derived).toBe(1);
  });

  it('source_ids contains: conclusions whose list holds the id, exactly, alongside other filters', async () => {
    const { ws, manual, record } = await setup();
    const store = api.database.store;
    const older = record(uniqueId('d'), [manual.id, 'msg-1'], 'alice', new Date(Date.now() - 1000));
    const newer = record(uniqueId('d'), ['msg-2', manual.id]);
    // ids that contain the wanted one as a substring must not match
    await store.memory.insertConclusions([older, newer, record(uniqueId('d'), [`${manual.id}x`, `x${manual.id}`]), record(uniqueId('d'), [manual.id], 'bob')]);

    const found = await list(ws, { source_ids: { contains: manual.id }, observer_id: 'alice' });
    expect(found.status).toBe(200);
    expect(found.body.items.map((c: { id: string }) => c.id)).toEqual([newer.id, older.id]);
    expect(found.body.items[0]).toMatchObject({ source_ids: ['msg-2', manual.id], times_derived: 1, level: 'deductive' });
    expect((await list(ws, { source_ids: { contains: 'msg-1' } })).body.items.map((c: { id: string }) => c.id)).toEqual([older.id]);
    expect((await list(ws, { source_ids: { contains: manual.id.toUpperCase() === manual.id ? 'none' : manual.id.toUpperCase() } })).body.items).toEqual([]);
    // null: conclusions without recorded sources
    expect((await list(ws, { source_ids: null })).body.items.map((c: { id: string }) => c.id)).toEqual([manual.id]);
    expect((await list(ws, { source_ids: { contains: '*' } })).body.total).toBe(5);
  });

  it('v3: source_ids is a JSON column: a list or contains is containment, other operators and scalars a 422 (newer reference)', async () => {
    const { ws, manual, record } = await setup();
    const both = record(uniqueId('d'), ['msg-1', 'msg-2']);
    const other = record(uniqueId('d'), ['msg-2']);
    await api.database.store.memory.insertConclusions([both, other]);
    const jsonb = "Invalid filter for column 'source_ids': a JSONB column takes an object, optionally under 'contains'";
    const refused: [unknown, string][] = [
      ['abc', jsonb],
      [5, jsonb],
      [{ in: ['a'] }, jsonb],
      [{ icontains: 'a' }, jsonb],
      [{ gt: 5 }, jsonb],
      [{ ne: 'a' }, jsonb],
      [{ contains: 5 }, jsonb],
      [{ contains: null }, 'Operator \'contains\' does not accept null. Use {"ne": null} for a not-null check, or null on its own for a null check.'],
      [{ contains: 'a', has: 'b' }, 'Unsupported comparison operator: has'],
    ];
    for (const [value, detail] of refused) {
      const response = await list(ws, { source_ids: value });
      expect({ value, status: response.status, body: response.body }).toEqual({ value, status: 422, body: { detail } });
    }
    const ids = async (value: unknown) => {
      const response = await list(ws, { source_ids: value });
      expect(response.status, response.text).toBe(200);
      return response.body.items.map((c: { id: string }) => c.id);
    };
    expect(await ids(['msg-1', 'msg-2'])).toEqual([both.id]);
    expect(await ids({ contains: ['msg-2', 'msg-1'] })).toEqual([both.id]);
    expect((await ids(['msg-2'])).sort()).toEqual([both.id, other.id].sort());
    expect(await ids({ kind: 'note' })).toEqual([]);
    expect((await ids({ ne: null })).sort()).toEqual([both.id, other.id].sort());
    // NOT counts the conclusion without sources as not holding the id
    expect(await ids({ contains: 'msg-1' })).toEqual([both.id]);
    const negated = await list(ws, { NOT: [{ source_ids: { contains: 'msg-1' } }] });
    expect(negated.body.items.map((c: { id: string }) => c.id).sort()).toEqual([manual.id, other.id].sort());
  });

  it('v2: other operators on source_ids keep their 422s naming them', async () => {
    const { ws } = await setup();
    const cases: [unknown, string][] = [
      [{ in: ['a'] }, "Operator 'in' is not supported on column 'source_ids'"],
      [{ icontains: 'a' }, "Operator 'icontains' is not supported on column 'source_ids'"],
      [{ gt: 5 }, "Operator 'gt' is not supported on column 'source_ids'"],
      [{ ne: 'a' }, 'Invalid numeric value: a. Expected a number, got str'],
      [{ contains: ['a'] }, "Operator 'contains' on column 'source_ids' takes one id, got list"],
      [{ contains: null }, "Operator 'contains' on column 'source_ids' takes one id, got NoneType"],
      [{ contains: 'a', has: 'b' }, 'Unsupported comparison operator: has'],
    ];
    for (const [value, detail] of cases) {
      const response = await api.post(`/v2/workspaces/${ws}/observations/list`, { filters: { source_ids: value } });
      expect({ value, status: response.status, body: response.body }).toEqual({ value, status: 422, body: { detail } });
    }
  });

  it('reinforce adds one to times_derived; replace soft-deletes the old one and stores the new one counted on', async () => {
    const { ws, manual, record } = await setup();
    const memory = api.database.store.memory;
    expect(await memory.reinforceConclusion(ws, manual.id)).toBe(2);
    expect(await memory.reinforceConclusion(ws, manual.id)).toBe(3);
    expect(await memory.reinforceConclusion(ws, 'no-such-id')).toBeUndefined();
    expect((await api.get(`/v3/workspaces/${ws}/conclusions/${manual.id}`)).body.times_derived).toBe(3);

    const richer = { ...record(uniqueId('r'), ['m1']), level: 'explicit' as const, content: 'Alice walks to work every morning' };
    const stored = await memory.replaceConclusion(ws, manual.id, richer, new Date());
    expect(stored).toMatchObject({ id: richer.id, timesDerived: 4, sourceIds: ['m1'] });
    expect((await api.get(`/v3/workspaces/${ws}/conclusions/${manual.id}`)).status).toBe(404);
    const now = await api.get(`/v3/workspaces/${ws}/conclusions/${richer.id}`);
    expect(now.body).toMatchObject({ content: 'Alice walks to work every morning', times_derived: 4, source_ids: ['m1'] });

    // the old one is gone: a second replace of it changes nothing
    const again = await memory.replaceConclusion(ws, manual.id, { ...richer, id: uniqueId('r') }, new Date());
    expect(again).toBeUndefined();
    expect((await list(ws, {})).body.items.map((c: { id: string }) => c.id)).toEqual([richer.id]);
  });
});
