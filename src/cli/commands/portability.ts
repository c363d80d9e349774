import { createReadStream, createWriteStream, mkdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { once } from 'node:events';
import { StringDecoder } from 'node:string_decoder';
import type { Readable, Writable } from 'node:stream';
import { databaseOptions, openDatabase } from '../../runtime/database.js';
import { domainLimits, reasoningRuntime } from '../../runtime/runtime.js';
import type { Config } from '../../config/config.js';
import { createDomainContext } from '../../domain/context.js';
import { exportText } from '../../domain/portability/export.js';
import { ImportLineError } from '../../domain/portability/format.js';
import { copyFromHoncho, NOT_COPIED, RemoteError } from '../../domain/portability/from-honcho.js';
import { ImportBatchError, importLines, type ImportCounts } from '../../domain/portability/import.js';
import { buildModels } from '../../llm/models.js';

/** Writes `pieces` to `out`, waiting whenever it asks to (its buffer is full): memory stays that of a piece. */
export async function writeAll(pieces: AsyncIterable<string>, out: Writable): Promise<number> {
  let lines = 0;
  // a write that fails (a closed pipe, a full disk) ends the export with that error
  let failed: Error | undefined;
  const onError = (error: Error) => (failed ??= error);
  out.on('error', onError);
  try {
    for await (const piece of pieces) {
      if (failed !== undefined) throw failed;
      for (let i = piece.indexOf('\n'); i !== -1; i = piece.indexOf('\n', i + 1)) lines++;
      if (!out.write(piece)) await once(out, 'drain');
    }
    if (failed !== undefined) throw failed;
    return lines;
  } finally {
    out.off('error', onError);
  }
}

/** The lines of a stream (without their newlines), read a chunk at a time as the consumer asks. */
export async function* linesOf(input: Readable, onBytes?: (bytes: number) => void): AsyncGenerator<string> {
  const decoder = new StringDecoder('utf8');
  let rest = '';
  for await (const chunk of input) {
    const buffer = chunk as Buffer;
    onBytes?.(buffer.byteLength);
    const text = rest + decoder.write(buffer);
    let start = 0;
    for (let end = text.indexOf('\n'); end !== -1; end = text.indexOf('\n', start)) {
      yield text.charCodeAt(end - 1) === 13 ? text.slice(start, end - 1) : text.slice(start, end);
      start = end + 1;
    }
    rest = text.slice(start);
  }
  rest += decoder.end();
  if (rest !== '') yield rest;
}

/** Progress on stderr: a bar redrawn in place on a terminal, a line every few seconds otherwise. */
export class Progress {
  private last = 0;
  private readonly tty = process.stderr.isTTY === true;

  constructor(private readonly what: string) {}

  show(text: string, fraction?: number, force = false): void {
    const now = Date.now();
    if (!force && now - this.last < (this.tty ? 100 : 2000)) return;
    this.last = now;
    if (this.tty) {
      const bar = fraction === undefined ? '' : `[${'#'.repeat(Math.round(fraction * 30)).padEnd(30, '.')}] ${(fraction * 100).toFixed(0).padStart(3)}% `;
      process.stderr.write(`\r${this.what}: ${bar}${text}\u001b[K`);
    } else {
      process.stderr.write(`${this.what}: ${fraction === undefined ? '' : `${(fraction * 100).toFixed(1)}% `}${text}\n`);
    }
  }

  done(text: string): void {
    process.stderr.write(this.tty ? `\r${this.what}: ${text}\u001b[K\n` : `${this.what}: ${text}\n`);
  }
}

function describeCounts(counts: ImportCounts): string {
  const kinds = Object.keys(counts.read) as (keyof ImportCounts['read'])[];
  if (kinds.length === 0) return 'no rows';
  return kinds.map((kind) => `${kind} ${counts.inserted[kind] ?? 0}/${counts.read[kind]}`).join(', ');
}

/** `engram export`. */
export async function runExport(config: Config, options: { workspaceIds?: string[]; output?: string; withVectors: boolean }): Promise<number> {
  const database = await openDatabase(config.databaseUrl, databaseOptions(config));
  const started = performance.now();
  try {
    // the file's folder is made if missing, as `engram backup` makes its copy's
    if (options.output !== undefined) mkdirSync(dirname(options.output), { recursive: true });
    const out = options.output === undefined ? process.stdout : createWriteStream(options.output, { flags: 'wx' });
    if (options.output !== undefined) await once(out, 'open');
    const lines = await writeAll(exportText(database.store, { workspaceIds: options.workspaceIds, withVectors: options.withVectors, now: new Date() }), out);
    if (out !== process.stdout) {
      out.end();
      await once(out, 'finish');
    }
    process.stderr.write(`exported ${lines - 1} rows${options.output === undefined ? '' : ` to ${options.output}`} in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
    return 0;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
      console.error(`engram: ${options.output} exists; name a new file (an export never overwrites one)`);
      return 2;
    }
    if ((error as NodeJS.ErrnoException).code === 'EPIPE') {
      console.error('engram: the output was closed before the export ended');
      return 1;
    }
    throw error;
  } finally {
    await database.driver.close();
  }
}

/** `engram import`: a file (or stdin), or --from-honcho. */
export async function runImport(
  config: Config,
  options: { file?: string; batchLines?: number; fromHoncho?: { url: string; apiKey?: string; workspaceIds?: string[] } },
): Promise<number> {
  const database = await openDatabase(config.databaseUrl, databaseOptions(config));
  const reasoning = reasoningRuntime(config, buildModels(config.models));
  const ctx = createDomainContext(database.store, domainLimits(config), undefined, reasoning);
  const started = performance.now();
  try {
    if (options.fromHoncho !== undefined) {
      const progress = new Progress('import');
      const counts = await copyFromHoncho(ctx, options.fromHoncho, {
        batchLines: options.batchLines,
        onProgress: (text) => progress.show(text),
      });
      progress.done(`copied in ${((performance.now() - started) / 1000).toFixed(1)} s: ${describeCounts(counts)} (stored/read)`);
      process.stderr.write(`not copied (the v3 API does not expose it; docs/portability.md):\n${NOT_COPIED.map((line) => `  - ${line}`).join('\n')}\n`);
      return 0;
    }
    const file = options.file!;
    const input = file === '-' ? process.stdin : createReadStream(file);
    const total = file === '-' ? undefined : statSync(file).size;
    let bytes = 0;
    const progress = new Progress('import');
    const result = await importLines(
      ctx,
      linesOf(input, (n) => (bytes += n)),
      {
        batchLines: options.batchLines,
        onBatch: (lines) => progress.show(`${lines.toLocaleString('en')} lines`, total === undefined || total === 0 ? undefined : Math.min(1, bytes / total)),
      },
    );
    progress.done(`${result.lines.toLocaleString('en')} lines in ${((performance.now() - started) / 1000).toFixed(1)} s: ${describeCounts(result)} (stored/read)`);
    if (result.queuedEmbeddings > 0) process.stderr.write(`queued ${result.queuedEmbeddings} messages and conclusions to be embedded (the workers of engram serve or engram worker embed them)\n`);
    return 0;
  } catch (error) {
    if (error instanceof ImportLineError || error instanceof ImportBatchError || error instanceof RemoteError) {
      process.stderr.write('\n');
      console.error(`engram: import stopped at ${error.message}`);
      return 1;
    }
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      console.error(`engram: there is no file ${options.file}`);
      return 2;
    }
    throw error;
  } finally {
    await database.driver.close();
  }
}
