import { afterEach, describe, expect, it, vi } from 'vitest';
import { heldAnswer } from '../../support/fake-model-server.js';
import { drainWorkspace, facts, type ReasoningSetup, reasoningSuite } from '../../support/reasoning-harness.js';
import { DIALECT, uniqueId, type TestApi } from '../../support/test-app.js';

/*
 * Deleting a peer and forgetting while the deriver works: a batch whose model answers after the
 * deletion writes nothing for the peer (its observer's and observed's conclusions are dropped in
 * the write's transaction), a batch that holds the peer when the deletion comes makes the
 * deletion wait, so the purge removes what it wrote; a forget of messages a batch is deriving
 * from makes the batch run again without them. Vectors go with their rows. Both stores.
 */

const suite = reasoningSuite();
const apps = suite.apps;
const holds: (() => void)[] = [];
afterEach(() => holds.splice(0).forEach((release) => release()));

function heldBack() {
  const hold = heldAnswer();
  holds.push(hold.release);
  return hold;
}

async function count(api: TestApi, sql: string, params: unknown[]): Promise<number> {
  return Number((await api.database.driver.get<{ n: number | string }>(sql, params))?.n);
}

const aboutAlice = (api: TestApi, ws: string) =>
  count(api, "SELECT count(*) AS n FROM conclusions WHERE workspace_id = ? AND (observer_id = 'alice' OR observed_id = 'alice')", [ws]);

/** Vectors of the workspace's messages and conclusions that belong to no live row (none may), and all of them. */
async function vectors(api: TestApi, ws: string): Promise<{ messages: number; conclusions: number; orphans: number }> {
  if (DIALECT === 'postgres') {
    return {
      messages: await count(api, 'SELECT count(*) AS n FROM message_vectors WHERE workspace_id = ?', [ws]),
      conclusions: await count(api, 'SELECT count(*) AS n FROM conclusion_vectors v JOIN conclusions c ON c.pk = v.conclusion_pk WHERE c.workspace_id = ?', [ws]),
      // foreign keys with cascades: an orphan cannot exist
      orphans: 0,
    };
  }
  // one database per test: every vector is this workspace's
  const has = async (table: string) => (await api.database.driver.get('SELECT 1 AS one FROM sqlite_master WHERE name = ?', [table])) !== undefined;
  const messages = (await has('message_embeddings')) ? await count(api, 'SELECT count(*) AS n FROM message_embeddings', []) : 0;
  const conclusions = (await has('conclusion_vectors')) ? await count(api, 'SELECT count(*) AS n FROM conclusion_vectors', []) : 0;
  const orphans = (await has('conclusion_vectors')) ? await count(api, 'SELECT count(*) AS n FROM conclusion_vectors WHERE rowid NOT IN (SELECT pk FROM conclusions)', []) : 0;
  return { messages, conclusions, orphans };
}

