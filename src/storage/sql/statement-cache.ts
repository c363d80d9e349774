import { LRUCache } from 'lru-cache';

/**
 * Total length of the SQL texts a statement cache keeps; the least recently used go first.
 * Statements that test a filter are as many as the shapes of the filters clients send (the
 * values are bound, the structure is not), so a cache without a bound grew with every new
 * shape: 20,000 shapes of 20 conditions took a SQLite process from 118 to 1,379 MB (scratch).
 * A prepared SQLite statement takes about 7 times its text: this keeps them to some 30 MB,
 * thousands of ordinary statements or 36 of the largest filters (500 conditions, 110,000 characters).
 */
export const STATEMENT_CACHE_CHARS = 4_000_000;

/**
 * A cache of what a driver derives from SQL texts (prepared statements, rewritten texts);
 * `onEvict` hears of each text dropped to make room.
 */
export function statementCache<V extends object>(onEvict?: (sql: string) => void): LRUCache<string, V> {
  return new LRUCache<string, V>({
    maxSize: STATEMENT_CACHE_CHARS,
    sizeCalculation: (_value, sql) => Math.max(1, sql.length),
    ...(onEvict === undefined ? {} : { dispose: (_value: V, sql: string, reason: LRUCache.DisposeReason) => (reason === 'evict' ? onEvict(sql) : undefined) }),
  });
}
