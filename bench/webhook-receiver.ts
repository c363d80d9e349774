/**
 * The webhook cases' receiver, in its own process: a `node:http` server on 127.0.0.1 that
 * answers every POST with 200 (at once, or after `answerMs`: a receiver that takes its time, as
 * one across a network does) and counts deliveries per endpoint path (`/hook/<n>`), checking
 * each `X-Honcho-Signature` and counting repeats of an `Idempotency-Key` on one path. The
 * parent asks it (`expect`) to report once a number of distinct deliveries (of one event type,
 * when it names one) has arrived.
 */
import { createHmac } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { answerCalls } from './ipc.js';

export interface ReceiverTally {
  /** Distinct (path, idempotency key) pairs seen. */
  delivered: number;
  /** Requests repeating a pair already seen (at-least-once delivery resending). */
  duplicates: number;
  badSignatures: number;
  /** Distinct deliveries per path. */
  perPath: Record<string, number>;
  /** Distinct deliveries per event type (the body's `type`). */
  perType: Record<string, number>;
  /** Whether `expect` returned because the count was reached (false: it timed out). */
  complete: boolean;
}

let secret = '';
const seen = new Set<string>();
const perPath: Record<string, number> = {};
const perType: Record<string, number> = {};
let duplicates = 0;
let badSignatures = 0;
let waiter: { total: number; type?: string; resolve: () => void } | undefined;
let answerMs = 0;

/** Distinct deliveries so far, of `type` when given. */
const count = (type?: string) => (type === undefined ? seen.size : (perType[type] ?? 0));

function eventType(body: Buffer): string {
  try {
    const type = (JSON.parse(body.toString('utf8')) as { type?: unknown }).type;
    return typeof type === 'string' ? type : '(none)';
  } catch {
    return '(not JSON)';
  }
}

const server = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    const body = Buffer.concat(chunks);
    const expected = createHmac('sha256', secret).update(body).digest('hex');
    if (request.headers['x-honcho-signature'] !== expected) badSignatures++;
    const path = request.url ?? '/';
    const key = `${path} ${String(request.headers['idempotency-key'])}`;
    if (seen.has(key)) {
      duplicates++;
    } else {
      seen.add(key);
      perPath[path] = (perPath[path] ?? 0) + 1;
      const type = eventType(body);
      perType[type] = (perType[type] ?? 0) + 1;
    }
    const answer = () => {
      response.writeHead(200, { 'content-length': 0 });
      response.end();
    };
    if (answerMs > 0) setTimeout(answer, answerMs);
    else answer();
    if (waiter !== undefined && count(waiter.type) >= waiter.total) waiter.resolve();
  });
});
server.keepAliveTimeout = 72_000;

const tally = (complete: boolean): ReceiverTally => ({ delivered: seen.size, duplicates, badSignatures, perPath: { ...perPath }, perType: { ...perType }, complete });

answerCalls({
  async listen(request: { secret: string }) {
    secret = request.secret;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    return { port: (server.address() as AddressInfo).port };
  },
  /** Forgets every delivery seen (between cases); later answers wait `answerMs` (default 0). */
  reset(request?: { answerMs?: number }) {
    answerMs = request?.answerMs ?? 0;
    seen.clear();
    for (const path of Object.keys(perPath)) delete perPath[path];
    for (const type of Object.keys(perType)) delete perType[type];
    duplicates = 0;
    badSignatures = 0;
    return null;
  },
  /** Resolves once `total` distinct deliveries (of `type`, when given) have arrived, or after `timeoutMs`. */
  async expect(request: { total: number; type?: string; timeoutMs: number }) {
    if (count(request.type) >= request.total) return tally(true);
    let timer: NodeJS.Timeout | undefined;
    const complete = await new Promise<boolean>((resolve) => {
      waiter = { total: request.total, type: request.type, resolve: () => resolve(true) };
      timer = setTimeout(() => resolve(false), request.timeoutMs);
    });
    clearTimeout(timer);
    waiter = undefined;
    return tally(complete);
  },
  cpu() {
    return process.cpuUsage();
  },
  async close() {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    return null;
  },
});
