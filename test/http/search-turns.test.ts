import { Agent, request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { startServerProcess, type ServerProcess } from '../support/server-process.js';
import { DIALECT } from '../support/test-app.js';

/*
 * Searches in flight on one SQLite server take turns (src/domain/turns.ts): 16 connections, each
 * sending one search after another, are answered about equally often. Served as each request
 * came off the socket, two of the 16 were answered about half as often as the rest: their
 * requests kept arriving just after the loop had started a pass over the others' (docs/decisions/0017-searches-take-turns.md). A real server process, so that the load comes from
 * another process as a client's would.
 */

const CONNECTIONS = 16;
const WS = 'turns';

let server: ServerProcess;

async function call(method: string, path: string, body: unknown): Promise<number> {
  const response = await fetch(server.baseUrl + path, { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  await response.text();
  return response.status;
}

/** Text of about 250 characters holding "canoe", varied so that ranking reads all of it. */
function message(n: number): string {
  const words = ['river', 'paddle', 'morning', 'bank', 'current', 'shore', 'heron', 'stone', 'willow', 'bridge'];
  const out = [`canoe ${n}`];
  for (let i = 0; out.join(' ').length < 250; i++) out.push(words[(n * 7 + i * 3) % words.length] + String(i % 5));
  return out.join(' ');
}

beforeAll(async () => {
  if (DIALECT !== 'sqlite') return;
  server = await startServerProcess({ DATABASE_URL: ':memory:', LOG_LEVEL: 'warn', RUN_WORKERS: 'false' });
  expect(await call('POST', '/v3/workspaces', { id: WS })).toBe(201);
  expect(await call('POST', `/v3/workspaces/${WS}/peers`, { id: 'alice' })).toBe(201);
  expect(await call('POST', `/v3/workspaces/${WS}/sessions`, { id: 'river' })).toBe(201);
  // more matches than a search ranks (500), so that each search ranks its full set
  for (let batch = 0; batch < 6; batch++) {
    const messages = Array.from({ length: 100 }, (_, i) => ({ peer_id: 'alice', content: message(batch * 100 + i) }));
    expect(await call('POST', `/v3/workspaces/${WS}/sessions/river/messages`, { messages })).toBe(201);
  }
}, 60_000);
afterAll(() => {
  if (server?.child.exitCode === null) server.child.kill('SIGKILL');
});

describe.runIf(DIALECT === 'sqlite')('searches in flight', () => {
  it('are answered about as often on every connection', async () => {
    onTestFailed(() => console.error(server.output().slice(-5000)));
    const url = new URL(`${server.baseUrl}/v3/workspaces/${WS}/search`);
    const body = JSON.stringify({ query: 'canoe', limit: 10 });
    const answered = new Array<number>(CONNECTIONS).fill(0);
    const statuses = new Set<number>();
    const until = performance.now() + 2500;
    await Promise.all(
      answered.map(async (_, connection) => {
        const agent = new Agent({ keepAlive: true, maxSockets: 1 });
        while (performance.now() < until) {
          statuses.add(
            await new Promise<number>((resolve, reject) => {
              const sent = request(
                { host: url.hostname, port: url.port, path: url.pathname, method: 'POST', agent, headers: { 'content-type': 'application/json' } },
                (response) => response.resume().on('end', () => resolve(response.statusCode ?? 0)),
              );
              sent.on('error', reject);
              sent.end(body);
            }),
          );
          answered[connection]++;
        }
        agent.destroy();
      }),
    );
    expect([...statuses]).toEqual([200]);
    // each connection waited for its turn behind the others: enough searches for the test to mean something
    expect(Math.min(...answered), answered.join(' ')).toBeGreaterThan(10);
    expect(Math.min(...answered) / Math.max(...answered), answered.join(' ')).toBeGreaterThan(0.8);
  }, 30_000);
});
