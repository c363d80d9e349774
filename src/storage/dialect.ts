/** The SQL dialects Engram stores data in. */
export type DialectName = 'sqlite' | 'postgres';

/*
 * Conventions shared by every query (both dialects):
 * - placeholders are written as `?`; the PostgreSQL driver renumbers them to `$n`,
 *   so no query may use PostgreSQL's `?` jsonb operators (use the jsonb_* functions).
 * - timestamps: SQLite stores INTEGER microseconds since the Unix epoch (UTC);
 *   PostgreSQL stores timestamptz.
 * - JSON objects (metadata, configuration): SQLite TEXT holding JSON; PostgreSQL jsonb.
 * - booleans: SQLite INTEGER 0/1; PostgreSQL boolean.
 */
