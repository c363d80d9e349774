import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { expect } from 'vitest';

export interface ToolResult {
  isError?: boolean;
  text: string;
  data: Record<string, any> | undefined;
}

/** An MCP client of the official SDK connected to `baseUrl`/mcp with these headers. */
export async function httpClient(baseUrl: string, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'engram-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), { requestInit: { headers } }));
  return client;
}

/** Calls a tool and returns its text and structured content (the SDK checks the latter against the output schema). */
export async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<ToolResult> {
  const result = await client.callTool({ name, arguments: args });
  const content = result.content as { type: string; text: string }[];
  expect(content).toHaveLength(1);
  expect(content[0].type).toBe('text');
  return { isError: result.isError === true, text: content[0].text, data: result.structuredContent as Record<string, any> | undefined };
}

/** Calls a tool that must succeed, and returns its structured content. */
export async function ok(client: Client, name: string, args: Record<string, unknown> = {}): Promise<Record<string, any>> {
  const result = await call(client, name, args);
  expect(result.isError, `${name}: ${result.text}`).toBe(false);
  expect(result.data, name).toBeDefined();
  return result.data!;
}

/** Calls a tool that must fail with a tool error, and returns its text. */
export async function refused(client: Client, name: string, args: Record<string, unknown> = {}): Promise<string> {
  const result = await call(client, name, args);
  expect(result.isError, `${name} should fail: ${result.text}`).toBe(true);
  return result.text;
}

/** The reference MCP server's tools (../shared/reference/mcp.md M6), in its order. */
export const REFERENCE_TOOL_NAMES = [
  'inspect_workspace',
  'list_workspaces',
  'create_workspace',
  'search',
  'get_metadata',
  'set_metadata',
  'create_peer',
  'list_peers',
  'chat',
  'get_peer_card',
  'set_peer_card',
  'get_peer_context',
  'get_representation',
  'create_session',
  'list_sessions',
  'delete_session',
  'clone_session',
  'add_peers_to_session',
  'remove_peers_from_session',
  'get_session_peers',
  'inspect_session',
  'add_messages_to_session',
  'get_session_messages',
  'get_session_message',
  'get_session_context',
  'list_conclusions',
  'query_conclusions',
  'create_conclusions',
  'delete_conclusion',
  'schedule_dream',
  'get_queue_status',
];

/**
 * Arguments for each tool that succeed on the fixture of `fixture()` (workspace `w`, session
 * `s1` with alice and bot and two messages, bot's conclusion `conclusionId` about alice).
 */
