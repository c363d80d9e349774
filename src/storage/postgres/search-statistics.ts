import { stemmer } from 'stemmer';
import type { SqlExecutor } from '../sql/driver.js';

/**
 * How PostgreSQL reads a workspace's matches of a word, chosen per statement from the planner's
 * own statistics (docs/decisions/0021-search.md, PostgreSQL). A search wants a word's newest
 * matches in a workspace. Walking the workspace's index newest first reads about
 * `candidates / share` rows, checking each row's words, and stops; reading every match through
 * the words' GIN index and sorting them costs about a row's check per match, and more: at
 * 100,000 messages a word in 3.8 % of them took 24 ms by the walk and 11.6 ms by the bitmap, one
 * in 16 % 7.2 and 29.5 ms. The planner weighs the walk's rows too lightly (it takes each check
 * as cheap) and walked for every word in more than about 3 % of the messages. The store reads
 * the same statistics the planner has (pg_stats: the share of the messages holding each common
 * word, the share of each large workspace; pg_class: the table's rows) at most once a minute,
 * and asks for the bitmap where it costs less (`MessageTextSearch.sparse`). Both read the same
 * matches in the same order: only the time differs.
 */

/** Rows the walk may read for the cost of one match read through the bitmap (measured: 2.5 to 3). */
export const BITMAP_MATCH_COST = 2.8;

/** How long statistics read are used before they are read again. */
const STATISTICS_MAX_AGE_MS = 60_000;

interface Statistics {
  rows: number;
  /** Share of the messages holding each word listed (lexemes, as the index stems them). */
  wordShare: Map<string, number>;
  /** At most this share for a word not listed. */
  unlistedWordShare: number;
  /** Share of the messages of each workspace listed. */
  workspaceShare: Map<string, number>;
  /** At most this share for a workspace not listed. */
  unlistedWorkspaceShare: number;
}

interface StatisticsRow {
  rows: number | string | null;
  words: string[] | null;
  word_shares: number[] | null;
  workspaces: string[] | null;
  workspace_shares: number[] | null;
}

const STATISTICS_QUERY = `SELECT c.reltuples AS rows,
  w.most_common_elems::text::text[] AS words, w.most_common_elem_freqs AS word_shares,
  s.most_common_vals::text::text[] AS workspaces, s.most_common_freqs AS workspace_shares
FROM pg_class c
LEFT JOIN pg_stats w ON w.schemaname = current_schema() AND w.tablename = 'messages' AND w.attname = 'search_vector'
LEFT JOIN pg_stats s ON s.schemaname = current_schema() AND s.tablename = 'messages' AND s.attname = 'workspace_id'
WHERE c.oid = to_regclass('messages')`;

export class SearchStatistics {
  private read: { at: number; statistics: Promise<Statistics | undefined> } | undefined;

  /**
   * Whether the newest `candidates` matches of all of `words` in the workspace cost less read
   * through the bitmap than by walking the workspace; undefined when the statistics cannot tell
   * (never analyzed): the walk, as the planner would.
   */
  async sparse(db: SqlExecutor, workspaceId: string, words: readonly string[], candidates: number): Promise<boolean | undefined> {
    const statistics = await this.statistics(db);
    return statistics === undefined ? undefined : sparseSearch(statistics, workspaceId, words, candidates);
  }

  private statistics(db: SqlExecutor): Promise<Statistics | undefined> {
    const now = performance.now();
    if (this.read === undefined || now - this.read.at > STATISTICS_MAX_AGE_MS) {
      const statistics = db.get<StatisticsRow>(STATISTICS_QUERY).then(fromRow);
      this.read = { at: now, statistics };
      // a failed read is not kept: the next search reads again
      statistics.catch(() => {
        if (this.read?.statistics === statistics) this.read = undefined;
      });
    }
    return this.read.statistics;
  }
}

function fromRow(row: StatisticsRow | undefined): Statistics | undefined {
  const rows = Number(row?.rows ?? 0);
  if (row === undefined || !(rows > 0) || row.words === null || row.word_shares === null) return undefined;
  // the word shares end with three more: the least and the most listed share, and the nulls'
  const wordShare = new Map(row.words.map((word, index) => [word, row.word_shares![index]]));
  const workspaces = row.workspaces ?? [];
  const workspaceShares = row.workspace_shares ?? [];
  return {
    rows,
    wordShare,
    unlistedWordShare: row.word_shares[row.words.length] ?? 0,
    workspaceShare: new Map(workspaces.map((workspace, index) => [workspace, workspaceShares[index]])),
    // no list: every workspace about as large; else below the least listed
    unlistedWorkspaceShare: workspaceShares.length === 0 ? 1 : Math.min(...workspaceShares),
  };
}

/** The decision of SearchStatistics.sparse, from statistics read. */
export function sparseSearch(statistics: Statistics, workspaceId: string, words: readonly string[], candidates: number): boolean {
  // every word must occur: the rarest bounds the matches
  let share = 1;
  for (const word of words) share = Math.min(share, statistics.wordShare.get(stemmer(word.toLowerCase())) ?? statistics.unlistedWordShare);
  const workspaceRows = (statistics.workspaceShare.get(workspaceId) ?? statistics.unlistedWorkspaceShare) * statistics.rows;
  const walked = share > 0 ? Math.min(workspaceRows, candidates / share) : workspaceRows;
  const matches = share * statistics.rows;
  return matches * BITMAP_MATCH_COST < walked;
}
