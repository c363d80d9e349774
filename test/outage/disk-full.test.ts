import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { openDatabase, type Database } from '../../src/runtime/database.js';
import { loadConfig } from '../../src/config/config.js';
import { uniqueId } from '../support/test-app.js';

// The SQLite file lives on a tmpfs of 4 MiB, a real file system that fills up: writes then fail
// with SQLITE_FULL, and growing the tmpfs (remount) is the operator making room. Skipped where
// the process may not mount (it needs root, as CI and this suite's machines have).
const dir = mkdtempSync(join(tmpdir(), 'engram-disk-full-'));
const mountPoint = join(dir, 'disk');
mkdirSync(mountPoint);
const canMount = (() => {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', mountPoint], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

describe.skipIf(!canMount)('the disk holding the SQLite file is full', () => {
  const path = join(mountPoint, 'engram.db');
  let database: Database;
  let app: FastifyInstance;

  beforeAll(async () => {
    const config = loadConfig({ DATABASE_URL: path, LOG_LEVEL: 'silent' }, '/nonexistent/.env');
    database = await openDatabase(config.databaseUrl);
    ({ app } = await buildApp({ config, database, logger: false }));
  });

  afterAll(async () => {
    await app?.close();
    await database?.driver.close();
    if (canMount) execFileSync('umount', ['-l', mountPoint]);
    rmSync(dir, { recursive: true, force: true });
  });

  const call = async (method: 'GET' | 'POST', url: string, body?: unknown) => {
    const response = await app.inject({ method, url, payload: body === undefined ? undefined : JSON.stringify(body), headers: body === undefined ? {} : { 'content-type': 'application/json' } });
    return { status: response.statusCode, headers: response.headers, body: response.body === '' ? undefined : JSON.parse(response.body) };
  };

  it('answers 503 once full, keeps every acknowledged write, and recovers when there is room', async () => {
    const ws = uniqueId();
    const messages = `/v3/workspaces/${ws}/sessions/s/messages`;
    const acknowledged: string[] = [];
    let refused: Awaited<ReturnType<typeof call>> | undefined;
    // batches of 10 messages of 2,000 characters until the disk refuses one
    for (let batch = 0; batch < 1_000 && refused === undefined; batch++) {
      const contents = Array.from({ length: 10 }, (_, i) => `${batch}-${i} ${'filler text '.repeat(160)}`);
      const response = await call('POST', messages, { messages: contents.map((content) => ({ peer_id: 'alice', content })) });
      if (response.status === 201) acknowledged.push(...contents);
      else refused = response;
    }
    expect(refused, 'the 4 MiB disk never filled').toBeDefined();
    expect(acknowledged.length).toBeGreaterThan(0);
    expect(refused!.status).toBe(503);
    expect(refused!.body).toEqual({ detail: 'The disk holding the database is full; try again later' });
    expect(refused!.headers['retry-after']).toBe('5');

    const ready = await call('GET', '/ready');
    expect(ready.status).toBe(503);
    // the probe's one page may still fit: the free space under 1 MiB is what it reports
    expect(ready.body).toMatchObject({ status: 'unavailable', checks: { database: { ok: false, dialect: 'sqlite' } } });
    expect(ready.body.checks.database.error).toMatch(/^The disk holding the database is full/);
    expect((await call('GET', '/health')).status).toBe(200);

    // room again: service comes back by itself, and exactly the acknowledged batches are stored
    execFileSync('mount', ['-o', 'remount,size=64m', mountPoint]);
    expect((await call('GET', '/ready')).status).toBe(200);
    expect((await call('POST', messages, { messages: [{ peer_id: 'alice', content: 'after' }] })).status).toBe(201);
    const stored: string[] = [];
    for (let page = 1; ; page++) {
      const list = await call('POST', `${messages}/list?page=${page}&size=100`);
      stored.push(...list.body.items.map((m: { content: string }) => m.content));
      if (page >= list.body.pages) break;
    }
    expect(stored).toEqual([...acknowledged, 'after']);
  });
});
