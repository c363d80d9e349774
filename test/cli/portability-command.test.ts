/*
 * `engram export` and `engram import` as processes: to and from files and stdin, a SIGKILL in
 * the middle of an import then a rerun, and `--from-honcho` copying from a real Engram process
 * over its v3 API, with auth on.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { mintToken } from '../../src/http/shared/auth.js';
import { exportAll, fillStore, openStore, POSTGRES_AVAILABLE, type OpenStore } from '../support/portable-fixture.js';
import { ENGRAM, runCli, startServerProcess } from '../support/server-process.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'engram-portability-cli-'));
const opened: OpenStore[] = [];
afterAll(async () => {
  for (const store of opened) await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const TARGET = POSTGRES_AVAILABLE ? 'postgres' : 'sqlite';
let n = 0;
async function store(dialect: 'sqlite' | 'postgres'): Promise<OpenStore> {
  const s = await openStore(dialect, dir, `cli-${++n}`);
  opened.push(s);
  return s;
}

const env = (url: string): NodeJS.ProcessEnv => ({ PATH: process.env.PATH, DATABASE_URL: url, LOG_LEVEL: 'silent' });
/** The export's rows without its header (whose time differs between runs). */
const rows = (text: string): string => text.slice(text.indexOf('\n') + 1);

/** Runs `engram import -` with `input` on stdin. */
function importFromStdin(url: string, input: string): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...ENGRAM, 'import', '-'], { cwd: ROOT, env: env(url), stdio: ['pipe', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk));
    child.on('exit', (code) => resolve({ code, stderr }));
    child.stdin!.end(input);
  });
}

