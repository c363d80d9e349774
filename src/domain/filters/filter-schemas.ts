import type { ConclusionLevel } from '../../storage/store.js';
import type { FilterSchema } from './parse-filter.js';

/* The filterable fields of each model (contract §5.1); the store maps the same keys to its columns. */

const KNOWN_KEYS = new Set(['id', 'created_at', 'is_active', 'workspace_id', 'session_id', 'peer_id', 'metadata']);

/** The reference's internal names of the public keys, which its newer filter messages use. */
const INTERNAL = { id: 'name', workspace_id: 'workspace_name', session_id: 'session_name', peer_id: 'peer_name' };

export const WORKSPACE_FILTER: FilterSchema = { name: 'Workspace', columns: { id: 'text', created_at: 'timestamp' }, knownKeys: KNOWN_KEYS, internal: INTERNAL };

export const PEER_FILTER: FilterSchema = {
  name: 'Peer',
  columns: { id: 'text', created_at: 'timestamp', workspace_id: 'text' },
  knownKeys: KNOWN_KEYS,
  internal: INTERNAL,
};

export const SESSION_FILTER: FilterSchema = {
  name: 'Session',
  columns: { id: 'text', created_at: 'timestamp', is_active: 'bool', workspace_id: 'text' },
  knownKeys: KNOWN_KEYS,
  internal: INTERNAL,
};

export const MESSAGE_FILTER: FilterSchema = {
  name: 'Message',
  columns: { workspace_id: 'text', session_id: 'text', peer_id: 'text', token_count: 'int', created_at: 'timestamp' },
  knownKeys: new Set(),
  internal: INTERNAL,
};

/**
 * The reference's Document model (conclusions): the public names (`observer_id` ...) and the
 * stored column names (`observer`, `session_name` ...) both work; any other key "does not exist".
 * `embedding` exists there but cannot be filtered on (newer rules; v2 says it does not exist).
 */
export const DOCUMENT_FILTER: FilterSchema = {
  name: 'Document',
  columns: {
    id: 'text',
    content: 'text',
    level: 'text',
    workspace_id: 'text',
    workspace_name: 'text',
    observer_id: 'text',
    observer: 'text',
    observed_id: 'text',
    observed: 'text',
    session_id: 'text',
    session_name: 'text',
    times_derived: 'int',
    source_ids: 'id_list',
    created_at: 'timestamp',
    deleted_at: 'timestamp',
    embedding: 'unfilterable',
  },
  knownKeys: 'all',
  internal: { workspace_id: 'workspace_name', observer_id: 'observer', observed_id: 'observed', session_id: 'session_name' },
  metadataName: 'internal_metadata',
  closedSets: { level: ['explicit', 'deductive', 'inductive', 'contradiction'] satisfies ConclusionLevel[] },
};

/** v1 lists: metadata containment only (contract-v1 §0.4). */
export const V1_METADATA_FILTER: FilterSchema = { name: 'Metadata', columns: {}, knownKeys: new Set() };
