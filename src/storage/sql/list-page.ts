import type { FilterNode, Page } from '../store.js';
import { filterCondition, type FilterColumns } from './compile-filter.js';
import type { Dialect } from './dialect.js';
import type { SqlExecutor } from './driver.js';
import { pageOffset } from './page-offset.js';

/** One page of a list: the base query, its filter and order, and how rows become records. */
export interface PageQuery<R, T> {
  /** FROM clause, WHERE condition and its parameters. */
  from: string;
  where: string;
  params: readonly unknown[];
  /** Selected columns. */
  select: string;
  /** ORDER BY columns, each ascending (descending when `reverse`). */
  order: readonly string[];
  filter: FilterNode | null;
  /** Where the filter's keys live (null: the query takes no filter). */
  filterColumns: FilterColumns | null;
  page: number;
  size: number;
  reverse: boolean;
  map: (row: R) => T;
  /** A trigger-maintained count that replaces COUNT(*) when there is no filter. */
  knownTotal?: () => Promise<number>;
}

/**
 * Runs a page query and its count. The count is skipped when the first page is not full, and
 * `knownTotal` replaces it when there is no filter, so unfiltered pages cost O(page), not O(table).
 */
export async function listPage<R, T>(db: SqlExecutor, dialect: Dialect, q: PageQuery<R, T>): Promise<Page<T>> {
  const params = [...q.params];
  const filterSql = q.filterColumns === null ? null : filterCondition(q.filter, q.filterColumns, dialect, params);
  const where = filterSql === null ? q.where : `${q.where} AND (${filterSql})`;
  const direction = q.reverse ? 'DESC' : 'ASC';
  const order = q.order.map((column) => `${column} ${direction}`).join(', ');
  const offset = pageOffset(q.page, q.size);
  const rows = await db.all<R>(`SELECT ${q.select} FROM ${q.from} WHERE ${where} ORDER BY ${order} LIMIT ? OFFSET ?`, [...params, q.size, offset]);
  let total: number;
  if (filterSql === null && q.knownTotal !== undefined) {
    total = await q.knownTotal();
  } else if (offset === 0 && rows.length < q.size) {
    total = rows.length;
  } else {
    const counted = await db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${q.from} WHERE ${where}`, params);
    total = Number(counted?.n ?? 0);
  }
  return { items: rows.map(q.map), total };
}
