/*
 * The `engram` command line: `--help` and `help <command>` print usage and exit 0 without acting
 * (no setting read, no store made, no port taken), mistakes exit 2 saying what is valid, and the
 * committed bin/engram.mjs runs the build, the sources, or says how to build. The documentation's
 * commands themselves run in test/docs/runnable-docs.test.ts.
 */
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { COMMANDS, parseCommandLine } from '../../src/cli/command-line.js';
import { buildServer } from '../../scripts/build.mjs';
import { freePort } from '../support/free-port.js';
import { ENGRAM } from '../support/server-process.js';
import { DIALECT } from '../support/test-app.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const folders: string[] = [];
afterAll(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

function temporaryFolder(): string {
  const folder = mkdtempSync(join(tmpdir(), 'engram-cli-'));
  folders.push(folder);
  return folder;
}

function node(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { cwd, env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk));
    // a command that acted instead of printing its help (a server) would not exit: stop it and say so
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const engram = ENGRAM.map((arg) => (arg.startsWith('src/') ? join(ROOT, arg) : arg));
const NAMES = Object.keys(COMMANDS);

// the commands here run on SQLite files of their own whatever the suite's database: the PostgreSQL run would repeat them
describe.skipIf(DIALECT === 'postgres')('engram --help and help <command>', () => {
  it.each(NAMES)('%s: --help, -h and "help <command>" print its usage, exit 0 and act on nothing', async (name) => {
    const folder = temporaryFolder();
    const port = String(await freePort());
    // settings that would fail start-up if read: help must not read them
    const env = { PORT: port, DATABASE_URL: join(folder, 'store', 'engram.db'), LOG_LEVEL: 'loud' };
    const forms = [[name, '--help'], [name, '-h'], ['help', name], ...(name === 'help' ? [] : [[name, '--bogus', '--help']])];
    for (const args of forms) {
      const result = await node([...engram, ...args], folder, env);
      expect(result, args.join(' ')).toMatchObject({ code: 0, stderr: '' });
      expect(result.stdout).toMatch(name === 'help' ? /^usage: engram <command>/ : new RegExp(`^usage: engram ${name}\\b`));
    }
    expect(readdirSync(folder)).toEqual([]);
  });

  it('engram help and engram --help list every command', async () => {
    for (const args of [['help'], ['--help'], ['-h']]) {
      const result = await node([...engram, ...args], temporaryFolder());
      expect(result.code).toBe(0);
      for (const name of NAMES) expect(result.stdout).toMatch(new RegExp(`^  ${name} `, 'm'));
    }
  });
});

describe.skipIf(DIALECT === 'postgres')('engram: mistakes exit 2 and say what is valid', () => {
  it.each([
    [['serv'], /unknown command "serv"; the commands are serve, worker, migrate, derive, reembed, backup, export, import, mcp, eval, token, help/],
    [['export', '--with-vectors=yes'], /export: --with-vectors takes no value/],
    [['export', '--workspaces', 'a'], /export: unknown option "--workspaces"; valid: --workspace <id>, --output <file>, --with-vectors/],
    [['import', 'a.ndjson', 'b.ndjson'], /import: unexpected argument "b.ndjson"/],
    [['--processes', '2'], /unknown option "--processes"; the commands are serve/],
    [['serve', '--process', '2'], /serve: unknown option "--process"; valid: --processes <n>/],
    [['migrate', '--force'], /migrate: unknown option "--force"; it takes no options/],
    [['token', '--workspace'], /token: --workspace needs a value: --workspace <id>/],
    [['token', '--workspace', '--peer', 'alice'], /token: --workspace needs a value/],
    [['backup'], /backup: missing <file>/],
    [['backup', 'a.db', 'b.db'], /backup: unexpected argument "b.db"/],
    [['worker', 'now'], /worker: unexpected argument "now"; it takes none/],
    [['help', 'serv'], /no command "serv"; the commands are serve/],
  ])('engram %j', async (args, message) => {
    const folder = temporaryFolder();
    const result = await node([...engram, ...args], folder, { DATABASE_URL: join(folder, 'engram.db') });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
    expect(result.stdout).toBe('');
    expect(readdirSync(folder)).toEqual([]);
  });

  it('options take their value after = too, and the parsed line is what runs', () => {
    expect(parseCommandLine(['token', '--workspace=demo', '--peer', 'alice'])).toEqual({ kind: 'run', command: 'token', options: { '--workspace': 'demo', '--peer': 'alice' }, positionals: [] });
    expect(parseCommandLine([])).toEqual({ kind: 'run', command: 'serve', options: {}, positionals: [] });
    expect(parseCommandLine(['backup', './copy.db'])).toEqual({ kind: 'run', command: 'backup', options: {}, positionals: ['./copy.db'] });
    // a repeatable option keeps every value; a flag takes none
    expect(parseCommandLine(['export', '--workspace', 'a', '--with-vectors', '--workspace=b'])).toEqual({
      kind: 'run',
      command: 'export',
      options: { '--workspace': 'b', '--with-vectors': 'true' },
      positionals: [],
      lists: { '--workspace': ['a', 'b'] },
    });
    expect(parseCommandLine(['import', '-'])).toEqual({ kind: 'run', command: 'import', options: {}, positionals: ['-'] });
    expect(parseCommandLine(['import'])).toEqual({ kind: 'run', command: 'import', options: {}, positionals: [] });
  });
});

describe.skipIf(DIALECT === 'postgres')('bin/engram.mjs, the command npm links', () => {
  /** A folder with the repository's bin/ and src/ (and node_modules linked when `installed`). */
  function checkout(installed: boolean): string {
    const folder = temporaryFolder();
    for (const part of ['bin', 'src', 'package.json']) cpSync(join(ROOT, part), join(folder, part), { recursive: true });
    if (installed) symlinkSync(join(ROOT, 'node_modules'), join(folder, 'node_modules'));
    return folder;
  }

  it('before any build it runs the sources through tsx; after a build, the build; with sources newer than the build, the sources again and says so', async () => {
    const folder = checkout(true);
    const store = join(folder, 'data', 'engram.db');
    const migrate = () => node([join(folder, 'bin', 'engram.mjs'), 'migrate'], folder, { DATABASE_URL: store, PATH: process.env.PATH });
    const before = await migrate();
    expect(before, before.stderr).toMatchObject({ code: 0, stderr: '' });
    expect(before.stdout).toMatch(/^applied {2}0001_/m);
    expect(existsSync(join(folder, 'dist'))).toBe(false);

    await buildServer(join(folder, 'dist'));
    const after = await migrate();
    expect(after, after.stderr).toMatchObject({ code: 0, stderr: '' });
    expect(after.stdout).toMatch(/^already applied {2}0001_/m);
    // and it is the build that runs: one that says so
    writeFileSync(join(folder, 'dist', 'cli', 'main.js'), "console.log('the build ran');\n");
    expect((await migrate()).stdout).toBe('the build ran\n');

    // a source edited after the build
    const later = new Date(Date.now() + 60_000);
    utimesSync(join(folder, 'src', 'config', 'config.ts'), later, later);
    const stale = await migrate();
    expect(stale.code).toBe(0);
    expect(stale.stdout).toMatch(/^already applied {2}0001_/m);
    expect(stale.stderr).toContain('engram: src/ is newer than dist/ (`npm run build` builds it again); running the sources through tsx');
  });

  it('after a global install of the clone (npm install -g, the link npm link makes) `engram` runs from any folder, before and after a build', async () => {
    const folder = checkout(true);
    const prefix = temporaryFolder();
    const elsewhere = temporaryFolder();
    const npm = await new Promise<number | null>((resolve) => {
      const child = spawn('npm', ['install', '-g', '--prefix', prefix, folder, '--no-audit', '--no-fund'], {
        cwd: elsewhere,
        env: { PATH: process.env.PATH, HOME: process.env.HOME, npm_config_cache: join(prefix, '.npm-cache'), npm_config_update_notifier: 'false' },
        stdio: 'ignore',
      });
      child.on('exit', resolve);
    });
    expect(npm).toBe(0);
    const store = join(elsewhere, 'engram.db');
    const engramThere = () => node([join(prefix, 'bin', 'engram'), 'migrate'], elsewhere, { DATABASE_URL: store });
    expect((await engramThere()).stdout).toMatch(/^applied {2}0001_/m);
    await buildServer(join(folder, 'dist'));
    writeFileSync(join(folder, 'dist', 'cli', 'main.js'), "console.log('the build ran');\n");
    expect((await engramThere()).stdout).toBe('the build ran\n');
  });

  it('without a build and without the dev dependencies it says how to build and exits 1', async () => {
    const folder = checkout(false);
    mkdirSync(join(folder, 'node_modules'));
    const result = await node([join(folder, 'bin', 'engram.mjs'), 'serve'], folder);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`engram: ${join(folder, 'dist', 'cli', 'main.js')} is missing. Build it in ${folder}/ with \`npm ci && npm run build\``);
  });
});
