/*
 * The official TypeScript SDK 2.x (`@honcho-ai/sdk`, unmodified) asking Engram questions, with
 * the fake model server answering through the real openai transport: peer chat, streamed chat,
 * reasoning levels, response formats as JSON Schema and as zod schema, the workspace chat, and
 * an error after the stream started. The server records every exchange.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Honcho } from '@honcho-ai/sdk';
import { z } from 'zod';
import { startFakeModelServer, type FakeModelServer } from '../support/fake-model-server.js';
import { startSdkServer, type SdkServer } from '../support/sdk-server.js';
import { uniqueId } from '../support/test-app.js';

let fake: FakeModelServer;
let server: SdkServer;
beforeAll(async () => {
  fake = await startFakeModelServer();
  server = await startSdkServer({ ...fake.env(), DERIVER_ENABLED: 'false', EMBED_MESSAGES: 'false', LLM_MAX_RETRIES: '0' });
});
afterAll(async () => {
  await server?.close();
  await fake?.close();
});

const client = (workspaceId: string) => new Honcho({ baseURL: server.baseURL, workspaceId, maxRetries: 0 });

async function world() {
  fake.reset();
  const honcho = client(uniqueId('sdkchat'));
  const alice = await honcho.peer('alice');
  const bob = await honcho.peer('bob');
  const session = await honcho.session('talk');
  await session.addPeers([alice, bob]);
  await session.addMessages([alice.message('I only drink green tea'), bob.message('Noted!')]);
  return { honcho, alice, bob, session };
}

describe('@honcho-ai/sdk 2.x over /v3: chat', () => {
  it('peer.chat() returns the answer; target, session and reasoning level reach the server', async () => {
    const { alice, bob, session } = await world();
    fake.script.chat({ toolCalls: [{ name: 'grep_messages', arguments: { text: 'tea' } }] });
    fake.script.chat({ text: 'Alice drinks green tea.' });
    const answer = await bob.chat('What does Alice drink?', { target: alice, session, reasoningLevel: 'high' });
    expect(answer).toBe('Alice drinks green tea.');
    const [first, second] = fake.requests('chat');
    expect(first.body.messages.find((m: any) => m.role === 'system').content).toContain('perspective of the peer "bob"');
    expect(second.body.messages.find((m: any) => m.role === 'tool').content).toContain('alice: I only drink green tea');
    const exchange = server.exchanges.filter((e) => e.path.endsWith('/peers/bob/chat')).at(-1)!;
    expect(exchange.requestBody).toMatchObject({ target: 'alice', session_id: 'talk', reasoning_level: 'high', stream: false });
  });

  it('peer.chatStream() yields the streamed pieces and concatenates to the answer', async () => {
    const { alice } = await world();
    fake.script.chat({ text: 'Green tea, always.', chunks: ['Green ', 'tea, ', 'always.'] });
    const stream = await alice.chatStream('What do I drink?');
    const pieces: string[] = [];
    for await (const piece of stream) pieces.push(piece);
    expect(pieces).toEqual(['Green ', 'tea, ', 'always.']);
    expect(fake.requests('chat')).toHaveLength(1);
  });

  it('an error after the stream started ends the SDK stream with what was sent', async () => {
    const { alice } = await world();
    fake.script.chat({ text: 'Looking. ', chunks: ['Looking. '], toolCalls: [{ name: 'search_memory', arguments: { query: 'tea' } }] });
    fake.script.chat({ status: 400 });
    const stream = await alice.chatStream('What do I drink?');
    const pieces: string[] = [];
    for await (const piece of stream) pieces.push(piece);
    expect(pieces).toEqual(['Looking. ']);
    const exchange = server.exchanges.filter((e) => e.path.endsWith('/peers/alice/chat')).at(-1)!;
    // the stream was answered 200 and ended by the error event (its bytes are checked in test/domain/reasoning/chat.test.ts)
    expect(exchange.status).toBe(200);
    expect(fake.requests('chat')).toHaveLength(2);
  });

  it('responseFormat as JSON Schema and as zod schema', async () => {
    const { alice } = await world();
    const schema = { type: 'object', properties: { drink: { type: 'string' } }, required: ['drink'] };
    fake.script.chat({ json: { drink: 'green tea' } });
    const plain = await alice.chat('Favourite drink?', { responseFormat: schema });
    expect(JSON.parse(plain as string)).toEqual({ drink: 'green tea' });

    fake.script.chat({ json: { drink: 'green tea', cups: 3 } });
    // the SDK types its argument with its own copy of zod (4.0), the project's is newer: comparing
    // the two copies' types structurally exhausts the type checker, so the schema goes in untyped
    const drinks: any = z.object({ drink: z.string(), cups: z.number() });
    const parsed = await alice.chat('Favourite drink?', { responseFormat: drinks });
    expect(parsed).toEqual({ drink: 'green tea', cups: 3 });
  });

  it('honcho.chat() asks the workspace', async () => {
    const { honcho } = await world();
    fake.script.chat({ text: 'They talked about tea.' });
    expect(await honcho.chat('What was discussed?')).toBe('They talked about tea.');
  });
});
