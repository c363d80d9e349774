import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, uniqueId, type TestApi, type TestResponse } from '../support/test-app.js';

/*
 * Keys that name members of Object.prototype (`__proto__`, `constructor`, `toString` ...) are
 * ordinary data wherever the contract allows arbitrary keys (metadata, configuration), and
 * refused with the contract's 4xx wherever it does not (filter operators and columns).
 */

let api: TestApi;
beforeAll(async () => {
  api = await buildTestApp();
});
afterAll(() => api.close());

const PROTO_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__'];

/** Metadata with every prototype key, as raw JSON text (an object literal would set the prototype). */
const META_TEXT = `{${PROTO_KEYS.map((k, i) => `"${k}": {"a": ${i}}`).join(', ')}, "plain": "x"}`;

/** The keys and values of a parsed JSON object, in a form that does not depend on key order. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

const sameJson = (actual: unknown, expectedText: string) => expect(canonical(actual)).toBe(canonical(JSON.parse(expectedText)));

function sendRaw(method: string, url: string, text: string): Promise<TestResponse> {
  return api.request(method, url, undefined, { raw: text, headers: { 'content-type': 'application/json' } });
}

function ok(response: TestResponse, status = 200): TestResponse {
  expect(response.status, response.text).toBe(status);
  return response;
}

describe('configuration with prototype keys (issue reproductions)', () => {
  for (const generation of ['v2', 'v3']) {
    it(`${generation}: PUT configuration {"constructor": 1} is stored and read back`, async () => {
      const ws = uniqueId();
      ok(await api.post(`/${generation}/workspaces`, { id: ws }), generation === 'v3' ? 201 : 200);
      const updated = ok(await sendRaw('PUT', `/${generation}/workspaces/${ws}`, '{"configuration":{"constructor":1}}'));
      sameJson(updated.body.configuration, '{"constructor":1}');
      const listed = ok(await api.post(`/${generation}/workspaces/list`, { filters: { id: ws } }));
      sameJson(listed.body.items[0].configuration, '{"constructor":1}');
    });

    it(`${generation}: POST configuration {"toString": {}} and {"__proto__": {"a": 1}} create and read back`, async () => {
      for (const configuration of ['{"toString":{}}', '{"__proto__":{"a":1}}', '{"hasOwnProperty":null,"valueOf":[1]}']) {
        const ws = uniqueId();
        const created = await sendRaw('POST', `/${generation}/workspaces`, `{"id":"${ws}","configuration":${configuration}}`);
        expect(created.status, created.text).toBeLessThan(300);
        sameJson(created.body.configuration, configuration);
        const again = ok(await api.post(`/${generation}/workspaces`, { id: ws }));
        sameJson(again.body.configuration, configuration);
      }
    });
  }

  it('a known section next to prototype keys is still validated', async () => {
    const ws = uniqueId();
    const bad = await sendRaw('POST', '/v3/workspaces', `{"id":"${ws}","configuration":{"__proto__":{},"summary":{"enabled":"maybe"}}}`);
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]).toMatchObject({ type: 'bool_parsing', loc: ['body', 'configuration', 'summary', 'enabled'] });
  });

  it('a known section with prototype keys inside keeps only its fields', async () => {
    const ws = uniqueId();
    const created = ok(
      await sendRaw('POST', '/v3/workspaces', `{"id":"${ws}","configuration":{"reasoning":{"__proto__":{"enabled":false},"constructor":1,"enabled":true}}}`),
      201,
    );
    sameJson(created.body.configuration, '{"reasoning":{"enabled":true}}');
  });

  it('session configuration keeps prototype keys; an update replaces top-level keys', async () => {
    const ws = uniqueId();
    const created = ok(await sendRaw('POST', `/v3/workspaces/${ws}/sessions`, '{"id":"s","configuration":{"__proto__":{"x":1},"toString":2}}'), 201);
    sameJson(created.body.configuration, '{"__proto__":{"x":1},"toString":2}');
    const updated = ok(await sendRaw('PUT', `/v3/workspaces/${ws}/sessions/s`, '{"configuration":{"constructor":{"y":[]},"__proto__":{"z":2}}}'));
    sameJson(updated.body.configuration, '{"__proto__":{"z":2},"toString":2,"constructor":{"y":[]}}');
    const listed = ok(await api.post(`/v3/workspaces/${ws}/sessions/list`, {}));
    sameJson(listed.body.items[0].configuration, '{"__proto__":{"z":2},"toString":2,"constructor":{"y":[]}}');
  });

  it('peer configuration keeps prototype keys', async () => {
    const ws = uniqueId();
    const created = ok(await sendRaw('POST', `/v3/workspaces/${ws}/peers`, '{"id":"p","configuration":{"__proto__":{"observe_me":false}}}'), 201);
    sameJson(created.body.configuration, '{"__proto__":{"observe_me":false}}');
  });
});

describe('metadata with prototype keys round-trips', () => {
  for (const generation of ['v2', 'v3']) {
    it(`${generation}: workspaces, peers, sessions and messages`, async () => {
      const ws = uniqueId();
      const base = `/${generation}/workspaces`;
      const created = generation === 'v3' ? 201 : 200;
      sameJson(ok(await sendRaw('POST', base, `{"id":"${ws}","metadata":${META_TEXT}}`), created).body.metadata, META_TEXT);
      sameJson(ok(await api.post(`${base}/list`, { filters: { id: ws } })).body.items[0].metadata, META_TEXT);

      sameJson(ok(await sendRaw('POST', `${base}/${ws}/peers`, `{"id":"p","metadata":${META_TEXT}}`), created).body.metadata, META_TEXT);
      sameJson(ok(await api.post(`${base}/${ws}/peers/list`, {})).body.items[0].metadata, META_TEXT);
      sameJson(ok(await sendRaw('PUT', `${base}/${ws}/peers/p`, `{"metadata":${META_TEXT}}`)).body.metadata, META_TEXT);

      sameJson(ok(await sendRaw('POST', `${base}/${ws}/sessions`, `{"id":"s","metadata":${META_TEXT}}`), created).body.metadata, META_TEXT);
      sameJson(ok(await sendRaw('PUT', `${base}/${ws}/sessions/s`, `{"metadata":${META_TEXT}}`)).body.metadata, META_TEXT);
      sameJson(ok(await api.post(`${base}/${ws}/sessions/list`, {})).body.items[0].metadata, META_TEXT);

      const messages = ok(
        await sendRaw('POST', `${base}/${ws}/sessions/s/messages${generation === 'v2' ? '/' : ''}`, `{"messages":[{"peer_id":"p","content":"hi","metadata":${META_TEXT}}]}`),
        generation === 'v3' ? 201 : 200,
      ).body;
      sameJson(messages[0].metadata, META_TEXT);
      const id = messages[0].id;
      sameJson(ok(await api.get(`${base}/${ws}/sessions/s/messages/${id}`)).body.metadata, META_TEXT);
      sameJson(ok(await sendRaw('PUT', `${base}/${ws}/sessions/s/messages/${id}`, `{"metadata":${META_TEXT}}`)).body.metadata, META_TEXT);
      sameJson(ok(await api.post(`${base}/${ws}/sessions/s/messages/list`, {})).body.items[0].metadata, META_TEXT);

      const update = ok(await sendRaw('PUT', `${base}/${ws}`, `{"metadata":${META_TEXT}}`));
      sameJson(update.body.metadata, META_TEXT);
    });
  }

  it('nested prototype keys and NUL stripping keep the key', async () => {
    const ws = uniqueId();
    const text = '{"a":{"__proto__":{"b\\u0000":1}},"__proto__\\u0000":2}';
    const created = ok(await sendRaw('POST', '/v3/workspaces', `{"id":"${ws}","metadata":${text}}`), 201);
    sameJson(created.body.metadata, '{"a":{"__proto__":{"b":1}},"__proto__":2}');
  });

  it('v1: apps, users, sessions, messages and metamessages', async () => {
    const app = ok(await sendRaw('POST', '/v1/apps', `{"name":"${uniqueId('app')}","metadata":${META_TEXT}}`)).body;
    sameJson(app.metadata, META_TEXT);
    sameJson(ok(await api.get(`/v1/apps?app_id=${app.id}`)).body.metadata, META_TEXT);
    const user = ok(await sendRaw('POST', `/v1/apps/${app.id}/users`, `{"name":"u","metadata":${META_TEXT}}`)).body;
    sameJson(user.metadata, META_TEXT);
    const base = `/v1/apps/${app.id}/users/${user.id}`;
    const session = ok(await sendRaw('POST', `${base}/sessions`, `{"metadata":${META_TEXT}}`)).body;
    sameJson(session.metadata, META_TEXT);
    sameJson(ok(await api.get(`${base}/sessions?session_id=${session.id}`)).body.metadata, META_TEXT);
    const message = ok(await sendRaw('POST', `${base}/sessions/${session.id}/messages`, `{"content":"hi","is_user":true,"metadata":${META_TEXT}}`)).body;
    sameJson(message.metadata, META_TEXT);
    sameJson(ok(await api.get(`${base}/sessions/${session.id}/messages/${message.id}`)).body.metadata, META_TEXT);
    const meta = ok(await sendRaw('POST', `${base}/metamessages`, `{"metamessage_type":"fact","content":"c","metadata":${META_TEXT}}`)).body;
    sameJson(meta.metadata, META_TEXT);
    sameJson(ok(await sendRaw('PUT', `${base}/metamessages/${meta.id}`, `{"metadata":${META_TEXT}}`)).body.metadata, META_TEXT);
    // containment filters on such keys find the row
    const listed = ok(await sendRaw('POST', `${base}/sessions/list`, '{"filter":{"__proto__":{"a":0}}}'));
    expect(listed.body.items.map((s: { id: string }) => s.id)).toEqual([session.id]);
  });
});

describe('prototype keys as ids', () => {
  it('peers named like prototype members are created and listed', async () => {
    const ws = uniqueId();
    const body = `{${PROTO_KEYS.map((k) => `"${k}": {"observe_me": false}`).join(', ')}}`;
    const added = await sendRaw('POST', `/v3/workspaces/${ws}/sessions/s/peers`, body);
    expect(added.status, added.text).toBeLessThan(300);
    const peers = ok(await api.get(`/v3/workspaces/${ws}/sessions/s/peers`)).body.items.map((p: { id: string }) => p.id);
    expect([...peers].sort()).toEqual([...PROTO_KEYS].sort());
    const config = ok(await api.get(`/v3/workspaces/${ws}/sessions/s/peers/__proto__/config`)).body;
    expect(config).toEqual({ observe_me: false, observe_others: null });
  });

  it('workspaces, peers and sessions with such ids work through paths', async () => {
    for (const key of PROTO_KEYS) {
      ok(await api.put(`/v3/workspaces/${key}`, { metadata: { k: key } }));
      ok(await api.put(`/v3/workspaces/${key}/peers/${key}`, { metadata: { k: key } }));
      ok(await api.put(`/v3/workspaces/${key}/sessions/${key}`, { metadata: { k: key } }));
      const got = ok(await api.post(`/v3/workspaces/${key}/peers/list`, { filters: { id: key } }));
      expect(got.body.items.map((p: { id: string }) => p.id)).toEqual([key]);
    }
  });
});

describe('filters with prototype keys', () => {
  let ws: string;
  beforeAll(async () => {
    ws = uniqueId();
    ok(await sendRaw('POST', `/v3/workspaces/${ws}/peers`, `{"id":"with","metadata":${META_TEXT}}`), 201);
    ok(await api.post(`/v3/workspaces/${ws}/peers`, { id: 'without', metadata: { plain: 'y' } }), 201);
  });

  const listIds = async (filters: string, generation = 'v3') => {
    const response = await sendRaw('POST', `/${generation}/workspaces/${ws}/peers/list`, `{"filters":${filters}}`);
    return response;
  };

  it('as a column: the contract 422', async () => {
    for (const key of PROTO_KEYS) {
      for (const generation of ['v2', 'v3']) {
        const response = await listIds(`{"${key}": "x"}`, generation);
        expect(response.status, response.text).toBe(422);
        expect(response.body).toEqual({ detail: `Column '${key}' is not allowed to be filtered on or does not exist on Peer` });
      }
    }
  });

  it('as an operator: the contract 422', async () => {
    for (const key of PROTO_KEYS) {
      for (const filters of [`{"id": {"in": ["with"], "${key}": 1}}`, `{"metadata": {"plain": {"in": ["x"], "${key}": 1}}}`]) {
        const response = await listIds(filters);
        expect(response.status, `${filters}: ${response.text}`).toBe(422);
        expect(response.body).toEqual({ detail: `Unsupported comparison operator: ${key}` });
      }
      // without a real operator next to it, an object is an equality (column) or containment (metadata)
      const column = await listIds(`{"id": {"${key}": 1}}`);
      expect(column.status).toBe(422);
    }
  });

  it('as a metadata key: containment and operators find the row', async () => {
    for (const [index, key] of PROTO_KEYS.entries()) {
      const contained = await listIds(`{"metadata": {"${key}": {"a": ${index}}}}`);
      expect(contained.status, contained.text).toBe(200);
      expect(contained.body.items.map((p: { id: string }) => p.id)).toEqual(['with']);
      const missing = await listIds(`{"metadata": {"${key}": {"a": ${index + 100}}}}`);
      expect(missing.body.items).toEqual([]);
      const contains = await listIds(`{"metadata": {"${key}": {"contains": "\\"a\\""}}}`);
      expect(contains.status, contains.text).toBe(200);
      expect(contains.body.items.map((p: { id: string }) => p.id)).toEqual(['with']);
    }
  });

  it('as a logical key or inside AND/OR/NOT', async () => {
    const response = await listIds('{"AND": [{"metadata": {"__proto__": {"a": 0}}}], "NOT": [{"metadata": {"constructor": {"a": 99}}}]}');
    expect(response.status, response.text).toBe(200);
    expect(response.body.items.map((p: { id: string }) => p.id)).toEqual(['with']);
    const bad = await listIds('{"__proto__": [{"id": "with"}]}');
    expect(bad.status).toBe(422);
  });

  it('in message search and v1 filters', async () => {
    const search = await sendRaw('POST', `/v3/workspaces/${ws}/search`, '{"query":"hi","filters":{"__proto__":1}}');
    expect(search.status, search.text).toBe(422);
    const messages = await sendRaw('POST', `/v3/workspaces/${ws}/sessions/s/messages/list`, '{"filters":{"metadata":{"toString":{"constructor":1}}}}');
    expect(messages.status, messages.text).toBeLessThan(500);
  });
});

describe('other bodies with prototype keys', () => {
  it('model bodies ignore prototype keys and report missing fields', async () => {
    for (const key of PROTO_KEYS) {
      const response = await sendRaw('POST', '/v3/workspaces', `{"${key}": "x"}`);
      expect(response.status, response.text).toBe(422);
      expect(response.body.detail[0]).toMatchObject({ type: 'missing', loc: ['body', 'id'] });
    }
  });

  it('query parameters named like prototype members are ignored', async () => {
    const ws = uniqueId();
    const response = await api.post(`/v3/workspaces/${ws}/peers/list?constructor=1&__proto__=2&toString=3&page=1`, {});
    expect(response.status, response.text).toBe(200);
  });

  it('a body that is a prototype key name', async () => {
    const response = await sendRaw('POST', '/v3/workspaces', '"__proto__"');
    expect(response.status).toBe(422);
  });
});

describe('job kinds named like prototype members', () => {
  it('are never claimed: no handler is found for them, while known kinds run', async () => {
    const { createWorker } = await import('../../src/runtime/runtime.js');
    const jobApi = await buildTestApp({ WORKER_POLL_MS: '10' }, { ownDatabase: true });
    const worker = createWorker(jobApi.config, jobApi.database, { info() {}, warn() {}, error() {} });
    try {
      const prefix = uniqueId('job');
      await jobApi.database.store.jobs.enqueue(
        [
          ...PROTO_KEYS.map((kind, i) => ({ id: `${prefix}-${i}`, kind, workspaceId: null, queueKey: `${prefix}-${i}`, payload: {}, maxAttempts: 1 })),
          // a known kind beside them: a purge of a session that does not exist ends as done (skipped)
          { id: `${prefix}-known`, kind: 'session.purge', workspaceId: uniqueId(), queueKey: `${prefix}-known`, payload: { sessionId: 'none' }, maxAttempts: 1 },
        ],
        new Date(),
      );
      worker.start();
      const status = async (id: string) => (await jobApi.database.driver.get<{ status: string }>('SELECT status FROM jobs WHERE id = ?', [id]))?.status;
      for (let tries = 0; tries < 200 && (await status(`${prefix}-known`)) !== 'done'; tries++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(await status(`${prefix}-known`)).toBe('done');
      const ids = PROTO_KEYS.map((_, i) => `${prefix}-${i}`);
      const rows = await jobApi.database.driver.all<{ status: string; attempts: number | string }>(
        `SELECT status, attempts FROM jobs WHERE id IN (${ids.map(() => '?').join(', ')})`,
        ids,
      );
      expect(rows).toHaveLength(PROTO_KEYS.length);
      for (const row of rows) expect({ status: row.status, attempts: Number(row.attempts) }).toEqual({ status: 'pending', attempts: 0 });
    } finally {
      await worker.stop(1000);
      await jobApi.close();
    }
  });
});
