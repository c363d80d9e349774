import type { FilterNode, Page } from '../store.js';
import { filterCondition, type FilterColumns } from './compile-filter.js';
import type { Dialect } from './dialect.js';
import type { SqlExecutor } from './driver.js';
import { pageOffset } from './page-offset.js';

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

/**
 * Runs a page query and its count. The count is skipped when the first page is not full, and
 * `knownTotal` (a trigger-maintained count) replaces it when there is no filter, so unfiltered
 * pages cost O(page), not O(table).
 */
export async function listPage<R, T>(
  db: SqlExecutor,
  dialect: Dialect,
  base: PageBase,
  query: { filter: FilterNode | null; page: number; size: number; reverse: boolean },
  map: (row: R) => T,
  knownTotal?: () => Promise<number>,
): Promise<Page<T>> {
  const params = [...base.params];
  const filterSql = filterCondition(query.filter, base.filterColumns, dialect, params);
  const where = filterSql === null ? base.where : `${base.where} AND (${filterSql})`;
  const direction = query.reverse ? 'DESC' : 'ASC';
  const order = base.order.map((column) => `${column} ${direction}`).join(', ');
  const offset = pageOffset(query.page, query.size);
  const rows = await db.all<R>(`SELECT ${base.select} FROM ${base.from} WHERE ${where} ORDER BY ${order} LIMIT ? OFFSET ?`, [...params, query.size, offset]);
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
