// One lint config for editor and CI. Besides the recommended rules it keeps the layers honest
// (STYLE: imports point cli -> app/main -> http/vN, jobs -> domain -> storage/store.ts).
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

const restrict = (files, patterns) => ({
  files,
  rules: { 'no-restricted-imports': ['error', { patterns }] },
});

/** What the domain may never import: HTTP, jobs, the processes, a dialect, a model transport, a vendor SDK. */
const DOMAIN_OUTSIDE = [
  { group: ['**/http/**', '**/jobs/**', '**/runtime/**', '../server/**', '../../server/**', '../cli/**', '../../cli/**', '../mcp/**', '../../mcp/**', '**/storage/sqlite/**', '**/storage/postgres/**', '**/storage/sql/**', 'fastify', 'pg', 'better-sqlite3'], message: 'The domain only imports storage/store.ts.' },
  { group: ['**/llm/**', '!**/llm/provider.js', 'ai', '@ai-sdk/*', 'openai', '@anthropic-ai/*', '@google/*'], message: 'The domain only imports llm/provider.ts.' },
];

/**
 * The domain's folders from the bottom up (docs/contributing.md, "Where code goes"): text and
 * search primitives, filters, the work stored data causes, messages, memory, reasoning, then the
 * resources that combine them. A folder imports the domain's root files and the layers below it.
 */
const DOMAIN_LAYERS = [
  ['text'],
  ['search', 'filters'],
  ['scheduling'],
  ['messages'],
  ['memory'],
  ['reasoning'],
  ['peers', 'sessions', 'scopes', 'queue', 'portability', 'v1', 'webhooks', 'workspaces'],
];

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'data/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      // NUL and other control characters are matched on purpose (contract §1.7, JSON text)
      'no-control-regex': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' }],
    },
  },
  // the plain scripts CI runs (scripts/*.mjs) and the `engram` command (bin/engram.mjs) are Node.js modules
  { files: ['scripts/**/*.mjs', 'bin/**/*.mjs'], languageOptions: { globals: globals.node } },
  // the inspector page runs in the browser (web/inspector, bundled by scripts/build.mjs)
  { files: ['web/**/*.js'], languageOptions: { globals: globals.browser } },
  // tests feed literals that lose precision on purpose (big JSON numbers)
  { files: ['**/*.test.ts'], rules: { 'no-loss-of-precision': 'off' } },
  // the domain knows no HTTP, no jobs, no dialect, no model transport and no vendor SDK; its
  // folders import only the layers below their own (DOMAIN_LAYERS), and its root files none
  restrict(['src/domain/**/*.ts'], DOMAIN_OUTSIDE),
  ...DOMAIN_LAYERS.map((layer, at) =>
    restrict(
      layer.map((folder) => `src/domain/${folder}/**/*.ts`),
      at === DOMAIN_LAYERS.length - 1
        ? DOMAIN_OUTSIDE
        : [...DOMAIN_OUTSIDE, { group: DOMAIN_LAYERS.slice(at + 1).flat().map((folder) => `../${folder}/**`), message: `src/domain/${layer.join(', ')} imports only the domain layers below it (eslint.config.js, DOMAIN_LAYERS).` }],
    ),
  ),
  restrict(['src/domain/*.ts'], [...DOMAIN_OUTSIDE, { group: ['./*/**'], message: "The domain's root files (context, errors, job kinds ...) are below every folder of the domain." }]),
  // background jobs reach data through the domain and storage/store.ts, like the routes; no HTTP
  restrict(['src/jobs/**/*.ts'], [
    { group: ['**/http/**', '**/cli/**', '**/storage/sqlite/**', '**/storage/postgres/**', '**/storage/sql/**', 'fastify', 'pg', 'better-sqlite3'], message: 'Jobs import the domain and storage/store.ts only.' },
    { group: ['**/llm/**', '!**/llm/provider.js'], message: 'Jobs only import llm/provider.ts.' },
  ]),
  // the composition root and the server process are built on, never imported by, the layers below
  restrict(['src/http/**/*.ts', 'src/jobs/**/*.ts', 'src/storage/**/*.ts', 'src/llm/**/*.ts', 'src/mcp/**/*.ts', 'src/config/**/*.ts'], [
    { group: ['../cli/**', '../../cli/**', '**/server/process-group.js', '**/server/connection-hand-off.js', '**/runtime/serve.js'], message: 'Only the command line and the composition root start processes.' },
  ]),
  // model transports know nothing of the layers that use them
  restrict(['src/llm/**/*.ts'], [{ group: ['**/domain/**', '**/http/**', '**/jobs/**', '**/storage/**'], message: 'llm/ does not know the layers above it.' }]),
  // storage never imports the domain or HTTP
  restrict(['src/storage/**/*.ts'], [{ group: ['**/domain/**', '**/http/**', '**/jobs/**'], message: 'Storage does not know the layers above it.' }]),
  // a generation never reaches into a sibling, and reaches data only through the domain
  restrict(['src/http/v1/**/*.ts'], [{ group: ['**/v2/**', '**/v3/**', '**/storage/sql/**', '**/storage/sqlite/**', '**/storage/postgres/**'], message: 'Shared pieces go to http/shared or the domain.' }]),
  // v2 and v3 are thin mounts of workspace-api, whose routes are declared once for both
  restrict(['src/http/v2/**/*.ts'], [{ group: ['**/v1/**', '**/v3/**', '**/storage/sql/**', '**/storage/sqlite/**', '**/storage/postgres/**'], message: 'Routes of v2 are declared in http/workspace-api.' }]),
  restrict(['src/http/v3/**/*.ts'], [{ group: ['**/v1/**', '**/v2/**', '**/storage/sql/**', '**/storage/sqlite/**', '**/storage/postgres/**'], message: 'Routes of v3 are declared in http/workspace-api.' }]),
  restrict(['src/http/workspace-api/**/*.ts'], [{ group: ['**/v1/**', '**/v2/**', '**/v3/**', '**/storage/sql/**', '**/storage/sqlite/**', '**/storage/postgres/**'], message: 'workspace-api reaches data through the domain; shared pieces go to http/shared.' }]),
);
