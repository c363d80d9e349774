import type { PortableKind, PortableRows } from '../../storage/portable.js';
import type { MessageRecord } from '../../storage/store.js';
import { within, type DomainContext } from '../context.js';
import { queueConclusionEmbeddings, queueMessageEmbeddings } from '../search/embeddings.js';
import { ImportLineError, parseLine, type ExportHeader, type ParsedLine } from './format.js';

/** Lines written by one transaction. */
export const IMPORT_BATCH_LINES = 1000;

export interface ImportCounts {
  /** Rows read, by kind. */
  read: Partial<Record<PortableKind, number>>;
  /** Rows stored, by kind (the others were there already). */
  inserted: Partial<Record<PortableKind, number>>;
  /** Messages and conclusions queued to be embedded. */
  queuedEmbeddings: number;
}

export interface ImportOptions {
  batchLines?: number;
  /** Called after each batch is committed, with the lines read so far. */
  onBatch?: (lines: number, counts: ImportCounts) => void;
  /**
   * Rows that come without a header (`--from-honcho`, which makes them itself): what the header
   * would say about vectors.
   */
  headerless?: { vectors: boolean };
}

/** A batch the store refused (a row naming a parent that is in neither the file nor the store). */
export class ImportBatchError extends Error {
  constructor(
    readonly firstLine: number,
    readonly lastLine: number,
    cause: unknown,
  ) {
    super(`lines ${firstLine}-${lastLine}: the store refused this batch (nothing of it was written): ${cause instanceof Error ? cause.message : String(cause)}`);
    this.name = 'ImportBatchError';
  }
}

type Row = { [K in PortableKind]: { kind: K; row: PortableRows[K] } }[PortableKind];

/**
 * Writes one batch in one transaction, kind run by kind run in file order: each row that is not
 * stored yet goes in, rows already there are left as they are. Messages and conclusions stored
 * are queued to be embedded (when a model is configured and the file brings no vectors); nothing
 * is queued for the deriver, so imported conclusions are never derived again and imported
 * messages never derived at all (`engram derive` does that on request).
 */
async function writeBatch(ctx: DomainContext, rows: readonly Row[], counts: ImportCounts, fileHasVectors: boolean): Promise<void> {
  const added: { kind: PortableKind; ids: string[]; rows: readonly Row['row'][] }[] = [];
  let queued = 0;
  await ctx.store.transaction(async (tx) => {
    queued = 0;
    added.length = 0;
    const txCtx = within(ctx, tx);
    const now = ctx.now();
    for (let start = 0; start < rows.length; ) {
      const kind = rows[start].kind;
      let end = start;
      while (end < rows.length && rows[end].kind === kind) end++;
      const run = rows.slice(start, end).map((r) => r.row);
      start = end;
      if (kind === 'conclusion') await tx.memory.lockConclusionCounts((run as PortableRows['conclusion'][]).map((c) => ({ workspaceId: c.workspace_id, observerId: c.observer_id, observedId: c.observed_id, level: c.level })));
      const ids = await tx.portable.insert(kind, run as never[]);
      added.push({ kind, ids, rows: run });
      if (fileHasVectors || ids.length === 0) continue;
      const fresh = new Set(ids);
      if (kind === 'message') {
        const bySession = new Map<string, MessageRecord[]>();
        for (const m of run as PortableRows['message'][]) {
          if (!fresh.has(m.id)) continue;
          const key = `${m.workspace_id}\u0000${m.session_id}`;
          const list = bySession.get(key) ?? [];
          list.push({ id: m.id, workspaceId: m.workspace_id, sessionId: m.session_id, peerId: m.peer_id, content: m.content, metadata: m.metadata, tokenCount: m.token_count, createdAt: m.created_at });
          bySession.set(key, list);
        }
        if (txCtx.reasoning?.models.embedder !== undefined && txCtx.reasoning.settings.embedMessages) {
          for (const list of bySession.values()) {
            await queueMessageEmbeddings(txCtx, list, now);
            queued += list.length;
          }
        }
      } else if (kind === 'conclusion' && txCtx.reasoning?.models.embedder !== undefined) {
        // a superseded fact keeps no vector (it is found by its words)
        const byWorkspace = new Map<string, string[]>();
        for (const c of run as PortableRows['conclusion'][]) if (fresh.has(c.id) && c.superseded_at === null) byWorkspace.set(c.workspace_id, [...(byWorkspace.get(c.workspace_id) ?? []), c.id]);
        for (const [workspaceId, list] of byWorkspace) {
          await queueConclusionEmbeddings(txCtx, workspaceId, list, now);
          queued += list.length;
        }
      }
    }
  });
  // counted once committed (a transaction run again by the driver starts its counts again)
  for (const { kind, ids, rows: run } of added) {
    counts.read[kind] = (counts.read[kind] ?? 0) + run.length;
    counts.inserted[kind] = (counts.inserted[kind] ?? 0) + ids.length;
  }
  counts.queuedEmbeddings += queued;
}

/**
 * Imports an export (docs/portability.md): reads `lines` one at a time, checks each, and writes
 * every IMPORT_BATCH_LINES lines in one transaction. A bad line ends the import with an
 * ImportLineError naming it, before anything of its batch is written (the batches before it
 * are committed). Rows are inserted when missing and left alone when present, so importing the
 * same file again, or again after a crash, writes only what is missing.
 */
export async function importLines(ctx: DomainContext, lines: AsyncIterable<string>, options: ImportOptions = {}): Promise<ImportCounts & { header: ExportHeader | undefined; lines: number }> {
  const batchLines = options.batchLines ?? IMPORT_BATCH_LINES;
  const counts: ImportCounts = { read: {}, inserted: {}, queuedEmbeddings: 0 };
  let header: ExportHeader | undefined;
  let vectors = options.headerless?.vectors ?? false;
  let lineNumber = 0;
  let batch: Row[] = [];
  let batchStart = 1;
  const flush = async () => {
    if (batch.length === 0) return;
    try {
      await writeBatch(ctx, batch, counts, vectors);
    } catch (error) {
      throw new ImportBatchError(batchStart, lineNumber, error);
    }
    batch = [];
    options.onBatch?.(lineNumber, counts);
  };
  for await (const text of lines) {
    lineNumber++;
    if (batch.length === 0) batchStart = lineNumber;
    if (text.trim() === '') {
      if (lineNumber % batchLines === 0) await flush();
      continue;
    }
    const parsed: ParsedLine = parseLine(text, lineNumber);
    if (parsed.kind === 'header') {
      if (header !== undefined || lineNumber !== 1 || options.headerless !== undefined) throw new ImportLineError(lineNumber, 'a header is allowed only as the first line');
      header = parsed.header;
      vectors = header.vectors;
      continue;
    }
    if (header === undefined && options.headerless === undefined) throw new ImportLineError(lineNumber, 'the first line must be the header ({"type":"header","format":"engram-export",...})');
    batch.push(parsed as Row);
    // batches of whole line ranges (1-1000, 1001-2000, ...), whatever lines are blank
    if (lineNumber % batchLines === 0) await flush();
  }
  if (header === undefined && options.headerless === undefined) throw new ImportLineError(Math.max(lineNumber, 1), 'the file is empty: no header');
  await flush();
  return { ...counts, header, lines: lineNumber };
}
