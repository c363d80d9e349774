import { createSigner } from 'fast-jwt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RouteScope } from '../../src/http/shared/auth.js';
import type { DeclaredRoute } from '../../src/http/shared/route-index.js';
import { buildTestApp, TEST_SECRET, uniqueId, type TestApi } from '../support/test-app.js';
import { ADMIN_ONLY, APP_ID_MISSING, INVALID, MISSING_WORKSPACE, NOT_PERMITTED, NO_TOKEN, UNAUTHORIZED, USER_ID_MISSING } from '../support/auth-details.js';

/*
 * Permissions generated from the routes themselves. Every route of every generation declares its
 * scope when it is defined (shared/route.ts, `config.access`); the app's route table lists them.
 * For each route this test
 *   1. checks the declared scope against the contract's scope rules, written below from
 *      contract-v3 §2.5 and §9.1, scopes.md S2/S3 and contract-v1 §2 as rules over the path (so a
 *      new route is placed by its path; a route the rules place elsewhere needs a row in
 *      EXCEPTIONS, with the contract line or the reason), and
 *   2. sends it every credential of a fixed set, on a seeded workspace (v1: app), and checks each
 *      answer against what the contract's algorithm (contract-v3 §2.3/§2.4, §9.2; contract-v1
 *      §4.3/§4.4), implemented again here from the text, says of that scope: refused with the
 *      exact 401 body, or admitted (then anything but 401, 403 or a 5xx: 404 or 422 are fine,
 *      since authentication runs before validation, contract §1.3).
 * Routes that authorize themselves (`self`) have their rule, and the valid body their check
 * needs, in SELF_RULES; a route whose handler adds a check to its scope is in HANDLER_RULES. A
 * `self` route without a rule fails here, as do a path parameter without a seeded value and an
 * operation of /openapi.json under /v1, /v2 or /v3 that declares no scope. Bodies are empty
 * (self routes aside), so admitted requests mostly end in a 422; a DELETE route runs on a
 * workspace (or app) of its own.
 * The hand-written suites (auth.test.ts, v1/auth.test.ts) keep the quirks a scope cannot say.
 */

const SESSION_ID_MISSING = 'Session ID not found in query parameter or JWT';

// ------------------------------------------------------------------ the contract's scope rules

type Kind = 'none' | 'admin' | 'self' | 'workspace' | 'peer' | 'session' | 'member-read';

function kindOf(scope: RouteScope): Kind {
  return scope.kind === 'session' && scope.memberRead === true ? 'member-read' : scope.kind;
}

/**
 * Routes the path rules below place otherwise, each with its source. Keys: `METHOD /vN/path`.
 */
const EXCEPTIONS: Record<string, Kind> = {
  // v2's clone is a GET but a write: WS (contract-v3 §2.5 "POST .../clone", §9.1 "Session clone")
  'GET /v2/workspaces/:workspace_id/sessions/:session_id/clone': 'session',
  // removing memory, additions to the reference (docs/compatibility.md, docs/forgetting.md):
  // a peer is deleted with a workspace or admin key, the forget records read with an admin key
  'DELETE /v3/workspaces/:workspace_id/peers/:peer_id': 'workspace',
  'GET /v3/workspaces/:workspace_id/forget/records': 'admin',
};

/** What the contract says a workspace-generation route (v2, v3) is scoped by. */
function workspaceRouteKind(method: string, url: string, generation: 'v2' | 'v3'): Kind | undefined {
  const path = url.slice(3); // after /v2 or /v3
  if (path === '/keys' || path === '/workspaces/list') return 'admin';
  if (method === 'POST' && (path === '/workspaces' || path === '/workspaces/:workspace_id/peers' || path === '/workspaces/:workspace_id/sessions')) return 'self';
  if (!path.startsWith('/workspaces/:workspace_id')) return undefined;
  // §9.1 "Webhook routes auth": self-authorizing in v2, workspace-scoped in v3
  if (path.startsWith('/workspaces/:workspace_id/webhooks')) return generation === 'v2' ? 'self' : 'workspace';
  if (path.startsWith('/workspaces/:workspace_id/sessions/:session_id')) {
    // §2.5: reads of a session (GET, and the POST list and search) are WS+MR, the rest WS
    const isRead = method === 'GET' || (method === 'POST' && (path.endsWith('/list') || path.endsWith('/search')));
    return isRead ? 'member-read' : 'session';
  }
  if (path.startsWith('/workspaces/:workspace_id/peers/:peer_id')) return 'peer';
  // everything else of a workspace, the scope routes included (scopes.md S2: workspace-level)
  return 'workspace';
}

