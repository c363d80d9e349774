/**
 * Serialised list pages, each stored with the data version it was built from. A page is only
 * served while the version read from the database is still the same, so every process that
 * shares the database stays correct; the cache only saves rebuilding identical bytes. The
 * least recently used pages go first once `maxBytes` is reached.
 */
/** Budget of the caches of sessions-of-a-peer and message pages (peers/list keeps the default). */
export const LIST_CACHE_BYTES = 8 * 1024 * 1024;

export class PageCache {
  private readonly entries = new Map<string, { version: string; body: string }>();
  private bytes = 0;

  constructor(private readonly maxBytes = 32 * 1024 * 1024) {}

  get(key: string, version: string): string | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined || entry.version !== version) return undefined;
    // refresh recency: Map iteration order is insertion order
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.body;
  }

  /**
   * The page's JSON: the cached bytes while `version` still matches, else `build()`'s, kept for
   * the next request. An undefined version (a filtered page) is built every time, never kept.
   */
  async serve(key: string, version: string | undefined, build: () => Promise<string>): Promise<string> {
    if (version === undefined) return build();
    const cached = this.get(key, version);
    if (cached !== undefined) return cached;
    const body = await build();
    this.set(key, version, body);
    return body;
  }

  set(key: string, version: string, body: string): void {
    if (body.length > this.maxBytes / 4) return;
    const previous = this.entries.get(key);
    if (previous !== undefined) {
      this.bytes -= previous.body.length;
      this.entries.delete(key);
    }
    this.entries.set(key, { version, body });
    this.bytes += body.length;
    for (const [oldest, entry] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(oldest);
      this.bytes -= entry.body.length;
    }
  }
}

/** Whether a `filters` value imposes nothing (absent, null or `{}`). */
export function isNoFilter(filters: unknown): boolean {
  return filters === undefined || filters === null || (typeof filters === 'object' && Object.keys(filters).length === 0);
}
