import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintToken } from '../../src/http/shared/auth.js';
import { startFakeModelServer } from '../support/fake-model-server.js';
import { ENGRAM, startServerProcess, type ServerProcess } from '../support/server-process.js';
import { databaseForProcesses, uniqueId } from '../support/test-app.js';
import { REFERENCE_TOOL_NAMES, fixture, httpClient, ok, refused } from './mcp-support.js';

/** `engram mcp` as a host starts it: a child process speaking MCP on stdin/stdout. */
const SECRET = 'mcp-stdio-secret-of-reasonable-length';
const dir = mkdtempSync(join(tmpdir(), 'engram-mcp-stdio-'));
const databaseUrl = databaseForProcesses(dir);
let server: ServerProcess;
const opened: Client[] = [];

interface StdioSession {
  client: Client;
  stderr(): string;
  /** Transport errors: a line on stdout that is not a protocol message is one. */
  errors: Error[];
}

async function startStdio(args: string[], env: Record<string, string>): Promise<StdioSession> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [...ENGRAM, 'mcp', ...args],
    // its whole environment: no setting leaks in from the test process
    env: { LOG_LEVEL: 'info', RUN_WORKERS: 'false', ...env },
    cwd: dir,
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr!.on('data', (chunk: Buffer) => (stderr += chunk));
  const errors: Error[] = [];
  transport.onerror = (error) => errors.push(error);
  const client = new Client({ name: 'engram-test', version: '1.0.0' });
  await client.connect(transport);
  opened.push(client);
  return { client, stderr: () => stderr, errors };
}

beforeAll(async () => {
  server = await startServerProcess({ DATABASE_URL: databaseUrl(), LOG_LEVEL: 'warn', AUTH_USE_AUTH: 'true', AUTH_JWT_SECRET: SECRET });
});

afterAll(async () => {
  await Promise.all(opened.map((c) => c.close().catch(() => undefined)));
  server?.child.kill('SIGTERM');
  await server?.exited;
  rmSync(dir, { recursive: true, force: true });
});

describe('engram mcp (stdio)', () => {
  it('serves the tools over the store DATABASE_URL names, shared with a running server, with only protocol on stdout', async () => {
    const w = uniqueId('stdio');
    const stdio = await startStdio(['--workspace', w], { DATABASE_URL: databaseUrl() });
    const { tools } = await stdio.client.listTools();
    expect(tools.map((t) => t.name).slice(0, REFERENCE_TOOL_NAMES.length)).toEqual(REFERENCE_TOOL_NAMES);

    // written over stdio (the workspace from --workspace), read over HTTP from the server process
    const f = await fixture(stdio.client, w);
    expect(await ok(stdio.client, 'list_sessions')).toMatchObject({ sessions: [{ id: 's1' }], total: 1 });
    const admin = await httpClient(server.baseUrl, { authorization: `Bearer ${mintToken(SECRET, { isAdmin: true })}` });
    opened.push(admin);
    expect((await ok(admin, 'get_session_message', { workspace_id: w, session_id: 's1', message_id: f.messageId })).content).toBe('I went hiking in the Alps last week');
    // and the other way round
    await ok(admin, 'add_messages_to_session', { workspace_id: w, session_id: 's1', messages: [{ peer_id: 'alice', content: 'sent over HTTP' }] });
    expect((await ok(stdio.client, 'get_session_messages', { session_id: 's1' })).total).toBe(3);

    // a tool error, then the server keeps serving
    expect(await refused(stdio.client, 'get_session_message', { session_id: 's1', message_id: 'missing' })).toBe('Failed to get message: Message with ID missing not found');
    expect(await refused(stdio.client, 'create_session', { session_id: 'not valid!' })).toMatch(/^Failed to create session: id: String should match pattern/);
    expect((await ok(stdio.client, 'inspect_session', { session_id: 's1' })).message_count).toBe(3);

    expect(stdio.errors).toEqual([]);
    // the logs went to stderr
    expect(stdio.stderr()).toContain('MCP server on stdio');
  });

  it('counts the model calls of its last moments in the workspace statistics when its host closes it', async () => {
    const fake = await startFakeModelServer();
    try {
      const w = uniqueId('stdio-usage');
      const stdio = await startStdio(['--workspace', w], { DATABASE_URL: databaseUrl(), ...fake.env({ LLM_MAX_RETRIES: '0' }) });
      await fixture(stdio.client, w);
      fake.script.chat({ text: 'Alice went hiking.' });
      const answer = await stdio.client.callTool({ name: 'chat', arguments: { peer_id: 'bot', target_peer_id: 'alice', query: 'Where did Alice go?' } });
      expect(answer.isError).toBeFalsy();
      const chats = fake.requests('chat').length;
      expect(chats).toBeGreaterThan(0);
      // closed at once: the calls' usage is still waiting to be written (USAGE_WRITE_DELAY_MS)
      await stdio.client.close();
      opened.splice(opened.indexOf(stdio.client), 1);
      const response = await fetch(`${server.baseUrl}/v3/workspaces/${w}/statistics?hours=1`, { headers: { authorization: `Bearer ${mintToken(SECRET, { isAdmin: true })}` } });
      expect(response.status).toBe(200);
      const usage = ((await response.json()) as { model_usage: { modules: { module: string; calls: number }[] } }).model_usage.modules;
      expect(usage.filter((row) => row.module === 'dialectic').reduce((sum, row) => sum + row.calls, 0)).toBe(chats);
    } finally {
      await fake.close();
    }
  });

  it('without --workspace asks for workspace_id', async () => {
    const stdio = await startStdio([], { DATABASE_URL: databaseUrl() });
    expect(await refused(stdio.client, 'list_peers')).toMatch(/^Failed to list peers: Missing workspace_id\./);
    expect(stdio.errors).toEqual([]);
  });

  it('with --url forwards to a running Engram, as the key given allows', async () => {
    const w = uniqueId('stdio');
    const other = uniqueId('stdio');
    const key = mintToken(SECRET, { workspaceId: other });
    const forwarded = await startStdio(['--url', server.baseUrl, '--api-key', key], {});
    expect((await forwarded.client.listTools()).tools.length).toBeGreaterThanOrEqual(REFERENCE_TOOL_NAMES.length);
    // its own workspace, from the key's claim
    expect(await ok(forwarded.client, 'create_session', { session_id: 'mine' })).toEqual({ session_id: 'mine' });
    expect(await refused(forwarded.client, 'create_session', { workspace_id: w, session_id: 'theirs' })).toBe('Failed to create session: Unauthorized access to resource');
    // the key from the environment instead; a wrong one never reaches the tools
    const keyless = await startStdio(['--url', server.baseUrl], { ENGRAM_API_KEY: key });
    expect((await ok(keyless.client, 'list_sessions')).sessions).toEqual([{ id: 'mine' }]);
    await expect(startStdio(['--url', server.baseUrl, '--api-key', 'wrong'], {})).rejects.toThrow();
    expect(forwarded.errors).toEqual([]);
  });
});
