#!/usr/bin/env node
// Runs a command against a throwaway PostgreSQL: initdb in a temporary folder, start it on a
// free loopback port, create a database, run the command with DATABASE_URL set, stop and
// remove the server. With DATABASE_URL already pointing at PostgreSQL, just runs the command.
// WITH_POSTGRES_OPTIONS adds server settings, e.g. '-c shared_preload_libraries=pg_stat_statements'
// to see which statements a soak spends the database's time on.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const command = process.argv.slice(2);
if (command.length === 0) {
  console.error('usage: node scripts/with-postgres.mjs <command> [args...]');
  process.exit(2);
}

function run(cmd, args, env = process.env) {
  const result = spawnSync(cmd, args, { stdio: 'inherit', env });
  return result.status ?? 1;
}

if (process.env.DATABASE_URL?.startsWith('postgres')) process.exit(run(command[0], command.slice(1)));

function findBin() {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) throw new Error('PostgreSQL server binaries not found under /usr/lib/postgresql (apt-get install postgresql)');
  const versions = readdirSync(root).sort((a, b) => Number(b) - Number(a));
  for (const version of versions) if (existsSync(join(root, version, 'bin', 'initdb'))) return join(root, version, 'bin');
  throw new Error('initdb not found under /usr/lib/postgresql/*/bin');
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

const bin = findBin();
// Migration 0009 needs pgvector; say how to get it rather than fail in every test.
const sharedir = execFileSync(join(bin, 'pg_config'), ['--sharedir']).toString().trim();
if (!existsSync(join(sharedir, 'extension', 'vector.control'))) {
  console.error(`with-postgres: the pgvector extension is not installed for ${bin}; run: bash ../shared/vendor/install-pgvector.sh`);
  process.exit(1);
}
const isRoot = process.getuid?.() === 0;
// initdb refuses to run as root: run the server as the postgres user then.
const asServerUser = (file, args) =>
  isRoot ? execFileSync('runuser', ['-u', 'postgres', '--', file, ...args], { stdio: 'pipe' }) : execFileSync(file, args, { stdio: 'pipe' });

const dir = mkdtempSync(join(tmpdir(), 'engram-pg-'));
chmodSync(dir, 0o777);
const data = join(dir, 'data');
const port = await freePort();
let code = 1;
try {
  asServerUser(join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  asServerUser(join(bin, 'pg_ctl'), [
    '-D', data, '-l', join(dir, 'server.log'), '-w', '-o',
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 ${process.env.WITH_POSTGRES_OPTIONS ?? ''}`,
    'start',
  ]);
  asServerUser(join(bin, 'createdb'), ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', 'engram_test']);
  const url = `postgres://postgres@127.0.0.1:${port}/engram_test`;
  console.log(`with-postgres: PostgreSQL ${bin.split('/').at(-2)} on ${url}`);
  code = run(command[0], command.slice(1), { ...process.env, DATABASE_URL: url });
} catch (error) {
  console.error('with-postgres: could not start PostgreSQL:', error.stderr?.toString() || error.message);
} finally {
  try {
    asServerUser(join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', 'stop']);
  } catch {
    // already stopped
  }
  rmSync(dir, { recursive: true, force: true });
}
process.exit(code);
