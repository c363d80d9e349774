/**
 * The webhook cases, driver side: events per second delivered end to end, from the first
 * enqueue to the receiver (bench/webhook-receiver.ts, its own process) having seen every
 * delivery. Engram's worker (`createWorker`, as `engram serve` runs it) runs in the Engram
 * process, started for these cases only.
 *
 * Each case uses its own workspace with 1 or 5 endpoints (`http://localhost:<port>/hook/<n>`,
 * registered through the v3 route), and produces `message.created` events by creating
 * messages over HTTP, 100 per request, one request after another.
 */
import type { ChildServer } from './ipc.js';
import type { ReceiverTally } from './webhook-receiver.js';

export interface WebhookCase {
  name: string;
  endpoints: number;
  /** The receiver answers each delivery after this many ms (default: at once). */
  answerMs?: number;
  /** Events of the case (default BENCH_WEBHOOK_EVENTS). */
  events?: number;
}

export const WEBHOOK_CASES: WebhookCase[] = [
  { name: 'webhooks, 1 endpoint', endpoints: 1 },
  { name: 'webhooks, 5 endpoints', endpoints: 5 },
  // one delivery at a time per endpoint (in order): its rate is one per answer time
  { name: 'webhooks, 1 endpoint answering in 20 ms', endpoints: 1, answerMs: 20, events: 300 },
];

export interface WebhookResult {
  kase: WebhookCase;
  events: number;
  deliveries: number;
  /** Seconds to create all messages (enqueue), and from the first request to the last delivery. */
  enqueueS: number;
  totalS: number;
  tally: ReceiverTally;
  /** Worker outcomes during the case. */
  retried: number;
  deadLettered: number;
  lastProblem: string;
  engramCpuUs: number;
  engramCores: number;
  receiverCpuUs: number;
}

interface WorkerStats {
  retried: number;
  deadLettered: number;
  skipped: number;
  errors: number;
  lastProblem: string;
  jobs: Record<string, number>;
}

async function post(url: string, body: unknown, expected: number[]): Promise<unknown> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await response.text();
  if (!expected.includes(response.status)) throw new Error(`POST ${url} answered ${response.status}: ${text.slice(0, 300)}`);
  return text === '' ? null : JSON.parse(text);
}

const cpuUs = (before: NodeJS.CpuUsage, after: NodeJS.CpuUsage) => after.user - before.user + (after.system - before.system);

export async function measureWebhooks(options: {
  kase: WebhookCase;
  engram: ChildServer;
  receiver: ChildServer;
  engramBase: string;
  receiverPort: number;
  workspaceId: string;
  events: number;
  /** Message texts to send (cycled). */
  texts: string[];
  timeoutMs: number;
}): Promise<WebhookResult> {
  const { kase, engram, receiver, engramBase, workspaceId: ws } = options;
  const events = kase.events ?? options.events;
  await post(`${engramBase}/v3/workspaces`, { id: ws }, [200, 201]);
  for (let i = 0; i < kase.endpoints; i++) {
    await post(`${engramBase}/v3/workspaces/${ws}/webhooks`, { url: `http://localhost:${options.receiverPort}/hook/${i}` }, [200, 201]);
  }
  await receiver.call('reset', { answerMs: kase.answerMs ?? 0 });
  const deliveries = events * kase.endpoints;
  const statsBefore = await engram.call<WorkerStats>('workerStats');
  const [engramBefore, receiverBefore] = await Promise.all([engram.call<NodeJS.CpuUsage>('cpu'), receiver.call<NodeJS.CpuUsage>('cpu')]);

  const started = performance.now();
  const waiting = receiver.call<ReceiverTally>('expect', { total: deliveries, timeoutMs: options.timeoutMs }, options.timeoutMs + 30_000);
  let sent = 0;
  for (let request = 0; sent < events; request++) {
    const count = Math.min(100, events - sent);
    const messages = Array.from({ length: count }, (_, j) => ({
      peer_id: j % 2 === 0 ? 'hook-user' : 'hook-assistant',
      content: options.texts[(sent + j) % options.texts.length],
    }));
    await post(`${engramBase}/v3/workspaces/${ws}/sessions/hook-session-${request % 10}/messages`, { messages }, [201]);
    sent += count;
  }
  const enqueueS = (performance.now() - started) / 1000;
  const tally = await waiting;
  const totalS = (performance.now() - started) / 1000;

  const [engramAfter, receiverAfter] = await Promise.all([engram.call<NodeJS.CpuUsage>('cpu'), receiver.call<NodeJS.CpuUsage>('cpu')]);
  const statsAfter = await engram.call<WorkerStats>('workerStats');
  const engramUs = cpuUs(engramBefore, engramAfter);
  return {
    kase,
    events,
    deliveries,
    enqueueS,
    totalS,
    tally,
    retried: statsAfter.retried - statsBefore.retried,
    deadLettered: statsAfter.deadLettered - statsBefore.deadLettered,
    lastProblem: statsAfter.lastProblem !== statsBefore.lastProblem ? statsAfter.lastProblem : '',
    engramCpuUs: engramUs / Math.max(1, tally.delivered),
    engramCores: engramUs / (totalS * 1e6),
    receiverCpuUs: cpuUs(receiverBefore, receiverAfter) / Math.max(1, tally.delivered),
  };
}
