import { Agent, request as httpRequest } from 'node:http';
import fc from 'fast-check';
import { addPrototypeKey, invalidUtf8, oddPathSegment, oddQueryValue, rawBodyText, replaceSomewhere } from './mutations.js';
import { valueFor, type FixtureIds, type JsonSchema } from './schema-values.js';

/**
 * Sends valid and mutated requests to every operation of Engram's own `/openapi.json` and checks
 * what comes back: no 5xx, error bodies in the contract's JSON shape, an answer within the time
 * limit, and a server that is still running.
 */

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required?: boolean;
  schema: JsonSchema;
}

export interface Operation {
  /** "POST /v3/workspaces/{workspace_id}/peers" */
  id: string;
  method: string;
  path: string;
  generation: 'v1' | 'v2' | 'v3';
  parameters: Parameter[];
  jsonBody?: JsonSchema;
  multipart: boolean;
}

export interface FuzzRequest {
  method: string;
  /** Path and query, percent-encoded as sent. */
  url: string;
  contentType?: string;
  body?: Buffer;
  authorization?: string;
  /** What kind of body was sent, for failure reports. */
  shape: string;
}

export interface FuzzResponse {
  status: number;
  contentType: string;
  text: string;
  ms: number;
}

export interface FuzzFailure {
  operation: string;
  seed: number;
  report: string;
}

export interface FuzzOptions {
  baseUrl: string;
  seed: number;
  runsPerOperation: number;
  /** Only operations whose id contains this text. */
  only?: string;
  /** A request without an answer in this time is a hang. */
  timeoutMs?: number;
  /** Is the server process still running? Checked after every request that failed to connect. */
  isAlive?: () => boolean;
  /** Stop at the first failing operation. */
  stopOnFailure?: boolean;
  /**
   * With auth on: the admin's Authorization header (fixtures and most requests use it) and
   * others to mix in (scoped, expired, malformed ...).
   */
  auth?: {
    admin: string;
    others: string[];
    /** A token for another workspace: none of its successes may touch the fixture's workspace. */
    foreign?: string;
  };
  log?: (line: string) => void;
}

export interface FuzzResult {
  operations: number;
  requests: number;
  statuses: Record<number, number>;
  /** Statuses seen per operation: how deep the requests reached. */
  statusesByOperation: Record<string, Record<number, number>>;
  failures: FuzzFailure[];
  slowestMs: number;
}

/** A request line this long may exceed the server's header limit (16 KiB by default). */
const OVERSIZE_URL = 8_192;

// enough sockets for runConcurrentFuzz's requests in flight; runFuzz sends one at a time
const agent = new Agent({ keepAlive: true, maxSockets: 64 });

/** Reads the operations of a served OpenAPI document, in a stable order. */
export function operationsOf(document: { paths: Record<string, Record<string, { parameters?: Parameter[]; requestBody?: { content: Record<string, { schema: JsonSchema }> } }>> }): Operation[] {
  const out: Operation[] = [];
  for (const [path, methods] of Object.entries(document.paths)) {
    for (const [method, spec] of Object.entries(methods)) {
      const generation = path.slice(1, 3) as Operation['generation'];
      const content = spec.requestBody?.content ?? {};
      out.push({
        id: `${method.toUpperCase()} ${path}`,
        method: method.toUpperCase(),
        path,
        generation,
        parameters: spec.parameters ?? [],
        jsonBody: content['application/json']?.schema,
        multipart: content['multipart/form-data'] !== undefined,
      });
    }
  }
  return out.sort((a, b) => a.id.localeCompare(b.id));
}

