/*
 * Documentation that cannot rot: every shell block of README.md and docs/*.md is marked (see
 * test/support/doc-blocks.ts), and the runnable ones run here as a user would run them, in a
 * temporary copy of the repository (the files a clone has, node_modules linked) against a fresh
 * server on a temporary store (SQLite in the copy, or a new PostgreSQL database on the
 * PostgreSQL run), with the fake model server standing in for a model. A block fails when a
 * command exits non-zero (curl runs with --fail-with-body, so an HTTP error status fails it), or
 * when its output differs from the output the block shows in the parts that matter (JSON field
 * names and types; text once paths, sizes and numbers are set aside).
 *
 * On SQLite it runs before any build (no dist/: `npx engram` runs the sources through tsx), on
 * PostgreSQL after `npm run build`: every runnable block, then every `engram` command the
 * documentation names, in a block or in prose, that no block ran. So every block and command runs
 * before a build and after one, on a store of each kind (CI runs both suites).
 */
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../src/cli/command-line.js';
import { commandsOf, documentationBlocks, outputDifferences, SHELL_LANGUAGES, type DocBlock, type Marker } from '../support/doc-blocks.js';
import { startFakeModelServer, type FakeModelServer } from '../support/fake-model-server.js';
import { freePort } from '../support/free-port.js';
import { DIALECT, ownPostgresDatabase } from '../support/test-app.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const blocks = documentationBlocks(ROOT).filter((block) => SHELL_LANGUAGES.has(block.language));
type Runnable = DocBlock & { marker: Exclude<Marker, { kind: 'skip' }> };
const runnable = blocks.filter((block): block is Runnable => typeof block.marker === 'object' && block.marker.kind !== 'skip');
const where = (block: DocBlock) => `${block.file}:${block.line}`;

const documentation = () => [...new Set(['README.md', ...blocks.map((block) => block.file)])].map((file) => readFileSync(join(ROOT, file), 'utf8')).join('\n');

/** The `engram` commands the documentation names anywhere (`npx engram backup`, `engram reembed` ...). */
function namedCommands(): string[] {
  // not a name followed by `:` (`claude mcp add ... engram http://...` names a server called engram)
  return [...new Set([...documentation().matchAll(/(?<![\w/:@.-])engram ([a-z][\w-]*)(?![\w:])/g)].map((match) => match[1]))].sort();
}

/** The other ways the documentation runs the command line: npm scripts, and node on the build (after one). */
function namedInvocations(built: boolean): string[][] {
  const text = documentation();
  const scripts = [...new Set([...text.matchAll(/npm run (db:migrate)\b/g)].map((match) => match[1]))].map((script) => ['npm', 'run', script]);
  const direct = built ? [...new Set([...text.matchAll(/node dist\/cli\/main\.js ([a-z]+)/g)].map((match) => match[1]))].map((name) => ['node', 'dist/cli/main.js', name]) : [];
  return [...scripts, ...direct];
}

/** How each command runs here: its arguments, and whether it keeps running (stopped once it is up). */
const RECIPES: Record<string, { args: string[]; env?: Record<string, string>; keepsRunning?: 'ready' | 'worker started' | 'MCP server on stdio' }> = {
  serve: { args: ['serve'], keepsRunning: 'ready' },
  worker: { args: ['worker'], keepsRunning: 'worker started' },
  migrate: { args: ['migrate'] },
  derive: { args: ['derive', '--workspace', 'demo'] },
  reembed: { args: ['reembed'] },
  backup: { args: ['backup', 'backups/named-command.db'] },
  export: { args: ['export', '--output', 'exports/named-command.ndjson'] },
  // an export of nothing (the header alone), which the import checks and stores nothing of
  import: { args: ['import', 'examples/empty-export.ndjson'] },
  token: { args: ['token', '--workspace', 'demo'], env: { AUTH_JWT_SECRET: 'a-secret-for-the-docs-test' } },
  help: { args: ['help'] },
  // a stdio server: up once it says so (on stderr; stdout carries only protocol)
  mcp: { args: ['mcp', '--workspace', 'demo'], keepsRunning: 'MCP server on stdio' },
};

let fake: FakeModelServer;
const cleanups: (() => Promise<void> | void)[] = [];
beforeAll(async () => {
  fake = await startFakeModelServer();
  // the model's answer to every question the documentation asks
  fake.script.defaultChat({ text: 'Alice moved to Lisbon.' });
});
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await fake?.close();
});

/** The files a clone has (tracked, and new ones not ignored), copied to a new folder with node_modules linked. */
function copyOfRepository(): string {
  const folder = mkdtempSync(join(tmpdir(), 'engram-docs-'));
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' }).split('\0');
  for (const file of files) {
    if (file === '' || !existsSync(join(ROOT, file))) continue;
    mkdirSync(dirname(join(folder, file)), { recursive: true });
    cpSync(join(ROOT, file), join(folder, file));
  }
  symlinkSync(join(ROOT, 'node_modules'), join(folder, 'node_modules'));
  cleanups.push(() => rmSync(folder, { recursive: true, force: true }));
  return folder;
}

