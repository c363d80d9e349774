import { connect, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_OBJECT_BYTES } from '../../src/http/shared/fields.js';
import { MAX_JSON_DEPTH } from '../../src/http/shared/python-json.js';
import { askHealth, openSocket } from '../support/raw-socket.js';
import { buildTestApp, uniqueId, type TestApi, type TestResponse } from '../support/test-app.js';

/*
 * Limits that protect the process (docs/operations.md, "Limits"). Those node:http enforces
 * (header size, slow senders, open connections) are tested through a listening server and raw
 * sockets, since inject never opens a connection.
 */

const deepArrays = (depth: number, inner = '') => '['.repeat(depth) + inner + ']'.repeat(depth);

function sendRaw(api: TestApi, method: string, url: string, text: string): Promise<TestResponse> {
  return api.request(method, url, undefined, { raw: text, headers: { 'content-type': 'application/json' } });
}

async function listen(api: TestApi): Promise<number> {
  await api.app.listen({ port: 0, host: '127.0.0.1' });
  return (api.app.server.address() as AddressInfo).port;
}

interface RawExchange {
  /** Everything the server sent before closing. */
  text: string;
  /** Milliseconds from the first write to the close. */
  ms: number;
}

/** Opens a connection, writes `chunks` (strings, or pauses in ms), and collects the answer until the server closes. */
function exchange(port: number, chunks: (string | number)[], giveUpMs = 10_000): Promise<RawExchange> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const started = Date.now();
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no close within ${giveUpMs} ms; received ${JSON.stringify(text.slice(0, 200))}`));
    }, giveUpMs);
    socket.on('data', (data) => (text += data.toString()));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ text, ms: Date.now() - started });
    });
    socket.on('connect', async () => {
      for (const chunk of chunks) {
        if (typeof chunk === 'number') await new Promise((r) => setTimeout(r, chunk));
        else if (!socket.destroyed) socket.write(chunk);
      }
    });
  });
}

/** Status line and JSON body of a raw HTTP/1.1 answer. */
function parseAnswer(text: string): { status: number; body: unknown; headers: string } {
  const [head, body] = text.split('\r\n\r\n', 2);
  return { status: Number(head.split(' ')[1]), headers: head.toLowerCase(), body: body ? JSON.parse(body) : undefined };
}

async function health(port: number): Promise<number> {
  const started = Date.now();
  const response = await fetch(`http://127.0.0.1:${port}/health`);
  expect(await response.text()).toBe('{"status":"ok"}');
  return Date.now() - started;
}

