#!/usr/bin/env node
// The README's first command, checked: `npm start` (which builds first) serves the API on a new
// SQLite file with no other set-up, answers the requests of the README's "A first conversation with memory", and stops cleanly on
// SIGTERM. Used by .ci/run; the test suite starts the server from a build of its own.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const START_TIMEOUT_MS = 120_000;

const freePort = () =>
  new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });

const folder = mkdtempSync(join(tmpdir(), 'engram-smoke-'));
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
let output = '';
// a process group of its own, so that a failure can kill the server behind npm with it
const child = spawn('npm', ['start'], {
  env: { ...process.env, PORT: String(port), DATABASE_URL: join(folder, 'engram.db'), LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn' },
  stdio: ['ignore', 'pipe', 'pipe'],
  detached: true,
});
child.stdout.on('data', (chunk) => (output += chunk));
child.stderr.on('data', (chunk) => (output += chunk));
const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));

function fail(message) {
  console.error(`smoke: ${message}\n--- npm start output ---\n${output.slice(-20_000)}`);
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // already gone
  }
  rmSync(folder, { recursive: true, force: true });
  process.exit(1);
}

async function request(method, path, body) {
  const response = await fetch(base + path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  return { status: response.status, body: await response.json() };
}

const started = Date.now();
for (;;) {
  if (child.exitCode !== null) fail(`npm start exited (${child.exitCode}) before answering`);
  if (Date.now() - started > START_TIMEOUT_MS) fail(`no answer from ${base}/ready within ${START_TIMEOUT_MS / 1000} s`);
  const ready = await request('GET', '/ready').catch(() => undefined);
  if (ready?.status === 200) break;
  await new Promise((resolve) => setTimeout(resolve, 200));
}
console.log(`smoke: npm start answered /ready after ${((Date.now() - started) / 1000).toFixed(1)} s (build included)`);

const added = await request('POST', '/v3/workspaces/demo/sessions/chat-1/peers', { alice: {}, bot: { observe_others: true } });
if (added.status !== 200 || added.body.id !== 'chat-1') fail(`adding peers to a session answered ${added.status} ${JSON.stringify(added.body)}`);
const listed = await request('POST', '/v3/workspaces/demo/peers/list?size=10');
const ids = (listed.body.items ?? []).map((peer) => peer.id).sort();
if (listed.status !== 200 || ids.join(',') !== 'alice,bot') fail(`peers/list answered ${listed.status} ${JSON.stringify(listed.body)}`);

/** The pids whose parent is `pid` (from /proc: Linux). */
const childrenOf = (pid) =>
  readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      try {
        const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid;
      } catch {
        return false;
      }
    })
    .map(Number);
const isServer = (pid) => {
  const [program, ...args] = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  return /(^|\/)node$/.test(program) && args.includes('dist/cli/main.js');
};

// the server (npm's grandchild, behind sh) is stopped as an orchestrator stops it; npm then ends
// with the server's exit code (npm signalled itself ends by the signal whatever the server did)
let server = child.pid;
while (!isServer(server)) {
  const below = childrenOf(server);
  if (below.length === 0) fail(`npm start's server process not found below ${server}`);
  server = below[0];
}
process.kill(server, 'SIGTERM');
const stop = await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve(undefined), 30_000).unref())]);
if (stop === undefined) fail('npm start did not stop within 30 s of SIGTERM');
if (stop.code !== 0) fail(`npm start ended with ${JSON.stringify(stop)}, not exit code 0`);
const after = await request('GET', '/health').catch(() => undefined);
if (after !== undefined) fail(`the server still answers after npm start ended (${after.status})`);
rmSync(folder, { recursive: true, force: true });
console.log(`smoke: the README's requests answered 200 (peers ${ids.join(', ')}); the server stopped on SIGTERM and npm start ended with exit code 0`);
