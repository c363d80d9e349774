import { Honcho } from '@honcho-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Worker } from '../../../src/jobs/worker.js';
import { createWorker } from '../../../src/runtime/runtime.js';
import { multipartBody, type FormPart } from '../../support/multipart.js';
import { drainWorkspace, facts, REASONING_TEST_ENV, type ReasoningSetup, reasoningSuite } from '../../support/reasoning-harness.js';
import { silent } from '../../support/polling.js';
import { startSdkServer, type SdkServer } from '../../support/sdk-server.js';
import { uniqueId, type TestApi } from '../../support/test-app.js';

/*
 * The `configuration` form field of a file upload reaches the deriver as the configuration of
 * messages created as JSON does (issue 47, part 4): reasoning turned off there queues no
 * representation work for the file's messages and forms no conclusions; without it, they are
 * derived. Over HTTP (v3 and v2) and through the official SDK's `uploadFile`, with the fake model
 * answering and the real worker running the queue.
 */

const suite = reasoningSuite();
const apps = suite.apps;

const file = (text: string): FormPart => ({ name: 'file', value: text, filename: 'notes.txt', contentType: 'text/plain' });
const field = (name: string, value: string): FormPart => ({ name, value });

async function upload(api: TestApi, url: string, parts: FormPart[]) {
  const { payload, contentType } = multipartBody(parts);
  const response = await api.app.inject({ method: 'POST', url, payload, headers: { 'content-type': contentType } });
  return { status: response.statusCode, body: JSON.parse(response.body) as { id: string; content: string }[] };
}

async function conclusionsAbout(api: TestApi, ws: string, peer: string): Promise<string[]> {
  const page = await api.post(`/v3/workspaces/${ws}/conclusions/list?size=100`, { filters: { observer_id: peer, observed_id: peer } });
  expect(page.status, page.text).toBe(200);
  return (page.body.items as { content: string }[]).map((c) => c.content).sort();
}

async function uploadAndDrain(s: ReasoningSetup, url: string, configuration: string | undefined, text: string) {
  const parts = [file(text), field('peer_id', 'alice')];
  if (configuration !== undefined) parts.push(field('configuration', configuration));
  const sent = await upload(s.api, url, parts);
  expect(sent.status).toBeLessThan(300);
  // queued with the messages, in the same transaction: counted before any worker runs
  const queued = await s.api.database.store.reasoning.openItemCount(s.ws);
  await drainWorkspace(s);
  return { sent, queued };
}

