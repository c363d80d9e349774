/**
 * The dataset files `engram eval` reads: the LoCoMo format (a JSON list of conversations, each
 * with its questions) and the LongMemEval format (a JSON list of questions, each with its own
 * history). Both become one shape: groups of sessions to store (a group is what a question needs
 * stored before it is asked) and the questions, in the file's order. The file is checked whole
 * before anything is sent, and a mistake names where it is.
 */

export type DatasetFormat = 'locomo' | 'longmemeval';

export interface EvalMessage {
  peerId: string;
  content: string;
  /** ISO 8601, from the session's date. */
  createdAt: string;
}

export interface EvalSession {
  id: string;
  peerIds: string[];
  messages: EvalMessage[];
}

export interface EvalGroup {
  id: string;
  sessions: EvalSession[];
}

export interface EvalQuestion {
  /** Unique in the file; the state file and the report name questions by it. */
  id: string;
  groupId: string;
  category: string;
  question: string;
  /** What is sent to chat: the question, with the date it is asked on when the file gives one. */
  query: string;
  /** The reference answer the judge compares with. */
  answer: string;
  /** Whose memory answers: the peer chat is asked through. */
  peerId: string;
}

export interface EvalDataset {
  format: DatasetFormat;
  groups: EvalGroup[];
  questions: EvalQuestion[];
}

/** A file that is not a dataset of either format, or one with a mistake in it (exit 2). */
export class DatasetError extends Error {}

const EXPECTED =
  'expected a LoCoMo file (a JSON list of samples, each with "conversation" {speaker_a, speaker_b, session_N, session_N_date_time} and "qa" [{question, answer, category}]) ' +
  'or a LongMemEval file (a JSON list of questions, each with question_id, question_type, question, answer, haystack_dates and haystack_sessions)';

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

function text(value: unknown, where: string): string {
  if (typeof value !== 'string') throw new DatasetError(`${where} must be a string, got ${describe(value)}`);
  return value;
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  return typeof value === 'object' ? 'an object' : `${typeof value} ${JSON.stringify(value).slice(0, 40)}`;
}

/** An answer as text: the files hold some as numbers. */
function answerText(value: unknown, where: string): string {
  if (typeof value === 'number') return String(value);
  return text(value, where);
}

/** A string usable as an Engram id (letters, digits, `_` and `-`). */
export function idPart(value: string): string {
  const cleaned = value.replace(/[^A-Za-z0-9_-]+/g, '-').replace(/^-+|-+$/g, '');
  return cleaned === '' ? 'x' : cleaned.slice(0, 120);
}

const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];

function isoOf(year: number, month: number, day: number, hour: number, minute: number, where: string, original: string): Date {
  const date = new Date(Date.UTC(year, month, day, hour, minute));
  if (Number.isNaN(date.getTime()) || date.getUTCDate() !== day || date.getUTCMonth() !== month) {
    throw new DatasetError(`${where}: "${original}" is not a date`);
  }
  return date;
}

/** LoCoMo's session times: "1:56 pm on 8 May, 2023" (taken as UTC). */
export function parseLocomoDate(value: string, where: string): Date {
  const match = /^\s*(\d{1,2}):(\d{2})\s*([ap])\.?m\.?\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$/i.exec(value);
  const month = match === null ? -1 : MONTHS.findIndex((name) => name.startsWith(match[5].toLowerCase()) && match[5].length >= 3);
  if (match === null || month < 0) throw new DatasetError(`${where}: "${value}" is not a LoCoMo date such as "1:56 pm on 8 May, 2023"`);
  const hour12 = Number(match[1]);
  if (hour12 < 1 || hour12 > 12 || Number(match[2]) > 59) throw new DatasetError(`${where}: "${value}" is not a time of day`);
  const hour = (hour12 % 12) + (match[3].toLowerCase() === 'p' ? 12 : 0);
  return isoOf(Number(match[6]), month, Number(match[4]), hour, Number(match[2]), where, value);
}

/** LongMemEval's dates: "2023/05/20 (Sat) 02:21" (taken as UTC). */
export function parseLongMemEvalDate(value: string, where: string): Date {
  const match = /^\s*(\d{4})\/(\d{1,2})\/(\d{1,2})(?:\s*\([A-Za-z]+\))?(?:\s+(\d{1,2}):(\d{2}))?\s*$/.exec(value);
  if (match === null) throw new DatasetError(`${where}: "${value}" is not a LongMemEval date such as "2023/05/20 (Sat) 02:21"`);
  const [hour, minute] = [Number(match[4] ?? 0), Number(match[5] ?? 0)];
  if (hour > 23 || minute > 59) throw new DatasetError(`${where}: "${value}" is not a time of day`);
  return isoOf(Number(match[1]), Number(match[2]) - 1, Number(match[3]), hour, minute, where, value);
}

/** The session's messages one second apart from its date, so they keep their order and their day. */
const at = (start: Date, index: number): string => new Date(start.getTime() + index * 1000).toISOString();

