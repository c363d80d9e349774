import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, uniqueId, type TestApi } from '../support/test-app.js';

/*
 * An unpaired UTF-16 surrogate can be spelled in JSON (`"\ud83d"`: what JSON.stringify writes for
 * a string cut inside an emoji) but not stored as UTF-8. It is read as U+FFFD, so the answer to a
 * write is what a later read returns, in typed text fields and in metadata (keys and values,
 * at any depth), on both dialects. JSON.stringify in the test client writes the escapes.
 */

const CUT = 'cut \ud83d';
const MENDED = 'cut \ufffd';
const PAIRED = 'whole \ud83d\ude00';

let api: TestApi;
beforeAll(async () => {
  api = await buildTestApp();
});
afterAll(() => api.close());

describe('unpaired surrogates', () => {
  it('v3: message content and metadata are answered and read back with U+FFFD; a whole pair is kept', async () => {
    const ws = uniqueId();
    expect((await api.post('/v3/workspaces', { id: ws })).status).toBe(201);
    const metadata = { [`key \udc00`]: CUT, nested: { list: [CUT, PAIRED] } };
    const mendedMetadata = { 'key \ufffd': MENDED, nested: { list: [MENDED, PAIRED] } };

    const peer = await api.post(`/v3/workspaces/${ws}/peers`, { id: 'p', metadata });
    expect(peer.status).toBe(201);
    expect(peer.body.metadata).toEqual(mendedMetadata);

    const created = await api.post(`/v3/workspaces/${ws}/sessions/s/messages`, {
      messages: [
        { peer_id: 'p', content: CUT, metadata },
        { peer_id: 'p', content: PAIRED },
      ],
    });
    expect(created.status).toBe(201);
    expect(created.body.map((m: { content: string }) => m.content)).toEqual([MENDED, PAIRED]);
    expect(created.body[0].metadata).toEqual(mendedMetadata);

    const listed = await api.post(`/v3/workspaces/${ws}/sessions/s/messages/list`, {});
    expect(listed.body.items.map((m: { content: string }) => m.content)).toEqual([MENDED, PAIRED]);
    expect(listed.body.items[0].metadata).toEqual(mendedMetadata);
    const peers = await api.post(`/v3/workspaces/${ws}/peers/list`, {});
    expect(peers.body.items[0].metadata).toEqual(mendedMetadata);
  });

  it('v1: an app name, message content and a metamessage label are answered and read back with U+FFFD', async () => {
    const app = await api.post('/v1/apps', { name: `app ${uniqueId()} \udc00` });
    expect(app.status).toBe(200);
    expect(app.body.name.endsWith(' \ufffd')).toBe(true);
    expect((await api.get(`/v1/apps?app_id=${app.body.id}`)).body.name).toBe(app.body.name);

    const base = `/v1/apps/${app.body.id}/users`;
    const user = await api.post(base, { name: 'u' });
    const session = await api.post(`${base}/${user.body.id}/sessions`, {});
    const messages = `${base}/${user.body.id}/sessions/${session.body.id}/messages`;
    const message = await api.post(messages, { content: CUT, is_user: true, metadata: { note: CUT } });
    expect(message.status).toBe(200);
    expect(message.body).toMatchObject({ content: MENDED, metadata: { note: MENDED } });
    expect((await api.get(`${messages}/${message.body.id}`)).body).toMatchObject({ content: MENDED, metadata: { note: MENDED } });

    const meta = await api.post(`${base}/${user.body.id}/metamessages`, { metamessage_type: `label \udc00`, content: CUT });
    expect(meta.status).toBe(200);
    expect(meta.body).toMatchObject({ label: 'label \ufffd', content: MENDED });
    const listed = await api.post(`${base}/${user.body.id}/metamessages/list`, {});
    expect(listed.body.items[0]).toMatchObject({ label: 'label \ufffd', content: MENDED });
  });

  it('counts an unpaired surrogate as one character against a length limit, and echoes the input as sent', async () => {
    // a v1 metamessage label holds at most 50 characters
    const app = await api.post('/v1/apps', { name: `app ${uniqueId()}` });
    const user = await api.post(`/v1/apps/${app.body.id}/users`, { name: 'u' });
    const url = `/v1/apps/${app.body.id}/users/${user.body.id}/metamessages`;
    expect((await api.post(url, { metamessage_type: `${'x'.repeat(49)}\ud83d`, content: 'c' })).status).toBe(200);
    const long = `${'x'.repeat(50)}\ud83d`;
    const refused = await api.post(url, { metamessage_type: long, content: 'c' });
    expect(refused.status).toBe(422);
    expect(refused.body.detail).toEqual([expect.objectContaining({ type: 'string_too_long', loc: ['body', 'metamessage_type'] })]);
    // v2/v3 errors carry the input: as it was sent
    const id = `bad \ud83d`;
    const badId = await api.post('/v3/workspaces', { id });
    expect(badId.status).toBe(422);
    expect(badId.body.detail).toEqual([expect.objectContaining({ type: 'string_pattern_mismatch', loc: ['body', 'id'], input: id })]);
  });
});
