import { Honcho } from '@honcho-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { minimalPdf } from '../../support/minimal-pdf.js';
import { multipartBody, type FormPart } from '../../support/multipart.js';
import { startSdkServer, type SdkServer } from '../../support/sdk-server.js';
import { buildTestApp, uniqueId, type TestApi, type TestResponse } from '../../support/test-app.js';

/*
 * File upload into messages (contract-v3 §7.4, §1.3, §2.5, §6, §9.1), v3 and its v2 twin.
 * Expected values come from each test's own input and the contract's texts.
 */

const MAX_FILE_SIZE = 5 * 1024 * 1024;
const SUPPORTED = "Supported types: ['PDFProcessor', 'TextProcessor', 'JSONProcessor']";

let api: TestApi;
beforeAll(async () => {
  api = await buildTestApp();
});
afterAll(() => api.close());

const uploadUrl = (ws: string, s = 's', generation = 'v3') => `/${generation}/workspaces/${ws}/sessions/${s}/messages/upload`;

async function send(url: string, payload: Buffer | string, headers: Record<string, string>, on: TestApi = api): Promise<TestResponse> {
  const response = await on.app.inject({ method: 'POST', url, payload, headers });
  let body: unknown;
  try {
    body = JSON.parse(response.body);
  } catch {
    body = response.body;
  }
  return { status: response.statusCode, headers: response.headers, text: response.body, body };
}

async function upload(url: string, parts: FormPart[], options: { token?: string; on?: TestApi } = {}): Promise<TestResponse> {
  const { payload, contentType } = multipartBody(parts);
  const headers: Record<string, string> = { 'content-type': contentType };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  return send(url, payload, headers, options.on);
}

const file = (value: string | Uint8Array, contentType: string | undefined, filename = 'upload.bin'): FormPart => ({
  name: 'file',
  value,
  filename,
  contentType,
});
const field = (name: string, value: string): FormPart => ({ name, value });

async function messagesOf(ws: string, s = 's') {
  const response = await api.post(`/v3/workspaces/${ws}/sessions/${s}/messages/list?size=100`, {});
  expect(response.status).toBe(200);
  return response.body as { total: number; items: { content: string; peer_id: string; metadata: unknown; created_at: string }[] };
}

/** Nothing was written: no message, no auto-created peer. */
async function expectNothingWritten(ws: string) {
  expect((await messagesOf(ws)).total).toBe(0);
  const peers = await api.post(`/v3/workspaces/${ws}/peers/list`, {});
  expect([peers.status, peers.body.total]).toEqual([200, 0]);
}

