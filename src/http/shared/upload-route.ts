import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Readable } from 'node:stream';
import type { DomainError } from '../../domain/errors.js';
import { MAX_FILE_BYTES, fileTooLarge, type FileUpload } from '../../domain/messages/file-upload.js';
import type { Claims, RouteScope } from './auth.js';
import { FormParseError, formText, parseMultipartForm, parseUrlEncodedForm, type FormValue } from './multipart-form.js';
import { parseJsonLikePython } from './python-json.js';
import { messageCreate } from './resource-schemas.js';
import { authenticate, errorReply, send, type Generation, type HttpDeps, type Reply, type RouteAccess } from './route.js';
import { INVALID, missingItem, parseIsoDateTime, validationBody, type ValidationItem } from './validate.js';

/**
 * Most bytes kept from an upload request: the largest file plus 1 MiB for the other fields and
 * the multipart framing. A larger body is answered with the file-size 413, its own size standing
 * in for the file's (the file inside it is never looked at).
 */
export const UPLOAD_BODY_LIMIT = MAX_FILE_BYTES + 1024 * 1024;

/**
 * An oversized body up to this size is still read to its end, and thrown away, before the 413 is
 * sent: clients that write the whole body before reading the answer (fetch, most SDKs) would
 * otherwise see a broken connection instead of the 413. Beyond it the connection is closed.
 */
const UPLOAD_DRAIN_LIMIT = 64 * 1024 * 1024;

/** What the body parser hands the route: the raw form, or the size of a body too big to keep. */
type RawForm =
  | { kind: 'form'; contentType: string; bytes: Buffer }
  | { kind: 'too_large'; bytes: number; isUnread: boolean };

function isRawForm(body: unknown): body is RawForm {
  return typeof body === 'object' && body !== null && 'kind' in body && (body.kind === 'form' || body.kind === 'too_large');
}

/** Collects the body up to the limit; past it, counts and drops bytes up to the drain limit. */
function readFormBody(request: FastifyRequest, payload: Readable): Promise<RawForm> {
  const contentType = request.headers['content-type'] ?? '';
  const declared = Number(request.headers['content-length']);
  if (declared > UPLOAD_DRAIN_LIMIT) return Promise.resolve({ kind: 'too_large', bytes: declared, isUnread: true });
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = () => {
      payload.off('data', onData);
      payload.off('end', onEnd);
      payload.off('error', onError);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > UPLOAD_DRAIN_LIMIT) {
        // not destroyed: that would close the socket before the 413 is written
        stop();
        payload.pause();
        resolve({ kind: 'too_large', bytes: size, isUnread: true });
      } else if (size <= UPLOAD_BODY_LIMIT) {
        chunks.push(chunk);
      } else if (chunks.length > 0) {
        chunks.length = 0;
      }
    };
    const onEnd = () => {
      stop();
      resolve(size > UPLOAD_BODY_LIMIT ? { kind: 'too_large', bytes: size, isUnread: false } : { kind: 'form', contentType, bytes: Buffer.concat(chunks, size) });
    };
    const onError = (error: Error) => {
      stop();
      reject(error);
    };
    payload.on('data', onData);
    payload.on('end', onEnd);
    payload.on('error', onError);
  });
}

/** A form field's text; absent and empty are the same (FastAPI treats "" as not sent). */
function fieldText(form: Map<string, FormValue>, name: string): string | undefined {
  const value = form.get(name);
  if (value === undefined) return undefined;
  // a text field sent as a file part is read as its text
  const text = typeof value === 'string' ? value : formText(value.bytes);
  return text === '' ? undefined : text;
}

/** JSON text of an optional field; text that is not JSON is ignored (contract §7.4). */
function optionalJson(form: Map<string, FormValue>, name: string): { value: unknown } | undefined {
  const text = fieldText(form, name);
  if (text === undefined) return undefined;
  const parsed = parseJsonLikePython(text);
  return parsed.ok ? { value: parsed.value } : undefined;
}

/**
 * The upload form as typed input (contract §7.4). `peer_id` and `file` are required; `metadata`
 * and `configuration` are JSON text and `created_at` ISO 8601 text, each ignored when it does not
 * parse. What does parse is checked as message create checks the same fields (peer id rules,
 * metadata limits, configuration keys), errors at `["body", <field>]`; the reference answers
 * 500 for those instead. Errors come in the reference's order: the text fields, then `file`.
 */
