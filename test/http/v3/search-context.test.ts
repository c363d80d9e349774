import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, uniqueId, type TestApi } from '../../support/test-app.js';

let api: TestApi;
beforeAll(async () => {
  api = await buildTestApp();
});
afterAll(() => api.close());

async function seed(ws: string) {
  await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, {
    messages: [
      { peer_id: 'alice', content: 'I adore hiking in the Alps every summer', metadata: { topic: 'travel' } },
      { peer_id: 'bob', content: 'Hiking is fine, but sailing is better' },
      { peer_id: 'alice', content: 'My cat is called Miso' },
    ],
  });
  await api.post(`/v3/workspaces/${ws}/sessions/s2/messages`, {
    messages: [{ peer_id: 'alice', content: 'Planning more hiking hiking hiking next year' }],
  });
}

const contents = (response: { body: { content: string }[] }) => response.body.map((m) => m.content);

describe('message search', () => {
  it('finds messages of the workspace containing any of the words, best match first', async () => {
    const ws = uniqueId();
    await seed(ws);
    const response = await api.post(`/v3/workspaces/${ws}/search`, { query: 'hiking' });
    expect(response.status).toBe(200);
    expect(response.body).toHaveLength(3);
    expect(contents(response)).toContain('Hiking is fine, but sailing is better');
    // the message repeating the word ranks first
    expect(response.body[0].content).toBe('Planning more hiking hiking hiking next year');
    // any word may match (was: every word); the message holding both ranks first
    const both = contents(await api.post(`/v3/workspaces/${ws}/search`, { query: 'hiking sailing' }));
    expect(both[0]).toBe('Hiking is fine, but sailing is better');
    expect(both).toHaveLength(3);
    expect((await api.post(`/v3/workspaces/${ws}/search`, { query: 'submarine' })).body).toEqual([]);
    expect((await api.post(`/v3/workspaces/${ws}/search`, { query: '"OR* (' })).body).toEqual([]);
    expect((await api.post(`/v3/workspaces/${ws}/search`, { query: 'hiking', limit: 1 })).body).toHaveLength(1);
  });

  it('scopes to a session or a sender, and applies filters', async () => {
    const ws = uniqueId();
    await seed(ws);
    expect((await api.post(`/v3/workspaces/${ws}/sessions/s1/search`, { query: 'hiking' })).body).toHaveLength(2);
    const byPeer = await api.post(`/v3/workspaces/${ws}/peers/bob/search`, { query: 'hiking' });
    expect(contents(byPeer)).toEqual(['Hiking is fine, but sailing is better']);
    const filtered = await api.post(`/v3/workspaces/${ws}/search`, { query: 'hiking', filters: { metadata: { topic: 'travel' } } });
    expect(contents(filtered)).toEqual(['I adore hiking in the Alps every summer']);
    // a filter cannot widen the path's scope
    const pinned = await api.post(`/v3/workspaces/${ws}/sessions/s1/search`, { query: 'hiking', filters: { session_id: 's2' } });
    expect(pinned.body).toHaveLength(2);
    expect((await api.post(`/v3/workspaces/${uniqueId()}/search`, { query: 'hiking' })).body).toEqual([]);
  });

  it('validates the body', async () => {
    const ws = uniqueId();
    const missing = await api.post(`/v3/workspaces/${ws}/search`, {});
    expect(missing.body.detail).toEqual([{ type: 'missing', loc: ['body', 'query'], msg: 'Field required', input: {} }]);
    const limit = await api.post(`/v3/workspaces/${ws}/search`, { query: 'x', limit: 0 });
    expect(limit.body.detail[0]).toMatchObject({ type: 'greater_than_equal', loc: ['body', 'limit'] });
    const filter = await api.post(`/v3/workspaces/${ws}/search`, { query: 'x', filters: { content: 'x' } });
    expect(filter.body).toEqual({ detail: "Column 'content' is not allowed to be filtered on or does not exist on Message" });
  });
});