/** The environment of every command: a plain one, the store, and the fake model. */
async function environment(folder: string): Promise<Record<string, string>> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? folder,
    TMPDIR: tmpdir(),
    LANG: 'C.UTF-8',
    LOG_LEVEL: 'warn',
    // npx installs the local package's bin link in its cache: a cache of the run's own
    npm_config_cache: join(folder, '.npm-cache'),
    npm_config_update_notifier: 'false',
    npm_config_fund: 'false',
    npm_config_audit: 'false',
    ...fake.env({ LLM_MAX_RETRIES: '0' }),
    // the documentation's blocks ask the model questions; forming memory in the background is
    // tested elsewhere (test/domain/reasoning) and would only keep the fake busy here
    DERIVER_ENABLED: 'false',
    SUMMARY_ENABLED: 'false',
    DREAM_ENABLED: 'false',
    // one server process where a block does not say how many: a process a core (the default)
    // made each `npx engram serve` of the pass before the build three processes loading the
    // sources through tsx; the process group is tested in test/process/process-group.test.ts
    WEB_CONCURRENCY: '1',
  };
  if (DIALECT === 'postgres') {
    const own = await ownPostgresDatabase({ migrated: false });
    cleanups.push(own.drop);
    env.DATABASE_URL = own.url;
  }
  return env;
}

interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], cwd: string, env: Record<string, string>, timeoutMs = 120_000): Promise<Finished> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk));
    const timer = setTimeout(() => {
      stderr += `\n(killed after ${timeoutMs / 1000} s)`;
      killGroup(child.pid!, 'SIGKILL');
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // gone already
  }
}

/** What every block's shell has first: stop at the first failure; HTTP errors fail curl; npm ci is done. */
const PRELUDE = `set -eo pipefail
curl() { command curl --fail-with-body --show-error "$@"; }
npm() { if [ "$1" = ci ]; then echo "npm ci: the copy's packages are installed"; else command npm "$@"; fi; }
`;

/**
 * A long-running command started in its own process group: resolves once `ready` holds (a server
 * answering /ready, a line printed), with a stop() that sends SIGTERM to the group and resolves
 * whether it ended within 30 s.
 */