/** One HTTP exchange with full control over the bytes of the path and body. */
export function send(baseUrl: string, req: FuzzRequest, timeoutMs: number): Promise<FuzzResponse> {
  const { hostname, port } = new URL(baseUrl);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = {};
    if (req.contentType !== undefined) headers['content-type'] = req.contentType;
    if (req.body !== undefined) headers['content-length'] = req.body.length;
    if (req.authorization !== undefined) headers.authorization = req.authorization;
    const outgoing = httpRequest({ agent, hostname, port, method: req.method, path: req.url, headers }, (incoming) => {
      const chunks: Buffer[] = [];
      incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
      incoming.on('error', reject);
      incoming.on('end', () =>
        resolve({
          status: incoming.statusCode ?? 0,
          contentType: String(incoming.headers['content-type'] ?? ''),
          text: Buffer.concat(chunks).toString('utf8'),
          ms: performance.now() - started,
        }),
      );
    });
    outgoing.setTimeout(timeoutMs, () => outgoing.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    outgoing.on('error', reject);
    outgoing.end(req.body);
  });
}

/** What a response must be, whatever the request was. Returns the violation, if any. */
export function violation(op: Operation, response: FuzzResponse): string | undefined {
  // chat without a dialectic model is a deliberate 503 (docs/reasoning.md, Chat); any other 5xx is a defect
  const chatWithoutModel = response.status === 503 && op.path.endsWith('/chat') && response.text.startsWith('{"detail":"Chat needs a dialectic model and none is configured');
  if (response.status >= 500 && !chatWithoutModel) return `status ${response.status}: ${response.text.slice(0, 300)}`;
  if (response.status < 400) {
    if (response.text !== '' && response.contentType.startsWith('application/json')) {
      try {
        JSON.parse(response.text);
      } catch {
        return `status ${response.status} with a body that is not JSON: ${response.text.slice(0, 200)}`;
      }
    }
    return undefined;
  }
  if (!response.contentType.startsWith('application/json')) return `status ${response.status} with content-type '${response.contentType}'`;
  let body: unknown;
  try {
    body = JSON.parse(response.text);
  } catch {
    return `status ${response.status} with a body that is not JSON: ${response.text.slice(0, 200)}`;
  }
  if (body === null || typeof body !== 'object' || !('detail' in body)) return `status ${response.status} without 'detail': ${response.text.slice(0, 200)}`;
  const detail = (body as { detail: unknown }).detail;
  if (typeof detail === 'string') return detail.length > 0 ? undefined : `status ${response.status} with an empty detail`;
  if (response.status !== 422 || !Array.isArray(detail)) return `status ${response.status} with detail ${JSON.stringify(detail).slice(0, 200)}`;
  if (detail.length === 0) return '422 with an empty detail list';
  for (const item of detail as unknown[]) {
    const entry = item as Record<string, unknown>;
    if (entry === null || typeof entry !== 'object') return `422 item is not an object: ${JSON.stringify(item)}`;
    if (!Array.isArray(entry.loc) || typeof entry.msg !== 'string' || typeof entry.type !== 'string') return `422 item without loc/msg/type: ${JSON.stringify(item).slice(0, 200)}`;
    if (!entry.loc.every((step) => typeof step === 'string' || Number.isInteger(step))) return `422 loc with a step that is neither a name nor an index: ${JSON.stringify(entry.loc)}`;
    if (op.generation !== 'v1' && !('input' in entry)) return `422 item without input on ${op.generation}: ${JSON.stringify(item).slice(0, 200)}`;
  }
  return undefined;
}

/** A success for a token of another workspace that reaches the fixture's workspace. */
function trespass(foreign: string | undefined, ids: FixtureIds, req: FuzzRequest, response: FuzzResponse): string | undefined {
  if (foreign === undefined || req.authorization !== foreign || response.status >= 300) return undefined;
  const reached = [ids.workspace, ids.app].find((id) => req.url.includes(id) || response.text.includes(id));
  return reached === undefined ? undefined : `a token for another workspace got ${response.status} touching ${reached}: ${response.text.slice(0, 200)}`;
}

async function callAs(baseUrl: string, method: string, path: string, body: unknown, authorization: string | undefined): Promise<any> {
  const response = await send(
    baseUrl,
    { method, url: path, shape: 'fixture', contentType: 'application/json', authorization, body: body === undefined ? undefined : Buffer.from(JSON.stringify(body)) },
    30_000,
  );
  if (response.status >= 300) throw new Error(`fixture: ${method} ${path} answered ${response.status}: ${response.text}`);
  return response.text === '' ? undefined : JSON.parse(response.text);
}

