import type { FilterNode, JsonObject, ListQuery, SessionListQuery, SessionOrder, Store, V1ListQuery } from '../../storage/store.js';
import { DOCUMENT_FILTER, MESSAGE_FILTER, V1_METADATA_FILTER } from './filter-schemas.js';
import { CURRENT_FILTER_RULES, parseFilter, UNTYPED_FILTER_RULES, WILDCARD_FILTER_RULES, type FilterRules, type FilterSchema } from './parse-filter.js';

/*
 * Where a request's reading rules meet the store: a raw `filters` object and the rules of the API
 * generation that received it (chosen by the route: http/workspace-api/generations.ts) become the
 * parsed filter and order the store's queries take. The domain knows the rules, not generations.
 */

/** How a request's filters, orders and refusals are read. */
export interface ReadRules {
  filters: FilterRules;
  /** How sessions of equal creation times are ordered. */
  sessionOrder: SessionOrder;
  /** Refusals say how to send the request right (the current interface's messages). */
  hints: boolean;
}

/** The current interface's rules: typed filters, sessions of equal times in insertion order. The domain's own reads use them. */
export const CURRENT_RULES: ReadRules = { filters: CURRENT_FILTER_RULES, sessionOrder: 'created-then-insertion', hints: true };
/** The older interface's (contract §9.1): wildcard filters, sessions by creation time alone, bare refusals. */
export const WILDCARD_RULES: ReadRules = { filters: WILDCARD_FILTER_RULES, sessionOrder: 'created', hints: false };

/** A list request as a route reads it: raw `filters` (null: none), paging, and the rules it is read by. */
export interface ListRequest {
  filters: unknown;
  page: number;
  size: number;
  reverse: boolean;
  rules: ReadRules;
}

/** A v1 list request: metadata containment `filter` (contract-v1 §0.4), insertion order, offset paging. */
export interface V1ListRequest {
  filter: JsonObject | null;
  page: number;
  size: number;
  reverse: boolean;
}

/** Parses a raw `filters` object by the rules; a DomainError `invalid_input` when it is invalid. */
export function parseFilters(store: Store, filters: unknown, schema: FilterSchema, rules: ReadRules): FilterNode | null {
  if (filters === null || filters === undefined) return null;
  return parseFilter(filters, schema, rules.filters, store.filterLimits);
}

export function messageFilter(store: Store, filters: unknown, rules: ReadRules): FilterNode | null {
  return parseFilters(store, filters, MESSAGE_FILTER, rules);
}

export function documentFilter(store: Store, filters: unknown, rules: ReadRules): FilterNode | null {
  return parseFilters(store, filters, DOCUMENT_FILTER, rules);
}

export function listQuery(store: Store, request: ListRequest, schema: FilterSchema): ListQuery {
  return { filter: parseFilters(store, request.filters, schema, request.rules), page: request.page, size: request.size, reverse: request.reverse };
}

export function sessionListQuery(store: Store, request: ListRequest, schema: FilterSchema): SessionListQuery {
  const filter = parseFilters(store, request.filters, schema, request.rules);
  return { filter, page: request.page, size: request.size, reverse: request.reverse, order: request.rules.sessionOrder };
}

export function v1ListQuery(store: Store, request: V1ListRequest): V1ListQuery {
  const filter = request.filter;
  const parsed = filter === null || Object.keys(filter).length === 0 ? null : parseFilter({ metadata: { contains: filter } }, V1_METADATA_FILTER, UNTYPED_FILTER_RULES, store.filterLimits);
  return { filter: parsed, page: request.page, size: request.size, reverse: request.reverse };
}
