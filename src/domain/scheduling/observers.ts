import type { JsonObject, MembershipRecord } from '../../storage/store.js';

/**
 * Who forms conclusions about a message's sender (reasoning.md R2): nobody when the sender is
 * not observed (`observe_me: false`); otherwise the sender itself and every active member of the
 * session with `observe_others: true`. A member's session-level setting wins over the one in its
 * peer configuration; unset, `observe_me` is true and `observe_others` false.
 */
export function observersOf(senderId: string, members: readonly MembershipRecord[], peerConfigurations: ReadonlyMap<string, JsonObject>): string[] {
  const setting = (peerId: string, sessionConfiguration: JsonObject | undefined, name: 'observe_me' | 'observe_others'): boolean | undefined => {
    const inSession = sessionConfiguration !== undefined && Object.hasOwn(sessionConfiguration, name) ? sessionConfiguration[name] : undefined;
    if (typeof inSession === 'boolean') return inSession;
    const peer = peerConfigurations.get(peerId);
    const own = peer !== undefined && Object.hasOwn(peer, name) ? peer[name] : undefined;
    return typeof own === 'boolean' ? own : undefined;
  };
  const active = members.filter((member) => member.leftAt === null);
  const sender = active.find((member) => member.peerId === senderId);
  if (setting(senderId, sender?.configuration, 'observe_me') === false) return [];
  const observers = [senderId];
  for (const member of active) {
    if (member.peerId !== senderId && setting(member.peerId, member.configuration, 'observe_others') === true) observers.push(member.peerId);
  }
  return observers;
}
