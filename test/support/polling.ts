/** Helpers of tests that run a worker: a logger that says nothing, a pause, a wait for a condition. */

export const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` every 20 ms until it holds; throws after `timeoutMs`. */
export async function waitFor(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await sleep(20);
  }
}
