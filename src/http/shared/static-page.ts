import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';

/**
 * A browser page built into a folder of static files (web/inspector, bundled by
 * scripts/build.mjs): its `index.html` shell and its `assets/` named by content hash.
 *
 * Served under `prefix`: a path that names a file of the folder gets that file; every other path
 * gets the shell, so a reload or a shared link of any of the page's addresses lands on the page,
 * which reads its address itself. The server knows the page's files, never its views.
 */

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
};

/**
 * Only the server's own scripts, styles and API (no inline script, nothing from elsewhere), and the
 * page is framed by no other page.
 */
export const PAGE_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const COMMON_HEADERS = {
  'content-security-policy': PAGE_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

interface PageFile {
  body: Buffer;
  type: string;
  /** Named by its content hash: cached for a year, never revalidated. */
  immutable: boolean;
}

/** Every file of `folder` by its path below it (`assets/main-ABC123.js`), read once. */
function readFolder(folder: string, below = ''): Map<string, PageFile> {
  const files = new Map<string, PageFile>();
  for (const entry of readdirSync(join(folder, below), { withFileTypes: true })) {
    const path = below === '' ? entry.name : `${below}/${entry.name}`;
    if (entry.isDirectory()) {
      for (const [name, file] of readFolder(folder, path)) files.set(name, file);
    } else if (statSync(join(folder, path)).isFile()) {
      files.set(path, { body: readFileSync(join(folder, path)), type: TYPES[extname(path)] ?? 'application/octet-stream', immutable: path.startsWith('assets/') });
    }
  }
  return files;
}

const NOT_BUILT = (prefix: string) => `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Not built</title></head>
<body><p>The page at ${prefix} has not been built: run <code>npm run build</code>, then start the server from <code>dist/</code> (<code>npm start</code>).</p></body></html>
`;

/**
 * Serves the page built into `folder` at `prefix` (`/inspector`). A folder without `index.html`
 * (a server run from the sources, never built) answers every path of the page with a 404 that
 * says how to build it.
 */
export function mountStaticPage(app: FastifyInstance, prefix: string, folder: string): void {
  const files = existsSync(join(folder, 'index.html')) ? readFolder(folder) : undefined;
  const shell = files?.get('index.html');

  const send = (reply: FastifyReply, file: PageFile) =>
    reply
      .headers(COMMON_HEADERS)
      .header('content-type', file.type)
      // the shell names the current assets: asked again each time, the assets kept for a year
      .header('cache-control', file.immutable ? 'public, max-age=31536000, immutable' : 'no-cache')
      .send(file.body);

  const handler = async (request: { params: unknown }, reply: FastifyReply) => {
    if (shell === undefined || files === undefined) {
      return reply.code(404).headers(COMMON_HEADERS).header('content-type', 'text/html; charset=utf-8').send(NOT_BUILT(prefix));
    }
    const rest = (request.params as { '*'?: string })['*'] ?? '';
    const file = files.get(rest);
    if (file !== undefined) return send(reply, file);
    // an asset that is not (or no longer) there: a 404, not the shell in its place
    if (rest.startsWith('assets/')) return reply.code(404).header('content-type', 'application/json').send('{"detail":"Not Found"}');
    return send(reply, shell);
  };
  for (const url of [prefix, `${prefix}/*`]) {
    app.get(url, { schema: { hide: true } }, handler);
  }
}
