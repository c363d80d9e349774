/*
 * Links between the documents point somewhere: every relative link of README.md, docs/**\/*.md and
 * bench/README.md names a file (or folder) that exists, and its `#anchor`, when it has one, a
 * heading of that markdown file, slugged as GitHub slugs headings.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function markdownUnder(folder: string): string[] {
  return readdirSync(join(ROOT, folder), { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return markdownUnder(path);
    return entry.name.endsWith('.md') ? [path] : [];
  });
}

const DOCUMENTS = ['README.md', 'bench/README.md', ...markdownUnder('docs')].sort();

/** The text outside fenced blocks. */
const unfenced = (markdown: string): string => markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');

/** The text outside fenced blocks and inline code, where a link is a link. */
const prose = (markdown: string): string => unfenced(markdown).replace(/`[^`\n]*`/g, '');

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
export function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/`/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of a markdown file's headings; a repeated heading gets -1, -2 ... as on GitHub. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const match of unfenced(markdown).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = slug(match[1].replace(/\[([^\]]*)\]\([^)]*\)/g, '$1'));
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** The relative links of a markdown text: `[text](target)` and `[label]: target`. */
export function linksOf(markdown: string): string[] {
  const text = prose(markdown);
  const inline = [...text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((match) => match[1]);
  const references = [...text.matchAll(/^\s*\[[^\]]+\]:\s*(\S+)/gm)].map((match) => match[1]);
  return [...inline, ...references].filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

/** What is wrong with one link of `file`, or undefined when it points at something. */
export function brokenLink(file: string, target: string, read: (path: string) => string | undefined): string | undefined {
  const [pathPart, anchor] = target.split('#', 2) as [string, string | undefined];
  const path = pathPart === '' ? file : join(dirname(file), decodeURIComponent(pathPart));
  if (relative(ROOT, join(ROOT, path)).startsWith('..')) return `${target}: outside the repository`;
  const text = read(path);
  if (text === undefined) return `${target}: no such file`;
  if (anchor === undefined || anchor === '') return undefined;
  if (!path.endsWith('.md')) return `${target}: an anchor into a file that is not markdown`;
  return anchorsOf(text).has(anchor.toLowerCase()) ? undefined : `${target}: no heading "#${anchor}" in ${path}`;
}

const readFromDisk = (path: string): string | undefined => {
  const full = join(ROOT, path);
  if (!existsSync(full)) return undefined;
  return statSync(full).isDirectory() ? '' : readFileSync(full, 'utf8');
};

describe('links between the documents', () => {
  it('every relative link and anchor of README.md, docs/ and bench/README.md points at a file and heading that exist', () => {
    const broken = DOCUMENTS.flatMap((file) => linksOf(readFileSync(join(ROOT, file), 'utf8')).flatMap((target) => brokenLink(file, target, readFromDisk) ?? []).map((problem) => `${file}: ${problem}`));
    expect(broken).toEqual([]);
    // the documents do link to each other: a pattern that found nothing would pass for nothing
    expect(DOCUMENTS.reduce((sum, file) => sum + linksOf(readFileSync(join(ROOT, file), 'utf8')).length, 0)).toBeGreaterThan(30);
  });

  it('finds a broken file, a broken anchor, and passes a good link, as GitHub reads them', () => {
    const files: Record<string, string> = {
      'docs/a.md': '# A page\n\n## Scopes: memory seen through a set of sessions\n\n## `engram` command\n\n## Twice\n\n## Twice\n',
      'README.md': '# Engram\n',
    };
    const read = (path: string) => files[path];
    expect(brokenLink('README.md', 'docs/a.md', read)).toBeUndefined();
    expect(brokenLink('README.md', 'docs/a.md#scopes-memory-seen-through-a-set-of-sessions', read)).toBeUndefined();
    expect(brokenLink('README.md', 'docs/a.md#engram-command', read)).toBeUndefined();
    expect(brokenLink('README.md', 'docs/a.md#twice-1', read)).toBeUndefined();
    expect(brokenLink('docs/a.md', '../README.md#engram', read)).toBeUndefined();
    expect(brokenLink('docs/a.md', '#a-page', read)).toBeUndefined();
    expect(brokenLink('README.md', 'docs/b.md', read)).toContain('no such file');
    expect(brokenLink('README.md', 'docs/a.md#scopes', read)).toContain('no heading');
    expect(brokenLink('docs/a.md', '#twice-2', read)).toContain('no heading');
  });

  it('reads links outside code only, and leaves web addresses alone', () => {
    const markdown = '[a](docs/a.md) [b](docs/b.md "B") [web](https://example.com/x.md)\n\n[ref]: docs/c.md\n\n`[no](x.md)`\n\n```md\n[no](y.md)\n```\n';
    expect(linksOf(markdown)).toEqual(['docs/a.md', 'docs/b.md', 'docs/c.md']);
  });
});
