/**
 * PostgreSQL's CPU on this machine, by kind of process, from /proc. Summing the live `postgres`
 * processes misses those that ended (a connection the pool closed, an autovacuum worker done
 * with its table): the postmaster's reaped children's times (`cutime`, `cstime`) hold theirs. The
 * live processes are polled every `everyMs`, each named by its title (`postgres: autovacuum
 * worker`, `postgres: walwriter`, a client backend `postgres: <user> <database> <address> ...`),
 * so an ended one's CPU is put to its kind as last seen; what ended between two polls is
 * "ended unseen".
 */
import { readdirSync, readFileSync } from 'node:fs';
import { readProcessStat, type ProcessStat } from './process-stat.js';

/** A PostgreSQL process's kind from its title. */
function kindOf(pid: number): string {
  try {
    const title = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
    if (!title.startsWith('postgres: ')) return 'postmaster';
    const rest = title.slice('postgres: '.length);
    const known = ['autovacuum worker', 'autovacuum launcher', 'walwriter', 'checkpointer', 'background writer', 'parallel worker', 'logical replication launcher', 'archiver'];
    return known.find((kind) => rest.startsWith(kind)) ?? 'backends';
  } catch {
    return 'unknown';
  }
}

export class DatabaseCpu {
  private readonly live = new Map<number, { kind: string; seconds: number }>();
  private readonly ended = new Map<string, number>();
  private postmaster: { pid: number; children: number } | undefined;
  private readonly timer: NodeJS.Timeout;

  constructor(everyMs = 500) {
    this.poll();
    this.timer = setInterval(() => this.poll(), everyMs).unref();
  }

  /** Reads every `postgres` process's CPU so far; the ones gone since the last poll are put to their kind. */
  poll(): void {
    const now = new Map<number, ProcessStat>();
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      let comm: string;
      try {
        comm = readFileSync(`/proc/${name}/comm`, 'utf8').trim();
      } catch {
        continue;
      }
      if (comm !== 'postgres') continue;
      const found = readProcessStat(Number(name));
      if (found !== undefined) now.set(Number(name), found);
    }
    for (const [pid, seen] of this.live) {
      if (now.has(pid)) continue;
      this.ended.set(seen.kind, (this.ended.get(seen.kind) ?? 0) + seen.seconds);
      this.live.delete(pid);
    }
    for (const [pid, found] of now) {
      const known = this.live.get(pid);
      // a process caught right after its fork still has the postmaster's title: named again later
      const kind = known !== undefined && known.kind !== 'postmaster' ? known.kind : kindOf(pid);
      this.live.set(pid, { kind, seconds: found.user + found.system });
      // the postmaster: the one process whose parent is not a postgres process
      if (!now.has(found.parent)) this.postmaster = { pid, children: found.childrenUser + found.childrenSystem };
    }
  }

  /** CPU seconds so far of every process of the database, the ended ones included. */
  total(): number {
    this.poll();
    let sum = this.postmaster?.children ?? 0;
    for (const { seconds } of this.live.values()) sum += seconds;
    return sum;
  }

  /** CPU seconds so far by kind of process; "ended unseen": the ended processes' CPU no poll saw. */
  byKind(): Record<string, number> {
    const total = this.total();
    const kinds: Record<string, number> = {};
    for (const [kind, seconds] of this.ended) kinds[kind] = seconds;
    for (const { kind, seconds } of this.live.values()) kinds[kind] = (kinds[kind] ?? 0) + seconds;
    const attributed = Object.values(kinds).reduce((sum, seconds) => sum + seconds, 0);
    kinds['ended unseen'] = Math.max(0, total - attributed);
    return kinds;
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
