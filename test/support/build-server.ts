import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import { buildServer as buildInto } from '../../scripts/build.mjs';
import { isAlive } from './server-process.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Vitest's global set-up: the server that tests start as a process of its own (`engram serve`,
 * `engram worker`, `engram backup`) runs from JavaScript built here once per run, as `npm start`
 * runs the built server, rather than through a TypeScript loader in every process: a server
 * process started through tsx took about 1.4 s more, and the process-group, backup and other
 * process tests start about a hundred. It is built as `npm run build` builds dist/
 * (scripts/build.mjs: esbuild strips the types file by file in well under a second). Each run
 * builds into a folder of its own (runs side by side do not share one), named in
 * ENGRAM_TEST_SERVER for the test files, built again before each rerun in watch mode (so edited sources are what runs), and
 * removed at the end (or, when a run was stopped before its end, by the next run).
 */
export default async function buildServer(project: TestProject): Promise<() => void> {
  const cache = join(ROOT, 'node_modules', '.cache');
  mkdirSync(cache, { recursive: true });
  // the folders of runs that were stopped before their teardown (the pid in the name is gone)
  for (const name of readdirSync(cache)) {
    const pid = /^engram-test-server-(\d+)-/.exec(name)?.[1];
    if (pid !== undefined && !isAlive(Number(pid))) rmSync(join(cache, name), { recursive: true, force: true });
  }
  // inside node_modules, so the built files resolve the project's packages as src does
  const out = mkdtempSync(join(cache, `engram-test-server-${process.pid}-`));
  await buildInto(out);
  project.onTestsRerun(() => buildInto(out));
  process.env.ENGRAM_TEST_SERVER = join(out, 'cli', 'main.js');
  return () => rmSync(out, { recursive: true, force: true });
}
