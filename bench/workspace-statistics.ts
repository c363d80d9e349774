/**
 * What a workspace's kept message count costs and saves: `npx tsx bench/workspace-statistics.ts`.
 * A SQLite file (or DATABASE_URL) gets one workspace of BENCH_STATS_SESSIONS (1,000) sessions
 * holding BENCH_STATS_MESSAGES (200,000) messages. Then, in one run:
 * - the write: batches of 100 messages stored in one transaction each (as a batch create stores
 *   them), rounds taken in turn with the count's triggers in place and dropped; median per batch
 *   of each, and their ratio;
 * - the read: the workspace's counts as GET .../statistics reads them (kept rows), against the
 *   sum over its sessions' own counts it would be otherwise and a COUNT(*) of its messages;
 *   median of 20 each.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../src/runtime/database.js';
import type { MessageRecord } from '../src/storage/store.js';
import { percentile } from './load.js';

const sessions = Number(process.env.BENCH_STATS_SESSIONS ?? 1_000);
const messages = Number(process.env.BENCH_STATS_MESSAGES ?? 200_000);
const ROUNDS = 7;
const BATCHES_PER_ROUND = 20;

const dir = process.env.DATABASE_URL === undefined ? mkdtempSync(join(tmpdir(), 'engram-statistics-')) : undefined;
const db = await openDatabase(process.env.DATABASE_URL ?? join(dir!, 'bench.db'));
const median = (values: number[]) => percentile([...values].sort((a, b) => a - b), 50);
try {
  const workspaceId = `statistics-${Date.now()}`;
  const at = new Date();
  const sessionId = (i: number) => `s-${String(i).padStart(5, '0')}`;
  await db.store.workspaces.createIfAbsent({ id: workspaceId, metadata: {}, configuration: {} }, at);
  await db.store.transaction(async (tx) => {
    await tx.peers.ensure(workspaceId, ['alice', 'bob'], at);
    for (let i = 0; i < sessions; i++) await tx.sessions.createIfAbsent(workspaceId, { id: sessionId(i), metadata: {}, configuration: {} }, at);
  });
  let next = 0;
  const batch = (size: number): MessageRecord[] =>
    Array.from({ length: size }, () => {
      const n = next++;
      return { id: `m-${n}`, workspaceId, sessionId: sessionId(n % sessions), peerId: n % 2 === 0 ? 'alice' : 'bob', content: `message ${n} about the garden and tea`, metadata: {}, tokenCount: 8, createdAt: at };
    });
  const loadStarted = performance.now();
  while (next < messages) await db.store.transaction((tx) => tx.messages.insert(batch(Math.min(1_000, messages - next))));
  console.log(`loaded ${messages.toLocaleString('en')} messages in ${sessions.toLocaleString('en')} sessions (${db.store.dialect}) in ${((performance.now() - loadStarted) / 1000).toFixed(1)} s`);

  // the triggers of migration 0045 (SQLite) / 0047 (PostgreSQL), as the migration made them
  const triggers = await db.driver.all<{ name: string; sql: string }>(
    db.store.dialect === 'sqlite'
      ? "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'message_counts_%'"
      : "SELECT tgname AS name, pg_get_triggerdef(oid) AS sql FROM pg_trigger WHERE tgname LIKE 'message_counts_%'",
  );
  const drop = async () => {
    for (const t of triggers) await db.driver.run(db.store.dialect === 'sqlite' ? `DROP TRIGGER ${t.name}` : `DROP TRIGGER ${t.name} ON messages`);
  };
  const restore = async () => {
    for (const t of triggers) await db.driver.run(t.sql);
  };
  const write = async () => {
    const times: number[] = [];
    for (let b = 0; b < BATCHES_PER_ROUND; b++) {
      const rows = batch(100);
      const started = performance.now();
      await db.store.transaction((tx) => tx.messages.insert(rows));
      times.push(performance.now() - started);
    }
    return median(times);
  };
  const kept: number[] = [];
  const without: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    kept.push(await write());
    await drop();
    without.push(await write());
    await restore();
  }
  const k = median(kept);
  const w = median(without);
  console.log(`store 100 messages: ${k.toFixed(3)} ms with the kept count, ${w.toFixed(3)} ms without (ratio ${(k / w).toFixed(3)}; medians of ${ROUNDS} rounds of ${BATCHES_PER_ROUND})`);

  const time = async (read: () => Promise<unknown>) => {
    const times: number[] = [];
    for (let i = 0; i < 20; i++) {
      const started = performance.now();
      await read();
      times.push(performance.now() - started);
    }
    return median(times);
  };
  const counts = await db.store.workspaces.counts(workspaceId);
  const keptRead = await time(() => db.store.workspaces.counts(workspaceId));
  const sessionSum = await time(() => db.driver.get('SELECT SUM(message_count) AS n FROM sessions WHERE workspace_id = ?', [workspaceId]));
  const counted = await time(() => db.driver.get('SELECT COUNT(*) AS n FROM messages WHERE workspace_id = ?', [workspaceId]));
  console.log(`workspace counts (${counts?.messages.toLocaleString('en')} messages): kept ${keptRead.toFixed(3)} ms, sum over sessions ${sessionSum.toFixed(3)} ms, COUNT(*) ${counted.toFixed(3)} ms (medians of 20)`);
} finally {
  await db.driver.close();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
}
