import type { DialectName } from '../dialect.js';
import type { JsonObject } from '../store.js';
import { jsonText } from './json-text.js';

/** How values cross into and out of a dialect's columns (see dialect.ts for the layout). */
export interface Codec {
  time(value: Date): unknown;
  readTime(value: unknown): Date;
  json(value: JsonObject): string;
  readJson(value: unknown): JsonObject;
  bool(value: boolean): unknown;
  readBool(value: unknown): boolean;
}

const sqliteCodec: Codec = {
  time: (value) => value.getTime() * 1000,
  readTime: (value) => new Date(Math.floor(Number(value) / 1000)),
  json: (value) => jsonText(value),
  readJson: (value) => (typeof value === 'string' ? (JSON.parse(value) as JsonObject) : {}),
  bool: (value) => (value ? 1 : 0),
  readBool: (value) => value === 1,
};

const postgresCodec: Codec = {
  time: (value) => value,
  readTime: (value) => (value instanceof Date ? value : new Date(String(value))),
  // jsonb rejects \u0000; the wire layer strips NULs before values reach the store (contract §1.7)
  json: (value) => jsonText(value),
  readJson: (value) => (value ?? {}) as JsonObject,
  bool: (value) => value,
  readBool: (value) => value === true,
};

export function codecFor(dialect: DialectName): Codec {
  return dialect === 'sqlite' ? sqliteCodec : postgresCodec;
}
