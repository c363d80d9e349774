import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tokenCount } from '../../../src/domain/text/token-count.js';
import { buildTestApp, uniqueId, type TestApi } from '../../support/test-app.js';

let api: TestApi;
beforeAll(async () => {
  api = await buildTestApp();
});
afterAll(() => api.close());

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{6})?Z$/;
const ID = /^[A-Za-z0-9_-]{21}$/;

/** A workspace with peers alice, bob and carol, and sessions s1 and s2 they belong to. */
async function setUp(): Promise<string> {
  const ws = uniqueId();
  for (const session of ['s1', 's2']) {
    const response = await api.post(`/v3/workspaces/${ws}/sessions`, { id: session, peers: { alice: {}, bob: {}, carol: {} } });
    expect(response.status).toBe(201);
  }
  return ws;
}

type Item = { content: string; observer_id: string; observed_id: string; session_id?: string | null };

async function create(ws: string, conclusions: Item[]) {
  const response = await api.post(`/v3/workspaces/${ws}/conclusions`, { conclusions });
  expect(response.status).toBe(201);
  return response.body as { id: string; content: string; session_id: string | null }[];
}

async function list(ws: string, body?: unknown, query = '') {
  return api.post(`/v3/workspaces/${ws}/conclusions/list${query}`, body);
}

const contents = (items: { content: string }[]) => items.map((c) => c.content);

