/*
 * The official TypeScript SDK 1.5.0 (`honcho-sdk-v2`, an alias of `@honcho-ai/sdk@1.5.0`, built on
 * the Stainless client `@honcho-ai/core`, talks to /v2) driving the memory routes of issue 4
 * against the real server on an ephemeral port: messages (created at `.../messages/` with the
 * trailing slash), listing, get and metadata update, file upload, search, session context and
 * summaries, observations, peer cards, working representation and peer context, deriver status,
 * and chat's refusal without a language model. The SDK is used unmodified; the server records
 * every exchange, so a failure names the exact request the SDK made and what it got back.
 *
 * The high-level v2 SDK has no calls for observations, setting a peer card, peer context, or a
 * single message; those go through `honcho.core`, the Stainless client the SDK exposes for
 * "functionality not exposed through this SDK". Expected values come from what each test set up;
 * token counts are computed here with the o200k_base encoder.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Honcho, type Message } from 'honcho-sdk-v2';
import { collect, contents, describeExchange, expectAllOk, rejection, renderedTime, routesCalled, startSdkServer, tokens, type Exchange, type SdkServer } from '../support/sdk-server.js';
import { uniqueId } from '../support/test-app.js';

let server: SdkServer;
beforeAll(async () => {
  server = await startSdkServer();
});
afterAll(async () => {
  // SDK_TRACE=1 prints every exchange the SDK made, for reports and debugging.
  if (process.env.SDK_TRACE) console.log(server.exchanges.map(describeExchange).join('\n'));
  await server?.close();
});

/**
 * The constructor fires `POST /v2/workspaces` without awaiting it; `getMetadata()` performs the
 * same get-or-create and waits for it. Returning once the server has answered both keeps the
 * constructor's request out of the exchanges a test inspects afterwards.
 */
