/**
 * What PostgreSQL's sessions are doing, sampled: every `everyMs` the statements running at that
 * moment (`pg_stat_activity`, state `active`, client backends but the sampler's own) counted by
 * what they wait on (`Lock:transactionid`, `LWLock:WALWrite`, `IO:DataFileRead`, ...; `CPU`
 * when they wait on nothing). Averaged over the polls, a count is the number of statements in
 * that state at an average moment: a stall in which the queue grows while no part of a run uses
 * more CPU shows here as lock or I/O waits, and which ones.
 */
import pg from 'pg';

export interface WaitSampler {
  /** The average number of running statements by wait since the last call, most first. */
  takeWindow(): [string, number][];
  /** The same over the whole run. */
  total(): [string, number][];
  stop(): Promise<void>;
}

class Tally {
  private readonly counts = new Map<string, number>();
  private polls = 0;

  add(rows: readonly { event: string; n: number }[]): void {
    this.polls++;
    for (const { event, n } of rows) this.counts.set(event, (this.counts.get(event) ?? 0) + n);
  }

  averages(): [string, number][] {
    const polls = Math.max(1, this.polls);
    return [...this.counts].map(([event, n]): [string, number] => [event, n / polls]).sort((a, b) => b[1] - a[1]);
  }
}

export async function sampleDatabaseWaits(databaseUrl: string, everyMs = 500): Promise<WaitSampler> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  let window = new Tally();
  const run = new Tally();
  let stopped = false;
  const polling = (async () => {
    while (!stopped) {
      const { rows } = await client.query<{ event: string; n: number }>(
        `SELECT COALESCE(wait_event_type || ':' || wait_event, 'CPU') AS event, count(*)::int AS n
         FROM pg_stat_activity
         WHERE state = 'active' AND backend_type = 'client backend' AND pid <> pg_backend_pid()
         GROUP BY 1`,
      );
      window.add(rows);
      run.add(rows);
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  })();
  return {
    takeWindow() {
      const averages = window.averages();
      window = new Tally();
      return averages;
    },
    total: () => run.averages(),
    async stop() {
      stopped = true;
      await polling.catch(() => undefined);
      await client.end();
    },
  };
}

/** `Lock:transactionid 1.20, CPU 0.85`: the first `top` entries at two decimals. */
export const formatWaits = (averages: readonly [string, number][], top: number) =>
  averages.length === 0 ? 'none' : averages.slice(0, top).map(([event, n]) => `${event} ${n.toFixed(2)}`).join(', ');
