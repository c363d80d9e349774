import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, uniqueId, type TestApi } from '../../support/test-app.js';

let api: TestApi;
beforeAll(async () => {
  api = await buildTestApp();
});
afterAll(() => api.close());

describe('features that need a language model', () => {
  it('validate chat like the reference, then answer 503 clearly without a dialectic model', async () => {
    const ws = uniqueId();
    const bad = await api.post(`/v3/workspaces/${ws}/peers/alice/chat`, { query: '', reasoning_level: 'extreme' });
    expect(bad.status).toBe(422);
    expect(bad.body.detail).toEqual([
      { type: 'string_too_short', loc: ['body', 'query'], msg: 'String should have at least 1 character', input: '', ctx: { min_length: 1 } },
      {
        type: 'literal_error',
        loc: ['body', 'reasoning_level'],
        msg: "Input should be 'minimal', 'low', 'medium', 'high' or 'max'",
        input: 'extreme',
        ctx: { expected: "'minimal', 'low', 'medium', 'high' or 'max'" },
      },
    ]);
    const detail = 'Chat needs a dialectic model and none is configured for level low (set LLM_OPENAI_API_KEY or LLM_OPENAI_BASE_URL, or DIALECTIC_LEVELS__low__MODEL_CONFIG__*)';
    const refused = await api.post(`/v3/workspaces/${ws}/peers/alice/chat`, { query: 'What does alice like?' });
    expect(refused.status).toBe(503);
    expect(refused.body).toEqual({ detail });
    expect((await api.post(`/v2/workspaces/${ws}/peers/alice/chat`, { query: 'x' })).status).toBe(503);
    // workspace chat (newer SDKs): validated the same way, then refused the same way
    const empty = await api.post(`/v3/workspaces/${ws}/chat`, { query: '' });
    expect(empty.status).toBe(422);
    expect(empty.body.detail[0]).toMatchObject({ type: 'string_too_short', loc: ['body', 'query'] });
    const workspaceChat = await api.post(`/v3/workspaces/${ws}/chat`, { query: 'What happened?', stream: true });
    expect(workspaceChat.status).toBe(503);
    expect(workspaceChat.body).toEqual({ detail });
  });

  it('answer dreams with the reference text for disabled dreams', async () => {
    const ws = uniqueId();
    const bad = await api.post(`/v3/workspaces/${ws}/schedule_dream`, { observer: 'a', dream_type: 'nap' });
    expect(bad.body.detail[0]).toEqual({
      type: 'enum',
      loc: ['body', 'dream_type'],
      msg: "Input should be 'omni' or 'card_refresh'",
      input: 'nap',
      ctx: { expected: "'omni' or 'card_refresh'" },
    });
    const refused = await api.post(`/v3/workspaces/${ws}/schedule_dream`, { observer: 'a', dream_type: 'omni' });
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({ detail: 'Dreams are not enabled in the system configuration' });
    expect((await api.post(`/v2/workspaces/${ws}/trigger_dream`, { observer: 'a', dream_type: 'consolidate' })).status).toBe(400);
  });
});
