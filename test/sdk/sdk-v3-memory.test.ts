/*
 * The official TypeScript SDK 2.x (`@honcho-ai/sdk`, talks to /v3) driving the memory routes of
 * issue 4 against the real server on an ephemeral port: messages (single, batches, listing with
 * filters, get, metadata update), file upload, workspace/session/peer search, session context
 * and summaries, conclusions, peer cards, representation and peer context, queue status, and
 * chat's refusal without a language model. The SDK is used unmodified; the server records every
 * exchange, so a failure names the exact request the SDK made and what it got back.
 *
 * Expected values come from what each test set up: contents, order, counts, and token counts
 * computed here with the o200k_base encoder (pinned against well-known token ids), not read back
 * from the server. SDK 2.5.0 calls that this server does not serve are pinned at the end with
 * their exact exchange, so a change on either side shows.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Honcho,
  HonchoError,
  NotFoundError,
  UnprocessableEntityError,
  type Conclusion,
  type Session,
} from '@honcho-ai/sdk';
import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import { collect, contents, describeExchange, expectAllOk, rejection, renderedTime, routeOf, routesCalled, startSdkServer, tokens, type SdkServer } from '../support/sdk-server.js';
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

function client(workspaceId: string): Honcho {
  // maxRetries 0: a 5xx must surface as the error it is, not as three identical requests.
  return new Honcho({ baseURL: server.baseURL, workspaceId, maxRetries: 0 });
}


describe('@honcho-ai/sdk 2.x over /v3: messages', () => {
  it('counts tokens with o200k_base (the encoder this file computes expectations with)', () => {
    // Published o200k_base ids: "Hello"=13225 ","=11 " world"=2375 "!"=0.
    expect(encode('Hello, world!')).toEqual([13225, 11, 2375, 0]);
    expect(tokens('The quick brown fox jumps over the lazy dog.')).toBe(10);
  });

  it('adds a single message and a batch; senders are created and joined; answers 201 in request order', async () => {
    const mark = server.exchanges.length;
    const workspace = uniqueId('sdk3m');
    const honcho = client(workspace);
    const session = await honcho.session('chat');
    const alice = await honcho.peer('alice');
    // bob and carol are never created explicitly: sending a message creates and joins them

    const [first] = await session.addMessages(alice.message('Hello, world!', { metadata: { lang: 'en' } }));
    expect(first).toMatchObject({
      content: 'Hello, world!',
      peerId: 'alice',
      sessionId: 'chat',
      workspaceId: workspace,
      metadata: { lang: 'en' },
      tokenCount: 4,
    });
    expect(first.id).toMatch(/^[A-Za-z0-9_-]{21}$/);

    const batch = await session.addMessages([
      { peerId: 'bob', content: 'The quick brown fox jumps over the lazy dog.' },
      { peerId: 'carol', content: '', metadata: { empty: true } },
      alice.message('Café ☕ at 10?', { createdAt: '2024-05-01T09:30:00Z' }),
    ]);
    expect(batch.map((m) => [m.peerId, m.content, m.tokenCount])).toEqual([
      ['bob', 'The quick brown fox jumps over the lazy dog.', 10],
      ['carol', '', 0],
      ['alice', 'Café ☕ at 10?', tokens('Café ☕ at 10?')],
    ]);
    expect(batch[1].metadata).toEqual({ empty: true });
    expect(batch[0].metadata).toEqual({});
    expect(new Date(batch[2].createdAt).toISOString()).toBe('2024-05-01T09:30:00.000Z');
    expect(new Set([first.id, ...batch.map((m) => m.id)]).size).toBe(4);

    expect((await session.peers()).map((p) => p.id).sort()).toEqual(['alice', 'bob', 'carol']);
    expect(await session.getPeerConfiguration('bob')).toEqual({ observeMe: null, observeOthers: null });

    const exchanges = server.since(mark);
    expectAllOk(exchanges);
    const creates = exchanges.filter((e) => e.path === `/v3/workspaces/${workspace}/sessions/chat/messages`);
    expect(creates.map((e) => [e.method, e.status])).toEqual([
      ['POST', 201],
      ['POST', 201],
    ]);
    expect(creates[0].requestBody).toEqual({ messages: [{ peer_id: 'alice', content: 'Hello, world!', metadata: { lang: 'en' } }] });
    expect((creates[1].requestBody as { messages: unknown[] }).messages[2]).toEqual({
      peer_id: 'alice',
      content: 'Café ☕ at 10?',
      created_at: '2024-05-01T09:30:00Z',
    });
  });

  it('takes a batch of 100 in one request and refuses 101 with UnprocessableEntityError, writing nothing', async () => {
    const mark = server.exchanges.length;
    const workspace = uniqueId('sdk3m');
    const honcho = client(workspace);
    const session = await honcho.session('bulk');
    const texts = Array.from({ length: 100 }, (_, i) => `message number ${i}`);

    const created = await session.addMessages(texts.map((content, i) => ({ peerId: i % 2 === 0 ? 'even' : 'odd', content })));
    expect(contents(created)).toEqual(texts);
    expect(created.map((m) => m.tokenCount)).toEqual(texts.map(tokens));

    const extra = Array.from({ length: 101 }, (_, i) => ({ peerId: 'even', content: `extra ${i}` }));
    const tooMany = await rejection(session.addMessages(extra));
    expect(tooMany).toBeInstanceOf(UnprocessableEntityError);
    expect((tooMany as UnprocessableEntityError).status).toBe(422);
    const page = await session.messages({ size: 1 });
    expect(page.total).toBe(100);

    const exchanges = server.since(mark);
    expectAllOk(exchanges.filter((e) => e.status !== 422));
    expect(exchanges.filter((e) => e.status === 422)).toHaveLength(1);
  });

  it('lists and iterates messages across pages, reversed, and with filters', async () => {
    const mark = server.exchanges.length;
    const workspace = uniqueId('sdk3m');
    const honcho = client(workspace);
    const session = await honcho.session('thread');
    const script: [string, string, Record<string, unknown>][] = [
      ['alice', 'Where should we travel this summer?', { topic: 'travel', n: 0 }],
      ['bob', 'Somewhere with mountains.', { topic: 'travel', n: 1 }],
      ['alice', 'Did you feed the cat?', { topic: 'home', n: 2 }],
      ['bob', 'Yes, twice.', { topic: 'home', n: 3 }],
      ['alice', 'Then the Alps it is, let us book the train and a small hotel near the lake.', { topic: 'travel', n: 4 }],
      ['bob', 'Booked.', { topic: 'travel', n: 5 }],
      ['carol', 'Can I come too?', { topic: 'travel', n: 6 }],
    ];
    await session.addMessages(script.slice(0, 3).map(([peerId, content, metadata]) => ({ peerId, content, metadata })));
    await session.addMessages(script.slice(3).map(([peerId, content, metadata]) => ({ peerId, content, metadata })));
    const all = script.map(([, content]) => content);

    const first = await session.messages({ size: 3 });
    expect([first.total, first.page, first.size, first.pages, first.length, first.hasNextPage]).toEqual([7, 1, 3, 3, 3, true]);
    expect(contents(first.items)).toEqual(all.slice(0, 3));
    const iterated = await collect(first);
    expect(contents(iterated)).toEqual(all);
    expect(iterated.map((m) => m.tokenCount)).toEqual(all.map(tokens));
    expect(iterated.map((m) => m.metadata.n)).toEqual([0, 1, 2, 3, 4, 5, 6]);

    expect(contents(await collect(await session.messages({ size: 2, reverse: true })))).toEqual([...all].reverse());
    expect(contents(await (await session.messages({ filters: { peer_id: 'bob' } })).toArray())).toEqual([
      'Somewhere with mountains.',
      'Yes, twice.',
      'Booked.',
    ]);
    // the legacy form: a bare filter object instead of { filters }
    expect(contents((await session.messages({ peer_id: 'carol' })).items)).toEqual(['Can I come too?']);
    expect(contents((await session.messages({ filters: { metadata: { topic: 'home' } } })).items)).toEqual([
      'Did you feed the cat?',
      'Yes, twice.',
    ]);
    const longOnes = all.filter((text) => tokens(text) >= 7);
    expect(longOnes.length).toBeGreaterThan(0);
    expect(longOnes.length).toBeLessThan(all.length);
    expect(contents((await session.messages({ filters: { token_count: { gte: 7 } } })).items)).toEqual(longOnes);
    const combined = await session.messages({ filters: { AND: [{ peer_id: 'alice' }, { metadata: { topic: 'travel' } }] }, reverse: true });
    expect(contents(combined.items)).toEqual([all[4], all[0]]);
    expect((await session.messages({ filters: { peer_id: 'nobody' } })).total).toBe(0);

    const exchanges = server.since(mark);
    expectAllOk(exchanges);
    const lists = exchanges.filter((e) => e.path === `/v3/workspaces/${workspace}/sessions/thread/messages/list`);
    expect(lists.slice(0, 3).map((e) => [e.method, e.query, e.requestBody])).toEqual([
      ['POST', 'size=3', {}],
      ['POST', 'page=2&size=3', {}],
      ['POST', 'page=3&size=3', {}],
    ]);
    expect(lists[3].query).toBe('size=2&reverse=true');
    expect(lists.find((e) => JSON.stringify(e.requestBody).includes('bob'))?.requestBody).toEqual({ filters: { peer_id: 'bob' } });
  });

  it('gets a message and replaces its metadata', async () => {
    const mark = server.exchanges.length;
    const workspace = uniqueId('sdk3m');
    const honcho = client(workspace);
    const session = await honcho.session('edits');
    const [kept, edited] = await session.addMessages([
      { peerId: 'alice', content: 'first', metadata: { keep: true } },
      { peerId: 'alice', content: 'second', metadata: { draft: true, v: 1 } },
    ]);

    const fetched = await session.getMessage(edited.id);
    expect(fetched).toMatchObject({ id: edited.id, content: 'second', peerId: 'alice', metadata: { draft: true, v: 1 }, tokenCount: 1 });
    expect(fetched.createdAt).toBe(edited.createdAt);

    const updated = await session.updateMessage(edited, { v: 2, reviewed: 'yes' });
    expect(updated).toMatchObject({ id: edited.id, content: 'second', metadata: { v: 2, reviewed: 'yes' } });
    expect((await session.getMessage(edited.id)).metadata).toEqual({ v: 2, reviewed: 'yes' });
    expect((await session.updateMessage(kept.id, {})).metadata).toEqual({});
    expect(contents((await session.messages({ filters: { metadata: { reviewed: 'yes' } } })).items)).toEqual(['second']);

    const missing = await rejection(session.getMessage('no-such-message-id'));
    expect(missing).toBeInstanceOf(NotFoundError);
    expect((missing as NotFoundError).status).toBe(404);

    const exchanges = server.since(mark);
    expectAllOk(exchanges.filter((e) => e.status !== 404));
    expect(exchanges.find((e) => e.method === 'PUT')).toMatchObject({
      path: `/v3/workspaces/${workspace}/sessions/edits/messages/${edited.id}`,
      requestBody: { metadata: { v: 2, reviewed: 'yes' } },
      status: 200,
    });
    const ids = { workspace_id: workspace, session_id: 'edits', message_id: [kept.id, edited.id, 'no-such-message-id'] };
    expect(routesCalled(exchanges, ids)).toEqual([
      'POST /v3/workspaces',
      'POST /v3/workspaces/{workspace_id}/sessions',
      'POST /v3/workspaces/{workspace_id}/sessions/{session_id}/messages',
      'GET /v3/workspaces/{workspace_id}/sessions/{session_id}/messages/{message_id}',
      'PUT /v3/workspaces/{workspace_id}/sessions/{session_id}/messages/{message_id}',
      'POST /v3/workspaces/{workspace_id}/sessions/{session_id}/messages/list',
    ]);
  });
});

describe('@honcho-ai/sdk 2.x over /v3: file upload', () => {
  it('uploads a text file as one message with the metadata and time given', async () => {
    const mark = server.exchanges.length;
    const workspace = uniqueId('sdk3u');
    const honcho = client(workspace);
    const session = await honcho.session('docs');
    const text = 'Meeting notes\n\nAlice will draft the proposal.\nBob reviews it on Monday.';

    const uploaded = await session.uploadFile(
      { filename: 'notes.txt', content: new TextEncoder().encode(text), content_type: 'text/plain' },
      'alice',
      { metadata: { source: 'notes.txt' }, createdAt: '2024-06-01T08:00:00Z' },
    );
    expect(uploaded).toHaveLength(1);
    expect(uploaded[0]).toMatchObject({
      content: text,
      peerId: 'alice',
      sessionId: 'docs',
      metadata: { source: 'notes.txt' },
      tokenCount: tokens(text),
    });
    expect(new Date(uploaded[0].createdAt).toISOString()).toBe('2024-06-01T08:00:00.000Z');

    // a Blob goes up without a file name; the uploader becomes a member
    const blob = await session.uploadFile(new Blob(['# Title\n\nplain markdown'], { type: 'text/markdown' }), 'bob');
    expect(contents(blob)).toEqual(['# Title\n\nplain markdown']);
    expect((await session.peers()).map((p) => p.id).sort()).toEqual(['alice', 'bob']);
    expect(contents((await session.messages()).items)).toEqual([text, '# Title\n\nplain markdown']);

    const exchanges = server.since(mark);
    expectAllOk(exchanges);
    const uploads = exchanges.filter((e) => e.path === `/v3/workspaces/${workspace}/sessions/docs/messages/upload`);
    expect(uploads.map((e) => [e.method, e.status])).toEqual([
      ['POST', 201],
      ['POST', 201],
    ]);
  });

  it('splits a long text file into pieces of at most 25,000 characters, in order', async () => {
    const workspace = uniqueId('sdk3u');
    const honcho = client(workspace);
    const session = await honcho.session('long');
    const paragraphs = Array.from({ length: 120 }, (_, i) => `Paragraph ${i}: ${'lorem ipsum dolor sit amet '.repeat(18)}`.trim());
    const text = paragraphs.join('\n\n');
    expect(text.length).toBeGreaterThan(50_000);

    const mark = server.exchanges.length;
    const file = { filename: 'long.txt', content: new TextEncoder().encode(text), content_type: 'text/plain' };
    const pieces = await session.uploadFile(file, 'alice');
    expect(pieces.length).toBeGreaterThanOrEqual(3);
    for (const piece of pieces) expect(piece.content.length).toBeLessThanOrEqual(25_000);
    // nothing lost or reordered: the pieces hold the text, up to the whitespace at the breaks
    const squash = (s: string) => s.replace(/\s+/g, '');
    expect(squash(contents(pieces).join(''))).toBe(squash(text));
    // each piece ends at a paragraph break: it starts with a paragraph heading
    for (const piece of pieces) expect(piece.content).toMatch(/^Paragraph \d+: /);
    expect(pieces.map((p) => p.tokenCount)).toEqual(pieces.map((p) => tokens(p.content)));
    expect(contents((await session.messages()).items)).toEqual(contents(pieces));
    expectAllOk(server.since(mark));
  });

  it('refuses a file type it cannot read with HonchoError 415, writing nothing', async () => {
    const workspace = uniqueId('sdk3u');
    const honcho = client(workspace);
    const session = await honcho.session('images');
    const mark = server.exchanges.length;
    const refused = await rejection(
      session.uploadFile({ filename: 'pixel.png', content: new Uint8Array([0x89, 0x50, 0x4e, 0x47]), content_type: 'image/png' }, 'alice'),
    );
    expect(refused).toBeInstanceOf(HonchoError);
    expect((refused as HonchoError).status).toBe(415);
    expect((refused as HonchoError).message).toBe(
      "Unsupported file type: image/png. Supported types: ['PDFProcessor', 'TextProcessor', 'JSONProcessor']",
    );
    expect(server.since(mark).map((e) => [e.path, e.status])).toEqual([
      [`/v3/workspaces/${workspace}/sessions/images/messages/upload`, 415],
    ]);
    expect((await session.messages()).total).toBe(0);
  });
});

describe('@honcho-ai/sdk 2.x over /v3: search', () => {
  async function seed(honcho: Honcho): Promise<{ planning: Session; review: Session }> {
    const planning = await honcho.session('planning');
    await planning.addMessages([
      { peerId: 'alice', content: 'The quarterly budget review is on Friday', metadata: { kind: 'agenda' } },
      { peerId: 'bob', content: 'I will bring the budget spreadsheet' },
      { peerId: 'alice', content: 'Lunch plans for Friday?' },
    ]);
    const review = await honcho.session('review');
    await review.addMessages([
      { peerId: 'carol', content: 'Quarterly numbers look strong' },
      { peerId: 'alice', content: 'Budget approved, budget closed, budget archived' },
    ]);
    return { planning, review };
  }

  it('searches the workspace: every hit holds the word, none other appears; limit and filters narrow', async () => {
    const mark = server.exchanges.length;
    const workspace = uniqueId('sdk3s');
    const honcho = client(workspace);
    await seed(honcho);

    const budget = await honcho.search('budget');
    expect(contents(budget).sort()).toEqual(
      [
        'Budget approved, budget closed, budget archived',
        'I will bring the budget spreadsheet',
        'The quarterly budget review is on Friday',
      ].sort(),
    );
    expect(budget.every((m) => m.workspaceId === workspace)).toBe(true);
    // the message repeating the word ranks first
    expect(budget[0].content).toBe('Budget approved, budget closed, budget archived');
    // a hit carries the whole message
    expect(budget.find((m) => m.peerId === 'bob')).toMatchObject({
      sessionId: 'planning',
      tokenCount: tokens('I will bring the budget spreadsheet'),
    });

    expect(await honcho.search('budget', { limit: 2 })).toHaveLength(2);
    expect(contents(await honcho.search('budget', { filters: { session_id: 'review' } }))).toEqual([
      'Budget approved, budget closed, budget archived',
    ]);
    expect(contents(await honcho.search('friday', { filters: { metadata: { kind: 'agenda' } } }))).toEqual([
      'The quarterly budget review is on Friday',
    ]);
    // both words: the message holding both comes first
    expect((await honcho.search('budget friday'))[0].content).toBe('The quarterly budget review is on Friday');
    expect(await honcho.search('submarine')).toEqual([]);
    // another workspace sees none of it
    expect(await client(uniqueId('sdk3s')).search('budget')).toEqual([]);

    const exchanges = server.since(mark);
    expectAllOk(exchanges);
    const searches = exchanges.filter((e) => e.path === `/v3/workspaces/${workspace}/search`);
    expect(searches.slice(0, 3).map((e) => [e.method, e.requestBody])).toEqual([
      ['POST', { query: 'budget' }],
      ['POST', { query: 'budget', limit: 2 }],
      ['POST', { query: 'budget', filters: { session_id: 'review' } }],
    ]);
  });

  it('searches one session, and the messages one peer sent', async () => {
    const mark = server.exchanges.length;
    const workspace = uniqueId('sdk3s');
    const honcho = client(workspace);
    const { planning, review } = await seed(honcho);

    expect(contents(await planning.search('friday')).sort()).toEqual([
      'Lunch plans for Friday?',
      'The quarterly budget review is on Friday',
    ]);
    expect(contents(await review.search('quarterly'))).toEqual(['Quarterly numbers look strong']);
    expect(contents(await planning.search('quarterly'))).toEqual(['The quarterly budget review is on Friday']);
    // the path's session wins over a session filter
    expect(contents(await review.search('friday', { filters: { session_id: 'planning' } }))).toEqual([]);
    expect(await planning.search('budget', { limit: 1 })).toHaveLength(1);

    const alice = await honcho.peer('alice');
    expect(contents(await alice.search('budget')).sort()).toEqual([
      'Budget approved, budget closed, budget archived',
      'The quarterly budget review is on Friday',
    ]);
    expect(contents(await (await honcho.peer('bob')).search('budget'))).toEqual(['I will bring the budget spreadsheet']);
    expect(contents(await alice.search('budget', { filters: { session_id: 'planning' } }))).toEqual([
      'The quarterly budget review is on Friday',
    ]);
    expect(await alice.search('spreadsheet')).toEqual([]);

    const exchanges = server.since(mark);
    expectAllOk(exchanges);
    expect(routesCalled(exchanges, { workspace_id: workspace, session_id: ['planning', 'review'], peer_id: ['alice', 'bob'] })).toEqual([
      'POST /v3/workspaces',
      'POST /v3/workspaces/{workspace_id}/sessions',
      'POST /v3/workspaces/{workspace_id}/sessions/{session_id}/messages',
      'POST /v3/workspaces/{workspace_id}/sessions/{session_id}/search',
      'POST /v3/workspaces/{workspace_id}/peers',
      'POST /v3/workspaces/{workspace_id}/peers/{peer_id}/search',
    ]);
  });
});

describe('@honcho-ai/sdk 2.x over /v3: session context and summaries', () => {
  const script: [string, string][] = [
    ['user', 'Hi there, I need help planning a trip to Japan in April.'],
    ['assistant', 'Happy to help! Cherry blossom season is a great time to go.'],
    ['user', 'I want to see Kyoto and Osaka.'],
    ['assistant', 'Kyoto has temples; Osaka has street food. Three days each works well.'],
    ['user', 'Hello, world!'],
    ['assistant', 'The quick brown fox jumps over the lazy dog.'],
  ];
  const counts = script.map(([, content]) => tokens(content));
  const sum = (from: number) => counts.slice(from).reduce((a, b) => a + b, 0);

  it('returns the most recent messages that fit the token budget, oldest first', async () => {
    const mark = server.exchanges.length;
    const workspace = uniqueId('sdk3c');
    const honcho = client(workspace);
    const session = await honcho.session('trip');
    await session.addMessages(script.map(([peerId, content]) => ({ peerId, content })));
    const all = script.map(([, content]) => content);

    const everything = await session.context();
    expect(everything.sessionId).toBe('trip');
    expect(contents(everything.messages)).toEqual(all);
    expect(everything.summary).toBeNull();
    expect(everything.peerRepresentation).toBeNull();
    expect(everything.peerCard).toBeNull();
    expect(everything.length).toBe(6);

    // exactly the last three fit; one token less and the oldest of them drops out
    expect(contents((await session.context({ tokens: sum(3) })).messages)).toEqual(all.slice(3));
    expect(contents((await session.context({ tokens: sum(3) - 1 })).messages)).toEqual(all.slice(4));
    expect(contents((await session.context({ tokens: sum(3), summary: false })).messages)).toEqual(all.slice(3));
    expect(contents((await session.context({ tokens: sum(3), summary: true })).messages)).toEqual(all.slice(3));
    // the budget is a limit, not a target: it never cuts a message, so a too-small one gives none
    expect((await session.context({ tokens: counts[5] - 1 })).messages).toEqual([]);
    expect((await session.context({ tokens: 0 })).messages).toEqual([]);
    const context = await session.context({ tokens: sum(4) });
    expect(context.messages.reduce((n, m) => n + m.tokenCount, 0)).toBe(sum(4));

    expect(context.toOpenAI('assistant')).toEqual([
      { role: 'user', name: 'user', content: 'Hello, world!' },
      { role: 'assistant', name: 'assistant', content: 'The quick brown fox jumps over the lazy dog.' },
    ]);
    expect(context.toAnthropic('assistant')).toEqual([
      { role: 'user', content: 'user: Hello, world!' },
      { role: 'assistant', content: 'The quick brown fox jumps over the lazy dog.' },
    ]);

    // an unknown session has no context, not an error
    expect((await (await honcho.session('empty')).context({ tokens: 50 })).messages).toEqual([]);

    const exchanges = server.since(mark);
    expectAllOk(exchanges);
    const calls = exchanges.filter((e) => e.path === `/v3/workspaces/${workspace}/sessions/trip/context`);
    expect(calls.map((e) => [e.method, e.query])).toEqual([
      ['GET', ''],
      ['GET', `tokens=${sum(3)}`],
      ['GET', `tokens=${sum(3) - 1}`],
      ['GET', `tokens=${sum(3)}&summary=false`],
      ['GET', `tokens=${sum(3)}&summary=true`],
      ['GET', `tokens=${counts[5] - 1}`],
      ['GET', 'tokens=0'],
      ['GET', `tokens=${sum(4)}`],
    ]);
    expect(calls[0].responseBody).toMatchObject({ id: 'trip', summary: null, peer_representation: null, peer_card: null });
  });

  it("fills the peer representation and card from the perspective's conclusions and card", async () => {
    const mark = server.exchanges.length;
    const workspace = uniqueId('sdk3c');
    const honcho = client(workspace);
    const session = await honcho.session('trip');
    await session.addMessages(script.map(([peerId, content]) => ({ peerId, content })));
    const assistant = await honcho.peer('assistant');
    const other = await honcho.session('other', { peers: ['user', 'assistant'] });
    const [inTrip] = await assistant.conclusionsOf('user').create({ content: 'The user wants to visit Kyoto', sessionId: 'trip' });
    const [elsewhere] = await assistant.conclusionsOf('user').create({ content: 'The user is vegetarian', sessionId: other.id });
    await assistant.setCard(['Travels in April'], 'user');

    const context = await session.context({ tokens: sum(5), peerTarget: 'user', peerPerspective: assistant });
    expect(contents(context.messages)).toEqual([script[5][1]]);
    expect(context.peerCard).toEqual(['Travels in April']);
    expect(context.peerRepresentation).toContain(`- [${renderedTime(inTrip.createdAt)}] The user wants to visit Kyoto`);
    expect(context.peerRepresentation).toContain(`- [${renderedTime(elsewhere.createdAt)}] The user is vegetarian`);
    expect(context.peerRepresentation?.startsWith('## Explicit conclusions\n\n')).toBe(true);

    const limited = await session.context({ tokens: 1, peerTarget: 'user', peerPerspective: 'assistant', limitToSession: true });
    const inTripLine = `- [${renderedTime(inTrip.createdAt)}] The user wants to visit Kyoto`;
    expect(limited.peerRepresentation).toBe(`## Explicit conclusions\n\n${inTripLine}`);
    const searched = await session.context({
      peerTarget: 'user',
      peerPerspective: 'assistant',
      representationOptions: { searchQuery: 'vegetarian', searchTopK: 5 },
    });
    expect(searched.peerRepresentation).toContain('The user is vegetarian');
    expect(searched.peerRepresentation).not.toContain('Kyoto');
    // without a perspective the target's own memory is read: the user holds nothing about itself
    const own = await session.context({ tokens: 1, peerTarget: 'user' });
    expect(own.peerRepresentation).toBe('');
    expect(own.peerCard).toBeNull();

    // confined to the session, the card is left out (it does not record where it came from)
    expect(limited.peerCard).toBeNull();
    // toOpenAI puts the representation and card first, as system messages
    expect(context.toOpenAI('assistant').slice(0, 2)).toEqual([
      { role: 'system', content: `<peer_representation>${context.peerRepresentation}</peer_representation>` },
      { role: 'system', content: '<peer_card>Travels in April</peer_card>' },
    ]);

    const exchanges = server.since(mark);
    expectAllOk(exchanges);
    const calls = exchanges.filter((e) => e.path === `/v3/workspaces/${workspace}/sessions/trip/context`);
    expect(calls.map((e) => e.query)).toEqual([
      `tokens=${sum(5)}&peer_target=user&peer_perspective=assistant`,
      'tokens=1&peer_target=user&peer_perspective=assistant&limit_to_session=true',
      'search_query=vegetarian&peer_target=user&peer_perspective=assistant&search_top_k=5',
      'tokens=1&peer_target=user',
    ]);
  });

  it('reads summaries: none exist without a model, for known and unknown sessions', async () => {
    const mark = server.exchanges.length;
    const workspace = uniqueId('sdk3c');
    const honcho = client(workspace);
    const session = await honcho.session('trip');
    await session.addMessages(script.map(([peerId, content]) => ({ peerId, content })));

    const summaries = await session.summaries();
    expect(summaries.sessionId).toBe('trip');
    expect(summaries.shortSummary).toBeNull();
    expect(summaries.longSummary).toBeNull();

    const exchanges = server.since(mark);
    expectAllOk(exchanges);
    expect(exchanges.find((e) => e.path.endsWith('/summaries'))).toMatchObject({
      method: 'GET',
      path: `/v3/workspaces/${workspace}/sessions/trip/summaries`,
      responseBody: { id: 'trip', short_summary: null, long_summary: null },
    });
  });
});

describe('@honcho-ai/sdk 2.x over /v3: conclusions', () => {
  it('creates, lists, queries and deletes conclusions through the peer views and the workspace', async () => {
    const mark = server.exchanges.length;
    const workspace = uniqueId('sdk3k');
    const honcho = client(workspace);
    const alice = await honcho.peer('alice');
    const bob = await honcho.peer('bob');
    const session = await honcho.session('talk', { peers: [alice, bob] });

    const aboutBob = alice.conclusionsOf(bob);
    const created = await aboutBob.create([
      { content: 'Bob drinks coffee every morning', sessionId: session },
      { content: 'Bob lives in Lisbon' },
    ]);
    expect(created.map((c) => [c.content, c.observerId, c.observedId, c.sessionId, c.level])).toEqual([
      ['Bob drinks coffee every morning', 'alice', 'bob', 'talk', 'explicit'],
      ['Bob lives in Lisbon', 'alice', 'bob', null, 'explicit'],
    ]);
    const [selfView] = await bob.conclusions.create({ content: 'I prefer tea over coffee', sessionId: 'talk' });
    expect([selfView.observerId, selfView.observedId]).toEqual(['bob', 'bob']);
    await new Promise((resolve) => setTimeout(resolve, 5)); // a strictly later created_at
    const [latest] = await aboutBob.create({ content: 'Bob is learning the cello' });

    // newest first; reverse gives oldest first (the first batch shares one time, so compare as a set)
    const listed = await aboutBob.list();
    expect(listed.total).toBe(3);
    expect(listed.items[0].id).toBe(latest.id);
    expect(listed.items.slice(1).map((c) => c.id).sort()).toEqual(created.map((c) => c.id).sort());
    const reversed = await aboutBob.list({ reverse: true });
    expect(reversed.items[2].id).toBe(latest.id);
    expect((await aboutBob.list({ session: 'talk' })).items.map((c) => c.content)).toEqual(['Bob drinks coffee every morning']);
    expect((await bob.conclusions.list()).items.map((c) => c.content)).toEqual(['I prefer tea over coffee']);
    const paged = await aboutBob.list({ size: 2 });
    expect([paged.total, paged.pages, paged.length]).toEqual([3, 2, 2]);
    expect((await paged.toArray()).map((c) => c.id).sort()).toEqual([...created, latest].map((c) => c.id).sort());

    const everything = await honcho.conclusions.list();
    expect(everything.items.map((c) => c.content).sort()).toEqual(
      ['Bob drinks coffee every morning', 'Bob is learning the cello', 'Bob lives in Lisbon', 'I prefer tea over coffee'].sort(),
    );
    expect((await honcho.conclusions.list({ filters: { observer_id: 'bob' } })).items.map((c) => c.id)).toEqual([selfView.id]);
    expect((await aboutBob.getMany([created[1].id, selfView.id])).map((c) => c.id)).toEqual([created[1].id]);

    // query ranks alice's conclusions about bob only: bob's own "coffee" is not among them
    expect((await aboutBob.query('coffee')).map((c) => c.content)).toEqual(['Bob drinks coffee every morning']);
    expect((await aboutBob.query('Lisbon cello', 1)).length).toBe(1);
    expect((await aboutBob.query('Lisbon cello')).map((c) => c.content).sort()).toEqual([
      'Bob is learning the cello',
      'Bob lives in Lisbon',
    ]);
    expect((await bob.conclusions.query('coffee')).map((c) => c.id)).toEqual([selfView.id]);
    expect(await aboutBob.query('submarine')).toEqual([]);

    await aboutBob.delete(created[0].id);
    expect((await aboutBob.list()).items.map((c) => c.id).sort()).toEqual([created[1].id, latest.id].sort());
    expect(await aboutBob.query('coffee')).toEqual([]);
    expect((await honcho.conclusions.list()).total).toBe(3);

    const exchanges = server.since(mark);
    expectAllOk(exchanges);
    const create = exchanges.find((e) => e.path === `/v3/workspaces/${workspace}/conclusions`);
    expect(create).toMatchObject({ method: 'POST', status: 201 });
    expect(create?.requestBody).toEqual({
      conclusions: [
        { content: 'Bob drinks coffee every morning', session_id: 'talk', observer_id: 'alice', observed_id: 'bob' },
        { content: 'Bob lives in Lisbon', session_id: null, observer_id: 'alice', observed_id: 'bob' },
      ],
    });
    const query = exchanges.find((e) => e.path === `/v3/workspaces/${workspace}/conclusions/query`);
    expect(query?.requestBody).toEqual({ query: 'coffee', top_k: 10, filters: { observer_id: 'alice', observed_id: 'bob' } });
    expect(exchanges.find((e) => e.method === 'DELETE')).toMatchObject({
      path: `/v3/workspaces/${workspace}/conclusions/${created[0].id}`,
      status: 204,
    });
    expect(exchanges.find((e) => e.path.endsWith('/conclusions/list'))).toMatchObject({
      query: 'page=1&size=50',
      requestBody: { filters: { observer_id: 'alice', observed_id: 'bob' } },
    });
    expect(
      routesCalled(exchanges, { workspace_id: workspace, session_id: 'talk', peer_id: ['alice', 'bob'], conclusion_id: created[0].id }),
    ).toEqual([
      'POST /v3/workspaces',
      'POST /v3/workspaces/{workspace_id}/peers',
      'POST /v3/workspaces/{workspace_id}/sessions',
      'POST /v3/workspaces/{workspace_id}/conclusions',
      'POST /v3/workspaces/{workspace_id}/conclusions/list',
      'POST /v3/workspaces/{workspace_id}/conclusions/query',
      'DELETE /v3/workspaces/{workspace_id}/conclusions/{conclusion_id}',
    ]);
  });

  it('refuses a conclusion about a peer that does not exist with NotFoundError, writing nothing', async () => {
    const workspace = uniqueId('sdk3k');
    const honcho = client(workspace);
    const alice = await honcho.peer('alice');
    const mark = server.exchanges.length;
    const error = await rejection(alice.conclusionsOf('ghost').create([{ content: 'fine' }, { content: 'also fine' }]));
    expect(error).toBeInstanceOf(NotFoundError);
    expect((error as NotFoundError).message).toBe(`Peer ghost not found in workspace ${workspace}`);
    expect(server.since(mark).map((e) => e.status)).toEqual([404]);
    expect((await honcho.conclusions.list()).total).toBe(0);
  });
});

describe('@honcho-ai/sdk 2.x over /v3: peer cards, representation and peer context', () => {
  it('gets and sets peer cards, own and of another peer', async () => {
    const mark = server.exchanges.length;
    const workspace = uniqueId('sdk3p');
    const honcho = client(workspace);
    const alice = await honcho.peer('alice');
    const bob = await honcho.peer('bob');

    expect(await alice.getCard()).toBeNull();
    expect(await alice.setCard(['Name: Alice', 'Likes: tea'])).toEqual(['Name: Alice', 'Likes: tea']);
    expect(await alice.getCard()).toEqual(['Name: Alice', 'Likes: tea']);
    expect(await alice.setCard(['Bob is a colleague'], bob)).toEqual(['Bob is a colleague']);
    expect(await alice.getCard('bob')).toEqual(['Bob is a colleague']);
    expect(await alice.card()).toEqual(['Name: Alice', 'Likes: tea']); // the deprecated name
    // a card is the observer's: bob has none of his own, and none about alice
    expect(await bob.getCard()).toBeNull();
    expect(await bob.getCard(alice)).toBeNull();
    // replacing, and emptying
    expect(await alice.setCard(['Name: Alice'])).toEqual(['Name: Alice']);
    expect(await alice.getCard()).toEqual(['Name: Alice']);
    expect(await alice.setCard([], 'bob')).toEqual([]);
    expect(await alice.getCard('bob')).toEqual([]);

    const exchanges = server.since(mark);
    expectAllOk(exchanges);
    const sets = exchanges.filter((e) => e.method === 'PUT' && e.path === `/v3/workspaces/${workspace}/peers/alice/card`);
    expect(sets.map((e) => [e.query, e.requestBody])).toEqual([
      ['', { peer_card: ['Name: Alice', 'Likes: tea'] }],
      ['target=bob', { peer_card: ['Bob is a colleague'] }],
      ['', { peer_card: ['Name: Alice'] }],
      ['target=bob', { peer_card: [] }],
    ]);
    expect(exchanges.filter((e) => e.method === 'GET').map((e) => [e.path.split('/').slice(-2).join('/'), e.query])).toEqual([
      ['alice/card', ''],
      ['alice/card', ''],
      ['alice/card', 'target=bob'],
      ['alice/card', ''],
      ['bob/card', ''],
      ['bob/card', 'target=alice'],
      ['alice/card', ''],
      ['alice/card', 'target=bob'],
    ]);
  });

  it('renders the representation from stored conclusions and returns the peer context', async () => {
    const mark = server.exchanges.length;
    const workspace = uniqueId('sdk3p');
    const honcho = client(workspace);
    const alice = await honcho.peer('alice');
    const bob = await honcho.peer('bob');
    const session = await honcho.session('talk', { peers: [alice, bob] });
    const [coffee] = await alice.conclusionsOf(bob).create({ content: 'Bob drinks coffee every morning', sessionId: 'talk' });
    await new Promise((resolve) => setTimeout(resolve, 5));
    const [lisbon] = await alice.conclusionsOf(bob).create({ content: 'Bob lives in Lisbon\nnear the river' });
    const [own] = await bob.conclusions.create({ content: 'I prefer tea' });
    await alice.setCard(['Bob is a colleague'], bob);
    const line = (c: Conclusion) => `- [${renderedTime(c.createdAt)}] ${c.content.replace(/\n/g, '\n  ')}`;

    // newest first, one "## Explicit conclusions" section, continuation lines indented
    const expected = `## Explicit conclusions\n\n${line(lisbon)}\n${line(coffee)}`;
    expect(await alice.representation({ target: bob })).toBe(expected);
    expect(await alice.conclusionsOf('bob').representation()).toBe(expected);
    expect(await alice.representation({ target: 'bob', maxConclusions: 1 })).toBe(`## Explicit conclusions\n\n${line(lisbon)}`);
    expect(await alice.representation({ target: 'bob', session: 'talk' })).toBe(`## Explicit conclusions\n\n${line(coffee)}`);
    expect(await session.representation('alice', { target: 'bob' })).toBe(`## Explicit conclusions\n\n${line(coffee)}`);
    expect(await alice.representation({ target: 'bob', searchQuery: 'Lisbon' })).toBe(`## Explicit conclusions\n\n${line(lisbon)}`);
    // a session allowlist goes up as filters.session_id (contract §5.6)
    expect(await alice.representation({ target: 'bob', sessions: [session] })).toBe(`## Explicit conclusions\n\n${line(coffee)}`);
    const allowlisted = await alice.representation({ target: 'bob', sessions: ['talk', 'elsewhere'] });
    expect(allowlisted).toBe(`## Explicit conclusions\n\n${line(coffee)}`);
    expect(await bob.representation()).toBe(`## Explicit conclusions\n\n${line(own)}`);
    // nothing stored: the empty string
    expect(await alice.representation()).toBe('');

    const context = await alice.context({ target: 'bob' });
    expect([context.peerId, context.targetId, context.representation, context.peerCard]).toEqual([
      'alice',
      'bob',
      expected,
      ['Bob is a colleague'],
    ]);
    const ownContext = await bob.context();
    expect([ownContext.peerId, ownContext.targetId, ownContext.representation, ownContext.peerCard]).toEqual([
      'bob',
      'bob',
      `## Explicit conclusions\n\n${line(own)}`,
      null,
    ]);
    const searched = await alice.context({ target: bob, searchQuery: 'coffee', searchTopK: 3, maxConclusions: 10 });
    expect(searched.representation).toBe(`## Explicit conclusions\n\n${line(coffee)}`);

    const exchanges = server.since(mark);
    expectAllOk(exchanges);
    const representations = exchanges.filter((e) => e.path.endsWith('/representation'));
    const ids = { workspace_id: workspace, peer_id: ['alice', 'bob'] };
    expect(representations.slice(0, 5).map((e) => [routeOf(e, ids), e.requestBody])).toEqual([
      ['POST /v3/workspaces/{workspace_id}/peers/{peer_id}/representation', { target: 'bob' }],
      ['POST /v3/workspaces/{workspace_id}/peers/{peer_id}/representation', { target: 'bob' }],
      ['POST /v3/workspaces/{workspace_id}/peers/{peer_id}/representation', { target: 'bob', max_conclusions: 1 }],
      ['POST /v3/workspaces/{workspace_id}/peers/{peer_id}/representation', { session_id: 'talk', target: 'bob' }],
      ['POST /v3/workspaces/{workspace_id}/peers/{peer_id}/representation', { session_id: 'talk', target: 'bob' }],
    ]);
    expect(representations.filter((e) => JSON.stringify(e.requestBody).includes('filters')).map((e) => e.requestBody)).toEqual([
      { filters: { session_id: ['talk'] }, target: 'bob' },
      { filters: { session_id: ['talk', 'elsewhere'] }, target: 'bob' },
    ]);
    const contexts = exchanges.filter((e) => e.path.endsWith('/context'));
    expect(contexts.map((e) => [e.path, e.query])).toEqual([
      [`/v3/workspaces/${workspace}/peers/alice/context`, 'target=bob'],
      [`/v3/workspaces/${workspace}/peers/bob/context`, ''],
      [`/v3/workspaces/${workspace}/peers/alice/context`, 'target=bob&search_query=coffee&search_top_k=3&max_conclusions=10'],
    ]);
  });
});

describe('@honcho-ai/sdk 2.x over /v3: queue status and chat', () => {
  it('reports queue status: no work is queued without a model, whatever the filters', async () => {
    const mark = server.exchanges.length;
    const workspace = uniqueId('sdk3q');
    const honcho = client(workspace);
    const session = await honcho.session('busy');
    await session.addMessages([
      { peerId: 'alice', content: 'one' },
      { peerId: 'bob', content: 'two' },
    ]);
    const idle = { totalWorkUnits: 0, completedWorkUnits: 0, inProgressWorkUnits: 0, pendingWorkUnits: 0, sessions: undefined };

    expect(await honcho.queueStatus()).toEqual(idle);
    expect(await honcho.queueStatus({ observer: 'alice', sender: 'bob', session })).toEqual(idle);
    expect(await session.queueStatus()).toEqual(idle);
    expect(await session.queueStatus({ observer: 'alice' })).toEqual(idle);

    const exchanges = server.since(mark);
    expectAllOk(exchanges);
    const calls = exchanges.filter((e) => e.path === `/v3/workspaces/${workspace}/queue/status`);
    expect(calls.map((e) => [e.method, e.query])).toEqual([
      ['GET', ''],
      ['GET', 'observer_id=alice&sender_id=bob&session_id=busy'],
      ['GET', 'session_id=busy'],
      ['GET', 'observer_id=alice&session_id=busy'],
    ]);
    expect(calls[0].responseBody).toEqual({
      total_work_units: 0,
      completed_work_units: 0,
      in_progress_work_units: 0,
      pending_work_units: 0,
      sessions: null,
    });
  });

  it("raises ServerError 503 for peer chat without a dialectic model, streamed or not, with the server's explanation", async () => {
    const workspace = uniqueId('sdk3q');
    const honcho = client(workspace);
    const alice = await honcho.peer('alice');
    await honcho.session('talk', { peers: ['alice', 'bob'] });
    const mark = server.exchanges.length;
    const detail = 'Chat needs a dialectic model and none is configured for level high (set LLM_OPENAI_API_KEY or LLM_OPENAI_BASE_URL, or DIALECTIC_LEVELS__high__MODEL_CONFIG__*)';
    const lowDetail = detail.replaceAll('high', 'low');

    const plain = await rejection(alice.chat('What does Bob drink?', { target: 'bob', session: 'talk', reasoningLevel: 'high' }));
    expect(plain).toBeInstanceOf(HonchoError);
    expect((plain as HonchoError).constructor.name).toBe('ServerError');
    expect((plain as HonchoError).status).toBe(503);
    expect((plain as HonchoError).message).toBe(detail);

    const streamed = await rejection(alice.chatStream('What does Bob drink?'));
    expect(streamed).toBeInstanceOf(HonchoError);
    expect((streamed as HonchoError).status).toBe(503);
    expect((streamed as HonchoError).message).toBe(lowDetail);

    expect(server.since(mark)).toEqual([
      {
        method: 'POST',
        path: `/v3/workspaces/${workspace}/peers/alice/chat`,
        query: '',
        requestBody: { query: 'What does Bob drink?', stream: false, target: 'bob', session_id: 'talk', reasoning_level: 'high' },
        status: 503,
        responseBody: { detail },
      },
      {
        method: 'POST',
        path: `/v3/workspaces/${workspace}/peers/alice/chat`,
        query: '',
        requestBody: { query: 'What does Bob drink?', stream: true },
        status: 503,
        responseBody: { detail: lowDetail },
      },
    ]);
  });
});

describe('@honcho-ai/sdk 2.x over /v3: reading a conclusion by id', () => {
  it('conclusions.get(id) through a view and through the workspace; a view of another pair says not found', async () => {
    const workspace = uniqueId('sdk3x');
    const honcho = client(workspace);
    const alice = await honcho.peer('alice');
    const [made] = await alice.conclusions.create({ content: 'I like maps' });
    const mark = server.exchanges.length;

    for (const got of [await alice.conclusions.get(made.id), await honcho.conclusions.get(made.id)]) {
      expect(got.id).toBe(made.id);
      expect(got.content).toBe('I like maps');
      expect(got.observerId).toBe('alice');
      expect(got.observedId).toBe('alice');
      expect(got.level).toBe('explicit');
    }
    expect(server.since(mark).map((exchange) => `${exchange.method} ${exchange.path} -> ${exchange.status}`)).toEqual([
      `GET /v3/workspaces/${workspace}/conclusions/${made.id} -> 200`,
      `GET /v3/workspaces/${workspace}/conclusions/${made.id} -> 200`,
    ]);
    // the SDK checks the pair itself
    expect(await rejection(alice.conclusionsOf('bob').get(made.id))).toBeInstanceOf(NotFoundError);
    await alice.conclusions.delete(made.id);
    const gone = await rejection(honcho.conclusions.get(made.id));
    expect(gone).toBeInstanceOf(NotFoundError);
  });
});

/*
 * SDK 2.5.0 is newer than the v3.0.12 contract the server follows: some of its calls reach
 * routes or send filters the contract does not have. Each is pinned with its exact exchange.
 */
