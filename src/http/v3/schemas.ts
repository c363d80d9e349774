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

/** v3 request bodies (shared/reference/openapi/v3.json). */
export const WorkspaceCreate = workspaceCreate('v3');
export const WorkspaceUpdate = workspaceUpdate('v3');
export const PeerCreate = peerCreate('v3');
export const PeerUpdate = peerUpdate('v3');
export const SessionCreate = sessionCreate('v3');
export const SessionUpdate = sessionUpdate('v3');
export const SessionPeers = peerConfigMap('v3');
export const WebhookEndpointCreate = webhookCreate('v3');
export const MessageBatchCreate = messageBatch('v3');
export const MessageUpdate = messageUpdate('v3');
export const MessageSearchOptions = messageSearch;
export { sessionPeerConfig as SessionPeerConfig, peerIdList as PeerIdList } from '../shared/resource-schemas.js';
export { filtersBody as ListFilters } from '../shared/fields.js';