/** A workspace with two peers, a session with messages, a conclusion, a webhook and v1 rows. */
export async function createFixture(baseUrl: string, tag: string, authorization?: string): Promise<{ v1: FixtureIds; current: FixtureIds }> {
  const call = (method: string, path: string, body?: unknown) => callAs(baseUrl, method, path, body, authorization);
  const w = `fz-${tag}`;
  const peers = ['alice', 'bob'];
  await call('POST', '/v3/workspaces', { id: w });
  await call('POST', `/v3/workspaces/${w}/sessions`, { id: 's1', peers: { alice: {}, bob: { observe_others: true } } });
  const created = await call('POST', `/v3/workspaces/${w}/sessions/s1/messages`, {
    messages: [
      { peer_id: 'alice', content: 'I moved to Lisbon last spring', metadata: { topic: 'home' } },
      { peer_id: 'bob', content: 'How do you like the weather there?' },
      { peer_id: 'alice', content: 'Sunny, and I go swimming on weekends' },
    ],
  });
  const conclusions = await call('POST', `/v3/workspaces/${w}/conclusions`, {
    conclusions: [{ content: 'Alice lives in Lisbon', observer_id: 'bob', observed_id: 'alice', session_id: 's1' }],
  });
  const endpoint = await call('POST', `/v3/workspaces/${w}/webhooks`, { url: 'https://example.com/hook' });
  const app = await call('GET', `/v1/apps/get_or_create/${w}`);
  const user = await call('GET', `/v1/apps/${app.id}/users/get_or_create/alice`);
  const session = await call('POST', `/v1/apps/${app.id}/users/${user.id}/sessions`, {});
  const message = await call('POST', `/v1/apps/${app.id}/users/${user.id}/sessions/${session.id}/messages`, { content: 'hello from v1', is_user: true });
  const meta = await call('POST', `/v1/apps/${app.id}/users/${user.id}/metamessages`, { metamessage_type: 'fact', content: 'likes swimming', session_id: session.id });
  const current: FixtureIds = {
    workspace: w,
    peers,
    session: 's1',
    messages: (created as { id: string }[]).map((m) => m.id),
    conclusion: (conclusions as { id: string }[])[0].id,
    endpoint: endpoint.id,
    app: app.id,
    user: user.id,
    metamessage: meta.id,
  };
  return { current, v1: { ...current, session: session.id, messages: [message.id] } };
}

const encodeSegment = (value: unknown) => encodeURIComponent(String(value).replace(/[\ud800-\udfff]/g, '\ufffd'));

function queryValue(value: unknown): string {
  return encodeSegment(typeof value === 'string' ? value : JSON.stringify(value));
}

function pathArbitrary(op: Operation, ids: FixtureIds): fc.Arbitrary<string> {
  const segments = op.path.split('/').map((segment) => {
    const match = /^\{(.+)\}$/.exec(segment);
    if (match === null) return fc.constant(segment);
    const param = op.parameters.find((p) => p.in === 'path' && p.name === match[1]);
    const valid = valueFor(param?.schema ?? { type: 'string' }, ids, match[1]).map(encodeSegment);
    return fc.oneof({ arbitrary: valid, weight: 8 }, { arbitrary: oddPathSegment, weight: 1 });
  });
  return fc.tuple(...segments).map((parts) => parts.join('/'));
}

