import { createHmac } from 'node:crypto';
import { createDecoder, createSigner } from 'fast-jwt';
import { describe, expect, it, vi } from 'vitest';
import {
  ADMIN_CLAIMS,
  AUTH_DETAIL,
  AuthError,
  authorizeV2,
  authorizeV3,
  checkChatSessions,
  checkCreatePeer,
  checkCreateSession,
  checkCreateWorkspace,
  checkPeerConfigRead,
  createTokenReader,
  mintToken,
  type Claims,
  type RouteScope,
  type ScopeIds,
} from '../../../src/http/shared/auth.js';

const SECRET = 'test-secret-ü';
// Signed by hand: fast-jwt's signer refuses the non-numeric exp/nbf values these tests need.
function sign(payload: Record<string, unknown>): string {
  const encode = (part: unknown) => Buffer.from(JSON.stringify(part)).toString('base64url');
  const input = `${encode({ alg: 'HS256', typ: 'JWT' })}.${encode(payload)}`;
  return `${input}.${createHmac('sha256', SECRET).update(input).digest('base64url')}`;
}
const decodeComplete = createDecoder({ complete: true });
const nowSeconds = () => Math.floor(Date.now() / 1000);

function caught(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  return undefined;
}

function expectAuthError(fn: () => unknown, detail: string): void {
  const err = caught(fn);
  expect(err).toBeInstanceOf(AuthError);
  expect((err as AuthError).status).toBe(401);
  expect((err as AuthError).detail).toBe(detail);
}

async function authFailure(promise: Promise<void>): Promise<string | undefined> {
  try {
    await promise;
    return undefined;
  } catch (err) {
    expect(err).toBeInstanceOf(AuthError);
    return (err as AuthError).detail;
  }
}

