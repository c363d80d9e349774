import { spawn, spawnSync } from 'node:child_process';
import { Agent, request as httpRequest } from 'node:http';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it, onTestFailed } from 'vitest';
import { openDatabase } from '../../src/runtime/database.js';
import { SERVER_V8_FLAGS, serverExecArgv } from '../../src/server/server-flags.js';
import { ENGRAM, isAlive, runCli, startServerProcess, type ServerProcess } from '../support/server-process.js';
import { DIALECT, databaseForProcesses, uniqueId } from '../support/test-app.js';
import { freePort } from '../support/free-port.js';
import { askHealth, openSocket } from '../support/raw-socket.js';
import { startWebhookSink } from '../support/webhook-sink.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'engram-group-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const databaseUrl = databaseForProcesses(dir);

async function call(server: ServerProcess, method: string, path: string, body?: unknown) {
  const response = await fetch(server.baseUrl + path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    // a request left unanswered fails in 15 s instead of holding the test to its limit
    signal: AbortSignal.timeout(15_000),
  });
  return { status: response.status, body: await response.json() };
}

/** The primary's and the server processes' JSON log lines so far. */
function logLines(server: ServerProcess): Record<string, any>[] {
  return server
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, any>);
}

async function waitFor<T>(what: string, check: () => T | undefined, timeoutMs = 30_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Pids of the server processes that take connections now (started, ready, not exited). */
function listeningPids(server: ServerProcess): number[] {
  const lines = logLines(server);
  const exited = new Set(lines.filter((l) => l.msg === 'server process exited; starting another').map((l) => l.workerPid));
  const listening = new Set(lines.filter((l) => typeof l.msg === 'string' && l.msg === 'server process ready for connections from the primary').map((l) => l.pid as number));
  return lines
    .filter((l) => l.msg === 'server process started')
    .map((l) => l.workerPid as number)
    .filter((pid) => listening.has(pid) && !exited.has(pid));
}

/** A process's command line, split into its arguments. */
function commandLine(pid: number): string[] {
  if (existsSync(`/proc/${pid}/cmdline`)) return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  return spawnSync('ps', ['-o', 'args=', '-p', String(pid)], { encoding: 'utf8' }).stdout.trim().split(/\s+/);
}

async function startGroup(processes: number, env: Record<string, string> = {}): Promise<{ server: ServerProcess; pids: number[] }> {
  const server = await startServerProcess({ DATABASE_URL: databaseUrl(), ...env }, ['--processes', String(processes)]);
  // what the processes logged, to read a failure by
  onTestFailed(() => console.error(`engram serve --processes ${processes}, last output:\n${server.output().slice(-20_000)}`));
  // the primary's line and each process's own can reach the pipe in either order
  const pids = await waitFor('every server process to listen', () => {
    const listening = listeningPids(server);
    return listening.length === processes && logLines(server).some((l) => l.msg === 'all server processes listening') ? listening : undefined;
  });
  return { server, pids };
}

async function stopGroup(server: ServerProcess, pids: number[]): Promise<void> {
  if (server.child.exitCode === null) server.child.kill('SIGKILL');
  await server.exited;
  // the server processes leave once their primary is gone
  await waitFor('the server processes to exit', () => (pids.every((pid) => !isAlive(pid)) ? true : undefined), 10_000);
}

/**
 * GET /metrics on a connection of its own (a reused one would stay with the process that took
 * it): the status and text, or undefined when the connection closed or `timeoutMs` passed.
 */
function scrape(server: ServerProcess, timeoutMs: number): Promise<{ status: number; text: string } | undefined> {
  const { hostname, port } = new URL(server.baseUrl);
  return new Promise((resolve) => {
    const request = httpRequest({ host: hostname, port, path: '/metrics', agent: false }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
      response.on('error', () => resolve(undefined));
    });
    request.setTimeout(timeoutMs, () => {
      request.destroy();
      resolve(undefined);
    });
    request.on('error', () => resolve(undefined));
    request.end();
  });
}

