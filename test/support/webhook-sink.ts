import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedWebhook {
  url: string;
  body: string;
  headers: Record<string, string | string[] | undefined>;
  at: number;
}

export interface WebhookSink {
  url: string;
  port: number;
  received: ReceivedWebhook[];
  /** The deliveries answered with a status other than 2xx (`answers`), in order. */
  refused: ReceivedWebhook[];
  /** Status to answer the next requests with (default 200); shift()ed per request when a list. */
  answers: number[];
  /** Milliseconds to wait before answering. */
  delayMs: number;
  /** Most requests seen in flight at once. */
  maxInFlight: number;
  waitFor(count: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** A local HTTP receiver that records every webhook delivery. */
export async function startWebhookSink(port = 0): Promise<WebhookSink> {
  let inFlight = 0;
  const sink: WebhookSink = {
    url: '',
    port: 0,
    received: [],
    refused: [],
    answers: [],
    delayMs: 0,
    maxInFlight: 0,
    async waitFor(count, timeoutMs = 20_000) {
      const start = Date.now();
      while (sink.received.length < count) {
        if (Date.now() - start > timeoutMs) throw new Error(`expected ${count} deliveries, got ${sink.received.length}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const server: Server = createServer((request, response) => {
    inFlight++;
    sink.maxInFlight = Math.max(sink.maxInFlight, inFlight);
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const status = sink.answers.length > 0 ? sink.answers.shift()! : 200;
      setTimeout(() => {
        const delivery = { url: request.url ?? '', body: Buffer.concat(chunks).toString('utf8'), headers: request.headers, at: Date.now() };
        (status >= 200 && status < 300 ? sink.received : sink.refused).push(delivery);
        inFlight--;
        response.writeHead(status).end();
      }, sink.delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  sink.port = (server.address() as AddressInfo).port;
  sink.url = `http://localhost:${sink.port}/hook`;
  return sink;
}
