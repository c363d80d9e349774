import type { Config } from '../../config/config.js';
import type { EvalOptions } from './eval.js';

const LEVELS = ['minimal', 'low', 'medium', 'high', 'max'];
export const DEFAULT_JUDGE_BASE_URL = 'https://api.openai.com/v1';

/**
 * `engram eval`'s options checked: the run's options, or what is wrong (exit 2). `config` is
 * read only when --url is left out (the local server's port comes from the settings).
 */
export function evalOptions(options: Record<string, string>, file: string, config: () => Config): EvalOptions | string {
  const limit = options['--limit'];
  if (limit !== undefined && !(/^\d+$/.test(limit) && Number(limit) >= 1)) return `--limit must be a whole number from 1, got "${limit}"`;
  const prices: Record<string, number | undefined> = {};
  for (const name of ['--price-input', '--price-output', '--judge-price-input', '--judge-price-output']) {
    const value = options[name];
    if (value === undefined) continue;
    const number = Number(value);
    if (value.trim() === '' || !Number.isFinite(number) || number < 0) return `${name} must be a price in US dollars per million tokens (a number from 0), got "${value}"`;
    prices[name] = number;
  }
  const format = options['--format'] ?? 'table';
  if (format !== 'table' && format !== 'json') return `--format must be table or json, got "${format}"`;
  const workspace = options['--workspace'];
  if (workspace !== undefined && !/^[A-Za-z0-9_-]{1,100}$/.test(workspace)) return `--workspace must be an id of letters, digits, _ and - (at most 100), got "${workspace}"`;
  const level = options['--reasoning-level'];
  if (level !== undefined && !LEVELS.includes(level)) return `--reasoning-level must be one of ${LEVELS.join(', ')}, got "${level}"`;
  const model = options['--judge-model'] ?? process.env.EVAL_JUDGE_MODEL;
  if (model === undefined || model === '') return 'eval needs a judge model: --judge-model <model> (or EVAL_JUDGE_MODEL), with --judge-base-url for an endpoint other than OpenAI\'s';
  const judgeBaseUrl = options['--judge-base-url'] ?? process.env.EVAL_JUDGE_BASE_URL ?? DEFAULT_JUDGE_BASE_URL;
  if (!/^https?:\/\/[^/]/.test(judgeBaseUrl)) return `--judge-base-url needs an http(s) URL, got "${judgeBaseUrl}"`;
  let url = options['--url'];
  if (url === undefined) {
    const { host, port } = config();
    const local = host === '0.0.0.0' || host === '::' || host === '' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
    url = `http://${local}:${port}`;
  }
  if (!/^https?:\/\/[^/]/.test(url)) return `--url needs the http(s) URL of a running Engram, got "${url}"`;
  return {
    file,
    url,
    apiKey: options['--api-key'] ?? process.env.ENGRAM_API_KEY,
    workspace,
    state: options['--state'],
    limit: limit === undefined ? undefined : Number(limit),
    reasoningLevel: level,
    judge: { baseUrl: judgeBaseUrl, model, apiKey: options['--judge-api-key'] ?? process.env.EVAL_JUDGE_API_KEY },
    prices: { input: prices['--price-input'], output: prices['--price-output'], judgeInput: prices['--judge-price-input'], judgeOutput: prices['--judge-price-output'] },
    format,
    jsonFile: options['--json'],
    pollMs: 500,
  };
}
