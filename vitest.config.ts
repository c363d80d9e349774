import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

/**
 * Tests that time the event loop (a `/health` answer within 50 ms while heavy requests run, timers
 * running while a long text is counted) run after the others, one file at a time, so that other
 * test files' processes sharing the cores cannot delay them: what they measure is Engram's loop,
 * not the machine's load.
 *
 * The others run in one worker process per core (Vitest's default leaves one core out, which on
 * a 2-core machine ran the files one at a time): most of their time is spent waiting on server
 * processes they start, on PostgreSQL, or on timers. Two workers on 2 cores leave the machine
 * idle a third of the SQLite suite (512 s of wall time, 704 s of CPU); three took it to 421 s
 * alone, but in CI, with lint and the type-check beside them, process groups then took over their
 * 30 s to start (seven tests of process-group.test.ts failed so): one worker a core stays. On
 * PostgreSQL each worker has a database of its own (test/support/worker-database.ts).
 *
 * The files of a worker share one module graph (`isolate: false`): each file would otherwise
 * import the whole app again, about 70 s of a suite's run on 2 cores. No test replaces a module
 * or changes the environment, and each builds its own app and store. A file that asserts on a
 * module's state from start-up (ISOLATED) gets a graph of its own.
 */
const TIMED = ['test/http/event-loop.test.ts', 'test/domain/text/token-count.test.ts'];
const ISOLATED = ['test/http/tokenizer-lazy.test.ts'];
const shared = { testTimeout: 30_000, hookTimeout: 60_000, setupFiles: ['test/support/setup-worker-database.ts'] };

export default defineConfig({
  test: {
    // the server that tests start as a process of its own, built once per run
    globalSetup: ['test/support/build-server.ts'],
    maxWorkers: Math.max(2, availableParallelism()),
    projects: [
      { test: { ...shared, name: 'suite', include: ['test/**/*.test.ts'], exclude: [...TIMED, ...ISOLATED], isolate: false } },
      { test: { ...shared, name: 'isolated', include: ISOLATED } },
      // a timed test that failed runs once more: a stall of the machine itself fails it once (seen
      // in CI: probes of 145, 115 and 79 ms in a row, the same test passing right after), while
      // work that holds the event loop fails it every time
      { test: { ...shared, name: 'timed', include: TIMED, fileParallelism: false, sequence: { groupOrder: 1 }, retry: 1 } },
    ],
  },
});
