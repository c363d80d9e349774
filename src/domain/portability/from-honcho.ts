import { randomBytes } from 'node:crypto';
import type { PortableKind, PortableRows } from '../../storage/portable.js';
import type { DomainContext } from '../context.js';
import { parseIsoMicros, rowLine } from './format.js';
import { importLines, type ImportCounts } from './import.js';

/**
 * `engram import --from-honcho`: copies workspaces from a running server through the v3 HTTP API
 * (the reference's, or another Engram's), page by page, into this store. The rows are made into
 * export lines and go through the import's checks and batches, so what the remote sends is
 * checked like a file, and a rerun (after a crash, or to catch up) stores only what is missing:
 * ids are kept. What the API does not show cannot be copied (NOT_COPIED).
 */

/** What the v3 API does not expose, so a copy through it lacks (docs/portability.md). */
export const NOT_COPIED: readonly string[] = [
  'deleted (inactive) sessions, and the messages, memberships and conclusions in them',
  "members who left a session (only active members are listed), and when members joined (the session's creation time is used)",
  "conclusions' sources (source_ids), how many times each was derived (1 is used) and their metadata; deleted conclusions",
  'peer cards other than each peer\'s own card and its cards of the peers it has conclusions about',
  "scopes (they are not peers on the API) and scopes' copies of conclusions",
  'the v1 generation: v1 ids (new ones are made) and metamessages',
  'vectors (made again when an embedding model is configured) and dream state',
];

/** A request to the remote server that failed. */
export class RemoteError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RemoteError';
  }
}

export interface RemoteSource {
  url: string;
  apiKey?: string;
  workspaceIds?: string[];
}

const PAGE_SIZE = 100;
const ATTEMPTS = 4;

type Json = Record<string, unknown>;

class RemoteApi {
  private readonly base: string;

  constructor(private readonly source: RemoteSource) {
    this.base = source.url.replace(/\/+$/, '');
  }

  async call(method: 'GET' | 'POST', path: string, body?: unknown): Promise<unknown> {
    const url = `${this.base}${path}`;
    for (let attempt = 1; ; attempt++) {
      let response: Response;
      try {
        response = await fetch(url, {
          method,
          headers: {
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
            ...(this.source.apiKey === undefined ? {} : { authorization: `Bearer ${this.source.apiKey}` }),
          },
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(60_000),
        });
      } catch (error) {
        if (attempt < ATTEMPTS) {
          await new Promise((resolve) => setTimeout(resolve, 500 * 2 ** attempt));
          continue;
        }
        throw new RemoteError(`${method} ${url}: ${(error as Error).message}`);
      }
      if ((response.status === 429 || response.status >= 500) && attempt < ATTEMPTS) {
        await response.body?.cancel();
        await new Promise((resolve) => setTimeout(resolve, 500 * 2 ** attempt));
        continue;
      }
      const text = await response.text();
      if (!response.ok) throw new RemoteError(`${method} ${url}: ${response.status} ${text.slice(0, 300)}`);
      try {
        return text === '' ? null : JSON.parse(text);
      } catch {
        throw new RemoteError(`${method} ${url}: the answer is not JSON`);
      }
    }
  }

  /** Every item of a v3 page list, a page at a time. */
  async *pages(method: 'GET' | 'POST', path: string, body?: unknown, query = ''): AsyncGenerator<Json[]> {
    for (let page = 1; ; page++) {
      const answer = (await this.call(method, `${path}?page=${page}&size=${PAGE_SIZE}${query}`, body)) as { items?: unknown; pages?: unknown };
      if (answer === null || !Array.isArray(answer.items)) throw new RemoteError(`${method} ${path}: the answer is not a page ({"items": [...], ...})`);
      if (answer.items.length > 0) yield answer.items as Json[];
      if (answer.items.length < PAGE_SIZE || (typeof answer.pages === 'number' && page >= answer.pages)) return;
    }
  }
}

const enc = encodeURIComponent;
const v1Id = (): string => randomBytes(11).toString('hex').slice(0, 21);
const text = (value: unknown): string => (typeof value === 'string' ? value : String(value ?? ''));
const object = (value: unknown): Json => (value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : {});
/** A remote time as the row's Date (a time that does not parse is left for the line check to report). */
const time = (value: unknown): Date => parseIsoMicros(text(value)) ?? (new Date(text(value)) as Date);

function line<K extends PortableKind>(kind: K, row: PortableRows[K]): string {
  return rowLine(kind, row);
}

