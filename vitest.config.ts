import { defineConfig } from 'vitest/config';

/**
 * Tests that time the event loop (a `/health` answer within 50 ms while heavy requests run, timers
 * running while a long text is counted) run after the others, one file at a time, so that other
 * test files' processes sharing the cores cannot delay them: what they measure is Engram's loop,
 * not the machine's load.
 */
const TIMED = ['test/http/event-loop.test.ts', 'src/domain/messages/token-count.test.ts'];
const shared = { testTimeout: 30_000, hookTimeout: 60_000 };

export default defineConfig({
  test: {
    projects: [
      { test: { ...shared, name: 'suite', include: ['src/**/*.test.ts', 'test/**/*.test.ts'], exclude: TIMED } },
      { test: { ...shared, name: 'timed', include: TIMED, fileParallelism: false, sequence: { groupOrder: 1 } } },
    ],
  },
});
