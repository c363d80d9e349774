import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqlReasoningStore } from '../../src/storage/sql/reasoning-store.js';
import type { MessageRecord, NewRepresentationItem, RepresentationCounts, RepresentationScope } from '../../src/storage/store.js';
import { openFreshDatabase } from '../support/fresh-database.js';
import { planLines, recordingExecutor } from '../support/recording-executor.js';
import { DIALECT } from '../support/test-app.js';

/*
 * Queue status filtered by peer: the store reads the work units whose observed peer is the
 * sender or observer asked for, and for an observer those of the sessions it is or was a member
 * of (migration 0033), instead of every unit of the workspace kept in JavaScript. The answer must
 * be the fixture's units kept by the rule (observed peer = sender, or observer among the unit's
 * observers) and added up per session, whatever the memberships: a peer that left a session, a
 * sender that is no member, units both finished (counters) and open.
 */

const PEERS = ['a', 'b', 'c', 'd', 'e'];

/** The units of a session, each: observed peer, its observers, items finished, items open. */
const UNITS: Record<string, [observed: string, observers: string[], finished: number, open: number][]> = {
  s1: [
    ['a', ['a', 'b'], 2, 1],
    ['b', ['b'], 1, 0],
  ],
  s2: [
    ['c', ['c', 'b'], 0, 2],
    ['b', ['b', 'c'], 3, 0],
  ],
  s3: [
    ['a', ['a'], 1, 1],
    ['c', ['c', 'a'], 2, 2],
  ],
  // d sends here without being a member
  s4: [['d', ['d'], 1, 1]],
};
/** Memberships: b has left s1; nobody is a member of s4; e of none. */
const MEMBERS: Record<string, [peer: string, left: boolean][]> = {
  s1: [
    ['a', false],
    ['b', true],
  ],
  s2: [
    ['b', false],
    ['c', false],
  ],
  s3: [
    ['a', false],
    ['c', false],
  ],
  s4: [],
};

const key = (row: RepresentationCounts) => JSON.stringify([row.sessionId, row.completed, row.failed, row.inProgress, row.pending]);

/** What the store must answer for `scope` in workspace w: the fixture's units the rule keeps, per session (finished items completed, open ones pending). */
function expectedCounts(scope: RepresentationScope): RepresentationCounts[] {
  const bySession = new Map<string, RepresentationCounts>();
  const byPeer = scope.observerId !== undefined || scope.senderId !== undefined;
  for (const [sessionId, units] of Object.entries(UNITS)) {
    if (scope.sessionId !== undefined && sessionId !== scope.sessionId) continue;
    for (const [observedId, observers, finished, open] of units) {
      if (byPeer && observedId !== scope.senderId && (scope.observerId === undefined || !observers.includes(scope.observerId))) continue;
      const counts = bySession.get(sessionId) ?? { sessionId, completed: 0, failed: 0, inProgress: 0, pending: 0 };
      counts.completed += finished;
      counts.pending += open;
      bySession.set(sessionId, counts);
    }
  }
  return [...bySession.values()];
}