function queryArbitrary(op: Operation, ids: FixtureIds): fc.Arbitrary<string> {
  const params = op.parameters.filter((p) => p.in === 'query');
  const each = params.map((p) =>
    fc.oneof(
      { arbitrary: fc.constant<string[]>([]), weight: 3 },
      { arbitrary: valueFor(p.schema, ids, p.name).map((v) => [`${p.name}=${queryValue(v)}`]), weight: 4 },
      { arbitrary: oddQueryValue.map((v) => [`${p.name}=${v}`]), weight: 1 },
      { arbitrary: fc.tuple(oddQueryValue, oddQueryValue).map(([a, b]) => [`${p.name}=${a}`, `${p.name}=${b}`]), weight: 1 },
      { arbitrary: fc.constant([`${p.name}`]), weight: 1 },
    ),
  );
  const extra = fc.oneof({ arbitrary: fc.constant<string[]>([]), weight: 6 }, { arbitrary: oddQueryValue.map((v) => [`__proto__=${v}`]), weight: 1 }, { arbitrary: fc.constant(['&&=&']), weight: 1 });
  return fc.tuple(extra, ...each).map((lists) => {
    const pairs = lists.flat();
    return pairs.length === 0 ? '' : `?${pairs.join('&')}`;
  });
}

type Body = Pick<FuzzRequest, 'contentType' | 'body' | 'shape'>;

const json = (shape: string) => (value: unknown): Body => ({ contentType: 'application/json', body: Buffer.from(JSON.stringify(value) ?? 'null'), shape });

