import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { SERVER_V8_FLAGS } from '../../src/server/server-flags.js';
import { startFakeModelServer } from '../support/fake-model-server.js';
import { ENGRAM, startServerProcess } from '../support/server-process.js';
import { DIALECT } from '../support/test-app.js';

const fake = await startFakeModelServer();
afterAll(() => fake.close());

async function startupOutput(env: Record<string, string>, nodeOptions: string[] = [], until = /reasoning (on|off)/): Promise<string> {
  const server = await startServerProcess({ DATABASE_URL: ':memory:', ...env }, [], nodeOptions);
  try {
    const deadline = Date.now() + 10_000;
    while (!until.test(server.output()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    return server.output();
  } finally {
    server.child.kill('SIGTERM');
    await server.exited;
  }
}

// its servers run on an in-memory SQLite database whatever the suite's database: the PostgreSQL run would repeat it
describe.skipIf(DIALECT === 'postgres')('the start-up line about reasoning', () => {
  it('says reasoning is off, and why, when no model is configured; the server still serves', async () => {
    const output = await startupOutput({});
    expect(output).toContain('reasoning off: no model configured (set LLM_OPENAI_API_KEY, or LLM_OPENAI_BASE_URL');
  });

  it('names the models when one is configured', async () => {
    const output = await startupOutput(fake.env());
    expect(output).toContain('reasoning on: deriver openai/fake-chat, dialectic openai/fake-chat, embeddings openai/fake-embed (size from the first answer)');
  });

  it('names each reference setting that is set but not read, with what to use instead', async () => {
    const output = await startupOutput({ ...fake.env(), DERIVER_WORKERS: '4', DIALECTIC_HISTORY_TOKEN_LIMIT: '4096' }, [], /DIALECTIC_HISTORY_TOKEN_LIMIT is/);
    expect(output).toContain('DERIVER_WORKERS is a reference setting Engram does not read: each server process runs WORKER_CONCURRENCY background jobs at a time');
    expect(output).toContain("DIALECTIC_HISTORY_TOKEN_LIMIT is a reference setting Engram does not read: a chat's input is bounded by DIALECTIC_MAX_INPUT_TOKENS");
    expect(output).not.toContain('GET_CONTEXT_MAX_TOKENS');
    expect(await startupOutput(fake.env())).not.toContain('does not read');
  });

  it('a bad model setting stops start-up naming it', () => {
    const root = fileURLToPath(new URL('../..', import.meta.url));
    const result = spawnSync(process.execPath, [...ENGRAM, 'serve'], {
      cwd: root,
      env: { ...process.env, DATABASE_URL: ':memory:', DERIVER_MODEL_CONFIG__STRUCTURED_OUTPUT_MODE: 'yaml', EMBEDDING_VECTOR_DIMENSIONS: 'wide' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('DERIVER_MODEL_CONFIG__STRUCTURED_OUTPUT_MODE must be one of json_schema, json_object, none, got "yaml"');
    expect(result.stderr).toContain('EMBEDDING_VECTOR_DIMENSIONS must be an integer from 1 to 65536, got "wide"');
  });
});

describe.skipIf(DIALECT === 'postgres')('the start-up line about the server V8 flags', () => {
  it('names the flags node runs without, in one process', async () => {
    const output = await startupOutput({});
    expect(output).toContain(`node runs without the server's V8 flags (${SERVER_V8_FLAGS.join(' ')})`);
  });

  it('is not written when node has them', async () => {
    const output = await startupOutput({}, [...SERVER_V8_FLAGS]);
    expect(output).toContain('reasoning off');
    expect(output).not.toContain("node runs without the server's V8 flags");
  });
});
