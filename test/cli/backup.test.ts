import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterAll, describe, expect, it, onTestFailed } from 'vitest';
import { runCli, startServerProcess, type ServerProcess } from '../support/server-process.js';
import { DIALECT } from '../support/test-app.js';

/*
 * `engram backup <file>` (src/cli/commands/backup.ts): a consistent copy of the SQLite store taken
 * while a server keeps writing to it, which another server then serves; and the refusals.
 */

const dir = mkdtempSync(join(tmpdir(), 'engram-backup-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const BATCH = 10;

async function post(server: ServerProcess, path: string, body: unknown): Promise<Response> {
  return fetch(server.baseUrl + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

function read<T>(file: string, fn: (db: BetterSqlite3.Database) => T): T {
  const db = new BetterSqlite3(file, { readonly: true, fileMustExist: true });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

describe.skipIf(DIALECT === 'postgres')('engram backup', { timeout: 120_000 }, () => {
  it('copies one snapshot while a server keeps writing, into a folder it makes: whole batches, counters that match, and a copy another server serves', async () => {
    const source = join(dir, 'live.db');
    const copy = join(dir, 'backups', 'copy.db');
    const server = await startServerProcess({ DATABASE_URL: source, LOG_LEVEL: 'warn' });
    onTestFailed(() => console.error(`engram serve, last output:\n${server.output().slice(-10_000)}`));
    let acknowledged = 0;
    let writing = true;
    // a batch at a time, then one every 100 ms while the backup runs: few enough pages that
    // SQLite does not checkpoint (1,000 pages), so what was acknowledged is still in the -wal
    // file, and a copy of the database file alone would miss it
    let pauseMs = 0;
    const writer = (async () => {
      for (let batch = 0; writing; batch++) {
        const messages = Array.from({ length: BATCH }, (_, i) => ({ peer_id: i % 2 === 0 ? 'alice' : 'bob', content: `batch ${batch} message ${i}` }));
        const response = await post(server, '/v3/workspaces/w/sessions/s/messages', { messages });
        expect(response.status).toBe(201);
        acknowledged += BATCH;
        if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
      }
    })();
    try {
      while (acknowledged < 100) await new Promise((resolve) => setTimeout(resolve, 5));
      pauseMs = 100;
      const before = acknowledged;
      const backup = await runCli(['backup', copy], { ...process.env, DATABASE_URL: source });
      const during = acknowledged;
      writing = false;
      await writer;
      expect(backup.stderr).toBe('');
      expect(backup.code).toBe(0);
      // the writes went on while the copy was made
      expect(acknowledged).toBeGreaterThan(before);

      const newest = read(source, (db) => (db.prepare('SELECT max(name) AS name FROM schema_migrations').get() as { name: string }).name);
      expect(backup.stdout).toMatch(new RegExp(`^backed up ${source} to ${copy}: \\d+ KB in \\d+ ms, schema ${newest}, check ok\\n$`));

      const { messages, counted, members } = read(copy, (db) => ({
        messages: (db.prepare('SELECT count(*) AS n FROM messages').get() as { n: number }).n,
        counted: (db.prepare("SELECT message_count AS n FROM sessions WHERE id = 's'").get() as { n: number }).n,
        members: (db.prepare('SELECT count(*) AS n FROM session_peers').get() as { n: number }).n,
      }));
      // everything acknowledged before the backup started, nothing of a batch without the rest of
      // it, at most the one batch in flight beyond what was acknowledged when it ended
      expect(messages).toBeGreaterThanOrEqual(before);
      expect(messages).toBeLessThanOrEqual(during + BATCH);
      expect(messages % BATCH).toBe(0);
      expect(counted).toBe(messages);
      expect(members).toBe(2);
    } finally {
      writing = false;
      await writer.catch(() => undefined);
      server.child.kill('SIGTERM');
      await server.exited;
    }

    // the copy is a store like any other: served, listed, written
    const restored = await startServerProcess({ DATABASE_URL: copy, LOG_LEVEL: 'warn' });
    try {
      const expected = read(copy, (db) => (db.prepare('SELECT count(*) AS n FROM messages').get() as { n: number }).n);
      const page = await post(restored, '/v3/workspaces/w/sessions/s/messages/list?size=1', {});
      expect(page.status).toBe(200);
      expect(((await page.json()) as { total: number }).total).toBe(expected);
      expect((await post(restored, '/v3/workspaces/w/sessions/s/messages', { messages: [{ peer_id: 'alice', content: 'after the restore' }] })).status).toBe(201);
    } finally {
      restored.child.kill('SIGTERM');
      await restored.exited;
    }
  });

  it('refuses, with exit 2 and a reason: no file named, a file that exists, no database, PostgreSQL', async () => {
    const source = join(dir, 'refusals.db');
    const env = (databaseUrl: string) => ({ ...process.env, DATABASE_URL: databaseUrl });
    const existing = join(dir, 'existing.db');
    writeFileSync(existing, 'kept as it is');

    expect(await runCli(['backup'], env(source))).toMatchObject({ code: 2, stderr: expect.stringMatching(/^engram: backup: missing <file>\n\nusage: engram backup <file>\n/) });
    expect(await runCli(['backup', join(dir, 'none.db')], env(source))).toMatchObject({ code: 2, stderr: `engram: there is no database at ${source} (DATABASE_URL)\n` });
    // a database to copy, then a target that is taken
    expect((await runCli(['migrate'], env(source))).code).toBe(0);
    expect(await runCli(['backup', existing], env(source))).toMatchObject({
      code: 2,
      stderr: `engram: ${existing} exists; name a new file (a backup never overwrites one)\n`,
    });
    expect(readFileSync(existing, 'utf8')).toBe('kept as it is');
    expect(await runCli(['backup', source], env(source))).toMatchObject({ code: 2, stderr: 'engram: the backup file must not be the database itself\n' });
    expect(await runCli(['backup', join(dir, 'pg.db')], env('postgres://nobody@127.0.0.1:1/none'))).toMatchObject({
      code: 2,
      stderr: 'engram: backup copies the SQLite store; on PostgreSQL use pg_dump (README, "Backups")\n',
    });
  });
});
