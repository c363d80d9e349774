import type { FilterSchema } from './parse-filter.js';

/* The filterable fields of each model (contract §5.1); the store maps the same keys to its columns. */

const KNOWN_KEYS = new Set(['id', 'created_at', 'is_active', 'workspace_id', 'session_id', 'peer_id', 'metadata']);

export const WORKSPACE_FILTER: FilterSchema = { name: 'Workspace', columns: { id: 'text', created_at: 'timestamp' }, knownKeys: KNOWN_KEYS };

export const PEER_FILTER: FilterSchema = {
  name: 'Peer',
  columns: { id: 'text', created_at: 'timestamp', workspace_id: 'text' },
  knownKeys: KNOWN_KEYS,
};

export const SESSION_FILTER: FilterSchema = {
  name: 'Session',
  columns: { id: 'text', created_at: 'timestamp', is_active: 'bool', workspace_id: 'text' },
  knownKeys: KNOWN_KEYS,
};

export const MESSAGE_FILTER: FilterSchema = {
  name: 'Message',
  columns: { workspace_id: 'text', session_id: 'text', peer_id: 'text', token_count: 'int', created_at: 'timestamp' },
  knownKeys: new Set(),
};

/**
 * The reference's Document model (conclusions): the public names (`observer_id` ...) and the
 * stored column names (`observer`, `session_name` ...) both work; any other key "does not exist".
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
  },
  knownKeys: 'all',
};

/** v1 lists: metadata containment only (contract-v1 §0.4). */
export const V1_METADATA_FILTER: FilterSchema = { name: 'Metadata', columns: {}, knownKeys: new Set() };
