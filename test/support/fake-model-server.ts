import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local model server for tests: real HTTP speaking the OpenAI Chat Completions and Embeddings
 * APIs (streamed and not, tool calls, `response_format`), plus the Anthropic Messages and Gemini
 * generateContent / embedContent endpoints, so tests exercise the real client code.
 *
 *   const fake = await startFakeModelServer();
 *   fake.script.chat({ json: { explicit: [{ content: 'Alice likes tea' }] } });
 *   const api = await buildTestApp(fake.env());
 *   ...
 *   expect(fake.requests('chat')[0].body.response_format.type).toBe('json_schema');
 *
 * Chat answers come from a queue (`script.chat`), then from the default (`script.defaultChat`,
 * "ok" at first); embedding answers likewise, with deterministic vectors by default.
 */

export interface ScriptedToolCall {
  name: string;
  /** An object (sent as its JSON) or the raw arguments text. */
  arguments: unknown;
  id?: string;
}

export interface ScriptedAnswer {
  /** The answer's text. */
  text?: string;
  /** An answer whose text is this value's JSON. */
  json?: unknown;
  toolCalls?: ScriptedToolCall[];
  /** Answer with this HTTP status instead (429, 500 ...), with `errorBody` and `headers`. */
  status?: number;
  errorBody?: unknown;
  headers?: Record<string, string>;
  /** Milliseconds to wait before answering (before the first chunk when streaming). */
  delayMs?: number;
  /** Answer once this settles (after `delayMs`): a test holds the answer back until it has done what must happen meanwhile. */
  until?: Promise<unknown>;
  /** Streaming: the text split in these pieces (default: about three pieces). */
  chunks?: string[];
  /** Streaming: milliseconds between chunks. */
  chunkDelayMs?: number;
  usage?: { input: number; output: number };
  finishReason?: string;
  /** Close the connection without answering. */
  hangUp?: boolean;
  /** Answer exactly this body (status `status` or 200), whatever the API. */
  raw?: string;
  /** Embeddings: these vectors instead of the hashed ones. */
  vectors?: number[][];
  /** Embeddings: vectors of this size instead of the server's. */
  dimensions?: number;
}

/** A promise for ScriptedAnswer's `until`, and the function that settles it. */
export function heldAnswer(): { until: Promise<void>; release: () => void } {
  let release!: () => void;
  const until = new Promise<void>((resolve) => (release = resolve));
  return { until, release };
}

export type Api = 'openai' | 'anthropic' | 'gemini';
export type RequestKind = 'chat' | 'embeddings';

export interface RecordedRequest {
  api: Api;
  kind: RequestKind;
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** The parsed JSON body. */
  body: any;
  /** Whether the client asked for a stream. */
  stream: boolean;
  at: number;
}

export type Scripted = ScriptedAnswer | ((request: RecordedRequest) => ScriptedAnswer);

export interface FakeModelServer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  port: number;
  script: {
    /** Queue chat answers (each used once, in order; `times` repeats one). */
    chat(answer: Scripted, times?: number): void;
    /** The answer once the chat queue is empty. */
    defaultChat(answer: Scripted): void;
    embeddings(answer: Scripted, times?: number): void;
    defaultEmbeddings(answer: Scripted): void;
  };
  /** Every request received, optionally only of one kind and API, oldest first. */
  requests(kind?: RequestKind, api?: Api): RecordedRequest[];
  /** Most requests answered at once so far. */
  maxInFlight: number;
  /** Clear the queues, the defaults and the recorded requests. */
  reset(): void;
  /** Settings pointing Engram at this server. */
  env(overrides?: Record<string, string>): Record<string, string>;
  /** The vector the server returns for a text (at its dimensions unless given). */
  vector(text: string, dimensions?: number): number[];
  close(): Promise<void>;
}

export interface FakeModelServerOptions {
  /** Embedding size (default 8). */
  dimensions?: number;
  /** Model names for `env()` (defaults `fake-chat` and `fake-embed`). */
  chatModel?: string;
  embeddingModel?: string;
}

/** A deterministic unit vector from the SHA-256 of the text. */
export function hashedVector(text: string, dimensions: number): number[] {
  const values: number[] = [];
  let counter = 0;
  while (values.length < dimensions) {
    const digest = createHash('sha256').update(`${counter++}:${text}`).digest();
    for (let i = 0; i + 1 < digest.length && values.length < dimensions; i += 2) values.push(digest.readUInt16BE(i) / 32768 - 1);
  }
  const norm = Math.sqrt(values.reduce((sum, v) => sum + v * v, 0)) || 1;
  return values.map((v) => v / norm);
}

