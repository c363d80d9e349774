import type { JsonSchema } from '../../llm/provider.js';

/*
 * The deriver's prompt and the parsing of its answer (reasoning.md R2): explicit atomic facts
 * about one peer, from a batch of a session's messages. Pure functions, so they are tested here
 * without a model.
 */

export interface PromptMessage {
  peerId: string;
  content: string;
  createdAt: Date;
}

/** Most facts kept from one answer, and longest fact: model output is untrusted input. */
export const MAX_FACTS_PER_BATCH = 100;
export const MAX_FACT_CHARS = 2_000;

/** A known fact shown to the deriver, which a new fact may replace (by its number, 1-based). */
export interface KnownFact {
  content: string;
  validFrom: Date;
}

/** A fact of the deriver's answer: its text and the numbers of the known facts it replaces (unchecked). */
export interface DerivedFact {
  content: string;
  replaces: unknown[];
}

/** Most replacements one fact may declare (more are ignored). */
export const MAX_REPLACES_PER_FACT = 10;

export const REPRESENTATION_SCHEMA: JsonSchema = {
  type: 'object',
  properties: {
    explicit: {
      type: 'array',
      items: {
        type: 'object',
        properties: { content: { type: 'string' }, replaces: { type: 'array', items: { type: 'integer' } } },
        required: ['content'],
        additionalProperties: false,
      },
    },
  },
  required: ['explicit'],
  additionalProperties: false,
};

function line(message: PromptMessage): string {
  const time = message.createdAt.toISOString().slice(0, 19).replace('T', ' ');
  return `${time} ${message.peerId}: ${message.content}`;
}

export function representationPrompt(options: { observedId: string; messages: readonly PromptMessage[]; customInstructions?: string; known?: readonly KnownFact[] }): string {
  const known = options.known ?? [];
  const parts = [
    'You extract explicit facts about one participant of a conversation.',
    '',
    'Rules:',
    `- Only facts about ${options.observedId}, stated or directly implied by what ${options.observedId} said or what others said to or about them.`,
    '- Each fact is atomic (one piece of information), self-contained (names the participant instead of "he", "she" or "I"), and in the third person.',
    '- Include concrete details: names, places, dates, numbers, preferences, plans, relationships.',
    '- Do not guess, generalise or infer personality; do not repeat the same fact twice.',
    '- If the messages hold no fact about the participant, answer with an empty list.',
    '',
    'Examples:',
    '- "I just moved to Lisbon with my sister" -> "alice moved to Lisbon", "alice has a sister", "alice lives with her sister"',
    '- "ok thanks" -> no facts',
  ];
  if (options.customInstructions !== undefined && options.customInstructions.trim() !== '') {
    parts.push('', 'CUSTOM INSTRUCTIONS:', options.customInstructions.trim());
  }
  parts.push('', `Participant: ${options.observedId}`);
  if (known.length > 0) {
    parts.push(
      '',
      `Facts already known about ${options.observedId} (number, since when: fact):`,
      ...known.map((fact, index) => `[${index + 1}] ${fact.validFrom.toISOString().slice(0, 10)}: ${fact.content}`),
      '',
      'When a new fact shows that a known fact is no longer true (it changed: a new city, job, partner, plan, preference), give the new fact "replaces": [the known fact\'s number].',
      'Only for facts that stopped being true: a fact that adds detail or repeats a known one replaces nothing, and known facts not contradicted by the messages stay as they are.',
    );
  }
  parts.push(
    '',
    'Messages (time, sender: text):',
    ...options.messages.map(line),
    '',
    known.length > 0
      ? 'Answer with a JSON object: {"explicit": [{"content": "<fact>", "replaces": [<number>, ...]}, ...]} ("replaces" only when the fact replaces known facts)'
      : 'Answer with a JSON object: {"explicit": [{"content": "<fact>"}, ...]}',
  );
  return parts.join('\n');
}

export type ParseResult<T> = { ok: true; value: T } | { ok: false; error: string };

/**
 * Reads the model's answer: a JSON object with an `explicit` list of `{content}` (plain strings
 * are taken too), possibly wrapped in a code fence or surrounded by text. Facts are trimmed,
 * empty ones dropped, repeats (ignoring case) removed, and their number and length bounded.
 */
export function parseRepresentation(text: string): ParseResult<string[]> {
  const parsed = parseDerivedFacts(text);
  return parsed.ok ? { ok: true, value: parsed.value.map((fact) => fact.content) } : parsed;
}

/**
 * parseRepresentation with each fact's `replaces` list, as the model wrote it (at most
 * MAX_REPLACES_PER_FACT entries; the deriver checks each against the facts it showed). A
 * `replaces` that is not a list is taken as none; a repeated fact keeps the first one's list.
 */
export function parseDerivedFacts(text: string): ParseResult<DerivedFact[]> {
  const json = extractJson(text);
  if (!json.ok) return json;
  const value = json.value;
  const list = Array.isArray(value)
    ? value
    : value !== null && typeof value === 'object' && Object.hasOwn(value, 'explicit')
      ? (value as { explicit: unknown }).explicit
      : undefined;
  if (!Array.isArray(list)) return { ok: false, error: 'the answer has no "explicit" list' };
  const facts: DerivedFact[] = [];
  const seen = new Set<string>();
  for (const item of list) {
    const content =
      typeof item === 'string'
        ? item
        : item !== null && typeof item === 'object' && Object.hasOwn(item, 'content') && typeof (item as { content: unknown }).content === 'string'
          ? (item as { content: string }).content
          : undefined;
    if (content === undefined) return { ok: false, error: `an item of "explicit" is not {"content": string}: ${JSON.stringify(item)?.slice(0, 200)}` };
    const fact = content.trim().slice(0, MAX_FACT_CHARS);
    const key = fact.toLowerCase();
    if (fact === '' || seen.has(key)) continue;
    seen.add(key);
    const replaces = typeof item === 'object' && item !== null && Object.hasOwn(item, 'replaces') ? (item as { replaces: unknown }).replaces : undefined;
    facts.push({ content: fact, replaces: Array.isArray(replaces) ? replaces.slice(0, MAX_REPLACES_PER_FACT) : [] });
    if (facts.length === MAX_FACTS_PER_BATCH) break;
  }
  return { ok: true, value: facts };
}

/** The JSON value in a model's answer: the whole text, a fenced block, or the outermost object. */
export function extractJson(text: string): ParseResult<unknown> {
  const attempts = [text.trim()];
  const fenced = /```(?:json)?\s*([\s\S]*?)```/i.exec(text);
  if (fenced !== null) attempts.push(fenced[1].trim());
  const start = text.indexOf('{');
  const end = text.lastIndexOf('}');
  if (start >= 0 && end > start) attempts.push(text.slice(start, end + 1));
  for (const attempt of attempts) {
    if (attempt === '') continue;
    try {
      return { ok: true, value: JSON.parse(attempt) as unknown };
    } catch {
      // the next form
    }
  }
  return { ok: false, error: text.trim() === '' ? 'the answer is empty' : `the answer is not JSON: ${text.slice(0, 200)}` };
}
