import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The shell blocks of README.md and docs/*.md, for the test that runs them (test/docs/runnable-docs.test.ts).
 *
 * Every block fenced as `sh`, `bash`, `shell` or `console` carries a marker on the line just
 * before its fence, an HTML comment that GitHub does not show:
 *
 *   <!-- doctest: run -->               its commands run in order; a `# ` line right after a
 *                                       command is that command's shown output, compared
 *   <!-- doctest: run; sqlite -->       runs on SQLite only (the PostgreSQL run skips it)
 *   <!-- doctest: run; given notes.md --> the folder has a small file of that name first
 *   <!-- doctest: serve -->             each line starts a server: it must answer /ready, then
 *                                       is stopped with SIGTERM
 *   <!-- doctest: skip: <reason> -->    not run in CI, and why
 */

export const SHELL_LANGUAGES = new Set(['sh', 'bash', 'shell', 'console']);

export type Marker = { kind: 'run' | 'serve'; sqliteOnly: boolean; given: string[] } | { kind: 'skip'; reason: string };

export interface DocBlock {
  /** Relative to the repository root. */
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  language: string;
  /** undefined: no marker (an error for a shell block); a string: a marker that does not parse. */
  marker: Marker | string | undefined;
  body: string;
}

export interface DocCommand {
  /** The command as the shell reads it (continuation lines joined). */
  text: string;
  /** The output shown after it (`# ` lines), without the `# `; empty when none is shown. */
  shown: string[];
}

const MARKER = /^<!--\s*doctest:\s*(.*?)\s*-->$/;

export function parseMarker(text: string): Marker | string {
  const skip = /^skip:\s*(.+)$/.exec(text);
  if (skip) return { kind: 'skip', reason: skip[1] };
  const [kind, ...options] = text.split(';').map((part) => part.trim());
  if (kind !== 'run' && kind !== 'serve') return text;
  const marker: Marker = { kind, sqliteOnly: false, given: [] };
  for (const option of options) {
    if (option === 'sqlite') marker.sqliteOnly = true;
    else if (/^given \S+$/.test(option)) marker.given.push(option.slice('given '.length));
    else return text;
  }
  return marker;
}

/** The fenced blocks of one markdown text, with the marker before each. */
export function blocksOf(file: string, markdown: string): DocBlock[] {
  const lines = markdown.split('\n');
  const blocks: DocBlock[] = [];
  for (let index = 0; index < lines.length; index++) {
    const open = /^(```+)\s*([\w-]*)/.exec(lines[index]);
    if (!open) continue;
    const fence = open[1];
    const end = lines.findIndex((line, at) => at > index && line.startsWith(fence) && line.trim() === fence);
    const close = end === -1 ? lines.length : end;
    const before = index > 0 ? MARKER.exec(lines[index - 1].trim()) : null;
    blocks.push({
      file,
      line: index + 1,
      language: open[2],
      marker: before ? parseMarker(before[1]) : undefined,
      body: lines.slice(index + 1, close).join('\n'),
    });
    index = close;
  }
  return blocks;
}

/** README.md then docs/*.md (by name), every fenced block. */
export function documentationBlocks(root: string): DocBlock[] {
  const files = ['README.md', ...readdirSync(join(root, 'docs')).filter((name) => name.endsWith('.md')).sort().map((name) => `docs/${name}`)];
  return files.flatMap((file) => blocksOf(file, readFileSync(join(root, file), 'utf8')));
}

/** A block's commands, each with the output shown after it. */
export function commandsOf(body: string): DocCommand[] {
  const commands: DocCommand[] = [];
  let pending = '';
  for (const line of body.split('\n')) {
    if (pending === '' && /^\s*#/.test(line)) {
      // a comment right after a command is its shown output; one elsewhere is prose
      const last = commands.at(-1);
      if (last !== undefined && /^# /.test(line)) last.shown.push(line.slice(2));
      continue;
    }
    if (pending === '' && line.trim() === '') {
      // a blank line ends a command's shown output
      if (commands.length > 0) commands.push({ text: '', shown: [] });
      continue;
    }
    pending += (pending === '' ? '' : '\n') + line;
    if (line.endsWith('\\')) continue;
    commands.push({ text: pending, shown: [] });
    pending = '';
  }
  if (pending !== '') commands.push({ text: pending, shown: [] });
  return commands.filter((command) => command.text !== '');
}

/** The shape of a JSON value: for objects their keys (recursively), for arrays their first item's. */
function shapeDifferences(shown: unknown, actual: unknown, path: string): string[] {
  const kind = (value: unknown) => (value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value);
  if (kind(shown) !== kind(actual)) return [`${path || 'the answer'} is ${kind(actual)}, shown as ${kind(shown)}`];
  if (Array.isArray(shown) && Array.isArray(actual)) {
    return shown.length > 0 && actual.length > 0 ? shapeDifferences(shown[0], actual[0], `${path}[0]`) : [];
  }
  if (kind(shown) !== 'object') return [];
  const differences: string[] = [];
  for (const [key, value] of Object.entries(shown as Record<string, unknown>)) {
    if (!Object.hasOwn(actual as object, key)) differences.push(`${path}.${key} is shown but not answered`);
    else differences.push(...shapeDifferences(value, (actual as Record<string, unknown>)[key], `${path}.${key}`));
  }
  return differences;
}

/**
 * Text with what varies from run to run replaced: paths (words with a `/`), sizes (`284.3 MB`),
 * and numbers and words that start with a digit (times, counts, dates, migration names).
 */
export function normalizeText(text: string): string {
  return text
    .split(/\s+/)
    .filter((word) => word !== '')
    .map((word) => (word.includes('/') ? '<path>' : word))
    .join(' ')
    .replace(/\d+(\.\d+)? [KMG]?B\b/g, '<size>')
    .replace(/\d[\w.:+-]*/g, '<n>');
}

/**
 * How a command's output differs from the output shown for it, in the parts that matter: JSON
 * shown must be answered with JSON of the same shape (field names and types; values may differ);
 * text shown must match once paths, sizes and numbers are set aside. Empty when it matches.
 */
export function outputDifferences(shown: string[], actual: string): string[] {
  const expected = shown.join('\n').trim();
  if (expected === '') return [];
  if (/^[[{]/.test(expected)) {
    let shownValue: unknown;
    try {
      shownValue = JSON.parse(expected);
    } catch {
      return [`the shown output is not JSON: ${expected}`];
    }
    let actualValue: unknown;
    try {
      actualValue = JSON.parse(actual.trim());
    } catch {
      return [`the answer is not JSON: ${actual.trim().slice(0, 500)}`];
    }
    return shapeDifferences(shownValue, actualValue, '');
  }
  return normalizeText(expected) === normalizeText(actual) ? [] : [`printed "${actual.trim().slice(0, 500)}", shown "${expected}"`];
}
