/*
 * The official TypeScript SDK 2.5 (`@honcho-ai/sdk`) against the real server: its scope methods
 * (create, get, list, add and remove sessions, sessions, status) and the `scope` / `sessions`
 * read options, used unmodified. The server records every exchange, so a failure names the exact
 * request the SDK made and what it got back. A worker runs the scope's backfill.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Honcho, NotFoundError } from '@honcho-ai/sdk';
import type { Worker } from '../../src/jobs/worker.js';
import { createWorker } from '../../src/runtime/runtime.js';
import { silent } from '../support/polling.js';
import { expectAllOk, routesCalled, startSdkServer, type SdkServer } from '../support/sdk-server.js';
import { uniqueId } from '../support/test-app.js';

let server: SdkServer;
let worker: Worker;
beforeAll(async () => {
  server = await startSdkServer({ WORKER_POLL_MS: '20' }, { ownDatabase: true });
  worker = createWorker(server.config, server.database, silent);
  worker.start();
});
afterAll(async () => {
  await worker?.stop(1000);
  await server?.close();
});

const client = (workspaceId: string) => new Honcho({ baseURL: server.baseURL, workspaceId, maxRetries: 0 });

async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`not done: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe('@honcho-ai/sdk 2.5 scopes over /v3', () => {
  it('creates, gets and lists scopes; adds, lists and removes sessions; reads the backfill status', async () => {
    const mark = server.exchanges.length;
    const workspace = uniqueId('sdks');
    const honcho = client(workspace);
    const therapy = await honcho.scope('therapy', { metadata: { k: 'v' } });
    expect(therapy.id).toBe('therapy');
    expect(therapy.metadata).toEqual({ k: 'v' });
    expect((await honcho.getScope('therapy')).metadata).toEqual({ k: 'v' });
    await expect(honcho.getScope('nope')).rejects.toBeInstanceOf(NotFoundError);
    await honcho.scope('work');
    const listed = [];
    for await (const scope of await honcho.scopes()) listed.push(scope.id);
    expect(listed).toEqual(['therapy', 'work']);

    const alice = await honcho.peer('alice');
    const s1 = await honcho.session('s1');
    await s1.addMessages([alice.message('I feel anxious about work')]);
    await alice.conclusionsOf('alice').create({ content: 'alice feels anxious about work', sessionId: 's1' });
    const s2 = await honcho.session('s2');
    await therapy.addSessions([s1, 's2']);
    const sessions = [];
    for await (const session of await therapy.sessions()) sessions.push(session.id);
    expect(sessions.sort()).toEqual(['s1', 's2']);

    const status = await waitFor(() => therapy.status(), (s) => s.backfillStatus.s1?.state === 'completed');
    expect(status.backfillStatus.s1.docsCopied).toBe(1);
    expect(status.backfillStatus.s1.updatedAt).toMatch(/\+00:00$/);
    // s2 had no messages: nothing to copy, no entry
    expect(Object.keys(status.backfillStatus)).toEqual(['s1']);

    await therapy.removeSession(s2);
    const after = [];
    for await (const session of await therapy.sessions()) after.push(session.id);
    expect(after).toEqual(['s1']);

    // a session that joins scopes at creation
    await honcho.session('s3', { scopes: ['work', therapy] });
    const work = [];
    for await (const session of await (await honcho.getScope('work')).sessions()) work.push(session.id);
    expect(work).toEqual(['s3']);
    expect(s2.id).toBe('s2');

    const exchanges = server.since(mark);
    expectAllOk(exchanges.filter((e) => !e.path.endsWith('/scopes/nope')));
    const routes = routesCalled(exchanges, { workspace_id: workspace, scope_id: ['therapy', 'work', 'nope'], session_id: ['s1', 's2', 's3'] });
    for (const route of [
      'POST /v3/workspaces/{workspace_id}/scopes',
      'GET /v3/workspaces/{workspace_id}/scopes/{scope_id}',
      'POST /v3/workspaces/{workspace_id}/scopes/list',
      'POST /v3/workspaces/{workspace_id}/scopes/{scope_id}/sessions',
      'POST /v3/workspaces/{workspace_id}/scopes/{scope_id}/sessions/list',
      'GET /v3/workspaces/{workspace_id}/scopes/{scope_id}/status',
      'DELETE /v3/workspaces/{workspace_id}/scopes/{scope_id}/sessions/{session_id}',
    ]) {
      expect(routes).toContain(route);
    }
  });

  it('reads through a scope: representation, session context and search', async () => {
    const workspace = uniqueId('sdks');
    const honcho = client(workspace);
    const alice = await honcho.peer('alice');
    const work = await honcho.session('work_session', { scopes: ['work'] });
    const home = await honcho.session('home_session');
    await work.addMessages([alice.message('standup at nine')]);
    await home.addMessages([alice.message('marathon training at six')]);
    await alice.conclusionsOf('alice').create({ content: 'alice has standup at nine', sessionId: 'work_session' });
    await alice.conclusionsOf('alice').create({ content: 'alice trains for a marathon', sessionId: 'home_session' });

    const union = await alice.representation({ scope: ['work'] });
    expect(union).toContain('standup');
    expect(union).not.toContain('marathon');
    const bySessions = await alice.representation({ sessions: ['home_session'] });
    expect(bySessions).toContain('marathon');
    expect(bySessions).not.toContain('standup');

    // the scope's own memory: the backfill copied what work_session held
    const scope = await honcho.getScope('work');
    await scope.addSessions(['work_session']);
    await waitFor(() => scope.status(), (s) => s.backfillStatus.work_session?.state === 'completed');
    const own = await alice.representation({ scope: 'work' });
    expect(own).toContain('standup');
    expect(own).not.toContain('marathon');

    const context = await work.context({ peerTarget: alice, scope: 'work' });
    expect(context.peerRepresentation).toContain('standup');
    expect(context.peerRepresentation).not.toContain('marathon');

    const found = await honcho.search('training', { scope: 'work' });
    expect(found).toEqual([]);
    const everywhere = await honcho.search('training');
    expect(everywhere.map((m) => m.sessionId)).toEqual(['home_session']);
  });
});
