import { VECTOR_KINDS, WORKSPACE_KINDS, type PortableCursor, type PortableKind } from '../../storage/portable.js';
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
    includes: ['workspace', ...WORKSPACE_KINDS, ...(options.withVectors ? VECTOR_KINDS : [])],
    vectors: options.withVectors,
  };
}

/**
 * The export as text, a page of lines at a time (each ending with a newline): the header, every
 * chosen workspace, then each workspace's rows kind by kind in dependency order (WORKSPACE_KINDS),
 * each kind in storage order. Each page is one keyset read, so memory stays that of one page
 * however large the store; the consumer's pace sets the reads' (an async generator runs only
 * when the next piece is asked for).
 */
export async function* exportText(store: Store, options: ExportOptions): AsyncGenerator<string> {
  const size = options.pageSize ?? EXPORT_PAGE_SIZE;
  yield `${JSON.stringify(exportHeader(options))}\n`;
  const ids = options.workspaceIds === undefined ? undefined : [...new Set(options.workspaceIds)];
  for (let after: PortableCursor; ; ) {
    const page = await store.portable.workspaces(ids, after, size);
    if (page.rows.length > 0) yield page.rows.map((row) => `${rowLine('workspace', row)}\n`).join('');
    if (page.next === undefined) break;
    after = page.next;
  }
  const kinds: Exclude<PortableKind, 'workspace'>[] = [...WORKSPACE_KINDS, ...(options.withVectors ? VECTOR_KINDS : [])];
  for (let after: PortableCursor; ; ) {
    const workspaces = await store.portable.workspaces(ids, after, size);
    for (const workspace of workspaces.rows) {
      for (const kind of kinds) {
        for (let from: PortableCursor; ; ) {
          const page = await store.portable.page(kind, workspace.id, from, size);
          if (page.rows.length > 0) yield page.rows.map((row) => `${rowLine(kind, row)}\n`).join('');
          if (page.next === undefined) break;
          from = page.next;
        }
      }
    }
    if (workspaces.next === undefined) break;
    after = workspaces.next;
  }
}
