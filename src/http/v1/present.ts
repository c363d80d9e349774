import type { V1MessageView } from '../../domain/v1/messages.js';
import type { V1SessionScope } from '../../domain/v1/scope.js';
import type { V1AppRecord, V1MetamessageRecord, V1UserRecord } from '../../storage/store.js';
import { isoTime } from '../shared/present.js';

/*
 * Domain records -> v1 wire JSON, keys in the order the reference emits them (contract-v1 §1.0,
 * §2). Every `id` here is a v1 id: apps, users and sessions are addressed by their `v1_id`.
 */

export function presentApp(app: V1AppRecord) {
  return { id: app.v1Id, name: app.name, metadata: app.metadata, created_at: isoTime(app.createdAt) };
}

export function presentUser(user: V1UserRecord) {
  return { id: user.v1Id, name: user.name, app_id: user.appV1Id, created_at: isoTime(user.createdAt), metadata: user.metadata };
}

export function presentSession({ user, session }: V1SessionScope) {
  return {
    id: session.v1Id,
    is_active: session.isActive,
    user_id: user.v1Id,
    app_id: user.appV1Id,
    metadata: session.metadata,
    created_at: isoTime(session.createdAt),
  };
}

export function presentMessage({ message, isUser, session, user }: V1MessageView) {
  return {
    id: message.id,
    content: message.content,
    is_user: isUser,
    session_id: session.v1Id,
    metadata: message.metadata,
    created_at: isoTime(message.createdAt),
    app_id: user.appV1Id,
    user_id: user.v1Id,
  };
}

/** `metamessage_type` is a read-only copy of `label`: always the same value (seed part 2). */
export function presentMetamessage(m: V1MetamessageRecord) {
  return {
    id: m.id,
    label: m.label,
    content: m.content,
    user_id: m.userV1Id,
    app_id: m.appV1Id,
    session_id: m.sessionV1Id,
    message_id: m.messageId,
    metadata: m.metadata,
    created_at: isoTime(m.createdAt),
    metamessage_type: m.label,
  };
}
