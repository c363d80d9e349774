import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, uniqueId, type TestApi, type TestResponse } from '../support/test-app.js';
import { multipartBody } from '../support/multipart.js';

/*
 * The path ids a route may create are checked as a create body checks its id (a 422 where the
 * reference answers 500), on every such route of v2 and v3, after validation and after the
 * `self` routes' own key checks, and a refused request creates nothing.
 */

let api: TestApi;
let authApi: TestApi;
beforeAll(async () => {
  api = await buildTestApp();
  authApi = await buildTestApp({ AUTH_USE_AUTH: 'true' });
});
afterAll(async () => {
  await api.close();
  await authApi.close();
});

type Generation = 'v2' | 'v3';
type PathId = 'workspace_id' | 'peer_id' | 'session_id';

/** Every route that may create what its path names: method, path, the ids in it, a valid body. */
const CREATING_ROUTES: { method: string; path: string; ids: PathId[]; body: unknown; only?: Generation }[] = [
  { method: 'PUT', path: '/workspaces/{w}', ids: ['workspace_id'], body: {} },
  { method: 'POST', path: '/workspaces/{w}/peers', ids: ['workspace_id'], body: { id: 'p' } },
  { method: 'PUT', path: '/workspaces/{w}/peers/{p}', ids: ['workspace_id', 'peer_id'], body: {} },
  { method: 'PUT', path: '/workspaces/{w}/peers/{p}/card', ids: ['workspace_id', 'peer_id'], body: { peer_card: ['likes tea'] } },
  { method: 'POST', path: '/workspaces/{w}/sessions', ids: ['workspace_id'], body: { id: 's' } },
  { method: 'PUT', path: '/workspaces/{w}/sessions/{s}', ids: ['workspace_id', 'session_id'], body: {} },
  { method: 'POST', path: '/workspaces/{w}/sessions/{s}/peers', ids: ['workspace_id', 'session_id'], body: { p: {} } },
  { method: 'POST', path: '/workspaces/{w}/sessions/{s}/messages', ids: ['workspace_id', 'session_id'], body: { messages: [{ peer_id: 'p', content: 'hi' }] }, only: 'v3' },
  { method: 'POST', path: '/workspaces/{w}/sessions/{s}/messages/', ids: ['workspace_id', 'session_id'], body: { messages: [{ peer_id: 'p', content: 'hi' }] } },
];

/** An id with a space (a pattern mismatch), new for each test so that one test's leftovers cannot pass for another's. */
const badId = () => `bad ${uniqueId()}`;

function pathOf(generation: Generation, path: string, ids: Partial<Record<PathId, string>>): string {
  return (
    `/${generation}` +
    path
      .replace('{w}', encodeURIComponent(ids.workspace_id ?? 'w'))
      .replace('{p}', encodeURIComponent(ids.peer_id ?? 'p'))
      .replace('{s}', encodeURIComponent(ids.session_id ?? 's'))
  );
}

async function workspaceExists(workspaceId: string): Promise<boolean> {
  const listed = await api.post('/v3/workspaces/list', { filters: { id: workspaceId } });
  return listed.body.total > 0;
}

function expectPathError(response: TestResponse, name: PathId, input: string, type: string): void {
  expect(response.status, response.text).toBe(422);
  expect(response.body.detail).toHaveLength(1);
  expect(response.body.detail[0]).toMatchObject({ type, loc: ['path', name], input });
}

describe.each(['v2', 'v3'] as const)('path ids of %s routes that create', (generation) => {
  const routes = CREATING_ROUTES.filter((route) => route.only === undefined || route.only === generation);

  it.each(routes.flatMap((route) => route.ids.map((name) => ({ ...route, name }))))('$method $path: a bad $name is a 422 that creates nothing', async ({ method, path, body, name }) => {
    const ws = uniqueId();
    const bad = badId();
    const ids = { workspace_id: ws, [name]: bad };
    const response = await api.request(method, pathOf(generation, path, ids), body);
    expectPathError(response, name, bad, 'string_pattern_mismatch');
    expect(await workspaceExists(name === 'workspace_id' ? bad : ws)).toBe(false);
  });

  it('checks the workspace id before the session id', async () => {
    const bad = badId();
    const response = await api.post(pathOf(generation, '/workspaces/{w}/sessions/{s}/peers', { workspace_id: bad, session_id: badId() }), {});
    expectPathError(response, 'workspace_id', bad, 'string_pattern_mismatch');
  });

  it('checks an uploaded file’s session id too', async () => {
    const ws = uniqueId();
    const bad = badId();
    const { payload, contentType } = multipartBody([
      { name: 'file', value: 'hello', filename: 'a.txt', contentType: 'text/plain' },
      { name: 'peer_id', value: 'p' },
    ]);
    const url = pathOf(generation, '/workspaces/{w}/sessions/{s}/messages/upload', { workspace_id: ws, session_id: bad });
    const response = await api.app.inject({ method: 'POST', url, payload, headers: { 'content-type': contentType } });
    expect(response.statusCode).toBe(422);
    expect(JSON.parse(response.body).detail[0]).toMatchObject({ type: 'string_pattern_mismatch', loc: ['path', 'session_id'], input: bad });
    expect(await workspaceExists(ws)).toBe(false);
  });

  it('reports an invalid body, not the path id, when both are wrong (validation comes first)', async () => {
    const response = await api.put(pathOf(generation, '/workspaces/{w}', { workspace_id: badId() }), { metadata: 5 });
    expect(response.status).toBe(422);
    expect(response.body.detail.map((item: { loc: unknown[] }) => item.loc)).toEqual([['body', 'metadata']]);
  });

  it('checks a create route’s key before the path id (401, then 422)', async () => {
    const bad = badId();
    const url = pathOf(generation, '/workspaces/{w}/peers', { workspace_id: bad });
    const otherKey = authApi.token({ workspaceId: uniqueId() });
    expect((await authApi.post(url, { id: 'p' }, { token: otherKey })).status).toBe(401);
    const ownKey = authApi.token({ workspaceId: bad });
    expectPathError(await authApi.post(url, { id: 'p' }, { token: ownKey }), 'workspace_id', bad, 'string_pattern_mismatch');
  });
});

describe('path id lengths follow each generation’s id rule (contract §9.1)', () => {
  it('v2 refuses 101 characters; v3 takes them and refuses 513', async () => {
    const long = `w${'x'.repeat(100)}`;
    expectPathError(await api.put(`/v2/workspaces/${long}`, {}), 'workspace_id', long, 'string_too_long');
    expect(await workspaceExists(long)).toBe(false);
    const created = await api.put(`/v3/workspaces/${long}`, {});
    expect(created.status).toBe(200);
    expect(created.body.id).toBe(long);
    const tooLong = `w${'x'.repeat(512)}`;
    expectPathError(await api.put(`/v3/workspaces/${tooLong}`, {}), 'workspace_id', tooLong, 'string_too_long');
  });
});
