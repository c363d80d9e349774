import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';

export interface BackupResult {
  target: string;
  bytes: number;
  ms: number;
  /** The newest migration the copy has (undefined: none; the file is not an Engram store yet). */
  migration: string | undefined;
  /** `PRAGMA quick_check` of the copy: 'ok' or the problems SQLite found. */
  check: string;
}

/** A backup that could not be made for a reason the user can act on (exit 2, no stack). */
export class BackupRefused extends Error {}

/**
 * `engram backup <file>` on SQLite: a consistent copy of the database while servers keep serving
 * it. `VACUUM INTO` copies one snapshot (a read transaction on the WAL database, so writers go on
 * and nothing they commit meanwhile is half in the copy), compacted, into a new file; copying the
 * database file itself while it is open could miss what is still in its `-wal` file. The source
 * is opened read-only and never migrated, so a backup taken before an upgrade is the store as it
 * was. The copy's folder is made if missing; the copy is fsynced with it before this returns,
 * then checked.
 */
export function backupSqlite(source: string, target: string): BackupResult {
  const to = resolve(target);
  if (to === resolve(source)) throw new BackupRefused('the backup file must not be the database itself');
  if (existsSync(to)) throw new BackupRefused(`${target} exists; name a new file (a backup never overwrites one)`);
  if (!existsSync(source)) throw new BackupRefused(`there is no database at ${source} (DATABASE_URL)`);
  const started = performance.now();
  mkdirSync(dirname(to), { recursive: true });
  const db = new BetterSqlite3(source, { readonly: true, fileMustExist: true });
  try {
    // servers may hold the write lock for a moment; a read transaction does not wait for it in
    // WAL mode, but a database left in rollback mode (never opened by Engram) may be locked
    db.pragma('busy_timeout = 5000');
    db.prepare('VACUUM INTO ?').run(to);
  } finally {
    db.close();
  }
  for (const path of [to, dirname(to)]) {
    const fd = openSync(path, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  }
  const ms = performance.now() - started;
  const copy = new BetterSqlite3(to, { readonly: true, fileMustExist: true });
  try {
    const migrations = copy.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'").get() !== undefined;
    const newest = migrations ? (copy.prepare('SELECT max(name) AS name FROM schema_migrations').get() as { name: string | null }).name : null;
    const problems = copy.pragma('quick_check') as { quick_check: string }[];
    return { target: to, bytes: statSync(to).size, ms, migration: newest ?? undefined, check: problems.map((row) => row.quick_check).join('; ') };
  } finally {
    copy.close();
  }
}
