import { stemmer } from 'stemmer';

/**
 * The terms of a search query as the full-text index sees them: folded like SQLite's
 * `unicode61 remove_diacritics 2` tokenizer, English stop words dropped, reduced by Martin
 * Porter's stemmer. The index stems the same way (FTS5's `porter` tokenizer; on PostgreSQL the
 * `engram_porter` configuration of migration 0010, Snowball's `porter`), so the stems counted
 * here in a message's text are the terms the index found it by.
 */

/** Characters that make up a token, as in SQLite's unicode61 tokenizer (letters, digits, private use). */
export const TOKEN = /[\p{L}\p{N}\p{Co}]+/gu;
const ASCII = /^[\x00-\x7f]*$/;

/** Text as the full-text index sees it: lower case, diacritics removed. */
export function fold(text: string): string {
  if (ASCII.test(text)) return text.toLowerCase();
  return text.normalize('NFD').replace(/\p{M}+/gu, '').toLowerCase();
}

/**
 * English stop words: Snowball's English list (the one PostgreSQL ships as `english.stop`),
 * which holds function words only. Longer lists (stopwords-iso's 1,298 English words) also
 * drop words a question is about, such as "home", "group", "information" or "new".
 */
const STOP_WORDS = new Set(
  (
    'i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers ' +
    'herself it its itself they them their theirs themselves what which who whom this that these those am is ' +
    'are was were be been being have has had having do does did doing a an the and but if or because as until ' +
    'while of at by for with about against between into through during before after above below to from up ' +
    'down in out on off over under again further then once here there when where why how all any both each few ' +
    'more most other some such no nor not only own same so than too very s t can will just don should now'
  ).split(' '),
);

/** Whether a folded token is an English stop word. */
export function isStopWord(token: string): boolean {
  return STOP_WORDS.has(token);
}

/** Tokens already stemmed; a conversation uses a few thousand distinct words, so this mostly hits. */
const stems = new Map<string, string>();
const MAX_REMEMBERED_STEMS = 50_000;

/** The Porter stem of a folded token, as FTS5's porter tokenizer gives it. */
export function stem(token: string): string {
  let found = stems.get(token);
  if (found === undefined) {
    // FTS5 stems tokens of up to 64 bytes; beyond ASCII its byte-wise stemming and this one
    // differ ("straßes"), so such words are matched as written (docs/decisions/0021-search.md)
    found = token.length > 64 || !/^[a-z0-9]+$/.test(token) ? token : stemmer(token);
    if (stems.size >= MAX_REMEMBERED_STEMS) stems.clear();
    stems.set(token, found);
  }
  return found;
}

/** One term of a query: a word of it, as written (folded), and its stem. */
export interface QueryTerm {
  word: string;
  stem: string;
}

/** Most distinct terms of a query that are searched for. */
export const MAX_QUERY_TERMS = 32;

/**
 * The distinct terms of a query, in query order: its words other than stop words, one per
 * stem. A query of stop words alone ("who is she?") keeps them, so it still finds the
 * messages that hold them.
 */
export function queryTerms(query: string): QueryTerm[] {
  const tokens = fold(query).match(TOKEN) ?? [];
  const meaningful = tokens.filter((token) => !isStopWord(token));
  const terms = new Map<string, QueryTerm>();
  for (const word of meaningful.length > 0 ? meaningful : tokens) {
    const term = { word, stem: stem(word) };
    if (!terms.has(term.stem)) terms.set(term.stem, term);
    if (terms.size === MAX_QUERY_TERMS) break;
  }
  return [...terms.values()];
}