describe('POST /v3/.../messages/upload: readable files', () => {
  it('turns a text file into one message, creating and joining the sender (201)', async () => {
    const ws = uniqueId();
    const text = 'Hello there, how are you today?\nSecond line.';
    const response = await upload(uploadUrl(ws), [file(text, 'text/plain', 'notes.txt'), field('peer_id', 'alice')]);
    expect(response.status, response.text).toBe(201);
    expect(response.body).toHaveLength(1);
    const [message] = response.body;
    expect(Object.keys(message)).toEqual(['id', 'content', 'peer_id', 'session_id', 'metadata', 'created_at', 'workspace_id', 'token_count']);
    expect(message).toMatchObject({ content: text, peer_id: 'alice', session_id: 's', workspace_id: ws, metadata: {} });
    expect(message.id).toMatch(/^[A-Za-z0-9_-]{21}$/);
    expect(message.token_count).toBeGreaterThan(0);

    expect((await messagesOf(ws)).items.map((m) => m.content)).toEqual([text]);
    const members = await api.get(`/v3/workspaces/${ws}/sessions/s/peers`);
    expect(members.body.items.map((p: { id: string }) => p.id)).toEqual(['alice']);
    expect((await api.get(`/v3/workspaces/${ws}/sessions/s/peers/alice/config`)).body).toEqual({ observe_me: null, observe_others: null });
  });

  it('reads markdown and any other text/* type verbatim, including UTF-8 text', async () => {
    const ws = uniqueId();
    const markdown = '# Title\n\n- one\n- two ✓\n\n```ts\nconst x = 1;\n```\n';
    const md = await upload(uploadUrl(ws), [field('peer_id', 'alice'), file(markdown, 'text/markdown', 'README.md')]);
    expect(md.status, md.text).toBe(201);
    expect(md.body[0].content).toBe(markdown);
    const csv = await upload(uploadUrl(ws), [field('peer_id', 'alice'), file('a,b\n1,2\n', 'text/csv; charset=utf-8')]);
    expect(csv.body[0].content).toBe('a,b\n1,2\n');
  });

  it('reads UTF-16 text with a byte-order mark and Latin-1 text', async () => {
    const ws = uniqueId();
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('café ☕', 'utf16le')]);
    expect((await upload(uploadUrl(ws), [field('peer_id', 'a'), file(utf16, 'text/plain')])).body[0].content).toBe('café ☕');
    const latin1 = Buffer.from('café crème', 'latin1');
    expect((await upload(uploadUrl(ws), [field('peer_id', 'a'), file(latin1, 'text/plain')])).body[0].content).toBe('café crème');
  });

  it('stores a JSON file as one line in the reference layout', async () => {
    const ws = uniqueId();
    const source = '{\n  "name": "café",\n  "tags": ["a", "b"],\n  "ratio": 2.0,\n  "big": 12345678901234567890,\n  "nested": {"ok": true, "none": null, "line": "x\\ny"}\n}\n';
    const response = await upload(uploadUrl(ws), [file(source, 'application/json', 'data.json'), field('peer_id', 'alice')]);
    expect(response.status, response.text).toBe(201);
    // json.dumps(json.loads(source), ensure_ascii=False): ", " and ": ", non-ASCII kept, 2.0 and big ints exact
    expect(response.body[0].content).toBe(
      '{"name": "café", "tags": ["a", "b"], "ratio": 2.0, "big": 12345678901234567890, "nested": {"ok": true, "none": null, "line": "x\\ny"}}',
    );
  });

  it('extracts the text of a PDF page by page', async () => {
    const ws = uniqueId();
    const pdf = minimalPdf([['Hello from page one', 'Second line'], [], ['Third page']]);
    const response = await upload(uploadUrl(ws), [file(pdf, 'application/pdf', 'doc.pdf'), field('peer_id', 'alice')]);
    expect(response.status, response.text).toBe(201);
    expect(response.body).toHaveLength(1);
    // the empty page 2 is left out; each page with text is headed by its number
    expect(response.body[0].content).toBe('[Page 1]\nHello from page one\nSecond line\n\n[Page 3]\nThird page');
  });

  it('splits a 60,000-character text at paragraph breaks into pieces of at most 25,000 characters', async () => {
    const ws = uniqueId();
    // paragraphs of 1,200 characters (sentences and words inside) plus a blank line: 1,202 each
    const sentence = 'Lorem ipsum dolor sit amet. ';
    const paragraph = sentence.repeat(43).slice(0, 1200 - 4) + 'end.';
    const paragraphs = Array.from({ length: 49 }, () => paragraph);
    const last = 'x'.repeat(60_000 - 49 * 1202);
    const text = [...paragraphs, last].join('\n\n');
    expect(text).toHaveLength(60_000);

    const response = await upload(uploadUrl(ws), [file(text, 'text/plain'), field('peer_id', 'alice')]);
    expect(response.status, response.text).toBe(201);
    const contents: string[] = response.body.map((m: { content: string }) => m.content);
    // a window of 25,000 holds 20 whole paragraphs (24,040 characters); the rest follows
    expect(contents.map((c) => c.length)).toEqual([24_040, 24_040, 11_920]);
    for (const piece of contents) expect(piece.length).toBeLessThanOrEqual(25_000);
    expect(contents[0].endsWith('\n\n')).toBe(true);
    expect(contents[1].endsWith('\n\n')).toBe(true);
    expect(contents.join('')).toBe(text);
    expect(new Set(response.body.map((m: { created_at: string }) => m.created_at)).size).toBe(1);
    expect((await messagesOf(ws)).items.map((m) => m.content)).toEqual(contents);
  });

  it('applies metadata and created_at from the form to every message', async () => {
    const ws = uniqueId();
    const text = `${'alpha '.repeat(4_000)}\n${'beta '.repeat(4_000)}`;
    const response = await upload(uploadUrl(ws), [
      file(text, 'text/plain'),
      field('peer_id', 'alice'),
      field('metadata', '{"source": "upload", "n": 1}'),
      field('configuration', '{"reasoning": {"enabled": false}}'),
      field('created_at', '2024-05-01T12:34:56.5Z'),
    ]);
    expect(response.status, response.text).toBe(201);
    expect(response.body).toHaveLength(2);
    for (const message of response.body) {
      expect(message.metadata).toEqual({ source: 'upload', n: 1 });
      expect(message.created_at).toBe('2024-05-01T12:34:56.500000Z');
    }
  });

  it('ignores optional fields that do not parse', async () => {
    const ws = uniqueId();
    const before = Date.now();
    const response = await upload(uploadUrl(ws), [
      file('hello', 'text/plain'),
      field('peer_id', 'alice'),
      field('metadata', '{not json'),
      field('configuration', 'nope'),
      field('created_at', 'yesterday at noon'),
    ]);
    expect(response.status, response.text).toBe(201);
    expect(response.body[0].metadata).toEqual({});
    expect(Date.parse(response.body[0].created_at)).toBeGreaterThanOrEqual(before - 1000);
  });

  it('makes one empty message from an empty file', async () => {
    const ws = uniqueId();
    const response = await upload(uploadUrl(ws), [file('', 'text/plain'), field('peer_id', 'alice')]);
    expect(response.status).toBe(201);
    expect(response.body.map((m: { content: string; token_count: number }) => [m.content, m.token_count])).toEqual([['', 0]]);
  });
});