/** Most characters of one message Engram takes; a longer turn is stored as consecutive messages. */
export const MESSAGE_CHARS = 25_000;

function addTurn(messages: EvalMessage[], peerId: string, content: string, start: Date): void {
  if (content.trim() === '') return;
  for (let i = 0; i < content.length; i += MESSAGE_CHARS) messages.push({ peerId, content: content.slice(i, i + MESSAGE_CHARS), createdAt: at(start, messages.length) });
}

/** Reads a dataset file's text: which format, and its sessions and questions. */
export function readDataset(source: string): EvalDataset {
  let parsed: unknown;
  try {
    parsed = JSON.parse(source);
  } catch (error) {
    throw new DatasetError(`the file is not JSON (${error instanceof Error ? error.message : String(error)}); ${EXPECTED}`);
  }
  if (!Array.isArray(parsed) || parsed.length === 0) throw new DatasetError(`the file holds ${Array.isArray(parsed) ? 'an empty list' : describe(parsed)}; ${EXPECTED}`);
  const first: unknown = parsed[0];
  if (isObject(first) && isObject(first.conversation) && Array.isArray(first.qa)) return readLocomo(parsed);
  if (isObject(first) && 'haystack_sessions' in first && 'question' in first) return readLongMemEval(parsed);
  const keys = isObject(first) ? Object.keys(first).slice(0, 12).join(', ') || 'none' : describe(first);
  throw new DatasetError(`the file is in neither format (its first item has ${isObject(first) ? `the keys: ${keys}` : keys}); ${EXPECTED}`);
}

function readLocomo(samples: unknown[]): EvalDataset {
  // a speaker is a peer named as in the file; with the same name in two samples, each sample's is its own
  const names = new Map<string, number>();
  for (const sample of samples) {
    if (!isObject(sample) || !isObject(sample.conversation)) continue;
    for (const key of ['speaker_a', 'speaker_b']) {
      const name = sample.conversation[key];
      if (typeof name === 'string') names.set(idPart(name), (names.get(idPart(name)) ?? 0) + 1);
    }
  }
  const groups: EvalGroup[] = [];
  const questions: EvalQuestion[] = [];
  const groupIds = new Set<string>();
  samples.forEach((sample, index) => {
    const where = `sample ${index + 1}`;
    if (!isObject(sample) || !isObject(sample.conversation) || !Array.isArray(sample.qa)) throw new DatasetError(`${where} needs "conversation" (an object) and "qa" (a list), as LoCoMo samples have`);
    let groupId = typeof sample.sample_id === 'string' || typeof sample.sample_id === 'number' ? idPart(String(sample.sample_id)) : `sample-${index + 1}`;
    if (groupIds.has(groupId)) groupId = `${groupId}-${index + 1}`;
    groupIds.add(groupId);
    const conversation = sample.conversation;
    const speakerA = text(conversation.speaker_a, `${where}: conversation.speaker_a`);
    const speakerB = text(conversation.speaker_b, `${where}: conversation.speaker_b`);
    const peerOf = (name: string) => (names.get(idPart(name))! > 1 ? `${idPart(name)}-${groupId}` : idPart(name));
    const peers = new Map([
      [speakerA, peerOf(speakerA)],
      [speakerB, peerOf(speakerB)],
    ]);
    const numbers = Object.keys(conversation)
      .map((key) => /^session_(\d+)$/.exec(key))
      .filter((match) => match !== null)
      .map((match) => Number(match[1]))
      .sort((a, b) => a - b);
    if (numbers.length === 0) throw new DatasetError(`${where}: the conversation has no session_N list`);
    const sessions: EvalSession[] = [];
    for (const n of numbers) {
      const turns = conversation[`session_${n}`];
      const sessionWhere = `${where}: conversation.session_${n}`;
      if (!Array.isArray(turns)) throw new DatasetError(`${sessionWhere} must be a list of turns`);
      const start = parseLocomoDate(text(conversation[`session_${n}_date_time`], `${sessionWhere}_date_time`), `${sessionWhere}_date_time`);
      const messages: EvalMessage[] = [];
      turns.forEach((turn, t) => {
        const turnWhere = `${sessionWhere}[${t}]`;
        if (!isObject(turn)) throw new DatasetError(`${turnWhere} must be an object {speaker, dia_id, text}`);
        const speaker = text(turn.speaker, `${turnWhere}.speaker`);
        const peerId = peers.get(speaker);
        if (peerId === undefined) throw new DatasetError(`${turnWhere}.speaker is "${speaker}", neither speaker_a ("${speakerA}") nor speaker_b ("${speakerB}")`);
        let content = text(turn.text, `${turnWhere}.text`);
        // an image a speaker shared is known by its caption
        if (typeof turn.blip_caption === 'string' && turn.blip_caption.trim() !== '') content = `${content} [shared an image: ${turn.blip_caption.trim()}]`;
        addTurn(messages, peerId, content, start);
      });
      sessions.push({ id: `${groupId}-session_${n}`, peerIds: [...peers.values()], messages });
    }
    groups.push({ id: groupId, sessions });
    sample.qa.forEach((qa, q) => {
      const qaWhere = `${where}: qa[${q}]`;
      if (!isObject(qa)) throw new DatasetError(`${qaWhere} must be an object {question, answer, evidence, category}`);
      const question = text(qa.question, `${qaWhere}.question`);
      const category = qa.category;
      if (typeof category !== 'number' && typeof category !== 'string') throw new DatasetError(`${qaWhere}.category must be a number (1 to 5), got ${describe(category)}`);
      let answer: string;
      if (qa.answer !== undefined && qa.answer !== null) answer = answerText(qa.answer, `${qaWhere}.answer`);
      else if (qa.adversarial_answer !== undefined) {
        // a question the conversation does not answer: the right answer says so
        answer = `The conversation does not say; an answer such as "${answerText(qa.adversarial_answer, `${qaWhere}.adversarial_answer`)}" is wrong.`;
      } else throw new DatasetError(`${qaWhere} has neither "answer" nor "adversarial_answer"`);
      // asked through the speaker it names (speaker_a when it names both or neither)
      const namesA = mentions(question, speakerA);
      const namesB = mentions(question, speakerB);
      const peerId = namesB && !namesA ? peers.get(speakerB)! : peers.get(speakerA)!;
      questions.push({ id: `${groupId}-q${q + 1}`, groupId, category: String(category), question, query: question, answer, peerId });
    });
  });
  return { format: 'locomo', groups, questions };
}