describe('createTokenReader', () => {
  const read = createTokenReader(SECRET);
  const bearer = (payload: Record<string, unknown>) => `Bearer ${sign(payload)}`;

  it.each([
    ['a missing header', undefined],
    ['an empty header', ''],
    ['another scheme', `Basic ${sign({ w: 'ws1' })}`],
    ['a scheme without token', 'Bearer'],
    ['an empty token', 'Bearer '],
    ['a blank token', 'Bearer    '],
    ['a token without scheme', sign({ w: 'ws1' })],
  ])('treats %s as no token', (_label, header) => {
    expectAuthError(() => read(header), AUTH_DETAIL.noToken);
  });

  it('matches the scheme case-insensitively', () => {
    const token = sign({ w: 'ws1' });
    expect(read(`bearer ${token}`)).toEqual({ isAdmin: false, workspaceId: 'ws1' });
    expect(read(`BEARER ${token}`)).toEqual({ isAdmin: false, workspaceId: 'ws1' });
  });

  it.each([
    ['garbage', 'Bearer not-a-jwt'],
    ['three garbage segments', 'Bearer a.b.c'],
    ['a wrong secret', `Bearer ${createSigner({ key: 'other', algorithm: 'HS256' })({ ad: true })}`],
    ['HS384 with the same secret', `Bearer ${createSigner({ key: SECRET, algorithm: 'HS384' })({ ad: true })}`],
    ['an unsigned token', `Bearer ${createSigner({ algorithm: 'none' })({ ad: true })}`],
    ['a tampered payload', `Bearer ${sign({ w: 'ws1' }).replace(/\.[^.]+\./, `.${Buffer.from('{"ad":true}').toString('base64url')}.`)}`],
  ])('refuses %s as Invalid JWT', (_label, header) => {
    expectAuthError(() => read(header), AUTH_DETAIL.invalidToken);
  });

  it('reads claims, dropping empty strings', () => {
    expect(read(bearer({ t: '', ad: true }))).toEqual({ isAdmin: true });
    expect(read(bearer({ t: '2024-01-01T00:00:00Z', w: 'ws1', p: 'alice', s: 's1' }))).toEqual({
      isAdmin: false,
      workspaceId: 'ws1',
      peerId: 'alice',
      sessionId: 's1',
    });
    expect(read(bearer({ w: 'ws1', p: '', s: null }))).toEqual({ isAdmin: false, workspaceId: 'ws1' });
    expect(read(bearer({}))).toEqual({ isAdmin: false });
  });

  it.each([
    [true, true],
    [1, true],
    ['yes', true],
    ['false', true],
    [[0], true],
    [{ a: 1 }, true],
    [false, false],
    [0, false],
    ['', false],
    [null, false],
    [[], false],
    [{}, false],
  ])('counts ad=%j as admin: %s (Python truthiness)', (ad, isAdmin) => {
    expect(read(bearer({ ad })).isAdmin).toBe(isAdmin);
  });

  it('refuses scope claims that are not strings', () => {
    expectAuthError(() => read(bearer({ w: 123 })), AUTH_DETAIL.invalidToken);
    expectAuthError(() => read(bearer({ w: 'ws1', p: ['alice'] })), AUTH_DETAIL.invalidToken);
  });

  describe('exp', () => {
    it('refuses a numeric exp in the past, or exactly now', () => {
      expectAuthError(() => read(bearer({ w: 'ws1', exp: nowSeconds() - 60 })), AUTH_DETAIL.invalidToken);
      const fixed = createTokenReader(SECRET, { now: () => 1_700_000_000_000 });
      expectAuthError(() => fixed(bearer({ exp: 1_700_000_000 })), AUTH_DETAIL.invalidToken);
    });

    it('accepts a numeric exp in the future (a 500 in the reference)', () => {
      expect(read(bearer({ w: 'ws1', exp: nowSeconds() + 3600 }))).toEqual({ isAdmin: false, workspaceId: 'ws1' });
    });

    it('honours an ISO 8601 string exp instead of always refusing it', () => {
      const reader = createTokenReader(SECRET, { now: () => Date.parse('2025-06-01T12:00:00Z') });
      const ok = { isAdmin: false, workspaceId: 'ws1' };
      expect(reader(bearer({ w: 'ws1', exp: '2025-06-01T12:00:01Z' }))).toEqual(ok);
      expect(reader(bearer({ w: 'ws1', exp: '2025-06-01T12:00:00.500000+00:00' }))).toEqual(ok);
      expect(reader(bearer({ w: 'ws1', exp: '2025-06-01T14:30:00+02:00' }))).toEqual(ok);
      // Python's isoformat() of a naive datetime has no offset; the reference runs in UTC.
      expect(reader(bearer({ w: 'ws1', exp: '2025-06-01T12:30:00' }))).toEqual(ok);
      expectAuthError(() => reader(bearer({ w: 'ws1', exp: '2025-06-01T12:00:00Z' })), AUTH_DETAIL.invalidToken);
      expectAuthError(() => reader(bearer({ w: 'ws1', exp: '2025-06-01T13:59:00+02:00' })), AUTH_DETAIL.invalidToken);
      expectAuthError(() => reader(bearer({ w: 'ws1', exp: '2024-01-01T00:00:00Z' })), AUTH_DETAIL.invalidToken);
    });

    it.each([[''], ['soon'], ['2025-02-30T00:00:00Z'], ['1700000000'], [true], [{}]])(
      'refuses an unreadable exp %j',
      (exp) => {
        expectAuthError(() => read(bearer({ w: 'ws1', exp })), AUTH_DETAIL.invalidToken);
      },
    );

    it('treats exp null as no expiry (a 500 in the reference)', () => {
      expect(read(bearer({ w: 'ws1', exp: null }))).toEqual({ isAdmin: false, workspaceId: 'ws1' });
    });
  });

  it('checks nbf', () => {
    expectAuthError(() => read(bearer({ w: 'ws1', nbf: nowSeconds() + 3600 })), AUTH_DETAIL.invalidToken);
    expectAuthError(() => read(bearer({ w: 'ws1', nbf: 'now' })), AUTH_DETAIL.invalidToken);
    expect(read(bearer({ w: 'ws1', nbf: nowSeconds() - 10 })).workspaceId).toBe('ws1');
  });

  it('serves repeated tokens from the cache but still expires them', () => {
    let now = Date.parse('2025-06-01T12:00:00Z');
    const reader = createTokenReader(SECRET, { now: () => now });
    const header = bearer({ w: 'ws1', exp: now / 1000 + 60 });
    const first = reader(header);
    expect(reader(header)).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    now += 59_999;
    expect(reader(header)).toBe(first);
    now += 1;
    expectAuthError(() => reader(header), AUTH_DETAIL.invalidToken);
    expectAuthError(() => reader(header), AUTH_DETAIL.invalidToken);
  });

  it('keeps working with the cache turned off', () => {
    const reader = createTokenReader(SECRET, { cacheSize: 0 });
    const header = bearer({ w: 'ws1' });
    expect(reader(header)).toEqual(reader(header));
  });

  it('refuses an empty secret', () => {
    expect(() => createTokenReader('')).toThrow();
  });
});

