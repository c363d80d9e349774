/** One part of a multipart form built by a test: text, or a file when it has a filename. */
export interface FormPart {
  name: string;
  value: string | Uint8Array;
  filename?: string;
  /** The part's Content-Type; left out when undefined. */
  contentType?: string;
}

export const TEST_BOUNDARY = '----engram-test-7f3a9c';

/** A `multipart/form-data` body as a browser or curl writes it, with the matching header. */
export function multipartBody(parts: FormPart[], boundary = TEST_BOUNDARY): { payload: Buffer; contentType: string } {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${part.name}"`;
    if (part.filename !== undefined) head += `; filename="${part.filename}"`;
    head += '\r\n';
    if (part.contentType !== undefined) head += `Content-Type: ${part.contentType}\r\n`;
    chunks.push(Buffer.from(`${head}\r\n`), Buffer.from(part.value), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}