export function toolArguments(f: { w: string; messageId: string; conclusionId: string }): Record<string, Record<string, unknown>> {
  const w = { workspace_id: f.w };
  return {
    inspect_workspace: { ...w },
    list_workspaces: {},
    create_workspace: { ...w },
    search: { ...w, query: 'hiking', peer_id: 'alice' },
    get_metadata: { ...w, peer_id: 'alice' },
    set_metadata: { ...w, session_id: 's1', metadata: { changed: true } },
    create_peer: { ...w, peer_id: 'carol' },
    list_peers: { ...w },
    chat: { ...w, peer_id: 'bot', target_peer_id: 'alice', query: 'What does alice like?' },
    get_peer_card: { ...w, peer_id: 'bot', target_peer_id: 'alice' },
    set_peer_card: { ...w, peer_id: 'bot', target_peer_id: 'alice', peer_card: ['Changed'] },
    get_peer_context: { ...w, peer_id: 'bot', target_peer_id: 'alice' },
    get_representation: { ...w, peer_id: 'bot', target_peer_id: 'alice' },
    create_session: { ...w, session_id: 's9' },
    list_sessions: { ...w },
    delete_session: { ...w, session_id: 's1' },
    clone_session: { ...w, session_id: 's1' },
    add_peers_to_session: { ...w, session_id: 's1', peers: ['carol'] },
    remove_peers_from_session: { ...w, session_id: 's1', peer_ids: ['bot'] },
    get_session_peers: { ...w, session_id: 's1' },
    inspect_session: { ...w, session_id: 's1' },
    add_messages_to_session: { ...w, session_id: 's1', messages: [{ peer_id: 'alice', content: 'one more' }] },
    get_session_messages: { ...w, session_id: 's1' },
    get_session_message: { ...w, session_id: 's1', message_id: f.messageId },
    get_session_context: { ...w, session_id: 's1' },
    list_conclusions: { ...w, peer_id: 'bot', target_peer_id: 'alice' },
    query_conclusions: { ...w, peer_id: 'bot', target_peer_id: 'alice', query: 'tea' },
    create_conclusions: { ...w, peer_id: 'bot', target_peer_id: 'alice', conclusions: ['Alice owns a boat'] },
    delete_conclusion: { ...w, peer_id: 'bot', target_peer_id: 'alice', conclusion_id: f.conclusionId },
    schedule_dream: { ...w, peer_id: 'bot', target_peer_id: 'alice' },
    get_queue_status: { ...w },
    list_peer_sessions: { ...w, peer_id: 'alice' },
    replace_conclusion: { ...w, peer_id: 'bot', target_peer_id: 'alice', conclusion_ids: [f.conclusionId], content: 'Alice drinks coffee now' },
    forget: { ...w, target_peer_id: 'alice', query: 'tea' },
    get_workspace_statistics: { ...w },
    create_scope: { ...w, scope_id: 'work' },
    list_scopes: { ...w },
    add_sessions_to_scope: { ...w, scope_id: 'work', session_ids: ['s1'] },
    remove_session_from_scope: { ...w, scope_id: 'work', session_id: 's1' },
    list_scope_sessions: { ...w, scope_id: 'work' },
    get_scope_status: { ...w, scope_id: 'work' },
  };
}

/** Writes the fixture of toolArguments through the tools; returns its ids. */
export async function fixture(client: Client, w: string): Promise<{ w: string; messageId: string; conclusionId: string }> {
  await ok(client, 'create_workspace', { workspace_id: w, metadata: { project: 'tests' } });
  await ok(client, 'create_session', { workspace_id: w, session_id: 's1' });
  await ok(client, 'add_peers_to_session', { workspace_id: w, session_id: 's1', peers: ['alice', { peer_id: 'bot', observe_me: false, observe_others: true }] });
  const added = await ok(client, 'add_messages_to_session', {
    workspace_id: w,
    session_id: 's1',
    messages: [
      { peer_id: 'alice', content: 'I went hiking in the Alps last week' },
      { peer_id: 'bot', content: 'That sounds wonderful' },
    ],
  });
  const created = await ok(client, 'create_conclusions', { workspace_id: w, peer_id: 'bot', target_peer_id: 'alice', conclusions: ['Alice drinks green tea'] });
  await ok(client, 'set_peer_card', { workspace_id: w, peer_id: 'bot', target_peer_id: 'alice', peer_card: ['Hiker'] });
  return { w, messageId: added.message_ids[0], conclusionId: created.conclusions[0].id };
}

/** What an admin sees of workspace `w`: to show that a refused call changed nothing. */
export async function snapshot(admin: Client, w: string): Promise<unknown> {
  return {
    workspace: await ok(admin, 'inspect_workspace', { workspace_id: w }),
    session: await ok(admin, 'inspect_session', { workspace_id: w, session_id: 's1' }),
    messages: await ok(admin, 'get_session_messages', { workspace_id: w, session_id: 's1' }),
    conclusions: await ok(admin, 'list_conclusions', { workspace_id: w, peer_id: 'bot', target_peer_id: 'alice' }),
    card: await ok(admin, 'get_peer_card', { workspace_id: w, peer_id: 'bot', target_peer_id: 'alice' }),
    metadata: await ok(admin, 'get_metadata', { workspace_id: w, session_id: 's1' }),
  };
}
