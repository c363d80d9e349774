import { openDatabase, type Database } from '../../src/runtime/database.js';
import { createDomainContext, type DomainContext } from '../../src/domain/context.js';
import { exportText } from '../../src/domain/portability/export.js';
import { PreciseDate } from '../../src/storage/precise-date.js';
import type { Store } from '../../src/storage/store.js';
import { ownPostgresDatabase, TEST_DATABASE_URL } from './test-app.js';

/** Every store a portability test can reach: SQLite always, PostgreSQL when the suite runs on it. */
export const POSTGRES_AVAILABLE = TEST_DATABASE_URL.startsWith('postgres');

export interface OpenStore {
  database: Database;
  ctx: DomainContext;
  dialect: 'sqlite' | 'postgres';
  /** Its DATABASE_URL, for a child process. */
  url: string;
  close(): Promise<void>;
}

/** A new empty store of `dialect`: a SQLite file under `dir`, or a PostgreSQL database of its own. */
export async function openStore(dialect: 'sqlite' | 'postgres', dir: string, name: string): Promise<OpenStore> {
  const own = dialect === 'postgres' ? await ownPostgresDatabase() : undefined;
  const url = own?.url ?? `${dir}/${name}.db`;
  const database = await openDatabase(url);
  return {
    database,
    ctx: createDomainContext(database.store, { jobMaxAttempts: 3 } as never),
    dialect,
    url,
    async close() {
      await database.driver.close();
      await own?.drop();
    },
  };
}

/** The whole export of a store as text. */
export async function exportAll(store: Store, options: { withVectors?: boolean; workspaceIds?: string[]; pageSize?: number } = {}): Promise<string> {
  let text = '';
  for await (const piece of exportText(store, { withVectors: options.withVectors ?? false, now: new Date(0), workspaceIds: options.workspaceIds, pageSize: options.pageSize }))
    text += piece;
  return text;
}

/** An async iterable of the lines of `text`. */
export async function* linesOfText(text: string): AsyncGenerator<string> {
  for (const line of text.split('\n')) yield line;
}

const at = (iso: string, micros = 0): Date => (micros === 0 ? new Date(iso) : new PreciseDate(Date.parse(iso), micros));

/**
 * Fills a store with every kind of row an export carries, in workspace `w`: peers (one a scope),
 * sessions (one inactive), memberships (one left), messages with times to the microsecond and
 * metadata whose keys come in no sorted order, conclusions of every level with their sources, a
 * peer card, summaries, dream state, a scope's backfill state, webhook endpoints, the v1
 * generation's app, user and metamessages, and (with `vectors`) vectors of 4 dimensions.
 */
