import { describe, expect, it } from 'vitest';
import { CompletionWriter } from '../../src/jobs/completions.js';

/** A store whose writes finish when the test lets them, recording each statement's ids. */
function heldStore() {
  const writes: { ids: string[]; finish: (error?: Error) => void }[] = [];
  return {
    writes,
    jobs: {
      completeMany: (ids: readonly string[]) =>
        new Promise<void>((resolve, reject) => writes.push({ ids: [...ids], finish: (error) => (error === undefined ? resolve() : reject(error)) })),
    },
  };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('the worker’s completions', () => {
  it('writes one at once, and the ones that come while it is written in the next statement', async () => {
    const { writes, jobs } = heldStore();
    const writer = new CompletionWriter(jobs, () => new Date());
    const settled: string[] = [];
    const first = writer.complete('a').then(() => settled.push('a'));
    await tick();
    expect(writes.map((w) => w.ids)).toEqual([['a']]);
    const rest = ['b', 'c', 'd'].map((id) => writer.complete(id).then(() => settled.push(id)));
    await tick();
    // held until the first is written
    expect(writes).toHaveLength(1);
    writes[0].finish();
    await first;
    await tick();
    expect(writes.map((w) => w.ids)).toEqual([['a'], ['b', 'c', 'd']]);
    expect(settled).toEqual(['a']);
    writes[1].finish();
    await Promise.all(rest);
    expect(settled).toEqual(['a', 'b', 'c', 'd']);
  });

  it('lets completions written aside wait for others, and one that a run waits for takes them along', async () => {
    const { writes, jobs } = heldStore();
    const writer = new CompletionWriter(jobs, () => new Date(), 60_000);
    const asides = [writer.complete('x', true), writer.complete('y', true)];
    await tick();
    expect(writes).toEqual([]);
    const awaited = writer.complete('z');
    await tick();
    expect(writes.map((w) => w.ids)).toEqual([['x', 'y', 'z']]);
    writes[0].finish();
    await Promise.all([...asides, awaited]);

    // alone, an aside is written after its linger
    const quick = new CompletionWriter(jobs, () => new Date(), 5);
    const alone = quick.complete('w', true);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(writes.map((w) => w.ids)).toEqual([['x', 'y', 'z'], ['w']]);
    writes[1].finish();
    await alone;
  });

  it('fails the completions of a statement that failed, and goes on with the next', async () => {
    const { writes, jobs } = heldStore();
    const writer = new CompletionWriter(jobs, () => new Date());
    const first = writer.complete('a');
    await tick();
    const second = writer.complete('b');
    writes[0].finish(new Error('store down'));
    await expect(first).rejects.toThrow('store down');
    await tick();
    expect(writes.map((w) => w.ids)).toEqual([['a'], ['b']]);
    writes[1].finish();
    await expect(second).resolves.toBeUndefined();
  });
});
