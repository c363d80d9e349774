import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, uniqueId, type TestApi } from '../../support/test-app.js';

/*
 * The workspace's jobs by state (POST /v3/workspaces/{w}/queue/jobs/list) and the retry of dead
 * work (POST .../queue/jobs/{job_id}/retry), over jobs the store's own queue operations put in
 * each state, as the worker does.
 */

let api: TestApi;
beforeAll(async () => {
  api = await buildTestApp();
});
afterAll(() => api.close());

const at = new Date('2026-01-02T03:04:05.000Z');

/** A job of `ws` queued, then in the state `status` through the store's own operations. */
async function job(ws: string, id: string, status: 'pending' | 'running' | 'failed' | 'dead' | 'done', payload: Record<string, unknown> = {}) {
  const jobs = api.database.store.jobs;
  await jobs.enqueue([{ id, kind: 'test.kind', workspaceId: ws, queueKey: `test:${id}`, payload, maxAttempts: 2, runAfter: at }], at);
  if (status === 'pending') return;
  await api.database.driver.run('UPDATE jobs SET status = ?, attempts = 1 WHERE id = ?', ['running', id]);
  if (status === 'failed') await jobs.retry(id, new Date(at.getTime() + 60_000), 'model timed out');
  if (status === 'dead') await jobs.deadLetter(id, new Date(at.getTime() + 1000), 'the model answered 500');
  if (status === 'done') await jobs.complete(id, at);
}

const list = (ws: string, status: string, query = '') => api.post(`/v3/workspaces/${ws}/queue/jobs/list${query}`, { status });

describe('queue jobs of a workspace', () => {
  it('lists each state apart, newest first, with errors and what the job is about', async () => {
    const ws = uniqueId();
    await job(ws, `${ws}-p1`, 'pending', { sessionId: 's1', observedId: 'alice' });
    await job(ws, `${ws}-p2`, 'pending');
    await job(ws, `${ws}-r`, 'running');
    await job(ws, `${ws}-f`, 'failed');
    await job(ws, `${ws}-d`, 'dead', { sessionId: 's9', observer: 'bob', observed: 'alice' });
    await job(ws, `${ws}-ok`, 'done');
    await job(uniqueId(), `${ws}-elsewhere`, 'dead');

    const pending = await list(ws, 'pending');
    expect(pending.status, pending.text).toBe(200);
    expect(pending.body).toMatchObject({ total: 2, page: 1, size: 50, pages: 1 });
    expect(pending.body.items.map((j: { id: string }) => j.id)).toEqual([`${ws}-p2`, `${ws}-p1`]);
    expect(pending.body.items[1]).toEqual({
      id: `${ws}-p1`,
      kind: 'test.kind',
      status: 'pending',
      attempts: 0,
      max_attempts: 2,
      last_error: null,
      session_id: 's1',
      observer: null,
      observed: 'alice',
      created_at: '2026-01-02T03:04:05Z',
      run_after: '2026-01-02T03:04:05Z',
      finished_at: null,
    });
    expect((await list(ws, 'running')).body.items.map((j: { id: string }) => j.id)).toEqual([`${ws}-r`]);
    const failed = (await list(ws, 'failed')).body;
    expect(failed.items).toMatchObject([{ id: `${ws}-f`, status: 'failed', attempts: 1, last_error: 'model timed out' }]);
    const dead = (await list(ws, 'dead')).body;
    expect(dead.total).toBe(1);
    expect(dead.items).toMatchObject([{ id: `${ws}-d`, status: 'dead', last_error: 'the model answered 500', session_id: 's9', observer: 'bob', observed: 'alice', finished_at: '2026-01-02T03:04:06Z' }]);
  });

  it('pages: size and page, the total of all matching jobs', async () => {
    const ws = uniqueId();
    for (let i = 0; i < 5; i++) await job(ws, `${ws}-${i}`, 'dead');
    const second = await list(ws, 'dead', '?page=2&size=2');
    expect(second.body).toMatchObject({ total: 5, page: 2, size: 2, pages: 3 });
    expect(second.body.items.map((j: { id: string }) => j.id)).toEqual([`${ws}-2`, `${ws}-1`]);
    expect((await list(ws, 'dead', '?page=9&size=2')).body).toMatchObject({ items: [], total: 5, pages: 3 });
    // a page whose offset is past any integer the database takes is empty too, not a 500
    const far = await list(ws, 'dead', '?page=99999999999999999999999&size=7');
    expect(far.status, far.text).toBe(200);
    expect(far.body).toMatchObject({ items: [], total: 5 });
  });

  it('refuses a missing or unknown state with a 422', async () => {
    const ws = uniqueId();
    const missing = await api.post(`/v3/workspaces/${ws}/queue/jobs/list`, {});
    expect(missing.status).toBe(422);
    expect(missing.body.detail[0]).toMatchObject({ type: 'missing', loc: ['body', 'status'] });
    const unknown = await list(ws, 'done');
    expect(unknown.status).toBe(422);
    expect(unknown.body.detail[0]).toMatchObject({ type: 'enum', loc: ['body', 'status'] });
    expect((await api.post(`/v3/workspaces/${ws}/queue/jobs/list?size=101`, { status: 'dead' })).status).toBe(422);
  });

  it('retries a dead job: pending again, due now, attempts from zero; only dead jobs of the workspace', async () => {
    const ws = uniqueId();
    const other = uniqueId();
    await job(ws, `${ws}-d`, 'dead');
    await job(ws, `${ws}-f`, 'failed');
    await job(other, `${other}-d`, 'dead');

    const retried = await api.post(`/v3/workspaces/${ws}/queue/jobs/${ws}-d/retry`);
    expect(retried.status, retried.text).toBe(200);
    expect(retried.body).toMatchObject({ id: `${ws}-d`, attempts: 0, finished_at: null, last_error: 'the model answered 500', status: 'failed' });
    expect((await list(ws, 'dead')).body.total).toBe(0);
    expect((await list(ws, 'failed')).body.items.map((j: { id: string }) => j.id)).toEqual([`${ws}-f`, `${ws}-d`]);
    // the worker can take it again
    const claimed = await api.database.store.jobs.claim(10, new Date(), new Date(Date.now() + 60_000), 'test.kind');
    expect(claimed.map((j) => j.id)).toContain(`${ws}-d`);

    for (const [path, id] of [
      [ws, `${ws}-d`], // no longer dead
      [ws, `${ws}-f`], // failing, not dead
      [ws, `${other}-d`], // another workspace's
      [ws, 'nothing'],
    ]) {
      const refused = await api.post(`/v3/workspaces/${path}/queue/jobs/${id}/retry`);
      expect(refused.status, id).toBe(404);
      expect(refused.body).toEqual({ detail: `Dead job ${id} not found in workspace ${path}` });
    }
    expect((await list(other, 'dead')).body.total).toBe(1);
  });

  it('is documented in the OpenAPI document', async () => {
    const doc = (await api.get('/openapi.json')).body;
    expect(Object.keys(doc.paths['/v3/workspaces/{workspace_id}/queue/jobs/list'])).toEqual(['post']);
    expect(Object.keys(doc.paths['/v3/workspaces/{workspace_id}/queue/jobs/{job_id}/retry'])).toEqual(['post']);
    expect(doc.paths['/v2/workspaces/{workspace_id}/queue/jobs/list']).toBeUndefined();
  });
});
