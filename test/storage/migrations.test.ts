import { describe, expect, it } from 'vitest';
import { migrate, splitStatements } from '../../src/storage/migrate.js';
import { PostgresDriver } from '../../src/storage/postgres/postgres-driver.js';
import { SqliteDriver } from '../../src/storage/sqlite/sqlite-driver.js';
import { DIALECT, TEST_DATABASE_URL } from '../support/test-app.js';

async function sqliteColumns(driver: SqliteDriver): Promise<Record<string, string[]>> {
  // the FTS5 indexes and their shadow tables have no PostgreSQL counterpart (a GIN index there)
  const tables = await driver.all<{ name: string }>(
    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'messages_fts%' AND name NOT LIKE 'conclusions_fts%'",
  );
  const out: Record<string, string[]> = {};
  for (const { name } of tables) {
    out[name] = (await driver.all<{ name: string }>(`SELECT name FROM pragma_table_info('${name}')`)).map((c) => c.name).sort();
  }
  return out;
}

describe('migrations', () => {
  it('migrate SQLite from empty, and a second run applies nothing', async () => {
    const driver = new SqliteDriver(':memory:');
    const first = await migrate(driver);
    expect(first.length).toBeGreaterThan(0);
    expect(first.every((step) => step.applied)).toBe(true);
    const second = await migrate(driver);
    expect(second.every((step) => !step.applied)).toBe(true);
    const columns = await sqliteColumns(driver);
    expect(Object.keys(columns).sort()).toEqual(
      [
        'collection_dreams',
        'conclusion_counts',
        'conclusions',
        'forget_previews',
        'forget_records',
        'job_counters',
        'jobs',
        'message_counts',
        'messages',
        'metamessages',
        'model_usage',
        'peer_cards',
        'peers',
        'representation_counters',
        'representation_items',
        'schema_migrations',
        'scope_backfills',
        'session_peers',
        'session_summaries',
        'sessions',
        'store_settings',
        'webhook_endpoints',
        'workspace_list',
        'workspaces',
      ].sort(),
    );
    await driver.close();
  });

  it.runIf(DIALECT === 'postgres')('give PostgreSQL the same tables and columns as SQLite', async () => {
    const sqlite = new SqliteDriver(':memory:');
    await migrate(sqlite);
    const expected = await sqliteColumns(sqlite);
    await sqlite.close();

    const pg = new PostgresDriver(TEST_DATABASE_URL, { maxConnections: 2 });
    await migrate(pg);
    const rows = await pg.all<{ table_name: string; column_name: string }>(
      // generated columns left out on both sides (SQLite's table_info does not list them)
      "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema() AND is_generated = 'NEVER'",
    );
    await pg.close();
    const actual: Record<string, string[]> = {};
    // pgvector's tables, the message vectors' open part and their parts' catalog; SQLite creates
    // its vec0 tables with the first vector (sqlite-vector-index.ts)
    const vectorTables = new Set(['conclusion_vectors', 'message_vectors', 'message_vectors_open', 'message_vector_parts']);
    for (const row of rows) if (!vectorTables.has(row.table_name)) (actual[row.table_name] ??= []).push(row.column_name);
    for (const name of Object.keys(actual)) actual[name].sort();
    expect(actual).toEqual(expected);
  });

  it('split scripts into statements, keeping trigger and function bodies whole', () => {
    const script = [
      '-- comment',
      'CREATE TABLE a (x INTEGER);',
      'CREATE TRIGGER t AFTER INSERT ON a BEGIN',
      '  UPDATE a SET x = 1;',
      'END;',
      'CREATE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS $$',
      'BEGIN',
      '  RETURN NULL;',
      'END $$;',
      'CREATE TRIGGER u AFTER UPDATE ON a',
      'WHEN NEW.x = 2',
      'BEGIN',
      '  UPDATE a SET x = 3;',
      'END;',
      // a function body ending "END;" with the closing quote on a line of its own
      'CREATE FUNCTION g() RETURNS trigger LANGUAGE plpgsql AS $$',
      'BEGIN',
      '  IF NEW.x IS NULL THEN',
      '    NEW.x := 1;',
      '  END IF;',
      '  RETURN NEW;',
      'END;',
      '$$;',
      'SELECT 1;',
    ].join('\n');
    const statements = splitStatements(script);
    expect(statements).toHaveLength(6);
    expect(statements[3]).toMatch(/^CREATE TRIGGER u[\s\S]*SET x = 3;\nEND;$/);
    expect(statements[4]).toMatch(/^CREATE FUNCTION g[\s\S]*RETURN NEW;\nEND;\n\$\$;$/);
    expect(statements[5]).toBe('SELECT 1;');
    expect(statements[1]).toContain('UPDATE a SET x = 1;');
    expect(statements[2]).toMatch(/^CREATE FUNCTION[\s\S]*END \$\$;$/);
  });
});