describe('request body size', () => {
  let api: TestApi;
  let port: number;
  beforeAll(async () => {
    api = await buildTestApp();
    port = await listen(api);
  });
  afterAll(() => api.close());

  it('a body over 16 MiB is a 413 with a JSON detail, with and without Content-Length', async () => {
    const body = `{"id":"big","metadata":{"a":"${'x'.repeat(17 * 1024 * 1024)}"}}`;
    const declared = await fetch(`http://127.0.0.1:${port}/v3/workspaces`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
    expect(declared.status).toBe(413);
    expect(await declared.json()).toEqual({ detail: 'Request body is too large' });

    const streamed = new ReadableStream({
      start(controller) {
        for (let i = 0; i < 17; i++) controller.enqueue(new TextEncoder().encode('x'.repeat(1024 * 1024)));
        controller.close();
      },
    });
    const chunked = await fetch(`http://127.0.0.1:${port}/v3/workspaces`, {
      method: 'POST',
      body: streamed,
      headers: { 'content-type': 'application/json' },
      duplex: 'half',
    } as RequestInit);
    expect(chunked.status).toBe(413);
    expect(await chunked.json()).toEqual({ detail: 'Request body is too large' });

    expect((await api.post('/v3/workspaces/list', { filters: { id: 'big' } })).body.items).toEqual([]);
    await health(port);
  });
});

describe('JSON nesting depth', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await buildTestApp();
  });
  afterAll(() => api.close());

  it('a body nested 100,000 levels is a 422 json_invalid on every generation, not a crash', async () => {
    const cases: [string, string, string][] = [
      ['POST', '/v3/workspaces', deepArrays(100_000)],
      ['POST', '/v3/workspaces', `{"id":"w","metadata":${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}}`],
      ['POST', '/v2/workspaces', `{"id":"w","metadata":{"a":${deepArrays(100_000)}}}`],
      ['POST', '/v3/workspaces', `{"id":"w","configuration":{"a":${deepArrays(100_000)}}}`],
      ['POST', `/v3/workspaces/${uniqueId()}/peers/list`, `{"filters":{"metadata":{"a":${deepArrays(100_000)}}}}`],
      ['POST', '/v1/apps', `{"name":"w","metadata":{"a":${deepArrays(100_000)}}}`],
    ];
    for (const [method, url, text] of cases) {
      const response = await sendRaw(api, method, url, text);
      expect(response.status, `${url}: ${response.text.slice(0, 200)}`).toBe(422);
      const item = response.body.detail[0];
      expect(item.type).toBe('json_invalid');
      expect(item.msg).toBe(`JSON decode error: Nesting exceeds maximum depth of ${MAX_JSON_DEPTH}`);
      if (!url.startsWith('/v1')) expect(item.ctx).toEqual({ error: `Nesting exceeds maximum depth of ${MAX_JSON_DEPTH}` });
    }
  });

  it('reports the position of the bracket that goes one level too deep', async () => {
    const text = `{"id":"w","metadata":{"a":${deepArrays(MAX_JSON_DEPTH)}}}`;
    const response = await sendRaw(api, 'POST', '/v2/workspaces', text);
    expect(response.status).toBe(422);
    // the outer object and metadata are two levels, so the array at depth 3 + (MAX - 2) - 1 overflows
    expect(response.body.detail[0].loc).toEqual(['body', '{"id":"w","metadata":{"a":'.length + MAX_JSON_DEPTH - 2]);
  });

  it('exactly the maximum depth is accepted and stored', async () => {
    const ws = uniqueId();
    const value = deepArrays(MAX_JSON_DEPTH - 3, '"end"');
    const response = await sendRaw(api, 'POST', '/v2/workspaces', `{"id":"${ws}","metadata":{"a":${value}}}`);
    expect(response.status, response.text.slice(0, 200)).toBe(200);
    expect(JSON.stringify(response.body.metadata)).toBe(`{"a":${value}}`);
    const listed = await api.post('/v2/workspaces/list', { filters: { id: ws } });
    expect(JSON.stringify(listed.body.items[0].metadata)).toBe(`{"a":${value}}`);
  });

  it('brackets inside strings do not count', async () => {
    const ws = uniqueId();
    const text = `{"id":"${ws}","metadata":{"a":"${'['.repeat(10_000)}\\"${'{'.repeat(10_000)}"}}`;
    const response = await sendRaw(api, 'POST', '/v3/workspaces', text);
    expect(response.status, response.text.slice(0, 200)).toBe(201);
    expect(response.body.metadata.a).toBe(`${'['.repeat(10_000)}"${'{'.repeat(10_000)}`);
  });

  it('the v2 filter nesting limit of 64 levels is still reached through HTTP', async () => {
    let filter: unknown = { id: 'x' };
    for (let i = 0; i < 65; i++) filter = { AND: [filter] };
    const response = await api.post(`/v2/workspaces/${uniqueId()}/peers/list`, { filters: filter });
    expect(response.status).toBe(422);
    expect(response.body).toEqual({ detail: 'Filter nesting exceeds maximum depth of 64' });
  });
});

