/*
 * HTML form bodies read the way the reference's framework (Starlette with python-multipart)
 * reads them, for the one route that takes a form (file upload, contract §7.4). Starlette's
 * choices are kept where a client can see them: the last value of a repeated name wins, a part
 * is a file when its Content-Disposition has a filename, a text part over 1 MiB or more than
 * 1000 files or fields is refused, and a body cut off before its closing boundary drops the
 * unfinished part instead of failing. A malformed body is a 400.
 */

/** A file part: its bytes and the headers the upload reads. */
export interface FormFile {
  filename: string;
  /** The part's Content-Type as sent; null when the part had none. */
  contentType: string | null;
  bytes: Buffer;
}

export type FormValue = string | FormFile;

/** A body that cannot be read as the form it claims to be: 400 with this message. */
export class FormParseError extends Error {}

const MAX_TEXT_PART_BYTES = 1024 * 1024;
const MAX_PARTS_OF_A_KIND = 1000;
const CRLF = Buffer.from('\r\n');
const HEADER_END = Buffer.from('\r\n\r\n');

/** Text as Starlette decodes form values: UTF-8, or Latin-1 when that fails. */
export function formText(bytes: Uint8Array): string {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');
  }
}

/** `name=value` parameters of a header such as Content-Type or Content-Disposition. */
function headerParams(value: string): Map<string, string> {
  const params = new Map<string, string>();
  const pattern = /;\s*([^\s=;]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]*))/g;
  for (const match of value.matchAll(pattern)) {
    const raw = match[2] !== undefined ? match[2].replace(/\\(.)/g, '$1') : match[3].trim();
    params.set(match[1].toLowerCase(), raw);
  }
  return params;
}

/** RFC 5987 `filename*=UTF-8''name%20here`; undefined when it cannot be decoded. */
function extendedValue(value: string): string | undefined {
  const match = /^([^']*)'[^']*'(.*)$/.exec(value);
  if (match === null) return undefined;
  try {
    if (match[1].toLowerCase() === 'utf-8') return decodeURIComponent(match[2]);
    return match[2].replace(/%([0-9a-fA-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  } catch {
    return undefined;
  }
}

function parseHeaders(block: Buffer): Map<string, string> {
  const headers = new Map<string, string>();
  if (block.length === 0) return headers;
  for (const line of block.toString('utf8').split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon <= 0) throw new FormParseError('There was an error parsing the body');
    const name = line.slice(0, colon).trim().toLowerCase();
    // the first of a repeated header counts, as Starlette's Headers.get returns it
    if (!headers.has(name)) headers.set(name, line.slice(colon + 1).trim());
  }
  return headers;
}

/** Reads a `multipart/form-data` body; `contentType` is the request header carrying the boundary. */
export function parseMultipartForm(body: Buffer, contentType: string): Map<string, FormValue> {
  const boundary = headerParams(contentType).get('boundary');
  if (boundary === undefined || boundary === '') throw new FormParseError('Missing boundary in multipart.');
  const malformed = () => new FormParseError('There was an error parsing the body');
  const delimiter = Buffer.from(`--${boundary}`);
  const nextDelimiter = Buffer.concat([CRLF, delimiter]);
  const form = new Map<string, FormValue>();
  let files = 0;
  let fields = 0;

  let pos = 0;
  // python-multipart skips line breaks before the first boundary; anything else there is an error
  while (body[pos] === 0x0d || body[pos] === 0x0a) pos++;
  if (pos === body.length) return form;
  if (!body.subarray(pos, pos + delimiter.length).equals(delimiter)) throw malformed();
  pos += delimiter.length;

  for (;;) {
    if (pos >= body.length) return form;
    if (body[pos] === 0x2d && body[pos + 1] === 0x2d) return form; // the closing "--"
    if (body[pos] !== 0x0d || body[pos + 1] !== 0x0a) throw malformed();
    pos += 2;

    let headers: Map<string, string>;
    let contentStart: number;
    if (body[pos] === 0x0d && body[pos + 1] === 0x0a) {
      headers = new Map();
      contentStart = pos + 2;
    } else {
      const headerEnd = body.indexOf(HEADER_END, pos);
      if (headerEnd === -1) return form;
      headers = parseHeaders(body.subarray(pos, headerEnd));
      contentStart = headerEnd + HEADER_END.length;
    }
    const contentEnd = body.indexOf(nextDelimiter, contentStart);
    if (contentEnd === -1) return form;
    pos = contentEnd + nextDelimiter.length;

    const disposition = headerParams(headers.get('content-disposition') ?? '');
    const name = disposition.get('name');
    if (name === undefined) throw new FormParseError('The Content-Disposition header field "name" must be provided.');
    const content = body.subarray(contentStart, contentEnd);
    const extended = disposition.has('filename*') ? extendedValue(disposition.get('filename*')!) : undefined;
    const filename = extended ?? disposition.get('filename');
    if (filename !== undefined) {
      if (++files > MAX_PARTS_OF_A_KIND) throw new FormParseError(`Too many files. Maximum number of files is ${MAX_PARTS_OF_A_KIND}.`);
      form.set(name, { filename, contentType: headers.get('content-type') ?? null, bytes: content });
    } else {
      if (++fields > MAX_PARTS_OF_A_KIND) throw new FormParseError(`Too many fields. Maximum number of fields is ${MAX_PARTS_OF_A_KIND}.`);
      if (content.length > MAX_TEXT_PART_BYTES) throw new FormParseError('Part exceeded maximum size of 1024KB.');
      form.set(name, formText(content));
    }
  }
}

/** Reads an `application/x-www-form-urlencoded` body: every value is text. */
export function parseUrlEncodedForm(body: Buffer): Map<string, FormValue> {
  return new Map(new URLSearchParams(body.toString('utf8')));
}