describe('POST /v3/.../messages/upload: refusals, before anything is written', () => {
  it('415 for an unsupported type, naming the type as sent', async () => {
    const ws = uniqueId();
    const png = await upload(uploadUrl(ws), [file(Buffer.from([0x89, 0x50, 0x4e, 0x47]), 'image/png'), field('peer_id', 'alice')]);
    expect(png.status).toBe(415);
    expect(png.body).toEqual({ detail: `Unsupported file type: image/png. ${SUPPORTED}` });
    const untyped = await upload(uploadUrl(ws), [file('x', undefined), field('peer_id', 'alice')]);
    expect(untyped.status).toBe(415);
    expect(untyped.body).toEqual({ detail: `Unsupported file type: None. ${SUPPORTED}` });
    await expectNothingWritten(ws);
  });

  it('413 for a file over 5 MiB, with its size', async () => {
    const ws = uniqueId();
    const response = await upload(uploadUrl(ws), [file(Buffer.alloc(MAX_FILE_SIZE + 1, 0x61), 'text/plain'), field('peer_id', 'alice')]);
    expect(response.status).toBe(413);
    expect(response.body).toEqual({ detail: `File size (${MAX_FILE_SIZE + 1} bytes) exceeds maximum allowed size (${MAX_FILE_SIZE} bytes)` });
    await expectNothingWritten(ws);
  });

  it('accepts a file of exactly 5 MiB', async () => {
    const ws = uniqueId();
    const text = 'word '.repeat(MAX_FILE_SIZE / 5 + 1).slice(0, MAX_FILE_SIZE);
    const response = await upload(uploadUrl(ws), [file(text, 'text/plain'), field('peer_id', 'alice')]);
    expect(response.status).toBe(201);
    // 5,000 words fill each 25,000-character window exactly, so every piece but the last is full
    expect(response.body).toHaveLength(Math.ceil(MAX_FILE_SIZE / 25_000));
    expect(response.body.map((m: { content: string }) => m.content).join('')).toBe(text);
  });

  it('413 with the same body for a request too big to keep, its size standing in for the file', async () => {
    const ws = uniqueId();
    const { payload, contentType } = multipartBody([file(Buffer.alloc(8 * 1024 * 1024, 0x61), 'text/plain'), field('peer_id', 'alice')]);
    const response = await send(uploadUrl(ws), payload, { 'content-type': contentType });
    expect(response.status).toBe(413);
    expect(response.body).toEqual({ detail: `File size (${payload.length} bytes) exceeds maximum allowed size (${MAX_FILE_SIZE} bytes)` });
    // read to its end, so the connection stays usable
    expect(response.headers.connection).not.toBe('close');
    await expectNothingWritten(ws);
  });

  it('413 without reading a body declared larger than 64 MiB, closing the connection', async () => {
    const ws = uniqueId();
    const { payload, contentType } = multipartBody([file('x', 'text/plain'), field('peer_id', 'alice')]);
    const declared = 100 * 1024 * 1024;
    const response = await send(uploadUrl(ws), payload, { 'content-type': contentType, 'content-length': String(declared) });
    expect(response.status).toBe(413);
    expect(response.body).toEqual({ detail: `File size (${declared} bytes) exceeds maximum allowed size (${MAX_FILE_SIZE} bytes)` });
    expect(response.headers.connection).toBe('close');
    await expectNothingWritten(ws);
  });

  it('422 for JSON that is not UTF-8 or not valid', async () => {
    const ws = uniqueId();
    const latin1 = await upload(uploadUrl(ws), [file(Buffer.from('{"name": "café"}', 'latin1'), 'application/json'), field('peer_id', 'a')]);
    expect(latin1.status).toBe(422);
    expect(latin1.body).toEqual({ detail: 'JSON uploads must be UTF-8 encoded' });
    for (const bad of ['{"a": 1,}', '{"a" 1}', "{'a': 1}", '[1, 2', '{"a": 1} extra']) {
      const response = await upload(uploadUrl(ws), [file(bad, 'application/json'), field('peer_id', 'a')]);
      expect(response.status, bad).toBe(422);
      expect(response.body).toEqual({ detail: 'Uploaded JSON is invalid' });
    }
    await expectNothingWritten(ws);
  });

  it('422 list for missing form fields, peer_id first (contract §6)', async () => {
    const ws = uniqueId();
    const missing = (name: string) => ({ type: 'missing', loc: ['body', name], msg: 'Field required', input: null });
    const neither = await upload(uploadUrl(ws), [field('metadata', '{}')]);
    expect(neither.status).toBe(422);
    expect(neither.body).toEqual({ detail: [missing('peer_id'), missing('file')] });

    const noFile = await upload(uploadUrl(ws), [field('peer_id', 'alice')]);
    expect(noFile.body).toEqual({ detail: [missing('file')] });
    // an empty text value counts as not sent
    const emptyPeer = await upload(uploadUrl(ws), [file('x', 'text/plain'), field('peer_id', '')]);
    expect(emptyPeer.body).toEqual({ detail: [missing('peer_id')] });
    // `file` sent as a text field, not a file
    const textFile = await upload(uploadUrl(ws), [field('file', 'just text'), field('peer_id', 'alice')]);
    expect(textFile.body).toEqual({
      detail: [
        { type: 'value_error', loc: ['body', 'file'], msg: "Value error, Expected UploadFile, received: <class 'str'>", input: 'just text', ctx: { error: {} } },
      ],
    });
    // a body that is not a form reads as an empty one
    const json = await api.post(uploadUrl(ws), { peer_id: 'alice' });
    expect(json.status).toBe(422);
    expect(json.body).toEqual({ detail: [missing('peer_id'), missing('file')] });
    await expectNothingWritten(ws);
  });

  it('422 for an invalid peer id and for metadata that is not an object or over the limits', async () => {
    const ws = uniqueId();
    const badPeer = await upload(uploadUrl(ws), [file('x', 'text/plain'), field('peer_id', 'not valid!')]);
    expect(badPeer.status).toBe(422);
    expect(badPeer.body.detail[0]).toMatchObject({ type: 'string_pattern_mismatch', loc: ['body', 'peer_id'], input: 'not valid!' });

    const list = await upload(uploadUrl(ws), [file('x', 'text/plain'), field('peer_id', 'alice'), field('metadata', '[1, 2]')]);
    expect(list.status).toBe(422);
    expect(list.body.detail).toEqual([{ type: 'dict_type', loc: ['body', 'metadata'], msg: 'Input should be a valid dictionary', input: [1, 2] }]);

    const wide = JSON.stringify(Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, i])));
    const tooWide = await upload(uploadUrl(ws), [file('x', 'text/plain'), field('peer_id', 'alice'), field('metadata', wide)]);
    expect(tooWide.status).toBe(422);
    expect(tooWide.body.detail[0]).toMatchObject({ type: 'value_error', loc: ['body', 'metadata'], msg: 'Value error, Metadata exceeds maximum of 100 top-level keys' });
    await expectNothingWritten(ws);
  });

  it('400 for a multipart body without boundary or with a broken structure', async () => {
    const ws = uniqueId();
    const noBoundary = await send(uploadUrl(ws), 'whatever', { 'content-type': 'multipart/form-data' });
    expect(noBoundary.status).toBe(400);
    expect(noBoundary.body).toEqual({ detail: 'Missing boundary in multipart.' });
    const garbage = await send(uploadUrl(ws), 'this is not multipart', { 'content-type': 'multipart/form-data; boundary=abc' });
    expect(garbage.status).toBe(400);
    expect(garbage.body).toEqual({ detail: 'There was an error parsing the body' });
  });

  it('404 for a deleted session, and nothing is added to it', async () => {
    const ws = uniqueId();
    expect((await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's' })).status).toBe(201);
    expect((await api.delete(`/v3/workspaces/${ws}/sessions/s`)).status).toBe(202);
    const response = await upload(uploadUrl(ws), [file('x', 'text/plain'), field('peer_id', 'alice')]);
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ detail: `Session s not found in workspace ${ws}` });
    expect((await messagesOf(ws)).total).toBe(0);
  });
});