export function parseUploadForm(form: Map<string, FormValue>, generation: 'v2' | 'v3', errors: ValidationItem[]): FileUpload | typeof INVALID {
  const fields: Record<string, unknown> = { content: '' };
  const peerId = fieldText(form, 'peer_id');
  if (peerId !== undefined) fields.peer_id = peerId;
  const metadata = optionalJson(form, 'metadata');
  if (metadata !== undefined) fields.metadata = metadata.value;
  const configuration = optionalJson(form, 'configuration');
  if (configuration !== undefined) fields.configuration = configuration.value;
  const createdAtText = fieldText(form, 'created_at');
  const createdAt = createdAtText === undefined ? undefined : parseIsoDateTime(createdAtText);

  const fieldErrors: ValidationItem[] = [];
  const parsed = messageCreate(generation).parse(fields, ['body'], fieldErrors);
  // contract §6: a form field that was not sent reports input null, not the enclosing object
  for (const error of fieldErrors) errors.push(error.type === 'missing' ? missingItem(error.loc) : error);

  const file = form.get('file');
  if (file === undefined || file === '') {
    errors.push(missingItem(['body', 'file']));
  } else if (typeof file === 'string') {
    errors.push({
      type: 'value_error',
      loc: ['body', 'file'],
      msg: "Value error, Expected UploadFile, received: <class 'str'>",
      input: file,
      ctx: { error: {} },
    });
  }
  if (parsed === INVALID || file === undefined || typeof file === 'string') return INVALID;
  return {
    peerId: parsed.peer_id,
    file: { bytes: file.bytes, contentType: file.contentType, filename: file.filename },
    metadata: parsed.metadata,
    createdAt: createdAt instanceof Date ? createdAt : undefined,
    configuration: parsed.configuration,
  };
}

export interface UploadRouteSpec {
  url: string;
  generation: 'v2' | 'v3';
  scope: RouteScope;
  summary: string;
  tags: string[];
  handler(input: { params: Record<string, string>; upload: FileUpload; claims: Claims }): Promise<Reply>;
}

const OPENAPI_FORM = {
  type: 'object',
  required: ['file', 'peer_id'],
  properties: {
    file: { type: 'string', format: 'binary' },
    peer_id: { type: 'string', description: 'ID of the peer sending the messages' },
    metadata: { type: 'string', description: 'JSON object applied to every message' },
    configuration: { type: 'string', description: 'JSON object (message configuration)' },
    created_at: { type: 'string', description: 'ISO 8601 time given to every message' },
  },
};

/**
 * Registers a multipart upload route with the contract's processing order (§1.3): the form is
 * read first (malformed: 400), then authentication, then the fields are validated (one 422
 * list), then the handler runs; errors map as on every other route. The form parsers are
 * registered in the route's own plugin scope, so other routes keep reading bodies as text.
 */
export function defineUploadRoute(
  app: FastifyInstance,
  deps: HttpDeps,
  mapDomain: (error: DomainError) => Reply,
  spec: UploadRouteSpec,
): void {
  const generation: Generation = spec.generation;

  const handle = async (request: FastifyRequest, reply: FastifyReply) => {
    const params = request.params as Record<string, string>;
    try {
      // 1. the form; other content types read as an empty form, as Starlette does
      let form = new Map<string, FormValue>();
      let oversizedBody: number | undefined;
      const raw = request.body;
      if (isRawForm(raw)) {
        if (raw.kind === 'too_large') {
          oversizedBody = raw.bytes;
          // the rest of the body was not read: the connection cannot carry another request
          if (raw.isUnread) reply.header('connection', 'close');
        } else {
          const isMultipart = raw.contentType.split(';', 1)[0].trim().toLowerCase() === 'multipart/form-data';
          form = isMultipart ? parseMultipartForm(raw.bytes, raw.contentType) : parseUrlEncodedForm(raw.bytes);
        }
      }

      // 2. authentication and route scope
      const claims = await authenticate(deps, generation, spec.scope, request);

      // a body too big to keep has no fields to check; its size stands in for the file's
      if (oversizedBody !== undefined) throw fileTooLarge(oversizedBody);

      // 3. validation
      const errors: ValidationItem[] = [];
      const upload = parseUploadForm(form, spec.generation, errors);
      if (upload === INVALID) return send(reply, { status: 422, body: validationBody(errors, generation) });

      // 4. the handler
      return send(reply, await spec.handler({ params, upload, claims }));
    } catch (error) {
      if (error instanceof FormParseError) return send(reply, { status: 400, body: { detail: error.message } });
      const known = errorReply(error, mapDomain);
      if (known !== undefined) return send(reply, known);
      request.log.error({ err: error }, 'unhandled error');
      return send(reply, { status: 500, body: { detail: 'An unexpected error occurred' } });
    }
  };

  const access: RouteAccess = { generation, scope: spec.scope };
  void app.register(async (scope) => {
    scope.addContentTypeParser(['multipart/form-data', 'application/x-www-form-urlencoded'], readFormBody);
    scope.route({
      method: 'POST',
      url: spec.url,
      handler: handle,
      config: { access },
      schema: { summary: spec.summary, tags: spec.tags, consumes: ['multipart/form-data'], body: OPENAPI_FORM },
    });
  });
}
