import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { retryDelay } from '../../src/jobs/attempts.js';
import { canonicalJson, signBody } from '../../src/jobs/webhook-body.js';

describe('webhook body', () => {
  it('is compact JSON with keys sorted at every level and non-ASCII escaped', () => {
    const body = canonicalJson({ type: 'test.event', timestamp: '2024-01-01T00:00:00Z', data: { z: 1, a: ['é', { y: null, b: true }], 'ü': 'x😀' } });
    expect(body).toBe(
      '{"data":{"a":["\\u00e9",{"b":true,"y":null}],"z":1,"\\u00fc":"x\\ud83d\\ude00"},"timestamp":"2024-01-01T00:00:00Z","type":"test.event"}',
    );
    expect(JSON.parse(body).data['ü']).toBe('x😀');
    expect(canonicalJson('line\nbreak "quoted" \u007f')).toBe('"line\\nbreak \\"quoted\\" \u007f"');
  });

  it('is signed with lowercase hex HMAC-SHA256 of the exact bytes', () => {
    const body = '{"a":1}';
    expect(signBody(body, 'secret')).toBe(createHmac('sha256', 'secret').update(body).digest('hex'));
    expect(signBody(body, 'secret')).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('retry delays', () => {
  it('double from the base, stay within 50-100% of the ceiling, and stop at the cap', () => {
    expect(retryDelay(1, 1000, 60_000, () => 1)).toBe(1000);
    expect(retryDelay(1, 1000, 60_000, () => 0)).toBe(500);
    expect(retryDelay(3, 1000, 60_000, () => 1)).toBe(4000);
    expect(retryDelay(20, 1000, 60_000, () => 1)).toBe(60_000);
  });
});