describe('POST /v2/.../messages/upload', () => {
  it('answers 200 with the messages', async () => {
    const ws = uniqueId();
    const response = await upload(uploadUrl(ws, 's', 'v2'), [file('hello v2', 'text/plain'), field('peer_id', 'alice')]);
    expect(response.status, response.text).toBe(200);
    expect(response.body).toHaveLength(1);
    expect(response.body[0]).toMatchObject({ content: 'hello v2', peer_id: 'alice', session_id: 's', workspace_id: ws });
  });

  it('has the same refusals', async () => {
    const ws = uniqueId();
    const png = await upload(uploadUrl(ws, 's', 'v2'), [file('x', 'image/png'), field('peer_id', 'alice')]);
    expect(png.status).toBe(415);
    const missing = await upload(uploadUrl(ws, 's', 'v2'), [field('peer_id', 'alice')]);
    expect(missing.status).toBe(422);
    expect(missing.body).toEqual({ detail: [{ type: 'missing', loc: ['body', 'file'], msg: 'Field required', input: null }] });
  });
});

describe('upload with authentication on (scope WS, contract §2.5)', () => {
  let authed: TestApi;
  beforeAll(async () => {
    authed = await buildTestApp({ AUTH_USE_AUTH: 'true' });
  });
  afterAll(() => authed.close());

  it('lets admin, workspace and matching session tokens upload; refuses the rest with 401', async () => {
    const ws = uniqueId();
    const parts = [file('hi', 'text/plain'), field('peer_id', 'alice')];
    const url = uploadUrl(ws);
    const noToken = await upload(url, parts, { on: authed });
    expect(noToken.status).toBe(401);
    expect(noToken.body).toEqual({ detail: 'No access token provided' });
    const otherSession = await upload(url, parts, { on: authed, token: authed.token({ workspaceId: ws, sessionId: 'other' }) });
    expect(otherSession.status).toBe(401);
    expect(otherSession.body).toEqual({ detail: 'JWT not permissioned for this resource' });
    const otherWorkspace = await upload(url, parts, { on: authed, token: authed.token({ workspaceId: uniqueId() }) });
    expect(otherWorkspace.status).toBe(401);

    for (const token of [
      authed.token({ isAdmin: true }),
      authed.token({ workspaceId: ws }),
      authed.token({ workspaceId: ws, sessionId: 's' }),
    ]) {
      expect((await upload(url, parts, { on: authed, token })).status).toBe(201);
    }
  });

  it('authenticates before validating and before the size check, but after reading the form', async () => {
    const ws = uniqueId();
    const url = uploadUrl(ws);
    expect((await upload(url, [field('metadata', '{}')], { on: authed })).status).toBe(401);
    expect((await upload(url, [file(Buffer.alloc(MAX_FILE_SIZE + 1), 'text/plain'), field('peer_id', 'a')], { on: authed })).status).toBe(401);
    const tooBig = multipartBody([file(Buffer.alloc(8 * 1024 * 1024), 'text/plain')]);
    expect((await send(url, tooBig.payload, { 'content-type': tooBig.contentType }, authed)).status).toBe(401);
    // a malformed body is refused before the token is looked at (§1.3)
    const garbage = await send(url, 'garbage', { 'content-type': 'multipart/form-data; boundary=abc' }, authed);
    expect(garbage.status).toBe(400);
  });
});