function mentions(question: string, name: string): boolean {
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(^|[^\\p{L}\\p{N}])${escaped}($|[^\\p{L}\\p{N}])`, 'iu').test(question);
}

function readLongMemEval(items: unknown[]): EvalDataset {
  const groups: EvalGroup[] = [];
  const questions: EvalQuestion[] = [];
  const seen = new Set<string>();
  items.forEach((item, index) => {
    const where = `question ${index + 1}`;
    if (!isObject(item)) throw new DatasetError(`${where} must be an object, as LongMemEval questions are`);
    const questionId = text(item.question_id, `${where}.question_id`);
    const groupId = idPart(questionId);
    if (seen.has(groupId)) throw new DatasetError(`${where}: question_id "${questionId}" appears twice`);
    seen.add(groupId);
    const question = text(item.question, `${where}.question`);
    const answer = answerText(item.answer, `${where}.answer`);
    const category = text(item.question_type, `${where}.question_type`);
    const sessionsIn = item.haystack_sessions;
    const dates = item.haystack_dates;
    if (!Array.isArray(sessionsIn)) throw new DatasetError(`${where}.haystack_sessions must be a list of sessions`);
    if (!Array.isArray(dates) || dates.length !== sessionsIn.length) throw new DatasetError(`${where}.haystack_dates must be a list with one date per session (${sessionsIn.length})`);
    const ids = item.haystack_session_ids;
    if (ids !== undefined && (!Array.isArray(ids) || ids.length !== sessionsIn.length)) throw new DatasetError(`${where}.haystack_session_ids must be a list with one id per session (${sessionsIn.length})`);
    const user = `user-${groupId}`;
    const assistant = `assistant-${groupId}`;
    const sessionIds = new Set<string>();
    const sessions = sessionsIn.map((turns, s): EvalSession => {
      const sessionWhere = `${where}.haystack_sessions[${s}]`;
      if (!Array.isArray(turns)) throw new DatasetError(`${sessionWhere} must be a list of turns {role, content}`);
      const start = parseLongMemEvalDate(text(dates[s], `${where}.haystack_dates[${s}]`), `${where}.haystack_dates[${s}]`);
      let id = `${groupId}-${ids === undefined ? `s${s + 1}` : idPart(text((ids as unknown[])[s], `${where}.haystack_session_ids[${s}]`))}`.slice(0, 500);
      if (sessionIds.has(id)) id = `${id}-${s + 1}`;
      sessionIds.add(id);
      const messages: EvalMessage[] = [];
      turns.forEach((turn, t) => {
        const turnWhere = `${sessionWhere}[${t}]`;
        if (!isObject(turn)) throw new DatasetError(`${turnWhere} must be an object {role, content}`);
        const role = text(turn.role, `${turnWhere}.role`);
        if (role !== 'user' && role !== 'assistant') throw new DatasetError(`${turnWhere}.role is "${role}", not user or assistant`);
        addTurn(messages, role === 'user' ? user : assistant, text(turn.content, `${turnWhere}.content`), start);
      });
      return { id, peerIds: [user, assistant], messages };
    });
    groups.push({ id: groupId, sessions });
    // the question is asked on its own date: "how many days ago" needs it
    const date = item.question_date === undefined || item.question_date === null ? undefined : text(item.question_date, `${where}.question_date`);
    const query = date === undefined ? question : `(Asked on ${date}.) ${question}`;
    questions.push({ id: groupId, groupId, category, question, query, answer, peerId: user });
  });
  return { format: 'longmemeval', groups, questions };
}
