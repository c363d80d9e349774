/**
 * `engram export` and `engram import` at two sizes: time and peak resident memory of the command's
 * process (`npx tsx bench/export-import.ts`; on PostgreSQL `node scripts/with-postgres.mjs npx tsx
 * bench/export-import.ts`, which measures SQLite and PostgreSQL).
 *
 * For each store, two sources are filled (BENCH_EXPORT_SMALL and BENCH_EXPORT_LARGE messages,
 * 20,000 and 200,000 by default, in sessions of 1,000, with a tenth as many conclusions); each is
 * exported to a file by `engram export` and the file imported into a new empty store of the same
 * kind by `engram import`, BENCH_EXPORT_ROUNDS times (3), each command run as its own process under
 * /usr/bin/time (its peak RSS and wall time). Printed: the medians, and the large size's over the
 * small's. Memory flat with size is a peak RSS ratio near 1 while the time grows with the rows.
 * On SQLite the store's file is read through a memory map (SQLITE_MMAP_MB), whose pages count in
 * the process's RSS as they are read, though they are the file's and the kernel drops them at will:
 * BENCH_EXPORT_MMAP_MB=0 runs the commands without it, leaving the process's own memory.
 * BENCH_EXPORT_STORES=sqlite (or postgres) measures one store. BENCH_EXPORT_NODE_FLAGS are given to
 * node for each command (`--max-old-space-size=64`: a heap a command holding the store could not
 * live in; RSS peaks otherwise include the garbage V8 lets build up before it collects).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openDatabase } from '../src/runtime/database.js';
import type { ConclusionRecord, MessageRecord, Store } from '../src/storage/store.js';
import { ownPostgresDatabase, TEST_DATABASE_URL } from '../test/support/test-app.js';
import { median } from './stats.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SMALL = Number(process.env.BENCH_EXPORT_SMALL ?? 20_000);
const LARGE = Number(process.env.BENCH_EXPORT_LARGE ?? 200_000);
const ROUNDS = Number(process.env.BENCH_EXPORT_ROUNDS ?? 3);
/** SQLITE_MMAP_MB for the commands (default: the setting's default, 2047): pages of the file read through the map count in RSS. */
const MMAP_MB = process.env.BENCH_EXPORT_MMAP_MB;
const ONLY = process.env.BENCH_EXPORT_STORES?.split(',');
/** Node flags for the commands, e.g. `--max-old-space-size=64`: a heap too small for a store held in memory. */
const NODE_FLAGS = process.env.BENCH_EXPORT_NODE_FLAGS?.split(' ').filter((flag) => flag !== '') ?? [];
const dir = mkdtempSync(join(tmpdir(), 'engram-bench-export-'));
const dialects = (TEST_DATABASE_URL.startsWith('postgres') ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const)).filter((d) => ONLY === undefined || ONLY.includes(d));
const drops: (() => Promise<void>)[] = [];

async function newStore(dialect: 'sqlite' | 'postgres', name: string): Promise<string> {
  if (dialect === 'sqlite') return join(dir, `${name}.db`);
  const own = await ownPostgresDatabase();
  drops.push(own.drop);
  return own.url;
}

/** `messages` messages in sessions of 1,000 (two peers), and a tenth as many conclusions. */
async function fill(store: Store, messages: number): Promise<void> {
  const w = 'bench';
  const t0 = Date.UTC(2026, 0, 1);
  await store.transaction(async (tx) => {
    await tx.workspaces.createIfAbsent({ id: w, metadata: {}, configuration: {} }, new Date(t0));
    await tx.peers.ensure(w, ['alice', 'bob'], new Date(t0));
  });
  for (let start = 0; start < messages; start += 5_000) {
    await store.transaction(async (tx) => {
      const rows: MessageRecord[] = [];
      for (let i = start; i < Math.min(messages, start + 5_000); i++) {
        const sessionId = `s${Math.floor(i / 1_000)}`;
        if (i % 1_000 === 0) {
          await tx.sessions.createIfAbsent(w, { id: sessionId, metadata: { n: i }, configuration: {} }, new Date(t0 + i));
          await tx.sessions.saveMemberships(w, sessionId, ['alice', 'bob'].map((peerId) => ({ peerId, configuration: {}, joinedAt: new Date(t0 + i), leftAt: null })));
        }
        rows.push({
          id: `m${i}`,
          workspaceId: w,
          sessionId,
          peerId: i % 2 === 0 ? 'alice' : 'bob',
          content: `Message ${i}: the weather in Lisbon was mild and we talked about trains, books and the sea.`,
          metadata: { i, tag: i % 7 === 0 ? 'seven' : 'other' },
          tokenCount: 20,
          createdAt: new Date(t0 + i * 1000),
        });
      }
      for (let at = 0; at < rows.length; at += 500) await tx.messages.insert(rows.slice(at, at + 500));
      const conclusions: ConclusionRecord[] = rows
        .filter((_, index) => index % 10 === 0)
        .map((m) => ({
          id: `c-${m.id}`,
          workspaceId: w,
          observerId: m.peerId,
          observedId: m.peerId,
          sessionId: m.sessionId,
          content: `${m.peerId} mentioned trains in ${m.id}`,
          level: 'explicit',
          sourceIds: [m.id],
          timesDerived: 1,
          createdAt: m.createdAt,
        }));
      await tx.memory.lockConclusionCounts(conclusions);
      await tx.memory.insertConclusions(conclusions);
    });
  }
}

