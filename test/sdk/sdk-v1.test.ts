/*
 * The official v1 client `honcho-ai` 0.2.0 (Stainless, talks to /v1) against the real server on
 * an ephemeral port, with auth on. The client is used unmodified; the server records every
 * exchange, so a failure names the exact request the client made and what it got back.
 *
 * Covered: apps, users, sessions, messages, metamessages (create, get, list, and every kind of
 * seed-4.1 update), keys. Not covered (not served): collections, documents, chat.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type HonchoClient from 'honcho-ai';
import { mintToken } from '../../src/http/shared/auth.js';
import { describeExchange, startSdkServer, type Exchange, type SdkServer } from '../support/sdk-server.js';
import { TEST_SECRET, uniqueId } from '../support/test-app.js';

/** The installed client's version, or undefined when `honcho-ai` is not installed. */
function installedVersion(): string | undefined {
  try {
    const main = createRequire(import.meta.url).resolve('honcho-ai');
    return (JSON.parse(readFileSync(join(dirname(main), 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return undefined;
  }
}

const VERSION = installedVersion();
const TITLE =
  VERSION === undefined
    ? 'honcho-ai 0.2.0 over /v1 (skipped: the package is not installed; it is a devDependency, run npm ci)'
    : `honcho-ai ${VERSION} over /v1`;

describe.skipIf(VERSION === undefined)(TITLE, () => {
  let server: SdkServer;
  let Honcho: typeof HonchoClient;
  let NotFoundError: typeof import('honcho-ai').NotFoundError;
  let admin: HonchoClient;

  beforeAll(async () => {
    const sdk = await import('honcho-ai');
    Honcho = sdk.default;
    NotFoundError = sdk.NotFoundError;
    server = await startSdkServer({ AUTH_USE_AUTH: 'true', AUTH_JWT_SECRET: TEST_SECRET });
    admin = client(mintToken(TEST_SECRET, { isAdmin: true }));
  });
  afterAll(async () => {
    // SDK_TRACE=1 prints every exchange the client made, for reports and debugging.
    if (process.env.SDK_TRACE) console.log(server.exchanges.map(describeExchange).join('\n'));
    await server?.close();
  });

  function client(apiKey: string): HonchoClient {
    // maxRetries 0: a 5xx must surface as the error it is, not as three identical requests.
    return new Honcho({ baseURL: server.baseURL, apiKey, maxRetries: 0 });
  }

  function expectAllOk(exchanges: Exchange[]): void {
    expect(exchanges.filter((e) => e.status >= 400).map(describeExchange)).toEqual([]);
  }

  async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
    const out: T[] = [];
    for await (const item of items) out.push(item);
    return out;
  }

  it('is the version the issue names', () => {
    expect(VERSION).toBe('0.2.0');
  });

  it('apps: create, get, get by name, get or create, update, list', async () => {
    const mark = server.exchanges.length;
    const name = uniqueId('sdk1');
    const app = await admin.apps.create({ name, metadata: { tier: 'gold' } });
    expect(app).toMatchObject({ name, metadata: { tier: 'gold' } });
    expect(await admin.apps.get({ app_id: app.id })).toEqual(app);
    expect(await admin.apps.getByName(name)).toEqual(app);
    expect(await admin.apps.getOrCreate(name)).toEqual(app);
    const updated = await admin.apps.update(app.id, { metadata: { tier: 'platinum' } });
    expect(updated).toEqual({ ...app, metadata: { tier: 'platinum' } });
    const listed = await collect(admin.apps.list({ filter: { tier: 'platinum' }, size: 100 }));
    expect(listed.map((a) => a.id)).toContain(app.id);
    expectAllOk(server.since(mark));
  });

  it('users: create, get, get by name, get or create, update, list across pages', async () => {
    const mark = server.exchanges.length;
    const app = await admin.apps.getOrCreate(uniqueId('sdk1'));
    const alice = await admin.apps.users.create(app.id, { name: 'alice', metadata: { n: 1 } });
    expect(alice).toMatchObject({ name: 'alice', app_id: app.id, metadata: { n: 1 } });
    expect(await admin.apps.users.get(app.id, { user_id: alice.id })).toEqual(alice);
    expect(await admin.apps.users.getByName(app.id, 'alice')).toEqual(alice);
    const bob = await admin.apps.users.getOrCreate(app.id, 'bob');
    expect(await admin.apps.users.update(app.id, bob.id, { metadata: { n: 2 } })).toMatchObject({ id: bob.id, metadata: { n: 2 } });
    await admin.apps.users.create(app.id, { name: 'carol' });
    // size 1: the client follows `pages` to fetch every page
    const names = (await collect(admin.apps.users.list(app.id, { size: 1 }))).map((u) => u.name);
    expect(names).toEqual(['alice', 'bob', 'carol']);
    const filtered = await collect(admin.apps.users.list(app.id, { filter: { n: 2 } }));
    expect(filtered.map((u) => u.name)).toEqual(['bob']);
    expectAllOk(server.since(mark));
  });

  it('sessions and messages: create, batch, get, list, update, delete, clone', async () => {
    const mark = server.exchanges.length;
    const app = await admin.apps.getOrCreate(uniqueId('sdk1'));
    const user = await admin.apps.users.getOrCreate(app.id, 'alice');
    const sessions = admin.apps.users.sessions;
    const session = await sessions.create(app.id, user.id, { metadata: { topic: 'sdk' } });
    expect(session).toMatchObject({ is_active: true, user_id: user.id, app_id: app.id, metadata: { topic: 'sdk' } });
    expect(await sessions.get(app.id, user.id, { session_id: session.id })).toEqual(session);

    const first = await sessions.messages.create(app.id, user.id, session.id, { content: 'hello', is_user: true });
    expect(first).toMatchObject({ content: 'hello', is_user: true, session_id: session.id, app_id: app.id, user_id: user.id });
    const batch = await sessions.messages.batch(app.id, user.id, session.id, {
      messages: [
        { content: 'hi, how can I help?', is_user: false, metadata: { model: 'x' } },
        { content: 'tell me more', is_user: true },
      ],
    });
    expect(batch.map((m) => [m.content, m.is_user])).toEqual([
      ['hi, how can I help?', false],
      ['tell me more', true],
    ]);
    expect(await sessions.messages.get(app.id, user.id, session.id, first.id)).toEqual(first);
    const all = await collect(sessions.messages.list(app.id, user.id, session.id, { size: 2 }));
    expect(all.map((m) => m.content)).toEqual(['hello', 'hi, how can I help?', 'tell me more']);
    const reversed = await collect(sessions.messages.list(app.id, user.id, session.id, { reverse: true }));
    expect(reversed.map((m) => m.content)).toEqual(['tell me more', 'hi, how can I help?', 'hello']);
    const tagged = await sessions.messages.update(app.id, user.id, session.id, first.id, { metadata: { seen: true } });
    expect(tagged).toEqual({ ...first, metadata: { seen: true } });

    const clone = await sessions.clone(app.id, user.id, session.id, { message_id: batch[0].id });
    const cloned = await collect(sessions.messages.list(app.id, user.id, clone.id));
    expect(cloned.map((m) => m.content)).toEqual(['hello', 'hi, how can I help?']);

    expect(await sessions.update(app.id, user.id, session.id, { metadata: { topic: 'done' } })).toMatchObject({ metadata: { topic: 'done' } });
    expect(await sessions.delete(app.id, user.id, session.id)).toEqual({ message: 'Session deleted successfully' });
    const active = await collect(sessions.list(app.id, user.id, { is_active: true }));
    expect(active.map((s) => s.id)).toEqual([clone.id]);
    const every = await collect(sessions.list(app.id, user.id));
    expect(every.map((s) => s.id)).toEqual([session.id, clone.id]);
    expectAllOk(server.since(mark));
  });

  it('metamessages: create, get, list and every kind of update (seed 4.1)', async () => {
    const mark = server.exchanges.length;
    const app = await admin.apps.getOrCreate(uniqueId('sdk1'));
    const user = await admin.apps.users.getOrCreate(app.id, 'alice');
    const s1 = await admin.apps.users.sessions.create(app.id, user.id, {});
    const s2 = await admin.apps.users.sessions.create(app.id, user.id, {});
    const [m1] = await admin.apps.users.sessions.messages.batch(app.id, user.id, s1.id, { messages: [{ content: 'one', is_user: true }] });
    const [m2, m2b] = await admin.apps.users.sessions.messages.batch(app.id, user.id, s2.id, {
      messages: [
        { content: 'two', is_user: false },
        { content: 'three', is_user: true },
      ],
    });
    const metas = admin.apps.users.metamessages;

    const meta = await metas.create(app.id, user.id, {
      metamessage_type: 'summary',
      content: 'a note',
      session_id: s1.id,
      message_id: m1.id,
      metadata: { a: 1, b: 2 },
    });
    expect(meta).toMatchObject({ label: 'summary', metamessage_type: 'summary', session_id: s1.id, message_id: m1.id, metadata: { a: 1, b: 2 } });
    expect(await metas.get(app.id, user.id, meta.id)).toEqual(meta);

    // each field alone
    let current = await metas.update(app.id, user.id, meta.id, { metadata: { c: 3 } });
    expect(current).toEqual({ ...meta, metadata: { c: 3 } });
    current = await metas.update(app.id, user.id, meta.id, { metamessage_type: 'renamed' });
    expect(current).toEqual({ ...meta, metadata: { c: 3 }, label: 'renamed', metamessage_type: 'renamed' });
    current = await metas.update(app.id, user.id, meta.id, { session_id: s2.id });
    expect(current).toMatchObject({ session_id: s2.id, message_id: m1.id });
    current = await metas.update(app.id, user.id, meta.id, { message_id: m2.id });
    expect(current).toMatchObject({ session_id: s2.id, message_id: m2.id });
    // together
    current = await metas.update(app.id, user.id, meta.id, { session_id: s1.id, message_id: m1.id, metamessage_type: 'both', metadata: {} });
    expect(current).toEqual({ ...meta, session_id: s1.id, message_id: m1.id, label: 'both', metamessage_type: 'both', metadata: {} });
    // nothing: all null, and an empty body
    expect(await metas.update(app.id, user.id, meta.id, { session_id: null, message_id: null, metamessage_type: null, metadata: null })).toEqual(current);
    expect(await metas.update(app.id, user.id, meta.id, {})).toEqual(current);

    const other = await metas.create(app.id, user.id, { metamessage_type: 'other', content: '', session_id: s2.id, message_id: m2b.id });
    expect((await collect(metas.list(app.id, user.id))).map((m) => m.id)).toEqual([meta.id, other.id]);
    expect((await collect(metas.list(app.id, user.id, { metamessage_type: 'other' }))).map((m) => m.id)).toEqual([other.id]);
    expect((await collect(metas.list(app.id, user.id, { session_id: s1.id }))).map((m) => m.id)).toEqual([meta.id]);
    expectAllOk(server.since(mark));
  });

  it('surfaces the 404 and 422 answers as the client error classes', async () => {
    const app = await admin.apps.getOrCreate(uniqueId('sdk1'));
    const user = await admin.apps.users.getOrCreate(app.id, 'alice');
    const loose = await admin.apps.users.metamessages.create(app.id, user.id, { metamessage_type: 'loose', content: 'c' });
    const missing = admin.apps.users.metamessages.update(app.id, user.id, 'nope', { metadata: {} });
    await expect(missing).rejects.toBeInstanceOf(NotFoundError);
    await expect(missing).rejects.toMatchObject({ status: 404, error: { detail: 'Metamessage with ID nope not found' } });
    const orphan = admin.apps.users.metamessages.update(app.id, user.id, loose.id, { message_id: 'm' });
    await expect(orphan).rejects.toMatchObject({ status: 422, error: { detail: 'Cannot specify message_id without session_id' } });
  });

  it('keys: an admin mints a user key, which reaches that user only', async () => {
    const mark = server.exchanges.length;
    const app = await admin.apps.getOrCreate(uniqueId('sdk1'));
    const alice = await admin.apps.users.getOrCreate(app.id, 'alice');
    const bob = await admin.apps.users.getOrCreate(app.id, 'bob');
    // the client types the key response as unknown; the wire body is {"key": "<JWT>"} (contract-v1 §2.7)
    const { key } = (await admin.keys.create({ user_id: alice.id })) as { key: string };
    const asAlice = client(key);
    const meta = await asAlice.apps.users.metamessages.create(app.id, alice.id, { metamessage_type: 'mine', content: 'c' });
    expect(await asAlice.apps.users.metamessages.update(app.id, alice.id, meta.id, { metadata: { by: 'alice' } })).toMatchObject({
      metadata: { by: 'alice' },
    });
    expectAllOk(server.since(mark));
    await expect(asAlice.apps.users.metamessages.list(app.id, bob.id)).rejects.toMatchObject({
      status: 401,
      error: { detail: 'JWT not permissioned for this resource' },
    });
    await expect(client('not-a-token').apps.get({ app_id: app.id })).rejects.toMatchObject({ status: 401, error: { detail: 'Invalid JWT' } });
  });
});
