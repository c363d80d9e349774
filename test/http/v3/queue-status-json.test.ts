import { describe, expect, it } from 'vitest';
import type { QueueStatus, QueueStatusCounts } from '../../../src/domain/queue/queue-status.js';
import { queueStatusJson } from '../../../src/http/workspace-api/routes/queue.js';

/*
 * The queue status's JSON is written out as text (a workspace's answer can list thousands of
 * sessions); it must parse to what the contract's object would be (§7.9), whatever the session
 * ids hold. Through HTTP the same route is checked by test/domain/reasoning/queue-status.test.ts.
 */

const counts = (total: number, completed: number, inProgress: number, pending: number): QueueStatusCounts => ({ total, completed, inProgress, pending, failed: total - completed - inProgress - pending });

const wire = (c: QueueStatusCounts) => ({
  total_work_units: c.total,
  completed_work_units: c.completed,
  in_progress_work_units: c.inProgress,
  pending_work_units: c.pending,
});

describe('queue status JSON', () => {
  it('lists each session under its id, with ids that need escaping and keys objects treat apart', () => {
    const ids = ['plain', 'with "quotes"', 'back\\slash', 'line\nbreak', 'tab\t', 'ümlaut-日本', '\u0001control', '__proto__', '123', 'constructor', 'emoji 🧠', 'lone \ud800 surrogate'];
    const sessions = new Map(ids.map((id, i) => [id, counts(20 + i, i, 1, 9)]));
    const status: QueueStatus = { ...counts(99, 40, 3, 50), sessions };
    const text = queueStatusJson(status);
    const expected: Record<string, unknown> = { ...wire(status), sessions: {} };
    for (const [id, c] of sessions) Object.defineProperty(expected.sessions, id, { value: { session_id: id, ...wire(c) }, enumerable: true });
    const parsed = JSON.parse(text) as { sessions: Record<string, unknown> };
    expect(parsed).toEqual(expected);
    expect(Object.keys(parsed.sessions).sort()).toEqual([...ids].sort());
    // the failed work is part of the total, not a field of its own
    expect(text).not.toContain('failed');
  });

  it('answers null sessions when filtered by session or when no session has work', () => {
    expect(JSON.parse(queueStatusJson({ ...counts(2, 1, 0, 1), sessions: undefined }))).toEqual({ ...wire(counts(2, 1, 0, 1)), sessions: null });
    expect(JSON.parse(queueStatusJson({ ...counts(0, 0, 0, 0), sessions: new Map() }))).toEqual({ ...wire(counts(0, 0, 0, 0)), sessions: null });
  });
});