describe('POST /v3/workspaces/{w}/conclusions', () => {
  it('creates conclusions in request order with 201, level "explicit", and session_id null when absent', async () => {
    const ws = await setUp();
    const response = await api.post(`/v3/workspaces/${ws}/conclusions`, {
      conclusions: [
        { content: 'Alice likes tea', observer_id: 'bob', observed_id: 'alice', session_id: 's1' },
        { content: 'Alice lives in Oslo', observer_id: 'alice', observed_id: 'alice' },
      ],
    });
    expect(response.status).toBe(201);
    expect(response.body).toHaveLength(2);
    const [first, second] = response.body;
    expect(Object.keys(first)).toEqual(['id', 'content', 'observer_id', 'observed_id', 'session_id', 'level', 'source_ids', 'times_derived', 'created_at', 'valid_from', 'superseded_at', 'superseded_by']);
    expect(first).toMatchObject({ content: 'Alice likes tea', observer_id: 'bob', observed_id: 'alice', session_id: 's1', level: 'explicit', source_ids: null, times_derived: 1 });
    expect(second).toMatchObject({ content: 'Alice lives in Oslo', observer_id: 'alice', observed_id: 'alice', session_id: null, level: 'explicit' });
    expect(first.id).toMatch(ID);
    expect(second.id).toMatch(ID);
    expect(first.id).not.toBe(second.id);
    expect(first.created_at).toMatch(ISO);
    // one request, one time (contract §1.5)
    expect(second.created_at).toBe(first.created_at);
  });

  it('accepts the key `observations` and removes NUL characters from content', async () => {
    const ws = await setUp();
    const response = await api.post(`/v3/workspaces/${ws}/conclusions`, {
      observations: [{ content: 'tea\u0000 time', observer_id: 'alice', observed_id: 'bob' }],
    });
    expect(response.status).toBe(201);
    expect(response.body[0].content).toBe('tea time');
  });

  it('answers 404 for a missing or deleted session and for missing peers, and writes nothing', async () => {
    const ws = await setUp();
    const good = { content: 'fine', observer_id: 'alice', observed_id: 'bob' };
    const cases: [Item, string][] = [
      [{ ...good, session_id: 'nope' }, `Session nope not found in workspace ${ws}`],
      [{ ...good, observer_id: 'dave' }, `Peer dave not found in workspace ${ws}`],
      [{ ...good, observed_id: 'erin' }, `Peer erin not found in workspace ${ws}`],
      // in request order: the session, then the observer, then the observed peer
      [{ ...good, session_id: 'nope', observer_id: 'dave' }, `Session nope not found in workspace ${ws}`],
      [{ ...good, observer_id: 'dave', observed_id: 'erin' }, `Peer dave not found in workspace ${ws}`],
    ];
    for (const [bad, detail] of cases) {
      const response = await api.post(`/v3/workspaces/${ws}/conclusions`, { conclusions: [good, bad] });
      expect(response.status).toBe(404);
      expect(response.body).toEqual({ detail });
    }
    expect((await api.delete(`/v3/workspaces/${ws}/sessions/s2`)).status).toBe(202);
    const inactive = await api.post(`/v3/workspaces/${ws}/conclusions`, { conclusions: [{ ...good, session_id: 's2' }] });
    expect(inactive.status).toBe(404);
    expect(inactive.body).toEqual({ detail: `Session s2 not found in workspace ${ws}` });
    // the valid first item of each failed batch was not stored
    expect((await list(ws)).body.total).toBe(0);

    const unknownWorkspace = uniqueId();
    const none = await api.post(`/v3/workspaces/${unknownWorkspace}/conclusions`, { conclusions: [good] });
    expect(none.status).toBe(404);
    expect(none.body).toEqual({ detail: `Peer alice not found in workspace ${unknownWorkspace}` });
  });

  it('validates the batch and each conclusion with the pydantic body', async () => {
    const ws = await setUp();
    const url = `/v3/workspaces/${ws}/conclusions`;
    const item = { content: 'x', observer_id: 'alice', observed_id: 'bob' };

    expect((await api.post(url, {})).body.detail).toEqual([{ type: 'missing', loc: ['body', 'conclusions'], msg: 'Field required', input: {} }]);
    expect((await api.post(url, { conclusions: [] })).body.detail).toEqual([
      {
        type: 'too_short',
        loc: ['body', 'conclusions'],
        msg: 'List should have at least 1 item after validation, not 0',
        input: [],
        ctx: { field_type: 'List', min_length: 1, actual_length: 0 },
      },
    ]);
    const tooMany = await api.post(url, { conclusions: Array.from({ length: 101 }, () => item) });
    expect(tooMany.status).toBe(422);
    expect(tooMany.body.detail[0]).toMatchObject({ type: 'too_long', loc: ['body', 'conclusions'], ctx: { max_length: 100, actual_length: 101 } });

    const fields = await api.post(url, { conclusions: [{ content: '' }, { ...item, session_id: 5 }] });
    expect(fields.status).toBe(422);
    expect(fields.body.detail).toEqual([
      {
        type: 'string_too_short',
        loc: ['body', 'conclusions', 0, 'content'],
        msg: 'String should have at least 1 character',
        input: '',
        ctx: { min_length: 1 },
      },
      { type: 'missing', loc: ['body', 'conclusions', 0, 'observer_id'], msg: 'Field required', input: { content: '' } },
      { type: 'missing', loc: ['body', 'conclusions', 0, 'observed_id'], msg: 'Field required', input: { content: '' } },
      { type: 'string_type', loc: ['body', 'conclusions', 1, 'session_id'], msg: 'Input should be a valid string', input: 5 },
    ]);

    const long = 'a'.repeat(65_536);
    const tooLong = await api.post(url, { conclusions: [{ ...item, content: long }] });
    expect(tooLong.body.detail).toEqual([
      {
        type: 'string_too_long',
        loc: ['body', 'conclusions', 0, 'content'],
        msg: 'String should have at most 65535 characters',
        input: long,
        ctx: { max_length: 65_535 },
      },
    ]);
    expect((await list(ws)).body.total).toBe(0);
  });

  it('refuses content over 8192 tokens with a value_error naming the count', async () => {
    const ws = await setUp();
    const content = 'one two three four five six seven eight nine ten '.repeat(900);
    const tokens = tokenCount(content);
    expect(content.length).toBeLessThanOrEqual(65_535);
    expect(tokens).toBeGreaterThan(8192);
    const response = await api.post(`/v3/workspaces/${ws}/conclusions`, {
      conclusions: [{ content: 'short', observer_id: 'alice', observed_id: 'bob' }, { content, observer_id: 'alice', observed_id: 'bob' }],
    });
    expect(response.status).toBe(422);
    expect(response.body.detail).toEqual([
      {
        type: 'value_error',
        loc: ['body', 'conclusions', 1, 'content'],
        msg: `Value error, Content exceeds maximum embedding token limit of 8192 (got ${tokens} tokens)`,
        input: content,
        ctx: { error: {} },
      },
    ]);
    expect((await list(ws)).body.total).toBe(0);
    // more than 8192 bytes but at most 8192 tokens is fine (the tokenizer decides, not the length)
    const fits = '€'.repeat(3000);
    expect(Buffer.byteLength(fits)).toBeGreaterThan(8192);
    expect(tokenCount(fits)).toBeLessThanOrEqual(8192);
    expect((await api.post(`/v3/workspaces/${ws}/conclusions`, { conclusions: [{ content: fits, observer_id: 'alice', observed_id: 'bob' }] })).status).toBe(201);
  });
});

