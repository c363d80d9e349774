import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startServerProcess } from '../support/server-process.js';
import { databaseForProcesses, uniqueId } from '../support/test-app.js';

const dir = mkdtempSync(join(tmpdir(), 'engram-process-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const databaseUrl = databaseForProcesses(dir);

async function post(baseUrl: string, path: string, body: unknown) {
  const response = await fetch(baseUrl + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

describe('the server process', () => {
  it('keeps every acknowledged write through a SIGKILL right after the response', async () => {
    const ws = uniqueId();
    const first = await startServerProcess({ DATABASE_URL: databaseUrl() });
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) {
      statuses.push((await post(first.baseUrl, `/v3/workspaces/${ws}/sessions/s${i}/peers`, { [`p${i}`]: {} })).status);
    }
    first.child.kill('SIGKILL');
    await first.exited;
    expect(statuses).toEqual(Array(20).fill(200));

    const second = await startServerProcess({ DATABASE_URL: databaseUrl() });
    try {
      const peers = await post(second.baseUrl, `/v3/workspaces/${ws}/peers/list?size=100`, {});
      expect(peers.body.total).toBe(20);
      const sessions = await post(second.baseUrl, `/v3/workspaces/${ws}/sessions/list?size=100`, {});
      expect(sessions.body.total).toBe(20);
    } finally {
      second.child.kill('SIGKILL');
      await second.exited;
    }
  });

  it('finishes in-flight requests on SIGTERM and exits cleanly', async () => {
    const ws = uniqueId();
    const server = await startServerProcess({ DATABASE_URL: databaseUrl(), LOG_LEVEL: 'info' });
    const inFlight = Array.from({ length: 30 }, (_, i) => post(server.baseUrl, `/v3/workspaces/${ws}/sessions/s/peers`, { [`p${i}`]: {} }));
    // let the requests reach the server before the signal
    await new Promise((resolve) => setTimeout(resolve, 5));
    server.child.kill('SIGTERM');
    const results = await Promise.allSettled(inFlight);
    const code = await server.exited;
    expect(code).toBe(0);
    const answered = results.filter((r) => r.status === 'fulfilled').map((r) => (r as PromiseFulfilledResult<{ status: number }>).value.status);
    // every request the server accepted was answered in full, none with an error status
    expect(answered.every((status) => status === 200 || status === 503)).toBe(true);
    expect(server.output()).toContain('shutting down');
    // the log, buffered while the server runs, was written out before it exited: every answered
    // request's line, then the last line of the stop
    const logged = server
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { msg: string; url?: string; status?: number });
    const requestLines = logged.filter((line) => line.msg === 'request' && line.url?.startsWith(`/v3/workspaces/${ws}/`));
    expect(requestLines.filter((line) => line.status === 200)).toHaveLength(answered.filter((status) => status === 200).length);
    expect(logged.at(-1)?.msg).toBe('stopped');
  });

  it('refuses to start on a bad setting, naming it', async () => {
    const failure = await startServerProcess({ DATABASE_URL: databaseUrl(), PORT: 'eighty', AUTH_USE_AUTH: 'true', AUTH_JWT_SECRET: '' }).then(
      () => undefined,
      (error: Error) => error.message,
    );
    expect(failure).toContain('PORT must be an integer from 0 to 65535, got "eighty"');
    expect(failure).toContain('AUTH_JWT_SECRET must be set when AUTH_USE_AUTH is true');
  });
});
