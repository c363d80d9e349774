/**
 * V8 flags every server process should run with (docs/decisions/0025-v8-flags.md):
 * - `--no-memory-reducer`: once a process has been idle for a few seconds after start-up, V8's
 *   memory reducer runs memory-reducing full collections, and after them the process served the
 *   same cached page at 0.80 to 0.93 of its fresh speed for as long as it was measured
 *   (bench/README.md, "After idle"; the cause inside V8 is not known).
 * - `--max-semi-space-size=8` (MB; V8's default here is 16): without the reducer, the young
 *   generation that search's allocations grow is never shrunk again, and a process at 1,000,000
 *   messages sat at 218 MB once it had stored a message; capped, 197 MB, as with the defaults.
 * - `--heap-growing-percent=100` with `--initial-old-space-size=128` (MB): after a full
 *   collection the old generation may grow to twice what it kept, but never less than 128 MB,
 *   before the next. V8's own factor let it grow to four and more times what it kept under a
 *   steady load, and without the reducer the pages a peak took stayed: a process held 245 to
 *   292 MB of heap for 60 to 80 MB of live objects. The floor keeps a small heap's collections
 *   as rare as V8's factor made them (peers/list at saturation served as many requests).
 * - `--expose-gc`: lets the SQLite driver ask for a full collection once the prepared statements
 *   its cache dropped add up to a cache's worth: V8 does not see their native memory, and they
 *   are finalized only when collected (SqliteDriver.dropped; 40,000 filters of distinct shapes
 *   left a server at about 520 MB without it, 263 MB with it).
 * V8 reads them only when the process starts, so they must be on node's command line: `npm start`
 * passes them, and the primary of a process group passes them to every process it forks.
 */
export const SERVER_V8_FLAGS: readonly string[] = ['--no-memory-reducer', '--max-semi-space-size=8', '--heap-growing-percent=100', '--initial-old-space-size=128', '--expose-gc'];

/** A V8 flag's name without its value or `no-` (`--max_semi_space_size=32` -> `--max-semi-space-size`). */
function flagName(flag: string): string {
  return flag.split('=')[0].replaceAll('_', '-').replace(/^--no-/, '--');
}

/**
 * `execArgv` with the server flags it does not set itself appended (a forked server process's
 * node options): a flag given on the command line, either way or with another value, is kept.
 */
export function serverExecArgv(execArgv: readonly string[]): string[] {
  const given = new Set(execArgv.map(flagName));
  return [...execArgv, ...SERVER_V8_FLAGS.filter((flag) => !given.has(flagName(flag)))];
}
