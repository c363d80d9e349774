import type { FilterNode, JsonObject, ListQuery, SessionListQuery, SessionOrder, Store, V1ListQuery } from '../../storage/store.js';
import { DOCUMENT_FILTER, MESSAGE_FILTER, V1_METADATA_FILTER } from './filter-schemas.js';
import { parseFilter, V2_FILTER_RULES, V3_0_12_FILTER_RULES, V3_FILTER_RULES, type FilterSchema } from './parse-filter.js';

/*
 * Where the API generation's rules meet the store: a request's raw `filters` object and its
 * generation become the parsed, generation-free filter and order the store's queries take.
 */

export type Generation = 'v2' | 'v3';

/** A list request as a route reads it: raw `filters` (null: none), paging, and its generation. */
export interface ListRequest {
  filters: unknown;
  page: number;
  size: number;
  reverse: boolean;
  /** v2 filters and session order differ slightly (contract §9.1). */
  generation: Generation;
}

/** A v1 list request: metadata containment `filter` (contract-v1 §0.4), insertion order, offset paging. */
export interface V1ListRequest {
  filter: JsonObject | null;
  page: number;
  size: number;
  reverse: boolean;
}

/** Parses a raw `filters` object by the generation's rules; a DomainError `invalid_input` when it is invalid. */
export function parseFilters(store: Store, filters: unknown, schema: FilterSchema, generation: Generation): FilterNode | null {
  if (filters === null || filters === undefined) return null;
  return parseFilter(filters, schema, generation === 'v2' ? V2_FILTER_RULES : V3_FILTER_RULES, store.filterLimits);
}

export function messageFilter(store: Store, filters: unknown, generation: Generation): FilterNode | null {
  return parseFilters(store, filters, MESSAGE_FILTER, generation);
}

export function documentFilter(store: Store, filters: unknown, generation: Generation): FilterNode | null {
  return parseFilters(store, filters, DOCUMENT_FILTER, generation);
}

export function listQuery(store: Store, request: ListRequest, schema: FilterSchema): ListQuery {
  return { filter: parseFilters(store, request.filters, schema, request.generation), page: request.page, size: request.size, reverse: request.reverse };
}

/** v2 orders sessions by creation time alone; v3 breaks ties by insertion order. */
export function sessionOrder(generation: Generation): SessionOrder {
  return generation === 'v2' ? 'created' : 'created-then-insertion';
}

export function sessionListQuery(store: Store, request: ListRequest, schema: FilterSchema): SessionListQuery {
  const filter = parseFilters(store, request.filters, schema, request.generation);
  return { filter, page: request.page, size: request.size, reverse: request.reverse, order: sessionOrder(request.generation) };
}

export function v1ListQuery(store: Store, request: V1ListRequest): V1ListQuery {
  const filter = request.filter;
  const parsed = filter === null || Object.keys(filter).length === 0 ? null : parseFilter({ metadata: { contains: filter } }, V1_METADATA_FILTER, V3_0_12_FILTER_RULES, store.filterLimits);
  return { filter: parsed, page: request.page, size: request.size, reverse: request.reverse };
}
