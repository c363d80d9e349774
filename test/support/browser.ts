import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { chromium, type Browser, type Page } from 'playwright-core';

/**
 * A real Chromium for the page tests, driven by playwright-core: Debian's `chromium` package
 * (.ci/run installs it), or the binary CHROMIUM_PATH names. Undefined when there is none, and the
 * page tests skip saying so.
 */
export function chromiumPath(): string | undefined {
  // CHROMIUM_PATH=none: as on a machine without one (the page tests skip)
  if (process.env.CHROMIUM_PATH === 'none') return undefined;
  const candidates = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];
  return candidates.find((path): path is string => path !== undefined && path !== '' && existsSync(path));
}

export const NO_CHROMIUM = 'no Chromium binary: install Debian\'s chromium (apt-get install chromium) or set CHROMIUM_PATH';

export function launchChromium(executablePath: string): Promise<Browser> {
  // --no-sandbox: CI and the developers' machines run as root, where Chromium's sandbox refuses to start
  return chromium.launch({ executablePath, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

/**
 * axe-core's check of the page as it is now (WCAG 2.x A and AA rules): its serious and critical
 * violations. The script is evaluated through the browser's protocol, not added to the page,
 * whose Content-Security-Policy admits no inline script.
 */
export async function seriousAxeViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run: (context: unknown, options: unknown) => Promise<{ violations: { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] }[] }> } }).axe;
    const result = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => JSON.stringify(n.target)) }));
  });
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}
