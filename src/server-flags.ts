/**
 * V8 flags every server process should run with. `--no-memory-reducer`: once a process has been
 * idle for a few seconds, V8's memory reducer runs a memory-reducing full collection, and after
 * it the process served the same cached page at about 27,000 instead of 37,000 requests/s, for
 * as long as it was measured (bench/README.md, "After idle"; the cause inside V8 is not known).
 * V8 reads the flag only when the process starts, so it must be on node's command line:
 * `npm start` passes it, and the primary of a process group passes it to every process it forks.
 */
export const SERVER_V8_FLAGS: readonly string[] = ['--no-memory-reducer'];

/** `execArgv` with the server flags it lacks appended (a forked server process's node options). */
export function serverExecArgv(execArgv: readonly string[]): string[] {
  return [...execArgv, ...SERVER_V8_FLAGS.filter((flag) => !execArgv.includes(flag))];
}
