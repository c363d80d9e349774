/**
 * Queue status on a workspace with a long history: `npx tsx bench/queue-status.ts`. A SQLite file
 * (or DATABASE_URL) gets one workspace with BENCH_QUEUE_SESSIONS (20,000) sessions, each of which
 * had one message reasoned about; in all but BENCH_QUEUE_RECENT (100) of them that work finished
 * two days ago, in the others a minute ago, and the recent sessions hold one open item each. It
 * prints the time of `getQueueStatus` (the route's domain call, and the answer made JSON as the route makes it) and this
 * process's CPU for it (the server's share; the database's is the rest) for the workspace, for one
 * session, and for a peer's work (as observer, as sender; session i's messages are sent by
 * user-(i mod 200) and observed by that user and an assistant, both members; and the assistant's, all of the
 * work), median and slowest of 10, how many sessions the answer lists and its size as JSON.
 * Then every session gets a summary finished two hours ago (its counter row written directly, as
 * the trigger of a finished summary job writes it) and one session's status is timed again: the
 * workspace's other summaries must not cost it anything.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../src/runtime/database.js';
import { createDomainContext } from '../src/domain/context.js';
import { getQueueStatus } from '../src/domain/queue/queue-status.js';
import { queueStatusJson } from '../src/http/workspace-api/routes/queue.js';
import type { MessageRecord, NewRepresentationItem } from '../src/storage/store.js';
import { percentile } from './load.js';

const sessions = Number(process.env.BENCH_QUEUE_SESSIONS ?? 20_000);
const recent = Math.min(sessions, Number(process.env.BENCH_QUEUE_RECENT ?? 100));
const USERS = 200;
const BATCH = 2_000;

const dir = process.env.DATABASE_URL === undefined ? mkdtempSync(join(tmpdir(), 'engram-queue-status-')) : undefined;
const db = await openDatabase(process.env.DATABASE_URL ?? join(dir!, 'bench.db'));
try {
  const workspaceId = `queue-status-${Date.now()}`;
  const now = new Date();
  const old = new Date(now.getTime() - 2 * 86_400_000);
  const lately = new Date(now.getTime() - 60_000);
  const sessionId = (i: number) => `s-${String(i).padStart(6, '0')}`;
  const loadStarted = performance.now();
  await db.store.workspaces.createIfAbsent({ id: workspaceId, metadata: {}, configuration: {} }, old);
  // session i's user, observed by itself and by the assistant
  const user = (i: number) => `user-${i % USERS}`;
  await db.store.transaction((tx) => tx.peers.ensure(workspaceId, [...Array.from({ length: USERS }, (_, i) => user(i)), 'assistant'], old));
  for (let start = 0; start < sessions; start += BATCH) {
    const end = Math.min(sessions, start + BATCH);
    await db.store.transaction(async (tx) => {
      const messages: MessageRecord[] = [];
      const items: NewRepresentationItem[] = [];
      for (let i = start; i < end; i++) {
        await tx.sessions.createIfAbsent(workspaceId, { id: sessionId(i), metadata: {}, configuration: {} }, old);
        await tx.sessions.saveMemberships(workspaceId, sessionId(i), [user(i), 'assistant'].map((peerId) => ({ peerId, configuration: {}, joinedAt: old, leftAt: null })));
        for (const turn of i < sessions - recent ? [0] : [0, 1]) {
          const id = `m-${i}-${turn}`;
          messages.push({ id, workspaceId, sessionId: sessionId(i), peerId: user(i), content: 'I like tea', metadata: {}, tokenCount: 3, createdAt: old });
          items.push({ workspaceId, sessionId: sessionId(i), observedId: user(i), messageId: id, tokens: 3, observers: [user(i), 'assistant'], customInstructions: null });
        }
      }
      await tx.messages.insert(messages);
      await tx.reasoning.addRepresentationItems(items, old);
      // each session's first item finished: long ago, or a minute ago in the recent ones
      for (let i = start; i < end; i++) {
        const [item] = await tx.reasoning.openItems(workspaceId, sessionId(i), user(i), 1);
        await tx.reasoning.markItems([item], i < sessions - recent ? old : lately, null);
      }
    });
  }
  console.log(`${sessions.toLocaleString('en-US')} sessions loaded in ${((performance.now() - loadStarted) / 1000).toFixed(1)} s (${recent} with recent work, each with an open item)`);

  const ctx = createDomainContext(db.store, { sessionObservers: 10, webhookEndpoints: 10, jobMaxAttempts: 1 });
  const time = async (label: string, filter: { sessionId?: string; observerId?: string; senderId?: string }) => {
    const times: number[] = [];
    let listed = 0;
    let bytes = 0;
    let total = 0;
    // a call first, so the timed ones do not include the code's first runs
    await getQueueStatus(ctx, workspaceId, filter);
    const cpuBefore = process.cpuUsage();
    for (let i = 0; i < 10; i++) {
      const started = performance.now();
      const status = await getQueueStatus(ctx, workspaceId, filter);
      const body = queueStatusJson(status);
      times.push(performance.now() - started);
      listed = status.sessions?.size ?? 0;
      bytes = body.length;
      total = status.total;
    }
    const cpu = process.cpuUsage(cpuBefore);
    times.sort((a, b) => a - b);
    console.log(
      `${label.padEnd(10)} median ${percentile(times, 50).toFixed(2)} ms, slowest ${percentile(times, 100).toFixed(2)} ms, CPU ${((cpu.user + cpu.system) / 10_000).toFixed(2)} ms a call; ` +
        `total_work_units ${total}, ${listed.toLocaleString('en-US')} sessions listed, ${(bytes / 1024).toFixed(1)} KB as JSON`,
    );
  };
  await time('workspace', {});
  await time('session', { sessionId: sessionId(sessions - 1) });
  // a peer's work (a client waiting for a peer's queue to empty): one user's sessions, as
  // observer and as sender, and the assistant's, which is all of them
  await time('observer', { observerId: user(sessions - 1) });
  await time('sender', { senderId: user(sessions - 1) });
  await time('assistant', { observerId: 'assistant' });

  const summarized = Math.floor((now.getTime() - 2 * 3_600_000) / 3_600_000);
  for (let start = 0; start < sessions; start += 500) {
    const ids = Array.from({ length: Math.min(sessions, start + 500) - start }, (_, i) => sessionId(start + i));
    await db.driver.run(
      `INSERT INTO job_counters (workspace_id, kind, hour, queue_key, session_id, completed, failed) VALUES ${ids.map(() => "(?, 'reasoning.summarize', ?, ?, ?, 1, 0)").join(', ')}`,
      ids.flatMap((id) => [workspaceId, summarized, `summary:${workspaceId}:${id}`, id]),
    );
  }
  console.log(`every session given a summary finished two hours ago (${sessions.toLocaleString('en-US')} counter rows)`);
  await time('session', { sessionId: sessionId(sessions - 1) });
} finally {
  await db.driver.close();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
}
