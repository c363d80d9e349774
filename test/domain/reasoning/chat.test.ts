import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startFakeModelServer, type FakeModelServer, type RecordedRequest } from '../../support/fake-model-server.js';
import { tokenCount } from '../../../src/domain/text/token-count.js';
import { buildTestApp, uniqueId, type TestApi } from '../../support/test-app.js';

/*
 * Peer chat end to end over HTTP (reasoning.md R5): the agent's prompt, each tool against stored
 * data and its confinement, the levels' iteration limits, response_format, streaming byte for
 * byte, errors before and after the stream starts, and a client that goes away, with the fake
 * model server answering through the real openai transport, on SQLite or PostgreSQL.
 */

let fake: FakeModelServer;
beforeAll(async () => {
  fake = await startFakeModelServer();
});
afterAll(() => fake.close());

const opened: TestApi[] = [];
async function app(env: Record<string, string> = {}): Promise<TestApi> {
  fake.reset();
  const api = await buildTestApp({ ...fake.env(), DERIVER_ENABLED: 'false', EMBED_MESSAGES: 'false', ...env });
  opened.push(api);
  return api;
}
afterEach(async () => {
  for (const api of opened.splice(0)) await api.close();
});

const chatRequests = () => fake.requests('chat');
const toolNames = (r: RecordedRequest) => (r.body.tools ?? []).map((t: any) => t.function.name);
const toolResults = (r: RecordedRequest): string[] => r.body.messages.filter((m: any) => m.role === 'tool').map((m: any) => m.content);
const userMessage = (r: RecordedRequest): string => r.body.messages.find((m: any) => m.role === 'user').content;
const systemMessage = (r: RecordedRequest): string => r.body.messages.find((m: any) => m.role === 'system').content;

/** A workspace where alice and bob talk in s1, alice and carol in s2, and bob and carol in s3 (alice not a member). */
async function world(api: TestApi, headers: Record<string, string> = {}) {
  const ws = uniqueId();
  await api.post('/v3/workspaces', { id: ws }, { headers });
  for (const peer of ['alice', 'bob', 'carol']) await api.post(`/v3/workspaces/${ws}/peers`, { id: peer }, { headers });
  const session = async (id: string, peers: string[], messages: Array<[string, string]>) => {
    await api.post(`/v3/workspaces/${ws}/sessions`, { id, peers: Object.fromEntries(peers.map((p) => [p, {}])) }, { headers });
    const r = await api.post(`/v3/workspaces/${ws}/sessions/${id}/messages`, { messages: messages.map(([peer_id, content]) => ({ peer_id, content })) }, { headers });
    expect(r.status).toBe(201);
  };
  await session('s1', ['alice', 'bob'], [
    ['alice', 'I adopted a cat named Miso last spring'],
    ['bob', 'Miso is a lovely name'],
  ]);
  await session('s2', ['alice', 'carol'], [['alice', 'Miso knocked my coffee over again']]);
  await session('s3', ['bob', 'carol'], [['carol', 'Secret: Miso belongs to the neighbour too']]);
  return ws;
}

async function conclude(api: TestApi, ws: string, items: Array<{ observer_id: string; observed_id: string; content: string; session_id?: string }>) {
  const r = await api.post(`/v3/workspaces/${ws}/conclusions`, { conclusions: items });
  expect(r.status).toBe(201);
  return JSON.parse(r.text) as Array<{ id: string }>;
}

const call = (name: string, args: unknown) => ({ toolCalls: [{ name, arguments: args }] });