describe('upload configuration over HTTP', () => {
  it('v3: reasoning disabled in the form queues nothing and forms no conclusions; without it the file is derived', async () => {
    const s = await apps.start();
    suite.fake().script.defaultChat(facts('alice keeps bees'));

    const off = await uploadAndDrain(s, `/v3/workspaces/${s.ws}/sessions/quiet/messages/upload`, '{"reasoning": {"enabled": false}}', 'I keep bees on my roof');
    expect(off.sent.status).toBe(201);
    expect(off.queued).toBe(0);
    expect(suite.fake().requests('chat')).toHaveLength(0);
    expect(await conclusionsAbout(s.api, s.ws, 'alice')).toEqual([]);

    const on = await uploadAndDrain(s, `/v3/workspaces/${s.ws}/sessions/loud/messages/upload`, undefined, 'I keep bees on my roof');
    expect(on.sent.status).toBe(201);
    expect(on.queued).toBe(1);
    expect(suite.fake().requests('chat')).toHaveLength(1);
    expect(suite.fake().requests('chat')[0].body.messages[0].content).toContain('alice: I keep bees on my roof');
    expect(await conclusionsAbout(s.api, s.ws, 'alice')).toEqual(['alice keeps bees']);
  });

  it('v3: the form configuration overrides the session configuration, as a JSON message configuration does', async () => {
    const s = await apps.start();
    suite.fake().script.defaultChat(facts('alice paints'));
    expect((await s.api.post(`/v3/workspaces/${s.ws}/sessions`, { id: 'off', configuration: { reasoning: { enabled: false } } })).status).toBe(201);
    const on = await uploadAndDrain(s, `/v3/workspaces/${s.ws}/sessions/off/messages/upload`, '{"reasoning": {"enabled": true}}', 'I paint on weekends');
    expect(on.queued).toBe(1);
    expect(await conclusionsAbout(s.api, s.ws, 'alice')).toEqual(['alice paints']);
  });

  it('v2: the form configuration is honoured as v2 message create honours it', async () => {
    const s = await apps.start();
    suite.fake().script.defaultChat(facts('alice sails'));
    const off = await uploadAndDrain(s, `/v2/workspaces/${s.ws}/sessions/quiet/messages/upload`, '{"reasoning": {"enabled": false}}', 'I sail in summer');
    expect(off.sent.status).toBe(200);
    expect(off.queued).toBe(0);
    // the same configuration on a JSON message of v2, for comparison
    const json = await s.api.post(`/v2/workspaces/${s.ws}/sessions/quiet/messages/`, {
      messages: [{ peer_id: 'alice', content: 'I sail in summer', configuration: { reasoning: { enabled: false } } }],
    });
    expect(json.status).toBe(200);
    expect(await s.api.database.store.reasoning.openItemCount(s.ws)).toBe(0);
    await drainWorkspace(s);
    expect(suite.fake().requests('chat')).toHaveLength(0);
    expect(await conclusionsAbout(s.api, s.ws, 'alice')).toEqual([]);

    const on = await uploadAndDrain(s, `/v2/workspaces/${s.ws}/sessions/loud/messages/upload`, undefined, 'I sail in summer');
    expect(on.queued).toBe(1);
    expect(await conclusionsAbout(s.api, s.ws, 'alice')).toEqual(['alice sails']);
  });
});

describe('upload configuration through @honcho-ai/sdk', () => {
  let server: SdkServer;
  let worker: Worker;
  beforeAll(async () => {
    const env = { ...suite.fake().env(), ...REASONING_TEST_ENV, EMBED_MESSAGES: 'false' };
    server = await startSdkServer(env, { ownDatabase: true });
    worker = createWorker(server.config, server.database, silent);
  });
  afterAll(async () => {
    await worker?.stop(1000);
    await server?.close();
  });

  it("uploadFile's configuration turns reasoning off for the file's messages only", async () => {
    suite.fake().reset();
    suite.fake().script.defaultChat(facts('alice grows tomatoes'));
    const ws = uniqueId('sdkup');
    const honcho = new Honcho({ baseURL: server.baseURL, workspaceId: ws, maxRetries: 0 });
    const session = await honcho.session('garden');
    const openItems = () => server.database.store.reasoning.openItemCount(ws);
    const setup: ReasoningSetup = { api: { database: server.database } as TestApi, worker, ws };

    const mark = server.exchanges.length;
    const quiet = await session.uploadFile(new Blob(['I grow tomatoes'], { type: 'text/plain' }), 'alice', { configuration: { reasoning: { enabled: false } } });
    expect(quiet.map((m) => m.content)).toEqual(['I grow tomatoes']);
    const sent = server.since(mark).find((e) => e.path.endsWith('/messages/upload'));
    expect(sent?.status).toBe(201);
    expect(await openItems()).toBe(0);
    await drainWorkspace(setup);
    expect(suite.fake().requests('chat')).toHaveLength(0);
    const peer = await honcho.peer('alice');
    expect(await peer.conclusions.list()).toMatchObject({ items: [] });

    await session.uploadFile(new Blob(['I grow tomatoes'], { type: 'text/plain' }), 'alice');
    expect(await openItems()).toBe(1);
    await drainWorkspace(setup);
    expect(suite.fake().requests('chat')).toHaveLength(1);
    const formed = await peer.conclusions.list();
    expect(formed.items.map((c) => c.content)).toEqual(['alice grows tomatoes']);
  });
});