describe('POST /v3/workspaces/{w}/conclusions/list', () => {
  it("a collection's list (the SDK's filter of observer and observed) totals its conclusions, not others' or deleted ones", async () => {
    const ws = await setUp();
    const pair = { observer_id: 'alice', observed_id: 'bob' };
    const made = await create(ws, Array.from({ length: 5 }, (_, i) => ({ content: `pair ${i}`, ...pair, session_id: i % 2 === 0 ? 's1' : null })));
    await create(ws, [
      { content: 'other observer', observer_id: 'bob', observed_id: 'bob' },
      { content: 'other observed', observer_id: 'alice', observed_id: 'carol' },
    ]);
    expect((await api.delete(`/v3/workspaces/${ws}/conclusions/${made[1].id}`)).status).toBe(204);
    /** Every item of the filtered list, two at a time, and each page's total. */
    const readAll = async (filters: Record<string, unknown>) => {
      const read: string[] = [];
      const totals: number[] = [];
      for (let page = 1; ; page++) {
        const response = await list(ws, { filters }, `?page=${page}&size=2`);
        expect(response.status, response.text).toBe(200);
        totals.push(response.body.total);
        read.push(...contents(response.body.items));
        if (response.body.items.length < 2) return { read, totals };
      }
    };
    for (const filters of [pair, { observer: 'alice', observed: 'bob' }, { observed_id: 'bob', observer_id: 'alice' }]) {
      const { read, totals } = await readAll(filters);
      expect(read).toEqual(['pair 4', 'pair 3', 'pair 2', 'pair 0']);
      expect(totals).toEqual([4, 4, 4]);
    }
    // more than the collection in the filter: counted
    const inSession = await readAll({ ...pair, session_id: 's1' });
    expect(inSession.read).toEqual(['pair 4', 'pair 2', 'pair 0']);
    expect(inSession.totals).toEqual([3, 3]);
    // a collection with nothing in it
    expect((await list(ws, { filters: { observer_id: 'carol', observed_id: 'alice' } })).body).toMatchObject({ items: [], total: 0, pages: 0 });
    // the whole workspace: every collection's (the deleted one not counted)
    const everything = await list(ws, undefined, '?size=2&page=3');
    expect(contents(everything.body.items)).toEqual(['pair 2', 'pair 0']);
    expect(everything.body).toMatchObject({ total: 6, pages: 3 });
  });

  it("batches written at once into the same collections, in different orders, all land and are all counted", async () => {
    const ws = await setUp();
    const pairs = [
      { observer_id: 'alice', observed_id: 'bob' },
      { observer_id: 'bob', observed_id: 'alice' },
      { observer_id: 'carol', observed_id: 'alice' },
    ];
    const batches = Array.from({ length: 12 }, (_, b) =>
      Array.from({ length: 9 }, (_, i) => ({ content: `b${b} c${i}`, ...pairs[(b % 2 === 0 ? i : 8 - i) % 3] })),
    );
    const responses = await Promise.all(batches.map((conclusions) => api.post(`/v3/workspaces/${ws}/conclusions`, { conclusions })));
    expect(responses.map((r) => r.status)).toEqual(batches.map(() => 201));
    for (const pair of pairs) expect((await list(ws, { filters: pair }, '?size=1')).body.total).toBe(36);
    expect((await list(ws, undefined, '?size=1')).body.total).toBe(108);
  });

  it('lists newest first, reverse gives oldest first, with paging totals', async () => {
    const ws = await setUp();
    await create(ws, [
      { content: 'c1', observer_id: 'alice', observed_id: 'bob' },
      { content: 'c2', observer_id: 'alice', observed_id: 'bob' },
    ]);
    await create(ws, [{ content: 'c3', observer_id: 'bob', observed_id: 'alice', session_id: 's1' }]);

    const newest = await list(ws);
    expect(newest.status).toBe(200);
    expect(Object.keys(newest.body)).toEqual(['items', 'total', 'page', 'size', 'pages']);
    expect(contents(newest.body.items)).toEqual(['c3', 'c2', 'c1']);
    expect(newest.body).toMatchObject({ total: 3, page: 1, size: 50, pages: 1 });
    expect(contents((await list(ws, undefined, '?reverse=true')).body.items)).toEqual(['c1', 'c2', 'c3']);

    const page2 = await list(ws, { filters: null }, '?page=2&size=2');
    expect(contents(page2.body.items)).toEqual(['c1']);
    expect(page2.body).toMatchObject({ total: 3, page: 2, size: 2, pages: 2 });
    const past = await list(ws, undefined, '?page=5&size=2');
    expect(past.body).toMatchObject({ items: [], total: 3, pages: 2 });

    const bad = await list(ws, undefined, '?size=101&reverse=maybe');
    expect(bad.status).toBe(422);
    expect(bad.body.detail.map((d: { loc: unknown }) => d.loc)).toEqual([
      ['query', 'size'],
      ['query', 'reverse'],
    ]);
    // another workspace sees none of them
    expect((await list(uniqueId())).body).toEqual({ items: [], total: 0, page: 1, size: 50, pages: 0 });
  });

  it('filters on the Document model: public and stored column names, operators, logic', async () => {
    const ws = await setUp();
    const created = await create(ws, [
      { content: 'Alice drinks green tea', observer_id: 'bob', observed_id: 'alice', session_id: 's1' },
      { content: 'Alice runs marathons', observer_id: 'bob', observed_id: 'alice', session_id: 's2' },
      { content: 'Bob plays chess', observer_id: 'alice', observed_id: 'bob' },
      { content: 'Carol sings', observer_id: 'carol', observed_id: 'carol', session_id: 's1' },
    ]);
    const filtered = async (filters: unknown) => {
      const response = await list(ws, { filters }, '?reverse=true');
      expect(response.status).toBe(200);
      return contents(response.body.items);
    };
    expect(await filtered({ observer_id: 'bob', observed_id: 'alice' })).toEqual(['Alice drinks green tea', 'Alice runs marathons']);
    expect(await filtered({ observer: 'bob', observed: 'alice', session_name: 's2' })).toEqual(['Alice runs marathons']);
    expect(await filtered({ session_id: 's1' })).toEqual(['Alice drinks green tea', 'Carol sings']);
    expect(await filtered({ session_id: null })).toEqual(['Bob plays chess']);
    expect(await filtered({ content: { icontains: 'ALICE' }, NOT: [{ session_id: 's1' }] })).toEqual(['Alice runs marathons']);
    expect(await filtered({ OR: [{ observer_id: 'carol' }, { observed_id: 'bob' }] })).toEqual(['Bob plays chess', 'Carol sings']);
    expect(await filtered({ id: [created[0].id, created[3].id] })).toEqual(['Alice drinks green tea', 'Carol sings']);
    expect(await filtered({ level: 'explicit', workspace_id: ws })).toHaveLength(4);
    expect(await filtered({ level: 'deductive' })).toEqual([]);
    expect(await filtered({ created_at: { gte: '2000-01-01' } })).toHaveLength(4);
    expect(await filtered({ metadata: {} })).toHaveLength(4);
    expect(await filtered({})).toHaveLength(4);

    const unknown = await list(ws, { filters: { peer_id: 'alice' } });
    expect(unknown.status).toBe(422);
    expect(unknown.body).toEqual({ detail: "Column 'peer_id' does not exist on Document" });
    const badOp = await list(ws, { filters: { content: { icontains: 'x', like: 'x' } } });
    expect(badOp.body).toEqual({ detail: 'Unsupported comparison operator: like' });
    const notObject = await list(ws, { filters: 'x' });
    expect(notObject.body.detail).toEqual([{ type: 'dict_type', loc: ['body', 'filters'], msg: 'Input should be a valid dictionary', input: 'x' }]);
  });
});

