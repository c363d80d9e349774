import { describe, expect, it } from 'vitest';
import { FormParseError, parseMultipartForm, parseUrlEncodedForm } from '../../../src/http/shared/multipart-form.js';

const TYPE = 'multipart/form-data; boundary=XyZ';
const body = (text: string) => Buffer.from(text.replace(/\n/g, '\r\n'), 'utf8');

describe('parseMultipartForm', () => {
  it('reads text fields and files, the last of a repeated name winning', () => {
    const form = parseMultipartForm(
      body(
        '--XyZ\nContent-Disposition: form-data; name="peer_id"\n\nalice\n' +
          '--XyZ\nContent-Disposition: form-data; name="file"; filename="a b.txt"\nContent-Type: text/plain; charset=utf-8\n\nline 1\nline 2\n' +
          '--XyZ\ncontent-disposition: form-data; name="peer_id"\n\nbob\n' +
          '--XyZ--\n',
      ),
      TYPE,
    );
    expect(form.get('peer_id')).toBe('bob');
    const file = form.get('file');
    expect(typeof file).toBe('object');
    if (typeof file !== 'object' || file === undefined) return;
    expect(file.filename).toBe('a b.txt');
    expect(file.contentType).toBe('text/plain; charset=utf-8');
    expect(file.bytes.toString('utf8')).toBe('line 1\r\nline 2');
  });

  it('takes a quoted boundary, RFC 5987 file names, parts without type, and leading line breaks', () => {
    const form = parseMultipartForm(
      Buffer.from(
        '\r\n--a;b\r\nContent-Disposition: form-data; name="file"; filename*=UTF-8\'\'caf%C3%A9.txt\r\n\r\n\x00\x01\r\n--a;b--',
        'latin1',
      ),
      'multipart/form-data; boundary="a;b"',
    );
    const file = form.get('file');
    if (typeof file !== 'object' || file === undefined) throw new Error('no file');
    expect(file.filename).toBe('café.txt');
    expect(file.contentType).toBeNull();
    expect([...file.bytes]).toEqual([0, 1]);
  });

  it('reads an empty body as an empty form and drops an unfinished last part', () => {
    expect(parseMultipartForm(Buffer.alloc(0), TYPE).size).toBe(0);
    const form = parseMultipartForm(body('--XyZ\nContent-Disposition: form-data; name="a"\n\n1\n--XyZ\nContent-Disposition: form-data; name="b"\n\n2'), TYPE);
    expect([...form.keys()]).toEqual(['a']);
  });

  it('refuses malformed bodies with the reference messages', () => {
    const refuse = (text: string | Buffer, type = TYPE) => {
      try {
        parseMultipartForm(typeof text === 'string' ? body(text) : text, type);
      } catch (error) {
        expect(error).toBeInstanceOf(FormParseError);
        return (error as Error).message;
      }
      return 'accepted';
    };
    expect(refuse('--XyZ--', 'multipart/form-data')).toBe('Missing boundary in multipart.');
    expect(refuse('preamble\n--XyZ--')).toBe('There was an error parsing the body');
    expect(refuse('--XyZ\nContent-Type: text/plain\n\nx\n--XyZ--')).toBe('The Content-Disposition header field "name" must be provided.');
    expect(refuse('--XyZ\nnot a header\n\nx\n--XyZ--')).toBe('There was an error parsing the body');
    expect(refuse(`--XyZ\nContent-Disposition: form-data; name="a"\n\n${'x'.repeat(1024 * 1024 + 1)}\n--XyZ--`)).toBe(
      'Part exceeded maximum size of 1024KB.',
    );
    const many = Array.from({ length: 1001 }, (_, i) => `--XyZ\nContent-Disposition: form-data; name="f${i}"\n\nv\n`).join('') + '--XyZ--';
    expect(refuse(many)).toBe('Too many fields. Maximum number of fields is 1000.');
  });
});

describe('parseUrlEncodedForm', () => {
  it('reads every value as text', () => {
    expect(Object.fromEntries(parseUrlEncodedForm(Buffer.from('peer_id=al+ice&file=x%20y')))).toEqual({ peer_id: 'al ice', file: 'x y' });
  });
});
