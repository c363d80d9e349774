import { extractText, getDocumentProxy } from 'unpdf';
import { invalidInput, unsupportedType } from '../errors.js';
import { jsonUploadText } from './json-text.js';

/** A file as it arrived in an upload. */
export interface UploadedFile {
  bytes: Uint8Array;
  /** The part's Content-Type header as sent; null when it had none. */
  contentType: string | null;
  filename: string | null;
}

/** The reference names its readers in the 415 message; clients may match on it. */
const SUPPORTED_TYPES = "['PDFProcessor', 'TextProcessor', 'JSONProcessor']";

/**
 * The text of an uploaded file (contract §7.4): PDF, any `text/*` type and JSON are read; any
 * other type is a 415. The type is compared without its parameters and case-insensitively, so
 * `application/json; charset=utf-8` is JSON (the reference compares the header verbatim).
 */
export async function extractFileText(file: UploadedFile): Promise<string> {
  const mediaType = (file.contentType ?? '').split(';', 1)[0].trim().toLowerCase();
  if (mediaType === 'application/pdf') return pdfText(file.bytes);
  if (mediaType.startsWith('text/')) return decodeText(file.bytes);
  if (mediaType === 'application/json') return jsonText(file.bytes);
  throw unsupportedType(`Unsupported file type: ${file.contentType ?? 'None'}. Supported types: ${SUPPORTED_TYPES}`);
}

function decodeUtf8(bytes: Uint8Array): string | undefined {
  try {
    // a leading byte-order mark is dropped (TextDecoder's default)
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

/**
 * Text files: UTF-8; else UTF-16 when the file starts with a byte-order mark; else Latin-1, which
 * reads any bytes. (The reference also tries UTF-16 without a mark, which turns Latin-1 text of
 * even length into unrelated characters.)
 */
function decodeText(bytes: Uint8Array): string {
  const utf8 = decodeUtf8(bytes);
  if (utf8 !== undefined) return utf8;
  const endian = bytes[0] === 0xff && bytes[1] === 0xfe ? 'utf-16le' : bytes[0] === 0xfe && bytes[1] === 0xff ? 'utf-16be' : undefined;
  if (endian !== undefined) {
    try {
      return new TextDecoder(endian, { fatal: true }).decode(bytes);
    } catch {
      // not UTF-16 after all: fall through to Latin-1
    }
  }
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');
}

/** Python's `str.isspace` characters: a document of only these is an empty text, not invalid. */
const PYTHON_BLANK = /^[\t\n\v\f\r\u001c-\u001f \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$/;

function jsonText(bytes: Uint8Array): string {
  const text = decodeUtf8(bytes);
  if (text === undefined) throw invalidInput('JSON uploads must be UTF-8 encoded');
  if (PYTHON_BLANK.test(text)) return '';
  const rendered = jsonUploadText(text);
  if (rendered === undefined) throw invalidInput('Uploaded JSON is invalid');
  return rendered;
}

/**
 * PDF text page by page, as the reference lays it out: each page that has text becomes
 * `[Page <n>]` and its lines, pages separated by a blank line. A file PDF.js cannot open is a 422
 * (the reference answers 500).
 */
async function pdfText(bytes: Uint8Array): Promise<string> {
  let pages: string[];
  try {
    // PDF.js takes ownership of the array it is given, so it gets a copy
    const pdf = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0, isEvalSupported: false, useSystemFonts: false });
    try {
      pages = (await extractText(pdf, { mergePages: false })).text;
    } finally {
      await pdf.destroy();
    }
  } catch {
    throw invalidInput('Uploaded PDF could not be read');
  }
  return pages
    .map((text, index) => ({ text, number: index + 1 }))
    .filter((page) => page.text.trim() !== '')
    .map((page) => `[Page ${page.number}]\n${page.text}`)
    .join('\n\n');
}
