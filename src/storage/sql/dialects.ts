import { postgresDialect } from '../postgres/postgres-dialect.js';
import { sqliteDialect } from '../sqlite/sqlite-dialect.js';
import type { Dialect, DialectName } from './dialect.js';

/** Each dialect's implementation, by name (a driver names its dialect). */
export const DIALECTS: Readonly<Record<DialectName, Dialect>> = { sqlite: sqliteDialect, postgres: postgresDialect };
