/**
 * The baseline: a bare `node:http` server that answers every request with one fixed response
 * (status, content-type, body) set by the parent — the exact bytes Engram returned for the
 * case being measured. It reads each request body to the end, as Engram does, and does
 * nothing else: its throughput is what Node's HTTP stack alone can do on this machine.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { answerCalls } from './ipc.js';

interface FixedResponse {
  status: number;
  contentType: string;
  /** base64, so any bytes survive IPC unchanged */
  body: string;
}

let status = 200;
let headers: Record<string, string | number> = { 'content-type': 'application/json', 'content-length': 0 };
let body = Buffer.alloc(0);

const server = createServer((request, response) => {
  request.on('end', () => {
    response.writeHead(status, headers);
    response.end(body);
  });
  request.resume();
});
// Fastify's defaults, so idle keep-alive connections are treated alike
server.keepAliveTimeout = 72_000;

answerCalls({
  async listen() {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    return { port: (server.address() as AddressInfo).port };
  },
  set(response: FixedResponse) {
    status = response.status;
    body = Buffer.from(response.body, 'base64');
    headers = { 'content-type': response.contentType, 'content-length': body.length };
    return null;
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
