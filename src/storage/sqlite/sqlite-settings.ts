import { SETTINGS } from '../../config/settings.js';

/**
 * How the connection is opened.
 * - `synchronous`: NORMAL (the default) makes each commit survive a crash of the process, since
 *   WAL pages are in the operating system before the response is sent; FULL also survives a
 *   power loss, at the cost of an fsync per commit.
 * - `cacheMb`: SQLite's own page cache (private memory of each process).
 * - `mmapMb`: how much of the file is read through a memory map: full-text search over a large
 *   file otherwise spends half its time in read() system calls (bench/README.md, search
 *   analysis). Mapped pages are the kernel's page cache, shared by every process on the file.
 *   The default maps the whole file up to SQLite's own limit (2 GiB less 64 KiB in this build):
 *   the newest rows, which searches and pages read most, are at the file's end, so a map of the
 *   file's first part served a large store's hot pages through read() all the same.
 * - `filterTimeLimitMs`: how long a filtered statement may run (storage/filter-time-limit.ts).
 * - `checkpoints`: `background` (the default for a file) copies the WAL into the database in a
 *   thread of its own (wal-checkpointer.ts); `inline` leaves it to the commit that fills the WAL,
 *   as SQLite does by itself.
 * - `vectorScans`: `thread` (the default for a file) runs the scans of vectors on a connection in
 *   a thread of its own (read-thread.ts); `inline` runs them on the server connection.
 */
export interface SqliteOptions {
  synchronous?: 'NORMAL' | 'FULL';
  cacheMb?: number;
  mmapMb?: number;
  filterTimeLimitMs?: number;
  checkpoints?: 'background' | 'inline';
  vectorScans?: 'thread' | 'inline';
}

/** SQLITE_CACHE_MB and SQLITE_MMAP_MB when unset (docs/decisions/0024-memory-per-process.md). */
export const SQLITE_DEFAULTS: { readonly cacheMb: number; readonly mmapMb: number } = { cacheMb: SETTINGS.SQLITE_CACHE_MB.default, mmapMb: SETTINGS.SQLITE_MMAP_MB.default };
