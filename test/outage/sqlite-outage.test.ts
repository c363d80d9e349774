import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { openDatabase, type Database } from '../../src/runtime/database.js';
import { loadConfig } from '../../src/config/config.js';
import { uniqueId } from '../support/test-app.js';

// The database file and its WAL are made immutable (chattr +i) under the running server: the
// kernel then refuses every write to them, root's included, as a read-only mount would, which
// chmod cannot do for root. Skipped where the file system or the process cannot set the flag.
const dir = mkdtempSync(join(tmpdir(), 'engram-outage-sqlite-'));
const canChattr = (() => {
  const probe = join(dir, 'probe');
  writeFileSync(probe, '');
  try {
    execFileSync('chattr', ['+i', probe], { stdio: 'ignore' });
    execFileSync('chattr', ['-i', probe], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  } finally {
    rmSync(probe, { force: true });
  }
})();

describe.skipIf(!canChattr)('SQLite file that cannot be written', () => {
  const path = join(dir, 'engram.db');
  const locked = () => [path, `${path}-wal`].filter((file) => existsSync(file));
  let database: Database;
  let app: FastifyInstance;
  // the server's error log lines
  const logged: { msg: string; err?: { message: string } }[] = [];

  beforeAll(async () => {
    const config = loadConfig({ DATABASE_URL: path, LOG_LEVEL: 'silent' }, '/nonexistent/.env');
    database = await openDatabase(config.databaseUrl);
    ({ app } = await buildApp({ config, database, logger: { level: 'error', stream: { write: (line: string) => logged.push(JSON.parse(line)) } } }));
  });

  afterAll(async () => {
    // never leave an immutable file behind, whatever failed
    for (const file of locked()) execFileSync('chattr', ['-i', file]);
    await app?.close();
    await database?.driver.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const call = async (method: 'GET' | 'POST', url: string, body?: unknown) => {
    const response = await app.inject({ method, url, payload: body === undefined ? undefined : JSON.stringify(body), headers: body === undefined ? {} : { 'content-type': 'application/json' } });
    return { status: response.statusCode, headers: response.headers, body: response.body === '' ? undefined : JSON.parse(response.body) };
  };

  it('answers writes with 503, reports it on /ready, keeps serving reads and recovers when writable again', async () => {
    const ws = uniqueId();
    const messages = `/v3/workspaces/${ws}/sessions/s/messages`;
    expect((await call('POST', messages, { messages: [{ peer_id: 'alice', content: 'before' }] })).status).toBe(201);
    expect((await call('POST', `/v3/workspaces/${ws}/webhooks`, { url: 'https://example.com/hook' })).status).toBe(201);
    expect((await call('GET', '/ready')).body).toMatchObject({ status: 'ready', checks: { database: { ok: true, dialect: 'sqlite' } } });

    execFileSync('chattr', ['+i', ...locked()]);
    try {
      const write = await call('POST', messages, { messages: [{ peer_id: 'alice', content: 'while locked' }, { peer_id: 'bob', content: 'also' }] });
      expect(write.status).toBe(503);
      expect(write.body).toEqual({ detail: 'The database file cannot be read or written (I/O error); try again later' });
      expect(write.headers['retry-after']).toBe('5');
      const created = await call('POST', '/v3/workspaces', { id: uniqueId() });
      expect(created.status).toBe(503);
      // the test event cannot be queued: answered 200 as the reference does, the failure logged
      expect((await call('GET', `/v3/workspaces/${ws}/webhooks/test`)).status).toBe(200);
      expect(logged).toContainEqual(expect.objectContaining({ msg: 'test.event not queued', err: expect.objectContaining({ message: expect.stringContaining('cannot be read or written') }) }));

      const ready = await call('GET', '/ready');
      expect(ready.status).toBe(503);
      expect(ready.headers['retry-after']).toBe('5');
      expect(ready.body).toMatchObject({
        status: 'unavailable',
        checks: { database: { ok: false, dialect: 'sqlite', reason: 'SQLITE_IOERR_WRITE', error: 'The database file cannot be read or written (I/O error); try again later' } },
      });
      expect(await call('GET', '/health')).toMatchObject({ status: 200, body: { status: 'ok' } });

      // what is stored can still be read
      const list = await call('POST', `${messages}/list`);
      expect(list.status).toBe(200);
      expect(list.body.items.map((m: { content: string }) => m.content)).toEqual(['before']);
    } finally {
      execFileSync('chattr', ['-i', ...locked()]);
    }

    // writable again: the same connection serves writes, and the refused batch left nothing
    expect((await call('GET', '/ready')).status).toBe(200);
    expect((await call('POST', messages, { messages: [{ peer_id: 'alice', content: 'after' }] })).status).toBe(201);
    const list = await call('POST', `${messages}/list`);
    expect(list.body.items.map((m: { content: string }) => m.content)).toEqual(['before', 'after']);
  });

  it('answers 503 when the file was opened read-only (SQLITE_READONLY)', async () => {
    // a connection of its own that SQLite could only open for reading, as when the file is
    // read-only at start: every write is refused with SQLITE_READONLY
    const { SqliteDriver } = await import('../../src/storage/sqlite/sqlite-driver.js');
    const { SqlStore } = await import('../../src/storage/sql/sql-store.js');
    execFileSync('chattr', ['+i', ...locked()]);
    let driver: InstanceType<typeof SqliteDriver> | undefined;
    try {
      driver = new SqliteDriver(path);
      const store = SqlStore.over(driver);
      await expect(store.checkAvailable()).rejects.toMatchObject({ name: 'StoreUnavailableError', reason: 'SQLITE_READONLY', message: 'The database file cannot be written (read-only); try again later' });
      expect(await store.workspaces.find('nobody')).toBeUndefined();
    } finally {
      await driver?.close();
      execFileSync('chattr', ['-i', ...locked()]);
    }
  });
});
