import { createSigner } from 'fast-jwt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, TEST_SECRET, uniqueId, type TestApi, type TestResponse } from '../../support/test-app.js';
import { makeMessages, makeMetamessage, makeOtherUser, makeScope, makeSession, type V1Scope } from './fixtures.js';
import { ADMIN_ONLY, INVALID, NOT_PERMITTED, NO_TOKEN, UNAUTHORIZED } from '../../support/auth-details.js';

/*
 * v1 authentication and scopes with AUTH_USE_AUTH on (contract-v1 §4, §2.7), and the optional
 * bearer header of the metamessage update (seed part 5): Engram serves a request without a token
 * only where the route's rule can be met without claims, which no v1 route allows, so it is a
 * 401 `No access token provided` after JSON parsing.
 */


let api: TestApi;
let admin: string;
beforeAll(async () => {
  api = await buildTestApp({ AUTH_USE_AUTH: 'true' });
  admin = api.token({ isAdmin: true });
});
afterAll(() => api.close());

const as = (token: string) => ({ token });
const v1Token = (claims: { appId?: string; userId?: string; sessionId?: string }) => api.token({ v1: claims });

function sign(payload: Record<string, unknown>, key = TEST_SECRET) {
  return createSigner({ key, algorithm: 'HS256', noTimestamp: true })(payload);
}

function expectDenied(response: TestResponse, detail: string, label = '') {
  expect(response.status, `${label} ${response.text}`).toBe(401);
  expect(response.body, label).toEqual({ detail });
}

/** A user with a session, a message and a metamessage, made with the admin token. */
async function world() {
  const scope = await makeScope(api, as(admin));
  const session = await makeSession(api, scope, {}, as(admin));
  const [message] = await makeMessages(api, scope, session.id, [{ content: 'x', is_user: true }], as(admin));
  const meta = await makeMetamessage(api, scope, { session_id: session.id }, as(admin));
  const other = await makeOtherUser(api, scope, as(admin));
  return { scope, session, message, meta, other, metaUrl: `${scope.base}/metamessages/${meta.id}` };
}

describe('PUT .../metamessages/{id} with auth on (seed 4.1, part 5)', () => {
  it('without a token: 401 No access token provided, after JSON parsing and before validation', async () => {
    const w = await world();
    expectDenied(await api.put(w.metaUrl, { metadata: { x: 1 } }), NO_TOKEN);
    expectDenied(await api.put(w.metaUrl, { metadata: 'not an object' }), NO_TOKEN, 'invalid body');
    expectDenied(await api.put(w.metaUrl, {}, { headers: { authorization: 'Basic abc' } }), NO_TOKEN, 'other scheme');
    expectDenied(await api.put(w.metaUrl, {}, { headers: { authorization: 'Bearer ' } }), NO_TOKEN, 'empty credentials');
    const broken = await api.put(w.metaUrl, undefined, { raw: '{', headers: { 'content-type': 'application/json' } });
    expect(broken.status).toBe(422);
    expect(broken.body.detail[0]).toMatchObject({ type: 'json_invalid' });
    expect(await api.get(w.metaUrl, as(admin))).toMatchObject({ body: w.meta });
  });

  it('serves admin, app and user tokens of this app or user', async () => {
    const w = await world();
    const tokens = {
      admin,
      app: v1Token({ appId: w.scope.app.id }),
      user: v1Token({ userId: w.scope.user.id }),
      // one matching claim suffices; the other is not cross-checked (§4.4)
      userOfOtherApp: v1Token({ userId: w.scope.user.id, appId: 'another-app' }),
      bearerLowercase: 'x',
    };
    for (const [label, token] of Object.entries(tokens)) {
      const headers = label === 'bearerLowercase' ? { headers: { authorization: `bearer ${admin}` } } : as(token);
      const response = await api.put(w.metaUrl, { metadata: { by: label } }, headers);
      expect(response.status, label).toBe(200);
      expect(response.body.metadata).toEqual({ by: label });
    }
  });

  it('refuses tokens that do not cover this app or user, and invalid tokens', async () => {
    const w = await world();
    const refused: [string, string, string][] = [
      ['other user', v1Token({ userId: w.other.user.id }), NOT_PERMITTED],
      ['other app', v1Token({ appId: 'another-app' }), NOT_PERMITTED],
      ["the user's session", v1Token({ sessionId: w.session.id }), NOT_PERMITTED],
      ['no claims', sign({ t: '' }), NOT_PERMITTED],
      // claims that are not non-empty strings can never match a path value: ignored, not invalid
      ['non-string claims', sign({ ap: 5, us: [w.scope.user.id], se: null }), NOT_PERMITTED],
      ['empty claims', sign({ ap: '', us: '' }), NOT_PERMITTED],
      ['v3 workspace claim', api.token({ workspaceId: w.scope.app.name }), NOT_PERMITTED],
      ['bad signature', sign({ ad: true }, 'another-secret'), INVALID],
      ['garbage', 'not-a-jwt', INVALID],
      ['expired', sign({ ad: true, exp: Math.floor(Date.now() / 1000) - 10 }), INVALID],
    ];
    for (const [label, token, detail] of refused) {
      expectDenied(await api.put(w.metaUrl, { metadata: { by: label } }, as(token)), detail, label);
    }
    expect((await api.get(w.metaUrl, as(admin))).body).toEqual(w.meta);
  });

  it('validates after authorization', async () => {
    const w = await world();
    const response = await api.put(w.metaUrl, { metadata: 'x' }, as(v1Token({ userId: w.scope.user.id })));
    expect(response.status).toBe(422);
    expect(response.body.detail).toEqual([{ loc: ['body', 'metadata'], msg: 'Input should be a valid dictionary', type: 'dict_type' }]);
  });
});

