import { describe, expect, it } from 'vitest';
import { reasoningRuntime } from '../../../src/runtime/runtime.js';
import { createDomainContext } from '../../../src/domain/context.js';
import { processRepresentationUnit, type RepresentOutcome } from '../../../src/domain/reasoning/deriver.js';
import { buildModels } from '../../../src/llm/models.js';
import type { Store } from '../../../src/storage/store.js';
import { drainWorkspace, facts, type ReasoningSetup, reasoningSuite } from '../../support/reasoning-harness.js';
import { DIALECT } from '../../support/test-app.js';

/*
 * Background work beside the requests that write the same session (docs/decisions/0019-background-writers.md). On PostgreSQL a deriver batch is
 * held open in the middle of its write transaction while the session's writers run: none of them
 * may wait for it, as PostgreSQL's own lock table tells (pg_blocking_pids), not a clock. Then a
 * randomized mix of requests runs while the worker derives, summarizes, dreams and embeds: no
 * deadlock (the driver counts every one it ran again) and no failed request, on either store.
 */

const suite = reasoningSuite();
const apps = suite.apps;

const LIMITS = { sessionObservers: 10, webhookEndpoints: 10, jobMaxAttempts: 2 };

/** Where a paused transaction stops: before or after a call of the transaction's store, named `area.method`. */
type PausePoint = { before: string } | { after: string };

/**
 * `store`, whose transactions stop at `point` until `gate` settles; `paused` settles when one has
 * stopped there (with the transaction open and every lock it took so far held).
 */
function pausingStore(store: Store, point: PausePoint, gate: Promise<void>): { store: Store; paused: Promise<void> } {
  let reached!: () => void;
  const paused = new Promise<void>((resolve) => (reached = resolve));
  const name = 'before' in point ? point.before : point.after;
  const [areaName, methodName] = name.split('.');
  const wrapTx = (tx: Store): Store =>
    new Proxy(tx, {
      get(target, property, receiver) {
        const value: unknown = Reflect.get(target, property, receiver);
        if (property !== areaName || typeof value !== 'object' || value === null) return value;
        return new Proxy(value, {
          get(area, key, areaReceiver) {
            const member: unknown = Reflect.get(area, key, areaReceiver);
            if (key !== methodName || typeof member !== 'function') return member;
            return async (...args: unknown[]) => {
              if ('before' in point) {
                reached();
                await gate;
              }
              const result: unknown = await (member as (...a: unknown[]) => Promise<unknown>).apply(area, args);
              if ('after' in point) {
                reached();
                await gate;
              }
              return result;
            };
          },
        });
      },
    });
  const wrapped = new Proxy(store, {
    get(target, property, receiver) {
      if (property === 'transaction') return <T>(fn: (tx: Store) => Promise<T>) => target.transaction((tx) => fn(wrapTx(tx)));
      return Reflect.get(target, property, receiver);
    },
  });
  return { store: wrapped, paused };
}

interface Blocked {
  pid: number;
  query: string;
}