describe('POST /v3/workspaces/{w}/conclusions/query', () => {
  it('ranks the pair’s conclusions by shared words, best first, limited by top_k', async () => {
    const ws = await setUp();
    await create(ws, [
      { content: 'Alice enjoys hiking in the mountains', observer_id: 'bob', observed_id: 'alice' },
      { content: 'Alice owns a cat', observer_id: 'bob', observed_id: 'alice', session_id: 's1' },
      { content: 'Alice went hiking with her cat in the mountains', observer_id: 'bob', observed_id: 'alice', session_id: 's2' },
      { content: 'Alice hates cooking', observer_id: 'bob', observed_id: 'alice' },
      // another observer's conclusion never shows up
      { content: 'Alice hiking mountains cat', observer_id: 'carol', observed_id: 'alice' },
    ]);
    const url = `/v3/workspaces/${ws}/conclusions/query`;
    const pair = { observer_id: 'bob', observed_id: 'alice' };

    const ranked = await api.post(url, { query: 'hiking cat mountains', filters: pair });
    expect(ranked.status).toBe(200);
    expect(contents(ranked.body)).toEqual([
      'Alice went hiking with her cat in the mountains',
      'Alice enjoys hiking in the mountains',
      'Alice owns a cat',
    ]);
    expect(Object.keys(ranked.body[0])).toEqual(['id', 'content', 'observer_id', 'observed_id', 'session_id', 'level', 'source_ids', 'times_derived', 'created_at', 'valid_from', 'superseded_at', 'superseded_by']);
    expect(contents((await api.post(url, { query: 'hiking cat mountains', top_k: 1, filters: pair })).body)).toEqual([
      'Alice went hiking with her cat in the mountains',
    ]);
    // stored column names work too, and other filters narrow
    const narrowed = await api.post(url, { query: 'CAT', distance: 0.5, filters: { observer: 'bob', observed: 'alice', session_id: 's1' } });
    expect(contents(narrowed.body)).toEqual(['Alice owns a cat']);
    expect((await api.post(url, { query: 'submarine', filters: pair })).body).toEqual([]);
    expect((await api.post(url, { query: '"OR* (', filters: pair })).body).toEqual([]);
  });

  it('requires observer and observed in the filters (422 string, the newer reference\'s longer text; v2 keeps the short one)', async () => {
    const ws = await setUp();
    const url = `/v3/workspaces/${ws}/conclusions/query`;
    const detail =
      'observer and observed must be specified for semantic search. Pass them inside the \'filters\' object, e.g. ' +
      '{"query": "...", "filters": {"observer": "alice", "observed": "bob"}}. Both \'observer\'/\'observer_id\' and \'observed\'/\'observed_id\' are accepted.';
    for (const filters of [undefined, null, {}, { observer_id: 'bob' }, { observed: 'alice' }, { observer_id: '', observed_id: 'alice' }]) {
      const response = await api.post(url, { query: 'x', ...(filters === undefined ? {} : { filters }) });
      expect(response.status).toBe(422);
      expect(response.body).toEqual({ detail });
    }
    const notId = await api.post(url, { query: 'x', filters: { observer_id: ['bob'], observed_id: 'alice' } });
    expect(notId.status).toBe(422);
    expect(notId.body).toEqual({ detail: 'observer and observed must each be a single peer id (a string) for semantic search' });
  });

  it('validates query, top_k and distance', async () => {
    const ws = await setUp();
    const url = `/v3/workspaces/${ws}/conclusions/query`;
    expect((await api.post(url, {})).body.detail).toEqual([{ type: 'missing', loc: ['body', 'query'], msg: 'Field required', input: {} }]);
    const bounds = await api.post(url, { query: 'x', top_k: 101, distance: 1.5 });
    expect(bounds.body.detail).toEqual([
      { type: 'less_than_equal', loc: ['body', 'top_k'], msg: 'Input should be less than or equal to 100', input: 101, ctx: { le: 100 } },
      { type: 'less_than_equal', loc: ['body', 'distance'], msg: 'Input should be less than or equal to 1', input: 1.5, ctx: { le: 1 } },
    ]);
    expect((await api.post(url, { query: 'x', top_k: 0 })).body.detail[0]).toMatchObject({ type: 'greater_than_equal', loc: ['body', 'top_k'] });
  });
});