function jsonBodyArbitrary(schema: JsonSchema, ids: FixtureIds): fc.Arbitrary<Body> {
  const valid = valueFor(schema, ids, 'body');
  return fc.oneof(
    { arbitrary: valid.map(json('valid')), weight: 4 },
    { arbitrary: replaceSomewhere(valid).map(json('one value replaced')), weight: 3 },
    { arbitrary: addPrototypeKey(valid).map(json('prototype key added')), weight: 2 },
    { arbitrary: rawBodyText.map((text): Body => ({ contentType: 'application/json', body: Buffer.from(text), shape: 'raw text' })), weight: 2 },
    { arbitrary: invalidUtf8.map((bytes): Body => ({ contentType: 'application/json', body: bytes, shape: 'invalid UTF-8' })), weight: 1 },
    { arbitrary: fc.constant<Body>({ shape: 'no body' }), weight: 1 },
    {
      arbitrary: fc
        .tuple(valid, fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data', 'application/json; charset=latin1', 'application/xml', ''))
        .map(([value, contentType]): Body => ({ contentType, body: Buffer.from(JSON.stringify(value) ?? ''), shape: `valid JSON as '${contentType}'` })),
      weight: 1,
    },
  );
}

function multipartArbitrary(ids: FixtureIds): fc.Arbitrary<Body> {
  const boundary = 'fuzzboundary7MA4YWxk';
  const part = (name: string, value: string, file?: { filename: string; type: string }) =>
    `--${boundary}\r\nContent-Disposition: form-data; name="${name}"${file ? `; filename="${file.filename}"\r\nContent-Type: ${file.type}` : ''}\r\n\r\n${value}\r\n`;
  const valid = fc
    .record({
      text: fc.oneof(fc.string({ maxLength: 200 }), fc.constantFrom('', '{"a": 1}', 'x'.repeat(30_000))),
      type: fc.constantFrom('text/plain', 'text/markdown', 'application/json', 'application/pdf', 'image/png', ''),
      peer: fc.oneof(fc.constantFrom(...ids.peers), fc.string({ maxLength: 8 })),
      metadata: fc.option(fc.constantFrom('{"a":1}', 'not json', '[]', '{"__proto__":{"a":1}}')),
      createdAt: fc.option(fc.constantFrom('2024-01-01T00:00:00Z', 'yesterday')),
    })
    .map(({ text, type, peer, metadata, createdAt }): Body => {
      let payload = part('file', text, { filename: 'notes.txt', type }) + part('peer_id', peer);
      if (metadata !== null) payload += part('metadata', metadata);
      if (createdAt !== null) payload += part('created_at', createdAt);
      return { contentType: `multipart/form-data; boundary=${boundary}`, body: Buffer.from(`${payload}--${boundary}--\r\n`), shape: 'multipart' };
    });
  return fc.oneof(
    { arbitrary: valid, weight: 4 },
    { arbitrary: rawBodyText.map((text): Body => ({ contentType: `multipart/form-data; boundary=${boundary}`, body: Buffer.from(text), shape: 'broken multipart' })), weight: 1 },
    { arbitrary: fc.constant<Body>({ contentType: 'multipart/form-data', body: Buffer.from('--x\r\n\r\n'), shape: 'multipart without boundary' }), weight: 1 },
  );
}

export function requestArbitrary(op: Operation, ids: FixtureIds, auth?: FuzzOptions['auth']): fc.Arbitrary<FuzzRequest> {
  const body: fc.Arbitrary<Body> = op.jsonBody !== undefined ? jsonBodyArbitrary(op.jsonBody, ids) : op.multipart ? multipartArbitrary(ids) : fc.constant({ shape: 'no body' });
  const authorization: fc.Arbitrary<string | undefined> =
    auth === undefined
      ? fc.constant(undefined)
      : fc.oneof(
          { arbitrary: fc.constant(auth.admin), weight: 6 },
          { arbitrary: fc.constantFrom<string | undefined>(undefined, ...auth.others, ...(auth.foreign === undefined ? [] : [auth.foreign])), weight: 3 },
        );
  return fc
    .tuple(pathArbitrary(op, ids), queryArbitrary(op, ids), body, authorization)
    .map(([path, query, b, header]) => ({ method: op.method, url: path + query, ...b, authorization: header }));
}

function describe(req: FuzzRequest): string {
  const body = req.body === undefined ? '' : req.body.length > 400 ? `${req.body.subarray(0, 400).toString('utf8')}... (${req.body.length} bytes)` : req.body.toString('utf8');
  const url = req.url.length > 400 ? `${req.url.slice(0, 400)}... (${req.url.length} chars)` : req.url;
  const auth = req.authorization === undefined ? '' : `\nauthorization: ${req.authorization.slice(0, 120)}`;
  return `${req.method} ${url}${auth}\ncontent-type: ${req.contentType ?? '(none)'}; body (${req.shape}): ${body}`;
}

/** A per-operation seed, so one operation's failure can be replayed alone. */
export function operationSeed(seed: number, index: number): number {
  return (seed ^ Math.imul(index + 1, 0x9e3779b1)) | 0;
}

export async function runFuzz(options: FuzzOptions): Promise<FuzzResult> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const log = options.log ?? (() => undefined);
  const document = JSON.parse((await send(options.baseUrl, { method: 'GET', url: '/openapi.json', shape: 'none' }, 30_000)).text);
  const all = operationsOf(document);
  const result: FuzzResult = { operations: 0, requests: 0, statuses: {}, statusesByOperation: {}, failures: [], slowestMs: 0 };
  for (const [index, op] of all.entries()) {
    if (options.only !== undefined && !op.id.includes(options.only)) continue;
    result.operations++;
    const seed = operationSeed(options.seed, index);
    const fixture = await createFixture(options.baseUrl, `${(options.seed >>> 0).toString(36)}-${index}`, options.auth?.admin);
    const ids = op.generation === 'v1' ? fixture.v1 : fixture.current;
    const seen: Record<number, number> = (result.statusesByOperation[op.id] = {});
    const property = fc.asyncProperty(requestArbitrary(op, ids, options.auth), async (req) => {
      result.requests++;
      let response: FuzzResponse;
      try {
        response = await send(options.baseUrl, req, timeoutMs);
      } catch (error) {
        const alive = options.isAlive?.() ?? true;
        // Node refuses a request head over its header limit with 431 and closes the connection,
        // which the client may see as a reset while it is still writing.
        if (alive && req.url.length > OVERSIZE_URL) {
          seen[431] = (seen[431] ?? 0) + 1;
          return;
        }
        throw new Error(`${alive ? 'request failed' : 'the server process exited'}: ${(error as Error).message}\n${describe(req)}`);
      }
      result.statuses[response.status] = (result.statuses[response.status] ?? 0) + 1;
      seen[response.status] = (seen[response.status] ?? 0) + 1;
      result.slowestMs = Math.max(result.slowestMs, response.ms);
      const problem = violation(op, response) ?? trespass(options.auth?.foreign, ids, req, response);
      if (problem !== undefined) throw new Error(`${problem}\n${describe(req)}`);
    });
    const details = await fc.check(property, { seed, numRuns: options.runsPerOperation, endOnFailure: false });
    if (details.failed) {
      const error = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
      result.failures.push({ operation: op.id, seed, report: `${op.id} (operation seed ${seed}, shrunk ${details.numShrinks} times)\n${error}` });
      log(`FAIL ${op.id}\n${error}`);
      if (options.stopOnFailure === true) break;
    } else {
      log(`ok   ${op.id}`);
    }
  }
  return result;
}