describe('scopes of the other v1 routes (contract-v1 §2, §4.4)', () => {
  it('admin-only routes refuse scoped tokens', async () => {
    const w = await world();
    const appToken = as(v1Token({ appId: w.scope.app.id }));
    expectDenied(await api.post('/v1/apps', { name: uniqueId('app') }, appToken), ADMIN_ONLY);
    expectDenied(await api.post('/v1/apps/list', {}, appToken), ADMIN_ONLY);
    expectDenied(await api.get(`/v1/apps/name/${w.scope.app.name}`, appToken), ADMIN_ONLY);
    expectDenied(await api.get(`/v1/apps/get_or_create/${w.scope.app.name}`, appToken), ADMIN_ONLY);
    expectDenied(await api.post('/v1/keys?app_id=x', undefined, appToken), ADMIN_ONLY);
    expectDenied(await api.post('/v1/apps/list', {}), NO_TOKEN);
  });

  it('GET /v1/apps reads the app from ?app_id= or the ap claim', async () => {
    const w = await world();
    const appToken = as(v1Token({ appId: w.scope.app.id }));
    expect((await api.get('/v1/apps', appToken)).body.id).toBe(w.scope.app.id);
    expect((await api.get(`/v1/apps?app_id=${w.scope.app.id}`, appToken)).status).toBe(200);
    expectDenied(await api.get('/v1/apps?app_id=another-app', appToken), UNAUTHORIZED);
    expectDenied(await api.get('/v1/apps', as(v1Token({ userId: w.scope.user.id }))), 'App ID not found in query parameter or JWT');
    // a token without `ap` (the reference lets it read any app) or a v3 key reaches no app
    expectDenied(await api.get(`/v1/apps?app_id=${w.scope.app.id}`, as(v1Token({ userId: 'u' }))), UNAUTHORIZED);
    expectDenied(await api.get(`/v1/apps?app_id=${w.scope.app.id}`, as(api.token({ workspaceId: 'elsewhere' }))), UNAUTHORIZED);
    expectDenied(await api.get(`/v1/apps?app_id=${w.scope.app.id}`), NO_TOKEN);
    // an admin token names no app either
    expectDenied(await api.get('/v1/apps', as(admin)), 'App ID not found in query parameter or JWT');
    expect((await api.get(`/v1/apps?app_id=${w.scope.app.id}`, as(admin))).body.id).toBe(w.scope.app.id);
  });

  it('PUT /v1/apps/{id} is S(app): user tokens are refused', async () => {
    const w = await world();
    expect((await api.put(`/v1/apps/${w.scope.app.id}`, { metadata: { a: 1 } }, as(v1Token({ appId: w.scope.app.id })))).status).toBe(200);
    expectDenied(await api.put(`/v1/apps/${w.scope.app.id}`, { metadata: {} }, as(v1Token({ userId: w.scope.user.id }))), NOT_PERMITTED);
  });

  it('user routes: S(app) for name lookups, the user from the query for create and list', async () => {
    const w = await world();
    const app = w.scope.app.id;
    const userToken = as(v1Token({ userId: w.scope.user.id }));
    expectDenied(await api.get(`/v1/apps/${app}/users/name/${w.scope.user.name}`, userToken), NOT_PERMITTED);
    // S(app) protects only the app: a user id in the query does not open it
    expectDenied(await api.get(`/v1/apps/${app}/users/name/${w.scope.user.name}?user_id=${w.scope.user.id}`, userToken), NOT_PERMITTED);
    expectDenied(await api.put(`/v1/apps/${app}?user_id=${w.scope.user.id}`, { metadata: {} }, userToken), NOT_PERMITTED);
    expectDenied(await api.get(`/v1/apps/${app}/users/get_or_create/x`, userToken), NOT_PERMITTED);
    expectDenied(await api.post(`/v1/apps/${app}/users`, { name: 'new' }, userToken), NOT_PERMITTED);
    // the reference's quirk: the query's user_id is what the scope check protects
    expect((await api.post(`/v1/apps/${app}/users?user_id=${w.scope.user.id}`, { name: uniqueId('u') }, userToken)).status).toBe(200);
    expect((await api.post(`/v1/apps/${app}/users/list?user_id=${w.scope.user.id}`, {}, userToken)).status).toBe(200);
    expect((await api.put(w.scope.base, { metadata: { me: true } }, userToken)).status).toBe(200);
    expectDenied(await api.put(w.other.base, { metadata: {} }, userToken), NOT_PERMITTED);
  });

  it('GET .../users reads the user from ?user_id= or the us claim', async () => {
    const w = await world();
    const url = `/v1/apps/${w.scope.app.id}/users`;
    const userToken = as(v1Token({ userId: w.scope.user.id }));
    expect((await api.get(url, userToken)).body.id).toBe(w.scope.user.id);
    expectDenied(await api.get(`${url}?user_id=${w.other.user.id}`, userToken), UNAUTHORIZED);
    expectDenied(await api.get(url, as(v1Token({ appId: 'another-app', userId: w.scope.user.id }))), UNAUTHORIZED);
    expectDenied(await api.get(url, as(v1Token({ appId: w.scope.app.id }))), 'User ID not found in query parameter or JWT');
    expect((await api.get(`${url}?user_id=${w.other.user.id}`, as(v1Token({ appId: w.scope.app.id })))).status).toBe(200);
    // a token holding no claim on this app or user (a session key, a v3 key) reads no user
    expectDenied(await api.get(`${url}?user_id=${w.other.user.id}`, as(v1Token({ sessionId: w.session.id }))), UNAUTHORIZED);
    expectDenied(await api.get(`${url}?user_id=${w.scope.user.id}`, as(api.token({ workspaceId: 'elsewhere' }))), UNAUTHORIZED);
  });

  it('session and message routes accept session tokens of that session only', async () => {
    const w = await world();
    const sessionToken = as(v1Token({ sessionId: w.session.id }));
    const sessionUrl = `${w.scope.base}/sessions/${w.session.id}`;
    expect((await api.get(`${w.scope.base}/sessions`, sessionToken)).body.id).toBe(w.session.id);
    expectDenied(await api.get(`${w.scope.base}/sessions?session_id=other`, sessionToken), UNAUTHORIZED);
    // a key with no claim on this app, user or session (the reference lets it through) reads none
    expectDenied(await api.get(`${w.scope.base}/sessions?session_id=${w.session.id}`, as(api.token({ workspaceId: 'elsewhere' }))), UNAUTHORIZED);
    expect((await api.post(`${sessionUrl}/messages`, { content: 'y', is_user: false }, sessionToken)).status).toBe(200);
    expect((await api.post(`${sessionUrl}/messages/list`, {}, sessionToken)).body.total).toBe(2);
    expect((await api.get(`${sessionUrl}/messages/${w.message.id}`, sessionToken)).status).toBe(200);
    expect((await api.put(sessionUrl, { metadata: { s: 1 } }, sessionToken)).status).toBe(200);

    const otherSession = await makeSession(api, w.scope, {}, as(admin));
    expectDenied(await api.post(`${w.scope.base}/sessions/${otherSession.id}/messages/list`, {}, sessionToken), NOT_PERMITTED);
    expectDenied(await api.post(`${w.scope.base}/sessions`, {}, sessionToken), NOT_PERMITTED);
    expectDenied(await api.post(`${w.scope.base}/sessions/list`, {}, sessionToken), NOT_PERMITTED);
    expectDenied(await api.post(`${w.scope.base}/metamessages/list`, {}, sessionToken), NOT_PERMITTED);
    expectDenied(await api.get(`${w.scope.base}/sessions`, as(v1Token({ userId: w.scope.user.id }))), 'Session ID not found in query parameter or JWT');
  });

  it('metamessage create, get and list: admin, ap or us', async () => {
    const w = await world();
    const userToken = as(v1Token({ userId: w.scope.user.id }));
    expect((await api.post(`${w.scope.base}/metamessages`, { metamessage_type: 't', content: 'c' }, userToken)).status).toBe(200);
    expect((await api.get(w.metaUrl, userToken)).status).toBe(200);
    expect((await api.post(`${w.scope.base}/metamessages/list`, {}, as(v1Token({ appId: w.scope.app.id })))).body.total).toBe(2);
    expectDenied(await api.get(w.metaUrl, as(v1Token({ userId: w.other.user.id }))), NOT_PERMITTED);
    expectDenied(await api.post(`${w.scope.base}/metamessages`, { metamessage_type: 't', content: 'c' }), NO_TOKEN);
  });
});

