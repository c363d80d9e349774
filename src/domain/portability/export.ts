import { REST_KINDS, SETUP_KINDS, VECTOR_KINDS, WALKED_KINDS, type PortableCursor, type WalkedKind, type WorkspaceKind } from '../../storage/portable.js';
import type { Store } from '../../storage/store.js';
import { ENGRAM_VERSION, FORMAT, FORMAT_VERSION, isoMicros, rowLine, type ExportHeader } from './format.js';

export interface ExportOptions {
  /** Only these workspaces (undefined: every one). */
  workspaceIds?: readonly string[];
  withVectors: boolean;
  now: Date;
  /** Rows read by one statement. */
  pageSize?: number;
}

export const EXPORT_PAGE_SIZE = 1000;

/** The header line of an export with these options. */
export function exportHeader(options: ExportOptions): ExportHeader {
  return {
    type: 'header',
    format: FORMAT,
    format_version: FORMAT_VERSION,
    engram_version: ENGRAM_VERSION,
    exported_at: isoMicros(options.now),
    workspaces: options.workspaceIds === undefined ? null : [...options.workspaceIds],
    includes: ['workspace', ...SETUP_KINDS, ...WALKED_KINDS, ...REST_KINDS, ...(options.withVectors ? VECTOR_KINDS : [])],
    vectors: options.withVectors,
  };
}

/**
 * The export as text, a page of lines at a time (each ending with a newline), in the order of
 * storage/portable.ts: the header, the chosen workspaces, each one's peers, sessions and
 * memberships, the messages and conclusions of all of them (one walk of each table), each one's
 * other rows, then the vectors. Each page is one keyset read, so memory stays that of one page
 * however large the store; the consumer's pace sets the reads' (an async generator runs only
 * when the next piece is asked for).
 */
export async function* exportText(store: Store, options: ExportOptions): AsyncGenerator<string> {
  const size = options.pageSize ?? EXPORT_PAGE_SIZE;
  const portable = store.portable;
  yield `${JSON.stringify(exportHeader(options))}\n`;
  const ids = options.workspaceIds === undefined ? undefined : [...new Set(options.workspaceIds)];

  async function* eachWorkspace(): AsyncGenerator<string> {
    for (let after: PortableCursor; ; ) {
      const page = await portable.workspaces(ids, after, size);
      for (const row of page.rows) yield row.id;
      if (page.next === undefined) return;
      after = page.next;
    }
  }
  async function* workspaceRows(kinds: readonly WorkspaceKind[]): AsyncGenerator<string> {
    for await (const workspaceId of eachWorkspace()) {
      for (const kind of kinds) {
        for (let after: PortableCursor; ; ) {
          const page = await portable.page(kind, workspaceId, after, size);
          if (page.rows.length > 0) yield page.rows.map((row) => `${rowLine(kind, row)}\n`).join('');
          if (page.next === undefined) break;
          after = page.next;
        }
      }
    }
  }
  async function* walkedRows(kinds: readonly WalkedKind[]): AsyncGenerator<string> {
    for (const kind of kinds) {
      for (let after: PortableCursor; ; ) {
        const page = await portable.walk(kind, ids, after, size);
        if (page.rows.length > 0) yield page.rows.map((row) => `${rowLine(kind, row)}\n`).join('');
        if (page.next === undefined) break;
        after = page.next;
      }
    }
  }

  for (let after: PortableCursor; ; ) {
    const page = await portable.workspaces(ids, after, size);
    if (page.rows.length > 0) yield page.rows.map((row) => `${rowLine('workspace', row)}\n`).join('');
    if (page.next === undefined) break;
    after = page.next;
  }
  yield* workspaceRows(SETUP_KINDS);
  yield* walkedRows(WALKED_KINDS);
  yield* workspaceRows(REST_KINDS);
  if (options.withVectors) yield* walkedRows(VECTOR_KINDS);
}
