import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/config.js';
import { buildTestApp, uniqueId, type TestApi } from '../support/test-app.js';

/*
 * Browser pages of the allowed origins may call the API (contract §1.9): by default
 * http://localhost, http://127.0.0.1:8000 and https://api.honcho.dev, with credentials, every
 * method and header.
 */

let api: TestApi;
let ws: string;
beforeAll(async () => {
  api = await buildTestApp();
  ws = uniqueId();
  expect((await api.post('/v3/workspaces', { id: ws })).status).toBe(201);
});
afterAll(() => api.close());

const ALLOWED = 'https://api.honcho.dev';
const OTHER = 'https://evil.example';

describe('CORS', () => {
  it('names an allowed origin on answers of every kind, with credentials', async () => {
    const ok = await api.post(`/v3/workspaces/${ws}/peers/list`, {}, { headers: { origin: ALLOWED } });
    const missing = await api.post('/v3/no/such/route', {}, { headers: { origin: 'http://localhost' } });
    const invalid = await api.post(`/v3/workspaces/${ws}/peers/list?size=0`, {}, { headers: { origin: 'http://127.0.0.1:8000' } });
    for (const [response, origin, status] of [[ok, ALLOWED, 200], [missing, 'http://localhost', 404], [invalid, 'http://127.0.0.1:8000', 422]] as const) {
      expect(response.status).toBe(status);
      expect(response.headers).toMatchObject({ 'access-control-allow-origin': origin, 'access-control-allow-credentials': 'true', vary: 'Origin' });
    }
  });

  it('adds nothing for another origin or a request without one', async () => {
    for (const headers of [{ origin: OTHER }, {}] as Record<string, string>[]) {
      const response = await api.post(`/v3/workspaces/${ws}/peers/list`, {}, { headers });
      expect(response.status).toBe(200);
      expect(Object.keys(response.headers).filter((name) => name.startsWith('access-control-') || name === 'vary')).toEqual([]);
    }
  });

  it('answers a preflight on any path: 200 with methods and the asked headers for an allowed origin, 400 for another', async () => {
    const preflight = (origin: string, path: string) =>
      api.request('OPTIONS', path, undefined, {
        headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
      });
    for (const path of [`/v3/workspaces/${ws}/peers/list`, '/v1/apps/list', '/no/such/route']) {
      const allowed = await preflight(ALLOWED, path);
      expect(allowed.status, path).toBe(200);
      expect(allowed.text).toBe('OK');
      expect(allowed.headers).toMatchObject({
        'access-control-allow-origin': ALLOWED,
        'access-control-allow-methods': 'DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT',
        'access-control-allow-headers': 'authorization, content-type',
        'access-control-allow-credentials': 'true',
        'access-control-max-age': '600',
      });
      const refused = await preflight(OTHER, path);
      expect(refused.status, path).toBe(400);
      expect(refused.text).toBe('Disallowed CORS origin');
      expect(refused.headers['access-control-allow-origin']).toBeUndefined();
    }
  });

  it('leaves an OPTIONS request that is not a preflight to the API (405 with Allow)', async () => {
    const plain = await api.request('OPTIONS', `/v3/workspaces/${ws}/peers/list`, undefined, { headers: { origin: ALLOWED } });
    expect(plain.status).toBe(405);
    expect(plain.body).toEqual({ detail: 'Method Not Allowed' });
    expect(plain.headers.allow).toContain('POST');
  });

  it('reads CORS_ORIGINS: a list, * for any origin, none for none; a path or trailing slash refused', async () => {
    const any = await buildTestApp({ CORS_ORIGINS: '*' });
    const none = await buildTestApp({ CORS_ORIGINS: 'none' });
    const listed = await buildTestApp({ CORS_ORIGINS: ' https://app.example.com , http://localhost:3000 ' });
    try {
      const ask = (on: TestApi, origin: string) => on.post(`/v3/workspaces/${ws}/peers/list`, {}, { headers: { origin } });
      expect((await ask(any, OTHER)).headers['access-control-allow-origin']).toBe(OTHER);
      expect((await ask(none, ALLOWED)).headers['access-control-allow-origin']).toBeUndefined();
      expect((await ask(listed, 'http://localhost:3000')).headers['access-control-allow-origin']).toBe('http://localhost:3000');
      expect((await ask(listed, ALLOWED)).headers['access-control-allow-origin']).toBeUndefined();
    } finally {
      await Promise.all([any.close(), none.close(), listed.close()]);
    }
    expect(loadConfig({}, '/nonexistent/.env').corsOrigins).toEqual(['http://localhost', 'http://127.0.0.1:8000', 'https://api.honcho.dev']);
    for (const bad of ['https://app.example.com/', 'app.example.com', 'https://app.example.com/path']) {
      expect(() => loadConfig({ CORS_ORIGINS: bad }, '/nonexistent/.env'), bad).toThrow(ConfigError);
      expect(() => loadConfig({ CORS_ORIGINS: bad }, '/nonexistent/.env'), bad).toThrow(/CORS_ORIGINS must be a comma-separated list of origins/);
    }
  });
});