describe('POST /v1/keys', () => {
  it('mints keys whose claims open exactly their scope', async () => {
    const w = await world();
    const minted = await api.post(`/v1/keys?user_id=${w.scope.user.id}`, undefined, as(admin));
    expect(minted.status).toBe(200);
    expect(Object.keys(minted.body)).toEqual(['key']);
    const payload = JSON.parse(Buffer.from(minted.body.key.split('.')[1], 'base64url').toString('utf8'));
    expect(payload).toEqual({ t: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/), us: w.scope.user.id });
    expect((await api.get(w.metaUrl, as(minted.body.key))).status).toBe(200);
    expectDenied(await api.get(`${w.other.base}/metamessages/list`, as(minted.body.key)), NOT_PERMITTED);

    const all = await api.post(`/v1/keys?app_id=A&user_id=U&session_id=S&collection_id=C`, undefined, as(admin));
    const claims = JSON.parse(Buffer.from(all.body.key.split('.')[1], 'base64url').toString('utf8'));
    expect(claims).toMatchObject({ ap: 'A', us: 'U', se: 'S', co: 'C' });
  });

  it('a key with expires_at works until then (the reference mints unusable ones)', async () => {
    const w = await world();
    const expiresAt = new Date(Date.now() + 3600_000).toISOString();
    const minted = await api.post(`/v1/keys?app_id=${w.scope.app.id}&expires_at=${expiresAt}`, undefined, as(admin));
    expect(minted.status).toBe(200);
    const payload = JSON.parse(Buffer.from(minted.body.key.split('.')[1], 'base64url').toString('utf8'));
    expect(payload.exp).toBe(Math.floor(Date.parse(expiresAt) / 1000));
    expect((await api.get('/v1/apps', as(minted.body.key))).body.id).toBe(w.scope.app.id);
  });

  it('a key that expired at or before 1970 is minted expired, not a 500', async () => {
    const w = await world();
    for (const value of ['-1', '1960-01-01T00:00:00Z']) {
      const minted = await api.post(`/v1/keys?app_id=${w.scope.app.id}&expires_at=${encodeURIComponent(value)}`, undefined, as(admin));
      expect(minted.status, value).toBe(200);
      const payload = JSON.parse(Buffer.from(minted.body.key.split('.')[1], 'base64url').toString('utf8'));
      expect(payload, value).toMatchObject({ exp: 1, ap: w.scope.app.id });
      const used = await api.get('/v1/apps', as(minted.body.key));
      expect(used.status, value).toBe(401);
      expect(used.body, value).toEqual({ detail: 'Invalid JWT' });
    }
  });

  it('needs at least one id, and a valid expires_at', async () => {
    for (const query of ['', '?app_id=', '?app_id=&user_id=']) {
      const response = await api.post(`/v1/keys${query}`, undefined, as(admin));
      expect(response.status, query).toBe(422);
      expect(response.body).toEqual({ detail: 'At least one of app_id, user_id, session_id, or collection_id must be provided' });
    }
    const bad = await api.post('/v1/keys?app_id=a&expires_at=notadate', undefined, as(admin));
    expect(bad.status).toBe(422);
    expect(bad.body).toEqual({
      detail: [{ loc: ['query', 'expires_at'], msg: 'Input should be a valid datetime or date, input is too short', type: 'datetime_from_date_parsing' }],
    });
  });
});

describe('auth off', () => {
  let open: TestApi;
  let scope: V1Scope;
  beforeAll(async () => {
    open = await buildTestApp();
    scope = await makeScope(open);
  });
  afterAll(() => open.close());

  it('ignores the Authorization header entirely', async () => {
    const meta = await makeMetamessage(open, scope);
    const variants: Record<string, string>[] = [{}, { authorization: 'Bearer garbage' }, { authorization: 'Basic x' }];
    for (const headers of variants) {
      const response = await open.put(`${scope.base}/metamessages/${meta.id}`, { metadata: { ok: true } }, { headers });
      expect(response.status).toBe(200);
    }
    expect((await open.post('/v1/apps/list', {}, { token: 'garbage' })).status).toBe(200);
  });

  it('answers 405 Feature is disabled for keys', async () => {
    const response = await open.post('/v1/keys?app_id=a');
    expect(response.status).toBe(405);
    expect(response.body).toEqual({ detail: 'Feature is disabled' });
  });
});
