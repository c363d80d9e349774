import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildInspector } from '../../scripts/build.mjs';
import { buildTestApp, type TestApi } from '../support/test-app.js';

/*
 * How the server serves the inspector page (src/http/shared/static-page.ts): the files of the
 * built folder by name, the shell for every other address below /inspector, and the headers. The
 * page itself is tested in Chromium (test/inspector).
 */

let folder: string;
let api: TestApi;
let unbuilt: TestApi;
beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'engram-inspector-page-'));
  await buildInspector(folder);
  api = await buildTestApp({}, { inspectorAssets: folder });
  unbuilt = await buildTestApp({}, { inspectorAssets: join(folder, 'nothing-here') });
});
afterAll(async () => {
  await api?.close();
  await unbuilt?.close();
  rmSync(folder, { recursive: true, force: true });
});

describe('the inspector page', () => {
  it('answers its shell at /inspector and at every address below it, revalidated each time, under the policy', async () => {
    const shell = await api.get('/inspector');
    expect(shell.status).toBe(200);
    expect(shell.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(shell.headers['cache-control']).toBe('no-cache');
    const policy = String(shell.headers['content-security-policy']);
    expect(policy).toContain("default-src 'none'");
    expect(policy).toContain("script-src 'self'");
    expect(policy).toContain("connect-src 'self'");
    expect(policy).toContain("frame-ancestors 'none'");
    expect(policy).not.toContain('unsafe');
    expect(shell.headers['x-content-type-options']).toBe('nosniff');
    expect(shell.text).toContain('<div id="app"></div>');
    // nothing from another origin, no inline script
    expect(shell.text).not.toMatch(/https?:\/\//);
    expect(shell.text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    for (const path of ['/inspector/', '/inspector/workspaces/w1', '/inspector/workspaces/w1/peers/alice?page=2', '/inspector/workspaces/a%20b/sessions/s1', '/inspector/anything/else']) {
      const deep = await api.get(path);
      expect(deep.status, path).toBe(200);
      expect(deep.text, path).toBe(shell.text);
    }
  });

  it('serves the hashed assets the shell names, cached for a year; a missing asset is a 404, not the shell', async () => {
    const shell = (await api.get('/inspector')).text;
    const names = readdirSync(join(folder, 'assets')).filter((name) => /\.(js|css)$/.test(name));
    expect(names).toHaveLength(2);
    for (const name of names) {
      expect(shell).toContain(`/inspector/assets/${name}`);
      const asset = await api.get(`/inspector/assets/${name}`);
      expect(asset.status).toBe(200);
      expect(asset.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      expect(asset.headers['content-type']).toBe(name.endsWith('.js') ? 'text/javascript; charset=utf-8' : 'text/css; charset=utf-8');
      expect(asset.text.length).toBeGreaterThan(1000);
    }
    const missing = await api.get('/inspector/assets/main-OLDHASH.js');
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ detail: 'Not Found' });
    // a path that climbs out of the folder names no file of it
    expect((await api.get('/inspector/assets/..%2F..%2Fpackage.json')).status).toBe(404);
  });

  it('a server that was never built says how to build the page', async () => {
    const page = await unbuilt.get('/inspector/workspaces/w1');
    expect(page.status).toBe(404);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.text).toContain('npm run build');
  });

  it('is not an API route: not in the OpenAPI document, and its methods are GET and HEAD only', async () => {
    const doc = (await api.get('/openapi.json')).body;
    expect(Object.keys(doc.paths).filter((path) => path.startsWith('/inspector'))).toEqual([]);
    expect((await api.request('HEAD', '/inspector')).status).toBe(200);
    expect((await api.post('/inspector', {})).status).toBe(405);
  });
});
