import { z } from 'zod';
import { isoTime } from '../../http/shared/present.js';
import type { ConclusionRecord, MessageRecord } from '../../storage/store.js';

/** Every workspace tool's optional `workspace_id` (M3 of the reference's MCP server). */
export const workspaceId = {
  workspace_id: z
    .string()
    .optional()
    .describe(
      'The workspace to use. Omit it when the connection names a workspace (X-Honcho-Workspace-ID header, `engram mcp --workspace`) or the key is scoped to one; otherwise find one with list_workspaces or make one with create_workspace.',
    ),
};

export const metadataShape = z.record(z.string(), z.unknown());

export const messageShape = z.object({
  id: z.string(),
  content: z.string(),
  peer_id: z.string(),
  session_id: z.string(),
  metadata: metadataShape,
  created_at: z.string(),
});

export const conclusionShape = z.object({
  id: z.string(),
  content: z.string(),
  level: z.string(),
  observer_id: z.string(),
  observed_id: z.string(),
  session_id: z.string().nullable(),
  created_at: z.string(),
  // only on a conclusion a newer one replaced (list_conclusions with include_superseded)
  superseded_at: z.string().optional(),
  superseded_by: z.string().nullable().optional(),
});

export const summaryShape = z
  .object({ content: z.string(), message_id: z.string(), summary_type: z.string(), created_at: z.string(), token_count: z.number() })
  .nullable();

/** The page fields list tools add to their items (the first page, 50 items, as the reference's). */
export const pageFields = { total: z.number().int(), page: z.number().int(), pages: z.number().int() };

export const idItem = z.object({ id: z.string() });

export function message(m: MessageRecord) {
  return { id: m.id, content: m.content, peer_id: m.peerId, session_id: m.sessionId, metadata: m.metadata, created_at: isoTime(m.createdAt) };
}

export function conclusion(c: ConclusionRecord) {
  return {
    id: c.id,
    content: c.content,
    level: c.level,
    observer_id: c.observerId,
    observed_id: c.observedId,
    session_id: c.sessionId,
    created_at: isoTime(c.createdAt),
    ...(c.supersededAt === null || c.supersededAt === undefined ? {} : { superseded_at: isoTime(c.supersededAt), superseded_by: c.supersededBy ?? null }),
  };
}

/** `total`, `page` and `pages` of a page read with `size` items a page. */
export function pageOf(page: { total: number }, number: number, size: number) {
  return { total: page.total, page: number, pages: Math.ceil(page.total / size) };
}

export const FIRST_PAGE = 1;
export const PAGE_SIZE = 50;
