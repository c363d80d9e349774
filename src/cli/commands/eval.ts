import { createHash } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { DatasetError, idPart, readDataset, type EvalDataset, type EvalQuestion } from './eval-datasets.js';
import { judge, JudgeError, type Judgement, type JudgeSettings } from './eval-judge.js';
import { buildReport, printTable, type Prices } from './eval-report.js';
import { Progress } from './portability.js';

/*
 * `engram eval`: a dataset file run end to end against a running Engram (docs/evaluation.md).
 * Its sessions are stored with their dates, the queue is waited for, each question is asked
 * through peer chat and the answer judged; a state file records every step done, so a run that
 * stops continues where it stopped without storing or asking anything twice.
 */

export interface EvalOptions {
  file: string;
  url: string;
  apiKey?: string;
  workspace?: string;
  state?: string;
  limit?: number;
  reasoningLevel?: string;
  judge: JudgeSettings;
  prices: Prices;
  format: 'table' | 'json';
  jsonFile?: string;
  /** Milliseconds between queue status reads. */
  pollMs?: number;
}

export interface Tokens {
  input: number;
  output: number;
}

export interface Answer {
  answer: string;
  ms: number;
  /** Engram's model tokens for the chat (from /metrics), null when the server does not serve them. */
  tokens: Tokens | null;
}

export interface EvalState {
  version: 1;
  /** SHA-256 of the dataset file: a state file goes with one file and one workspace. */
  dataset: string;
  workspace: string;
  format: string;
  ingest: {
    /** Groups stored and processed (the queue drained after them). */
    groups: string[];
    /** Sessions whose messages are all stored. */
    sessions: string[];
    messages: number;
    seconds: number;
    queueSeconds: number;
    /** Model tokens Engram used meanwhile; null once a part of it could not be measured. */
    tokens: Tokens | null;
    /** The model token counters when the storing still going on began. */
    pending?: { before: Tokens | null };
  };
  answers: Record<string, Answer>;
  verdicts: Record<string, Judgement>;
}

/** Engram refused or could not be reached (exit 1; the state file keeps what was done). */
class EngramError extends Error {}

/** A state file that cannot be used for this run (exit 2). */
class StateError extends Error {}

const MESSAGES_PER_REQUEST = 100;
const CHARS_PER_REQUEST = 400_000;

export const defaultWorkspace = (file: string): string => `eval-${idPart(basename(file).replace(/\.json$/i, ''))}`.slice(0, 100);

function loadState(path: string, fresh: EvalState): EvalState {
  if (!existsSync(path)) return fresh;
  let state: EvalState;
  try {
    state = JSON.parse(readFileSync(path, 'utf8')) as EvalState;
  } catch (error) {
    throw new StateError(`the state file ${path} is not readable JSON (${error instanceof Error ? error.message : String(error)}); move it away to start again`);
  }
  if (state.version !== 1 || state.dataset !== fresh.dataset || state.workspace !== fresh.workspace) {
    throw new StateError(`the state file ${path} belongs to another dataset file or workspace; name another with --state, or move it away to start again`);
  }
  return state;
}

function saveState(path: string, state: EvalState): void {
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, JSON.stringify(state));
  renameSync(temporary, path);
}

/** Sums the counters of `name` in a Prometheus text, by the value of `label` (all values when absent). */
export function sumCounter(text: string, name: string, label?: { name: string; value: string }): number {
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name) || (line[name.length] !== '{' && line[name.length] !== ' ')) continue;
    if (label !== undefined && !line.includes(`${label.name}="${label.value}"`)) continue;
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (Number.isFinite(value)) total += value;
  }
  return total;
}

const minus = (after: Tokens | null, before: Tokens | null): Tokens | null => {
  if (after === null || before === null) return null;
  const delta = { input: after.input - before.input, output: after.output - before.output };
  // counters that went back: the server restarted meanwhile, the count is lost
  return delta.input < 0 || delta.output < 0 ? null : delta;
};

const plus = (a: Tokens | null, b: Tokens | null): Tokens | null => (a === null || b === null ? null : { input: a.input + b.input, output: a.output + b.output });

class Engram {
  constructor(
    private readonly base: string,
    private readonly apiKey: string | undefined,
  ) {}