describe('@honcho-ai/sdk 2.x over /v3: calls outside the contract (incompatibilities)', () => {
  it('conclusions.derived(id) lists the conclusions whose source_ids hold the id, for the view\'s pair only', async () => {
    const workspace = uniqueId('sdk3x');
    const honcho = client(workspace);
    const alice = await honcho.peer('alice');
    await honcho.peer('bob');
    const [premise] = await alice.conclusions.create({ content: 'Alice walks to work' });
    const [other] = await alice.conclusions.create({ content: 'Alice lives downtown' });
    expect(premise.sourceIds).toBeNull();
    expect(premise.timesDerived).toBe(1);
    // Derived conclusions are written by the reasoning jobs, which the API cannot ask for: store
    // them as those jobs do.
    const derived = (id: string, sourceIds: string[], observerId = 'alice', createdAt = new Date()) => ({
      id,
      workspaceId: workspace,
      observerId,
      observedId: 'alice',
      sessionId: null,
      content: `derived ${id}`,
      level: 'deductive' as const,
      sourceIds,
      timesDerived: 1,
      createdAt,
    });
    const first = uniqueId('d');
    const second = uniqueId('d');
    await server.database.store.memory.insertConclusions([
      derived(first, [premise.id], 'alice', new Date(Date.now() - 1000)),
      derived(second, [other.id, premise.id]),
      derived(uniqueId('d'), [other.id]),
      // the same source, but bob's conclusion: outside alice's view
      derived(uniqueId('d'), [premise.id], 'bob'),
    ]);
    const mark = server.exchanges.length;

    const page = await alice.conclusions.derived(premise.id);
    const items = await collect(page);
    expect(items.map((c) => c.id)).toEqual([second, first]);
    expect(items.map((c) => c.sourceIds)).toEqual([[other.id, premise.id], [premise.id]]);
    expect(items.map((c) => c.level)).toEqual(['deductive', 'deductive']);
    expect(await collect(await alice.conclusions.derived(second))).toEqual([]);
    const exchanges = server.since(mark);
    expectAllOk(exchanges);
    expect(exchanges[0].requestBody).toEqual({ filters: { source_ids: { contains: premise.id }, observer_id: 'alice', observed_id: 'alice' } });
  });

  it('session.context({ sessions }) confines the representation to the allowlist and leaves the card out', async () => {
    const workspace = uniqueId('sdk3x');
    const honcho = client(workspace);
    const assistant = await honcho.peer('assistant');
    const trip = await honcho.session('trip', { peers: ['user', 'assistant'] });
    await honcho.session('other', { peers: ['user', 'assistant'] });
    const [inTrip] = await assistant.conclusionsOf('user').create({ content: 'The user wants to visit Kyoto', sessionId: 'trip' });
    const [elsewhere] = await assistant.conclusionsOf('user').create({ content: 'The user is vegetarian', sessionId: 'other' });
    await assistant.setCard(['Travels in April'], 'user');
    const mark = server.exchanges.length;

    const context = await trip.context({ tokens: 1, peerTarget: 'user', peerPerspective: 'assistant', sessions: ['trip'] });
    // as SDK 2.5.0 documents it: only conclusions stated in the allowed sessions, and no card
    expect(context.peerRepresentation).toContain(inTrip.content);
    expect(context.peerRepresentation).not.toContain(elsewhere.content);
    expect(context.peerCard).toBeNull();
    const [exchange] = server.since(mark);
    expect([exchange.method, exchange.path, exchange.query, exchange.status]).toEqual([
      'GET',
      `/v3/workspaces/${workspace}/sessions/trip/context`,
      'tokens=1&peer_target=user&peer_perspective=assistant&sessions=trip',
      200,
    ]);
  });

  it('honcho.chat() posts to the workspace chat route, which answers 503 without a dialectic model, as peer chat does', async () => {
    const workspace = uniqueId('sdk3x');
    const honcho = client(workspace);
    await honcho.getMetadata();
    const mark = server.exchanges.length;

    const error = await rejection(honcho.chat('What happened this week?'));
    expect(error).toBeInstanceOf(HonchoError);
    expect((error as HonchoError).status).toBe(503);
    expect(server.since(mark).map(describeExchange)).toEqual([
      `POST /v3/workspaces/${workspace}/chat body={"query":"What happened this week?","stream":false} -> 503 {"detail":"Chat needs a dialectic model and none is configured for level low (set LLM_OPENAI_API_KEY or LLM_OPENAI_BASE_URL, or DIALECTIC_LEVELS__low__MODEL_CONFIG__*)"}`,
    ]);
  });
});