describe('session context and summaries', () => {
  it('returns the most recent messages that fit the token budget, oldest first', async () => {
    const ws = uniqueId();
    const created = (
      await api.post(`/v3/workspaces/${ws}/sessions/s/messages`, {
        messages: [
          { peer_id: 'a', content: 'one two three four' },
          { peer_id: 'b', content: 'five six' },
          { peer_id: 'a', content: 'seven eight nine' },
        ],
      })
    ).body as { token_count: number; content: string }[];
    const all = await api.get(`/v3/workspaces/${ws}/sessions/s/context`);
    expect(all.status).toBe(200);
    expect(Object.keys(all.body)).toEqual(['id', 'messages', 'summary', 'peer_representation', 'peer_card']);
    expect(all.body.messages.map((m: { content: string }) => m.content)).toEqual(created.map((m) => m.content));
    expect(all.body.summary).toBeNull();
    const lastTwo = created[1].token_count + created[2].token_count;
    const budget = await api.get(`/v3/workspaces/${ws}/sessions/s/context?tokens=${lastTwo}`);
    expect(budget.body.messages.map((m: { content: string }) => m.content)).toEqual(['five six', 'seven eight nine']);
    const tight = await api.get(`/v3/workspaces/${ws}/sessions/s/context?tokens=${lastTwo - 1}`);
    expect(tight.body.messages.map((m: { content: string }) => m.content)).toEqual(['seven eight nine']);
    expect((await api.get(`/v3/workspaces/${ws}/sessions/s/context?tokens=0`)).body.messages).toEqual([]);
    expect((await api.get(`/v3/workspaces/${ws}/sessions/unknown/context`)).body).toMatchObject({ id: 'unknown', messages: [] });
  });

  it('adds the target peer representation and card when peer_target is given', async () => {
    const ws = uniqueId();
    await api.post(`/v3/workspaces/${ws}/sessions/s/messages`, { messages: [{ peer_id: 'alice', content: 'hi' }, { peer_id: 'bob', content: 'yo' }] });
    const created = await api.post(`/v3/workspaces/${ws}/conclusions`, {
      conclusions: [{ content: 'Alice likes tea', observer_id: 'bob', observed_id: 'alice', session_id: 's' }],
    });
    expect(created.status).toBe(201);
    await api.put(`/v3/workspaces/${ws}/peers/bob/card?target=alice`, { peer_card: ['Name: Alice'] });
    const context = await api.get(`/v3/workspaces/${ws}/sessions/s/context?peer_target=alice&peer_perspective=bob`);
    expect(context.status).toBe(200);
    expect(context.body.peer_representation).toContain('Alice likes tea');
    expect(context.body.peer_card).toEqual(['Name: Alice']);
    // alice's own view holds nothing about herself
    const own = await api.get(`/v3/workspaces/${ws}/sessions/s/context?peer_target=alice`);
    expect(own.body.peer_representation).not.toContain('Alice likes tea');
    expect(own.body.peer_card).toBeNull();
  });

  it('confines the representation to a `sessions` allowlist (repeatable) and then leaves the card out', async () => {
    const ws = uniqueId();
    for (const session of ['trip', 'other', 'third']) {
      await api.post(`/v3/workspaces/${ws}/sessions`, { id: session, peers: { user: {}, assistant: {} } });
    }
    await api.post(`/v3/workspaces/${ws}/conclusions`, {
      conclusions: [
        { content: 'The user wants to visit Kyoto', observer_id: 'assistant', observed_id: 'user', session_id: 'trip' },
        { content: 'The user is vegetarian', observer_id: 'assistant', observed_id: 'user', session_id: 'other' },
        { content: 'The user runs marathons', observer_id: 'assistant', observed_id: 'user', session_id: 'third' },
      ],
    });
    await api.put(`/v3/workspaces/${ws}/peers/assistant/card?target=user`, { peer_card: ['Travels in April'] });
    const context = (query: string) => api.get(`/v3/workspaces/${ws}/sessions/trip/context?peer_target=user&peer_perspective=assistant${query}`);

    const trip = await context('&sessions=trip');
    expect(trip.status).toBe(200);
    expect(trip.body.peer_representation).toContain('Kyoto');
    expect(trip.body.peer_representation).not.toContain('vegetarian');
    expect(trip.body.peer_representation).not.toContain('marathons');
    expect(trip.body.peer_card).toBeNull();
    const two = await context('&sessions=trip&sessions=other');
    expect(two.body.peer_representation).toContain('Kyoto');
    expect(two.body.peer_representation).toContain('vegetarian');
    expect(two.body.peer_representation).not.toContain('marathons');
    // without the allowlist: everything, and the card
    const open = await context('');
    expect(open.body.peer_representation).toContain('marathons');
    expect(open.body.peer_card).toEqual(['Travels in April']);

    const checks: [string, string][] = [
      ['/sessions/trip/context?sessions=trip', 'peer_target must be provided if sessions is provided'],
      ['/sessions/trip/context?peer_target=user&sessions=trip&limit_to_session=true', '`sessions` and `limit_to_session` are mutually exclusive'],
      ['/sessions/trip/context?peer_target=user&sessions=other', 'session_id must be included in sessions'],
    ];
    for (const [path, detail] of checks) {
      const refused = await api.get(`/v3/workspaces/${ws}${path}`);
      expect(refused.status).toBe(422);
      expect(refused.body).toEqual({ detail });
    }
    const many = await api.get(`/v3/workspaces/${ws}/sessions/trip/context?peer_target=user${'&sessions=trip'.repeat(1001)}`);
    expect(many.status).toBe(422);
    expect(many.body).toEqual({ detail: 'sessions supports at most 1000 sessions per request' });
  });

  it('checks its parameters', async () => {
    const ws = uniqueId();
    const over = await api.get(`/v3/workspaces/${ws}/sessions/s/context?tokens=100001`);
    expect(over.body.detail[0]).toMatchObject({ type: 'less_than_equal', loc: ['query', 'tokens'], input: '100001' });
    const perspective = await api.get(`/v3/workspaces/${ws}/sessions/s/context?peer_perspective=a`);
    expect(perspective.status).toBe(422);
    expect(perspective.body).toEqual({ detail: 'peer_target must be provided if peer_perspective is provided' });
    const distance = await api.get(`/v3/workspaces/${ws}/sessions/s/context?search_max_distance=1.5`);
    expect(distance.body.detail[0]).toMatchObject({ type: 'less_than_equal', msg: 'Input should be less than or equal to 1' });
  });

  it('answers summaries with nulls until summaries exist', async () => {
    const response = await api.get(`/v3/workspaces/${uniqueId()}/sessions/s/summaries`);
    expect(response.body).toEqual({ id: 's', short_summary: null, long_summary: null });
  });

  it('serves the v2 twins', async () => {
    const ws = uniqueId();
    await seed(ws);
    expect((await api.post(`/v2/workspaces/${ws}/search`, { query: 'hiking' })).body).toHaveLength(3);
    const context = await api.get(`/v2/workspaces/${ws}/sessions/s1/context?last_message=x`);
    expect(context.body.messages).toHaveLength(3);
  });
});
