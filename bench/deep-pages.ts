/**
 * Deep pages of a long list: `npx tsx bench/deep-pages.ts` (BENCH_DEEP_ROWS, default 100,000;
 * BENCH_DATABASE_URL for PostgreSQL, else a fresh SQLite file). Loads one session of that many
 * messages (bench/dataset.ts), that many peers, that many more sessions and that many conclusions
 * of one peer about itself, then reads the four lists (a session's messages, the workspace's
 * peers, its sessions and the peer's conclusions, as the SDK asks for them) page by page (size 100),
 * forward and in reverse, twice in one process: by offset alone (a store without seek points,
 * as every page was read before) and as served (each page starting after the last row of the
 * page before it, seek-points.ts). Prints, per list and direction, the whole walk's time, and the
 * mean time of a page near the start, the middle and the end, with the ratio of the two ways.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../src/runtime/database.js';
import { DOCUMENT_FILTER } from '../src/domain/filters/filter-schemas.js';
import { parseFilters, CURRENT_RULES } from '../src/domain/filters/filters.js';
import { DIALECTS } from '../src/storage/sql/dialects.js';
import { SqlMemoryStore } from '../src/storage/sql/memory-store.js';
import { SqlMessageStore } from '../src/storage/sql/message-store.js';
import { SqlPeerStore } from '../src/storage/sql/peer-store.js';
import { SqlSessionStore } from '../src/storage/sql/session-store.js';
import { SeekPoints } from '../src/storage/sql/seek-points.js';
import type { Page } from '../src/storage/store.js';
import { Corpus } from './corpus.js';
import { loadMessages } from './dataset.js';

const ROWS = Number(process.env.BENCH_DEEP_ROWS ?? 100_000);
const SIZE = 100;
const WORKSPACE = `bench-deep-${randomUUID().slice(0, 8)}`;
const SESSION = 'chat-000000';

const dir = mkdtempSync(join(tmpdir(), 'engram-deep-pages-'));
const url = process.env.BENCH_DATABASE_URL ?? join(dir, 'deep.db');
const database = await openDatabase(url);
const loadStarted = performance.now();
await loadMessages(database.store, { workspaceId: WORKSPACE, messages: ROWS, sessions: 1, vocabulary: 20000, zipf: 1.1, seed: 42 }, new Corpus(20000, 42, 1.1), () =>
  randomUUID(),
);
const peerIds = Array.from({ length: ROWS }, (_, i) => `peer-${String(i).padStart(7, '0')}`);
// a transaction per batch: on PostgreSQL each peer bumps its workspace's counters, and a row
// updated 100,000 times in one transaction is slower to update each time
for (let i = 0; i < peerIds.length; i += 500) await database.store.peers.ensure(WORKSPACE, peerIds.slice(i, i + 500), new Date(Date.now() - ROWS + i));
// sessions too, a transaction per 500 for the same reason
for (let i = 0; i < ROWS; i += 500) {
  await database.store.transaction(async (tx) => {
    for (let k = i; k < Math.min(ROWS, i + 500); k++) {
      await tx.sessions.createIfAbsent(WORKSPACE, { id: `session-${String(k).padStart(7, '0')}`, metadata: {}, configuration: {} }, new Date(Date.now() - ROWS + k));
    }
  });
}
// conclusions of the first peer about itself, a transaction per 1,000
for (let i = 0; i < ROWS; i += 1000) {
  await database.store.transaction((tx) =>
    tx.memory.insertConclusions(
      Array.from({ length: Math.min(1000, ROWS - i) }, (_, k) => ({
        id: randomUUID(),
        workspaceId: WORKSPACE,
        observerId: peerIds[0],
        observedId: peerIds[0],
        sessionId: SESSION,
        content: `conclusion ${i + k}`,
        level: 'explicit' as const,
        sourceIds: null,
        timesDerived: 1,
        createdAt: new Date(Date.now() - ROWS + i + k),
      })),
    ),
  );
}
console.log(`${database.driver.dialect}: ${ROWS.toLocaleString('en')} messages in one session, as many peers, sessions more and conclusions loaded in ${((performance.now() - loadStarted) / 1000).toFixed(1)} s; pages of ${SIZE}`);

type Read = (points: SeekPoints | undefined, page: number, reverse: boolean) => Promise<Page<unknown>>;
const d = DIALECTS[database.driver.dialect];
/** The filter the SDK sends for one observer's conclusions about one peer. */
const ofPeer = parseFilters(database.store, { observer_id: peerIds[0], observed_id: peerIds[0] }, DOCUMENT_FILTER, CURRENT_RULES);
const lists: [string, Read][] = [
  ['messages of a session', (points, page, reverse) => new SqlMessageStore(database.driver, d, points).list(WORKSPACE, SESSION, { filter: null, page, size: SIZE, reverse })],
  ['peers of a workspace', (points, page, reverse) => new SqlPeerStore(database.driver, d, points).list(WORKSPACE, { filter: null, page, size: SIZE, reverse })],
  [
    "a peer's conclusions about itself",
    (points, page, reverse) =>
      new SqlMemoryStore(database.driver, undefined, points).listConclusions(WORKSPACE, { filter: ofPeer, page, size: SIZE, reverse }),
  ],
  [
    'sessions of a workspace',
    (points, page, reverse) =>
      new SqlSessionStore(database.driver, d, points).list(WORKSPACE, { filter: null, page, size: SIZE, reverse, order: 'created-then-insertion' }),
  ],
];

const pages = Math.ceil(ROWS / SIZE);
/** Pages whose times are shown: near the start, the middle and the end. */
const marks = [Math.max(1, Math.ceil(pages / 100)), Math.ceil(pages / 2), pages];

async function walk(read: Read, points: SeekPoints | undefined, reverse: boolean): Promise<{ totalMs: number; pageMs: Map<number, number> }> {
  const pageMs = new Map<number, number>();
  const started = performance.now();
  let rows = 0;
  for (let page = 1; page <= pages; page++) {
    const t = performance.now();
    rows += (await read(points, page, reverse)).items.length;
    if (marks.includes(page)) pageMs.set(page, performance.now() - t);
  }
  // (the workspace holds one session more, the messages': the pages walked hold ROWS rows all the same)
  if (rows !== ROWS) throw new Error(`walked ${rows} rows, expected ${ROWS}`);
  return { totalMs: performance.now() - started, pageMs };
}

console.log(`| list | order | walk by offset | walk as served | ratio | ${marks.map((m) => `page ${m} offset / served ms`).join(' | ')} |`);
console.log(`|---|---|---|---|---|${marks.map(() => '---').join('|')}|`);
for (const [name, read] of lists) {
  for (const reverse of [false, true]) {
    const byOffset = await walk(read, undefined, reverse);
    const served = await walk(read, new SeekPoints(), reverse);
    const cells = marks.map((m) => `${byOffset.pageMs.get(m)!.toFixed(2)} / ${served.pageMs.get(m)!.toFixed(2)}`);
    console.log(
      `| ${name} | ${reverse ? 'newest first' : 'oldest first'} | ${(byOffset.totalMs / 1000).toFixed(2)} s | ${(served.totalMs / 1000).toFixed(2)} s | ${(served.totalMs / byOffset.totalMs).toFixed(3)} | ${cells.join(' | ')} |`,
    );
  }
}
await database.driver.close();
rmSync(dir, { recursive: true, force: true });
