/**
 * What a run's statements cost the database in two parts of the run, side by side: counters of
 * `pg_stat_statements` read at moments of the run, and the difference between two readings. The
 * soak reads them at the end of its first fifth and at the start and end of its last, so that a
 * statement whose time grows with the data shows apart from those that only wait longer on a busier
 * machine (their calls, and their mean, side by side).
 */

interface Counters {
  calls: number;
  execMs: number;
  planMs: number;
  query: string;
}

/** `pg_stat_statements` at one moment, by statement. */
export type StatementCounters = Map<string, Counters>;

interface Queryable {
  query<R>(sql: string): Promise<{ rows: R[] }>;
}

export async function readStatementCounters(client: Queryable): Promise<StatementCounters> {
  const { rows } = await client.query<{ id: string; calls: number; exec: number; plan: number; query: string }>(
    'SELECT queryid::text AS id, calls::float8 AS calls, total_exec_time AS exec, total_plan_time AS plan, query FROM pg_stat_statements',
  );
  return new Map(rows.map((row) => [row.id, { calls: row.calls, execMs: row.exec, planMs: row.plan, query: row.query }]));
}

/** What the statements did between two readings. */
function between(from: StatementCounters, to: StatementCounters): StatementCounters {
  const spent: StatementCounters = new Map();
  for (const [id, now] of to) {
    const before = from.get(id);
    spent.set(id, { calls: now.calls - (before?.calls ?? 0), execMs: now.execMs - (before?.execMs ?? 0), planMs: now.planMs - (before?.planMs ?? 0), query: now.query });
  }
  return spent;
}

const sum = (spent: StatementCounters, key: 'calls' | 'execMs' | 'planMs') => [...spent.values()].reduce((total, c) => total + c[key], 0);

/**
 * Lines for two windows of a run (each [start, end] readings): the statement time and planning of
 * each, then the `top` statements by their time in the second, each with its time, calls and mean
 * in both.
 */
export function compareWindows(first: [StatementCounters, StatementCounters], second: [StatementCounters, StatementCounters], top = 12): string[] {
  const early = between(...first);
  const late = between(...second);
  const seconds = (ms: number) => (ms / 1000).toFixed(1);
  const lines = [
    `first fifth: statements ${seconds(sum(early, 'execMs'))} s (${sum(early, 'calls')} calls), planning ${seconds(sum(early, 'planMs'))} s; ` +
      `last fifth: statements ${seconds(sum(late, 'execMs'))} s (${sum(late, 'calls')} calls), planning ${seconds(sum(late, 'planMs'))} s`,
  ];
  const shown = (c: Counters | undefined) =>
    c === undefined || c.calls === 0 ? '-'.padStart(24) : `${seconds(c.execMs).padStart(6)} s ${String(c.calls).padStart(7)} ${(c.execMs / c.calls).toFixed(2).padStart(7)} ms`;
  const ordered = [...late].sort((a, b) => b[1].execMs - a[1].execMs).slice(0, top);
  for (const [id, c] of ordered) lines.push(`  ${shown(early.get(id))} -> ${shown(c)}  ${c.query.replace(/\s+/g, ' ').slice(0, 100)}`);
  return lines;
}
