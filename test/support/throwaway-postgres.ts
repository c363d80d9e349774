import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './free-port.js';

const run = promisify(execFile);

/** The newest PostgreSQL server binaries folder, or undefined when none is installed. */
export function postgresBin(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root).sort((a, b) => Number(b) - Number(a));
  for (const version of versions) if (existsSync(join(root, version, 'bin', 'initdb'))) return join(root, version, 'bin');
  return undefined;
}

/** A PostgreSQL server of this test's own, which the test may stop and start at will. */
export interface ThrowawayPostgres {
  url: string;
  /** `pg_ctl stop -m fast`: sessions are ended, new connections refused. */
  stop(): Promise<void>;
  /** Starts it again on the same port and data; resolves once it accepts connections. */
  start(): Promise<void>;
  /** Stops it for good and removes its files. */
  destroy(): Promise<void>;
}

/**
 * initdb in a temporary folder and start on a free loopback port (as scripts/with-postgres.mjs
 * does; as root the server runs as the postgres user, since initdb refuses root).
 */
export async function startThrowawayPostgres(bin: string): Promise<ThrowawayPostgres> {
  const asServerUser = (file: string, args: string[]) =>
    process.getuid?.() === 0 ? run('runuser', ['-u', 'postgres', '--', join(bin, file), ...args]) : run(join(bin, file), args);
  const dir = mkdtempSync(join(tmpdir(), 'engram-outage-pg-'));
  chmodSync(dir, 0o777);
  const data = join(dir, 'data');
  const port = await freePort();
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50`;
  const start = async () => {
    await asServerUser('pg_ctl', ['-D', data, '-l', join(dir, 'server.log'), '-w', '-o', options, 'start']);
  };
  await asServerUser('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  await start();
  await asServerUser('createdb', ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', 'engram_outage']);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/engram_outage`,
    async stop() {
      await asServerUser('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
    },
    start,
    async destroy() {
      await asServerUser('pg_ctl', ['-D', data, '-m', 'immediate', 'stop']).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
