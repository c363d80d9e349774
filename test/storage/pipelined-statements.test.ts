import { afterEach, describe, expect, it, vi } from 'vitest';
import { createDomainContext } from '../../src/domain/context.js';
import { createMessages } from '../../src/domain/messages/messages.js';
import { TIME_LIMITED } from '../../src/storage/filter-time-limit.js';
import { PostgresDriver } from '../../src/storage/postgres/postgres-driver.js';
import { SqlStore } from '../../src/storage/sql/sql-store.js';
import { holdingProxy, type HoldingProxy } from '../support/holding-proxy.js';
import { DIALECT, ownPostgresDatabase, uniqueId } from '../support/test-app.js';

/*
 * The pool's connections pipeline: statements that do not need the answer to the one before
 * them go out before it comes, and cost one wait together. A proxy holds the database's answers
 * back and counts what the driver sends meanwhile (no clock involved): without pipelining only
 * the first statement would go out.
 */
describe.skipIf(DIALECT !== 'postgres')('statements sent without waiting, on PostgreSQL', () => {
  let proxy: HoldingProxy | undefined;
  let driver: PostgresDriver | undefined;
  let drop: (() => Promise<void>) | undefined;
  afterEach(async () => {
    proxy?.release();
    await driver?.close();
    await proxy?.close();
    await drop?.();
    proxy = driver = drop = undefined;
  });

  /** A driver through the proxy, to a migrated database of the test's own. */
  async function proxied(): Promise<{ proxy: HoldingProxy; driver: PostgresDriver }> {
    const own = await ownPostgresDatabase();
    drop = own.drop;
    proxy = await holdingProxy(own.url);
    driver = new PostgresDriver(proxy.url, { maxConnections: 2, preparedStatements: false });
    // a connection open and at rest before the answers are held
    await driver.get('SELECT 1 AS one');
    return { proxy, driver };
  }

  it("sends a transaction's BEGIN with its first statement, and a time-limited statement with its settings", async () => {
    const { proxy, driver } = await proxied();
    proxy.hold();
    const done = driver.transaction((tx) => tx.get<{ n: number }>('SELECT ?::int AS n', [7]));
    // BEGIN and the SELECT, before any answer
    await vi.waitFor(() => expect(proxy.statementsSent()).toBe(2), { timeout: 5000 });
    proxy.release();
    expect(await done).toEqual({ n: 7 });

    proxy.hold();
    const limited = driver.transaction((tx) => tx.get<{ n: number }>(`${TIME_LIMITED} SELECT ?::int AS n`, [8]));
    // BEGIN, the time limit's SET LOCAL, the statement and the limit's reset
    await vi.waitFor(() => expect(proxy.statementsSent()).toBe(4), { timeout: 5000 });
    proxy.release();
    expect(await limited).toEqual({ n: 8 });
  });

  it("reads a message write's session and members with its BEGIN, in one wait, and writes as before", async () => {
    const { proxy, driver } = await proxied();
    const ctx = createDomainContext(new SqlStore(driver, driver), { sessionObservers: 10, webhookEndpoints: 10, jobMaxAttempts: 2 });
    const ws = uniqueId('pipe');
    await createMessages(ctx, ws, 's1', [{ peerId: 'alice', content: 'first' }]);

    proxy.hold();
    const written = createMessages(ctx, ws, 's1', [{ peerId: 'alice', content: 'second' }, { peerId: 'bob', content: 'third' }]);
    // BEGIN, the session's locking read and the members' read
    await vi.waitFor(() => expect(proxy.statementsSent()).toBe(3), { timeout: 5000 });
    proxy.release();
    const records = await written;
    const stored = await driver.all<{ id: string; content: string }>('SELECT id, content FROM messages WHERE workspace_id = ? ORDER BY pk', [ws]);
    expect(stored.map((m) => m.content)).toEqual(['first', 'second', 'third']);
    expect(stored.slice(1).map((m) => m.id)).toEqual(records.map((m) => m.id));
    const members = await driver.all<{ peer_id: string }>('SELECT peer_id FROM session_peers WHERE workspace_id = ? ORDER BY peer_id', [ws]);
    expect(members.map((m) => m.peer_id)).toEqual(['alice', 'bob']);
  });
});