/** contract-v1 §2: A = admin, H = self, S(app) = workspace, S(app, user) = peer, S(app, user, session) = session. */
function v1RouteKind(method: string, url: string): Kind | undefined {
  if (url === '/v1/keys') return 'admin';
  if (url === '/v1/apps' || url === '/v1/apps/list' || url.startsWith('/v1/apps/name/') || url.startsWith('/v1/apps/get_or_create/')) {
    return method === 'GET' && url === '/v1/apps' ? 'self' : 'admin';
  }
  if (!url.startsWith('/v1/apps/:app_id')) return undefined;
  if (method === 'GET' && (url === '/v1/apps/:app_id/users' || url === '/v1/apps/:app_id/users/:user_id/sessions')) return 'self';
  // metamessage routes protect only app and user (§4.4); session routes all three
  if (url.startsWith('/v1/apps/:app_id/users/:user_id/sessions/:session_id')) return 'session';
  if (url.startsWith('/v1/apps/:app_id/users/:user_id')) return 'peer';
  // POST users and users/list protect the user of the query string: S(app, user)
  if (method === 'POST' && (url === '/v1/apps/:app_id/users' || url === '/v1/apps/:app_id/users/list')) return 'peer';
  return 'workspace';
}

function contractKind(route: DeclaredRoute): Kind | undefined {
  const key = `${route.method} ${route.url}`;
  if (key in EXCEPTIONS) return EXCEPTIONS[key];
  const { generation } = route.access;
  return generation === 'v1' ? v1RouteKind(route.method, route.url) : workspaceRouteKind(route.method, route.url, generation);
}

// ------------------------------------------------------------------ the seeded world and credentials

/** The ids a route's path parameters take: one workspace (and one v1 app) with what every route names. */
interface World {
  ws: string;
  otherWs: string;
  /** alice and bob are active members of s1; carol of no session; s2 has no members. */
  params: Record<string, string>;
  v1: { app: string; otherApp: string; user: string; otherUser: string; session: string; otherSession: string; params: Record<string, string> };
}

/** A token's claims as the contracts name them (`ad w p s`, v1 `ap us se`). */
interface Claims {
  ad?: boolean;
  w?: string;
  p?: string;
  s?: string;
  ap?: string;
  us?: string;
  se?: string;
}

/** One credential: the Authorization header it sends and, for a valid token, its claims. */
interface Credential {
  name: string;
  header?: string;
  claims?: Claims;
  /** Not a usable token: the detail every route answers. */
  refusedAs?: string;
}

function sign(payload: Record<string, unknown>, key = TEST_SECRET): string {
  return createSigner({ key, algorithm: 'HS256', noTimestamp: true })(payload);
}

function credentials(world: World): Credential[] {
  const { ws, otherWs, v1 } = world;
  const token = (name: string, claims: Claims): Credential => ({ name, header: `Bearer ${sign({ t: '', ...claims })}`, claims });
  return [
    { name: 'no token', refusedAs: NO_TOKEN },
    { name: 'not a JWT', header: 'Bearer not-a-jwt', refusedAs: INVALID },
    { name: 'signed with another key', header: `Bearer ${sign({ t: '', ad: true }, 'another-secret-of-some-length')}`, refusedAs: INVALID },
    { name: 'expired', header: `Bearer ${sign({ t: '', w: ws, exp: 1_000_000_000 })}`, refusedAs: INVALID },
    token('admin', { ad: true }),
    token('no claims', {}),
    token('workspace key', { w: ws }),
    token('key of another workspace', { w: otherWs }),
    token('peer key, path peer (member of s1)', { w: ws, p: 'alice' }),
    token('peer key, other peer, member of s1', { w: ws, p: 'bob' }),
    token('peer key, other peer, no session', { w: ws, p: 'carol' }),
    token('session key, path session', { w: ws, s: 's1' }),
    token('session key, other session', { w: ws, s: 's2' }),
    token('peer and session key', { w: ws, p: 'alice', s: 's1' }),
    token('peer key without workspace', { p: 'alice' }),
    token('session key without workspace', { s: 's1' }),
    token('peer key of another workspace', { w: otherWs, p: 'alice' }),
    token('session key of another workspace', { w: otherWs, s: 's1' }),
    token('v1 app key', { ap: v1.app }),
    token('v1 key of another app', { ap: v1.otherApp }),
    token('v1 user key', { us: v1.user }),
    token('v1 key of another user', { us: v1.otherUser }),
    token('v1 session key', { se: v1.session }),
    token('v1 key of another session', { se: v1.otherSession }),
    token('v1 user key of another app', { us: v1.user, ap: v1.otherApp }),
  ];
}