const roughTokens = (text: string): number => Math.max(1, Math.ceil(text.length / 4));

function answerText(answer: ScriptedAnswer): string {
  if (answer.json !== undefined) return JSON.stringify(answer.json);
  return answer.text ?? (answer.toolCalls && answer.toolCalls.length > 0 ? '' : 'ok');
}

function argumentsText(call: ScriptedToolCall): string {
  return typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments ?? {});
}

function split(text: string, answer: ScriptedAnswer): string[] {
  if (answer.chunks) return answer.chunks;
  if (text === '') return [];
  const size = Math.max(1, Math.ceil(text.length / 3));
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size));
  return pieces;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function startFakeModelServer(options: FakeModelServerOptions = {}): Promise<FakeModelServer> {
  const dimensions = options.dimensions ?? 8;
  const chatQueue: Scripted[] = [];
  const embeddingQueue: Scripted[] = [];
  let chatDefault: Scripted = { text: 'ok' };
  let embeddingDefault: Scripted = {};
  let recorded: RecordedRequest[] = [];
  let inFlight = 0;
  let callCounter = 0;
  const sockets = new Set<import('node:net').Socket>();

  const next = (kind: RequestKind, request: RecordedRequest): ScriptedAnswer => {
    const queue = kind === 'chat' ? chatQueue : embeddingQueue;
    const scripted = queue.length > 0 ? queue.shift()! : kind === 'chat' ? chatDefault : embeddingDefault;
    return typeof scripted === 'function' ? scripted(request) : scripted;
  };

  const fake: FakeModelServer = {
    url: '',
    port: 0,
    maxInFlight: 0,
    script: {
      chat(answer, times = 1) {
        for (let i = 0; i < times; i++) chatQueue.push(answer);
      },
      defaultChat(answer) {
        chatDefault = answer;
      },
      embeddings(answer, times = 1) {
        for (let i = 0; i < times; i++) embeddingQueue.push(answer);
      },
      defaultEmbeddings(answer) {
        embeddingDefault = answer;
      },
    },
    requests: (kind, api) => recorded.filter((r) => (kind === undefined || r.kind === kind) && (api === undefined || r.api === api)),
    reset() {
      chatQueue.length = 0;
      embeddingQueue.length = 0;
      chatDefault = { text: 'ok' };
      embeddingDefault = {};
      recorded = [];
      fake.maxInFlight = 0;
    },
    env: (overrides = {}) => ({
      LLM_OPENAI_BASE_URL: `${fake.url}/v1`,
      LLM_OPENAI_API_KEY: 'test',
      LLM_MODEL: options.chatModel ?? 'fake-chat',
      EMBEDDING_MODEL: options.embeddingModel ?? 'fake-embed',
      LLM_RETRY_BASE_MS: '10',
      ...overrides,
    }),
    vector: (text, size = dimensions) => hashedVector(text, size),
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };

  const route = (method: string, path: string): { api: Api; kind: RequestKind; model?: string } | undefined => {
    if (method !== 'POST') return undefined;
    if (/\/chat\/completions$/.test(path)) return { api: 'openai', kind: 'chat' };
    if (/\/embeddings$/.test(path)) return { api: 'openai', kind: 'embeddings' };
    if (/\/messages$/.test(path)) return { api: 'anthropic', kind: 'chat' };
    const gemini = /\/models\/([^/:]+):(generateContent|streamGenerateContent|embedContent|batchEmbedContents)$/.exec(path);
    if (gemini) return { api: 'gemini', kind: gemini[2].includes('mbed') ? 'embeddings' : 'chat', model: gemini[1] };
    return undefined;
  };

  const handle = async (request: IncomingMessage, response: ServerResponse, raw: string) => {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const target = route(request.method ?? 'GET', url.pathname);
    if (!target) {
      response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
      return;
    }
    let body: any;
    try {
      body = JSON.parse(raw);
    } catch {
      response.writeHead(400, { 'content-type': 'application/json' }).end('{"error":{"message":"invalid JSON"}}');
      return;
    }
    const stream = target.api === 'gemini' ? url.pathname.endsWith(':streamGenerateContent') : body.stream === true;
    const recordedRequest: RecordedRequest = {
      api: target.api,
      kind: target.kind,
      method: request.method ?? 'POST',
      path: url.pathname + url.search,
      headers: request.headers,
      body,
      stream,
      at: Date.now(),
    };
    recorded.push(recordedRequest);
    const answer = next(target.kind, recordedRequest);
    if (answer.delayMs) await sleep(answer.delayMs);
    if (answer.until !== undefined) await answer.until.catch(() => undefined);
    if (answer.hangUp) {
      request.socket.destroy();
      return;
    }
    if (answer.raw !== undefined) {
      response.writeHead(answer.status ?? 200, { 'content-type': 'application/json', ...answer.headers }).end(answer.raw);
      return;
    }
    if (answer.status !== undefined && answer.status >= 400) {
      response
        .writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers })
        .end(JSON.stringify(answer.errorBody ?? { error: { message: `scripted ${answer.status}`, type: 'scripted' } }));
      return;
    }
    if (target.kind === 'embeddings') return answerEmbeddings(target.api, body, answer, response);
    const prompt = JSON.stringify(body.messages ?? body.contents ?? '');
    const text = answerText(answer);
    const usage = answer.usage ?? { input: roughTokens(prompt), output: roughTokens(text + JSON.stringify(answer.toolCalls ?? [])) };
    const calls = (answer.toolCalls ?? []).map((call) => ({ ...call, id: call.id ?? `call_${++callCounter}` }));
    if (target.api === 'openai') return answerOpenAi(body, stream, text, calls, usage, answer, response);
    if (target.api === 'anthropic') return answerAnthropic(body, stream, text, calls, usage, answer, response);
    return answerGemini(stream, text, calls, usage, answer, response);
  };

  const answerEmbeddings = (api: Api, body: any, answer: ScriptedAnswer, response: ServerResponse) => {
    const size = answer.dimensions ?? (typeof body.dimensions === 'number' ? body.dimensions : undefined) ?? dimensions;
    if (api === 'openai') {
      const inputs: string[] = Array.isArray(body.input) ? body.input : [body.input];
      const vectorOf = (text: string, index: number) => answer.vectors?.[index] ?? hashedVector(text, size);
      // `encoding_format: base64` as OpenAI answers it: the float32 values' little-endian bytes
      const encode = (vector: number[]) => (body.encoding_format === 'base64' ? Buffer.from(Float32Array.from(vector).buffer).toString('base64') : vector);
      const data = inputs.map((text, index) => ({ object: 'embedding', index, embedding: encode(vectorOf(String(text), index)) }));
      const tokens = inputs.reduce((sum, text) => sum + roughTokens(String(text)), 0);
      json(response, { object: 'list', data, model: body.model, usage: { prompt_tokens: tokens, total_tokens: tokens } });
      return;
    }
    const requests: any[] = body.requests ?? [body];
    const embeddings = requests.map((item, index) => {
      const text = (item.content?.parts ?? []).map((part: any) => part.text ?? '').join('');
      return { values: answer.vectors?.[index] ?? hashedVector(text, answer.dimensions ?? item.outputDimensionality ?? dimensions) };
    });
    json(response, body.requests ? { embeddings } : { embedding: embeddings[0] });
  };

  const answerOpenAi = async (
    body: any,
    stream: boolean,
    text: string,
    calls: (ScriptedToolCall & { id: string })[],
    usage: { input: number; output: number },
    answer: ScriptedAnswer,
    response: ServerResponse,
  ) => {
    const finish = answer.finishReason ?? (calls.length > 0 ? 'tool_calls' : 'stop');
    const id = `chatcmpl-${++callCounter}`;
    const created = Math.floor(Date.now() / 1000);
    const usageBody = { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output };
    if (!stream) {
      const message: any = { role: 'assistant', content: calls.length > 0 && text === '' ? null : text };
      if (calls.length > 0) message.tool_calls = calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: argumentsText(c) } }));
      json(response, { id, object: 'chat.completion', created, model: body.model, choices: [{ index: 0, message, finish_reason: finish }], usage: usageBody });
      return;
    }
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const send = async (chunk: unknown) => {
      response.write(`data: ${JSON.stringify(chunk)}\n\n`);
      if (answer.chunkDelayMs) await sleep(answer.chunkDelayMs);
    };
    const base = { id, object: 'chat.completion.chunk', created, model: body.model };
    response.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] })}\n\n`);
    for (const piece of split(text, answer)) await send({ ...base, choices: [{ index: 0, delta: { content: piece }, finish_reason: null }] });
    for (const [index, call] of calls.entries()) {
      const args = argumentsText(call);
      const half = Math.ceil(args.length / 2);
      await send({ ...base, choices: [{ index: 0, delta: { tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: args.slice(0, half) } }] }, finish_reason: null }] });
      await send({ ...base, choices: [{ index: 0, delta: { tool_calls: [{ index, function: { arguments: args.slice(half) } }] }, finish_reason: null }] });
    }
    await send({ ...base, choices: [{ index: 0, delta: {}, finish_reason: finish }] });
    if (body.stream_options?.include_usage) await send({ ...base, choices: [], usage: usageBody });
    response.end('data: [DONE]\n\n');
  };

  const answerAnthropic = async (
    body: any,
    stream: boolean,
    text: string,
    calls: (ScriptedToolCall & { id: string })[],
    usage: { input: number; output: number },
    answer: ScriptedAnswer,
    response: ServerResponse,
  ) => {
    const stop = answer.finishReason ?? (calls.length > 0 ? 'tool_use' : 'end_turn');
    const content: any[] = [];
    if (text !== '') content.push({ type: 'text', text });
    for (const call of calls) content.push({ type: 'tool_use', id: call.id, name: call.name, input: typeof call.arguments === 'string' ? JSON.parse(call.arguments) : call.arguments });
    const id = `msg_${++callCounter}`;
    if (!stream) {
      json(response, { id, type: 'message', role: 'assistant', model: body.model, content, stop_reason: stop, usage: { input_tokens: usage.input, output_tokens: usage.output } });
      return;
    }
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    const send = async (event: string, data: unknown) => {
      response.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
      if (answer.chunkDelayMs) await sleep(answer.chunkDelayMs);
    };
    await send('message_start', { type: 'message_start', message: { id, type: 'message', role: 'assistant', model: body.model, content: [], usage: { input_tokens: usage.input, output_tokens: 1 } } });
    let index = 0;
    if (text !== '') {
      await send('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
      for (const piece of split(text, answer)) await send('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: piece } });
      await send('content_block_stop', { type: 'content_block_stop', index });
      index++;
    }
    for (const call of calls) {
      const args = argumentsText(call);
      await send('content_block_start', { type: 'content_block_start', index, content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} } });
      await send('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: args.slice(0, 3) } });
      await send('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: args.slice(3) } });
      await send('content_block_stop', { type: 'content_block_stop', index });
      index++;
    }
    await send('message_delta', { type: 'message_delta', delta: { stop_reason: stop }, usage: { output_tokens: usage.output } });
    await send('message_stop', { type: 'message_stop' });
    response.end();
  };

  const answerGemini = async (
    stream: boolean,
    text: string,
    calls: (ScriptedToolCall & { id: string })[],
    usage: { input: number; output: number },
    answer: ScriptedAnswer,
    response: ServerResponse,
  ) => {
    const finish = answer.finishReason ?? 'STOP';
    const usageMetadata = { promptTokenCount: usage.input, candidatesTokenCount: usage.output, totalTokenCount: usage.input + usage.output };
    const callParts = calls.map((call) => ({ functionCall: { name: call.name, args: typeof call.arguments === 'string' ? JSON.parse(call.arguments) : call.arguments } }));
    if (!stream) {
      const parts = [...(text !== '' ? [{ text }] : []), ...callParts];
      json(response, { candidates: [{ content: { role: 'model', parts }, finishReason: finish, index: 0 }], usageMetadata });
      return;
    }
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    const pieces = split(text, answer);
    for (const [i, piece] of pieces.entries()) {
      const last = i === pieces.length - 1 && callParts.length === 0;
      response.write(`data: ${JSON.stringify({ candidates: [{ content: { role: 'model', parts: [{ text: piece }] }, ...(last ? { finishReason: finish } : {}), index: 0 }], ...(last ? { usageMetadata } : {}) })}\n\n`);
      if (answer.chunkDelayMs) await sleep(answer.chunkDelayMs);
    }
    if (callParts.length > 0 || pieces.length === 0) {
      response.write(`data: ${JSON.stringify({ candidates: [{ content: { role: 'model', parts: callParts }, finishReason: finish, index: 0 }], usageMetadata })}\n\n`);
    }
    response.end();
  };

  const server: Server = createServer((request, response) => {
    inFlight++;
    fake.maxInFlight = Math.max(fake.maxInFlight, inFlight);
    // answered, or given up by the client
    response.once('close', () => inFlight--);
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      handle(request, response, Buffer.concat(chunks).toString('utf8')).catch((error: unknown) => {
        if (!response.headersSent) response.writeHead(500, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ error: { message: String(error) } }));
      });
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.port = (server.address() as AddressInfo).port;
  fake.url = `http://127.0.0.1:${fake.port}`;
  return fake;
}

function json(response: ServerResponse, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
}
