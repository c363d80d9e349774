import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { smallQaConversations } from '../../../bench/qa-conversations.js';
import { buildTestApp, uniqueId, type TestApi } from '../../support/test-app.js';

let api: TestApi;
beforeAll(async () => {
  api = await buildTestApp();
});
afterAll(() => api.close());

describe('search answers questions in plain language', () => {
  it('finds the answering turn among the first 10 for at least 80 % of the questions', async () => {
    const ws = uniqueId();
    const conversations = smallQaConversations();
    let found = 0;
    let asked = 0;
    for (const [index, conversation] of conversations.entries()) {
      const session = `conversation-${index}`;
      const ids: string[] = [];
      for (let at = 0; at < conversation.turns.length; at += 100) {
        const batch = conversation.turns.slice(at, at + 100).map((turn) => ({ peer_id: turn.speaker, content: turn.content }));
        const created = await api.post(`/v3/workspaces/${ws}/sessions/${session}/messages`, { messages: batch });
        expect(created.status).toBe(201);
        ids.push(...(created.body as { id: string }[]).map((m) => m.id));
      }
      for (const { question, answer } of conversation.questions) {
        const response = await api.post(`/v3/workspaces/${ws}/sessions/${session}/search`, { query: question, limit: 10 });
        expect(response.status).toBe(200);
        if ((response.body as { id: string }[]).some((m) => m.id === ids[answer])) found++;
        asked++;
      }
    }
    // the search that required every word found none of these (bench/README.md, "Search quality")
    expect(asked).toBeGreaterThanOrEqual(30);
    expect(found / asked).toBeGreaterThanOrEqual(0.8);
  });

  it('matches other forms of a word, drops stop words and falls back to them when there is nothing else', async () => {
    const ws = uniqueId();
    await api.post(`/v3/workspaces/${ws}/sessions/s/messages`, {
      messages: [
        { peer_id: 'alice', content: 'The grouping of painted ponies' },
        { peer_id: 'bob', content: 'who is she' },
        { peer_id: 'alice', content: 'nothing in common here' },
      ],
    });
    const contents = async (query: string) => ((await api.post(`/v3/workspaces/${ws}/search`, { query })).body as { content: string }[]).map((m) => m.content);
    expect(await contents('Which groups paint pony pictures?')).toEqual(['The grouping of painted ponies']);
    // "the", "of" and "is" are stop words: they alone would match two messages
    expect(await contents('the painting is of it')).toEqual(['The grouping of painted ponies']);
    expect(await contents('Who is she?')).toEqual(['who is she']);
    expect(await contents('the')).toEqual(['The grouping of painted ponies']);
  });
});
