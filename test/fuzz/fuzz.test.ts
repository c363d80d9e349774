import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServerProcess, type ServerProcess } from '../support/server-process.js';
import { DIALECT, TEST_DATABASE_URL } from '../support/test-app.js';
import { runFuzz } from './fuzz-engine.js';

/**
 * Every operation of /openapi.json, valid and mutated requests, against a real server process:
 * a fixed seed and a budget that fits CI (`npm run fuzz` runs longer with a random seed).
 */
const SEED = 20261124;
const RUNS_PER_OPERATION = Number(process.env.FUZZ_RUNS ?? 50);

const dir = mkdtempSync(join(tmpdir(), 'engram-fuzz-'));
let server: ServerProcess;
let exited = false;

beforeAll(async () => {
  server = await startServerProcess({ DATABASE_URL: DIALECT === 'postgres' ? TEST_DATABASE_URL : join(dir, 'fuzz.db'), LOG_LEVEL: 'warn' });
  void server.exited.then(() => (exited = true));
});

afterAll(async () => {
  server?.child.kill('SIGTERM');
  await server?.exited;
  rmSync(dir, { recursive: true, force: true });
});

describe('fuzzing every route of /openapi.json', () => {
  it('answers every valid and mutated request without a 5xx, with the contract error body, in time, and stays up', async () => {
    const result = await runFuzz({ baseUrl: server.baseUrl, seed: SEED, runsPerOperation: RUNS_PER_OPERATION, timeoutMs: 10_000, isAlive: () => !exited });
    const reports = result.failures.map((failure) => failure.report).join('\n\n');
    expect(reports).toBe('');
    expect(exited).toBe(false);
    // the budget really ran: every generation's operations, and both successes and refusals
    expect(result.operations).toBeGreaterThan(100);
    expect(result.requests).toBeGreaterThanOrEqual(result.operations * RUNS_PER_OPERATION);
    const statuses = Object.keys(result.statuses).map(Number);
    expect(statuses.some((status) => status < 300)).toBe(true);
    expect(statuses).toContain(422);
    expect(statuses).toContain(404);
  }, 600_000);
});
