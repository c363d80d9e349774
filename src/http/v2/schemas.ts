import {
  messageBatch,
  messageSearch,
  messageUpdate,
  peerConfigMap,
  peerCreate,
  peerUpdate,
  sessionCreate,
  sessionUpdate,
  webhookCreate,
  workspaceCreate,
  workspaceUpdate,
} from '../shared/resource-schemas.js';

/** v2 request bodies (shared/reference/openapi/v2.json). */
export const WorkspaceCreate = workspaceCreate('v2');
export const WorkspaceUpdate = workspaceUpdate('v2');
export const PeerCreate = peerCreate('v2');
export const PeerUpdate = peerUpdate('v2');
export const SessionCreate = sessionCreate('v2');
export const SessionUpdate = sessionUpdate('v2');
export const SessionPeers = peerConfigMap('v2');
export const WebhookEndpointCreate = webhookCreate('v2');
export const MessageBatchCreate = messageBatch('v2');
export const MessageUpdate = messageUpdate('v2');
export const MessageSearchOptions = messageSearch;
export { sessionPeerConfig as SessionPeerConfig, peerIdList as PeerIdList } from '../shared/resource-schemas.js';
export { filtersBody as ListFilters } from '../shared/fields.js';