describe('engram export and engram import', () => {
  it(`exports a SQLite store to a file and to stdout; imports the file into ${TARGET} and stdin into SQLite: the same rows`, async () => {
    const source = await store('sqlite');
    await fillStore(source.database.store, 'ws-cli');
    const file = join(dir, 'all.ndjson');
    const exported = await runCli(['export', '--output', file], env(source.url));
    expect(exported.stderr).toMatch(/^exported \d+ rows to .*all\.ndjson in [\d.]+ s\n$/);
    expect(exported.code).toBe(0);
    const text = readFileSync(file, 'utf8');
    expect(JSON.parse(text.split('\n')[0])).toMatchObject({ type: 'header', format: 'engram-export', workspaces: null, vectors: false });
    expect(rows(text)).toBe(rows(await exportAll(source.database.store)));
    // stdout, one workspace
    const one = await runCli(['export', '--workspace', 'ws-cli'], env(source.url));
    expect(one.code).toBe(0);
    expect(JSON.parse(one.stdout.split('\n')[0]).workspaces).toEqual(['ws-cli']);
    expect(one.stdout).not.toContain('"id":"ws-cli-v1"');
    // never overwrites
    const again = await runCli(['export', '--output', file], env(source.url));
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('exists');

    const target = await store(TARGET);
    const imported = await runCli(['import', file], env(target.url));
    expect(imported.code, imported.stderr).toBe(0);
    expect(imported.stderr).toMatch(/lines in [\d.]+ s: workspace 2\/2, peer 4\/4, session 3\/3, membership 3\/3, message 6\/6/);
    expect(rows(await exportAll(target.database.store))).toBe(rows(text));

    const viaStdin = await store('sqlite');
    const piped = await importFromStdin(viaStdin.url, text);
    expect(piped.code, piped.stderr).toBe(0);
    expect(rows(await exportAll(viaStdin.database.store))).toBe(rows(text));
  }, 120_000);

  it('a bad line stops the import with its number and exit 1; usage mistakes exit 2', async () => {
    const target = await store('sqlite');
    const file = join(dir, 'bad.ndjson');
    const header = '{"type":"header","format":"engram-export","format_version":1,"engram_version":"0.1.0","exported_at":"2026-01-01T00:00:00.000000Z","workspaces":null,"includes":[],"vectors":false}';
    const { writeFileSync } = await import('node:fs');
    writeFileSync(file, `${header}\n{"type":"workspace","id":"w","v1_id":"x","metadata":{},"configuration":{},"created_at":"2026-01-01T00:00:00Z"}\n{"type":"peer","id":5}\n`);
    const failed = await runCli(['import', file], env(target.url));
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain('engram: import stopped at line 3: peer: ');
    expect(await target.database.store.workspaces.find('w')).toBeUndefined();
    expect((await runCli(['import'], env(target.url))).code).toBe(2);
    expect((await runCli(['import', file, '--from-honcho', 'http://x'], env(target.url))).code).toBe(2);
    expect((await runCli(['import', join(dir, 'missing.ndjson')], env(target.url))).stderr).toContain('there is no file');
    expect((await runCli(['import', file, '--batch', '0'], env(target.url))).code).toBe(2);
  }, 120_000);

  it('SIGKILL in the middle of an import, then a rerun: nothing missing, nothing doubled', async () => {
    // 20 batches: the kill comes once the first is committed, long before the last
    const messages = 10_000;
    const source = await store('sqlite');
    await fillStore(source.database.store, 'ws-kill', { messages });
    const text = await exportAll(source.database.store);
    const file = join(dir, 'kill.ndjson');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(file, text);
    const target = await store(TARGET);
    const count = async () => Number((await target.database.driver.get<{ n: number | string }>('SELECT count(*) AS n FROM messages'))?.n ?? 0);

    const child = spawn(process.execPath, [...ENGRAM, 'import', file, '--batch', '500'], { cwd: ROOT, env: env(target.url), stdio: 'ignore' });
    const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
    let atKill = 0;
    for (const started = Date.now(); Date.now() - started < 60_000; ) {
      atKill = await count();
      if (atKill > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    child.kill('SIGKILL');
    await exited;
    const afterKill = await count();
    expect(afterKill).toBeGreaterThan(0);
    expect(afterKill).toBeLessThan(messages);
    // only whole batches were committed: the lines of whole batches of 500
    const rerun = await runCli(['import', file, '--batch', '500'], env(target.url));
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(rerun.stderr).toContain(`message ${messages - afterKill}/${messages}`);
    expect(await count()).toBe(messages);
    expect(rows(await exportAll(target.database.store))).toBe(rows(text));
  }, 180_000);
});

describe('engram import --from-honcho', () => {
  it('copies every workspace of a running Engram (auth on) through its v3 API: peers, sessions, members and their configuration, messages, conclusions, cards, summaries, webhooks', async () => {
    const secret = 'portability-secret-of-reasonable-length';
    const source = await store(TARGET);
    const server = await startServerProcess({ DATABASE_URL: source.url, LOG_LEVEL: 'warn', AUTH_USE_AUTH: 'true', AUTH_JWT_SECRET: secret, RUN_WORKERS: 'false' });
    try {
      const admin = mintToken(secret, { isAdmin: true });
      const call = async (method: string, path: string, body?: unknown, token = admin) => {
        const response = await fetch(`${server.baseUrl}${path}`, {
          method,
          headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        expect(response.status, `${method} ${path}: ${await response.clone().text()}`).toBeLessThan(300);
        return response.status === 204 ? null : ((await response.json()) as unknown);
      };
      for (const w of ['remote-a', 'remote-b']) {
        await call('POST', '/v3/workspaces', { id: w, metadata: { origin: 'remote' }, configuration: { reasoning: { enabled: false } } });
        await call('POST', `/v3/workspaces/${w}/peers`, { id: 'alice', metadata: { n: 1 }, configuration: { observe_me: false } });
        await call('POST', `/v3/workspaces/${w}/sessions`, { id: 'chat', metadata: { t: 'x' }, peers: { alice: { observe_others: true }, bob: {} } });
        await call('POST', `/v3/workspaces/${w}/sessions`, { id: 'deleted', peers: { alice: {} } });
        const messages = [];
        for (let i = 0; i < 130; i++) messages.push({ peer_id: i % 2 === 0 ? 'alice' : 'bob', content: `line ${i}`, metadata: { i }, created_at: `2026-02-01T00:00:${String(i % 60).padStart(2, '0')}.${String(i).padStart(6, '0')}Z` });
        await call('POST', `/v3/workspaces/${w}/sessions/chat/messages`, { messages: messages.slice(0, 100) });
        await call('POST', `/v3/workspaces/${w}/sessions/chat/messages`, { messages: messages.slice(100) });
        await call('POST', `/v3/workspaces/${w}/sessions/deleted/messages`, { messages: [{ peer_id: 'alice', content: 'in a deleted session' }] });
        // a summary as the summarizer stores it (no worker runs here), covering the third message
        const listed = (await call('POST', `/v3/workspaces/${w}/sessions/chat/messages/list?size=5`, {})) as { items: { id: string }[] };
        await source.database.store.reasoning.saveSummary(w, 'chat', { type: 'short', content: 'They counted.', messageId: listed.items[2].id, messageSeq: 3, tokenCount: 4, createdAt: new Date('2026-02-02T00:00:00.123Z') });
        await call('POST', `/v3/workspaces/${w}/conclusions`, {
          conclusions: [
            { content: 'Alice likes tea', observer_id: 'alice', observed_id: 'alice', session_id: 'chat' },
            { content: 'Bob is tall', observer_id: 'alice', observed_id: 'bob' },
          ],
        });
        await call('PUT', `/v3/workspaces/${w}/peers/alice/card`, { peer_card: ['Name: Alice'] });
        await call('PUT', `/v3/workspaces/${w}/peers/alice/card?target=bob`, { peer_card: ['Tall'] });
        await call('POST', `/v3/workspaces/${w}/webhooks`, { url: 'https://example.com/hook' });
        await call('DELETE', `/v3/workspaces/${w}/sessions/deleted`);
      }
      const target = await store(TARGET);
      const copied = await runCli(['import', '--from-honcho', server.baseUrl, '--api-key', admin], env(target.url));
      expect(copied.code, copied.stderr).toBe(0);
      expect(copied.stderr).toContain('not copied (the v3 API does not expose it; docs/portability.md):');
      expect(copied.stderr).toContain('the v1 generation');

      const original = await exportAll(source.database.store);
      const copy = await exportAll(target.database.store);
      const pick = (text: string, type: string) =>
        text
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as Record<string, unknown>)
          .filter((row) => row.type === type)
          .map(({ v1_id: _v1, ...row }) => row);
      // rows the API shows whole are copied exactly, times to the microsecond
      expect(pick(copy, 'message')).toEqual(pick(original, 'message').filter((m) => m.session_id === 'chat'));
      expect(pick(copy, 'message')).toHaveLength(260);
      expect(pick(copy, 'workspace')).toEqual(pick(original, 'workspace'));
      expect(pick(copy, 'peer')).toEqual(pick(original, 'peer'));
      expect(pick(copy, 'session')).toEqual(pick(original, 'session').filter((s) => s.id === 'chat'));
      expect(pick(copy, 'webhook')).toEqual(pick(original, 'webhook'));
      const members = (rows: Record<string, unknown>[]) => rows.filter((m) => m.session_id === 'chat').map((m) => [m.workspace_id, m.peer_id, m.configuration]);
      expect(members(pick(copy, 'membership'))).toEqual(members(pick(original, 'membership')));
      const conclusions = (rows: Record<string, unknown>[]) => rows.map((c) => [c.id, c.observer_id, c.observed_id, c.session_id, c.level, c.content, c.created_at]);
      expect(conclusions(pick(copy, 'conclusion'))).toEqual(conclusions(pick(original, 'conclusion')));
      expect(pick(copy, 'summary')).toEqual(pick(original, 'summary'));
      expect(pick(copy, 'summary')).toHaveLength(2);
      const cards = (rows: Record<string, unknown>[]) => rows.map((c) => [c.workspace_id, c.observer_id, c.target_id, c.card]);
      expect(cards(pick(copy, 'peer_card'))).toEqual(cards(pick(original, 'peer_card')));

      // a rerun stores nothing again; a workspace key copies its own workspace, and no other
      const rerun = await runCli(['import', '--from-honcho', server.baseUrl, '--api-key', admin], env(target.url));
      expect(rerun.code, rerun.stderr).toBe(0);
      expect(rerun.stderr).toMatch(/message 0\/260/);
      const scoped = await store(TARGET);
      const key = mintToken(secret, { workspaceId: 'remote-b' });
      const own = await runCli(['import', '--from-honcho', server.baseUrl, '--api-key', key, '--workspace', 'remote-b'], env(scoped.url));
      expect(own.code, own.stderr).toBe(0);
      expect(pick(await exportAll(scoped.database.store), 'message')).toEqual(pick(original, 'message').filter((m) => m.workspace_id === 'remote-b' && m.session_id === 'chat'));
      const foreign = await runCli(['import', '--from-honcho', server.baseUrl, '--api-key', key, '--workspace', 'remote-a'], env(scoped.url));
      expect(foreign.code).toBe(1);
      expect(foreign.stderr).toMatch(/import stopped at POST .*\/v3\/workspaces: 401/);
      expect(await scoped.database.store.workspaces.find('remote-a')).toBeUndefined();
    } finally {
      server.child.kill('SIGTERM');
      await server.exited;
    }
  }, 180_000);
});
