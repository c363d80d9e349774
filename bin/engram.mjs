#!/usr/bin/env node
// The `engram` command (package.json "bin"; `npx engram`, and after `npm link` or a global install
// of a clone). It runs the built server, dist/cli/main.js, when dist/ is there and no source is
// newer than it; otherwise, in a clone whose dev dependencies are installed, the TypeScript
// sources of src/ through tsx (about a second more at start-up); otherwise it says how to build.
// So the command works from a fresh clone in any order: before `npm run build`, after it, and
// after an edit not yet built. It is plain JavaScript and committed, so npm can always link it.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BUILT = join(ROOT, 'dist', 'cli', 'main.js');
const SOURCE = join(ROOT, 'src', 'cli', 'main.ts');
// set in the processes a server's primary forks (node:cluster): only the primary says why it chose
const forked = process.env.NODE_UNIQUE_ID !== undefined;

/** The newest modification time of a server file under `folder` (tests are not built; 0 when none). */
function newestUnder(folder) {
  let newest = 0;
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestUnder(path));
    else if (!entry.name.endsWith('.test.ts')) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

/** Whether tsx can be loaded from here (a clone with its dev dependencies installed). */
function hasTsx() {
  try {
    createRequire(import.meta.url).resolve('tsx/esm/api');
    return true;
  } catch {
    return false;
  }
}

const built = existsSync(BUILT);
const sources = existsSync(SOURCE) && hasTsx();
const stale = built && sources && newestUnder(join(ROOT, 'src')) > statSync(BUILT).mtimeMs;

if (built && !stale) {
  await import(pathToFileURL(BUILT).href);
} else if (sources) {
  if (stale && !forked) console.error('engram: src/ is newer than dist/ (`npm run build` builds it again); running the sources through tsx');
  const { register } = await import('tsx/esm/api');
  register();
  await import(pathToFileURL(SOURCE).href);
} else {
  console.error(
    `engram: ${BUILT} is missing. Build it in ${ROOT} with \`npm ci && npm run build\` ` +
      '(npm ci installs the dev dependencies that build it, and with them `engram` also runs the sources directly).',
  );
  process.exit(1);
}