  async request(method: string, path: string, body?: unknown, accept: number[] = []): Promise<{ status: number; text: string }> {
    const headers: Record<string, string> = {};
    if (this.apiKey !== undefined && this.apiKey !== '') headers.authorization = `Bearer ${this.apiKey}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    try {
      response = await fetch(`${this.base}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    } catch (error) {
      const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : error instanceof Error ? error.message : String(error);
      throw new EngramError(`cannot reach Engram at ${this.base} (${cause}); is it running? --url names the server`);
    }
    const text = await response.text();
    if (!response.ok && !accept.includes(response.status)) throw new EngramError(`${method} ${path} answered ${response.status}: ${text.slice(0, 500)}`);
    return { status: response.status, text };
  }

  async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const { text } = await this.request(method, path, body);
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new EngramError(`${method} ${path} answered with something other than JSON: ${text.slice(0, 200)}`);
    }
  }

  /** A counter pair of /metrics, or null when the server does not serve metrics (METRICS_ENABLED=false). */
  async tokens(name: 'model' | 'chat'): Promise<Tokens | null> {
    const { status, text } = await this.request('GET', '/metrics', undefined, [401, 403, 404]);
    if (status !== 200) return null;
    if (name === 'model') return { input: sumCounter(text, 'engram_model_input_tokens_total'), output: sumCounter(text, 'engram_model_output_tokens_total') };
    return {
      input: sumCounter(text, 'engram_chat_tokens_total', { name: 'direction', value: 'input' }),
      output: sumCounter(text, 'engram_chat_tokens_total', { name: 'direction', value: 'output' }),
    };
  }
}

const path = (...parts: string[]) => parts.map(encodeURIComponent).join('/');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Stores the sessions of `groups` not stored yet; a session stored in part continues after its last stored message. */
async function ingest(engram: Engram, dataset: EvalDataset, groups: string[], state: EvalState, save: () => void, workspace: string): Promise<void> {
  const progress = new Progress('eval: storing');
  const wanted = dataset.groups.filter((group) => groups.includes(group.id));
  const sessions = wanted.flatMap((group) => group.sessions);
  const total = sessions.reduce((sum, session) => sum + session.messages.length, 0);
  const started = performance.now();
  let stored = 0;
  await engram.request('POST', '/v3/workspaces', { id: workspace });
  for (const session of sessions) {
    if (state.ingest.sessions.includes(session.id)) {
      stored += session.messages.length;
      continue;
    }
    await engram.request('POST', `/v3/workspaces/${path(workspace)}/sessions`, { id: session.id, peers: Object.fromEntries(session.peerIds.map((peer) => [peer, {}])) });
    // what the server holds is the truth: a run stopped after a write but before the state said so writes nothing twice
    const listed = await engram.json<{ total: number }>('POST', `/v3/workspaces/${path(workspace, 'sessions', session.id)}/messages/list?size=1`, {});
    let next = Math.min(listed.total, session.messages.length);
    stored += next;
    while (next < session.messages.length) {
      const batch = [];
      let chars = 0;
      for (let i = next; i < session.messages.length && batch.length < MESSAGES_PER_REQUEST; i++) {
        const message = session.messages[i];
        if (batch.length > 0 && chars + message.content.length > CHARS_PER_REQUEST) break;
        chars += message.content.length;
        batch.push({ peer_id: message.peerId, content: message.content, created_at: message.createdAt });
      }
      await engram.request('POST', `/v3/workspaces/${path(workspace, 'sessions', session.id)}/messages`, { messages: batch });
      next += batch.length;
      stored += batch.length;
      state.ingest.messages += batch.length;
      progress.show(`${stored}/${total} messages`, total === 0 ? undefined : stored / total);
    }
    state.ingest.sessions.push(session.id);
    save();
  }
  state.ingest.seconds += (performance.now() - started) / 1000;
  save();
  progress.done(`${total} messages of ${sessions.length} sessions stored`);
}

/** Waits until the workspace's queue has no pending or running work. */
async function drain(engram: Engram, workspace: string, pollMs: number): Promise<number> {
  const progress = new Progress('eval: queue');
  const started = performance.now();
  let lastChange = Date.now();
  let last = '';
  let warned = false;
  for (;;) {
    const status = await engram.json<{ total_work_units: number; completed_work_units: number; pending_work_units: number; in_progress_work_units: number }>(
      'GET',
      `/v3/workspaces/${path(workspace)}/queue/status`,
    );
    const open = status.pending_work_units + status.in_progress_work_units;
    const seconds = (performance.now() - started) / 1000;
    if (open === 0) {
      progress.done(`drained in ${seconds.toFixed(1)} s (${status.total_work_units} work units)`);
      return seconds;
    }
    const now = `${status.completed_work_units}/${status.total_work_units}`;
    if (now !== last) [last, lastChange] = [now, Date.now()];
    progress.show(`${now} work units done, ${status.in_progress_work_units} running, ${status.pending_work_units} waiting (${seconds.toFixed(0)} s)`, status.total_work_units === 0 ? undefined : status.completed_work_units / status.total_work_units);
    if (!warned && Date.now() - lastChange > 120_000) {
      warned = true;
      process.stderr.write('\neval: the queue has not moved for 2 minutes: does the server run workers (RUN_WORKERS) with a deriver model? Its queue/jobs/list route names failing jobs.\n');
    }
    await sleep(pollMs);
  }
}

