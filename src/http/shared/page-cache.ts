/**
 * Serialised list pages, each stored with the data version it was built from. A page is only
 * served while the version read from the database is still the same, so every process that
 * shares the database stays correct; the cache only saves rebuilding identical bytes. The
 * version query itself is skipped while the store's change token (read before it) is the one
 * seen when the page was last checked: nothing has committed since, from any process. The
 * least recently used pages go first once `maxBytes` is reached.
 */
/** Budget of the caches of sessions-of-a-peer and message pages (peers/list keeps the default). */
export const LIST_CACHE_BYTES = 8 * 1024 * 1024;

export class PageCache {
  private readonly entries = new Map<string, { version: string; body: string; token: string | undefined }>();
  private bytes = 0;

  /** `changeToken`: the store's change token (Store.changeToken), read first on every request. */
  constructor(
    private readonly changeToken: () => string | undefined,
    private readonly maxBytes = 32 * 1024 * 1024,
  ) {}

  /** The entry, made the most recently used. */
  private take(key: string): { version: string; body: string; token: string | undefined } | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    // refresh recency: Map iteration order is insertion order
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry;
  }

  /**
   * The page's JSON: the cached bytes while the data has not changed, else `build()`'s, kept for
   * the next request. `version` is undefined for a page that is never kept (a filtered one);
   * otherwise it reads the page's data version (undefined: nothing to cache, such as a
   * workspace that does not exist). The store's change token is read before anything else, and
   * the version only when the token differs from the one seen at the page's last check (or
   * the store cannot tell).
   */
  async serve(key: string, version: (() => Promise<string | undefined>) | undefined, build: () => Promise<string>): Promise<string> {
    if (version === undefined) return build();
    const token = this.changeToken();
    const entry = this.take(key);
    if (entry !== undefined && token !== undefined && entry.token === token) return entry.body;
    const current = await version();
    if (current === undefined) return build();
    if (entry !== undefined && entry.version === current) {
      entry.token = token;
      return entry.body;
    }
    const body = await build();
    this.set(key, current, body, token);
    return body;
  }

  private set(key: string, version: string, body: string, token: string | undefined): void {
    if (body.length > this.maxBytes / 4) return;
    const previous = this.entries.get(key);
    if (previous !== undefined) {
      this.bytes -= previous.body.length;
      this.entries.delete(key);
    }
    this.entries.set(key, { version, body, token });
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
