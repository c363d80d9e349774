/**
 * Peer chat over HTTP (`npm run bench`, case "peer chat v3"; alone: `BENCH_ONLY=chat npm run
 * bench`): `engram serve` in a child process with the fake model server (test/support, in a
 * process of its own: bench/fake-chat-model-child.ts) as its chat and embedding model, answering
 * at once, so what is measured is Engram's own part of a chat: the request checked, the peer,
 * session and cards read, the session's newest messages (up to 4,096 tokens) put in the prompt,
 * the query embedded once and the observer's explicit and derived conclusions nearest to it
 * prefetched (sqlite-vec or pgvector), the model asked (and, in the tool variant, `search_memory`
 * run and the model asked again), the answer written (JSON, or server-sent events when streamed).
 *
 * Data, loaded through the store (not over HTTP), in one workspace: the messages of the bulk path
 * the message cases use (bench/dataset.ts `loadMessages`: generated chat text over BENCH_CHAT_SESSIONS
 * sessions, each with its user and the assistant as members), and conclusions of each session's
 * user about itself, each with the vector the fake embedder returns for its text. Request k asks
 * user c (another session each time) about itself in its session, with another conclusion's text
 * as the query.
 *
 * Measured, per reasoning level (`minimal`, `low`): requests per second and p50/p99 at 1 and
 * BENCH_CONNECTIONS connections (autocannon), Engram's CPU per request (from /proc), the fake
 * model's CPU per request and the model calls per request; for `stream: true`, time to the first
 * streamed byte and to the end of the stream (a node:http client, p50/p99).
 *
 * Environment (optional): BENCH_CHAT_MESSAGES (default 100000), BENCH_CHAT_CONCLUSIONS (10000),
 * BENCH_CHAT_SESSIONS (100), BENCH_CHAT_DIMENSIONS (1536), BENCH_CHAT_TOOL (1: also the variant
 * whose first model turn calls `search_memory`; 0 skips it); BENCH_DATABASE_URL as for the other
 * cases (default: a fresh SQLite file; on PostgreSQL a unique workspace, deleted at the end).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { nanoid } from 'nanoid';
import { openDatabase } from '../src/runtime/database.js';
import type { ConclusionRecord } from '../src/storage/store.js';
import { hashedVector } from '../test/support/fake-model-server.js';
import { startServerProcess, type ServerProcess } from '../test/support/server-process.js';
import { Corpus } from './corpus.js';
import { chatSenders, chatSessionId, loadMessages } from './dataset.js';
import { forkServer, profileArgs } from './ipc.js';
import { percentile } from './load.js';
import { cpuSeconds } from './process-stat.js';

export const CHAT_CASE = 'peer chat v3';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** The aim of issue 10: Engram's own part of a `low` chat under 20 ms at p99. */
const AIM_MS = 20;
const LEVELS = ['minimal', 'low'] as const;
type Level = (typeof LEVELS)[number];
type Mode = 'text' | 'tool';

export interface ChatOptions {
  databaseUrl?: string;
  messages: number;
  conclusions: number;
  sessions: number;
  dimensions: number;
  toolVariant: boolean;
  durationS: number;
  warmupS: number;
  connections: number;
}

interface Run {
  mode: Mode;
  level: Level;
  stream: boolean;
  connections: number;
  requests: number;
  rps: number;
  p50: number;
  p99: number;
  max: number;
  /** Streamed runs: time to the first byte of the body. */
  firstByteP50?: number;
  firstByteP99?: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  engramCpuUs: number;
  modelCpuUs: number;
  chatCalls: number;
  embeddingCalls: number;
}

export interface ChatResult {
  options: ChatOptions;
  onPostgres: boolean;
  messagesS: number;
  conclusionsS: number;
  fileBytes?: number;
  checks: string[];
  runs: Run[];
}

const SUBJECTS = ['the garden', 'her sister', 'the new job', 'hiking', 'the dog', 'jazz records', 'the move to Lisbon', 'chess', 'the night shift', 'baking bread'];
const VERBS = ['talks about', 'worries about', 'is proud of', 'spends weekends on', 'mentioned', 'dislikes', 'plans to change', 'asked advice on'];

/** The user of chat session c: the observer (and observed) of collection c. */
const userOf = (c: number, sessions: number) => chatSenders(c, sessions)[0];

function contentOf(i: number, sessions: number): string {
  return `${userOf(i % sessions, sessions)} ${VERBS[i % VERBS.length]} ${SUBJECTS[Math.floor(i / VERBS.length) % SUBJECTS.length]} (note ${i})`;
}

