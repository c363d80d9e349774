/*
 * Request validation that reports errors exactly as FastAPI with pydantic v2 does (contract §6):
 * same `type`, `loc`, `msg`, `input` and `ctx`, in the same order, with pydantic's lax coercions.
 * No validation library produces pydantic's error bodies, and translating another library's
 * errors loses the input values and ordering, so the few validators the API needs live here
 * (validate/: the core types, strings, numbers, dates, containers, models).
 * Each schema also describes itself as JSON Schema for the served OpenAPI document.
 */

export * from './validate/core.js';
export * from './validate/strings.js';
export * from './validate/numbers.js';
export * from './validate/dates.js';
export * from './validate/containers.js';
export * from './validate/models.js';