async function startLongRunning(
  script: string,
  cwd: string,
  env: Record<string, string>,
  ready: { port: number } | { line: string },
): Promise<{ failure?: string; stop(): Promise<string | undefined> }> {
  // stdin stays open (a stdio MCP server ends when its host closes it)
  const child = spawn('bash', ['-c', PRELUDE + script], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let ended = false;
  void exited.then(() => (ended = true));
  const stop = async () => {
    killGroup(child.pid!, 'SIGTERM');
    const done = await Promise.race([exited.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 30_000))]);
    killGroup(child.pid!, 'SIGKILL');
    if (!done) return `did not stop within 30 s of SIGTERM:\n${output.slice(-4000)}`;
    if ('port' in ready) {
      const still = await fetch(`http://127.0.0.1:${ready.port}/health`).then(
        () => true,
        () => false,
      );
      if (still) return 'still answers after it stopped';
    }
    return undefined;
  };
  const started = Date.now();
  for (;;) {
    if (ended) return { failure: `exited before it was up:\n${output.slice(-4000)}`, stop };
    if (Date.now() - started > 150_000) return { failure: `not up within 150 s:\n${output.slice(-4000)}`, stop };
    if ('line' in ready ? output.includes(ready.line) : await fetch(`http://127.0.0.1:${ready.port}/ready`).then((r) => r.ok, () => false)) {
      return { stop };
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The block as it runs here: the documented port is the server's, the local model server the fake. */
function localized(body: string, port: number): string {
  return body.replaceAll(/\b(localhost|127\.0\.0\.1):8000\b/g, `127.0.0.1:${port}`).replaceAll('http://localhost:11434/v1', `${fake.url}/v1`);
}

/** Runs a `run` block; the problems found, each naming the block and command. */
async function runBlock(block: Runnable, folder: string, env: Record<string, string>, port: number): Promise<string[]> {
  for (const name of block.marker.given) writeFileSync(join(folder, name), '# Notes\n\nAlice moved to Lisbon in May.\n');
  const commands = commandsOf(localized(block.body, port));
  const script = PRELUDE + commands.map((command, index) => `printf '\\n@@command ${index}@@\\n'\n${command.text}\n`).join('');
  const result = await run('bash', ['-c', script], folder, { ...env, ENGRAM_URL: `http://127.0.0.1:${port}` });
  const outputs = result.stdout.split(/\n@@command \d+@@\n/).slice(1);
  const problems: string[] = [];
  if (result.code !== 0) {
    const failed = commands[Math.max(0, outputs.length - 1)]?.text ?? '';
    problems.push(`${where(block)}: exit code ${result.code} at\n  ${failed}\n--- stdout\n${result.stdout.slice(-3000)}\n--- stderr\n${result.stderr.slice(-3000)}`);
    return problems;
  }
  commands.forEach((command, index) => {
    for (const difference of outputDifferences(command.shown, outputs[index] ?? '')) problems.push(`${where(block)}: ${command.text.split('\n')[0]}\n  ${difference}`);
  });
  return problems;
}

/** Runs a `serve` block: each line must bring a server up, then stop on SIGTERM. */
async function serveBlock(block: Runnable, folder: string, env: Record<string, string>): Promise<string[]> {
  const problems: string[] = [];
  for (const command of commandsOf(localized(block.body, 8000))) {
    const port = await freePort();
    const server = await startLongRunning(command.text, folder, { ...env, PORT: String(port) }, { port });
    const stopped = await server.stop();
    for (const failure of [server.failure, server.failure === undefined ? stopped : undefined]) {
      if (failure !== undefined) problems.push(`${where(block)}: ${command.text}\n  ${failure}`);
    }
  }
  return problems;
}

/**
 * Runs `npx engram <command>` for every command the documentation names that no block ran in this
 * pass, and its other ways of running them (npm scripts, node on the build), side by side.
 */
async function runNamedCommands(folder: string, env: Record<string, string>, built: boolean, ranInBlocks: Set<string>): Promise<string[]> {
  const invocations = [...namedCommands().map((name) => ['npx', 'engram', name]), ...namedInvocations(built)].filter(
    (invocation) => !(invocation[0] === 'npx' && ranInBlocks.has(invocation[2])),
  );
  const results = await Promise.all(
    invocations.map(async (invocation): Promise<string | undefined> => {
      const name = invocation.at(-1)!.replace(/^db:/, '');
      const program = invocation.slice(0, -1);
      const recipe = RECIPES[name];
      if (recipe === undefined) {
        return `the documentation names "${invocation.join(' ')}", which ${Object.hasOwn(COMMANDS, name) ? 'this test does not know how to run (add it to RECIPES)' : 'is no command of engram'}`;
      }
      const commandEnv = { ...env, ...recipe.env };
      if (recipe.keepsRunning !== undefined) {
        const port = await freePort();
        const ready = recipe.keepsRunning === 'ready' ? { port } : { line: recipe.keepsRunning };
        const line = [...program, ...recipe.args].join(' ');
        const started = await startLongRunning(line, folder, { ...commandEnv, PORT: String(port), LOG_LEVEL: 'info', WEB_CONCURRENCY: '1' }, ready);
        const stopped = await started.stop();
        const failure = started.failure ?? stopped;
        return failure === undefined ? undefined : `${line}: ${failure}`;
      }
      if (name === 'backup' && DIALECT === 'postgres') return undefined;
      // an npm script names the command itself
      const args = program[0] === 'npm' ? [...program.slice(1), invocation.at(-1)!] : [...program.slice(1), ...recipe.args];
      const result = await run(program[0], args, folder, commandEnv);
      return result.code === 0 ? undefined : `${[program[0], ...args].join(' ')}: exit code ${result.code}\n${result.stdout}${result.stderr}`;
    }),
  );
  return results.filter((problem) => problem !== undefined);
}

/**
 * One pass over the documentation in a new copy, before or after `npm run build`: every runnable
 * block, then every `engram` command named that no block ran.
 */
async function pass(built: boolean): Promise<string[]> {
  const folder = copyOfRepository();
  const env = await environment(folder);
  const problems: string[] = [];
  const ranInBlocks = new Set<string>();
  if (built) {
    const build = await run('npm', ['run', 'build'], folder, env);
    if (build.code !== 0) return [`npm run build: exit code ${build.code}\n${build.stdout}${build.stderr}`];
  }
  const port = await freePort();
  const server = await startLongRunning('node bin/engram.mjs serve', folder, { ...env, PORT: String(port), WEB_CONCURRENCY: '1' }, { port });
  cleanups.push(async () => void (await server.stop()));
  if (server.failure !== undefined) return [`the documentation's server: ${server.failure}`];
  for (const block of runnable) {
    if (block.marker.sqliteOnly && DIALECT === 'postgres') continue;
    // before any build means before any build: a block's `npm start` builds dist/, which goes
    if (!built) rmSync(join(folder, 'dist'), { recursive: true, force: true });
    problems.push(...(block.marker.kind === 'serve' ? await serveBlock(block, folder, env) : await runBlock(block, folder, env, port)));
    for (const match of block.body.matchAll(/npx engram ([a-z]+)/g)) ranInBlocks.add(match[1]);
  }
  if (!built) rmSync(join(folder, 'dist'), { recursive: true, force: true });
  problems.push(...(await runNamedCommands(folder, env, built, ranInBlocks)));
  if (built !== existsSync(join(folder, 'dist', 'cli', 'main.js'))) problems.push(`dist/ ${built ? 'is gone' : 'was built'} during the pass`);
  const stopped = await server.stop();
  if (stopped !== undefined) problems.push(`the documentation's server: ${stopped}`);
  return problems;
}

const python = (() => {
  try {
    execFileSync('python3', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

describe('the client examples', () => {
  // the TypeScript one runs above, from the README's block; the Python SDK is not installable
  // where CI runs (no PyPI), so its example is checked as far as python3 alone can
  it.skipIf(!python)(`examples/quickstart.py is valid Python (py_compile)${python ? '' : ': skipped, no python3 on this machine'}`, () => {
    const out = mkdtempSync(join(tmpdir(), 'engram-py-'));
    cleanups.push(() => rmSync(out, { recursive: true, force: true }));
    const source = join(ROOT, 'examples', 'quickstart.py');
    execFileSync('python3', ['-c', 'import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)', source, join(out, 'quickstart.pyc')]);
    expect(existsSync(join(out, 'quickstart.pyc'))).toBe(true);
    // and it is the program the README describes: the SDK pointed at Engram, a conversation stored, a question asked
    const text = readFileSync(source, 'utf8');
    for (const part of ['Honcho(', 'base_url=', 'workspace_id=', '.add_messages(', '.chat(']) expect(text).toContain(part);
  });

  it('the README runs the TypeScript example', () => {
    expect(runnable.some((block) => block.body.includes('npx tsx examples/quickstart.ts'))).toBe(true);
  });
});

describe("the documentation's shell blocks", () => {
  it('every shell block says whether it runs (doctest: run, serve, or skip with a reason)', () => {
    const unmarked = blocks.filter((block) => typeof block.marker !== 'object').map((block) => `${where(block)} ${JSON.stringify(block.marker ?? 'no marker')}`);
    expect(unmarked).toEqual([]);
    // the README's commands are the ones a new user runs first: most must run here
    expect(runnable.length).toBeGreaterThanOrEqual(10);
  });

  it('the comparison of shown and actual output fails on what matters and passes over what varies', () => {
    expect(outputDifferences(['{"content":"Alice moved to Lisbon."}'], '{"content":"She lives in Porto."}\n')).toEqual([]);
    expect(outputDifferences(['{"content":"Alice moved to Lisbon."}'], '{"answer":"Alice moved to Lisbon."}')).toEqual(['.content is shown but not answered']);
    expect(outputDifferences(['{"items":[{"id":"alice"}]}'], '{"items":[{"id":7}]}')).toEqual(['.items[0].id is number, shown as string']);
    expect(outputDifferences(['{"content":"x"}'], 'Internal Server Error')).toHaveLength(1);
    const shown = ['backed up ./data/engram.db to /srv/backups/b.db: 284.3 MB in 647 ms, schema 0016_peer_sessions_version, check ok'];
    expect(outputDifferences(shown, 'backed up ./data/engram.db to /tmp/x/backups/b.db: 36 KB in 4 ms, schema 0031_job_leases, check ok')).toEqual([]);
    expect(outputDifferences(shown, 'backed up ./data/engram.db to /tmp/x/backups/b.db: 36 KB in 4 ms, schema 0031_job_leases, check failed')).toHaveLength(1);
    expect(commandsOf("curl -s -X POST a \\\n  -d '{}'\n# {\"a\":1}\n\ncurl b   # note\n# output of b")).toEqual([
      { text: "curl -s -X POST a \\\n  -d '{}'", shown: ['{"a":1}'] },
      { text: 'curl b   # note', shown: ['output of b'] },
    ]);
  });

  // One pass a store, in a copy and on a store of its own: how the command line is loaded (the
  // sources through tsx, or the build) does not depend on the store. A pass after the build on
  // SQLite too (the blocks with a command in them, and the commands) took 136 s of a CI run
  // beside the 177 s of the pass before it, on a machine whose two cores the suite keeps busy.
  it.skipIf(DIALECT === 'postgres')('the runnable blocks and every engram command named run before any build (the sources through tsx)', { timeout: 600_000 }, async () => {
    expect(await pass(false)).toEqual([]);
  });

  it.skipIf(DIALECT !== 'postgres')('the runnable blocks and every engram command named run after npm run build', { timeout: 600_000 }, async () => {
    expect(await pass(true)).toEqual([]);
  });
});
