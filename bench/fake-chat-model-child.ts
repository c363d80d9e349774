/**
 * The fake model server of the tests (test/support/fake-model-server.ts) in a process of its own,
 * scripted for the peer chat case (bench/chat.ts): every chat call is answered at once with plain
 * text, or, in the `tool` mode, a first turn (no tool result in the conversation yet) calls
 * `search_memory` once and the next turn answers with text.
 *
 * Calls: `listen` {dimensions} -> {url, env}; `mode` 'text' | 'tool'; `calls` -> chat and
 * embedding requests answered since the last call (the fake's record is cleared then, so a long
 * run does not fill the memory); `cpu`; `close`.
 */
import { startFakeModelServer, type FakeModelServer, type RecordedRequest, type ScriptedAnswer } from '../test/support/fake-model-server.js';
import { answerCalls } from './ipc.js';

const ANSWER = 'From what is in memory, they spend their weekends on the garden and talk about it often.';

let fake: FakeModelServer | undefined;
let mode: 'text' | 'tool' = 'text';

function hasToolResult(request: RecordedRequest): boolean {
  const messages = (request.body?.messages ?? []) as { role?: string }[];
  return messages.some((m) => m.role === 'tool');
}

function lastUserText(request: RecordedRequest): string {
  const messages = (request.body?.messages ?? []) as { role?: string; content?: unknown }[];
  const user = [...messages].reverse().find((m) => m.role === 'user');
  const text = typeof user?.content === 'string' ? user.content : 'weekends';
  return text.slice(0, 200);
}

function answer(request: RecordedRequest): ScriptedAnswer {
  if (mode === 'tool' && !hasToolResult(request)) {
    return { toolCalls: [{ name: 'search_memory', arguments: { query: lastUserText(request), limit: 20 } }] };
  }
  return { text: ANSWER };
}

function script(): void {
  fake?.script.defaultChat(answer);
}

answerCalls({
  async listen(payload: { dimensions: number }) {
    fake = await startFakeModelServer({ dimensions: payload.dimensions });
    script();
    return { url: fake.url, env: fake.env() };
  },
  mode(payload: 'text' | 'tool') {
    mode = payload;
    return mode;
  },
  calls() {
    const counts = { chat: fake?.requests('chat').length ?? 0, embeddings: fake?.requests('embeddings').length ?? 0 };
    fake?.reset();
    script();
    return counts;
  },
  cpu: () => process.cpuUsage(),
  async close() {
    await fake?.close();
  },
});