describe.runIf(DIALECT === 'postgres')('a deriver batch held open mid-transaction (PostgreSQL)', () => {
  /**
   * Session s1 (alice, and bob who observes others) with two messages from alice queued; runs
   * alice's unit with its write transaction stopped at `point`, sends `writes` meanwhile and
   * returns which of them waited for the stopped transaction (from pg_blocking_pids, polled while
   * they run; a write that waits is let through by opening the gate, so the test ends either way)
   * and their statuses, and the batch's outcome once let go.
   */
  async function whileHeld(
    s: ReasoningSetup,
    point: PausePoint,
    writes: (ws: string) => Promise<{ status: number; text: string }>[],
    prepare: (ws: string) => Promise<void> = async () => undefined,
  ) {
    const { api, ws } = s;
    suite.fake().script.defaultChat(facts('alice drinks tea', 'alice has a cat'));
    expect((await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's1', peers: { alice: {}, bob: { observe_others: true } } })).status).toBe(201);
    const first = await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'I drink tea' }, { peer_id: 'alice', content: 'my cat sleeps' }] });
    expect(first.status, first.text).toBe(201);
    await prepare(ws);

    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const held = pausingStore(api.database.store, point, gate);
    const ctx = createDomainContext(held.store, LIMITS, undefined, reasoningRuntime(api.config, buildModels(api.config.models)));
    const batch: Promise<RepresentOutcome> = processRepresentationUnit(ctx, { workspaceId: ws, sessionId: 's1', observedId: 'alice' }, { isLastAttempt: false });
    batch.catch(() => open());
    await held.paused;

    // the stopped transaction is the only one open in this test's database
    const idle = await api.database.driver.all<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle in transaction'");
    expect(idle).toHaveLength(1);
    const deriverPid = Number(idle[0].pid);

    const blocked = new Map<number, Blocked>();
    let running = true;
    const watch = (async () => {
      while (running) {
        const rows = await api.database.driver.all<{ pid: number; query: string }>(
          'SELECT pid, query FROM pg_stat_activity WHERE datname = current_database() AND ? = ANY (pg_blocking_pids(pid))',
          [deriverPid],
        );
        for (const row of rows) blocked.set(Number(row.pid), { pid: Number(row.pid), query: row.query.replace(/\s+/g, ' ').slice(0, 160) });
        // a write waiting on the batch would wait for ever: let the batch go, the test fails below
        if (rows.length > 0) open();
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    })();
    const responses = await Promise.all(writes(ws));
    running = false;
    await watch;
    open();
    const outcome = await batch;
    return { blocked: [...blocked.values()], statuses: responses.map((r) => r.status), texts: responses.map((r) => r.text), outcome };
  }

  /** The session's writes a request can make: messages into the batch's unit and the other, the session's metadata, a new member, a member's metadata. */
  const sessionWrites = (api: ReasoningSetup['api']) => (ws: string) => [
    api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'I moved to Porto' }] }),
    api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'bob', content: 'welcome to Porto' }] }),
    api.put(`/v3/workspaces/${ws}/sessions/s1`, { metadata: { topic: 'moving' } }),
    api.post(`/v3/workspaces/${ws}/sessions/s1/peers`, { carol: {} }),
    api.put(`/v3/workspaces/${ws}/peers/alice`, { metadata: { city: 'Porto' } }),
  ];

  it('right after it closed its items: the session takes messages, metadata and members without waiting', async () => {
    const s = await apps.start();
    const { blocked, statuses, texts, outcome } = await whileHeld(s, { after: 'reasoning.markItems' }, sessionWrites(s.api));
    expect(blocked).toEqual([]);
    expect(statuses, texts.join('\n')).toEqual([201, 201, 200, 200, 200]);
    expect(outcome).toMatchObject({ kind: 'done', items: 2 });
    // the batch stored its facts for both observers; the messages written meanwhile wait for the next batch
    const stored = await s.api.database.driver.all<{ observer_id: string }>('SELECT observer_id FROM conclusions WHERE workspace_id = ? ORDER BY observer_id', [s.ws]);
    expect(stored.map((row) => row.observer_id)).toEqual(['alice', 'alice', 'bob', 'bob']);
    expect(await s.api.database.store.reasoning.openItemCount(s.ws, 's1')).toBeGreaterThan(0);
  });

  it('with its conclusions written, before its job rows: still no write to the session waits', async () => {
    const s = await apps.start();
    const { blocked, statuses, texts, outcome } = await whileHeld(s, { before: 'reasoning.openUnitTotals' }, sessionWrites(s.api));
    expect(blocked).toEqual([]);
    expect(statuses, texts.join('\n')).toEqual([201, 201, 200, 200, 200]);
    expect(outcome).toMatchObject({ kind: 'done', conclusions: 4, items: 2 });
    // the message into alice's unit meanwhile went to the next batch (the same facts: reinforced)
    expect(await s.api.database.store.reasoning.openItemCount(s.ws, 's1')).toBeGreaterThan(0);
    await drainWorkspace(s);
    const stored = await s.api.database.driver.all<{ n: number | string }>('SELECT sum(times_derived) AS n FROM conclusions WHERE workspace_id = ? AND observed_id = ?', [s.ws, 'alice']);
    expect(Number(stored[0].n)).toBeGreaterThan(4);
  });

  it('what does wait, and is seen waiting: a conclusion written into a collection the batch is storing into', async () => {
    // the collection's counts are held from the batch's first conclusion to its commit, which
    // keeps deduplication one writer at a time; the watch must see that wait
    const s = await apps.start();
    const { blocked, statuses } = await whileHeld(s, { before: 'reasoning.openUnitTotals' }, (ws) => [
      s.api.post(`/v3/workspaces/${ws}/conclusions`, { conclusions: [{ content: 'alice likes maps', observer_id: 'bob', observed_id: 'alice', session_id: 's1' }] }),
    ]);
    expect(blocked.map((b) => b.query)).toEqual([expect.stringContaining('conclusion_counts')]);
    expect(statuses).toEqual([201]);
  });

  it('a conclusion deleted while the batch about to reinforce it holds its collection: the delete waits, no deadlock', async () => {
    // the delete takes the collection's count row before the conclusion's row, as the batch does;
    // the other way round the two held what the other waited for until PostgreSQL ended one
    const s = await apps.start();
    let target = '';
    const deadlocksBefore = await deadlocks(s.api);
    const { blocked, statuses, texts, outcome } = await whileHeld(
      s,
      { after: 'memory.lockConclusionCounts' },
      (ws) => [s.api.delete(`/v3/workspaces/${ws}/conclusions/${target}`)],
      async (ws) => {
        const made = await s.api.post(`/v3/workspaces/${ws}/conclusions`, { conclusions: [{ content: 'alice drinks tea', observer_id: 'bob', observed_id: 'alice', session_id: 's1' }] });
        expect(made.status, made.text).toBe(201);
        target = (made.body as { id: string }[])[0].id;
      },
    );
    expect(blocked.map((b) => b.query)).toEqual([expect.stringContaining('INSERT INTO conclusion_counts')]);
    expect(statuses[0], texts[0]).toBeLessThan(300);
    // the batch reinforced it before the delete went ahead
    expect(outcome).toMatchObject({ kind: 'done', reinforced: 1 });
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect((await deadlocks(s.api)) - deadlocksBefore).toBe(0);
    expect(s.api.database.driver.conflicts.retried).toBe(0);
  });

  it('a session delete and its purge wait for the batch, which then stores nothing into the purged session', async () => {
    const s = await apps.start();
    const { statuses, outcome } = await whileHeld(s, { after: 'reasoning.markItems' }, (ws) => [s.api.delete(`/v3/workspaces/${ws}/sessions/s1`)]);
    expect(statuses).toEqual([202]);
    expect(outcome.kind).toBe('done');
    await drainWorkspace(s, { allJobs: true });
    const left = await s.api.database.driver.all<{ n: number | string }>(
      'SELECT (SELECT count(*) FROM conclusions WHERE workspace_id = ?) + (SELECT count(*) FROM sessions WHERE workspace_id = ?) AS n',
      [s.ws, s.ws],
    );
    expect(Number(left[0].n)).toBe(0);
  });
});

