/**
 * Reads confined to a scope beside the same reads unconfined: `npx tsx bench/scopes.ts` (SQLite
 * file /tmp/engram-scopes.db, kept for the next run; DATABASE_URL for PostgreSQL, loaded each run).
 *
 * The store: 2,000 sessions of alice and an assistant, 50 messages each (100,000), 5 conclusions
 * alice drew about herself in each (10,000); the scope `work` holds 1,000 of the sessions, and
 * its backfill copied their conclusions (5,000). Each case is asked over the built app
 * (`inject`, no socket: the route, domain and store), sequentially, in rounds in which the
 * unconfined read and its confined twin are measured one right after the other; printed: each
 * read's p50 and p99 (median of the rounds) and the confined / unconfined ratio of p99 taken
 * within a round, median of the rounds. Chat asks the fake model server, which answers at once.
 * Aims (issue): p99 under 50 ms, a confined read at most 1.3 x its unconfined twin.
 * BENCH_ROUNDS (default 5), BENCH_REQUESTS a read and round (default 100).
 */
import { existsSync } from 'node:fs';
import { buildApp } from '../src/http/app.js';
import { domainLimits } from '../src/runtime/runtime.js';
import { openDatabase } from '../src/runtime/database.js';
import { loadConfig } from '../src/config/config.js';
import { createDomainContext } from '../src/domain/context.js';
import { runScopeBackfill } from '../src/domain/scopes/scope-work.js';
import type { ConclusionRecord, MessageRecord } from '../src/storage/store.js';
import { startFakeModelServer } from '../test/support/fake-model-server.js';
import { Corpus } from './corpus.js';
import { median } from './stats.js';

const SESSIONS = 2000;
const IN_SCOPE = 1000;
const MESSAGES_PER_SESSION = 50;
const CONCLUSIONS_PER_SESSION = 5;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 100);
const WS = 'bench-scopes';

const path = process.env.DATABASE_URL ?? '/tmp/engram-scopes.db';
const fresh = path.startsWith('postgres') || !existsSync(path);
const fake = await startFakeModelServer();
fake.script.defaultChat({ text: 'ok' });
const config = loadConfig({ ...process.env, ...fake.env(), DATABASE_URL: path, LOG_LEVEL: 'silent', DERIVER_ENABLED: 'false', EMBED_MESSAGES: 'false', EMBEDDING_PROVIDER: 'none' }, '/nonexistent/.env');
const database = await openDatabase(path);
const store = database.store;
const session = (k: number) => `s-${String(k).padStart(4, '0')}`;