/** The remote's rows as export lines, workspace by workspace, in dependency order. */
async function* remoteLines(api: RemoteApi, source: RemoteSource, progress: (text: string) => void): AsyncGenerator<string> {
  const workspaces: Json[] = [];
  if (source.workspaceIds !== undefined) {
    for (const id of source.workspaceIds) {
      // a key of one workspace cannot list workspaces; get-or-create answers an existing one unchanged
      const found = (await api.call('POST', '/v3/workspaces', { id })) as Json;
      workspaces.push(found);
    }
  } else {
    for await (const page of api.pages('POST', '/v3/workspaces/list', {})) workspaces.push(...page);
  }
  for (const workspace of workspaces) {
    const w = text(workspace.id);
    const path = `/v3/workspaces/${enc(w)}`;
    let messages = 0;
    progress(`workspace ${w}`);
    yield line('workspace', { id: w, v1_id: v1Id(), metadata: object(workspace.metadata), configuration: object(workspace.configuration), created_at: time(workspace.created_at) });
    const peers: string[] = [];
    for await (const page of api.pages('POST', `${path}/peers/list`, {})) {
      for (const p of page) {
        peers.push(text(p.id));
        yield line('peer', { workspace_id: w, id: text(p.id), v1_id: v1Id(), kind: null, metadata: object(p.metadata), configuration: object(p.configuration), created_at: time(p.created_at) });
      }
    }
    const sessions = new Map<string, Date>();
    for await (const page of api.pages('POST', `${path}/sessions/list`, {})) {
      for (const s of page) {
        sessions.set(text(s.id), time(s.created_at));
        yield line('session', {
          workspace_id: w,
          id: text(s.id),
          v1_id: v1Id(),
          is_active: s.is_active !== false,
          metadata: object(s.metadata),
          configuration: object(s.configuration),
          created_at: time(s.created_at),
        });
      }
    }
    for (const [s, createdAt] of sessions) {
      const sessionPath = `${path}/sessions/${enc(s)}`;
      for await (const page of api.pages('GET', `${sessionPath}/peers`)) {
        for (const p of page) {
          const config = object(await api.call('GET', `${sessionPath}/peers/${enc(text(p.id))}/config`));
          yield line('membership', { workspace_id: w, session_id: s, peer_id: text(p.id), configuration: config, joined_at: createdAt, left_at: null });
        }
      }
      const summaries = object(await api.call('GET', `${sessionPath}/summaries`));
      const wanted = new Map<string, Json>();
      for (const key of ['short_summary', 'long_summary']) {
        const summary = summaries[key];
        if (summary !== null && typeof summary === 'object') wanted.set(text((summary as Json).message_id), summary as Json);
      }
      const seqs = new Map<string, number>();
      let seq = 0;
      for await (const page of api.pages('POST', `${sessionPath}/messages/list`, {})) {
        for (const m of page) {
          seq++;
          if (wanted.has(text(m.id))) seqs.set(text(m.id), seq);
          yield line('message', {
            workspace_id: w,
            session_id: s,
            id: text(m.id),
            peer_id: text(m.peer_id),
            content: text(m.content),
            metadata: object(m.metadata),
            token_count: typeof m.token_count === 'number' ? m.token_count : 0,
            created_at: time(m.created_at),
          });
        }
        messages += page.length;
        progress(`workspace ${w}: ${messages} messages`);
      }
      for (const key of ['short_summary', 'long_summary']) {
        const summary = summaries[key];
        if (summary === null || typeof summary !== 'object') continue;
        const u = summary as Json;
        const at = seqs.get(text(u.message_id));
        if (at === undefined) continue;
        yield line('summary', {
          workspace_id: w,
          session_id: s,
          summary_type: key === 'short_summary' ? 'short' : 'long',
          content: text(u.content),
          message_id: text(u.message_id),
          message_seq: at,
          token_count: typeof u.token_count === 'number' ? u.token_count : 0,
          created_at: time(u.created_at),
        });
      }
    }
    // oldest first, so the copy's storage order is the original's
    const observed = new Map<string, Set<string>>();
    let conclusions = 0;
    for await (const page of api.pages('POST', `${path}/conclusions/list`, {}, '&reverse=true')) {
      for (const c of page) {
        const sessionId = c.session_id === null || c.session_id === undefined ? null : text(c.session_id);
        // in a deleted session, being purged: not copied
        if (sessionId !== null && !sessions.has(sessionId)) continue;
        const observer = text(c.observer_id);
        const target = text(c.observed_id);
        if (observer !== target) observed.set(observer, (observed.get(observer) ?? new Set()).add(target));
        yield line('conclusion', {
          workspace_id: w,
          id: text(c.id),
          observer_id: observer,
          observed_id: target,
          session_id: sessionId,
          level: (['explicit', 'deductive', 'inductive', 'contradiction'].includes(text(c.level)) ? c.level : 'explicit') as PortableRows['conclusion']['level'],
          content: text(c.content),
          source_ids: null,
          source_session_ids: null,
          times_derived: 1,
          metadata: {},
          copied_from: null,
          created_at: time(c.created_at),
          // another Engram tells when the fact became true; the reference does not
          valid_from: typeof c.valid_from === 'string' ? time(c.valid_from) : null,
          superseded_at: null,
          superseded_by: null,
        });
      }
      conclusions += page.length;
      progress(`workspace ${w}: ${conclusions} conclusions`);
    }
    const now = new Date();
    for (const p of peers) {
      for (const target of [undefined, ...(observed.get(p) ?? [])]) {
        const answer = object(await api.call('GET', `${path}/peers/${enc(p)}/card${target === undefined ? '' : `?target=${enc(target)}`}`));
        if (!Array.isArray(answer.peer_card)) continue;
        yield line('peer_card', { workspace_id: w, observer_id: p, target_id: target ?? p, card: answer.peer_card.map(text), updated_at: now });
      }
    }
    for await (const page of api.pages('GET', `${path}/webhooks`)) {
      for (const h of page) yield line('webhook', { workspace_id: w, id: text(h.id), url: text(h.url), created_at: time(h.created_at) });
    }
  }
}

/** Copies the remote's workspaces into ctx's store; returns the import's counts. */
export async function copyFromHoncho(
  ctx: DomainContext,
  source: RemoteSource,
  options: { batchLines?: number; onProgress?: (text: string) => void } = {},
): Promise<ImportCounts> {
  const api = new RemoteApi(source);
  const progress = options.onProgress ?? (() => {});
  return importLines(ctx, remoteLines(api, source, progress), { batchLines: options.batchLines, headerless: { vectors: false } });
}
