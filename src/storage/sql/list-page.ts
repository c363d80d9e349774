import type { FilterNode, Page } from '../store.js';
import { filterCondition, type FilterColumns } from './compile-filter.js';
import type { Dialect } from './dialect.js';
import type { SqlExecutor } from './driver.js';
import { pageOffset } from './page-offset.js';
import type { SeekPoints } from './seek-points.js';

/** What a list selects: FROM clause, WHERE condition and its parameters, columns, order, filter keys. */
export interface PageBase {
  from: string;
  where: string;
  params: readonly unknown[];
  select: string;
  /** ORDER BY columns, each ascending (descending when the query says `reverse`). */
  order: readonly string[];
  /** Where the filter's keys live. */
  filterColumns: FilterColumns;
}

/** A list whose pages may start at a remembered row (seek-points.ts): its points and data version. */
export interface ListSeek {
  points: SeekPoints;
  /** The list's data version, read twice around a deep page (undefined: keep no point). */
  version: () => Promise<string | undefined>;
}

/**
 * Pages starting this many rows in or more are read from a remembered point when there is one
 * (and leave one for the next page): below it, stepping over the rows costs less than reading
 * the version twice.
 */
export const SEEK_FROM_ROWS = 500;

/**
 * Runs a page query and its count. The count is skipped when the first page is not full, and
 * `knownTotal` (a trigger-maintained count) replaces it when there is no filter, so unfiltered
 * pages cost O(page), not O(table). With `seek`, an unfiltered page far into the list starts
 * after the last row of an earlier page read at the same data version instead of stepping over
 * every row before it (seekPage).
 */
export async function listPage<R, T>(
  db: SqlExecutor,
  dialect: Dialect,
  base: PageBase,
  query: { filter: FilterNode | null; page: number; size: number; reverse: boolean },
  map: (row: R) => T,
  knownTotal?: () => Promise<number>,
  seek?: ListSeek,
): Promise<Page<T>> {
  const params = [...base.params];
  const filterSql = filterCondition(query.filter, base.filterColumns, dialect, params);
  const where = filterSql === null ? base.where : `${base.where} AND (${filterSql})`;
  const direction = query.reverse ? 'DESC' : 'ASC';
  const order = base.order.map((column) => `${column} ${direction}`).join(', ');
  const offset = pageOffset(query.page, query.size);
  const deep = seek !== undefined && filterSql === null && offset >= SEEK_FROM_ROWS;
  const rows =
    (deep ? await seekPage<R>(db, dialect, base, { ...query, offset, order }, seek) : undefined) ??
    (await db.all<R>(`SELECT ${base.select} FROM ${base.from} WHERE ${where} ORDER BY ${order} LIMIT ? OFFSET ?`, [...params, query.size, offset]));
  let total: number;
  if (filterSql === null && knownTotal !== undefined) {
    total = await knownTotal();
  } else if (offset === 0 && rows.length < query.size) {
    total = rows.length;
  } else {
    const counted = await db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${base.from} WHERE ${where}`, params);
    total = Number(counted?.n ?? 0);
  }
  return { items: rows.map(map), total };
}

/**
 * A page `page.offset` rows into the list (in `page.order`, listPage's ORDER BY), started from the
 * nearest remembered point of the list at its current version (else by stepping over the rows),
 * leaving a point at its own last row. The version is read before and after: when they differ, a page read from a point is given up
 * (undefined: the caller reads it by offset) and a page read by offset is returned but leaves
 * no point. `base.order` must end with a unique key, so that rows after a key are exactly the
 * rows after its place.
 */
async function seekPage<R>(
  db: SqlExecutor,
  dialect: Dialect,
  base: PageBase,
  page: { size: number; reverse: boolean; offset: number; order: string },
  seek: ListSeek,
): Promise<R[] | undefined> {
  const version = await seek.version();
  if (version === undefined) return undefined;
  const list = [base.from, base.where, page.order, JSON.stringify(base.params)].join('\u0000');
  const point = seek.points.nearest(list, version, page.offset);
  const keys = base.order.map((column, index) => `${dialect.orderKey(column)} AS seek_key_${index}`).join(', ');
  let where = base.where;
  const params = [...base.params];
  let skip = page.offset;
  if (point !== undefined) {
    const columns = base.order.length === 1 ? base.order[0] : `(${base.order.join(', ')})`;
    const values = base.order.length === 1 ? '?' : `(${base.order.map(() => '?').join(', ')})`;
    where = `(${where}) AND ${columns} ${page.reverse ? '<' : '>'} ${values}`;
    params.push(...point.key);
    skip -= point.rows;
  }
  const rows = await db.all<R>(`SELECT ${base.select}, ${keys} FROM ${base.from} WHERE ${where} ORDER BY ${page.order} LIMIT ? OFFSET ?`, [...params, page.size, skip]);
  if ((await seek.version()) !== version) return point === undefined ? rows : undefined;
  const last = rows.at(-1) as Record<string, unknown> | undefined;
  if (last !== undefined) seek.points.remember(list, version, { rows: page.offset + rows.length, key: base.order.map((_, index) => last[`seek_key_${index}`]) });
  return rows;
}
