import { isPostgresUrl, type Config } from '../config/config.js';
import { migrate, type MigrationStep } from '../storage/migrate.js';
import { PostgresDriver } from '../storage/postgres/postgres-driver.js';
import type { SqlDriver } from '../storage/sql/driver.js';
import { SqlStore } from '../storage/sql/sql-store.js';
import { SqliteDriver } from '../storage/sqlite/sqlite-driver.js';
import type { SqliteOptions } from '../storage/sqlite/sqlite-settings.js';

export interface Database {
  driver: SqlDriver;
  store: SqlStore;
  migrations: MigrationStep[];
}

export interface DatabaseOptions {
  sqlite?: SqliteOptions;
  /** PostgreSQL: most connections of the pool (DATABASE_POOL_SIZE; undefined: sized to the machine). */
  poolSize?: number;
  connectTimeoutMs?: number;
  filterTimeLimitMs?: number;
  /** PostgreSQL: frequent statements prepared by name (DATABASE_PREPARED_STATEMENTS). */
  preparedStatements?: boolean;
  /** PostgreSQL: most memory a vector part's index build may take (VECTOR_BUILD_MEMORY_MB). */
  vectorBuildMemoryMb?: number;
}

/** The connection settings of `config`, for openDatabase. */
export function databaseOptions(config: Config): DatabaseOptions {
  return {
    sqlite: { synchronous: config.sqliteSynchronous, cacheMb: config.sqliteCacheMb, mmapMb: config.sqliteMmapMb, checkpoints: config.sqliteCheckpoints, vectorScans: config.sqliteVectorScans },
    poolSize: config.databasePoolSize,
    connectTimeoutMs: config.databaseConnectTimeoutMs,
    filterTimeLimitMs: config.filterTimeLimitMs,
    preparedStatements: config.databasePreparedStatements,
    vectorBuildMemoryMb: config.vectorBuildMemoryMb,
  };
}

/** Opens SQLite or PostgreSQL as `DATABASE_URL` says and brings its schema up to date. */
export async function openDatabase(
  databaseUrl: string,
  options: DatabaseOptions = {},
): Promise<Database> {
  const driver: SqlDriver = isPostgresUrl(databaseUrl)
    ? new PostgresDriver(databaseUrl, {
        maxConnections: options.poolSize,
        connectTimeoutMs: options.connectTimeoutMs,
        filterTimeLimitMs: options.filterTimeLimitMs,
        preparedStatements: options.preparedStatements,
        vectorBuildMemoryMb: options.vectorBuildMemoryMb,
      })
    : new SqliteDriver(databaseUrl, { ...options.sqlite, filterTimeLimitMs: options.filterTimeLimitMs });
  try {
    const migrations = await migrate(driver);
    return { driver, store: SqlStore.over(driver), migrations };
  } catch (error) {
    await driver.close().catch(() => undefined);
    throw error;
  }
}
