import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, uniqueId, type TestApi } from '../../support/test-app.js';

/*
 * The filter language as the reference has it after v3.0.12 (scopes.md S8), through the routes:
 * v3 answers by the newer rules, v2 keeps its answers for the same filters (contract-v3 §5,
 * §9.1). Expected ids come from the rows each test makes.
 */

let api: TestApi;
beforeAll(async () => {
  api = await buildTestApp();
});
afterAll(() => api.close());

/** Conclusions A (session s1), B (session s2) and C (no session) of bob about alice. */
async function workedExample(): Promise<{ ws: string; ids: Record<'A' | 'B' | 'C', string> }> {
  const ws = uniqueId();
  for (const session of ['s1', 's2']) {
    expect((await api.post(`/v3/workspaces/${ws}/sessions`, { id: session, peers: { alice: {}, bob: {} } })).status).toBe(201);
  }
  const made = await api.post(`/v3/workspaces/${ws}/conclusions`, {
    conclusions: [
      { content: 'A likes apples', observer_id: 'bob', observed_id: 'alice', session_id: 's1' },
      { content: 'A likes bananas', observer_id: 'bob', observed_id: 'alice', session_id: 's2' },
      { content: 'A likes cherries', observer_id: 'bob', observed_id: 'alice' },
    ],
  });
  expect(made.status).toBe(201);
  const [a, b, c] = made.body as { id: string }[];
  return { ws, ids: { A: a.id, B: b.id, C: c.id } };
}

describe('S8 worked example: conclusions A (s1), B (s2), C (no session)', () => {
  const cases: [unknown, string[] | string, string[] | string][] = [
    // filter, v3 (newer reference), v2 (its own, as v3.0.12)
    [{ session_id: 's1' }, ['A'], ['A']],
    [{ session_id: { ne: 's1' } }, ['B', 'C'], 'Invalid numeric value: s1. Expected a number, got str'],
    [{ NOT: [{ session_id: 's1' }] }, ['B', 'C'], ['B']],
    [{ session_id: null }, ['C'], ['C']],
    [{ session_id: { ne: null } }, ['A', 'B'], 'Invalid numeric value: None. Expected a number, got NoneType'],
    [{ AND: [{ session_id: { ne: 's1' } }, { session_id: { ne: null } }] }, ['B'], 'Invalid numeric value: s1. Expected a number, got str'],
    [{ NOT: [{ session_id: 'other' }], session_id: { ne: null } }, ['A', 'B'], 'Invalid numeric value: None. Expected a number, got NoneType'],
    [{ session_id: { in: [] } }, [], []],
  ];

  it.each(cases)('%j: v3 list and query, v2 list', async (filter, v3, v2) => {
    const { ws, ids } = await workedExample();
    const byId = new Map(Object.entries(ids).map(([name, id]) => [id, name]));
    const names = (items: { id: string }[]) => items.map((c) => byId.get(c.id)).sort();
    const answer = (response: { status: number; body: { items?: { id: string }[]; detail?: string } | { id: string }[] }) => {
      if (response.status === 422) return (response.body as { detail: string }).detail;
      expect(response.status).toBe(200);
      return names(Array.isArray(response.body) ? response.body : response.body.items!);
    };
    const observed = { observer_id: 'bob', observed_id: 'alice' };
    expect(answer(await api.post(`/v3/workspaces/${ws}/conclusions/list`, { filters: { ...observed, ...(filter as object) } }))).toEqual(v3);
    // the query narrows its full-text matches by the same filter ("likes" is in all three)
    expect(answer(await api.post(`/v3/workspaces/${ws}/conclusions/query`, { query: 'likes', filters: { ...observed, ...(filter as object) } }))).toEqual(v3);
    expect(answer(await api.post(`/v2/workspaces/${ws}/observations/list`, { filters: { ...observed, ...(filter as object) } }))).toEqual(v2);
  });
});

