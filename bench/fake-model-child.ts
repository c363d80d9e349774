/**
 * The fake model server of the tests (test/support/fake-model-server.ts) in a process of its own,
 * started by bench cases that load Engram with queries: in the driver's process it would share an
 * event loop with autocannon, and its answers would wait behind the load generator.
 *
 * Calls: `listen` {dimensions} -> {url, env}; `embeddings` -> embedding requests answered since
 * the last call (the record is then cleared, so a long run does not fill the memory); `cpu`;
 * `close`.
 */
import { startFakeModelServer, type FakeModelServer } from '../test/support/fake-model-server.js';
import { answerCalls } from './ipc.js';

let fake: FakeModelServer | undefined;

answerCalls({
  async listen(payload: { dimensions: number }) {
    fake = await startFakeModelServer({ dimensions: payload.dimensions });
    return { url: fake.url, env: fake.env() };
  },
  embeddings() {
    const count = fake?.requests('embeddings').length ?? 0;
    fake?.reset();
    return count;
  },
  cpu: () => process.cpuUsage(),
  async close() {
    await fake?.close();
  },
});