describe('mintToken', () => {
  const at = new Date('2025-06-01T12:34:56.789Z');

  it('mints the admin token the reference mints', () => {
    const token = mintToken(SECRET, { isAdmin: true }, at);
    const { header, payload } = decodeComplete(token);
    expect(header).toEqual({ alg: 'HS256', typ: 'JWT' });
    expect(payload).toEqual({ t: '', ad: true });
    expect(createTokenReader(SECRET)(`Bearer ${token}`)).toEqual(ADMIN_CLAIMS);
  });

  it('writes only the claims given, with a numeric exp, and round-trips', () => {
    const token = mintToken(
      SECRET,
      { workspaceId: 'ws1', peerId: 'alice', expiresAt: new Date('2025-06-02T00:00:00.900Z') },
      at,
    );
    const { payload } = decodeComplete(token);
    expect(JSON.stringify(payload)).toBe('{"t":"2025-06-01T12:34:56Z","exp":1748822400,"w":"ws1","p":"alice"}');

    let now = at.getTime();
    const reader = createTokenReader(SECRET, { now: () => now });
    expect(reader(`Bearer ${token}`)).toEqual({ isAdmin: false, workspaceId: 'ws1', peerId: 'alice' });
    now = Date.parse('2025-06-02T00:00:00Z');
    expectAuthError(() => reader(`Bearer ${token}`), AUTH_DETAIL.invalidToken);
  });

  it('leaves out exp when there is no expiry', () => {
    const { payload } = decodeComplete(mintToken(SECRET, { workspaceId: 'ws1', sessionId: 's1' }, at));
    expect(payload).toEqual({ t: '2025-06-01T12:34:56Z', w: 'ws1', s: 's1' });
  });

  it('is refused under another secret', () => {
    const token = mintToken(SECRET, { workspaceId: 'ws1' }, at);
    expectAuthError(() => createTokenReader('other')(`Bearer ${token}`), AUTH_DETAIL.invalidToken);
  });
});

const ADMIN: Claims = { isAdmin: true };
const W: Claims = { isAdmin: false, workspaceId: 'ws1' };
const WP: Claims = { isAdmin: false, workspaceId: 'ws1', peerId: 'alice' };
const WP_OTHER: Claims = { isAdmin: false, workspaceId: 'ws1', peerId: 'bob' };
const WS: Claims = { isAdmin: false, workspaceId: 'ws1', sessionId: 's1' };
const WS_OTHER: Claims = { isAdmin: false, workspaceId: 'ws1', sessionId: 's2' };
const WPS: Claims = { isAdmin: false, workspaceId: 'ws1', peerId: 'alice', sessionId: 's1' };
const WRONG_W: Claims = { isAdmin: false, workspaceId: 'ws2' };
const BARE: Claims = { isAdmin: false };
const P_ONLY: Claims = { isAdmin: false, peerId: 'alice' };
const S_ONLY: Claims = { isAdmin: false, sessionId: 's1' };

const OK = undefined;
const { adminRequired, missingWorkspace, notPermissioned, unauthorized } = AUTH_DETAIL;

// §3.5 auth summary, one scope per operation.
const ADD_PEERS: [RouteScope, ScopeIds] = [{ kind: 'session' }, { workspaceId: 'ws1', sessionId: 's1' }];
const PEER_SESSIONS: [RouteScope, ScopeIds] = [{ kind: 'peer' }, { workspaceId: 'ws1', peerId: 'alice' }];
const PEERS_LIST: [RouteScope, ScopeIds] = [{ kind: 'workspace' }, { workspaceId: 'ws1' }];
const DELETE_WEBHOOK: [RouteScope, ScopeIds] = [{ kind: 'workspace' }, { workspaceId: 'ws1' }];
const MESSAGES_LIST: [RouteScope, ScopeIds] = [
  { kind: 'session', memberRead: true },
  { workspaceId: 'ws1', sessionId: 's1' },
];
const KEYS: [RouteScope, ScopeIds] = [{ kind: 'admin' }, {}];
const SELF: [RouteScope, ScopeIds] = [{ kind: 'self' }, { workspaceId: 'ws1' }];
const NONE: [RouteScope, ScopeIds] = [{ kind: 'none' }, {}];

