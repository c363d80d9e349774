import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/runtime/database.js';
import { createDomainContext, type DomainContext } from '../../src/domain/context.js';
import {
  addPeersToSession,
  deleteSession,
  getOrCreateSession,
  getSessionPeerConfig,
  listSessionPeers,
  removePeersFromSession,
  setSessionPeerConfig,
  setSessionPeers,
  type PeerConfigMap,
  type SessionPeerConfig,
} from '../../src/domain/sessions/sessions.js';
import { domainError } from '../support/domain-error.js';
import { TEST_DATABASE_URL, uniqueId } from '../support/test-app.js';

/*
 * The session rules at the domain level, on the real store (SQLite, or PostgreSQL with
 * DATABASE_URL): membership, observer limits, inactive sessions, and that a refused change
 * leaves nothing behind. The HTTP tests check the same rules' status codes and bodies.
 */

let database: Database;
let ctx: DomainContext;
beforeAll(async () => {
  database = await openDatabase(TEST_DATABASE_URL);
  ctx = createDomainContext(database.store, { sessionObservers: 2, webhookEndpoints: 10, jobMaxAttempts: 3 });
});
afterAll(() => database.driver.close());

const config = (observe_others: boolean | null = null, observe_me: boolean | null = null): SessionPeerConfig => ({ observe_me, observe_others });
const peers = (...entries: [string, SessionPeerConfig][]): PeerConfigMap => new Map(entries);
const memberIds = async (ws: string, session: string) => (await listSessionPeers(ctx, ws, session, 1, 100)).items.map((peer) => peer.id).sort();

describe('adding peers to a session', () => {
  it('creates the workspace, the session and unknown peers, with the given configs', async () => {
    const ws = uniqueId();
    const session = await addPeersToSession(ctx, ws, 's', peers(['alice', config(true)], ['bob', config(null, false)]));
    expect(session).toMatchObject({ id: 's', workspaceId: ws, isActive: true });
    expect(await memberIds(ws, 's')).toEqual(['alice', 'bob']);
    expect(await getSessionPeerConfig(ctx, ws, 's', 'alice')).toEqual(config(true));
    expect(await getSessionPeerConfig(ctx, ws, 's', 'bob')).toEqual(config(null, false));
  });

  it('keeps an active member config; a member who left comes back with the new one', async () => {
    const ws = uniqueId();
    await addPeersToSession(ctx, ws, 's', peers(['alice', config(true)]));
    await addPeersToSession(ctx, ws, 's', peers(['alice', config(false)]));
    expect(await getSessionPeerConfig(ctx, ws, 's', 'alice')).toEqual(config(true));
    await removePeersFromSession(ctx, ws, 's', ['alice']);
    expect(await memberIds(ws, 's')).toEqual([]);
    await addPeersToSession(ctx, ws, 's', peers(['alice', config(false)]));
    expect(await getSessionPeerConfig(ctx, ws, 's', 'alice')).toEqual(config(false));
  });

  it('refuses more observers than the limit, counting the active ones already there, and changes nothing', async () => {
    const ws = uniqueId();
    await addPeersToSession(ctx, ws, 's', peers(['alice', config(true)], ['bob', config(true)]));
    const error = await domainError(addPeersToSession(ctx, ws, 's', peers(['carol', config(true)], ['dave', config(false)])));
    expect(error.code).toBe('limit_exceeded');
    expect(error.message).toBe(
      "Cannot create session s with 3 observers. Maximum allowed is 2 observers per session. Observers are peers with 'observe_others' set to true.",
    );
    // the refused request left no member and no peer behind
    expect(await memberIds(ws, 's')).toEqual(['alice', 'bob']);
    expect(await database.store.peers.find(ws, 'dave')).toBeUndefined();
    // once an observer leaves there is room again
    await removePeersFromSession(ctx, ws, 's', ['bob']);
    await addPeersToSession(ctx, ws, 's', peers(['carol', config(true)]));
    expect(await memberIds(ws, 's')).toEqual(['alice', 'carol']);
  });

  it('refuses a new session with too many observers before creating anything', async () => {
    const ws = uniqueId();
    const three = peers(['a', config(true)], ['b', config(true)], ['c', config(true)]);
    expect((await domainError(getOrCreateSession(ctx, ws, { id: 's', peers: three }))).code).toBe('limit_exceeded');
    expect(await database.store.workspaces.find(ws)).toBeUndefined();
    expect(await database.store.sessions.find(ws, 's')).toBeUndefined();
  });
});

describe('an inactive (deleted) session', () => {
  it('is not found for every membership change, and get-or-create does not bring it back', async () => {
    const ws = uniqueId();
    await addPeersToSession(ctx, ws, 's', peers(['alice', config()]));
    await deleteSession(ctx, ws, 's');
    const message = `Session s not found in workspace ${ws}`;
    for (const attempt of [
      () => addPeersToSession(ctx, ws, 's', peers(['bob', config()])),
      () => setSessionPeers(ctx, ws, 's', peers(['bob', config()])),
      () => removePeersFromSession(ctx, ws, 's', ['alice']),
      () => setSessionPeerConfig(ctx, ws, 's', 'alice', { observe_me: false }),
      () => getOrCreateSession(ctx, ws, { id: 's' }),
      () => deleteSession(ctx, ws, 's'),
    ]) {
      const error = await domainError(attempt());
      expect([error.code, error.message]).toEqual(['not_found', message]);
    }
    expect(await database.store.peers.find(ws, 'bob')).toBeUndefined();
  });
});

describe('setting the members and one member config', () => {
  it('set replaces the membership exactly; left members are no longer listed', async () => {
    const ws = uniqueId();
    await addPeersToSession(ctx, ws, 's', peers(['alice', config()], ['bob', config()]));
    await setSessionPeers(ctx, ws, 's', peers(['bob', config(null, true)], ['carol', config()]));
    expect(await memberIds(ws, 's')).toEqual(['bob', 'carol']);
    expect(await getSessionPeerConfig(ctx, ws, 's', 'bob')).toEqual(config(null, true));
  });

  it('a member config merges non-null fields, makes a known peer a member, and refuses an unknown peer', async () => {
    const ws = uniqueId();
    await addPeersToSession(ctx, ws, 's', peers(['alice', config(false, true)]));
    await setSessionPeerConfig(ctx, ws, 's', 'alice', { observe_me: false, observe_others: null });
    expect(await getSessionPeerConfig(ctx, ws, 's', 'alice')).toEqual(config(false, false));

    await addPeersToSession(ctx, ws, 'other', peers(['bob', config()]));
    await setSessionPeerConfig(ctx, ws, 's', 'bob', { observe_others: true });
    expect(await memberIds(ws, 's')).toEqual(['alice', 'bob']);

    const error = await domainError(setSessionPeerConfig(ctx, ws, 's', 'nobody', { observe_me: true }));
    expect([error.code, error.message]).toEqual(['not_found', `Peer nobody not found in workspace ${ws}`]);
  });

  it('a member config that would exceed the observer limit is refused and changes nothing', async () => {
    const ws = uniqueId();
    await addPeersToSession(ctx, ws, 's', peers(['a', config(true)], ['b', config(true)], ['c', config(false)]));
    expect((await domainError(setSessionPeerConfig(ctx, ws, 's', 'c', { observe_others: true }))).code).toBe('limit_exceeded');
    expect(await getSessionPeerConfig(ctx, ws, 's', 'c')).toEqual(config(false));
  });
});
