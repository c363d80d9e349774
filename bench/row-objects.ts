/**
 * What a row object costs: `npx tsx bench/row-objects.ts`. Loads 20,000 messages (bench/dataset.ts)
 * into a fresh SQLite file and times, one call after the other in one process, the same statements
 * three ways: better-sqlite3 making the row objects (its default), raw rows (arrays) alone, and the
 * driver's `all`, which reads raw rows and makes the objects in JavaScript (row-builder.ts).
 * Prints the best mean of 10 rounds per way, and the driver's time as a share of better-sqlite3's.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openDatabase } from '../src/runtime/database.js';
import { Corpus } from './corpus.js';
import { loadMessages } from './dataset.js';

const dir = mkdtempSync(join(tmpdir(), 'engram-row-objects-'));
const path = join(dir, 'rows.db');
const database = await openDatabase(path);
await loadMessages(database.store, { workspaceId: 'bench', messages: 20_000, sessions: 100, vocabulary: 20000, zipf: 1.1, seed: 42 }, new Corpus(20000, 42, 1.1), () => randomUUID());
const side = new Database(path, { readonly: true });

const cases: { name: string; sql: string; params: unknown[]; calls: number }[] = [
  {
    name: 'a page of 50 messages (9 columns)',
    sql: 'SELECT pk, id, workspace_id, session_id, peer_id, content, metadata, token_count, created_at FROM messages WHERE workspace_id = ? AND session_id = ? ORDER BY pk LIMIT 50',
    params: ['bench', 'chat-000003'],
    calls: 1000,
  },
  { name: '500 search candidates (id, content)', sql: 'SELECT id, content FROM messages WHERE pk > ? ORDER BY pk LIMIT 500', params: [5000], calls: 200 },
  { name: '50 sessions (every column)', sql: 'SELECT * FROM sessions WHERE workspace_id = ? ORDER BY pk LIMIT 50', params: ['bench'], calls: 1000 },
  { name: 'one message by its key', sql: 'SELECT pk, id, workspace_id, session_id, peer_id, content, metadata, token_count, created_at FROM messages WHERE pk = ?', params: [7000], calls: 20000 },
];

console.log('| statement | better-sqlite3 objects µs | raw arrays µs | driver (arrays made objects) µs | driver / objects |');
console.log('|---|---|---|---|---|');
for (const { name, sql, params, calls } of cases) {
  const objects = side.prepare(sql);
  const arrays = side.prepare(sql).raw(true);
  const ways: [string, () => unknown][] = [
    ['objects', () => objects.all(...params)],
    ['arrays', () => arrays.all(...params)],
    ['driver', () => database.driver.all(sql, params)],
  ];
  const best = new Map<string, number>();
  for (let round = 0; round < 10; round++) {
    for (const [way, call] of ways) {
      const started = performance.now();
      for (let i = 0; i < calls; i++) await call();
      const us = ((performance.now() - started) / calls) * 1000;
      best.set(way, Math.min(best.get(way) ?? Infinity, us));
    }
  }
  const [o, a, d] = ['objects', 'arrays', 'driver'].map((way) => best.get(way)!);
  console.log(`| ${name} | ${o.toFixed(1)} | ${a.toFixed(1)} | ${d.toFixed(1)} | ${(d / o).toFixed(2)} |`);
}
side.close();
await database.driver.close();
rmSync(dir, { recursive: true, force: true });