/** Deadlocks PostgreSQL detected in the app's database so far (0 on SQLite, whose writers take turns). */
async function deadlocks(api: ReasoningSetup['api']): Promise<number> {
  if (DIALECT !== 'postgres') return 0;
  const row = await api.database.driver.get<{ n: number | string }>('SELECT deadlocks AS n FROM pg_stat_database WHERE datname = current_database()');
  return Number(row?.n ?? 0);
}

/** A small seeded generator (mulberry32), so a failing mix can be run again. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('a randomized mix of requests beside the background work', () => {
  it('no deadlock, no failed request, and the work drains', async () => {
    const seed = Number(process.env.MIX_SEED ?? 48);
    const next = random(seed);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)];
    const s = await apps.start({
      DERIVER_FLUSH_ENABLED: 'true',
      DREAM_DOCUMENT_THRESHOLD: '2',
      DREAM_IDLE_TIMEOUT_MINUTES: '0',
      DREAM_MIN_HOURS_BETWEEN_DREAMS: '0',
      SUMMARY_MESSAGES_PER_SHORT_SUMMARY: '10',
      SUMMARY_MESSAGES_PER_LONG_SUMMARY: '20',
      EMBED_MESSAGES: 'true',
      DERIVER_DEDUPLICATE: 'true',
    });
    const { api, ws, worker } = s;
    suite.fake().script.defaultChat(facts('the peer plans a trip', 'the peer keeps a garden'));
    const peers = ['ana', 'ben', 'cy', 'dee'];
    const sessions = ['s0', 's1', 's2', 's3'];
    for (const id of sessions) {
      const made = await api.post(`/v3/workspaces/${ws}/sessions`, { id, peers: { ana: { observe_others: true }, ben: { observe_others: true }, cy: {} } });
      expect(made.status, made.text).toBe(201);
    }
    const before = { ...api.database.driver.conflicts };
    const deadlocksBefore = await deadlocks(api);
    worker.start();

    const conclusionIds: string[] = [];
    const failures: string[] = [];
    const operations = 240;
    let sent = 0;
    const one = async (): Promise<void> => {
      const roll = next();
      const session = pick(sessions);
      const w = `/v3/workspaces/${ws}`;
      let response;
      if (roll < 0.4) {
        const count = 1 + Math.floor(next() * 4);
        response = await api.post(`${w}/sessions/${session}/messages`, {
          messages: Array.from({ length: count }, (_, i) => ({ peer_id: pick(peers.slice(0, 3)), content: `note ${sent}.${i} about ${pick(['tea', 'maps', 'trains', 'roses'])}` })),
        });
      } else if (roll < 0.5) {
        response = await api.put(`${w}/sessions/${session}`, { metadata: { n: sent } });
      } else if (roll < 0.58) {
        response = await api.post(`${w}/sessions/${session}/peers`, { [pick(peers)]: {} });
      } else if (roll < 0.63) {
        response = await api.delete(`${w}/sessions/${session}/peers`, ['dee']);
      } else if (roll < 0.73) {
        const observer = pick(peers.slice(0, 2));
        response = await api.post(`${w}/conclusions`, { conclusions: [{ content: `a fact ${sent % 7}`, observer_id: observer, observed_id: pick(peers.slice(0, 3)), session_id: session }] });
        if (response.status === 201) conclusionIds.push(...(response.body as { id: string }[]).map((c) => c.id));
      } else if (roll < 0.78 && conclusionIds.length > 0) {
        response = await api.delete(`${w}/conclusions/${conclusionIds.splice(Math.floor(next() * conclusionIds.length), 1)[0]}`);
      } else if (roll < 0.86) {
        response = await api.put(`${w}/peers/${pick(peers)}`, { metadata: { n: sent } });
      } else if (roll < 0.9) {
        // a session deleted (its purge queued) and, by the next message, created again
        response = await api.delete(`${w}/sessions/${session}`);
      } else {
        response = await api.post(`${w}/sessions/${session}/messages/list?size=20`, {});
      }
      // a message into a session deleted a moment ago is a 404; anything else is a failure
      if (response.status >= 500 || (response.status >= 400 && response.status !== 404)) failures.push(`${response.status} ${response.text.slice(0, 200)}`);
    };
    const lanes = Array.from({ length: 8 }, async () => {
      while (sent < operations) {
        sent++;
        await one();
      }
    });
    await Promise.all(lanes);
    await drainWorkspace(s, { allJobs: true, timeoutMs: 60_000 });

    expect(failures, `seed ${seed}`).toEqual([]);
    // PostgreSQL's own count of the deadlocks it ended in this database (a backend reports it
    // within about a second of going idle); the driver ran such work again, and also work whose
    // session a purge removed meanwhile (then a 404, or the session made anew)
    const retried = api.database.driver.conflicts.retried - before.retried;
    if (DIALECT === 'postgres') {
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect((await deadlocks(api)) - deadlocksBefore, `seed ${seed}, ${retried} runs again`).toBe(0);
    }
    expect(api.database.driver.conflicts.failed - before.failed, `seed ${seed}`).toBe(0);
    const dead = await api.database.driver.all<{ kind: string; last_error: string | null }>("SELECT kind, last_error FROM jobs WHERE workspace_id = ? AND status = 'dead'", [ws]);
    expect(dead, `seed ${seed}`).toEqual([]);
    // the background work ran beside the requests: batches derived, messages embedded
    const done = await api.database.driver.all<{ kind: string; n: number | string }>("SELECT kind, count(*) AS n FROM jobs WHERE workspace_id = ? AND status = 'done' GROUP BY kind", [ws]);
    const doneOf = (kind: string) => Number(done.find((row) => row.kind === kind)?.n ?? 0);
    expect(doneOf('reasoning.represent'), JSON.stringify(done)).toBeGreaterThan(0);
    expect(doneOf('reasoning.embed_messages'), JSON.stringify(done)).toBeGreaterThan(0);
  }, 120_000);
});
