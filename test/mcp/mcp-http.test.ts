import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { Ajv } from 'ajv';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintToken } from '../../src/http/shared/auth.js';
import { USAGE_WRITE_DELAY_MS } from '../../src/runtime/model-usage.js';
import { startFakeModelServer, type FakeModelServer } from '../support/fake-model-server.js';
import { startServerProcess, type ServerProcess } from '../support/server-process.js';
import { databaseForProcesses, uniqueId } from '../support/test-app.js';
import { REFERENCE_TOOL_NAMES, call, fixture, httpClient, ok, refused, snapshot, toolArguments } from './mcp-support.js';

/**
 * The MCP server at /mcp of a real `engram serve` process, through the official SDK's client:
 * one process with auth off and the fake model server, one with auth on, on the same store.
 */
const SECRET = 'mcp-test-secret-of-reasonable-length';
const dir = mkdtempSync(join(tmpdir(), 'engram-mcp-'));
const databaseUrl = databaseForProcesses(dir);

let fake: FakeModelServer;
let open: ServerProcess;
let secured: ServerProcess;
const clients: Client[] = [];

async function client(base: string, headers: Record<string, string> = {}): Promise<Client> {
  const c = await httpClient(base, headers);
  clients.push(c);
  return c;
}

const bearer = (claims: Parameters<typeof mintToken>[1]) => ({ authorization: `Bearer ${mintToken(SECRET, claims)}` });

