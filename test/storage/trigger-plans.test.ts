import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PostgresDriver } from '../../src/storage/postgres/postgres-driver.js';
import { openFreshDatabase } from '../support/fresh-database.js';
import { DIALECT } from '../support/test-app.js';

/*
 * The statements triggers run, planned on a store of many peers. A trigger's statements do not
 * show in EXPLAIN of the statement that fired it: PostgreSQL's auto_explain (contrib, shipped
 * with the server) logs them as notices to this session. A session's change bumps its members'
 * sessions_version (migration 0016, rewritten by 0026): written as two IN subqueries joined with
 * OR, it scanned every peer of the store on each session update.
 */
describe.runIf(DIALECT === 'postgres')('statements of triggers on a store of many peers (postgres)', () => {
  let database: Awaited<ReturnType<typeof openFreshDatabase>>;
  const NOW = new Date('2026-01-01T00:00:00.000Z');

  beforeAll(async () => {
    database = await openFreshDatabase();
    const { store, driver } = database;
    await store.workspaces.createIfAbsent({ id: 'w', metadata: {}, configuration: {} }, NOW);
    await store.transaction(async (tx) => {
      for (let start = 0; start < 5_000; start += 500) await tx.peers.ensure('w', Array.from({ length: 500 }, (_, i) => `p${start + i}`), NOW);
      for (const session of ['s1', 's2']) {
        await tx.sessions.createIfAbsent('w', { id: session, metadata: {}, configuration: {} }, NOW);
        await tx.sessions.saveMemberships('w', session, ['p1', 'p2'].map((peerId) => ({ peerId, configuration: {}, joinedAt: NOW, leftAt: null })));
      }
    });
    await driver.run('ANALYZE');
  });
  afterAll(() => database.close());

  /** The plans auto_explain logged for the statements `sql` ran, triggers' included. */
  async function nestedPlans(sql: string, params: unknown[]): Promise<string[]> {
    const client = await (database.driver as PostgresDriver).pool.connect();
    const notices: string[] = [];
    const listen = (notice: { message?: string }) => notices.push(notice.message ?? '');
    client.on('notice', listen);
    try {
      await client.query("LOAD 'auto_explain'");
      await client.query('SET auto_explain.log_min_duration = 0');
      await client.query('SET auto_explain.log_nested_statements = on');
      await client.query("SET auto_explain.log_level = 'notice'");
      await client.query(sql, params);
      await client.query('RESET auto_explain.log_min_duration');
    } finally {
      client.off('notice', listen);
      client.release(true);
    }
    return notices;
  }

  it("a session's update bumps its members by key, never reading every peer", async () => {
    const plans = await nestedPlans('UPDATE sessions SET metadata = $1 WHERE workspace_id = $2 AND id = $3', ['{"a": 1}', 'w', 's1']);
    const bumps = plans.filter((plan) => /Query Text: .*(UPDATE peers p SET sessions_version|PERFORM 1 FROM peers p|SELECT 1 FROM peers p)/s.test(plan));
    expect(bumps.length).toBeGreaterThanOrEqual(2);
    for (const plan of bumps) {
      expect(plan).not.toMatch(/Seq Scan on peers p\b/);
      expect(plan).toMatch(/Index Scan using peers_workspace_id_id_key on peers p\b/);
    }
    // and it bumped exactly the two members
    const versions = await database.driver.all<{ id: string; sessions_version: string }>(
      "SELECT id, sessions_version FROM peers WHERE workspace_id = 'w' AND id IN ('p0', 'p1', 'p2') ORDER BY id",
    );
    const before = Number(versions.find((row) => row.id === 'p0')!.sessions_version);
    expect(versions.map((row) => Number(row.sessions_version) - before)).toEqual([0, 3, 3]);
  });
});
