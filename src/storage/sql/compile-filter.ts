/*
 * Filter compiler: a validated FilterNode tree (storage/filter.ts, parsed and checked by
 * domain/filters/parse-filter.ts) to one SQL boolean expression for the store's dialect. Every
 * value is bound (`?` placeholders, never inside a literal); the only text spliced into the SQL
 * is the FilterColumns' (trusted) column expressions and the dialect's constants.
 *
 * Known limitations (the dialects' own behaviour):
 * - contains/icontains fold case by Unicode on SQLite through JavaScript (engram_lower) when the
 *   needle is beyond ASCII, else by SQLite's lower() (ASCII letters). PostgreSQL uses ILIKE:
 *   Unicode-aware under a UTF-8 LC_CTYPE (e.g. C.UTF-8), ASCII only under the C locale.
 * - Text form of metadata values on SQLite: nested objects/arrays are compact JSON in stored key
 *   order (`{"b":1,"a":[1,2]}`) where PostgreSQL prints jsonb (`{"a": [1, 2], "b": 1}`), and
 *   numbers in exponent form print differently (`1.0e-07` vs `0.0000001`).
 * - SQLite compares metadata numbers as 64-bit floats (`1e-9999` is 0, 20-digit integers are
 *   rounded); PostgreSQL compares exact numerics.
 * - Lexicographic comparisons of metadata text use byte order (COLLATE "C" on PostgreSQL,
 *   BINARY on SQLite), not the database collation.
 * - PostgreSQL: the SQL assumes standard_conforming_strings = on (the default) for `ESCAPE '\'`.
 *   SQLite: keys containing `"` or `\` rely on SQLite decoding escapes in quoted JSON path labels
 *   (recent SQLite; verified with the 3.53 bundled by better-sqlite3 12).
 */
import type { FilterNode, FilterTarget } from '../store.js';
import type { Dialect, FilterContext } from './dialect.js';
import { jsonText } from './json-text.js';
import { bind, join, raw, sql, type Sql } from './sql.js';

/** Where a model's filterable fields live: public key -> SQL expression, the metadata column, the row key. */
export interface FilterColumns {
  /** e.g. { id: 'p.id', created_at: 'p.created_at' } */
  columns: Readonly<Record<string, string>>;
  /** e.g. 'p.metadata' */
  metadata: string;
  /** The table's row key, for the filter's time limit (Dialect.filterGuard), e.g. 'p.pk' */
  key: string;
}

/**
 * Placeholders a compiled filter may hold. The parser's budget (10000 values as SQLite binds
 * them) keeps every filter well below it; drivers allow about 32k.
 */
const MAX_PLACEHOLDERS = 30_000;

const NEVER = raw('(1 = 0)');

class FilterCompiler implements FilterContext {
  private aliases = 0;
  readonly metadata: Sql;

  constructor(
    private readonly columns: FilterColumns,
    private readonly dialect: Dialect,
  ) {
    this.metadata = raw(columns.metadata);
  }

  alias(): string {
    return `mf_${++this.aliases}`;
  }

  private column(key: string): Sql {
    const column = Object.hasOwn(this.columns.columns, key) ? this.columns.columns[key] : undefined;
    if (column === undefined) throw new Error(`filter names column ${key}, which this table lacks`);
    return raw(column);
  }

  private target(target: FilterTarget): Sql {
    return 'column' in target ? this.column(target.column) : this.dialect.metadataText(this, target.metadataKey);
  }

  node(node: FilterNode): Sql {
    const d = this.dialect;
    switch (node.kind) {
      case 'and':
        return join(node.items.map((item) => this.node(item)), 'AND');
      case 'or':
        return join(node.items.map((item) => this.node(item)), 'OR');
      case 'not':
        // COALESCE: "is not true" in both dialects (SQLite reads FALSE as 0)
        return node.unsetAsFalse === true ? sql`(NOT COALESCE(${this.node(node.item)}, FALSE))` : sql`(NOT ${this.node(node.item)})`;
      case 'never':
        return NEVER;
      case 'is-null':
        return sql`(${this.column(node.column)} IS NULL)`;
      case 'not-null':
        return sql`(${this.column(node.column)} IS NOT NULL)`;
      case 'compare':
        // ordering of text in byte order, as SQLite's BINARY collation orders it
        if (node.value.type === 'text' && node.op !== '=' && node.op !== '<>') return d.textCompare(this.column(node.column), node.op, node.value.value);
        return sql`(${this.column(node.column)} ${raw(node.op)} ${d.filterValue(node.value)})`;
      case 'distinct': {
        const column = this.column(node.column);
        return sql`(${column} IS NULL OR ${column} <> ${d.filterValue(node.value)})`;
      }
      case 'in': {
        let condition = NEVER;
        if (node.values.length > 0) {
          // One JSON array parameter whatever the list length.
          const elements = node.values.map((v) => d.listElement(v));
          const list = bind(`[${elements.map((v) => (typeof v === 'bigint' ? v.toString() : JSON.stringify(v))).join(',')}]`);
          condition = d.inList(this.column(node.column), list, node.values[0].type);
        }
        // `x IN (..., NULL)` is NULL rather than false when x is not listed.
        return node.orNull ? sql`(${condition} OR NULL)` : condition;
      }
      case 'holds':
        return d.listHolds(this.column(node.column), bind(node.id));
      case 'like': {
        const target = this.target(node.target);
        return node.wildcards ? d.likePattern(target, `%${node.needle}%`) : d.containsText(target, node.needle);
      }
      case 'key-number':
        return d.numberCompare(d.metadataNumber(this, node.key), node.op, node.value);
      case 'key-text':
        return d.textCompare(d.metadataText(this, node.key), node.op, node.value);
      case 'key-in':
        return d.textInList(d.metadataText(this, node.key), bind(jsonText(node.values)));
      case 'contains':
        return d.metadataContains(this, node.value);
    }
  }
}

/** Compiles a parsed filter to a SQL condition; null when there is none. */
export function compileFilter(filter: FilterNode | null, columns: FilterColumns, dialect: Dialect): Sql | null {
  if (filter === null) return null;
  const compiled = new FilterCompiler(columns, dialect).node(filter);
  if (compiled.values.length > MAX_PLACEHOLDERS) throw new Error(`a filter compiled to ${compiled.values.length} placeholders`);
  return compiled;
}

/**
 * compileFilter for a query built as text and a parameter list: appends the values to `params`.
 * The condition holds the time limit's guard (Dialect.filterGuard) ahead of the filter.
 */
export function filterCondition(filter: FilterNode | null, columns: FilterColumns, dialect: Dialect, params: unknown[]): string | null {
  const compiled = compileFilter(filter, columns, dialect);
  if (compiled === null) return null;
  for (const v of compiled.values) params.push(v);
  return `${dialect.filterGuard(columns.key)} AND (${compiled.text})`;
}
