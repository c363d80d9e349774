import type { EvalDataset, EvalQuestion } from './eval-datasets.js';
import type { EvalState, Tokens } from './eval.js';

/** Prices in US dollars per million tokens; a cost is shown only with a price given. */
export interface Prices {
  input?: number;
  output?: number;
  judgeInput?: number;
  judgeOutput?: number;
}

export interface CategoryRow {
  questions: number;
  correct: number;
  incorrect: number;
  malformed: number;
  /** correct / questions: a malformed verdict counts as not correct. */
  accuracy: number;
}

export interface EvalReport {
  format: string;
  dataset: string;
  workspace: string;
  url: string;
  judge_model: string;
  questions: number;
  accuracy: number;
  correct: number;
  incorrect: number;
  malformed: number;
  categories: Record<string, CategoryRow>;
  per_question: {
    ms_mean: number;
    ms_median: number;
    /** Engram's tokens per chat (from /metrics), null when the server does not serve them. */
    input_tokens_mean: number | null;
    output_tokens_mean: number | null;
    cost_mean: number | null;
  };
  ingest: { messages: number; seconds: number; queue_seconds: number; input_tokens: number | null; output_tokens: number | null; cost: number | null };
  judge: { input_tokens: number | null; output_tokens: number | null; cost: number | null };
  items: {
    id: string;
    category: string;
    question: string;
    reference: string;
    answer: string;
    verdict: string;
    reason: string;
    /** For a malformed verdict: the start of what the judge returned. */
    raw?: string;
    ms: number;
    input_tokens: number | null;
    output_tokens: number | null;
    cost: number | null;
  }[];
}

function cost(tokens: Tokens | null, input: number | undefined, output: number | undefined): number | null {
  if (tokens === null || (input === undefined && output === undefined)) return null;
  return (tokens.input * (input ?? 0) + tokens.output * (output ?? 0)) / 1_000_000;
}

const mean = (values: number[]): number => (values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length);