/** Runs the evaluation; resolves to the exit code. */
export async function runEval(options: EvalOptions): Promise<number> {
  let source: string;
  try {
    source = readFileSync(options.file, 'utf8');
  } catch (error) {
    console.error(`engram: cannot read ${options.file}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'there is no such file' : (error as Error).message}`);
    return 2;
  }
  const workspace = options.workspace ?? defaultWorkspace(options.file);
  const statePath = options.state ?? `${workspace}.eval-state.json`;
  let dataset: EvalDataset;
  let state: EvalState;
  try {
    dataset = readDataset(source);
    const fresh: EvalState = {
      version: 1,
      dataset: createHash('sha256').update(source).digest('hex'),
      workspace,
      format: dataset.format,
      ingest: { groups: [], sessions: [], messages: 0, seconds: 0, queueSeconds: 0, tokens: { input: 0, output: 0 } },
      answers: {},
      verdicts: {},
    };
    state = loadState(statePath, fresh);
  } catch (error) {
    if (!(error instanceof DatasetError) && !(error instanceof StateError)) throw error;
    console.error(`engram: ${error instanceof DatasetError ? `${options.file}: ` : ''}${error.message}`);
    return 2;
  }
  const questions: EvalQuestion[] = options.limit === undefined ? dataset.questions : dataset.questions.slice(0, options.limit);
  const save = () => saveState(statePath, state);
  const engram = new Engram(options.url.replace(/\/+$/, ''), options.apiKey);
  const answered = questions.filter((q) => state.verdicts[q.id] !== undefined).length;
  process.stderr.write(`eval: ${dataset.format} file, ${questions.length} of ${dataset.questions.length} questions (${answered} judged before), workspace ${workspace}, state ${statePath}\n`);

  try {
    const needed = [...new Set(questions.map((q) => q.groupId))].filter((group) => !state.ingest.groups.includes(group));
    if (needed.length > 0) {
      state.ingest.pending ??= { before: await engram.tokens('model') };
      save();
      await ingest(engram, dataset, needed, state, save, workspace);
      state.ingest.queueSeconds += await drain(engram, workspace, options.pollMs ?? 1000);
      state.ingest.tokens = plus(state.ingest.tokens, minus(await engram.tokens('model'), state.ingest.pending.before));
      state.ingest.groups.push(...needed);
      delete state.ingest.pending;
      save();
    }

    const progress = new Progress('eval: questions');
    let done = 0;
    for (const question of questions) {
      if (state.answers[question.id] === undefined) {
        const before = await engram.tokens('chat');
        const started = performance.now();
        const body: Record<string, unknown> = { query: question.query };
        if (options.reasoningLevel !== undefined) body.reasoning_level = options.reasoningLevel;
        const reply = await engram.json<{ content?: unknown }>('POST', `/v3/workspaces/${path(workspace, 'peers', question.peerId)}/chat`, body);
        const ms = performance.now() - started;
        state.answers[question.id] = { answer: typeof reply.content === 'string' ? reply.content : '', ms, tokens: minus(await engram.tokens('chat'), before) };
        save();
      }
      if (state.verdicts[question.id] === undefined) {
        state.verdicts[question.id] = await judge(options.judge, { question: question.question, reference: question.answer, answer: state.answers[question.id].answer });
        save();
      }
      done++;
      progress.show(`${done}/${questions.length}`, done / questions.length);
    }
    progress.done(`${questions.length} asked and judged`);
  } catch (error) {
    if (error instanceof EngramError || error instanceof JudgeError) {
      console.error(`\nengram: eval stopped: ${error.message}\n(what was done is kept in ${statePath}: run the same command again to continue)`);
      return 1;
    }
    throw error;
  }

  const report = buildReport({ dataset, questions, state, file: options.file, workspace, url: options.url, judgeModel: options.judge.model, prices: options.prices });
  if (options.jsonFile !== undefined) writeFileSync(options.jsonFile, `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(options.format === 'json' ? `${JSON.stringify(report, null, 2)}\n` : printTable(report));
  return 0;
}