describe('peer chat', () => {
  it('answers {"content": ...} from a prompt with the perspective, the cards and the prefetched memory', async () => {
    const api = await app();
    const ws = await world(api);
    await conclude(api, ws, [
      { observer_id: 'alice', observed_id: 'alice', content: 'Alice has a cat named Miso' },
      { observer_id: 'bob', observed_id: 'alice', content: 'Alice seems tired' },
    ]);
    await api.put(`/v3/workspaces/${ws}/peers/alice/card`, { peer_card: ['IDENTITY: Alice, a cat owner'] });
    fake.script.chat({ text: 'Alice has a cat called Miso.' });
    const embeddingsBefore = fake.requests('embeddings').length;
    const r = await api.post(`/v3/workspaces/${ws}/peers/alice/chat`, { query: 'Does Alice have pets?' });
    // the query is embedded once for both prefetch searches
    expect(fake.requests('embeddings').slice(embeddingsBefore).map((q) => q.body.input)).toEqual([['Does Alice have pets?']]);
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text)).toEqual({ content: 'Alice has a cat called Miso.' });
    const [first] = chatRequests();
    expect(userMessage(first)).toContain('Does Alice have pets?');
    expect(userMessage(first)).toContain('Alice has a cat named Miso');
    // bob's conclusions are not alice's memory
    expect(userMessage(first)).not.toContain('Alice seems tired');
    expect(systemMessage(first)).toContain('IDENTITY: Alice, a cat owner');
    expect(toolNames(first)).toEqual([
      'search_memory',
      'search_messages',
      'grep_messages',
      'get_messages_by_date_range',
      'search_messages_temporal',
      'get_observation_context',
      'get_reasoning_chain',
    ]);
    expect(first.body.max_completion_tokens ?? first.body.max_tokens).toBe(8192);
  });

  it('shows the newest messages of session_id, oldest first, within 4,096 tokens, the same on every chat', async () => {
    const api = await app();
    const ws = uniqueId();
    await api.post('/v3/workspaces', { id: ws });
    await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's1', peers: { alice: {}, bob: {} } });
    // 60 turns of some 80 tokens each: more than the history holds
    const filler = 'the quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat '.repeat(4).trim();
    const turns = Array.from({ length: 60 }, (_, i) => ({ peer_id: i % 2 === 0 ? 'alice' : 'bob', content: `turn ${i}: ${filler}` }));
    expect((await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: turns.slice(0, 30) })).status).toBe(201);
    expect((await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: turns.slice(30) })).status).toBe(201);
    const history = async () => {
      fake.reset();
      fake.script.chat({ text: 'ok' });
      expect((await api.post(`/v3/workspaces/${ws}/peers/alice/chat`, { query: 'What happened?', session_id: 's1' })).status).toBe(200);
      const [, shown = ''] = systemMessage(chatRequests()[0]).split('The newest messages of the current session:\n');
      return shown.split('\n').filter((line) => line.includes('[session s1]'));
    };
    const first = await history();
    const turnOf = (line: string) => Number(/turn (\d+):/.exec(line)?.[1]);
    // the newest turns, oldest first, each line as the message tools show it
    expect(first.length).toBeGreaterThan(10);
    expect(first.map(turnOf)).toEqual(Array.from({ length: first.length }, (_, i) => 60 - first.length + i));
    expect(first.at(-1)).toMatch(/^\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\] \[session s1\] bob: turn 59: the quick/);
    // within the budget, and the next older turn would not have fitted (counted as a whole, each
    // line's count may differ by a token from its prefix and content counted apart)
    const older = `${first[0].replace(/turn \d+:/, `turn ${turnOf(first[0]) - 1}:`)}`;
    expect(tokenCount(first.join('\n'))).toBeLessThanOrEqual(4_096 + first.length);
    expect(tokenCount([older, ...first].join('\n'))).toBeGreaterThan(4_096 - first.length);
    // the same lines on the next chat (their prefixes' counts are kept between chats)
    expect(await history()).toEqual(first);
    // a new message joins at the end; the oldest shown leaves to keep the budget
    expect((await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: `turn 60: ${filler}` }] })).status).toBe(201);
    expect((await history()).map(turnOf)).toEqual([...first.slice(1), 'turn 60:'].map((line) => turnOf(line)));
  });

  it('reads the reference\'s chat limits: session history tokens, message and tool-result characters, input tokens', async () => {
    const api = await app({
      DIALECTIC_SESSION_HISTORY_MAX_TOKENS: '60',
      LLM_MAX_MESSAGE_CONTENT_CHARS: '50',
      LLM_MAX_TOOL_OUTPUT_CHARS: '300',
    });
    const ws = uniqueId();
    await api.post('/v3/workspaces', { id: ws });
    await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's1', peers: { alice: {}, bob: {} } });
    const long = 'Miso ' + 'and the garden and the river '.repeat(10);
    const turns = Array.from({ length: 12 }, (_, i) => ({ peer_id: i % 2 === 0 ? 'alice' : 'bob', content: `turn ${i}: ${long}` }));
    expect((await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: turns })).status).toBe(201);
    fake.script.chat({ toolCalls: [{ name: 'grep_messages', arguments: { text: 'Miso' } }] });
    fake.script.chat({ toolCalls: [{ name: 'grep_messages', arguments: { text: 'garden' } }] });
    fake.script.chat({ text: 'done' });
    const r = await api.post(`/v3/workspaces/${ws}/peers/alice/chat`, { query: 'What about Miso?', session_id: 's1' });
    expect(r.status).toBe(200);
    const [first, second, third] = chatRequests();
    // the history: a few newest turns within 60 tokens, each message cut after 50 characters
    const [, shown = ''] = systemMessage(first).split('The newest messages of the current session:\n');
    const lines = shown.split('\n').filter((line) => line.includes('[session s1]'));
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.length).toBeLessThan(4);
    // a line's content: the message's first 50 characters, marked as cut
    const shownContent = (line: string) => line.slice(line.indexOf(': turn ') + 2);
    const cutTo50 = (line: string) => `${turns[Number(/: turn (\d+):/.exec(line)![1])].content.slice(0, 50)} [cut]`;
    expect(lines.at(-1)).toContain(' bob: turn 11: ');
    for (const line of lines) expect(shownContent(line)).toBe(cutTo50(line));
    expect(tokenCount(lines.join('\n'))).toBeLessThanOrEqual(60 + lines.length);
    // a tool result cut at 300 characters, its messages cut at 50
    const [grep] = toolResults(second);
    expect(grep.length).toBeLessThanOrEqual(300);
    expect(grep).toMatch(/\[cut: \d+ more characters\]$/);
    expect(shownContent(grep.split('\n')[0])).toBe(cutTo50(grep.split('\n')[0]));
    expect(toolResults(third)).toHaveLength(2);

    // DIALECTIC_MAX_INPUT_TOKENS: two tool results of about 1,000 tokens each (nothing cut) do not
    // fit in 1,500, so the last turn drops the oldest; with the default both are sent
    for (const [env, kept] of [[{ DIALECTIC_MAX_INPUT_TOKENS: '1500' }, 1], [{}, 2]] as const) {
      const other = await app(env);
      const otherWs = uniqueId();
      await other.post('/v3/workspaces', { id: otherWs });
      await other.post(`/v3/workspaces/${otherWs}/sessions`, { id: 's1', peers: { alice: {}, bob: {} } });
      expect((await other.post(`/v3/workspaces/${otherWs}/sessions/s1/messages`, { messages: turns })).status).toBe(201);
      fake.script.chat({ toolCalls: [{ name: 'grep_messages', arguments: { text: 'Miso' } }] });
      fake.script.chat({ toolCalls: [{ name: 'grep_messages', arguments: { text: 'garden' } }] });
      fake.script.chat({ text: 'done' });
      expect((await other.post(`/v3/workspaces/${otherWs}/peers/alice/chat`, { query: 'What about Miso?' })).status).toBe(200);
      const last = chatRequests()[2];
      expect(toolResults(chatRequests()[1])[0]).not.toContain('[cut');
      expect(tokenCount(toolResults(chatRequests()[1])[0])).toBeGreaterThan(800);
      expect(toolResults(last)).toHaveLength(kept);
    }
  });

  it('peer_card.use false leaves the cards out; minimal gets two tools, 250 output tokens and 10 prefetched', async () => {
    const api = await app();
    const ws = await world(api);
    await api.put(`/v3/workspaces/${ws}`, { configuration: { peer_card: { use: false } } });
    await api.put(`/v3/workspaces/${ws}/peers/alice/card`, { peer_card: ['IDENTITY: Alice'] });
    await conclude(api, ws, Array.from({ length: 12 }, (_, i) => ({ observer_id: 'alice', observed_id: 'alice', content: `fact number ${i} about Miso` })));
    const r = await api.post(`/v3/workspaces/${ws}/peers/alice/chat`, { query: 'Miso facts', reasoning_level: 'minimal' });
    expect(r.status).toBe(200);
    const [first] = chatRequests();
    expect(systemMessage(first)).not.toContain('IDENTITY: Alice');
    expect(toolNames(first)).toEqual(['search_memory', 'search_messages']);
    expect(first.body.max_completion_tokens ?? first.body.max_tokens).toBe(250);
    expect(userMessage(first).match(/fact number/g)).toHaveLength(10);
  });

  it('search_memory finds the observer\'s conclusions about the target, never another observer\'s', async () => {
    const api = await app();
    const ws = await world(api);
    await conclude(api, ws, [
      { observer_id: 'alice', observed_id: 'bob', content: 'Bob plays the cello' },
      { observer_id: 'carol', observed_id: 'bob', content: 'Bob hates the cello' },
    ]);
    fake.script.chat(call('search_memory', { query: 'cello' }));
    fake.script.chat({ text: 'He plays the cello.' });
    const r = await api.post(`/v3/workspaces/${ws}/peers/alice/chat`, { query: 'music?', target: 'bob' });
    expect(JSON.parse(r.text).content).toBe('He plays the cello.');
    const result = toolResults(chatRequests()[1]).join('\n');
    expect(result).toContain('Bob plays the cello');
    expect(result).not.toContain('hates');
    expect(systemMessage(chatRequests()[0])).toContain('perspective of the peer "alice"');
  });

  it('message tools read the observer\'s sessions only, and only the allowlist when given', async () => {
    const api = await app();
    const ws = await world(api);
    fake.script.chat({ toolCalls: [{ name: 'search_messages', arguments: { query: 'Miso' } }, { name: 'grep_messages', arguments: { text: 'miso' } }] });
    fake.script.chat({ text: 'done' });
    await api.post(`/v3/workspaces/${ws}/peers/alice/chat`, { query: 'Miso?' });
    const [search, grep] = toolResults(chatRequests()[1]);
    for (const result of [search, grep]) {
      expect(result).toContain('adopted a cat named Miso');
      expect(result).toContain('knocked my coffee');
      expect(result).not.toContain('Secret');
    }
    expect(grep.split('\n')).toHaveLength(3);

    fake.reset();
    fake.script.chat({ toolCalls: [{ name: 'grep_messages', arguments: { text: 'Miso' } }, { name: 'get_messages_by_date_range', arguments: { after: '2000-01-01' } }] });
    fake.script.chat({ text: 'done' });
    const r = await api.post(`/v3/workspaces/${ws}/peers/alice/chat`, { query: 'Miso?', filters: { session_id: ['s2'] } });
    expect(r.status).toBe(200);
    for (const result of toolResults(chatRequests()[1])) {
      expect(result).toContain('knocked my coffee');
      expect(result).not.toContain('adopted');
      expect(result).not.toContain('Secret');
    }
    // under an allowlist there is no reasoning chain tool
    expect(toolNames(chatRequests()[0])).not.toContain('get_reasoning_chain');
  });

  it('date range and temporal search honour the dates; bad arguments come back as errors to the model', async () => {
    const api = await app();
    const ws = await world(api);
    fake.script.chat({
      toolCalls: [
        { name: 'get_messages_by_date_range', arguments: { before: '2000-01-01T00:00:00Z' } },
        { name: 'get_messages_by_date_range', arguments: { after: '2000-01-01T00:00:00Z', limit: 1 } },
        { name: 'search_messages_temporal', arguments: { query: 'coffee', after: '2000-01-01' } },
        { name: 'search_messages_temporal', arguments: { query: 'coffee', before: 'not a date' } },
        { name: 'search_messages', arguments: { query: 'x', limit: 500 } },
        { name: 'no_such_tool', arguments: {} },
      ],
    });
    fake.script.chat({ text: 'done' });
    const r = await api.post(`/v3/workspaces/${ws}/peers/alice/chat`, { query: 'when?' });
    expect(r.status).toBe(200);
    const [before2000, oldest, temporal, badDate, badLimit, unknown] = toolResults(chatRequests()[1]);
    expect(before2000).toBe('No messages in that range.');
    expect(oldest.split('\n')).toHaveLength(1);
    expect(oldest).toContain('adopted a cat');
    expect(temporal).toContain('knocked my coffee');
    expect(badDate).toMatch(/^Error: search_messages_temporal failed: before must be an ISO 8601 date/);
    expect(badLimit).toMatch(/^Error: invalid arguments for search_messages: \/limit must be <= 20/);
    expect(unknown).toMatch(/^Error: there is no tool named "no_such_tool"/);
  });

  it('get_observation_context shows the source messages; get_reasoning_chain the premises', async () => {
    const api = await app();
    const ws = await world(api);
    const messages = JSON.parse((await api.post(`/v3/workspaces/${ws}/sessions/s1/messages/list`, {})).text).items as Array<{ id: string }>;
    const store = api.database.store.memory;
    const now = new Date();
    const base = { workspaceId: ws, observerId: 'alice', observedId: 'alice', timesDerived: 1, createdAt: now };
    await store.insertConclusions([
      { ...base, id: 'explicit1', sessionId: 's1', content: 'Alice has a cat', level: 'explicit', sourceIds: [messages[0].id] },
      { ...base, id: 'deduced1', sessionId: null, content: 'Alice buys cat food', level: 'deductive', sourceIds: ['explicit1'] },
    ]);
    fake.script.chat({ toolCalls: [{ name: 'get_observation_context', arguments: { observation_id: 'explicit1' } }, { name: 'get_reasoning_chain', arguments: { observation_id: 'deduced1' } }, { name: 'get_reasoning_chain', arguments: { observation_id: 'nope' } }] });
    fake.script.chat({ text: 'done' });
    await api.post(`/v3/workspaces/${ws}/peers/alice/chat`, { query: 'cat?' });
    const [context, chain, missing] = toolResults(chatRequests()[1]);
    expect(context).toContain('Alice has a cat');
    expect(context).toContain('alice: I adopted a cat named Miso');
    expect(chain.split('\n')[0]).toContain('Alice buys cat food');
    expect(chain).toContain('<- [id explicit1] [explicit]');
    expect(missing).toMatch(/no conclusion with id nope/);
  });

  it.each([
    ['minimal', 1],
    ['low', 5],
    ['medium', 2],
    ['high', 4],
    ['max', 10],
  ])('level %s: %i turns with tools, then one without', async (level, turns) => {
    const api = await app();
    const ws = await world(api);
    fake.script.defaultChat((request) => (request.body.tools ? call('search_memory', { query: 'x' }) : { text: 'final' }));
    const r = await api.post(`/v3/workspaces/${ws}/peers/alice/chat`, { query: 'q', reasoning_level: level });
    expect(JSON.parse(r.text).content).toBe('final');
    expect(chatRequests().map((q) => (q.body.tools ? 'tools' : 'none'))).toEqual([...Array(turns).fill('tools'), 'none']);
  });

  it('a level setting changes its iteration limit', async () => {
    const api = await app({ DIALECTIC_LEVELS__low__MAX_TOOL_ITERATIONS: '3' });
    const ws = await world(api);
    fake.script.defaultChat((request) => (request.body.tools ? call('search_memory', { query: 'x' }) : { text: 'final' }));
    await api.post(`/v3/workspaces/${ws}/peers/alice/chat`, { query: 'q' });
    expect(chatRequests()).toHaveLength(4);
  });

  describe('response_format', () => {
    const schema = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'], additionalProperties: false };

    it('content is JSON that validates', async () => {
      const api = await app();
      const ws = await world(api);
      fake.script.chat({ json: { name: 'Miso' } });
      const r = await api.post(`/v3/workspaces/${ws}/peers/alice/chat`, { query: 'cat name?', response_format: schema });
      expect(r.status).toBe(200);
      expect(JSON.parse(JSON.parse(r.text).content)).toEqual({ name: 'Miso' });
      expect(systemMessage(chatRequests()[0])).toContain(JSON.stringify(schema));
    });

    it('an answer that does not validate is retried once with the schema asked for, then a 502', async () => {
      const api = await app();
      const ws = await world(api);
      fake.script.chat({ text: 'Miso' });
      fake.script.chat({ json: { name: 'Miso' } });
      const ok = await api.post(`/v3/workspaces/${ws}/peers/alice/chat`, { query: 'cat name?', response_format: schema });
      expect(JSON.parse(JSON.parse(ok.text).content)).toEqual({ name: 'Miso' });
      expect(chatRequests()[1].body.response_format.json_schema.schema).toEqual(schema);

      fake.reset();
      fake.script.chat({ json: { name: 1 } });
      fake.script.chat({ json: { nom: 'Miso' } });
      const bad = await api.post(`/v3/workspaces/${ws}/peers/alice/chat`, { query: 'cat name?', response_format: schema });
      expect(bad.status).toBe(502);
      expect(JSON.parse(bad.text).detail).toMatch(/does not validate against response_format/);
      expect(chatRequests()).toHaveLength(2);
    });

    it('a schema that cannot be used is 422 "Invalid response_format", before any model call', async () => {
      const api = await app();
      const ws = await world(api);
      for (const format of [{ type: 'string' }, { type: 'object', properties: { a: { type: 'nonsense' } } }]) {
        const r = await api.post(`/v3/workspaces/${ws}/peers/alice/chat`, { query: 'q', response_format: format });
        expect(r.status).toBe(422);
        expect(JSON.parse(r.text).detail).toMatch(/^Invalid response_format: /);
      }
      expect(chatRequests()).toHaveLength(0);
    });
  });

  describe('errors before the answer', () => {
    it('404 for an unknown target or session; 422 for a bad allowlist', async () => {
      const api = await app();
      const ws = await world(api);
      const target = await api.post(`/v3/workspaces/${ws}/peers/alice/chat`, { query: 'q', target: 'nobody' });
      expect(target.status).toBe(404);
      expect(JSON.parse(target.text).detail).toBe(`Peer nobody not found in workspace ${ws}`);
      expect((await api.post(`/v3/workspaces/${ws}/peers/alice/chat`, { query: 'q', session_id: 'nope' })).status).toBe(404);
      const filters = await api.post(`/v3/workspaces/${ws}/peers/alice/chat`, { query: 'q', filters: { peer_id: 'x' } });
      expect(filters.status).toBe(422);
      expect(chatRequests()).toHaveLength(0);
    });

    it('a peer key must be an active member of session_id and of every allowed session (401 otherwise)', async () => {
      const api = await app({ AUTH_USE_AUTH: 'true' });
      const ws = await world(api, { authorization: `Bearer ${api.token({ isAdmin: true })}` });
      const alice = { headers: { authorization: `Bearer ${api.token({ workspaceId: ws, peerId: 'alice' })}` } };
      const chat = (body: object) => api.post(`/v3/workspaces/${ws}/peers/alice/chat`, { query: 'q', ...body }, alice);
      for (const body of [{ session_id: 's3' }, { filters: { session_id: ['s1', 's3'] } }]) {
        const refused = await chat(body);
        expect(refused.status).toBe(401);
        expect(JSON.parse(refused.text)).toEqual({ detail: 'JWT not permissioned for this resource' });
      }
      expect(chatRequests()).toHaveLength(0);
      expect((await chat({ session_id: 's1', filters: { session_id: ['s1', 's2'] } })).status).toBe(200);
    });

    it('503 with a clear detail when no dialectic model is configured', async () => {
      const api = await buildTestApp({});
      opened.push(api);
      const ws = uniqueId();
      await api.post('/v3/workspaces', { id: ws });
      const r = await api.post(`/v3/workspaces/${ws}/peers/alice/chat`, { query: 'q' });
      expect(r.status).toBe(503);
      expect(JSON.parse(r.text).detail).toMatch(/^Chat needs a dialectic model and none is configured/);
      const v2 = await api.post(`/v2/workspaces/${ws}/peers/alice/chat`, { query: 'q', stream: true });
      expect(v2.status).toBe(503);
      expect(v2.headers['content-type']).toMatch(/^application\/json/);
    });

    it('502 when the provider fails', async () => {
      const api = await app({ LLM_MAX_RETRIES: '0' });
      const ws = await world(api);
      fake.script.chat({ status: 500 });
      const r = await api.post(`/v3/workspaces/${ws}/peers/alice/chat`, { query: 'q' });
      expect(r.status).toBe(502);
      expect(JSON.parse(r.text).detail).toMatch(/^The dialectic model failed: /);
    });
  });

  describe('streaming', () => {
    it('streams the final turn in the reference\'s exact wire format, asked of the model once', async () => {
      const api = await app();
      const ws = await world(api);
      fake.script.chat(call('search_memory', { query: 'cat' }));
      fake.script.chat({ text: 'Hello wörld "ok"', chunks: ['Hel', 'lo wörld', ' "ok"'] });
      const r = await api.post(`/v3/workspaces/${ws}/peers/alice/chat`, { query: 'q', stream: true });
      expect(r.status).toBe(200);
      expect(r.headers['content-type']).toBe('text/event-stream');
      expect(r.text).toBe(
        'data: {"delta": {"content": "Hel"}, "done": false}\n\n' +
          'data: {"delta": {"content": "lo w\\u00f6rld"}, "done": false}\n\n' +
          'data: {"delta": {"content": " \\"ok\\""}, "done": false}\n\n' +
          'data: {"done": true}\n\n',
      );
      // two model calls: the tool turn and the streamed answer, nothing generated twice
      expect(chatRequests().map((q) => q.stream)).toEqual([true, true]);
    });

    it('an error after the stream started ends it with done and an error message', async () => {
      const api = await app({ LLM_MAX_RETRIES: '0' });
      const ws = await world(api);
      fake.script.chat({ text: 'Let me look. ', chunks: ['Let me look. '], toolCalls: [{ name: 'search_memory', arguments: { query: 'x' } }] });
      fake.script.chat({ status: 400 });
      const r = await api.post(`/v3/workspaces/${ws}/peers/alice/chat`, { query: 'q', stream: true });
      expect(r.status).toBe(200);
      const events = r.text.split('\n\n').filter((e) => e !== '');
      expect(events[0]).toBe('data: {"delta": {"content": "Let me look. "}, "done": false}');
      const last = JSON.parse(events.at(-1)!.slice('data: '.length));
      expect(last.done).toBe(true);
      expect(last.error.message).toMatch(/^The dialectic model failed: /);
    });

    it('the v2 twin streams too', async () => {
      const api = await app();
      const ws = await world(api);
      fake.script.chat({ text: 'ab', chunks: ['a', 'b'] });
      const r = await api.post(`/v2/workspaces/${ws}/peers/alice/chat`, { query: 'q', stream: true });
      expect(r.text).toBe('data: {"delta": {"content": "a"}, "done": false}\n\ndata: {"delta": {"content": "b"}, "done": false}\n\ndata: {"done": true}\n\n');
      fake.script.chat({ text: 'plain' });
      const plain = await api.post(`/v2/workspaces/${ws}/peers/alice/chat`, { query: 'q' });
      expect(JSON.parse(plain.text)).toEqual({ content: 'plain' });
    });

    it.each([true, false])('a client that disconnects aborts the model call (stream: %s)', async (stream) => {
      const api = await app({ METRICS_ENABLED: 'true' });
      const ws = await world(api);
      await api.app.listen({ port: 0, host: '127.0.0.1' });
      const port = (api.app.server.address() as AddressInfo).port;
      fake.script.chat({ text: 'slow', delayMs: 3_000 });
      const started = Date.now();
      await new Promise<void>((resolve) => {
        const req = httpRequest({ host: '127.0.0.1', port, method: 'POST', path: `/v3/workspaces/${ws}/peers/alice/chat`, headers: { 'content-type': 'application/json', authorization: `Bearer ${api.token({})}` } });
        req.on('error', () => resolve());
        req.end(JSON.stringify({ query: 'q', stream }));
        // wait until the model has been asked, then go away
        const poll = setInterval(() => {
          if (chatRequests().length > 0) {
            clearInterval(poll);
            req.destroy();
            resolve();
          }
        }, 10);
      });
      let metrics = '';
      for (let i = 0; i < 100 && !metrics.includes('outcome="aborted"'); i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        metrics = (await api.get('/metrics')).text;
      }
      expect(metrics).toContain(`engram_chat_requests_total{level="low",stream="${stream}",outcome="aborted"} 1`);
      expect(metrics).toMatch(/engram_model_call_failures_total\{module="dialectic",model="openai\/fake-chat",reason="aborted"\} 1/);
      expect(Date.now() - started).toBeLessThan(2_500);
    });
  });

  it('reports each chat\'s tool calls and tokens as metrics', async () => {
    const api = await app({ METRICS_ENABLED: 'true' });
    const ws = await world(api);
    fake.script.chat({ ...call('search_memory', { query: 'x' }), usage: { input: 100, output: 7 } });
    fake.script.chat({ text: 'ok', usage: { input: 150, output: 3 } });
    await api.post(`/v3/workspaces/${ws}/peers/alice/chat`, { query: 'q' });
    const metrics = (await api.get('/metrics')).text;
    expect(metrics).toContain('engram_chat_requests_total{level="low",stream="false",outcome="ok"} 1');
    expect(metrics).toContain('engram_chat_tool_calls_total{tool="search_memory",ok="true"} 1');
    expect(metrics).toContain('engram_chat_tokens_total{level="low",direction="input"} 250');
    expect(metrics).toContain('engram_chat_tokens_total{level="low",direction="output"} 10');
  });
});

