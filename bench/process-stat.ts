import { readFileSync } from 'node:fs';

/**
 * A process's times from Linux's `/proc/<pid>/stat`, in seconds: its own user and system CPU and
 * those of the ended children it waited for (the kernel counts clock ticks, 100 a second), and its
 * parent's pid. The name (the second field) is in parentheses and may hold spaces and
 * parentheses, so the fields are read after its last ')'.
 */
export interface ProcessStat {
  parent: number;
  user: number;
  system: number;
  childrenUser: number;
  childrenSystem: number;
}

const TICKS_PER_SECOND = 100;

/** A `/proc/<pid>/stat` line read. */
export function parseProcessStat(line: string): ProcessStat {
  // after the name: state, ppid (fields[1]), ..., utime, stime, cutime, cstime (fields[11] to [14])
  const fields = line.slice(line.lastIndexOf(')') + 2).split(' ');
  const seconds = (index: number) => Number(fields[index]) / TICKS_PER_SECOND;
  return { parent: Number(fields[1]), user: seconds(11), system: seconds(12), childrenUser: seconds(13), childrenSystem: seconds(14) };
}

/** The process's times; undefined when it is gone (or this is not Linux). */
export function readProcessStat(pid: number | undefined): ProcessStat | undefined {
  if (pid === undefined) return undefined;
  try {
    return parseProcessStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

/** CPU seconds (user and system) of a process so far; undefined when it is gone (or this is not Linux). */
export function cpuSeconds(pid: number | undefined): number | undefined {
  const stat = readProcessStat(pid);
  return stat === undefined ? undefined : stat.user + stat.system;
}