async function client(workspaceId: string): Promise<Honcho> {
  // maxRetries 0: a 5xx must surface as the error it is, not as three identical requests.
  const honcho = new Honcho({ baseURL: server.baseURL, workspaceId, maxRetries: 0 });
  await honcho.getMetadata();
  for (let i = 0; i < 200 && server.exchanges.filter((e) => isWorkspaceCreate(e, workspaceId)).length < 2; i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return honcho;
}

function isWorkspaceCreate(e: Exchange, id: string): boolean {
  return e.path === '/v2/workspaces' && typeof e.requestBody === 'object' && (e.requestBody as { id?: unknown } | null)?.id === id;
}


describe('@honcho-ai/sdk 1.5.0 over /v2: messages', () => {
  it('adds a single message and a batch at .../messages/ (trailing slash, 200); senders join the session', async () => {
    const workspace = uniqueId('sdk2m');
    const honcho = await client(workspace);
    const mark = server.exchanges.length;
    const session = await honcho.session('chat');
    const alice = await honcho.peer('alice');

    // the v2 SDK discards what the server answers: addMessages resolves to nothing
    expect(await session.addMessages(alice.message('Hello, world!', { metadata: { lang: 'en' } }))).toBeUndefined();
    await session.addMessages([
      { peer_id: 'bob', content: 'The quick brown fox jumps over the lazy dog.' },
      { peer_id: 'carol', content: '' },
      alice.message('Café ☕ at 10?', { created_at: new Date('2024-05-01T09:30:00Z') }),
    ]);

    const listed = await collect<Message>(await session.getMessages());
    expect(listed.map((m) => [m.peer_id, m.content, m.token_count, m.session_id, m.workspace_id])).toEqual([
      ['alice', 'Hello, world!', 4, 'chat', workspace],
      ['bob', 'The quick brown fox jumps over the lazy dog.', 10, 'chat', workspace],
      ['carol', '', 0, 'chat', workspace],
      ['alice', 'Café ☕ at 10?', tokens('Café ☕ at 10?'), 'chat', workspace],
    ]);
    expect(listed[0].metadata).toEqual({ lang: 'en' });
    expect(new Date(listed[3].created_at).toISOString()).toBe('2024-05-01T09:30:00.000Z');
    expect((await session.getPeers()).map((p) => p.id).sort()).toEqual(['alice', 'bob', 'carol']);

    const exchanges = server.since(mark);
    expectAllOk(exchanges);
    const messagesPath = `/v2/workspaces/${workspace}/sessions/chat/messages`;
    const creates = exchanges.filter((e) => e.method === 'POST' && e.path.startsWith(messagesPath) && !e.path.endsWith('/list'));
    expect(creates.map((e) => [e.path, e.status])).toEqual([
      [`/v2/workspaces/${workspace}/sessions/chat/messages/`, 200],
      [`/v2/workspaces/${workspace}/sessions/chat/messages/`, 200],
    ]);
    expect(creates[0].requestBody).toEqual({ messages: [{ peer_id: 'alice', content: 'Hello, world!', metadata: { lang: 'en' } }] });
    expect((creates[1].requestBody as { messages: unknown[] }).messages[2]).toEqual({
      peer_id: 'alice',
      content: 'Café ☕ at 10?',
      created_at: '2024-05-01T09:30:00.000Z',
    });
    expect((creates[1].responseBody as Message[]).map((m) => m.content)).toEqual([
      'The quick brown fox jumps over the lazy dog.',
      '',
      'Café ☕ at 10?',
    ]);
  });

  it('lists messages across pages (through honcho.core for page size, reverse and filters)', async () => {
    const workspace = uniqueId('sdk2m');
    const honcho = await client(workspace);
    const mark = server.exchanges.length;
    const session = await honcho.session('thread');
    const script: [string, string, string][] = [
      ['alice', 'Where should we travel this summer?', 'travel'],
      ['bob', 'Somewhere with mountains.', 'travel'],
      ['alice', 'Did you feed the cat?', 'home'],
      ['bob', 'Yes, twice.', 'home'],
      ['alice', 'Then the Alps it is.', 'travel'],
    ];
    await session.addMessages(script.map(([peer_id, content, topic]) => ({ peer_id, content, metadata: { topic } })));
    const all = script.map(([, content]) => content);

    const page = await session.getMessages();
    expect([page.total, page.page, page.size, page.pages, page.length]).toEqual([5, 1, 50, 1, 5]);
    expect(contents(page.items)).toEqual(all);

    const messages = honcho.core.workspaces.sessions.messages;
    expect(contents(await collect(messages.list(workspace, 'thread', { size: 2 })))).toEqual(all);
    expect(contents(await collect(messages.list(workspace, 'thread', { size: 2, reverse: true })))).toEqual([...all].reverse());
    expect(contents(await collect(messages.list(workspace, 'thread', { filters: { peer_id: 'bob' } })))).toEqual([
      'Somewhere with mountains.',
      'Yes, twice.',
    ]);
    expect(contents(await collect(messages.list(workspace, 'thread', { filters: { metadata: { topic: 'home' } } })))).toEqual([
      'Did you feed the cat?',
      'Yes, twice.',
    ]);

    const exchanges = server.since(mark);
    expectAllOk(exchanges);
    const lists = exchanges.filter((e) => e.path === `/v2/workspaces/${workspace}/sessions/thread/messages/list`);
    expect(lists.slice(0, 4).map((e) => [e.query, e.requestBody])).toEqual([
      ['', {}],
      ['size=2', {}],
      ['page=2&size=2', {}],
      ['page=3&size=2', {}],
    ]);
    expect(lists[4].query).toBe('reverse=true&size=2');
    expect(lists.at(-1)?.requestBody).toEqual({ filters: { metadata: { topic: 'home' } } });
  });

  it('session.getMessages(filters) sends the filter as the body itself, not under `filters`: it does not filter', async () => {
    const workspace = uniqueId('sdk2m');
    const honcho = await client(workspace);
    const session = await honcho.session('thread');
    await session.addMessages([
      { peer_id: 'alice', content: 'from alice' },
      { peer_id: 'bob', content: 'from bob' },
    ]);
    const mark = server.exchanges.length;

    // SDK 1.5.0 calls messages.list(w, s, filters): the filter keys become the list body. The
    // server reads that body as `{filters?}` and ignores other keys, so nothing is filtered (an
    // SDK defect; `honcho.core...messages.list(w, s, { filters })` filters, as tested above).
    const page = await session.getMessages({ peer_id: 'bob' });
    expect(contents(page.items)).toEqual(['from alice', 'from bob']);
    expect(server.since(mark).map((e) => [e.method, e.path, e.requestBody, e.status])).toEqual([
      ['POST', `/v2/workspaces/${workspace}/sessions/thread/messages/list`, { peer_id: 'bob' }, 200],
    ]);
  });

  it('gets a message and replaces its metadata, by message object or by id and session', async () => {
    const workspace = uniqueId('sdk2m');
    const honcho = await client(workspace);
    const mark = server.exchanges.length;
    const session = await honcho.session('edits');
    await session.addMessages([
      { peer_id: 'alice', content: 'first', metadata: { keep: true } },
      { peer_id: 'alice', content: 'second', metadata: { draft: true } },
    ]);
    const [first, second] = (await session.getMessages()).items;

    const fetched = await honcho.core.workspaces.sessions.messages.retrieve(workspace, 'edits', second.id);
    expect(fetched).toEqual(second);

    const updated = await honcho.updateMessage(second, { v: 2, reviewed: 'yes' });
    expect(updated).toMatchObject({ id: second.id, content: 'second', metadata: { v: 2, reviewed: 'yes' } });
    const byId = await honcho.updateMessage(first.id, { edited: true }, 'edits');
    expect(byId).toMatchObject({ id: first.id, content: 'first', metadata: { edited: true } });
    expect((await session.getMessages()).items.map((m) => m.metadata)).toEqual([{ edited: true }, { v: 2, reviewed: 'yes' }]);

    const missing = await rejection(honcho.core.workspaces.sessions.messages.retrieve(workspace, 'edits', 'no-such-message'));
    expect((missing as Error).constructor.name).toBe('NotFoundError');
    expect(missing).toMatchObject({ status: 404, error: { detail: 'Message with ID no-such-message not found' } });

    const exchanges = server.since(mark);
    expectAllOk(exchanges.filter((e) => e.status !== 404));
    expect(exchanges.filter((e) => e.method === 'PUT').map((e) => [e.path, e.requestBody])).toEqual([
      [`/v2/workspaces/${workspace}/sessions/edits/messages/${second.id}`, { metadata: { v: 2, reviewed: 'yes' } }],
      [`/v2/workspaces/${workspace}/sessions/edits/messages/${first.id}`, { metadata: { edited: true } }],
    ]);
    const ids = { workspace_id: workspace, session_id: 'edits', message_id: [first.id, second.id, 'no-such-message'] };
    expect(routesCalled(exchanges, ids)).toEqual([
      'POST /v2/workspaces/{workspace_id}/sessions/{session_id}/messages/',
      'POST /v2/workspaces/{workspace_id}/sessions/{session_id}/messages/list',
      'GET /v2/workspaces/{workspace_id}/sessions/{session_id}/messages/{message_id}',
      'PUT /v2/workspaces/{workspace_id}/sessions/{session_id}/messages/{message_id}',
    ]);
  });
});

describe('@honcho-ai/sdk 1.5.0 over /v2: file upload', () => {
  it('uploads a text file as messages (200) from the given peer', async () => {
    const workspace = uniqueId('sdk2u');
    const honcho = await client(workspace);
    const mark = server.exchanges.length;
    const session = await honcho.session('docs');
    const text = 'Meeting notes\n\nAlice will draft the proposal.\nBob reviews it on Monday.';

    const uploaded = await session.uploadFile(new File([text], 'notes.txt', { type: 'text/plain' }), 'alice');
    expect(uploaded.map((m) => [m.content, m.peer_id, m.session_id, m.token_count])).toEqual([[text, 'alice', 'docs', tokens(text)]]);
    const json = await session.uploadFile(new File(['{"b": 1, "a": [true, null]}'], 'data.json', { type: 'application/json' }), 'bob');
    expect(json).toHaveLength(1);
    expect(JSON.parse(json[0].content)).toEqual({ b: 1, a: [true, null] });
    expect(contents((await session.getMessages()).items)).toEqual([text, json[0].content]);
    expect((await session.getPeers()).map((p) => p.id).sort()).toEqual(['alice', 'bob']);

    const exchanges = server.since(mark);
    expectAllOk(exchanges);
    expect(exchanges.filter((e) => e.path.endsWith('/upload')).map((e) => [e.method, e.path, e.status])).toEqual([
      ['POST', `/v2/workspaces/${workspace}/sessions/docs/messages/upload`, 200],
      ['POST', `/v2/workspaces/${workspace}/sessions/docs/messages/upload`, 200],
    ]);
  });

  it('refuses an unreadable file type with the Stainless APIError 415', async () => {
    const workspace = uniqueId('sdk2u');
    const honcho = await client(workspace);
    const session = await honcho.session('images');
    const mark = server.exchanges.length;
    const png = new File([new Uint8Array([0x89, 0x50, 0x4e, 0x47])], 'pixel.png', { type: 'image/png' });
    const refused = await rejection(session.uploadFile(png, 'alice'));
    expect((refused as Error).constructor.name).toBe('APIError');
    expect(refused).toMatchObject({
      status: 415,
      error: { detail: "Unsupported file type: image/png. Supported types: ['PDFProcessor', 'TextProcessor', 'JSONProcessor']" },
    });
    expect(server.since(mark).map((e) => e.status)).toEqual([415]);
  });
});

describe('@honcho-ai/sdk 1.5.0 over /v2: search', () => {
  it('searches the workspace, a session and the messages of one peer', async () => {
    const workspace = uniqueId('sdk2s');
    const honcho = await client(workspace);
    const mark = server.exchanges.length;
    const planning = await honcho.session('planning');
    await planning.addMessages([
      { peer_id: 'alice', content: 'The quarterly budget review is on Friday', metadata: { kind: 'agenda' } },
      { peer_id: 'bob', content: 'I will bring the budget spreadsheet' },
      { peer_id: 'alice', content: 'Lunch plans for Friday?' },
    ]);
    const review = await honcho.session('review');
    await review.addMessages([
      { peer_id: 'carol', content: 'Quarterly numbers look strong' },
      { peer_id: 'alice', content: 'Budget approved, budget closed, budget archived' },
    ]);

    const budget = await honcho.search('budget');
    expect(contents(budget).sort()).toEqual(
      [
        'Budget approved, budget closed, budget archived',
        'I will bring the budget spreadsheet',
        'The quarterly budget review is on Friday',
      ].sort(),
    );
    expect(budget[0].content).toBe('Budget approved, budget closed, budget archived');
    expect(await honcho.search('budget', { limit: 1 })).toHaveLength(1);
    expect(contents(await honcho.search('budget', { filters: { session_id: 'review' } }))).toEqual([
      'Budget approved, budget closed, budget archived',
    ]);
    expect(contents(await honcho.search('friday', { filters: { metadata: { kind: 'agenda' } } }))).toEqual([
      'The quarterly budget review is on Friday',
    ]);
    expect(await honcho.search('submarine')).toEqual([]);

    expect(contents(await planning.search('friday')).sort()).toEqual([
      'Lunch plans for Friday?',
      'The quarterly budget review is on Friday',
    ]);
    expect(contents(await review.search('quarterly'))).toEqual(['Quarterly numbers look strong']);
    const alice = await honcho.peer('alice');
    expect(contents(await alice.search('budget')).sort()).toEqual([
      'Budget approved, budget closed, budget archived',
      'The quarterly budget review is on Friday',
    ]);
    expect(await alice.search('spreadsheet')).toEqual([]);

    const exchanges = server.since(mark);
    expectAllOk(exchanges);
    expect(exchanges.find((e) => e.path === `/v2/workspaces/${workspace}/search`)?.requestBody).toEqual({ query: 'budget' });
    expect(routesCalled(exchanges, { workspace_id: workspace, session_id: ['planning', 'review'], peer_id: 'alice' })).toEqual([
      'POST /v2/workspaces/{workspace_id}/sessions/{session_id}/messages/',
      'POST /v2/workspaces/{workspace_id}/search',
      'POST /v2/workspaces/{workspace_id}/sessions/{session_id}/search',
      'POST /v2/workspaces/{workspace_id}/peers/{peer_id}/search',
    ]);
  });
});

describe('@honcho-ai/sdk 1.5.0 over /v2: session context and summaries', () => {
  const script: [string, string][] = [
    ['user', 'Hi there, I need help planning a trip to Japan in April.'],
    ['assistant', 'Happy to help! Cherry blossom season is a great time to go.'],
    ['user', 'I want to see Kyoto and Osaka.'],
    ['user', 'Hello, world!'],
    ['assistant', 'The quick brown fox jumps over the lazy dog.'],
  ];
  const counts = script.map(([, content]) => tokens(content));
  const sum = (from: number) => counts.slice(from).reduce((a, b) => a + b, 0);

  it('returns the most recent messages that fit the token budget, with either calling form', async () => {
    const workspace = uniqueId('sdk2c');
    const honcho = await client(workspace);
    const mark = server.exchanges.length;
    const session = await honcho.session('trip');
    await session.addMessages(script.map(([peer_id, content]) => ({ peer_id, content })));
    const all = script.map(([, content]) => content);

    const everything = await session.getContext();
    expect(everything.sessionId).toBe('trip');
    expect(contents(everything.messages)).toEqual(all);
    expect([everything.summary, everything.peerRepresentation, everything.peerCard]).toEqual([null, null, null]);

    expect(contents((await session.getContext({ tokens: sum(2) })).messages)).toEqual(all.slice(2));
    expect(contents((await session.getContext({ tokens: sum(2) - 1 })).messages)).toEqual(all.slice(3));
    expect(contents((await session.getContext(false, sum(3))).messages)).toEqual(all.slice(3));
    expect((await session.getContext({ tokens: 1 })).messages).toEqual([]);

    const context = await session.getContext({ tokens: sum(3), summary: true });
    expect(context.toOpenAI('assistant')).toEqual([
      { role: 'user', name: 'user', content: 'Hello, world!' },
      { role: 'assistant', name: 'assistant', content: 'The quick brown fox jumps over the lazy dog.' },
    ]);

    const summaries = await session.getSummaries();
    expect([summaries.id, summaries.shortSummary, summaries.longSummary]).toEqual(['trip', null, null]);

    const exchanges = server.since(mark);
    expectAllOk(exchanges);
    const calls = exchanges.filter((e) => e.path === `/v2/workspaces/${workspace}/sessions/trip/context`);
    expect(calls.map((e) => e.query)).toEqual([
      '',
      `tokens=${sum(2)}`,
      `tokens=${sum(2) - 1}`,
      `tokens=${sum(3)}&summary=false`,
      'tokens=1',
      `tokens=${sum(3)}&summary=true`,
    ]);
    expect(exchanges.find((e) => e.path.endsWith('/summaries'))).toMatchObject({
      method: 'GET',
      path: `/v2/workspaces/${workspace}/sessions/trip/summaries`,
      responseBody: { id: 'trip', short_summary: null, long_summary: null },
    });
  });

  it('with a peer target, the peer representation is a v2 Representation object and the card is the perspective’s', async () => {
    const workspace = uniqueId('sdk2c');
    const honcho = await client(workspace);
    const session = await honcho.session('trip');
    await session.addMessages(script.map(([peer_id, content]) => ({ peer_id, content })));
    const [observation] = await honcho.core.workspaces.observations.create(workspace, {
      observations: [{ content: 'The user wants to visit Kyoto', observer_id: 'assistant', observed_id: 'user', session_id: 'trip' }],
    });
    await honcho.core.workspaces.peers.setCard(workspace, 'assistant', { peer_card: ['Travels in April'], target: 'user' });
    const mark = server.exchanges.length;

    const context = await session.getContext({ tokens: counts[4], peerTarget: 'user', peerPerspective: 'assistant' });
    expect(contents(context.messages)).toEqual([script[4][1]]);
    expect(context.peerCard).toEqual(['Travels in April']);
    // SDK 1.5.0 JSON-encodes the representation it receives (a v2 `Representation` object)
    expect(JSON.parse(context.peerRepresentation ?? 'null')).toEqual({
      explicit: [{ content: 'The user wants to visit Kyoto', created_at: observation.created_at, message_ids: [], session_name: 'trip' }],
      deductive: [],
    });
    const exchanges = server.since(mark);
    expectAllOk(exchanges);
    expect(exchanges.map((e) => e.query)).toEqual([`tokens=${counts[4]}&peer_target=user&peer_perspective=assistant`]);
  });
});

describe('@honcho-ai/sdk 1.5.0 over /v2: observations (through honcho.core)', () => {
  it('creates (200), lists newest first, queries and deletes (200 with a message) observations', async () => {
    const workspace = uniqueId('sdk2k');
    const honcho = await client(workspace);
    const observations = honcho.core.workspaces.observations;
    await honcho.peer('alice', { metadata: {} });
    await honcho.peer('bob', { metadata: {} });
    await (await honcho.session('talk')).addPeers(['alice', 'bob']);
    const mark = server.exchanges.length;

    const created = await observations.create(workspace, {
      observations: [
        { content: 'Bob drinks coffee every morning', observer_id: 'alice', observed_id: 'bob', session_id: 'talk' },
        { content: 'Bob lives in Lisbon', observer_id: 'alice', observed_id: 'bob', session_id: 'talk' },
        { content: 'I prefer tea over coffee', observer_id: 'bob', observed_id: 'bob', session_id: 'talk' },
      ],
    });
    expect(created.map((o) => [o.content, o.observer_id, o.observed_id, o.session_id])).toEqual([
      ['Bob drinks coffee every morning', 'alice', 'bob', 'talk'],
      ['Bob lives in Lisbon', 'alice', 'bob', 'talk'],
      ['I prefer tea over coffee', 'bob', 'bob', 'talk'],
    ]);
    expect(Object.keys(created[0]).sort()).toEqual(['content', 'created_at', 'id', 'observed_id', 'observer_id', 'session_id']);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const [latest] = await observations.create(workspace, {
      observations: [{ content: 'Bob is learning the cello', observer_id: 'alice', observed_id: 'bob', session_id: 'talk' }],
    });

    const aboutBob = { observer_id: 'alice', observed_id: 'bob' };
    const listed = await collect(observations.list(workspace, { filters: aboutBob }));
    expect(listed).toHaveLength(3);
    expect(listed[0].id).toBe(latest.id);
    expect((await collect(observations.list(workspace, { filters: aboutBob, reverse: true })))[2].id).toBe(latest.id);
    expect((await collect(observations.list(workspace))).length).toBe(4);

    expect((await observations.query(workspace, { query: 'coffee', filters: aboutBob })).map((o) => o.content)).toEqual([
      'Bob drinks coffee every morning',
    ]);
    const bobAboutHimself = await observations.query(workspace, { query: 'coffee', filters: { observer_id: 'bob', observed_id: 'bob' } });
    expect(bobAboutHimself.map((o) => o.content)).toEqual(['I prefer tea over coffee']);
    expect(await observations.query(workspace, { query: 'Lisbon cello', top_k: 1, filters: aboutBob })).toHaveLength(1);

    expect(await observations.delete(workspace, created[0].id)).toEqual({ message: 'Observation deleted successfully' });
    const remaining = await collect(observations.list(workspace, { filters: aboutBob }));
    expect(remaining.map((o) => o.id).sort()).toEqual([created[1].id, latest.id].sort());
    expect(await observations.query(workspace, { query: 'coffee', filters: aboutBob })).toEqual([]);

    const exchanges = server.since(mark);
    expectAllOk(exchanges);
    expect(exchanges[0]).toMatchObject({ method: 'POST', path: `/v2/workspaces/${workspace}/observations`, status: 200 });
    expect(exchanges.find((e) => e.method === 'DELETE')).toMatchObject({
      path: `/v2/workspaces/${workspace}/observations/${created[0].id}`,
      status: 200,
    });
    expect(routesCalled(exchanges, { workspace_id: workspace, observation_id: created[0].id })).toEqual([
      'POST /v2/workspaces/{workspace_id}/observations',
      'POST /v2/workspaces/{workspace_id}/observations/list',
      'POST /v2/workspaces/{workspace_id}/observations/query',
      'DELETE /v2/workspaces/{workspace_id}/observations/{observation_id}',
    ]);
  });
});

describe('@honcho-ai/sdk 1.5.0 over /v2: peer cards, working representation and peer context', () => {
  it('reads cards with peer.card() (lines joined) and sets them through honcho.core', async () => {
    const workspace = uniqueId('sdk2p');
    const honcho = await client(workspace);
    const alice = await honcho.peer('alice', { metadata: {} });
    const bob = await honcho.peer('bob', { metadata: {} });
    const mark = server.exchanges.length;
    const peers = honcho.core.workspaces.peers;

    expect(await alice.card()).toBe(''); // no card: the SDK turns null into ''
    expect(await peers.setCard(workspace, 'alice', { peer_card: ['Name: Alice', 'Likes: tea'] })).toEqual({
      peer_card: ['Name: Alice', 'Likes: tea'],
    });
    expect(await alice.card()).toBe('Name: Alice\nLikes: tea');
    expect(await peers.setCard(workspace, 'alice', { peer_card: ['Bob is a colleague'], target: 'bob' })).toEqual({
      peer_card: ['Bob is a colleague'],
    });
    expect(await alice.card(bob)).toBe('Bob is a colleague');
    expect(await alice.card('bob')).toBe('Bob is a colleague');
    expect(await bob.card()).toBe('');
    expect(await peers.card(workspace, 'alice')).toEqual({ peer_card: ['Name: Alice', 'Likes: tea'] });

    const exchanges = server.since(mark);
    expectAllOk(exchanges);
    expect(exchanges.map((e) => `${e.method} ${e.path.split('/').slice(-2).join('/')}${e.query ? `?${e.query}` : ''}`)).toEqual([
      'GET alice/card',
      'PUT alice/card',
      'GET alice/card',
      'PUT alice/card?target=bob',
      'GET alice/card?target=bob',
      'GET alice/card?target=bob',
      'GET bob/card',
      'GET alice/card',
    ]);
  });

  it('returns the working representation and the peer context built from stored observations', async () => {
    const workspace = uniqueId('sdk2p');
    const honcho = await client(workspace);
    await honcho.peer('alice', { metadata: {} });
    await honcho.peer('bob', { metadata: {} });
    const session = await honcho.session('talk');
    await session.addPeers(['alice', 'bob']);
    const elsewhere = await honcho.session('elsewhere');
    await elsewhere.addPeers(['alice', 'bob']);
    const observations = honcho.core.workspaces.observations;
    const [coffee] = await observations.create(workspace, {
      observations: [{ content: 'Bob drinks coffee every morning', observer_id: 'alice', observed_id: 'bob', session_id: 'talk' }],
    });
    await new Promise((resolve) => setTimeout(resolve, 5));
    const [lisbon] = await observations.create(workspace, {
      observations: [{ content: 'Bob lives in Lisbon', observer_id: 'alice', observed_id: 'bob', session_id: 'elsewhere' }],
    });
    await honcho.core.workspaces.peers.setCard(workspace, 'alice', { peer_card: ['Bob is a colleague'], target: 'bob' });
    const line = (o: { created_at: string; content: string }) => `- [${renderedTime(o.created_at)}] ${o.content}`;
    const mark = server.exchanges.length;

    // session.workingRep scopes to the session
    expect(await session.workingRep('alice', 'bob')).toEqual({ representation: `## Explicit conclusions\n\n${line(coffee)}` });
    expect(await elsewhere.workingRep('alice', 'bob')).toEqual({ representation: `## Explicit conclusions\n\n${line(lisbon)}` });
    expect(await honcho.core.workspaces.peers.workingRepresentation(workspace, 'alice', { target: 'bob' })).toEqual({
      representation: `## Explicit conclusions\n\n${line(lisbon)}\n${line(coffee)}`,
    });
    expect(await session.workingRep('bob')).toEqual({ representation: '' });

    const context = await honcho.core.workspaces.peers.getContext(workspace, 'alice', { target: 'bob' });
    expect(context).toEqual({
      peer_id: 'alice',
      target_id: 'bob',
      representation: {
        explicit: [
          { content: 'Bob lives in Lisbon', created_at: lisbon.created_at, message_ids: [], session_name: 'elsewhere' },
          { content: 'Bob drinks coffee every morning', created_at: coffee.created_at, message_ids: [], session_name: 'talk' },
        ],
        deductive: [],
      },
      peer_card: ['Bob is a colleague'],
    });
    const searched = await honcho.core.workspaces.peers.getContext(workspace, 'alice', { target: 'bob', search_query: 'coffee' });
    expect((searched.representation?.explicit ?? []).map((o) => o.content)).toEqual(['Bob drinks coffee every morning']);
    const own = await honcho.core.workspaces.peers.getContext(workspace, 'bob');
    expect(own).toEqual({ peer_id: 'bob', target_id: 'bob', representation: { explicit: [], deductive: [] }, peer_card: null });

    const exchanges = server.since(mark);
    expectAllOk(exchanges);
    expect(exchanges.filter((e) => e.path.endsWith('/representation')).map((e) => e.requestBody)).toEqual([
      { session_id: 'talk', target: 'bob' },
      { session_id: 'elsewhere', target: 'bob' },
      { target: 'bob' },
      { session_id: 'talk' },
    ]);
    expect(exchanges.filter((e) => e.path.endsWith('/context')).map((e) => e.query)).toEqual([
      'target=bob',
      'target=bob&search_query=coffee',
      '',
    ]);
  });
});

describe('@honcho-ai/sdk 1.5.0 over /v2: deriver status and chat', () => {
  it('reports deriver status: nothing is queued without a model, and polling returns at once', async () => {
    const workspace = uniqueId('sdk2q');
    const honcho = await client(workspace);
    const mark = server.exchanges.length;
    const session = await honcho.session('busy');
    await session.addMessages([
      { peer_id: 'alice', content: 'one' },
      { peer_id: 'bob', content: 'two' },
    ]);
    const idle = { totalWorkUnits: 0, completedWorkUnits: 0, inProgressWorkUnits: 0, pendingWorkUnits: 0, sessions: undefined };

    expect(await honcho.getDeriverStatus()).toEqual(idle);
    expect(await honcho.getDeriverStatus({ observerId: 'alice', senderId: 'bob', sessionId: 'busy' })).toEqual(idle);
    expect(await session.getDeriverStatus()).toEqual(idle);
    expect(await session.pollDeriverStatus({ timeoutMs: 1000 })).toEqual(idle);

    const exchanges = server.since(mark);
    expectAllOk(exchanges);
    const calls = exchanges.filter((e) => e.path === `/v2/workspaces/${workspace}/deriver/status`);
    expect(calls.map((e) => [e.method, e.query])).toEqual([
      ['GET', ''],
      ['GET', 'observer_id=alice&sender_id=bob&session_id=busy'],
      ['GET', 'session_id=busy'],
      ['GET', 'session_id=busy'],
    ]);
  });

  it('raises the Stainless APIError 503 for chat without a dialectic model, and the streamed form fails with the status', async () => {
    const workspace = uniqueId('sdk2q');
    const honcho = await client(workspace);
    const alice = await honcho.peer('alice', { metadata: {} });
    const mark = server.exchanges.length;
    const detail = 'Chat needs a dialectic model and none is configured for level low (set LLM_OPENAI_API_KEY or LLM_OPENAI_BASE_URL, or DIALECTIC_LEVELS__low__MODEL_CONFIG__*)';

    const plain = await rejection(alice.chat('What does Bob drink?', { target: 'bob', sessionId: 'talk' }));
    expect((plain as Error).constructor.name).toBe('InternalServerError');
    expect(plain).toMatchObject({ status: 503, error: { detail } });

    const stream = await alice.chat('What does Bob drink?', { stream: true });
    const streamed = await rejection(collect(stream as AsyncIterable<string>));
    expect((streamed as Error).message).toBe('HTTP error! status: 503');

    expect(server.since(mark)).toEqual([
      {
        method: 'POST',
        path: `/v2/workspaces/${workspace}/peers/alice/chat`,
        query: '',
        requestBody: { query: 'What does Bob drink?', stream: false, target: 'bob', session_id: 'talk' },
        status: 503,
        responseBody: { detail },
      },
      {
        method: 'POST',
        path: `/v2/workspaces/${workspace}/peers/alice/chat`,
        query: '',
        requestBody: { query: 'What does Bob drink?', stream: true },
        status: 503,
        responseBody: { detail },
      },
    ]);
  });
});
