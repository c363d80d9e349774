import type { JobStore } from '../storage/store.js';

/** Most completions in one statement. */
const MOST = 64;

interface Waiting {
  id: string;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * The worker's completions of jobs that ended well, written together (JobStore.completeMany):
 * a completion is written at once when none is being written, else with the others that came
 * meanwhile in the next statement; one written aside (no run waits for it: an ordered queue's
 * next job already runs under its chain's lease) waits up to `lingerMs` for others first. Under
 * load the deliveries of a webhook endpoint end a few milliseconds apart, each a statement and a
 * commit of its own before; a crash loses at most the completions not written yet, and their
 * jobs run again (delivery is at least once).
 */
export class CompletionWriter {
  private waiting: Waiting[] = [];
  private writing = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly jobs: Pick<JobStore, 'completeMany'>,
    private readonly now: () => Date,
    private readonly lingerMs = 10,
  ) {}

  /** Completes job `id`; settles once the statement that completes it has. */
  complete(id: string, aside = false): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ id, resolve, reject });
      // a write under way takes it with the next statement
      if (this.writing) return;
      if (aside && this.waiting.length < MOST) {
        this.timer ??= setTimeout(() => void this.write(), this.lingerMs);
        return;
      }
      void this.write();
    });
  }

  private async write(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.writing) return;
    this.writing = true;
    try {
      while (this.waiting.length > 0) {
        const batch = this.waiting.splice(0, MOST);
        try {
          await this.jobs.completeMany(batch.map((waiting) => waiting.id), this.now());
          for (const waiting of batch) waiting.resolve();
        } catch (error) {
          for (const waiting of batch) waiting.reject(error);
        }
      }
    } finally {
      this.writing = false;
    }
  }
}