function requestOf(k: number, level: Level, stream: boolean, options: ChatOptions, workspaceId: string): { path: string; body: string } {
  const c = (k * 37) % options.sessions;
  const perSession = Math.max(1, Math.floor(options.conclusions / options.sessions));
  const i = ((k * 31) % perSession) * options.sessions + c;
  return {
    path: `/v3/workspaces/${workspaceId}/peers/${userOf(c, options.sessions)}/chat`,
    body: JSON.stringify({ query: `What about ${contentOf(i, options.sessions)}?`, session_id: chatSessionId(c), reasoning_level: level, stream }),
  };
}

async function load(databaseUrl: string, workspaceId: string, options: ChatOptions): Promise<{ messagesS: number; conclusionsS: number }> {
  const database = await openDatabase(databaseUrl);
  const store = database.store;
  try {
    let started = performance.now();
    await loadMessages(store, { workspaceId, messages: options.messages, sessions: options.sessions, vocabulary: 20_000, zipf: 1.1, seed: 7 }, new Corpus(20_000, 7, 1.1), () => nanoid(21));
    const messagesS = (performance.now() - started) / 1000;
    started = performance.now();
    const now = new Date();
    const batch = 1_000;
    for (let start = 0; start < options.conclusions; start += batch) {
      const records: ConclusionRecord[] = [];
      for (let i = start; i < Math.min(options.conclusions, start + batch); i++) {
        const user = userOf(i % options.sessions, options.sessions);
        // every fourth a derived conclusion, so both prefetch searches find some
        const level = i % 4 === 3 ? 'deductive' : 'explicit';
        records.push({ id: `c${i}`, workspaceId, observerId: user, observedId: user, sessionId: null, content: contentOf(i, options.sessions), level, sourceIds: null, timesDerived: 1, createdAt: new Date(now.getTime() - (options.conclusions - i) * 1000) });
      }
      const vectors = records.map((r) => ({
        conclusionId: r.id,
        workspaceId,
        observerId: r.observerId,
        observedId: r.observedId,
        level: r.level,
        sessionId: null,
        vector: Float32Array.from(hashedVector(r.content, options.dimensions)),
      }));
      await store.transaction(async (tx) => {
        await tx.memory.insertConclusions(records);
        await tx.vectors.putConclusions(vectors);
      });
    }
    const conclusionsS = (performance.now() - started) / 1000;
    if (database.driver.dialect === 'sqlite') await database.driver.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    return { messagesS, conclusionsS };
  } finally {
    await database.driver.close();
  }
}

/** CPU time (user + system) of another process, µs, from /proc (Linux); NaN elsewhere. */
function processCpuUs(pid: number | undefined): number {
  return (cpuSeconds(pid) ?? NaN) * 1e6;
}

function cannon(base: string, connections: number, duration: number, next: () => { path: string; body: string }): autocannon.Options {
  return {
    url: `${base}/`,
    method: 'POST',
    connections,
    duration,
    timeout: 10,
    headers: { 'content-type': 'application/json' },
    requests: [{ method: 'POST', setupRequest: (request) => ({ ...request, ...next() }) }],
  };
}

interface Streamed {
  requests: number;
  seconds: number;
  firstByte: number[];
  total: number[];
  non2xx: number;
  errors: number;
  notDone: number;
}

/** `connections` clients, each sending one streamed chat after another for `seconds`. */
async function streamLoad(base: string, connections: number, seconds: number, next: () => { path: string; body: string }): Promise<Streamed> {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const url = new URL(base);
  const out: Streamed = { requests: 0, seconds, firstByte: [], total: [], non2xx: 0, errors: 0, notDone: 0 };
  const started = performance.now();
  const end = started + seconds * 1000;
  const one = () =>
    new Promise<void>((resolve) => {
      const { path, body } = next();
      const t0 = performance.now();
      let first = NaN;
      let text = '';
      const req = httpRequest(
        { host: url.hostname, port: url.port, path, method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
        (res) => {
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            if (Number.isNaN(first)) first = performance.now() - t0;
            text += chunk;
          });
          res.on('end', () => {
            out.requests++;
            if ((res.statusCode ?? 0) < 200 || (res.statusCode ?? 0) > 299) out.non2xx++;
            else if (!text.includes('"done": true') || text.includes('"error"')) out.notDone++;
            out.firstByte.push(first);
            out.total.push(performance.now() - t0);
            resolve();
          });
          res.on('error', () => {
            out.errors++;
            resolve();
          });
        },
      );
      req.on('error', () => {
        out.errors++;
        resolve();
      });
      req.end(body);
    });
  const client = async () => {
    while (performance.now() < end) await one();
  };
  await Promise.all(Array.from({ length: connections }, client));
  out.seconds = (performance.now() - started) / 1000;
  agent.destroy();
  return out;
}

