/**
 * The request line's own CPU, in a process of its own with `engram serve`'s V8 flags and a
 * server's small heap (run by bench/run.ts; measured inside the bench's Engram process, whose
 * heap holds the dataset, the same line cost two to three times as much):
 *
 *   node --import tsx <flags> bench/request-line.ts <dir> <lines> <rounds> <url>
 *
 * `lines` request lines written through a process log at info to a file in `dir` (formatting,
 * gathering, and the file's asynchronous writes: the process's CPU, every thread, until the log
 * is closed and the file holds them all), less the same calls through a log at warn (which write
 * nothing), in µs a line, over `rounds` rounds taking turns. The event loop gets a turn every
 * thousand lines, as between requests, so the log's timer and writes run as in a server. Prints
 * one JSON line: `[{ "info": µs, "warn": µs }, ...]`, a pair per round.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { processLog, requestLine } from '../src/server/logging.js';

const [dir, linesText, roundsText, url] = process.argv.slice(2);
const lines = Number(linesText);
const rounds = Number(roundsText);

async function loop(level: 'info' | 'warn', file: string): Promise<number> {
  const log = processLog(level, join(dir, file));
  const before = process.cpuUsage();
  for (let i = 0; i < lines; i++) {
    requestLine(log.logger, `req-${i.toString(36)}`, 'POST', url, 200, 1.27);
    if (i % 1000 === 999) await new Promise((resolve) => setImmediate(resolve));
  }
  await log.close();
  const used = process.cpuUsage(before);
  // measured: the file goes (40 MB a round at info)
  rmSync(join(dir, file), { force: true });
  return (used.user + used.system) / lines;
}

// both paths warmed up (the JIT settled) before the first measured round
await loop('info', 'warm-info.log');
await loop('warn', 'warm-warn.log');
const each: { info: number; warn: number }[] = [];
for (let round = 0; round < rounds; round++) {
  const measured = { info: 0, warn: 0 };
  for (const level of round % 2 === 0 ? (['info', 'warn'] as const) : (['warn', 'info'] as const)) measured[level] = await loop(level, `${level}-${round}.log`);
  each.push(measured);
}
process.stdout.write(`${JSON.stringify(each)}\n`);
