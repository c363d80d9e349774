import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildInspector } from '../../scripts/build.mjs';
import { createWorker } from '../../src/runtime/runtime.js';
import type { Worker } from '../../src/jobs/worker.js';
import { chromiumPath, launchChromium, NO_CHROMIUM, seriousAxeViolations } from '../support/browser.js';
import { startFakeModelServer, type FakeModelServer } from '../support/fake-model-server.js';
import { drainWorkspace, facts, REASONING_TEST_ENV } from '../support/reasoning-harness.js';
import { silent } from '../support/polling.js';
import { buildTestApp, DIALECT, uniqueId, type TestApi } from '../support/test-app.js';

/*
 * The memory inspector (docs/inspector.md) in a real Chromium: the page built as `npm run build`
 * builds it, served by the app at /inspector, reading a store the worker derived with the fake
 * model, and correcting it through the API. Skipped, saying why, where no Chromium is installed.
 */

const executable = chromiumPath();
if (executable === undefined) console.warn(`test/inspector: skipped, ${NO_CHROMIUM}`);
// the page and its API reads do not depend on the store, whose routes are tested on both: the
// PostgreSQL run leaves the browser out
const runs = executable !== undefined && DIALECT !== 'postgres';

let fake: FakeModelServer;
let browser: Browser;
let assets: string;

interface Served {
  api: TestApi;
  worker: Worker;
  base: string;
  ws: string;
}
const open: Served[] = [];
const contexts: BrowserContext[] = [];

async function serve(env: Record<string, string> = {}): Promise<Served> {
  fake.reset();
  const api = await buildTestApp({ ...fake.env(), ...REASONING_TEST_ENV, ...env }, { ownDatabase: true, inspectorAssets: assets });
  await api.app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = api.app.server.address() as AddressInfo;
  const served = { api, worker: createWorker(api.config, api.database, silent), base: `http://127.0.0.1:${port}`, ws: uniqueId() };
  open.push(served);
  return served;
}

/** A fresh page (its own sessionStorage), failing the test on any error the page logs (a CSP refusal included). */
async function newPage(errors: string[]): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  contexts.push(context);
  const page = await context.newPage();
  page.on('console', (message) => {
    // the API's own refusals (a 401 before the key, a 404) are logged by the browser as failed loads
    if (message.type() === 'error' && !/Failed to load resource/.test(message.text())) errors.push(message.text());
  });
  page.on('pageerror', (error) => errors.push(String(error)));
  return page;
}

async function expectAccessible(page: Page, view: string) {
  const violations = await seriousAxeViolations(page);
  expect(violations, `${view}: ${JSON.stringify(violations, null, 2)}`).toEqual([]);
}

beforeAll(async () => {
  if (!runs) return;
  fake = await startFakeModelServer();
  assets = mkdtempSync(join(tmpdir(), 'engram-inspector-'));
  await buildInspector(assets);
  browser = await launchChromium(executable);
}, 60_000);

afterEach(async () => {
  for (const context of contexts.splice(0)) await context.close();
  for (const { api, worker } of open.splice(0)) {
    await worker.stop(1000);
    await api.close();
  }
});

afterAll(async () => {
  await browser?.close();
  await fake?.close();
  if (assets !== undefined) rmSync(assets, { recursive: true, force: true });
});

const LINES = [
  ['alice', 'I just moved to Lisbon with my sister'],
  ['bob', 'Nice! I love looking at maps of Lisbon'],
  ['alice', 'We found a flat near the river'],
  ['bob', 'Do you take the tram to work?'],
  ['alice', 'Yes, tram 28 every morning'],
  ['bob', 'That one is always full of tourists'],
  ['alice', 'True, but it is pretty'],
  ['bob', 'I should visit in spring'],
  ['alice', 'You can stay with us'],
  ['bob', 'Deal, I will bring my maps'],
] as const;