describe('deleting a peer while the deriver runs', () => {
  it('drops a batch answered after the deletion for that peer, keeps the rest, and re-creates nothing', async () => {
    const s: ReasoningSetup = await apps.start();
    const { api, ws } = s;
    // bob observes alice too: a batch about bob has alice as an observer and bob's own view
    expect((await api.post(`/v3/workspaces/${ws}/sessions/s1/peers`, { alice: { observe_others: true }, bob: { observe_others: true } })).status).toBe(200);
    suite.fake().script.defaultChat(facts('bob likes maps'));
    expect((await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'bob', content: 'I love maps' }] })).status).toBe(201);
    await drainWorkspace(s, { allJobs: true });
    expect(await count(api, "SELECT count(*) AS n FROM conclusions WHERE workspace_id = ? AND observer_id = 'alice'", [ws])).toBe(1);
    const before = await vectors(api, ws);
    expect(before.messages).toBeGreaterThan(0);
    expect(before.conclusions).toBeGreaterThan(0);

    // the next answers are held back until alice is deleted and purged
    const hold = heldBack();
    suite.fake().script.defaultChat((request) =>
      String(request.body.messages[0].content).includes('Participant: alice')
        ? { ...facts('alice has a sister'), until: hold.until }
        : { ...facts('bob visits Lisbon'), until: hold.until },
    );
    expect(
      (
        await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, {
          messages: [
            { peer_id: 'alice', content: 'my sister lives here' },
            { peer_id: 'bob', content: 'I am visiting Lisbon' },
          ],
        })
      ).status,
    ).toBe(201);
    await vi.waitFor(() => expect(suite.fake().requests('chat').length).toBeGreaterThanOrEqual(3), { timeout: 10_000 });

    const deleted = await api.delete(`/v3/workspaces/${ws}/peers/alice`);
    expect(deleted.status, deleted.text).toBe(202);
    await vi.waitFor(async () => expect(await api.database.driver.get("SELECT 1 AS one FROM peers WHERE workspace_id = ? AND id = 'alice'", [ws])).toBeUndefined(), {
      timeout: 10_000,
    });
    expect(await aboutAlice(api, ws)).toBe(0);
    hold.release();
    await drainWorkspace(s, { allJobs: true });

    // nothing by or about alice came back; bob's own view of his message was stored
    expect(await aboutAlice(api, ws)).toBe(0);
    expect(await count(api, "SELECT count(*) AS n FROM peer_cards WHERE workspace_id = ? AND (observer_id = 'alice' OR target_id = 'alice')", [ws])).toBe(0);
    expect(await count(api, "SELECT count(*) AS n FROM peers WHERE workspace_id = ? AND id = 'alice'", [ws])).toBe(0);
    const bob = await api.post(`/v3/workspaces/${ws}/conclusions/list`, { filters: { observer_id: 'bob', observed_id: 'bob' } });
    expect(bob.body.items.map((c: { content: string }) => c.content).sort()).toEqual(['bob likes maps', 'bob visits Lisbon']);
    const after = await vectors(api, ws);
    expect(after.orphans).toBe(0);
    // alice's message vectors went with her messages (bob's two stay)
    expect(await count(api, "SELECT count(*) AS n FROM messages WHERE workspace_id = ? AND peer_id = 'alice'", [ws])).toBe(0);
    if (DIALECT === 'postgres') expect(await count(api, "SELECT count(*) AS n FROM message_vectors WHERE workspace_id = ? AND peer_id = 'alice'", [ws])).toBe(0);
  });

  it('makes the deletion wait for a batch that holds the peer; the purge then removes what the batch wrote', async () => {
    const s = await apps.start();
    // the worker is not started until the deletion has answered
    const { api, worker, ws } = s;
    expect((await api.post(`/v3/workspaces/${ws}/sessions/s1/peers`, { alice: {}, bob: {} })).status).toBe(200);
    const { store } = api.database;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let kept!: () => void;
    const peerKept = new Promise<void>((resolve) => (kept = resolve));
    // a background writer's transaction: the session kept, the peers kept, a conclusion about alice written, then held open
    const writer = store.transaction(async (tx) => {
      await tx.sessions.findAndKeep(ws, 's1');
      expect([...(await tx.peers.keepLivePeers(ws, ['alice', 'bob']))].sort()).toEqual(['alice', 'bob']);
      await tx.memory.lockConclusionCounts([{ workspaceId: ws, observerId: 'bob', observedId: 'alice', level: 'explicit' }]);
      await tx.memory.insertConclusions([
        { id: uniqueId('c'), workspaceId: ws, observerId: 'bob', observedId: 'alice', sessionId: 's1', content: 'alice sings', level: 'explicit', sourceIds: null, timesDerived: 1, createdAt: new Date() },
      ]);
      kept();
      await released;
    });
    await peerKept;
    let answered = false;
    const deletion = api.delete(`/v3/workspaces/${ws}/peers/alice`).then((answer) => {
      answered = true;
      return answer;
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(answered).toBe(false);
    release();
    await writer;
    const answer = await deletion;
    expect(answer.status, answer.text).toBe(202);
    // the deletion counted the writer's conclusion, and the purge removes it
    expect(answer.body.removes.conclusions).toBe(1);
    worker.start();
    await vi.waitFor(async () => expect(await count(api, "SELECT count(*) AS n FROM peers WHERE workspace_id = ? AND id = 'alice'", [ws])).toBe(0), { timeout: 10_000 });
    expect(await aboutAlice(api, ws)).toBe(0);

    // and a writer that comes after the mark keeps nothing of alice's
    const late = await store.transaction((tx) => tx.peers.keepLivePeers(ws, ['alice', 'bob']));
    expect([...late]).toEqual(['bob']);
  });
});

describe('forgetting while the deriver runs', () => {
  it('a batch deriving from a forgotten message runs again without it, and the forgotten facts do not come back', async () => {
    const s = await apps.start();
    const { api, ws } = s;
    expect((await api.post(`/v3/workspaces/${ws}/sessions/s1/peers`, { alice: {} })).status).toBe(200);
    suite.fake().script.defaultChat(facts('alice drinks coffee'));
    const first = await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'coffee every morning' }] });
    await drainWorkspace(s, { allJobs: true });
    expect(await count(api, 'SELECT count(*) AS n FROM conclusions WHERE workspace_id = ?', [ws])).toBe(1);

    // a second message about coffee is with the model when alice's coffee is forgotten, messages included
    const hold = heldBack();
    suite.fake().script.defaultChat((request) =>
      String(request.body.messages[0].content).includes('more coffee') ? { ...facts('alice drinks a lot of coffee'), until: hold.until } : facts('alice reads'),
    );
    const second = await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, {
      messages: [
        { peer_id: 'alice', content: 'more coffee please' },
        { peer_id: 'alice', content: 'I read books' },
      ],
    });
    expect(second.status).toBe(201);
    await vi.waitFor(() => expect(suite.fake().requests('chat').length).toBe(2), { timeout: 10_000 });
    // the preview finds the stored fact and its source; the held batch's second message is removed too
    const body = { observed: 'alice', query: 'coffee', include_messages: true };
    const preview = await api.post(`/v3/workspaces/${ws}/forget`, body);
    expect(preview.status, preview.text).toBe(200);
    expect(preview.body.messages.map((m: { id: string }) => m.id)).toEqual([first.body[0].id]);
    const done = await api.post(`/v3/workspaces/${ws}/forget`, { ...body, token: preview.body.token });
    expect(done.status, done.text).toBe(200);
    expect(done.body.record).toMatchObject({ conclusions_removed: 1, messages_removed: 1 });
    // a second forget of the held message itself (its facts are not stored yet: nothing to preview but a message)
    await api.database.driver.run('DELETE FROM messages WHERE workspace_id = ? AND id = ?', [ws, second.body[0].id]);
    hold.release();
    await drainWorkspace(s, { allJobs: true });
    const contents = (await api.database.driver.all<{ content: string }>('SELECT content FROM conclusions WHERE workspace_id = ? ORDER BY content', [ws])).map((c) => c.content);
    // the batch ran again with only the message left
    expect(contents).toEqual(['alice reads']);
  });
});