describe('upload over a real connection', () => {
  let server: SdkServer;
  beforeAll(async () => {
    server = await startSdkServer();
  });
  afterAll(() => server.close());

  it('reads a form encoded by fetch (FormData)', async () => {
    const ws = uniqueId();
    const form = new FormData();
    form.append('file', new Blob(['line one\nline two'], { type: 'text/plain' }), 'notes.txt');
    form.append('peer_id', 'alice');
    form.append('metadata', JSON.stringify({ via: 'fetch' }));
    const response = await fetch(`${server.baseURL}${uploadUrl(ws)}`, { method: 'POST', body: form });
    expect(response.status).toBe(201);
    const body = await response.json();
    expect(body).toMatchObject([{ content: 'line one\nline two', peer_id: 'alice', metadata: { via: 'fetch' } }]);
  });

  it('serves the official SDK’s uploadFile', async () => {
    const ws = uniqueId();
    const honcho = new Honcho({ baseURL: server.baseURL, workspaceId: ws, maxRetries: 0 });
    const session = await honcho.session('s');
    const messages = await session.uploadFile(
      { filename: 'data.json', content: Buffer.from('{"a": [1, 2]}'), content_type: 'application/json' },
      'alice',
      { metadata: { kind: 'json' }, createdAt: '2024-01-02T03:04:05Z' },
    );
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({ content: '{"a": [1, 2]}', peerId: 'alice', metadata: { kind: 'json' } });
    expect(new Date(messages[0].createdAt).toISOString()).toBe('2024-01-02T03:04:05.000Z');
  });
});
