import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, uniqueId, type TestApi } from '../../support/test-app.js';

/*
 * Facts over time through the API (docs/reasoning.md, "Facts over time"): `supersedes` on
 * create, current facts on every default read, include_superseded, the history route, and the
 * refusals of bad ids, on SQLite or PostgreSQL.
 */

let api: TestApi;
beforeAll(async () => {
  api = await buildTestApp();
});
afterAll(() => api.close());

interface Conclusion {
  id: string;
  content: string;
  observer_id: string;
  observed_id: string;
  valid_from: string;
  superseded_at: string | null;
  superseded_by: string | null;
}

async function workspace(): Promise<string> {
  const ws = uniqueId();
  expect((await api.post(`/v3/workspaces/${ws}/sessions/s/peers`, { alice: {}, bob: {} })).status).toBe(200);
  return ws;
}

async function create(ws: string, items: Record<string, unknown>[]) {
  return api.post(`/v3/workspaces/${ws}/conclusions`, { conclusions: items.map((item) => ({ observer_id: 'alice', observed_id: 'alice', session_id: 's', ...item })) });
}

async function createOne(ws: string, content: string, extra: Record<string, unknown> = {}): Promise<Conclusion> {
  const created = await create(ws, [{ content, ...extra }]);
  expect(created.status, created.text).toBe(201);
  return created.body[0] as Conclusion;
}

async function list(ws: string, query = '', filters: unknown = { observer_id: 'alice', observed_id: 'alice' }) {
  const page = await api.post(`/v3/workspaces/${ws}/conclusions/list?size=100${query}`, { filters });
  expect(page.status, page.text).toBe(200);
  return page.body as { items: Conclusion[]; total: number };
}

async function query(ws: string, text: string, suffix = '') {
  const found = await api.post(`/v3/workspaces/${ws}/conclusions/query${suffix}`, { query: text, top_k: 10, filters: { observer: 'alice', observed: 'alice' } });
  expect(found.status, found.text).toBe(200);
  return found.body as Conclusion[];
}

/** A conclusion's row as stored, to check that a refused request changed nothing. */
async function row(id: string) {
  return api.database.driver.get<{ deleted_at: unknown; superseded_at: unknown; superseded_by: string | null }>(
    'SELECT deleted_at, superseded_at, superseded_by FROM conclusions WHERE id = ?',
    [id],
  );
}

