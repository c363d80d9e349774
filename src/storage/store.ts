/**
 * The storage interface: everything the domain knows about persistence, one module per concern
 * (store/*.ts), imported through this file. Records use camelCase and `Date`; the SQL store
 * translates to each dialect's columns.
 */

export * from './store/records.js';
export * from './store/jobs.js';
export * from './store/reasoning.js';
export * from './store/interface.js';
export * from './store/resources.js';
export * from './store/v1.js';
export * from './store/memory.js';
export * from './store/erasure.js';

export type {
  FilterComparison,
  FilterInstant,
  FilterNode,
  FilterNumber,
  FilterTarget,
  FilterValue,
} from './filter.js';
export { VectorSizeError, MAX_NEIGHBOURS } from './vector-index.js';
export type {
  VectorIndex,
  ConclusionVector,
  ConclusionVectorQuery,
  MessageChunkVector,
  MessageVectorQuery,
  Neighbour,
} from './vector-index.js';
export { StoreUnavailableError, isStoreUnavailable } from './unavailable.js';
export { FilterTimeLimitError } from './filter-time-limit.js';
