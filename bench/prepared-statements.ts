/**
 * Prepared statements on PostgreSQL (bench/README.md, "Prepared statements on PostgreSQL"): the
 * same store calls through a driver that names frequent statements and one that does not
 * (DATABASE_PREPARED_STATEMENTS), in one process on one database, each round alternating which
 * goes first. Prints per call the mean wall time and the PostgreSQL server's CPU (all of its
 * processes, from /proc, so run it on a machine where nothing else uses that server), and the
 * ratio named / unnamed.
 *
 *   node scripts/with-postgres.mjs npx tsx bench/prepared-statements.ts
 *
 * BENCH_PREPARED_CALLS (400) calls per measurement, BENCH_PREPARED_ROUNDS (5; the first is a
 * warm-up and not counted).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { nanoid } from 'nanoid';
import { openDatabase, type Database } from '../src/runtime/database.js';
import { Corpus } from './corpus.js';
import { chatSessionId, loadDataset, loadMessages, peerId, sessionId } from './dataset.js';
import { cpuSeconds } from './process-stat.js';

const url = process.env.DATABASE_URL;
if (url === undefined || !url.startsWith('postgres')) {
  console.error('DATABASE_URL must name a PostgreSQL database (node scripts/with-postgres.mjs npx tsx bench/prepared-statements.ts)');
  process.exit(2);
}
const CALLS = Number(process.env.BENCH_PREPARED_CALLS ?? 400);
const ROUNDS = Number(process.env.BENCH_PREPARED_ROUNDS ?? 5);
const WORKSPACE = `bench-prepared-${nanoid(6)}`;
const SESSIONS = 100;

const unnamed = await openDatabase(url, { preparedStatements: false });
const named = await openDatabase(url, { preparedStatements: true });
await loadDataset(unnamed.store, { workspaceId: WORKSPACE, peers: 1000, sessions: 1000, benchPeerSessions: 60, extraMemberships: 0 });
await loadMessages(unnamed.store, { workspaceId: WORKSPACE, messages: 20_000, sessions: SESSIONS, vocabulary: 20_000, zipf: 1.1, seed: 42 }, new Corpus(20_000, 42, 1.1), () => nanoid(21));
await unnamed.driver.run('ANALYZE');

/** CPU milliseconds of every process whose command line starts with `postgres` (10 ms ticks). */
function serverCpuMs(): number {
  let seconds = 0;
  for (const pid of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('postgres')) continue;
    } catch {
      continue; // a process that ended meanwhile
    }
    seconds += cpuSeconds(Number(pid)) ?? 0;
  }
  return seconds * 1000;
}

const page = { filter: null, page: 1, size: 50, reverse: false };
const calls: Record<string, (database: Database, i: number) => Promise<unknown>> = {
  'peer by key': (d, i) => d.store.peers.find(WORKSPACE, peerId(i % 1000)),
  'session by key': (d, i) => d.store.sessions.find(WORKSPACE, sessionId(i % 1000)),
  'page of 50 peers': (d, i) => d.store.peers.list(WORKSPACE, { ...page, page: 1 + (i % 10) }),
  'page of 50 messages': (d, i) => d.store.messages.list(WORKSPACE, chatSessionId(1 + (i % (SESSIONS - 1))), page),
  'message insert': (d, i) =>
    d.store.transaction((tx) =>
      tx.messages.insert([
        { id: nanoid(21), workspaceId: WORKSPACE, sessionId: chatSessionId(1 + (i % (SESSIONS - 1))), peerId: 'assistant', content: `hello ${i}`, metadata: {}, tokenCount: 2, createdAt: new Date() },
      ]),
    ),
};

const sums: Record<string, { wallUs: number; cpuUs: number; runs: number }> = {};
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, call] of Object.entries(calls)) {
    const order: [string, Database][] = [['unnamed', unnamed], ['named', named]];
    for (const [label, database] of round % 2 === 0 ? order : order.reverse()) {
      const cpuBefore = serverCpuMs();
      const started = performance.now();
      for (let i = 0; i < CALLS; i++) await call(database, round * CALLS + i);
      const wallUs = ((performance.now() - started) / CALLS) * 1000;
      const cpuUs = ((serverCpuMs() - cpuBefore) / CALLS) * 1000;
      if (round === 0) continue;
      const sum = (sums[`${name}/${label}`] ??= { wallUs: 0, cpuUs: 0, runs: 0 });
      sum.wallUs += wallUs;
      sum.cpuUs += cpuUs;
      sum.runs++;
    }
  }
}

const mean = (name: string, label: string, key: 'wallUs' | 'cpuUs') => sums[`${name}/${label}`][key] / sums[`${name}/${label}`].runs;
console.log(`Prepared statements on PostgreSQL: ${CALLS} calls a measurement, ${ROUNDS - 1} rounds counted, order alternating`);
console.log('| call | wall µs unnamed / named | ratio | server CPU µs unnamed / named | ratio |');
console.log('|---|---|---|---|---|');
for (const name of Object.keys(calls)) {
  const [wu, wn, cu, cn] = [mean(name, 'unnamed', 'wallUs'), mean(name, 'named', 'wallUs'), mean(name, 'unnamed', 'cpuUs'), mean(name, 'named', 'cpuUs')];
  console.log(`| ${name} | ${wu.toFixed(0)} / ${wn.toFixed(0)} | ${(wn / wu).toFixed(2)} | ${cu.toFixed(0)} / ${cn.toFixed(0)} | ${(cn / cu).toFixed(2)} |`);
}
await unnamed.store.workspaces.delete(WORKSPACE);
await Promise.all([unnamed.driver.close(), named.driver.close()]);