describe('supersedes on POST /v3/workspaces/{w}/conclusions', () => {
  it('retires the named facts: the new fact answers current, the old one names it and leaves every default read', async () => {
    const ws = await workspace();
    const lisbon = await createOne(ws, 'alice lives in Lisbon');
    const tea = await createOne(ws, 'alice likes green tea');
    expect(lisbon).toMatchObject({ superseded_at: null, superseded_by: null });
    expect(lisbon.valid_from).toMatch(/^\d{4}-\d\d-\d\dT/);

    const porto = await createOne(ws, 'alice moved to Porto', { supersedes: [lisbon.id] });
    expect(porto).toMatchObject({ content: 'alice moved to Porto', superseded_at: null, superseded_by: null });

    // list: current facts only, and the total counts them only
    const current = await list(ws);
    expect(current.items.map((c) => c.content).sort()).toEqual(['alice likes green tea', 'alice moved to Porto']);
    expect(current.total).toBe(2);
    const workspaceWide = await list(ws, '', null);
    expect(workspaceWide.total).toBe(2);
    // include_superseded: all, the old one with when and by what it was replaced
    const all = await list(ws, '&include_superseded=true');
    expect(all.total).toBe(3);
    expect((await list(ws, '&include_superseded=true', null)).total).toBe(3);
    const old = all.items.find((c) => c.id === lisbon.id)!;
    expect(old.superseded_by).toBe(porto.id);
    expect(Date.parse(old.superseded_at!)).toBeGreaterThanOrEqual(Date.parse(lisbon.valid_from));
    // newest first as the default list
    expect(all.items.map((c) => c.id)).toEqual([porto.id, tea.id, lisbon.id]);
    expect((await list(ws, '&include_superseded=true&reverse=true')).items.map((c) => c.id)).toEqual([lisbon.id, tea.id, porto.id]);

    // query: the words of the old fact find it only with include_superseded
    expect((await query(ws, 'where does alice live Lisbon')).map((c) => c.id)).not.toContain(lisbon.id);
    expect((await query(ws, 'where does alice live Lisbon', '?include_superseded=true')).map((c) => c.id)).toContain(lisbon.id);

    // representation and session context: the current fact, not the old one
    const representation = await api.post(`/v3/workspaces/${ws}/peers/alice/representation`, {});
    expect(representation.status).toBe(200);
    expect(representation.body.representation).toContain('alice moved to Porto');
    expect(representation.body.representation).not.toContain('Lisbon');
    const searched = await api.post(`/v3/workspaces/${ws}/peers/alice/representation`, { search_query: 'Lisbon' });
    expect(searched.body.representation).not.toContain('Lisbon');
    const context = await api.get(`/v3/workspaces/${ws}/sessions/s/context?peer_target=alice`);
    expect(context.status, context.text).toBe(200);
    expect(context.body.peer_representation).toContain('alice moved to Porto');
    expect(context.body.peer_representation).not.toContain('Lisbon');
    // a search for the old fact's words finds no current fact holding them
    const contextSearch = await api.get(`/v3/workspaces/${ws}/sessions/s/context?peer_target=alice&search_query=Lisbon`);
    expect(contextSearch.body.peer_representation).not.toContain('Lisbon');
    const contextPorto = await api.get(`/v3/workspaces/${ws}/sessions/s/context?peer_target=alice&search_query=Porto`);
    expect(contextPorto.body.peer_representation).toContain('alice moved to Porto');

    // read by id: the superseded one answers with its supersession
    const got = await api.get(`/v3/workspaces/${ws}/conclusions/${lisbon.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ id: lisbon.id, superseded_by: porto.id });
  });

  it('a new fact may replace several; a chain grows over time and its history runs from the oldest to the current fact', async () => {
    const ws = await workspace();
    const sent = await api.post(`/v3/workspaces/${ws}/sessions/s/messages`, { messages: [{ peer_id: 'alice', content: 'I live in Lisbon' }] });
    expect(sent.status).toBe(201);
    // a conclusion drawn from a message (as the deriver stores them): its history shows the message
    const lisbon = await createOne(ws, 'alice lives in Lisbon');
    await api.database.driver.run('UPDATE conclusions SET source_ids = ? WHERE id = ?', [JSON.stringify([sent.body[0].id]), lisbon.id]);
    const flat = await createOne(ws, 'alice rents a flat in Alfama');
    const porto = await createOne(ws, 'alice lives in Porto', { supersedes: [lisbon.id, flat.id] });
    const braga = await createOne(ws, 'alice lives in Braga', { supersedes: [porto.id] });

    for (const id of [lisbon.id, porto.id, braga.id]) {
      const history = await api.get(`/v3/workspaces/${ws}/conclusions/${id}/history`);
      expect(history.status, history.text).toBe(200);
      const chain = history.body as (Conclusion & { source_messages: { id: string; content: string }[] })[];
      expect(chain.map((c) => c.content)).toEqual(['alice lives in Lisbon', 'alice rents a flat in Alfama', 'alice lives in Porto', 'alice lives in Braga']);
      expect(chain.at(-1)).toMatchObject({ id: braga.id, superseded_at: null, superseded_by: null });
      expect(chain[0].superseded_by).toBe(porto.id);
      expect(chain[2].superseded_by).toBe(braga.id);
      expect(chain[0].source_messages.map((m) => m.content)).toEqual(['I live in Lisbon']);
      expect(chain[3].source_messages).toEqual([]);
    }
    // a fact never superseded is a chain of one
    const alone = await createOne(ws, 'alice has a cat');
    const single = await api.get(`/v3/workspaces/${ws}/conclusions/${alone.id}/history`);
    expect((single.body as Conclusion[]).map((c) => c.id)).toEqual([alone.id]);

    // deleting a superseded fact takes it out of the history and the full list; the chain holds
    expect((await api.delete(`/v3/workspaces/${ws}/conclusions/${porto.id}`)).status).toBe(204);
    const after = await api.get(`/v3/workspaces/${ws}/conclusions/${braga.id}/history`);
    expect((after.body as Conclusion[]).map((c) => c.content)).toEqual(['alice lives in Lisbon', 'alice rents a flat in Alfama', 'alice lives in Braga']);
    const all = await list(ws, '&include_superseded=true');
    expect(all.items.map((c) => c.id)).not.toContain(porto.id);
    expect(all.total).toBe(all.items.length);
    expect((await api.get(`/v3/workspaces/${ws}/conclusions/${porto.id}`)).status).toBe(404);
    expect((await api.get(`/v3/workspaces/${ws}/conclusions/${porto.id}/history`)).status).toBe(404);
  });

  it('refuses bad ids with 404 or 422 and a clear message, changing nothing', async () => {
    const ws = await workspace();
    const other = await workspace();
    const lisbon = await createOne(ws, 'alice lives in Lisbon');
    const bobs = (await create(ws, [{ content: 'alice is tall', observer_id: 'bob' }])).body[0] as Conclusion;
    const elsewhere = await createOne(other, 'alice lives in Rome');
    const porto = await createOne(ws, 'alice lives in Porto', { supersedes: [lisbon.id] });
    const before = await list(ws, '&include_superseded=true', null);

    const refused = async (items: Record<string, unknown>[], status: number, text: RegExp) => {
      const answer = await create(ws, items);
      expect(answer.status, answer.text).toBe(status);
      expect(JSON.stringify(answer.body)).toMatch(text);
    };
    await refuseEach();
    async function refuseEach() {
      await refused([{ content: 'alice lives in Faro', supersedes: ['no-such-id'] }], 404, /conclusions\[0\]\.supersedes: conclusion no-such-id not found/);
      // another workspace's conclusion is not found in this one
      await refused([{ content: 'alice lives in Faro', supersedes: [elsewhere.id] }], 404, /not found/);
      await refused([{ content: 'alice lives in Faro', supersedes: [bobs.id] }], 422, /same observer about the same peer/);
      await refused([{ content: 'alice lives in Faro', supersedes: [lisbon.id] }], 422, new RegExp(`already superseded by ${porto.id}`));
      await refused(
        [
          { content: 'alice lives in Faro', supersedes: [porto.id] },
          { content: 'alice lives in Evora', supersedes: [porto.id] },
        ],
        422,
        /named more than once/,
      );
      // all or nothing: a good item before a bad one is not stored and supersedes nothing
      await refused(
        [
          { content: 'alice lives in Faro', supersedes: [porto.id] },
          { content: 'alice lives in Evora', supersedes: ['no-such-id'] },
        ],
        404,
        /conclusions\[1\]\.supersedes/,
      );
      // the body's shape: a list of ids
      await refused([{ content: 'alice lives in Faro', supersedes: 'x' }], 422, /supersedes/);
      await refused([{ content: 'alice lives in Faro', supersedes: [7] }], 422, /supersedes/);
    }
    expect(await list(ws, '&include_superseded=true', null)).toEqual(before);
    expect(await row(porto.id)).toMatchObject({ deleted_at: null, superseded_at: null, superseded_by: null });

    // supersedes null or [] is no supersession
    const plain = await createOne(ws, 'alice reads a lot', { supersedes: null });
    const empty = await createOne(ws, 'alice runs', { supersedes: [] });
    expect([plain.superseded_at, empty.superseded_at]).toEqual([null, null]);
    // a fact that repeats the one it names is that fact: nothing is superseded
    const again = await createOne(ws, 'alice lives in Porto', { supersedes: [porto.id] });
    expect(again).toMatchObject({ id: porto.id, superseded_at: null });

    // history and get of a missing conclusion or one of another workspace: 404 as get
    for (const id of ['no-such-id', elsewhere.id]) {
      const missing = await api.get(`/v3/workspaces/${ws}/conclusions/${id}/history`);
      expect(missing.status).toBe(404);
      expect(missing.body).toEqual({ detail: `Document ${id} not found or does not belong to workspace ${ws}` });
    }
    // include_superseded must be a boolean
    expect((await api.post(`/v3/workspaces/${ws}/conclusions/list?include_superseded=maybe`, {})).status).toBe(422);
    expect((await api.post(`/v3/workspaces/${ws}/conclusions/query?include_superseded=maybe`, { query: 'x', filters: { observer: 'alice', observed: 'alice' } })).status).toBe(422);
  });

  it('deep pages of include_superseded lists and of default lists stay apart and exact', async () => {
    const ws = await workspace();
    const first = await create(
      ws,
      Array.from({ length: 60 }, (_, i) => ({ content: `alice fact ${i}` })),
    );
    expect(first.status).toBe(201);
    const ids = (first.body as Conclusion[]).map((c) => c.id);
    // every other one superseded by a new fact
    for (let i = 0; i < 60; i += 2) await createOne(ws, `alice new fact ${i}`, { supersedes: [ids[i]] });
    const pages = async (suffix: string) => {
      const seen: string[] = [];
      for (let page = 1; page <= 10; page++) {
        const answer = await api.post(`/v3/workspaces/${ws}/conclusions/list?size=10&page=${page}${suffix}`, {});
        seen.push(...(answer.body.items as Conclusion[]).map((c) => c.id));
        expect(answer.body.total).toBe(suffix === '' ? 60 : 90);
      }
      return seen;
    };
    const current = await pages('');
    const everything = await pages('&include_superseded=true');
    expect(current).toHaveLength(60);
    expect(new Set(current).size).toBe(60);
    expect(everything).toHaveLength(90);
    expect(new Set(everything).size).toBe(90);
    for (let i = 0; i < 60; i += 2) {
      expect(current).not.toContain(ids[i]);
      expect(everything).toContain(ids[i]);
    }
  });
});
