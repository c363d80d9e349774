import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encoderLoaded, exceedsTokens } from '../../src/domain/text/token-count.js';
import { buildTestApp, uniqueId, type TestApi } from '../support/test-app.js';

/*
 * The tokenizer's tables (some 59 MB) are loaded on the first real count, so a process that
 * serves reads never holds them. This file runs in a module graph of its own, so nothing else
 * has loaded the encoder before it.
 */

let api: TestApi;
beforeAll(async () => {
  api = await buildTestApp();
});
afterAll(() => api.close());

describe('the tokenizer is loaded on the first count', () => {
  it('is not loaded by start-up, lists or a search with a short query, and is loaded by a message create', async () => {
    const ws = uniqueId();
    expect(encoderLoaded()).toBe(false);
    expect((await api.post('/v3/workspaces', { id: ws })).status).toBe(201);
    expect((await api.post(`/v3/workspaces/${ws}/peers/list`, {})).status).toBe(200);
    expect((await api.post(`/v3/workspaces/${ws}/search`, { query: 'what did alice say about the garden?' })).status).toBe(200);
    // a query of 8,192 characters of ASCII has at most 8,192 tokens: no count needed
    expect((await api.post(`/v3/workspaces/${ws}/search`, { query: 'garden '.repeat(1170) + 'ga' })).status).toBe(200);
    expect(encoderLoaded()).toBe(false);

    const created = await api.post(`/v3/workspaces/${ws}/sessions/s/messages`, { messages: [{ peer_id: 'alice', content: 'The garden is full of tomatoes.' }] });
    expect(created.status).toBe(201);
    expect(encoderLoaded()).toBe(true);
    expect((created.body as { token_count: number }[])[0].token_count).toBe(7);
  });

  it('a query longer than the bound is counted, and refused past 8,192 tokens', async () => {
    const ws = uniqueId();
    await api.post('/v3/workspaces', { id: ws });
    // 9,000 characters but 1 token per 3 spaces + word: counted, and under the limit
    expect((await api.post(`/v3/workspaces/${ws}/search`, { query: 'garden '.repeat(1300) })).status).toBe(200);
    const refused = await api.post(`/v3/workspaces/${ws}/search`, { query: 'garden x '.repeat(5000) });
    expect(refused.status).toBe(422);
    expect(JSON.stringify(refused.body)).toContain('Query exceeds maximum token limit of 8192.');
  });

  it('exceedsTokens agrees with a count at the bound, on text of several bytes per character', () => {
    // '😀' is 4 bytes of UTF-8 and at least 1 token: 3 of them may exceed 5 tokens, never 12
    const text = '😀😀😀';
    expect(exceedsTokens(text, 12)).toBe(false);
    expect(exceedsTokens('a'.repeat(9), 9)).toBe(false);
    expect(exceedsTokens('a b c d e f g h i j', 5)).toBe(true);
  });
});