describe('metadata and configuration size', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await buildTestApp();
  });
  afterAll(() => api.close());

  /** An object whose JSON text is exactly `bytes` long. */
  const objectOfSize = (bytes: number) => ({ a: 'x'.repeat(bytes - '{"a":""}'.length) });

  it('objects up to the limit are stored, one byte more is a value_error at the field', async () => {
    const ws = uniqueId();
    const atLimit = objectOfSize(MAX_OBJECT_BYTES);
    expect((await api.post('/v3/workspaces', { id: ws, metadata: atLimit, configuration: atLimit })).status).toBe(201);

    const over = objectOfSize(MAX_OBJECT_BYTES + 1);
    const message = (what: string) => `Value error, ${what} exceeds maximum size of ${MAX_OBJECT_BYTES} bytes (as JSON text, got ${MAX_OBJECT_BYTES + 1})`;
    const cases: [string, string, unknown, (string | number)[], string][] = [
      ['PUT', `/v3/workspaces/${ws}`, { metadata: over }, ['body', 'metadata'], 'Metadata'],
      ['PUT', `/v3/workspaces/${ws}`, { configuration: over }, ['body', 'configuration'], 'Configuration'],
      ['PUT', `/v2/workspaces/${ws}`, { metadata: over }, ['body', 'metadata'], 'Metadata'],
      ['POST', `/v3/workspaces/${ws}/peers`, { id: 'p', configuration: over }, ['body', 'configuration'], 'Configuration'],
      ['PUT', `/v3/workspaces/${ws}/peers/p`, { metadata: over }, ['body', 'metadata'], 'Metadata'],
      ['POST', `/v3/workspaces/${ws}/sessions`, { id: 's', configuration: over }, ['body', 'configuration'], 'Configuration'],
      [
        'POST',
        `/v3/workspaces/${ws}/sessions/s/messages`,
        { messages: [{ peer_id: 'p', content: 'hi', metadata: over }] },
        ['body', 'messages', 0, 'metadata'],
        'Metadata',
      ],
    ];
    for (const [method, url, body, loc, what] of cases) {
      const response = await api.request(method, url, body);
      expect(response.status, `${method} ${url}`).toBe(422);
      expect(response.body.detail).toEqual([{ type: 'value_error', loc, msg: message(what), input: over, ctx: { error: {} } }]);
    }
    // nothing of the refused requests was stored
    const listed = await api.post('/v3/workspaces/list', { filters: { id: ws } });
    expect(listed.body.items[0].metadata).toEqual(atLimit);
    expect((await api.post(`/v3/workspaces/${ws}/peers/list`, {})).body.items).toEqual([]);
  });

  it('v1 metadata has the same limit', async () => {
    const over = objectOfSize(MAX_OBJECT_BYTES + 1);
    const response = await api.post('/v1/apps', { name: uniqueId('app'), metadata: over });
    expect(response.status).toBe(422);
    expect(response.body.detail).toEqual([
      {
        type: 'value_error',
        loc: ['body', 'metadata'],
        msg: `Value error, Metadata exceeds maximum size of ${MAX_OBJECT_BYTES} bytes (as JSON text, got ${MAX_OBJECT_BYTES + 1})`,
      },
    ]);
  });

  it('counts UTF-8 bytes, not characters', async () => {
    const chars = Math.floor((MAX_OBJECT_BYTES - 8) / 3) + 1;
    const response = await api.post('/v3/workspaces', { id: uniqueId(), metadata: { a: '€'.repeat(chars) } });
    expect(response.status).toBe(422);
    expect(response.body.detail[0].msg).toContain(`got ${chars * 3 + 8})`);
  });
});

describe('header size', () => {
  let api: TestApi;
  let port: number;
  beforeAll(async () => {
    api = await buildTestApp({ MAX_HEADER_BYTES: '4096' });
    port = await listen(api);
  });
  afterAll(() => api.close());

  it('headers over MAX_HEADER_BYTES are a 431 with a JSON detail, and the connection closes', async () => {
    const answer = await exchange(port, [`GET /health HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(5000)}\r\n\r\n`]);
    const { status, body, headers } = parseAnswer(answer.text);
    expect(status).toBe(431);
    expect(headers).toContain('connection: close');
    expect(body).toEqual({ detail: 'Request Header Fields Too Large: the request line and headers exceed the size limit' });
  });

  it('headers under the limit are served', async () => {
    const answer = await exchange(port, [`GET /health HTTP/1.1\r\nhost: x\r\nconnection: close\r\nx-big: ${'a'.repeat(3000)}\r\n\r\n`]);
    expect(parseAnswer(answer.text)).toMatchObject({ status: 200, body: { status: 'ok' } });
  });

  it('bytes that are not HTTP get a 400 with a JSON detail', async () => {
    const answer = await exchange(port, ['NOT HTTP AT ALL\r\n\r\n']);
    expect(parseAnswer(answer.text)).toMatchObject({ status: 400, body: { detail: 'Bad Request: the request is not valid HTTP/1.1' } });
  });
});