describe('operand typing and malformed filters answer 422 with the reference messages (v3); v2 keeps its answers', () => {
  it('lists of workspaces, peers, sessions and messages', async () => {
    const ws = uniqueId();
    expect((await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's1', peers: { alice: {} } })).status).toBe(201);
    expect((await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'hello there' }] })).status).toBe(201);
    const jsonb = "Invalid filter for column 'h_metadata': a JSONB column takes an object, optionally under 'contains'";
    const nullNe = 'Operator \'gt\' does not accept null. Use {"ne": null} for a not-null check, or null on its own for a null check.';
    const routes = {
      workspaces: '/v3/workspaces/list',
      peers: `/v3/workspaces/${ws}/peers/list`,
      sessions: `/v3/workspaces/${ws}/sessions/list`,
      messages: `/v3/workspaces/${ws}/sessions/s1/messages/list`,
      search: `/v3/workspaces/${ws}/search`,
    };
    const cases: [keyof typeof routes, unknown, string][] = [
      ['workspaces', { id: 5 }, "Invalid value for column 'name': expected a string, got int"],
      ['peers', { AND: [null] }, 'Invalid filter configuration'],
      ['peers', { OR: [1] }, 'Invalid filter configuration'],
      ['peers', { metadata: 'x' }, jsonb],
      ['peers', { metadata: { gte: 5 } }, jsonb],
      ['peers', { id: { operator: 'null' } }, "Invalid filter for column 'id': unsupported operator(s) ['operator']. Expected one of ['contains', 'gt', 'gte', 'icontains', 'in', 'lt', 'lte', 'ne'] or a scalar value."],
      ['sessions', { is_active: 'true' }, "Invalid value for column 'is_active': expected true or false, got str"],
      ['sessions', { is_active: { ne: 'true' } }, "Invalid value for column 'is_active': expected true or false, got str"],
      ['sessions', { created_at: 5 }, "Invalid value for column 'created_at': expected a datetime, got int"],
      ['sessions', { created_at: { contains: 'x' } }, "Operator 'contains' requires a text column, but 'created_at' is datetime"],
      ['messages', { token_count: { in: [1, 'nope'] } }, 'Invalid numeric value: nope. Expected a number, got str'],
      ['messages', { token_count: { gt: null } }, nullNe],
      ['messages', { token_count: { contains: 5 } }, "Operator 'contains' requires a text column, but 'token_count' is int"],
      ['messages', { session_id: true }, "Invalid value for column 'session_name': expected a string, got bool"],
      ['messages', { created_at: { in: ['2024-01-01', 'nope'] } }, 'Invalid datetime value: nope'],
      ['search', { peer_id: 5 }, "Invalid value for column 'peer_name': expected a string, got int"],
    ];
    for (const [route, filters, detail] of cases) {
      const body = route === 'search' ? { query: 'hello', filters } : { filters };
      const response = await api.post(routes[route], body);
      expect({ route, filters, status: response.status, body: response.body }).toEqual({ route, filters, status: 422, body: { detail } });
    }

    // the same filters in v2: v3.0.12's answers
    const v2 = async (path: string, filters: unknown) => api.post(path.replace('/v3/', '/v2/'), { filters });
    expect((await v2(routes.peers, { AND: [null] })).body).toEqual({ detail: 'Filter conditions inside AND must be objects, got NoneType' });
    expect((await v2(routes.sessions, { is_active: 'true' })).body.items).toEqual([]);
    expect((await v2(routes.workspaces, { id: 5 })).body.items).toEqual([]);
    expect((await v2(routes.messages, { token_count: { contains: 5 } })).body).toEqual({ detail: "Operator 'contains' is not supported on column 'token_count'" });
    expect((await v2(routes.peers, { metadata: 'x' })).body.items).toEqual([]);
  });

  it('accepts what the newer reference accepts, v3 only', async () => {
    const ws = uniqueId();
    expect((await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's1', peers: { alice: {}, bob: {} } })).status).toBe(201);
    const sent = await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, {
      messages: [
        { peer_id: 'alice', content: 'one two three four five' },
        { peer_id: 'bob', content: 'hi' },
      ],
    });
    expect(sent.status).toBe(201);
    const [long, short] = sent.body as { id: string; token_count: number }[];
    const messages = async (filters: unknown, generation = 'v3') => {
      const response = await api.post(`/${generation}/workspaces/${ws}/sessions/s1/messages/list`, { filters });
      expect(response.status, response.text).toBe(200);
      return (response.body.items as { id: string }[]).map((m) => m.id);
    };
    expect(await messages({ token_count: String(long.token_count) })).toEqual([long.id]);
    expect(await messages({ token_count: String(long.token_count) }, 'v2')).toEqual([]);
    expect(await messages({ token_count: { gt: String(short.token_count) } })).toEqual([long.id]);
    expect(await messages({ token_count: { gt: 2147483648 } })).toEqual([]);
    expect(await messages({ token_count: { lt: short.token_count + 0.5 } })).toEqual([short.id]);
    expect(await messages({ peer_id: { ne: 'alice' } })).toEqual([short.id]);
    expect(await messages({ peer_id: { gt: 'alice' } })).toEqual([short.id]);
    expect(await messages({ NOT: [{ peer_id: 'alice' }] })).toEqual([short.id]);

    const sessions = async (filters: unknown) => {
      const response = await api.post(`/v3/workspaces/${ws}/sessions/list`, { filters });
      expect(response.status, response.text).toBe(200);
      return (response.body.items as { id: string }[]).map((s) => s.id);
    };
    expect(await sessions({ is_active: true })).toEqual(['s1']);
    expect(await sessions({ is_active: { ne: true } })).toEqual([]);
    expect(await sessions({ is_active: { in: [true, false] } })).toEqual(['s1']);
    expect(await sessions({ metadata: { ne: null } })).toEqual(['s1']);
    expect(await sessions({ metadata: null })).toEqual([]);
  });
});
