import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { databaseOptions, openDatabase } from '../../src/runtime/database.js';
import { ConfigError, loadConfig } from '../../src/config/config.js';

/* SQLITE_CACHE_MB and SQLITE_MMAP_MB reach the connection's pragmas; bad values stop start-up. */

const dir = mkdtempSync(join(tmpdir(), 'engram-sqlite-settings-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function pragmasWith(env: Record<string, string>, file: string) {
  const config = loadConfig({ DATABASE_URL: join(dir, file), ...env }, '/nonexistent/.env');
  const database = await openDatabase(config.databaseUrl, databaseOptions(config));
  try {
    const [cache] = await database.driver.all<{ cache_size: number }>('PRAGMA cache_size');
    const [mmap] = await database.driver.all<{ mmap_size: number }>('PRAGMA mmap_size');
    const [sync] = await database.driver.all<{ synchronous: number }>('PRAGMA synchronous');
    return { cacheSize: cache.cache_size, mmapSize: mmap.mmap_size, synchronous: sync.synchronous };
  } finally {
    await database.driver.close();
  }
}

describe('SQLite memory settings', () => {
  it('default to a 16 MiB page cache and a memory map of 2,047 MiB (the whole file, up to what SQLite allows)', async () => {
    expect(await pragmasWith({}, 'defaults.db')).toEqual({ cacheSize: -16 * 1024, mmapSize: 2047 * 1024 * 1024, synchronous: 1 });
  });

  it('take SQLITE_CACHE_MB, SQLITE_MMAP_MB (0 turns the map off) and SQLITE_SYNCHRONOUS', async () => {
    expect(await pragmasWith({ SQLITE_CACHE_MB: '4', SQLITE_MMAP_MB: '0', SQLITE_SYNCHRONOUS: 'FULL' }, 'set.db')).toEqual({
      cacheSize: -4 * 1024,
      mmapSize: 0,
      synchronous: 2,
    });
  });

  it('refuse values that are not whole MiB in range, naming the setting', () => {
    for (const [key, value] of [['SQLITE_CACHE_MB', '0'], ['SQLITE_CACHE_MB', 'lots'], ['SQLITE_MMAP_MB', '-1'], ['SQLITE_MMAP_MB', '1.5']]) {
      const attempt = () => loadConfig({ [key]: value }, '/nonexistent/.env');
      expect(attempt).toThrow(ConfigError);
      expect(attempt).toThrow(new RegExp(`${key} must be an integer`));
    }
  });
});
