import { LRUCache } from 'lru-cache';

/**
 * Where a list's earlier pages ended: the order key of a page's last row and how many rows of
 * the list come up to and including it. Pages are numbered (`page`, `size`), so page N starts
 * (N - 1) x size rows in, and `LIMIT size OFFSET (N - 1) x size` steps over every one of those
 * rows, about 0.12 µs each on SQLite (page 4,000 of a 200,000-message session: 23 ms against
 * 0.5 ms for page 1). A client reading a long list reads it page after page, so page N + 1 starts
 * right after a row that page N has just read: listPage (list-page.ts) remembers that row's
 * order key and starts the next page at it, `WHERE (order columns) > (key)`, through the same
 * index, skipping nothing.
 *
 * A point holds only for the data version it was read at (the list's counter, bumped by
 * triggers in every writer's transaction, with the row's random incarnation): listPage reads
 * the version before and after the page and keeps or uses a point only when both agree, so
 * every process sharing the database stays exact with its own points. Points are kept only
 * outside transactions (a transaction's own writes could be rolled back under a version
 * another commit then reaches).
 */
export interface SeekPoint {
  /** Rows of the list up to and including the key's row. */
  rows: number;
  /** The row's ORDER BY values, as read back by Dialect.orderKey. */
  key: readonly unknown[];
}

interface ListPoints {
  version: string;
  /** By `rows`, ascending. */
  points: SeekPoint[];
}

/** Points kept for one list; past this, every other one is dropped (the newest stays). */
const POINTS_PER_LIST = 64;

export class SeekPoints {
  private readonly lists: LRUCache<string, ListPoints>;

  constructor(maxLists = 4096) {
    this.lists = new LRUCache<string, ListPoints>({ max: maxLists });
  }

  /** The point of `list` at `version` nearest before `offset` rows (undefined: none). */
  nearest(list: string, version: string, offset: number): SeekPoint | undefined {
    const entry = this.lists.get(list);
    if (entry === undefined || entry.version !== version) return undefined;
    let best: SeekPoint | undefined;
    for (const point of entry.points) {
      if (point.rows > offset) break;
      best = point;
    }
    return best;
  }

  remember(list: string, version: string, point: SeekPoint): void {
    let entry = this.lists.get(list);
    if (entry === undefined || entry.version !== version) {
      entry = { version, points: [] };
      this.lists.set(list, entry);
    }
    const points = entry.points;
    let at = points.length;
    while (at > 0 && points[at - 1].rows >= point.rows) at--;
    if (points[at]?.rows === point.rows) return;
    points.splice(at, 0, point);
    if (points.length > POINTS_PER_LIST) entry.points = points.filter((_, index) => index % 2 === 1 || index === points.length - 1);
  }
}