describe('slow senders', () => {
  let api: TestApi;
  let port: number;
  beforeAll(async () => {
    api = await buildTestApp({ HEADERS_TIMEOUT_MS: '400', REQUEST_TIMEOUT_MS: '800', KEEP_ALIVE_TIMEOUT_MS: '1500' });
    port = await listen(api);
  });
  afterAll(() => api.close());

  const timeout = { status: 408, body: { detail: 'Request Timeout: the request was not received in time' } };

  it('headers not finished within HEADERS_TIMEOUT_MS get a 408 and the connection closes', async () => {
    const pending = exchange(port, ['GET /health HTTP/1.1\r\nhost: x\r\n', 100, 'x-a: 1\r\n', 5000, 'x-b: 2\r\n\r\n']);
    // other clients are served meanwhile (the slow one holds its connection for seconds)
    expect(await health(port)).toBeLessThan(1000);
    const answer = await pending;
    expect(parseAnswer(answer.text)).toMatchObject(timeout);
    expect(answer.ms).toBeGreaterThanOrEqual(350);
    expect(answer.ms).toBeLessThan(2000);
  });

  it('a body not finished within REQUEST_TIMEOUT_MS gets a 408 and nothing is stored', async () => {
    const ws = uniqueId();
    const body = JSON.stringify({ id: ws });
    const head = `POST /v3/workspaces HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`;
    const answer = await exchange(port, [head, body.slice(0, 5), 200, body.slice(5, 8), 5000, body.slice(8)]);
    expect(parseAnswer(answer.text)).toMatchObject(timeout);
    expect(answer.ms).toBeGreaterThanOrEqual(750);
    expect(answer.ms).toBeLessThan(2500);
    expect((await api.post('/v3/workspaces/list', { filters: { id: ws } })).body.items).toEqual([]);
  });

  it('an idle keep-alive connection is closed after KEEP_ALIVE_TIMEOUT_MS, not before', async () => {
    const answer = await exchange(port, ['GET /health HTTP/1.1\r\nhost: x\r\n\r\n', 8000]);
    expect(parseAnswer(answer.text).status).toBe(200);
    expect(parseAnswer(answer.text).headers).toContain('keep-alive');
    // longer than the header and request limits, so neither closed it
    expect(answer.ms).toBeGreaterThanOrEqual(1400);
    expect(answer.ms).toBeLessThan(5000);
  });

  it('a connection that never sends anything is closed', async () => {
    const answer = await exchange(port, [5000]);
    expect(answer.ms).toBeLessThan(2500);
  });
});

describe('open connections', () => {
  let api: TestApi;
  let port: number;
  beforeAll(async () => {
    api = await buildTestApp({ MAX_CONNECTIONS: '3' });
    port = await listen(api);
  });
  afterAll(() => api.close());

  const open = () => openSocket(port);
  const ask = askHealth;

  it('connections over MAX_CONNECTIONS are closed at once; a freed slot is usable again', async () => {
    const held = [await open(), await open(), await open()];
    for (const socket of held) expect(await ask(socket)).toBe(200);

    const extra = await open();
    expect(await ask(extra)).toBe('closed');

    held[0].destroy();
    await new Promise((r) => setTimeout(r, 100));
    const again = await open();
    expect(await ask(again)).toBe(200);
    // the held connections still work
    expect(await ask(held[1])).toBe(200);
    for (const socket of [...held, again]) socket.destroy();
  });
});
