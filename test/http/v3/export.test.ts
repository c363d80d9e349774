import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportAll } from '../../support/portable-fixture.js';
import { buildTestApp, uniqueId, type TestApi } from '../../support/test-app.js';

let api: TestApi;
beforeAll(async () => {
  api = await buildTestApp({ AUTH_USE_AUTH: 'true' });
});
afterAll(() => api.close());

describe('GET /v3/workspaces/{w}/export', () => {
  it('streams the workspace as engram export writes it, for an admin or the workspace key; other keys are refused', async () => {
    const admin = api.token({ isAdmin: true });
    const w = uniqueId();
    const other = uniqueId();
    for (const ws of [w, other]) {
      await api.post('/v3/workspaces', { id: ws, metadata: { b: 2, a: 1 } }, { token: admin });
      await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's1', peers: { alice: {} } }, { token: admin });
      await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: `hello from ${ws}` }] }, { token: admin });
    }
    const response = await api.get(`/v3/workspaces/${w}/export`, { token: api.token({ workspaceId: w }) });
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe('application/x-ndjson');
    const lines = response.text.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines[0]).toMatchObject({ type: 'header', format: 'engram-export', format_version: 1, workspaces: [w], vectors: false });
    expect(lines.slice(1).map((line) => line.type)).toEqual(['workspace', 'peer', 'session', 'membership', 'message']);
    expect(lines[1]).toMatchObject({ id: w, metadata: { a: 1, b: 2 } });
    expect(lines[5]).toMatchObject({ content: `hello from ${w}`, peer_id: 'alice', session_id: 's1' });
    expect(response.text).not.toContain(other);
    // the same rows as the command's export of that workspace
    const command = await exportAll(api.database.store, { workspaceIds: [w] });
    expect(response.text.slice(response.text.indexOf('\n'))).toBe(command.slice(command.indexOf('\n')));

    expect((await api.get(`/v3/workspaces/${w}/export`, { token: admin })).status).toBe(200);
    for (const token of [
      api.token({ workspaceId: other }),
      api.token({ workspaceId: w, peerId: 'alice' }),
      api.token({ workspaceId: w, sessionId: 's1' }),
    ]) {
      const refused = await api.get(`/v3/workspaces/${w}/export`, { token });
      expect(refused.status).toBe(401);
      expect(refused.text).not.toContain('hello');
    }
    expect((await api.get(`/v3/workspaces/${w}/export`)).status).toBe(401);
  });

  it('404 for a workspace that does not exist; 422 for a with_vectors that is not a boolean', async () => {
    const admin = api.token({ isAdmin: true });
    const missing = await api.get(`/v3/workspaces/${uniqueId()}/export`, { token: admin });
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ detail: expect.stringMatching(/^Workspace .* not found$/) });
    const w = uniqueId();
    await api.post('/v3/workspaces', { id: w }, { token: admin });
    const bad = await api.get(`/v3/workspaces/${w}/export?with_vectors=maybe`, { token: admin });
    expect(bad.status).toBe(422);
    const withVectors = await api.get(`/v3/workspaces/${w}/export?with_vectors=true`, { token: admin });
    expect(JSON.parse(withVectors.text.split('\n')[0])).toMatchObject({ vectors: true, includes: expect.arrayContaining(['conclusion_vector', 'message_vector']) });
  });

  it('is in the OpenAPI document', async () => {
    const document = (await api.get('/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
    expect(Object.keys(document.paths['/v3/workspaces/{workspace_id}/export'] ?? {})).toEqual(['get']);
    expect(document.paths['/v2/workspaces/{workspace_id}/export']).toBeUndefined();
  });
});