function median(values: number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** Categories in order: numbers by value, then names. */
const byCategory = (a: string, b: string): number => {
  const [x, y] = [Number(a), Number(b)];
  if (Number.isFinite(x) && Number.isFinite(y)) return x - y;
  if (Number.isFinite(x) !== Number.isFinite(y)) return Number.isFinite(x) ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
};

function row(verdicts: string[]): CategoryRow {
  const correct = verdicts.filter((v) => v === 'correct').length;
  const incorrect = verdicts.filter((v) => v === 'incorrect').length;
  const malformed = verdicts.filter((v) => v === 'malformed').length;
  return { questions: verdicts.length, correct, incorrect, malformed, accuracy: verdicts.length === 0 ? 0 : correct / verdicts.length };
}

export function buildReport(input: {
  dataset: EvalDataset;
  questions: EvalQuestion[];
  state: EvalState;
  file: string;
  workspace: string;
  url: string;
  judgeModel: string;
  prices: Prices;
}): EvalReport {
  const { state, prices } = input;
  const items = input.questions.map((q) => {
    const answer = state.answers[q.id];
    const verdict = state.verdicts[q.id];
    return {
      id: q.id,
      category: q.category,
      question: q.question,
      reference: q.answer,
      answer: answer.answer,
      verdict: verdict.verdict,
      reason: verdict.reason,
      ...(verdict.raw === undefined ? {} : { raw: verdict.raw }),
      ms: Math.round(answer.ms),
      input_tokens: answer.tokens?.input ?? null,
      output_tokens: answer.tokens?.output ?? null,
      cost: cost(answer.tokens, prices.input, prices.output),
    };
  });
  const categories: Record<string, CategoryRow> = {};
  for (const category of [...new Set(items.map((i) => i.category))].sort(byCategory)) {
    categories[category] = row(items.filter((i) => i.category === category).map((i) => i.verdict));
  }
  const all = row(items.map((i) => i.verdict));
  const known = items.every((i) => i.input_tokens !== null);
  const judgeTokens = input.questions.reduce<Tokens | null>((sum, q) => {
    const tokens = state.verdicts[q.id].tokens;
    return sum === null || tokens === null ? null : { input: sum.input + tokens.input, output: sum.output + tokens.output };
  }, { input: 0, output: 0 });
  const costs = items.map((i) => i.cost);
  return {
    format: input.dataset.format,
    dataset: input.file,
    workspace: input.workspace,
    url: input.url,
    judge_model: input.judgeModel,
    ...all,
    categories,
    per_question: {
      ms_mean: Math.round(mean(items.map((i) => i.ms))),
      ms_median: Math.round(median(items.map((i) => i.ms))),
      input_tokens_mean: known ? mean(items.map((i) => i.input_tokens!)) : null,
      output_tokens_mean: known ? mean(items.map((i) => i.output_tokens!)) : null,
      cost_mean: costs.every((c) => c !== null) && costs.length > 0 ? mean(costs as number[]) : null,
    },
    ingest: {
      messages: state.ingest.messages,
      seconds: Number(state.ingest.seconds.toFixed(1)),
      queue_seconds: Number(state.ingest.queueSeconds.toFixed(1)),
      input_tokens: state.ingest.tokens?.input ?? null,
      output_tokens: state.ingest.tokens?.output ?? null,
      cost: cost(state.ingest.tokens, prices.input, prices.output),
    },
    judge: { input_tokens: judgeTokens?.input ?? null, output_tokens: judgeTokens?.output ?? null, cost: cost(judgeTokens, prices.judgeInput, prices.judgeOutput) },
    items,
  };
}

const percent = (value: number): string => `${(value * 100).toFixed(1)}%`;
const dollars = (value: number | null): string => (value === null ? 'n/a (no price given)' : `$${value.toFixed(value < 0.01 ? 6 : 4)}`);
const tokens = (input: number | null, output: number | null): string =>
  input === null || output === null ? 'n/a (the server does not serve /metrics)' : `${Math.round(input).toLocaleString('en')} in + ${Math.round(output).toLocaleString('en')} out`;

/** The report as a table for a terminal. */
export function printTable(report: EvalReport): string {
  const header = ['category', 'questions', 'correct', 'incorrect', 'malformed', 'accuracy'];
  const rows = [
    ...Object.entries(report.categories).map(([name, c]) => [name, String(c.questions), String(c.correct), String(c.incorrect), String(c.malformed), percent(c.accuracy)]),
    ['all', String(report.questions), String(report.correct), String(report.incorrect), String(report.malformed), percent(report.accuracy)],
  ];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) => cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  ');
  const q = report.per_question;
  const lines = [
    `engram eval: ${report.format}, ${report.dataset}, ${report.questions} questions, workspace ${report.workspace} at ${report.url}, judge ${report.judge_model}`,
    '',
    line(header),
    ...rows.slice(0, -1).map(line),
    line(rows[rows.length - 1]),
    '',
    `per question: ${q.ms_mean} ms mean, ${q.ms_median} ms median; Engram tokens ${tokens(q.input_tokens_mean, q.output_tokens_mean)} mean; cost ${dollars(q.cost_mean)} mean`,
    `storing: ${report.ingest.messages} messages in ${report.ingest.seconds} s, queue drained in ${report.ingest.queue_seconds} s; Engram tokens ${tokens(report.ingest.input_tokens, report.ingest.output_tokens)}; cost ${dollars(report.ingest.cost)}`,
    `judge: tokens ${tokens(report.judge.input_tokens, report.judge.output_tokens).replace('the server does not serve /metrics', 'the judge reported no usage')}; cost ${dollars(report.judge.cost)}`,
  ];
  const malformed = report.items.filter((i) => i.verdict === 'malformed');
  if (malformed.length > 0) {
    lines.push('', `malformed verdicts (${malformed.length}, counted as not correct):`);
    for (const item of malformed) lines.push(`  ${item.id}: ${item.reason}${item.raw === undefined ? '' : `: ${JSON.stringify(item.raw.slice(0, 120))}`}`);
  }
  return `${lines.join('\n')}\n`;
}
