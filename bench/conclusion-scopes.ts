/**
 * Conclusions narrowed by session, observed peer or ids, newest first: `npx tsx
 * bench/conclusion-scopes.ts`. Loads a workspace (SQLite file /tmp/conclusion-scopes.db, kept for
 * the next run; DATABASE_URL for PostgreSQL, loaded each run) where an assistant holds 40,000
 * conclusions about user-0 in 400 sessions (100 each, one session after another) and 1,000 about
 * each of 100 other peers (spread over the sessions), and times, median of 10: the collection's
 * 50 newest of one old session and of three (a context with `limit_to_session`, a
 * representation with a session allowlist), and the first page (50) of the workspace's list
 * filtered by the collection and a session, by a session, by the observed peer, by the observer
 * (all 140,000), by 10 ids, and by the collection alone.
 */
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { openDatabase } from '../src/runtime/database.js';
import { domainLimits } from '../src/runtime/runtime.js';
import { loadConfig } from '../src/config/config.js';
import { createDomainContext } from '../src/domain/context.js';
import { listConclusions } from '../src/domain/memory/conclusions.js';
import type { ConclusionRecord } from '../src/storage/store.js';
import { Corpus } from './corpus.js';
import { CURRENT_RULES } from '../src/domain/filters/filters.js';

const path = process.env.DATABASE_URL ?? '/tmp/conclusion-scopes.db';
const fresh = path.startsWith('postgres') || !existsSync(path);
const database = await openDatabase(path);
const store = database.store;
const corpus = new Corpus(20000, 42, 1.1);
const session = (k: number) => `s-${String(k).padStart(4, '0')}`;
const ids: string[] = [];
if (fresh) {
  const base = Date.now() - 86_400_000;
  await store.workspaces.createIfAbsent({ id: 'bench', metadata: {}, configuration: {} }, new Date(base));
  await store.transaction(async (tx) => {
    await tx.peers.ensure('bench', ['assistant', ...Array.from({ length: 101 }, (_, i) => `user-${i}`)], new Date(base));
    for (let k = 0; k < 400; k++) await tx.sessions.createIfAbsent('bench', { id: session(k), metadata: {}, configuration: {} }, new Date(base));
  });
  let t = base;
  const add = async (observedId: string, n: number, sessionOf: (i: number) => string) => {
    await store.transaction(async (tx) => {
      for (let start = 0; start < n; start += 100) {
        const rows: ConclusionRecord[] = Array.from({ length: 100 }, (_, k) => ({
          id: randomUUID().slice(0, 21), workspaceId: 'bench', observerId: 'assistant', observedId, sessionId: sessionOf(start + k),
          content: corpus.message(), level: 'explicit', sourceIds: null, timesDerived: 1, createdAt: new Date(t++),
        }));
        await tx.memory.insertConclusions(rows);
      }
    });
  };
  await add('user-0', 40_000, (i) => session(Math.floor(i / 100)));
  for (let p = 1; p <= 100; p++) await add(`user-${p}`, 1000, (i) => session(i % 400));
  if (path.startsWith('postgres')) await database.driver.run('ANALYZE');
}
const some = await database.driver.all<{ id: string }>("SELECT id FROM conclusions WHERE observed_id = 'user-0' ORDER BY pk LIMIT 10");
ids.push(...some.map((r) => r.id));
const ctx = createDomainContext(store, domainLimits(loadConfig()));
const list = (filters: unknown) => listConclusions(ctx, 'bench', { filters, page: 1, size: 50, reverse: false, rules: CURRENT_RULES });
const cases: [string, () => Promise<unknown>][] = [
  ['recent of collection in old session', () => store.memory.recentConclusions({ workspaceId: 'bench', observerId: 'assistant', observedId: 'user-0', sessionIds: [session(3)] }, 50)],
  ['recent of collection, 3 sessions', () => store.memory.recentConclusions({ workspaceId: 'bench', observerId: 'assistant', observedId: 'user-0', sessionIds: [session(3), session(9), session(11)] }, 50)],
  ['list collection + session', () => list({ observer_id: 'assistant', observed_id: 'user-0', session_id: session(3) })],
  ['list session', () => list({ session_id: session(3) })],
  ['list observed', () => list({ observed_id: 'user-0' })],
  ['list observer', () => list({ observer_id: 'assistant' })],
  ['list id in 10', () => list({ id: { in: ids } })],
  ['list collection', () => list({ observer_id: 'assistant', observed_id: 'user-0' })],
];
for (const [name, run] of cases) {
  const times: number[] = [];
  let n = 0;
  for (let i = 0; i < 10; i++) {
    const t0 = performance.now();
    const r = (await run()) as { items?: unknown[]; total?: number } | unknown[];
    times.push(performance.now() - t0);
    n = Array.isArray(r) ? r.length : (r.items?.length ?? 0);
  }
  times.sort((a, b) => a - b);
  console.log(`${name.padEnd(40)} median ${times[5].toFixed(2)} ms  (${n} rows)`);
}
process.exit(0);
