/**
 * A workspace's search among larger workspaces (`npm run bench:among-others`; SQLite).
 *
 * One SQLite file holds a small workspace (BENCH_AMONG_SMALL messages in BENCH_AMONG_SESSIONS
 * sessions, stored first) and a large one stored after it (BENCH_AMONG_LARGE messages in 100
 * sessions), messages from corpus.ts. A search of the small workspace walks each word's matches
 * newest first, so it passes the large workspace's matches before it reaches its own; the table
 * gives, for a few words from common to rare, the median of BENCH_AMONG_ROUNDS searches
 * (`searchMessages`, in-process, one at a time) in each workspace, and how many of the
 * database's messages hold each word. docs/decisions/0021-search.md ("A workspace of more sessions
 * among larger others") has figures.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { domainLimits } from '../src/runtime/runtime.js';
import { openDatabase } from '../src/runtime/database.js';
import { loadConfig } from '../src/config/config.js';
import { createDomainContext } from '../src/domain/context.js';
import { searchMessages } from '../src/domain/messages/search.js';
import type { MessageRecord } from '../src/storage/store.js';
import { Corpus } from './corpus.js';
import { CURRENT_RULES } from '../src/domain/filters/filters.js';

const SMALL = Number(process.env.BENCH_AMONG_SMALL ?? 2_000);
const SESSIONS = Number(process.env.BENCH_AMONG_SESSIONS ?? 40);
const LARGE = Number(process.env.BENCH_AMONG_LARGE ?? 300_000);
const ROUNDS = Number(process.env.BENCH_AMONG_ROUNDS ?? 7);
const QUERIES = ['the', 'meeting', 'weekend', 'coffee', 'invoice', 'project deadline', 'coffee tomorrow'];

const dir = mkdtempSync(join(tmpdir(), 'engram-among-'));
const database = await openDatabase(join(dir, 'among.sqlite'));
try {
  const { store } = database;
  const corpus = new Corpus(5_000, 7);
  const start = new Date('2026-01-01T00:00:00Z');
  let stored = 0;
  const load = async (workspaceId: string, sessions: number, count: number) => {
    await store.workspaces.createIfAbsent({ id: workspaceId, metadata: {}, configuration: {} }, start);
    await store.peers.ensure(workspaceId, ['p'], start);
    for (let s = 0; s < sessions; s++) await store.sessions.createIfAbsent(workspaceId, { id: `s${s}`, metadata: {}, configuration: {} }, start);
    for (let done = 0; done < count; ) {
      const batch: MessageRecord[] = [];
      for (; batch.length < 500 && done < count; done++) {
        stored++;
        const createdAt = new Date(start.getTime() + stored);
        batch.push({ id: `m${stored}`, workspaceId, sessionId: `s${done % sessions}`, peerId: 'p', content: corpus.message(), metadata: {}, tokenCount: 1, createdAt });
      }
      await store.messages.insert(batch);
    }
  };
  const loading = performance.now();
  await load('small', SESSIONS, SMALL);
  await load('large', 100, LARGE);
  console.log(`loaded ${SMALL.toLocaleString('en')} messages in ${SESSIONS} sessions, then ${LARGE.toLocaleString('en')} of another workspace, in ${((performance.now() - loading) / 1000).toFixed(1)} s`);

  const ctx = createDomainContext(store, domainLimits(loadConfig({}, '/nonexistent/.env')));
  const median = async (workspaceId: string, query: string) => {
    const times: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const began = performance.now();
      await searchMessages(ctx, { workspaceId }, { query, filters: null, limit: 10, rules: CURRENT_RULES });
      times.push(performance.now() - began);
    }
    return times.sort((a, b) => a - b)[Math.floor(times.length / 2)];
  };
  const rows: string[][] = [];
  for (const query of QUERIES) {
    const holding: string[] = [];
    for (const word of query.split(' ')) {
      const row = await database.driver.get<{ n: number }>('SELECT count(*) AS n FROM messages_fts WHERE messages_fts MATCH ?', [`content : "${word}"`]);
      holding.push((row?.n ?? 0).toLocaleString('en'));
    }
    rows.push([query, holding.join(' / '), (await median('small', query)).toFixed(2), (await median('large', query)).toFixed(2)]);
  }
  const header = ['query', 'messages holding each word', 'small workspace ms', 'large workspace ms'];
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column].length)));
  const line = (cells: string[]) => `| ${cells.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]) : cell.padStart(widths[column]))).join(' | ')} |`;
  console.log([line(header), `|${widths.map((width) => '-'.repeat(width + 2)).join('|')}|`, ...rows.map(line)].join('\n'));
  console.log(`median of ${ROUNDS} searches each, one at a time, in-process (searchMessages, limit 10)`);
} finally {
  await database.driver.close();
  rmSync(dir, { recursive: true, force: true });
}
