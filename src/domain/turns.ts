/**
 * Turns at the event loop for work that holds it (docs/decisions/0017-searches-take-turns.md).
 *
 * Node.js runs the callbacks of every connection that has data in one pass of the event loop,
 * each to its end when its work does not wait. With many searches in flight (SQLite answers on
 * the event loop, a search takes milliseconds), the requests that arrive during a pass wait for
 * the whole of it and then for their place in the next, and some connections fall into the back
 * of every pass: with 16 in flight, 2 of them were answered half as often and a bare server
 * doing 2 to 6 ms of work per request had p99 twice its p50 (bench/README.md, "Searches in
 * turns"). Work run here starts in the order it asked, one at a time, and between one and the
 * next the loop polls once more, so what arrived meanwhile takes its place in the queue.
 */

/** What work in its turn may do. */
export interface Turn {
  /**
   * Lets the event loop go round (other requests run); past the turn's first QUANTUM_MS, the
   * work waiting also goes first, and this resumes when its turn comes again.
   */
  pause(): Promise<void>;
}

/**
 * How long a turn is held through its pauses before the work waiting goes first. A search of
 * ordinary messages ranks in a few milliseconds and runs to its end; one of very long texts
 * (hundreds of milliseconds) shares the loop with the searches behind it.
 */
export const QUANTUM_MS = 25;

export interface Turns {
  /** Runs `work` in its turn: after the work that asked before it, and alone until it ends or pauses. */
  run<T>(work: (turn: Turn) => Promise<T>): Promise<T>;
}

/** One queue per event loop: the first work runs at once, the rest in the order they asked. */
export class EventLoopTurns implements Turns {
  private readonly waiting: (() => void)[] = [];
  /** A turn is held, or handed over at the loop's next check phase. */
  private busy = false;
  /** When the turn held was taken (performance.now()). */
  private heldSince = 0;
  private readonly turn: Turn = { pause: () => this.pause() };
  private taken = 0;
  private waitedMs = 0;

  async run<T>(work: (turn: Turn) => Promise<T>): Promise<T> {
    const asked = performance.now();
    await this.take();
    this.taken++;
    this.waitedMs += performance.now() - asked;
    try {
      return await work(this.turn);
    } finally {
      this.release();
    }
  }

  /** Turns taken so far, and the time their work waited for them (the metrics). */
  get waits(): { turns: number; waitedMs: number } {
    return { turns: this.taken, waitedMs: this.waitedMs };
  }

  /** Work waiting for its turn (the one running not counted). */
  get queued(): number {
    return this.waiting.length;
  }

  private take(): Promise<void> {
    if (!this.busy) {
      this.busy = true;
      this.heldSince = performance.now();
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private async pause(): Promise<void> {
    if (performance.now() - this.heldSince < QUANTUM_MS) {
      // the turn kept: the loop polls, other searches still wait
      await new Promise((resolve) => setImmediate(resolve));
      return;
    }
    const resumed = new Promise<void>((resolve) => this.waiting.push(resolve));
    this.release();
    await resumed;
  }

  /**
   * The next turn starts in a check phase (setImmediate): a release in a poll pass hands over
   * after the rest of that pass has queued its work, a release in a check phase after the next
   * poll.
   */
  private release(): void {
    setImmediate(this.handOver);
  }

  private readonly handOver = (): void => {
    const next = this.waiting.shift();
    if (next === undefined) {
      this.busy = false;
      return;
    }
    this.heldSince = performance.now();
    next();
  };
}

/** Work that waits on the network between its steps (PostgreSQL) does not hold the loop: it runs at once. */
export const immediateTurns: Turns = {
  run: (work) => work({ pause: () => new Promise((resolve) => setImmediate(resolve)) }),
};

/** The turns of this thread's event loop. */
export const eventLoopTurns = new EventLoopTurns();