beforeAll(async () => {
  fake = await startFakeModelServer();
  const env = { DATABASE_URL: databaseUrl(), LOG_LEVEL: 'warn', DERIVER_ENABLED: 'false', EMBED_MESSAGES: 'false', LLM_MAX_RETRIES: '0' };
  [open, secured] = await Promise.all([
    startServerProcess({ ...env, ...fake.env() }),
    startServerProcess({ ...env, AUTH_USE_AUTH: 'true', AUTH_JWT_SECRET: SECRET }),
  ]);
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  for (const server of [open, secured]) server?.child.kill('SIGTERM');
  await Promise.all([open?.exited, secured?.exited]);
  await fake?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('MCP over Streamable HTTP', () => {
  it('lists every tool of the reference with valid input and output schemas, and sends instructions', async () => {
    const c = await client(open.baseUrl);
    const { tools } = await c.listTools();
    const names = tools.map((t) => t.name);
    expect(names.slice(0, REFERENCE_TOOL_NAMES.length)).toEqual(REFERENCE_TOOL_NAMES);
    expect(names).toContain('list_peer_sessions');
    const ajv = new Ajv({ strict: false });
    for (const t of tools) {
      expect(t.inputSchema.type, t.name).toBe('object');
      expect(t.outputSchema?.type, t.name).toBe('object');
      expect(() => ajv.compile(t.inputSchema), t.name).not.toThrow();
      expect(() => ajv.compile(t.outputSchema!), t.name).not.toThrow();
      expect(t.description?.length ?? 0, t.name).toBeGreaterThan(20);
      // every tool but list_workspaces names its workspace
      expect(Object.keys(t.inputSchema.properties ?? {}).includes('workspace_id'), t.name).toBe(t.name !== 'list_workspaces');
    }
    const instructions = c.getInstructions() ?? '';
    for (const word of ['peer', 'session', 'observe', 'conclusion', 'chat', 'search']) expect(instructions).toContain(word);
  });

  it('runs every tool on a fixture workspace with the answers the routes give', async () => {
    const w = uniqueId('mcp');
    const c = await client(open.baseUrl, { 'X-Honcho-Workspace-ID': w });
    const called = new Set<string>();
    const run = async (name: string, args: Record<string, unknown> = {}) => {
      called.add(name);
      return ok(c, name, args);
    };
    const refusedHere = (name: string, args: Record<string, unknown>) => refused(c, name, args);
    expect(await run('create_workspace', { workspace_id: w, metadata: { project: 'tests' } })).toMatchObject({ id: w, metadata: { project: 'tests' } });
    expect(await run('create_peer', { peer_id: 'alice' })).toEqual({ peer_id: 'alice', configuration: {} });
    expect((await run('create_peer', { peer_id: 'bot', configuration: { observeMe: false } })).configuration).toEqual({ observe_me: false });
    expect(await run('create_session', { session_id: 's1' })).toEqual({ session_id: 's1' });
    expect(await run('add_peers_to_session', { session_id: 's1', peers: ['alice', { peer_id: 'bot', observe_me: false, observe_others: true }] })).toEqual({
      session_id: 's1',
      peers: ['alice', 'bot'],
    });
    const added = await run('add_messages_to_session', {
      session_id: 's1',
      messages: [
        { peer_id: 'alice', content: 'I went hiking in the Alps last week', metadata: { mood: 'happy' } },
        { peer_id: 'bot', content: 'That sounds wonderful' },
      ],
    });
    expect(added.message_ids).toHaveLength(2);

    const history = await run('get_session_messages', { session_id: 's1' });
    expect(history.messages.map((m: { content: string }) => m.content)).toEqual(['I went hiking in the Alps last week', 'That sounds wonderful']);
    expect(history).toMatchObject({ total: 2, page: 1, pages: 1 });
    expect((await run('get_session_messages', { session_id: 's1', filters: { peer_id: 'bot' } })).total).toBe(1);
    expect(await run('get_session_message', { session_id: 's1', message_id: added.message_ids[0] })).toMatchObject({ peer_id: 'alice', metadata: { mood: 'happy' } });
    const context = await run('get_session_context', { session_id: 's1', tokens: 1000 });
    expect(context.messages).toHaveLength(2);
    expect(context.summary).toBeNull();
    expect((await run('get_session_peers', { session_id: 's1' })).peers).toEqual(['alice', 'bot']);
    expect(await run('inspect_session', { session_id: 's1' })).toMatchObject({ message_count: 2, peers: [{ id: 'alice' }, { id: 'bot' }], summaries: { short_summary: null } });

    const found = await run('search', { query: 'hiking', session_id: 's1' });
    expect(found.messages.map((m: { content: string }) => m.content)).toEqual(['I went hiking in the Alps last week']);

    expect(await run('set_metadata', { peer_id: 'alice', metadata: { city: 'Bern' } })).toEqual({ target: 'peer', id: 'alice', metadata: { city: 'Bern' } });
    expect(await run('get_metadata', { peer_id: 'alice' })).toEqual({ metadata: { city: 'Bern' } });
    // keys named as prototype members are data like any other (zod 4.0 refused them as "not a
    // record"); `__proto__` alone is dropped by the SDK's argument validation (docs/mcp.md)
    await run('set_metadata', { session_id: 's1', metadata: JSON.parse('{"constructor": null, "__proto__": {"a": 1}, "toString": 2}') });
    // compared without key order, which PostgreSQL's jsonb does not keep
    expect(Object.entries((await run('get_metadata', { session_id: 's1' })).metadata).sort()).toEqual([['constructor', null], ['toString', 2]]);
    await run('set_metadata', { session_id: 's1', metadata: { topic: 'travel' } });
    expect(await run('get_metadata', { session_id: 's1' })).toEqual({ metadata: { topic: 'travel' } });
    await run('set_metadata', { metadata: { project: 'renamed' } });
    expect(await run('get_metadata', {})).toEqual({ metadata: { project: 'renamed' } });

    expect(await run('list_peers')).toMatchObject({ peers: [{ id: 'alice' }, { id: 'bot' }], total: 2 });
    expect(await run('list_sessions')).toMatchObject({ sessions: [{ id: 's1' }], total: 1 });
    expect(await run('inspect_workspace')).toMatchObject({ workspace_id: w, metadata: { project: 'renamed' }, peer_count: 2, session_count: 1 });
    const workspaces = await run('list_workspaces', { size: 100 });
    expect(workspaces.total).toBeGreaterThanOrEqual(1);

    const created = await run('create_conclusions', { peer_id: 'bot', target_peer_id: 'alice', conclusions: ['Alice hikes in the Alps', 'Alice drinks green tea'], session_id: 's1' });
    expect(created.conclusions.map((x: { content: string }) => x.content)).toEqual(['Alice hikes in the Alps', 'Alice drinks green tea']);
    expect((await run('list_conclusions', { peer_id: 'bot', target_peer_id: 'alice' })).total).toBe(2);
    // ranked by meaning with the fake embedder (hashed vectors), so only membership is fixed
    const queried = (await run('query_conclusions', { peer_id: 'bot', target_peer_id: 'alice', query: 'tea' })).conclusions;
    expect(queried.map((x: { content: string }) => x.content)).toContain('Alice drinks green tea');
    expect(queried.every((x: { observer_id: string; observed_id: string }) => x.observer_id === 'bot' && x.observed_id === 'alice')).toBe(true);
    // the peer's own conclusions join a peer search
    await run('create_conclusions', { peer_id: 'alice', target_peer_id: 'alice', conclusions: ['I like hiking'] });
    expect((await run('search', { query: 'hiking', peer_id: 'alice' })).conclusions.map((x: { content: string }) => x.content)).toEqual(['I like hiking']);

    expect(await run('set_peer_card', { peer_id: 'bot', target_peer_id: 'alice', peer_card: ['Hiker', 'Tea drinker'] })).toEqual({ peer_card: ['Hiker', 'Tea drinker'] });
    expect(await run('get_peer_card', { peer_id: 'bot', target_peer_id: 'alice' })).toEqual({ peer_card: ['Hiker', 'Tea drinker'] });
    const peerContext = await run('get_peer_context', { peer_id: 'bot', target_peer_id: 'alice' });
    expect(peerContext).toMatchObject({ peer_id: 'bot', target_id: 'alice', peer_card: ['Hiker', 'Tea drinker'] });
    expect(peerContext.representation).toContain('Alice hikes in the Alps');
    expect((await run('get_representation', { peer_id: 'bot', target_peer_id: 'alice', search_query: 'tea' })).representation).toContain('Alice drinks green tea');
    await run('delete_conclusion', { peer_id: 'bot', target_peer_id: 'alice', conclusion_id: created.conclusions[0].id });
    expect((await run('list_conclusions', { peer_id: 'bot', target_peer_id: 'alice' })).conclusions.map((x: { content: string }) => x.content)).toEqual(['Alice drinks green tea']);

    // a fact that changed: the new one current, the old one kept as superseded, as the route shows it
    const contents = (page: Record<string, unknown>) => (page.conclusions as { content: string }[]).map((x) => x.content);
    const [tea] = (await run('list_conclusions', { peer_id: 'bot', target_peer_id: 'alice' })).conclusions;
    const replaced = await run('replace_conclusion', { peer_id: 'bot', target_peer_id: 'alice', conclusion_ids: [tea.id], content: 'Alice drinks black coffee now' });
    expect(replaced).toMatchObject({ conclusion: { content: 'Alice drinks black coffee now', observer_id: 'bot', observed_id: 'alice', level: 'explicit' }, superseded: [tea.id] });
    expect(contents(await run('list_conclusions', { peer_id: 'bot', target_peer_id: 'alice' }))).toEqual(['Alice drinks black coffee now']);
    const withOld = await run('list_conclusions', { peer_id: 'bot', target_peer_id: 'alice', include_superseded: true });
    expect(contents(withOld)).toEqual(['Alice drinks black coffee now', 'Alice drinks green tea']);
    const onRoute = await (await fetch(`${open.baseUrl}/v3/workspaces/${w}/conclusions/${tea.id}`)).json();
    expect(onRoute.superseded_by).toBe(replaced.conclusion.id);
    expect(withOld.conclusions[1]).toEqual({ ...tea, superseded_at: onRoute.superseded_at, superseded_by: replaced.conclusion.id });
    expect(withOld.conclusions[0].superseded_at).toBeUndefined();

    // forgetting at a person's request: a preview and its token, then exactly what it showed
    await run('create_conclusions', { peer_id: 'bot', target_peer_id: 'alice', conclusions: ['Alice has a dentist appointment on Monday'] });
    const preview = await run('forget', { target_peer_id: 'alice', peer_id: 'bot', query: 'dentist appointment' });
    expect(preview).toMatchObject({ status: 'preview', token: expect.any(String), expires_at: expect.any(String) });
    expect(contents(preview)).toContain('Alice has a dentist appointment on Monday');
    expect(await refusedHere('forget', { target_peer_id: 'alice', peer_id: 'bot', query: 'something else', token: preview.token })).toMatch(/^Failed to forget: /);
    const forgotten = await run('forget', { target_peer_id: 'alice', peer_id: 'bot', query: 'dentist appointment', token: preview.token });
    expect(forgotten).toMatchObject({ status: 'forgotten', record: { observed: 'alice', observer: 'bot', conclusions_removed: preview.conclusions.length, messages_removed: 0 } });
    const left = (await run('list_conclusions', { peer_id: 'bot', target_peer_id: 'alice', include_superseded: true })).conclusions.map((x: { id: string }) => x.id);
    for (const gone of preview.conclusions as { id: string }[]) expect(left).not.toContain(gone.id);

    // the workspace's counts, as the route gives them, once the last model calls' usage is
    // written (USAGE_WRITE_DELAY_MS after them; a message's embedding job may still be running)
    const statisticsUrl = `${open.baseUrl}/v3/workspaces/${w}/statistics?hours=48`;
    const onStatisticsRoute = async () => (await fetch(statisticsUrl)).json();
    await expect.poll(async () => {
      const before = await onStatisticsRoute();
      await new Promise((resolve) => setTimeout(resolve, 2 * USAGE_WRITE_DELAY_MS));
      return isDeepStrictEqual(before, await onStatisticsRoute());
    }, { timeout: 15_000, interval: 0 }).toBe(true);
    const statistics = await run('get_workspace_statistics', { hours: 48 });
    expect(statistics).toEqual(await onStatisticsRoute());
    expect(statistics).toMatchObject({ workspace_id: w, peers: 2, sessions: 1, messages: 2, model_usage: { hours: 48 } });

    fake.script.chat({ text: 'Alice enjoys hiking and green tea.' });
    const answer = await call(c, 'chat', { peer_id: 'bot', target_peer_id: 'alice', query: 'What does Alice enjoy?', session_id: 's1', reasoning_level: 'medium' });
    called.add('chat');
    expect(answer).toMatchObject({ isError: false, text: 'Alice enjoys hiking and green tea.', data: { content: 'Alice enjoys hiking and green tea.' } });
    expect(JSON.stringify(fake.requests('chat').at(-1)?.body)).toContain('What does Alice enjoy?');

    expect(['queued', 'skipped']).toContain((await run('schedule_dream', { peer_id: 'bot', target_peer_id: 'alice' })).status);
    expect((await run('get_queue_status')).total_work_units).toBeGreaterThanOrEqual(0);

    const clone = await run('clone_session', { session_id: 's1', message_id: added.message_ids[0] });
    expect(clone.session_id).not.toBe('s1');
    expect((await run('get_session_messages', { session_id: clone.session_id })).total).toBe(1);
    await run('remove_peers_from_session', { session_id: 's1', peer_ids: ['bot'] });
    expect((await run('get_session_peers', { session_id: 's1' })).peers).toEqual(['alice']);
    await run('delete_session', { session_id: clone.session_id });
    expect((await run('list_sessions')).sessions.map((s: { id: string }) => s.id)).toEqual(['s1']);
    // a deleted session is listed as inactive until it is purged in the background (as on the route)
    const ofAlice = (await run('list_peer_sessions', { peer_id: 'alice' })).sessions;
    expect(ofAlice.filter((s: { is_active: boolean }) => s.is_active).map((s: { id: string }) => s.id)).toEqual(['s1']);

    // scopes: made, given a session (its background copy queued), listed, and the session removed
    expect(await run('create_scope', { scope_id: 'work', metadata: { k: 'v' } })).toMatchObject({ created: true, scope: { id: 'work', metadata: { k: 'v' } } });
    expect((await run('list_scopes')).scopes.map((s: { id: string }) => s.id)).toEqual(['work']);
    expect(await run('add_sessions_to_scope', { scope_id: 'work', session_ids: ['s1'] })).toEqual({ scope_id: 'work', added: ['s1'] });
    expect((await run('list_scope_sessions', { scope_id: 'work' })).sessions).toEqual([{ id: 's1' }]);
    expect(Object.keys((await run('get_scope_status', { scope_id: 'work' })).backfill_status)).toEqual(['s1']);
    await run('remove_session_from_scope', { scope_id: 'work', session_id: 's1' });
    expect((await run('list_scope_sessions', { scope_id: 'work' })).total).toBe(0);

    const { tools } = await c.listTools();
    expect([...called].sort()).toEqual(tools.map((t) => t.name).sort());
  });

  it('answers a long chat in full, and chat without a model with the API message', async () => {
    const w = uniqueId('mcp');
    const c = await client(open.baseUrl, { 'X-Honcho-Workspace-ID': w });
    const long = 'word '.repeat(20_000).trim();
    fake.script.chat({ text: long });
    const answer = await call(c, 'chat', { peer_id: 'alice', query: 'Tell me everything' });
    expect(answer.text).toBe(long);
    expect(answer.data).toEqual({ content: long });

    // the secured server has no model
    const admin = await client(secured.baseUrl, bearer({ isAdmin: true }));
    expect(await refused(admin, 'chat', { workspace_id: w, peer_id: 'alice', query: 'hello' })).toMatch(/^Chat failed: Chat needs a dialectic model and none is configured/);
  });

  it('answers every tool with a tool error carrying the API message, and keeps serving', async () => {
    const c = await client(open.baseUrl);
    const args = toolArguments({ w: 'not a valid id!', messageId: 'm', conclusionId: 'c' });
    const { tools } = await c.listTools();
    for (const t of tools) {
      if (t.name === 'list_workspaces') {
        expect(await refused(c, t.name, { page: 0 })).toContain('Input validation error');
        continue;
      }
      const text = await refused(c, t.name, args[t.name]);
      expect(text, t.name).toMatch(/^[A-Z][a-z]+( [a-z]+)*( failed)?: .*String should match pattern/);
    }
    // no workspace anywhere: a clear error, not a default workspace
    expect(await refused(c, 'list_peers')).toMatch(/^Failed to list peers: Missing workspace_id\./);
    // errors the domain gives
    const w = uniqueId('mcp');
    const f = await fixture(c, w);
    expect(await refused(c, 'get_session_message', { workspace_id: w, session_id: 's1', message_id: 'missing' })).toBe('Failed to get message: Message with ID missing not found');
    expect(await refused(c, 'delete_conclusion', { workspace_id: w, peer_id: 'bot', target_peer_id: 'alice', conclusion_id: 'missing' })).toMatch(/^Failed to delete conclusion: Document missing not found/);
    expect(await refused(c, 'query_conclusions', { workspace_id: w, peer_id: 'bot', query: 'x', filters: { observer: 'alice' } })).toMatch(/^Query failed: Filter key\(s\) observer/);
    expect(await refused(c, 'add_messages_to_session', { workspace_id: w, session_id: 's1', messages: [] })).toMatch(/^Failed to add messages: messages: List should have at least 1 item/);
    // malformed calls: wrong argument types, an unknown tool
    expect(await refused(c, 'create_session', { workspace_id: w, session_id: 42 })).toContain('Input validation error');
    expect(await refused(c, 'no_such_tool', {})).toContain('Tool no_such_tool not found');
    // a body that is not JSON, then one that is not JSON-RPC: protocol errors, and the server still serves
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const broken = await fetch(`${open.baseUrl}/mcp`, { method: 'POST', headers, body: '{"jsonrpc": ' });
    expect(broken.status).toBe(400);
    expect(await broken.json()).toMatchObject({ error: { code: -32700 } });
    const notRpc = await fetch(`${open.baseUrl}/mcp`, { method: 'POST', headers, body: '{"hello": 1}' });
    expect(notRpc.status).toBe(400);
    expect((await fetch(`${open.baseUrl}/mcp`)).status).toBe(405);
    expect((await ok(c, 'get_session_message', { workspace_id: w, session_id: 's1', message_id: f.messageId })).content).toBe('I went hiking in the Alps last week');
  });
});

describe('MCP authentication and scopes', () => {
  it('answers 401 with WWW-Authenticate pointing at the RFC 9728 metadata, without a key or with a bad one', async () => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const none = await fetch(`${secured.baseUrl}/mcp`, { method: 'POST', headers, body });
    expect(none.status).toBe(401);
    expect(await none.json()).toEqual({ detail: 'No access token provided' });
    const challenge = none.headers.get('www-authenticate')!;
    expect(challenge).toBe(`Bearer resource_metadata="${secured.baseUrl}/.well-known/oauth-protected-resource/mcp"`);
    const bad = await fetch(`${secured.baseUrl}/mcp`, { method: 'POST', headers: { ...headers, authorization: 'Bearer not.a.jwt' }, body });
    expect(bad.status).toBe(401);
    expect(bad.headers.get('www-authenticate')).toContain('error="invalid_token"');
    const wrongSecret = await fetch(`${secured.baseUrl}/mcp`, { method: 'POST', headers: { ...headers, authorization: `Bearer ${mintToken('another-secret-of-some-length', { isAdmin: true })}` }, body });
    expect(wrongSecret.status).toBe(401);

    for (const url of [/resource_metadata="([^"]+)"/.exec(challenge)![1], `${secured.baseUrl}/.well-known/oauth-protected-resource`]) {
      const metadata = await fetch(url);
      expect(metadata.status).toBe(200);
      expect(await metadata.json()).toEqual({ resource: `${secured.baseUrl}/mcp`, resource_name: 'Engram', bearer_methods_supported: ['header'] });
    }
    // the SDK's client gets no further without a key
    await expect(httpClient(secured.baseUrl)).rejects.toThrow();
  });

  it("a workspace key reaches nothing of another workspace through any tool, and its own through its claim", async () => {
    const admin = await client(secured.baseUrl, bearer({ isAdmin: true }));
    const w = uniqueId('mcp');
    const f = await fixture(admin, w);
    const before = await snapshot(admin, w);
    const other = uniqueId('mcp');
    const intruder = await client(secured.baseUrl, bearer({ workspaceId: other }));
    const args = toolArguments(f);
    const { tools } = await intruder.listTools();
    for (const t of tools) {
      const text = await refused(intruder, t.name, args[t.name]);
      expect(text, t.name).toMatch(/Unauthorized access to resource|JWT not permissioned for this resource|Resource requires admin privileges/);
    }
    // the header names a workspace the key does not cover: refused as well
    const headed = await client(secured.baseUrl, { ...bearer({ workspaceId: other }), 'X-Honcho-Workspace-ID': w });
    await refused(headed, 'list_sessions');
    expect(await snapshot(admin, w)).toEqual(before);
    // its own workspace comes from the key's claim
    expect(await ok(intruder, 'create_session', { session_id: 'mine' })).toEqual({ session_id: 'mine' });
    expect((await ok(intruder, 'list_sessions')).sessions).toEqual([{ id: 'mine' }]);
    expect(await refused(intruder, 'list_workspaces')).toBe('Failed to list workspaces: Resource requires admin privileges. This operation is only possible with an admin API key.');
  });

  it('a peer key and a session key reach through MCP what they reach through HTTP, no more', async () => {
    const admin = await client(secured.baseUrl, bearer({ isAdmin: true }));
    const w = uniqueId('mcp');
    await fixture(admin, w);
    await ok(admin, 'create_session', { workspace_id: w, session_id: 's2' });
    await ok(admin, 'add_messages_to_session', { workspace_id: w, session_id: 's2', messages: [{ peer_id: 'bot', content: 'secret of s2' }] });
    const before = await snapshot(admin, w);

    const http = async (headers: Record<string, string>, method: string, path: string, body?: unknown) =>
      (
        await fetch(`${secured.baseUrl}/v3/workspaces/${w}${path}`, {
          method,
          headers: { ...headers, 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        })
      ).status;
    // each row: a tool call, and the route it stands for
    const rows: { tool: string; args: Record<string, unknown>; route: [string, string, unknown?] }[] = [
      { tool: 'get_peer_card', args: { peer_id: 'alice' }, route: ['GET', '/peers/alice/card'] },
      { tool: 'get_peer_card', args: { peer_id: 'bot', target_peer_id: 'alice' }, route: ['GET', '/peers/bot/card?target=alice'] },
      { tool: 'get_session_messages', args: { session_id: 's1' }, route: ['POST', '/sessions/s1/messages/list', {}] },
      { tool: 'get_session_messages', args: { session_id: 's2' }, route: ['POST', '/sessions/s2/messages/list', {}] },
      { tool: 'get_session_context', args: { session_id: 's1' }, route: ['GET', '/sessions/s1/context'] },
      { tool: 'get_session_context', args: { session_id: 's2' }, route: ['GET', '/sessions/s2/context'] },
      { tool: 'search', args: { query: 'hiking', session_id: 's1' }, route: ['POST', '/sessions/s1/search', { query: 'hiking' }] },
      { tool: 'list_sessions', args: {}, route: ['POST', '/sessions/list', {}] },
      { tool: 'list_peers', args: {}, route: ['POST', '/peers/list', {}] },
      { tool: 'list_conclusions', args: { peer_id: 'bot', target_peer_id: 'alice' }, route: ['POST', '/conclusions/list', { filters: { observer_id: 'bot', observed_id: 'alice' } }] },
      { tool: 'get_representation', args: { peer_id: 'alice' }, route: ['POST', '/peers/alice/representation', {}] },
      { tool: 'search', args: { query: 'secret' }, route: ['POST', '/search', { query: 'secret' }] },
      { tool: 'search', args: { query: 'secret', session_id: 's2' }, route: ['POST', '/sessions/s2/search', { query: 'secret' }] },
      { tool: 'set_metadata', args: { session_id: 's2', metadata: { x: 1 } }, route: ['PUT', '/sessions/s2', { metadata: { x: 1 } }] },
      { tool: 'get_queue_status', args: {}, route: ['GET', '/queue/status'] },
      { tool: 'get_workspace_statistics', args: {}, route: ['GET', '/statistics'] },
      { tool: 'forget', args: { target_peer_id: 'alice', query: 'tea' }, route: ['POST', '/forget', { observed: 'alice', query: 'tea' }] },
      { tool: 'replace_conclusion', args: { peer_id: 'bot', target_peer_id: 'alice', conclusion_ids: ['x'], content: 'y' }, route: ['POST', '/conclusions', { conclusions: [{ content: 'y', observer_id: 'bot', observed_id: 'alice', supersedes: ['x'] }] }] },
    ];
    for (const claims of [{ workspaceId: w, peerId: 'alice' }, { workspaceId: w, sessionId: 's1' }]) {
      const headers = bearer(claims);
      const c = await client(secured.baseUrl, headers);
      const reached: string[] = [];
      for (const row of rows) {
        const result = await call(c, row.tool, row.args);
        const status = await http(headers, ...row.route);
        const label = `${JSON.stringify(claims)} ${row.tool} ${JSON.stringify(row.args)} (HTTP ${status}): ${result.text.slice(0, 120)}`;
        expect(result.isError, label).toBe(status >= 400);
        if (status === 401) expect(result.text, label).toMatch(/JWT not permissioned for this resource|Unauthorized access to resource/);
        if (!result.isError) reached.push(`${row.tool} ${JSON.stringify(row.args)}`);
      }
      // what each key does reach (so the comparison above is not all refusals)
      expect(reached.length, JSON.stringify(claims)).toBeGreaterThanOrEqual(2);
    }
    const peer = await client(secured.baseUrl, bearer({ workspaceId: w, peerId: 'alice' }));
    // chat as another peer, or in a session the peer is not a member of
    expect(await refused(peer, 'chat', { peer_id: 'bot', query: 'hi' })).toBe('Chat failed: Unauthorized access to resource');
    expect(await refused(peer, 'chat', { peer_id: 'alice', query: 'hi', session_id: 's2' })).toBe('Chat failed: JWT not permissioned for this resource');
    // a peer search keeps to the peer's messages; the workspace-wide conclusion route is not the key's
    const search = await ok(peer, 'search', { query: 'hiking', peer_id: 'alice' });
    expect(search.messages.map((m: { peer_id: string }) => m.peer_id)).toEqual(['alice']);
    expect(search.conclusions).toEqual([]);
    expect(await refused(peer, 'create_peer', { peer_id: 'mallory' })).toBe('Failed to create peer: Unauthorized access to resource');
    // nothing above changed the workspace but what the keys were allowed (s2's metadata was refused to both)
    const after = (await snapshot(admin, w)) as Record<string, unknown>;
    expect(after).toEqual(before);
  });
});
