import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { configurationReference, envExample } from '../../src/config/settings-docs.js';
import { declaredNames, SETTINGS } from '../../src/config/settings.js';

/*
 * The settings table (src/config/settings.ts) is the one declaration of every setting: the code
 * reads no name it lacks, it declares no name the code does not read, and the files generated
 * from it are current.
 */

const root = fileURLToPath(new URL('../../', import.meta.url));

/** Every name loadConfig asks the environment for, given `env`. */
function namesRead(env: Record<string, string> = {}): Set<string> {
  const asked = new Set<string>();
  const recording = new Proxy(env, {
    get(target, key) {
      if (typeof key === 'string') asked.add(key);
      return target[key as string];
    },
  });
  loadConfig(recording, '/nonexistent/.env');
  return asked;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.(ts|mjs)$/.test(entry.name) && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

describe('the settings table', () => {
  const declared = new Set(declaredNames());

  it('declares every name the configuration reads, in any case the reference accepts', () => {
    const read = namesRead();
    // the reference reads dialectic level names in either case: __low__ and __LOW__
    const undeclared = [...read].filter((name) => !declared.has(name) && !declared.has(name.replace(/^DIALECTIC_LEVELS__([A-Z]+)__/, (_m, level: string) => `DIALECTIC_LEVELS__${level.toLowerCase()}__`)));
    expect(undeclared).toEqual([]);
    expect(read.size).toBeGreaterThan(100);
  });

  it('declares no server setting the configuration does not read', () => {
    const read = namesRead();
    const unread = [...declared].filter((name) => !read.has(name) && !(name in SETTINGS && SETTINGS[name as keyof typeof SETTINGS].group === 'command line'));
    expect(unread).toEqual([]);
  });

  it('declares every name read straight from process.env anywhere in the code', () => {
    const direct = new Set<string>();
    for (const file of [...sourceFiles(join(root, 'src')), ...sourceFiles(join(root, 'bin'))]) {
      for (const match of readFileSync(file, 'utf8').matchAll(/process\.env(?:\.([A-Z][A-Z0-9_]*)|\[['"]([A-Z][A-Z0-9_]*)['"]\])/g)) direct.add(match[1] ?? match[2]);
    }
    expect(direct.size).toBeGreaterThan(0);
    // Node's own: cluster sets NODE_UNIQUE_ID in the processes it forks
    const node = new Set(['NODE_UNIQUE_ID']);
    expect([...direct].filter((name) => !declared.has(name) && !node.has(name))).toEqual([]);
  });

  it('.env.example and docs/configuration.md are what the table generates (npm run docs:settings writes them)', () => {
    expect(readFileSync(join(root, '.env.example'), 'utf8'), 'stale .env.example: run npm run docs:settings').toBe(envExample());
    expect(readFileSync(join(root, 'docs/configuration.md'), 'utf8'), 'stale docs/configuration.md: run npm run docs:settings').toBe(configurationReference());
  });

  it(".env.example holds every server setting, each at its default: loading it changes nothing", () => {
    const example = readFileSync(join(root, '.env.example'), 'utf8');
    const listed = new Set([...example.matchAll(/^([A-Z][A-Z0-9_]*)=/gm)].map((match) => match[1]));
    const flat = Object.entries(SETTINGS).filter(([, spec]) => spec.group !== 'not read').map(([name]) => name);
    expect(flat.filter((name) => !listed.has(name))).toEqual([]);
    expect(loadConfig({}, join(root, '.env.example'))).toEqual(loadConfig({}, '/nonexistent/.env'));
  });

  it('a value outside what the table allows is refused, naming the setting and the rule', () => {
    expect(() => loadConfig({ PORT: '70000', LOG_LEVEL: 'loud', WEBHOOK_ORDERED: 'perhaps' }, '/nonexistent/.env')).toThrow(
      /PORT must be an integer from 0 to 65535, got "70000"[\s\S]*LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "loud"[\s\S]*WEBHOOK_ORDERED must be true or false, got "perhaps"/,
    );
  });
});