describe('authorizeV3', () => {
  const cases: ReadonlyArray<[string, [RouteScope, ScopeIds], Claims, string | undefined]> = [
    ['add peers', ADD_PEERS, ADMIN, OK],
    ['add peers', ADD_PEERS, W, OK],
    ['add peers', ADD_PEERS, WP, notPermissioned],
    ['add peers', ADD_PEERS, WS, OK],
    ['add peers', ADD_PEERS, WS_OTHER, notPermissioned],
    ['add peers', ADD_PEERS, WPS, OK],
    ['add peers', ADD_PEERS, WRONG_W, notPermissioned],
    ['add peers', ADD_PEERS, BARE, notPermissioned],
    ['peer sessions', PEER_SESSIONS, ADMIN, OK],
    ['peer sessions', PEER_SESSIONS, W, OK],
    ['peer sessions', PEER_SESSIONS, WP, OK],
    ['peer sessions', PEER_SESSIONS, WP_OTHER, notPermissioned],
    ['peer sessions', PEER_SESSIONS, WS, notPermissioned],
    // A session claim narrows the token even when its peer claim matches.
    ['peer sessions', PEER_SESSIONS, WPS, notPermissioned],
    ['peer sessions', PEER_SESSIONS, WRONG_W, notPermissioned],
    ['peer sessions', PEER_SESSIONS, BARE, notPermissioned],
    ['peers list', PEERS_LIST, ADMIN, OK],
    ['peers list', PEERS_LIST, W, OK],
    ['peers list', PEERS_LIST, WP, notPermissioned],
    ['peers list', PEERS_LIST, WS, notPermissioned],
    ['peers list', PEERS_LIST, WRONG_W, notPermissioned],
    ['peers list', PEERS_LIST, BARE, notPermissioned],
    ['delete webhook', DELETE_WEBHOOK, ADMIN, OK],
    ['delete webhook', DELETE_WEBHOOK, W, OK],
    ['delete webhook', DELETE_WEBHOOK, WP, notPermissioned],
    ['delete webhook', DELETE_WEBHOOK, WS, notPermissioned],
    ['messages list', MESSAGES_LIST, ADMIN, OK],
    ['messages list', MESSAGES_LIST, W, OK],
    ['messages list', MESSAGES_LIST, WS, OK],
    ['messages list', MESSAGES_LIST, WS_OTHER, notPermissioned],
    ['messages list', MESSAGES_LIST, WRONG_W, notPermissioned],
    ['keys', KEYS, ADMIN, OK],
    ['keys', KEYS, W, adminRequired],
    ['keys', KEYS, BARE, adminRequired],
    ['self', SELF, W, OK],
    ['self', SELF, WRONG_W, OK],
    ['self', SELF, BARE, OK],
    ['self', SELF, WPS, OK],
    ['peer without workspace', PEER_SESSIONS, P_ONLY, missingWorkspace],
    ['session without workspace', ADD_PEERS, S_ONLY, missingWorkspace],
    ['peer without workspace', SELF, P_ONLY, missingWorkspace],
    ['peer without workspace', KEYS, P_ONLY, missingWorkspace],
    ['admin with a peer but no workspace', KEYS, { isAdmin: true, peerId: 'alice' }, missingWorkspace],
    ['no auth at all', NONE, P_ONLY, OK],
    ['no auth at all', NONE, BARE, OK],
  ];

  it.each(cases)('%s, %j → %s', async (_label, [scope, ids], claims, expected) => {
    const isActiveMember = vi.fn(async () => true);
    expect(await authFailure(authorizeV3(claims, scope, ids, isActiveMember))).toBe(expected);
    expect(isActiveMember).not.toHaveBeenCalled();
  });

  it('lets a peer token read a member-read route iff the peer is an active member', async () => {
    const [scope, ids] = MESSAGES_LIST;
    const active = vi.fn(async () => true);
    expect(await authFailure(authorizeV3(WP, scope, ids, active))).toBe(OK);
    expect(active).toHaveBeenCalledWith('ws1', 's1', 'alice');

    const inactive = vi.fn(async () => false);
    expect(await authFailure(authorizeV3(WP, scope, ids, inactive))).toBe(notPermissioned);
    expect(inactive).toHaveBeenCalledTimes(1);
  });

  it('never asks about membership on session routes that are not member-read', async () => {
    const [scope, ids] = ADD_PEERS;
    const isActiveMember = vi.fn(async () => true);
    expect(await authFailure(authorizeV3(WP, scope, ids, isActiveMember))).toBe(notPermissioned);
    expect(isActiveMember).not.toHaveBeenCalled();
  });

  it('checks the workspace before membership', async () => {
    const [scope, ids] = MESSAGES_LIST;
    const isActiveMember = vi.fn(async () => true);
    const otherWorkspacePeer: Claims = { isAdmin: false, workspaceId: 'ws2', peerId: 'alice' };
    expect(await authFailure(authorizeV3(otherWorkspacePeer, scope, ids, isActiveMember))).toBe(notPermissioned);
    expect(isActiveMember).not.toHaveBeenCalled();
  });
});