export async function runChatBench(options: ChatOptions): Promise<ChatResult> {
  const onPostgres = options.databaseUrl !== undefined;
  const dir = mkdtempSync(join(tmpdir(), 'engram-bench-chat-'));
  const databaseUrl = options.databaseUrl ?? join(dir, 'chat.db');
  const workspaceId = onPostgres ? `bench-chat-${randomBytes(4).toString('hex')}` : 'bench-chat';
  const model = forkServer('fake chat model server', join(ROOT, 'bench/fake-chat-model-child.ts'), { cwd: ROOT, execArgv: ['--import', 'tsx'] });
  let server: ServerProcess | undefined;
  try {
    const { messagesS, conclusionsS } = await load(databaseUrl, workspaceId, options);
    const fileBytes = onPostgres ? undefined : statSync(databaseUrl).size + sizeOr0(`${databaseUrl}-wal`);
    const fake = await model.call<{ url: string; env: Record<string, string> }>('listen', { dimensions: options.dimensions });
    server = await startServerProcess({
      ...fake.env,
      DATABASE_URL: databaseUrl,
      EMBEDDING_VECTOR_DIMENSIONS: String(options.dimensions),
      LOG_LEVEL: 'warn',
    }, [], profileArgs());
    const base = server.baseUrl;

    // the chats work: a plain answer, a streamed one, and (tool variant) two model calls per chat
    const checks: string[] = [];
    await model.call('mode', 'text');
    await model.call('calls');
    for (const level of LEVELS) {
      const { path, body } = requestOf(999_983, level, false, options, workspaceId);
      const response = await fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      const text = await response.text();
      if (response.status !== 200) throw new Error(`${path} (${level}) answered ${response.status}: ${text.slice(0, 300)}`);
      const content = (JSON.parse(text) as { content: string }).content;
      if (typeof content !== 'string' || content.length === 0) throw new Error(`${path} (${level}): no content in ${text.slice(0, 300)}`);
      const streamed = await fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...JSON.parse(body), stream: true }) });
      const events = await streamed.text();
      if (streamed.status !== 200 || !events.includes('"done": true') || events.includes('"error"')) throw new Error(`${path} (${level}, stream) answered ${streamed.status}: ${events.slice(0, 300)}`);
    }
    const textCalls = await model.call<{ chat: number; embeddings: number }>('calls');
    checks.push(`plain and streamed chat at ${LEVELS.join(' and ')}: 200 with content / "done": true; model calls: ${textCalls.chat} chat, ${textCalls.embeddings} embeddings for ${LEVELS.length * 2} chats`);
    if (options.toolVariant) {
      await model.call('mode', 'tool');
      const { path, body } = requestOf(999_979, 'low', false, options, workspaceId);
      const response = await fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      const text = await response.text();
      const calls = await model.call<{ chat: number; embeddings: number }>('calls');
      if (response.status !== 200 || calls.chat !== 2) throw new Error(`tool variant: ${response.status} with ${calls.chat} model calls: ${text.slice(0, 300)}`);
      checks.push(`tool variant: 200 after ${calls.chat} chat calls and ${calls.embeddings} embeddings (prefetch + search_memory)`);
    }

    const runs: Run[] = [];
    let k = 0;
    const modes: Mode[] = options.toolVariant ? ['text', 'tool'] : ['text'];
    for (const mode of modes) {
      await model.call('mode', mode);
      for (const level of LEVELS) {
        for (const stream of mode === 'text' ? [false, true] : [false]) {
          const next = () => requestOf(k++, level, stream, options, workspaceId);
          for (const connections of [1, options.connections]) {
            if (stream) await streamLoad(base, connections, options.warmupS, next);
            else await autocannon(cannon(base, connections, options.warmupS, next));
            await model.call('calls');
            const engramBefore = processCpuUs(server.child.pid);
            const modelBefore = await model.call<NodeJS.CpuUsage>('cpu');
            let measured: Omit<Run, 'engramCpuUs' | 'modelCpuUs' | 'chatCalls' | 'embeddingCalls'>;
            if (stream) {
              const s = await streamLoad(base, connections, options.durationS, next);
              const total = Float64Array.from(s.total).sort();
              const first = Float64Array.from(s.firstByte).sort();
              measured = {
                mode, level, stream, connections,
                requests: s.requests,
                rps: s.requests / s.seconds,
                p50: percentile(total, 50),
                p99: percentile(total, 99),
                max: total[total.length - 1] ?? NaN,
                firstByteP50: percentile(first, 50),
                firstByteP99: percentile(first, 99),
                non2xx: s.non2xx + s.notDone,
                errors: s.errors,
                timeouts: 0,
              };
            } else {
              const latencies: number[] = [];
              const instance = autocannon(cannon(base, connections, options.durationS, next)) as unknown as autocannon.Instance & Promise<autocannon.Result>;
              instance.on('response', (_client, _status, _bytes, responseMs) => latencies.push(responseMs));
              const result = await instance;
              const sorted = Float64Array.from(latencies).sort();
              measured = {
                mode, level, stream, connections,
                requests: result.requests.total,
                rps: result.requests.total / result.duration,
                p50: percentile(sorted, 50),
                p99: percentile(sorted, 99),
                max: sorted[sorted.length - 1] ?? NaN,
                non2xx: result.non2xx,
                errors: result.errors,
                timeouts: result.timeouts,
              };
            }
            const engramCpu = processCpuUs(server.child.pid) - engramBefore;
            const modelAfter = await model.call<NodeJS.CpuUsage>('cpu');
            const calls = await model.call<{ chat: number; embeddings: number }>('calls');
            const n = Math.max(1, measured.requests);
            runs.push({
              ...measured,
              engramCpuUs: engramCpu / n,
              modelCpuUs: (modelAfter.user - modelBefore.user + modelAfter.system - modelBefore.system) / n,
              chatCalls: calls.chat / n,
              embeddingCalls: calls.embeddings / n,
            });
            process.stdout.write('.');
          }
        }
      }
    }
    return { options, onPostgres, messagesS, conclusionsS, fileBytes, checks, runs };
  } finally {
    if (server !== undefined) {
      server.child.kill('SIGTERM');
      await server.exited;
    }
    await model.stop();
    if (onPostgres) await dropWorkspace(databaseUrl, workspaceId);
    rmSync(dir, { recursive: true, force: true });
  }
}

