import { LRUCache } from 'lru-cache';

/** Budget of the caches of sessions-of-a-peer and message pages (peers/list keeps the default). */
export const LIST_CACHE_BYTES = 8 * 1024 * 1024;

interface Page {
  version: string;
  body: string;
  token: string | undefined;
}

/**
 * Serialised list pages, each stored with the data version it was built from. A page is only
 * served while the version read from the database is still the same, so every process that
 * shares the database stays correct; the cache only saves rebuilding identical bytes. The
 * version query itself is skipped while the store's change token (read before it) is the one
 * seen when the page was last checked: nothing has committed since, from any process. The
 * least recently used pages go first once `maxBytes` is reached.
 */
export class PageCache {
  private readonly pages: LRUCache<string, Page>;

  /** `changeToken`: the store's change token (Store.changeToken), read first on every request. */
  constructor(
    private readonly changeToken: () => string | undefined,
    maxBytes = 32 * 1024 * 1024,
  ) {
    // a page larger than a quarter of the budget is not kept (nor is an older version of it)
    this.pages = new LRUCache<string, Page>({ maxSize: maxBytes, maxEntrySize: maxBytes / 4, sizeCalculation: (page) => Math.max(1, page.body.length) });
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
    const entry = this.pages.get(key);
    if (entry !== undefined && token !== undefined && entry.token === token) return entry.body;
    const current = await version();
    if (current === undefined) return build();
    if (entry !== undefined && entry.version === current) {
      entry.token = token;
      return entry.body;
    }
    const body = await build();
    this.pages.set(key, { version: current, body, token });
    return body;
  }
}

/** Whether a `filters` value imposes nothing (absent, null or `{}`). */
export function isNoFilter(filters: unknown): boolean {
  return filters === undefined || filters === null || (typeof filters === 'object' && Object.keys(filters).length === 0);
}