describe('DELETE /v3/workspaces/{w}/conclusions/{id}', () => {
  it('soft-deletes with 204: gone from list and query; a second delete is 404', async () => {
    const ws = await setUp();
    const [kept, removed] = await create(ws, [
      { content: 'Bob likes jazz', observer_id: 'alice', observed_id: 'bob' },
      { content: 'Bob likes jazz festivals', observer_id: 'alice', observed_id: 'bob' },
    ]);
    const deleted = await api.delete(`/v3/workspaces/${ws}/conclusions/${removed.id}`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');

    expect((await list(ws)).body.items.map((c: { id: string }) => c.id)).toEqual([kept.id]);
    expect((await list(ws, { filters: { id: removed.id } })).body.total).toBe(0);
    // soft: the row stays, marked deleted
    const rows = await api.database.driver.all<{ id: string; deleted_at: unknown }>(
      'SELECT id, deleted_at FROM conclusions WHERE workspace_id = ? ORDER BY pk',
      [ws],
    );
    expect(rows.map((r) => [r.id, r.deleted_at !== null])).toEqual([
      [kept.id, false],
      [removed.id, true],
    ]);
    const queried = await api.post(`/v3/workspaces/${ws}/conclusions/query`, { query: 'jazz', filters: { observer_id: 'alice', observed_id: 'bob' } });
    expect(queried.body.map((c: { id: string }) => c.id)).toEqual([kept.id]);

    const again = await api.delete(`/v3/workspaces/${ws}/conclusions/${removed.id}`);
    expect(again.status).toBe(404);
    expect(again.body).toEqual({ detail: `Document ${removed.id} not found or does not belong to workspace ${ws}` });
    // an id of another workspace is not found here
    const other = uniqueId();
    const elsewhere = await api.delete(`/v3/workspaces/${other}/conclusions/${kept.id}`);
    expect(elsewhere.status).toBe(404);
    expect(elsewhere.body).toEqual({ detail: `Document ${kept.id} not found or does not belong to workspace ${other}` });
    expect((await list(ws)).body.total).toBe(1);
  });
});

describe('GET /v3/workspaces/{w}/conclusions/{id}', () => {
  it('reads one live conclusion of the workspace; 404 for a deleted one or one of another workspace', async () => {
    const ws = await setUp();
    const [made] = await create(ws, [{ content: 'Carol speaks Basque', observer_id: 'alice', observed_id: 'carol', session_id: 's2' }]);
    const got = await api.get(`/v3/workspaces/${ws}/conclusions/${made.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(made);
    expect(Object.keys(got.body).sort()).toEqual(['content', 'created_at', 'id', 'level', 'observed_id', 'observer_id', 'session_id', 'source_ids', 'superseded_at', 'superseded_by', 'times_derived', 'valid_from']);

    const other = uniqueId();
    const elsewhere = await api.get(`/v3/workspaces/${other}/conclusions/${made.id}`);
    expect(elsewhere.status).toBe(404);
    expect(elsewhere.body).toEqual({ detail: `Document ${made.id} not found or does not belong to workspace ${other}` });
    expect((await api.delete(`/v3/workspaces/${ws}/conclusions/${made.id}`)).status).toBe(204);
    const gone = await api.get(`/v3/workspaces/${ws}/conclusions/${made.id}`);
    expect(gone.status).toBe(404);
    expect(gone.body).toEqual({ detail: `Document ${made.id} not found or does not belong to workspace ${ws}` });
  });
});

describe('conclusions auth (workspace scope)', () => {
  let authed: TestApi;
  beforeAll(async () => {
    authed = await buildTestApp({ AUTH_USE_AUTH: 'true' });
  });
  afterAll(() => authed.close());

  it('accepts admin and workspace tokens of the workspace; refuses the rest with 401', async () => {
    const ws = uniqueId();
    const admin = authed.token({ isAdmin: true });
    await authed.post(`/v3/workspaces/${ws}/sessions`, { id: 's', peers: { alice: {}, bob: {} } }, { token: admin });
    const body = { conclusions: [{ content: 'x', observer_id: 'alice', observed_id: 'bob' }] };
    const url = `/v3/workspaces/${ws}/conclusions`;

    expect((await authed.post(url, body)).body).toEqual({ detail: 'No access token provided' });
    expect((await authed.post(url, body, { token: admin })).status).toBe(201);
    const workspaceToken = authed.token({ workspaceId: ws });
    // another content: a repeat would be merged into the first (deduplication)
    expect((await authed.post(url, { conclusions: [{ content: 'y', observer_id: 'alice', observed_id: 'bob' }] }, { token: workspaceToken })).status).toBe(201);
    expect((await authed.post(`${url}/list`, undefined, { token: workspaceToken })).body.total).toBe(2);

    for (const token of [authed.token({ workspaceId: uniqueId() }), authed.token({ workspaceId: ws, peerId: 'alice' }), authed.token({ workspaceId: ws, sessionId: 's' })]) {
      for (const response of [
        await authed.post(url, body, { token }),
        await authed.post(`${url}/list`, undefined, { token }),
        await authed.post(`${url}/query`, { query: 'x', filters: { observer_id: 'alice', observed_id: 'bob' } }, { token }),
        await authed.delete(`${url}/anything`, undefined, { token }),
        await authed.get(`${url}/anything`, { token }),
        await authed.get(`${url}/anything/history`, { token }),
        await authed.post(`${url}/list?include_superseded=true`, undefined, { token }),
      ]) {
        expect(response.status).toBe(401);
        expect(response.body).toEqual({ detail: 'JWT not permissioned for this resource' });
      }
    }
    expect((await authed.post(`${url}/list`, undefined, { token: admin })).body.total).toBe(2);
  });
});
