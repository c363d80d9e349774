/**
 * The deriver end to end (`npm run bench`, case "deriver end to end"): `engram serve` in a child
 * process with DERIVER_FLUSH_ENABLED, the fake model server (test/support) answering at once, so
 * what is measured is Engram's own overhead: messages created over HTTP (100 per request), items
 * queued, batches read, the model asked, facts stored for every observer with their embeddings,
 * items closed, until the queue status shows every item processed.
 *
 * Environment (optional): BENCH_DERIVER_MESSAGES (default 3000), BENCH_DERIVER_SESSIONS (default
 * 30); BENCH_DATABASE_URL as for the other cases (default: a fresh SQLite file).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeModelServer } from '../test/support/fake-model-server.js';
import { startServerProcess } from '../test/support/server-process.js';

export const DERIVER_CASE = 'deriver end to end';

export interface DeriverResult {
  messages: number;
  sessions: number;
  enqueueS: number;
  totalS: number;
  completed: number;
  failed: number;
  conclusions: number;
  chatCalls: number;
  embeddingCalls: number;
}

async function request(base: string, method: string, path: string, body?: unknown): Promise<any> {
  const response = await fetch(base + path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status >= 300) throw new Error(`${method} ${path} answered ${response.status}: ${text.slice(0, 300)}`);
  return text === '' ? null : JSON.parse(text);
}

/** One fact per line of the prompt's conversation sent by the observed peer, so no two facts are equal. */
function factsOf(prompt: string): { explicit: { content: string }[] } {
  const target = /Participant: (\S+)/.exec(prompt)?.[1] ?? '';
  const lines = prompt.split('\n').filter((line) => line.includes(` ${target}: `));
  return { explicit: lines.map((line) => ({ content: `${target} said ${line.slice(line.indexOf(`${target}: `) + target.length + 2)}` })) };
}

export async function runDeriverBench(options: { databaseUrl?: string; messages: number; sessions: number }): Promise<DeriverResult> {
  const dir = mkdtempSync(join(tmpdir(), 'engram-bench-deriver-'));
  // vectors as wide as a common embedding model's (the default 8 would make unrelated facts near neighbours)
  const fake = await startFakeModelServer({ dimensions: 1536 });
  fake.script.defaultChat((recorded) => ({ json: factsOf(String(recorded.body.messages.at(-1)?.content ?? '')) }));
  const server = await startServerProcess({
    ...fake.env(),
    DATABASE_URL: options.databaseUrl ?? join(dir, 'bench.db'),
    DERIVER_FLUSH_ENABLED: 'true',
    // the deriver alone: past 50 conclusions a collection would queue an automatic dream, which
    // waits an hour for the collection to be idle and would keep the queue from draining
    DREAM_ENABLED: 'false',
    LOG_LEVEL: 'warn',
  });
  const base = server.baseUrl;
  const ws = `bench-deriver-${randomBytes(4).toString('hex')}`;
  try {
    await request(base, 'POST', '/v3/workspaces', { id: ws });
    const sessions = Array.from({ length: options.sessions }, (_, i) => `s${i}`);
    // two peers per session observing each other: every fact is stored for two observers
    for (const session of sessions) await request(base, 'POST', `/v3/workspaces/${ws}/sessions/${session}/peers`, { alice: { observe_others: true }, bob: { observe_others: true } });

    const started = performance.now();
    const perSession = Math.ceil(options.messages / options.sessions);
    let sent = 0;
    for (let round = 0; sent < options.messages; round++) {
      for (const session of sessions) {
        if (sent >= options.messages) break;
        const count = Math.min(100, perSession - round * 100, options.messages - sent);
        if (count <= 0) continue;
        const messages = Array.from({ length: count }, (_, i) => ({
          peer_id: i % 2 === 0 ? 'alice' : 'bob',
          content: `message ${sent + i} about the trip to the coast and the ${['dog', 'garden', 'bike', 'book'][(sent + i) % 4]}`,
        }));
        await request(base, 'POST', `/v3/workspaces/${ws}/sessions/${session}/messages`, { messages });
        sent += count;
      }
    }
    const enqueueS = (performance.now() - started) / 1000;

    let status: any;
    for (;;) {
      status = await request(base, 'GET', `/v3/workspaces/${ws}/queue/status`);
      if (status.total_work_units >= sent && status.pending_work_units === 0 && status.in_progress_work_units === 0) break;
      if (performance.now() - started > 600_000) throw new Error(`deriver did not finish: ${JSON.stringify(status)}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const totalS = (performance.now() - started) / 1000;
    const page = await request(base, 'POST', `/v3/workspaces/${ws}/conclusions/list?size=1`, {});
    // the items alone (a peer filter leaves summaries out): every message is one item, about its sender
    const [byAlice, byBob] = await Promise.all(['alice', 'bob'].map((peer) => request(base, 'GET', `/v3/workspaces/${ws}/queue/status?sender_id=${peer}`)));
    const items = byAlice.total_work_units + byBob.total_work_units;
    const completed = byAlice.completed_work_units + byBob.completed_work_units;
    return {
      messages: sent,
      sessions: options.sessions,
      enqueueS,
      totalS,
      completed,
      failed: items - completed,
      conclusions: page.total,
      chatCalls: fake.requests('chat').length,
      embeddingCalls: fake.requests('embeddings').length,
    };
  } finally {
    server.child.kill('SIGTERM');
    await server.exited;
    await fake.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export function printDeriver(result: DeriverResult): void {
  const r = result;
  console.log('');
  console.log(`Deriver end to end (${r.messages} messages in ${r.sessions} sessions, 2 peers each observing the other; fake model answering at once)`);
  console.log(`  messages created over HTTP in ${r.enqueueS.toFixed(2)} s; every item processed after ${r.totalS.toFixed(2)} s`);
  console.log(`  ${Math.round(r.messages / r.totalS)} messages/s through the deriver; ${r.conclusions} conclusions stored, ${Math.round(r.conclusions / r.totalS)} conclusions/s`);
  console.log(`  ${r.chatCalls} model calls (${(r.messages / Math.max(1, r.chatCalls)).toFixed(1)} messages per batch, summaries included), ${r.embeddingCalls} embedding calls; failed items: ${r.failed}`);
}