describe('authorizeV2', () => {
  const cases: ReadonlyArray<[string, [RouteScope, ScopeIds], Claims, string | undefined]> = [
    // §3.5 "v2 peer sessions": any token of the workspace, whatever its p/s.
    ['peer sessions', PEER_SESSIONS, ADMIN, OK],
    ['peer sessions', PEER_SESSIONS, W, OK],
    ['peer sessions', PEER_SESSIONS, WP, OK],
    ['peer sessions', PEER_SESSIONS, WP_OTHER, OK],
    ['peer sessions', PEER_SESSIONS, WS, OK],
    ['peer sessions', PEER_SESSIONS, WPS, OK],
    ['peer sessions', PEER_SESSIONS, WRONG_W, notPermissioned],
    ['peer sessions', PEER_SESSIONS, BARE, notPermissioned],
    // No missing-workspace rule in v2: a matching p without w is simply not permissioned.
    ['peer sessions', PEER_SESSIONS, P_ONLY, notPermissioned],
    ['session route', ADD_PEERS, S_ONLY, notPermissioned],
    ['session route', ADD_PEERS, WS_OTHER, OK],
    ['session route', ADD_PEERS, WP, OK],
    ['workspace route', PEERS_LIST, WP, OK],
    ['workspace route', PEERS_LIST, WS, OK],
    ['workspace route', PEERS_LIST, WRONG_W, notPermissioned],
    ['admin route', KEYS, ADMIN, OK],
    ['admin route', KEYS, W, adminRequired],
    ['self', SELF, BARE, OK],
    ['self', SELF, P_ONLY, OK],
    ['no auth at all', NONE, BARE, OK],
  ];

  it.each(cases)('%s, %j → %s', (_label, [scope, ids], claims, expected) => {
    const err = caught(() => authorizeV2(claims, scope, ids));
    if (expected === OK) {
      expect(err).toBeUndefined();
    } else {
      expect(err).toBeInstanceOf(AuthError);
      expect((err as AuthError).detail).toBe(expected);
    }
  });
});

describe('SELF checks (§2.5)', () => {
  const check = (fn: () => void, expected: string | undefined) => {
    if (expected === OK) expect(fn).not.toThrow();
    else expectAuthError(fn, expected);
  };

  it.each([
    [ADMIN, OK],
    [W, OK],
    [WP, OK],
    [WS, OK],
    [WRONG_W, unauthorized],
    [BARE, unauthorized],
  ])('POST /v3/workspaces {"id":"ws1"} with %j → %s', (claims, expected) => {
    check(() => checkCreateWorkspace(claims, 'ws1'), expected);
  });

  it.each([
    [ADMIN, OK],
    [W, OK],
    [WP, OK],
    [WP_OTHER, unauthorized],
    [WS, OK],
    [WRONG_W, unauthorized],
    [{ isAdmin: false, workspaceId: 'ws2', peerId: 'alice' }, unauthorized],
    [BARE, OK],
  ])('POST /v3/workspaces/ws1/peers {"id":"alice"} with %j → %s', (claims, expected) => {
    check(() => checkCreatePeer(claims, 'ws1', 'alice'), expected);
  });

  it.each([
    [ADMIN, OK],
    [W, OK],
    [WS, OK],
    [WS_OTHER, unauthorized],
    [WP_OTHER, OK],
    [WRONG_W, unauthorized],
    [BARE, OK],
  ])('POST /v3/workspaces/ws1/sessions {"id":"s1"} with %j → %s', (claims, expected) => {
    check(() => checkCreateSession(claims, 'ws1', 's1'), expected);
  });

  it('lets a peer token read only its own session config', () => {
    check(() => checkPeerConfigRead(WP, 'alice'), OK);
    check(() => checkPeerConfigRead(WP, 'bob'), notPermissioned);
    check(() => checkPeerConfigRead(W, 'bob'), OK);
    check(() => checkPeerConfigRead(ADMIN, 'bob'), OK);
  });

  it('limits a peer token chat to sessions it actively belongs to', async () => {
    const isActiveMember = vi.fn(async (_w: string, s: string) => s !== 'left');
    expect(await authFailure(checkChatSessions(WP, 'ws1', ['s1', 's2'], isActiveMember))).toBe(OK);
    expect(isActiveMember).toHaveBeenCalledWith('ws1', 's1', 'alice');
    expect(await authFailure(checkChatSessions(WP, 'ws1', ['s1', 'left'], isActiveMember))).toBe(notPermissioned);
    expect(await authFailure(checkChatSessions(W, 'ws1', ['left'], isActiveMember))).toBe(OK);
    expect(await authFailure(checkChatSessions(ADMIN, 'ws1', ['left'], isActiveMember))).toBe(OK);
    expect(await authFailure(checkChatSessions(WP, 'ws1', [], isActiveMember))).toBe(OK);
  });
});