// ------------------------------------------------------------------ the contract's algorithms

/** undefined: authentication admits the request; a string: the 401 detail. */
type Outcome = string | undefined;

/** The ids the route's scope reads, from its path (no query parameters are sent). */
interface RouteIds {
  workspace?: string;
  peer?: string;
  session?: string;
}

/** contract-v3 §2.4, "narrowest claim wins", after the token-level checks of §2.3. */
function v3Outcome(kind: Kind, c: Claims, ids: RouteIds, isMember: (peer: string, session: string) => boolean): Outcome {
  if (c.ad === true) return undefined;
  if (kind === 'admin') return ADMIN_ONLY;
  if (c.w !== ids.workspace) return NOT_PERMITTED;
  if (c.s !== undefined) return (kind === 'session' || kind === 'member-read') && c.s === ids.session ? undefined : NOT_PERMITTED;
  if (c.p !== undefined) {
    if (kind === 'peer' && c.p === ids.peer) return undefined;
    if (kind === 'member-read' && ids.session !== undefined && isMember(c.p, ids.session)) return undefined;
    return NOT_PERMITTED;
  }
  return undefined;
}

/** contract-v3 §9.2: any non-admin token whose `w` is the route's workspace passes every scoped route. */
function v2Outcome(kind: Kind, c: Claims, ids: RouteIds): Outcome {
  if (c.ad === true) return undefined;
  if (kind === 'admin') return ADMIN_ONLY;
  return c.w !== undefined && c.w === ids.workspace ? undefined : NOT_PERMITTED;
}

/**
 * contract-v1 §4.4: one matching claim among the protected values suffices. The values are the
 * path's (the query, which POST users and users/list read the user from, is not sent).
 */
function v1Outcome(kind: Kind, c: Claims, ids: { app?: string; user?: string; session?: string }): Outcome {
  if (c.ad === true) return undefined;
  if (kind === 'admin') return ADMIN_ONLY;
  const app = ids.app;
  const user = kind === 'peer' || kind === 'session' ? ids.user : undefined;
  const session = kind === 'session' ? ids.session : undefined;
  if (session !== undefined && c.se === session) return undefined;
  if (user !== undefined && c.us === user) return undefined;
  if (app !== undefined && c.ap === app) return undefined;
  return app !== undefined || user !== undefined || session !== undefined ? NOT_PERMITTED : undefined;
}

/** A self-authorizing route: the valid body its check reads, and its rule (contract lines). */
interface SelfRule {
  body?: unknown;
  outcome(c: Claims, world: World): Outcome;
}

/** v2's webhook routes (§9.1): a key's `w`, if any, must be the path's. */
const v2Webhooks: SelfRule = {
  outcome: (c, { ws }) => (c.ad !== true && c.w !== undefined && c.w !== ws ? UNAUTHORIZED : undefined),
};