export async function fillStore(store: Store, w: string, options: { messages?: number; vectors?: boolean } = {}): Promise<void> {
  const t0 = at('2026-03-01T10:00:00.000Z');
  await store.transaction(async (tx) => {
    await tx.workspaces.createIfAbsent({ id: w, metadata: { zeta: 1, alpha: { y: [1, 'two', null], b: true } }, configuration: { reasoning: { enabled: false } } }, t0);
    await tx.peers.createIfAbsent(w, { id: 'alice', metadata: { name: 'Alice', age: 30 }, configuration: { observe_me: true } }, at('2026-03-01T10:00:01.000Z', 250));
    await tx.peers.createIfAbsent(w, { id: 'bob', metadata: {}, configuration: {} }, at('2026-03-01T10:00:02.000Z'));
    await tx.peers.createScopeIfAbsent(w, { id: 'scope.team', metadata: {}, configuration: {} }, at('2026-03-01T10:00:03.000Z'));
    await tx.sessions.createIfAbsent(w, { id: 's1', metadata: { topic: 'x' }, configuration: { summary: { enabled: true } } }, at('2026-03-01T10:01:00.000Z', 7));
    await tx.sessions.createIfAbsent(w, { id: 's2', metadata: {}, configuration: {} }, at('2026-03-01T10:02:00.000Z'));
    await tx.sessions.saveMemberships(w, 's1', [
      { peerId: 'alice', configuration: { observe_me: true, observe_others: false }, joinedAt: at('2026-03-01T10:01:00.500Z', 1), leftAt: null },
      { peerId: 'bob', configuration: {}, joinedAt: at('2026-03-01T10:01:01.000Z'), leftAt: at('2026-03-01T11:00:00.000Z', 999) },
    ]);
    await tx.sessions.saveMemberships(w, 's2', [{ peerId: 'alice', configuration: {}, joinedAt: at('2026-03-01T10:02:00.000Z'), leftAt: null }]);
    const count = options.messages ?? 6;
    const messages = [];
    for (let i = 0; i < count; i++) {
      messages.push({
        id: `${w}-m${i}`,
        workspaceId: w,
        sessionId: i % 3 === 2 ? 's2' : 's1',
        peerId: i % 2 === 0 ? 'alice' : 'bob',
        content: i === 1 ? 'ünïcödé "quoted" \\ line\nbreak 🎉' : `message number ${i}`,
        metadata: i % 2 === 0 ? { z: i, a: 'first', m: { d: 1, c: 2 } } : {},
        tokenCount: 3 + i,
        createdAt: at(`2026-03-01T10:${String(3 + Math.floor(i / 1000) % 50).padStart(2, '0')}:00.000Z`, (i % 999) + 1),
      });
    }
    for (let start = 0; start < messages.length; start += 500) await tx.messages.insert(messages.slice(start, start + 500));
    const conclusion = (id: string, level: 'explicit' | 'deductive' | 'inductive' | 'contradiction', extra: Record<string, unknown> = {}) => ({
      id: `${w}-${id}`,
      workspaceId: w,
      observerId: 'alice',
      observedId: 'alice',
      sessionId: 's1',
      content: `conclusion ${id}`,
      level,
      sourceIds: [`${w}-m0`],
      timesDerived: 1,
      createdAt: at('2026-03-01T12:00:00.000Z', 3),
      ...extra,
    });
    const rows = [
      conclusion('c1', 'explicit'),
      conclusion('c2', 'deductive', { sourceIds: [`${w}-c1`], sourceSessionIds: ['s1', 's2'], metadata: { premises: ['p1', 'p2'], b: 1, a: 2 }, timesDerived: 3 }),
      conclusion('c3', 'inductive', { sessionId: null, sourceIds: null, observerId: 'bob' }),
      conclusion('c4', 'contradiction', { observedId: 'bob' }),
      conclusion('c5', 'explicit', { observerId: 'scope.team', copiedFrom: `${w}-c1` }),
      conclusion('gone', 'explicit'),
    ];
    await tx.memory.lockConclusionCounts(rows);
    await tx.memory.insertConclusions(rows);
    await tx.memory.softDeleteConclusion(w, `${w}-gone`, at('2026-03-01T12:30:00.000Z'));
    // a fact replaced by a newer one: kept in its history, carried by an export
    const lived = conclusion('c6', 'explicit', { content: 'alice lives in Lisbon', createdAt: at('2026-03-01T12:35:00.000Z', 6) });
    const moved = conclusion('c7', 'explicit', { content: 'alice moved to Porto', createdAt: at('2026-03-01T12:40:00.000Z', 7) });
    await tx.memory.lockConclusionCounts([lived, moved]);
    await tx.memory.insertConclusions([lived, moved]);
    await tx.memory.supersedeConclusions(w, [{ oldId: `${w}-c6`, newId: `${w}-c7` }], at('2026-03-01T12:40:00.000Z', 7));
    await tx.memory.savePeerCard(w, 'alice', 'alice', ['Name: Alice', 'Likes tea'], at('2026-03-01T13:00:00.000Z'));
    await tx.memory.savePeerCard(w, 'alice', 'bob', ['Bob is a friend'], at('2026-03-01T13:00:01.000Z'));
    await tx.memory.saveDreamState(w, 'alice', 'alice', { lastDreamAt: at('2026-03-01T14:00:00.000Z', 5), explicitAtLastDream: 4 });
    await tx.reasoning.saveSummary(w, 's1', { type: 'short', content: 'They talked.', messageId: `${w}-m1`, messageSeq: 2, tokenCount: 3, createdAt: at('2026-03-01T15:00:00.000Z') });
    await tx.reasoning.saveSummary(w, 's1', { type: 'long', content: 'They talked at length.', messageId: `${w}-m1`, messageSeq: 2, tokenCount: 5, createdAt: at('2026-03-01T15:00:01.000Z') });
    await tx.webhooks.insert({ id: `${w}-hook1`, workspaceId: w, url: 'https://example.com/hook', createdAt: at('2026-03-01T16:00:00.000Z') });
    await tx.v1.insertMetamessage({
      id: `${w}-mm1`,
      workspaceId: w,
      peerId: 'alice',
      appV1Id: '',
      userV1Id: '',
      label: 'thought',
      content: 'a v1 metamessage',
      sessionId: 's1',
      sessionV1Id: null,
      messageId: `${w}-m0`,
      metadata: { k: 'v' },
      createdAt: at('2026-03-01T17:00:00.000Z', 42),
    });
    await tx.v1.insertMetamessage({
      id: `${w}-mm2`,
      workspaceId: w,
      peerId: 'bob',
      appV1Id: '',
      userV1Id: '',
      label: 'note',
      content: 'unlinked',
      sessionId: null,
      sessionV1Id: null,
      messageId: null,
      metadata: {},
      createdAt: at('2026-03-01T17:00:01.000Z'),
    });
    await tx.sessions.deactivate(w, 's2');
  });
  // the v1 generation's own rows: an app (a workspace made through v1) and a user in it
  await store.transaction(async (tx) => {
    await tx.v1.insertApp(`${w}v1app`.slice(0, 21), `${w}-v1`, { v1: true }, at('2026-03-02T00:00:00.000Z'));
    await tx.v1.insertUser(`${w}-v1`, `${w}v1usr`.slice(0, 21), 'carol', { role: 'user' }, at('2026-03-02T00:00:01.000Z'));
    await tx.v1.insertSession(`${w}-v1`, `${w}-v1s`, { a: 1 }, {}, at('2026-03-02T00:00:02.000Z'));
  });
  if (options.vectors === true) {
    await store.transaction(async (tx) => {
      await tx.vectors.putConclusions([
        { conclusionId: `${w}-c1`, workspaceId: w, observerId: 'alice', observedId: 'alice', level: 'explicit', sessionId: 's1', vector: [0.1, -0.2, 0.3, 0.4] },
      ]);
      await tx.vectors.putMessageChunks([
        { messageId: `${w}-m0`, chunk: 0, workspaceId: w, sessionId: 's1', peerId: 'alice', vector: [1, 0.5, 0.25, 1e-7] },
        { messageId: `${w}-m0`, chunk: 1, workspaceId: w, sessionId: 's1', peerId: 'alice', vector: [0.3, 0.3, 0.3, 0.3] },
      ]);
    });
  }
}