describe(`a peer's representation work (${DIALECT})`, () => {
  let database: Awaited<ReturnType<typeof openFreshDatabase>>;
  const now = new Date(Date.UTC(2026, 0, 2));
  const since = new Date(Date.UTC(2026, 0, 1));

  beforeAll(async () => {
    database = await openFreshDatabase();
    const { store } = database;
    const at = new Date(Date.UTC(2026, 0, 1, 12));
    await store.workspaces.createIfAbsent({ id: 'w', metadata: {}, configuration: {} }, at);
    await store.workspaces.createIfAbsent({ id: 'other', metadata: {}, configuration: {} }, at);
    let n = 0;
    for (const ws of ['w', 'other']) {
      await store.transaction(async (tx) => {
        await tx.peers.ensure(ws, PEERS, at);
        for (const [sessionId, units] of Object.entries(UNITS)) {
          await tx.sessions.createIfAbsent(ws, { id: sessionId, metadata: {}, configuration: {} }, at);
          await tx.sessions.saveMemberships(ws, sessionId, MEMBERS[sessionId].map(([peerId, left]) => ({ peerId, configuration: {}, joinedAt: at, leftAt: left ? at : null })));
          for (const [observedId, observers, finished, open] of units) {
            const messages: MessageRecord[] = Array.from({ length: finished + open }, () => ({
              id: `m${++n}`,
              workspaceId: ws,
              sessionId,
              peerId: observedId,
              content: 'hello',
              metadata: {},
              tokenCount: 1,
              createdAt: at,
            }));
            await tx.messages.insert(messages);
            const items: NewRepresentationItem[] = messages.map((m) => ({ workspaceId: ws, sessionId, observedId, messageId: m.id, tokens: 1, observers, customInstructions: null }));
            await tx.reasoning.addRepresentationItems(items, at);
            if (finished > 0) await tx.reasoning.markItems(await tx.reasoning.openItems(ws, sessionId, observedId, finished), at, null);
          }
        }
      });
    }
  });
  afterAll(() => database.close());

  it('is the workspace\'s work kept by the filter\'s rule, for every observer, sender and session', async () => {
    const store = new SqlReasoningStore(database.driver);
    const scopes: RepresentationScope[] = [];
    for (const session of [undefined, 's1', 's2', 's4']) {
      for (const observer of [undefined, ...PEERS]) {
        for (const sender of [undefined, ...PEERS]) scopes.push({ sessionId: session, observerId: observer, senderId: sender });
      }
    }
    let nonEmpty = 0;
    // an observer's sessions looked up one by one, then (counted as a member of very many) the
    // workspace's units walked
    for (const many of [false, true]) {
      if (many) await database.driver.run("UPDATE peers SET session_count = session_count + 100000 WHERE workspace_id = 'w'");
      for (const scope of scopes) {
        const expected = expectedCounts(scope);
        const found = await store.representationCounts('w', scope, now, since);
        expect(found.map(key).sort(), `${JSON.stringify(scope)}, many: ${many}`).toEqual(expected.map(key).sort());
        if (expected.length > 0 && !many) nonEmpty++;
      }
      if (many) await database.driver.run("UPDATE peers SET session_count = session_count - 100000 WHERE workspace_id = 'w'");
    }
    // the fixture holds work for most of the scopes
    expect(nonEmpty).toBeGreaterThan(scopes.length / 2);
    // b observes s1's a though it has left (2 finished, 1 open) and its own b (1, 0), and s2's c
    // (0, 2) and b (3, 0); a observes s3's c
    const b = await store.representationCounts('w', { observerId: 'b' }, now, since);
    expect(b.map((row) => `${row.sessionId}:${row.completed}/${row.pending}`).sort()).toEqual(['s1:3/1', 's2:3/2']);
    // the workspace's, every unit of w (not of the other workspace) per session
    expect((await store.representationCounts('w', {}, now, since)).map((row) => `${row.sessionId}:${row.completed}/${row.pending}`).sort()).toEqual(['s1:3/1', 's2:3/2', 's3:3/3', 's4:1/1']);
    expect((await store.representationCounts('w', { observerId: 'e', senderId: 'e' }, now, since)).length).toBe(0);
  });

  it.runIf(DIALECT === 'sqlite')('reads the peer\'s units through the observed peer\'s and the sessions\' indexes, not the workspace\'s', async () => {
    const { executor, issued } = recordingExecutor(database.driver);
    const store = new SqlReasoningStore(executor);
    for (const scope of [{ observerId: 'a' }, { senderId: 'c' }, { observerId: 'a', senderId: 'c' }]) {
      issued.length = 0;
      await store.representationCounts('w', scope, now, since);
      // the observer's session count read first, then the counts
      const counts = issued.filter((statement) => statement.sql.includes('representation_counters'));
      expect(counts).toHaveLength(1);
      const plan = await planLines(database.driver, counts[0]);
      const reads = plan.filter((line) => /^(SCAN|SEARCH) t\b/.test(line));
      const expected = [
        'SEARCH t USING INDEX representation_counters_observed (workspace_id=? AND observed_id=? AND hour>?)',
        'SEARCH t USING INDEX representation_items_open_observed (workspace_id=? AND observed_id=?)',
      ];
      if (scope.observerId !== undefined) {
        expected.push(
          'SEARCH t USING INDEX representation_counters_session (workspace_id=? AND session_id=? AND hour>?)',
          'SEARCH t USING INDEX representation_items_open (workspace_id=? AND session_id=?)',
        );
      }
      expect(reads.sort(), JSON.stringify(scope)).toEqual(expected.sort());
    }
  });
});