describe('workspace chat', () => {
  it('answers from every message of the workspace (or of session_id), without conclusion tools', async () => {
    const api = await app();
    const ws = await world(api);
    fake.script.chat(call('grep_messages', { text: 'Miso' }));
    fake.script.chat({ text: 'Miso is a cat.' });
    const r = await api.post(`/v3/workspaces/${ws}/chat`, { query: 'Who is Miso?' });
    expect(JSON.parse(r.text)).toEqual({ content: 'Miso is a cat.' });
    const [first, second] = chatRequests();
    expect(toolNames(first)).toEqual(['search_messages', 'grep_messages', 'get_messages_by_date_range', 'search_messages_temporal']);
    expect(userMessage(first)).toContain('Messages found:');
    expect(toolResults(second)[0].split('\n')).toHaveLength(4);

    fake.reset();
    fake.script.chat(call('grep_messages', { text: 'Miso' }));
    fake.script.chat({ text: 'ok', chunks: ['o', 'k'] });
    const streamed = await api.post(`/v3/workspaces/${ws}/chat`, { query: 'Who is Miso?', session_id: 's3', stream: true });
    expect(streamed.text).toBe('data: {"delta": {"content": "o"}, "done": false}\n\ndata: {"delta": {"content": "k"}, "done": false}\n\ndata: {"done": true}\n\n');
    const grep = toolResults(chatRequests()[1])[0];
    expect(grep).toContain('Secret');
    expect(grep.split('\n')).toHaveLength(1);
  });
});