async function dropWorkspace(databaseUrl: string, workspaceId: string): Promise<void> {
  const database = await openDatabase(databaseUrl);
  try {
    await database.store.workspaces.delete(workspaceId);
  } finally {
    await database.driver.close();
  }
}

function sizeOr0(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

export function printChat(result: ChatResult): void {
  const o = result.options;
  const int = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : 'n/a');
  const ms = (n: number | undefined) => (n !== undefined && Number.isFinite(n) ? n.toFixed(2) : '');
  const where = result.onPostgres ? 'PostgreSQL (pgvector)' : 'SQLite (sqlite-vec)';
  console.log('');
  console.log(
    `${CHAT_CASE} on ${where}: ${int(o.messages)} messages in ${int(o.sessions)} sessions, ${int(o.conclusions)} conclusions ` +
      `(${o.dimensions} dimensions; each session's user about itself); engram serve with the fake model (own process, answering at once)`,
  );
  const file = result.fileBytes === undefined ? '' : `; file ${(result.fileBytes / 1e6).toFixed(0)} MB`;
  console.log(`  loaded through the store: messages in ${result.messagesS.toFixed(1)} s, conclusions with their vectors in ${result.conclusionsS.toFixed(1)} s${file}`);
  for (const check of result.checks) console.log(`  check: ${check}`);
  console.log('');
  console.log('| model answers | level | stream | connections | req/s | p50 / p99 ms | first byte p50 / p99 ms | max ms | engram CPU µs/req | fake model CPU µs/req | model calls/req (chat + embed) | non-2xx | errors/timeouts |');
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const r of result.runs) {
    console.log(
      `| ${r.mode === 'text' ? 'text' : 'search_memory, then text'} | ${r.level} | ${r.stream ? 'yes' : 'no'} | ${r.connections} | ${int(r.rps)} | ` +
        `${ms(r.p50)} / ${ms(r.p99)} | ${r.stream ? `${ms(r.firstByteP50)} / ${ms(r.firstByteP99)}` : ''} | ${ms(r.max)} | ${int(r.engramCpuUs)} | ` +
        `${int(r.modelCpuUs)} | ${r.chatCalls.toFixed(2)} + ${r.embeddingCalls.toFixed(2)} | ${r.non2xx} | ${r.errors}/${r.timeouts} |`,
    );
  }
  const note = result.onPostgres ? ' (set for SQLite; this run is on PostgreSQL, so informational)' : '';
  console.log(`  aim: Engram's own part of a low chat under ${AIM_MS} ms at p99${note}; one connection, latencies include the fake model's round trips, so they bound Engram's part from above:`);
  for (const r of result.runs.filter((run) => run.level === 'low' && run.connections === 1)) {
    const what = `${r.mode === 'text' ? 'text answer' : 'search_memory, then text'}${r.stream ? ', streamed' : ''}`;
    console.log(`    low, ${what}: p99 ${ms(r.p99)} ms -> ${r.p99 < AIM_MS ? 'MET' : 'NOT MET'} (Engram CPU ${int(r.engramCpuUs)} µs per chat)`);
  }
  const bad = result.runs.filter((r) => r.non2xx > 0 || r.errors > 0);
  if (bad.length > 0) {
    console.log(`  WARNING: non-2xx responses, unfinished streams or errors in ${bad.map((r) => `${r.mode}/${r.level}/${r.stream ? 'stream' : 'json'}/${r.connections}`).join(', ')} (those numbers are not meaningful)`);
  }
}
