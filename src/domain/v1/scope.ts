import type { Page, Store, V1SessionRecord, V1UserRecord } from '../../storage/store.js';

/*
 * How the v1 generation sits on the workspace model (contract-v1 §5): an app is a workspace, a
 * user is a peer, a session is a session the user's peer is a member of, and a message is sent by
 * the user's peer (`is_user: true`) or by the workspace's assistant peer (`is_user: false`).
 */

/**
 * The peer that sends the v1 messages with `is_user: false`: one per workspace, created the first
 * time such a message is written. It is not a v1 user: v1 lists and lookups leave it out, and v1
 * clients cannot create or fetch a user of this name.
 */
export const V1_ASSISTANT_PEER_ID = 'v1-assistant';

/** Sessions and messages written through v1 start members with no session-level config. */
export const NEW_MEMBER_CONFIG = { observe_me: null, observe_others: null };

/**
 * v1 accepts any string as an id and answers "not found" for unknown ones (§0.1). A value with
 * a NUL character can name nothing (names are refused with one) and PostgreSQL cannot even
 * compare it, so lookups short-cut it to "not found".
 */
export function cannotName(...values: (string | null | undefined)[]): boolean {
  return values.some((value) => typeof value === 'string' && value.includes('\u0000'));
}

/** The user `userId` of app `appId`, or undefined (unknown app, unknown user, or the assistant). */
export async function findUserOfApp(store: Store, appId: string, userId: string): Promise<V1UserRecord | undefined> {
  if (cannotName(appId, userId)) return undefined;
  const user = await store.v1.findUser(appId, userId);
  return user === undefined || user.name === V1_ASSISTANT_PEER_ID ? undefined : user;
}

export interface V1SessionScope {
  user: V1UserRecord;
  session: V1SessionRecord;
}

/** The session with v1 id `sessionId` when the user is (or was) a member of it. */
export async function findSessionOfUser(
  store: Store,
  appId: string,
  userId: string,
  sessionId: string,
): Promise<V1SessionScope | undefined> {
  const user = await findUserOfApp(store, appId, userId);
  if (user === undefined || cannotName(sessionId)) return undefined;
  const session = await store.v1.findSession(user.workspaceId, user.name, sessionId);
  return session && { user, session };
}

/** The page every v1 list answers when a parent in its path does not exist (§0.5). */
export function emptyPage<T>(): Page<T> {
  return { items: [], total: 0 };
}