const SELF_RULES: Record<string, (world: World) => SelfRule> = {};
for (const g of ['v2', 'v3']) {
  // §2.5: a non-admin token needs `w` equal to the body id
  SELF_RULES[`POST /${g}/workspaces`] = ({ ws }) => ({ body: { id: ws }, outcome: (c) => (c.ad === true || c.w === ws ? undefined : UNAUTHORIZED) });
  // §2.5: `w`, if present, is the path's; `p`, if present, the body id
  SELF_RULES[`POST /${g}/workspaces/:workspace_id/peers`] = ({ ws }) => ({
    body: { id: 'alice' },
    outcome: (c) => (c.ad !== true && ((c.w !== undefined && c.w !== ws) || (c.p !== undefined && c.p !== 'alice')) ? UNAUTHORIZED : undefined),
  });
  // §2.5: `w`, if present, is the path's; `s`, if present, the body id
  SELF_RULES[`POST /${g}/workspaces/:workspace_id/sessions`] = ({ ws }) => ({
    body: { id: 's1' },
    outcome: (c) => (c.ad !== true && ((c.w !== undefined && c.w !== ws) || (c.s !== undefined && c.s !== 's1')) ? UNAUTHORIZED : undefined),
  });
}
SELF_RULES['POST /v2/workspaces/:workspace_id/webhooks'] = () => ({ ...v2Webhooks, body: { url: 'https://example.com/permissions' } });
SELF_RULES['GET /v2/workspaces/:workspace_id/webhooks'] = () => v2Webhooks;
SELF_RULES['DELETE /v2/workspaces/:workspace_id/webhooks/:endpoint_id'] = () => v2Webhooks;
SELF_RULES['GET /v2/workspaces/:workspace_id/webhooks/test'] = () => v2Webhooks;
// contract-v1 §2.1: without `?app_id` the app is the token's `ap`, even for an admin
SELF_RULES['GET /v1/apps'] = () => ({ outcome: (c) => (c.ap === undefined ? APP_ID_MISSING : undefined) });
// contract-v1 §2.2: a present `ap` must be the path's; the user is the token's `us`
SELF_RULES['GET /v1/apps/:app_id/users'] = ({ v1 }) => ({
  outcome(c) {
    if (c.ad !== true && c.ap !== undefined && c.ap !== v1.app) return UNAUTHORIZED;
    return c.us === undefined ? USER_ID_MISSING : undefined;
  },
});
// contract-v1 §2.3: present `ap` and `us` must be the path's; the session is the token's `se`
SELF_RULES['GET /v1/apps/:app_id/users/:user_id/sessions'] = ({ v1 }) => ({
  outcome(c) {
    if (c.ad !== true && ((c.ap !== undefined && c.ap !== v1.app) || (c.us !== undefined && c.us !== v1.user))) return UNAUTHORIZED;
    return c.se === undefined ? SESSION_ID_MISSING : undefined;
  },
});

/** Checks a route's handler adds to what its scope admits (contract-v3 §2.5). */
const HANDLER_RULES: Record<string, (c: Claims, ids: RouteIds) => Outcome> = {
  // "a peer token may read only its own config (`p` == path peer)"
  'GET /v3/workspaces/:workspace_id/sessions/:session_id/peers/:peer_id/config': (c, ids) =>
    c.ad !== true && c.p !== undefined && c.p !== ids.peer ? NOT_PERMITTED : undefined,
};

/** What the contract says `credential` meets on `route`: a 401 detail, or undefined for admitted. */
function expectedOutcome(route: DeclaredRoute, kind: Kind, credential: Credential, world: World): Outcome {
  // contract-v3 §2.5 "none": no authentication at all
  if (kind === 'none') return undefined;
  if (credential.refusedAs !== undefined) return credential.refusedAs;
  const c = credential.claims ?? {};
  const key = `${route.method} ${route.url}`;
  const { generation } = route.access;
  const params = generation === 'v1' ? world.v1.params : world.params;
  const inPath = (name: string) => (route.url.includes(`:${name}`) ? params[name] : undefined);
  const ids: RouteIds = { workspace: inPath('workspace_id'), peer: inPath('peer_id'), session: inPath('session_id') };
  // §2.3: a v3 token-level rule, before the admin shortcut and on self routes too
  if (generation === 'v3' && (c.p !== undefined || c.s !== undefined) && c.w === undefined) return MISSING_WORKSPACE;
  if (kind === 'self') return SELF_RULES[key](world).outcome(c, world);
  let outcome: Outcome;
  if (generation === 'v1') outcome = v1Outcome(kind, c, { app: inPath('app_id'), user: inPath('user_id'), session: ids.session });
  else if (generation === 'v2') outcome = v2Outcome(kind, c, ids);
  else outcome = v3Outcome(kind, c, ids, (peer, session) => session === 's1' && (peer === 'alice' || peer === 'bob'));
  if (outcome === undefined && generation !== 'v1') outcome = HANDLER_RULES[key]?.(c, ids);
  return outcome;
}

