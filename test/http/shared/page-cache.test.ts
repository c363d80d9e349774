import { describe, expect, it } from 'vitest';
import { PageCache } from '../../../src/http/shared/page-cache.js';

/** A page cache over a fake store: `token` is the change token, `versions` the data versions. */
function harness(maxBytes: number) {
  const state = { token: 't0' as string | undefined, versions: new Map<string, string>(), builds: 0, versionReads: 0 };
  const cache = new PageCache(() => state.token, maxBytes);
  const serve = (key: string, size = 10) =>
    cache.serve(
      key,
      async () => {
        state.versionReads++;
        return state.versions.get(key) ?? 'v1';
      },
      async () => {
        state.builds++;
        return `${key}:${state.versions.get(key) ?? 'v1'}:`.padEnd(size, '.');
      },
    );
  return { state, serve };
}

describe('PageCache', () => {
  it('serves the kept page while nothing committed, checks the version after a commit, and rebuilds after a change', async () => {
    const { state, serve } = harness(1000);
    expect(await serve('a')).toBe('a:v1:.....');
    expect(await serve('a')).toBe('a:v1:.....');
    expect(state).toMatchObject({ builds: 1, versionReads: 1 });
    state.token = 't1'; // a commit elsewhere, not to this page's data
    expect(await serve('a')).toBe('a:v1:.....');
    expect(state).toMatchObject({ builds: 1, versionReads: 2 });
    state.token = 't2';
    state.versions.set('a', 'v2');
    expect(await serve('a')).toBe('a:v2:.....');
    expect(state).toMatchObject({ builds: 2, versionReads: 3 });
  });

  it('keeps at most its budget of bytes, dropping the least recently used pages, and never a page over a quarter of it', async () => {
    const { state, serve } = harness(100);
    for (const key of ['a', 'b', 'c', 'd']) await serve(key, 25);
    await serve('a', 25); // a is now the most recently used
    await serve('e', 25); // over budget: b goes
    expect(state.builds).toBe(5);
    await serve('a', 25);
    await serve('c', 25);
    expect(state.builds).toBe(5);
    await serve('b', 25);
    expect(state.builds).toBe(6);
    // 26 bytes: over a quarter, built each time
    await serve('big', 26);
    await serve('big', 26);
    expect(state.builds).toBe(8);
  });
});
