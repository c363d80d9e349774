import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** Resolves a package the way this module's file does, for a thread's code to `require`. */
export const resolvePackage = (name: string): string => createRequire(import.meta.url).resolve(name);

/**
 * A thread of the SQLite driver (the checkpoint thread, the read thread): its code is CommonJS run
 * from text (`eval`), since a file of its own would have to be found as TypeScript under tsx and
 * vitest and as JavaScript once built. It starts when first needed, never keeps the process
 * alive by itself, and fails once: an error, an exit that was not asked for, or a start that
 * throws tells `onFailure` a sentence naming the thread, counts in `counts.failed`, stops the
 * thread and gives back what waits for it (`giveBack`); from then on `usable` is false.
 */
export abstract class HelperThread<Message> {
  private thread: Worker | undefined;
  private hasFailed = false;
  private closing = false;
  /** What the thread ran, and whether it failed. */
  readonly counts = { done: 0, failed: 0 };

  constructor(
    /** The thread's name in failure messages: "the <name> failed: ...". */
    private readonly name: string,
    private readonly onFailure: (message: string) => void,
  ) {}

  /** Whether work can be sent: the thread has not failed and is not closing. */
  get usable(): boolean {
    return !this.hasFailed && !this.closing;
  }

  /** The running thread (started now if it is not yet); undefined if it could not start. */
  protected started(code: string, workerData: () => unknown): Worker | undefined {
    if (this.thread !== undefined) return this.thread;
    try {
      const thread = new Worker(code, { eval: true, workerData: workerData() });
      thread.unref();
      thread.on('message', (message: Message) => this.answered(message));
      thread.on('error', (error) => this.fail(`the ${this.name} failed: ${error.message}`));
      thread.on('exit', (exitCode) => {
        if (!this.closing) this.fail(`the ${this.name} exited (code ${exitCode})`);
      });
      this.thread = thread;
      return thread;
    } catch (error) {
      this.fail(`the ${this.name} could not be started: ${error instanceof Error ? error.message : String(error)}`);
      return undefined;
    }
  }

  /** A message from the thread. */
  protected abstract answered(message: Message): void;

  /** Called once when the thread has failed (`reason`) or is closing: what waits for it is given back. */
  protected abstract giveBack(reason: string): void;

  /** Keeps the process alive while `waiting` (an answer is awaited), or lets it exit. */
  protected hold(waiting: boolean): void {
    if (waiting) this.thread?.ref();
    else this.thread?.unref();
  }

  protected fail(message: string): void {
    if (this.hasFailed || this.closing) return;
    this.hasFailed = true;
    this.counts.failed++;
    this.giveBack(message);
    void this.thread?.terminate();
    this.onFailure(message);
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    this.giveBack('the database is closing');
    await this.thread?.terminate();
    this.thread = undefined;
  }
}
