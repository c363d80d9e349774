import { openSync, writeSync } from 'node:fs';
import pino, { type Logger } from 'pino';

/*
 * The process's log (docs/operations.md, "Logs"): pino's JSON lines, gathered in memory and handed
 * to the file or standard output in batches, asynchronously, at most FLUSH_MS after they were
 * logged. A line per request at the default level costs a request about 0.6 µs to format and
 * nothing to write; written one by one (pino's own destination), the writes took about 3 µs a
 * line, and pino's formatting 1.3 to 1.6 µs (a fifth of peers/list's throughput in all).
 * A graceful stop and a normal exit write out what is pending; a crash loses at most the last
 * FLUSH_MS (or MAX_PENDING_BYTES) of lines.
 */

/** Longest a logged line waits in memory before it is handed to the file. */
export const FLUSH_MS = 50;
/** Pending lines handed over at once when they reach this size, before FLUSH_MS is up. */
const MAX_PENDING_BYTES = 64 * 1024;

/** The process's log: its pino logger, and the request line written beside it. */
export interface ProcessLog {
  logger: Logger;
  /** Writes out every line still buffered, synchronously (a stop that cannot wait: a timed-out one). */
  flush(): void;
  /**
   * Writes out every line still buffered and resolves once the file holds them all, in the order
   * logged (a graceful stop's last step). A synchronous flush cannot promise that order: a batch
   * still being written asynchronously may land after the lines it writes.
   */
  close(): Promise<void>;
}

/** Lines gathered between writes; the pino destination of the process log. */
class BufferedLines {
  private pending: string[] = [];
  private bytes = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly out: ReturnType<typeof pino.destination>;
  private closing: Promise<void> | undefined;

  constructor(private readonly fd: number) {
    // pino's destination does the writing: asynchronous, in order, waiting out a full pipe
    this.out = pino.destination({ dest: fd, sync: false });
  }

  write(line: string): boolean {
    this.pending.push(line);
    this.bytes += line.length;
    if (this.bytes >= MAX_PENDING_BYTES) this.handOver();
    else this.timer ??= setTimeout(() => this.handOver(), FLUSH_MS).unref();
    return true;
  }

  /** The pending lines as one text, taken out of the buffer (its timer stopped); undefined when none. */
  private takePending(): string | undefined {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending.length === 0) return undefined;
    const text = this.pending.join('');
    this.pending = [];
    this.bytes = 0;
    return text;
  }

  /** The pending lines to the destination, in one write. */
  private handOver(): void {
    const text = this.takePending();
    if (text !== undefined) this.out.write(text);
  }

  flushSync(): void {
    if (this.closing !== undefined) return;
    const text = this.takePending();
    // what the destination holds first, then the pending lines, both written here and now: handed
    // to the destination while it writes, they would wait for its write in flight
    this.out.flushSync();
    if (text !== undefined) writeAllSync(this.fd, text);
  }

  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      this.handOver();
      // the destination ends after the write in flight and the ones queued behind it
      this.out.once('close', () => resolve());
      this.out.once('error', () => resolve());
      this.out.end();
    });
    return this.closing;
  }
}

const pause = new Int32Array(new SharedArrayBuffer(4));

/** Writes all of `text` to `fd` before returning, waiting out a full pipe (EAGAIN). */
function writeAllSync(fd: number, text: string): void {
  let rest = Buffer.from(text);
  while (rest.length > 0) {
    try {
      rest = rest.subarray(writeSync(fd, rest));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err;
      Atomics.wait(pause, 0, 0, 10);
    }
  }
}

/** Logs whose pending lines a process exit writes out. */
const open = new Set<BufferedLines>();
let exitHooked = false;

/**
 * The log `engram serve` writes: one JSON line per event at `level` and above, to `dest` (a file
 * descriptor, standard output by default, or a file path, appended to).
 */
export function processLog(level: string, dest: number | string = 1): ProcessLog {
  const lines = new BufferedLines(typeof dest === 'number' ? dest : openSync(dest, 'a'));
  open.add(lines);
  if (!exitHooked) {
    exitHooked = true;
    process.on('exit', () => {
      for (const each of open) each.flushSync();
    });
  }
  const logger = pino({ level }, lines);
  return {
    logger,
    flush: () => lines.flushSync(),
    close: () => {
      open.delete(lines);
      return lines.close();
    },
  };
}

/**
 * Writes a request's line (`reqId`, `method`, `url`, `status`, `ms`, msg "request") at info
 * through `logger`'s destination, as `logger.child({ reqId }).info({ method, url, status, ms },
 * 'request')` writes it with pino's default options (the same keys in the same order), built
 * directly: a third of the cost. Nothing when info is not enabled.
 */
export function requestLine(logger: Logger, reqId: string, method: string, url: string, status: number, ms: number): void {
  if (!logger.isLevelEnabled('info')) return;
  const stream = (logger as unknown as Record<symbol, { write(line: string): unknown }>)[pino.symbols.streamSym];
  const bindings = (logger as unknown as Record<symbol, string>)[pino.symbols.chindingsSym];
  stream.write(
    `{"level":30,"time":${Date.now()}${bindings},"reqId":${JSON.stringify(reqId)},"method":${JSON.stringify(method)},"url":${JSON.stringify(url)},"status":${status},"ms":${ms},"msg":"request"}\n`,
  );
}