// ------------------------------------------------------------------ the test

let api: TestApi;
let routes: readonly DeclaredRoute[];
let requests = 0;

beforeAll(async () => {
  api = await buildTestApp({ AUTH_USE_AUTH: 'true' });
  routes = api.declaredRoutes();
});
afterAll(() => api.close());

async function ok(method: string, url: string, body: unknown, admin: string): Promise<any> {
  const response = await api.request(method, url, body, { token: admin });
  expect(response.status, `seeding ${method} ${url}: ${response.text}`).toBeLessThan(300);
  return response.body;
}

/** A workspace: alice and bob in s1, carol alone, an empty s2, a webhook, a message, a conclusion, a scope. */
async function seedWorkspace(): Promise<Pick<World, 'ws' | 'otherWs' | 'params'>> {
  const admin = sign({ t: '', ad: true });
  const ws = uniqueId();
  const base = `/v3/workspaces/${ws}`;
  await ok('POST', '/v3/workspaces', { id: ws }, admin);
  await ok('POST', `${base}/sessions`, { id: 's1', peers: { alice: {}, bob: {} } }, admin);
  await ok('POST', `${base}/sessions`, { id: 's2' }, admin);
  await ok('POST', `${base}/peers`, { id: 'carol' }, admin);
  const hook = await ok('POST', `${base}/webhooks`, { url: 'https://example.com/permissions' }, admin);
  const [message] = await ok('POST', `${base}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'hello' }] }, admin);
  const [conclusion] = await ok('POST', `${base}/conclusions`, { conclusions: [{ content: 'likes tea', observer_id: 'alice', observed_id: 'alice', session_id: 's1' }] }, admin);
  await ok('POST', `${base}/scopes`, { id: 'team' }, admin);
  return {
    ws,
    otherWs: uniqueId(),
    params: {
      workspace_id: ws,
      peer_id: 'alice',
      session_id: 's1',
      message_id: message.id,
      endpoint_id: hook.id,
      conclusion_id: conclusion.id,
      observation_id: conclusion.id,
      job_id: 'no-such-job',
      scope_id: 'team',
    },
  };
}

/** A v1 app with two users; the first has two sessions, a message and a metamessage. */
async function seedV1(): Promise<World['v1']> {
  const admin = sign({ t: '', ad: true });
  const app = await ok('POST', '/v1/apps', { name: uniqueId('app') }, admin);
  const otherApp = await ok('POST', '/v1/apps', { name: uniqueId('app') }, admin);
  const user = await ok('POST', `/v1/apps/${app.id}/users`, { name: uniqueId('user') }, admin);
  const otherUser = await ok('POST', `/v1/apps/${app.id}/users`, { name: uniqueId('user') }, admin);
  const userBase = `/v1/apps/${app.id}/users/${user.id}`;
  const session = await ok('POST', `${userBase}/sessions`, {}, admin);
  const otherSession = await ok('POST', `${userBase}/sessions`, {}, admin);
  const [message] = await ok('POST', `${userBase}/sessions/${session.id}/messages/batch`, { messages: [{ content: 'hi', is_user: true }] }, admin);
  const meta = await ok('POST', `${userBase}/metamessages`, { metamessage_type: 'note', content: 'c', session_id: session.id }, admin);
  return {
    app: app.id,
    otherApp: otherApp.id,
    user: user.id,
    otherUser: otherUser.id,
    session: session.id,
    otherSession: otherSession.id,
    params: { app_id: app.id, user_id: user.id, session_id: session.id, message_id: message.id, metamessage_id: meta.id, name: user.name },
  };
}

function fillPath(route: DeclaredRoute, params: Record<string, string>): string {
  return route.url.replace(/:(\w+)/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`${route.method} ${route.url}: no seeded value for the path parameter "${name}"; add one to seedWorkspace or seedV1`);
    return encodeURIComponent(value);
  });
}

describe('permissions generated from the declared route scopes', () => {
  it('every route of every generation declares its scope, and it is the one the contract gives', () => {
    const generations = new Set(routes.map((r) => r.access.generation));
    expect([...generations].sort()).toEqual(['v1', 'v2', 'v3']);
    // every API operation the OpenAPI document lists is a declared route (none authorizes itself unseen)
    const declared = new Set(routes.map((r) => `${r.method} ${r.url.replace(/:(\w+)/g, '{$1}')}`));
    const documented = Object.entries((api.app.swagger() as { paths: Record<string, Record<string, unknown>> }).paths).flatMap(([path, operations]) =>
      Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`),
    );
    const apiOperations = documented.filter((operation) => / \/v[123]\//.test(operation));
    expect(apiOperations.length).toBeGreaterThan(100);
    expect(apiOperations.filter((operation) => !declared.has(operation))).toEqual([]);
    const wrong: string[] = [];
    for (const route of routes) {
      const expected = contractKind(route);
      const actual = kindOf(route.access.scope);
      if (expected !== actual) wrong.push(`${route.method} ${route.url}: declared ${actual}, the contract says ${expected ?? 'nothing (add an exception)'}`);
      if (expected === 'self' || actual === 'self') expect(`${route.method} ${route.url}` in SELF_RULES, `${route.method} ${route.url} authorizes itself: its rule belongs in SELF_RULES`).toBe(true);
    }
    expect(wrong).toEqual([]);
  });

  it('each route refuses each credential with the contract 401 body, or admits it', async () => {
    const shared: World = { ...(await seedWorkspace()), v1: await seedV1() };
    const sharedCredentials = credentials(shared);
    const failures: string[] = [];
    for (const route of routes) {
      // the contract's kind, so a route declared otherwise fails here too; a route the rules
      // cannot place (reported above) is held to its declaration
      const kind = contractKind(route) ?? kindOf(route.access.scope);
      const key = `${route.method} ${route.url}`;
      if (kind === 'self' && !(key in SELF_RULES)) {
        failures.push(`${key} authorizes itself: its rule belongs in SELF_RULES`);
        continue;
      }
      // a deletion runs on a workspace (or app) of its own, so it takes nothing the other routes meet
      let world = shared;
      if (route.method === 'DELETE') world = route.access.generation === 'v1' ? { ...shared, v1: await seedV1() } : { ...shared, ...(await seedWorkspace()) };
      let url: string;
      try {
        url = fillPath(route, route.access.generation === 'v1' ? world.v1.params : world.params);
      } catch (error) {
        failures.push((error as Error).message);
        continue;
      }
      const body = kind === 'self' ? SELF_RULES[key](world).body : undefined;
      const send = async (credential: Credential) => ({
        credential,
        response: await api.request(route.method, url, body, credential.header === undefined ? {} : { headers: { authorization: credential.header } }),
      });
      // a route's credentials at once (refused ones touch nothing; admitted ones read, or get
      // what exists), a deletion's one after another
      const answers: Awaited<ReturnType<typeof send>>[] = [];
      if (route.method === 'DELETE') for (const credential of credentials(world)) answers.push(await send(credential));
      else answers.push(...(await Promise.all(sharedCredentials.map(send))));
      for (const { credential, response } of answers) {
        const expected = expectedOutcome(route, kind, credential, world);
        requests += 1;
        const label = `${key} (${route.access.generation}, ${kind}) with ${credential.name}`;
        const got = `${response.status} ${response.text.slice(0, 160)}`;
        if (expected !== undefined) {
          if (response.status !== 401 || response.body?.detail !== expected) failures.push(`${label}: expected 401 "${expected}", got ${got}`);
        } else if (response.status === 401 || response.status === 403 || response.status >= 500) {
          failures.push(`${label}: expected to be admitted, got ${got}`);
        }
      }
    }
    expect(failures).toEqual([]);
    expect(requests).toBeGreaterThan(routes.length * 20);
  });
});
