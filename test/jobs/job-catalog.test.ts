import { describe, expect, it } from 'vitest';
import { reasoningRuntime } from '../../src/runtime/runtime.js';
import { loadConfig } from '../../src/config/config.js';
import { createDomainContext } from '../../src/domain/context.js';
import { JOB_KINDS, PAYLOAD_READERS } from '../../src/domain/job-kinds.js';
import { buildJobCatalog } from '../../src/jobs/catalog.js';
import { buildModels } from '../../src/llm/models.js';
import type { Store } from '../../src/storage/store.js';

/*
 * The job kinds are declared once (domain/job-kinds.ts); the catalog a process runs gives each a
 * handler, model work only where a model is configured, and reads each payload with its kind's
 * reader.
 */

const LIMITS = { sessionObservers: 10, webhookEndpoints: 10, jobMaxAttempts: 3 };
const WEBHOOKS = { secret: 's', timeoutMs: 1_000, allowPrivate: true };
const store = {} as Store;

function catalogWith(env: Record<string, string>) {
  const config = loadConfig({ DATABASE_URL: ':memory:', ...env }, '/nonexistent/.env');
  const ctx = createDomainContext(store, LIMITS, undefined, reasoningRuntime(config, buildModels(config.models)));
  return buildJobCatalog(ctx, WEBHOOKS, { concurrency: 4 });
}

describe('the job catalog', () => {
  it('has a handler for every kind when a model is configured, each reading its payload with the kind reader', () => {
    const catalog = catalogWith({ LLM_OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' });
    expect(Object.keys(catalog).sort()).toEqual([...JOB_KINDS].sort());
    for (const kind of JOB_KINDS) expect(catalog[kind].readPayload).toBe(PAYLOAD_READERS[kind]);
  });

  it('without a model, runs only the work that needs none (model work waits for a process with one)', () => {
    const catalog = catalogWith({});
    expect(Object.keys(catalog).sort()).toEqual(['peer.purge', 'scope.backfill', 'scope.removal', 'session.purge', 'webhook.deliver']);
  });

  it("refuses every kind's empty or mistyped payload", () => {
    for (const kind of JOB_KINDS) {
      expect(PAYLOAD_READERS[kind]({}), kind).toBeUndefined();
      expect(PAYLOAD_READERS[kind]({ workspaceId: 7, sessionId: [], observedId: null }), kind).toBeUndefined();
    }
  });
});