/** Runs `engram <args>` as a process under /usr/bin/time: its wall time (s) and peak RSS (MB). */
function measured(args: string[], databaseUrl: string): { seconds: number; rssMb: number } {
  const result = spawnSync('/usr/bin/time', ['-f', '@@%e %M', process.execPath, ...NODE_FLAGS, '--import', 'tsx', 'src/cli/main.ts', ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent', ...(MMAP_MB === undefined ? {} : { SQLITE_MMAP_MB: MMAP_MB }) },
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.status !== 0) throw new Error(`engram ${args.join(' ')} failed:\n${result.stderr}`);
  const match = /@@([\d.]+) (\d+)/.exec(result.stderr);
  if (match === null) throw new Error(`no measurement in:\n${result.stderr}`);
  return { seconds: Number(match[1]), rssMb: Number(match[2]) / 1024 };
}


interface Row {
  dialect: string;
  messages: number;
  fileMb: number;
  exportS: number;
  exportRss: number;
  importS: number;
  importRss: number;
}

const rows: Row[] = [];
try {
  for (const dialect of dialects) {
    // the start-up of a command (node, tsx, opening the store), measured apart: an export of no workspace
    const emptyUrl = await newStore(dialect, 'empty');
    const startups = Array.from({ length: ROUNDS }, (_, round) => measured(['export', '--workspace', 'none', '--output', join(dir, `empty-${dialect}-${round}.ndjson`)], emptyUrl));
    console.log(`${dialect.padEnd(8)} start-up of a command (an export of nothing): ${median(startups.map((s) => s.seconds)).toFixed(2)} s, ${median(startups.map((s) => s.rssMb)).toFixed(0)} MB peak`);
    for (const messages of [SMALL, LARGE]) {
      const sourceUrl = await newStore(dialect, `source-${messages}`);
      const source = await openDatabase(sourceUrl);
      await fill(source.store, messages);
      await source.driver.close();
      const exports: { seconds: number; rssMb: number }[] = [];
      const imports: { seconds: number; rssMb: number }[] = [];
      let file = '';
      for (let round = 0; round < ROUNDS; round++) {
        file = join(dir, `export-${dialect}-${messages}-${round}.ndjson`);
        exports.push(measured(['export', '--output', file], sourceUrl));
        const targetUrl = await newStore(dialect, `target-${messages}-${round}`);
        // migrated before the measurement, so the import's time is the import's
        execFileSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'migrate'], { cwd: ROOT, env: { PATH: process.env.PATH, DATABASE_URL: targetUrl, LOG_LEVEL: 'silent' } });
        imports.push(measured(['import', file], targetUrl));
      }
      rows.push({
        dialect,
        messages,
        fileMb: statSync(file).size / 1024 / 1024,
        exportS: median(exports.map((e) => e.seconds)),
        exportRss: median(exports.map((e) => e.rssMb)),
        importS: median(imports.map((e) => e.seconds)),
        importRss: median(imports.map((e) => e.rssMb)),
      });
      const last = rows[rows.length - 1];
      console.log(
        `${dialect.padEnd(8)} ${String(messages).padStart(9)} messages ${String(messages / 10).padStart(8)} conclusions  file ${last.fileMb.toFixed(1).padStart(7)} MB  ` +
          `export ${last.exportS.toFixed(2).padStart(7)} s ${last.exportRss.toFixed(0).padStart(5)} MB peak  import ${last.importS.toFixed(2).padStart(7)} s ${last.importRss.toFixed(0).padStart(5)} MB peak`,
      );
    }
  }
  console.log(`\nlarge / small (${LARGE} / ${SMALL} messages; medians of ${ROUNDS} rounds):`);
  for (const dialect of dialects) {
    const [small, large] = rows.filter((row) => row.dialect === dialect);
    console.log(
      `${dialect.padEnd(8)} export time x${(large.exportS / small.exportS).toFixed(2)}, peak RSS x${(large.exportRss / small.exportRss).toFixed(2)};  ` +
        `import time x${(large.importS / small.importS).toFixed(2)}, peak RSS x${(large.importRss / small.importRss).toFixed(2)}`,
    );
  }
} finally {
  for (const drop of drops) await drop();
  rmSync(dir, { recursive: true, force: true });
}
