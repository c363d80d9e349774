import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeOldWork } from '../../../src/jobs/cleanup.js';
import { startFakeModelServer, type FakeModelServer } from '../../support/fake-model-server.js';
import { drainWorkspace, facts, reasoningApps, type ReasoningSetup } from '../../support/reasoning-harness.js';
import { uniqueId } from '../../support/test-app.js';

/*
 * A workspace's statistics (GET /v3/workspaces/{w}/statistics, docs/inspector.md): its kept
 * counts as the API writes and removes, and the model calls and tokens the worker's and the
 * requests' calls made for it, by module, as the (fake) provider counted them.
 */

let fake: FakeModelServer;
const apps = reasoningApps(() => fake);
let s: ReasoningSetup;
beforeAll(async () => {
  fake = await startFakeModelServer();
  s = await apps.start();
});
afterAll(async () => {
  await apps.stopAll();
  await fake?.close();
});

const stats = (ws: string, query = '') => s.api.get(`/v3/workspaces/${ws}/statistics${query}`);
const hourOf = (ms: number) => Math.floor(ms / 3_600_000);
/** The first test's other workspace: its deriver's calls are made before the second test counts. */
let other = '';

describe('workspace statistics', () => {
  it('counts peers, sessions, messages, conclusions and queued work, and follows deletes', async () => {
    const { api, ws } = s;
    expect((await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's1', peers: { alice: {}, bob: {} } })).status).toBe(201);
    expect((await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's2', peers: { alice: {} } })).status).toBe(201);
    const sent = await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: ['one', 'two', 'three'].map((content) => ({ peer_id: 'alice', content })) });
    expect(sent.status, sent.text).toBe(201);
    await api.post(`/v3/workspaces/${ws}/sessions/s2/messages`, { messages: [{ peer_id: 'alice', content: 'four' }, { peer_id: 'alice', content: 'five' }] });
    expect((await api.post(`/v3/workspaces/${ws}/conclusions`, { conclusions: [{ content: 'alice counts', observer_id: 'bob', observed_id: 'alice' }] })).status).toBe(201);
    // another workspace's rows count there only
    other = uniqueId();
    await api.post(`/v3/workspaces/${other}/sessions`, { id: 'x', peers: { carol: {} } });
    await api.post(`/v3/workspaces/${other}/sessions/x/messages`, { messages: [{ peer_id: 'carol', content: 'elsewhere' }] });

    const first = await stats(ws);
    expect(first.status, first.text).toBe(200);
    expect(first.body).toMatchObject({ workspace_id: ws, peers: 2, sessions: 2, messages: 5, conclusions: 1, in_progress_work_units: 0 });
    // the deriver's work waits: the worker has not run
    expect(first.body.pending_work_units).toBeGreaterThan(0);
    expect(first.body.pending_work_units).toBe((await api.get(`/v3/workspaces/${ws}/queue/status`)).body.pending_work_units);
    expect((await stats(other)).body).toMatchObject({ peers: 1, sessions: 1, messages: 1, conclusions: 0 });

    // a message removed, then a session with its messages
    await api.database.driver.run('DELETE FROM messages WHERE id = ?', [sent.body[0].id]);
    expect((await stats(ws)).body.messages).toBe(4);
    await api.database.driver.run("DELETE FROM sessions WHERE workspace_id = ? AND id = 's2'", [ws]);
    expect((await stats(ws)).body).toMatchObject({ messages: 2, sessions: 1 });

    expect(await stats(uniqueId())).toMatchObject({ status: 404 });
    for (const hours of ['0', '721', 'day']) expect((await stats(ws, `?hours=${hours}`)).status, hours).toBe(422);
  });

  it('counts model calls and tokens per module, failed ones too, for the workspace they were made for', async () => {
    const { api } = s;
    // the first test's work done first (both its workspaces), so the fake's requests below are all this workspace's
    fake.script.defaultChat(facts('alice counts'));
    await drainWorkspace(s, { timeoutMs: 30_000 });
    if (other !== '') await drainWorkspace({ ...s, ws: other }, { timeoutMs: 30_000 });
    fake.reset();
    const workspace = uniqueId();
    const setup = { ...s, ws: workspace };
    expect((await api.post(`/v3/workspaces/${workspace}/sessions`, { id: 's1', peers: { alice: {} } })).status).toBe(201);
    // the deriver's first attempt fails (a server error, tried again at once), then answered
    fake.script.chat({ status: 500, errorBody: { error: { message: 'overloaded' } } }, 1);
    fake.script.defaultChat({ ...facts('alice keeps bees'), usage: { input: 120, output: 9 } });
    await api.post(`/v3/workspaces/${workspace}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'I keep bees on my roof' }] });
    await drainWorkspace(setup, { timeoutMs: 30_000 });
    const chat = await api.post(`/v3/workspaces/${workspace}/peers/alice/chat`, { query: 'What does alice keep?' });
    expect(chat.status, chat.text).toBe(200);

    const chatRequests = fake.requests('chat').length;
    let modules: { module: string; model: string; calls: number; failed_calls: number; input_tokens: number; output_tokens: number }[] = [];
    // the counts are written a moment after the calls (USAGE_WRITE_DELAY_MS), later on a busy machine
    await expect
      .poll(async () => {
        modules = (await stats(workspace)).body.model_usage.modules;
        return modules.filter((m) => m.module !== 'embedding').reduce((sum, m) => sum + m.calls, 0);
      }, { timeout: 10_000 })
      .toBe(chatRequests);
    const deriver = modules.find((m) => m.module === 'deriver')!;
    expect(deriver).toMatchObject({ model: expect.stringContaining('fake-chat'), failed_calls: 1 });
    expect(deriver.calls).toBeGreaterThanOrEqual(2);
    // tokens as the provider counted them, of the calls that succeeded
    expect(deriver).toMatchObject({ input_tokens: 120 * (deriver.calls - 1), output_tokens: 9 * (deriver.calls - 1) });
    expect(modules.find((m) => m.module === 'dialectic')).toMatchObject({ failed_calls: 0, input_tokens: 120 * modules.find((m) => m.module === 'dialectic')!.calls });
    expect(modules.some((m) => m.module === 'embedding' && m.calls > 0)).toBe(true);
    // none of it counted for another workspace
    const quiet = uniqueId();
    await api.post(`/v3/workspaces/${quiet}/sessions`, { id: 's1', peers: { alice: {} } });
    expect((await stats(quiet)).body.model_usage.modules).toEqual([]);

    // the window: an hour two days back counts with hours=48 only, and is purged after 30 days
    const now = Date.now();
    await api.database.store.workspaces.addModelUsage([{ workspaceId: workspace, hour: hourOf(now) - 40, module: 'summary', model: 'old/model', calls: 3, failedCalls: 0, inputTokens: 5, outputTokens: 1 }]);
    const day = (await stats(workspace)).body.model_usage;
    expect(day).toMatchObject({ hours: 24, since: new Date((hourOf(now) - 23) * 3_600_000).toISOString().replace('.000Z', 'Z') });
    expect(day.modules.some((m: { model: string }) => m.model === 'old/model')).toBe(false);
    expect((await stats(workspace, '?hours=48')).body.model_usage.modules).toContainEqual({ module: 'summary', model: 'old/model', calls: 3, failed_calls: 0, input_tokens: 5, output_tokens: 1 });
    await removeOldWork(api.database.store, new Date(now + 29 * 86_400_000), {}, () => false);
    expect((await stats(workspace, '?hours=720')).body.model_usage.modules.some((m: { model: string }) => m.model === 'old/model')).toBe(false);
  }, 60_000);
});