if (fresh) {
  const started = performance.now();
  const corpus = new Corpus(20000, 7, 1.1);
  const base = Date.now() - 86_400_000;
  let t = base;
  let id = 0;
  const newId = (prefix: string) => `${prefix}${String(id++).padStart(19, '0')}`;
  await store.workspaces.createIfAbsent({ id: WS, metadata: {}, configuration: {} }, new Date(base));
  await store.peers.ensure(WS, ['alice', 'assistant'], new Date(base));
  await store.peers.createScopeIfAbsent(WS, { id: 'scope.work', metadata: {}, configuration: { observe_me: false } }, new Date(base));
  for (let first = 0; first < SESSIONS; first += 100) {
    await store.transaction(async (tx) => {
      for (let k = first; k < first + 100; k++) {
        const at = new Date(t++);
        await tx.sessions.createIfAbsent(WS, { id: session(k), metadata: {}, configuration: {} }, at);
        const members = [
          { peerId: 'alice', configuration: {}, joinedAt: at, leftAt: null },
          { peerId: 'assistant', configuration: { observe_others: true }, joinedAt: at, leftAt: null },
          ...(k < IN_SCOPE ? [{ peerId: 'scope.work', configuration: { observe_me: false, observe_others: true }, joinedAt: at, leftAt: null }] : []),
        ];
        await tx.sessions.saveMemberships(WS, session(k), members);
        const messages: MessageRecord[] = Array.from({ length: MESSAGES_PER_SESSION }, (_, i) => ({
          id: newId('m'), workspaceId: WS, sessionId: session(k), peerId: i % 2 === 0 ? 'alice' : 'assistant',
          content: corpus.message(), metadata: {}, tokenCount: 12, createdAt: new Date(t++),
        }));
        await tx.messages.insert(messages);
        const conclusions: ConclusionRecord[] = Array.from({ length: CONCLUSIONS_PER_SESSION }, () => ({
          id: newId('c'), workspaceId: WS, observerId: 'alice', observedId: 'alice', sessionId: session(k),
          content: corpus.message(), level: 'explicit', sourceIds: null, timesDerived: 1, createdAt: new Date(t++),
        }));
        await tx.memory.insertConclusions(conclusions);
      }
    });
  }
  // the scope's own memory, as its backfill makes it
  const ctx = createDomainContext(store, domainLimits(config));
  for (let k = 0; k < IN_SCOPE; k++) await runScopeBackfill(ctx, { workspaceId: WS, scopePeerId: 'scope.work', sessionId: session(k) });
  if (path.startsWith('postgres')) await database.driver.run('ANALYZE');
  console.log(`loaded ${SESSIONS} sessions, ${SESSIONS * MESSAGES_PER_SESSION} messages, ${SESSIONS * CONCLUSIONS_PER_SESSION} conclusions (+${IN_SCOPE * CONCLUSIONS_PER_SESSION} scope copies) in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

const { app } = await buildApp({ config, database, logger: false });
const w = `/v3/workspaces/${WS}`;
type Read = { method: 'POST' | 'GET'; url: string; body?: object };
const pairs: { name: string; open: Read; confined: Read }[] = [
  { name: 'representation, one scope', open: { method: 'POST', url: `${w}/peers/alice/representation`, body: {} }, confined: { method: 'POST', url: `${w}/peers/alice/representation`, body: { scope: 'work' } } },
  { name: 'representation, scope list', open: { method: 'POST', url: `${w}/peers/alice/representation`, body: {} }, confined: { method: 'POST', url: `${w}/peers/alice/representation`, body: { scope: ['work'] } } },
  { name: 'representation searched, scope list', open: { method: 'POST', url: `${w}/peers/alice/representation`, body: { search_query: 'coffee meeting' } }, confined: { method: 'POST', url: `${w}/peers/alice/representation`, body: { search_query: 'coffee meeting', scope: ['work'] } } },
  { name: 'session context, one scope', open: { method: 'GET', url: `${w}/sessions/${session(3)}/context?peer_target=alice` }, confined: { method: 'GET', url: `${w}/sessions/${session(3)}/context?peer_target=alice&scope=work` } },
  { name: 'workspace search', open: { method: 'POST', url: `${w}/search`, body: { query: 'coffee meeting' } }, confined: { method: 'POST', url: `${w}/search`, body: { query: 'coffee meeting', scope: 'work' } } },
  { name: 'chat, one scope', open: { method: 'POST', url: `${w}/peers/alice/chat`, body: { query: 'What does she drink?' } }, confined: { method: 'POST', url: `${w}/peers/alice/chat`, body: { query: 'What does she drink?', scope: 'work' } } },
  { name: 'chat, scope list', open: { method: 'POST', url: `${w}/peers/alice/chat`, body: { query: 'What does she drink?' } }, confined: { method: 'POST', url: `${w}/peers/alice/chat`, body: { query: 'What does she drink?', scope: ['work'] } } },
];

async function timeRead(read: Read, n: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    const res = await app.inject({ method: read.method, url: read.url, ...(read.body ? { payload: read.body } : {}) });
    times.push(performance.now() - started);
    if (res.statusCode !== 200) throw new Error(`${read.method} ${read.url} ${JSON.stringify(read.body)}: ${res.statusCode} ${res.body}`);
  }
  return times.sort((a, b) => a - b);
}
const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
const ms = (value: number) => value.toFixed(2).padStart(7);

console.log(`${ROUNDS} rounds of ${REQUESTS} requests a read (${path.startsWith('postgres') ? 'PostgreSQL' : 'SQLite'}); ms; ratio = confined p99 / unconfined p99 within a round, median`);
console.log(`${'read'.padEnd(38)} ${'open p50'.padStart(8)} ${'open p99'.padStart(8)} ${'conf p50'.padStart(8)} ${'conf p99'.padStart(8)}   ratio   rounds`);
let failed = false;
for (const pair of pairs) {
  await timeRead(pair.open, 10);
  await timeRead(pair.confined, 10);
  const rounds: { open: number[]; confined: number[] }[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    // the unconfined read first in every other round
    const first = r % 2 === 0 ? pair.open : pair.confined;
    const second = r % 2 === 0 ? pair.confined : pair.open;
    const a = await timeRead(first, REQUESTS);
    const b = await timeRead(second, REQUESTS);
    rounds.push(r % 2 === 0 ? { open: a, confined: b } : { open: b, confined: a });
  }
  const ratios = rounds.map((round) => quantile(round.confined, 0.99) / quantile(round.open, 0.99));
  const p = (key: 'open' | 'confined', q: number) => median(rounds.map((round) => quantile(round[key], q)));
  const ratio = median(ratios);
  const confinedP99 = p('confined', 0.99);
  const met = confinedP99 < 50 && ratio <= 1.3;
  failed ||= !met;
  console.log(
    `${pair.name.padEnd(38)} ${ms(p('open', 0.5))}  ${ms(p('open', 0.99))}  ${ms(p('confined', 0.5))}  ${ms(confinedP99)}  ${ratio.toFixed(2).padStart(6)}   ${ratios.map((x) => x.toFixed(2)).join(' ')}${met ? '' : '   (aim missed)'}`,
  );
}
console.log(failed ? 'aims: some missed (p99 < 50 ms and ratio <= 1.3)' : 'aims: met (p99 < 50 ms and ratio <= 1.3 for every read)');
await app.close();
await database.driver.close();
await fake.close();
