/*
 * Peer card rules (reasoning.md R4): what a dream's card tool may write. A card is a list of
 * short entries, each starting with one of four prefixes; the tool replaces the whole card.
 */

export const CARD_PREFIXES = ['IDENTITY: ', 'ATTRIBUTE: ', 'RELATIONSHIP: ', 'INSTRUCTION: '] as const;
/** Longest entry, in characters. */
export const CARD_ENTRY_MAX_CHARS = 200;
/** Most entries of a card. */
export const CARD_MAX_ENTRIES = 40;

/** The key two entries are the same under: lower case, runs of white space as one space, trimmed. */
const sameKey = (entry: string) => entry.toLowerCase().replace(/\s+/gu, ' ').trim();

/** Why an entry is refused, or undefined when it is a valid card entry. */
export function cardEntryProblem(entry: unknown): string | undefined {
  if (typeof entry !== 'string') return 'not a string';
  const text = entry.trim();
  // a bare prefix ("IDENTITY:") is an empty entry, not a wrong prefix
  const prefix = CARD_PREFIXES.find((p) => text.startsWith(p) || text === p.trim());
  if (prefix === undefined) return `does not start with one of ${CARD_PREFIXES.map((p) => p.trim()).join(', ')}`;
  if (text.slice(prefix.length - 1).trim().length === 0) return 'empty after its prefix';
  if ([...text].length > CARD_ENTRY_MAX_CHARS) return `longer than ${CARD_ENTRY_MAX_CHARS} characters`;
  return undefined;
}

export interface CardUpdate {
  /** The card to store; undefined when the update had no valid entry (the old card stays). */
  card: string[] | undefined;
  /** Entries left out and why. */
  rejected: { entry: string; reason: string }[];
}

/**
 * The card an update asks for: valid entries (trimmed) in order, repeats (ignoring case and
 * spacing) dropped, at most CARD_MAX_ENTRIES. No valid entry: no card (keep the old one).
 */
export function applyCardUpdate(entries: readonly unknown[]): CardUpdate {
  const card: string[] = [];
  const seen = new Set<string>();
  const rejected: CardUpdate['rejected'] = [];
  for (const entry of entries) {
    const problem = cardEntryProblem(entry);
    const shown = typeof entry === 'string' ? entry : JSON.stringify(entry);
    if (problem !== undefined) {
      rejected.push({ entry: shown, reason: problem });
      continue;
    }
    const text = (entry as string).trim();
    const key = sameKey(text);
    if (seen.has(key)) {
      rejected.push({ entry: shown, reason: 'a repeat of an earlier entry' });
      continue;
    }
    if (card.length >= CARD_MAX_ENTRIES) {
      rejected.push({ entry: shown, reason: `over the ${CARD_MAX_ENTRIES}-entry limit` });
      continue;
    }
    seen.add(key);
    card.push(text);
  }
  return { card: card.length > 0 ? card : undefined, rejected };
}