export interface ConcurrentFuzzOptions {
  baseUrl: string;
  seed: number;
  /** Requests to send in all. */
  requests: number;
  /** Requests in flight at once. */
  inFlight: number;
  /** Workspaces (each a fixture) the requests share. */
  workspaces?: number;
  timeoutMs?: number;
  isAlive?: () => boolean;
}

/**
 * Requests of every operation at once, `inFlight` of them at a time, on a few shared workspaces:
 * deletes racing writes racing reads, as many clients of one server send them. Each request is
 * drawn as `runFuzz` draws it (request `i` from seed `operationSeed(seed, i)`), and each answer
 * is held to the same rules (no 5xx, the contract's error bodies, in time); the order in which
 * they meet on the server is not reproducible, so a failure is reported with its whole request.
 * The fixtures are made again as the requests delete them (every 200 requests, each skipped
 * when a delete interferes).
 */
export async function runConcurrentFuzz(options: ConcurrentFuzzOptions): Promise<FuzzResult> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const document = JSON.parse((await send(options.baseUrl, { method: 'GET', url: '/openapi.json', shape: 'none' }, 30_000)).text);
  const all = operationsOf(document);
  const tags = Array.from({ length: options.workspaces ?? 3 }, (_, i) => `${(options.seed >>> 0).toString(36)}-shared-${i}`);
  const fixtures = await Promise.all(tags.map((tag) => createFixture(options.baseUrl, tag)));
  const result: FuzzResult = { operations: all.length, requests: 0, statuses: {}, statusesByOperation: {}, failures: [], slowestMs: 0 };
  const remake = (index: number) =>
    createFixture(options.baseUrl, tags[index]).then(
      (fixture) => void (fixtures[index] = fixture),
      () => undefined, // a delete in flight took part of it: the old ids serve until the next try
    );
  let next = 0;
  const remaking: Promise<void>[] = [];
  const worker = async () => {
    while (next < options.requests) {
      const i = next++;
      if (i > 0 && i % 200 === 0) remaking.push(remake((i / 200) % tags.length));
      const seed = operationSeed(options.seed, i);
      const op = all[(seed >>> 0) % all.length];
      const fixture = fixtures[i % fixtures.length];
      const [req] = fc.sample(requestArbitrary(op, op.generation === 'v1' ? fixture.v1 : fixture.current), { seed, numRuns: 1 });
      result.requests++;
      let response: FuzzResponse;
      try {
        response = await send(options.baseUrl, req, timeoutMs);
      } catch (error) {
        const alive = options.isAlive?.() ?? true;
        if (alive && req.url.length > OVERSIZE_URL) continue;
        result.failures.push({ operation: op.id, seed, report: `${op.id}: ${alive ? 'request failed' : 'the server process exited'}: ${(error as Error).message}\n${describe(req)}` });
        if (!alive) return;
        continue;
      }
      result.statuses[response.status] = (result.statuses[response.status] ?? 0) + 1;
      const seen = (result.statusesByOperation[op.id] ??= {});
      seen[response.status] = (seen[response.status] ?? 0) + 1;
      result.slowestMs = Math.max(result.slowestMs, response.ms);
      const problem = violation(op, response);
      if (problem !== undefined) result.failures.push({ operation: op.id, seed, report: `${op.id}: ${problem}\n${describe(req)}` });
    }
  };
  await Promise.all(Array.from({ length: options.inFlight }, worker));
  await Promise.all(remaking);
  return result;
}
