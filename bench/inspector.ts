/**
 * The memory inspector on a large store: `npx tsx bench/inspector.ts` (BENCH_INSPECTOR_MESSAGES,
 * default 1,000,000 messages; BENCH_INSPECTOR_CONCLUSIONS, default 100,000; BENCH_ROUNDS, default
 * 5; BENCH_DATABASE_URL for PostgreSQL, else a fresh SQLite file; CHROMIUM_PATH, else Debian's
 * chromium).
 *
 * Loads, through the store, a workspace of that many messages over 1,000 sessions (its list
 * session, chat-000000, holds 4,000 of every 1,000,000) and that many conclusions of
 * user-000000 about itself drawn from the list session's messages, and a small workspace of 1,000
 * messages and 100 conclusions of the same shape. Serves them with the inspector built as
 * `npm run build` builds it, and opens the peer view of user-000000 and the session view of
 * chat-000000 in headless Chromium: time from navigation to the first conclusion (or message)
 * on screen, in a new browser context each round (nothing cached) and again in the same context
 * (assets cached), and the bytes the page transferred. After a round left unmeasured, the two
 * stores take turns each round; prints the medians of the rounds and the ratio of the large
 * store's to the small one's, measured in one run.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { buildInspector } from '../scripts/build.mjs';
import { buildApp } from '../src/http/app.js';
import { databaseOptions, openDatabase } from '../src/runtime/database.js';
import { loadConfig } from '../src/config/config.js';
import { chromiumPath, launchChromium, NO_CHROMIUM } from '../test/support/browser.js';
import { Corpus } from './corpus.js';
import { chatSessionId, loadMessages } from './dataset.js';
import { median } from './stats.js';

const MESSAGES = Number(process.env.BENCH_INSPECTOR_MESSAGES ?? 1_000_000);
const CONCLUSIONS = Number(process.env.BENCH_INSPECTOR_CONCLUSIONS ?? 100_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const PEER = 'user-000000';
const SESSION = chatSessionId(0);

const executable = chromiumPath();
if (executable === undefined) {
  console.error(`bench/inspector: ${NO_CHROMIUM}`);
  process.exit(1);
}

const dir = mkdtempSync(join(tmpdir(), 'engram-bench-inspector-'));
const url = process.env.BENCH_DATABASE_URL ?? join(dir, 'inspector.db');
const config = loadConfig({ DATABASE_URL: url, LOG_LEVEL: 'silent' }, '/nonexistent/.env');
const database = await openDatabase(config.databaseUrl, databaseOptions(config));

/** A workspace of `messages` messages over `sessions` sessions and `conclusions` conclusions of PEER about itself. */
async function load(workspaceId: string, messages: number, sessions: number, conclusions: number): Promise<number> {
  const started = performance.now();
  await loadMessages(database.store, { workspaceId, messages, sessions, vocabulary: 20000, zipf: 1.1, seed: 42 }, new Corpus(20000, 42, 1.1), () => randomUUID());
  // the sources: messages of the list session, a page of them
  const sources = (await database.store.messages.list(workspaceId, SESSION, { filter: null, page: 1, size: 100, reverse: false })).items.map((m) => m.id);
  const now = Date.now();
  for (let i = 0; i < conclusions; i += 1000) {
    await database.store.transaction((tx) =>
      tx.memory.insertConclusions(
        Array.from({ length: Math.min(1000, conclusions - i) }, (_, k) => ({
          id: randomUUID(),
          workspaceId,
          observerId: PEER,
          observedId: PEER,
          sessionId: SESSION,
          content: `${PEER} said something worth keeping, number ${i + k}`,
          level: 'explicit' as const,
          sourceIds: [sources[(i + k) % sources.length]],
          timesDerived: 1,
          createdAt: new Date(now - conclusions + i + k),
        })),
      ),
    );
  }
  return performance.now() - started;
}

const large = `bench-inspector-${randomUUID().slice(0, 8)}`;
const small = `bench-inspector-small-${randomUUID().slice(0, 8)}`;
const largeMs = await load(large, MESSAGES, 1000, CONCLUSIONS);
await load(small, 1000, 10, 100);
console.log(`${database.driver.dialect}: ${MESSAGES.toLocaleString('en')} messages and ${CONCLUSIONS.toLocaleString('en')} conclusions loaded in ${(largeMs / 1000).toFixed(1)} s`);

const assets = join(dir, 'inspector');
const files = await buildInspector(assets);
const { app } = await buildApp({ config, database, logger: false, inspectorAssets: assets });
await app.listen({ port: 0, host: '127.0.0.1' });
const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
const browser: Browser = await launchChromium(executable);

/** Time from navigation to `selector` on screen, and the bytes the page received (headers and bodies). */
async function visit(page: Page, path: string, selector: string): Promise<{ ms: number; bytes: number; requests: number }> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Network.enable');
  let bytes = 0;
  let requests = 0;
  cdp.on('Network.loadingFinished', (event: { encodedDataLength: number }) => {
    bytes += event.encodedDataLength;
    requests++;
  });
  const started = performance.now();
  await page.goto(base + path, { waitUntil: 'commit' });
  await page.locator(selector).first().waitFor({ state: 'visible', timeout: 60_000 });
  const ms = performance.now() - started;
  // what the view goes on loading after its first content (the card, the members' settings)
  await page.waitForLoadState('networkidle');
  await cdp.detach();
  return { ms, bytes, requests };
}


const views = [
  { name: 'peer view', path: (w: string) => `/inspector/workspaces/${w}/peers/${PEER}`, selector: 'li.conclusion' },
  { name: 'session view', path: (w: string) => `/inspector/workspaces/${w}/sessions/${SESSION}`, selector: 'ol.transcript li' },
];
console.log(`page: ${Object.entries(files).map(([name, size]) => `${name} ${size.toLocaleString('en')} B`).join(', ')}; ${ROUNDS} rounds, medians`);
for (const view of views) {
  const results: Record<string, { cold: number[]; warm: number[]; bytes: number[]; warmBytes: number[]; requests: number }> = {};
  for (const w of [small, large]) results[w] = { cold: [], warm: [], bytes: [], warmBytes: [], requests: 0 };
  // a round unmeasured first (the server's and the browser's first use), then the two stores in
  // turn each round, so that a slower moment of the machine falls on both
  for (let round = -1; round < ROUNDS; round++) {
    for (const w of [small, large]) {
      const r = results[w];
      const context = await browser.newContext();
      const page = await context.newPage();
      const cold = await visit(page, view.path(w), view.selector);
      const warm = await visit(page, view.path(w), view.selector);
      await context.close();
      if (round < 0) continue;
      r.cold.push(cold.ms);
      r.warm.push(warm.ms);
      r.bytes.push(cold.bytes);
      r.warmBytes.push(warm.bytes);
      r.requests = cold.requests;
    }
  }
  const [s, l] = [results[small], results[large]];
  console.log(
    `${view.name}: first content ${median(l.cold).toFixed(0)} ms (cold), ${median(l.warm).toFixed(0)} ms (assets cached); ` +
      `${median(l.bytes).toLocaleString('en')} B in ${l.requests} requests (${median(l.warmBytes).toLocaleString('en')} B cached); ` +
      `large/small store: ${(median(l.cold) / median(s.cold)).toFixed(2)}x cold, ${(median(l.warm) / median(s.warm)).toFixed(2)}x cached (small: ${median(s.cold).toFixed(0)} / ${median(s.warm).toFixed(0)} ms)`,
  );
}

await browser.close();
await app.close();
await database.driver.close();
rmSync(dir, { recursive: true, force: true });
