import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DIALECTS } from './sql/dialects.js';
import type { SqlDriver, SqlExecutor } from './sql/driver.js';
import type { DialectName } from './sql/dialect.js';
import { upgradeMessageVectors } from './sqlite/sqlite-vector-index.js';

export interface MigrationStep {
  name: string;
  applied: boolean;
}

interface Migration {
  name: string;
  run(tx: SqlExecutor): Promise<void>;
}

/**
 * Migrations written in code, for what SQL alone cannot say: SQLite's vec0 columns have a size
 * known only from the stored data. Ordered by name with the SQL files.
 */
const CODE_MIGRATIONS: Record<DialectName, Migration[]> = {
  sqlite: [{ name: '0025_message_vector_signs', run: upgradeMessageVectors }],
  postgres: [],
};

function migrations(dialect: DialectName): Migration[] {
  const folder = fileURLToPath(new URL(`./${dialect}/migrations/`, import.meta.url));
  const files = readdirSync(folder)
    .filter((file) => /^\d{4}_.+\.sql$/.test(file))
    .map((file): Migration => {
      const name = file.replace(/\.sql$/, '');
      const sql = readFileSync(folder + file, 'utf8');
      return {
        name,
        async run(tx) {
          // each statement separately: SQLite's prepare takes one statement, pg's extended protocol too
          for (const statement of splitStatements(sql)) {
            await tx.run(statement).catch((error: unknown) => {
              throw explainMigrationError(name, statement, error);
            });
          }
        },
      };
    });
  return [...files, ...CODE_MIGRATIONS[dialect]].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * Applies this dialect's forward-only migrations that the database lacks, each in its own
 * transaction, recording them in `schema_migrations`. On PostgreSQL an advisory lock keeps
 * several starting processes from migrating at once. `through` stops after the migration of
 * that name (tests use it to build a database as an older version left it).
 */
export async function migrate(driver: SqlDriver, options: { through?: string } = {}): Promise<MigrationStep[]> {
  const dialect = DIALECTS[driver.dialect];
  await driver.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at ${dialect.migrationTimeType} NOT NULL)`);
  const steps: MigrationStep[] = [];
  await driver.transaction(async (tx) => {
    await dialect.lockMigrations(tx);
    const done = new Set((await tx.all<{ name: string }>('SELECT name FROM schema_migrations')).map((row) => row.name));
    for (const migration of migrations(driver.dialect)) {
      if (options.through !== undefined && migration.name > options.through) break;
      if (done.has(migration.name)) {
        steps.push({ name: migration.name, applied: false });
        continue;
      }
      await migration.run(tx);
      await tx.run('INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)', [migration.name, new Date().toISOString()]);
      steps.push({ name: migration.name, applied: true });
    }
  });
  return steps;
}

/** A missing pgvector extension is named, with what to do, instead of PostgreSQL's file error. */
function explainMigrationError(migration: string, statement: string, error: unknown): unknown {
  if (!/^CREATE EXTENSION IF NOT EXISTS vector\b/i.test(statement) || !(error instanceof Error)) return error;
  return new Error(
    `Migration ${migration} needs the pgvector extension, which this PostgreSQL server cannot load (${error.message}). ` +
      'Install pgvector on the server (Debian/Ubuntu: postgresql-<version>-pgvector; managed services: enable the "vector" extension) ' +
      'or let a superuser run CREATE EXTENSION vector in this database, then start Engram again.',
    { cause: error },
  );
}

/** Splits a migration script on `;` at line ends, keeping trigger and function bodies whole. */
export function splitStatements(script: string): string[] {
  const statements: string[] = [];
  let current = '';
  // inside a dollar-quoted body (PostgreSQL), or a SQLite trigger's BEGIN ... END;
  let inQuoted = false;
  let inTrigger = false;
  for (const line of script.split('\n')) {
    const trimmed = line.trim();
    if (current === '' && (trimmed === '' || trimmed.startsWith('--'))) continue;
    current += line + '\n';
    const dollarQuotes = (line.match(/\$\$/g) ?? []).length;
    if (dollarQuotes % 2 === 1) inQuoted = !inQuoted;
    if (inQuoted) continue;
    // a SQLite trigger's body starts at the BEGIN ending its header, which may span lines
    if (/^CREATE TRIGGER/i.test(current.trimStart()) && /\bBEGIN$/i.test(trimmed)) inTrigger = true;
    if (inTrigger && /^END;$/i.test(trimmed)) {
      inTrigger = false;
      statements.push(current.trim());
      current = '';
      continue;
    }
    if (!inTrigger && trimmed.endsWith(';')) {
      statements.push(current.trim());
      current = '';
    }
  }
  if (current.trim() !== '') statements.push(current.trim());
  return statements;
}