/** Session s1 of alice and bob (who observes others), ten messages derived and summarised by the fake model. */
async function derivedConversation(s: Served): Promise<string[]> {
  const { api, ws } = s;
  const created = await api.post(`/v3/workspaces/${ws}/sessions`, {
    id: 's1',
    peers: { alice: {}, bob: { observe_others: true } },
    configuration: { summary: { messages_per_short_summary: 10, messages_per_long_summary: 20 } },
  });
  expect(created.status, created.text).toBe(201);
  fake.script.defaultChat((request) => {
    const prompt = String(request.body.messages[0].content);
    if (!prompt.includes('Participant:')) return { text: 'Alice moved to Lisbon; Bob plans a visit in spring.' };
    return prompt.includes('Participant: alice') ? facts('alice moved to Lisbon', 'alice rides tram 28') : facts('bob collects maps');
  });
  const sent = await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: LINES.map(([peer_id, content]) => ({ peer_id, content })) });
  expect(sent.status, sent.text).toBe(201);
  await drainWorkspace(s, { timeoutMs: 30_000 });
  return sent.body.map((m: { id: string }) => m.id);
}

describe.skipIf(!runs)('the memory inspector in Chromium', () => {
  it('shows a derived conversation: conclusions with their source messages, the transcript and summary, each view accessible', async () => {
    const s = await serve();
    await derivedConversation(s);
    const errors: string[] = [];
    const page = await newPage(errors);

    // the shell: a policy without inline scripts, the hashed assets cached for a year
    const shell = await page.goto(`${s.base}/inspector/workspaces/${s.ws}/peers/alice`);
    expect(shell?.status()).toBe(200);
    const headers = shell!.headers();
    expect(headers['content-security-policy']).toContain("script-src 'self'");
    expect(headers['content-security-policy']).not.toContain('unsafe-inline');
    const html = await shell!.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    const script = /src="(\/inspector\/assets\/main-[A-Z0-9]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    const asset = await page.request.get(`${s.base}${script}`);
    expect(asset.headers()['cache-control']).toBe('public, max-age=31536000, immutable');

    // peer view: conclusions grouped by observer, sources expandable
    await page.getByText('alice moved to Lisbon').first().waitFor();
    await expect.poll(() => page.getByRole('heading', { name: 'As alice sees itself' }).count()).toBe(1);
    await expect.poll(() => page.getByRole('heading', { name: 'As bob sees alice' }).count()).toBe(1);
    const tram = page.locator('li.conclusion', { hasText: 'alice rides tram 28' }).first();
    await tram.getByRole('button', { name: 'Show sources' }).click();
    await tram.getByText('Yes, tram 28 every morning').waitFor();
    await expect.poll(() => tram.getByText('Source messages').count()).toBe(1);
    await expectAccessible(page, 'peer view');

    // the card and representation render too
    await page.getByRole('button', { name: 'Show representation' }).click();
    await page.locator('pre.representation').waitFor();
    expect(await page.locator('pre.representation').textContent()).toContain('alice moved to Lisbon');

    // session view: transcript, summary, members with their settings
    await page.goto(`${s.base}/inspector/workspaces/${s.ws}/sessions/s1`);
    await page.getByText('I just moved to Lisbon with my sister').waitFor();
    await page.getByText('Alice moved to Lisbon; Bob plans a visit in spring.').first().waitFor();
    const bobRow = page.getByRole('row', { name: /bob/ });
    await expect.poll(() => bobRow.locator('td').allTextContents()).toEqual(['default', 'yes']);
    // whether the session's work is done, and what came of a message
    await page.getByText('No reasoning work is waiting for this session').waitFor();
    const tramMessage = page.locator('ol.transcript > li', { hasText: 'Yes, tram 28 every morning' });
    await tramMessage.getByRole('button', { name: 'What came of it' }).click();
    await tramMessage.locator('ul.drawn-list', { hasText: 'alice rides tram 28' }).waitFor();
    const bobMessage = page.locator('ol.transcript > li', { hasText: 'Do you take the tram to work?' });
    await bobMessage.getByRole('button', { name: 'What came of it' }).click();
    await bobMessage.locator('ul.drawn-list', { hasText: 'bob collects maps' }).waitFor();
    expect(await bobMessage.locator('ul.drawn-list', { hasText: 'alice' }).count()).toBe(0);
    // newest first
    await page.getByLabel('Newest first').check();
    await expect.poll(async () => (await page.locator('ol.transcript .content').first().textContent())?.trim()).toBe('Deal, I will bring my maps');
    await expectAccessible(page, 'session view');

    // the workspace list, the workspace, its queue: reached by links, each accessible
    await page.goto(`${s.base}/inspector`);
    await page.getByRole('link', { name: s.ws }).click();
    await page.getByRole('heading', { name: `Workspace ${s.ws}` }).waitFor();
    await page.getByRole('link', { name: 's1' }).waitFor();
    await expectAccessible(page, 'workspace view');
    // the peers found by a part of their id
    await page.getByLabel('Find peers by id').fill('bo');
    await page.getByLabel('Find peers by id').press('Enter');
    await expect.poll(() => page.locator('section[aria-labelledby="peers-heading"] ul.ids a').allTextContents()).toEqual(['bob']);
    await page.getByLabel('Search messages and conclusions').fill('tram');
    await page.getByRole('button', { name: 'Search' }).first().click();
    await page.getByText('Yes, tram 28 every morning').waitFor();
    await page.getByText('alice rides tram 28').first().waitFor();
    // the queue view: its counts, and the model calls and tokens by module as the API counts them
    type Usage = { module: string; model: string; calls: number; failed_calls: number; input_tokens: number; output_tokens: number };
    let usage: Usage[] = [];
    await expect
      .poll(async () => (usage = (await s.api.get(`/v3/workspaces/${s.ws}/statistics`)).body.model_usage.modules as Usage[]).some((u) => u.module === 'deriver'))
      .toBe(true);
    await page.getByRole('link', { name: 'Queued work of this workspace' }).click();
    await page.getByRole('heading', { name: 'Reasoning work units' }).waitFor();
    await page.locator('dl.counts').waitFor();
    const deriver = usage.find((u) => u.module === 'deriver')!;
    expect(deriver.input_tokens).toBeGreaterThan(0);
    await expect
      .poll(() => page.locator('table.usage tr', { has: page.getByRole('rowheader', { name: 'deriver', exact: true }) }).locator('td').allTextContents())
      .toEqual([deriver.model, String(deriver.calls), String(deriver.failed_calls), String(deriver.input_tokens), String(deriver.output_tokens)]);
    await expectAccessible(page, 'queue view');
    await page.goto(`${s.base}/inspector`);
    const row = page.getByRole('row', { name: new RegExp(s.ws) });
    const conclusionTotal = String((await s.api.post(`/v3/workspaces/${s.ws}/conclusions/list?size=1`, {})).body.total);
    // peers, sessions, messages, conclusions, queued work
    await expect.poll(() => row.locator('td').allTextContents()).toEqual(['2', '1', String(LINES.length), conclusionTotal, '0']);
    await expectAccessible(page, 'workspaces view');

    // phone width, dark scheme: still no serious violation
    await page.setViewportSize({ width: 375, height: 800 });
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.goto(`${s.base}/inspector/workspaces/${s.ws}/peers/alice`);
    await page.getByText('alice moved to Lisbon').first().waitFor();
    await expectAccessible(page, 'peer view, dark, phone width');
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    expect(errors).toEqual([]);
  }, 120_000);

  it('deletes a conclusion and edits a card after confirming, and the API shows both', async () => {
    const s = await serve();
    await derivedConversation(s);
    const page = await newPage([]);
    await page.goto(`${s.base}/inspector/workspaces/${s.ws}/peers/alice`);
    const target = page.locator('li.conclusion', { hasText: 'alice rides tram 28' }).first();
    await target.waitFor();
    const before = (await s.api.post(`/v3/workspaces/${s.ws}/conclusions/list?size=100`, { filters: { observed_id: 'alice' } })).body.items as { id: string; content: string }[];
    const tramCount = before.filter((c) => c.content === 'alice rides tram 28').length;
    expect(tramCount).toBeGreaterThan(0);

    // from the keyboard: the first Tab reaches the skip link; Enter on a button opens its
    // dialog, Escape closes it; cancelling either way changes nothing
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    await target.getByRole('button', { name: 'Delete' }).focus();
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Delete this conclusion?' });
    await dialog.waitFor();
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    await target.getByRole('button', { name: 'Delete' }).click();
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    expect((await s.api.post(`/v3/workspaces/${s.ws}/conclusions/list?size=100`, { filters: { observed_id: 'alice' } })).body.total).toBe(before.length);

    await target.getByRole('button', { name: 'Delete' }).click();
    await dialog.getByRole('button', { name: 'Delete conclusion' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await expect.poll(() => page.locator('li.conclusion', { hasText: 'alice rides tram 28' }).count()).toBe(tramCount - 1);
    const after = (await s.api.post(`/v3/workspaces/${s.ws}/conclusions/list?size=100`, { filters: { observed_id: 'alice' } })).body.items as { id: string; content: string }[];
    expect(after).toHaveLength(before.length - 1);
    const deleted = before.filter((c) => !after.some((a) => a.id === c.id));
    expect(deleted).toHaveLength(1);
    expect(deleted[0].content).toBe('alice rides tram 28');
    expect((await s.api.get(`/v3/workspaces/${s.ws}/conclusions/${deleted[0].id}`)).status).toBe(404);

    await page.getByRole('button', { name: 'Edit card' }).click();
    const cardDialog = page.getByRole('dialog', { name: 'Edit the card of alice' });
    await cardDialog.getByLabel('One fact a line').fill('Lives in Lisbon\n\n  Has a sister  \nRides tram 28');
    await cardDialog.getByRole('button', { name: 'Save card' }).click();
    await cardDialog.waitFor({ state: 'hidden' });
    await page.locator('ul.card-lines', { hasText: 'Has a sister' }).waitFor();
    expect((await s.api.get(`/v3/workspaces/${s.ws}/peers/alice/card`)).body).toEqual({ peer_card: ['Lives in Lisbon', 'Has a sister', 'Rides tram 28'] });
  }, 90_000);

  it('shows a dead job with its error in the queue view, and its retry succeeds', async () => {
    const s = await serve({ JOB_MAX_ATTEMPTS: '1' });
    const { api, ws } = s;
    expect((await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's1', peers: { alice: {} } })).status).toBe(201);
    fake.script.defaultChat({ status: 400, errorBody: { error: { message: 'the model refuses this request' } } });
    expect((await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages: [{ peer_id: 'alice', content: 'I keep bees on my roof' }] })).status).toBe(201);
    await drainWorkspace(s, { timeoutMs: 30_000 });
    const dead = (await api.post(`/v3/workspaces/${ws}/queue/jobs/list`, { status: 'dead' })).body;
    expect(dead.total, JSON.stringify(dead)).toBe(1);

    const page = await newPage([]);
    await page.goto(`${s.base}/inspector/workspaces/${ws}/queue`);
    const job = page.locator('li.job', { hasText: dead.items[0].kind });
    await job.waitFor();
    expect(await job.locator('.error-text').textContent()).toBe(dead.items[0].last_error);
    await expectAccessible(page, 'queue view with a dead job');

    fake.script.defaultChat(facts('alice keeps bees'));
    await job.getByRole('button', { name: 'Retry' }).click();
    await page.getByRole('dialog', { name: 'Retry this work?' }).getByRole('button', { name: 'Retry' }).click();
    await expect.poll(() => page.locator('#jobs-dead ~ p.empty').count()).toBe(1);
    await drainWorkspace(s, { timeoutMs: 30_000 });
    expect((await api.post(`/v3/workspaces/${ws}/queue/jobs/list`, { status: 'dead' })).body.total).toBe(0);
    const conclusions = (await api.post(`/v3/workspaces/${ws}/conclusions/list`, { filters: { observed_id: 'alice' } })).body.items;
    expect(conclusions.map((c: { content: string }) => c.content)).toEqual(['alice keeps bees']);
  }, 90_000);

  it('schedules a dream after confirming, through the API, and the queue view shows it waiting, then done with its model calls', async () => {
    const s = await serve();
    const { api, ws } = s;
    expect((await api.post('/v3/workspaces', { id: ws })).status).toBe(201);
    expect((await api.post(`/v3/workspaces/${ws}/peers`, { id: 'alice' })).status).toBe(201);
    fake.script.defaultChat({ text: 'done' });
    const dreams = async (status: string) =>
      ((await api.post(`/v3/workspaces/${ws}/queue/jobs/list`, { status })).body.items as { kind: string; observed: string | null }[]).filter((job) => job.kind === 'reasoning.dream');

    const page = await newPage([]);
    await page.goto(`${s.base}/inspector/workspaces/${ws}/peers/alice`);
    await page.getByRole('button', { name: 'Schedule a dream' }).click();
    const dialog = page.getByRole('dialog', { name: 'Schedule a dream about alice' });
    // cancelled, nothing is queued
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    expect(await dreams('pending')).toEqual([]);
    await page.getByRole('button', { name: 'Schedule a dream' }).click();
    await dialog.getByRole('button', { name: 'Schedule dream' }).click();
    await page.getByRole('status').filter({ hasText: 'Dream scheduled.' }).waitFor();
    expect(await dreams('pending')).toMatchObject([{ observed: 'alice' }]);

    // queued: listed as pending in the queue view (the worker has not run yet)
    await page.goto(`${s.base}/inspector/workspaces/${ws}/queue`);
    await page.locator('section[aria-labelledby="jobs-pending"] li.job', { hasText: 'reasoning.dream' }).getByRole('link', { name: 'alice' }).waitFor();
    await page.getByText('No model calls for this workspace since').waitFor();

    // done: no longer pending, counted as completed work, its model calls by module
    await drainWorkspace(s, { timeoutMs: 30_000 });
    await expect.poll(async () => ((await api.get(`/v3/workspaces/${ws}/statistics`)).body.model_usage.modules as { module: string }[]).map((u) => u.module)).toContain('dream_deduction');
    await page.reload();
    await page.locator('#jobs-pending ~ p.empty').waitFor();
    await expect.poll(() => page.locator('dl.counts div', { hasText: 'Completed' }).locator('dd').textContent()).toBe('1');
    await page.getByRole('rowheader', { name: 'dream_deduction', exact: true }).waitFor();
    expect(fake.requests('chat').length).toBeGreaterThan(0);
  }, 60_000);

  it('with auth on, asks for a key, keeps it in sessionStorage only, and a workspace key sees only its workspace', async () => {
    const s = await serve({ AUTH_USE_AUTH: 'true' });
    const admin = s.api.token({ isAdmin: true });
    const other = uniqueId();
    for (const w of [s.ws, other]) {
      expect((await s.api.post(`/v3/workspaces/${w}/sessions`, { id: `${w}-talk`, peers: { alice: {} } }, { token: admin })).status).toBe(201);
      await s.api.post(`/v3/workspaces/${w}/sessions/${w}-talk/messages`, { messages: [{ peer_id: 'alice', content: `a secret of ${w}` }] }, { token: admin });
    }
    const key = s.api.token({ workspaceId: s.ws });
    const page = await newPage([]);
    await page.goto(`${s.base}/inspector`);
    await page.getByRole('alert').filter({ hasText: 'This server asks for a key' }).waitFor();
    await expectAccessible(page, 'key prompt');
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Use key' }).click();

    await page.getByRole('link', { name: s.ws }).waitFor();
    expect(await page.getByRole('link', { name: other }).count()).toBe(0);
    await page.getByRole('link', { name: s.ws }).click();
    await page.getByRole('link', { name: `${s.ws}-talk` }).click();
    await page.getByText(`a secret of ${s.ws}`).waitFor();

    // the other workspace's addresses show the API's refusal, none of its data
    await page.goto(`${s.base}/inspector/workspaces/${other}/sessions/${other}-talk`);
    await page.getByRole('alert').first().waitFor();
    expect(await page.getByRole('alert').first().textContent()).toContain('401: JWT not permissioned for this resource');
    expect(await page.getByText(`a secret of ${other}`).count()).toBe(0);

    // kept in sessionStorage: no cookie, nothing in the address
    expect(await page.evaluate(() => sessionStorage.getItem('engram.inspector.key'))).toBe(key);
    expect(await page.context().cookies()).toEqual([]);
    expect(page.url()).not.toContain(key.slice(0, 20));
    // another tab of another browser session starts without it
    const fresh = await newPage([]);
    await fresh.goto(`${s.base}/inspector`);
    await fresh.getByRole('alert').filter({ hasText: 'This server asks for a key' }).waitFor();
  }, 90_000);
});

// where there is no Chromium, the run lists why its tests did not run
if (executable === undefined) {
  describe('the memory inspector in Chromium', () => {
    it.skip(`skipped: ${NO_CHROMIUM}`, () => undefined);
  });
}
