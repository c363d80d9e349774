import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, uniqueId, type TestApi } from '../support/test-app.js';

describe('GET /metrics', () => {
  let on: TestApi;
  let off: TestApi;
  beforeAll(async () => {
    on = await buildTestApp({ METRICS_ENABLED: 'true' });
    off = await buildTestApp();
  });
  afterAll(async () => {
    await on.close();
    await off.close();
  });

  it('is a plain-text 404 when metrics are disabled', async () => {
    const response = await off.get('/metrics');
    expect(response.status).toBe(404);
    expect(response.text).toBe('Metrics are disabled');
    expect(String(response.headers['content-type'])).toMatch(/^text\/plain/);
  });

  it('counts requests per route pattern and status, with latencies and queue depth', async () => {
    const ws = uniqueId();
    await on.post(`/v3/workspaces/${ws}/peers/list`);
    await on.post(`/v3/workspaces/${ws}/peers/list`);
    await on.post(`/v3/workspaces/${ws}/peers/list?page=0`);
    const text = (await on.get('/metrics')).text;
    expect(text).toContain('engram_http_requests_total{method="POST",route="/v3/workspaces/:workspace_id/peers/list",status="200"} 2');
    expect(text).toContain('engram_http_requests_total{method="POST",route="/v3/workspaces/:workspace_id/peers/list",status="422"} 1');
    expect(text).toMatch(/engram_http_request_duration_seconds_count\{method="POST",route="\/v3\/workspaces\/:workspace_id\/peers\/list"\} 3/);
    expect(text).toContain('engram_queue_jobs{status="pending"}');
    expect(text).not.toContain(ws);
  });
});
