/**
 * The fake model server of the tests (test/support/fake-model-server.ts) in a process of its own,
 * started by bench cases that load Engram with queries: in the driver's process it would share an
 * event loop with autocannon, and its answers would wait behind the load generator.
 *
 * Calls: `listen` {dimensions, chatJson?} -> {url, env} (`chatJson`: the JSON every chat call
 * answers, e.g. the deriver's facts); `embeddings` -> embedding requests answered since the last
 * call (the record is then cleared, so a long run does not fill the memory); `calls` -> chat and
 * embedding requests since the last call; `cpu`; `close`.
 */
import { startFakeModelServer, type FakeModelServer } from '../test/support/fake-model-server.js';
import { answerCalls } from './ipc.js';

let fake: FakeModelServer | undefined;
let chatJson: unknown;

/** Forgets the recorded requests (reset also forgets the scripted default: set it again). */
function clearRecord(): void {
  fake?.reset();
  if (chatJson !== undefined) fake?.script.defaultChat({ json: chatJson });
}

answerCalls({
  async listen(payload: { dimensions: number; chatJson?: unknown }) {
    fake = await startFakeModelServer({ dimensions: payload.dimensions });
    chatJson = payload.chatJson;
    if (chatJson !== undefined) fake.script.defaultChat({ json: chatJson });
    return { url: fake.url, env: fake.env() };
  },
  embeddings() {
    const count = fake?.requests('embeddings').length ?? 0;
    clearRecord();
    return count;
  },
  /** Chat and embedding requests answered since the last call of this or `embeddings`. */
  calls() {
    const counts = { chat: fake?.requests('chat').length ?? 0, embeddings: fake?.requests('embeddings').length ?? 0 };
    clearRecord();
    return counts;
  },
  cpu: () => process.cpuUsage(),
  async close() {
    await fake?.close();
  },
});
