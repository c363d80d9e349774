import { stat } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { EventLoopTurns, immediateTurns, QUANTUM_MS } from '../../src/domain/turns.js';

/** Resolves after `n` passes of the event loop's check phase. */
async function loopPasses(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** A promise and what settles it. */
function gate(): { opened: Promise<void>; open(): void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

function busyFor(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

describe('event-loop turns', () => {
  it('run work in the order it asked, one at a time', async () => {
    const turns = new EventLoopTurns();
    const events: string[] = [];
    const first = gate();
    const runs = [
      turns.run(async () => {
        events.push('a starts');
        await first.opened;
        events.push('a ends');
      }),
      ...['b', 'c'].map((name) =>
        turns.run(async () => {
          events.push(`${name} starts`);
          await loopPasses(2);
          events.push(`${name} ends`);
        }),
      ),
    ];
    await loopPasses(5);
    expect(events).toEqual(['a starts']);
    expect(turns.queued).toBe(2);
    first.open();
    await Promise.all(runs);
    expect(events).toEqual(['a starts', 'a ends', 'b starts', 'b ends', 'c starts', 'c ends']);
    expect(turns.queued).toBe(0);
  });

  it('start the next turn only after the loop has polled: I/O done meanwhile comes first', async () => {
    const turns = new EventLoopTurns();
    const events: string[] = [];
    // from a check phase, as a turn handed over runs
    await loopPasses(1);
    const one = turns.run(async () => {
      // done on the thread pool while this works; its callback waits for the loop's poll
      stat(fileURLToPath(import.meta.url), () => events.push('I/O done'));
      busyFor(30);
      events.push('one');
    });
    const two = turns.run(async () => void events.push('two'));
    await Promise.all([one, two]);
    expect(events).toEqual(['one', 'I/O done', 'two']);
  });

  it('keep the turn through pauses for QUANTUM_MS, then let the waiting work go first', async () => {
    const turns = new EventLoopTurns();
    const events: string[] = [];
    const long = turns.run(async (turn) => {
      events.push('long starts');
      await turn.pause();
      events.push('long after an early pause');
      busyFor(QUANTUM_MS + 5);
      await turn.pause();
      events.push('long resumes');
    });
    const short = turns.run(async () => void events.push('short'));
    await Promise.all([long, short]);
    expect(events).toEqual(['long starts', 'long after an early pause', 'short', 'long resumes']);
  });

  it('hand the turn on when the work fails', async () => {
    const turns = new EventLoopTurns();
    const failed = turns.run(async () => {
      throw new Error('broken');
    });
    const next = turns.run(async () => 'ran');
    await expect(failed).rejects.toThrow('broken');
    await expect(next).resolves.toBe('ran');
  });

  it('immediateTurns runs work at once, beside work under way', async () => {
    const first = gate();
    const events: string[] = [];
    const held = immediateTurns.run(async () => {
      events.push('a starts');
      await first.opened;
    });
    await immediateTurns.run(async () => void events.push('b'));
    expect(events).toEqual(['a starts', 'b']);
    first.open();
    await held;
  });
});