/** Every peer id of a workspace, through v3 peers/list pages of 100. */
async function allPeerIds(server: ServerProcess, ws: string): Promise<Set<string>> {
  const ids = new Set<string>();
  for (let page = 1; ; page++) {
    const { status, body } = await call(server, 'POST', `/v3/workspaces/${ws}/peers/list?page=${page}&size=100`, {});
    expect(status).toBe(200);
    for (const peer of body.items) ids.add(peer.id);
    if (page >= body.pages) return ids;
  }
}

describe('engram serve --processes N', { timeout: 120_000 }, () => {
  // the primary's start, stop and hand-off of connections involve no database: on PostgreSQL
  // these run on SQLite's run only
  const handOff = it.skipIf(DIALECT === 'postgres');
  it('runs N processes on one port, all answering, and stops them all on SIGTERM, finishing a request in flight', async () => {
    const ws = uniqueId();
    const { server, pids } = await startGroup(2);
    try {
      expect(pids).toHaveLength(2);
      expect(pids.every(isAlive)).toBe(true);
      // the migrations ran once, in the primary, before any server process started
      const primaryPid = server.child.pid;
      expect(logLines(server).filter((l) => l.msg === 'migration applied').every((l) => l.pid === primaryPid)).toBe(true);
      // every server process runs with the server's V8 flags (the primary here was started without them)
      for (const pid of pids) {
        for (const flag of SERVER_V8_FLAGS) expect(commandLine(pid)).toContain(flag);
      }
      expect(commandLine(primaryPid!)).not.toContain(SERVER_V8_FLAGS[0]);

      const writes = await Promise.all(Array.from({ length: 40 }, (_, i) => call(server, 'POST', `/v3/workspaces/${ws}/peers`, { id: `p${i}` })));
      expect(writes.map((w) => w.status).every((s) => s === 200 || s === 201)).toBe(true);
      // the primary hands the connections to both processes
      const served = new Set(logLines(server).filter((l) => l.msg === 'request' && String(l.url).includes(ws)).map((l) => l.pid));
      expect([...served].sort()).toEqual([...pids].sort());
      expect((await allPeerIds(server, ws)).size).toBe(40);

      // a request in flight when the stop comes is answered: its head and half its body, then
      // SIGTERM, then the rest (the process's server does not count the connections it was handed)
      const socket = connect(Number(new URL(server.baseUrl).port), '127.0.0.1');
      let answer = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => (answer += chunk));
      socket.on('error', () => undefined);
      await new Promise((resolve) => socket.once('connect', resolve));
      const body = JSON.stringify({ id: 'late' });
      socket.write(`POST /v3/workspaces/${ws}/peers HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`);
      await new Promise((resolve) => setTimeout(resolve, 300));

      server.child.kill('SIGTERM');
      await waitFor('the processes to begin stopping', () => (logLines(server).filter((l) => l.msg === 'shutting down: finishing in-flight requests').length === 2 ? true : undefined));
      await new Promise((resolve) => setTimeout(resolve, 300));
      socket.write(body.slice(5));
      await waitFor('the answer', () => (/\r\n\r\n\{.*\}$/s.test(answer) ? true : undefined), 10_000);
      expect(answer).toMatch(/^HTTP\/1\.1 201 /);
      expect(answer).toContain('"id":"late"');
      socket.destroy();
      expect(await server.exited).toBe(0);
      const stopped = logLines(server).filter((l) => l.msg === 'shutting down: finishing in-flight requests').map((l) => l.pid);
      expect(stopped.sort()).toEqual([...pids].sort());
      await waitFor('the server processes to exit', () => (pids.every((pid) => !isAlive(pid)) ? true : undefined), 10_000);
    } finally {
      await stopGroup(server, pids);
    }
  });

  handOff('stops the group with exit code 1 when the port is taken', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as AddressInfo;
    try {
      const { code, stdout } = await runCli(['serve', '--processes', '2'], { ...process.env, DATABASE_URL: databaseUrl(), PORT: String(port), HOST: '127.0.0.1' });
      expect(code).toBe(1);
      expect(stdout).toMatch(/"msg":"cannot listen on the port"/);
      // before any server process started
      expect(stdout).not.toMatch(/"msg":"server process started"/);
    } finally {
      taken.close();
    }
  });

  handOff('stops with exit code 0 on SIGTERM while its server processes are still starting', async () => {
    // an orchestrator's stop right after the start: the processes get SIGTERM before they could
    // set up their own stop, and die of it; that is the stop asked for, not a failure
    const child = spawn(process.execPath, [...ENGRAM, 'serve', '--processes', '2'], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: databaseUrl(), PORT: String(await freePort()), LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk;
      if ((output.match(/"msg":"server process started"/g) ?? []).length === 2 && !child.killed) child.kill('SIGTERM');
    });
    child.stderr.on('data', (chunk: Buffer) => (output += chunk));
    onTestFailed(() => console.error(output.slice(-10_000)));
    expect(await exited).toEqual({ code: 0, signal: null });
    expect(output).toMatch(/"msg":"stopping every server process"/);
    // the stop came before either process was ready
    expect(output).not.toMatch(/"msg":"server process ready for connections from the primary"/);
  });

  handOff('holds a connection that comes before any process is ready, and answers it once one is', async () => {
    const port = await freePort();
    const started = startServerProcess({ DATABASE_URL: databaseUrl(), PORT: String(port) }, ['--processes', '2']);
    // the first connection the primary accepts: it listens before it starts the processes
    let connectedAt = Infinity;
    let status: number | undefined;
    for (let attempt = 0; status === undefined && attempt < 1_000; attempt++) {
      status = await new Promise<number | undefined>((resolve) => {
        let connected = false;
        const request = httpRequest({ host: '127.0.0.1', port, path: '/health', agent: false }, (response) => {
          response.resume();
          response.on('end', () => resolve(response.statusCode));
        });
        request.on('socket', (socket) =>
          socket.once('connect', () => {
            connected = true;
            connectedAt = Math.min(connectedAt, Date.now());
          }),
        );
        // refused: not listening yet, try again; closed once connected: the connection was dropped
        request.on('error', () => (connected ? resolve(-1) : setTimeout(() => resolve(undefined), 10)));
        request.end();
      });
    }
    const server = await started;
    try {
      expect(status).toBe(200);
      // it connected before any process was ready: the primary held it
      const firstReady = Math.min(...logLines(server).filter((l) => l.msg === 'server process ready for connections from the primary').map((l) => l.time as number));
      expect(connectedAt).toBeLessThan(firstReady);
    } finally {
      await stopGroup(server, listeningPids(server));
    }
  });

  it('replaces a server process killed under write load, and loses no acknowledged write', async () => {
    const ws = uniqueId();
    const { server, pids } = await startGroup(2);
    let current = pids;
    try {
      const acknowledged: string[] = [];
      let failed = 0;
      let next = 0;
      let killed = false;
      const writer = async () => {
        while (!killed || next < 400) {
          const id = `w${next++}`;
          try {
            const { status } = await call(server, 'POST', `/v3/workspaces/${ws}/sessions/s${next % 7}/peers`, { [id]: {} });
            if (status === 200) acknowledged.push(id);
            else failed++;
          } catch {
            failed++; // the connection to the killed process broke: no answer, so no promise made
          }
          if (next > 2_000) return;
        }
      };
      const load = Promise.all(Array.from({ length: 8 }, writer));
      await waitFor('writes before the kill', () => (next >= 120 ? true : undefined));
      process.kill(pids[0], 'SIGKILL');
      killed = true;
      await load;

      // the primary forked a replacement that listens on the same port
      current = await waitFor('a replacement process', () => {
        const now = listeningPids(server);
        return now.length === 2 && !now.includes(pids[0]) ? now : undefined;
      });
      expect(current).toContain(pids[1]);
      expect(logLines(server).some((l) => l.msg === 'server process exited; starting another' && l.workerPid === pids[0] && l.signal === 'SIGKILL')).toBe(true);

      expect(acknowledged.length).toBeGreaterThan(300);
      const stored = await allPeerIds(server, ws);
      expect(acknowledged.filter((id) => !stored.has(id))).toEqual([]);
      // both processes of the new group answer
      const answers = await Promise.all(Array.from({ length: 20 }, () => call(server, 'POST', `/v3/workspaces/${ws}/peers/list?size=1`, {})));
      expect(answers.every((a) => a.status === 200)).toBe(true);
      expect(failed).toBeLessThan(50);
    } finally {
      await stopGroup(server, [...pids, ...current]);
    }
  });

  handOff('closes the connections a killed process was being handed, instead of leaving them unanswered', async () => {
    const { server, pids } = await startGroup(2);
    let current = pids;
    const all = new Set(pids);
    const port = Number(new URL(server.baseUrl).port);
    const outcomes = { answered: 0, closed: 0, unanswered: 0 };
    // a new connection per request, so the primary hands connections out all the time
    const once = () =>
      new Promise<void>((resolve) => {
        const request = httpRequest({ host: '127.0.0.1', port, path: '/health', agent: false }, (response) => {
          response.resume();
          response.on('end', () => {
            outcomes.answered++;
            resolve();
          });
        });
        request.setTimeout(5_000, () => {
          outcomes.unanswered++;
          request.destroy();
          resolve();
        });
        request.on('error', () => {
          outcomes.closed++;
          resolve();
        });
        request.end();
      });
    let stop = false;
    const clients = Promise.all(
      Array.from({ length: 16 }, async () => {
        while (!stop) await once();
      }),
    );
    try {
      // two kills: each one hands connections out through a process's death and its replacement
      for (let kill = 0; kill < 2; kill++) {
        await new Promise((resolve) => setTimeout(resolve, 300));
        const victim = current[0];
        process.kill(victim, 'SIGKILL');
        current = await waitFor('a replacement process', () => {
          const now = listeningPids(server);
          return now.length === 2 && !now.includes(victim) ? now : undefined;
        });
        for (const pid of current) all.add(pid);
      }
      stop = true;
      await clients;
      expect(outcomes.answered).toBeGreaterThan(100);
      expect(outcomes.unanswered).toBe(0);
    } finally {
      stop = true;
      await stopGroup(server, [...all]);
    }
  });

  // a process that has not taken a connection within 20 ms counts as busy and is passed over
  // (connection-hand-off.ts, BUSY_MS): on a machine loaded by the other test files one stall of a
  // process at start-up sends most of the 16 elsewhere (2 of 16 seen in CI), so a failure runs again
  handOff('hands each new connection to the process with the fewest open ones', { retry: 2 }, async () => {
    const ws = uniqueId();
    const { server, pids } = await startGroup(2);
    const port = Number(new URL(server.baseUrl).port);
    const agents: Agent[] = [];
    try {
      // one keep-alive connection per agent; which process served it shows in that process's request line
      const connect = async (index: number): Promise<Agent> => {
        const agent = new Agent({ keepAlive: true, maxSockets: 1 });
        agents[index] = agent;
        await new Promise<void>((resolve, reject) => {
          const request = httpRequest({ host: '127.0.0.1', port, method: 'POST', path: `/v3/workspaces/${ws}-c${index}/peers/list`, agent, headers: { 'content-type': 'application/json' } }, (response) => {
            response.resume();
            response.on('end', () => (response.statusCode === 200 ? resolve() : reject(new Error(`status ${response.statusCode}`))));
          });
          request.on('error', reject);
          request.end('{}');
        });
        return agent;
      };
      const servedBy = (index: number) =>
        waitFor(`the request line of connection ${index}`, () => logLines(server).find((l) => l.msg === 'request' && String(l.url).includes(`/${ws}-c${index}/`))?.pid as number | undefined);

      // 16 connections opened at once: 8 each, give or take the start's check of /health (a
      // keep-alive connection of its own, counted with the others)
      await Promise.all(Array.from({ length: 16 }, (_, index) => connect(index)));
      const first = await Promise.all(Array.from({ length: 16 }, (_, index) => servedBy(index)));
      const onFirst = first.flatMap((pid, index) => (pid === pids[0] ? [index] : []));
      expect(onFirst.length).toBeGreaterThanOrEqual(7);
      expect(onFirst.length).toBeLessThanOrEqual(9);
      expect(first.filter((pid) => pid === pids[1])).toHaveLength(16 - onFirst.length);

      // the first process's connections closed: the next 6 all go to it (at most 1 open against
      // at least 7), where taking turns would give each process 3
      for (const index of onFirst) agents[index].destroy();
      await new Promise((resolve) => setTimeout(resolve, 500));
      for (let k = 0; k < 6; k++) await connect(16 + k);
      const next = await Promise.all(Array.from({ length: 6 }, (_, k) => servedBy(16 + k)));
      expect(next).toEqual(Array.from({ length: 6 }, () => pids[0]));
    } finally {
      for (const agent of agents) agent?.destroy();
      await stopGroup(server, pids);
    }
  });

  handOff('holds each server process to MAX_CONNECTIONS open connections: one over is closed unanswered, a freed slot is used again', async () => {
    const { server, pids } = await startGroup(2, { MAX_CONNECTIONS: '2' });
    const port = Number(new URL(server.baseUrl).port);
    const open = () => openSocket(port);
    // one keep-alive request: its status, 'closed' when the connection is closed unanswered
    const ask = askHealth;
    const held: Socket[] = [];
    try {
      // two processes of 2 each; the start's own check of /health may still hold one of them
      const answers: (number | 'closed' | 'unanswered')[] = [];
      for (let i = 0; i < 7; i++) {
        const socket = await open();
        held.push(socket);
        answers.push(await ask(socket));
      }
      const answered = answers.filter((a) => a === 200).length;
      expect(answered, answers.join(' ')).toBeGreaterThanOrEqual(3);
      expect(answered, answers.join(' ')).toBeLessThanOrEqual(4);
      // once the group is full, every new connection is closed at once
      expect(answers.slice(answered), answers.join(' ')).toEqual(Array.from({ length: 7 - answered }, () => 'closed'));
      expect(answers.slice(0, answered).every((a) => a === 200)).toBe(true);

      // a held connection closed: its slot takes a new one, and the others still answer
      held[0].destroy();
      await new Promise((resolve) => setTimeout(resolve, 300));
      const again = await open();
      held.push(again);
      expect(await ask(again)).toBe(200);
      expect(await ask(held[1])).toBe(200);
    } finally {
      for (const socket of held) socket.destroy();
      await stopGroup(server, pids);
    }
  });

  handOff('hands no new connection to a process that has not taken the last one handed to it', async () => {
    const { server, pids } = await startGroup(2);
    const port = Number(new URL(server.baseUrl).port);
    const health = (timeoutMs: number) =>
      new Promise<number | undefined>((resolve) => {
        const request = httpRequest({ host: '127.0.0.1', port, path: '/health', agent: false }, (response) => {
          response.resume();
          response.on('end', () => resolve(response.statusCode));
        });
        request.setTimeout(timeoutMs, () => {
          request.destroy();
          resolve(undefined);
        });
        request.on('error', () => resolve(undefined));
        request.end();
      });
    process.kill(pids[1], 'SIGSTOP');
    try {
      // the first connection handed to the stopped process waits for it; once that one is not
      // taken, every later connection goes to the other process
      const answers: (number | undefined)[] = [];
      for (let i = 0; i < 8; i++) answers.push(await health(1_000));
      expect(answers.filter((status) => status === 200).length, answers.join(' ')).toBeGreaterThanOrEqual(7);
    } finally {
      process.kill(pids[1], 'SIGCONT');
      await stopGroup(server, pids);
    }
  });

  it('never runs one job twice at once across the processes', async () => {
    const ws = uniqueId();
    const sink = await startWebhookSink();
    sink.delayMs = 30;
    const { server, pids } = await startGroup(2, {
      WEBHOOK_SECRET: 'group-secret',
      WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
      WORKER_POLL_MS: '20',
      JOB_RETRY_BASE_MS: '50',
    });
    try {
      await call(server, 'POST', '/v3/workspaces', { id: ws });
      for (let i = 0; i < 5; i++) {
        expect((await call(server, 'POST', `/v3/workspaces/${ws}/webhooks`, { url: `${sink.url}?e=${i}` })).status).toBe(201);
      }
      // batches arrive through both processes at once, so both wake their workers
      await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          call(server, 'POST', `/v3/workspaces/${ws}/sessions/s/messages`, {
            messages: Array.from({ length: 5 }, (_, j) => ({ peer_id: 'p', content: `m${i}-${j}` })),
          }),
        ),
      );
      await sink.waitFor(200, 60_000);
      await new Promise((resolve) => setTimeout(resolve, 300));
      // 40 events x 5 endpoints, each delivered exactly once
      expect(sink.received).toHaveLength(200);
      const perDelivery = new Set(sink.received.map((r) => `${r.headers['idempotency-key']}@${r.url}`));
      expect(perDelivery.size).toBe(200);
    } finally {
      await stopGroup(server, pids);
      await sink.close();
    }
  });

  it('takes over the jobs a killed process held once their leases run out', async () => {
    const ws = uniqueId();
    const sink = await startWebhookSink();
    sink.delayMs = 800;
    // WEBHOOK_TIMEOUT_MS + 2 s is the delivery job's lease
    const { server, pids } = await startGroup(2, {
      WEBHOOK_SECRET: 'group-secret',
      WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
      WORKER_POLL_MS: '20',
      WEBHOOK_TIMEOUT_MS: '1000',
    });
    let current = pids;
    try {
      await call(server, 'POST', '/v3/workspaces', { id: ws });
      expect((await call(server, 'POST', `/v3/workspaces/${ws}/webhooks`, { url: sink.url })).status).toBe(201);
      const created = await call(server, 'POST', `/v3/workspaces/${ws}/sessions/s/messages`, {
        messages: Array.from({ length: 5 }, (_, i) => ({ peer_id: 'p', content: `m${i}` })),
      });
      const messageIds: string[] = created.body.map((m: { id: string }) => m.id);
      // the first delivery is in flight: its job is leased by one of the processes; kill both
      await waitFor('a delivery in flight', () => (sink.maxInFlight > 0 ? true : undefined));
      for (const pid of pids) process.kill(pid, 'SIGKILL');
      sink.delayMs = 0;
      current = await waitFor('two replacement processes', () => {
        const now = listeningPids(server);
        return now.length === 2 && now.every((pid) => !pids.includes(pid)) ? now : undefined;
      });
      // one endpoint's deliveries go in order: the rest wait behind the orphaned head until its
      // lease runs out and a new process takes it over
      await waitFor('every event delivered', () => {
        const delivered = new Set(sink.received.map((r) => JSON.parse(r.body).data.message_id));
        return messageIds.every((id) => delivered.has(id)) ? true : undefined;
      });
      const order = sink.received.map((r) => JSON.parse(r.body).data.message_id as string);
      // the interrupted delivery was made again by the process that took it over (at least once)
      expect(order.filter((id) => id === messageIds[0]).length).toBeGreaterThanOrEqual(2);
      expect([...new Set(order)]).toEqual(messageIds);
    } finally {
      await stopGroup(server, [...pids, ...current]);
      await sink.close();
    }
  });

  it('answers /metrics with the whole group\'s counts, whichever process is scraped, and the queue depth once', async () => {
    const { server, pids } = await startGroup(2, { METRICS_ENABLED: 'true' });
    const database = await openDatabase(databaseUrl());
    try {
      const ws = uniqueId();
      // dead-lettered jobs nothing else makes: the queue depth counted once, not once per process
      const at = DIALECT === 'postgres' ? new Date() : Date.now() * 1000;
      for (let i = 0; i < 3; i++) {
        await database.driver.run("INSERT INTO jobs (id, kind, queue_key, status, max_attempts, run_after, created_at) VALUES (?, 'test.metrics', ?, 'dead', 1, ?, ?)", [uniqueId('job'), `q-${ws}`, at, at]);
      }
      const dead = await database.driver.get<{ n: number | string }>("SELECT count(*) AS n FROM jobs WHERE status = 'dead'");
      // the 40 requests, whichever processes served them
      for (let i = 0; i < 40; i++) expect((await call(server, 'POST', `/v3/workspaces/${ws}/peers/list`, {})).status).toBe(200);
      const listed = /^engram_http_requests_total\{method="POST",route="\/v3\/workspaces\/:workspace_id\/peers\/list",status="200"\} (\d+)$/m;
      for (let round = 0; round < 4; round++) {
        const response = await scrape(server, 15_000);
        expect(response?.status, response?.text).toBe(200);
        const text = response!.text;
        expect(Number(listed.exec(text)?.[1])).toBe(40);
        // the scrapes before this one, counted by whichever process answered each
        if (round > 0) expect(text).toMatch(new RegExp(`^engram_http_requests_total\\{method="GET",route="/metrics",status="200"\\} ${round}$`, 'm'));
        expect(text.match(/^engram_queue_jobs\{status="dead"\} (\d+)$/gm)).toEqual([`engram_queue_jobs{status="dead"} ${Number(dead?.n)}`]);
        expect(text.match(/^# TYPE engram_http_requests_total /gm)).toHaveLength(1);
      }

      // a process that stops answering (SIGSTOP) fails the scrape with a 503 after the primary's
      // wait, rather than a sum missing its counts; a scrape handed to it waits for it instead
      process.kill(pids[1], 'SIGSTOP');
      let refused: { status: number; text: string } | undefined;
      try {
        for (let attempt = 0; attempt < 6 && refused === undefined; attempt++) refused = await scrape(server, 6_000);
      } finally {
        process.kill(pids[1], 'SIGCONT');
      }
      expect(refused?.status).toBe(503);
      expect(refused?.text).toMatch(/^Metrics of the server processes could not be gathered: 1 server process\(es\) did not send their metrics within 3000 ms$/);

      // a process killed: once its replacement listens, the scrapes answer again (without the killed one's counts)
      process.kill(pids[0], 'SIGKILL');
      await waitFor('the replacement process', () => {
        const now = listeningPids(server);
        return now.length === 2 && !now.includes(pids[0]) ? true : undefined;
      });
      for (let round = 0; round < 4; round++) {
        const response = await scrape(server, 15_000);
        expect(response?.status, response?.text).toBe(200);
        expect(Number(listed.exec(response!.text)?.[1] ?? 0)).toBeLessThanOrEqual(40);
      }
    } finally {
      await database.driver.close();
      await stopGroup(server, pids);
    }
  });

  it('two processes on one database: a page cached by one sees what the other wrote', async () => {
    const ws = uniqueId();
    const a = await startServerProcess({ DATABASE_URL: databaseUrl() });
    const b = await startServerProcess({ DATABASE_URL: databaseUrl() });
    try {
      const listed = async (server: ServerProcess, generation: 'v2' | 'v3') => {
        const { status, body } = await call(server, 'POST', `/${generation}/workspaces/${ws}/peers/list?size=50`, {});
        expect(status).toBe(200);
        return body.items.map((p: { id: string; metadata: unknown }) => `${p.id}:${JSON.stringify(p.metadata)}`);
      };
      expect((await call(a, 'POST', `/v3/workspaces/${ws}/peers`, { id: 'first' })).status).toBe(201);
      for (let round = 0; round < 3; round++) {
        // b lists twice, so the second answer is its cached page
        await listed(b, 'v3');
        await listed(b, 'v2');
        expect(await listed(b, 'v3')).toEqual(await listed(b, 'v3'));
        expect((await call(a, 'POST', `/v3/workspaces/${ws}/peers`, { id: `added-${round}` })).status).toBe(201);
        expect(await listed(b, 'v3')).toContain(`added-${round}:{}`);
        expect(await listed(b, 'v2')).toContain(`added-${round}:{}`);
        expect((await call(a, 'PUT', `/v3/workspaces/${ws}/peers/first`, { metadata: { round } })).status).toBe(200);
        expect(await listed(b, 'v3')).toContain(`first:{"round":${round}}`);
        expect(await listed(b, 'v2')).toContain(`first:{"round":${round}}`);
      }
      // and the other way round
      expect((await call(b, 'POST', `/v3/workspaces/${ws}/peers`, { id: 'from-b' })).status).toBe(201);
      expect(await listed(a, 'v3')).toContain('from-b:{}');

      // a peer's sessions and a session's messages, cached by b, written through a
      const sessionsOf = async (server: ServerProcess) => {
        const { status, body } = await call(server, 'POST', `/v3/workspaces/${ws}/peers/first/sessions?size=50`, {});
        expect(status).toBe(200);
        return body.items.map((s: { id: string }) => s.id).sort();
      };
      const messagesOf = async (server: ServerProcess) => {
        const { status, body } = await call(server, 'POST', `/v3/workspaces/${ws}/sessions/s0/messages/list?size=50`, {});
        expect(status).toBe(200);
        return body.items.map((m: { content: string }) => m.content);
      };
      expect((await call(a, 'POST', `/v3/workspaces/${ws}/sessions/s0/messages`, { messages: [{ peer_id: 'first', content: 'one' }] })).status).toBe(201);
      for (let round = 1; round <= 3; round++) {
        expect(await sessionsOf(b)).toEqual(await sessionsOf(b));
        expect(await messagesOf(b)).toEqual(await messagesOf(b));
        expect((await call(a, 'POST', `/v3/workspaces/${ws}/sessions/s${round}/peers`, { first: {} })).status).toBe(200);
        expect(await sessionsOf(b)).toEqual(Array.from({ length: round + 1 }, (_, i) => `s${i}`));
        expect((await call(a, 'POST', `/v3/workspaces/${ws}/sessions/s0/messages`, { messages: [{ peer_id: 'first', content: `m${round}` }] })).status).toBe(201);
        expect(await messagesOf(b)).toEqual(['one', ...Array.from({ length: round }, (_, i) => `m${i + 1}`)]);
      }
    } finally {
      a.child.kill('SIGKILL');
      b.child.kill('SIGKILL');
      await Promise.all([a.exited, b.exited]);
    }
  });

  it.runIf(DIALECT === 'sqlite')('refuses several processes on an in-memory SQLite database, and runs one by default', async () => {
    const refused = spawnSync(process.execPath, [...ENGRAM, 'serve', '--processes', '2'], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: ':memory:', PORT: '0' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain('an in-memory SQLite database (DATABASE_URL=:memory:) cannot be shared by 2 processes');

    const badFlag = spawnSync(process.execPath, [...ENGRAM, 'serve', '--processes', 'many'], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: ':memory:', PORT: '0' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(badFlag.status).toBe(2);
    expect(badFlag.stderr).toContain('--processes must be an integer from 1 to 1024, got "many"');

    // WEB_CONCURRENCY unset: one per core, except in memory, where it is one with a note
    const single = await startServerProcess({ DATABASE_URL: ':memory:', WEB_CONCURRENCY: '' });
    try {
      await waitFor('the note', () => (single.output().includes('in-memory SQLite database: one server process') ? true : undefined));
      expect(single.output()).not.toContain('server process started');
      expect((await call(single, 'GET', '/health')).status).toBe(200);
    } finally {
      single.child.kill('SIGKILL');
      await single.exited;
    }
  });
});

describe('the server V8 flags', () => {
  it('serverExecArgv appends the server flags a command line lacks, once', () => {
    expect(serverExecArgv(['--import', 'tsx'])).toEqual(['--import', 'tsx', ...SERVER_V8_FLAGS]);
    expect(serverExecArgv([...SERVER_V8_FLAGS, '--enable-source-maps'])).toEqual([...SERVER_V8_FLAGS, '--enable-source-maps']);
  });

  it('serverExecArgv keeps a flag the command line sets itself, either way or with another value', () => {
    const own = ['--memory-reducer', '--max_semi_space_size=32', '--heap_growing_percent=50', '--initial-old-space-size=64', '--no-expose-gc'];
    expect(serverExecArgv(own)).toEqual(own);
    // one of them set: the others are added
    expect(serverExecArgv(['--heap-growing-percent=0'])).toEqual(['--heap-growing-percent=0', ...SERVER_V8_FLAGS.filter((flag) => !flag.startsWith('--heap-growing-percent'))]);
  });

  it('are the flags npm start passes', () => {
    const start = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts.start as string;
    for (const flag of SERVER_V8_FLAGS) expect(start.split(' ')).toContain(flag);
  });
});
